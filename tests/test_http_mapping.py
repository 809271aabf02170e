"""The Streamable HTTP mapping (``_http.py``) under the session, against the in-memory
FakeServer: headers (H1), session id and protocol version (H2), replies (H3),
resumption (H4), redirects (H5), expiry (H6), errors (H7), the GET stream (H8),
close (H9), size bounds (P6) and malformed replies (P0, P5). No sockets, a fake clock.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from fake_peer import (
    URL,
    FakeServer,
    Link,
    Reply,
    Seen,
    connect,
    notification,
    result,
    sse,
    text_result,
)
from mcpcore import (
    BackendError,
    CallTimeout,
    HandshakeError,
    LimitExceeded,
    RemoteProtocolError,
    TransportError,
)
from mcpcore.base._events import (
    AbortExchange,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    HttpRequest,
    ProgressReceived,
    SessionReady,
    StartFailed,
    ToolsListChanged,
)
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.session._session import SessionOptions, SessionState
from mcpcore.wire._http import HttpLimits

SSE_CT = [(b"content-type", b"text/event-stream")]
JSON_CT = [(b"content-type", b"application/json")]


def posts(server: FakeServer) -> list[Seen]:
    return [s for s in server.seen if s.method == "POST"]


def methods(server: FakeServer) -> list[str]:
    out = []
    for s in server.seen:
        if s.method != "POST":
            out.append(s.method)
        elif s.message and "method" in s.message:
            out.append(s.message["method"])
        else:
            out.append("response")
    return out


def on(method: str, reply: Reply | None = None, **kw: Any) -> Any:
    """A hook that answers ``method`` with ``reply`` (default: a stalled SSE stream)."""

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == method:
            if reply is not None:
                return reply
            return Reply(200, list(SSE_CT), [], finish="stall")
        return None

    return hook


def call(link: Link, tool: str = "srv/echo", arguments: dict[str, Any] | None = None, **kw: Any) -> int:
    cid = link.engine.call(tool, arguments, link.now, **kw)
    link.pump()
    return cid


def outcome(link: Link, cid: int) -> Any:
    link.pump()
    [event] = [
        e
        for e in link.events
        if isinstance(e, (CallSucceeded, CallFailed, CallCancelled)) and e.call_id == cid
    ]
    return event


def failed_with(link: Link, cid: int, kind: type) -> Exception:
    event = outcome(link, cid)
    assert isinstance(event, CallFailed), event
    assert isinstance(event.error, kind), event.error
    return event.error


def last_xid(link: Link) -> int:
    return link.requests[-1].exchange_id


# --- H1 -----------------------------------------------------------------------------------


def test_h1_every_post_has_both_accepts_json_content_type_and_configured_headers() -> None:
    """H1: Accept both types, Content-Type application/json, plus the configured headers."""
    server = FakeServer()
    link = connect(server, headers={"X-Api-Key": "k-123", "Authorization": "Bearer t"})
    call(link)
    assert len(posts(server)) == 4
    for seen in posts(server):
        assert seen.headers["accept"] == "application/json, text/event-stream"
        assert seen.headers["content-type"] == "application/json"
        assert seen.headers["x-api-key"] == "k-123"
        assert seen.headers["authorization"] == "Bearer t"
    assert all(r.url == URL for r in link.requests)
    # the request's repr never shows header values (C8)
    assert "k-123" not in repr(link.requests[0]) and "x-api-key" in repr(link.requests[0]).lower()


def test_h1_a_post_names_the_request_it_carries_so_a_driver_can_run_it_in_the_caller() -> None:
    """H1: ``HttpRequest.request_id`` is the JSON-RPC id a POST carries (a call's id).

    Drivers use it to perform a call's exchange in the caller's own task or
    thread; notifications, the GET stream and DELETE carry ``None``.
    """
    server = FakeServer()
    link = connect(server)
    cid = call(link)
    by_id = {}
    for request, seen in zip(link.requests, server.seen, strict=True):
        message = seen.message or {}
        if request.method == "POST" and "id" in message:
            assert request.request_id == message["id"]
            by_id[request.request_id] = request
        else:
            assert request.request_id is None
    assert by_id[cid].body is not None and b'"tools/call"' in by_id[cid].body
    link.engine.close(link.now)
    link.pump()
    assert [r.request_id for r in link.requests if r.method == "DELETE"] == [None]


def test_D3_the_core_says_which_requests_a_driver_may_send_again() -> None:
    """D3, E3: ``HttpRequest.replayable`` marks the requests whose second sending changes
    nothing on the server: a GET, the session's DELETE, a POST of a request kind that
    changes nothing (``tools/list``). A ``tools/call`` (it may have run), ``initialize``
    and a notification are not; a driver sends those once only."""
    server = FakeServer()
    link = connect(server)
    call(link)
    link.engine.close(link.now)
    link.pump()
    replayable: dict[str, set[bool]] = {}
    for request, seen in zip(link.requests, server.seen, strict=True):
        message = seen.message or {}
        what = str(message.get("method") if request.method == "POST" else request.method)
        replayable.setdefault(what, set()).add(request.replayable)
    assert replayable["tools/call"] == {False}
    assert replayable["initialize"] == {False}
    assert replayable["notifications/initialized"] == {False}
    assert replayable["tools/list"] == {True}
    assert replayable["DELETE"] == {True}
    assert replayable["GET"] == {True}


# --- H2 -----------------------------------------------------------------------------------


def test_h2_session_id_and_protocol_version_after_the_handshake_only() -> None:
    """H2: the initialize POST carries neither header; every later request carries both.

    M85: the session id is taken from initialize's answer only.
    """
    server = FakeServer(get_status=405)
    link = connect(server)
    call(link)
    first, *rest = server.seen
    assert "mcp-session-id" not in first.headers and "mcp-protocol-version" not in first.headers
    assert rest
    for seen in rest:
        assert seen.headers["mcp-session-id"] == "session-1"
        assert seen.headers["mcp-protocol-version"] == "2025-11-25"
    assert link.engine.http.session_id == "session-1"


def test_h2_negotiated_version_goes_in_the_header() -> None:
    server = FakeServer(version="2025-03-26")
    link = connect(server)
    call(link)
    assert posts(server)[-1].headers["mcp-protocol-version"] == "2025-03-26"


@pytest.mark.parametrize("as_sse", [False, True])
def test_h2_session_id_on_an_initialize_error_is_never_adopted(as_sse: bool) -> None:
    """H2: an initialize answered with an error carrying Mcp-Session-Id is not adopted."""
    server = FakeServer()
    answered = []

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "initialize" and not answered:
            answered.append(seen)
            error = {"jsonrpc": "2.0", "id": seen.message["id"], "error": {"code": -32600, "message": "no"}}
            if as_sse:
                return Reply(200, [*SSE_CT, (b"mcp-session-id", b"evil")], [sse(error)])
            return Reply(200, [*JSON_CT, (b"mcp-session-id", b"evil")], [json.dumps(error).encode()])
        return None

    server.hook = hook
    link = connect(server)
    [failed] = link.of_type(StartFailed)
    assert isinstance(failed.error, HandshakeError)
    assert link.engine.http.session_id is None
    link.advance(1)
    assert link.of_type(SessionReady)
    assert all(s.headers.get("mcp-session-id") != "evil" for s in server.seen)
    assert link.engine.http.session_id == "session-1"


def test_h2_stateless_server_gets_no_session_id_and_no_delete() -> None:
    """H2, H9: a server that never sends a session id: no header, no DELETE on close."""
    server = FakeServer(stateless=True)
    link = connect(server)
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)
    assert all("mcp-session-id" not in s.headers for s in server.seen)
    assert server.get_count == 0  # no GET stream without a session (H8)
    link.engine.close(link.now)
    link.pump()
    assert "DELETE" not in methods(server)


# --- H3 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [202, 200, 204])
def test_h3_any_2xx_accepts_a_notification(status: int) -> None:
    """H3: 202 (or any 2xx, body ignored) accepts notifications and responses."""
    server = FakeServer()

    def hook(seen: Seen) -> Reply | None:
        if seen.message and "id" not in seen.message:
            return Reply(status, list(JSON_CT), [b"{not json at all"])
        return None

    server.hook = hook
    link = connect(server)
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)
    assert not link.of_type(StartFailed)


CASES = [
    pytest.param(dict(json_response=True), False, id="json"),
    pytest.param(dict(), False, id="sse-lf"),
    pytest.param(dict(crlf=True), False, id="sse-crlf"),
    pytest.param(dict(keepalive=True), False, id="sse-keepalive"),
    pytest.param(dict(priming=False), False, id="sse-no-priming"),
    pytest.param(dict(json_response=True), True, id="json-bytewise"),
    pytest.param(dict(crlf=True, keepalive=True), True, id="sse-crlf-keepalive-bytewise"),
    pytest.param(dict(), True, id="sse-lf-bytewise"),
]


@pytest.mark.parametrize(("server_kw", "bytewise"), CASES)
def test_h3_json_and_sse_replies_any_framing_same_outcome(server_kw: dict[str, Any], bytewise: bool) -> None:
    """H3: JSON or SSE, LF or CRLF, priming events, keepalive comments, byte by byte: same result."""
    server = FakeServer(**server_kw)
    link = connect(server, byte_by_byte=bytewise)
    [ready] = link.of_type(SessionReady)
    assert ready.catalogue.ids() == ("srv/echo", "srv/slow")
    cid = call(link, arguments={"q": "é"})
    done = outcome(link, cid)
    assert isinstance(done, CallSucceeded)
    assert json.loads(done.output.text) == {"q": "é"}


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("bytewise", [False, True])
def test_h3_requests_and_notifications_before_the_response(crlf: bool, bytewise: bool) -> None:
    """H3: a server request and notifications precede the response on the same stream."""
    server = FakeServer(crlf=crlf, keepalive=True)

    def handler(message: dict[str, Any]) -> list[dict[str, Any] | str]:
        rid = message["id"]
        return [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},  # same id as our initialize: kept apart (P0)
            {"jsonrpc": "2.0", "id": "r", "method": "sampling/createMessage", "params": {}},
            notification("notifications/progress", {"progressToken": rid, "progress": 1, "total": 2}),
            notification("notifications/message", {"level": "info", "data": "working"}),
            text_result(rid, "done"),
            text_result(rid, "again"),  # a duplicate response is ignored
        ]

    server.call_handler = handler
    link = connect(server, byte_by_byte=bytewise)
    cid = call(link)
    assert link.of_type(ProgressReceived) == [ProgressReceived(call_id=cid, progress=1.0, total=2.0, message=None)]
    done = outcome(link, cid)
    assert isinstance(done, CallSucceeded) and done.output.text == "done"
    replies = [s.message for s in posts(server) if s.message and "method" not in s.message]
    assert replies == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "r", "error": {"code": -32601, "message": "Method not found: sampling/createMessage"}},
    ]


def test_h3_202_for_a_request_is_a_protocol_error() -> None:
    server = FakeServer()
    server.hook = on("tools/call", Reply(202))
    link = connect(server)
    cid = call(link)
    error = failed_with(link, cid, RemoteProtocolError)
    assert "HTTP 202" in str(error)


# --- H4 -----------------------------------------------------------------------------------


def _resume_gets(server: FakeServer) -> list[Seen]:
    return [s for s in server.seen if s.method == "GET" and "last-event-id" in s.headers]


@pytest.mark.parametrize(("retry_ms", "delay"), [(500, 0.5), (None, 1.0), (2500, 2.5)])
def test_h4_resume_after_priming_event_waits_exactly_the_retry(retry_ms: int | None, delay: float) -> None:
    """H4: a stream that ends after its priming event is resumed with GET and Last-Event-ID
    exactly `retry` later (1 s by default), to the millisecond."""
    server = FakeServer(polls=1, retry_ms=retry_ms)
    link = connect(server)
    priming_ids = server._event_counter
    cid = call(link)
    assert _resume_gets(server) == []
    link.advance(delay - 0.001)
    assert _resume_gets(server) == []
    link.advance(0.001)
    [resume] = _resume_gets(server)
    assert resume.headers["last-event-id"] == f"e{priming_ids + 1}"
    assert resume.headers["accept"] == "text/event-stream"
    assert resume.headers["mcp-session-id"] == "session-1"
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_h4_retry_in_its_own_block_is_honoured() -> None:
    """H4: `retry:` sent in a block of its own (no data, so no event) still sets the delay."""
    server = FakeServer()
    server.hook = on("tools/call", Reply(200, list(SSE_CT), [b"id: p1\ndata: \n\n", b"retry: 500\n\n"]))
    link = connect(server)
    call(link)
    server.hook = None
    link.advance(0.499)
    assert _resume_gets(server) == []
    link.advance(0.001)
    assert len(_resume_gets(server)) == 1


def test_h4_polling_server_that_closes_every_stream() -> None:
    """H4: the 2025-11-25 polling pattern: every stream closes after its priming event."""
    server = FakeServer(polls=4, retry_ms=200)
    link = connect(server)
    cid = call(link, arguments={"n": 1})
    link.advance(10)
    gets = _resume_gets(server)
    assert len(gets) == 4
    assert len({g.headers["last-event-id"] for g in gets}) == 4
    done = outcome(link, cid)
    assert isinstance(done, CallSucceeded) and json.loads(done.output.text) == {"n": 1}


def test_h4_empty_resumes_forever_are_bounded_by_max_reconnects() -> None:
    """H4, P6: a resume answered with an empty stream forever → LimitExceeded(max_reconnects)."""
    server = FakeServer(polls=1, empty_resume=True)
    link = connect(server, limits=HttpLimits(max_reconnects=3))
    cid = call(link)
    link.advance(60)
    error = failed_with(link, cid, LimitExceeded)
    assert error.limit_name == "max_reconnects" and "max_reconnects" in str(error)  # type: ignore[attr-defined]
    assert len(_resume_gets(server)) == 4  # max_reconnects + 1, then no more
    assert link.engine.next_deadline() is None
    assert link.engine.state is SessionState.READY


@pytest.mark.parametrize("finish", ["fail", "end"])
def test_h4_broken_stream_without_any_event_id_is_a_transport_error(finish: str) -> None:
    """H4: without an event id there is nothing to resume: TransportError, no GET."""
    server = FakeServer(priming=False)
    server.hook = on("tools/call", Reply(200, list(SSE_CT), [b": hello\n\n"], finish=finish))
    link = connect(server)
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    assert "before the response arrived" in str(error)
    assert _resume_gets(server) == []


def test_h4_broken_resume_is_resumed_again() -> None:
    """H4: a connection that breaks after an id'd event resumes from that id."""
    server = FakeServer(retry_ms=100)
    server.hook = on("tools/call", Reply(200, list(SSE_CT), [b"id: a1\ndata: \n\n"], finish="fail"))
    link = connect(server)
    cid = call(link)
    rid = cid

    def resume(seen: Seen) -> Reply | None:
        if seen.method == "GET" and seen.headers.get("last-event-id") == "a1":
            return Reply(200, list(SSE_CT), [sse(text_result(rid, "late"))])
        return None

    server.hook = resume
    link.advance(0.999)
    assert _resume_gets(server) == []
    link.advance(0.001)
    assert isinstance(outcome(link, cid), CallSucceeded)


# --- H5 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_h5_redirect_is_refused_and_location_never_contacted(status: int) -> None:
    """H5: any 3xx is a TransportError naming the status; no request goes to the Location."""
    server = FakeServer()
    server.hook = on("tools/call", Reply(status, [(b"location", b"https://evil.test/steal")]))
    link = connect(server, headers={"Authorization": "Bearer secret"})
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    assert f"HTTP {status}" in str(error) and "redirect" in str(error)
    assert "secret" not in str(error)
    assert all(r.url == URL for r in link.requests)


def test_h5_redirect_on_initialize_fails_the_start() -> None:
    server = FakeServer()
    server.hook = on("initialize", Reply(307, [(b"location", b"https://evil.test/")]))
    link = connect(server)
    [failed] = link.of_type(StartFailed)
    assert isinstance(failed.error, TransportError) and "HTTP 307" in str(failed.error)
    assert link.engine.availability is not None and "HTTP 307" in link.engine.availability.reason  # type: ignore[operator]


# --- H6 -----------------------------------------------------------------------------------


def test_h6_expired_session_reinitializes_and_resends_once() -> None:
    """H6: 404 with a session id → initialize without session id, then the request once more.

    M88: in the handshake era, a 404 to a request carrying a session id is an expired
    session.
    """
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    cid = call(link, arguments={"a": 1})
    done = outcome(link, cid)
    assert isinstance(done, CallSucceeded) and json.loads(done.output.text) == {"a": 1}
    posts = [s for s in server.seen if s.method == "POST"]
    tail = posts[-5:]
    assert [s.message["method"] for s in tail] == [  # type: ignore[index]
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/list",  # the new session may offer other tools: re-listed (H6)
    ]
    assert tail[0].headers["mcp-session-id"] == "session-1"
    assert "mcp-session-id" not in tail[1].headers and "mcp-protocol-version" not in tail[1].headers
    assert tail[3].headers["mcp-session-id"] == "session-2"
    assert tail[0].message == tail[3].message  # the same request, same id
    assert link.engine.state is SessionState.READY and not link.engine.session.reinitializing
    # the new session keeps working, and its GET stream is opened again (H8)
    cid2 = call(link)
    assert isinstance(outcome(link, cid2), CallSucceeded)
    gets = [s for s in server.seen if s.method == "GET"]
    assert gets[-1].headers["mcp-session-id"] == "session-2"


def test_h6_second_404_fails_the_request_and_a_later_call_still_works() -> None:
    """H6: a resent request that meets 404 again fails; it is not resent a second time,
    and the client does not stay stuck without a session."""
    server = FakeServer()
    link = connect(server)

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            return Reply(404, [(b"content-type", b"text/plain")], [b"gone"])
        return None

    server.hook = hook
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    assert "404 again" in str(error)
    assert sum(1 for s in posts(server) if s.message and s.message.get("method") == "tools/call") == 2
    server.hook = None
    cid2 = call(link)
    assert isinstance(outcome(link, cid2), CallSucceeded)


def test_h6_404_on_resume_fails_the_call_that_may_have_run() -> None:
    """H6: the session expires while a call runs (resume GET → 404): TransportError saying
    it may have run, never replayed; a new session is set up for what follows."""
    server = FakeServer(polls=1, retry_ms=100)
    link = connect(server)
    cid = call(link)
    server.sessions.clear()
    link.advance(0.1)
    error = failed_with(link, cid, TransportError)
    assert "may have run" in str(error)
    assert sum(1 for s in posts(server) if s.message and s.message.get("method") == "tools/call") == 1
    assert len(server.requests("initialize")) == 2  # re-initialized for later requests
    cid2 = call(link)
    link.advance(0.1)
    assert isinstance(outcome(link, cid2), CallSucceeded)


def test_h6_400_for_an_unknown_session_is_a_transport_error() -> None:
    """H6/H7: 400 (unknown or missing session) is not an expiry: a plain HTTP error."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call", Reply(400, [(b"content-type", b"text/plain")], [b"Bad Request: unknown session"]))
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    assert "HTTP 400: Bad Request: unknown session" in str(error)
    assert len(server.requests("initialize")) == 1


def test_h6_expiry_during_start_up_is_a_failed_attempt() -> None:
    server = FakeServer()
    server.hook = on("tools/list", Reply(404))
    link = connect(server)
    [failed] = link.of_type(StartFailed)
    assert "ended the session during start-up" in str(failed.error)


def test_h6_two_calls_expire_together_one_new_session() -> None:
    """H6: two requests on the expired session: one re-initialization, each resent once,
    whether the second 404 arrives before or after the new session is up."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call")
    a = call(link)
    xa = last_xid(link)
    b = call(link)
    xb = last_xid(link)
    c = call(link)
    xc = last_xid(link)
    server.hook = None
    server.sessions.clear()
    engine = link.engine
    engine.response_started(xa, 404, [], link.now)
    engine.response_started(xb, 404, [], link.now)  # before the new session is up
    link.pump()
    engine.response_started(xc, 404, [], link.now)  # after: resent on the new session at once
    link.pump()
    for cid in (a, b, c):
        assert isinstance(outcome(link, cid), CallSucceeded)
    assert len(server.requests("initialize")) == 2
    assert len(server.requests("tools/call")) == 6


