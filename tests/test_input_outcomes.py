"""Every answer an input hook can give has a defined outcome (Q5, D2), found by the
state machines and the fuzz harness of issue 28 and kept here as regressions.

An ``elicit`` hook that accepts a value JSON cannot carry (NaN, a set, any
object) in a field the server's form leaves untyped, or a ``sample`` hook whose
content holds one, used to make the engine raise ``LocalProtocolError`` out of
``hook_answered`` when the answer (handshake era) or the next round (2026-07-28)
was encoded. Now such an answer is ``unusable``: it fails only its own call
with ``InputError``, and the handshake era's server gets a JSON-RPC error.

Also here: a ``SampleResult`` of the wrong types (found by ``fuzz/fuzz_input.py``),
and time limits that are infinite (which left an attempt without a finite
deadline, against the state machines' invariant).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import CallFailed, ElicitResult, InputError, SampleResult
from test_elicitation import Elicits, calls, modern_call, offering, outcome

UNTYPED = {"type": "object", "properties": {"free": {}, "loose": True}}
QUESTION = {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": UNTYPED}}
SAMPLING = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}

UNCARRIABLE: list[Any] = [
    ElicitResult.accept({"free": float("nan")}),
    ElicitResult.accept({"free": float("inf")}),
    ElicitResult.accept({"loose": {1, 2}}),
    ElicitResult.accept({"loose": object()}),
]
UNCARRIABLE_SAMPLES: list[Any] = [
    SampleResult(model="m", content={"type": "text", "text": float("nan")}),
    SampleResult(model="m", content={"type": "text", "text": {"a", "b"}}),
]


def _unusable(ended: Any) -> None:
    assert isinstance(ended, CallFailed), ended
    assert isinstance(ended.error, InputError) and ended.error.outcome == "unusable"
    assert "JSON" in str(ended.error)


@pytest.mark.parametrize("answer", UNCARRIABLE, ids=["nan", "inf", "set", "object"])
def test_Q5_D2_a_handshake_answer_json_cannot_carry_fails_only_its_call(answer: ElicitResult) -> None:
    peer = Elicits(question=QUESTION)
    call_id, ask = peer.call()
    assert ask is not None
    peer.link.engine.hook_answered(ask.attempt, answer, peer.link.now)  # raised before
    _unusable(outcome(peer.link, call_id))
    [sent] = peer.answers()
    assert sent["error"]["code"] == -32603 and "result" not in sent


@pytest.mark.parametrize("answer", UNCARRIABLE_SAMPLES, ids=["nan", "set"])
def test_Q5_D2_a_handshake_sample_json_cannot_carry_fails_only_its_call(answer: SampleResult) -> None:
    import dataclasses

    from mcpcore import InputOptions

    peer = Elicits(
        link_options=dataclasses.replace(offering(), input=InputOptions(sampling=True)),
        question=SAMPLING,
    )
    call_id, ask = peer.call()
    assert ask is not None and ask.hook == "sample"
    peer.link.engine.hook_answered(ask.attempt, answer, peer.link.now)
    _unusable(outcome(peer.link, call_id))
    [sent] = peer.answers()
    assert sent["error"]["code"] == -32603


@pytest.mark.parametrize("answer", UNCARRIABLE, ids=["nan", "inf", "set", "object"])
def test_Q5_D2_a_modern_round_answer_json_cannot_carry_fails_the_call_unsent(answer: ElicitResult) -> None:
    link, server, call_id = modern_call([{"resultType": "input_required", "inputRequests": {"q": QUESTION}}])
    [ask] = link.engine.take_input()
    link.engine.hook_answered(ask.attempt, answer, link.now)  # raised before
    _unusable(outcome(link, call_id))
    assert len(calls(server)) == 1  # no next round went out


def test_Q5_D2_a_modern_sample_json_cannot_carry_fails_the_call_unsent() -> None:
    rounds = [{"resultType": "input_required", "inputRequests": {"s": SAMPLING}}]
    link, server, call_id = modern_call(rounds, sampling=True)
    [ask] = link.engine.take_input()
    link.engine.hook_answered(ask.attempt, UNCARRIABLE_SAMPLES[1], link.now)
    _unusable(outcome(link, call_id))
    assert len(calls(server)) == 1


# --- a SampleResult of the wrong types (found by fuzz/fuzz_input.py) ------------------------
# A sample hook that answered SampleResult(content=True) (or a list, a number) made
# check_sample raise TypeError/ValueError out of hook_answered. A SampleResult now
# checks its fields when built (the hook raises, like ElicitResult's), and one whose
# fields were bent afterwards is unusable.


@pytest.mark.parametrize(
    "fields",
    [{"content": True}, {"content": [["type", "text"]]}, {"text": 7}, {"text": "t", "stop_reason": 3}],
    ids=["content-bool", "content-pairs", "text-int", "stop-int"],
)
def test_Q3_a_sample_result_of_the_wrong_types_is_refused_when_built(fields: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        SampleResult(model="m", **fields)


@pytest.mark.parametrize(
    ("field", "value"),
    [("content", True), ("content", [["type", "text"]]), ("text", 7), ("stop_reason", 3)],
    ids=["content-bool", "content-pairs", "text-int", "stop-int"],
)
def test_Q3_D2_a_bent_sample_result_fails_only_its_call(field: str, value: object) -> None:
    import dataclasses

    from mcpcore import InputOptions

    peer = Elicits(
        link_options=dataclasses.replace(offering(), input=InputOptions(sampling=True)),
        question=SAMPLING,
    )
    call_id, ask = peer.call()
    assert ask is not None
    answer = SampleResult(model="m", text="t")
    if field == "content":
        object.__setattr__(answer, "text", None)
    object.__setattr__(answer, field, value)
    peer.link.engine.hook_answered(ask.attempt, answer, peer.link.now)  # raised before
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.outcome == "unusable"
    [sent] = peer.answers()
    assert sent["error"]["code"] == -32603


# --- an infinite time limit (found by the state machines' finite-deadline invariant) ---------
# positive_seconds took inf: with input_timeout=inf a question on the GET stream (no
# call deadline above it) was never settled, next_deadline() was inf, and the
# threaded driver's timer (Condition.wait(inf)) raised OverflowError.


@pytest.mark.parametrize("option", ["input_timeout", "call_timeout", "startup_timeout", "call_timeout_max"])
@pytest.mark.parametrize("bad", [float("inf"), 10**400], ids=["inf", "huge-int"])
def test_D2_K2_an_infinite_time_limit_is_refused_naming_it(option: str, bad: object) -> None:
    from mcpcore import InvalidValue, RemoteServer
    from mcpcore.config._setup import prepare_client

    remote = RemoteServer(name="r", url="https://a.example/mcp")
    with pytest.raises(InvalidValue, match=f"^{option} must be a positive number of seconds"):
        prepare_client("r", remote, {option: bad}, env={}, home="/h")  # type: ignore[misc]


def test_D2_K2_a_call_with_an_infinite_timeout_is_refused_and_nothing_is_sent() -> None:
    from mcpcore import InvalidValue

    peer = Elicits()
    link = peer.link
    link.pump()
    with pytest.raises(InvalidValue, match="a call timeout must be a positive number of seconds"):
        link.engine.call("srv/echo", {}, link.now, timeout=float("inf"))
    assert link.engine.take_actions() == [] and link.engine.next_deadline() is None


# --- a question of a session the server forgot (found by the engine state machine) -------------
# H6: after a 404 the client sets up a new session; a hook that answered a question
# of the old one later had its answer POSTed to the new session (which never asked),
# and a hook that failed then failed the call on the old stream. The questions of a
# forgotten session are now void: a later report changes nothing.


@pytest.mark.parametrize("how", ["answer", "raise"])
def test_H6_D2_a_hook_report_for_a_forgotten_session_changes_nothing(how: str) -> None:
    from fake_peer import FakeServer, Reply, Seen, connect, sse
    from mcpcore import CallSucceeded, HookFailure

    server = FakeServer()
    asked: list[int] = []

    def first_call_asks(seen: Seen) -> Reply | None:
        message = seen.message
        if message and message.get("method") == "tools/call" and not asked:
            asked.append(message["id"])
            body = sse({"jsonrpc": "2.0", "id": "q1", **QUESTION})
            return Reply(200, [(b"content-type", b"text/event-stream")], [body], finish="stall")
        return None

    server.hook = first_call_asks
    link = connect(server, options=offering(), listen=False)
    first = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    [ask] = link.engine.take_input()
    server.sessions.clear()  # the server forgets the session
    second = link.engine.call("srv/echo", {}, link.now)  # 404, a new session, sent again
    link.pump()
    assert isinstance(outcome(link, second), CallSucceeded)
    assert len(server.requests("initialize")) == 2
    if how == "answer":
        link.engine.hook_answered(ask.attempt, ElicitResult.accept({"free": "x"}), link.now)
    else:
        link.engine.hook_failed(ask.attempt, HookFailure.RAISED, link.now)
    link.pump()
    assert [s for s in server.seen if s.message and s.message.get("id") == "q1"] == []
    assert outcome(link, first) is None  # the first call is not failed by it
    assert link.engine.session.input.idle


# --- two calls that paused alike (found by the modern state machine) ----------------------------
# Q4: a continuation's id was a digest of its content only, so two calls that paused
# with the same tool, arguments, questions and state (a stateless server) had the same
# id: once one was resumed, the other was refused as "resumed already". Each pause now
# names its call, so each continuation resumes once.


def test_Q4_two_calls_that_paused_alike_each_resume_once() -> None:
    import json as _json

    from fake_peer import Reply
    from mcpcore import InputRequired, InvalidState, RequestSucceeded
    from test_modern import JSON, ModernFake, link_to, rpc

    form = {"message": "which?", "requestedSchema": {"type": "object", "properties": {"b": {"type": "string"}}}}
    asked = {"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create", "params": form}}}
    server = ModernFake()

    def reply(message: dict[str, Any]) -> Reply:
        result = asked if "inputResponses" not in message["params"] else {"content": []}
        return Reply(200, JSON, [_json.dumps(rpc(message["id"], result)).encode()])

    server.call_reply = reply
    link = link_to(server)
    first = link.engine.call("srv/echo", {"a": 1}, link.now, on_input="return")
    second = link.engine.call("srv/echo", {"a": 1}, link.now, on_input="return")
    link.pump()
    paused = []
    for call_id in (first, second):
        ended = outcome(link, call_id)
        assert isinstance(ended, RequestSucceeded) and isinstance(ended.value, InputRequired)
        paused.append(ended.value.continuation)
    assert paused[0].id != paused[1].id
    for continuation in paused:
        resumed = link.engine.resume(continuation, {"q": ElicitResult.decline()}, link.now)
        link.pump()
        assert outcome(link, resumed) is not None
        with pytest.raises(InvalidState, match="resumed already"):
            link.engine.resume(continuation, {"q": ElicitResult.decline()}, link.now)
    # the pause survives the continuation's JSON form
    from mcpcore import Continuation

    back = Continuation.from_json(paused[1].to_json())
    assert back == paused[1] and back.id == paused[1].id
