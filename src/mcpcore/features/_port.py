"""What a feature sees of the session: the port the session implements.

A feature never imports the session. It reaches it through ``SessionPort``, a
``Protocol`` holding exactly what the features use of it: its options, state,
era and tag; its request path (send a request of a kind, and the timers that
are the requests' deadlines); the events it emits; the few steps of its own a
feature takes (a host request begun or failed, a request abandoned, the
start-up listing's end); and, through the session that composes them, the
other features a feature works with, each as the small port it is used by
(``ToolsPort``, ``CachePort``, ``InputDeskPort``, ``TaskDeskPort``, and the
views of the desks or their stand-ins, ``InputDeskView`` and ``TaskDeskView``).
``ClientSession`` implements it structurally; mypy checks that where the
session hands itself to its features.

It also holds the words a feature reads the session in: its lifecycle states
(``SessionState``; the table that moves them, ``TRANSITIONS``, is the
session's own), everything configurable about a session (``SessionOptions``),
how a caller's time limit is checked (``positive_seconds``) and the error of a
request whose deadline passed (``timeout_error``). The session imports them
from here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..base._errors import CallTimeout, InvalidValue, MayHaveRun, McpError, TransportError
from ..base._record import record
from ._input_options import InputOptions

if TYPE_CHECKING:
    from ..base._errors import McpError
    from ..base._events import Event
    from ..base._filters import ToolFilter
    from ..base._tools import Catalogue, Tool
    from ..wire._jsonrpc import ErrorResponse
    from ..wire._requests import Pending, RequestPath
    from ._task_handle import TaskHandle

__all__ = [
    "CachePort",
    "Finish",
    "InputDeskPort",
    "InputDeskView",
    "SessionOptions",
    "SessionPort",
    "SessionState",
    "TaskDeskPort",
    "TaskDeskView",
    "ToolsPort",
    "positive_seconds",
    "timeout_error",
]

# Where an input round's answers go when not into the request again (a task's
# tasks/update, T7): (the params added, now).
Finish = Callable[[dict[str, Any], float], None]


class SessionState(Enum):
    IDLE = "idle"
    CONNECTING = "connecting"  # initialize sent, waiting for its result
    LISTING = "listing"  # initialized sent, paging through tools/list
    READY = "ready"
    BACKOFF = "backoff"  # a start-up attempt failed; waiting to retry
    CLOSED = "closed"


@record(frozen=True, slots=True, kw_only=True)
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
    # U1: what a tool whose definition changed since it was pinned does:
    # "warn" (log and report) or "block" (withheld until the host accepts it).
    pins: Literal["warn", "block"] = "warn"
    # U2: the host's seal keys (newest first): every continuation and task handle
    # this client gives out is sealed with the first, every one it is given back
    # must match one. Secrets: never shown.
    seal_keys: tuple[bytes, ...] = field(default=(), repr=False)


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


def may_have_run(error: McpError, pending: Pending, request_id: int) -> McpError:
    """U3: the error of a ``tools/call`` whose request reached the server whole and
    whose answer did not arrive: ``MayHaveRun``, its words the transport's own with
    what it means after them. A deadline (``CallTimeout``) or an error that is not
    the transport's stays as it is."""
    if not isinstance(error, TransportError) or isinstance(error, (CallTimeout, MayHaveRun)):
        return error
    tool = pending.tool.id if pending.tool is not None else None
    text = str(error)
    named = f"tool {tool!r}" if tool is not None else "the tool"
    if "may have run" in text:  # the words say so already (H6): name the call
        words = f"{text} ({named}, request id {request_id})"
    else:
        words = (
            f"{text}; the server may have run {named} (request id {request_id}): "
            "check before calling it again"
        )
    failed = MayHaveRun(words, tool=tool, request_id=request_id)
    failed.status = error.status
    return failed


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


# --- the port ------------------------------------------------------------------------