def requests_without_session(server: FakeServer) -> list[str]:
    """Requests other than initialize that reached the server without a session id."""
    return [
        s.message["method"]
        for s in posts(server)
        if s.message
        and "id" in s.message
        and s.message.get("method") not in (None, "initialize")
        and "mcp-session-id" not in s.headers
    ]


def test_h6_new_session_that_cannot_be_set_up_is_retried_until_the_server_is_back() -> None:
    """H6, L4: the re-initialization fails (HTTP 500) → it is retried on the backoff
    schedule while the call waits within its deadline; once the server is back the
    same call succeeds, a later call too, and no request ever went out without a session."""
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = on("initialize", Reply(500, [(b"content-type", b"text/plain")], [b"down"]))
    cid = call(link)
    link.advance(1.0)  # first retry (1 s) fails too
    assert len(server.requests("initialize")) == 3
    link.advance(1.9)  # the second retry is due 2 s after the second failure
    assert len(server.requests("initialize")) == 3
    late = call(link)  # a call made meanwhile waits as well
    assert not [e for e in link.events if getattr(e, "call_id", None) in (cid, late)]
    server.hook = None  # the server is back
    link.advance(0.1)
    assert len(server.requests("initialize")) == 4
    assert isinstance(outcome(link, cid), CallSucceeded)
    assert isinstance(outcome(link, late), CallSucceeded)
    assert isinstance(outcome(link, call(link)), CallSucceeded)
    assert requests_without_session(server) == []


