"""The pins feature (U1): which tools are pinned when, and what a change does.

A client's :class:`PinBook` holds the pins of its server for one subject, in
memory: what the host's ``PinStore`` held when the client started, and every
pin since. Each listing goes through :meth:`PinBook.observe`:

* a tool without a pin is pinned (first use: the first listing it is in);
* a tool listed as pinned is as it should be (a change seen before is over);
* a tool whose definition differs from its pin is a change: logged (escaped,
  bounded) and reported once as a ``PinChanged`` in the sync report; with
  ``pins="block"`` it is withheld (left out of the catalogue the host sees,
  registers and calls) until :meth:`PinBook.accept` pins the new definition.

A tool that leaves the listing keeps its pin: when it comes back, it is
compared with that pin like any other (changed when its definition differs).
Under ``"warn"`` the pin is not moved either: the change is reported once, and
again after the tool left and came back, until the host accepts it.

The book never calls the store: each new pin is queued as a :class:`PinWrite`
that the driver takes (``take_writes``) and performs off its lock and off the
event loop (D2), as it does a token store's methods. A store that fails costs
persistence only: the pin holds in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..base._escape import excerpt
from ..base._pins import DIFF_LIMIT, Pin, PinChanged, canonical_json, changed_fields, word_diff
from ..base._record import record
from ..base._tools import Catalogue

if TYPE_CHECKING:
    from ..base._tools import Tool

__all__ = [
    "DEFAULT_SUBJECT",
    "MemoryPinStore",
    "PinBook",
    "PinStore",
    "PinWrite",
    "definition_of",
    "pin_of",
    "read_pins",
]

_log = logging.getLogger("mcpcore.pins")

# The subject of a host that names none (one user): mcpcore.DEFAULT_SUBJECT's value
# (a test checks they agree; importing it here would load the OAuth types, B5).
DEFAULT_SUBJECT = "default"

PinPolicy = Literal["warn", "block"]


class PinStore(Protocol):
    """Where pins outlive a client (U1): per server, per subject, per tool name.

    Methods are plain functions in every driver (an async driver runs them on a
    worker thread): ``get_pins`` when a client starts, ``put_pin`` for each new
    or accepted pin, ``delete_pin`` to forget one (the CLI, a host's own reset).
    ``server`` is the server's URL (``local:<name>`` for a local server).
    """

    def get_pins(self, server: str, subject: str) -> Mapping[str, Pin]: ...

    def put_pin(self, server: str, subject: str, name: str, pin: Pin) -> None: ...

    def delete_pin(self, server: str, subject: str, name: str) -> None: ...


class MemoryPinStore:
    """The default ``PinStore``: pins in this process's memory, gone when it exits."""

    def __init__(self) -> None:
        self._pins: dict[tuple[str, str], dict[str, Pin]] = {}

    def get_pins(self, server: str, subject: str) -> Mapping[str, Pin]:
        return dict(self._pins.get((server, subject), {}))

    def put_pin(self, server: str, subject: str, name: str, pin: Pin) -> None:
        self._pins.setdefault((server, subject), {})[name] = pin

    def delete_pin(self, server: str, subject: str, name: str) -> None:
        self._pins.get((server, subject), {}).pop(name, None)

    def __repr__(self) -> str:
        return f"MemoryPinStore({sum(map(len, self._pins.values()))} pins)"


@record(frozen=True, slots=True)
class PinWrite:
    """One pin for the driver to put into the store (``pin`` None: delete it)."""

    name: str
    pin: Pin | None

    def apply(self, store: PinStore, server: str, subject: str) -> None:
        """Perform it on ``store`` (blocking: off the driver's lock and event loop)."""
        try:
            if self.pin is None:
                store.delete_pin(server, subject, self.name)
            else:
                store.put_pin(server, subject, self.name, self.pin)
        except Exception as exc:
            # The pin holds in memory; a store's text may hold anything (A4).
            _log.warning("the pin store could not keep a pin: %s", type(exc).__name__)


def read_pins(store: PinStore, server: str, subject: str) -> dict[str, Pin]:
    """What ``store`` holds for ``server`` and ``subject`` (blocking: run it off the
    loop). A store that raises, or answers something else, counts as empty (logged)."""
    try:
        held = store.get_pins(server, subject)
        pins = {
            name: pin
            for name, pin in held.items()
            if isinstance(name, str) and isinstance(pin, Pin)
        }
    except Exception as exc:
        _log.warning("the pin store could not be read: %s", type(exc).__name__)
        return {}
    return pins


def definition_of(tool: Tool) -> dict[str, Any]:
    """The parts of ``tool`` a pin covers, under their MCP names, as the catalogue
    kept them (a description left out is the title, else the name: T3)."""
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.parameters,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations,
    }


def pin_of(tool: Tool) -> Pin:
    """``tool``'s pin: the SHA-256 of its definition's canonical JSON."""
    return Pin.of_text(canonical_json(definition_of(tool)))


