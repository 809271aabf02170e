"""What a caller of ``McpClient`` uses, written once: the source of both drivers' surfaces.

Every public method of the client (``call``, ``list_resources``,
``start_task``, ``ready``, ...) with its docstring lives here, as calls of a few
driver primitives that ``McpClient`` (``_client.py``) implements with its own
I/O: ``_perform_call`` (start a request in the engine and wait for its
outcome), ``_perform_refresh``, ``_act`` (one turn of the engine, then its
actions performed), ``_act_soon``, ``_wait_for`` (wait until the client's state
says so) and ``_begin_reconnect``. ``scripts/unasync.py`` writes the blocking
driver's copy (``mcpcore_threaded/_surface.py``) from this file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, Unpack, cast, overload

from mcpcore import (
    AbortExchange,
    Availability,
    ClientBase,
    ClientOptions,
    ConfigError,
    Event,
    HostCallback,
    HttpClientEngine,
    HttpRequest,
    InvalidState,
    InvalidValue,
    LocalServer,
    RegistrationContract,
    RemoteServer,
    StateChange,
    StdioClientEngine,
    SyncReport,
    Tool,
    ToolOutput,
    Unavailable,
    WakeCall,
    WakeRefresh,
    prepare_client,
    route,
)

if TYPE_CHECKING:
    import ssl

    from mcpcore import (
        Ask,
        AskHost,
        AuthAction,
        AuthOptions,
        Completion,
        Continuation,
        Elicitation,
        ElicitResult,
        HookCall,
        InputRequired,
        Listing,
        ProcessAction,
        Prompt,
        PromptResult,
        ReadResult,
        RequestObserver,
        Resource,
        ResourceTemplate,
        SampleResult,
        Sampling,
        SignAssertion,
        Skill,
        SkillFileContent,
        TaskHandle,
        TaskStatus,
    )

    from ._asgi import AsgiApp  # anyio only
    from ._client import McpClient

__all__ = ["ClientSurface", "ProgressCallback", "ResourceReader", "ToolRegistration"]

_log = logging.getLogger("mcpcore.anyio")

ProgressCallback = Callable[[float, "float | None", "str | None"], "Awaitable[None] | None"]

# What starts one request in the engine (given the time) and returns its call id.
Begin = Callable[["HttpClientEngine | StdioClientEngine", float], int]
_T = TypeVar("_T")
_H = TypeVar("_H")  # a driver's exchange for the calling task or thread to perform


if TYPE_CHECKING:  # annotations only: a Protocol class costs import time (B5)

    class _Waiting(Protocol):
        """What the surface reads of a driver's waiting call."""

        @property
        def on_progress(self) -> ProgressCallback | None: ...

    class _ProcessPerformer(Protocol):
        """What the surface hands a local server's process actions to."""

        def perform(self, action: ProcessAction) -> None: ...


class ToolRegistration:
    """One tool put into a host registry by ``register_into``: ``await reg(args)`` calls it."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    async def __call__(
        self, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> ToolOutput:
        # The contract's timeout is the client's default: not passed as the caller's
        # own, so a call the server runs as a task follows task_timeout (T9).
        output: ToolOutput = await self.client.call(self.tool.id, arguments, **kwargs)
        return output

    def __repr__(self) -> str:
        return f"ToolRegistration({self.tool.id!r})"


class ResourceReader:
    """F4: a server's ``read_resource`` tool put into a host registry by
    ``register_into(registry, resources=True)``: ``await reader({"uri": uri})`` reads
    the resource and returns its contents as a ``ToolOutput`` (bounded)."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    async def __call__(self, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        client = self.client
        ask = client._reader_ask(arguments)
        result = await client._ask(ask, self.contract.timeout)
        return client._reader_output(result)

    def __repr__(self) -> str:
        return f"ResourceReader({self.tool.id!r})"


