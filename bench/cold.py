"""Cold start (issue 40, DESIGN §21): B12, B3 cold and warm, and the CLI's first answer.

    python -m bench.cold                          # all three, 9 rounds: about 3 min on 2 cores
    python -m bench.cold --only b12 --rounds 15   # B12 and B3 (one process gives both)
    python -m bench.cold --only cli --json cold.json
    python -m bench.cold --tree /work/ab-A        # the library from another checkout

Every sample is a fresh process, and the clients take turns within a round
(the order rotates each round), so a busy machine's drift hits them alike;
each client's figure is a median over the rounds, and each ratio is *paired*:
ours ÷ theirs within one round, then the median (and min–max) of those.

* **B12** (``bench/cold_start.py``, run by path in a fresh interpreter): from
  the parent starting the process to the first result of one ``echo`` call,
  having imported the client, connected, and become ready with every tool of
  a canned server of 5,003 tools in 101 pages of 50 listed. Wall is from the
  parent's clock before it started the process (the interpreter's own start
  counts) to the child's at the result (both CLOCK_MONOTONIC); CPU is the
  child's ``process_time()`` at the result. Beside the official client,
  fastmcp, and the floors (raw JSON-RPC over httpcore, imported the same way).
* **B3 cold / warm**, from the same processes: construct → ready with every
  tool listed, for the process's first connection (*cold*: after the client's
  import, so whatever a client defers to its first connection, such as the
  HTTP stack, is in it) and for the connections after it in that process
  (*warm*: the median of ``--warm`` of them; this is what ``python -m bench``'s
  B3 table times).
* **CLI**: ``mcpcore call URL echo text=hello`` and ``mcpcore tools URL`` as
  whole processes (spawn → exit, wall and the child's CPU), beside ``fastmcp
  call URL echo text=hello`` and ``fastmcp list URL``, on one canned server of
  3 tools. The console scripts next to this interpreter, or ``python -m``.

Budgets: B12 ≤ 0.25× the official client and ≤ 0.25× fastmcp (both drivers);
B3 ≤ 0.4× the official client, cold and warm; CLI ≤ 0.25× fastmcp's command.
The load average is printed before and after each part.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.ab import load
from bench.run import canned, log

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OURS = ("anyio", "threaded")
THEIRS = ("official", "fastmcp")
FLOORS = ("floor-sync", "floor-async")
CLIENTS = (*OURS, *THEIRS, *FLOORS)
TOOLS = 5003
BUDGET = {"b12": 0.25, "b3": 0.4, "cli": 0.25}
CLI_COMMANDS = {
    # label: (mcpcore's arguments, fastmcp's arguments), {url} filled in
    "call": (["call", "{url}", "echo", "text=hello"], ["call", "{url}", "echo", "text=hello"]),
    "tools": (["tools", "{url}"], ["list", "{url}"]),
}


def env_for(tree: Path) -> dict[str, str]:
    """A client process's environment: the library from ``tree``, bytecode caches warm."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("COVERAGE_PROCESS_START", None)  # a coverage hook would tax every sample
    env.pop("COVERAGE_PROCESS_CONFIG", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "mcpcore-cold-pyc")
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), str(tree / "src/adapters")])
    return env


def rotate(items: tuple[str, ...] | list[str], rnd: int) -> list[str]:
    k = rnd % len(items)
    return [*items[k:], *items[:k]]


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# --- B12 and B3 ---------------------------------------------------------------------------


