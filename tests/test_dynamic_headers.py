"""V3: dynamic headers. ``headers=`` may be a callable ``(method, server)`` called for each
request; what it returns passes the checks of configured headers (C5); its values are
secrets (C8); a callable that raises or returns junk fails that request alone, with a
reason that names no value.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import InvalidValue, TransportFailure, prepare_client
from mcpcore.wire._http import HttpMapping, RequestFailed
from mcpcore.wire._jsonrpc import Notification, Request
from mcpcore_demo import DemoServer
from peers import modern_sdk_server, sdk_server

pytestmark = pytest.mark.anyio

TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="nobody")


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


class _Headers:
    """A headers callable that records what it was asked and answers per tenant."""

    def __init__(self, fail_for: str | None = None, answer: Any = None) -> None:
        self.asked: list[tuple[str | None, str]] = []
        self.fail_for = fail_for
        self.answer = answer

    def __call__(self, method: str | None, server: str) -> Mapping[str, str]:
        self.asked.append((method, server))
        if method == self.fail_for:
            if self.answer is not None:
                return self.answer  # type: ignore[no-any-return]
            raise RuntimeError("token-for-acme-s3cr3t")
        return {"X-Tenant": TENANT.get(), "Authorization": f"Bearer tok-{TENANT.get()}"}


def _received(server: DemoServer, method: str) -> list[Mapping[str, str]]:
    return [r.headers for r in server.received if r.rpc_method == method]


async def test_V3_each_request_gets_the_callables_headers_in_the_callers_context(
    driver: str,
) -> None:
    source = _Headers()
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, headers=source) as client:
            assert (await client.ready(10)).ok
            token = TENANT.set("acme")
            try:
                await client.call("demo/echo", {"text": "a"})
            finally:
                TENANT.reset(token)
            token = TENANT.set("globex")
            try:
                await client.call("demo/echo", {"text": "b"})
            finally:
                TENANT.reset(token)
            first, second = _received(running.server, "tools/call")
            assert first["x-tenant"] == "acme" and first["authorization"] == "Bearer tok-acme"
            assert second["x-tenant"] == "globex"
            # the client's own requests get them too
            (initialize,) = _received(running.server, "initialize")
            assert initialize["x-tenant"] == "nobody"
    assert ("tools/call", "demo") in source.asked
    assert ("initialize", "demo") in source.asked
    assert ("notifications/initialized", "demo") in source.asked


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "the headers callable raised RuntimeError"),
        ({"X-Key": "token-for-acme-s3cr3t\r\n"}, "header 'X-Key' value contains a line break"),
        ({"X-Key": " token-for-acme-s3cr3t"}, "header 'X-Key' value begins or ends"),
        ({"Mcp-Session-Id": "token-for-acme-s3cr3t"}, "is set by the client"),
        (["token-for-acme-s3cr3t"], "a value of type list, not a mapping"),
    ],
)
async def test_V3_a_callable_that_raises_or_gives_junk_fails_that_request_alone(
    driver: str, answer: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpcore")
    source = _Headers(fail_for="tools/call", answer=answer)
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, headers=source) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(InvalidValue) as refused:
                await client.call("demo/echo", {"text": "a"})
            assert reason in str(refused.value)
            assert "s3cr3t" not in str(refused.value) + repr(refused.value)
            assert _received(running.server, "tools/call") == []  # nothing was sent
            source.fail_for = None
            assert (await client.call("demo/echo", {"text": "after"})).text == "after"
    assert "s3cr3t" not in caplog.text


@pytest.mark.realpeer
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_V3_the_sdk_server_is_called_with_dynamic_headers(driver: str, era: str) -> None:
    source = _Headers()
    peer_of = sdk_server("stateful-sse") if era == "legacy" else modern_sdk_server()
    with peer_of as peer:
        async with open_client(
            driver, "sdk", {"url": peer.url}, headers=source, protocol=era
        ) as client:
            assert (await client.ready(20)).ok
            assert (await client.call("sdk/echo", {"text": "x"})).text == "x"
            source.fail_for = "tools/call"
            with pytest.raises(InvalidValue, match="raised RuntimeError"):
                await client.call("sdk/echo", {"text": "y"})
            source.fail_for = None
            assert (await client.call("sdk/echo", {"text": "z"})).text == "z"
    assert ("tools/call", "sdk") in source.asked


def test_V3_the_option_is_a_callable_or_one_per_hub_entry() -> None:
    def mine(method: str | None, server: str) -> Mapping[str, str]:
        return {}

    entry = {"url": "http://127.0.0.1:1/mcp"}
    assert prepare_client("a", entry, {"headers": mine}, env={}, home="/").headers is mine
    per_entry = {"headers": {"a": mine}}
    assert prepare_client("a", entry, per_entry, env={}, home="/").headers is mine  # type: ignore[arg-type]
    assert prepare_client("b", entry, per_entry, env={}, home="/").headers is None  # type: ignore[arg-type]
    with pytest.raises(InvalidValue, match="must be a callable"):
        prepare_client("a", entry, {"headers": {"X-Key": "v"}}, env={}, home="/")  # type: ignore[typeddict-item]
    with pytest.raises(InvalidValue, match="must be a callable"):
        prepare_client("a", entry, {"headers": "X-Key: v"}, env={}, home="/")  # type: ignore[typeddict-item]
    # a callable may carry its secret (a partial): the setup's repr never shows it
    bound = functools.partial(lambda secret, m, s: {"X-Key": secret}, "token-s3cr3t")
    setup = prepare_client("a", entry, {"headers": bound}, env={}, home="/")
    assert "s3cr3t" not in repr(setup)


# --- the redaction property, on the mapping itself (no I/O) ----------------------------

SECRET = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=8, max_size=40
)


@st.composite
def _junk(draw: st.DrawFn, secret: str) -> tuple[str, object]:
    """A way a callable can fail, each holding ``secret``."""
    how = draw(st.sampled_from(["raises", "crlf", "edge", "nul", "owned", "not-a-map", "bad-name"]))
    answers: dict[str, object] = {
        "raises": None,
        "crlf": {"X-Key": secret + "\r\nX-Evil: 1"},
        "edge": {"X-Key": secret + " "},
        "nul": {"X-Key": secret + "\x00"},
        "owned": {draw(st.sampled_from(["Accept", "content-type", "MCP-SESSION-ID"])): secret},
        "not-a-map": [secret],
        "bad-name": {"X Key": secret},  # names may be shown (C8); values never
    }
    return how, answers[how]


#: What the client shows of its own in this test, whatever the secret.
_CLIENT_WORDS = (
    "https://example.com/mcp answered HTTP 500: bad token [redacted]",
    "the headers callable's result: header 'X-Key' tools/call tools/list demo",
    # the repr of the request sent (hypothesis once drew 'HttpRequ')
    "HttpRequest(exchange_id=1, method='POST', headers=[accept, X-Key, content-type], body=46 bytes)",
)


#: A secret no word of the client's holds: the run that says which words are the client's.
_CANARY = "Zq9CANARYvalue7Xw"


def _swapped(answer: object, secret: str, other: str) -> object:
    """``answer`` with ``secret`` written as ``other`` (in keys and values)."""
    if isinstance(answer, str):
        return answer.replace(secret, other)
    if isinstance(answer, list):
        return [_swapped(item, secret, other) for item in answer]
    if isinstance(answer, dict):
        return {_swapped(k, secret, other): _swapped(v, secret, other) for k, v in answer.items()}
    return answer


def _shown(how: str, answer: object, secret: str) -> list[str]:
    """Every error, repr and log record one run of the mapping shows, the callable
    failing ``how`` with ``answer`` for a call and giving ``secret`` otherwise."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep(logging.DEBUG)
    logger = logging.getLogger("mcpcore")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:

        def source(method: str | None, server: str) -> object:
            if method == "tools/call":
                if how == "raises":
                    raise RuntimeError(secret)
                return answer
            return {"X-Key": secret}  # a good value, for everything else

        mapping = HttpMapping("https://example.com/mcp", name="demo", dynamic_headers=source)  # type: ignore[arg-type]
        mapping.send(Request(id=1, method="tools/call", params={"name": "t"}), 0.0)
        (failed,) = mapping.take_upward()
        assert isinstance(failed, RequestFailed) and isinstance(failed.error, InvalidValue)
        shown = [str(failed.error), repr(failed.error), repr(mapping.take_actions())]
        # a notice is dropped, not sent, with a warning that names no value
        mapping.send(Notification(method="tools/call"), 0.0)
        assert mapping.take_actions() == []
        # a good value reaches the request, and an error body echoing it is cut
        mapping.send(Request(id=2, method="tools/list"), 0.0)
        (sent,) = mapping.take_actions()
        assert (b"x-key", secret.encode()) in [(k.lower(), v) for k, v in sent.headers]
        shown.append(repr(sent))
        mapping.response_started(sent.exchange_id, 500, [(b"content-type", b"text/plain")], 0.1)
        mapping.response_data(sent.exchange_id, f"bad token {secret}".encode(), 0.1)
        mapping.response_ended(sent.exchange_id, 0.1)
        (lost,) = mapping.take_upward()
        assert isinstance(lost, RequestFailed)
        shown.append(str(lost.error))
        mapping.response_failed(99, TransportFailure.from_exception(OSError(secret)), 0.2)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return [*shown, *records]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), secret=SECRET)