class PinBook:
    """One client's pins (see the module docstring). No I/O.

    Without a store of the host's (``load`` never called), the book is the only
    place a pin lives, and a pin taken on a tool's first listing is worked out
    when it is first needed instead: at the next listing that names the tool, on
    ``accept``, or when ``pins`` is read. A first listing of 5,003 tools then
    fingerprints none of them on the way to ready (B3, B12); a later listing
    does the work that one skipped. With a store, each new pin is worked out at
    once, since the store keeps it."""

    __slots__ = ("_listed", "_pending", "_pins", "_stored", "_unhashed", "_writes")

    def __init__(self) -> None:
        self._pins: dict[str, Pin] = {}  # tool name -> its pin
        self._unhashed: dict[str, Tool] = {}  # name -> its pinned definition, not hashed yet
        self._pending: dict[str, PinChanged] = {}  # name -> a change not accepted
        self._listed: dict[str, Tool] = {}  # name -> its last listed definition
        self._writes: list[PinWrite] = []
        self._stored = False  # a store of the host's keeps the pins: queue the writes

    @property
    def pins(self) -> dict[str, Pin]:
        """Every pin, by tool name (those taken without a store are worked out now)."""
        for name in list(self._unhashed):
            self._pinned(name)
        return self._pins

    def load(self, stored: Mapping[str, Pin]) -> None:
        """Seed the book with what the host's store held (before the first listing;
        a pin made meanwhile yields to the stored one, which is older). From now on
        each new pin is queued for the store."""
        self._stored = True
        for name in list(self._unhashed):
            self._pinned(name)
            self._writes.append(PinWrite(name, self._pins[name]))
        self._pins.update(stored)

    def _pinned(self, name: str) -> Pin | None:
        """The pin of tool ``name``, worked out now when it was put off."""
        first = self._unhashed.pop(name, None)
        if first is not None:
            self._pins[name] = pin_of(first)
        return self._pins.get(name)

    def observe(
        self, catalogue: Catalogue, policy: PinPolicy
    ) -> tuple[Catalogue, tuple[PinChanged, ...]]:
        """One listing's catalogue → the catalogue the host sees, and the changes
        this listing shows first (see the module docstring)."""
        listed: dict[str, Tool] = {}
        pending: dict[str, PinChanged] = {}
        fresh: list[PinChanged] = []
        block = policy == "block"
        pins, unhashed = self._pins, self._unhashed
        for tool in catalogue.tools:
            name = tool.name
            listed[name] = tool
            pinned = pins.get(name)
            if pinned is None and name in unhashed:
                pinned = self._pinned(name)
            if pinned is None:
                if self._stored:
                    pin = pin_of(tool)
                    pins[name] = pin
                    self._writes.append(PinWrite(name, pin))
                else:
                    unhashed[name] = tool
                continue
            pin = pin_of(tool)
            if pinned.fingerprint == pin.fingerprint:
                continue
            seen = self._pending.get(name)
            if seen is not None and seen.listed == pin.fingerprint and seen.withheld == block:
                pending[name] = seen
                continue
            change = _change(tool, pinned, pin, withheld=block)
            pending[name] = change
            fresh.append(change)
            _warn(catalogue.server, change)
        self._pending = pending
        self._listed = listed
        return self.visible(catalogue), tuple(fresh)

    def visible(self, catalogue: Catalogue) -> Catalogue:
        """``catalogue`` without the tools withheld now."""
        withheld = {name for name, change in self._pending.items() if change.withheld}
        if not withheld:
            return catalogue
        return Catalogue(
            catalogue.server,
            [tool for tool in catalogue.tools if tool.name not in withheld],
            separator=catalogue.separator,
            filtered=catalogue.filtered,
        )

    @property
    def changes(self) -> tuple[PinChanged, ...]:
        """The changes seen in the last listing and not accepted, by tool id."""
        return tuple(sorted(self._pending.values(), key=lambda change: change.tool_id))

    def withheld(self, tool_id: str) -> PinChanged | None:
        """The change that withholds the tool ``tool_id`` now, if one does."""
        for change in self._pending.values():
            if change.tool_id == tool_id and change.withheld:
                return change
        return None

    def accept(self, tool_id: str) -> PinChanged | None:
        """Pin the listed definition of the changed tool ``tool_id``: the change it
        ends, or None when that tool has no change waiting."""
        for name, change in self._pending.items():
            if change.tool_id == tool_id:
                pin = pin_of(self._listed[name])
                self._pins[name] = pin
                if self._stored:
                    self._writes.append(PinWrite(name, pin))
                del self._pending[name]
                return change
        return None

    def take_writes(self) -> list[PinWrite]:
        """The pins to store since the last call (the driver performs them in order)."""
        writes, self._writes = self._writes, []
        return writes


def _change(tool: Tool, pinned: Pin, listed: Pin, *, withheld: bool) -> PinChanged:
    old = pinned.fields().get("description")
    return PinChanged(
        tool_id=tool.id,
        name=tool.name,
        pinned=pinned.fingerprint,
        listed=listed.fingerprint,
        fields=changed_fields(pinned, listed),
        description_diff=word_diff(old if isinstance(old, str) else "", tool.description),
        withheld=withheld,
    )


def _warn(server: str, change: PinChanged) -> None:
    _log.warning(
        "server %s: tool %s changed since it was pinned (%s)%s; description: %s",
        excerpt(server, 60),
        excerpt(change.tool_id, 200),
        ", ".join(change.fields) or "definition",
        ": withheld until the host accepts the change" if change.withheld else "",
        excerpt(change.description_diff, DIFF_LIMIT),
    )
