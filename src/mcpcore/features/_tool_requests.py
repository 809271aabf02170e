"""The tools feature of the session: the catalogue's listing and tool calls.

It owns the tools' two request kinds (``tools/list``, paged and safe to send
again; ``tools/call``, never sent again after a broken stream), the listing
into a ``Catalogue`` (at start-up, on ``refresh`` and on a list change, one
at a time, later ones queued: T5, T6, P4, P6), calls (K1, K2, K7, K9), the
2026-07-28 ``x-mcp-header`` declarations of each tool and the headers they
give a call (M32–M37), and a call answered with a header mismatch, which is
sent once more after a fresh listing (M42, E5). The session coordinates it:
the lifecycle, the era and the request path are the session's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..base._errors import (
    BackendError,
    InvalidArguments,
    InvalidValue,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    UnknownTool,
)
from ..base._escape import escape_text, excerpt
from ..base._events import CallFailed, CallSucceeded, RefreshFailed, ToolsRefreshed
from ..base._record import record
from ..base._render import ToolOutput, render_result
from ..base._tools import Catalogue
from ..wire._headers import HeaderParam, InvalidHeaderDeclaration, param_headers, tool_header_params
from ..wire._jsonrpc import ErrorResponse, encode_message
from ..wire._modern import HEADER_MISMATCH, RESERVED_META_PREFIX
from ..wire._requests import Pages, Pending, RequestKind, error_detail, register

if TYPE_CHECKING:
    from ..base._tools import Tool
    from ._pins import PinBook, PinWrite
    from ._port import SessionPort

__all__ = ["TOOLS_CALL", "TOOLS_LIST", "ToolsFeature"]

_log = logging.getLogger("mcpcore.session")
_DEBUG = logging.DEBUG


def _list_refused(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    return RemoteProtocolError(f"tools/list failed ({error_detail(message)})")


def _call_refused(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    assert pending.tool is not None
    return BackendError(f"JSON-RPC error {error_detail(message)}", tool=pending.tool.id)


def _call_result(result: dict[str, Any], pending: Pending) -> ToolOutput:
    """K3, K4: the rendered output; ``isError`` raises ``BackendError`` with it."""
    tool = pending.tool
    assert tool is not None
    output = render_result(result, tool=tool, policy=pending.context)
    if output.is_error:
        raise BackendError(output.text, tool=tool.id, output=output)
    return output


TOOLS_LIST = register(
    RequestKind(method="tools/list", pages="tools", resend=True, refused=_list_refused)
)
TOOLS_CALL = register(
    RequestKind(
        method="tools/call",
        parse=_call_result,
        refused=_call_refused,
        input_rounds=True,
        tasks=True,
        progress=True,
        name_param="name",
    )
)

# A listing's owner: None = the start-up listing, -1 = an automatic re-list,
# else the id refresh() returned.
_STARTUP = None


@record(slots=True)
class _Listing:
    refresh_id: int | None


class ToolsFeature:
    """Listing and calls for one session (see the module docstring)."""

    def __init__(self, session: SessionPort) -> None:
        self._session = session
        self._path = session.path
        # U1: the catalogue the host sees (withheld tools left out) and the one listed
        self.catalogue: Catalogue | None = None
        self.listed: Catalogue | None = None
        self._pins: PinBook | None = None  # U1: made at the first listing (B5)
        self.listing: _Listing | None = None
        self._queued: list[int] = []
        self._next_refresh_id = 1
        # P4: a list change that came during the start-up listing, re-listed once
        # that listing is done (auto_refresh).
        self.relist_after_start = False
        # M34: each listed tool's x-mcp-header declarations (2026-07-28)
        self._header_params: dict[str, tuple[HeaderParam, ...]] = {}
        # M42: calls waiting for a re-list before they are sent again
        self._after_relist: list[Pending] = []

    @property
    def pins(self) -> PinBook:
        """U1: this client's pins (the feature module loads on first use)."""
        if self._pins is None:
            from ._pins import PinBook

            self._pins = PinBook()
        return self._pins

    def take_pin_writes(self) -> list[PinWrite]:
        """U1: the pins made since the last call, for the driver to store."""
        return [] if self._pins is None else self._pins.take_writes()

    # --- calls ---------------------------------------------------------------------

    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None,
        now: float,
        budget: float,
        meta: Mapping[str, Any] | None = None,
        *,
        firm: bool = False,
        task: bool = False,
    ) -> int:
        """Queue ``tools/call`` (the session checked its state and the budget); ``meta``
        is the host's own ``_meta`` keys (V1); ``firm``: the budget is the caller's
        own (T9); ``task``: the host chose a task (T8)."""
        assert self.catalogue is not None
        tool = self.catalogue.get(tool_id)
        if tool is None:
            withheld = None if self._pins is None else self._pins.withheld(tool_id)
            if withheld is not None:
                from ..base._pins import ToolChanged

                raise ToolChanged(withheld)  # U1: nothing is sent
            hidden = self.catalogue.filtered.get(tool_id)
            if hidden is not None:
                raise UnknownTool(tool_id, filtered=hidden)
            raise UnknownTool(tool_id, suggestions=self.catalogue.suggest(tool_id))
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise InvalidArguments(
                "arguments",
                message="call arguments must be a mapping (a JSON object), "
                f"not {type(arguments).__name__}",
            )
        path = self._path
        request_id = path.peek_id
        params: dict[str, Any] = {"name": tool.name, "arguments": dict(arguments)}
        if meta:
            params["_meta"] = host_meta(meta)
        asked = self._session.task_desk.task_param(tool, chosen=task)
        if asked is not None:
            params["task"] = asked  # T7: 2025-11-25 asks for the task
        request = path.build(TOOLS_CALL, request_id, params)
        # K9: encoded before anything is registered, so arguments JSON cannot carry
        # (NaN, a set, an object) fail this call alone and leave nothing behind.
        try:
            body = encode_message(request)
        except LocalProtocolError:
            raise InvalidArguments(_unencodable_path(arguments)) from None
        self._session.begin_host_request()
        path.new_id()
        pending = Pending(
            kind=TOOLS_CALL,
            request=request,
            deadline=now + budget,
            on_done=self._call_done,
            on_failed=self._session.host_failed,
            on_refused=self.call_refused,
            started=now,
            call_id=request_id,
            base=params,
            budget=budget,
            hosted=True,
            tool=tool,
            context=self._session.options.policy,
            firm_budget=firm,
        )
        if path.enter(pending):
            path.encoded[request_id] = body
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s tools/call %r as request id=%d (%d bytes, budget %g s)%s",
                self._session.tag,
                tool.id,
                request_id,
                len(body),
                budget,
                "" if pending.sent else ", waiting for the new session",
            )
        return request_id

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
    ) -> int:
        """Q4: a paused call's next round, from its continuation (the session checked
        the state, the continuation and the answers): ``params`` as first sent,
        ``extra`` the answers and the server's state; ``firm``: the budget is the
        caller's own ``timeout=``, which bounds a task the server makes too (T9)."""
        path = self._path
        request_id = path.peek_id
        merged = {**params, **extra}
        request = path.build(TOOLS_CALL, request_id, merged, capabilities)
        try:
            encode_message(request)
        except LocalProtocolError:
            raise InvalidArguments("responses") from None
        self._session.begin_host_request()
        path.new_id()
        path.enter(
            Pending(
                kind=TOOLS_CALL,
                request=request,
                deadline=now + budget,
                on_done=self._call_done,
                on_failed=self._session.host_failed,
                on_refused=self.call_refused,
                started=now,
                call_id=request_id,
                base=params,
                extra=extra,
                budget=budget,
                rounds=rounds,
                hosted=True,
                tool=tool,
                context=self._session.options.policy,
                capabilities=capabilities,
                firm_budget=firm,
            )
        )
        return request_id

    def _call_done(self, pending: Pending, output: object, now: float) -> None:
        assert isinstance(output, ToolOutput) and pending.tool is not None
        if _log.isEnabledFor(_DEBUG):
            _log.debug(
                "%s tools/call id=%d (%r) answered in %.1f ms: %d content block(s)",
                self._session.tag,
                pending.call_id,
                pending.tool.id,
                (now - pending.started) * 1000,
                len(output.content),
            )
        self._session.events.append(CallSucceeded(call_id=pending.call_id, output=output))

    def call_refused(self, pending: Pending, message: ErrorResponse, now: float) -> bool:
        """M42, E5: a header mismatch re-lists once, then the call goes once more."""
        if message.code != HEADER_MISMATCH or not self._session.modern or pending.mismatch_retried:
            return False
        pending.mismatch_retried = True
        self._after_relist.append(pending)
        # Still the caller's call (cancel and close find it), with nothing on the wire.
        self._path.carriers[pending.call_id] = -1
        self.queue_refresh(-1, now)
        return True

    def cancel_waiting(self, call_id: int) -> bool:
        """A call between a mismatch and its re-send: nothing is on the wire."""
        for waiting in self._after_relist:
            if waiting.call_id == call_id:
                self._after_relist.remove(waiting)
                self._path.carriers.pop(call_id, None)
                return True
        return False

    def _resend_after_relist(self, now: float) -> None:
        waiting, self._after_relist = self._after_relist, []
        for pending in waiting:
            if pending.tool is not None and self.catalogue is not None:
                fresh = self.catalogue.get(pending.tool.id)
                if fresh is not None:
                    pending.tool = fresh
            self._path.again(pending, now)

    def headers(self, params: Mapping[str, Any]) -> list[tuple[bytes, bytes]]:
        """M34, M37: the Mcp-Param headers a call's arguments give."""
        name = params.get("name")
        declared = self._header_params.get(name, ()) if isinstance(name, str) else ()
        arguments = params.get("arguments")
        return param_headers(declared, arguments if isinstance(arguments, Mapping) else None)

    # --- listing -------------------------------------------------------------------

    def refresh(self, now: float) -> int:
        refresh_id = self._next_refresh_id
        self._next_refresh_id += 1
        catalogue = self.catalogue
        if (
            catalogue is not None
            and self.listing is None
            and self._session.cache.fresh("tools/list", now)
        ):
            # E7: the last listing is fresh: it is the catalogue, nothing is sent.
            _log.debug("%s tools re-list served from the last one (ttlMs)", self._session.tag)
            listed = self.listed or catalogue
            self._session.events.append(
                ToolsRefreshed(
                    refresh_id=refresh_id, catalogue=catalogue, report=listed.diff(listed)
                )
            )
            return refresh_id
        self.queue_refresh(refresh_id, now)
        return refresh_id

    def list_at_start(self, now: float) -> None:
        self.listing = _Listing(refresh_id=_STARTUP)
        self._request_listing(now)

    def queue_refresh(self, refresh_id: int, now: float) -> None:
        if self.listing is not None:
            if refresh_id not in self._queued:
                self._queued.append(refresh_id)
            return
        self.listing = _Listing(refresh_id=refresh_id)
        self._request_listing(now)

    def next_queued(self, now: float) -> None:
        if self._queued and self._session.accepts_refresh:
            self.queue_refresh(self._queued.pop(0), now)

    def _request_listing(self, now: float) -> None:
        listing = self.listing
        assert listing is not None
        options = self._session.options
        deadline = None if listing.refresh_id is _STARTUP else now + options.call_timeout
        self._path.issue(
            TOOLS_LIST,
            None,
            now,
            on_done=self._listed,
            on_failed=self._listing_lost,
            deadline=deadline,
            pages=Pages("max_tools", options.max_tools),
        )

    def _listing_lost(self, pending: Pending, error: McpError, now: float) -> None:
        self.listing_failed(error, now)

    def listing_failed(self, error: McpError, now: float) -> None:
        for waiting in self._after_relist:  # M42: no fresh listing, no second try
            self._path.carriers.pop(waiting.call_id, None)
            self._session.events.append(CallFailed(call_id=waiting.call_id, error=error))
        self._after_relist.clear()
        listing, self.listing = self.listing, None
        if listing is not None and listing.refresh_id is not _STARTUP:
            self._session.events.append(
                RefreshFailed(
                    refresh_id=None if listing.refresh_id < 0 else listing.refresh_id,
                    error=error,
                )
            )
            self.next_queued(now)
        else:
            self._session.fail_start(error, now)

    def _listed(self, pending: Pending, result: object, now: float) -> None:
        listing = self.listing
        if listing is None:
            return
        assert isinstance(result, dict) and pending.pages is not None
        raw: list[object] = result["tools"]
        tools = self._keep_valid_headers(raw) if self._session.modern else raw
        options = self._session.options
        try:
            catalogue = Catalogue.from_listing(
                options.server_name,
                tools,
                separator=options.separator,
                segment_pattern=options.segment_pattern,
                max_tools=options.max_tools,
                tool_filter=options.tool_filter,
                tasks=options.tasks,
            )
        except McpError as exc:
            self.listing_failed(exc, now)
            return
        self.listing = None
        cache = self._session.cache
        previous = self.listed or self.catalogue
        # U1: each listing goes past the pins; the host sees what they let through.
        self.listed = catalogue
        catalogue, pin_changes = self.pins.observe(catalogue, options.pins)
        if listing.refresh_id is _STARTUP:
            self.catalogue = catalogue
            cache.forget()  # E7: a (re)start: nothing of before is reused
            cache.listed("tools/list", result.get("ttlMs"), result.get("cacheScope"), None, now)
            self._session.listed_at_start(catalogue, pending.pages.count, now)
            if self.relist_after_start:
                self.relist_after_start = False
                self.queue_refresh(-1, now)
            return
        assert previous is not None
        self.catalogue = catalogue
        cache.listed("tools/list", result.get("ttlMs"), result.get("cacheScope"), None, now)
        self._session.relisted()
        _log.debug("%s tools re-listed: %d tools", self._session.tag, len(catalogue))
        report = previous.diff(self.listed)
        if pin_changes:
            report = replace(report, pins=pin_changes)
        self._session.events.append(
            ToolsRefreshed(
                refresh_id=None if listing.refresh_id < 0 else listing.refresh_id,
                catalogue=catalogue,
                report=report,
            )
        )
        self._resend_after_relist(now)
        self.next_queued(now)

    def _keep_valid_headers(self, tools: list[object]) -> list[object]:
        """M32–M34, E5: drop each tool whose x-mcp-header declarations break the rules
        (with a warning naming it and why); remember the others' declarations."""
        kept: list[object] = []
        params: dict[str, tuple[HeaderParam, ...]] = {}
        for raw in tools:
            if not isinstance(raw, dict):
                kept.append(raw)  # the catalogue judges (and drops) it
                continue
            schema = raw.get("inputSchema")
            name = raw.get("name")
            try:
                declared = tool_header_params(schema) if isinstance(schema, dict) else ()
            except InvalidHeaderDeclaration as exc:
                _log.warning(
                    "server %r: dropped tool %s: its x-mcp-header declaration is invalid: %s",
                    self._session.options.server_name,
                    escape_text(name[:100]) if isinstance(name, str) else "(unnamed)",
                    exc,
                )
                continue
            if isinstance(name, str) and declared:
                params[name] = declared
            kept.append(raw)
        self._header_params = params
        return kept

    def accept_change(self, tool_id: str) -> bool:
        """U1: pin the listed definition of the changed tool ``tool_id``; a withheld
        tool is back in the catalogue. False when it has no change waiting."""
        change = self.pins.accept(tool_id)
        if change is None:
            return False
        _log.info("%s tool %r: its changed definition was accepted", self._session.tag, tool_id)
        if change.withheld and self.listed is not None:
            self.catalogue = self.pins.visible(self.listed)
        return True

    def clear(self) -> None:
        self.listing = None
        self.relist_after_start = False


