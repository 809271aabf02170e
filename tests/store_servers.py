"""Real PostgreSQL and Redis servers on loopback for the store tests (W2, W5; DESIGN S5).

No mock stands in for either store::

    with postgres_server() as pg:         # a private cluster: initdb in a temp folder
        pg.dsn                            # postgresql://mcpcore:PASSWORD@127.0.0.1:PORT/mcpcore
        pg.dsn_with_password("wrong")     # the same DSN, refused
        pg.pid, pg.port, pg.password
    with redis_server() as rd:            # redis-server: save "", appendonly no, requirepass
        rd.url                            # redis://:PASSWORD@127.0.0.1:PORT/0
        rd.url_with_password("wrong")

and, under pytest, the session fixtures ``store_postgres`` / ``store_redis``
(the running servers) and ``postgres_dsn`` / ``redis_url`` (their URLs): import them into a
test module (``from store_servers import postgres_dsn  # noqa: F401``).

PostgreSQL is the Debian package's (``/usr/lib/postgresql/<major>/bin``), Redis
the Debian ``redis-server``; ``scripts/install_peers.sh`` installs both. A
missing binary FAILS the test that needs it, with the fix in the message: CI
installs them, so a missing one is a broken machine, never a reason to skip.

PostgreSQL refuses to run as root: when the tests run as root, ``initdb`` and
``postgres`` run as ``nobody`` (a user every Debian system has), in a temporary
folder handed to that user. ``postgres`` is started directly (what ``pg_ctl
start`` would run), so that this process is its parent: it is stopped by its
process id (SIGINT, PostgreSQL's fast shutdown; SIGKILL if it has not gone
within ``STOP_TIMEOUT``) and reaped. Local (socket) connections are trusted
and serve only the set-up; TCP on 127.0.0.1 asks a password (SCRAM) of every
role, so a wrong one is refused. The store's role ``mcpcore`` is no superuser:
it owns its database, and the store creates its tables there.

Each server gets a free port (retried if taken meanwhile) and is ready once a
connection to it answers (polled, bounded by ``START_TIMEOUT``). Both are
stopped when the ``with`` block ends, however it ends, and killed at
interpreter exit if something leaked them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peers import (
    HOST,
    START_TIMEOUT,
    STOP_TIMEOUT,
    PeerStartError,
    _live,
    _live_lock,
    _tail,
    free_port,
)

POSTGRES_ROOT = Path("/usr/lib/postgresql")
POSTGRES_USER = "mcpcore"  # the store's role (and its database)
POSTGRES_RUN_AS = "nobody"  # who runs the cluster when the tests run as root
REDIS_SERVER = "redis-server"
INSTALL_HINT = (
    "run scripts/install_peers.sh (it installs the Debian packages postgresql and redis-server)"
)


class StoreServerMissing(RuntimeError):
    """A store server's binary is not installed."""


# ---------------------------------------------------------------------------
# Finding the binaries


def postgres_bin() -> Path:
    """The newest PostgreSQL ``bin`` folder the Debian package installed."""
    found: list[tuple[int, Path]] = []
    if POSTGRES_ROOT.is_dir():
        for entry in POSTGRES_ROOT.iterdir():
            if (
                entry.name.isdigit()
                and (entry / "bin" / "initdb").is_file()
                and (entry / "bin" / "postgres").is_file()
            ):
                found.append((int(entry.name), entry / "bin"))
    if not found:
        raise StoreServerMissing(
            f"PostgreSQL (initdb, postgres) is not installed under {POSTGRES_ROOT}: {INSTALL_HINT}"
        )
    return max(found)[1]


def redis_server_bin() -> str:
    found = shutil.which(REDIS_SERVER)
    if found is None:
        raise StoreServerMissing(f"{REDIS_SERVER} is not on PATH: {INSTALL_HINT}")
    return found


# ---------------------------------------------------------------------------
# Processes


