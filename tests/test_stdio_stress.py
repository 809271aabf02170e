"""Local servers under load (S1): big requests while the child floods its stdout.

A child that writes thousands of log notifications while the client writes
1 MiB requests to its stdin: a driver that writes the pipe while holding up
the reading of the child's output blocks for good (threaded), and concurrent
writers on one pipe fail (trio's BusyResourceError) or interleave frames. On
every driver, bounded in time.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "servers" / "chatty_stdio.py"
MIB = 1024 * 1024


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def entry(tmp_path: Path) -> tuple[dict[str, object], dict[str, object]]:
    script = tmp_path / "chatty"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVER}"\n')
    script.chmod(0o755)
    return {"command": "./chatty"}, {"allow_local": True, "plugin_root": str(tmp_path)}


async def test_S1_concurrent_megabyte_calls_while_the_child_floods_its_output(driver: str, tmp_path: Path) -> None:
    """S1: four concurrent calls with 1 MiB arguments each, while the child writes
    thousands of notifications: every call gets its own answer, nothing blocks."""
    server, options = entry(tmp_path)
    async with open_client(driver, "chatty", server, **options) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            results: dict[int, str] = {}

            async def one(index: int) -> None:
                blob = str(index) * (MIB + index)
                output = await client.call("chatty/size", {"blob": blob, "notes": 3000})
                results[index] = output.text

            async with anyio.create_task_group() as group:
                for index in range(4):
                    group.start_soon(one, index)
    assert results == {i: str(MIB + i) for i in range(4)}


async def test_S1_a_call_cancelled_mid_write_does_not_corrupt_the_next_frame(driver: str, tmp_path: Path) -> None:
    """S1, K6: a caller cancelled while its 1 MiB request is being written; the next
    call still gets a well-framed answer (the child saw whole lines only)."""
    server, options = entry(tmp_path)
    async with open_client(driver, "chatty", server, **options) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            for _ in range(3):
                with anyio.move_on_after(0.001):
                    await client.call("chatty/size", {"blob": "y" * (4 * MIB), "notes": 1000})
                output = await client.call("chatty/size", {"blob": "z" * 10, "notes": 10})
                assert output.text == "10"


async def test_S1_C8_a_child_that_dies_early_is_explained_by_its_last_stderr_lines(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """S1, C8, X1: a child that exits at once: the reason quotes its last stderr lines,
    escaped and cut short, with the values of its env entry replaced by ***."""
    script = tmp_path / "dies"
    script.write_text(
        "#!/bin/sh\n"
        "for i in 1 2 3 4 5 6 7; do echo \"starting $i\" >&2; done\n"
        "printf 'fatal: bad token %s \\033[31mred\\033[0m\\n' \"$API_TOKEN\" >&2\n"
        "exit 1\n"
    )
    script.chmod(0o755)
    server = {"command": "./dies", "env": {"API_TOKEN": "tok-SECRET-123456"}}
    caplog.set_level(logging.INFO, logger="mcpcore")
    async with open_client(driver, "dies", server, allow_local=True, plugin_root=str(tmp_path)) as client:
        with anyio.fail_after(30):
            availability = await client.ready(20)
    reason = availability.reason or ""
    assert not availability.ok
    assert reason.startswith("the server process closed its output; its last words on stderr: starting 4 | ")
    assert "starting 3" not in reason
    assert reason.endswith("fatal: bad token *** \\x1b[31mred\\x1b[0m")
    assert "SECRET" not in reason
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("mcpcore.stderr")]
    assert any("fatal: bad token ***" in m for m in logged)  # C8: the log line is redacted too
    assert not any("SECRET" in m for m in logged)
