"""Request assignment in both drivers' connection pools (``mcpcore_httpcore.LazyAssignment``),
run against httpcore 1.0's own procedure on the same pool states.

The drivers' tests run it over real sockets as well; among them a connection the server
closed while idle is not reused (``test_drivers``), on every driver.
"""

from __future__ import annotations

from typing import Any

import httpcore
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mcpcore_httpcore import REPLACES_HTTPCORE_POOL, LazyAssignment


class FakeConnection:
    def __init__(self, label: str, origin: str, **state: bool) -> None:
        self.label, self.origin, self.state = label, origin, state
        self.expiry_checks = 0

    def is_closed(self) -> bool:
        return self.state.get("closed", False)

    def has_expired(self) -> bool:
        self.expiry_checks += 1
        return self.state.get("expired", False)

    def is_idle(self) -> bool:
        return self.state.get("idle", False)

    def is_available(self) -> bool:
        return self.state.get("available", False)

    def can_handle_request(self, origin: str) -> bool:
        return origin == self.origin


class FakeRequest:
    def __init__(self, label: str, origin: str, queued: bool) -> None:
        self.request = type("R", (), {"url": type("U", (), {"origin": origin})()})()
        # a request not queued is on a connection of its own, outside the pool's list
        self.connection: FakeConnection | None = None if queued else FakeConnection(label, origin)

    def is_queued(self) -> bool:
        return self.connection is None

    def assign_to_connection(self, connection: FakeConnection) -> None:
        self.connection = connection


class FakePool:
    def __init__(
        self,
        connections: list[dict[str, Any]],
        requests: list[dict[str, Any]],
        limits: tuple[int, int],
        http2: bool = False,
    ) -> None:
        self._http2 = http2
        self._connections = [FakeConnection(f"c{i}", **c) for i, c in enumerate(connections)]
        self.initial = list(self._connections)
        self._requests = [FakeRequest(f"busy{i}", **r) for i, r in enumerate(requests)]
        self._max_connections, self._max_keepalive_connections = limits
        self.created = 0

    def create_connection(self, origin: str) -> FakeConnection:
        self.created += 1
        return FakeConnection(f"new{self.created}", origin)

    def outcome(self, closing: list[FakeConnection]) -> tuple[Any, ...]:
        return (
            [c.label for c in self._connections],
            [c.label for c in closing],
            self.assigned(),
        )

    def assigned(self) -> list[str | None]:
        return [None if r.connection is None else r.connection.label for r in self._requests]

    def misassigned(self, closing: list[FakeConnection]) -> set[str]:
        """Connections given two requests, or closed with a request on them (a fake's state
        does not change when it is given a request: a real one's changes only when the
        request starts on it, so until then it reads as idle)."""
        labels = [label for label in self.assigned() if label is not None]
        twice = {label for label in labels if labels.count(label) > 1}
        return twice | (set(labels) & {c.label for c in closing})


def _states(expired: st.SearchStrategy[bool]) -> st.SearchStrategy[dict[str, Any]]:
    # What httpcore's HTTP/1.1 connections can report: one that has expired
    # (keep-alive timed out, or the server closed it) is idle, and so available.
    def realistic(state: dict[str, Any]) -> dict[str, Any]:
        if state["expired"]:
            state.update(idle=True, available=True)
        return state

    return st.fixed_dictionaries(
        {
            "origin": st.sampled_from(["a", "b"]),
            "closed": st.booleans(),
            "expired": expired,
            "idle": st.booleans(),
            "available": st.booleans(),
        }
    ).map(realistic)


request_states = st.fixed_dictionaries(
    {"origin": st.sampled_from(["a", "b"]), "queued": st.booleans()}
)
limits = st.tuples(st.integers(1, 12), st.integers(0, 12)).map(lambda m: (m[0], min(m)))

HTTPCORE_PROCEDURES = [
    httpcore.AsyncConnectionPool._assign_requests_to_connections,
    httpcore.ConnectionPool._assign_requests_to_connections,
]

