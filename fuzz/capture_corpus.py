"""Capture the seed corpus from real MCP servers: ``python fuzz/capture_corpus.py``.

Runs the official Python SDK server (tests/servers/sdk_server.py, four modes,
one paged) and, when installed in .peers/ (scripts/install_peers.sh), the
TypeScript reference server (@modelcontextprotocol/server-everything). Talks
to each with plain httpcore: POST initialize, notifications/initialized,
tools/list, a few tools/call, ping, and records every raw response body.

Each body is written, in the input format of each harness, to
``fuzz/corpus/<target>/<server>-<step>``:

* ``sse``: SSE bodies (two leading bytes choose unbounded limits, one chunking);
* ``jsonrpc``: every JSON body and every SSE ``data`` payload;
* ``http``: the exchange as a ``fuzz_http`` script (status, content type, chunks);
* ``session``: the conversation as a ``fuzz_session`` script (raw messages);
* ``config``: ``mcp.json`` documents naming the servers (and hand-written ones).

Re-running overwrites the files it produces and leaves others alone.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

import httpcore

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
sys.path.insert(0, str(ROOT / "tests"))

from peers import everything_server, peers_installed, sdk_server  # noqa: E402

ACCEPT = b"application/json, text/event-stream"
CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "sdk": [
        ("echo", {"text": "hello \u00e9 \u2603"}),
        ("add", {"a": 2, "b": 3}),
        ("image", {}),
        ("embedded_blob", {}),
        ("resource_link", {}),
        ("fail", {}),
        ("progress", {"steps": 2}),
        ("nope", {}),
    ],
    "everything": [
        ("echo", {"message": "hello"}),
        ("get-sum", {"a": 1, "b": 2}),
        ("get-tiny-image", {}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-resource-links", {"count": 2}),
        ("nope", {}),
    ],
}


class Exchange:
    def __init__(self, status: int, content_type: str, body: bytes) -> None:
        self.status = status
        self.content_type = content_type
        self.body = body


def capture(url: str, family: str) -> list[tuple[str, Any, Exchange]]:
    """One conversation with the server at ``url``: (step name, message sent, reply)."""
    out: list[tuple[str, Any, Exchange]] = []
    session: str | None = None
    version: str | None = None
    with httpcore.ConnectionPool() as pool:

        def post(name: str, message: dict[str, Any]) -> Exchange:
            nonlocal session
            headers = [(b"accept", ACCEPT), (b"content-type", b"application/json")]
            if session:
                headers.append((b"mcp-session-id", session.encode()))
            if version:
                headers.append((b"mcp-protocol-version", version.encode()))
            response = pool.request(
                "POST", url, headers=headers, content=json.dumps(message).encode(),
                extensions={"timeout": {"read": 20.0}},
            )
            got = dict((k.lower(), v) for k, v in response.headers)
            if b"mcp-session-id" in got:
                session = got[b"mcp-session-id"].decode()
            exchange = Exchange(response.status, got.get(b"content-type", b"").decode(), response.content)
            out.append((name, message, exchange))
            return exchange

        init = post(
            "initialize",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "mcpcore-capture", "version": "0"},
                },
            },
        )
        for message in messages_of(init):
            if isinstance(message.get("result"), dict):
                version = message["result"].get("protocolVersion")
        post("initialized", {"jsonrpc": "2.0", "method": "notifications/initialized"})
        rid = 2
        cursor: str | None = None
        for page in range(20):
            params = {"cursor": cursor} if cursor else {}
            listing = post(f"tools-list-{page}", {"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params})
            rid += 1
            cursor = None
            for message in messages_of(listing):
                if isinstance(message.get("result"), dict):
                    cursor = message["result"].get("nextCursor")
            if not cursor:
                break
        for name, arguments in CALLS[family]:
            post(
                f"call-{name}",
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": rid}},
                },
            )
            rid += 1
        post("ping", {"jsonrpc": "2.0", "id": rid, "method": "ping"})
        post("bad-request", {"jsonrpc": "2.0", "id": rid + 1, "method": "no/such/method"})
    return out


def payloads_of(exchange: Exchange) -> list[bytes]:
    """The JSON texts a reply carries: the whole JSON body, or each SSE data field."""
    if "event-stream" in exchange.content_type:
        out = []
        for block in exchange.body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
            if data and any(data):
                out.append(b"\n".join(data))
        return out
    return [exchange.body] if exchange.body.strip() else []


def messages_of(exchange: Exchange) -> list[dict[str, Any]]:
    out = []
    for payload in payloads_of(exchange):
        try:
            value = json.loads(payload)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# --- the harnesses' input formats ------------------------------------------------------


def blob(data: bytes) -> bytes:
    data = data[:4096]
    return struct.pack("<H", len(data)) + data


def http_reply(exchange: Exchange, session_header: bool) -> bytes:
    statuses = (200, 200, 200, 200, 202, 204, 201, 301, 307, 400, 401, 404, 405, 409, 500, 503, 100, 999)
    status = statuses.index(exchange.status) if exchange.status in statuses else 0
    if "event-stream" in exchange.content_type:
        kind = 0
    elif "json" in exchange.content_type:
        kind = 2
    else:
        kind = 7
    body = exchange.body
    pieces = [body[i : i + 2048] for i in range(0, len(body), 2048)][:7]
    out = bytes([0, status, kind, 1 if session_header else 0])
    if session_header:
        out += b"\x00"
    out += bytes([len(pieces)])
    for piece in pieces:
        out += b"\x01" + struct.pack("<H", len(piece)) + piece
    return out + b"\x00"  # finish: end


def http_script(steps: list[tuple[str, Any, Exchange]]) -> bytes:
    out = bytes([3, 2, 2])  # max_message_size 1 MiB, SSE line limit to match, 2 reconnects
    by_name = {name: exchange for name, _, exchange in steps}
    out += http_reply(by_name["initialize"], True)
    out += bytes([11])  # notifications/initialized
    out += http_reply(by_name["initialized"], False)
    calls = [exchange for name, _, exchange in steps if name.startswith("call-")]
    for number, exchange in enumerate(calls[:3]):
        out += bytes([10, number])  # send tools/call with id number + 2
        out += http_reply(exchange, False)
    return out


def session_script(steps: list[tuple[str, Any, Exchange]]) -> bytes:
    out = bytes([2, 2, 0, 0])  # max_tools 100, max_pages 50, no auto refresh, no extension
    next_id = 1
    for name, _sent, exchange in steps:
        if name == "initialized" or name.startswith("call-") or name in ("ping", "bad-request"):
            continue
        for message in messages_of(exchange):
            if "id" in message and "method" not in message:
                message = {**message, "id": next_id}
            out += bytes([0, 8]) + blob(json.dumps(message).encode())
        next_id += 1
    # Two calls of the first tool, then a server request mid-call and a result.
    out += bytes([12, 1, 0, 1])
    out += bytes([0, 5, 1, 1])  # a server request (sampling) for the client to refuse
    for name, _sent, exchange in steps:
        if name.startswith("call-"):
            for message in messages_of(exchange):
                if "id" in message and "method" not in message:
                    message = {**message, "id": next_id}
                out += bytes([0, 8]) + blob(json.dumps(message).encode())
            break
    return out


def write(target: str, name: str, data: bytes) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def record(server: str, url: str, steps: list[tuple[str, Any, Exchange]]) -> None:
    for name, _sent, exchange in steps:
        if "event-stream" in exchange.content_type and exchange.body:
            write("sse", f"{server}-{name}", b"\x00\x00" + exchange.body)
            write("sse", f"{server}-{name}-crlf-chunked", b"\x00\x53" + exchange.body.replace(b"\n", b"\r\n"))
        for i, payload in enumerate(payloads_of(exchange)):
            write("jsonrpc", f"{server}-{name}-{i}", payload)
    write("http", f"{server}-conversation", http_script(steps))
    write("session", f"{server}-conversation", session_script(steps))
    document = {"mcpServers": {server: {"url": url, "headers": {"Authorization": "Bearer ${env:TOKEN}"}}}}
    write("config", f"{server}-mcp.json", b"\x00" + json.dumps(document, indent=2).encode())


HAND_WRITTEN_CONFIGS = {
    "mixed": {
        "$schema": "https://example.com/mcp.schema.json",
        "mcpServers": {
            "Remote": {"url": "https://${env:HOST}/mcp?k=${env:TOKEN}", "headers": {"X-Key": "${env:TOKEN}"}},
            "remote": {"url": "https://example.com/mcp"},
            "local": {"command": "./bin/server", "args": ["--data", "${PLUGIN_DATA}"], "env": {"K": "${env:TOKEN}"}, "cwd": "${PLUGIN_ROOT}/x"},
            "legacy": {"type": "sse", "url": "https://example.com/sse"},
            "both": {"url": "https://example.com/mcp", "command": "x"},
            "bad header": {"url": "https://example.com/mcp", "headers": {"Accept": "x", "bad name": "v"}},
            "unset": {"url": "https://example.com/${env:UNSET}"},
        },
    },
}


def main() -> None:
    for mode in ("stateful-sse", "stateful-json", "stateless-sse", "stateless-json"):
        with sdk_server(mode=mode, page_size=3 if mode == "stateful-sse" else None) as peer:
            steps = capture(peer.url, "sdk")
        record(f"sdk-{mode}", peer.url, steps)
        print(f"sdk {mode}: {len(steps)} exchanges")
    if peers_installed():
        with everything_server() as peer:
            steps = capture(peer.url, "everything")
        record("everything", peer.url, steps)
        print(f"everything: {len(steps)} exchanges")
    else:
        print("TypeScript reference server not installed (scripts/install_peers.sh); skipped")
    for name, document in HAND_WRITTEN_CONFIGS.items():
        for flags in (0, 15):
            write("config", f"hand-{name}-{flags}", bytes([flags]) + json.dumps(document).encode())


if __name__ == "__main__":
    main()
