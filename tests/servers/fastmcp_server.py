"""A fastmcp server for the interop tests: ``python fastmcp_server.py PORT``.

Serves Streamable HTTP on ``http://127.0.0.1:PORT/mcp``. Every list is paged
two items at a time (fastmcp's ``list_page_size``), so a client must follow
the cursors to see everything. Whatever revisions fastmcp's MCP SDK speaks,
it speaks.

Tools: ``echo(text)``, ``add(a, b)`` (structured), ``slow(steps, delay)``
(progress), ``link(name)`` (a ``resource_link`` to ``fast://items/<name>``),
``shout(text)`` (logs ``text`` at info first).

Resources (F2-F8): ``fast://greeting`` (text), ``fast://blob`` (16 bytes,
0-15), ``fast://notes/1`` .. ``fast://notes/3`` (text), the template
``fast://items/{item}``; a prompt ``review(code, language="python")`` whose
second message embeds ``fast://greeting``; completion of ``review``'s
``language`` and of the template's ``item``; instructions.
``change_lists()`` announces that the resource and prompt lists changed, on
the call's own stream (fastmcp's ``ctx.send_notification``, the way its own
visibility rules announce changes, in both eras). fastmcp 4.2 has no resource
subscriptions: it declares no ``resources.subscribe``.

Also:
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
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.prompts import Message
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    InputRequiredResult,
)

LANGUAGES = ["python", "rust", "go"]
ITEMS = ["apple", "apricot", "banana"]

server = FastMCP(
    "mcpcore-fastmcp-peer", instructions="mcpcore test peer (fastmcp)", list_page_size=2
)

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


@server.tool
def link(name: str) -> list[mcp_types.ContentBlock]:
    """A resource_link to the item ``name``."""
    return [
        mcp_types.TextContent(type="text", text=f"the item {name}"),
        mcp_types.ResourceLink(
            type="resource_link", uri=f"fast://items/{name}", name=f"item {name}", mimeType="text/plain"
        ),
    ]


@server.tool
async def shout(text: str, ctx: Context) -> str:
    """Log ``text`` at info, then answer."""
    await ctx.info(text)
    return f"shouted {text}"


@server.resource("fast://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A short text."""
    return "hello from the fastmcp peer"


@server.resource("fast://blob", name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    """Sixteen bytes, 0 to 15."""
    return bytes(range(16))


def _note(number: int) -> None:
    def note() -> str:
        return f"note {number}"

    server.resource(f"fast://notes/{number}", name=f"note{number}", mime_type="text/plain")(note)


for _number in (1, 2, 3):
    _note(_number)


@server.resource("fast://items/{item}", name="item", mime_type="text/plain")
def item(item: str) -> str:
    """One item, by name."""
    return f"item {item}"


@server.prompt
def review(code: str, language: str = "python") -> list[Message]:
    """Ask for a review of ``code``."""
    embedded = mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.TextResourceContents(
            uri="fast://greeting", mimeType="text/plain", text="hello from the fastmcp peer"
        ),
    )
    return [Message(f"Please review this {language} code:\n{code}"), Message(embedded)]


@server.completion
def complete(
    ref: mcp_types.PromptReference | mcp_types.ResourceTemplateReference,
    argument: mcp_types.CompletionArgument,
    context: mcp_types.CompletionContext | None,
) -> list[str]:
    """Languages for review's ``language``, items for the template's ``item``."""
    pool = {"language": LANGUAGES, "item": ITEMS}
    return [v for v in pool.get(argument.name, []) if v.startswith(argument.value)]


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


@server.tool
async def change_lists(ctx: Context) -> str:
    """Announce that the resource and prompt lists changed."""
    await ctx.send_notification(mcp_types.ResourceListChangedNotification())
    await ctx.send_notification(mcp_types.PromptListChangedNotification())
    return "changed"


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), path="/mcp", show_banner=False, log_level="warning")
