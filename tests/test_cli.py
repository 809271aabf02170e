"""The ``mcpcore`` command line (X1), driven as a subprocess.

Every run goes through ``python -m mcpcore_cli`` with a bounded timeout,
against the bundled demo server (in this process, on a background thread) or
the official Python SDK server (``tests/peers.py``). No sleeps: waits are on
conditions the demo server records.
"""

from __future__ import annotations

import base64
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from mcpcore_demo import (
    AUDIO_WAV,
    IMAGE_PNG,
    DemoServer,
    FaultResponse,
    ReceivedRequest,
    ToolContext,
)
from peers import free_port, sdk_server

RUN_TIMEOUT = 30
SECRET = "s3cr3t-Bearer-Value-42"
DEFAULT_TOOLS = [
    "echo",
    "add",
    "image",
    "audio",
    "embedded_text",
    "embedded_blob",
    "resource_link",
    "structured",
    "fail",
    "slow",
    "log",
    "build",
]


# ---------------------------------------------------------------- helpers


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env["COLUMNS"] = "100"
    env["SECRET"] = SECRET
    env.update(extra or {})
    return env


def run(
    *args: str,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_env(env),
        input=input,
        timeout=timeout,
    )


SGR = re.compile(r"\x1b\[[0-9;]*m")


def visible(text: str) -> list[str]:
    """A terminal's lines without their colour codes."""
    return [SGR.sub("", line) for line in text.replace("\r\n", "\n").splitlines()]


def run_with_pty(
    *args: str, on: str, env: Mapping[str, str] | None = None, timeout: float = RUN_TIMEOUT
) -> tuple[int, str, str]:
    """Run with ``on`` ("stdout" or "stderr") attached to a pseudo-terminal.
    Returns (status, what the terminal received, the other stream)."""
    master, slave = pty.openpty()
    streams: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    streams[on] = slave
    proc = subprocess.Popen([sys.executable, "-m", "mcpcore_cli", *args], env=_env(env), **streams)
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer closed
                    break
                if not chunk:
                    break
                received += chunk
            elif proc.poll() is not None:
                break
        other = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    rest = other[1] if on == "stdout" else other[0]
    return proc.returncode, received.decode("utf-8", "replace"), rest.decode("utf-8", "replace")


def assert_no_secret(result: subprocess.CompletedProcess[str]) -> None:
    assert SECRET not in result.stdout
    assert SECRET not in result.stderr
    assert SECRET[:12] not in result.stdout + result.stderr


