"""The async driver for mcpcore: asyncio and trio via anyio, HTTP via httpcore.

It performs the HTTP exchanges (or child-process I/O) that the engine in
``mcpcore`` describes, feeds back what arrived and sleeps until the engine's
next deadline. Every protocol decision stays in the engine.
"""

from __future__ import annotations

from mcpcore import Availability

from ._client import McpClient, ProgressCallback, ResourceReader, ToolRegistration
from ._hub import McpHub

__all__ = [
    "Availability",
    "McpClient",
    "McpHub",
    "ProgressCallback",
    "ResourceReader",
    "ToolRegistration",
]
