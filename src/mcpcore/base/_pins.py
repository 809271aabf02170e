"""Pinned tool definitions (U1): a tool's fingerprint, a change to it, and its error.

This module owns what a pin *is*:

* a definition's canonical JSON (sorted keys, compact separators, UTF-8) and the
  fingerprint, the SHA-256 of that text (:class:`Pin` holds both: the text is
  what a later change's description diff is taken against);
* :class:`PinChanged`, one tool whose listed definition differs from its pin,
  with a word-level diff of the description, escaped and bounded for showing;
* :class:`ToolChanged`, what calling a tool withheld for such a change raises.

Which tools are pinned when, and what a change does, is the pins feature's
(``features/_pins.py``).
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import McpError
from ._escape import escape_text
from ._record import record

__all__ = [
    "Pin",
    "PinChanged",
    "ToolChanged",
    "canonical_json",
    "word_diff",
]

# The most characters of description diff a PinChanged keeps (and a log line shows).
DIFF_LIMIT = 2000


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text: sorted keys, compact separators, no ASCII escaping."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@record(frozen=True, slots=True)
class Pin:
    """A pinned definition: ``fingerprint`` (hex SHA-256 of ``definition``, the
    canonical JSON text). A store keeps both, as strings."""

    fingerprint: str
    definition: str

    @classmethod
    def of_text(cls, definition: str) -> Pin:
        """The pin of a canonical definition text (its fingerprint computed)."""
        import hashlib  # B5: OpenSSL loads at the first listing, not on import

        digest = hashlib.sha256(definition.encode("utf-8", "surrogatepass")).hexdigest()
        return cls(digest, definition)

    def fields(self) -> dict[str, Any]:
        """The definition, parsed (empty when the text is not a JSON object). A
        stored pin's text is whatever the store held: nested past the parser's
        depth, it is no object either (RecursionError, not an error of the listing)."""
        try:
            parsed = json.loads(self.definition)
        except (ValueError, RecursionError):
            return {}
        return parsed if isinstance(parsed, dict) else {}


def word_diff(old: str, new: str, *, limit: int = DIFF_LIMIT) -> str:
    """A word-level diff of two texts, ``[-removed-]`` and ``{+added+}`` around the
    words that differ; control characters escaped (X1), at most ``limit`` characters."""
    import difflib  # B5: loaded when a pinned tool changed, not on import

    before, after = old.split(), new.split()
    parts: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(" ".join(before[a1:a2]))
            continue
        if a2 > a1:
            parts.append("[-" + " ".join(before[a1:a2]) + "-]")
        if b2 > b1:
            parts.append("{+" + " ".join(after[b1:b2]) + "+}")
    text = escape_text(" ".join(parts), keep_newlines=False)
    return text if len(text) <= limit else text[:limit] + "…"


def changed_fields(old: Pin, new: Pin) -> tuple[str, ...]:
    """Which parts of the definition differ between two pins (in the definition's order)."""
    before, after = old.fields(), new.fields()
    names = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
    return tuple(
        name
        for name in names
        if canonical_json(before.get(name)) != canonical_json(after.get(name))
    )


@record(frozen=True, slots=True)
class PinChanged:
    """A pinned tool whose listed definition differs from its pin (U1).

    ``fields`` names the parts that differ; ``description_diff`` is a word diff
    of the description (``[-old-] {+new+}``), control characters escaped and
    bounded: it holds server text, safe to show, never an instruction.
    ``withheld``: the client's ``pins="block"`` keeps the tool out of ``tools``
    and refuses calls until ``accept_change(tool_id)``.
    """

    tool_id: str
    name: str
    pinned: str  # the pinned fingerprint
    listed: str  # the listed definition's fingerprint
    fields: tuple[str, ...]
    description_diff: str
    withheld: bool = False

    def __str__(self) -> str:
        what = ", ".join(self.fields) or "definition"
        return f"tool {self.tool_id!r} changed since it was pinned ({what})"


class ToolChanged(McpError):
    """The tool changed since it was pinned, and the client blocks changed tools
    (``pins="block"``, U1): nothing was sent. ``accept_change(tool_id)`` pins the
    new definition and lets it be called. ``change`` is the :class:`PinChanged`."""

    def __init__(self, change: PinChanged) -> None:
        super().__init__(
            f"{change}: it is withheld until the host accepts the change "
            f"(accept_change({change.tool_id!r}))"
        )
        self.tool_id = change.tool_id
        self.change = change


# The public classes name their public module (in reprs of their type, and pickles).
Pin.__module__ = PinChanged.__module__ = ToolChanged.__module__ = "mcpcore"