def test_h6_a_call_waiting_for_a_new_session_ends_at_its_own_deadline() -> None:
    """H6, K2: while the new session cannot be set up, a waiting call ends at its own
    deadline with CallTimeout, and was never sent without a session."""
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = on("initialize", Reply(503, [(b"content-type", b"text/plain")], [b"down"]))
    cid = call(link, timeout=4.0)
    link.advance(3.9)
    assert not [e for e in link.events if getattr(e, "call_id", None) == cid]
    link.advance(0.2)
    error = failed_with(link, cid, CallTimeout)
    assert "4 s budget" in str(error)
    assert requests_without_session(server) == []
    assert len(server.cancelled) == 0  # resent only on a new session: nothing to cancel


def test_h6_calls_wait_while_the_session_is_re_initialized() -> None:
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = on("initialize")
    a = call(link)
    b = call(link)  # parked: nothing sent until the new session is up
    assert len(server.requests("tools/call")) == 1
    assert link.engine.cancel(b, link.now) is True
    rid = refresh = link.engine.refresh(link.now)
    link.pump()
    assert len(server.requests("tools/list")) == 1  # only the start-up listing so far
    xid = last_xid(link)
    # the initialize answer arrives
    link.engine.response_started(xid, 200, [*SSE_CT, (b"mcp-session-id", b"session-9")], link.now)
    server.sessions.add("session-9")
    init_id = server.requests("initialize")[-1]["id"]
    server.hook = None
    link.engine.response_data(
        xid, sse(result(init_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})), link.now
    )
    link.pump()
    assert isinstance(outcome(link, a), CallSucceeded)
    assert isinstance(outcome(link, b), CallCancelled)
    assert len(server.requests("tools/call")) == 2  # a resent; b never sent
    assert [c for c in server.cancelled] == []  # b was never on the wire: no notice
    assert refresh == rid


