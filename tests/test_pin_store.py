"""U1: ``SqlitePinStore``, the embedded pin store: the ``PinStore`` contract, per
server and subject, kept across reopening, and safe across processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from mcpcore import MemoryPinStore, Pin
from mcpcore_stores import SqlitePinStore

ROOT = Path(__file__).resolve().parents[1]


def _pin(text: str) -> Pin:
    return Pin.of_text(text)


def test_U1_sqlite_pin_store_keeps_pins_per_server_and_subject(tmp_path: Path) -> None:
    """U1: get/put/delete per (server, subject, tool name), as the memory store does;
    a new store on the same file reads them; the file is owner-only and in WAL mode."""
    path = tmp_path / "deep" / "pins.sqlite3"
    for store in (SqlitePinStore(path), MemoryPinStore()):
        assert store.get_pins("https://a/mcp", "default") == {}
        store.put_pin("https://a/mcp", "default", "add", _pin('{"n":1}'))
        store.put_pin("https://a/mcp", "alice", "add", _pin('{"n":2}'))
        store.put_pin("https://b/mcp", "default", "add", _pin('{"n":3}'))
        store.put_pin("https://a/mcp", "default", "add", _pin('{"n":4}'))  # replaced
        assert store.get_pins("https://a/mcp", "default") == {"add": _pin('{"n":4}')}
        assert store.get_pins("https://a/mcp", "alice") == {"add": _pin('{"n":2}')}
        store.delete_pin("https://a/mcp", "alice", "add")
        store.delete_pin("https://a/mcp", "alice", "never")
        assert store.get_pins("https://a/mcp", "alice") == {}
    again = SqlitePinStore(path)
    assert again.get_pins("https://b/mcp", "default") == {"add": _pin('{"n":3}')}
    assert path.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


WRITER = """
import sys
from mcpcore import Pin
from mcpcore_stores import SqlitePinStore
store = SqlitePinStore(sys.argv[1])
worker = sys.argv[2]
for n in range(40):
    store.put_pin("https://s/mcp", "default", f"{worker}-{n}", Pin.of_text(str(n)))
    store.put_pin("https://s/mcp", "default", "shared", Pin.of_text(worker))
"""


def test_U1_sqlite_pin_store_is_safe_across_processes(tmp_path: Path) -> None:
    """U1: four processes writing at once lose no pin and never fail on a lock."""
    path = tmp_path / "pins.sqlite3"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'src' / 'adapters'}"}
    workers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}"], env=env)
        for i in range(4)
    ]
    try:
        assert [worker.wait(timeout=60) for worker in workers] == [0, 0, 0, 0]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    pins = SqlitePinStore(path).get_pins("https://s/mcp", "default")
    assert len(pins) == 4 * 40 + 1
    assert pins["shared"] in {Pin.of_text(f"w{i}") for i in range(4)}
