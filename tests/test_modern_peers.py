"""mcpcore against two independent 2026-07-28 servers, on every driver (E1–E5, M1–M68).

The official Python SDK 2.3 server (both eras on one endpoint, SSE; and
2026-07-28 only, JSON) and the official TypeScript SDK 2.x server (both eras;
2026-07-28 only, JSON), from ``tests/peers.py``. Each conversation does what a
host would: discovery, listing (with a custom-header tool), a call whose
parameters travel as ``Mcp-Param-*`` headers, an input-required tool, progress,
a cancel the server sees as its stream closing, and a list change through
``subscriptions/listen``. The servers record what they received.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import Cancelled, McpError
from peers import MODERN_PROTOCOL_VERSION, Peer, event_records, modern_sdk_server, ts_modern_server

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]

# name -> (kind, mode, flavour): flavour is json_response (sdk) or the response mode (ts)
PEERS = {
    "sdk-dual-sse": ("sdk", "dual", False),
    "sdk-modern-only-json": ("sdk", "modern-only", True),
    "ts-dual": ("ts", "dual", "auto"),
    "ts-modern-only-json": ("ts", "modern-only", "json"),
}


@pytest.fixture(scope="module", params=list(PEERS))
def peer(request: pytest.FixtureRequest) -> Iterator[tuple[str, Peer]]:
    kind, mode, flavour = PEERS[request.param]
    factory = (
        modern_sdk_server(mode, json_response=bool(flavour))
        if kind == "sdk"
        else ts_modern_server(mode, response_mode=str(flavour))
    )
    with factory as running:
        yield request.param, running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def _http(peer: Peer, method: str, **match: Any) -> list[dict[str, Any]]:
    return [
        record
        for record in event_records(peer, "http")
        if record["method"] == method and all(record.get(k) == v for k, v in match.items())
    ]


async def test_E1_M1_M37_M58_M63_a_whole_conversation_on_every_driver(
    driver: str, peer: tuple[str, Peer]
) -> None:
    name, server = peer
    marker = f"{driver}-{name}-{time.monotonic_ns()}"
    async with open_client(driver, "modern", {"url": server.url}, auto_refresh=True) as client:
        with anyio.fail_after(60):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            # E1, M1, M2: discovered, never initialized
            assert client.client.protocol_version == MODERN_PROTOCOL_VERSION
            assert client.client.era == "modern"
            names = {tool.name for tool in client.tools}
            assert {"echo", "regional", "confirm", "slow"} <= names, names

            echoed = await client.call("modern/echo", {"text": marker})
            assert echoed.text == marker
            headers = _http(server, "tools/call", name="echo")[-1]["headers"]
            assert headers["mcp-protocol-version"] == MODERN_PROTOCOL_VERSION
            assert headers["mcp-method"] == "tools/call" and headers["mcp-name"] == "echo"
            assert "mcp-session-id" not in headers  # M69

            # M32-M37: parameters mirrored as headers, read by the tool itself
            regional = await client.call(
                "modern/regional", {"region": "eu west ü", "text": "t", "priority": 7, "verbose": False}
            )
            decoded = (regional.structured or {}).get("decoded")
            assert decoded == {
                "mcp-param-region": "eu west ü",
                "mcp-param-priority": "7",
                "mcp-param-verbose": "false",
            }, regional.structured

            # M56: both servers keep the rule that no input is asked of a client that
            # declares no capabilities: the call fails naming the capability (the
            # answers of E4 are proven against the conformance suite's mock)
            with pytest.raises(McpError) as refused:
                await client.call("modern/confirm", {"action": "deploy"})
            assert "-32021" in str(refused.value) and "elicitation" in str(refused.value)

            # M58: cancelling closes the call's stream; nothing else is sent
            def started() -> bool:
                return any(line.startswith("progress slow") for line in server.events())

            if client.threaded:
                handle = await anyio.to_thread.run_sync(
                    lambda: client.client.start_call("modern/slow", {"steps": 400, "delay": 0.05})
                )
                await wait_for(started, 10)
                handle.cancel()
                with pytest.raises(Cancelled):
                    await anyio.to_thread.run_sync(lambda: handle.result(10))
            else:
                with anyio.move_on_after(10) as scope:
                    async with anyio.create_task_group() as group:

                        async def slow() -> None:
                            await client.call("modern/slow", {"steps": 400, "delay": 0.05})

                        group.start_soon(slow)
                        await wait_for(started, 10)
                        group.cancel_scope.cancel()
                assert not scope.cancelled_caught
            await wait_for(lambda: "closed tools/call" in server.events(), 10)
            assert not [r for r in event_records(server, "http") if r["method"] == "notifications/cancelled"]

            # M63, M66: a list change through subscriptions/listen re-lists the tools
            new_tool = f"dyn_{abs(hash(marker)) % 10**8}"
            await client.call("modern/add_tool", {"name": new_tool})
            await wait_for(lambda: any(t.name == new_tool for t in client.tools), 15)
            await client.call("modern/remove_tool", {"name": new_tool})
            assert _http(server, "subscriptions/listen")

    # M70: no GET and no DELETE ever reached the server from mcpcore's modern client
    verbs = {r["verb"] for r in event_records(server, "http") if r.get("era") == "modern"}
    assert verbs <= {"POST"}, verbs
