"""Input from a person against more real peers, on every driver (Q1, Q2, Q4).

* fastmcp 4.2 (``tests/servers/fastmcp_server.py``): at 2026-07-28 its guard
  tool ``pick`` returns an ``input_required`` round with a form, and ``signin``
  one with a URL question whose retry the server judges from its own
  ``requestState``; in the handshake era ``pick`` elicits mid-call.
* The TypeScript SDK 2.x server (``tests/servers/ts_modern_server.mjs``,
  ``--mode stateful``): ``confirm`` is an ``input_required`` round at
  2026-07-28 and, through the SDK's legacy shim, a real ``elicitation/create``
  request in the handshake era; ``signin`` is a URL question in both eras the
  same way; ``visit`` (URL question, then ``notifications/elicitation/complete``)
  and ``gated`` (``-32042``) are the handshake era's URL leftovers.
* The official SDK's stdio server (``tests/servers/stdio_server.py``): its
  ``confirm`` elicits over the child's stdin/stdout.
* A call paused with ``on_input="return"`` is finished by a new client in
  another process (``tests/resume_client.py``), once, and only against the
  server it belongs to.

The host's answer shows in each tool's result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import (
    BackendError,
    Continuation,
    Elicitation,
    ElicitResult,
    InputRequired,
    UrlElicitationRequired,
)
from peers import ROOT, Peer, fastmcp_server, ts_modern_server
from test_elicitation_peers import hook_for

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]

ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}
STDIO_SERVER = ROOT / "tests" / "servers" / "stdio_server.py"
RESUME_CLIENT = ROOT / "tests" / "resume_client.py"
ANSWERS = {
    "accept": ElicitResult.accept,
    "decline": ElicitResult.decline,
    "cancel": ElicitResult.cancel,
}


@pytest.fixture(scope="module")
def fastmcp_peer() -> Iterator[Peer]:
    with fastmcp_server() as peer:
        yield peer


@pytest.fixture(scope="module")
def ts_peer() -> Iterator[Peer]:
    with ts_modern_server("stateful") as peer:
        yield peer


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


async def resume(client: Any, continuation: Continuation, answers: dict[str, ElicitResult]) -> Any:
    if client.threaded:
        return await anyio.to_thread.run_sync(lambda: client.client.resume(continuation, answers))
    return await client.client.resume(continuation, answers)


# --- fastmcp 4.2 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept({"branch": "dev", "force": True}), "repo: accept branch=dev force=True"),
        (ElicitResult.decline(), "repo: decline"),
        (ElicitResult.cancel(), "repo: cancel"),
    ],
)
async def test_Q1_fastmcp_asks_a_form_in_an_input_required_round(
    driver: str, fastmcp_peer: Peer, answer: ElicitResult, text: str
) -> None:
    seen: list[Elicitation] = []
    async with open_client(
        driver, "fast", {"url": fastmcp_peer.url}, protocol="modern", elicit=hook_for(driver, answer, seen)
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            assert client.protocol_version == "2026-07-28"
            out = await client.call("fast/pick", {"repo": "repo"})
    assert out.text == text
    [question] = seen
    assert (question.server, question.tool_id, question.mode) == ("fast", "fast/pick", "form")
    assert question.message == "Which branch of repo?"
    assert question.fields["branch"]["enum"] == ["main", "dev"]


async def test_Q1_fastmcp_elicits_mid_call_in_the_handshake_era_and_defaults_fill_the_form(
    driver: str, fastmcp_peer: Peer
) -> None:
    seen: list[Elicitation] = []
    hook = hook_for(driver, ElicitResult.accept({"force": True}), seen)
    async with open_client(
        driver, "fast", {"url": fastmcp_peer.url}, protocol="legacy", elicit=hook, elicit_defaults=True
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            assert client.protocol_version == "2025-11-25"
            out = await client.call("fast/pick", {"repo": "old"})
    # the person left the branch out: the form's default filled it before sending
    assert out.text == "old: accept branch=main force=True"
    assert [q.tool_id for q in seen] == ["fast/pick"]


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept(), "wiki: signed in (pending-wiki)"),
        (ElicitResult.decline(), "wiki: decline"),
    ],
)
async def test_Q2_fastmcp_url_question_consent_and_the_server_decides_from_its_state(
    driver: str, fastmcp_peer: Peer, answer: ElicitResult, text: str
) -> None:
    seen: list[Elicitation] = []
    async with open_client(
        driver,
        "fast",
        {"url": fastmcp_peer.url},
        protocol="modern",
        elicit=hook_for(driver, answer, seen),
        elicit_url=True,
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            out = await client.call("fast/signin", {"service": "wiki"})
    assert out.text == text
    [question] = seen
    assert (question.mode, question.tool_id) == ("url", "fast/signin")
    assert question.url == "https://auth.example.test/wiki?code=hush"
    assert question.elicitation_id is None  # 2026-07-28 has none: the state correlates
    assert "hush" not in repr(question)


async def test_Q4_fastmcp_pause_then_resume_from_a_new_client(driver: str, fastmcp_peer: Peer) -> None:
    with anyio.fail_after(30):
        async with open_client(driver, "fast", {"url": fastmcp_peer.url}, protocol="modern") as client:
            assert (await client.ready(20)).ok
            paused = await client.call("fast/pick", {"repo": "later"}, on_input="return")
        assert isinstance(paused, InputRequired) and paused.tool_id == "fast/pick"
        [(key, question)] = paused.questions.items()
        assert question.message == "Which branch of later?"
        stored = paused.continuation.to_json()
        async with open_client(driver, "fast", {"url": fastmcp_peer.url}, protocol="modern") as client:
            assert (await client.ready(20)).ok
            answer = {key: ElicitResult.accept({"branch": "dev", "force": False})}
            out = await resume(client, Continuation.from_json(stored), answer)
    assert out.text == "later: accept branch=dev force=False"


async def test_Q4_M50_fastmcp_sealed_state_goes_back_byte_for_byte_and_a_forged_one_is_refused(
    driver: str, fastmcp_peer: Peer
) -> None:
    """fastmcp seals its requestState; the continuation keeps it as sent, the resumed
    round carries it unchanged and the server decides; a continuation whose state was
    altered is refused by the server, and the host sees that as the call's error."""
    with anyio.fail_after(30):
        async with open_client(
            driver, "fast", {"url": fastmcp_peer.url}, protocol="modern", elicit_url=True
        ) as client:
            assert (await client.ready(20)).ok
            paused = await client.call("fast/signin", {"service": "mail"}, on_input="return")
        assert isinstance(paused, InputRequired)
        sealed = paused.continuation.request_state
        assert sealed is not None and "pending-mail" not in sealed
        forged = Continuation.from_json(
            paused.continuation.to_json().replace(sealed, "pending-mail")
        )
        async with open_client(
            driver, "fast", {"url": fastmcp_peer.url}, protocol="modern", elicit_url=True
        ) as client:
            assert (await client.ready(20)).ok
            with pytest.raises(BackendError, match="requestState"):
                await resume(client, forged, {"visit": ElicitResult.accept()})
            out = await resume(client, paused.continuation, {"visit": ElicitResult.accept()})
    assert out.text == "mail: signed in (pending-mail)"


