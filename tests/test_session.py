"""The session state machine (``_session.py``): handshake (P1–P3a), listing (T5, T6, P6),
calls (K1, K2, K4, K6, K7), server messages (P0, P4, P5), lifecycle (L2–L5) and the
transition table. Pure: messages and ``now`` in, messages and events out, a fake clock.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fake_peer import FakeServer, Reply, connect, tool
from mcpcore import (
    BackendError,
    CallTimeout,
    ErrorResponse,
    HandshakeError,
    LimitExceeded,
    LocalProtocolError,
    Notification,
    RemoteProtocolError,
    Request,
    Result,
    TransportError,
    UnknownTool,
    decode_message,
    encode_message,
)
from mcpcore.base._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    ProgressReceived,
    RefreshFailed,
    SessionReady,
    StartFailed,
    ToolsListChanged,
    ToolsRefreshed,
)
from mcpcore.base._render import OutputSchemaViolation
from mcpcore.base._tools import SyncReport
from mcpcore.engine._engine import Availability, StdioClientEngine
from mcpcore.session._session import (
    SUPPORTED_PROTOCOL_VERSIONS,
    TRANSITIONS,
    ClientSession,
    SessionInput,
    SessionOptions,
    SessionState,
)

NOW = 1000.0
INIT_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": "fake", "version": "1"},
}
TOOLS = [tool("echo"), tool("Slow_One")]


def opts(**kw: Any) -> SessionOptions:
    kw.setdefault("protocol", "legacy")  # the handshake era; 2026-07-28: test_modern.py
    return SessionOptions(server_name="srv", **kw)


def started(**kw: Any) -> tuple[ClientSession, Request]:
    session = ClientSession(opts(**kw))
    session.start(NOW)
    [init] = session.take_outgoing()
    assert isinstance(init, Request)
    return session, init


def ready(tools: list[Any] | None = None, **kw: Any) -> ClientSession:
    session, init = started(**kw)
    session.receive_message(Result(id=init.id, result=INIT_RESULT), NOW)
    _initialized, listing = session.take_outgoing()
    assert isinstance(listing, Request)
    session.receive_message(Result(id=listing.id, result={"tools": TOOLS if tools is None else tools}), NOW)
    assert session.state is SessionState.READY
    session.take_events()
    session.take_outgoing()
    return session


def only_request(session: ClientSession) -> Request:
    [message] = session.take_outgoing()
    assert isinstance(message, Request)
    return message


def cancellations(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        m.params
        for m in messages
        if isinstance(m, Notification) and m.method == "notifications/cancelled"
    ]


# --- handshake -------------------------------------------------------------------------


def test_p1_initialize_carries_newest_version_empty_capabilities_and_client_info() -> None:
    """P1: protocolVersion 2025-11-25, capabilities {} and clientInfo."""
    session, init = started()
    assert init.method == "initialize"
    assert isinstance(init.id, int)
    assert init.params == {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "mcpcore", "version": "0.1.0"},
    }
    assert session.state is SessionState.CONNECTING
    # on the wire too
    wire = json.loads(encode_message(init))
    assert wire["params"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26"])
def test_p2_supported_versions_are_accepted(version: str) -> None:
    """P2: every version of the handshake era is accepted and reported."""
    assert version in SUPPORTED_PROTOCOL_VERSIONS
    session, init = started()
    session.receive_message(Result(id=init.id, result={**INIT_RESULT, "protocolVersion": version}), NOW)
    _, listing = session.take_outgoing()
    session.receive_message(Result(id=listing.id, result={"tools": TOOLS}), NOW)  # type: ignore[union-attr]
    [event] = session.take_events()
    assert isinstance(event, SessionReady)
    assert event.protocol_version == version
    assert event.server_info == {"name": "fake", "version": "1"}
    assert session.protocol_version == version


@pytest.mark.parametrize("version", ["2024-11-05", "2026-07-28", "1.0"])
def test_p2_unsupported_version_fails_the_handshake_naming_it(version: str) -> None:
    """P2: HandshakeError naming the version the server chose.

    M84: initialize's answer must name a handshake version this client speaks; any other
    fails the handshake, naming it.
    """
    session, init = started()
    session.receive_message(Result(id=init.id, result={**INIT_RESULT, "protocolVersion": version}), NOW)
    [event] = session.take_events()
    assert isinstance(event, StartFailed)
    assert isinstance(event.error, HandshakeError)
    assert repr(version) in str(event.error)
    assert session.take_outgoing() == []  # no notifications/initialized
    assert session.state is SessionState.BACKOFF


@pytest.mark.parametrize(
    ("result", "words"),
    [
        ([], "not a JSON object"),
        ({"capabilities": {}}, "no protocolVersion"),
        ({"protocolVersion": 20251125}, "no protocolVersion"),
    ],
)
def test_p2_malformed_initialize_result_is_a_handshake_error(result: Any, words: str) -> None:
    session, init = started()
    session.receive_message(Result(id=init.id, result=result), NOW)
    [event] = session.take_events()
    assert isinstance(event, StartFailed) and isinstance(event.error, HandshakeError)
    assert words in str(event.error)


def test_p2_initialize_error_response_is_a_handshake_error() -> None:
    session, init = started()
    session.receive_message(ErrorResponse(id=init.id, code=-32602, message="bad\x1b[2J"), NOW)
    [event] = session.take_events()
    assert isinstance(event, StartFailed) and isinstance(event.error, HandshakeError)
    assert "-32602" in str(event.error)
    assert "\x1b" not in str(event.error) and "\\x1b[2J" in str(event.error)


def test_p3_initialized_then_tools_list() -> None:
    """P3: notifications/initialized, then tools/list (no cursor), in that order.

    M86: notifications/initialized goes before any other request.
    """
    session, init = started()
    session.receive_message(Result(id=init.id, result=INIT_RESULT), NOW)
    initialized, listing = session.take_outgoing()
    assert initialized == Notification(method="notifications/initialized")
    assert isinstance(listing, Request)
    assert listing.method == "tools/list" and listing.params is None
    assert session.state is SessionState.LISTING


def test_p3_no_tools_capability_means_no_listing() -> None:
    """P3: without the tools capability the session is ready with an empty catalogue."""
    session, init = started()
    session.receive_message(
        Result(id=init.id, result={"protocolVersion": "2025-06-18", "capabilities": None}), NOW
    )
    assert session.take_outgoing() == [Notification(method="notifications/initialized")]
    [event] = session.take_events()
    assert isinstance(event, SessionReady) and len(event.catalogue) == 0
    assert event.server_info == {}


def test_p3a_ping_answered_mid_handshake_and_nothing_else_sent() -> None:
    """P3a: a server ping before the initialize result gets {} and nothing else goes out."""
    session, init = started()
    session.receive_message(Request(id="s1", method="ping"), NOW)
    assert session.take_outgoing() == [Result(id="s1", result={})]
    # notifications before the initialize response are handled, and send nothing
    session.receive_message(Notification(method="notifications/tools/list_changed"), NOW)
    session.receive_message(
        Notification(method="notifications/message", params={"level": "info", "data": "hi"}), NOW
    )
    session.receive_message(Notification(method="notifications/progress", params={"progressToken": init.id, "progress": 1}), NOW)
    assert session.take_outgoing() == []
    assert session.take_events() == [ToolsListChanged()]
    assert session.state is SessionState.CONNECTING
    session.receive_message(Result(id=init.id, result=INIT_RESULT), NOW)
    assert session.take_outgoing()[0] == Notification(method="notifications/initialized")


def test_p3a_ping_mid_handshake_over_http_precedes_initialized() -> None:
    """P3a over HTTP: the ping arrives on the initialize stream; its answer is POSTed
    before notifications/initialized, and the handshake completes."""
    server = FakeServer()
    server.before_init_result = [
        {"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "debug", "data": "x"}},
    ]
    link = connect(server)
    posted = [s.message for s in server.seen if s.method == "POST"]
    assert posted[0]["method"] == "initialize"  # type: ignore[index]
    assert posted[1] == {"jsonrpc": "2.0", "id": "srv-ping", "result": {}}
    assert posted[2]["method"] == "notifications/initialized"  # type: ignore[index]
    assert link.of_type(SessionReady)


# --- listing ---------------------------------------------------------------------------


def test_t5_paging_follows_every_cursor() -> None:
    """T5: nextCursor is followed through every page; all tools land in the catalogue."""
    session, init = started()
    session.receive_message(Result(id=init.id, result=INIT_RESULT), NOW)
    _, page = session.take_outgoing()
    cursors = []
    for i, cursor in enumerate(["c1", "c2", None]):
        assert isinstance(page, Request)
        cursors.append(page.params)
        result: dict[str, Any] = {"tools": [tool(f"t{i}")]}
        if cursor:
            result["nextCursor"] = cursor
        session.receive_message(Result(id=page.id, result=result), NOW)
        if cursor:
            page = only_request(session)
    assert cursors == [None, {"cursor": "c1"}, {"cursor": "c2"}]
    [event] = session.take_events()
    assert isinstance(event, SessionReady)
    assert event.catalogue.ids() == ("srv/t0", "srv/t1", "srv/t2")


def _list_pages(session: ClientSession, pages: list[dict[str, Any]]) -> list[Any]:
    session.receive_message(Result(id=1, result=INIT_RESULT), NOW)
    _, page = session.take_outgoing()
    for result in pages:
        session.receive_message(Result(id=page.id, result=result), NOW)  # type: ignore[union-attr]
        out = [m for m in session.take_outgoing() if isinstance(m, Request)]
        if not out:
            break
        page = out[0]
    return session.take_events()


def test_t5_cursor_loop_is_a_remote_protocol_error() -> None:
    """T5: a cursor seen before is a protocol error, not a loop."""
    session, _ = started()
    events = _list_pages(session, [{"tools": [], "nextCursor": "a"}, {"tools": [], "nextCursor": "b"}, {"tools": [], "nextCursor": "a"}])
    [event] = events
    assert isinstance(event, StartFailed)
    assert type(event.error) is RemoteProtocolError
    assert "cursor loop" in str(event.error)


def test_p6_page_bound_is_limit_exceeded_naming_max_pages() -> None:
    """T5, P6: more pages than max_pages."""
    session, _ = started(max_pages=2)
    events = _list_pages(session, [{"tools": [], "nextCursor": str(i)} for i in range(5)])
    [event] = events
    assert isinstance(event.error, LimitExceeded)
    assert event.error.limit_name == "max_pages" and "max_pages" in str(event.error)


def test_p6_tool_bound_is_limit_exceeded_naming_max_tools() -> None:
    """P6: more tools than max_tools, across pages."""
    session, _ = started(max_tools=3)
    events = _list_pages(
        session,
        [{"tools": [tool("a"), tool("b")], "nextCursor": "x"}, {"tools": [tool("c"), tool("d")]}],
    )
    [event] = events
    assert isinstance(event.error, LimitExceeded)
    assert event.error.limit_name == "max_tools"


@pytest.mark.parametrize(
    ("result", "words"),
    [
        ("nope", "not a JSON object"),
        ({"tools": {}}, "no 'tools' array"),
        ({"tools": [], "nextCursor": 3}, "nextCursor that is not a string"),
    ],
)
def test_t5_malformed_listing_fails_the_start(result: Any, words: str) -> None:
    session, _ = started()
    [event] = _list_pages(session, [result])
    assert isinstance(event, StartFailed) and isinstance(event.error, RemoteProtocolError)
    assert words in str(event.error)


def test_t5_empty_cursor_ends_the_listing_and_listing_error_fails_start() -> None:
    session, _ = started()
    [event] = _list_pages(session, [{"tools": [tool("a")], "nextCursor": ""}])
    assert isinstance(event, SessionReady)
    session, _ = started()
    session.receive_message(Result(id=1, result=INIT_RESULT), NOW)
    _, page = session.take_outgoing()
    session.receive_message(ErrorResponse(id=page.id, code=-1, message="no"), NOW)  # type: ignore[union-attr]
    [event] = session.take_events()
    assert isinstance(event, StartFailed) and "tools/list failed (-1: no)" in str(event.error)


def test_p6_catalogue_bound_during_start_fails_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalogue that cannot be built (bounded by max_tools) fails the attempt."""
    from mcpcore.session import _session

    def refuse(*args: Any, **kw: Any) -> Any:
        raise LimitExceeded("max_tools", 0, "test")

    session, _ = started()
    monkeypatch.setattr(_session.Catalogue, "from_listing", refuse)
    [event] = _list_pages(session, [{"tools": []}])
    assert isinstance(event, StartFailed) and isinstance(event.error, LimitExceeded)
    assert session.state is SessionState.BACKOFF


