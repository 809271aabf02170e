"""What both drivers' network layers share over httpcore's public API.

This module owns:

- ``Connections``: the I/O-free bookkeeping of both drivers' connection pools
  (which connections there are, which are idle, who waits for one), over
  httpcore's public connection classes;
- ``PoolBase`` and ``PooledBody``: the half of both drivers' pools that
  neither waits nor does I/O (the connections and proxy pools, where a request
  goes, whether a failed one goes again, httpcore's interface answers for the
  pool as a whole), and what a response body holds to give its connection back;
  each driver writes only the waiting and the I/O;
- ``build_request``: an ``HttpRequest`` as httpcore's ``Request``, built as
  httpcore's ``stream()`` would build it (``request_target`` below);
- ``COALESCE_LIMIT`` and ``HeldWrites``: the size below which the drivers'
  streams hold a request's writes until its response is read, and the holding;
- ``REPLAYABLE`` and ``sent_again_after``: whether a request that failed on a
  kept-alive connection goes once more on a new one (a server, or a load
  balancer, closes idle connections; the close may be on its way when a
  request is written);
- ``BodyEnd`` and ``body_end_arrived``: whether a response's body has all
  arrived, told from what the drivers' own network streams saw (they see
  every byte httpcore reads), never from httpcore's private state;
- ``SENT``, ``was_sent`` and ``sending_through_proxy``: whether a request that
  failed had gone out whole first (U3), direct or through httpcore's proxy pools;
- ``request_target``: a request URL parsed for httpcore once, with its ``Host``
  header value (``build_request`` builds httpcore's ``Request`` with it:
  ``stream()`` parses the URL and checks every header twice per request);
- ``wait_readable`` and ``wait_writable``: the socket readiness checks
  (``poll``, or ``selectors`` where there is no ``poll``; never
  ``select.select``, which fails on descriptors past 1023);
- proxies: ``ProxyTarget`` splits a proxy URL into what httpcore takes,
  ``ProxyRoutes`` keeps one httpcore proxy pool per proxy URL and says which
  one an origin's requests go through, and ``redact_proxy`` gives a proxy URL
  fit for a message or a log (no credentials). Which proxy an origin uses (the
  proxy option, else the environment's ``*_proxy`` and ``no_proxy``
  variables) is not decided here: the core chooses it per origin
  (``ClientSetup.outbound.proxy_for_origin``), so a request to an
  authorization server on another host gets that host's proxy.

Loaded with httpcore, on a client's first remote start (B5); it imports neither
httpcore nor ssl when loaded. Nothing here is about MCP; it is how requests are put
on connections.
"""

from __future__ import annotations

import select
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:  # names for annotations only: importing this loads neither httpcore nor ssl
    import socket
    import ssl
    from collections.abc import AsyncIterable, AsyncIterator, Iterable

    import httpcore

__all__ = [
    "COALESCE_LIMIT",
    "REPLAYABLE",
    "SENT",
    "BodyEnd",
    "Connections",
    "HeldWrites",
    "PoolBase",
    "PooledBody",
    "ProxyRoutes",
    "ProxyTarget",
    "Waiter",
    "body_end_arrived",
    "build_request",
    "redact_proxy",
    "request_target",
    "sending_through_proxy",
    "sent_again_after",
    "wait_readable",
    "wait_writable",
    "was_sent",
]

# Writes smaller than this are held until the response is read, so a request's
# head and body (two writes from httpcore) leave in one send.
COALESCE_LIMIT = 64 * 1024

# The key, in an httpcore request's extensions, of the core's HttpRequest.replayable.
REPLAYABLE = "mcpcore_replayable"

# The key the pools set, in the extensions of a request that failed, when its bytes
# had all gone out before it failed (U3: the driver reports request_sent).
SENT = "mcpcore_sent"


# --- the pools' bookkeeping ---------------------------------------------------------------------


class _Connection(Protocol):
    """What the bookkeeping asks of a connection: httpcore's public, non-blocking checks."""

    def can_handle_request(self, origin: httpcore.Origin) -> bool: ...
    def is_idle(self) -> bool: ...
    def is_closed(self) -> bool: ...
    def has_expired(self) -> bool: ...


