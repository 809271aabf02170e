"""The HTTP engine on the 2026-07-28 wire as a hypothesis state machine (E3, E4, M30, M43–M72).

The test plays a modern server that holds every call's (and every resource read's)
stream open and answers
whenever a rule says so: complete, without ``resultType``, ``input_required``
(with input requests, with state only, or asking for sampling), an unknown
``resultType``, a header mismatch, an error status with a JSON-RPC body, or a
stream that breaks. Callers call, cancel and wait; the clock moves.

Invariants after every step: every call ends exactly once; no call outlives its
deadline; nothing but requests is sent, each carrying the envelope and the
headers that mirror it (M18, M24, M25, M30); no GET, no DELETE, no session id
(M69, M70); a retried round has a new id and echoes the state exactly (M49,
M50); the rounds of one call stay bounded (M54); a broken call is never sent
again (E3), while a read whose stream broke is sent once more and never after a
second break (F1); every read ends exactly once, within its deadline.

Input from a person (Q1-Q5, D2): the client offers no hook, every hook, or roots
as a list and form questions only; ``input_required`` rounds ask form, URL and
malformed elicitations, roots, sampling (well formed or not), a method no client
offers, or two questions at once. The test plays the host's hooks: an answer in
time (fitting or not, unusable, holding a value JSON cannot carry), a hook that
raises or was not given, an answer after the core's hook deadline, and a report
for an attempt already settled (answered, failed, timed out, its call cancelled or
ended, the client closed). Calls made with ``on_input="return"`` pause at a
round that asks the person (Q4) and are resumed with answers that fit, do not fit,
leave a question out, or for a continuation resumed already. Invariants: the next round carries exactly the asked
keys, each answered in its hook's shape or as the offer says (E4); a round the
client cannot answer fails its call at once; a failed hook fails its own call
(``InputError`` with the hook's outcome) and no other; a stale report changes
nothing; while an attempt is open ``next_deadline()`` is finite and no later than
its deadline; none is left at the end; no form value, URL secret or server prompt
in a log record, a repr or an error; a paused call ends with its questions and
no hook asked, and a resume is refused at once (nothing sent) unless every question
has an answer that fits and the continuation is fresh.

With tasks on (T7–T9) a held call may also be answered with a task: its polls
(``tasks/get``) are held and answered like calls (working, completed, failed,
an unknown status, ``input_required``, an error, a broken stream); the call's
deadline becomes the task's own (``task_timeout``) unless the caller gave the call its
own ``timeout=``, which bounds the whole call (T9); a task is never polled
after its call ended, and a caller that abandons it sends ``tasks/cancel``.

Resource subscriptions (F2, M63–M68) ride on the same machine: the host
subscribes and stops; the 'server' holds each ``subscriptions/listen`` stream and
acknowledges it (all of its filter, or leaving a URI out), sends updates on it,
or ends it (with its result, or broken). Then also: each change ends exactly
once within its deadline; once the newest stream is acknowledged it is the only
one left open (make before break, M68); every URI the host holds subscribed is
in the newest stream's filter; every update sent reaches the host once.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fake_peer import Link, Reply, connect, tool
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
    hook_value,
    no_secret_in,
    report,
)
from mcpcore import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    CallTimeout,
    InputError,
    InputRequired,
    InvalidArguments,
    InvalidState,
    InvalidValue,
    NotOffered,
    RemoteProtocolError,
    RequestSucceeded,
    ResourceUpdated,
)
from mcpcore.base._events import AbortExchange, HttpRequest
from mcpcore.features._resources import RESOURCES_READ
from mcpcore.session._session import SessionOptions
from mcpcore.wire._requests import Ask

V = "2026-07-28"
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream")]
CALL_TIMEOUT = 10.0
TASK_TIMEOUT = 20.0

# The questions of one input_required round: name -> {key: question}.
ROUNDS: dict[str, dict[str, str]] = {
    "none": {},
    **{q: {q[:1] + q[-3:]: q} for q in QUESTIONS if q not in ("ping",)},
    "form+sampling": {"f": "elicit-form", "s": "sampling"},
    "form+roots+url": {"f": "elicit-form", "r": "roots", "u": "elicit-url"},
}


def expectation(offer: str, question: str) -> str:
    """What a client with ``offer`` answers one of a round's questions with (E4, Q1, Q3):
    ``hook:<kind>`` (the host is asked), ``cancel``, ``roots-empty``, ``roots-list``,
    or ``fail`` (the client cannot answer it: the call fails)."""
    hooked = HOOKED[offer].get(question)
    if hooked:
        return f"hook:{hooked}"
    if question.startswith("elicit"):
        return "cancel"
    if question == "roots":
        return "roots-list" if offer == "lists" else "roots-empty"
    return "fail"


@dataclass
class Held:
    """A call's POST the 'server' holds open."""

    call_key: int  # the first request id of the caller's call (its call id)
    request_id: int
    state: str | None  # the requestState this round must have echoed
    started: bool = False
    method: str = "tools/call"


