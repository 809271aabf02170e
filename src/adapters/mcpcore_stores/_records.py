"""Token sets and registered clients as JSON text, every field by name (never pickled).

What every store writes (``SqliteTokenStore``, ``PostgresTokenStore``,
``RedisTokenStore``) and ``mcpcore_signin``'s token file: written once, here.
``encode_tokens``/``decode_tokens`` and ``encode_client``/``decode_client``
give and take JSON text; ``tokens_fields``/``tokens_from_fields`` and
``client_fields``/``client_from_fields`` the mappings, for a document that
keeps records among its own fields (the token file). Reading checks every
field's type and raises ``StoreCorrupt`` naming the field, never its value.
Task handles and continuations are kept as their own ``to_json()`` text;
``decode_task``/``decode_continuation`` read it back with ``StoreCorrupt``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from mcpcore import ClientRecord, Continuation, InvalidValue, TaskHandle, TokenSet

from ._errors import StoreCorrupt

__all__ = [
    "client_fields",
    "client_from_fields",
    "decode_client",
    "decode_continuation",
    "decode_task",
    "decode_tokens",
    "encode_client",
    "encode_tokens",
    "load_json",
    "tokens_fields",
    "tokens_from_fields",
]

_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")
_CLIENT_KINDS = ("pre", "cimd", "dcr")


def _str(obj: Mapping[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str):
        raise StoreCorrupt(name)
    return value


def _opt_str(obj: Mapping[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise StoreCorrupt(name)
    return value


def _opt_time(obj: Mapping[str, Any], name: str) -> float | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreCorrupt(name)
    try:
        seconds = float(value)  # an integer past a float's range (JSON has no bound)
    except OverflowError:
        raise StoreCorrupt(name) from None
    if not math.isfinite(seconds):
        raise StoreCorrupt(name)
    return seconds


def load_json(text: str | bytes, what: str = "JSON") -> Any:
    """``text`` parsed; ``StoreCorrupt(what)`` when it is not JSON (NaN and Infinity
    are refused: mcpcore never writes them)."""

    def no_constant(name: str) -> Any:
        raise StoreCorrupt("a number")

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, parse_constant=no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise StoreCorrupt(what) from None


def tokens_fields(tokens: TokenSet) -> dict[str, Any]:
    """Every field of ``tokens`` by name."""
    return {
        "access_token": tokens.access_token,
        "token_type": tokens.token_type,
        "expires_at": tokens.expires_at,
        "refresh_token": tokens.refresh_token,
        "scope": tokens.scope,
        "issuer": tokens.issuer,
        "token_endpoint": tokens.token_endpoint,
        "resource": tokens.resource,
        "client_id": tokens.client_id,
        "dpop_jkt": tokens.dpop_jkt,  # N1: the key a DPoP token is bound to (public)
        "dpop_key_export": tokens.dpop_key_export,  # N1: that key (a secret)
    }


def tokens_from_fields(obj: object) -> TokenSet:
    """The token set ``tokens_fields`` wrote; ``StoreCorrupt`` naming a wrong field."""
    if not isinstance(obj, dict):
        raise StoreCorrupt("tokens")
    return TokenSet(
        access_token=_str(obj, "access_token"),
        token_type=_str(obj, "token_type"),
        expires_at=_opt_time(obj, "expires_at"),
        refresh_token=_opt_str(obj, "refresh_token"),
        scope=_opt_str(obj, "scope"),
        issuer=_str(obj, "issuer"),
        token_endpoint=_str(obj, "token_endpoint"),
        resource=_str(obj, "resource"),
        client_id=_str(obj, "client_id"),
        dpop_jkt=_opt_str(obj, "dpop_jkt"),
        dpop_key_export=_opt_str(obj, "dpop_key_export"),  # absent in older records
    )


def client_fields(client: ClientRecord) -> dict[str, Any]:
    """Every field of ``client`` by name."""
    return {
        "client_id": client.client_id,
        "client_secret": client.client_secret,
        "client_secret_expires_at": client.client_secret_expires_at,
        "auth_method": client.auth_method,
        "redirect_uris": list(client.redirect_uris),
        "issuer": client.issuer,
        "kind": client.kind,
        "scope": client.scope,
    }


def client_from_fields(obj: object) -> ClientRecord:
    """The client ``client_fields`` wrote; ``StoreCorrupt`` naming a wrong field."""
    if not isinstance(obj, dict):
        raise StoreCorrupt("client")
    uris = obj.get("redirect_uris")
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise StoreCorrupt("redirect_uris")
    method = obj.get("auth_method")
    if method not in _AUTH_METHODS:
        raise StoreCorrupt("auth_method")
    kind = obj.get("kind")
    if kind not in _CLIENT_KINDS:
        raise StoreCorrupt("kind")
    return ClientRecord(
        client_id=_str(obj, "client_id"),
        client_secret=_opt_str(obj, "client_secret"),
        client_secret_expires_at=_opt_time(obj, "client_secret_expires_at"),
        auth_method=method,
        redirect_uris=tuple(uris),
        issuer=_str(obj, "issuer"),
        kind=kind,
        scope=_opt_str(obj, "scope"),
    )


def encode_tokens(tokens: TokenSet) -> str:
    """``tokens`` as JSON text."""
    return json.dumps(tokens_fields(tokens), separators=(",", ":"), allow_nan=False)


def decode_tokens(text: str) -> TokenSet:
    """The token set ``encode_tokens`` wrote; ``StoreCorrupt`` naming a wrong field."""
    return tokens_from_fields(load_json(text, "tokens"))


def encode_client(client: ClientRecord) -> str:
    """``client`` as JSON text."""
    return json.dumps(client_fields(client), separators=(",", ":"), allow_nan=False)


def decode_client(text: str) -> ClientRecord:
    """The client ``encode_client`` wrote; ``StoreCorrupt`` naming a wrong field."""
    return client_from_fields(load_json(text, "client"))


def decode_task(text: str | bytes) -> TaskHandle:
    """The task handle ``TaskHandle.to_json()`` wrote; ``StoreCorrupt`` if it is not one."""
    try:
        return TaskHandle.from_json(text)
    except InvalidValue:
        raise StoreCorrupt("task") from None


def decode_continuation(text: str | bytes) -> Continuation:
    """The continuation ``Continuation.to_json()`` wrote; ``StoreCorrupt`` if it is not one."""
    try:
        return Continuation.from_json(text)
    except InvalidValue:
        raise StoreCorrupt("continuation") from None
