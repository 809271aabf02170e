"""Tree against tree for the budgets kept within 5%: B1, B3, B5 and B9, paired, one command.

    python -m bench.ab_all /work/ab-A /work/ab-B            # the full run: 6–8 min on 2 busy cores
    python -m bench.ab_all /work/ab-A /work/ab-B --quick    # a 1–2 minute smoke, not a verdict
    python -m bench.ab_all A B --only b5,b9 --json ab.json  # some scenarios; every sample kept

A is the base, B the change: two checkouts that do not change during the run
(``git worktree add --detach``), not a tree being edited. What runs:

* **B1**: ``bench.worker``'s ``calls`` against the canned server (3 tools), SSE
  and JSON, both drivers: ``--seq`` sequential echo calls, then ``--conc-calls``
  with 32 in flight; client CPU per call (both) and calls per second (at 32).
  Per round one worker per tree, connected and warm, in step mode: they take
  turns batch by batch (``--steps`` batches each), so each pair of batches
  ran moments apart; a new pair of processes each round.
* **B3**: ``bench.worker``'s ``list`` against a canned server of 5,003 tools in
  pages of 50 (101 pages), SSE and JSON, both drivers: construct → ready with
  every tool listed, wall time and CPU. Every sample is a fresh process; its
  first connect (which imports the HTTP stack) is left out, as in ``bench``.
* **B5**: ``import mcpcore``, ``import mcpcore_anyio`` and ``import
  mcpcore_threaded``, each in a fresh interpreter (``bench.micro``'s probe),
  bytecode caches warm (one run per tree first, left out): time, modules loaded.
* **B9**: ``bench.hub``'s clients, a hub of ``--hub-n`` demo servers from one
  ``mcp.json`` (100; 50 with ``--quick``), both drivers, each in a fresh
  process: time until all are ready, threads at ready and after the idle wait,
  peak RSS and its growth over the RSS after the imports.

One harness measures both trees, so only the library differs: a client process
runs this checkout's ``bench`` with ``PYTHONPATH`` = this checkout, then the
tree's ``src`` and ``src/adapters`` (checked once at the start: the imports must
resolve into the tree). The servers are this checkout's, one set per scenario,
shared by A and B; each set first serves a sample that is not measured. A and B
run back to back for each driver and mode, and which goes first flips every
time, so a busy machine's drift hits both alike.

Per measure it prints the medians for A and B and B/A of those medians; then
the paired ratios B/A (one per round, or per batch pair in B1: a ratio of two
samples taken moments apart cancels most of the drift that the pooled medians
keep): their median, an interval of about 95% confidence for that median (the
sign test's order statistics), and their min–max. The last column judges the
paired median against 5%: ``within`` (the interval too is inside 5% the worse
way), ``unsure`` (the median is inside, the interval reaches past), ``over``,
or ``too few`` (under 6 pairs). Load averages are printed before and after each
scenario. Two trees of one commit show the noise floor: how far from 1.00 the
ratios land by chance on this machine, at its load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from bench import hub, micro
from bench.ab import load
from bench.run import canned, log

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIDES = ("A", "B")
SCENARIOS = ("b1", "b3", "b5", "b9")
MiB = 1024 * 1024
#: B is "over" when the median of its paired ratios B/A is this much worse than 1.
LIMIT = 0.05

#: Rounds and sizes at default settings, and with ``--quick``.
FULL = {
    "b1_rounds": 5,
    "b1_steps": 10,
    "seq": 200,
    "conc_calls": 320,
    "b3_rounds": 16,
    "b3_batches": 1,
    "b3_tools": 5003,
    "b5_runs": 41,
    "b9_rounds": 12,
    "hub_n": 100,
}
QUICK = {
    "b1_rounds": 1,
    "b1_steps": 6,
    "seq": 100,
    "conc_calls": 320,
    "b3_rounds": 3,
    "b3_batches": 2,
    "b3_tools": 5003,
    "b5_runs": 9,
    "b9_rounds": 3,
    "hub_n": 50,
}
B5_IMPORTS = ("mcpcore", "mcpcore_anyio", "mcpcore_threaded")


def tree_env(tree: Path, harness: bool = True) -> dict[str, str]:
    """A client process's environment: the library from ``tree``, the harness from here."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # A coverage hook in the venv starts with these set: it would tax every sample.
    env.pop("COVERAGE_PROCESS_START", None)
    env.pop("COVERAGE_PROCESS_CONFIG", None)
    # One prefix for both trees: it mirrors each source's absolute path, so A and B
    # never share a cached file, and the warm caches stay out of the checkouts.
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "mcpcore-ab-pyc")
    paths = [str(ROOT)] if harness else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(tree / "src"), str(tree / "src/adapters")])
    return env


