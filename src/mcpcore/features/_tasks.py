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
handles (``TaskHandle``, kept in ``_task_handle``) a host keeps to pick a task
up again, even from another process. The session coordinates it; the request
path is the session's.

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

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from ..base._errors import (
    BackendError,
    CallTimeout,
    Cancelled,
    InvalidState,
    InvalidValue,
    McpError,
    RemoteProtocolError,
    TransportError,
)
from ..base._escape import excerpt
from ..base._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    ProgressReceived,
    RequestSucceeded,
)
from ..base._record import record
from ..base._render import ToolOutput, render_result
from ..base._seal import check_seal
from ..wire._jsonrpc import ErrorResponse, Request
from ..wire._modern import MAX_INPUT_ROUNDS
from ..wire._requests import Ask, Pending, RequestKind, error_detail, register
from ._task_handle import MAX_TASK_ID, TaskHandle

if TYPE_CHECKING:
    from ..base._tools import Tool
    from ._port import SessionPort

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
#: 2025-11-25: seconds the ``ttl`` a call asks for outlasts ``task_timeout`` (T9):
#: a server may forget a task once its ttl is over, and the ``tasks/cancel`` of a
#: call that gave up at ``task_timeout`` must still find it.
_TTL_MARGIN = 60.0
#: The longest status message this client takes.
_MAX_MESSAGE = 1000

_STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
_TERMINAL = ("completed", "failed", "cancelled")

TaskState = Literal["working", "input_required", "completed", "failed", "cancelled"]


# --- what a host sees --------------------------------------------------------------


@record(frozen=True, slots=True)
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


@record(frozen=True, slots=True)
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
    if not isinstance(task_id, str) or not 0 < len(task_id) <= MAX_TASK_ID:
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
# The host's own tasks/get (task_status()): the same request, read as a TaskStatus;
# and its own tasks/cancel (cancel_task()), ending with the server's acknowledgement.
TASK_STATUS = RequestKind(
    method="tasks/get", parse=_read_status, refused=_task_refused, name_param="taskId"
)
TASK_CANCEL = RequestKind(method="tasks/cancel", refused=_task_refused, name_param="taskId")


# --- following tasks -----------------------------------------------------------------


@record(slots=True)
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
    started: float = 0.0
    firm: bool = False  # the deadline is the caller's own timeout= (T9)