if TYPE_CHECKING:  # annotations only: a Protocol class costs import time (B5)

    class ToolsPort(Protocol):
        """The tools feature (``_tool_requests``), as other features use it."""

        @property
        def catalogue(self) -> Catalogue | None: ...

        def queue_refresh(self, refresh_id: int, now: float) -> None: ...

        def resume(
            self,
            tool: Tool,
            params: dict[str, Any],
            extra: dict[str, Any],
            now: float,
            budget: float,
            *,
            rounds: int,
            capabilities: dict[str, Any] | None,
            firm: bool = False,
        ) -> int: ...

    class CachePort(Protocol):
        """The session's list cache (E7), as the listings use it."""

        def listed(
            self, method: str, ttl_ms: object, scope: object, value: object, now: float
        ) -> None: ...

        def fresh(self, method: str, now: float) -> bool: ...

        def forget(self, method: str | None = None) -> None: ...

    class InputDeskPort(Protocol):
        """The input desk (``_input``), made on first use, as other features use it."""

        @property
        def endpoint(self) -> str: ...

        @property
        def used(self) -> set[str]: ...

        @property
        def pausing(self) -> set[int]: ...

        def on_call(self, call_id: int, on_input: str) -> int: ...

        def pause(self, call_id: int) -> None: ...

        def pause_capabilities(self) -> dict[str, Any]: ...

        def input_round(
            self,
            pending: Pending,
            requests: object,
            state: str | None,
            now: float,
            finish: Finish | None = None,
        ) -> None: ...

        def refusal(self, pending: Pending, message: ErrorResponse) -> McpError | None: ...

        def cancel(self, call_id: int) -> bool: ...

    class InputDeskView(Protocol):
        """The input desk or its stand-in: read without making the desk."""

        @property
        def call_ids(self) -> Sequence[int]: ...

    class TaskDeskPort(Protocol):
        """The task desk (``_tasks``), made on first use, as the features use it."""

        def follow(
            self,
            call_id: int,
            handle: TaskHandle,
            tool: Tool | None,
            now: float,
            *,
            timeout: float | None = None,
        ) -> None: ...

        def answer(
            self, task_id: str, rounds: int, tool: Tool, extra: dict[str, Any], now: float
        ) -> int: ...

    class TaskDeskView(Protocol):
        """The task desk or its stand-in (tasks off): read without making the desk."""

        @property
        def calls(self) -> Mapping[int, object]: ...

        def declare(self, capabilities: dict[str, Any]) -> dict[str, Any]: ...

        def task_param(self, tool: Tool, *, chosen: bool = False) -> dict[str, Any] | None: ...

    class SessionPort(Protocol):
        """What the features use of the session (see the module docstring)."""

        @property
        def options(self) -> SessionOptions: ...

        @property
        def tag(self) -> str:
            """How debug records name this server (X4)."""
            ...

        @property
        def state(self) -> SessionState: ...

        @property
        def era(self) -> Literal["modern", "legacy"] | None: ...

        @property
        def modern(self) -> bool: ...

        @property
        def ready(self) -> bool: ...

        @property
        def accepts_refresh(self) -> bool: ...

        @property
        def server_capabilities(self) -> Mapping[str, Any]: ...

        @property
        def endpoint_url(self) -> str | None: ...

        @property
        def events(self) -> list[Event]:
            """Where a feature emits its events, in order."""
            ...

        @property
        def path(self) -> RequestPath:
            """The request path: requests of a kind sent, their deadlines, their ends."""
            ...

        @property
        def cache(self) -> CachePort: ...

        @property
        def tools(self) -> ToolsPort: ...

        @property
        def input(self) -> InputDeskPort: ...

        @property
        def input_desk(self) -> InputDeskView: ...

        @property
        def tasks(self) -> TaskDeskPort: ...

        @property
        def task_desk(self) -> TaskDeskView: ...

        def begin_host_request(self) -> None:
            """A request of the host's is begun (the lifecycle says whether it may be)."""

        def host_failed(self, pending: Pending, error: McpError, now: float) -> None: ...

        def fail_request(
            self, pending: Pending, error: McpError, now: float, reason: str
        ) -> None: ...

        def abandon(self, pending: Pending, reason: str) -> None: ...

        def fail_start(self, error: McpError, now: float) -> None: ...

        def listed_at_start(self, catalogue: Catalogue, pages: int, now: float) -> None: ...

        def relisted(self) -> None: ...