C = TypeVar("C", bound=_Connection)


class Waiter(Generic[C]):
    """A request waiting for a connection; ``wake`` is called once it has one."""

    __slots__ = ("connection", "origin", "wake")

    def __init__(self, origin: httpcore.Origin, wake: Callable[[], object]) -> None:
        self.origin = origin
        self.wake = wake
        self.connection: C | None = None


class Connections(Generic[C]):
    """Which connections a pool has, which are idle, and which requests wait for one.

    No I/O and no locking: the sync pool calls it under its lock, the async one
    between two awaits. Each method returns the connections the pool is to
    close (outside its lock). HTTP/1.1 only: a connection carries one request
    at a time, and one that is taken is nobody else's until it is given back.

    httpcore's own pool assigns requests to connections on every request's
    arrival and departure, asking each idle connection ``has_expired()`` (a
    socket poll) every time, and with many callers gives one idle connection
    to two queued requests (the second fails ``ConnectionNotAvailable`` and
    goes round again): with 32 calls in flight it cost the anyio driver half
    again its CPU per call. Here a connection is checked only when a request
    is about to use it: an expired one is closed then and the search goes on,
    so no request goes to a connection the server has closed; the most
    recently used idle connection is taken first; a connection given back
    goes straight to the longest waiter.
    """

    def __init__(self, max_connections: int, create: Callable[[httpcore.Origin], C]) -> None:
        self.max_connections = max_connections
        self._create = create
        self.all: list[C] = []
        self.idle: list[C] = []  # the most recently used last
        self.waiting: deque[Waiter[C]] = deque()

    def take(
        self, origin: httpcore.Origin, *, ask: bool = True, fresh: bool = False
    ) -> tuple[C | None, list[C]]:
        """A connection for a request to ``origin``, or None: wait (``waiting``) for one.

        With ``ask=False`` an idle connection is returned without asking it
        ``has_expired()``: the caller asks it outside its lock (a socket poll,
        which with threads lets others take the GIL while the lock is held)
        and hands an expired one to ``discard``. With ``fresh=True`` no idle
        connection is taken: a new one, for a request sent again because a
        kept-alive one failed (the others kept alive as long may be as stale);
        with no room, the longest idle connection is closed to make some, or the
        request waits for the next connection given back, which has just served one.
        """
        closing: list[C] = []
        idle = self.idle
        for index in range(-1 if fresh else len(idle) - 1, -1, -1):
            connection = idle[index]
            if not connection.can_handle_request(origin):
                continue
            del idle[index]
            if not ask:
                return connection, closing
            if connection.is_closed() or connection.has_expired():
                self.all.remove(connection)
                closing.append(connection)
                continue
            return connection, closing
        if len(self.all) >= self.max_connections:
            if not idle:
                return None, closing
            # full: make room by closing an idle connection to another origin
            other = idle.pop(0)
            self.all.remove(other)
            closing.append(other)
        return self._new(origin), closing

    def _new(self, origin: httpcore.Origin) -> C:
        connection = self._create(origin)
        self.all.append(connection)
        return connection

    def discard(self, connection: C) -> list[C]:
        """``connection``, taken with ``ask=False``, expired: it is to be closed."""
        if connection in self.all:
            self.all.remove(connection)
        return [connection]

    def give_back(self, connection: C) -> list[C]:
        """``connection``'s request is over (its response closed, or it failed)."""
        if connection not in self.all:  # the pool was closed meanwhile
            return [connection]
        reusable = not connection.is_closed() and connection.is_idle()
        if self.waiting:
            waiter = self.waiting.popleft()
            if (
                reusable
                and connection.can_handle_request(waiter.origin)
                and not connection.has_expired()
            ):
                self._grant(waiter, connection)
                return []
            self.all.remove(connection)
            self._grant(waiter, self._new(waiter.origin))
            return [connection]
        if reusable:
            self.idle.append(connection)
            return []
        self.all.remove(connection)
        return [connection]

    def _grant(self, waiter: Waiter[C], connection: C) -> None:
        waiter.connection = connection
        waiter.wake()

    def withdraw(self, waiter: Waiter[C]) -> list[C]:
        """``waiter`` stops waiting (timed out, cancelled): what it was given goes back."""
        if waiter.connection is None:
            self.waiting.remove(waiter)
            return []
        connection, waiter.connection = waiter.connection, None
        return self.give_back(connection)

    def close_all(self) -> list[C]:
        """Every connection, to be closed; the waiting get new ones, as many as fit."""
        closing, self.all, self.idle = self.all, [], []
        while self.waiting and len(self.all) < self.max_connections:
            waiter = self.waiting.popleft()
            self._grant(waiter, self._new(waiter.origin))
        return closing


