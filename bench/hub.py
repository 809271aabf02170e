"""B9: a hub of N servers from one mcp.json — time to all ready, threads, peak RSS.

    python -m bench.hub                    # N = 100, 2 rounds; prints a table
    python -m bench.hub --n 20 --rounds 1  # smaller and quicker
    python -m bench.hub --json             # the table, then a JSON result as the last line
    python -m bench.hub --clients threaded,anyio,official,official-tasks

One server process runs N instances of the bundled demo server
(``mcpcore_demo.DemoServer``: stateful, replies framed as SSE, a GET stream
allowed), each on its own free loopback port and with its own server name, all
on one event loop; N server processes would cost this 2-core machine more than
the clients under test. One ``mcp.json`` with N remote entries
(``{"mcpServers": {"s0": {"type": "http", "url": ...}, ...}}``) names them all.

Each client then runs in a fresh process of its own (``--client``, below), so
neither start-up costs nor memory peaks mix, and clients alternate round by
round so a noisy machine's drift hits them alike:

* ``threaded``: ``mcpcore_threaded.McpHub.from_file(path)``, ``start()``,
  ``ready(timeout)``;
* ``anyio``: ``mcpcore_anyio.McpHub.from_file(path)`` as an async context
  (started in its own task group), ``await ready(timeout)``; asyncio backend;
* ``official``: the MCP Python SDK's ``ClientSessionGroup`` (its documented
  use: ``await group.connect_to_server(StreamableHttpParameters(url))`` per
  server, one after the other), the URLs read from the same ``mcp.json``
  (the SDK has no reader of its own). A ``component_name_hook`` prefixes each
  tool with its server's name, as the servers list the same tools. Each
  ``connect_to_server`` initializes and lists prompts, resources and tools; the
  demo server has no prompts or resources and answers those two with errors,
  which the group logs and skips (logging is silenced here);
* ``official-tasks`` (only with ``--clients``): the SDK without the group, as
  a program that wants the servers connected concurrently would write it —
  one task per server, each ``streamable_http_client`` + ``ClientSession``,
  ``initialize`` and ``list_tools``, held open until all are measured. (The
  group's own ``connect_to_server`` cannot be run in concurrent tasks: each
  session's contexts, entered in that task, go onto the group's exit stack and
  would be exited from another task.)

Measured in the client's process: the time from before reading ``mcp.json``
until every server is ready (``time.perf_counter``); the threads alive then
and after ``--idle`` seconds more (``threading.active_count()`` minus the count
before the client started, with the threads grouped by name); peak RSS
(``ru_maxrss`` after the idle wait; with the RSS after importing the client
library, before starting it, as the baseline); and the time to close
everything. Figures are medians over rounds; the ratios are this project ÷
the official client, from those medians.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENTS = ("threaded", "anyio", "official")
#: Not run unless asked for (``--clients``): the SDK without the group, one task per server.
EXTRA = ("official-tasks",)
OURS = ("threaded", "anyio")
MiB = 1024 * 1024


def log(msg: str) -> None:
    print(f"[bench.hub {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # As bench.run: installed-package behaviour, bytecode caches on (kept out of the tree).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "mcpcore-bench-pyc")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


# --- the servers: N demo servers on one event loop, in their own process -----------------


def serve(n: int) -> int:
    """``--serve N``: print the N URLs as one JSON line, serve until stdin closes."""
    import anyio
    import anyio.to_thread

    from mcpcore_demo import DemoServer

    async def run() -> None:
        async with contextlib.AsyncExitStack() as stack:
            urls = []
            for i in range(n):
                server = DemoServer(server_name=f"hub-s{i}", record=False)
                running = await stack.enter_async_context(server.serve("127.0.0.1", 0))
                urls.append(running.url)
            print(json.dumps(urls), flush=True)
            await anyio.to_thread.run_sync(sys.stdin.read)  # until the parent closes it

    anyio.run(run)
    return 0


@contextlib.contextmanager
def servers(n: int) -> Iterator[list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.hub", "--serve", str(n)],
        cwd=ROOT,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the demo servers did not start (exit {proc.wait(5)})")
        urls: list[str] = json.loads(line)
        for url in urls:  # every one accepts connections
            port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
        yield urls
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def write_config(urls: list[str], path: Path) -> None:
    doc = {"mcpServers": {f"s{i}": {"type": "http", "url": url} for i, url in enumerate(urls)}}
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")


# --- one client in its own process ----------------------------------------------------------


def _thread_census(base: set[int | None]) -> dict[str, Any]:
    """The threads started since ``base``: by kind (names with the server and numbers
    generalised) and per server (how many threads each client has)."""
    kinds: collections.Counter[str] = collections.Counter()
    per_server: collections.Counter[str] = collections.Counter()
    for thread in threading.enumerate():
        if thread.ident in base:
            continue
        name = thread.name
        m = re.match(r"mcpcore:([^:]+)", name)
        if m:
            per_server[m.group(1)] += 1
            name = "mcpcore:<server>" + name[m.end() :]
        kinds[re.sub(r"\d+", "N", name)] += 1
    # How many servers have k threads: {k: servers}.
    spread = collections.Counter(per_server.values())
    return {
        "total": sum(kinds.values()),
        "kinds": dict(kinds.most_common()),
        "per_server": {str(k): v for k, v in sorted(spread.items())},
    }


def _describe(exc: BaseException) -> str:
    """One line for an error while closing (the first of a group's)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


def _client_threaded(config: str, n: int, timeout: float, idle: float) -> dict[str, Any]:
    base = {t.ident for t in threading.enumerate()}
    base_count = threading.active_count()
    import mcpcore_threaded

    base_rss = maxrss()
    t0 = time.perf_counter()
    hub = mcpcore_threaded.McpHub.from_file(config)
    hub.start()
    ready = hub.ready(timeout)
    t_ready = time.perf_counter() - t0
    threads_ready = threading.active_count() - base_count
    time.sleep(idle)
    census = _thread_census(base)
    peak = maxrss()
    t1 = time.perf_counter()
    close_error = None
    try:
        hub.close()
    except Exception as exc:  # reported, not fatal: the figures above stand
        close_error = _describe(exc)
    t_close = time.perf_counter() - t1
    return {
        "close_error": close_error,
        "ready": sum(1 for a in ready.values() if a.ok),
        "servers": len(ready),
        "time": t_ready,
        "threads_ready": threads_ready,
        "threads_idle": census["total"],
        "census": census,
        "base_rss": base_rss,
        "peak_rss": peak,
        "close": t_close,
        "threads_after_close": threading.active_count() - base_count,
    }


def _client_anyio(config: str, n: int, timeout: float, idle: float) -> dict[str, Any]:
    base = {t.ident for t in threading.enumerate()}
    base_count = threading.active_count()
    import anyio

    import mcpcore_anyio

    base_rss = maxrss()
    out: dict[str, Any] = {}

    async def main() -> None:
        t0 = time.perf_counter()
        hub = mcpcore_anyio.McpHub.from_file(config)
        async with hub:
            ready = await hub.ready(timeout)
            out["time"] = time.perf_counter() - t0
            out["threads_ready"] = threading.active_count() - base_count
            await anyio.sleep(idle)
            out["census"] = _thread_census(base)
            out["peak_rss"] = maxrss()
            out["ready"] = sum(1 for a in ready.values() if a.ok)
            out["servers"] = len(ready)
            t1 = out["close_started"] = time.perf_counter()
        out["close"] = time.perf_counter() - t1

    try:
        anyio.run(main, backend="asyncio")
    except Exception as exc:  # while closing: reported, not fatal; else re-raised below
        if "peak_rss" not in out:
            raise
        out["close_error"] = _describe(exc)
        out["close"] = time.perf_counter() - out["close_started"]
    out["threads_idle"] = out["census"]["total"]
    out["base_rss"] = base_rss
    out["threads_after_close"] = threading.active_count() - base_count
    return out


def _client_official(config: str, n: int, timeout: float, idle: float) -> dict[str, Any]:
    import logging

    base = {t.ident for t in threading.enumerate()}
    base_count = threading.active_count()
    import anyio
    from mcp.client.session_group import ClientSessionGroup, StreamableHttpParameters

    # The group logs a warning per server for the prompts and resources the demo server lacks.
    logging.disable(logging.WARNING)
    base_rss = maxrss()
    out: dict[str, Any] = {"ready": 0}

    async def main() -> None:
        t0 = time.perf_counter()
        with open(config, encoding="utf-8") as f:
            entries = json.load(f)["mcpServers"]
        out["servers"] = len(entries)
        group = ClientSessionGroup(component_name_hook=lambda name, info: f"{info.name}/{name}")
        async with group:
            # No cancel scope around these: the group keeps each session's contexts
            # open on its own exit stack, so a scope here could not be exited.
            # StreamableHttpParameters' own timeouts (30 s) bound each connect.
            for entry in entries.values():
                await group.connect_to_server(StreamableHttpParameters(url=entry["url"]))
                out["ready"] += 1
            out["time"] = time.perf_counter() - t0
            out["tools"] = len(group.tools)
            out["threads_ready"] = threading.active_count() - base_count
            await anyio.sleep(idle)
            out["census"] = _thread_census(base)
            out["peak_rss"] = maxrss()
            t1 = out["close_started"] = time.perf_counter()
        out["close"] = time.perf_counter() - t1

    try:
        anyio.run(main, backend="asyncio")
    except Exception as exc:  # while closing: reported, not fatal; else re-raised below
        if "peak_rss" not in out:
            raise
        out["close_error"] = _describe(exc)
        out["close"] = time.perf_counter() - out["close_started"]
    out["threads_idle"] = out["census"]["total"]
    out["base_rss"] = base_rss
    out["threads_after_close"] = threading.active_count() - base_count
    return out


def _client_official_tasks(config: str, n: int, timeout: float, idle: float) -> dict[str, Any]:
    base = {t.ident for t in threading.enumerate()}
    base_count = threading.active_count()
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    base_rss = maxrss()
    out: dict[str, Any] = {"ready": 0}

    async def main() -> None:
        t0 = time.perf_counter()
        with open(config, encoding="utf-8") as f:
            entries = json.load(f)["mcpServers"]
        out["servers"] = len(entries)
        all_ready, stop = anyio.Event(), anyio.Event()
        tools = 0

        async def one(url: str) -> None:
            nonlocal tools
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools += len((await session.list_tools()).tools)
                    out["ready"] += 1
                    if out["ready"] == len(entries):
                        all_ready.set()
                    await stop.wait()

        async with anyio.create_task_group() as group:
            for entry in entries.values():
                group.start_soon(one, entry["url"])
            with anyio.move_on_after(timeout):
                await all_ready.wait()
            out["time"] = time.perf_counter() - t0
            out["tools"] = tools
            out["threads_ready"] = threading.active_count() - base_count
            await anyio.sleep(idle)
            out["census"] = _thread_census(base)
            out["peak_rss"] = maxrss()
            t1 = out["close_started"] = time.perf_counter()
            stop.set()
        out["close"] = time.perf_counter() - t1

    try:
        anyio.run(main, backend="asyncio")
    except Exception as exc:  # while closing: reported, not fatal; else re-raised below
        if "peak_rss" not in out:
            raise
        out["close_error"] = _describe(exc)
        out["close"] = time.perf_counter() - out["close_started"]
    out["threads_idle"] = out["census"]["total"]
    out["base_rss"] = base_rss
    out["threads_after_close"] = threading.active_count() - base_count
    return out


RUNNERS = {
    "threaded": _client_threaded,
    "anyio": _client_anyio,
    "official": _client_official,
    "official-tasks": _client_official_tasks,
}


def client(kind: str, config: str, n: int, timeout: float, idle: float) -> int:
    res = RUNNERS[kind](config, n, timeout, idle)
    print(json.dumps(res), flush=True)
    return 0


def run_client(kind: str, config: Path, n: int, timeout: float, idle: float) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.hub",
                "--client",
                kind,
                "--config",
                str(config),
                "--n",
                str(n),
                "--timeout",
                str(timeout),
                "--idle",
                str(idle),
            ],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout + idle + 60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:300]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# --- the whole bench ------------------------------------------------------------------------


