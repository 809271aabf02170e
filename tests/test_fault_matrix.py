"""The fault matrix: bad networks and bad servers, each with its exact outcome.

Over loopback against the demo server's ``fault`` hook (and a bare socket
server where HTTP itself must break), on both drivers (anyio on asyncio and
trio, and threaded). Every case states the error type and the key words of its
message (or the availability reason), and runs under a time bound. Cases that
tests/test_drivers.py already covers (redirect, 404 expiry with resend, stall
after headers, oversized reply, non-JSON data, cursor loop) are not repeated.

| case | expected outcome |
| --- | --- |
| down at start | unavailable ("closed or reset"); attempts 1 s, then 2 s apart (L4) |
| refused during handshake | unavailable, reason names the connect failure |
| reset during handshake (close, RST, body cut) | unavailable, "closed or reset" / "before the response arrived" (X5) |
| garbage bytes instead of HTTP | TransportError "not valid HTTP", session goes on (X5) |
| drop mid-SSE with event ids | resumed by GET + Last-Event-ID, call succeeds, POSTed once (H4) |
| drop mid-SSE without ids | MayHaveRun (a TransportError) "before the response arrived; the server may have run tool ..." (U3) |
| resume answered empty forever | LimitExceeded max_reconnects after max_reconnects + 1 GETs |
| JSON that is not JSON-RPC | RemoteProtocolError "invalid JSON-RPC"; session goes on (P0, P5) |
| response to an unknown id | ignored (debug log), the real response wins (P5) |
| duplicate responses | the first wins, the second ignored |
| 401/403/404/500/503 + HTML with ESC | unavailable: "HTTP <status>", escaped ``\\x1b``, no raw ESC (H7, X1) |
| wrong content type | TransportError "unexpected content type (text/html)" |
| session expiry mid-call | MayHaveRun (a TransportError) "may have run"; not replayed (H6, U3) |
| 100,000 tools | unavailable naming max_tools; with max_tools raised: 100,000 tools |
| invalid / duplicate names | dropped with a WARNING naming server and repr (T2) |
| sampling, elicitation, roots requests | each answered -32601 (P4) |
| ping during the handshake | answered {} before the initialize result (P3a) |
| notifications before initialize result | handled; the handshake succeeds (P3a, P4) |
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import (
    HttpLimits,
    LimitExceeded,
    MayHaveRun,
    RemoteProtocolError,
    TransportError,
)
from mcpcore_demo import DemoServer, FaultResponse, JsonRpcError, ReceivedRequest
from raw_servers import close_at_once as _close_at_once
from raw_servers import garbage as _garbage
from raw_servers import reset as _reset
from raw_servers import socket_server

pytestmark = pytest.mark.anyio

SSE = {"content-type": "text/event-stream"}


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def entry(url: str, **extra: Any) -> dict[str, Any]:
    return {"url": url, **extra}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sse_event(message: dict[str, Any] | None, event_id: str | None = None, retry: int | None = None) -> bytes:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append("data: " + (json.dumps(message) if message is not None else ""))
    return ("\n".join(lines) + "\n\n").encode()


def text_result(rid: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


def calls_to(server: DemoServer) -> list[ReceivedRequest]:
    return server.requests_for("tools/call")


# --- L4: down at start, and the retry schedule ------------------------------------------------


async def test_L4_backoff_schedule_when_down_at_start(driver: str) -> None:
    """L4: the first retry comes 1 s after the first failure, the next 2 s after that.

    Over real sockets only what a loaded machine cannot blur is asserted: each retry no
    earlier than its delay after the attempt before it (an attempt fails only after the
    server has accepted it), and the second wait longer than the first. The exact
    schedule (1, 2, 4, ... s) is proven with a fake clock in test_session.py and
    test_errors.py."""
    with socket_server(_close_at_once) as (port, accepted):
        async with open_client(driver, "down", entry(f"http://127.0.0.1:{port}/mcp")) as client:
            with anyio.fail_after(30):
                availability = await client.ready(5)
                assert not availability.ok
                assert "the connection was closed or reset" in (availability.reason or "")
                await wait_for(lambda: len(accepted) >= 3, 20)
    first, second, third = accepted[:3]
    slack = 0.05  # clock granularity between the server's thread and the driver's timer
    assert second - first >= 1.0 - slack, accepted
    assert third - second >= 2.0 - slack, accepted
    assert third - second > second - first, accepted  # the wait grows


# --- handshake broken by the network ---------------------------------------------------------


async def test_handshake_connection_refused(driver: str) -> None:
    """Nothing listens: unavailable at once, the reason names the connect failure."""
    async with open_client(driver, "gone", entry(f"http://127.0.0.1:{free_port()}/mcp")) as client:
        with anyio.fail_after(10):
            availability = await client.ready(5)
    assert not availability.ok
    reason = availability.reason or ""
    assert reason == "the connection was refused (Connection refused) before the response arrived"


@pytest.mark.parametrize("behaviour", [_close_at_once, _reset], ids=["closed", "reset"])
async def test_handshake_connection_reset(driver: str, behaviour: Callable[[socket.socket], None]) -> None:
    """The server drops (or resets) the connection during initialize: unavailable, with the reason."""
    with socket_server(behaviour) as (port, _):
        async with open_client(driver, "reset", entry(f"http://127.0.0.1:{port}/mcp")) as client:
            with anyio.fail_after(10):
                availability = await client.ready(5)
    assert not availability.ok
    reason = availability.reason or ""
    assert reason == "the connection was closed or reset before the response arrived"


async def test_handshake_stream_cut_without_event_ids(driver: str) -> None:
    """The initialize stream breaks mid-body with no event id: the attempt fails (no resume)."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "initialize":
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
            return FaultResponse.respond(200, SSE, [sse_event(note)], abort=True)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "cut", entry(running.url)) as client:
            with anyio.fail_after(10):
                availability = await client.ready(5)
        assert [r.method for r in running.server.received].count("GET") == 0
    assert not availability.ok
    assert "before the response arrived" in (availability.reason or "")


