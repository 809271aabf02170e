"""2026-07-28 rules the other tests relied on without naming (M7–M82), in the core.

Driven as ``tests/test_modern.py`` drives the session: ``ModernFake`` answers
as a 2026-07-28 server does and records every request; ``FakeServer`` is the
handshake era. A fake clock; no sockets.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from fake_peer import FakeServer, Reply, sse, tool
from mcpcore import CallFailed, CallSucceeded, HandshakeError, StartFailed
from test_modern import (
    BAD_TOOL,
    JSON,
    META_V,
    SSE,
    ModernFake,
    V,
    call_with,
    calls,
    link_to,
    outcome,
    ready_event,
    rpc,
    rpc_error,
)

CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"


def _posts(server: ModernFake) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [(headers, body) for method, headers, body in server.seen if method == "POST" and body]


def _nulls(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_nulls(v) for v in value.values())
    if isinstance(value, list):
        return any(_nulls(v) for v in value)
    return False


@pytest.mark.parametrize("code", [-32020, -32021])
def test_M7_a_32020_or_32021_answering_the_probe_proves_a_modern_server(code: int) -> None:
    """M7: the server refused a well-formed probe in the 2026-07-28 way: it speaks that
    revision, so the client does not fall back to ``initialize``."""
    server = ModernFake()
    body = rpc_error(None, code, "refused", {"requiredCapabilities": ["elicitation"]})
    server.hook = lambda m, h: (
        Reply(400, JSON, [json.dumps({**body, "id": m["id"]}).encode()])
        if m["method"] == "server/discover"
        else None
    )
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert str(code) in str(failed.error)
    assert "initialize" not in server.methods()


def test_M14_the_probe_is_never_cancelled() -> None:
    """M14: a probe that never answers ends at the start-up deadline without a
    ``notifications/cancelled`` (the fake records any notification as a problem)."""
    server = ModernFake()
    server.hook = lambda m, h: Reply(200, SSE, [], finish="stall")
    link = link_to(server, startup_timeout=5.0)
    link.advance(6.0)
    assert link.of_type(StartFailed)
    assert server.problems == [] and set(server.methods()) == {"server/discover"}


def test_M15_M16_the_probe_carries_only_meta_and_the_identity_is_optional() -> None:
    """M15: ``server/discover``'s params are the ``_meta`` envelope alone. M16: the
    server's identity comes from the result's ``_meta``, else a top-level
    ``serverInfo``; with neither (or a malformed one) the session still comes up."""
    top_level = {"name": "top", "version": "2"}
    for shape, expected in (
        ("meta", {"name": "modern", "version": "1"}),
        ("top", top_level),
        ("none", {}),
        ("malformed", {}),
    ):
        server = ModernFake()

        def hook(
            message: dict[str, Any], headers: dict[str, str], shape: str = shape
        ) -> Reply | None:
            if message["method"] != "server/discover" or shape == "meta":
                return None
            result: dict[str, Any] = {
                "resultType": "complete",
                "supportedVersions": [V],
                "capabilities": {"tools": {}},
            }
            if shape == "top":
                result["serverInfo"] = top_level
            if shape == "malformed":
                result["_meta"] = {"io.modelcontextprotocol/serverInfo": "not an object"}
            return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

        server.hook = hook
        link = link_to(server)
        _, _, discover = server.seen[0]
        assert discover is not None and set(discover["params"]) == {"_meta"}
        assert ready_event(link).server_info == expected, shape


def test_M17_the_tools_are_listed_without_a_tools_capability() -> None:
    """M17: in 2026-07-28, ``tools/list`` goes even when discover named no tools
    capability (the handshake era does not list then)."""
    server = ModernFake(capabilities={})
    link = link_to(server)
    ready_event(link)
    assert server.methods() == ["server/discover", "tools/list"]
    assert [t.id for t in link.engine.catalogue.tools] == ["srv/echo"]  # type: ignore[union-attr]


def test_M19_M20_M22_M27_every_request_carries_the_whole_envelope_and_its_own_headers() -> None:
    """M19: the client's capabilities (``{}``), M20: its name and version, on every
    request; M22: the whole envelope each time, no key sent as null; M27: the
    Mcp-Method, Mcp-Name and version headers are those of the very body sent."""
    server = ModernFake(capabilities={"tools": {"listChanged": True}})
    server.hook = lambda m, h: (
        Reply(200, SSE, [], finish="stall") if m["method"] == "subscriptions/listen" else None
    )
    link = link_to(server, auto_refresh=True)
    for arguments in ({"x": 1}, {}):
        call_id = link.engine.call("srv/echo", arguments, link.now)
        assert isinstance(outcome(link, call_id), CallSucceeded)
    link.engine.refresh(link.now)
    link.pump()
    posts = _posts(server)
    assert {body["method"] for _, body in posts} >= {
        "server/discover",
        "tools/list",
        "tools/call",
        "subscriptions/listen",
    }
    for headers, body in posts:
        meta = body["params"]["_meta"]
        assert meta[META_V] == V and meta[CAPS] == {}
        assert meta[INFO] == {"name": "mcpcore", "version": "0.1.0"}
        assert not _nulls(body), body["method"]
        assert headers["mcp-method"] == body["method"]
        assert headers["mcp-protocol-version"] == meta[META_V]
        if body["method"] == "tools/call":
            assert headers["mcp-name"] == body["params"]["name"]
    assert server.problems == []


def test_M21_no_log_level_is_asked_and_log_notifications_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """M21: no ``logging/setLevel``; a log notification that still arrives on a call's
    stream is logged, and the call goes on."""
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "data": "disk nearly full"},
        }
        result = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        return Reply(200, SSE, [sse(note, rpc(message["id"], result))])

    server.call_reply = reply
    link = link_to(server)
    with caplog.at_level(logging.WARNING, logger="mcpcore"):
        call_id = link.engine.call("srv/echo", {}, link.now)
        assert isinstance(outcome(link, call_id), CallSucceeded)
    assert any("disk nearly full" in r.getMessage() for r in caplog.records)
    assert "logging/setLevel" not in server.methods()


def test_M62_M71_no_progress_ping_set_level_or_initialize_to_a_modern_server() -> None:
    """M62: the client never sends progress (even while receiving some); M71: nor
    ``ping``, ``logging/setLevel`` or ``initialize``, however long the session."""
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        token = message["params"]["_meta"]["progressToken"]
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1},
        }
        return Reply(
            200, SSE, [sse(note, rpc(message["id"], {"resultType": "complete", "content": []}))]
        )

    server.call_reply = reply
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    link.advance(600.0)
    assert set(server.methods()) == {"server/discover", "tools/list", "tools/call"}
    assert server.problems == []  # nothing was sent as a notification either


def test_M28_event_stream_comments_ids_and_retry_are_ignored() -> None:
    """M28: JSON (the listing) and event-stream (the call) answers are both read; on a
    2026-07-28 stream, comments, ``id`` and ``retry`` change nothing: no resumption."""
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        result = rpc(
            message["id"], {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        )
        return Reply(200, SSE, [b": a comment\n\nretry: 5\nid: 7\n\n", sse(result)])

    server.call_reply = reply
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    link.advance(30.0)
    assert all(method == "POST" for method, _, _ in server.seen)
    assert all("last-event-id" not in headers for _, headers, _ in server.seen)


def test_M29_a_server_request_on_a_modern_stream_is_not_answered() -> None:
    """M29: a request arriving on a 2026-07-28 response stream gets no answer (there
    is nowhere to send one); the call it came with still completes."""
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        ping = {"jsonrpc": "2.0", "id": "server-1", "method": "ping"}
        done = rpc(message["id"], {"resultType": "complete", "content": []})
        return Reply(200, SSE, [sse(ping, done)])

    server.call_reply = reply
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    link.advance(5.0)
    assert all("result" not in body and "error" not in body for _, body in _posts(server))
    assert server.problems == []


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_M31_redirects_are_not_followed(status: int) -> None:
    """M31: a redirect answering a call fails that call; nothing goes to its Location."""
    server = ModernFake()
    server.call_reply = lambda m: Reply(status, [(b"location", b"https://elsewhere.test/mcp")])
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallFailed)
    link.advance(5.0)
    assert all("elsewhere" not in request.url for request in link.requests)


def test_M41_header_declarations_matter_on_http_in_2026_07_28_only() -> None:
    """M41: in the handshake era (as over stdio, which is always that era) an
    ``x-mcp-header`` declaration is not read: a tool whose declaration would be
    invalid in 2026-07-28 is kept, and no Mcp-Param header is sent."""
    legacy = FakeServer(tools=[BAD_TOOL, tool("echo")])
    link = link_to(legacy, protocol="legacy")
    ready_event(link)
    assert [t.name for t in link.engine.catalogue.tools] == ["bad", "echo"]  # type: ignore[union-attr]
    call_id = link.engine.call("srv/bad", {"n": 1.5}, link.now)
    outcome(link, call_id)
    call = next(s for s in legacy.seen if s.message and s.message.get("method") == "tools/call")
    assert not any(name.startswith("mcp-param") for name in call.headers)

    modern = ModernFake(tools=[BAD_TOOL, tool("echo")])
    link = link_to(modern)
    assert [t.name for t in link.engine.catalogue.tools] == ["echo"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "hints",
    [
        {},  # missing: zero and private
        {"ttlMs": -5, "cacheScope": "public"},  # negative: zero
        {"ttlMs": "soon", "cacheScope": 7},  # not even numbers: ignored
        {"ttlMs": 3_600_000, "cacheScope": "public"},  # a long TTL: still not reused
    ],
    ids=["missing", "negative", "garbage", "long"],
)
def test_M45_M78_M79_M81_cache_hints_never_reuse_a_listing_nor_poll(hints: dict[str, Any]) -> None:
    """M81: discover and list results may carry cache hints; M45: missing or negative
    ones read as zero (whatever they say, the session comes up); M78 (E7): this client
    never reuses a listing: a refresh lists again; M79: a TTL is not a polling timer."""
    server = ModernFake()

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        rid, method = message["id"], message["method"]
        if method == "server/discover":
            result = {
                "resultType": "complete",
                "supportedVersions": [V],
                "capabilities": {"tools": {}},
                **hints,
            }
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": [tool("echo")], **hints}
        else:
            return None
        return Reply(200, JSON, [json.dumps(rpc(rid, result)).encode()])

    server.hook = hook
    link = link_to(server)
    ready_event(link)
    link.advance(7200.0)
    assert server.methods() == ["server/discover", "tools/list"]  # no polling
    link.engine.refresh(link.now)
    link.pump()
    assert server.methods().count("tools/list") == 2  # not reused


def test_M80_cache_hints_from_the_handshake_era_are_ignored() -> None:
    """M80: a handshake-era listing with cache hints is used as any other: no polling,
    and a refresh lists again."""
    legacy = FakeServer()
    legacy.hook = lambda seen: (
        Reply(
            200,
            JSON,
            [
                json.dumps(
                    rpc(
                        seen.message["id"],
                        {"tools": [tool("echo")], "ttlMs": 1000, "cacheScope": "public"},
                    )
                ).encode()
            ],
        )
        if seen.message and seen.message.get("method") == "tools/list"
        else None
    )
    link = link_to(legacy, protocol="legacy")
    ready_event(link)
    lists = sum(1 for s in legacy.seen if s.message and s.message.get("method") == "tools/list")
    link.advance(7200.0)
    assert (
        sum(1 for s in legacy.seen if s.message and s.message.get("method") == "tools/list")
        == lists
    )


def test_M82_a_modern_listing_is_walked_across_every_page() -> None:
    """M82: ``tools/list`` follows ``nextCursor`` in 2026-07-28 as in the handshake
    era (T5), and a cursor that comes back is an error, not a loop."""
    pages = {None: (["a", "b"], "p2"), "p2": (["c"], "p3"), "p3": (["d"], None)}

    def paged(
        message: dict[str, Any], headers: dict[str, str], pages: dict[Any, Any] = pages
    ) -> Reply | None:
        if message["method"] != "tools/list":
            return None
        names, cursor = pages[message["params"].get("cursor")]
        result: dict[str, Any] = {"resultType": "complete", "tools": [tool(n) for n in names]}
        if cursor is not None:
            result["nextCursor"] = cursor
        return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

    server = ModernFake()
    server.hook = paged
    link = link_to(server)
    ready_event(link)
    assert [t.name for t in link.engine.catalogue.tools] == ["a", "b", "c", "d"]  # type: ignore[union-attr]
    assert server.problems == []

    looping = {None: (["a"], "again"), "again": (["b"], "again")}
    server = ModernFake()
    server.hook = lambda m, h: paged(m, h, looping)
    link = link_to(server)
    [failed] = link.of_type(StartFailed)
    assert "cursor" in str(failed.error)
    assert server.methods().count("tools/list") <= 3


def test_M74_a_32022_answering_a_later_request_is_read_like_one_answering_the_probe() -> None:
    """M74: once ready, a ``-32022`` naming a version the client speaks is answered by
    sending that request once more at that version; naming none it speaks fails it,
    naming the versions."""
    server = ModernFake()
    refused = {"left": 1}

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] == "tools/call" and refused["left"]:
            refused["left"] -= 1
            body = rpc_error(
                message["id"],
                -32022,
                "Unsupported protocol version",
                {"supported": [V], "requested": V},
            )
            return Reply(400, JSON, [json.dumps(body).encode()])
        return None

    server.hook = hook
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert server.methods().count("tools/call") == 2

    server = ModernFake()
    server.hook = lambda m, h: (
        Reply(
            400,
            JSON,
            [
                json.dumps(
                    rpc_error(m["id"], -32022, "no", {"supported": ["2030-01-01"], "requested": V})
                ).encode()
            ],
        )
        if m["method"] == "tools/call"
        else None
    )
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "2030-01-01" in str(event.error)
    assert not isinstance(event.error, HandshakeError) or "2030-01-01" in str(event.error)
    # the verdict no longer fits: the endpoint is probed afresh, once
    link.pump()
    assert server.methods().count("server/discover") == 2
    assert server.methods().count("tools/call") == 1  # never re-sent


@pytest.mark.parametrize("code", [-32000, -32001, -32010, -32019])
def test_M75_M76_codes_below_32020_carry_no_mcp_meaning(code: int) -> None:
    """M75: a JSON-RPC error with a code from -32000 to -32019 is that call's error,
    nothing more (no re-listing, no resending); M76: the client's own failures carry
    no such code."""
    server = ModernFake()
    server.call_reply = lambda m: Reply(
        200, JSON, [json.dumps(rpc_error(m["id"], code, "server says no")).encode()]
    )
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "server says no" in str(event.error)
    assert server.methods().count("tools/call") == 1 and server.methods().count("tools/list") == 1

    server = ModernFake()
    server.call_reply = lambda m: Reply(200, SSE, [], finish="stall")
    link = link_to(server, call_timeout=2.0)
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.advance(3.0)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed)
    assert getattr(event.error, "code", None) is None and "-32" not in str(event.error)


def test_M77_is_error_is_the_tools_result_not_a_json_rpc_error() -> None:
    """M77: ``isError: true`` arrives as a result: the call fails as the tool's own
    failure (a backend error with its text), never as a protocol error."""
    from mcpcore import BackendError

    server = ModernFake()
    server.call_reply = lambda m: Reply(
        200,
        JSON,
        [
            json.dumps(
                rpc(
                    m["id"],
                    {
                        "resultType": "complete",
                        "isError": True,
                        "content": [{"type": "text", "text": "bad input"}],
                    },
                )
            ).encode()
        ],
    )
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, BackendError)
    assert event.error.text == "bad input"


def test_M53_a_state_only_round_is_sent_again_at_once() -> None:
    """M53: an ``input_required`` result that asks for nothing but carries a state is
    answered at once (no wait), the state sent back as it came."""
    server = ModernFake()
    link, call_id = call_with(server, [{"resultType": "input_required", "requestState": "s-1"}])
    started = link.now
    link.pump()
    assert link.now == started and len(calls(server)) == 2
    assert calls(server)[1]["params"]["requestState"] == "s-1"
    assert isinstance(outcome(link, call_id), CallSucceeded)


def test_M59_what_still_arrives_for_a_cancelled_request_is_dropped() -> None:
    """M59: after a cancel (its stream aborted), a result that still arrives on that
    exchange is dropped: the call stays cancelled, nothing else happens."""
    server = ModernFake()
    server.call_reply = lambda m: Reply(200, SSE, [], finish="stall")
    link = link_to(server)
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    request = link.requests[-1]
    assert link.engine.cancel(call_id, link.now)
    link.pump()
    body = json.loads(request.body or b"{}")
    late = rpc(
        body["id"], {"resultType": "complete", "content": [{"type": "text", "text": "late"}]}
    )
    link.engine.response_data(request.exchange_id, sse(late), link.now)
    link.engine.response_ended(request.exchange_id, link.now)
    link.pump()
    assert [type(e).__name__ for e in link.events if getattr(e, "call_id", None) == call_id] == [
        "CallCancelled"
    ]


def test_M61_progress_is_taken_only_for_requests_still_running() -> None:
    """M61: progress naming a finished call's token (here, on a later call's stream) is
    dropped; the running call's own progress is taken."""
    server = ModernFake()
    tokens: list[Any] = []

    def reply(message: dict[str, Any]) -> Reply:
        token = message["params"]["_meta"]["progressToken"]
        tokens.append(token)
        notes = [
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": t, "progress": 1},
            }
            for t in tokens
        ]
        done = rpc(message["id"], {"resultType": "complete", "content": []})
        return Reply(200, SSE, [sse(*notes, done)])

    server.call_reply = reply
    link = link_to(server)
    first = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, first), CallSucceeded)
    second = link.engine.call("srv/echo", {}, link.now)
    assert isinstance(outcome(link, second), CallSucceeded)
    progress = [e.call_id for e in link.events if type(e).__name__ == "ProgressReceived"]
    assert progress == [
        first,
        second,
    ]  # the first call's stale progress on the second stream: dropped
