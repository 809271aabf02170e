"""Tree against tree on the same machine state: B1's ``calls`` for two checkouts, alternating.

    python -m bench.ab /tmp/base . --rounds 5 --modes sse,json --clients anyio,threaded

Each round runs, for every client, a worker from tree A and one from tree B (the
order flips every round, so drift hits both alike), plus the official client and
httpcore's sync floor once, against one canned server per mode started from this
checkout. A worker imports the tree it stands for (``PYTHONPATH`` is that tree's
``src`` and ``src/adapters`` first). Prints medians of CPU per call (µs) and
throughput, each as a ratio to the official client measured in the same rounds,
the median of B/A over batches run back to back, and the load average before
and after. Point A and B at checkouts that do not change during the run
(``git worktree add --detach``), not at a tree being edited. For B1, B3, B5 and
B9 together, paired batch by batch with a confidence interval, see ``bench.ab_all``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.run import canned, log

OFFICIAL = "official"
FLOOR = "httpcore sync (floor)"


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"mcpcore-ab-pyc{tree}")
    env["PYTHONPATH"] = os.pathsep.join(str(tree / p) for p in ("", "src", "src/adapters"))
    return env


def run_worker(tree: Path, client: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.worker", client, "calls", json.dumps(params)],
        cwd=tree,
        env=_env(tree),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{client} in {tree}: {proc.stderr.strip()[-500:]}")
    batches: list[dict[str, Any]] = json.loads(lines[-1])["batches"]
    return batches


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="tree A (the base)")
    ap.add_argument("b", type=Path, help="tree B (the change)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", default="sse,json")
    ap.add_argument("--clients", default="anyio,threaded")
    ap.add_argument("--seq", type=int, default=300)
    ap.add_argument("--conc-calls", type=int, default=640)
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--no-refs", action="store_true", help="skip the official client and floor")
    args = ap.parse_args(argv)
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    ours = [c for c in args.clients.split(",") if c]
    refs = [] if args.no_refs else [OFFICIAL, FLOOR]
    print(f"A = {trees['A']}\nB = {trees['B']}\nload at start: {load()}", flush=True)
    for mode in [m for m in args.modes.split(",") if m]:
        samples: dict[str, list[dict[str, Any]]] = {}
        with canned(mode) as base:
            params = {
                "url": base + "/mcp",
                "seq": args.seq,
                "conc_calls": args.conc_calls,
                "conc": 32,
                "batches": args.batches,
            }
            for rnd in range(args.rounds):
                order = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
                for client in ours:
                    for side in order:
                        log(f"{mode} round {rnd + 1}: {client} {side}")
                        key = f"{client} {side}"
                        samples.setdefault(key, []).extend(run_worker(trees[side], client, params))
                for client in refs:
                    log(f"{mode} round {rnd + 1}: {client}")
                    samples.setdefault(client, []).extend(run_worker(trees["B"], client, params))
        rows = {
            key: {
                "seq": statistics.median(b["seq"]["cpu_per_call"] for b in bs),
                "conc": statistics.median(b["conc"]["cpu_per_call"] for b in bs),
                "tput": statistics.median(b["conc"]["throughput"] for b in bs),
            }
            for key, bs in samples.items()
        }
        ref = rows.get(OFFICIAL)
        print(f"\n{mode}, {args.rounds} rounds, load after: {load()}")
        print(f"{'':28} {'CPU seq µs':>12} {'CPU @32 µs':>12} {'calls/s @32':>12}")
        for key, r in rows.items():
            line = f"{key:28} {r['seq'] * 1e6:12.0f} {r['conc'] * 1e6:12.0f} {r['tput']:12.0f}"
            if ref:
                line += (
                    f"   {r['seq'] / ref['seq']:.3f}x {r['conc'] / ref['conc']:.3f}x"
                    f" {r['tput'] / ref['tput']:.2f}x"
                )
            print(line, flush=True)
        # Each round runs A and B back to back: the ratio within a round cancels the
        # machine's drift between rounds, which pooled medians do not.
        for client in ours:
            a, b = samples.get(f"{client} A", []), samples.get(f"{client} B", [])
            paired = {
                what: statistics.median(
                    y[part][field] / x[part][field] for x, y in zip(a, b, strict=False)
                )
                for what, part, field in (
                    ("seq", "seq", "cpu_per_call"),
                    ("@32", "conc", "cpu_per_call"),
                    ("calls/s", "conc", "throughput"),
                )
            }
            print(
                f"{client}: B/A, median of {min(len(a), len(b))} paired batches: "
                + ", ".join(f"{k} {v:.3f}" for k, v in paired.items()),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
