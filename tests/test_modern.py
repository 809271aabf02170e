"""MCP 2026-07-28 beside the handshake era (E1–E7, M1–M94), in the core, with a fake clock.

``ModernFake`` answers as a 2026-07-28 server does (the conformance suite's
stateless mock: it checks the envelope and the headers of every request); hooks
turn it into the legacy and broken shapes the probe must read.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from fake_peer import FakeServer, Link, Reply, connect, sse, tool
from mcpcore import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    HandshakeError,
    RemoteProtocolError,
    SessionReady,
    StartFailed,
    TransportError,
)
from mcpcore.base._events import AbortExchange, HttpRequest
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.session._session import SessionOptions

V = "2026-07-28"
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream")]
META_V = "io.modelcontextprotocol/protocolVersion"


def rpc(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def rpc_error(rid: Any, code: int, message: str = "no", data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


class ModernFake:
    """A 2026-07-28 server: every POST must carry the envelope and the headers."""

    def __init__(
        self, tools: list[dict[str, Any]] | None = None, capabilities: dict[str, Any] | None = None
    ) -> None:
        self.tools = tools if tools is not None else [tool("echo")]
        self.capabilities = capabilities or {"tools": {}}
        self.seen: list[tuple[str, dict[str, str], dict[str, Any] | None]] = []
        self.problems: list[str] = []
        self.hook: Callable[[dict[str, Any], dict[str, str]], Reply | None] | None = None
        self.call_reply: Callable[[dict[str, Any]], Reply] | None = None

    def methods(self) -> list[str]:
        return [m["method"] if m else method for method, _, m in self.seen]

    def handle(self, req: HttpRequest) -> Reply:
        headers = {k.decode().lower(): v.decode() for k, v in req.headers}
        message = json.loads(req.body) if req.body else None
        self.seen.append((req.method, headers, message))
        if req.method != "POST" or message is None:
            self.problems.append(f"{req.method} sent to a 2026-07-28 server")
            return Reply(405)
        if "id" not in message:
            self.problems.append(f"notification {message.get('method')} POSTed")
            return Reply(202)
        meta = (message.get("params") or {}).get("_meta") or {}
        if meta.get(META_V) != V or "io.modelcontextprotocol/clientCapabilities" not in meta:
            self.problems.append(f"{message['method']} without the envelope")
        if headers.get("mcp-protocol-version") != meta.get(META_V):
            self.problems.append(f"{message['method']}: version header != _meta")
        if headers.get("mcp-method") != message["method"]:
            self.problems.append(f"{message['method']}: Mcp-Method header missing")
        if "mcp-session-id" in headers:
            self.problems.append("a session id sent")
        if self.hook is not None:
            reply = self.hook(message, headers)
            if reply is not None:
                return reply
        rid, method = message["id"], message["method"]
        if method == "server/discover":
            result = {
                "resultType": "complete",
                "supportedVersions": [V],
                "capabilities": self.capabilities,
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1"}},
            }
            return Reply(200, JSON, [json.dumps(rpc(rid, result)).encode()], finish="end")
        if method == "tools/list":
            result = {"resultType": "complete", "tools": self.tools, "ttlMs": 0, "cacheScope": "private"}
            return Reply(200, JSON, [json.dumps(rpc(rid, result)).encode()])
        if method == "tools/call":
            if headers.get("mcp-name") is None:
                self.problems.append("tools/call without Mcp-Name")
            if self.call_reply is not None:
                return self.call_reply(message)
            text = json.dumps(message["params"].get("arguments", {}))
            result = {"resultType": "complete", "content": [{"type": "text", "text": text}]}
            return Reply(200, SSE, [sse(rpc(rid, result))])
        return Reply(404, JSON, [json.dumps(rpc_error(rid, -32601, "no such method")).encode()])


def link_to(server: Any, *, protocol: str = "auto", start: bool = True, **options: Any) -> Link:
    return connect(server, options=SessionOptions(server_name="srv", **options), protocol=protocol, start=start)


def ready_event(link: Link) -> SessionReady:
    [ready] = link.of_type(SessionReady)
    return ready


def outcome(link: Link, call_id: int) -> Any:
    link.pump()
    [event] = [
        e
        for e in link.events
        if isinstance(e, (CallSucceeded, CallFailed, CallCancelled)) and e.call_id == call_id
    ]
    return event


# --- E1: era detection ------------------------------------------------------------------------


def test_M1_M2_M18_M24_the_probe_is_server_discover_fully_stamped_and_selects_the_modern_era() -> None:
    server = ModernFake()
    link = link_to(server)
    assert server.methods() == ["server/discover", "tools/list"]
    assert server.problems == []
    _, headers, discover = server.seen[0]
    meta = discover["params"]["_meta"]  # type: ignore[index]
    assert meta[META_V] == V and meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "mcpcore", "version": "0.1.0"}
    assert headers["mcp-protocol-version"] == V and headers["mcp-method"] == "server/discover"
    ready = ready_event(link)
    assert ready.protocol_version == V and ready.server_info == {"name": "modern", "version": "1"}
    assert link.engine.session.era == "modern"


def test_M23_M25_M26_M30_a_modern_call_is_one_stamped_post_with_its_headers() -> None:
    server = ModernFake()
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {"x": 1}, link.now)
    link.pump()
    assert isinstance(outcome(link, call_id), CallSucceeded)
    method, headers, body = server.seen[-1]
    assert method == "POST" and body is not None and body["method"] == "tools/call"
    assert headers["mcp-name"] == "echo" and headers["mcp-method"] == "tools/call"
    assert body["params"]["arguments"] == {"x": 1}
    assert server.problems == []


def test_M3_a_discover_naming_only_handshake_versions_falls_back_to_initialize() -> None:
    legacy = FakeServer()
    legacy.hook = lambda seen: (
        Reply(200, JSON, [json.dumps(rpc(seen.message["id"], {"supportedVersions": ["2025-11-25"], "capabilities": {}})).encode()])
        if seen.message and seen.message.get("method") == "server/discover"
        else None
    )
    link = link_to(legacy)
    assert [s.message.get("method") for s in legacy.seen if s.message][:3] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
    ]
    assert ready_event(link).protocol_version == "2025-11-25"
    init = next(s for s in legacy.seen if s.message and s.message.get("method") == "initialize")
    assert "mcp-protocol-version" not in init.headers  # M83: the probe's version does not leak
    assert "_meta" not in (init.message or {}).get("params", {})


@pytest.mark.parametrize(
    "reply",
    [
        Reply(400, [(b"content-type", b"text/plain")], [b"missing session"]),  # M8: plain 4xx
        Reply(400, JSON, [b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Unsupported protocol version: 2026-07-28"}}']),
        Reply(404, JSON, [b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}']),
        Reply(405),
        Reply(202),  # M8: a request accepted without an answer
        Reply(200, [(b"content-type", b"text/plain")], [b"hello"]),
        Reply(200, JSON, [b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}']),  # not a DiscoverResult
    ],
    ids=["400-plain", "400-ts-sdk-1", "404-method-not-found", "405", "202", "200-text", "200-not-discover"],
)
def test_M8_every_legacy_shape_of_the_probe_falls_back_on_the_same_url(reply: Reply) -> None:
    legacy = FakeServer()
    legacy.hook = lambda seen: reply if seen.message and seen.message.get("method") == "server/discover" else None
    link = link_to(legacy)
    ready_event(link)
    assert link.engine.session.era == "legacy"
    assert link.engine.session.protocol_version == "2025-11-25"


def test_M4_M9_a_32022_naming_a_version_we_speak_is_answered_by_the_same_request_once_more() -> None:
    """request-metadata: the first POST, whatever it is, gets -32022 naming the very version sent."""
    server = ModernFake()
    first = {"done": False}

    def once(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if not first["done"]:
            first["done"] = True
            body = rpc_error(None, -32022, "Unsupported protocol version", {"supported": [V], "requested": V})
            return Reply(400, JSON, [json.dumps(body).encode()])
        return None

    server.hook = once
    link = link_to(server)
    assert server.methods() == ["server/discover", "server/discover", "tools/list"]
    assert server.seen[0][2]["id"] != server.seen[1][2]["id"]  # type: ignore[index]
    assert ready_event(link).protocol_version == V and server.problems == []


def test_M5_a_second_32022_is_a_hard_error_naming_both_sides() -> None:
    server = ModernFake()
    body = rpc_error(None, -32022, "Unsupported", {"supported": [V], "requested": V})
    server.hook = lambda m, h: Reply(400, JSON, [json.dumps(body).encode()])
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert isinstance(failed.error, HandshakeError) and V in str(failed.error)
    assert "initialize" not in server.methods()


def test_M5_a_modern_only_server_without_a_version_in_common_is_an_error_not_a_fallback() -> None:
    server = ModernFake()
    body = rpc_error(None, -32022, "Unsupported", {"supported": ["2030-01-01"], "requested": V})
    server.hook = lambda m, h: Reply(400, JSON, [json.dumps(body).encode()])
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert "2030-01-01" in str(failed.error) and "initialize" not in server.methods()


def test_M6_a_32022_naming_only_handshake_versions_falls_back() -> None:
    legacy = FakeServer()
    body = rpc_error(None, -32022, "Unsupported", {"supported": ["2025-11-25"], "requested": V})
    legacy.hook = lambda seen: (
        Reply(400, JSON, [json.dumps(body).encode()]) if seen.message and seen.message.get("method") == "server/discover" else None
    )
    link = link_to(legacy)
    assert ready_event(link).protocol_version == "2025-11-25"


@pytest.mark.parametrize("finish", ["refused", "500", "401", "403", "before-headers"])
def test_M10_M11_network_failures_5xx_401_403_and_timeouts_are_not_era_evidence(finish: str) -> None:
    legacy = FakeServer()

    def hook(seen: Any) -> Reply | None:
        if not (seen.message and seen.message.get("method") == "server/discover"):
            return None
        if finish in ("500", "401", "403"):
            return Reply(int(finish), [(b"content-type", b"text/plain")], [b"no"])
        return Reply(200, [], [], finish="before-headers")

    legacy.hook = hook
    link = link_to(legacy, startup_timeout=5)
    if finish == "refused":
        [xid] = link.stalled
        link.engine.response_failed(xid, TransportFailure(FailureKind.REFUSED), link.now)
        link.pump()
    elif finish == "before-headers":
        link.advance(5)
    [failed] = link.of_type(StartFailed)
    assert "initialize" not in [s.message.get("method") for s in legacy.seen if s.message]
    assert link.engine.session.era is None  # not decided: the next attempt probes again
    assert failed.retry_at > link.now - 5


def test_E1_a_host_can_pin_either_era() -> None:
    legacy = FakeServer()
    link = link_to(legacy, protocol="legacy")
    assert next(s.message.get("method") for s in legacy.seen if s.message) == "initialize"
    ready_event(link)
    refusing = FakeServer()
    refusing.hook = lambda seen: Reply(404) if seen.message and seen.message.get("method") == "server/discover" else None
    pinned = link_to(refusing, protocol="modern")
    [failed] = pinned.of_type(StartFailed)
    assert "2026-07-28" in str(failed.error)
    assert "initialize" not in [s.message.get("method") for s in refusing.seen if s.message]


def test_M12_the_verdict_is_kept_for_the_next_attempt() -> None:
    legacy = FakeServer()
    legacy.hook = lambda seen: Reply(405) if seen.message and seen.message.get("method") == "server/discover" else None
    link = link_to(legacy)
    ready_event(link)
    assert link.engine.session.era == "legacy"
    probes = [s for s in legacy.seen if s.message and s.message.get("method") == "server/discover"]
    assert len(probes) == 1


@pytest.mark.parametrize("status", [408, 429])
def test_M10_M13_a_408_or_429_to_the_probe_is_not_era_evidence(status: int) -> None:
    server = ModernFake()
    busy = [True]

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "server/discover" and busy[0]:
            busy[0] = False
            return Reply(status, [(b"content-type", b"text/plain")], [b"slow down"])
        return None

    server.hook = hook
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert "initialize" not in server.methods()
    assert link.engine.session.era is None
    link.advance(failed.retry_at - link.now)
    assert ready_event(link).protocol_version == V  # probed again: not pinned to initialize
    assert server.methods().count("server/discover") == 2


def test_M13_a_failed_start_up_after_a_handshake_verdict_probes_again() -> None:
    server = ModernFake()
    legacy_for_now = [True]

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if legacy_for_now[0] and message["method"] == "server/discover":
            return Reply(405)  # the handshake era's answer (M8)
        if legacy_for_now[0] and message["method"] == "initialize":
            legacy_for_now[0] = False  # the server is replaced by a 2026-07-28 one
            return Reply(503)
        return None

    server.hook = hook
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert server.methods() == ["server/discover", "initialize"]
    link.advance(failed.retry_at - link.now)
    assert ready_event(link).protocol_version == V
    assert server.methods()[2] == "server/discover"


def test_M13_a_modern_verdict_that_stops_fitting_is_probed_again_and_the_call_is_not_resent() -> None:
    server = ModernFake()
    link = link_to(server)
    assert ready_event(link).protocol_version == V
    legacy = FakeServer()
    link.server = legacy  # type: ignore[assignment]  # the endpoint now speaks the handshake era
    call_id = link.engine.call("srv/echo", {"n": 1}, link.now)
    failed = outcome(link, call_id)
    assert isinstance(failed, CallFailed) and isinstance(failed.error, TransportError)
    assert failed.error.status == 400
    # probed again, fell back, set up a handshake-era session and re-listed
    assert [s.message["method"] for s in legacy.seen if s.message][:4] == [
        "tools/call",
        "server/discover",
        "initialize",
        "notifications/initialized",
    ]
    assert link.engine.session.era == "legacy"
    assert len(legacy.requests("tools/call")) == 1  # the failed call was not sent again
    again = link.engine.call("srv/echo", {"n": 2}, link.now)
    assert isinstance(outcome(link, again), CallSucceeded)
    assert legacy.requests("tools/call")[-1]["params"] == {"name": "echo", "arguments": {"n": 2}, "_meta": {"progressToken": again}}

# --- the modern wire ---------------------------------------------------------------------------


def test_M58_M69_M70_cancel_closes_the_stream_no_notice_no_get_no_delete() -> None:
    server = ModernFake()
    server.call_reply = lambda m: Reply(200, SSE, [], finish="stall")
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    xid = link.requests[-1].exchange_id
    assert link.engine.cancel(call_id, link.now)
    link.pump()
    assert xid in link.aborted and isinstance(outcome(link, call_id), CallCancelled)
    link.engine.close(link.now)
    link.pump()
    assert link.engine.finished
    assert [m for m, _, _ in server.seen if m != "POST"] == []
    assert server.problems == []  # no notification, no session id


def test_M69_a_session_id_on_a_modern_answer_is_never_echoed() -> None:
    server = ModernFake()
    original = server.handle

    def with_session(req: HttpRequest) -> Reply:
        reply = original(req)
        reply.headers.append((b"mcp-session-id", b"sess-1"))
        return reply

    server.handle = with_session  # type: ignore[method-assign]
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert server.problems == []


def test_M9_M73_an_error_status_with_a_json_rpc_body_is_that_calls_error() -> None:
    server = ModernFake()
    server.call_reply = lambda m: Reply(
        400, JSON, [json.dumps(rpc_error(None, -32021, "needs elicitation", {"requiredCapabilities": ["elicitation"]})).encode()]
    )
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "-32021" in str(event.error)


def test_E3_M72_a_broken_call_stream_fails_the_call_and_is_never_resent() -> None:
    server = ModernFake()
    server.call_reply = lambda m: Reply(200, SSE, [b"id: 1\ndata: \n\n"], finish="fail")
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, TransportError)
    link.advance(10)
    assert server.methods().count("tools/call") == 1
    assert all(m == "POST" for m, _, _ in server.seen)  # no GET with Last-Event-ID


def test_E3_a_broken_listing_stream_is_reissued_once_with_a_new_id() -> None:
    server = ModernFake()
    broken = {"left": 1}

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/list" and broken["left"]:
            broken["left"] -= 1
            return Reply(200, SSE, [], finish="fail")
        return None

    server.hook = hook
    link = link_to(server)
    ready_event(link)
    ids = [m["id"] for _, _, m in server.seen if m and m["method"] == "tools/list"]
    assert len(ids) == 2 and ids[0] != ids[1]


# --- SEP-2243 (M32-M42) --------------------------------------------------------------------------


HEADER_TOOL = tool(
    "regional",
    inputSchema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "note": {"type": "string"},
        },
    },
)
BAD_TOOL = tool("bad", inputSchema={"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}})


def test_M32_M33_M37_invalid_declarations_drop_that_tool_and_params_become_headers(caplog: pytest.LogCaptureFixture) -> None:
    server = ModernFake(tools=[HEADER_TOOL, BAD_TOOL, tool("echo")])
    with caplog.at_level(logging.WARNING, logger="mcpcore"):
        link = link_to(server)
    assert [t.name for t in ready_event(link).catalogue.tools] == ["regional", "echo"]
    assert any("bad" in r.getMessage() and "x-mcp-header" in r.getMessage() for r in caplog.records)
    call_id = link.engine.call("srv/regional", {"region": "Hello, 世界", "priority": 42, "note": "n"}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    headers = server.seen[-1][1]
    assert headers["mcp-param-priority"] == "42"
    wrapped = headers["mcp-param-region"]
    assert wrapped.startswith("=?base64?") and base64.b64decode(wrapped[9:-2]).decode() == "Hello, 世界"
    assert not any(k.startswith("mcp-param-note") for k in headers)


def test_M42_E5_a_header_mismatch_relists_once_and_sends_the_call_once_more() -> None:
    server = ModernFake(tools=[HEADER_TOOL])
    mismatches = {"left": 1}

    def reply(message: dict[str, Any]) -> Reply:
        if mismatches["left"]:
            mismatches["left"] -= 1
            return Reply(400, JSON, [json.dumps(rpc_error(message["id"], -32020, "Header mismatch")).encode()])
        result = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

    server.call_reply = reply
    link = link_to(server)
    call_id = link.engine.call("srv/regional", {"region": "eu"}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.output.text == "ok"
    assert server.methods()[-3:] == ["tools/call", "tools/list", "tools/call"]
    mismatches["left"] = 2
    again = link.engine.call("srv/regional", {"region": "eu"}, link.now)
    assert isinstance(outcome(link, again), CallFailed)  # a second mismatch is the caller's


# --- results (M43-M57) -----------------------------------------------------------------------------


def call_with(server: ModernFake, results: list[dict[str, Any]], arguments: dict[str, Any] | None = None) -> tuple[Link, int]:
    queue = list(results)

    def reply(message: dict[str, Any]) -> Reply:
        result = queue.pop(0) if queue else {"content": [{"type": "text", "text": "done"}]}
        return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

    server.call_reply = reply
    link = link_to(server)
    return link, link.engine.call("srv/echo", arguments or {"a": 1}, link.now)


def calls(server: ModernFake) -> list[dict[str, Any]]:
    return [m for _, _, m in server.seen if m and m["method"] == "tools/call"]


def test_M43_a_result_without_result_type_is_complete() -> None:
    server = ModernFake()
    link, call_id = call_with(server, [{"content": [{"type": "text", "text": "plain"}]}])
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.output.text == "plain"
    assert len(calls(server)) == 1


def test_M44_an_unknown_result_type_is_a_protocol_error() -> None:
    server = ModernFake()
    link, call_id = call_with(server, [{"resultType": "weird", "content": []}])
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, RemoteProtocolError)


def test_M48_M50_E4_input_required_is_answered_and_resent_with_a_new_id_and_the_state() -> None:
    server = ModernFake()
    state = '{"step": 1, "nonce": "a\\u00e9"}'
    asked = {
        "resultType": "input_required",
        "inputRequests": {
            "confirm": {"method": "elicitation/create", "params": {"message": "ok?"}},
            "where": {"method": "roots/list", "params": {}},
        },
        "requestState": state,
    }
    link, call_id = call_with(server, [asked, {"resultType": "input_required", "inputRequests": {"c": {"method": "elicitation/create"}}}])
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.call_id == call_id
    first, second, third = calls(server)
    assert len({first["id"], second["id"], third["id"]}) == 3
    assert second["params"]["requestState"] == state  # byte for byte
    assert second["params"]["inputResponses"] == {"confirm": {"action": "cancel"}, "where": {"roots": []}}
    assert second["params"]["arguments"] == {"a": 1} and second["params"]["name"] == "echo"
    assert "requestState" not in third["params"]  # M50: none given, none sent
    assert server.problems == []


def test_M51_state_belongs_to_the_retry_of_that_request_only() -> None:
    server = ModernFake()
    asked = {"resultType": "input_required", "requestState": "s1"}
    link, call_id = call_with(server, [asked])
    outcome(link, call_id)
    other = link.engine.call("srv/echo", {"b": 2}, link.now)
    outcome(link, other)
    assert "requestState" not in calls(server)[-1]["params"]
    assert "inputResponses" not in calls(server)[-1]["params"]


def test_M52_sampling_cannot_be_answered_and_fails_the_call_naming_it() -> None:
    server = ModernFake()
    asked = {"resultType": "input_required", "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}}}
    link, call_id = call_with(server, [asked])
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "sampling/createMessage" in str(event.error)
    assert len(calls(server)) == 1


def test_M54_input_required_rounds_are_bounded() -> None:
    server = ModernFake()
    asked = {"resultType": "input_required", "requestState": "again"}
    link, call_id = call_with(server, [asked] * 50)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "rounds" in str(event.error)
    assert len(calls(server)) == 10


def test_M55_cancelling_between_rounds_sends_nothing_more() -> None:
    server = ModernFake()
    link = link_to(server)
    stall = {"on": False}

    def reply(message: dict[str, Any]) -> Reply:
        if stall["on"]:
            return Reply(200, SSE, [], finish="stall")
        stall["on"] = True
        return Reply(200, JSON, [json.dumps(rpc(message["id"], {"resultType": "input_required", "requestState": "x"})).encode()])

    server.call_reply = reply
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    assert len(calls(server)) == 2
    assert link.engine.cancel(call_id, link.now)
    link.pump()
    assert isinstance(outcome(link, call_id), CallCancelled)
    assert link.requests[-1].exchange_id in link.aborted
    assert len(calls(server)) == 2 and server.problems == []


def test_M60_progress_arrives_on_the_calls_stream_under_its_call_id() -> None:
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        token = message["params"]["_meta"]["progressToken"]
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1, "total": 2}}
        result = {"resultType": "complete", "content": []}
        return Reply(200, SSE, [sse(note, rpc(message["id"], result))])

    server.call_reply = reply
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    progress = [e for e in link.events if type(e).__name__ == "ProgressReceived"]
    assert [(p.call_id, p.progress, p.total) for p in progress] == [(call_id, 1.0, 2.0)]


# --- subscriptions/listen (M63-M68) -----------------------------------------------------------------


def test_M63_M66_M67_list_changes_come_through_subscriptions_listen_and_a_loss_reopens_it() -> None:
    server = ModernFake(capabilities={"tools": {"listChanged": True}})
    listens: list[dict[str, Any]] = []

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] != "subscriptions/listen":
            return None
        listens.append(message)
        ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": {"toolsListChanged": True}}}
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
        if len(listens) == 1:
            return Reply(200, SSE, [sse(ack, changed)], finish="fail")
        return Reply(200, SSE, [sse(ack)], finish="stall")

    server.hook = hook
    link = link_to(server, auto_refresh=True)
    ready_event(link)
    assert listens and listens[0]["params"]["notifications"] == {"toolsListChanged": True}
    assert "mcp-name" not in server.seen[[m for _, _, m in server.seen].index(listens[0])][1]
    lists_before = server.methods().count("tools/list")
    assert lists_before >= 2  # the change was re-listed
    link.advance(1.0)  # the loss: opened again after the backoff, and listed again
    assert len(listens) == 2 and server.methods().count("tools/list") > lists_before
    link.engine.close(link.now)
    link.pump()
    assert link.engine.finished and server.problems == []


_ACK = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"notifications": {"toolsListChanged": True}}}


def test_M67_a_stream_broken_soon_after_each_acknowledgement_backs_off_more_each_time() -> None:
    """M67: a server that acknowledges ``subscriptions/listen`` and breaks it at once, each
    time, is re-opened (and its tools re-listed) after 1, 2, 4, 8... seconds, not every
    ``backoff_first`` forever: an acknowledgement alone does not restart the backoff."""
    server = ModernFake(capabilities={"tools": {"listChanged": True}})
    opened: list[float] = []

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] != "subscriptions/listen":
            return None
        opened.append(link.now)
        return Reply(200, SSE, [sse(_ACK)], finish="fail")  # up, then lost at once

    server.hook = hook
    link = link_to(server, auto_refresh=True, start=False)
    link.start()
    ready_event(link)
    lists_before = server.methods().count("tools/list")
    link.advance(120)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(opened)]
    assert gaps == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    # each re-open lists again (nothing is replayed): 6 listings in two minutes, not 120
    assert server.methods().count("tools/list") - lists_before == 6
    assert server.problems == []


def test_M67_a_stream_that_stayed_up_a_healthy_while_starts_the_backoff_afresh() -> None:
    """M64: the first frame on the listen stream acknowledges it; a stream that then stayed
    up for ``backoff_max`` counts as healthy, so its loss waits ``backoff_first`` again."""
    server = ModernFake(capabilities={"tools": {"listChanged": True}})
    opened: list[float] = []

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] != "subscriptions/listen":
            return None
        opened.append(link.now)
        if len(opened) <= 6:
            return Reply(200, SSE, [], finish="fail")  # lost before it was up
        return Reply(200, SSE, [sse(_ACK)], finish="stall")  # up, and it stays up

    server.hook = hook
    link = link_to(server, auto_refresh=True, start=False)
    link.start()
    ready_event(link)
    link.advance(1 + 2 + 4 + 8 + 16 + 32 + 0.5)
    assert len(opened) == 7
    link.advance(60.0)  # up for backoff_max: healthy
    [seventh] = [r.exchange_id for r in link.requests if r.body and json.loads(r.body).get("method") == "subscriptions/listen"][-1:]
    link.engine.response_failed(seventh, TransportFailure(FailureKind.RESET), link.now)
    link.advance(1.0)  # one second, not sixty
    assert len(opened) == 8


def test_M63_no_listening_without_auto_refresh() -> None:
    server = ModernFake(capabilities={"tools": {"listChanged": True}})
    link = link_to(server)
    ready_event(link)
    assert "subscriptions/listen" not in server.methods()


# --- the handshake era is unchanged ---------------------------------------------------------------


def test_M83_M87_legacy_requests_carry_no_modern_headers_or_envelope() -> None:
    legacy = FakeServer()
    legacy.hook = lambda seen: Reply(404) if seen.message and seen.message.get("method") == "server/discover" else None
    link = link_to(legacy)
    call_id = link.engine.call("srv/echo", {}, link.now)
    outcome(link, call_id)
    call = next(s for s in legacy.seen if s.message and s.message.get("method") == "tools/call")
    assert "mcp-method" not in call.headers and "mcp-name" not in call.headers
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert set(call.message["params"]["_meta"]) == {"progressToken"}  # type: ignore[index]


def test_X5_aborts_and_failures_of_the_probe_never_break_the_link() -> None:
    """A failed probe exchange reported twice (abort then failure) is harmless."""
    server = ModernFake()
    link = link_to(server, start=False)
    link.engine.start(link.now)
    [probe] = link.engine.take_actions()
    assert isinstance(probe, HttpRequest)
    link.engine.response_failed(probe.exchange_id, TransportFailure(FailureKind.REFUSED), link.now)
    link.engine.response_failed(probe.exchange_id, TransportFailure(FailureKind.REFUSED), link.now)
    assert [type(e) for e in link.engine.take_events()] == [StartFailed]
    assert not any(isinstance(a, AbortExchange) and a.exchange_id != probe.exchange_id for a in link.engine.take_actions())


# --- schemas as listed (E6, M46, M47) ------------------------------------------------------------


SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"address": {"$anchor": "addr", "type": "object", "properties": {"street": {"type": "string"}}}},
    "type": "object",
    "properties": {
        "home": {"$ref": "#/$defs/address"},
        "kind": {"enum": ["a", "b"]},
        "remote": {"$ref": "http://127.0.0.1:9/canary.json"},
    },
    "allOf": [{"anyOf": [{"required": ["home"]}, {"required": ["kind"]}]}],
    "if": {"properties": {"kind": {"const": "a"}}},
    "then": {"required": ["home"]},
    "else": {},
    "additionalProperties": False,
}


def test_E6_M46_a_schema_reaches_the_host_byte_for_byte() -> None:
    server = ModernFake(tools=[tool("shaped", inputSchema=SCHEMA_2020_12)])
    link = link_to(server)
    [shaped] = ready_event(link).catalogue.tools
    assert json.dumps(shaped.parameters) == json.dumps(SCHEMA_2020_12)  # same keys, same order


def test_E6_M47_output_validation_resolves_refs_inside_the_schema_and_fetches_nothing() -> None:
    import socket
    import threading

    from mcpcore.base._schema import compile_schema, validate

    canary = socket.socket()
    canary.bind(("127.0.0.1", 0))
    canary.listen(4)
    canary.setblocking(False)
    port = canary.getsockname()[1]
    try:
        schema = {
            "$defs": {"id": {"type": "string"}},
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/id"}, "p": {"$ref": f"http://127.0.0.1:{port}/x.json"}},
        }
        validator = compile_schema(schema)
        assert validator is not None
        violated = validate(validator, {"a": 1})  # the local $ref resolved
        assert violated is not None and "$.a" in str(violated)
        outcome: list[object] = []
        # bounded: a client that fetched would wait on the silent canary for good
        worker = threading.Thread(target=lambda: outcome.append(validate(validator, {"a": "x", "p": 1})), daemon=True)
        worker.start()
        worker.join(10)
        assert outcome == [None]  # remote: left unvalidated, at once
        with pytest.raises(BlockingIOError):
            canary.accept()  # nobody ever connected to the canary
    finally:
        canary.close()
