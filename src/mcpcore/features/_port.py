"""What a feature sees of the session: the words it is read in.

The session's lifecycle states (``SessionState``; the table that moves them,
``TRANSITIONS``, is the session's own), everything configurable about a
session (``SessionOptions``), how a caller's time limit is checked
(``positive_seconds``) and the error of a request whose deadline passed
(``timeout_error``). They live below the session so that a feature reads them
without importing it; the session imports them from here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Literal

from ..base._errors import CallTimeout, InvalidValue
from ._input_options import InputOptions

if TYPE_CHECKING:
    from ..base._filters import ToolFilter
    from ..wire._requests import Pending

__all__ = ["SessionOptions", "SessionState", "positive_seconds", "timeout_error"]


class SessionState(Enum):
    IDLE = "idle"
    CONNECTING = "connecting"  # initialize sent, waiting for its result
    LISTING = "listing"  # initialized sent, paging through tools/list
    READY = "ready"
    BACKOFF = "backoff"  # a start-up attempt failed; waiting to retry
    CLOSED = "closed"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """Everything configurable about a session. Times in seconds."""

    server_name: str = "server"
    client_name: str = "mcpcore"
    client_version: str = "0.1.0"
    startup_timeout: float = 120.0
    call_timeout: float = 300.0
    # K2: progress may push a call's deadline out, never past call_timeout_max.
    extend_on_progress: bool = False
    call_timeout_max: float = 3600.0
    separator: str = "/"
    segment_pattern: re.Pattern[str] | None = None
    policy: Literal["error", "lenient"] = "error"
    auto_refresh: bool = False
    max_pages: int = 1000
    max_tools: int = 10_000
    # The most items any other list (resources, templates, prompts) may hold.
    max_items: int = 10_000
    backoff_first: float = 1.0
    backoff_max: float = 60.0
    # E1: "auto" probes with server/discover and falls back to initialize;
    # "legacy" (or a handshake-era version) always uses initialize; "modern" (or a
    # 2026-07-28-era version) never falls back.
    protocol: str = "auto"
    # V4: the include/exclude filter (None: every tool the server lists)
    tool_filter: ToolFilter | None = None
    # F8: the log level asked of the server (None: nothing asked, M21), and whether
    # its log messages go to the host as LogMessage events rather than to logging.
    log_level: str | None = None
    log_events: bool = False
    # F2: list changes and resource updates are wanted by the host (its on_list_changed
    # and on_resource_updated hooks): asked for on subscriptions/listen, and updates
    # become events (else logged at debug).
    list_events: bool = False
    update_events: bool = False
    # E7, F9: a re-list within a 2026-07-28 result's ttlMs is served from the last one.
    honour_cache_hints: bool = False
    # M78: a headers= callable may give each request its own credentials: only
    # "public" answers are reused then.
    credentials_vary: bool = False
    # Q1: what the host offers a server that asks for input (nothing by default)
    input: InputOptions = field(default_factory=InputOptions)
    # T7–T9: declare the tasks extension and follow tasks (off by default, seed 000);
    # how long a task may run once accepted; whether closing cancels running tasks.
    tasks: bool = False
    task_timeout: float = 3600.0
    cancel_tasks_on_close: bool = False


def timeout_error(pending: Pending) -> CallTimeout:
    """The error of a request whose deadline passed (K2)."""
    if pending.tool is not None:
        return CallTimeout(
            f"tool {pending.tool.id!r} did not finish within its {pending.budget:g} s budget",
            tool=pending.tool.id,
            budget=pending.budget,
        )
    if pending.hosted:
        return CallTimeout(
            f"{pending.kind.method} did not finish within its {pending.budget:g} s budget",
            budget=pending.budget,
        )
    return CallTimeout(f"{pending.kind.method} did not finish in time", budget=None)


def positive_seconds(value: object, what: str = "a call timeout") -> float:
    """A caller's time limit as a float; ``InvalidValue`` naming ``what`` when it is
    not a positive number of seconds (zero, negative, NaN, infinite, a string, a bool).

    An infinite limit is no limit: whatever waits under it (a call, a question for
    the person on the GET stream) would never end, ``next_deadline()`` would be
    ``inf``, and a driver's timer cannot sleep that long (D2, K2)."""
    seconds = math.nan
    if not isinstance(value, (str, bytes, bool)):
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            pass
    if seconds > 0 and math.isfinite(seconds):
        return seconds
    shown = repr(value) if isinstance(value, (int, float)) else f"a {type(value).__name__}"
    raise InvalidValue(f"{what} must be a positive number of seconds, not {shown}")
