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

import heapq
import json
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from ._backoff import backoff_delay
from ._errors import (
    BackendError,
    CallTimeout,
    HandshakeError,
    InvalidArguments,
    InvalidState,
    InvalidValue,
    LimitExceeded,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    TransportError,
    UnknownTool,
)
from ._escape import escape_text, excerpt
from ._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    Event,
    ProgressReceived,
    RefreshFailed,
    SessionReady,
    StartFailed,
    ToolsListChanged,
    ToolsRefreshed,
)
from ._filters import ToolFilter
from ._headers import (
    HeaderParam,
    InvalidHeaderDeclaration,
    param_headers,
    standard_headers,
    tool_header_params,
)
from ._jsonrpc import ErrorResponse, Message, Notification, Request, Result, encode_message
from ._modern import (
    HEADER_MISMATCH,
    MAX_INPUT_ROUNDS,
    MODERN_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    answer_input_requests,
    discover_verdict,
    envelope,
    is_legacy_answer,
    probe_error_verdict,
    probe_failure_is_outage,
    result_type,
)
from ._render import render_result
from ._tools import Catalogue, Tool

__all__ = [
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TRANSITIONS",
    "ClientSession",
    "SessionInput",
    "SessionOptions",
    "SessionState",
    "positive_seconds",
]

SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")

_log = logging.getLogger("mcpcore.session")
_server_log = logging.getLogger("mcpcore.server")
_DEBUG = logging.DEBUG

_METHOD_NOT_FOUND = -32601
# Ids of abandoned requests kept to word a late response's debug log; older ones are
# forgotten (a late response for them is then logged as unknown, which it also is).
_ABANDONED_REMEMBERED = 1024


class SessionState(Enum):
    IDLE = "idle"
    CONNECTING = "connecting"  # initialize sent, waiting for its result
    LISTING = "listing"  # initialized sent, paging through tools/list
    READY = "ready"
    BACKOFF = "backoff"  # a start-up attempt failed; waiting to retry
    CLOSED = "closed"


class SessionInput(Enum):
    START = "start"
    INIT_SUCCEEDED = "initialized (handshake era)"
    DISCOVERED = "discovered (2026-07-28)"
    FELL_BACK = "fell back to initialize"
    LISTING_DONE = "listing done"
    START_FAILED = "start failed"
    RETRY_DUE = "retry due"
    CALL = "call"
    REFRESH = "refresh"
    CLOSE = "close"


S, In = SessionState, SessionInput

# The lifecycle, as a table: TRANSITIONS[state][input] -> next state.
# docs/state-diagram.md is drawn from it by scripts/draw_state_diagram.py.
TRANSITIONS: dict[SessionState, dict[SessionInput, SessionState]] = {
    S.IDLE: {In.START: S.CONNECTING, In.CLOSE: S.CLOSED},
    S.CONNECTING: {
        In.INIT_SUCCEEDED: S.LISTING,
        In.DISCOVERED: S.LISTING,
        In.FELL_BACK: S.CONNECTING,
        In.START_FAILED: S.BACKOFF,
        In.CLOSE: S.CLOSED,
    },
    S.LISTING: {
        In.LISTING_DONE: S.READY,
        In.START_FAILED: S.BACKOFF,
        In.CLOSE: S.CLOSED,
    },
    S.BACKOFF: {In.RETRY_DUE: S.CONNECTING, In.CLOSE: S.CLOSED},
    S.READY: {
        In.CALL: S.READY,
        In.REFRESH: S.READY,
        In.LISTING_DONE: S.READY,
        In.CLOSE: S.CLOSED,
    },
    S.CLOSED: {In.CLOSE: S.CLOSED},
}
del S, In


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """Everything configurable about a session. Times in seconds."""

    server_name: str = "server"
    client_name: str = "mcpcore"
    client_version: str = "0.1.0"
    startup_timeout: float = 120.0
    call_timeout: float = 300.0
    # K2: progress may push a call's deadline out, never past call_timeout_max.
    extend_on_progress: bool = False
    call_timeout_max: float = 3600.0
    separator: str = "/"
    segment_pattern: re.Pattern[str] | None = None
    policy: Literal["error", "lenient"] = "error"
    auto_refresh: bool = False
    max_pages: int = 1000
    max_tools: int = 10_000
    backoff_first: float = 1.0
    backoff_max: float = 60.0
    # E1: "auto" probes with server/discover and falls back to initialize;
    # "legacy" (or a handshake-era version) always uses initialize; "modern" (or a
    # 2026-07-28-era version) never falls back.
    protocol: str = "auto"
    # V4: the include/exclude filter (None: every tool the server lists)
    tool_filter: ToolFilter | None = None


@dataclass(slots=True)
class _Pending:
    """One request of ours that is waiting for its response."""

    kind: Literal["initialize", "discover", "list", "call", "listen"]
    request: Request
    deadline: float | None
    # calls: the id the caller knows (the first request's id; a re-sent round of
    # input_required or a header-mismatch retry has a new request id, M49)
    call_id: int = 0
    rounds: int = 0
    mismatch_retried: bool = False
    # modern listing and discovery: re-issued once when their stream broke (E3)
    reissued: bool = False
    # calls
    tool: Tool | None = None
    budget: float = 0.0
    started: float = 0.0
    sent: bool = True
    # listings: None = the start-up listing, else a refresh id (-1 = automatic)
    refresh_id: int | None = None


@dataclass(slots=True)
class _Listing:
    refresh_id: int | None  # None: start-up; -1: automatic re-list; else caller's id
    tools: list[object] = field(default_factory=list)
    cursors: set[str] = field(default_factory=set)
    pages: int = 0


