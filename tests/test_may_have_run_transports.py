"""U3 beyond the drivers' own HTTP connections: a local server over stdio, httpcore's
proxy pools and the in-process ASGI app. A ``tools/call`` whose request went out whole
and got no answer raises ``MayHaveRun``; one that never reached the server keeps its
plain ``TransportError``. Each transport only reports facts; the core decides:

- stdio: the engine numbers each write that carries a request (``WriteInput.seq``) and
  the driver reports it once it is all in the child's stdin (``input_written``); a child
  lost after that fails the call with ``MayHaveRun``. A child that read the call and
  exited unanswered: ``MayHaveRun``; one that could not be written to (its stdin closed,
  or it could not start): the plain error. A framing-only engine counts what the host
  took with ``data_to_send`` as written.
- proxies: httpcore's proxy pools run on the drivers' own network streams; a request
  the proxy took whole and then dropped: ``MayHaveRun``; a proxy that refuses the
  connection, or a CONNECT tunnel that breaks before the request went in: the plain
  error.
- ASGI (the anyio driver only): an app that received the whole body, then raised or
  returned without a response: ``MayHaveRun``; one that failed before receiving it:
  the plain error.

On asyncio, trio and the threaded driver where the transport exists.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpcore_anyio
from drivers import DRIVERS, Face, backend_of, open_client
from mcpcore import (
    CallFailed,
    FailureKind,
    MayHaveRun,
    Result,
    StdioClientEngine,
    TransportError,
    TransportFailure,
    decode_message,
    encode_message,
)
from mcpcore.base._events import StartProcess, WriteInput
from mcpcore_demo import DemoServer
from raw_servers import FaultFront, mark_calls, socket_server
from test_proxy import LoopbackProxy
from test_stdio_actions import INIT, NOW, TOOLS, engine, line, ready, written

pytestmark = pytest.mark.anyio

DROPPING = Path(__file__).parent / "servers" / "dropping_stdio.py"
TIMEOUT = 30.0  # every test's bound


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def _lost(e: StdioClientEngine, process: int, now: float = NOW) -> None:
    e.process_exited(0, now, process=process)
    e.stderr_closed(now, process=process)
    e.output_closed(now, process=process)


def _failure(e: StdioClientEngine, call_id: int) -> BaseException:
    [failed] = [ev for ev in e.take_events() if isinstance(ev, CallFailed) and ev.call_id == call_id]
    return failed.error


# --- stdio, the core's rule (sans-IO) ----------------------------------------------------------


def test_U3_stdio_a_call_reported_written_then_the_child_lost_may_have_run() -> None:
    """The engine numbers the write of a request; reported written, a child lost after it
    fails the call with MayHaveRun (the tool id, the request id, "may have run" after the
    loss's own words). Notices and answers are not numbered: nothing to report."""
    e = engine()
    e.start(NOW)
    ready(e)
    call_id = e.call("loc/echo", {"text": "pay 10"}, NOW)
    [write] = [a for a in e.take_actions() if isinstance(a, WriteInput)]
    [message] = written([write])
    assert write.seq > 0 and message.method == "tools/call"
    e.input_written(write.seq, NOW, process=1)
    _lost(e, 1)
    error = _failure(e, call_id)
    assert isinstance(error, MayHaveRun) and error.tool == "loc/echo" and error.request_id == message.id
    assert str(error).startswith("the server process closed its output; the server may have run tool 'loc/echo'")
    assert f"request id {message.id}" in str(error)


def test_U3_stdio_a_call_never_reported_written_keeps_its_error() -> None:
    """A write the driver did not report (the pipe was broken: nothing reached the child):
    the plain TransportError, as before U3. A report for a child already lost, or a
    write number it never had, changes nothing."""
    e = engine()
    e.start(NOW)
    ready(e)
    call_id = e.call("loc/echo", {}, NOW)
    [write] = [a for a in e.take_actions() if isinstance(a, WriteInput)]
    e.input_written(write.seq + 100, NOW, process=1)
    _lost(e, 1)
    error = _failure(e, call_id)
    assert type(error) is TransportError and "may have run" not in str(error)
    e.input_written(write.seq, NOW, process=1)  # late, for the child that is gone
    assert e.take_events() == []


def test_U3_stdio_what_the_engine_keeps_of_written_calls_stays_bounded() -> None:
    """Hundreds of calls written and answered on one child: the engine forgets the
    answered ones as it goes; the one still running when the child dies may have run."""
    e = engine()
    e.start(NOW)
    ready(e)
    for _ in range(300):
        e.call("loc/echo", {}, NOW)
        [write] = [a for a in e.take_actions() if isinstance(a, WriteInput)]
        e.input_written(write.seq, NOW, process=1)
        [message] = written([write])
        e.receive_data(line(Result(id=message.id, result={"content": []})), NOW, process=1)
    assert len(e._written) <= 65  # not one per call ever made
    running = e.call("loc/echo", {}, NOW)
    [write] = [a for a in e.take_actions() if isinstance(a, WriteInput)]
    e.input_written(write.seq, NOW, process=1)
    e.take_events()
    _lost(e, 1)
    assert isinstance(_failure(e, running), MayHaveRun)


def test_U3_stdio_a_call_for_a_child_that_could_not_start_keeps_its_error() -> None:
    """The child died while idle; a new one is started for the next session and cannot
    start: the call waiting for it was never written, its error is the plain one."""
    e = engine()
    e.start(NOW)
    ready(e)
    _lost(e, 1)
    assert any(isinstance(a, StartProcess) and a.process == 2 for a in e.take_actions())
    call_id = e.call("loc/echo", {}, NOW + 0.1)
    assert written(e.take_actions()) == []  # parked for the new session
    e.process_failed(TransportFailure(FailureKind.NOT_FOUND, missing="srv"), NOW + 0.2, process=2)
    error = _failure(e, call_id)
    assert not isinstance(error, MayHaveRun) and isinstance(error, TransportError)
    assert "could not start the server" in str(error)


def test_U3_stdio_framing_only_counts_what_the_host_took_as_written() -> None:
    """Without a server the host moves the bytes: a call it took with data_to_send may
    have run when the transport breaks; one still in the engine was never sent."""
    e = StdioClientEngine()
    e.start(NOW)
    init = decode_message(e.data_to_send().rstrip(b"\n"))
    e.receive_data(encode_message(Result(id=init.id, result=INIT)) + b"\n", NOW)
    listing = [decode_message(raw) for raw in e.data_to_send().splitlines()][-1]
    e.receive_data(line(Result(id=listing.id, result={"tools": TOOLS})), NOW)
    e.take_events()
    taken = e.call("server/echo", {}, NOW)
    e.data_to_send()
    kept = e.call("server/echo", {}, NOW)  # not taken by the host yet
    e.connection_lost("the host's pipe broke", NOW)
    events = {ev.call_id: ev.error for ev in e.take_events() if isinstance(ev, CallFailed)}
    assert isinstance(events[taken], MayHaveRun) and events[taken].tool == "server/echo"
    assert type(events[kept]) is TransportError


# --- stdio, real children on every driver ------------------------------------------------------


def _dropping(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(DROPPING), *args]}


