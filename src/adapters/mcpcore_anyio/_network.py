"""The anyio driver's network layer over httpcore: its connection pool and backend.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore

from mcpcore_httpcore import COALESCE_LIMIT, REPLACES_HTTPCORE_POOL, LazyAssignment


def connection_pool(
    ssl_context: ssl.SSLContext | None, max_connections: int
) -> httpcore.AsyncConnectionPool:
    """The client's pool: no retries (the engine decides), the lean asyncio streams."""
    pool_class = LazyPool if REPLACES_HTTPCORE_POOL else httpcore.AsyncConnectionPool
    return pool_class(
        ssl_context=ssl_context,
        max_connections=max_connections,
        retries=0,
        network_backend=_NetworkBackend(),
    )


class LazyPool(LazyAssignment, httpcore.AsyncConnectionPool):
    """httpcore's async pool, idle connections checked only when about to be used."""


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
    if sock is None or sock.fileno() == -1:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _AsyncioStream(httpcore.AsyncNetworkStream):
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
        self._unsent = b""

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        inbound = self._inbound
        if self._unsent:
            self._send_unsent()
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
            return data
        if inbound.failure is not None:
            raise httpcore.ReadError(str(inbound.failure)) from inbound.failure
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        inbound = self._inbound
        if inbound.ended and self._transport.is_closing():
            raise httpcore.WriteError(str(inbound.failure or "the connection is closed"))
        # A request's head and body come as separate writes and its response is
        # read next: small ones are held and go out together on that read.
        if len(self._unsent) + len(buffer) <= COALESCE_LIMIT:
            self._unsent += buffer
            return
        if self._unsent:
            self._send_unsent()
        self._transport.write(buffer)
        if inbound.writing_paused:
            try:
                with anyio.fail_after(timeout):
                    await inbound.writable()
            except TimeoutError:
                raise httpcore.WriteTimeout("could not write within the write timeout") from None
        if inbound.failure is not None:
            raise httpcore.WriteError(str(inbound.failure)) from inbound.failure

    def _send_unsent(self) -> None:
        unsent, self._unsent = self._unsent, b""
        self._transport.write(unsent)  # within the transport's buffer limit: no waiting

    async def aclose(self) -> None:
        self._unsent = b""
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
        if transport is None:  # pragma: no cover - the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._inbound.transport = transport
        return _AsyncioStream(transport, self._inbound)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # for an idle connection: did the server close it?
            inbound = self._inbound
            if inbound.buffer or inbound.ended:
                return True
            # what has arrived but the event loop has not read yet (a close just now)
            return _socket_readable(self._transport.get_extra_info("socket"))
        names = {"client_addr": "sockname", "server_addr": "peername"}
        return self._transport.get_extra_info(names.get(info, info))


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
            return await self._trio.connect_tcp(host, port, timeout, local_address, socket_options)
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
