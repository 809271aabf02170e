"""A call given up right before its client closes still reaches the server (K6, L6).

The task calls' counterpart (``tasks/cancel``, T9) is in test_tasks_peers.py;
this is an ordinary request's: in the handshake era giving up on a call is
``notifications/cancelled``, which the close that follows delivers (a cancel
notice on its way is never aborted by closing). The bundled demo server on
loopback records every request it receives, so the test sees the notice
itself (a server that cancels its running tools when the session's DELETE
comes could not tell the two apart). Each driver gives up the way a program
does, and its client's block ends at once, several times in a row: on anyio a
cancelled scope around the call, on threads the call's own ``timeout=``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import CallTimeout
from mcpcore_demo import DemoServer

pytestmark = pytest.mark.anyio

TIMEOUT = 20
GIVE_UPS = 5
SLOW = {"steps": 200, "delay": 0.1}  # 20 s: it runs until it is cancelled


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def _past_timeout(client: Any) -> None:
    """A threaded call past its own timeout, then its client's close at once."""
    try:
        with pytest.raises(CallTimeout):
            client.call("demo/slow", SLOW, timeout=0.5)
    finally:
        client.close()


async def test_K6_L6_a_call_given_up_right_before_close_still_sends_cancelled(
    driver: str,
) -> None:
    """K6, L6: the server receives notifications/cancelled naming the call given up,
    though the client closed right after giving up."""
    async with DemoServer().serve() as running:
        server = running.server
        for _ in range(GIVE_UPS):
            calls = len(server.requests_for("tools/call"))

            def started(calls: int = calls) -> bool:
                return len(server.requests_for("tools/call")) > calls

            async def give_up(scope: anyio.CancelScope) -> None:
                await wait_for(started, TIMEOUT)
                scope.cancel()

            with anyio.fail_after(TIMEOUT):
                async with (
                    anyio.create_task_group() as group,
                    open_client(driver, "demo", {"url": running.url}, listen=False) as client,
                ):
                    assert (await client.ready(TIMEOUT)).ok
                    if client.threaded:
                        await anyio.to_thread.run_sync(lambda: _past_timeout(client.client))
                    else:
                        with anyio.CancelScope() as scope:
                            group.start_soon(give_up, scope)
                            await client.client.call("demo/slow", SLOW)
                    # the client's block ends right here
                call_id = server.requests_for("tools/call")[-1].json["id"]

                def cancelled(call_id: Any = call_id) -> bool:
                    notices = server.requests_for("notifications/cancelled")
                    return any(n.json["params"]["requestId"] == call_id for n in notices)

                await wait_for(cancelled, TIMEOUT)
