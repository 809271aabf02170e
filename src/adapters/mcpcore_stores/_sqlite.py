"""``SqliteTokenStore``: the embedded shared store, one SQLite file (W2, W3, W4).

It serves any number of processes on one machine (SQLite's file locks do not
reach across machines: use ``PostgresTokenStore`` or ``RedisTokenStore`` there).
The database runs in WAL mode, so readers never wait for a writer; every change
is one ``BEGIN IMMEDIATE`` transaction, which takes the database's write lock
before it reads, so a compare-and-set (``replaces=``, ``only_if=``) reads and
writes with no other writer between, in any process. A writer that finds the
lock taken (or, opening a fresh file, another process setting it up) waits up
to ``timeout`` seconds (SQLite's busy timeout), then the call raises
``StoreUnavailable``.

Tables: ``tokens`` (subject, server URL, issuer → the set as JSON, and a
sequence number: the newest set for a server and subject is the one
``get_tokens`` answers), ``clients`` (issuer → JSON), ``leases`` (name →
holder token and end time; see ``_lease``), ``tasks`` and ``continuations``
(subject and id → the record's ``to_json()``). A lease's end is wall-clock time:
a holder killed with SIGKILL holds the others up until its lease ends, no
longer.

The file is created ``0600`` (SQLite gives its ``-wal`` and ``-shm`` files the
same mode) in a directory created ``0700``, as ``FileTokenStore`` does.
One connection serves each store instance, behind a lock (the drivers call a
store from several threads); a process forked with an open store opens its own.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from mcpcore import (
    DEFAULT_SUBJECT,
    ClientRecord,
    Continuation,
    TaskHandle,
    TokenKey,
    TokenSet,
    same_tokens,
)

from ._errors import StoreUnavailable
from ._lease import LeaseLocks, check_lease, check_timeout, ends_at, holder_token, now
from ._records import (
    decode_client,
    decode_continuation,
    decode_task,
    decode_tokens,
    encode_client,
    encode_tokens,
)

__all__ = ["SqliteTokenStore"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tokens (
        subject TEXT NOT NULL, server_url TEXT NOT NULL, issuer TEXT NOT NULL,
        body TEXT NOT NULL, stored INTEGER NOT NULL,
        PRIMARY KEY (subject, server_url, issuer))""",
    """CREATE TABLE IF NOT EXISTS clients (issuer TEXT PRIMARY KEY, body TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS leases (
        name TEXT PRIMARY KEY, holder TEXT NOT NULL, ends REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tasks (
        subject TEXT NOT NULL, task_id TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (subject, task_id))""",
    """CREATE TABLE IF NOT EXISTS continuations (
        subject TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (subject, id))""",
)


