"""Tasks against real servers, on every driver (T7, T8, T9).

Three peers, each started once for the module:

- ``fastmcp``: fastmcp-tasks 4.1.4, the ``io.modelcontextprotocol/tasks``
  extension (SEP-2663) at 2026-07-28 (tests/servers/fastmcp_tasks_server.py);
- ``ts``: the TypeScript SDK 1.x server's experimental tasks at 2025-11-25
  (tests/servers/ts_tasks_server.mjs);
- ``demo``: the bundled demo server, 2025-11-25 tasks, its ``build`` tool
  task-required.

The wire shapes these peers put out are in tests/servers/TASKS_WIRE.md. What
a host sees is checked: the result of a call the server ran as a task, its
status messages as progress, the answer a hook gives to the task's question,
the cancel the server records, a task resumed by another process, and the
task-required tool listed with tasks on and hidden (with the warning) or
refused with them off; and a give-up (a cancelled scope, ``task_timeout``, a
call's own ``timeout=``) that the server hears as ``tasks/cancel`` even when the
client closes at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, Face, backend_of, open_client, wait_for
from mcpcore import (
    BackendError,
    CallTimeout,
    Elicitation,
    ElicitResult,
    McpError,
    TaskHandle,
    ToolOutput,
)
from mcpcore_demo import DemoServer, default_tools
from peers import Peer, fastmcp_tasks_server, ts_tasks_server

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 30
_DEMO_PHASES = ("fetching sources", "compiling", "running tests", "packaging", "done")


@dataclass
class TaskPeer:
    """One peer as the tests use it: its URL, era, tool names and what it recorded."""

    kind: str
    url: str
    era: str
    slow: tuple[str, dict[str, Any]]  # a task with status messages, and its arguments
    required: str  # a tool that runs only as a task
    long: tuple[str, dict[str, Any]]  # a task that runs until cancelled
    cancels: Callable[[], int]  # how many cancels of the long task the server recorded
    # how many times the long task began to run (a task cancelled before it ran
    # records no cancel); None: not recorded
    starts: Callable[[], int] | None = None


def _count(peer: Peer, line: str) -> Callable[[], int]:
    return lambda: peer.events().count(line)


@contextlib.contextmanager
def _fastmcp_peer() -> Iterator[TaskPeer]:
    with fastmcp_tasks_server() as peer:
        yield TaskPeer(
            "fastmcp",
            peer.url,
            "2026-07-28",
            # each status shows for 0.3 s: longer than the client's stretched poll gaps
            ("slow_task", {"steps": 2, "delay": 0.3}),
            "required_task",
            ("long_task", {"seconds": 30}),
            _count(peer, "cancelled long_task"),
            _count(peer, "start long_task"),
        )


@contextlib.contextmanager
def _ts_peer() -> Iterator[TaskPeer]:
    with ts_tasks_server() as peer:
        yield TaskPeer(
            "ts",
            peer.url,
            "2025-11-25",
            # mcpcore asks for a task only for a task-required tool in this era
            ("slow_required", {"steps": 2, "delay": 0.15}),
            "required_task",
            ("long_task", {"seconds": 30}),
            _count(peer, "cancelled long_task"),
            _count(peer, "start long_task"),
        )


@contextlib.contextmanager
def _demo_peer() -> Iterator[TaskPeer]:
    server = DemoServer(
        tools=default_tools(build_task_support="required"), task_poll_interval_ms=100
    )
    with server.serve_in_thread() as running:
        yield TaskPeer(
            "demo",
            running.url,
            "2025-11-25",
            ("build", {"delay": 0.1}),
            "build",
            ("build", {"delay": 30}),
            lambda: len(server.cancelled_tasks),
        )


_PEERS = {"fastmcp": _fastmcp_peer, "ts": _ts_peer, "demo": _demo_peer}


@pytest.fixture(scope="module", params=list(_PEERS))
def peer(request: pytest.FixtureRequest) -> Iterator[TaskPeer]:
    """Each peer once for the module (the tests are grouped by peer)."""
    with _PEERS[request.param]() as running:
        yield running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


async def _run(client: Face, name: str, *args: Any, **kwargs: Any) -> Any:
    """The client's ``name`` method: awaited on anyio, in a worker thread on threaded."""
    return await client._run(getattr(client.client, name), *args, **kwargs)


