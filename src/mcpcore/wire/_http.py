"""The Streamable HTTP mapping: MCP messages ↔ HTTP exchanges described as data.

This layer sits under the session the way wsproto's handshake sits under its
connection. It owns H1–H9: request headers, the session id and protocol-version
header, JSON vs SSE replies, resumption with ``Last-Event-ID``, redirect
refusal, expiry detection, the optional GET stream and DELETE on close, and
the size bounds of P6 while a body streams in.

It never performs I/O. ``send`` turns a message into an ``HttpRequest``; the
driver reports what came back through ``response_started`` / ``response_data``
/ ``response_ended`` / ``response_failed``; what that means for the session
comes out of ``take_upward`` (messages, failed requests, expiry) and what the
driver must do out of ``take_actions``.

This module builds requests and owns the exchanges, sessions, timers and
closing; reading what comes back is ``_http_responses.ResponseReader``'s, a
part of the same mapping with no state of its own.

X4: at DEBUG, ``mcpcore.http`` traces every exchange — what each POST carries
(method and request id, body size), each GET and DELETE, the status and content
type of each response with the time it took, every message received (kind,
method, id, size), the session id the server gave (escaped, cut short),
failures, resumptions and expiry. Never a header value the client sends, a
URL's query, an argument value or a result body.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Union
from urllib.parse import urlsplit, urlunsplit

from ..base._errors import (
    InvalidValue,
    McpError,
)
from ..base._escape import excerpt
from ..base._events import AbortExchange, Action, HttpRequest
from ..base._failure import TransportFailure
from ._header_checks import check_dynamic_headers
from ._http_exchange import (
    _DEBUG,
    HttpLimits,
    MessageArrived,
    RequestFailed,
    SessionExpired,
    Upward,
    _Exchange,
    _exchange_what,
    _Kind,
    _log,
    _may_have_run,
    _shown_session,
    _Stream,
    _Timer,
)
from ._jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Result,
    describe_message,
    encode_message,
)
from ._requests import KINDS

__all__ = ["HttpLimits", "HttpMapping", "MessageArrived", "RequestFailed", "SessionExpired"]


_ACCEPT_BOTH = b"application/json, text/event-stream"


# --- what goes up to the session ------------------------------------------------------


#: V3: ``headers=`` as a callable: (the JSON-RPC method the request carries, or
#: None for the GET stream, DELETE and an answer; the server's name) -> headers.
HeaderSource = Callable[[Union[str, None], str], Mapping[str, str]]

# V3: distinct values a headers callable gave that are still cut out of server text
# (the newest kept; a value that rotates per request leaves the oldest behind).
_DYNAMIC_VALUES_KEPT = 64


# What the deadline heap holds: (when, tie-breaker, what). ``what`` is an exchange
# id (its bound: a lingering stream, or a notice POST) or a _Timer. An entry is
# stale once that exchange's bound changed or ended, or the timer was cancelled.
_HeapEntry = tuple[float, int, "int | _Timer"]


class _DynamicHeaders:
    """V3: a ``headers=`` callable for one server. Runs it (in the caller's context
    when given one), checks what it gives as configured headers are checked (C5),
    and adds its values to those cut out of server text (the newest kept)."""

    __slots__ = ("_kept", "_redacted", "_server", "_source")

    def __init__(self, source: HeaderSource, server: str, redacted: list[str]) -> None:
        self._source = source
        self._server = server
        self._redacted = redacted  # the mapping's own list: its redaction reads it
        self._kept: list[str] = []

    def headers(
        self,
        method: str | None,
        context: contextvars.Context | None,
        configured: list[tuple[bytes, bytes]],
    ) -> list[tuple[bytes, bytes]]:
        """``configured`` with what the callable gives for this request (its names
        replace configured ones); ``InvalidValue`` naming no value when it raises
        or gives something C5 refuses."""
        try:
            if context is None:
                given = self._source(method, self._server)
            else:  # the caller's context, wherever this request is built
                given = context.run(self._source, method, self._server)
        except Exception as exc:  # the host's callable: its text may hold a secret
            raise InvalidValue(f"the headers callable raised {type(exc).__name__}") from None
        checked = check_dynamic_headers(self._server, given)
        if not checked:
            return configured
        values = self._redacted
        for value in checked.values():
            if len(value) >= 4 and value not in values:
                values.append(value)
                values.sort(key=len, reverse=True)
                self._kept.append(value)
                if len(self._kept) > _DYNAMIC_VALUES_KEPT:
                    values.remove(self._kept.pop(0))
        names = {name.lower().encode("latin-1") for name in checked}
        return [
            *(pair for pair in configured if pair[0].lower() not in names),
            *((name.encode("latin-1"), value.encode("utf-8")) for name, value in checked.items()),
        ]


class HttpMapping:
    """Streamable HTTP client mapping for one server URL. See the module docstring."""

    def __init__(
        self,
        url: str,
        headers: Sequence[tuple[str, str]] = (),
        *,
        display_url: str | None = None,
        limits: HttpLimits | None = None,
        listen: bool = True,
        name: str | None = None,
        dynamic_headers: HeaderSource | None = None,
    ) -> None:
        self.url = url
        self.display_url = display_url or _strip_query(url)
        # X4: how debug records name this server: its name, else the URL without query.
        self._tag = f"[{excerpt(name if name is not None else self.display_url, 80)}]"
        self.limits = limits or HttpLimits()
        self.listen = listen
        self._extra_headers = [(k.encode("latin-1"), v.encode("utf-8")) for k, v in headers]
        self._header_values = sorted({v for _, v in headers if len(v) >= 4}, key=len, reverse=True)
        # X3, A4: server text worded into errors, with secrets it may echo cut out
        # (configured header values here; the OAuth layer adds the tokens it holds).
        self.redact: Callable[[str], str] = self._redact_header_values
        # V3: the host's headers=(method, server) callable, called for each request sent.
        self._dynamic = (
            None
            if dynamic_headers is None
            else _DynamicHeaders(dynamic_headers, name or self.display_url, self._header_values)
        )
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._next_xid = 1
        self._exchanges: dict[int, _Exchange] = {}
        self._by_request: dict[int, int] = {}  # request id -> exchange id
        # Streams waiting to be reopened: request id (None: the GET stream) -> timer.
        self._timers: dict[int | None, _Timer] = {}
        # Exchanges with a bound of their own: a stream lingering after its
        # response, or a notice/answer POST (H10). Exchange id -> when to drop it.
        self._bounded: dict[int, float] = {}
        self._heap: list[_HeapEntry] = []
        self._tie = itertools.count()
        self._resent: set[int] = set()  # requests resent once after a 404 (H6)
        # P6: answers to server requests on their way, and those waiting their turn.
        self._answers_open: set[int] = set()
        self._answers_waiting: deque[Message] = deque()
        self._answers_dropped = 0
        # H6: a session had been given and expired; until the new one is set up,
        # notices and answers (which belong to the old one) are not sent.
        self._awaiting_session = False
        # The latest ``now`` any input brought: bounds of messages sent later from
        # inside the mapping (released from a queue) start from it.
        self._last_now = 0.0
        self._actions: list[Action] = []
        self._upward: list[Upward] = []
        self._listening = False
        # P3: requests wait until `notifications/initialized` was accepted, so a
        # server never sees tools/list before it (each POST may use its own connection).
        self._gate: int | None = None
        # H8: the session whose GET stream was refused or gave up; not retried.
        self._listen_refused_for: str | None = None
        self._held: list[Message] = []
        # V3: the caller's context of each held request, for its headers callable
        self._held_contexts: dict[object, contextvars.Context] = {}
        # Requests abandoned while held: their cancel notice, which follows, is dropped.
        self._never_sent: set[int] = set()
        # L6: when closing must be over (set by begin_close); None while open.
        self._closing_at: float | None = None
        self._delete_waits = False  # closing: the DELETE goes once the notices are answered
        self._delete_by: float | None = None  # ... or at this time, whichever comes first
        # E1: the endpoint speaks 2026-07-28: no session, no GET stream, no
        # resumption; each request's own headers come with it (M23–M27, M69–M72).
        self.modern = False
        # Imported here: a client loads the reader with its first mapping (B5).
        from ._http_responses import ResponseReader

        self._reader = ResponseReader(self)

    # --- outputs -------------------------------------------------------------------

    def take_actions(self) -> list[Action]:
        out, self._actions = self._actions, []
        return out

    def take_upward(self) -> list[Upward]:
        out, self._upward = self._upward, []
        return out

    def next_deadline(self) -> float | None:
        if self._closing_at is not None:
            if self._delete_waits and self._delete_by is not None:
                return self._delete_by
            return self._closing_at if self._exchanges else None
        heap = self._heap
        while heap:
            at, _, what = heap[0]
            if self._is_live(at, what):
                return at
            heapq.heappop(heap)
        return None

    @property
    def finished(self) -> bool:
        """Closing began and nothing is left to perform: every exchange ended or was aborted."""
        return self._closing_at is not None and not self._exchanges

    def _is_live(self, at: float, what: int | _Timer) -> bool:
        if isinstance(what, int):
            return self._bounded.get(what) == at
        return self._timers.get(what.stream.request_id) is what

    def _push(self, at: float, what: int | _Timer) -> None:
        heap = self._heap
        heapq.heappush(heap, (at, next(self._tie), what))
        live = len(self._bounded) + len(self._timers)
        if len(heap) > 64 and len(heap) > 2 * live:
            self._heap = [e for e in heap if self._is_live(e[0], e[2])]
            heapq.heapify(self._heap)

    def _bound_exchange(self, xid: int, at: float) -> None:
        self._bounded[xid] = at
        self._push(at, xid)

    def _schedule(self, timer: _Timer) -> None:
        self._timers[timer.stream.request_id] = timer
        self._push(timer.at, timer)

    @property
    def active_exchanges(self) -> list[int]:
        return list(self._exchanges)

    # --- commands ------------------------------------------------------------------

    def send(
        self,
        message: Message,
        now: float,
        body: bytes | None = None,
        headers: Sequence[tuple[bytes, bytes]] | None = None,
        context: contextvars.Context | None = None,
    ) -> None:
        """H1: one message per POST. ``body``: the message already encoded, if it was.

        ``headers``: the 2026-07-28 headers of this very body (M24–M27); with them
        no session id or version header of the handshake era is added.
        ``context``: the caller's context the ``headers=`` callable runs in (V3).
        """
        self._last_now = now
        if self._gate is not None:
            self._held.append(message)
            if context is not None and isinstance(message, Request):
                self._held_contexts[message.id] = context
            return
        is_request = isinstance(message, Request)
        if self._never_sent and _cancels(message, self._never_sent):
            return
        if not is_request and self._awaiting_session:
            # H6: a notice or answer for the session that expired means nothing
            # to the next one (and would be refused for its missing session id).
            _log.debug("dropped a %s for the expired session", _what(message))
            return
        # P6: a flood of server requests must not become a flood of POSTs.
        if (
            isinstance(message, (Result, ErrorResponse))
            and len(self._answers_open) >= self.limits.max_answers_in_flight
        ):
            if len(self._answers_waiting) < self.limits.max_queued_answers:
                self._answers_waiting.append(message)
            else:
                self._drop_answer()
            return
        configured = self._extra_headers
        if self._dynamic is not None:
            method = message.method if isinstance(message, (Request, Notification)) else None
            try:
                configured = self._dynamic.headers(method, context, self._extra_headers)
            except InvalidValue as exc:
                self._dynamic_failed(message, exc)
                return
        stream = None
        if is_request and isinstance(message.id, int):  # type: ignore[union-attr]
            stream = _Stream(
                request_id=message.id,  # type: ignore[union-attr]
                session_id=self.session_id,
                large=_large_result(message),
            )
        if body is None:
            body = encode_message(message)
        xid = self._open(_Kind.POST, message, stream)
        if is_request and self._closing_at is not None:
            self._exchanges[xid].owed = True  # sent while closing: the close delivers it
        if headers is None:
            request_headers = self._headers(_ACCEPT_BOTH, configured)
        else:
            request_headers = [(b"accept", _ACCEPT_BOTH), *configured, *headers]
        request_headers.append((b"content-type", b"application/json"))
        self._actions.append(
            HttpRequest(
                exchange_id=xid,
                method="POST",
                url=self.url,
                headers=request_headers,
                body=body,
                request_id=None if stream is None else stream.request_id,
                replayable=is_request and _changes_nothing(message),
            )
        )
        if not is_request:
            self._bound_exchange(xid, now + self.limits.notice_timeout)  # H10
            if isinstance(message, (Result, ErrorResponse)):
                self._answers_open.add(xid)
        if isinstance(message, Notification) and message.method == "notifications/initialized":
            self._gate = xid
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s POST %s (exchange %d, %d bytes)",
                self._tag,
                describe_message(message),
                xid,
                len(body),
            )

    def fail_exchange(self, exchange_id: int, error: McpError, now: float) -> None:
        """The exchange's request fails with ``error`` without an answer (OAuth gave
        up on it, A1); as if the exchange had broken."""
        self._last_now = now
        ex = self._exchanges.get(exchange_id)
        if ex is not None:
            self._fail(ex, error, now)

    def _drop_answer(self) -> None:
        self._answers_dropped += 1
        if self._answers_dropped == 1:
            _log.warning(
                "%s: the server sent more requests than max_queued_answers (%d) allows "
                "to wait for an answer; the excess is not answered",
                self.display_url,
                self.limits.max_queued_answers,
            )

    def abandon(self, request_id: int) -> None:
        """Stop waiting for ``request_id``: close its stream (K6).

        A request still held back (behind ``notifications/initialized``) is never
        sent, and neither is the cancel notice that follows it.
        """
        self._timers.pop(request_id, None)
        self._resent.discard(request_id)
        for index, message in enumerate(self._held):
            if isinstance(message, Request) and message.id == request_id:
                del self._held[index]
                self._held_contexts.pop(request_id, None)
                self._never_sent.add(request_id)
                break
        xid = self._by_request.pop(request_id, None)
        if xid is not None and xid in self._exchanges:
            _log.debug(
                "%s stopped waiting on exchange %d for request id=%d", self._tag, xid, request_id
            )
            self._abort(xid)

    def start_listening(self) -> None:
        """H8: open the GET stream for server-initiated messages (never on 2026-07-28)."""
        if (
            self.listen
            and not self.modern
            and not self._listening
            and self.session_id is not None
            and self._listen_refused_for != self.session_id
        ):
            self._listening = True
            self._open_get(_Stream(request_id=None, session_id=self.session_id), _Kind.LISTEN)

    def drop_exchanges(self, *, keep_notices: bool = False, keep: Collection[int] = ()) -> None:
        """Abort every exchange and forget every pending resume.

        With ``keep_notices``, notifications and responses already on their way
        (a ``notifications/cancelled``, say) are left to finish (L6), and so are
        the POSTs of the requests ``keep`` names (T9: a give-up's ``tasks/cancel``).
        """
        for xid, ex in list(self._exchanges.items()):
            if keep_notices and ex.kind is _Kind.POST:
                if not isinstance(ex.message, Request):
                    continue
                if ex.message.id in keep:
                    ex.owed = True
                    continue
            self._abort(xid)
        self._timers.clear()
        self._by_request.clear()
        self._listening = False
        self._gate = None
        self._held.clear()
        self._held_contexts.clear()
        self._never_sent.clear()
        self._answers_waiting.clear()

    def reset(self) -> None:
        """Forget the HTTP session and drop every exchange (a new start-up attempt)."""
        self.drop_exchanges()
        self._resent.clear()
        self.session_id = None
        self.protocol_version = None
        self._awaiting_session = False

    def forget_session(self, now: float) -> None:
        """L8 (``reconnect``): drop every exchange and end the session with DELETE
        (best effort); until a new session is set up, notices and answers are not
        sent (as after H6). The session fails the requests that were running."""
        self._last_now = now
        self.drop_exchanges()
        self._resent.clear()
        self._awaiting_session = self.session_id is not None
        self.end_session(now)
        self.session_id = None
        self.protocol_version = None

    def begin_close(self, now: float, owed: Collection[int] = ()) -> None:
        """L6: closing starts, bounded by ``limits.close_timeout`` from ``now``.

        Every exchange but notices already on their way, and the requests the
        session still owes the server (``owed``: their ids, T9), is aborted; what
        is sent from now on (the cancel notices and owed requests, then
        ``end_session``'s DELETE) goes out at once, together, and its replies are
        read for nothing but their end. Whatever is still running at the close
        deadline is aborted by ``handle_timer``; ``finished`` says when nothing
        is left.
        """
        if self._closing_at is not None:
            return
        self._last_now = now
        # Requests still held back (behind notifications/initialized) never reach
        # the server: the cancel notices that follow them must not either.
        held = [m.id for m in self._held if isinstance(m, Request) and isinstance(m.id, int)]
        self.drop_exchanges(keep_notices=True, keep=owed)
        self._never_sent.update(held)
        self._closing_at = now + self.limits.close_timeout
        for xid in self._exchanges:
            self._bounded.pop(xid, None)  # the close deadline bounds them now
        self._heap.clear()

    def end_session(self, now: float | None = None) -> None:
        """H9: DELETE the session when there is one (best effort, within the close bound)."""
        if now is not None:
            self._last_now = now
        if self.session_id is None:
            return
        if (
            self._closing_at is not None
            and self._notices_open()
            and (self._delete_by is None or self._last_now < self._delete_by)
        ):
            # K6: a cancel notice on its way reaches the server before the session
            # ends there: the DELETE follows the last notice's reply (_finish), or
            # goes anyway halfway to the close deadline (a stalled server still
            # hears that the session is over).
            if self._delete_by is None:
                self._delete_by = self._last_now + self.limits.close_timeout / 2
            self._delete_waits = True
            return
        self._delete_waits = False
        try:
            headers = self._headers(None)
        except InvalidValue as exc:  # V3: the headers callable failed: no DELETE
            _log.warning("%s the session's DELETE not sent: %s", self._tag, exc)
            self.session_id = None
            return
        xid = self._open(_Kind.DELETE, None, None)
        _log.debug(
            "%s DELETE session %s (exchange %d)", self._tag, _shown_session(self.session_id), xid
        )
        self._actions.append(
            HttpRequest(
                exchange_id=xid,
                method="DELETE",
                url=self.url,
                headers=headers,
                timeout=self.limits.close_timeout,
                replayable=True,  # a second DELETE of a session ends nothing more
            )
        )
        self.session_id = None

    def _notices_open(self) -> bool:
        """Closing: a notice or an owed request is still on its way (the DELETE waits)."""
        return any(
            ex.kind is _Kind.POST and (ex.stream is None or ex.owed)
            for ex in self._exchanges.values()
        )

    def handle_timer(self, now: float) -> None:
        self._last_now = now
        if self._closing_at is not None:
            if self._delete_waits and self._delete_by is not None and now >= self._delete_by:
                self.end_session()
            if now >= self._closing_at:
                for xid in list(self._exchanges):
                    self._abort(xid)  # L6: the close bound is over
            return
        while (at := self.next_deadline()) is not None and at <= now:
            _, _, what = heapq.heappop(self._heap)
            if isinstance(what, int):
                ex = self._exchanges.get(what)
                if ex is not None and ex.kind is _Kind.POST and ex.stream is None:
                    # H10: a notice or answer that was never acknowledged.
                    _log.debug(
                        "dropped a %s POST unanswered after %g s",
                        _what(ex.message),
                        self.limits.notice_timeout,
                    )
                self._abort(what)
            else:
                del self._timers[what.stream.request_id]
                self._reopen(what)

    def _reopen(self, timer: _Timer) -> None:
        """H4: reopen a stream with GET, on the session it belongs to (H6)."""
        stream = timer.stream
        if stream.session_id == self.session_id:
            self._open_get(stream, timer.kind)
        elif timer.kind is _Kind.RESUME:
            # The session ended while the request ran: never resumed on another
            # session (or on none), and never sent again.
            assert stream.request_id is not None
            self._upward.append(RequestFailed(stream.request_id, _may_have_run(), sent=True))
        else:
            self._listening = False  # start_listening() opens one on the new session

    # --- inputs from the driver --------------------------------------------------------
    # Reading a response is the ResponseReader's (_http_responses.py); these hand on.

    def response_started(
        self, exchange_id: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        """The status line and headers arrived. ``headers`` are ``(bytes, bytes)`` pairs,
        as HTTP libraries give them (``TypeError`` otherwise)."""
        self._reader.response_started(exchange_id, status, headers, now)

    def request_sent(self, exchange_id: int, now: float) -> None:
        """U3: the exchange's request was written whole (see ``HttpClientEngine.request_sent``)."""
        self._last_now = now
        ex = self._exchanges.get(exchange_id)
        if ex is not None:
            ex.sent = True

    def response_data(self, exchange_id: int, data: bytes, now: float) -> None:
        """A piece of the body arrived."""
        self._reader.response_data(exchange_id, data, now)

    def response_ended(self, exchange_id: int, now: float) -> None:
        """The body ended."""
        self._reader.response_ended(exchange_id, now)

    def response_failed(self, exchange_id: int, failure: TransportFailure, now: float) -> None:
        """The exchange could not be performed or broke: the core words why (X5)."""
        self._reader.response_failed(exchange_id, failure, now)

    # --- internals -----------------------------------------------------------------------

    def _dynamic_failed(self, message: Message, error: InvalidValue) -> None:
        """V3: the headers callable failed for ``message``: a request fails alone; a
        notice or an answer, which nothing waits for, is not sent."""
        if isinstance(message, Request) and isinstance(message.id, int):
            _log.debug("%s %s not sent: %s", self._tag, describe_message(message), error)
            self._upward.append(RequestFailed(message.id, error))
            return
        _log.warning("%s %s not sent: %s", self._tag, describe_message(message), error)

    def _headers(
        self, accept: bytes | None, configured: list[tuple[bytes, bytes]] | None = None
    ) -> list[tuple[bytes, bytes]]:
        headers: list[tuple[bytes, bytes]] = []
        if accept is not None:
            headers.append((b"accept", accept))
        if configured is None:
            configured = self._extra_headers
            if self._dynamic is not None:  # raises InvalidValue
                configured = self._dynamic.headers(None, None, configured)
        headers.extend(configured)
        if self.session_id is not None:
            headers.append((b"mcp-session-id", self.session_id.encode("latin-1")))
        if self.protocol_version is not None:
            headers.append((b"mcp-protocol-version", self.protocol_version.encode("ascii")))
        return headers

    def _open(self, kind: _Kind, message: Message | None, stream: _Stream | None) -> int:
        xid = self._next_xid
        self._next_xid += 1
        self._exchanges[xid] = _Exchange(
            id=xid,
            kind=kind,
            message=message,
            stream=stream,
            sent_session_id=self.session_id,
            opened_at=self._last_now,
        )
        if stream is not None and stream.request_id is not None:
            self._by_request[stream.request_id] = xid
        return xid

    def _open_get(self, stream: _Stream, kind: _Kind) -> None:
        try:
            headers = self._headers(b"text/event-stream")
        except InvalidValue as exc:  # V3: the headers callable failed for this GET
            if stream.request_id is not None:
                self._upward.append(RequestFailed(stream.request_id, exc))
                return
            _log.warning("%s the server's message stream not opened: %s", self._tag, exc)
            self._listening = False
            self._listen_refused_for = stream.session_id
            return
        xid = self._open(kind, None, stream)
        if stream.last_event_id:  # an empty id means none (WHATWG sends no header)
            headers.append((b"last-event-id", stream.last_event_id.encode("utf-8")))
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s GET %s (exchange %d)%s",
                self._tag,
                "the server's message stream"
                if stream.request_id is None
                else f"to resume the stream of request id={stream.request_id}",
                xid,
                f", after event '{excerpt(stream.last_event_id, 40)}'"
                if stream.last_event_id
                else "",
            )
        self._actions.append(
            HttpRequest(
                exchange_id=xid, method="GET", url=self.url, headers=headers, replayable=True
            )
        )

    def _finish(self, ex: _Exchange) -> None:
        self._exchanges.pop(ex.id, None)
        self._bounded.pop(ex.id, None)
        if ex.id in self._answers_open:
            self._answers_open.discard(ex.id)
            if self._answers_waiting and ex.id not in self._exchanges:
                self.send(self._answers_waiting.popleft(), self._last_now)
        if ex.id == self._gate:
            self._gate = None
            held, self._held = self._held, []
            contexts, self._held_contexts = self._held_contexts, {}
            for message in held:
                context = contexts.get(message.id) if isinstance(message, Request) else None
                self.send(message, self._last_now, context=context)
        request_id = ex.stream.request_id if ex.stream is not None else None
        if request_id is not None and self._by_request.get(request_id) == ex.id:
            del self._by_request[request_id]
        if ex.kind is _Kind.LISTEN:
            self._listening = False
        if (
            self._delete_waits
            and self._closing_at is not None
            and self._last_now < self._closing_at
            and not self._notices_open()
        ):
            self.end_session()

    def _abort(self, xid: int) -> None:
        ex = self._exchanges.get(xid)
        if ex is None:
            return
        # The abort goes first: finishing may release what waited for this exchange.
        self._actions.append(AbortExchange(exchange_id=xid))
        self._finish(ex)

    def _fail(self, ex: _Exchange, error: McpError, now: float) -> None:
        """The exchange failed: its request (if any) fails with ``error`` (P5)."""
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s exchange %d (%s) failed: %s", self._tag, ex.id, _exchange_what(ex), error
            )
        if ex.id in self._exchanges:
            self._actions.append(AbortExchange(exchange_id=ex.id))
        self._finish(ex)
        request_id = ex.stream.request_id if ex.stream is not None else None
        if request_id is not None and not ex.stream.got_response:  # type: ignore[union-attr]
            self._resent.discard(request_id)
            self._upward.append(RequestFailed(request_id, error))
        elif ex.kind is _Kind.LISTEN:
            self._listen_refused_for = ex.sent_session_id
            _log.debug("GET stream failed: %s", error)

    def _redact_header_values(self, text: str) -> str:
        for value in self._header_values:
            text = text.replace(value, "[redacted]")
        return text