def write_config(tmp_path: Path, servers: Mapping[str, Any], name: str = "mcp.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def unused_url() -> str:
    return f"http://127.0.0.1:{free_port()}/mcp"


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with DemoServer().serve_in_thread() as running:
        yield running.url


@pytest.fixture
def demo() -> Iterator[Any]:
    """A fresh demo server (for tests that look at what it received)."""
    with DemoServer().serve_in_thread() as running:
        yield running


# ---------------------------------------------------------------- demo


def test_demo_runs_end_to_end() -> None:
    # Bounded by run()'s RUN_TIMEOUT (it takes about a second): no tighter wall-clock bound,
    # which a loaded machine would break; every step's outcome is checked below instead.
    result = run("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "demo server listening at http://127.0.0.1:" in out
    assert "connected as server 'demo': 12 tools" in out
    for name in DEFAULT_TOOLS:
        assert f"> call demo/{name} " in out
        assert f"demo/{name} " in out.split("> call", 1)[0]  # in the table
    assert "Hello from mcpcore!" in out
    assert 'structured: {"sum": 5}' in out
    assert "error (expected): this tool always fails (on purpose)" in out
    assert "progress 1/3 step 1 of 3" in out and "progress 3/3 step 3 of 3" in out
    assert "[image omitted: image/png]" in out
    # F10: resources, a template and a prompt, listed and read
    assert "> list resources and templates\n  demo://readme  text/markdown\n" in out
    assert "> read demo://logo.png\n  [binary: image/png, 70 bytes]" in out
    assert "> read demo://greeting/Ada (the template, expanded)\n  Hello, Ada!" in out
    assert "  summarize(text)\n  translate(text, language?)" in out
    assert "  user:\n    Summarize this in one sentence:" in out
    # T7: build runs as a task, followed to its end, its status shown
    task_part = out.split("> call demo/build ", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"\n  task [0-9a-f]{32} \(the server runs the call\)\n", task_part)
    assert "\n  status fetching sources\n" in task_part or "\n  status compiling\n" in task_part
    assert task_part.endswith("\n  status done\n  build: 4 steps done in 2 s")
    assert "called 12 tools; client closed and server stopped" in out
    assert "\x1b" not in out  # not a terminal: no colour


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("mcpcore ")
    result = run("--help")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    for command in ("demo", "tools", "call", "check"):
        line = next(line for line in lines if line.startswith(f"  {command}  "))
        assert len(line.split()) > 4, line  # described, not only named
    assert "130" in result.stdout and "tools --config" in result.stdout
    call_help = run("call", "--help")
    assert call_help.returncode == 0
    text = " ".join(call_help.stdout.split())
    assert "at most S seconds to connect and list the tools (default 30)" in text
    assert "at most S seconds for the call itself (default 300)" in text
    for command in ("tools", "call", "check"):
        text = run(command, "--help").stdout
        assert "--allow-local" in text and "--allow-http" in text


# ---------------------------------------------------------------- tools


def test_tools_table(demo_url: str) -> None:
    result = run("tools", demo_url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "RO", "ARGS", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == [f"server/{name}" for name in DEFAULT_TOOLS]
    assert rows["server/echo"].split()[1] == "ro"
    assert rows["server/fail"].split()[1] != "ro"
    # aligned: every description starts in the same column
    column = lines[0].index("DESCRIPTION")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines[1:])
    # stdout is not a terminal: nothing is cut, whatever COLUMNS says (100 here)
    assert rows["server/slow"].endswith("stops early when cancelled.")
    assert "…" not in result.stdout
    assert max(len(line) for line in lines) > 100


def test_tools_table_is_cut_to_the_terminal_width(demo_url: str) -> None:
    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout", env={"COLUMNS": "50"})
    assert status == 0
    lines = visible(terminal)
    assert len(lines) == 1 + len(DEFAULT_TOOLS)
    assert all(len(line) <= 50 for line in lines)
    assert any(line.endswith("…") for line in lines)


def _columns(line: str, header: str, names: list[str]) -> list[int]:
    return [header.index(name) for name in names]


def test_tables_stay_aligned_with_colour(demo_url: str, tmp_path: Path) -> None:
    """Coloured cells are padded by their visible width: colour shifts no column."""
    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout", env={"COLUMNS": "200"})
    assert status == 0
    assert "\x1b[32mro\x1b[0m" in terminal  # colour is on
    lines = visible(terminal)
    column = lines[0].index("DESCRIPTION")
    for line in lines[1:]:
        assert line[column - 2 : column] == "  " and line[column] != " ", line
    config = write_config(tmp_path, {"good": {"url": demo_url}, "down": {"url": unused_url()}})
    status, terminal, _ = run_with_pty("check", config, "--timeout", "10", on="stdout")
    assert status == 1
    assert "\x1b[32mready\x1b[0m" in terminal and "\x1b[31munavailable\x1b[0m" in terminal
    lines = visible(terminal)
    tools, reason = lines[0].index("TOOLS"), lines[0].index("REASON")
    good = next(line for line in lines if line.startswith("good"))
    down = next(line for line in lines if line.startswith("down"))
    assert good[tools : tools + 5] == "   12"  # right-aligned under TOOLS
    assert down[tools : tools + 5] == "    -"
    assert down[reason - 2 : reason] == "  " and down[reason] != " "


def test_tools_json_and_name(demo_url: str) -> None:
    result = run("tools", demo_url, "--json", "--name", "Demo")
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)
    assert [t["id"] for t in tools] == [f"demo/{name}" for name in DEFAULT_TOOLS]
    for tool in tools:
        assert set(tool) == {
            "id",
            "name",
            "title",
            "description",
            "parameters",
            "output_schema",
            "annotations",
            "read_only",
        }
    echo = tools[0]
    assert echo["name"] == "echo"
    assert echo["title"] == "Echo"
    assert echo["read_only"] is True
    assert echo["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    assert echo["output_schema"] is None
    assert echo["parameters"]["required"] == ["text"]
    add = tools[DEFAULT_TOOLS.index("add")]
    assert add["output_schema"]["required"] == ["sum"]
    fail = tools[DEFAULT_TOOLS.index("fail")]
    assert fail["read_only"] is False and fail["annotations"] == {}


def test_tools_from_config(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"alpha": {"url": demo_url}, "beta": {"url": demo_url}})
    result = run("tools", "--config", config, "--json")
    assert result.returncode == 0, result.stderr
    ids = [t["id"] for t in json.loads(result.stdout)]
    assert ids == [f"alpha/{n}" for n in DEFAULT_TOOLS] + [f"beta/{n}" for n in DEFAULT_TOOLS]
    result = run("tools", "--config", config, "--server", "BETA", "--json")
    assert json.loads(result.stdout)[0]["id"] == "beta/echo"
    assert run("tools", "--config", config, "--server", "gamma").returncode == 2


def test_tools_from_config_with_a_bad_server(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"good": {"url": demo_url}, "down": {"url": unused_url()}})
    result = run("tools", "--config", config, "--timeout", "5")
    assert result.returncode == 3
    assert "good/echo" in result.stdout
    assert "server 'down' is unavailable" in result.stderr


def test_tools_partial_success_exit_status(demo_url: str, tmp_path: Path) -> None:
    """tools --config: every ready server's tools are printed; the status is 0 only when
    every selected server is ready, else 2 for an invalid entry (first), else 3."""
    servers = {
        "good": {"url": demo_url},
        "down": {"url": unused_url()},
        "bad": {"url": "ftp://example.com/mcp"},
    }
    config = write_config(tmp_path, servers)
    result = run("tools", "--config", config, "--json", "--timeout", "5")
    assert result.returncode == 2  # an invalid entry outranks an unavailable server
    assert [t["id"] for t in json.loads(result.stdout)] == [f"good/{n}" for n in DEFAULT_TOOLS]
    assert "server 'bad' is invalid" in result.stderr
    assert "server 'down' is unavailable" in result.stderr
    assert run("tools", "--config", config, "--server", "good").returncode == 0
    assert run("tools", "--config", config, "--server", "down", "--timeout", "5").returncode == 3
    result = run("tools", "--config", config, "--server", "bad")
    assert result.returncode == 2
    assert result.stdout == ""
    # the reason, and nothing after it: no "has no tools" for a server that never answered
    assert "has no tools" not in result.stderr
    assert result.stderr.splitlines() == [
        "mcpcore: server 'bad' is invalid: url 'ftp://example.com/mcp' must be an absolute "
        "http:// or https:// URL"
    ]
    help_text = run("tools", "--help").stdout
    assert "0 only when every selected server is ready" in " ".join(help_text.split())


def test_tools_of_a_server_without_tools(tmp_path: Path) -> None:
    with DemoServer(tools=[]).serve_in_thread() as running:
        assert run("tools", running.url).stderr == "mcpcore: the server has no tools\n"
        config = write_config(tmp_path, {"empty": {"url": running.url}})
        result = run("tools", "--config", config)
    assert result.returncode == 0
    assert result.stderr == "mcpcore: the server has no tools\n"


