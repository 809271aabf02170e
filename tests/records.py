"""Read-modify-write of a JSON record file shared by test processes.

The interop probes record what held into ``build/*.json``; with the suite run
by several workers (pytest-xdist), two of them may update the same file at
once. An exclusive ``flock`` on a lock file beside it makes each update whole.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def update_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to the JSON object at ``path`` (``{}`` when absent), under a lock."""
    path.parent.mkdir(exist_ok=True)
    with open(path.with_suffix(path.suffix + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        change(data)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
