"""A misspelled argument name, caught before it reaches a server (issue 37 point 2, K10).

Against real servers: the official Python SDK's (``sdk_server``), the TypeScript
reference server (server-everything) and fastmcp's. Their input schemas (pydantic,
zod) never say ``additionalProperties: false``, so a misspelled argument used to be
sent and silently ignored: ``stpes=1`` ran with the default steps and exited 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from peers import Peer, everything_server, fastmcp_server, peers_installed, sdk_server
from test_cli import run, write_config

pytestmark = pytest.mark.realpeer

SERVERS: dict[str, Callable[[], contextlib.AbstractContextManager[Peer]]] = {
    "sdk": sdk_server,
    "everything": everything_server,
    "fastmcp": fastmcp_server,
}


@pytest.fixture(params=list(SERVERS))
def peer(request: pytest.FixtureRequest) -> Iterator[tuple[str, Peer]]:
    if request.param == "everything" and not peers_installed():
        pytest.fail("the JS peers are not installed: run scripts/install_peers.sh", pytrace=False)
    with SERVERS[request.param]() as running:
        yield request.param, running


# tool, the arguments with one name misspelled, the name meant, and those arguments
# spelled right (to show the tool does run with them).
TYPOS: dict[str, tuple[str, list[str], str, list[str]]] = {
    "sdk": ("progress", ["stpes=1"], "steps", ["steps=1"]),
    "everything": (
        "trigger-long-running-operation",
        ["duraton=1", "steps=1"],
        "duration",
        ["duration=0.1", "steps=1"],
    ),
    "fastmcp": ("slow", ["stpes=1", "delay=0"], "steps", ["steps=1", "delay=0"]),
}


def test_K10_a_misspelled_argument_exits_2_naming_it_and_what_was_meant(
    peer: tuple[str, Peer],
) -> None:
    """``call … stpes=1`` is refused before anything is sent, whatever the schema's
    additionalProperties says; the right spelling runs."""
    kind, running = peer
    tool, typo, meant, right = TYPOS[kind]
    written = typo[0].split("=")[0]
    result = run("call", running.url, tool, *typo)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert f"the tool takes no argument '{written}'; did you mean '{meant}'?" in result.stderr
    assert f"mcpcore: hint: its parameters: mcpcore tools {running.url} {tool}" in result.stderr
    if kind == "sdk":
        assert "call progress" not in running.events()  # never sent
    result = run("call", running.url, tool, *right)
    assert result.returncode == 0, result.stderr


def test_K10_no_check_still_sends_a_name_the_schema_does_not_declare() -> None:
    """``--no-check`` sends the arguments as given: the SDK server ignores the unknown
    name and runs the tool."""
    with sdk_server() as running:
        result = run("call", running.url, "progress", "steps=1", "stpes=1", "--no-check")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "completed 1 steps\n"
        running.wait_for_event("call progress")


def test_K10_a_misspelled_argument_in_args_json_is_refused_too(tmp_path: Path) -> None:
    with fastmcp_server() as running:
        config = write_config(tmp_path, {"fast": {"url": running.url}})
        result = run("call", "--config", config, "fast/add", '{"a": 1, "bb": 2}', "--json")
    assert result.returncode == 2
    assert "the tool takes no argument 'bb'; did you mean 'b'?" in result.stderr
    assert '"kind": "invalid_arguments"' in result.stdout
