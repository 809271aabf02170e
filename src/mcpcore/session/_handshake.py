"""The handshake: finding the era, setting up a session, and setting one up again.

It owns start-up attempts (L2–L5): the 2026-07-28 probe (``server/discover``)
and its verdicts (E1, M1–M14), the fall-back to ``initialize`` and the
handshake era's ``initialize``/``initialized`` exchange (P1–P3a), the
start-up deadline and the backoff between attempts, and setting up a new
session while ready (H6, M13), with requests parked until it is up. It
writes what it learns (era, protocol version, the server's info and
capabilities) on the session; the session moves the lifecycle table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..base._backoff import backoff_delay
from ..base._errors import CallTimeout, HandshakeError, McpError
from ..base._escape import excerpt
from ..base._events import SessionReady, StartFailed
from ..base._tools import Catalogue
from ..features._port import SessionState
from ..features._tool_requests import TOOLS_LIST
from ..wire._jsonrpc import ErrorResponse, Notification
from ..wire._modern import (
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
    discover_verdict,
    envelope,
    probe_error_verdict,
    probe_failure_is_outage,
)
from ..wire._requests import Pending, RequestKind, error_detail, register
from ._lifecycle import SessionInput

if TYPE_CHECKING:
    from ..features._desks import NoTasks
    from ..features._port import SessionPort
    from ..features._subscriptions import Listener, ResourceSubscriptions
    from ..features._tasks import TaskDesk
    from ..features._tool_requests import ToolsFeature
    from ..wire._jsonrpc import Request

__all__ = ["DISCOVER", "INITIALIZE", "Handshake", "HandshakeHost"]

_log = logging.getLogger("mcpcore.session")
_DEBUG = logging.DEBUG

SUPPORTED_PROTOCOL_VERSIONS = HANDSHAKE_VERSIONS

# The handshake's own request kinds (F1): never cancelled (K6, M14), read raw.
DISCOVER = register(
    RequestKind(method="server/discover", cancellable=False, typed_result=False, stamped=False)
)
INITIALIZE = register(
    RequestKind(method="initialize", cancellable=False, typed_result=False, stamped=False)
)
# F8: the handshake era's log level (never sent at 2026-07-28, M71).
SET_LEVEL = register(RequestKind(method="logging/setLevel"))


if TYPE_CHECKING:  # annotations only: a Protocol class costs import time (B5)

    class HandshakeHost(SessionPort, Protocol):
        """The session as its handshake sees it: the features' port, and what the
        handshake writes on the session (the era, the protocol version, the server's
        info and capabilities, the start-up's failures), the lifecycle table's input,
        and the features it sets up again on a new session."""

        era: Literal["modern", "legacy"] | None
        protocol_version: str | None
        server_capabilities: dict[str, Any]
        server_info: dict[str, Any]
        instructions: str | None
        failures: int
        last_error: McpError | None
        reconnecting: bool

        @property
        def tools(self) -> ToolsFeature: ...

        @property
        def listener(self) -> Listener: ...

        @property
        def subscriptions(self) -> ResourceSubscriptions: ...

        @property
        def task_desk(self) -> TaskDesk | NoTasks: ...

        def transition(self, event: SessionInput) -> None: ...

        def retry_now(self, now: float) -> None: ...

        def session_expired(self, resend: list[Request], now: float) -> None: ...


class Handshake:
    """Start-up attempts and re-setups of one session (see the module docstring)."""

    def __init__(self, session: HandshakeHost) -> None:
        self._s = session
        self._attempt_started = 0.0
        self._startup_deadline: float | None = None
        self._retry_at: float | None = None
        # H6: a failed re-setup is retried on the backoff schedule (L4).
        self._reinit_failures = 0
        self._reinit_at: float | None = None
        # E1: the era of this endpoint once known: remembered for the client's life
        # and re-checked when it stops fitting (M12, M13).
        protocol = session.options.protocol
        self._pinned: Literal["modern", "legacy"] | None = (
            "modern"
            if protocol == "modern" or protocol in MODERN_VERSIONS
            else "legacy"
            if protocol == "legacy" or protocol in SUPPORTED_PROTOCOL_VERSIONS
            else None
        )
        session.era = self._pinned
        self._probe_retried = False

    @property
    def pinned(self) -> bool:
        return self._pinned is not None

    def version_refused(self, pending: Pending, message: ErrorResponse, now: float) -> None:
        """M74: a ``-32022`` answering a request once ready. Naming the version this
        client speaks, the request goes once more; naming none it speaks (or again),
        the request fails naming what the server offers, and the endpoint is probed
        afresh (M13): the verdict no longer fits."""
        data = message.data if isinstance(message.data, Mapping) else {}
        offered = data.get("supported")
        supported = [v for v in offered if isinstance(v, str)] if isinstance(offered, list) else []
        if self._s.protocol_version in supported and not pending.version_retried:
            pending.version_retried = True
            self._s.path.again(pending, now, pending.extra)
            return
        shown = ", ".join(excerpt(v, 40) for v in supported[:8]) or "none"
        pending.on_failed(
            pending,
            HandshakeError(
                f"the server refused protocol version {self._s.protocol_version} for "
                f"{pending.kind.method} (it offers: {shown})"
            ),
            now,
        )
        if not self.pinned and self._s.state is SessionState.READY and not self._s.path.holding:
            self._s.era = None
            self.resetup(now)

    @property
    def waiting_to_retry(self) -> bool:
        return self._retry_at is not None

    @property
    def idle(self) -> bool:
        return self._reinit_at is None

    def next_deadline(self) -> float | None:
        startup, retry, reinit = self._startup_deadline, self._retry_at, self._reinit_at
        if not (startup or retry or reinit):
            return None  # a session up and running: the usual case, asked after every input
        times = [t for t in (startup, retry, reinit) if t]
        return min(times)

    def retry_now(self, now: float) -> None:
        if self._retry_at is not None:
            self._retry_at = now

    def handle_timer(self, now: float) -> None:
        if self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            self._s.transition(SessionInput.RETRY_DUE)
            self.begin(now)
        if self._startup_deadline is not None and now >= self._startup_deadline:
            budget = self._s.options.startup_timeout
            self.fail_start(
                CallTimeout(f"start-up did not finish within {budget:g} s", budget=budget), now
            )
        if self._reinit_at is not None and now >= self._reinit_at:
            self._reinit_at = None
            _log.debug("setting up a new session again (attempt %d)", self._reinit_failures + 1)
            self.resetup(now)

    def closed(self) -> None:
        self._reinit_at = None
        self._startup_deadline = None
        self._retry_at = None

    def begin(self, now: float) -> None:
        self._s.protocol_version = None
        self._s.path.modern_version = None
        self._attempt_started = now
        self._startup_deadline = now + self._s.options.startup_timeout
        self._probe_retried = False
        if self._s.era == "legacy":
            _log.debug(
                "%s start-up attempt %d: initialize (offering protocol version %s)",
                self._s.tag,
                self._s.failures + 1,
                self._handshake_version(),
            )
            self._send_initialize(now, deadline=None)
        else:
            self._send_discover(now, self._modern_version())

    def resetup(self, now: float) -> None:
        """H6, M13: set up a new session while ready (requests wait, parked): with
        ``initialize`` when the era is known to be the handshake's, else probing."""
        self._s.path.holding = True
        self._set_version(None)
        self._probe_retried = False
        deadline = now + self._s.options.startup_timeout
        if self._s.era == "legacy":
            self._send_initialize(now, deadline=deadline)
        else:
            self._send_discover(now, self._modern_version(), deadline=deadline)

    def reconnect(self, now: float) -> None:
        """L8: the host asks for a new session now. While ready, the session is given
        up (the engine has already failed what ran on it) and a new one set up;
        while a new session or a start-up attempt waits for its retry, it goes now.
        Until that attempt ends, the engine's availability is unknown (``None``)."""
        s = self._s
        if s.state is SessionState.CLOSED:
            return
        s.reconnecting = True
        s.last_error = None  # the reason of before is not the answer to this attempt
        if s.state is not SessionState.READY:
            s.retry_now(now)
        elif not s.path.holding:
            s.session_expired([], now)
        elif self._reinit_at is not None:
            self._reinit_at = None
            self.resetup(now)

    def _setup_failed(self, error: McpError, now: float) -> None:
        """A handshake step failed: a start-up attempt, or a re-setup while ready."""
        if self._s.path.holding:
            self._resetup_failed(error, now)
        else:
            self.fail_start(error, now)

    def _finish_resetup(self, now: float) -> None:
        """H6: the new session is up; send what was waiting, once, then re-list: the
        new session may offer other tools than the old one."""
        self._reinit_failures = 0
        self._s.last_error = None
        self._s.reconnecting = False
        self._s.cache.forget()  # E7: answers of the old session are not reused
        self._s.path.release()
        if self._s.modern or "tools" in self._s.server_capabilities:
            self._s.tools.queue_refresh(-1, now)
        self._set_log_level(now)
        self._s.subscriptions.resubscribe(now)  # F2: the new session knows none of them
        self._s.listener.maybe_listen(now)

    def _set_log_level(self, now: float) -> None:
        """F8: in the handshake era, ask for the host's log level once a session is
        up, when the host gave one and the server logs (at 2026-07-28 every
        request's envelope carries it instead)."""
        level = self._s.options.log_level
        if level is None or self._s.modern:
            return
        if "logging" not in self._s.server_capabilities:
            _log.debug("%s the server declares no logging: no log level asked", self._s.tag)
            return
        self._s.path.issue(
            SET_LEVEL,
            {"level": level},
            now,
            on_done=_level_set,
            on_failed=self._level_refused,
            deadline=now + self._s.options.call_timeout,
        )

    def _level_refused(self, pending: Pending, error: McpError, now: float) -> None:
        _log.info("server %r: logging/setLevel failed: %s", self._s.options.server_name, error)

    def _set_version(self, version: str | None) -> None:
        self._s.protocol_version = version
        self._s.path.modern_version = version if self._s.modern else None

    def _modern_version(self) -> str:
        protocol = self._s.options.protocol
        return protocol if protocol in MODERN_VERSIONS else MODERN_VERSIONS[0]

    def _handshake_version(self) -> str:
        protocol = self._s.options.protocol
        return (
            protocol if protocol in SUPPORTED_PROTOCOL_VERSIONS else SUPPORTED_PROTOCOL_VERSIONS[0]
        )

    def _send_discover(self, now: float, version: str, *, deadline: float | None = None) -> None:
        """E1, M1: the probe: server/discover at the newest revision, fully stamped."""
        _log.debug(
            "%s start-up attempt %d: server/discover at protocol version %s",
            self._s.tag,
            self._s.failures + 1,
            version,
        )
        self._s.protocol_version = version  # the probe's headers and envelope use it
        self._s.path.issue(
            DISCOVER,
            envelope(
                None,
                version,
                self._s.options.client_name,
                self._s.options.client_version,
                self._s.options.log_level,
                capabilities=self._s.path.capabilities,
            ),
            now,
            on_done=self._discovered,
            on_failed=self._probe_failed,
            on_refused=self.probe_refused,
            deadline=deadline,
        )

    def _discovered(self, pending: Pending, result: object, now: float) -> None:
        verdict = discover_verdict(result)
        if verdict.kind != "modern":
            self._fall_back(now, "server/discover named no revision this client speaks")
            return
        assert verdict.version is not None
        self._s.era = "modern"
        self._set_version(verdict.version)
        self._s.server_capabilities = dict(verdict.capabilities or {})
        self._s.server_info = dict(verdict.server_info or {})
        self._s.instructions = _instructions(result)
        _log.debug(
            "%s server/discover id=%s answered in %.1f ms: protocol version %s",
            self._s.tag,
            pending.request.id,
            (now - pending.started) * 1000,
            verdict.version,
        )
        if self._s.path.holding:
            self._finish_resetup(now)
            return
        self._s.transition(SessionInput.DISCOVERED)
        self._s.tools.list_at_start(now)  # M17: even when no tools capability was advertised

    def probe_refused(self, pending: Pending, message: ErrorResponse, now: float) -> bool:
        """M4–M8: a JSON-RPC error answering the probe."""
        sent = self._s.protocol_version or MODERN_VERSIONS[0]
        verdict = probe_error_verdict(
            message.code, message.data, retried=self._probe_retried, sent=sent
        )
        if verdict.kind == "retry":
            assert verdict.version is not None
            self._probe_retried = True
            self._send_discover(now, verdict.version, deadline=pending.deadline)
        elif verdict.kind == "fail":
            assert verdict.error is not None
            self._setup_failed(verdict.error, now)
        else:
            self._fall_back(now, f"server/discover was refused with error {message.code}")
        return True

    def _probe_failed(self, pending: Pending, error: McpError, now: float) -> None:
        """M8, M10: a failed probe is an outage, or the handshake era's answer."""
        if probe_failure_is_outage(error):
            self._setup_failed(error, now)
        else:
            self._fall_back(now, str(error))

    def _fall_back(self, now: float, why: str) -> None:
        """E1: the handshake era, on the same URL (M3, M6, M8, M83)."""
        if self._pinned == "modern":
            self._setup_failed(
                HandshakeError(f"the server does not speak protocol version 2026-07-28 ({why})"),
                now,
            )
            return
        _log.debug("%s falling back to initialize: %s", self._s.tag, excerpt(why, 200))
        self._s.era = "legacy"
        self._set_version(None)
        if self._s.path.holding:
            self._send_initialize(now, deadline=now + self._s.options.startup_timeout)
            return
        self._s.transition(SessionInput.FELL_BACK)
        self._send_initialize(now, deadline=None)

    def _send_initialize(self, now: float, *, deadline: float | None) -> None:
        params = {
            "protocolVersion": self._handshake_version(),
            "capabilities": self._s.task_desk.handshake_capabilities(self._s.path.capabilities),
            "clientInfo": {
                "name": self._s.options.client_name,
                "version": self._s.options.client_version,
            },
        }
        self._s.path.issue(
            INITIALIZE,
            params,
            now,
            on_done=self._initialized,
            on_failed=self._initialize_failed,
            on_refused=self.initialize_refused,
            deadline=deadline,
        )

    def initialize_refused(self, pending: Pending, message: ErrorResponse, now: float) -> bool:
        if self._pinned is None and message.code == UNSUPPORTED_PROTOCOL_VERSION:
            self._s.era = None  # M13: the verdict stopped fitting; probe again
        detail = error_detail(message)
        self._setup_failed(HandshakeError(f"the server refused initialize ({detail})"), now)
        return True

    def _initialize_failed(self, pending: Pending, error: McpError, now: float) -> None:
        self._setup_failed(error, now)

    def _initialized(self, pending: Pending, result: object, now: float) -> None:
        try:
            version, capabilities, info = _parse_initialize_result(result)
        except HandshakeError as exc:
            self._setup_failed(exc, now)
            return
        self._set_version(version)
        if _log.isEnabledFor(_DEBUG):
            name, server_version = info.get("name"), info.get("version")
            _log.debug(
                "%s initialize id=%s answered in %.1f ms: protocol version %s, server %s%s%s",
                self._s.tag,
                pending.request.id,
                (now - pending.started) * 1000,
                version,
                f"'{excerpt(name, 60)}'" if isinstance(name, str) else "(unnamed)",
                f" version '{excerpt(server_version, 30)}'"
                if isinstance(server_version, str)
                else "",
                "; a new session replaces the expired one" if self._s.path.holding else "",
            )
        self._s.path.outgoing.append(Notification(method="notifications/initialized"))
        self._s.server_capabilities = capabilities
        self._s.server_info = info
        self._s.instructions = _instructions(result)
        if self._s.path.holding:
            self._finish_resetup(now)
            return
        self._s.transition(SessionInput.INIT_SUCCEEDED)
        if "tools" in capabilities:
            self._s.tools.list_at_start(now)
        else:
            # P3: no tools capability, nothing to list.
            self._s.tools.catalogue = self._s.tools.listed = Catalogue.from_listing(
                self._s.options.server_name, [], separator=self._s.options.separator
            )
            self.listed_at_start(self._s.tools.catalogue, 0, now)

    def fail_start(self, error: McpError, now: float) -> None:
        """L3, L4: this start-up attempt failed; the next one starts after the backoff."""
        path = self._s.path
        for request_id, pending in list(path.pending.items()):
            path.take(request_id)
            if pending.kind is TOOLS_LIST:
                path.remember_abandoned(request_id)
                path.dropped.append(request_id)
        self._s.tools.clear()
        self._startup_deadline = None
        # M13: a failed start-up drops a verdict the host did not pin, in either
        # direction: the next attempt probes again.
        self._s.era = self._pinned
        self._s.failures += 1
        self._s.last_error = error
        self._s.reconnecting = False
        delay = backoff_delay(
            self._s.failures,
            first=self._s.options.backoff_first,
            maximum=self._s.options.backoff_max,
        )
        self._retry_at = now + delay
        _log.debug(
            "%s start-up attempt %d failed after %.1f ms: %s; retrying in %g s",
            self._s.tag,
            self._s.failures,
            (now - self._attempt_started) * 1000,
            error,
            delay,
        )
        self._s.transition(SessionInput.START_FAILED)
        self._s.events.append(
            StartFailed(error=error, failures=self._s.failures, retry_at=self._retry_at)
        )

    def _resetup_failed(self, error: McpError, now: float) -> None:
        """H6, L4: the new session could not be set up; try again after the backoff.

        The session stays re-initialising: requests keep waiting (parked), each
        within its own deadline, and none goes out without the new session.
        Meanwhile the server counts as unavailable, with this reason (L5).
        """
        self._reinit_failures += 1
        delay = backoff_delay(
            self._reinit_failures,
            first=self._s.options.backoff_first,
            maximum=self._s.options.backoff_max,
        )
        self._reinit_at = now + delay
        self._s.last_error = error
        self._s.reconnecting = False
        self._s.era = self._pinned  # M13: the next try probes again
        _log.info(
            "server %r: a new session could not be set up (%s); retrying in %g s",
            self._s.options.server_name,
            error,
            delay,
        )

    def listed_at_start(self, catalogue: Catalogue, pages: int, now: float) -> None:
        """The start-up listing is done: the server is ready (L2)."""
        self._startup_deadline = None
        self._s.failures = 0
        self._s.last_error = None
        self._s.reconnecting = False
        self._s.transition(SessionInput.LISTING_DONE)
        assert self._s.protocol_version is not None
        _log.debug(
            "%s ready: %d tools, protocol version %s, start-up took %.1f ms",
            self._s.tag,
            len(catalogue),
            self._s.protocol_version,
            (now - self._attempt_started) * 1000,
        )
        self._s.events.append(
            SessionReady(
                catalogue=catalogue,
                protocol_version=self._s.protocol_version,
                server_info=self._s.server_info,
            )
        )
        self._s.listener.maybe_listen(now)
        self._set_log_level(now)
        self._s.subscriptions.resubscribe(now)  # F2: after a restart, subscribe again


def _level_set(pending: Pending, result: object, now: float) -> None:
    _log.debug("logging/setLevel id=%s answered", pending.request.id)


def _parse_initialize_result(result: object) -> tuple[str, dict[str, Any], dict[str, Any]]:
    if not isinstance(result, dict):
        raise HandshakeError("the initialize result is not a JSON object")
    version = result.get("protocolVersion")
    if not isinstance(version, str):
        raise HandshakeError("the initialize result has no protocolVersion string")
    if version not in HANDSHAKE_VERSIONS:
        raise HandshakeError(
            f"the server chose protocol version {excerpt(version, 60)!r}, which this client "
            f"does not support (supported: {', '.join(HANDSHAKE_VERSIONS)})"
        )
    capabilities = result.get("capabilities")
    if not isinstance(capabilities, dict):
        capabilities = {}
    info = result.get("serverInfo")
    if not isinstance(info, dict):
        info = {}
    return version, capabilities, info


def _instructions(result: object) -> str | None:
    """F7: the server's instructions, as sent (untrusted; never put anywhere by us)."""
    value = result.get("instructions") if isinstance(result, dict) else None
    return value if isinstance(value, str) else None
