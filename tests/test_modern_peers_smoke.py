"""Smoke tests for the MCP 2026-07-28 ("modern era") peers in tests/peers.py.

Each peer is started once per module and driven with the official Python SDK
2.3 CLIENT (``mcp.Client``), not with mcpcore: the point is to prove the peers
work, which protocol revision they negotiate, and what they record.  The
JavaScript peers FAIL (not skip) when missing: run scripts/install_peers.sh.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from peers import (
    INSTALL_HINT,
    MODERN_PROTOCOL_VERSION,
    MODERN_TOOLS,
    Peer,
    conformance_alpha_command,
    event_records,
    modern_peers_installed,
    modern_sdk_server,
    ts_modern_server,
)

pytestmark = pytest.mark.realpeer

T = TypeVar("T")
CALL_TIMEOUT = 30.0  # seconds for one whole client conversation
LEGACY_VERSION = "2025-11-25"

# name -> (factory kind, mode, flavour); flavour: json_response (sdk) / response mode (ts)
PEERS = {
    "sdk-dual": ("sdk", "dual", False),
    "sdk-modern-only-json": ("sdk", "modern-only", True),
    "ts-dual": ("ts", "dual", "auto"),
    "ts-modern-only-json": ("ts", "modern-only", "json"),
}
DUAL = ["sdk-dual", "ts-dual"]  # streaming (SSE-capable) and answer both eras
MODERN_ONLY = ["sdk-modern-only-json", "ts-modern-only-json"]
SERVER_NAMES = {"sdk": "mcpcore-modern-sdk-server", "ts": "mcpcore-ts-modern-server"}


def run(fn: Callable[[], Awaitable[T]], timeout: float = CALL_TIMEOUT) -> T:
    """Run an async client conversation to completion, bounded in time."""

    async def bounded() -> T:
        with anyio.fail_after(timeout):
            return await fn()

    return anyio.run(bounded)


def _start(name: str) -> Any:
    kind, mode, flavour = PEERS[name]
    if kind == "sdk":
        return modern_sdk_server(mode, json_response=bool(flavour))
    if not modern_peers_installed():
        pytest.fail(INSTALL_HINT, pytrace=False)
    return ts_modern_server(mode, response_mode=str(flavour))


@pytest.fixture(scope="module", params=list(PEERS))
def any_peer(request: pytest.FixtureRequest) -> Iterator[tuple[str, Peer]]:
    with _start(request.param) as peer:
        yield request.param, peer


@pytest.fixture(scope="module", params=DUAL)
def dual_peer(request: pytest.FixtureRequest) -> Iterator[tuple[str, Peer]]:
    with _start(request.param) as peer:
        yield request.param, peer


@pytest.fixture(scope="module", params=MODERN_ONLY)
def modern_only_peer(request: pytest.FixtureRequest) -> Iterator[tuple[str, Peer]]:
    with _start(request.param) as peer:
        yield request.param, peer


def _eventually(check: Callable[[], T], timeout: float = 10.0) -> T:
    """Poll (bounded) until `check()` is truthy: the server writes ``done`` lines after answering."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.02)


def _done(peer: Peer, method: str, rid: Any) -> list[dict[str, Any]]:
    """The ``done`` records of every exchange of (method, id), once all of them have one."""

    def check() -> list[dict[str, Any]]:
        sent = [r for r in event_records(peer, "http") if r["method"] == method and r["id"] == rid]
        done = [r for r in event_records(peer, "done") if r["method"] == method and r["id"] == rid]
        return done if len(done) >= len(sent) else []

    return _eventually(check)


def _http(peer: Peer, method: str, **match: Any) -> list[dict[str, Any]]:
    return [
        rec
        for rec in event_records(peer, "http")
        if rec["method"] == method and all(rec.get(k) == v for k, v in match.items())
    ]


# --------------------------------------------------------------------------- modern era


