"""Which waiter or host callback each engine event is for: decided once, for every driver.

``route(event, server=...)`` names what a driver does with an event the engine
emitted: wake the caller of a call (``WakeCall``, with what it returns or
raises), wake a ``refresh()`` (``WakeRefresh``), wake whoever waits for the
client's state (``StateChange``), or call one of the host's callbacks
(``HostCallback``: which option, with which arguments). A driver runs what it is
told with its own waking primitive (an event, a lock) and decides nothing.

``call_host`` is the one rule for running a host's callback: what it raises is
logged, never the driver's failure; what it returns is handed back when it is
awaitable (the async driver awaits it in a task of its own, the blocking one
ignores it: a callback there is a plain function).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Union

from ..base._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    ElicitationCompleted,
    LogMessage,
    ProgressReceived,
    PromptsListChanged,
    RefreshFailed,
    RequestSucceeded,
    ResourcesListChanged,
    ResourceUpdated,
    SessionReady,
    StartFailed,
    ToolsListChanged,
    ToolsRefreshed,
)
from ..base._record import record
from ._outcome import call_outcome, refresh_outcome

if TYPE_CHECKING:
    import logging

    from ..base._errors import McpError
    from ..base._events import Event
    from ..base._tools import SyncReport

__all__ = [
    "HostCallback",
    "Route",
    "StateChange",
    "WakeCall",
    "WakeRefresh",
    "call_host",
    "route",
]

HostOption = Literal[
    "on_log", "on_resource_updated", "on_list_changed", "on_elicitation_complete", "on_progress"
]


@record(frozen=True, slots=True)
class WakeCall:
    """The call (or other request of the host) ``call_id`` ended: its caller returns
    ``outcome``, or raises it when it is an ``McpError`` (K4, K9)."""

    call_id: int
    outcome: Any


@record(frozen=True, slots=True)
class WakeRefresh:
    """The ``refresh()`` ``refresh_id`` ended with ``outcome`` (a report, or the error to raise)."""

    refresh_id: int
    outcome: SyncReport | McpError


@record(frozen=True, slots=True)
class StateChange:
    """A session was set up, or a start-up attempt failed (``failure``, for the log):
    whoever waits in ``ready()`` looks again (L3, L5)."""

    failure: McpError | None = None


@record(frozen=True, slots=True)
class HostCallback:
    """Call the host's ``option`` callback with ``args`` (F2, F5, F8, Q2). For
    ``on_progress`` the callback is the caller's own, given with the call ``call_id``."""

    option: HostOption
    args: tuple[object, ...]
    call_id: int | None = None


Route = Union[WakeCall, WakeRefresh, StateChange, HostCallback]

_ENDINGS = (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)
_LIST_CHANGES = (ToolsListChanged, ResourcesListChanged, PromptsListChanged)


def route(event: Event, *, server: str) -> Route | None:
    """What ``event`` means to the driver of the client of ``server`` (None: nothing)."""
    if isinstance(event, _ENDINGS):
        return WakeCall(event.call_id, call_outcome(event, server=server))
    if isinstance(event, ProgressReceived):
        args = (event.progress, event.total, event.message)
        return HostCallback("on_progress", args, call_id=event.call_id)
    if isinstance(event, LogMessage):
        return HostCallback("on_log", (event,))
    if isinstance(event, ResourceUpdated):
        return HostCallback("on_resource_updated", (event,))
    if isinstance(event, _LIST_CHANGES):
        return HostCallback("on_list_changed", (server, event.what))
    if isinstance(event, ElicitationCompleted):
        return HostCallback("on_elicitation_complete", (event.server, event.elicitation_id))
    if isinstance(event, (ToolsRefreshed, RefreshFailed)):
        if event.refresh_id is None:  # the engine's own re-list (a list_changed)
            return None
        return WakeRefresh(event.refresh_id, refresh_outcome(event))
    if isinstance(event, StartFailed):
        return StateChange(event.error)
    if isinstance(event, SessionReady):
        return StateChange()
    return None


def call_host(
    callback: Callable[..., object], call: HostCallback, log: logging.Logger
) -> Awaitable[object] | None:
    """Call a host's callback as ``call`` says; what it raises is logged on ``log``.

    Returns what it returned when that is awaitable (a coroutine function's
    coroutine), for the driver to await in a task of its own; else None.
    """
    try:
        result = callback(*call.args)
    except Exception:
        log.exception("%s callback failed", call.option)
        return None
    return result if isinstance(result, Awaitable) else None