class ClientSession:
    """The MCP client session state machine. See the module docstring."""

    def __init__(self, options: SessionOptions | None = None) -> None:
        self.options = options or SessionOptions()
        # X4: how debug records name this server (escaped: a host may pass any name).
        self._tag = f"[{excerpt(self.options.server_name, 60)}]"
        self._attempt_started = 0.0
        self.state = SessionState.IDLE
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.catalogue: Catalogue | None = None
        self.failures = 0
        self.last_error: McpError | None = None
        self._next_id = 1
        self._pending: dict[int, _Pending] = {}
        # Deadlines of pending requests as a heap of (deadline, request id). An entry
        # is stale once its request ended or its deadline moved; stale entries are
        # dropped when they reach the top, so next_deadline() and handle_timer()
        # cost O(log n) per request rather than a scan of every pending one.
        self._deadlines: list[tuple[float, int]] = []
        self._abandoned: OrderedDict[int, None] = OrderedDict()
        self._outgoing: list[Message] = []
        # K9: the bytes of a call request, encoded (and so checked) before it was
        # registered; the engine sends them as they are rather than encoding twice.
        self._encoded: dict[int, bytes] = {}
        self._dropped: list[int] = []
        self._events: list[Event] = []
        self._startup_deadline: float | None = None
        self._retry_at: float | None = None
        self._listing: _Listing | None = None
        self._queued_refreshes: list[int] = []
        self._next_refresh_id = 1
        # H6: while a fresh session is being set up, requests wait here, each within
        # its own deadline; a failed set-up is retried on the backoff schedule (L4).
        self._reinitializing = False
        self._reinit_failures = 0
        self._reinit_at: float | None = None
        self._parked: list[Request] = []
        # P4: a tools/list_changed that came during the start-up listing, re-listed
        # once that listing is done (auto_refresh).
        self._relist_after_start = False
        # E1: the era of this endpoint once known: remembered for the client's life
        # and re-checked when it stops fitting (M12, M13).
        protocol = self.options.protocol
        self._pinned: Literal["modern", "legacy"] | None = (
            "modern"
            if protocol == "modern" or protocol in MODERN_VERSIONS
            else "legacy"
            if protocol == "legacy" or protocol in SUPPORTED_PROTOCOL_VERSIONS
            else None
        )
        self.era: Literal["modern", "legacy"] | None = self._pinned
        self._probe_retried = False
        # M34: each listed tool's x-mcp-header declarations (modern era)
        self._header_params: dict[str, tuple[HeaderParam, ...]] = {}
        # a call's id -> the id of the request now carrying it (M49)
        self._call_requests: dict[int, int] = {}
        # M42: calls waiting for a re-list before they are sent again
        self._after_relist: list[_Pending] = []
        # M63, M67: the subscriptions/listen request, and when to open it again
        self._listen_id: int | None = None
        self._listen_at: float | None = None
        self._listen_failures = 0

    # --- the table ---------------------------------------------------------------

    def _transition(self, event: SessionInput) -> None:
        try:
            self.state = TRANSITIONS[self.state][event]
        except KeyError:
            raise InvalidState(
                f"cannot {event.value!r} while the session is {self.state.value!r}"
            ) from None

    # --- outputs ------------------------------------------------------------------

    def take_outgoing(self) -> list[Message]:
        out, self._outgoing = self._outgoing, []
        self._encoded.clear()
        return out

    def take_outgoing_encoded(self) -> list[tuple[Message, bytes | None]]:
        """Like ``take_outgoing``, with the bytes of each message already encoded.

        ``None`` where the message was not encoded yet (the caller encodes it).
        """
        out, self._outgoing = self._outgoing, []
        encoded, self._encoded = self._encoded, {}
        if not encoded:
            return [(message, None) for message in out]
        return [
            (m, encoded.get(m.id) if isinstance(m, Request) and isinstance(m.id, int) else None)
            for m in out
        ]

    def take_abandoned(self) -> list[int]:
        """Request ids whose exchanges the transport should drop (K6)."""
        out, self._dropped = self._dropped, []
        return out

    def take_events(self) -> list[Event]:
        out, self._events = self._events, []
        return out

    def next_deadline(self) -> float | None:
        times = [
            t
            for t in (
                self._earliest_request_deadline(),
                self._startup_deadline,
                self._retry_at,
                self._reinit_at,
                self._listen_at,
            )
            if t is not None
        ]
        return min(times) if times else None

    def _earliest_request_deadline(self) -> float | None:
        heap, pending = self._deadlines, self._pending
        while heap:
            at, request_id = heap[0]
            entry = pending.get(request_id)
            if entry is not None and entry.deadline == at:
                return at
            heapq.heappop(heap)
        return None

    def _track_deadline(self, request_id: int, deadline: float | None) -> None:
        if deadline is None:
            return
        heap = self._deadlines
        heapq.heappush(heap, (deadline, request_id))
        # Deadlines pushed out by progress leave stale entries behind; rebuild the
        # heap when they outnumber the live ones, so it stays O(pending) in size.
        if len(heap) > 64 and len(heap) > 2 * len(self._pending):
            self._deadlines = [
                (p.deadline, rid) for rid, p in self._pending.items() if p.deadline is not None
            ]
            heapq.heapify(self._deadlines)

    @property
    def pending_call_ids(self) -> list[int]:
        return list(self._call_requests)

    @property
    def modern(self) -> bool:
        """The endpoint speaks the 2026-07-28 revision (known once probed)."""
        return self.era == "modern" and self.protocol_version in MODERN_VERSIONS

    @property
    def is_idle(self) -> bool:
        """Nothing is waiting for the server."""
        return (
            not self._pending
            and not self._parked
            and self._listing is None
            and self._reinit_at is None
        )

    @property
    def reinitializing(self) -> bool:
        return self._reinitializing

    # --- commands -----------------------------------------------------------------

    def start(self, now: float) -> None:
        """Begin the first start-up attempt: handshake, then listing (L2)."""
        self._transition(SessionInput.START)
        self._begin_handshake(now)

    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None,
        now: float,
        *,
        timeout: float | None = None,
    ) -> int:
        """Queue ``tools/call`` for ``tool_id``; returns the call id (K1, K2, K7).

        Raises at once, with nothing sent: ``UnknownTool`` (naming the ids the
        caller may have meant), ``InvalidState`` before the session is ready,
        ``InvalidArguments`` for arguments that are not a mapping or not JSON,
        ``InvalidValue`` for a timeout that is not a positive number of seconds.
        """
        if self.state is not SessionState.READY:
            raise InvalidState(f"cannot call a tool while the session is {self.state.value!r}")
        assert self.catalogue is not None
        tool = self.catalogue.get(tool_id)
        if tool is None:
            hidden = self.catalogue.filtered.get(tool_id)
            if hidden is not None:
                raise UnknownTool(tool_id, filtered=hidden)
            raise UnknownTool(tool_id, suggestions=self.catalogue.suggest(tool_id))
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise InvalidArguments(
                "arguments",
                message="call arguments must be a mapping (a JSON object), "
                f"not {type(arguments).__name__}",
            )
        budget = self.options.call_timeout if timeout is None else positive_seconds(timeout)
        request_id = self._next_id
        request = Request(
            id=request_id,
            method="tools/call",
            params=self._stamp(
                {
                    "name": tool.name,
                    "arguments": dict(arguments),
                    "_meta": {"progressToken": request_id},
                }
            ),
        )
        # K9: encoded before anything is registered, so arguments JSON cannot carry
        # (NaN, a set, an object) fail this call alone and leave nothing behind.
        try:
            body = encode_message(request)
        except LocalProtocolError:
            raise InvalidArguments(_unencodable_path(arguments)) from None
        self._transition(SessionInput.CALL)
        self._next_id += 1
        pending = _Pending(
            kind="call",
            request=request,
            deadline=now + budget,
            tool=tool,
            budget=budget,
            started=now,
            call_id=request_id,
        )
        self._pending[request_id] = pending
        self._call_requests[request_id] = request_id
        self._track_deadline(request_id, pending.deadline)
        if self._send_request(pending):
            self._encoded[request_id] = body
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s tools/call %r as request id=%d (%d bytes, budget %g s)%s",
                self._tag,
                tool.id,
                request_id,
                len(body),
                budget,
                "" if pending.sent else ", waiting for the new session",
            )
        return request_id

    def cancel(self, call_id: int, now: float, reason: str = "cancelled by the caller") -> bool:
        """Abandon a call (K6). Returns False when the call had already ended."""
        request_id = self._call_requests.get(call_id)
        pending = None if request_id is None else self._pending.get(request_id)
        if pending is None or pending.kind != "call":
            waiting = self._waiting_call(call_id)
            if waiting is None:
                return False
            self._after_relist.remove(waiting)  # between two rounds: nothing on the wire
            self._call_requests.pop(call_id, None)
            self._events.append(CallCancelled(call_id=call_id, reason=reason))
            return True
        assert request_id is not None
        self._abandon(request_id, pending, reason)
        self._events.append(CallCancelled(call_id=call_id, reason=reason))
        return True

    def refresh(self, now: float) -> int:
        """Re-list the tools; ends with ``ToolsRefreshed`` or ``RefreshFailed`` (T6)."""
        self._transition(SessionInput.REFRESH)
        refresh_id = self._next_refresh_id
        self._next_refresh_id += 1
        self._queue_refresh(refresh_id, now)
        return refresh_id

    def close(self, now: float) -> None:
        """Cancel every call (sending ``notifications/cancelled``) and stop (L6)."""
        if self.state is SessionState.CLOSED:
            return
        for call_id in self.pending_call_ids:
            self.cancel(call_id, now, "the client is closing")
        self._transition(SessionInput.CLOSE)
        if self._listen_id is not None and self._listen_id in self._pending:
            self._dropped.append(self._listen_id)  # M68: its stream is closed
        self._listen_id = None
        self._listen_at = None
        self._pending.clear()
        self._call_requests.clear()
        self._deadlines.clear()
        self._parked.clear()
        self._reinit_at = None
        self._reinitializing = False
        self._listing = None
        self._startup_deadline = None
        self._retry_at = None

    # --- inputs from the transport -------------------------------------------------

    def receive_message(self, message: Message, now: float) -> None:
        """Handle one decoded message from the server (P3a, P4, P5)."""
        if self.state is SessionState.CLOSED:
            return
        if isinstance(message, Request):
            self._answer_server_request(message)
        elif isinstance(message, Notification):
            self._handle_notification(message, now)
        else:
            self._handle_response(message, now)

    def request_failed(self, request_id: int, error: McpError, now: float) -> None:
        """The exchange carrying ``request_id`` failed in the transport."""
        pending = self._pending.get(request_id)
        if pending is None:
            return
        del self._pending[request_id]
        if (
            pending.kind == "list"
            and self.modern
            and not pending.reissued
            and probe_failure_is_outage(error)
        ):
            # E3, M72: no resumption on this wire; a listing page is re-issued once
            # with a new id (it changes nothing on the server).
            self._reissue(pending, now)
            return
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s %s id=%d failed after %.1f ms: %s",
                self._tag,
                pending.request.method,
                request_id,
                (now - pending.started) * 1000,
                error,
            )
        self._fail_pending(pending, error, now)
        if (
            self.modern
            and self._pinned is None
            and self.state is SessionState.READY
            and not self._reinitializing
            and is_legacy_answer(error)
        ):
            # M13: a handshake-era answer to a 2026-07-28 request: the verdict no
            # longer fits. The request has failed (nothing is re-sent: the server
            # may have acted on it); the endpoint is probed again and what follows
            # waits for the new session.
            _log.debug("%s a handshake-era answer in the 2026-07-28 era: probing again", self._tag)
            self.era = None
            self._reinitializing = True
            self._begin_resetup(now)

    def transport_lost(self, error: McpError, now: float) -> None:
        """The whole transport is gone (a child exited): every request fails."""
        for request_id in list(self._pending):
            self.request_failed(request_id, error, now)

    def session_expired(self, resend: list[Request], now: float) -> None:
        """H6: the server forgot our session. Set up a new one, then resend ``resend``."""
        if self.state in (SessionState.CONNECTING, SessionState.LISTING):
            # During start-up an expiry is just a failed attempt.
            self._fail_start(TransportError("the server ended the session during start-up"), now)
            return
        if self.state is not SessionState.READY:
            return
        for request in resend:
            pending = self._pending.get(request.id) if isinstance(request.id, int) else None
            if pending is not None:
                pending.sent = False
                self._parked.append(request)
        if not self._reinitializing:
            self._reinitializing = True
            _log.debug("the server ended the session (HTTP 404); setting up a new one")
            self._begin_resetup(now)

    def retry_now(self, now: float) -> None:
        """Waiting to retry start-up (L4): retry at once instead, because what made
        the last attempt fail changed (new credentials arrived, A3)."""
        if self._retry_at is not None:
            self._retry_at = now
            self.handle_timer(now)

    def handle_timer(self, now: float) -> None:
        """Fire every deadline that is due at ``now``."""
        if self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            self._transition(SessionInput.RETRY_DUE)
            self._begin_handshake(now)
        if self._startup_deadline is not None and now >= self._startup_deadline:
            budget = self.options.startup_timeout
            self._fail_start(
                CallTimeout(f"start-up did not finish within {budget:g} s", budget=budget), now
            )
        if self._listen_at is not None and now >= self._listen_at:
            self._listen_at = None
            if self.state is SessionState.READY:
                self._open_listen(now, relist=True)
        if self._reinit_at is not None and now >= self._reinit_at:
            self._reinit_at = None
            _log.debug("setting up a new session again (attempt %d)", self._reinit_failures + 1)
            self._begin_resetup(now)
        while (due := self._earliest_request_deadline()) is not None and due <= now:
            _, request_id = heapq.heappop(self._deadlines)
            pending = self._pending[request_id]
            if pending.kind == "call":
                assert pending.tool is not None
                error = CallTimeout(
                    f"tool {pending.tool.id!r} did not finish within its "
                    f"{pending.budget:g} s budget",
                    tool=pending.tool.id,
                    budget=pending.budget,
                )
                _log.debug(
                    "%s tools/call id=%d (%r) timed out after %g s",
                    self._tag,
                    request_id,
                    pending.tool.id,
                    now - pending.started,
                )
                self._abandon(request_id, pending, "timed out")
                self._events.append(CallFailed(call_id=pending.call_id, error=error))
            else:
                del self._pending[request_id]
                what = pending.request.method
                self._fail_pending(
                    pending,
                    CallTimeout(f"{what} did not finish in time", budget=None),
                    now,
                )

    # --- internals: sending ----------------------------------------------------------

    def _new_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    def _send_request(self, pending: _Pending) -> bool:
        """Send now, or park until the new session is up (H6). True when sent."""
        if self._reinitializing and pending.kind not in ("initialize", "discover"):
            pending.sent = False
            self._parked.append(pending.request)
            return False
        self._outgoing.append(pending.request)
        return True

    def _begin_handshake(self, now: float) -> None:
        self.protocol_version = None
        self._attempt_started = now
        self._startup_deadline = now + self.options.startup_timeout
        self._probe_retried = False
        if self.era == "legacy":
            _log.debug(
                "%s start-up attempt %d: initialize (offering protocol version %s)",
                self._tag,
                self.failures + 1,
                self._handshake_version(),
            )
            self._send_initialize(now, deadline=None)
        else:
            self._send_discover(now, self._modern_version())

    def _begin_resetup(self, now: float) -> None:
        """H6, M13: set up a new session while ready (requests wait, parked): with
        ``initialize`` when the era is known to be the handshake's, else probing."""
        self.protocol_version = None
        self._probe_retried = False
        deadline = now + self.options.startup_timeout
        if self.era == "legacy":
            self._send_initialize(now, deadline=deadline)
        else:
            self._send_discover(now, self._modern_version(), deadline=deadline)

    def _setup_failed(self, error: McpError, now: float) -> None:
        """A handshake step failed: a start-up attempt, or a re-setup while ready."""
        if self._reinitializing:
            self._reinit_failed(error, now)
        else:
            self._fail_start(error, now)

    def _finish_resetup(self, now: float) -> None:
        """H6: the new session is up; send what was waiting, once, then re-list: the
        new session may offer other tools than the old one."""
        self._reinitializing = False
        self._reinit_failures = 0
        self.last_error = None
        parked, self._parked = self._parked, []
        for request in parked:
            waiting = self._pending.get(request.id)  # type: ignore[arg-type]
            if waiting is None:
                continue
            waiting.sent = True
            if self.modern:
                # Parked while no era was known, so sent without the envelope.
                params = request.params if isinstance(request.params, Mapping) else None
                request = Request(id=request.id, method=request.method, params=self._stamp(params))
                waiting.request = request
            self._outgoing.append(request)
        if self.modern or "tools" in self.server_capabilities:
            self._queue_refresh(-1, now)

    def _modern_version(self) -> str:
        protocol = self.options.protocol
        return protocol if protocol in MODERN_VERSIONS else MODERN_VERSIONS[0]

    def _handshake_version(self) -> str:
        protocol = self.options.protocol
        return (
            protocol if protocol in SUPPORTED_PROTOCOL_VERSIONS else SUPPORTED_PROTOCOL_VERSIONS[0]
        )

    def _send_discover(self, now: float, version: str, *, deadline: float | None = None) -> None:
        """E1, M1: the probe: server/discover at the newest revision, fully stamped."""
        _log.debug(
            "%s start-up attempt %d: server/discover at protocol version %s",
            self._tag,
            self.failures + 1,
            version,
        )
        self.protocol_version = version  # the probe's headers and envelope use it
        request_id = self._new_id()
        request = Request(
            id=request_id,
            method="server/discover",
            params=envelope(None, version, self.options.client_name, self.options.client_version),
        )
        self._pending[request_id] = _Pending(
            kind="discover", request=request, deadline=deadline, started=now
        )
        self._track_deadline(request_id, deadline)
        self._outgoing.append(request)

    def _stamp(self, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """Params as the era wants them: with the modern envelope (M18), else as given."""
        if not self.modern:
            return None if params is None else dict(params)
        assert self.protocol_version is not None
        return envelope(
            params, self.protocol_version, self.options.client_name, self.options.client_version
        )

    def _handle_discover_result(self, pending: _Pending, result: object, now: float) -> None:
        verdict = discover_verdict(result)
        if verdict.kind != "modern":
            self._fall_back(now, "server/discover named no revision this client speaks")
            return
        assert verdict.version is not None
        self.era = "modern"
        self.protocol_version = verdict.version
        self.server_capabilities = dict(verdict.capabilities or {})
        self.server_info = dict(verdict.server_info or {})
        _log.debug(
            "%s server/discover id=%s answered in %.1f ms: protocol version %s",
            self._tag,
            pending.request.id,
            (now - pending.started) * 1000,
            verdict.version,
        )
        if self._reinitializing:
            self._finish_resetup(now)
            return
        self._transition(SessionInput.DISCOVERED)
        # M17: list even when no tools capability was advertised.
        self._listing = _Listing(refresh_id=None)
        self._request_page(None, now)

    def _probe_refused(self, pending: _Pending, message: ErrorResponse, now: float) -> None:
        """M4–M8: a JSON-RPC error answering the probe."""
        sent = self.protocol_version or MODERN_VERSIONS[0]
        verdict = probe_error_verdict(
            message.code, message.data, retried=self._probe_retried, sent=sent
        )
        if verdict.kind == "retry":
            assert verdict.version is not None
            self._probe_retried = True
            self._send_discover(now, verdict.version, deadline=pending.deadline)
        elif verdict.kind == "fail":
            assert verdict.error is not None
            self._setup_failed(verdict.error, now)
        else:
            self._fall_back(now, f"server/discover was refused with error {message.code}")

    def _probe_failed(self, pending: _Pending, error: McpError, now: float) -> None:
        """M8, M10: a failed probe is an outage, or the handshake era's answer."""
        if probe_failure_is_outage(error):
            self._setup_failed(error, now)
        else:
            self._fall_back(now, str(error))

    def _fall_back(self, now: float, why: str) -> None:
        """E1: the handshake era, on the same URL (M3, M6, M8, M83)."""
        if self._pinned == "modern":
            self._setup_failed(
                HandshakeError(f"the server does not speak protocol version 2026-07-28 ({why})"),
                now,
            )
            return
        _log.debug("%s falling back to initialize: %s", self._tag, excerpt(why, 200))
        self.era = "legacy"
        self.protocol_version = None
        if self._reinitializing:
            self._send_initialize(now, deadline=now + self.options.startup_timeout)
            return
        self._transition(SessionInput.FELL_BACK)
        self._send_initialize(now, deadline=None)

    def _send_initialize(self, now: float, *, deadline: float | None) -> None:
        request_id = self._new_id()
        request = Request(
            id=request_id,
            method="initialize",
            params={
                "protocolVersion": self._handshake_version(),
                "capabilities": {},
                "clientInfo": {
                    "name": self.options.client_name,
                    "version": self.options.client_version,
                },
            },
        )
        self._pending[request_id] = _Pending(
            kind="initialize", request=request, deadline=deadline, started=now
        )
        self._track_deadline(request_id, deadline)
        self._outgoing.append(request)

    def _abandon(self, request_id: int, pending: _Pending, reason: str) -> None:
        """K6: forget the request, tell the server once, drop its exchange.

        On the 2026-07-28 wire closing the request's stream is the cancellation
        (M58): no notice is sent.
        """
        del self._pending[request_id]
        if pending.kind == "call":
            self._call_requests.pop(pending.call_id, None)
        if pending.kind in ("initialize", "discover"):
            return  # never cancelled (K6, M14)
        if not pending.sent:
            self._parked = [r for r in self._parked if r.id != request_id]
            return
        self._remember_abandoned(request_id)
        self._dropped.append(request_id)
        if self.modern:
            _log.debug("%s abandoned request id=%d (%s)", self._tag, request_id, reason)
            return
        _log.debug(
            "%s abandoned request id=%d (%s): sending notifications/cancelled",
            self._tag,
            request_id,
            reason,
        )
        self._outgoing.append(
            Notification(
                method="notifications/cancelled",
                params={"requestId": request_id, "reason": reason},
            )
        )

    def _remember_abandoned(self, request_id: int) -> None:
        abandoned = self._abandoned
        abandoned[request_id] = None
        if len(abandoned) > _ABANDONED_REMEMBERED:
            abandoned.popitem(last=False)

    # --- internals: start-up ---------------------------------------------------------

    def _fail_start(self, error: McpError, now: float) -> None:
        for request_id, pending in list(self._pending.items()):
            del self._pending[request_id]
            if pending.kind == "list":
                self._remember_abandoned(request_id)
                self._dropped.append(request_id)
        self._listing = None
        self._relist_after_start = False
        self._startup_deadline = None
        # M13: a failed start-up drops a verdict the host did not pin, in either
        # direction: the next attempt probes again.
        self.era = self._pinned
        self.failures += 1
        self.last_error = error
        delay = backoff_delay(
            self.failures, first=self.options.backoff_first, maximum=self.options.backoff_max
        )
        self._retry_at = now + delay
        _log.debug(
            "%s start-up attempt %d failed after %.1f ms: %s; retrying in %g s",
            self._tag,
            self.failures,
            (now - self._attempt_started) * 1000,
            error,
            delay,
        )
        self._transition(SessionInput.START_FAILED)
        self._events.append(
            StartFailed(error=error, failures=self.failures, retry_at=self._retry_at)
        )

    def _fail_pending(self, pending: _Pending, error: McpError, now: float) -> None:
        if pending.kind == "call":
            self._call_requests.pop(pending.call_id, None)
            self._events.append(CallFailed(call_id=pending.call_id, error=error))
        elif pending.kind == "listen":
            self._listen_lost(now)
        elif pending.kind == "discover":
            self._probe_failed(pending, error, now)
        elif pending.kind == "initialize":
            self._setup_failed(error, now)
        else:
            self._listing_failed(error, now)

    def _listing_failed(self, error: McpError, now: float) -> None:
        for waiting in self._after_relist:  # M42: no fresh listing, no second try
            self._call_requests.pop(waiting.call_id, None)
            self._events.append(CallFailed(call_id=waiting.call_id, error=error))
        self._after_relist.clear()
        listing, self._listing = self._listing, None
        if listing is not None and listing.refresh_id is not None:
            self._events.append(
                RefreshFailed(
                    refresh_id=None if listing.refresh_id < 0 else listing.refresh_id,
                    error=error,
                )
            )
            self._next_queued_refresh(now)
        else:
            self._fail_start(error, now)

    def _reinit_failed(self, error: McpError, now: float) -> None:
        """H6, L4: the new session could not be set up; try again after the backoff.

        The session stays re-initialising: requests keep waiting (parked), each
        within its own deadline, and none goes out without the new session.
        """
        self._reinit_failures += 1
        delay = backoff_delay(
            self._reinit_failures,
            first=self.options.backoff_first,
            maximum=self.options.backoff_max,
        )
        self._reinit_at = now + delay
        self.last_error = error
        self.era = self._pinned  # M13: the next try probes again
        _log.info(
            "server %r: a new session could not be set up (%s); retrying in %g s",
            self.options.server_name,
            error,
            delay,
        )

    def _handle_initialize_result(self, pending: _Pending, result: object, now: float) -> None:
        try:
            version, capabilities, info = _parse_initialize_result(result)
        except HandshakeError as exc:
            self._setup_failed(exc, now)
            return
        self.protocol_version = version
        if _log.isEnabledFor(_DEBUG):
            name, server_version = info.get("name"), info.get("version")
            _log.debug(
                "%s initialize id=%s answered in %.1f ms: protocol version %s, server %s%s%s",
                self._tag,
                pending.request.id,
                (now - pending.started) * 1000,
                version,
                f"'{excerpt(name, 60)}'" if isinstance(name, str) else "(unnamed)",
                f" version '{excerpt(server_version, 30)}'"
                if isinstance(server_version, str)
                else "",
                "; a new session replaces the expired one" if self._reinitializing else "",
            )
        self._outgoing.append(Notification(method="notifications/initialized"))
        if self._reinitializing:
            self.server_capabilities = capabilities
            self.server_info = info
            self._finish_resetup(now)
            return
        self.server_capabilities = capabilities
        self.server_info = info
        self._transition(SessionInput.INIT_SUCCEEDED)
        if "tools" in capabilities:
            self._listing = _Listing(refresh_id=None)
            self._request_page(None, now)
        else:
            # P3: no tools capability, nothing to list.
            self._finish_listing(_Listing(refresh_id=None), now)

    # --- internals: listing ---------------------------------------------------------

    def _queue_refresh(self, refresh_id: int, now: float) -> None:
        if self._listing is not None:
            if refresh_id not in self._queued_refreshes:
                self._queued_refreshes.append(refresh_id)
            return
        self._listing = _Listing(refresh_id=refresh_id)
        self._request_page(None, now)

    def _next_queued_refresh(self, now: float) -> None:
        if self._queued_refreshes and self.state is SessionState.READY:
            self._queue_refresh(self._queued_refreshes.pop(0), now)

    def _request_page(self, cursor: str | None, now: float) -> None:
        request_id = self._new_id()
        request = Request(
            id=request_id,
            method="tools/list",
            params=self._stamp(None if cursor is None else {"cursor": cursor}),
        )
        deadline = (
            None
            if self._listing is None or self._listing.refresh_id is None
            else (now + self.options.call_timeout)
        )
        pending = _Pending(kind="list", request=request, deadline=deadline, started=now)
        self._pending[request_id] = pending
        self._track_deadline(request_id, deadline)
        self._send_request(pending)

    def _handle_list_result(self, pending: _Pending, result: object, now: float) -> None:
        listing = self._listing
        if listing is None:
            return
        try:
            if self.modern and isinstance(result, dict):
                result_type(result, mrtr=False)  # M57
            tools, cursor = _parse_list_result(result)
            listing.pages += 1
            listing.tools.extend(tools)
            if len(listing.tools) > self.options.max_tools:
                raise LimitExceeded(
                    "max_tools", self.options.max_tools, "the number of tools the server listed"
                )
            if cursor is not None:
                if cursor in listing.cursors:
                    raise RemoteProtocolError(
                        "tools/list returned a cursor it had returned before (a cursor loop)"
                    )
                if listing.pages >= self.options.max_pages:
                    raise LimitExceeded(
                        "max_pages", self.options.max_pages, "the number of tools/list pages"
                    )
                listing.cursors.add(cursor)
        except McpError as exc:
            self._fail_pending(pending, exc, now)
            return
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s tools/list id=%s page %d answered in %.1f ms: %d tools%s",
                self._tag,
                pending.request.id,
                listing.pages,
                (now - pending.started) * 1000,
                len(tools),
                ", more to come" if cursor is not None else ", the last page",
            )
        if cursor is not None:
            self._request_page(cursor, now)
        else:
            self._finish_listing(listing, now)

    def _finish_listing(self, listing: _Listing, now: float) -> None:
        tools = self._keep_valid_headers(listing.tools) if self.modern else listing.tools
        try:
            catalogue = Catalogue.from_listing(
                self.options.server_name,
                tools,
                separator=self.options.separator,
                segment_pattern=self.options.segment_pattern,
                max_tools=self.options.max_tools,
                tool_filter=self.options.tool_filter,
            )
        except McpError as exc:
            self._listing = listing
            self._listing_failed(exc, now)
            return
        self._listing = None
        if listing.refresh_id is None:
            self._startup_deadline = None
            self.failures = 0
            self.last_error = None
            self.catalogue = catalogue
            self._transition(SessionInput.LISTING_DONE)
            assert self.protocol_version is not None
            _log.debug(
                "%s ready: %d tools, protocol version %s, start-up took %.1f ms",
                self._tag,
                len(catalogue),
                self.protocol_version,
                (now - self._attempt_started) * 1000,
            )
            self._events.append(
                SessionReady(
                    catalogue=catalogue,
                    protocol_version=self.protocol_version,
                    server_info=self.server_info,
                )
            )
            if self._relist_after_start:
                self._relist_after_start = False
                self._queue_refresh(-1, now)
            self._maybe_listen(now)
        else:
            previous = self.catalogue
            assert previous is not None
            self.catalogue = catalogue
            self._transition(SessionInput.LISTING_DONE)
            _log.debug("%s tools re-listed: %d tools", self._tag, len(catalogue))
            self._events.append(
                ToolsRefreshed(
                    refresh_id=None if listing.refresh_id < 0 else listing.refresh_id,
                    catalogue=catalogue,
                    report=previous.diff(catalogue),
                )
            )
            self._resend_after_relist(now)
            self._next_queued_refresh(now)

    def _keep_valid_headers(self, tools: list[object]) -> list[object]:
        """M32–M34, E5: drop each tool whose x-mcp-header declarations break the rules
        (with a warning naming it and why); remember the others' declarations."""
        kept: list[object] = []
        params: dict[str, tuple[HeaderParam, ...]] = {}
        for raw in tools:
            if not isinstance(raw, dict):
                kept.append(raw)  # the catalogue judges (and drops) it
                continue
            schema = raw.get("inputSchema")
            try:
                declared = tool_header_params(schema) if isinstance(schema, dict) else ()
            except InvalidHeaderDeclaration as exc:
                name = raw.get("name")
                _log.warning(
                    "server %r: dropped tool %s: its x-mcp-header declaration is invalid: %s",
                    self.options.server_name,
                    escape_text(name[:100]) if isinstance(name, str) else "(unnamed)",
                    exc,
                )
                continue
            name = raw.get("name")
            if isinstance(name, str) and declared:
                params[name] = declared
            kept.append(raw)
        self._header_params = params
        return kept

    def headers_for(self, message: Message) -> list[tuple[bytes, bytes]] | None:
        """The 2026-07-28 headers of one outgoing request (M24–M27, M37): computed
        from the very body being sent; ``None`` in the handshake era."""
        if not isinstance(message, Request) or self.protocol_version is None:
            return None
        if not (self.modern or message.method == "server/discover"):
            return None
        params = message.params if isinstance(message.params, Mapping) else {}
        name = params.get("name") if message.method == "tools/call" else None
        headers = standard_headers(
            message.method, name if isinstance(name, str) else None, self.protocol_version
        )
        if message.method == "tools/call" and isinstance(name, str):
            declared = self._header_params.get(name, ())
            arguments = params.get("arguments")
            headers += param_headers(
                declared, arguments if isinstance(arguments, Mapping) else None
            )
        return headers

    def _reissue(self, pending: _Pending, now: float) -> None:
        """E3: the same request again with a new id (listing, once)."""
        request_id = self._new_id()
        params = pending.request.params
        request = Request(id=request_id, method=pending.request.method, params=params)
        again = _Pending(
            kind=pending.kind,
            request=request,
            deadline=pending.deadline,
            started=now,
            reissued=True,
        )
        self._pending[request_id] = again
        self._track_deadline(request_id, again.deadline)
        self._outgoing.append(request)

    def _resend_call(self, pending: _Pending, now: float, extra: Mapping[str, Any]) -> None:
        """M49: the call again with a new id, a fresh envelope and progress token, ``extra``."""
        old = pending.request.params or {}
        request_id = self._new_id()
        params: dict[str, Any] = {"name": old.get("name"), "arguments": old.get("arguments", {})}
        params.update(extra)
        params["_meta"] = {"progressToken": request_id}
        request = Request(id=request_id, method="tools/call", params=self._stamp(params))
        again = _Pending(
            kind="call",
            request=request,
            deadline=pending.deadline,
            tool=pending.tool,
            budget=pending.budget,
            started=pending.started,
            call_id=pending.call_id,
            rounds=pending.rounds,
            mismatch_retried=pending.mismatch_retried,
        )
        self._pending[request_id] = again
        self._call_requests[pending.call_id] = request_id
        self._track_deadline(request_id, again.deadline)
        self._outgoing.append(request)

    def _answer_input_required(self, pending: _Pending, result: dict[str, Any], now: float) -> None:
        """M48–M54, E4: answer what the server asked for and send the call again."""
        call_id = pending.call_id
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
        answers = answer_input_requests(requests)
        extra: dict[str, Any] = {}
        if requests is not None:
            extra["inputResponses"] = answers
        if state is not None:
            extra["requestState"] = state  # M50: byte for byte; absent when absent
        pending.rounds += 1
        _log.debug(
            "%s tools/call id=%d needs input (round %d): sent again",
            self._tag,
            call_id,
            pending.rounds,
        )
        self._resend_call(pending, now, extra)

    def _waiting_call(self, call_id: int) -> _Pending | None:
        for waiting in self._after_relist:
            if waiting.call_id == call_id:
                return waiting
        return None

    def _resend_after_relist(self, now: float) -> None:
        waiting, self._after_relist = self._after_relist, []
        for pending in waiting:
            if pending.tool is not None and self.catalogue is not None:
                fresh = self.catalogue.get(pending.tool.id)
                if fresh is not None:
                    pending.tool = fresh
            self._resend_call(pending, now, {})

    def _maybe_listen(self, now: float) -> None:
        """M63: with auto_refresh, listen for tool-list changes on a modern server
        that says its list may change."""
        tools = self.server_capabilities.get("tools")
        if (
            self.modern
            and self.options.auto_refresh
            and isinstance(tools, Mapping)
            and tools.get("listChanged") is True
            and self._listen_id is None
        ):
            self._open_listen(now, relist=False)

    def _open_listen(self, now: float, *, relist: bool) -> None:
        request_id = self._new_id()
        request = Request(
            id=request_id,
            method="subscriptions/listen",
            params=self._stamp({"notifications": {"toolsListChanged": True}}),
        )
        self._listen_id = request_id
        self._pending[request_id] = _Pending(
            kind="listen", request=request, deadline=None, started=now
        )
        self._outgoing.append(request)
        if relist:
            self._queue_refresh(-1, now)  # M67: nothing is replayed; list again

    def _listen_lost(self, now: float, *, graceful: bool = False) -> None:
        """M67: a graceful end stops listening; a loss opens the stream again later."""
        self._listen_id = None
        if graceful or self.state is not SessionState.READY:
            return
        self._listen_failures += 1
        delay = backoff_delay(
            self._listen_failures,
            first=self.options.backoff_first,
            maximum=self.options.backoff_max,
        )
        self._listen_at = now + delay

    # --- internals: receiving --------------------------------------------------------

    def _answer_server_request(self, request: Request) -> None:
        if self.modern:
            # M29: a request on a 2026-07-28 response stream breaks that revision's
            # rules; it is not answered (there is nowhere to answer it).
            _log.debug(
                "%s ignored a server request %r", self._tag, escape_text(request.method[:100])
            )
            return
        # P3a, P4: ping is answered at any time; this client offers nothing else.
        if request.method == "ping":
            self._outgoing.append(Result(id=request.id, result={}))
        else:
            self._outgoing.append(
                ErrorResponse(
                    id=request.id,
                    code=_METHOD_NOT_FOUND,
                    message=f"Method not found: {request.method[:100]}",
                )
            )

    def _handle_notification(self, note: Notification, now: float) -> None:
        params = note.params or {}
        if note.method == "notifications/progress":
            token = params.get("progressToken")
            pending = (
                self._pending.get(token)
                if isinstance(token, int) and not isinstance(token, bool)
                else None
            )
            progress = params.get("progress")
            if pending is None or pending.kind != "call" or not _is_number(progress):
                return
            total = params.get("total")
            message = params.get("message")
            if _log.isEnabledFor(_DEBUG):
                _log.debug(
                    "%s progress for tools/call id=%d: %g of %s",
                    self._tag,
                    token,
                    progress,
                    f"{total:g}" if _is_number(total) else "an unknown total",
                )
            if self.options.extend_on_progress and pending.deadline is not None:
                # Push the deadline out, never past the cap, and never pull it in
                # (a per-call budget may exceed call_timeout_max).
                extended = min(
                    now + pending.budget, pending.started + self.options.call_timeout_max
                )
                if extended > pending.deadline:
                    pending.deadline = extended
                    self._track_deadline(pending.request.id, extended)  # type: ignore[arg-type]
            self._events.append(
                ProgressReceived(
                    call_id=pending.call_id,
                    progress=float(progress),  # type: ignore[arg-type]
                    total=float(total) if _is_number(total) else None,  # type: ignore[arg-type]
                    message=message if isinstance(message, str) else None,
                )
            )
        elif note.method == "notifications/tools/list_changed":
            self._events.append(ToolsListChanged())
            if not self.options.auto_refresh:
                return
            if self.state is SessionState.READY:
                self._queue_refresh(-1, now)
            elif self.state is SessionState.LISTING:
                # The listing under way may already be out of date: list again
                # once it is done rather than lose the change.
                self._relist_after_start = True
        elif note.method == "notifications/subscriptions/acknowledged":
            # M64, M67: the listen stream is up: the next loss starts the backoff
            # from its first step again.
            if self._listen_id is not None:
                self._listen_failures = 0
        elif note.method == "notifications/message":
            _forward_server_log(self.options.server_name, params)
        else:
            _log.debug("ignored notification %r", escape_text(note.method[:100]))

    def _handle_response(self, message: Result | ErrorResponse, now: float) -> None:
        request_id = message.id
        pending = self._pending.get(request_id) if isinstance(request_id, int) else None
        if pending is None:
            if request_id in self._abandoned:
                _log.debug("dropped a late response for abandoned request %r", request_id)
            else:
                _log.debug("ignored a response with unknown id %r", excerpt(repr(request_id), 40))
            return
        del self._pending[request_id]  # type: ignore[arg-type]
        if isinstance(message, ErrorResponse) and pending.kind == "discover":
            self._probe_refused(pending, message, now)
            return
        if (
            isinstance(message, ErrorResponse)
            and pending.kind == "call"
            and message.code == HEADER_MISMATCH
            and self.modern
            and not pending.mismatch_retried
        ):
            # M42, E5: re-list once, then send the call once more with fresh headers.
            pending.mismatch_retried = True
            self._after_relist.append(pending)
            self._queue_refresh(-1, now)
            return
        if pending.kind == "listen":
            self._listen_lost(now, graceful=not isinstance(message, ErrorResponse))
            return
        if isinstance(message, ErrorResponse):
            if _log.isEnabledFor(_DEBUG):
                _log.debug(
                    "%s %s id=%d answered in %.1f ms with JSON-RPC error %s",
                    self._tag,
                    pending.request.method,
                    request_id,
                    (now - pending.started) * 1000,
                    excerpt(repr(message.code), 20),
                )
            detail = f"{message.code}: {excerpt(message.message, 300)}"
            if pending.kind == "initialize":
                if self._pinned is None and message.code == UNSUPPORTED_PROTOCOL_VERSION:
                    self.era = None  # M13: the verdict stopped fitting; probe again
                error: McpError = HandshakeError(f"the server refused initialize ({detail})")
            elif pending.kind == "list":
                error = RemoteProtocolError(f"tools/list failed ({detail})")
            else:
                assert pending.tool is not None
                error = BackendError(f"JSON-RPC error {detail}", tool=pending.tool.id)
            self._fail_pending(pending, error, now)
            return
        if pending.kind == "initialize":
            self._handle_initialize_result(pending, message.result, now)
        elif pending.kind == "discover":
            self._handle_discover_result(pending, message.result, now)
        elif pending.kind == "list":
            self._handle_list_result(pending, message.result, now)
        else:
            self._handle_call_result(pending, message.result, now)

    def _handle_call_result(self, pending: _Pending, result: object, now: float) -> None:
        call_id = pending.call_id
        tool = pending.tool
        assert tool is not None
        if self.modern and isinstance(result, dict):
            try:
                if result_type(result, mrtr=True) == "input_required":
                    self._answer_input_required(pending, result, now)
                    return
            except McpError as exc:
                self._call_requests.pop(call_id, None)
                self._events.append(CallFailed(call_id=call_id, error=exc))
                return
        self._call_requests.pop(call_id, None)
        if _log.isEnabledFor(_DEBUG):
            content = result.get("content") if isinstance(result, dict) else None
            _log.debug(
                "%s tools/call id=%d (%r) answered in %.1f ms: %s",
                self._tag,
                call_id,
                tool.id,
                (now - pending.started) * 1000,
                "not a JSON object"
                if not isinstance(result, dict)
                else (
                    f"{len(content) if isinstance(content, list) else 0} content block(s)"
                    + (", structuredContent" if "structuredContent" in result else "")
                    + (", isError" if result.get("isError") is True else "")
                ),
            )
        if not isinstance(result, dict):
            self._events.append(
                CallFailed(
                    call_id=call_id,
                    error=RemoteProtocolError("the tools/call result is not a JSON object"),
                )
            )
            return
        try:
            output = render_result(result, tool=tool, policy=self.options.policy)
        except McpError as exc:
            self._events.append(CallFailed(call_id=call_id, error=exc))
            return
        if output.is_error:
            self._events.append(
                CallFailed(
                    call_id=call_id, error=BackendError(output.text, tool=tool.id, output=output)
                )
            )
        else:
            self._events.append(CallSucceeded(call_id=call_id, output=output))