def test_dropped_tools_are_warned_on_stderr() -> None:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"

    tools = [
        ({"name": "fine", "inputSchema": {"type": "object"}}, handler),
        ({"name": "broken", "inputSchema": "not an object"}, handler),
    ]
    with DemoServer(tools=tools).serve_in_thread() as running:
        result = run("tools", running.url)
    assert result.returncode == 0
    assert "server/fine" in result.stdout and "broken" not in result.stdout
    assert "dropped tool" in result.stderr and "broken" in result.stderr


LONG_NAME = "n" * 129  # one character over the limit (T1): dropped, with a note


@pytest.fixture(scope="module")
def noisy_url() -> Iterator[str]:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"

    tools = [
        ({"name": "fine", "inputSchema": {"type": "object"}}, handler),
        ({"name": "other", "inputSchema": {"type": "object"}}, handler),
        ({"name": LONG_NAME, "inputSchema": {"type": "object"}}, handler),
        ({"name": LONG_NAME, "inputSchema": {"type": "object"}}, handler),
        ({"name": "broken", "inputSchema": "not an object"}, handler),
    ]
    with DemoServer(tools=tools).serve_in_thread() as running:
        yield running.url


def test_X4_tool_notes_once_with_long_names_cut(noisy_url: str) -> None:
    """X4: each note about the tools is shown once per run, with a long name cut short."""
    result = run("tools", noisy_url)
    assert result.returncode == 0, result.stderr
    notes = result.stderr.splitlines()
    assert len(notes) == 2, notes  # the two identical notes about LONG_NAME are one
    long_note = next(line for line in notes if "nnnn" in line)
    assert LONG_NAME not in long_note
    assert "…'" in long_note and "not a valid tool name" in long_note
    assert max(len(line) for line in notes) < 200
    assert any("'broken'" in line and "inputSchema" in line for line in notes)


def test_X4_call_shows_only_the_notes_about_its_tool(noisy_url: str) -> None:
    """X4: call shows no note about other tools, and the note about the one it asks for."""
    result = run("call", noisy_url, "fine")
    assert result.returncode == 0
    assert result.stdout == "ok\n"
    assert result.stderr == ""
    result = run("call", noisy_url, "broken")
    assert result.returncode == 2
    notes = result.stderr.splitlines()
    assert len(notes) == 3
    assert "'broken'" in notes[0] and "inputSchema is not an object" in notes[0]
    assert notes[1] == "mcpcore: unknown tool 'broken'"
    assert notes[2] == f"mcpcore: hint: list the tools: mcpcore tools {noisy_url}"
    result = run("call", noisy_url, LONG_NAME)
    assert result.returncode == 2
    assert sum("not a valid tool name" in line for line in result.stderr.splitlines()) == 1
    assert LONG_NAME not in result.stderr.split("unknown tool", 1)[0]


# ---------------------------------------------------------------- call


def test_call_prints_text(demo_url: str) -> None:
    result = run("call", demo_url, "echo", '{"text": "hello\\nworld"}')
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\nworld\n"
    assert result.stderr == ""


