"""B10: the 2026-07-28 revision's cost and speed, beside the handshake era and the official client.

    python -m bench.eras [--quick] [--rounds N] [--json]    # B10 alone, its tables on stdout
    python -m bench                                         # runs it too, as B10 of the report

Two servers, each in its own process on a free loopback port:

* **dual**: the official SDK 2.3 server that B1 already starts (``tests/servers/sdk_server.py``,
  ``MCPServer``, stateful, SSE), which answers both eras on one endpoint, as the SDK does by
  default. Its legacy-era replies are SSE streams; at 2026-07-28 it answers a call that finishes
  at once with ``application/json``.
* **handshake-only**: the bundled demo server (``python -m mcpcore_demo``, revision 2025-11-25,
  stateful, SSE), which answers ``server/discover`` with an error, so a client in ``auto`` mode
  pays the probe's round trip and then falls back to ``initialize``.

Clients, each in a fresh process per round (``bench.worker``), alternating round by round:
mcpcore's two drivers with ``protocol="auto"`` or ``protocol="legacy"``, and the official
client's own entry point, ``mcp.Client(url)`` (``mode="auto"``) or ``mcp.Client(url,
mode="legacy")``. Every sample checks that the era it measured is the one asked for.

* **connect to ready**: time from constructing the client until its tools are listed (mcpcore:
  ``ready()``; official: ``async with Client`` and one ``list_tools()``), and the process CPU
  over that time; closing is not counted. Four paths × three clients, interleaved sample by
  sample in one process per client and round, after one warm-up of each path.
* **calls** (B1 in each era): the B1 ``calls`` scenario against the dual server with the
  protocol given: CPU per call sequentially and with 32 in flight, and calls per second with 32
  in flight.

Ratios are this project ÷ the official client on the same path, and one path ÷ another for the
same client.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

# (key, server, protocol, era that must be negotiated)
CONNECT_PATHS = (
    ("dual auto", "dual", "auto", "modern"),
    ("dual legacy", "dual", "legacy", "legacy"),
    ("handshake-only auto", "handshake-only", "auto", "legacy"),
    ("handshake-only legacy", "handshake-only", "legacy", "legacy"),
)
CALL_ERAS = (("modern", "auto"), ("legacy", "legacy"))  # (era, protocol) on the dual server
CLIENTS = ("anyio", "threaded", "official")
OFFICIAL = "official"
PATH_LABELS = {
    "dual auto": "dual server, `auto` → 2026-07-28: discover + tools/list",
    "dual legacy": "dual server, `legacy`: initialize + initialized + tools/list",
    "handshake-only auto": "handshake-only server, `auto`: discover refused, then initialize + initialized + tools/list",
    "handshake-only legacy": "handshake-only server, `legacy`: initialize + initialized + tools/list",
}


def defaults(quick: bool) -> dict[str, Any]:
    return {
        "b10_rounds": 1 if quick else 3,
        "b10_connect_repeats": 2 if quick else 15,
        "b10_seq": 10 if quick else 200,
        "b10_conc_calls": 32 if quick else 640,
        "b10_batches": 1 if quick else 2,
        # the SDK server's mode: stateful-sse answers legacy calls with SSE (its default);
        # stateful-json answers both eras with JSON, to tell the era's cost from the framing's
        "b10_sdk_mode": "stateful-sse",
    }


@contextlib.contextmanager
def handshake_only_server() -> Iterator[str]:
    """The bundled demo server (handshake era only) on a free loopback port; yields its MCP URL."""
    from bench import run

    port = run.free_port()
    logf = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcore_demo", "--host", "127.0.0.1", "--port", str(port)],
        cwd=run.ROOT,
        env=run._env(),
        stdin=subprocess.DEVNULL,
        stdout=logf,
        stderr=subprocess.STDOUT,
    )
    try:
        import socket

        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    logf.seek(0)
                    tail = logf.read().decode(errors="replace")[-500:]
                    raise RuntimeError(f"demo server did not start: {tail}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logf.close()


def b10(cfg: dict[str, Any], clients: tuple[str, ...] = CLIENTS) -> dict[str, Any]:
    """Run B10; returns ``{"connect": {path: {client: row}}, "calls": {era: {client: row}}}``."""
    from bench import run

    sys.path.insert(0, str(run.ROOT / "tests"))
    import peers  # type: ignore[import-not-found]

    rounds = cfg["b10_rounds"]
    conn: dict[str, dict[str, list[dict[str, Any]]]] = {
        key: {c: [] for c in clients} for key, *_ in CONNECT_PATHS
    }
    calls: dict[str, dict[str, list[dict[str, Any]]]] = {
        era: {c: [] for c in clients} for era, _ in CALL_ERAS
    }
    errors: dict[tuple[str, str], str] = {}
    with (
        peers.sdk_server(cfg["b10_sdk_mode"]) as dual,
        handshake_only_server() as legacy_url,
    ):
        urls = {"dual": dual.url, "handshake-only": legacy_url}
        targets = [
            {"url": urls[server], "protocol": protocol, "era": era}
            for _, server, protocol, era in CONNECT_PATHS
        ]
        for rnd in range(rounds):
            for client in clients:
                run.log(f"B10 connect round {rnd + 1}: {client}")
                res = run.worker(
                    client,
                    "connect",
                    {"targets": targets, "repeats": cfg["b10_connect_repeats"]},
                    timeout=300,
                )
                if "error" in res:
                    for key, *_ in CONNECT_PATHS:
                        errors[(key, client)] = res["error"]
                    continue
                for (key, *_), samples in zip(CONNECT_PATHS, res["targets"], strict=True):
                    conn[key][client].extend(samples)
            for era, protocol in CALL_ERAS:
                for client in clients:
                    run.log(f"B10 calls ({era}) round {rnd + 1}: {client}")
                    res = run.worker(
                        client,
                        "calls",
                        {
                            "url": dual.url,
                            "protocol": protocol,
                            "era": era,
                            "seq": cfg["b10_seq"],
                            "conc_calls": cfg["b10_conc_calls"],
                            "conc": 32,
                            "batches": cfg["b10_batches"],
                        },
                        timeout=300,
                    )
                    if "error" in res:
                        errors[(era, client)] = res["error"]
                    else:
                        calls[era][client].extend(res["batches"])
    med = run.med
    out: dict[str, Any] = {"sdk_mode": cfg["b10_sdk_mode"], "connect": {}, "calls": {}}
    for key, *_ in CONNECT_PATHS:
        rows: dict[str, Any] = {}
        for client in clients:
            ss = conn[key][client]
            if not ss:
                rows[client] = {"error": errors.get((key, client), "no data")}
                continue
            rows[client] = {
                "wall": med([s["wall"] for s in ss]),
                "cpu": med([s["cpu"] for s in ss]),
                "close": med([s["close"] for s in ss]),
                "tools": ss[0]["tools"],
                "samples": len(ss),
            }
        out["connect"][key] = rows
    for era, _ in CALL_ERAS:
        rows = {}
        for client in clients:
            bs = calls[era][client]
            if not bs:
                rows[client] = {"error": errors.get((era, client), "no data")}
                continue
            rows[client] = {
                "seq_cpu": med([b["seq"]["cpu_per_call"] for b in bs]),
                "seq_lat_med": med([b["seq"]["lat"]["median"] for b in bs]),
                "conc_cpu": med([b["conc"]["cpu_per_call"] for b in bs]),
                "conc_tput": med([b["conc"]["throughput"] for b in bs]),
                "conc_lat_med": med([b["conc"]["lat"]["median"] for b in bs]),
                "conc_lat_p99": med([b["conc"]["lat"]["p99"] for b in bs]),
                "samples": len(bs),
            }
        out["calls"][era] = rows
    return out


# --- the report -------------------------------------------------------------------------


def _ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> str:
    if key in a and key in b and b[key]:
        return f"{a[key] / b[key]:.2f}×"
    return "n/a"


def write_section(r: dict[str, Any], w: Any) -> None:
    """Append the B10 section of the report through ``w`` (one line per call)."""
    from bench.run import fmt_ms, fmt_us

    w("## B10 — the 2026-07-28 revision beside the handshake era (official SDK 2.3 server)")
    w("")
    framing = (
        "every reply is JSON (`json_response=True`)"
        if r.get("sdk_mode") == "stateful-json"
        else "legacy replies are SSE, a modern call that finishes at once is answered with JSON"
    )
    w(
        "No budget. Against the official SDK 2.3 server (both eras on one endpoint, stateful; "
        f"{framing}) and "
        "a handshake-only server (the bundled demo server, which refuses `server/discover`). "
        'mcpcore with `protocol="auto"` / `"legacy"`; the official client as '
        '`mcp.Client(url)` (`mode="auto"`) / `mcp.Client(url, mode="legacy")`. '
        "Connect to ready: from constructing the client until its tools are listed (closing not "
        "counted), with the process CPU over that time. `bench/eras.py`."
    )
    w("")
    w("| path | client | ready, median | ×official | CPU | ×official | tools |")
    w("| --- | --- | --- | --- | --- | --- | --- |")
    for key, rows in r["connect"].items():
        off = rows.get(OFFICIAL, {})
        for client, row in rows.items():
            if "error" in row:
                w(f"| {PATH_LABELS[key]} | {client} | error: {row['error']} | | | | |")
                continue
            w(
                f"| {PATH_LABELS[key]} | {client} | {fmt_ms(row['wall'])} | "
                f"{_ratio(row, off, 'wall')} | {fmt_ms(row['cpu'])} | {_ratio(row, off, 'cpu')} | "
                f"{row['tools']} |"
            )
    w("")
    con = r["connect"]
    lines = []
    for client in CLIENTS:
        try:
            probe = (
                con["handshake-only auto"][client]["wall"]
                - con["handshake-only legacy"][client]["wall"]
            )
            ml = con["dual auto"][client]["wall"] / con["dual legacy"][client]["wall"]
        except KeyError:
            continue
        lines.append(
            f"- {client}: the probe on a handshake-only server costs {probe * 1e3:+.1f} ms "
            f"(`auto` − `legacy`); on the dual server the modern path takes {ml:.2f}× the "
            "legacy path's time"
        )
    w("\n".join(lines))
    w("")
    w(
        "Calls against the dual server, in each era (the B1 `calls` scenario: CPU per call "
        "sequentially and with 32 in flight, calls per second with 32 in flight); ×official "
        "is against the official client in the same era, modern ÷ legacy is the same client's "
        "figure in the two eras."
    )
    w("")
    w(
        "| era | client | CPU/call seq | ×official | latency med | CPU/call 32 in flight | "
        "×official | calls/s 32 in flight | ×official | latency med / p99 (32) |"
    )
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for era, rows in r["calls"].items():
        off = rows.get(OFFICIAL, {})
        for client, row in rows.items():
            if "error" in row:
                w(f"| {era} | {client} | error: {row['error']} | | | | | | | |")
                continue
            w(
                f"| {era} | {client} | {fmt_us(row['seq_cpu'])} | {_ratio(row, off, 'seq_cpu')} | "
                f"{fmt_ms(row['seq_lat_med'])} | {fmt_us(row['conc_cpu'])} | "
                f"{_ratio(row, off, 'conc_cpu')} | {row['conc_tput']:,.0f} | "
                f"{_ratio(row, off, 'conc_tput')} | {fmt_ms(row['conc_lat_med'])} / "
                f"{fmt_ms(row['conc_lat_p99'])} |"
            )
    w("")
    modern, legacy = r["calls"].get("modern", {}), r["calls"].get("legacy", {})
    for client in CLIENTS:
        m, lg = modern.get(client, {}), legacy.get(client, {})
        if "seq_cpu" in m and "seq_cpu" in lg:
            w(
                f"- {client}, modern ÷ legacy: CPU/call {_ratio(m, lg, 'seq_cpu')} sequential, "
                f"{_ratio(m, lg, 'conc_cpu')} at 32 in flight; calls/s {_ratio(m, lg, 'conc_tput')}"
            )
    w("")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny repeats")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print the raw result as JSON last")
    ap.add_argument(
        "--sdk-mode",
        choices=("stateful-sse", "stateful-json"),
        default="stateful-sse",
        help="the SDK server's mode (stateful-json: JSON replies in both eras)",
    )
    args = ap.parse_args(argv)
    cfg = defaults(args.quick)
    if args.rounds:
        cfg["b10_rounds"] = args.rounds
    cfg["b10_sdk_mode"] = args.sdk_mode
    t0 = time.monotonic()
    res = b10(cfg)
    lines: list[str] = []
    write_section(res, lines.append)
    print("\n".join(lines))
    print(f"(B10 took {time.monotonic() - t0:.0f} s)")
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
