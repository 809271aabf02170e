"""Re-lists served from the last answer while its cache hints allow (E7, F9, M78–M81).

Only when the host opts in (``honour_cache_hints``) and only at 2026-07-28
(M80: a handshake-era server's hints are ignored). A list result (tools,
resources, templates, prompts) with ``ttlMs`` greater than 0 is fresh until
``ttlMs`` after it arrived; a re-list of the same kind while it is fresh is
answered from it, with nothing sent: ``refresh()`` reports the catalogue as it
is, a host's ``list_*`` gets the same ``Listing`` again. TTL is not a timer:
nothing is fetched in the background (M79).

An answer stops being fresh early when the server says that list changed, and
entirely on a new session (a new ``initialize``, a probe again) or when the
client closes. Scope: the cache belongs to one client and is never shared. A
``"private"`` answer (and one without ``cacheScope``, M45) is reused only by a
client whose credentials cannot vary per request: with a ``headers=``
callable, which may give each caller its own token, only ``"public"`` answers
are reused (M78).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..base._events import RequestSucceeded

if TYPE_CHECKING:
    from ..features._port import SessionPort
    from ..wire._requests import Ask, Pending

__all__ = ["ListCache"]

_log = logging.getLogger("mcpcore.session")


class ListCache:
    """One client's fresh list answers, by method (see the module docstring)."""

    def __init__(self, session: SessionPort) -> None:
        self._s = session
        # method -> (fresh until, the value a host received; None for tools/list)
        self._fresh: dict[str, tuple[float, object]] = {}

    def _usable(self) -> bool:
        return self._s.options.honour_cache_hints and self._s.modern

    def listed(self, method: str, ttl_ms: object, scope: object, value: object, now: float) -> None:
        """A complete list answer arrived: keep it while its hints allow."""
        if not self._usable():
            return
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms <= 0:
            self._fresh.pop(method, None)  # ttlMs 0 (or none): refetch when needed
            return
        if scope != "public" and self._s.options.credentials_vary:
            self._fresh.pop(method, None)  # M78: never reused across credentials
            return
        self._fresh[method] = (now + ttl_ms / 1000, value)

    def fresh(self, method: str, now: float) -> bool:
        entry = self._fresh.get(method)
        if entry is None or not self._usable():
            return False
        if now >= entry[0]:
            del self._fresh[method]
            return False
        return True

    def keep(self, pending: Pending, value: object, now: float) -> None:
        """A host's paged request ended: keep its ``Listing`` (it carries the hints)."""
        if pending.kind.pages is not None:
            hints: Any = value
            self.listed(
                pending.kind.method,
                getattr(hints, "ttl_ms", None),
                getattr(hints, "cache_scope", None),
                value,
                now,
            )

    def serve(self, ask: Ask, now: float) -> int | None:
        """The id of a host's request answered from a fresh answer, else None."""
        method = ask.kind.method
        if ask.kind.pages is None or ask.params or not self.fresh(method, now):
            return None
        s = self._s
        s.begin_host_request()
        call_id = s.path.new_id()
        _log.debug("%s %s served from the last answer (ttlMs, E7)", s.tag, method)
        s.events.append(RequestSucceeded(call_id=call_id, value=self._fresh[method][1]))
        return call_id

    def forget(self, method: str | None = None) -> None:
        """The server said the list changed (``method``), or a new session: list again."""
        if method is None:
            self._fresh.clear()
        else:
            self._fresh.pop(method, None)
