"""Shared stores for hosts that outgrow one process (W1-W5, DESIGN §20).

Three ``mcpcore.SharedTokenStore`` implementations keep, per subject (the
host's user or tenant id, ``mcpcore.DEFAULT_SUBJECT`` by default), the
sign-ins (token sets and registered clients), the task handles and the paused
calls' continuations, so that any worker of a host may refresh, follow a task
or resume a call another started:

- ``SqliteTokenStore(path)``: the standard library's ``sqlite3`` (WAL), for
  any number of processes on one machine; no extra; ``mcpcore login`` uses it.
- ``PostgresTokenStore(dsn)``: PostgreSQL through psycopg 3 (extra
  ``postgres``), for many machines.
- ``RedisTokenStore(url)``: Redis through redis-py (extra ``redis``), for many
  machines.

Every store's compare-and-set (``set_tokens(..., replaces=)``,
``delete_tokens(..., only_if=)``) is atomic for every process, its refresh
and sign-in locks are leases that end after ``lease`` seconds (W3), and
``take_continuation`` hands a continuation to one taker only (W4). A store
that cannot be reached raises ``StoreUnavailable``, whose message names no
secret (W5); a record mcpcore did not write raises ``StoreCorrupt``.

Three ``mcpcore.PinStore`` implementations keep pinned tool definitions (U1)
per server and subject, for a host whose pins outlive its process:
``SqlitePinStore(path)`` in a SQLite file (processes on one machine),
``PostgresPinStore(dsn)`` and ``RedisPinStore(url)`` (many machines; the same
extras, connections and ``StoreUnavailable`` as the token stores).

The stores load on first use: importing this package imports neither
psycopg nor redis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import StoreCorrupt, StoreError, StoreUnavailable

if TYPE_CHECKING:
    from ._pins import SqlitePinStore
    from ._pins_postgres import PostgresPinStore
    from ._pins_redis import RedisPinStore
    from ._postgres import PostgresTokenStore
    from ._redis import RedisTokenStore
    from ._sqlite import SqliteTokenStore

__all__ = [
    "PostgresPinStore",
    "PostgresTokenStore",
    "RedisPinStore",
    "RedisTokenStore",
    "SqlitePinStore",
    "SqliteTokenStore",
    "StoreCorrupt",
    "StoreError",
    "StoreUnavailable",
]

# name -> the private module that defines it (loaded when first asked for).
_LAZY = {
    "SqliteTokenStore": "._sqlite",
    "PostgresTokenStore": "._postgres",
    "RedisTokenStore": "._redis",
    "SqlitePinStore": "._pins",
    "PostgresPinStore": "._pins_postgres",
    "RedisPinStore": "._pins_redis",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
