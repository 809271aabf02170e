"""mcpcore tools as OpenAI Agents SDK function tools (extra ``openai-agents``).

::

    from agents import Agent
    from mcpcore_anyio import McpHub
    from mcpcore_openai_agents import tools_from

    async with McpHub.from_file("mcp.json") as hub:
        await hub.ready(timeout=30)
        agent = Agent(name="helper", tools=tools_from(hub))

``tools_from(hub_or_client)`` gives one ``FunctionTool`` per tool of every ready
server (names made provider-safe: ``server__tool``). A client of either driver
works: an ``mcpcore_threaded`` one is called on a worker thread.

**Strict schemas.** The model's strict mode needs every property required and
no extra properties. Where the tool's schema allows it, the tool is strict: an
optional property becomes required but nullable, and a ``null`` the model sends
for it is dropped before the call, so the server sees the property left out.
Where it does not (open objects, ``$ref``, a root ``anyOf``, …) the tool is
left non-strict and the logger ``mcpcore.openai_agents`` says why at debug
level.

A result is the content as tool output (text, image, file); a tool that
reports an error or a call that times out gives the model a message saying
so (server text escaped); an unavailable server or a transport failure
raises, which the SDK turns into its failure message.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import anyio.to_thread
from agents import FunctionTool, ToolOutputFileContent, ToolOutputImage, ToolOutputText
from agents.strict_schema import ensure_strict_json_schema
from agents.tool_context import ToolContext

from mcpcore import BackendError, CallTimeout, Tool, ToolOutput, escape_text
from mcpcore_tooling import Binding, PlainBlock, bind, plain_blocks, provider_names

__all__ = ["strict_schema", "tools_from"]

_log = logging.getLogger("mcpcore.openai_agents")


def tools_from(source: Any, *, strict: bool = True) -> list[FunctionTool]:
    """One ``FunctionTool`` per tool of ``source`` (an ``McpHub`` or ``McpClient`` of
    either driver); ``strict=False`` never asks for strict schemas."""
    binding = bind(source)
    named = provider_names(binding.tools, separator=binding.separator)
    return [_function_tool(name, tool, binding, strict) for name, tool in named.items()]


def strict_schema(schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """A strict-mode version of an input schema → ``(schema, "")``, or ``(None, why)``
    when the schema cannot be made strict without changing what it accepts."""
    try:
        made = _nullable_optionals(copy.deepcopy(schema), path="input")
        return ensure_strict_json_schema(made), ""
    except _NotStrict as exc:
        return None, str(exc)
    except Exception as exc:  # the SDK's own check (UserError and the like)
        return None, f"the Agents SDK refused it: {exc}"


class _NotStrict(Exception):
    pass


def _nullable_optionals(schema: dict[str, Any], *, path: str) -> dict[str, Any]:
    for keyword in ("$ref", "patternProperties", "not", "if", "dependentSchemas"):
        if keyword in schema:
            raise _NotStrict(f"{path} uses {keyword!r}")
    if schema.get("type") == "object" or "properties" in schema:
        extra = schema.get("additionalProperties", False)
        if extra not in (False, None):
            raise _NotStrict(f"{path} allows properties it does not name")
        properties = schema.get("properties") or {}
        if not isinstance(properties, dict):
            raise _NotStrict(f"{path} has properties that are not an object")
        required = set(schema.get("required") or ())
        for key, sub in properties.items():
            if not isinstance(sub, dict):
                raise _NotStrict(f"{path}.{key} is not a schema object")
            sub = _nullable_optionals(sub, path=f"{path}.{key}")
            if not any(k in sub for k in ("type", "anyOf", "enum", "const")):
                raise _NotStrict(f"{path}.{key} accepts any value (it has no type)")
            if key not in required:
                # The server applies its own default when the property is left out.
                sub.pop("default", None)
                sub = {"anyOf": [sub, {"type": "null"}]}
            properties[key] = sub
        schema["properties"] = properties
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    items = schema.get("items")
    if isinstance(items, dict):
        schema["items"] = _nullable_optionals(items, path=f"{path}[]")
    for keyword in ("anyOf", "oneOf", "allOf"):
        options = schema.get(keyword)
        if isinstance(options, list):
            schema[keyword] = [
                _nullable_optionals(option, path=f"{path}.{keyword}")
                if isinstance(option, dict)
                else option
                for option in options
            ]
    return schema


def _drop_nulls(value: Any, schema: Any) -> Any:
    """Drop the nulls the model sent for properties the original schema did not require."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        required = set(schema.get("required") or ())
        return {
            key: _drop_nulls(item, properties.get(key))
            for key, item in value.items()
            if not (item is None and key not in required)
        }
    if isinstance(value, list):
        return [_drop_nulls(item, schema.get("items")) for item in value]
    return value


def _function_tool(name: str, tool: Tool, binding: Binding, strict: bool) -> FunctionTool:
    original = dict(tool.parameters)
    made: dict[str, Any] | None = None
    if strict:
        made, why = strict_schema(original)
        if made is None:
            _log.debug("tool %r is not strict: %s", name, why)

    async def invoke(context: ToolContext[Any], input_json: str) -> Any:
        try:
            arguments = json.loads(input_json) if input_json.strip() else {}
        except ValueError:
            return "the arguments were not valid JSON"
        if not isinstance(arguments, dict):
            return "the arguments must be a JSON object"
        if made is not None:
            arguments = _drop_nulls(arguments, original)
        try:
            if binding.call_async is not None:
                output = await binding.call_async(tool.id, arguments)
            else:
                call_sync = binding.call_sync
                assert call_sync is not None
                output = await anyio.to_thread.run_sync(call_sync, tool.id, arguments)
        except BackendError as exc:
            return f"the tool reported an error: {escape_text(exc.text)}"
        except CallTimeout as exc:
            return str(exc)
        return _output(output)

    return FunctionTool(
        name=name,
        description=tool.description or tool.name,
        params_json_schema=made if made is not None else original,
        on_invoke_tool=invoke,
        strict_json_schema=made is not None,
    )


def _output(output: ToolOutput) -> Any:
    parts = [_part(block) for block in plain_blocks(output)]
    return parts[0] if len(parts) == 1 else parts


def _part(block: PlainBlock) -> ToolOutputText | ToolOutputImage | ToolOutputFileContent:
    if block.kind == "text":
        return ToolOutputText(text=block.text or "")
    mime = block.mime_type or "application/octet-stream"
    if block.kind == "image":
        return ToolOutputImage(image_url=f"data:{mime};base64,{block.data_b64}")
    return ToolOutputFileContent(file_data=f"data:{mime};base64,{block.data_b64}")
