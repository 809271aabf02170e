"""Run every budget (B1–B7, B11) side by side, and B8 and B10, and write bench/report.md + bench/report.png.

    python -m bench            # the full run (takes a while; the report is committed)
    python -m bench --quick    # a smoke run: tiny repeats, no fastmcp, 1 MiB instead of 50 MiB

Servers run in their own processes (the canned server of ``bench.canned_server``
and the official SDK server of ``tests/servers/sdk_server.py``); every client
runs in its own process (``bench.worker``) so only the client is measured.
B10 (``bench.eras``) adds the 2026-07-28 revision: connect to ready and B1's calls
in each era, against the SDK server and a handshake-only one. B12 (``bench.cold``)
adds the cold start: a fresh process to its first result, B3's first connection
of a process beside a later one, and the CLI's commands as whole processes.
Clients alternate round by round so a noisy machine's drift hits them alike;
figures are medians over the repeats, and budgets are judged on ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

OURS = ("anyio", "threaded")
# B1 only: the HTTP stack alone (httpcore, no MCP client), the floor under any client on it
FLOORS = ("httpcore sync (floor)", "httpcore async (floor)")
MiB = 1024 * 1024


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Measure installed-package behaviour: bytecode caches on (kept out of the tree).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "mcpcore-bench-pyc")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def canned(mode: str, tools: int = 3, page_size: int = 0, resources: int = 0) -> Iterator[str]:
    port = free_port()
    logf = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.canned_server",
            "--port",
            str(port),
            "--mode",
            mode,
            "--tools",
            str(tools),
            "--page-size",
            str(page_size),
            "--resources",
            str(resources),
        ],
        cwd=ROOT,
        env=_env(),
        stdout=logf,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("canned server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logf.close()


def _http(base: str, method: str, path: str) -> dict[str, Any]:
    with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=10) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(
            next(
                ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")
            ).split(b":")[1]
        )
        while len(body) < length:
            body += s.recv(65536)
    return json.loads(body)


def reset_stats(base: str) -> None:
    _http(base, "POST", "/reset")


def read_stats(base: str) -> dict[str, Any]:
    stats = _http(base, "GET", "/stats")
    stats["accepts"] -= 1  # this very connection
    return stats


def worker(
    client: str, scenario: str, params: dict[str, Any], timeout: float = 600
) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.worker", client, scenario, json.dumps(params)],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ratio(r: dict[str, Any], ref: dict[str, Any], key: str) -> float:
    """``r[key]`` as a multiple of the reference client's (NaN when it has none)."""
    return r[key] / ref[key] if key in ref else float("nan")


# --- the budgets ------------------------------------------------------------------------