def test_h6_reinitialize_that_times_out_is_retried() -> None:
    """H6: a new session's initialize that never answers is given up after the start-up
    timeout and tried again; the waiting call then succeeds."""
    server = FakeServer()
    link = connect(server, options=SessionOptions(server_name="srv", startup_timeout=5, call_timeout=600))
    server.sessions.clear()
    server.hook = on("initialize")
    cid = call(link)
    link.advance(5)
    assert len(server.requests("initialize")) == 2
    server.hook = None
    link.advance(1)
    assert len(server.requests("initialize")) == 3
    assert isinstance(outcome(link, cid), CallSucceeded)
    assert requests_without_session(server) == []


def test_h6_expiry_on_the_get_stream_sets_up_a_new_session() -> None:
    server = FakeServer(get_status=200)
    link = connect(server)
    xid = next(r for r in link.requests if r.method == "GET").exchange_id
    server.sessions.clear()
    link.engine.response_failed(xid, TransportFailure(FailureKind.RESET), link.now)
    link.advance(1)  # the GET stream reconnects and meets 404
    link.pump()
    assert len(server.requests("initialize")) == 2
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)


# --- H7 -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 429, 500, 502, 503])
def test_h7_http_errors_name_the_status_with_an_escaped_excerpt(status: int) -> None:
    """H7: TransportError with the status and a short, escaped excerpt; never raw controls."""
    server = FakeServer()
    body = b"oops \x1b[2J\x07 " + b"x" * 5000
    server.hook = on("tools/call", Reply(status, [(b"content-type", b"text/plain")], [body[:100], body[100:]]))
    link = connect(server)
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    text = str(error)
    assert f"HTTP {status}" in text
    assert "\\x1b[2J" in text and "\x1b" not in text and "\x07" not in text
    assert len(text) < 400


