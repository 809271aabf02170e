"""In-process measurements without a network: B2 (core cost) and B5 (imports).

``python -m bench.micro b2 '{"repeats": 7}'`` and ``python -m bench.micro b5 '{"repeats": 7}'``
print a JSON result as their last line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

SIZES = {"100 B": 100, "10 KB": 10_000, "1 MB": 1_000_000}
CHUNK = 65536  # what httpcore hands the driver per read


def _payload(size: int, msg_id: int = 7) -> bytes:
    unit = "The quick brown fox jumps over the lazy dog — ünïcödé ✓ 0123456789\n"
    text = (unit * (size // len(unit) + 1))[:size]
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "result": result}, ensure_ascii=False
    ).encode()


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def b2(p: dict[str, Any]) -> dict[str, Any]:
    from mcpcore import SSEDecoder, decode_message
    from mcpcore.base._render import render_result
    from mcpcore.wire._jsonrpc import Result

    repeats = p.get("repeats", 7)
    out: dict[str, Any] = {}
    mix_core = 0.0
    mix_json = 0.0
    for label, size in SIZES.items():
        payload = _payload(size)
        sse = b"id: 1\ndata: " + payload + b"\n\n"
        chunks = [sse[i : i + CHUNK] for i in range(0, len(sse), CHUNK)]
        inner = max(1, min(2000, 2_000_000 // max(size, 1)))

        def core() -> None:
            decoder = SSEDecoder()
            for chunk in chunks:  # noqa: B023 - used within this iteration
                for event in decoder.feed(chunk):
                    message = decode_message(event.data)
                    assert isinstance(message, Result)
                    render_result(message.result)

        def plain() -> None:
            json.loads(payload)  # noqa: B023 - used within this iteration

        core()
        plain()
        core_times: list[float] = []
        json_times: list[float] = []
        for _ in range(repeats):
            # Interleaved so drift on a noisy machine hits both the same.
            t0 = time.perf_counter()
            for _ in range(inner):
                plain()
            t1 = time.perf_counter()
            for _ in range(inner):
                core()
            t2 = time.perf_counter()
            json_times.append((t1 - t0) / inner)
            core_times.append((t2 - t1) / inner)
        c, j = _median(core_times), _median(json_times)
        out[label] = {"core": c, "json_loads": j, "ratio": c / j}
        mix_core += c
        mix_json += j
    out["mix"] = {"core": mix_core, "json_loads": mix_json, "ratio": mix_core / mix_json}
    return out


IMPORTS = {
    "mcpcore": "import mcpcore",
    # the public names load on first use (PEP 562): this is the cost of all of them
    "mcpcore (every public name)": "import mcpcore; [getattr(mcpcore, n) for n in mcpcore.__all__]",
    "mcpcore_anyio": "import mcpcore_anyio",
    "mcpcore_threaded": "import mcpcore_threaded",
    # httpcore loads on a client's first remote start, not with the driver: these rows
    # are import + what that first start adds (httpcore imports trio whenever it is
    # installed, as it is here for the tests)
    "mcpcore_anyio + HTTP stack (first remote start)": "import mcpcore_anyio, mcpcore_anyio._network",
    "mcpcore_threaded + HTTP stack (first remote start)": "import mcpcore_threaded, mcpcore_threaded._network",
    # what a user without trio pays for the same
    "mcpcore_anyio + HTTP stack, trio not installed": "import sys; sys.modules['trio'] = None; "
    "import mcpcore_anyio, mcpcore_anyio._network",
    "mcpcore_threaded + HTTP stack, trio not installed": "import sys; sys.modules['trio'] = None; "
    "import mcpcore_threaded, mcpcore_threaded._network",
    "official (mcp client)": "import mcp; from mcp import ClientSession; "
    "from mcp.client.streamable_http import streamable_http_client",
    "fastmcp": "from fastmcp import Client",
}

_PROBE = """
import sys, time, json
before = set(sys.modules)
t0 = time.perf_counter()
{stmt}
t1 = time.perf_counter()
new = sorted(m for m in set(sys.modules) - before if sys.modules[m] is not None)
std = sys.stdlib_module_names
third = sorted({{m.split('.')[0] for m in new if m.split('.')[0] not in std and not m.startswith('_')}})
print(json.dumps({{"t": t1 - t0, "modules": len(new), "third_party": third}}))
"""


def b5(p: dict[str, Any]) -> dict[str, Any]:
    repeats = p.get("repeats", 7)
    skip = set(p.get("skip", []))
    out: dict[str, Any] = {}
    for label, stmt in IMPORTS.items():
        if label in skip:
            continue
        times = []
        info: dict[str, Any] = {}
        for i in range(repeats + 1):
            proc = subprocess.run(
                [sys.executable, "-c", _PROBE.format(stmt=stmt)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                info = {"error": proc.stderr.strip().splitlines()[-1:]}
                break
            info = json.loads(proc.stdout.strip().splitlines()[-1])
            if i:  # the first run warms the file cache and writes .pyc files
                times.append(info["t"])
        if "error" in info:
            out[label] = info
            continue
        out[label] = {
            "median_ms": _median(times) * 1000,
            "modules": info["modules"],
            "third_party": info["third_party"],
        }
    return out


def main(argv: list[str]) -> None:
    what, raw = argv[0], argv[1] if len(argv) > 1 else "{}"
    params = json.loads(raw)
    result = {"b2": b2, "b5": b5}[what](params)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