# --- server requests and notifications ----------------------------------------------------


@pytest.mark.parametrize("rid", [7, "abc"])
def test_p4_ping_gets_empty_result(rid: int | str) -> None:
    """M92: a handshake-era server's ping is answered."""
    session = ready()
    session.receive_message(Request(id=rid, method="ping"), NOW)
    assert session.take_outgoing() == [Result(id=rid, result={})]


@pytest.mark.parametrize("method", ["sampling/createMessage", "elicitation/create", "roots/list", "x" * 500])
def test_p4_other_server_requests_get_method_not_found(method: str) -> None:
    """M92: every other handshake-era server request is refused."""
    session = ready()
    session.receive_message(Request(id=9, method=method, params={"a": 1}), NOW)
    [reply] = session.take_outgoing()
    assert isinstance(reply, ErrorResponse)
    assert reply.id == 9 and reply.code == -32601
    assert len(reply.message) < 200
    assert session.take_events() == []


def test_k2_progress_is_routed_to_its_call() -> None:
    """P4, K2: notifications/progress with the call's token → ProgressReceived."""
    session = ready()
    a = session.call("srv/echo", None, NOW)
    b = session.call("srv/echo", None, NOW)
    session.take_outgoing()
    session.receive_message(
        Notification(method="notifications/progress", params={"progressToken": b, "progress": 2, "total": 10, "message": "half"}),
        NOW,
    )
    session.receive_message(Notification(method="notifications/progress", params={"progressToken": a, "progress": 0.5}), NOW)
    # ignored: unknown token, a bool token, a non-number progress, no params
    for params in (
        {"progressToken": 999, "progress": 1},
        {"progressToken": True, "progress": 1},
        {"progressToken": a, "progress": "1"},
        {"progressToken": str(a), "progress": 1},
        None,
    ):
        session.receive_message(Notification(method="notifications/progress", params=params), NOW)
    assert session.take_events() == [
        ProgressReceived(call_id=b, progress=2.0, total=10.0, message="half"),
        ProgressReceived(call_id=a, progress=0.5, total=None, message=None),
    ]
    assert session.take_outgoing() == []


