"""The async driver for mcpcore: asyncio and trio via anyio, HTTP via httpcore.

It performs the HTTP exchanges (or child-process I/O) that the engine in
``mcpcore`` describes, feeds back what arrived and sleeps until the engine's
next deadline. Every protocol decision stays in the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcore import Availability

from ._client import McpClient, ProgressCallback, ResourceReader, ToolRegistration

if TYPE_CHECKING:
    from ._hub import McpHub


__all__ = [
    "Availability",
    "McpClient",
    "McpHub",
    "ProgressCallback",
    "ResourceReader",
    "ToolRegistration",
]


def __getattr__(name: str) -> object:
    # McpHub loads when first asked for: a program with one client never imports
    # the hub and its fan-out (B5, issue 40). `from ... import McpHub` works as usual.
    if name == "McpHub":
        from ._hub import McpHub

        globals()["McpHub"] = McpHub
        return McpHub
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"McpHub"})
