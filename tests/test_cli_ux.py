"""What a newcomer hit with the command line (issue 37, points 5, 6, 9 and 11).

- Every command declares the same capabilities, so ``tools`` lists what ``call``
  can call (server-everything's ``trigger-elicitation-request``).
- The terminal form asks ``[y]es, [n]o, [c]ancel`` again on Enter, a typo or a
  field's answer typed too early: only ``n`` declines.
- A missing local command, an HTML 404, a 401 to credentials the user gave and a
  VS Code ``mcp.json`` are each said in the user's terms.
- ``prompt`` takes ``key=value``; ``--log-level`` prints the server's log
  messages (escaped); ``--max-message-size`` sets the message bound.

The CLI runs as a subprocess, as a person runs it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client
from mcpcore import ConfigError, Elicitation
from mcpcore_cli._ask import TerminalAsker
from mcpcore_demo import DemoServer
from peers import Peer, everything_server, peers_installed

RUN_TIMEOUT = 60.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "COLUMNS": "100"},
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
    )


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with DemoServer().serve_in_thread() as running:
        yield running.url


# --- point 5: one set of capabilities -------------------------------------------------


@pytest.fixture(scope="module")
def everything() -> Iterator[Peer]:
    if not peers_installed():
        pytest.fail(
            "JavaScript MCP peers are not installed (scripts/install_peers.sh)", pytrace=False
        )
    with everything_server() as peer:
        yield peer


@pytest.mark.realpeer
def test_Q1_tools_lists_what_call_can_call_on_server_everything(everything: Peer) -> None:
    """Q1, T7: ``tools`` declares elicitation as ``call`` does, so server-everything
    lists its elicitation tools to both; ``call`` reaches the tool and, with no
    terminal, declines the question."""
    listed = run("tools", everything.url, "--json")
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)}
    assert "trigger-elicitation-request" in names
    shown = run("tools", everything.url, "trigger-elicitation-request")
    assert shown.returncode == 0, shown.stderr
    called = run("call", everything.url, "trigger-elicitation-request", "--no-input")
    assert called.returncode == 0, called.stderr
    assert "declined" in called.stdout and "declined (no terminal, or --no-input)" in called.stderr


# --- point 6: the form asks again -------------------------------------------------------

FORM = Elicitation(
    "srv", None, "form", "How many?", {"properties": {"n": {"type": "integer"}}, "required": ["n"]}
)
URL = Elicitation(
    "srv", None, "url", "Sign in", {}, url="https://auth.example.test/x", elicitation_id="u1"
)


def ask(question: Elicitation, typed: str) -> tuple[str, dict[str, Any] | None, str]:
    screen = io.StringIO()
    answer = TerminalAsker(io.StringIO(typed), screen, interactive=True)(question)
    return answer.action, answer.content, screen.getvalue()


@pytest.mark.parametrize("first", ["", "yes please", "7"])
def test_Q6_enter_a_typo_or_a_field_typed_early_asks_again(first: str) -> None:
    """Q6: at ``[y]es, [n]o, [c]ancel`` anything but y, n or c asks again, never declines."""
    action, content, shown = ask(FORM, f"{first}\ny\n7\n")
    assert (action, content) == ("accept", {"n": 7})
    assert shown.count("Answer it? [y]es, [n]o, [c]ancel: ") == 2
    assert "answer y (yes), n (no) or c (cancel)" in shown
    action, _, shown = ask(URL, f"{first}\ny\n")
    assert action == "accept" and shown.count("Go there? [y]es, [n]o, [c]ancel: ") == 2


def test_Q6_only_n_declines_and_endless_wrong_answers_cancel() -> None:
    assert ask(FORM, "\nn\n")[0] == "decline"
    assert ask(FORM, "no\n")[0] == "decline"
    assert ask(URL, "\nn\n")[0] == "decline"
    action, _, shown = ask(FORM, "x\n" * 10)
    assert action == "cancel" and shown.count("Answer it?") == 5


# --- point 9: wording -------------------------------------------------------------------


def test_S1_a_missing_local_command_is_named_not_found_on_path(tmp_path: Path) -> None:
    """S1: a command that is not there is said so by name, never with the entry's env."""
    config = tmp_path / "mcp.json"
    entries = {
        "bare": {"command": "mcpcore-no-such-command", "env": {"TOKEN": "hush-env-value"}},
        "path": {"command": str(tmp_path / "no-such-tool")},
        "nowhere": {"command": sys.executable, "cwd": str(tmp_path / "gone")},
    }
    config.write_text(json.dumps({"mcpServers": entries}))
    result = run("check", str(config), "--allow-local", "--json", "--timeout", "10")
    reasons = {row["name"]: row["reason"] for row in json.loads(result.stdout)}
    assert reasons["bare"] == (
        "could not start the server: command 'mcpcore-no-such-command' was not found on PATH"
    )
    assert reasons["path"] == (
        f"could not start the server: command {str(tmp_path / 'no-such-tool')!r} was not found"
    )
    assert (
        reasons["nowhere"]
        == "could not start the server: its working directory (cwd) does not exist"
    )
    assert "hush-env-value" not in result.stdout + result.stderr
    tools = run(
        "tools", "--config", str(config), "--server", "bare", "--allow-local", "--timeout", "10"
    )
    assert tools.returncode == 3
    assert "command 'mcpcore-no-such-command' was not found on PATH" in tools.stderr


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.anyio
async def test_S1_the_library_says_the_same_on_each_driver(driver: str) -> None:
    server = {"command": "mcpcore-no-such-command"}
    async with open_client(driver, "loc", server, allow_local=True, startup_timeout=10) as face:
        availability = await face.ready(10)
    assert not availability.ok
    assert "command 'mcpcore-no-such-command' was not found on PATH" in (availability.reason or "")