def test_k2_progress_does_not_extend_the_deadline_by_default() -> None:
    session = ready(call_timeout=10)
    cid = session.call("srv/echo", None, NOW)
    session.receive_message(Notification(method="notifications/progress", params={"progressToken": cid, "progress": 1}), NOW + 9)
    assert session.next_deadline() == NOW + 10


def test_k2_progress_extends_the_deadline_up_to_call_timeout_max() -> None:
    """K2: with extend_on_progress, each progress moves the deadline to now + budget,
    never past start + call_timeout_max."""
    session = ready(call_timeout=10, extend_on_progress=True, call_timeout_max=25)
    cid = session.call("srv/echo", None, NOW)
    session.take_outgoing()

    def progress(at: float) -> None:
        session.receive_message(
            Notification(method="notifications/progress", params={"progressToken": cid, "progress": at}), at
        )

    progress(NOW + 8)
    assert session.next_deadline() == NOW + 18
    progress(NOW + 17)
    assert session.next_deadline() == NOW + 25  # capped
    session.take_events()
    session.handle_timer(NOW + 24.999)
    assert session.take_events() == []
    session.handle_timer(NOW + 25)
    [event] = session.take_events()
    assert isinstance(event, CallFailed) and isinstance(event.error, CallTimeout)


def test_k2_progress_never_shortens_a_longer_per_call_deadline() -> None:
    """K2: progress may push a deadline out; it must never pull it in."""
    session = ready(extend_on_progress=True, call_timeout_max=100)
    cid = session.call("srv/echo", None, NOW, timeout=500)
    session.receive_message(
        Notification(method="notifications/progress", params={"progressToken": cid, "progress": 1}), NOW + 1
    )
    assert session.next_deadline() == NOW + 500


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("debug", logging.DEBUG),
        ("info", logging.INFO),
        ("notice", logging.INFO),
        ("warning", logging.WARNING),
        ("error", logging.ERROR),
        ("critical", logging.CRITICAL),
        ("alert", logging.CRITICAL),
        ("emergency", logging.CRITICAL),
        ("bogus", logging.INFO),
    ],
)
def test_p4_x1_server_log_goes_to_logging_at_its_level_escaped(
    level: str, expected: int, caplog: pytest.LogCaptureFixture
) -> None:
    """P4, X1: notifications/message → the mcpcore.server logger, control characters escaped."""
    session = ready()
    caplog.set_level(logging.DEBUG, logger="mcpcore.server")
    session.receive_message(
        Notification(method="notifications/message", params={"level": level, "logger": "db\x07", "data": "hi\x1b[2J"}),
        NOW,
    )
    [record] = [r for r in caplog.records if r.name == "mcpcore.server"]
    assert record.levelno == expected
    assert record.getMessage() == "[srv:db\\x07] hi\\x1b[2J"
    assert session.take_outgoing() == [] and session.take_events() == []


