"""The 2026-07-28 ``subscriptions/listen`` stream (M63–M68).

With ``auto_refresh``, a modern server whose tools may change is asked for
list changes on one long-lived request. A result ends it gracefully; a broken
stream is opened again after the backoff, with a fresh listing, since nothing
is replayed (M67); the acknowledgement of a stream that came up restarts the
backoff; closing the client closes the stream (M68).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._backoff import backoff_delay
from ._errors import McpError
from ._requests import Pending, RequestKind, register

if TYPE_CHECKING:
    from ._session import ClientSession

__all__ = ["LISTEN", "Listener"]

LISTEN = register(RequestKind(method="subscriptions/listen", typed_result=False))


class Listener:
    """The one listen stream of a session (see the module docstring)."""

    def __init__(self, session: ClientSession) -> None:
        self._s = session
        self.listen_id: int | None = None
        self._reopen_at: float | None = None
        self._failures = 0

    def next_deadline(self) -> float | None:
        return self._reopen_at

    def handle_timer(self, now: float) -> None:
        if self._reopen_at is not None and now >= self._reopen_at:
            self._reopen_at = None
            if self._s.ready:
                self.open(now, relist=True)

    def acknowledged(self) -> None:
        """M64, M67: the stream is up: the next loss starts the backoff afresh."""
        if self.listen_id is not None:
            self._failures = 0

    def close(self) -> None:
        """M68: closing the client closes the stream."""
        if self.listen_id is not None and self.listen_id in self._s.path.pending:
            self._s.path.dropped.append(self.listen_id)
        self.listen_id = None
        self._reopen_at = None

    def maybe_listen(self, now: float) -> None:
        """M63: with auto_refresh, listen for tool-list changes on a modern server
        that says its list may change."""
        tools = self._s.server_capabilities.get("tools")
        if (
            self._s.modern
            and self._s.options.auto_refresh
            and isinstance(tools, Mapping)
            and tools.get("listChanged") is True
            and self.listen_id is None
        ):
            self.open(now, relist=False)

    def open(self, now: float, *, relist: bool) -> None:
        pending = self._s.path.issue(
            LISTEN,
            {"notifications": {"toolsListChanged": True}},
            now,
            on_done=self._listen_ended,
            on_failed=self._listen_broke,
        )
        self.listen_id = pending.call_id
        if relist:
            self._s.tools.queue_refresh(-1, now)  # M67: nothing is replayed; list again

    def _listen_ended(self, pending: Pending, result: object, now: float) -> None:
        self._listen_lost(now, graceful=True)

    def _listen_broke(self, pending: Pending, error: McpError, now: float) -> None:
        self._listen_lost(now)

    def _listen_lost(self, now: float, *, graceful: bool = False) -> None:
        """M67: a graceful end stops listening; a loss opens the stream again later."""
        self.listen_id = None
        if graceful or not self._s.ready:
            return
        self._failures += 1
        delay = backoff_delay(
            self._failures,
            first=self._s.options.backoff_first,
            maximum=self._s.options.backoff_max,
        )
        self._reopen_at = now + delay
