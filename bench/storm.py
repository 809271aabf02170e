"""The storm (issue 39, W2-W4b): many processes share one user's sign-in through one store.

    python -m bench.storm [--stores sqlite,postgres,redis] [--processes 20] [--seconds 4]
                          [--ttl 2] [--json] [--out bench/storm.md]

For each store: the OAuth-protected peer the tests use (``tests/protected_peer.py``: the
official SDK server with its own authorization server) issues access tokens that live
``--ttl`` seconds and refresh tokens that rotate (a spent one is refused, ``token
refused``). One sign-in is made as the user ``alice`` (``AuthOptions(subject="alice")``)
into the store; then ``--processes`` worker processes, each a ``mcpcore_threaded`` client
on the same store with no way to sign in again, call the server's ``whoami`` for
``--seconds`` from one start signal. (The workers are forked by one process that has
imported mcpcore first, so that they start in a second; each opens its own store
connection and its own client after the fork.) Every access token becomes due (halfway through its
life, O51) while the workers call; one worker must refresh it, and the others must take
the new set from the store.

Reported per store:

* **refreshes per expiry**: the server's refresh grants during the storm ÷ the token
  sets that replaced one another in the store meanwhile (polled every 10 ms): 1.00 when
  every expiry saw exactly one refresh request; a worker that refreshed a set another had
  refreshed already would show as a grant with no new set, or as a refused grant;
* **signed out**: sign-ins asked of the server during the storm, and failed calls (a
  worker signed out fails its calls: it has no ``authorize`` hook);
* **call latency** in the storm (every worker's calls, pooled: median, p95, max);
* **store cost**, in this process, outside the storm: a *hit* (``get_tokens``, what a
  worker reads when it starts) and a *refresh* (``lock_tokens`` + ``get_tokens`` +
  ``set_tokens(replaces=)`` + ``unlock_tokens``, what the refreshing worker adds to its
  refresh) and an *adopt* (``lock_tokens`` + ``get_tokens`` + ``unlock_tokens``, what a
  worker that finds the newer set adds). A call whose token is valid touches no store.

PostgreSQL and Redis run as the tests run them (``tests/store_servers.py``: a private
cluster, a ``redis-server``, on free loopback ports); SQLite is a file in a temporary
folder. ``tests/test_stores_storm.py`` runs ``storm()`` and holds it to its figures.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import select
import shutil
import signal
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
KINDS = ("sqlite", "postgres", "redis")
SUBJECT = "alice"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never listened on: the peer redirects at once
PAUSE = 0.02  # seconds a worker waits between calls
READY_TIMEOUT = 90.0  # seconds for every worker to start and be ready (a loaded CI box)
TARGET_ENV = "MCPCORE_STORM_TARGET"  # the store's DSN/URL/path (it may hold a password)


_CLASSES = {
    "sqlite": "SqliteTokenStore",
    "postgres": "PostgresTokenStore",
    "redis": "RedisTokenStore",
}


def make_store(kind: str, target: str, **options: Any) -> Any:
    """A store of ``kind`` on ``target`` (a path, a DSN, a URL)."""
    import mcpcore_stores

    return getattr(mcpcore_stores, _CLASSES[kind])(target, **options)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT), str(ROOT / "src"), str(ROOT / "src" / "adapters")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*paths, env.get("PYTHONPATH", "")]))
    return env


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ---------------------------------------------------------------------------
# The workers: forked by one process that imported everything first


def _worker(kind: str, server_url: str, go: int, ready: int, seconds: float, result: Path) -> None:
    """One worker (a forked process): be ready, say so on ``ready``, wait for ``go`` to
    close, call ``whoami`` for ``seconds``, write what happened to ``result``."""
    from mcpcore import AuthOptions
    from mcpcore_threaded import McpClient

    latencies: list[float] = []
    failures: list[str] = []
    outcome: dict[str, Any] = {"ready": False}
    try:
        with make_store(kind, os.environ[TARGET_ENV]) as store:
            auth = AuthOptions(store=store, subject=SUBJECT)
            with McpClient("storm", {"url": server_url}, auth=auth) as client:
                availability = client.ready(timeout=READY_TIMEOUT)
                if not availability.ok:
                    outcome["reason"] = str(availability.reason)
                    return
                os.write(ready, b"r")
                outcome["ready"] = True
                os.read(go, 1)  # blocks until the zygote closes its end: all start at once
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    started = time.perf_counter()
                    try:
                        text = client.call("storm/whoami", {}).text
                        if "scopes=" not in text:
                            failures.append("unexpected answer")
                    except Exception as exc:  # counted by the parent, not raised
                        failures.append(type(exc).__name__)
                    latencies.append(time.perf_counter() - started)
                    time.sleep(PAUSE)
    except Exception as exc:
        outcome["error"] = repr(exc)
    finally:
        outcome.update(latencies=latencies, failures=failures)
        result.write_text(json.dumps(outcome), encoding="utf-8")
        if not outcome["ready"]:
            os.write(ready, b"x")


def zygote(kind: str, server_url: str, processes: int, seconds: float, results: Path) -> int:
    """Import what a worker needs, fork ``processes`` workers, say ``ready`` on stdout
    once they all are, release them all at once on ``go`` (stdin), wait for them, and
    say ``done``. Forking after the imports makes 20 workers start in a second, not in
    a minute of 20 interpreters importing the same modules on a loaded machine; each
    worker still opens its own store connection and its own client."""
    import mcpcore_stores
    import mcpcore_threaded  # noqa: F401 - imported once, before forking

    getattr(mcpcore_stores, _CLASSES[kind])  # loads the store's module and its driver
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    children: list[int] = []
    for index in range(processes):
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                os.close(go_w)
                os.close(ready_r)
                _worker(kind, server_url, go_r, ready_w, seconds, results / f"worker-{index}.json")
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    os.close(go_r)
    os.close(ready_w)
    answers = b""
    while len(answers) < processes:
        chunk = os.read(ready_r, processes)
        if not chunk:
            break
        answers += chunk
    print("ready" if answers == b"r" * processes else f"failed {answers!r}", flush=True)
    if sys.stdin.readline().strip() == "go":
        os.close(go_w)  # every worker's read returns now
    else:
        for pid in children:
            os.kill(pid, 9)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    print(f"done {sum(1 for c in codes if c == 0)}", flush=True)
    return 0


# ---------------------------------------------------------------------------
# The storm, for one store


def _sign_in(kind: str, target: str, server_url: str) -> None:
    """The user's one sign-in, into the store (no person: the peer approves at once)."""
    from mcpcore import AuthOptions
    from mcpcore_threaded import McpClient
    from protected_peer import authorize_headless_blocking

    with make_store(kind, target) as store:
        auth = AuthOptions(store=store, subject=SUBJECT, redirect_uri=REDIRECT_URI)
        with McpClient(
            "storm", {"url": server_url}, auth=auth, authorize=authorize_headless_blocking
        ) as client:
            availability = client.ready(timeout=60)
            if not availability.ok:
                raise RuntimeError(f"the first sign-in failed: {availability.reason}")
            client.call("storm/whoami", {})
        if store.get_tokens(server_url, subject=SUBJECT) is None:
            raise RuntimeError("the first sign-in stored no tokens")


