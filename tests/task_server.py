"""A scripted 2026-07-28 server on loopback that runs tools as tasks (T7–T9 driver tests).

Standard library only (``http.server`` in threads), JSON answers. ``build``
requires a task (``execution.taskSupport: "required"``) and is refused with
-32021 to a request that does not declare the tasks extension, as SEP-2663
servers do. Its arguments script the task:

* ``steps``: ``tasks/get`` answers ``working`` (``step i/n``) this many times;
* ``ask``: then ``input_required`` with one form question, until ``tasks/update``;
* ``outcome``: ``"done"`` (default), ``"fail"``, or a bad answer to play:
  ``"bad-id"`` (a task id that is not a string, at creation), ``"bad-status"``,
  ``"other-task"`` (a result for another task), ``"stall"`` (polls are never
  answered);
* ``interval``: the ``pollIntervalMs`` to advertise (default 20).

Every ``tasks/*`` request must carry ``Mcp-Name`` naming its task; anything
wrong is put in ``problems``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
QUESTION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Ship it?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
    },
}
TOOLS = [
    {"name": "echo", "description": "echo", "inputSchema": {"type": "object"}},
    {
        "name": "build",
        "description": "a long build",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "required"},
    },
]


@dataclass
class _Task:
    arguments: dict[str, Any]
    polls: int = 0
    answer: dict[str, Any] | None = None
    cancelled: bool = False


@dataclass
class TaskServerState:
    tasks: dict[str, _Task] = field(default_factory=dict)
    cancelled: list[str] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)  # every message, as sent
    # M67: declare tools.listChanged, and acknowledge each subscriptions/listen, then
    # end its stream at once (no result: a broken stream); when each one came
    flaky_listen: bool = False
    listens: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, message: dict[str, Any], headers: Any) -> dict[str, Any] | None:
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        with self.lock:
            self.methods.append(str(method))
            self.received.append(message)
        declared = TASKS in ((meta.get("io.modelcontextprotocol/clientCapabilities") or {}).get("extensions") or {})
        if rid is None:
            return None
        if method == "server/discover":
            return _ok(
                rid,
                {
                    "supportedVersions": [V],
                    "capabilities": {
                        "tools": {"listChanged": True} if self.flaky_listen else {},
                        "extensions": {TASKS: {}},
                    },
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks", "version": "1"}},
                },
            )
        if method == "tools/list":
            return _ok(rid, {"tools": TOOLS})
        if method == "tools/call":
            return self._call(rid, params, declared)
        if isinstance(method, str) and method.startswith("tasks/"):
            task_id = params.get("taskId")
            if headers.get("mcp-name") != task_id:
                self.problems.append(f"{method} without Mcp-Name naming {task_id!r}")
            if not declared:
                self.problems.append(f"{method} without the tasks extension declared")
            task = self.tasks.get(task_id) if isinstance(task_id, str) else None
            if task is None:
                return _error(rid, -32602, f"Task {task_id} not found")
            if method == "tasks/get":
                return self._get(rid, task_id, task)
            if method == "tasks/update":
                self.updates.append(params)
                task.answer = params.get("inputResponses")
                return _ok(rid, {})
            if method == "tasks/cancel":
                task.cancelled = True
                self.cancelled.append(task_id)
                return _ok(rid, {})
        return _error(rid, -32601, "no such method")

    def _call(self, rid: Any, params: dict[str, Any], declared: bool) -> dict[str, Any]:
        arguments = params.get("arguments") or {}
        if params.get("name") == "echo":
            return _ok(rid, {"content": [{"type": "text", "text": json.dumps(arguments)}]})
        if not declared:
            return _error(rid, -32021, "build must run as a task: declare io.modelcontextprotocol/tasks")
        task_id = f"task-{next(self.ids)}"
        self.tasks[task_id] = _Task(arguments)
        shown: object = 42 if arguments.get("outcome") == "bad-id" else task_id
        return _ok(
            rid,
            {
                "resultType": "task",
                "taskId": shown,
                "status": "working",
                "pollIntervalMs": arguments.get("interval", 20),
                "ttlMs": 60_000,
            },
        )

    def _get(self, rid: Any, task_id: str, task: _Task) -> dict[str, Any] | None:
        arguments = task.arguments
        outcome = arguments.get("outcome", "done")
        if outcome == "stall":
            self.stop.wait(10)
            return None
        task.polls += 1
        steps = int(arguments.get("steps", 1))
        base: dict[str, Any] = {"taskId": task_id, "pollIntervalMs": arguments.get("interval", 20)}
        if task.cancelled:
            return _ok(rid, {**base, "status": "cancelled"})
        if task.polls <= steps:
            return _ok(rid, {**base, "status": "working", "statusMessage": f"step {task.polls}/{steps}"})
        if arguments.get("ask") and task.answer is None:
            return _ok(rid, {**base, "status": "input_required", "inputRequests": {"ship": QUESTION}})
        if outcome == "fail":
            error = {"code": -32603, "message": "the build broke"}
            return _ok(rid, {**base, "status": "failed", "error": error})
        if outcome == "bad-status":
            return _ok(rid, {**base, "status": "paused"})
        if outcome == "other-task":
            base["taskId"] = "task-999"
        text = f"built {arguments.get('target', 'all')}"
        if task.answer is not None:
            text += f" ({json.dumps(task.answer, sort_keys=True)})"
        return _ok(rid, {**base, "status": "completed", "result": {"content": [{"type": "text", "text": text}]}})


def _ok(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **result}}


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


@contextlib.contextmanager
def task_server() -> Iterator[tuple[str, TaskServerState]]:
    """The server on a free loopback port: yields its URL and its state."""
    state = TaskServerState()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            self._send(405, b"")

        def do_DELETE(self) -> None:
            self._send(405, b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            try:
                message = json.loads(body)
            except ValueError:
                self._send(400, b"")
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            if state.flaky_listen and message.get("method") == "subscriptions/listen":
                state.listens.append(time.monotonic())
                ack = {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": message["params"]["notifications"]},
                }
                self._send(200, f"data: {json.dumps(ack)}\n\n".encode(), b"text/event-stream")
                return
            reply = state.answer(message, headers)
            if reply is None:
                self._send(202, b"")
                return
            self._send(200, json.dumps(reply).encode(), b"application/json")

        def _send(self, status: int, body: bytes, kind: bytes = b"text/plain") -> None:
            self.send_response(status)
            self.send_header("content-type", kind.decode())
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="task-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
