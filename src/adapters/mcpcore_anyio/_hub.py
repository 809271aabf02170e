"""``McpHub`` for anyio: one client per ``mcp.json`` entry, started together (L7)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc

from mcpcore import (
    Availability,
    ConfigError,
    Tool,
    ToolOutput,
    UnknownTool,
)
from mcpcore._setup import hub_entries

from ._client import McpClient, ProgressCallback

__all__ = ["McpHub", "read_mcp_json"]


def _read_text(path: str | os.PathLike[str]) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def read_mcp_json(path_or_text: str | os.PathLike[str]) -> str:
    """A path to an ``mcp.json`` file, or the document itself."""
    if isinstance(path_or_text, os.PathLike):
        return _read_text(path_or_text)
    if path_or_text.lstrip().startswith("{"):
        return path_or_text
    try:
        return _read_text(path_or_text)
    except OSError as exc:
        raise ConfigError(f"cannot read {path_or_text!r}: {exc.strerror or exc}") from None


class McpHub:
    """Many servers (L7); each available or unavailable on its own (C2)."""

    def __init__(self, clients: Mapping[str, McpClient], *, separator: str = "/") -> None:
        # Keyed by each client's own (lowercased) name, whatever the mapping's keys:
        # the name its tool ids start with, so a call is routed to the client that
        # listed the tool (C4).
        self.clients: dict[str, McpClient] = {}
        for client in clients.values():
            if client.name in self.clients:
                raise ValueError(f"two clients are named {client.name!r}")
            self.clients[client.name] = client
        self.separator = separator
        self._own_task_group: anyio.abc.TaskGroup | None = None

    @classmethod
    def from_mcp_json(cls, path_or_text: str | os.PathLike[str], **options: Any) -> McpHub:
        """Raises ``ConfigError`` when the document's top level is invalid (C1)."""
        entries = hub_entries(
            read_mcp_json(path_or_text), options, env=os.environ, home=os.path.expanduser("~")
        )
        clients = {name: McpClient(name, entry, **options) for name, entry in entries.items()}
        return cls(clients, separator=options.get("separator", "/"))

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        for client in self.clients.values():
            client.start(task_group)

    async def __aenter__(self) -> McpHub:
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

    async def ready(self, timeout: float | None = None) -> dict[str, Availability]:
        results: dict[str, Availability] = {}

        async def one(name: str, client: McpClient) -> None:
            results[name] = await client.ready(timeout)

        async with anyio.create_task_group() as group:
            for name, client in self.clients.items():
                group.start_soon(one, name, client)
        return {name: results[name] for name in self.clients}

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(tool for client in self.clients.values() for tool in client.tools)

    def client_for(self, tool_id: str) -> McpClient:
        server = tool_id.split(self.separator, 1)[0]
        client = self.clients.get(server)
        if client is None or self.separator not in tool_id:
            raise UnknownTool(tool_id)
        return client

    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput:
        return await self.client_for(tool_id).call(
            tool_id, arguments, timeout=timeout, on_progress=on_progress
        )

    async def aclose(self) -> None:
        async with anyio.create_task_group() as group:
            for client in self.clients.values():
                group.start_soon(client.aclose)
