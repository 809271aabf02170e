"""No stuck state, no leak, everything bounded: the engine against a scripted server.

Each test names the behaviour it proves (H6, H10, K9, P5, P6, X5) and drives the
engine with the fake clock of ``fake_peer``, so schedules are exact.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_peer import FakeServer, Reply, Seen, connect, notification, result, sse
from mcpcore import (
    CallSucceeded,
    FailureKind,
    HttpLimits,
    HttpRequest,
    InvalidArguments,
    LocalProtocolError,
    Notification,
    SessionOptions,
    ToolsRefreshed,
    TransportFailure,
)
from mcpcore.base._events import CallFailed

SSE_CT = [(b"content-type", b"text/event-stream")]


def stall(method: str) -> Any:
    """A hook under which POSTs of ``method`` never get a response (not even headers)."""

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == method:
            return Reply(200, [], [], finish="before-headers")
        return None

    return hook


def outcome_of(link: Any, cid: int) -> Any:
    found = [e for e in link.events if getattr(e, "call_id", None) == cid]
    assert len(found) <= 1, found
    return found[0] if found else None


# --- H10: notices and answers have a deadline of their own ---------------------------------


def test_H10_unanswered_initialized_notice_is_dropped_after_its_bound_and_start_up_goes_on() -> None:
    """H10: a server that never answers ``notifications/initialized`` holds the listing
    only for ``notice_timeout``; then the exchange is aborted and start-up finishes."""
    server = FakeServer()
    server.hook = stall("notifications/initialized")
    link = connect(server, limits=HttpLimits(notice_timeout=3.0))
    assert server.requests("tools/list") == []
    assert link.engine.next_deadline() is not None
    link.advance(2.9)
    assert server.requests("tools/list") == []
    link.advance(0.1)
    held = next(r for r in link.requests if r.body and b"notifications/initialized" in r.body)
    assert held.exchange_id in link.aborted
    assert len(server.requests("tools/list")) == 1
    assert link.engine.availability is not None and link.engine.availability.ok


def test_H10_after_a_reinit_an_unanswered_initialized_does_not_hold_calls_for_300_s() -> None:
    """H10, H6: after a 404 the new session's ``notifications/initialized`` is never
    answered; the parked call goes out after the notice bound and succeeds."""
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = stall("notifications/initialized")
    cid = link.engine.call("srv/echo", {"x": 1}, link.now)
    link.pump()
    assert outcome_of(link, cid) is None
    link.advance(HttpLimits().notice_timeout)
    done = outcome_of(link, cid)
    assert isinstance(done, CallSucceeded) and json.loads(done.output.text) == {"x": 1}


def test_H10_a_cancel_notice_that_is_never_answered_is_aborted() -> None:
    """H10: ``notifications/cancelled`` that gets no answer has a timer and is aborted,
    releasing its connection; nothing stays open or pending."""
    server = FakeServer()
    link = connect(server, listen=False)

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") in ("tools/call", "notifications/cancelled"):
            return Reply(200, [], [], finish="before-headers")
        return None

    server.hook = hook
    cid = link.engine.call("srv/echo", None, link.now)
    link.pump()
    assert link.engine.cancel(cid, link.now)
    link.pump()
    notice = link.requests[-1]
    assert notice.body is not None and b"notifications/cancelled" in notice.body
    assert notice.exchange_id in link.engine.http.active_exchanges
    assert link.engine.next_deadline() == pytest.approx(link.now + HttpLimits().notice_timeout)
    link.advance(HttpLimits().notice_timeout)
    assert notice.exchange_id in link.aborted
    assert link.engine.http.active_exchanges == []
    assert link.engine.next_deadline() is None


# --- K9: unencodable arguments leave nothing behind ----------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"x": float("nan")}, "arguments['x'] (NaN"),
        ({"tags": {"a", "b"}}, "arguments['tags'] (a set)"),
        ({"deep": [1, {"o": Opaque()}]}, "arguments['deep'][1]['o'] (a Opaque)"),
        ({"inf": [float("inf")]}, "arguments['inf'][0]"),
    ],
)
def test_K9_unencodable_arguments_fail_at_once_and_leave_nothing_behind(
    arguments: dict[str, Any], named: str
) -> None:
    """K9: the call raises a local error naming the argument; no request, no pending
    call, no deadline, and closing sends no ``notifications/cancelled``."""
    server = FakeServer()
    link = connect(server, listen=False)
    sent_before = len(link.requests)
    with pytest.raises(InvalidArguments) as caught:
        link.engine.call("srv/echo", arguments, link.now)
    assert named in str(caught.value)
    assert isinstance(caught.value, LocalProtocolError) and isinstance(caught.value, TypeError)
    link.pump()
    assert len(link.requests) == sent_before
    assert link.engine.session.pending_call_ids == []
    assert link.engine.next_deadline() is None
    ok = link.engine.call("srv/echo", {"fine": 1}, link.now)  # the next call is unaffected
    link.pump()
    assert isinstance(outcome_of(link, ok), CallSucceeded)
    link.engine.close(link.now)
    link.pump()
    assert server.cancelled == []


def test_K9_the_body_sent_is_the_one_checked() -> None:
    """K9: the encoded call is sent as it was checked (encoded once), ids still in order."""
    link = connect(FakeServer(), listen=False)
    first = link.engine.call("srv/echo", {"a": [1, 2]}, link.now)
    with pytest.raises(InvalidArguments):
        link.engine.call("srv/echo", {"a": {1, 2}}, link.now)
    second = link.engine.call("srv/echo", None, link.now)
    assert second == first + 1  # the refused call took no id
    link.pump()
    bodies = [json.loads(r.body) for r in link.requests if r.body and b"tools/call" in r.body]
    assert [b["id"] for b in bodies] == [first, second]
    assert bodies[0]["params"]["arguments"] == {"a": [1, 2]}


# --- P5: events of another type are skipped --------------------------------------------------


def test_P5_sse_events_of_another_type_are_skipped_but_their_id_counts() -> None:
    """P5: ``event: ping`` with non-JSON data before the response neither fails the call
    nor is decoded; its id is the one a resume continues from."""
    server = FakeServer(priming=False)
    calls: list[HttpRequest] = []

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            body = sse("event: ping\nid: p-1\ndata: {not json at all\n\n")
            return Reply(200, list(SSE_CT), [body], finish="fail")
        if seen.method == "GET":
            calls.append(seen)  # type: ignore[arg-type]
            rid = server.requests("tools/call")[-1]["id"]
            reply = {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}}
            return Reply(200, list(SSE_CT), [sse(f"id: p-2\ndata: {json.dumps(reply)}\n\n")])
        return None

    server.hook = hook
    link = connect(server, listen=False)
    cid = link.engine.call("srv/echo", None, link.now)
    link.pump()
    assert outcome_of(link, cid) is None  # not failed by the ping event
    link.advance(1.0)
    [resume] = calls
    assert resume.headers["last-event-id"] == "p-1"  # type: ignore[attr-defined]
    done = outcome_of(link, cid)
    assert isinstance(done, CallSucceeded) and done.output.text == "ok"


# --- P6: a flood of server requests is not a flood of POSTs -------------------------------------


def test_P6_a_flood_of_pings_keeps_answer_posts_in_flight_bounded() -> None:
    """P6: 2,000 pings in one 100 KB chunk produce at most ``max_answers_in_flight``
    answer POSTs at a time; as each finishes the next goes out, and all are answered."""
    server = FakeServer(priming=False)
    pings = "".join(
        f"data: {json.dumps({'jsonrpc': '2.0', 'id': f'p{i}', 'method': 'ping'})}\n\n" for i in range(2000)
    )
    assert len(pings) > 100_000

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            return Reply(200, list(SSE_CT), [pings.encode()], finish="stall")
        if seen.message and "result" in seen.message:
            return Reply(200, [], [], finish="before-headers")  # answers wait
        return None

    server.hook = hook
    link = connect(server, listen=False, limits=HttpLimits(max_answers_in_flight=4))
    link.engine.call("srv/echo", None, link.now)
    link.pump()

    def open_answers() -> list[HttpRequest]:
        return [
            r
            for r in link.requests
            if r.body and b'"result"' in r.body and r.exchange_id in link.engine.http.active_exchanges
        ]

    assert len(open_answers()) == 4
    answered = set()
    while open_answers():
        for request in open_answers():
            answered.add(json.loads(request.body)["id"])  # type: ignore[arg-type]
            link.engine.response_started(request.exchange_id, 202, [], link.now)
            link.engine.response_ended(request.exchange_id, link.now)
        link.pump()
        assert len(open_answers()) <= 4
    assert len(answered) == 1024 + 4  # the queue's bound, plus those in flight


def test_P6_answers_beyond_the_queue_bound_are_dropped_with_one_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """P6: past ``max_queued_answers`` the excess is not answered; one warning names the bound."""
    server = FakeServer(priming=False)
    pings = "".join(f'data: {{"jsonrpc":"2.0","id":{i},"method":"ping"}}\n\n' for i in range(50))

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            return Reply(200, list(SSE_CT), [pings.encode()], finish="stall")
        if seen.message and "result" in seen.message:
            return Reply(200, [], [], finish="before-headers")
        return None

    server.hook = hook
    with caplog.at_level(logging.WARNING, logger="mcpcore"):
        link = connect(server, listen=False, limits=HttpLimits(max_answers_in_flight=2, max_queued_answers=10))
        link.engine.call("srv/echo", None, link.now)
        link.pump()
    warnings = [r.getMessage() for r in caplog.records if "max_queued_answers" in r.getMessage()]
    assert len(warnings) == 1 and "(10)" in warnings[0]
    answers = [r for r in link.requests if r.body and b'"result"' in r.body]
    assert len(answers) == 2


# --- smaller ones (item 9 of the robustness issue) ---------------------------------------------


def test_H4_an_empty_id_field_sends_no_last_event_id_header() -> None:
    """H4 (WHATWG): ``id:`` with an empty value resets the id: the reopened GET stream
    carries no ``Last-Event-ID`` header at all (never an empty one)."""
    server = FakeServer(get_status=200)
    server.get_messages = ["id: g-1\ndata: \n\n", "id:\ndata: \n\n"]
    link = connect(server)
    get = next(r for r in link.requests if r.method == "GET")
    link.engine.response_failed(get.exchange_id, TransportFailure(FailureKind.RESET), link.now)
    link.advance(1.0)
    reopened = [r for r in link.requests if r.method == "GET"][-1]
    assert reopened is not get
    assert b"last-event-id" not in dict(reopened.headers)


def test_P4_list_changed_during_the_start_up_listing_is_not_lost() -> None:
    """P4, T6: with auto_refresh, ``tools/list_changed`` that arrives while the start-up
    listing runs leads to one re-list once the server is ready."""
    server = FakeServer(priming=False)
    first = True

    def hook(seen: Seen) -> Reply | None:
        nonlocal first
        if first and seen.message and seen.message.get("method") == "tools/list":
            first = False
            change = notification("notifications/tools/list_changed")
            listing = result(seen.message["id"], {"tools": server.tools[:1]})
            body = sse(f"data: {json.dumps(change)}\n\n", f"data: {json.dumps(listing)}\n\n")
            return Reply(200, list(SSE_CT), [body])
        return None

    server.hook = hook
    link = connect(server, options=SessionOptions(server_name="srv", auto_refresh=True))
    [refreshed] = link.of_type(ToolsRefreshed)
    assert refreshed.refresh_id is None and refreshed.report.added == ("srv/slow",)
    assert len(server.requests("tools/list")) == 2


def test_H6_a_resent_request_is_forgotten_once_answered() -> None:
    """H6: the record of requests resent after a 404 does not grow with every call."""
    server = FakeServer()
    link = connect(server, listen=False)
    for _ in range(5):
        server.sessions.clear()
        cid = link.engine.call("srv/echo", None, link.now)
        link.pump()
        assert isinstance(outcome_of(link, cid), CallSucceeded)
    assert len(server.requests("initialize")) == 6
    assert link.engine.http._resent == set()


def test_K6_abandoned_request_ids_are_remembered_within_a_bound() -> None:
    """K6, P6: ids kept to recognise late responses of abandoned calls are bounded."""
    server = FakeServer()
    server.hook = stall("tools/call")
    link = connect(server, listen=False)
    for _ in range(1500):
        cid = link.engine.call("srv/echo", None, link.now)
        link.engine.cancel(cid, link.now)
    link.pump()
    assert len(link.engine.session.path.abandoned) <= 1024


# --- K2 with many calls in flight: deadlines fire in order, from a heap -------------------------


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 7.0]), min_size=1, max_size=40), st.data())
def test_K2_deadlines_fire_in_order_however_they_are_started_and_extended(
    budgets: list[float], data: st.DataObject
) -> None:
    """K2: with many calls in flight, each times out exactly at its own deadline (also
    after a progress notification pushed it out), and next_deadline is always the earliest."""
    server = FakeServer()
    server.hook = stall("tools/call")
    options = SessionOptions(server_name="srv", extend_on_progress=True)
    link = connect(server, listen=False, options=options)
    session = link.engine.session
    expected: dict[int, float] = {}
    for budget in budgets:
        cid = link.engine.call("srv/echo", None, link.now, timeout=budget)
        expected[cid] = link.now + budget
    link.pump()
    extended = data.draw(st.sets(st.sampled_from(sorted(expected))))
    for cid in extended:
        progress = {"progressToken": cid, "progress": 1}
        session.receive_message(Notification(method="notifications/progress", params=progress), link.now + 0.25)
        budget = budgets[sorted(expected).index(cid)]
        expected[cid] = max(expected[cid], link.now + 0.25 + budget)
    session.take_events()
    fired: dict[int, float] = {}
    while (due := session.next_deadline()) is not None:
        assert due == min(t for c, t in expected.items() if c not in fired)
        session.handle_timer(due)
        for event in session.take_events():
            if isinstance(event, CallFailed):
                fired[event.call_id] = due
    assert fired == expected