def _stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop ``proc`` by its pid with ``sig``, wait, then kill; always reap it."""
    try:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
    finally:
        with _live_lock:
            _live.discard(proc)


def _start(argv: list[str], log_path: Path, **popen: Any) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal ^C goes to pytest, not to the server
            **popen,
        )
    with _live_lock:
        _live.add(proc)  # peers.py kills it at interpreter exit if it leaked
    return proc


def _wait_ready(
    what: str,
    proc: subprocess.Popen[bytes],
    log_path: Path,
    attempt: Callable[[], None],
    timeout: float,
) -> None:
    """Poll ``attempt()`` (a connection) until it succeeds; bounded by ``timeout``.

    Raises ``PeerStartError`` with the server's output if it exits first or
    does not answer in time."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        if proc.poll() is not None:
            raise PeerStartError(
                f"{what} (pid {proc.pid}) exited with code {proc.returncode} before it was ready; "
                f"output tail:\n{_tail(log_path)}"
            )
        try:
            attempt()
            return
        except Exception as exc:
            last = exc
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PeerStartError(
                f"{what} (pid {proc.pid}) was not ready within {timeout:.1f}s "
                f"({type(last).__name__}); output tail:\n{_tail(log_path)}"
            )
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.2)


def _port_taken(log_path: Path) -> bool:
    output = _tail(log_path).lower()
    return "address already in use" in output or "could not create any tcp/ip sockets" in output


# ---------------------------------------------------------------------------
# PostgreSQL


@dataclass
class PostgresServer:
    """A running private PostgreSQL cluster (see the module docstring)."""

    host: str
    port: int
    password: str = field(repr=False)
    proc: subprocess.Popen[bytes]
    log_path: Path
    socket_dir: Path
    user: str = POSTGRES_USER
    database: str = POSTGRES_USER

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def dsn(self) -> str:
        """The store's DSN: its role, its password, its database."""
        return self.dsn_with_password(self.password)

    def dsn_with_password(self, password: str) -> str:
        return f"postgresql://{self.user}:{password}@{self.host}:{self.port}/{self.database}"

    def admin_connect(self) -> Any:
        """A superuser connection over the cluster's socket (trusted locally): set-up, inspection."""
        import psycopg

        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user="postgres",
            dbname="postgres",
            autocommit=True,
            connect_timeout=2,
        )

    def output_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)


def _run_as() -> dict[str, Any]:
    """Popen options that drop root for PostgreSQL (nothing when not root)."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(POSTGRES_RUN_AS)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _temp_base(run_as: dict[str, Any]) -> str | None:
    """Where the cluster's folder goes: the usual temporary folder, unless the
    cluster's user (not us) could not reach into it; then /tmp."""
    if not run_as:
        return None
    base = Path(tempfile.gettempdir()).resolve()
    for folder in (base, *base.parents):
        if not folder.stat().st_mode & stat.S_IXOTH:
            return "/tmp"
    return str(base)


