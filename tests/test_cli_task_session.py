"""T8 against server-everything: Ctrl-C on ``mcpcore call`` while a task runs.

server-everything keeps its tasks per session (a task store per session,
cleaned up when the session ends), and the command line ends its session as it
exits. The pick-up hint must not promise what the server cannot do: it says
that the command works only while the server still has the task, and why.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading

import pytest

from peers import everything_server
from test_cli import RUN_TIMEOUT, _env, run

pytestmark = pytest.mark.realpeer

PER_SESSION = (
    "mcpcore: hint: that works only while the server still has the task: this run ends "
    "its session with the server as it exits, and a server that keeps its tasks per "
    "session (as servers built on the TypeScript SDK's examples do) forgets the task with it\n"
)


def test_T8_ctrl_c_on_a_per_session_task_says_the_pick_up_may_fail_and_why() -> None:
    """T8: after Ctrl-C the hint gives the pick-up command and says it works only while
    the server still has the task, because this run's session ends as it exits; against
    server-everything the command indeed finds no task."""
    with everything_server() as peer:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpcore_cli",
                "call",
                peer.url,
                "simulate-research-query",
                "topic=restarts",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        lines: list[str] = []
        following = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for raw in proc.stderr:
                lines.append(raw.decode())
                if re.match(r"mcpcore: task \S+: ", lines[-1]):
                    following.set()  # a status line: the task runs and is followed
            following.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert following.wait(RUN_TIMEOUT), "".join(lines)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=RUN_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            reader.join(RUN_TIMEOUT)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        stderr = "".join(lines)
        assert proc.returncode == 130, stderr
        match = re.search(
            r"mcpcore: hint: pick it up again with: mcpcore task (\S+) (\S+)\n", stderr
        )
        assert match, stderr
        assert PER_SESSION in stderr
        assert stderr.endswith("mcpcore: interrupted\n")
        # what the hint warns of: the session ended, and the task with it
        picked = run("task", match.group(1), match.group(2))
        assert picked.returncode != 0
        assert "not found" in picked.stderr.lower()
