"""Fuzz the rows a shared store reads back (``mcpcore_stores._records``, W stores, issue 44).

Another writer (buggy or hostile) may have changed a row: the input is either the
row's raw text (byte 0 even), or (byte 0 odd) a row mcpcore wrote with fields
dropped, added or replaced by edge values (wrong types, huge integers, NaN,
lone surrogates, the secret) chosen by the bytes. Byte 1 picks the decoder:
``decode_tokens``, ``decode_client``, ``decode_task``, ``decode_continuation``,
``tokens_from_fields`` or ``client_from_fields``.

Invariants:

* only ``StoreCorrupt`` escapes, and its message is one of the known field or
  record names: never the row's content (the secret in every token field);
* a row read back round-trips: encoded again and decoded, it is the same record
  (token sets and clients: ``encode_*``/``decode_*``; handles and continuations:
  ``to_json``), and the text written is JSON without NaN or Infinity;
* a token set read back has a finite ``expires_at`` or none.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import ClientRecord, Continuation, TaskHandle, TokenSet
from mcpcore_stores import StoreCorrupt
from mcpcore_stores._records import (
    client_fields,
    client_from_fields,
    decode_client,
    decode_continuation,
    decode_task,
    decode_tokens,
    encode_client,
    encode_tokens,
    tokens_fields,
    tokens_from_fields,
)

TOKENS = TokenSet(
    access_token=f"at-{SECRET}",
    token_type="Bearer",
    expires_at=1_800_000_000.5,
    refresh_token=f"rt-{SECRET}",
    scope="mcp",
    issuer="https://auth.example.test",
    token_endpoint="https://auth.example.test/token",
    resource="https://mcp.example.test/mcp",
    client_id="client-1",
    dpop_jkt=None,
)
CLIENT = ClientRecord(
    client_id="client-1",
    client_secret=f"cs-{SECRET}",
    client_secret_expires_at=0,
    auth_method="client_secret_post",
    redirect_uris=("http://127.0.0.1:33418/callback",),
    issuer="https://auth.example.test",
    kind="dcr",
    scope=None,
)
TASK = TaskHandle(task_id=f"task-{SECRET}", server="srv", tool="echo", endpoint="e" * 32)
CONTINUATION = Continuation(
    "e" * 32,
    "echo",
    {"name": "echo", "arguments": {"secret": SECRET}},
    f"state-{SECRET}",
    {"q": {"method": "elicitation/create", "params": {"message": "?"}}},
    1,
)

# What a StoreCorrupt may say: a field's or a record's name, nothing else.
NAMES = (
    frozenset(tokens_fields(TOKENS))
    | frozenset(client_fields(CLIENT))
    | {
        "tokens",
        "client",
        "task",
        "continuation",
        "a number",
        "JSON",
    }
)
_EDGE: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    10**400,
    1.5,
    "",
    "\ud800",
    SECRET,
    "x" * 300,
    [],
    ["a", 1],
    {},
    {"k": SECRET},
    "client_secret_basic",
    "private_key_jwt",
    "pre",
    "cimd",
)
_EDGE_TEXT = ("NaN", "Infinity", "-Infinity", "1e999", "-0", "1" * 5000, '"\\udfff"')

_DECODERS = (
    ("tokens", decode_tokens, TOKENS, lambda: tokens_fields(TOKENS)),
    ("client", decode_client, CLIENT, lambda: client_fields(CLIENT)),
    ("task", decode_task, TASK, lambda: json.loads(TASK.to_json())),
    ("continuation", decode_continuation, CONTINUATION, lambda: json.loads(CONTINUATION.to_json())),
    ("tokens_fields", tokens_from_fields, TOKENS, lambda: tokens_fields(TOKENS)),
    ("client_fields", client_from_fields, CLIENT, lambda: client_fields(CLIENT)),
)


def _row(r: Reader, fields: dict[str, Any]) -> str:
    """A row mcpcore wrote, changed by another writer as the bytes say."""
    names = sorted(fields)
    raw: dict[str, str] = {}
    for _ in range(1 + r.u8() % 4):
        how = r.u8() % 5
        name = r.choice(names) if r.u8() % 4 else r.text(8)
        if how == 0:
            fields.pop(name, None)
        elif how == 1:
            fields[name] = r.choice(_EDGE)
        elif how == 2:
            fields[name] = r.json_value(2)
        elif how == 3:
            raw[name] = r.choice(_EDGE_TEXT)
            fields[name] = None
        else:
            fields[name] = r.text(16)
    text = json.dumps(fields, ensure_ascii=r.flag())
    for name, literal in raw.items():  # values json.dumps would not write
        text = text.replace(f"{json.dumps(name)}: null", f"{json.dumps(name)}: {literal}", 1)
    return text


def _decode(decoder: Any, value: Any) -> Any:
    try:
        return decoder(value)
    except StoreCorrupt as exc:
        message = str(exc)
        assert message in NAMES, f"StoreCorrupt names something else than a field: {message!r}"
        assert SECRET not in repr(exc)
        return exc
    except Exception as exc:
        _fuzzlib.raise_unexpected(getattr(decoder, "__name__", "decode"), exc)
        raise


def _round_trip(name: str, record: Any) -> None:
    if isinstance(record, TokenSet):
        assert record.expires_at is None or math.isfinite(record.expires_at)
        text = encode_tokens(record)  # allow_nan=False: raises on NaN or Infinity
        assert decode_tokens(text) == record
    elif isinstance(record, ClientRecord):
        text = encode_client(record)
        assert decode_client(text) == record
    elif isinstance(record, TaskHandle):
        assert decode_task(record.to_json()) == record
    else:
        assert isinstance(record, Continuation), name
        assert decode_continuation(record.to_json()) == record


def fuzz_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    r = Reader(data)
    structured = r.u8() & 1
    name, decoder, _, fields = r.choice(_DECODERS)
    value: Any
    if name.endswith("_fields"):
        try:
            value = json.loads(_row(r, fields())) if structured else r.json_value(3)
        except ValueError:  # a literal Python's json refuses (5,000 digits): no row
            return
    elif structured:
        value = _row(r, fields())
    else:
        value = r.rest()
        if name in ("tokens", "client"):
            value = value.decode("utf-8", "replace")
    got = _decode(decoder, value)
    if isinstance(got, StoreCorrupt):
        return
    _round_trip(name, got)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
