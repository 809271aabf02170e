"""The ``mcpcore`` command line and tool arguments, and its small words (K7, K10).

Driven as a subprocess (``python -m mcpcore_cli``) against the bundled demo
server, as ``tests/test_cli.py`` does: ``tools URL TOOL`` and the ARGS column,
``call`` with ``key=value`` pairs and its check against the input schema before
anything is sent, unknown tools and servers with a hint that can be pasted,
``call --json`` errors as JSON, ``check``'s timeout, and the help texts.
"""

from __future__ import annotations

import json
import shlex
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpcore_demo import DemoServer
from raw_servers import read_request, socket_server
from test_cli import run, run_with_pty, unused_url, visible, write_config


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with DemoServer().serve_in_thread() as running:
        yield running.url


@pytest.fixture
def demo() -> Iterator[Any]:
    """A fresh demo server, to see what it received."""
    with DemoServer().serve_in_thread() as running:
        yield running


def _hinted_command(stderr: str) -> list[str]:
    """The command a hint gives, split as a shell would (it must paste as it is)."""
    line = next(line for line in stderr.splitlines() if line.startswith("mcpcore: hint: "))
    command = line.split(": ", 3)[-1]
    assert command.startswith("mcpcore "), line
    return shlex.split(command)[1:]


# ---------------------------------------------------------------- tools URL TOOL


def test_tools_url_tool_shows_its_parameters(demo_url: str) -> None:
    """issue 25 item 6: names, types, whether required, descriptions."""
    result = run("tools", demo_url, "echo")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("server/echo") and "(read-only)" in lines[0]
    assert lines[1].strip() == "Return the given text unchanged."
    header = next(i for i, line in enumerate(lines) if line.startswith("PARAMETER"))
    assert lines[header].split() == ["PARAMETER", "TYPE", "REQUIRED", "DESCRIPTION"]
    assert lines[header + 1].split() == ["text", "string", "yes", "Text", "to", "echo"]

    result = run("tools", demo_url, "slow", "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert described["id"] == "server/slow"
    assert described["parameter_list"] == [
        {
            "name": "steps",
            "type": "integer",
            "required": False,
            "description": None,
            "default": "3",
        },
        {
            "name": "delay",
            "type": "number",
            "required": False,
            "description": None,
            "default": "0.05",
        },
    ]


def test_tools_config_tool_shows_its_parameters(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"demo": {"url": demo_url}})
    result = run("tools", "--config", config, "demo/add")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    assert ["a", "number", "yes"] in rows and ["b", "number", "yes"] in rows


def test_tools_url_tool_unknown_suggests(demo_url: str) -> None:
    result = run("tools", demo_url, "ech")
    assert result.returncode == 2
    assert "unknown tool 'ech'; did you mean 'echo'?" in result.stderr


