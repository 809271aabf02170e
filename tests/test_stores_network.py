"""The network stores beyond the shared contract: ``PostgresTokenStore`` and
``RedisTokenStore`` against real servers (S5; ``tests/store_servers.py``).

* W5: a store nobody listens for, and one that refuses the password, raise
  ``StoreUnavailable`` from every method, quickly, naming the store's kind and
  host:port and no password (nor the DSN/URL), in the message, the repr and the
  traceback; the store's own repr shows no password either; a client whose
  store's server stops keeps calling and refreshing with its tokens in memory;
* W3: a lease held by a process killed with SIGKILL frees within ``lease``; a
  holder that outlived its lease gives back nothing of the next holder's;
* W2: compare-and-set from 8 threads (8 connections) loses no update, and the
  PostgreSQL compare-and-set is one statement: its version guard, not a lock
  held between statements, decides (a write that read an old version applies
  to nothing);
* a dropped connection (the server ended it) is opened again once, and workers
  that start together on an empty database make its tables once;
* the servers' fixtures fail, never skip, when a server is not installed.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcpcore import TokenKey, TokenSet
from mcpcore_stores import PostgresTokenStore, RedisTokenStore, StoreUnavailable
from peers import ROOT, free_port
from store_servers import (  # noqa: F401 - store_postgres, store_redis: the session's servers
    PostgresServer,
    RedisServer,
    store_postgres,
    store_redis,
)

KINDS = ("postgres", "redis")
SERVER = "https://mcp.example/mcp"
ISSUER = "https://as.example"


def _tokens(access: str, refresh: str | None = "r") -> TokenSet:
    return TokenSet(
        access_token=access,
        refresh_token=refresh,
        issuer=ISSUER,
        token_endpoint=f"{ISSUER}/token",
        resource=SERVER,
        client_id="client",
    )


def _make(kind: str, url: str, **options: Any) -> PostgresTokenStore | RedisTokenStore:
    if kind == "postgres":
        return PostgresTokenStore(url, **options)
    return RedisTokenStore(url, **options)


Server = PostgresServer | RedisServer


@pytest.fixture(scope="session", params=KINDS)
def served(request: pytest.FixtureRequest) -> tuple[str, Server]:
    """(kind, its running server), once per kind. Session-scoped, so the servers
    start before a test's leftover check (conftest) counts its children."""
    kind = str(request.param)
    server = request.getfixturevalue(f"store_{kind}")
    assert isinstance(server, (PostgresServer, RedisServer))
    return kind, server


@pytest.fixture(scope="session")
def pg(request: pytest.FixtureRequest) -> PostgresServer:
    server = request.getfixturevalue("store_postgres")
    assert isinstance(server, PostgresServer)
    return server


def _url(server: Server) -> str:
    return server.dsn if isinstance(server, PostgresServer) else server.url


def _unique(name: str) -> str:
    """A server URL no other test uses (the servers live for the whole run)."""
    return f"{SERVER}/{name}/{time.monotonic_ns()}"


# ---------------------------------------------------------------------------
# W5: unreachable, or refusing the credentials


def _every_call(store: PostgresTokenStore | RedisTokenStore) -> list[Callable[[], object]]:
    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    return [
        lambda: store.get_tokens(SERVER),
        lambda: store.set_tokens(key, _tokens("a")),
        lambda: store.set_tokens(key, _tokens("b"), replaces=_tokens("a")),
        lambda: store.delete_tokens(key, only_if=_tokens("b")),
        lambda: store.lock_tokens(SERVER),
        lambda: store.lock_sign_in(ISSUER),
        lambda: store.get_clients(),
        lambda: store.load_task("task-1"),
        lambda: store.take_continuation("c" * 32),
    ]


def _assert_fails_unavailable(
    store: PostgresTokenStore | RedisTokenStore, secrets: list[str], words: str, where: str
) -> None:
    for call in _every_call(store):
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as caught:
            call()
        assert time.monotonic() - started < 3.0  # failed, not retried with pauses
        error = caught.value
        shown = "\n".join(
            [str(error), repr(error), "".join(traceback.format_exception(error)), repr(store)]
        )
        for secret in secrets:
            assert secret not in shown
        assert words in str(error) and where in str(error), str(error)
        # The driver's error (which carries the connection settings) is not kept.
        assert error.__cause__ is None and error.__context__ is None