class ModernServer:
    """Answers discovery and listing at once; holds every tools/call (the machine answers)."""

    def __init__(self, machine: ModernMachine) -> None:
        self.machine = machine

    def handle(self, req: HttpRequest) -> Reply:
        return self.machine.perform(req)


class ModernMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.offer = "none"
        self.asked: dict[int, Asked] = {}  # attempt -> what it asks
        self.inputs: dict[int, dict[str, str] | None] = {}  # call -> the next round's answers
        self.answered: dict[tuple[int, str], str] = {}  # (call, key) -> how its hook answered
        self.hook_failed_for: dict[int, set[str]] = {}  # call -> outcomes of its failed hooks
        self.watch = SecretWatch()
        self.new_asks: list[Any] = []
        self.pausing: set[int] = set()  # calls made with on_input="return"
        self.paused: dict[int, tuple[InputRequired, dict[str, str]]] = {}  # call -> its pause
        self.resumed: set[int] = set()  # paused calls resumed once
        self.problems: list[str] = []
        self.held: dict[int, Held] = {}  # exchange id -> held call
        self.rounds: Counter[int] = Counter()  # call id -> POSTs of it
        self.expected_state: dict[int, str | None] = {}  # call id -> state its next round echoes
        self.broken: set[int] = set()  # calls whose stream broke: never sent again (E3)
        self.read_breaks: Counter[int] = Counter()  # reads: sent again after the first only
        self.outcomes: dict[int, list[Any]] = {}
        self.deadline: dict[int, float] = {}
        self.own_timeout: set[int] = set()  # calls given their own timeout= (T9)
        self.listings = 0
        self.tasks: dict[int, str] = {}  # call id -> its task's id (T7)
        self.cancels: list[str] = []  # tasks/cancel received
        # F2: listen streams held open (exchange id -> (request id, filter, acknowledged)),
        # the host's subscriptions as it sees them, updates sent and heard
        self.listens: dict[int, tuple[int, dict[str, Any], bool]] = {}
        self.uri_of: dict[int, tuple[str, bool]] = {}
        self.latest: dict[str, int] = {}  # uri -> the host's latest change of it
        self.subscribed: set[str] = set()
        self.updates_sent = 0
        self.updates_heard = 0

    @initialize(offer=st.sampled_from(sorted(OFFER_OPTIONS)))
    def connect_with_hooks(self, offer: str) -> None:
        """Q1, Q3: the client offers no hook, every hook, or roots as a list and form
        questions only."""
        self.offer = offer
        self.watch.install()
        self.link: Link = connect(
            ModernServer(self),  # type: ignore[arg-type]
            options=SessionOptions(
                server_name="srv",
                call_timeout=CALL_TIMEOUT,
                tasks=True,
                task_timeout=TASK_TIMEOUT,
                update_events=True,
                input=OFFER_OPTIONS[offer],
            ),
            protocol="auto",
            start=False,
        )
        self.engine = self.link.engine
        self.now = self.link.now
        self.link.start()
        self.process()
        assert self.engine.session.modern, self.problems

    # --- the server --------------------------------------------------------------------

    def perform(self, req: HttpRequest) -> Reply:
        headers = {k.decode().lower(): v.decode() for k, v in req.headers}
        if req.method != "POST" or req.body is None:
            self.problems.append(f"{req.method} sent")
            return Reply(405)
        message = json.loads(req.body)
        method = message.get("method")
        if "id" not in message:
            self.problems.append(f"notification {method} sent")
            return Reply(202)
        meta = (message.get("params") or {}).get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != V:
            self.problems.append(f"{method} without the envelope")
        if headers.get("mcp-protocol-version") != V or headers.get("mcp-method") != method:
            self.problems.append(f"{method} without its headers")
        if "mcp-session-id" in headers:
            self.problems.append("a session id sent")
        rid = message["id"]
        if method == "server/discover":
            result = {"supportedVersions": [V], "capabilities": {"tools": {}, "resources": {"subscribe": True}}}
            return Reply(200, JSON, [json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()])
        if method == "tools/list":
            self.listings += 1
            result = {"tools": [tool("echo")]}
            return Reply(200, JSON, [json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()])
        if method in ("tasks/get", "tasks/update", "tasks/cancel"):
            return self.task_request(req.exchange_id, message, headers)
        if method == "subscriptions/listen":
            self.listens[req.exchange_id] = (rid, message["params"]["notifications"], False)
            return Reply(200, SSE, [], finish="stall")
        if method in ("tools/call", "resources/read"):
            params = message["params"]
            # which caller's call this POST carries (a new round has a new id, M49)
            requests = self.engine.session.path.carriers
            call_key = next((c for c, r in requests.items() if r == rid), rid)
            if call_key in self.broken:
                self.problems.append(f"call {call_key} sent again after its stream broke")
            if self.read_breaks[call_key] >= 2:
                self.problems.append(f"read {call_key} sent again after a second break")
            if method == "resources/read" and headers.get("mcp-name") != params.get("uri"):
                self.problems.append(f"read {call_key} without Mcp-Name")
            expected = self.expected_state.get(call_key)
            if params.get("requestState") != expected or ("requestState" in params) != (expected is not None):
                self.problems.append(f"call {call_key}: state {params.get('requestState')!r} != {expected!r}")
            self.check_input_responses(call_key, params)
            self.rounds[call_key] += 1
            self.held[req.exchange_id] = Held(
                call_key=call_key, request_id=rid, state=expected, method=method
            )
            return Reply(200, SSE, [], finish="stall")
        self.problems.append(f"unexpected {method}")
        return Reply(404)

    def check_input_responses(self, call_key: int, params: dict[str, Any]) -> None:
        """M50, Q1-Q3: a round after an input_required carries exactly the asked keys,
        each in its hook's shape (answered in time) or as the offer says."""
        expected = self.inputs.get(call_key)  # a read sent again repeats its round (F1)
        got = params.get("inputResponses")
        if expected is None:
            if got is not None:
                self.problems.append(f"call {call_key}: inputResponses nobody asked for")
            return
        if not isinstance(got, dict) or set(got) != set(expected):
            self.problems.append(f"call {call_key}: inputResponses {got!r} for {sorted(expected)}")
            return
        for key, what in expected.items():
            answer = got[key]
            if what.startswith("hook:"):
                ok = self.answered.get((call_key, key)) is not None and answer_fits(what[5:], answer)
            elif what.startswith("answered:"):  # Q4: the person's answer, given to resume
                ok = answer_fits(what[9:], answer)
            elif what == "cancel":
                ok = answer == {"action": "cancel"}
            elif what == "roots-list":
                ok = answer == {"roots": list(ROOTS)}
            else:
                ok = answer == {"roots": []}
            if not ok:
                self.problems.append(f"call {call_key}: {key} answered {answer!r}, not {what}")

    def task_request(self, xid: int, message: dict[str, Any], headers: dict[str, str]) -> Reply:
        """T7: polls are held (a rule answers them); updates and cancels answered at once."""
        method, rid, params = message["method"], message["id"], message["params"]
        task_id = params.get("taskId")
        if headers.get("mcp-name") != task_id:
            self.problems.append(f"{method} without Mcp-Name")
        if task_id not in self.tasks.values():
            self.problems.append(f"{method} for a task never made: {task_id!r}")
        call_key = next((c for c, t in self.tasks.items() if t == task_id), -1)
        ok = {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete"}}
        if method == "tasks/cancel":
            self.cancels.append(task_id)
            return Reply(200, JSON, [json.dumps(ok).encode()])
        if call_key in self.outcomes:
            self.problems.append(f"{method} for task {task_id} after its call ended")
        if method == "tasks/update":
            return Reply(200, JSON, [json.dumps(ok).encode()])
        self.held[xid] = Held(call_key=call_key, request_id=rid, state=None, method=method)
        return Reply(200, SSE, [], finish="stall")

    # --- plumbing ----------------------------------------------------------------------

    def process(self) -> None:
        e = self.engine
        while True:
            actions = e.take_actions()
            for ask in e.take_input():
                self.new_asks.append(ask)
            for event in e.take_events():
                if isinstance(event, (CallSucceeded, RequestSucceeded, CallFailed, CallCancelled)):
                    self.outcomes.setdefault(event.call_id, []).append(event)
                    for asked in self.asked.values():
                        if asked.cid == event.call_id and not asked.settled:
                            asked.settled = True  # the round ended with its call
                            if self.now >= asked.deadline:
                                self.hook_failed_for.setdefault(asked.cid, set()).add("late")
                    subscription = self.uri_of.get(event.call_id)
                    if (
                        subscription
                        and subscription[1]
                        and isinstance(event, RequestSucceeded)
                        and self.latest[subscription[0]] == event.call_id  # not since undone
                    ):
                        self.subscribed.add(subscription[0])
                    if subscription and isinstance(event, CallFailed) and isinstance(event.error, NotOffered):
                        self.subscribed.discard(subscription[0])  # M64: left out: it ended
                elif isinstance(event, ResourceUpdated):
                    self.updates_heard += 1
            if not actions:
                return
            for action in actions:
                if isinstance(action, AbortExchange):
                    self.held.pop(action.exchange_id, None)
                    self.listens.pop(action.exchange_id, None)
                    continue
                assert isinstance(action, HttpRequest)
                self.link._perform(action)

    def running(self) -> list[int]:
        return sorted(c for c in self.deadline if c not in self.outcomes)

    def answer(self, xid: int, status: int, body: dict[str, Any], *, sse: bool = True) -> None:
        self.held.pop(xid)
        data = json.dumps(body).encode()
        e = self.engine
        if sse:
            e.response_started(xid, status, SSE, self.now)
            e.response_data(xid, b"data: " + data + b"\n\n", self.now)
        else:
            e.response_started(xid, status, JSON, self.now)
            e.response_data(xid, data, self.now)
        e.response_ended(xid, self.now)
        self.process()

    def pick(self, index: int) -> int:
        keys = sorted(self.held)
        return keys[index % len(keys)]

    # --- rules -------------------------------------------------------------------------

    @rule(timeout=st.sampled_from([None, 1.0, 30.0]), pause=st.booleans())
    def call(self, timeout: float | None, pause: bool) -> None:
        """A call; with ``on_input="return"`` (Q4) a question for the person ends it
        with an ``InputRequired`` instead of asking a hook."""
        on_input = "return" if pause else "hook"
        call_id = self.engine.call("srv/echo", {"x": 1}, self.now, timeout=timeout, on_input=on_input)
        self.deadline[call_id] = self.now + (CALL_TIMEOUT if timeout is None else timeout)
        if timeout is not None:
            self.own_timeout.add(call_id)  # T9: the caller's word bounds the whole call
        self.expected_state[call_id] = None
        if pause:
            self.pausing.add(call_id)
        self.process()

    @rule(ask=st.sampled_from(["elicit-form", "form+roots+url"]), state=st.sampled_from([None, "s"]))
    def call_pauses_for_the_person(self, ask: str, state: str | None) -> None:
        """Q4: a call made with on_input="return" whose first answer asks the person."""
        self.call(None, pause=True)
        call_id = max(self.deadline)
        held = [x for x, h in self.held.items() if h.call_key == call_id]
        if held:
            self.input_required(sorted(self.held).index(held[0]), state, ask)

    @rule(
        question=st.sampled_from(["elicit-form", "elicit-url", "roots", "sampling", "form+sampling"]),
        pause=st.booleans(),
    )
    def task_asks_the_person(self, question: str, pause: bool) -> None:
        """T7, Q1-Q5: a call becomes a task, and the task's first poll asks the person
        (its hooks, or, for a call made with on_input="return", its InputRequired)."""
        self.call(None, pause=pause)
        call_id = max(self.deadline)
        held = [x for x, h in self.held.items() if h.call_key == call_id and h.method == "tools/call"]
        if not held:
            return
        calls = sorted(x for x, h in self.held.items() if h.method == "tools/call")
        self.become_task(calls.index(held[0]), 100, False)
        self.advance(0.1)  # the first poll goes out and is held
        polls = [x for x, h in self.held.items() if h.call_key == call_id and h.method == "tasks/get"]
        if polls:
            self.input_required(sorted(self.held).index(polls[0]), None, question)

    def refused_at_once(self, exc: Exception) -> None:
        assert no_secret_in(exc, repr(exc)), exc
        assert self.engine.take_events() == []
        assert not [a for a in self.engine.take_actions() if isinstance(a, HttpRequest)]

    def pauses(self, call_key: int, questions: dict[str, str]) -> bool:
        """Q4: a call made with on_input="return" pauses at a round that asks the person
        (a form, or a URL the client takes) and nothing but the person or roots."""
        return (
            call_key in self.pausing
            and bool(questions)
            and all(QUESTIONS[q][0] in ("elicitation/create", "roots/list") for q in questions.values())
            and bool(self.for_the_person(questions))
        )

    def for_the_person(self, questions: dict[str, str]) -> set[str]:
        """The keys of a round a person can answer: forms, and URLs when the client
        takes URL questions."""
        person = {"elicit-form"} | ({"elicit-url"} if self.offer == "all" else set())
        return {k for k, q in questions.items() if q in person}

    @precondition(lambda self: self.paused)
    @rule(
        index=st.integers(0, 50),
        how=st.sampled_from(["valid", "decline", "invalid", "unanswered", "again"]),
        timeout=st.sampled_from([None, 1.0]),
    )
    def resume(self, index: int, how: str, timeout: float | None) -> None:
        """Q4: a paused call resumed with the person's answers: once, and only with an
        answer to each question that fits it; else refused at once, nothing sent."""
        keys = sorted(self.paused)
        key = keys[index % len(keys)]
        paused, questions = self.paused[key]
        kinds = {k: q for k, q in questions.items() if k in paused.questions}
        responses: dict[str, Any] = {
            k: hook_value(q, "decline" if how == "decline" else "valid") for k, q in kinds.items()
        }
        if how == "invalid":
            k = sorted(kinds)[0]
            responses[k] = hook_value(kinds[k], "uncarriable" if index % 2 else "invalid")
        elif how == "unanswered":
            del responses[sorted(kinds)[0]]
        refused: tuple[type[Exception], ...] = {
            "invalid": (InputError, InvalidArguments),
            "unanswered": (InvalidValue,),
        }.get(how, ())
        if key in self.resumed:
            refused = (InvalidState,)  # a call resumes once
        self.process()
        try:
            call_id = self.engine.resume(paused.continuation, responses, self.now, timeout=timeout)
        except Exception as exc:
            assert refused and isinstance(exc, refused), (how, exc)
            self.refused_at_once(exc)
            return
        assert not refused, (how, refused)
        self.resumed.add(key)
        self.deadline[call_id] = self.now + (CALL_TIMEOUT if timeout is None else timeout)
        if timeout is not None:
            self.own_timeout.add(call_id)  # T9: the caller's word bounds the whole call
        self.expected_state[call_id] = paused.continuation.request_state
        self.inputs[call_id] = {
            k: (
                f"answered:{kinds[k]}"
                if k in kinds
                # a roots list goes back as given; a roots hook is not asked on resume
                else ("roots-list" if self.offer == "lists" else "roots-empty")
                if q == "roots"
                else "cancel"
            )
            for k, q in questions.items()
        }
        self.pausing.add(call_id)
        self.process()
        if how == "again":
            try:
                self.engine.resume(paused.continuation, responses, self.now)
            except InvalidState as exc:
                self.refused_at_once(exc)
            else:
                raise AssertionError("a continuation was resumed twice")

    @rule(timeout=st.sampled_from([None, 1.0, 30.0]))
    def read(self, timeout: float | None) -> None:
        """F1, F2: a resource read on the same path as a call."""
        ask = Ask(RESOURCES_READ, {"uri": "r://x"}, "r://x")
        call_id = self.engine.request(ask, self.now, timeout=timeout)
        self.deadline[call_id] = self.now + (CALL_TIMEOUT if timeout is None else timeout)
        if timeout is not None:
            self.own_timeout.add(call_id)  # T9: the caller's word bounds the whole call
        self.expected_state[call_id] = None
        self.process()

    @precondition(lambda self: self.held)
    @rule(index=st.integers(0, 50), kind=st.sampled_from(["complete", "absent", "weird", "is-error"]))
    def finish(self, index: int, kind: str) -> None:
        xid = self.pick(index)
        held = self.held[xid]
        result: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}]}
        if held.method == "tasks/get":
            status = {"complete": "completed", "absent": "working", "weird": "weird", "is-error": "failed"}
            result = {"taskId": self.tasks[held.call_key], "status": status[kind], "pollIntervalMs": 300}
            if kind == "complete":
                result["result"] = {"content": [{"type": "text", "text": "ok"}]}
            elif kind == "is-error":
                result["error"] = {"code": -32603, "message": "broke"}
            self.answer(xid, 200, {"jsonrpc": "2.0", "id": held.request_id, "result": result})
            return
        if held.method == "resources/read":
            result = {"contents": [{"uri": "r://x", "text": "ok"}]}
        if kind == "complete":
            result["resultType"] = "complete"
        elif kind == "weird":
            result["resultType"] = "weird"
        elif kind == "is-error":
            result["isError"] = True
        self.answer(xid, 200, {"jsonrpc": "2.0", "id": held.request_id, "result": result})

    @precondition(lambda self: self.held)
    @rule(
        index=st.integers(0, 50),
        state=st.sampled_from([None, "s", '{"a": "é"}', ""]),
        ask=st.sampled_from(sorted(ROUNDS)),
    )
    def input_required(self, index: int, state: str | None, ask: str) -> None:
        """M43-M54, Q1-Q3: a round asks for input; hooked questions become one
        ``AskHost`` each, the rest are answered as the offer says, and a question the
        client cannot answer fails the call at once."""
        xid = self.pick(index)
        held = self.held[xid]
        result: dict[str, Any] = {"resultType": "input_required"}
        questions = ROUNDS[ask]
        if held.method == "tasks/get":
            # T7: a task's questions go to the same hooks (their answers to tasks/update)
            requests = {k: {"method": QUESTIONS[q][0], "params": QUESTIONS[q][1] or {}} for k, q in questions.items()}
            task = {"taskId": self.tasks[held.call_key], "status": "input_required", "inputRequests": requests}
            self.new_asks.clear()
            self.answer(xid, 200, {"jsonrpc": "2.0", "id": held.request_id, "result": task})
            asks, self.new_asks = self.new_asks, []
            hooked = [
                (k, w[5:]) for k, q in questions.items() if (w := expectation(self.offer, q)).startswith("hook:")
            ]
            if len(asks) == len(hooked):
                for a, (key, kind) in zip(asks, hooked, strict=True):
                    self.asked[a.attempt] = Asked(a.attempt, kind, held.call_key, self.now + HOOK_TIMEOUT, key=key)
            else:  # paused (Q4) or failed at once: nobody asked
                assert asks == [], (asks, hooked)
            return
        if state is not None:
            result["requestState"] = state
        if questions:
            result["inputRequests"] = {
                key: {"method": QUESTIONS[q][0], "params": QUESTIONS[q][1] or {}}
                for key, q in questions.items()
            }
        if state is None and ask == "none":
            result["requestState"] = "x"
            state = "x"
        expected = {key: expectation(self.offer, q) for key, q in questions.items()}
        fails = "fail" in expected.values()
        pauses = self.pauses(held.call_key, questions)
        self.expected_state[held.call_key] = state
        self.inputs[held.call_key] = expected if questions and not fails and not pauses else None
        self.new_asks.clear()
        self.answer(xid, 200, {"jsonrpc": "2.0", "id": held.request_id, "result": result})
        asks, self.new_asks = self.new_asks, []
        if pauses:
            # Q4: the call ends with the questions and a continuation; no hook is asked
            assert asks == [], asks
            [ended] = self.outcomes[held.call_key]
            assert isinstance(ended, RequestSucceeded) and isinstance(ended.value, InputRequired), ended
            paused = ended.value
            assert set(paused.questions) == self.for_the_person(questions), (paused, questions)
            assert paused.continuation.request_state == state
            assert no_secret_in(repr(paused))
            self.paused[held.call_key] = (paused, questions)
            return
        hooked = [(k, w[5:]) for k, w in expected.items() if w.startswith("hook:")]
        if fails:
            assert asks == [], asks
            [ended] = self.outcomes[held.call_key]
            assert isinstance(ended, CallFailed) and isinstance(ended.error, RemoteProtocolError)
            return
        assert [a.hook for a in asks] == [kind.split("-")[0] for _, kind in hooked], (asks, hooked)
        for a, (key, kind) in zip(asks, hooked, strict=True):
            assert no_secret_in(repr(a), repr(a.request)), a
            if kind.startswith("elicit"):
                assert a.request is not None and a.request.mode == kind[7:]
                assert a.request.tool_id == ("srv/echo" if held.method == "tools/call" else None)
            self.asked[a.attempt] = Asked(
                a.attempt, kind, held.call_key, self.now + HOOK_TIMEOUT, key=key
            )
        if not hooked:
            return  # the next round went out at once
        assert held.call_key in self.running() and held.call_key in self.engine.session.pending_call_ids

    def open_attempts(self) -> list[Asked]:
        return [a for _, a in sorted(self.asked.items()) if not a.settled]

    def settled_attempts(self) -> list[Asked]:
        return [a for _, a in sorted(self.asked.items()) if a.settled]

    @precondition(lambda self: self.open_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(HOOK_OUTCOMES))
    def hook_reports(self, index: int, how: str) -> None:
        """D2: the hook answers in time (fitting or not), raises, or was not given."""
        attempts = self.open_attempts()
        asked = attempts[index % len(attempts)]
        asked.settled = True
        outcome = failure_outcome(asked.kind, how)
        assert asked.key is not None
        if outcome is None:
            self.answered[(asked.cid, asked.key)] = how
        else:
            self.hook_failed_for.setdefault(asked.cid, set()).add(outcome)
        report(self.engine, asked.attempt, asked.kind, how, self.now)
        self.process()
        hypothesis.event(f"modern hook {how}: {asked.kind}")
        if outcome is not None:
            # Q5: the call fails now with the reason; its round's other questions are gone
            [ended] = self.outcomes[asked.cid]
            assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError), ended
            assert ended.error.outcome == outcome, (ended.error.outcome, outcome)

    @precondition(lambda self: self.open_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(["valid", "raised"]))
    def hook_answers_late(self, index: int, how: str) -> None:
        """D2, Q5: the clock passes the hook's deadline (the call fails "late", or with
        its own timeout if that came first), then the hook answers: nothing changes."""
        attempts = self.open_attempts()
        asked = attempts[index % len(attempts)]
        first = min(a.deadline for a in attempts if a.cid == asked.cid)
        own_deadline_first = self.deadline[asked.cid] <= first
        self.advance(max(asked.deadline - self.now, 0.0) + 0.001)
        assert asked.settled
        [ended] = self.outcomes[asked.cid]
        assert isinstance(ended, CallFailed), ended
        if own_deadline_first:
            assert isinstance(ended.error, CallTimeout), ended
        else:
            assert isinstance(ended.error, InputError) and ended.error.outcome == "late", ended
        self.stale_report(asked, how)

    @precondition(lambda self: self.settled_attempts())
    @rule(index=st.integers(0, 100), how=st.sampled_from(HOOK_OUTCOMES))
    def hook_answers_old_attempt(self, index: int, how: str) -> None:
        """D2: a report for an attempt already answered, failed, past its deadline,
        of a call cancelled or ended, or after close: nothing is sent, nothing ends."""
        attempts = self.settled_attempts()
        self.stale_report(attempts[index % len(attempts)], how)
        hypothesis.event("modern hook answers an old attempt")

    def stale_report(self, asked: Asked, how: str) -> None:
        self.process()
        report(self.engine, asked.attempt, asked.kind, how, self.now)
        assert self.engine.take_actions() == []
        assert self.engine.take_events() == []
        assert self.engine.take_input() == []

    @precondition(lambda self: any(h.method == "tools/call" for h in self.held.values()))
    @rule(index=st.integers(0, 50), interval=st.sampled_from([None, 0, 250, 10**9, "x"]), bad=st.booleans())
    def become_task(self, index: int, interval: Any, bad: bool) -> None:
        """T7: the server runs a held call as a task (or answers one with a bad task id)."""
        calls = sorted(x for x, h in self.held.items() if h.method == "tools/call")
        xid = calls[index % len(calls)]
        held = self.held[xid]
        task_id = f"t{held.call_key}"
        result: dict[str, Any] = {"resultType": "task", "taskId": 7 if bad else task_id, "status": "working"}
        if interval is not None:
            result["pollIntervalMs"] = interval
        if not bad:
            self.tasks[held.call_key] = task_id
            if held.call_key not in self.own_timeout:
                # T9: only the client's default deadline gives way to the task's
                self.deadline[held.call_key] = self.now + TASK_TIMEOUT
        self.answer(xid, 200, {"jsonrpc": "2.0", "id": held.request_id, "result": result})

    @precondition(lambda self: self.held)
    @rule(index=st.integers(0, 50), code=st.sampled_from([-32021, -32603, -32020]))
    def error_status(self, index: int, code: int) -> None:
        """M9, M42, M56: an error status whose JSON body is the call's error."""
        xid = self.pick(index)
        held = self.held[xid]
        self.expected_state[held.call_key] = None  # a mismatch retry carries no state
        self.inputs[held.call_key] = None  # nor answers
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": "no"}}
        self.answer(xid, 400, body, sse=False)

    @precondition(lambda self: self.held)
    @rule(index=st.integers(0, 50), primed=st.booleans())
    def break_stream(self, index: int, primed: bool) -> None:
        """E3, M72: a call's stream breaks: the call fails, is never sent again."""
        xid = self.pick(index)
        held = self.held.pop(xid)
        if held.method == "resources/read":
            self.read_breaks[held.call_key] += 1
        elif held.method == "tools/call":
            self.broken.add(held.call_key)
        e = self.engine
        e.response_started(xid, 200, SSE, self.now)
        if primed:
            e.response_data(xid, b"id: 7\nretry: 10\ndata: \n\n", self.now)
        e.response_ended(xid, self.now)
        self.process()

    @rule(uri=st.sampled_from(["r://a", "r://b"]), on=st.booleans(), timeout=st.sampled_from([None, 1.0]))
    def subscribe(self, uri: str, on: bool, timeout: float | None) -> None:
        """F2: subscribe to a resource, or stop: the listen stream changes."""
        call_id = self.engine.subscribe(uri, self.now, on=on, timeout=timeout)
        if not on:
            self.subscribed.discard(uri)
        self.deadline[call_id] = self.now + (CALL_TIMEOUT if timeout is None else timeout)
        if timeout is not None:
            self.own_timeout.add(call_id)  # T9: the caller's word bounds the whole call
        self.uri_of[call_id] = (uri, on)
        self.latest[uri] = call_id
        self.process()

    def _frame(self, xid: int, message: dict[str, Any]) -> None:
        self.engine.response_data(xid, b"data: " + json.dumps(message).encode() + b"\n\n", self.now)

    @precondition(lambda self: any(not acked for _, _, acked in self.listens.values()))
    @rule(index=st.integers(0, 50), leave_out=st.booleans())
    def acknowledge_listen(self, index: int, leave_out: bool) -> None:
        """M64: the first frame: the filter honoured (perhaps less one URI)."""
        waiting = sorted(x for x, (_, _, acked) in self.listens.items() if not acked)
        xid = waiting[index % len(waiting)]
        rid, wanted, _ = self.listens[xid]
        agreed = dict(wanted)
        if leave_out and agreed.get("resourceSubscriptions"):
            agreed["resourceSubscriptions"] = agreed["resourceSubscriptions"][1:]
        self.listens[xid] = (rid, wanted, True)
        params = {"_meta": {"io.modelcontextprotocol/subscriptionId": rid}, "notifications": agreed}
        self._frame(xid, {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params})
        self.process()

    @precondition(lambda self: any(a and f.get("resourceSubscriptions") for _, f, a in self.listens.values()))
    @rule(index=st.integers(0, 50))
    def resource_updated(self, index: int) -> None:
        """F2: an update for a URI the stream carries reaches the host."""
        ready = sorted(x for x, (_, f, a) in self.listens.items() if a and f.get("resourceSubscriptions"))
        xid = ready[index % len(ready)]
        rid, wanted, _ = self.listens[xid]
        uri = wanted["resourceSubscriptions"][0]
        params = {"_meta": {"io.modelcontextprotocol/subscriptionId": rid}, "uri": uri}
        self.updates_sent += 1
        self._frame(xid, {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params})
        self.process()

    @precondition(lambda self: self.listens)
    @rule(index=st.integers(0, 50), graceful=st.booleans())
    def end_listen(self, index: int, graceful: bool) -> None:
        """M67: the stream ends: with its result (graceful), or broken."""
        xid = sorted(self.listens)[index % len(self.listens)]
        rid, _, _ = self.listens.pop(xid)
        if graceful:
            meta = {"io.modelcontextprotocol/subscriptionId": rid}
            self._frame(xid, {"jsonrpc": "2.0", "id": rid, "result": {"_meta": meta}})
        self.engine.response_ended(xid, self.now)
        self.process()

    @precondition(lambda self: self.running())
    @rule(index=st.integers(0, 50))
    def cancel(self, index: int) -> None:
        running = self.running()
        call_id = running[index % len(running)]
        self.engine.cancel(call_id, self.now)
        self.process()
        if call_id in self.tasks:  # T7: an abandoned task is cancelled on the server
            assert self.tasks[call_id] in self.cancels, (call_id, self.cancels)

    @rule(seconds=st.sampled_from([0.01, 0.5, 1.0, 5.0, 15.0]))
    def advance(self, seconds: float) -> None:
        self.link.now = self.now
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

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def the_wire_stays_modern(self) -> None:
        assert self.problems == [], self.problems

    @invariant()
    def every_call_ends_at_most_once(self) -> None:
        for call_id, events in self.outcomes.items():
            assert len(events) == 1, (call_id, events)
        assert set(self.engine.session.pending_call_ids) <= set(self.running())

    @invariant()
    def no_call_outlives_its_deadline(self) -> None:
        for call_id in self.running():
            assert self.now < self.deadline[call_id], (call_id, self.now)

    @invariant()
    def the_newest_listen_stream_carries_the_subscriptions_and_closes_the_old(self) -> None:
        assert self.updates_heard == self.updates_sent
        if not self.listens:
            return
        newest = max(self.listens, key=lambda x: self.listens[x][0])
        _, wanted, acked = self.listens[newest]
        if acked:  # M68: make before break: the older ones are closed by now
            assert list(self.listens) == [newest], self.listens
        carried = set(wanted.get("resourceSubscriptions") or ())
        assert self.subscribed <= carried, (self.subscribed, wanted)

    @invariant()
    def rounds_are_bounded(self) -> None:
        assert all(n <= 10 for n in self.rounds.values()), self.rounds

    @invariant()
    def a_hook_failure_fails_only_its_own_call(self) -> None:
        for call_id, events in self.outcomes.items():
            if isinstance(events[0], CallFailed) and isinstance(events[0].error, InputError):
                assert events[0].error.outcome in self.hook_failed_for.get(call_id, ()), events

    @invariant()
    def an_open_attempt_has_a_finite_deadline(self) -> None:
        attempts = self.open_attempts()
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

    def teardown(self) -> None:
        if not hasattr(self, "engine"):
            return
        try:
            self.advance(31.0)  # past the longest budget a rule gives
            for call_id in self.deadline:
                assert len(self.outcomes.get(call_id, [])) == 1, call_id
            assert self.open_attempts() == [] and self.engine.session.input.idle
            self.engine.close(self.now)
            self.process()
            assert self.engine.finished and self.problems == []
            self.no_secret_in_logs_or_errors()
        finally:
            self.watch.remove()


ModernMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MCPCORE_MACHINE_EXAMPLES", "500")) // 2,
    stateful_step_count=30,
    deadline=None,
)
test_modern_state_machine = ModernMachine.TestCase
