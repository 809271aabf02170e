"""One benchmark client in its own process: ``python -m bench.worker CLIENT SCENARIO 'JSON'``.

CLIENT is ``anyio`` | ``threaded`` (this project's drivers), ``official`` (the
MCP Python SDK: ``streamable_http_client`` + ``ClientSession``) or ``fastmcp``.
The last line printed on stdout is the JSON result. Only this process is
measured: CPU with ``time.process_time()``, memory with ``ru_maxrss``.

Scenarios (arguments in the JSON object):

* ``calls`` {url, seq, conc_calls, conc, batches, text, step}: per batch, ``seq``
  sequential ``echo`` calls, then ``conc_calls`` calls with ``conc`` in flight.
  With ``step`` true (``bench.ab_all``), once connected and warm it prints
  ``{"ready": true}``, then runs one batch per line read on stdin and prints it
  as a JSON line at once, until stdin closes: two such workers, one per tree,
  take turns batch by batch, so A and B are measured moments apart.
* ``list`` {url, batches}: connect → ready with every tool listed, per batch.
* ``resources`` {url, batches}: connect → ready, then every resource listed
  (all pages), per batch (B3).
* ``blob`` {url, size}: read one resource whose blob is ``size`` bytes, and its
  bytes decoded (B11).
* ``big`` {url, size}: one ``big`` call returning ``size`` bytes of text.
* ``cancel`` {url, repeats, wait}: start ``slow``, cancel it after ``wait`` s.
* ``pool`` {url, calls, conc}: ``calls`` echo calls with ``conc`` in flight.
* ``connect`` {targets: [{url, protocol, era}], repeats}: B10, construct → ready
  (tools listed) → close, ``repeats`` times per target, targets interleaved.

``calls`` and ``connect`` take a ``protocol`` (B10): ``"auto"`` or ``"legacy"``,
this project's ``protocol=`` option; for ``official`` it selects ``mcp.Client(url,
mode=protocol)`` instead of ``streamable_http_client`` + ``ClientSession``. The
era actually spoken is checked against ``era`` when given.
"""

from __future__ import annotations

import json
import resource
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

MAX_RSS_UNIT = 1024  # ru_maxrss is in KiB on Linux


def maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * MAX_RSS_UNIT


def stats_of(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    n = len(ordered)
    if not n:
        return {"median": float("nan"), "p99": float("nan")}
    p99 = ordered[min(n - 1, round(0.99 * (n - 1)))]
    mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"median": mid, "p99": p99}


