"""U1: the pin stores that outlive a process (``SqlitePinStore``, ``PostgresPinStore``,
``RedisPinStore``, the last two against real servers: ``tests/store_servers.py``):
the ``PinStore`` contract, per server and subject, kept across reopening, and safe
across processes; the SQLite file is owner-only and in WAL mode; a network store
nobody listens for raises ``StoreUnavailable`` naming no password (W5)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpcore import MemoryPinStore, Pin
from mcpcore_stores import (
    PostgresPinStore,
    RedisPinStore,
    SqlitePinStore,
    StoreCorrupt,
    StoreUnavailable,
)
from peers import free_port
from store_servers import (  # noqa: F401 - store_postgres, store_redis: the session's servers
    PostgresServer,
    RedisServer,
    store_postgres,
    store_redis,
)

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("sqlite", "postgres", "redis")

AnyPinStore = SqlitePinStore | PostgresPinStore | RedisPinStore


def _pin(text: str) -> Pin:
    return Pin.of_text(text)


def _open(kind: str, address: str) -> AnyPinStore:
    if kind == "sqlite":
        return SqlitePinStore(address)
    if kind == "postgres":
        return PostgresPinStore(address)
    return RedisPinStore(address)


def _close(store: AnyPinStore) -> None:
    if not isinstance(store, SqlitePinStore):
        store.close()


@pytest.fixture(scope="session", params=KINDS)
def served(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """(kind, its server's DSN or URL; None for SQLite), once per kind. Session-scoped,
    so the servers start before a test's leftover check (conftest) counts its children."""
    kind = str(request.param)
    if kind == "sqlite":
        return kind, None
    server = request.getfixturevalue(f"store_{kind}")
    if isinstance(server, PostgresServer):
        return kind, server.dsn
    assert isinstance(server, RedisServer)
    return kind, server.url


def _address(served: tuple[str, str | None], tmp_path: Path) -> str:
    url = served[1]
    return str(tmp_path / "deep" / "pins.sqlite3") if url is None else url


def _unique(name: str) -> str:
    """A server URL no other test uses (the network servers live for the whole run)."""
    return f"https://{name}.example/mcp/{time.monotonic_ns()}"


def test_U1_pin_store_keeps_pins_per_server_and_subject(
    served: tuple[str, str | None], tmp_path: Path
) -> None:
    """U1: get/put/delete per (server, subject, tool name), as the memory store does;
    a new store on the same file or server reads them."""
    kind, address = served[0], _address(served, tmp_path)
    a, b = _unique("a"), _unique("b")
    store = _open(kind, address)
    try:
        for each in (store, MemoryPinStore()):
            assert each.get_pins(a, "default") == {}
            each.put_pin(a, "default", "add", _pin('{"n":1}'))
            each.put_pin(a, "alice", "add", _pin('{"n":2}'))
            each.put_pin(b, "default", "add", _pin('{"n":3}'))
            each.put_pin(a, "default", "add", _pin('{"n":4}'))  # replaced
            each.put_pin(a, "default", "sübtract ✓", _pin('{"d":"é ✓ 🙂"}'))
            assert each.get_pins(a, "default") == {
                "add": _pin('{"n":4}'),
                "sübtract ✓": _pin('{"d":"é ✓ 🙂"}'),
            }
            assert each.get_pins(a, "alice") == {"add": _pin('{"n":2}')}
            each.delete_pin(a, "alice", "add")
            each.delete_pin(a, "alice", "never")
            assert each.get_pins(a, "alice") == {}
    finally:
        _close(store)
    again = _open(kind, address)
    try:
        assert again.get_pins(b, "default") == {"add": _pin('{"n":3}')}
    finally:
        _close(again)


def test_U1_sqlite_pin_store_file_is_owner_only_and_in_wal_mode(tmp_path: Path) -> None:
    """U1: the SQLite pin store's file (made with its folder on the first pin, not
    on a read) is owner-only and in WAL mode."""
    path = tmp_path / "deep" / "pins.sqlite3"
    store = SqlitePinStore(path)
    assert store.get_pins("https://a/mcp", "default") == {}
    assert not path.exists()
    store.put_pin("https://a/mcp", "default", "add", _pin('{"n":1}'))
    assert path.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


WRITER = """
import os, sys
from mcpcore import Pin
from mcpcore_stores import PostgresPinStore, RedisPinStore, SqlitePinStore
kind, server, worker = sys.argv[1:4]
address = os.environ["PIN_STORE_ADDRESS"]
store = {"sqlite": SqlitePinStore, "postgres": PostgresPinStore, "redis": RedisPinStore}[kind](
    address
)
for n in range(40):
    store.put_pin(server, "default", f"{worker}-{n}", Pin.of_text(str(n)))
    store.put_pin(server, "default", "shared", Pin.of_text(worker))
"""


def test_U1_pin_store_is_safe_across_processes(
    served: tuple[str, str | None], tmp_path: Path
) -> None:
    """U1: four processes writing at once lose no pin and never fail on a lock."""
    kind, address = served[0], _address(served, tmp_path)
    server = _unique("s")
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'src' / 'adapters'}",
        "PIN_STORE_ADDRESS": address,  # not in argv: a DSN holds a password
    }
    workers = [
        subprocess.Popen([sys.executable, "-c", WRITER, kind, server, f"w{i}"], env=env)
        for i in range(4)
    ]
    try:
        assert [worker.wait(timeout=60) for worker in workers] == [0, 0, 0, 0]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    store = _open(kind, address)
    try:
        pins = store.get_pins(server, "default")
    finally:
        _close(store)
    assert len(pins) == 4 * 40 + 1
    assert all(pins[f"w{i}-{n}"] == Pin.of_text(str(n)) for i in range(4) for n in range(40))
    assert pins["shared"] in {Pin.of_text(f"w{i}") for i in range(4)}


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_W5_unreachable_pin_store_raises_store_unavailable_naming_no_password(
    kind: str,
) -> None:
    """W5, U1: a network pin store nobody listens for raises ``StoreUnavailable``
    from every method, quickly, naming its kind and host:port, never the password
    or the DSN/URL; psycopg's or redis-py's error is not kept."""
    password = "pw-unreachable-5b7e"
    port = free_port()  # bound a moment ago, released: nobody listens there
    store: PostgresPinStore | RedisPinStore
    if kind == "postgres":
        url = f"postgresql://mcpcore:{password}@127.0.0.1:{port}/mcpcore"
        store, words = PostgresPinStore(url, timeout=2.0), "PostgreSQL store"
    else:
        url = f"redis://:{password}@127.0.0.1:{port}/0"
        store, words = RedisPinStore(url, timeout=2.0), "Redis store"
    calls: list[Callable[[], Any]] = [
        lambda: store.get_pins("https://s/mcp", "default"),
        lambda: store.put_pin("https://s/mcp", "default", "add", _pin("{}")),
        lambda: store.delete_pin("https://s/mcp", "default", "add"),
    ]
    with store:
        assert password not in repr(store) and f"127.0.0.1:{port}" in repr(store)
        for call in calls:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable) as caught:
                call()
            assert time.monotonic() - started < 3.0  # failed, not retried with pauses
            error = caught.value
            shown = "\n".join([str(error), repr(error), "".join(traceback.format_exception(error))])
            assert password not in shown and url not in shown
            assert f"{words} at 127.0.0.1:{port} cannot be reached" in str(error), str(error)
            assert error.__cause__ is None and error.__context__ is None


def test_U1_redis_pin_store_raises_store_corrupt_for_a_value_it_did_not_write(
    store_redis: RedisServer,  # noqa: F811 - the session's server
) -> None:
    """U1: a pin in Redis that is not mcpcore's JSON raises ``StoreCorrupt`` naming the
    field, never the value (the SQL stores' columns are typed: text in, text out)."""
    server = _unique("corrupt")
    with RedisPinStore(store_redis.url) as store:
        store.put_pin(server, "default", "add", _pin("{}"))
        key = store._key(server, "default")
        for value, field in [(b"secret-not-json", "pin"), (b'{"fingerprint": 1}', "fingerprint")]:
            store._redis.hset(key, "add", value)
            with pytest.raises(StoreCorrupt) as caught:
                store.get_pins(server, "default")
            assert str(caught.value) == field
