"""A fastmcp server for the interop tests: ``python fastmcp_server.py PORT``.

Serves Streamable HTTP on ``http://127.0.0.1:PORT/mcp`` with three tools:
``echo(text)``, ``add(a, b)`` (structured) and ``slow(steps, delay)``
(progress). Whatever revisions fastmcp's MCP SDK speaks, it speaks.
"""

from __future__ import annotations

import sys

import anyio
from fastmcp import Context, FastMCP

server = FastMCP("mcpcore-fastmcp-peer")


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    return {"sum": a + b}


@server.tool
async def slow(steps: int, delay: float, ctx: Context) -> str:
    """Count to ``steps``, reporting progress."""
    for step in range(1, steps + 1):
        await anyio.sleep(delay)
        await ctx.report_progress(step, steps)
    return f"completed {steps} steps"


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp", show_banner=False, log_level="warning")