PAGE = (
    "<!DOCTYPE html>\n<html><head><title>404 &amp; Not Found</title><style>p{}</style></head>"
    "<body>" + "<p>lorem ipsum dolor sit amet</p>" * 40 + "</body></html>"
)


@contextlib.contextmanager
def html_server(status: int) -> Iterator[str]:
    """A plain web server on loopback answering every request with ``status`` and an HTML page."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = PAGE.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            if status == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="x"')
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, name="html-server")
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_H7_an_html_404_is_summed_up_and_the_path_questioned() -> None:
    """H7: the status, the page's title, and where an MCP endpoint usually is."""
    with html_server(404) as base:
        result = run("tools", base + "/", "--timeout", "10")
    assert result.returncode == 3
    assert result.stderr == (
        f"mcpcore: server 'server' is unavailable: {base}/ answered HTTP 404: 404 & Not Found "
        f"(an HTML page); check the URL's path (often /mcp: {base}/mcp)\n"
    )


def test_H7_status_reason_words() -> None:
    from mcpcore.base._failure import status_reason

    url = "https://example.test/api"
    assert status_reason(url, 500, "boom") == f"{url} answered HTTP 500: boom"
    assert status_reason(url, 502, "<html><body><p>Bad\x1b[2J gateway</p></body></html>") == (
        f"{url} answered HTTP 502: Bad\\x1b[2J gateway (an HTML page)"
    )
    assert status_reason("https://example.test/mcp", 404, "") == (
        "https://example.test/mcp answered HTTP 404; check the URL's path: is this the "
        "server's MCP endpoint?"
    )
    long_title = "<title>" + "x" * 300 + "</title>"
    assert len(status_reason(url, 500, long_title)) < len(url) + 120


def test_A3_a_401_to_credentials_the_user_gave_is_said_plainly() -> None:
    """A3: with an API-key header (or Authorization) given, a 401 is the user's
    credential refused, not a reason to run ``mcpcore login``; no value is shown."""
    with html_server(401) as base:
        url = base + "/mcp"
        keyed = run("tools", url, "-H", "X-API-Key: hush-key-value", "--timeout", "10")
        bearer = run("tools", url, "-H", "Authorization: Bearer hush-token", "--timeout", "10")
        bare = run("tools", url, "--timeout", "10")
    for result, name in ((keyed, "X-API-Key"), (bearer, "Authorization")):
        assert result.returncode == 3
        assert f"{url} answered HTTP 401" in result.stderr
        assert f"the server did not accept the credentials given in {name!r}" in result.stderr
        assert "mcpcore login" not in result.stderr and "hush" not in result.stderr
    assert "run `mcpcore login" in bare.stderr  # nothing given: signing in is the way


def test_C1_mcp_hub_from_file_suggests_mcpservers_for_a_vscode_file(tmp_path: Path) -> None:
    """C1: the library says what the command line says for VS Code's ``servers`` key."""
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps({"inputs": [], "servers": {"a": {"url": "https://example.test/mcp"}}})
    )
    for hub in (mcpcore_threaded.McpHub, mcpcore_anyio.McpHub):
        with pytest.raises(ConfigError, match="did you mean 'mcpServers'"):
            hub.from_file(path)
    path.write_text(json.dumps({"mcpServer": {}}))
    with pytest.raises(ConfigError) as refused:
        mcpcore_threaded.McpHub.from_file(path)
    assert "did you mean" not in str(refused.value)