# --- pure helpers -----------------------------------------------------------------


def _unencodable_path(arguments: Mapping[str, Any]) -> str:
    """K9: where in ``arguments`` the first value JSON cannot carry sits.

    Names keys and indexes only, never a value (an argument may hold a secret).
    """
    seen: set[int] = set()

    def find(value: object, path: str, depth: int) -> str | None:
        if value is None or isinstance(value, (str, bool, int)):
            return None
        if isinstance(value, float):
            return None if math.isfinite(value) else f"{path} (NaN or an infinity)"
        if depth > 200 or id(value) in seen:
            return path  # nested too deeply, or a cycle
        if isinstance(value, Mapping):
            seen.add(id(value))
            for key, item in value.items():
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    return f"{path} (a key of type {type(key).__name__})"
                found = find(item, f"{path}[{excerpt(repr(key), 60)}]", depth + 1)
                if found is not None:
                    return found
            seen.discard(id(value))
            return None
        if isinstance(value, (list, tuple)):
            seen.add(id(value))
            for index, item in enumerate(value):
                found = find(item, f"{path}[{index}]", depth + 1)
                if found is not None:
                    return found
            seen.discard(id(value))
            return None
        return f"{path} (a {type(value).__name__})"

    return find(arguments, "arguments", 0) or "arguments"


