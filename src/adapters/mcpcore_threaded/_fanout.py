"""How a blocking ``McpHub`` runs its clients: each on its own threads, asked in turn.

The hub's public methods are generated into ``_hub.py`` from the async
driver's (``scripts/unasync.py``); this is the part that differs: the
lifecycle (``start()``, ``with``), ``_each``, which asks one client after
another within one shared deadline (each client connects on threads of its
own already, so waiting in turn costs no more than the slowest one), and
``start_call``, a call in flight, which only the blocking hub has.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from mcpcore import HubBase

from ._client import CallHandle, McpClient, ProgressCallback

__all__ = ["HubDriver"]

_T = TypeVar("_T")


class HubDriver(HubBase[McpClient]):
    """The lifecycle and the fan-out of an ``McpHub`` (L7)."""

    if TYPE_CHECKING:

        def close(self) -> None: ...  # McpHub's (_hub.py)

    def start(self) -> None:
        for client in self.clients.values():
            client.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _each(
        self,
        clients: Mapping[str, McpClient],
        step: Callable[[str, McpClient, float | None], _T],
        timeout: float | None = None,
    ) -> dict[str, _T]:
        """``step(name, client, time left)`` for one client after another, within one
        deadline ``timeout`` from now; what each returned, in the clients' order."""
        end = None if timeout is None else time.monotonic() + timeout
        results: dict[str, _T] = {}
        for name, client in clients.items():
            remaining = None if end is None else max(0.0, end - time.monotonic())
            results[name] = step(name, client, remaining)
        return results

    def start_call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> CallHandle:
        """Start a call on the server its tool id names and return its handle at once
        (``result()``, ``cancel()``), as ``McpClient.start_call``."""
        return self.client_for(tool_id).start_call(
            tool_id,
            arguments,
            timeout=timeout,
            on_progress=on_progress,
            meta=meta,
            on_input=on_input,
        )
