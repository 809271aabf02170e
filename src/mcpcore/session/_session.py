"""The MCP client session: the state machine over JSON-RPC messages.

Everything that affects the session's state lives here: the handshake (P1–P3a),
tool listing with its guards (T5, P6), calls with deadlines and cancellation
(K1, K2, K6), server requests and notifications (P4, P5), start-up retries
(L2–L5) and re-initialisation after an expired session (H6).

Theory of operation: the session knows nothing about HTTP. It takes decoded
messages (``receive_message``), transport failures for a request
(``request_failed``), caller commands (``call``, ``cancel``, ``refresh``,
``close``) and timer ticks (``handle_timer``), each with ``now`` from the
caller's monotonic clock. It produces outgoing messages
(``take_outgoing``), request ids whose exchanges should be dropped
(``take_abandoned``), events (``take_events``) and its next deadline
(``next_deadline``). The lifecycle state moves only through ``TRANSITIONS``;
an input with no entry there raises ``InvalidState`` (a ``LocalProtocolError``
and a ``RuntimeError``).

X4: at DEBUG, ``mcpcore.session`` traces what the session decides — each
response with the time since its request was sent, the negotiated protocol
version, each page of the listing, each call with its budget and outcome,
cancellations, deadlines and start-up retries — by method, id and size only,
never an argument value or a result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ..base._errors import (
    InvalidArguments,
    InvalidState,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    TransportError,
)
from ..base._escape import escape_text, excerpt
from ..base._events import (
    CallCancelled,
    CallFailed,
    Event,
    LogMessage,
    RequestSucceeded,
    ToolsListChanged,
)
from ..base._tools import Catalogue
from ..features._desks import NO_TASKS, DeskHolder, NoQuestions, make_task_desk
from ..features._input_options import client_capabilities
from ..features._port import (
    SessionOptions,
    SessionState,
    may_have_run,
    positive_seconds,
    timeout_error,
)
from ..features._subscriptions import Listener
from ..features._tool_requests import ToolsFeature
from ..wire._headers import standard_headers
from ..wire._jsonrpc import ErrorResponse, Message, Notification, Request, Result, encode_message
from ..wire._modern import (
    HANDSHAKE_VERSIONS,
    MAX_INPUT_ROUNDS,
    MODERN_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_legacy_answer,
    probe_failure_is_outage,
    result_type,
)
from ..wire._requests import (
    KINDS,
    Ask,
    Pages,
    Pending,
    RequestPath,
    read_page,
)
from ._cache import ListCache
from ._handshake import Handshake
from ._lifecycle import TRANSITIONS, SessionInput

if TYPE_CHECKING:
    from ..features._port import SessionPort
    from ._handshake import HandshakeHost

__all__ = [
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TRANSITIONS",
    "ClientSession",
    "SessionInput",
    "SessionOptions",
    "SessionState",
    "positive_seconds",
    "timeout_error",
]

SUPPORTED_PROTOCOL_VERSIONS = HANDSHAKE_VERSIONS

_log = logging.getLogger("mcpcore.session")
_server_log = logging.getLogger("mcpcore.server")
_DEBUG = logging.DEBUG

_METHOD_NOT_FOUND = -32601
# What a listen stream (or, in the handshake era, any stream) brings about the
# server's lists, resources and the stream itself: _subscriptions.py reads it.
_LISTENED = ("notifications/resources/", "notifications/prompts/", "notifications/subscriptions/")


class ClientSession(DeskHolder):
    """The MCP client session state machine. See the module docstring."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        self.options = options or SessionOptions()
        # X4: how debug records name this server (escaped: a host may pass any name).
        self.tag = f"[{excerpt(self.options.server_name, 60)}]"
        self.state = SessionState.IDLE
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        # F7: the server's instructions from initialize or server/discover (untrusted)
        self.instructions: str | None = None
        self.failures = 0
        self.last_error: McpError | None = None
        # L8: the host called reconnect(): until that attempt ends, ready() waits for it.
        self.reconnecting = False
        self.path = RequestPath(
            self.options.client_name, self.options.client_version, self.options.log_level
        )
        # B5: _tasks and _input load when first needed (see _desks)
        self.task_desk = make_task_desk(self) if self.options.tasks else NO_TASKS
        self.path.capabilities = self.task_desk.declare(client_capabilities(self.options.input))
        self.input_desk = NoQuestions(self)
        self.events: list[Event] = []
        self.tools = ToolsFeature(self)
        self.era: Literal["modern", "legacy"] | None = None
        self.handshake = Handshake(self)
        self.listener = Listener(self)
        self.subscriptions = self.listener.subscriptions
        self.cache = ListCache(self)

    # --- the table ---------------------------------------------------------------

    def transition(self, event: SessionInput) -> None:
        try:
            self.state = TRANSITIONS[self.state][event]
        except KeyError:
            raise InvalidState(
                f"cannot {event.value!r} while the session is {self.state.value!r}"
            ) from None

    # --- outputs ------------------------------------------------------------------

    def take_outgoing(self) -> list[Message]:
        path = self.path
        out, path.outgoing = path.outgoing, []
        path.encoded.clear()
        return out

    def take_outgoing_encoded(self) -> list[tuple[Message, bytes | None]]:
        """Like ``take_outgoing``, with the bytes of each message already encoded.

        ``None`` where the message was not encoded yet (the caller encodes it).
        """
        path = self.path
        out = path.outgoing
        if not out and not path.encoded:
            return []  # nothing to send: most of the engine's turns end here
        path.outgoing = []
        encoded, path.encoded = path.encoded, {}
        if not encoded:
            return [(message, None) for message in out]
        return [
            (m, encoded.get(m.id) if isinstance(m, Request) and isinstance(m.id, int) else None)
            for m in out
        ]

    def take_abandoned(self) -> list[int]:
        """Request ids whose exchanges the transport should drop (K6)."""
        path = self.path
        out, path.dropped = path.dropped, []
        return out

    def take_events(self) -> list[Event]:
        out, self.events = self.events, []
        return out

    def next_deadline(self) -> float | None:
        # A driver asks after every input (four times a call): no lists, no min().
        best = self.path.earliest_deadline()
        for t in (
            self.handshake.next_deadline(),
            self.listener.next_deadline(),
            self.input_desk.next_deadline(),
            self.task_desk.next_deadline(),
        ):
            if t is not None and (best is None or t < best):
                best = t
        return best

    def owed_on_close(self) -> list[int]:
        """T9: the ids of requests on their way that a close must still deliver
        within its bound (a give-up's ``tasks/cancel``); the transport keeps them
        as it keeps the cancel notices."""
        return [
            request_id
            for request_id, pending in self.path.pending.items()
            if pending.deliver_on_close and pending.sent
        ]

    @property
    def catalogue(self) -> Catalogue | None:
        return self.tools.catalogue

    @property
    def pending_call_ids(self) -> list[int]:
        """The ids of the host's requests that have not ended (calls and the rest)."""
        desks = (*self.input_desk.call_ids, *self.task_desk.calls)
        return [*self.path.carriers, *desks, *self.listener.calls]

    @property
    def modern(self) -> bool:
        """The endpoint speaks the 2026-07-28 revision (known once probed)."""
        return self.era == "modern" and self.protocol_version in MODERN_VERSIONS

    @property
    def is_idle(self) -> bool:
        """Nothing is waiting for the server."""
        path = self.path
        return (
            not path.pending
            and not path.parked
            and self.tools.listing is None
            and self.handshake.idle
            and self.input_desk.idle
            and self.task_desk.idle
            and not self.listener.calls
        )

    @property
    def reinitializing(self) -> bool:
        return self.path.holding

    @property
    def ready(self) -> bool:
        return self.state is SessionState.READY

    @property
    def accepts_refresh(self) -> bool:
        return self.state is SessionState.READY

    # --- commands -----------------------------------------------------------------

    def start(self, now: float) -> None:
        """Begin the first start-up attempt: handshake, then listing (L2)."""
        self.transition(SessionInput.START)
        self.handshake.begin(now)

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
        """Queue ``tools/call`` for ``tool_id``; returns the call id (K1, K2, K7).
        ``meta`` adds the host's own keys to the request's ``_meta`` (V1).
        ``on_input``: see ``InputDesk.on_call`` (Q4). ``task``: the host chose a task
        (``start_task``, T8), so a tool that may run as one is asked to.
        ``timeout``: the caller's own bound on the whole call, a task included (T9);
        without it the client's ``call_timeout`` applies until the server makes a
        task, and ``task_timeout`` from then on.

        Raises at once, with nothing sent: ``UnknownTool`` (naming the ids the
        caller may have meant), ``InvalidState`` before the session is ready,
        ``InvalidArguments`` for arguments that are not a mapping or not JSON,
        ``InvalidValue`` for a timeout that is not a positive number of seconds or a
        ``meta`` key that is the client's own.
        """
        if self.state is not SessionState.READY:
            raise InvalidState(f"cannot call a tool while the session is {self.state.value!r}")
        self.input_desk.check_on_input(on_input)
        budget = self.options.call_timeout if timeout is None else positive_seconds(timeout)
        call_id = self.tools.call(
            tool_id, arguments, now, budget, meta, firm=timeout is not None, task=task
        )
        return self.input_desk.on_call(call_id, on_input)

    def request(self, ask: Ask, now: float, *, timeout: float | None = None) -> int:
        """Send one request of a feature's ``kind`` for the host (F1); returns its
        id. It ends with ``RequestSucceeded`` (the kind's parsed value: every page
        of a paged kind), ``CallFailed`` or ``CallCancelled`` under that id.

        Raises at once, with nothing sent: ``InvalidState`` before the session is
        ready, ``InvalidArguments`` for params JSON cannot carry, ``InvalidValue``
        for a timeout that is not a positive number of seconds.
        """
        kind, params = ask.kind, ask.params
        if self.state is not SessionState.READY:
            raise InvalidState(
                f"cannot send {kind.method} while the session is {self.state.value!r}"
            )
        budget = self.options.call_timeout if timeout is None else positive_seconds(timeout)
        if (served := self.cache.serve(ask, now)) is not None:
            return served  # E7: a fresh answer, nothing sent
        path = self.path
        request_id = path.peek_id
        try:
            encode_message(path.build(kind, request_id, params))
        except LocalProtocolError:
            raise InvalidArguments("params") from None
        self.begin_host_request()
        path.issue(
            kind,
            params,
            now,
            on_done=self._host_done,
            on_failed=self.host_failed,
            deadline=now + budget,
            budget=budget,
            hosted=True,
            pages=Pages("max_items", self.options.max_items) if kind.pages else None,
            context=ask.context,
        )
        _log.debug(
            "%s %s as request id=%d (budget %g s)", self.tag, kind.method, request_id, budget
        )
        return request_id

    def begin_host_request(self) -> None:
        self.transition(SessionInput.CALL)

    def _host_done(self, pending: Pending, value: object, now: float) -> None:
        _log.debug(
            "%s %s id=%d answered in %.1f ms",
            self.tag,
            pending.kind.method,
            pending.call_id,
            (now - pending.started) * 1000,
        )
        self.cache.keep(pending, value, now)
        self.events.append(RequestSucceeded(call_id=pending.call_id, value=value))

    def host_failed(self, pending: Pending, error: McpError, now: float) -> None:
        self.events.append(CallFailed(call_id=pending.call_id, error=error))

    def cancel(self, call_id: int, now: float, reason: str = "cancelled by the caller") -> bool:
        """Abandon a call or another request of the host (K6). Returns False when it
        had already ended."""
        pending = self.path.carrier(call_id)
        if pending is None:
            if not (
                self.task_desk.cancel(call_id, now, reason)
                or self.tools.cancel_waiting(call_id)
                or self.input_desk.cancel(call_id)
                or self.listener.cancel(call_id)
            ):
                return False
        else:
            self.abandon(pending, reason)
        self.events.append(CallCancelled(call_id=call_id, reason=reason))
        return True

    def refresh(self, now: float) -> int:
        """Re-list the tools; ends with ``ToolsRefreshed`` or ``RefreshFailed`` (T6)."""
        self.transition(SessionInput.REFRESH)
        return self.tools.refresh(now)

    def close(self, now: float) -> None:
        """Cancel every call (sending ``notifications/cancelled``) and stop (L6)."""
        if self.state is SessionState.CLOSED:
            return
        self.task_desk.close(now)  # T7: tasks run on unless the host asked
        for call_id in self.pending_call_ids:
            self.cancel(call_id, now, "the client is closing")
        self.transition(SessionInput.CLOSE)
        self.listener.close()
        self.input_desk.close()
        self.path.clear()
        self.handshake.closed()
        self.tools.clear()
        self.reconnecting = False

    # --- inputs from the transport -------------------------------------------------

    def receive_message(self, message: Message, now: float, *, related: int | None = None) -> None:
        """Handle one decoded message from the server (P3a, P4, P5), on ``related``'s stream."""
        if self.state is SessionState.CLOSED:
            return
        if isinstance(message, Request):
            self._answer_server_request(message, related, now)
        elif isinstance(message, Notification):
            self._handle_notification(message, now)
        else:
            self._handle_response(message, now)

    def request_failed(
        self, request_id: int, error: McpError, now: float, *, sent: bool = False
    ) -> None:
        """The exchange carrying ``request_id`` failed in the transport; ``sent``: its
        request had reached the server whole (U3: a call then may have run)."""
        pending = self.path.take(request_id)
        if pending is None:
            return
        if sent and pending.kind.method == "tools/call":
            error = may_have_run(error, pending, request_id)
        if (
            pending.kind.resend
            and self.modern
            and not pending.reissued
            and probe_failure_is_outage(error)
        ):
            # E3, M72: no resumption on this wire; a request that changes nothing on
            # the server (a listing page, a read) is sent once more with a new id.
            self.path.again(pending, now, pending.extra).reissued = True  # the same round
            return
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s %s id=%d failed after %.1f ms: %s",
                self.tag,
                pending.kind.method,
                request_id,
                (now - pending.started) * 1000,
                error,
            )
        pending.on_failed(pending, error, now)
        if (
            self.modern
            and not self.handshake.pinned
            and self.state is SessionState.READY
            and not self.path.holding
            and is_legacy_answer(error)
        ):
            # M13: a handshake-era answer to a 2026-07-28 request: the verdict no
            # longer fits. The request has failed (nothing is re-sent: the server
            # may have acted on it); the endpoint is probed again and what follows
            # waits for the new session.
            _log.debug("%s a handshake-era answer in the 2026-07-28 era: probing again", self.tag)
            self.era = None
            self.handshake.resetup(now)

    def transport_lost(self, error: McpError, now: float, *, sent: Collection[int] = ()) -> None:
        """The whole transport is gone (a child exited): every request fails; those in
        ``sent`` had reached the server whole (U3: a call then may have run)."""
        for request_id in list(self.path.pending):
            self.request_failed(request_id, error, now, sent=request_id in sent)

    def session_expired(self, resend: list[Request], now: float) -> None:
        """H6: the server forgot our session. Set up a new one, then resend ``resend``."""
        if self.state is not SessionState.CLOSED:
            self.input_desk.session_expired()  # its questions for the person are void
        if self.state in (SessionState.CONNECTING, SessionState.LISTING):
            # During start-up an expiry is just a failed attempt.
            self.handshake.fail_start(
                TransportError("the server ended the session during start-up"), now
            )
            return
        if self.state is not SessionState.READY:
            return
        path = self.path
        for request in resend:
            pending = path.pending.get(request.id) if isinstance(request.id, int) else None
            if pending is not None:
                pending.sent = False
                path.parked.append(request)
        if not path.holding:
            _log.debug("%s the session ended; setting up a new one", self.tag)
            self.handshake.resetup(now)

    def retry_now(self, now: float) -> None:
        """Waiting to retry start-up (L4): retry at once instead, because what made
        the last attempt fail changed (new credentials arrived, A3)."""
        if self.handshake.waiting_to_retry:
            self.handshake.retry_now(now)
            self.handle_timer(now)

    def handle_timer(self, now: float) -> None:
        """Fire every deadline that is due at ``now``."""
        self.handshake.handle_timer(now)
        self.listener.handle_timer(now)
        self.input_desk.handle_timer(now)
        self.task_desk.handle_timer(now)
        while (pending := self.path.pop_due(now)) is not None:
            error = timeout_error(pending)
            _log.debug(
                "%s %s id=%s timed out after %g s",
                self.tag,
                pending.kind.method,
                pending.request.id,
                now - pending.started,
            )
            self.abandon(pending, "timed out")
            pending.on_failed(pending, error, now)

    def fail_request(self, pending: Pending, error: McpError, now: float, reason: str) -> None:
        """End a request of ours with ``error``: abandoned (K6), then failed for its owner."""
        self.abandon(pending, reason)
        pending.on_failed(pending, error, now)

    # --- internals: the request path ---------------------------------------------------

    def abandon(self, pending: Pending, reason: str) -> None:
        """K6: forget the request, tell the server once, drop its exchange.

        On the 2026-07-28 wire closing the request's stream is the cancellation
        (M58): no notice is sent.
        """
        if not self.path.abandon(pending, reason):
            return
        request_id = pending.request.id
        assert isinstance(request_id, int)
        if self.modern:
            _log.debug("%s abandoned request id=%d (%s)", self.tag, request_id, reason)
            return
        _log.debug(
            "%s abandoned request id=%d (%s): sending notifications/cancelled",
            self.tag,
            request_id,
            reason,
        )
        self.path.cancel_notice(request_id, reason)

    def headers_for(self, message: Message) -> list[tuple[bytes, bytes]] | None:
        """The 2026-07-28 headers of one outgoing request (M24–M27, M37): computed
        from the very body being sent; ``None`` in the handshake era."""
        if not isinstance(message, Request) or self.protocol_version is None:
            return None
        if not (self.modern or message.method == "server/discover"):
            return None
        params = message.params if isinstance(message.params, Mapping) else {}
        kind = KINDS.get(message.method)
        name = params.get(kind.name_param) if kind is not None and kind.name_param else None
        headers = standard_headers(
            message.method, name if isinstance(name, str) else None, self.protocol_version
        )
        if message.method == "tools/call":
            headers += self.tools.headers(params)
        return headers

    def _handle_response(self, message: Result | ErrorResponse, now: float) -> None:
        request_id = message.id
        pending = self.path.take(request_id)
        if pending is None:
            if request_id in self.path.abandoned:
                _log.debug("dropped a late response for abandoned request %r", request_id)
            else:
                _log.debug("ignored a response with unknown id %r", excerpt(repr(request_id), 40))
            return
        if isinstance(message, ErrorResponse):
            if _log.isEnabledFor(_DEBUG):
                _log.debug(
                    "%s %s id=%d answered in %.1f ms with JSON-RPC error %s",
                    self.tag,
                    pending.kind.method,
                    request_id,
                    (now - pending.started) * 1000,
                    excerpt(repr(message.code), 20),
                )
            if (
                self.modern
                and message.code == UNSUPPORTED_PROTOCOL_VERSION
                and pending.kind.stamped
            ):
                self.handshake.version_refused(pending, message, now)
                return
            if pending.on_refused is not None and pending.on_refused(pending, message, now):
                return
            error = self.input_desk.refusal(pending, message) or pending.kind.refused(
                message, pending, self.modern
            )
            if error.rpc_code is None and type(message.code) is int:
                error.rpc_code = message.code
            pending.on_failed(pending, error, now)
            return
        self._answered(pending, message.result, now)

    def _answered(self, pending: Pending, result: object, now: float) -> None:
        """A result: input_required rounds, pages, then the kind's reading of it."""
        kind = pending.kind
        if not kind.typed_result:
            pending.on_done(pending, result, now)
            return
        try:
            if not isinstance(result, dict):
                raise RemoteProtocolError(f"the {kind.method} result is not a JSON object")
            if kind.tasks and self.task_desk.created(pending, result, now):
                return  # T7: followed as a task (or handed to the host)
            if self.modern and result_type(result, mrtr=kind.input_rounds) == "input_required":
                self._answer_input_required(pending, result, now)
                return
            if kind.pages is not None:
                cursor = read_page(pending, result, self.options.max_pages)
                if _log.isEnabledFor(_DEBUG):
                    assert pending.pages is not None
                    _log.debug(
                        "%s %s id=%s page %d answered in %.1f ms%s",
                        self.tag,
                        kind.method,
                        pending.request.id,
                        pending.pages.count,
                        (now - pending.started) * 1000,
                        ", more to come" if cursor is not None else ", the last page",
                    )
                if cursor is not None:
                    self.path.next_page(pending, cursor, now)
                    return
                assert pending.pages is not None
                result = {k: v for k, v in result.items() if k != "nextCursor"}
                result[kind.pages] = pending.pages.items
            value = kind.parse(result, pending)
        except McpError as exc:
            pending.on_failed(pending, exc, now)
            return
        pending.on_done(pending, value, now)

    def _answer_input_required(self, pending: Pending, result: dict[str, Any], now: float) -> None:
        """M48–M54, E4: answer what the server asked for and send the request again."""
        state = result.get("requestState")
        requests = result.get("inputRequests")
        if (requests is None and state is None) or (
            state is not None and not isinstance(state, str)
        ):
            raise RemoteProtocolError(
                "the server's input_required result has neither inputRequests nor a "
                "requestState string"
            )
        if pending.rounds + 1 >= MAX_INPUT_ROUNDS:
            raise RemoteProtocolError(
                f"the call needed more than {MAX_INPUT_ROUNDS} rounds of input_required"
            )
        pending.rounds += 1
        _log.debug(
            "%s %s id=%d needs input (round %d)",
            self.tag,
            pending.kind.method,
            pending.call_id,
            pending.rounds,
        )
        self.input.input_round(pending, requests, state, now)  # E4, Q1, Q4

    def relisted(self) -> None:
        self.transition(SessionInput.LISTING_DONE)

    def fail_start(self, error: McpError, now: float) -> None:
        self.handshake.fail_start(error, now)

    def listed_at_start(self, catalogue: Catalogue, pages: int, now: float) -> None:
        self.handshake.listed_at_start(catalogue, pages, now)

    # --- internals: what the server sends of its own ----------------------------------

    def _answer_server_request(self, request: Request, related: int | None, now: float) -> None:
        if self.modern:
            # M29: a request on a 2026-07-28 response stream breaks that revision's
            # rules; it is not answered (there is nowhere to answer it).
            _log.debug(
                "%s ignored a server request %r", self.tag, escape_text(request.method[:100])
            )
            return
        # P3a, P4: ping is answered at any time; the rest only when the host offers it (Q1).
        if request.method == "ping":
            self.path.outgoing.append(Result(id=request.id, result={}))
        elif not self.input.server_request(request, related, now):
            self.path.outgoing.append(
                ErrorResponse(
                    id=request.id,
                    code=_METHOD_NOT_FOUND,
                    message=f"Method not found: {request.method[:100]}",
                )
            )

    def _handle_notification(self, note: Notification, now: float) -> None:
        params = note.params or {}
        if note.method == "notifications/progress":
            progress = self.path.progress(
                params,
                now,
                self.options.extend_on_progress,
                self.options.call_timeout_max,
                self.tag,
            )
            if progress is not None:
                self.events.append(progress)
        elif note.method == "notifications/tools/list_changed":
            self.events.append(ToolsListChanged())
            self.cache.forget("tools/list")  # M66, M79
            if not self.options.auto_refresh:
                return
            if self.state is SessionState.READY:
                self.tools.queue_refresh(-1, now)
            elif self.state is SessionState.LISTING:
                # The listing under way may already be out of date: list again
                # once it is done rather than lose the change.
                self.tools.relist_after_start = True
        elif note.method == "notifications/elicitation/complete":
            self.input.completed(params)
        elif note.method.startswith(_LISTENED):  # M64, F2, F5
            self.subscriptions.notified(note.method, params, now)
        elif note.method == "notifications/message":
            if self.options.log_events:
                self.events.append(_log_message(self.options.server_name, params))
            else:
                _forward_server_log(self.options.server_name, params)
        else:
            _log.debug("ignored notification %r", escape_text(note.method[:100]))


if TYPE_CHECKING:

    def _ports(session: ClientSession) -> tuple[SessionPort, HandshakeHost]:
        """The session implements the port its features reach it through and its
        handshake's: mypy checks it here, structurally (nothing runs this)."""
        return session, session


# --- pure helpers -----------------------------------------------------------------


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def _log_message(server: str, params: Mapping[str, Any]) -> LogMessage:
    level = params.get("level")
    origin = params.get("logger")
    return LogMessage(
        server=server,
        level=level if level in _LEVELS else "info",
        logger=origin if isinstance(origin, str) else None,
        data=params.get("data"),
    )


def _forward_server_log(server: str, params: Mapping[str, Any]) -> None:
    """P4: ``notifications/message`` goes to logging, escaped and cut short (X1)."""
    level = _LEVELS.get(str(params.get("level")), logging.INFO)
    if not _server_log.isEnabledFor(level):
        return
    data = params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    origin = params.get("logger")
    name = f"{server}:{excerpt(origin, 60)}" if isinstance(origin, str) else server
    _server_log.log(level, "[%s] %s", name, excerpt(text, 2000))
