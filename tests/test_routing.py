"""Event routing is decided once, in the core: ``route`` names each event's waiter or
host callback, ``call_host`` runs a callback by one rule (issue 38 §2; K4, K9,
F2, F5, F8, Q2, L3). The drivers' own tests prove that they run what it says."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpcore import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    Cancelled,
    ElicitationCompleted,
    HostCallback,
    LogMessage,
    ProgressReceived,
    PromptsListChanged,
    RefreshFailed,
    RequestSucceeded,
    ResourcesListChanged,
    ResourceUpdated,
    SessionReady,
    StartFailed,
    StateChange,
    ToolsListChanged,
    ToolsRefreshed,
    TransportError,
    WakeCall,
    WakeRefresh,
    call_host,
    route,
)

SERVER = "weather"
ERROR = TransportError("connection refused")
OUTPUT: Any = object()  # a ToolOutput, as far as routing cares
REPORT: Any = object()  # a SyncReport
CATALOGUE: Any = object()


def test_a_call_or_request_that_ended_wakes_its_caller_with_its_outcome() -> None:
    assert route(CallSucceeded(call_id=3, output=OUTPUT), server=SERVER) == WakeCall(3, OUTPUT)
    assert route(RequestSucceeded(call_id=4, value=[1]), server=SERVER) == WakeCall(4, [1])
    assert route(CallFailed(call_id=5, error=ERROR), server=SERVER) == WakeCall(5, ERROR)
    cancelled = route(CallCancelled(call_id=6, reason="timed out"), server=SERVER)
    assert isinstance(cancelled, WakeCall) and cancelled.call_id == 6
    assert isinstance(cancelled.outcome, Cancelled) and cancelled.outcome.server == SERVER


def test_progress_goes_to_the_callers_own_callback() -> None:
    event = ProgressReceived(call_id=7, progress=1.0, total=4.0, message="one")
    assert route(event, server=SERVER) == HostCallback("on_progress", (1.0, 4.0, "one"), call_id=7)


def test_server_notices_go_to_the_host_option_that_hears_of_them() -> None:
    log = LogMessage(server=SERVER, level="info", logger=None, data="hi")
    assert route(log, server=SERVER) == HostCallback("on_log", (log,))
    updated = ResourceUpdated(server=SERVER, uri="file:///a")
    assert route(updated, server=SERVER) == HostCallback("on_resource_updated", (updated,))
    for changed, what in (
        (ToolsListChanged(), "tools"),
        (ResourcesListChanged(), "resources"),
        (PromptsListChanged(), "prompts"),
    ):
        assert route(changed, server=SERVER) == HostCallback("on_list_changed", (SERVER, what))
    done = ElicitationCompleted(server=SERVER, elicitation_id="asked-1")
    assert route(done, server=SERVER) == HostCallback(
        "on_elicitation_complete", (SERVER, "asked-1")
    )


def test_a_refresh_wakes_its_caller_and_the_engines_own_relist_wakes_no_one() -> None:
    refreshed = ToolsRefreshed(refresh_id=2, catalogue=CATALOGUE, report=REPORT)
    assert route(refreshed, server=SERVER) == WakeRefresh(2, REPORT)
    assert route(RefreshFailed(refresh_id=3, error=ERROR), server=SERVER) == WakeRefresh(3, ERROR)
    own = ToolsRefreshed(refresh_id=None, catalogue=CATALOGUE, report=REPORT)
    assert route(own, server=SERVER) is None
    assert route(RefreshFailed(refresh_id=None, error=ERROR), server=SERVER) is None


def test_a_session_set_up_or_refused_is_a_state_change() -> None:
    ready = SessionReady(catalogue=CATALOGUE, protocol_version="2025-06-18")
    assert route(ready, server=SERVER) == StateChange()
    failed = StartFailed(error=ERROR, failures=1, retry_at=2.0)
    assert route(failed, server=SERVER) == StateChange(ERROR)


def test_call_host_logs_what_a_callback_raises_and_hands_back_only_an_awaitable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("mcpcore.test-routing")
    seen: list[tuple[object, ...]] = []
    call = HostCallback("on_list_changed", (SERVER, "tools"))
    assert call_host(lambda *args: seen.append(args), call, log) is None
    assert seen == [(SERVER, "tools")]
    assert call_host(lambda *args: "not awaitable", call, log) is None

    async def hook(*args: object) -> None:
        seen.append(args)

    coroutine = call_host(hook, call, log)
    assert coroutine is not None
    coroutine.close()  # type: ignore[attr-defined]

    def broken(*args: object) -> None:
        raise RuntimeError("host bug")

    with caplog.at_level(logging.ERROR, logger=log.name):
        assert call_host(broken, call, log) is None
    assert "on_list_changed callback failed" in caplog.text
