"""One mapping from a call's ending event to what its caller gets (K4, K9).

Every driver hands a caller the result of ``call_outcome``: the ``ToolOutput``
to return, or the ``McpError`` to raise (``refresh_outcome`` the same for a
re-list). So a cancelled call ends with the same
error on every driver, and no driver words an outcome of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base._errors import Cancelled, McpError
from ..base._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    RefreshFailed,
    RequestSucceeded,
    ToolsRefreshed,
)

if TYPE_CHECKING:
    from ..base._render import ToolOutput
    from ..base._tools import SyncReport

__all__ = ["CLOSED_REASON", "call_outcome", "closed_outcome", "refresh_outcome"]

CLOSED_REASON = "the client was closed"


def call_outcome(
    event: CallSucceeded | RequestSucceeded | CallFailed | CallCancelled,
    *,
    server: str | None = None,
) -> ToolOutput | Any | McpError:
    """The output to return, or the error to raise, for a call (or another request
    of the host: a listing, a read, a prompt) that ended with ``event``."""
    if isinstance(event, CallSucceeded):
        return event.output
    if isinstance(event, RequestSucceeded):
        return event.value
    if isinstance(event, CallFailed):
        return event.error
    return Cancelled(event.reason, server=server)


def refresh_outcome(event: ToolsRefreshed | RefreshFailed) -> SyncReport | McpError:
    """The report to return, or the error to raise, for a ``refresh()`` that ended with ``event``."""
    if isinstance(event, ToolsRefreshed):
        return event.report
    return event.error


def closed_outcome(*, server: str | None = None) -> McpError:
    """What a call still waiting when its client closed ends with."""
    return Cancelled(CLOSED_REASON, server=server)
