"""The threaded driver's network layer over httpcore: its pool, and streams an abort can end.

Owns ``connection_pool`` and ``Pool`` (the client's pool: its own over
httpcore's ``HTTPConnection``, or httpcore's HTTP proxy pool, on the backend
below; a request broken on a kept-alive connection goes once more, D3),
``AbortableBackend`` and ``AbortableStream`` (connections whose every
blocking step another thread can end: the name lookup, the connect, the TLS
handshake, each write and each read, D1), ``http_request`` (an
``HttpRequest`` as httpcore's request) and ``ends_without_waiting``
(whether the rest of a response can be read without waiting on the server).
Only httpcore's public API: its connection and proxy classes and the
``NetworkBackend`` and ``NetworkStream`` interfaces.

Imported on a client's first remote start rather than with the driver, so a
program that never talks to a remote server never loads httpcore (B5).
"""

from __future__ import annotations

import errno
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

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
    wait_writable,
)

if TYPE_CHECKING:
    from ._client import _Abort, _Performing

_UNSET = object()  # a socket timeout not set yet
_ABORTED = "the exchange was aborted"
_TLS_RECORD = 16384  # the most a TLS record holds: what a TLS-in-TLS stream reads at a time

_POLL = hasattr(select, "poll")
# How often a connect under way looks at its exchange's abort, where shutting the socket
# down does not end the connect (Linux's does at once).
_CONNECT_LOOK = 0.25
_CONNECTING = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, errno.EALREADY}

Resolve = Callable[[str, int], list[tuple[Any, ...]]]

# Linux's TCP_INFO, read with getsockopt: unlike poll, a call that keeps the GIL (see
# AbortableStream.idle_readable). Its first 136 bytes, as far as tcpi_bytes_received
# (Linux 4.1), the payload bytes the connection has received so far.
_TCP_INFO = getattr(socket, "TCP_INFO", None) if sys.platform == "linux" else None
_TCP_INFO_SIZE = 136
_TCP_ESTABLISHED = 1  # tcpi_state, the first byte
_BYTES_RECEIVED = struct.Struct("=Q")  # at offset 128


def _resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def http_request(
    method: str,
    url: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes | None,
    replayable: bool = False,
) -> httpcore.Request:
    """The request httpcore's ``stream(method, url, headers=, content=)`` would build
    (``mcpcore_httpcore.build_request``). ``replayable`` is the core's
    ``HttpRequest.replayable``: the pool may send it again (``Pool``).
    """
    length = None if body is None else (b"Content-Length", b"%d" % len(body))
    return build_request(method, url, headers, body, length, replayable)


