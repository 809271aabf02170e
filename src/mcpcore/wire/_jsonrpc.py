"""The JSON-RPC 2.0 codec (P0): bytes ↔ message objects, and nothing else.

This module owns the wire shape of one message. Decoding accepts exactly one
JSON object per call (no batches, P0) and turns every malformed input into a
:class:`~mcpcore.RemoteProtocolError` that says what was wrong; no other
exception escapes, whatever the bytes (MemoryError aside). Encoding produces
compact UTF-8 JSON and turns an unencodable value into a
:class:`~mcpcore.LocalProtocolError`.

MCP narrows JSON-RPC in one place that this codec enforces: ``params``, when
present, is an object (JSON-RPC would also allow an array).

Decoding is on the hot path (every message, however large), so the checks are
a handful of dict look-ups and type tests; the parsed values are used as they
are, never copied.
"""

from __future__ import annotations

import json
from typing import Any, Final, TypeAlias

from ..base._errors import LocalProtocolError, RemoteProtocolError
from ..base._escape import excerpt
from ..base._record import record

__all__ = [
    "ErrorResponse",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Result",
    "decode_message",
    "decode_value",
    "describe_message",
    "encode_message",
]

RequestId: TypeAlias = int | str


@record(frozen=True, slots=True, kw_only=True)
class Request:
    """A call that expects a reply with the same ``id``."""

    id: int | str
    method: str
    params: dict[str, Any] | None = None


@record(frozen=True, slots=True, kw_only=True)
class Notification:
    """A one-way message: no ``id``, no reply."""

    method: str
    params: dict[str, Any] | None = None


@record(frozen=True, slots=True, kw_only=True)
class Result:
    """A successful reply to the request with the same ``id``."""

    id: int | str
    result: Any


@record(frozen=True, slots=True, kw_only=True)
class ErrorResponse:
    """A failed reply. ``id`` is ``None`` when the peer could not read the request's id."""

    id: int | str | None
    code: int
    message: str
    data: Any = None


Message: TypeAlias = Request | Notification | Result | ErrorResponse

_EXCERPT = 40


def _reject_constant(name: str) -> Any:
    # json accepts NaN, Infinity and -Infinity by default; JSON does not.
    raise RemoteProtocolError(f"invalid JSON: {name} is not a JSON value")


