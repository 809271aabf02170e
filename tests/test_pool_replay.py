"""Both drivers' pools: a request that breaks on a kept-alive connection (D3).

A server (or a load balancer in front of it) closes idle connections, and its
close may be on its way when the client writes the next request on one. A
request that fails on a kept-alive connection before any byte of its answer
arrived goes once more, on a new connection, when sending it twice changes
nothing on the server (the core's ``HttpRequest.replayable``) or when its bytes
did not all go out (the server cannot have read it whole); otherwise the
failure is the caller's. ``test_stale_connections`` shows the same through the
clients, with the core's choice of which requests are replayable.

The server here breaks a connection deterministically: it answers the first
request on each connection and keeps it alive, then resets it on the next one,
after reading that request whole, or its head only, or after a part of an answer.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpcore
import pytest

_TIMEOUTS = {"connect": 10, "read": 10, "write": 10, "pool": 10}
_BIG = 32 * 1024 * 1024  # more than the kernels' buffers hold: its write cannot all go out
_BROKEN = (httpcore.NetworkError, httpcore.RemoteProtocolError)


class StaleServer:
    """HTTP/1.1 on loopback, a thread per connection. The first request on each
    connection is answered ``ok`` and the connection kept alive; the next one on it
    is read (``whole``: all of it; ``head``: its head only; ``partial``: all of it,
    then the first bytes of an answer are sent) and the connection reset. With
    ``every``, every request is read whole and its connection reset.

    ``requests`` holds (connection number, body) for each request read whole.
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.accepted = 0
        self.requests: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self._conns.append(conn)
                number = self.accepted
            thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        conn.settimeout(10)
        buffer = b""
        served = False
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                if served and self.mode == "head":
                    return _reset(conn)
                length = 0
                for line in head.lower().split(b"\r\n"):
                    if line.startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(buffer) < length:
                    data = conn.recv(1 << 20)
                    if not data:
                        return
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                with self._lock:
                    self.requests.append((number, body))
                if served or self.mode == "every":
                    if self.mode == "partial":
                        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-")
                    return _reset(conn)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                served = True
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
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


def _reset(conn: socket.socket) -> None:
    """Close ``conn`` with a reset (no FIN): what the client meets next is an error."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


@pytest.fixture(params=["whole", "head", "partial"])
def server(request: pytest.FixtureRequest) -> Iterator[StaleServer]:
    running = StaleServer(request.param)
    try:
        yield running
    finally:
        running.close()


def expected(server: StaleServer, replayable: bool, body: bytes) -> tuple[bool, int]:
    """Whether the second request succeeds (sent again), and the connections opened."""
    again = server.mode != "partial" and (replayable or server.mode == "head")
    return again, 2 if again else 1


def check(server: StaleServer, second: bytes, again: bool) -> None:
    bodies = [body for _, body in server.requests]
    if server.mode == "head":  # the broken request was not read whole
        assert bodies == ([b"first", second] if again else [b"first"])
        assert [n for n, _ in server.requests] == ([1, 2] if again else [1])
    elif again:
        assert server.requests == [(1, b"first"), (1, second), (2, second)]
    else:
        assert server.requests == [(1, b"first"), (1, second)]  # not sent again


# --- the threaded driver ---------------------------------------------------------------------


def threaded_post(pool: Any, url: str, body: bytes, replayable: bool) -> bytes:
    from mcpcore_threaded._network import http_request

    request = http_request("POST", url, [], body, replayable)
    request.extensions["timeout"] = _TIMEOUTS
    response = pool.handle_request(request)
    try:
        return bytes(response.read())
    finally:
        response.close()


@pytest.mark.parametrize("replayable", [True, False], ids=["replayable", "not-replayable"])
def test_D3_threaded_a_request_broken_on_a_kept_alive_connection(
    server: StaleServer, replayable: bool
) -> None:
    """D3: sent once more, on a new connection, only when no byte of the answer
    arrived and either it is replayable or its body did not all go out."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    second = b"x" * _BIG if server.mode == "head" else b"second"
    again, connections = expected(server, replayable, second)
    with connection_pool(None, 2, _Performing()) as pool:
        assert threaded_post(pool, server.url, b"first", replayable) == b"ok"
        if again:
            assert threaded_post(pool, server.url, second, replayable) == b"ok"
        else:
            with pytest.raises(_BROKEN):
                threaded_post(pool, server.url, second, replayable)
    assert server.accepted == connections
    check(server, second, again)


@pytest.fixture
def breaking() -> Iterator[StaleServer]:
    running = StaleServer("every")
    try:
        yield running
    finally:
        running.close()


def test_D3_threaded_a_request_on_a_new_connection_is_not_sent_again(
    breaking: StaleServer,
) -> None:
    """D3: only a kept-alive connection may have been closed while idle; a request
    that breaks on a connection opened for it fails as it is."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    with connection_pool(None, 2, _Performing()) as pool:
        with pytest.raises(_BROKEN):
            threaded_post(pool, breaking.url, b"only", True)
    assert breaking.requests == [(1, b"only")]


# --- the anyio driver ------------------------------------------------------------------------


async def anyio_post(pool: Any, url: str, body: bytes, replayable: bool) -> bytes:
    from mcpcore_anyio._client import _OneChunk
    from mcpcore_anyio._network import http_request

    request = http_request("POST", url, [], (len(body), _OneChunk(body)), replayable)
    request.extensions["timeout"] = _TIMEOUTS
    response = await pool.handle_async_request(request)
    try:
        return bytes(await response.aread())
    finally:
        await response.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("replayable", [True, False], ids=["replayable", "not-replayable"])
async def test_D3_anyio_a_request_broken_on_a_kept_alive_connection(
    server: StaleServer, replayable: bool, anyio_backend: str
) -> None:
    """D3: as on the threaded driver (the body, one chunk, is sent again whole)."""
    from mcpcore_anyio._network import connection_pool

    second = b"x" * _BIG if server.mode == "head" else b"second"
    again, connections = expected(server, replayable, second)
    with anyio.fail_after(30):
        async with connection_pool(None, 2) as pool:
            assert await anyio_post(pool, server.url, b"first", replayable) == b"ok"
            if again:
                assert await anyio_post(pool, server.url, second, replayable) == b"ok"
            else:
                with pytest.raises(_BROKEN):
                    await anyio_post(pool, server.url, second, replayable)
    assert server.accepted == connections
    check(server, second, again)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_D3_anyio_a_request_on_a_new_connection_is_not_sent_again(
    breaking: StaleServer, anyio_backend: str
) -> None:
    """D3: as on the threaded driver."""
    from mcpcore_anyio._network import connection_pool

    with anyio.fail_after(30):
        async with connection_pool(None, 2) as pool:
            with pytest.raises(_BROKEN):
                await anyio_post(pool, breaking.url, b"only", True)
    assert breaking.requests == [(1, b"only")]