class TaskDesk:
    """The session's tasks: following them, handles, cancelling. See the module
    docstring."""

    def __init__(self, session: SessionPort) -> None:
        self._s = session
        self.calls: dict[int, _Task] = {}
        # T8: calls that end with their TaskHandle once the server made a task
        # (start_task) rather than follow it.
        self.handing: set[int] = set()

    @property
    def on(self) -> bool:
        return self._s.options.tasks

    def hand(self, call_id: int) -> None:
        """T8: the call ``call_id`` ends with its ``TaskHandle`` if the server makes a
        task of it (calls that ended otherwise are forgotten here)."""
        carriers = self._s.path.carriers
        self.handing = {
            c for c in self.handing if c in carriers or c in self._s.input_desk.call_ids
        }
        self.handing.add(call_id)

    # --- declaring (T7) ------------------------------------------------------------

    def declare(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """What every 2026-07-28 request declares with tasks on: the extension."""
        if not self.on:
            return capabilities
        extensions = dict(capabilities.get("extensions") or {})
        extensions[TASKS_EXTENSION] = {}
        return {**capabilities, "extensions": extensions}

    def handshake_capabilities(self, capabilities: Mapping[str, Any]) -> dict[str, Any]:
        """What ``initialize`` declares: the 2025-11-25 ``tasks`` capability instead of
        the extension (a client that takes no tasks itself declares it empty)."""
        out = {k: v for k, v in capabilities.items() if k != "extensions"}
        if self.on:
            out["tasks"] = {}
        return out

    def task_param(self, tool: Tool, *, chosen: bool = False) -> dict[str, Any] | None:
        """2025-11-25: the ``task`` param a call carries: a task-required tool's, and
        a task-optional tool's when the host ``chosen`` a task (``start_task``, T8)."""
        support = tool.task_support
        if (
            self.on
            and self._s.era == "legacy"
            and (support == "required" or (chosen and support == "optional"))
        ):
            return {"ttl": int((self._s.options.task_timeout + _TTL_MARGIN) * 1000)}
        return None

    # --- time -------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        if not self.calls:
            return None  # no task running: the usual case, asked after every input
        times = [t.deadline for t in self.calls.values()]
        times += [t.due for t in self.calls.values() if t.due is not None]
        return min(times) if times else None

    @property
    def idle(self) -> bool:
        return not self.calls

    def handle_timer(self, now: float) -> None:
        for task in list(self.calls.values()):
            if task.call_id not in self.calls:
                continue
            if now >= task.deadline:
                budget = task.deadline - task.started
                which = "the call's timeout" if task.firm else "task_timeout"
                self._fail(
                    task,
                    CallTimeout(
                        f"task {excerpt(task.handle.task_id, 60)!r} of tool "
                        f"{excerpt(task.handle.tool, 60)!r} did not finish within "
                        f"{budget:g} s ({which})",
                        tool=task.tool.id if task.tool is not None else None,
                        budget=budget,
                    ),
                    now,
                    cancel=True,
                )
            elif task.due is not None and now >= task.due:
                self._poll(task, now)

    # --- a task is made -------------------------------------------------------------

    def created(self, pending: Pending, result: dict[str, Any], now: float) -> bool:
        """A ``tools/call`` answered with a task: follow it, or end the call with its
        ``TaskHandle`` (``start_task``, T8). False when the result is not a task or
        tasks are off (the usual reading then judges it). Raises
        ``RemoteProtocolError`` for a task answer that breaks the rules."""
        session = self._s
        if not self.on:
            return False
        if session.modern:
            if result.get("resultType") != "task":
                return False
            raw: object = result
        else:
            raw = result.get("task")
            if "task" not in (pending.base or {}) or not isinstance(raw, Mapping):
                return False
        answer = read_task(raw, expected=None, modern=session.modern)
        tool = pending.tool
        handle = sealed(
            session,
            TaskHandle(
                answer.status.task_id,
                session.options.server_name,
                tool.name if tool is not None else str((pending.base or {}).get("name")),
                session.input.endpoint,
            ),
        )
        call_id = pending.call_id
        _log.debug(
            "%s tools/call id=%d became task %r (%s)",
            session.tag,
            call_id,
            excerpt(handle.task_id, 60),
            answer.status.status,
        )
        if call_id in self.handing:
            self.handing.discard(call_id)
            session.events.append(RequestSucceeded(call_id=call_id, value=handle))
            return True
        # T9: the caller's own timeout= bounds the whole call, the task included;
        # only the client's default call deadline gives way to task_timeout.
        since = pending.started if pending.firm_budget else None
        limit = pending.budget if pending.firm_budget else None
        self.follow(call_id, handle, tool, now, timeout=limit, answer=answer, since=since)
        return True

    def follow(
        self,
        call_id: int,
        handle: TaskHandle,
        tool: Tool | None,
        now: float,
        *,
        timeout: float | None = None,
        answer: _Answer | None = None,
        since: float | None = None,
    ) -> None:
        """Follow the task ``handle`` under the host's ``call_id`` until it ends
        (T7): polls as timers, ``timeout`` (``task_timeout``) from now (T9); with
        ``since``, ``timeout`` is the caller's own and counts from then (the call's
        start: it bounds the whole call)."""
        limit = self._s.options.task_timeout if timeout is None else timeout
        started = now if since is None else since
        task = _Task(
            call_id,
            handle,
            tool,
            started + limit,
            self._s.modern,
            started=started,
            firm=since is not None,
        )
        self.calls[call_id] = task
        if answer is None or answer.status.status != "working":
            # A resumed task, or one made in another state than working (its outcome
            # or its questions are not in the answer that made it): ask at once.
            self._poll(task, now)
        else:
            self._read(task, answer, now)

    def answer(
        self, task_id: str, rounds: int, tool: Tool, extra: dict[str, Any], now: float
    ) -> int:
        """Q4, T7: a task paused for the person (``on_input="return"``) gets its
        answers (``tasks/update``), then is followed again under a new call id;
        ``task_id`` and ``rounds`` are its continuation's."""
        session = self._s
        handle = sealed(
            session,
            TaskHandle(task_id, session.options.server_name, tool.name, session.input.endpoint),
        )
        session.begin_host_request()
        call_id = session.path.new_id()
        limit = session.options.task_timeout
        task = _Task(call_id, handle, tool, now + limit, session.modern, started=now)
        task.rounds = rounds
        self.calls[call_id] = task
        self._update(task, extra, now)
        return call_id

    # --- polling ----------------------------------------------------------------------

    def _poll(self, task: _Task, now: float) -> None:
        task.due = None
        session = self._s
        task.flight = self._issue(
            task,
            TASKS_GET,
            {"taskId": task.handle.task_id},
            now,
            on_done=self._polled,
            on_failed=self._poll_failed,
            deadline=min(now + session.options.call_timeout, task.deadline),
        )

    def _issue(
        self, task: _Task, kind: RequestKind, params: dict[str, Any], now: float, **extra: Any
    ) -> Pending:
        """One request about ``task``; a call that may pause for the person (Q4)
        declares on it what its ``tools/call`` declared."""
        path, desk = self._s.path, self._s.input
        pending = path.issue(
            kind, params, now, call_id=task.call_id, tool=task.tool, context=task, **extra
        )
        if task.call_id in desk.pausing and self._s.modern:
            request_id = pending.request.id
            assert isinstance(request_id, int)
            path.declare(request_id, desk.pause_capabilities())
        return pending

    def _schedule(self, task: _Task, now: float, *, changed: bool) -> None:
        base = POLL_DEFAULT if task.interval is None else task.interval
        if changed or task.delay < base:
            task.delay = base
        else:
            task.delay = min(task.delay * _STRETCH, base * _STRETCH_CAP, POLL_MAX)
        task.due = now + task.delay

    def _polled(self, pending: Pending, value: object, now: float) -> None:
        task = self._owner(pending)
        if task is None:
            return
        task.flight = None
        task.failures = 0
        assert isinstance(value, _Answer)
        self._read(task, value, now)

    def _read(self, task: _Task, answer: _Answer, now: float) -> None:
        """One answer about the task: progress when it changed, then by its status."""
        status = answer.status
        if answer.interval is not None:
            task.interval = answer.interval  # mid-task changes are honoured
        seen = (status.status, status.message)
        changed = seen != task.seen
        if changed:
            task.seen = seen
            task.changes += 1
            self._s.events.append(
                ProgressReceived(
                    call_id=task.call_id,
                    progress=float(task.changes),
                    total=None,
                    message=status.message or status.status,
                )
            )
        state = status.status
        if state == "working":
            self._schedule(task, now, changed=changed)
        elif state == "cancelled":
            self._end(
                task,
                Cancelled(
                    f"its task {excerpt(status.task_id, 60)!r} was cancelled on the server",
                    server=self._s.options.server_name,
                ),
                now,
            )
        elif not task.modern:
            self._fetch_result(task, now)  # 2025-11-25: tasks/result has the outcome
        elif state == "completed":
            self._completed(task, answer.result, now)
        elif state == "failed":
            self._end(task, _task_failed(task, answer.error), now)
        else:
            self._input(task, answer.input_requests, now)

    def _completed(self, task: _Task, result: object, now: float) -> None:
        if not isinstance(result, dict):
            self._fail(
                task,
                RemoteProtocolError(
                    f"task {excerpt(task.handle.task_id, 60)!r} completed without a result"
                ),
                now,
                cancel=False,
            )
            return
        try:
            output = render_result(result, tool=task.tool, policy=self._s.options.policy)
        except McpError as exc:
            self._end(task, exc, now)
            return
        if output.is_error:
            tool = task.tool.id if task.tool is not None else task.handle.tool
            self._end(task, BackendError(output.text, tool=tool, output=output), now)
            return
        self._end(task, output, now)

    def _fetch_result(self, task: _Task, now: float) -> None:
        """2025-11-25: ``tasks/result`` waits for the end and carries the outcome
        (and, while the task needs input, the server's questions on its stream)."""
        task.flight = self._issue(
            task,
            TASKS_RESULT,
            {"taskId": task.handle.task_id},
            now,
            on_done=self._fetched,
            on_failed=self._poll_failed,
            on_refused=self._result_refused,
            deadline=task.deadline,
        )

    def _fetched(self, pending: Pending, value: object, now: float) -> None:
        task = self._owner(pending)
        if task is not None:
            task.flight = None
            self._completed(task, value, now)

    def _result_refused(self, pending: Pending, message: ErrorResponse, now: float) -> bool:
        task = self._owner(pending)
        if task is not None:
            task.flight = None
            error = {"code": message.code, "message": message.message}
            self._end(task, _task_failed(task, error), now)
        return True

    def _poll_failed(self, pending: Pending, error: McpError, now: float) -> None:
        task = self._owner(pending)
        if task is None:
            return
        task.flight = None
        if not isinstance(error, TransportError):
            # A malformed answer, a refusal: the server cannot be followed.
            self._fail(task, error, now, cancel=True)
            return
        task.failures += 1
        if task.failures < MAX_POLL_FAILURES and now < task.deadline:
            task.delay = min(task.delay * 2, POLL_MAX)  # backed off while it fails
            task.due = now + task.delay
            return
        shown = excerpt(task.handle.task_id, 60)
        self._fail(
            task,
            TransportError(
                f"{pending.kind.method} for task {shown!r} failed {task.failures} times "
                f"({error}); the task may still be running on the server: resume it "
                f"with its id {shown!r}"
            ),
            now,
            cancel=False,
        )

    # --- input (T7 with §15) ---------------------------------------------------------

    def _input(self, task: _Task, requests: object, now: float) -> None:
        """``input_required``: answered through the input desk; the answers go back
        with ``tasks/update``, then polling goes on (M54's bound on rounds holds)."""
        task.rounds += 1
        problem = None
        if not isinstance(requests, Mapping) or not requests:
            problem = "asks for input without inputRequests"
        elif task.rounds > MAX_INPUT_ROUNDS:
            problem = f"asked for input more than {MAX_INPUT_ROUNDS} times"
        if problem is not None:
            shown = excerpt(task.handle.task_id, 60)
            self._fail(task, RemoteProtocolError(f"task {shown!r} {problem}"), now, cancel=True)
            return
        carrier = Pending(
            kind=TASKS_GET,
            request=Request(id=-task.call_id, method="tasks/get"),
            deadline=task.deadline,
            on_done=self._polled,
            on_failed=self._input_failed,
            call_id=task.call_id,
            tool=task.tool,
            context=task,
            rounds=task.rounds,
            budget=task.deadline - task.started,
            base={"name": task.handle.tool},
            extra={"taskId": task.handle.task_id},  # a pause's continuation names the task
        )
        desk = self._s.input
        pausing = task.call_id in desk.pausing
        try:
            desk.input_round(
                carrier, requests, None, now, finish=lambda extra, at: self._update(task, extra, at)
            )
        except McpError as exc:
            self._fail(task, exc, now, cancel=True)
            return
        if pausing and task.call_id not in desk.pausing:
            # Q4: the call ended with an InputRequired; resume() answers the task.
            self.calls.pop(task.call_id, None)

    def _input_failed(self, pending: Pending, error: McpError, now: float) -> None:
        task = self._owner(pending)
        if task is not None:
            self._fail(task, error, now, cancel=True)

    def _update(self, task: _Task, extra: Mapping[str, Any], now: float) -> None:
        if self.calls.get(task.call_id) is not task:
            return
        params = {"taskId": task.handle.task_id, "inputResponses": extra.get("inputResponses", {})}
        task.flight = self._issue(
            task,
            TASKS_UPDATE,
            params,
            now,
            on_done=self._updated,
            on_failed=self._poll_failed,
            deadline=min(now + self._s.options.call_timeout, task.deadline),
        )

    def _updated(self, pending: Pending, value: object, now: float) -> None:
        task = self._owner(pending)
        if task is not None:
            task.flight = None
            task.failures = 0
            # The answers likely moved the task on: look soon (never at once: a
            # server that keeps asking costs at most MAX_INPUT_ROUNDS rounds).
            task.delay = POLL_MIN
            task.due = now + POLL_MIN

    # --- ending ----------------------------------------------------------------------

    def _owner(self, pending: Pending) -> _Task | None:
        task = pending.context
        if isinstance(task, _Task) and self.calls.get(task.call_id) is task:
            return task
        return None

    def _end(self, task: _Task, outcome: ToolOutput | McpError, now: float) -> None:
        """The task ended (or cannot be followed): its call ends with ``outcome``."""
        self._drop(task)
        call_id = task.call_id
        _log.debug(
            "%s task %r of call id=%d ended: %s",
            self._s.tag,
            excerpt(task.handle.task_id, 60),
            call_id,
            type(outcome).__name__,
        )
        if isinstance(outcome, ToolOutput):
            self._s.events.append(CallSucceeded(call_id=call_id, output=outcome))
        else:
            self._s.events.append(CallFailed(call_id=call_id, error=outcome))

    def _fail(self, task: _Task, error: McpError, now: float, *, cancel: bool) -> None:
        """The call gives up on a task that has not ended: it fails with ``error``;
        with ``cancel`` the server is told (``tasks/cancel``)."""
        if cancel:
            self._send_cancel(task.handle.task_id, now)
        self._end(task, error, now)

    def _drop(self, task: _Task) -> None:
        self.calls.pop(task.call_id, None)
        self._s.input.cancel(task.call_id)
        flight, task.flight = task.flight, None
        if flight is not None and flight.request.id in self._s.path.pending:
            self._s.abandon(flight, "the call ended")

    def _send_cancel(self, task_id: str, now: float) -> None:
        """T9: giving up on a task tells the server; a close that follows at once
        still delivers this ``tasks/cancel`` (``deliver_on_close``), within its bound."""
        self._s.path.issue(
            TASKS_CANCEL,
            {"taskId": task_id},
            now,
            on_done=_ignore,
            on_failed=_ignore,
            deadline=now + self._s.options.call_timeout,
            deliver_on_close=True,
        )

    def cancel(self, call_id: int, now: float, reason: str) -> bool:
        """K6, T7: a call following a task is abandoned: ``tasks/cancel`` is sent."""
        self.handing.discard(call_id)
        task = self.calls.get(call_id)
        if task is None:
            return False
        _log.debug("%s call id=%d abandoned its task (%s)", self._s.tag, call_id, reason)
        self._drop(task)
        self._send_cancel(task.handle.task_id, now)
        return True

    def close(self, now: float) -> None:
        """Closing: the calls following tasks end (``CallCancelled``); the tasks run
        on, unless the host asked (``cancel_tasks_on_close``): a task outlives its
        connection, and ``resume_task`` picks it up."""
        for task in list(self.calls.values()):
            self._drop(task)
            if self._s.options.cancel_tasks_on_close:
                self._send_cancel(task.handle.task_id, now)
            self._s.events.append(
                CallCancelled(call_id=task.call_id, reason="the client is closing")
            )
        self.handing.clear()


def _ignore(pending: Pending, value: object, now: float) -> None:
    return None


def _task_failed(task: _Task, error: object) -> McpError:
    """A task that failed: its error (a JSON-RPC error object) as a ``BackendError``."""
    shown = excerpt(task.handle.task_id, 60)
    if isinstance(error, Mapping):
        code, message = error.get("code"), error.get("message")
        text = f"task {shown!r} failed ({excerpt(repr(code), 20)}: " + (
            f"{excerpt(message, 300)})" if isinstance(message, str) else "no message)"
        )
    else:
        text = f"task {shown!r} failed"
        code = None
    tool = task.tool.id if task.tool is not None else task.handle.tool
    failed = BackendError(text, tool=tool)
    if type(code) is int:
        failed.rpc_code = code
    return failed


def sealed(session: SessionPort, handle: TaskHandle) -> TaskHandle:
    """``handle`` sealed with the client's seal key, when it has one (U2)."""
    keys = session.options.seal_keys
    return handle.sealed(keys[0]) if keys else handle


def task_id_of(session: SessionPort, task: object) -> tuple[str, str | None]:
    """The task id (and the tool's name, when known) a host's ``TaskHandle`` or
    bare id names; ``InvalidValue`` for anything else, or a handle of another
    server's task. With the client's seal keys (U2) only a ``TaskHandle`` whose
    seal matches one is taken (``SealBroken`` otherwise)."""
    keys = session.options.seal_keys
    if keys and not isinstance(task, TaskHandle):  # U2: a bare id carries no seal
        raise InvalidValue("a client with a seal key names a task by its sealed TaskHandle")
    if isinstance(task, TaskHandle):
        if keys:
            check_seal(task._body(), task.seal, keys, "task handle")
        if task.endpoint and task.endpoint != session.input.endpoint:
            raise InvalidValue("this task handle belongs to a task of another server")
        return task.task_id, task.tool or None
    if isinstance(task, str) and 0 < len(task) <= MAX_TASK_ID:
        return task, None
    raise InvalidValue("a task is named by its TaskHandle or its id (a non-empty string)")


def task_ask(session: SessionPort, kind: RequestKind, task: object) -> Ask:
    """The host's one request about a task (``task_status``, ``cancel_task``)."""
    task_id, _ = task_id_of(session, task)
    return Ask(kind, {"taskId": task_id})


def resume_task(
    session: SessionPort, task: object, now: float, *, timeout: float | None = None
) -> int:
    """T8: follow a task again under a new call id (see ``TaskDesk.follow``).

    Raises at once, with nothing sent: ``InvalidState`` before the session is
    ready, ``InvalidValue`` for something that names no task (or another
    server's), or a timeout that is not a positive number of seconds."""
    from ._port import SessionState, positive_seconds

    if session.state is not SessionState.READY:
        raise InvalidState(f"cannot resume a task while the session is {session.state.value!r}")
    if not session.options.tasks:
        raise InvalidState("resuming a task needs a client made with tasks=True")
    task_id, tool_name = task_id_of(session, task)
    limit = None if timeout is None else positive_seconds(timeout, "a task timeout")
    catalogue = session.tools.catalogue
    tools = catalogue.tools if catalogue is not None else ()
    tool = next((t for t in tools if t.name == tool_name), None) if tool_name else None
    server = session.options.server_name
    handle = (
        task
        if isinstance(task, TaskHandle)
        else TaskHandle(task_id, server, tool_name or "", session.input.endpoint)
    )
    session.begin_host_request()
    call_id = session.path.new_id()
    session.tasks.follow(call_id, handle, tool, now, timeout=limit)
    return call_id


for _public in (TaskStatus,):
    _public.__annotations__ = get_type_hints(_public)
    _public.__module__ = "mcpcore"
del _public
