"""A local MCP server over stdio that does not stop when told: for the S3 close tests.

Plain Python, no SDK, so it starts in a blink. It answers ``initialize``,
``tools/list`` and one tool, ``pid`` (its own process id). It appends its pid
to the file named by ``$PIDS_FILE``, one line per process, so a test can check
by pid that nothing of the tree outlives the client.

``--linger``: when its stdin ends it does not exit (a server that does not watch
stdin, like one whose timers keep it alive). ``--ignore-term``: it ignores
SIGTERM too, so only SIGKILL ends it. ``--leave-helper``: before answering anything it starts a
helper process that inherits its stdout and stderr, records its own pid, ignores
SIGTERM and never exits; the server itself exits normally at the end of stdin,
so the helper keeps the pipes open after it. ``--leave-escaped-helper``: the same,
but the helper starts a session of its own, out of reach of signals to the
server's process group (only its pid can stop it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

TOOL = {"name": "pid", "inputSchema": {"type": "object", "properties": {}}}
HELPER = (
    "import os, signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "with open(os.environ['PIDS_FILE'], 'a') as f: f.write(f'{os.getpid()}\\n')\n"
    "while True: time.sleep(0.05)\n"
)


def record_pid() -> None:
    with open(os.environ["PIDS_FILE"], "a") as f:
        f.write(f"{os.getpid()}\n")


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "lingering", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [TOOL]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": str(os.getpid())}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


def main() -> None:
    record_pid()
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--leave-helper" in sys.argv or "--leave-escaped-helper" in sys.argv:
        # Inherits stdout and stderr; its own stdin is closed so it never sees ours.
        escaped = "--leave-escaped-helper" in sys.argv
        subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.DEVNULL, start_new_session=escaped)
    serve()
    if "--linger" in sys.argv:
        while True:
            time.sleep(0.05)


if __name__ == "__main__":
    main()
