"""Calls that pause for a person and resume later (Q4), in the core and on every driver.

At 2026-07-28 a call made with ``on_input="return"`` ends with an
``InputRequired`` when the server asks the person something; its
``Continuation`` survives JSON, and ``resume`` finishes the call, from the
same client or another one, once, and only against the same endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from fake_peer import Link, Reply, connect
from mcpcore import (
    CallSucceeded,
    Continuation,
    ElicitResult,
    HttpClientEngine,
    InputError,
    InputRequired,
    InvalidState,
    InvalidValue,
    RemoteProtocolError,
    RemoteServer,
    RequestSucceeded,
)
from mcpcore.features._input_options import InputOptions
from mcpcore.session._session import SessionOptions
from mcpcore.wire._modern import MAX_INPUT_ROUNDS
from peers import Peer, modern_sdk_server
from test_elicitation import ELICIT, URL_ASK, modern_call, outcome
from test_modern import JSON, ModernFake, calls, link_to, rpc

CAPS = "io.modelcontextprotocol/clientCapabilities"
ASKED = {
    "resultType": "input_required",
    "inputRequests": {"which": ELICIT, "where": {"method": "roots/list", "params": {}}},
    "requestState": "state-1",
}


def paused_call(results: list[dict[str, Any]], **options: Any) -> tuple[Any, Any, int, InputRequired]:
    """A call made with on_input="return" by a client that gave no hook at all."""
    server = ModernFake()
    queue = list(results)

    def reply(message: dict[str, Any]) -> Reply:
        result = queue.pop(0) if queue else {"content": [{"type": "text", "text": "done"}]}
        return Reply(200, JSON, [json.dumps(rpc(message["id"], result)).encode()])

    server.call_reply = reply
    link = link_to(server, **options)
    call_id = link.engine.call("srv/echo", {"a": 1}, link.now, on_input="return", meta={"tenant": "t1"})
    link.pump()
    event = outcome(link, call_id)
    assert isinstance(event, RequestSucceeded), event
    assert isinstance(event.value, InputRequired)
    return link, server, call_id, event.value


def test_Q4_a_question_ends_the_call_with_input_required_and_no_hook_is_asked() -> None:
    link, server, _, paused = paused_call([ASKED])
    assert link.engine.take_input() == []
    assert (paused.server, paused.tool_id) == ("srv", "srv/echo")
    assert list(paused.questions) == ["which"] and paused.questions["which"].message == "Which branch?"
    continuation = paused.continuation
    assert continuation.tool == "echo" and continuation.rounds == 1
    assert continuation.request_state == "state-1"
    assert continuation.params == {"name": "echo", "arguments": {"a": 1}, "_meta": {"tenant": "t1"}}
    # Q4, seed 000: only that call declared that it takes questions
    [(_, _, probe), (_, _, listing), (_, _, call)] = server.seen
    assert call["params"]["_meta"][CAPS] == {"elicitation": {"form": {}}}
    assert probe["params"]["_meta"][CAPS] == {} and listing["params"]["_meta"][CAPS] == {}
    assert "state-1" not in repr(paused) and "t1" not in repr(continuation)


def test_Q4_M50_resume_sends_the_answers_and_the_state_and_finishes_the_call() -> None:
    link, server, _, paused = paused_call([ASKED])
    text = paused.continuation.to_json()
    again = link.engine.resume(Continuation.from_json(text), {"which": ElicitResult.accept({"branch": "main"})}, link.now)
    event = outcome(link, again)
    assert isinstance(event, CallSucceeded) and event.output.text == "done"
    first, second = calls(server)
    assert second["id"] != first["id"]
    assert second["params"]["requestState"] == "state-1"
    assert second["params"]["inputResponses"] == {
        "which": {"action": "accept", "content": {"branch": "main"}},
        "where": {"roots": []},
    }
    assert second["params"]["arguments"] == {"a": 1} and second["params"]["_meta"]["tenant"] == "t1"
    assert second["params"]["_meta"][CAPS] == {"elicitation": {"form": {}}}
    assert server.problems == []


def test_Q4_a_new_client_of_the_same_endpoint_resumes_and_a_second_resume_is_refused() -> None:
    _, server, _, paused = paused_call([ASKED])
    text = paused.continuation.to_json()
    fresh = link_to(server)
    answer = {"which": ElicitResult.decline()}
    again = fresh.engine.resume(Continuation.from_json(text), answer, fresh.now)
    assert isinstance(outcome(fresh, again), CallSucceeded)
    with pytest.raises(InvalidState, match="resumed already"):
        fresh.engine.resume(Continuation.from_json(text), answer, fresh.now)


def test_Q3_Q4_a_resumed_round_answers_roots_with_the_resuming_clients_roots() -> None:
    """A round that asked a question and the roots: the roots a client was given as a
    list go back with the person's answer (before, always an empty list)."""
    _, server, _, paused = paused_call([ASKED])
    work = {"uri": "file:///work", "name": "work"}
    fresh = link_to(server, input=InputOptions(roots=(work,)))
    again = fresh.engine.resume(paused.continuation, {"which": ElicitResult.decline()}, fresh.now)
    assert isinstance(outcome(fresh, again), CallSucceeded)
    resumed = calls(server)[-1]
    assert resumed["params"]["inputResponses"]["where"] == {"roots": [work]}