_decoder: Final = json.JSONDecoder(parse_constant=_reject_constant)
_encoder: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_ascii_encoder: Final = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _kind(value: object) -> str:
    """The JSON type of ``value`` in words, for messages that must not echo the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _shown(value: object) -> str:
    """A short description of ``value``: strings as an escaped excerpt, others by kind."""
    if isinstance(value, str):
        return f"{excerpt(value, _EXCERPT)!r}"
    return _kind(value)


def decode_message(data: bytes | bytearray | str, *, release: bool = False) -> Message:
    """Parse one JSON-RPC message from ``data`` (UTF-8 bytes or text).

    With ``release=True`` and a ``bytearray``, the buffer is emptied as soon as
    it has been decoded to text, so a large body is not held twice while it is
    parsed.

    Raises :class:`RemoteProtocolError` for anything that is not exactly one
    well-formed JSON-RPC 2.0 message.
    """
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(
                f"message is not valid UTF-8 (byte {exc.start}: {exc.reason})"
            ) from None
        finally:
            if release and isinstance(data, bytearray):
                data.clear()
    try:
        value = _decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise RemoteProtocolError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise RemoteProtocolError("invalid JSON: nested too deeply") from None
    except ValueError as exc:
        # int() refuses integer literals longer than sys.get_int_max_str_digits().
        raise RemoteProtocolError(f"invalid JSON: unreadable number ({exc})") from None
    return decode_value(value)


def _check_id(value: object, where: str) -> int | str:
    if type(value) is int or type(value) is str:
        return value
    if value is None:
        raise RemoteProtocolError(f"invalid JSON-RPC {where}: id is null")
    raise RemoteProtocolError(
        f"invalid JSON-RPC {where}: id must be a string or an integer, not {_kind(value)}"
    )


def decode_value(obj: object) -> Message:
    """Validate an already parsed JSON value as one JSON-RPC message.

    Raises :class:`RemoteProtocolError` if it is not one.
    """
    if not isinstance(obj, dict):
        if isinstance(obj, list):
            raise RemoteProtocolError(
                "invalid JSON-RPC message: a batch (JSON array) is not allowed, one message per body"
            )
        raise RemoteProtocolError(f"invalid JSON-RPC message: {_kind(obj)}, not an object")
    version = obj.get("jsonrpc")
    if type(version) is not str or version != "2.0":
        if "jsonrpc" not in obj:
            raise RemoteProtocolError('invalid JSON-RPC message: the "jsonrpc" member is missing')
        raise RemoteProtocolError(
            f'invalid JSON-RPC message: "jsonrpc" must be "2.0", not {_shown(version)}'
        )

    if "method" in obj:
        method = obj["method"]
        if type(method) is not str:
            raise RemoteProtocolError(
                f"invalid JSON-RPC request: method must be a string, not {_kind(method)}"
            )
        if "result" in obj or "error" in obj:
            raise RemoteProtocolError(
                'invalid JSON-RPC message: has a "method" and also a "result" or "error"'
            )
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            if isinstance(params, list):
                raise RemoteProtocolError(
                    f"invalid JSON-RPC request {excerpt(method, _EXCERPT)!r}: params must be "
                    "an object; MCP does not use by-position (array) params"
                )
            raise RemoteProtocolError(
                f"invalid JSON-RPC request {excerpt(method, _EXCERPT)!r}: "
                f"params must be an object, not {_kind(params)}"
            )
        if "id" in obj:
            return Request(id=_check_id(obj["id"], "request"), method=method, params=params)
        return Notification(method=method, params=params)

    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        raise RemoteProtocolError('invalid JSON-RPC response: has both "result" and "error"')
    if not has_result and not has_error:
        raise RemoteProtocolError(
            'invalid JSON-RPC message: no "method" (not a request or notification) '
            'and neither "result" nor "error" (not a response)'
        )
    if "id" not in obj:
        raise RemoteProtocolError('invalid JSON-RPC response: the "id" member is missing')
    if has_result:
        return Result(id=_check_id(obj["id"], "result"), result=obj["result"])

    msg_id = obj["id"]
    if msg_id is not None:
        msg_id = _check_id(msg_id, "error response")
    error = obj["error"]
    if not isinstance(error, dict):
        raise RemoteProtocolError(
            f"invalid JSON-RPC error response: error must be an object, not {_kind(error)}"
        )
    code = error.get("code")
    if type(code) is not int:
        raise RemoteProtocolError(
            "invalid JSON-RPC error response: error code must be an integer, "
            + ("but it is missing" if "code" not in error else f"not {_kind(code)}")
        )
    message = error.get("message")
    if type(message) is not str:
        raise RemoteProtocolError(
            "invalid JSON-RPC error response: error message must be a string, "
            + ("but it is missing" if "message" not in error else f"not {_kind(message)}")
        )
    return ErrorResponse(id=msg_id, code=code, message=message, data=error.get("data"))


def _local_id(value: object, kind: str, *, nullable: bool = False) -> None:
    if type(value) is int or type(value) is str or (nullable and value is None):
        return
    raise LocalProtocolError(
        f"cannot encode {kind}: id must be a string or an integer, not {_kind(value)}"
    )


def _local_params(value: object, kind: str) -> None:
    if value is not None and not isinstance(value, dict):
        raise LocalProtocolError(
            f"cannot encode {kind}: params must be a dict or None, not {_kind(value)}"
        )


def _local_method(value: object, kind: str) -> None:
    if type(value) is not str:
        raise LocalProtocolError(
            f"cannot encode {kind}: method must be a string, not {_kind(value)}"
        )


def encode_message(msg: Message) -> bytes:
    """Serialize ``msg`` as compact UTF-8 JSON.

    Raises :class:`LocalProtocolError` if ``msg`` is not a message or holds a
    value JSON cannot represent (NaN, a set, a tuple key, a cycle...).
    """
    obj: dict[str, Any]
    if isinstance(msg, Request):
        kind = "request"
        _local_id(msg.id, kind)
        _local_method(msg.method, kind)
        _local_params(msg.params, kind)
        obj = {"jsonrpc": "2.0", "id": msg.id, "method": msg.method}
        if msg.params is not None:
            obj["params"] = msg.params
    elif isinstance(msg, Notification):
        kind = "notification"
        _local_method(msg.method, kind)
        _local_params(msg.params, kind)
        obj = {"jsonrpc": "2.0", "method": msg.method}
        if msg.params is not None:
            obj["params"] = msg.params
    elif isinstance(msg, Result):
        kind = "result"
        _local_id(msg.id, kind)
        obj = {"jsonrpc": "2.0", "id": msg.id, "result": msg.result}
    elif isinstance(msg, ErrorResponse):
        kind = "error response"
        _local_id(msg.id, kind, nullable=True)
        if type(msg.code) is not int:
            raise LocalProtocolError(
                f"cannot encode {kind}: code must be an integer, not {_kind(msg.code)}"
            )
        if type(msg.message) is not str:
            raise LocalProtocolError(
                f"cannot encode {kind}: message must be a string, not {_kind(msg.message)}"
            )
        error: dict[str, Any] = {"code": msg.code, "message": msg.message}
        if msg.data is not None:
            error["data"] = msg.data
        obj = {"jsonrpc": "2.0", "id": msg.id, "error": error}
    else:
        raise LocalProtocolError(f"cannot encode {type(msg).__name__}: not a JSON-RPC message")
    try:
        text = _encoder.encode(obj)
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(f"cannot encode {kind}: {exc}") from None
    except RecursionError:
        raise LocalProtocolError(f"cannot encode {kind}: nested too deeply") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (which a peer can send as an escape) has no UTF-8
        # form; the \\uXXXX escape keeps it and is plain ASCII.
        return _ascii_encoder.encode(obj).encode("ascii")


def describe_message(message: Message) -> str:
    """A short, safe description of ``message`` for debug logs (X4).

    Its kind, method and id only: never params, results or error text, which may
    hold argument values, tool output or anything a server chose to send. A
    server's method name or string id is escaped and cut short (X1).
    """
    if isinstance(message, Request):
        return f"request {excerpt(message.method, 60)} id={_shown_id(message.id)}"
    if isinstance(message, Notification):
        return f"notification {excerpt(message.method, 60)}"
    if isinstance(message, Result):
        return f"result id={_shown_id(message.id)}"
    return f"error {_shown_id(message.code)} id={_shown_id(message.id)}"


def _shown_id(value: object) -> str:
    if type(value) is int:
        return str(value)
    return excerpt(repr(value), 40)