def _answering(driver: str, answer: ElicitResult, seen: list[Elicitation]) -> Any:
    def hook(question: Elicitation) -> ElicitResult:
        seen.append(question)
        return answer

    if driver == "threaded":
        return hook

    async def ahook(question: Elicitation) -> ElicitResult:
        return hook(question)

    return ahook


async def test_T7_a_call_follows_its_task_to_the_result_with_status_as_progress(
    driver: str, peer: TaskPeer
) -> None:
    statuses: list[str | None] = []
    tool, arguments = peer.slow
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            assert client.protocol_version == peer.era
            out = await client.call(
                f"p/{tool}", arguments, on_progress=lambda p, t, m: statuses.append(m)
            )
            required = await client.call(f"p/{peer.required}", _required_arguments(peer))
    expected = "build: 4 steps done in 0.4 s" if peer.kind == "demo" else "counted to 2"
    assert out.text == expected and not out.is_error
    # the server's status messages arrive as progress while the task runs
    steps = [m for m in statuses if m and (m.startswith("step ") or m in _DEMO_PHASES)]
    assert steps, statuses
    assert required.text == (
        "build: 4 steps done in 0.4 s" if peer.kind == "demo" else "required: hi"
    )


def _required_arguments(peer: TaskPeer) -> dict[str, Any]:
    return dict(peer.slow[1]) if peer.kind == "demo" else {"text": "hi"}


WITH_FAILING_AND_ASKING = pytest.mark.parametrize("peer", ["fastmcp", "ts"], indirect=True)
"""The demo server's task neither fails nor asks: these run against the other two."""
OUT_OF_PROCESS = WITH_FAILING_AND_ASKING
"""The two peers in processes of their own (the demo server runs in this one)."""
ONE_DRIVER = pytest.mark.parametrize("driver", ["threaded"], indirect=True)


@WITH_FAILING_AND_ASKING
async def test_T7_a_task_that_fails_raises_like_a_failed_call(driver: str, peer: TaskPeer) -> None:
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            with pytest.raises(BackendError) as failed:
                await client.call("p/failing_task", {"reason": "the disk is full"})
            # the client goes on
            assert (await client.call("p/echo", {"text": "still here"})).text == "still here"
    assert "the disk is full" in failed.value.text


@WITH_FAILING_AND_ASKING
async def test_T7_the_tasks_question_is_answered_through_the_hook(
    driver: str, peer: TaskPeer
) -> None:
    """2026-07-28: input_required in tasks/get, answered with tasks/update;
    2025-11-25: elicitation/create on the tasks/result stream."""
    seen: list[Elicitation] = []
    hook = _answering(driver, ElicitResult.accept({"confirmed": True}), seen)
    async with open_client(driver, "p", {"url": peer.url}, tasks=True, elicit=hook) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            out = await client.call("p/ask_task", {"action": "deploy"})
    assert out.text.lower() == "deploy: accept confirmed=true"
    [question] = seen
    assert question.server == "p" and question.mode == "form"
    assert question.message == "Confirm deploy?" and "confirmed" in question.fields


async def test_T7_an_abandoned_call_cancels_its_task_on_the_server(
    driver: str, peer: TaskPeer
) -> None:
    """Once the call follows its task (its first status came), giving up on the call
    sends tasks/cancel: the server stops the task and records it."""
    tool, arguments = peer.long
    before = peer.cancels()
    following = threading.Event()

    def status(progress: float, total: float | None, message: str | None) -> None:
        following.set()

    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            if client.threaded:
                handle = await anyio.to_thread.run_sync(
                    lambda: client.client.start_call(f"p/{tool}", arguments, on_progress=status)
                )
                await wait_for(following.is_set, TIMEOUT)
                handle.cancel()
            else:
                async with anyio.create_task_group() as group:

                    async def call() -> None:
                        await client.client.call(f"p/{tool}", arguments, on_progress=status)

                    group.start_soon(call)
                    await wait_for(following.is_set, TIMEOUT)
                    group.cancel_scope.cancel()
            # tasks/cancel reaches the server, which stops the task
            await wait_for(lambda: peer.cancels() > before, TIMEOUT)


