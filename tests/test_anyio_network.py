"""The anyio driver's own asyncio network stream (``mcpcore_anyio._network``), against a
fake transport: flow control both ways, end of stream, failures, the idle-close check.
(Every asyncio driver test runs over it against real sockets as well.)"""

from __future__ import annotations

import asyncio
from typing import Any

import httpcore
import pytest

from mcpcore_anyio._network import _HIGH_WATER, _AsyncioStream, _Inbound
from mcpcore_httpcore import COALESCE_LIMIT


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.reading = True
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0  # everything written has gone out

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)


def connected() -> tuple[FakeTransport, _Inbound, _AsyncioStream]:
    transport = FakeTransport()
    inbound = _Inbound()
    inbound.connection_made(transport)
    return transport, inbound, _AsyncioStream(transport, inbound)


def test_B4_reading_pauses_past_the_high_water_mark_and_resumes_when_read() -> None:
    async def main() -> None:
        transport, inbound, stream = connected()
        inbound.data_received(b"x" * (_HIGH_WATER + 1))
        assert not transport.reading  # the rest waits in the kernel, not here
        got = 0
        while not transport.reading:
            got += len(await stream.read(65536))
        assert len(inbound.buffer) <= _HIGH_WATER // 2
        while inbound.buffer:
            got += len(await stream.read(65536))
        assert got == _HIGH_WATER + 1

    asyncio.run(main())


def test_a_read_waits_for_data_and_returns_what_arrived_in_order() -> None:
    async def main() -> None:
        _, inbound, stream = connected()
        reader = asyncio.ensure_future(stream.read(10))
        await asyncio.sleep(0)
        assert not reader.done()
        inbound.data_received(b"hello world")
        assert await reader == b"hello worl"
        assert await stream.read(10) == b"d"

    asyncio.run(main())


def test_end_of_stream_reads_empty_and_a_failure_is_a_read_error() -> None:
    async def main() -> None:
        _, inbound, stream = connected()
        inbound.data_received(b"tail")
        assert inbound.eof_received() is False
        assert await stream.read(100) == b"tail"  # what arrived before the end comes first
        assert await stream.read(100) == b""
        _, broken, broken_stream = connected()
        reader = asyncio.ensure_future(broken_stream.read(100))
        await asyncio.sleep(0)
        broken.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(httpcore.ReadError, match="reset by peer"):
            await reader

    asyncio.run(main())


def test_B1_a_requests_head_and_body_go_out_together_on_the_read() -> None:
    """httpcore writes a request's head and body separately; the stream hands both to the
    transport in one write (one send) when the response is read, in order, and not before."""

    async def main() -> None:
        transport, inbound, stream = connected()
        await stream.write(b"POST / HTTP/1.1\r\n\r\n")
        await stream.write(b'{"jsonrpc": "2.0"}')
        await stream.write(b"")
        assert transport.written == []
        inbound.data_received(b"HTTP/1.1 200 OK\r\n")
        assert await stream.read(100) == b"HTTP/1.1 200 OK\r\n"
        assert transport.written == [b'POST / HTTP/1.1\r\n\r\n{"jsonrpc": "2.0"}']
        await stream.write(b"held")
        await stream.aclose()  # a closed stream sends nothing it held
        assert transport.written == [b'POST / HTTP/1.1\r\n\r\n{"jsonrpc": "2.0"}']

    asyncio.run(main())


BIG = b"x" * (COALESCE_LIMIT + 1)  # large writes are not held


def test_a_write_waits_while_the_transport_is_full() -> None:
    async def main() -> None:
        transport, inbound, stream = connected()
        await stream.write(b"head")
        inbound.pause_writing()
        writer = asyncio.ensure_future(stream.write(BIG))
        await asyncio.sleep(0)
        assert transport.written == [b"head", BIG] and not writer.done()
        inbound.resume_writing()
        await writer
        await stream.write(b"")  # nothing to write: no call
        assert transport.written == [b"head", BIG]
        inbound.pause_writing()
        writer = asyncio.ensure_future(stream.write(BIG))
        await asyncio.sleep(0)
        inbound.connection_lost(BrokenPipeError("broken pipe"))
        with pytest.raises(httpcore.WriteError, match="broken pipe"):
            await writer
        transport.closed = True
        with pytest.raises(httpcore.WriteError):
            await stream.write(b"after the end")

    asyncio.run(main())


def test_read_and_write_timeouts_are_httpcore_timeouts() -> None:
    async def main() -> None:
        _, inbound, stream = connected()
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(10, timeout=0.01)
        inbound.pause_writing()
        with pytest.raises(httpcore.WriteTimeout):
            await stream.write(BIG, timeout=0.01)

    asyncio.run(main())


