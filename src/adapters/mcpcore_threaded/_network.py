"""The threaded driver's network layer over httpcore: abortable reads, stream ends.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import select
import socket
import ssl
import threading
from typing import TYPE_CHECKING, Any

import httpcore

if TYPE_CHECKING:
    from ._client import _Readers


class AbortableStream(httpcore.NetworkStream):
    """A network stream that another thread can break out of a blocking read."""

    def __init__(self, inner: httpcore.NetworkStream, readers: _Readers) -> None:
        self._inner = inner
        self._readers = readers

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        ident = threading.get_ident()
        if not self._readers.reading_starts(ident, self):
            self.abort()
            raise httpcore.ReadError("the exchange was aborted")
        try:
            return self._inner.read(max_bytes, timeout)
        finally:
            self._readers.reading_ends(ident)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        return AbortableStream(
            self._inner.start_tls(ssl_context, server_hostname, timeout), self._readers
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def abort(self) -> None:
        """Shut the socket down: a read blocked on it returns at once."""
        sock = self._inner.get_extra_info("socket")
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _AbortableBackend(httpcore.SyncBackend):
    def __init__(self, readers: _Readers) -> None:
        self._readers = readers

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return AbortableStream(super().connect_tcp(*args, **kwargs), self._readers)


def connection_pool(
    ssl_context: ssl.SSLContext | None, max_connections: int, readers: _Readers
) -> httpcore.ConnectionPool:
    """The client's pool: no retries (the engine decides), reads abortable by thread."""
    return httpcore.ConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        retries=0,
        network_backend=_AbortableBackend(readers),
    )


# How long a caller whose call is done waits for its stream's end to arrive
# before leaving the rest to a thread: a server that ends the stream right
# after the response (as the specification asks) is well within it.
_END_GRACE = 0.005


def ends_without_waiting(response: httpcore.Response, received: int) -> bool:
    """Whether reading the rest of ``response`` cannot wait on the server.

    True when its whole ``Content-Length`` body has arrived, or bytes are
    already waiting (read ahead by the HTTP parser, or on the socket within
    ``_END_GRACE``) for a stream that is ending. Otherwise the server may
    hold the stream open (P6's linger), and the caller should not wait.
    """
    for name, value in response.headers:
        if name.lower() == b"content-length":
            return value.strip().isdigit() and received >= int(value)
    # The end of a chunked body usually arrived with its last chunk and sits in
    # h11's buffer. httpcore does not expose its h11 connection, so look for it
    # without relying on it: when it is not found, the rest is handed off.
    parser = getattr(
        getattr(getattr(response.stream, "_stream", None), "_connection", None), "_h11_state", None
    )
    buffered = getattr(parser, "trailing_data", (b"",))[0]
    # a chunk's own closing CRLF stays in the buffer; anything past it is more
    if isinstance(buffered, bytes) and buffered.removeprefix(b"\r\n"):
        return True
    stream = response.extensions.get("network_stream")
    sock = None if stream is None else stream.get_extra_info("socket")
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], _END_GRACE)
    except (OSError, ValueError):
        return False
    return bool(readable)
