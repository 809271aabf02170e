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

LangChain keeps some keyword names for itself (``config``, ``run_manager``,
``callbacks``, ``self``): an argument of that name would never reach the
tool. Such a parameter is offered under a name with ``_`` added (``config_``,
or more underscores while that is taken), and sent to the server under its
own name.

Built from an ``mcpcore_anyio`` hub or client, a tool is called with
``ainvoke``; from an ``mcpcore_threaded`` one, with ``invoke`` (and with
``ainvoke``, which LangChain runs on a worker thread).

A result is ``content_and_artifact``: the content blocks as LangChain content
(text, image, audio, file) and the whole ``ToolOutput`` as the artifact (its
``structured`` content included). A failed call raises ``ToolException``, the
mcpcore error as its cause, whichever of ``mcpcore_tooling.classify``'s kinds
it is: LangChain does not retry a tool, and ``handle_tool_error=True`` makes
it hand the message to the model instead. The message is safe to show (server
text escaped): the arguments' fault for a call the model can fix
(``retryable``), the tool's own text (``tool_error``), and for a call that
timed out or broke on the way (``unavailable``) a note that it may have run.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import content as lc_content
from langchain_core.tools import StructuredTool, ToolException

from mcpcore import McpError, Tool, ToolOutput
from mcpcore_tooling import Binding, PlainBlock, bind, classify, plain_blocks, provider_names

__all__ = ["tools_from"]


def tools_from(
    source: Any, *, handle_tool_error: bool | str | None = False
) -> list[StructuredTool]:
    """One ``StructuredTool`` per tool of ``source`` (an ``McpHub`` or ``McpClient`` of
    either driver), in listing order; ``ValueError`` when two tools would get one
    provider-safe name (the first is kept, and a warning names both)."""
    binding = bind(source)
    return [
        _structured_tool(name, tool, binding, handle_tool_error)
        for name, tool in provider_names(binding.tools, separator=binding.separator).items()
    ]


def _reserved_names() -> frozenset[str]:
    """The keyword names LangChain fills in itself when it runs a ``StructuredTool``:
    the named parameters of its ``_run`` / ``_arun`` (``self``, ``config``,
    ``run_manager``), and ``callbacks``, which it passes to a function that takes
    it and hides from its callbacks' view of the input."""
    names = {"self", "config", "run_manager", "callbacks"}
    for method in (StructuredTool._run, StructuredTool._arun):
        for parameter in inspect.signature(method).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                names.add(parameter.name)
    return frozenset(names)


_RESERVED = _reserved_names()


def _aliases(parameters: Mapping[str, Any]) -> dict[str, str]:
    """Name offered to LangChain → the parameter's own name, for each top-level
    parameter LangChain would take for itself (``config`` → ``config_``)."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    taken = set(properties)
    aliases: dict[str, str] = {}
    for key in properties:
        if key in _RESERVED:
            alias = f"{key}_"
            while alias in taken or alias in _RESERVED:
                alias += "_"
            taken.add(alias)
            aliases[alias] = key
    return aliases


def _offered_schema(parameters: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """The input schema with each reserved parameter under its alias."""
    schema = dict(parameters)
    if not aliases:
        return schema
    offered = {own: alias for alias, own in aliases.items()}
    schema["properties"] = {offered.get(k, k): v for k, v in parameters["properties"].items()}
    required = parameters.get("required")
    if isinstance(required, list):
        schema["required"] = [offered.get(k, k) if isinstance(k, str) else k for k in required]
    return schema


def _structured_tool(
    name: str, tool: Tool, binding: Binding, handle_tool_error: bool | str | None
) -> StructuredTool:
    tool_id = tool.id
    aliases = _aliases(tool.parameters)

    def own_names(arguments: dict[str, Any]) -> dict[str, Any]:
        return {aliases.get(key, key): value for key, value in arguments.items()}

    def run(**arguments: Any) -> tuple[list[Any], ToolOutput]:
        if binding.call_sync is None:
            raise TypeError(
                f"{name!r} was built from an async mcpcore_anyio client: call it with "
                "ainvoke, or build the tools from an mcpcore_threaded client for invoke"
            )
        try:
            output = binding.call_sync(tool_id, own_names(arguments))
        except McpError as exc:
            raise ToolException(classify(exc).message) from exc
        return _content(output), output

    async def arun(**arguments: Any) -> tuple[list[Any], ToolOutput]:
        assert binding.call_async is not None
        try:
            output = await binding.call_async(tool_id, own_names(arguments))
        except McpError as exc:
            raise ToolException(classify(exc).message) from exc
        return _content(output), output

    return StructuredTool(
        name=name,
        description=tool.description or tool.name,
        args_schema=_offered_schema(tool.parameters, aliases),
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
