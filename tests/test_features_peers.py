"""Resources, templates, prompts and instructions against a real server (F2, F5, F7, F9).

The official Python SDK 2.3 server (tests/servers/modern_sdk_server.py, which
serves both eras on one endpoint) is read and asked for prompts by every
driver (anyio on asyncio and trio, threaded), in the handshake era and at
2026-07-28, with answers streamed (SSE) and as plain JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    BlobContents,
    InvalidArguments,
    Listing,
    Prompt,
    ReadResult,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    TextContents,
)
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


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F2_F5_F7_F9_resources_and_prompts_on_every_driver_in_both_eras(
    driver: str, peer: tuple[bool, Peer], protocol: str
) -> None:
    _, server = peer
    async with open_client(driver, "peer", {"url": server.url}, protocol=protocol) as face:
        client = face.client

        async def run(name: str, *args: Any) -> Any:
            return await face._run(getattr(client, name), *args)

        with anyio.fail_after(60):
            assert (await face.ready(30)).ok
            modern = protocol == "auto"
            assert client.protocol_version == (MODERN_PROTOCOL_VERSION if modern else "2025-11-25")
            assert client.instructions == "mcpcore test peer (MCP 2026-07-28 + handshake era)"

            resources = await run("list_resources")
            assert isinstance(resources, Listing)
            assert all(isinstance(r, Resource) for r in resources)
            assert {(r.uri, r.mime_type) for r in resources} >= {
                ("peer://greeting", "text/plain"),
                ("peer://blob", "application/octet-stream"),
            }
            if modern:  # F9: the 2026-07-28 cache hints are kept
                assert resources.ttl_ms is not None and resources.cache_scope is not None
            templates = await run("list_resource_templates")
            assert [t.uri_template for t in templates] == ["peer://items/{item}"]
            assert isinstance(templates[0], ResourceTemplate)

            text = await run("read_resource", "peer://greeting")
            assert isinstance(text, ReadResult) and text.text == "hello from the peer"
            assert isinstance(text.contents[0], TextContents)
            blob = await run("read_resource", "peer://blob")
            [part] = blob.contents
            assert isinstance(part, BlobContents) and part.data == bytes(range(16))
            item = await run("read_resource", "peer://items/abc")
            assert item.text == "item abc"
            with pytest.raises(ResourceNotFound) as missing:
                await run("read_resource", "peer://nowhere")
            assert missing.value.uri == "peer://nowhere"

            prompts = await run("list_prompts")
            [review] = [p for p in prompts if p.name == "review"]
            assert isinstance(review, Prompt)
            assert [(a.name, a.required) for a in review.arguments] == [("code", True), ("language", False)]
            got = await run("get_prompt", "review", {"code": "x = 1", "language": "rust"})
            assert got.messages[0].role == "user"
            assert got.messages[0].text == "Please review this rust code:\nx = 1"
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
            # F6: completion of a prompt's argument and of a template's variable
            languages = await run("complete", review, "language", "r", {"code": "x"})
            assert languages.values == ("rust",) and languages.total == 1
            items = await run("complete", templates[0], "item", "ap")
            assert items.values == ("apple", "apricot") and not items.has_more
            # the tools keep working beside them
            assert (await face.call("peer/echo", {"text": "still here"})).text == "still here"


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F8_a_servers_log_messages_reach_on_log_on_every_driver_in_both_eras(
    driver: str, peer: tuple[bool, Peer], protocol: str
) -> None:
    from mcpcore import LogMessage

    json_answers, server = peer
    if json_answers:
        pytest.skip("n/a: a JSON reply carries only the result, no log message (as progress)")
    got: list[LogMessage] = []
    async with open_client(
        driver, "peer", {"url": server.url}, protocol=protocol, log_level="debug", on_log=got.append
    ) as face:
        with anyio.fail_after(60):
            assert (await face.ready(30)).ok
            assert (await face.call("peer/shout", {"text": "hello log"})).text == "shouted hello log"
            with anyio.fail_after(10):
                while not got:
                    await anyio.sleep(0.01)
    assert got[0] == LogMessage(server="peer", level="info", logger=None, data="hello log")


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
