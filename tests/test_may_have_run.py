"""U3: a ``tools/call`` that was sent whole and got no answer raises ``MayHaveRun``.

The demo server stands behind ``raw_servers.FaultFront``, which passes every
request on but faults the ``tools/call`` ones, at the byte level:

- sent whole, no answer (each must raise ``MayHaveRun``, a ``TransportError``,
  with the tool id and the request id, saying the server may have run it):
  ``drop_after_read`` (the whole request read, then closed), ``reset_after_read``
  (read, then reset), ``cut_after_head`` (the server's answer cut after its head:
  E3's stream that breaks before its response);
- provably never reached the server (each keeps its present error, never
  ``MayHaveRun``): the connection refused, ``reset_on_head`` (reset after the
  head: a 4 MB body cannot all go out), ``status_before_body`` (a 400 answered
  before the body was read).

Both eras, on asyncio, trio and the threaded driver: the core decides from the
exchange's events (the drivers report ``request_sent`` once a request went out
whole), so every driver raises the same for the same fault. A host's
idempotency key in ``meta=`` reaches the server unchanged; the client invents
none when the host calls again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, Face, backend_of, open_client
from fake_peer import FakeServer, Reply, connect
from mcpcore import CallFailed, CallTimeout, MayHaveRun, TransportError
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.features._resources import RESOURCES_READ, read_params
from mcpcore.wire._requests import Ask
from mcpcore_demo import DemoServer
from raw_servers import FaultFront, mark_calls
from task_server import task_server

pytestmark = pytest.mark.anyio

SENT_NO_ANSWER = ("drop_after_read", "reset_after_read", "cut_after_head")
NEVER_REACHED = ("refused", "reset_on_head", "status_before_body")
BIG = "x" * (4 * 1024 * 1024)  # more than any socket buffer holds: it cannot all go out


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(params=["legacy", "modern"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


@pytest.fixture(scope="module")
def demo() -> Iterator[tuple[DemoServer, int]]:
    """The handshake-era server (the demo records what it receives)."""
    server = DemoServer(max_body_size=16 * 1024 * 1024)
    with server.serve_in_thread() as running:
        yield server, _port(running.url)


@pytest.fixture(scope="module")
def modern() -> Iterator[int]:
    """A 2026-07-28 server (scripted, JSON answers) with an ``echo`` tool."""
    with task_server() as (url, _):
        yield _port(url)


@pytest.fixture
def target(protocol: str, demo: tuple[DemoServer, int], modern: int) -> int:
    return demo[1] if protocol == "legacy" else modern


@contextlib.asynccontextmanager
async def front_client(driver: str, port: int, mode: str | None, protocol: str) -> AsyncIterator[tuple[Face, FaultFront]]:
    front = FaultFront(port, None if mode == "refused" else mode)
    try:
        async with open_client(
            driver, "front", {"url": f"http://127.0.0.1:{front.port}/mcp"},
            protocol=protocol, listen=False, headers=mark_calls, call_timeout=20,
        ) as client:
            assert (await client.ready(15)).ok
            if mode == "refused":
                front.refuse()
            yield client, front
    finally:
        front.close()


async def failed_call(client: Face, arguments: dict[str, Any], **kw: Any) -> BaseException:
    with pytest.raises(TransportError) as info:
        await client.call("front/echo", arguments, **kw)
    return info.value


# --- the core's decision, from the exchange's events (sans-IO) ----------------------------


def _failed_call(*, sent: bool, status: int | None = None, failure: FailureKind = FailureKind.RESET, method: str = "tools/call") -> Any:
    """A call (or a read) through the engine whose exchange fails: after ``request_sent``
    when ``sent``, after a ``status`` when given; its CallFailed error."""
    from test_http_mapping import on, outcome

    server = FakeServer()
    server.hook = on(method, Reply(finish="before-headers"))
    link = connect(server)
    if method == "tools/call":
        cid = link.engine.call("srv/echo", {"text": "x"}, link.now)
    else:
        cid = link.engine.request(Ask(RESOURCES_READ, read_params("a://b"), "x"), link.now)
    link.pump()
    xid = link.requests[-1].exchange_id
    if sent:
        link.engine.request_sent(xid, link.now)
    if status is not None:
        link.engine.response_started(xid, status, [(b"content-type", b"text/event-stream")], link.now)
    link.engine.response_failed(xid, TransportFailure(failure), link.now)
    event = outcome(link, cid)
    assert isinstance(event, CallFailed), event
    return event.error


def test_U3_the_core_decides_from_request_sent_and_a_begun_answer() -> None:
    """A tools/call whose exchange reported request_sent, or began a success answer,
    and then broke: MayHaveRun naming the tool and the request id, the transport's
    words first. Reported neither: the plain TransportError, its words unchanged."""
    plain = _failed_call(sent=False)
    assert type(plain) is TransportError
    assert str(plain) == "the connection was closed or reset before the response arrived"
    for error in (_failed_call(sent=True), _failed_call(sent=False, status=200)):
        assert isinstance(error, MayHaveRun) and error.tool == "srv/echo"
        assert str(error).startswith(str(plain) + "; the server may have run tool 'srv/echo' (request id ")
    refused = _failed_call(sent=False, failure=FailureKind.REFUSED)
    assert type(refused) is TransportError and "refused" in str(refused)


def test_U3_only_a_tools_call_may_have_run() -> None:
    """A read that broke after going out whole is not a call: its error is unchanged."""
    error = _failed_call(sent=True, method="resources/read")
    assert not isinstance(error, MayHaveRun)


@pytest.mark.parametrize("mode", SENT_NO_ANSWER)
async def test_U3_E3_a_call_sent_whole_without_an_answer_may_have_run(
    driver: str, protocol: str, mode: str, target: int
) -> None:
    """Each "sent, no answer" fault raises MayHaveRun (a TransportError) with the tool id
    and the request id, its words the transport's reason and then "may have run"."""
    with anyio.fail_after(30):
        async with front_client(driver, target, mode, protocol) as (client, front):
            error = await failed_call(client, {"text": "pay 10"})
    assert front.faulted == 1
    assert isinstance(error, MayHaveRun) and not isinstance(error, CallTimeout), repr(error)
    assert error.tool == "front/echo" and isinstance(error.request_id, int)
    message = str(error)
    assert "the server may have run tool 'front/echo'" in message
    assert f"request id {error.request_id}" in message
    assert "before the response arrived" in message  # E3's words, kept before U3's


