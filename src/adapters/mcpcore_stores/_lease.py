"""The refresh and sign-in leases every store keeps (W3), as arithmetic.

A lease is a row (or key) naming its holder, a random token this store instance
made, and when it ends. Taking one succeeds when there is none or it has ended;
giving it back removes it only while the row still names this holder, so a
holder that outlived its lease never frees the next holder's. The stores read
the wall clock (``time.time()``): several machines share a database, and their
clocks agree far better than a lease is long.
"""

from __future__ import annotations

import json
import math
import secrets
import time

from mcpcore import InvalidValue

__all__ = ["check_lease", "check_timeout", "ends_at", "holder_token", "lock_name", "now"]


def check_lease(lease: float) -> float:
    """``lease`` if it is a usable length in seconds; ``InvalidValue`` if not."""
    if isinstance(lease, bool) or not isinstance(lease, (int, float)):
        raise InvalidValue("lease must be a number of seconds")
    if not math.isfinite(lease) or lease <= 0:
        raise InvalidValue("lease must be a positive number of seconds")
    return float(lease)


def check_timeout(timeout: float) -> float:
    """``timeout`` if it is a usable length in seconds; ``InvalidValue`` if not."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidValue("timeout must be a number of seconds")
    if not math.isfinite(timeout) or timeout <= 0:
        raise InvalidValue("timeout must be a positive number of seconds")
    return float(timeout)


def holder_token() -> str:
    """A fresh holder token: what a lease row names as its holder."""
    return secrets.token_hex(16)


def now() -> float:
    """The wall clock, in epoch seconds."""
    return time.time()


def ends_at(lease: float, at: float | None = None) -> float:
    """When a lease taken ``at`` (now by default) ends."""
    return (now() if at is None else at) + lease


def lock_name(kind: str, *parts: str) -> str:
    """One lease's name: its kind (``tokens``, ``sign_in``) and what it guards,
    written as a JSON list so that no two different keys give one name."""
    return json.dumps([kind, *parts], separators=(",", ":"), ensure_ascii=False)