class AbortableStream(BodyEnd, HeldWrites, httpcore.NetworkStream):
    """A connection on a socket of its own (plain TCP, or TLS on it) that an abort can end.

    Every blocking step (connect, TLS handshake, a write that waits, a read)
    registers with the abort of the exchange its thread performs (``_Abort``,
    found through ``performing``) for as long as it blocks; an abort then
    shuts the TCP socket down, and the step returns at once with httpcore's
    error. An abort between two steps is remembered: the next one fails at
    once, and the socket is shut down then.

    It reads and writes the socket itself: httpcore's own stream sets the
    socket's timeout before every read and write, a system call each that
    also lets other threads take the GIL; here it is set only when it
    changes. A request's head and body come as separate writes and its
    response is always read next, so small writes are held and sent together
    on that read: one system call and one segment.
    """

    def __init__(self, sock: socket.socket, performing: _Performing) -> None:
        self._sock = sock  # what is read and written: the TCP socket, or the TLS one on it
        self._performing = performing
        self._timeout: object = _UNSET
        self._unsent_timeout: float | None = None
        self._read_bytes = 0  # every byte read from a plain TCP socket (idle_readable)
        self.upgraded: AbortableStream | None = None  # the TLS stream start_tls made on it

    # --- what an abort does -------------------------------------------------------------

    def interrupt(self) -> None:
        """Shut the TCP socket down: a connect, handshake, send or receive on it returns."""
        try:
            # the plain socket's shutdown even under TLS: an SSLSocket's own would drop its
            # TLS state under the thread that is using it
            socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
        except OSError:
            pass

    def begin_step(self, error: type[Exception]) -> _Abort | None:
        """Register this blocking step with the thread's exchange; raise ``error`` if aborted."""
        abort = self._performing.abort
        if abort is not None and not abort.enter(self):
            self.interrupt()
            raise error(_ABORTED)
        return abort

    # --- httpcore's NetworkStream -----------------------------------------------------

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        abort = self.begin_step(httpcore.ReadError)
        try:
            if self._unsent:
                self._send_unsent()
            self.saw_sent()  # every write went out (a failed one raised above)
            try:
                self.set_timeout(timeout)
                data = self._sock.recv(max_bytes)
                self._read_bytes += len(data)
            except TimeoutError as exc:
                raise httpcore.ReadTimeout(exc) from exc
            except OSError as exc:
                raise httpcore.ReadError(exc) from exc
        finally:
            if abort is not None:
                abort.leave()
        self.saw_read(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.saw_written()
        if self.hold(buffer):
            self._unsent_timeout = timeout
            return
        abort = self.begin_step(httpcore.WriteError)
        try:
            if self._unsent:
                self._send_unsent()
            self._send(buffer, timeout)
        finally:
            if abort is not None:
                abort.leave()

    def _send_unsent(self) -> None:
        self._send(self.take_held(), self._unsent_timeout)

    def _send(self, buffer: bytes, timeout: float | None) -> None:
        try:
            self.set_timeout(timeout)
            self._sock.sendall(buffer)
        except TimeoutError as exc:
            self.saw_write_fail()
            raise httpcore.WriteTimeout(exc) from exc
        except OSError as exc:
            self.saw_write_fail()
            raise httpcore.WriteError(exc) from exc

    def set_timeout(self, timeout: float | None) -> None:
        if timeout != self._timeout:
            self._sock.settimeout(timeout)
            self._timeout = timeout

    def close(self) -> None:
        self._unsent = b""
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        if isinstance(self._sock, ssl.SSLSocket):  # a tunnel through an https proxy
            return _TlsInTls(self, ssl_context, server_hostname, timeout)
        if self._unsent:
            self._send_unsent()
        try:
            # wrapped apart from the handshake, so that the handshake is a step an abort
            # can end: the TLS socket takes the TCP socket's descriptor over
            tls = ssl_context.wrap_socket(
                self._sock, server_hostname=server_hostname, do_handshake_on_connect=False
            )
        except OSError as exc:
            self.close()
            raise httpcore.ConnectError(exc) from exc
        stream = AbortableStream(tls, self._performing)
        try:
            abort = stream.begin_step(httpcore.ConnectError)
            try:
                stream.set_timeout(timeout)
                tls.do_handshake()
            finally:
                if abort is not None:
                    abort.leave()
        except TimeoutError as exc:
            stream.close()
            raise httpcore.ConnectTimeout(exc) from exc
        except OSError as exc:
            stream.close()
            raise httpcore.ConnectError(exc) from exc
        except BaseException:
            stream.close()
            raise
        self.upgraded = stream
        return stream

    def idle_readable(self) -> bool:
        """Whether the socket has something to read now: httpcore asks it of an idle
        connection before reusing it, once a call with many in flight.

        ``wait_readable`` polls the socket, a system call that lets every thread
        waiting for the GIL take it first: with many calls in flight, a thread
        switch or two per call. On Linux a plain TCP socket answers without one:
        it has something to read when it is no longer established (the server
        closed or reset it: an end of file or an error to read) or when it has
        received bytes this stream has not read, which is what poll reports.
        """
        sock = self._sock
        if _TCP_INFO is not None and not isinstance(sock, ssl.SSLSocket):
            try:
                info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _TCP_INFO_SIZE)
            except OSError:  # closed: poll tells it as it always did
                info = b""
            if len(info) >= _TCP_INFO_SIZE:
                return (
                    info[0] != _TCP_ESTABLISHED
                    or _BYTES_RECEIVED.unpack_from(info, 128)[0] != self._read_bytes
                )
        return wait_readable(sock, 0)

    def get_extra_info(self, info: str) -> Any:
        sock = self._sock
        if info == "socket":  # documented: the socket itself
            return sock
        if info == "is_readable":  # for an idle connection: did the server close it?
            return self.idle_readable()
        if info == "ssl_object":  # httpcore asks it only which protocol ALPN chose
            return sock if isinstance(sock, ssl.SSLSocket) else None
        if info == "client_addr":
            return sock.getsockname()
        if info == "server_addr":
            return sock.getpeername()
        return None