# --- requests ----------------------------------------------------------------------------------

_HTTP_PORTS = {b"http": 80, b"https": 443}


@lru_cache(maxsize=64)
def request_target(url: str) -> tuple[httpcore.URL, bytes]:
    """``url`` as httpcore's ``URL``, and the ``Host`` header httpcore would send for it.

    Cached: a client sends every request to one URL or a few, and httpcore
    treats a ``URL`` as a value (it never changes one).
    """
    import httpcore  # loaded already: only a driver that uses httpcore calls this

    parsed = httpcore.URL(url)
    port = parsed.port
    if port is None or port == _HTTP_PORTS.get(parsed.scheme):
        return parsed, parsed.host
    return parsed, b"%b:%d" % (parsed.host, port)


def build_request(
    method: str,
    url: str,
    headers: list[tuple[bytes, bytes]],
    content: bytes | Iterable[bytes] | AsyncIterable[bytes] | None,
    length: tuple[bytes, bytes] | None,
    replayable: bool,
) -> httpcore.Request:
    """The request httpcore's ``stream(method, url, headers=, content=)`` would build.

    Built here because ``stream`` parses the URL and checks every header twice on
    each request; the core never sets ``Host``, ``Content-Length`` or
    ``Transfer-Encoding`` itself (C5 refuses them in configured headers), so they
    are added as httpcore adds them: ``Host`` first, ``length`` (the driver's
    ``Content-Length`` header, or None for no body) last. ``replayable`` is the
    core's ``HttpRequest.replayable``: the pool may send it again (``sent_again_after``).
    """
    request = _request_type or _load_request_type()
    target, host = request_target(url)
    extensions = {REPLAYABLE: True} if replayable else None
    if length is None:
        return request(method, target, headers=[(b"Host", host), *headers], extensions=extensions)
    return request(
        method,
        target,
        headers=[(b"Host", host), *headers, length],
        content=content,
        extensions=extensions,
    )


# httpcore's Request, found on the first request built (this module loads without
# httpcore): an import statement on every request costs more than a global's lookup.
_request_type: type[httpcore.Request] | None = None


def _load_request_type() -> type[httpcore.Request]:
    global _request_type
    import httpcore  # loaded already: only a driver that uses httpcore calls this

    _request_type = httpcore.Request
    return _request_type


# --- where a response body ends ---------------------------------------------------------------

# The last chunk of a chunked body with no extension and no trailer, after the
# CRLF that closes the chunk before it (or the head): how servers end a stream.
_LAST_CHUNK = b"\r\n0\r\n\r\n"
_KEEP = len(_LAST_CHUNK)


