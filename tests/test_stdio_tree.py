"""S3: closing a local server is bounded whatever its process tree does (issue 25).

A launcher that does not ``exec`` (``npx``, a shell script) leaves the real
server as a grandchild; a server may leave a helper that keeps its stdout open
after it exits. On every driver (anyio on asyncio and on trio, threaded) and
through the CLI, closing returns within ``close_grace`` + 2 s, and no process of
the tree survives (checked by pid; whatever a failing run leaves is killed).

The server is ``tests/servers/lingering_stdio.py``; every process of the tree
appends its pid to ``$PIDS_FILE``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "servers" / "lingering_stdio.py"
SRC = Path(__file__).parent.parent / "src"
GRACE = 0.5
BOUND = GRACE + 2  # the engine's close bound: grace, terminate, kill, a second for the exit
SLACK = 1.5  # a loaded machine (the bound itself is the engine's, measured on its clock)

# How many pids each launcher's tree records before the test closes it.
LAUNCHERS = {
    # sh runs the server without exec; the server ignores stdin's end and SIGTERM.
    "no-exec-launcher": ('echo $$ >> "$PIDS_FILE"\n"{python}" "{server}" --linger --ignore-term\n', 2),
    # The server exits at stdin's end; a helper it left keeps stdout open, ignores SIGTERM.
    "helper-holds-stdout": ('exec "{python}" "{server}" --leave-helper\n', 2),
    # As above, but the helper left the server's process group: no group signal reaches it.
    "helper-escapes-the-group": ('exec "{python}" "{server}" --leave-escaped-helper\n', 2),
    # The server itself ignores stdin's end (SIGTERM ends it).
    "ignores-eof": ('exec "{python}" "{server}" --linger\n', 1),
}


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie is init's to reap)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return False


class Tree:
    """A launcher script in a plugin root, and the pids its tree recorded."""

    def __init__(self, root: Path, kind: str) -> None:
        body, self.size = LAUNCHERS[kind]
        self.root = root
        self.pids_file = root / "pids"
        script = root / "launch.sh"
        script.write_text("#!/bin/sh\n" + body.format(python=sys.executable, server=SERVER))
        script.chmod(0o755)
        self.entry = {"command": "./launch.sh", "env": {"PIDS_FILE": str(self.pids_file)}}

    def pids(self) -> list[int]:
        try:
            return [int(line) for line in self.pids_file.read_text().split()]
        except (OSError, ValueError):
            return []

    def survivors(self) -> list[int]:
        return [pid for pid in self.pids() if _running(pid)]

    def kill_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture(params=["no-exec-launcher", "helper-holds-stdout"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tree]:
    made = Tree(tmp_path, str(request.param))
    try:
        yield made
    finally:
        made.kill_all()  # a failing run must not leave them behind


async def _wait_gone(tree: Tree, timeout: float = 2.0) -> list[int]:
    with anyio.move_on_after(timeout):
        while tree.survivors():
            await anyio.sleep(0.02)
    return tree.survivors()


async def _open_and_close(driver: str, tree: Tree) -> float | None:
    """Open a client on the tree, wait until it is ready and every pid of the tree is
    recorded, close it: how long closing took, or None if it did not end within the
    bound + 10 s (the tree is then killed, which lets a stuck close end)."""
    options = {"allow_local": True, "plugin_root": str(tree.root), "close_grace": GRACE}
    elapsed: float | None = None
    with anyio.fail_after(30):
        if driver == "threaded":
            client = mcpcore_threaded.McpClient("tree", tree.entry, **options)
            await anyio.to_thread.run_sync(client.start)
            try:
                ready = await anyio.to_thread.run_sync(client.ready, 20)
                assert ready.ok, ready.reason
                while len(tree.pids()) < tree.size:
                    await anyio.sleep(0.02)
            finally:
                started = time.monotonic()
                with anyio.move_on_after(BOUND + 10):
                    await anyio.to_thread.run_sync(client.close, abandon_on_cancel=True)
                    elapsed = time.monotonic() - started
                if elapsed is None:
                    tree.kill_all()
                    with anyio.move_on_after(5):
                        await anyio.to_thread.run_sync(client.close, abandon_on_cancel=True)
        else:
            with anyio.move_on_after(BOUND + 10):
                async with mcpcore_anyio.McpClient("tree", tree.entry, **options) as client:
                    ready = await client.ready(20)
                    assert ready.ok, ready.reason
                    while len(tree.pids()) < tree.size:
                        await anyio.sleep(0.02)
                    started = time.monotonic()
                elapsed = time.monotonic() - started
    return elapsed


async def test_S3_close_is_bounded_and_ends_the_whole_tree(driver: str, tree: Tree) -> None:
    """A non-exec launcher whose server ignores stdin's end and SIGTERM, or a helper
    holding stdout after the server exits: close returns within the bound and every
    process of the tree is gone."""
    elapsed = await _open_and_close(driver, tree)
    assert elapsed is not None, f"close did not return within {BOUND + 10} s"
    assert elapsed < BOUND + SLACK
    assert await _wait_gone(tree) == []


async def test_S3_readers_are_abandoned_at_the_close_bound(driver: str, tmp_path: Path) -> None:
    """A helper that left the server's process group holds its stdout: no signal the
    client sends reaches it. Closing still returns at its bound, having stopped
    reading and closed the pipes (no thread, task or open file is left behind: the
    suite's checks); the helper is the one process it cannot stop."""
    tree = Tree(tmp_path, "helper-escapes-the-group")
    try:
        elapsed = await _open_and_close(driver, tree)
        assert elapsed is not None, f"close did not return within {BOUND + 10} s"
        assert BOUND - 0.05 <= elapsed < BOUND + SLACK  # the whole bound: its stdout never ends
        server, helper = tree.pids()
        with anyio.move_on_after(2):
            while _running(server):
                await anyio.sleep(0.02)
        assert not _running(server) and _running(helper)
    finally:
        tree.kill_all()


def _run_cli(tree: Tree) -> float:
    """``mcpcore tools --config … --allow-local``: how long it took; nothing survives it."""
    config = tree.root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tree": tree.entry}}))
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{SRC / 'adapters'}")
    command = [sys.executable, "-m", "mcpcore_cli", "tools", "--config", str(config), "--allow-local"]
    started = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=25)
    except subprocess.TimeoutExpired:
        pytest.fail("the CLI did not exit within 25 s")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "pid" in result.stdout
    deadline = time.monotonic() + 2
    while tree.survivors() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert tree.survivors() == []
    return elapsed


def test_S3_the_cli_closes_a_tree_that_outlives_stdin_within_its_bound(tree: Tree) -> None:
    """With such a tree the command ends within its close bound (the CLI's 1 s grace
    + 2 s) plus its work, and nothing of the tree survives it."""
    assert _run_cli(tree) < 1.0 + 2 + 8  # its close bound, plus starting Python and the server


def test_S3_a_cli_command_pays_a_short_grace_for_a_server_that_ignores_stdins_end(tmp_path: Path) -> None:
    """The CLI exits right after closing: a server that does not watch stdin gets 1 s,
    not the library's 3 s, before it is terminated. Before, each command took 3 s more."""
    tree = Tree(tmp_path, "ignores-eof")
    try:
        assert _run_cli(tree) < 3.0  # the 1 s grace, plus starting Python and the server
    finally:
        tree.kill_all()


@pytest.mark.parametrize("bad", [0, -1.0, "1", True, float("nan")])
def test_S3_close_grace_must_be_a_positive_number_of_seconds(bad: object) -> None:
    with pytest.raises(ValueError, match="close_grace must be a positive number of seconds"):
        mcpcore_threaded.McpClient("x", {"command": "srv"}, allow_local=True, plugin_root="/p", close_grace=bad)
