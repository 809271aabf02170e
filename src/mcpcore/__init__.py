"""mcpcore: a sans-IO Model Context Protocol client core.

The core never touches a socket, thread, task, clock, environment variable or
random source. Bytes, messages and ``now`` go in; what to send, what happened
and when to wake come out. Drivers that do the I/O live in ``mcpcore_anyio``
and ``mcpcore_threaded``.

Public names are loaded on first use (PEP 562), so ``import mcpcore`` itself
costs almost nothing; ``from mcpcore import X`` works as usual.
"""

from __future__ import annotations

import importlib

# Not `from typing import TYPE_CHECKING`: importing typing would cost more
# than everything else here (mypy treats this name as true: see pyproject).
TYPE_CHECKING = False

__version__ = "0.1.0"

# name -> the private module that defines it
_EXPORTS: dict[str, str] = {
    "backoff_delay": "_backoff",
    "LocalServer": "_config",
    "RemoteServer": "_config",
    "expand": "_config",
    "load_mcp_json": "_config",
    "parse_server": "_config",
    "Availability": "_engine",
    "HttpClientEngine": "_engine",
    "StdioClientEngine": "_engine",
    "BackendError": "_errors",
    "CallTimeout": "_errors",
    "Cancelled": "_errors",
    "ConfigError": "_errors",
    "HandshakeError": "_errors",
    "InvalidArguments": "_errors",
    "InvalidState": "_errors",
    "InvalidValue": "_errors",
    "LimitExceeded": "_errors",
    "LocalProtocolError": "_errors",
    "McpError": "_errors",
    "ProtocolError": "_errors",
    "RemoteProtocolError": "_errors",
    "TransportError": "_errors",
    "Unavailable": "_errors",
    "UnknownTool": "_errors",
    "escape_text": "_escape",
    "FailureKind": "_failure",
    "TransportFailure": "_failure",
    "AbortExchange": "_events",
    "WriteInput": "_events",
    "TerminateProcess": "_events",
    "StartProcess": "_events",
    "ProcessAction": "_events",
    "KillProcess": "_events",
    "CloseInput": "_events",
    "CallCancelled": "_events",
    "CallFailed": "_events",
    "CallSucceeded": "_events",
    "HttpRequest": "_events",
    "ProgressReceived": "_events",
    "RefreshFailed": "_events",
    "SessionReady": "_events",
    "StartFailed": "_events",
    "ToolsListChanged": "_events",
    "ToolsRefreshed": "_events",
    "HttpLimits": "_http",
    "call_outcome": "_outcome",
    "closed_outcome": "_outcome",
    "ErrorResponse": "_jsonrpc",
    "Message": "_jsonrpc",
    "Notification": "_jsonrpc",
    "Request": "_jsonrpc",
    "Result": "_jsonrpc",
    "decode_message": "_jsonrpc",
    "encode_message": "_jsonrpc",
    "AudioBlock": "_render",
    "ContentBlock": "_render",
    "ImageBlock": "_render",
    "OtherBlock": "_render",
    "OutputSchemaViolation": "_render",
    "ResourceBlock": "_render",
    "ResourceLinkBlock": "_render",
    "TextBlock": "_render",
    "ToolOutput": "_render",
    "render_result": "_render",
    "SUPPORTED_PROTOCOL_VERSIONS": "_session",
    "SessionOptions": "_session",
    "SessionState": "_session",
    "ClientOptions": "_setup",
    "ClientSetup": "_setup",
    "child_environment": "_stdio",
    "hub_entries": "_setup",
    "prepare_client": "_setup",
    "ClientBase": "_client_base",
    "HubBase": "_client_base",
    "looks_like_document": "_client_base",
    "RegistrationContract": "_registry",
    "Action": "_events",
    "Event": "_events",
    "SSEDecoder": "_sse",
    "SSEEvent": "_sse",
    "LineFramer": "_stdio",
    "StderrTail": "_stdio",
    "frame_message": "_stdio",
    "Catalogue": "_tools",
    "SyncReport": "_tools",
    "Tool": "_tools",
    "is_valid_segment": "_tools",
}

