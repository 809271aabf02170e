"""mcpcore tools as a pydantic-ai toolset (extra ``pydantic-ai``: ``pydantic-ai-slim``).

::

    from pydantic_ai import Agent
    from mcpcore_anyio import McpHub
    from mcpcore_pydantic_ai import McpcoreToolset

    async with McpHub.from_file("mcp.json") as hub:
        await hub.ready(timeout=30)
        agent = Agent("openai:gpt-5", toolsets=[McpcoreToolset(hub)])

``McpcoreToolset(hub_or_client)`` offers the tools of every ready server,
read from the catalogue each time the agent asks: a client with
``auto_refresh=True`` re-lists when the server says its tools changed, and
the next step of the agent sees the new list. Names are the tool ids made
provider-safe (``server__tool``); each definition's schema is the tool's
input schema.

A call goes through the client (an ``mcpcore_threaded`` one runs on a worker
thread). The return value is the result's ``structuredContent`` when it has
one, otherwise its content: a string for one text block, ``BinaryContent`` for
an image, audio or file, a list when there are several.

A failed call is read by ``mcpcore_tooling.classify``; every message is safe to
show (server text escaped):

- ``retryable`` (the call was not run: arguments the client or the server
  refused, an unknown tool): ``ModelRetry``, so the model can fix the call;
- ``tool_error`` (the tool ran and reported an error): ``ModelRetry`` with the
  tool's text, as pydantic-ai's own MCP toolset does; ``tool_error="failed"``
  makes it ``ToolFailed`` (shown to the model, no request to try again);
- ``unavailable`` (a timeout, a transport failure, a server that is down):
  ``ToolFailed``, never ``ModelRetry``: the call may have run, and a second
  one must be the model's choice, not pydantic-ai's prompt.

``tool_error="raise"`` raises the mcpcore error instead, whatever its kind.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import anyio.to_thread
from pydantic_ai import BinaryContent, ModelRetry, RunContext, ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from mcpcore import McpError, ToolOutput
from mcpcore_tooling import PlainBlock, bind, classify, plain_blocks, provider_names

__all__ = ["McpcoreToolset"]

# The server checks arguments against its own schema; here they only need to be an object.
_ARGUMENTS = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)


class McpcoreToolset(AbstractToolset[Any]):
    """The tools of an ``McpHub`` or ``McpClient`` (either driver) as a pydantic-ai toolset."""

    def __init__(
        self,
        source: Any,
        *,
        id: str | None = None,
        max_retries: int = 1,
        tool_error: Literal["retry", "failed", "raise"] = "retry",
    ) -> None:
        if tool_error not in ("retry", "failed", "raise"):
            raise ValueError("tool_error must be 'retry', 'failed' or 'raise'")
        self._binding = bind(source)
        self._id = id
        self._max_retries = max_retries
        self._tool_error = tool_error

    @property
    def id(self) -> str | None:
        return self._id

    def __repr__(self) -> str:
        return f"McpcoreToolset({self._binding.source!r})"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        named = provider_names(self._binding.tools, separator=self._binding.separator)
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=tool.description or tool.name,
                    parameters_json_schema=dict(tool.parameters),
                    metadata={
                        "mcp_server": tool.server,
                        "mcp_tool_id": tool.id,
                        "mcp_tool_name": tool.name,
                        "timeout": self._binding.timeout_of(tool),
                        "read_only": tool.read_only,
                    },
                ),
                max_retries=self._max_retries,
                args_validator=_ARGUMENTS,
            )
            for name, tool in named.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        metadata = tool.tool_def.metadata or {}
        tool_id = metadata.get("mcp_tool_id")
        if not isinstance(tool_id, str):
            raise ValueError(f"{name!r} is not a tool of this toolset")
        binding = self._binding
        try:
            if binding.call_async is not None:
                output = await binding.call_async(tool_id, tool_args)
            else:
                call_sync = binding.call_sync
                assert call_sync is not None
                output = await anyio.to_thread.run_sync(call_sync, tool_id, tool_args)
        except McpError as exc:
            if self._tool_error == "raise":
                raise
            failure = classify(exc)
            if failure.kind == "retryable" or (
                failure.kind == "tool_error" and self._tool_error == "retry"
            ):
                raise ModelRetry(failure.message) from exc
            raise ToolFailed(failure.message) from exc
        return _value(output)


def _value(output: ToolOutput) -> Any:
    if output.structured is not None:
        return output.structured
    parts = [_part(block) for block in plain_blocks(output)]
    return parts[0] if len(parts) == 1 else parts


def _part(block: PlainBlock) -> str | BinaryContent:
    if block.kind == "text":
        return block.text or ""
    assert block.data_b64 is not None
    return BinaryContent(
        data=base64.b64decode(block.data_b64),
        media_type=block.mime_type or "application/octet-stream",
    )
