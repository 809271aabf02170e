"""Resources, templates, prompts, completion, instructions, logs, list changes and
resource subscriptions against the official Python SDK server (F2–F9).

The official Python SDK 2.3 server (tests/servers/modern_sdk_server.py, which
serves both eras on one endpoint) is read and asked for prompts by every
driver (anyio on asyncio and trio, threaded), in the handshake era and at
2026-07-28, with answers streamed (SSE) and as plain JSON; every row of the
"Beyond tools" table of docs/interop.md is recorded (tests/feature_probes.py).
The other peers are in tests/test_features_interop.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from feature_probes import (
    SDK,
    Changes,
    Heard,
    PeerSpec,
    Sent,
    client_options,
    probe_features,
    recording,
)
from mcpcore import InvalidArguments, LogMessage
from peers import MODERN_PROTOCOL_VERSION, Peer, event_records, modern_sdk_server

pytestmark = pytest.mark.realpeer

@pytest.fixture(scope="module", params=[False, True], ids=["sse", "json"])
def peer(request: pytest.FixtureRequest) -> Iterator[tuple[bool, Peer]]:
    with modern_sdk_server("dual", json_response=request.param) as running:
        yield request.param, running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


SDK_SPEC = PeerSpec(
    name="peer",
    instructions="mcpcore test peer (MCP 2026-07-28 + handshake era)",
    resources={"peer://greeting": "text/plain", "peer://blob": "application/octet-stream"},
    text=("peer://greeting", "hello from the peer"),
    blob=("peer://blob", bytes(range(16))),
    template=("peer://items/{item}", {"item": "a b"}, "item a b"),  # encoded by us, decoded by it
    link=("link", {"name": "plum"}),
    prompt=("review", {"code": "x = 1", "language": "rust"}, "Please review this rust code:\nx = 1"),
    embedded=("quote", {}, "peer://greeting"),
    complete_prompt=("review", "language", "r", {"code": "x"}, ("rust",)),
    complete_template=("item", "ap", ("apple", "apricot")),
    log_tool=("shout", {"text": "hello log"}),
    missing="peer://nowhere",
    min_pages=2,  # two resources, one a page
    changes=Changes(
        change_lists=lambda: ("change_lists", {}),
        lists=frozenset({"resources", "prompts"}),
        uri="peer://greeting",
        touch=(("touch", {"uri": "peer://greeting"}),),
    ),
)


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F2_F3_F4_F5_F6_F7_F8_F9_every_feature_row_on_every_driver_in_both_eras(
    driver: str, peer: tuple[bool, Peer], protocol: str
) -> None:
    """Every row of the "Beyond tools" table (tests/feature_probes.py), then what only
    this server's events file shows: the read and the prompt named in Mcp-Name (M25),
    the cache hints (F9), a refused prompt never reaching the server."""
    json_answers, server = peer
    # F8: a JSON reply carries only the result, no log message (as progress)
    sent, logs, heard = Sent(), None if json_answers else list[LogMessage](), Heard()
    options = client_options(sent, logs, heard)
    with recording(SDK, driver) as record:
        async with open_client(driver, "peer", {"url": server.url}, protocol=protocol, **options) as face:
            await probe_features(face, SDK_SPEC, record, sent, logs, heard)
            client = face.client

            async def run(name: str, *args: Any) -> Any:
                return await face._run(getattr(client, name), *args)

            with anyio.fail_after(60):
                modern = protocol == "auto"
                assert client.protocol_version == (MODERN_PROTOCOL_VERSION if modern else "2025-11-25")
                if logs is not None:
                    assert LogMessage(server="peer", level="info", logger=None, data="hello log") in logs
                resources = await run("list_resources")
                if modern:  # F9: the 2026-07-28 cache hints are kept
                    assert resources.ttl_ms is not None and resources.cache_scope is not None
                before = len(event_records(server, "http"))
                with pytest.raises(InvalidArguments, match="must be a string"):
                    await run("get_prompt", "review", {"code": 1})
                assert len(event_records(server, "http")) == before  # refused before sending
                if modern:  # M25: the read and the prompt named in Mcp-Name
                    http = event_records(server, "http")
                    reads = [r for r in http if r["method"] == "resources/read"]
                    gets = [r for r in http if r["method"] == "prompts/get"]
                    assert reads and reads[-1]["headers"].get("mcp-name")
                    assert gets and gets[-1]["headers"].get("mcp-name") == "review"
                # the tools keep working beside them
                assert (await face.call("peer/echo", {"text": "still here"})).text == "still here"


@pytest.mark.anyio
async def test_F2_a_hub_lists_the_resources_of_every_ready_server_tagged_with_it(
    driver: str, peer: tuple[bool, Peer]
) -> None:
    import mcpcore_anyio
    import mcpcore_threaded
    from mcpcore import ServerResource
    from mcpcore_demo import DemoServer

    _, server = peer
    async with DemoServer().serve() as demo:
        entries = {
            "peer": {"url": server.url},
            "demo": {"url": demo.url},
            "gone": {"url": "http://127.0.0.1:9/mcp"},  # never ready: left out
        }
        with anyio.fail_after(60):
            if driver == "threaded":
                hub = mcpcore_threaded.McpHub(
                    {n: mcpcore_threaded.McpClient(n, e, startup_timeout=5) for n, e in entries.items()}
                )
                await anyio.to_thread.run_sync(hub.start)
                try:
                    await anyio.to_thread.run_sync(lambda: hub.clients["peer"].ready(30))
                    await anyio.to_thread.run_sync(lambda: hub.clients["demo"].ready(30))
                    items = await anyio.to_thread.run_sync(hub.list_resources)
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                clients = {n: mcpcore_anyio.McpClient(n, e, startup_timeout=5) for n, e in entries.items()}
                async with mcpcore_anyio.McpHub(clients) as async_hub:
                    await async_hub.clients["peer"].ready(30)
                    await async_hub.clients["demo"].ready(30)
                    assert async_hub.clients["peer"].offers("resources")
                    assert not async_hub.clients["gone"].offers("resources")
                    items = await async_hub.list_resources()
    assert all(isinstance(i, ServerResource) for i in items)
    assert [i.server for i in items] == sorted((i.server for i in items), key=["peer", "demo"].index)
    by_server = {s: {i.resource.uri for i in items if i.server == s} for s in ("peer", "demo")}
    assert by_server["peer"] >= {"peer://greeting", "peer://blob"}
    assert by_server["demo"] == {"demo://readme", "demo://logo.png"}
