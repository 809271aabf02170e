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

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._config import RemoteServer
from ._errors import McpError, TransportError
from ._escape import excerpt
from ._events import Action, Event, StartFailed
from ._failure import TransportFailure
from ._http import HttpLimits, HttpMapping, MessageArrived, RequestFailed
from ._jsonrpc import decode_message, describe_message, encode_message
from ._session import ClientSession, SessionOptions, SessionState
from ._stdio import LineFramer, frame_message
from ._tools import Catalogue

__all__ = ["Availability", "HttpClientEngine", "StdioClientEngine"]

_stdio_log = logging.getLogger("mcpcore.stdio")
_DEBUG = logging.DEBUG


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether a server can take calls now (L3); ``reason`` says why not.

    True exactly when ``ok``, so ``if not await client.ready(): ...`` works.
    """

    ok: bool
    reason: str | None = None

    def __bool__(self) -> bool:
        return self.ok


class _EngineBase:
    """What both engines share: the session, its commands and its events."""

    def __init__(self, options: SessionOptions | None) -> None:
        self.session = ClientSession(options)
        self._events: list[Event] = []

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
    ) -> int:
        """Start a ``tools/call``; the outcome arrives as an event with this call id."""
        call_id = self.session.call(tool_id, arguments, now, timeout=timeout)
        self._pump(now)
        return call_id

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
        """``None`` while the first attempt is still running (L3)."""
        state = self.session.state
        if state is SessionState.READY:
            return Availability(True)
        if state is SessionState.CLOSED:
            return Availability(False, "the client is closed")
        error = self.session.last_error
        if error is None:
            return None
        return Availability(False, str(error))

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
    ) -> None:
        if options is None:
            options = SessionOptions(server_name=server.name)
        super().__init__(options)
        self.http = HttpMapping(
            server.url,
            list(server.headers.items()),
            display_url=server.display_url,
            limits=limits,
            listen=listen,
            name=options.server_name,
        )

    # --- transport input ---------------------------------------------------------

    def response_started(
        self, exchange_id: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        self.http.response_started(exchange_id, status, headers, now)
        self._pump(now)

    def response_data(self, exchange_id: int, data: bytes, now: float) -> None:
        self.http.response_data(exchange_id, data, now)
        self._pump(now)

    def response_ended(self, exchange_id: int, now: float) -> None:
        self.http.response_ended(exchange_id, now)
        self._pump(now)

    def response_failed(self, exchange_id: int, failure: TransportFailure, now: float) -> None:
        """The exchange could not be performed or broke.

        ``failure`` is its kind and safe text (``TransportFailure.from_exception``);
        the engine words the reason, so no text of a library's exception reaches it.
        """
        self.http.response_failed(exchange_id, failure, now)
        self._pump(now)

    def handle_timer(self, now: float) -> None:
        self.http.handle_timer(now)
        super().handle_timer(now)

    def close(self, now: float) -> None:
        """L6, H9: cancel what runs (``notifications/cancelled``), then ``DELETE``.

        Perform the abort actions this leaves, let the exchanges still running
        (notices already sent) finish briefly, then perform the requests it
        leaves in order, each briefly bounded.
        """
        if self.session.state is SessionState.CLOSED:
            return
        self.http.drop_exchanges(keep_notices=True)
        self.session.close(now)
        self._pump(now)
        self.http.end_session(now)

    # --- outputs -------------------------------------------------------------------

    def take_actions(self) -> list[Action]:
        return self.http.take_actions()

    def next_deadline(self) -> float | None:
        times = [
            t for t in (self.session.next_deadline(), self.http.next_deadline()) if t is not None
        ]
        return min(times) if times else None

    def _pump(self, now: float) -> None:
        session, http = self.session, self.http
        while True:
            moved = False
            for item in http.take_upward():
                moved = True
                if isinstance(item, MessageArrived):
                    session.receive_message(item.message, now)
                elif isinstance(item, RequestFailed):
                    session.request_failed(item.request_id, item.error, now)
                else:
                    session.session_expired(item.resend, now)
            for request_id in session.take_abandoned():
                moved = True
                http.abandon(request_id)
            http.protocol_version = session.protocol_version
            for message, body in session.take_outgoing_encoded():
                moved = True
                http.send(message, now, body)
            for event in session.take_events():
                moved = True
                if isinstance(event, StartFailed):
                    http.reset()
                self._events.append(event)
            if not moved:
                # H8: (re)open the GET stream once a session is up, also after H6.
                if session.state is SessionState.READY and not session.reinitializing:
                    http.start_listening()
                return


class StdioClientEngine(_EngineBase):
    """The same conversation over a child's stdin/stdout (S1): bytes in, bytes out."""

    def __init__(
        self, *, options: SessionOptions | None = None, max_line_size: int = 64 * 1024 * 1024
    ) -> None:
        super().__init__(options)
        self._framer = LineFramer(max_line_size=max_line_size)
        self._outgoing = bytearray()
        self._tag = f"[{excerpt(self.session.options.server_name, 60)}]"  # X4

    def receive_data(self, data: bytes, now: float) -> None:
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

    def connection_lost(self, reason: str, now: float) -> None:
        """The child's stdout closed or the child exited."""
        self._transport_lost(reason, now)

    def _transport_lost(self, reason: str, now: float) -> None:
        self.session.transport_lost(TransportError(reason), now)
        self._pump(now)

    def close(self, now: float) -> None:
        if self.session.state is SessionState.CLOSED:
            return
        self.session.close(now)
        self._pump(now)

    def data_to_send(self) -> bytes:
        out = bytes(self._outgoing)
        self._outgoing.clear()
        return out

    def next_deadline(self) -> float | None:
        return self.session.next_deadline()

    def _pump(self, now: float) -> None:
        session = self.session
        while True:
            moved = False
            session.take_abandoned()  # nothing to drop on stdio beyond the notice
            for message, body in session.take_outgoing_encoded():
                moved = True
                frame = frame_message(body or encode_message(message))
                if _stdio_log.isEnabledFor(_DEBUG):
                    _stdio_log.debug(
                        "%s sent %s (%d bytes)", self._tag, describe_message(message), len(frame)
                    )
                self._outgoing += frame
            for event in session.take_events():
                moved = True
                self._events.append(event)
            if not moved:
                return


# The public classes name their public module (in reprs and tracebacks).
for _public in (Availability, HttpClientEngine, StdioClientEngine):
    _public.__module__ = "mcpcore"
del _public