_RESUME = """
import sys
from mcpcore import TaskHandle
from mcpcore_threaded import McpClient
handle = TaskHandle.from_json(sys.stdin.read())
with McpClient(handle.server, {"url": sys.argv[1]}, tasks=True, startup_timeout=20) as client:
    assert client.ready(20).ok
    statuses = []
    out = client.resume_task(handle, on_progress=lambda p, t, m: statuses.append(m))
    print(out.text)
    print(",".join(m or "" for m in statuses), file=sys.stderr)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "src" / "adapters")])
    return env


@ONE_DRIVER
async def test_T8_a_task_started_here_is_resumed_by_another_process(
    driver: str, peer: TaskPeer
) -> None:
    """The handle, serialized, is all a new process needs to pick the task up (one
    driver starts it: the other process is a blocking program either way; the
    drivers' resume_task is the next test's)."""
    tool, arguments = peer.slow
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            handle = await _run(client, "start_task", f"p/{tool}", arguments)
    assert isinstance(handle, TaskHandle)
    assert (handle.server, handle.tool) == ("p", tool)
    text = handle.to_json()
    assert peer.url not in text  # the handle names the server, never its URL
    resumed = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-c", _RESUME, peer.url],
            input=text,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=TIMEOUT,
        )
    )
    assert resumed.returncode == 0, resumed.stderr
    expected = "build: 4 steps done in 0.4 s" if peer.kind == "demo" else "counted to 2"
    assert resumed.stdout.strip() == expected


async def test_T8_a_new_client_resumes_and_asks_about_a_task(driver: str, peer: TaskPeer) -> None:
    tool, arguments = peer.required, _required_arguments(peer)
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as first:
        with anyio.fail_after(TIMEOUT):
            assert (await first.ready(TIMEOUT)).ok
            handle = await _run(first, "start_task", f"p/{tool}", arguments)
    assert isinstance(handle, TaskHandle)
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as second:
        with anyio.fail_after(TIMEOUT):
            assert (await second.ready(TIMEOUT)).ok
            status = await _run(second, "task_status", handle.task_id)
            assert status.task_id == handle.task_id
            assert status.status in ("working", "completed")
            out = await _run(second, "resume_task", TaskHandle.from_json(handle.to_json()))
    assert isinstance(out, ToolOutput) and not out.is_error


async def test_T8_the_task_required_tool_is_listed_with_tasks_on_and_not_usable_off(
    driver: str, peer: TaskPeer, caplog: pytest.LogCaptureFixture
) -> None:
    """2025-11-25 (execution.taskSupport "required"): listed with tasks on, hidden
    (logged at INFO) off. 2026-07-28 marks no tool: the server refuses the call
    (-32021) when the request does not declare the extension."""
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as on:
        with anyio.fail_after(TIMEOUT):
            assert (await on.ready(TIMEOUT)).ok
            names_on = {t.name for t in on.tools}
    assert peer.required in names_on
    caplog.set_level(logging.INFO, logger="mcpcore")
    async with open_client(driver, "p", {"url": peer.url}) as off:
        with anyio.fail_after(TIMEOUT):
            assert (await off.ready(TIMEOUT)).ok
            names_off = {t.name for t in off.tools}
            if peer.era == "2026-07-28":
                assert peer.required in names_off
                with pytest.raises(McpError) as refused:
                    await off.call(f"p/{peer.required}", _required_arguments(peer))
                assert "-32021" in str(refused.value) or "task" in str(refused.value).lower()
                return
    assert peer.required not in names_off
    assert "echo" in names_off or peer.kind == "demo"
    # issue 37: logged at INFO (the client's configured behaviour, not a fault)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(f"hid tool '{peer.required}'" in w for w in infos), infos


@ONE_DRIVER
async def test_T7_the_task_peers_are_installed(driver: str) -> None:
    """The peers come from scripts/install_peers.sh: missing ones fail, never skip."""
    from peers import task_peers_installed

    assert task_peers_installed(), "run scripts/install_peers.sh"
    sdk = ROOT / ".peers" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    assert json.loads(sdk.read_text())["version"] == "1.32.2"


# --- T9: giving up on a task reaches the server -------------------------------------

# Give-ups in a row, per driver and peer: on anyio the close always beat the cancel;
# on threads it raced it (about one time in five), so they try more.
GIVE_UPS = {"threaded": 10}
CLOSE_BOUND = 10.0  # a close takes HttpLimits.close_timeout (2 s) at most, with slack


@OUT_OF_PROCESS
async def test_T9_a_give_up_then_an_immediate_close_still_cancels_the_task(
    driver: str, peer: TaskPeer
) -> None:
    """T9: a call that gives up on its task, its client closing right after, still
    delivers tasks/cancel before the close ends: the server cancels the task. On
    anyio the give-up is a cancelled scope around the call (cancelled once the
    call follows its task and the task runs), on threads the call's task_timeout;
    then the client's block ends at once."""
    tool, arguments = peer.long
    assert peer.starts is not None
    starts = peer.starts
    for _ in range(GIVE_UPS.get(driver, 5)):
        before, started = peer.cancels(), starts()
        following = anyio.Event()

        async def give_up(
            scope: anyio.CancelScope, following: anyio.Event = following, started: int = started
        ) -> None:
            await following.wait()
            await wait_for(lambda: starts() > started, TIMEOUT)
            scope.cancel()

        with anyio.fail_after(TIMEOUT):
            async with (
                anyio.create_task_group() as group,
                open_client(driver, "p", {"url": peer.url}, tasks=True, task_timeout=1.0) as client,
            ):
                assert (await client.ready(TIMEOUT)).ok
                if client.threaded:
                    # the call and the end of its ``with`` in one thread, as a program has them
                    await anyio.to_thread.run_sync(
                        lambda: _past_task_timeout(client.client, f"p/{tool}", arguments)
                    )
                else:
                    with anyio.CancelScope() as scope:
                        group.start_soon(give_up, scope)
                        await client.client.call(
                            f"p/{tool}", arguments, on_progress=lambda *_, f=following: f.set()
                        )
                gave_up = anyio.current_time()  # the client's block ends right here
            closed = anyio.current_time() - gave_up
        assert closed < CLOSE_BOUND, closed
        # the server got tasks/cancel (the close waited for its answer) and stops the task
        await wait_for(lambda before=before: peer.cancels() > before, TIMEOUT)


