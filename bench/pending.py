"""B8: the engine's cost per chunk against the number of calls in flight.

    python -m bench.pending                      # N = 10, 100, 1,000, 10,000; prints a table
    python -m bench.pending --repeats 5 --steps 100 --sizes 10,1000
    python -m bench.pending --json               # the table, then a JSON result as the last line
    python -m bench.pending --no-gc              # without the cyclic garbage collector

No network and no driver: an ``HttpClientEngine`` is driven by hand (as in
docs/engine.md) through start-up to ready against scripted responses
(``initialize`` with a tools capability, ``notifications/initialized`` accepted
with 202, a ``tools/list`` of one tool). Then N calls are started and their
POSTs answered with the head of an SSE stream, never with a result, so all N
stay pending with a deadline. One *step* is what a driver does for every chunk
it reads:

* ``engine.response_data(xid, chunk, now)``: one small SSE event, a
  ``notifications/progress`` for one of the calls on that call's own stream;
* ``engine.next_deadline()``: when to wake the engine next;
* ``engine.handle_timer(now)``: at a ``now`` when nothing is due.

The figure is the median over repeats of the mean time of a batch of steps
(``time.perf_counter``), per N, plus the ratio of the largest N's figure to the
smallest's (10,000 ÷ 10 by default). A step should not depend on N: a ratio
close to 1× is the target; a ratio that grows with N means something scans
every pending request per chunk. The garbage collector stays on, as in a
driver: a step that allocates in proportion to N also triggers collections
that walk every pending call's objects (``--no-gc`` shows the step without
them). Each repeat then runs the same batch again with a clock read between
the three parts, for the per-part columns (which say where the growth is; the
step figure is from the batch without them).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from typing import Any

SIZES = (10, 100, 1_000, 10_000)
TOOL = "bench/slow"
CALL_TIMEOUT = 300.0  # the default; every call has a deadline far in the future
NOW = 1.0  # the time of every step: nothing is due then

_SSE = [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"bench-1")]
_JSON = [(b"content-type", b"application/json"), (b"mcp-session-id", b"bench-1")]


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _result(msg_id: Any, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()


def _answer_startup(engine: Any, now: float) -> None:
    """Perform what the engine asks for during start-up, as a scripted server."""
    from mcpcore import AbortExchange, HttpRequest

    while actions := engine.take_actions():
        for action in actions:
            if isinstance(action, AbortExchange):
                continue
            assert isinstance(action, HttpRequest), action
            message = json.loads(action.body) if action.body else {}
            method = message.get("method")
            if method == "initialize":
                body = _result(
                    message["id"],
                    {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "bench", "version": "1"},
                    },
                )
            elif method == "tools/list":
                body = _result(
                    message["id"],
                    {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]},
                )
            else:  # notifications/initialized (and anything else): 202 Accepted
                engine.response_started(action.exchange_id, 202, [], now)
                engine.response_ended(action.exchange_id, now)
                continue
            engine.response_started(action.exchange_id, 200, _JSON, now)
            engine.response_data(action.exchange_id, body, now)
            engine.response_ended(action.exchange_id, now)


def ready_engine_with_calls(n: int) -> tuple[Any, int, int]:
    """An engine that is ready with ``n`` calls in flight, each on an open SSE stream.

    Returns the engine, one call's id and the id of that call's exchange.
    """
    from mcpcore import HttpClientEngine, HttpRequest, RemoteServer, SessionReady

    engine = HttpClientEngine(
        RemoteServer(name="bench", url="https://bench.invalid/mcp"), listen=False
    )
    engine.start(0.0)
    _answer_startup(engine, 0.0)
    events = engine.take_events()
    assert any(isinstance(e, SessionReady) for e in events), events
    exchange_of: dict[int, int] = {}
    for _ in range(n):
        call_id = engine.call(TOOL, {}, 0.0, timeout=CALL_TIMEOUT)
        for action in engine.take_actions():
            assert isinstance(action, HttpRequest) and action.request_id == call_id, action
            # The server starts an SSE response and never finishes it.
            engine.response_started(action.exchange_id, 200, _SSE, 0.0)
            exchange_of[call_id] = action.exchange_id
    assert len(exchange_of) == n
    assert not engine.take_events()
    # A call in the middle, so that no ordering of the pending calls favours it.
    call_id = sorted(exchange_of)[n // 2]
    return engine, call_id, exchange_of[call_id]


def measure(n: int, repeats: int, steps: int) -> dict[str, float]:
    from mcpcore import ProgressReceived

    engine, call_id, xid = ready_engine_with_calls(n)
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": call_id, "progress": 1, "total": 2},
    }
    chunk = b"data: " + json.dumps(note).encode() + b"\n\n"
    response_data, next_deadline, handle_timer = (
        engine.response_data,
        engine.next_deadline,
        engine.handle_timer,
    )

    # One step by hand first: the chunk must reach the call, and nothing may be due.
    response_data(xid, chunk, NOW)
    deadline = next_deadline()
    assert deadline is not None and deadline > NOW, deadline
    handle_timer(NOW)
    [event] = engine.take_events()
    assert isinstance(event, ProgressReceived) and event.call_id == call_id, event
    assert not engine.take_actions()

    clock = time.perf_counter
    steps_t: list[float] = []
    parts_t: dict[str, list[float]] = {"response_data": [], "next_deadline": [], "handle_timer": []}
    for _ in range(repeats):
        # The whole step, timed over the batch.
        t0 = clock()
        for _ in range(steps):
            response_data(xid, chunk, NOW)
            next_deadline()
            handle_timer(NOW)
        steps_t.append((clock() - t0) / steps)
        # The same steps again, each part timed on its own (a clock read between parts).
        a = b = c = 0.0
        for _ in range(steps):
            t0 = clock()
            response_data(xid, chunk, NOW)
            t1 = clock()
            next_deadline()
            t2 = clock()
            handle_timer(NOW)
            t3 = clock()
            a += t1 - t0
            b += t2 - t1
            c += t3 - t2
        parts_t["response_data"].append(a / steps)
        parts_t["next_deadline"].append(b / steps)
        parts_t["handle_timer"].append(c / steps)
        events = engine.take_events()  # a driver hands these on; outside the timing
        # one progress event per step, and nothing else: no call timed out or ended
        assert len(events) == 2 * steps, len(events)
        assert all(isinstance(e, ProgressReceived) for e in events), events[:3]
    assert not engine.take_actions()  # nothing due: no cancel notice, no abort
    out = {"step": _median(steps_t), "min": min(steps_t), "max": max(steps_t)}
    out.update({name: _median(ts) for name, ts in parts_t.items()})
    return out


def run(sizes: tuple[int, ...], repeats: int, steps: int) -> dict[str, Any]:
    out: dict[str, Any] = {str(n): measure(n, repeats, steps) for n in sizes}
    lo, hi = str(min(sizes)), str(max(sizes))
    out["ratio"] = out[hi]["step"] / out[lo]["step"]
    out["ratio_of"] = [int(hi), int(lo)]
    return out


def table(res: dict[str, Any]) -> str:
    us = 1e6
    rows = [
        "| calls in flight | µs per step (median) | min | max "
        "| response_data | next_deadline | handle_timer |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, r in res.items():
        if key.isdigit():
            rows.append(
                f"| {int(key):,} | {r['step'] * us:,.1f} | {r['min'] * us:,.1f} | "
                f"{r['max'] * us:,.1f} | {r['response_data'] * us:,.1f} | "
                f"{r['next_deadline'] * us:,.1f} | {r['handle_timer'] * us:,.1f} |"
            )
    hi, lo = res["ratio_of"]
    rows.append("")
    rows.append(f"ratio {hi:,} ÷ {lo:,} (µs per step): {res['ratio']:.2f}×")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=11, help="batches per N (median taken)")
    ap.add_argument("--steps", type=int, default=200, help="steps per batch")
    ap.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="calls in flight, comma-separated"
    )
    ap.add_argument("--json", action="store_true", help="also print a JSON result as last line")
    ap.add_argument(
        "--no-gc",
        action="store_true",
        help="disable the cyclic garbage collector while measuring (it is on in a driver)",
    )
    args = ap.parse_args(argv)
    if args.no_gc:
        gc.disable()
    sizes = tuple(sorted(int(s) for s in args.sizes.split(",") if s.strip()))
    res = run(sizes, args.repeats, args.steps)
    print(table(res))
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
