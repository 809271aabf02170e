"""U2: sealed continuations and task handles, in the core and on every driver.

``to_json(key=...)`` adds an HMAC-SHA256 of the canonical form (sorted keys,
compact, UTF-8); ``from_json(text, key=...)`` refuses a text whose seal is
missing or does not match (``SealBroken``, an ``InvalidValue``, naming no
content and no key). A client made with ``seal_key=`` seals every continuation
and task handle it gives out and checks every one it is given back, before
anything is sent. Keys rotate: reading takes several (new first), writing uses
the first.

What a byte flip does (decided here): the seal covers the *parsed* object in
its canonical form, so whitespace between tokens or another key order would
still verify; but the written text is canonical already (no whitespace outside
strings), so every single-byte change of a sealed text either stops it being
JSON, stops it being a continuation, or changes a key, a value or the seal:
each one is refused. The one exception leaves the parsed object as it was: the
case of a hex digit in a ``\\u001f`` escape inside a string, which verifies (the
fuzz harness ``fuzz/fuzz_seal.py`` states the rule so: a change verifies only
when the canonical form is unchanged).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    CallSucceeded,
    Continuation,
    ElicitResult,
    InputRequired,
    InvalidValue,
    McpError,
    SealBroken,
    TaskHandle,
)
from task_server import TaskServerState, task_server
from test_elicitation import outcome
from test_modern import calls, link_to
from test_resume import ASKED, paused_call

KEY = b"host key 2026-12"
OLD = "host key 2026-06"  # text keys are taken as UTF-8
ANSWER = {"which": ElicitResult.accept({"branch": "main"})}


def continuation() -> Continuation:
    return Continuation("e" * 32, "echo", {"name": "echo", "arguments": {"a": 1}}, "state", {"q": {}}, 1)


def test_U2_a_sealed_continuation_and_task_handle_read_back_with_their_key() -> None:
    """``to_json(key=)`` writes a seal that ``from_json(key=)`` accepts; the value is
    the same (the seal is not compared), and the id does not depend on the seal."""
    c = continuation()
    text = c.to_json(key=KEY)
    assert json.loads(text)["seal"] and json.loads(c.to_json()).get("seal") is None
    back = Continuation.from_json(text, key=KEY)
    assert back == c and back.id == c.id and back.seal
    assert back.to_json() == text  # a continuation read back writes its seal again
    handle = TaskHandle("task-1", "jobs", "build", "e" * 32)
    sealed = handle.to_json(key=KEY)
    assert TaskHandle.from_json(sealed, key=KEY) == handle
    assert TaskHandle.from_json(sealed.encode(), key=[KEY]) == handle


def test_U2_rotation_reads_with_the_new_key_or_the_old_one_and_writes_with_the_first() -> None:
    c = continuation()
    old_text = c.to_json(key=OLD)
    new_text = c.to_json(key=[KEY, OLD])
    assert Continuation.from_json(old_text, key=[KEY, OLD]) == c  # kept from before the rotation
    assert Continuation.from_json(new_text, key=KEY) == c  # written with the first key
    with pytest.raises(SealBroken):
        Continuation.from_json(new_text, key=OLD)
    with pytest.raises(SealBroken):  # the old key dropped: what it sealed is refused
        Continuation.from_json(old_text, key=KEY)


@pytest.mark.parametrize("kind", ["continuation", "task handle"])
def test_U2_a_missing_edited_or_foreign_seal_is_refused_naming_no_content(kind: str) -> None:
    """SealBroken for no seal, for an edited field (the arguments, the task id), and
    for a seal made with another key; its message holds no value and no key."""
    if kind == "continuation":
        value: Any = continuation()
        read: Any = Continuation.from_json
        edited = value.to_json(key=KEY).replace('"a":1', '"a":2')
    else:
        value = TaskHandle("task-secret-1", "jobs", "build", "e" * 32)
        read = TaskHandle.from_json
        edited = value.to_json(key=KEY).replace("task-secret-1", "task-secret-2")
    for text in (value.to_json(), edited, value.to_json(key=b"someone else's key")):
        with pytest.raises(SealBroken) as info:
            read(text, key=KEY)
        message = str(info.value)
        assert isinstance(info.value, InvalidValue) and info.value.what == kind
        for secret in ("secret", "echo", '"a"', "build", KEY.decode(), "someone"):
            assert secret not in message
    assert info.value.missing is False
    with pytest.raises(SealBroken) as first:
        read(value.to_json(), key=KEY)
    assert first.value.missing is True


def test_U2_keys_never_show_in_reprs_or_errors() -> None:
    from mcpcore import ClientOptions  # noqa: F401 - the option is documented there
    from mcpcore.config._setup import prepare_client

    setup = prepare_client("s", {"url": "https://example.com/mcp"}, {"seal_key": [KEY, OLD]}, env={}, home="/")
    assert setup.session.seal_keys == (KEY, OLD.encode())
    for shown in (repr(setup), repr(setup.session), repr(continuation().sealed(KEY))):
        assert KEY.decode() not in shown and OLD not in shown and "seal=" not in shown
    for bad in ([], [b""], [KEY, 3], 3):
        with pytest.raises(InvalidValue) as info:
            prepare_client("s", {"url": "https://example.com/mcp"}, {"seal_key": bad}, env={}, home="/")  # type: ignore[typeddict-item]
        assert KEY.decode() not in str(info.value)


_TEXT = st.text(max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    arguments=st.dictionaries(_TEXT, _JSON, max_size=3),
    state=st.none() | _TEXT,
    position=st.integers(min_value=0),
    flip=st.integers(1, 255),
)
def test_U2_every_byte_flip_of_a_sealed_continuation_is_refused(
    arguments: dict[str, Any], state: str | None, position: int, flip: int
) -> None:
    """Any one byte XORed with any non-zero value: the text is refused (SealBroken,
    or InvalidValue when it is no longer JSON or no longer a continuation)."""
    original = Continuation("e" * 32, "echo", {"name": "echo", "arguments": arguments}, state, {}, 2)
    data = bytearray(original.to_json(key=KEY).encode("utf-8"))
    at = position % len(data)
    data[at] ^= flip
    with pytest.raises(InvalidValue):
        Continuation.from_json(bytes(data), key=KEY)


@settings(max_examples=60, deadline=None)
@given(task_id=st.text(min_size=1, max_size=40), position=st.integers(min_value=0), flip=st.integers(1, 255))
def test_U2_every_byte_flip_of_a_sealed_task_handle_is_refused(task_id: str, position: int, flip: int) -> None:
    data = bytearray(TaskHandle(task_id, "jobs", "build", "e" * 32).to_json(key=KEY).encode("utf-8"))
    data[position % len(data)] ^= flip
    with pytest.raises(InvalidValue):
        TaskHandle.from_json(bytes(data), key=KEY)


def test_U2_whitespace_between_tokens_and_key_order_still_verify() -> None:
    """The seal is over the canonical form of what was parsed: a store that pretty-prints
    the JSON (or reorders its keys) gives back a text that still verifies."""
    c = continuation()
    pretty = json.dumps(dict(reversed(list(json.loads(c.to_json(key=KEY)).items()))), indent=2)
    assert Continuation.from_json(pretty, key=KEY) == c


# --- a client with seal_key= (the engine, against a scripted 2026-07-28 server) ------------


def test_U2_a_client_with_seal_key_seals_what_it_gives_out_and_resumes_it() -> None:
    link, _, _, paused = paused_call([ASKED], seal_keys=(KEY,))
    text = paused.continuation.to_json()
    assert Continuation.from_json(text, key=KEY) == paused.continuation
    again = link.engine.resume(Continuation.from_json(text), ANSWER, link.now)
    assert isinstance(outcome(link, again), CallSucceeded)


def test_U2_a_client_with_seal_key_refuses_a_forged_or_unsealed_continuation_and_sends_nothing() -> None:
    link, server, _, paused = paused_call([ASKED], seal_keys=(KEY,))
    sent = len(calls(server))
    edited = paused.continuation.to_json().replace('"a":1', '"a":1000')
    unsealed = Continuation.from_json(paused.continuation.to_json()).sealed(b"not the key")
    for forged in (Continuation.from_json(edited), unsealed, Continuation.from_json(edited).sealed(b"x")):
        with pytest.raises(SealBroken):
            link.engine.resume(forged, ANSWER, link.now)
    plain = Continuation(*[getattr(paused.continuation, f) for f in ("endpoint", "tool", "params", "request_state", "input_requests", "rounds")])
    with pytest.raises(SealBroken):
        link.engine.resume(plain, ANSWER, link.now)
    link.pump()
    assert len(calls(server)) == sent  # nothing was sent for any of them
    # another client with the key rotated (new first, this one after) resumes it
    fresh = link_to(server, seal_keys=(b"newer key", KEY))
    again = fresh.engine.resume(paused.continuation, ANSWER, fresh.now)
    assert isinstance(outcome(fresh, again), CallSucceeded)


# --- on every driver, against the scripted task server -------------------------------------


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


def sealing_client(driver: str, url: str, key: Any = KEY) -> Any:
    return open_client(driver, "jobs", {"url": url}, protocol="modern", tasks=True, seal_key=key)


@pytest.mark.anyio
async def test_U2_task_handles_are_sealed_and_a_forged_one_is_refused_on_every_driver(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    with anyio.fail_after(30):
        async with sealing_client(driver, url) as first:
            assert (await first.ready(10)).ok
            handle = await first._run(first.client.start_task, "jobs/build", {"steps": 2, "target": "sealed"})
            other = await first._run(first.client.start_task, "jobs/build", {"steps": 10_000})
            stored = handle.to_json()
            assert TaskHandle.from_json(stored, key=KEY) == handle
        async with sealing_client(driver, url, [b"rotated", KEY]) as second:
            assert (await second.ready(10)).ok
            forged = TaskHandle.from_json(stored.replace(handle.task_id, other.task_id))
            for bad in (forged, TaskHandle(other.task_id, "jobs", "build", other.endpoint), other.task_id):
                for method in ("resume_task", "task_status", "cancel_task"):
                    with pytest.raises(InvalidValue) as info:
                        await second._run(getattr(second.client, method), bad)
                    assert other.task_id not in str(info.value)
            assert other.task_id not in state.cancelled
            out = await second._run(second.client.resume_task, TaskHandle.from_json(stored))
            assert out.text == "built sealed"
            await second._run(second.client.cancel_task, other)
    assert state.problems == []


@pytest.mark.anyio
async def test_U2_continuations_are_sealed_and_an_edited_one_is_refused_on_every_driver(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    url, state = server
    answer = {"ship": ElicitResult.accept({"ok": True})}
    with anyio.fail_after(30):
        async with sealing_client(driver, url) as first:
            assert (await first.ready(10)).ok
            paused = await first.call("jobs/build", {"steps": 1, "ask": True}, on_input="return")
            assert isinstance(paused, InputRequired)
            stored = paused.continuation.to_json()
        assert json.loads(stored)["seal"]
        async with sealing_client(driver, url) as second:
            assert (await second.ready(10)).ok
            # the answers would go to another task
            task_id = paused.continuation.task_id  # (another task's id: never this one's)
            edited = stored.replace(f'"taskId":"{task_id}"', f'"taskId":"{task_id}-other"')
            assert edited != stored
            for bad in (Continuation.from_json(edited), Continuation.from_json(stored).sealed(b"guess")):
                with pytest.raises(SealBroken):
                    await second._run(second.client.resume, bad, answer)
            with pytest.raises(McpError):
                Continuation.from_json(edited, key=KEY)
            out = await second._run(second.client.resume, Continuation.from_json(stored, key=KEY), answer)
    assert out.text.startswith("built all")
    assert state.problems == []


@pytest.mark.anyio
async def test_U2_a_hub_with_seal_key_seals_its_handles_and_refuses_a_forged_one(
    driver: str, server: tuple[str, TaskServerState]
) -> None:
    """``seal_key=`` given to a hub reaches every client: the handle it gives out is
    sealed, and one moved to another task (resealed with a guessed key) is refused."""
    import mcpcore_anyio
    import mcpcore_threaded

    url, _ = server
    document = json.dumps({"mcpServers": {"a": {"url": url}, "b": {"url": url + "?b=1"}}})
    options: dict[str, Any] = {"protocol": "modern", "tasks": True, "seal_key": KEY}

    def check(handle: TaskHandle) -> TaskHandle:
        assert handle.server == "b" and TaskHandle.from_json(handle.to_json(), key=KEY) == handle
        return TaskHandle.from_json(handle.to_json().replace(handle.task_id, "task-1")).sealed(b"guess")

    with anyio.fail_after(30):
        if driver == "threaded":

            def go() -> Any:
                with mcpcore_threaded.McpHub.from_text(document, **options) as hub:
                    hub.ready(10)
                    handle = hub.start_task("b/build", {"steps": 1, "target": "hub"})
                    with pytest.raises(SealBroken):
                        hub.resume_task(check(handle))
                    return hub.resume_task(handle)

            out = await anyio.to_thread.run_sync(go)
        else:
            async with mcpcore_anyio.McpHub.from_text(document, **options) as hub:
                await hub.ready(10)
                handle = await hub.start_task("b/build", {"steps": 1, "target": "hub"})
                with pytest.raises(SealBroken):
                    await hub.resume_task(check(handle))
                out = await hub.resume_task(handle)
    assert out.text == "built hub"
