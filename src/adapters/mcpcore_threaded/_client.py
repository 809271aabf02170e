"""``McpClient`` for threads: the same client as ``mcpcore_anyio``, blocking.

The client holds no protocol state: one lock guards the engine; a named
daemon thread sleeps until the engine's next deadline. ``call()`` performs
its own call's HTTP exchange in the caller's thread (no thread is started
for it, which is most of a call's cost otherwise); every other exchange gets
a thread of its own. Either way each piece that arrives is fed to the engine.
Aborting an exchange ends it wherever it stands: the name lookup, the
connect, TLS, a write or a read (D1, see ``_network``), so a cancelled or
timed-out call, and ``close()``, never wait for the server. Its public
methods are ``_surface.py``'s (generated from the async driver's by
``scripts/unasync.py``); this module is the I/O under them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from mcpcore import (
    Availability,
    HostCallback,
    HttpClientEngine,
    HttpRequest,
    InvalidState,
    McpError,
    SyncReport,
    TransportFailure,
    Unavailable,
    WakeCall,
    WakeRefresh,
    call_host,
    closed_outcome,
)

from ._surface import _T, Begin, ClientSurface, _call_begin
from ._surface import ProgressCallback as ProgressCallback
from ._surface import ResourceReader as ResourceReader
from ._surface import ToolRegistration as ToolRegistration
from ._threads import CallHandle as CallHandle

# _network imports _Abort and _Performing from here (tests too, with _Permits).
from ._threads import _Abort as _Abort
from ._threads import _Performing as _Performing
from ._threads import _Permits, _Workers

if TYPE_CHECKING:
    import httpcore

    # OAuth's names load only when a client uses it (B5: import time).
    from mcpcore import (
        AskHost,
        AuthAction,
        HookCall,
        Pin,
    )

    from ._children import _Children
    from ._network import Pool

__all__ = ["CallHandle", "McpClient", "ProgressCallback", "ResourceReader", "ToolRegistration"]

_log = logging.getLogger("mcpcore.threaded")

_AWAKE = float("-inf")  # the timer thread is not waiting: no need to wake it


# --- waiters ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Exchange:
    """One HTTP exchange and the thread performing it (a caller's own, or one started for it)."""

    thread: threading.Thread | None = None
    aborted: bool = False
    abort: _Abort = field(default_factory=_Abort)  # what ends its steps, wherever it stands


class _Turn:
    """``with client._turn:`` the lock for one turn of the engine; what the turn
    produced for callers (``_deliver``) runs once the lock is released.

    A plain object, not a generator context manager: a call takes four turns.
    """

    __slots__ = ("_client", "_lock")

    def __init__(self, client: McpClient) -> None:
        self._client = client
        self._lock = client._lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self._lock.release()
        if kind is None:
            self._client._deliver()


class McpClient(ClientSurface):
    """One MCP server, used from blocking code. The same names as ``mcpcore_anyio``.

    Constructing does no I/O (L1) and never raises for an invalid or refused
    entry: such a client is unavailable and ``ready()`` says why.
    """

    _START_FIRST = "start the client first (with, or start())"

    def _init_io(self) -> None:
        """The state of this driver's I/O (no I/O yet)."""
        self._pool: Pool | None = None
        self._performing = _Performing()
        # Never more requests handed to the pool than it has connections: waiters
        # beyond that wait here, in order, and can give up when aborted.
        self._permits = _Permits(self._max_connections)
        self._lock = threading.RLock()
        self._turn = _Turn(self)
        self._changed = threading.Condition(self._lock)  # availability changed, or closed
        self._timer = threading.Condition(self._lock)  # the next deadline moved earlier
        self._sleep_until: float | None = _AWAKE  # the deadline the timer thread waits for
        self._availability: Availability | None = None
        self._exchanges: dict[int, _Exchange] = {}
        self._threads: set[threading.Thread] = set()  # hand-offs and child pipes
        # Exchanges run on a bounded set of threads: at most one per connection the
        # pool may open, and two more (at most max_connections hold a permit anyway).
        self._workers = _Workers(self._max_connections + 2, f"mcpcore:{self.name}")
        self._calls: dict[int, CallHandle] = {}
        self._refreshes: dict[int, list[Any]] = {}
        self._deliveries: deque[Callable[[], object]] = deque()  # see _deliver
        self._delivering = False
        self._thread: threading.Thread | None = None
        self._children: _Children | None = None

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the background connect on one named daemon thread (L2)."""
        with self._lock:
            if self._started:
                raise InvalidState("the client was already started")
            self._started = True
            engine = self._new_engine()
            if engine is None:
                return
            if isinstance(engine, HttpClientEngine):
                # httpcore is imported on the first remote start, not with the
                # driver: a program with only local servers never needs it (B5).
                from ._network import connection_pool

                self._pool = connection_pool(
                    self._ssl_context, self._max_connections, self._performing, proxy=self._proxy
                )
            else:
                from ._children import _Children  # only local servers need it (B5)

                self._children = _Children(self)
            self._thread = threading.Thread(
                target=self._run, name=f"mcpcore:{self.name}", daemon=True
            )
            self._thread.start()

    def __enter__(self) -> McpClient:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """L6: the engine closes (cancel notices and DELETE, or the child's stop) within
        its own bound while this client performs what it asks; then every thread ends."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            engine = self._engine
            if engine is not None:
                engine.close(self._now())
                self._dispatch()
        self._deliver()
        with self._lock:
            if engine is not None:
                # The timer thread goes on driving the engine's deadlines meanwhile.
                while not engine.finished:
                    deadline = engine.next_deadline()
                    wait = None if deadline is None else max(0.0, deadline - self._now())
                    self._changed.wait(wait)
                    if deadline is not None and self._now() >= deadline:
                        engine.handle_timer(self._now())
                        self._dispatch()
            for handle in self._calls.values():
                handle._finish(None, closed_outcome(server=self.name))
            for waiter in self._refreshes.values():
                waiter[1] = closed_outcome(server=self.name)
                waiter[0].set()
            for xid in list(self._exchanges):
                self._abort(xid)
            self._closed = True
            self._changed.notify_all()
            self._timer.notify_all()
        self._deliver()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._workers.close()
        if self._children is not None:
            self._children.close()  # bounded: what still blocks on a pipe is abandoned
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join()
        if self._pool is not None:
            self._pool.close()

    # --- the background thread ----------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic()

    def _run(self) -> None:
        """The timer thread: sleep until the engine's next deadline, then fire it."""
        engine = self._engine
        assert engine is not None
        read_pins = self._pins_to_read()
        if read_pins is not None and not self._read_pins(read_pins):
            return  # closed while the store was being read
        with self._turn:
            if self._closing:
                return
            engine.start(self._now())
            self._dispatch()
        while True:
            with self._turn:
                if self._closed:
                    return
                deadline = engine.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - self._now())
                self._sleep_until = deadline
                self._timer.wait(timeout)
                self._sleep_until = _AWAKE
                if self._closed:
                    return
                if deadline is not None and self._now() >= deadline:
                    engine.handle_timer(self._now())
                self._dispatch()

    def _dispatch(self, perform_here: int | None = None) -> tuple[HttpRequest, _Exchange] | None:
        """Under the lock: perform the engine's actions and route its events.

        With ``perform_here`` (a call id), the exchange carrying that call's
        request is not given to a worker but returned, for the calling thread
        to perform itself. Events are routed after the actions, and callbacks
        (``on_progress``) run once the lock is released (``_run_callbacks``).
        """
        engine = self._engine
        if engine is None:
            return None
        here = self._perform_actions(engine, perform_here, self._start_exchange)
        # Wake only whoever needs it: waking the timer thread and every waiter
        # after each input cost a thread switch per HTTP chunk.
        availability = engine.availability
        if (availability is not self._availability and availability != self._availability) or (
            self._closing or self._login_waiting
        ):
            self._availability = availability
            self._changed.notify_all()
        deadline = engine.next_deadline()
        if deadline is not None and (self._sleep_until is None or deadline < self._sleep_until):
            self._timer.notify()
        return here

    def _dispatch_soon(self) -> None:
        self._dispatch()  # under the lock already: at once

    def _perform_auth(self, action: AuthAction | AskHost) -> None:
        """D2: each hook (a person, a signer, a store method) on a thread of its own,
        never under the lock and never joined: a person may take minutes, and an
        answer that comes after its deadline or after close changes nothing."""
        threading.Thread(
            target=self._run_hook,
            args=(self._hook_call(action),),
            name=f"mcpcore:{self.name}:hook",
            daemon=True,
        ).start()

    def _read_pins(self, read_pins: Callable[[], dict[str, Pin]]) -> bool:
        """U1, D2: read the host's pin store on a thread of its own, never under the
        lock and never joined (a store that hangs does not hang close); False when the
        client closed first."""
        read: list[dict[str, Pin]] = []

        def run() -> None:
            pins = read_pins()  # read_pins logs a failing store and answers {}
            with self._lock:
                read.append(pins)
                self._changed.notify_all()

        threading.Thread(target=run, name=f"mcpcore:{self.name}:pins", daemon=True).start()
        with self._lock:
            while not read and not self._closing:
                self._changed.wait()
            if self._closing:
                return False
            self._pins_read(read[0])
        return True

    def _store_pins(self, store_pins: Callable[[], None]) -> None:
        """U1: on a thread of its own, never under the lock; closing joins it."""

        def run() -> None:
            try:
                store_pins()
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        thread = threading.Thread(target=run, name=f"mcpcore:{self.name}:pins", daemon=True)
        self._threads.add(thread)
        thread.start()

    def _run_hook(self, call: HookCall) -> None:
        value: object = None
        error: Exception | None = None
        try:
            value = call.invoke()
        except Exception as exc:  # the hook's own failure: the engine decides (D2)
            error = exc
        self._report_hook(call, value, error)

    def _abort(self, xid: int) -> None:
        exchange = self._exchanges.pop(xid, None)
        if exchange is None:
            return
        exchange.aborted = True
        exchange.abort.abort()

    def _start_exchange(
        self, request: HttpRequest, perform_here: int | None
    ) -> tuple[HttpRequest, _Exchange] | None:
        """A worker for the exchange ``request``, or ``(request, its exchange)``
        when the thread of the call ``perform_here`` performs it itself."""
        if perform_here is not None and request.request_id == perform_here:
            here = _Exchange(thread=threading.current_thread())
            self._exchanges[request.exchange_id] = here
            return (request, here)
        exchange = _Exchange()
        self._exchanges[request.exchange_id] = exchange
        self._workers.submit(lambda: self._exchange(request, exchange))
        return None

    def _exchange(
        self, request: HttpRequest, exchange: _Exchange, caller: CallHandle | None = None
    ) -> None:
        """Perform one HTTP exchange, reporting each piece to the engine.

        ``caller`` is the call whose thread this is: once that call has its
        outcome, whatever the server still sends on the stream is read by a
        thread of its own (``_read_rest``) unless it ends without waiting, so
        the caller returns at once.
        """
        from mcpcore_httpcore import was_sent

        from ._network import (  # loaded by start() already
            content_length,
            ends_without_waiting,
            http_request,
        )

        pool = self._pool
        assert pool is not None
        xid = request.exchange_id
        if exchange.thread is None:  # on a worker
            with self._lock:
                if exchange.aborted:
                    self._exchange_done(xid, exchange)
                    return
                exchange.thread = threading.current_thread()
        # From here on, every step this thread takes for the exchange (the name lookup,
        # the connect, TLS, each write and read) is one its abort ends (D1).
        self._performing.abort = exchange.abort
        if not self._permits.acquire(lambda: exchange.aborted or self._closed):
            self._exchange_done(xid, exchange)
            return
        handed_off = False
        built: httpcore.Request | None = None  # what the pool was given (U3: was it sent?)
        try:
            built = http_request(
                request.method, request.url, request.headers, request.body, request.replayable
            )
            response = pool.handle_request(built)
            try:
                with self._turn:
                    if exchange.aborted:
                        return
                    self._engine_http().response_started(
                        xid, response.status, response.headers, self._now()
                    )
                    self._dispatch()
                chunks = response.iter_stream()
                if caller is not None:
                    received = 0
                    length = content_length(response)
                    for chunk in chunks:
                        received += len(chunk)
                        if length is not None and received >= length:
                            # the whole body is here: its end needs no read (D1 unchanged)
                            self._report_last(xid, exchange, chunk, chunks)
                            return
                        if not self._report_data(xid, exchange, chunk):
                            return
                        if caller.done and not ends_without_waiting(response, received):
                            handed_off = self._hand_off(request, exchange, chunks, response)
                            if handed_off:
                                return
                self._read_rest(request, exchange, chunks)
            finally:
                if not handed_off:  # (a handed-off response is closed by its thread)
                    response.close()
        except Exception as exc:
            self._report_failed(xid, exchange, exc, sent=built is not None and was_sent(built))
        finally:
            if not handed_off:
                self._permits.release()
                self._exchange_done(xid, exchange)

    def _read_rest(
        self,
        request: HttpRequest,
        exchange: _Exchange,
        chunks: Iterator[bytes],
        closing: httpcore.Response | None = None,
    ) -> None:
        """Feed the engine the rest of a response stream, then its end.

        With ``closing`` (a handed-off stream) this runs on a thread of its
        own, closes the response and ends the exchange itself.
        """
        xid = request.exchange_id
        if closing is not None:  # a thread of its own: its reads are the exchange's now
            self._performing.abort = exchange.abort
        try:
            try:
                for chunk in chunks:
                    if not self._report_data(xid, exchange, chunk):
                        return
            finally:
                if closing is not None:
                    closing.close()
            with self._turn:
                if not exchange.aborted:
                    self._engine_http().response_ended(xid, self._now())
                    self._dispatch()
        except Exception as exc:
            if closing is None:
                raise
            self._report_failed(xid, exchange, exc)
        finally:
            if closing is not None:
                self._permits.release()
                self._exchange_done(xid, exchange)

    def _hand_off(
        self,
        request: HttpRequest,
        exchange: _Exchange,
        chunks: Iterator[bytes],
        response: httpcore.Response,
    ) -> bool:
        """Give the rest of a caller's stream to a thread of its own (False: aborted)."""
        with self._lock:
            if exchange.aborted or self._closed:
                return False
            thread = threading.Thread(
                target=self._read_rest,
                args=(request, exchange, chunks, response),
                name=f"mcpcore:{self.name}:post-{request.exchange_id}",
                daemon=True,
            )
            exchange.thread = thread
            self._threads.add(thread)
            self._performing.abort = None  # this thread's part is over
            thread.start()
        return True

    def _engine_http(self) -> HttpClientEngine:
        engine = self._engine
        assert isinstance(engine, HttpClientEngine)
        return engine

    def _report_data(self, xid: int, exchange: _Exchange, chunk: bytes) -> bool:
        with self._turn:
            if exchange.aborted:
                return False
            self._engine_http().response_data(xid, chunk, self._now())
            self._dispatch()
        return True

    def _report_last(
        self, xid: int, exchange: _Exchange, chunk: bytes, chunks: Iterator[bytes]
    ) -> None:
        """The piece that completes a ``Content-Length`` body, and the body's end.

        httpcore has the whole body then, so the end is told without waiting
        on the server, and the two go to the engine in one turn instead of two
        (one lock and one dispatch less per call). What would arrive between
        them (more pieces, a failure) is reported in order as it always was.
        """
        try:
            rest = list(chunks)  # nothing, as a rule: the end of the body, no read
        except Exception:
            self._report_data(xid, exchange, chunk)
            raise
        if rest:
            for piece in (chunk, *rest):
                if not self._report_data(xid, exchange, piece):
                    return
            chunk = b""
        with self._turn:
            if exchange.aborted:
                return
            engine = self._engine_http()
            now = self._now()
            if chunk:
                engine.response_data(xid, chunk, now)
            engine.response_ended(xid, now)
            self._dispatch()

    def _report_failed(
        self, xid: int, exchange: _Exchange, exc: Exception, *, sent: bool = False
    ) -> None:
        with self._turn:
            if not exchange.aborted:
                if sent:  # U3: it failed after going out whole
                    self._engine_http().request_sent(xid, self._now())
                self._engine_http().response_failed(
                    xid, TransportFailure.from_exception(exc), self._now()
                )
                self._dispatch()

    def _exchange_done(self, xid: int, exchange: _Exchange) -> None:
        self._performing.abort = None
        with self._lock:
            if self._exchanges.get(xid) is exchange:
                del self._exchanges[xid]
            self._threads.discard(threading.current_thread())

    # Under the lock (``_dispatch``): what each routed event means to a caller is
    # queued in order; nothing a caller supplied runs here. ``_deliver`` runs the
    # queue once the lock is released, so an ``on_progress`` callback may block or
    # call back into the client.

    def _wake_call(self, step: WakeCall) -> None:
        handle = self._calls.pop(step.call_id, None)
        if handle is None:
            return
        outcome = step.outcome
        output, error = (None, outcome) if isinstance(outcome, McpError) else (outcome, None)
        if self._deliveries or self._delivering:
            # after what was queued before it (its progress reports, say)
            self._deliveries.append(partial(handle._finish, output, error))
        else:
            # nothing before it: finished here (no caller code runs in it)
            handle._finish(output, error)

    def _call_host(self, callback: Callable[..., object], call: HostCallback) -> None:
        # F2, F8, Q2, progress: run unlocked and in order; a callback is a function
        # here, what it returns is ignored
        self._deliveries.append(partial(call_host, callback, call, _log))

    def _wake_refresh(self, step: WakeRefresh) -> None:
        waiter = self._refreshes.get(step.refresh_id)
        if waiter is not None:
            waiter[1] = step.outcome
            waiter[0].set()

    def _wake_state(self) -> None:
        pass  # ``_dispatch`` wakes the waiters when the availability changed

    def _deliver(self) -> None:
        """Run what ``_route_events`` queued, in order, one thread at a time, unlocked."""
        if not self._deliveries:
            # Nothing queued (most turns). Read without the lock: a job queued after
            # this is delivered by the turn that queued it.
            return
        while True:
            with self._lock:
                if self._delivering or not self._deliveries:
                    return
                self._delivering = True
                job = self._deliveries.popleft()
            try:
                job()
            finally:
                with self._lock:
                    self._delivering = False

    # --- the primitives the surface calls (_surface.py) -------------------------------

    def _perform_call(self, begin: Begin, on_progress: ProgressCallback | None) -> Any:
        handle, here = self._begin_call(begin, on_progress, here=True)
        return self._finish_call(handle, here)

    def _perform_refresh(self) -> SyncReport:
        done = threading.Event()
        waiter: list[Any] = [done, None]
        with self._turn:
            engine = self._engine
            assert engine is not None
            refresh_id = engine.refresh(self._now())
            self._refreshes[refresh_id] = waiter
            self._dispatch()
        try:
            done.wait()
        finally:
            with self._lock:
                self._refreshes.pop(refresh_id, None)
        outcome = waiter[1]
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, SyncReport)
        return outcome

    def _wait_for(
        self, check: Callable[[], _T | None], timeout: float | None, *, login: bool = False
    ) -> _T | None:
        end = None if timeout is None else self._now() + timeout
        with self._lock:
            self._login_waiting += login
            try:
                while (found := check()) is None:
                    left = None if end is None else end - self._now()
                    if left is not None and left <= 0:
                        return None
                    self._changed.wait(left)
                return found
            finally:
                self._login_waiting -= login

    def _begin_reconnect(self) -> None:
        with self._turn:
            engine = self._engine
            if engine is not None and not self._closing:
                engine.reconnect(self._now())
                self._dispatch()

    # --- what only the blocking client has ---------------------------------------------

    def start_call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> CallHandle:
        """Start a call and return its handle at once (after readiness)."""
        begin = _call_begin(tool_id, arguments, timeout, meta, on_input)
        handle, _ = self._begin_call(begin, on_progress, here=False)
        return handle

    def _begin_call(
        self, begin: Begin, on_progress: ProgressCallback | None, *, here: bool
    ) -> tuple[CallHandle, tuple[HttpRequest, _Exchange] | None]:
        """Start a call (or another request of the host: F1) with ``begin``; with
        ``here``, its exchange is returned for this thread to perform."""
        self._ensure_ready()
        with self._turn:
            engine = self._engine
            assert engine is not None
            if self._closing:
                raise Unavailable("the client was closed", server=self.name)
            call_id = begin(engine, self._now())
            handle = CallHandle(self, call_id, on_progress)
            self._calls[call_id] = handle
            return handle, self._dispatch(perform_here=call_id if here else None)

    def _finish_call(self, handle: CallHandle, here: tuple[HttpRequest, _Exchange] | None) -> Any:
        if here is not None:
            try:
                self._exchange(*here, caller=handle)
            except BaseException:  # Ctrl-C (KeyboardInterrupt) mid-exchange
                handle.cancel()
                raise
        return handle._wait(None)

    def _cancel(self, handle: CallHandle, reason: str) -> bool:
        with self._turn:
            engine = self._engine
            if engine is None or handle.done:
                return False
            cancelled = engine.cancel(handle.call_id, self._now(), reason)
            self._dispatch()
        return cancelled

    def _set_options(self, **changes: Any) -> None:
        with self._lock:
            super()._set_options(**changes)