def test_an_idle_connection_the_server_closed_reads_as_readable() -> None:
    """httpcore asks ``is_readable`` of idle connections: true means closed (or junk)."""

    async def main() -> None:
        _, inbound, stream = connected()
        assert stream.get_extra_info("server_addr") == ("127.0.0.1", 1)
        assert stream.get_extra_info("client_addr") == ("127.0.0.1", 2)
        assert stream.get_extra_info("is_readable") is True  # no socket: counts as gone
        inbound.eof_received()
        assert stream.get_extra_info("is_readable") is True
        await stream.aclose()

    asyncio.run(main())


def test_what_arrived_counts_for_the_bodys_end_read_or_not() -> None:
    """The end of a chunked body that arrived but httpcore has not read yet counts: reading
    it will not wait. A request written starts over."""

    async def main() -> None:
        _, inbound, stream = connected()
        await stream.write(b"POST / HTTP/1.1\r\n\r\n")
        inbound.data_received(b"HTTP/1.1 200 OK\r\n\r\n9\r\ndata: 1\n\n\r\n")
        assert await stream.read(19) == b"HTTP/1.1 200 OK\r\n\r\n"
        assert not stream.read_tail().endswith(b"\r\n0\r\n\r\n")
        inbound.data_received(b"0\r\n\r\n")
        assert stream.read_tail().endswith(b"\r\n0\r\n\r\n")  # not read yet
        while inbound.buffer:
            await stream.read(4)
        assert stream.read_tail().endswith(b"\r\n0\r\n\r\n")
        await stream.write(b"POST / HTTP/1.1\r\n\r\n")
        assert stream.read_tail() == b""

    asyncio.run(main())


def test_D1_a_connection_closed_with_a_request_unsent_lets_its_socket_go_at_once() -> None:
    """A request cut short while the server stopped reading (an abort, a deadline) leaves
    bytes in the transport; closing then drops them and the socket, rather than holding
    both until the server reads again, which may be never."""
    import socket

    import anyio

    from mcpcore_anyio._network import _NetworkBackend

    async def main() -> None:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            stream = await _NetworkBackend().connect_tcp("127.0.0.1", listener.getsockname()[1])
            peer, _ = listener.accept()  # and never read
            with peer:
                sock = stream.get_extra_info("socket")
                with anyio.move_on_after(0.5):
                    await stream.write(b"x" * (16 << 20))  # past every buffer: it waits
                await stream.aclose()
                for _ in range(10):
                    await asyncio.sleep(0)
                assert sock.fileno() == -1

    asyncio.run(main())


def test_an_http11_connection_reuses_itself_refuses_a_second_request_and_writes_nothing_when_cancelled() -> (
    None
):
    """``_http11.Http11`` (the pool's HTTP/1.1, with no lock): a response read to its end
    and closed leaves the connection idle for the next request; a request on a busy
    connection is ``ConnectionNotAvailable``; an exchange cancelled before it starts
    writes nothing (what httpcore's lock acquire did); a body cut short closes it."""
    import anyio

    from mcpcore_anyio._http11 import Http11

    origin = httpcore.Origin(b"http", b"127.0.0.1", 80)

    def request() -> httpcore.Request:
        return httpcore.Request(
            "POST",
            "http://127.0.0.1/mcp",
            headers=[(b"Host", b"127.0.0.1"), (b"content-length", b"2")],
            content=b"{}",
        )

    async def exchange(connection: Http11, inbound: _Inbound, reply: bytes) -> bytes:
        inbound.data_received(reply)
        response = await connection.handle_async_request(request())
        body = b"".join([chunk async for chunk in response.aiter_stream()])
        await response.aclose()
        return body

    async def main() -> None:
        transport, inbound, stream = connected()
        connection = Http11(origin, stream)
        reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
        assert await exchange(connection, inbound, reply) == b"{}"
        assert connection.is_idle() and connection.is_available()
        assert await exchange(connection, inbound, reply) == b"{}"
        assert "Request Count: 2" in connection.info()
        assert len(transport.written) == 2

        inbound.data_received(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n{")
        response = await connection.handle_async_request(request())
        assert not connection.is_idle()
        with pytest.raises(httpcore.ConnectionNotAvailable):
            await connection.handle_async_request(request())
        await response.aclose()  # before its end: the connection cannot be reused
        assert connection.is_closed() and transport.closed

        transport, inbound, stream = connected()
        connection = Http11(origin, stream)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await connection.handle_async_request(request())
        assert scope.cancelled_caught
        assert transport.written == [] and connection.info().endswith("NEW, Request Count: 0")

    asyncio.run(main())
