"""Roots and sampling by opt-in (Q3), in the core and on every driver.

A host that gives ``roots=`` (a list, or a hook) declares ``roots`` and answers
``roots/list`` with them, and changing them tells a handshake-era server; a
host that gives ``sample=`` declares ``sampling`` and answers
``sampling/createMessage`` from its model. A host that gives neither declares
neither and behaves as before (seed 000).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from fake_peer import FakeServer, Reply, Seen, connect, sse
from mcpcore import (
    CallFailed,
    CallSucceeded,
    HookFailure,
    InputError,
    InputOptions,
    InvalidState,
    InvalidValue,
    SampleResult,
    Sampling,
)
from mcpcore.features._input_options import client_capabilities
from mcpcore.features._roots import check_roots
from mcpcore.session._session import SessionOptions
from peers import Peer, modern_sdk_server
from test_elicitation import modern_call, outcome
from test_modern import calls

ROOTS = ({"uri": "file:///work/app"}, {"uri": "file:///work/lib", "name": "lib"})
SAMPLE_ASK = {
    "method": "sampling/createMessage",
    "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarize"}}], "maxTokens": 20},
}


def options(**changes: Any) -> SessionOptions:
    return SessionOptions(server_name="srv", input=InputOptions(**changes))


class Asks:
    """A handshake-era server whose tools/call stream sends one request, then waits."""

    def __init__(self, question: dict[str, Any], **changes: Any) -> None:
        self.server = FakeServer()
        self.question = question
        self.server.hook = self._hook
        self.link = connect(self.server, options=options(**changes))

    def _hook(self, seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            body = sse({"jsonrpc": "2.0", "id": "s1", **self.question})
            return Reply(200, [(b"content-type", b"text/event-stream")], [body], finish="stall")
        return None

    def call(self) -> tuple[int, list[Any]]:
        call_id = self.link.engine.call("srv/echo", {}, self.link.now)
        self.link.pump()
        return call_id, self.link.engine.take_input()

    def answers(self) -> list[dict[str, Any]]:
        return [s.message for s in self.server.seen if s.message and s.message.get("id") == "s1"]


def test_Q3_each_capability_is_declared_only_when_given() -> None:
    assert client_capabilities(InputOptions()) == {}
    assert client_capabilities(InputOptions(roots=ROOTS)) == {"roots": {"listChanged": True}}
    assert client_capabilities(InputOptions(roots_hook=True)) == {"roots": {"listChanged": True}}
    assert client_capabilities(InputOptions(sampling=True)) == {"sampling": {}}
    server = FakeServer()
    connect(server, options=options(roots=ROOTS, sampling=True))
    assert server.requests("initialize")[0]["params"]["capabilities"] == {
        "roots": {"listChanged": True},
        "sampling": {},
    }


def test_Q3_without_roots_or_sampling_both_requests_are_refused_as_before() -> None:
    for question in ({"method": "roots/list"}, SAMPLE_ASK):
        peer = Asks(question)
        _, asks = peer.call()
        assert asks == [] and peer.answers()[0]["error"]["code"] == -32601


def test_Q3_a_roots_list_is_answered_at_once() -> None:
    peer = Asks({"method": "roots/list"}, roots=ROOTS)
    _, asks = peer.call()
    assert asks == []
    assert peer.answers()[0]["result"] == {"roots": [dict(r) for r in ROOTS]}


def test_Q3_D2_a_roots_hook_is_asked_and_its_answer_checked() -> None:
    peer = Asks({"method": "roots/list"}, roots_hook=True)
    _, [ask] = peer.call()
    assert ask.hook == "roots" and ask.request is None
    peer.link.engine.hook_answered(ask.attempt, ["file:///x", {"uri": "file:///y", "name": "Y"}], peer.link.now)
    peer.link.pump()
    assert peer.answers()[0]["result"] == {"roots": [{"uri": "file:///x"}, {"uri": "file:///y", "name": "Y"}]}


@pytest.mark.parametrize("answer", ["file:///x", ["https://not-a-file"], [{"name": "no uri"}], None, [7]])
def test_Q3_Q5_a_roots_hook_answer_that_is_not_roots_fails_only_its_call(answer: object) -> None:
    peer = Asks({"method": "roots/list"}, roots_hook=True)
    call_id, [ask] = peer.call()
    peer.link.engine.hook_answered(ask.attempt, answer, peer.link.now)
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.hook == "roots" and ended.error.outcome == "unusable"
    assert peer.answers()[0]["error"]["code"] == -32603


@pytest.mark.parametrize("roots", ["file:///x", ["/relative"], [{"uri": 3}], {"uri": "file:///x"}])
def test_Q3_a_roots_list_that_is_not_one_is_refused_when_given(roots: object) -> None:
    with pytest.raises(InvalidValue):
        check_roots(roots, hook=False)


def test_Q3_changing_the_roots_tells_a_handshake_era_server() -> None:
    server = FakeServer()
    link = connect(server, options=options(roots=ROOTS))
    link.engine.roots_changed(link.now)
    link.pump()
    assert [s.message["method"] for s in server.seen if s.message and "id" not in s.message][-1] == (
        "notifications/roots/list_changed"
    )
    plain = connect(FakeServer())
    with pytest.raises(InvalidState):
        plain.engine.roots_changed(plain.now)


def test_Q3_a_sampling_request_reaches_the_hook_and_its_answer_is_sent() -> None:
    peer = Asks(SAMPLE_ASK, sampling=True)
    _, [ask] = peer.call()
    request = ask.request
    assert isinstance(request, Sampling) and request.tool_id == "srv/echo" and request.max_tokens == 20
    assert request.messages[0]["content"]["text"] == "Summarize"
    peer.link.engine.hook_answered(ask.attempt, SampleResult(model="m1", text="short"), peer.link.now)
    peer.link.pump()
    assert peer.answers()[0]["result"] == {
        "role": "assistant",
        "content": {"type": "text", "text": "short"},
        "model": "m1",
        "stopReason": "endTurn",
    }


@pytest.mark.parametrize(
    "report",
    [
        lambda e, a, now: e.hook_answered(a, "just text", now),
        lambda e, a, now: e.hook_failed(a, HookFailure.RAISED, now),
    ],
)
def test_Q3_Q5_a_sample_hook_that_fails_fails_only_its_call(report: Any) -> None:
    peer = Asks(SAMPLE_ASK, sampling=True)
    call_id, [ask] = peer.call()
    report(peer.link.engine, ask.attempt, peer.link.now)
    ended = outcome(peer.link, call_id)
    assert isinstance(ended, CallFailed) and isinstance(ended.error, InputError)
    assert ended.error.hook == "sample"


def test_Q3_a_malformed_sampling_request_is_refused_with_invalid_params() -> None:
    peer = Asks({"method": "sampling/createMessage", "params": {"messages": "hi"}}, sampling=True)
    _, asks = peer.call()
    assert asks == [] and peer.answers()[0]["error"]["code"] == -32602


def test_Q3_M52_modern_rounds_answer_roots_and_sampling_from_the_host() -> None:
    asked = {
        "resultType": "input_required",
        "inputRequests": {"r": {"method": "roots/list"}, "s": SAMPLE_ASK},
    }
    link, server, call_id = modern_call([asked], roots=ROOTS, sampling=True, elicit_form=False)
    [ask] = link.engine.take_input()
    assert ask.hook == "sample"
    link.engine.hook_answered(ask.attempt, SampleResult(model="m", content={"type": "text", "text": "t"}), link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    responses = calls(server)[1]["params"]["inputResponses"]
    assert responses["r"] == {"roots": [dict(r) for r in ROOTS]}
    assert responses["s"]["model"] == "m" and responses["s"]["content"] == {"type": "text", "text": "t"}


def test_Q3_a_sample_result_has_text_or_content() -> None:
    with pytest.raises(ValueError):
        SampleResult(model="m")
    with pytest.raises(ValueError):
        SampleResult(model="m", text="a", content={"type": "text", "text": "b"})
    assert "secret" not in repr(SampleResult(model="m", text="secret"))


# --- on every driver, against the SDK server ---------------------------------------------------


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


async def _listening(peer: Peer, gets_before: int) -> None:
    """Wait until this client's GET stream is open: the SDK server sends ``roots/list``
    and ``sampling/createMessage`` on the standalone stream, and drops them while none
    is open (a first call made at once raced the client's GET and hung the tool)."""
    await wait_for(lambda: peer.events().count("get") > gets_before, 10)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.realpeer
@pytest.mark.anyio
async def test_Q3_roots_a_list_changed_and_a_hook_on_every_driver(driver: str, peer: Peer) -> None:
    asked: list[str] = []

    def blocking() -> list[str]:
        asked.append("roots")
        return ["file:///from/hook"]

    async def waiting() -> list[str]:
        return blocking()

    gets = peer.events().count("get")
    with anyio.fail_after(60):
        async with open_client(driver, "sdk", {"url": peer.url}, protocol="legacy", roots=["file:///work/a"]) as client:
            assert (await client.ready(30)).ok
            await _listening(peer, gets)
            assert (await client.call("sdk/roots")).text == "file:///work/a"
            before = peer.events().count("notification notifications/roots/list_changed")
            client.client.set_roots([{"uri": "file:///work/b", "name": "b"}])
            assert (await client.call("sdk/roots")).text == "file:///work/b"
            while peer.events().count("notification notifications/roots/list_changed") == before:
                await anyio.sleep(0.01)
            client.client.set_roots(blocking if client.threaded else waiting)
            assert (await client.call("sdk/roots")).text == "file:///from/hook"
            assert asked == ["roots"]


@pytest.mark.realpeer
@pytest.mark.anyio
async def test_Q3_sampling_is_answered_by_the_hosts_model_on_every_driver(driver: str, peer: Peer) -> None:
    def model(request: Sampling) -> SampleResult:
        text = request.messages[0]["content"]["text"]
        return SampleResult(model="tiny", text=text.upper())

    async def amodel(request: Sampling) -> SampleResult:
        return model(request)

    hook = model if driver == "threaded" else amodel
    gets = peer.events().count("get")
    with anyio.fail_after(60):
        async with open_client(driver, "sdk", {"url": peer.url}, protocol="legacy", sample=hook) as client:
            assert (await client.ready(30)).ok
            await _listening(peer, gets)
            out = await client.call("sdk/summarize", {"text": "make it loud"})
    assert out.text == "summary: MAKE IT LOUD (tiny)"