def run(
    n: int, rounds: int, clients: tuple[str, ...], timeout: float, idle: float
) -> dict[str, Any]:
    per: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    errors: dict[str, str] = {}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="mcpcore-bench-hub-") as tmp, servers(n) as urls:
        config = Path(tmp) / "mcp.json"
        write_config(urls, config)
        for rnd in range(rounds):
            for kind in clients:
                log(f"round {rnd + 1}: {kind}, {n} servers")
                res = run_client(kind, config, n, timeout, idle)
                if "error" in res:
                    errors[kind] = res["error"]
                elif res["ready"] < res["servers"]:
                    errors[kind] = f"only {res['ready']} of {res['servers']} ready"
                else:
                    per[kind].append(res)
    out: dict[str, Any] = {
        "n": n,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "load": load,
        "clients": {},
    }
    for kind in clients:
        rs = per[kind]
        if not rs:
            out["clients"][kind] = {"error": errors.get(kind, "no data")}
            continue
        med = statistics.median
        out["clients"][kind] = {
            "time": med(r["time"] for r in rs),
            "time_min": min(r["time"] for r in rs),
            "time_max": max(r["time"] for r in rs),
            "threads_ready": med(r["threads_ready"] for r in rs),
            "threads_idle": med(r["threads_idle"] for r in rs),
            "threads_after_close": max(r["threads_after_close"] for r in rs),
            "census": rs[-1]["census"],
            "base_rss": med(r["base_rss"] for r in rs),
            "peak_rss": med(r["peak_rss"] for r in rs),
            "growth": med(r["peak_rss"] - r["base_rss"] for r in rs),
            "close": med(r["close"] for r in rs),
            "samples": len(rs),
            "note": errors.get(kind),
            "close_error": next((r["close_error"] for r in rs if r.get("close_error")), None),
        }
    return out


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "—"