@pytest.mark.parametrize("kind", KINDS)
def test_W5_unreachable_store_raises_store_unavailable_naming_no_password(kind: str) -> None:
    """W5: a store nobody listens for raises ``StoreUnavailable`` from every method,
    naming its kind and host:port, never the password or the DSN/URL."""
    password = "pw-unreachable-9f3a"
    port = free_port()  # bound a moment ago, released: nobody listens there
    if kind == "postgres":
        url = f"postgresql://mcpcore:{password}@127.0.0.1:{port}/mcpcore"
        words = "PostgreSQL store"
    else:
        url = f"redis://:{password}@127.0.0.1:{port}/0"
        words = "Redis store"
    with _make(kind, url, timeout=2.0) as store:
        assert password not in repr(store) and f"127.0.0.1:{port}" in repr(store)
        _assert_fails_unavailable(
            store, [password, url], f"{words} at 127.0.0.1:{port} cannot be reached", words
        )


def test_W5_bad_credentials_raise_store_unavailable_naming_no_password(
    served: tuple[str, Server],
) -> None:
    """W5: a reachable store that refuses the password raises ``StoreUnavailable``
    saying so, and names neither the wrong password nor the right one."""
    kind, server = served
    wrong = "pw-wrong-c81d"
    if isinstance(server, PostgresServer):
        url = server.dsn_with_password(wrong)
    else:
        url = server.url_with_password(wrong)
    where = f"{server.host}:{server.port}"
    with _make(kind, url, timeout=2.0) as store:
        _assert_fails_unavailable(
            store, [wrong, server.password, url], "refused the credentials", where
        )


@pytest.mark.realpeer
@pytest.mark.parametrize("kind", KINDS)
def test_W5_a_client_whose_store_goes_away_keeps_its_tokens_in_memory(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """W5 (D2): the store's server stops while a client signed in through it calls on,
    past its 2-second tokens' expiry: every call succeeds, the refreshes go on with
    the tokens held in memory, nobody is asked to sign in again, the server refuses
    no refresh, and nothing logged names the store's password."""
    from mcpcore import AuthOptions
    from mcpcore_threaded import McpClient
    from protected_peer import authorize_headless_blocking, protected_sdk_server
    from store_servers import _stop_process, postgres_server, redis_server

    asked: list[str] = []

    def person(url: str, redirect_uri: str) -> str:
        asked.append(url)
        return authorize_headless_blocking(url, redirect_uri)

    caplog.set_level(logging.DEBUG)
    running = postgres_server() if kind == "postgres" else redis_server()
    with running as server, protected_sdk_server(token_ttl=2, step_up=False) as peer:
        store = _make(kind, _url(server), timeout=1.0)
        auth = AuthOptions(store=store, redirect_uri="http://127.0.0.1:9/callback")
        with store, McpClient("p", {"url": peer.url}, auth=auth, authorize=person) as client:
            assert client.ready(30).ok
            assert "scopes=" in client.call("p/whoami", {}).text
            assert len(asked) == 1 and store.get_tokens(peer.url) is not None
            mark = len(peer.events())
            _stop_process(server.proc, signal.SIGINT)  # the store's server is gone
            deadline = time.monotonic() + 3.5  # past the tokens' expiry
            calls = 0
            while time.monotonic() < deadline:
                assert "scopes=" in client.call("p/whoami", {}).text
                calls += 1
                time.sleep(0.1)
            with pytest.raises(StoreUnavailable):
                store.get_tokens(peer.url)
        events = peer.events()[mark:]
    assert calls >= 10 and len(asked) == 1
    assert any(e.startswith("token grant=refresh_token") for e in events), events
    assert not [e for e in events if e.startswith(("token refused", "authorize "))], events
    assert "kept in memory" in caplog.text
    assert server.password not in caplog.text


# ---------------------------------------------------------------------------
# W3: leases

_HOLDER = """
import os, sys, time
from mcpcore_stores import PostgresTokenStore, RedisTokenStore
kind, server, lease = sys.argv[1], sys.argv[2], float(sys.argv[3])
make = PostgresTokenStore if kind == "postgres" else RedisTokenStore
store = make(os.environ["MCPCORE_TEST_STORE_URL"], lease=lease)
assert store.lock_tokens(server)
print("held", flush=True)
time.sleep(120)
"""


def test_W3_lease_of_a_sigkilled_holder_frees_within_the_lease(
    served: tuple[str, Server],
) -> None:
    """W3: a process killed (SIGKILL) while it holds the refresh lease delays the
    others by at most ``lease`` seconds: the lease ends by itself."""
    lease = 2.0
    kind, url, server = served[0], _url(served[1]), _unique("sigkill")
    env = dict(os.environ, MCPCORE_TEST_STORE_URL=url)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "src" / "adapters")])
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, kind, server, str(lease)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert holder.stdout is not None
        ready, _, _ = select.select([holder.stdout], [], [], 30.0)
        assert ready, "the holder did not take the lease within 30 s"
        assert holder.stdout.readline() == b"held\n"
        held_at = time.monotonic()  # the lease was taken before this
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        with _make(kind, url, lease=lease) as other:
            first = other.lock_tokens(server)
            if time.monotonic() - held_at < lease / 2:
                assert not first, "the killed holder's lease ended early"
            taken = first
            while not taken and time.monotonic() - held_at < lease + 2.0:
                time.sleep(0.05)
                taken = other.lock_tokens(server)
            freed_after = time.monotonic() - held_at
            assert taken, f"the lease was still held {freed_after:.2f}s after it was taken"
            assert freed_after <= lease + 0.5, freed_after
            other.unlock_tokens(server)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_W3_a_holder_that_outlived_its_lease_frees_nothing_of_the_next(
    served: tuple[str, Server],
) -> None:
    """W3: a holder whose lease ended gives back nothing when it unlocks: the next
    holder's lease stays, and only that holder gives it back."""
    kind, url, server = served[0], _url(served[1]), _unique("outlived")
    with _make(kind, url, lease=0.3) as late, _make(kind, url, lease=30.0) as next_holder:
        assert late.lock_tokens(server)
        deadline = time.monotonic() + 5.0
        while not next_holder.lock_tokens(server):
            assert time.monotonic() < deadline, "the short lease never ended"
            time.sleep(0.05)
        late.unlock_tokens(server)  # too late: the lease is the next holder's now
        assert not late.lock_tokens(server)
        next_holder.unlock_tokens(server)
        assert late.lock_tokens(server)
        late.unlock_tokens(server)


