"""scripts/fuzz: a campaign with a tiny budget, its summary table and exit status (issue 44).

Each run is bounded: a few seconds of fuzzing per target, under a subprocess timeout.
atheris is the ``fuzz`` extra and a test dependency: the suite never skips these.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import atheris  # noqa: F401  (a missing fuzz engine fails here, never skips)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "fuzz_campaign.py"


def campaign(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--python", sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_a_short_campaign_prints_its_table_and_exits_zero(tmp_path: Path) -> None:
    """One target for two seconds: a row with executions and coverage, no finding, exit 0."""
    done = campaign("--seconds", "2", "--lanes", "1", "--workdir", str(tmp_path), "jsonrpc")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["target"])
    assert lines[header].split() == [
        "target",
        "executions",
        "coverage",
        "new",
        "entries",
        "findings",
    ]
    name, execs, cov, new, findings = lines[header + 1].split()
    assert name == "jsonrpc" and int(execs) > 0 and int(cov) > 0 and int(new) >= 0
    assert findings == "0"
    assert "total: " in done.stdout and "FINDING" not in done.stdout
    # The work folder is outside the repository, and nothing was added to the corpus.
    assert str(tmp_path) in done.stdout


CRASHER = """
import sys

def fuzz_one_input(data):
    if len(data) >= 2:
        raise ValueError("boom: a planted defect")

if __name__ == "__main__":
    import atheris
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
"""


def test_a_finding_is_saved_in_the_corpus_and_fails_the_campaign(tmp_path: Path) -> None:
    """A harness that breaks: exit 1, the finding's input saved as ``found-<error>-<sha>``
    in its corpus, shown with the first line of its error."""
    fuzz_dir = tmp_path / "fuzz"
    fuzz_dir.mkdir()
    (fuzz_dir / "fuzz_planted.py").write_text(CRASHER)
    (fuzz_dir / "corpus" / "planted").mkdir(parents=True)
    (fuzz_dir / "corpus" / "planted" / "seed").write_bytes(b"ok")
    done = campaign("--seconds", "5", "--fuzz-dir", str(fuzz_dir), "--workdir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    (found,) = [p for p in (fuzz_dir / "corpus" / "planted").iterdir() if p.name != "seed"]
    assert found.name.startswith("found-ValueError-")
    assert len(found.read_bytes()) >= 2
    assert f"FINDING planted: {found}: ValueError: boom: a planted defect" in done.stdout


def test_an_unknown_target_is_a_usage_error() -> None:
    done = campaign("--seconds", "1", "no_such_target", timeout=30)
    assert done.returncode == 2
    assert "no harness named no_such_target" in done.stderr
