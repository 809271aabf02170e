"""What the engine tells its driver: events (what happened) and actions (what to do).

Events are past-tense facts the driver reports to its caller; actions are the
I/O the driver must perform. Both are frozen, slotted, keyword-only dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ._errors import McpError
    from ._render import ToolOutput
    from ._tools import Catalogue, SyncReport

__all__ = [
    "AbortExchange",
    "Action",
    "CallCancelled",
    "CallFailed",
    "CallSucceeded",
    "Event",
    "HttpRequest",
    "ProgressReceived",
    "RefreshFailed",
    "SessionReady",
    "StartFailed",
    "ToolsListChanged",
    "ToolsRefreshed",
]


# --- events -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionReady:
    """The handshake and the first listing finished (L2): the server is ready."""

    catalogue: Catalogue
    protocol_version: str
    server_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class StartFailed:
    """A start-up attempt failed; another begins at ``retry_at`` (L3, L4)."""

    error: McpError
    failures: int
    retry_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CallSucceeded:
    """A ``tools/call`` finished with a result that is not an error (K3, K4)."""

    call_id: int
    output: ToolOutput


@dataclass(frozen=True, slots=True, kw_only=True)
class CallFailed:
    """A call ended with an error: backend, transport, timeout or protocol (K4)."""

    call_id: int
    error: McpError


@dataclass(frozen=True, slots=True, kw_only=True)
class CallCancelled:
    """A call was abandoned by its caller or by closing (K6)."""

    call_id: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressReceived:
    """A ``notifications/progress`` for a running call (K2)."""

    call_id: int
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsListChanged:
    """The server sent ``notifications/tools/list_changed`` (P4)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsRefreshed:
    """A re-list finished (T6); ``refresh_id`` is None for an automatic one."""

    refresh_id: int | None
    catalogue: Catalogue
    report: SyncReport


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshFailed:
    """A re-list failed; the previous catalogue stays in place."""

    refresh_id: int | None
    error: McpError


Event = Union[
    SessionReady,
    StartFailed,
    CallSucceeded,
    CallFailed,
    CallCancelled,
    ProgressReceived,
    ToolsListChanged,
    ToolsRefreshed,
    RefreshFailed,
]


# --- actions ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """Perform this HTTP exchange and report its response with ``exchange_id``.

    ``timeout`` is a bound for the whole exchange when the engine wants one
    (``DELETE`` on close); otherwise the engine's own deadlines apply.
    ``request_id`` is the id of the JSON-RPC request a ``POST`` carries (a
    call's id is its request id), so a driver may perform a call's exchange
    in the caller's own task or thread instead of starting one for it; it is
    ``None`` for notifications, ``GET`` and ``DELETE``.
    Header values never appear in ``repr`` (C8).
    """

    exchange_id: int
    method: str
    url: str
    headers: list[tuple[bytes, bytes]] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)
    timeout: float | None = None
    request_id: int | None = None

    def __repr__(self) -> str:
        names = ", ".join(name.decode("latin-1") for name, _ in self.headers)
        size = 0 if self.body is None else len(self.body)
        return (
            f"HttpRequest(exchange_id={self.exchange_id}, method={self.method!r}, "
            f"headers=[{names}], body={size} bytes)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortExchange:
    """Stop the exchange: close its response stream and release its connection."""

    exchange_id: int


Action = Union[HttpRequest, AbortExchange]
