"""``PostgresTokenStore``: sign-ins, tasks and paused calls in PostgreSQL (W2-W5).

For hosts on many machines: every worker opens the store on one database
(``PostgresTokenStore(dsn)``; the extra ``postgres`` installs psycopg 3). The
store creates its tables when they are missing (``mcpcore_token_heads``,
``mcpcore_tokens``, ``mcpcore_clients``, ``mcpcore_leases``, ``mcpcore_tasks``,
``mcpcore_continuations``); its role needs no more than to own them.

Compare-and-set (W2). Each (subject, server) has a head row whose ``version``
every write of its tokens raises by one; each token set keeps the version it
was written at, so the newest set is the one with the highest. A write with
``replaces=old`` (or a delete with ``only_if=old``) reads the newest set and
the head's version in one statement, compares the set as
``mcpcore.same_tokens`` does, and then writes in ONE statement guarded by that
version: ``INSERT ... ON CONFLICT DO UPDATE SET version = version + 1 WHERE
version = $read`` on the head, and, in the same statement, the token row. Two
workers that read the same version cannot both write: the second waits for the
first's row lock and then finds the version moved on, so its write applies to
nothing and it answers False (it reads again only when the set it compares is
still the one it was given).

The refresh lock is a row lease (W3), not an advisory lock. A session-level
advisory lock is freed when its connection ends, but only then: a worker that
hangs (stopped by a debugger, swapped out, stuck in a call) keeps its
connection and its lock for ever, and a connection pooler can hand the lock's
session to another worker. A lease row (``mcpcore_leases``: name, holder,
ends) is taken by ``INSERT ... ON CONFLICT DO UPDATE ... WHERE ends <=
clock_timestamp()``: one statement, judged by the database server's clock
alone (the workers' clocks never compare), so a holder that was killed or hung
delays the others by at most ``lease`` seconds. Only its holder, named by a
random token this instance keeps, gives it back (``DELETE ... WHERE holder =
$token``); a holder that outlived its lease deletes nothing and finds out when
its compare-and-set fails. The sign-in lock is the same lease under another
name.

Tasks and continuations are rows keyed by (subject, id); taking a continuation
is ``DELETE ... RETURNING``: one statement, so one taker gets it (W4).

The connection (one per store, in autocommit, opened again once per call when
it dropped, ``timeout`` bounding connecting and each statement) and its errors
are ``_postgres_connection``'s, shared with ``PostgresPinStore``: whatever
psycopg raises leaves as ``StoreUnavailable`` (unreachable, refused
credentials, no answer in time) or ``StoreError``, whose message names the
store's kind and host:port, never the DSN or its password (W5); psycopg's own
error (which carries the connection's settings, password included) is never
kept or chained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mcpcore import (
    DEFAULT_SUBJECT,
    ClientRecord,
    Continuation,
    TaskHandle,
    TokenKey,
    TokenSet,
    same_tokens,
)

from ._lease import LeaseLocks, check_lease, holder_token
from ._postgres_connection import Connection, PostgresConnection, PostgresError
from ._records import (
    decode_client,
    decode_continuation,
    decode_task,
    decode_tokens,
    encode_client,
    encode_tokens,
)

__all__ = ["PostgresTokenStore"]

_T = TypeVar("_T")
# A compare-and-set that lost its version to a write of the very set it compares
# (another worker stored the same tokens) reads again: at most this many times.
_CAS_ROUNDS = 8

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS mcpcore_token_heads (
        subject text NOT NULL, server_url text NOT NULL, version bigint NOT NULL,
        PRIMARY KEY (subject, server_url))""",
    """CREATE TABLE IF NOT EXISTS mcpcore_tokens (
        subject text NOT NULL, server_url text NOT NULL, issuer text NOT NULL,
        version bigint NOT NULL, tokens text NOT NULL,
        PRIMARY KEY (subject, server_url, issuer))""",
    """CREATE TABLE IF NOT EXISTS mcpcore_clients (
        issuer text PRIMARY KEY, client text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mcpcore_leases (
        name text PRIMARY KEY, holder text NOT NULL, ends timestamptz NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS mcpcore_tasks (
        subject text NOT NULL, task_id text NOT NULL, handle text NOT NULL,
        PRIMARY KEY (subject, task_id))""",
    """CREATE TABLE IF NOT EXISTS mcpcore_continuations (
        subject text NOT NULL, id text NOT NULL, continuation text NOT NULL,
        PRIMARY KEY (subject, id))""",
)

# The newest set for (subject, server) and the head's version, read together.
_READ_HEAD = """
    SELECT h.version, t.tokens FROM mcpcore_token_heads h
    LEFT JOIN LATERAL (
        SELECT tokens FROM mcpcore_tokens
        WHERE subject = h.subject AND server_url = h.server_url
        ORDER BY version DESC LIMIT 1) t ON true
    WHERE h.subject = %(subject)s AND h.server_url = %(server)s"""