def _say(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _steps(p: dict[str, Any]) -> Iterator[None]:
    """One turn per batch: ``p["batches"]`` of them, or in step mode one per line on stdin."""
    if not p.get("step"):
        yield from (None for _ in range(p["batches"]))
        return
    _say({"ready": True})
    while sys.stdin.readline():
        yield None


async def _asteps(p: dict[str, Any]) -> AsyncIterator[None]:
    """``_steps`` for an event loop: stdin is read in a thread, so the client's own tasks run."""
    if not p.get("step"):
        for _ in range(p["batches"]):
            yield None
        return
    import anyio.to_thread

    _say({"ready": True})
    while await anyio.to_thread.run_sync(sys.stdin.readline):
        yield None


def _keep(batches: list[dict[str, Any]], batch: dict[str, Any], p: dict[str, Any]) -> None:
    batches.append(batch)
    if p.get("step"):
        _say(batch)


# --- async clients: one adapter shape ------------------------------------------------------


class AsyncAdapter:
    """``async with adapter.session() as call`` → ``await call(name, args)`` returns text."""

    name = ""
    protocol: str | None = None  # B10: the era to speak (None: the B1 default path)
    era: str | None = None  # B10: the era that must be negotiated

    def session(self, url: str) -> Any:
        raise NotImplementedError


class AnyioAdapter(AsyncAdapter):
    name = "anyio"

    def session(self, url: str) -> Any:
        import contextlib

        from mcpcore_anyio import McpClient

        @contextlib.asynccontextmanager
        async def cm():  # type: ignore[no-untyped-def]
            kw: dict[str, Any] = {"protocol": self.protocol} if self.protocol else {}
            async with McpClient("bench", {"url": url}, allow_insecure_http=True, **kw) as client:
                availability = await client.ready(30)
                if not availability.ok:
                    raise RuntimeError(f"not ready: {availability.reason}")
                _check_era(self.era, client.protocol_version)

                async def call(name: str, args: dict[str, Any]) -> str:
                    return (await client.call("bench/" + name, args)).text

                call.client = client  # type: ignore[attr-defined]
                yield call

        return cm()


class OfficialAdapter(AsyncAdapter):
    name = "official"

    def session(self, url: str) -> Any:
        import contextlib

        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        if self.protocol:
            return _official_client(url, self.protocol, self.era)

        @contextlib.asynccontextmanager
        async def cm():  # type: ignore[no-untyped-def]
            async with streamable_http_client(url) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()

                    async def call(name: str, args: dict[str, Any]) -> str:
                        result = await session.call_tool(name, args)
                        return "\n\n".join(getattr(b, "text", "") for b in result.content)

                    call.session = session  # type: ignore[attr-defined]
                    yield call

        return cm()


MODERN = "2026-07-28"


def _check_era(era: str | None, version: str | None) -> None:
    """B10: refuse to measure a path other than the one asked for."""
    if era is not None and (version == MODERN) != (era == "modern"):
        raise RuntimeError(f"expected the {era} era, negotiated {version!r}")


def _official_client(url: str, protocol: str, era: str | None) -> Any:
    """B10: the official client's own entry point, ``mcp.Client(url, mode=...)``."""
    import contextlib

    import mcp

    @contextlib.asynccontextmanager
    async def cm():  # type: ignore[no-untyped-def]
        async with mcp.Client(url, mode=protocol) as client:
            _check_era(era, client.protocol_version)

            async def call(name: str, args: dict[str, Any]) -> str:
                result = await client.call_tool(name, args)
                return "\n\n".join(getattr(b, "text", "") for b in result.content)

            call.client = client  # type: ignore[attr-defined]
            yield call

    return cm()


class FastmcpAdapter(AsyncAdapter):
    name = "fastmcp"

    def session(self, url: str) -> Any:
        import contextlib

        from fastmcp import Client

        @contextlib.asynccontextmanager
        async def cm():  # type: ignore[no-untyped-def]
            async with Client(url) as client:

                async def call(name: str, args: dict[str, Any]) -> str:
                    result = await client.call_tool(name, args)
                    return "\n\n".join(getattr(b, "text", "") for b in result.content)

                call.client = client  # type: ignore[attr-defined]
                yield call

        return cm()


class _RawExchange:
    """The HTTP stack alone, as a floor for B1: no MCP client at all.

    ``initialize`` and ``notifications/initialized`` by hand, then each call
    is one ``tools/call`` POST whose reply is read whole and not decoded. No
    MCP client over the same httpcore can cost less than this per call.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.headers = [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ]
        self.next_id = 0

    def body(self, method: str, params: dict[str, Any], notify: bool = False) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        return json.dumps(message).encode()

    def initialize_body(self) -> bytes:
        return self.body(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "floor", "version": "0"},
            },
        )

    def adopt(self, headers: list[tuple[bytes, bytes]]) -> None:
        for name, value in headers:
            if name.lower() == b"mcp-session-id":
                self.headers.append((b"mcp-session-id", value))
        self.headers.append((b"mcp-protocol-version", b"2025-06-18"))


class HttpcoreAsyncAdapter(AsyncAdapter):
    name = "httpcore async (floor)"

    def session(self, url: str) -> Any:
        import contextlib

        import httpcore

        @contextlib.asynccontextmanager
        async def cm():  # type: ignore[no-untyped-def]
            raw = _RawExchange(url)
            async with httpcore.AsyncConnectionPool(max_connections=10) as pool:

                async def post(body: bytes) -> list[tuple[bytes, bytes]]:
                    async with pool.stream("POST", url, headers=raw.headers, content=body) as r:
                        async for _ in r.aiter_stream():
                            pass
                        return r.headers

                raw.adopt(await post(raw.initialize_body()))
                await post(raw.body("notifications/initialized", {}, notify=True))

                async def call(name: str, args: dict[str, Any]) -> str:
                    await post(raw.body("tools/call", {"name": name, "arguments": args}))
                    return ""

                yield call

        return cm()


ASYNC = {
    "anyio": AnyioAdapter,
    "official": OfficialAdapter,
    "fastmcp": FastmcpAdapter,
    "httpcore async (floor)": HttpcoreAsyncAdapter,
}


def run_async(main: Callable[[], Awaitable[Any]]) -> Any:
    import anyio

    return anyio.run(main)


# --- scenarios on async clients -------------------------------------------------------------


async def _calls_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    import anyio

    text = p.get("text", "hello")
    batches = []
    async with adapter.session(p["url"]) as call:
        for _ in range(3):  # warm-up
            await call("echo", {"text": text})
        async for _ in _asteps(p):
            lat: list[float] = []
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(p["seq"]):
                t = time.perf_counter()
                await call("echo", {"text": text})
                lat.append(time.perf_counter() - t)
            c1, w1 = time.process_time(), time.perf_counter()
            seq = {"cpu_per_call": (c1 - c0) / p["seq"], "wall": w1 - w0, "lat": stats_of(lat)}

            clat: list[float] = []
            per_worker = p["conc_calls"] // p["conc"]

            async def worker() -> None:
                for _ in range(per_worker):  # noqa: B023 - used within this iteration
                    t = time.perf_counter()
                    await call("echo", {"text": text})
                    clat.append(time.perf_counter() - t)  # noqa: B023 - used within this iteration

            c0, w0 = time.process_time(), time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(p["conc"]):
                    tg.start_soon(worker)
            c1, w1 = time.process_time(), time.perf_counter()
            n = per_worker * p["conc"]
            conc = {
                "cpu_per_call": (c1 - c0) / n,
                "throughput": n / (w1 - w0),
                "lat": stats_of(clat),
            }
            _keep(batches, {"seq": seq, "conc": conc}, p)
    return {"batches": batches}


async def _list_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    out = []
    for i in range(p["batches"] + 1):
        c0, w0 = time.process_time(), time.perf_counter()
        if adapter.name == "anyio":
            from mcpcore_anyio import McpClient

            async with McpClient("bench", {"url": p["url"]}, allow_insecure_http=True) as client:
                availability = await client.ready(60)
                assert availability.ok, availability.reason
                count = len(client.tools)
                c1, w1 = time.process_time(), time.perf_counter()
        elif adapter.name == "official":
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client
            from mcp.types import PaginatedRequestParams

            async with streamable_http_client(p["url"]) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools: list[Any] = []
                    cursor = None
                    while True:
                        params = PaginatedRequestParams(cursor=cursor) if cursor else None
                        page = await session.list_tools(params=params)
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    count = len(tools)
                    c1, w1 = time.process_time(), time.perf_counter()
        else:
            from fastmcp import Client

            async with Client(p["url"]) as client:
                tools = await client.list_tools(max_pages=1000)
                count = len(tools)
                c1, w1 = time.process_time(), time.perf_counter()
        if i:  # the first one warms up imports and caches
            out.append({"wall": w1 - w0, "cpu": c1 - c0, "tools": count})
    return {"batches": out}


async def _resources_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    out = []
    for i in range(p["batches"] + 1):
        c0, w0 = time.process_time(), time.perf_counter()
        if adapter.name == "anyio":
            from mcpcore_anyio import McpClient

            async with McpClient("bench", {"url": p["url"]}, allow_insecure_http=True) as client:
                availability = await client.ready(60)
                assert availability.ok, availability.reason
                count = len(await client.list_resources(timeout=60))
                c1, w1 = time.process_time(), time.perf_counter()
        elif adapter.name == "official":
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client
            from mcp.types import PaginatedRequestParams

            async with streamable_http_client(p["url"]) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    resources: list[Any] = []
                    cursor = None
                    while True:
                        params = PaginatedRequestParams(cursor=cursor) if cursor else None
                        page = await session.list_resources(params=params)
                        resources.extend(page.resources)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    count = len(resources)
                    c1, w1 = time.process_time(), time.perf_counter()
        else:
            from fastmcp import Client

            async with Client(p["url"]) as client:
                count = len(await client.list_resources(max_pages=1000))
                c1, w1 = time.process_time(), time.perf_counter()
        if i:  # the first one warms up imports and caches
            out.append({"wall": w1 - w0, "cpu": c1 - c0, "items": count})
    return {"batches": out}


def _blob_uri(size: int) -> str:
    return f"bench://blob/{size}"


async def _blob_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    """B11: one read of a ``size``-byte blob, its bytes decoded; peak RSS around it."""
    import base64

    async def read(session: Any, size: int) -> int:
        if adapter.name == "anyio":
            result = await session.read_resource(_blob_uri(size), timeout=300)
            return len(result.contents[0].data)
        if adapter.name == "official":
            result = await session.read_resource(_blob_uri(size))
        else:
            result = type("R", (), {"contents": await session.read_resource(_blob_uri(size))})
        return len(base64.b64decode(result.contents[0].blob))

    async def measure(session: Any) -> dict[str, Any]:
        await read(session, 1000)  # warm-up: imports and the first read's path
        base = maxrss()
        w0 = time.perf_counter()
        try:
            got = await read(session, p["size"])
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            return {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "base": base,
                "peak": maxrss(),
                "time": time.perf_counter() - w0,
            }
        ok = got == p["size"]
        return {
            "ok": ok,
            "error": None if ok else f"got {got} bytes",
            "base": base,
            "peak": maxrss(),
            "time": time.perf_counter() - w0,
        }

    if adapter.name == "anyio":
        from mcpcore_anyio import McpClient

        async with McpClient("bench", {"url": p["url"]}, allow_insecure_http=True) as client:
            assert (await client.ready(30)).ok
            return await measure(client)
    if adapter.name == "official":
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(p["url"]) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await measure(session)
    from fastmcp import Client

    async with Client(p["url"]) as fclient:
        return await measure(fclient)


async def _connect_once_async(client: str, target: dict[str, Any]) -> dict[str, Any]:
    """B10: construct → ready with the tools listed (timed), then close (timed apart)."""
    url, protocol, era = target["url"], target["protocol"], target.get("era")
    c0, w0 = time.process_time(), time.perf_counter()
    if client == "anyio":
        from mcpcore_anyio import McpClient

        mc = McpClient("bench", {"url": url}, allow_insecure_http=True, protocol=protocol)
        async with mc:
            availability = await mc.ready(30)
            assert availability.ok, availability.reason
            count = len(mc.tools)
            c1, w1 = time.process_time(), time.perf_counter()
            version = mc.protocol_version
    else:
        import mcp

        oc = mcp.Client(url, mode=protocol)
        async with oc:
            count = len((await oc.list_tools()).tools)
            c1, w1 = time.process_time(), time.perf_counter()
            version = oc.protocol_version
    _check_era(era, version)
    return {"wall": w1 - w0, "cpu": c1 - c0, "close": time.perf_counter() - w1, "tools": count}


async def _connect_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    return await _connect_rounds(p, lambda t: _connect_once_async(adapter.name, t))


async def _connect_rounds(
    p: dict[str, Any], once: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    targets = p["targets"]
    for target in targets:  # warm-up: imports, the HTTP stack's first start, caches
        await once(target)
    samples: list[list[dict[str, Any]]] = [[] for _ in targets]
    for _ in range(p["repeats"]):
        for i, target in enumerate(targets):
            samples[i].append(await once(target))
    return {"targets": samples}


async def _big_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    async with adapter.session(p["url"]) as call:
        await call("echo", {"text": "warm"})
        await call("big", {"size": 1000})
        base = maxrss()
        w0 = time.perf_counter()
        try:
            text = await call("big", {"size": p["size"]})
        except BaseException as exc:
            return {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "base": base,
                "peak": maxrss(),
                "time": time.perf_counter() - w0,
            }
        wall = time.perf_counter() - w0
        ok = len(text) == p["size"]
        return {
            "ok": ok,
            "error": None if ok else f"got {len(text)} chars",
            "base": base,
            "peak": maxrss(),
            "time": wall,
        }


async def _cancel_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    import anyio

    times: list[float] = []
    async with adapter.session(p["url"]) as call:
        await call("echo", {"text": "warm"})
        for _ in range(p["repeats"]):
            returned = anyio.Event()
            ended: list[float] = []

            async def runner(scope: anyio.CancelScope) -> None:
                with scope:
                    await call("slow", {})
                ended.append(time.perf_counter())  # noqa: B023 - used within this iteration
                returned.set()  # noqa: B023 - used within this iteration

            scope = anyio.CancelScope()
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(runner, scope)
                    await anyio.sleep(p["wait"])
                    t0 = time.perf_counter()
                    scope.cancel()
                    await returned.wait()
            except BaseException as exc:
                if not isinstance(exc, Exception):
                    raise
                return {"times": times, "error": f"{type(exc).__name__}: {exc}"[:300]}
            times.append(ended[0] - t0)
        await anyio.sleep(0.3)  # let the notice reach the server before the session closes
    return {"times": times}


async def _pool_async(adapter: AsyncAdapter, p: dict[str, Any]) -> dict[str, Any]:
    import anyio

    async with adapter.session(p["url"]) as call:
        per = p["calls"] // p["conc"]

        async def worker() -> None:
            for _ in range(per):
                await call("echo", {"text": "x"})

        w0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(p["conc"]):
                tg.start_soon(worker)
        return {"calls": per * p["conc"], "wall": time.perf_counter() - w0}


# --- the threaded driver ------------------------------------------------------------------


class _SyncFloorClient:
    """``_RawExchange`` over httpcore's sync pool, in the threaded client's shape."""

    def __init__(self, url: str) -> None:
        import httpcore

        self.raw = _RawExchange(url)
        self.pool = httpcore.ConnectionPool(max_connections=10)

    def _post(self, body: bytes) -> list[tuple[bytes, bytes]]:
        with self.pool.stream("POST", self.raw.url, headers=self.raw.headers, content=body) as r:
            for _ in r.iter_stream():
                pass
            return r.headers

    def __enter__(self) -> _SyncFloorClient:
        self.raw.adopt(self._post(self.raw.initialize_body()))
        self._post(self.raw.body("notifications/initialized", {}, notify=True))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.pool.close()

    def ready(self, timeout: float) -> Any:
        return type("Ready", (), {"ok": True})()

    def call(self, tool_id: str, arguments: dict[str, Any]) -> Any:
        name = tool_id.split("/", 1)[1]
        self._post(self.raw.body("tools/call", {"name": name, "arguments": arguments}))
        return type("Output", (), {"text": ""})()


def _threaded_client(url: str, **kw: Any) -> Any:
    from mcpcore_threaded import McpClient

    return McpClient("bench", {"url": url}, allow_insecure_http=True, **kw)


def _calls_threaded(p: dict[str, Any], make: Callable[[str], Any] | None = None) -> dict[str, Any]:
    text = p.get("text", "hello")
    batches = []
    kw: dict[str, Any] = {"protocol": p["protocol"]} if p.get("protocol") else {}
    with (make or (lambda url: _threaded_client(url, **kw)))(p["url"]) as client:
        assert client.ready(30).ok
        if kw:
            _check_era(p.get("era"), client.protocol_version)
        for _ in range(3):
            client.call("bench/echo", {"text": text})
        for _ in _steps(p):
            lat: list[float] = []
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(p["seq"]):
                t = time.perf_counter()
                client.call("bench/echo", {"text": text})
                lat.append(time.perf_counter() - t)
            c1, w1 = time.process_time(), time.perf_counter()
            seq = {"cpu_per_call": (c1 - c0) / p["seq"], "wall": w1 - w0, "lat": stats_of(lat)}

            clat: list[float] = []
            per_worker = p["conc_calls"] // p["conc"]
            lock = threading.Lock()

            def worker() -> None:
                mine = []
                for _ in range(per_worker):  # noqa: B023 - used within this iteration
                    t = time.perf_counter()
                    client.call("bench/echo", {"text": text})
                    mine.append(time.perf_counter() - t)
                with lock:  # noqa: B023 - used within this iteration
                    clat.extend(mine)  # noqa: B023 - used within this iteration

            threads = [threading.Thread(target=worker) for _ in range(p["conc"])]
            c0, w0 = time.process_time(), time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            c1, w1 = time.process_time(), time.perf_counter()
            n = per_worker * p["conc"]
            conc = {
                "cpu_per_call": (c1 - c0) / n,
                "throughput": n / (w1 - w0),
                "lat": stats_of(clat),
            }
            _keep(batches, {"seq": seq, "conc": conc}, p)
    return {"batches": batches}


def _list_threaded(p: dict[str, Any]) -> dict[str, Any]:
    out = []
    for i in range(p["batches"] + 1):
        c0, w0 = time.process_time(), time.perf_counter()
        with _threaded_client(p["url"]) as client:
            availability = client.ready(60)
            assert availability.ok, availability.reason
            count = len(client.tools)
            c1, w1 = time.process_time(), time.perf_counter()
        if i:
            out.append({"wall": w1 - w0, "cpu": c1 - c0, "tools": count})
    return {"batches": out}


def _resources_threaded(p: dict[str, Any]) -> dict[str, Any]:
    out = []
    for i in range(p["batches"] + 1):
        c0, w0 = time.process_time(), time.perf_counter()
        with _threaded_client(p["url"]) as client:
            availability = client.ready(60)
            assert availability.ok, availability.reason
            count = len(client.list_resources(timeout=60))
            c1, w1 = time.process_time(), time.perf_counter()
        if i:
            out.append({"wall": w1 - w0, "cpu": c1 - c0, "items": count})
    return {"batches": out}


def _blob_threaded(p: dict[str, Any]) -> dict[str, Any]:
    with _threaded_client(p["url"]) as client:
        assert client.ready(30).ok
        client.read_resource(_blob_uri(1000)).contents[0].data  # noqa: B018 - warm-up
        base = maxrss()
        w0 = time.perf_counter()
        try:
            got = len(client.read_resource(_blob_uri(p["size"]), timeout=300).contents[0].data)
        except Exception as exc:
            return {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "base": base,
                "peak": maxrss(),
                "time": time.perf_counter() - w0,
            }
        ok = got == p["size"]
        return {
            "ok": ok,
            "error": None if ok else f"got {got} bytes",
            "base": base,
            "peak": maxrss(),
            "time": time.perf_counter() - w0,
        }


def _connect_threaded(p: dict[str, Any]) -> dict[str, Any]:
    def once(target: dict[str, Any]) -> dict[str, Any]:
        c0, w0 = time.process_time(), time.perf_counter()
        with _threaded_client(target["url"], protocol=target["protocol"]) as client:
            availability = client.ready(30)
            assert availability.ok, availability.reason
            count = len(client.tools)
            c1, w1 = time.process_time(), time.perf_counter()
            version = client.protocol_version
        _check_era(target.get("era"), version)
        return {"wall": w1 - w0, "cpu": c1 - c0, "close": time.perf_counter() - w1, "tools": count}

    targets = p["targets"]
    for target in targets:
        once(target)
    samples: list[list[dict[str, Any]]] = [[] for _ in targets]
    for _ in range(p["repeats"]):
        for i, target in enumerate(targets):
            samples[i].append(once(target))
    return {"targets": samples}


def _big_threaded(p: dict[str, Any]) -> dict[str, Any]:
    with _threaded_client(p["url"]) as client:
        assert client.ready(30).ok
        client.call("bench/echo", {"text": "warm"})
        client.call("bench/big", {"size": 1000})
        base = maxrss()
        w0 = time.perf_counter()
        try:
            text = client.call("bench/big", {"size": p["size"]}).text
        except Exception as exc:
            return {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}"[:300],
                "base": base,
                "peak": maxrss(),
                "time": time.perf_counter() - w0,
            }
        wall = time.perf_counter() - w0
        ok = len(text) == p["size"]
        return {
            "ok": ok,
            "error": None if ok else f"got {len(text)} chars",
            "base": base,
            "peak": maxrss(),
            "time": wall,
        }


def _cancel_threaded(p: dict[str, Any]) -> dict[str, Any]:
    times: list[float] = []
    with _threaded_client(p["url"]) as client:
        assert client.ready(30).ok
        client.call("bench/echo", {"text": "warm"})
        for _ in range(p["repeats"]):
            handle = client.start_call("bench/slow", {})
            time.sleep(p["wait"])
            t0 = time.perf_counter()
            handle.cancel()
            try:
                handle.result()
            except Exception:
                pass
            times.append(time.perf_counter() - t0)
        time.sleep(0.3)
    return {"times": times}


def _pool_threaded(p: dict[str, Any]) -> dict[str, Any]:
    with _threaded_client(p["url"]) as client:
        assert client.ready(30).ok
        per = p["calls"] // p["conc"]

        def worker() -> None:
            for _ in range(per):
                client.call("bench/echo", {"text": "x"})

        threads = [threading.Thread(target=worker) for _ in range(p["conc"])]
        w0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return {"calls": per * p["conc"], "wall": time.perf_counter() - w0}


def main(argv: list[str]) -> None:
    client, scenario, raw = argv[0], argv[1], argv[2]
    params = json.loads(raw)
    import logging

    logging.disable(logging.CRITICAL)  # no log output inside measurements
    if client == "httpcore sync (floor)":
        result = _calls_threaded(params, make=_SyncFloorClient)
    elif client == "threaded":
        fn = {
            "calls": _calls_threaded,
            "list": _list_threaded,
            "resources": _resources_threaded,
            "blob": _blob_threaded,
            "big": _big_threaded,
            "cancel": _cancel_threaded,
            "pool": _pool_threaded,
            "connect": _connect_threaded,
        }[scenario]
        result = fn(params)
    else:
        adapter = ASYNC[client]()
        adapter.protocol = params.get("protocol")
        adapter.era = params.get("era")
        afn = {
            "calls": _calls_async,
            "list": _list_async,
            "resources": _resources_async,
            "blob": _blob_async,
            "big": _big_async,
            "cancel": _cancel_async,
            "pool": _pool_async,
            "connect": _connect_async,
        }[scenario]
        result = run_async(lambda: afn(adapter, params))
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
