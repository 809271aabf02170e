"""mcpcore tools as LangChain tools (extra ``langchain``: needs ``langchain-core`` only).

::

    from mcpcore_threaded import McpHub
    from mcpcore_langchain import tools_from

    with McpHub.from_file("mcp.json") as hub:
        hub.ready(timeout=30)
        tools = tools_from(hub)            # list[StructuredTool]
        tools[0].invoke({"text": "hi"})

``tools_from(hub_or_client)`` gives one ``StructuredTool`` per tool of every
ready server, read from the catalogue as it is now (call it again after a
re-list). Names are the tool ids made provider-safe (``server__tool``, at
most 64 characters); ``args_schema`` is the tool's input schema as JSON
Schema; ``metadata`` holds the server, the tool id and original name, its
time limit and whether it is read-only.

Built from an ``mcpcore_anyio`` hub or client, a tool is called with
``ainvoke``; from an ``mcpcore_threaded`` one, with ``invoke`` (and with
``ainvoke``, which LangChain runs on a worker thread).

A result is ``content_and_artifact``: the content blocks as LangChain content
(text, image, audio, file) and the whole ``ToolOutput`` as the artifact (its
``structured`` content included). A tool that reports an error, a call that
times out, an unavailable server: each raises ``ToolException`` with a
message safe to show (server text escaped), the mcpcore error as its cause;
``handle_tool_error=True`` makes LangChain hand the message to the model
instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import content as lc_content
from langchain_core.tools import StructuredTool, ToolException

from mcpcore import BackendError, McpError, Tool, ToolOutput, escape_text
from mcpcore_tooling import Binding, PlainBlock, bind, plain_blocks, provider_names

__all__ = ["tools_from"]


def tools_from(
    source: Any, *, handle_tool_error: bool | str | None = False
) -> list[StructuredTool]:
    """One ``StructuredTool`` per tool of ``source`` (an ``McpHub`` or ``McpClient`` of
    either driver), in listing order; ``ValueError`` when two tools would get one
    provider-safe name."""
    binding = bind(source)
    return [
        _structured_tool(name, tool, binding, handle_tool_error)
        for name, tool in provider_names(binding.tools, separator=binding.separator).items()
    ]


def _structured_tool(
    name: str, tool: Tool, binding: Binding, handle_tool_error: bool | str | None
) -> StructuredTool:
    tool_id = tool.id

    def run(**arguments: Any) -> tuple[list[Any], ToolOutput]:
        if binding.call_sync is None:
            raise TypeError(
                f"{name!r} was built from an async mcpcore_anyio client: call it with "
                "ainvoke, or build the tools from an mcpcore_threaded client for invoke"
            )
        try:
            output = binding.call_sync(tool_id, arguments)
        except McpError as exc:
            raise _tool_exception(exc) from exc
        return _content(output), output

    async def arun(**arguments: Any) -> tuple[list[Any], ToolOutput]:
        assert binding.call_async is not None
        try:
            output = await binding.call_async(tool_id, arguments)
        except McpError as exc:
            raise _tool_exception(exc) from exc
        return _content(output), output

    return StructuredTool(
        name=name,
        description=tool.description or tool.name,
        args_schema=dict(tool.parameters),
        func=run,
        coroutine=arun if binding.call_async is not None else None,
        response_format="content_and_artifact",
        handle_tool_error=handle_tool_error,
        metadata={
            "mcp_server": tool.server,
            "mcp_tool_id": tool.id,
            "mcp_tool_name": tool.name,
            "timeout": binding.timeout_of(tool),
            "read_only": tool.read_only,
        },
    )


def _tool_exception(exc: McpError) -> ToolException:
    if isinstance(exc, BackendError):
        return ToolException(escape_text(exc.text) or str(exc))
    return ToolException(str(exc))  # the core's own words: holds no raw server text


def _content(output: ToolOutput) -> list[Any]:
    return [_block(block) for block in plain_blocks(output)]


def _block(block: PlainBlock) -> Mapping[str, Any]:
    if block.kind == "text":
        return lc_content.create_text_block(block.text or "")
    if block.mime_type is None:  # LangChain needs a MIME type for inline data
        return lc_content.create_text_block(f"[{block.kind} content without a MIME type]")
    if block.kind == "image":
        return lc_content.create_image_block(base64=block.data_b64, mime_type=block.mime_type)
    if block.kind == "audio":
        return lc_content.create_audio_block(base64=block.data_b64, mime_type=block.mime_type)
    return lc_content.create_file_block(base64=block.data_b64, mime_type=block.mime_type)