def run_json(tree: Path, args: list[str], timeout: float = 300, harness: bool = True) -> Any:
    """Run ``python ARGS`` for ``tree`` from this checkout; its last JSON line."""
    try:
        proc = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env=tree_env(tree, harness),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:g} s") from None
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("{", "["))]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"exit {proc.returncode}: {tail[:300]}")
    return json.loads(lines[-1])


def describe(tree: Path) -> str:
    """The tree's commit (and whether it has local edits), after checking the imports land in it."""
    where = run_json(
        tree,
        [
            "-c",
            "import json, mcpcore, mcpcore_anyio, mcpcore_threaded;"
            "print(json.dumps([m.__file__ for m in (mcpcore, mcpcore_anyio, mcpcore_threaded)]))",
        ],
        timeout=60,
    )
    src = str(tree / "src") + os.sep
    stray = [w for w in where if not str(w).startswith(src)]
    if stray:
        raise SystemExit(f"{tree}: imports resolve outside the tree: {stray}")
    git = ["git", "-C", str(tree)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return "not a git checkout"
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return head.stdout.strip() + (" with local edits" if dirty else "")


def flip(rnd: int) -> tuple[str, ...]:
    """A then B on even rounds, B then A on odd ones."""
    return SIDES if rnd % 2 == 0 else SIDES[::-1]


# --- paired samples -----------------------------------------------------------------------


class Figure(NamedTuple):
    """One figure of one sample: ``value * scale`` is in ``unit``."""

    label: str
    unit: str
    value: float
    scale: float = 1.0
    higher_is_better: bool = False


@dataclass
class Measure:
    """One figure of one scenario: its value for A and for B in each round."""

    label: str
    unit: str
    scale: float = 1.0
    higher_is_better: bool = False
    values: dict[str, dict[int, float]] = field(default_factory=lambda: {"A": {}, "B": {}})

    def summary(self) -> dict[str, Any]:
        a, b = self.values["A"], self.values["B"]
        pairs = sorted(set(a) & set(b))
        ratios = sorted(_ratio(b[r], a[r]) for r in pairs)
        nan = float("nan")
        paired = statistics.median(ratios) if ratios else nan
        lo, hi = median_interval(ratios)
        # Judged on the paired ratios (A and B ran moments apart): "over" when their
        # median is more than 5% the worse way; "within" when the interval is inside
        # 5% too; "unsure" when the median is inside but the interval reaches beyond.
        # Below 6 pairs the interval is only the range: too few to judge.
        if len(ratios) < 6 and ratios and ratios[0] != ratios[-1]:
            verdict = "too few"
        elif self.higher_is_better:
            verdict = "over" if paired < 1 - LIMIT else "within" if lo >= 1 - LIMIT else "unsure"
        else:
            verdict = "over" if paired > 1 + LIMIT else "within" if hi <= 1 + LIMIT else "unsure"
        return {
            "a": statistics.median(a.values()) if a else nan,
            "b": statistics.median(b.values()) if b else nan,
            "ratio": _ratio(statistics.median(b.values()), statistics.median(a.values()))
            if a and b
            else nan,
            "pairs": len(ratios),
            "ratio_median": paired,
            "ratio_ci95": [lo, hi],
            "ratio_min": ratios[0] if ratios else nan,
            "ratio_max": ratios[-1] if ratios else nan,
            "verdict": verdict if ratios else "no pairs",
        }


def median_interval(ordered: list[float]) -> tuple[float, float]:
    """About 95% confidence for the median of ``ordered`` (sorted): the order statistics
    that bound it (the sign test's interval; no resampling). Below 6 values, the range."""
    n = len(ordered)
    if not n:
        return float("nan"), float("nan")
    # Ranks (from 1) floor(n/2 - 0.98√n) and ceil(1 + n/2 + 0.98√n): 1.96 standard
    # deviations of Binomial(n, 1/2) around n/2 (a slightly wide normal approximation).
    half = 0.98 * math.sqrt(n)
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half))
    return ordered[lo], ordered[hi]


