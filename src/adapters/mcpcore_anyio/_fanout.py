"""How an anyio ``McpHub`` runs its clients: started in one task group, asked at once.

The hub's public methods are written once in ``_hub.py`` (the blocking
driver's copy is generated from it by ``scripts/unasync.py``); this is the part
that differs: the lifecycle (``start(task_group)``, ``async with``) and
``_each``, which asks every client at once, each in a task of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Self, TypeVar

import anyio
import anyio.abc

from mcpcore import HubBase

from ._client import McpClient

__all__ = ["HubDriver"]

_T = TypeVar("_T")


class HubDriver(HubBase[McpClient]):
    """The lifecycle and the fan-out of an ``McpHub`` (L7)."""

    def __init__(self, clients: Mapping[str, McpClient], *, separator: str = "/") -> None:
        super().__init__(clients, separator=separator)
        self._own_task_group: anyio.abc.TaskGroup | None = None

    if TYPE_CHECKING:

        async def aclose(self) -> None: ...  # McpHub's (_hub.py)

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        for client in self.clients.values():
            client.start(task_group)

    async def __aenter__(self) -> Self:
        self._own_task_group = anyio.create_task_group()
        await self._own_task_group.__aenter__()
        self.start(self._own_task_group)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.aclose()
        finally:
            group, self._own_task_group = self._own_task_group, None
            if group is not None:
                await group.__aexit__(None, None, None)

    async def _each(
        self,
        clients: Mapping[str, McpClient],
        step: Callable[[str, McpClient, float | None], Awaitable[_T]],
        timeout: float | None = None,
    ) -> dict[str, _T]:
        """``step(name, client, timeout)`` for every client at once, each in a task of
        its own; what each returned, in the clients' order."""
        results: dict[str, _T] = {}

        async def one(name: str, client: McpClient) -> None:
            results[name] = await step(name, client, timeout)

        async with anyio.create_task_group() as group:
            for name, client in clients.items():
                group.start_soon(one, name, client)
        return {name: results[name] for name in clients}