def b1(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    import peers

    out: dict[str, Any] = {}
    servers: list[tuple[str, Any]] = [("canned SSE", lambda: canned("sse"))]
    if not cfg["quick"]:
        servers += [
            ("canned JSON", lambda: canned("json")),
            ("SDK server SSE", lambda: _sdk(peers, "stateful-sse")),
            ("SDK server JSON", lambda: _sdk(peers, "stateful-json")),
        ]
    for label, make in servers:
        per: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
        errors: dict[str, str] = {}
        with make() as base:
            for rnd in range(cfg["rounds"]):
                for client in clients:
                    log(f"B1 {label} round {rnd + 1}: {client}")
                    res = worker(
                        client,
                        "calls",
                        {
                            "url": base + "/mcp",
                            "seq": cfg["seq"],
                            "conc_calls": cfg["conc_calls"],
                            "conc": 32,
                            "batches": cfg["batches"],
                        },
                    )
                    if "error" in res:
                        errors[client] = res["error"]
                    else:
                        per[client].extend(res["batches"])
        rows = {}
        for client in clients:
            bs = per[client]
            if not bs:
                rows[client] = {"error": errors.get(client, "no data")}
                continue
            rows[client] = {
                "seq_cpu": med([b["seq"]["cpu_per_call"] for b in bs]),
                "seq_lat_med": med([b["seq"]["lat"]["median"] for b in bs]),
                "seq_lat_p99": med([b["seq"]["lat"]["p99"] for b in bs]),
                "conc_cpu": med([b["conc"]["cpu_per_call"] for b in bs]),
                "conc_tput": med([b["conc"]["throughput"] for b in bs]),
                "conc_lat_med": med([b["conc"]["lat"]["median"] for b in bs]),
                "conc_lat_p99": med([b["conc"]["lat"]["p99"] for b in bs]),
                "samples": len(bs),
            }
        out[label] = rows
    return out


@contextlib.contextmanager
def _sdk(peers: Any, mode: str, page_size: int | None = None) -> Iterator[str]:
    with peers.sdk_server(mode, page_size) as peer:
        yield peer.url.rsplit("/mcp", 1)[0]


def b2(cfg: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.micro", "b2", json.dumps({"repeats": cfg["micro_repeats"]})],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def b8(cfg: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.pending",
            "--json",
            "--repeats",
            str(cfg["pending_repeats"]),
            "--steps",
            str(cfg["pending_steps"]),
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def b3(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    errors: dict[str, str] = {}
    with (
        canned("json", tools=cfg["tools"], page_size=50) as base_json,
        canned("sse", tools=cfg["tools"], page_size=50) as base_sse,
    ):
        for rnd in range(cfg["rounds"]):
            for client in clients:
                for base in (base_sse, base_json)[: len(cfg["modes"])]:
                    log(f"B3 round {rnd + 1}: {client} {'SSE' if base is base_sse else 'JSON'}")
                    res = worker(
                        client, "list", {"url": base + "/mcp", "batches": cfg["list_batches"]}
                    )
                    if "error" in res:
                        errors[client] = res["error"]
                    else:
                        for b in res["batches"]:
                            b["server"] = "SSE" if base is base_sse else "JSON"
                        per[client].extend(res["batches"])
    out = {}
    for client in clients:
        bs = per[client]
        if not bs:
            out[client] = {"error": errors.get(client, "no data")}
            continue
        out[client] = {
            "wall_sse": med([b["wall"] for b in bs if b["server"] == "SSE"]),
            "wall_json": med([b["wall"] for b in bs if b["server"] == "JSON"]),
            "cpu": med([b["cpu"] for b in bs]),
            "tools": bs[0]["tools"],
            "samples": len(bs),
        }
    return out


def b3_resources(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    """B3 for resources: connect, then every resource listed (all pages of 50).

    The canned servers list 3 tools here, so connect to ready is one small page
    for mcpcore (the official client lists nothing on connect) and the time is
    the resources' own.
    """
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    errors: dict[str, str] = {}
    n = cfg["tools"]
    with (
        canned("json", page_size=50, resources=n) as base_json,
        canned("sse", page_size=50, resources=n) as base_sse,
    ):
        for rnd in range(cfg["rounds"]):
            for client in clients:
                for base in (base_sse, base_json)[: len(cfg["modes"])]:
                    label = "SSE" if base is base_sse else "JSON"
                    log(f"B3 resources round {rnd + 1}: {client} {label}")
                    res = worker(
                        client, "resources", {"url": base + "/mcp", "batches": cfg["list_batches"]}
                    )
                    if "error" in res:
                        errors[client] = res["error"]
                    else:
                        for b in res["batches"]:
                            b["server"] = label
                        per[client].extend(res["batches"])
    out = {}
    for client in clients:
        bs = per[client]
        if not bs:
            out[client] = {"error": errors.get(client, "no data")}
            continue
        out[client] = {
            "wall_sse": med([b["wall"] for b in bs if b["server"] == "SSE"]),
            "wall_json": med([b["wall"] for b in bs if b["server"] == "JSON"]),
            "cpu": med([b["cpu"] for b in bs]),
            "items": bs[0]["items"],
            "samples": len(bs),
        }
    return out


def b11(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    """B11: one read of a blob resource of ``big`` bytes, its bytes decoded."""
    size = cfg["big"]
    out: dict[str, Any] = {}
    for mode in cfg["modes"]:
        with canned(mode) as base:
            for client in clients:
                log(f"B11 {mode}: {client} ({size // MiB} MiB blob)")
                res = worker(client, "blob", {"url": base + "/mcp", "size": size})
                if "base" in res:
                    res["rss_ratio"] = (res["peak"] - res["base"]) / size
                out[f"{client} {mode.upper()}"] = res
    return out


def b4(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    size = cfg["big"]
    out: dict[str, Any] = {}
    for mode in cfg["modes"]:
        with canned(mode) as base:
            for client in clients:
                log(f"B4 {mode}: {client} ({size // MiB} MiB)")
                res = worker(client, "big", {"url": base + "/mcp", "size": size})
                if "base" in res:
                    res["rss_ratio"] = (res["peak"] - res["base"]) / size
                out[f"{client} {mode.upper()}"] = res
    return out


def b5(cfg: dict[str, Any]) -> dict[str, Any]:
    skip = [] if "fastmcp" in cfg["clients"] else ["fastmcp"]
    if cfg["quick"]:
        skip.append("official (mcp client)")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.micro",
            "b5",
            json.dumps({"repeats": cfg["import_repeats"], "skip": skip}),
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def b6(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in cfg["modes"]:
        with canned(mode) as base:
            for client in clients:
                log(f"B6 {mode}: {client}")
                reset_stats(base)
                res = worker(
                    client,
                    "cancel",
                    {"url": base + "/mcp", "repeats": cfg["cancel_repeats"], "wait": 0.2},
                )
                stats = read_stats(base)
                if "error" in res and not res.get("times"):
                    out[f"{client} {mode.upper()}"] = {"error": res["error"]}
                    continue
                out[f"{client} {mode.upper()}"] = {
                    "note": res.get("error"),
                    "median": med(res["times"]),
                    "max": max(res["times"]),
                    "started": stats["slow_started"],
                    "notices": len(stats["cancelled"]),
                }
    return out


def b7(cfg: dict[str, Any], clients: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in cfg["modes"]:
        with canned(mode) as base:
            for client in clients:
                log(f"B7 {mode}: {client}")
                reset_stats(base)
                res = worker(
                    client, "pool", {"url": base + "/mcp", "calls": cfg["pool_calls"], "conc": 32}
                )
                stats = read_stats(base)
                if "error" in res:
                    out[f"{client} {mode.upper()}"] = res
                    continue
                out[f"{client} {mode.upper()}"] = {
                    "calls": res["calls"],
                    "connections": stats["accepts"],
                    "pool": 10 if client in OURS else None,
                }
    return out


# --- the report -------------------------------------------------------------------------


def fmt_us(s: float) -> str:
    return f"{s * 1e6:,.0f} µs"


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:,.1f} ms"


def _issue26_lines(b1: dict[str, dict[str, Any]]) -> list[str]:
    """Issue 26's performance lines, judged on the canned servers' B1 rows: CPU per call
    (sequential and with 32 in flight) ≤ 0.35× the official client on SSE and ≤ 0.5× on
    JSON on both drivers; anyio's sequential JSON under 0.45×; the threaded driver's
    throughput with 32 in flight at or above httpcore's sync pool alone (the floor)."""
    lines = []
    for server, rows in b1.items():
        off, floor = rows.get("official", {}), rows.get(FLOORS[0], {})
        if not server.startswith("canned") or "seq_cpu" not in off:
            continue
        limit = 0.35 if "SSE" in server else 0.5
        fs = floor.get("seq_cpu", float("nan")) / off["seq_cpu"]
        fc = floor.get("conc_cpu", float("nan")) / off["conc_cpu"]
        for client in OURS:
            r = rows.get(client, {})
            if "seq_cpu" not in r:
                continue
            rs, rc = r["seq_cpu"] / off["seq_cpu"], r["conc_cpu"] / off["conc_cpu"]
            lines.append(
                f"Issue 26, {server} {client}: CPU/call {rs:.2f}× seq, {rc:.2f}× at 32 in flight "
                f"(budget ≤ {limit}×; httpcore sync alone {fs:.2f}× / {fc:.2f}×): "
                + ("met" if rs <= limit and rc <= limit else "not met")
            )
            if client == "anyio" and "JSON" in server:
                lines.append(
                    f"Issue 26, {server} anyio sequential: {rs:.2f}× (under 0.45× with room): "
                    + ("met" if rs < 0.45 else "not met")
                )
            if client == "threaded" and "conc_tput" in floor:
                lines.append(
                    f"Issue 26, {server} threaded throughput at 32 in flight: "
                    f"{r['conc_tput']:,.0f} calls/s, httpcore sync alone {floor['conc_tput']:,.0f}: "
                    + ("met" if r["conc_tput"] >= floor["conc_tput"] else "not met")
                )
    return lines


def mark(ok: bool | None) -> str:
    return "**met**" if ok else ("**not met**" if ok is not None else "n/a")


def _listing_rows(
    w: Callable[[str], None], verdicts: list[str], rows: dict[str, Any], count: str, label: str
) -> list[bool]:
    """B3's table rows (tools or resources): each client's wall time on SSE and JSON
    beside the official client's; returns the verdicts of our clients (≤ 0.4×)."""
    official = rows.get("official", {})
    oks: list[bool] = []
    for client, r in rows.items():
        if "error" in r:
            w(f"| {client} | error: {r['error']} | | | | | |")
            continue
        rs, rj = ratio(r, official, "wall_sse"), ratio(r, official, "wall_json")
        w(
            f"| {client} | {fmt_ms(r['wall_sse'])} | {rs:.2f}× | {fmt_ms(r['wall_json'])} | "
            f"{rj:.2f}× | {fmt_ms(r['cpu'])} | {r[count]:,} |"
        )
        if client in OURS and official:
            ok = all(x <= 0.4 for x in (rs, rj) if x == x)
            oks.append(ok)
            verdicts.append(
                f"{label} {client}: {rs:.2f}× (SSE), {rj:.2f}× (JSON) (budget ≤ 0.4×): "
                f"{'met' if ok else 'not met'}"
            )
    return oks


def write_report(
    res: dict[str, Any], cfg: dict[str, Any], path: Path, png: Path | None
) -> list[str]:
    lines: list[str] = []
    verdicts: list[str] = []
    w = lines.append
    w("# mcpcore benchmark report")
    w("")
    w(
        f"Generated by `python -m bench{' --quick' if cfg['quick'] else ''}` on "
        f"{datetime.date.today().isoformat()}: Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average at start {res['meta']['load']}. "
        f"Clients: {', '.join(cfg['clients'])}. "
        "Every figure is a median over repeats taken in the same run, clients alternating round "
        "by round; the budgets are judged on the ratios (this project ÷ the official client)."
    )
    w("")
    for note in res["meta"]["notes"]:
        w(f"- {note}")
    w("")
    if png is not None:
        w(f"![B1 CPU per call and throughput]({png.name})")
        w("")

    # B1
    w("## B1 — tools/call round trip (client CPU, latency, 32 in flight)")
    w("")
    w(
        "Budget: CPU per call ≤ 0.35× the official client against an SSE server, ≤ 0.5× against a "
        "JSON server; throughput with 32 in flight ≥ 3×. Judged on the canned servers (the SDK "
        "server rows show the same clients against a server that is itself the bottleneck). "
        "The *floor* rows are no MCP client at all: the same `tools/call` POSTs through httpcore "
        "alone (sync pool on threads; async pool on anyio), replies read whole and not decoded — "
        "what any client on httpcore pays before doing anything MCP."
    )
    w("")
    w(
        "| server | client | CPU/call seq | ×official | latency med / p99 | CPU/call 32 in flight | ×official | calls/s 32 in flight | ×official | latency med / p99 (32) |"
    )
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    b1_ok: list[bool] = []
    for server, rows in res["b1"].items():
        off = rows.get("official", {})
        # what httpcore alone measured in this run: a budget the floor misses, no client on it meets
        floors = [
            f"{name.split(' (')[0]} {r['seq_cpu'] / off['seq_cpu']:.2f}× / "
            f"{r['conc_cpu'] / off['conc_cpu']:.2f}× / {r['conc_tput'] / off['conc_tput']:.2f}×"
            for name, r in rows.items()
            if name in FLOORS and "error" not in r and "seq_cpu" in off
        ]
        for client, r in rows.items():
            if "error" in r:
                w(f"| {server} | {client} | error: {r['error']} | | | | | | | |")
                continue
            rs, rc = ratio(r, off, "seq_cpu"), ratio(r, off, "conc_cpu")
            rt = ratio(r, off, "conc_tput")
            w(
                f"| {server} | {client} | {fmt_us(r['seq_cpu'])} | {rs:.2f}× | "
                f"{fmt_ms(r['seq_lat_med'])} / {fmt_ms(r['seq_lat_p99'])} | {fmt_us(r['conc_cpu'])} | "
                f"{rc:.2f}× | {r['conc_tput']:,.0f} | {rt:.2f}× | "
                f"{fmt_ms(r['conc_lat_med'])} / {fmt_ms(r['conc_lat_p99'])} |"
            )
            if client in OURS and server.startswith("canned") and "seq_cpu" in off:
                limit = 0.35 if "SSE" in server else 0.5
                ok = rs <= limit and rc <= limit and rt >= 3.0
                b1_ok.append(ok)
                floor_note = (
                    f" (httpcore alone in this run, seq / at 32 / throughput: {'; '.join(floors)})"
                    if floors and not ok
                    else ""
                )
                verdicts.append(
                    f"B1 {server} {client}: CPU/call {rs:.2f}× seq, {rc:.2f}× at 32 in flight "
                    f"(budget ≤ {limit}×), throughput {rt:.2f}× (budget ≥ 3×): {'met' if ok else 'not met'}"
                    + floor_note
                )
    w("")
    w(f"B1: {mark(all(b1_ok) if b1_ok else None)}")
    for line in _issue26_lines(res["b1"]):
        verdicts.append(line)
    if b1_ok and not all(b1_ok):
        w("")
        w(
            "Where B1 is not met, its verdict (below) gives what httpcore alone measured in the "
            "same run: a budget the floor itself misses, no client on httpcore meets."
        )
    w("")

    # B2
    w("## B2 — core cost without network (SSE decoding + JSON-RPC decoding + rendering)")
    w("")
    w(
        "Budget: ≤ 1.3× plain `json.loads` of the same payloads (mixed sizes). Per message: a new "
        "`SSEDecoder`, the SSE bytes fed in 64 KiB chunks, `decode_message`, `render_result`."
    )
    w("")
    w("| payload | core path | json.loads | ratio |")
    w("| --- | --- | --- | --- |")
    for label, r in res["b2"].items():
        w(f"| {label} | {fmt_us(r['core'])} | {fmt_us(r['json_loads'])} | {r['ratio']:.2f}× |")
    ok2 = res["b2"]["mix"]["ratio"] <= 1.3
    w("")
    w(f"B2 (mix, one message of each size): {mark(ok2)}")
    small = res["b2"]["100 B"]["ratio"]
    if small > 1.3:
        w("")
        w(
            f"For 100 B messages alone the ratio is {small:.2f}×: `json.loads` of 100 bytes takes a "
            "few microseconds, so the fixed per-message work (a decoder, an event object, the "
            "JSON-RPC checks, a `ToolOutput`) dominates; that is the reason, not the scanning."
        )
    verdicts.append(
        f"B2 mix {res['b2']['mix']['ratio']:.2f}× (budget ≤ 1.3×): {'met' if ok2 else 'not met'}"
    )
    w("")

    # B3
    w(f"## B3 — {cfg['tools']:,} tools in pages of 50: connect to ready")
    w("")
    w(
        "Budget: ≤ 0.4× the official client (wall time, canned server). These are *warm* "
        "connections: each process's first connection (which loads the HTTP stack) is left "
        "out; the first, *cold*, is timed in the B12 section (B3 cold)."
    )
    w("")
    w("| client | wall (SSE) | ×official | wall (JSON) | ×official | CPU | tools |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    b3_ok = _listing_rows(w, verdicts, res["b3"], "tools", "B3")
    w("")
    w(f"B3: {mark(all(b3_ok) if b3_ok else None)}")
    w("")

    if "b3r" in res:
        w(f"## B3 (resources) — connect, then {cfg['tools']:,} resources in pages of 50")
        w("")
        w(
            "Budget: ≤ 0.4× the official client (wall time, canned server). mcpcore: "
            "`ready()` then `list_resources()`; official: `initialize()` then "
            "`list_resources()` page by page (it lists nothing on connect; the server "
            "lists 3 tools, so mcpcore's connect adds one small page)."
        )
        w("")
        w("| client | wall (SSE) | ×official | wall (JSON) | ×official | CPU | resources |")
        w("| --- | --- | --- | --- | --- | --- | --- |")
        b3r_ok = _listing_rows(w, verdicts, res["b3r"], "items", "B3 resources")
        w("")
        w(f"B3 (resources): {mark(all(b3r_ok) if b3r_ok else None)}")
        w("")

    # B4
    size = cfg["big"]
    w(f"## B4 — one {size // MiB} MiB text result, default settings")
    w("")
    w(
        "Budget: works by default; peak RSS growth ≤ 3× the payload (ru_maxrss in the client "
        "process after the call minus before it)."
    )
    w("")
    w("| client / server | works | time | peak RSS growth ÷ payload | error |")
    w("| --- | --- | --- | --- | --- |")
    b4_ok = []
    for key, r in res["b4"].items():
        if "base" not in r:
            w(f"| {key} | no | | | {r.get('error', '')} |")
            continue
        w(
            f"| {key} | {'yes' if r['ok'] else 'no'} | {fmt_ms(r['time'])} | {r['rss_ratio']:.2f}× | "
            f"{(r.get('error') or '').replace('|', '/')} |"
        )
        if key.split()[0] in OURS:
            ok = bool(r["ok"]) and r["rss_ratio"] <= 3.0
            b4_ok.append(ok)
            verdicts.append(
                f"B4 {key}: works={r['ok']}, RSS {r['rss_ratio']:.2f}× (budget ≤ 3×): {'met' if ok else 'not met'}"
            )
    w("")
    w(f"B4: {mark(all(b4_ok) if b4_ok else None)}")
    w("")

    if "b11" in res:
        w(f"## B11 — reading one {size // MiB} MiB blob resource, default settings")
        w("")
        w(
            "Budget: works by default; peak RSS growth ≤ 3× the payload (ru_maxrss in the "
            "client process after the read and the blob's bytes decoded, minus before). On the "
            "wire the blob is base64, 4/3 of the payload; mcpcore bounds a read's reply by "
            "`HttpLimits.max_read_size` (128 MiB), a call's by `max_message_size` (64 MiB)."
        )
        w("")
        w("| client / server | works | time | peak RSS growth ÷ payload | error |")
        w("| --- | --- | --- | --- | --- |")
        b11_ok = []
        for key, r in res["b11"].items():
            if "base" not in r:
                w(f"| {key} | no | | | {r.get('error', '')} |")
                continue
            w(
                f"| {key} | {'yes' if r['ok'] else 'no'} | {fmt_ms(r['time'])} | "
                f"{r['rss_ratio']:.2f}× | {(r.get('error') or '').replace('|', '/')} |"
            )
            if key.split()[0] in OURS:
                ok = bool(r["ok"]) and r["rss_ratio"] <= 3.0
                b11_ok.append(ok)
                verdicts.append(
                    f"B11 {key}: works={r['ok']}, RSS {r['rss_ratio']:.2f}× (budget ≤ 3×): "
                    f"{'met' if ok else 'not met'}"
                )
        w("")
        w(f"B11: {mark(all(b11_ok) if b11_ok else None)}")
        w("")

    # B5
    w("## B5 — import time and modules loaded")
    w("")
    w(
        "Budget: `import mcpcore` ≤ 15 ms and standard library only; each driver ≤ 130 ms. "
        "Fresh interpreter per sample, bytecode caches warm, median of repeats. The drivers "
        "load httpcore on a client's first remote start, not on import (a program with only "
        "local servers never loads it); the *+ HTTP stack* rows show import plus what that "
        "first start adds, so the deferred cost is in the table too."
    )
    w("")
    w("| import | median time | modules loaded | third-party packages |")
    w("| --- | --- | --- | --- |")
    for label, r in res["b5"].items():
        if "error" in r:
            w(f"| {label} | error: {r['error']} | | |")
            continue
        w(
            f"| `{label}` | {r['median_ms']:.1f} ms | {r['modules']} | {', '.join(r['third_party']) or '—'} |"
        )
    core = res["b5"].get("mcpcore", {})
    whole = res["b5"].get("mcpcore (every public name)", core)
    core_std = core.get("third_party") == ["mcpcore"] and whole.get("third_party") == ["mcpcore"]
    ok_core = core_std and core.get("median_ms", 1e9) <= 15
    ok_drv = all(
        res["b5"].get(d, {}).get("median_ms", 1e9) <= 130
        for d in ("mcpcore_anyio", "mcpcore_threaded")
    )
    verdicts.append(
        f"B5 mcpcore {core.get('median_ms', float('nan')):.1f} ms, stdlib only={core_std} "
        f"(budget ≤ 15 ms): {'met' if ok_core else 'not met'}"
    )
    for d in ("mcpcore_anyio", "mcpcore_threaded"):
        ms = res["b5"].get(d, {}).get("median_ms", float("nan"))
        verdicts.append(
            f"B5 {d} {ms:.1f} ms (budget ≤ 130 ms): {'met' if ms <= 130 else 'not met'}"
        )
    official = res["b5"].get("official (mcp client)", {}).get("median_ms")
    ratio_ok: bool | None = None
    if official:
        ratios = {
            d: res["b5"].get(d, {}).get("median_ms", float("nan")) / official
            for d in ("mcpcore_anyio", "mcpcore_threaded")
        }
        ratio_ok = all(r <= 0.15 for r in ratios.values())
        w("")
        w(
            "Issue 27's budget: importing a driver ≤ 0.15× importing the official client, "
            "in the same run: "
            + ", ".join(f"`{d}` {r:.3f}×" for d, r in ratios.items())
            + f" ({mark(ratio_ok)})."
        )
        for d, r in ratios.items():
            verdicts.append(
                f"B5 {d} {r:.3f}× the official client's import (budget ≤ 0.15×): "
                f"{'met' if r <= 0.15 else 'not met'}"
            )
    w("")
    w(f"B5: core {mark(ok_core)}, drivers {mark(ok_drv)}, ×official {mark(ratio_ok)}")
    w("")

    # B6
    w("## B6 — cancelling a running call")
    w("")
    w(
        "Budget: the caller returns within 5 ms of the cancel, and `notifications/cancelled` is always sent "
        "(counted by the canned server). The call is `slow`, cancelled 0.2 s after it started."
    )
    w("")
    w(
        "| client / server | return after cancel, median | max | calls started | notices seen by the server |"
    )
    w("| --- | --- | --- | --- | --- |")
    b6_ok = []
    for key, r in res["b6"].items():
        if "error" in r:
            w(f"| {key} | error: {r['error']} | | | |")
            continue
        note = f" (then: {r['note']})" if r.get("note") else ""
        w(
            f"| {key} | {fmt_ms(r['median'])} | {fmt_ms(r['max'])} | {r['started']} | {r['notices']}{note} |"
        )
        if key.split()[0] in OURS:
            ok = r["median"] <= 0.005 and r["notices"] >= r["started"] > 0
            b6_ok.append(ok)
            verdicts.append(
                f"B6 {key}: {fmt_ms(r['median'])} median, {r['notices']}/{r['started']} notices: {'met' if ok else 'not met'}"
            )
    w("")
    w(f"B6: {mark(all(b6_ok) if b6_ok else None)}")
    w("")

    # B7
    w(f"## B7 — connections opened for {cfg['pool_calls']:,} calls (32 in flight)")
    w("")
    w(
        "Budget: no more connections than the pool size (mcpcore's default `max_connections` is 10; "
        "the official client's httpx2 pool is unbounded by default). Counted as TCP accepts by the canned server."
    )
    w("")
    w("| client / server | calls | connections opened | pool size |")
    w("| --- | --- | --- | --- |")
    b7_ok = []
    for key, r in res["b7"].items():
        if "error" in r:
            w(f"| {key} | error: {r['error']} | | |")
            continue
        w(f"| {key} | {r['calls']:,} | {r['connections']:,} | {r['pool'] or 'unbounded'} |")
        if key.split()[0] in OURS:
            ok = r["connections"] <= r["pool"]
            b7_ok.append(ok)
            verdicts.append(
                f"B7 {key}: {r['connections']} connections for {r['calls']} calls (pool {r['pool']}): {'met' if ok else 'not met'}"
            )
    w("")
    w(f"B7: {mark(all(b7_ok) if b7_ok else None)}")
    w("")

    # B8 (no budget: it shows whether a chunk's cost depends on the calls in flight)
    if "b8" in res:
        r8 = res["b8"]
        w("## B8 — cost per chunk against calls in flight")
        w("")
        w(
            "No budget. The engine driven by hand (no network) with N calls in flight, none "
            "answered; one step is what a driver does per chunk read: `response_data` with a "
            "small SSE event (a progress notification for one call, on its stream), "
            "`next_deadline()`, and `handle_timer(now)` when nothing is due (`bench/pending.py`). "
            "Median over repeats; the parts are timed in a second pass. The target is a flat "
            "row: a ratio close to 1×."
        )
        w("")
        w("| calls in flight | per step | response_data | next_deadline | handle_timer |")
        w("| --- | --- | --- | --- | --- |")
        for key, r in r8.items():
            if key.isdigit():
                w(
                    f"| {int(key):,} | {r['step'] * 1e6:,.1f} µs | {r['response_data'] * 1e6:,.1f} µs | "
                    f"{r['next_deadline'] * 1e6:,.1f} µs | {r['handle_timer'] * 1e6:,.1f} µs |"
                )
        hi, lo = r8["ratio_of"]
        w("")
        w(f"B8: {hi:,} in flight ÷ {lo:,} in flight = {r8['ratio']:.2f}× per step")
        w("")

    # B12, B3 cold and warm, the CLI's first answer (issue 40: bench/cold.py)
    if "b12" in res:
        from bench import cold

        body, more = cold.section(res["b12"])
        w("## B12 — cold start: a fresh process to its first result; B3 cold and warm; the CLI")
        w("")
        w(
            "Budgets: B12 ≤ 0.25× the official client and ≤ 0.25× fastmcp (both drivers); B3 "
            "≤ 0.4× the official client for the first connection of a process (*cold*: the "
            "HTTP stack loads there) and for a later one (*warm*: what the B3 table above "
            "times); the CLI ≤ 0.25× the same fastmcp command. Every sample a fresh process, "
            "clients in turn, ratios paired within a round (`python -m bench.cold`)."
        )
        for line in body:
            w(line)
        w("")
        verdicts += more

    # B10 (no budget: the 2026-07-28 revision beside the handshake era)
    if "b10" in res:
        from bench import eras

        eras.write_section(res["b10"], w)

    w("## Verdicts")
    w("")
    for v in verdicts:
        w(f"- {v}")
    w("")
    if res["meta"].get("analysis"):
        w("## Analysis")
        w("")
        w(res["meta"]["analysis"])
        w("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return verdicts


def plot(res: dict[str, Any], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    servers = list(res["b1"])
    clients = sorted(
        {c for rows in res["b1"].values() for c in rows if c not in FLOORS},
        key=lambda c: ("anyio", "threaded", "official", "fastmcp").index(c),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    width = 0.8 / max(1, len(clients))
    for ax, key, title, scale in (
        (axes[0], "seq_cpu", "client CPU per call, sequential (µs)", 1e6),
        (axes[1], "conc_cpu", "client CPU per call, 32 in flight (µs)", 1e6),
        (axes[2], "conc_tput", "calls per second, 32 in flight", 1),
    ):
        for i, client in enumerate(clients):
            vals = [res["b1"][s].get(client, {}).get(key, 0) * scale for s in servers]
            ax.bar([x + i * width for x in range(len(servers))], vals, width, label=client)
        ax.set_xticks([x + width * (len(clients) - 1) / 2 for x in range(len(servers))])
        ax.set_xticklabels(servers, rotation=15, fontsize=8)
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        "B1: tools/call round trips on loopback (medians; lower CPU and higher calls/s are better)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def cold_parts(cfg: dict[str, Any]) -> dict[str, Any]:
    """B12 with B3 cold and warm, and the CLI (bench/cold.py): fresh processes."""
    from bench import cold

    quick = cfg["quick"]
    clients = [c for c in cold.CLIENTS if c != "fastmcp" or "fastmcp" in cfg["clients"]]
    parts = {
        "rounds": 1 if quick else 9,
        "warm": 1 if quick else 2,
        "modes": ["sse"],
        "clients": clients,
        "trio": [False] if quick else [False, True],
        "tree": ROOT,
    }
    return cold.run_parts(parts, {"b12"} if quick else {"b12", "cli"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="smoke run: tiny repeats, no fastmcp, 1 MiB"
    )
    ap.add_argument("--out", default=str(HERE / "report.md"), help="where to write the report")
    ap.add_argument(
        "--only", default="", help="comma-separated budgets to run (b1,...,b8,b3r,b10,b11,b12)"
    )
    args = ap.parse_args(argv)
    quick = args.quick
    notes: list[str] = []
    clients = ["anyio", "threaded", "official"]
    if not quick:
        try:
            import fastmcp  # noqa: F401

            clients.append("fastmcp")
        except ImportError as exc:
            notes.append(f"fastmcp could not be imported ({exc}); it is left out.")
    else:
        notes.append(
            "Quick (smoke) mode: tiny repeats, fastmcp skipped, 1 MiB instead of 50 MiB. "
            "These figures are not meaningful."
        )
    cfg: dict[str, Any] = {
        "quick": quick,
        "modes": ("sse",) if quick else ("sse", "json"),
        "clients": clients,
        "seq": 10 if quick else 300,
        "conc_calls": 32 if quick else 640,
        "batches": 1 if quick else 2,
        "rounds": 1 if quick else 3,
        "tools": 200 if quick else 5000,
        "list_batches": 1 if quick else 4,
        "big": 1 * MiB if quick else 50 * MiB,
        "micro_repeats": 2 if quick else 9,
        "import_repeats": 1 if quick else 9,
        "cancel_repeats": 1 if quick else 10,
        "pool_calls": 64 if quick else 4000,
        "pending_repeats": 2 if quick else 11,
        "pending_steps": 20 if quick else 200,
    }
    from bench import eras

    cfg.update(eras.defaults(quick))
    only = {s.strip().lower() for s in args.only.split(",") if s.strip()}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    res: dict[str, Any] = {"meta": {"load": load, "notes": notes}}
    t0 = time.monotonic()
    steps = [
        ("b5", lambda: b5(cfg)),
        ("b2", lambda: b2(cfg)),
        ("b1", lambda: b1(cfg, clients + list(FLOORS))),
        ("b3", lambda: b3(cfg, clients)),
        ("b3r", lambda: b3_resources(cfg, clients)),
        ("b4", lambda: b4(cfg, clients)),
        ("b11", lambda: b11(cfg, clients)),
        ("b6", lambda: b6(cfg, clients)),
        ("b7", lambda: b7(cfg, clients)),
        ("b8", lambda: b8(cfg)),
        ("b10", lambda: eras.b10(cfg)),
        ("b12", lambda: cold_parts(cfg)),
    ]
    raw_path = Path(args.out).with_suffix(".json")
    previous: dict[str, Any] = {}
    if only and raw_path.exists():
        previous = json.loads(raw_path.read_text())
    for name, fn in steps:
        if only and name not in only and name in previous:
            res[name] = previous[name]
            continue
        log(f"running {name}")
        res[name] = fn()
    analysis = HERE / "analysis.md"
    if analysis.exists() and not quick:
        res["meta"]["analysis"] = analysis.read_text(encoding="utf-8").strip()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw_path.write_text(json.dumps(res, indent=1), encoding="utf-8")
    png = plot(res, out.with_suffix(".png"))
    verdicts = write_report(res, cfg, out, png)
    log(f"done in {time.monotonic() - t0:.0f} s: {out}")
    for v in verdicts:
        print(v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