def _ratio(b: float, a: float) -> float:
    if a == 0:  # threads of a driver that starts none: 0 against 0 is no change
        return 1.0 if b == 0 else float("inf")
    return b / a


@dataclass
class Scenario:
    """A scenario's measures, in the order first seen, and what went wrong."""

    name: str
    title: str
    measures: dict[str, Measure] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    load_before: str = ""
    load_after: str = ""
    seconds: float = 0.0

    def sample(
        self, what: str, side: str, rnd: int, fn: Callable[..., list[Figure]], *args: Any
    ) -> None:
        """Run one sample and keep its figures; a failure is kept and the run goes on
        (that round of the figures goes unpaired)."""
        log(f"{self.name.upper()} {what}")
        try:
            figures = fn(*args)
        except (RuntimeError, KeyError) as exc:
            self.errors.append(f"{what}: {exc}")
            log(f"{self.name.upper()} {what}: {exc}")
            return
        self.record(side, rnd, figures)

    def record(self, side: str, rnd: int, figures: list[Figure]) -> None:
        for f in figures:
            m = self.measures.setdefault(
                f.label, Measure(f.label, f.unit, f.scale, f.higher_is_better)
            )
            m.values[side][rnd] = f.value

    def warm_up(self, what: str, fn: Callable[..., list[Figure]], *args: Any) -> None:
        """One sample whose figures are dropped (it warms servers and caches); errors kept."""
        warm = Scenario(f"{self.name} warm-up", "")
        warm.sample(what, "A", 0, fn, *args)
        self.errors += warm.errors

    def table(self) -> str:
        labels = {
            key: f"{m.label} ({m.unit}{', more is better' if m.higher_is_better else ''})"
            for key, m in self.measures.items()
        }
        width = max(map(len, labels.values()), default=0)
        head = (
            f"{'':{width}} {'A':>9} {'B':>9} {'B/A':>6}  │ paired B/A: median"
            f" {'~95% CI':>13} {'min–max':>13} {'pairs':>5}  5%"
        )
        rows = [f"\n{self.name.upper()} — {self.title}", head]
        for key, m in self.measures.items():
            s = m.summary()
            ci = "{:.3f}–{:.3f}".format(*s["ratio_ci95"])
            spread = f"{s['ratio_min']:.3f}–{s['ratio_max']:.3f}"
            rows.append(
                f"{labels[key]:{width}} {_fmt(s['a'] * m.scale):>9} {_fmt(s['b'] * m.scale):>9} "
                f"{s['ratio']:6.3f}  │ {s['ratio_median']:>17.3f} {ci:>13} {spread:>13}"
                f" {s['pairs']:>5}  {s['verdict']}"
            )
        rows.append(
            f"load average before: {self.load_before}; after: {self.load_after}; "
            f"{self.seconds:.0f} s"
        )
        rows += [f"error: {e}" for e in self.errors]
        return "\n".join(rows)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "load_before": self.load_before,
            "load_after": self.load_after,
            "seconds": self.seconds,
            "errors": self.errors,
            "measures": {
                label: {
                    "unit": m.unit,
                    "scale": m.scale,
                    "higher_is_better": m.higher_is_better,
                    "A": m.values["A"],
                    "B": m.values["B"],
                    **m.summary(),
                }
                for label, m in self.measures.items()
            },
        }


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# --- the scenarios ------------------------------------------------------------------------


