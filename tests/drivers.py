"""One async face for both drivers, so one behaviour suite runs against each.

``driver`` is one of ``"anyio-asyncio"``, ``"anyio-trio"``, ``"threaded"``.
The threaded client's blocking calls run in worker threads through
``anyio.to_thread`` (under asyncio), which exercises it exactly as a blocking
program would.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Mapping, MutableMapping
from typing import Any

import anyio
import anyio.abc

import mcpcore_anyio
import mcpcore_threaded
from mcpcore import Availability, SyncReport, Tool, ToolOutput

DRIVERS = ["anyio-asyncio", "anyio-trio", "threaded"]


def backend_of(driver: str) -> str:
    return "trio" if driver == "anyio-trio" else "asyncio"


class Face:
    """What a test needs from a client, the same for both drivers."""

    def __init__(self, driver: str, client: Any) -> None:
        self.driver = driver
        self.client = client
        self.threaded = driver == "threaded"

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.threaded:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs), abandon_on_cancel=False)
        return await fn(*args, **kwargs)

    async def close(self) -> None:
        if self.threaded:
            await self._run(self.client.close)
        else:
            await self.client.aclose()

    async def ready(self, timeout: float | None = None) -> Availability:
        return await self._run(self.client.ready, timeout)  # type: ignore[no-any-return]

    @property
    def tools(self) -> tuple[Tool, ...]:
        return self.client.tools  # type: ignore[no-any-return]

    @property
    def protocol_version(self) -> str | None:
        return self.client.protocol_version  # type: ignore[no-any-return]

    async def call(self, tool_id: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> ToolOutput:
        return await self._run(self.client.call, tool_id, arguments, **kw)  # type: ignore[no-any-return]

    async def refresh(self) -> SyncReport:
        return await self._run(self.client.refresh)  # type: ignore[no-any-return]

    def register_into(self, registry: MutableMapping[str, object]) -> None:
        self.client.register_into(registry)

    async def sync_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        return await self._run(self.client.sync_into, registry)  # type: ignore[no-any-return]

    async def call_registration(self, registration: Any, arguments: Mapping[str, Any] | None) -> ToolOutput:
        return await self._run(registration, arguments)  # type: ignore[no-any-return]

    async def call_and_cancel(
        self, tool_id: str, arguments: Mapping[str, Any] | None, started: Callable[[], bool]
    ) -> float:
        """Start a call, cancel it once ``started()`` holds; seconds from cancel to return."""
        if self.threaded:
            handle = await anyio.to_thread.run_sync(
                lambda: self.client.start_call(tool_id, arguments)
            )
            await wait_for(started, 10)
            t0 = anyio.current_time()
            handle.cancel()
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(handle.result)
            return anyio.current_time() - t0
        returned = anyio.Event()
        t0 = 0.0
        async with anyio.create_task_group() as group:

            async def run() -> None:
                with contextlib.suppress(Exception):
                    await self.client.call(tool_id, arguments)
                returned.set()

            group.start_soon(run)
            await wait_for(started, 10)
            t0 = anyio.current_time()
            group.cancel_scope.cancel()
        return anyio.current_time() - t0


async def wait_for(condition: Callable[[], bool], timeout: float, interval: float = 0.01) -> None:
    """Wait until ``condition()`` holds, polling; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(interval)


@contextlib.asynccontextmanager
async def open_client(driver: str, name: str, server: Any, **options: Any) -> AsyncIterator[Face]:
    if driver == "threaded":
        client = mcpcore_threaded.McpClient(name, server, **options)
        await anyio.to_thread.run_sync(client.start)
        try:
            yield Face(driver, client)
        finally:
            await anyio.to_thread.run_sync(client.close)
    else:
        async with mcpcore_anyio.McpClient(name, server, **options) as client:
            yield Face(driver, client)


def threads_named(prefix: str = "mcpcore") -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]
