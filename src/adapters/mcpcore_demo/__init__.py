"""A demo MCP server (Streamable HTTP) for examples and tests.

A small, dependency-light MCP server (revision 2025-11-25, Streamable HTTP) on
h11 and anyio. It serves a default set of demo tools (one per content shape,
plus ``slow`` for progress/cancellation, ``log`` for log notifications and
``build``, a long job that runs as a task when the client asks for one),
records what it receives, and can be configured to misbehave for tests.

Async::

    async with DemoServer().serve() as running:
        ...  # connect a client to running.url

Blocking (background thread)::

    with DemoServer(json_response=True).serve_in_thread() as running:
        ...

Command line: ``python -m mcpcore_demo --port 8000 [--json] [--stateless]``.
"""

from ._context import DemoTool, ToolContext, ToolHandler, ToolResult
from ._main import main
from ._server import DemoServer, RunningServer
from ._tasks import DemoTask
from ._tools import AUDIO_WAV, IMAGE_PNG, default_tools
from ._types import (
    LATEST_PROTOCOL_VERSION,
    LOG_LEVELS,
    SUPPORTED_PROTOCOL_VERSIONS,
    FaultHook,
    FaultResponse,
    JsonRpcError,
    ReceivedRequest,
    RequestId,
)

__all__ = [
    "AUDIO_WAV",
    "IMAGE_PNG",
    "LATEST_PROTOCOL_VERSION",
    "LOG_LEVELS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "DemoServer",
    "DemoTask",
    "DemoTool",
    "FaultHook",
    "FaultResponse",
    "JsonRpcError",
    "ReceivedRequest",
    "RequestId",
    "RunningServer",
    "ToolContext",
    "ToolHandler",
    "ToolResult",
    "default_tools",
    "main",
]
