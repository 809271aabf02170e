"""The benchmark runs end to end and writes its report (a smoke test, never a speed test)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.realpeer
def test_bench_quick_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    for budget in ("B1", "B2", "B3", "B4", "B5", "B6", "B7"):
        assert f"## {budget}" in text
    # Every client of the quick run appears, and no measurement crashed.
    for client in ("anyio", "threaded", "official"):
        assert client in text
    for line in text.splitlines():
        if line.startswith(("| anyio", "| threaded")):
            assert "error" not in line, line
    assert out.with_suffix(".json").exists()
