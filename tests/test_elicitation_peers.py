"""Form elicitation against the official Python SDK server, in both eras, on every
driver (Q1, Q5).

The server's ``confirm`` tool asks ``{"confirmed": boolean}`` before it
finishes: in the handshake era as an ``elicitation/create`` request on the
call's stream, at 2026-07-28 as an ``input_required`` round. The host's hook is
async on anyio and blocking on the threaded driver; its answer shows in the
tool's result. A hook that fails costs only its call; a hub passes the hook to
every entry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client
from mcpcore import Elicitation, ElicitResult, InputError, UrlElicitationRequired
from peers import Peer, modern_sdk_server

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]

ERAS = {"legacy": "2025-11-25", "modern": "2026-07-28"}


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


def hook_for(driver: str, answer: Any, seen: list[Elicitation]) -> Any:
    """The driver's kind of hook: a coroutine function on anyio, a blocking one on threaded."""

    def answering(question: Elicitation) -> ElicitResult:
        seen.append(question)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    if driver == "threaded":
        return answering

    async def elicit(question: Elicitation) -> ElicitResult:
        await anyio.sleep(0)
        return answering(question)

    return elicit


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept({"confirmed": True}), "deploy: accept confirmed=True"),
        (ElicitResult.decline(), "deploy: decline"),
    ],
)
async def test_Q1_the_person_answers_the_servers_question_in_both_eras(
    driver: str, peer: Peer, era: str, answer: ElicitResult, text: str
) -> None:
    seen: list[Elicitation] = []
    async with open_client(
        driver, "sdk", {"url": peer.url}, protocol=era, elicit=hook_for(driver, answer, seen)
    ) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            assert client.protocol_version == ERAS[era]
            out = await client.call("sdk/confirm", {"action": "deploy"})
    assert out.text.lower() == text.lower()
    [question] = seen
    assert (question.server, question.tool_id, question.mode) == ("sdk", "sdk/confirm", "form")
    assert question.message == "Confirm deploy?" and "confirmed" in question.fields


@pytest.mark.parametrize("era", list(ERAS))
async def test_Q5_a_hook_that_raises_or_answers_badly_fails_only_that_call(
    driver: str, peer: Peer, era: str
) -> None:
    for answer, outcome in (
        (RuntimeError("the person's window crashed"), "raised"),
        (ElicitResult.accept({"confirmed": "yes"}), "invalid"),
    ):
        seen: list[Elicitation] = []
        async with open_client(
            driver, "sdk", {"url": peer.url}, protocol=era, elicit=hook_for(driver, answer, seen)
        ) as client:
            with anyio.fail_after(60):
                assert (await client.ready(30)).ok
                with pytest.raises(InputError) as failed:
                    await client.call("sdk/confirm", {"action": "deploy"})
                assert failed.value.outcome == outcome
                # the client is still good for everything else
                assert (await client.call("sdk/echo", {"text": "still here"})).text == "still here"


@pytest.mark.parametrize("era", list(ERAS))
async def test_Q1_a_hub_gives_the_hook_to_its_entries(driver: str, peer: Peer, era: str) -> None:
    seen: list[Elicitation] = []
    hook = hook_for(driver, ElicitResult.accept({"confirmed": False}), seen)
    document = f'{{"mcpServers": {{"one": {{"url": "{peer.url}"}}}}}}'
    with anyio.fail_after(60):
        if driver == "threaded":
            hub = mcpcore_threaded.McpHub.from_text(document, protocol=era, elicit=hook)

            def run() -> str:
                with hub:
                    assert hub.ready(30)["one"].ok
                    return hub.call("one/confirm", {"action": "ship"}).text

            text = await anyio.to_thread.run_sync(run)
        else:
            async with mcpcore_anyio.McpHub.from_text(document, protocol=era, elicit=hook) as ahub:
                assert (await ahub.ready(30))["one"].ok
                text = (await ahub.call("one/confirm", {"action": "ship"})).text
    assert text.lower() == "ship: accept confirmed=false"
    assert [q.server for q in seen] == ["one"]


