"""The engines a driver holds: the session joined to one transport mapping.

``HttpClientEngine`` joins the session (``_session.py``) to the Streamable
HTTP mapping (``_http.py``); ``StdioClientEngine`` joins it to newline-framed
JSON (``_stdio.py``). Both take commands and transport input with ``now`` and
hand back actions (or bytes), events and the next deadline. A driver needs
nothing else: every protocol decision is made here or below.

Driving one by hand (see docs/engine.md for a runnable version)::

    engine = HttpClientEngine(RemoteServer(name="demo", url=url))
    engine.start(now)
    for action in engine.take_actions():   # HttpRequest / AbortExchange
        ...perform it; report with engine.response_started/data/ended/failed
    for event in engine.take_events():     # SessionReady, CallSucceeded, ...
        ...
    engine.next_deadline()                 # call engine.handle_timer(now) then
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..base._errors import InvalidState, InvalidValue, McpError, TransportError
from ..base._escape import excerpt
from ..base._events import (
    Action,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    Event,
    ProcessAction,
    RequestSucceeded,
    StartFailed,
)
from ..base._failure import TransportFailure
from ..base._record import record
from ..base._tools import Catalogue
from ..config._config import LocalServer, RemoteServer
from ..features._input_options import INPUT_ATTEMPTS_FROM
from ..session._session import ClientSession, SessionOptions, SessionState, positive_seconds
from ..wire._http import HeaderSource, HttpLimits, HttpMapping, MessageArrived, RequestFailed
from ..wire._jsonrpc import Request, decode_message, describe_message, encode_message
from ..wire._requests import Ask
from ..wire._stdio import DEFAULT_GRACE, ChildControl, LineFramer, frame_message

if TYPE_CHECKING:
    # OAuth loads only for a server with auth= (B5: a driver's import time).
    from ..auth._authorizing import AuthAction, AuthLayer, AuthOptions
    from ..auth._hooks import HookFailure
    from ..auth._oauth import ClientRecord, TokenSet
    from ..base._observe import RequestObserver
    from ..features._input import AskHost
    from ..features._resume import Continuation
    from ..features._tasks import TaskHandle
    from ._observing import Observation

__all__ = ["Availability", "HttpClientEngine", "StdioClientEngine"]

_stdio_log = logging.getLogger("mcpcore.stdio")
_DEBUG = logging.DEBUG


@record(frozen=True, slots=True)
class Availability:
    """Whether a server can take calls now (L3); ``reason`` says why not.

    True exactly when ``ok``, so ``if not await client.ready(): ...`` works.
    ``error`` is the ``McpError`` behind ``reason`` when there is one, for a
    host that reacts to its kind (``AuthorizationRequired``: ask to sign in).
    """

    ok: bool
    reason: str | None = None
    error: Exception | None = field(default=None, compare=False, repr=False)

    def __bool__(self) -> bool:
        return self.ok


# One for every ask while the server is up (a driver asks after every input); frozen.
_AVAILABLE = Availability(True)


class _EngineBase:
    """What both engines share: the session, its commands and its events."""

    def __init__(self, options: SessionOptions | None) -> None:
        self.session = ClientSession(options)
        self._events: list[Event] = []
        # V2: what the observer is told of each request (None: no one is told).
        self._watch: Observation | None = None
        # V3: with a headers callable, each request of the host's caller context (by
        # call id), so every wire request of it runs the callable there (None: none).
        self._contexts: dict[int, contextvars.Context] | None = None

    @property
    def observer(self) -> RequestObserver | None:
        """V2: told when each request starts and ends (``_observing`` decides which)."""
        return None if self._watch is None else self._watch.observer

    @observer.setter
    def observer(self, observer: RequestObserver | None) -> None:
        if self._watch is not None:
            self._watch.detach()
            self._watch = None
        if observer is not None:
            from ._observing import Observation  # V2: only with an observer

            self._watch = Observation(observer, self.session, self._wire)

    # --- commands --------------------------------------------------------------

    def start(self, now: float) -> None:
        self.session.start(now)
        self._pump(now)

    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None,
        now: float,
        *,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
        task: bool = False,
    ) -> int:
        """Start a ``tools/call``; the outcome arrives as an event with this call id.
        ``meta``: the host's own ``_meta`` keys for this call (V1); ``on_input="return"``:
        a question for the person ends it with an ``InputRequired`` (Q4); ``task``:
        the host chose a task (``start_task``, T8). ``timeout``: the caller's bound on
        the whole call, a task included (T9)."""
        watch = self._watch
        if watch is None:
            call_id = self.session.call(
                tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input, task=task
            )
            if self._contexts is not None:
                self._contexts[call_id] = contextvars.copy_context()
            self._pump(now)
            return call_id
        from ._observing import with_carrier

        catalogue = self.session.catalogue
        tool = catalogue.get(tool_id) if catalogue is not None else None
        return self._observed(
            "tools/call",
            now,
            lambda carrier: self.session.call(
                tool_id,
                arguments,
                now,
                timeout=timeout,
                meta=with_carrier(carrier, meta),
                on_input=on_input,
                task=task,
            ),
            tool=None if tool is None else tool.name,
        )

    def resume(
        self,
        continuation: Continuation,
        responses: Mapping[str, Any],
        now: float,
        *,
        timeout: float | None = None,
    ) -> int:
        """Finish a paused call (Q4); it ends like a call, under the id returned."""
        from ..features._resume import Continuation, resume_call

        tool = continuation.tool if isinstance(continuation, Continuation) else None
        return self._observed(
            "tools/call",
            now,
            lambda carrier: resume_call(
                self.session, continuation, responses, now, timeout=timeout, meta=carrier
            ),
            tool=tool,
        )

    def start_task(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None,
        now: float,
        *,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> int:
        """Like ``call``, but when the server runs the call as a task the call ends
        at once with ``RequestSucceeded`` holding its ``TaskHandle`` (T8); a call the
        server answers directly ends as ``call`` does."""
        call_id = self.call(
            tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input, task=True
        )
        self.session.tasks.hand(call_id)
        return call_id

    def resume_task(
        self, task: TaskHandle | str, now: float, *, timeout: float | None = None
    ) -> int:
        """Follow a task again (T8), from its ``TaskHandle`` or its id; it ends like
        a call (``CallSucceeded``, ``CallFailed``, ``CallCancelled``) under the id
        returned. ``timeout``: how long to follow it (``task_timeout`` by default)."""
        from ..features._tasks import TaskHandle, resume_task

        tool = task.tool or None if isinstance(task, TaskHandle) else None
        return self._observed(
            "tasks/result",
            now,
            lambda _: resume_task(self.session, task, now, timeout=timeout),
            tool=tool,
        )

    def task_status(
        self, task: TaskHandle | str, now: float, *, timeout: float | None = None
    ) -> int:
        """Ask once where a task stands (``tasks/get``); ends with ``RequestSucceeded``
        holding a ``TaskStatus``."""
        from ..features._tasks import TASK_STATUS, task_ask

        return self.request(task_ask(self.session, TASK_STATUS, task), now, timeout=timeout)

    def cancel_task(
        self, task: TaskHandle | str, now: float, *, timeout: float | None = None
    ) -> int:
        """Ask the server to cancel a task (``tasks/cancel``); ends with
        ``RequestSucceeded`` (the server's acknowledgement) once it answered."""
        from ..features._tasks import TASK_CANCEL, task_ask

        return self.request(task_ask(self.session, TASK_CANCEL, task), now, timeout=timeout)

    def request(self, ask: Ask, now: float, *, timeout: float | None = None) -> int:
        """Start one request of the host (a listing, a read, a prompt: F1); it ends
        with ``RequestSucceeded``, ``CallFailed`` or ``CallCancelled`` under this id."""
        if self._watch is None:
            call_id = self.session.request(ask, now, timeout=timeout)
            if self._contexts is not None:
                self._contexts[call_id] = contextvars.copy_context()
            self._pump(now)
            return call_id
        kind, params = ask.kind, ask.params
        about = params.get(kind.name_param) if params and kind.name_param else None
        about = about if isinstance(about, str) else None
        if kind.name_param == "uri":
            target = {"uri": about}
        elif kind.method.startswith("prompts/"):
            target = {"prompt": about}
        else:
            target = {"tool": about}

        def issue(carrier: Mapping[str, Any]) -> int:
            stamped = ask
            if carrier:
                given = dict(params or {})
                given["_meta"] = {**carrier, **(given.get("_meta") or {})}
                stamped = Ask(kind, given, ask.context)
            return self.session.request(stamped, now, timeout=timeout)

        return self._observed(kind.method, now, issue, **target)

    def subscribe(
        self, uri: str, now: float, *, on: bool = True, timeout: float | None = None
    ) -> int:
        """F2: subscribe to ``uri`` (``on=False``: stop); it ends like ``request``."""
        session = self.session

        def issue(_: Mapping[str, Any]) -> int:
            budget = session.options.call_timeout if timeout is None else positive_seconds(timeout)
            return session.subscriptions.change(uri, on, now, budget)

        method = "resources/subscribe" if on else "resources/unsubscribe"
        return self._observed(method, now, issue, uri=uri if isinstance(uri, str) else None)

    def _observed(
        self,
        method: str,
        now: float,
        issue: Callable[[Mapping[str, Any]], int],
        **about: str | None,
    ) -> int:
        """Issue one request of the host, told to the observer when there is one (V2):
        ``issue`` gets the trace context for its ``_meta`` (empty without)."""
        watch = self._watch
        call_id = issue({}) if watch is None else watch.host(method, now, issue, **about)
        if self._contexts is not None:
            self._contexts[call_id] = contextvars.copy_context()
        self._pump(now)
        return call_id

    def _ended(self, event: Event, now: float) -> None:
        """An event, seen by the observer and the caller contexts (V2, V3)."""
        contexts = self._contexts
        if contexts and isinstance(
            event, (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)
        ):
            contexts.pop(event.call_id, None)
        if self._watch is not None:
            self._watch.ended(event, now)

    def _wire(self) -> tuple[str, str | None, int | None, str | None]:
        """The transport, the server's address and port, and the session id (V2)."""
        return ("pipe", None, None, None)

    def owner_of(self, request_id: int) -> int | None:
        """The call id a request of ours belongs to (``HttpRequest.request_id`` →
        the id ``call``/``request`` returned): a later page, an ``input_required``
        round or a re-send carries its first request's; ``None`` when not pending.
        A driver may perform such an exchange in the caller's task (B3)."""
        pending = self.session.path.pending.get(request_id)
        return None if pending is None else pending.call_id

    def cancel(self, call_id: int, now: float, reason: str = "cancelled by the caller") -> bool:
        cancelled = self.session.cancel(call_id, now, reason)
        self._pump(now)
        return cancelled

    def refresh(self, now: float) -> int:
        refresh_id = self.session.refresh(now)
        self._pump(now)
        return refresh_id

    def handle_timer(self, now: float) -> None:
        self.session.handle_timer(now)
        self._pump(now)

    # --- the host's input hooks (Q1, D2) -------------------------------------------

    def roots_changed(self, now: float) -> None:
        """Q3: the host's roots changed (the session's options hold the new ones):
        a handshake-era server is told with ``notifications/roots/list_changed``."""
        self.session.input.roots_changed()
        self._pump(now)

    def take_input(self) -> list[AskHost]:
        """Questions for the host's input hooks (``AskHost``): run each off the lock
        (``HookCall``) and report its answer with ``hook_answered`` / ``hook_failed``."""
        return self.session.input_desk.take_actions()

    def hook_answered(self, attempt: int, value: object, now: float) -> None:
        """The hook action numbered ``attempt`` returned ``value`` (D2). For an
        ``AskHost``: an ``ElicitResult``; anything else fails its call with
        ``InputError``, and an answer past its deadline or after close is ignored."""
        self.session.input.hook_answered(attempt, value, now)
        self._pump(now)

    def hook_failed(self, attempt: int, failure: HookFailure, now: float) -> None:
        """The hook action numbered ``attempt`` raised, or was not given (D2): the
        call it belongs to fails with ``InputError``."""
        self.session.input.hook_failed(attempt, failure, now)
        self._pump(now)

    # --- state -------------------------------------------------------------------

    def take_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    @property
    def catalogue(self) -> Catalogue | None:
        return self.session.catalogue

    @property
    def state(self) -> SessionState:
        return self.session.state

    @property
    def availability(self) -> Availability | None:
        """``None`` while the first attempt, or the one ``reconnect`` started, is
        still running (L3, L8); unavailable while a new session cannot be set up (L5)."""
        session = self.session
        state = session.state
        if state is SessionState.READY and not session.reconnecting:
            error = session.last_error
            if error is None or not session.path.holding:
                return _AVAILABLE
            return Availability(False, f"a new session could not be set up: {error}", error)
        if state is SessionState.CLOSED:
            return Availability(False, "the client is closed")
        error = session.last_error
        if error is None:
            return None
        return Availability(False, str(error), error)

    def reconnect(self, now: float) -> None:
        """L8: set up a new session now. A ready server's session is given up first
        (what ran on it fails: it may have run, so nothing is sent again); a server
        that is down, or whose new session waits for its retry, is tried at once.
        ``availability`` is ``None`` until that attempt ends."""
        session = self.session
        if session.state is SessionState.CLOSED:
            return
        if session.state is SessionState.READY and not session.path.holding:
            self._give_up_session(now)
        session.handshake.reconnect(now)
        self._pump(now)

    def _give_up_session(self, now: float) -> None:
        raise NotImplementedError

    def _pump(self, now: float) -> None:
        raise NotImplementedError


class HttpClientEngine(_EngineBase):
    """A whole MCP client conversation over Streamable HTTP, without I/O."""

    def __init__(
        self,
        server: RemoteServer,
        *,
        options: SessionOptions | None = None,
        limits: HttpLimits | None = None,
        listen: bool = True,
        auth: AuthOptions | None = None,
        token_bytes: Callable[[int], bytes] | None = None,
        wall_offset: float = 0.0,
        interactive: bool = False,
        tokens: TokenSet | None = None,
        clients: Sequence[ClientRecord] = (),
        headers: HeaderSource | None = None,
    ) -> None:
        """``auth``: run OAuth for this server (A1); then ``token_bytes`` is the
        entropy (``secrets.token_bytes``), ``wall_offset`` the wall clock minus
        the driver's ``now`` clock, ``interactive`` whether the driver has an
        ``authorize`` hook, and ``tokens``/``clients`` what the store held.
        ``headers``: the host's ``headers(method, server)`` callable (V3), called
        for each HTTP request as it is built (see ``HttpMapping``)."""
        if options is None:
            options = SessionOptions(server_name=server.name)
        super().__init__(options)
        self._closing = False
        self.session.endpoint_url = server.url  # Q4: continuations' owner
        self.http = HttpMapping(
            server.url,
            list(server.headers.items()),
            display_url=server.display_url,
            limits=limits,
            listen=listen,
            name=options.server_name,
            dynamic_headers=headers,
        )
        if headers is not None:
            self._contexts = {}
        self.auth: AuthLayer | None = None
        if auth is not None:
            if token_bytes is None:
                raise InvalidValue("auth= needs token_bytes (e.g. secrets.token_bytes)")
            from ..auth._authorizing import AuthLayer
            from ..auth._oauth import OAuthFlow

            flow = OAuthFlow(
                auth.config(server.url, interactive=interactive),
                token_bytes=token_bytes,
                tokens=tokens,
                clients=clients,
            )
            self.auth = AuthLayer(
                flow,
                self.http,
                wall_offset=wall_offset,
                interactive=interactive,
                hook_timeout=auth.hook_timeout,
            )
        self._login_failures: int | None = None  # start-up failures when login() was asked

    # --- transport input ---------------------------------------------------------

    def request_sent(self, exchange_id: int, now: float) -> None:
        """The request of ``exchange_id`` was written whole (its last byte handed to
        the network), before any answer: the server may act on it from now on (U3).

        A driver reports it once per exchange, when it knows; a ``tools/call``
        whose exchange then fails without an answer ends with ``MayHaveRun``.
        An exchange never reported (refused, no connection, broken while its
        request was being written) keeps its failure as it is.
        """
        auth = self.auth
        if auth is not None:
            routed = auth.request_sent(exchange_id)
            if routed is None:
                return
            exchange_id = routed
        self.http.request_sent(exchange_id, now)

    def response_started(
        self, exchange_id: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        auth = self.auth
        if auth is not None:
            routed = auth.response_started(exchange_id, status, headers, now)
            if routed is None:
                self._pump(now)
                return
            exchange_id = routed
        self.http.response_started(exchange_id, status, headers, now)
        self._pump(now)

    def response_data(self, exchange_id: int, data: bytes, now: float) -> None:
        auth = self.auth
        if auth is not None:
            routed = auth.response_data(exchange_id, data, now)
            if routed is None:
                self._pump(now)
                return
            exchange_id = routed
        self.http.response_data(exchange_id, data, now)
        self._pump(now)

    def response_ended(self, exchange_id: int, now: float) -> None:
        auth = self.auth
        if auth is not None:
            routed = auth.response_ended(exchange_id, now)
            if routed is None:
                self._pump(now)
                return
            exchange_id = routed
        self.http.response_ended(exchange_id, now)
        self._pump(now)

    def response_failed(self, exchange_id: int, failure: TransportFailure, now: float) -> None:
        """The exchange could not be performed or broke.

        ``failure`` is its kind and safe text (``TransportFailure.from_exception``);
        the engine words the reason, so no text of a library's exception reaches it.
        """
        auth = self.auth
        if auth is not None:
            routed = auth.response_failed(exchange_id, failure, now)
            if routed is None:
                self._pump(now)
                return
            exchange_id = routed
        self.http.response_failed(exchange_id, failure, now)
        self._pump(now)

    # --- host hooks (A3, D2): what the driver reports back ---------------------------------

    def hook_answered(self, attempt: int, value: object, now: float) -> None:
        """The hook action numbered ``attempt`` returned ``value`` (D2).

        ``OpenAuthorizationUrl``: the full redirect URL the person came back
        to (O36); ``SignAssertion``: the compact JWS; a store action: whatever
        the method returned. An answer of the wrong kind (``bytes``, ``None``)
        fails the flow with ``HookError``; one for an attempt past its
        deadline, superseded or after close is ignored. See ``HookCall``.
        An input hook's attempt (``AskHost``) goes to the session (Q1).
        """
        if attempt >= INPUT_ATTEMPTS_FROM:
            super().hook_answered(attempt, value, now)
            return
        self._need_auth().hook_answered(attempt, value, now)
        self._pump(now)

    def hook_failed(self, attempt: int, failure: HookFailure, now: float) -> None:
        """The hook action numbered ``attempt`` raised, or no such hook was given (D2):
        the requests waiting for it fail (a store's failure only costs the write)."""
        if attempt >= INPUT_ATTEMPTS_FROM:
            super().hook_failed(attempt, failure, now)
            return
        self._need_auth().hook_failed(attempt, failure, now)
        self._pump(now)

    def login(self, now: float) -> None:
        """Sign in now: discovery and authorization before any MCP request needs
        them (a CLI login, a host's "sign in" button); also after a person
        declined, when they are not asked again on their own. Requests with a
        usable token keep going meanwhile (R5); ``login_settled`` says when a
        driver's ``login()`` stops waiting."""
        auth = self._need_auth()
        self._login_failures = self.session.failures
        auth.login(now)
        self.session.retry_now(now)  # a start-up attempt waiting out its backoff goes now
        self._pump(now)

    @property
    def login_settled(self) -> bool:
        """The sign-in ``login`` asked for is over and the server is up, or the
        start-up attempt after it failed (or the client closed)."""
        auth = self.auth
        if auth is None or self._login_failures is None or self._closing:
            return True
        if auth.flow.busy:
            return False
        return (
            self.session.state is SessionState.READY
            or self.session.failures != self._login_failures
        )

    def _wire(self) -> tuple[str, str | None, int | None, str | None]:
        parts = urlsplit(self.http.url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            port = None
        return ("tcp", parts.hostname, port, self.http.session_id)

    def _need_auth(self) -> AuthLayer:
        if self.auth is None:
            raise InvalidState("this client was not given auth=")
        return self.auth

    def handle_timer(self, now: float) -> None:
        self.http.handle_timer(now)
        if self.auth is not None:
            self.auth.handle_timer(now)
        super().handle_timer(now)

    def close(self, now: float) -> None:
        """L6, H9: closing starts; the engine owns its whole sequence.

        Exchanges of requests are aborted, but for the ``tasks/cancel`` of a call
        that just gave up on its task (T9), which is still delivered; every call
        still running ends with ``CallCancelled``; its ``notifications/cancelled``
        and the session's ``DELETE`` are emitted together (the ``DELETE`` after the
        notices and owed requests are answered), all bounded by one close deadline
        (``HttpLimits.close_timeout``). The driver performs the actions as
        usual and calls ``handle_timer`` at ``next_deadline()`` until
        ``finished``, then releases its connections.
        """
        if self._closing:
            return
        self._closing = True
        self.http.begin_close(now, self.session.owed_on_close())  # T9: kept, not aborted
        if self.auth is not None:
            self.auth.close(now)
        self.session.close(now)
        self._pump(now)
        self.http.end_session(now)
        if self.auth is not None:
            self.auth.step(now)

    @property
    def finished(self) -> bool:
        """``close`` was called and nothing is left to perform (L6)."""
        return self._closing and self.http.finished

    # --- outputs -------------------------------------------------------------------

    def take_actions(self) -> list[Action | AuthAction]:
        """``HttpRequest`` / ``AbortExchange``; with ``auth=`` also the host hooks'
        ``OpenAuthorizationUrl`` / ``SignAssertion`` and the store's actions."""
        if self.auth is not None:
            return self.auth.take_actions()
        return self.http.take_actions()  # type: ignore[return-value]  # a narrower list

    def next_deadline(self) -> float | None:
        best = self.session.next_deadline()
        http = self.http.next_deadline()
        if http is not None and (best is None or http < best):
            best = http
        own = None if self.auth is None else self.auth.next_deadline()
        if own is not None and (best is None or own < best):
            best = own
        return best

    def _give_up_session(self, now: float) -> None:
        """L8: the HTTP session ends here (DELETE, best effort: the server may be
        gone), and every request on it fails without being sent again."""
        self.http.forget_session(now)
        self.session.transport_lost(_given_up(), now)

    def _pump(self, now: float) -> None:
        session, http, auth = self.session, self.http, self.auth
        watch = self._watch  # V2: None without an observer
        contexts = self._contexts  # V3: None without a headers callable
        while True:
            moved = False
            if auth is not None:
                moved = auth.step(now)
                if auth.authorized:
                    auth.authorized = False
                    session.retry_now(now)  # A3: new credentials: no need to sit out the backoff
            for item in http.take_upward():
                moved = True
                if isinstance(item, MessageArrived):
                    session.receive_message(item.message, now, related=item.related)
                elif isinstance(item, RequestFailed):
                    session.request_failed(item.request_id, item.error, now, sent=item.sent)
                else:
                    session.session_expired(item.resend, now)
            for request_id in session.take_abandoned():
                moved = True
                http.abandon(request_id)
            http.protocol_version = session.protocol_version
            http.modern = session.modern
            for message, body in session.take_outgoing_encoded():
                moved = True
                context = None
                if contexts and isinstance(message, Request):
                    pending = session.path.pending.get(message.id)  # type: ignore[arg-type]
                    context = None if pending is None else contexts.get(pending.call_id)
                http.send(message, now, body, session.headers_for(message), context)
            for event in session.take_events():
                moved = True
                if isinstance(event, StartFailed):
                    http.reset()
                elif watch is not None or contexts:
                    self._ended(event, now)
                self._events.append(event)
            if not moved:
                if watch is not None and watch.watching_own:
                    watch.sweep(now)  # V2: the handshake's requests that left unanswered
                # H8: (re)open the GET stream once a session is up, also after H6.
                if session.state is SessionState.READY and not session.reinitializing:
                    http.start_listening()
                if auth is not None and auth.step(now):
                    continue
                return


class StdioClientEngine(_EngineBase):
    """The same conversation over a child's stdin/stdout (S1).

    Given the ``LocalServer`` (and the host's environment, which the core never
    reads itself), the engine also owns the child's life as actions
    (``take_actions``: ``StartProcess``, ``WriteInput``, ``CloseInput``,
    ``TerminateProcess``, ``KillProcess``): which environment it gets (S2),
    when it is started again, when it counts as lost and why, and how closing
    stops it (S3). The driver reports what the child did: ``receive_data``
    (stdout), ``receive_stderr``, ``output_closed``, ``stderr_closed``,
    ``process_exited``, ``process_failed``, each with the child's number, and
    ``input_written`` for a numbered ``WriteInput`` all written (U3).

    Without a server it is the framing alone, for a transport the host owns:
    bytes in with ``receive_data``, bytes out with ``data_to_send``. A request
    taken with ``data_to_send`` counts as written (U3): the engine gave its
    bytes away and cannot prove they never reached the server, and for a call
    the safe error is ``MayHaveRun`` (a host that retries a plain transport
    error would run the tool twice).
    """

    def __init__(
        self,
        server: LocalServer | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        options: SessionOptions | None = None,
        max_line_size: int = 64 * 1024 * 1024,
        close_grace: float = DEFAULT_GRACE,
    ) -> None:
        if options is None:
            options = SessionOptions(server_name="server" if server is None else server.name)
        # The 2026-07-28 revision is spoken over HTTP here; stdio keeps the handshake.
        super().__init__(dataclasses.replace(options, protocol="legacy"))
        self._max_line_size = max_line_size
        self._framer = LineFramer(max_line_size=max_line_size)
        self._outgoing = bytearray()
        self._tag = f"[{excerpt(self.session.options.server_name, 60)}]"  # X4
        self._child = (
            None if server is None else ChildControl(server, environ or {}, grace=close_grace)
        )
        self._closing = False
        # U3: the requests written whole since the child started (their ids), and the
        # numbered writes (or, framing only, the frames) not yet known to be written
        self._written: set[int] = set()
        self._writing: dict[int, int] = {}  # WriteInput.seq -> request id
        self._framed: list[int] = []  # framing only: request ids in _outgoing

    # --- commands ------------------------------------------------------------------------

    def start(self, now: float) -> None:
        if self._child is not None and not self._child.running and not self._closing:
            self._child.start()
        super().start(now)

    def close(self, now: float) -> None:
        """L6, S3: cancel what runs, then close the child's stdin; terminate its process
        group after the grace period and kill it a second later. ``finished`` says
        when it is over: at the latest ``close_grace`` + 2 s from ``now``."""
        if self._closing:
            return
        self._closing = True
        if self.session.state is not SessionState.CLOSED:
            self.session.close(now)
            self._pump(now)
        if self._child is not None:
            self._child.close(now)

    @property
    def finished(self) -> bool:
        """``close`` was called and every child started is gone (exited, its stdout and
        stderr ended), or the close bound passed: release the child's pipes then."""
        if self._child is None:
            return self._closing
        return self._child.finished

    def handle_timer(self, now: float) -> None:
        if self._child is not None and self._child.handle_timer(now):
            self._child_lost("the server process closed its output", now)
        super().handle_timer(now)

    # --- transport input -----------------------------------------------------------------

    def receive_data(self, data: bytes, now: float, *, process: int | None = None) -> None:
        """Bytes the child wrote to stdout (``process``: which child, as started)."""
        if self._child is not None and not self._child.current(process):
            return
        try:
            lines = self._framer.feed(data)
        except McpError as exc:
            self._transport_lost(f"the server's output broke a limit: {exc}", now)
            return
        debug = _stdio_log.isEnabledFor(_DEBUG)
        for line in lines:
            try:
                message = decode_message(line)
            except McpError as exc:
                # P5: a malformed line fails nothing but itself on stdio.
                if debug:
                    _stdio_log.debug("%s skipped a line of %d bytes: %s", self._tag, len(line), exc)
                continue
            if debug:
                _stdio_log.debug(
                    "%s received %s (%d bytes)", self._tag, describe_message(message), len(line)
                )
            self.session.receive_message(message, now)
        self._pump(now)

    def input_written(self, seq: int, now: float, *, process: int | None = None) -> None:
        """The ``WriteInput`` numbered ``seq`` was all written to the child's stdin (U3).

        Its request reached the server whole: a ``tools/call`` that then ends
        with the child lost, unanswered, fails with ``MayHaveRun``. A write
        never reported (the child could not start, the pipe was broken) keeps
        the plain ``TransportError``.
        """
        request_id = self._writing.pop(seq, None)
        if request_id is not None and self._child is not None and self._child.current(process):
            self._mark_written((request_id,))

    def _mark_written(self, request_ids: Iterable[int]) -> None:
        written, pending = self._written, self.session.path.pending
        written.update(request_ids)
        if len(written) > 2 * len(pending) + 64:  # the answered ones go: kept bounded
            written.intersection_update(pending)

    def receive_stderr(self, data: bytes, now: float, *, process: int | None = None) -> None:
        """Bytes the child wrote to stderr: logged (redacted, escaped) and kept for a reason."""
        if self._child is not None:
            self._child.stderr_data(data, process)

    def output_closed(self, now: float, *, process: int | None = None) -> None:
        """The child's stdout ended."""
        if self._child is not None and self._child.output_closed(now, process):
            self._child_lost("the server process closed its output", now)

    def stderr_closed(self, now: float, *, process: int | None = None) -> None:
        """The child's stderr ended."""
        if self._child is not None and self._child.stderr_closed(now, process):
            self._child_lost("the server process closed its output", now)

    def process_exited(
        self, returncode: int | None, now: float, *, process: int | None = None
    ) -> None:
        """The child exited (``returncode`` as the OS gave it): report it as soon as the
        OS says so, not after its stdout ends (a grandchild may hold that open)."""
        if self._child is not None:
            self._child.exited(process, now)

    def process_failed(
        self, failure: TransportFailure, now: float, *, process: int | None = None
    ) -> None:
        """The child could not be started (``TransportFailure.from_exception``)."""
        if self._child is None or not self._child.current(process):
            return
        self._child.failed_to_start(process)
        self._transport_lost(
            f"could not start the server: {self._child.why_not_started(failure)}", now
        )

    def connection_lost(self, reason: str, now: float) -> None:
        """The transport broke (a framing-only engine; with a server, use the reports)."""
        self._transport_lost(reason, now)

    def _give_up_session(self, now: float) -> None:
        """L8: over stdio the session is the child: a new one is started (what ran on
        the old one fails without being sent again)."""
        self._transport_lost(str(_given_up()), now)

    def _child_lost(self, what: str, now: float) -> None:
        assert self._child is not None
        self._transport_lost(self._child.lost(now, what), now)

    def _transport_lost(self, reason: str, now: float) -> None:
        if self._child is not None and self._child.running:
            self._child.lost(now, reason)
        self._framer = LineFramer(max_line_size=self._max_line_size)  # a new child, a new line
        sent, self._written = self._written, set()
        self._writing.clear()  # what the driver still writes goes to a child that is gone
        self.session.transport_lost(TransportError(reason), now, sent=sent)
        if self._child is not None and self.session.state is SessionState.READY:
            # A ready server's child died: a new child needs a new session (as H6),
            # set up now, before any later call is written to it.
            self.session.session_expired([], now)
        self._pump(now)

    # --- outputs -------------------------------------------------------------------

    def take_actions(self) -> list[ProcessAction]:
        """What to do to the child, in order (empty for a framing-only engine)."""
        return [] if self._child is None else self._child.take_actions()

    def data_to_send(self) -> bytes:
        """Framing-only engine: the bytes to write to the transport, in order."""
        out = bytes(self._outgoing)
        self._outgoing.clear()
        if self._framed:  # given away: counted as written (U3, see the class)
            self._mark_written(self._framed)
            self._framed.clear()
        return out

    def next_deadline(self) -> float | None:
        times = [self.session.next_deadline()]
        if self._child is not None:
            times.append(self._child.next_deadline())
        present = [t for t in times if t is not None]
        return min(present) if present else None

    def _pump(self, now: float) -> None:
        session, child = self.session, self._child
        watch = self._watch  # V2: None without an observer
        while True:
            moved = False
            session.take_abandoned()  # nothing to drop on stdio beyond the notice
            for message, body in session.take_outgoing_encoded():
                moved = True
                frame = frame_message(body or encode_message(message))
                if child is not None and not child.running:
                    if not isinstance(message, Request) or self._closing:
                        continue  # a notice or answer for a child that is gone
                    child.start()  # L4: a new attempt needs a new child
                if _stdio_log.isEnabledFor(_DEBUG):
                    _stdio_log.debug(
                        "%s sent %s (%d bytes)", self._tag, describe_message(message), len(frame)
                    )
                rid = message.id if isinstance(message, Request) else None  # U3
                if child is None:
                    self._outgoing += frame
                    if isinstance(rid, int):
                        self._framed.append(rid)
                elif (seq := child.write(frame, report=isinstance(rid, int))) and isinstance(
                    rid, int
                ):
                    self._writing[seq] = rid
            for event in session.take_events():
                moved = True
                if isinstance(event, StartFailed) and child is not None:
                    child.stop(now, grace=0.0)  # the handshake failed: this child is done
                elif watch is not None:
                    watch.ended(event, now)
                self._events.append(event)
            if not moved:
                if watch is not None and watch.watching_own:
                    watch.sweep(now)  # V2: the handshake's requests that left unanswered
                return


def _given_up() -> TransportError:
    return TransportError(
        "reconnect() ended the session while the request was running; "
        "it may have run, so it was not sent again"
    )


# The public classes name their public module (in reprs and tracebacks).
for _public in (Availability, HttpClientEngine, StdioClientEngine):
    _public.__module__ = "mcpcore"
del _public
