"""The driver contract: one behaviour suite over four drivers and two real servers.

Drivers: the anyio driver on asyncio and on trio, the threaded driver, and the
standard-library example driver (``examples/stdlib_driver.py``, built on the
public names of ``mcpcore`` alone). Servers: the bundled demo server and the
official Python SDK server (``tests/servers/sdk_server.py``, stateful SSE).
Behaviours: listing (L2), a call's output (K3), progress (K2), cancelling a
running call (K6, K9) and closing with calls in flight (L6, K9, H9).

Every test is bounded with ``anyio.fail_after`` and waits on conditions the
servers record, never on fixed sleeps.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, Face, backend_of, open_client, wait_for
from mcpcore import Cancelled, McpError
from mcpcore_demo import DemoServer, RunningServer
from peers import Peer, sdk_server

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_DRIVERS = [*DRIVERS, "example"]
TEST_BOUND = 30.0  # seconds any one test may take
PROMPT = 5.0  # seconds a cancelled call or a close may take (generous for a loaded machine)


def _load_example() -> ModuleType:
    """``examples/stdlib_driver.py`` as a module, from any working directory."""
    name = "mcpcore_example_stdlib_driver"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "stdlib_driver.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stdlib_driver = _load_example()


# --- the example driver behind the shared face ---------------------------------------------


class ExampleFace(Face):
    """The example's blocking client behind ``drivers.Face``: it has the threaded
    client's names (``call``, ``start_call`` → handle with ``cancel``/``result``,
    ``ready``, ``tools``, ``close``), so it is driven exactly like it."""

    def __init__(self, client: Any) -> None:
        super().__init__("example", client)
        self.threaded = True  # blocking calls run in worker threads

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # A test's time bound also ends a blocking call that hangs (the example is
        # the driver most likely to be copied and changed): the test then fails.
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs), abandon_on_cancel=True)


@contextlib.asynccontextmanager
async def open_any(driver: str, name: str, server: Any, **options: Any) -> AsyncIterator[Face]:
    if driver != "example":
        async with open_client(driver, name, server, **options) as face:
            yield face
        return
    client = stdlib_driver.ExampleClient(name, server, **options)
    await anyio.to_thread.run_sync(client.__enter__)
    face = ExampleFace(client)
    try:
        yield face
    finally:
        await face.close()


# --- the two servers ----------------------------------------------------------------------


@dataclass
class Target:
    """A running server and how a test drives and observes it."""

    kind: str
    url: str
    tools: set[str]
    progress: tuple[str, dict[str, Any]]  # a call reporting progress 1, 2, 3 of 3
    slow: dict[str, Any]  # arguments of ``slow`` that keep it running for 20 s or more
    slow_started: Callable[[], int]  # how many ``slow`` calls the server has started
    cancels: Callable[[], int]  # how many cancellations the server has seen
    deletes: Callable[[], int] | None  # DELETEs received, where the server records them

    @property
    def name(self) -> str:
        return self.kind  # the client's name: tool ids are ``<kind>/<tool>``


def demo_target(running: RunningServer) -> Target:
    server = running.server

    def slow_started() -> int:
        return sum(r.json["params"]["name"] == "slow" for r in server.requests_for("tools/call"))

    return Target(
        kind="demo",
        url=running.url,
        tools={"echo", "add", "slow", "fail"},
        progress=("slow", {"steps": 3, "delay": 0.01}),
        slow={"steps": 200, "delay": 0.1},
        slow_started=slow_started,
        cancels=lambda: len(server.requests_for("notifications/cancelled")),
        deletes=lambda: sum(r.method == "DELETE" for r in server.received),
    )


def sdk_target(peer: Peer) -> Target:
    return Target(
        kind="sdk",
        url=peer.url,
        tools={"echo", "add", "progress", "slow", "fail"},
        progress=("progress", {"steps": 3}),
        slow={"seconds": 30},
        slow_started=lambda: peer.events().count("call slow"),
        cancels=lambda: peer.events().count("cancelled"),
        deletes=None,  # the SDK server keeps no record of HTTP methods
    )


@pytest.fixture(scope="module")
def sdk() -> Iterator[Peer]:
    with sdk_server(mode="stateful-sse") as peer:
        yield peer


@pytest.fixture(params=CONTRACT_DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(params=["demo", pytest.param("sdk", marks=pytest.mark.realpeer)])
def target(request: pytest.FixtureRequest, sdk: Peer) -> Iterator[Target]:
    if request.param == "sdk":
        yield sdk_target(sdk)
        return
    # A fresh demo server per test, on its own loop in a thread (any driver, any backend).
    with DemoServer().serve_in_thread() as running:
        yield demo_target(running)


@contextlib.asynccontextmanager
async def ready_client(driver: str, target: Target) -> AsyncIterator[Face]:
    async with open_any(driver, target.name, {"url": target.url}) as client:
        availability = await client.ready(20)
        assert availability.ok, availability.reason
        yield client


async def cancel_running_call(
    client: Face, tool_id: str, arguments: dict[str, Any], started: Callable[[], bool]
) -> tuple[float, BaseException | None]:
    """Start a call, cancel it once ``started()``: seconds from cancel to return, and its error.

    Blocking drivers cancel through the call's handle (``handle.cancel()``), and the
    call raises; an anyio caller cancels the task's own scope (its error is then
    ``None``: the scope caught the cancellation, which is anyio's way).
    """
    if client.threaded:
        handle = await client._run(client.client.start_call, tool_id, arguments)
        await wait_for(started, 10)
        t0 = anyio.current_time()
        handle.cancel()
        error: BaseException | None = None
        try:
            await client._run(handle.result)
        except Exception as exc:
            error = exc
        return anyio.current_time() - t0, error
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await client.call(tool_id, arguments)

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await wait_for(started, 10)
        t0 = anyio.current_time()
        scope.cancel()
    assert scope.cancelled_caught, "the call ended before it was cancelled"
    return anyio.current_time() - t0, None


# --- the behaviours ---------------------------------------------------------------------------


async def test_L2_listing_names_every_tool_server_slash_tool(driver: str, target: Target) -> None:
    """L2: start-up (handshake and listing) makes the client ready; T1: the server's tools
    are listed as ``<name>/<tool>``."""
    with anyio.fail_after(TEST_BOUND):
        async with ready_client(driver, target) as client:
            tools = client.tools
            assert target.tools <= {tool.name for tool in tools}
            assert all(tool.id == f"{target.name}/{tool.name}" for tool in tools)


async def test_K3_a_call_returns_its_output(driver: str, target: Target) -> None:
    """K1, K3: a call carries its arguments and returns the rendered output; the session
    takes another."""
    with anyio.fail_after(TEST_BOUND):
        async with ready_client(driver, target) as client:
            assert (await client.call(f"{target.name}/echo", {"text": "héllo"})).text == "héllo"
            added = await client.call(f"{target.name}/add", {"a": 2, "b": 3})
            assert added.structured is not None and 5 in added.structured.values()


async def test_K2_progress_reaches_on_progress(driver: str, target: Target) -> None:
    """K2: each progress notification reaches the caller's on_progress, in order, before
    the call returns."""
    seen: list[tuple[float, float | None]] = []
    tool, arguments = target.progress
    with anyio.fail_after(TEST_BOUND):
        async with ready_client(driver, target) as client:
            output = await client.call(
                f"{target.name}/{tool}", arguments, on_progress=lambda p, t, m: seen.append((p, t))
            )
            assert output.text
            assert seen == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]


async def test_K6_K9_cancelling_a_running_call(driver: str, target: Target) -> None:
    """K6: cancelling a running call returns promptly and the server hears
    ``notifications/cancelled``; the client takes the next call. K9: where the call
    raises (a handle's cancel), it raises ``Cancelled`` naming the caller."""
    with anyio.fail_after(TEST_BOUND):
        async with ready_client(driver, target) as client:
            started, cancels = target.slow_started(), target.cancels()
            elapsed, error = await cancel_running_call(
                client, f"{target.name}/slow", target.slow, lambda: target.slow_started() > started
            )
            assert elapsed < PROMPT
            if client.threaded:
                assert type(error) is Cancelled, error
                assert error.reason == "cancelled by the caller"
            await wait_for(lambda: target.cancels() > cancels, 10)
            assert (await client.call(f"{target.name}/echo", {"text": "after"})).text == "after"


async def test_L6_K9_close_ends_calls_in_flight_with_cancelled(driver: str, target: Target) -> None:
    """L6: closing with calls in flight ends each with ``Cancelled`` (K9), tells the server
    (its cancellations; H9 the DELETE, where recorded) and returns within the close bound."""
    caught: list[BaseException] = []
    with anyio.fail_after(TEST_BOUND):
        async with ready_client(driver, target) as client:
            started, cancels = target.slow_started(), target.cancels()

            async def call() -> None:
                try:
                    await client.call(f"{target.name}/slow", target.slow)
                except McpError as exc:
                    caught.append(exc)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
                await wait_for(lambda: target.slow_started() >= started + 2, 10)
                t0 = anyio.current_time()
                await client.close()
                closed_in = anyio.current_time() - t0
        assert closed_in < PROMPT
        assert len(caught) == 2 and all(type(e) is Cancelled for e in caught), caught
        await wait_for(lambda: target.cancels() >= cancels + 2, 10)
        if target.deletes is not None:
            deletes = target.deletes
            await wait_for(lambda: deletes() == 1, 5)
