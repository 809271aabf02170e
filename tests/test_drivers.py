"""The behaviour suite both drivers must pass, over loopback against the demo server.

Every test runs three times: the anyio driver on asyncio and on trio, and the
threaded driver. Tests name the behaviour ids (docs/behaviours.md) they prove.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client, threads_named, wait_for
from mcpcore import (
    BackendError,
    CallTimeout,
    Cancelled,
    ConfigError,
    LimitExceeded,
    McpError,
    RemoteProtocolError,
    TransportError,
    Unavailable,
    UnknownTool,
)
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

pytestmark = pytest.mark.anyio


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


def methods(server: DemoServer) -> list[str | None]:
    return [r.rpc_method for r in server.received]


# --- L1 -------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [mcpcore_anyio, mcpcore_threaded], ids=["anyio", "threaded"])
def test_L1_constructing_does_no_io(module: Any) -> None:
    """L1: no socket, DNS lookup, thread, task or process at construction."""
    seen: list[str] = []
    watching = True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if watching and event.split(".")[0] in ("socket", "subprocess", "os") and event not in (
            "os.listdir",
            "os.scandir",
        ):
            seen.append(event)

    sys.addaudithook(hook)
    threads_before = threading.active_count()
    try:
        client = module.McpClient("remote", {"url": "https://example.invalid/mcp"})
        local = module.McpClient("local", {"command": "definitely-not-run"}, allow_local=False)
        hub = module.McpHub.from_mcp_json('{"mcpServers": {"a": {"url": "https://a.invalid/mcp"}}}')
    finally:
        watching = False
    assert seen == []
    assert threading.active_count() == threads_before
    assert repr(client) and repr(local) and hub.clients


# --- L2, L3, K3 ------------------------------------------------------------------------------

ARGS = {
    "echo": {"text": "hi"},
    "add": {"a": 2, "b": 3},
    "slow": {"steps": 2, "delay": 0.01},
    "build": {"delay": 0},
}
EXPECTED_TEXT = {
    "echo": "hi",
    "add": "5",
    "image": "[image omitted: image/png]",
    "audio": "[audio omitted: audio/wav]",
    "embedded_blob": "[resource omitted: application/octet-stream]",
    "resource_link": "[resource: demo://text/hello.txt]",
}


@pytest.mark.parametrize(
    "mode",
    [{}, {"json_response": True}, {"stateless": True}, {"sse_newline": "\r\n", "keepalive": 0.01}],
    ids=["sse", "json", "stateless", "crlf-keepalive"],
)
async def test_L2_K3_every_content_shape(driver: str, mode: dict[str, Any]) -> None:
    """L2 handshake + listing; K1 original names; K3 rendering of every block type; K4 isError."""
    async with DemoServer(**mode).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
                assert availability.ok, availability.reason
                names = {tool.name for tool in client.tools}
                assert {"echo", "add", "image", "audio", "fail", "slow"} <= names
                for tool in client.tools:
                    if tool.name == "fail":
                        with pytest.raises(BackendError) as info:
                            await client.call(tool.id, {})
                        assert "failed on purpose" in info.value.text
                        continue
                    output = await client.call(tool.id, ARGS.get(tool.name, {}))
                    assert not output.is_error
                    if tool.name in EXPECTED_TEXT:
                        assert output.text == EXPECTED_TEXT[tool.name]
                    if tool.name == "add":
                        assert output.structured == {"sum": 5}
                    if tool.name == "embedded_text":
                        assert output.text.startswith("Hello")
        calls = [r.json["params"]["name"] for r in running.server.requests_for("tools/call")]
        assert "echo" in calls


# --- K2, K6 ---------------------------------------------------------------------------------


async def test_K2_progress_reaches_on_progress(driver: str) -> None:
    """K2: progress notifications reach the caller's on_progress."""
    seen: list[tuple[float, float | None, str | None]] = []
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                output = await client.call(
                    "demo/slow",
                    {"steps": 3, "delay": 0.01},
                    on_progress=lambda p, t, m: seen.append((p, t, m)),
                )
    assert output.text
    assert [p for p, _, _ in seen] == [1.0, 2.0, 3.0]
    assert seen[0][1] == 3.0


async def test_K2_K6_deadline_names_tool_and_sends_cancelled(driver: str) -> None:
    """K2: the deadline fails the call naming tool and budget; K6: the server hears cancelled."""
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                with pytest.raises(CallTimeout) as info:
                    await client.call("demo/slow", {"steps": 100, "delay": 0.2}, timeout=0.3)
                assert "demo/slow" in str(info.value) and "0.3" in str(info.value)
                server = running.server
                await wait_for(lambda: "notifications/cancelled" in methods(server), 5)
        cancels = running.server.requests_for("notifications/cancelled")
        assert len(cancels) == 1
        call = running.server.requests_for("tools/call")[-1]
        assert cancels[0].json["params"]["requestId"] == call.json["id"]
        assert cancels[0].json["params"]["reason"]


async def test_K6_caller_cancel_sends_cancelled_and_returns_promptly(driver: str) -> None:
    """K6: cancelling the caller sends notifications/cancelled; the caller returns without
    waiting for the tool."""
    async with DemoServer().serve() as running:
        server = running.server
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok
                elapsed = await client.call_and_cancel(
                    "demo/slow",
                    {"steps": 200, "delay": 0.1},  # the tool runs 20 s
                    lambda: bool(server.requests_for("tools/call")),
                )
                # Returned long before the tool could have finished, so it did not wait for
                # it (a generous bound for a loaded machine; the time a cancel takes is
                # measured by the benchmark, B6, not asserted here).
                assert elapsed < 10
                await wait_for(lambda: bool(server.requests_for("notifications/cancelled")), 5)
                # the session stays usable
                assert (await client.call("demo/echo", {"text": "after"})).text == "after"
        assert len(server.requests_for("notifications/cancelled")) == 1