def _large_result(message: Message) -> bool:
    """B11: the request is of a kind declared ``large_result`` (its feature module,
    loaded when the host first asked for it, registered it)."""
    kind = KINDS.get(message.method)  # type: ignore[union-attr]
    return kind is not None and kind.large_result


def _changes_nothing(message: Message) -> bool:
    """The request is of a kind that changes nothing on the server (E3's ``resend``):
    its POST may go out again on a new connection (``HttpRequest.replayable``)."""
    kind = KINDS.get(message.method)  # type: ignore[union-attr]
    return kind is not None and kind.resend


def _cancels(message: Message, never_sent: set[int]) -> bool:
    """Whether ``message`` cancels a request that never went out (and forget it)."""
    if not (isinstance(message, Notification) and message.method == "notifications/cancelled"):
        return False
    request_id = (message.params or {}).get("requestId")
    if isinstance(request_id, int) and request_id in never_sent:
        never_sent.discard(request_id)
        return True
    return False


def _what(message: Message | None) -> str:
    if isinstance(message, Notification):
        return excerpt(message.method, 60)
    return "answer" if isinstance(message, (Result, ErrorResponse)) else "message"


def _strip_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


# --- P6: which bound an exchange's message is held to (module level: the class is
# the exchanges' bookkeeping; these only read the limits) ---------------------------
