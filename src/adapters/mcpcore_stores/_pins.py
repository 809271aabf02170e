"""``SqlitePinStore``: pinned tool definitions (U1) in one SQLite file, for any number
of processes on one machine.

The standard library's ``sqlite3`` in WAL mode (readers never wait for a writer),
one row per (server, subject, tool name), each write one short transaction
(``BEGIN IMMEDIATE``: two processes pinning at once take turns; the later one
wins, as a pin is only ever replaced by a definition its host accepted). Every
method opens its own connection, so a store is safe to share between threads,
and each call is blocking: an async driver runs it on a worker thread.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path

from mcpcore import Pin

__all__ = ["SqlitePinStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mcpcore_pins (
    server TEXT NOT NULL,
    subject TEXT NOT NULL,
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    definition TEXT NOT NULL,
    PRIMARY KEY (server, subject, name)
)
"""


class SqlitePinStore:
    """A ``PinStore`` in the SQLite file ``path`` (made, with its folder, on first use;
    the file is readable by its owner only). ``timeout``: how long a write waits for
    another process's (seconds)."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._timeout = timeout
        self._ready = False

    def __repr__(self) -> str:
        return f"SqlitePinStore({str(self.path)!r})"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Created owner-only before SQLite opens it (pins say which tools a user trusts).
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        with closing(
            sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        ) as connection:
            if not self._ready:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                self._ready = True
            yield connection

    def get_pins(self, server: str, subject: str) -> Mapping[str, Pin]:
        if not self._ready and not self.path.exists():
            return {}  # reading makes no file: the first pin does
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT name, fingerprint, definition FROM mcpcore_pins "
                "WHERE server = ? AND subject = ?",
                (server, subject),
            ).fetchall()
        return {name: Pin(fingerprint, definition) for name, fingerprint, definition in rows}

    def put_pin(self, server: str, subject: str, name: str, pin: Pin) -> None:
        with self._connect() as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(
                    "INSERT INTO mcpcore_pins (server, subject, name, fingerprint, definition) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (server, subject, name) DO UPDATE SET "
                    "fingerprint = excluded.fingerprint, definition = excluded.definition",
                    (server, subject, name, pin.fingerprint, pin.definition),
                )
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def delete_pin(self, server: str, subject: str, name: str) -> None:
        with self._connect() as connection:
            connection.execute(
                "DELETE FROM mcpcore_pins WHERE server = ? AND subject = ? AND name = ?",
                (server, subject, name),
            )
