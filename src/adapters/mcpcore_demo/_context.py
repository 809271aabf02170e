"""What a tool is (``DemoTool``, ``ToolHandler``, ``ToolResult``) and what its
handler gets (``ToolContext``): notifications, progress, logs and requests to the
client on the call's stream. The context reaches the server only through
``ToolServer``, a port ``DemoServer`` implements, so tools never import the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import anyio.lowlevel

from ._jsonrpc import valid_id
from ._streams import EventStream, Session
from ._types import LOG_LEVELS, RequestId

__all__ = ["DemoTool", "ToolContext", "ToolHandler", "ToolResult", "ToolServer"]

ToolResult = dict[str, Any] | str
"""A raw ``tools/call`` result object, or a string (one text block)."""

ToolHandler = Callable[[dict[str, Any], "ToolContext"], Awaitable[ToolResult]]
"""``async def handler(arguments, ctx) -> result``. An exception other than
``JsonRpcError`` becomes a result with ``isError: true``."""


@dataclass(frozen=True)
class DemoTool:
    """One tool: its raw ``tools/list`` object (``name`` is required) and handler."""

    definition: Mapping[str, Any]
    handler: ToolHandler = field(repr=False)

    @property
    def name(self) -> str:
        return str(self.definition["name"])


class ToolServer(Protocol):
    """What a ``ToolContext`` asks of its server (a ``DemoServer``)."""

    json_response: bool
    dropped: list[dict[str, Any]]

    def _touch(self) -> None: ...

    async def _client_request(
        self, stream: EventStream, method: str, params: dict[str, Any] | None
    ) -> Any: ...


class ToolContext:
    """What a tool handler gets besides its arguments."""

    def __init__(
        self,
        server: ToolServer,
        request_id: RequestId,
        params: dict[str, Any],
        stream: EventStream,
        session: Session | None,
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
        return token if valid_id(token) else None

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
