"""fastmcp (4.x, on the official SDK) as a peer, on every driver (E1, L2, K1, K2).

Whatever revision fastmcp's server answers the probe with, the client finds it
on its own, lists, calls (structured output included) and gets progress.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from peers import Peer, fastmcp_server

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]


@pytest.fixture(scope="module")
def fastmcp_peer() -> Iterator[Peer]:
    with fastmcp_server() as peer:
        yield peer


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
async def test_E1_L2_K1_K2_fastmcp_lists_calls_and_reports_progress(
    driver: str, fastmcp_peer: Peer, protocol: str
) -> None:
    async with open_client(driver, "fast", {"url": fastmcp_peer.url}, protocol=protocol) as client:
        with anyio.fail_after(30):
            availability = await client.ready(20)
            assert availability.ok, availability.reason
            if protocol == "legacy":
                assert client.client.era == "legacy"
            assert client.client.protocol_version is not None
            assert {t.name for t in client.tools} >= {"echo", "add", "slow"}
            assert (await client.call("fast/echo", {"text": "über"})).text == "über"
            added = await client.call("fast/add", {"a": 2, "b": 3})
            assert added.structured == {"sum": 5}
            seen: list[float] = []
            done = await client.call(
                "fast/slow", {"steps": 3, "delay": 0.01}, on_progress=lambda p, t, m: seen.append(p)
            )
            assert done.text == "completed 3 steps"
            assert seen == [1.0, 2.0, 3.0]
