"""The HTTP engine as a hypothesis state machine (K2, K6, P4, P5, H3, H4).

The test plays the server by hand: it holds every open exchange and chooses what
arrives on it and when — responses in any order, duplicated or late (after a cancel
or a timeout), progress, server requests, streams closed with or without an event
id (resumed by GET), and the fake clock moving past deadlines; the session expiring
(404) while the server is down, so that setting up a new one fails and is retried (H6);
notices and answers the server never acknowledges (H10); SSE events of another type
(P5); floods of server requests (P6); arguments JSON cannot carry (K9); resource reads
and prompts on the same path as calls (F1); subscribing to resources and stopping (F2).
Invariants (each "call" here is any request
of the host: a call, a read or a prompt):

* K6/K2: every call ends exactly once (one CallSucceeded / CallFailed / CallCancelled);
* K2: no call outlives its deadline;
* K6: every abandoned call (cancelled or timed out) that was on the wire of a session
  that did not expire produced exactly one ``notifications/cancelled`` with its id; no
  call produced more than one, and no call that never went out produced one;
* P4: every server request got at most one answer (ping → {}, others → -32601);
* H6: once the server gave a session id, no request other than ``initialize`` (and no
  GET) goes out without one;
* H10: no notice or answer POST stays open longer than its bound;
* P6: answer POSTs open at once never exceed ``max_answers_in_flight``;
* nothing is pending (no request, timer or exchange) once every call has ended;
* F2, H6: every resource the host subscribed to (and did not unsubscribe from) was
  subscribed to on the session in use, however many new sessions came between.

Input from a person (Q1-Q5, D2): the client is made with no input hooks, with
every hook (``elicit`` for form and URL questions, ``roots``, ``sample``), or
with roots given as a list and form questions only. The server asks
``elicitation/create`` (form, URL, malformed), ``roots/list`` and
``sampling/createMessage`` (well formed or not) on a call's stream; the test
plays the host's hooks: an answer in time (valid, not fitting the form,
unusable, holding a value JSON cannot carry), a hook that raises or was not
given, an answer after the core's hook deadline, and a report for an attempt
already settled (answered, failed, timed out or closed). Invariants:

* every server request gets at most one answer, of the kind the client's offer
  and the hook's outcome make (a result of the hook's shape, ``-32603`` when the
  hook failed, ``-32602`` for a malformed question, ``-32601`` when nothing is
  offered), and exactly one by the end unless the client closed first;
* a failed hook fails the call whose stream carried the question (``InputError``
  with the hook's outcome) and no other; a report for a settled attempt (also one
  of a session the server forgot, H6) changes nothing (no message, no event);
* while an attempt is open, ``next_deadline()`` is finite and no later than its
  deadline; none is left once the clock has run out;
* no form value, URL secret or server prompt reaches a log record, an
  ``AskHost``'s repr or an error's text.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

import hypothesis
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fake_peer import connect
from input_hooks import (
    HOOK_OUTCOMES,
    HOOK_TIMEOUT,
    HOOKED,
    OFFER_OPTIONS,
    QUESTIONS,
    ROOTS,
    Asked,
    SecretWatch,
    answer_fits,
    failure_outcome,
    no_secret_in,
    report,
)
from mcpcore import AskHost, CallTimeout, InputError, InvalidArguments, InvalidState
from mcpcore.base._events import (
    AbortExchange,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    HttpRequest,
    RequestSucceeded,
)
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.features._prompts import PROMPTS_GET
from mcpcore.features._resources import RESOURCES_READ
from mcpcore.session._session import SessionOptions
from mcpcore.wire._http import HttpLimits
from mcpcore.wire._requests import Ask
from test_subscriptions import SubscribingServer

SSE = [(b"content-type", b"text/event-stream")]
JSON = [(b"content-type", b"application/json")]


@dataclass
class Open:
    """An exchange the 'server' holds: a call's POST or a resume GET for it."""

    cid: int
    rid: int = 0  # the request's id on the wire: the call id, or a new one once re-sent (H6)
    sid: str = ""  # the session id it carried
    started: bool = False
    answered: bool = False  # its own response went out on it (the server may keep it open)


NOTICE_BOUND = 3.0
ANSWERS_IN_FLIGHT = 3
CLOSE_BOUND = HttpLimits().close_timeout
TOOLS = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}

