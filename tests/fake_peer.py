"""An in-memory, sans-IO MCP server and a link that drives an engine against it.

h11's ``ConnectionPair`` idea: no sockets, no threads, a fake clock. The
server replays what real servers do (LF and CRLF SSE, priming events,
keepalive comments, messages before the response, JSON-only replies,
stateless mode, 404 expiry, 400 for an unknown session, 409 for a second GET,
streams closed after ``retry``, empty resumes, cursor loops, notifications
before the initialize result) as configured per test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpcore.base._events import AbortExchange, Event, HttpRequest
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.config._config import RemoteServer
from mcpcore.engine._engine import HttpClientEngine
from mcpcore.session._session import SessionOptions
from mcpcore.wire._http import HttpLimits


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    # "end": the body ends; "fail": the connection breaks; "stall": nothing more arrives;
    # "before-headers": not even the status arrives (the test drives the exchange)
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
        retry_ms: int | None = None,
        polls: int = 0,
        empty_resume: bool = False,
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
        # H4: the event stream's `retry` (sent with every priming event), and the
        # polling pattern: a tools/call stream is closed `polls` times right after
        # its priming event; each resume GET continues it, the last one answers.
        self.retry_ms = retry_ms
        self.polls = polls
        self.empty_resume = empty_resume  # every resume GET gets an empty stream
        self._resumable: dict[str, tuple[list[dict[str, Any] | str], int]] = {}
        # H8: what the GET stream delivers when get_status is 200 (then it stays open)
        self.get_messages: list[dict[str, Any]] = []
        self.get_count = 0
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

    def _priming(self) -> tuple[str, str]:
        event_id = self._event_id()
        retry = f"retry: {self.retry_ms}\n" if self.retry_ms is not None else ""
        return event_id, f"id: {event_id}\n{retry}data: \n\n"

    def _polled(self, messages: list[dict[str, Any] | str], polls_left: int) -> Reply:
        """H4 polling: send a priming event and close; a resume GET continues."""
        event_id, block = self._priming()
        self._resumable[event_id] = (messages, polls_left - 1)
        return Reply(200, [(b"content-type", b"text/event-stream")], [sse(block, crlf=self.crlf)])

    def _resume(self, last_event_id: str) -> Reply:
        if self.empty_resume or last_event_id not in self._resumable:
            return Reply(200, [(b"content-type", b"text/event-stream")], [])
        messages, polls_left = self._resumable.pop(last_event_id)
        if polls_left > 0:
            return self._polled(messages, polls_left)
        return self._stream(messages, poll=False)

    def _stream(self, messages: list[dict[str, Any] | str], *, poll: bool = False) -> Reply:
        if poll and self.polls > 0 and not self.json_response:
            return self._polled(messages, self.polls)
        if self.json_response:
            final = [m for m in messages if isinstance(m, dict) and "id" in m and "method" not in m]
            return Reply(200, [(b"content-type", b"application/json")], [json.dumps(final[-1]).encode()])
        blocks: list[str] = []
        if self.priming:
            blocks.append(self._priming()[1])
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
            if not self.stateless and sid not in self.sessions:
                return Reply(404 if sid else 400)
            if "last-event-id" in headers and (self.empty_resume or headers["last-event-id"] in self._resumable):
                return self._resume(headers["last-event-id"])
            self.get_count += 1
            if self.get_status != 200:
                return Reply(self.get_status)
            body = sse(*self.get_messages, crlf=self.crlf)
            return Reply(200, [(b"content-type", b"text/event-stream")], [body], finish="stall")
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
                return self._stream(self.call_handler(message), poll=True)
            text = json.dumps(params.get("arguments", {}))
            return self._stream(
                [{"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}],
                poll=True,
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
        if reply.finish == "before-headers":  # nothing at all has arrived yet
            self.stalled.add(xid)
            return
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
            e.response_failed(xid, TransportFailure(FailureKind.RESET), self.now)
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


# --- conveniences for the engine tests ---------------------------------------------

URL = "https://mcp.example.test/mcp"


def connect(
    server: FakeServer | None = None,
    *,
    options: SessionOptions | None = None,
    limits: HttpLimits | None = None,
    headers: dict[str, str] | None = None,
    listen: bool = True,
    byte_by_byte: bool = False,
    start: bool = True,
    name: str = "srv",
    protocol: str = "legacy",
) -> Link:
    """An engine for ``server`` (default: a plain FakeServer), started unless told not to."""
    remote = RemoteServer(name=name, url=URL, headers=headers or {})
    if options is None:
        options = SessionOptions(server_name=name)
    # This fake speaks the handshake era; the 2026-07-28 tests pass protocol="auto".
    options = dataclasses.replace(options, protocol=protocol)
    engine = HttpClientEngine(remote, options=options, limits=limits, listen=listen)
    link = Link(engine, server or FakeServer(), byte_by_byte=byte_by_byte)
    if start:
        link.start()
    return link


def result(rid: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def text_result(rid: Any, text: str, *, is_error: bool = False) -> dict[str, Any]:
    value: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        value["isError"] = True
    return result(rid, value)


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return out
