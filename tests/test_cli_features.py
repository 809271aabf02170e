"""``mcpcore resources``, ``read``, ``prompts`` and ``prompt`` (F10), driven as a subprocess
against the demo server: the URL and ``--config`` forms, ``--json``, ``--save``, the exit
statuses, and server text escaped before it reaches the terminal (X1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest
from mcpcore_demo._tools import IMAGE_PNG

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
def demo_url() -> Iterator[str]:
    with DemoServer().serve_in_thread() as running:
        yield running.url


def test_F10_resources_lists_uris_templates_and_kinds(demo_url: str) -> None:
    result = run("resources", demo_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "demo://readme  text/markdown  readme",
        "demo://logo.png  image/png  logo",
        "demo://greeting/{name} (template)  text/plain  greeting",
    ]
    listed = json.loads(run("resources", demo_url, "--json").stdout)
    assert [r.get("uri") or r.get("uri_template") for r in listed] == [
        "demo://readme",
        "demo://logo.png",
        "demo://greeting/{name}",
    ]


def test_F10_read_prints_text_sums_up_binary_and_saves_it(demo_url: str, tmp_path: Path) -> None:
    text = run("read", demo_url, "demo://readme")
    assert text.returncode == 0 and text.stdout.startswith("# The mcpcore demo server")
    binary = run("read", demo_url, "demo://logo.png")
    assert binary.stdout.strip() == "[binary: image/png, 70 bytes; --save DIR writes it to a file]"
    saved = run("read", demo_url, "demo://logo.png", "--save", str(tmp_path))
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "logo.png").read_bytes() == IMAGE_PNG
    again = json.loads(run("read", demo_url, "demo://logo.png", "--save", str(tmp_path), "--json").stdout)
    assert again["contents"][0]["saved"].endswith("logo-2.png")  # never overwrites
    assert again["contents"][0]["size"] == len(IMAGE_PNG)


def test_F10_an_unknown_uri_or_prompt_argument_that_is_not_a_string_is_exit_2(demo_url: str) -> None:
    missing = run("read", demo_url, "demo://nothing")
    assert missing.returncode == 2 and "has no resource 'demo://nothing'" in missing.stderr
    bad = run("prompt", demo_url, "summarize", '{"text": 3}')
    assert bad.returncode == 2 and "must be a string" in bad.stderr
    not_json = run("prompt", demo_url, "summarize", "{")
    assert not_json.returncode == 2 and "ARGS_JSON" in not_json.stderr


def test_F10_prompts_and_prompt(demo_url: str) -> None:
    listed = run("prompts", demo_url)
    assert listed.stdout.splitlines() == [
        "summarize(text)  Ask for a short summary.",
        "translate(text, language?)  Ask for a translation.",
    ]
    got = run("prompt", demo_url, "translate", '{"text": "hi", "language": "German"}')
    assert got.returncode == 0 and got.stdout == "user: Translate this into German:\n\nhi\n"
    as_json = json.loads(run("prompt", demo_url, "summarize", '{"text": "x"}', "--json").stdout)
    assert as_json["messages"] == [
        {"role": "user", "type": "text", "text": "Summarize this in one sentence:\n\nx"}
    ]


def test_F10_the_config_forms_and_a_server_that_is_not_ready(demo_url: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"demo": {"url": demo_url}, "down": {"url": "http://127.0.0.1:9/mcp"}}})
    )
    listed = run("prompts", "--config", str(config), "--timeout", "5")
    assert listed.returncode == 3  # one server unavailable: the others are still listed
    assert listed.stdout.splitlines()[0] == "demo: summarize(text)  Ask for a short summary."
    assert "server 'down' is unavailable" in listed.stderr
    read = run("read", "--config", str(config), "--server", "demo", "demo://greeting/Ada%20L")
    assert read.returncode == 0 and read.stdout == "Hello, Ada L!\n"
    unsure = run("read", "--config", str(config), "demo://readme")
    assert unsure.returncode == 2 and "--server NAME" in unsure.stderr
    unknown = run("resources", "--config", str(config), "--server", "nope")
    assert unknown.returncode == 2 and "no server 'nope'" in unknown.stderr


def test_F10_X1_server_text_is_escaped_before_it_reaches_the_terminal() -> None:
    hostile = "evil\x1b[2J\x07name"

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        body = request.json if isinstance(request.json, dict) else {}
        if body.get("method") == "resources/list":
            reply = {
                "jsonrpc": "2.0",
                "id": body["id"],
                "result": {"resources": [{"uri": "demo://x\x1b]0;t\x07", "name": hostile, "description": "d\x1b[31m"}]},
            }
            return FaultResponse.respond(200, {"content-type": "application/json"}, json.dumps(reply).encode())
        if body.get("method") == "resources/read":
            reply = {"jsonrpc": "2.0", "id": body["id"], "result": {"contents": [{"uri": "u", "text": "a\x1b[2Jb"}]}}
            return FaultResponse.respond(200, {"content-type": "application/json"}, json.dumps(reply).encode())
        return None

    with DemoServer(fault=fault).serve_in_thread() as running:
        listed = run("resources", running.url)
        read = run("read", running.url, "u")
    for result in (listed, read):
        assert result.returncode == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "evil" in listed.stdout and "\\x1b" in read.stdout