async def _stdio_call(driver: str, *args: str) -> BaseException:
    async with open_client(driver, "drop", _dropping(*args), allow_local=True, call_timeout=20) as client:
        with anyio.fail_after(TIMEOUT):
            availability = await client.ready(15)
            assert availability.ok, availability.reason
            with pytest.raises(TransportError) as info:
                await client.call("drop/echo", {"text": "pay 10"})
    return info.value


async def test_U3_stdio_a_child_that_read_the_call_and_exited_may_have_run(driver: str) -> None:
    """The call's line was written whole; the child read it and exited unanswered."""
    error = await _stdio_call(driver, "drop")
    assert isinstance(error, MayHaveRun), repr(error)
    assert error.tool == "drop/echo" and isinstance(error.request_id, int)
    assert "the server may have run tool 'drop/echo'" in str(error)
    assert f"request id {error.request_id}" in str(error)


async def test_U3_stdio_a_child_that_could_not_be_written_to_keeps_its_error(
    driver: str, tmp_path: Path
) -> None:
    """The child closed its stdin and exited: the call's write fails with a broken pipe,
    or the call waits for the next child, which closes its stdin at once: never
    MayHaveRun."""
    error = await _stdio_call(driver, "deaf", str(tmp_path / "deaf-once"))
    assert not isinstance(error, MayHaveRun), repr(error)
    assert "may have run" not in str(error)


def test_U3_the_cli_says_may_have_run_for_a_local_server(tmp_path: Path) -> None:
    """``mcpcore call --json`` on a local server that dropped the call: status 3, kind
    ``may_have_run``."""
    from test_cli import run, write_config

    config = write_config(tmp_path, {"drop": _dropping("drop")})
    result = run("call", "--config", config, "--allow-local", "drop/echo", '{"text": "x"}', "--json")
    assert result.returncode == 3, result.stderr
    payload = json.loads(result.stdout)
    assert payload["error"]["kind"] == "may_have_run" and "may have run" in payload["error"]["message"]


# --- through a proxy ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_port() -> Iterator[int]:
    with DemoServer().serve_in_thread() as running:
        yield int(running.url.split(":")[2].split("/")[0])


@contextlib.asynccontextmanager
async def proxied_client(driver: str, port: int, mode: str | None) -> AsyncIterator[tuple[Face, LoopbackProxy]]:
    """A client whose requests go through a loopback proxy to a ``FaultFront`` of the
    demo server (``mode`` for its calls: "drop_after_read"; "refused": the proxy stops
    listening once the client is ready)."""
    front = FaultFront(port, None if mode == "refused" else mode)
    proxy = LoopbackProxy()
    try:
        async with open_client(
            driver, "front", {"url": f"http://127.0.0.1:{front.port}/mcp"}, proxy=proxy.url,
            protocol="legacy", listen=False, headers=mark_calls, call_timeout=20,
        ) as client:
            assert (await client.ready(15)).ok
            if mode == "refused":
                with contextlib.suppress(OSError):
                    proxy.listener.shutdown(socket.SHUT_RDWR)  # stops listening, wakes accept()
                proxy.listener.close()
            yield client, proxy
    finally:
        proxy.close()
        front.close()