# ---------------------------------------------------------------------------
# W2: compare-and-set under contention


def test_W2_compare_and_set_from_8_threads_loses_no_update(
    served: tuple[str, Server],
) -> None:
    """W2: 8 threads, each with its own store (connection), add one to a counter
    held in the access token 40 times each by read + ``set_tokens(replaces=)``:
    the counter ends at 320, and exactly 320 writes applied."""
    kind, url, server = served[0], _url(served[1]), _unique("cas")
    key = TokenKey(server_url=server, issuer=ISSUER)
    threads_n, each = 8, 40
    stores = [_make(kind, url) for _ in range(threads_n)]
    applied = [0] * threads_n
    errors: list[BaseException] = []
    try:
        assert stores[0].set_tokens(key, _tokens("0"))

        def add(index: int) -> None:
            store = stores[index]
            try:
                while applied[index] < each:
                    current = store.get_tokens(server)
                    assert current is not None
                    bumped = _tokens(str(int(current.access_token) + 1))
                    if store.set_tokens(key, bumped, replaces=current):
                        applied[index] += 1
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=add, args=(i,), name=f"cas-{i}") for i in range(threads_n)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
        assert not errors, errors
        final = stores[0].get_tokens(server)
        assert final is not None and final.access_token == str(threads_n * each)
        assert sum(applied) == threads_n * each
    finally:
        for store in stores:
            store.close()


