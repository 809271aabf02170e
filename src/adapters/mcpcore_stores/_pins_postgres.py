"""``PostgresPinStore``: pinned tool definitions (U1) in PostgreSQL, for hosts on
many machines.

One row per (server, subject, tool name) in ``mcpcore_pins`` (made when missing,
as ``PostgresTokenStore`` makes its tables; the two stores may share a
database). Each method is one statement in autocommit: a pin is written by
``INSERT ... ON CONFLICT DO UPDATE``, which PostgreSQL makes atomic against any
number of writers (two workers pinning one tool at once: the later one wins, as a
pin is only ever replaced by a definition its host accepted). The connection
and its errors are ``_postgres_connection``'s: a store that cannot be reached
raises ``StoreUnavailable`` naming its host:port, never the DSN or its password
(W5). Each call is blocking: an async driver runs it on a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcpcore import Pin

from ._postgres_connection import PostgresConnection

__all__ = ["PostgresPinStore"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS mcpcore_pins (
        server text NOT NULL, subject text NOT NULL, name text NOT NULL,
        fingerprint text NOT NULL, definition text NOT NULL,
        PRIMARY KEY (server, subject, name))""",
)

_GET = """
    SELECT name, fingerprint, definition FROM mcpcore_pins
    WHERE server = %(server)s AND subject = %(subject)s"""

_PUT = """
    INSERT INTO mcpcore_pins (server, subject, name, fingerprint, definition)
    VALUES (%(server)s, %(subject)s, %(name)s, %(fingerprint)s, %(definition)s)
    ON CONFLICT (server, subject, name) DO UPDATE
    SET fingerprint = EXCLUDED.fingerprint, definition = EXCLUDED.definition"""

_DELETE = """
    DELETE FROM mcpcore_pins
    WHERE server = %(server)s AND subject = %(subject)s AND name = %(name)s"""


class PostgresPinStore:
    """A ``PinStore`` on PostgreSQL (see the module docstring).

    ``dsn``: a libpq connection string or ``postgresql://`` URL (it may hold a
    password: it is never shown). ``timeout``: how long connecting, and each
    statement, may take before ``StoreUnavailable``.
    """

    def __init__(self, dsn: str, *, timeout: float = 5.0) -> None:
        self._db = PostgresConnection(dsn, timeout=timeout, schema=_SCHEMA)

    def __repr__(self) -> str:
        return f"PostgresPinStore({self._db.where}/{self._db.database})"

    def __enter__(self) -> PostgresPinStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store's connection."""
        self._db.close()

    def get_pins(self, server: str, subject: str) -> Mapping[str, Pin]:
        params = {"server": server, "subject": subject}
        rows = self._db.run(lambda c: c.execute(_GET, params).fetchall())
        return {name: Pin(fingerprint, definition) for name, fingerprint, definition in rows}

    def put_pin(self, server: str, subject: str, name: str, pin: Pin) -> None:
        params = {
            "server": server,
            "subject": subject,
            "name": name,
            "fingerprint": pin.fingerprint,
            "definition": pin.definition,
        }
        self._db.run(lambda c: c.execute(_PUT, params))

    def delete_pin(self, server: str, subject: str, name: str) -> None:
        params = {"server": server, "subject": subject, "name": name}
        self._db.run(lambda c: c.execute(_DELETE, params))
