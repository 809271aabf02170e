"""Form elicitation in the core (Q1, Q5, D2), with a fake clock and scripted servers.

A server's question reaches the host as an ``AskHost`` action; the test plays
the driver: it answers with ``hook_answered`` / ``hook_failed`` (or not at all)
and looks at what the server then receives and how the call ends. Both eras:
the handshake era's ``elicitation/create`` request on a call's stream, and the
2026-07-28 ``input_required`` round.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fake_peer import FakeServer, Reply, Seen, connect, sse
from mcpcore import (
    AskHost,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    CallTimeout,
    Elicitation,
    ElicitResult,
    HookFailure,
    InputError,
    InputOptions,
    RequestSucceeded,
)
from mcpcore.features._input_options import client_capabilities
from mcpcore.features._questions import check_answer
from mcpcore.session._session import SessionOptions
from test_modern import JSON, ModernFake, calls, link_to, rpc

SCHEMA = {
    "type": "object",
    "properties": {
        "branch": {"type": "string", "minLength": 1},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "ratio": {"type": "number"},
        "force": {"type": "boolean", "default": False},
        "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    },
    "required": ["branch"],
}
FORM = Elicitation(server="srv", tool_id="srv/echo", mode="form", message="which?", schema=SCHEMA)
ELICIT = {"method": "elicitation/create", "params": {"message": "Which branch?", "requestedSchema": SCHEMA}}


def offering(**changes: Any) -> SessionOptions:
    return SessionOptions(server_name="srv", input=InputOptions(elicit_form=True, **changes))


# --- what is declared (seed 000) -------------------------------------------------------------


def test_Q1_a_client_without_a_hook_declares_nothing_and_refuses_as_before() -> None:
    server = FakeServer()
    elicit = {"jsonrpc": "2.0", "id": "q-1", **ELICIT}
    server.call_handler = lambda message: [elicit, {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}]
    link = connect(server)
    assert server.requests("initialize")[0]["params"]["capabilities"] == {}
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    assert link.engine.take_input() == []
    [answer] = [s.message for s in server.seen if s.message and s.message.get("id") == "q-1"]
    assert answer["error"]["code"] == -32601
    assert any(isinstance(e, CallSucceeded) and e.call_id == call_id for e in link.events)


def test_Q1_the_capability_is_declared_only_with_a_hook_and_apply_defaults_only_when_asked() -> None:
    assert client_capabilities(InputOptions()) == {}
    assert client_capabilities(InputOptions(apply_defaults=True)) == {}
    assert client_capabilities(InputOptions(elicit_form=True)) == {"elicitation": {"form": {}}}
    assert client_capabilities(InputOptions(elicit_form=True, apply_defaults=True)) == {
        "elicitation": {"form": {"applyDefaults": True}}
    }
    server = FakeServer()
    connect(server, options=offering())
    assert server.requests("initialize")[0]["params"]["capabilities"] == {"elicitation": {"form": {}}}
    modern = ModernFake()
    link = link_to(modern, input=InputOptions(elicit_form=True, apply_defaults=True))
    link.engine.call("srv/echo", {}, link.now)
    link.pump()
    for _, _, message in modern.seen:
        assert message is not None
        capabilities = message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert capabilities == {"elicitation": {"form": {"applyDefaults": True}}}


# --- the handshake era --------------------------------------------------------------------------


class Elicits:
    """A handshake-era server whose tools/call stream asks a question, then waits."""

    def __init__(self, link_options: SessionOptions | None = None, question: dict[str, Any] | None = None) -> None:
        self.server = FakeServer()
        self.question = question or ELICIT
        self.server.hook = self._hook
        self.stream: int | None = None
        self.link = connect(self.server, options=link_options or offering())

    def _hook(self, seen: Seen) -> Reply | None:
        message = seen.message
        if message and message.get("method") == "tools/call":
            body = sse({"jsonrpc": "2.0", "id": "q1", **self.question})
            return Reply(200, [(b"content-type", b"text/event-stream")], [body], finish="stall")
        return None

    def call(self) -> tuple[int, AskHost | None]:
        link = self.link
        call_id = link.engine.call("srv/echo", {}, link.now)
        link.pump()
        [carrier] = [r for r in link.requests if r.request_id == call_id]
        self.stream = carrier.exchange_id
        asks = link.engine.take_input()
        return call_id, (asks[0] if asks else None)

    def answers(self) -> list[dict[str, Any]]:
        return [s.message for s in self.server.seen if s.message and s.message.get("id") == "q1"]

    def finish(self, call_id: int) -> Any:
        link = self.link
        assert self.stream is not None
        result = {"jsonrpc": "2.0", "id": self._call_request_id(), "result": {"content": []}}
        link.engine.response_data(self.stream, sse(result), link.now)
        link.pump()
        return outcome(link, call_id)

    def _call_request_id(self) -> Any:
        return [s.message for s in self.server.seen if s.message and s.message.get("method") == "tools/call"][-1]["id"]


def outcome(link: Any, call_id: int) -> Any:
    link.pump()
    kinds = (CallSucceeded, CallFailed, CallCancelled, RequestSucceeded)
    ended = [e for e in link.events if isinstance(e, kinds) and e.call_id == call_id]
    return ended[0] if ended else None


def test_Q1_a_question_on_a_call_stream_reaches_the_hook_and_its_answer_is_posted() -> None:
    peer = Elicits()
    call_id, ask = peer.call()
    assert ask is not None and ask.hook == "elicit"
    question = ask.request
    assert (question.server, question.tool_id, question.mode) == ("srv", "srv/echo", "form")
    assert question.message == "Which branch?" and question.schema == SCHEMA
    assert peer.answers() == []  # nothing is sent before the person answered
    peer.link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "main", "tags": ["a"]}), peer.link.now)
    peer.link.pump()
    [answer] = peer.answers()
    assert answer["result"] == {"action": "accept", "content": {"branch": "main", "tags": ["a"]}}
    assert isinstance(peer.finish(call_id), CallSucceeded)


@pytest.mark.parametrize("answer", [ElicitResult.decline(), ElicitResult.cancel()])
def test_Q1_decline_and_cancel_are_sent_without_content(answer: ElicitResult) -> None:
    peer = Elicits()
    call_id, ask = peer.call()
    assert ask is not None
    peer.link.engine.hook_answered(ask.attempt, answer, peer.link.now)
    peer.link.pump()
    assert peer.answers()[0]["result"] == {"action": answer.action}
    assert isinstance(peer.finish(call_id), CallSucceeded)


def test_Q1_accepted_defaults_fill_the_form_only_when_asked() -> None:
    peer = Elicits(offering(apply_defaults=True))
    _, ask = peer.call()
    assert ask is not None
    peer.link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "dev"}), peer.link.now)
    peer.link.pump()
    content = peer.answers()[0]["result"]["content"]
    assert content == {"branch": "dev", "force": False, "colour": "red"}


def test_Q1_accepted_content_that_breaks_the_form_fails_only_that_call() -> None:
    peer = Elicits()
    call_id, ask = peer.call()
    assert ask is not None
    secret = "hunter2-personal"
    bad = ElicitResult.accept({"branch": "main", "count": secret, "colour": "blue"})
    peer.link.engine.hook_answered(ask.attempt, bad, peer.link.now)
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.outcome == "invalid" and ended.error.hook == "elicit"
    text = str(ended.error)
    assert "'count' must be an integer" in text and "'colour' must be one of" in text
    assert secret not in text  # the person's values are never shown
    [answer] = peer.answers()
    assert answer["error"]["code"] == -32603  # the server hears that no answer comes
    assert peer.server.cancelled  # and the call is cancelled (K6)
    # the client goes on: another call works
    peer.server.hook = None
    other = peer.link.engine.call("srv/echo", {"x": 1}, peer.link.now)
    assert isinstance(outcome(peer.link, other), CallSucceeded)


@pytest.mark.parametrize(
    ("report", "outcome_name"),
    [
        (lambda e, a, now: e.hook_failed(a, HookFailure.RAISED, now), "raised"),
        (lambda e, a, now: e.hook_answered(a, {"action": "accept"}, now), "unusable"),
        (lambda e, a, now: e.hook_answered(a, None, now), "unusable"),
        (lambda e, a, now: e.hook_failed(a, HookFailure.MISSING, now), "missing"),
    ],
)
def test_Q5_D2_a_hook_that_raises_or_answers_unusably_fails_only_its_call(report: Any, outcome_name: str) -> None:
    peer = Elicits()
    call_id, ask = peer.call()
    assert ask is not None
    report(peer.link.engine, ask.attempt, peer.link.now)
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.outcome == outcome_name
    # a second report for the same attempt changes nothing (D2: late)
    peer.link.engine.hook_answered(ask.attempt, ElicitResult.cancel(), peer.link.now)
    peer.link.pump()
    assert len(peer.answers()) == 1


def test_Q5_D2_a_hook_that_never_answers_fails_its_call_at_the_input_timeout_and_a_late_answer_is_ignored() -> None:
    peer = Elicits(offering(timeout=30.0))
    call_id, ask = peer.call()
    assert ask is not None
    peer.link.advance(29.0)
    assert outcome(peer.link, call_id) is None
    peer.link.advance(2.0)
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.outcome == "late" and "30 s" in str(ended.error)
    peer.link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "x"}), peer.link.now)
    peer.link.pump()
    assert [a.get("error", {}).get("code") for a in peer.answers()] == [-32603]


def test_Q1_a_question_this_client_cannot_ask_is_refused_with_invalid_params() -> None:
    peer = Elicits(question={"method": "elicitation/create", "params": {"mode": "url", "message": "go", "url": "https://x"}})
    call_id, ask = peer.call()
    assert ask is None
    assert peer.answers()[0]["error"]["code"] == -32602
    assert isinstance(peer.finish(call_id), CallSucceeded)


def test_Q1_a_question_on_the_get_stream_has_no_tool() -> None:
    server = FakeServer(get_status=200)
    server.get_messages = [{"jsonrpc": "2.0", "id": "g1", **ELICIT}]
    link = connect(server, options=offering())
    link.pump()
    [ask] = link.engine.take_input()
    assert ask.request.tool_id is None
    link.engine.hook_answered(ask.attempt, ElicitResult.decline(), link.now)
    link.pump()
    [answer] = [s.message for s in server.seen if s.message and s.message.get("id") == "g1"]
    assert answer["result"] == {"action": "decline"}


# --- 2026-07-28: input_required rounds ----------------------------------------------------------


def modern_call(results: list[dict[str, Any]], **options: Any) -> tuple[Any, ModernFake, int]:
    server = ModernFake()
    queue = list(results)

    def reply(message: dict[str, Any]) -> Reply:
        result = queue.pop(0) if queue else {"content": [{"type": "text", "text": "done"}]}
        return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

    server.call_reply = reply
    link = link_to(server, input=InputOptions(**{"elicit_form": True, **options}))
    call_id = link.engine.call("srv/echo", {"a": 1}, link.now)
    link.pump()
    return link, server, call_id


ROUND = {
    "resultType": "input_required",
    "inputRequests": {
        "which": ELICIT,
        "where": {"method": "roots/list", "params": {}},
    },
    "requestState": "opaque-1",
}


def test_Q1_M50_a_modern_round_is_answered_from_the_hook_and_sent_again() -> None:
    link, server, call_id = modern_call([ROUND])
    [ask] = link.engine.take_input()
    assert ask.request.tool_id == "srv/echo" and ask.request.message == "Which branch?"
    assert len(calls(server)) == 1 and outcome(link, call_id) is None
    link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "main"}), link.now)
    ended = outcome(link, call_id)
    assert isinstance(ended, CallSucceeded) and ended.output.text == "done"
    first, second = calls(server)
    assert second["id"] != first["id"] and second["params"]["requestState"] == "opaque-1"
    assert second["params"]["inputResponses"] == {
        "which": {"action": "accept", "content": {"branch": "main"}},
        "where": {"roots": []},
    }
    assert server.problems == []


def test_Q1_two_questions_in_one_round_wait_for_both_answers() -> None:
    two = {"resultType": "input_required", "inputRequests": {"a": ELICIT, "b": ELICIT}}
    link, server, call_id = modern_call([two])
    first, second = link.engine.take_input()
    link.engine.hook_answered(second.attempt, ElicitResult.decline(), link.now)
    link.pump()
    assert len(calls(server)) == 1
    link.engine.hook_answered(first.attempt, ElicitResult.cancel(), link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert calls(server)[1]["params"]["inputResponses"] == {"a": {"action": "cancel"}, "b": {"action": "decline"}}


def test_Q5_a_modern_hook_failure_fails_the_call_and_nothing_is_sent_again() -> None:
    link, server, call_id = modern_call([ROUND])
    [ask] = link.engine.take_input()
    link.engine.hook_failed(ask.attempt, HookFailure.RAISED, link.now)
    ended = outcome(link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert len(calls(server)) == 1


def test_Q5_K2_the_call_deadline_holds_while_the_person_thinks() -> None:
    server_results = [ROUND]
    link, server, call_id = modern_call(server_results)
    link.engine.take_input()
    link.advance(301.0)  # the default call_timeout is 300 s; the hook's 600 s
    ended = outcome(link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, CallTimeout)
    assert len(calls(server)) == 1


def test_K6_cancelling_a_call_that_waits_for_the_person_ends_it_and_forgets_the_question() -> None:
    link, server, call_id = modern_call([ROUND])
    [ask] = link.engine.take_input()
    assert link.engine.cancel(call_id, link.now)
    assert isinstance(outcome(link, call_id), CallCancelled)
    link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "x"}), link.now)
    link.pump()
    assert len(calls(server)) == 1  # the late answer sends nothing
    assert link.engine.session.is_idle


def test_L6_closing_cancels_a_call_that_waits_for_the_person() -> None:
    link, _, call_id = modern_call([ROUND])
    link.engine.take_input()
    link.engine.close(link.now)
    assert isinstance(outcome(link, call_id), CallCancelled)


# --- the form check, for every answer -------------------------------------------------------


def _fits() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"branch": st.text(min_size=1, max_size=20)},
        optional={
            "count": st.integers(1, 9),
            "ratio": st.floats(allow_nan=False, allow_infinity=False),
            "force": st.booleans(),
            "colour": st.sampled_from(["red", "green"]),
            "tags": st.lists(st.sampled_from(["a", "b"]), max_size=2),
        },
    )


@given(_fits())
def test_Q1_content_that_fits_the_form_is_sent_as_given(content: dict[str, Any]) -> None:
    assert check_answer(FORM, ElicitResult.accept(content), apply_defaults=False) == {
        "action": "accept",
        "content": content,
    }


_WRONG = {
    "branch": st.one_of(st.integers(), st.booleans(), st.none(), st.just("")),
    "count": st.one_of(st.text(), st.booleans(), st.integers(10, 10**6), st.floats(1.5, 2.5).filter(lambda f: not f.is_integer())),  # 2.0 is an integer
    "ratio": st.one_of(st.text(), st.booleans(), st.none()),
    "force": st.one_of(st.text(), st.integers(), st.none()),
    "colour": st.text().filter(lambda t: t not in ("red", "green")),
    "tags": st.one_of(st.just(["c"]), st.just(["a", "b", "a"]), st.text()),
    "extra": st.integers(),
}


@given(_fits(), st.sampled_from(sorted(_WRONG)), st.data())
def test_Q1_content_with_one_wrong_field_is_refused_naming_the_field(
    content: dict[str, Any], name: str, data: st.DataObject
) -> None:
    content[name] = data.draw(_WRONG[name])
    with pytest.raises(InputError) as refused:
        check_answer(FORM, ElicitResult.accept(content), apply_defaults=False)
    assert refused.value.outcome == "invalid" and repr(name) in str(refused.value)


def test_Q1_an_answer_value_is_validated_when_built() -> None:
    with pytest.raises(ValueError):
        ElicitResult("maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ElicitResult("decline", {"x": 1})
    assert "hunter2" not in repr(ElicitResult.accept({"password": "hunter2"}))
    assert "secret" not in repr(Elicitation("s", None, "form", "secret", {}))


def test_Q1_a_missing_required_field_is_refused() -> None:
    with pytest.raises(InputError, match="'branch' is required"):
        check_answer(FORM, ElicitResult.accept({}), apply_defaults=True)


# --- URL questions (Q2) ----------------------------------------------------------------------

URL_ASK = {
    "method": "elicitation/create",
    "params": {
        "mode": "url",
        "message": "Sign in to the tracker",
        "url": "https://auth.example.test/sign-in?code=hush",
        "elicitationId": "e-42",
    },
}


def test_Q2_url_questions_are_declared_only_when_asked_for() -> None:
    assert client_capabilities(InputOptions(elicit_form=True, elicit_url=True)) == {
        "elicitation": {"form": {}, "url": {}}
    }
    assert client_capabilities(InputOptions(elicit_url=True)) == {}  # no hook, nothing
    peer = Elicits(question=URL_ASK)  # a form-only host refuses a URL question
    call_id, ask = peer.call()
    assert ask is None and peer.answers()[0]["error"]["code"] == -32602
    assert isinstance(peer.finish(call_id), CallSucceeded)


def test_Q2_a_url_question_reaches_the_hook_unopened_and_consent_is_sent() -> None:
    peer = Elicits(offering(elicit_url=True), question=URL_ASK)
    call_id, ask = peer.call()
    assert ask is not None
    question = ask.request
    assert question.mode == "url" and question.url == "https://auth.example.test/sign-in?code=hush"
    assert question.elicitation_id == "e-42" and question.schema == {}
    assert "hush" not in repr(question) and "hush" not in repr(ask)
    peer.link.engine.hook_answered(ask.attempt, ElicitResult.accept(), peer.link.now)
    peer.link.pump()
    assert peer.answers()[0]["result"] == {"action": "accept"}
    assert isinstance(peer.finish(call_id), CallSucceeded)


def test_Q2_a_url_consent_with_content_is_refused() -> None:
    question = Elicitation("s", None, "url", "go", {}, url="https://x.test/")
    with pytest.raises(InputError, match="carries no content"):
        check_answer(question, ElicitResult.accept({"token": "x"}), apply_defaults=False)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "file:///etc/passwd", 7, None, "https://" + "a" * 9000])
def test_Q2_a_url_question_without_a_usable_http_url_is_refused(url: object) -> None:
    bad = {"method": "elicitation/create", "params": {**URL_ASK["params"], "url": url}}
    peer = Elicits(offering(elicit_url=True), question=bad)
    _, ask = peer.call()
    assert ask is None and peer.answers()[0]["error"]["code"] == -32602


def test_Q2_elicitation_complete_reaches_the_host_only_when_it_takes_url_questions() -> None:
    from mcpcore import ElicitationCompleted

    note = {"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": "e-42"}}
    for elicit_url, expected in ((True, ["e-42"]), (False, [])):
        server = FakeServer()
        server.call_handler = lambda message: [note, {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}]
        link = connect(server, options=offering(elicit_url=elicit_url))
        link.engine.call("srv/echo", {}, link.now)
        link.pump()
        done = [e for e in link.events if isinstance(e, ElicitationCompleted)]
        assert [e.elicitation_id for e in done] == expected
        assert all(e.server == "srv" for e in done)


def test_Q2_a_32042_refusal_becomes_url_elicitation_required_with_its_urls() -> None:
    from mcpcore import UrlElicitationRequired

    server = FakeServer()
    data = {
        "elicitations": [
            {"mode": "url", "message": "Connect", "url": "https://user:pw@auth.example.test/c?state=hush", "elicitationId": "g1"},
            {"mode": "url", "message": "bad", "url": "ftp://nope"},
            "junk",
        ]
    }
    server.call_handler = lambda message: [
        {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32042, "message": "URL elicitation required", "data": data}}
    ]
    link = connect(server, options=offering(elicit_url=True))
    call_id = link.engine.call("srv/echo", {}, link.now)
    ended = outcome(link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, UrlElicitationRequired)
    [question] = ended.error.elicitations
    assert question.url == "https://user:pw@auth.example.test/c?state=hush" and question.elicitation_id == "g1"
    assert question.tool_id == "srv/echo" and question.mode == "url"
    text = str(ended.error)
    assert "https://auth.example.test" in text and "hush" not in text and "pw" not in text


def test_Q2_M48_a_url_question_in_a_modern_round_is_answered_from_the_hook() -> None:
    asked = {"resultType": "input_required", "inputRequests": {"go": URL_ASK}}
    link, server, call_id = modern_call([asked], elicit_url=True)
    [ask] = link.engine.take_input()
    assert ask.request.mode == "url"
    link.engine.hook_answered(ask.attempt, ElicitResult.decline(), link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert calls(server)[1]["params"]["inputResponses"] == {"go": {"action": "decline"}}
    # a form-only host answers a URL question cancel (E4: no person saw it)
    link, server, call_id = modern_call([asked])
    assert link.engine.take_input() == []
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert calls(server)[1]["params"]["inputResponses"] == {"go": {"action": "cancel"}}
