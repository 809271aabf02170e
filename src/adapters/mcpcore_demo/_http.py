"""The HTTP side of the demo server: one TCP connection speaking HTTP/1.1 (h11),
the Streamable HTTP checks (path, origin, headers, session, protocol version),
POST/GET/DELETE, SSE pumping and the canned faults. It hands JSON-RPC messages to
the server's ``JsonRpcSide`` and never imports the server itself."""

from __future__ import annotations

import http
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
import anyio.abc
import h11

from ._jsonrpc import INVALID_REQUEST, PARSE_ERROR, encode, error_message, parse_json, valid_id
from ._rpc import JsonRpcSide
from ._streams import EventStream, Session
from ._types import SUPPORTED_PROTOCOL_VERSIONS, Body, FaultResponse, ReceivedRequest, RequestId

__all__ = ["TRANSPORT_ERRORS", "HttpConnection"]

TRANSPORT_ERRORS = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    OSError,
)


class _ClientGone(Exception):
    """The peer closed the connection or it broke."""


def _media_types(value: str) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()}


def _accepts(accept: str, media_type: str) -> bool:
    types = _media_types(accept)
    major = media_type.split("/", 1)[0]
    return bool(types & {media_type, f"{major}/*", "*/*"})


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


class HttpConnection:
    """One TCP connection: HTTP/1.1 with keep-alive, one request at a time."""

    def __init__(self, server: JsonRpcSide, stream: anyio.abc.ByteStream, number: int) -> None:
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
        body = encode(error_message(rid, code, message))
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
        ok, parsed = parse_json(body) if body else (False, None)
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
    ) -> tuple[Session | None, tuple[int, str] | None]:
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
            return "request" if valid_id(message["id"]) else None
        if valid_id(message.get("id")) and ("result" in message) != ("error" in message):
            return "response"
        return None

    async def _reply(
        self, stream: EventStream, headers: list[tuple[str, str]], *, polling: bool
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
                200, [("content-type", "application/json"), *headers], encode(response)
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
        stream: EventStream,
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

    async def _pump(self, stream: EventStream, after: int, prime: bool, limit: int | None) -> None:
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
            except TRANSPORT_ERRORS:
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
            except TRANSPORT_ERRORS:
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
