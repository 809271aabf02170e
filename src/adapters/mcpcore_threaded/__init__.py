"""The blocking driver for mcpcore: threads, HTTP via httpcore.

The same names and behaviours as ``mcpcore_anyio``, for programs without an
event loop. It performs what the engine in ``mcpcore`` describes and holds no
protocol state of its own.
"""

from __future__ import annotations

from mcpcore import Availability

from ._client import CallHandle, McpClient, ProgressCallback, ResourceReader, ToolRegistration
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
