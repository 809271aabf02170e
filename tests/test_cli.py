"""The ``mcpcore`` command line (X1), driven as a subprocess.

Every run goes through ``python -m mcpcore_cli`` with a bounded timeout,
against the bundled demo server (in this process, on a background thread) or
the official Python SDK server (``tests/peers.py``). No sleeps: waits are on
conditions the demo server records.
"""

from __future__ import annotations

import json
import os
import pty
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

from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest, ToolContext
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
    assert "connected as server 'demo': 11 tools" in out
    for name in DEFAULT_TOOLS:
        assert f"> call demo/{name} " in out
        assert f"demo/{name} " in out.split("> call", 1)[0]  # in the table
    assert "Hello from mcpcore!" in out
    assert 'structured: {"sum": 5}' in out
    assert "error (expected): this tool always fails (on purpose)" in out
    assert "progress 1/3 step 1 of 3" in out and "progress 3/3 step 3 of 3" in out
    assert "[image omitted: image/png]" in out
    assert "called 11 tools; client closed and server stopped" in out
    assert "\x1b" not in out  # not a terminal: no colour


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("mcpcore ")
    result = run("--help")
    assert result.returncode == 0
    for command in ("demo", "tools", "call", "check"):
        assert command in result.stdout
    assert run("call", "--help").returncode == 0


# ---------------------------------------------------------------- tools


def test_tools_table(demo_url: str) -> None:
    result = run("tools", demo_url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "RO", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == [f"server/{name}" for name in DEFAULT_TOOLS]
    assert rows["server/echo"].split()[1] == "ro"
    assert rows["server/fail"].split()[1] != "ro"
    # aligned: every description starts in the same column
    column = lines[0].index("DESCRIPTION")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines[1:])
    # cut to the terminal width (COLUMNS=100)
    assert all(len(line) <= 100 for line in lines)
    assert rows["server/slow"].endswith("…")


def test_tools_table_is_cut_to_the_terminal_width(demo_url: str) -> None:
    result = run("tools", demo_url, env={"COLUMNS": "50"})
    assert result.returncode == 0
    assert all(len(line) <= 50 for line in result.stdout.splitlines()[1:])


def test_tools_json_and_name(demo_url: str) -> None:
    result = run("tools", demo_url, "--json", "--name", "Demo")
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)
    assert [t["id"] for t in tools] == [f"demo/{name}" for name in DEFAULT_TOOLS]
    for tool in tools:
        assert set(tool) == {"id", "name", "description", "parameters", "read_only"}
    echo = tools[0]
    assert echo["name"] == "echo"
    assert echo["read_only"] is True
    assert echo["parameters"]["required"] == ["text"]
    assert tools[DEFAULT_TOOLS.index("fail")]["read_only"] is False


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


# ---------------------------------------------------------------- call


def test_call_prints_text(demo_url: str) -> None:
    result = run("call", demo_url, "echo", '{"text": "hello\\nworld"}')
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello\nworld\n"
    assert result.stderr == ""


def test_call_json(demo_url: str) -> None:
    result = run("call", demo_url, "add", '{"a": 2, "b": 40}', "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"text": "42", "structured": {"sum": 42}, "is_error": False}


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
    assert payload == {
        "text": "the demo tool failed on purpose",
        "structured": None,
        "is_error": True,
    }


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
    assert "unknown tool 'server/nope'" in result.stderr


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


def test_invalid_entry_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"local": {"command": "true"}})
    result = run("call", "--config", config, "local/echo")
    assert result.returncode == 2
    assert (
        "server 'local' is invalid: local MCP servers (command) are not supported" in result.stderr
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


def test_ctrl_c_cancels_the_call_and_exits_130(demo: Any) -> None:
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
    )
    try:
        server.wait_until_blocking(lambda: server.requests_for("tools/call"), timeout=RUN_TIMEOUT)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=RUN_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert b"interrupted" in err
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
    assert lines[0].split() == ["NAME", "STATUS", "TOOLS", "REASON"]
    rows = {
        line.split()[0]: line.split(None, 3) for line in lines[1:] if not line.startswith("Bad")
    }
    assert rows["good"][1:3] == ["ready", "11"]
    assert rows["down"][1] == "unavailable" and "connection" in rows["down"][3]
    assert rows["plain"][1] == "invalid" and "plain http" in rows["plain"][3]
    assert any(line.startswith("Bad Name") and "invalid" in line for line in lines)

    result = run("check", config, "--json", "--timeout", "10")
    assert result.returncode == 1
    rows_json = json.loads(result.stdout)
    assert [r["name"] for r in rows_json] == ["good", "down", "plain", "Bad Name"]
    for row in rows_json:
        assert set(row) == {"name", "status", "tools", "reason"}
    assert rows_json[0] == {"name": "good", "status": "ready", "tools": 11, "reason": None}
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