@contextlib.contextmanager
def postgres_server(
    *, start_timeout: float = START_TIMEOUT, attempts: int = 3
) -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster on a free loopback port; stopped by its pid on exit."""
    import psycopg

    bin_dir = postgres_bin()
    run_as = _run_as()
    tmpdir = Path(tempfile.mkdtemp(prefix="mcpcore-postgres-", dir=_temp_base(run_as)))
    try:
        data, sockets = tmpdir / "data", tmpdir / "sockets"
        sockets.mkdir()
        if run_as:  # the cluster's user owns its folders; nobody else may read them
            os.chown(tmpdir, run_as["user"], run_as["group"])
            os.chown(sockets, run_as["user"], run_as["group"])
        log_path = tmpdir / "postgres.log"
        init = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-E", "UTF8", "--no-locale",
             "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"],
            stdin=subprocess.DEVNULL, capture_output=True, cwd=tmpdir, timeout=start_timeout, **run_as,
        )  # fmt: skip
        if init.returncode != 0:
            output = (init.stdout + init.stderr).decode("utf-8", "replace")
            raise PeerStartError(f"initdb failed with code {init.returncode}:\n{output[-4000:]}")
        password = secrets.token_urlsafe(18)
        server: PostgresServer | None = None
        for attempt in range(attempts):
            port = free_port()
            argv = [
                str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-h", HOST, "-k", str(sockets),
                # a throwaway cluster: durability costs time and buys nothing
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
            ]  # fmt: skip
            proc = _start(argv, log_path, cwd=tmpdir, **run_as)
            candidate = PostgresServer(HOST, port, password, proc, log_path, sockets)

            def over_socket(candidate: PostgresServer = candidate) -> None:
                candidate.admin_connect().close()

            try:
                _wait_ready("postgres", proc, log_path, over_socket, start_timeout)
            except PeerStartError:
                _stop_process(proc, signal.SIGINT)
                if attempt + 1 < attempts and _port_taken(log_path):
                    continue
                raise
            except BaseException:
                _stop_process(proc, signal.SIGINT)
                raise
            server = candidate
            break
        assert server is not None
        try:
            with server.admin_connect() as admin:
                admin.execute(
                    psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                        psycopg.sql.Identifier(POSTGRES_USER), psycopg.sql.Literal(password)
                    )
                )
                admin.execute(
                    psycopg.sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        psycopg.sql.Identifier(POSTGRES_USER), psycopg.sql.Identifier(POSTGRES_USER)
                    )
                )
            psycopg.connect(server.dsn, connect_timeout=5).close()  # TCP, with the password
            yield server
        finally:
            _stop_process(server.proc, signal.SIGINT)  # fast shutdown: clients are cut off
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------
# Redis


@dataclass
class RedisServer:
    """A running ``redis-server`` that asks a password (see the module docstring)."""

    host: str
    port: int
    password: str = field(repr=False)
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return self.url_with_password(self.password)

    def url_with_password(self, password: str) -> str:
        return f"redis://:{password}@{self.host}:{self.port}/0"

    def output_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)


@contextlib.contextmanager
def redis_server(
    *, start_timeout: float = START_TIMEOUT, attempts: int = 3
) -> Iterator[RedisServer]:
    """A ``redis-server`` on a free loopback port, nothing saved; stopped by its pid on exit."""
    import redis

    binary = redis_server_bin()
    tmpdir = Path(tempfile.mkdtemp(prefix="mcpcore-redis-"))
    try:
        password = secrets.token_urlsafe(18)
        log_path = tmpdir / "redis.log"
        server: RedisServer | None = None
        for attempt in range(attempts):
            port = free_port()
            # The password goes in a file only we can read, never on the command line.
            config = tmpdir / f"redis-{attempt}.conf"
            config.touch(mode=0o600)
            config.write_text(
                f'port {port}\nbind {HOST}\nsave ""\nappendonly no\n'
                f"dir {tmpdir}\nrequirepass {password}\n",
                encoding="utf-8",
            )
            proc = _start([binary, str(config)], log_path, cwd=tmpdir)
            candidate = RedisServer(HOST, port, password, proc, log_path)

            def ping(candidate: RedisServer = candidate) -> None:
                with redis.Redis(
                    host=candidate.host, port=candidate.port, password=candidate.password,
                    socket_timeout=1.0, socket_connect_timeout=1.0,
                ) as client:  # fmt: skip
                    client.ping()

            try:
                _wait_ready("redis-server", proc, log_path, ping, start_timeout)
            except PeerStartError:
                _stop_process(proc)
                if attempt + 1 < attempts and _port_taken(log_path):
                    continue
                raise
            except BaseException:
                _stop_process(proc)
                raise
            server = candidate
            break
        assert server is not None
        try:
            yield server
        finally:
            _stop_process(server.proc)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------
# pytest fixtures (session scope: one server of each kind per test run)

try:
    import pytest
except ImportError:  # pragma: no cover - used without pytest (bench)
    pass
else:

    def _or_fail(start: Callable[[], contextlib.AbstractContextManager[Any]]) -> Iterator[Any]:
        try:
            manager = start()
            server = manager.__enter__()
        except StoreServerMissing as exc:
            pytest.fail(str(exc), pytrace=False)  # never skip: CI installs both
        try:
            yield server
        finally:
            manager.__exit__(None, None, None)

    @pytest.fixture(scope="session")
    def store_postgres() -> Iterator[PostgresServer]:
        """A private PostgreSQL cluster for the whole run (S5)."""
        yield from _or_fail(postgres_server)

    @pytest.fixture(scope="session")
    def postgres_dsn(store_postgres: PostgresServer) -> str:
        """The DSN of ``store_postgres``'s store role (with its password)."""
        return store_postgres.dsn

    @pytest.fixture(scope="session")
    def store_redis() -> Iterator[RedisServer]:
        """A ``redis-server`` for the whole run (S5)."""
        yield from _or_fail(redis_server)

    @pytest.fixture(scope="session")
    def redis_url(store_redis: RedisServer) -> str:
        """The URL of ``store_redis``, with its password."""
        return store_redis.url
