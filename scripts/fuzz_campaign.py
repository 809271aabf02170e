"""A fuzz campaign: every harness in fuzz/ (or the ones named) under atheris, then a table.

``scripts/fuzz [--minutes N | --seconds S] [--lanes L] [--no-save] [TARGET...]`` runs
each target's ``fuzz/fuzz_<target>.py`` as its own atheris process for N minutes (the
budget is per target, so adding a harness never shortens the others' runs), at most L
processes at a time (default: two lanes, one per core of the CI machine, fewer on a
machine with one). Each target gets a fresh work folder outside git (under the system's
temporary folder: what the fuzzer discovers lands there, never in the repository) and
reads ``fuzz/corpus/<target>`` as its seeds. At the end it prints one row per target:
executions, coverage (libFuzzer's ``cov``: edges of the core and the harness),
new corpus entries (in the work folder), and findings, each with its input and the
first line of its error. A finding (a crash, a timeout, running out of memory) is
copied into the corpus as ``fuzz/corpus/<target>/found-<error>-<sha1 prefix>`` so it
replays in the suite forever (``--no-save`` leaves it in the work folder only).
Exit status: 0 when no target found anything, 1 on any finding, 2 on a usage error.

``--properties`` also runs the hypothesis properties (every tests/test_*.py that uses
hypothesis) with the ``long`` profile: 3,000 examples where a test sets no count of its
own (the suite keeps the default); a failing property is a finding, shown with its test id.

Only the interpreter that runs the harnesses needs atheris (the ``fuzz`` extra, or
``pip install atheris``): ``--python`` (default: the repository's ``.venv``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ARTIFACT = re.compile(r"Test unit written to (\S+)")
_COV = re.compile(r"\bcov: (\d+)")
_EXECS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
_KINDS = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")


@dataclass
class Outcome:
    """One target's run: what the summary table shows."""

    target: str
    workdir: Path
    executions: int = 0
    coverage: int = 0
    new_entries: int = 0
    exit_code: int = 0
    findings: list[tuple[Path, str]] = field(default_factory=list)  # (input, first line)


def discover(fuzz_dir: Path) -> list[str]:
    return sorted(p.stem.removeprefix("fuzz_") for p in fuzz_dir.glob("fuzz_*.py"))


