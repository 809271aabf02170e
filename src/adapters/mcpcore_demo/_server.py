"""A small MCP Streamable HTTP server (revision 2025-11-25, with its experimental tasks)
on h11 and anyio."""

from __future__ import annotations

import base64
import binascii
import http
import json
import logging
import secrets
import threading
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, Literal, NoReturn
from urllib.parse import urlsplit

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import h11

from . import _resources
from ._tasks import TASKS_CAPABILITY, DemoTask, TaskBook
from ._tools import LOG_LEVELS, default_tools
from ._types import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    Body,
    DemoTool,
    FaultHook,
    FaultResponse,
    JsonRpcError,
    ReceivedRequest,
    RequestId,
    ToolResult,
)

__all__ = ["DemoServer", "RunningServer", "ToolContext"]

logger = logging.getLogger("mcpcore_demo")

_TRANSPORT_ERRORS = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    OSError,
)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
# F10: the resources, template and prompts every demo server offers
_FEATURES: dict[str, Callable[[dict[str, Any]], dict[str, Any] | tuple[int, str]]] = {
    "resources/list": _resources.list_resources,
    "resources/templates/list": _resources.list_templates,
    "resources/read": _resources.read_resource,
    "prompts/list": _resources.list_prompts,
    "prompts/get": _resources.get_prompt,
}
INVALID_PARAMS = -32602
REQUEST_CANCELLED = -32800

ToolSpec = DemoTool | tuple[dict[str, Any], Any]


class _ClientGone(Exception):
    """The peer closed the connection or it broke."""


def _encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"invalid JSON constant {value}")


def _parse_json(body: bytes) -> tuple[bool, Any]:
    try:
        return True, json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def _error_message(rid: RequestId | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _media_types(value: str) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()}


def _accepts(accept: str, media_type: str) -> bool:
    types = _media_types(accept)
    major = media_type.split("/", 1)[0]
    return bool(types & {media_type, f"{major}/*", "*/*"})


def _valid_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


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