class _Watch:
    """Polls the store every 10 ms: when each new token set appeared in it."""

    def __init__(self, kind: str, target: str, server_url: str) -> None:
        self._store = make_store(kind, target)
        self._server_url = server_url
        self.changes: list[float] = []  # monotonic times a new set was seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="storm-watch", daemon=True)
        self.error: BaseException | None = None

    def __enter__(self) -> _Watch:
        self._last = self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._store.close()

    def _read(self) -> str | None:
        tokens = self._store.get_tokens(self._server_url, subject=SUBJECT)
        return None if tokens is None else _digest(tokens.access_token)

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.01):
                current = self._read()
                if current != self._last:
                    self._last = current
                    self.changes.append(time.monotonic())
        except BaseException as exc:  # reported by storm()
            self.error = exc


def _line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The zygote's next line on stdout, waited for at most ``timeout`` seconds."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().strip() if ready else "(nothing in time)"


def _tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-3000:]
    except OSError:
        return ""


def storm(
    kind: str, target: str, *, processes: int = 20, seconds: float = 4.0, ttl: int = 2
) -> dict[str, Any]:
    """Run the storm once against ``kind`` on ``target``; returns its figures."""
    from protected_peer import protected_sdk_server

    with protected_sdk_server(token_ttl=ttl, step_up=False) as peer:
        _sign_in(kind, target, peer.url)
        mark = len(peer.events())
        env = _env()
        env[TARGET_ENV] = target
        results = Path(tempfile.mkdtemp(prefix="mcpcore-storm-"))
        log = results / "zygote.log"
        try:
            with _Watch(kind, target, peer.url) as watch, open(log, "w", encoding="utf-8") as err:
                spawned = time.monotonic()
                proc = subprocess.Popen(
                    [sys.executable, "-m", "bench.storm", "--zygote", kind, peer.url,
                     str(processes), str(seconds), str(results)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                    text=True, cwd=ROOT, env=env,
                    start_new_session=True,  # its workers share its process group
                )  # fmt: skip
                try:
                    assert proc.stdin is not None and proc.stdout is not None
                    said = _line(proc, READY_TIMEOUT)
                    if said != "ready":
                        raise RuntimeError(
                            f"the workers did not get ready ({said!r}):\n{_tail(log)}"
                        )
                    started = time.monotonic()
                    startup = started - spawned
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                    done = _line(proc, seconds + 60)
                    elapsed = time.monotonic() - started
                    proc.wait(timeout=30)
                finally:
                    if proc.poll() is None:  # the zygote and every worker it forked
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
                    for stream in (proc.stdin, proc.stdout):
                        if stream is not None:
                            stream.close()
            if watch.error is not None:
                raise RuntimeError(f"watching the store failed: {watch.error!r}")
            outcomes = [
                json.loads(path.read_text()) for path in sorted(results.glob("worker-*.json"))
            ]
        finally:
            shutil.rmtree(results, ignore_errors=True)
        events = peer.events()[mark:]
        latencies = [x for r in outcomes for x in r["latencies"]]
        failures = [f for r in outcomes for f in r["failures"]]
        errors = [r["error"] for r in outcomes if "error" in r]
        refreshes = sum(1 for e in events if e.startswith("token grant=refresh_token"))
        changes = watch.changes
        gaps = [b - a for a, b in itertools.pairwise(changes)]
        with make_store(kind, target) as store:
            signed_in_after = store.get_tokens(peer.url, subject=SUBJECT) is not None
    return {
        "store": kind,
        "processes": processes,
        "ttl": ttl,
        "seconds": seconds,
        "startup_s": round(startup, 2),
        "wall_s": round(elapsed, 2),
        "workers_ok": int(done.split()[1]) if done.startswith("done ") else 0,
        "errors": errors,
        "calls": len(latencies),
        "failed_calls": len(failures),
        "failures": sorted(set(failures)),
        "sign_ins": sum(1 for e in events if e.startswith("authorize ")),
        "refreshes": refreshes,
        "refused": sum(1 for e in events if e.startswith("token refused")),
        "new_sets": len(changes),
        "refreshes_per_expiry": round(refreshes / len(changes), 3) if changes else None,
        "shortest_gap_s": round(min(gaps), 3) if gaps else None,
        "signed_in_after": signed_in_after,
        "latency_ms": {
            "p50": round(_quantile(latencies, 0.5) * 1000, 2),
            "p95": round(_quantile(latencies, 0.95) * 1000, 2),
            "max": round(max(latencies, default=float("nan")) * 1000, 2),
        },
    }


# ---------------------------------------------------------------------------
# What a store adds, measured alone


def store_costs(kind: str, target: str, rounds: int = 200) -> dict[str, float]:
    """Median microseconds of a hit, a refresh's store steps and an adopt's, on ``kind``."""
    from mcpcore import TokenKey, TokenSet

    server = f"https://bench.example/mcp/{time.monotonic_ns()}"
    key = TokenKey(server_url=server, issuer="https://as.example", subject="bench")

    def tokens(n: int) -> TokenSet:
        return TokenSet(
            access_token=f"access-{n}",
            refresh_token=f"refresh-{n}",
            expires_at=time.time() + 3600,
            issuer="https://as.example",
            token_endpoint="https://as.example/token",
            resource=server,
            client_id="bench",
        )

    hit: list[float] = []
    refresh: list[float] = []
    adopt: list[float] = []
    with make_store(kind, target) as store:
        store.set_tokens(key, tokens(0))
        for n in range(1, rounds + 1):
            t0 = time.perf_counter()
            store.get_tokens(server, subject="bench")
            t1 = time.perf_counter()
            assert store.lock_tokens(server, subject="bench")
            current = store.get_tokens(server, subject="bench")
            assert store.set_tokens(key, tokens(n), replaces=current)
            store.unlock_tokens(server, subject="bench")
            t2 = time.perf_counter()
            assert store.lock_tokens(server, subject="bench")
            store.get_tokens(server, subject="bench")
            store.unlock_tokens(server, subject="bench")
            t3 = time.perf_counter()
            hit.append(t1 - t0)
            refresh.append(t2 - t1)
            adopt.append(t3 - t2)
        store.delete_tokens(key)
    return {
        "hit_us": round(statistics.median(hit) * 1e6, 1),
        "refresh_us": round(statistics.median(refresh) * 1e6, 1),
        "adopt_us": round(statistics.median(adopt) * 1e6, 1),
    }


# ---------------------------------------------------------------------------
# The command


@contextlib.contextmanager
def targets(kinds: list[str]) -> Iterator[dict[str, str]]:
    """A running store of each kind: a SQLite path, a PostgreSQL DSN, a Redis URL."""
    sys.path.insert(0, str(ROOT / "tests"))
    from store_servers import postgres_server, redis_server

    with contextlib.ExitStack() as stack:
        found: dict[str, str] = {}
        for kind in kinds:
            if kind == "sqlite":
                folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpcore-storm-"))
                found[kind] = str(Path(folder) / "store.db")
            elif kind == "postgres":
                found[kind] = stack.enter_context(postgres_server()).dsn
            else:
                found[kind] = stack.enter_context(redis_server()).url
        yield found


def table(rows: list[dict[str, Any]]) -> str:
    """The report as a Markdown table."""
    out = [
        "| store | processes | calls | failed | sign-ins | refreshes | new sets | refreshes per expiry"
        " | refused | call p50 / p95 / max ms | hit µs | refresh µs | adopt µs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lat, cost = r["latency_ms"], r.get("cost", {})
        out.append(
            f"| {r['store']} | {r['processes']} | {r['calls']} | {r['failed_calls']} | {r['sign_ins']}"
            f" | {r['refreshes']} | {r['new_sets']} | {r['refreshes_per_expiry']} | {r['refused']}"
            f" | {lat['p50']} / {lat['p95']} / {lat['max']} | {cost.get('hit_us', '')}"
            f" | {cost.get('refresh_us', '')} | {cost.get('adopt_us', '')} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--stores", default=",".join(KINDS), help="comma-separated: sqlite,postgres,redis"
    )
    ap.add_argument("--processes", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=4.0, help="how long the workers call")
    ap.add_argument("--ttl", type=int, default=2, help="access token lifetime, seconds")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--out", default=None, help="also write the report (Markdown) here")
    ap.add_argument("--zygote", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.zygote:
        kind, url, processes, seconds, results = args.zygote
        return zygote(kind, url, int(processes), float(seconds), Path(results))
    sys.path.insert(0, str(ROOT / "tests"))
    kinds = [k for k in args.stores.split(",") if k]
    rows = []
    with targets(kinds) as found:
        for kind in kinds:
            row = storm(
                kind, found[kind], processes=args.processes, seconds=args.seconds, ttl=args.ttl
            )
            row["cost"] = store_costs(kind, found[kind])
            rows.append(row)
            print(f"[storm] {kind}: {json.dumps(row)}", file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    if args.out:
        cores = os.cpu_count()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        Path(args.out).write_text(
            f"# The storm ({time.strftime('%Y-%m-%d')}; {cores} cores, load average at the end {load})\n\n"
            f"`python -m bench.storm --processes {args.processes} --seconds {args.seconds:g}"
            f" --ttl {args.ttl}`: see bench/storm.py for what each column measures.\n\n"
            + table(rows)
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