def test_W2_postgres_compare_and_set_is_guarded_by_the_version_alone(
    pg: PostgresServer,
) -> None:
    """W2: the PostgreSQL compare-and-set is ONE statement guarded by the head's
    version. A write whose version was read before another write applied does
    nothing, even when the row it writes is another issuer's (the head, not the
    token row, is what the guard compares), and a write while another
    transaction holds the head row waits for it, then finds the version moved on."""
    from mcpcore_stores import _postgres

    server = _unique("guard")
    with PostgresTokenStore(pg.dsn) as store:
        key = TokenKey(server_url=server, issuer=ISSUER)
        other_issuer = TokenKey(server_url=server, issuer="https://other.example")
        assert store.set_tokens(key, _tokens("a"))
        version, current = store._read_head("default", server)
        assert current is not None and current.access_token == "a"
        # Another worker writes between this worker's read and its write.
        assert store.set_tokens(other_issuer, _tokens("b"), replaces=_tokens("a"))
        stale = {
            "subject": "default",
            "server": server,
            "issuer": ISSUER,
            "tokens": _postgres.encode_tokens(_tokens("c")),
            "guarded": True,
            "version": version,
        }
        assert store._run(lambda c: c.execute(_postgres._WRITE, stale).fetchone()) is None
        newest = store.get_tokens(server)
        assert newest is not None and newest.access_token == "b"

        # A transaction that holds the head row (a write in flight) makes the
        # guarded statement wait, then apply to nothing.
        version, _ = store._read_head("default", server)
        stale["version"] = version
        import psycopg

        blocker = psycopg.connect(pg.dsn)
        try:
            blocker.execute(
                "UPDATE mcpcore_token_heads SET version = version + 1 "
                "WHERE subject = 'default' AND server_url = %s",
                (server,),
            )
            result: list[object] = []
            writer = threading.Thread(
                target=lambda: result.append(
                    store._run(lambda c: c.execute(_postgres._WRITE, stale).fetchone())
                ),
                name="guarded-write",
            )
            writer.start()
            writer.join(timeout=0.5)
            assert writer.is_alive(), "the guarded write did not wait for the head row"
            blocker.commit()
            writer.join(timeout=10)
            assert not writer.is_alive() and result == [None]
        finally:
            blocker.close()


# ---------------------------------------------------------------------------
# Connections


def test_a_dropped_connection_is_opened_again_once(served: tuple[str, Server]) -> None:
    """The server ends the store's connection between two calls: the next call
    opens a new one and succeeds."""
    (kind, running), server = served, _unique("dropped")
    url = _url(running)
    key = TokenKey(server_url=server, issuer=ISSUER)
    with _make(kind, url) as store:
        assert store.set_tokens(key, _tokens("before"))
        if isinstance(store, PostgresTokenStore):
            backend = store._run(lambda c: c.info.backend_pid)
            assert isinstance(running, PostgresServer)
            with running.admin_connect() as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        else:
            import redis

            with redis.Redis(
                host=running.host, port=running.port, password=running.password
            ) as admin:
                killed = admin.client_kill_filter(skipme=True)
                assert killed >= 1
        found = store.get_tokens(server)
        assert found is not None and found.access_token == "before"


def test_postgres_workers_starting_together_make_the_tables_once(
    pg: PostgresServer,
) -> None:
    """Six stores open at once on a database without the tables: each makes them
    if missing, under one lock, and none fails."""
    import psycopg
    from psycopg import sql

    database = f"fresh_{time.monotonic_ns()}"
    with pg.admin_connect() as admin:
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER mcpcore").format(sql.Identifier(database)))
    dsn = pg.dsn.rsplit("/", 1)[0] + f"/{database}"
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def start() -> None:
        try:
            with PostgresTokenStore(dsn) as store:
                barrier.wait(timeout=10)
                assert store.get_tokens(SERVER) is None
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, name=f"start-{i}") for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    with psycopg.connect(dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'mcpcore%'"
        ).fetchone()
    assert tables == (6,)


def test_a_missing_server_binary_fails_the_test_naming_the_installer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The servers' fixtures FAIL (never skip) when PostgreSQL or Redis is not
    installed, and say how to install them: CI installs both."""
    import store_servers

    monkeypatch.setattr(store_servers, "POSTGRES_ROOT", tmp_path / "no-postgresql")
    monkeypatch.setattr(store_servers, "REDIS_SERVER", "redis-server-not-installed")
    for start in (store_servers.postgres_server, store_servers.redis_server):
        with pytest.raises(pytest.fail.Exception, match=r"install_peers\.sh") as caught:
            next(store_servers._or_fail(start))
        assert not isinstance(caught.value, pytest.skip.Exception)