class _TlsInTls(BodyEnd, httpcore.NetworkStream):
    """TLS inside the TLS connection to an https proxy: a tunnel to an https server.

    The inner TLS is an ``ssl.SSLObject`` over memory buffers; its records go
    through the proxy connection's ``AbortableStream``, whose reads and writes
    an abort ends.
    """

    def __init__(
        self,
        outer: AbortableStream,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None,
        timeout: float | None,
    ) -> None:
        self._outer = outer
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = ssl_context.wrap_bio(
            self._incoming, self._outgoing, server_hostname=server_hostname
        )
        try:
            self._run(self._tls.do_handshake, timeout)
        except httpcore.ReadTimeout as exc:
            outer.close()
            raise httpcore.ConnectTimeout(exc) from exc
        except (httpcore.NetworkError, ssl.SSLError) as exc:
            outer.close()
            raise httpcore.ConnectError(exc) from exc

    def _run(self, step: Callable[[], Any], timeout: float | None) -> Any:
        """Run one TLS step, sending what it produced and feeding it what it waits for."""
        while True:
            try:
                result = step()
                wants_more = False
            except ssl.SSLWantReadError:
                wants_more = True
            produced = self._outgoing.read()
            if produced:
                self._outer.write(produced, timeout)
            if not wants_more:
                return result
            data = self._outer.read(_TLS_RECORD, timeout)
            if data:
                self._incoming.write(data)
            else:
                self._incoming.write_eof()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data: bytes = self._run(partial(self._tls.read, max_bytes), timeout)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            data = b""  # the tunnel's end: whether the body was whole is httpcore's to tell
        except ssl.SSLError as exc:
            raise httpcore.ReadError(exc) from exc
        self.saw_read(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.saw_written()
        try:
            view = memoryview(buffer)
            while view:
                sent: int = self._run(partial(self._tls.write, view), timeout)
                view = view[sent:]
        except ssl.SSLError as exc:
            raise httpcore.WriteError(exc) from exc

    def close(self) -> None:
        self._outer.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("TLS is already on inside this tunnel")

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._tls
        return self._outer.get_extra_info(info)


class _Lookup:
    """A name lookup on a thread of its own, so that an abort ends the wait for it.

    ``getaddrinfo`` cannot be interrupted: an aborted lookup's thread runs on
    until the resolver answers (its own timeout), then ends, its answer unused.
    """

    __slots__ = ("_done", "error", "result")

    def __init__(self, resolve: Resolve, host: str, port: int) -> None:
        self._done = threading.Event()
        self.result: list[tuple[Any, ...]] = []
        self.error: BaseException | None = None
        threading.Thread(
            target=self._run, args=(resolve, host, port), name="mcpcore:lookup", daemon=True
        ).start()

    def _run(self, resolve: Resolve, host: str, port: int) -> None:
        try:
            self.result = resolve(host, port)
        except BaseException as exc:  # handed to the waiting thread
            self.error = exc
        finally:
            self._done.set()

    def interrupt(self) -> None:
        self._done.set()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)


