"""Tasks of the demo server: the experimental tasks of MCP 2025-11-25.

A ``tools/call`` whose params carry ``task`` (for a tool whose
``execution.taskSupport`` is ``optional`` or ``required``) is answered at once
with ``{"task": {...}}``; the tool then runs in the background, and its
progress becomes the task's ``statusMessage``. ``tasks/get`` returns the task,
``tasks/result`` waits until it is terminal and returns the tool's result,
``tasks/cancel`` stops it, ``tasks/list`` lists them. Tasks belong to the
server, not to a session, so a new client can pick one up by its id.

This module owns the task records, those four methods and the context of a
tool running as a task; the server routes requests here and starts the
background work in its task group.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ._context import ToolContext, ToolResult, ToolServer
from ._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND
from ._streams import EventStream, Session
from ._types import JsonRpcError, RequestId

if TYPE_CHECKING:
    from ._context import DemoTool

__all__ = ["TASKS_CAPABILITY", "DemoTask", "TaskBook", "TaskToolContext", "task_support"]

TERMINAL = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK = "io.modelcontextprotocol/related-task"
# The capability the server declares in the 2025-11-25 handshake.
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def task_support(tool: DemoTool) -> str:
    """The tool's ``execution.taskSupport`` (``forbidden`` when absent or unknown)."""
    execution = tool.definition.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, dict) else None
    return support if support in ("optional", "required") else "forbidden"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class DemoTask:
    """One task as the server keeps it (read it from tests as ``server.tasks[task_id]``)."""

    task_id: str
    tool: str
    ttl: int | None
    poll_interval: int
    created_at: str = field(default_factory=_now)
    last_updated_at: str = ""
    status: str = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope, repr=False)
    finished: anyio.Event = field(default_factory=anyio.Event, repr=False)

    def __post_init__(self) -> None:
        self.last_updated_at = self.created_at

    def snapshot(self) -> dict[str, Any]:
        """The wire ``Task`` object."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "ttl": self.ttl,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "pollInterval": self.poll_interval,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def update(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return
        self.status = status
        if message is not None:
            self.status_message = message
        self.last_updated_at = _now()
        if status in TERMINAL:
            self.finished.set()


class TaskBook:
    """The server's tasks (at most ``max_tasks``; the oldest finished ones are
    forgotten first) and the ``tasks/*`` methods."""

    def __init__(self, poll_interval_ms: int, max_tasks: int = 1000) -> None:
        self.poll_interval_ms = poll_interval_ms
        self.max_tasks = max_tasks
        self.tasks: dict[str, DemoTask] = {}
        self.cancelled: list[str] = []

    # -- tools/call

    def refusal(self, tool: DemoTool, params: dict[str, Any]) -> tuple[int, str] | None:
        """Why this call cannot run as asked (the error to answer), if it cannot."""
        support = task_support(tool)
        if "task" not in params:
            if support == "required":
                return (METHOD_NOT_FOUND, f"Tool {tool.name} must be called as a task")
            return None
        if not isinstance(params["task"], dict):
            return (INVALID_PARAMS, "params.task must be an object")
        if support == "forbidden":
            return (METHOD_NOT_FOUND, f"Tool {tool.name} cannot be called as a task")
        ttl = params["task"].get("ttl")
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0):
            return (INVALID_PARAMS, "params.task.ttl must be a non-negative integer")
        return None

    def create(self, tool: DemoTool, params: dict[str, Any]) -> DemoTask:
        ttl = params["task"].get("ttl")
        task = DemoTask(secrets.token_hex(16), tool.name, ttl, self.poll_interval_ms)
        self.tasks[task.task_id] = task
        if len(self.tasks) > self.max_tasks:
            for old in [t for t in self.tasks.values() if t.status in TERMINAL]:
                if len(self.tasks) <= self.max_tasks:
                    break
                del self.tasks[old.task_id]
        return task

    async def run(
        self,
        task: DemoTask,
        handler: Callable[[dict[str, Any], ToolContext], Any],
        arguments: dict[str, Any],
        ctx: ToolContext,
        touch: Callable[[], None],
    ) -> None:
        """Run the tool for ``task``: its result completes the task, an ``isError``
        result or a ``JsonRpcError`` fails it; a cancel leaves it cancelled."""
        try:
            with task.scope:
                try:
                    result: ToolResult = await handler(arguments, ctx)
                    if isinstance(result, str):
                        result = {"content": [{"type": "text", "text": result}]}
                    task.result = result
                    task.update("failed" if result.get("isError") is True else "completed")
                except JsonRpcError as exc:
                    task.error = exc.to_error()
                    task.update("failed", exc.message)
                except Exception as exc:
                    text = f"{task.tool} raised {type(exc).__name__}: {exc}"
                    task.result = {"content": [{"type": "text", "text": text}], "isError": True}
                    task.update("failed", text)
        finally:
            touch()

    # -- tasks/*

    def _find(self, params: dict[str, Any]) -> DemoTask | tuple[int, str]:
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            return (INVALID_PARAMS, "params.taskId must be a string")
        task = self.tasks.get(task_id)
        if task is None:
            return (INVALID_PARAMS, f"Task not found: {task_id}")
        return task

    def get(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        task = self._find(params)
        return task if isinstance(task, tuple) else task.snapshot()

    def list_tasks(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        return {"tasks": [task.snapshot() for task in self.tasks.values()]}

    def cancel(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        task = self._find(params)
        if isinstance(task, tuple):
            return task
        if task.status in TERMINAL:
            return (INVALID_PARAMS, f"Cannot cancel a task that is {task.status}")
        task.update("cancelled", "cancelled by the client")
        task.scope.cancel()
        self.cancelled.append(task.task_id)
        return task.snapshot()

    async def result(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        """``tasks/result``: wait until the task is terminal, then its outcome."""
        task = self._find(params)
        if isinstance(task, tuple):
            return task
        await task.finished.wait()
        related = {RELATED_TASK: {"taskId": task.task_id}}
        if task.status == "cancelled":
            return (INTERNAL_ERROR, f"Task {task.task_id} was cancelled")
        if task.error is not None:
            return (int(task.error.get("code", INTERNAL_ERROR)), str(task.error.get("message", "")))
        result = dict(task.result or {})
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), **related}
        return result


class TaskToolContext(ToolContext):
    """A tool running as a task: its progress becomes the task's status message;
    nothing reaches the client but through ``tasks/get`` and ``tasks/result``."""

    def __init__(
        self,
        server: ToolServer,
        request_id: RequestId,
        params: dict[str, Any],
        stream: EventStream,
        session: Session | None,
        task: DemoTask,
    ) -> None:
        super().__init__(server, request_id, params, stream, session)
        self.task = task

    @property
    def can_stream(self) -> bool:
        return False

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        shown = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self.task.update("working", message or shown)
        self.server._touch()
        await anyio.lowlevel.checkpoint()
