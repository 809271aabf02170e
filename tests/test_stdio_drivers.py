"""Local servers over stdio (C6, S1–S3) on both drivers, with a real SDK child.

The entry's command is ``./run-server``, a script in a temporary plugin root
that starts ``tests/servers/stdio_server.py`` (the official SDK's stdio server).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    root.mkdir()
    (tmp_path / "data").mkdir()
    script = root / "run-server"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVER}" "$@"\n')
    script.chmod(0o755)
    stubborn = root / "stubborn"
    # Never answers, ignores stdin closing and SIGTERM: only SIGKILL ends it.
    stubborn.write_text(
        "#!/bin/sh\ntrap '' TERM\necho $$ > \"$PLUGIN_ROOT/stubborn.pid\"\nwhile :; do sleep 0.05; done\n"
    )
    stubborn.chmod(0o755)
    return root


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_S1_S2_local_server_over_stdio(
    driver: str, plugin: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S1: newline-delimited JSON on stdin/stdout, stderr to logging (escaped);
    S2: PLUGIN_ROOT/PLUGIN_DATA and the entry's env, not the host's whole environment."""
    monkeypatch.setenv("HOST_ONLY_VARIABLE", "host-value")
    caplog.set_level(logging.INFO, logger="mcpcore")
    entry = {"command": "./run-server", "env": {"FROM_ENTRY": "${PLUGIN_DATA}/x"}}
    data = str(plugin.parent / "data")
    options = {"allow_local": True, "plugin_root": str(plugin), "plugin_data": data}
    async with open_client(driver, "local", entry, **options) as client:
        with anyio.fail_after(30):
            availability = await client.ready(20)
            assert availability.ok, availability.reason
            assert {t.name for t in client.tools} >= {"echo", "env", "pid", "slow"}
            assert (await client.call("local/echo", {"text": "über"})).text == "über"
            assert (await client.call("local/env", {"name": "PLUGIN_ROOT"})).text == str(plugin)
            assert (await client.call("local/env", {"name": "PLUGIN_DATA"})).text == data
            assert (await client.call("local/env", {"name": "FROM_ENTRY"})).text == data + "/x"
            assert (await client.call("local/env", {"name": "HOST_ONLY_VARIABLE"})).text == "<unset>"
            pid = int((await client.call("local/pid", {})).text)
    stderr_lines = [r.getMessage() for r in caplog.records if r.name.startswith("mcpcore.stderr")]
    assert any("stdio-test server starting" in line for line in stderr_lines)
    assert all("\x1b" not in line for line in stderr_lines)  # X1: escaped
    # S3: the child does not outlive the client
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        await anyio.sleep(0.02)
    assert _gone(pid)


async def test_S3_stubborn_child_is_killed_on_close(driver: str, plugin: Path) -> None:
    """S3: close stdin, wait up to 3 s, terminate, kill: the child never outlives the client."""
    options = {"allow_local": True, "plugin_root": str(plugin), "startup_timeout": 60.0}
    t0 = anyio.current_time()
    async with open_client(driver, "stubborn", {"command": "./stubborn"}, **options) as client:
        with anyio.fail_after(10):
            availability = await client.ready(0.5)
        assert not availability.ok
        pid = int((plugin / "stubborn.pid").read_text())
    elapsed = anyio.current_time() - t0
    assert _gone(pid)
    # The child ignores TERM, so it can be gone only after the 3 s grace, the terminate,
    # the 1 s after it and the kill: no earlier than 4 s (less a little slack for clock
    # granularity). The upper bound is generous; it only says the close did end.
    assert 4.0 - 0.05 <= elapsed < 30
