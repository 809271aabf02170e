"""A server restarted under a running client, on both drivers (H6a, L5, L8).

server-everything (like many servers built on the TypeScript SDK's example)
answers a session id it does not know with HTTP 400 and a JSON-RPC error, not
the 404 the specification asks for. Each test starts it on a free port, then
stops it by its process id and starts it again on the same port: every session
it held is gone. A server that keeps refusing after the restart is a small
stdlib HTTP server on that port answering every POST the way server-everything
answers an unknown session.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, Face, backend_of, open_client, wait_for
from mcpcore import InvalidValue, McpError, TransportError
from peers import HOST, Peer, everything_server

pytestmark = [pytest.mark.anyio, pytest.mark.realpeer]

REFUSAL = (
    b'{"jsonrpc":"2.0","error":{"code":-32000,'
    b'"message":"Bad Request: No valid session ID provided"},"id":null}'
)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture
def everything() -> Iterator[Peer]:
    with everything_server() as peer:
        yield peer


async def restart(peer: Peer) -> None:
    await anyio.to_thread.run_sync(peer.restart)


async def reconnect(face: Face, timeout: float) -> Any:
    return await face._run(face.client.reconnect, timeout)


class _Refuser(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(REFUSAL)))
        self.end_headers()
        self.wfile.write(REFUSAL)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def refusing_server(port: int) -> Iterator[None]:
    """A server on ``port`` that refuses every POST with server-everything's 400."""
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer((HOST, port), _Refuser)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="refusing-server", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_H6a_restarted_server_is_used_again_without_a_new_client(
    driver: str, everything: Peer
) -> None:
    """H6a: after a restart the server answers the old session id with 400 and a
    JSON-RPC error: one new session is set up and the call, the listing and the
    re-listing that met it go through; ready() stays ok."""
    async with open_client(driver, "e", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            assert (await client.call("e/echo", {"message": "before"})).text == "Echo: before"
            await restart(everything)
            assert (await client.call("e/echo", {"message": "after"}, timeout=10)).text == (
                "Echo: after"
            )
            prompts = await client._run(client.client.list_prompts, timeout=10)
            assert len(prompts) > 0
            await client.refresh()
            assert (await client.ready()).ok
            # and again: a second restart is one more new session, not a stuck client
            await restart(everything)
            assert (await client.call("e/echo", {"message": "twice"}, timeout=10)).text == (
                "Echo: twice"
            )


async def test_H6a_a_call_running_across_the_restart_fails_once_then_calls_work(
    driver: str, everything: Peer
) -> None:
    """H6a: a call that was running when the server restarted may have run: it fails
    once with a TransportError that says so (never sent again); the next one works."""
    async with open_client(driver, "e", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            progress: list[float] = []
            failure: list[BaseException] = []

            async def long_call() -> None:
                try:
                    await client.call(
                        "e/trigger-long-running-operation",
                        {"duration": 20, "steps": 20},
                        timeout=30,
                        on_progress=lambda done, total, message: progress.append(done),
                    )
                except McpError as exc:
                    failure.append(exc)

            async with anyio.create_task_group() as group:
                group.start_soon(long_call)
                await wait_for(lambda: bool(progress), 15)
                await restart(everything)
            [error] = failure
            assert isinstance(error, TransportError)
            assert "may have run" in str(error) or "before the response arrived" in str(error)
            assert (await client.call("e/echo", {"message": "next"}, timeout=10)).text == (
                "Echo: next"
            )
            assert (await client.ready()).ok


async def test_L8_reconnect_sets_up_a_new_session_and_says_when_the_server_is_down(
    driver: str, everything: Peer
) -> None:
    """L8: reconnect() sets up a new session at once and waits for it; while the
    server is down it answers (and ready() then says) unavailable with the reason;
    once the server is back, reconnect() makes it available again."""
    async with open_client(driver, "e", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            await restart(everything)
            assert (await reconnect(client, 10)).ok
            assert (await client.call("e/echo", {"message": "one"}, timeout=10)).text == "Echo: one"
            await anyio.to_thread.run_sync(everything.stop)
            down = await reconnect(client, 10)
            assert not down.ok
            assert "a new session could not be set up" in (down.reason or "")
            assert "refused" in (down.reason or "")
            again = await client.ready()
            assert not again.ok and again.reason == down.reason
            await restart(everything)
            assert (await reconnect(client, 10)).ok
            assert (await client.ready()).ok
            assert (await client.call("e/echo", {"message": "two"}, timeout=10)).text == "Echo: two"


async def test_L5_a_restarted_server_that_keeps_refusing_is_unavailable(
    driver: str, everything: Peer
) -> None:
    """L5, H6a: after the restart the server refuses the new session too: the call
    that found out fails (within its own deadline), and ready() says the server is
    unavailable, with the server's answer as the reason; never a loop of sessions."""
    async with open_client(driver, "e", {"url": everything.url}) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            await anyio.to_thread.run_sync(everything.stop)
            with refusing_server(everything.port):
                with pytest.raises(McpError):
                    await client.call("e/echo", {"message": "x"}, timeout=3)
                availability = await client.ready()
                assert not availability.ok
                reason = availability.reason or ""
                assert "a new session could not be set up" in reason
                assert "No valid session ID provided" in reason
                refused = await reconnect(client, 10)
                assert not refused.ok and "No valid session ID provided" in (refused.reason or "")


async def test_L8_hub_reconnect_one_server_or_all(driver: str, everything: Peer) -> None:
    """L8: a hub reconnects the server named, or every server; a name it does not
    have is InvalidValue."""
    entries = {"mcpServers": {"e": {"url": everything.url}}}
    with anyio.fail_after(60):
        if driver == "threaded":
            hub = mcpcore_threaded.McpHub.from_mcp_json(json.dumps(entries))
            await anyio.to_thread.run_sync(hub.start)
            try:
                assert (await anyio.to_thread.run_sync(hub.ready, 20))["e"].ok
                await restart(everything)
                result = await anyio.to_thread.run_sync(lambda: hub.reconnect(timeout=10))
                assert list(result) == ["e"] and result["e"].ok
                result = await anyio.to_thread.run_sync(lambda: hub.reconnect("E", timeout=10))
                assert result["e"].ok
                with pytest.raises(InvalidValue, match="no server named 'nope'"):
                    hub.reconnect("nope")
                output = await anyio.to_thread.run_sync(
                    lambda: hub.call("e/echo", {"message": "h"})
                )
                assert output.text == "Echo: h"
            finally:
                await anyio.to_thread.run_sync(hub.close)
        else:
            async with mcpcore_anyio.McpHub.from_mcp_json(json.dumps(entries)) as ahub:
                assert (await ahub.ready(20))["e"].ok
                await restart(everything)
                result = await ahub.reconnect(timeout=10)
                assert list(result) == ["e"] and result["e"].ok
                assert (await ahub.reconnect("e", timeout=10))["e"].ok
                with pytest.raises(InvalidValue, match="no server named 'nope'"):
                    await ahub.reconnect("nope")
                assert (await ahub.call("e/echo", {"message": "h"})).text == "Echo: h"


STDIO_SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


async def test_L8_reconnect_over_stdio_starts_a_new_server_process(
    driver: str, tmp_path: Path
) -> None:
    """L8, S3: over stdio the session is the child: reconnect() starts a new one (the
    old one stopped) and the client is ready on it."""
    script = tmp_path / "run-server"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STDIO_SERVER}" "$@"\n')
    script.chmod(0o755)
    options = {"allow_local": True, "plugin_root": str(tmp_path)}
    async with open_client(driver, "local", {"command": "./run-server"}, **options) as client:
        with anyio.fail_after(60):
            assert (await client.ready(20)).ok
            before = int((await client.call("local/pid", {})).text)
            assert (await reconnect(client, 20)).ok
            after = int((await client.call("local/pid", {})).text)
            assert after != before
            await wait_for(lambda: _gone(before), 10)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
