"""The interop matrix: each server × each behaviour, probed live with the anyio driver.

Every probe is an assertion; its outcome is also recorded, and
``scripts/interop_table.py`` renders the recorded outcomes as docs/interop.md
(the test command refreshes it after each run; it is never written by hand).
A behaviour a server cannot be made to show (it never pages, keeps no event
store, offers no way to expire a session) is recorded as "n/a" with the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpcore
import pytest

import mcpcore_anyio
from drivers import wait_for
from mcpcore import BackendError
from mcpcore_demo import DemoServer, default_tools
from peers import everything_server, sdk_server
from records import update_json

pytestmark = [pytest.mark.anyio, pytest.mark.realpeer]

RESULTS = Path(__file__).resolve().parents[1] / "build" / "interop.json"
BEHAVIOURS = [
    "era", "handshake", "paging", "text", "image", "audio", "embedded text", "embedded blob",
    "resource link", "structured", "isError", "progress", "cancel", "resume", "expiry", "DELETE",
    "task",
]  # fmt: skip


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Probe:
    """Runs named probes, recording ✓ / ✗ / n/a for each; fails the test at the end."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.outcomes: dict[str, str] = {}
        self.failures: list[str] = []

    async def check(self, behaviour: str, probe: Callable[[], Awaitable[None]]) -> None:
        try:
            with anyio.fail_after(20):
                await probe()
        except Exception as exc:
            self.outcomes[behaviour] = "✗"
            self.failures.append(f"{behaviour}: {type(exc).__name__}: {exc}")
        else:
            self.outcomes[behaviour] = "✓"

    def na(self, behaviour: str, why: str) -> None:
        self.outcomes[behaviour] = f"n/a ({why})"

    def save(self) -> None:
        update_json(RESULTS, lambda data: data.__setitem__(self.server, self.outcomes))
        assert self.failures == [], self.failures


@contextmanager
def recording(server: str) -> Iterator[Probe]:
    probe = Probe(server)
    try:
        yield probe
    finally:
        probe.save()


async def common_probes(
    probe: Probe,
    client: mcpcore_anyio.McpClient,
    server: str,
    calls: dict[str, tuple[str, dict[str, Any], Callable[[str], bool]]],
    progress_call: tuple[str, dict[str, Any]] | None,
    cancel_call: tuple[str, dict[str, Any]],
    call_started: Callable[[], bool],
    saw_cancel: Callable[[], bool],
) -> None:
    async def handshake() -> None:
        availability = await client.ready(20)
        assert availability.ok, availability.reason

    await probe.check("handshake", handshake)
    # E1: which revision the probe found (server/discover, else initialize)
    version = client.protocol_version
    if client.era == "modern":
        probe.outcomes["era"] = f"{version} (server/discover)"
    elif client._options.protocol == "auto":
        probe.outcomes["era"] = f"{version} (initialize, after the probe)"
    else:
        probe.outcomes["era"] = f"{version} (initialize, pinned)"
    for behaviour, (tool, arguments, expect) in calls.items():

        async def call(
            tool: str = tool,
            arguments: dict[str, Any] = arguments,
            expect: Callable[[str], bool] = expect,
            structured: bool = behaviour == "structured",
        ) -> None:
            output = await client.call(f"{server}/{tool}", arguments)
            assert expect(output.text) or (structured and output.structured), output.text

        await probe.check(behaviour, call)
    if progress_call is not None:

        async def progress() -> None:
            seen: list[float] = []
            await client.call(f"{server}/{progress_call[0]}", progress_call[1], on_progress=lambda p, t, m: seen.append(p))
            assert len(seen) >= 2 and seen == sorted(seen), seen

        await probe.check("progress", progress)

    async def cancel() -> None:
        progressed: list[float] = []

        async def run() -> None:
            await client.call(
                f"{server}/{cancel_call[0]}", cancel_call[1], on_progress=lambda p, t, m: progressed.append(p)
            )

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await wait_for(lambda: call_started() or bool(progressed), 10)
            cancelled_at = anyio.current_time()
            group.cancel_scope.cancel()
        # K6: the caller returns without waiting, whatever the server does with the stream:
        # long before the cancelled tool (20 s or more on every server here) could have
        # finished. A generous bound for a loaded machine; B6 measures the time itself.
        assert anyio.current_time() - cancelled_at < 10
        await wait_for(saw_cancel, 10)

    await probe.check("cancel", cancel)


