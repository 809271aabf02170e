"""The HTTP engine as a hypothesis state machine (K2, K6, P4, P5, H3, H4).

The test plays the server by hand: it holds every open exchange and chooses what
arrives on it and when — responses in any order, duplicated or late (after a cancel
or a timeout), progress, server requests, streams closed with or without an event
id (resumed by GET), and the fake clock moving past deadlines. Invariants:

* K6/K2: every call ends exactly once (one CallSucceeded / CallFailed / CallCancelled);
* K2: no call outlives its deadline;
* K6: every abandoned call (cancelled or timed out) that was sent produced exactly one
  ``notifications/cancelled`` with its id, and no other call produced one;
* P4: every server request got exactly one answer (ping → {}, others → -32601);
* nothing is pending (no request, timer or exchange) once every call has ended.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fake_peer import FakeServer, connect
from mcpcore import CallTimeout
from mcpcore._events import AbortExchange, CallCancelled, CallFailed, CallSucceeded, HttpRequest
from mcpcore._http import HttpLimits
from mcpcore._session import SessionOptions

SSE = [(b"content-type", b"text/event-stream")]
JSON = [(b"content-type", b"application/json")]


@dataclass
class Open:
    """An exchange the 'server' holds: a call's POST or a resume GET for it."""

    cid: int
    started: bool = False
    answered: bool = False  # its own response went out on it (the server may keep it open)


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        options = SessionOptions(server_name="srv", call_timeout=10)
        self.link = connect(FakeServer(), options=options, listen=False, limits=HttpLimits(max_reconnects=2))
        self.engine = self.link.engine
        self.now = self.link.now
        self.link.events.clear()
        self.open: dict[int, Open] = {}
        self.deadline: dict[int, float] = {}
        self.outcomes: dict[int, list[Any]] = {}
        self.notices: Counter[int] = Counter()
        self.server_requests: dict[str, str] = {}
        self.answers: Counter[str] = Counter()
        self.bad_answers: list[Any] = []
        self.next_event = 0
        self.next_server_id = 0

    # --- plumbing ------------------------------------------------------------------

    def process(self) -> None:
        """Take the engine's actions and events; answer notifications at once (202)."""
        e = self.engine
        while True:
            actions = e.take_actions()
            for event in e.take_events():
                if isinstance(event, (CallSucceeded, CallFailed, CallCancelled)):
                    self.outcomes.setdefault(event.call_id, []).append(event)
            if not actions:
                return
            for action in actions:
                if isinstance(action, AbortExchange):
                    self.open.pop(action.exchange_id, None)
                    continue
                assert isinstance(action, HttpRequest)
                self.perform(action)

    def perform(self, req: HttpRequest) -> None:
        e, xid = self.engine, req.exchange_id
        if req.method == "GET":
            headers = dict(req.headers)
            last = headers[b"last-event-id"].decode()
            self.open[xid] = Open(cid=int(last.split("-")[0]))
            return
        assert req.method == "POST" and req.body is not None
        message = json.loads(req.body)
        if message.get("method") == "tools/call":
            self.open[xid] = Open(cid=message["id"])
            return
        if message.get("method") == "notifications/cancelled":
            self.notices[message["params"]["requestId"]] += 1
        elif "method" not in message:  # our answer to a server request
            rid = message["id"]
            self.answers[rid] += 1
            expected = self.server_requests.get(rid)
            ok = (
                message.get("result") == {}
                if expected == "ping"
                else message.get("error", {}).get("code") == -32601
            )
            if not ok:
                self.bad_answers.append(message)
        e.response_started(xid, 202, [], self.now)
        e.response_ended(xid, self.now)

    def sse_to(self, xid: int, *blocks: str) -> None:
        ex = self.open[xid]
        if not ex.started:
            ex.started = True
            self.engine.response_started(xid, 200, SSE, self.now)
        for block in blocks:
            if xid in self.open:
                self.engine.response_data(xid, block.encode(), self.now)
        self.process()

    def event_block(self, cid: int, message: dict[str, Any] | None) -> str:
        self.next_event += 1
        data = "" if message is None else json.dumps(message)
        return f"id: {cid}-{self.next_event}\ndata: {data}\n\n"

    def running(self) -> list[int]:
        return sorted(c for c in self.deadline if c not in self.outcomes)

    def pick_open(self, index: int) -> int:
        keys = sorted(self.open)
        return keys[index % len(keys)]

    # --- rules -----------------------------------------------------------------------

    @rule(timeout=st.sampled_from([None, 1.0, 2.5, 30.0]), args=st.sampled_from([None, {}, {"a": 1}]))
    def start_call(self, timeout: float | None, args: dict[str, Any] | None) -> None:
        cid = self.engine.call("srv/echo", args, self.now, timeout=timeout)
        assert cid not in self.deadline
        self.deadline[cid] = self.now + (10.0 if timeout is None else timeout)
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
        body = {"content": [{"type": "text", "text": "ok"}]}
        if shape == "error":
            body["isError"] = True
        response = {"jsonrpc": "2.0", "id": ex.cid, "result": body}
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
        blocks = [self.event_block(ex.cid, response)] * (2 if twice else 1)
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
        if target == self.open[xid].cid:
            self.open[xid].answered = True
        self.sse_to(xid, self.event_block(self.open[xid].cid, response))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), progress=st.integers(0, 10))
    def progress(self, index: int, progress: int) -> None:
        xid = self.pick_open(index)
        cid = self.open[xid].cid
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": cid, "progress": progress, "total": 10},
        }
        self.sse_to(xid, self.event_block(cid, note))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), method=st.sampled_from(["ping", "sampling/createMessage", "roots/list"]))
    def server_request(self, index: int, method: str) -> None:
        xid = self.pick_open(index)
        self.next_server_id += 1
        rid = f"s{self.next_server_id}"
        self.server_requests[rid] = method
        self.sse_to(xid, self.event_block(self.open[xid].cid, {"jsonrpc": "2.0", "id": rid, "method": method}))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100), primed=st.booleans(), broken=st.booleans())
    def close_stream(self, index: int, primed: bool, broken: bool) -> None:
        """The stream ends (or breaks) before the response; with an event id it is resumed."""
        xid = self.pick_open(index)
        cid = self.open[xid].cid
        if primed:
            self.sse_to(xid, self.event_block(cid, None))
        if xid not in self.open:
            self.process()
            return
        if not self.open[xid].started and not broken:
            self.sse_to(xid)
        self.open.pop(xid)
        if broken:
            self.engine.response_failed(xid, "reset", self.now)
        else:
            self.engine.response_ended(xid, self.now)
        self.process()

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, 100))
    def garbage(self, index: int) -> None:
        """A malformed message fails only its own exchange (P5)."""
        xid = self.pick_open(index)
        self.sse_to(xid, "data: {not json\n\n")

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
                or (isinstance(events[0], CallFailed) and isinstance(events[0].error, CallTimeout))
            )
            assert self.notices[cid] == (1 if abandoned else 0), (cid, events, self.notices[cid])
        assert set(self.notices) <= set(self.deadline)

    @invariant()
    def server_requests_answered_once(self) -> None:
        assert self.bad_answers == []
        assert all(n == 1 for n in self.answers.values())

    @invariant()
    def engine_and_server_agree_on_open_exchanges(self) -> None:
        assert self.engine.http.active_exchanges == sorted(self.open)

    @invariant()
    def nothing_pending_when_idle(self) -> None:
        if self.running():
            return
        session = self.engine.session
        assert session.is_idle
        # only streams whose own response went out may linger, each for a bounded
        # grace (HttpLimits.response_linger), which is then the only deadline left
        assert all(ex.answered for ex in self.open.values()), self.open
        assert self.engine.next_deadline() is None or self.open

    def teardown(self) -> None:
        # Every call started eventually ends: let the clock run out.
        self.advance(60.0)
        for cid in self.deadline:
            assert len(self.outcomes.get(cid, [])) == 1
        self.every_call_ends_at_most_once_and_pending_matches()
        self.abandoned_calls_sent_exactly_one_cancel()
        self.nothing_pending_when_idle()


EngineMachine.TestCase.settings = settings(max_examples=500, stateful_step_count=30, deadline=None)
test_engine_state_machine = EngineMachine.TestCase
