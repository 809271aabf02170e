"""Tasks (T7–T9) on every driver, against a scripted 2026-07-28 server on loopback
(``task_server.py``): polling with progress, input through the hook with
``tasks/update``, cancelling, handles resumed by a new client, the task-required
tool visible and hidden, deadlines and bad answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, Face, backend_of, open_client, wait_for
from mcpcore import (
    BackendError,
    ElicitResult,
    RemoteProtocolError,
    TaskHandle,
    TaskStatus,
    TransportError,
    UnknownTool,
)
from task_server import TaskServerState, task_server
from test_elicitation_peers import hook_for


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, TaskServerState]]:
    with task_server() as running:
        yield running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def tasks_client(driver: str, url: str, **options: Any) -> Any:
    return open_client(driver, "jobs", {"url": url}, protocol="modern", tasks=True, **options)


async def run(face: Face, name: str, *args: Any, **kwargs: Any) -> Any:
    return await face._run(getattr(face.client, name), *args, **kwargs)


@pytest.mark.anyio
async def test_T8_the_task_required_tool_is_listed_with_tasks_on_and_hidden_off(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, _ = server
    with anyio.fail_after(20):
        async with open_client(driver, "jobs", {"url": url}, protocol="modern") as off:
            assert (await off.ready(10)).ok
            assert [t.id for t in off.tools] == ["jobs/echo"]
            with pytest.raises(UnknownTool):
                await off.call("jobs/build", {})
        async with tasks_client(driver, url) as on:
            assert (await on.ready(10)).ok
            assert sorted(t.id for t in on.tools) == ["jobs/build", "jobs/echo"]


@pytest.mark.anyio
async def test_T7_call_follows_a_task_to_its_result_with_status_as_progress(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    seen: list[str | None] = []

    def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    with anyio.fail_after(20):
        async with tasks_client(driver, url) as client:
            assert (await client.ready(10)).ok
            out = await client.call("jobs/build", {"steps": 3, "target": "docs"}, on_progress=progress)
    assert out.text == "built docs"
    assert seen == ["working", "step 1/3", "step 2/3", "step 3/3", "completed"]
    assert state.problems == []


@pytest.mark.anyio
async def test_T7_input_required_goes_to_the_hook_and_back_with_tasks_update(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    asked: list[Any] = []
    hook = hook_for(driver, ElicitResult.accept({"ok": True}), asked)
    with anyio.fail_after(20):
        async with tasks_client(driver, url, elicit=hook) as client:
            assert (await client.ready(10)).ok
            out = await client.call("jobs/build", {"steps": 1, "ask": True})
    assert [q.message for q in asked] == ["Ship it?"] and asked[0].tool_id == "jobs/build"
    assert out.text == 'built all ({"ship": {"action": "accept", "content": {"ok": true}}})'
    assert state.problems == []


@pytest.mark.anyio
async def test_T7_an_abandoned_call_cancels_its_task_on_the_server(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    before = set(state.tasks)
    with anyio.fail_after(20):
        async with tasks_client(driver, url) as client:
            assert (await client.ready(10)).ok

            def started() -> bool:
                return any(state.tasks[t].polls for t in set(state.tasks) - before)

            await client.call_and_cancel("jobs/build", {"steps": 10_000}, started)
            [task_id] = set(state.tasks) - before
            await wait_for(lambda: task_id in state.cancelled, 10)


@pytest.mark.anyio
async def test_T8_start_task_then_a_new_client_resumes_asks_and_cancels(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    with anyio.fail_after(30):
        async with tasks_client(driver, url) as first:
            assert (await first.ready(10)).ok
            handle = await run(first, "start_task", "jobs/build", {"steps": 3, "target": "later"})
            assert isinstance(handle, TaskHandle) and handle.server == "jobs" and handle.tool == "build"
            stored = handle.to_json()
            other = await run(first, "start_task", "jobs/build", {"steps": 10_000})
            direct = await run(first, "start_task", "jobs/echo", {"a": 1})
            assert direct.text == '{"a": 1}'
        # a new client (another process would do the same) picks the task up
        async with tasks_client(driver, url) as second:
            assert (await second.ready(10)).ok
            out = await run(second, "resume_task", TaskHandle.from_json(stored))
            assert out.text == "built later"
            status = await run(second, "task_status", other.task_id)
            assert isinstance(status, TaskStatus) and status.status == "working" and not status.done
            await run(second, "cancel_task", other)
            assert other.task_id in state.cancelled
            assert (await run(second, "task_status", other)).status == "cancelled"
    assert state.problems == []


@pytest.mark.anyio
async def test_T7_a_failed_task_raises_backend_error(driver: str, server: tuple[str, TaskServerState]) -> None:
    url, _ = server
    with anyio.fail_after(20):
        async with tasks_client(driver, url) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(BackendError, match="the build broke"):
                await client.call("jobs/build", {"outcome": "fail"})


@pytest.mark.anyio
async def test_T9_a_server_that_stops_answering_polls_gives_a_transport_error(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, _ = server
    with anyio.fail_after(20):
        async with tasks_client(driver, url, call_timeout=0.3) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(TransportError, match="may still be running") as caught:
                await client.call("jobs/build", {"outcome": "stall"})
            assert "task-" in str(caught.value)
            assert (await client.call("jobs/echo", {"x": 1})).text == '{"x": 1}'


@pytest.mark.anyio
async def test_T9_a_task_never_completed_ends_at_task_timeout(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    from mcpcore import CallTimeout

    with anyio.fail_after(20):
        async with tasks_client(driver, url, task_timeout=0.5) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(CallTimeout, match="task_timeout"):
                await client.call("jobs/build", {"steps": 10_000})
            await wait_for(lambda: len(state.cancelled) > 0 and state.cancelled[-1].startswith("task-"), 5)


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        ("bad-id", "task id is not a usable string"),
        ("bad-status", "status this client does not know"),
        ("other-task", "'task-999'"),
    ],
)
@pytest.mark.anyio
async def test_T7_a_bad_task_answer_fails_that_call_only(
    driver: str, server: tuple[str, TaskServerState], outcome: str, words: str
) -> None:
    url, _ = server
    with anyio.fail_after(20):
        async with tasks_client(driver, url) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(RemoteProtocolError, match=words):
                await client.call("jobs/build", {"outcome": outcome, "interval": 0})
            assert (await client.call("jobs/echo", {"y": 2})).text == '{"y": 2}'


@pytest.mark.anyio
async def test_T8_a_hub_starts_and_resumes_a_task_on_the_server_its_handle_names(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    import json

    import mcpcore_anyio
    import mcpcore_threaded
    from mcpcore import InvalidValue

    url, _ = server
    document = json.dumps({"mcpServers": {"a": {"url": url}, "b": {"url": url + "?b=1"}}})
    with anyio.fail_after(30):
        if driver == "threaded":

            def go() -> Any:
                with mcpcore_threaded.McpHub.from_text(document, protocol="modern", tasks=True) as hub:
                    hub.ready(10)
                    handle = hub.start_task("b/build", {"steps": 1, "target": "hub"})
                    assert isinstance(handle, TaskHandle) and handle.server == "b"
                    with pytest.raises(InvalidValue):
                        hub.resume_task(handle.task_id)  # type: ignore[arg-type]
                    assert hub.task_status(handle).task_id == handle.task_id
                    return hub.resume_task(handle)

            out = await anyio.to_thread.run_sync(go)
        else:
            async with mcpcore_anyio.McpHub.from_text(document, protocol="modern", tasks=True) as hub:
                await hub.ready(10)
                handle = await hub.start_task("b/build", {"steps": 1, "target": "hub"})
                assert isinstance(handle, TaskHandle) and handle.server == "b"
                with pytest.raises(InvalidValue):
                    await hub.resume_task(handle.task_id)  # type: ignore[arg-type]
                assert (await hub.task_status(handle)).task_id == handle.task_id
                out = await hub.resume_task(handle)
    assert out.text == "built hub"


@pytest.mark.anyio
async def test_T7_Q4_a_task_paused_for_the_person_is_resumed_by_a_new_client(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    from mcpcore import Continuation, InputRequired

    url, state = server
    with anyio.fail_after(20):
        async with tasks_client(driver, url) as first:
            assert (await first.ready(10)).ok
            paused = await first.call("jobs/build", {"steps": 1, "ask": True}, on_input="return")
            assert isinstance(paused, InputRequired) and list(paused.questions) == ["ship"]
            stored = paused.continuation.to_json()
        async with tasks_client(driver, url) as second:
            assert (await second.ready(10)).ok
            answer = {"ship": ElicitResult.accept({"ok": False})}
            out = await run(second, "resume", Continuation.from_json(stored), answer)
    assert out.text == 'built all ({"ship": {"action": "accept", "content": {"ok": false}}})'
    assert state.problems == []


@pytest.mark.anyio
async def test_M67_a_listen_stream_broken_after_each_acknowledgement_is_reopened_ever_later(
    driver: str,
) -> None:
    """M67 on a driver: a server that acknowledges subscriptions/listen and ends the
    stream at once, each time, is re-opened after 1 s, then 2 s, not every second."""
    from task_server import task_server

    with task_server() as (url, state):
        state.flaky_listen = True
        async with open_client(driver, "jobs", {"url": url}, protocol="modern", auto_refresh=True) as client:
            assert (await client.ready(10)).ok
            await wait_for(lambda: len(state.listens) >= 3, 15)
            opened = list(state.listens)
    first, second = opened[1] - opened[0], opened[2] - opened[1]
    assert first >= 0.9 and second >= 1.9, (first, second)
