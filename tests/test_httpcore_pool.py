"""What both drivers build on httpcore (``mcpcore_httpcore`` and the two ``_network``
modules): httpcore's own pools through its public API only, the end of a response body
told from the drivers' own streams, and socket readiness checks that work on any descriptor.

The drivers' tests run all of it over real sockets as well; among them a connection the
server closed while idle is not reused (``test_drivers``), on every driver.
"""

from __future__ import annotations

import ast
import os
import resource
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpcore
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore_httpcore import BodyEnd, Connections, Waiter, wait_readable

ADAPTERS = Path(__file__).resolve().parent.parent / "src" / "adapters"


# --- httpcore's public API only ----------------------------------------------------------


def test_the_network_modules_override_no_private_httpcore_method() -> None:
    """No class of the network modules replaces a private method of an httpcore class it
    derives from (the old pool replaced ``_assign_requests_to_connections``), and none
    checks sockets with ``select.select``, which fails on descriptors past 1023.
    (``test_no_private_imports`` checks imports and attributes.)"""
    import inspect

    import mcpcore_anyio._network
    import mcpcore_httpcore
    import mcpcore_threaded._network

    problems = []
    for module in (mcpcore_httpcore, mcpcore_anyio._network, mcpcore_threaded._network):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            theirs = [base for base in cls.__mro__ if base.__module__.startswith("httpcore")]
            for name in vars(cls):
                if name.startswith("_") and not name.startswith("__"):
                    problems += [f"{cls.__name__}.{name}" for base in theirs if hasattr(base, name)]
        tree = ast.parse(Path(module.__file__ or "").read_text())
        problems += [
            f"{module.__name__}:{node.lineno} select.select"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr == "select"
            and isinstance(node.value, ast.Name)
            and node.value.id == "select"
        ]
    assert problems == []


# --- readiness checks ----------------------------------------------------------------------


@pytest.fixture
def high_fd_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair whose first socket has a descriptor past ``select``'s 1023."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1500
    if soft <= wanted:
        if hard != resource.RLIM_INFINITY and hard <= wanted:
            pytest.skip("the descriptor limit is below 1500")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted + 1, hard))
    ours, peer = socket.socketpair()
    try:
        os.dup2(ours.fileno(), wanted)
        high = socket.socket(fileno=wanted)
        ours.close()
        yield high, peer
        high.close()
    finally:
        ours.close()
        peer.close()
        if soft <= wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_readiness_checks_work_on_descriptors_past_1023(
    high_fd_pair: tuple[socket.socket, socket.socket],
) -> None:
    """``select.select`` raises ValueError on these (and the old check then said
    "readable"): a connection would have been dropped, or a caller kept waiting."""
    high, peer = high_fd_pair
    assert high.fileno() >= 1024
    assert wait_readable(high, 0) is False
    assert wait_readable(high, 0.01) is False
    peer.sendall(b"x")
    assert wait_readable(high, 1) is True
    assert high.recv(1) == b"x"
    assert wait_readable(high, 0) is False
    peer.close()
    assert wait_readable(high, 1) is True  # the end is readable: recv returns b""


def test_a_closed_socket_counts_as_readable() -> None:
    a, b = socket.socketpair()
    a.close()
    b.close()
    assert wait_readable(a, 0) is True


def test_anyio_idle_check_works_on_descriptors_past_1023(
    high_fd_pair: tuple[socket.socket, socket.socket],
) -> None:
    from mcpcore_anyio._network import _socket_readable

    high, peer = high_fd_pair
    assert _socket_readable(high) is False
    peer.sendall(b"x")
    assert wait_readable(high, 1)
    assert _socket_readable(high) is True
    assert _socket_readable(None) is True


# --- where a body ends -----------------------------------------------------------------------


def test_the_stream_keeps_the_last_bytes_of_the_response_being_read() -> None:
    seen = BodyEnd()
    assert seen.read_tail() == b""
    seen.saw_read(b"HTTP/1.1 200 OK\r\n\r\n9\r\ndata: 1\n\n\r\n")
    seen.saw_read(b"0\r\n")
    seen.saw_read(b"")
    seen.saw_read(b"\r\n")
    assert seen.read_tail().endswith(b"\r\n0\r\n\r\n")
    seen.saw_written()  # the next request: what came before belongs to another response
    assert seen.read_tail() == b""
    seen.saw_read(b"x" * 100)
    assert len(seen.read_tail()) < 16