def test_tools_table_has_a_signature_column_where_it_fits(demo_url: str) -> None:
    """issue 25 item 6: ARGS (a ? marks an optional argument) when the terminal is wide
    enough to keep room for the description; left out when it is not."""
    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout", env={"COLUMNS": "120"})
    assert status == 0
    lines = visible(terminal)
    assert lines[0].split() == ["ID", "RO", "ARGS", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["server/add"].split()[2:4] == ["a,", "b"]
    assert rows["server/slow"].split()[1:3] == ["steps?,", "delay?"]
    assert all(len(line) <= 120 for line in lines)

    status, terminal, _ = run_with_pty("tools", demo_url, on="stdout", env={"COLUMNS": "60"})
    assert status == 0
    lines = visible(terminal)
    assert lines[0].split() == ["ID", "RO", "DESCRIPTION"]
    assert all(len(line) <= 60 for line in lines)


# ---------------------------------------------------------------- call: arguments


@pytest.mark.parametrize(
    ("tool", "words", "expected"),
    [
        ("add", ["a=2", "b=3"], "5"),
        ("add", ["a=2.5", "b=-1e1"], "-7.5"),
        ("echo", ["text=42"], "42"),  # a string parameter takes the text as it is
        ("echo", ["text=a=b c"], "a=b c"),
        ("echo", ['text:="quoted"'], "quoted"),
        ("structured", ["name=Ada"], "Hello, Ada!"),
    ],
)
def test_K10_call_takes_key_value_pairs_typed_by_the_schema(
    demo_url: str, tool: str, words: list[str], expected: str
) -> None:
    result = run("call", demo_url, tool, *words)
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


def test_K10_key_value_integer_and_boolean_reach_the_server_typed(demo: Any) -> None:
    result = run("call", demo.url, "slow", "steps=1", "delay=0", "--json")
    assert result.returncode == 0, result.stderr
    (call,) = demo.server.requests_for("tools/call")
    assert call.json["params"]["arguments"] == {"steps": 1, "delay": 0}
    assert type(call.json["params"]["arguments"]["steps"]) is int


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["a=x", "b=1"], "argument 'a' must be a number"),
        (["a=1", "a=2", "b=1"], "argument 'a' is given twice"),
        (["a=1", "oops"], "argument 2 after TOOL is not key=value"),
        (["oops"], "the word after TOOL is neither ARGS_JSON (a JSON object such as '{\"a\": 1}')"),
        (["a:=[1", "b=1"], "argument 'a': the value after ':=' is not valid JSON"),
        (['{"a": "x", "b": 1}'], "argument 'a' must be a number, not a string"),
        (['{"a": 1}'], "missing required argument 'b'"),
        (["a=1", "b=2", "c=3"], "the tool takes no argument 'c' (it takes: a, b)"),
    ],
)
def test_K10_call_checks_arguments_before_sending(
    demo: Any, words: list[str], message: str
) -> None:
    """issue 25 item 6: the field is named, exit 2, and nothing is sent; the hint shows
    the tool's parameters (a command that runs as pasted)."""
    result = run("call", demo.url, "add", *words)
    assert result.returncode == 2
    assert message in result.stderr
    assert demo.server.requests_for("tools/call") == []
    if "TOOL" not in message:
        hinted = _hinted_command(result.stderr)
        assert hinted == ["tools", demo.url, "add"]
        shown = run(*hinted)
        assert shown.returncode == 0 and "PARAMETER" in shown.stdout


def test_K10_no_check_sends_the_arguments_as_given(demo: Any) -> None:
    result = run("call", demo.url, "add", '{"a": "x", "b": 1}', "--no-check")
    assert result.returncode == 1  # the server's own answer: isError
    assert len(demo.server.requests_for("tools/call")) == 1


def test_K10_call_check_with_config(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"demo": {"url": demo_url}})
    result = run("call", "--config", config, "demo/add", "a=2")
    assert result.returncode == 2
    assert "missing required argument 'b'" in result.stderr
    assert _hinted_command(result.stderr) == [
        "tools",
        "--config",
        config,
        "--server",
        "demo",
        "demo/add",
    ]
    result = run("call", "--config", config, "demo/add", "a=2", "b=2")
    assert result.returncode == 0 and result.stdout == "4\n"


def test_call_help_describes_its_positionals() -> None:
    text = run("call", "--help").stdout
    for word in ("URL", "TOOL", "ARGS_JSON", "key=value"):
        assert any(line.strip().startswith(word) for line in text.splitlines()), word
    assert "key:=JSON" in text
    assert "--no-check" in text


# ---------------------------------------------------------------- unknown tools (K7)


def test_K7_unknown_tool_with_a_url_suggests_and_hints_a_command(demo_url: str) -> None:
    """issue 25 item 7: suggestions in the URL form, said as names; the hint is a command
    that runs as pasted; no "?;"."""
    for written, meant in (("Echo", "echo"), ("ech", "echo"), ("add_", "add")):
        result = run("call", demo_url, written)
        assert result.returncode == 2
        assert f"mcpcore: unknown tool {written!r}; did you mean {meant!r}?\n" in result.stderr
        assert "?;" not in result.stderr
    hinted = _hinted_command(result.stderr)
    assert hinted == ["tools", demo_url]
    listed = run(*hinted)
    assert listed.returncode == 0 and "server/add" in listed.stdout


def test_K7_qualified_tool_with_a_url_is_not_qualified_twice(demo_url: str) -> None:
    result = run("call", demo_url, "server/Add", "a=1", "b=2")
    assert result.returncode == 2
    assert "server/server" not in result.stderr
    assert "unknown tool 'server/Add'; did you mean 'server/add'?" in result.stderr
    result = run("call", demo_url, "server/add", "a=1", "b=2")
    assert result.returncode == 0 and result.stdout == "3\n"
    result = run("call", demo_url, "--name", "py", "py/echo", "text=hi")
    assert result.returncode == 0 and result.stdout == "hi\n"


