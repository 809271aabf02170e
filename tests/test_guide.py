"""docs/guide.md: every program in the guide runs as written and prints what the guide shows.

Each ```python block is a complete program; the ```text block that follows it
is its output. Each program runs in a fresh interpreter (a subprocess in an
empty directory, bounded in time), as a reader would run it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcpcore
import mcpcore_anyio

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
README = GUIDE.parent.parent / "README.md"
RUN_TIMEOUT = 60.0

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _programs() -> list[tuple[str, str, str]]:
    """(heading, program, expected output) for every python block of the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    blocks = [(m.start(), m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]
    programs = []
    for i, (start, language, body) in enumerate(blocks):
        if language != "python":
            continue
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        assert following is not None and following[1] == "text", (
            f"the python block at offset {start} of docs/guide.md has no ```text output after it"
        )
        heading = re.findall(r"^## (.+)$", text[:start], re.M)[-1]
        programs.append((heading, body, following[2]))
    return programs


PROGRAMS = _programs()


def _environment() -> dict[str, str]:
    """This interpreter's environment, with the mcpcore this test imported first on the path
    (a program runs in another directory, where a relative path would not find it)."""
    roots = [str(Path(module.__file__).resolve().parent.parent) for module in (mcpcore, mcpcore_anyio)]
    inherited = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*dict.fromkeys(roots), inherited])}


def test_the_guide_has_a_program_per_driver() -> None:
    """One complete program for each driver, and the others besides."""
    sources = [program for _, program, _ in PROGRAMS]
    assert any("from mcpcore_anyio import McpClient" in s for s in sources)
    assert any("from mcpcore_threaded import McpClient" in s for s in sources)
    assert len(PROGRAMS) >= 5


@pytest.mark.parametrize(("heading", "program", "expected"), PROGRAMS, ids=[h for h, _, _ in PROGRAMS])
def test_guide_program_prints_what_the_guide_shows(
    heading: str, program: str, expected: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        env=_environment(),
    )
    assert result.returncode == 0, f"{heading}: exit {result.returncode}\n{result.stderr}"
    assert result.stdout == expected, f"{heading}:\n{result.stderr}"
    assert result.stderr == "", f"{heading}: the program wrote to stderr:\n{result.stderr}"


def test_readme_first_screen_points_to_the_guide() -> None:
    """The README's first screen (its first 40 lines) sends a newcomer to the guide."""
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    assert "(docs/guide.md)" in first_screen


def _section(title: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_option_table_lists_every_option_with_its_default() -> None:
    """The guide's option table names exactly the options a client takes, each with the
    default the code uses, and every ``HttpLimits`` field."""
    import dataclasses

    from mcpcore import ClientOptions, HttpLimits, prepare_client

    section = _section("The options")
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, re.M))
    assert set(rows) == set(ClientOptions.__annotations__)
    setup = prepare_client("s", {"url": "https://s.example/mcp"}, {}, env={}, home="/h")
    session = setup.session
    defaults = {
        "call_timeout": session.call_timeout,
        "startup_timeout": session.startup_timeout,
        "call_timeout_max": session.call_timeout_max,
        "extend_on_progress": session.extend_on_progress,
        "policy": session.policy,
        "separator": session.separator,
        "protocol": session.protocol,
        "client_name": session.client_name,
        "max_pages": session.max_pages,
        "max_tools": session.max_tools,
        "auto_refresh": session.auto_refresh,
        "listen": setup.listen,
        "max_connections": setup.max_connections,
    }
    for name, value in defaults.items():
        assert rows[name].strip() == f"`{value!r}`".replace("'", '"'), name
    for field in dataclasses.fields(HttpLimits):
        assert f"`{field.name}`" in section, field.name


def test_the_guide_installs_the_way_the_readme_does() -> None:
    """The guide's install command is the README's (mcpcore installs from a checkout;
    a bare ``pip install mcpcore`` would fetch nothing of ours)."""
    guide = GUIDE.read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    assert "pip install mcpcore" not in guide
    assert "python3 -m venv .venv && .venv/bin/pip install ." in guide
    assert "python3 -m venv .venv && .venv/bin/pip install ." in readme


def test_the_readmes_exit_status_table_holds_every_row() -> None:
    """Every exit status, 130 included, is a row of one table: a row after a
    paragraph renders as part of that paragraph."""
    text = README.read_text(encoding="utf-8")
    table = text.split("| status | meaning |\n", 1)[1].split("\n\n", 1)[0].splitlines()
    statuses = [line.split("|")[1].strip() for line in table[1:]]
    assert statuses == ["0", "1", "2", "3", "130"]
    assert text.count("| 130 |") == 1


def test_the_guide_names_every_log_message_field() -> None:
    """The guide's ``LogMessage`` sentence names each of its fields, ``server`` included."""
    import dataclasses

    guide = GUIDE.read_text(encoding="utf-8")
    sentence = guide.split("each one as a `LogMessage` (", 1)[1].split(")", 1)[0]
    for field in dataclasses.fields(mcpcore.LogMessage):
        assert f"`{field.name}`" in sentence, field.name


def test_X2_the_error_tables_name_every_public_exception() -> None:
    """Issue 37: "When a call fails" has a row for every public exception of mcpcore."""
    section = _section("When a call fails")
    rows = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    public = {
        name
        for name in mcpcore.__all__
        if isinstance(getattr(mcpcore, name), type) and issubclass(getattr(mcpcore, name), mcpcore.McpError)
    }
    assert public - {"McpError"} <= rows, sorted(public - rows - {"McpError"})
    assert rows <= public, sorted(rows - public)
