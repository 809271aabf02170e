"""Public data types of the demo server: protocol versions and log levels,
recorded requests, faults and JSON-RPC errors. The bottom of the package: it
imports none of its modules."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "LOG_LEVELS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Body",
    "FaultHook",
    "FaultResponse",
    "JsonRpcError",
    "ReceivedRequest",
    "RequestId",
]

LATEST_PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26")
LOG_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

RequestId = str | int
"""A JSON-RPC request id as it appeared on the wire."""

_NO_JSON: Any = object()


@dataclass(frozen=True)
class ReceivedRequest:
    """One HTTP request as the server received it (recorded before any handling).

    ``headers`` has lower-cased names; repeated headers are joined with ``", "``.
    ``body`` is ``None`` when the body was not read (too large); ``json`` is the
    parsed body, or ``None`` when there was none or it was not valid JSON.
    ``connection`` numbers the TCP connection it arrived on (1, 2, ...).
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes | None
    json: Any
    connection: int

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC ``method`` of the body, if it has one."""
        if isinstance(self.json, dict):
            method = self.json.get("method")
            if isinstance(method, str):
                return method
        return None

    @property
    def rpc_id(self) -> RequestId | None:
        """The JSON-RPC ``id`` of the body, if it has one."""
        if isinstance(self.json, dict):
            rid = self.json.get("id")
            if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                return rid
        return None

    @property
    def tool_name(self) -> str | None:
        """For a ``tools/call`` body, the tool's name."""
        if self.rpc_method == "tools/call":
            params = self.json.get("params")
            if isinstance(params, dict) and isinstance(params.get("name"), str):
                return str(params["name"])
        return None


Body = bytes | Iterable[bytes] | AsyncIterable[bytes]


@dataclass(frozen=True)
class FaultResponse:
    """A canned reaction returned by a ``fault`` hook instead of normal handling.

    Build one with the class methods:

    - ``FaultResponse.respond(status, headers, body)``: a complete HTTP response.
      ``body`` is bytes (``Content-Length`` is added unless framing headers are
      given) or an iterable / async iterable of chunks (sent chunked). With
      ``abort=True`` the connection is closed after the body chunks, without
      finishing the message (a broken stream).
    - ``FaultResponse.close()``: close the TCP connection without answering.
    - ``FaultResponse.stall(status, headers, body)``: send the status line and
      headers (and optional first chunks), then send nothing more until the
      client goes away or the server stops.
    - ``FaultResponse.raw(data)``: write ``data`` verbatim to the socket (no
      HTTP framing at all), then close.

    ``delay`` (seconds) is waited before acting, for all kinds.
    """

    kind: Literal["respond", "close", "stall", "raw"] = "respond"
    status: int = 500
    headers: Sequence[tuple[str, str]] = ()
    body: Body = b""
    abort: bool = False
    delay: float = 0.0

    @classmethod
    def respond(
        cls,
        status: int = 500,
        headers: Sequence[tuple[str, str]] | Mapping[str, str] = (),
        body: Body = b"",
        *,
        abort: bool = False,
        delay: float = 0.0,
    ) -> FaultResponse:
        return cls("respond", status, _header_list(headers), body, abort, delay)

    @classmethod
    def json(
        cls,
        message: Any,
        status: int = 200,
        headers: Sequence[tuple[str, str]] | Mapping[str, str] = (),
        *,
        delay: float = 0.0,
    ) -> FaultResponse:
        """A response whose body is ``message`` encoded as ``application/json``."""
        hdrs = [("content-type", "application/json"), *_header_list(headers)]
        return cls("respond", status, hdrs, json.dumps(message).encode(), False, delay)

    @classmethod
    def close(cls, *, delay: float = 0.0) -> FaultResponse:
        return cls("close", delay=delay)

    @classmethod
    def stall(
        cls,
        status: int = 200,
        headers: Sequence[tuple[str, str]] | Mapping[str, str] = (
            ("content-type", "text/event-stream"),
        ),
        body: Body = b"",
        *,
        delay: float = 0.0,
    ) -> FaultResponse:
        return cls("stall", status, _header_list(headers), body, False, delay)

    @classmethod
    def raw(cls, data: bytes, *, delay: float = 0.0) -> FaultResponse:
        return cls("raw", 0, (), data, False, delay)


def _header_list(
    headers: Sequence[tuple[str, str]] | Mapping[str, str],
) -> tuple[tuple[str, str], ...]:
    if isinstance(headers, Mapping):
        return tuple((str(k), str(v)) for k, v in headers.items())
    return tuple((str(k), str(v)) for k, v in headers)


FaultHook = Callable[[ReceivedRequest], FaultResponse | None]
"""Called for every HTTP request received; return a ``FaultResponse`` to
replace normal handling, or ``None`` to handle it normally."""


class JsonRpcError(Exception):
    """Raise from a tool handler to answer the ``tools/call`` with a JSON-RPC
    error (instead of a result with ``isError``)."""

    def __init__(self, code: int, message: str, data: Any = _NO_JSON) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not _NO_JSON:
            error["data"] = self.data
        return error
