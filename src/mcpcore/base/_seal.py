"""Seals (U2): an HMAC-SHA256 over the canonical JSON form of what a host keeps.

A continuation or a task handle is written as JSON for a host to keep
anywhere; a sealed one carries, beside its fields, ``"seal"``: the hex
HMAC-SHA256 of its *canonical form* under the host's key: the JSON object
without its seal in the one canonical form the library has (``_pins``'s
``canonical_json``, which pins fingerprint too: keys sorted, compact
separators, non-ASCII characters as themselves), as UTF-8 (``canonical_bytes``).
Reading a sealed text parses it, takes the seal out, writes the rest in the
canonical form again and compares (``hmac.compare_digest``): so whitespace
between the tokens, or another key order, changes nothing; any change to a
value, a key, or the seal is refused.

Keys are given by the host (bytes, or text taken as UTF-8), never made here
(the core draws nothing random). Reading accepts a sequence of keys, the new
one first and the old ones after, so that keys can be rotated; writing uses the
first. No key is ever put in a message, a repr or a log.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Any, Union

from ._errors import InvalidValue, SealBroken
from ._pins import canonical_json

__all__ = ["SEAL_FIELD", "SealKeys", "canonical_bytes", "check_seal", "seal_keys", "seal_of"]

#: The field of a sealed text that holds its seal.
SEAL_FIELD = "seal"

#: What ``key=`` takes: one key, or several (the one to write with first).
SealKeys = Union[bytes, str, Sequence[Union[bytes, str]]]


def canonical_bytes(value: Mapping[str, Any]) -> bytes:
    """A JSON object in the canonical form (``_pins.canonical_json``), as UTF-8."""
    return canonical_json(value).encode("utf-8")


def seal_keys(key: object) -> tuple[bytes, ...]:
    """``key`` (one key, or a sequence of them, newest first) as a tuple of bytes.

    ``InvalidValue`` for an empty key, no key at all, or something that is not a
    key; the message names the kind of mistake, never a key.
    """
    if isinstance(key, (bytes, bytearray, str)):
        keys: list[object] = [key]
    elif isinstance(key, Sequence):
        keys = list(key)
    else:
        raise InvalidValue(
            f"a seal key is bytes or text, or a sequence of them; got {type(key).__name__}"
        )
    if not keys:
        raise InvalidValue("no seal key was given (an empty sequence)")
    out: list[bytes] = []
    for one in keys:
        if isinstance(one, str):
            one = one.encode("utf-8")
        if not isinstance(one, (bytes, bytearray)):
            raise InvalidValue(f"a seal key is bytes or text, not {type(one).__name__}")
        if not one:
            raise InvalidValue("a seal key is empty")
        out.append(bytes(one))
    return tuple(out)


def seal_of(body: Mapping[str, Any], key: bytes) -> str:
    """The seal of ``body`` (its fields without a seal) under ``key``: hex HMAC-SHA256."""
    return hmac.new(key, canonical_bytes(body), hashlib.sha256).hexdigest()


def check_seal(body: Mapping[str, Any], seal: object, keys: Sequence[bytes], what: str) -> None:
    """Raise ``SealBroken`` unless ``seal`` is the seal of ``body`` under one of ``keys``.

    Every key is tried (no early return on the first mismatch that would tell
    which one failed); the comparison is ``hmac.compare_digest``.
    """
    if not isinstance(seal, str) or not seal:
        raise SealBroken(what, missing=True)
    given = seal.encode("ascii", "replace")
    matched = False
    try:
        for key in keys:
            matched |= hmac.compare_digest(seal_of(body, key).encode("ascii"), given)
    except (TypeError, ValueError, RecursionError):  # not writable as JSON: not ours
        matched = False
    if not matched:
        raise SealBroken(what)
