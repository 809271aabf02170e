"""What a list request of the host returns: every item of every page, with the
2026-07-28 cache hints (F9).

A ``Listing`` is a read-only sequence of the typed items (resources,
templates, prompts) with ``ttl_ms`` and ``cache_scope`` as the server sent
them on the last page (``None`` when absent or malformed, and always in the
handshake era). Items the server sent malformed are dropped with a warning,
so one bad entry never hides the rest; ``dropped`` counts them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from ..base._escape import excerpt
from ..base._record import record

__all__ = ["Listing", "cache_hints", "read_items"]

_T = TypeVar("_T")
_log = logging.getLogger("mcpcore.session")


@record(frozen=True, slots=True)
class Listing(Sequence[_T], Generic[_T]):
    """Every item the server listed, in order, and its cache hints (F9)."""

    items: tuple[_T, ...]
    ttl_ms: int | None = None
    cache_scope: str | None = None
    dropped: int = 0

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[_T]: ...
    def __getitem__(self, index: int | slice) -> _T | Sequence[_T]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[_T]:
        return iter(self.items)

    def __repr__(self) -> str:
        return f"Listing({len(self.items)} items, ttl_ms={self.ttl_ms}, cache_scope={self.cache_scope!r})"


def cache_hints(result: dict[str, Any]) -> tuple[int | None, str | None]:
    """``ttlMs`` (a non-negative integer) and ``cacheScope`` (a string), else ``None``."""
    ttl = result.get("ttlMs")
    scope = result.get("cacheScope")
    return (
        ttl if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0 else None,
        excerpt(scope, 40) if isinstance(scope, str) else None,
    )


def read_items(
    result: dict[str, Any],
    key: str,
    read: Callable[[dict[str, Any]], _T | None],
    what: str,
    server: str,
) -> Listing[_T]:
    """The items of a listing result, each through ``read`` (``None``: malformed)."""
    items: list[_T] = []
    dropped = 0
    for raw in result.get(key) or ():
        item = read(raw) if isinstance(raw, dict) else None
        if item is None:
            dropped += 1
        else:
            items.append(item)
    if dropped:
        _log.warning("server %r: dropped %d malformed %s of the listing", server, dropped, what)
    ttl, scope = cache_hints(result)
    return Listing(tuple(items), ttl, scope, dropped)


def text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None
