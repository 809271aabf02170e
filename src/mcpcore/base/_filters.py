"""Tool filters (V4): which of a server's tools a client offers at all.

``include=`` and ``exclude=`` are lists of glob patterns (``*``, ``?``,
``[abc]``, as ``fnmatch`` reads them). A pattern is matched against the tool's
original name, case-insensitively, as tool ids are lowercased (T1); a pattern
that holds the separator is matched against the whole tool id
(``github/search*``), so one list can name tools of several servers. A tool is
offered when it matches some ``include`` pattern (or there is no ``include``)
and matches no ``exclude`` pattern: ``exclude`` wins.

A filtered tool is left out of the catalogue itself, so it is never listed,
registered or callable, and a re-list's diff treats it as absent; a call to it
raises ``UnknownTool`` saying which filter hid it.

Each option may also be a mapping from server name to a list, for a hub: each
client then takes the list under its own name (none: no filter on that side).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

from ._errors import InvalidValue
from ._record import record

__all__ = ["ToolFilter", "tool_filter"]


@record(frozen=True, slots=True)
class ToolFilter:
    """Compiled ``include`` / ``exclude`` patterns (lowercased) and the separator."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    separator: str = "/"

    def _matching(self, patterns: Sequence[str], name: str, tool_id: str) -> str | None:
        lowered_name, lowered_id = name.lower(), tool_id.lower()
        for pattern in patterns:
            subject = lowered_id if self.separator in pattern else lowered_name
            if fnmatch.fnmatchcase(subject, pattern):
                return pattern
        return None

    def hides(self, name: str, tool_id: str) -> str | None:
        """Why the tool ``name`` (id ``tool_id``) is hidden, or ``None`` when it is offered."""
        excluded = self._matching(self.exclude, name, tool_id)
        if excluded is not None:
            return f"the exclude filter {excluded!r} hides it"
        if self.include is not None and self._matching(self.include, name, tool_id) is None:
            shown = ", ".join(repr(p) for p in self.include)
            return f"the include filter [{shown}] does not name it"
        return None


def _patterns(value: object, option: str, server: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        chosen = value.get(server)
        if chosen is None:
            return None
        return _patterns(chosen, f"{option}[{server!r}]", server)
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise InvalidValue(
            f"{option} must be a list of glob patterns (or a mapping of server name to one)",
        )
    patterns: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item or item != item.strip():
            raise InvalidValue(
                f"every {option} pattern must be a non-empty string without edge spaces"
            )
        patterns.append(item.lower())
    return tuple(patterns)


def tool_filter(
    include: object, exclude: object, *, server: str, separator: str = "/"
) -> ToolFilter | None:
    """The filter the ``include`` / ``exclude`` options give the client named ``server``
    (``None``: every tool is offered); ``InvalidValue`` for an option of the wrong shape."""
    included = _patterns(include, "include", server)
    excluded = _patterns(exclude, "exclude", server) or ()
    if included is None and not excluded:
        return None
    return ToolFilter(included, excluded, separator)
