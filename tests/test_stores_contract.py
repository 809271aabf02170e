"""The stores' contract (W1-W5): one test, run against all three stores.

``SqliteTokenStore`` on a file in a temporary folder, ``PostgresTokenStore``
and ``RedisTokenStore`` on real servers (``tests/store_servers.py``: no mock
stands in for either). Every test that crosses processes starts its workers
as fresh interpreters (``tests/store_workers.py``), each opening its own store
on the same target:

* W2: 8 processes x 200 compare-and-set updates on one key lose no update;
  ``replaces=`` and ``only_if=`` apply only in place of the newest set;
* W3: exactly one process holds the refresh lock at any moment; a holder
  killed with SIGKILL frees it within its lease; a holder that outlived its
  lease gives back nothing of the next one's, and its compare-and-set fails;
* W1: subjects stay apart (tokens, locks, tasks, continuations);
* W4: task handles and continuations round-trip; of 8 processes taking the
  same continuations, exactly one gets each;
* W5: an unreachable store, or one that refuses the credentials, raises
  ``StoreUnavailable`` naming no password.

Each test uses keys of its own (a fresh server URL), so the servers, shared by
the whole run, need no cleaning between tests.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from mcpcore import DEFAULT_SUBJECT, ClientRecord, Continuation, TaskHandle, TokenKey, TokenSet
from mcpcore_stores import StoreError, StoreUnavailable
from peers import free_port
from store_servers import postgres_dsn, redis_url, store_postgres, store_redis  # noqa: F401
from store_workers import WAIT, counter_tokens, open_store

KINDS = ["sqlite", "postgres", "redis"]
ISSUER = "https://as.example"
SECRET = "pw-Zq81-never-shown"
WORKER = str(Path(__file__).with_name("store_workers.py"))
PROCESSES = 8
UPDATES = 200


@dataclass(frozen=True)
class Target:
    kind: str
    target: str

    def open(self, lease: float = 30.0) -> Any:
        return open_store(self.kind, self.target, lease)


@pytest.fixture(scope="module", params=KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """The kind of store; its server (a session's) is started here, before any test's
    own set-up, so that no test is taken to have left it behind."""
    kind: str = request.param
    if kind != "sqlite":
        request.getfixturevalue("postgres_dsn" if kind == "postgres" else "redis_url")
    return kind


@pytest.fixture
def store_target(request: pytest.FixtureRequest, tmp_path: Path, store_kind: str) -> Target:
    kind = store_kind
    if kind == "sqlite":
        return Target(kind, str(tmp_path / "store" / "tokens.sqlite3"))
    if kind == "postgres":
        return Target(kind, request.getfixturevalue("postgres_dsn"))
    return Target(kind, request.getfixturevalue("redis_url"))


@pytest.fixture
def server_url() -> str:
    return f"https://mcp.example/{uuid.uuid4().hex}/mcp"


def _tokens(access: str, refresh: str | None = "rt", issuer: str = ISSUER) -> TokenSet:
    return TokenSet(
        access_token=access,
        refresh_token=refresh,
        issuer=issuer,
        token_endpoint=issuer + "/token",
        resource="https://mcp.example/mcp",
        client_id="client",
    )


def _continuation(n: int) -> Continuation:
    return Continuation(
        endpoint="e" * 32,
        tool="book",
        params={"name": "book", "arguments": {"n": n}},
        request_state=f"state-{n}-{uuid.uuid4().hex}",
        input_requests={"ok": {"method": "elicitation/create"}},
        rounds=1,
    )


class _Workers:
    """Worker processes (``store_workers.py``, each a fresh interpreter) started
    together: each says it is ready, then all are told to go at once. All are
    killed and reaped when the block ends, however it ends."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, job: str, target: Target, **args: Any) -> subprocess.Popen[str]:
        payload = json.dumps({"kind": target.kind, "target": target.target, **args})
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([*sys.path, env.get("PYTHONPATH", "")])
        process = subprocess.Popen(
            [sys.executable, WORKER, job, payload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.processes.append(process)
        return process

    def run(self) -> list[Any]:
        """Wait until every worker is ready, let them all go, and gather their results."""
        for process in self.processes:
            assert _line(process) == "ready"
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [json.loads(_line(process)) for process in self.processes]
        for process in self.processes:
            assert process.wait(timeout=WAIT) == 0
        return results

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=WAIT)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()


def _line(process: subprocess.Popen[str]) -> str:
    """The next line the worker prints, waited for at most ``WAIT`` seconds."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], WAIT)
    assert ready, "a worker said nothing"
    line = process.stdout.readline()
    assert line, f"a worker ended with status {process.wait(timeout=WAIT)}"
    return line.strip()


@pytest.fixture
def workers() -> Iterator[_Workers]:
    pool = _Workers()
    try:
        yield pool
    finally:
        pool.close()


# --- W2: compare-and-set --------------------------------------------------------------------


def test_W2_8_processes_x_200_compare_and_set_updates_lose_none(
    store_target: Target, server_url: str, workers: _Workers
) -> None:
    key = TokenKey(server_url=server_url, issuer=ISSUER)
    with store_target.open() as store:
        assert store.set_tokens(key, counter_tokens(0))
        for _ in range(PROCESSES):
            workers.start("cas", store_target, server_url=server_url, updates=UPDATES)
        started = time.monotonic()
        tries = workers.run()
        took = time.monotonic() - started
        final = store.get_tokens(server_url)
    assert final is not None and final.access_token == str(PROCESSES * UPDATES)
    assert sum(tries) >= PROCESSES * UPDATES
    print(f"{store_target.kind}: {PROCESSES}x{UPDATES} CAS in {took:.2f} s, {sum(tries)} tries")


def test_W2_replaces_and_only_if_apply_only_in_place_of_the_newest_set(
    store_target: Target, server_url: str
) -> None:
    first, second = _tokens("at-1"), _tokens("at-2", issuer="https://other.example")
    key1 = TokenKey(server_url=server_url, issuer=ISSUER)
    key2 = TokenKey(server_url=server_url, issuer="https://other.example")
    with store_target.open() as store:
        assert store.get_tokens(server_url) is None
        assert store.set_tokens(key1, first)
        assert store.set_tokens(key2, second)  # newest for the server, whatever its issuer
        assert store.get_tokens(server_url) == second
        assert not store.set_tokens(key1, _tokens("at-3"), replaces=first)
        assert not store.delete_tokens(key2, only_if=first)
        assert store.get_tokens(server_url) == second
        third = _tokens("at-3", issuer="https://other.example")
        assert store.set_tokens(key2, third, replaces=second)
        assert store.get_tokens(server_url) == third
        assert store.delete_tokens(key2, only_if=third)
        assert store.get_tokens(server_url) == first  # the other issuer's set is left
        assert store.delete_tokens(key1)
        assert store.get_tokens(server_url) is None
        # clients, keyed by issuer
        client = ClientRecord(client_id="c-1", client_secret=SECRET, issuer=ISSUER, kind="dcr")
        store.set_client(ISSUER, client)
        assert client in store.get_clients()
        store.delete_client(ISSUER)
        assert client not in store.get_clients()
        assert SECRET not in repr(store)


# --- W3: leases -----------------------------------------------------------------------------


def test_W3_one_holder_of_the_refresh_lock_at_any_moment_across_processes(
    store_target: Target, server_url: str, workers: _Workers, tmp_path: Path
) -> None:
    marker = str(tmp_path / "holder")
    for _ in range(4):
        workers.start("lock", store_target, server_url=server_url, seconds=1.5, marker=marker)
    results = workers.run()
    held = [r["held"] for r in results]
    assert [r["overlaps"] for r in results] == [0] * 4
    assert sum(held) >= 20 and sum(1 for n in held if n) >= 2  # it went round


def test_W2_many_processes_opening_one_fresh_sqlite_file_at_once_all_get_it(
    tmp_path: Path,
) -> None:
    """Eight fresh interpreters make and open one new file at the same moment, ten
    times over: each gets the store. (Switching a fresh file to WAL could find
    another process at it and fail at once, without the busy wait.)"""
    for round_ in range(10):
        target = Target("sqlite", str(tmp_path / f"round-{round_}" / "tokens.sqlite3"))
        pool = _Workers()
        try:
            for _ in range(8):
                pool.start("open", target)
            assert pool.run() == ["ok"] * 8
        finally:
            pool.close()


def test_W3_a_holder_killed_with_SIGKILL_frees_the_lease_within_its_length(
    store_target: Target, server_url: str, workers: _Workers
) -> None:
    lease = 1.0
    process = workers.start("hang", store_target, server_url=server_url, lease=lease)
    taken = float(_line(process))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=WAIT)
    with store_target.open(lease) as store:
        assert not store.lock_tokens(server_url)  # still held by the dead process
        while not store.lock_tokens(server_url):
            assert time.time() < taken + lease + 2.0, "the lease outlived its length"
            time.sleep(0.02)
        freed = time.time()
        store.unlock_tokens(server_url)
    assert freed - taken <= lease + 0.5


def test_W3_a_holder_that_outlived_its_lease_frees_nothing_and_overwrites_nothing(
    store_target: Target, server_url: str
) -> None:
    key = TokenKey(server_url=server_url, issuer=ISSUER)
    with store_target.open(0.3) as late, store_target.open(30.0) as next_one:
        old = _tokens("at-old")
        assert late.set_tokens(key, old)
        assert late.lock_tokens(server_url)
        deadline = time.monotonic() + WAIT
        while not next_one.lock_tokens(server_url):  # the late one's lease runs out
            assert time.monotonic() < deadline
            time.sleep(0.02)
        new = _tokens("at-new", "rt-new")
        assert next_one.set_tokens(key, new, replaces=old)
        late.unlock_tokens(server_url)  # too late: frees nothing of the next one's
        assert not late.lock_tokens(server_url)
        assert not late.set_tokens(key, _tokens("at-late", "rt-late"), replaces=old)
        assert not late.delete_tokens(key, only_if=old)
        assert late.get_tokens(server_url) == new
        next_one.unlock_tokens(server_url)
        assert late.lock_tokens(server_url)
        late.unlock_tokens(server_url)
        # the sign-in lock is a lease too, given back by its holder only
        assert late.lock_sign_in(ISSUER + server_url)
        assert not next_one.lock_sign_in(ISSUER + server_url)
        next_one.unlock_sign_in(ISSUER + server_url)  # not its own: nothing happens
        assert not next_one.lock_sign_in(ISSUER + server_url)
        late.unlock_sign_in(ISSUER + server_url)
        assert next_one.lock_sign_in(ISSUER + server_url)
        next_one.unlock_sign_in(ISSUER + server_url)


# --- W1: subjects ---------------------------------------------------------------------------


def test_W1_subjects_stay_apart(store_target: Target, server_url: str) -> None:
    alice = TokenKey(server_url=server_url, issuer=ISSUER, subject="alice")
    bob = TokenKey(server_url=server_url, issuer=ISSUER, subject="bob")
    alices = _tokens("at-alice")
    with store_target.open() as store:
        assert store.set_tokens(alice, alices)
        assert store.get_tokens(server_url, subject="bob") is None
        assert store.get_tokens(server_url) is None  # nor the default subject's
        assert store.get_tokens(server_url, subject="alice") == alices
        # Bob cannot replace or delete Alice's set by naming it
        assert not store.set_tokens(bob, _tokens("at-bob"), replaces=alices)
        assert not store.delete_tokens(bob, only_if=alices)
        assert store.delete_tokens(bob)  # his own (none): hers is left
        assert store.get_tokens(server_url, subject="alice") == alices
        # each subject's refresh lock is its own
        assert store.lock_tokens(server_url, subject="alice")
        assert store.lock_tokens(server_url, subject="bob")
        assert store.lock_tokens(server_url, subject=DEFAULT_SUBJECT)
        assert not store.lock_tokens(server_url, subject="alice")
        for subject in ("alice", "bob", DEFAULT_SUBJECT):
            store.unlock_tokens(server_url, subject=subject)
        # tasks and continuations too
        handle = TaskHandle(f"task-{uuid.uuid4().hex}", "docs", "book")
        store.save_task(handle, subject="alice")
        assert store.load_task(handle.task_id, subject="bob") is None
        assert store.load_task(handle.task_id) is None
        assert not store.delete_task(handle.task_id, subject="bob")
        assert store.load_task(handle.task_id, subject="alice") == handle
        ident = store.save_continuation(_continuation(1), subject="alice")
        assert store.take_continuation(ident, subject="bob") is None
        assert store.take_continuation(ident) is None
        assert store.take_continuation(ident, subject="alice") == _continuation_with(ident, store)


# N1: a DPoP key as mcpcore_jwt exports it (a private JWK in JSON): the secret kept
# with the tokens bound to it.
DPOP_D = "d-Kx93-private-never-shown-0123456789abcd"
DPOP_EXPORT = json.dumps({"crv": "P-256", "d": DPOP_D, "kty": "EC", "x": "xx", "y": "yy"})


def test_N1_the_dpop_key_kept_with_the_tokens_round_trips_and_never_shows(
    store_target: Target, server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """N1, A4: a token set bound to a DPoP key, with the key's export, reads back
    whole (export and thumbprint); the export shows in no repr, str or log record."""
    key = TokenKey(server_url=server_url, issuer=ISSUER)
    bound = replace(
        _tokens("at-bound"), token_type="DPoP", dpop_jkt="jkt-1", dpop_key_export=DPOP_EXPORT
    )
    caplog.set_level(logging.DEBUG)
    with store_target.open() as store:
        assert store.set_tokens(key, bound)
        back = store.get_tokens(server_url)
        assert back == bound and back.dpop_key_export == DPOP_EXPORT
        assert store.set_tokens(key, _tokens("at-plain"), replaces=bound)
        plain = store.get_tokens(server_url)
        assert plain is not None and plain.dpop_key_export is None
        shown = [repr(back), str(back), repr(store), repr(key), caplog.text]
    assert all(DPOP_D not in text for text in shown)


def _continuation_with(ident: str, _store: Any) -> Any:
    """Any continuation whose id is ``ident`` (compared by id: a digest of all of it)."""

    class _ById:
        def __eq__(self, other: object) -> bool:
            return isinstance(other, Continuation) and other.id == ident

    return _ById()


# --- W4: tasks and paused calls -------------------------------------------------------------


def test_W4_tasks_and_continuations_round_trip(store_target: Target) -> None:
    handle = TaskHandle(f"task-{uuid.uuid4().hex}", "docs", "book", "d" * 32)
    continuation = _continuation(7)
    with store_target.open() as store:
        assert store.load_task(handle.task_id) is None
        store.save_task(handle)
        with store_target.open() as other:  # another worker
            assert other.load_task(handle.task_id) == handle
            assert other.delete_task(handle.task_id)
            assert not other.delete_task(handle.task_id)
        assert store.load_task(handle.task_id) is None
        ident = store.save_continuation(continuation)
        assert ident == continuation.id
        with store_target.open() as other:
            taken = other.take_continuation(ident)
        assert taken == continuation and taken.to_json() == continuation.to_json()
        assert store.take_continuation(ident) is None  # taken once


def test_W4_a_continuation_is_taken_once_by_8_processes_taking_it_together(
    store_target: Target, workers: _Workers
) -> None:
    subject = f"subject-{uuid.uuid4().hex}"
    with store_target.open() as store:
        ids = [store.save_continuation(_continuation(n), subject=subject) for n in range(10)]
    for _ in range(PROCESSES):
        workers.start("take", store_target, ids=ids, subject=subject)
    got = [ident for each in workers.run() for ident in each]
    assert sorted(got) == sorted(ids)  # every one taken, none twice


# --- W5: failure ----------------------------------------------------------------------------


def _unreachable(kind: str, tmp_path: Path) -> str:
    port = free_port()  # nothing listens there
    if kind == "sqlite":
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        return str(blocker / "store" / "tokens.sqlite3")  # its directory cannot be made
    if kind == "postgres":
        return f"postgresql://mcpcore:{SECRET}@127.0.0.1:{port}/mcpcore"
    return f"redis://:{SECRET}@127.0.0.1:{port}/0"


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{password}@{host}"))


def _check_unavailable(kind: str, target: str) -> None:
    calls = [
        lambda store: store.get_tokens("https://mcp.example/mcp"),
        lambda store: store.set_tokens(
            TokenKey(server_url="https://mcp.example/mcp", issuer=ISSUER), _tokens("at")
        ),
        lambda store: store.lock_tokens("https://mcp.example/mcp"),
        lambda store: store.get_clients(),
        lambda store: store.take_continuation("x"),
    ]
    for call in calls:
        with pytest.raises(StoreUnavailable) as caught:
            store = open_store(kind, target)
            try:
                call(store)
            finally:
                store.close()
        error = caught.value
        assert isinstance(error, StoreError)
        for shown in (str(error), repr(error), repr(error.__cause__), repr(error.__context__)):
            assert SECRET not in shown
        assert kind.lower()[:5] in str(error).lower() or "sqlite" in str(error).lower()


@pytest.mark.parametrize("kind", KINDS)
def test_W5_an_unreachable_store_raises_store_unavailable_naming_no_password(
    kind: str, tmp_path: Path
) -> None:
    _check_unavailable(kind, _unreachable(kind, tmp_path))


def test_W5_refused_credentials_raise_store_unavailable_naming_no_password(
    store_target: Target,
) -> None:
    if store_target.kind == "sqlite":
        # No credentials: a file that is not a database is refused the same way.
        Path(store_target.target).parent.mkdir(mode=0o700)
        Path(store_target.target).write_bytes(SECRET.encode() * 200)
        os.chmod(store_target.target, 0o600)
        _check_unavailable(store_target.kind, store_target.target)
        return
    _check_unavailable(store_target.kind, _with_password(store_target.target, SECRET))


@pytest.mark.parametrize("kind", KINDS)
def test_W5_a_client_whose_store_is_unreachable_keeps_its_tokens_in_memory(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """D2: every store method raises ``StoreUnavailable``; the client signs in, keeps
    the tokens in memory and calls; the log names the method, never the store."""
    from mcpcore import CallSucceeded, SessionReady
    from mcpcore.auth._hooks import read_store
    from test_auth_layer import make

    store = open_store(kind, _unreachable(kind, tmp_path))
    try:
        assert read_store(store, "https://mcp.example/mcp") == (None, ())  # starts signed out
        link = make(start=False)
        link.store = store  # what the driver performs the store's actions on
        link.start()
        assert link.of_type(SessionReady)
        call_id = link.engine.call("srv/echo", {}, link.now)
        link.pump()
        assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]
    finally:
        store.close()
    assert "set_tokens raised" in caplog.text
    assert SECRET not in caplog.text and "127.0.0.1" not in caplog.text
