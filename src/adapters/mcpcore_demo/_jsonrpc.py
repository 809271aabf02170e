"""JSON-RPC 2.0 as the demo server writes and reads it: error codes and messages."""

from __future__ import annotations

import json
from typing import Any, NoReturn

from ._types import RequestId

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
REQUEST_CANCELLED = -32800


def _encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"invalid JSON constant {value}")


def _parse_json(body: bytes) -> tuple[bool, Any]:
    try:
        return True, json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def _error_message(rid: RequestId | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)
