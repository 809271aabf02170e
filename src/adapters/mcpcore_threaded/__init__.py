"""The blocking driver for mcpcore: threads, HTTP via httpcore.

The same names and behaviours as ``mcpcore_anyio``, for programs without an
event loop. It performs what the engine in ``mcpcore`` describes and holds no
protocol state of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcore import Availability

from ._client import CallHandle, McpClient, ProgressCallback, ResourceReader, ToolRegistration

if TYPE_CHECKING:
    from ._hub import McpHub


__all__ = [
    "Availability",
    "CallHandle",
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
