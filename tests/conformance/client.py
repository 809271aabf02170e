"""The conformance-suite client: ``python tests/conformance/client.py URL``.

The official suite (``@modelcontextprotocol/conformance``) starts a mock
server per scenario and runs this with the scenario's name in
``MCP_CONFORMANCE_SCENARIO``. It drives the anyio driver as a host would:
connect, list, call the offered tools (with the arguments the scenario gives
in ``MCP_CONFORMANCE_CONTEXT`` when it gives any), close. Nothing in the
library depends on the scenario. Exit 0 once connected and every call was
made (a tool's own error is reported, as a host would); 1 if unavailable.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import anyio

from mcpcore import McpError
from mcpcore_anyio import McpClient

# What each scenario's tools expect; other tools are called with no arguments.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "add_numbers": {"a": 5, "b": 3},
    "valid_tool": {"region": "us-west1"},
}


def _planned_calls(tools: Any) -> list[tuple[str, dict[str, Any]]]:
    """The calls a host makes: the context's, else every tool with known or no arguments."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    by_name = {tool.name: tool for tool in tools}
    given = context.get("toolCalls") if isinstance(context, dict) else None
    if isinstance(given, list):
        return [
            (by_name[c["name"]].id, c.get("arguments") or {})
            for c in given
            if isinstance(c, dict) and c.get("name") in by_name
        ]
    calls = []
    for tool in tools:
        arguments = ARGUMENTS.get(tool.name, {})
        if tool.name == "json_schema_echo" and "json_schema_2020_12_tool" in by_name:
            # the schema exactly as this client received it (E6)
            arguments = {"schema": by_name["json_schema_2020_12_tool"].parameters}
        calls.append((tool.id, arguments))
    return calls


async def run(url: str, scenario: str) -> int:
    async with McpClient("conformance", {"url": url}, call_timeout=30.0) as client:
        availability = await client.ready(30)
        if not availability.ok:
            print(f"unavailable: {availability.reason}", file=sys.stderr)
            return 1
        tools = client.tools
        print(
            f"[{scenario}] ready with {len(tools)} tools, protocol {client.protocol_version}",
            file=sys.stderr,
        )
        for tool_id, arguments in _planned_calls(tools):
            try:
                output = await client.call(tool_id, arguments)
            except McpError as exc:
                print(f"[{scenario}] {tool_id}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            print(f"[{scenario}] {tool_id}: {output.text[:200]!r}", file=sys.stderr)
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: client.py URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return anyio.run(run, sys.argv[1], scenario)


if __name__ == "__main__":
    sys.exit(main())
