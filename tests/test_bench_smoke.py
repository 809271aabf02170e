"""The benchmark runs end to end and writes its report (a smoke test, never a speed test)."""

from __future__ import annotations

import json
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
    for budget in ("B1", "B2", "B3", "B3 (resources)", "B4", "B5", "B6", "B7", "B11", "B12"):
        assert f"## {budget}" in text
    # Every client of the quick run appears, and no measurement crashed.
    for client in ("anyio", "threaded", "official"):
        assert client in text
    for line in text.splitlines():
        if line.startswith(("| anyio", "| threaded")):
            assert "error" not in line, line
    assert out.with_suffix(".json").exists()


@pytest.mark.realpeer
def test_bench_hub_runs_with_a_few_servers() -> None:
    """B9 (``python -m bench.hub``) with 3 servers: every client gets all of them ready."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench.hub", "--n", "3", "--rounds", "1", "--idle", "0", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["n"] == 3
    for client in ("threaded", "anyio", "official"):
        row = res["clients"][client]
        assert "error" not in row, row
        assert row["samples"] == 1 and row["note"] is None, row
        assert row["threads_after_close"] == 0, row
    assert "| threaded |" in proc.stdout


@pytest.mark.realpeer
def test_bench_eras_runs_both_eras() -> None:
    """B10 (``python -m bench.eras``): every client connects on all four paths and calls in both eras."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "bench.eras", "--quick", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    # the worker refuses a sample whose negotiated era is not the one asked for
    for table in ("connect", "calls"):
        for path, rows in res[table].items():
            for client in ("anyio", "threaded", "official"):
                assert "error" not in rows[client], (table, path, rows[client])
    assert set(res["calls"]) == {"modern", "legacy"}
    assert "## B10" in proc.stdout


@pytest.mark.realpeer
def test_bench_ab_all_pairs_one_tree_against_itself(tmp_path: Path) -> None:
    """B1, B3, B5 and B9 tree against tree (``python -m bench.ab_all``), tiny, this tree as both:
    every scenario has paired figures and no sample failed."""
    out = tmp_path / "ab.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.ab_all",
            str(ROOT),
            str(ROOT),
            "--quick",
            "--rounds",
            "1",
            "--steps",
            "2",
            "--seq",
            "5",
            "--conc-calls",
            "32",
            "--b3-tools",
            "120",
            "--b5-runs",
            "1",
            "--hub-n",
            "3",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text(encoding="utf-8"))
    assert set(res["scenarios"]) == {"b1", "b3", "b5", "b9"}
    for name, scenario in res["scenarios"].items():
        assert not scenario["errors"], (name, scenario["errors"])
        assert scenario["measures"], name
        for label, measure in scenario["measures"].items():
            assert measure["pairs"] >= 1, (name, label)
    b1 = res["scenarios"]["b1"]["measures"]
    assert {"anyio SSE CPU/call seq", "threaded JSON calls/s @32"} <= set(b1)
    assert b1["anyio SSE CPU/call seq"]["pairs"] == 2  # one round of 2 batch pairs
    assert res["scenarios"]["b5"]["measures"]["import mcpcore: modules"]["ratio"] == 1.0
    for line in ("B1 —", "B3 —", "B5 —", "B9 —", "load average"):
        assert line in proc.stdout


def test_bench_cold_runs_one_round(tmp_path: Path) -> None:
    """B12 and B3 cold / warm (``python -m bench.cold``), one round of our drivers and the
    sync floor: every fresh process lists the 5,003 tools and answers its call."""
    out = tmp_path / "cold.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.cold",
            "--only",
            "b12",
            "--rounds",
            "1",
            "--warm",
            "1",
            "--clients",
            "anyio,threaded,floor-sync",
            "--trio",
            "absent",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text(encoding="utf-8"))["b12 sse no-trio"]
    assert res["errors"] == []
    for client in ("anyio", "threaded", "floor-sync"):
        (sample,) = res["samples"][client]
        assert 0 < sample["import"] < sample["b12 wall"], sample
        assert sample["b3 cold wall"] > 0 and sample["b3 warm wall"] > 0