def test_K7_unknown_server_is_named(demo_url: str, tmp_path: Path) -> None:
    result = run("call", demo_url, "nosuch/echo")
    assert result.returncode == 2
    assert "no server 'nosuch'" in result.stderr and "did you mean 'echo'?" in result.stderr
    assert "unknown tool" not in result.stderr

    config = write_config(tmp_path, {"demo": {"url": demo_url}})
    result = run("call", "--config", config, "nosuch/echo")
    assert result.returncode == 2
    assert f"no server 'nosuch' in {config!r} (its servers: 'demo')" in result.stderr
    assert _hinted_command(result.stderr) == ["check", config]


def test_K7_unknown_tool_with_config_suggests_and_hints(demo_url: str, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"demo": {"url": demo_url}})
    result = run("call", "--config", config, "demo/ech")
    assert result.returncode == 2
    assert "unknown tool 'demo/ech'; did you mean 'demo/echo'?\n" in result.stderr
    hinted = _hinted_command(result.stderr)
    assert hinted == ["tools", "--config", config, "--server", "demo"]
    assert "demo/echo" in run(*hinted).stdout


# ---------------------------------------------------------------- call --json errors


def test_call_json_prints_a_json_error_on_a_transport_error() -> None:
    """issue 25 item 7: a script always gets JSON on stdout."""
    result = run("call", unused_url(), "echo", "--json", "--timeout", "5")
    assert result.returncode == 3
    payload = json.loads(result.stdout)
    assert payload["exit_status"] == 3
    assert payload["error"]["kind"] == "unavailable"
    assert "unavailable" in payload["error"]["message"]


def test_call_json_prints_a_json_error_on_a_timeout(demo_url: str) -> None:
    result = run(
        "call", demo_url, "slow", '{"steps": 50, "delay": 0.2}', "--json", "--timeout", "0.5"
    )
    assert result.returncode == 3
    payload = json.loads(result.stdout)
    assert payload["error"]["kind"] == "timeout"
    assert payload["exit_status"] == 3


def test_call_json_prints_a_json_error_on_bad_usage_and_unknown_tools(demo_url: str) -> None:
    for args, kind in (
        (["nope"], "unknown_tool"),
        (["add", "a=x", "b=1"], "invalid_arguments"),
        (["add", "{nope"], "usage"),
    ):
        result = run("call", demo_url, *args, "--json")
        assert result.returncode == 2
        assert json.loads(result.stdout)["error"]["kind"] == kind
    # A tool's own error is its result, as before (one JSON object, not two).
    result = run("call", demo_url, "fail", "--json")
    assert result.returncode == 1 and json.loads(result.stdout)["is_error"] is True


# ---------------------------------------------------------------- check


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A server that reads each request and never answers (until the test ends)."""
    done = threading.Event()

    def silent(conn: socket.socket) -> None:
        read_request(conn)
        done.wait(10)

    with socket_server(silent) as (port, _):
        yield f"http://127.0.0.1:{port}/mcp"
        done.set()


def test_check_says_what_it_waited_for_in_the_given_seconds(
    silent_url: str, tmp_path: Path
) -> None:
    """issue 25 item 7: not "still starting after 4.92255 s"."""
    config = write_config(tmp_path, {"quiet": {"url": silent_url}})
    result = run("check", config, "--json", "--timeout", "1")
    assert result.returncode == 1
    (row,) = json.loads(result.stdout)
    assert row["reason"] == (
        "not ready within 1 s: still connecting, or listing its tools (--timeout S waits longer)"
    )


# ---------------------------------------------------------------- help and words


def test_login_usage_shows_name_and_auth_help_says_what_status_is() -> None:
    assert "[--name NAME]" in run("login", "--help").stdout
    text = run("auth", "--help").stdout
    assert "status  status" not in " ".join(text.split(" " * 3))
    assert not any(line.split() == ["status", "status"] for line in text.splitlines())
    assert "show the servers signed in to" in text