def test_Q4_a_continuation_of_another_server_is_refused() -> None:
    _, _, _, paused = paused_call([ASKED])
    other = HttpClientEngine(
        RemoteServer(name="srv", url="https://elsewhere.example.test/mcp"),
        options=SessionOptions(server_name="srv", protocol="auto"),
    )
    link = Link(other, ModernFake())
    link.start()
    with pytest.raises(InvalidValue, match="another server"):
        other.resume(paused.continuation, {"which": ElicitResult.cancel()}, link.now)


@pytest.mark.parametrize(
    ("responses", "error", "match"),
    [
        ({}, InvalidValue, "'which' has no answer"),
        ({"which": ElicitResult.cancel(), "what": ElicitResult.cancel()}, InvalidValue, "did not ask: 'what'"),
        ({"which": ElicitResult.accept({"branch": 3})}, InputError, "must be a string"),
        ({"which": "yes"}, InputError, "not an ElicitResult"),
        ([("which", ElicitResult.cancel())], InvalidValue, "responses map"),
    ],
)
def test_Q4_answers_that_do_not_match_the_questions_are_refused_before_sending(
    responses: Any, error: type[Exception], match: str
) -> None:
    link, server, _, paused = paused_call([ASKED])
    with pytest.raises(error, match=match):
        link.engine.resume(paused.continuation, responses, link.now)
    assert len(calls(server)) == 1
    # nothing was used up: a good answer still resumes
    good = link.engine.resume(paused.continuation, {"which": ElicitResult.cancel()}, link.now)
    assert isinstance(outcome(link, good), CallSucceeded)


def test_Q4_an_answer_to_a_url_question_needs_a_client_that_takes_url_questions() -> None:
    """A URL question paused on a client with elicit_url=True, resumed on one without:
    its answer is refused before sending, never replaced by a silent cancel."""
    url_asked = {"resultType": "input_required", "inputRequests": {"visit": URL_ASK}, "requestState": "s"}
    _, server, _, paused = paused_call([url_asked], input=InputOptions(elicit_url=True))
    assert paused.questions["visit"].mode == "url"
    plain = link_to(server)
    with pytest.raises(InvalidValue, match=r"'visit' cannot be answered by this client.*elicit_url=True"):
        plain.engine.resume(paused.continuation, {"visit": ElicitResult.accept()}, plain.now)
    assert len(calls(server)) == 1
    taking = link_to(server, input=InputOptions(elicit_url=True))
    again = taking.engine.resume(paused.continuation, {"visit": ElicitResult.accept()}, taking.now)
    assert isinstance(outcome(taking, again), CallSucceeded)
    assert calls(server)[-1]["params"]["inputResponses"] == {"visit": {"action": "accept"}}


def test_Q4_M54_rounds_stay_bounded_across_resumes() -> None:
    link, server, _, paused = paused_call([ASKED] * (MAX_INPUT_ROUNDS + 2))
    for _ in range(MAX_INPUT_ROUNDS):
        call_id = link.engine.resume(paused.continuation, {"which": ElicitResult.cancel()}, link.now)
        event = outcome(link, call_id)
        if not isinstance(event, RequestSucceeded):
            break
        paused = event.value
    assert not isinstance(event, RequestSucceeded)
    assert isinstance(event.error, RemoteProtocolError) and "rounds" in str(event.error)
    assert len(calls(server)) == MAX_INPUT_ROUNDS


def test_Q4_a_round_without_a_question_for_the_person_does_not_pause() -> None:
    roots_only = {"resultType": "input_required", "inputRequests": {"where": {"method": "roots/list"}}}
    link, _, call_id = modern_call([roots_only])
    other = link.engine.call("srv/echo", {}, link.now, on_input="return")
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert isinstance(outcome(link, other), CallSucceeded)