# --- TypeScript SDK 2.x -------------------------------------------------------------------


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept({"confirmed": True}), "ship: accept confirmed=true"),
        (ElicitResult.decline(), "ship: decline"),
    ],
)
async def test_Q1_typescript_server_asks_in_both_eras(
    driver: str, ts_peer: Peer, era: str, answer: ElicitResult, text: str
) -> None:
    """2026-07-28: an input_required round; handshake era: the SDK's legacy shim
    sends elicitation/create on the session and re-enters the tool with the answer."""
    seen: list[Elicitation] = []
    async with open_client(
        driver, "ts", {"url": ts_peer.url}, protocol=era, elicit=hook_for(driver, answer, seen)
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            assert client.protocol_version == ERAS[era]
            out = await client.call("ts/confirm", {"action": "ship"})
    assert out.text == text
    [question] = seen
    assert (question.server, question.tool_id, question.mode) == ("ts", "ts/confirm", "form")
    assert question.message == "Confirm ship?" and question.schema["required"] == ["confirmed"]


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept(), "crm: signed in (pending-crm)"),
        (ElicitResult.cancel(), "crm: cancel"),
    ],
)
async def test_Q2_typescript_url_question_in_both_eras(
    driver: str, ts_peer: Peer, era: str, answer: ElicitResult, text: str
) -> None:
    """One handler: at 2026-07-28 a URL question in an input_required round (no
    elicitationId; the server judges the retry from its requestState); in the
    handshake era the SDK's shim sends it as elicitation/create with an id it makes."""
    seen: list[Elicitation] = []
    async with open_client(
        driver,
        "ts",
        {"url": ts_peer.url},
        protocol=era,
        elicit=hook_for(driver, answer, seen),
        elicit_url=True,
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            assert client.protocol_version == ERAS[era]
            out = await client.call("ts/signin", {"service": "crm"})
    assert out.text == text
    [question] = seen
    assert (question.mode, question.url) == ("url", "https://auth.example.test/crm?code=hush")
    assert question.tool_id == "ts/signin"
    assert (question.elicitation_id is None) == (era == "modern")


async def test_Q2_typescript_handshake_era_url_completion_and_32042(driver: str, ts_peer: Peer) -> None:
    """The handshake era's URL leftovers against the TypeScript server: the
    elicitationId and notifications/elicitation/complete reach the host; -32042
    becomes UrlElicitationRequired with the URL, and the call after the visit works."""
    seen: list[Elicitation] = []
    done: list[tuple[str, str]] = []
    service = f"ts-{driver}"
    async with open_client(
        driver,
        "ts",
        {"url": ts_peer.url},
        protocol="legacy",
        elicit=hook_for(driver, ElicitResult.accept(), seen),
        elicit_url=True,
        on_elicitation_complete=lambda server, ident: done.append((server, ident)),
    ) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            assert (await client.call("ts/visit", {"service": "docs"})).text == "docs: accept"
            [question] = seen
            assert (question.mode, question.elicitation_id, question.tool_id) == ("url", "visit-docs", "ts/visit")
            await wait_for(lambda: bool(done), 10)
            assert done == [("ts", "visit-docs")]
            with pytest.raises(UrlElicitationRequired) as refused:
                await client.call("ts/gated", {"service": service})
            [gate] = refused.value.elicitations
            assert gate.url == f"https://auth.example.test/connect/{service}?state=hush"
            assert gate.elicitation_id == f"gate-{service}" and "hush" not in str(refused.value)
            assert (await client.call("ts/gated", {"service": service})).text == f"gated {service}: open"


async def test_Q4_a_paused_call_is_finished_by_a_new_client_in_another_process(
    driver: str, ts_peer: Peer, fastmcp_peer: Peer
) -> None:
    """The continuation travels as JSON to another process, whose new client resumes
    it once (a second resume is refused) and only against the server it came from."""
    with anyio.fail_after(30):
        # no hook at all: elicit_url=True only says URL questions may be returned too
        async with open_client(
            driver, "ts", {"url": ts_peer.url}, protocol="modern", elicit_url=True
        ) as client:
            assert (await client.ready(20)).ok
            paused = await client.call("ts/signin", {"service": "vault"}, on_input="return")
    assert isinstance(paused, InputRequired)
    [question] = paused.questions.values()
    assert question.mode == "url" and question.url == "https://auth.example.test/vault?code=hush"
    stored = paused.continuation.to_json()
    argv = [sys.executable, str(RESUME_CLIENT), driver, ts_peer.url, fastmcp_peer.url, "accept"]
    env = {"PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'src' / 'adapters'}", "PATH": "/usr/bin:/bin"}
    with anyio.fail_after(60):
        done = await anyio.run_process(argv, input=stored.encode(), env=env, check=False, cwd=Path(ROOT))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout)
    assert out["text"] == "vault: signed in (pending-vault)"
    assert out["again"].startswith("InvalidState:") and "resumed already" in out["again"]
    assert out["other"].startswith("InvalidValue:") and "another server" in out["other"]


