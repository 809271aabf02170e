"""The threaded driver's network layer over httpcore: its pool, abortable reads, stream ends.

Owns ``connection_pool`` and ``Pool`` (the client's pool: its own over
httpcore's ``HTTPConnection``, or httpcore's HTTP proxy pool, on the streams
below), ``AbortableStream`` (a network stream another thread can break out
of a read) and ``ends_without_waiting`` (whether the rest of a response can
be read without waiting on the server). Only httpcore's public API: its
connection and proxy classes, ``SyncBackend`` and the ``NetworkStream``
interface, whose ``get_extra_info("socket")`` is a documented extension.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import httpcore

from mcpcore_httpcore import (
    COALESCE_LIMIT,
    BodyEnd,
    Connections,
    ProxyRoutes,
    Route,
    Waiter,
    body_end_arrived,
    wait_readable,
)

if TYPE_CHECKING:
    from ._client import _Readers

_UNSET = object()  # a socket timeout not set yet


class AbortableStream(BodyEnd, httpcore.NetworkStream):
    """A network stream that another thread can break out of a blocking read.

    Given ``sock``, the socket ``inner`` itself reads and writes (a plain TCP
    stream of httpcore's ``SyncBackend``, or TLS straight on one), it reads
    and writes that socket directly: httpcore sets the socket's timeout
    before every read and write, a system call each that also lets other
    threads take the GIL; here it is set only when it changes. Otherwise
    (TLS inside TLS, through an https proxy) every read and write goes
    through ``inner``. A request's head and body come as separate writes and
    its response is always read next, so small writes are held and sent
    together on that read: one system call and one segment.
    """

    def __init__(
        self, inner: httpcore.NetworkStream, readers: _Readers, sock: socket.socket | None = None
    ) -> None:
        self._inner = inner
        self._readers = readers
        self._sock = sock
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
                data = self._inner.read(max_bytes, timeout)
            else:
                try:
                    self._set_timeout(sock, timeout)
                    data = sock.recv(max_bytes)
                except TimeoutError as exc:
                    raise httpcore.ReadTimeout(exc) from exc
                except OSError as exc:
                    raise httpcore.ReadError(exc) from exc
            self.saw_read(data)
            return data
        finally:
            self._readers.reading_ends(ident)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.saw_written()
        if len(self._unsent) + len(buffer) <= COALESCE_LIMIT:
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
        plain = self._sock
        fd = None if plain is None or isinstance(plain, ssl.SSLSocket) else plain.fileno()
        inner = self._inner.start_tls(ssl_context, server_hostname, timeout)
        # Straight on the socket only when the TLS layer is an SSLSocket on the
        # very connection this stream had on its own socket: the first TLS layer.
        sock = inner.get_extra_info("socket")
        direct = fd is not None and isinstance(sock, ssl.SSLSocket) and sock.fileno() == fd
        return AbortableStream(inner, self._readers, sock if direct else None)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def abort(self) -> None:
        """Shut the socket down: a read blocked on it returns at once."""
        sock = self._sock or self._inner.get_extra_info("socket")
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _AbortableBackend(httpcore.SyncBackend):
    """httpcore's own sync backend, its streams wrapped in ``AbortableStream``."""

    def __init__(self, readers: _Readers) -> None:
        self._readers = readers

    def connect_tcp(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        inner = super().connect_tcp(*args, **kwargs)
        # a TCP stream reads and writes its socket: the documented "socket" extension
        sock = inner.get_extra_info("socket")
        plain = isinstance(sock, socket.socket) and not isinstance(sock, ssl.SSLSocket)
        return AbortableStream(inner, self._readers, sock if plain else None)


def connection_pool(
    ssl_context: ssl.SSLContext | None,
    max_connections: int,
    readers: _Readers,
    *,
    proxy: Route | str | None = None,
) -> Pool:
    """The client's pool: no retries (the engine decides), reads abortable by thread.

    ``proxy`` is the core's choice per origin (``ClientSetup.outbound.proxy_for_origin``:
    an http:// or https:// URL, credentials allowed, or None for direct), or one
    proxy URL for every request. A proxied request goes through a pool of
    httpcore's for its proxy: https URLs through a CONNECT tunnel, http ones
    forwarded. ``ssl_context`` is for the servers; an https proxy is checked
    with httpcore's default context.
    """
    return Pool(
        ssl_context,
        max_connections,
        _AbortableBackend(readers),
        proxy,
    )


class Pool(httpcore.ConnectionInterface):
    """The client's connections: HTTP/1.1, one request per connection at a time.

    httpcore's ``HTTPConnection`` does each exchange; which connection takes
    which request is ``mcpcore_httpcore.Connections``'s, under a lock. With a
    proxy, httpcore's ``HTTPProxy`` pool does it all instead (its tunnels
    are not public classes). ``request`` and ``stream`` are httpcore's.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        backend: httpcore.NetworkBackend,
        proxy: Route | str | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._book: Connections[httpcore.HTTPConnection] = Connections(
            max_connections,
            lambda origin: httpcore.HTTPConnection(
                origin, ssl_context=ssl_context, network_backend=backend
            ),
        )
        # the proxy pools, one per proxy URL the core chooses for an origin
        self._via: ProxyRoutes[httpcore.HTTPProxy] = ProxyRoutes(
            proxy,
            lambda target: httpcore.HTTPProxy(
                proxy_url=target.url,
                proxy_auth=target.auth,
                ssl_context=ssl_context,
                max_connections=max_connections,
                retries=0,
                network_backend=backend,
            ),
        )

    @property
    def connections(self) -> list[httpcore.ConnectionInterface]:
        with self._lock:
            direct, vias = list(self._book.all), self._via.pools
        return [*direct, *(c for via in vias for c in via.connections)]

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        with self._lock:  # the proxy pools are made on first use, by any thread
            via = self._via.via(request.url)
        if via is not None:
            return via.handle_request(request)
        if request.url.scheme not in (b"http", b"https"):
            raise httpcore.UnsupportedProtocol(
                f"the URL's scheme is {request.url.scheme.decode(errors='replace')!r},"
                " not http or https"
            )
        timeouts = request.extensions.get("timeout", {})
        while True:
            connection = self._take(request.url.origin, timeouts.get("pool"))
            try:
                response = connection.handle_request(request)
            except httpcore.ConnectionNotAvailable:
                self._give_back(connection)  # not idle after all: closed, and another tried
                continue
            except BaseException:
                self._give_back(connection)
                raise
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=_Body(response.stream, self, connection),
                extensions=response.extensions,
            )

    def _take(self, origin: httpcore.Origin, timeout: float | None) -> httpcore.HTTPConnection:
        with self._lock:
            connection, closing = self._book.take(origin)
            if connection is None:
                handed = threading.Event()
                waiter: Waiter[httpcore.HTTPConnection] = Waiter(origin, handed.set)
                self._book.waiting.append(waiter)
        _close(closing)
        if connection is not None:
            return connection
        try:
            if not handed.wait(timeout):
                raise httpcore.PoolTimeout(f"no connection within {timeout} s")
        except BaseException:
            with self._lock:
                closing = self._book.withdraw(waiter)
            _close(closing)
            raise
        assert waiter.connection is not None
        return waiter.connection

    def _give_back(self, connection: httpcore.HTTPConnection) -> None:
        with self._lock:
            closing = self._book.give_back(connection)
        _close(closing)

    def close(self) -> None:
        with self._lock:
            vias = self._via.pools
            closing = self._book.close_all()
        for via in vias:
            via.close()
        _close(closing)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._via.pools:
            return f"<Pool {len(self.connections)} connections, some through a proxy>"
        with self._lock:
            return f"<Pool {len(self._book.all)} connections, {len(self._book.idle)} idle>"

    # What httpcore's interface asks of a connection, for the pool as a whole.

    def info(self) -> str:
        return repr(self)

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        return True

    def is_available(self) -> bool:
        return True

    def has_expired(self) -> bool:
        return False

    def is_idle(self) -> bool:
        return not self.connections

    def is_closed(self) -> bool:
        return False


def _close(connections: list[httpcore.HTTPConnection]) -> None:
    for connection in connections:
        connection.close()


class _Body:
    """A response body that gives its connection back to the pool when closed."""

    __slots__ = ("_connection", "_pool", "_stream")

    def __init__(self, stream: Any, pool: Pool, connection: httpcore.HTTPConnection) -> None:
        self._stream = stream
        self._pool = pool
        self._connection: httpcore.HTTPConnection | None = connection

    def __iter__(self) -> Iterator[bytes]:
        stream: Iterable[bytes] = self._stream
        return iter(stream)

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            self._stream.close()
        finally:
            self._pool._give_back(connection)


# How long a caller whose call is done waits for its stream's end to arrive
# before leaving the rest to a thread: a server that ends the stream right
# after the response (as the specification asks) is well within it.
_END_GRACE = 0.005


def ends_without_waiting(response: httpcore.Response, received: int) -> bool:
    """Whether reading the rest of ``response`` cannot wait on the server.

    True when its whole ``Content-Length`` body has arrived, or the end of a
    chunked body was read (with its last chunk, usually), or bytes arrive on
    the socket within ``_END_GRACE`` for a stream that is ending. Otherwise
    the server may hold the stream open (P6's linger), and the caller should
    not wait.
    """
    arrived = body_end_arrived(response, received)
    if arrived is not None:
        return arrived
    stream = response.extensions.get("network_stream")
    sock = None if stream is None else stream.get_extra_info("socket")
    if not isinstance(sock, socket.socket):
        return False
    return wait_readable(sock, _END_GRACE)
