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

from mcpcore import DEFAULT_SUBJECT, InvalidValue

__all__ = [
    "LeaseLocks",
    "check_lease",
    "check_timeout",
    "ends_at",
    "holder_token",
    "lock_name",
    "now",
]


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


class LeaseLocks:
    """The refresh and sign-in locks of a store, written once over its own lease
    primitives: ``_take(name)`` (take the lease named ``name`` without waiting) and
    ``_give(name)`` (give it back if this instance still holds it)."""

    def _take(self, name: str) -> bool:
        raise NotImplementedError

    def _give(self, name: str) -> None:
        raise NotImplementedError

    def lock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        """Take the refresh lease for (``server_url``, ``subject``) without waiting: False
        while another holder's lease runs (W3)."""
        return self._take(lock_name("tokens", subject, server_url))

    def unlock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> None:
        """Give the refresh lease back, if this store still holds it."""
        self._give(lock_name("tokens", subject, server_url))

    def lock_sign_in(self, issuer: str) -> bool:
        """Take the sign-in lease for ``issuer`` without waiting (R4)."""
        return self._take(lock_name("sign_in", issuer))

    def unlock_sign_in(self, issuer: str) -> None:
        """Give the sign-in lease back, if this store still holds it."""
        self._give(lock_name("sign_in", issuer))