def test_p4_server_log_structured_data_and_disabled_level(caplog: pytest.LogCaptureFixture) -> None:
    session = ready()
    caplog.set_level(logging.WARNING, logger="mcpcore.server")
    session.receive_message(Notification(method="notifications/message", params={"level": "info", "data": "x"}), NOW)
    session.receive_message(
        Notification(method="notifications/message", params={"level": "error", "data": {"k": "é"}}), NOW
    )
    [record] = [r for r in caplog.records if r.name == "mcpcore.server"]
    assert record.getMessage() == '[srv] {"k": "é"}'


def test_p4_other_notifications_are_ignored() -> None:
    session = ready()
    session.receive_message(Notification(method="notifications/resources/updated", params={"uri": "x"}), NOW)
    assert session.take_outgoing() == [] and session.take_events() == []


def test_t6_list_changed_is_an_event_without_relisting_by_default() -> None:
    session = ready()
    session.receive_message(Notification(method="notifications/tools/list_changed"), NOW)
    assert session.take_events() == [ToolsListChanged()]
    assert session.take_outgoing() == []


def test_t6_list_changed_with_auto_refresh_relists_and_reports_the_diff() -> None:
    """T6: auto_refresh re-lists on list_changed; ToolsRefreshed (refresh_id None) with a SyncReport."""
    session = ready(tools=[tool("a"), tool("b"), tool("c")], auto_refresh=True)
    session.receive_message(Notification(method="notifications/tools/list_changed"), NOW)
    listing = only_request(session)
    assert listing.method == "tools/list"
    # a second notice while a re-list runs queues one more (not two)
    session.receive_message(Notification(method="notifications/tools/list_changed"), NOW)
    assert session.take_outgoing() == []
    session.receive_message(
        Result(id=listing.id, result={"tools": [tool("a"), tool("b", description="new"), tool("d")]}), NOW
    )
    events = session.take_events()
    assert events[:2] == [ToolsListChanged(), ToolsListChanged()]
    refreshed = events[2]
    assert isinstance(refreshed, ToolsRefreshed) and refreshed.refresh_id is None
    assert refreshed.report == SyncReport(
        added=("srv/d",),
        removed=("srv/c",),
        changed=("srv/b",),
        untouched=("srv/a",),
        pins=refreshed.report.pins,
    )
    # U1 (pins="warn", the default): b's new description is also a change of its pin
    assert [change.tool_id for change in refreshed.report.pins] == ["srv/b"]
    assert session.catalogue is refreshed.catalogue
    # the queued re-list runs now
    again = only_request(session)
    session.receive_message(Result(id=again.id, result={"tools": []}), NOW)
    [last] = session.take_events()
    assert isinstance(last, ToolsRefreshed) and last.report.removed == ("srv/a", "srv/b", "srv/d")
    assert session.is_idle


def test_t6_refresh_reports_and_queues() -> None:
    """T6: refresh() → ToolsRefreshed with its id; a second refresh waits for the first."""
    session = ready()
    r1 = session.refresh(NOW)
    first = only_request(session)
    r2 = session.refresh(NOW)
    assert (r1, r2) == (1, 2)
    assert session.take_outgoing() == []
    session.receive_message(Result(id=first.id, result={"tools": TOOLS}), NOW)
    [event] = session.take_events()
    assert isinstance(event, ToolsRefreshed) and event.refresh_id == r1
    assert event.report.untouched == ("srv/echo", "srv/slow_one")
    second = only_request(session)
    session.receive_message(ErrorResponse(id=second.id, code=-32603, message="boom"), NOW)
    [failed] = session.take_events()
    assert isinstance(failed, RefreshFailed) and failed.refresh_id == r2
    assert len(session.catalogue) == 2  # type: ignore[arg-type]
    assert session.state is SessionState.READY


def test_t6_refresh_times_out_after_call_timeout() -> None:
    session = ready(call_timeout=5)
    rid = session.refresh(NOW)
    session.take_outgoing()
    assert session.next_deadline() == NOW + 5
    session.handle_timer(NOW + 5)
    [event] = session.take_events()
    assert isinstance(event, RefreshFailed) and event.refresh_id == rid
    assert isinstance(event.error, CallTimeout) and "tools/list" in str(event.error)


def test_t6_automatic_refresh_failure_and_bad_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcore.session import _session

    session = ready(auto_refresh=True)
    session.receive_message(Notification(method="notifications/tools/list_changed"), NOW)
    listing = only_request(session)
    monkeypatch.setattr(
        _session.Catalogue, "from_listing", lambda *a, **k: (_ for _ in ()).throw(LimitExceeded("max_tools", 1, "t"))
    )
    session.receive_message(Result(id=listing.id, result={"tools": []}), NOW)
    events = session.take_events()
    assert isinstance(events[-1], RefreshFailed) and events[-1].refresh_id is None


# --- calls -----------------------------------------------------------------------------