# --- K7, L3, L4 --------------------------------------------------------------------------------


async def test_K7_unknown_tool_fails_without_io(driver: str) -> None:
    """K7: an unknown id fails at once, with no request sent."""
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                before = len(running.server.received)
                with pytest.raises(UnknownTool):
                    await client.call("demo/nope", {})
                assert len(running.server.received) == before, [(r.method, r.rpc_method) for r in running.server.received]


async def test_L3_L4_down_then_up(driver: str) -> None:
    """L3: a server that is down is unavailable at once, with the reason; L4: a retry succeeds."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with open_client(driver, "late", entry(url)) as client:
        with anyio.fail_after(20):
            availability = await client.ready(10)
            assert not availability.ok
            assert availability.reason and "connect" in availability.reason.lower()
            with pytest.raises(Unavailable):
                await client.call("late/echo", {})
            t0 = anyio.current_time()
            again = await client.ready(10)
            # At once while down: well before the 10 s it was allowed to wait (the retry
            # schedule itself is proven exactly with a fake clock in test_session.py).
            assert not again.ok and anyio.current_time() - t0 < 5
            async with DemoServer().serve(port=port):
                await wait_for(lambda: bool(client.tools), 10)
                assert (await client.ready(1)).ok
                assert (await client.call("late/echo", {"text": "up"})).text == "up"


async def test_L5_ready_stays_ready_and_failure_is_call_error(driver: str) -> None:
    """L5: after ready, a failure is a transport error on the call, not unavailability."""
    broken = {"on": False}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if broken["on"] and request.rpc_method == "tools/call":
            return FaultResponse.respond(503, {"content-type": "text/html"}, b"<h1>\x1b[2Jdown</h1>")
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                broken["on"] = True
                with pytest.raises(TransportError) as info:
                    await client.call("demo/echo", {"text": "x"})
                text = str(info.value)
                assert "503" in text and "\x1b" not in text and "\\x1b" in text  # H7, X1
                assert (await client.ready(1)).ok


# --- connections, close ------------------------------------------------------------------------


async def test_calls_in_flight_share_pooled_connections(driver: str) -> None:
    """Many calls on one session over one pool: N calls never open N connections."""
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", entry(running.url), max_connections=4, listen=False) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok
                results: list[str] = []

                async def one(i: int) -> None:
                    results.append((await client.call("demo/echo", {"text": str(i)})).text)

                async with anyio.create_task_group() as group:
                    for i in range(40):
                        group.start_soon(one, i)
                assert sorted(results, key=int) == [str(i) for i in range(40)]
                # Counted before closing: closing aborts a stream still reading its
                # tail, and the DELETE may then need a connection of its own.
                assert running.server.connections_opened <= 4


async def test_a_connection_the_server_closed_while_idle_is_not_reused(driver: str) -> None:
    """Pooling: a kept-alive connection the server closed without saying so is noticed
    (its socket reads as closed) and a new one opened; the next call does not fail.
    (The anyio driver answers httpcore's is-readable question itself, from a cached socket.)"""
    first = [True]

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call" and first:
            first.clear()
            reply = {
                "jsonrpc": "2.0",
                "id": request.json["id"],
                "result": {"content": [{"type": "text", "text": "first"}]},
            }
            body = json.dumps(reply).encode()
            return FaultResponse.respond(200, {"content-type": "application/json"}, body, abort=True)
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url), max_connections=1, listen=False) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                assert (await client.call("demo/echo", {"text": "x"})).text == "first"
                await wait_for(lambda: running.server.open_connections == 0, 5)
                opened = running.server.connections_opened
                assert (await client.call("demo/echo", {"text": "second"})).text == "second"
                assert running.server.connections_opened == opened + 1