class BodyEnd:
    """The last bytes read from a connection since its latest request was written.

    Mixed into the drivers' network streams: ``saw_written`` on every write,
    ``saw_read`` on every read, ``saw_write_fail`` when a write did not all go
    out. httpcore parses what its streams return, so a chunked body's end
    that httpcore has read but not yet handed over is in here, without a look
    at httpcore's parser. The same record tells whether a request that failed
    may go out again (``may_send_again``).
    """

    _tail: bytes = b""
    _answered = False  # a byte arrived since the latest request was written
    _write_failed = False  # a write did not all go out: the connection is done
    _went_out = False  # the latest request's bytes all went out (U3)

    def saw_written(self) -> None:
        # One request at a time on an HTTP/1.1 connection: what was read before
        # the request belongs to an earlier response.
        self._tail = b""
        self._answered = False
        self._went_out = False

    def saw_request_begin(self) -> None:
        """A new request is about to use this connection: nothing of it went out yet."""
        self._went_out = False

    def saw_sent(self) -> None:
        """A read begins, every write before it (held ones too) gone out: httpcore
        reads only once the whole request is written, so it went out whole unless a
        write failed (U3)."""
        if not self._went_out and not self._write_failed:
            self._went_out = True
            # once a request: one going through a proxy pool is told here (see _Sending)
            sending = _SENDING.get()
            if sending is not None and sending.drained:
                sending.went_out = True

    def went_out(self) -> bool:
        """Whether the latest request's bytes all went out (U3)."""
        return self._went_out and not self._write_failed

    def saw_read(self, data: bytes) -> None:
        if len(data) >= _KEEP:
            self._tail = data[-_KEEP:]
        elif data:
            self._tail = (self._tail + data)[-_KEEP:]
        if data:
            self._answered = True

    def saw_write_fail(self) -> None:
        self._write_failed = True

    def may_send_again(self, replayable: bool) -> bool:
        """Whether the request that just failed on this connection may go out once more,
        on a new connection: no byte of its answer arrived, and either sending it twice
        changes nothing (``replayable``, the core's word: ``HttpRequest.replayable``)
        or its bytes did not all go out (the server cannot have read it whole).

        Asked only of a kept-alive connection: the server may have closed it while
        it was idle, a close the pool's check before reuse could not see yet (the
        close was on its way). A request on a new connection is not sent again.
        """
        return not self._answered and (replayable or self._write_failed)

    def read_tail(self) -> bytes:
        """The last bytes of the response being read, as far as it has arrived."""
        return self._tail


class HeldWrites:
    """Writes held until the response is read, while they stay under ``COALESCE_LIMIT``:
    a request's head and body (two writes from httpcore) then leave in one send.

    Mixed into the drivers' socket streams: ``hold`` takes a write or says it must go
    out now; each stream sends what ``take_held`` returns its own way, before a
    bigger write, a read or a TLS handshake, and looks at ``_unsent`` (what is held)
    to tell whether there is any (an attribute, not a call: it is asked on every read).
    """

    _unsent = b""

    def hold(self, data: bytes) -> bool:
        """Whether ``data`` is held, after what is held already."""
        if len(self._unsent) + len(data) <= COALESCE_LIMIT:
            self._unsent += data
            return True
        return False

    def take_held(self) -> bytes:
        """What is held, to be sent now; nothing is held after."""
        held, self._unsent = self._unsent, b""
        return held


def sent_again_after(error: BaseException, stream: object, request: httpcore.Request) -> bool:
    """Whether ``request``, which failed with ``error`` on a kept-alive connection
    whose stream is ``stream``, goes once more on a new connection.

    Yes for a connection that broke (reset, or closed without an answer)
    when ``stream.may_send_again`` allows it; never after a timeout (the
    server was slow, not gone) or an answer that was not HTTP. As urllib3 and
    aiohttp do; the drivers' pools ask it once per request, so a request goes
    out at most twice.
    """
    import httpcore  # loaded already: only a driver that uses httpcore calls this

    if not isinstance(error, (httpcore.NetworkError, httpcore.RemoteProtocolError)):
        return False
    replayable = bool(request.extensions.get(REPLAYABLE))
    return isinstance(stream, BodyEnd) and stream.may_send_again(replayable)


class _Sending:
    """A request that one of httpcore's proxy pools is performing, in this task or
    thread: whether its bytes all went out (U3).

    httpcore's proxy connections (the forwarding one, the CONNECT tunnel) are
    private classes, so the pool cannot ask them which stream a request went
    over, as it asks its own connections. What it does own: the network backend
    (every stream of a proxy pool is one of ours, ``BodyEnd``) and the request
    it hands over. So the request's body is passed on through ``_Drained``,
    which notes when httpcore has taken all of it, and the streams note, in the
    ``_Sending`` a context variable holds around the proxied request (httpcore
    performs it in the caller's task or thread), when a read begins after
    that with no write failed: httpcore reads only once the whole request is
    written, and our streams send the writes they hold (``COALESCE_LIMIT``)
    before that read. A read before the body was all taken (the CONNECT
    answer, a TLS handshake) says nothing of the request.
    """

    __slots__ = ("drained", "went_out")

    def __init__(self) -> None:
        self.drained = False  # httpcore has taken the whole body
        self.went_out = False  # and a read began after it, every write gone out