def test_k1_call_carries_original_name_and_empty_arguments() -> None:
    """K1: the tool's original name; {} when no arguments; a progress token."""
    session = ready()
    cid = session.call("srv/slow_one", None, NOW)
    request = only_request(session)
    assert request.id == cid
    assert request.method == "tools/call"
    assert request.params == {"name": "Slow_One", "arguments": {}, "_meta": {"progressToken": cid}}
    cid2 = session.call("srv/echo", {"x": [1]}, NOW)
    assert only_request(session).params["arguments"] == {"x": [1]}  # type: ignore[index]
    assert cid2 == cid + 1


def test_k1_bad_arguments_and_timeouts_are_local_errors() -> None:
    session = ready()
    with pytest.raises(LocalProtocolError):
        session.call("srv/echo", [1, 2], NOW)  # type: ignore[arg-type]
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(LocalProtocolError):
            session.call("srv/echo", None, NOW, timeout=bad)
    assert session.take_outgoing() == []


def test_k7_unknown_tool_fails_without_io() -> None:
    """K7: UnknownTool at once, nothing sent."""
    session = ready()
    with pytest.raises(UnknownTool) as info:
        session.call("srv/nope", None, NOW)
    assert info.value.tool_id == "srv/nope"
    assert session.take_outgoing() == [] and session.is_idle


def test_k4_success_and_is_error() -> None:
    """K4: a result → CallSucceeded; isError → CallFailed(BackendError) with the rendered text."""
    session = ready()
    ok = session.call("srv/echo", None, NOW)
    bad = session.call("srv/echo", None, NOW)
    session.receive_message(Result(id=ok, result={"content": [{"type": "text", "text": "fine"}]}), NOW)
    session.receive_message(
        Result(id=bad, result={"content": [{"type": "text", "text": "it broke"}], "isError": True}), NOW
    )
    first, second = session.take_events()
    assert isinstance(first, CallSucceeded) and first.output.text == "fine"
    assert isinstance(second, CallFailed) and isinstance(second.error, BackendError)
    assert second.error.text == "it broke" and second.error.tool == "srv/echo"


def test_k4_error_response_non_object_result_and_schema_violation() -> None:
    schema_tool = tool("typed", outputSchema={"type": "object", "required": ["n"]})
    session = ready(tools=[tool("echo"), schema_tool])
    a = session.call("srv/echo", None, NOW)
    b = session.call("srv/echo", None, NOW)
    c = session.call("srv/typed", None, NOW)
    session.receive_message(ErrorResponse(id=a, code=-32000, message="nope"), NOW)
    session.receive_message(Result(id=b, result=[1]), NOW)
    session.receive_message(Result(id=c, result={"content": [], "structuredContent": {}}), NOW)
    ea, eb, ec = session.take_events()
    assert isinstance(ea, CallFailed) and isinstance(ea.error, BackendError)
    assert "JSON-RPC error -32000: nope" in str(ea.error)
    assert isinstance(eb, CallFailed) and type(eb.error) is RemoteProtocolError
    assert isinstance(ec, CallFailed) and isinstance(ec.error, OutputSchemaViolation)


def test_k2_k6_deadline_fires_at_exactly_300_s_and_cancels_once() -> None:
    """K2, K6: default 300 s; at 299.999 s nothing, at 300.0 s CallFailed(CallTimeout)
    naming the tool and budget, then one notifications/cancelled with the id and a reason."""
    session = ready()
    cid = session.call("srv/echo", {}, NOW)
    session.take_outgoing()
    assert session.next_deadline() == NOW + 300
    session.handle_timer(NOW + 299.999)
    assert session.take_events() == [] and session.take_outgoing() == []
    session.handle_timer(NOW + 300.0)
    [event] = session.take_events()
    assert isinstance(event, CallFailed) and event.call_id == cid
    assert isinstance(event.error, CallTimeout)
    assert event.error.tool == "srv/echo" and event.error.budget == 300
    assert "'srv/echo'" in str(event.error) and "300 s" in str(event.error)
    assert cancellations(session.take_outgoing()) == [{"requestId": cid, "reason": "timed out"}]
    assert session.take_abandoned() == [cid]
    session.handle_timer(NOW + 400)
    session.receive_message(Result(id=cid, result={"content": []}), NOW + 401)  # late: dropped
    assert session.take_events() == [] and session.take_outgoing() == []
    assert session.next_deadline() is None and session.is_idle


def test_k2_per_call_timeout() -> None:
    session = ready(call_timeout=30)
    cid = session.call("srv/echo", None, NOW, timeout=2.5)
    assert session.next_deadline() == NOW + 2.5
    session.handle_timer(NOW + 2.5)
    [event] = session.take_events()
    assert event.error.budget == 2.5 and "2.5 s" in str(event.error)  # type: ignore[union-attr]
    assert event.call_id == cid  # type: ignore[union-attr]


def test_k6_cancel_sends_one_notice_and_drops_the_late_response() -> None:
    """K6: cancel() → CallCancelled and exactly one notifications/cancelled; a late response is ignored.

    M89: in the handshake era, cancelling is notifications/cancelled.
    """
    session = ready()
    cid = session.call("srv/echo", None, NOW)
    session.take_outgoing()
    assert session.cancel(cid, NOW, "user gave up") is True
    assert session.take_events() == [CallCancelled(call_id=cid, reason="user gave up")]
    assert cancellations(session.take_outgoing()) == [{"requestId": cid, "reason": "user gave up"}]
    assert session.take_abandoned() == [cid]
    assert session.cancel(cid, NOW) is False
    assert session.cancel(12345, NOW) is False
    session.receive_message(Result(id=cid, result={"content": []}), NOW)
    assert session.take_events() == [] and session.take_outgoing() == []