def _unencodable_path(arguments: Mapping[str, Any]) -> str:
    """K9: where in ``arguments`` the first value JSON cannot carry sits.

    Names keys and indexes only, never a value (an argument may hold a secret).
    """
    seen: set[int] = set()

    def find(value: object, path: str, depth: int) -> str | None:
        if value is None or isinstance(value, (str, bool, int)):
            return None
        if isinstance(value, float):
            return None if math.isfinite(value) else f"{path} (NaN or an infinity)"
        if depth > 200 or id(value) in seen:
            return path  # nested too deeply, or a cycle
        if isinstance(value, Mapping):
            seen.add(id(value))
            for key, item in value.items():
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    return f"{path} (a key of type {type(key).__name__})"
                found = find(item, f"{path}[{excerpt(repr(key), 60)}]", depth + 1)
                if found is not None:
                    return found
            seen.discard(id(value))
            return None
        if isinstance(value, (list, tuple)):
            seen.add(id(value))
            for index, item in enumerate(value):
                found = find(item, f"{path}[{index}]", depth + 1)
                if found is not None:
                    return found
            seen.discard(id(value))
            return None
        return f"{path} (a {type(value).__name__})"

    return find(arguments, "arguments", 0) or "arguments"


def host_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The host's ``_meta`` keys for one request (V1), checked: a mapping with string
    keys, none of them the client's own (``progressToken``, which the client sets
    for progress, and the 2026-07-28 envelope's ``io.modelcontextprotocol/`` keys).
    ``InvalidValue`` (a ``ValueError``) names the key otherwise."""
    if not isinstance(meta, Mapping):
        raise InvalidValue(f"meta must be a mapping, not {type(meta).__name__}")
    for key in meta:
        if not isinstance(key, str):
            raise InvalidValue(f"meta keys must be strings, not {type(key).__name__}")
        if key == "progressToken" or key.startswith(RESERVED_META_PREFIX):
            raise InvalidValue(f"meta key {key!r} is the client's own: it cannot be set per call")
    return dict(meta)