class AbortableBackend(httpcore.NetworkBackend):
    """Connections on ``AbortableStream``: the exchange's abort reaches them from the lookup on.

    ``resolve(host, port)`` looks a name up (``socket.getaddrinfo`` for
    stream sockets); an IP address is used as it is, with no lookup.
    """

    def __init__(self, performing: _Performing, resolve: Resolve = _resolve) -> None:
        self._performing = performing
        self._resolve = resolve

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._addresses(host, port, timeout)
        last: httpcore.ConnectError | None = None
        for family, kind, proto, _, address in addresses:
            stream = AbortableStream(socket.socket(family, kind, proto), self._performing)
            try:
                self._connect(stream, address, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                stream.close()
                if self.aborted():
                    raise
                last = exc  # the next address, if there is one
                continue
            except BaseException:
                stream.close()
                raise
            return stream
        if last is not None:
            raise last  # the last address's failure, its cause (refused, unreachable) with it
        raise httpcore.ConnectError(f"no address for {host!r}")

    def aborted(self) -> bool:
        abort = self._performing.abort
        return abort is not None and abort.aborted

    def _addresses(self, host: str, port: int, timeout: float | None) -> list[tuple[Any, ...]]:
        try:  # an IP address: no lookup, nothing to wait for
            return socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST
            )
        except (socket.gaierror, UnicodeError):
            pass
        lookup = _Lookup(self._resolve, host, port)
        abort = self._performing.abort
        if abort is not None and not abort.enter(lookup):
            raise httpcore.ConnectError(_ABORTED)
        try:
            done = lookup.wait(timeout)
        finally:
            if abort is not None:
                abort.leave()
        if self.aborted():
            raise httpcore.ConnectError(_ABORTED)
        if not done:
            raise httpcore.ConnectTimeout(f"the name {host!r} was not found within {timeout} s")
        if lookup.error is not None:
            raise httpcore.ConnectError(str(lookup.error)) from lookup.error
        return lookup.result

    def _connect(
        self,
        stream: AbortableStream,
        address: tuple[Any, ...],
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[Any] | None,
    ) -> None:
        sock = stream.get_extra_info("socket")
        abort = stream.begin_step(httpcore.ConnectError)
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if local_address is not None:
                sock.bind((local_address, 0))
            if _POLL:
                stream.set_timeout(0.0)  # non-blocking; the first read or write sets it again
                self._connect_watching(sock, address, timeout)
            else:  # pragma: no cover - Windows: a refused connect is seen by select's
                # exceptional set only; blocking, an abort ends it by shutting the socket down
                stream.set_timeout(timeout)
                sock.connect(address)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(exc) from exc
        except OSError as exc:
            raise httpcore.ConnectError(_ABORTED if self.aborted() else exc) from exc
        finally:
            if abort is not None:
                abort.leave()
        if self.aborted():  # connected just as the abort came
            raise httpcore.ConnectError(_ABORTED)

    def _connect_watching(
        self, sock: socket.socket, address: tuple[Any, ...], timeout: float | None
    ) -> None:
        """Connect, looking at the exchange's abort every ``_CONNECT_LOOK`` seconds meanwhile.

        On Linux shutting the socket down ends a connect under way, and the
        wait below returns at once; elsewhere (the BSDs, macOS) it does not,
        and the abort is seen at the next look.
        """
        started = sock.connect_ex(address)
        if started == 0:
            return
        if started not in _CONNECTING:
            raise OSError(started, os.strerror(started))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _CONNECT_LOOK
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise TimeoutError(f"could not connect within {timeout} s")
            over = wait_writable(sock, wait)
            if self.aborted():
                raise OSError(errno.ECONNABORTED, _ABORTED)
            if over:
                break
        failed = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if failed:
            raise OSError(failed, os.strerror(failed))


def connection_pool(
    ssl_context: ssl.SSLContext | None,
    max_connections: int,
    performing: _Performing,
    *,
    proxy: Route | str | None = None,
) -> Pool:
    """The client's pool: every step abortable (D1), no retries (the engine decides)
    but one: a request broken on a kept-alive connection goes once more on a new
    one when ``sent_again_after`` allows it (D3).

    ``performing`` tells each blocking step which exchange its thread
    performs, so that the exchange's abort ends it.

    ``proxy`` is the core's choice per origin (``ClientSetup.outbound.proxy_for_origin``:
    an http:// or https:// URL, credentials allowed, or None for direct), or one
    proxy URL for every request. A proxied request goes through a pool of
    httpcore's for its proxy: https URLs through a CONNECT tunnel, http ones
    forwarded. ``ssl_context`` is for the servers; an https proxy is checked
    with httpcore's default context.
    """
    return Pool(ssl_context, max_connections, AbortableBackend(performing), proxy)


class _Link(httpcore.NetworkBackend):
    """One connection's way to the pool's backend: it keeps the stream it connected,
    so that the pool can ask it, after a failure, whether the request may go again."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend
        self._tcp: httpcore.NetworkStream | None = None

    @property
    def stream(self) -> httpcore.NetworkStream | None:
        """The stream requests go over: the TCP one, or the TLS one made on it."""
        tcp = self._tcp
        if isinstance(tcp, AbortableStream) and tcp.upgraded is not None:
            return tcp.upgraded
        return tcp

    def aborted(self) -> bool:
        """Whether the exchange this thread performs was aborted (D1): not sent again."""
        backend = self._backend
        return isinstance(backend, AbortableBackend) and backend.aborted()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self._tcp = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return self._tcp

    def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore's retries only
        self._backend.sleep(seconds)


class _Connection(httpcore.HTTPConnection):
    """httpcore's connection over a ``_Link`` of its own (``link``)."""

    def __init__(
        self,
        origin: httpcore.Origin,
        ssl_context: ssl.SSLContext | None,
        backend: httpcore.NetworkBackend,
    ) -> None:
        self.link = _Link(backend)
        super().__init__(origin, ssl_context=ssl_context, network_backend=self.link)


