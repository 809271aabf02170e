"""The driver's side of ``McpClient``, written once: construction and the primitives.

``SurfaceCore`` builds a client from its options (``__init__``, ``_setup``),
makes its engine, routes the engine's events (``route`` in the core decides;
this performs) and declares the primitives each driver implements with its own
I/O (``_perform_call``, ``_perform_refresh``, ``_act``, ``_act_soon``,
``_wait_for``, ``_begin_reconnect``, ...). ``ClientSurface`` (``_surface.py``)
builds the public methods on it. ``scripts/unasync.py`` writes the blocking
driver's copy (``mcpcore_threaded/_surface_core.py``) from this file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, Unpack, cast

from mcpcore import (
    AbortExchange,
    ClientBase,
    ClientOptions,
    ConfigError,
    Event,
    HostCallback,
    HttpClientEngine,
    HttpRequest,
    InvalidValue,
    LocalServer,
    RemoteServer,
    StateChange,
    StdioClientEngine,
    SyncReport,
    WakeCall,
    WakeRefresh,
    prepare_client,
    route,
)

if TYPE_CHECKING:
    import ssl

    from mcpcore import (
        AskHost,
        AuthAction,
        AuthOptions,
        DpopKey,
        Elicitation,
        ElicitResult,
        HookCall,
        ProcessAction,
        RequestObserver,
        SampleResult,
        Sampling,
        SignAssertion,
    )

    from ._asgi import AsgiApp  # anyio only


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


__all__ = ["Begin", "ProgressCallback", "SurfaceCore"]


class SurfaceCore(ClientBase):
    """A client's construction, engine and event routing, over the driver's primitives."""

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
        self._auth, self._revive_dpop_key = _with_dpop_key(setup.auth)
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


def _with_dpop_key(
    auth: AuthOptions | None,
) -> tuple[AuthOptions | None, Callable[[str], DpopKey] | None]:
    """N1: DPoP without a key of the host's gets an ES256 key made now
    (``mcpcore_jwt``), for this client's life, and the way back from a stored
    key's export (``DpopKey.from_export``): at start the core takes up the key
    the stored tokens are bound to instead, when one was kept with them."""
    if auth is None or not auth.dpop or auth.dpop_key is not None:
        return auth, None

    from mcpcore_jwt import DpopKey

    return replace(auth, dpop_key=DpopKey.generate()), DpopKey.from_export