def positive_seconds(value: object, what: str = "a call timeout") -> float:
    """A caller's time limit as a float; ``InvalidValue`` naming ``what`` when it is
    not a positive number of seconds (zero, negative, NaN, a string, a bool)."""
    seconds = math.nan
    if not isinstance(value, (str, bytes, bool)):
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    if seconds > 0:
        return seconds
    shown = repr(value) if isinstance(value, (int, float)) else f"a {type(value).__name__}"
    raise InvalidValue(f"{what} must be a positive number of seconds, not {shown}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_initialize_result(result: object) -> tuple[str, dict[str, Any], dict[str, Any]]:
    if not isinstance(result, dict):
        raise HandshakeError("the initialize result is not a JSON object")
    version = result.get("protocolVersion")
    if not isinstance(version, str):
        raise HandshakeError("the initialize result has no protocolVersion string")
    if version not in SUPPORTED_PROTOCOL_VERSIONS:
        raise HandshakeError(
            f"the server chose protocol version {excerpt(version, 60)!r}, which this client "
            f"does not support (supported: {', '.join(SUPPORTED_PROTOCOL_VERSIONS)})"
        )
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        capabilities = {}
    info = result.get("serverInfo")
    if not isinstance(info, dict):
        info = {}
    return version, capabilities, info


def _parse_list_result(result: object) -> tuple[list[object], str | None]:
    if not isinstance(result, dict):
        raise RemoteProtocolError("the tools/list result is not a JSON object")
    tools = result.get("tools")
    if not isinstance(tools, list):
        raise RemoteProtocolError("the tools/list result has no 'tools' array")
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise RemoteProtocolError("tools/list returned a nextCursor that is not a string")
    return tools, (cursor or None)


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