def test_modern_era_lists_tools_and_calls_echo(any_peer: tuple[str, Peer]) -> None:
    name, peer = any_peer
    from mcp import Client

    async def conversation() -> tuple[str, str | None, list[str], Any]:
        async with Client(peer.url, read_timeout_seconds=20) as client:
            tools = await client.list_tools()
            result = await client.call_tool("echo", {"text": "modern hello"})
            info = client.server_info
            return (
                client.protocol_version,
                info.name if info is not None else None,
                [tool.name for tool in tools.tools],
                result,
            )

    version, server_name, tool_names, result = run(conversation)
    assert version == MODERN_PROTOCOL_VERSION
    assert server_name == SERVER_NAMES[PEERS[name][0]]
    assert set(MODERN_TOOLS) <= set(tool_names), tool_names
    assert result.is_error is False
    assert result.result_type == "complete"
    assert [block.text for block in result.content] == ["modern hello"]

    # What the server saw: a modern probe, then per-request POSTs with the standard headers.
    peer.wait_for_event("call echo")
    discover = _http(peer, "server/discover")
    assert discover and discover[0]["era"] == "modern", discover
    calls = _http(peer, "tools/call", name="echo")
    assert calls, event_records(peer, "http")
    headers = calls[-1]["headers"]
    assert headers["mcp-protocol-version"] == MODERN_PROTOCOL_VERSION
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "echo"
    assert "mcp-session-id" not in headers
    assert calls[-1]["era"] == "modern"
    done = _done(peer, "tools/call", calls[-1]["id"])
    assert done and done[-1]["status"] == 200 and done[-1]["closed_by_client"] is False


def test_custom_param_headers_reach_the_tool(any_peer: tuple[str, Peer]) -> None:
    _, peer = any_peer
    from mcp import Client

    async def conversation() -> Any:
        async with Client(peer.url, read_timeout_seconds=20) as client:
            await client.list_tools()  # the client learns the x-mcp-header map from the listing
            return await client.call_tool(
                "regional", {"region": "eu west ü", "text": "t", "priority": 7, "verbose": True}
            )

    result = run(conversation)
    assert result.is_error is False
    out = result.structured_content
    assert out["region"] == "eu west ü"
    # Read by the tool itself from the request headers: non-ASCII is base64-wrapped.
    assert out["headers"]["mcp-param-region"] == "=?base64?ZXUgd2VzdCDDvA==?="
    assert out["decoded"] == {
        "mcp-param-region": "eu west ü",
        "mcp-param-priority": "7",
        "mcp-param-verbose": "true",
    }
    recorded = _http(peer, "tools/call", name="regional")[-1]["headers"]
    assert recorded["mcp-param-priority"] == "7"
    assert recorded["mcp-name"] == "regional"


def test_input_required_tool_elicits(any_peer: tuple[str, Peer]) -> None:
    _, peer = any_peer
    import mcp_types as types
    from mcp import Client

    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirmed": True})

    async def conversation() -> Any:
        async with Client(peer.url, elicitation_callback=elicit, read_timeout_seconds=20) as client:
            return await client.call_tool("confirm", {"action": "deploy"})

    result = run(conversation)
    assert asked == ["Confirm deploy?"]
    assert result.content[0].text.lower() == "deploy: accept confirmed=true"
    peer.wait_for_event("call confirm")
    # Two rounds: the first answered input_required, the retry completed the call.
    assert len(_http(peer, "tools/call", name="confirm")) >= 2
    assert "ask confirm" in peer.events()


# --------------------------------------------------------------------------- streaming peers


def test_progress_and_cancellation(dual_peer: tuple[str, Peer]) -> None:
    _, peer = dual_peer
    from mcp import Client

    progress: list[float] = []

    async def conversation() -> None:
        async with Client(peer.url, read_timeout_seconds=20) as client:

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            done = await client.call_tool(
                "slow", {"steps": 2, "delay": 0.05}, progress_callback=on_progress
            )
            assert done.content[0].text == "completed 2 steps"
            assert progress == [1, 2]

            first = anyio.Event()

            async def on_progress_cancel(
                value: float, total: float | None, msg: str | None
            ) -> None:
                first.set()

            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await client.call_tool(
                        "slow", {"steps": 200, "delay": 0.05}, progress_callback=on_progress_cancel
                    )

                tg.start_soon(call)
                await first.wait()
                tg.cancel_scope.cancel()  # modern cancellation: the client closes the stream

    run(conversation)
    events = peer.wait_for_event("cancelled slow")
    assert "closed tools/call" in events
    assert "finished slow" in events  # the first, uncancelled call
    closed = _eventually(
        lambda: [
            r
            for r in event_records(peer, "done")
            if r["closed_by_client"] and r["method"] == "tools/call"
        ]
    )
    assert closed and closed[-1]["content_type"] == "text/event-stream", closed