def test_call_json(demo_url: str) -> None:
    result = run("call", demo_url, "add", '{"a": 2, "b": 40}', "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "text": "42",
        "structured": {"sum": 42},
        "is_error": False,
        "content": [{"type": "text", "text": "42"}],
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize(
    ("tool", "block"),
    [
        (
            "image",
            {
                "type": "image",
                "mime_type": "image/png",
                "size": len(IMAGE_PNG),
                "data": _b64(IMAGE_PNG),
            },
        ),
        (
            "audio",
            {
                "type": "audio",
                "mime_type": "audio/wav",
                "size": len(AUDIO_WAV),
                "data": _b64(AUDIO_WAV),
            },
        ),
        (
            "embedded_blob",
            {
                "type": "resource",
                "uri": "demo://blob/data.bin",
                "mime_type": "application/octet-stream",
                "size": 16,
                "data": _b64(bytes(range(16))),
            },
        ),
        (
            "embedded_text",
            {
                "type": "resource",
                "uri": "demo://text/hello.txt",
                "mime_type": "text/plain",
                "text": "Hello from an embedded text resource.",
            },
        ),
        (
            "resource_link",
            {
                "type": "resource_link",
                "uri": "demo://text/hello.txt",
                "name": "hello.txt",
                "mime_type": "text/plain",
                "description": "A small text resource",
            },
        ),
    ],
)
def test_K8_call_json_has_the_content_blocks(
    demo_url: str, tool: str, block: dict[str, Any]
) -> None:
    """K8: call --json lists the typed blocks, bytes as base64 with their MIME type."""
    result = run("call", demo_url, tool, "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["content"] == [block]
    plain = run("call", demo_url, tool).stdout  # the text rendering is unchanged (K3)
    assert plain == payload["text"] + "\n"


@pytest.fixture(scope="module")
def content_url() -> Iterator[str]:
    """Tools returning hostile or broken content blocks."""

    def returning(content: list[dict[str, Any]]) -> Any:
        async def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
            return {"content": content}

        return handler

    def resource(uri: str, mime: str, data: bytes) -> dict[str, Any]:
        return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": _b64(data)}}

    tools = [
        (
            "traversal",
            [
                resource("file:///../../../tmp/evil.sh", "text/x-sh", b"one"),
                resource("x:..%2F..%2Fevil", "image/png", b"two"),
                resource("../.bashrc", "application/x-unknown", b"three"),
                resource("demo://a/%2e%2e", "image/jpeg", b"four"),
                resource("demo://a/-rf\u202e\x1b[2J.png", "image/png", b"five"),
                {"type": "image", "data": _b64(b"six"), "mimeType": "image/png\x1b[31m"},
            ],
        ),
        (
            "broken",
            [
                {"type": "text", "text": "before"},
                {"type": "image", "data": "@@ not base64 @@", "mimeType": "image/png"},
                {"type": "image", "data": _b64(b"fine"), "mimeType": "image/gif"},
                {"type": "video", "data": "x"},
            ],
        ),
    ]
    specs = [
        ({"name": name, "inputSchema": {"type": "object"}}, returning(content))
        for name, content in tools
    ]
    with DemoServer(tools=specs).serve_in_thread() as running:
        yield running.url


def test_K8_a_block_that_does_not_decode_fails_alone(content_url: str) -> None:
    """K8: base64 that does not decode spoils only its block: the call succeeds, the text
    keeps its placeholder, and --json says which block and why."""
    result = run("call", content_url, "broken")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "before\n\n[image omitted: image/png]\n\n[image omitted: image/gif]\n\n[video omitted]\n"
    )
    result = run("call", content_url, "broken", "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["content"] == [
        {"type": "text", "text": "before"},
        {"type": "other", "block_type": "image", "reason": "'data' is not valid base64"},
        {"type": "image", "mime_type": "image/gif", "size": 4, "data": _b64(b"fine")},
        {
            "type": "other",
            "block_type": "video",
            "reason": "a content type this client does not know",
        },
    ]


def test_K8_save_writes_binary_blocks_to_fresh_files(demo_url: str, tmp_path: Path) -> None:
    """K8: --save DIR writes each binary block to a new file named from its kind or URI,
    with the MIME type's extension; a taken name gets a number; stderr says what it wrote."""
    out = tmp_path / "out"  # created on demand
    result = run("call", demo_url, "image", "--save", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[image omitted: image/png]\n"
    assert (out / "image-1.png").read_bytes() == IMAGE_PNG
    assert result.stderr == (
        f"mcpcore: saved image (image/png, {len(IMAGE_PNG)} bytes) to {str(out / 'image-1.png')!r}\n"
    )
    # never overwritten, and never written through a symlink planted on the next name
    (out / "image-1.png").write_bytes(b"mine")
    target = tmp_path / "elsewhere"
    (out / "image-1-2.png").symlink_to(target)
    result = run("call", demo_url, "image", "--save", str(out), "--json")
    assert result.returncode == 0, result.stderr
    assert (out / "image-1.png").read_bytes() == b"mine"
    assert not target.exists()
    assert (out / "image-1-3.png").read_bytes() == IMAGE_PNG
    assert json.loads(result.stdout)["content"][0]["saved_to"] == str(out / "image-1-3.png")
    assert run("call", demo_url, "audio", "--save", str(out)).returncode == 0
    assert (out / "audio-1.wav").read_bytes() == AUDIO_WAV
    assert run("call", demo_url, "embedded_blob", "--save", str(out)).returncode == 0
    assert (out / "data.bin").read_bytes() == bytes(range(16))
    result = run("call", demo_url, "echo", '{"text": "x"}', "--save", str(out))
    assert result.returncode == 0
    assert "nothing to save" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "audio-1.wav",
        "data.bin",
        "image-1-2.png",
        "image-1-3.png",
        "image-1.png",
    ]


def test_K8_save_names_cannot_leave_the_directory(content_url: str, tmp_path: Path) -> None:
    """K8/X1: a server's URIs and MIME types name no path outside DIR, no hidden or
    dash-led file, and reach stderr escaped."""
    out = tmp_path / "deep" / "out"
    result = run("call", content_url, "traversal", "--save", str(out))
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "bashrc.bin",  # "../.bashrc": neither up nor hidden; an unknown type is .bin
        "evil.png",  # "x:..%2F..%2Fevil": decoded, and still only its last segment
        "evil.sh",  # "file:///../../../tmp/evil.sh"
        "image-1.bin",  # a MIME type with an escape in it is not a known one
        "resource-4.jpg",  # "%2e%2e" leaves no name: its kind and number instead
        "rf_2J.png",  # "-rf\u202e\x1b[2J.png": no leading dash, no controls
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["deep"]  # nothing beside DIR
    assert list((tmp_path / "deep").iterdir()) == [out]
    assert (out / "bashrc.bin").read_bytes() == b"three"
    assert (out / "image-1.bin").read_bytes() == b"six"
    assert "\x1b" not in result.stderr and "\\x1b[31m" in result.stderr


def test_save_reports_a_block_it_cannot_write(tmp_path: Path) -> None:
    """K8: a block that cannot be written is reported and the others are still saved
    (in-process: the directory goes away between the check and the write)."""
    import io

    from mcpcore import render_result
    from mcpcore_cli._common import Cli
    from mcpcore_cli._results import save_blocks

    output = render_result(
        {
            "content": [
                {"type": "image", "data": _b64(b"one"), "mimeType": "image/png"},
                {"type": "audio", "data": _b64(b"two"), "mimeType": "audio/wav"},
            ]
        }
    )
    err = io.StringIO()
    saved, complete = save_blocks(Cli(io.StringIO(), err), output, tmp_path / "gone")
    assert (saved, complete) == ({}, False)
    assert err.getvalue().count("mcpcore: cannot save block") == 2
    err = io.StringIO()
    saved, complete = save_blocks(Cli(io.StringIO(), err), output, tmp_path)
    assert complete and sorted(Path(p).name for p in saved.values()) == [
        "audio-1.wav",  # numbered among the audio blocks: the first
        "image-1.png",
    ]


def test_save_dir_that_cannot_be_used_exits_2(demo: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run("call", demo.url, "image", "--save", str(blocker))
    assert result.returncode == 2
    assert "is not a directory" in result.stderr
    assert demo.server.requests_for("tools/call") == []  # refused before calling anything


def test_call_options_anywhere_and_args_from_stdin(demo_url: str) -> None:
    result = run("call", "--json", demo_url, "--timeout", "10", "echo", "-", input='{"text": "x"}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "x"


def test_call_without_arguments(demo_url: str) -> None:
    result = run("call", demo_url, "structured")
    assert result.returncode == 0
    assert json.loads(result.stdout)["greeting"] == "Hello, world!"


def test_call_with_config(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"Demo": {"url": demo_url}, "down": {"url": unused_url()}})
    result = run("call", "--config", config, "demo/echo", '{"text": "via config"}')
    assert result.returncode == 0, result.stderr
    assert result.stdout == "via config\n"
    # a bare name is not enough with --config
    assert run("call", "--config", config, "echo").returncode == 2
    assert run("call", "--config", config, "nosuch/echo").returncode == 2


def test_call_is_error_exits_1(demo_url: str) -> None:
    result = run("call", demo_url, "fail", '{"message": "broken on purpose"}')
    assert result.returncode == 1
    assert result.stdout == "broken on purpose\n"
    assert "reported an error" in result.stderr
    result = run("call", demo_url, "fail", "--json")
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert payload["text"] == "the demo tool failed on purpose"
    assert payload["structured"] is None and payload["is_error"] is True
    assert payload["content"] in ([], [{"type": "text", "text": payload["text"]}])


@pytest.mark.parametrize(
    "args",
    [
        ["call"],
        ["call", "URL"],
        ["call", "URL", "echo", "{}", "extra"],
        ["call", "URL", "echo", "--timeout", "-1"],
        ["call", "URL", "echo", "--timeout", "soon"],
        ["call", "URL", "echo", "--bogus"],
        ["call", "URL", "echo", "-H", "no colon here"],
        ["call", "URL", "echo", "--config", "x.json"],
        ["tools"],
        ["tools", "URL", "--server", "x"],
        ["nonsense"],
        [],
    ],
)
def test_bad_usage_exits_2(demo_url: str, args: list[str]) -> None:
    args = [demo_url if a == "URL" else a for a in args]
    result = run(*args)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "mcpcore" in result.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{bad", "ARGS_JSON is not valid JSON"),
        ("[1, 2]", "ARGS_JSON must be a JSON object, not an array"),
        ('"text"', "ARGS_JSON must be a JSON object, not a string"),
        ("3", "ARGS_JSON must be a JSON object, not a number"),
        ('{"x": NaN}', "ARGS_JSON is not valid JSON"),
    ],
)
def test_invalid_args_json_exits_2(demo_url: str, arguments: str, message: str) -> None:
    result = run("call", demo_url, "echo", arguments)
    assert result.returncode == 2
    assert message in result.stderr


def test_unknown_tool_exits_2(demo_url: str) -> None:
    result = run("call", demo_url, "nope")
    assert result.returncode == 2
    assert "unknown tool 'nope'" in result.stderr


def test_invalid_config_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": [', encoding="utf-8")
    for args in (
        ["call", "--config", str(bad), "a/b"],
        ["tools", "--config", str(bad)],
        ["check", str(bad)],
        ["check", str(tmp_path / "missing.json")],
        ["call", "http://example.com/mcp", "echo"],  # plain http to a non-loopback host
        ["call", "ftp://127.0.0.1/mcp", "echo"],
        ["tools", "http://127.0.0.1:1/mcp", "--name", "bad name"],
    ):
        result = run(*args)
        assert result.returncode == 2, (args, result)
        assert result.stderr.startswith("mcpcore: ")


def test_invalid_config_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "my servers.json"
    bad.write_text('{"mcpServers": [', encoding="utf-8")
    result = run("check", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith(f"mcpcore: {str(bad)!r} is not valid JSON: ")
    assert "mcp.json" not in result.stderr


@pytest.mark.parametrize(
    "document",
    [
        {"servers": {"a": {"url": "https://example.com/mcp"}}},
        {"inputs": [], "servers": {"a": {"url": "https://example.com/mcp"}}},
    ],
)
def test_vscode_servers_key_gets_a_suggestion(tmp_path: Path, document: dict[str, Any]) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    for args in (["check", str(path)], ["tools", "--config", str(path)]):
        result = run(*args)
        assert result.returncode == 2
        assert str(path) in result.stderr
        assert "did you mean 'mcpServers'?" in result.stderr
    path.write_text('{"mcpServer": {}}', encoding="utf-8")
    assert "did you mean" not in run("check", str(path)).stderr


def test_invalid_entry_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"local": {"command": "true"}})
    result = run("call", "--config", config, "local/echo")
    assert result.returncode == 2
    assert result.stderr == (
        "mcpcore: server 'local' is invalid: local MCP servers (command) are not supported yet: "
        "--allow-local starts it\n"
    )