_READ_NEWEST = """
    SELECT tokens FROM mcpcore_tokens WHERE subject = %(subject)s AND server_url = %(server)s
    ORDER BY version DESC LIMIT 1"""

# One statement: raise the head's version (when guarded, only from %(version)s;
# a head not there yet is made at version 1) and write the token row at the new
# version. When the guard fails, the head returns no row and nothing is written.
_WRITE = """
    WITH head AS (
        INSERT INTO mcpcore_token_heads AS h (subject, server_url, version)
        VALUES (%(subject)s, %(server)s, 1)
        ON CONFLICT (subject, server_url) DO UPDATE SET version = h.version + 1
        WHERE NOT %(guarded)s OR h.version = %(version)s
        RETURNING h.version)
    INSERT INTO mcpcore_tokens AS t (subject, server_url, issuer, version, tokens)
    SELECT %(subject)s, %(server)s, %(issuer)s, head.version, %(tokens)s FROM head
    ON CONFLICT (subject, server_url, issuer)
    DO UPDATE SET version = EXCLUDED.version, tokens = EXCLUDED.tokens
    RETURNING t.version"""

# One statement: raise the head's version (guarded as above) and delete the row.
_DELETE = """
    WITH head AS (
        UPDATE mcpcore_token_heads SET version = version + 1
        WHERE subject = %(subject)s AND server_url = %(server)s
          AND (NOT %(guarded)s OR version = %(version)s)
        RETURNING version),
    gone AS (
        DELETE FROM mcpcore_tokens t USING head
        WHERE t.subject = %(subject)s AND t.server_url = %(server)s AND t.issuer = %(issuer)s
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM head)"""

# A lease is taken when there is none, or the one there has ended (server clock).
_TAKE_LEASE = """
    INSERT INTO mcpcore_leases AS l (name, holder, ends)
    VALUES (%(name)s, %(holder)s, clock_timestamp() + make_interval(secs => %(lease)s))
    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, ends = EXCLUDED.ends
    WHERE l.ends <= clock_timestamp()
    RETURNING 1"""

_GIVE_LEASE = "DELETE FROM mcpcore_leases WHERE name = %(name)s AND holder = %(holder)s"


