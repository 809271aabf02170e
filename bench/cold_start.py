"""One cold start, run as a script in a fresh interpreter (``bench.cold`` starts it).

    python bench/cold_start.py CLIENT URL WARM [no-trio]

Run by path, not with ``-m``, so nothing of ``bench`` is imported: the first
thing this process does after the interpreter's own start is stamp the clock,
then import the client (B5's cost, as a program pays it), connect, become ready
with every tool listed (B3 cold: the process's first connection, which loads
whatever the client defers to it), and make one ``echo`` call: B12 ends at
that first result. Then the client closes, and ``WARM`` more connections, each
until ready (B3 warm). Nothing is imported before the client; ``json`` is
imported at the end to print the marks. With ``no-trio``, ``trio`` cannot be
imported (``sys.modules["trio"] = None``, as B5's *trio not installed* rows do):
what a user's install pays, where nothing pulls trio in (mcpcore does not
depend on it; httpcore imports it whenever it is installed).

CLIENT: ``anyio``, ``threaded`` (this project's drivers), ``official`` (the MCP
Python SDK's ``streamable_http_client`` + ``ClientSession``), ``fastmcp``, or
the floors ``floor-sync`` / ``floor-async``: raw JSON-RPC over httpcore (sync
pool; async pool on anyio), imported the same way, that does what a client
must: ``initialize``, ``notifications/initialized``, every ``tools/list`` page
decoded for its cursor, then ``tools/call``. Marks are ``time.perf_counter()``
(CLOCK_MONOTONIC on Linux: the parent compares them with its own, taken before
it started this process) and ``time.process_time()`` (this process's CPU since
it began, the interpreter's start included).
"""

import time

T_START = time.perf_counter()
CPU_START = time.process_time()

import sys  # noqa: E402 - after the first stamp; loaded by the interpreter already

CLIENT, URL, WARM = sys.argv[1], sys.argv[2], int(sys.argv[3])
if sys.argv[4:] == ["no-trio"]:
    sys.modules["trio"] = None  # type: ignore[assignment]
marks: dict = {"start": (T_START, CPU_START)}
connects: list = []


def mark(name: str) -> None:
    marks[name] = (time.perf_counter(), time.process_time())


def timed_connect(w0: float, c0: float, count: int) -> None:
    connects.append((time.perf_counter() - w0, time.process_time() - c0, count))


def run_anyio() -> object:
    import anyio

    from mcpcore_anyio import McpClient

    mark("imported")

    async def main() -> object:
        for i in range(WARM + 1):
            w0, c0 = time.perf_counter(), time.process_time()
            async with McpClient("bench", {"url": URL}, allow_insecure_http=True) as client:
                assert (await client.ready(60)).ok
                timed_connect(w0, c0, len(client.tools))
                if i == 0:
                    text = (await client.call("bench/echo", {"text": "hello"})).text
                    mark("result")
        return text

    return anyio.run(main)


