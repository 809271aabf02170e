"""What the framework adapters share, with no framework imported.

``mcpcore_langchain``, ``mcpcore_pydantic_ai`` and ``mcpcore_openai_agents``
each turn a hub or a client into their framework's tools. The parts that do
not depend on the framework live here, once:

- ``provider_names``: tool ids made safe for a model provider's function
  names (``server__tool``, at most 64 characters of ``a-z A-Z 0-9 _ -``);
  a tool whose name would repeat an earlier one's is dropped with a warning,
  as the catalogue drops a repeated id, and every other tool is kept;
- ``bind``: a hub or client of either driver → its tools and one way to call
  them (async or blocking), with the tool's time limit;
- ``plain_blocks``: a result's content blocks as plain data a framework can
  wrap (text, image, audio, file), server text untouched but bounded;
- ``classify``: a failed call as ``retryable``, ``tool_error`` or
  ``unavailable``, with the message a model should see (``_failures.py``),
  which each adapter maps to its framework's own way of saying so.

Nothing here decides anything about MCP: calls go through the client, which
applies every rule (deadlines, cancellation, rendering, errors).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mcpcore import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    OtherBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
    Tool,
    ToolOutput,
)

from ._failures import INVALID_PARAMS, Failure, FailureKind, classify

__all__ = [
    "INVALID_PARAMS",
    "MAX_NAME",
    "Binding",
    "Failure",
    "FailureKind",
    "PlainBlock",
    "bind",
    "classify",
    "plain_blocks",
    "provider_name",
    "provider_names",
]

_log = logging.getLogger("mcpcore.tooling")

MAX_NAME = 64  # OpenAI, Anthropic and Gemini all accept ^[a-zA-Z0-9_-]{1,64}$
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASHED = 8  # hex digits of the id's hash kept when a name must be shortened


def provider_name(tool: Tool, *, separator: str = "/") -> str:
    """``tool.id`` as a provider-safe function name: the separator becomes ``__``,
    anything else outside ``a-z A-Z 0-9 _ -`` becomes ``_``; a name over 64
    characters keeps its head and ends in ``_`` and a short hash of the whole id,
    so it stays the same from run to run."""
    server, sep, rest = tool.id.partition(separator)
    joined = f"{server}__{rest}" if sep else tool.id
    name = _UNSAFE.sub("_", joined)
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.id.encode("utf-8")).hexdigest()[:_HASHED]
    return f"{name[: MAX_NAME - _HASHED - 1]}_{digest}"


def provider_names(tools: Iterable[Tool], *, separator: str = "/") -> dict[str, Tool]:
    """Provider-safe name → tool, in listing order. A tool whose name an earlier tool
    already has (``get.item`` and ``get_item``: a model could not tell them apart) is
    left out, the first one wins, and a warning on ``mcpcore.tooling`` names both ids
    (once per pair, however often the tools are read again)."""
    named: dict[str, Tool] = {}
    for tool in tools:
        name = provider_name(tool, separator=separator)
        taken = named.get(name)
        if taken is None:
            named[name] = tool
            continue
        pair = (taken.id, tool.id)
        if pair not in _warned:
            if len(_warned) >= _MAX_WARNED:  # bounded: a long-lived host re-lists often
                _warned.clear()
            _warned.add(pair)
            # ids are checked segments (T1): a-z 0-9 _ - . and the separator only
            _log.warning(
                "left out tool %r: it would be named %r, as tool %r is (the first one "
                "wins); rename one of them on the server, or leave one out with exclude=",
                tool.id,
                name,
                taken.id,
            )
    return named


_MAX_WARNED = 1024
_warned: set[tuple[str, str]] = set()  # collisions already warned about


@dataclass(frozen=True, slots=True)
class Binding:
    """A hub or client, seen the way an adapter needs it.

    ``tools`` is the catalogue as it is now (read it again to follow a
    re-list); ``call_async`` / ``call_sync`` call a tool by id, one of them
    ``None`` when the source's driver is the other kind; ``timeout_of`` is a
    tool's time limit in seconds; ``separator`` joins server and tool.
    """

    source: Any
    kind: Literal["async", "blocking"]
    separator: str
    call_async: Callable[[str, Mapping[str, Any]], Awaitable[ToolOutput]] | None
    call_sync: Callable[[str, Mapping[str, Any]], ToolOutput] | None
    timeout_of: Callable[[Tool], float]

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self.source.tools)


def bind(source: Any) -> Binding:
    """A ``McpHub`` or ``McpClient`` of either driver → a ``Binding``; ``TypeError``
    for anything else."""
    import mcpcore_anyio
    import mcpcore_threaded

    if isinstance(source, mcpcore_anyio.McpHub | mcpcore_threaded.McpHub):
        clients = dict(source.clients)
        separator = source.separator

        def timeout_of(tool: Tool) -> float:
            client = clients.get(tool.server)
            return client.call_timeout if client is not None else 300.0

    elif isinstance(source, mcpcore_anyio.McpClient | mcpcore_threaded.McpClient):
        separator = source.separator
        client = source

        def timeout_of(tool: Tool) -> float:
            return client.call_timeout

    else:
        raise TypeError(
            "expected an McpHub or McpClient from mcpcore_anyio or mcpcore_threaded, "
            f"got {type(source).__name__}"
        )
    if isinstance(source, mcpcore_anyio.McpHub | mcpcore_anyio.McpClient):

        async def call_async(tool_id: str, arguments: Mapping[str, Any]) -> ToolOutput:
            return await source.call(tool_id, arguments)

        return Binding(source, "async", separator, call_async, None, timeout_of)

    def call_sync(tool_id: str, arguments: Mapping[str, Any]) -> ToolOutput:
        return source.call(tool_id, arguments)  # type: ignore[no-any-return]

    return Binding(source, "blocking", separator, None, call_sync, timeout_of)


@dataclass(frozen=True, slots=True)
class PlainBlock:
    """One content block as plain data: ``kind`` is ``text``, ``image``, ``audio``
    or ``file``; ``text`` for text, ``data_b64`` and ``mime_type`` otherwise;
    ``uri`` for an embedded resource or a link (shown as text)."""

    kind: Literal["text", "image", "audio", "file"]
    text: str | None = None
    data_b64: str | None = None
    mime_type: str | None = None
    uri: str | None = None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _plain(block: ContentBlock) -> PlainBlock:
    if isinstance(block, TextBlock):
        return PlainBlock("text", text=block.text)
    if isinstance(block, ImageBlock):
        return PlainBlock("image", data_b64=_b64(block.data), mime_type=block.mime_type)
    if isinstance(block, AudioBlock):
        return PlainBlock("audio", data_b64=_b64(block.data), mime_type=block.mime_type)
    if isinstance(block, ResourceBlock):
        if block.data is not None:
            return PlainBlock(
                "file", data_b64=_b64(block.data), mime_type=block.mime_type, uri=block.uri
            )
        return PlainBlock("text", text=block.text or "", uri=block.uri)
    if isinstance(block, ResourceLinkBlock):
        label = f"{block.name} " if block.name else ""
        return PlainBlock("text", text=f"resource link: {label}<{block.uri}>", uri=block.uri)
    assert isinstance(block, OtherBlock)
    return PlainBlock("text", text=f"[content not shown: {block.reason}]")


def plain_blocks(output: ToolOutput) -> list[PlainBlock]:
    """The result's content blocks as plain data, in order; a result with no
    blocks gives its rendered text as one text block."""
    blocks = [_plain(block) for block in output.content]
    return blocks or [PlainBlock("text", text=output.text)]
