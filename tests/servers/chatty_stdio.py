"""A local MCP server over stdio that talks a lot: for the stdio stress tests.

Plain Python, no SDK, so what it writes is exactly known. One tool, ``size``:
before answering it writes ``notes`` log notifications to stdout (thousands,
far more than a pipe buffer holds), then answers with the length of the
``blob`` argument it received. It reads one request at a time, so while it
writes its notes it reads nothing: a client that writes a large request to its
stdin while holding up the reading of its stdout would block for good.
"""

from __future__ import annotations

import json
import sys

TOOL = {
    "name": "size",
    "inputSchema": {"type": "object", "properties": {"blob": {"type": "string"}, "notes": {"type": "integer"}}},
}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "not JSON"}})
            sys.stdout.flush()
            continue
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "chatty", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            arguments = message["params"].get("arguments") or {}
            for i in range(int(arguments.get("notes", 0))):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "debug", "data": f"note {i} " + "x" * 100}})
            text = str(len(arguments.get("blob", "")))
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
            sys.stdout.flush()
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
        sys.stdout.flush()


if __name__ == "__main__":
    main()