_IDLE_ELSEWHERE = {
    "origin": "b",
    "closed": False,
    "expired": False,
    "idle": True,
    "available": False,
}


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
@pytest.mark.parametrize("theirs_procedure", HTTPCORE_PROCEDURES, ids=["async", "sync"])
@settings(max_examples=1000, deadline=None)
@example(  # the pool is full and two idle connections could make room: the first one goes
    connections=[_IDLE_ELSEWHERE, _IDLE_ELSEWHERE],
    requests=[{"origin": "a", "queued": True}],
    pool_limits=(2, 2),
)
@example(  # two requests queued, one idle connection: httpcore books it twice
    connections=[{**_IDLE_ELSEWHERE, "origin": "a", "available": True}],
    requests=[{"origin": "a", "queued": True}, {"origin": "a", "queued": True}],
    pool_limits=(2, 2),
)
@given(
    connections=st.lists(_states(expired=st.just(False)), max_size=12),
    requests=st.lists(request_states, max_size=6),
    pool_limits=limits,
)
def test_B1_with_no_expired_connection_assignment_is_httpcores(
    theirs_procedure: Any,
    http2: bool,
    connections: list[dict[str, Any]],
    requests: list[dict[str, Any]],
    pool_limits: tuple[int, int],
) -> None:
    """While no connection has expired, both drivers' pools keep, close, create and assign
    exactly the connections httpcore 1.0's own procedure does, sync and async alike, except
    that on HTTP/1.1 a connection just given a request is given no other and is not closed
    to make room. Where httpcore does either (the request then fails
    ``ConnectionNotAvailable`` and goes round again), ours gets another connection or
    waits; as many requests are served as httpcore serves properly."""
    theirs = FakePool(connections, requests, pool_limits, http2)
    ours = FakePool(connections, requests, pool_limits, http2)
    theirs_closing = theirs_procedure(theirs)
    our_closing = LazyAssignment._assign_requests_to_connections(ours)  # type: ignore[arg-type]
    theirs_wrong = theirs.misassigned(theirs_closing)
    if http2 or not theirs_wrong:
        assert ours.outcome(our_closing) == theirs.outcome(theirs_closing)
        return
    assert not ours.misassigned(our_closing)
    served_properly = [label for label in theirs.assigned() if label not in theirs_wrong]
    assert sum(label is not None for label in ours.assigned()) >= sum(
        label is not None for label in served_properly
    )


def test_B1_on_http1_a_connection_given_a_request_is_not_given_another() -> None:
    """The case behind two wasted rounds per call with 32 in flight: one idle connection,
    two requests queued, room for one more connection."""
    idle = {**_IDLE_ELSEWHERE, "origin": "a", "available": True}
    queued = {"origin": "a", "queued": True}
    pool = FakePool([idle], [queued, queued], (2, 2))
    LazyAssignment._assign_requests_to_connections(pool)  # type: ignore[arg-type]
    assert pool.assigned() == ["c0", "new1"]
    full = FakePool([idle], [queued, queued], (1, 1))
    LazyAssignment._assign_requests_to_connections(full)  # type: ignore[arg-type]
    assert full.assigned() == ["c0", None]  # the second waits; c0 is not closed under the first


