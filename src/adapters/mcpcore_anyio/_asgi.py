"""An in-process transport: HTTP exchanges performed by calling an ASGI app.

``McpClient(..., asgi_app=app)`` sends every exchange the engine asks for to
``app`` in the same process, with no socket — for example the official MCP
Python SDK server's Starlette app (``MCPServer(...).streamable_http_app()``),
so a host can be tested against a real Python MCP server without ports. The
app's lifespan runs for as long as the client. The engine is the same as over
the network, so every behaviour is the same.

``AsgiPool`` offers the small part of ``httpcore.AsyncConnectionPool`` the
client uses: ``stream(method, url, headers=..., content=...)`` and ``aclose()``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    MutableMapping,
    Sequence,
)
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["AsgiApp", "AsgiPool", "AsgiResponse"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class AsgiTransportError(OSError):
    """The app failed or ended without a response (reported like a broken connection).

    ``received``: the app had received the whole request body first (its
    ``receive()`` handed over the last body): the request reached the server
    whole, so a ``tools/call`` may have run (U3; the client reports it sent).
    """

    received = False


class AsgiResponse:
    """The status, headers and a stream of body chunks of one app response."""

    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        chunks: MemoryObjectReceiveStream[bytes | BaseException],
    ) -> None:
        self.status = status
        self.headers = headers
        self._chunks = chunks

    async def aiter_stream(self) -> AsyncIterator[bytes]:
        async for chunk in self._chunks:
            if isinstance(chunk, BaseException):
                raise AsgiTransportError(f"the app failed: {type(chunk).__name__}") from chunk
            yield chunk


class AsgiPool:
    """Perform exchanges against an ASGI app; runs its lifespan between start and close."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app
        self._shutdown: anyio.Event | None = None
        self._stopped: anyio.Event | None = None
        self._apps: anyio.abc.TaskGroup | None = None
        self._closing: anyio.Event | None = None

    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Run the app's lifespan startup (apps without lifespan support are fine)."""
        hosting = anyio.Event()
        self._shutdown = anyio.Event()
        self._stopped = anyio.Event()
        self._closing = anyio.Event()
        task_group.start_soon(self._host, hosting)
        await hosting.wait()
        started = anyio.Event()
        assert self._apps is not None
        self._apps.start_soon(self._lifespan, started)
        await started.wait()

    async def _host(self, hosting: anyio.Event) -> None:
        # Requests run in this group, not in the exchange: like a server, the app
        # goes on after the client has read its response (it is told of the
        # disconnect), and closing the pool ends whatever is left.
        async with anyio.create_task_group() as group:
            self._apps = group
            hosting.set()
            assert self._closing is not None
            await self._closing.wait()
            group.cancel_scope.cancel()
        self._apps = None

    async def _lifespan(self, started: anyio.Event) -> None:
        assert self._shutdown is not None and self._stopped is not None
        shutdown, stopped = self._shutdown, self._stopped
        sent_startup = False

        async def receive() -> Message:
            nonlocal sent_startup
            if not sent_startup:
                sent_startup = True
                return {"type": "lifespan.startup"}
            await shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: Message) -> None:
            if message["type"].startswith("lifespan.startup"):
                started.set()
            elif message["type"].startswith("lifespan.shutdown"):
                stopped.set()

        try:
            await self.app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
        except Exception:
            pass  # an app without lifespan support raises here; that is allowed
        finally:
            started.set()
            stopped.set()

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Sequence[tuple[bytes, bytes]] = (),
        content: bytes | AsyncIterable[bytes] | None = None,
    ) -> AsyncIterator[AsgiResponse]:
        if content is not None and not isinstance(content, bytes):
            content = b"".join([chunk async for chunk in content])
        parts = urlsplit(url)
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": parts.scheme or "http",
            "path": parts.path or "/",
            "raw_path": (parts.path or "/").encode(),
            "query_string": parts.query.encode(),
            "root_path": "",
            "headers": [
                (b"host", parts.netloc.encode()),
                *[(k.lower(), v) for k, v in headers if k.lower() != b"content-length"],
            ],
            "server": (parts.hostname or "testserver", parts.port or 80),
            "client": ("127.0.0.1", 0),
        }
        if content is not None:
            scope["headers"].append((b"content-length", str(len(content)).encode()))
        send_chunk: MemoryObjectSendStream[bytes | BaseException]
        send_chunk, receive_chunk = anyio.create_memory_object_stream[bytes | BaseException](
            math.inf
        )
        started = anyio.Event()
        response: dict[str, Any] = {}
        disconnected = anyio.Event()
        body_sent = False
        body_done = False

        async def receive() -> Message:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": content or b"", "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                response["headers"] = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
                started.set()
            elif message["type"] == "http.response.body":
                nonlocal body_done
                body = bytes(message.get("body", b""))
                if body and not body_done:
                    send_chunk.send_nowait(body)
                if not message.get("more_body", False):
                    body_done = True
                    send_chunk.close()

        async def run_app() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception as exc:
                if not body_done:
                    with contextlib.suppress(anyio.ClosedResourceError):
                        send_chunk.send_nowait(exc)
            finally:
                started.set()
                send_chunk.close()

        with send_chunk, receive_chunk:
            async with contextlib.AsyncExitStack() as stack:
                apps = self._apps
                if apps is None:  # not started: the exchange hosts the app itself
                    apps = await stack.enter_async_context(anyio.create_task_group())
                apps.start_soon(run_app)
                try:
                    await started.wait()
                    if "status" not in response:
                        failed = AsgiTransportError("the app ended without a response")
                        failed.received = body_sent  # U3: did the request reach the app whole?
                        raise failed
                    yield AsgiResponse(response["status"], response["headers"], receive_chunk)
                finally:
                    # Like closing a connection: tell the app the client went away.
                    disconnected.set()

    async def aclose(self) -> None:
        """Shut the app's lifespan down (bounded), then end every request still running."""
        if self._shutdown is not None and self._stopped is not None:
            self._shutdown.set()
            with anyio.move_on_after(5):
                await self._stopped.wait()
        if self._closing is not None:
            self._closing.set()