def test_h7_x3_an_error_body_echoing_a_configured_header_value_is_redacted() -> None:
    """H7, X3: a server that quotes the request's configured Authorization header in its
    error body does not get the secret into the error text."""
    server = FakeServer()
    secret = "static-token-0123456789"

    def echo(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            quoted = seen.headers["authorization"].encode()
            return Reply(500, [(b"content-type", b"text/plain")], [b"refused " + quoted])
        return None

    server.hook = echo
    link = connect(server, headers={"Authorization": f"Bearer {secret}"})
    cid = call(link)
    text = str(failed_with(link, cid, TransportError))
    assert "HTTP 500" in text and "[redacted]" in text
    assert secret not in text


def test_h7_error_body_excerpt_stops_reading_early() -> None:
    server = FakeServer()
    server.hook = on("tools/call", Reply(500, [], [b"e" * 600, b"f" * 600], finish="stall"))
    link = connect(server)
    cid = call(link)
    failed_with(link, cid, TransportError)
    assert last_xid(link) in link.aborted


@pytest.mark.parametrize(("content_type", "shown"), [(b"text/html", "text/html"), (None, "none")])
def test_h7_unexpected_content_type(content_type: bytes | None, shown: str) -> None:
    server = FakeServer()
    headers = [(b"content-type", content_type)] if content_type else []
    server.hook = on("tools/call", Reply(200, headers, [b"<html>"]))
    link = connect(server)
    cid = call(link)
    error = failed_with(link, cid, TransportError)
    assert f"unexpected content type ({shown})" in str(error)


def test_h7_json_content_type_on_a_resume_is_unexpected() -> None:
    server = FakeServer(polls=1)
    link = connect(server)
    cid = call(link)
    server.hook = lambda seen: Reply(200, list(JSON_CT), [b"{}"]) if seen.method == "GET" else None
    link.advance(1)
    error = failed_with(link, cid, TransportError)
    assert "unexpected content type (application/json)" in str(error)


def test_h7_response_ending_before_headers() -> None:
    server = FakeServer()
    server.hook = on("tools/call", Reply(finish="before-headers"))
    link = connect(server)
    cid = call(link)
    xid = last_xid(link)
    link.engine.response_ended(xid, link.now)
    error = failed_with(link, cid, TransportError)
    assert "ended before its headers" in str(error)


# --- H8 -----------------------------------------------------------------------------------


def test_h8_get_stream_opened_after_ready_delivers_server_messages() -> None:
    """H8: after ready the GET stream opens; its notifications and requests are handled.

    M90: handshake-era list changes arrive on the GET stream (as on any response stream).
    """
    server = FakeServer(get_status=200)
    server.get_messages = [
        notification("notifications/tools/list_changed"),
        {"jsonrpc": "2.0", "id": 77, "method": "ping"},
    ]
    link = connect(server)
    assert methods(server)[:4] == ["initialize", "notifications/initialized", "tools/list", "GET"]
    get = server.seen[3]
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["mcp-session-id"] == "session-1"
    assert "last-event-id" not in get.headers
    assert link.of_type(ToolsListChanged) == [ToolsListChanged()]
    assert {"jsonrpc": "2.0", "id": 77, "result": {}} in [s.message for s in posts(server)]


@pytest.mark.parametrize("status", [405, 409, 404])
def test_h8_get_not_available_is_not_fatal(status: int) -> None:
    """H8: 405 (no GET stream) and 409 (one is open already) are fine."""
    server = FakeServer(get_status=status)
    if status == 404:
        server.hook = lambda seen: Reply(404) if seen.method == "GET" else None
        server.stateless = True  # 404 without a session id is just "not here"
    link = connect(server)
    assert link.engine.state is SessionState.READY and not link.of_type(StartFailed)
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_h8_get_stream_that_ends_reconnects_and_409_is_not_fatal() -> None:
    server = FakeServer(get_status=200, retry_ms=300)
    server.get_messages = ["id: g1\nretry: 300\ndata: \n\n"]  # type: ignore[list-item]
    link = connect(server)
    [first] = [r for r in link.requests if r.method == "GET"]
    link.engine.response_ended(first.exchange_id, link.now)  # the server closed it
    server.get_status = 409
    link.advance(0.3)
    gets = [s for s in server.seen if s.method == "GET"]
    assert len(gets) == 2 and gets[1].headers["last-event-id"] == "g1"
    link.advance(60)
    assert len([s for s in server.seen if s.method == "GET"]) == 2
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_h8_get_stream_gives_up_quietly_after_max_reconnects() -> None:
    server = FakeServer(get_status=200)
    server.get_messages = []
    link = connect(server, limits=HttpLimits(max_reconnects=2))
    for _ in range(5):
        gets = [r for r in link.requests if r.method == "GET"]
        link.engine.response_ended(gets[-1].exchange_id, link.now)
        link.advance(1)
    assert len([r for r in link.requests if r.method == "GET"]) == 3
    assert link.engine.next_deadline() is None


def test_h8_malformed_message_on_get_stream_does_not_hurt() -> None:
    server = FakeServer(get_status=200)
    server.get_messages = ["data: {nope\n\n"]  # type: ignore[list-item]
    link = connect(server)
    assert link.engine.state is SessionState.READY
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_h8_listen_false_opens_no_get_stream() -> None:
    server = FakeServer(get_status=200)
    connect(server, listen=False)
    assert server.get_count == 0


# --- H9 -----------------------------------------------------------------------------------


def test_h9_close_cancels_running_calls_then_deletes_the_session() -> None:
    """H9, L6, K6: notifications/cancelled for each running call, together; the DELETE
    with the session id once they are answered (a server must not end the session
    before it hears of the cancellations).

    M93: closing a handshake-era session sends DELETE.
    """
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call")
    a = call(link)
    b = call(link)
    server.hook = None
    link.engine.close(link.now)
    actions = link.engine.take_actions()
    aborts = [x for x in actions if isinstance(x, AbortExchange)]
    requests = [x for x in actions if isinstance(x, HttpRequest)]
    assert len(aborts) == 2
    assert [r.method for r in requests] == ["POST", "POST"]
    link._perform(requests[0])
    assert link.engine.take_actions() == []  # one notice is still on its way
    link._perform(requests[1])
    later = [x for x in link.engine.take_actions() if isinstance(x, HttpRequest)]
    assert [r.method for r in later] == ["DELETE"]
    delete = later[0]
    assert (b"mcp-session-id", b"session-1") in delete.headers and delete.timeout == 2.0
    assert delete.body is None
    link._perform(delete)
    assert server.cancelled == [a, b]
    assert server.sessions == set()
    assert {type(outcome(link, c)) for c in (a, b)} == {CallCancelled}
    link.events.extend(link.engine.take_events())
    assert link.engine.availability is not None and not link.engine.availability.ok


@pytest.mark.parametrize("status", [405, 404, 500])
def test_h9_delete_failures_are_fine(status: int) -> None:
    server = FakeServer()
    server.hook = lambda seen: Reply(status, [], [b"x"]) if seen.method == "DELETE" else None
    link = connect(server)
    link.engine.close(link.now)
    link.pump()
    assert methods(server)[-1] == "DELETE"
    link.engine.close(link.now)
    link.pump()
    assert methods(server).count("DELETE") == 1


def test_h9_delete_connection_failure_is_fine() -> None:
    server = FakeServer()
    server.hook = lambda seen: Reply(200, [], [], finish="fail") if seen.method == "DELETE" else None
    link = connect(server)
    link.engine.close(link.now)
    link.pump()
    assert link.engine.http.active_exchanges == []


# --- P6 -----------------------------------------------------------------------------------


def _stalled_call(limits: HttpLimits, status_headers: list[tuple[bytes, bytes]]) -> tuple[Link, int, int]:
    server = FakeServer()
    link = connect(server, limits=limits)
    server.hook = on("tools/call")
    cid = call(link)
    xid = last_xid(link)
    link.engine.response_started(xid, 200, status_headers, link.now)
    return link, cid, xid


def test_p6_json_body_over_max_message_size_fails_while_streaming() -> None:
    """P6: a JSON body over max_message_size → LimitExceeded naming it, before the body ends."""
    link, _cid, xid = _stalled_call(HttpLimits(max_message_size=1000), list(JSON_CT))
    for i in range(10):
        link.engine.response_data(xid, b" " * 100, link.now)
        assert link.engine.take_events() == [], i
    link.engine.response_data(xid, b" ", link.now)
    [event] = link.engine.take_events()
    assert isinstance(event, CallFailed) and isinstance(event.error, LimitExceeded)
    assert event.error.limit_name == "max_message_size" and "max_message_size" in str(event.error)
    assert AbortExchange(exchange_id=xid) in link.engine.take_actions()
    link.engine.response_data(xid, b" " * 100, link.now)  # after the failure: ignored
    link.engine.response_ended(xid, link.now)
    assert link.engine.take_events() == []


def test_p6_sse_event_over_max_message_size_fails_while_streaming() -> None:
    """P6: an SSE event over max_message_size (many small data lines) → LimitExceeded
    naming max_message_size, before the event or the body ends."""
    link, _cid, xid = _stalled_call(HttpLimits(max_message_size=1000), list(SSE_CT))
    sent = 0
    while True:
        link.engine.response_data(xid, b"data: " + b"x" * 99 + b"\n", link.now)
        sent += 1
        events = link.engine.take_events()
        if events:
            break
        assert sent < 20
    [event] = events
    assert isinstance(event, CallFailed) and isinstance(event.error, LimitExceeded)
    assert event.error.limit_name == "max_message_size"
    assert sent == 11


def test_p6_single_long_sse_line_fails_before_it_is_buffered_whole() -> None:
    """P6: one huge data line is refused while it streams, naming max_message_size."""
    link, _cid, xid = _stalled_call(HttpLimits(max_message_size=1000), list(SSE_CT))
    link.engine.response_data(xid, b"data: ", link.now)
    for _ in range(30):
        link.engine.response_data(xid, b"x" * 100, link.now)
        events = link.engine.take_events()
        if events:
            break
    [event] = events
    assert isinstance(event.error, LimitExceeded)  # type: ignore[union-attr]
    assert event.error.limit_name == "max_message_size"  # type: ignore[union-attr]


def test_p6_sse_line_bound_names_max_sse_line() -> None:
    link, _cid, xid = _stalled_call(HttpLimits(max_sse_line=1000), list(SSE_CT))
    link.engine.response_data(xid, b": " + b"c" * 2000, link.now)
    [event] = link.engine.take_events()
    assert isinstance(event.error, LimitExceeded)  # type: ignore[union-attr]
    assert event.error.limit_name == "max_sse_line"  # type: ignore[union-attr]


def _stalled_read(limits: HttpLimits, status_headers: list[tuple[bytes, bytes]]) -> tuple[Link, int, int]:
    from mcpcore import Ask
    from mcpcore.features._resources import RESOURCES_READ, read_params

    server = FakeServer()
    link = connect(server, limits=limits)
    server.hook = on("resources/read")
    rid = link.engine.request(Ask(RESOURCES_READ, read_params("a://big"), "a://big"), link.now)
    link.pump()
    xid = last_xid(link)
    link.engine.response_started(xid, 200, status_headers, link.now)
    return link, rid, xid


def _read_reply(rid: int, size: int) -> bytes:
    blob = "QUJD" * (size // 4)
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "result": {"contents": [{"uri": "a://big", "blob": blob}]}}
    ).encode()


