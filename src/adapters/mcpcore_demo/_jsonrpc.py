"""JSON-RPC 2.0 as the demo server writes and reads it: the error codes, encoding,
parsing, error messages and the id check. The bottom of the server, with ``_types``."""

from __future__ import annotations

import json
from typing import Any, NoReturn

from ._types import RequestId

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "encode",
    "error_message",
    "parse_json",
    "valid_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800


def encode(message: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"invalid JSON constant {value}")


def parse_json(body: bytes) -> tuple[bool, Any]:
    """``(True, value)``, or ``(False, None)`` for a body that is not JSON."""
    try:
        return True, json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def error_message(rid: RequestId | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def valid_id(value: Any) -> bool:
    """A JSON-RPC id: a string or an integer (not a boolean)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)