@settings(max_examples=1500, deadline=None)
@example(  # the first available connection has expired: it is closed and the next one used
    connections=[
        {"origin": "a", "closed": False, "expired": True, "idle": True, "available": True},
        {"origin": "a", "closed": False, "expired": False, "idle": True, "available": True},
    ],
    requests=[{"origin": "a", "queued": True}],
    pool_limits=(2, 2),
)
@given(
    connections=st.lists(_states(expired=st.booleans()), max_size=12),
    requests=st.lists(request_states, max_size=6),
    pool_limits=limits,
)
def test_B1_an_expired_connection_is_never_used_and_checked_only_when_about_to_be(
    connections: list[dict[str, Any]],
    requests: list[dict[str, Any]],
    pool_limits: tuple[int, int],
) -> None:
    """With connections that have expired (the server closed them while idle): no request
    is put on one, as many requests are served as httpcore serves properly, and ``has_expired`` (a
    socket poll per idle connection in httpcore) is asked only of a connection a queued
    request could use next; with no request queued, of none."""
    theirs = FakePool(connections, requests, pool_limits)
    ours = FakePool(connections, requests, pool_limits)
    theirs_closing = httpcore.ConnectionPool._assign_requests_to_connections(theirs)  # type: ignore[arg-type]
    closing = LazyAssignment._assign_requests_to_connections(ours)  # type: ignore[arg-type]

    for request in ours._requests:
        assert request.connection is None or not request.connection.state.get("expired")
        assert request.connection is None or not request.connection.state.get("closed")
    assert not ours.misassigned(closing)
    theirs_wrong = theirs.misassigned(theirs_closing)  # type: ignore[arg-type]
    assert sum(label is not None for label in ours.assigned()) >= sum(
        label is not None and label not in theirs_wrong for label in theirs.assigned()
    )
    # besides expired connections, only idle ones are closed (to make room, or past keep-alive)
    assert all(c.state.get("expired") or c.state.get("idle") for c in closing)

    # a connection is asked at most once per queued request it could take, and in all only
    # as often as requests are placed plus expired connections found
    queued = [r["origin"] for r in requests if r["queued"]]
    for connection in ours.initial:
        assert connection.expiry_checks <= queued.count(connection.origin)
        assert not connection.expiry_checks or connection.state.get("available")
    expired_closed = sum(1 for c in closing if c.state.get("expired"))
    assert sum(c.expiry_checks for c in ours.initial) <= len(queued) + expired_closed


def test_B1_the_lazy_pool_is_used_only_with_the_httpcore_it_replaces() -> None:
    """With the installed httpcore, both drivers' pools use the lazy assignment exactly when
    it replaces that httpcore's own procedure, and the procedure it replaces is there."""
    from mcpcore_anyio._network import connection_pool as anyio_pool
    from mcpcore_threaded._client import _Readers
    from mcpcore_threaded._network import connection_pool as threaded_pool

    for pool in (anyio_pool(None, 10), threaded_pool(None, 10, _Readers())):
        assert isinstance(pool, LazyAssignment) == REPLACES_HTTPCORE_POOL
    if REPLACES_HTTPCORE_POOL:
        for theirs in (httpcore.ConnectionPool, httpcore.AsyncConnectionPool):
            # what LazyAssignment overrides exists on httpcore's pool: it is not dead code
            assert callable(theirs.__dict__.get("_assign_requests_to_connections")), theirs


_POOLS_UNDER = """
import json
import httpcore
httpcore.__version__ = {version!r}
from mcpcore_httpcore import REPLACES_HTTPCORE_POOL, LazyAssignment
from mcpcore_anyio._network import connection_pool as anyio_pool
from mcpcore_threaded._client import _Readers
from mcpcore_threaded._network import connection_pool as threaded_pool
anyio, threaded = anyio_pool(None, 10), threaded_pool(None, 10, _Readers())
print(json.dumps({{
    "flag": REPLACES_HTTPCORE_POOL,
    "lazy": [isinstance(p, LazyAssignment) for p in (anyio, threaded)],
    "httpcore's": [isinstance(anyio, httpcore.AsyncConnectionPool),
                   isinstance(threaded, httpcore.ConnectionPool)],
}}))
"""


@pytest.mark.parametrize(
    ("version", "lazy"),
    [("1.0.9", True), ("1.0.0", True), ("1.1.0", False), ("0.18.0", False), ("2.0.0", False)],
)
def test_B1_another_httpcore_gets_its_own_pool_unchanged(version: str, lazy: bool) -> None:
    """The decision follows the httpcore version seen on import: with any httpcore but
    1.0.x both drivers build httpcore's own pool, without the replaced procedure. Run in a
    fresh interpreter whose httpcore reports ``version``."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _POOLS_UNDER.format(version=version)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"flag": lazy, "lazy": [lazy, lazy], "httpcore's": [True, True]}