__all__ = [
    "SUPPORTED_PROTOCOL_VERSIONS",
    "AbortExchange",
    "Action",
    "AudioBlock",
    "Availability",
    "BackendError",
    "CallCancelled",
    "CallFailed",
    "CallSucceeded",
    "CallTimeout",
    "Cancelled",
    "Catalogue",
    "ClientBase",
    "ClientOptions",
    "ClientSetup",
    "CloseInput",
    "ConfigError",
    "ContentBlock",
    "ErrorResponse",
    "Event",
    "FailureKind",
    "HandshakeError",
    "HttpClientEngine",
    "HttpLimits",
    "HttpRequest",
    "HubBase",
    "ImageBlock",
    "InvalidArguments",
    "InvalidState",
    "InvalidValue",
    "KillProcess",
    "LimitExceeded",
    "LineFramer",
    "LocalProtocolError",
    "LocalServer",
    "McpError",
    "Message",
    "Notification",
    "OtherBlock",
    "OutputSchemaViolation",
    "ProcessAction",
    "ProgressReceived",
    "ProtocolError",
    "RefreshFailed",
    "RegistrationContract",
    "RemoteProtocolError",
    "RemoteServer",
    "Request",
    "ResourceBlock",
    "ResourceLinkBlock",
    "Result",
    "SSEDecoder",
    "SSEEvent",
    "SessionOptions",
    "SessionReady",
    "SessionState",
    "StartFailed",
    "StartProcess",
    "StderrTail",
    "StdioClientEngine",
    "SyncReport",
    "TerminateProcess",
    "TextBlock",
    "Tool",
    "ToolOutput",
    "ToolsListChanged",
    "ToolsRefreshed",
    "TransportError",
    "TransportFailure",
    "Unavailable",
    "UnknownTool",
    "WriteInput",
    "__version__",
    "backoff_delay",
    "call_outcome",
    "child_environment",
    "closed_outcome",
    "decode_message",
    "encode_message",
    "escape_text",
    "expand",
    "frame_message",
    "hub_entries",
    "is_valid_segment",
    "load_mcp_json",
    "looks_like_document",
    "parse_server",
    "prepare_client",
    "render_result",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from typing import Any

    from ._backoff import backoff_delay
    from ._client_base import ClientBase, HubBase, looks_like_document
    from ._config import LocalServer, RemoteServer, expand, load_mcp_json, parse_server
    from ._engine import Availability, HttpClientEngine, StdioClientEngine
    from ._errors import (
        BackendError,
        CallTimeout,
        Cancelled,
        ConfigError,
        HandshakeError,
        InvalidArguments,
        InvalidState,
        InvalidValue,
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
    from ._events import (
        AbortExchange,
        Action,
        CallCancelled,
        CallFailed,
        CallSucceeded,
        CloseInput,
        Event,
        HttpRequest,
        KillProcess,
        ProcessAction,
        ProgressReceived,
        RefreshFailed,
        SessionReady,
        StartFailed,
        StartProcess,
        TerminateProcess,
        ToolsListChanged,
        ToolsRefreshed,
        WriteInput,
    )
    from ._failure import FailureKind, TransportFailure
    from ._http import HttpLimits
    from ._jsonrpc import (
        ErrorResponse,
        Message,
        Notification,
        Request,
        Result,
        decode_message,
        encode_message,
    )
    from ._outcome import call_outcome, closed_outcome
    from ._registry import RegistrationContract
    from ._render import (
        AudioBlock,
        ContentBlock,
        ImageBlock,
        OtherBlock,
        OutputSchemaViolation,
        ResourceBlock,
        ResourceLinkBlock,
        TextBlock,
        ToolOutput,
        render_result,
    )
    from ._session import SUPPORTED_PROTOCOL_VERSIONS, SessionOptions, SessionState
    from ._setup import (
        ClientOptions,
        ClientSetup,
        hub_entries,
        prepare_client,
    )
    from ._sse import SSEDecoder, SSEEvent
    from ._stdio import LineFramer, StderrTail, child_environment, frame_message
    from ._tools import Catalogue, SyncReport, Tool, is_valid_segment