async def test_U3_a_call_the_proxy_took_whole_and_dropped_may_have_run(driver: str, demo_port: int) -> None:
    """Forwarded through the proxy and read whole by the server's front, then closed
    without an answer: MayHaveRun, on every driver."""
    with anyio.fail_after(TIMEOUT):
        async with proxied_client(driver, demo_port, "drop_after_read") as (client, proxy):
            with pytest.raises(MayHaveRun) as info:
                await client.call("front/echo", {"text": "pay 10"})
    assert info.value.tool == "front/echo"
    assert any(seen.startswith("POST ") for seen in proxy.seen)


async def test_U3_a_proxy_that_refuses_the_connection_keeps_its_error(driver: str, demo_port: int) -> None:
    """The proxy stopped listening: the call never went out, its error is the plain one."""
    with anyio.fail_after(TIMEOUT):
        async with proxied_client(driver, demo_port, "refused") as (client, _):
            with pytest.raises(TransportError) as info:
                await client.call("front/echo", {"text": "pay 10"})
    assert not isinstance(info.value, MayHaveRun), repr(info.value)
    assert "refused" in str(info.value)


async def test_U3_a_tunnel_that_breaks_before_the_request_went_in_is_not_sent(driver: str) -> None:
    """https through a CONNECT tunnel: the proxy answers the CONNECT (a request and an
    answer on the pool's stream) and the TLS handshake then fails. The call's own bytes
    never went: the pool does not mark it sent (the CONNECT's exchange is not the
    request's)."""
    import httpcore

    from mcpcore_httpcore import was_sent

    # behind the CONNECT, a port that closes each connection at once: the handshake meets EOF
    with socket_server(lambda conn: None) as (target_port, _):
        proxy = LoopbackProxy()
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'
        request = httpcore.Request(
            "POST", f"https://127.0.0.1:{target_port}/mcp", headers=[(b"content-type", b"application/json")], content=body
        )
        try:
            with anyio.fail_after(TIMEOUT), pytest.raises(httpcore.ConnectError):
                if driver == "threaded":
                    from mcpcore_threaded._client import _Performing
                    from mcpcore_threaded._network import connection_pool

                    def perform() -> None:
                        with connection_pool(None, 2, _Performing(), proxy=proxy.url) as sync_pool:
                            sync_pool.handle_request(request)

                    await anyio.to_thread.run_sync(perform)
                else:
                    from mcpcore_anyio._network import connection_pool as async_pool

                    async with async_pool(None, 2, proxy=proxy.url) as pooled:
                        await pooled.handle_async_request(request)
        finally:
            proxy.close()
        assert proxy.seen == [f"CONNECT 127.0.0.1:{target_port}"]
    assert not was_sent(request)


# --- in process (ASGI: the anyio driver) -------------------------------------------------------


def _faulting_app(fault: str) -> Any:
    """A small MCP server as an ASGI app (JSON answers, the handshake era) whose
    ``tools/call`` meets ``fault``: "raise" or "return" after receiving the whole body,
    "raise_first" before receiving any of it."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return  # no lifespan
        if (b"x-fault-call", b"1") in scope["headers"] and fault == "raise_first":
            raise RuntimeError("the app failed before reading the call")
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        request = json.loads(body) if body else {}
        method, rid = request.get("method"), request.get("id")
        if method == "tools/call":
            if fault == "raise":
                raise RuntimeError("the app failed after reading the call")
            return  # "return": no response at all
        if rid is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "asgi", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        else:
            result = {}
        payload = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("fault", ["raise", "return", "raise_first"])
async def test_U3_an_app_that_failed_after_receiving_the_call_may_have_run(anyio_backend: str, fault: str) -> None:
    """Received whole, then the app raised or returned without a response: MayHaveRun.
    Raised before receiving the body: the plain error, as before U3."""
    async with mcpcore_anyio.McpClient(
        "asgi", {"url": "http://127.0.0.1:8000/mcp"}, asgi_app=_faulting_app(fault),
        protocol="legacy", listen=False, headers=mark_calls, call_timeout=20,
    ) as client:
        with anyio.fail_after(TIMEOUT):
            availability = await client.ready(15)
            assert availability.ok, availability.reason
            with pytest.raises(TransportError) as info:
                await client.call("asgi/echo", {"text": "pay 10"})
    error = info.value
    if fault == "raise_first":
        assert not isinstance(error, MayHaveRun) and "may have run" not in str(error), repr(error)
    else:
        assert isinstance(error, MayHaveRun) and error.tool == "asgi/echo", repr(error)
        assert f"request id {error.request_id}" in str(error)
