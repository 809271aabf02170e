"""The demo server's SSE event streams, sessions, running calls and waiters."""

from __future__ import annotations

from typing import Any, Literal

import anyio

from ._types import RequestId


class _EventStream:
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


class _Running:
    def __init__(self, rid: RequestId, stream: _EventStream, session: _Session | None) -> None:
        self.rid = rid
        self.stream = stream
        self.session = session
        self.scope = anyio.CancelScope()
        self.reason: Literal["client", "session"] | None = None


class _Session:
    def __init__(self, sid: str, protocol_version: str, max_events: int) -> None:
        self.id = sid
        self.protocol_version = protocol_version
        self.initialized = False
        self.log_level: str | None = None
        self.max_events = max_events
        self._stream_counter = 0
        self.streams: dict[str, _EventStream] = {}
        self.standalone = self.new_stream()
        self.running: dict[RequestId, _Running] = {}

    def new_stream(self) -> _EventStream:
        sid = str(self._stream_counter)
        self._stream_counter += 1
        stream = _EventStream(sid, max_events=self.max_events)
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


class _Waiter:
    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: dict[str, Any] | None = None
