"""V1: per-call metadata. ``call(..., meta={...})`` adds the host's keys to the request's
``params._meta``; the client's own keys (``progressToken``, the 2026-07-28 envelope's
``io.modelcontextprotocol/…``) cannot be set: a ``ValueError`` names the key and nothing
is sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import InvalidValue
from mcpcore_demo import DemoServer
from peers import modern_sdk_server, sdk_server

pytestmark = pytest.mark.anyio

KEY = st.text(min_size=1, max_size=20)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@given(keys=st.lists(KEY, max_size=5))
def test_V1_host_keys_pass_unless_they_are_the_clients_own(keys: list[str]) -> None:
    from mcpcore.features._tool_requests import host_meta

    meta = {key: index for index, key in enumerate(keys)}
    owned = [k for k in meta if k == "progressToken" or k.startswith("io.modelcontextprotocol/")]
    if owned:
        with pytest.raises(ValueError, match="is the client's own"):
            host_meta(meta)
    else:
        assert host_meta(meta) == meta


def _calls(server: DemoServer) -> list[dict[str, Any]]:
    return [
        r.json["params"]
        for r in server.received
        if isinstance(r.json, dict) and r.json.get("method") == "tools/call"
    ]


async def test_V1_meta_reaches_the_demo_server_beside_the_progress_token(driver: str) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}) as client:
            assert (await client.ready(10)).ok
            out = await client.call(
                "demo/echo", {"text": "hi"}, meta={"tenant": "acme", "request": {"id": 7}}
            )
            assert out.text == "hi"
            (params,) = _calls(running.server)
            assert params["_meta"]["tenant"] == "acme"
            assert params["_meta"]["request"] == {"id": 7}
            assert "progressToken" in params["_meta"]  # the client's own key is still set


@pytest.mark.parametrize(
    "key", ["progressToken", "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/x"]
)
async def test_V1_the_clients_own_keys_are_refused_and_nothing_is_sent(
    driver: str, key: str
) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(
                ValueError, match=f"meta key '{key}' is the client's own"
            ) as refused:
                await client.call("demo/echo", {"text": "hi"}, meta={key: "mine"})
            assert isinstance(refused.value, InvalidValue)
            with pytest.raises(ValueError, match="must be a mapping"):
                await client.call("demo/echo", {"text": "hi"}, meta=["tenant"])  # type: ignore[arg-type]
            assert _calls(running.server) == []
            assert (await client.call("demo/echo", {"text": "after"})).text == "after"


@pytest.mark.realpeer
async def test_V1_the_sdk_server_reads_the_hosts_keys(driver: str) -> None:
    with sdk_server("stateful-sse") as peer:
        async with open_client(driver, "sdk", {"url": peer.url}) as client:
            assert (await client.ready(20)).ok
            await client.call("sdk/echo", {"text": "x"}, meta={"tenant": "acme", "user": "u1"})
            seen = [line for line in peer.events() if line.startswith("meta ")]
            assert seen and json.loads(seen[-1][5:]) == {"tenant": "acme", "user": "u1"}


@pytest.mark.realpeer
async def test_V1_meta_rides_in_the_2026_envelope(driver: str) -> None:
    with modern_sdk_server() as peer:
        async with open_client(driver, "sdk", {"url": peer.url}, protocol="modern") as client:
            assert (await client.ready(20)).ok
            out = await client.call("sdk/echo", {"text": "m"}, meta={"tenant": "acme"})
            assert out.text == "m"
            seen = [line for line in peer.events() if line.startswith("meta ")]
            assert seen and json.loads(seen[-1][5:]) == {"tenant": "acme"}
