"""The JSON-RPC side of the demo server: what each request, notification and
response does, on the sessions and streams it touches.

``JsonRpcSide`` routes a request by method to the tools (running them, or
handing them to ``_tasks``), the ``tasks/*`` methods, the resources and prompts of
``_resources``, ``initialize``, ``ping`` and ``logging/setLevel``; it sends the
server's own requests to the client and writes SSE events. ``DemoServer``
extends it; this module imports neither the server nor the HTTP side."""

from __future__ import annotations

import base64
import binascii
import logging
import secrets
from collections.abc import Callable
from typing import Any

from . import _resources, _skills
from ._context import DemoTool, ToolContext, ToolResult
from ._jsonrpc import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    encode,
    error_message,
)
from ._state import ServerState
from ._streams import EventStream, RunningCall, Session, Waiter
from ._tasks import TASKS_CAPABILITY, TaskToolContext
from ._types import (
    LATEST_PROTOCOL_VERSION,
    LOG_LEVELS,
    SUPPORTED_PROTOCOL_VERSIONS,
    JsonRpcError,
    RequestId,
)

__all__ = ["JsonRpcSide"]

logger = logging.getLogger("mcpcore_demo")

# F10: the resources, template and prompts every demo server offers
_FEATURES: dict[str, Callable[[dict[str, Any]], dict[str, Any] | tuple[int, str]]] = {
    "resources/list": _resources.list_resources,
    "resources/templates/list": _resources.list_templates,
    "resources/read": _resources.read_resource,
    "prompts/list": _resources.list_prompts,
    "prompts/get": _resources.get_prompt,
    "skills/list": _skills.list_skills,  # N4
    "resources/directory/read": _skills.read_directory,
}


