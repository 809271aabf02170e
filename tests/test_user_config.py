"""Real-world configuration files through the hubs and the CLI (C9, C6, C2).

A user's own ``mcp.json`` is not a plugin: ``McpHub.from_file(path,
allow_local=True)`` runs its local entries with the file's directory as their
plugin root, and a command may be an absolute path (a virtual environment's
python). A plugin (``plugin_root`` given) keeps the plugin rules. An invalid
entry's error names its server once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from mcpcore import ConfigError, Unavailable

# A local server with the standard library only: quick to start. Its one tool
# answers with an environment variable's value and the working directory.
TINY_SERVER = '''
import json, os, sys
TOOL = {"name": "where", "inputSchema": {"type": "object"}}
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method, params = request["method"], request.get("params", {})
    if method == "initialize":
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = os.environ.get("PLUGIN_ROOT", "<unset>") + "|" + os.getcwd()
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
'''


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    """A user's own mcp.json: one entry by absolute path (the test's python), one by
    a path relative to the file, one invalid."""
    home = tmp_path / "config"
    home.mkdir()
    (home / "tiny.py").write_text(TINY_SERVER)
    launcher = home / "run-tiny"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{home / "tiny.py"}"\n')
    launcher.chmod(0o755)
    document = {
        "mcpServers": {
            "venv": {"command": sys.executable, "args": ["tiny.py"]},
            "relative": {"command": "./run-tiny"},
            "bad": {"url": "https://bad.example/mcp", "headers": {"Host": "x"}},
        }
    }
    path = home / "mcp.json"
    path.write_text(json.dumps(document))
    return path


def _threaded(path: Path, **options: Any) -> dict[str, Any]:
    with mcpcore_threaded.McpHub.from_file(path, **options) as hub:
        ready = hub.ready(20)
        answers = {name: hub.call(f"{name}/where").text for name in ("venv", "relative") if ready[name].ok}
        try:
            hub.call("bad/anything")
        except Unavailable as exc:
            unavailable = str(exc)
    return {"ready": ready, "answers": answers, "unavailable": unavailable}


async def _anyio(path: Path, **options: Any) -> dict[str, Any]:
    async with mcpcore_anyio.McpHub.from_file(path, **options) as hub:
        ready = await hub.ready(20)
        answers = {
            name: (await hub.call(f"{name}/where")).text for name in ("venv", "relative") if ready[name].ok
        }
        try:
            await hub.call("bad/anything")
        except Unavailable as exc:
            unavailable = str(exc)
    return {"ready": ready, "answers": answers, "unavailable": unavailable}


@pytest.mark.parametrize("driver", ["threaded", "anyio-asyncio", "anyio-trio"])
def test_C9_hub_from_file_runs_the_users_local_servers(driver: str, user_file: Path) -> None:
    """C9: ``from_file(path, allow_local=True)`` starts local entries, an absolute
    command among them, with the file's directory as PLUGIN_ROOT and working directory;
    the invalid entry's reason and error name its server once (C2)."""
    if driver == "threaded":
        result = _threaded(user_file, allow_local=True, startup_timeout=15)
    else:
        result = anyio.run(
            lambda: _anyio(user_file, allow_local=True, startup_timeout=15), backend=driver.split("-")[1]
        )
    directory = str(user_file.parent)
    assert result["ready"]["venv"].ok, result["ready"]["venv"].reason
    assert result["ready"]["relative"].ok, result["ready"]["relative"].reason
    assert result["answers"] == {"venv": f"{directory}|{directory}", "relative": f"{directory}|{directory}"}
    reason = "header 'Host' is set by the client and may not be configured"
    assert result["ready"]["bad"].reason == reason
    assert result["unavailable"] == f"server 'bad' is unavailable: {reason}"


@pytest.mark.parametrize("module", [mcpcore_anyio, mcpcore_threaded], ids=["anyio", "threaded"])
def test_C9_C6_a_plugin_keeps_the_plugin_rules(module: Any, user_file: Path) -> None:
    """C6: with ``plugin_root`` the file is a plugin's: an absolute command is refused,
    a ``./`` one resolves inside the plugin root. Nothing starts (no I/O to judge)."""
    hub = module.McpHub.from_file(user_file, allow_local=True, plugin_root=str(user_file.parent))
    venv = hub.clients["venv"]
    relative = hub.clients["relative"]
    assert venv._config_error is not None
    assert "a plugin may not name an absolute path" in venv._config_error.reason
    assert relative._config_error is None


@pytest.mark.parametrize("module", [mcpcore_anyio, mcpcore_threaded], ids=["anyio", "threaded"])
def test_C9_from_text_takes_absolute_commands_and_refuses_relative_ones(module: Any) -> None:
    """C9: a document in memory is the user's own too, but has no directory: an
    absolute command is taken, a relative one is refused naming what to do."""
    document = json.dumps(
        {"mcpServers": {"abs": {"command": sys.executable}, "rel": {"command": "./run-tiny"}}}
    )
    hub = module.McpHub.from_text(document, allow_local=True)
    assert hub.clients["abs"]._config_error is None
    error = hub.clients["rel"]._config_error
    assert isinstance(error, ConfigError)
    assert error.reason.endswith("give an absolute path")


def test_C9_cli_runs_an_absolute_command_with_allow_local(user_file: Path) -> None:
    """C9 through the real command: ``check --allow-local`` on the user's own file runs
    the entry whose command is an absolute path."""
    result = subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", "check", str(user_file), "--allow-local", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["venv"]["status"] == "ready", rows["venv"]
    assert rows["relative"]["status"] == "ready", rows["relative"]
    assert rows["bad"]["status"] == "invalid"


def test_C9_a_single_client_runs_an_absolute_command_without_a_directory(tmp_path: Path) -> None:
    """C9: ``McpClient(name, {"command": <absolute>}, allow_local=True)`` (no file, no
    plugin_root) runs; the child gets no PLUGIN_ROOT and starts in this process's
    working directory."""
    import os

    server = tmp_path / "tiny.py"
    server.write_text(TINY_SERVER)
    entry = {"command": sys.executable, "args": [str(server)]}
    with mcpcore_threaded.McpClient("tiny", entry, allow_local=True, startup_timeout=15) as client:
        assert client.ready(20).ok
        assert client.call("tiny/where").text == f"<unset>|{os.getcwd()}"
