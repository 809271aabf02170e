"""The storm (issue 39; W2, W3, W4b): 20 processes share one user's sign-in through
each store, against the OAuth-protected peer with 2-second access tokens and
refresh tokens that rotate (a spent one is refused).

``bench/storm.py`` runs it (``python -m bench.storm`` reports the figures); here
each store is held to them: every worker starts and calls throughout with no
failed call, nobody is asked to sign in again, the server refuses no refresh,
every token set that replaced another in the store came from exactly one
refresh request (refreshes per expiry: 1), and the user is still signed in at
the end.
"""

from __future__ import annotations

import sys

import pytest

from peers import ROOT
from store_servers import (  # noqa: F401 - store_postgres, store_redis: the session's servers
    PostgresServer,
    RedisServer,
    store_postgres,
    store_redis,
)

pytestmark = pytest.mark.realpeer

PROCESSES = 20
SECONDS = 3.0  # the workers call for this long, from one start signal
TTL = 2  # seconds an access token lives: due for a refresh after about one


@pytest.fixture(scope="session", params=("sqlite", "postgres", "redis"))
def store_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str]:
    """(kind, where): a SQLite file, the session's PostgreSQL DSN or Redis URL."""
    kind = str(request.param)
    if kind == "sqlite":
        return kind, str(tmp_path_factory.mktemp("storm") / "store.db")
    server = request.getfixturevalue(f"store_{kind}")
    assert isinstance(server, (PostgresServer, RedisServer))
    return kind, server.dsn if isinstance(server, PostgresServer) else server.url


def test_W2_storm_of_20_processes_spends_one_refresh_per_expiry(
    store_target: tuple[str, str],
) -> None:
    """W2, W3, W4b: 20 processes sharing one sign-in through the store: one refresh
    request per expiry, no refused refresh, no sign-in asked, no failed call."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.storm import storm

    kind, target = store_target
    figures = storm(kind, target, processes=PROCESSES, seconds=SECONDS, ttl=TTL)
    shown = f"{kind}: {figures}"
    assert figures["workers_ok"] == PROCESSES and not figures["errors"], shown
    assert figures["calls"] >= PROCESSES and figures["failed_calls"] == 0, shown
    assert figures["sign_ins"] == 0, shown  # no process was signed out
    assert figures["refused"] == 0, shown  # no refresh token was spent twice
    assert figures["new_sets"] >= 2, shown  # the tokens expired during the storm
    assert figures["refreshes"] == figures["new_sets"], shown  # one refresh per expiry
    assert figures["signed_in_after"], shown
