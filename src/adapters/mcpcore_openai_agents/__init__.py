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
optional property becomes required but nullable, wherever it is (in nested
objects, array items and ``anyOf`` / ``oneOf`` / ``allOf`` branches), and a
``null`` the model sends for it is dropped before the call, so the server sees
the property left out. A ``null`` for a property whose own schema accepts
``null`` is the model's answer, and is sent. Where the schema cannot be made
strict (open objects, ``$ref``, a root ``anyOf``, an object that names some
properties only in its ``anyOf`` / ``oneOf`` / ``allOf`` branches, …) the tool
is left non-strict, nothing is dropped, and the logger ``mcpcore.openai_agents``
says why at debug level.

A result is the content as tool output (text, image, file). A failed call is
read by ``mcpcore_tooling.classify`` and given to the model as text (server
text escaped), the way the SDK shows a tool's failure: a call the model can
fix (``retryable``) says what to fix; a tool that reports an error
(``tool_error``) gives its text; a timeout, a transport failure or a server
that is down (``unavailable``) says so, and that the call may have run.
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

from mcpcore import McpError, Tool, ToolOutput
from mcpcore_tooling import Binding, PlainBlock, bind, classify, plain_blocks, provider_names

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
        for keyword in ("anyOf", "oneOf", "allOf"):
            for option in schema.get(keyword) or ():
                named = option.get("properties") if isinstance(option, dict) else None
                if isinstance(named, dict) and set(named) - set(properties):
                    # closed here, the object would refuse the very properties the branch names
                    raise _NotStrict(f"{path} names properties in {keyword} only")
        required = _required(schema)
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
    rest = schema.get("additionalItems")
    if isinstance(rest, dict):
        schema["additionalItems"] = _nullable_optionals(rest, path=f"{path}[]")
    for keyword in ("prefixItems", "items"):  # tuples: 2020-12's prefixItems, older items
        elements = schema.get(keyword)
        if isinstance(elements, list):
            schema[keyword] = [
                _nullable_optionals(element, path=f"{path}[{index}]")
                if isinstance(element, dict)
                else element
                for index, element in enumerate(elements)
            ]
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


def _required(schema: dict[str, Any]) -> set[str]:
    """The names an object schema requires (the rewrite and the drop read it alike)."""
    return set(schema.get("required") or ())


def _drop_nulls(value: Any, schemas: list[dict[str, Any]]) -> Any:
    """``value`` without the nulls the strict rewrite let the model send.

    ``schemas`` are the original (server's) schemas that apply to ``value``. A
    ``null`` for a key is dropped when some applying object schema declares the
    key optional (so the rewrite made it nullable) and none of its declarations
    accepts ``null``: only the rewrite can have let it through. The walk follows
    every place the rewrite went: properties, ``anyOf`` / ``oneOf`` / ``allOf``
    branches, ``items``, ``prefixItems`` (and ``additionalProperties``, which a
    strict schema never has open). It follows the schema, not the value, so it is
    bounded by the schema's depth (which the SDK's strict check limits)."""
    applying = [branch for schema in schemas for branch in _branches(schema)]
    if not applying:
        return value
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            declared = [
                (schema, schema["properties"][key])
                for schema in applying
                if isinstance(schema.get("properties"), dict) and key in schema["properties"]
            ]
            if item is None and _rewrite_made_nullable(key, declared):
                continue
            inner = [sub for _, sub in declared if isinstance(sub, dict)]
            if not declared:
                inner = [
                    schema["additionalProperties"]
                    for schema in applying
                    if isinstance(schema.get("additionalProperties"), dict)
                ]
            kept[key] = _drop_nulls(item, inner)
        return kept
    if isinstance(value, list):
        return [_drop_nulls(item, _element_schemas(applying, i)) for i, item in enumerate(value)]
    return value


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """``schema`` and, in depth, the ``anyOf`` / ``oneOf`` / ``allOf`` branches under
    it: every schema that may apply to the same value."""
    found: list[dict[str, Any]] = []
    pending = [schema]
    while pending:
        current = pending.pop()
        found.append(current)
        for keyword in ("anyOf", "oneOf", "allOf"):
            options = current.get(keyword)
            if isinstance(options, list):
                pending.extend(option for option in options if isinstance(option, dict))
    return found


def _element_schemas(applying: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """The schemas that apply to an array's element at ``index``."""
    found: list[Any] = []
    for schema in applying:
        prefix, items = schema.get("prefixItems"), schema.get("items")
        if isinstance(prefix, list):  # 2020-12: prefixItems, then items for the rest
            found.append(prefix[index] if index < len(prefix) else items)
        elif isinstance(items, list):  # before 2020-12: items as a tuple, then additionalItems
            found.append(items[index] if index < len(items) else schema.get("additionalItems"))
        else:
            found.append(items)
    return [schema for schema in found if isinstance(schema, dict)]


def _rewrite_made_nullable(key: str, declared: list[tuple[dict[str, Any], Any]]) -> bool:
    """Whether a ``null`` for ``key`` can only have come from the strict rewrite."""
    optional = any(key not in _required(schema) for schema, _ in declared)
    return optional and not any(_accepts_null(sub) for _, sub in declared)


def _accepts_null(schema: Any) -> bool:
    """Whether ``schema`` (as the server wrote it) accepts ``null``; when it cannot
    tell (a ``$ref``, a keyword it does not read) it says yes, so the null is sent
    and the server decides."""
    if not isinstance(schema, dict):
        return schema is not False
    if "const" in schema and schema["const"] is not None:
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        return False
    kinds = schema.get("type")
    if isinstance(kinds, str) and kinds != "null":
        return False
    if isinstance(kinds, list) and "null" not in kinds:
        return False
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and not any(_accepts_null(o) for o in options):
            return False
    all_of = schema.get("allOf")
    return not (isinstance(all_of, list) and not all(_accepts_null(o) for o in all_of))


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
            arguments = _drop_nulls(arguments, [original])
        try:
            if binding.call_async is not None:
                output = await binding.call_async(tool.id, arguments)
            else:
                call_sync = binding.call_sync
                assert call_sync is not None
                output = await anyio.to_thread.run_sync(call_sync, tool.id, arguments)
        except McpError as exc:
            failure = classify(exc)
            if failure.kind == "tool_error":
                return f"the tool reported an error: {failure.message}"
            return failure.message
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