async def test_garbage_bytes_instead_of_http(driver: str) -> None:
    """Bytes that are not HTTP at all: a transport error, never a hang or another exception."""
    with socket_server(_garbage) as (port, _):
        async with open_client(driver, "junk", entry(f"http://127.0.0.1:{port}/mcp")) as client:
            with anyio.fail_after(10):
                availability = await client.ready(5)
    assert not availability.ok
    assert availability.reason == "the reply was not valid HTTP before the response arrived"


async def test_garbage_bytes_mid_session_fail_only_that_call(driver: str) -> None:
    """Raw garbage in place of a tools/call reply: TransportError; the next call works."""
    bad = {"on": True}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if bad["on"] and request.rpc_method == "tools/call":
            bad["on"] = False
            return FaultResponse.raw(b"\x00\x01\x02 NOT-HTTP \xff\r\n\r\n")
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(TransportError) as info:
                    await client.call("demo/echo", {"text": "x"})
                assert "the reply was not valid HTTP" in str(info.value)
                assert (await client.call("demo/echo", {"text": "ok"})).text == "ok"


# --- H4: streams that break ---------------------------------------------------------------------


async def test_H4_drop_mid_sse_with_ids_resumes_with_last_event_id(driver: str) -> None:
    """H4: a stream with an event id that breaks is resumed by GET + Last-Event-ID; no replay.

    M91: handshake-era streams are resumed.
    """

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            rid = request.rpc_id
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": rid, "progress": 1},
            }
            body = sse_event(None, "c-1", retry=20) + sse_event(progress, "c-2")
            return FaultResponse.respond(200, SSE, [body], abort=True)
        if request.method == "GET" and "last-event-id" in request.headers:
            call = calls_to(running.server)[-1]
            return FaultResponse.respond(200, SSE, sse_event(text_result(call.rpc_id, "resumed"), "c-3"))
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                output = await client.call("demo/echo", {"text": "x"})
        assert output.text == "resumed"
        resumes = [r for r in running.server.received if r.method == "GET"]
        assert [r.headers["last-event-id"] for r in resumes] == ["c-2"]
        assert len(calls_to(running.server)) == 1


