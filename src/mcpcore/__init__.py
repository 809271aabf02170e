"""mcpcore: a sans-IO Model Context Protocol client core.

The core never touches a socket, thread, task, clock, environment variable or
random source. Bytes, messages and ``now`` go in; what to send, what happened
and when to wake come out. Drivers that do the I/O live in ``mcpcore_anyio``
and ``mcpcore_threaded``.
"""

from __future__ import annotations

from ._backoff import backoff_delay
from ._errors import (
    BackendError,
    CallTimeout,
    ConfigError,
    HandshakeError,
    LimitExceeded,
    LocalProtocolError,
    McpError,
    ProtocolError,
    RemoteProtocolError,
    TransportError,
    Unavailable,
    UnknownTool,
)
from ._escape import escape_text

__version__ = "0.1.0"

__all__ = [
    "BackendError",
    "CallTimeout",
    "ConfigError",
    "HandshakeError",
    "LimitExceeded",
    "LocalProtocolError",
    "McpError",
    "ProtocolError",
    "RemoteProtocolError",
    "TransportError",
    "Unavailable",
    "UnknownTool",
    "__version__",
    "backoff_delay",
    "escape_text",
]

# Each block below imports its public names and extends __all__ with `__all__ += [...]`.
# --- codec, sse, stdio (begin) ---
from ._jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Result,
    decode_message,
    encode_message,
)
from ._sse import SSEDecoder, SSEEvent
from ._stdio import LineFramer, frame_message

__all__ += [
    "ErrorResponse",
    "LineFramer",
    "Message",
    "Notification",
    "Request",
    "Result",
    "SSEDecoder",
    "SSEEvent",
    "decode_message",
    "encode_message",
    "frame_message",
]
# --- codec, sse, stdio (end) ---
# --- config (begin) ---
from ._config import LocalServer, RemoteServer, expand, load_mcp_json, parse_server

__all__ += ["LocalServer", "RemoteServer", "expand", "load_mcp_json", "parse_server"]
# --- config (end) ---
# --- tools, render (begin) ---
from ._render import OutputSchemaViolation, ToolOutput, render_result
from ._tools import Catalogue, SyncReport, Tool, is_valid_segment

__all__ += [
    "Catalogue",
    "OutputSchemaViolation",
    "SyncReport",
    "Tool",
    "ToolOutput",
    "is_valid_segment",
    "render_result",
]
# --- tools, render (end) ---
# --- engine (begin) ---
from ._engine import Availability, HttpClientEngine, StdioClientEngine
from ._events import (
    AbortExchange,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    HttpRequest,
    ProgressReceived,
    RefreshFailed,
    SessionReady,
    StartFailed,
    ToolsListChanged,
    ToolsRefreshed,
)
from ._http import HttpLimits
from ._session import SUPPORTED_PROTOCOL_VERSIONS, SessionOptions, SessionState

__all__ += [
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AbortExchange",
    "Availability",
    "CallCancelled",
    "CallFailed",
    "CallSucceeded",
    "HttpClientEngine",
    "HttpLimits",
    "HttpRequest",
    "ProgressReceived",
    "RefreshFailed",
    "SessionOptions",
    "SessionReady",
    "SessionState",
    "StartFailed",
    "StdioClientEngine",
    "ToolsListChanged",
    "ToolsRefreshed",
]
# --- engine (end) ---
