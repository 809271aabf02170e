"""docs/engine.md: the "Driving the engine by hand" example runs and prints what the doc says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "engine.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M)


def test_engine_example_runs_handshake_and_call_against_canned_http() -> None:
    """L2, K1, H1, M1, M2, M18, M70: the first ```python block of docs/engine.md."""
    code = _blocks("python")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {"__name__": "engine_example"})
    assert out.getvalue() == (
        "ready: ['demo/greet'] speaking 2026-07-28\nresult: Hello, Ada!\n"
        "finished: True next deadline: None\n"
    )
    # the doc shows exactly that output
    assert _blocks("text")[0] == out.getvalue()