class JsonRpcSide(ServerState):
    """The JSON-RPC half of ``DemoServer``, over the state ``ServerState`` declares."""

    def _end_session(self, sid: str) -> None:
        session = self._sessions.pop(sid, None)
        if session is not None:
            session.end()
            self.sessions_ended.append(sid)
            self._touch()

    def _new_stream(self, session: Session | None) -> EventStream:
        if session is not None:
            return session.new_stream()
        self._stateless_streams += 1
        return EventStream(str(self._stateless_streams), max_events=self.max_events_per_stream)

    def _start_request(
        self, session: Session | None, message: dict[str, Any]
    ) -> tuple[EventStream, Session | None]:
        """Start handling a request; returns its stream (and the new session
        for ``initialize`` in stateful mode)."""
        rid: RequestId = message["id"]
        method: str = message["method"]
        params = message.get("params", {})
        if method == "initialize":
            result = self._initialize(params)
            if isinstance(result, dict) and not self.stateless:
                session = Session(
                    secrets.token_hex(16), result["protocolVersion"], self.max_events_per_stream
                )
                self._sessions[session.id] = session
                self._touch()
            stream = self._new_stream(session if not self.stateless else None)
            self._finish_with(stream, rid, result)
            return stream, session
        stream = self._new_stream(session)
        if not isinstance(params, dict):
            self._finish_with(stream, rid, (INVALID_PARAMS, "params must be an object"))
        elif method == "ping":
            self._finish_with(stream, rid, {})
        elif method == "tools/list":
            self._finish_with(stream, rid, self._list_tools(params))
        elif method == "logging/setLevel":
            level = params.get("level")
            if level not in LOG_LEVELS:
                self._finish_with(stream, rid, (INVALID_PARAMS, "unknown log level"))
            else:
                if session is not None:
                    session.log_level = level
                self._finish_with(stream, rid, {})
        elif method == "tools/call":
            self._call_tool(session, stream, rid, params)
        elif method == "tasks/get":
            self._finish_with(stream, rid, self._tasks.get(params))
        elif method == "tasks/list":
            self._finish_with(stream, rid, self._tasks.list_tasks(params))
        elif method == "tasks/cancel":
            self._finish_with(stream, rid, self._tasks.cancel(params))
            self._touch()
        elif method == "tasks/result":
            assert self._tg is not None
            self._tg.start_soon(self._task_result, stream, rid, params)
        elif method in _FEATURES:
            self._finish_with(stream, rid, _FEATURES[method](params))
        else:
            self._finish_with(stream, rid, (METHOD_NOT_FOUND, f"Method not found: {method}"))
        return stream, None

    async def _task_result(
        self, stream: EventStream, rid: RequestId, params: dict[str, Any]
    ) -> None:
        self._finish_with(stream, rid, await self._tasks.result(params))

    def _finish_with(
        self, stream: EventStream, rid: RequestId, outcome: dict[str, Any] | tuple[int, str]
    ) -> None:
        if isinstance(outcome, tuple):
            stream.append(error_message(rid, *outcome))
        else:
            stream.append({"jsonrpc": "2.0", "id": rid, "result": outcome})
        stream.finish()

    def _initialize(self, params: Any) -> dict[str, Any] | tuple[int, str]:
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            return (INVALID_PARAMS, "initialize needs params.protocolVersion")
        requested = params["protocolVersion"]
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": True},
                "logging": {},
                "resources": {},
                "prompts": {},
            },
            "serverInfo": dict(self.server_info),
        }
        if version >= "2025-11-25":  # tasks came with that revision
            result["capabilities"]["tasks"] = dict(TASKS_CAPABILITY)
            # N4: the skills extension (SEP-2640), under the extensions of that revision
            result["capabilities"]["extensions"] = {_skills.EXTENSION: dict(_skills.SETTINGS)}
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def _list_tools(self, params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
        tools = [dict(tool.definition) for tool in self._tools.values()]
        if self.page_size is None:
            return {"tools": tools}
        start = 0
        cursor = params.get("cursor")
        if cursor is not None:
            try:
                kind, _, offset = base64.urlsafe_b64decode(str(cursor)).decode().partition(":")
                start = int(offset)
                if kind != "tools" or not 0 <= start <= len(tools):
                    raise ValueError(cursor)
            except (ValueError, binascii.Error, UnicodeDecodeError):
                return (INVALID_PARAMS, "Invalid cursor")
        end = start + self.page_size
        result: dict[str, Any] = {"tools": tools[start:end]}
        if end < len(tools):
            result["nextCursor"] = base64.urlsafe_b64encode(f"tools:{end}".encode()).decode()
        return result

    def _call_tool(
        self, session: Session | None, stream: EventStream, rid: RequestId, params: dict[str, Any]
    ) -> None:
        name = params.get("name")
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self._finish_with(stream, rid, (INVALID_PARAMS, f"Unknown tool: {name}"))
            return
        arguments = params.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            self._finish_with(stream, rid, (INVALID_PARAMS, "arguments must be an object"))
            return
        refusal = self._tasks.refusal(tool, params)
        if refusal is not None:
            self._finish_with(stream, rid, refusal)
            return
        assert self._tg is not None
        if "task" in params:
            task = self._tasks.create(tool, params)
            ctx: ToolContext = TaskToolContext(self, rid, params, stream, session, task)
            self._tg.start_soon(self._tasks.run, task, tool.handler, arguments, ctx, self._touch)
            self._finish_with(stream, rid, {"task": task.snapshot()})
            self._touch()
            return
        running = RunningCall(rid, stream, session)
        if session is not None:
            session.running[rid] = running
        else:
            self._stateless_running.append(running)
        ctx = ToolContext(self, rid, params, stream, session)
        self._tg.start_soon(self._run_tool, tool, arguments, ctx, running)

    async def _run_tool(
        self, tool: DemoTool, arguments: dict[str, Any], ctx: ToolContext, running: RunningCall
    ) -> None:
        rid, stream = running.rid, running.stream
        message: dict[str, Any] | None = None
        try:
            with running.scope:
                try:
                    result: ToolResult = await tool.handler(arguments, ctx)
                    if isinstance(result, str):
                        result = {"content": [{"type": "text", "text": result}]}
                    message = {"jsonrpc": "2.0", "id": rid, "result": result}
                    encode(message)
                except JsonRpcError as exc:
                    message = {"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}
                except Exception as exc:
                    logger.debug("demo tool %s raised", tool.name, exc_info=True)
                    text = f"{tool.name} raised {type(exc).__name__}: {exc}"
                    message = {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"content": [{"type": "text", "text": text}], "isError": True},
                    }
            if message is not None:
                stream.append(message)
            elif running.reason == "client":
                self.interrupted.append(rid)
                if self.respond_to_cancelled:
                    stream.append(error_message(rid, REQUEST_CANCELLED, "Request cancelled"))
            stream.finish()
        finally:
            if running.session is not None:
                running.session.running.pop(rid, None)
            elif running in self._stateless_running:
                self._stateless_running.remove(running)
            self._touch()

    def _handle_notification(self, session: Session | None, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/initialized" and session is not None:
            session.initialized = True
        elif method == "notifications/cancelled":
            rid = params.get("requestId")
            reason = params.get("reason")
            if not isinstance(rid, (str, int)) or isinstance(rid, bool):
                return
            self.cancelled.append((rid, reason if isinstance(reason, str) else None))
            if session is not None:
                candidates = [session.running[rid]] if rid in session.running else []
            else:
                candidates = [r for r in self._stateless_running if r.rid == rid]
            for running in candidates:
                running.reason = running.reason or "client"
                running.scope.cancel()
            self._touch()

    def _handle_client_response(self, message: dict[str, Any]) -> None:
        waiter = self._waiters.pop(message["id"], None)
        if waiter is not None:
            waiter.message = message
            waiter.event.set()

    async def _client_request(
        self, stream: EventStream, method: str, params: dict[str, Any] | None
    ) -> Any:
        self._request_counter += 1
        rid = f"demo-{self._request_counter}"
        waiter = Waiter()
        self._waiters[rid] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            stream.append(message)
            await waiter.event.wait()
        finally:
            self._waiters.pop(rid, None)
        answer = waiter.message or {}
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise JsonRpcError(int(error.get("code", 0)), str(error.get("message", "")))
        return answer.get("result")

    # --------------------------------------------------------------- SSE text

    def _sse_event(self, event_id: str | None, message: dict[str, Any] | None) -> bytes:
        nl = self.sse_newline
        lines = []
        if event_id is not None and self.event_ids:
            lines.append(f"id: {event_id}")
        if message is None and self.retry_ms is not None:
            lines.append(f"retry: {self.retry_ms}")
        if message is not None and self.sse_event_name is not None:
            lines.append(f"event: {self.sse_event_name}")
        lines.append("data: " + (encode(message).decode() if message is not None else ""))
        return (nl.join(lines) + nl + nl).encode()