class ToolContext:
    """What a tool handler gets besides its arguments."""

    def __init__(
        self,
        server: DemoServer,
        request_id: RequestId,
        params: dict[str, Any],
        stream: _EventStream,
        session: _Session | None,
    ) -> None:
        self.server = server
        self.request_id = request_id
        self.params = params
        self._stream = stream
        self._session = session
        meta = params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}

    @property
    def session_id(self) -> str | None:
        return self._session.id if self._session is not None else None

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if _valid_id(token) else None

    @property
    def can_stream(self) -> bool:
        """Whether messages before the result reach the client (SSE mode)."""
        return not self.server.json_response

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification on this request's stream (dropped in JSON mode)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if self.can_stream:
            self._stream.append(message)
        else:
            self.server.dropped.append(message)
        await anyio.lowlevel.checkpoint()

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the request carried a progress token."""
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger_name: str | None = "mcpcore-demo") -> None:
        """Send ``notifications/message`` unless the session's level filters it."""
        minimum = self._session.log_level if self._session is not None else None
        if minimum is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(minimum):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await self.notify("notifications/message", params)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the client on this request's stream and wait for the
        answer (the client POSTs it back). Returns the result; raises
        ``JsonRpcError`` for an error answer. SSE mode only."""
        if not self.can_stream:
            raise RuntimeError("server-to-client requests need SSE mode")
        return await self.server._client_request(self._stream, method, params)


class _TaskToolContext(ToolContext):
    """A tool running as a task: its progress becomes the task's status message;
    nothing reaches the client but through ``tasks/get`` and ``tasks/result``."""

    def __init__(
        self,
        server: DemoServer,
        request_id: RequestId,
        params: dict[str, Any],
        stream: _EventStream,
        session: _Session | None,
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


@dataclass(frozen=True)
class RunningServer:
    """A listening demo server: ``url`` is the MCP endpoint."""

    url: str
    host: str
    port: int
    server: DemoServer


class _Waiter:
    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: dict[str, Any] | None = None


class DemoServer:
    """A configurable MCP Streamable HTTP server (revision 2025-11-25).

    Wire options:

    - ``path``: the one endpoint (default ``"/mcp"``); other paths get 404.
    - ``json_response``: answer every request with ``application/json``
      instead of a ``text/event-stream`` (progress/log notifications are then
      dropped and recorded in ``dropped``).
    - ``stateless``: no ``Mcp-Session-Id`` at all; ``GET``/``DELETE`` get 405.
    - ``tools``: replace the default tools with ``DemoTool`` objects or
      ``(definition_dict, handler)`` pairs; ``page_size`` paginates
      ``tools/list`` with an opaque ``nextCursor``.
    - ``fault``: ``FaultHook`` called for every HTTP request (after it is
      recorded); a returned ``FaultResponse`` replaces normal handling.

    SSE options: ``priming`` (an ``id`` + empty ``data`` event first on each
    POST stream; default on when stateful), ``event_ids`` (``id: <stream>-<n>``
    on every event), ``retry_ms`` (``retry:`` in the priming event and before a
    deliberate close), ``keepalive`` (seconds of idleness before a
    ``: keepalive`` comment), ``sse_newline`` (``"\\n"``, ``"\\r\\n"`` or
    ``"\\r"``), ``sse_event_name`` (adds ``event: <name>``),
    ``close_after_priming`` (end each ``tools/call`` stream right after the
    priming event: the 2025-11-25 polling pattern; the client resumes with
    ``GET`` + ``Last-Event-ID``), ``close_after_events`` (end ``tools/call``
    and resumed streams after that many events), ``respond_to_cancelled``
    (answer a cancelled call with error -32800, as the official Python SDK
    server does; else end its stream without a response).

    Checks: ``require_accept`` (POST must accept both JSON and SSE, else 406),
    ``allowed_origins`` (a present ``Origin`` must be loopback or listed, else
    403), ``max_body_size`` (413 beyond it), ``max_events_per_stream`` (the
    per-stream replay buffer).

    Recorded (read them from tests): ``received`` (every ``ReceivedRequest``),
    ``cancelled`` (``(request_id, reason)`` per ``notifications/cancelled``),
    ``interrupted`` (ids of handlers actually stopped by a cancellation),
    ``dropped``, ``connections_opened``, ``open_connections``,
    ``sessions_ended``, ``session_ids``; wait on them with ``wait_until`` /
    ``wait_until_blocking``. Set ``record=False`` for long-running servers.

    Tasks (the experimental tasks of 2025-11-25, see ``_tasks``): a tool whose
    definition has ``execution.taskSupport`` ``optional`` or ``required`` runs as
    a task when the call carries ``task``; ``task_poll_interval_ms`` is the
    ``pollInterval`` the tasks advertise. ``tasks`` (by id) and
    ``cancelled_tasks`` record them.

    Control (thread-safe): ``set_tools``, ``notify_tools_changed``,
    ``expire_sessions``.
    """

    def __init__(
        self,
        *,
        path: str = "/mcp",
        json_response: bool = False,
        stateless: bool = False,
        tools: Iterable[ToolSpec] | None = None,
        page_size: int | None = None,
        fault: FaultHook | None = None,
        priming: bool | None = None,
        event_ids: bool = True,
        retry_ms: int | None = None,
        keepalive: float | None = None,
        sse_newline: str = "\n",
        sse_event_name: str | None = None,
        close_after_priming: bool = False,
        close_after_events: int | None = None,
        respond_to_cancelled: bool = True,
        require_accept: bool = True,
        allowed_origins: Iterable[str] | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        max_events_per_stream: int = 1000,
        server_name: str = "mcpcore-demo",
        server_version: str = "0.1.0",
        instructions: str | None = None,
        task_poll_interval_ms: int = 200,
        record: bool = True,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        if sse_newline not in ("\n", "\r\n", "\r"):
            raise ValueError("sse_newline must be '\\n', '\\r\\n' or '\\r'")
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be positive")
        if close_after_events is not None and close_after_events < 1:
            raise ValueError("close_after_events must be positive")
        self.path = path
        self.json_response = json_response
        self.stateless = stateless
        self.page_size = page_size
        self.fault = fault
        self.priming = (not stateless) if priming is None else priming
        self.event_ids = event_ids
        self.retry_ms = retry_ms
        self.keepalive = keepalive
        self.sse_newline = sse_newline
        self.sse_event_name = sse_event_name
        self.close_after_priming = close_after_priming
        self.close_after_events = close_after_events
        self.respond_to_cancelled = respond_to_cancelled
        self.require_accept = require_accept
        self.allowed_origins = frozenset(allowed_origins) if allowed_origins is not None else None
        self.max_body_size = max_body_size
        self.max_events_per_stream = max_events_per_stream
        self.server_info = {"name": server_name, "version": server_version}
        self.instructions = instructions
        self.record = record

        self._tools: dict[str, DemoTool] = {}
        self._install_tools(default_tools() if tools is None else tools)
        self._tasks = TaskBook(task_poll_interval_ms)

        # Observability.
        self.received: list[ReceivedRequest] = []
        self.cancelled: list[tuple[RequestId, str | None]] = []
        self.interrupted: list[RequestId] = []
        self.dropped: list[dict[str, Any]] = []
        self.connections_opened = 0
        self.open_connections = 0
        self.sessions_ended: list[str] = []

        self._sessions: dict[str, _Session] = {}
        self._stateless_running: list[_Running] = []
        self._stateless_streams = 0
        self._waiters: dict[RequestId, _Waiter] = {}
        self._request_counter = 0
        self._tg: anyio.abc.TaskGroup | None = None
        self._token: Any = None
        self._loop_thread: int | None = None
        self._activity: anyio.Event | None = None
        self._cond = threading.Condition()

    # ----------------------------------------------------------------- tools

    def _install_tools(self, tools: Iterable[ToolSpec]) -> None:
        installed: dict[str, DemoTool] = {}
        for spec in tools:
            tool = spec if isinstance(spec, DemoTool) else DemoTool(spec[0], spec[1])
            if not isinstance(tool.definition.get("name"), str):
                raise ValueError("every tool definition needs a string 'name'")
            installed[tool.name] = tool
        self._tools = installed

    @property
    def tools(self) -> list[DemoTool]:
        return list(self._tools.values())

    def set_tools(self, tools: Iterable[ToolSpec], *, notify: bool = True) -> None:
        """Replace the tool set; by default send ``tools/list_changed`` to every session."""
        self._install_tools(tools)
        if notify:
            self.notify_tools_changed()

    def notify_tools_changed(self) -> int:
        """Queue ``notifications/tools/list_changed`` on every session's GET stream
        (delivered now if open, else when the client opens it). Thread-safe.
        Returns the number of sessions notified."""
        return int(self._in_loop(self._notify_tools_changed))

    def _notify_tools_changed(self) -> int:
        message = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        for session in self._sessions.values():
            session.standalone.append(dict(message))
        return len(self._sessions)

    @property
    def tasks(self) -> dict[str, DemoTask]:
        """The tasks created so far, by task id."""
        return self._tasks.tasks

    @property
    def cancelled_tasks(self) -> list[str]:
        """The ids of the tasks that ``tasks/cancel`` stopped, in order."""
        return self._tasks.cancelled

    # -------------------------------------------------------------- sessions

    @property
    def session_ids(self) -> list[str]:
        return list(self._sessions)

    def expire_sessions(self) -> int:
        """Forget every session (later use gets 404), as if they expired. Thread-safe."""
        return int(self._in_loop(self._expire_sessions))

    def _expire_sessions(self) -> int:
        count = len(self._sessions)
        for sid in list(self._sessions):
            self._end_session(sid)
        return count

    def _end_session(self, sid: str) -> None:
        session = self._sessions.pop(sid, None)
        if session is not None:
            session.end()
            self.sessions_ended.append(sid)
            self._touch()

    def get_stream_open(self, session_id: str | None = None) -> bool:
        """Whether a GET stream is attached (for ``session_id``, or for any session)."""
        sessions = (
            list(self._sessions.values())
            if session_id is None
            else [s for s in [self._sessions.get(session_id)] if s is not None]
        )
        return any(s.standalone.attached for s in sessions)

    # --------------------------------------------------------- observability

    def _touch(self) -> None:
        if self._activity is not None:
            self._activity.set()
            self._activity = anyio.Event()
        with self._cond:
            self._cond.notify_all()

    async def wait_until(self, predicate: Callable[[], object], timeout: float = 5.0) -> None:
        """Wait (in the server's event loop) until ``predicate()`` is true; it is
        re-checked whenever the server records something. Raises TimeoutError."""
        with anyio.fail_after(timeout):
            while not predicate():
                if self._activity is None:
                    await anyio.sleep(0.01)
                    continue
                activity = self._activity
                with anyio.move_on_after(0.25):
                    await activity.wait()

    def wait_until_blocking(self, predicate: Callable[[], object], timeout: float = 5.0) -> None:
        """``wait_until`` for threaded code (e.g. with ``serve_in_thread``)."""
        with self._cond:
            if not self._cond.wait_for(lambda: bool(predicate()), timeout):
                raise TimeoutError("condition not met in time")

    def requests_for(self, rpc_method: str) -> list[ReceivedRequest]:
        """The recorded requests whose JSON-RPC method is ``rpc_method``."""
        return [r for r in self.received if r.rpc_method == rpc_method]

    def _in_loop(self, func: Callable[[], Any]) -> Any:
        if self._token is None or threading.get_ident() == self._loop_thread:
            return func()
        return anyio.from_thread.run_sync(func, token=self._token)

    # --------------------------------------------------------------- serving

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[RunningServer]:
        """Listen on ``host:port`` (0 = a free port) for the duration of the block."""
        if self._tg is not None:
            raise RuntimeError("this DemoServer is already serving")
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        body_error: BaseException | None = None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._token = anyio.lowlevel.current_token()
                self._loop_thread = threading.get_ident()
                self._activity = anyio.Event()
                tg.start_soon(self._accept, listener, tg)
                bound = listener.extra(anyio.abc.SocketAttribute.local_port)
                netloc = f"[{host}]" if ":" in host else host
                running = RunningServer(f"http://{netloc}:{bound}{self.path}", host, bound, self)
                try:
                    yield running
                except anyio.get_cancelled_exc_class():
                    raise
                except BaseException as exc:
                    body_error = exc
                finally:
                    tg.cancel_scope.cancel()
        finally:
            await anyio.aclose_forcefully(listener)
            for session in self._sessions.values():
                session.end()
            self._sessions.clear()
            self._stateless_running.clear()
            self._waiters.clear()
            self._tg = None
            self._token = None
            self._loop_thread = None
            self._activity = None
        if body_error is not None:
            raise body_error

    @contextmanager
    def serve_in_thread(
        self, host: str = "127.0.0.1", port: int = 0, *, backend: str = "asyncio"
    ) -> Iterator[RunningServer]:
        """Blocking variant of ``serve``: runs the server's event loop in a
        background thread; returns once listening; stops and joins on exit."""
        with (
            anyio.from_thread.start_blocking_portal(backend, name="mcpcore-demo") as portal,
            portal.wrap_async_context_manager(self.serve(host, port)) as running,
        ):
            yield running

    async def _accept(self, listener: anyio.abc.Listener[Any], tg: anyio.abc.TaskGroup) -> None:
        await listener.serve(self._on_connection, task_group=tg)

    async def _on_connection(self, stream: anyio.abc.ByteStream) -> None:
        self.connections_opened += 1
        self.open_connections += 1
        number = self.connections_opened
        self._touch()
        try:
            await _Connection(self, stream, number).run()
        except _TRANSPORT_ERRORS:
            pass
        except Exception:  # never let one connection take the server down
            logger.exception("demo server: error on connection %d", number)
        finally:
            try:
                await anyio.aclose_forcefully(stream)
            finally:  # counted as open until it is closed
                self.open_connections -= 1
                self._touch()

    # --------------------------------------------------------- JSON-RPC side

    def _new_stream(self, session: _Session | None) -> _EventStream:
        if session is not None:
            return session.new_stream()
        self._stateless_streams += 1
        return _EventStream(str(self._stateless_streams), max_events=self.max_events_per_stream)

    def _start_request(
        self, session: _Session | None, message: dict[str, Any]
    ) -> tuple[_EventStream, _Session | None]:
        """Start handling a request; returns its stream (and the new session
        for ``initialize`` in stateful mode)."""
        rid: RequestId = message["id"]
        method: str = message["method"]
        params = message.get("params", {})
        if method == "initialize":
            result = self._initialize(params)
            if isinstance(result, dict) and not self.stateless:
                session = _Session(
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
        self, stream: _EventStream, rid: RequestId, params: dict[str, Any]
    ) -> None:
        self._finish_with(stream, rid, await self._tasks.result(params))

    def _finish_with(
        self, stream: _EventStream, rid: RequestId, outcome: dict[str, Any] | tuple[int, str]
    ) -> None:
        if isinstance(outcome, tuple):
            stream.append(_error_message(rid, *outcome))
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
        self, session: _Session | None, stream: _EventStream, rid: RequestId, params: dict[str, Any]
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
            ctx: ToolContext = _TaskToolContext(self, rid, params, stream, session, task)
            self._tg.start_soon(self._tasks.run, task, tool.handler, arguments, ctx, self._touch)
            self._finish_with(stream, rid, {"task": task.snapshot()})
            self._touch()
            return
        running = _Running(rid, stream, session)
        if session is not None:
            session.running[rid] = running
        else:
            self._stateless_running.append(running)
        ctx = ToolContext(self, rid, params, stream, session)
        self._tg.start_soon(self._run_tool, tool, arguments, ctx, running)

    async def _run_tool(
        self, tool: DemoTool, arguments: dict[str, Any], ctx: ToolContext, running: _Running
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
                    _encode(message)
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
                    stream.append(_error_message(rid, REQUEST_CANCELLED, "Request cancelled"))
            stream.finish()
        finally:
            if running.session is not None:
                running.session.running.pop(rid, None)
            elif running in self._stateless_running:
                self._stateless_running.remove(running)
            self._touch()

    def _handle_notification(self, session: _Session | None, message: dict[str, Any]) -> None:
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
        self, stream: _EventStream, method: str, params: dict[str, Any] | None
    ) -> Any:
        self._request_counter += 1
        rid = f"demo-{self._request_counter}"
        waiter = _Waiter()
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
        lines.append("data: " + (_encode(message).decode() if message is not None else ""))
        return (nl.join(lines) + nl + nl).encode()


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


class _Connection:
    """One TCP connection: HTTP/1.1 with keep-alive, one request at a time."""

    def __init__(self, server: DemoServer, stream: anyio.abc.ByteStream, number: int) -> None:
        self.server = server
        self.stream = stream
        self.number = number
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        self.gone = False

    # -- low level

    async def _next_event(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await self.stream.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                data = b""
            self.conn.receive_data(data)

    async def _send(self, event: Any) -> None:
        data = self.conn.send(event)
        if data:
            await self.stream.send(data)

    async def _respond(
        self,
        status: int,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
        *,
        close: bool = False,
    ) -> None:
        hdrs = list(headers)
        if status not in (204, 304):
            hdrs.append(("content-length", str(len(body))))
        if close:
            hdrs.append(("connection", "close"))
        await self._send(h11.Response(status_code=status, headers=hdrs, reason=_reason(status)))
        if body:
            await self._send(h11.Data(data=body))
        await self._send(h11.EndOfMessage())

    async def _http_error(
        self,
        status: int,
        code: int,
        message: str,
        headers: Sequence[tuple[str, str]] = (),
        *,
        close: bool = False,
        rid: RequestId | None = None,
    ) -> None:
        body = _encode(_error_message(rid, code, message))
        hdrs = [("content-type", "application/json"), *headers]
        await self._respond(status, hdrs, body, close=close)

    # -- main loop

    async def run(self) -> None:
        try:
            while True:
                event = await self._next_event()
                if not isinstance(event, h11.Request):
                    return  # ConnectionClosed, or junk after a finished cycle
                keep_alive = await self._handle(event)
                if not keep_alive or self.gone:
                    return
                if self.conn.our_state is not h11.DONE or self.conn.their_state is not h11.DONE:
                    return
                self.conn.start_next_cycle()
        except h11.RemoteProtocolError as exc:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                status = exc.error_status_hint
                with anyio.move_on_after(1):
                    await self._respond(status, body=_reason(status), close=True)
        except (h11.LocalProtocolError, _ClientGone):
            pass

    async def _read_body(self, request: h11.Request) -> bytes | None:
        length = dict(request.headers).get(b"content-length")
        limit = self.server.max_body_size
        if length is not None and int(length) > limit:
            return None
        if self.conn.they_are_waiting_for_100_continue:
            await self._send(h11.InformationalResponse(status_code=100, headers=[]))
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await self._next_event()
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    return None
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                raise _ClientGone

    async def _handle(self, request: h11.Request) -> bool:
        server = self.server
        method = request.method.decode("ascii", "replace").upper()
        target = request.target.decode("ascii", "replace")
        headers: dict[str, str] = {}
        for name, value in request.headers:
            key = name.decode("ascii", "replace").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        body = await self._read_body(request)
        ok, parsed = _parse_json(body) if body else (False, None)
        received = ReceivedRequest(method, target, headers, body, parsed, self.number)
        if server.record:
            server.received.append(received)
        server._touch()

        if server.fault is not None:
            fault = server.fault(received)
            if fault is not None:
                return await self._run_fault(fault)

        if body is None:
            await self._http_error(413, INVALID_REQUEST, "Request body too large", close=True)
            return False
        if urlsplit(target).path != server.path:
            await self._respond(404, [("content-type", "text/plain")], b"Not Found")
            return True
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            await self._http_error(403, INVALID_REQUEST, "Forbidden origin")
            return True
        if method == "POST":
            return await self._post(headers, body, ok, parsed)
        if method == "GET" and not server.stateless:
            return await self._get(headers)
        if method == "DELETE" and not server.stateless:
            return await self._delete(headers)
        allow = "POST" if server.stateless else "GET, POST, DELETE"
        await self._http_error(405, INVALID_REQUEST, "Method not allowed", [("allow", allow)])
        return True

    def _origin_allowed(self, origin: str) -> bool:
        allowed = self.server.allowed_origins
        if allowed is not None and origin in allowed:
            return True
        try:
            host = urlsplit(origin).hostname
        except ValueError:
            return False
        return allowed is None and host in ("localhost", "127.0.0.1", "::1")

    def _check_session(
        self, headers: dict[str, str]
    ) -> tuple[_Session | None, tuple[int, str] | None]:
        """Session and protocol-version checks for everything but ``initialize``."""
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return None, (400, f"Unsupported MCP-Protocol-Version: {version}")
        if self.server.stateless:
            return None, None
        sid = headers.get("mcp-session-id")
        if sid is None:
            return None, (400, "Missing Mcp-Session-Id header")
        session = self.server._sessions.get(sid)
        if session is None:
            return None, (404, "Session not found")
        return session, None

    # -- POST

    async def _post(self, headers: dict[str, str], body: bytes, ok: bool, parsed: Any) -> bool:
        server = self.server
        content_type = headers.get("content-type", "")
        if content_type.split(";", 1)[0].strip().lower() != "application/json":
            await self._http_error(415, INVALID_REQUEST, "Content-Type must be application/json")
            return True
        accept = headers.get("accept", "")
        if server.require_accept and not (
            _accepts(accept, "application/json") and _accepts(accept, "text/event-stream")
        ):
            await self._http_error(
                406, INVALID_REQUEST, "Accept must list application/json and text/event-stream"
            )
            return True
        if not ok:
            await self._http_error(400, PARSE_ERROR, "Parse error")
            return True
        if isinstance(parsed, list):
            await self._http_error(400, INVALID_REQUEST, "Batches are not supported")
            return True
        kind = self._classify(parsed)
        if kind is None:
            await self._http_error(400, INVALID_REQUEST, "Invalid JSON-RPC message")
            return True
        message: dict[str, Any] = parsed
        if kind == "request" and message["method"] == "initialize":
            stream, session = server._start_request(None, message)
            extra = [] if session is None else [("mcp-session-id", session.id)]
            return await self._reply(stream, extra, polling=False)
        session, problem = self._check_session(headers)
        if problem is not None:
            await self._http_error(problem[0], INVALID_REQUEST, problem[1])
            return True
        if kind == "notification":
            server._handle_notification(session, message)
            await self._respond(202)
            return True
        if kind == "response":
            server._handle_client_response(message)
            await self._respond(202)
            return True
        stream, _ = server._start_request(session, message)
        return await self._reply(stream, [], polling=message["method"] == "tools/call")

    @staticmethod
    def _classify(message: Any) -> Literal["request", "notification", "response"] | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        if "method" in message:
            if not isinstance(message["method"], str):
                return None
            if "id" not in message:
                return "notification"
            return "request" if _valid_id(message["id"]) else None
        if _valid_id(message.get("id")) and ("result" in message) != ("error" in message):
            return "response"
        return None

    async def _reply(
        self, stream: _EventStream, headers: list[tuple[str, str]], *, polling: bool
    ) -> bool:
        server = self.server
        if server.json_response:

            async def until_done() -> None:
                while not stream.done:
                    await stream.changed().wait()

            if not await self._while_connected(until_done()):
                return False
            response = stream.response()
            if response is None:  # cancelled without a response
                return False
            await self._respond(
                200, [("content-type", "application/json"), *headers], _encode(response)
            )
            return True
        limit = None
        if polling:
            limit = 1 if server.close_after_priming else server.close_after_events
        return await self._stream_response(
            stream, headers, after=0, prime=server.priming, limit=limit
        )

    # -- GET / DELETE

    async def _get(self, headers: dict[str, str]) -> bool:
        server = self.server
        if not _accepts(headers.get("accept", ""), "text/event-stream"):
            await self._http_error(406, INVALID_REQUEST, "Accept must include text/event-stream")
            return True
        session, problem = self._check_session(headers)
        if problem is not None:
            await self._http_error(problem[0], INVALID_REQUEST, problem[1])
            return True
        assert session is not None
        last = headers.get("last-event-id")
        if last is None:
            stream, after = session.standalone, session.standalone.delivered
        else:
            sid, _, n = last.strip().rpartition("-")
            found = session.streams.get(sid)
            if found is None or not n.isdigit():
                await self._http_error(400, INVALID_REQUEST, "Unknown Last-Event-ID")
                return True
            stream, after = found, int(n)
        if stream.attached:
            await self._http_error(409, INVALID_REQUEST, "Stream already open for this session")
            return True
        return await self._stream_response(
            stream, [], after=after, prime=False, limit=server.close_after_events
        )

    async def _delete(self, headers: dict[str, str]) -> bool:
        session, problem = self._check_session(headers)
        if problem is not None:
            await self._http_error(problem[0], INVALID_REQUEST, problem[1])
            return True
        assert session is not None
        self.server._end_session(session.id)
        await self._respond(204)
        return True

    # -- SSE pumping

    async def _stream_response(
        self,
        stream: _EventStream,
        headers: list[tuple[str, str]],
        *,
        after: int,
        prime: bool,
        limit: int | None,
    ) -> bool:
        stream.attached = True
        self.server._touch()
        try:
            hdrs = [
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
                *headers,
            ]
            await self._send(h11.Response(status_code=200, headers=hdrs, reason=b"OK"))
            finished = await self._while_connected(self._pump(stream, after, prime, limit))
            if not finished:
                return False
            await self._send(h11.EndOfMessage())
            return True
        finally:
            stream.attached = False
            self.server._touch()

    async def _write(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def _pump(self, stream: _EventStream, after: int, prime: bool, limit: int | None) -> None:
        server = self.server
        written = 0
        if prime:
            await self._write(server._sse_event(f"{stream.sid}-{after}", None))
            written += 1
        position = after
        while True:
            if (
                limit is not None
                and written >= limit
                and not (stream.done and not stream.after(position))
            ):
                if server.retry_ms is not None:
                    nl = server.sse_newline
                    await self._write(f"retry: {server.retry_ms}{nl}{nl}".encode())
                return
            changed = stream.changed()
            pending = stream.after(position)
            if pending:
                n, message = pending[0]
                await self._write(server._sse_event(f"{stream.sid}-{n}", message))
                position = n
                stream.delivered = max(stream.delivered, n)
                written += 1
                continue
            if stream.done:
                return
            if server.keepalive is None:
                await changed.wait()
            else:
                with anyio.move_on_after(server.keepalive) as scope:
                    await changed.wait()
                if scope.cancelled_caught:
                    await self._write(
                        f": keepalive{server.sse_newline}{server.sse_newline}".encode()
                    )

    async def _while_connected(self, work: Any) -> bool:
        """Run ``work`` (a coroutine writing to the client) while watching for
        the client going away; True when ``work`` finished."""
        done = False

        async def run_work(scope: anyio.CancelScope) -> None:
            nonlocal done
            try:
                await work
                done = True
            except _TRANSPORT_ERRORS:
                self.gone = True
            scope.cancel()

        async def watch(scope: anyio.CancelScope) -> None:
            buffered = 0
            try:
                while True:
                    data = await self.stream.receive(65536)
                    buffered += len(data)
                    if buffered > server_limit:
                        break
                    self.conn.receive_data(data)
            except _TRANSPORT_ERRORS:
                pass
            self.gone = True
            scope.cancel()

        server_limit = self.server.max_body_size + 65536
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            tg.start_soon(run_work, tg.cancel_scope)
        if not done:
            work.close()
        return done and not self.gone

    # -- faults

    async def _run_fault(self, fault: FaultResponse) -> bool:
        if fault.delay:
            await anyio.sleep(fault.delay)
        if fault.kind == "close":
            return False
        if fault.kind == "raw":
            assert isinstance(fault.body, bytes)
            await self.stream.send(fault.body)
            return False
        headers = list(fault.headers)
        names = {name.lower() for name, _ in headers}
        body = fault.body
        if (
            isinstance(body, bytes)
            and fault.kind == "respond"
            and not names & {"content-length", "transfer-encoding"}
            and fault.status not in (204, 304)
        ):
            headers.append(("content-length", str(len(body))))
        await self._send(
            h11.Response(status_code=fault.status, headers=headers, reason=_reason(fault.status))
        )

        async def send_body() -> None:
            async for chunk in _chunks(body):
                if chunk:
                    await self._write(chunk)
            if fault.kind == "stall":
                await anyio.sleep_forever()

        finished = await self._while_connected(send_body())
        if not finished or fault.abort:
            return False
        await self._send(h11.EndOfMessage())
        return True


async def _chunks(body: Body) -> AsyncIterator[bytes]:
    if isinstance(body, bytes):
        yield body
    elif isinstance(body, AsyncIterable):
        async for chunk in body:
            yield chunk
    else:
        for chunk in body:
            yield chunk