_SENDING: ContextVar[_Sending | None] = ContextVar("mcpcore_sending", default=None)


class _Drained:
    """A proxied request's body, passed on unchanged; all taken, it tells ``sending``."""

    def __init__(self, body: Iterable[bytes] | AsyncIterable[bytes], sending: _Sending) -> None:
        self._body = body
        self._sending = sending

    def __iter__(self) -> Iterator[bytes]:
        yield from self._body  # type: ignore[misc]  # a sync pool's body is an Iterable
        self._sending.drained = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._body:  # type: ignore[union-attr]  # an async pool's
            yield chunk
        self._sending.drained = True


@contextmanager
def sending_through_proxy(request: httpcore.Request) -> Iterator[None]:
    """Around a request handed to one of httpcore's proxy pools: when it fails after
    its bytes all went out, mark it ``SENT`` as the pools mark a direct one (U3).
    A proxy that refuses the connection, a CONNECT refused, a TLS handshake that
    fails: the body was not taken yet, so the request keeps its error."""
    sending = _Sending()
    request.stream = _Drained(request.stream, sending)
    token = _SENDING.set(sending)
    try:
        yield
    except Exception:
        if sending.went_out:
            request.extensions[SENT] = True
        raise
    finally:
        _SENDING.reset(token)


def was_sent(request: httpcore.Request) -> bool:
    """Whether ``request``, which failed, had all its bytes go out first (U3): what
    the driver then reports to the engine (``request_sent``) before the failure."""
    return bool(request.extensions.get(SENT))


def body_end_arrived(response: Any, received: int) -> bool | None:
    """Whether all of ``response``'s body has arrived, if that can be told.

    True when its whole ``Content-Length`` body has been received, or its
    stream (one of the drivers' ``BodyEnd`` streams) read a chunked body's
    last chunk. False when a ``Content-Length`` body is not all here. None
    otherwise: the end has not been seen (it may be on its way, or the server
    may hold the stream open).

    A stream whose last bytes are a chunk's data ending in ``\\r\\n0\\r\\n\\r\\n``,
    read up to there and no further, reads as ended; an SSE line of a lone
    ``0`` is not a field any server sends, and then a caller only waits for
    the rest of the stream instead of handing it on.
    """
    for name, value in response.headers:
        if name.lower() == b"content-length":
            return value.strip().isdigit() and received >= int(value)
    extensions = getattr(response, "extensions", None)  # the in-process ASGI response has none
    stream = None if extensions is None else extensions.get("network_stream")
    if isinstance(stream, BodyEnd) and stream.read_tail().endswith(_LAST_CHUNK):
        return True
    return None


def wait_readable(sock: socket.socket, timeout: float) -> bool:
    """Whether ``sock`` has something to read within ``timeout`` seconds.

    A socket that is gone counts as readable (its next read returns at once),
    and so does TLS data already decrypted and waiting in the socket.
    """
    fd = sock.fileno()
    if fd < 0:
        return True
    pending = getattr(sock, "pending", None)  # an ssl.SSLSocket's
    if pending is not None and pending():
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(max(0, round(timeout * 1000))))
        import selectors  # pragma: no cover - no poll: Windows

        with selectors.DefaultSelector() as selector:  # pragma: no cover
            selector.register(fd, selectors.EVENT_READ)
            return bool(selector.select(timeout))
    except (OSError, ValueError):
        return True


def wait_writable(sock: socket.socket, timeout: float) -> bool:
    """Whether ``sock`` can be written within ``timeout`` seconds.

    For a connect under way: whether it is over, connected or failed (its
    ``SO_ERROR`` says which). A socket that is gone counts as writable.
    """
    fd = sock.fileno()
    if fd < 0:
        return True
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            return bool(poller.poll(max(0, round(timeout * 1000))))
        import selectors  # pragma: no cover - no poll: Windows

        with selectors.DefaultSelector() as selector:  # pragma: no cover
            selector.register(fd, selectors.EVENT_WRITE)
            return bool(selector.select(timeout))
    except (OSError, ValueError):
        return True


