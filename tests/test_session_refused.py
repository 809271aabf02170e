"""The engine's side of a server that forgot the session and says so with 400
(H6a), of a new session that cannot be set up (L5) and of ``reconnect`` (L8),
against the scripted ``FakeServer`` and a fake clock (no sockets).

``tests/test_restart.py`` shows the same against server-everything restarted on
the same port, on both drivers.
"""

from __future__ import annotations

import json
from typing import Any

from fake_peer import FakeServer, Link, Reply, Seen, connect
from mcpcore import TransportError
from mcpcore.base._events import CallCancelled, CallFailed, CallSucceeded

JSON_CT = [(b"content-type", b"application/json")]
# server-everything's answer to a session id it does not know: no "id" at all
REFUSAL = (
    b'{"jsonrpc":"2.0","error":{"code":-32000,'
    b'"message":"Bad Request: No valid session ID provided"}}'
)


def refuse_unknown_sessions(server: FakeServer, body: bytes = REFUSAL) -> Any:
    """A hook: a request with a session id the server does not know gets 400 ``body``."""

    def hook(seen: Seen) -> Reply | None:
        sid = seen.headers.get("mcp-session-id")
        if seen.method == "POST" and sid is not None and sid not in server.sessions:
            return Reply(400, list(JSON_CT), [body])
        return None

    return hook


def call(
    link: Link, tool: str = "srv/echo", arguments: dict[str, Any] | None = None, **kw: Any
) -> int:
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


def sent(server: FakeServer, method: str) -> list[Seen]:
    return [s for s in server.seen if s.message and s.message.get("method") == method]


def test_h6a_400_with_a_json_rpc_error_on_a_session_is_an_expired_session() -> None:
    """H6a: the server restarted (forgot every session) and answers 400 with a JSON-RPC
    error without an id: one new session, the call sent once more on it, ready."""
    server = FakeServer()
    link = connect(server)
    server.hook = refuse_unknown_sessions(server)
    server.sessions.clear()
    cid = call(link, arguments={"a": 1})
    done = outcome(link, cid)
    assert isinstance(done, CallSucceeded) and json.loads(done.output.text) == {"a": 1}
    calls = sent(server, "tools/call")
    assert len(calls) == 2 and calls[0].message == calls[1].message
    assert calls[0].headers["mcp-session-id"] == "session-1"
    assert calls[1].headers["mcp-session-id"] == "session-2"
    assert len(sent(server, "initialize")) == 2
    assert link.engine.availability is not None and link.engine.availability.ok