def _median_of(batches: list[dict[str, Any]], pick: Callable[[dict[str, Any]], float]) -> float:
    return statistics.median(pick(b) for b in batches)


def _b1_figures(batch: dict[str, Any], key: str) -> list[Figure]:
    return [
        Figure(f"{key} CPU/call seq", "µs", batch["seq"]["cpu_per_call"], 1e6),
        Figure(f"{key} CPU/call @32", "µs", batch["conc"]["cpu_per_call"], 1e6),
        Figure(f"{key} calls/s @32", "/s", batch["conc"]["throughput"], higher_is_better=True),
    ]


class Stepper:
    """A ``bench.worker calls`` process in step mode: connected and warm, one batch per turn."""

    def __init__(self, tree: Path, client: str, params: dict[str, Any]) -> None:
        self.what = f"{client} in {tree}"
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", client, "calls", json.dumps(params)],
            cwd=ROOT,
            env=tree_env(tree),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        # A reader thread, so that a worker that hangs fails the sample instead of the run.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def next(self, timeout: float) -> dict[str, Any]:
        """The worker's next JSON line."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"{self.what}: no answer in {timeout:g} s") from None
            if not line:
                self.errors.seek(0)
                tail = self.errors.read().decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"{self.what}: ended: {(tail or ['(no output)'])[-1][:300]}")
            if line.startswith("{"):
                result: dict[str, Any] = json.loads(line)
                return result

    def turn(self, timeout: float = 120) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self.next(timeout)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(5)
        self.errors.close()


def b1(sc: Scenario, trees: dict[str, Path], cfg: dict[str, Any]) -> None:
    steps = cfg["b1_steps"]
    with contextlib.ExitStack() as stack:
        bases = {mode: stack.enter_context(canned(mode)) for mode in cfg["modes"]}
        for rnd in range(cfg["b1_rounds"]):
            for mode, base in bases.items():
                params = {
                    "url": base + "/mcp",
                    "seq": cfg["seq"],
                    "conc_calls": cfg["conc_calls"],
                    "conc": 32,
                    "step": True,
                }
                for client in cfg["clients"]:
                    what = f"round {rnd + 1}: {client} {mode}"
                    log(f"B1 {what}: {steps} batches each, A and B in turn")
                    workers: dict[str, Stepper] = {}
                    try:
                        for side in flip(rnd):
                            workers[side] = Stepper(trees[side], client, params)
                        for side in SIDES:
                            workers[side].next(timeout=60)  # connected and warm
                        for step in range(steps):
                            for side in flip(rnd + step):
                                batch = workers[side].turn()
                                sc.record(
                                    side,
                                    rnd * steps + step,
                                    _b1_figures(batch, f"{client} {mode.upper()}"),
                                )
                    except RuntimeError as exc:
                        sc.errors.append(f"{what}: {exc}")
                        log(f"B1 {what}: {exc}")
                    finally:
                        for worker in workers.values():
                            worker.close()


def listing(tree: Path, client: str, mode: str, params: dict[str, Any], tools: int) -> list[Figure]:
    """B3: one ``bench.worker list`` process; each figure the median of its connects."""
    res = run_json(tree, ["-m", "bench.worker", client, "list", json.dumps(params)])
    bs, key = res["batches"], f"{client} {mode.upper()}"
    got = {b["tools"] for b in bs}
    if got != {tools}:
        raise RuntimeError(f"listed {sorted(got)} tools, not {tools}")
    return [
        Figure(f"{key} ready, wall", "ms", _median_of(bs, lambda b: b["wall"]), 1e3),
        Figure(f"{key} ready, CPU", "ms", _median_of(bs, lambda b: b["cpu"]), 1e3),
    ]


def b3(sc: Scenario, trees: dict[str, Path], cfg: dict[str, Any]) -> None:
    tools = cfg["b3_tools"]
    with contextlib.ExitStack() as stack:
        bases = {
            mode: stack.enter_context(canned(mode, tools=tools, page_size=50))
            for mode in cfg["modes"]
        }
        for mode, base in bases.items():  # the servers' first pages, not measured
            params = {"url": base + "/mcp", "batches": 1}
            for client in cfg["clients"]:
                sc.warm_up(f"{client} {mode}", listing, trees["A"], client, mode, params, tools)
        for rnd in range(cfg["b3_rounds"]):
            for mode, base in bases.items():
                params = {"url": base + "/mcp", "batches": cfg["b3_batches"]}
                for client in cfg["clients"]:
                    for side in flip(rnd):
                        what = f"round {rnd + 1}: {client} {mode} {side}"
                        sc.sample(
                            what, side, rnd, listing, trees[side], client, mode, params, tools
                        )


def importing(tree: Path, name: str) -> list[Figure]:
    """B5: ``import NAME`` in a fresh interpreter (``bench.micro``'s probe), the tree alone on the path."""
    probe = micro._PROBE.format(stmt=micro.IMPORTS[name])
    res = run_json(tree, ["-c", probe], timeout=60, harness=False)
    return [
        Figure(f"import {name}", "ms", res["t"], 1e3),
        Figure(f"import {name}: modules", "count", res["modules"]),
    ]


def b5(sc: Scenario, trees: dict[str, Path], cfg: dict[str, Any]) -> None:
    for name in B5_IMPORTS:  # the bytecode and file caches warmed for each tree
        for side in SIDES:
            sc.warm_up(f"{name} {side}", importing, trees[side], name)
    for rnd in range(cfg["b5_runs"]):
        for name in B5_IMPORTS:
            for side in flip(rnd):
                sc.sample(f"run {rnd + 1}: {name} {side}", side, rnd, importing, trees[side], name)


def hub_client(tree: Path, client: str, args: list[str], n: int, timeout: float) -> list[Figure]:
    """B9: one ``bench.hub --client`` process."""
    res = run_json(tree, ["-m", "bench.hub", "--client", client, *args], timeout=timeout)
    if not res["ready"] == res["servers"] == n:
        raise RuntimeError(f"{res['ready']} of {res['servers']} ready, {n} expected")
    return [
        Figure(f"{client} all ready", "s", res["time"]),
        Figure(f"{client} threads at ready", "count", res["threads_ready"]),
        Figure(f"{client} threads idle", "count", res["threads_idle"]),
        Figure(f"{client} peak RSS", "MiB", res["peak_rss"], 1 / MiB),
        Figure(f"{client} RSS growth", "MiB", res["peak_rss"] - res["base_rss"], 1 / MiB),
    ]


def b9(sc: Scenario, trees: dict[str, Path], cfg: dict[str, Any]) -> None:
    n, idle, timeout = cfg["hub_n"], 0.5, 60.0
    with tempfile.TemporaryDirectory(prefix="mcpcore-ab-hub-") as tmp, hub.servers(n) as urls:
        config = Path(tmp) / "mcp.json"
        hub.write_config(urls, config)
        args = ["--config", str(config), "--n", str(n), "--timeout", str(timeout)]
        args += ["--idle", str(idle)]
        limit = timeout + idle + 60
        for client in cfg["clients"]:  # the servers' first sessions, not measured
            sc.warm_up(client, hub_client, trees["A"], client, args, n, limit)
        for rnd in range(cfg["b9_rounds"]):
            for client in cfg["clients"]:
                for side in flip(rnd):
                    what = f"round {rnd + 1}: {client} {side}, {n} servers"
                    sc.sample(what, side, rnd, hub_client, trees[side], client, args, n, limit)


STEPS: dict[str, tuple[Callable[[Scenario, dict[str, Path], dict[str, Any]], None], str]] = {
    "b1": (b1, "tools/call echo on the canned server: client CPU per call, calls per second"),
    "b3": (b3, "{b3_tools:,} tools in pages of 50: construct → ready with every tool listed"),
    "b5": (b5, "import in a fresh interpreter, bytecode caches warm"),
    "b9": (b9, "a hub of {hub_n} demo servers from one mcp.json: all ready, threads, RSS"),
}


def rounds_note(name: str, cfg: dict[str, Any]) -> str:
    if name == "b1":
        return (
            f"{cfg['b1_rounds']} rounds of a worker per tree, each {cfg['b1_steps']} batches "
            f"of {cfg['seq']} sequential + {cfg['conc_calls']} at 32 in flight, A and B "
            "in turn: a pair per batch"
        )
    if name == "b3":
        return (
            f"{cfg['b3_rounds']} rounds; per process {cfg['b3_batches']} connect(s), median taken"
        )
    if name == "b5":
        return f"{cfg['b5_runs']} runs"
    return f"{cfg['b9_rounds']} rounds"


@contextlib.contextmanager
def servers_from_here() -> Iterator[None]:
    """The servers this module starts (canned, demo) import from this checkout."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(str(ROOT / p) for p in ("src", "src/adapters"))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="tree A (the base)")
    ap.add_argument("b", type=Path, help="tree B (the change)")
    ap.add_argument("--quick", action="store_true", help="a 2-minute smoke: few rounds, small")
    ap.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated of b1,b3,b5,b9")
    ap.add_argument("--rounds", type=int, help="rounds of B1, B3 and B9 (default 5, 16, 12)")
    ap.add_argument("--steps", type=int, help="B1's batch pairs per round (default 10)")
    ap.add_argument("--b5-runs", type=int, help="B5's alternated runs per import (default 41)")
    ap.add_argument("--hub-n", type=int, help="B9's servers (default 100; 50 with --quick)")
    ap.add_argument("--b3-tools", type=int, help="B3's tools (default 5,003: 101 pages of 50)")
    ap.add_argument("--seq", type=int, help="B1's sequential calls per batch (default 200)")
    ap.add_argument("--conc-calls", type=int, help="B1's calls at 32 in flight (default 320)")
    ap.add_argument("--modes", default="sse,json", help="B1's and B3's server modes")
    ap.add_argument("--clients", default="anyio,threaded", help="the drivers")
    ap.add_argument("--json", type=Path, help="also write every sample and summary here")
    args = ap.parse_args(argv)
    cfg: dict[str, Any] = dict(QUICK if args.quick else FULL)
    for key in ("b5_runs", "hub_n", "b3_tools", "seq", "conc_calls"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    if args.steps is not None:
        cfg["b1_steps"] = args.steps
    if args.rounds is not None:
        cfg.update(b1_rounds=args.rounds, b3_rounds=args.rounds, b9_rounds=args.rounds)
    cfg["modes"] = [m for m in args.modes.split(",") if m]
    cfg["clients"] = [c for c in args.clients.split(",") if c]
    only = [s.strip().lower() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SCENARIOS)
    if unknown:
        ap.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}

    t0 = time.monotonic()
    start_load = load()
    print(f"harness and servers: {ROOT}", flush=True)
    for side, tree in trees.items():
        print(f"{side} = {tree} ({describe(tree)})", flush=True)
    print(f"load average at start: {start_load}", flush=True)
    done: list[Scenario] = []
    with servers_from_here():
        for name in [s for s in SCENARIOS if s in only]:
            fn, title = STEPS[name]
            sc = Scenario(name, f"{title.format(**cfg)}; {rounds_note(name, cfg)}")
            sc.load_before = load()
            s0 = time.monotonic()
            log(f"running {name}")
            fn(sc, trees, cfg)
            sc.seconds = time.monotonic() - s0
            sc.load_after = load()
            print(sc.table(), flush=True)
            done.append(sc)
    total = time.monotonic() - t0
    print(
        f"\n{'quick (smoke) run, not a verdict; ' if args.quick else ''}"
        f"{total:.0f} s in all; load average at start {start_load}, at the end {load()}",
        flush=True,
    )
    if args.json:
        doc = {
            "trees": {side: str(tree) for side, tree in trees.items()},
            "config": cfg,
            "quick": args.quick,
            "seconds": total,
            "load_start": start_load,
            "load_end": load(),
            "scenarios": {sc.name: sc.as_json() for sc in done},
        }
        args.json.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 1 if any(sc.errors for sc in done) else 0


if __name__ == "__main__":
    sys.exit(main())