# --- proxies ------------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}


def redact_proxy(url: str) -> str:
    """``url`` with any user name and password replaced by ``***``: for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:  # up to the last "@", even past a "/" a password may hold unencoded
        rest = "***@" + rest.rpartition("@")[2]
    return f"{scheme}{sep}{rest}"


class ProxyTarget:
    """A proxy URL split into what httpcore's proxy pools take.

    ``url`` has no credentials (scheme, host and port only); ``auth`` holds
    them, percent-decoded, for the ``Proxy-Authorization`` header httpcore
    builds. The repr shows neither the user name nor the password.
    """

    __slots__ = ("auth", "url")

    def __init__(self, proxy: str) -> None:
        where = redact_proxy(proxy)
        if "://" not in proxy:
            raise ValueError(f"the proxy {where!r} must be an http:// or https:// URL")
        try:
            parts = urlsplit(proxy)
            port = parts.port
        except ValueError:
            raise ValueError(f"the proxy {where!r} is not a valid URL") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ValueError(
                f"the proxy {where!r} must be an http:// or https:// URL (not {scheme}://)"
            )
        host = parts.hostname
        if not host:
            raise ValueError(f"the proxy {where!r} has no host")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"the proxy {where!r} must have no path, query or fragment")
        if ":" in host:
            host = f"[{host}]"
        self.url = f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}"
        self.auth: tuple[bytes, bytes] | None = None
        if parts.username is not None or parts.password is not None:
            self.auth = (
                unquote(parts.username or "").encode(),
                unquote(parts.password or "").encode(),
            )

    def __repr__(self) -> str:
        return f"ProxyTarget({self.url!r}{', with credentials' if self.auth else ''})"


P = TypeVar("P")
# The core's choice of proxy for an origin (scheme, host, port): a proxy URL or None (direct).
Route = Callable[[str, str, int], "str | None"]


class ProxyRoutes(Generic[P]):
    """Which proxy pool an origin's requests go through, one pool per proxy URL.

    ``route`` is the core's per-origin choice (or one proxy URL for every
    origin, or None: always direct); ``make`` builds httpcore's proxy pool for
    a ``ProxyTarget`` the first time a proxy URL is chosen.
    """

    __slots__ = ("_make", "_pools", "_route")

    def __init__(self, route: Route | str | None, make: Callable[[ProxyTarget], P]) -> None:
        if isinstance(route, str):
            ProxyTarget(route)  # a bad proxy URL fails when the pool is made
            fixed = route
            self._route: Route | None = lambda scheme, host, port: fixed
        else:
            self._route = route
        self._make = make
        self._pools: dict[str, P] = {}

    def via(self, url: httpcore.URL) -> P | None:
        """The proxy pool for a request to ``url``, or None when it goes direct."""
        if self._route is None:
            return None  # no proxy configured: nothing to ask per request
        scheme = url.scheme.decode("ascii", "replace")
        if scheme not in _DEFAULT_PORTS:
            return None  # the pool refuses it
        host = url.host.decode("ascii", "replace")
        proxy = self._route(scheme, host, url.port or _DEFAULT_PORTS[scheme])
        if proxy is None:
            return None
        pool = self._pools.get(proxy)
        if pool is None:
            pool = self._pools[proxy] = self._make(ProxyTarget(proxy))
        return pool

    @property
    def pools(self) -> list[P]:
        return list(self._pools.values())


# --- what both pools write alike ----------------------------------------------------------------


class _ProxyPool(Protocol):
    """What a pool asks of httpcore's proxy pool, beside sending and closing."""

    @property
    def connections(self) -> list[Any]: ...


PP = TypeVar("PP", bound=_ProxyPool)
B = TypeVar("B")  # the network backend: httpcore's sync or async one