# --- stdio --------------------------------------------------------------------------------


async def test_Q1_a_local_server_asks_over_stdio(driver: str) -> None:
    """Over stdio the question comes on the child's stdout and the answer goes to its
    stdin (the handshake era: stdio has no other). Nothing on that wire says which
    call asked, so ``tool_id`` is None. One child answers accept, decline, cancel."""
    answers = [ElicitResult.accept({"confirmed": True}), ElicitResult.decline(), ElicitResult.cancel()]
    seen: list[Elicitation] = []

    def answering(question: Elicitation) -> ElicitResult:
        seen.append(question)
        return answers[len(seen) - 1]

    async def elicit(question: Elicitation) -> ElicitResult:
        await anyio.sleep(0)
        return answering(question)

    entry = {"command": sys.executable, "args": [str(STDIO_SERVER)]}
    hook = answering if driver == "threaded" else elicit
    async with open_client(driver, "local", entry, allow_local=True, elicit=hook) as client:
        with anyio.fail_after(30):
            assert (await client.ready(20)).ok
            texts = [(await client.call("local/confirm", {"action": "wipe"})).text for _ in answers]
            # the session goes on after the questions
            assert (await client.call("local/echo", {"text": "after"})).text == "after"
    assert texts == ["wipe: accept confirmed=True", "wipe: decline", "wipe: cancel"]
    assert {(q.server, q.mode, q.message, q.tool_id) for q in seen} == {("local", "form", "Confirm wipe?", None)}
