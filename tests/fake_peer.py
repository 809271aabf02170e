"""An in-memory, sans-IO MCP server and a link that drives an engine against it.

h11's ``ConnectionPair`` idea: no sockets, no threads, a fake clock. The
server replays what real servers do (LF and CRLF SSE, priming events,
keepalive comments, messages before the response, JSON-only replies,
stateless mode, 404 expiry, 400 for an unknown session, 409 for a second GET,
streams closed after ``retry``, empty resumes, cursor loops, notifications
before the initialize result) as configured per test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpcore._engine import HttpClientEngine
from mcpcore._events import AbortExchange, Event, HttpRequest


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    # "end": the body ends; "fail": the connection breaks; "stall": nothing more arrives
    finish: str = "end"


def sse(*events: str | dict[str, Any], crlf: bool = False) -> bytes:
    """Build an SSE body. A dict is a JSON-RPC message; a str is a raw event block."""
    out = []
    for ev in events:
        block = f"data: {json.dumps(ev)}\n\n" if isinstance(ev, dict) else ev
        out.append(block)
    text = "".join(out)
    if crlf:
        text = text.replace("\n", "\r\n")
    return text.encode()


def tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}, **extra}


@dataclass
class Seen:
    method: str
    headers: dict[str, str]
    message: dict[str, Any] | None


class FakeServer:
    """A scriptable MCP server. Override ``on_call`` or set attributes per test."""

    def __init__(
        self,
        *,
        tools: list[dict[str, Any]] | None = None,
        json_response: bool = False,
        stateless: bool = False,
        crlf: bool = False,
        priming: bool = True,
        keepalive: bool = False,
        page_size: int | None = None,
        version: str | None = None,
        get_status: int = 405,
    ) -> None:
        self.tools = tools if tools is not None else [tool("echo"), tool("slow")]
        self.json_response = json_response
        self.stateless = stateless
        self.crlf = crlf
        self.priming = priming
        self.keepalive = keepalive
        self.page_size = page_size
        self.version = version
        self.get_status = get_status
        self.seen: list[Seen] = []
        self.sessions: set[str] = set()
        self._session_counter = 0
        self._event_counter = 0
        self.cancelled: list[Any] = []
        # Hooks: return a Reply to replace the normal handling.
        self.hook: Callable[[Seen], Reply | None] | None = None
        self.call_handler: Callable[[dict[str, Any]], list[dict[str, Any] | str]] | None = None
        self.cursor_loop = False
        self.before_init_result: list[dict[str, Any]] = []

    # --- helpers -------------------------------------------------------------------
    def requests(self, method: str) -> list[dict[str, Any]]:
        return [s.message for s in self.seen if s.message and s.message.get("method") == method]

    def _event_id(self) -> str:
        self._event_counter += 1
        return f"e{self._event_counter}"

    def _stream(self, messages: list[dict[str, Any] | str]) -> Reply:
        if self.json_response:
            final = [m for m in messages if isinstance(m, dict) and "id" in m and "method" not in m]
            return Reply(200, [(b"content-type", b"application/json")], [json.dumps(final[-1]).encode()])
        blocks: list[str] = []
        if self.priming:
            blocks.append(f"id: {self._event_id()}\ndata: \n\n")
        for m in messages:
            if self.keepalive:
                blocks.append(": keepalive\n\n")
            if isinstance(m, str):
                blocks.append(m)
            else:
                blocks.append(f"id: {self._event_id()}\ndata: {json.dumps(m)}\n\n")
        body = sse(*blocks, crlf=self.crlf)
        return Reply(200, [(b"content-type", b"text/event-stream")], [body])

    # --- the HTTP side -----------------------------------------------------------------
    def handle(self, req: HttpRequest) -> Reply:
        headers = {k.decode().lower(): v.decode() for k, v in req.headers}
        message = json.loads(req.body) if req.body else None
        seen = Seen(req.method, headers, message)
        self.seen.append(seen)
        if self.hook is not None:
            reply = self.hook(seen)
            if reply is not None:
                return reply
        sid = headers.get("mcp-session-id")
        if req.method == "DELETE":
            if sid in self.sessions:
                self.sessions.discard(sid)
                return Reply(200)
            return Reply(404)
        if req.method == "GET":
            return Reply(self.get_status)
        assert message is not None
        if message.get("method") == "initialize":
            return self._initialize(message)
        if not self.stateless:
            if sid is None:
                return Reply(400, [(b"content-type", b"text/plain")], [b"missing session"])
            if sid not in self.sessions:
                return Reply(404, [(b"content-type", b"text/plain")], [b"no such session"])
        if "method" not in message or "id" not in message:
            if message.get("method") == "notifications/cancelled":
                self.cancelled.append(message["params"]["requestId"])
            return Reply(202)
        return self._request(message)

    def _initialize(self, message: dict[str, Any]) -> Reply:
        result = {
            "protocolVersion": self.version or message["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "fake", "version": "1"},
        }
        reply = self._stream([*self.before_init_result, {"jsonrpc": "2.0", "id": message["id"], "result": result}])
        if not self.stateless:
            self._session_counter += 1
            sid = f"session-{self._session_counter}"
            self.sessions.add(sid)
            reply.headers.append((b"mcp-session-id", sid.encode()))
        return reply

    def _request(self, message: dict[str, Any]) -> Reply:
        method = message["method"]
        rid = message["id"]
        if method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            start = int(cursor) if cursor else 0
            size = self.page_size or len(self.tools) or 1
            page = self.tools[start : start + size]
            result: dict[str, Any] = {"tools": page}
            if self.cursor_loop:
                result["nextCursor"] = "0"
            elif start + size < len(self.tools):
                result["nextCursor"] = str(start + size)
            return self._stream([{"jsonrpc": "2.0", "id": rid, "result": result}])
        if method == "tools/call":
            params = message["params"]
            if self.call_handler is not None:
                return self._stream(self.call_handler(message))
            text = json.dumps(params.get("arguments", {}))
            return self._stream(
                [{"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}]
            )
        if method == "ping":
            return self._stream([{"jsonrpc": "2.0", "id": rid, "result": {}}])
        return self._stream([{"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}}])


class Link:
    """Drives an engine against a FakeServer with a fake clock, in one thread."""

    def __init__(self, engine: HttpClientEngine, server: FakeServer, *, now: float = 1000.0,
                 byte_by_byte: bool = False) -> None:
        self.engine = engine
        self.server = server
        self.now = now
        self.byte_by_byte = byte_by_byte
        self.events: list[Event] = []
        self.requests: list[HttpRequest] = []
        self.aborted: list[int] = []
        self.stalled: set[int] = set()

    def pump(self) -> None:
        """Perform every action until the engine asks for nothing more right now."""
        for _ in range(100_000):
            actions = self.engine.take_actions()
            self.events.extend(self.engine.take_events())
            if not actions:
                return
            for action in actions:
                if isinstance(action, AbortExchange):
                    self.aborted.append(action.exchange_id)
                    self.stalled.discard(action.exchange_id)
                    continue
                self.requests.append(action)
                self._perform(action)
        raise AssertionError("the engine never settled")

    def _perform(self, req: HttpRequest) -> None:
        reply = self.server.handle(req)
        xid = req.exchange_id
        e = self.engine
        e.response_started(xid, reply.status, reply.headers, self.now)
        for chunk in reply.chunks:
            if self.byte_by_byte:
                for i in range(len(chunk)):
                    e.response_data(xid, chunk[i : i + 1], self.now)
            else:
                e.response_data(xid, chunk, self.now)
        if reply.finish == "end":
            e.response_ended(xid, self.now)
        elif reply.finish == "fail":
            e.response_failed(xid, "connection reset", self.now)
        else:
            self.stalled.add(xid)

    def advance(self, seconds: float) -> None:
        """Move the clock, firing every deadline on the way, in order."""
        target = self.now + seconds
        while True:
            self.pump()
            deadline = self.engine.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.engine.handle_timer(self.now)
        self.now = target
        self.pump()

    def start(self) -> None:
        self.engine.start(self.now)
        self.pump()

    def of_type(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
