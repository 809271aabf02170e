"""Worker processes for the stores' contract test (tests/test_stores_contract.py).

Run as ``python store_workers.py JOB ARGS-AS-JSON``: a fresh interpreter
(nothing of the test's store, connection or lock is inherited) that opens its
own store on the same target (``open_store(kind, target, lease)``), prints
``ready``, waits for a line on its stdin (so that all the workers start at
once), does its job and prints its result as one JSON line. Every wait is
bounded (``WAIT``).

Jobs: ``cas`` adds one to a count by compare-and-set; ``lock`` takes and gives
back the refresh lock, and while it holds it a marker file made with
``O_EXCL`` proves no other process holds it too; ``hang`` takes the lock,
prints the wall-clock time and hangs until killed; ``take`` takes
continuations; ``open`` opens the store only once told to go (so that all
the workers open one fresh file at once) and prints what it found.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

from mcpcore import TokenKey, TokenSet

WAIT = 60.0  # seconds any loop here runs at most


def open_store(kind: str, target: str, lease: float = 30.0) -> Any:
    """The store of ``kind`` on ``target`` (a path, a DSN, a URL)."""
    import mcpcore_stores

    cls = {
        "sqlite": "SqliteTokenStore",
        "postgres": "PostgresTokenStore",
        "redis": "RedisTokenStore",
    }[kind]
    return getattr(mcpcore_stores, cls)(target, lease=lease)


def counter_tokens(n: int) -> TokenSet:
    """The token set whose access token is the count ``n`` (what the CAS workers add to)."""
    return TokenSet(
        access_token=str(n),
        refresh_token=f"rt-{n}",
        issuer="https://as.example",
        token_endpoint="https://as.example/token",
        resource="https://mcp.example/mcp",
        client_id="client",
    )


def _go() -> None:
    print("ready", flush=True)
    if not sys.stdin.readline():
        raise SystemExit("the test went away")


def cas(store: Any, server_url: str, updates: int) -> int:
    """Add one to the count ``updates`` times; returns the tries it took."""
    key = TokenKey(server_url=server_url, issuer="https://as.example")
    tries = 0
    deadline = time.monotonic() + WAIT
    for _ in range(updates):
        while True:
            tries += 1
            assert time.monotonic() < deadline, "the compare-and-set workers took too long"
            current = store.get_tokens(server_url)
            assert current is not None
            new = counter_tokens(int(current.access_token) + 1)
            if store.set_tokens(key, new, replaces=current):
                break
            # Lost the race: step back a moment (as a refreshing client waits for the
            # lock), or on two cores the losers' retries starve the winner.
            time.sleep(random.random() * 0.002)
    return tries


def lock(store: Any, server_url: str, seconds: float, marker: str) -> dict[str, int]:
    """Take and give back the lock for ``seconds``; count the times held, and the
    times another holder's marker was found while this one held the lock."""
    held = overlaps = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not store.lock_tokens(server_url):
            time.sleep(0.001)
            continue
        held += 1
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            overlaps += 1
            store.unlock_tokens(server_url)
            continue
        os.close(fd)
        time.sleep(0.002)  # held a moment: another would overlap if it could
        os.unlink(marker)
        store.unlock_tokens(server_url)
    return {"held": held, "overlaps": overlaps}


def hang(store: Any, server_url: str) -> None:
    assert store.lock_tokens(server_url)
    print(json.dumps(time.time()), flush=True)
    time.sleep(WAIT)


def take(store: Any, ids: list[str], subject: str) -> list[str]:
    got = []
    for ident in ids:
        continuation = store.take_continuation(ident, subject=subject)
        if continuation is not None:
            assert continuation.id == ident
            got.append(ident)
    return got


def first_open(store: Any) -> str:
    """``ok``, or the words of the error the store's first use raised."""
    from mcpcore_stores import StoreUnavailable

    try:
        store.get_clients()
    except StoreUnavailable as exc:
        return str(exc)
    return "ok"


def main() -> None:
    job, args = sys.argv[1], json.loads(sys.argv[2])
    store = open_store(args.pop("kind"), args.pop("target"), args.pop("lease", 30.0))
    try:
        if job == "hang":
            hang(store, **args)
            return
        if job == "open":
            _go()
            print(json.dumps(first_open(store)), flush=True)
            return
        store.get_clients()  # connected before the start
        _go()
        result = {"cas": cas, "lock": lock, "take": take}[job](store, **args)
        print(json.dumps(result), flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    main()
