"""The anyio driver's network layer over httpcore: its connection pool and backend.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import anyio
import httpcore


def connection_pool(
    ssl_context: ssl.SSLContext | None, max_connections: int
) -> httpcore.AsyncConnectionPool:
    """The client's pool: no retries (the engine decides), sockets kept at hand."""
    return httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        retries=0,
        network_backend=_NetworkBackend(),
    )


class _CachedSocketStream(httpcore.AsyncNetworkStream):
    """An anyio network stream that keeps its socket at hand.

    httpcore's pool asks each connection whether its socket is readable
    (``is_readable``: did the server close it?) every time it assigns a
    request, and anyio builds all of a socket's attributes to find the socket:
    with calls in flight that was the largest single cost of a call.
    """

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _CachedSocketStream(
            await self._inner.start_tls(ssl_context, server_hostname, timeout)
        )

    def get_extra_info(self, info: str) -> Any:
        if info == "socket":
            return self._socket
        if info == "is_readable":
            return _socket_readable(self._socket)
        return self._inner.get_extra_info(info)


def _socket_readable(sock: socket.socket | None) -> bool:
    """Whether a read would not block; a socket that is gone counts as readable."""
    if sock is None or sock.fileno() == -1:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _NetworkBackend(httpcore.AsyncNetworkBackend):
    """httpcore's own choice (trio's backend on trio, anyio's otherwise), with cached sockets."""

    def __init__(self) -> None:
        self._anyio = httpcore.AnyIOBackend()
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
        if self._on_asyncio():
            stream = await self._anyio.connect_tcp(
                host, port, timeout, local_address, socket_options
            )
            return _CachedSocketStream(stream)
        if self._trio is None:
            self._trio = httpcore.TrioBackend()
        return await self._trio.connect_tcp(host, port, timeout, local_address, socket_options)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)