def run_threaded() -> object:
    from mcpcore_threaded import McpClient

    mark("imported")
    for i in range(WARM + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        with McpClient("bench", {"url": URL}, allow_insecure_http=True) as client:
            assert client.ready(60).ok
            timed_connect(w0, c0, len(client.tools))
            if i == 0:
                text = client.call("bench/echo", {"text": "hello"}).text
                mark("result")
    return text


def run_official() -> object:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import PaginatedRequestParams

    mark("imported")

    async def main() -> object:
        for i in range(WARM + 1):
            w0, c0 = time.perf_counter(), time.process_time()
            async with streamable_http_client(URL) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools: list = []
                    cursor = None
                    while True:
                        params = PaginatedRequestParams(cursor=cursor) if cursor else None
                        page = await session.list_tools(params=params)
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    timed_connect(w0, c0, len(tools))
                    if i == 0:
                        result = await session.call_tool("echo", {"text": "hello"})
                        text = result.content[0].text
                        mark("result")
        return text

    return anyio.run(main)


def run_fastmcp() -> object:
    import anyio
    from fastmcp import Client

    mark("imported")

    async def main() -> object:
        for i in range(WARM + 1):
            w0, c0 = time.perf_counter(), time.process_time()
            async with Client(URL) as client:
                tools = await client.list_tools(max_pages=1000)
                timed_connect(w0, c0, len(tools))
                if i == 0:
                    result = await client.call_tool("echo", {"text": "hello"})
                    text = result.content[0].text
                    mark("result")
        return text

    return anyio.run(main)


class Raw:
    """The floors' JSON-RPC: bodies out, the reply's one message in (JSON or one SSE event)."""

    def __init__(self, json: object) -> None:
        self.json = json
        self.headers = [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ]
        self.next_id = 0

    def body(self, method: str, params: dict, notify: bool = False) -> bytes:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        return self.json.dumps(message).encode()  # type: ignore[attr-defined]

    def initialize(self) -> bytes:
        info = {"name": "floor", "version": "0"}
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
        return self.body("initialize", params)

    def adopt(self, headers: list) -> None:
        for name, value in headers:
            if name.lower() == b"mcp-session-id":
                self.headers.append((b"mcp-session-id", value))
        self.headers.append((b"mcp-protocol-version", b"2025-06-18"))

    def decode(self, data: bytes) -> dict:
        if data[:1] != b"{":  # one SSE event: its data line
            data = next(ln[5:] for ln in data.splitlines() if ln.startswith(b"data:"))
        return self.json.loads(data)  # type: ignore[attr-defined, no-any-return]

    def listing(self, page: dict) -> tuple:
        result = page["result"]
        return result["tools"], result.get("nextCursor")


def run_floor_sync() -> object:
    import json

    import httpcore

    mark("imported")
    text = None
    for i in range(WARM + 1):
        w0, c0 = time.perf_counter(), time.process_time()
        raw = Raw(json)
        with httpcore.ConnectionPool(max_connections=10) as pool:

            def post(body: bytes, raw: Raw = raw, pool: object = pool) -> tuple:
                r = pool.request("POST", URL, headers=raw.headers, content=body)  # type: ignore[attr-defined]
                return r.headers, r.content

            headers, _ = post(raw.initialize())
            raw.adopt(headers)
            post(raw.body("notifications/initialized", {}, notify=True))
            tools: list = []
            cursor = None
            while True:
                params = {"cursor": cursor} if cursor else {}
                page, cursor = raw.listing(raw.decode(post(raw.body("tools/list", params))[1]))
                tools.extend(page)
                if not cursor:
                    break
            timed_connect(w0, c0, len(tools))
            if i == 0:
                call = {"name": "echo", "arguments": {"text": "hello"}}
                reply = raw.decode(post(raw.body("tools/call", call))[1])
                text = reply["result"]["content"][0]["text"]
                mark("result")
    return text


def run_floor_async() -> object:
    import json

    import anyio
    import httpcore

    mark("imported")

    async def main() -> object:
        text = None
        for i in range(WARM + 1):
            w0, c0 = time.perf_counter(), time.process_time()
            raw = Raw(json)
            async with httpcore.AsyncConnectionPool(max_connections=10) as pool:

                async def post(body: bytes, raw: Raw = raw, pool: object = pool) -> tuple:
                    r = await pool.request("POST", URL, headers=raw.headers, content=body)  # type: ignore[attr-defined]
                    return r.headers, r.content

                headers, _ = await post(raw.initialize())
                raw.adopt(headers)
                await post(raw.body("notifications/initialized", {}, notify=True))
                tools: list = []
                cursor = None
                while True:
                    params = {"cursor": cursor} if cursor else {}
                    reply = raw.decode((await post(raw.body("tools/list", params)))[1])
                    page, cursor = raw.listing(reply)
                    tools.extend(page)
                    if not cursor:
                        break
                timed_connect(w0, c0, len(tools))
                if i == 0:
                    call = {"name": "echo", "arguments": {"text": "hello"}}
                    reply = raw.decode((await post(raw.body("tools/call", call)))[1])
                    text = reply["result"]["content"][0]["text"]
                    mark("result")
        return text

    return anyio.run(main)


RUN = {
    "anyio": run_anyio,
    "threaded": run_threaded,
    "official": run_official,
    "fastmcp": run_fastmcp,
    "floor-sync": run_floor_sync,
    "floor-async": run_floor_async,
}

if __name__ == "__main__":
    import logging

    logging.disable(logging.CRITICAL)  # no log output inside measurements
    TEXT = RUN[CLIENT]()
    import json

    print(json.dumps({"marks": marks, "connects": connects, "text": TEXT}))