@pytest.mark.parametrize("mode", [{"json_response": True}, {}], ids=["json", "sse"])
async def test_K1_megabytes_each_way_with_flow_control(driver: str, mode: dict[str, Any]) -> None:
    """A 3 MiB argument out and the same text back: both pass the network layers'
    flow control (on asyncio the driver's own stream pauses writing past the transport's
    buffer and reading past 1 MiB unread), and nothing is lost or reordered."""
    text = "".join(f"{i:07d}\n" for i in range(3 * 1024 * 1024 // 8))
    async with DemoServer(**mode).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(60):
                assert (await client.ready(10)).ok
                for _ in range(2):
                    assert (await client.call("demo/echo", {"text": text})).text == text


async def test_L6_close_sends_delete_and_leaves_nothing(driver: str) -> None:
    """L6, H9: closing cancels running calls, sends DELETE, ends every thread and task."""
    async with DemoServer().serve() as running:
        server = running.server
        async with anyio.create_task_group() as outer:
            async with open_client(driver, "demo", entry(running.url)) as client:
                with anyio.fail_after(20):
                    assert (await client.ready(10)).ok

                    async def long_call() -> None:
                        with pytest.raises(McpError):
                            await client.call("demo/slow", {"steps": 100, "delay": 0.1})

                    outer.start_soon(long_call)
                    await wait_for(lambda: bool(server.requests_for("tools/call")), 5)
        await wait_for(lambda: any(r.method == "DELETE" for r in server.received), 5)
        assert server.requests_for("notifications/cancelled")
        delete = next(r for r in server.received if r.method == "DELETE")
        assert delete.headers.get("mcp-session-id")
    assert threads_named("mcpcore") == []


# --- H5, H6, T5, P6 ---------------------------------------------------------------------------


async def test_H5_redirect_refused_and_never_followed(driver: str) -> None:
    """H5: a 3xx is a transport error naming the status; the Location sees no request."""
    async with DemoServer().serve() as other:
        location = other.url

        def fault(request: ReceivedRequest) -> FaultResponse | None:
            return FaultResponse.respond(307, {"location": location}, b"")

        async with DemoServer(fault=fault).serve() as running:
            async with open_client(driver, "demo", entry(running.url, headers={"X-Key": "s3cret"})) as client:
                with anyio.fail_after(20):
                    availability = await client.ready(10)
        assert not availability.ok
        assert "307" in (availability.reason or "") and "redirect" in (availability.reason or "")
        assert other.server.received == []


async def test_H6_expired_session_is_reinitialized_and_request_resent(driver: str) -> None:
    """H6: a 404 on a request with a session id → a new session, the request sent once more."""
    async with DemoServer().serve() as running:
        server = running.server
        # Without the GET stream the call's own 404 is how the expiry is found.
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                server.expire_sessions()
                assert (await client.call("demo/echo", {"text": "again"})).text == "again"
        inits = server.requests_for("initialize")
        assert len(inits) == 2
        assert "mcp-session-id" not in inits[1].headers
        echo_calls = [r for r in server.requests_for("tools/call")]
        assert len(echo_calls) == 2  # the 404'd one and its single resend


async def test_T5_cursor_loop_is_an_error_not_a_hang(driver: str) -> None:
    """T5: a cursor seen before is a protocol error, reported as unavailability."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/list":
            body = {"jsonrpc": "2.0", "id": request.json["id"], "result": {"tools": [], "nextCursor": "same"}}
            return FaultResponse.respond(200, {"content-type": "application/json"}, json.dumps(body).encode())
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
    assert not availability.ok and "cursor" in (availability.reason or "")


async def test_P6_stall_after_headers_hits_the_deadline(driver: str) -> None:
    """P6/K2: a stall after the response headers ends at the call's deadline, then cancelled."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            return FaultResponse.stall(200, {"content-type": "text/event-stream"})
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                t0 = anyio.current_time()
                with pytest.raises(CallTimeout):
                    await client.call("demo/echo", {"text": "x"}, timeout=0.5)
                # The stall never ends, so only the deadline can have ended the call: no
                # earlier than its 0.5 s (a little slack for clock granularity), and bounded
                # (generously: the exact firing time is proven with a fake clock in
                # test_session.py and test_http_mapping.py).
                assert 0.45 <= anyio.current_time() - t0 < 10
                await wait_for(lambda: bool(running.server.requests_for("notifications/cancelled")), 5)


async def test_P6_stream_held_open_after_the_response_does_not_hold_the_caller(
    driver: str,
) -> None:
    """P6: the server answers on SSE and keeps the stream open; the caller returns at once.

    The threaded driver performs a call's exchange in the caller's own thread;
    the rest of a stream that does not end is read by a thread of its own, and
    the engine's ``response_linger`` still closes it.
    """

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "tools/call":
            reply = {
                "jsonrpc": "2.0",
                "id": request.json["id"],
                "result": {"content": [{"type": "text", "text": "held"}]},
            }
            body = b"id: 1\ndata: " + json.dumps(reply).encode() + b"\n\n"
            return FaultResponse.stall(200, {"content-type": "text/event-stream"}, body)
        return None

    from mcpcore import HttpLimits

    async with DemoServer(fault=fault).serve() as running:
        linger = 4.0
        limits = HttpLimits(response_linger=linger)
        async with open_client(driver, "demo", entry(running.url), limits=limits) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok
                before = running.server.open_connections
                for _ in range(3):
                    t0 = anyio.current_time()
                    output = await client.call("demo/echo", {"text": "x"})
                    assert output.text == "held"
                    # The stream ends only when the engine closes it, response_linger after
                    # the response: a caller that waited for the stream's end would take at
                    # least that long. (The linger's exact timing is proven with a fake
                    # clock in test_http_mapping.py.)
                    assert anyio.current_time() - t0 < linger / 2
                # the streams are still held after the callers returned; the engine closes
                # them after response_linger
                assert running.server.open_connections > before
                await wait_for(lambda: running.server.open_connections <= before, 20)


async def test_P6_oversized_response_names_the_limit(driver: str) -> None:
    """P6: a reply over max_message_size is a typed error naming the bound."""
    from mcpcore import HttpLimits

    async def echo(arguments: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": arguments["text"]}]}

    tools = [({"name": "echo", "inputSchema": {"type": "object"}}, echo)]
    async with DemoServer(tools=tools).serve() as running:
        limits = HttpLimits(max_message_size=1000)
        async with open_client(driver, "demo", entry(running.url), limits=limits) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                with pytest.raises(LimitExceeded) as info:
                    await client.call("demo/echo", {"text": "x" * 5000})
                assert info.value.limit_name == "max_message_size"
                # issue 37: the error says how to raise it
                assert "limits=HttpLimits(max_message_size=...)" in str(info.value)


async def test_P5_garbage_fails_only_that_call(driver: str) -> None:
    """P5: non-JSON data fails the exchange it arrived on; the session goes on."""
    bad = {"on": True}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if bad["on"] and request.rpc_method == "tools/call":
            bad["on"] = False
            return FaultResponse.respond(200, {"content-type": "text/event-stream"}, b"data: {not json\n\n")
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                with pytest.raises(RemoteProtocolError):
                    await client.call("demo/echo", {"text": "x"})
                assert (await client.call("demo/echo", {"text": "ok"})).text == "ok"


# --- T6 and host integration ------------------------------------------------------------------


def _tool(name: str, description: str = "d", schema: dict[str, Any] | None = None) -> Any:
    async def handler(arguments: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": name}]}

    definition = {"name": name, "description": description, "inputSchema": schema or {"type": "object"}}
    return (definition, handler)


async def test_T6_auto_refresh_and_sync_into(driver: str) -> None:
    """T6 + seed 002: list_changed re-lists; sync_into mirrors the diff, foreign entries kept."""
    async with DemoServer(tools=[_tool("a"), _tool("b"), _tool("c")]).serve() as running:
        server = running.server
        async with open_client(driver, "demo", entry(running.url), auto_refresh=True) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                registry: dict[str, object] = {}
                client.register_into(registry)
                assert sorted(registry) == ["demo/a", "demo/b", "demo/c"]
                assert (await client.call_registration(registry["demo/a"], {})).text == "a"
                registry["demo/b"] = "foreign"  # another owner took this id
                await wait_for(lambda: server.get_stream_open(), 5)
                server.set_tools([_tool("a", "changed"), _tool("b"), _tool("d")])
                await wait_for(lambda: {t.name for t in client.tools} == {"a", "b", "d"}, 5)
                report = await client.sync_into(registry)
        assert report.added == ("demo/d",)
        assert report.removed == ("demo/c",)
        assert report.changed == ("demo/a",)
        assert registry["demo/b"] == "foreign"
        assert "demo/c" not in registry and "demo/d" in registry
        assert registry["demo/a"].tool.description == "changed"  # type: ignore[attr-defined]


async def test_T6_changed_timeout_or_policy_reregisters(driver: str) -> None:
    """seed 002: a changed call timeout or policy is a changed contract."""
    async with DemoServer(tools=[_tool("a")]).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                registry: dict[str, object] = {}
                client.register_into(registry)
                first = registry["demo/a"]
                assert (await client.sync_into(registry)).untouched == ("demo/a",)
                client.client.call_timeout = 12.0
                assert (await client.sync_into(registry)).changed == ("demo/a",)
                assert registry["demo/a"] is not first
                client.client.policy = "lenient"
                assert (await client.sync_into(registry)).changed == ("demo/a",)


# --- C6 and the hub ---------------------------------------------------------------------------


async def test_C6_local_server_refused_without_opt_in(driver: str) -> None:
    """C6: exact refusal and no process started."""
    async with open_client(driver, "local", {"command": "python3"}) as client:
        availability = await client.ready(1)
    assert not availability.ok
    assert availability.reason == "local MCP servers (command) are not supported yet: allow_local=True starts them"


async def test_L7_hub_from_mcp_json(driver: str, tmp_path: Any) -> None:
    """L7, C2: one client per entry; an invalid entry is unavailable alone; calls route by id."""
    async with DemoServer().serve() as one, DemoServer(tools=[_tool("x")]).serve() as two:
        document = {
            "mcpServers": {
                "One": {"url": one.url},
                "two": {"url": two.url},
                "bad": {"url": "ftp://nope"},
            }
        }
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps(document))
        module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
        hub = module.McpHub.from_mcp_json(str(path))
        with anyio.fail_after(20):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                try:
                    states = await anyio.to_thread.run_sync(lambda: hub.ready(10))
                    out = await anyio.to_thread.run_sync(lambda: hub.call("two/x", {}))
                    with pytest.raises(UnknownTool):
                        hub.call("three/x", {})
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    states = await hub.ready(10)
                    out = await hub.call("two/x", {})
                    with pytest.raises(UnknownTool):
                        await hub.call("three/x", {})
    assert states["one"].ok and states["two"].ok
    assert not states["bad"].ok and "url" in (states["bad"].reason or "")
    assert out.text == "x"


def test_C1_hub_refuses_an_invalid_document() -> None:
    """C1: an invalid top level raises ConfigError naming the problem; nothing starts."""
    with pytest.raises(ConfigError, match="extra"):
        mcpcore_threaded.McpHub.from_mcp_json('{"mcpServers": {}, "extra": 1}')
    with pytest.raises(ConfigError, match="extra"):
        mcpcore_anyio.McpHub.from_mcp_json('{"mcpServers": {}, "extra": 1}')


async def test_K6_L6_cancel_then_close_sends_cancelled_before_delete(driver: str) -> None:
    """K6, L6: a cancel right before closing still reaches the server, ahead of DELETE."""
    async with DemoServer().serve() as running:
        server = running.server
        for _ in range(5):
            async with open_client(driver, "demo", entry(running.url), listen=False) as client:
                with anyio.fail_after(20):
                    assert (await client.ready(10)).ok
                    calls_before = len(server.requests_for("tools/call"))
                    await client.call_and_cancel(
                        "demo/slow",
                        {"steps": 100, "delay": 0.1},
                        lambda before=calls_before: len(server.requests_for("tools/call")) > before,
                    )
            order = [r.rpc_method or r.method for r in server.received[-3:]]
            assert order[-2:] == ["notifications/cancelled", "DELETE"], order


def test_K6_threaded_result_timeout_does_not_cancel() -> None:
    """A blocking caller may poll: result(timeout) that times out leaves the call running."""
    with DemoServer().serve_in_thread() as running, mcpcore_threaded.McpClient("demo", entry(running.url)) as client:
        assert client.ready(10).ok
        handle = client.start_call("demo/slow", {"steps": 3, "delay": 0.1})
        with pytest.raises(TimeoutError):
            handle.result(timeout=0.01)
        assert handle.result(timeout=10).text
        assert running.server.requests_for("notifications/cancelled") == []


def test_K6_threaded_result_wakes_every_thread_waiting_for_it() -> None:
    """Several threads blocked in one handle's result() all get the output when the call
    ends (each waits on a lock of its own), and one that gave up first is not woken."""
    with DemoServer().serve_in_thread() as running, mcpcore_threaded.McpClient("demo", entry(running.url)) as client:
        assert client.ready(10).ok
        handle = client.start_call("demo/slow", {"steps": 3, "delay": 0.1})
        with pytest.raises(TimeoutError):
            handle.result(timeout=0.01)  # a waiter that gives up leaves nothing behind
        texts: list[str] = []
        guard = threading.Lock()

        def wait() -> None:
            text = handle.result(timeout=60).text  # woken by the end, long before this
            with guard:
                texts.append(text)

        waiters = [threading.Thread(target=wait, daemon=True) for _ in range(4)]
        for thread in waiters:
            thread.start()
        deadline = time.monotonic() + 10
        for thread in waiters:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert not any(thread.is_alive() for thread in waiters)
        assert len(texts) == 4 and len(set(texts)) == 1 and texts[0]
        assert handle.done


@pytest.mark.parametrize("mode", [{"json_response": True}, {}], ids=["json", "sse"])
def test_K1_threaded_call_performs_its_exchange_in_the_callers_thread(
    mode: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blocking call() starts no thread for its own POST (B1: a thread per call cost
    most of a call); other exchanges run on the client's few workers, already there."""
    started: list[str] = []
    original = threading.Thread.start

    def recording_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    with DemoServer(**mode).serve_in_thread() as running, mcpcore_threaded.McpClient("demo", entry(running.url)) as client:
        assert client.ready(10).ok
        monkeypatch.setattr(threading.Thread, "start", recording_start)
        for i in range(5):
            assert client.call("demo/echo", {"text": f"x{i}"}).text == f"x{i}"
        by_calls = list(started)
        handle = client.start_call("demo/echo", {"text": "handle"})
        assert handle.result(10).text == "handle"
        monkeypatch.undo()
    if "json_response" in mode:
        assert by_calls == []  # Content-Length bodies end with the response
    else:
        # A chunked SSE body's end normally arrives with its last chunk (read on,
        # in the caller's thread); one that has not arrived yet may be handed off.
        assert all(":post-" in name for name in by_calls) and len(by_calls) <= 2, by_calls
    # start_call's exchange went to a worker: at most one more was needed for it
    assert len([n for n in started if n.endswith(":worker")]) <= 1, started


async def test_L7_hub_ready_has_one_deadline(driver: str) -> None:
    """L7: ready(timeout) on a hub waits one timeout overall, not one per server."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        return FaultResponse.stall(200, {"content-type": "text/event-stream"})

    timeout = 2.0
    async with DemoServer(fault=fault).serve() as stalled:
        document = json.dumps({"mcpServers": {f"s{i}": {"url": stalled.url} for i in range(3)}})
        module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
        hub = module.McpHub.from_mcp_json(document)
        with anyio.fail_after(30):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                t0 = anyio.current_time()
                states = await anyio.to_thread.run_sync(lambda: hub.ready(timeout))
                elapsed = anyio.current_time() - t0
                await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    t0 = anyio.current_time()
                    states = await hub.ready(timeout)
                    elapsed = anyio.current_time() - t0
    assert not any(s.ok for s in states.values())
    # Every server stalls, so ready() waited its timeout (no earlier, less a little slack
    # for clock granularity), and returned well before one timeout per server (3 × 2 s)
    # would have passed.
    assert timeout - 0.05 <= elapsed < 2 * timeout


async def test_C7_driver_reads_environment_and_home(driver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """C7: the driver (not the core) reads the environment and home directory for expansion."""
    monkeypatch.setenv("MCPCORE_TEST_TOKEN", "tok-123")
    monkeypatch.setenv("HOME", "/home/tester")
    async with DemoServer().serve() as running:
        headers = {"X-Token": "${env:MCPCORE_TEST_TOKEN}", "X-Home": "${userHome}"}
        async with open_client(driver, "demo", entry(running.url, headers=headers), listen=False) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
        first = running.server.received[0]
        assert first.headers["x-token"] == "tok-123"
        assert first.headers["x-home"] == "/home/tester"
        assert "tok-123" not in repr(client.client)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_K6_asyncio_task_cancel_sends_cancelled_and_leaves_no_task(anyio_backend: str) -> None:
    """K6 with asyncio's own Task.cancel(); L6: no task is left behind after aclose()."""
    import asyncio

    before = set(asyncio.all_tasks())
    async with DemoServer().serve() as running:
        server = running.server
        client = mcpcore_anyio.McpClient("demo", entry(running.url))
        async with client:
            assert (await client.ready(10)).ok
            # the tool runs 20 s
            task = asyncio.ensure_future(client.call("demo/slow", {"steps": 200, "delay": 0.1}))
            await wait_for(lambda: bool(server.requests_for("tools/call")), 5)
            t0 = anyio.current_time()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # long before the tool could have finished: the task did not wait for it
            assert anyio.current_time() - t0 < 10
            await wait_for(lambda: bool(server.requests_for("notifications/cancelled")), 5)
    leftover = {t for t in asyncio.all_tasks() - before if not t.done()}
    assert leftover == set()


async def test_P5_server_that_closes_before_reading_the_request(driver: str) -> None:
    """A server that hangs up before reading the body: unavailable with a reason, nothing
    left unfinished (on trio an abandoned body generator used to raise ResourceWarning)."""
    import gc

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def hang_up() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        async with open_client(driver, "rude", entry(f"http://127.0.0.1:{port}/mcp")) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
        assert not availability.ok and "the connection was closed or reset" in (availability.reason or "")
        gc.collect()
    finally:
        stop.set()
        thread.join(5)
        listener.close()


# --- C4: one lowercased name for the client, its ids and the hub -------------------------------


async def test_C4_client_name_is_lowercased_for_ids_name_and_hub_keys(driver: str) -> None:
    """C4: McpClient("Py-Peer", ...) is named "py-peer", its tool ids start "py-peer/", and a hub
    built from a mapping keys it, and routes to it, by that name whatever the mapping's key."""
    module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
    async with DemoServer().serve() as running:
        client = module.McpClient("Py-Peer", entry(running.url), listen=False)
        assert client.name == "py-peer"
        hub = module.McpHub({"Py-Peer": client})
        assert list(hub.clients) == ["py-peer"] and hub.clients["py-peer"] is client
        with anyio.fail_after(20):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                try:
                    states = await anyio.to_thread.run_sync(lambda: hub.ready(10))
                    out = await anyio.to_thread.run_sync(lambda: hub.call("py-peer/echo", {"text": "hi"}))
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    states = await hub.ready(10)
                    out = await hub.call("py-peer/echo", {"text": "hi"})
    assert states["py-peer"].ok
    assert client.tools and all(t.id.startswith("py-peer/") and t.server == "py-peer" for t in client.tools)
    assert out.text == "hi"


async def test_C4_C5_bad_name_or_header_makes_the_client_unavailable_with_the_reason(driver: str) -> None:
    """C4: a name that is not a valid id, or holds the separator, gives an unavailable client
    with the reason (never a raise); C5, X5: so does a host-built RemoteServer whose header
    value has edge whitespace, and the reason names the header, not the value."""
    from mcpcore import RemoteServer

    padded = RemoteServer(name="r", url="https://example.invalid/mcp", headers={"Authorization": "tok-123 "})
    cases: list[tuple[str, Any, dict[str, Any], str]] = [
        ("bad name", entry("https://example.invalid/mcp"), {}, "not a valid id"),
        ("A.B", entry("https://example.invalid/mcp"), {"separator": "."}, "separator '.'"),
        ("my__srv", entry("https://example.invalid/mcp"), {"separator": "__"}, "separator '__'"),
        ("r", padded, {}, "header 'Authorization' value begins or ends with whitespace"),
    ]
    for name, server, options, needle in cases:
        async with open_client(driver, name, server, **options) as client:
            availability = await client.ready(1)
        assert not availability.ok and needle in (availability.reason or ""), (name, availability)
        assert "tok-123" not in (availability.reason or "")
        assert client.client.name == name.lower() and client.tools == ()


async def test_C4_hub_with_dot_separator_does_not_route_a_b_tool_to_server_a(driver: str) -> None:
    """C4, L7: with separator ".", server "a.b" would list "a.b.tool", and ids are routed by what
    precedes the first separator: to server "a". So "a.b" is refused (unavailable, with the
    reason), "a.b.tool" is not listed and reaches no server, and every listed tool routes to the
    client that lists it."""
    module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
    async with DemoServer(tools=[_tool("echo")]).serve() as one, DemoServer(tools=[_tool("tool")]).serve() as two:
        document = json.dumps({"mcpServers": {"a": {"url": one.url}, "a.b": {"url": two.url}}})
        hub = module.McpHub.from_mcp_json(document, separator=".", listen=False)

        def routes() -> tuple[dict[str, Any], dict[str, Any]]:
            routed = {t.id: hub.client_for(t.id) for t in hub.tools}
            owners = {t.id: c for c in hub.clients.values() for t in c.tools}
            return routed, owners

        with anyio.fail_after(20):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                try:
                    states = await anyio.to_thread.run_sync(lambda: hub.ready(10))
                    routed, owners = routes()
                    with pytest.raises(UnknownTool):
                        await anyio.to_thread.run_sync(lambda: hub.call("a.b.tool", {}))
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    states = await hub.ready(10)
                    routed, owners = routes()
                    with pytest.raises(UnknownTool):
                        await hub.call("a.b.tool", {})
        assert one.server.requests_for("tools/call") == []
        assert two.server.requests_for("tools/call") == []
    assert states["a"].ok
    assert not states["a.b"].ok and "separator '.'" in (states["a.b"].reason or "")
    assert [t.id for t in hub.tools] == ["a.echo"]
    assert routed.keys() == owners.keys() and all(routed[i] is owners[i] for i in routed)


async def test_seed002_sync_into_a_fresh_registry_adds_everything(driver: str) -> None:
    """seed 002: a registry's baseline dies with it. After registering into a registry that is
    then dropped, the client holds none of it (its registrations are collected), and syncing
    into a fresh registry adds every tool."""
    import gc
    import weakref

    class Registry(dict[str, object]):
        pass

    async with DemoServer(tools=[_tool("a"), _tool("b")]).serve() as running:
        async with open_client(driver, "demo", entry(running.url), listen=False) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                old = Registry()
                client.register_into(old)
                dropped = weakref.ref(old)
                registration = weakref.ref(old["demo/a"])
                del old
                gc.collect()
                assert dropped() is None and registration() is None
                fresh = Registry()
                report = await client.sync_into(fresh)
    assert report.added == ("demo/a", "demo/b") and sorted(fresh) == ["demo/a", "demo/b"]


# --- K9: one error kind for a cancelled call on every driver ------------------------------------


async def test_K9_a_call_cut_off_by_close_raises_cancelled_alike_on_every_driver(driver: str) -> None:
    """K9: a call still running when the client closes ends with ``Cancelled`` and the same
    words on every driver (the engine words it; the drivers only hand it over)."""
    async with DemoServer().serve() as running:
        server = running.server
        caught: list[BaseException] = []
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok

                async def call() -> None:
                    try:
                        await client.call("demo/slow", {"steps": 200, "delay": 0.1})
                    except Exception as exc:
                        caught.append(exc)

                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    await wait_for(lambda: bool(server.requests_for("tools/call")), 10)
                    await client.close()
        [error] = caught
        assert type(error) is Cancelled
        assert str(error) == "a call to server 'demo' was cancelled: the client is closing"


@pytest.mark.parametrize("driver", ["threaded"])  # start_call handles: threaded only
async def test_K9_a_threaded_handle_cancel_raises_cancelled(driver: str) -> None:
    """K9: ``CallHandle.cancel()`` (threaded) ends the call with ``Cancelled`` naming the caller."""
    async with DemoServer().serve() as running:
        server = running.server
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok
                handle = await anyio.to_thread.run_sync(
                    lambda: client.client.start_call("demo/slow", {"steps": 200, "delay": 0.1})
                )
                await wait_for(lambda: bool(server.requests_for("tools/call")), 10)
                handle.cancel()
                with pytest.raises(Cancelled) as info:
                    await anyio.to_thread.run_sync(handle.result)
        assert info.value.reason == "cancelled by the caller"


# --- what a newcomer hits -------------------------------------------------------------------


async def test_K7_a_plain_tool_name_is_unknown_but_says_what_was_meant(driver: str) -> None:
    """K7: ``client.call("echo")`` on a client named py fails at once with "did you mean
    'py/echo'?", on the client and on a hub; a string for the arguments is a TypeError; a
    timeout that is not positive a ValueError; nothing is sent."""
    module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
    async with DemoServer().serve() as running:
        hub = module.McpHub({"py": module.McpClient("py", entry(running.url), listen=False)})
        assert repr(hub) == "McpHub(1 server: 'py')"
        client = hub.clients["py"]

        async def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
            if driver == "threaded":
                return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
            return await fn(*args, **kwargs)

        errors: list[BaseException] = []
        with anyio.fail_after(20):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
            else:
                await hub.__aenter__()
            try:
                assert (await run(hub.ready, 10))["py"]
                before = len(running.server.received)
                for target, tool_id, arguments, kwargs in (
                    (client, "echo", {}, {}),
                    (hub, "echo", {}, {}),
                    (hub, "Py/Echo", {}, {}),
                    (client, "py/echo", '{"text": "hi"}', {}),
                    (client, "py/echo", {}, {"timeout": 0}),
                ):
                    try:
                        await run(target.call, tool_id, arguments, **kwargs)
                    except Exception as exc:
                        errors.append(exc)
                assert len(running.server.received) == before
            finally:
                if driver == "threaded":
                    await anyio.to_thread.run_sync(hub.close)
                else:
                    await hub.__aexit__(None, None, None)
    unknown = errors[:3]
    assert all(isinstance(e, UnknownTool) and e.suggestions == ("py/echo",) for e in unknown), errors
    assert str(unknown[0]) == "unknown tool 'echo'; did you mean 'py/echo'?"
    assert isinstance(errors[3], TypeError) and isinstance(errors[3], McpError)
    assert isinstance(errors[4], ValueError) and isinstance(errors[4], McpError)


async def test_L3_a_client_used_before_start_or_started_twice_is_a_runtime_error(driver: str) -> None:
    """L3: asking a client that was never started is the caller's mistake: a RuntimeError
    (and a LocalProtocolError, as before), saying to start it; so is a second start."""
    from mcpcore import InvalidState, LocalProtocolError

    module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
    client = module.McpClient("py", entry("https://py.invalid/mcp"), listen=False)
    with anyio.fail_after(20):
        if driver == "threaded":
            with pytest.raises(RuntimeError, match="start the client first") as info:
                client.ready()
            with pytest.raises(RuntimeError, match="start the client first"):
                client.call("py/echo", {})
            client.start()
            try:
                with pytest.raises(RuntimeError, match="already started"):
                    client.start()
            finally:
                await anyio.to_thread.run_sync(client.close)
        else:
            with pytest.raises(RuntimeError, match="start the client first") as info:
                await client.ready()
            with pytest.raises(RuntimeError, match="start the client first"):
                await client.call("py/echo", {})
            async with client, anyio.create_task_group() as group:
                with pytest.raises(RuntimeError, match="already started"):
                    client.start(group)
    assert isinstance(info.value, InvalidState) and isinstance(info.value, LocalProtocolError)


@pytest.mark.parametrize("module", [mcpcore_anyio, mcpcore_threaded], ids=["anyio", "threaded"])
def test_L7_hub_from_file_and_from_text_say_which_they_take(module: Any, tmp_path: Any) -> None:
    """L7: ``from_file(path)`` and ``from_text(document)`` build the same hub without
    guessing (``from_mcp_json`` still guesses); a file that cannot be read is a
    ConfigError naming it; the repr names the servers and how many, never an entry's
    header value or URL. No I/O beyond reading the file (L1)."""
    document = json.dumps(
        {
            "mcpServers": {
                "One": {"url": "https://one.invalid/mcp", "headers": {"Authorization": "Bearer hub-secret-1"}},
                "two": {"url": "https://two.invalid/mcp?token=hub-secret-2"},
                "bad": {"url": "ftp://nope"},
            }
        }
    )
    path = tmp_path / "{weird}.json"  # a name a guess would take for a document
    path.write_text(document)
    hubs = [
        module.McpHub.from_file(path),
        module.McpHub.from_file(str(path)),
        module.McpHub.from_text(document),
        module.McpHub.from_text(document.encode()),
        module.McpHub.from_mcp_json(document),
    ]
    for hub in hubs:
        assert list(hub.clients) == ["one", "two", "bad"]
        assert repr(hub) == "McpHub(3 servers: 'one', 'two', 'bad')"
        assert "secret" not in repr(hub) and "invalid" not in repr(hub)
    with pytest.raises(ConfigError, match=r"cannot read .*missing\.json"):
        module.McpHub.from_file(tmp_path / "missing.json")
    with pytest.raises(ConfigError):  # the text is a document, never a path
        module.McpHub.from_text(str(path))
    many = module.McpHub.from_text(json.dumps({"mcpServers": {f"s{i:02}": {"url": "ftp://x"} for i in range(12)}}))
    assert repr(many).startswith("McpHub(12 servers: 's00', 's01',") and repr(many).endswith("'s09', …)")
    assert repr(module.McpHub({})) == "McpHub(0 servers)"


@pytest.mark.parametrize("driver", ["anyio-asyncio", "anyio-trio"])
async def test_L6_a_client_closed_before_its_task_ran_starts_nothing_and_raises_nothing(driver: str) -> None:
    """L6: ``async with McpClient(...): pass`` (closed before its background task ever
    ran) ends quietly: no start-up after close, no error out of the task group."""
    async with DemoServer().serve() as running:
        with anyio.fail_after(20):
            async with mcpcore_anyio.McpClient("py", entry(running.url), listen=False) as client:
                pass
            assert not (await client.ready())
    assert running.server.received == []


async def test_L6_H9_closing_with_20_calls_in_flight_on_a_stalled_server_is_one_bound(driver: str) -> None:
    """L6, H9: closing is the engine's: 20 calls in flight, and the server stalls every
    reply, cancel notices and DELETE included; they go out together, so close() ends
    within the one close bound (2 s), not a bound per message (once about 2·(N+1) s)."""

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method in ("tools/call", "notifications/cancelled") or request.method == "DELETE":
            return FaultResponse.stall(200, {"content-type": "text/event-stream"})
        return None

    async with DemoServer(fault=fault).serve() as running:
        server = running.server
        client_face = None
        async with anyio.create_task_group() as outer:
            async with open_client(driver, "demo", entry(running.url), max_connections=32) as client:
                client_face = client
                with anyio.fail_after(20):
                    assert (await client.ready(10)).ok
                    errors: list[BaseException] = []

                    async def one_call() -> None:
                        try:
                            await client.call("demo/echo", {"text": "x"})
                        except McpError as exc:
                            errors.append(exc)

                    for _ in range(20):
                        outer.start_soon(one_call)
                    await wait_for(lambda: len(server.requests_for("tools/call")) == 20, 10)
                    t0 = anyio.current_time()
                    await client.close()
                    elapsed = anyio.current_time() - t0
        assert client_face is not None
        # generous against a slow machine, far below the 42 s a bound per message took
        assert elapsed < 2.0 + 8.0, elapsed
        assert len(errors) == 20 and all(isinstance(e, Cancelled) for e in errors)
        await wait_for(lambda: len(server.requests_for("notifications/cancelled")) == 20, 5)
        await wait_for(lambda: any(r.method == "DELETE" for r in server.received), 5)
    assert threads_named("mcpcore") == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_L6_a_timeout_around_the_client_still_closes_it_within_its_bound(backend: str) -> None:
    """A caller's cancel scope around ``async with McpClient(...)`` (a timeout) cancels
    the client's own task group, its main task included; closing then drives the
    engine's deadlines itself, so ``TimeoutError`` comes within the close bound instead
    of the close waiting forever for a task that is gone."""

    async def main() -> float:
        async with DemoServer().serve() as running:
            started = anyio.current_time()
            with pytest.raises(TimeoutError):
                with anyio.fail_after(1):
                    async with mcpcore_anyio.McpClient("demo", entry(running.url)) as client:
                        assert (await client.ready(10)).ok
                        await client.call("demo/slow", {"steps": 100, "delay": 0.1})
            return anyio.current_time() - started

    # Bounded from outside: before the fix this run never returned.
    result: list[float] = []
    runner = threading.Thread(target=lambda: result.append(anyio.run(main, backend=backend)))
    runner.daemon = True
    runner.start()
    runner.join(30)
    assert not runner.is_alive(), "closing after the caller's timeout never finished"
    assert result and result[0] < 1 + 2 + 2  # the timeout, the close bound (2 s), slack


async def test_B3_F2_a_listing_of_many_pages_arrives_whole_and_one_that_stalls_ends(
    driver: str,
) -> None:
    """B3, F2: 40 pages of resources arrive whole and in order (on anyio the caller's
    task performs each later page, as it does the first); a listing whose page stalls
    ends at its timeout with ``CallTimeout``, and the client lists again afterwards."""
    stall = {"page": -1}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method != "resources/list":
            return None
        cursor = (request.json.get("params") or {}).get("cursor")
        page = int(cursor) if cursor else 0
        if page == stall["page"]:
            return FaultResponse.stall()
        result: dict[str, Any] = {
            "resources": [{"uri": f"r://{page}/{i}", "name": f"r{page}-{i}"} for i in range(5)]
        }
        if page < 39:
            result["nextCursor"] = str(page + 1)
        return FaultResponse.json({"jsonrpc": "2.0", "id": request.json["id"], "result": result})

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", entry(running.url)) as client:
            with anyio.fail_after(30):
                assert (await client.ready(10)).ok
                listing = await client._run(client.client.list_resources)
                assert [r.uri for r in listing] == [f"r://{p}/{i}" for p in range(40) for i in range(5)]
                stall["page"] = 3
                with pytest.raises(CallTimeout):
                    await client._run(client.client.list_resources, timeout=0.5)
                stall["page"] = -1
                assert len(await client._run(client.client.list_resources)) == 200
