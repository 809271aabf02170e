"""Both drivers bound the requests handed to httpcore's pool by its size (B7) with
permits that are handed over in order of asking: a plain semaphore let a caller that
had just released take a permit straight back, so with 32 callers some waited for
seconds (p99 latency 0.6 s against a median of 13 ms, bench B1)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import anyio
import pytest

from mcpcore_anyio._client import _Permits as AsyncPermits
from mcpcore_threaded._client import _Permits as ThreadPermits


def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait for another thread to bring ``condition`` about (polled; fails past ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_threaded_permits_are_handed_over_in_order_of_asking() -> None:
    permits = ThreadPermits(1)
    assert permits.acquire(lambda: False)
    order: list[int] = []
    asked: list[int] = []

    def caller(i: int) -> None:
        asked.append(i)
        assert permits.acquire(lambda: False)
        order.append(i)
        permits.release()

    threads = []
    for i in range(5):
        thread = threading.Thread(target=caller, args=(i,))
        thread.start()
        threads.append(thread)
        _until(lambda queued=i + 1: len(permits._waiting) >= queued)  # queued in this order
    permits.release()
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]
    assert permits.acquire(lambda: False)  # all returned: one free again


def test_threaded_a_released_permit_cannot_be_taken_back_past_a_waiter() -> None:
    permits = ThreadPermits(1)
    assert permits.acquire(lambda: False)
    got: list[str] = []
    waiter = threading.Thread(
        target=lambda: got.append("waiter") if permits.acquire(lambda: False) else None
    )
    waiter.start()
    _until(lambda: bool(permits._waiting))
    permits.release()
    assert not permits.acquire(lambda: True)  # asking again at once: behind the waiter
    waiter.join(5)
    assert got == ["waiter"]


def test_threaded_permit_wait_gives_up_without_losing_a_permit() -> None:
    permits = ThreadPermits(1)
    assert permits.acquire(lambda: False)
    stop = threading.Event()
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(permits.acquire(stop.is_set)))
    waiter.start()
    stop.set()
    waiter.join(5)
    assert outcome == [False] and not permits._waiting
    permits.release()
    assert permits.acquire(lambda: False)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_async_permits_in_order_and_a_cancelled_waiter_passes_its_turn_on(
    anyio_backend: str,
) -> None:
    permits = AsyncPermits(1)
    order: list[str] = []
    await permits.__aenter__()

    async def caller(name: str) -> None:
        async with permits:
            order.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for name in ("first", "second", "third"):
                group.start_soon(caller, name)
                await anyio.wait_all_tasks_blocked()  # queued in this order
            await permits.__aexit__(None, None, None)
    assert order == ["first", "second", "third"]

    # a waiter cancelled around the moment the permit is handed to it: whether it
    # gives up (passing the permit on) or takes it, no permit is lost
    await permits.__aenter__()
    order.clear()
    async with anyio.create_task_group() as group:
        waiting = anyio.CancelScope()

        async def cancelled_waiter() -> None:
            with waiting:
                async with permits:
                    order.append("cancelled one")

        group.start_soon(cancelled_waiter)
        group.start_soon(caller, "next")
        await anyio.wait_all_tasks_blocked()
        await permits.__aexit__(None, None, None)  # handed to the first waiter...
        waiting.cancel()  # ...which may give up before it runs
    assert order[-1] == "next"
    with anyio.fail_after(1):
        await permits.__aenter__()  # the permit came back
    assert permits._free == 0 and not permits._waiting