# --- point 11: prompt key=value, --log-level, --max-message-size -------------------------


def test_F10_prompt_takes_key_value_pairs_as_call_does(demo_url: str) -> None:
    got = run("prompt", demo_url, "translate", "text=hi there", "language=German")
    assert got.returncode == 0, got.stderr
    assert got.stdout == "user: Translate this into German:\n\nhi there\n"
    one = run("prompt", demo_url, "summarize", "text=x")
    assert one.returncode == 0 and one.stdout == "user: Summarize this in one sentence:\n\nx\n"
    twice = run("prompt", demo_url, "summarize", "text=a", "text=b")
    assert twice.returncode == 2 and "argument 'text' is given twice" in twice.stderr
    mixed = run("prompt", demo_url, "translate", "text=a", "German")
    assert mixed.returncode == 2 and "argument 2 after NAME is not key=value" in mixed.stderr


def test_F8_log_level_prints_the_servers_log_messages_escaped(demo_url: str) -> None:
    """F8, X1: ``--log-level`` asks for the messages and prints each, escaped, on stderr."""
    words = ("call", demo_url, "log", "level=info", "data=hi\x1b[31m there")
    shown = run(*words, "--log-level", "debug")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "logged at info\n"
    assert "mcpcore: server 'server' log info mcpcore-demo: hi\\x1b[31m there\n" in shown.stderr
    assert "\x1b" not in shown.stderr
    above = run(*words, "--log-level", "error")  # asked from error up: info is not sent
    assert above.returncode == 0 and "log info" not in above.stderr
    assert "log info" not in run(*words).stderr  # not asked: not printed
    bad = run(*words, "--log-level", "loud")
    assert bad.returncode == 2 and "--log-level" in bad.stderr


def test_P6_max_message_size_sets_the_bound_and_is_named_when_it_is_overrun(demo_url: str) -> None:
    """P6: ``--max-message-size`` is the bound on one message: a small one refuses the
    server's answers and says which option lifts it."""
    small = run("tools", demo_url, "--max-message-size", "100")
    assert small.returncode == 3
    assert "exceeds the max_message_size limit of 100" in small.stderr
    assert "--max-message-size SIZE raises the limit" in small.stderr
    assert "HttpLimits" not in small.stderr  # the library's word for it is not the CLI's
    roomy = run("call", demo_url, "log", "level=info", "--max-message-size", "64K")
    assert roomy.returncode == 0 and roomy.stdout == "logged at info\n"
    assert run("tools", demo_url, "--max-message-size", "lots").returncode == 2


def test_P6_max_message_size_raises_every_bound_a_message_meets() -> None:
    """A size above the defaults lifts the SSE line and resource-read bounds with it."""
    import argparse

    from mcpcore_cli._common import Cli
    from mcpcore_cli._declared import client_hooks, message_size

    size = message_size("200M")
    assert size == 200 * 1024 * 1024
    hooks = client_hooks(
        Cli(io.StringIO(), io.StringIO()), argparse.Namespace(max_message_size=size), None
    )
    limits = hooks["limits"]
    assert limits.max_message_size == size
    assert limits.max_sse_line > size and limits.max_read_size >= size


def test_F8_a_message_below_the_asked_level_is_not_printed_even_when_the_server_sends_it() -> None:
    """F8: ``--log-level error`` prints error and above only. A server may send a
    message before the client's ``logging/setLevel`` reached it (the call can
    overtake it), so what is below the asked level is left out on the client."""
    import types

    from mcpcore import LogMessage
    from mcpcore_cli._declared import _LogPrinter

    err = io.StringIO()
    cli = types.SimpleNamespace(stderr=err, redact=lambda text: text)
    printer = _LogPrinter(cli, "error")  # type: ignore[arg-type]
    printer(LogMessage(server="s", level="info", logger=None, data="early"))
    printer(LogMessage(server="s", level="critical", logger=None, data="late"))
    printer(LogMessage(server="s", level="whatever", logger=None, data="odd"))
    assert err.getvalue() == (
        "mcpcore: server 's' log critical: late\nmcpcore: server 's' log whatever: odd\n"
    )