class SqliteTokenStore(LeaseLocks):
    """A ``mcpcore.SharedTokenStore`` in one SQLite file (see the module docstring).

    ``path``: the database file (created with its directory when missing).
    ``lease``: seconds a refresh or sign-in lock lasts unless released (W3).
    ``timeout``: seconds a call waits for another process's write to end.
    Nothing is opened until the first call; every call raises
    ``StoreUnavailable`` when the file cannot be opened or stays locked.
    """

    def __init__(
        self, target: str | os.PathLike[str], *, lease: float = 30.0, timeout: float = 5.0
    ) -> None:
        self.path = Path(target)
        self.lease = check_lease(lease)
        self.timeout = check_timeout(timeout)
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = 0
        self._held: dict[str, str] = {}  # lease name -> the holder token this instance wrote

    def __repr__(self) -> str:
        return f"SqliteTokenStore({str(self.path)!r}, lease={self.lease:g})"

    def __enter__(self) -> SqliteTokenStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            connection, self._connection = self._connection, None
            if connection is not None and self._pid == os.getpid():
                connection.close()

    # --- tokens -----------------------------------------------------------------------------

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        with self._reading() as db:
            return _newest(db, server_url, subject)

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        """Store ``tokens``; with ``replaces``, only if the newest set held for the
        server and subject is still that one. True if it was written."""
        with self._writing() as db:
            if replaces is not None and not same_tokens(
                _newest(db, key.server_url, key.subject), replaces
            ):
                return False
            (stored,) = db.execute("SELECT COALESCE(MAX(stored), 0) + 1 FROM tokens").fetchone()
            db.execute(
                "INSERT OR REPLACE INTO tokens (subject, server_url, issuer, body, stored) "
                "VALUES (?, ?, ?, ?, ?)",
                (key.subject, key.server_url, key.issuer, encode_tokens(tokens), stored),
            )
            return True

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        """Forget the tokens under ``key``; with ``only_if``, only if the newest set
        held for the server and subject is still that one."""
        with self._writing() as db:
            if only_if is not None and not same_tokens(
                _newest(db, key.server_url, key.subject), only_if
            ):
                return False
            db.execute(
                "DELETE FROM tokens WHERE subject = ? AND server_url = ? AND issuer = ?",
                (key.subject, key.server_url, key.issuer),
            )
            return True

    def entries(self) -> list[tuple[TokenKey, TokenSet]]:
        """Every stored token set with its key, oldest first (what ``auth status`` lists)."""
        with self._reading() as db:
            rows = db.execute(
                "SELECT subject, server_url, issuer, body FROM tokens ORDER BY stored"
            ).fetchall()
        return [
            (TokenKey(server_url=url, issuer=issuer, subject=subject), decode_tokens(body))
            for subject, url, issuer, body in rows
        ]

    # --- leases -----------------------------------------------------------------------------

    def _take(self, name: str) -> bool:
        with self._writing() as db:
            row = db.execute("SELECT ends FROM leases WHERE name = ?", (name,)).fetchone()
            at = now()
            if row is not None and row[0] > at:
                return False
            holder = holder_token()
            db.execute(
                "INSERT OR REPLACE INTO leases (name, holder, ends) VALUES (?, ?, ?)",
                (name, holder, ends_at(self.lease, at)),
            )
            self._held[name] = holder
            return True

    def _give(self, name: str) -> None:
        with self._lock:
            holder = self._held.pop(name, None)
            if holder is None:
                return
            with self._writing() as db:
                db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    # --- clients ----------------------------------------------------------------------------

    def get_clients(self) -> Sequence[ClientRecord]:
        with self._reading() as db:
            rows = db.execute("SELECT body FROM clients ORDER BY issuer").fetchall()
        return [decode_client(body) for (body,) in rows]

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO clients (issuer, body) VALUES (?, ?)",
                (issuer, encode_client(client)),
            )

    def delete_client(self, issuer: str) -> None:
        with self._writing() as db:
            db.execute("DELETE FROM clients WHERE issuer = ?", (issuer,))

    def clients(self) -> dict[str, ClientRecord]:
        """The registered clients by issuer."""
        with self._reading() as db:
            rows = db.execute("SELECT issuer, body FROM clients ORDER BY issuer").fetchall()
        return {issuer: decode_client(body) for issuer, body in rows}

    # --- tasks and paused calls -------------------------------------------------------------

    def save_task(self, handle: TaskHandle, *, subject: str = DEFAULT_SUBJECT) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO tasks (subject, task_id, body) VALUES (?, ?, ?)",
                (subject, handle.task_id, handle.to_json()),
            )

    def load_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> TaskHandle | None:
        with self._reading() as db:
            row = db.execute(
                "SELECT body FROM tasks WHERE subject = ? AND task_id = ?", (subject, task_id)
            ).fetchone()
        return None if row is None else decode_task(row[0])

    def delete_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        with self._writing() as db:
            cursor = db.execute(
                "DELETE FROM tasks WHERE subject = ? AND task_id = ?", (subject, task_id)
            )
            return cursor.rowcount > 0

    def save_continuation(
        self, continuation: Continuation, *, subject: str = DEFAULT_SUBJECT
    ) -> str:
        ident = continuation.id
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO continuations (subject, id, body) VALUES (?, ?, ?)",
                (subject, ident, continuation.to_json()),
            )
        return ident

    def take_continuation(
        self, continuation_id: str, *, subject: str = DEFAULT_SUBJECT
    ) -> Continuation | None:
        """The continuation, removed in the same transaction: of many takers, one gets it."""
        with self._writing() as db:
            row = db.execute(
                "DELETE FROM continuations WHERE subject = ? AND id = ? RETURNING body",
                (subject, continuation_id),
            ).fetchone()
        return None if row is None else decode_continuation(row[0])

    # --- the connection ---------------------------------------------------------------------

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        return StoreUnavailable(f"the SQLite store {str(self.path)!r} cannot be used: {reason}")

    def _connect(self) -> sqlite3.Connection:
        """The open connection (opened, and the file and tables made, when needed)."""
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        self._connection = None  # a forked child never uses its parent's connection
        try:
            _make_file(self.path)
            connection = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise self._unavailable(exc) from None
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                _set_up(connection)
                break
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                # Switching a fresh file to WAL, and the first schema write, can find
                # another process doing the same; SQLite then says "locked" at once,
                # without its busy wait, so the wait is made here, within ``timeout``.
                if _busy(exc) and time.monotonic() + pause < deadline:
                    time.sleep(pause)
                    pause = min(pause * 2, 0.05)
                    continue
                connection.close()
                raise self._unavailable(exc) from None
        self._connection, self._pid = connection, os.getpid()
        return connection

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._connect()
            try:
                yield db
            except sqlite3.Error as exc:
                raise self._unavailable(exc) from None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled
        back when it raises (``StoreUnavailable`` for SQLite's own errors)."""
        with self._lock:
            db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._unavailable(exc) from None
            try:
                yield db
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._unavailable(exc) from None
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise self._unavailable(exc) from None


def _set_up(connection: sqlite3.Connection) -> None:
    """WAL mode, and the tables (made when missing)."""
    connection.execute("PRAGMA journal_mode = WAL")
    # WAL with NORMAL survives any crash of a process; only a power cut may
    # lose the last commits (never corrupts the file).
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMA:
        connection.execute(statement)
    connection.execute("COMMIT")


_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def _busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the file for now (an extended
    code keeps its primary code in its low byte)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _BUSY_CODES


def _newest(db: sqlite3.Connection, server_url: str, subject: str) -> TokenSet | None:
    row: Any = db.execute(
        "SELECT body FROM tokens WHERE subject = ? AND server_url = ? ORDER BY stored DESC LIMIT 1",
        (subject, server_url),
    ).fetchone()
    return None if row is None else decode_tokens(row[0])


def _make_file(path: Path) -> None:
    """The database file, created ``0600`` in a directory created ``0700`` when missing."""
    directory = path.parent
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)  # whatever the umask did
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    os.close(fd)