class PostgresTokenStore(LeaseLocks):
    """A ``mcpcore.SharedTokenStore`` on PostgreSQL (see the module docstring).

    ``dsn``: a libpq connection string or ``postgresql://`` URL (it may hold a
    password: it is never shown). ``lease``: how long a refresh or sign-in lock
    lasts, in seconds (W3). ``timeout``: how long connecting, and each
    statement, may take before ``StoreUnavailable``.
    """

    def __init__(self, dsn: str, *, lease: float = 30.0, timeout: float = 5.0) -> None:
        self._lease = check_lease(lease)
        self._db = PostgresConnection(dsn, timeout=timeout, schema=_SCHEMA)
        self._lock = self._db.lock  # guards _holders too
        self._holders: dict[str, str] = {}  # lease name -> the holder token this store wrote

    def __repr__(self) -> str:
        return f"PostgresTokenStore({self._db.where}/{self._db.database})"

    def __enter__(self) -> PostgresTokenStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the connection -----------------------------------------------------------------

    def _run(self, work: Callable[[Connection], _T]) -> _T:
        """``work(connection)``; psycopg's errors leave as the store's, naming no secret."""
        return self._db.run(work)

    def close(self) -> None:
        """Give back the leases this store holds (when the database answers) and
        close its connection."""

        def give_back(conn: Connection | None) -> None:
            held = list(self._holders.items())
            self._holders.clear()
            if conn is None:
                return  # no live connection: they end by themselves within the lease
            for name, holder in held:
                try:
                    conn.execute(_GIVE_LEASE, {"name": name, "holder": holder})
                except PostgresError:
                    break  # they end by themselves within the lease

        self._db.close(give_back)

    # --- tokens -------------------------------------------------------------------------

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        """The newest token set held for (``server_url``, ``subject``), whatever its issuer."""
        row = self._run(
            lambda c: c.execute(_READ_NEWEST, {"subject": subject, "server": server_url}).fetchone()
        )
        return None if row is None else decode_tokens(row[0])

    def _read_head(self, subject: str, server_url: str) -> tuple[int, TokenSet | None]:
        row = self._run(
            lambda c: c.execute(_READ_HEAD, {"subject": subject, "server": server_url}).fetchone()
        )
        if row is None:
            return 0, None
        return int(row[0]), None if row[1] is None else decode_tokens(row[1])

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        """Store ``tokens`` under ``key``; with ``replaces``, only if the newest set held
        for (``key.server_url``, ``key.subject``) is still that one. True if written."""
        params: dict[str, Any] = {
            "subject": key.subject,
            "server": key.server_url,
            "issuer": key.issuer,
            "tokens": encode_tokens(tokens),
            "guarded": replaces is not None,
            "version": 0,
        }
        if replaces is None:
            return self._run(lambda c: c.execute(_WRITE, params).fetchone()) is not None
        for _ in range(_CAS_ROUNDS):
            params["version"], current = self._read_head(key.subject, key.server_url)
            if not same_tokens(current, replaces):
                return False
            if self._run(lambda c: c.execute(_WRITE, params).fetchone()) is not None:
                return True
        return False

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        """Forget the tokens under ``key``; with ``only_if``, only if the newest set held
        for (``key.server_url``, ``key.subject``) is still that one. True if they were
        removed (or were not there)."""
        params: dict[str, Any] = {
            "subject": key.subject,
            "server": key.server_url,
            "issuer": key.issuer,
            "guarded": only_if is not None,
            "version": 0,
        }
        if only_if is None:
            self._run(lambda c: c.execute(_DELETE, params).fetchone())
            return True
        for _ in range(_CAS_ROUNDS):
            params["version"], current = self._read_head(key.subject, key.server_url)
            if not same_tokens(current, only_if):
                return False
            row = self._run(lambda c: c.execute(_DELETE, params).fetchone())
            if row is not None and row[0]:
                return True
        return False

    # --- leases -------------------------------------------------------------------------

    def _take(self, name: str) -> bool:
        holder = holder_token()
        params = {"name": name, "holder": holder, "lease": self._lease}
        row = self._run(lambda c: c.execute(_TAKE_LEASE, params).fetchone())
        if row is None:
            return False
        with self._lock:
            self._holders[name] = holder
        return True

    def _give(self, name: str) -> None:
        with self._lock:
            holder = self._holders.pop(name, None)
        if holder is not None:
            self._run(lambda c: c.execute(_GIVE_LEASE, {"name": name, "holder": holder}))

    # --- clients ------------------------------------------------------------------------

    def get_clients(self) -> Sequence[ClientRecord]:
        rows = self._run(
            lambda c: c.execute("SELECT client FROM mcpcore_clients ORDER BY issuer").fetchall()
        )
        return [decode_client(row[0]) for row in rows]

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        params = {"issuer": issuer, "client": encode_client(client)}
        self._run(
            lambda c: c.execute(
                """INSERT INTO mcpcore_clients (issuer, client) VALUES (%(issuer)s, %(client)s)
                ON CONFLICT (issuer) DO UPDATE SET client = EXCLUDED.client""",
                params,
            )
        )

    def delete_client(self, issuer: str) -> None:
        self._run(lambda c: c.execute("DELETE FROM mcpcore_clients WHERE issuer = %s", (issuer,)))

    # --- tasks and paused calls (W4) ----------------------------------------------------

    def save_task(self, handle: TaskHandle, *, subject: str = DEFAULT_SUBJECT) -> None:
        params = {"subject": subject, "task_id": handle.task_id, "handle": handle.to_json()}
        self._run(
            lambda c: c.execute(
                """INSERT INTO mcpcore_tasks (subject, task_id, handle)
                VALUES (%(subject)s, %(task_id)s, %(handle)s)
                ON CONFLICT (subject, task_id) DO UPDATE SET handle = EXCLUDED.handle""",
                params,
            )
        )

    def load_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> TaskHandle | None:
        row = self._run(
            lambda c: c.execute(
                "SELECT handle FROM mcpcore_tasks WHERE subject = %s AND task_id = %s",
                (subject, task_id),
            ).fetchone()
        )
        return None if row is None else decode_task(row[0])

    def delete_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        row = self._run(
            lambda c: c.execute(
                "DELETE FROM mcpcore_tasks WHERE subject = %s AND task_id = %s RETURNING 1",
                (subject, task_id),
            ).fetchone()
        )
        return row is not None

    def save_continuation(
        self, continuation: Continuation, *, subject: str = DEFAULT_SUBJECT
    ) -> str:
        """Keep ``continuation`` for ``subject``; returns its id (what ``take_continuation`` takes)."""
        ident = continuation.id
        params = {"subject": subject, "id": ident, "continuation": continuation.to_json()}
        self._run(
            lambda c: c.execute(
                """INSERT INTO mcpcore_continuations (subject, id, continuation)
                VALUES (%(subject)s, %(id)s, %(continuation)s)
                ON CONFLICT (subject, id) DO UPDATE SET continuation = EXCLUDED.continuation""",
                params,
            )
        )
        return ident

    def take_continuation(
        self, continuation_id: str, *, subject: str = DEFAULT_SUBJECT
    ) -> Continuation | None:
        """Remove and return the continuation: however many workers ask at once, one gets it."""
        row = self._run(
            lambda c: c.execute(
                "DELETE FROM mcpcore_continuations WHERE subject = %s AND id = %s RETURNING continuation",
                (subject, continuation_id),
            ).fetchone()
        )
        return None if row is None else decode_continuation(row[0])