async def test_Q5_a_slow_hook_on_one_call_delays_no_other_call(driver: str, peer: Peer) -> None:
    """While the person thinks about one call's question, other calls go on."""
    release = threading.Event() if driver == "threaded" else anyio.Event()
    asked = threading.Event()

    def blocking(question: Elicitation) -> ElicitResult:
        asked.set()
        assert isinstance(release, threading.Event)
        release.wait(30)
        return ElicitResult.accept({"confirmed": True})

    async def waiting(question: Elicitation) -> ElicitResult:
        asked.set()
        assert isinstance(release, anyio.Event)
        await release.wait()
        return ElicitResult.accept({"confirmed": True})

    hook = blocking if driver == "threaded" else waiting
    async with open_client(driver, "sdk", {"url": peer.url}, protocol="modern", elicit=hook) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            results: list[str] = []
            async with anyio.create_task_group() as group:

                async def confirm() -> None:
                    results.append((await client.call("sdk/confirm", {"action": "x"})).text)

                group.start_soon(confirm)
                while not asked.is_set():
                    await anyio.sleep(0.01)
                assert (await client.call("sdk/echo", {"text": "meanwhile"})).text == "meanwhile"
                release.set()
            assert results == ["x: accept confirmed=True"]


async def test_Q2_a_url_question_is_shown_never_opened_and_its_completion_reaches_the_host(
    driver: str, peer: Peer
) -> None:
    seen: list[Elicitation] = []
    done: list[tuple[str, str]] = []
    async with open_client(
        driver,
        "sdk",
        {"url": peer.url},
        protocol="legacy",
        elicit=hook_for(driver, ElicitResult.accept(), seen),
        elicit_url=True,
        on_elicitation_complete=lambda server, ident: done.append((server, ident)),
    ) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            out = await client.call("sdk/visit", {"service": "tracker"})
            assert out.text == "tracker: accept"
            [question] = seen
            assert question.mode == "url" and question.tool_id == "sdk/visit"
            assert question.url == "https://auth.example.test/tracker?code=hush"
            assert question.elicitation_id == "visit-tracker"
            while not done:
                await anyio.sleep(0.01)
            assert done == [("sdk", "visit-tracker")]


async def test_Q2_a_32042_refusal_carries_the_urls_and_a_retry_after_the_visit_works(
    driver: str, peer: Peer
) -> None:
    service = f"drive-{driver}"
    async with open_client(
        driver,
        "sdk",
        {"url": peer.url},
        protocol="legacy",
        elicit=hook_for(driver, ElicitResult.accept(), []),
        elicit_url=True,
    ) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            with pytest.raises(UrlElicitationRequired) as refused:
                await client.call("sdk/gated", {"service": service})
            [question] = refused.value.elicitations
            assert question.url == f"https://auth.example.test/connect/{service}?state=hush"
            assert question.elicitation_id == f"gate-{service}"
            assert "hush" not in str(refused.value)
            # the person went there; the host calls again
            assert (await client.call("sdk/gated", {"service": service})).text == f"gated {service}: open"


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ElicitResult.accept(), "billing: signed in (pending-billing)"),
        (ElicitResult.decline(), "billing: decline"),
    ],
)
async def test_Q2_a_url_question_at_2026_07_28_is_consent_and_the_server_judges_the_retry(
    driver: str, peer: Peer, answer: ElicitResult, text: str
) -> None:
    """At 2026-07-28 a URL question is an input_required round: accept carries no
    content (consent only), the state comes back byte for byte, the server decides."""
    seen: list[Elicitation] = []
    async with open_client(
        driver,
        "sdk",
        {"url": peer.url},
        protocol="modern",
        elicit=hook_for(driver, answer, seen),
        elicit_url=True,
    ) as client:
        with anyio.fail_after(60):
            assert (await client.ready(30)).ok
            out = await client.call("sdk/signin", {"service": "billing"})
    assert out.text == text
    [question] = seen
    assert (question.mode, question.tool_id, question.elicitation_id) == ("url", "sdk/signin", None)
    assert question.url == "https://auth.example.test/billing?code=hush"