def table(res: dict[str, Any]) -> str:
    rows = [
        f"{res['n']} servers, {res['rounds']} round(s), {res['cpus']} CPUs, "
        f"load average at start {res['load']}; medians over the rounds",
        "",
        "| client | all ready | ×official | threads at ready | threads idle | ×official "
        "| peak RSS | ×official | RSS growth | ×official | close |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    off = res["clients"].get("official", {})
    for kind, r in res["clients"].items():
        if "error" in r:
            rows.append(f"| {kind} | error: {r['error']} | | | | | | | | | |")
            continue
        has_off = "time" in off
        rows.append(
            f"| {kind} | {r['time']:.2f} s | {_ratio(r['time'], off['time']) if has_off else '—'} | "
            f"{r['threads_ready']:g} | {r['threads_idle']:g} | "
            f"{_ratio(r['threads_idle'], off['threads_idle']) if has_off else '—'} | "
            f"{r['peak_rss'] / MiB:.1f} MiB | "
            f"{_ratio(r['peak_rss'], off['peak_rss']) if has_off else '—'} | "
            f"{r['growth'] / MiB:.1f} MiB | "
            f"{_ratio(r['growth'], off['growth']) if has_off else '—'} | "
            f"{r['close']:.2f} s |"
        )
    tasks = res["clients"].get("official-tasks", {})
    if "time" in tasks:
        rows.append("")
        for kind in OURS:
            r = res["clients"].get(kind, {})
            if "time" in r:
                rows.append(
                    f"{kind} ÷ official-tasks: all ready {_ratio(r['time'], tasks['time'])}, "
                    f"peak RSS {_ratio(r['peak_rss'], tasks['peak_rss'])}, "
                    f"RSS growth {_ratio(r['growth'], tasks['growth'])}"
                )
    rows.append("")
    for kind, r in res["clients"].items():
        if "census" in r:
            kinds = ", ".join(f"{k} ×{v}" for k, v in r["census"]["kinds"].items()) or "none"
            spread = ", ".join(
                f"{v} server(s) with {k}" for k, v in r["census"]["per_server"].items()
            )
            rows.append(
                f"- {kind}: threads while idle: {kinds}"
                + (f" (per server: {spread})" if spread else "")
                + f"; left after close: {r['threads_after_close']}"
                + f"; ready in {r['time_min']:.2f}–{r['time_max']:.2f} s over the rounds"
                + (f"; error while closing: {r['close_error']}" if r.get("close_error") else "")
                + (f"; a round failed: {r['note']}" if r.get("note") else "")
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="servers in the hub (default 100)")
    ap.add_argument("--rounds", type=int, default=2, help="measurements per client (median taken)")
    ap.add_argument(
        "--clients",
        default=",".join(CLIENTS),
        help="comma-separated, of threaded,anyio,official (default) and official-tasks",
    )
    ap.add_argument("--timeout", type=float, default=60.0, help="the deadline for all ready (s)")
    ap.add_argument("--idle", type=float, default=0.5, help="idle wait after ready (s)")
    ap.add_argument("--json", action="store_true", help="also print a JSON result as last line")
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--client", choices=CLIENTS + EXTRA, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--config", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve is not None:
        return serve(args.serve)
    if args.client is not None:
        return client(args.client, args.config, args.n, args.timeout, args.idle)
    clients = tuple(c.strip() for c in args.clients.split(",") if c.strip())
    unknown = set(clients) - set(CLIENTS + EXTRA)
    if unknown:
        ap.error(f"unknown clients: {', '.join(sorted(unknown))}")
    t0 = time.monotonic()
    res = run(args.n, args.rounds, clients, args.timeout, args.idle)
    log(f"done in {time.monotonic() - t0:.0f} s")
    print(table(res))
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
