"""A fastmcp server for the interop tests: ``python fastmcp_server.py PORT``.

Serves Streamable HTTP on ``http://127.0.0.1:PORT/mcp``. Whatever revisions
fastmcp's MCP SDK speaks, it speaks. Tools:

``echo(text)``, ``add(a, b)`` (structured), ``slow(steps, delay)`` (progress);
``pick(repo)``: asks the person which branch (a form: ``branch``, an enum, and
``force``, a boolean) and shows the answer. At 2026-07-28 it is a guard tool
(fastmcp's way there: the tool returns an ``InputRequiredResult`` and reads
``ctx.input_responses`` on the retry); in the handshake era it is
``ctx.elicit`` mid-call. Returns ``"<repo>: accept branch=<b> force=<f>"``,
``"<repo>: decline"`` or ``"<repo>: cancel"``.
``signin(service)`` (2026-07-28): asks the person to visit a URL. The server
decides from its own ``requestState`` that the visit happened: the retry that
carries the state and an ``accept`` returns ``"<service>: signed in (<state>)"``;
decline or cancel say so.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

import anyio
from fastmcp import Context, FastMCP
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    InputRequiredResult,
)

server = FastMCP("mcpcore-fastmcp-peer")

BRANCH_FORM = {
    "type": "object",
    "properties": {
        "branch": {"type": "string", "enum": ["main", "dev"], "default": "main"},
        "force": {"type": "boolean", "default": False},
    },
    "required": ["branch"],
}


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


@dataclass
class Branch:
    branch: Literal["main", "dev"] = "main"
    force: bool = False


def _answer(repo: str, action: str, content: dict[str, object] | None) -> str:
    if action != "accept":
        return f"{repo}: {action}"
    content = content or {}
    return f"{repo}: accept branch={content.get('branch')} force={content.get('force')}"


@server.tool
async def pick(repo: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the person which branch of ``repo`` to use."""
    message = f"Which branch of {repo}?"
    if not ctx._is_modern_protocol():
        picked = await ctx.elicit(message, response_type=Branch)
        data = getattr(picked, "data", None)
        content = vars(data) if data is not None else None
        return _answer(repo, picked.action, content)
    responses = ctx.input_responses
    if not responses or "branch" not in responses:
        return InputRequiredResult(
            input_requests={
                "branch": ElicitRequest(
                    params=ElicitRequestFormParams(message=message, requested_schema=BRANCH_FORM)
                )
            }
        )
    answer = responses["branch"]
    return _answer(repo, getattr(answer, "action", "?"), getattr(answer, "content", None))


@server.tool
async def signin(service: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the person to sign in to ``service`` at a URL (2026-07-28)."""
    state = ctx.request_state
    responses = ctx.input_responses
    if state is None or not responses or "visit" not in responses:
        return InputRequiredResult(
            input_requests={
                "visit": ElicitRequest(
                    params=ElicitRequestURLParams(
                        message=f"Sign in to {service}",
                        url=f"https://auth.example.test/{service}?code=hush",
                    )
                )
            },
            request_state=f"pending-{service}",
        )
    action = getattr(responses["visit"], "action", "?")
    if action != "accept":
        return f"{service}: {action}"
    return f"{service}: signed in ({state})"


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp", show_banner=False, log_level="warning")