def test_h6a_the_same_400_on_the_new_session_is_the_answer_once() -> None:
    """H6a: once per request: a request that meets the 400 again on the new session
    fails with it (no loop of new sessions); a later call works."""
    server = FakeServer()
    link = connect(server)

    def hook(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            return Reply(400, list(JSON_CT), [REFUSAL])
        return None

    server.hook = hook
    cid = call(link)
    event = outcome(link, cid)
    assert isinstance(event, CallFailed)
    assert "No valid session ID provided" in str(event.error)
    assert len(sent(server, "tools/call")) == 2
    assert len(sent(server, "initialize")) == 2
    server.hook = None
    assert isinstance(outcome(link, call(link)), CallSucceeded)
    assert len(sent(server, "initialize")) == 2


def test_h6a_400_without_a_session_id_or_without_a_json_rpc_error_is_not_an_expiry() -> None:
    """H6a, H7: a 400 to a request sent without a session id (a stateless server), or
    whose body is not a JSON-RPC error, is that request's failure: no new session."""
    server = FakeServer(stateless=True)
    link = connect(server)
    server.hook = refuse_unknown_sessions(server)

    def stateless_refusal(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            return Reply(400, list(JSON_CT), [REFUSAL])
        return None

    server.hook = stateless_refusal
    event = outcome(link, call(link))
    assert isinstance(event, CallFailed) and "HTTP 400" in str(event.error)
    assert len(sent(server, "initialize")) == 1

    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = refuse_unknown_sessions(server, b'{"error": "no session"}')
    event = outcome(link, call(link))
    assert isinstance(event, CallFailed) and "HTTP 400" in str(event.error)
    assert len(sent(server, "initialize")) == 1


def test_h6a_400_on_the_resume_of_a_running_call_fails_it_as_may_have_run() -> None:
    """H6a: the server restarted while a call ran (its resume GET gets the 400): the
    call may have run, so it fails saying so and is never sent again; a new session
    is set up for what follows."""
    server = FakeServer(polls=1, retry_ms=100)
    link = connect(server)
    cid = call(link)
    server.sessions.clear()

    def hook(seen: Seen) -> Reply | None:
        sid = seen.headers.get("mcp-session-id")
        if sid is not None and sid not in server.sessions and seen.method != "DELETE":
            return Reply(400, list(JSON_CT), [REFUSAL])
        return None

    server.hook = hook
    link.advance(0.1)
    event = outcome(link, cid)
    assert isinstance(event, CallFailed) and isinstance(event.error, TransportError)
    assert "may have run" in str(event.error)
    assert len(sent(server, "tools/call")) == 1
    assert len(sent(server, "initialize")) == 2
    cid2 = call(link)
    link.advance(0.1)
    assert isinstance(outcome(link, cid2), CallSucceeded)


def test_l5_a_new_session_that_cannot_be_set_up_is_unavailable_with_the_reason() -> None:
    """L5, H6: while the new session cannot be set up the server is unavailable, with
    the reason; once a retry sets it up, available again."""
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = lambda seen: (
        Reply(503, [(b"content-type", b"text/plain")], [b"down for maintenance"])
        if seen.message and seen.message.get("method") == "initialize"
        else None
    )
    cid = call(link, timeout=30.0)
    availability = link.engine.availability
    assert availability is not None and not availability.ok
    assert availability.reason is not None
    assert availability.reason.startswith("a new session could not be set up: ")
    assert "HTTP 503" in availability.reason and "down for maintenance" in availability.reason
    assert isinstance(availability.error, TransportError)
    server.hook = None
    link.advance(1.0)  # the retry (L4) succeeds
    assert link.engine.availability is not None and link.engine.availability.ok
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_l8_reconnect_ends_the_session_and_fails_what_ran_on_it() -> None:
    """L8: reconnect() while ready: the old session gets its DELETE, a running call
    fails saying it may have run (never sent again), availability is unknown until
    the new session is up, then ready; later calls use the new session."""
    server = FakeServer()
    link = connect(server)
    server.hook = lambda seen: (
        Reply(200, [(b"content-type", b"text/event-stream")], [], finish="stall")
        if seen.message and seen.message.get("method") == "tools/call"
        else None
    )
    cid = call(link)
    server.hook = lambda seen: (
        Reply(finish="before-headers")  # the new session's initialize: not answered yet
        if seen.message and seen.message.get("method") == "initialize"
        else None
    )
    link.engine.reconnect(link.now)
    link.pump()
    event = outcome(link, cid)
    assert isinstance(event, CallFailed) and "may have run" in str(event.error)
    deletes = [s for s in server.seen if s.method == "DELETE"]
    assert [d.headers["mcp-session-id"] for d in deletes] == ["session-1"]
    assert link.engine.availability is None  # ready() waits for this attempt
    server.hook = None
    link.engine.reconnect(link.now)  # an attempt in flight: nothing more is sent
    link.pump()
    assert len(sent(server, "initialize")) == 2
    assert len(sent(server, "tools/call")) == 1


def test_l8_reconnect_sets_up_the_new_session_and_availability_follows() -> None:
    """L8: reconnect() while ready: a new session, availability None until it is up."""
    server = FakeServer()
    link = connect(server)
    link.engine.reconnect(link.now)
    link.pump()
    assert len(sent(server, "initialize")) == 2
    assert link.engine.availability is not None and link.engine.availability.ok
    cid = call(link)
    assert isinstance(outcome(link, cid), CallSucceeded)
    assert sent(server, "tools/call")[-1].headers["mcp-session-id"] == "session-2"


def test_l8_reconnect_while_a_new_session_waits_for_its_retry_goes_at_once() -> None:
    """L8, L4: a new session that failed waits for its backoff; reconnect() tries now."""
    server = FakeServer()
    link = connect(server)
    server.sessions.clear()
    server.hook = lambda seen: (
        Reply(503, [(b"content-type", b"text/plain")], [b"down"])
        if seen.message and seen.message.get("method") == "initialize"
        else None
    )
    cid = call(link, timeout=30.0)
    assert len(sent(server, "initialize")) == 2
    server.hook = None
    link.engine.reconnect(link.now)  # no waiting for the 1 s backoff
    link.pump()
    assert len(sent(server, "initialize")) == 3
    assert link.engine.availability is not None and link.engine.availability.ok
    assert isinstance(outcome(link, cid), CallSucceeded)


def test_l8_reconnect_while_down_retries_the_start_up_at_once() -> None:
    """L8, L3: a server that is down is tried again at once, not after its backoff."""
    server = FakeServer()
    server.hook = lambda seen: Reply(503, [(b"content-type", b"text/plain")], [b"down"])
    link = connect(server)
    availability = link.engine.availability
    assert availability is not None and not availability.ok
    server.hook = None
    link.engine.reconnect(link.now)
    link.pump()
    assert link.engine.availability is not None and link.engine.availability.ok
