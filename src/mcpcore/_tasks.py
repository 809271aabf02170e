"""Tasks: tool calls the server runs in the background (T7–T9).

A server may accept a ``tools/call`` as a *task*: it answers at once with a
task id, and the client asks about the task until it is done. At 2026-07-28
this is the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): declared
per request in ``clientCapabilities.extensions``, answered with
``resultType: "task"``, followed with ``tasks/get`` (whose answer carries the
finished ``result``, the ``error`` or the ``inputRequests``), ``tasks/update``
(the answers to those) and ``tasks/cancel``. In the handshake era (2025-11-25)
it is the experimental ``tasks`` capability: the client asks for a task with a
``task`` param (only for a tool that requires one), the server answers with a
``CreateTaskResult``, and the outcome is fetched with ``tasks/result``.

This module owns all of it except the wire's framing: the request kinds
(``tasks/get``, ``tasks/update``, ``tasks/cancel``, ``tasks/result``: rows of
``KINDS``, F1), reading the server's task answers (every malformed one fails
only its call, naming what was wrong), the ``TaskDesk`` that follows each
task as timers of the core (polls at the server's interval, clamped and
stretched while nothing changes; ``task_timeout``; each poll's own deadline),
status changes as progress, input through the input desk of §15 and the
handles (``TaskHandle``) a host keeps to pick a task up again, even from
another process. The session coordinates it; the request path is the
session's.

Polling: the server's ``pollIntervalMs`` (``pollInterval`` in 2025-11-25) is
obeyed within ``POLL_MIN``..``POLL_MAX`` (a 0 becomes 0.1 s, a 10**9 ms
becomes 30 s; a value that is not a number is ignored, and ``POLL_DEFAULT``
applies). Each poll that finds nothing new (same status, same message)
stretches the next delay by half, up to four times the interval; any change
goes back to the interval. A poll that fails in the transport is tried
again, at most ``MAX_POLL_FAILURES`` times in a row, before the call fails
with a ``TransportError`` that says the task may still be running and names
its id.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from ._errors import (
    BackendError,
    CallTimeout,
    Cancelled,
    InvalidState,
    InvalidValue,
    McpError,
    RemoteProtocolError,
    TransportError,
)
from ._escape import excerpt
from ._events import CallFailed, CallSucceeded, ProgressReceived, RequestSucceeded
from ._jsonrpc import ErrorResponse
from ._render import ToolOutput, render_result
from ._requests import Ask, Pending, RequestKind, error_detail, register

if TYPE_CHECKING:
    from ._session import ClientSession
    from ._tools import Tool

__all__ = [
    "MAX_POLL_FAILURES",
    "POLL_DEFAULT",
    "POLL_MAX",
    "POLL_MIN",
    "TASKS_CANCEL",
    "TASKS_EXTENSION",
    "TASKS_GET",
    "TASKS_RESULT",
    "TASKS_UPDATE",
    "TaskDesk",
    "TaskHandle",
    "TaskStatus",
]

_log = logging.getLogger("mcpcore.session")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
_RELATED_TASK = "io.modelcontextprotocol/related-task"

#: Poll delays, in seconds (see the module docstring).
POLL_MIN = 0.1
POLL_MAX = 30.0
POLL_DEFAULT = 1.0
_STRETCH = 1.5
_STRETCH_CAP = 4.0
#: Polls in a row that may fail in the transport before the call fails.
MAX_POLL_FAILURES = 3
#: The longest task id and status message this client takes.
_MAX_TASK_ID = 256
_MAX_MESSAGE = 1000

_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
_TERMINAL = ("completed", "failed", "cancelled")
_FORMAT = 1
_MAX_HANDLE = 64 * 1024

TaskState = Literal["working", "input_required", "completed", "failed", "cancelled"]


# --- what a host sees --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskHandle:
    """A tool call the server runs as a task (T8): enough to pick it up again,
    from this client or a new one in another process.

    ``task_id`` is the server's id; ``server`` the name of the client (and hub
    entry) it was made through; ``tool`` the tool's name on the server;
    ``endpoint`` a digest of the server's URL (never the URL itself), which a
    client checks before it resumes a handle. ``to_json()`` /
    ``TaskHandle.from_json(text)`` keep it anywhere. A task id may be all a
    server needs to hand out the result: store it as carefully as the call.
    """

    task_id: str
    server: str
    tool: str
    endpoint: str = field(default="", repr=False)

    def to_json(self) -> str:
        return json.dumps(
            {
                "mcpcoreTask": _FORMAT,
                "taskId": self.task_id,
                "server": self.server,
                "tool": self.tool,
                "endpoint": self.endpoint,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskHandle:
        """Read a handle back; ``InvalidValue`` when ``text`` is not one."""
        if len(text) > _MAX_HANDLE:
            raise InvalidValue("the task handle is larger than any this client writes")
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            raise InvalidValue("the task handle is not JSON") from None
        if not isinstance(data, dict) or data.get("mcpcoreTask") != _FORMAT:
            raise InvalidValue("the text is not a task handle this client wrote")
        task_id, server, tool, endpoint = (
            data.get("taskId"),
            data.get("server"),
            data.get("tool"),
            data.get("endpoint"),
        )
        if not (
            isinstance(task_id, str)
            and 0 < len(task_id) <= _MAX_TASK_ID
            and isinstance(server, str)
            and isinstance(tool, str)
            and isinstance(endpoint, str)
        ):
            raise InvalidValue("the task handle is damaged (a field is missing or wrong)")
        return cls(task_id, server, tool, endpoint)


@dataclass(frozen=True, slots=True)
class TaskStatus:
    """Where a task stands (``task_status()``, T8): ``status`` is one of
    ``working``, ``input_required``, ``completed``, ``failed``, ``cancelled``;
    ``message`` the server's status message (untrusted text, cut short);
    ``poll_interval`` and ``ttl`` in seconds, as the server gave them (``None``
    when it did not)."""

    task_id: str
    status: TaskState
    message: str | None = None
    poll_interval: float | None = None
    ttl: float | None = None

    @property
    def done(self) -> bool:
        """The task has ended (completed, failed or cancelled)."""
        return self.status in _TERMINAL


# --- reading the server's answers ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answer:
    """One task answer read: its status, and what a tasks/get answer inlines."""

    status: TaskStatus
    interval: float | None  # the server's poll interval, clamped; None: not given
    result: object = None
    error: object = None
    input_requests: object = None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def read_task(raw: object, *, expected: str | None, modern: bool) -> _Answer:
    """A task object (a 2026-07-28 task result or tasks/get answer, a 2025-11-25
    ``Task``) → what it says. ``RemoteProtocolError`` naming the fault: a task id
    that is not a non-empty string (or is another task's than ``expected``), a
    status this client does not know."""
    if not isinstance(raw, Mapping):
        raise RemoteProtocolError("the server's task answer is not a JSON object")
    task_id = raw.get("taskId")
    if not isinstance(task_id, str) or not 0 < len(task_id) <= _MAX_TASK_ID:
        shown = f"a {type(task_id).__name__}" if not isinstance(task_id, str) else "too long"
        raise RemoteProtocolError(f"the server's task id is not a usable string ({shown})")
    if expected is not None and task_id != expected:
        raise RemoteProtocolError(
            f"the server answered about task {excerpt(task_id, 60)!r} when asked about "
            f"task {excerpt(expected, 60)!r}"
        )
    status = raw.get("status")
    if status not in _STATUSES:
        raise RemoteProtocolError(
            f"task {excerpt(task_id, 60)!r} has a status this client does not know: "
            f"{excerpt(repr(status), 40)}"
        )
    message = raw.get("statusMessage")
    interval_ms = _number(raw.get("pollIntervalMs" if modern else "pollInterval"))
    ttl_ms = _number(raw.get("ttlMs" if modern else "ttl"))
    interval = None if interval_ms is None else min(max(interval_ms / 1000, POLL_MIN), POLL_MAX)
    return _Answer(
        TaskStatus(
            task_id,
            status,
            message[:_MAX_MESSAGE] if isinstance(message, str) else None,
            interval,
            None if ttl_ms is None or ttl_ms < 0 else ttl_ms / 1000,
        ),
        interval,
        raw.get("result"),
        raw.get("error"),
        raw.get("inputRequests"),
    )


def _expected(pending: Pending) -> str | None:
    task_id = (pending.base or {}).get("taskId")
    return task_id if isinstance(task_id, str) else None


def _read_get(result: dict[str, Any], pending: Pending) -> _Answer:
    modern = "resultType" in result or "pollIntervalMs" in result or "ttlMs" in result
    return read_task(result, expected=_expected(pending), modern=modern)


def _read_status(result: dict[str, Any], pending: Pending) -> TaskStatus:
    return _read_get(result, pending).status


def _read_related(result: dict[str, Any], pending: Pending) -> dict[str, Any]:
    """2025-11-25 ``tasks/result``: the call's result, checked to be this task's."""
    meta = result.get("_meta")
    related = meta.get(_RELATED_TASK) if isinstance(meta, Mapping) else None
    other = related.get("taskId") if isinstance(related, Mapping) else None
    expected = _expected(pending)
    if other is not None and other != expected:
        raise RemoteProtocolError(
            f"the server sent the result of task {excerpt(str(other), 60)!r} when asked for "
            f"task {excerpt(str(expected), 60)!r}"
        )
    return result


def _ack(result: dict[str, Any], pending: Pending) -> None:
    return None


def _task_refused(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    task_id = excerpt(str(_expected(pending)), 60)
    return RemoteProtocolError(
        f"{pending.kind.method} for task {task_id!r} failed ({error_detail(message)})"
    )


TASKS_GET = register(
    RequestKind(method="tasks/get", parse=_read_get, refused=_task_refused, name_param="taskId")
)
TASKS_UPDATE = register(
    RequestKind(method="tasks/update", parse=_ack, refused=_task_refused, name_param="taskId")
)
TASKS_CANCEL = register(
    RequestKind(method="tasks/cancel", parse=_ack, refused=_task_refused, name_param="taskId")
)
TASKS_RESULT = register(
    RequestKind(
        method="tasks/result", parse=_read_related, refused=_task_refused, name_param="taskId"
    )
)
# The host's own tasks/get (task_status()): the same request, read as a TaskStatus.
TASK_STATUS = RequestKind(
    method="tasks/get", parse=_read_status, refused=_task_refused, name_param="taskId"
)


# --- following tasks -----------------------------------------------------------------


@dataclass(slots=True)
class _Task:
    """One task a call of the host follows."""

    call_id: int
    handle: TaskHandle
    tool: Tool | None
    deadline: float  # task_timeout from acceptance (T9)
    modern: bool
    interval: float | None = None  # the server's, clamped
    delay: float = POLL_MIN
    due: float | None = None  # when the next poll goes out; None while one is out
    flight: Pending | None = None
    seen: tuple[str, str | None] | None = None
    changes: int = 0
    failures: int = 0
    rounds: int = 0
    token: int | None = None  # the creating tools/call's progress token (2025-11-25)


class TaskDesk:
    """The session's tasks: following them, handles, cancelling. See the module
    docstring."""

    def __init__(self, session: ClientSession) -> None:
        self._s = session
        self.calls: dict[int, _Task] = {}
        # T8: calls that end with their TaskHandle once the server made a task
        # (start_call) rather than follow it.
        self.handing: set[int] = set()

    @property
    def on(self) -> bool:
        return self._s.options.tasks

    def declare(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """T7: what a request declares with tasks on (the extension, 2026-07-28)."""
        if not self.on:
            return capabilities
        extensions = dict(capabilities.get("extensions") or {})
        extensions[TASKS_EXTENSION] = {}
        return {**capabilities, "extensions": extensions}

    def next_deadline(self) -> float | None:
        times = [t.deadline for t in self.calls.values()]
        times += [t.due for t in self.calls.values() if t.due is not None]
        return min(times) if times else None

    @property
    def idle(self) -> bool:
        return not self.calls

    def handle_timer(self, now: float) -> None:
        raise NotImplementedError

    def created(self, pending: Pending, result: dict[str, Any], now: float) -> bool:
        """A ``tools/call`` answered with a task: follow it (or hand it to the host,
        T8). False when the result is not a task (or tasks are off)."""
        raise NotImplementedError

    def cancel(self, call_id: int, now: float, reason: str) -> bool:
        """K6, T7: a call following a task is abandoned: ``tasks/cancel`` is sent."""
        raise NotImplementedError

    def close(self, now: float) -> None:
        """Closing: tasks run on unless the host asked (``cancel_tasks_on_close``)."""
        raise NotImplementedError


def task_id_of(session: ClientSession, task: object) -> tuple[str, str | None]:
    """The task id (and the tool's name, when known) a host's ``TaskHandle`` or
    bare id names; ``InvalidValue`` for anything else, or a handle of another
    server's task."""
    if isinstance(task, TaskHandle):
        if task.endpoint and task.endpoint != session.input.endpoint:
            raise InvalidValue("this task handle belongs to a task of another server")
        return task.task_id, task.tool or None
    if isinstance(task, str) and 0 < len(task) <= _MAX_TASK_ID:
        return task, None
    raise InvalidValue("a task is named by its TaskHandle or its id (a non-empty string)")


def task_ask(session: ClientSession, kind: RequestKind, task: object) -> Ask:
    """The host's one request about a task (``task_status``, ``cancel_task``)."""
    task_id, _ = task_id_of(session, task)
    return Ask(kind, {"taskId": task_id})


def resume_task(
    session: ClientSession, task: object, now: float, *, timeout: float | None = None
) -> int:
    """T8: follow a task again under a new call id (see ``TaskDesk.follow``).

    Raises at once, with nothing sent: ``InvalidState`` before the session is
    ready, ``InvalidValue`` for something that names no task (or another
    server's), or a timeout that is not a positive number of seconds."""
    raise NotImplementedError


for _public in (TaskHandle, TaskStatus):
    _public.__annotations__ = get_type_hints(_public)
    _public.__module__ = "mcpcore"
del _public

_UNUSED = (BackendError, CallTimeout, Cancelled, InvalidState, TransportError, ToolOutput)
_UNUSED_EVENTS = (CallFailed, CallSucceeded, ProgressReceived, RequestSucceeded, render_result)
