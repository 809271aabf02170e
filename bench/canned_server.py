"""A minimal canned-response MCP server (Streamable HTTP) for the benchmark.

It answers ``initialize``, ``tools/list`` (paged), ``tools/call``,
``resources/list`` (paged) and ``resources/read`` at once, from precomputed
bytes where it can, so the server is never the bottleneck of a client
benchmark. Plain asyncio streams, HTTP/1.1 keep-alive.

MCP replies are framed the way uvicorn frames a Starlette response, because a
reply sent in one write flatters a client (one read, one parse): the head, the
body and the end go out in separate writes. A JSON reply is a head with
``Content-Length`` and then the body; an SSE reply (as sse-starlette streams
it) is a chunked head, one chunk holding the event (``event: message``, an
``id``, the ``data`` line, CRLF line ends) and then the last chunk ``0``.

    python -m bench.canned_server --port N --mode {sse,json} [--tools 5000 --page-size 50]
        [--resources 5000]

Tools: ``echo {text}`` (text block), ``big {size}`` (one text block of
``size`` bytes, cached), ``slow {}`` (never answers; the request is held until
the client goes away or sends ``notifications/cancelled``), ``tool_<i>``
(the listed tools, answered like echo).

Resources (B3, B11): ``--resources N`` listed ones (``bench://res/<i>``, text,
pages of ``--page-size`` as tools are), each read as a short text; and
``bench://blob/<size>``, not listed, read as one blob of ``size`` bytes
(base64, cached).

``GET /stats`` (no MCP headers needed) → JSON ``{"accepts": N, "requests": N,
"cancelled": [ids...], "slow_started": N}``; ``POST /reset`` zeroes them.
GET on the MCP path → 405 (no server-initiated stream); DELETE → 200.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

SESSION_ID = b"canned-session-1"
PROTOCOL = "2025-06-18"


class Stats:
    def __init__(self) -> None:
        self.accepts = 0
        self.requests = 0
        self.cancelled: list[object] = []
        self.slow_started = 0

    def as_json(self) -> bytes:
        return json.dumps(
            {
                "accepts": self.accepts,
                "requests": self.requests,
                "cancelled": self.cancelled,
                "slow_started": self.slow_started,
            }
        ).encode()


class Canned:
    def __init__(self, mode: str, tools: int, page_size: int, resources: int = 0) -> None:
        self.mode = mode
        self.stats = Stats()
        self.page_size = page_size
        schema = {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what to echo"}},
            "required": ["text"],
        }
        listed = [
            {"name": "echo", "description": "Echo the text back.", "inputSchema": schema},
            {
                "name": "big",
                "description": "Return one text block of `size` bytes.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}},
                    "required": ["size"],
                },
            },
            {
                "name": "slow",
                "description": "Never answers until cancelled.",
                "inputSchema": {"type": "object", "properties": {}},
            },
        ]
        for i in range(max(0, tools - len(listed))):
            listed.append(
                {
                    "name": f"tool_{i:05d}",
                    "title": f"Tool number {i}",
                    "description": f"Benchmark tool {i}: does nothing useful, quickly.",
                    "inputSchema": schema,
                }
            )
        self.tools = listed
        self.resources = [
            {
                "uri": f"bench://res/{i:05d}",
                "name": f"res_{i:05d}",
                "title": f"Resource number {i}",
                "description": f"Benchmark resource {i}: a few words of text.",
                "mimeType": "text/plain",
                "size": 32,
            }
            for i in range(resources)
        ]
        self.big_cache: dict[int, bytes] = {}
        self.slow_waiters: dict[object, asyncio.Future[None]] = {}

    # --- bodies --------------------------------------------------------------------

    def result_body(self, msg_id: object, result_json: bytes) -> bytes:
        return (
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(msg_id).encode()
            + b',"result":'
            + result_json
            + b"}"
        )

    def big_result(self, size: int) -> bytes:
        cached = self.big_cache.get(size)
        if cached is None:
            unit = b"The quick brown fox jumps over the lazy dog. 0123456789\n"
            text = (unit * (size // len(unit) + 1))[:size]
            # JSON-escape the newlines (text is ASCII otherwise).
            escaped = text.replace(b"\n", b"\\n")
            cached = b'{"content":[{"type":"text","text":"' + escaped + b'"}],"isError":false}'
            self.big_cache = {size: cached}
        return cached

    def blob_result(self, uri: str, size: int) -> bytes:
        cached = self.big_cache.get(-size)
        if cached is None:
            import base64

            unit = bytes(range(256))
            data = (unit * (size // len(unit) + 1))[:size]
            cached = (
                b'{"contents":[{"uri":'
                + json.dumps(uri).encode()
                + b',"mimeType":"application/octet-stream","blob":"'
                + base64.b64encode(data)
                + b'"}]}'
            )
            self.big_cache = {-size: cached}
        return cached

    def page(self, items: list[dict], key: str, params: dict) -> dict:
        cursor = params.get("cursor")
        start = int(cursor) if cursor else 0
        end = start + self.page_size if self.page_size else len(items)
        result: dict = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = str(end)
        return result

    def answer(self, msg: dict) -> bytes | None:
        """The JSON reply for a request, or None for 'hold' (slow)."""
        method = msg.get("method")
        msg_id = msg.get("id")
        params = msg.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", PROTOCOL),
                "capabilities": {
                    "tools": {"listChanged": False},
                    "resources": {"listChanged": False},
                },
                "serverInfo": {"name": "canned", "version": "1.0"},
            }
            return self.result_body(msg_id, json.dumps(result).encode())
        if method == "tools/list":
            result = self.page(self.tools, "tools", params)
            return self.result_body(msg_id, json.dumps(result).encode())
        if method == "resources/list":
            result = self.page(self.resources, "resources", params)
            return self.result_body(msg_id, json.dumps(result).encode())
        if method == "resources/read":
            uri = str(params.get("uri", ""))
            if uri.startswith("bench://blob/"):
                return self.result_body(msg_id, self.blob_result(uri, int(uri[13:])))
            if not uri.startswith("bench://res/"):
                err = {"code": -32002, "message": "resource not found", "data": {"uri": uri}}
                return (
                    b'{"jsonrpc":"2.0","id":'
                    + json.dumps(msg_id).encode()
                    + b',"error":'
                    + json.dumps(err).encode()
                    + b"}"
                )
            text = {"uri": uri, "mimeType": "text/plain", "text": f"the text of {uri}"}
            return self.result_body(msg_id, json.dumps({"contents": [text]}).encode())
        if method == "tools/call":
            name = params.get("name")
            args = params.get("arguments") or {}
            if name == "big":
                return self.result_body(msg_id, self.big_result(int(args.get("size", 0))))
            if name == "slow":
                return None
            text = args.get("text", "")
            result = {"content": [{"type": "text", "text": text}], "isError": False}
            return self.result_body(msg_id, json.dumps(result).encode())
        if method == "ping":
            return self.result_body(msg_id, b"{}")
        err = {"code": -32601, "message": f"method not found: {method}"}
        return (
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(msg_id).encode()
            + b',"error":'
            + json.dumps(err).encode()
            + b"}"
        )

    # --- HTTP ---------------------------------------------------------------------

    def response(
        self, status: str, body: bytes, content_type: bytes | None, extra: bytes = b""
    ) -> bytes:
        head = (
            b"HTTP/1.1 "
            + status.encode()
            + b"\r\ncontent-length: "
            + str(len(body)).encode()
            + b"\r\n"
        )
        if content_type is not None:
            head += b"content-type: " + content_type + b"\r\n"
        return head + extra + b"\r\n" + body

    def reply(self, json_body: bytes, is_init: bool) -> list[bytes]:
        """An MCP reply as the separate writes a real server makes: head, body, end."""
        extra = b"mcp-session-id: " + SESSION_ID + b"\r\n" if is_init else b""
        if self.mode == "json":
            head = (
                b"HTTP/1.1 200 OK\r\ncontent-length: "
                + str(len(json_body)).encode()
                + b"\r\ncontent-type: application/json\r\n"
                + extra
                + b"\r\n"
            )
            return [head, json_body]
        # SSE: a chunked stream with one event in it, then the last chunk.
        head = (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n"
            b"content-type: text/event-stream\r\ncache-control: no-store\r\n" + extra + b"\r\n"
        )
        prefix = b"event: message\r\nid: 1\r\ndata: "
        suffix = b"\r\n\r\n"
        size = len(prefix) + len(json_body) + len(suffix)
        chunk_head = format(size, "x").encode() + b"\r\n" + prefix
        if len(json_body) > 65536:  # no copy of a large body
            return [head, chunk_head, json_body, suffix + b"\r\n", b"0\r\n\r\n"]
        return [head, chunk_head + json_body + suffix + b"\r\n", b"0\r\n\r\n"]

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.accepts += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.split(b"\r\n")
                method, path, _ = lines[0].split(b" ", 2)
                length = 0
                for line in lines[1:]:
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                self.stats.requests += 1
                if path == b"/stats":
                    writer.write(self.response("200 OK", self.stats.as_json(), b"application/json"))
                    await writer.drain()
                    continue
                if path == b"/reset":
                    self.stats = Stats()
                    writer.write(self.response("200 OK", b"{}", b"application/json"))
                    await writer.drain()
                    continue
                if method == b"GET":
                    writer.write(
                        self.response(
                            "405 Method Not Allowed", b"", None, b"allow: POST, DELETE\r\n"
                        )
                    )
                    await writer.drain()
                    continue
                if method == b"DELETE":
                    writer.write(self.response("200 OK", b"", None))
                    await writer.drain()
                    continue
                msg = json.loads(body)
                if "id" not in msg or "method" not in msg:
                    # A notification (or a response): accepted.
                    if msg.get("method") == "notifications/cancelled":
                        rid = (msg.get("params") or {}).get("requestId")
                        self.stats.cancelled.append(rid)
                        waiter = self.slow_waiters.pop(rid, None)
                        if waiter is not None and not waiter.done():
                            waiter.set_result(None)
                    writer.write(self.response("202 Accepted", b"", None))
                    await writer.drain()
                    continue
                answer = self.answer(msg)
                if answer is None:  # slow: hold until cancelled or the client goes away
                    self.stats.slow_started += 1
                    waiter = asyncio.get_running_loop().create_future()
                    self.slow_waiters[msg["id"]] = waiter
                    gone = asyncio.ensure_future(reader.read(1))
                    await asyncio.wait(
                        [waiter, gone], timeout=60, return_when=asyncio.FIRST_COMPLETED
                    )
                    gone.cancel()
                    if waiter.done() and not gone.done():
                        # Cancelled while the client still listens: end the request as
                        # a real server would (an empty event stream, or a JSON error).
                        if self.mode == "sse":
                            writer.write(self.response("200 OK", b"", b"text/event-stream"))
                        else:
                            err = b'{"code":-32800,"message":"request cancelled"}'
                            body = (
                                b'{"jsonrpc":"2.0","id":'
                                + json.dumps(msg["id"]).encode()
                                + b',"error":'
                                + err
                                + b"}"
                            )
                            writer.write(self.response("200 OK", body, b"application/json"))
                        await writer.drain()
                    return  # close the connection either way
                for part in self.reply(answer, msg.get("method") == "initialize"):
                    # A write each, as a real server's send(): with the transport's
                    # buffer empty, each goes to the socket at once (TCP_NODELAY).
                    writer.write(part)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()


async def serve(port: int, mode: str, tools: int, page_size: int, resources: int = 0) -> None:
    canned = Canned(mode, tools, page_size, resources)
    server = await asyncio.start_server(canned.handle, "127.0.0.1", port, backlog=512)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="canned MCP server for the benchmark")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=("sse", "json"), default="sse")
    parser.add_argument("--tools", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--resources", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.port, args.mode, args.tools, args.page_size, args.resources))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
