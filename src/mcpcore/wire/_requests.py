"""The one path every request of the session goes through (F1).

A request kind is declared, not coded as a branch: ``RequestKind`` says its
method, how a result is read, what an error answer means, whether it pages,
whether it may go out again after its stream broke, whether it may be answered
with ``input_required`` rounds and which param names it in ``Mcp-Name``. Each
feature module (tools, resources, prompts, completion) declares its kinds and
``register``s them in ``KINDS``; the session's own (discovery, ``initialize``,
``subscriptions/listen``) are declared the same way.

``RequestPath`` owns what is common to all of them: request ids, the table of
pending requests with their deadlines (a heap), the outgoing queue (and the
bytes of a message encoded early), stamping params with the 2026-07-28
envelope, parking requests while a new session is set up (H6), abandoning
(K6: ``notifications/cancelled`` in the handshake era, a closed stream at
2026-07-28), sending a request again under a new id (a broken stream, an
``input_required`` round, a header mismatch), and following cursors with the
loop guard and the page cap. It decides nothing about the session's
lifecycle: what a finished or failed request means is each pending request's
own ``on_done`` / ``on_failed``.
"""

from __future__ import annotations

import heapq
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from ..base._errors import LimitExceeded, McpError, RemoteProtocolError, RequestRefused
from ..base._escape import excerpt
from ..base._events import ProgressReceived
from ..base._record import record
from ._jsonrpc import ErrorResponse, Message, Notification, Request
from ._modern import envelope

if TYPE_CHECKING:
    from ..base._tools import Tool

__all__ = [
    "KINDS",
    "Ask",
    "Pages",
    "Pending",
    "RequestKind",
    "RequestPath",
    "error_detail",
    "read_page",
    "refused_by_server",
    "register",
]

_log = logging.getLogger("mcpcore.session")  # the session's trace (X4) names progress

# Ids of abandoned requests kept to word a late response's debug log; older ones are
# forgotten (a late response for them is then logged as unknown, which it also is).
_ABANDONED_REMEMBERED = 1024


def _as_is(result: dict[str, Any], pending: Pending) -> object:
    return result


