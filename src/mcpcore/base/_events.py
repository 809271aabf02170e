"""What the engine tells its driver: events (what happened) and actions (what to do).

Events are past-tense facts the driver reports to its caller; actions are the
I/O the driver must perform. Both are frozen, slotted, keyword-only dataclasses
(made with ``record``, which costs nothing at import).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from ._record import record

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
    "CloseInput",
    "ElicitationCompleted",
    "Event",
    "HttpRequest",
    "KillProcess",
    "LogMessage",
    "ProcessAction",
    "ProgressReceived",
    "PromptsListChanged",
    "RefreshFailed",
    "RequestSucceeded",
    "ResourceUpdated",
    "ResourcesListChanged",
    "SessionReady",
    "StartFailed",
    "StartProcess",
    "TerminateProcess",
    "ToolsListChanged",
    "ToolsRefreshed",
    "WriteInput",
]


# --- events -------------------------------------------------------------------


@record(frozen=True, slots=True, kw_only=True)
class SessionReady:
    """The handshake and the first listing finished (L2): the server is ready."""

    catalogue: Catalogue
    protocol_version: str
    server_info: dict[str, Any] = field(default_factory=dict)


@record(frozen=True, slots=True, kw_only=True)
class StartFailed:
    """A start-up attempt failed; another begins at ``retry_at`` (L3, L4)."""

    error: McpError
    failures: int
    retry_at: float


@record(frozen=True, slots=True, kw_only=True)
class CallSucceeded:
    """A ``tools/call`` finished with a result that is not an error (K3, K4)."""

    call_id: int
    output: ToolOutput


@record(frozen=True, slots=True, kw_only=True)
class RequestSucceeded:
    """Another request of the host (a listing, a read, a prompt, a completion)
    finished; ``value`` is what its kind reads from the result (F1)."""

    call_id: int
    value: Any


@record(frozen=True, slots=True, kw_only=True)
class CallFailed:
    """A call (or another request of the host) ended with an error: backend,
    transport, timeout or protocol (K4)."""

    call_id: int
    error: McpError


@record(frozen=True, slots=True, kw_only=True)
class CallCancelled:
    """A call was abandoned by its caller or by closing (K6)."""

    call_id: int
    reason: str


@record(frozen=True, slots=True, kw_only=True)
class ProgressReceived:
    """A ``notifications/progress`` for a running call (K2)."""

    call_id: int
    progress: float
    total: float | None
    message: str | None


@record(frozen=True, slots=True, kw_only=True)
class LogMessage:
    """A server's ``notifications/message`` (F8), for a client given ``on_log=``.

    ``level`` is one of RFC 5424's names (``"info"`` when the server sent none
    this client knows); ``logger`` and ``data`` are as the server sent them:
    untrusted, unescaped, ``data`` any JSON value.
    """

    server: str
    level: str
    logger: str | None
    data: Any


@record(frozen=True, slots=True, kw_only=True)
class ToolsListChanged:
    """The server sent ``notifications/tools/list_changed`` (P4)."""

    what: ClassVar[str] = "tools"  # the list that changed, as on_list_changed names it


@record(frozen=True, slots=True, kw_only=True)
class ResourcesListChanged:
    """The server sent ``notifications/resources/list_changed`` (F2): list again
    to see the new set (nothing is re-listed on its own)."""

    what: ClassVar[str] = "resources"


@record(frozen=True, slots=True, kw_only=True)
class PromptsListChanged:
    """The server sent ``notifications/prompts/list_changed`` (F5)."""

    what: ClassVar[str] = "prompts"


@record(frozen=True, slots=True, kw_only=True)
class ResourceUpdated:
    """The server says the resource at ``uri`` changed (F2), for a client given
    ``on_resource_updated=`` that subscribed to it (or to a resource ``uri`` is
    part of). ``uri`` and ``title`` are as the server sent them: untrusted,
    unescaped. Read it again to see the change."""

    server: str
    uri: str
    title: str | None = None


@record(frozen=True, slots=True, kw_only=True)
class ToolsRefreshed:
    """A re-list finished (T6); ``refresh_id`` is None for an automatic one."""

    refresh_id: int | None
    catalogue: Catalogue
    report: SyncReport


@record(frozen=True, slots=True, kw_only=True)
class RefreshFailed:
    """A re-list failed; the previous catalogue stays in place."""

    refresh_id: int | None
    error: McpError


@record(frozen=True, slots=True, kw_only=True)
class ElicitationCompleted:
    """Handshake era: the server says the URL question ``elicitation_id`` is done
    (``notifications/elicitation/complete``, Q2); a call it held back may be
    made again."""

    server: str
    elicitation_id: str


Event = Union[
    SessionReady,
    StartFailed,
    CallSucceeded,
    RequestSucceeded,
    CallFailed,
    CallCancelled,
    ProgressReceived,
    LogMessage,
    ToolsListChanged,
    ResourcesListChanged,
    PromptsListChanged,
    ResourceUpdated,
    ToolsRefreshed,
    RefreshFailed,
    ElicitationCompleted,
]


# --- actions ------------------------------------------------------------------


@record(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """Perform this HTTP exchange and report its response with ``exchange_id``.

    ``timeout`` is a bound for the whole exchange when the engine wants one
    (``DELETE`` on close); otherwise the engine's own deadlines apply.
    ``request_id`` is the id of the JSON-RPC request a ``POST`` carries (a
    call's id is its request id), so a driver may perform a call's exchange
    in the caller's own task or thread instead of starting one for it; it is
    ``None`` for notifications, ``GET`` and ``DELETE``.
    ``replayable``: sending the request twice changes nothing on the server (a
    ``GET``, the ``DELETE`` of a session, a request of a kind that changes
    nothing, E3), so a driver may send it once more on a new connection when
    a kept-alive connection failed before any byte of the answer arrived (the
    server had closed it while idle). Never a ``tools/call``: it may have run.
    Header values never appear in ``repr`` (C8).
    """

    exchange_id: int
    method: str
    url: str
    headers: list[tuple[bytes, bytes]] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)
    timeout: float | None = None
    request_id: int | None = None
    replayable: bool = False

    def __repr__(self) -> str:
        names = ", ".join(name.decode("latin-1") for name, _ in self.headers)
        size = 0 if self.body is None else len(self.body)
        return (
            f"HttpRequest(exchange_id={self.exchange_id}, method={self.method!r}, "
            f"headers=[{names}], body={size} bytes)"
        )


@record(frozen=True, slots=True, kw_only=True)
class AbortExchange:
    """Stop the exchange: close its response stream and release its connection."""

    exchange_id: int


# --- a local server's child process (S1-S3) ----------------------------------------
# Each names the child it is for (``process``: 1 for the first, counting up on every
# restart), so a driver still holding an older child's pipes can tell its reports apart.


@record(frozen=True, slots=True, kw_only=True)
class StartProcess:
    """Start the child: ``command`` with ``args``, in ``cwd``, with exactly ``env`` (S2),
    in a process group of its own (POSIX: a new session), so that terminating
    and killing reach whatever it starts (a launcher that does not ``exec``).

    Then read its stdout into ``receive_data`` and its stderr into
    ``receive_stderr``, report ``output_closed``/``stderr_closed`` at their
    ends and ``process_exited`` as soon as it exits (not after its stdout
    ends: a grandchild may hold that open), or ``process_failed`` if it
    could not start. Once the engine is ``finished`` closing, stop reading
    what is left and close the pipes. ``env`` and ``args`` may carry secrets: ``repr`` shows
    the number of arguments and the environment's keys only (C8).
    """

    process: int
    command: str
    args: tuple[str, ...] = field(repr=False)
    env: dict[str, str] = field(repr=False)
    cwd: str | None = None

    def __repr__(self) -> str:
        return (
            f"StartProcess(process={self.process}, command={self.command!r}, "
            f"args=<{len(self.args)}>, env_keys={sorted(self.env)!r})"
        )


@record(frozen=True, slots=True, kw_only=True)
class WriteInput:
    """Write ``data`` to the child's stdin, after everything written before it.

    ``seq``, when not 0, numbers a write that carries a request: once all of
    ``data`` is written, the driver reports it (``input_written(seq, now,
    process=)``), so that a ``tools/call`` whose child then dies unanswered
    may have run (U3). A write that fails is not reported.
    """

    process: int
    data: bytes = field(repr=False)
    seq: int = 0

    def __repr__(self) -> str:
        return f"WriteInput(process={self.process}, data={len(self.data)} bytes, seq={self.seq})"


@record(frozen=True, slots=True, kw_only=True)
class CloseInput:
    """Close the child's stdin once what was queued before it is written (S3)."""

    process: int


@record(frozen=True, slots=True, kw_only=True)
class TerminateProcess:
    """Ask the child's process group to stop (SIGTERM to the group; on Windows the child) (S3)."""

    process: int


@record(frozen=True, slots=True, kw_only=True)
class KillProcess:
    """Stop the child's process group now (SIGKILL to the group; on Windows the child) (S3)."""

    process: int


ProcessAction = Union[StartProcess, WriteInput, CloseInput, TerminateProcess, KillProcess]
Action = Union[HttpRequest, AbortExchange]