async def _session_ended(url: str, session_id: str | None) -> None:
    """After close, the server no longer knows the session: DELETE was sent and honoured."""
    assert session_id
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    headers = [
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-session-id", session_id.encode()),
        (b"mcp-protocol-version", b"2025-11-25"),
    ]
    async with httpcore.AsyncConnectionPool() as pool:
        response = await pool.request("POST", url, headers=headers, content=body)
    assert response.status in (400, 404), response.status


def _has(text: str) -> Callable[[str], bool]:
    return lambda shown: text in shown


async def task_probe(
    probe: Probe, url: str, server: str, tool: str, arguments: dict[str, Any], expect: str
) -> None:
    """T7: a client with tasks on calls a task-required tool; the call follows the
    task to its result, the server's status messages arriving as progress."""

    async def task() -> None:
        statuses: list[str | None] = []
        async with mcpcore_anyio.McpClient(server, {"url": url}, tasks=True) as client:
            output = await client.call(
                f"{server}/{tool}", arguments, on_progress=lambda p, t, m: statuses.append(m)
            )
        assert expect in output.text, output.text
        assert len(statuses) >= 2, statuses

    await probe.check("task", task)


async def test_interop_demo_server() -> None:
    """The bundled demo server (stateful SSE, paging, polling streams)."""
    with recording("mcpcore demo server") as probe:
        tools = default_tools(build_task_support="required")
        async with DemoServer(page_size=4, tools=tools, task_poll_interval_ms=50).serve() as running:
            server = running.server
            async with mcpcore_anyio.McpClient("demo", {"url": running.url}) as client:
                await common_probes(
                    probe, client, "demo",
                    {
                        "text": ("echo", {"text": "x"}, lambda t: t == "x"),
                        "image": ("image", {}, _has("[image omitted: image/png]")),
                        "audio": ("audio", {}, _has("[audio omitted: audio/wav]")),
                        "embedded text": ("embedded_text", {}, _has("Hello")),
                        "embedded blob": ("embedded_blob", {}, _has("[resource omitted: ")),
                        "resource link": ("resource_link", {}, _has("[resource: ")),
                        "structured": ("add", {"a": 1, "b": 2}, lambda t: t == "3"),
                    },
                    ("slow", {"steps": 3, "delay": 0.01}),
                    ("slow", {"steps": 200, "delay": 0.1}),  # 20 s
                    lambda: any(
                        r.json["params"].get("arguments", {}).get("steps") == 200
                        for r in server.requests_for("tools/call")
                    ),
                    lambda: bool(server.requests_for("notifications/cancelled")),
                )

                async def paging() -> None:
                    assert len(server.requests_for("tools/list")) >= 3 and len(client.tools) >= 10

                await probe.check("paging", paging)

                async def is_error() -> None:
                    with pytest.raises(BackendError):
                        await client.call("demo/fail", {})

                await probe.check("isError", is_error)

                async def expiry() -> None:
                    server.expire_sessions()
                    assert (await client.call("demo/echo", {"text": "again"})).text == "again"

                await probe.check("expiry", expiry)
                await task_probe(probe, running.url, "demo", "build", {"delay": 0.05}, "4 steps done")
        async with DemoServer(close_after_priming=True, retry_ms=50).serve() as polling:
            async with mcpcore_anyio.McpClient("demo", {"url": polling.url}) as client:

                async def resume() -> None:
                    assert (await client.ready(10)).ok
                    assert (await client.call("demo/echo", {"text": "resumed"})).text == "resumed"
                    assert any("last-event-id" in r.headers for r in polling.server.received if r.method == "GET")

                await probe.check("resume", resume)

        async def delete() -> None:
            assert any(r.method == "DELETE" for r in server.received)

        await probe.check("DELETE", delete)


