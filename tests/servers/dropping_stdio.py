"""A local MCP server over stdio that drops a call: for U3's stdio tests.

Plain Python, no SDK. It answers the handshake and lists one tool, ``echo``;
then, by its one argument:

- ``drop``: it reads a ``tools/call`` line whole and exits without answering
  (the call was written whole: it may have run);
- ``deaf MARKER``: it closes its stdin before it answers ``tools/list`` and
  exits right after, leaving the file ``MARKER``: nothing written to it later
  can reach it (the write fails with a broken pipe). A child started while
  ``MARKER`` exists (the client's next one) closes its stdin and exits at
  once. So no call ever reaches a server.
"""

from __future__ import annotations

import json
import os
import sys

TOOL = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(mode: str, marker: str | None = None) -> None:
    if marker is not None and os.path.exists(marker):
        os.close(0)
        os._exit(1)
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "dropping", "version": "1"},
            }})
        elif method == "tools/list":
            if mode == "deaf":
                os.close(0)  # before the answer: the client writes nothing more that we read
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
                if marker is not None:
                    open(marker, "w").close()
                os._exit(0)
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
        elif method == "tools/call":
            sys.stderr.write(f"dropped call {rid}\n")
            sys.stderr.flush()
            os._exit(0)  # read whole, never answered
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


if __name__ == "__main__":
    main(*sys.argv[1:])
