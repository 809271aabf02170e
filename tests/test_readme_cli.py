"""The README's command-line samples are what the command prints.

Each ``$ mcpcore ...`` transcript in the README's "Command line" section runs
as written (in a shell, with ``mcpcore`` on ``PATH``) against the bundled demo
server, and its output must be the README's, line for line, once the demo's
port is the same on both sides. The OAuth samples (a made-up server) and the
local-server recipe (run by ``tests/test_cli.py``) are left out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpcore_demo import DemoServer
from test_cli import run_with_pty, visible

README = Path(__file__).resolve().parents[1] / "README.md"
SAMPLE_URL = "http://127.0.0.1:8765/mcp"
TERMINAL = "# at a terminal 80 columns wide"
PORT = re.compile(r"127\.0\.0\.1:\d{4,5}")
TASK_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Command line")
    end = text.index("\n## ", start + 1) if "\n## " in text[start + 1 :] else len(text)
    section = text[start:end]
    return section[: section.index("\n### Local servers")]


def _transcripts() -> list[tuple[str, list[str]]]:
    """(command, the lines the README shows for it), in the README's order."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"^```\n(.*?)^```", _section(), re.S | re.M):
        if not block.startswith("$ "):
            continue
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            lines = output.splitlines()
            while lines and not lines[-1]:
                lines.pop()  # the blank line between two commands
            found.append((command, lines))
    return [(c, o) for c, o in found if "mcp.example.com" not in c]


def _config() -> str:
    """The check section's mcp.json, as the README shows it."""
    (document,) = [
        b for b in re.findall(r"^```json\n(.*?)^```", _section(), re.S | re.M) if "DEMO_TOKEN" in b
    ]
    return document


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with DemoServer().serve_in_thread() as running:
        yield running.url


def _normal(lines: list[str]) -> list[str]:
    """Ports and task ids made alike; a task's status lines (how many the client
    sees depends on when it polls) become one."""
    normal: list[str] = []
    for line in lines:
        line = TASK_ID.sub("TASK_ID", PORT.sub("127.0.0.1:PORT", line)).rstrip()
        if line.startswith("  status ") and normal and normal[-1] == "  status ...":
            continue
        normal.append("  status ..." if line.startswith("  status ") else line)
    return normal


def test_the_readme_cli_samples_are_real_output(demo_url: str, tmp_path: Path) -> None:
    transcripts = _transcripts()
    assert len(transcripts) >= 10
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "mcpcore"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mcpcore_cli "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "mcp.json").write_text(_config().replace(SAMPLE_URL, demo_url))
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.pop("DEMO_TOKEN", None)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["MCPCORE_TOKEN_FILE"] = str(tmp_path / "tokens.json")
    for command, expected in transcripts:
        runnable = command.replace(SAMPLE_URL, demo_url)
        if TERMINAL in command:
            words = runnable.split("#", 1)[0].split()[1:]
            status, terminal, _ = run_with_pty(*words, on="stdout", env={"COLUMNS": "80"})
            assert status == 0
            actual = visible(terminal)
        else:
            result = subprocess.run(
                ["bash", "-c", f"( {runnable} ) 2>&1"],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=60,
            )
            actual = result.stdout.splitlines()
        assert _normal(actual) == _normal(expected), command
