"""Reading the server's side of a Streamable HTTP exchange, for ``HttpMapping``.

The mapping (``_http.py``) builds requests and owns the exchanges, sessions,
timers and closing; this part reads what comes back: the status and headers
(redirects refused H5, a 404 on a session H6 (and a 400 with a JSON-RPC error,
H6a), the GET stream's refusal H8, the
content type H3), the body as JSON or SSE within the P6 bounds, error bodies
(H7, M9), each SSE event with its id and ``retry`` (H4), each message handed
up (with the session id an ``initialize`` result brings, H2), and a stream that
ended or broke: resumed with ``Last-Event-ID`` when it still owes a response,
else its request fails (H4, M72).

It has no state of its own: everything it reads and changes is the mapping's
(``self.m``), so the mapping stays one state machine in two files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base._errors import LimitExceeded, McpError, RemoteProtocolError, TransportError
from ..base._escape import excerpt
from ..base._events import AbortExchange
from ..base._failure import TransportFailure, legacy_sse_reason, status_reason
from ._http_exchange import (
    _DEBUG,
    _ERROR_EXCERPT_BYTES,
    _ERROR_JSON_BYTES,
    MessageArrived,
    RequestFailed,
    SessionExpired,
    _Exchange,
    _exchange_what,
    _header,
    _header_pairs,
    _json_rpc_error,
    _Kind,
    _log,
    _may_have_run,
    _Mode,
    _shown_session,
    _Timer,
    message_limit,
    sse_limit,
    sse_line_limit,
)
from ._jsonrpc import ErrorResponse, Message, Request, Result, decode_message, describe_message
from ._sse import SSEDecoder, SSEEvent, SSEOverrun

if TYPE_CHECKING:
    from ._http_exchange import MappingState

__all__ = ["ResponseReader"]


class ResponseReader:
    """The response half of one ``HttpMapping``."""

    __slots__ = ("m",)

    def __init__(self, mapping: MappingState) -> None:
        self.m = mapping

    def response_started(
        self, exchange_id: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        """The status line and headers arrived. ``headers`` are ``(bytes, bytes)`` pairs,
        as HTTP libraries give them (``TypeError`` otherwise)."""
        headers = _header_pairs(headers)
        self.m._last_now = now
        ex = self.m._exchanges.get(exchange_id)
        if ex is None:
            return
        ex.status = status
        if _log.isEnabledFor(_DEBUG):
            self._log_response(ex, status, headers, now)
        if ex.kind is _Kind.DELETE or self.m._closing_at is not None:
            ex.mode = _Mode.IGNORE  # closing: only the end of a reply matters
            return
        if 300 <= status < 400:
            # H5: never follow; the configured headers must not reach another server.
            self.m._fail(
                ex,
                TransportError(
                    f"{self.m.display_url} answered HTTP {status} (a redirect); "
                    "redirects are not followed"
                ),
                now,
            )
            return
        if status == 404 and ex.sent_session_id is not None:
            self._expired(ex, now)
            return
        if ex.kind is _Kind.LISTEN and status >= 300:
            # H8: 405 means no GET stream; 409 means one is open already. Neither is fatal.
            _log.debug("%s GET stream not available (HTTP %d)", self.m._tag, status)
            self.m._listen_refused_for = ex.sent_session_id
            self.m._finish(ex)
            return
        if status >= 400 or status < 200:
            ex.mode = _Mode.ERROR
            media = _header(headers, b"content-type").split(";", 1)[0].strip().lower()
            ex.json_error = media == "application/json"
            return
        if ex.kind is _Kind.POST and not isinstance(ex.message, Request):
            ex.mode = _Mode.IGNORE  # H3: any 2xx accepts a notification or response
            return
        content_type = _header(headers, b"content-type")
        media = content_type.split(";", 1)[0].strip().lower()
        if media == "text/event-stream":
            ex.mode = _Mode.SSE
            ex.decoder = SSEDecoder(
                max_line_size=sse_line_limit(self.m.limits, ex),
                max_event_size=message_limit(self.m.limits, ex)[1],
            )
        elif media == "application/json" and ex.kind is _Kind.POST:
            ex.mode = _Mode.JSON
        elif status == 202 and ex.kind is _Kind.POST:
            self.m._fail(
                ex,
                RemoteProtocolError(
                    "the server accepted a request (HTTP 202) without answering it"
                ),
                now,
            )
            return
        else:
            shown = excerpt(content_type, 80) if content_type else "none"
            error = TransportError(
                f"{self.m.display_url} answered HTTP {status} with an unexpected "
                f"content type ({shown})"
            )
            error.status = status  # an answer, not an outage (M8)
            self.m._fail(ex, error, now)
            return
        if (
            ex.kind is _Kind.POST
            and isinstance(ex.message, Request)
            and ex.message.method == "initialize"
        ):
            # H2: remembered now, adopted only if the reply is a result (not an error).
            ex.candidate_session_id = _header(headers, b"mcp-session-id") or None

    def _log_response(
        self, ex: _Exchange, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        content_type = _header(headers, b"content-type")
        _log.debug(
            "%s HTTP %d %s for exchange %d (%s) after %.1f ms",
            self.m._tag,
            status,
            excerpt(content_type, 80) if content_type else "(no content type)",
            ex.id,
            _exchange_what(ex),
            (now - ex.opened_at) * 1000,
        )

    def response_data(self, exchange_id: int, data: bytes, now: float) -> None:
        self.m._last_now = now
        ex = self.m._exchanges.get(exchange_id)
        if ex is None or not data:
            return
        if ex.mode is _Mode.SSE:
            assert ex.decoder is not None
            try:
                events = ex.decoder.feed(data)
            except LimitExceeded as exc:
                # The events these bytes completed before the overrun come
                # first, as they would have had the bytes come one at a time.
                for event in exc.completed if isinstance(exc, SSEOverrun) else ():
                    if not self._on_event(ex, event, now):
                        return
                self.m._fail(ex, sse_limit(self.m.limits, ex, exc), now)
                return
            except McpError as exc:
                self.m._fail(ex, exc, now)
                return
            for event in events:
                if not self._on_event(ex, event, now):
                    return
        elif ex.mode is _Mode.JSON:
            name, bound = message_limit(self.m.limits, ex)
            if len(ex.body) + len(data) > bound:
                self.m._fail(ex, LimitExceeded(name, bound, "a JSON response body"), now)
                return
            ex.body += data
        elif ex.mode is _Mode.ERROR:
            limit = _ERROR_JSON_BYTES if ex.json_error else _ERROR_EXCERPT_BYTES
            room = limit - len(ex.body)
            ex.body += data[:room]
            if len(ex.body) >= limit:
                ex.json_error = False  # too long to be a JSON-RPC error: an excerpt
                self._http_error(ex, now)

    def response_ended(self, exchange_id: int, now: float) -> None:
        self.m._last_now = now
        ex = self.m._exchanges.get(exchange_id)
        if ex is None:
            return
        if self.m._closing_at is not None:
            self.m._finish(ex)
            return
        if ex.mode is _Mode.JSON:
            # Decoded from the buffer itself, which is released before parsing:
            # copying it to bytes first held a large body three times over.
            body, ex.body = ex.body, bytearray()
            size = len(body)
            try:
                message = decode_message(body, release=True)
            except McpError as exc:
                self.m._fail(ex, exc, now)
                return
            self._deliver(ex, message, now, size)
            if not self._response_seen(ex):
                self.m._fail(
                    ex,
                    RemoteProtocolError("the JSON reply did not carry the response"),
                    now,
                )
                return
            self.m._finish(ex)
        elif ex.mode is _Mode.SSE:
            assert ex.decoder is not None
            try:
                for event in ex.decoder.end():
                    if not self._on_event(ex, event, now):
                        return
            except McpError as exc:
                self.m._fail(ex, exc, now)
                return
            self._stream_broke(ex, "the event stream ended", now)
        elif ex.mode is _Mode.ERROR:
            self._http_error(ex, now)
        elif ex.mode is _Mode.WAITING:
            self._stream_broke(ex, "the response ended before its headers", now)
        else:
            self.m._finish(ex)

    def response_failed(self, exchange_id: int, failure: TransportFailure, now: float) -> None:
        """The exchange could not be performed or broke: the core words why (X5)."""
        self.m._last_now = now
        if not isinstance(failure, TransportFailure):
            raise TypeError(
                "response_failed takes a TransportFailure (its kind and safe text), "
                f"not {type(failure).__name__}: build one with "
                "TransportFailure.from_exception(exc)"
            )
        ex = self.m._exchanges.get(exchange_id)
        if ex is None:
            return
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s exchange %d (%s) broke after %.1f ms: %s",
                self.m._tag,
                ex.id,
                _exchange_what(ex),
                (now - ex.opened_at) * 1000,
                failure.describe(),
            )
        if ex.kind is _Kind.DELETE or ex.mode is _Mode.IGNORE or self.m._closing_at is not None:
            self.m._finish(ex)
            return
        self._stream_broke(ex, failure.describe(), now)

    def _http_error(self, ex: _Exchange, now: float) -> None:
        """H7: a transport error naming the status, with a short escaped excerpt.

        M9: a JSON-RPC error object in the body is that request's answer instead
        (its id may be null: it answers the request this POST carried).
        """
        if self._session_refused(ex):
            self._expired(ex, now)
            return
        if ex.json_error and isinstance(ex.message, Request) and ex.stream is not None:
            answer = _json_rpc_error(bytes(ex.body), ex.message.id)
            if answer is not None:
                self._deliver(ex, answer, now, len(ex.body))
                if self._response_seen(ex):
                    self.m._finish(ex)
                    return
        body = bytes(ex.body[:_ERROR_EXCERPT_BYTES]).decode("utf-8", "replace")
        legacy = legacy_sse_reason(self.m.display_url) if ex.status == 405 else None
        if legacy is not None and ex.kind is _Kind.POST:
            error = TransportError(legacy)  # a wrong URL, not a failing server (C3)
        else:
            reason = status_reason(self.m.display_url, ex.status, self.m.redact(body))
            error = TransportError(reason)
        error.status = ex.status
        self.m._fail(ex, error, now)

    def _session_refused(self, ex: _Exchange) -> bool:
        """H6a: a 400 whose body is a JSON-RPC error, to a request (or the resume of
        one) that carried a session id: how servers built on the TypeScript SDK's
        example answer a session they do not know (after a restart, say) instead of
        404. Read as an expired session once per request: a request already sent
        again on a new session that meets it again gets it as its answer (H7, M9).
        """
        if ex.status != 400 or not ex.json_error or ex.sent_session_id is None:
            return False
        stream = ex.stream
        if stream is None or stream.request_id is None:
            return False
        if ex.kind is _Kind.POST:
            if not isinstance(ex.message, Request) or stream.request_id in self.m._resent:
                return False
        elif ex.kind is not _Kind.RESUME:
            return False
        return _is_json_rpc_error(bytes(ex.body))

    def _expired(self, ex: _Exchange, now: float) -> None:
        """H6: a 404 on a request that carried a session id (H6a: or that 400)."""
        if ex.id in self.m._exchanges:
            self.m._actions.append(AbortExchange(exchange_id=ex.id))
        self.m._finish(ex)
        stale = ex.sent_session_id != self.m.session_id
        _log.debug(
            "%s HTTP %d for exchange %d (%s), sent with session id %s: the session %s",
            self.m._tag,
            ex.status,
            ex.id,
            _exchange_what(ex),
            _shown_session(ex.sent_session_id),
            "had already been replaced" if stale else "expired",
        )
        if not stale:
            self.m.session_id = None
            self.m.protocol_version = None
            self.m._listening = False
            self.m._awaiting_session = True
        request_id = ex.stream.request_id if ex.stream is not None else None
        if ex.kind is _Kind.POST and isinstance(ex.message, Request):
            assert request_id is not None
            if request_id in self.m._resent:
                self.m._upward.append(
                    RequestFailed(
                        request_id,
                        TransportError(
                            f"the server ended the new session too (HTTP {ex.status} again)"
                        ),
                    )
                )
                if not stale:
                    # The session id is gone: later requests need a new session.
                    self.m._upward.append(SessionExpired([]))
                return
            self.m._resent.add(request_id)
            if stale and self.m.session_id is not None:
                self.m.send(ex.message, now)  # a new session is already up: resend on it
            else:
                self.m._upward.append(SessionExpired([ex.message]))
        elif ex.kind is _Kind.RESUME and request_id is not None:
            # The call was already running: it may have run, so it is never replayed.
            self.m._upward.append(RequestFailed(request_id, _may_have_run(), sent=True))
            if not stale:
                self.m._upward.append(SessionExpired([]))
        elif not stale:
            self.m._upward.append(SessionExpired([]))

    def _on_event(self, ex: _Exchange, event: SSEEvent, now: float) -> bool:
        """One SSE event. Returns False when it ended the exchange."""
        stream = ex.stream
        assert stream is not None and ex.decoder is not None
        event_id, data = event.id, event.data
        if event_id is not None:
            # H4: only an id not seen before counts as progress, so a server that
            # re-sends the same priming event on every resume still hits the bound.
            # The id dispatched with this event, not the decoder's buffer: later
            # lines of the same chunk may already hold the id of an unfinished event.
            if event_id != stream.last_event_id:
                ex.new_event = True
            stream.last_event_id = event_id
        if ex.decoder.retry is not None:
            stream.retry = ex.decoder.retry / 1000.0
        if not data:
            return True  # H4: a priming event carries an id and no message
        ex.new_event = True
        if event.event != "message":
            # P5: only `message` events carry JSON-RPC; others (a `ping`, say) are
            # skipped, though their id and retry above still count.
            _log.debug("skipped an SSE event of type %r", excerpt(event.event, 40))
            return True
        try:
            message = decode_message(data)
        except McpError as exc:
            self.m._fail(ex, exc, now)
            return False
        self._deliver(ex, message, now, len(data))
        return True

    def _deliver(self, ex: _Exchange, message: Message, now: float, size: int) -> None:
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s received %s (%d %s, exchange %d)",
                self.m._tag,
                describe_message(message),
                size,
                "characters in an SSE event" if ex.mode is _Mode.SSE else "bytes of JSON",
                ex.id,
            )
        stream = ex.stream
        if (
            stream is not None
            and stream.request_id is not None
            and isinstance(message, (Result, ErrorResponse))
            and message.id == stream.request_id
        ):
            stream.got_response = True
            self.m._resent.discard(stream.request_id)
            if (
                isinstance(message, Result)
                and isinstance(ex.message, Request)
                and ex.message.method == "initialize"
            ):
                # H2: a session id only from a result; H6: the new session is up.
                self.m._awaiting_session = False
                if ex.candidate_session_id is not None:
                    self.m.session_id = ex.candidate_session_id
                _log.debug(
                    "%s session id %s",
                    self.m._tag,
                    _shown_session(ex.candidate_session_id)
                    if ex.candidate_session_id is not None
                    else "none given (a stateless server)",
                )
            if ex.mode is _Mode.SSE:
                # The server should now end the stream; one that keeps it open
                # would hold a pooled connection forever, so it gets a short grace.
                self.m._bound_exchange(ex.id, now + self.m.limits.response_linger)
        elif isinstance(message, (Result, ErrorResponse)) and isinstance(message.id, int):
            # A response that came on another stream ends its own request: stop
            # waiting on that request's stream and forget its pending resume.
            self.m.abandon(message.id)
        related = stream.request_id if stream is not None else None
        self.m._upward.append(
            MessageArrived(message, related if isinstance(related, int) else None)
        )

    def _response_seen(self, ex: _Exchange) -> bool:
        return ex.stream is None or ex.stream.got_response

    def _stream_broke(self, ex: _Exchange, what: str, now: float) -> None:
        """H4: a stream ended or broke. Resume it if it still owes us something."""
        self.m._finish(ex)
        stream = ex.stream
        if stream is None or stream.got_response:
            return
        if ex.kind is _Kind.LISTEN and self.m.session_id is None:
            return
        if (self.m.modern or not stream.last_event_id) and ex.kind is not _Kind.LISTEN:
            # M72: a 2026-07-28 stream is never resumed: the request is lost.
            if stream.request_id is not None:
                self.m._upward.append(
                    RequestFailed(
                        stream.request_id,
                        TransportError(f"{what} before the response arrived"),
                        sent=_reached_server(ex),
                    )
                )
            return
        stream.quiet_reconnects = 0 if ex.new_event else stream.quiet_reconnects + 1
        if stream.quiet_reconnects > self.m.limits.max_reconnects:
            error = LimitExceeded(
                "max_reconnects",
                self.m.limits.max_reconnects,
                "the number of reconnects that brought no new event",
            )
            if stream.request_id is not None:
                self.m._upward.append(RequestFailed(stream.request_id, error))
            else:
                self.m._listen_refused_for = ex.sent_session_id
                _log.debug("GET stream given up: %s", error)
            return
        if ex.decoder is not None and ex.decoder.retry is not None:
            # `retry` may come in a block of its own, which dispatches no event.
            stream.retry = ex.decoder.retry / 1000.0
        delay = stream.retry if stream.retry is not None else self.m.limits.default_retry
        if _log.isEnabledFor(_DEBUG):
            quiet = stream.quiet_reconnects
            _log.debug(
                "%s %s on exchange %d; reconnecting in %g s%s%s",
                self.m._tag,
                what,
                ex.id,
                delay,
                f" after event '{excerpt(stream.last_event_id, 40)}'"
                if stream.last_event_id
                else "",
                f" ({quiet} in a row without a new event, at most {self.m.limits.max_reconnects})"
                if quiet
                else "",
            )
        kind = _Kind.LISTEN if stream.request_id is None else _Kind.RESUME
        if kind is _Kind.LISTEN:
            self.m._listening = True
        self.m._schedule(_Timer(at=now + delay, stream=stream, kind=kind))


def _reached_server(ex: _Exchange) -> bool:
    """U3: whether the request this exchange carried reached the server whole: the
    driver said it was written whole, the server began a success answer, or the
    exchange resumes a stream the server opened for it (H4)."""
    return ex.sent or 200 <= ex.status < 300 or ex.kind is _Kind.RESUME


def _is_json_rpc_error(body: bytes) -> bool:
    """H6a: whether ``body`` is a JSON-RPC error object, its id absent or any (the
    TypeScript SDK's example leaves the id out, which ``decode_message`` refuses)."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        return False
    error = value.get("error")
    return isinstance(error, dict) and type(error.get("code")) is int
