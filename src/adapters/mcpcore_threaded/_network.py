"""The threaded driver's network layer over httpcore: its pool, abortable reads, stream ends.

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

from mcpcore_httpcore import COALESCE_LIMIT, REPLACES_HTTPCORE_POOL, LazyAssignment

if TYPE_CHECKING:
    from ._client import _Readers


_SocketStream: type[httpcore.NetworkStream] | None
try:  # the plain socket stream of httpcore's sync backend, whose socket we use directly
    from httpcore._backends.sync import SyncStream as _SocketStream
except ImportError:  # pragma: no cover - a later httpcore: every read goes through it
    _SocketStream = None

_UNSET = object()  # a socket timeout not set yet


class AbortableStream(httpcore.NetworkStream):
    """A network stream that another thread can break out of a blocking read.

    Over httpcore's plain socket stream (TCP, or TLS on TCP) it reads and
    writes the socket itself: httpcore sets the socket's timeout before every
    read and write, a system call each that also lets other threads take the
    GIL; here it is set only when it changes. A request's head and body come
    as separate writes and its response is always read next, so small writes
    are held and sent together on that read: one system call and one segment.
    """

    def __init__(self, inner: httpcore.NetworkStream, readers: _Readers) -> None:
        self._inner = inner
        self._readers = readers
        self._sock: socket.socket | None = (
            inner.get_extra_info("socket")
            if _SocketStream is not None and type(inner) is _SocketStream
            else None
        )
        self._timeout: object = _UNSET
        self._unsent = b""
        self._unsent_timeout: float | None = None

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        ident = threading.get_ident()
        if not self._readers.reading_starts(ident, self):
            self.abort()
            raise httpcore.ReadError("the exchange was aborted")
        try:
            if self._unsent:
                self._send_unsent()
            sock = self._sock
            if sock is None:
                return self._inner.read(max_bytes, timeout)
            try:
                self._set_timeout(sock, timeout)
                return sock.recv(max_bytes)
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(exc) from exc
            except OSError as exc:
                raise httpcore.ReadError(exc) from exc
        finally:
            self._readers.reading_ends(ident)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if self._sock is not None and len(self._unsent) + len(buffer) <= COALESCE_LIMIT:
            self._unsent += buffer
            self._unsent_timeout = timeout
            return
        if self._unsent:
            self._send_unsent()
        self._send(buffer, timeout)

    def _send_unsent(self) -> None:
        unsent, self._unsent = self._unsent, b""
        self._send(unsent, self._unsent_timeout)

    def _send(self, buffer: bytes, timeout: float | None) -> None:
        sock = self._sock
        if sock is None:
            self._inner.write(buffer, timeout)
            return
        try:
            self._set_timeout(sock, timeout)
            sock.sendall(buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.WriteError(exc) from exc

    def _set_timeout(self, sock: socket.socket, timeout: float | None) -> None:
        if timeout != self._timeout:
            sock.settimeout(timeout)
            self._timeout = timeout

    def close(self) -> None:
        self._unsent = b""
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        if self._unsent:
            self._send_unsent()
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


class LazyPool(LazyAssignment, httpcore.ConnectionPool):
    """httpcore's pool, idle connections checked only when about to be used."""


class _AbortableBackend(httpcore.SyncBackend):
    def __init__(self, readers: _Readers) -> None:
        self._readers = readers

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        return AbortableStream(super().connect_tcp(*args, **kwargs), self._readers)


def connection_pool(
    ssl_context: ssl.SSLContext | None, max_connections: int, readers: _Readers
) -> httpcore.ConnectionPool:
    """The client's pool: no retries (the engine decides), reads abortable by thread."""
    pool_class = LazyPool if REPLACES_HTTPCORE_POOL else httpcore.ConnectionPool
    return pool_class(
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