def default_python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def error_line(log: str) -> str:
    """The first line of the error a harness raised (the exception's own line)."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "Uncaught Python exception" in line:
            block: list[str] = []
            for after in lines[i + 1 :]:
                if after.startswith("==") or after.startswith("MS:"):
                    break
                block.append(after)
            # The traceback ends with the exception's line(s); its first line names it.
            for j in range(len(block) - 1, -1, -1):
                if block[j] and not block[j].startswith((" ", "\t", "Traceback")):
                    start = j
                    while start > 0 and block[start - 1] and not block[start - 1].startswith(" "):
                        start -= 1
                    return block[start].strip()[:200]
    for marker in ("ERROR: libFuzzer: ", "==ERROR: "):
        for line in lines:
            if marker in line:
                return line.split(marker, 1)[1].strip()[:200]
    return "(no error line in the fuzzer's output)"


def finding_name(first_line: str, data: bytes) -> str:
    kind = re.match(r"[A-Za-z_][\w.]*", first_line)
    word = kind.group(0).rsplit(".", 1)[-1] if kind else "crash"
    return f"found-{word}-{hashlib.sha1(data).hexdigest()[:10]}"


def start(
    target: str, args: argparse.Namespace, base: Path
) -> tuple[subprocess.Popen[bytes], Outcome]:
    workdir = base / target
    workdir.mkdir(parents=True)
    corpus = args.fuzz_dir / "corpus" / target
    corpus.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    paths = [str(ROOT / "src"), str(ROOT / "src" / "adapters")]
    env["PYTHONPATH"] = os.pathsep.join(
        [*paths, env["PYTHONPATH"]] if env.get("PYTHONPATH") else paths
    )
    command = [
        args.python,
        str(args.fuzz_dir / f"fuzz_{target}.py"),
        str(workdir),
        str(corpus),
        f"-max_total_time={args.budget}",
        f"-max_len={args.max_len}",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-artifact_prefix={base}/{target}-",
        "-print_final_stats=1",
    ]
    log = (base / f"{target}.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    log.close()
    return process, Outcome(target, workdir)


def finish(outcome: Outcome, exit_code: int, base: Path, args: argparse.Namespace) -> None:
    log = (base / f"{outcome.target}.log").read_text("utf-8", "replace")
    outcome.exit_code = exit_code
    execs = _EXECS.findall(log)
    outcome.executions = int(execs[-1]) if execs else 0
    covs = _COV.findall(log)
    outcome.coverage = int(covs[-1]) if covs else 0
    outcome.new_entries = sum(1 for p in outcome.workdir.iterdir() if p.is_file())
    artifacts = {Path(p) for p in _ARTIFACT.findall(log)}
    artifacts |= {
        p
        for p in base.glob(f"{outcome.target}-*")
        if p.name.startswith(tuple(f"{outcome.target}-{k}" for k in _KINDS))
    }
    first = error_line(log)
    for artifact in sorted(artifacts):
        if not artifact.is_file():
            continue
        saved = artifact
        if args.save:
            data = artifact.read_bytes()
            saved = args.fuzz_dir / "corpus" / outcome.target / finding_name(first, data)
            shutil.copyfile(artifact, saved)
        outcome.findings.append((saved, first))
    if exit_code != 0 and not outcome.findings:
        # The fuzzer stopped without an input to show (it could not start, say).
        outcome.findings.append((base / f"{outcome.target}.log", first))


def run(args: argparse.Namespace) -> list[Outcome]:
    base = Path(tempfile.mkdtemp(prefix="mcpcore-fuzz-", dir=args.workdir))
    print(
        f"fuzz: {len(args.targets)} target(s), {args.budget}s each, {args.lanes} lane(s); work in {base}"
    )
    sys.stdout.flush()
    queue = list(args.targets)
    running: list[tuple[subprocess.Popen[bytes], Outcome]] = []
    done: list[Outcome] = []
    while queue or running:
        while queue and len(running) < args.lanes:
            running.append(start(queue.pop(0), args, base))
        for process, outcome in list(running):
            code = process.poll()
            if code is None:
                continue
            running.remove((process, outcome))
            finish(outcome, code, base, args)
            done.append(outcome)
            print(
                f"fuzz: {outcome.target} done ({outcome.executions} executions, {len(outcome.findings)} finding(s))"
            )
            sys.stdout.flush()
        if running:
            time.sleep(0.2)  # polling child processes: nothing else to wait on
    order = {t: i for i, t in enumerate(args.targets)}
    return sorted(done, key=lambda o: order[o.target])


def properties(args: argparse.Namespace) -> Outcome:
    """The hypothesis properties under the ``long`` profile (tests/conftest.py)."""
    files = sorted(
        str(p.relative_to(ROOT))
        for p in ROOT.glob(args.tests)
        if "from hypothesis" in p.read_text("utf-8")
    )
    outcome = Outcome("properties", ROOT / "tests")
    print(f"fuzz: properties: {len(files)} test files, --hypothesis-profile=long")
    sys.stdout.flush()
    command = [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf"]
    done = subprocess.run(
        [*command, "--hypothesis-profile=long", *files],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    passed = re.search(r"(\d+) passed", done.stdout)
    outcome.executions = int(passed.group(1)) if passed else 0
    outcome.exit_code = done.returncode
    for line in done.stdout.splitlines():
        if line.startswith("FAILED "):
            test_id, _, reason = line.removeprefix("FAILED ").partition(" - ")
            outcome.findings.append((ROOT / test_id.split("::")[0], f"{test_id}: {reason}"[:300]))
    if done.returncode != 0 and not outcome.findings:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(no output)"]
        outcome.findings.append((ROOT / "tests", f"pytest exited {done.returncode}: {tail[0]}"))
    return outcome


def report(outcomes: list[Outcome]) -> str:
    rows = [("target", "executions", "coverage", "new entries", "findings")]
    for o in outcomes:
        rows.append(
            (o.target, str(o.executions), str(o.coverage), str(o.new_entries), str(len(o.findings)))
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    total_execs = sum(o.executions for o in outcomes)
    total_findings = sum(len(o.findings) for o in outcomes)
    lines.append(f"total: {total_execs} executions, {total_findings} finding(s)")
    for o in outcomes:
        for path, first in o.findings:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            lines.append(f"FINDING {o.target}: {shown}: {first}")
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, default=None, help="per target (default 2)")
    budget.add_argument("--seconds", type=int, default=None, help="per target, for a quick check")
    parser.add_argument(
        "--lanes", type=int, default=min(2, os.cpu_count() or 1), help="targets at a time"
    )
    parser.add_argument(
        "--no-save", dest="save", action="store_false", help="leave findings in the work folder"
    )
    parser.add_argument("--python", default=default_python(), help="an interpreter with atheris")
    parser.add_argument(
        "--properties",
        action="store_true",
        help="also run the hypothesis properties at 3,000 examples",
    )
    parser.add_argument("--max-len", type=int, default=4096)
    parser.add_argument("--timeout", type=int, default=25, help="seconds one input may take")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument(
        "--workdir", default=None, help="where the fresh work folders go (default: the temp folder)"
    )
    parser.add_argument("--fuzz-dir", type=Path, default=ROOT / "fuzz", help=argparse.SUPPRESS)
    parser.add_argument(
        "--tests", default="tests/test_*.py", help="with --properties: which test files (a glob)"
    )
    parser.add_argument(
        "--no-harness", action="store_true", help="with --properties: run only the properties"
    )
    parser.add_argument(
        "targets", nargs="*", metavar="TARGET", help="default: every fuzz/fuzz_*.py"
    )
    args = parser.parse_args(argv)
    known = discover(args.fuzz_dir)
    unknown = [t for t in args.targets if t not in known]
    if unknown:
        parser.error(f"no harness named {', '.join(unknown)} (known: {', '.join(known)})")
    args.targets = args.targets or ([] if args.properties and args.no_harness else known)
    if args.seconds is not None:
        args.budget = max(1, args.seconds)
    else:
        args.budget = max(1, round(60 * (args.minutes if args.minutes is not None else 2)))
    args.lanes = max(1, args.lanes)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    outcomes = run(args) if args.targets else []
    if args.properties:
        outcomes.append(properties(args))
    print(report(outcomes))
    return 1 if any(o.findings for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