def test_V3_no_value_of_a_headers_callable_ever_shows(data: st.DataObject, secret: str) -> None:
    """For every secret and every way to fail: no error, repr or log record holds it;
    a good value the server echoes in an error body is cut out of the reason."""
    # A secret that is part of the client's own words (the URL, the wording of a
    # reason, a request's repr, a log record) cannot be told apart from them: such a
    # draw says nothing. Hypothesis draws words from the code's own text ('https://',
    # 'HttpRequ', 'notifica' so far), so the words are those the same run shows with
    # a secret that cannot be among them.
    assume(not any(secret in words for words in _CLIENT_WORDS))
    how, answer = data.draw(_junk(secret))
    own = _shown(how, _swapped(answer, secret, _CANARY), _CANARY)
    assume(not any(secret in text for text in own))
    for text in _shown(how, answer, secret):
        assert secret not in text, (how, text)


async def test_V3_a_hub_gives_each_entry_its_own_callable(driver: str) -> None:
    import json as _json

    import anyio

    import mcpcore_anyio
    import mcpcore_threaded

    first, second = _Headers(), _Headers()
    with DemoServer().serve_in_thread() as running:
        text = _json.dumps(
            {"mcpServers": {"one": {"url": running.url}, "two": {"url": running.url}}}
        )
        options: dict[str, Any] = {"headers": {"one": first}, "tracing": False}
        if driver == "threaded":

            def blocking() -> None:
                with mcpcore_threaded.McpHub.from_text(text, **options) as hub:
                    assert all(a.ok for a in hub.ready(10).values())
                    hub.call("one/echo", {"text": "1"})
                    hub.call("two/echo", {"text": "2"})

            await anyio.to_thread.run_sync(blocking)
        else:
            async with mcpcore_anyio.McpHub.from_text(text, **options) as hub:
                assert all(a.ok for a in (await hub.ready(10)).values())
                await hub.call("one/echo", {"text": "1"})
                await hub.call("two/echo", {"text": "2"})
        calls = _received(running.server, "tools/call")
    assert [h.get("x-tenant") for h in calls] == ["nobody", None]
    assert {server for _, server in first.asked} == {"one"}
    assert second.asked == []


async def test_V3_a_call_sent_again_elsewhere_still_runs_the_callable_in_its_callers_context(
    driver: str,
) -> None:
    """H6 re-sends the call after a new session is set up, from wherever the new
    session's answer arrived (a worker thread on the threaded driver): the callable
    still sees the caller's context, so the call keeps its tenant's headers."""
    source = _Headers()
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, headers=source) as client:
            assert (await client.ready(10)).ok
            running.server.expire_sessions()
            token = TENANT.set("acme")
            try:
                assert (await client.call("demo/echo", {"text": "again"})).text == "again"
            finally:
                TENANT.reset(token)
            sent = _received(running.server, "tools/call")
    assert len(sent) == 2  # refused with the expired session, then sent again
    assert [h["x-tenant"] for h in sent] == ["acme", "acme"]
