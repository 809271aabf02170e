"""What the demo server keeps per session and per request: the SSE event
streams (replayable with ``Last-Event-ID``), the sessions, the ``tools/call``
handlers running, and the waiters of its own requests to the client."""

from __future__ import annotations

from typing import Any, Literal

import anyio

from ._types import RequestId

__all__ = ["EventStream", "RunningCall", "Session", "Waiter"]


class EventStream:
    """The messages of one SSE stream (a request's, or a session's GET stream),
    kept so that a client can resume it with ``Last-Event-ID``."""

    def __init__(self, sid: str, *, max_events: int) -> None:
        self.sid = sid
        self.events: list[tuple[int, dict[str, Any]]] = []
        self.next_n = 1
        self.done = False
        self.attached = False
        self.delivered = 0
        self.max_events = max_events
        self._changed = anyio.Event()

    def append(self, message: dict[str, Any]) -> None:
        if self.done:
            return
        self.events.append((self.next_n, message))
        self.next_n += 1
        if len(self.events) > self.max_events:
            del self.events[0]
        self._wake()

    def finish(self) -> None:
        if not self.done:
            self.done = True
            self._wake()

    def after(self, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [event for event in self.events if event[0] > n]

    def changed(self) -> anyio.Event:
        return self._changed

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def response(self) -> dict[str, Any] | None:
        for _, message in reversed(self.events):
            if "id" in message and ("result" in message or "error" in message):
                return dict(message)
        return None


class RunningCall:
    """A ``tools/call`` whose handler runs: cancelling ``scope`` stops it."""

    def __init__(self, rid: RequestId, stream: EventStream, session: Session | None) -> None:
        self.rid = rid
        self.stream = stream
        self.session = session
        self.scope = anyio.CancelScope()
        self.reason: Literal["client", "session"] | None = None


class Session:
    """One ``Mcp-Session-Id``: its streams (``standalone`` is the GET stream),
    its running calls and its log level."""

    def __init__(self, sid: str, protocol_version: str, max_events: int) -> None:
        self.id = sid
        self.protocol_version = protocol_version
        self.initialized = False
        self.log_level: str | None = None
        self.max_events = max_events
        self._stream_counter = 0
        self.streams: dict[str, EventStream] = {}
        self.standalone = self.new_stream()
        self.running: dict[RequestId, RunningCall] = {}

    def new_stream(self) -> EventStream:
        sid = str(self._stream_counter)
        self._stream_counter += 1
        stream = EventStream(sid, max_events=self.max_events)
        self.streams[sid] = stream
        if len(self.streams) > 64:
            for key, old in list(self.streams.items()):
                if len(self.streams) <= 64:
                    break
                if old.done and not old.attached and old is not self.standalone:
                    del self.streams[key]
        return stream

    def end(self) -> None:
        for running in self.running.values():
            running.reason = running.reason or "session"
            running.scope.cancel()
        for stream in self.streams.values():
            stream.finish()


class Waiter:
    """A request the server sent to the client, waiting for the answer."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: dict[str, Any] | None = None
