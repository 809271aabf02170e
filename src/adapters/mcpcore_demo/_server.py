"""A small MCP Streamable HTTP server (revision 2025-11-25, with its experimental tasks)
on h11 and anyio: ``DemoServer`` and ``RunningServer``.

The top of the package. ``DemoServer`` takes the options, holds the tools,
records what it sees, listens (``serve``, ``serve_in_thread``) and hands each
connection to ``_http``; it answers JSON-RPC through ``JsonRpcSide`` (``_rpc``),
which it extends. Nothing in the package imports this module but ``_main`` and
``__init__``."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel

from ._context import DemoTool
from ._http import TRANSPORT_ERRORS, HttpConnection
from ._rpc import JsonRpcSide
from ._streams import RunningCall, Session, Waiter
from ._tasks import DemoTask, TaskBook
from ._tools import default_tools
from ._types import FaultHook, ReceivedRequest, RequestId

__all__ = ["DemoServer", "RunningServer"]

logger = logging.getLogger("mcpcore_demo")

ToolSpec = DemoTool | tuple[dict[str, Any], Any]


@dataclass(frozen=True)
class RunningServer:
    """A listening demo server: ``url`` is the MCP endpoint."""

    url: str
    host: str
    port: int
    server: DemoServer


class DemoServer(JsonRpcSide):
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

        self._sessions: dict[str, Session] = {}
        self._stateless_running: list[RunningCall] = []
        self._stateless_streams = 0
        self._waiters: dict[RequestId, Waiter] = {}
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

    def get_stream_open(self, session_id: str | None = None) -> bool:
        """Whether a GET stream is attached (for ``session_id``, or for any session)."""
        sessions = (
            list(self._sessions.values())
            if session_id is None
            else [s for s in [self._sessions.get(session_id)] if s is not None]
        )
        return any(s.standalone.attached for s in sessions)

    # --------------------------------------------------------- observability

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
                    # The listener first: closing it stops the event loop watching it before
                    # its pending accept is cancelled. Cancelled in a loop turn that found a
                    # connection waiting, asyncio's accept (BaseSelectorEventLoop._sock_accept
                    # on Python 3.11) takes that connection into the cancelled future and
                    # drops it unclosed.
                    await anyio.aclose_forcefully(listener)
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
        try:
            await listener.serve(self._on_connection, task_group=tg)
        except* anyio.ClosedResourceError:
            pass  # serve() closed the listener: the server is stopping

    async def _on_connection(self, stream: anyio.abc.ByteStream) -> None:
        self.connections_opened += 1
        self.open_connections += 1
        number = self.connections_opened
        self._touch()
        try:
            await HttpConnection(self, stream, number).run()
        except TRANSPORT_ERRORS:
            pass
        except Exception:  # never let one connection take the server down
            logger.exception("demo server: error on connection %d", number)
        finally:
            try:
                await anyio.aclose_forcefully(stream)
            finally:  # counted as open until it is closed
                self.open_connections -= 1
                self._touch()
