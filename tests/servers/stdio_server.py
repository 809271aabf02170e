"""A local (stdio) MCP server on the official SDK, for the S1–S3 tests.

Tools: ``echo``; ``env`` (the variables the child sees, by name); ``slow``;
``confirm(action)``, which asks the person ``{"confirmed": boolean}`` first
(``elicitation/create`` over stdio; an ``input_required`` round at 2026-07-28)
and returns ``"<action>: accept confirmed=True"``, ``"<action>: decline"``, ...
It writes a line to stderr at start, so tests can see stderr reach logging.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel

app = MCPServer("stdio-test")


@app.tool(structured_output=False)
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool(structured_output=False)
def env(name: str) -> str:
    """The value of one environment variable in the child, or <unset>."""
    return os.environ.get(name, "<unset>")


@app.tool(structured_output=False)
def pid() -> str:
    """The child's process id."""
    return str(os.getpid())


@app.tool(structured_output=False)
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return "done"


class Confirm(BaseModel):
    confirmed: bool


def ask(action: str) -> Elicit[Confirm]:
    return Elicit(f"Confirm {action}?", Confirm)


@app.tool(structured_output=False)
def confirm(action: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask)]) -> str:
    """Ask the person to confirm ``action`` before answering."""
    if answer.action == "accept":
        return f"{action}: accept confirmed={answer.data.confirmed}"  # type: ignore[union-attr]
    return f"{action}: {answer.action}"


if __name__ == "__main__":
    print("stdio-test server starting \x1b[31m", file=sys.stderr, flush=True)
    app.run("stdio")