async def test_H4_drop_mid_sse_without_ids_is_a_transport_error(driver: str) -> None:
    """H4: without any event id a broken stream cannot be resumed: TransportError."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": request.rpc_id, "progress": 1},
            }
            return FaultResponse.respond(200, SSE, [sse_event(progress)], abort=True)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(TransportError) as info:
                    await client.call("demo/echo", {"text": "x"})
        text = str(info.value)
        # U3: the call went out whole (its stream began): it may have run; H4's words first
        assert isinstance(info.value, MayHaveRun) and info.value.tool == "demo/echo"
        assert text.startswith("the connection was closed or reset before the response arrived; ")
        assert [r.method for r in running.server.received].count("GET") == 0
        assert len(calls_to(running.server)) == 1


async def test_H4_P6_empty_resumes_forever_are_bounded(driver: str) -> None:
    """H4, P6: a server that answers every resume with an empty stream: LimitExceeded(max_reconnects)."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            return FaultResponse.respond(200, SSE, sse_event(None, "p-1", retry=10))
        if request.method == "GET" and "last-event-id" in request.headers:
            return FaultResponse.respond(200, SSE, b"")
        return None

    limits = HttpLimits(max_reconnects=2, default_retry=0.01)
    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False, limits=limits) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(LimitExceeded) as info:
                    await client.call("demo/echo", {"text": "x"})
        assert info.value.limit_name == "max_reconnects"
        assert "max_reconnects limit of 2" in str(info.value)
        resumes = [r for r in running.server.received if r.method == "GET"]
        assert len(resumes) == 3  # max_reconnects + 1 quiet resumes, then the bound
        assert len(calls_to(running.server)) == 1


# --- P0, P5: malformed and surprising replies -----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b'{"hello": "world"}', 'invalid JSON-RPC message: the "jsonrpc" member is missing'),
        (b'{"jsonrpc": "2.0", "hello": 1}', 'neither "result" nor "error"'),
        (b'[{"jsonrpc": "2.0", "id": 1, "result": {}}]', "a batch (JSON array) is not allowed"),
        (b'"just a string"', "a string, not an object"),
    ],
    ids=["no-version", "no-kind", "batch", "string"],
)
async def test_P0_json_that_is_not_json_rpc(driver: str, body: bytes, words: str) -> None:
    """P0, P5: valid JSON that is not one JSON-RPC message fails that call only."""
    bad = {"on": True}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if bad["on"] and request.rpc_method == "tools/call":
            bad["on"] = False
            return FaultResponse.respond(200, {"content-type": "application/json"}, body)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(RemoteProtocolError) as info:
                    await client.call("demo/echo", {"text": "x"})
                assert words in str(info.value)
                assert (await client.call("demo/echo", {"text": "ok"})).text == "ok"


async def test_P5_response_to_unknown_id_is_ignored(driver: str, caplog: pytest.LogCaptureFixture) -> None:
    """P5: a response with an id nobody asked for is ignored with a debug log."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            body = sse_event(text_result(987654, "stray")) + sse_event(text_result(request.rpc_id, "real"))
            return FaultResponse.respond(200, SSE, body)
        return None

    caplog.set_level(logging.DEBUG, logger="mcpcore")
    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                assert (await client.call("demo/echo", {"text": "x"})).text == "real"
    assert any("unknown id" in r.getMessage() and "987654" in r.getMessage() for r in caplog.records)


async def test_P5_duplicate_responses_first_wins(driver: str) -> None:
    """A response sent twice: the first completes the call, the second is ignored."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            rid = request.rpc_id
            body = sse_event(text_result(rid, "first")) + sse_event(text_result(rid, "second"))
            return FaultResponse.respond(200, SSE, body)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                assert (await client.call("demo/echo", {"text": "x"})).text == "first"
                assert (await client.call("demo/echo", {"text": "y"})).text == "first"
                assert (await client.ready(1)).ok


# --- H7, X1: HTTP errors ------------------------------------------------------------------------

HTML = b"<html><body><h1>\x1b[31mNope\x1b[0m</h1>\x07\x1b]0;pwned\x07</body></html>"