def _past_task_timeout(client: Any, tool_id: str, arguments: dict[str, Any]) -> None:
    """A threaded call that gives up at task_timeout, then its client's close at once."""
    try:
        with pytest.raises(CallTimeout, match="task_timeout"):
            client.call(tool_id, arguments)
    finally:
        client.close()


async def test_T9_a_calls_own_timeout_bounds_its_task_then_cancels_it(
    driver: str, peer: TaskPeer
) -> None:
    """T9: a timeout= given for one call is the caller's word: it bounds the whole
    call, the task the server made of it included (the task runs 30 s, and
    task_timeout is an hour), then the task is cancelled on the server, though
    the client closes at once."""
    tool, arguments = peer.long
    before = peer.cancels()
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            started = anyio.current_time()
            with pytest.raises(CallTimeout) as timed_out:
                await client.call(f"p/{tool}", arguments, timeout=1.5)
            took = anyio.current_time() - started
    assert 1.4 <= took < 10, took
    assert "within 1.5 s (the call's timeout)" in str(timed_out.value)
    await wait_for(lambda: peer.cancels() > before, TIMEOUT)


@OUT_OF_PROCESS
async def test_T8_start_task_asks_for_a_task_of_a_tool_that_may_run_as_one(
    driver: str, peer: TaskPeer
) -> None:
    """T8: start_task is the host's choice of a task: a task-optional tool (2025-11-25
    execution.taskSupport "optional"; at 2026-07-28 the server decides) runs as one,
    and its handle picks the result up."""
    async with open_client(driver, "p", {"url": peer.url}, tasks=True) as client:
        with anyio.fail_after(TIMEOUT):
            assert (await client.ready(TIMEOUT)).ok
            assert any(t.name == "slow_task" for t in client.tools)
            handle = await _run(client, "start_task", "p/slow_task", {"steps": 1, "delay": 0.1})
            assert isinstance(handle, TaskHandle), handle
            assert handle.tool == "slow_task"
            out = await _run(client, "resume_task", handle)
    assert out.text == "counted to 1"