@pytest.mark.parametrize("as_sse", [False, True])
def test_B11_a_read_is_bounded_by_max_read_size_not_max_message_size(as_sse: bool) -> None:
    """B11: a resources/read reply over max_message_size but within max_read_size is
    read (a blob of a large file); over max_read_size it fails naming max_read_size,
    while it streams."""
    from mcpcore import ReadResult, RequestSucceeded

    limits = HttpLimits(max_message_size=1000, max_read_size=4000)
    link, rid, xid = _stalled_read(limits, list(SSE_CT if as_sse else JSON_CT))
    body = _read_reply(rid, 2400)
    assert 1000 < len(body) < 4000
    link.engine.response_data(xid, b"data: " + body + b"\n\n" if as_sse else body, link.now)
    link.engine.response_ended(xid, link.now)
    [event] = [e for e in link.engine.take_events() if isinstance(e, RequestSucceeded)]
    assert isinstance(event.value, ReadResult)
    assert event.value.contents[0].data == b"ABC" * 600  # type: ignore[union-attr]

    link, rid, xid = _stalled_read(limits, list(SSE_CT if as_sse else JSON_CT))
    if as_sse:
        link.engine.response_data(xid, b"data: ", link.now)
    for _ in range(100):
        link.engine.response_data(xid, b"x" * 100, link.now)
        events = link.engine.take_events()
        if events:
            break
    [failed] = events
    assert isinstance(failed.error, LimitExceeded)  # type: ignore[union-attr]
    assert failed.error.limit_name == "max_read_size"  # type: ignore[union-attr]
    assert "max_read_size" in str(failed.error)  # type: ignore[union-attr]


def test_B11_a_call_stays_bounded_by_max_message_size() -> None:
    """B11: the larger bound is a read's only: a call's reply of the same size fails."""
    link, _cid, xid = _stalled_call(HttpLimits(max_message_size=1000, max_read_size=4000), list(JSON_CT))
    for _ in range(11):
        link.engine.response_data(xid, b" " * 100, link.now)
    [event] = link.engine.take_events()
    assert isinstance(event, CallFailed) and isinstance(event.error, LimitExceeded)
    assert event.error.limit_name == "max_message_size"


