"""Resource subscriptions and list changes against a real server, on every driver (F2, F5).

The official Python SDK 2.3 server (tests/servers/modern_sdk_server.py) serves
both eras on one endpoint: in the handshake era it takes ``resources/subscribe``
and ``resources/unsubscribe`` and sends updates on the session's GET stream; at
2026-07-28 its ``subscriptions/listen`` honours ``resourceSubscriptions`` and
the list-change flags. Each driver (anyio on asyncio and trio, threaded)
subscribes, hears the update through ``on_resource_updated=`` and the list
changes through ``on_list_changed=``, unsubscribes and hears no more.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import NotOffered, ResourceUpdated
from peers import Peer, modern_sdk_server

pytestmark = pytest.mark.realpeer

URI = "peer://greeting"


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F2_F5_subscriptions_and_list_changes_reach_the_host_on_every_driver_in_both_eras(
    driver: str, peer: Peer, protocol: str
) -> None:
    updates: list[ResourceUpdated] = []
    changes: list[tuple[str, str]] = []
    gets_before = peer.events().count("get")
    async with open_client(
        driver,
        "peer",
        {"url": peer.url},
        protocol=protocol,
        on_resource_updated=updates.append,
        on_list_changed=lambda server, what: changes.append((server, what)),
    ) as face:
        client = face.client
        with anyio.fail_after(60):
            assert (await face.ready(30)).ok
            if protocol == "legacy":  # the SDK drops what it sends while no GET stream is open
                await wait_for(lambda: peer.events().count("get") > gets_before, 10)
            sent_before = peer.events().count("request resources/subscribe")
            await face._run(client.subscribe_resource, URI)
            sent = peer.events().count("request resources/subscribe") - sent_before
            # M71: at 2026-07-28 the listen stream carries it; nothing else is sent
            assert sent == (1 if protocol == "legacy" else 0)
            await face.call("peer/touch", {"uri": URI})
            await wait_for(lambda: bool(updates), 10)
            assert updates == [ResourceUpdated(server="peer", uri=URI)]

            await face.call("peer/change_lists", {})
            await wait_for(lambda: {("peer", "resources"), ("peer", "prompts")} <= set(changes), 10)

            await face._run(client.unsubscribe_resource, URI)
            changes.clear()
            await face.call("peer/touch", {"uri": URI})
            # The list changes come after where the update would have: once they are
            # here, no update is on its way.
            await face.call("peer/change_lists", {})
            await wait_for(lambda: {("peer", "resources"), ("peer", "prompts")} <= set(changes), 10)
            assert len(updates) == 1


@pytest.mark.anyio
async def test_F2_a_server_without_subscribe_gets_nothing_and_the_host_a_NotOffered(
    driver: str,
) -> None:
    from mcpcore_demo import DemoServer

    async with DemoServer().serve() as demo:
        async with open_client(driver, "demo", {"url": demo.url}) as face:
            with anyio.fail_after(30):
                assert (await face.ready(20)).ok
                assert face.client.offers("resources")
                with pytest.raises(NotOffered, match=r"resources\.subscribe"):
                    await face._run(face.client.subscribe_resource, "demo://readme")
