"""``McpClient`` for threads: the same client as ``mcpcore_anyio``, blocking.

The client holds no protocol state: one lock guards the engine; a named
daemon thread sleeps until the engine's next deadline. ``call()`` performs
its own call's HTTP exchange in the caller's thread (no thread is started
for it, which is most of a call's cost otherwise); every other exchange gets
a thread of its own. Either way each piece that arrives is fed to the engine.
Aborting an exchange ends it wherever it stands: the name lookup, the
connect, TLS, a write or a read (D1, see ``_network``), so a cancelled or
timed-out call, and ``close()``, never wait for the server.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Unpack, cast, overload

from mcpcore import (
    AbortExchange,
    Availability,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    ClientBase,
    ClientOptions,
    ConfigError,
    ElicitationCompleted,
    Event,
    HttpClientEngine,
    HttpRequest,
    InvalidState,
    InvalidValue,
    LocalServer,
    LogMessage,
    McpError,
    ProgressReceived,
    PromptsListChanged,
    RefreshFailed,
    RegistrationContract,
    RemoteServer,
    RequestSucceeded,
    ResourcesListChanged,
    ResourceUpdated,
    StartFailed,
    StdioClientEngine,
    SyncReport,
    Tool,
    ToolOutput,
    ToolsListChanged,
    ToolsRefreshed,
    TransportFailure,
    Unavailable,
    call_outcome,
    closed_outcome,
    prepare_client,
    refresh_outcome,
)

if TYPE_CHECKING:
    import ssl

    import httpcore

    # OAuth's names load only when a client uses it (B5: import time).
    from mcpcore import (
        Ask,
        AskHost,
        AuthAction,
        Completion,
        Continuation,
        Elicitation,
        ElicitResult,
        HookCall,
        InputRequired,
        Listing,
        Prompt,
        PromptResult,
        ReadResult,
        RequestObserver,
        Resource,
        ResourceTemplate,
        SampleResult,
        Sampling,
        SignAssertion,
        TaskHandle,
        TaskStatus,
        TokenStore,
    )

    from ._network import Pool

from ._children import _Children

# _network imports _Abort and _Performing from here (tests too, with _Permits).
from ._threads import _Abort as _Abort
from ._threads import _Performing as _Performing
from ._threads import _Permits, _Workers

__all__ = ["CallHandle", "McpClient", "ProgressCallback", "ToolRegistration"]

_log = logging.getLogger("mcpcore.threaded")
# F2, F5: the events an on_list_changed hook hears of (each names its list as ``what``).
_LIST_CHANGES = (ToolsListChanged, ResourcesListChanged, PromptsListChanged)

_AWAKE = float("-inf")  # the timer thread is not waiting: no need to wake it

ProgressCallback = Callable[[float, "float | None", "str | None"], None]


# --- waiters ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Exchange:
    """One HTTP exchange and the thread performing it (a caller's own, or one started for it)."""

    thread: threading.Thread | None = None
    aborted: bool = False
    abort: _Abort = field(default_factory=_Abort)  # what ends its steps, wherever it stands


class CallHandle:
    """A call in flight: ``result()`` blocks for it, ``cancel()`` abandons it from any thread."""

    def __init__(
        self, client: McpClient, call_id: int, on_progress: ProgressCallback | None
    ) -> None:
        self._client = client
        self.call_id = call_id
        self.on_progress = on_progress
        # Not an Event (a Condition built and notified per call): a caller that
        # performed its own exchange finds the outcome in place and never waits;
        # a thread that does wait has a lock of its own, released by _finish.
        self._guard = threading.Lock()
        self._waiters: list[threading.Lock] = []
        self._done = False  # set once the outcome is in place
        self._output: Any = None
        self._error: BaseException | None = None

    def _finish(self, output: Any, error: BaseException | None) -> None:
        with self._guard:
            if self._done:  # the first outcome stands (close() may come after it)
                return
            self._output, self._error = output, error
            self._done = True
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.release()

    @property
    def done(self) -> bool:
        return self._done

    def cancel(self, reason: str = "cancelled by the caller") -> bool:
        """K6: abandon the call; ``notifications/cancelled`` goes to the server."""
        return self._client._cancel(self, reason)

    def _stop_waiting(self, waiter: threading.Lock) -> None:
        with self._guard:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def result(self, timeout: float | None = None) -> ToolOutput:
        """Block until the call ends. Ctrl-C while waiting cancels the call (K6)."""
        output: ToolOutput = self._wait(timeout)
        return output

    def _wait(self, timeout: float | None) -> Any:
        if not self._done:
            waiter = threading.Lock()
            waiter.acquire()
            with self._guard:
                waiting = not self._done
                if waiting:
                    self._waiters.append(waiter)
            if waiting:
                try:
                    finished = waiter.acquire(timeout=-1 if timeout is None else max(0, timeout))
                except BaseException:  # Ctrl-C (KeyboardInterrupt) while waiting
                    self._stop_waiting(waiter)
                    if not self._done:
                        self.cancel()
                    raise
                if not finished:
                    self._stop_waiting(waiter)
                    if not self._done:  # (it may have ended just as the wait did)
                        raise TimeoutError(
                            "the call is still running; result() may be called again"
                        )
        if self._error is not None:
            raise self._error
        assert self._output is not None
        return self._output


class ToolRegistration:
    """One tool put into a host registry by ``register_into``: ``reg(args)`` calls it."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    def __call__(self, arguments: Mapping[str, Any] | None = None, **kwargs: Any) -> ToolOutput:
        # The contract's timeout is the client's default: not passed as the caller's
        # own, so a call the server runs as a task follows task_timeout (T9).
        output: ToolOutput = self.client.call(self.tool.id, arguments, **kwargs)
        return output

    def __repr__(self) -> str:
        return f"ToolRegistration({self.tool.id!r})"


class ResourceReader:
    """F4: a server's ``read_resource`` tool put into a host registry by
    ``register_into(registry, resources=True)``: ``reader({"uri": uri})`` reads
    the resource and returns its contents as a ``ToolOutput`` (bounded)."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    def __call__(self, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        client = self.client
        ask = client._reader_ask(arguments)
        result = client._ask(ask, self.contract.timeout)
        return client._reader_output(result)

    def __repr__(self) -> str:
        return f"ResourceReader({self.tool.id!r})"


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


class McpClient(ClientBase):
    """One MCP server, used from blocking code. The same names as ``mcpcore_anyio``.

    Constructing does no I/O (L1) and never raises for an invalid or refused
    entry: such a client is unavailable and ``ready()`` says why.
    """

    def __init__(
        self,
        name: str,
        server: RemoteServer | LocalServer | ConfigError | Mapping[str, Any],
        *,
        ssl_context: ssl.SSLContext | None = None,
        authorize: Callable[[str, str], str] | None = None,
        sign_assertion: Callable[[SignAssertion], str] | None = None,
        elicit: Callable[[Elicitation], ElicitResult] | None = None,
        on_elicitation_complete: Callable[[str, str], None] | None = None,
        roots: Sequence[str | Mapping[str, str]]
        | Callable[[], Sequence[str | Mapping[str, str]]]
        | None = None,
        sample: Callable[[Sampling], SampleResult] | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        """``authorize(url, redirect_uri)``: send a person to ``url`` and return the
        full URL the authorization server redirected them to (with ``auth=``);
        ``sign_assertion(request)``: a signed JWT for ``private_key_jwt`` (A3, A5);
        ``elicit(question)``: put a server's question (``Elicitation``) to the
        person and return their ``ElicitResult`` (Q1; given, it is declared to the
        server); ``on_elicitation_complete(server, elicitation_id)``: the server
        says a URL question is done (Q2, with ``elicit_url=True``); ``roots``: the
        host's roots, ``file://`` URIs (or ``{"uri", "name"}`` mappings), or a
        function returning them; ``sample(request)``: a completion from the host's
        model for a ``Sampling`` request, as a ``SampleResult`` (Q3; each declared
        only when given). All block;
        each hook runs on a thread of its own, never under the client's lock, as
        does each method of the token store (D2)."""
        self._authorize = authorize
        self._sign_assertion = sign_assertion
        setup = prepare_client(name, server, options, env=os.environ, home=os.path.expanduser("~"))
        self._on_log = options.get("on_log")  # F8: checked by prepare_client
        self._on_resource_updated = options.get("on_resource_updated")  # F2
        self._on_list_changed = options.get("on_list_changed")  # F2, F5
        self.name = setup.name  # lowercased in ASCII: the form tool ids and hubs use (C4)
        self._options = setup.session
        self._offer_input(elicit, roots, sample)
        self._on_elicitation_complete = on_elicitation_complete
        self._limits = setup.limits
        self._close_grace = setup.close_grace  # S3, for a local server
        self._max_connections = setup.max_connections
        self._listen = setup.listen
        self._ssl_context = ssl_context
        # the proxy for each origin, chosen by the core from proxy= or the environment
        outbound = setup.outbound
        self._proxy = (
            outbound.proxy_for_origin
            if outbound is not None and outbound.proxies_possible
            else None
        )
        self._config_error = setup.config_error
        self._server = setup.server
        self._observer = _tracing() if setup.tracing else None
        self._header_source = setup.headers  # V3: headers computed per request
        self._auth = setup.auth
        if authorize is None and setup.auth is not None:
            # A ready sign-in brings its own hook; one of the wrong kind is the
            # engine's to classify when it answers (D2: unusable).
            self._authorize = cast("Callable[[str, str], str]", setup.auth.authorize)
        if setup.auth is not None and isinstance(setup.server, RemoteServer):
            # Every option mistake raises now, not at start: a hook needs a redirect_uri.
            setup.auth.config(setup.server.url, interactive=self._authorize is not None)
        self._store: TokenStore | None = None
        self._engine: HttpClientEngine | StdioClientEngine | None = None
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
        self._deliveries: deque[Callable[[], None]] = deque()  # see _deliver
        self._delivering = False
        self._thread: threading.Thread | None = None
        self._started = False
        self._closing = False  # close() began: no new calls
        self._closed = False  # closing is over: the timer thread stops
        self._children: _Children | None = None
        self._login_waiting = 0  # callers of login() waiting for it to settle

    def __repr__(self) -> str:
        return f"McpClient({self.name!r}, {self._server!r})"

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Start the background connect on one named daemon thread (L2)."""
        with self._lock:
            if self._started:
                raise InvalidState("the client was already started")
            self._started = True
            if self._server is None:
                return
            if isinstance(self._server, RemoteServer):
                import secrets  # B5: hashlib and OpenSSL load on the first remote start

                self._engine = self._remote_engine(
                    self._server,
                    token_bytes=secrets.token_bytes,
                    wall_offset=time.time() - self._now(),
                )
                # httpcore is imported on the first remote start, not with the
                # driver: a program with only local servers never needs it (B5).
                from ._network import connection_pool

                self._pool = connection_pool(
                    self._ssl_context, self._max_connections, self._performing, proxy=self._proxy
                )
            else:
                self._engine = StdioClientEngine(
                    self._server,
                    environ=os.environ,
                    options=self._options,
                    max_line_size=self._limits.stdio_line_limit,
                    close_grace=self._close_grace,
                )
                self._children = _Children(self)
            self._engine.observer = self._observer  # V2 (None: tracing off)
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
        here: tuple[HttpRequest, _Exchange] | None = None
        if isinstance(engine, HttpClientEngine):
            for action in engine.take_actions():
                if isinstance(action, AbortExchange):
                    self._abort(action.exchange_id)
                elif self._closed:
                    pass
                elif not isinstance(action, HttpRequest):
                    self._perform_auth(action)
                elif perform_here is not None and action.request_id == perform_here:
                    here = (action, _Exchange(thread=threading.current_thread()))
                    self._exchanges[action.exchange_id] = here[1]
                else:
                    self._submit_exchange(action)
        elif self._children is not None:
            for process_action in engine.take_actions():
                self._children.perform(process_action)
        if not self._closed:
            for question in engine.take_input():
                self._perform_auth(question)
        events = engine.take_events()
        if events:
            self._route_events(events)
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

    def _run_hook(self, call: HookCall) -> None:
        value: object = None
        error: Exception | None = None
        try:
            value = call.invoke()
        except Exception as exc:  # the hook's own failure: the engine decides (D2)
            error = exc
        with self._turn:
            engine = self._engine
            assert engine is not None
            call.report(engine, self._now(), value=value, error=error)
            self._dispatch()

    def _abort(self, xid: int) -> None:
        exchange = self._exchanges.pop(xid, None)
        if exchange is None:
            return
        exchange.aborted = True
        exchange.abort.abort()

    def _submit_exchange(self, request: HttpRequest) -> None:
        exchange = _Exchange()
        self._exchanges[request.exchange_id] = exchange
        self._workers.submit(lambda: self._exchange(request, exchange))

    def _exchange(
        self, request: HttpRequest, exchange: _Exchange, caller: CallHandle | None = None
    ) -> None:
        """Perform one HTTP exchange, reporting each piece to the engine.

        ``caller`` is the call whose thread this is: once that call has its
        outcome, whatever the server still sends on the stream is read by a
        thread of its own (``_read_rest``) unless it ends without waiting, so
        the caller returns at once.
        """
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
        try:
            response = pool.handle_request(
                http_request(
                    request.method, request.url, request.headers, request.body, request.replayable
                )
            )
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
            self._report_failed(xid, exchange, exc)
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

    def _report_failed(self, xid: int, exchange: _Exchange, exc: Exception) -> None:
        with self._turn:
            if not exchange.aborted:
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

    def _route_events(self, events: list[Event]) -> None:
        """Under the lock: queue what each event means to a caller, in order.

        Nothing a caller supplied runs here: ``_deliver`` runs the queue once
        the lock is released, so an ``on_progress`` callback may block or call
        back into the client.
        """
        for event in events:
            if isinstance(event, StartFailed):
                _log.info("server %r is unavailable: %s", self.name, event.error)
            elif isinstance(event, (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)):
                handle = self._calls.pop(event.call_id, None)
                if handle is not None:
                    outcome = call_outcome(event, server=self.name)
                    output, error = (
                        (None, outcome) if isinstance(outcome, McpError) else (outcome, None)
                    )
                    if self._deliveries or self._delivering:
                        # after what was queued before it (its progress reports, say)
                        self._deliveries.append(partial(handle._finish, output, error))
                    else:
                        # nothing before it: finished here (no caller code runs in it)
                        handle._finish(output, error)
            elif isinstance(event, ProgressReceived):
                handle = self._calls.get(event.call_id)
                if handle is not None and handle.on_progress is not None:
                    self._deliveries.append(partial(_report_progress, handle.on_progress, event))
            elif isinstance(event, LogMessage) and self._on_log is not None:
                self._deliveries.append(partial(_report_hook, "on_log", self._on_log, event))
            elif isinstance(event, ResourceUpdated) and self._on_resource_updated is not None:
                hook = self._on_resource_updated
                self._deliveries.append(partial(_report_hook, "on_resource_updated", hook, event))
            elif isinstance(event, _LIST_CHANGES) and self._on_list_changed is not None:
                self._deliveries.append(
                    partial(
                        _report_hook,
                        "on_list_changed",
                        self._on_list_changed,
                        self.name,
                        event.what,
                    )
                )
            elif isinstance(event, ElicitationCompleted):
                if self._on_elicitation_complete is not None:
                    self._deliveries.append(
                        partial(_report_completed, self._on_elicitation_complete, event)
                    )
            elif isinstance(event, (ToolsRefreshed, RefreshFailed)):
                waiter = self._refreshes.get(event.refresh_id or 0)
                if waiter is None:
                    continue
                waiter[1] = refresh_outcome(event)
                waiter[0].set()

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

    # --- what callers use --------------------------------------------------------------

    def login(self, timeout: float | None = None) -> Availability:
        """A3: sign in to this server now, through the ``authorize`` hook; this also asks
        a person again after they declined (they are not asked again on their own).
        Waits for the start-up attempt that follows (at most ``timeout``) and returns
        the availability then; a client already up stays up meanwhile."""
        with self._turn:
            engine = self._login_engine()
            engine.login(self._now())
            self._dispatch()
        end = None if timeout is None else self._now() + timeout
        with self._lock:
            self._login_waiting += 1
            try:
                while not engine.login_settled:
                    left = None if end is None else end - self._now()
                    if self._closing or (left is not None and left <= 0):
                        break
                    self._changed.wait(left)
            finally:
                self._login_waiting -= 1
            known = engine.availability
        return known or Availability(False, f"still signing in after {timeout} s")

    def ready(self, timeout: float | None = None) -> Availability:
        """Block for the current start-up attempt (L3); unavailable at once while down."""
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState("start the client first (with, or start())")
        end = None if timeout is None else self._now() + timeout
        with self._lock:
            while True:
                engine = self._engine
                assert engine is not None
                availability = engine.availability
                if availability is not None:
                    return availability
                if self._closing:
                    return Availability(False, "the client is closed")
                remaining = None if end is None else end - self._now()
                if remaining is not None and remaining <= 0:
                    return Availability(False, f"still starting after {timeout:g} s")
                self._changed.wait(remaining)

    def reconnect(self, timeout: float | None = None) -> Availability:
        """L8: set up a new session now, then block for it as ``ready()`` does.

        For a server that restarted, or a host that knows better than the backoff:
        calls running on the old session fail with ``TransportError`` (they may have
        run, so nothing is sent again); a server that is down is tried at once.
        """
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState("start the client first (with, or start())")
        self._begin_reconnect()
        return self.ready(timeout)

    def _begin_reconnect(self) -> None:
        with self._turn:
            engine = self._engine
            if engine is not None and not self._closing:
                engine.reconnect(self._now())
                self._dispatch()

    def _ensure_ready(self) -> None:
        availability = self.ready()
        if not availability.ok:
            raise Unavailable(availability.reason or "unavailable", server=self.name)

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
        handle, _ = self._begin_call(
            tool_id, arguments, timeout, on_progress, here=False, meta=meta, on_input=on_input
        )
        return handle

    def _begin_call(
        self,
        tool_id: str | Ask,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        *,
        here: bool,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
        resume: tuple[Continuation, Mapping[str, Any]] | None = None,
        begin: Callable[[HttpClientEngine | StdioClientEngine, float], int] | None = None,
    ) -> tuple[CallHandle, tuple[HttpRequest, _Exchange] | None]:
        """Start a call (or, given an ``Ask``, another request of the host: F1); with
        ``here``, its exchange is returned for this thread to perform."""
        self._ensure_ready()
        with self._turn:
            engine = self._engine
            assert engine is not None
            if self._closing:
                raise Unavailable("the client was closed", server=self.name)
            if begin is not None:
                call_id = begin(engine, self._now())
            elif resume is not None:
                call_id = engine.resume(*resume, self._now(), timeout=timeout)
            elif isinstance(tool_id, str):
                call_id = engine.call(
                    tool_id, arguments, self._now(), timeout=timeout, meta=meta, on_input=on_input
                )
            else:
                call_id = engine.request(tool_id, self._now(), timeout=timeout)
            handle = CallHandle(self, call_id, on_progress)
            self._calls[call_id] = handle
            return handle, self._dispatch(perform_here=call_id if here else None)

    @overload
    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook"] = "hook",
    ) -> ToolOutput: ...

    @overload
    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["return"],
    ) -> ToolOutput | InputRequired: ...

    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> ToolOutput | InputRequired:
        """Call the tool ``tool_id`` (``server/tool``, as ``tools`` lists it) with
        ``arguments`` and block until it finishes; returns its ``ToolOutput``.
        ``meta`` adds keys of your own to the request's ``_meta`` (a tenant or
        request id); the client's own keys cannot be set (``ValueError``).

        Fails with ``UnknownTool`` (naming the id probably meant) or ``InvalidArguments``
        (arguments JSON cannot carry) before anything is sent; ``BackendError`` when the
        tool reports an error (``isError``); ``CallTimeout`` past ``timeout`` (the
        client's ``call_timeout`` by default); ``Unavailable`` or ``TransportError``
        when the server cannot be reached. ``on_progress(progress, total, message)``
        is called for each progress report.
        ``on_input="return"``: when a 2026-07-28 server asks the person something,
        the call returns an ``InputRequired`` (its questions and a ``Continuation``)
        instead of asking the ``elicit`` hook; ``resume()`` finishes it (Q4). In the
        handshake era questions go to the hook as usual.
        """
        handle, here = self._begin_call(
            tool_id, arguments, timeout, on_progress, here=True, meta=meta, on_input=on_input
        )
        output: ToolOutput | InputRequired = self._finish_call(handle, here)
        return output

    def set_roots(
        self,
        roots: Sequence[str | Mapping[str, str]] | Callable[[], Sequence[str | Mapping[str, str]]],
    ) -> None:
        """Q3: new roots (a list, or a function returning one) for a client created
        with ``roots=``; a handshake-era server is told they changed.
        ``InvalidState`` for a client given no roots, ``InvalidValue`` for a list
        that is not one of ``file://`` URIs."""
        with self._turn:
            self._change_roots(roots)
            engine = self._engine
            if engine is not None and not self._closing:
                engine.roots_changed(self._now())
                self._dispatch()

    def resume(
        self,
        continuation: Continuation,
        responses: Mapping[str, ElicitResult],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Finish a call that returned an ``InputRequired`` (Q4): ``responses`` maps
        each question's key to the person's ``ElicitResult``. Any client of the same
        server may resume it (a continuation read back with
        ``Continuation.from_json``), once. Returns the tool's output, or another
        ``InputRequired`` when the server asks again. Raises at once, with nothing
        sent, for a continuation of another server or one resumed already, or
        answers that do not fit (``InvalidValue``, ``InvalidState``, ``InputError``).
        """
        handle, here = self._begin_call(
            "", None, timeout, on_progress, here=True, resume=(continuation, responses)
        )
        output: ToolOutput | InputRequired = self._finish_call(handle, here)
        return output

    def start_task(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> TaskHandle | ToolOutput | InputRequired:
        """Start a call and return as soon as the server runs it as a task (T8):
        its ``TaskHandle`` (``task_id``, ``server``, ``tool``; ``to_json()`` keeps
        it), to follow with ``resume_task()``, ask about with ``task_status()`` or
        stop with ``cancel_task()``, here or from a new client in another
        process. A server that answers the call directly gives its ``ToolOutput``
        (or ``InputRequired``) as ``call()`` would. Needs ``tasks=True`` for a
        server to make a task at all. Raises as ``call()`` does. (Not named
        ``start_call``: the blocking client's ``start_call`` is a call in flight.)
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.start_task(
                tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input
            )

        handle, here = self._begin_call("", None, timeout, on_progress, here=True, begin=begin)
        started: TaskHandle | ToolOutput | InputRequired = self._finish_call(handle, here)
        return started

    def resume_task(
        self,
        task: TaskHandle | str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Follow a task to its end (T8), from its ``TaskHandle`` (or its id, on
        this client's server) and return the tool's ``ToolOutput``, as ``call()``
        would have; status changes come to ``on_progress``. ``timeout``: how long
        to follow it (the client's ``task_timeout`` by default). A task that
        failed raises ``BackendError``; one cancelled ``Cancelled``; a handle of
        another server ``InvalidValue`` (nothing sent). Giving up (Ctrl-C, or
        ``CallHandle.cancel``) sends ``tasks/cancel``.
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.resume_task(task, now, timeout=timeout)

        handle, here = self._begin_call("", None, timeout, on_progress, here=True, begin=begin)
        output: ToolOutput | InputRequired = self._finish_call(handle, here)
        return output

    def task_status(self, task: TaskHandle | str, *, timeout: float | None = None) -> TaskStatus:
        """Ask the server once where a task stands (``tasks/get``) → ``TaskStatus``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.task_status(task, now, timeout=timeout)

        handle, here = self._begin_call("", None, timeout, None, here=True, begin=begin)
        status: TaskStatus = self._finish_call(handle, here)
        return status

    def cancel_task(self, task: TaskHandle | str, *, timeout: float | None = None) -> None:
        """Ask the server to cancel a task (``tasks/cancel``); returns once the server
        acknowledged it. A call following the task then raises ``Cancelled``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.cancel_task(task, now, timeout=timeout)

        handle, here = self._begin_call("", None, timeout, None, here=True, begin=begin)
        self._finish_call(handle, here)

    def _finish_call(self, handle: CallHandle, here: tuple[HttpRequest, _Exchange] | None) -> Any:
        if here is not None:
            try:
                self._exchange(*here, caller=handle)
            except BaseException:  # Ctrl-C (KeyboardInterrupt) mid-exchange
                handle.cancel()
                raise
        return handle._wait(None)

    def _ask(self, ask: Ask, timeout: float | None) -> Any:
        """Send one request of the host (F1) and block for what it reads.
        (``ask`` was built first: a caller's mistake is refused before any wait.)"""
        handle, here = self._begin_call(ask, None, timeout, None, here=True)
        if here is not None:
            try:
                self._exchange(*here, caller=handle)
            except BaseException:  # Ctrl-C (KeyboardInterrupt) mid-exchange
                handle.cancel()
                raise
        return handle._wait(None)

    def _change_subscription(self, uri: str, on: bool, timeout: float | None) -> None:
        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.subscribe(uri, now, on=on, timeout=timeout)  # F2

        handle, here = self._begin_call("", None, timeout, None, here=True, begin=begin)
        if here is not None:
            try:
                self._exchange(*here, caller=handle)
            except BaseException:  # Ctrl-C (KeyboardInterrupt) mid-exchange
                handle.cancel()
                raise
        handle._wait(None)

    def list_resources(self, *, timeout: float | None = None) -> Listing[Resource]:
        """F2: every resource the server lists (all pages), with its cache hints."""
        return self._ask(self._ask_list("resources"), timeout)  # type: ignore[no-any-return]

    def list_resource_templates(self, *, timeout: float | None = None) -> Listing[ResourceTemplate]:
        """F2, F3: every resource template the server lists (all pages)."""
        return self._ask(self._ask_list("templates"), timeout)  # type: ignore[no-any-return]

    def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResult:
        """F2, F4: read one resource (a listed URI, an expanded template, a tool's
        ``resource_link``); ``ResourceNotFound`` when the server has none there."""
        return self._ask(self._ask_read(uri), timeout)  # type: ignore[no-any-return]

    def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: be told (``on_resource_updated=``) when the resource at ``uri`` changes;
        the subscription lasts for the client's life, across new sessions.
        ``NotOffered`` (nothing sent) when the server does not declare
        ``resources.subscribe``, or (at 2026-07-28) leaves ``uri`` out."""
        self._change_subscription(uri, True, timeout)

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: stop the subscription to ``uri``."""
        self._change_subscription(uri, False, timeout)

    def list_prompts(self, *, timeout: float | None = None) -> Listing[Prompt]:
        """F5: every prompt the server lists (all pages)."""
        return self._ask(self._ask_list("prompts"), timeout)  # type: ignore[no-any-return]

    def complete(
        self,
        ref: Prompt | ResourceTemplate | Mapping[str, str],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Completion:
        """F6: the server's suggestions for ``argument`` of a prompt or a resource
        template, given what was typed so far (``value``) and the arguments already
        chosen (``context``); at most 100 values."""
        ask = self._ask_complete(ref, argument, value, context)
        return self._ask(ask, timeout)  # type: ignore[no-any-return]

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> PromptResult:
        """F5: one prompt's messages; the arguments are strings (anything else is
        refused before sending, ``InvalidArguments``)."""
        return self._ask(self._ask_prompt(name, arguments), timeout)  # type: ignore[no-any-return]

    def _cancel(self, handle: CallHandle, reason: str) -> bool:
        with self._turn:
            engine = self._engine
            if engine is None or handle.done:
                return False
            cancelled = engine.cancel(handle.call_id, self._now(), reason)
            self._dispatch()
        return cancelled

    def refresh(self) -> SyncReport:
        """Re-list the tools (T6) → what changed since the last listing."""
        self._ensure_ready()
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

    # --- a host's tool registry ----------------------------------------------------------------

    def _make_registration(self, tool: Tool) -> ToolRegistration:
        return ToolRegistration(self, tool, self._options.call_timeout, self._options.policy)

    def _make_reader(self, tool: Tool) -> ResourceReader:
        return ResourceReader(self, tool, self._options.call_timeout, self._options.policy)

    def _set_options(self, **changes: Any) -> None:
        with self._lock:
            super()._set_options(**changes)

    def sync_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        """Re-list the tools and bring ``registry`` (filled by ``register_into``) up to
        date: new tools are added, removed ones taken out, changed ones replaced;
        registrations of unchanged tools are kept. Returns what changed."""
        self.refresh()
        return self._mirror_into(registry)


def _report_completed(callback: Callable[[str, str], None], event: ElicitationCompleted) -> None:
    try:
        callback(event.server, event.elicitation_id)
    except Exception:
        _log.exception("on_elicitation_complete callback failed")


def _report_hook(name: str, callback: Callable[..., object], *args: object) -> None:
    """F2, F8: a host's on_log, on_resource_updated or on_list_changed, run unlocked
    and in order; what it raises is logged."""
    try:
        callback(*args)
    except Exception:
        _log.exception("%s callback failed", name)


def _report_progress(callback: ProgressCallback, event: ProgressReceived) -> None:
    try:
        callback(event.progress, event.total, event.message)
    except Exception:
        _log.exception("on_progress callback failed")


def _tracing() -> RequestObserver:
    """V2: the OpenTelemetry observer, loaded only for ``tracing=True``."""
    try:
        from mcpcore_otel import client_tracing
    except ImportError:
        raise InvalidValue(
            "tracing=True needs OpenTelemetry: pip install 'mcpcore[otel]'"
        ) from None
    return client_tracing()
