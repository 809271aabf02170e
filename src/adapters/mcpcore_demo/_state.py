"""The state ``DemoServer``'s parts share: its options, what it records, its
sessions and tasks, and ``_touch``, which wakes whoever waits on a change.

``ServerState`` only declares the attributes; ``DemoServer.__init__`` sets
them. The JSON-RPC side (``_rpc``) and the HTTP side (``_http``) read and
write them through this class, so that neither imports the server.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.abc

from ._context import DemoTool
from ._streams import RunningCall, Session, Waiter
from ._tasks import TaskBook
from ._types import FaultHook, ReceivedRequest, RequestId

__all__ = ["ServerState"]


class ServerState:
    """The attributes of a ``DemoServer`` (documented there), declared for its parts."""

    # Options.
    path: str
    json_response: bool
    stateless: bool
    page_size: int | None
    fault: FaultHook | None
    priming: bool
    event_ids: bool
    retry_ms: int | None
    keepalive: float | None
    sse_newline: str
    sse_event_name: str | None
    close_after_priming: bool
    close_after_events: int | None
    respond_to_cancelled: bool
    require_accept: bool
    allowed_origins: frozenset[str] | None
    max_body_size: int
    max_events_per_stream: int
    server_info: dict[str, str]
    instructions: str | None
    record: bool

    # Tools and tasks.
    _tools: dict[str, DemoTool]
    _tasks: TaskBook

    # Observability.
    received: list[ReceivedRequest]
    cancelled: list[tuple[RequestId, str | None]]
    interrupted: list[RequestId]
    dropped: list[dict[str, Any]]
    connections_opened: int
    open_connections: int
    sessions_ended: list[str]

    # Sessions, running calls and the event loop.
    _sessions: dict[str, Session]
    _stateless_running: list[RunningCall]
    _stateless_streams: int
    _waiters: dict[RequestId, Waiter]
    _request_counter: int
    _tg: anyio.abc.TaskGroup | None
    _token: Any
    _loop_thread: int | None
    _activity: anyio.Event | None
    _cond: threading.Condition

    def _touch(self) -> None:
        if self._activity is not None:
            self._activity.set()
            self._activity = anyio.Event()
        with self._cond:
            self._cond.notify_all()