def test_Q4_resume_needs_the_2026_07_28_era() -> None:
    _, _, _, paused = paused_call([ASKED])
    legacy = connect()
    with pytest.raises(InvalidState, match="2026-07-28"):
        legacy.engine.resume(paused.continuation, {}, legacy.now)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@given(
    tool=st.text(min_size=1, max_size=20),
    arguments=st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    state=st.none() | st.text(),
    requests=st.dictionaries(st.text(max_size=8), _JSON, max_size=3),
    rounds=st.integers(1, 50),
)
def test_Q4_a_continuation_survives_json(
    tool: str, arguments: dict[str, Any], state: str | None, requests: dict[str, Any], rounds: int
) -> None:
    original = Continuation("e" * 32, tool, {"name": tool, "arguments": arguments}, state, requests, rounds)
    text = original.to_json()
    back = Continuation.from_json(text)
    assert back == original and back.id == original.id
    assert Continuation.from_json(text.encode()) == original


@pytest.mark.parametrize(
    "text",
    ["", "[]", "{}", '{"mcpcoreContinuation": 2}', "not json", '{"mcpcoreContinuation": 1, "tool": "x"}', "x" * (5 * 1024 * 1024)],
)
def test_Q4_text_that_is_not_a_continuation_is_refused(text: str) -> None:
    with pytest.raises(InvalidValue):
        Continuation.from_json(text)


# --- on every driver, against the SDK server ---------------------------------------------------


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.realpeer
@pytest.mark.anyio
async def test_Q4_pause_keep_as_json_and_resume_from_a_new_client(driver: str, peer: Peer) -> None:
    with anyio.fail_after(60):
        async with open_client(driver, "first", {"url": peer.url}, protocol="modern") as client:
            assert (await client.ready(30)).ok
            paused = await client.call("first/confirm", {"action": "ship"}, on_input="return")
            assert isinstance(paused, InputRequired) and paused.tool_id == "first/confirm"
            [(key, question)] = paused.questions.items()
            assert question.message == "Confirm ship?" and "confirmed" in question.fields
            stored = paused.continuation.to_json()
        # later, another client (another process would do the same)
        async with open_client(driver, "second", {"url": peer.url}, protocol="modern") as client:
            assert (await client.ready(30)).ok
            continuation = Continuation.from_json(stored)
            answer = {key: ElicitResult.accept({"confirmed": True})}
            if client.threaded:
                out = await anyio.to_thread.run_sync(lambda: client.client.resume(continuation, answer))
            else:
                out = await client.client.resume(continuation, answer)
            assert out.text == "ship: accept confirmed=True"
            with pytest.raises(InvalidState):
                if client.threaded:
                    await anyio.to_thread.run_sync(lambda: client.client.resume(continuation, answer))
                else:
                    await client.client.resume(continuation, answer)


@pytest.mark.realpeer
@pytest.mark.anyio
async def test_Q4_a_hub_pauses_and_resumes_on_the_server_the_call_belongs_to(driver: str, peer: Peer) -> None:
    import mcpcore_anyio
    import mcpcore_threaded

    document = json.dumps({"mcpServers": {"a": {"url": peer.url}, "b": {"url": peer.url + "?other=1"}}})
    foreign = Continuation("f" * 32, "confirm", {"name": "confirm"}, None, {}, 1)
    with anyio.fail_after(60):
        if driver == "threaded":

            def run() -> Any:
                with mcpcore_threaded.McpHub.from_text(document, protocol="modern") as hub:
                    hub.ready(30)
                    paused = hub.call("b/confirm", {"action": "hub"}, on_input="return")
                    assert isinstance(paused, InputRequired) and paused.server == "b"
                    [key] = paused.questions
                    with pytest.raises(InvalidValue):
                        hub.resume(foreign, {})
                    return hub.resume(paused.continuation, {key: ElicitResult.decline()})

            out = await anyio.to_thread.run_sync(run)
        else:
            async with mcpcore_anyio.McpHub.from_text(document, protocol="modern") as hub:
                await hub.ready(30)
                paused = await hub.call("b/confirm", {"action": "hub"}, on_input="return")
                assert isinstance(paused, InputRequired) and paused.server == "b"
                [key] = paused.questions
                with pytest.raises(InvalidValue):
                    await hub.resume(foreign, {})
                out = await hub.resume(paused.continuation, {key: ElicitResult.decline()})
    assert out.text == "hub: decline"