def test_k6_initialize_is_never_cancelled() -> None:
    """K6: neither closing nor the start-up deadline sends notifications/cancelled for initialize.

    M14: initialize is never cancelled (the 2026-07-28 probe neither:
    tests/test_modern_rules.py).
    """
    session, init = started()
    assert session.cancel(init.id, NOW) is False  # type: ignore[arg-type]
    session.handle_timer(NOW + 120)
    assert cancellations(session.take_outgoing()) == []
    session, init = started()
    session.close(NOW)
    assert session.take_outgoing() == [] and session.state is SessionState.CLOSED


def test_p5_unknown_response_ids_are_ignored(caplog: pytest.LogCaptureFixture) -> None:
    """P5: an unknown id (int, string, null) is ignored with a debug log."""
    caplog.set_level(logging.DEBUG, logger="mcpcore.session")
    session = ready()
    cid = session.call("srv/echo", None, NOW)
    session.take_outgoing()
    for message in (
        Result(id=999, result={}),
        Result(id="abc\x1b", result={}),
        ErrorResponse(id=None, code=-32700, message="parse error"),
    ):
        session.receive_message(message, NOW)
    assert session.take_events() == [] and session.take_outgoing() == []
    assert session.pending_call_ids == [cid]
    assert any("unknown id" in r.getMessage() for r in caplog.records)
    assert all("\x1b" not in r.getMessage() for r in caplog.records)


def test_p0_ids_are_integers_from_a_counter_never_reused() -> None:
    """P0: across failed attempts, retries, listing and calls, ids only increase."""
    session, init = started()
    ids = [init.id]
    session.receive_message(ErrorResponse(id=init.id, code=-1, message="no"), NOW)
    session.handle_timer(NOW + 1)
    init2 = only_request(session)
    ids.append(init2.id)
    session.receive_message(Result(id=init2.id, result=INIT_RESULT), NOW + 1)
    _, listing = session.take_outgoing()
    ids.append(listing.id)  # type: ignore[union-attr]
    session.receive_message(Result(id=listing.id, result={"tools": TOOLS}), NOW + 1)  # type: ignore[union-attr]
    for _ in range(3):
        ids.append(session.call("srv/echo", None, NOW + 2))
    session.take_outgoing()
    session.refresh(NOW + 2)
    ids.append(only_request(session).id)
    assert all(type(i) is int for i in ids)
    assert ids == sorted(set(ids)) == list(range(1, len(ids) + 1))


def test_p0_server_request_ids_are_kept_apart_from_ours() -> None:
    """P0: a server request with id 1 while our request 1 is pending does not resolve ours."""
    session, init = started()
    assert init.id == 1
    session.receive_message(Request(id=1, method="ping"), NOW)
    session.receive_message(Request(id=1, method="roots/list"), NOW)
    ping_reply, roots_reply = session.take_outgoing()
    assert ping_reply == Result(id=1, result={})
    assert isinstance(roots_reply, ErrorResponse) and roots_reply.code == -32601
    assert session.take_events() == [] and session.state is SessionState.CONNECTING
    session.receive_message(Result(id=1, result=INIT_RESULT), NOW)
    assert session.state is SessionState.LISTING


# --- lifecycle ---------------------------------------------------------------------------


def test_l2_startup_is_bounded_by_120_s() -> None:
    """L2: handshake and listing within 120 s, else StartFailed(CallTimeout)."""
    session, init = started()
    assert session.next_deadline() == NOW + 120
    session.receive_message(Result(id=init.id, result=INIT_RESULT), NOW + 60)
    session.take_outgoing()
    session.handle_timer(NOW + 119.999)
    assert session.take_events() == []
    session.handle_timer(NOW + 120)
    [event] = session.take_events()
    assert isinstance(event, StartFailed) and isinstance(event.error, CallTimeout)
    assert "120 s" in str(event.error)
    assert event.failures == 1 and event.retry_at == NOW + 121
    assert session.take_abandoned() == [2]  # the tools/list exchange is dropped
    assert session.state is SessionState.BACKOFF


def test_l4_retries_after_1_2_4_8_16_32_60_60_s_then_ready() -> None:
    """L4: the backoff schedule, then a later success → SessionReady and the count resets."""
    session, init = started()
    now = NOW
    delays = []
    for _ in range(8):
        session.receive_message(ErrorResponse(id=init.id, code=-1, message="down"), now)
        [event] = session.take_events()
        assert isinstance(event, StartFailed)
        delays.append(event.retry_at - now)
        session.handle_timer(event.retry_at - 0.001)
        assert session.take_outgoing() == []
        now = event.retry_at
        session.handle_timer(now)
        init = only_request(session)
        assert init.method == "initialize"
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]
    assert session.failures == 8
    session.receive_message(Result(id=init.id, result=INIT_RESULT), now)
    _, listing = session.take_outgoing()
    session.receive_message(Result(id=listing.id, result={"tools": TOOLS}), now)  # type: ignore[union-attr]
    [event] = session.take_events()
    assert isinstance(event, SessionReady)
    assert session.failures == 0 and session.last_error is None


def test_l3_availability_none_then_reason_then_ok() -> None:
    """L3, L4: None while the first attempt runs, unavailable with the reason after a failure,
    ok after a later success."""
    server = FakeServer()
    attempts = []

    def stall_first(seen: Any) -> Reply | None:
        if seen.message and seen.message.get("method") == "initialize":
            attempts.append(seen)
            if len(attempts) == 1:
                return Reply(200, [(b"content-type", b"text/event-stream")], [], finish="stall")
        return None

    server.hook = stall_first
    link = connect(server)
    assert link.engine.availability is None
    link.advance(119.999)
    assert link.engine.availability is None
    link.advance(0.001)
    availability = link.engine.availability
    assert availability is not None and availability.ok is False
    assert "did not finish within 120 s" in availability.reason  # type: ignore[operator]
    [failed] = link.of_type(StartFailed)
    assert failed.retry_at == link.now + 1
    assert link.aborted  # the stalled initialize exchange was dropped
    link.advance(1)
    assert link.engine.availability == Availability(True)
    assert link.of_type(SessionReady)