def test_unreachable_server_exits_3_quickly() -> None:
    # Allowed to wait 60 s for the server, it gives up once the connection is refused:
    # it exits long before that (a generous bound, not a measurement), and before
    # run()'s own 30 s limit.
    started = time.monotonic()
    result = run("call", unused_url(), "echo", "--timeout", "60")
    assert result.returncode == 3
    assert time.monotonic() - started < 20
    assert "server 'server' is unavailable" in result.stderr
    assert run("tools", unused_url(), "--timeout", "5").returncode == 3


def test_call_timeout_exits_3(demo_url: str) -> None:
    result = run("call", demo_url, "slow", '{"steps": 20, "delay": 0.5}', "--timeout", "1")
    assert result.returncode == 3
    assert "mcpcore:" in result.stderr


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("inherited", ["default", "ignored"])
@pytest.mark.parametrize("when", ["initialize", "tools/call"])
def test_ctrl_c_cancels_the_call_and_exits_130(demo: Any, inherited: str, when: str) -> None:
    """SIGINT ends the run with 130 at any point after start-up, even when the command was
    started with SIGINT ignored (a background job of a shell without job control, or a
    test run started that way: Python then leaves it ignored, and the call used to run
    its 20 s to the end and exit 0). The server's first request is the sign that the
    command is past start-up; no timing is involved."""
    server: DemoServer = demo.server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpcore_cli",
            "call",
            demo.url,
            "slow",
            '{"steps": 200, "delay": 0.1}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        preexec_fn=_ignore_sigint if inherited == "ignored" else None,
    )
    try:
        server.wait_until_blocking(lambda: server.requests_for(when), timeout=RUN_TIMEOUT)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.endswith(b"mcpcore: interrupted\n"), err
    assert not any("slow: completed" in str(r) for r in server.received)
    if server.requests_for("tools/call"):
        # The call is abandoned on the server: notifications/cancelled, or the session's
        # DELETE on close when it overtakes that notification (a threaded-driver race).
        server.wait_until_blocking(
            lambda: server.cancelled or server.sessions_ended, timeout=RUN_TIMEOUT
        )


