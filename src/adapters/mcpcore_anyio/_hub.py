"""``McpHub``: one client per ``mcp.json`` entry, started together (L7).

Its public methods are written once, here; ``scripts/unasync.py`` writes the
blocking driver's copy (``mcpcore_threaded/_hub.py``) from this file. How the
clients run together (a task group, or threads) is ``_fanout.py``'s.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from mcpcore import (
    Availability,
    ConfigError,
    McpError,
    ToolOutput,
    hub_entries,
    looks_like_document,
)

if TYPE_CHECKING:
    from mcpcore import (
        Continuation,
        ElicitResult,
        InputRequired,
        Listing,
        Resource,
        ServerResource,
        ServerSkill,
        Skill,
        TaskHandle,
        TaskStatus,
    )

from ._client import McpClient, ProgressCallback
from ._fanout import HubDriver

__all__ = ["McpHub", "read_file", "read_mcp_json"]

_log = logging.getLogger("mcpcore.anyio")


def _read_text(path: str | os.PathLike[str]) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def read_file(path: str | os.PathLike[str]) -> str:
    """The text of the ``mcp.json`` file at ``path``; ``ConfigError`` when it cannot be read."""
    try:
        return _read_text(path)
    except OSError as exc:
        raise ConfigError(f"cannot read {os.fspath(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {os.fspath(path)!r}: it is not UTF-8 text") from None


def read_mcp_json(path_or_text: str | os.PathLike[str]) -> str:
    """A path to an ``mcp.json`` file, or the document itself (guessed: see ``McpHub.from_mcp_json``)."""
    if looks_like_document(path_or_text):
        return str(path_or_text)
    return read_file(path_or_text)


class McpHub(HubDriver):
    """Many servers (L7); each available or unavailable on its own (C2)."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **options: Any) -> McpHub:
        """One client per server of the ``mcp.json`` file at ``path`` (L7).

        ``options`` are ``McpClient``'s (``mcpcore.ClientOptions``), for every
        client. Raises ``ConfigError`` when the file cannot be read or its top
        level is invalid (C1); an invalid entry makes only its client
        unavailable (C2). Does no network I/O (L1).

        The file is the user's own (C9) unless the ``plugin_root`` option says it
        is a plugin's (C6): its local entries (with ``allow_local=True``) may then
        name a command by absolute path, and the file's directory is their
        plugin root: ``./`` commands, ``${PLUGIN_ROOT}`` and their default
        working directory are relative to it.
        """
        text = read_file(path)
        return cls._from_document(text, os.path.dirname(os.path.abspath(path)), options)

    @classmethod
    def from_text(cls, text: str | bytes, **options: Any) -> McpHub:
        """One client per server of the ``mcp.json`` document ``text`` (L7).

        Like ``from_file``, for a document already in memory; it has no
        directory, so a local entry's relative ``command`` or ``cwd`` is refused
        unless ``plugin_root`` is given.
        """
        return cls._from_document(text, None, options)

    @classmethod
    def _from_document(
        cls, text: str | bytes, directory: str | None, options: dict[str, Any]
    ) -> McpHub:
        entries = hub_entries(
            text, options, env=os.environ, home=os.path.expanduser("~"), directory=directory
        )
        clients = {name: McpClient(name, entry, **options) for name, entry in entries.items()}
        return cls(clients, separator=options.get("separator", "/"))

    @classmethod
    def from_mcp_json(cls, path_or_text: str | os.PathLike[str], **options: Any) -> McpHub:
        """``from_file`` or ``from_text``, guessed: a string that starts with ``{`` (after
        whitespace) is taken as the document, anything else as a path.

        Prefer the explicit ``from_file`` / ``from_text``: a guess can be wrong (a
        path that starts with ``{``). Raises ``ConfigError`` when the document's top
        level is invalid (C1) or the file cannot be read.
        """
        if looks_like_document(path_or_text):
            return cls.from_text(str(path_or_text), **options)
        return cls.from_file(path_or_text, **options)

    async def list_resources(self, *, timeout: float | None = None) -> list[ServerResource]:
        """F2: the resources of every ready server that offers them, each tagged with
        its server, listed at once. A server whose listing fails is left out, with a
        warning naming it and why; read one with
        ``hub.clients[item.server].read_resource(item.resource.uri)``."""

        async def one(name: str, client: McpClient, _: float | None) -> Listing[Resource] | None:
            try:
                return await client.list_resources(timeout=timeout)
            except McpError as exc:
                _log.warning("server %r: its resources could not be listed: %s", name, exc)
                return None

        offering = {name: c for name, c in self.clients.items() if c.offers("resources")}
        listings = await self._each(offering, one)
        return self._tagged({name: got for name, got in listings.items() if got is not None})

    async def list_skills(self, *, timeout: float | None = None) -> list[ServerSkill]:
        """N4: the skills of every ready server that declares the skills extension,
        each tagged with its server, listed at once; no file is read. A server whose
        listing fails is left out, with a warning naming it and why; read a file
        with ``hub.clients[item.server].read_skill_file(item.skill, path)``."""

        async def one(name: str, client: McpClient, _: float | None) -> Listing[Skill] | None:
            try:
                return await client.list_skills(timeout=timeout)
            except McpError as exc:
                _log.warning("server %r: its skills could not be listed: %s", name, exc)
                return None

        offering = {name: c for name, c in self.clients.items() if c.offers("skills")}
        listings = await self._each(offering, one)
        return self._tagged_skills({n: got for n, got in listings.items() if got is not None})

    async def ready(self, timeout: float | None = None) -> dict[str, Availability]:
        async def one(_: str, client: McpClient, left: float | None) -> Availability:
            return await client.ready(left)

        return await self._each(self.clients, one, timeout)

    async def reconnect(
        self, server: str | None = None, *, timeout: float | None = None
    ) -> dict[str, Availability]:
        """L8: set up a new session now with the server named (every server without
        one), then wait for them as ``ready()`` does; ``InvalidValue`` for a name this
        hub does not have."""
        chosen = self._chosen(server)
        for client in chosen.values():
            await client._begin_reconnect()  # all at once, then wait for each

        async def one(_: str, client: McpClient, left: float | None) -> Availability:
            return await client.ready(left)

        return await self._each(chosen, one, timeout)

    @overload
    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook"] = "hook",
    ) -> ToolOutput: ...

    @overload
    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["return"],
    ) -> ToolOutput | InputRequired: ...

    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> ToolOutput | InputRequired:
        client = self.client_for(tool_id)
        if on_input == "return":
            return await client.call(
                tool_id,
                arguments,
                timeout=timeout,
                on_progress=on_progress,
                meta=meta,
                on_input="return",
            )
        return await client.call(
            tool_id, arguments, timeout=timeout, on_progress=on_progress, meta=meta
        )

    async def start_task(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> TaskHandle | ToolOutput | InputRequired:
        """Start a call on the server its tool id names; a ``TaskHandle`` when the
        server runs it as a task (T8), else its output, as ``McpClient.start_task``."""
        return await self.client_for(tool_id).start_task(
            tool_id,
            arguments,
            timeout=timeout,
            on_progress=on_progress,
            meta=meta,
            on_input=on_input,
        )

    async def resume_task(
        self,
        task: TaskHandle,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Follow a task to its end (T8) on the server its handle names."""
        return await self.client_for_task(task).resume_task(
            task, timeout=timeout, on_progress=on_progress
        )

    async def task_status(self, task: TaskHandle, *, timeout: float | None = None) -> TaskStatus:
        """Where a task stands (T8), asked of the server its handle names."""
        return await self.client_for_task(task).task_status(task, timeout=timeout)

    async def cancel_task(self, task: TaskHandle, *, timeout: float | None = None) -> None:
        """Cancel a task (T8) on the server its handle names."""
        await self.client_for_task(task).cancel_task(task, timeout=timeout)

    async def resume(
        self,
        continuation: Continuation,
        responses: Mapping[str, ElicitResult],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Finish a paused call (Q4) on the server it belongs to."""
        return await self.client_for_continuation(continuation).resume(
            continuation, responses, timeout=timeout, on_progress=on_progress
        )

    async def aclose(self) -> None:
        async def one(_: str, client: McpClient, __: float | None) -> None:
            await client.aclose()

        await self._each(self.clients, one)