class PoolBase(Generic[C, PP, B]):
    """The half of both drivers' pools (``AsyncPool``, ``Pool``) that neither waits nor
    does I/O: which connections and proxy pools there are, where a request goes, whether
    a failed one goes again, and the answers httpcore's connection interface asks of the
    pool as a whole.

    A driver's pool derives from this and from httpcore's connection interface, and
    names its connection class (``_connection_type``), httpcore's proxy pool class
    (``_proxy_type``) and, with threads, a lock (``_lock_type``; one event loop needs
    none); it writes only what waits: taking a connection, a request on it, closing.
    """

    _connection_type: Callable[[httpcore.Origin, ssl.SSLContext | None, B], C]
    _proxy_type: Callable[..., PP]
    _lock_type: Callable[[], AbstractContextManager[object]] = nullcontext

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        backend: B,
        proxy: Route | str | None = None,
    ) -> None:
        self._lock = self._lock_type()
        self._proxied = proxy is not None  # else every request goes direct: no lock to ask
        connection = self._connection_type
        self._book: Connections[C] = Connections(
            max_connections, lambda origin: connection(origin, ssl_context, backend)
        )
        # the proxy pools, one per proxy URL the core chooses for an origin
        proxy_pool = self._proxy_type
        self._via: ProxyRoutes[PP] = ProxyRoutes(
            proxy,
            lambda target: proxy_pool(
                proxy_url=target.url,
                proxy_auth=target.auth,
                ssl_context=ssl_context,
                max_connections=max_connections,
                retries=0,
                network_backend=backend,
            ),
        )

    @property
    def connections(self) -> list[Any]:
        with self._lock:
            direct, vias = list(self._book.all), self._via.pools
        return [*direct, *(c for via in vias for c in via.connections)]

    def _proxy_for(self, request: httpcore.Request) -> PP | None:
        """The proxy pool ``request`` goes through, or None: it goes direct, to an http
        or https URL (any other scheme fails here, as httpcore's pool fails it)."""
        if self._proxied:
            with self._lock:  # the proxy pools are made on first use, by any thread
                via = self._via.via(request.url)
            if via is not None:
                return via
        scheme = request.url.scheme
        if scheme not in (b"http", b"https"):
            import httpcore  # loaded already: only a driver that uses httpcore calls this

            raise httpcore.UnsupportedProtocol(
                f"the URL's scheme is {scheme.decode(errors='replace')!r}, not http or https"
            )
        return None

    @staticmethod
    def _again_after(
        error: BaseException,
        request: httpcore.Request,
        stream: object,
        *,
        again: bool,
        kept_alive: bool,
        aborted: bool = False,
    ) -> bool | None:
        """Whether ``request``, which failed with ``error`` on a connection whose stream
        is ``stream`` (given back to the pool already), goes round again: None when it
        does not (the caller raises ``error``), else whether on a new connection.

        A connection that was not idle after all (closed, or another request tried it)
        is round again as before. A connection that broke goes again on a new one (D3)
        only once (not ``again``), only when it served a request before
        (``kept_alive``: the server may have closed it since, its close not here yet
        when the pool checked), never once the exchange was aborted (``aborted``, D1),
        and when ``sent_again_after`` allows it. A cancellation (an abort, a deadline)
        never goes again.
        """
        import httpcore  # loaded already: only a driver that uses httpcore calls this

        if isinstance(error, httpcore.ConnectionNotAvailable):
            return again
        if again or not kept_alive or aborted or not sent_again_after(error, stream, request):
            if isinstance(stream, BodyEnd) and stream.went_out():
                request.extensions[SENT] = True  # U3: it failed after going out whole
            return None
        return True  # once, on a new connection

    def __repr__(self) -> str:
        name = type(self).__name__
        if self._via.pools:
            return f"<{name} {len(self.connections)} connections, some through a proxy>"
        with self._lock:
            return f"<{name} {len(self._book.all)} connections, {len(self._book.idle)} idle>"

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


PL = TypeVar("PL")


class PooledBody(Generic[PL, C]):
    """A response body that gives its connection back to its pool when closed: what
    both drivers' bodies hold. Iterating and closing are each driver's own (``_Body``);
    ``release`` hands the connection over once, however often the body is closed."""

    __slots__ = ("_connection", "_pool", "_stream")

    def __init__(self, stream: Any, pool: PL, connection: C) -> None:
        self._stream = stream
        self._pool = pool
        self._connection: C | None = connection

    def release(self) -> C | None:
        """The connection to give back, the first time; None after."""
        connection, self._connection = self._connection, None
        return connection
