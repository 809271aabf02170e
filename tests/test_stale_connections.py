"""A kept-alive connection the server closed while it was idle (D3, E3), on every driver.

A server, or a load balancer in front of it, closes idle connections; its close
may still be on its way when the client writes the next request on one. Such a
request, failing before any byte of its answer arrived, goes once more on a new
connection when sending it twice changes nothing on the server (the core's
``HttpRequest.replayable``); a ``tools/call`` whose request went out whole is not
sent again (it may have run): it fails as a transport error.

The demo server stands for the stale connection deterministically: armed, it
closes, without answering, a request that arrives on a connection that carried
one before.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import TransportError
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

pytestmark = pytest.mark.anyio


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


class CloseKeptAlive:
    """A ``fault`` hook: once armed, the first ``method`` request that arrives on a
    connection that carried a request before is closed without an answer."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.armed = False
        self.closed: list[ReceivedRequest] = []
        self.carried: Counter[int] = Counter()

    def __call__(self, request: ReceivedRequest) -> FaultResponse | None:
        self.carried[request.connection] += 1
        if (
            self.armed
            and not self.closed
            and request.rpc_method == self.method
            and self.carried[request.connection] > 1
        ):
            self.closed.append(request)
            return FaultResponse.close()
        return None


def received(server: Any, method: str) -> list[ReceivedRequest]:
    return [r for r in server.received if r.rpc_method == method]


async def test_D3_a_listing_on_a_connection_the_server_closed_goes_again_on_a_new_one(
    driver: str,
) -> None:
    """D3, E3: ``tools/list`` changes nothing on the server; its connection, kept alive,
    is closed under it before any answer: the same request goes once more on a new
    connection, and the refresh the host asked for succeeds."""
    fault = CloseKeptAlive("tools/list")
    async with DemoServer(fault=fault).serve() as running:
        async with open_client(
            driver, "demo", {"url": running.url}, max_connections=1, listen=False
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                assert (await client.call("demo/echo", {"text": "x"})).text == "x"
                listed = len(received(running.server, "tools/list"))
                opened = running.server.connections_opened
                fault.armed = True
                await client.refresh()
                assert len(fault.closed) == 1  # the stale connection was met
                again = received(running.server, "tools/list")[listed:]
                assert len(again) == 2
                assert again[0].body == again[1].body  # the same request, sent again
                assert again[1].connection != again[0].connection
                assert running.server.connections_opened == opened + 1
                assert "demo/echo" in {tool.id for tool in client.tools}
                assert (await client.call("demo/echo", {"text": "y"})).text == "y"


async def test_D3_a_call_whose_request_went_out_whole_is_not_sent_again(driver: str) -> None:
    """E3: a ``tools/call`` written whole on a kept-alive connection that the server
    then closes without an answer may have run: it is not sent again, on any
    connection, and fails as a transport error. The next call works."""
    fault = CloseKeptAlive("tools/call")
    async with DemoServer(fault=fault).serve() as running:
        async with open_client(
            driver, "demo", {"url": running.url}, max_connections=1, listen=False
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                assert (await client.call("demo/echo", {"text": "x"})).text == "x"
                fault.armed = True
                with pytest.raises(TransportError):
                    await client.call("demo/echo", {"text": "once"})
                assert len(fault.closed) == 1
                sent = [
                    r for r in received(running.server, "tools/call") if b"once" in (r.body or b"")
                ]
                assert len(sent) == 1
                assert (await client.call("demo/echo", {"text": "y"})).text == "y"