def test_tool_list_change_via_subscriptions_listen(dual_peer: tuple[str, Peer]) -> None:
    name, peer = dual_peer
    from mcp import Client

    new_tool = f"dynamic_{name.replace('-', '_')}"

    async def conversation() -> tuple[list[str], str]:
        async with Client(peer.url, read_timeout_seconds=20) as client:
            async with client.listen(tools_list_changed=True) as sub:
                assert sub.honored.tools_list_changed is True
                added = await client.call_tool("add_tool", {"name": new_tool})
                assert added.is_error is False, added
                with anyio.fail_after(10):
                    event = await sub.__anext__()
                assert type(event).__name__ == "ToolsListChanged"
            names = [tool.name for tool in (await client.list_tools()).tools]
            called = await client.call_tool(new_tool, {"text": "x"})
            await client.call_tool("remove_tool", {"name": new_tool})
            return names, called.content[0].text

    names, text = run(conversation)
    assert new_tool in names
    assert text == f"dynamic {new_tool}: x"
    events = peer.wait_for_event("closed subscriptions/listen")
    assert f"tool-added {new_tool}" in events
    assert f"tool-removed {new_tool}" in events
    listen = _http(peer, "subscriptions/listen")
    assert listen and listen[-1]["headers"]["mcp-method"] == "subscriptions/listen"


# --------------------------------------------------------------------------- eras


def test_dual_peer_still_answers_the_handshake_era(dual_peer: tuple[str, Peer]) -> None:
    _, peer = dual_peer
    from mcp import Client

    async def conversation() -> tuple[str, str]:
        async with Client(peer.url, mode="legacy", read_timeout_seconds=20) as client:
            result = await client.call_tool("echo", {"text": "old hello"})
            return client.protocol_version, result.content[0].text

    assert run(conversation) == (LEGACY_VERSION, "old hello")
    init = _http(peer, "initialize")
    assert init and init[-1]["era"] == "legacy"


def test_modern_only_peer_refuses_the_handshake_era(modern_only_peer: tuple[str, Peer]) -> None:
    _, peer = modern_only_peer
    from mcp import Client

    async def conversation() -> None:
        async with Client(peer.url, mode="legacy", read_timeout_seconds=20):
            pass

    # MCPError -32022, possibly wrapped in an ExceptionGroup by the SDK transport.
    with pytest.raises(Exception) as excinfo:
        run(conversation)
    assert "-32022" in repr(excinfo.value) or "nsupported protocol version" in repr(excinfo.value)
    init = _http(peer, "initialize")
    assert init and init[-1]["era"] == "legacy"
    refused = _done(peer, "initialize", init[-1]["id"])
    assert refused and refused[-1]["status"] == 400, event_records(peer, "done")


# --------------------------------------------------------------------------- conformance alpha


def test_conformance_alpha_cli(tmp_path: Path) -> None:
    if not modern_peers_installed():
        pytest.fail(INSTALL_HINT, pytrace=False)
    version = subprocess.run(
        conformance_alpha_command("--version"), capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "0.2.0-alpha.12"

    listed = subprocess.run(
        conformance_alpha_command("list", "--client", "--spec-version", MODERN_PROTOCOL_VERSION),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    for scenario in ("request-metadata", "http-custom-headers", "sep-2322-client-request-state"):
        assert scenario in listed.stdout

    # A client scenario, with the official SDK client as the client under test
    # (the harness appends the mock server's URL as the last argument).
    client = tmp_path / "sdk_client.py"
    client.write_text(
        "import sys, anyio\n"
        "from mcp import Client\n"
        "async def main():\n"
        "    async with Client(sys.argv[-1]) as c:\n"
        "        await c.list_tools()\n"
        "anyio.run(main)\n",
        encoding="utf-8",
    )
    scenario = subprocess.run(
        conformance_alpha_command(
            "client",
            "--command",
            f"{sys.executable} {client}",
            "--scenario",
            "request-metadata",
            "--spec-version",
            MODERN_PROTOCOL_VERSION,
            "--output-dir",
            str(tmp_path / "results"),
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert scenario.returncode == 0, scenario.stdout[-3000:] + scenario.stderr[-2000:]
    assert "OVERALL: PASSED" in scenario.stdout + scenario.stderr  # the report goes to stderr