class ClientSurface(ClientBase):
    """The public methods of ``McpClient``, over the driver's primitives."""

    _START_FIRST: ClassVar[str]  # what ready() says to a caller who did not start the client
    _turn: AbstractContextManager[object]  # one turn of the engine (the threads' lock)
    _calls: Mapping[int, _Waiting]  # the calls waiting for their outcome, by call id
    _children: _ProcessPerformer | None  # a local server's child processes, once started

    def __init__(
        self,
        name: str,
        server: RemoteServer | LocalServer | ConfigError | Mapping[str, Any],
        *,
        ssl_context: ssl.SSLContext | None = None,
        asgi_app: AsgiApp | None = None,  # anyio only
        authorize: Callable[[str, str], Awaitable[str]] | None = None,
        sign_assertion: Callable[[SignAssertion], Awaitable[str]] | None = None,
        elicit: Callable[[Elicitation], Awaitable[ElicitResult]] | None = None,
        on_elicitation_complete: Callable[[str, str], Awaitable[None] | None] | None = None,
        roots: Sequence[str | Mapping[str, str]]
        | Callable[[], Awaitable[Sequence[str | Mapping[str, str]]]]
        | None = None,
        sample: Callable[[Sampling], Awaitable[SampleResult]] | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        """``authorize(url, redirect_uri)``: send a person to ``url`` and return the
        full URL the authorization server redirected them to (with ``auth=``);
        ``sign_assertion(request)``: a signed JWT for ``private_key_jwt`` (A3, A5);
        ``elicit(question)``: put a server's question (``Elicitation``) to the
        person and return their ``ElicitResult`` (Q1). Given, it is declared to
        the server; left out, the client declares nothing and refuses questions.
        ``on_elicitation_complete(server, elicitation_id)``: the server says a URL
        question is done (Q2, with ``elicit_url=True``). ``roots``: the host's
        roots, ``file://`` URIs (or ``{"uri", "name"}`` mappings), or a coroutine
        function returning them; ``sample(request)``: a completion from the host's
        model for a ``Sampling`` request, as a ``SampleResult`` (Q3). Each is
        declared only when given."""
        self._asgi_app = asgi_app  # anyio only
        self._setup(
            name,
            server,
            options,
            ssl_context=ssl_context,
            authorize=authorize,
            sign_assertion=sign_assertion,
            elicit=elicit,
            on_elicitation_complete=on_elicitation_complete,
            roots=roots,
            sample=sample,
        )
        self._init_io()

    def _init_io(self) -> None:
        """The state of the driver's I/O (no I/O yet)."""
        raise NotImplementedError

    def _setup(
        self,
        name: str,
        server: RemoteServer | LocalServer | ConfigError | Mapping[str, Any],
        options: ClientOptions,
        *,
        ssl_context: ssl.SSLContext | None,
        authorize: Callable[[str, str], Awaitable[str]] | None,
        sign_assertion: Callable[[SignAssertion], Awaitable[str]] | None,
        elicit: Callable[[Elicitation], Awaitable[ElicitResult]] | None,
        on_elicitation_complete: Callable[[str, str], Awaitable[None] | None] | None,
        roots: Sequence[str | Mapping[str, str]]
        | Callable[[], Awaitable[Sequence[str | Mapping[str, str]]]]
        | None,
        sample: Callable[[Sampling], Awaitable[SampleResult]] | None,
    ) -> None:
        """The settings both drivers keep, from the constructor's arguments (no I/O)."""
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
        self._pin_store = setup.pin_store  # U1
        self._pin_subject = setup.pin_subject
        self._auth = _with_dpop_key(setup.auth)
        self._assertion, self._assertion_blocks = _assertion_hook(
            setup.auth.assertion if setup.auth else None
        )
        if authorize is None and setup.auth is not None:
            # A ready sign-in brings its own hook; one of the wrong kind is the
            # engine's to classify when it answers (D2: unusable).
            self._authorize = cast("Callable[[str, str], Awaitable[str]]", setup.auth.authorize)
        if setup.auth is not None and isinstance(setup.server, RemoteServer):
            # Every option mistake raises now, not at start: a hook needs a redirect_uri.
            setup.auth.config(setup.server.url, interactive=self._authorize is not None)
        self._store = None
        self._engine = None
        self._started = False
        self._closing = False  # closing began: no new calls
        self._closed = False  # closing is over: the background work stops
        self._login_waiting = 0  # callers of login() waiting for it to settle

    def __repr__(self) -> str:
        return f"McpClient({self.name!r}, {self._server!r})"

    def _new_engine(self) -> HttpClientEngine | StdioClientEngine | None:
        """L2: the engine for this client's server (None for an entry that is not one)."""
        if self._server is None:
            return None
        engine: HttpClientEngine | StdioClientEngine
        if isinstance(self._server, RemoteServer):
            # os.urandom is what secrets.token_bytes(n) returns, without loading
            # secrets' hmac, hashlib, OpenSSL's hashes and random (issue 40: B3 cold).
            engine = self._remote_engine(
                self._server,
                token_bytes=os.urandom,
                wall_offset=time.time() - self._now(),
            )
        else:
            engine = StdioClientEngine(
                self._server,
                environ=os.environ,
                options=self._options,
                max_line_size=self._limits.stdio_line_limit,
                close_grace=self._close_grace,
            )
        engine.observer = self._observer  # V2 (None: tracing off)
        self._engine = engine
        return engine

    def _route_events(self, events: list[Event]) -> None:
        """Run what ``route`` says each event means, with the driver's own waking
        primitives: wake a caller or a ``refresh()``, whoever waits for the state,
        or call one of the host's callbacks."""
        for event in events:
            step = route(event, server=self.name)
            if isinstance(step, WakeCall):
                self._wake_call(step)
            elif isinstance(step, HostCallback):
                callback = self._callback_for(step)
                if callback is not None:
                    self._call_host(callback, step)
            elif isinstance(step, WakeRefresh):
                self._wake_refresh(step)
            elif isinstance(step, StateChange):
                if step.failure is not None:
                    _log.info("server %r is unavailable: %s", self.name, step.failure)
                self._wake_state()

    def _callback_for(self, call: HostCallback) -> Callable[..., object] | None:
        """The host's callback a routed event names (None: the host gave none)."""
        if call.call_id is not None:
            return self._progress_callback(call.call_id)
        if call.option == "on_log":
            return self._on_log
        if call.option == "on_resource_updated":
            return self._on_resource_updated
        if call.option == "on_list_changed":
            return self._on_list_changed
        return self._on_elicitation_complete

    # --- the driver's primitives ---------------------------------------------------------

    def _now(self) -> float:
        raise NotImplementedError

    def _progress_callback(self, call_id: int) -> Callable[..., object] | None:
        """The ``on_progress`` of the call ``call_id``, if it still waits and gave one."""
        waiter = self._calls.get(call_id)
        return None if waiter is None else waiter.on_progress

    def _wake_call(self, step: WakeCall) -> None:
        """Hand the caller of the call ``step`` names its outcome, if it still waits."""
        raise NotImplementedError

    def _wake_refresh(self, step: WakeRefresh) -> None:
        """Hand the caller of the ``refresh()`` ``step`` names its outcome."""
        raise NotImplementedError

    def _wake_state(self) -> None:
        """Wake whoever waits for the client's state (``ready()``, ``login()``)."""
        raise NotImplementedError

    def _call_host(self, callback: Callable[..., object], call: HostCallback) -> None:
        """Run a host's callback by the driver's rule (``call_host``'s)."""
        raise NotImplementedError

    async def _perform_call(self, begin: Begin, on_progress: ProgressCallback | None) -> Any:
        """Once ready, start a request with ``begin`` and wait for its outcome (K6: a
        caller that gives up cancels it)."""
        raise NotImplementedError

    async def _perform_refresh(self) -> SyncReport:
        """Re-list the tools in the engine and wait for the report."""
        raise NotImplementedError

    async def _dispatch(self, perform_here: int | None = None) -> object:
        """Perform the engine's actions and route its events (in a turn)."""
        raise NotImplementedError

    def _dispatch_soon(self) -> None:
        """Have the engine's actions performed from synchronous code (in a turn)."""
        raise NotImplementedError

    def _perform_actions(
        self,
        engine: HttpClientEngine | StdioClientEngine,
        perform_here: int | None,
        start: Callable[[HttpRequest, int | None], _H | None],
    ) -> _H | None:
        """In a turn: sort what the engine asks into aborts, hooks, exchanges
        (``start(request, perform_here)``, which returns the one the caller of
        ``perform_here`` performs itself) and process actions; then route its
        events. Once closed, nothing new starts."""
        here: _H | None = None
        if isinstance(engine, HttpClientEngine):
            for action in engine.take_actions():
                if isinstance(action, AbortExchange):
                    self._abort(action.exchange_id)
                elif self._closed:
                    pass
                elif not isinstance(action, HttpRequest):
                    self._perform_auth(action)
                elif (started := start(action, perform_here)) is not None:
                    here = started
        elif self._children is not None:
            for process_action in engine.take_actions():
                self._children.perform(process_action)
        if not self._closed:
            for question in engine.take_input():
                self._perform_auth(question)
        events = engine.take_events()
        if events:
            self._route_events(events)
        store_pins = self._pin_writes()
        if store_pins is not None:
            self._store_pins(store_pins)  # U1: even while closing (an accepted change)
        return here

    def _abort(self, xid: int) -> None:
        """End the exchange ``xid`` wherever it stands (D1)."""
        raise NotImplementedError

    def _store_pins(self, store_pins: Callable[[], None]) -> None:
        """U1: run ``store_pins`` (blocking: the host's pin store) off the engine's
        turn and off the event loop; closing waits for it."""
        raise NotImplementedError

    def _perform_auth(self, action: AuthAction | AskHost) -> None:
        """D2: run a host hook (sign-in, store or input) off the engine's turn."""
        raise NotImplementedError

    async def _act(self, step: Callable[[float], _T]) -> _T:
        """Run ``step(now)`` on the engine, then perform what it asks."""
        with self._turn:
            result = step(self._now())
            await self._dispatch()
        return result

    def _act_soon(self, step: Callable[[float], bool]) -> None:
        """Run ``step(now)`` on the engine at once; what it asks (when it returns
        True) is performed without waiting for it."""
        with self._turn:
            if step(self._now()):
                self._dispatch_soon()

    async def _report_hook(self, call: HookCall, value: object, error: Exception | None) -> None:
        """D2: what a host hook returned (or raised), told to the engine."""
        with self._turn:
            engine = self._engine
            assert engine is not None
            call.report(engine, self._now(), value=value, error=error)
            await self._dispatch()

    async def _wait_for(
        self, check: Callable[[], _T | None], timeout: float | None, *, login: bool = False
    ) -> _T | None:
        """Wait until ``check()`` says something (not None) or ``timeout`` passes (None)."""
        raise NotImplementedError

    async def _begin_reconnect(self) -> None:
        """L8: have the engine set up a new session now."""
        raise NotImplementedError

    # --- what callers use --------------------------------------------------------------

    async def login(self, timeout: float | None = None) -> Availability:
        """A3: sign in to this server now, through the ``authorize`` hook; this also asks
        a person again after they declined (they are not asked again on their own).
        Waits for the start-up attempt that follows (at most ``timeout``) and returns
        the availability then; a client already up stays up meanwhile."""

        def begin(now: float) -> HttpClientEngine:
            engine = self._login_engine()
            engine.login(now)
            return engine

        engine = await self._act(begin)

        def settled() -> bool | None:
            return True if engine.login_settled or self._closing else None

        await self._wait_for(settled, timeout, login=True)
        return engine.availability or Availability(False, f"still signing in after {timeout} s")

    async def ready(self, timeout: float | None = None) -> Availability:
        """Wait for the current start-up attempt (L3); unavailable at once while down."""
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState(self._START_FIRST)
        known = await self._wait_for(self._known_availability, timeout)
        if known is None:
            return Availability(False, f"still starting after {timeout:g} s")
        return known

    def _known_availability(self) -> Availability | None:
        engine = self._engine
        assert engine is not None
        availability = engine.availability
        if availability is not None:
            return availability
        if self._closing:
            return Availability(False, "the client is closed")
        return None

    async def reconnect(self, timeout: float | None = None) -> Availability:
        """L8: set up a new session now, then wait for it as ``ready()`` does.

        For a server that restarted, or a host that knows better than the backoff:
        calls running on the old session fail with ``TransportError`` (they may have
        run, so nothing is sent again); a server that is down is tried at once.
        """
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState(self._START_FIRST)
        await self._begin_reconnect()
        return await self.ready(timeout)

    async def _ensure_ready(self) -> None:
        availability = await self.ready()
        if not availability.ok:
            raise Unavailable(availability.reason or "unavailable", server=self.name)

    @overload
    async def call(
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
    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["return"],
    ) -> ToolOutput | InputRequired: ...

    async def call(
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
        ``arguments`` and wait until it finishes; returns its ``ToolOutput``.
        ``meta`` adds keys of your own to the request's ``_meta`` (a tenant or
        request id); the client's own keys cannot be set (``ValueError``).

        Fails with ``UnknownTool`` (naming the id probably meant) or ``InvalidArguments``
        (arguments JSON cannot carry) before anything is sent; ``BackendError`` when the
        tool reports an error (``isError``); ``CallTimeout`` past ``timeout`` (the
        client's ``call_timeout`` by default); ``Unavailable`` or ``TransportError``
        when the server cannot be reached; ``MayHaveRun`` (a ``TransportError``) when
        the request went out whole and no answer came: the server may have run the
        tool, so check before calling it again (U3; a key of your own in ``meta``,
        an idempotency key, goes unchanged, and the client never sends a call
        twice). ``on_progress(progress, total, message)``
        is called for each progress report.
        ``on_input="return"``: when a 2026-07-28 server asks the person something,
        the call returns an ``InputRequired`` (its questions and a ``Continuation``)
        instead of asking the ``elicit`` hook; ``resume()`` finishes it (Q4). In the
        handshake era questions go to the hook as usual.
        """
        begin = _call_begin(tool_id, arguments, timeout, meta, on_input)
        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    def set_roots(
        self,
        roots: Sequence[str | Mapping[str, str]]
        | Callable[[], Awaitable[Sequence[str | Mapping[str, str]]]],
    ) -> None:
        """Q3: new roots (a list, or a coroutine function returning one) for a client
        created with ``roots=``; a handshake-era server is told they changed.
        ``InvalidState`` for a client given no roots, ``InvalidValue`` for a list
        that is not one of ``file://`` URIs."""

        def change(now: float) -> bool:
            self._change_roots(roots)
            engine = self._engine
            if engine is None or self._closing:
                return False
            engine.roots_changed(now)
            return True

        self._act_soon(change)

    async def resume(
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
        answers that do not fit (``InvalidValue``, ``InvalidState``, ``InputError``);
        with the ``seal_key`` option, for one whose seal does not match
        (``SealBroken``, U2).
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.resume(continuation, responses, now, timeout=timeout)

        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    async def start_task(
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

        started: TaskHandle | ToolOutput | InputRequired = await self._perform_call(
            begin, on_progress
        )
        return started

    async def resume_task(
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
        another server ``InvalidValue`` (nothing sent); with the ``seal_key``
        option, a handle whose seal does not match ``SealBroken`` and a bare id
        ``InvalidValue`` (U2). Giving up (cancelling the caller) sends
        ``tasks/cancel``.
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.resume_task(task, now, timeout=timeout)

        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    async def task_status(
        self, task: TaskHandle | str, *, timeout: float | None = None
    ) -> TaskStatus:
        """Ask the server once where a task stands (``tasks/get``) → ``TaskStatus``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.task_status(task, now, timeout=timeout)

        status: TaskStatus = await self._perform_call(begin, None)
        return status

    async def cancel_task(self, task: TaskHandle | str, *, timeout: float | None = None) -> None:
        """Ask the server to cancel a task (``tasks/cancel``); returns once the server
        acknowledged it. A call following the task then raises ``Cancelled``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.cancel_task(task, now, timeout=timeout)

        await self._perform_call(begin, None)

    async def _ask(self, ask: Ask, timeout: float | None) -> Any:
        """Send one request of the host (F1) once ready and wait for what it reads.
        (``ask`` was built first: a caller's mistake is refused before any wait.)"""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.request(ask, now, timeout=timeout)

        return await self._perform_call(begin, None)

    async def list_resources(self, *, timeout: float | None = None) -> Listing[Resource]:
        """F2: every resource the server lists (all pages), with its cache hints."""
        return await self._ask(self._ask_list("resources"), timeout)  # type: ignore[no-any-return]

    async def list_resource_templates(
        self, *, timeout: float | None = None
    ) -> Listing[ResourceTemplate]:
        """F2, F3: every resource template the server lists (all pages)."""
        return await self._ask(self._ask_list("templates"), timeout)  # type: ignore[no-any-return]

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResult:
        """F2, F4: read one resource (a listed URI, an expanded template, a tool's
        ``resource_link``); ``ResourceNotFound`` when the server has none there."""
        return await self._ask(self._ask_read(uri), timeout)  # type: ignore[no-any-return]

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: be told (``on_resource_updated=``) when the resource at ``uri`` changes;
        the subscription lasts for the client's life, across new sessions.
        ``NotOffered`` (nothing sent) when the server does not declare
        ``resources.subscribe``, or (at 2026-07-28) leaves ``uri`` out."""
        await self._change_subscription(uri, True, timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: stop the subscription to ``uri``."""
        await self._change_subscription(uri, False, timeout)

    async def _change_subscription(self, uri: str, on: bool, timeout: float | None) -> None:
        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.subscribe(uri, now, on=on, timeout=timeout)  # F2

        await self._perform_call(begin, None)

    async def list_prompts(self, *, timeout: float | None = None) -> Listing[Prompt]:
        """F5: every prompt the server lists (all pages)."""
        return await self._ask(self._ask_list("prompts"), timeout)  # type: ignore[no-any-return]

    async def complete(
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
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> PromptResult:
        """F5: one prompt's messages; the arguments are strings (anything else is
        refused before sending, ``InvalidArguments``)."""
        return await self._ask(self._ask_prompt(name, arguments), timeout)  # type: ignore[no-any-return]

    async def list_skills(
        self,
        *,
        max_skill_files: int | None = None,
        max_skill_bytes: int | None = None,
        timeout: float | None = None,
    ) -> Listing[Skill]:
        """N4: every skill the server lists (``skills/list``, SEP-2640), each its
        entry: name, description, frontmatter, files with digest and size. No file
        is read. ``NotOffered`` (nothing sent) when the server does not declare the
        skills extension; ``LimitExceeded`` names the bound a skill overruns
        (``None``: the SEP's 512 files and 16 MiB, ``MAX_SKILL_FILES`` and
        ``MAX_SKILL_BYTES``)."""
        await self._ensure_ready()
        ask = self._ask_skills(max_skill_files, max_skill_bytes)
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def read_skill_file(
        self, skill: Skill | str, path: str = "SKILL.md", *, timeout: float | None = None
    ) -> SkillFileContent:
        """N4: one file of a skill (its entry, or its name: listed first), read and
        checked against the entry: size, digest, and for ``SKILL.md`` the
        frontmatter. A mismatch raises ``SkillMismatch`` and the content is
        dropped; a path the entry does not list is refused (``InvalidValue``)."""
        if isinstance(skill, str):
            skill = self._skill_named(await self.list_skills(timeout=timeout), skill)
        ask = self._ask_skill_file(skill, path)
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def list_skill_files(
        self,
        skill: Skill | str,
        *,
        max_skill_files: int | None = None,
        timeout: float | None = None,
    ) -> tuple[str, ...]:
        """N4: the paths of a skill's files: its entry's, or for a dynamic
        skill the walk of its directory with ``resources/directory/read`` where
        the server offers it. No file is read."""
        if isinstance(skill, str):
            skill = self._skill_named(await self.list_skills(timeout=timeout), skill)
        found = self._skill_files(skill, max_skill_files)
        if isinstance(found, tuple):
            return found
        while (ask := found.next_ask()) is not None:
            found.add(await self._ask(ask, timeout))
        return tuple(found.paths)

    async def refresh(self) -> SyncReport:
        """Re-list the tools (T6) → what changed since the last listing; its ``pins``
        names each tool whose definition differs from its pin, first seen now (U1)."""
        await self._ensure_ready()
        return await self._perform_refresh()

    def accept_change(self, tool_id: str) -> bool:
        """U1: pin the listed definition of ``tool_id``, a tool in ``pin_changes``: it
        is no longer reported and, under ``pins="block"``, no longer withheld
        (``sync_into`` or ``register_into`` puts it into a registry again). The pin
        goes to the ``pin_store`` off the engine's turn. False when that tool has no
        change waiting."""
        accepted = False

        def accept(now: float) -> bool:
            nonlocal accepted
            accepted = self._accept(tool_id)
            return accepted

        self._act_soon(accept)
        return accepted

    # --- a host's tool registry ----------------------------------------------------------------

    def _make_registration(self, tool: Tool) -> ToolRegistration:
        client = cast("McpClient", self)
        return ToolRegistration(client, tool, self._options.call_timeout, self._options.policy)

    def _make_reader(self, tool: Tool) -> ResourceReader:
        client = cast("McpClient", self)
        return ResourceReader(client, tool, self._options.call_timeout, self._options.policy)

    async def sync_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        """Re-list the tools and bring ``registry`` (filled by ``register_into``) up to
        date: new tools are added, removed ones taken out, changed ones replaced;
        registrations of unchanged tools are kept. Returns what changed."""
        report = await self.refresh()
        mirrored = self._mirror_into(registry)
        return replace(mirrored, pins=report.pins) if report.pins else mirrored


def _call_begin(
    tool_id: str,
    arguments: Mapping[str, Any] | None,
    timeout: float | None,
    meta: Mapping[str, Any] | None,
    on_input: Literal["hook", "return"],
) -> Begin:
    """What starts a call of ``tool_id`` in the engine (``call``, and the blocking
    client's ``start_call``)."""

    def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
        return engine.call(tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input)

    return begin


def _tracing() -> RequestObserver:
    """V2: the OpenTelemetry observer, loaded only for ``tracing=True``."""
    try:
        from mcpcore_otel import client_tracing
    except ImportError:
        raise InvalidValue(
            "tracing=True needs OpenTelemetry: pip install 'mcpcore[otel]'"
        ) from None
    return client_tracing()


def _assertion_hook(
    source: str | os.PathLike[str] | Callable[..., object] | None,
) -> tuple[Callable[..., object] | None, bool]:
    """N2, N3: ``AuthOptions.assertion`` as a hook, and whether it blocks: a path
    becomes a function that reads the file anew for each grant (a platform's
    token file rotates), run off the driver's loop like a store's methods."""
    if source is None or callable(source):
        return source, False
    path = os.fspath(source)

    def read(request: object) -> str:
        with open(path, encoding="utf-8") as file:
            return file.read()

    return read, True


def _with_dpop_key(auth: AuthOptions | None) -> AuthOptions | None:
    """N1: DPoP without a key of the host's gets an ES256 key made now
    (``mcpcore_jwt``), for this client's life."""
    if auth is None or not auth.dpop or auth.dpop_key is not None:
        return auth
    from dataclasses import replace

    from mcpcore_jwt import DpopKey

    return replace(auth, dpop_key=DpopKey.generate())