def cold_sample(
    client: str, url: str, warm: int, env: dict[str, str], trio: bool
) -> dict[str, float]:
    """One fresh process of ``bench/cold_start.py``: its figures in seconds."""
    argv = [sys.executable, str(HERE / "cold_start.py"), client, url, str(warm)]
    spawned = time.perf_counter()
    proc = subprocess.run(
        argv if trio else [*argv, "no-trio"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{client}: exit {proc.returncode}: {tail[:300]}")
    res = json.loads(lines[-1])
    if res["text"] != "hello":
        raise RuntimeError(f"{client}: the call answered {res['text']!r}")
    m, connects = res["marks"], res["connects"]
    if any(c[2] != TOOLS for c in connects):
        raise RuntimeError(f"{client}: listed {sorted({c[2] for c in connects})} tools")
    return {
        "b12 wall": m["result"][0] - spawned,
        "b12 CPU": m["result"][1],
        "interpreter": m["start"][0] - spawned,
        "import": m["imported"][0] - m["start"][0],
        "b3 cold wall": connects[0][0],
        "b3 cold CPU": connects[0][1],
        "b3 warm wall": med([c[0] for c in connects[1:]]),
        "b3 warm CPU": med([c[1] for c in connects[1:]]),
    }


def run_b12(cfg: dict[str, Any], out: dict[str, Any]) -> None:
    env = env_for(cfg["tree"])
    for mode, trio in [(m, t) for m in cfg["modes"] for t in cfg["trio"]]:
        samples: dict[str, list[dict[str, float]]] = {c: [] for c in cfg["clients"]}
        errors: list[str] = []
        before = load()
        with canned(mode, tools=TOOLS, page_size=50) as base:
            url = base + "/mcp"
            for client in cfg["clients"]:  # bytecode caches, the server's first pages
                log(f"B12 {mode} warm-up: {client}")
                try:
                    cold_sample(client, url, 1, env, trio)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    errors.append(f"warm-up: {exc}")
            for rnd in range(cfg["rounds"]):
                for client in rotate(cfg["clients"], rnd):
                    log(f"B12 {mode} round {rnd + 1}: {client}")
                    try:
                        samples[client].append(cold_sample(client, url, cfg["warm"], env, trio))
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        errors.append(f"round {rnd + 1}: {exc}")
                        samples[client].append({})
        out[f"b12 {mode} {'trio' if trio else 'no-trio'}"] = {
            "load_before": before,
            "load_after": load(),
            "samples": samples,
            "errors": errors,
        }


# --- the CLI --------------------------------------------------------------------------------


def console(name: str, module: str) -> list[str]:
    """The console script next to this interpreter, else ``python -m``."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", module]


def cli_sample(argv: list[str], env: dict[str, str], expect: str) -> dict[str, float]:
    """One whole process: spawn → exit wall, and its CPU (user + system, from ``wait4``)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0 or expect not in text:
        tail = (errors.strip().splitlines() or text.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{' '.join(argv[-4:])}: exit {proc.returncode}: {tail[:300]}")
    return {"wall": wall, "CPU": usage.ru_utime + usage.ru_stime}


ENTRY = {
    # what each console script runs, for the runs where trio cannot be imported
    "mcpcore": "from mcpcore_cli import main as entry",
    "fastmcp": "from fastmcp.cli import app as entry",
}


def programs(trio: bool) -> dict[str, list[str]]:
    """Each CLI as a user starts it: the console script, or (no trio) its entry point
    run by ``python -c`` after ``sys.modules["trio"] = None``."""
    if trio:
        return {
            "mcpcore": console("mcpcore", "mcpcore_cli"),
            "fastmcp": console("fastmcp", "fastmcp"),
        }
    return {
        prog: [
            sys.executable,
            "-c",
            f"import sys; sys.modules['trio'] = None; sys.argv[0] = {prog!r}; {entry}; "
            "sys.exit(entry())",
        ]
        for prog, entry in ENTRY.items()
    }


def run_cli(cfg: dict[str, Any], out: dict[str, Any]) -> None:
    env = env_for(cfg["tree"])
    env["COLUMNS"] = "100"  # the same table width for both, whatever the terminal
    for trio in cfg["trio"]:
        before = load()
        samples: dict[str, list[dict[str, float]]] = {}
        errors: list[str] = []
        progs = programs(trio)
        with canned("sse") as base:
            url = base + "/mcp"
            runs = {
                f"{prog} {label}": (progs[prog] + [a.format(url=url) for a in args[i]], expect)
                for label, args in CLI_COMMANDS.items()
                for i, prog in enumerate(("mcpcore", "fastmcp"))
                for expect in ["hello" if label == "call" else "echo"]
            }
            for what, (argv, expect) in runs.items():
                samples[what] = []
                log(f"CLI warm-up: {what}")
                try:
                    cli_sample(argv, env, expect)
                except RuntimeError as exc:
                    errors.append(f"warm-up: {exc}")
            for rnd in range(cfg["rounds"]):
                for what in rotate(list(runs), rnd):
                    log(f"CLI round {rnd + 1}: {what}")
                    argv, expect = runs[what]
                    try:
                        samples[what].append(cli_sample(argv, env, expect))
                    except RuntimeError as exc:
                        errors.append(f"round {rnd + 1}: {exc}")
                        samples[what].append({})
        out[f"cli {'trio' if trio else 'no-trio'}"] = {
            "load_before": before,
            "load_after": load(),
            "commands": {w: r[0] for w, r in runs.items()},
            "samples": samples,
            "errors": errors,
        }


# --- summaries ------------------------------------------------------------------------------


def paired(
    ours: list[dict[str, float]], ref: list[dict[str, float]], key: str
) -> tuple[float, float, float, int]:
    """Median, min and max of ours ÷ ref over the rounds both have, and how many."""
    ratios = sorted(
        a[key] / b[key] for a, b in zip(ours, ref, strict=True) if key in a and key in b
    )
    if not ratios:
        return float("nan"), float("nan"), float("nan"), 0
    return statistics.median(ratios), ratios[0], ratios[-1], len(ratios)


def spread(samples: list[dict[str, float]], key: str) -> str:
    xs = sorted(s[key] for s in samples if key in s)
    if not xs:
        return "—"
    return f"{med(xs) * 1e3:,.0f} ms ({xs[0] * 1e3:,.0f}–{xs[-1] * 1e3:,.0f})"


def ratio_text(r: tuple[float, float, float, int]) -> str:
    return f"{r[0]:.2f}× ({r[1]:.2f}–{r[2]:.2f})"


def verdict(r: tuple[float, float, float, int], budget: float) -> str:
    return "met" if r[3] and r[0] <= budget else "not met"


WHERE = {
    True: "trio installed (this venv: httpcore imports it)",
    False: "trio not installed (a user's install)",
}


def summarize(out: dict[str, Any]) -> list[str]:
    lines, verdicts = section(out)
    return lines + ["", "### Verdicts", ""] + [f"- {v}" for v in verdicts]


def section(out: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The tables (markdown lines) and the verdicts of a run's parts."""
    lines: list[str] = []
    verdicts: list[str] = []
    for part, data in out.items():
        if not part.startswith("b12"):
            continue
        mode = part.split()[1].upper()
        where = WHERE[part.endswith(" trio")]
        s = data["samples"]
        n = len(next(iter(s.values())))
        lines += [
            f"\n### B12 and B3 cold / warm — canned {mode} server, {TOOLS:,} tools in pages of 50,"
            f" {where} ({n} round(s); load {data['load_before']} → {data['load_after']})",
            "",
            "Each cell: median (min–max) over the rounds; ×official and ×fastmcp are paired"
            " (ours ÷ theirs within a round), median (min–max).",
            "",
            "| client | B12 wall: spawn → first result | CPU | ×official (wall) | ×fastmcp (wall)"
            " | ×official (CPU) | interpreter | import | B3 cold | ×official | B3 warm"
            " | ×official |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for client, samples in s.items():
            row = [client, spread(samples, "b12 wall"), spread(samples, "b12 CPU")]
            for ref, key in (
                ("official", "b12 wall"),
                ("fastmcp", "b12 wall"),
                ("official", "b12 CPU"),
            ):
                row.append(ratio_text(paired(samples, s[ref], key)) if ref in s else "—")
            row += [spread(samples, "interpreter"), spread(samples, "import")]
            for key in ("b3 cold wall", "b3 warm wall"):
                row.append(spread(samples, key))
                row.append(
                    ratio_text(paired(samples, s["official"], key)) if "official" in s else "—"
                )
            lines.append("| " + " | ".join(row) + " |")
        for client in OURS:
            if client not in s:
                continue
            for ref in THEIRS:
                if ref in s:
                    r = paired(s[client], s[ref], "b12 wall")
                    verdicts.append(
                        f"B12 {mode} {where.split(' (')[0]} {client}: {ratio_text(r)} ×{ref}, wall (budget ≤ "
                        f"{BUDGET['b12']}×): {verdict(r, BUDGET['b12'])}"
                    )
            if "official" in s:
                for key, word in (("b3 cold wall", "cold"), ("b3 warm wall", "warm")):
                    r = paired(s[client], s["official"], key)
                    verdicts.append(
                        f"B3 {word} {mode} {where.split(' (')[0]} {client}: {ratio_text(r)} ×official (budget ≤ "
                        f"{BUDGET['b3']}×): {verdict(r, BUDGET['b3'])}"
                    )
        lines += [f"- error: {e}" for e in data["errors"]]
    for part, data in out.items():
        if not part.startswith("cli"):
            continue
        s = data["samples"]
        n = len(next(iter(s.values())))
        where = WHERE[part.endswith(" trio")]
        lines += [
            f"\n### The CLI's first answer — whole processes, canned SSE server of 3 tools,"
            f" {where} ({n} round(s); load {data['load_before']} → {data['load_after']})",
            "",
            "| command | wall: spawn → exit | CPU | ×fastmcp (wall) | ×fastmcp (CPU) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for label, args in CLI_COMMANDS.items():
            ours, ref = s[f"mcpcore {label}"], s[f"fastmcp {label}"]
            for i, (prog, samples) in enumerate((("mcpcore", ours), ("fastmcp", ref))):
                row = [
                    f"`{prog} {args[i][0]} URL …`",
                    spread(samples, "wall"),
                    spread(samples, "CPU"),
                ]
                if prog == "mcpcore":
                    row += [
                        ratio_text(paired(ours, ref, "wall")),
                        ratio_text(paired(ours, ref, "CPU")),
                    ]
                else:
                    row += ["1.00×", "1.00×"]
                lines.append("| " + " | ".join(row) + " |")
            r = paired(ours, ref, "wall")
            verdicts.append(
                f"CLI {where.split(' (')[0]}: mcpcore {label} {ratio_text(r)} ×fastmcp {args[1][0]},"
                f" wall (budget ≤ {BUDGET['cli']}×): {verdict(r, BUDGET['cli'])}"
            )
        lines += [f"- error: {e}" for e in data["errors"]]
    return lines, verdicts


def run_parts(cfg: dict[str, Any], only: set[str]) -> dict[str, Any]:
    """B12 (with B3 cold and warm) and the CLI, as ``python -m bench`` runs them too."""
    out: dict[str, Any] = {}
    with servers_from(ROOT):
        if "b12" in only:
            run_b12(cfg, out)
        if "cli" in only:
            run_cli(cfg, out)
    return out


@contextlib.contextmanager
def servers_from(tree: Path) -> Iterator[None]:
    """The canned servers import from this checkout (they are the harness, not measured)."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(str(ROOT / p) for p in (".", "src", "src/adapters"))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="b12,cli", help="b12 (with B3 cold/warm), cli")
    ap.add_argument("--rounds", type=int, default=9, help="fresh processes per client (9)")
    ap.add_argument("--warm", type=int, default=2, help="B3 warm connections per process (2)")
    ap.add_argument("--modes", default="sse", help="server modes for B12/B3: sse,json")
    ap.add_argument("--clients", default=",".join(CLIENTS), help="B12's clients")
    ap.add_argument(
        "--trio",
        default="absent,installed",
        help="runs with trio importable (installed) and/or not (absent: a user's install)",
    )
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose library runs")
    ap.add_argument("--json", type=Path, help="also write every sample here")
    args = ap.parse_args(argv)
    cfg: dict[str, Any] = {
        "rounds": args.rounds,
        "warm": max(1, args.warm),
        "modes": [m for m in args.modes.split(",") if m],
        "clients": [c for c in args.clients.split(",") if c],
        "trio": [t == "installed" for t in args.trio.split(",") if t],
        "tree": args.tree.resolve(),
    }
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    start = load()
    print(f"tree: {cfg['tree']}; load average at start: {start}", flush=True)
    out = run_parts(cfg, only)
    print("\n".join(summarize(out)), flush=True)
    print(f"\nload average at start {start}, at the end {load()}", flush=True)
    if args.json:
        args.json.write_text(
            json.dumps({"config": {**cfg, "tree": str(cfg["tree"])}, **out}, indent=1)
        )
    return 1 if any(part["errors"] for part in out.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