def test_progress_on_a_terminal(demo_url: str) -> None:
    status, terminal, out = run_with_pty(
        "call", demo_url, "slow", '{"steps": 6, "delay": 0.25}', on="stderr"
    )
    assert status == 0
    assert out == "slow: completed 6 steps\n"
    assert "server/slow" in terminal
    assert "of 6" in terminal  # the server's progress message
    assert terminal.endswith("\r\x1b[K")  # the line is cleared at the end


def test_no_progress_when_not_a_terminal(demo_url: str) -> None:
    result = run("call", demo_url, "slow", '{"steps": 6, "delay": 0.25}')
    assert result.returncode == 0
    assert result.stderr == ""


def test_colour_only_on_a_terminal_without_no_color(demo_url: str) -> None:
    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout")
    assert status == 0
    assert "\x1b[1mID" in terminal
    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout", env={"NO_COLOR": "1"})
    assert status == 0
    assert "\x1b" not in terminal
    assert "\x1b" not in run("tools", demo_url).stdout


# ---------------------------------------------------------------- local servers, plain http

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_block(language: str, marker: str) -> str:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)
    return next(block for block in blocks if marker in block)


@pytest.fixture
def recipe(tmp_path: Path) -> dict[str, Any]:
    """The README's local-server recipe, as written there, in a directory of its own; the
    command ("python3") is the test's interpreter, first on PATH."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "hello_server.py").write_text(_readme_block("python", "tiny local MCP server"))
    config = plugin / "mcp.json"
    config.write_text(_readme_block("json", '"command"'))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"config": str(config), "env": {"PATH": path}}


def test_local_servers_need_allow_local(recipe: dict[str, Any]) -> None:
    """C6: without --allow-local a command entry is refused with the seed's words to
    the letter, then the flag that starts it as a hint after ': '."""
    result = run("check", recipe["config"], "--json", env=recipe["env"])
    assert result.returncode == 1
    (row,) = json.loads(result.stdout)
    assert row["status"] == "invalid"
    assert row["reason"] == "local MCP servers (command) are not supported yet: --allow-local starts it"
    assert result.stderr == ""
    result = run("check", recipe["config"], env=recipe["env"])
    assert "local MCP servers (command) are not supported yet: --allow-local starts it" in result.stdout


def test_local_server_recipe_from_the_readme(recipe: dict[str, Any]) -> None:
    """C6, S1, S3: the README's recipe runs: check, tools and call with --allow-local."""
    config, env = recipe["config"], recipe["env"]
    result = run("check", config, "--allow-local", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split() == [
        "hello",
        "ready",
        "2025-11-25",
        "(legacy)",
        "1",
        "-",  # F10: no resources offered
        "-",  # nor prompts
    ]
    result = run("tools", "--config", config, "--allow-local", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert [t["id"] for t in json.loads(result.stdout)] == ["hello/hello"]
    result = run(
        "call", "--config", config, "--allow-local", "hello/hello", '{"name": "Ada"}', env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, Ada!\n"


def test_local_server_plugin_root_is_the_files_directory(tmp_path: Path) -> None:
    """--allow-local: a './' command and the working directory are the mcp.json's directory."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "hello_server.py").write_text(_readme_block("python", "tiny local MCP server"))
    script = plugin / "run-hello"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" hello_server.py\n')
    script.chmod(0o755)
    config = write_config(plugin, {"Hello": {"command": "./run-hello"}})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpcore_cli",
            "call",
            "--config",
            config,
            "--allow-local",
            "hello/hello",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=elsewhere,
        timeout=RUN_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, world!\n"
    assert run("call", "http://127.0.0.1:1/mcp", "x", "--allow-local").returncode == 2


def test_allow_http_lifts_the_loopback_rule(tmp_path: Path) -> None:
    """C5: plain http to another host is invalid unless --allow-http (then it is tried;
    192.0.2.1 is a documentation address that never answers)."""
    config = write_config(tmp_path, {"plain": {"url": "http://192.0.2.1:9/mcp"}})
    result = run("check", config, "--json")
    assert json.loads(result.stdout)[0]["status"] == "invalid"
    assert "hint: --allow-http" in result.stderr
    result = run("check", config, "--json", "--allow-http", "--timeout", "1")
    assert result.returncode == 1
    assert json.loads(result.stdout)[0]["status"] == "unavailable"
    assert "hint" not in result.stderr
    result = run("call", "http://192.0.2.1:9/mcp", "echo")
    assert result.returncode == 2
    assert "--allow-http allows it" in result.stderr
    result = run("call", "http://192.0.2.1:9/mcp", "echo", "--allow-http", "--timeout", "1")
    assert result.returncode == 3


# ---------------------------------------------------------------- check


def test_check(demo_url: str, tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "good": {"url": demo_url},
            "down": {"url": unused_url()},
            "plain": {"url": "http://example.com/mcp"},
            "Bad Name": {"url": demo_url},
        },
    )
    result = run("check", config, "--timeout", "10")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "NAME",
        "STATUS",
        "PROTOCOL",
        "TOOLS",
        "RESOURCES",
        "PROMPTS",
        "REASON",
    ]
    rows = {
        line.split()[0]: line.split(None, 6) for line in lines[1:] if not line.startswith("Bad")
    }
    # E1: the demo server speaks a legacy revision (found by the probe's fallback): the
    # era's word is the API's (protocol="legacy", client.era == "legacy")
    assert rows["good"][1:7] == ["ready", "2025-11-25", "(legacy)", "12", "2", "2"]  # F10
    down = next(line for line in lines if line.startswith("down")).split(None, 6)
    assert down[1] == "unavailable" and down[2] == "-" and "connection" in down[6]
    plain = next(line for line in lines if line.startswith("plain")).split(None, 6)
    assert plain[1] == "invalid" and "plain http" in plain[6]
    assert any(line.startswith("Bad Name") and "invalid" in line for line in lines)

    result = run("check", config, "--json", "--timeout", "10")
    assert result.returncode == 1
    rows_json = json.loads(result.stdout)
    assert [r["name"] for r in rows_json] == ["good", "down", "plain", "Bad Name"]
    for row in rows_json:
        assert set(row) == {
            "name", "status", "protocol", "tools", "resources", "prompts", "reason", "changed"
        }
    assert rows_json[0] == {
        "name": "good",
        "status": "ready",
        "protocol": "2025-11-25",
        "tools": 12,
        "resources": 2,
        "prompts": 2,
        "reason": None,
        "changed": [],  # U1: no tool changed since it was pinned
    }
    assert rows_json[1]["resources"] is None and rows_json[1]["prompts"] is None
    assert [r["status"] for r in rows_json] == ["ready", "unavailable", "invalid", "invalid"]


def test_check_all_ready_exits_0(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one": {"url": demo_url}, "two": {"url": demo_url}})
    result = run("check", config)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3


def test_check_probes_concurrently(tmp_path: Path) -> None:
    # Each of three servers answers its first initialize (by closing the connection) only
    # once all three have arrived. Probed concurrently, they all arrive; probed one after
    # the other, the first would wait for the others in vain and the barrier break (after
    # a generous 10 s). An order, not a wall-clock bound.
    all_arrived = threading.Barrier(3, timeout=10)
    broken: list[int] = []

    def holding(index: int) -> Callable[[ReceivedRequest], FaultResponse | None]:
        first = [True]

        def fault(request: ReceivedRequest) -> FaultResponse | None:
            if request.rpc_method != "initialize":
                return None
            if first:  # retries (after the backoff) are refused at once
                first.clear()
                try:
                    all_arrived.wait()
                except threading.BrokenBarrierError:
                    broken.append(index)
            return FaultResponse.close()

        return fault

    servers = [DemoServer(fault=holding(i)) for i in range(3)]
    urls = []
    contexts = [s.serve_in_thread() for s in servers]
    try:
        for context in contexts:
            urls.append(context.__enter__().url)
        config = write_config(tmp_path, {f"s{i}": {"url": u} for i, u in enumerate(urls)})
        result = run("check", config, "--json")
    finally:
        for context in reversed(contexts[: len(urls)]):
            context.__exit__(None, None, None)
    assert result.returncode == 1
    assert [r["status"] for r in json.loads(result.stdout)] == ["unavailable"] * 3
    assert broken == [], "a server answered before every server had been asked"


# ---------------------------------------------------------------- secrets (C8)


def _secret_header() -> list[str]:
    return ["-H", "Authorization: Bearer ${env:SECRET}"]


def test_secret_header_is_sent_but_never_shown(demo: Any) -> None:
    for args in (
        ["-v", "tools", demo.url, *_secret_header()],
        ["tools", demo.url, "-v", "--json", *_secret_header()],
        ["call", demo.url, "echo", '{"text": "hi"}', "-v", *_secret_header()],
        ["call", demo.url, "fail", "-v", *_secret_header()],
        ["call", demo.url, "nope", "-v", *_secret_header()],
        ["call", demo.url, "echo", "{bad", "-v", *_secret_header()],
    ):
        result = run(*args)
        assert result.returncode in (0, 1, 2), result
        assert_no_secret(result)
    authorizations = {r.headers.get("authorization") for r in demo.server.received}
    assert authorizations == {f"Bearer {SECRET}"}  # expanded from the environment and sent


def test_secret_never_shown_when_unreachable() -> None:
    result = run("-v", "call", unused_url(), "echo", "--timeout", "5", *_secret_header())
    assert result.returncode == 3
    assert_no_secret(result)


def test_secret_never_shown_on_http_401() -> None:
    def deny(request: ReceivedRequest) -> FaultResponse:
        return FaultResponse.respond(
            401,
            {"content-type": "text/plain", "www-authenticate": 'Bearer realm="mcp"'},
            b"denied \x1b[2J",
        )

    with DemoServer(fault=deny).serve_in_thread() as running:
        result = run("-v", "call", running.url, "echo", "--timeout", "5", *_secret_header())
        assert result.returncode == 3
        assert_no_secret(result)
        assert "\x1b" not in result.stderr
        result = run("tools", running.url, "-v", "--timeout", "5", *_secret_header())
        assert result.returncode == 3
        assert_no_secret(result)


def test_secret_never_shown_with_config(demo_url: str, tmp_path: Path) -> None:
    header = {"Authorization": "Bearer ${env:SECRET}", "X-Key": "${env:SECRET}"}
    config = write_config(
        tmp_path,
        {
            "good": {"url": demo_url, "headers": header},
            "down": {"url": unused_url(), "headers": header},
            "plain": {"url": "http://example.com/mcp", "headers": header},
            "badheader": {"url": demo_url, "headers": {"Bad Name": "${env:SECRET}"}},
            "linebreak": {"url": demo_url, "headers": {"X-A": "${env:SECRET}\n"}},
        },
    )
    for args in (
        ["-v", "check", config, "--timeout", "5"],
        ["-v", "check", config, "--json", "--timeout", "5"],
        ["-v", "tools", "--config", config, "--timeout", "5"],
        ["-v", "call", "--config", config, "good/echo", '{"text": "ok"}'],
        ["-v", "call", "--config", config, "down/echo", "--timeout", "5"],
        ["-v", "call", "--config", config, "plain/echo"],
        ["-v", "call", "--config", config, "badheader/echo"],
    ):
        result = run(*args)
        assert result.returncode in (0, 1, 2, 3), result
        assert_no_secret(result)


def test_secret_never_shown_with_a_bad_header_argument(demo_url: str) -> None:
    for header in ("Bad Name: ${env:SECRET}", "Accept: ${env:SECRET}", "X-A: ${env:MISSING_VAR}"):
        result = run("-v", "call", demo_url, "echo", "-H", header)
        assert result.returncode == 2, result
        assert_no_secret(result)


# ---------------------------------------------------------------- untrusted text (X1)


HOSTILE = "Clear\x1b[2J screen\x07 bell \x9b31m csi \u202eevil\u202c tab\tend\r\x00"


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {
            "content": [{"type": "text", "text": "out\x1b[31mred\x1b]0;title\x07\nline two"}],
        }

    tools = [
        (
            {"name": "hostile", "description": HOSTILE, "inputSchema": {"type": "object"}},
            handler,
        ),
        ({"name": "bad\x1b[2Jname", "inputSchema": {"type": "object"}}, handler),
    ]
    with DemoServer(tools=tools).serve_in_thread() as running:
        yield running.url


def _raw_controls(text: str) -> set[str]:
    return {
        c
        for c in text
        if (ord(c) < 0x20 and c not in "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u202c"
    }


def test_tool_description_is_escaped(hostile_url: str) -> None:
    result = run("tools", hostile_url)
    assert result.returncode == 0, result.stderr
    assert _raw_controls(result.stdout) == set()
    assert _raw_controls(result.stderr) == set()
    assert "Clear\\x1b[2J screen\\x07 bell \\x9b31m csi \\u202eevil\\u202c" in result.stdout
    # the tool with a hostile name is dropped, and the warning is escaped too
    assert "dropped tool" in result.stderr and "\\x1b[2J" in result.stderr


def test_tool_description_in_json_is_escaped_and_exact(hostile_url: str) -> None:
    result = run("tools", hostile_url, "--json")
    assert result.returncode == 0
    assert _raw_controls(result.stdout) == set()
    assert json.loads(result.stdout)[0]["description"] == HOSTILE


def test_tool_output_is_escaped(hostile_url: str) -> None:
    result = run("call", hostile_url, "hostile")
    assert result.returncode == 0
    assert result.stdout == "out\\x1b[31mred\\x1b]0;title\\x07\nline two\n"
    result = run("call", hostile_url, "hostile", "--json")
    assert _raw_controls(result.stdout) == set()
    assert json.loads(result.stdout)["text"] == "out\x1b[31mred\x1b]0;title\x07\nline two"


def test_check_reason_is_escaped(tmp_path: Path) -> None:
    def broken(request: ReceivedRequest) -> FaultResponse:
        return FaultResponse.respond(500, {"content-type": "text/plain"}, b"boom\x1b[2J\x9b")

    with DemoServer(fault=broken).serve_in_thread() as running:
        config = write_config(tmp_path, {"broken": {"url": running.url}})
        result = run("check", config, "--timeout", "5")
    assert result.returncode == 1
    assert "unavailable" in result.stdout
    assert _raw_controls(result.stdout + result.stderr) == set()


# ---------------------------------------------------------------- the official Python SDK server


@pytest.mark.realpeer
def test_against_the_sdk_server() -> None:
    with sdk_server("stateful-sse") as peer:
        result = run("tools", peer.url, "--json", "--name", "sdk")
        assert result.returncode == 0, result.stderr
        ids = {t["id"] for t in json.loads(result.stdout)}
        assert {"sdk/echo", "sdk/add", "sdk/fail", "sdk/slow"} <= ids

        result = run("tools", peer.url)
        assert result.returncode == 0
        assert "server/echo" in result.stdout

        result = run("call", peer.url, "echo", '{"text": "from the SDK"}')
        assert result.returncode == 0, result.stderr
        assert result.stdout == "from the SDK\n"

        result = run("call", peer.url, "add", '{"a": 1, "b": 2}', "--json")
        assert result.returncode == 0, result.stderr
        payload = json.loads(result.stdout)
        assert payload["is_error"] is False and payload["structured"] is not None

        result = run("call", peer.url, "fail")
        assert result.returncode == 1
        assert "always fails" in result.stdout

        assert run("call", peer.url, "echo", "[]").returncode == 2
        assert run("call", peer.url, "no_such_tool").returncode == 2


@pytest.mark.realpeer
def test_check_with_the_sdk_server(demo_url: str, tmp_path: Path) -> None:
    with sdk_server("stateless-json") as peer:
        config = write_config(tmp_path, {"sdk": {"url": peer.url}, "demo": {"url": demo_url}})
        result = run("check", config, "--json")
    assert result.returncode == 0, result.stderr
    assert [r["status"] for r in json.loads(result.stdout)] == ["ready", "ready"]
