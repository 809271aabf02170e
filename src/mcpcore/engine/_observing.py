"""One engine's requests as its ``RequestObserver`` sees them (V2).

The engine holds an ``Observation`` only while it has an observer (tracing on);
without one nothing here is loaded. It is the one place that decides what is
observed, so every driver traces alike:

* every request of the host: a call, a read, a listing, a prompt, a
  completion, ``resume`` of a paused call (Q4), ``resume_task`` (T8, as
  ``tasks/result``), ``task_status`` / ``cancel_task``, and ``subscribe``
  (F2). The observer is told in the caller's context before anything is sent,
  and the trace context it returns rides in ``params._meta`` of every wire
  request made for it: its pages, its ``input_required`` rounds, a re-send, the
  polls of a task it follows (``RequestPath.traced``), and at 2026-07-28 the
  ``subscriptions/listen`` request a subscription opens. It ends with the
  request's ending event;
* the handshake's own requests (``server/discover``, ``initialize``), each one
  a request of its own, told in the context the client was opened in (whichever
  thread or task sends it): told when issued, ended when its answer arrives (an
  error answer ends it with its code), when it fails, or when the attempt ends
  without its answer (the attempt's error, or ``cancelled`` on close).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..base._events import CallCancelled, CallFailed, CallSucceeded, Event, RequestSucceeded
from ..base._observe import (
    RequestEnded,
    RequestObserver,
    RequestStarted,
    error_type,
    safely_ended,
    safely_started,
)
from ..session._handshake import DISCOVER, INITIALIZE
from ..session._lifecycle import SessionState

if TYPE_CHECKING:
    from ..base._errors import McpError
    from ..session._session import ClientSession
    from ..wire._jsonrpc import ErrorResponse
    from ..wire._requests import Pending, RequestKind

__all__ = ["Observation", "with_carrier"]

Wire = Callable[[], tuple[str, "str | None", "int | None", "str | None"]]
_ENDINGS = (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)
_OWN = (DISCOVER, INITIALIZE)


def with_carrier(
    carrier: Mapping[str, Any] | None, meta: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The host's ``_meta`` keys with the trace context beside them (the host's win);
    ``meta`` that is no mapping is left for the session to refuse."""
    if not carrier or not (meta is None or isinstance(meta, Mapping)):
        return meta
    return {**carrier, **(meta or {})}


class Observation:
    """What an engine tells its observer (see the module docstring)."""

    def __init__(self, observer: RequestObserver, session: ClientSession, wire: Wire) -> None:
        self.observer = observer
        self._s = session
        self._wire = wire
        self.open: dict[int, None] = {}  # host call ids told as started, not yet ended
        self._own: dict[int, None] = {}  # handshake request ids told as started
        # The context the client was opened in (a driver sets the observer there): the
        # handshake's requests start in it, whichever thread or task reads the answer
        # that sends the next one, so their parent span is the same on every driver.
        self._opener = contextvars.copy_context()
        session.path.watch = self

    def detach(self) -> None:
        self._s.path.watch = None
        self._s.path.traced.clear()

    # --- the host's requests --------------------------------------------------------

    def host(
        self,
        method: str,
        now: float,
        issue: Callable[[Mapping[str, Any]], int],
        **about: str | None,
    ) -> int:
        """Tell the observer, then ``issue(carrier)``; the call id it returned."""
        path = self._s.path
        expected = path.peek_id  # the id the request is about to take
        carrier = self._started(expected, method, now, **about)
        if carrier:
            path.traced[expected] = carrier
        try:
            call_id = issue(carrier)
        except BaseException as exc:  # refused before sending: the request ends now
            path.traced.pop(expected, None)
            ended = RequestEnded(call_id=expected, error_type=error_type(exc), error=exc, now=now)
            safely_ended(self.observer, ended)
            raise
        self.open[call_id] = None
        return call_id

    def ended(self, event: Event, now: float) -> None:
        """An ending event of a request the observer was told about."""
        if not isinstance(event, _ENDINGS):
            return
        if self.open.pop(event.call_id, 0) is not None:
            return
        self._s.path.traced.pop(event.call_id, None)
        error: McpError | None = None
        kind: str | None = None
        if isinstance(event, CallFailed):
            error, kind = event.error, error_type(event.error)
        elif isinstance(event, CallCancelled):
            kind = "cancelled"
        rpc_code = None if error is None else error.rpc_code
        ended = RequestEnded(
            call_id=event.call_id, error_type=kind, rpc_code=rpc_code, error=error, now=now
        )
        safely_ended(self.observer, ended)

    # --- the handshake's own requests -------------------------------------------------

    def issued(self, kind: RequestKind, request_id: int, now: float) -> Mapping[str, Any] | None:
        """``RequestPath.issue`` asks before building a request of its own: ``None``
        when it is not observed, else the trace context for its ``_meta``."""
        if kind not in _OWN:
            return None
        self._own[request_id] = None
        return self._opener.copy().run(self._started, request_id, kind.method, now)

    def follow(self, pending: Pending) -> None:
        """End the handshake request ``pending`` from its own outcome."""
        request_id = pending.request.id
        assert isinstance(request_id, int)
        done, failed, refused = pending.on_done, pending.on_failed, pending.on_refused

        def on_done(p: Pending, value: object, now: float) -> None:
            self._own_ended(request_id, None, None, now)
            done(p, value, now)

        def on_failed(p: Pending, error: McpError, now: float) -> None:
            self._own_ended(request_id, error_type(error), error, now, error.rpc_code)
            failed(p, error, now)

        def on_refused(p: Pending, message: ErrorResponse, now: float) -> bool:
            self._own_ended(request_id, str(message.code), None, now, message.code)
            return refused is not None and refused(p, message, now)

        pending.on_done, pending.on_failed, pending.on_refused = on_done, on_failed, on_refused

    def sweep(self, now: float) -> None:
        """Handshake requests that left without an outcome of their own (the attempt
        failed, or the client closed) end with the attempt's error or ``cancelled``."""
        pending = self._s.path.pending
        for request_id in [r for r in self._own if r not in pending]:
            error = None if self._s.state is SessionState.CLOSED else self._s.last_error
            kind = "cancelled" if error is None else error_type(error)
            self._own_ended(request_id, kind, error, now)

    @property
    def watching_own(self) -> bool:
        return bool(self._own)

    def _own_ended(
        self,
        request_id: int,
        kind: str | None,
        error: BaseException | None,
        now: float,
        rpc_code: int | None = None,
    ) -> None:
        if self._own.pop(request_id, 0) is not None:
            return
        ended = RequestEnded(
            call_id=request_id, error_type=kind, rpc_code=rpc_code, error=error, now=now
        )
        safely_ended(self.observer, ended)

    def _started(
        self, call_id: int, method: str, now: float, **about: str | None
    ) -> Mapping[str, Any]:
        session = self._s
        transport, address, port, session_id = self._wire()
        started = RequestStarted(
            call_id=call_id,
            method=method,
            server=session.options.server_name,
            protocol_version=session.protocol_version,
            session_id=session_id,
            transport=transport,
            address=address,
            port=port,
            now=now,
            **about,
        )
        return safely_started(self.observer, started) or {}
