"""The PostgreSQL stores' connection: one per store, its errors named safely (W5).

``PostgresTokenStore`` and ``PostgresPinStore`` share it. One connection per
store, in autocommit, used by one thread at a time (a lock): every statement
stands alone. It is opened on first use, and a dropped one is opened again once
per call. On each new connection ``statement_timeout`` (and the connect
timeout) is the store's ``timeout``; on the first, the store's tables are made
when missing, under a transaction-level advisory lock, so that workers starting
together do not race ``CREATE TABLE IF NOT EXISTS`` (which is not safe against
itself).

Whatever psycopg raises leaves as ``StoreUnavailable`` (unreachable, refused
credentials, no answer in time) or ``StoreError``, whose message names the
store's kind and host:port, never the DSN or its password; psycopg's own error
(which carries the connection's settings, password included) is never kept or
chained.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, TypeVar

from mcpcore import InvalidValue

from ._errors import StoreError, StoreUnavailable
from ._lease import check_timeout

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "the PostgreSQL stores need psycopg 3: pip install 'mcpcore[postgres]'"
    ) from exc

__all__ = ["Connection", "PostgresConnection", "PostgresError"]

# For the stores' annotations and handlers (they never import psycopg themselves).
Connection: TypeAlias = "psycopg.Connection[Any]"
PostgresError = psycopg.Error

_T = TypeVar("_T")
_KIND = "PostgreSQL store"
# Held (pg_advisory_xact_lock) while a store's tables are made (see the docstring).
_SCHEMA_LOCK = 0x6D6370636F7265  # "mcpcore"


def _where(dsn: str) -> tuple[str, str]:
    """(host:port, database) named by ``dsn``: what messages and ``repr`` show."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        problem = True
    else:
        problem = False
    if problem:  # raised here, not in the handler: psycopg's error may quote the DSN
        raise InvalidValue("the PostgreSQL DSN cannot be parsed")
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = str(params.get("port") or "5432")
    return f"{host}:{port}", str(params.get("dbname") or params.get("user") or "")


def _reason(exc: psycopg.OperationalError) -> str:
    """What went wrong, in words that quote nothing of the DSN."""
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return "did not answer in time"
    text = str(exc).lower()
    if (
        "authentication" in text
        or "password" in text
        or ("role" in text and "does not exist" in text)
    ):
        return "refused the credentials"
    if "timeout" in text or "timed out" in text:
        return "did not answer in time"
    return "cannot be reached"


class PostgresConnection:
    """A store's connection to the database ``dsn`` (see the module docstring).

    ``schema``: the statements that make the store's tables (``IF NOT EXISTS``).
    ``lock`` is held while a statement runs; a store may take it to guard its
    own state as well (it is not reentrant: never call ``run`` under it).
    """

    def __init__(self, dsn: str, *, timeout: float, schema: Sequence[str]) -> None:
        self.timeout = check_timeout(timeout)
        self.where, self.database = _where(dsn)
        self._dsn = dsn
        self._schema = tuple(schema)
        self.lock = threading.Lock()  # one statement at a time on the connection
        self._conn: psycopg.Connection[Any] | None = None
        self._schema_ready = False
        self._closed = False

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=max(2, math.ceil(self.timeout)),
            # a peer that stops acknowledging (a cut network) fails the call, not hangs it
            tcp_user_timeout=math.ceil(self.timeout * 1000),
        )
        try:
            millis = str(math.ceil(self.timeout * 1000))
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (millis,))
            if not self._schema_ready:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                    for statement in self._schema:
                        conn.execute(statement)
                self._schema_ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    def run(self, work: Callable[[psycopg.Connection[Any]], _T]) -> _T:
        """``work(connection)``, on a live connection (opened again once if it dropped);
        psycopg's errors leave as the store's, naming no secret."""
        failure: str | None = None
        unavailable = True
        with self.lock:
            if self._closed:
                raise StoreError(f"the {_KIND} at {self.where} is closed")
            for attempt in (1, 2):
                reused = self._conn is not None
                try:
                    if self._conn is None or self._conn.closed:
                        self._conn = None
                        self._conn = self._connect()
                    return work(self._conn)
                except psycopg.OperationalError as exc:
                    broken = self._conn is None or self._conn.broken or self._conn.closed
                    if broken:
                        self._drop()
                    if broken and reused and attempt == 1:
                        continue  # the connection dropped since the last call: once more
                    failure = _reason(exc)
                except psycopg.Error as exc:
                    unavailable = False
                    failure = f"refused the statement ({type(exc).__name__})"
                break
        # Raised outside the handlers: psycopg's error (it carries the connection's
        # settings, the password among them) is neither chained nor kept.
        message = f"the {_KIND} at {self.where} {failure}"
        raise StoreUnavailable(message) if unavailable else StoreError(message)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass

    def close(
        self, farewell: Callable[[psycopg.Connection[Any] | None], None] | None = None
    ) -> None:
        """Close the connection, after ``farewell(connection)`` (under ``lock``; the
        connection is None when there is no live one; psycopg's errors are its own
        to catch). Closing twice does nothing."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            conn = self._conn
            try:
                if farewell is not None:
                    farewell(None if conn is None or conn.closed or conn.broken else conn)
            finally:
                self._drop()
