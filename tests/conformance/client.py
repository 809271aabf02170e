"""The conformance-suite client: ``python tests/conformance/client.py URL``.

The official suite (``@modelcontextprotocol/conformance``) starts a mock
server per scenario and runs this with the scenario's name in
``MCP_CONFORMANCE_SCENARIO``. It drives the anyio driver as a user would:
connect, list, call what the scenario offers, close. Exit 0 on success.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio

from mcpcore import McpError
from mcpcore_anyio import McpClient

# What each scenario's tools expect; other tools are called with no arguments.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "add_numbers": {"a": 2, "b": 3},
}


async def run(url: str, scenario: str) -> int:
    async with McpClient("conformance", {"url": url}, call_timeout=30.0) as client:
        availability = await client.ready(30)
        if not availability.ok:
            print(f"unavailable: {availability.reason}", file=sys.stderr)
            return 1
        tools = client.tools
        print(f"[{scenario}] ready with {len(tools)} tools", file=sys.stderr)
        for tool in tools:
            try:
                output = await client.call(tool.id, ARGUMENTS.get(tool.name, {}))
            except McpError as exc:
                print(f"[{scenario}] {tool.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
            print(f"[{scenario}] {tool.name}: {output.text[:200]!r}", file=sys.stderr)
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
