"""``mcpcore skills`` and ``skill`` (N4), driven as a subprocess against the demo
server: the listing reads no file, a file is printed once verified, a tampered
one is refused with its content never printed, ``--json``, the exit statuses,
and server text escaped before it reaches the terminal (X1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

RUN_TIMEOUT = 60.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=RUN_TIMEOUT,
    )


@pytest.fixture(scope="module")
def demo() -> Iterator[Any]:
    with DemoServer().serve_in_thread() as running:
        yield running


def test_N4_skills_lists_entries_and_reads_no_file(demo: Any) -> None:
    before = len(demo.server.received)
    listed = run("skills", demo.url)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "greeting-style  (2 files, 181 bytes)  How the demo server greets people",
        "release-notes  (dynamic)  Write release notes from a change list",
    ]
    methods = [r.rpc_method for r in demo.server.received[before:]]
    assert "skills/list" in methods and "resources/read" not in methods
    rows = json.loads(run("skills", demo.url, "--json").stdout)
    assert [r["name"] for r in rows] == ["greeting-style", "release-notes"]
    assert [f["path"] for f in rows[0]["files"]] == ["SKILL.md", "references/TONE.md"]
    assert rows[0]["files"][0]["digest"].startswith("sha256:") and rows[1]["files"] is None


def test_N4_skill_prints_a_verified_file_and_json(demo: Any) -> None:
    skill_md = run("skill", demo.url, "greeting-style")
    assert skill_md.returncode == 0, skill_md.stderr
    assert skill_md.stdout.startswith("---\nname: greeting-style\n")
    tone = json.loads(run("skill", demo.url, "greeting-style", "references/TONE.md", "--json").stdout)
    assert tone["verified"] and tone["text"].startswith("Warm") and tone["path"] == "references/TONE.md"
    dynamic = run("skill", demo.url, "release-notes", "templates/short.md")
    assert dynamic.returncode == 0 and "no digest or size" in dynamic.stderr


def test_N4_unknown_skill_or_path_is_exit_2(demo: Any) -> None:
    unknown = run("skill", demo.url, "nope")
    assert unknown.returncode == 2 and "lists no skill 'nope'" in unknown.stderr
    path = run("skill", demo.url, "greeting-style", "scripts/x.sh")
    assert path.returncode == 2 and "lists no file 'scripts/x.sh'" in path.stderr
    usage = run("skill", demo.url)
    assert usage.returncode == 2 and "name of the skill" in usage.stderr


def test_N4_X1_a_tampered_file_is_refused_unprinted_and_server_text_is_escaped() -> None:
    def fault(request: ReceivedRequest) -> FaultResponse | None:
        body = request.json or {}
        if request.rpc_method == "resources/read":
            uri = body["params"]["uri"]
            result = {"contents": [{"uri": uri, "text": "EVIL \x1b[2J body\n"}]}
        elif request.rpc_method == "skills/list":
            entry = {
                "uri": "skill://x/evil/SKILL.md",
                "frontmatter": {"name": "evil", "description": "clears \x1b[2J the screen"},
                "resources": [{"uri": "skill://x/evil/SKILL.md", "digest": "sha256:00", "size": 15}],
            }
            result = {"skills": [entry]}
        else:
            return None
        reply = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        return FaultResponse.respond(200, {"content-type": "application/json"}, reply)

    with DemoServer(fault=fault).serve_in_thread() as running:
        listed = run("skills", running.url)
        assert "\x1b" not in listed.stdout and "\\x1b[2J" in listed.stdout
        refused = run("skill", running.url, "evil")
        assert refused.returncode == 3, refused.stderr
        assert "digest" in refused.stderr and "content was dropped" in refused.stderr
        assert "EVIL" not in refused.stdout + refused.stderr
        as_json = run("skill", running.url, "evil", "--json")
        assert as_json.returncode == 3 and "EVIL" not in as_json.stdout
