"""``mcpcore demo``: start the bundled demo server (``mcpcore_demo``) on a free
loopback port, connect, list its tools and call each one (``build`` as a task,
followed to its end, T7), list and read its resources, get a prompt, and print
what happened. Exits 1 when a call went wrong.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from mcpcore import BackendError, McpError, TaskHandle, ToolOutput

from ._common import EXIT_OK, EXIT_TOOL_ERROR, Cli, describe
from ._connect import ensure_ready
from ._tasks import shown_id
from ._term import one_line, show
from ._tools import tool_table

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

__all__ = ["cmd_demo"]


# --- demo ------------------------------------------------------------------------------

_DEMO_ARGUMENTS: Mapping[str, dict[str, Any]] = {
    "echo": {"text": "Hello from mcpcore!"},
    "add": {"a": 2, "b": 3},
    "structured": {"name": "Ada"},
    "fail": {"message": "this tool always fails (on purpose)"},
    "slow": {"steps": 3, "delay": 0.1},
    "log": {"level": "info", "data": "hello from the demo"},
    "build": {"delay": 0.5},
}
_EXPECTED_ERRORS = frozenset({"fail"})


def cmd_demo(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_demo import DemoServer, default_tools
    from mcpcore_threaded import McpClient

    style = cli.style
    problems = 0
    # build runs only as a task here, so that the demo shows one being followed (T7)
    server = DemoServer(tools=default_tools(build_task_support="required"), record=False)
    with server.serve_in_thread() as running:
        cli.out(f"demo server listening at {running.url}")
        with McpClient("demo", {"url": running.url}, startup_timeout=10.0, tasks=True) as client:
            ensure_ready(cli, client, 10.0)
            tools = client.tools
            cli.out(f"connected as server 'demo': {len(tools)} tools")
            cli.out()
            for line in tool_table(cli, tools):
                cli.out(line)
            for tool in tools:
                arguments = _DEMO_ARGUMENTS.get(tool.name, {})
                cli.out()
                cli.out(style.bold(f"> call {show(tool.id)} {json.dumps(arguments)}"))
                on_progress = _demo_progress(cli)
                try:
                    if tool.task_support == "required":
                        output = _demo_task(cli, client, tool.id, arguments)
                    else:
                        output = client.call(tool.id, arguments, on_progress=on_progress)
                except BackendError as exc:
                    expected = tool.name in _EXPECTED_ERRORS
                    label = "error (expected)" if expected else "unexpected error"
                    paint = style.yellow if expected else style.red
                    cli.out(f"  {paint(label)}: {show(exc.text, keep_newlines=False)}")
                    problems += 0 if expected else 1
                    continue
                except McpError as exc:
                    cli.out(f"  {style.red('failed')}: {describe(exc)}")
                    problems += 1
                    continue
                for line in show(output.text).splitlines() or [""]:
                    cli.out(f"  {line}")
                if output.structured is not None:
                    structured = show(
                        json.dumps(output.structured, ensure_ascii=False), keep_newlines=False
                    )
                    cli.out(f"  {style.dim('structured:')} {structured}")
                if tool.name in _EXPECTED_ERRORS:
                    cli.out(f"  {style.red('expected an error, got a result')}")
                    problems += 1
            problems += _demo_resources_and_prompts(cli, client)
    cli.out()
    if problems:
        cli.out(f"{problems} of {len(tools)} calls went wrong; the server is stopped")
        return EXIT_TOOL_ERROR
    cli.out(f"called {len(tools)} tools; client closed and server stopped")
    return EXIT_OK


def _demo_resources_and_prompts(cli: Cli, client: McpClient) -> int:
    """F10: list the demo's resources, read a text one, a blob and an expanded template,
    get a prompt; the number of steps that went wrong."""
    bold = cli.style.bold
    try:
        cli.out()
        cli.out(bold("> list resources and templates"))
        for resource in client.list_resources():
            mime = show(resource.mime_type or "-", keep_newlines=False)
            cli.out(f"  {show(resource.uri, keep_newlines=False)}  {mime}")
        [template] = client.list_resource_templates()
        cli.out(f"  {show(template.uri_template, keep_newlines=False)} (template)")
        cli.out()
        cli.out(bold("> read demo://readme"))
        for line in show(client.read_resource("demo://readme").text).splitlines():
            cli.out(f"  {line}".rstrip())
        cli.out()
        cli.out(bold("> read demo://logo.png"))
        [logo] = client.read_resource("demo://logo.png").contents
        cli.out(f"  [binary: {show(logo.mime_type or '-')}, {len(logo.data)} bytes]")  # type: ignore[union-attr]
        uri = template.expand({"name": "Ada"})
        cli.out()
        cli.out(bold(f"> read {show(uri)} (the template, expanded)"))
        cli.out(f"  {show(client.read_resource(uri).text, keep_newlines=False)}")
        cli.out()
        cli.out(bold("> list prompts"))
        for prompt in client.list_prompts():
            names = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
            cli.out(f"  {show(prompt.name, keep_newlines=False)}({show(names)})")
        arguments = {"text": "MCP connects models to tools and data."}
        cli.out()
        cli.out(bold(f"> get prompt summarize {json.dumps(arguments)}"))
        for message in client.get_prompt("summarize", arguments).messages:
            cli.out(f"  {show(message.role, keep_newlines=False)}:")
            for line in show(message.text).splitlines():
                cli.out(f"    {line}".rstrip())
    except (McpError, ValueError) as exc:
        cli.out(f"  {cli.style.red('failed')}: {describe(exc)}")
        return 1
    return 0


def _demo_task(cli: Cli, client: McpClient, tool_id: str, arguments: Any) -> ToolOutput:
    """T7, T8: start the call as a task, then follow it; each status the client sees."""
    started = client.start_task(tool_id, arguments)
    if not isinstance(started, TaskHandle):
        return cast(ToolOutput, started)
    cli.out(f"  {cli.style.dim('task')} {shown_id(started.task_id)} (the server runs the call)")

    def status(progress: float, total: float | None, message: str | None) -> None:
        cli.out(f"  {cli.style.dim('status')} {one_line(message or '')}")

    return cast(ToolOutput, client.resume_task(started, on_progress=status))


def _demo_progress(cli: Cli) -> Callable[[float, float | None, str | None], None]:
    def report(progress: float, total: float | None, message: str | None) -> None:
        shown = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        suffix = f" {one_line(message)}" if message else ""
        cli.out(f"  {cli.style.dim('progress')} {shown}{suffix}")

    return report
