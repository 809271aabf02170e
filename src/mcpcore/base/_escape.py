"""Making untrusted text safe to show (X1): control characters become visible escapes."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["escape_text", "excerpt", "json_type_name", "shown_key"]

# C0 controls (except tab and newline when allowed), DEL, C1 controls, and the
# Unicode bidi/format controls that can reorder or hide text on a terminal, and
# lone surrogates (a JSON "\\ud800" escape decodes to one): no UTF-8 stream can
# write them, so a log handler or a terminal would fail on the text.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_CONTROL_NO_NEWLINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def escape_text(text: str, *, keep_newlines: bool = True) -> str:
    """Return ``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``.

    Tabs are kept; newlines are kept unless ``keep_newlines`` is false.
    """
    pattern = _CONTROL if keep_newlines else _CONTROL_NO_NEWLINE
    return pattern.sub(_show, text)


def excerpt(data: bytes | str, limit: int = 200) -> str:
    """A short, single-line, escaped excerpt of a (possibly binary) server body."""
    text = data[: limit * 4].decode("utf-8", "replace") if isinstance(data, bytes) else data
    cut = len(text) > limit
    shown = escape_text(text[:limit], keep_newlines=False).replace("\t", "\\t")
    return shown + ("…" if cut else "")


def json_type_name(value: object) -> str:
    """What kind of JSON value ``value`` is, for a message (never the value)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def shown_key(key: str) -> str:
    """A key for a message: ``repr`` (escapes controls), cut when very long."""
    return repr(key if len(key) <= 80 else key[:80] + "…")