def test_l5_failure_after_ready_is_a_call_error_and_stays_ready() -> None:
    """L5: once ready, a broken exchange fails the call; the state stays READY."""
    server = FakeServer(priming=False)
    server.hook = lambda seen: (
        Reply(200, [(b"content-type", b"text/event-stream")], [], finish="fail")
        if seen.message and seen.message.get("method") == "tools/call"
        else None
    )
    link = connect(server)
    cid = link.engine.call("srv/echo", None, link.now)
    link.pump()
    [failed] = link.of_type(CallFailed)
    assert failed.call_id == cid and isinstance(failed.error, TransportError)
    assert "the connection was closed or reset" in str(failed.error)
    assert link.engine.state is SessionState.READY
    assert link.engine.availability == Availability(True)
    assert not link.of_type(StartFailed)


def test_l6_close_cancels_calls_and_ignores_later_input() -> None:
    session = ready()
    a = session.call("srv/echo", None, NOW)
    session.take_outgoing()
    session.close(NOW)
    assert session.take_events() == [CallCancelled(call_id=a, reason="the client is closing")]
    assert cancellations(session.take_outgoing()) == [{"requestId": a, "reason": "the client is closing"}]
    session.receive_message(Request(id=1, method="ping"), NOW)
    assert session.take_outgoing() == []
    session.close(NOW)  # idempotent
    assert session.state is SessionState.CLOSED and session.next_deadline() is None
    with pytest.raises(LocalProtocolError):
        session.call("srv/echo", None, NOW)


def test_l5_availability_after_close() -> None:
    link = connect()
    link.engine.close(link.now)
    assert link.engine.availability == Availability(False, "the client is closed")
    link.engine.close(link.now)  # idempotent


def test_transport_lost_fails_every_request() -> None:
    session = ready()
    a = session.call("srv/echo", None, NOW)
    b = session.call("srv/echo", None, NOW)
    session.transport_lost(TransportError("gone"), NOW)
    assert [type(e) for e in session.take_events()] == [CallFailed, CallFailed]
    assert session.pending_call_ids == [] and a != b
    session.request_failed(a, TransportError("again"), NOW)  # unknown now: ignored
    assert session.take_events() == []


# --- the transition table (h2 style) -------------------------------------------------------


@given(st.sampled_from(list(SessionState)), st.sampled_from(list(SessionInput)))
def test_table_every_pair_outside_transitions_raises(state: SessionState, event: SessionInput) -> None:
    """Every (state, input) not in TRANSITIONS raises LocalProtocolError; the rest move as listed."""
    session = ClientSession()
    session.state = state
    expected = TRANSITIONS.get(state, {}).get(event)
    if expected is None:
        with pytest.raises(LocalProtocolError) as info:
            session.transition(event)
        assert state.value in str(info.value) and event.value in str(info.value)
        assert session.state is state
    else:
        session.transition(event)
        assert session.state is expected


def test_table_covers_every_state_and_commands_respect_it() -> None:
    assert set(TRANSITIONS) == set(SessionState)
    session = ClientSession()
    with pytest.raises(LocalProtocolError):
        session.refresh(NOW)
    with pytest.raises(LocalProtocolError):
        session.call("srv/echo", None, NOW)
    session.start(NOW)
    with pytest.raises(LocalProtocolError):
        session.start(NOW)
    session = ClientSession()
    session.close(NOW)
    assert session.state is SessionState.CLOSED
    with pytest.raises(LocalProtocolError):
        session.start(NOW)


# --- the same session over stdio (S1) --------------------------------------------------------


def _lines(data: bytes) -> list[Any]:
    return [decode_message(line) for line in data.split(b"\n") if line]


def _line(message: Any) -> bytes:
    return encode_message(message) + b"\n"


def test_s1_stdio_engine_handshake_call_and_close() -> None:
    engine = StdioClientEngine(options=opts())
    engine.start(NOW)
    [init] = _lines(engine.data_to_send())
    assert engine.next_deadline() == NOW + 120
    engine.receive_data(b"not json\n" + _line(Result(id=init.id, result=INIT_RESULT)), NOW)
    _, listing = _lines(engine.data_to_send())
    engine.receive_data(_line(Result(id=listing.id, result={"tools": TOOLS})), NOW)
    assert isinstance(engine.take_events()[0], SessionReady)
    assert engine.availability == Availability(True) and engine.catalogue is not None
    assert engine.state is SessionState.READY
    cid = engine.call("srv/echo", None, NOW)
    engine.handle_timer(NOW + 1)
    [call] = _lines(engine.data_to_send())
    assert call.params["name"] == "echo"
    engine.receive_data(_line(Result(id=cid, result={"content": [{"type": "text", "text": "ok"}]})), NOW)
    [done] = engine.take_events()
    assert isinstance(done, CallSucceeded)
    cid = engine.call("srv/echo", None, NOW)
    assert engine.cancel(cid, NOW) is True
    rid = engine.refresh(NOW)
    assert rid == 1
    engine.data_to_send()
    other = engine.call("srv/echo", None, NOW)
    engine.close(NOW)
    engine.close(NOW)
    out = _lines(engine.data_to_send())
    assert [m.params["requestId"] for m in out if isinstance(m, Notification)] == [other]