CHUNKED_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)
EVENT = b"data: 1\n\n"
CHUNK = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
LAST = b"0\r\n\r\n"


class RawServer:
    """Answers each request on one connection as its mode says, from a thread.

    ``together``: the event and the body's end in one send; ``held``: the end only once
    ``release`` is set; ``length``: a ``Content-Length`` body.
    """

    def __init__(self, *modes: str) -> None:
        self.modes = list(modes)
        self.release = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
            with conn:
                conn.settimeout(10)
                buffer = b""
                for mode in self.modes:
                    while b"\r\n\r\n" not in buffer:
                        buffer += conn.recv(65536)
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length")
                    )
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    buffer = buffer[length:]
                    if mode == "length":
                        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n" + EVENT)
                    elif mode == "together":
                        conn.sendall(CHUNKED_HEAD + CHUNK + LAST)
                    else:
                        conn.sendall(CHUNKED_HEAD + CHUNK)
                        assert self.release.wait(10)
                        self.release.clear()
                        conn.sendall(LAST)
        except BaseException as exc:  # reported by close()
            self.failure = exc

    def close(self) -> None:
        self.release.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes an accept() still waiting
        except OSError:
            pass
        self.thread.join(10)
        self.listener.close()
        assert self.failure is None, self.failure


def test_threaded_a_streams_end_is_seen_without_httpcores_parser() -> None:
    """One keep-alive connection, three responses: the end that came with the last event
    is seen (and that one's end does not count for the next response); an end held back
    is not, and the caller waits only the short grace for it."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool, ends_without_waiting

    server = RawServer("together", "held", "length")
    try:
        with connection_pool(None, 1, _Performing()) as pool:
            outcomes = []
            for _ in server.modes:
                with pool.stream("POST", server.url, content=b"{}") as response:
                    chunks = response.iter_stream()
                    first = next(chunks)
                    outcomes.append(ends_without_waiting(response, len(first)))
                    server.release.set()
                    assert first + b"".join(chunks) == EVENT
            assert len(pool.connections) == 1
        assert outcomes == [True, False, True]
    finally:
        server.close()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_anyio_a_streams_end_is_seen_without_httpcores_parser(anyio_backend: str) -> None:
    """The same on the anyio driver's pool, on asyncio (its own streams) and on trio
    (httpcore's trio streams, watched)."""
    from mcpcore_anyio._network import connection_pool, ends_without_waiting

    server = RawServer("together", "held", "length")
    try:
        with anyio.fail_after(10):
            async with connection_pool(None, 1) as pool:
                outcomes = []
                for _ in server.modes:
                    async with pool.stream("POST", server.url, content=b"{}") as response:
                        chunks = response.aiter_stream()
                        first = await chunks.__anext__()
                        outcomes.append(ends_without_waiting(response, len(first)))
                        server.release.set()
                        async for chunk in chunks:
                            first += chunk
                        assert first == EVENT
                assert len(pool.connections) == 1
        assert outcomes == [True, False, True]
    finally:
        server.close()


# --- the pools' bookkeeping (mcpcore_httpcore.Connections) ----------------------------------


class FakeConnection:
    """A connection as the bookkeeping sees it: its origin and httpcore's checks."""

    def __init__(self, label: str, origin: httpcore.Origin) -> None:
        self.label, self.origin = label, origin
        self.idle = False  # set when its request ends well (a new one is busy)
        self.closed = False
        self.expired = False  # the server closed it while idle
        self.expiry_checks = 0

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return origin == self.origin

    def is_idle(self) -> bool:
        return self.idle

    def is_closed(self) -> bool:
        return self.closed

    def has_expired(self) -> bool:
        self.expiry_checks += 1
        return self.expired

    def __repr__(self) -> str:
        return self.label


A = httpcore.Origin(b"http", b"a", 80)
B = httpcore.Origin(b"http", b"b", 80)


def book(max_connections: int) -> Connections[FakeConnection]:
    made = iter(range(1000))
    return Connections(max_connections, lambda origin: FakeConnection(f"c{next(made)}", origin))


def finished(connections: Connections[FakeConnection], connection: FakeConnection) -> list[Any]:
    connection.idle = True
    return connections.give_back(connection)


def test_B1_connections_are_made_up_to_the_limit_then_requests_wait() -> None:
    pool = book(2)
    first, closing = pool.take(A)
    second, _ = pool.take(A)
    assert first is not None and second is not None and first is not second and not closing
    assert pool.take(A) == (None, [])
    assert pool.all == [first, second]


def test_B1_the_most_recently_used_idle_connection_is_taken_and_checked_only_then() -> None:
    pool = book(3)
    older, newer, other = pool.take(A)[0], pool.take(A)[0], pool.take(B)[0]
    for connection in (older, newer, other):
        assert connection is not None
        assert finished(pool, connection) == []
    assert pool.take(A) == (newer, [])
    assert (newer.expiry_checks, older.expiry_checks, other.expiry_checks) == (1, 0, 0)


def test_B1_an_expired_connection_is_closed_when_about_to_be_used_and_the_next_tried() -> None:
    pool = book(3)
    older, newer = pool.take(A)[0], pool.take(A)[0]
    assert older is not None and newer is not None
    finished(pool, older)
    finished(pool, newer)
    newer.expired = True
    assert pool.take(A) == (older, [newer])
    older.expired = True
    finished(pool, older)
    fresh, closing = pool.take(A)
    assert closing == [older] and fresh not in (older, newer)
    assert pool.all == [fresh]


def test_B1_a_full_pool_makes_room_by_closing_an_idle_connection_to_another_origin() -> None:
    pool = book(1)
    other = pool.take(B)[0]
    assert other is not None
    finished(pool, other)
    mine, closing = pool.take(A)
    assert closing == [other] and mine is not None and mine.origin == A
    assert pool.all == [mine]


def test_B1_a_connection_given_back_goes_straight_to_the_longest_waiter() -> None:
    pool = book(1)
    held = pool.take(A)[0]
    assert held is not None
    woken: list[str] = []
    first: Waiter[FakeConnection] = Waiter(A, lambda: woken.append("first"))
    second: Waiter[FakeConnection] = Waiter(A, lambda: woken.append("second"))
    pool.waiting.extend([first, second])
    assert finished(pool, held) == []
    assert woken == ["first"] and first.connection is held and pool.idle == []
    # the waiter to another origin gets a new connection; the old one is closed
    elsewhere: Waiter[FakeConnection] = Waiter(B, lambda: woken.append("elsewhere"))
    pool.waiting.remove(second)
    pool.waiting.append(elsewhere)
    assert finished(pool, held) == [held]
    assert elsewhere.connection is not None and elsewhere.connection.origin == B
    assert pool.all == [elsewhere.connection]


def test_B1_a_failed_connection_frees_its_place() -> None:
    pool = book(1)
    broken = pool.take(A)[0]
    assert broken is not None
    broken.closed = True
    woken: list[bool] = []
    waiter: Waiter[FakeConnection] = Waiter(A, lambda: woken.append(True))
    pool.waiting.append(waiter)
    assert pool.give_back(broken) == [broken]
    assert woken == [True] and waiter.connection is not None and waiter.connection is not broken
    assert pool.give_back(waiter.connection) == [waiter.connection]  # a request cut short
    assert pool.all == [] and pool.idle == []


def test_a_waiter_that_gives_up_leaves_nothing_behind() -> None:
    pool = book(1)
    held = pool.take(A)[0]
    assert held is not None
    gone: Waiter[FakeConnection] = Waiter(A, lambda: None)
    pool.waiting.append(gone)
    assert pool.withdraw(gone) == [] and not pool.waiting
    late: Waiter[FakeConnection] = Waiter(A, lambda: None)
    pool.waiting.append(late)
    finished(pool, held)  # handed to the waiter just as it gave up: it goes back
    assert late.connection is held
    assert pool.withdraw(late) == [] and pool.idle == [held]


def test_closing_the_pool_closes_everything_and_the_waiting_get_new_connections() -> None:
    pool = book(2)
    held, idle = pool.take(A)[0], pool.take(A)[0]
    assert held is not None and idle is not None
    finished(pool, idle)
    waiters: list[Waiter[FakeConnection]] = [Waiter(A, lambda: None) for _ in range(3)]
    pool.waiting.extend(waiters)
    assert sorted(map(repr, pool.close_all())) == sorted(map(repr, [held, idle]))
    assert [w.connection is not None for w in waiters] == [True, True, False]
    assert len(pool.all) == 2 and list(pool.waiting) == [waiters[2]]
    assert pool.give_back(held) == [held]  # from before the close: closed


@settings(max_examples=400, deadline=None)
@given(
    limit=st.integers(1, 4),
    steps=st.lists(
        st.tuples(st.sampled_from(["take", "end", "fail", "expire", "withdraw", "close"]),
                  st.integers(0, 7), st.booleans()),
        max_size=40,
    ),
)  # fmt: skip
def test_B1_no_connection_is_ever_given_to_two_requests(
    limit: int, steps: list[tuple[str, int, bool]]
) -> None:
    """Whatever comes and goes: never more connections than the limit, no connection held
    by two requests, none idle and held at once, none used after it expired or closed,
    and no request left waiting while there is room."""
    pool = book(limit)
    held: list[FakeConnection] = []
    waiting: list[Waiter[FakeConnection]] = []

    def check_granted() -> None:
        for waiter in list(waiting):
            if waiter.connection is not None:
                waiting.remove(waiter)
                held.append(waiter.connection)

    for action, pick, flag in steps:
        origin = A if flag else B
        if action == "take":
            connection, _ = pool.take(origin)
            if connection is None:
                waiter: Waiter[FakeConnection] = Waiter(origin, lambda: None)
                pool.waiting.append(waiter)
                waiting.append(waiter)
            else:
                held.append(connection)
        elif action in ("end", "fail") and held:
            connection = held.pop(pick % len(held))
            if action == "end":
                connection.idle = True
            else:
                connection.closed = True
            pool.give_back(connection)
        elif action == "expire" and pool.idle:
            pool.idle[pick % len(pool.idle)].expired = True
        elif action == "withdraw" and waiting:
            waiter = waiting.pop(pick % len(waiting))
            pool.withdraw(waiter)
        elif action == "close":
            pool.close_all()
            held.clear()
        check_granted()
        for connection in held:
            connection.idle = False  # busy while held
        assert len(pool.all) <= limit
        assert len({id(c) for c in held}) == len(held)
        assert not {id(c) for c in held} & {id(c) for c in pool.idle}
        assert all(not (c.expired or c.closed) for c in held)
        assert set(map(id, pool.idle)) <= set(map(id, pool.all))
        if pool.waiting:
            assert len(pool.all) == limit


# --- the pools on real sockets ---------------------------------------------------------------


class CountingServer:
    """An HTTP/1.1 server on loopback answering ``ok`` to every request, a thread per
    connection. ``hold`` (when set) is waited for before each answer; ``close_after``
    closes each connection after its answer, without saying so: it is counted closed
    (``open``) once the client's kernel has the close (``close_seen``); a request
    that arrives on it after that is counted in ``stale``."""

    def __init__(self, close_after: bool = False) -> None:
        self.close_after = close_after
        self.hold = threading.Event()
        self.hold.set()
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/"
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self.stale = 0
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._start(self._accept)

    def _start(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self.open += 1
                self.most_open = max(self.most_open, self.open)
                self._conns.append(conn)
            self._start(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buffer = b""
        counted = False
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.lower().split(b"\r\n"):
                    if line.startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                self.hold.wait(10)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                if self.close_after:
                    close_seen(conn)
                    with self._lock:
                        self.open -= 1
                    counted = True
                    if buffer or conn.recv(65536):  # until the client closes it, or this
                        with self._lock:
                            self.stale += 1
                    return
        except OSError:
            pass
        finally:
            conn.close()
            if not counted:  # counted as open until it is closed
                with self._lock:
                    self.open -= 1

    def close(self) -> None:
        self.hold.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self.listener.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(10)


_TCP_INFO = getattr(socket, "TCP_INFO", None) if sys.platform == "linux" else None
_FIN_WAIT1 = 4  # tcpi_state: this side's FIN not acknowledged yet


def close_seen(conn: socket.socket) -> None:
    """Close the sending side of ``conn`` (a FIN) and return once the client's kernel
    has it: the client's socket reads as closed from then on.

    On Linux, when the peer acknowledged the FIN (``TCP_INFO``'s state leaves
    FIN_WAIT1). Returning as soon as the close was called is not enough: on a loaded
    machine the FIN can still be on its way, and a client that writes its next
    request then meets a connection reset (the flaky test of issue 36). Elsewhere
    the close is only sent.
    """
    conn.shutdown(socket.SHUT_WR)
    if _TCP_INFO is None:  # pragma: no cover - not Linux
        return
    deadline = time.monotonic() + 5
    while conn.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 1)[0] == _FIN_WAIT1:
        assert time.monotonic() < deadline, "the client never acknowledged the close"
        time.sleep(0.001)


@pytest.fixture
def counting() -> Iterator[CountingServer]:
    server = CountingServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def closing_server() -> Iterator[CountingServer]:
    server = CountingServer(close_after=True)
    try:
        yield server
    finally:
        server.close()


def test_B1_threaded_many_callers_share_the_pools_connections(counting: CountingServer) -> None:
    """32 threads, 4 connections: every request is served, never on more than 4."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    failures: list[BaseException] = []

    def caller(pool: Any) -> None:
        try:
            for _ in range(10):
                assert pool.request("POST", counting.url, content=b"{}").content == b"ok"
        except BaseException as exc:
            failures.append(exc)

    with connection_pool(None, 4, _Performing()) as pool:
        threads = [threading.Thread(target=caller, args=(pool,)) for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert failures == []
        assert len(pool.connections) <= 4
        assert "connections" in repr(pool)
    assert counting.accepted <= 4


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_B1_anyio_many_tasks_share_the_pools_connections(
    counting: CountingServer, anyio_backend: str
) -> None:
    from mcpcore_anyio._network import connection_pool

    async def caller(pool: Any) -> None:
        for _ in range(10):
            response = await pool.request("POST", counting.url, content=b"{}")
            assert response.content == b"ok"

    with anyio.fail_after(30):
        async with connection_pool(None, 4) as pool:
            async with anyio.create_task_group() as tasks:
                for _ in range(32):
                    tasks.start_soon(caller, pool)
            assert len(pool.connections) <= 4
            assert "connections" in repr(pool)
    assert counting.accepted <= 4


def test_threaded_a_connection_the_server_closed_while_idle_is_not_used(
    closing_server: CountingServer,
) -> None:
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    with connection_pool(None, 2, _Performing()) as pool:
        for _ in range(3):
            assert pool.request("GET", closing_server.url).content == b"ok"
            # the server's close has arrived: the next request takes a new connection
            assert wait_for_close(closing_server)
    assert closing_server.accepted == 3
    assert closing_server.stale == 0  # no request was written on a closed connection


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_anyio_a_connection_the_server_closed_while_idle_is_not_used(
    closing_server: CountingServer, anyio_backend: str
) -> None:
    from mcpcore_anyio._network import connection_pool

    with anyio.fail_after(10):
        async with connection_pool(None, 2) as pool:
            for _ in range(3):
                assert (await pool.request("GET", closing_server.url)).content == b"ok"
                # the server's close has arrived (the idle check asks the socket
                # itself, whether or not the event loop has read the close yet)
                while closing_server.open:
                    await anyio.sleep(0.005)
    assert closing_server.accepted == 3
    assert closing_server.stale == 0  # no request was written on a closed connection


def wait_for_close(server: CountingServer) -> bool:
    deadline = time.monotonic() + 5
    while server.open and time.monotonic() < deadline:
        time.sleep(0.005)
    return not server.open


def test_threaded_a_request_waits_for_a_connection_within_its_pool_timeout(
    counting: CountingServer,
) -> None:
    """A request that finds every connection busy waits; past its pool timeout it fails
    ``PoolTimeout`` and leaves the pool as it was."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    with connection_pool(None, 1, _Performing()) as pool:
        with pool.stream("GET", counting.url) as first:
            with pytest.raises(httpcore.PoolTimeout):
                pool.request("GET", counting.url, extensions={"timeout": {"pool": 0.05}})
            first.read()
        got: list[bytes] = []
        counting.hold.clear()  # the next one is answered when released: others queue
        waiting = [
            threading.Thread(target=lambda: got.append(pool.request("GET", counting.url).content))
            for _ in range(3)
        ]
        for thread in waiting:
            thread.start()
        counting.hold.set()
        for thread in waiting:
            thread.join(10)
        assert got == [b"ok"] * 3
        assert len(pool.connections) == 1
    assert counting.accepted == 1


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_anyio_a_request_cancelled_while_waiting_leaves_nothing_behind(
    counting: CountingServer, anyio_backend: str
) -> None:
    from mcpcore_anyio._network import connection_pool

    with anyio.fail_after(10):
        async with connection_pool(None, 1) as pool:
            async with pool.stream("GET", counting.url) as first:
                with pytest.raises(httpcore.PoolTimeout):
                    await pool.request("GET", counting.url, extensions={"timeout": {"pool": 0.05}})
                with anyio.move_on_after(0.05) as scope:
                    await pool.request("GET", counting.url)
                assert scope.cancelled_caught
                await first.aread()
            assert (await pool.request("GET", counting.url)).content == b"ok"
            assert len(pool.connections) == 1
    assert counting.accepted == 1


def test_a_url_that_is_not_http_is_refused() -> None:
    from mcpcore_anyio._network import connection_pool as anyio_pool
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool as threaded_pool

    with pytest.raises(httpcore.UnsupportedProtocol):
        threaded_pool(None, 1, _Performing()).request("GET", "ftp://example.com/")

    async def main() -> None:
        with pytest.raises(httpcore.UnsupportedProtocol):
            await anyio_pool(None, 1).request("GET", "ftp://example.com/")

    anyio.run(main)


# --- the request the drivers build -----------------------------------------------------------


class _Recorder(httpcore.ConnectionInterface):
    """Keeps the request httpcore's own ``stream()`` built, and answers 204."""

    request: httpcore.Request | None = None

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        self.request = request
        return httpcore.Response(204)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/mcp",
        "http://example.com/mcp?token=abc",
        "https://example.com/mcp",
        "https://example.com:443/a/b",
        "http://example.com:80/",
        "https://[::1]:8443/mcp",
    ],
)
@pytest.mark.parametrize("body", [None, b'{"jsonrpc":"2.0","method":"ping","id":1}'])
def test_B1_the_drivers_build_the_request_httpcores_stream_would(
    url: str, body: bytes | None
) -> None:
    """B1: both drivers build httpcore's ``Request`` themselves (the URL parsed once, the
    headers checked once); what goes on the wire is what ``stream()`` would have sent:
    the same method, URL, headers in the same order (``Host`` first, ``Content-Length``
    last for a body) and body."""
    from mcpcore_anyio._network import http_request as anyio_request
    from mcpcore_threaded._network import http_request as threaded_request

    headers = [(b"accept", b"application/json, text/event-stream"), (b"mcp-session-id", b"abc")]
    recorder = _Recorder()
    with recorder.stream("POST", url, headers=headers, content=body):
        pass
    expected = recorder.request
    assert expected is not None

    def same(built: httpcore.Request) -> None:
        assert built.method == expected.method
        assert (built.url.scheme, built.url.host, built.url.port, built.url.target) == (
            expected.url.scheme,
            expected.url.host,
            expected.url.port,
            expected.url.target,
        )
        assert [(k.lower(), v) for k, v in built.headers] == [
            (k.lower(), v) for k, v in expected.headers
        ]

    threaded = threaded_request("POST", url, headers, body)
    same(threaded)
    assert b"".join(threaded.stream) == (body or b"")  # type: ignore[arg-type]

    class _Body:  # the anyio driver's body is an async iterable; its bytes are not compared
        def __aiter__(self) -> _Body:
            return self

        async def __anext__(self) -> bytes:
            raise StopAsyncIteration

    same(anyio_request("POST", url, headers, None if body is None else (len(body), _Body())))