class Pool(
    PoolBase[_Connection, httpcore.HTTPProxy, httpcore.NetworkBackend],
    httpcore.ConnectionInterface,
):
    """The client's connections: HTTP/1.1, one request per connection at a time.

    httpcore's ``HTTPConnection`` does each exchange; which connection takes
    which request is ``mcpcore_httpcore.Connections``'s, under a lock. A
    request that breaks on a kept-alive connection goes once more, on a new
    connection, when ``sent_again_after`` allows it (D3); each connection's
    ``_Link`` keeps its stream for that question. With a proxy, httpcore's
    ``HTTPProxy`` pool does it all instead (its tunnels are not public
    classes; it sends nothing again; whether a request went out whole before it
    failed is told around it, ``sending_through_proxy``: U3). ``request`` and
    ``stream`` are httpcore's; what does not wait is ``mcpcore_httpcore.PoolBase``'s.
    """

    _connection_type = _Connection
    _proxy_type = httpcore.HTTPProxy
    _lock_type = threading.Lock

    def handle_request(self, request: httpcore.Request) -> httpcore.Response:
        via = self._proxy_for(request)
        if via is not None:
            with sending_through_proxy(request):  # U3: did it go out whole before failing?
                return via.handle_request(request)
        timeouts = request.extensions.get("timeout", {})
        again = False
        while True:
            connection = self._take(request.url.origin, timeouts.get("pool"), fresh=again)
            kept_alive = connection.is_idle()  # it served a request before
            stream = connection.link.stream
            if isinstance(stream, BodyEnd):
                stream.saw_request_begin()  # U3: nothing of this request went out yet
            try:
                response = connection.handle_request(request)
            except BaseException as exc:
                self._give_back(connection)
                link = connection.link
                retry = self._again_after(
                    exc,
                    request,
                    link.stream,
                    again=again,
                    kept_alive=kept_alive,
                    aborted=link.aborted(),
                )
                if retry is None:
                    raise
                again = retry
                continue
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=_Body(response.stream, self, connection),
                extensions=response.extensions,
            )

    def _take(
        self, origin: httpcore.Origin, timeout: float | None, fresh: bool = False
    ) -> _Connection:
        # An idle connection is asked whether it expired (a poll of its socket, which
        # lets other threads take the GIL) once the lock is released: asked under it,
        # a thread giving a connection back meanwhile blocked on the lock, one thread
        # switch more per call with many in flight.
        with self._lock:
            connection, closing = self._book.take(origin, ask=False, fresh=fresh)
            waiter = self._wait_if_none(origin, connection)
        while connection is not None and (connection.is_closed() or connection.has_expired()):
            with self._lock:
                closing += self._book.discard(connection)
                connection, more = self._book.take(origin, ask=False, fresh=fresh)
                waiter = self._wait_if_none(origin, connection)
            closing += more
        _close(closing)
        if connection is not None:
            return connection
        assert waiter is not None
        try:
            if not waiter.handed.wait(timeout):
                raise httpcore.PoolTimeout(f"no connection within {timeout} s")
        except BaseException:
            with self._lock:
                closing = self._book.withdraw(waiter)
            _close(closing)
            raise
        assert waiter.connection is not None
        return waiter.connection

    def _wait_if_none(
        self, origin: httpcore.Origin, connection: _Connection | None
    ) -> _Waiting | None:
        """Under the lock: with no connection to take, wait in line for one."""
        if connection is not None:
            return None
        waiter = _Waiting(origin)
        self._book.waiting.append(waiter)
        return waiter

    def _give_back(self, connection: _Connection) -> None:
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


class _Waiting(Waiter[_Connection]):
    """A request waiting in a ``Pool`` for a connection; ``handed`` is set once it has one."""

    __slots__ = ("handed",)

    def __init__(self, origin: httpcore.Origin) -> None:
        self.handed = threading.Event()
        super().__init__(origin, self.handed.set)


def _close(connections: list[_Connection]) -> None:
    for connection in connections:
        connection.close()


class _Body(PooledBody[Pool, _Connection]):
    """A response body that gives its connection back to the pool when closed."""

    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        stream: Iterable[bytes] = self._stream
        return iter(stream)

    def close(self) -> None:
        connection = self.release()
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


def content_length(response: httpcore.Response) -> int | None:
    """The body's length from its ``Content-Length`` header, or None (chunked, or none).

    None as well beside a ``Transfer-Encoding``, which frames the body instead.
    """
    length = None
    for name, value in response.headers:
        name = name.lower()
        if name == b"transfer-encoding":
            return None
        if name == b"content-length" and length is None:
            value = value.strip()
            if not value.isdigit():
                return None
            length = int(value)
    return length


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
