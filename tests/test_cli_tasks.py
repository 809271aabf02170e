"""``mcpcore call`` following a task, Ctrl-C leaving it running, and ``mcpcore
task ID [--cancel]`` (T7, T8), run as a user runs them: as subprocesses against
the demo server, whose task tools are task-required (2025-11-25 tasks)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpcore_demo import DemoServer, DemoTool, ToolContext, default_tools
from test_cli import RUN_TIMEOUT, _env, run, run_with_pty, write_config

pytestmark = pytest.mark.realpeer


async def _noisy(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """A task whose status message and result carry terminal escapes."""
    await ctx.progress(1, 2, "\x1b[2Jcleared\x1b[31m red")
    await anyio.sleep(0.3)
    return {"content": [{"type": "text", "text": "done \x1b]0;title\x07"}]}


async def _broken(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    await ctx.progress(1, 1, "giving up")
    return {"content": [{"type": "text", "text": "the build broke"}], "isError": True}


def _required(name: str, handler: Any) -> DemoTool:
    return DemoTool(
        {"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
        handler,
    )


@pytest.fixture(scope="module")
def tasks_demo() -> Iterator[tuple[DemoServer, str]]:
    tools = [
        *default_tools(build_task_support="required"),
        _required("noisy", _noisy),
        _required("broken", _broken),
    ]
    server = DemoServer(tools=tools, task_poll_interval_ms=50)
    with server.serve_in_thread() as running:
        yield server, running.url


def _task_id(text: str) -> str:
    match = re.search(r"task ([0-9a-f]{32})", text)
    assert match, text
    return match.group(1)


def test_T7_call_follows_a_task_and_shows_its_status(tasks_demo: tuple[DemoServer, str]) -> None:
    server, url = tasks_demo
    result = run("call", url, "build", "delay=0.1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "build: 4 steps done in 0.4 s\n"
    task_id = _task_id(result.stderr)
    assert server.tasks[task_id].status == "completed"
    lines = result.stderr.splitlines()
    assert f"mcpcore: task {task_id}: done" in lines
    assert all(line.startswith(f"mcpcore: task {task_id}: ") for line in lines), lines


def test_T7_the_status_is_escaped_and_a_failed_task_exits_1(
    tasks_demo: tuple[DemoServer, str],
) -> None:
    _, url = tasks_demo
    noisy = run("call", url, "noisy")
    assert noisy.returncode == 0, noisy.stderr
    assert "\x1b" not in noisy.stdout + noisy.stderr and "\x07" not in noisy.stdout
    assert ": \\x1b[2Jcleared\\x1b[31m red" in noisy.stderr
    assert noisy.stdout.startswith("done \\x1b]0;title")
    broken = run("call", url, "broken", "--json")
    assert broken.returncode == 1, broken.stderr
    assert json.loads(broken.stdout)["is_error"] is True
    assert "the build broke" in broken.stdout


def test_T7_at_a_terminal_the_progress_line_shows_the_task(
    tasks_demo: tuple[DemoServer, str],
) -> None:
    _, url = tasks_demo
    status, terminal, out = run_with_pty("call", url, "build", "delay=0.35", on="stderr")
    assert status == 0, terminal
    assert out == "build: 4 steps done in 1.4 s\n"
    task_id = _task_id(terminal)
    assert f"server/build (task {task_id})" in terminal
    assert any(word in terminal for word in ("running tests", "packaging", "compiling"))
    assert "mcpcore: task" not in terminal  # a terminal gets the line, not one line per change


def test_T8_ctrl_c_leaves_the_task_running_and_task_picks_it_up(
    tasks_demo: tuple[DemoServer, str], tmp_path: Path
) -> None:
    server, url = tasks_demo
    before = set(server.tasks)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcore_cli", "call", url, "build", "delay=0.4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        # the command follows its task: the server was asked about it
        def following() -> bool:
            new = set(server.tasks) - before
            asked = {r.json["params"].get("taskId") for r in server.requests_for("tasks/get")}
            return bool(new & asked)

        server.wait_until_blocking(following, timeout=RUN_TIMEOUT)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    [task_id] = set(server.tasks) - before
    stderr = err.decode()
    assert f"mcpcore: task {task_id} is still running on the server\n" in stderr
    assert f"mcpcore: hint: pick it up again with: mcpcore task {url} {task_id}\n" in stderr
    assert stderr.endswith("mcpcore: interrupted\n")
    assert out == b""
    assert task_id not in server.cancelled_tasks  # not cancelled: it runs on
    assert server.tasks[task_id].status == "working"

    # the hint's command, from a new process; then with --config and --server
    resumed = run("task", url, task_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "build: 4 steps done in 1.6 s\n"
    config = write_config(tmp_path, {"one": {"url": url}, "two": {"url": url}})
    again = run("task", "--config", config, "--server", "two", task_id, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["text"] == "build: 4 steps done in 1.6 s"


def test_T8_task_cancel_cancels_it_on_the_server(tasks_demo: tuple[DemoServer, str]) -> None:
    server, url = tasks_demo
    before = set(server.tasks)
    # a task left running: the call is interrupted as soon as the task exists
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcore_cli", "call", url, "build", "delay=5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        server.wait_until_blocking(lambda: set(server.tasks) - before, timeout=RUN_TIMEOUT)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    [task_id] = set(server.tasks) - before
    cancelled = run("task", url, task_id, "--cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout == f"asked the server to cancel task {task_id}\n"
    assert server.cancelled_tasks[-1] == task_id
    assert server.tasks[task_id].status == "cancelled"
    # following a cancelled task says so
    gone = run("task", url, task_id)
    assert gone.returncode != 0 and "cancel" in gone.stderr.lower()


def test_T7_no_tasks_hides_the_task_required_tool(tasks_demo: tuple[DemoServer, str]) -> None:
    _, url = tasks_demo
    hidden = run("tools", url, "--json", "--no-tasks")
    assert hidden.returncode == 0
    assert "server/build" not in [t["id"] for t in json.loads(hidden.stdout)]
    assert "hid tool 'build'" not in hidden.stderr  # issue 37: INFO, not printed at every start
    refused = run("call", url, "build", "--no-tasks")
    assert refused.returncode == 2
    assert "unknown tool 'build'" in refused.stderr


def test_T8_task_usage_errors() -> None:
    missing = run("task", "http://127.0.0.1:9/mcp")
    assert missing.returncode == 2 and "give the id of the task" in missing.stderr
    bad = run("task", "http://127.0.0.1:9/mcp", "bad\nid")
    assert bad.returncode == 2 and "printable" in bad.stderr
    help_text = run("task", "--help")
    assert help_text.returncode == 0 and "--cancel" in help_text.stdout


@pytest.mark.parametrize("peer_name", ["fastmcp-tasks (2026-07-28)", "ts-sdk-1 (2025-11-25)"])
def test_T7_the_cli_calls_a_task_required_tool_of_a_real_server_in_either_era(peer_name: str) -> None:
    """Done-when of issue 29: a task-required tool works from the command line in both eras."""
    from peers import fastmcp_tasks_server, ts_tasks_server

    start = fastmcp_tasks_server if peer_name.startswith("fastmcp") else ts_tasks_server
    with start() as peer:
        listed = run("tools", peer.url)
        assert listed.returncode == 0, listed.stderr
        assert "required_task" in listed.stdout
        result = run("call", peer.url, "required_task", "text=hi")
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "required: hi"
        assert "start required_task" in peer.events()


def test_T8_ctrl_c_while_the_follower_starts_still_leaves_the_task_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """T8: a Ctrl-C that lands while the thread following the task is being started
    (it may already be polling the task, so the server knows it is followed) still
    prints the task's id and the command that picks it up, then exits as interrupted."""
    from mcpcore_cli import _tasks

    said: list[str] = []

    class Cli:
        def err(self, text: str) -> None:
            said.append(f"error: {text}")

        def hint(self, text: str) -> None:
            said.append(f"hint: {text}")

    class Progress:
        label = "server/build"

    class Client:
        era = "modern"

    def interrupted_while_starting(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_tasks, "_Following", interrupted_while_starting)
    with pytest.raises(KeyboardInterrupt):
        _tasks.follow_task(Cli(), Client(), "t-1", Progress(), lambda task: f"mcpcore task URL {task}")  # type: ignore[arg-type]
    assert said == [
        "error: task t-1 is still running on the server",
        "hint: pick it up again with: mcpcore task URL t-1",
    ]
