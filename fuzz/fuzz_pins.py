"""Fuzz pinned tool definitions (U1; issue 44): fingerprints, canonical JSON, the pin book.

The input builds a server's ``tools/list`` (tool objects with any members and
values: strings with escapes and lone surrogates, deep schemas, NaN-free numbers,
extra keys), or is raw JSON (byte 0 odd), and a pin store's rows (a tool name
with a definition text that may be anything another writer left). Each listing
goes through ``Catalogue.from_listing`` and a ``PinBook`` under ``"warn"`` or
``"block"``; then the same listing with every object's keys in reverse order,
and with one covered field changed.

Invariants:

* nothing raises: not ``pin_of``, ``canonical_json``, ``Pin.fields``,
  ``changed_fields``, ``word_diff``, nor ``PinBook.observe``/``accept``;
* a pin is its definition's SHA-256 (UTF-8, a lone surrogate as
  ``surrogatepass``), its definition is ``canonical_json`` of the tool's covered
  fields and reads back (``json.loads``) to a text that writes the same again;
* key order never changes a pin (every object of the listing reversed);
* a covered field that the catalogue keeps differently gives another pin
  (title, description, annotations, schemas), and equal canonical forms give
  equal pins;
* under ``"block"`` a changed tool is withheld from the visible catalogue until
  accepted; every change's description diff is escaped (no raw ESC) and bounded.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import Reader

from mcpcore.base._pins import DIFF_LIMIT, Pin, canonical_json, changed_fields, word_diff
from mcpcore.base._tools import Catalogue
from mcpcore.features._pins import PinBook, definition_of, pin_of

_NAMES = ("echo", "add", "a", "B", "x.y", "", "bad name", "é")
_STRINGS = ("", "Adds two numbers.", "é\u2028", "\ud800", "\x1b[2J", "a b c", "x" * 300)
_COVERED = ("title", "description", "inputSchema", "outputSchema", "annotations")


def _reversed(value: Any) -> Any:
    """``value`` with every object's keys in reverse order (the same JSON value)."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


def _schema(r: Reader) -> Any:
    kind = r.u8() % 5
    if kind == 0:
        return r.json_value(3)
    props = {
        r.key(): {"type": r.choice(("string", "integer", "object"))} for _ in range(r.u8() % 3)
    }
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if kind == 2:
        schema["required"] = list(props)[:1]
    if kind == 3:
        schema["nested"] = [[[{"deep": r.json_value(2)}]]]
    return schema


def _tool(r: Reader) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": r.choice(_NAMES) if r.u8() % 4 else r.text(8)}
    for _ in range(r.u8() % 6):
        field = r.choice((*_COVERED, "inputSchema", "x-extra", "_meta", "execution"))
        if field in ("inputSchema", "outputSchema"):
            tool[field] = _schema(r)
        elif field == "annotations":
            tool[field] = {r.key(): r.json_value(1) for _ in range(r.u8() % 3)}
        elif field in ("title", "description"):
            tool[field] = r.choice(_STRINGS) if r.flag() else r.text(30)
        else:
            tool[field] = r.json_value(2)
    if r.u8() % 4:
        tool.setdefault("inputSchema", {"type": "object"})
    return tool


def _listing(r: Reader) -> list[Any]:
    if r.data[0] & 1:
        try:
            value = json.loads(r.blob(2048))
        except (ValueError, RecursionError):
            return []
        return value if isinstance(value, list) else [value]
    return [_tool(r) for _ in range(r.u8() % 4)]


def _stored(r: Reader) -> dict[str, Pin]:
    stored: dict[str, Pin] = {}
    for _ in range(r.u8() % 3):
        definition = (
            r.choice(
                ('{"description":"old words"}', "[" * 5000, "not json", "{}", '{"description":7}')
            )
            if r.flag()
            else r.text(40)
        )
        stored[r.choice(_NAMES)] = Pin(r.text(8) if r.flag() else "0" * 64, definition)
    return stored


def _pins(catalogue: Catalogue) -> dict[str, Pin]:
    out = {}
    for tool in catalogue.tools:
        pin = pin_of(tool)
        text = canonical_json(definition_of(tool))
        assert pin.definition == text
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        assert pin.fingerprint == digest
        assert canonical_json(json.loads(text)) == text, "the canonical form is not stable"
        out[tool.name] = pin
    return out


def _check_changes(changes: Any, visible: Catalogue, block: bool) -> None:
    shown = {tool.name for tool in visible.tools}
    for change in changes:
        assert "\x1b" not in change.description_diff
        assert len(change.description_diff) <= DIFF_LIMIT + 1
        assert change.withheld == block
        if block:
            assert change.name not in shown, "a changed tool is visible under block"
        str(change)


def fuzz_one_input(data: bytes) -> None:
    if not data:
        return
    r = Reader(data)
    r.u8()
    block = r.flag()
    policy = "block" if block else "warn"
    listing = _listing(r)
    stored = _stored(r)
    try:
        validate = r.flag()
        catalogue = Catalogue.from_listing("srv", listing, validate_schemas=validate)
        pins = _pins(catalogue)
        again = _pins(Catalogue.from_listing("srv", _reversed(listing), validate_schemas=validate))
        assert again == pins, "key order changed a pin"

        book = PinBook()
        book.load(stored)
        visible, changes = book.observe(catalogue, policy)
        _check_changes(changes, visible, block)
        for pin in stored.values():
            pin.fields()
            for other in pins.values():
                changed_fields(pin, other)

        # One covered field changed in one tool: the pin follows what the catalogue keeps.
        objects = [i for i, t in enumerate(listing) if isinstance(t, dict)]
        if objects:
            index = r.choice(objects)
            target = dict(listing[index])
            field = r.choice(_COVERED)
            target[field] = r.choice(_STRINGS) if field in ("title", "description") else _schema(r)
            changed = list(listing)
            changed[index] = target
            before = {t.name: t for t in catalogue.tools}
            after_catalogue = Catalogue.from_listing("srv", changed, validate_schemas=validate)
            after = _pins(after_catalogue)
            for tool in after_catalogue.tools:
                old = before.get(tool.name)
                if old is None:
                    continue
                same = canonical_json(definition_of(old)) == canonical_json(definition_of(tool))
                assert (pins[tool.name] == after[tool.name]) == same, (
                    "a pin does not follow its fields"
                )
            visible, changes = book.observe(after_catalogue, policy)
            _check_changes(changes, visible, block)
            for change in changes:
                book.accept(change.tool_id)
            assert not [c for c in book.changes if c.tool_id in {x.tool_id for x in changes}]
        word_diff(r.text(40), r.text(40))
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("pins", exc)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