@pytest.mark.parametrize("status", [401, 403, 404, 500, 503])
async def test_H7_http_error_statuses_are_named_and_escaped(driver: str, status: int) -> None:
    """H7, X1: the reason names the status and shows the body escaped, never a raw ESC."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "initialize":
            return FaultResponse.respond(status, {"content-type": "text/html"}, HTML)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(10):
                availability = await client.ready(5)
    assert not availability.ok
    reason = availability.reason or ""
    assert f"{running.url} answered HTTP {status}: " in reason
    assert "\\x1b[31mNope" in reason and "\\x07" in reason
    assert "\x1b" not in reason and "\x07" not in reason


async def test_H3_wrong_content_type(driver: str) -> None:
    """H3: a 200 that is neither JSON nor SSE is a transport error naming the content type."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            return FaultResponse.respond(200, {"content-type": "text/html"}, b"<p>hi</p>")
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(TransportError) as info:
                    await client.call("demo/echo", {"text": "x"})
    assert "answered HTTP 200 with an unexpected content type (text/html)" in str(info.value)


# --- H6: expiry in the middle of a call -----------------------------------------------------------


async def test_H6_expiry_during_a_call_is_not_replayed(driver: str) -> None:
    """H6: the resume GET gets 404: TransportError saying the call may have run; never resent."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call" and len(calls_to(running.server)) == 1:
            return FaultResponse.respond(200, SSE, sse_event(None, "x-1", retry=10))
        if request.method == "GET" and "last-event-id" in request.headers:
            return FaultResponse.respond(404, {"content-type": "text/plain"}, b"Session not found")
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                with pytest.raises(TransportError) as info:
                    await client.call("demo/echo", {"text": "x"})
                assert "may have run" in str(info.value) and "not sent again" in str(info.value)
                assert isinstance(info.value, MayHaveRun) and info.value.tool == "demo/echo"  # U3
                assert len(calls_to(running.server)) == 1
                # L5: still ready; the next call works on a fresh session.
                assert (await client.call("demo/echo", {"text": "after"})).text == "after"
        assert len(running.server.requests_for("initialize")) == 2


# --- P6, T2: big and bad catalogues ---------------------------------------------------------------

_HUGE: dict[str, bytes] = {}


def huge_listing(rid: Any) -> bytes:
    """A tools/list result with 100,000 tools (built once)."""
    if "tools" not in _HUGE:
        tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(100_000)]
        _HUGE["tools"] = json.dumps(tools).encode()
    return b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":{"tools":' + _HUGE["tools"] + b"}}"


def huge_fault(request: ReceivedRequest) -> FaultResponse | None:
    if request.rpc_method == "tools/list":
        return FaultResponse.respond(200, {"content-type": "application/json"}, huge_listing(request.rpc_id))
    return None


@pytest.mark.parametrize("max_tools", [None, 100_000], ids=["default", "raised"])
async def test_P6_a_hundred_thousand_tools(driver: str, max_tools: int | None) -> None:
    """P6: 100,000 tools exceed the default max_tools (10,000): unavailable naming the bound;
    with max_tools raised they all load."""
    options = {} if max_tools is None else {"max_tools": max_tools}
    async with DemoServer(fault=huge_fault).serve() as running:
        async with open_client(driver, "big", entry(running.url), listen=False, **options) as client:
            with anyio.fail_after(30):
                availability = await client.ready(25)
                count = len(client.tools)
    if max_tools is None:
        assert not availability.ok
        assert "max_tools limit of 10000" in (availability.reason or "")
    else:
        assert availability.ok, availability.reason
        assert count == 100_000


async def test_T2_invalid_and_duplicate_names_dropped_with_warnings(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    """T2: invalid names and names equal after lowercasing are dropped, with a warning each."""

    async def handler(arguments: dict[str, Any], context: Any) -> str:
        return "ok"

    names = ["Echo", "echo", "ECHO", "bad name", "x" * 129, "ünï", "fine.tool-1"]
    tools = [({"name": n, "inputSchema": {"type": "object"}}, handler) for n in names]
    caplog.set_level(logging.WARNING, logger="mcpcore")
    async with DemoServer(tools=tools).serve() as running:
        async with open_client(driver, "Demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                ids = sorted(t.id for t in client.tools)
                assert ids == ["demo/echo", "demo/fine.tool-1"]  # C4: the name, lowercased once
                assert next(t for t in client.tools if t.id.endswith("/echo")).name == "Echo"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for dropped in ["echo", "ECHO", "bad name", "x" * 129, "ünï"]:
        assert any(repr(dropped) in w and "'demo'" in w for w in warnings), (dropped, warnings)


# --- P4: server requests to a client that declared nothing ------------------------------------------


async def test_P4_sampling_elicitation_roots_are_refused(driver: str) -> None:
    """P4: every server request but ping is answered with JSON-RPC error -32601."""

    async def ask(arguments: dict[str, Any], context: Any) -> str:
        codes = []
        for method, params in [
            ("sampling/createMessage", {"messages": [], "maxTokens": 1}),
            ("elicitation/create", {"message": "name?", "requestedSchema": {"type": "object"}}),
            ("roots/list", None),
            ("ping", None),
        ]:
            try:
                result = await context.request(method, params)
                codes.append(f"{method}=ok:{json.dumps(result)}")
            except JsonRpcError as exc:
                codes.append(f"{method}={exc.code}")
        return ",".join(codes)

    tools = [({"name": "ask", "inputSchema": {"type": "object"}}, ask)]
    async with DemoServer(tools=tools).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                assert (await client.ready(10)).ok
                output = await client.call("demo/ask", {})
    assert output.text == (
        "sampling/createMessage=-32601,elicitation/create=-32601,roots/list=-32601,ping=ok:{}"
    )


# --- P3a: the handshake stream carries more than the result ------------------------------------------


def _initialize_result(rid: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        },
    }


async def test_P3a_ping_in_the_middle_of_the_handshake(driver: str) -> None:
    """P3a: a ping before the initialize result is answered {} while initialize is pending."""

    def answered() -> bool:
        return any(
            isinstance(r.json, dict) and r.json.get("id") == "hs-ping" and "result" in r.json
            for r in running.server.received
        )

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method != "initialize":
            return None

        async def body() -> AsyncIterator[bytes]:
            yield sse_event({"jsonrpc": "2.0", "id": "hs-ping", "method": "ping"})
            await running.server.wait_until(answered, 5)  # the result waits for the answer
            yield sse_event(_initialize_result(request.rpc_id))

        return FaultResponse.respond(200, SSE, body())

    async with DemoServer(stateless=True, fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                availability = await client.ready(10)
        assert availability.ok, availability.reason
        answer = next(r.json for r in running.server.received if isinstance(r.json, dict) and r.json.get("id") == "hs-ping")
        assert answer == {"jsonrpc": "2.0", "id": "hs-ping", "result": {}}
        posted = [r.json.get("method") or r.json.get("id") for r in running.server.received if isinstance(r.json, dict)]
        # E1: the probe first (this server is of the handshake era), then the handshake
        assert posted[:4] == ["server/discover", "initialize", "hs-ping", "notifications/initialized"]


async def test_P3a_notifications_before_the_initialize_result(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    """P3a, P4: notifications ahead of the initialize result are handled; the handshake succeeds."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method != "initialize":
            return None
        notes = [
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "early \x1b[2J bird"}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
            {"jsonrpc": "2.0", "method": "notifications/unknown/thing", "params": {}},
        ]
        body = b"".join(sse_event(n) for n in notes) + sse_event(_initialize_result(request.rpc_id))
        return FaultResponse.respond(200, SSE, body)

    caplog.set_level(logging.INFO, logger="mcpcore")
    async with DemoServer(stateless=True, fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(15):
                availability = await client.ready(10)
                assert availability.ok, availability.reason
                assert (await client.call("demo/echo", {"text": "hi"})).text == "hi"
    forwarded = [r.getMessage() for r in caplog.records if r.name == "mcpcore.server"]
    assert forwarded == ["[demo] early \\x1b[2J bird"]
