"""Putting a server's tools into a host's tool registry, and keeping it up to date.

A registry is any ``MutableMapping[str, object]`` the host owns. Each driver
makes the registration objects (they are callable through its client); the
rules for mirroring a re-listed catalogue into a live registry are here, so
both drivers follow them exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping

from ..base._escape import escape_text
from ..base._record import record
from ..base._tools import Catalogue, SyncReport, Tool

__all__ = ["RegistrationContract", "register_catalogue", "sync_registry"]

_log = logging.getLogger("mcpcore.registry")


@record(frozen=True, slots=True)
class RegistrationContract:
    """What a registration promises its host: the tool's contract and call settings."""

    tool: Tool
    timeout: float
    policy: str

    def same_as(self, other: RegistrationContract) -> bool:
        return (
            self.tool.same_contract(other.tool)
            and self.timeout == other.timeout
            and self.policy == other.policy
        )


def register_catalogue(
    registry: MutableMapping[str, object],
    catalogue: Catalogue,
    make: Callable[[Tool], object],
    baseline: dict[str, object],
) -> None:
    """Put one registration per tool id into ``registry`` and remember it in ``baseline``."""
    for tool in catalogue.tools:
        registration = make(tool)
        registry[tool.id] = registration
        baseline[tool.id] = registration


def sync_registry(
    registry: MutableMapping[str, object],
    catalogue: Catalogue,
    baseline: dict[str, object],
    *,
    make: Callable[[Tool], object],
    contract_of: Callable[[object], RegistrationContract],
    wanted: Callable[[Tool], RegistrationContract],
) -> SyncReport:
    """Mirror ``catalogue`` into ``registry`` against this client's ``baseline``.

    New ids are added, changed ones replaced, dropped ones removed, but only
    while the registry still holds this client's registration under that id; a
    foreign entry that took an id is left alone with a warning. The diff is
    taken against the registration baseline, not the last listing, so a refresh
    in between loses nothing.
    """
    added: list[str] = []
    removed: list[str] = []
    changed: list[str] = []
    untouched: list[str] = []
    new_ids = {tool.id for tool in catalogue.tools}

    def ours(tool_id: str) -> bool:
        current = registry.get(tool_id)
        return current is not None and current is baseline.get(tool_id)

    for tool_id in sorted(set(baseline) - new_ids):
        removed.append(tool_id)
        if ours(tool_id):
            del registry[tool_id]
        else:
            _foreign(tool_id, "remove")
        del baseline[tool_id]

    for tool in catalogue.tools:
        old = baseline.get(tool.id)
        if old is None:
            added.append(tool.id)
            if tool.id in registry:
                _foreign(tool.id, "add")
                continue
        elif contract_of(old).same_as(wanted(tool)):
            untouched.append(tool.id)
            continue
        else:
            changed.append(tool.id)
            if not ours(tool.id):
                _foreign(tool.id, "replace")
                del baseline[tool.id]
                continue
        registration = make(tool)
        registry[tool.id] = registration
        baseline[tool.id] = registration

    return SyncReport(
        added=tuple(sorted(added)),
        removed=tuple(sorted(removed)),
        changed=tuple(sorted(changed)),
        untouched=tuple(sorted(untouched)),
    )


def _foreign(tool_id: str, what: str) -> None:
    _log.warning(
        "did not %s %s: the registry holds another owner's entry under that id",
        what,
        escape_text(repr(tool_id)),
    )
