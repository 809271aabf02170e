"""docs/state-diagram.md is drawn from mcpcore.session._session.TRANSITIONS and kept current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "draw_state_diagram.py"
DOC = ROOT / "docs" / "state-diagram.md"


def test_committed_state_diagram_is_current() -> None:
    """The committed diagram matches the table (run the script to refresh it)."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_stale_file_and_writing_fixes_it(tmp_path: Path) -> None:
    target = tmp_path / "diagram.md"
    target.write_text("stale\n", encoding="utf-8")
    stale = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--output", str(target)], capture_output=True, text=True
    )
    assert stale.returncode == 1 and "stale" in stale.stderr
    subprocess.run([sys.executable, str(SCRIPT), "--output", str(target)], check=True)
    assert target.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    again = subprocess.run([sys.executable, str(SCRIPT), "--check", "--output", str(target)])
    assert again.returncode == 0


def test_diagram_has_every_transition() -> None:
    from mcpcore.session._session import TRANSITIONS

    text = DOC.read_text(encoding="utf-8")
    assert "stateDiagram-v2" in text
    for state, row in TRANSITIONS.items():
        for event, target in row.items():
            assert f"{state.name.title()} --> {target.name.title()}: {event.value}" in text
