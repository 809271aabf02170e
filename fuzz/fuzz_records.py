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

With byte 0's bit 1 set, the rows are written by another writer straight into a
``SqliteTokenStore``'s database (one temporary file per process): token sets of
two subjects (each tagged with its subject) or changed ones, under any
``stored`` order value and as TEXT or BLOB, task handles and continuations.
Reading back through the store gives ``StoreCorrupt`` or the decoding of one
of the rows of that subject and server (or task id), never another subject's
row, and ``None`` only when that subject has none.
"""

from __future__ import annotations

import atexit
import json
import math
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import ClientRecord, Continuation, TaskHandle, TokenSet
from mcpcore_stores import SqliteTokenStore, StoreCorrupt
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


_SUBJECTS = ("alice", "bob")
_SERVERS = ("https://mcp.example.test/mcp", "https://other.example.test/mcp")
_db: tuple[SqliteTokenStore, sqlite3.Connection] | None = None


def _database() -> tuple[SqliteTokenStore, sqlite3.Connection]:
    """The store under test and another writer's connection to its file (one per process)."""
    global _db
    if _db is None:
        folder = Path(tempfile.mkdtemp(prefix="fuzz-records-"))
        atexit.register(shutil.rmtree, folder, True)
        store = SqliteTokenStore(folder / "tokens.db")
        store.get_tokens(_SERVERS[0])  # makes the file and its tables
        _db = (store, sqlite3.connect(folder / "tokens.db", isolation_level=None))
    return _db


def _tagged(subject: str, server: str) -> TokenSet:
    return replace(TOKENS, access_token=f"at-{subject}-{SECRET}", resource=server)


def _text_ok(text: str) -> bool:
    """SQLite keeps TEXT as UTF-8: a lone surrogate can only go in as a BLOB."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sqlite(r: Reader) -> None:
    store, writer = _database()
    for table in ("tokens", "tasks", "continuations"):
        writer.execute(f"DELETE FROM {table}")
    rows: list[tuple[str, str, Any]] = []
    for _ in range(r.u8() % 6):
        subject, server = r.choice((*_SUBJECTS, "Alice", "")), r.choice(_SERVERS)
        body: Any = encode_tokens(_tagged(subject, server))
        if r.u8() % 3 == 0:
            body = _row(r, json.loads(body))
        if r.u8() % 4 == 0 or not _text_ok(body):
            body = body.encode("utf-8", "surrogatepass")  # a BLOB where TEXT belongs
        stored = r.choice((r.u8(), -1, 1.5, "9", None)) if r.u8() % 4 == 0 else r.u8()
        writer.execute(
            "INSERT OR REPLACE INTO tokens (subject, server_url, issuer, body, stored) "
            "VALUES (?, ?, ?, ?, COALESCE(?, 0))",
            (subject, server, r.choice(("i1", "i2")), body, stored),
        )
        rows.append((subject, server, body))
    tasks: dict[tuple[str, str], Any] = {}
    for _ in range(r.u8() % 3):
        subject, task_id = r.choice(_SUBJECTS), r.choice(("t1", "t2"))
        body = TaskHandle(f"{task_id}-{subject}", "srv", "echo", "e" * 32).to_json()
        if r.flag():
            body = _row(r, json.loads(body))
        if not _text_ok(body):
            body = body.encode("utf-8", "surrogatepass")
        writer.execute(
            "INSERT OR REPLACE INTO tasks (subject, task_id, body) VALUES (?, ?, ?)",
            (subject, task_id, body),
        )
        tasks[(subject, task_id)] = body
    for subject in _SUBJECTS:
        for server in _SERVERS:
            mine = [body for s, v, body in rows if (s, v) == (subject, server)]
            got = _decode(partial(store.get_tokens, subject=subject), server)
            if isinstance(got, StoreCorrupt):
                assert mine, "StoreCorrupt for a subject without rows"
                continue
            if got is None:
                assert not mine, "a subject's rows were not found"
                continue
            assert isinstance(got, TokenSet)
            assert not got.access_token.startswith("at-") or got.access_token.startswith(
                f"at-{subject}-"
            ), "another subject's tokens were handed out"
            decoded = []
            for body in mine:
                one = _decode(decode_tokens, body)
                if isinstance(one, TokenSet):
                    decoded.append(one)
            assert got in decoded, "the tokens read are none of the subject's rows"
        for task_id in ("t1", "t2"):
            task = _decode(partial(store.load_task, subject=subject), task_id)
            if task is None:
                assert (subject, task_id) not in tasks
            elif not isinstance(task, StoreCorrupt):
                assert _decode(decode_task, tasks[(subject, task_id)]) == task
                other = "bob" if subject == "alice" else "alice"
                assert not task.task_id.endswith(f"-{other}"), "another subject's task"


def fuzz_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    r = Reader(data)
    mode = r.u8()
    if mode & 2:
        _sqlite(r)
        return
    structured = mode & 1
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
