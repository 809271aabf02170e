"""A placeholder in another tool's syntax, sent as written with a warning (issue 37 point 3, C7).

``${VAR}`` (Claude Code's syntax), a shell's ``$VAR`` and a ``${env:VAR`` missing
its brace used to reach the server literally without a word. They still pass
through unchanged (C7), and the command line now shows one warning per entry,
naming the header and the placeholder, never the header's value nor the
variable's (C8): with ``-H`` against the demo server (which records the headers
it received) and in ``mcpcore check`` against the official SDK's server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpcore_demo import DemoServer
from peers import sdk_server
from test_cli import run, write_config

SECRET_VALUE = "tok-5e1f-not-to-be-shown"


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "WARNING: mcpcore.config" in line]


@pytest.mark.realpeer
def test_C7_check_warns_about_a_placeholder_it_leaves_as_written(tmp_path: Path) -> None:
    """``mcpcore check`` against the SDK server: an entry whose header holds Claude
    Code's ``${API_TOKEN}`` is warned about once, naming the header and the
    placeholder, never the header's value nor the variable's; the server is still
    probed (the header is sent as written)."""
    with sdk_server("stateless-json") as running:
        config = write_config(
            tmp_path,
            {
                "sdk": {
                    "url": running.url,
                    "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Trace": "on"},
                },
                "plain": {"url": running.url, "headers": {"X-Key": "${env:API_TOKEN}"}},
            },
        )
        result = run("check", config, env={"API_TOKEN": SECRET_VALUE})
    assert result.returncode == 0, result.stderr
    assert [line.split()[:2] for line in result.stdout.splitlines()[1:]] == [
        ["sdk", "ready"],
        ["plain", "ready"],
    ]
    assert _warnings(result.stderr) == [
        "mcpcore: WARNING: mcpcore.config: server 'sdk': header 'Authorization' holds "
        "`${API_TOKEN}`, which is not expanded; did you mean `${env:API_TOKEN}`?"
    ]
    assert SECRET_VALUE not in result.stderr + result.stdout
    assert "Bearer" not in result.stderr


@pytest.fixture
def demo() -> Iterator[Any]:
    """The demo server, to see the headers it received."""
    with DemoServer().serve_in_thread() as running:
        yield running


@pytest.mark.parametrize(
    ("value", "note"),
    [
        (
            "$API_TOKEN",
            "holds `$API_TOKEN`, which is not expanded; did you mean `${env:API_TOKEN}`?",
        ),
        (
            "Bearer ${env:API_TOKEN",
            "holds `${env:API_TOKEN` without its closing '}', so it is not expanded; "
            "did you mean `${env:API_TOKEN}`?",
        ),
        (
            "Bearer ${API_TOKEN:-none}",
            "holds `${API_TOKEN:-…}`, which is not expanded; did you mean `${env:API_TOKEN}`?",
        ),
    ],
)
def test_C7_a_header_given_with_h_is_warned_about_and_sent_as_written(
    demo: Any, value: str, note: str
) -> None:
    result = run(
        "call", demo.url, "echo", "text=hi", "-H", f"X-Api-Key: {value}",
        env={"API_TOKEN": SECRET_VALUE},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert _warnings(result.stderr) == [
        f"mcpcore: WARNING: mcpcore.config: server 'server': header 'X-Api-Key' {note}"
    ]
    assert SECRET_VALUE not in result.stderr and "Bearer" not in result.stderr
    (call,) = demo.server.requests_for("tools/call")
    assert call.headers["x-api-key"] == value  # C7: passed through unchanged


def test_C7_the_placeholders_it_knows_are_not_warned_about(demo: Any, tmp_path: Path) -> None:
    """``${env:…}`` and ``${userHome}`` expand; other ``${…}`` forms (VS Code's
    ``${input:…}``) pass through unchanged, without a warning; a ``$`` inside a
    token is not a variable."""
    config = write_config(
        tmp_path,
        {
            "demo": {
                "url": demo.url,
                "headers": {
                    "Authorization": "Bearer ${env:API_TOKEN}",
                    "X-Home": "${userHome}",
                    "X-Input": "${input:token}",
                    "X-Odd": "ab$CD",
                },
            }
        },
    )
    result = run("call", "--config", config, "demo/echo", "text=hi", env={"API_TOKEN": "t0k"})
    assert result.returncode == 0, result.stderr
    assert _warnings(result.stderr) == []
    (call,) = demo.server.requests_for("tools/call")
    assert call.headers["authorization"] == "Bearer t0k"
    assert call.headers["x-input"] == "${input:token}" and call.headers["x-odd"] == "ab$CD"