def _rpc_error(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    return RemoteProtocolError(f"{pending.kind.method} failed ({error_detail(message)})")


def refused_by_server(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    """A feature's request answered with a JSON-RPC error: the server's own refusal,
    not a break of the protocol (``RequestRefused``)."""
    return RequestRefused(pending.kind.method, detail=error_detail(message))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def error_detail(message: ErrorResponse) -> str:
    """An error answer as its code and the start of its message (escaped, X1)."""
    return f"{message.code}: {excerpt(message.message, 300)}"


@record(frozen=True, slots=True, kw_only=True)
class RequestKind:
    """One kind of request, declared (F1)."""

    method: str
    # A complete result (a JSON object) → what the request's owner receives; raises
    # McpError for a result it cannot use. A paged kind gets the collected items.
    parse: Callable[[dict[str, Any], Pending], object] = _as_is
    # A JSON-RPC error answering it → the error its owner receives.
    refused: Callable[[ErrorResponse, Pending, bool], McpError] = _rpc_error
    # The array a page carries ("tools", "resources", …): cursors are followed.
    pages: str | None = None
    # It changes nothing on the server: sent again (once, new id) after its
    # stream broke at 2026-07-28 (E3). A tools/call never is.
    resend: bool = False
    # It may be answered with input_required (M48); else that resultType is an error.
    input_rounds: bool = False
    # It may be answered with a task, followed when tasks are on (T7).
    tasks: bool = False
    # Its params carry a progress token (the request id).
    progress: bool = False
    # The param whose value is the Mcp-Name header at 2026-07-28 (M25).
    name_param: str | None = None
    # The handshake's own requests are never cancelled (K6, M14).
    cancellable: bool = True
    # The result's resultType is checked at 2026-07-28 (M43, M44, M57); the
    # handshake's own requests get the raw result.
    typed_result: bool = True
    # Its params get the 2026-07-28 envelope (the probe builds its own).
    stamped: bool = True
    # B11: its result may carry a file whole; the response is bounded by
    # HttpLimits.max_read_size rather than max_message_size.
    large_result: bool = False


@record(frozen=True, slots=True)
class Ask:
    """One request a host asks for: its kind, its params (before the envelope), and
    what the kind's reading of the result needs (a URI, the server's name)."""

    kind: RequestKind
    params: dict[str, Any] | None = None
    context: Any = None


#: Every kind a feature declared, by method.
KINDS: dict[str, RequestKind] = {}


def register(kind: RequestKind) -> RequestKind:
    KINDS[kind.method] = kind
    return kind


@record(slots=True)
class Pages:
    """A paged request's collected items, and the cursors seen (loop guard)."""

    limit_name: str
    limit: int
    items: list[object] = field(default_factory=list)
    cursors: set[str] = field(default_factory=set)
    count: int = 0


Done = Callable[["Pending", object, float], None]
Failed = Callable[["Pending", McpError, float], None]
# An owner's own reading of an error answer, before the kind's: True when handled.
Refused = Callable[["Pending", ErrorResponse, float], bool]


@record(slots=True)
class Pending:
    """One request of ours that is waiting for its response."""

    kind: RequestKind
    request: Request
    deadline: float | None
    on_done: Done
    on_failed: Failed
    on_refused: Refused | None = None
    started: float = 0.0
    # The id its owner knows: the first request's id. A page, a round of
    # input_required or a retry after a header mismatch has a new request id (M49).
    call_id: int = 0
    # Params as the owner built them, before the envelope (re-sent rounds start here),
    # and what this round adds to them (an input_required round's answers, M50).
    base: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None
    budget: float = 0.0
    rounds: int = 0
    mismatch_retried: bool = False
    version_retried: bool = False  # M74: sent once more after a -32022
    reissued: bool = False
    sent: bool = True
    # The host's own request (ends with an event under call_id; cancelled on close).
    hosted: bool = False
    tool: Tool | None = None
    pages: Pages | None = None
    # Kind-specific context (a resource's URI, a prompt's name, a refresh id).
    context: Any = None
    # The client capabilities this request declares when they differ from the
    # client's own (a call that may pause for a person declares elicitation, Q4).
    capabilities: dict[str, Any] | None = None
    # T9: the budget is the caller's own ``timeout=``: it bounds the whole call, a
    # task the server makes of it included (else ``task_timeout`` takes over).
    firm_budget: bool = False
    # T9: a close that follows still delivers this request, within the close's
    # bound (a give-up's ``tasks/cancel``): see ``ClientSession.owed_on_close``.
    deliver_on_close: bool = False


class RequestPath:
    """Ids, the pending table with deadlines, the outgoing queue, parking and re-sending."""

    def __init__(self, client_name: str, client_version: str, log_level: str | None = None) -> None:
        self._client = (client_name, client_version, log_level)
        self._next_id = 1
        self.pending: dict[int, Pending] = {}
        # Deadlines of pending requests as a heap of (deadline, request id). An entry
        # is stale once its request ended or its deadline moved; stale entries are
        # dropped when they reach the top, so the next deadline costs O(log n).
        self._deadlines: list[tuple[float, int]] = []
        self.abandoned: OrderedDict[int, None] = OrderedDict()
        self.outgoing: list[Message] = []
        # K9: the bytes of a request encoded (and so checked) before it was
        # registered; the engine sends them as they are rather than encoding twice.
        self.encoded: dict[int, bytes] = {}
        self.dropped: list[int] = []
        # a call's id -> the id of the request now carrying it (M49)
        self.carriers: dict[int, int] = {}
        # H6: while a new session is set up, requests wait here.
        self.holding = False
        self.parked: list[Request] = []
        # The era's stamping: None in the handshake era, else the modern version.
        self.modern_version: str | None = None
        # Q1: the client capabilities the envelope declares (only what the host offers).
        self.capabilities: dict[str, Any] = {}
        # V2, only while an observer watches (``_observing``): the trace context of a
        # request of the host (by call id), added to ``_meta`` of every request issued
        # for it (a task's polls, a page); and who is told of the session's own requests.
        self.traced: dict[int, Mapping[str, Any]] = {}
        self.watch: OwnWatch | None = None

    # --- ids and stamping ----------------------------------------------------------

    def new_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    @property
    def peek_id(self) -> int:
        return self._next_id

    def stamp(
        self, params: Mapping[str, Any] | None, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Params as the era wants them: with the modern envelope (M18), else as given."""
        if self.modern_version is None:
            return None if params is None else dict(params)
        declared = self.capabilities if capabilities is None else capabilities
        return envelope(params, self.modern_version, *self._client, capabilities=declared)

    # --- issuing --------------------------------------------------------------------

    def issue(
        self,
        kind: RequestKind,
        params: dict[str, Any] | None,
        now: float,
        *,
        on_done: Done,
        on_failed: Failed,
        deadline: float | None = None,
        call_id: int | None = None,
        request_id: int | None = None,
        **extra: Any,
    ) -> Pending:
        """Build, register and send (or park) one request of ``kind``."""
        if request_id is None:
            request_id = self.new_id()
        carrier: Mapping[str, Any] | None = None
        if self.traced and (carrier := self.traced.get(request_id if call_id is None else call_id)):
            params = _with_meta(params, carrier)
        watch = self.watch
        watched = (
            None if watch is None or call_id is not None else watch.issued(kind, request_id, now)
        )
        if watched:
            params = _with_meta(params, watched)
        pending = Pending(
            kind=kind,
            request=self.build(kind, request_id, params),
            deadline=deadline,
            on_done=on_done,
            on_failed=on_failed,
            started=now,
            call_id=request_id if call_id is None else call_id,
            base=params,
            **extra,
        )
        if watched is not None:
            assert watch is not None
            watch.follow(pending)
        self.enter(pending)
        return pending

    def build(
        self,
        kind: RequestKind,
        request_id: int,
        params: dict[str, Any] | None,
        capabilities: dict[str, Any] | None = None,
    ) -> Request:
        """The request as it goes out: a progress token when the kind takes one, and
        the era's envelope (declaring ``capabilities`` when given, else the client's)."""
        if kind.progress:
            params = dict(params or {})
            params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
        stamped = self.stamp(params, capabilities) if kind.stamped else params
        return Request(id=request_id, method=kind.method, params=stamped)

    def declare(self, request_id: int, capabilities: dict[str, Any]) -> None:
        """The pending request ``request_id`` (not yet taken out) declares
        ``capabilities`` instead of the client's own, from now on."""
        pending = self.pending[request_id]
        pending.capabilities = capabilities
        old = pending.request
        params = _with(pending.base, pending.extra)
        pending.request = self.build(pending.kind, request_id, params, capabilities)
        self.encoded.pop(request_id, None)
        for queue in (self.outgoing, self.parked):
            for index, message in enumerate(queue):
                if message is old:
                    queue[index] = pending.request

    def enter(self, pending: Pending) -> bool:
        """Register ``pending``, then send it now, or park it until the new session
        is up (H6). True when sent."""
        request_id = pending.request.id
        assert isinstance(request_id, int)
        self.pending[request_id] = pending
        if pending.hosted:
            self.carriers[pending.call_id] = request_id
        self.track_deadline(request_id, pending.deadline)
        if self.holding and pending.kind.cancellable:
            pending.sent = False
            self.parked.append(pending.request)
            return False
        pending.sent = True
        self.outgoing.append(pending.request)
        return True

    def again(
        self, pending: Pending, now: float, extra: Mapping[str, Any] | None = None
    ) -> Pending:
        """The same request under a new id (M49, E3), with ``extra`` params added and a
        fresh envelope and progress token; the owner's call id stays."""
        params = pending.base
        added = dict(extra) if extra else None
        request_id = self.new_id()
        again = Pending(
            kind=pending.kind,
            request=self.build(
                pending.kind, request_id, _with(params, added), pending.capabilities
            ),
            deadline=pending.deadline,
            on_done=pending.on_done,
            on_failed=pending.on_failed,
            on_refused=pending.on_refused,
            started=pending.started if pending.kind.progress else now,
            call_id=pending.call_id,
            base=params,
            extra=added,
            budget=pending.budget,
            rounds=pending.rounds,
            mismatch_retried=pending.mismatch_retried,
            version_retried=pending.version_retried,
            reissued=pending.reissued,
            hosted=pending.hosted,
            tool=pending.tool,
            pages=pending.pages,
            context=pending.context,
            capabilities=pending.capabilities,
            firm_budget=pending.firm_budget,
            deliver_on_close=pending.deliver_on_close,
        )
        self.enter(again)
        return again

    def next_page(self, pending: Pending, cursor: str, now: float) -> Pending:
        """The next page of a paged request, under a new id; the call id stays."""
        params = dict(pending.base or {})
        params["cursor"] = cursor
        return self.issue(
            pending.kind,
            params,
            now,
            on_done=pending.on_done,
            on_failed=pending.on_failed,
            on_refused=pending.on_refused,
            deadline=pending.deadline,
            call_id=pending.call_id,
            budget=pending.budget,
            hosted=pending.hosted,
            pages=pending.pages,
            context=pending.context,
        )

    def release(self) -> None:
        """H6: the new session is up: send what waited, once, stamped for its era."""
        self.holding = False
        parked, self.parked = self.parked, []
        for request in parked:
            waiting = self.pending.get(request.id)  # type: ignore[arg-type]
            if waiting is None:
                continue
            waiting.sent = True
            params = _with(waiting.base, waiting.extra)
            waiting.request = self.build(
                waiting.kind,
                request.id,  # type: ignore[arg-type]
                params,
                waiting.capabilities,
            )
            self.outgoing.append(waiting.request)

    # --- ending ---------------------------------------------------------------------

    def take(self, request_id: object) -> Pending | None:
        """The pending request ``request_id`` answers, no longer pending."""
        pending = self.pending.pop(request_id, None) if isinstance(request_id, int) else None
        if pending is not None and self.carriers.get(pending.call_id) == request_id:
            del self.carriers[pending.call_id]
        return pending

    def abandon(self, pending: Pending, reason: str) -> bool:
        """K6: forget the request, drop its exchange, and say whether the server
        should be told (``notifications/cancelled``; never for the handshake's own
        requests, nor for one that was never sent). The caller tells it, by era."""
        request_id = pending.request.id
        assert isinstance(request_id, int)
        self.take(request_id)
        if not pending.kind.cancellable:
            return False
        if not pending.sent:
            self.parked = [r for r in self.parked if r.id != request_id]
            return False
        self.remember_abandoned(request_id)
        self.dropped.append(request_id)
        return True

    def cancel_notice(self, request_id: int, reason: str) -> None:
        self.outgoing.append(
            Notification(
                method="notifications/cancelled",
                params={"requestId": request_id, "reason": reason},
            )
        )

    def remember_abandoned(self, request_id: int) -> None:
        abandoned = self.abandoned
        abandoned[request_id] = None
        if len(abandoned) > _ABANDONED_REMEMBERED:
            abandoned.popitem(last=False)

    def carrier(self, call_id: int) -> Pending | None:
        """The pending request now carrying the owner's ``call_id``."""
        request_id = self.carriers.get(call_id)
        return None if request_id is None else self.pending.get(request_id)

    def clear(self) -> None:
        self.pending.clear()
        self.carriers.clear()
        self._deadlines.clear()
        self.parked.clear()
        self.holding = False

    # --- deadlines ------------------------------------------------------------------

    def earliest_deadline(self) -> float | None:
        heap, pending = self._deadlines, self.pending
        while heap:
            at, request_id = heap[0]
            entry = pending.get(request_id)
            if entry is not None and entry.deadline == at:
                return at
            heapq.heappop(heap)
        return None

    def pop_due(self, now: float) -> Pending | None:
        """The next request whose deadline has passed at ``now`` (still pending)."""
        due = self.earliest_deadline()
        if due is None or due > now:
            return None
        _, request_id = heapq.heappop(self._deadlines)
        return self.pending[request_id]

    def progress(
        self, params: Mapping[str, Any], now: float, extend: bool, cap: float, tag: str
    ) -> ProgressReceived | None:
        """``notifications/progress`` for a pending request: the event for its owner,
        its deadline pushed out first when ``extend`` (never past ``started + cap``,
        never pulled in: a per-call budget may exceed the cap). ``None`` when the
        token names nothing pending that reports progress, or the numbers are bad."""
        token = params.get("progressToken")
        pending = (
            self.pending.get(token)
            if isinstance(token, int) and not isinstance(token, bool)
            else None
        )
        progress = params.get("progress")
        if pending is None or not pending.kind.progress or not _is_number(progress):
            return None
        total = params.get("total")
        message = params.get("message")
        if _log.isEnabledFor(logging.DEBUG):
            shown = f"{total:g}" if _is_number(total) else "an unknown total"
            _log.debug(
                "%s progress for %s id=%d: %g of %s",
                tag,
                pending.kind.method,
                token,
                progress,
                shown,
            )
        if extend and pending.deadline is not None:
            extended = min(now + pending.budget, pending.started + cap)
            if extended > pending.deadline:
                pending.deadline = extended
                self.track_deadline(token, extended)  # type: ignore[arg-type]
        return ProgressReceived(
            call_id=pending.call_id,
            progress=float(progress),  # type: ignore[arg-type]
            total=float(total) if _is_number(total) else None,  # type: ignore[arg-type]
            message=message if isinstance(message, str) else None,
        )

    def track_deadline(self, request_id: int, deadline: float | None) -> None:
        if deadline is None:
            return
        heap = self._deadlines
        heapq.heappush(heap, (deadline, request_id))
        # Deadlines pushed out by progress leave stale entries behind; rebuild the
        # heap when they outnumber the live ones, so it stays O(pending) in size.
        if len(heap) > 64 and len(heap) > 2 * len(self.pending):
            self._deadlines = [
                (p.deadline, rid) for rid, p in self.pending.items() if p.deadline is not None
            ]
            heapq.heapify(self._deadlines)


def _with(base: dict[str, Any] | None, extra: dict[str, Any] | None) -> dict[str, Any] | None:
    return base if not extra else {**(base or {}), **extra}


def _with_meta(params: dict[str, Any] | None, carrier: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with ``carrier`` added to its ``_meta``; keys already there win (V2)."""
    out = dict(params or {})
    meta = out.get("_meta")
    out["_meta"] = {**carrier, **(meta if isinstance(meta, Mapping) else {})}
    return out


class OwnWatch(Protocol):
    """Told of the session's own requests as they are issued (V2, ``_observing``)."""

    def issued(self, kind: RequestKind, request_id: int, now: float) -> Mapping[str, Any] | None:
        """``None``: not watched; else ``_meta`` keys for the request (maybe none)."""

    def follow(self, pending: Pending) -> None:
        """The watched request as registered: follow it to its outcome."""


def read_page(pending: Pending, result: dict[str, Any], max_pages: int) -> str | None:
    """Collect one page of a paged request; the next cursor, or None at the end.

    Raises for a page that breaks the rules: no array, a cursor that is not a
    string, a cursor seen before (a loop), too many pages or items.
    """
    kind, pages = pending.kind, pending.pages
    assert kind.pages is not None and pages is not None
    method = kind.method
    items = result.get(kind.pages)
    if not isinstance(items, list):
        raise RemoteProtocolError(f"the {method} result has no {kind.pages!r} array")
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise RemoteProtocolError(f"{method} returned a nextCursor that is not a string")
    pages.count += 1
    pages.items.extend(items)
    if len(pages.items) > pages.limit:
        raise LimitExceeded(
            pages.limit_name, pages.limit, f"the number of {kind.pages} the server listed"
        )
    if not cursor:
        return None
    if cursor in pages.cursors:
        raise RemoteProtocolError(
            f"{method} returned a cursor it had returned before (a cursor loop)"
        )
    if pages.count >= max_pages:
        raise LimitExceeded("max_pages", max_pages, f"the number of {method} pages")
    pages.cursors.add(cursor)
    return cursor