def test_s1_stdio_connection_lost_and_overlong_line() -> None:
    engine = StdioClientEngine(options=opts(), max_line_size=100)
    engine.start(NOW)
    engine.data_to_send()
    engine.receive_data(b"x" * 200, NOW)
    [event] = engine.take_events()
    assert isinstance(event, StartFailed) and "broke a limit" in str(event.error)
    assert engine.availability is not None and not engine.availability.ok
    engine.handle_timer(event.retry_at)
    [init] = _lines(engine.data_to_send())
    engine.connection_lost("the child exited", event.retry_at)
    [event2] = engine.take_events()
    assert isinstance(event2, StartFailed) and str(event2.error) == "the child exited"
    assert init.method == "initialize"


# --- H6 at the session level: a new session after expiry ----------------------------------


def test_h6_reinitialize_refused_is_retried_on_the_backoff_and_parked_requests_wait() -> None:
    """H6, L4: the new session's handshake fails (P2) → retried 1 s, then 2 s later, with
    now from the caller (never 0); the waiting call and re-list are sent once it works."""
    session = ready()
    cid = session.call("srv/echo", None, NOW)
    [request] = session.take_outgoing()
    session.session_expired([request], NOW)  # type: ignore[list-item]
    init = only_request(session)
    assert init.method == "initialize" and session.reinitializing
    rid = session.refresh(NOW)
    session.session_expired([], NOW)  # a second expiry notice: still one initialize
    assert session.take_outgoing() == []  # the re-list waits too
    session.receive_message(Result(id=init.id, result={**INIT_RESULT, "protocolVersion": "1999-01-01"}), NOW)
    assert session.take_events() == []  # nothing fails: the call has 300 s
    assert session.reinitializing and not session.is_idle
    assert session.next_deadline() == NOW + 1.0
    session.handle_timer(NOW + 0.5)
    assert session.take_outgoing() == []
    session.handle_timer(NOW + 1.0)
    again = only_request(session)
    assert again.method == "initialize"
    session.request_failed(again.id, TransportError("refused"), NOW + 1.0)  # type: ignore[arg-type]
    assert session.next_deadline() == NOW + 3.0
    session.handle_timer(NOW + 3.0)
    third = only_request(session)
    session.receive_message(Result(id=third.id, result=INIT_RESULT), NOW + 3.0)
    sent = session.take_outgoing()
    assert [m.method for m in sent] == [  # type: ignore[union-attr]
        "notifications/initialized",
        "tools/call",
        "tools/list",
    ]
    assert sent[1] == request  # the same request, same id
    assert not session.reinitializing
    assert session.take_events() == []
    assert cid in session.pending_call_ids and rid


def test_h6_expiry_outside_start_up_and_ready_is_ignored() -> None:
    session, init = started()
    session.receive_message(ErrorResponse(id=init.id, code=-1, message="x"), NOW)
    session.take_events()
    session.session_expired([], NOW)  # BACKOFF
    assert session.take_outgoing() == [] and session.take_events() == []
    session.close(NOW)
    session.session_expired([], NOW)  # CLOSED
    assert session.take_outgoing() == []


# --- what a newcomer hits: usage mistakes and unknown ids ---------------------------------------


def test_K7_unknown_tool_says_which_id_was_probably_meant() -> None:
    """K7: a plain tool name, another case or another server's prefix gets "did you mean";
    nothing is sent."""
    session = ready()
    for written, meant in (
        ("echo", "srv/echo"),
        ("Slow_One", "srv/slow_one"),
        ("SRV/Echo", "srv/echo"),
        ("github/echo", "srv/echo"),
    ):
        with pytest.raises(UnknownTool) as info:
            session.call(written, None, NOW)
        assert info.value.tool_id == written and info.value.suggestions == (meant,)
        assert str(info.value) == f"unknown tool {written!r}; did you mean {meant!r}?"
    with pytest.raises(UnknownTool) as info:
        session.call("srv/nothing", None, NOW)
    assert info.value.suggestions == () and "did you mean" not in str(info.value)
    assert session.take_outgoing() == [] and session.is_idle


def test_K1_K2_usage_mistakes_are_builtin_kinds_and_still_local_protocol_errors() -> None:
    """K1, K2: arguments that are not a mapping are a TypeError, a timeout that is not a
    positive number a ValueError, a call or command at the wrong time a RuntimeError; each
    is still a LocalProtocolError, and nothing is sent."""
    from mcpcore import InvalidArguments, InvalidState, InvalidValue

    fresh = ClientSession(opts())
    with pytest.raises(RuntimeError) as wrong_time:
        fresh.call("srv/echo", None, NOW)
    assert isinstance(wrong_time.value, InvalidState) and isinstance(wrong_time.value, LocalProtocolError)
    with pytest.raises(RuntimeError):
        fresh.refresh(NOW)
    session = ready()
    with pytest.raises(TypeError, match=r"must be a mapping .*not str") as not_mapping:
        session.call("srv/echo", '{"text": "hi"}', NOW)  # type: ignore[arg-type]
    assert isinstance(not_mapping.value, InvalidArguments) and isinstance(not_mapping.value, LocalProtocolError)
    for bad in (0, -1.0, float("nan"), "30", True, None.__class__):
        with pytest.raises(ValueError, match="a call timeout must be a positive number of seconds") as info:
            session.call("srv/echo", None, NOW, timeout=bad)  # type: ignore[arg-type]
        assert isinstance(info.value, InvalidValue) and isinstance(info.value, LocalProtocolError)
    with pytest.raises(RuntimeError):
        session.start(NOW)
    assert session.take_outgoing() == [] and session.is_idle


def test_L3_availability_is_falsy_when_the_server_is_not_ready() -> None:
    """L3: ``if not await client.ready():`` fires exactly when the server is unavailable."""
    assert not Availability(False, "down") and not Availability(ok=False)
    assert Availability(True)
    link = connect()
    assert link.engine.availability and link.engine.availability.ok
    link.engine.close(link.now)
    assert not link.engine.availability
