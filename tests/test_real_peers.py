"""Both drivers against real servers: the official Python SDK server in its four
modes and the reference TypeScript server (``server-everything``).

Servers start on free loopback ports and stop by process id. Every test is
bounded in time and runs on the anyio driver (asyncio and trio) and the
threaded driver.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import BackendError, McpError
from peers import SDK_MODES, Peer, everything_server, sdk_server

pytestmark = [pytest.mark.anyio, pytest.mark.realpeer]


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module", params=SDK_MODES)
def sdk(request: pytest.FixtureRequest) -> Iterator[Peer]:
    with sdk_server(mode=request.param, page_size=3) as peer:
        yield peer


@pytest.fixture(scope="module")
def everything() -> Iterator[Peer]:
    with everything_server() as peer:
        yield peer


SDK_EXPECTED = {
    "image": "[image omitted: image/png]",
    "audio": "[audio omitted: audio/wav]",
}


async def test_sdk_server_every_content_shape(driver: str, sdk: Peer) -> None:
    """T5 paging (pages of 3), K1, K3 every block type, K4 isError, K5 structured output."""
    async with open_client(driver, "sdk", {"url": sdk.url}) as client:
        with anyio.fail_after(30):
            availability = await client.ready(20)
            assert availability.ok, availability.reason
            names = {tool.name for tool in client.tools}
            assert {"echo", "add", "image", "audio", "embedded_text", "embedded_blob", "resource_link", "fail", "progress", "slow"} <= names
            assert (await client.call("sdk/echo", {"text": "héllo"})).text == "héllo"
            added = await client.call("sdk/add", {"a": 2, "b": 3})
            assert added.structured is not None and 5 in added.structured.values()
            for name, text in SDK_EXPECTED.items():
                assert (await client.call(f"sdk/{name}", {})).text == text
            assert (await client.call("sdk/embedded_text", {})).text
            assert (await client.call("sdk/embedded_blob", {})).text.startswith("[resource omitted: ")
            assert (await client.call("sdk/resource_link", {})).text.startswith("[resource: ")
            with pytest.raises(BackendError):
                await client.call("sdk/fail", {})


async def test_sdk_server_progress_and_cancel(driver: str, sdk: Peer) -> None:
    """K2 progress to on_progress (streaming modes); K6 a cancelled call reaches the server."""
    seen: list[float] = []
    # The SDK 2.3 server speaks 2026-07-28 too, where closing the stream is the
    # cancel (M58) and its JSON mode never notices a closed stream: pinned to the
    # handshake era in JSON mode, so the notice is what reaches it (K6). The
    # modern cancel is proven in test_modern_peers.py.
    pinned = {"protocol": "legacy"} if "json" in _mode_of(sdk) else {}
    async with open_client(driver, "sdk", {"url": sdk.url}, **pinned) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            out = await client.call("sdk/progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p))
            assert out.text
            if "json" not in _mode_of(sdk):  # a JSON reply carries only the result
                assert len(seen) == 3 and seen == sorted(seen)
            before = sdk.events().count("cancelled")
            elapsed = await client.call_and_cancel(
                "sdk/slow", {"seconds": 30}, lambda: sdk.events().count("call slow") > before
            )
            # long before the 30 s tool could have finished: the caller did not wait for it
            # (a generous bound for a loaded machine; B6 measures the time a cancel takes)
            assert elapsed < 10
            if "stateless" not in _mode_of(sdk):
                await wait_for(lambda: sdk.events().count("cancelled") > before, 10)


def _mode_of(peer: Peer) -> str:
    return " ".join(peer.argv)


async def test_everything_server_tools(driver: str, everything: Peer) -> None:
    """The reference TypeScript server: priming events, keepalives, GET stream, content types."""
    async with open_client(driver, "ev", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            names = {tool.name for tool in client.tools}
            assert "get-tiny-image" in names
            assert "simulate-research-query" not in names  # P3b: taskSupport required → hidden
            image = await client.call("ev/get-tiny-image", {})
            assert "[image omitted: image/png]" in image.text
            text_ref = await client.call("ev/get-resource-reference", {"resourceType": "Text"})
            assert text_ref.text
            blob_ref = await client.call("ev/get-resource-reference", {"resourceType": "Blob", "resourceId": 2})
            assert "[resource omitted: " in blob_ref.text
            links = await client.call("ev/get-resource-links", {"count": 2})
            assert links.text.count("[resource: ") == 2
            structured = await client.call("ev/get-structured-content", {"location": "Chicago"})
            assert isinstance(structured.structured, dict) and "temperature" in structured.structured
            progress: list[float] = []
            await client.call(
                "ev/trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_progress=lambda p, t, m: progress.append(p),
            )
            assert progress == [1.0, 2.0, 3.0]


async def test_everything_server_cancel_midway(driver: str, everything: Peer) -> None:
    """K6: cancel a long call midway; the client closes the stream itself and returns at once."""
    progress: list[float] = []
    async with open_client(driver, "ev", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            if client.threaded:
                handle = await anyio.to_thread.run_sync(
                    lambda: client.client.start_call(
                        "ev/trigger-long-running-operation",
                        {"duration": 20, "steps": 20},
                        on_progress=lambda p, t, m: progress.append(p),
                    )
                )
                await wait_for(lambda: len(progress) >= 1, 10)
                t0 = anyio.current_time()
                handle.cancel()
                with pytest.raises(McpError):
                    await anyio.to_thread.run_sync(handle.result)
            else:
                async with anyio.create_task_group() as group:

                    async def run() -> None:
                        await client.client.call(
                            "ev/trigger-long-running-operation",
                            {"duration": 20, "steps": 20},
                            on_progress=lambda p, t, m: progress.append(p),
                        )

                    group.start_soon(run)
                    await wait_for(lambda: len(progress) >= 1, 10)
                    t0 = anyio.current_time()
                    group.cancel_scope.cancel()
            # long before the 20 s operation could have finished: the caller did not wait
            # for it (a generous bound for a loaded machine; B6 measures the time itself)
            assert anyio.current_time() - t0 < 10
            # the session is still good afterwards
            assert (await client.call("ev/echo", {"message": "still here"})).text.endswith("still here")