@pytest.mark.parametrize("mode", NEVER_REACHED)
async def test_U3_a_call_that_never_reached_the_server_keeps_its_error(
    driver: str, protocol: str, mode: str, target: int
) -> None:
    """A refused connect, a request reset while its body was still going out, and a 400
    answered before the body: a plain TransportError, as before U3."""
    arguments = {"text": BIG if mode == "reset_on_head" else "pay 10"}
    with anyio.fail_after(30):
        async with front_client(driver, target, mode, protocol) as (client, front):
            error = await failed_call(client, arguments)
    assert not isinstance(error, MayHaveRun), repr(error)
    assert "may have run" not in str(error)
    if mode == "status_before_body":
        assert error.status == 400 and front.faulted == 1  # type: ignore[attr-defined]
    elif mode == "refused":
        assert "refused" in str(error)
    else:
        assert front.faulted == 1


async def test_U3_an_idempotency_key_in_meta_passes_unchanged_and_none_is_invented(
    driver: str, demo: tuple[DemoServer, int]
) -> None:
    """The host's key in meta= reaches the server as given, on the call that may have
    run and on the host's own retry; a call without one carries none (the client never
    makes one up)."""
    server, port = demo
    before = len(server.received)
    key = {"io.example/idempotency-key": "pay-7f3a"}
    with anyio.fail_after(30):
        async with front_client(driver, port, "drop_after_read", "legacy") as (client, front):
            error = await failed_call(client, {"text": "pay 10"}, meta=key)
            assert isinstance(error, MayHaveRun)
            [body] = front.dropped  # what the server read of the call that may have run
            assert json.loads(body)["params"]["_meta"]["io.example/idempotency-key"] == "pay-7f3a"
            front.mode = None  # the host retries, with the same key, once the fault is gone
            out = await client.call("front/echo", {"text": "pay 10"}, meta=key)
            assert "pay 10" in out.text
            await client.call("front/echo", {"text": "no key"})
    calls = [r.json for r in server.received[before:] if isinstance(r.json, dict) and r.json.get("method") == "tools/call"]
    retried = [c for c in calls if c["params"]["arguments"]["text"] == "pay 10"]
    plain = [c for c in calls if c["params"]["arguments"]["text"] == "no key"]
    assert len(retried) == 1 and len(plain) == 1  # the host's retry; the client sent nothing again
    assert retried[0]["params"]["_meta"]["io.example/idempotency-key"] == "pay-7f3a"
    assert not [k for k in plain[0]["params"].get("_meta", {}) if "idempot" in k.lower()]


# --- the command line ----------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True])
def test_U3_the_cli_says_may_have_run_with_status_3_and_kind_may_have_run(
    as_json: bool, demo: tuple[DemoServer, int]
) -> None:
    """``mcpcore call`` on a call sent whole and not answered: exit status 3 (as every
    transport error), the message says the server may have run it; ``--json`` names
    the error kind ``may_have_run``."""
    from test_cli import run

    front = FaultFront(demo[1], "drop_after_read")
    try:
        url = f"http://127.0.0.1:{front.port}/mcp"
        result = run("call", url, "echo", '{"text": "pay 10"}', "--timeout", "20", *(["--json"] if as_json else []))
    finally:
        front.close()
    assert result.returncode == 3 and front.faulted == 1, result.stderr
    if as_json:
        payload = json.loads(result.stdout)
        assert payload["exit_status"] == 3 and payload["error"]["kind"] == "may_have_run"
        assert "may have run" in payload["error"]["message"]
    else:
        assert "may have run" in result.stderr
