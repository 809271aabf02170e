"""The anyio driver's network layer over httpcore: its connection pool and backend.

Owns ``connection_pool`` and ``AsyncPool`` (the client's pool: its own
``Connection``s, each connecting and then performing its requests with
``_http11.Http11``, or httpcore's HTTP proxy pool, on the backend below), the network backend (connections straight on asyncio's transports; on
trio, httpcore's trio backend), ``http_request`` (an
``HttpRequest`` as httpcore's request), ``response_body`` (a response's
chunks and its close) and ``ends_without_waiting``
(whether the rest of a response can be read without waiting on the server).
Only httpcore's public API: its connection and proxy classes, the
``AsyncConnectionInterface``, ``default_ssl_context``, ``TrioBackend`` and the
``AsyncNetworkStream`` interface.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, cast

import anyio
import httpcore

from mcpcore_httpcore import (
    BodyEnd,
    HeldWrites,
    PoolBase,
    PooledBody,
    Route,
    Waiter,
    body_end_arrived,
    build_request,
    sending_through_proxy,
    wait_readable,
)

from ._http11 import Http11


def http_request(
    method: str,
    url: str,
    headers: list[tuple[bytes, bytes]],
    framed: tuple[int, AsyncIterable[bytes]] | None,
    replayable: bool = False,
) -> httpcore.Request:
    """The request httpcore's ``stream(method, url, headers=, content=)`` would build
    (``mcpcore_httpcore.build_request``).

    ``framed``: the body's length and the body as one chunk (an iterable that
    starts over each time it is iterated: the pool may send it again), or None
    for no body. ``replayable`` is the core's ``HttpRequest.replayable``: the
    pool may send it again (``AsyncPool``).
    """
    if framed is None:
        return build_request(method, url, headers, None, None, replayable)
    length, content = framed
    return build_request(
        method, url, headers, content, (b"content-length", b"%d" % length), replayable
    )


def connection_pool(
    ssl_context: ssl.SSLContext | None,
    max_connections: int,
    *,
    proxy: Route | str | None = None,
) -> AsyncPool:
    """The client's pool: the lean asyncio streams, no retries (the engine decides)
    but one: a request broken on a kept-alive connection goes once more on a new
    one when ``sent_again_after`` allows it (D3).

    ``proxy`` is the core's choice per origin (``ClientSetup.outbound.proxy_for_origin``:
    an http:// or https:// URL, credentials allowed, or None for direct), or one
    proxy URL for every request. A proxied request goes through a pool of
    httpcore's for its proxy: https URLs through a CONNECT tunnel, http ones
    forwarded. ``ssl_context`` is for the servers; an https proxy is checked
    with httpcore's default context.
    """
    return AsyncPool(ssl_context, max_connections, _NetworkBackend(), proxy)


class Connection(httpcore.AsyncConnectionInterface):
    """One of ``AsyncPool``'s connections: connects on its first request, then
    performs every request on that stream with ``_http11.Http11``.

    What httpcore's ``AsyncHTTPConnection`` over its ``AsyncHTTP11Connection``
    does for an HTTP/1.1 connection with no retries, without their locks: the
    pool gives a connection to one request at a time, and each lock's acquire
    cost an event-loop turn (an ``anyio.Lock`` checkpoints even when free),
    three a request. The checks (``is_idle`` and the rest) answer as
    ``AsyncHTTPConnection``'s do: before a connection exists, a failed
    connect reads as idle, closed and expired.
    """

    def __init__(
        self,
        origin: httpcore.Origin,
        ssl_context: ssl.SSLContext | None,
        backend: httpcore.AsyncNetworkBackend,
    ) -> None:
        self._origin = origin
        self._ssl_context = ssl_context
        self._backend = backend
        self._http11: Http11 | None = None
        self._connect_failed = False

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if not self.can_handle_request(request.url.origin):
            raise RuntimeError(
                f"Attempted to send request to {request.url.origin} on connection to {self._origin}"
            )
        http11 = self._http11
        if http11 is None:
            try:
                stream = await self._connect(request)
            except BaseException:
                self._connect_failed = True
                raise
            http11 = self._http11 = Http11(self._origin, stream)
        return await http11.handle_async_request(request)

    async def _connect(self, request: httpcore.Request) -> httpcore.AsyncNetworkStream:
        timeout = request.extensions.get("timeout", {}).get("connect")
        host = self._origin.host.decode("ascii")
        stream = await self._backend.connect_tcp(host, self._origin.port, timeout)
        if self._origin.scheme not in (b"https", b"wss"):
            return stream
        ssl_context = self._ssl_context or httpcore.default_ssl_context()
        ssl_context.set_alpn_protocols(["http/1.1"])
        server_hostname = request.extensions.get("sni_hostname") or host
        return await stream.start_tls(ssl_context, server_hostname, timeout)

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return origin == self._origin

    @property
    def network_stream(self) -> httpcore.AsyncNetworkStream | None:
        """The stream its requests go over, once connected."""
        return None if self._http11 is None else self._http11.stream

    async def aclose(self) -> None:
        if self._http11 is not None:
            await self._http11.aclose()

    def is_available(self) -> bool:
        return self._http11 is not None and self._http11.is_available()

    def has_expired(self) -> bool:
        return self._connect_failed if self._http11 is None else self._http11.has_expired()

    def is_idle(self) -> bool:
        return self._connect_failed if self._http11 is None else self._http11.is_idle()

    def is_closed(self) -> bool:
        return self._connect_failed if self._http11 is None else self._http11.is_closed()

    def info(self) -> str:
        if self._http11 is None:
            return "CONNECTION FAILED" if self._connect_failed else "CONNECTING"
        return self._http11.info()

    def __repr__(self) -> str:
        return f"<Connection [{self.info()}]>"


class AsyncPool(
    PoolBase[Connection, httpcore.AsyncHTTPProxy, httpcore.AsyncNetworkBackend],
    httpcore.AsyncConnectionInterface,
):
    """The client's connections: HTTP/1.1, one request per connection at a time.

    ``_http11.Http11`` does each exchange (on a ``Connection``);
    which connection takes which request is ``mcpcore_httpcore.Connections``'s, with no await
    in between (one event loop: no lock). A request that breaks on a
    kept-alive connection goes once more, on a new connection, when
    ``sent_again_after`` allows it (D3). With a proxy, httpcore's
    ``AsyncHTTPProxy`` pool does it all instead (its tunnels are not public
    classes; it sends nothing again; whether a request went out whole before it
    failed is told around it, ``sending_through_proxy``: U3). ``request`` and
    ``stream`` are httpcore's; what does not wait is ``mcpcore_httpcore.PoolBase``'s.
    """

    _connection_type = Connection
    _proxy_type = httpcore.AsyncHTTPProxy

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        via = self._proxy_for(request)
        if via is not None:
            with sending_through_proxy(request):  # U3: did it go out whole before failing?
                return await via.handle_async_request(request)
        timeouts = request.extensions.get("timeout", {})
        again = False
        while True:
            connection = await self._take(request.url.origin, timeouts.get("pool"), again)
            kept_alive = connection.is_idle()  # it served a request before
            stream = connection.network_stream
            if isinstance(stream, BodyEnd):
                stream.saw_request_begin()  # U3: nothing of this request went out yet
            try:
                response = await connection.handle_async_request(request)
            except BaseException as exc:
                await self._give_back(connection)
                retry = self._again_after(
                    exc, request, connection.network_stream, again=again, kept_alive=kept_alive
                )
                if retry is None:
                    raise
                again = retry
                continue
            # its body gives the connection back when closed; the response itself is
            # httpcore's (a new one would check every header again)
            response.stream = _Body(response.stream, self, connection)
            return response

    async def _take(
        self, origin: httpcore.Origin, timeout: float | None, fresh: bool = False
    ) -> Connection:
        connection, closing = self._book.take(origin, fresh=fresh)
        if closing:
            await _close(closing)
        if connection is not None:
            return connection
        handed = anyio.Event()
        waiter: Waiter[Connection] = Waiter(origin, handed.set)
        self._book.waiting.append(waiter)
        try:
            with anyio.fail_after(timeout):
                await handed.wait()
        except BaseException as exc:
            closing = self._book.withdraw(waiter)
            if closing:
                await _close(closing)
            if isinstance(exc, TimeoutError):
                raise httpcore.PoolTimeout(f"no connection within {timeout} s") from None
            raise
        assert waiter.connection is not None
        return waiter.connection

    async def _give_back(self, connection: Connection) -> None:
        closing = self._book.give_back(connection)
        if closing:
            await _close(closing)

    async def aclose(self) -> None:
        for via in self._via.pools:
            await via.aclose()
        await _close(self._book.close_all())

    async def __aenter__(self) -> AsyncPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _close(connections: list[Connection]) -> None:
    # shielded: a connection left half closed by a cancellation would leak its socket
    with anyio.CancelScope(shield=True):
        for connection in connections:
            await connection.aclose()


class _Body(PooledBody[AsyncPool, Connection]):
    """A response body that gives its connection back to the pool when closed."""

    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[bytes]:
        stream: AsyncIterable[bytes] = self._stream
        return stream.__aiter__()

    async def aclose(self) -> None:
        connection = self.release()
        if connection is None:
            return
        try:
            await self._stream.aclose()
        finally:
            await self._pool._give_back(connection)


def response_body(
    response: httpcore.Response,
) -> tuple[AsyncIterator[bytes], Callable[[], Awaitable[None]]]:
    """The chunks of ``response``'s body, and what closes it.

    What ``response.aiter_stream()`` and ``response.aclose()`` do for an async
    response, without the async generator ``aiter_stream`` puts around every
    chunk and the ABC checks (``typing.AsyncIterable``) both make on each call.
    """
    stream = cast("_Body", response.stream)  # ours, or an httpcore proxy pool's: both have these
    return stream.__aiter__(), stream.aclose


def ends_without_waiting(response: Any, received: int) -> bool:
    """Whether reading the rest of ``response`` cannot wait on the server.

    True when its whole ``Content-Length`` body has arrived, or the end of a
    chunked body has arrived (read by httpcore, or received and not read yet).
    Otherwise the server may hold the stream open (P6's linger), and the
    caller should not wait for it. Any response: one without a network stream
    of this module's (the in-process ASGI one) goes by its ``Content-Length``.
    """
    return bool(body_end_arrived(response, received))


_NO_DEADLINE = contextlib.nullcontext()

# Stop reading from a connection whose unread bytes pass this, until they are read:
# a large reply then waits in the kernel, not in this process (B4).
_HIGH_WATER = 1 << 20


class _Inbound(asyncio.Protocol):
    """What an asyncio connection has received (bytes, end, failure) and its write state."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # the peer closed its side, or the connection is gone
        self.failure: BaseException | None = None
        self.reading_paused = False
        self.writing_paused = False
        self._readable: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True
        self._wake_reader()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake_reader()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.failure = exc
        self._wake_reader()
        self._wake_writer()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._wake_writer()

    async def readable(self) -> None:
        self._readable = asyncio.get_running_loop().create_future()
        try:
            await self._readable
        finally:
            self._readable = None

    async def writable(self) -> None:
        while self.writing_paused and not self.ended:
            self._writable = asyncio.get_running_loop().create_future()
            try:
                await self._writable
            finally:
                self._writable = None

    def _wake_reader(self) -> None:
        if self._readable is not None and not self._readable.done():
            self._readable.set_result(None)

    def _wake_writer(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)


def _socket_readable(sock: socket.socket | None) -> bool:
    """Whether a read would not block; a socket that is gone counts as readable."""
    return sock is None or wait_readable(sock, 0)


class _AsyncioStream(BodyEnd, HeldWrites, httpcore.AsyncNetworkStream):
    """A connection straight on asyncio's transport and protocol.

    httpcore's own anyio stream spends an event-loop turn (a checkpoint) and a
    cancel scope on every read and write, and builds all of a socket's
    attributes whenever the pool asks whether an idle connection was closed;
    on a call that was a fifth of the client's CPU. Here a write is a
    transport write, a read returns what has arrived or waits for it, and
    "was it closed?" is a look at what the protocol has seen. Cancellation
    is the task's own (anyio cancel scopes on asyncio cancel the task).
    """

    def __init__(self, transport: asyncio.Transport, inbound: _Inbound) -> None:
        self._transport = transport
        self._inbound = inbound

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        inbound = self._inbound
        if self._unsent:
            self._send_unsent()
        self.saw_sent()  # every write went out, unless one failed (then it is not)
        if not inbound.buffer and not inbound.ended:
            try:
                # the drivers' exchanges pass no timeout (the engine keeps the deadlines):
                # no cancel scope for those
                with _NO_DEADLINE if timeout is None else anyio.fail_after(timeout):
                    while not inbound.buffer and not inbound.ended:
                        await inbound.readable()
            except TimeoutError:
                raise httpcore.ReadTimeout("no data within the read timeout") from None
        if inbound.buffer:
            data = bytes(inbound.buffer[:max_bytes])
            del inbound.buffer[:max_bytes]
            if inbound.reading_paused and len(inbound.buffer) <= _HIGH_WATER // 2:
                inbound.reading_paused = False
                self._transport.resume_reading()
            self.saw_read(data)
            return data
        if inbound.failure is not None:
            raise httpcore.ReadError(str(inbound.failure)) from inbound.failure
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.saw_written()
        if not buffer:
            return
        inbound = self._inbound
        if inbound.ended and self._transport.is_closing():
            self.saw_write_fail()
            raise httpcore.WriteError(str(inbound.failure or "the connection is closed"))
        # A request's head and body come as separate writes and its response is
        # read next: small ones are held and go out together on that read.
        if self.hold(buffer):
            return
        if self._unsent:
            self._send_unsent()
        self._transmit(buffer)
        if inbound.writing_paused:
            try:
                with anyio.fail_after(timeout):
                    await inbound.writable()
            except TimeoutError:
                self.saw_write_fail()
                raise httpcore.WriteTimeout("could not write within the write timeout") from None
        if inbound.failure is not None:
            self.saw_write_fail()
            raise httpcore.WriteError(str(inbound.failure)) from inbound.failure

    def _send_unsent(self) -> None:
        self._transmit(self.take_held())  # within the transport's buffer limit: no waiting

    def _transmit(self, data: bytes) -> None:
        transport = self._transport
        closing = transport.is_closing()
        transport.write(data)
        if transport.is_closing() and not closing:
            # The send failed (a reset): asyncio closes the transport at once and
            # tells the protocol only on its next turn. None of it went out.
            self.saw_write_fail()

    async def aclose(self) -> None:
        self._unsent = b""
        if self._transport.get_extra_info("sslcontext") is not None:
            # No TLS close_notify exchange (httpcore's own streams send none either):
            # a TLS transport's close() keeps the socket open until the peer answers
            # it, up to half a minute, past the end of the event loop.
            self._transport.abort()
        elif self._transport.get_write_buffer_size():
            # a request cut short (aborted while its body waited on a server that stopped
            # reading): close() would keep the socket until the server took the rest (D1)
            self._transport.abort()
        else:
            self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._unsent:
            self._send_unsent()
        loop = asyncio.get_running_loop()
        try:
            with anyio.fail_after(timeout):
                transport = await loop.start_tls(
                    self._transport,
                    self._inbound,
                    ssl_context,
                    server_hostname=server_hostname,
                    ssl_handshake_timeout=timeout,
                )
        except TimeoutError:
            self._transport.abort()
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.abort()
            raise httpcore.ConnectError(str(exc)) from exc
        except BaseException:  # cancelled (an abort, a deadline): nothing waits for the peer
            self._transport.abort()
            raise
        if transport is None:  # pragma: no cover - the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._inbound.transport = transport
        return _AsyncioStream(transport, self._inbound)

    def read_tail(self) -> bytes:
        # what has arrived counts, read or not: httpcore reads it next, without waiting
        unread = self._inbound.buffer
        if not unread:
            return self._tail
        return self._tail + bytes(unread[-16:])

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # for an idle connection: did the server close it?
            inbound = self._inbound
            if inbound.buffer or inbound.ended:
                return True
            # what has arrived but the event loop has not read yet (a close just now)
            return _socket_readable(self._transport.get_extra_info("socket"))
        names = {"client_addr": "sockname", "server_addr": "peername"}
        return self._transport.get_extra_info(names.get(info, info))


class _Watched(BodyEnd, httpcore.AsyncNetworkStream):
    """Another backend's stream (httpcore's trio one), its bytes seen for ``BodyEnd``."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.saw_sent()  # every write before it was awaited whole (a failed one is marked)
        data = await self._inner.read(max_bytes, timeout)
        self.saw_read(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.saw_written()
        try:
            await self._inner.write(buffer, timeout)
        except Exception:
            self.saw_write_fail()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            return _Watched(await self._inner.start_tls(ssl_context, server_hostname, timeout))
        except BaseException:
            # httpcore's trio stream closes itself when the handshake fails, not when it
            # is cancelled (an abort, a deadline): closed here, or its socket stays open
            with anyio.CancelScope(shield=True):
                await self._inner.aclose()
            raise

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _NetworkBackend(httpcore.AsyncNetworkBackend):
    """Connections straight on asyncio (``_AsyncioStream``); on trio, httpcore's trio backend."""

    def __init__(self) -> None:
        self._trio: httpcore.AsyncNetworkBackend | None = None

    def _on_asyncio(self) -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if not self._on_asyncio():
            if self._trio is None:
                self._trio = httpcore.TrioBackend()
            return _Watched(
                await self._trio.connect_tcp(host, port, timeout, local_address, socket_options)
            )
        loop = asyncio.get_running_loop()
        inbound = _Inbound()
        try:
            with anyio.fail_after(timeout):
                transport, _ = await loop.create_connection(
                    lambda: inbound,
                    host,
                    port,
                    local_addr=None if local_address is None else (local_address, 0),
                )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"could not connect within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        assert isinstance(transport, asyncio.Transport)
        return _AsyncioStream(transport, inbound)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)
