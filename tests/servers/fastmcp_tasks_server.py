"""A fastmcp server with SEP-2663 tasks (``fastmcp-tasks``) for the task tests.

Run with the python of ``.peers/fastmcp-tasks-venv`` (made by
``scripts/install_peers.sh``: ``fastmcp-tasks`` 4.1.4 pins ``fastmcp-slim``
4.1.4, so it cannot share the main venv's fastmcp 4.2)::

    .peers/fastmcp-tasks-venv/bin/python fastmcp_tasks_server.py PORT [--events-file PATH]

Serves Streamable HTTP on ``http://127.0.0.1:PORT/mcp``.  fastmcp-tasks serves
tasks only at 2026-07-28 (its ``tasks/*`` methods are bound to the modern
protocol versions; a handshake-era client never gets a task).  Tools:

``slow_task(steps, delay)``   task-optional: counts to ``steps``, reporting
                              ``step i/n`` as progress (the task's
                              ``statusMessage``); returns ``"counted to N"``.
``required_task(text)``       task-required: returns ``"required: <text>"``;
                              without the extension the call is -32021.
``ask_task(action)``          task-required; asks for input (a form
                              elicitation ``{"confirmed": boolean}`` under key
                              ``confirm``) with the guard pattern, so the task
                              goes ``input_required``; returns
                              ``"<action>: accept confirmed=True"`` /
                              ``"<action>: decline"`` / ``"<action>: cancel"``.
``failing_task(reason)``      task-required; raises an MCPError, so the task is
                              ``failed`` with error ``{code: -32001, message: reason}``.
``long_task(seconds)``        task-required; sleeps ``seconds`` in small steps;
                              a cancel is recorded as the event ``cancelled long_task``.
``echo(text)``                a plain tool (never a task).

Every task advertises ``pollIntervalMs: 100`` (fastmcp's default is 5000).

Events (one line each in ``--events-file``): ``start <tool>``, ``done <tool>``,
``cancelled <tool>``, ``ask <tool>`` (input asked), ``answer <tool> <action>``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from datetime import timedelta
from pathlib import Path

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

EVENTS: Path | None = None
_events_lock = threading.Lock()


def record(line: str) -> None:
    if EVENTS is None:
        return
    with _events_lock, EVENTS.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


# fastmcp's default pollIntervalMs is 5000: too slow for tests.
POLL = timedelta(milliseconds=100)
OPTIONAL = TaskConfig(mode="optional", poll_interval=POLL)
REQUIRED = TaskConfig(mode="required", poll_interval=POLL)

server = FastMCP("mcpcore-fastmcp-tasks-peer")
# memory:// keeps the task queue in this process (docket's in-memory backend).
server.add_extension(TasksExtension(url="memory://"))


@server.tool
def echo(text: str) -> str:
    """Echo the text back (never a task)."""
    return text


@server.tool(task=OPTIONAL)
async def slow_task(steps: int = 3, delay: float = 0.2, ctx: Context | None = None) -> str:
    """Count to ``steps`` with a status message per step (task-optional)."""
    record("start slow_task")
    for step in range(1, steps + 1):
        await anyio.sleep(delay)
        if ctx is not None:
            await ctx.report_progress(step, steps, f"step {step}/{steps}")
    record("done slow_task")
    return f"counted to {steps}"


@server.tool(task=REQUIRED)
async def required_task(text: str) -> str:
    """Return the text; only runs as a task."""
    record("start required_task")
    record("done required_task")
    return f"required: {text}"


@server.tool(task=REQUIRED)
async def ask_task(action: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the client to confirm ``action`` (input_required) before completing."""
    responses = ctx.input_responses
    answer = responses.get("confirm") if responses else None
    if answer is None:
        record("ask ask_task")
        return mcp_types.InputRequiredResult(
            input_requests={
                "confirm": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=f"Confirm {action}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"confirmed": {"type": "boolean"}},
                            "required": ["confirmed"],
                        },
                    )
                )
            }
        )
    data = (
        answer.model_dump(mode="json", by_alias=True)
        if hasattr(answer, "model_dump")
        else dict(answer)
    )
    choice = data.get("action")
    record(f"answer ask_task {choice}")
    if choice == "accept":
        return f"{action}: accept confirmed={(data.get('content') or {}).get('confirmed')}"
    return f"{action}: {choice}"


@server.tool(task=REQUIRED)
async def failing_task(reason: str = "it broke") -> str:
    """Fail with ``reason``."""
    record("start failing_task")
    # An MCPError fails the task (status "failed", this code and message in its
    # error); any other exception becomes a completed task with isError: true.
    raise MCPError(code=-32001, message=reason)


@server.tool(task=REQUIRED)
async def long_task(seconds: float = 30.0) -> str:
    """Sleep ``seconds`` (in small steps); records a cancel."""
    record("start long_task")
    try:
        elapsed = 0.0
        while elapsed < seconds:
            await anyio.sleep(0.05)
            elapsed += 0.05
    except BaseException:  # docket cancels the running asyncio task
        record("cancelled long_task")
        raise
    record("done long_task")
    return f"slept {seconds}"


def main() -> None:
    global EVENTS
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--events-file")
    args = parser.parse_args()
    if args.events_file:
        EVENTS = Path(args.events_file)
    server.run(
        transport="http",
        host="127.0.0.1",
        port=args.port,
        path="/mcp",
        show_banner=False,
        log_level="warning",
    )


if __name__ == "__main__":
    sys.exit(main())