# What each offer answers a question with when no hook is asked (P4, E4, Q1, Q3).
ANSWERED: dict[str, dict[str, str]] = {
    "none": {},
    "all": {"elicit-bad": "-32602", "sampling-bad": "-32602"},
    "lists": {"elicit-url": "-32602", "elicit-bad": "-32602", "roots": "roots-list"},
}


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.open: dict[int, Open] = {}
        self.deadline: dict[int, float] = {}
        self.outcomes: dict[int, list[Any]] = {}
        self.notices: Counter[int] = Counter()
        self.server_requests: dict[str, str] = {}
        self.answers: Counter[str] = Counter()
        self.bad_answers: list[Any] = []
        self.next_event = 0
        self.next_server_id = 0
        # H6: the session the 'server' knows, whether it is up, and what broke the rule
        self.sid = "session-1"
        self.sessions = 1
        self.server_up = True
        self.without_session: list[str] = []
        self.cid_of: dict[int, int] = {}  # request id on the wire -> the call it carries
        self.on_wire: dict[int, bool] = {}  # call id -> its POST reached a live session
        self.kinds: dict[int, str] = {}  # call id -> its method (F1: not only tools/call)
        self.expired_during: set[int] = set()  # calls that lived through an expiry
        # H10, P6: notices and answers the 'server' holds without answering
        self.stall_notices = False
        self.open_notices: dict[int, tuple[float, bool]] = {}  # xid -> (opened at, is answer)
        self.most_answers_open = 0
        # F2: the host's subscriptions (confirmed, not since stopped), and which were
        # sent on which session
        self.uri_of: dict[int, str] = {}
        self.subscribed: set[str] = set()
        self.subscribed_on: set[tuple[str, str]] = set()
        # Q1-Q5, D2: the host's hooks
        self.offer = "none"
        self.asked: dict[int, Asked] = {}  # attempt -> what it asks
        self.new_asks: list[AskHost] = []
        self.hook_failed_for: dict[int, set[str]] = {}  # call id -> outcomes of its failed hooks
        self.answered_valid: set[str] = set()  # server requests a hook answered in time
        self.unanswered_at_close: set[str] = set()
        self.expiries = 0
        self.asked_in: dict[str, int] = {}  # server request -> expiries before it came
        self.watch = SecretWatch()

    @initialize(offer=st.sampled_from(sorted(OFFER_OPTIONS)))
    def connect_with_hooks(self, offer: str) -> None:
        """Q1, Q3: the client offers no hook, every hook, or roots as a list and form
        questions only (seed 000: nothing is declared without one)."""
        self.offer = offer
        options = SessionOptions(server_name="srv", call_timeout=10, input=OFFER_OPTIONS[offer])
        limits = HttpLimits(
            max_reconnects=2, notice_timeout=NOTICE_BOUND, max_answers_in_flight=ANSWERS_IN_FLIGHT
        )
        self.watch.install()
        self.link = connect(SubscribingServer(), options=options, listen=False, limits=limits)
        self.engine = self.link.engine
        self.now = self.link.now
        self.link.events.clear()

    # --- plumbing ------------------------------------------------------------------

    def process(self) -> None:
        """Take the engine's actions and events; answer notifications at once (202)."""
        e = self.engine
        while True:
            actions = e.take_actions()
            self.new_asks += e.take_input()
            for event in e.take_events():
                if isinstance(event, (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)):
                    self.outcomes.setdefault(event.call_id, []).append(event)
                    if isinstance(event, RequestSucceeded) and self.kinds.get(event.call_id) == "resources/subscribe":
                        self.subscribed.add(self.uri_of[event.call_id])
            if not actions:
                return
            for action in actions:
                if isinstance(action, AbortExchange):
                    self.open.pop(action.exchange_id, None)
                    self.open_notices.pop(action.exchange_id, None)
                    continue
                assert isinstance(action, HttpRequest)
                self.perform(action)

    def perform(self, req: HttpRequest) -> None:
        e, xid = self.engine, req.exchange_id
        headers = dict(req.headers)
        message = json.loads(req.body) if req.body else {}
        method = message.get("method")
        if (req.method == "GET" or ("id" in message and method not in (None, "initialize"))) and (
            headers.get(b"mcp-session-id") != self.sid.encode()
        ):
            self.without_session.append(f"{req.method} {method}")
        if req.method == "DELETE":  # L6: the close; held like a notice when stalling
            if self.stall_notices:
                self.open_notices[xid] = (self.now, False)
            else:
                e.response_started(xid, 200, [], self.now)
                e.response_ended(xid, self.now)
            return
        if req.method == "GET":
            last = headers[b"last-event-id"].decode()
            sid = headers.get(b"mcp-session-id", b"").decode()
            rid = int(last.split("-")[0])  # event ids start with the request's id
            self.open[xid] = Open(cid=self.cid_of.get(rid, rid), rid=rid, sid=sid)
            return
        assert req.method == "POST" and req.body is not None
        if method == "initialize":
            self.initialize(xid, message["id"])
            return
        if method == "tools/list":
            e.response_started(xid, 200, JSON, self.now)
            body = {"jsonrpc": "2.0", "id": message["id"], "result": TOOLS}
            e.response_data(xid, json.dumps(body).encode(), self.now)
            e.response_ended(xid, self.now)
            return
        if method in ("resources/subscribe", "resources/unsubscribe"):
            sid = headers.get(b"mcp-session-id", b"").decode()
            if method == "resources/subscribe":
                self.subscribed_on.add((message["params"]["uri"], sid))
            if message["id"] not in self.deadline:  # sent again for a new session: answered
                e.response_started(xid, 200, JSON, self.now)
                e.response_data(xid, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode(), self.now)
                e.response_ended(xid, self.now)
                return
        if method in ("tools/call", "resources/read", "prompts/get", "resources/subscribe", "resources/unsubscribe"):
            rid = message["id"]
            # A request re-sent on a new session has a new id (H6); the call it
            # carries is the one the engine says it carries.
            carriers = self.engine.session.path.carriers
            cid = next((c for c, r in carriers.items() if r == rid), rid)
            self.cid_of[rid] = cid
            self.open[xid] = Open(cid=cid, rid=rid, sid=headers.get(b"mcp-session-id", b"").decode())
            self.on_wire[cid] = True
            return
        if method == "notifications/cancelled":
            rid = message["params"]["requestId"]
            self.notices[self.cid_of.get(rid, rid)] += 1
        if "method" not in message:  # our answer to a server request
            rid = message["id"]
            self.answers[rid] += 1
            if not self.answer_is_expected(rid, message):
                self.bad_answers.append(message)
        if self.stall_notices:
            self.open_notices[xid] = (self.now, "method" not in message)
            answers_open = sum(1 for _, answer in self.open_notices.values() if answer)
            self.most_answers_open = max(self.most_answers_open, answers_open)
            return
        e.response_started(xid, 202, [], self.now)
        e.response_ended(xid, self.now)

    def initialize(self, xid: int, rid: int) -> None:
        """H6: the 'server' sets up a new session, or fails while it is down."""
        e = self.engine
        if not self.server_up:
            e.response_started(xid, 503, [(b"content-type", b"text/plain")], self.now)
            e.response_data(xid, b"down", self.now)
            e.response_ended(xid, self.now)
            return
        self.sessions += 1
        self.sid = f"session-{self.sessions}"
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "resources": {"subscribe": True}}}
        e.response_started(xid, 200, [*JSON, (b"mcp-session-id", self.sid.encode())], self.now)
        e.response_data(xid, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode(), self.now)
        e.response_ended(xid, self.now)

    def answer_is_expected(self, rid: str, message: dict[str, Any]) -> bool:
        """P4, Q1-Q5: the answer's kind is the one the offer and the hook's outcome make."""
        expected = self.server_requests.get(rid)
        code = message.get("error", {}).get("code")
        if expected is None:
            return False
        if expected == "ping":
            return message.get("result") == {}
        if expected == "roots-list":
            return message.get("result") == {"roots": list(ROOTS)}
        if expected.startswith("hook:"):
            if "result" in message:  # only after an answer in time, of the hook's shape
                return rid in self.answered_valid and answer_fits(expected[5:], message["result"])
            return code == -32603
        return code == int(expected)

    def sse_to(self, xid: int, *blocks: str) -> None:
        ex = self.open[xid]
        if not ex.started:
            ex.started = True
            self.engine.response_started(xid, 200, SSE, self.now)
        for block in blocks:
            if xid in self.open:
                self.engine.response_data(xid, block.encode(), self.now)
        self.process()

    def event_block(self, rid: int, message: dict[str, Any] | None) -> str:
        self.next_event += 1
        data = "" if message is None else json.dumps(message)
        return f"id: {rid}-{self.next_event}\ndata: {data}\n\n"

    def running(self) -> list[int]:
        return sorted(c for c in self.deadline if c not in self.outcomes)

    def pick_open(self, index: int) -> int:
        keys = sorted(self.open)
        return keys[index % len(keys)]

    # --- rules -----------------------------------------------------------------------

    @rule(timeout=st.sampled_from([None, 1.0, 2.5, 30.0]), args=st.sampled_from([None, {}, {"a": 1}]))
    def start_call(self, timeout: float | None, args: dict[str, Any] | None) -> None:
        if self.engine.finished:
            with pytest.raises(InvalidState):
                self.engine.call("srv/echo", args, self.now, timeout=timeout)
            return
        cid = self.engine.call("srv/echo", args, self.now, timeout=timeout)
        assert cid not in self.deadline
        self.deadline[cid] = self.now + (10.0 if timeout is None else timeout)
        self.process()

    @rule(timeout=st.sampled_from([None, 1.0, 30.0]), kind=st.sampled_from(["read", "prompt"]))
    def start_request(self, timeout: float | None, kind: str) -> None:
        """F1: a resource read or a prompt, on the same path as a call."""
        ask = (
            Ask(RESOURCES_READ, {"uri": "r://x"}, "r://x")
            if kind == "read"
            else Ask(PROMPTS_GET, {"name": "p"}, "p")
        )
        if self.engine.finished:
            with pytest.raises(InvalidState):
                self.engine.request(ask, self.now, timeout=timeout)
            return
        cid = self.engine.request(ask, self.now, timeout=timeout)
        assert cid not in self.deadline
        self.deadline[cid] = self.now + (10.0 if timeout is None else timeout)
        self.kinds[cid] = ask.kind.method
        self.process()

    @rule(uri=st.sampled_from(["r://a", "r://b"]), on=st.booleans(), timeout=st.sampled_from([None, 1.0]))
    def subscribe(self, uri: str, on: bool, timeout: float | None) -> None:
        """F2: subscribe to a resource, or stop; held by the 'server' like a call."""
        if self.engine.finished:
            with pytest.raises(InvalidState):
                self.engine.subscribe(uri, self.now, on=on, timeout=timeout)
            return
        cid = self.engine.subscribe(uri, self.now, on=on, timeout=timeout)
        if not on:
            self.subscribed.discard(uri)
        self.deadline[cid] = self.now + (10.0 if timeout is None else timeout)
        self.kinds[cid] = "resources/subscribe" if on else "resources/unsubscribe"
        self.uri_of[cid] = uri
        self.process()

    @precondition(lambda self: self.deadline)
    @rule(index=st.integers(0, 100))
    def cancel(self, index: int) -> None:
        cids = sorted(self.deadline)
        cid = cids[index % len(cids)]
        was_running = cid not in self.outcomes
        assert self.engine.cancel(cid, self.now) is was_running
        self.process()

    @precondition(lambda self: self.open)
    @rule(
        index=st.integers(0, 100),
        shape=st.sampled_from(["json", "sse", "sse-bytewise", "error", "http500"]),
        twice=st.booleans(),
    )
    def answer(self, index: int, shape: str, twice: bool) -> None:
        xid = self.pick_open(index)
        ex = self.open[xid]
        body: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}]}
        if shape == "error":
            body["isError"] = True
        method = self.kinds.get(ex.cid)
        if method == "resources/read":
            body = {"contents": [{"uri": "r://x", "text": "ok"}]}
        elif method == "prompts/get":
            body = {"messages": [{"role": "user", "content": {"type": "text", "text": "ok"}}]}
        response = {"jsonrpc": "2.0", "id": ex.rid, "result": body}
        e = self.engine
        if shape == "http500":
            if ex.started:
                shape = "sse"
            else:
                e.response_started(xid, 500, [], self.now)
                e.response_data(xid, b"internal \x1b error", self.now)
                e.response_ended(xid, self.now)
                self.open.pop(xid, None)
                self.process()
                return
        if shape == "json" and not ex.started:
            e.response_started(xid, 200, JSON, self.now)
            e.response_data(xid, json.dumps(response).encode(), self.now)
            e.response_ended(xid, self.now)
            self.open.pop(xid, None)
            self.process()
            return
        blocks = [self.event_block(ex.rid, response)] * (2 if twice else 1)
        if shape == "sse-bytewise":
            blocks = [ch for block in blocks for ch in block]
        self.sse_to(xid, *blocks)
        if xid in self.open:
            e.response_ended(xid, self.now)
            self.open.pop(xid, None)
        self.process()

    @precondition(lambda self: self.open and len(self.deadline) > 1)
    @rule(index=st.integers(0, 100), other=st.integers(0, 100))
    def stray_response(self, index: int, other: int) -> None:
        """A response for some other (maybe ended) call arrives on this stream (P5)."""
        xid = self.pick_open(index)
        cids = sorted(self.deadline)
        target = cids[other % len(cids)]
        response = {"jsonrpc": "2.0", "id": target, "result": {"content": []}}
        if target == self.open[xid].rid:
            self.open[xid].answered = True
        self.sse_to(xid, self.event_block(self.open[xid].rid, response))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), progress=st.integers(0, 10))
    def progress(self, index: int, progress: int) -> None:
        xid = self.pick_open(index)
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": self.open[xid].rid, "progress": progress, "total": 10},
        }
        self.sse_to(xid, self.event_block(self.open[xid].rid, note))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), question=st.sampled_from(sorted(QUESTIONS)))
    def server_request(self, index: int, question: str) -> None:
        """P4, Q1-Q3: a server request on a call's stream; a hooked one becomes exactly
        one ``AskHost`` (the rest are answered at once)."""
        xid = self.pick_open(index)
        cid = self.open[xid].cid
        self.next_server_id += 1
        rid = f"s{self.next_server_id}"
        hooked = HOOKED[self.offer].get(question)
        expected = (
            f"hook:{hooked}"
            if hooked
            else "ping"
            if question == "ping"
            else ANSWERED[self.offer].get(question, "-32601")
        )
        self.server_requests[rid] = expected
        # a stream of a session the server forgot: its answer has nowhere to go (H6)
        self.asked_in[rid] = self.expiries if self.open[xid].sid == self.sid else -1
        method, params = QUESTIONS[question]
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.new_asks.clear()
        self.sse_to(xid, self.event_block(self.open[xid].rid, message))
        asks, self.new_asks = self.new_asks, []
        if not expected.startswith("hook:") or self.engine.finished:
            assert asks == [], asks
            return
        [ask] = asks
        kind = expected[5:]
        assert ask.hook == kind.split("-")[0] and ask.attempt not in self.asked
        assert no_secret_in(repr(ask), repr(ask.request)), ask
        if kind.startswith("elicit"):
            assert ask.request is not None and ask.request.mode == kind[7:]
            # inside a running call: its tool; on the stream of one that ended: none
            in_call = cid in self.running() and self.kinds.get(cid) is None
            assert ask.request.tool_id == ("srv/echo" if in_call else None)
        self.asked[ask.attempt] = Asked(ask.attempt, kind, cid, self.now + HOOK_TIMEOUT, rid=rid)

    @rule(
        timeout=st.sampled_from([None, 1.0, 30.0]),
        question=st.sampled_from(["elicit-form", "elicit-url", "roots", "sampling"]),
    )
    def call_asks_the_person(self, timeout: float | None, question: str) -> None:
        """Q1-Q3: a call whose stream at once carries a question for the person."""
        self.start_call(timeout, {})
        running = self.running()
        waiting = [x for x, ex in self.open.items() if running and ex.cid == running[-1]]
        if waiting:
            self.server_request(sorted(self.open).index(waiting[0]), question)

    def open_attempts(self) -> list[Asked]:
        return [a for _, a in sorted(self.asked.items()) if not a.settled]

    def settled_attempts(self) -> list[Asked]:
        return [a for _, a in sorted(self.asked.items()) if a.settled]

    def report(self, asked: Asked, how: str) -> None:
        report(self.engine, asked.attempt, asked.kind, how, self.now)

    @precondition(lambda self: self.open_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(HOOK_OUTCOMES))
    def hook_reports(self, index: int, how: str) -> None:
        """D2: the hook answers in time (fitting or not), raises, or was not given."""
        attempts = self.open_attempts()
        asked = attempts[index % len(attempts)]
        running = asked.cid in self.running()
        asked.settled = True
        outcome = failure_outcome(asked.kind, how)
        if outcome is None:
            assert asked.rid is not None
            self.answered_valid.add(asked.rid)
        self.report(asked, how)
        self.process()
        hypothesis.event(f"hook {how}: {asked.kind}{' (call running)' if running else ''}")
        if outcome is None:
            return
        self.hook_failed_for.setdefault(asked.cid, set()).add(outcome)
        if running and asked.cid not in self.expired_during:
            # the call whose stream carried the question fails now, with the reason
            [ended] = self.outcomes[asked.cid]
            assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError), ended
            assert ended.error.outcome == outcome, (ended.error.outcome, outcome)

    @precondition(lambda self: self.open_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(["valid", "raised"]))
    def hook_answers_late(self, index: int, how: str) -> None:
        """D2, Q5: the clock passes the hook's deadline (its call fails "late", the
        server gets -32603), then the hook answers: the answer changes nothing."""
        attempts = self.open_attempts()
        asked = attempts[index % len(attempts)]
        running = asked.cid in self.running() and asked.deadline < self.deadline[asked.cid]
        self.advance(asked.deadline - self.now + 0.001)
        assert asked.settled  # advance settles attempts past their deadline
        hypothesis.event(f"hook late: {asked.kind}{' (call running)' if running else ''}")
        if running and asked.cid not in self.expired_during:
            [ended] = self.outcomes[asked.cid]
            assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError), ended
            assert ended.error.outcome == "late"
        self.stale_report(asked, how)

    @precondition(lambda self: self.settled_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(HOOK_OUTCOMES))
    def hook_answers_old_attempt(self, index: int, how: str) -> None:
        """D2: a report for an attempt already answered, failed, past its deadline or
        closed: nothing is sent, nothing ends."""
        attempts = self.settled_attempts()
        self.stale_report(attempts[index % len(attempts)], how)
        hypothesis.event("hook answers an old attempt")

    def stale_report(self, asked: Asked, how: str) -> None:
        self.process()
        self.report(asked, how)
        assert self.engine.take_actions() == []
        assert self.engine.take_events() == []
        assert self.engine.take_input() == []

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), primed=st.booleans(), broken=st.booleans())
    def close_stream(self, index: int, primed: bool, broken: bool) -> None:
        """The stream ends (or breaks) before the response; with an event id it is resumed."""
        xid = self.pick_open(index)
        if primed:
            self.sse_to(xid, self.event_block(self.open[xid].rid, None))
        if xid not in self.open:
            self.process()
            return
        if not self.open[xid].started and not broken:
            self.sse_to(xid)
        self.open.pop(xid)
        if broken:
            self.engine.response_failed(xid, TransportFailure(FailureKind.RESET), self.now)
        else:
            self.engine.response_ended(xid, self.now)
        self.process()

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100))
    def garbage(self, index: int) -> None:
        """A malformed message fails only its own exchange (P5)."""
        xid = self.pick_open(index)
        self.sse_to(xid, "data: {not json\n\n")

    @precondition(lambda self: any(not ex.started for ex in self.open.values()))
    @rule(index=st.integers(0, 100))
    def session_expires(self, index: int) -> None:
        """H6: the server forgot the session; an exchange not yet answered gets 404."""
        waiting = sorted(x for x, ex in self.open.items() if not ex.started)
        xid = waiting[index % len(waiting)]
        ex = self.open.pop(xid)
        if ex.sid == self.sid:  # else: a session forgotten before, answering late
            self.sid = "forgotten"
        self.expiries += 1
        self.expired_during.update(self.running())
        self.on_wire[ex.cid] = False  # a 404 means the server did not process it
        self.engine.response_started(xid, 404, [(b"content-type", b"text/plain")], self.now)
        self.process()
        if self.engine.session.input.idle:
            # H6, D2: the questions of the forgotten session are void (when the engine
            # took this 404 as the session's end: then all of them, else none); a
            # later report for one changes nothing
            for asked in self.open_attempts():
                asked.settled = True

    @rule(up=st.booleans())
    def server_up_or_down(self, up: bool) -> None:
        """While down, setting up a new session fails (HTTP 503) and is retried (H6, L4)."""
        self.server_up = up

    @rule(stall=st.booleans())
    def notices_go_unanswered(self, stall: bool) -> None:
        """H10: from now on notices and answers get no reply (or get one at once again)."""
        self.stall_notices = stall

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), count=st.integers(1, 30))
    def server_request_flood(self, index: int, count: int) -> None:
        """P6: many pings in one chunk."""
        xid = self.pick_open(index)
        blocks = []
        for _ in range(count):
            self.next_server_id += 1
            rid = f"s{self.next_server_id}"
            self.server_requests[rid] = "ping"
            self.asked_in[rid] = self.expiries if self.open[xid].sid == self.sid else -1
            blocks.append(self.event_block(self.open[xid].rid, {"jsonrpc": "2.0", "id": rid, "method": "ping"}))
        self.sse_to(xid, "".join(blocks))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), kind=st.sampled_from(["ping", "endpoint", "custom"]))
    def other_event_type(self, index: int, kind: str) -> None:
        """P5: an event of another type with data that is not JSON fails nothing."""
        xid = self.pick_open(index)
        self.next_event += 1
        self.sse_to(xid, f"event: {kind}\nid: {self.open[xid].rid}-{self.next_event}\ndata: {{no json\n\n")

    @rule(bad=st.sampled_from([float("nan"), {1, 2}, object(), [float("inf")]]))
    def unencodable_arguments(self, bad: object) -> None:
        """K9: refused at once; nothing is registered, sent or scheduled."""
        pending = list(self.engine.session.pending_call_ids)
        with pytest.raises(InvalidState if self.engine.finished else InvalidArguments):
            self.engine.call("srv/echo", {"value": bad}, self.now)
        assert self.engine.take_actions() == []
        assert list(self.engine.session.pending_call_ids) == pending

    @rule(seconds=st.sampled_from([0.001, 0.5, 1.0, 2.5, 10.0, 30.0]))
    def advance(self, seconds: float) -> None:
        target = self.now + seconds
        while True:
            self.process()
            due = self.engine.next_deadline()
            if due is None or due > target:
                break
            self.now = max(self.now, due)
            self.engine.handle_timer(self.now)
        self.now = target
        self.process()
        for asked in self.asked.values():
            if not asked.settled and asked.deadline <= self.now:
                asked.settled = True
                self.hook_failed_for.setdefault(asked.cid, set()).add("late")

    # --- invariants ------------------------------------------------------------------

    @invariant()
    def every_call_ends_at_most_once_and_pending_matches(self) -> None:
        for cid, events in self.outcomes.items():
            assert len(events) == 1, (cid, events)
        assert set(self.engine.session.pending_call_ids) == set(self.running())

    @invariant()
    def no_call_outlives_its_deadline(self) -> None:
        for cid in self.running():
            assert self.now < self.deadline[cid], (cid, self.now, self.deadline[cid])

    @invariant()
    def abandoned_calls_sent_exactly_one_cancel(self) -> None:
        for cid in self.deadline:
            events = self.outcomes.get(cid, [])
            abandoned = bool(events) and (
                isinstance(events[0], CallCancelled)
                or (
                    isinstance(events[0], CallFailed)
                    # Q5: a hook failure cancels the call whose stream carried the question
                    and isinstance(events[0].error, (CallTimeout, InputError))
                )
            )
            on_wire = self.on_wire.get(cid, False)
            assert self.notices[cid] <= (1 if abandoned and on_wire else 0), (cid, events)
            if abandoned and on_wire and cid not in self.expired_during:
                assert self.notices[cid] == 1, (cid, events, self.notices[cid])
        assert set(self.notices) <= set(self.deadline)

    @invariant()
    def server_requests_answered_at_most_once(self) -> None:
        assert self.bad_answers == []
        assert all(n == 1 for n in self.answers.values())

    @invariant()
    def a_hook_failure_fails_only_its_own_call(self) -> None:
        for cid, events in self.outcomes.items():
            if isinstance(events[0], CallFailed) and isinstance(events[0].error, InputError):
                assert events[0].error.outcome in self.hook_failed_for.get(cid, ()), (cid, events)

    @invariant()
    def an_open_attempt_has_a_finite_deadline(self) -> None:
        """D2: the core bounds every hook; a pending question never leaves the engine
        without a deadline (nor one past the hook's)."""
        attempts = self.open_attempts()
        if self.engine.finished:
            assert self.engine.session.input.idle
            return
        assert self.engine.session.input.idle == (not attempts), attempts
        if attempts:
            due = self.engine.next_deadline()
            assert due is not None and math.isfinite(due)
            assert due <= min(a.deadline for a in attempts)

    @invariant()
    def no_secret_in_logs_or_errors(self) -> None:
        assert self.watch.leaks == []
        for events in self.outcomes.values():
            if isinstance(events[0], CallFailed):
                assert no_secret_in(events[0].error, repr(events[0].error)), events[0]

    @invariant()
    def no_request_without_a_session_once_one_was_given(self) -> None:
        assert self.without_session == []

    @invariant()
    def nothing_held_longer_than_its_bound(self) -> None:
        for xid, (opened, _) in self.open_notices.items():
            assert self.now - opened < NOTICE_BOUND, (xid, opened, self.now)

    @invariant()
    def answers_in_flight_are_bounded(self) -> None:
        assert self.most_answers_open <= ANSWERS_IN_FLIGHT

    @invariant()
    def engine_and_server_agree_on_open_exchanges(self) -> None:
        assert self.engine.http.active_exchanges == sorted([*self.open, *self.open_notices])

    @invariant()
    def subscriptions_survive_new_sessions(self) -> None:
        session = self.engine.session
        if self.engine.finished or session.reinitializing or self.sid == "forgotten":
            return
        if self.open_notices:  # requests of a new session wait for its held `initialized`
            return
        for uri in self.subscribed:
            assert (uri, self.sid) in self.subscribed_on, (uri, self.sid, self.subscribed_on)

    @invariant()
    def nothing_pending_when_idle(self) -> None:
        if self.running():
            return
        session = self.engine.session
        if session.reinitializing or not session.is_idle:
            # Setting up a new session (retried on the backoff while the server is
            # down) or the re-list after it: work in progress, never without a deadline.
            assert session.next_deadline() is not None or self.open or self.open_notices
            return
        # only streams whose own response went out may linger, each for a bounded
        # grace (HttpLimits.response_linger), which is then the only deadline left
        assert all(ex.answered for ex in self.open.values()), self.open
        assert self.engine.next_deadline() is None or self.open or self.open_notices

    def teardown(self) -> None:
        if not hasattr(self, "engine"):
            return
        try:
            # Every call started eventually ends: let the clock run out, with the server up.
            self.server_up = True
            self.stall_notices = False
            self.advance(60.0)
            for cid in self.deadline:
                assert len(self.outcomes.get(cid, [])) == 1
            self.every_call_ends_at_most_once_and_pending_matches()
            self.abandoned_calls_sent_exactly_one_cancel()
            self.no_request_without_a_session_once_one_was_given()
            assert not self.engine.session.reinitializing
            self.nothing_pending_when_idle()
            # Q5, D2: no question outlives its hook's deadline; every server request
            # was answered once, unless the client closed before it could be, or its
            # session expired first (H6: its answer means nothing to the next one)
            assert self.open_attempts() == [] and self.engine.session.input.idle
            self.server_requests_answered_at_most_once()
            for rid in self.server_requests:
                dropped = rid in self.unanswered_at_close or self.asked_in[rid] < self.expiries
                assert self.answers[rid] == 1 or dropped, rid
            self.no_secret_in_logs_or_errors()
        finally:
            self.watch.remove()

    @rule(stall=st.booleans())
    def close_with_what_is_in_flight(self, stall: bool) -> None:
        """L6, H9: closing ends every call at once and is over within the one close
        bound, whatever is in flight, also when the server holds every notice and the
        DELETE; then the engine asks for nothing more. The machine goes on: later
        rules meet a closed engine (calls refused, input ignored)."""
        if self.engine.finished:
            return
        self.stall_notices = stall
        closed_at = self.now
        self.engine.close(self.now)
        self.process()
        # D2: every hook attempt is over; a report for one changes nothing
        for asked in self.asked.values():
            asked.settled = True
        self.unanswered_at_close.update(r for r in self.server_requests if not self.answers[r])
        assert self.running() == []
        self.every_call_ends_at_most_once_and_pending_matches()
        self.advance(CLOSE_BOUND)
        assert self.engine.finished, self.engine.http.active_exchanges
        assert self.engine.http.active_exchanges == [] and self.engine.next_deadline() is None
        assert self.now - closed_at <= CLOSE_BOUND
        self.open.clear()
        self.open_notices.clear()
        self.stall_notices = False


# 400 runs by default: with the input hooks (issue 28) each run plays more rules, and
# the test stays within ~15 s on a slow shared CI machine.
EngineMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MCPCORE_MACHINE_EXAMPLES", "500")) * 4 // 5,
    stateful_step_count=30,
    deadline=None,
)
test_engine_state_machine = EngineMachine.TestCase