def test_B11_the_default_bounds_admit_a_50_mib_blob_read() -> None:
    """B11: with default settings a read of a 50 MiB file (its base64 and the JSON
    around it) is within the read bound, and a stdio line may be as long."""
    limits = HttpLimits()
    wire = 4 * -(-50 * 1024 * 1024 // 3) + 1024
    assert limits.max_message_size < wire < limits.max_read_size
    assert limits.stdio_line_limit == limits.max_read_size


# --- P0, P5: malformed replies fail only their exchange -------------------------------------------


@pytest.mark.parametrize(
    ("headers", "body", "words"),
    [
        (JSON_CT, b"\xff\xfe garbage", "UTF-8"),
        (JSON_CT, b'{"foo": 1}', "JSON-RPC"),
        (JSON_CT, b'{"jsonrpc": "2.0", "method": "notifications/x"}', "did not carry the response"),
        (SSE_CT, b"data: not json\n\n", "JSON"),
        (SSE_CT, b'data: {"jsonrpc": "1.0", "id": 1, "result": {}}\n\n', "JSON-RPC"),
        (SSE_CT, b"data: [1, 2]\n\n", ""),
    ],
)
def test_p5_malformed_reply_fails_only_its_exchange(headers: list[Any], body: bytes, words: str) -> None:
    """P0, P5: garbage bytes, non-JSON data or JSON that is not JSON-RPC → RemoteProtocolError
    for that call; another call in flight is unaffected."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call")
    bad = call(link)
    xbad = last_xid(link)
    good = call(link)
    xgood = last_xid(link)
    engine = link.engine
    engine.response_started(xbad, 200, list(headers), link.now)
    engine.response_data(xbad, body, link.now)
    engine.response_ended(xbad, link.now)
    link.pump()
    error = failed_with(link, bad, RemoteProtocolError)
    assert words in str(error)
    engine.response_started(xgood, 200, list(SSE_CT), link.now)
    engine.response_data(xgood, sse(text_result(good, "fine")), link.now)
    link.pump()
    assert isinstance(outcome(link, good), CallSucceeded)
    assert engine.state is SessionState.READY


def test_p5_malformed_event_after_the_response_changes_nothing() -> None:
    server = FakeServer()
    server.call_handler = lambda m: [text_result(m["id"], "ok"), "data: {broken\n\n"]
    link = connect(server)
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_p5_response_for_another_request_on_a_json_reply() -> None:
    """A JSON reply that answers some other id fails its own exchange; the stray id is ignored."""
    server = FakeServer()
    server.hook = on("tools/call", Reply(200, list(JSON_CT), [json.dumps(text_result(999, "x")).encode()]))
    link = connect(server)
    cid = call(link)
    failed_with(link, cid, RemoteProtocolError)


def test_inputs_for_unknown_exchanges_are_ignored() -> None:
    link = connect()
    engine = link.engine
    engine.response_started(999, 200, [], link.now)
    engine.response_data(999, b"x", link.now)
    engine.response_ended(999, link.now)
    engine.response_failed(999, TransportFailure(FailureKind.RESET), link.now)
    assert engine.take_actions() == [] and engine.take_events() == []


def test_k6_cancel_aborts_the_exchange_and_a_pending_resume() -> None:
    """K6 over HTTP: cancel drops the call's exchange (or its pending resume) and POSTs one notice."""
    server = FakeServer(polls=1)
    link = connect(server)
    cid = call(link)
    assert link.engine.next_deadline() == link.now + 1  # the resume timer
    link.engine.cancel(cid, link.now, "stop")
    link.pump()
    assert server.cancelled == [cid]
    link.advance(400)
    assert _resume_gets(server) == []
    server.hook = on("tools/call")
    cid2 = call(link)
    xid = last_xid(link)
    link.engine.cancel(cid2, link.now)
    link.pump()
    assert xid in link.aborted and server.cancelled == [cid, cid2]


def test_k2_timeout_over_http_aborts_and_cancels() -> None:
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call")
    cid = call(link, timeout=10)
    xid = last_xid(link)
    link.advance(9.999)
    assert link.of_type(CallFailed) == []
    link.advance(0.001)
    failed_with(link, cid, TransportError)
    assert xid in link.aborted and server.cancelled == [cid]


def test_p5_response_on_another_stream_ends_its_own_stream_and_resume() -> None:
    """P5, H4: a call answered on another call's stream is done: its own stream is
    dropped and its pending resume never fires (no leaked exchange, no stray GET)."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call")
    a = call(link)
    xa = last_xid(link)
    b = call(link)
    xb = last_xid(link)
    c = call(link)
    xc = last_xid(link)
    server.hook = None
    engine = link.engine
    engine.response_started(xa, 200, list(SSE_CT), link.now)
    engine.response_data(xa, b"id: a1\ndata: \n\n", link.now)
    engine.response_ended(xa, link.now)  # a: resume pending
    engine.response_started(xb, 200, list(SSE_CT), link.now)
    engine.response_data(xb, sse(text_result(a, "for a"), text_result(c, "for c")), link.now)
    link.pump()
    assert outcome(link, a).output.text == "for a"
    assert outcome(link, c).output.text == "for c"
    assert xc in link.aborted and xc not in engine.http.active_exchanges
    link.advance(5)
    assert _resume_gets(server) == []
    engine.response_data(xb, sse(text_result(b, "for b")), link.now)
    link.pump()
    assert outcome(link, b).output.text == "for b"


def test_p6_a_stream_left_open_after_its_response_is_closed_by_the_client() -> None:
    """P6/H3: a server that keeps a response stream open cannot hold a connection forever."""
    server = FakeServer()
    link = connect(server)

    def hold_open(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            reply = server._request(seen.message)  # the normal answer ...
            reply.finish = "stall"  # ... on a stream that never ends
            return reply
        return None

    server.hook = hold_open
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)
    xid = next(r.exchange_id for r in reversed(link.requests) if r.method == "POST")
    assert xid in link.stalled
    link.advance(4.999)
    assert xid not in link.aborted
    link.advance(0.002)
    assert xid in link.aborted


# --- X4: the debug trace -----------------------------------------------------------------------

SECRET_HEADER = "Bearer sk-live-7f3a9c1e5b2d4680aa"
ARGUMENT_VALUE = "argument-value-9e8d7c6b"
RESULT_VALUE = "result-value-5a4b3c2d"


def _trace(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every record of the mcpcore hierarchy, formatted (a format error fails here)."""
    return [f"{r.name} {r.getMessage()}" for r in caplog.records if r.name.startswith("mcpcore")]


def test_X4_debug_trace_names_methods_ids_statuses_content_types_version_session_and_times(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """X4: at DEBUG, ``mcpcore`` traces each JSON-RPC method and request id sent and received,
    each response's HTTP status and content type, the negotiated version, the session id and
    the time from a request to its response; never a configured header value, an argument
    value or a result."""
    server = FakeServer(json_response=False)
    server.call_handler = lambda message: [
        notification("notifications/progress", {"progressToken": message["id"], "progress": 1, "total": 2}),
        text_result(message["id"], RESULT_VALUE),
    ]

    def slow_call(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            link.now += 0.25  # the server takes 250 ms
        return None

    server.hook = slow_call
    with caplog.at_level(logging.DEBUG, logger="mcpcore"):
        link = connect(server, headers={"Authorization": SECRET_HEADER})
        cid = call(link, arguments={"text": ARGUMENT_VALUE})
        assert isinstance(outcome(link, cid), CallSucceeded)
        link.engine.close(link.now)
        link.pump()
    trace = _trace(caplog)
    text = "\n".join(trace)
    for expected in (
        "mcpcore.http [srv] POST request initialize id=1 (exchange 1,",
        "HTTP 200 text/event-stream for exchange 1 (POST request initialize id=1)",
        "received result id=1 (",
        "session id 'session-1'",
        "protocol version 2025-11-25",
        "server 'fake' version '1'",
        "POST notification notifications/initialized",
        "HTTP 202 (no content type)",
        "POST request tools/list id=2",
        "tools/list id=2 page 1 answered in",
        "ready: 2 tools",
        "GET the server's message stream",
        "GET stream not available (HTTP 405)",
        "tools/call 'srv/echo' as request id=3",
        "POST request tools/call id=3",
        "received notification notifications/progress",
        "progress for tools/call id=3: 1 of 2",
        "received result id=3 (",
        "tools/call id=3 ('srv/echo') answered in 250.0 ms: 1 content block(s)",
        "DELETE session 'session-1'",
    ):
        assert expected in text, expected
    for secret in (SECRET_HEADER, "sk-live", ARGUMENT_VALUE, RESULT_VALUE):
        assert secret not in text


def test_X4_debug_trace_of_resumes_expiry_failures_and_timeouts(caplog: pytest.LogCaptureFixture) -> None:
    """X4: reconnects (with the event id), an expired session and its renewal, a failed
    exchange, a JSON reply with its size and a call that times out are all traced."""
    server = FakeServer(polls=1, retry_ms=500)
    with caplog.at_level(logging.DEBUG, logger="mcpcore"):
        link = connect(server, headers={"Authorization": SECRET_HEADER})
        cid = call(link)
        link.advance(0.5)
        assert isinstance(outcome(link, cid), CallSucceeded)
        server.polls = 0
        server.call_handler = lambda message: [
            {"jsonrpc": "2.0", "id": "srv-ping-1", "method": "ping"},
            {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "bad"}},
        ]
        cid = call(link)
        failed_with(link, cid, BackendError)
        server.call_handler = None
        server.sessions.clear()  # H6: the next request gets a 404
        server.polls = 0
        server.json_response = True
        cid = call(link)
        assert isinstance(outcome(link, cid), CallSucceeded)
        server.hook = on("tools/call", Reply(200, list(SSE_CT), [], finish="fail"))
        cid = call(link)
        failed_with(link, cid, TransportError)
        server.hook = on("tools/call")  # stalls
        cid = call(link, timeout=2)
        link.advance(2)
        failed_with(link, cid, CallTimeout)
    text = "\n".join(_trace(caplog))
    for expected in (
        "received request ping id='srv-ping-1'",
        "POST result id='srv-ping-1'",
        "received error -32602 id=4",
        "tools/call id=4 answered in 0.0 ms with JSON-RPC error -32602",
        "the event stream ended on exchange",
        "reconnecting in 0.5 s after event 'e",
        "GET to resume the stream of request id=3",
        "HTTP 404 for exchange",
        "sent with session id 'session-1': the session expired",
        "a new session replaces the expired one",
        "session id 'session-2'",
        "HTTP 200 application/json for exchange",
        "bytes of JSON",
        "broke after",
        "closed or reset",
        "timed out after 2 s",
        "abandoned request id=",
        "sending notifications/cancelled",
        "stopped waiting on exchange",
    ):
        assert expected in text, expected
    assert SECRET_HEADER not in text and "sk-live" not in text


def test_X4_debug_trace_over_stdio(caplog: pytest.LogCaptureFixture) -> None:
    """X4: the stdio engine traces each message sent and received by method, id and size."""
    from mcpcore.engine._engine import StdioClientEngine

    engine = StdioClientEngine(options=SessionOptions(server_name="local"))
    with caplog.at_level(logging.DEBUG, logger="mcpcore"):
        engine.start(0.0)
        sent = engine.data_to_send()
        engine.receive_data(
            json.dumps(result(1, {"protocolVersion": "2025-11-25", "capabilities": {}})).encode()
            + b"\nnot json\n",
            0.5,
        )
    text = "\n".join(_trace(caplog))
    assert f"mcpcore.stdio [local] sent request initialize id=1 ({len(sent)} bytes)" in text
    assert "mcpcore.stdio [local] received result id=1 (" in text
    assert "skipped a line of 8 bytes" in text
    assert "initialize id=1 answered in 500.0 ms: protocol version 2025-11-25" in text
    assert "ready: 0 tools" in text


# --- the engine's inputs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        [("content-type", "application/json"), ("x-token", "value-never-shown")],
        [(b"content-type", b"application/json"), (b"x-token", "value-never-shown")],
        [("x-token", b"value-never-shown")],
        [(b"x-token",)],
        ["x-token: value-never-shown"],
        None,
    ],
)
def test_H3_response_started_refuses_header_pairs_that_are_not_bytes(headers: Any) -> None:
    """H3: header pairs are (bytes, bytes), as on the wire; ``str`` pairs (which would be
    misread as "no content type") are refused with a TypeError saying so, showing no value."""
    server = FakeServer()
    server.hook = on("tools/call", Reply(200, [], [], finish="before-headers"))
    link = connect(server)
    cid = call(link)
    xid = last_xid(link)
    with pytest.raises(TypeError, match=r"header.*\(bytes, bytes\) pairs") as info:
        link.engine.response_started(xid, 200, headers, link.now)
    assert "never-shown" not in str(info.value)
    # Nothing happened to the exchange: the right pairs still work.
    link.engine.response_started(xid, 200, list(JSON_CT), link.now)
    link.engine.response_data(xid, json.dumps(text_result(cid, "ok")).encode(), link.now)
    link.engine.response_ended(xid, link.now)
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_L6_H9_close_emits_notices_and_delete_together_under_one_deadline() -> None:
    """L6, H9, K6: closing is the engine's: with 20 calls in flight against a server that
    never answers, every notice goes out at once; the DELETE waits for their replies
    but no longer than half the close bound; the close deadline (not one bound per
    message) aborts what is left; then the engine is finished."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call", Reply(200, [], [], finish="before-headers"))
    calls = [call(link) for _ in range(20)]
    assert not link.engine.finished
    server.hook = lambda seen: Reply(200, [], [], finish="before-headers")  # stalls on all
    closed_at = link.now
    link.engine.close(link.now)
    link.pump()
    assert link.engine.next_deadline() == closed_at + HttpLimits().close_timeout / 2
    link.advance(HttpLimits().close_timeout / 2)
    sent = [r for r in link.requests if r.method in ("POST", "DELETE")][-21:]
    assert [r.method for r in sent] == ["POST"] * 20 + ["DELETE"]
    # every notice was sent before any reply arrived (the server answers none)
    notices = [json.loads(r.body or b"") for r in sent[:-1]]
    assert [n["method"] for n in notices] == ["notifications/cancelled"] * 20
    assert [n["params"]["requestId"] for n in notices] == calls
    assert {type(outcome(link, c)) for c in calls} == {CallCancelled}
    assert not link.engine.finished
    assert link.engine.next_deadline() == closed_at + HttpLimits().close_timeout
    link.advance(HttpLimits().close_timeout / 2)
    assert link.engine.finished and link.engine.next_deadline() is None
    assert set(link.aborted) >= {r.exchange_id for r in sent}
    link.engine.close(link.now)  # a second close changes nothing
    assert link.engine.take_actions() == [] and link.engine.finished


def test_L6_close_is_finished_as_soon_as_every_closing_exchange_ended() -> None:
    server = FakeServer()
    link = connect(server)
    link.engine.close(link.now)
    link.pump()
    assert methods(server)[-1] == "DELETE"
    assert link.engine.finished and link.engine.next_deadline() is None


def test_L6_an_engine_closed_before_it_started_is_finished_at_once() -> None:
    link = connect(start=False)
    link.engine.close(link.now)
    assert link.engine.take_actions() == [] and link.engine.finished


def test_L6_H6_closing_with_a_call_held_behind_the_new_sessions_gate_sends_it_no_notice() -> None:
    """Found by the state machine: a call sent again after an expiry, still held behind
    the new session's notifications/initialized when the client closes, never reached
    the server; closing sends no notifications/cancelled for it."""
    server = FakeServer()
    link = connect(server)
    server.hook = on("tools/call", Reply(200, [], [], finish="before-headers"))
    call_id = call(link)
    [xid] = sorted(link.stalled)
    server.hook = lambda seen: (
        Reply(202, [], [], finish="before-headers")  # notifications/initialized hangs
        if seen.message and seen.message.get("method") == "notifications/initialized"
        else None
    )
    link.engine.response_started(xid, 404, [(b"content-type", b"text/plain")], link.now)
    link.pump()  # the session expired: a new one is set up; the call waits behind its gate
    assert server.requests("tools/call") and len(server.requests("tools/call")) == 1
    link.engine.close(link.now)
    link.pump()
    cancels = [m for m in server.requests("notifications/cancelled") if m["params"]["requestId"] == call_id]
    assert cancels == []
    assert isinstance(outcome(link, call_id), CallCancelled)


def test_B3_F1_a_later_page_names_through_owner_of_the_call_it_belongs_to() -> None:
    """B3, F1: each page of a listing goes out under a new request id, and
    ``engine.owner_of`` names the id the host got for all of them (what lets a driver
    perform the later pages in the caller's task); once the listing ended, none."""
    from mcpcore import Ask, Listing, RequestSucceeded
    from mcpcore.features._resources import RESOURCES_LIST

    server = FakeServer()
    link = connect(server)
    owners: list[tuple[int, int | None]] = []

    def hook(seen: Seen) -> Reply | None:
        if not seen.message or seen.message.get("method") != "resources/list":
            return None
        rid = seen.message["id"]
        owners.append((rid, link.engine.owner_of(rid)))
        cursor = (seen.message.get("params") or {}).get("cursor")
        page = int(cursor) if cursor else 0
        result: dict[str, Any] = {"resources": [{"uri": f"r://{page}", "name": f"r{page}"}]}
        if page < 2:
            result["nextCursor"] = str(page + 1)
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        return Reply(200, list(JSON_CT), [body])

    server.hook = hook
    call_id = link.engine.request(Ask(RESOURCES_LIST, None, "srv"), link.now)
    link.pump()
    assert [owner for _, owner in owners] == [call_id] * 3
    assert len({rid for rid, _ in owners}) == 3 and owners[0][0] == call_id
    [done] = [e for e in link.events if isinstance(e, RequestSucceeded)]
    assert isinstance(done.value, Listing) and [r.uri for r in done.value] == ["r://0", "r://1", "r://2"]
    assert all(link.engine.owner_of(rid) is None for rid, _ in owners)


def test_B11_a_reads_line_may_outgrow_max_sse_line_up_to_max_read_size() -> None:
    """B11: a blob is one SSE data line, so a read's line bound follows max_read_size
    even past max_sse_line; over it, the error names max_read_size."""
    from mcpcore import ReadResult, RequestSucceeded

    limits = HttpLimits(max_message_size=1000, max_sse_line=2000, max_read_size=4000)
    link, rid, xid = _stalled_read(limits, list(SSE_CT))
    body = _read_reply(rid, 2400)
    assert 2000 < len(body) < 4000
    link.engine.response_data(xid, b"data: " + body + b"\n\n", link.now)
    link.engine.response_ended(xid, link.now)
    [event] = [e for e in link.engine.take_events() if isinstance(e, RequestSucceeded)]
    assert isinstance(event.value, ReadResult)

    link, rid, xid = _stalled_read(limits, list(SSE_CT))
    link.engine.response_data(xid, b"data: " + b"x" * 6000, link.now)
    [failed] = link.engine.take_events()
    assert failed.error.limit_name == "max_read_size"  # type: ignore[union-attr]