@pytest.mark.parametrize(
    "mode",
    ["stateful-sse", "stateful-json", "stateless-sse", "stateless-json", "2026-07-28 sse", "2026-07-28 json"],
)
async def test_interop_sdk_server(mode: str) -> None:
    """The official Python SDK server (mcp 2.3): the handshake era in its four modes
    (pinned: sessions are that era's), and 2026-07-28, found by the probe (E1)."""
    modern = mode.startswith("2026")
    server_mode = ("stateful-json" if "json" in mode else "stateful-sse") if modern else mode
    pinned = {} if modern else {"protocol": "legacy"}
    with recording(f"Python SDK server, {mode}") as probe, sdk_server(mode=server_mode, page_size=3) as peer:
        async with mcpcore_anyio.McpClient("sdk", {"url": peer.url}, **pinned) as client:
            await common_probes(
                probe, client, "sdk",
                {
                    "text": ("echo", {"text": "x"}, lambda t: t == "x"),
                    "image": ("image", {}, _has("[image omitted: image/png]")),
                    "audio": ("audio", {}, _has("[audio omitted: audio/wav]")),
                    "embedded text": ("embedded_text", {}, lambda t: bool(t)),
                    "embedded blob": ("embedded_blob", {}, _has("[resource omitted: ")),
                    "resource link": ("resource_link", {}, _has("[resource: ")),
                    "structured": ("add", {"a": 1, "b": 2}, lambda t: "3" in t),
                },
                None if "json" in mode else ("progress", {"steps": 3}),
                ("slow", {"seconds": 30}),
                lambda: "call slow" in peer.events(),
                (lambda: "cancelled" in peer.events())
                if "stateful" in mode or mode == "2026-07-28 sse"
                else (lambda: True),
            )
            if "json" in mode:
                probe.na("progress", "a JSON reply carries only the result")
            if "stateless" in mode:
                probe.outcomes["cancel"] = probe.outcomes["cancel"] + " (the caller returned at once; a stateless server cannot act on it)"
            if mode == "2026-07-28 json":
                probe.outcomes["cancel"] = probe.outcomes["cancel"] + " (the caller returned at once; the stream was closed, which this server's JSON mode does not act on)"

            async def paging() -> None:
                assert len(client.tools) >= 10  # pages of 3

            await probe.check("paging", paging)

            async def is_error() -> None:
                with pytest.raises(BackendError):
                    await client.call("sdk/fail", {})

            await probe.check("isError", is_error)
            session_id = client._engine.http.session_id  # type: ignore[union-attr]
        probe.na("task", "the Python SDK server has no tasks")
        if modern:
            probe.na("resume", "2026-07-28 has no resumption")
            probe.na("expiry", "2026-07-28 has no session")
            probe.na("DELETE", "2026-07-28 has no session")
            return
        probe.na("resume", "the server keeps no event store")
        probe.na("expiry", "no way to expire a session from outside")
        if "stateful" in mode:
            await probe.check("DELETE", lambda: _session_ended(peer.url, session_id))
        else:
            probe.na("DELETE", "stateless: no session")


async def test_interop_everything_server() -> None:
    """The reference TypeScript server (@modelcontextprotocol/server-everything)."""
    with recording("TypeScript reference server (server-everything)") as probe, everything_server() as peer:
        async with mcpcore_anyio.McpClient("ev", {"url": peer.url}) as client:
            await common_probes(
                probe, client, "ev",
                {
                    "text": ("echo", {"message": "x"}, _has("x")),
                    "image": ("get-tiny-image", {}, _has("[image omitted: image/png]")),
                    "embedded text": ("get-resource-reference", {"resourceType": "Text"}, lambda t: bool(t)),
                    "embedded blob": ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}, _has("[resource omitted: ")),
                    "resource link": ("get-resource-links", {"count": 2}, _has("[resource: ")),
                    "structured": ("get-structured-content", {"location": "Chicago"}, lambda t: bool(t)),
                },
                ("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
                ("trigger-long-running-operation", {"duration": 20, "steps": 20}),
                lambda: False,  # started once its first progress arrives
                lambda: True,
            )
            probe.outcomes["cancel"] = probe.outcomes["cancel"] + " (the caller returned at once; the server keeps streaming, the client closed the stream)"

            async def is_error() -> None:
                with pytest.raises(BackendError, match="Input validation error"):
                    await client.call("ev/echo", {})  # argument errors come back as isError

            await probe.check("isError", is_error)
            session_id = client._engine.http.session_id  # type: ignore[union-attr]
        await probe.check("DELETE", lambda: _session_ended(peer.url, session_id))
        # its experimental task tool: four stages of a second, each a status message
        await task_probe(probe, peer.url, "ev", "simulate-research-query", {"topic": "tides"}, "tides")
        probe.na("audio", "no tool returns audio")
        probe.na("paging", "the server never pages")
        probe.na("resume", "streams are not closed early by this server")
        probe.na("expiry", "no way to expire a session from outside")

