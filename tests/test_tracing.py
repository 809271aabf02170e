"""V2: trace context and spans. With ``tracing=True`` every request the host makes gets a
CLIENT span, a child of the caller's current span, named and attributed after
OpenTelemetry's conventions for MCP, the ``mcp.client.operation.duration`` histogram
records it, and the caller's W3C trace context rides in ``params._meta`` to the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client, wait_for
from mcpcore import (
    ElicitResult,
    InvalidValue,
    RequestEnded,
    RequestStarted,
    ResourceNotFound,
    TaskHandle,
    UnknownTool,
)
from mcpcore_demo import DemoServer
from peers import MODERN_PROTOCOL_VERSION, modern_sdk_server, sdk_server
from task_server import task_server

pytestmark = pytest.mark.anyio

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


def _install_providers() -> None:
    """The global providers, set once per process (OpenTelemetry allows no second)."""
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        current = trace.get_tracer_provider()
    assert isinstance(current, TracerProvider)
    if not getattr(current, "_mcpcore_test_exporter", False):
        current.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        current._mcpcore_test_exporter = True  # type: ignore[attr-defined]
        metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _install_providers()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


_HANDSHAKE = ("server/discover", "initialize")


def _client_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    """The CLIENT spans of the host's own requests (the handshake's left out)."""
    return [
        s
        for s in exporter.get_finished_spans()
        if s.kind is SpanKind.CLIENT and s.name not in _HANDSHAKE
    ]


def _handshake_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name in _HANDSHAKE]


def _traceparent_of(span: ReadableSpan) -> str:
    return f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-"


def _durations() -> list[tuple[dict[str, Any], int]]:
    """Each data point of mcp.client.operation.duration: its attributes and count."""
    data = _READER.get_metrics_data()
    points: list[tuple[dict[str, Any], int]] = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "mcp.client.operation.duration":
                    assert metric.unit == "s"
                    points += [(dict(p.attributes or {}), p.count) for p in metric.data.data_points]
    return points


def _meta_of_calls(server: DemoServer) -> list[dict[str, Any]]:
    return [
        r.json["params"].get("_meta", {})
        for r in server.received
        if isinstance(r.json, dict) and r.json.get("method") == "tools/call"
    ]


async def test_V2_a_call_under_a_parent_span_is_its_child_client_span(
    driver: str, spans: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer("test")
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, tracing=True) as client:
            assert (await client.ready(10)).ok
            with tracer.start_as_current_span("agent step") as parent:
                out = await client.call("demo/echo", {"text": "hi"})
            assert out.text == "hi"
            (span,) = _client_spans(spans)
            assert span.name == "tools/call echo"
            assert span.parent is not None
            assert span.parent.span_id == parent.get_span_context().span_id
            assert span.context.trace_id == parent.get_span_context().trace_id
            attributes = dict(span.attributes or {})
            assert attributes["mcp.method.name"] == "tools/call"
            assert attributes["gen_ai.tool.name"] == "echo"
            assert attributes["gen_ai.operation.name"] == "execute_tool"
            assert attributes["mcp.protocol.version"] == client.protocol_version
            assert attributes["network.transport"] == "tcp"
            assert attributes["server.address"] == "127.0.0.1"
            assert "error.type" not in attributes
            # the handshake era's session id is the span's
            (session_id,) = running.server.session_ids
            assert attributes["mcp.session.id"] == session_id
            # the server received the trace context of this very span
            (meta,) = _meta_of_calls(running.server)
            _version, trace_id, span_id, _flags = meta["traceparent"].split("-")
            assert int(trace_id, 16) == span.context.trace_id
            assert int(span_id, 16) == span.context.span_id
            assert "progressToken" in meta
    points = [p for p in _durations() if p[0].get("gen_ai.tool.name") == "echo"]
    assert points and all(p[0]["mcp.method.name"] == "tools/call" for p in points)


async def test_V2_a_failing_call_has_error_type_and_an_error_status(
    driver: str, spans: InMemorySpanExporter
) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, tracing=True) as client:
            assert (await client.ready(10)).ok
            with pytest.raises(Exception, match="failed on purpose"):
                await client.call("demo/fail", {})
            with pytest.raises(UnknownTool):
                await client.call("demo/nope", {})
            failed, unknown = _client_spans(spans)
            assert failed.name == "tools/call fail"
            assert failed.attributes is not None and failed.attributes["error.type"] == "tool_error"
            assert failed.status.status_code is StatusCode.ERROR
            # refused before anything was sent: a span all the same, with no target
            assert unknown.name == "tools/call"
            assert unknown.attributes is not None
            assert unknown.attributes["error.type"] == "UnknownTool"
    failures = {p[0].get("error.type") for p in _durations()}
    assert {"tool_error", "UnknownTool"} <= failures


async def test_V2_the_host_s_own_meta_keys_ride_beside_the_trace_context(
    driver: str, spans: InMemorySpanExporter
) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, tracing=True) as client:
            assert (await client.ready(10)).ok
            await client.call("demo/echo", {"text": "x"}, meta={"tenant": "acme"})
            await client.call("demo/echo", {"text": "y"}, meta={"traceparent": "mine"})
            first, second = _meta_of_calls(running.server)
            assert first["tenant"] == "acme" and first["traceparent"].startswith("00-")
            assert second["traceparent"] == "mine"  # the host's own key wins


@pytest.mark.realpeer
async def test_V2_the_sdk_server_reads_the_trace_context_back(
    driver: str, spans: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer("test")
    with sdk_server("stateful-sse") as peer:
        async with open_client(driver, "sdk", {"url": peer.url}, tracing=True) as client:
            assert (await client.ready(20)).ok
            with tracer.start_as_current_span("agent step"):
                await client.call("sdk/echo", {"text": "x"})
            seen = [line for line in peer.events() if line.startswith("meta ")]
            assert seen
            traceparent = json.loads(seen[-1][5:])["traceparent"]
            (span,) = _client_spans(spans)
            assert traceparent.startswith(
                f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-"
            )
            assert span.name == "tools/call echo"


def test_V2_tracing_must_be_a_bool_and_needs_opentelemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InvalidValue, match="tracing must be True or False"):
        mcpcore_threaded.McpClient("demo", {"url": "http://127.0.0.1:1/mcp"}, tracing="yes")  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "mcpcore_otel", None)
    with pytest.raises(InvalidValue, match=r"pip install 'mcpcore\[otel\]'"):
        mcpcore_threaded.McpClient("demo", {"url": "http://127.0.0.1:1/mcp"}, tracing=True)


def test_V2_with_tracing_off_nothing_of_opentelemetry_loads() -> None:
    code = textwrap.dedent(
        """
        import sys
        import mcpcore_threaded
        from mcpcore_demo import DemoServer
        with DemoServer().serve_in_thread() as running:
            with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
                assert client.ready(10).ok
                assert client.call("demo/echo", {"text": "x"}).text == "x"
        loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "mcpcore_otel")))
        print(loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


class _Recorder:
    def __init__(self, carrier: Mapping[str, Any] | None = None, fail: bool = False) -> None:
        self.started: list[RequestStarted] = []
        self.ended: list[RequestEnded] = []
        self.carrier = carrier
        self.fail = fail

    def request_started(self, request: RequestStarted) -> Mapping[str, Any] | None:
        self.started.append(request)
        if self.fail:
            raise RuntimeError("observer broke")
        return self.carrier

    def request_ended(self, request: RequestEnded) -> None:
        self.ended.append(request)
        if self.fail:
            raise RuntimeError("observer broke")


async def test_V2_an_observer_that_raises_never_fails_the_request(driver: str) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}) as client:
            assert (await client.ready(10)).ok
            recorder = _Recorder(carrier={"tenant": "never sent"}, fail=True)
            client.client._engine.observer = recorder  # the hook point, without OpenTelemetry
            assert (await client.call("demo/echo", {"text": "still"})).text == "still"
            (started,) = recorder.started
            assert (started.method, started.tool, started.server) == ("tools/call", "echo", "demo")
            (ended,) = recorder.ended
            assert ended.call_id == started.call_id and ended.error_type is None
            assert "tenant" not in _meta_of_calls(running.server)[0]


@pytest.mark.realpeer
@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_V2_reads_listings_and_prompts_get_spans_named_after_their_target(
    driver: str, protocol: str, spans: InMemorySpanExporter
) -> None:
    with modern_sdk_server("dual") as peer:
        async with open_client(
            driver, "peer", {"url": peer.url}, tracing=True, protocol=protocol
        ) as face:
            client = face.client

            async def run(name: str, *args: Any) -> Any:
                return await face._run(getattr(client, name), *args)

            assert (await face.ready(30)).ok
            await run("list_resources")
            await run("read_resource", "peer://greeting")
            await run("get_prompt", "review", {"code": "x = 1", "language": "rust"})
            with pytest.raises(ResourceNotFound):
                await run("read_resource", "peer://nowhere")
            listed, read, prompt, missing = _client_spans(spans)
    assert listed.name == "resources/list"
    # a URI is an attribute, never part of the name (its cardinality has no bound)
    assert read.name == "resources/read"
    assert read.attributes is not None
    assert read.attributes["mcp.resource.uri"] == "peer://greeting"
    assert prompt.name == "prompts/get review"
    assert prompt.attributes is not None
    assert prompt.attributes["gen_ai.prompt.name"] == "review"
    assert "gen_ai.operation.name" not in prompt.attributes
    # the server's JSON-RPC error answer: its code is the error type
    assert missing.attributes is not None
    code = missing.attributes["rpc.response.status_code"]
    assert missing.attributes["error.type"] == code and int(str(code)) < 0
    for span in (listed, read, prompt, missing):
        assert span.attributes is not None
        assert span.attributes["mcp.protocol.version"] == (
            MODERN_PROTOCOL_VERSION if protocol == "modern" else "2025-11-25"
        )


async def test_V2_a_local_server_s_spans_say_pipe(
    driver: str, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    server = Path(__file__).parent / "servers" / "stdio_server.py"
    script = tmp_path / "run-server"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{server}" "$@"\n')
    script.chmod(0o755)
    options = {"allow_local": True, "plugin_root": str(tmp_path), "tracing": True}
    tracer = trace.get_tracer("test")
    async with open_client(driver, "local", {"command": "./run-server"}, **options) as client:
        assert (await client.ready(20)).ok
        with tracer.start_as_current_span("agent step") as parent:
            assert (await client.call("local/echo", {"text": "p"})).text == "p"
    (span,) = _client_spans(spans)
    assert span.name == "tools/call echo"
    assert span.parent is not None
    assert span.parent.span_id == parent.get_span_context().span_id
    attributes = dict(span.attributes or {})
    assert attributes["network.transport"] == "pipe"
    assert "server.address" not in attributes and "mcp.session.id" not in attributes


async def test_V2_a_cancelled_call_s_span_ends_with_error_type_cancelled(
    driver: str, spans: InMemorySpanExporter
) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}, tracing=True) as client:
            assert (await client.ready(10)).ok

            def started() -> bool:
                return any(r.rpc_method == "tools/call" for r in running.server.received)

            await client.call_and_cancel("demo/slow", {"steps": 100, "delay": 0.1}, started)
            await wait_for(lambda: bool(_client_spans(spans)), 10)
    (span,) = _client_spans(spans)
    assert span.name == "tools/call slow"
    assert span.attributes is not None and span.attributes["error.type"] == "cancelled"


async def test_V2_the_handshake_s_requests_are_client_spans_under_the_opener_s_span(
    driver: str, spans: InMemorySpanExporter
) -> None:
    """Issue 36: ``server/discover`` and ``initialize`` make spans, durations and carry the
    trace context, as other requests do; the probe the demo refuses ends with an error."""
    tracer = trace.get_tracer("test")
    with DemoServer().serve_in_thread() as running:
        with tracer.start_as_current_span("open the client") as parent:
            async with open_client(driver, "demo", {"url": running.url}, tracing=True) as client:
                assert (await client.ready(10)).ok
        probe, initialize = _handshake_spans(spans)
        received = [
            r.json for r in running.server.received if isinstance(r.json, dict) and r.json.get("method") == "initialize"
        ]
    assert probe.name == "server/discover"
    assert probe.attributes is not None and "error.type" in probe.attributes
    assert initialize.name == "initialize"
    assert initialize.attributes is not None and "error.type" not in initialize.attributes
    assert initialize.attributes["mcp.method.name"] == "initialize"
    for span in (probe, initialize):
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    (sent,) = received
    assert sent["params"]["_meta"]["traceparent"].startswith(_traceparent_of(initialize))
    methods = {p[0].get("mcp.method.name") for p in _durations()}
    assert {"server/discover", "initialize"} <= methods


async def test_V2_resume_task_and_resume_get_spans_durations_and_trace_context(
    driver: str, spans: InMemorySpanExporter
) -> None:
    """Issue 36: ``resume_task`` (as ``tasks/result``, its polls carrying the trace
    context) and ``resume`` of a paused call (its own trace context, not the paused
    call's) are CLIENT spans like a call."""
    tracer = trace.get_tracer("test")
    options = {"protocol": "modern", "tasks": True, "tracing": True}
    with task_server() as (url, state):
        async with open_client(driver, "jobs", {"url": url}, **options) as client:
            assert (await client.ready(10)).ok
            handle = await client._run(client.client.start_task, "jobs/build", {"steps": 2, "target": "t"})
            paused = await client.call("jobs/build", {"steps": 1, "ask": True}, on_input="return")
            spans.clear()
            with tracer.start_as_current_span("agent step") as parent:
                out = await client._run(client.client.resume_task, TaskHandle.from_json(handle.to_json()))
                answer = {"ship": ElicitResult.accept({"ok": True})}
                resumed = await client._run(client.client.resume, paused.continuation, answer)
        assert out.text == "built t" and resumed.text.startswith("built all")
        followed, finished = _client_spans(spans)
        polls = [m for m in state.received if m.get("method") in ("tasks/get", "tasks/result")]
        updates = [m for m in state.received if m.get("method") == "tasks/update"]
    assert followed.name == "tasks/result build"
    assert finished.name == "tools/call build"
    for span in (followed, finished):
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
        assert span.attributes is not None and "error.type" not in span.attributes
    assert any(m["params"]["_meta"].get("traceparent", "").startswith(_traceparent_of(followed)) for m in polls)
    # the answers go to the paused task (tasks/update) with the resume's own trace context
    assert updates[-1]["params"]["_meta"]["traceparent"].startswith(_traceparent_of(finished))
    methods = {p[0].get("mcp.method.name") for p in _durations()}
    assert "tasks/result" in methods


@pytest.mark.realpeer
@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_V2_subscribe_and_unsubscribe_get_spans_and_trace_context(
    driver: str, protocol: str, spans: InMemorySpanExporter
) -> None:
    """Issue 36: ``subscribe`` is a CLIENT span in both eras; the trace context rides on
    ``resources/subscribe`` (handshake era) or the listen stream it opens (2026-07-28)."""
    tracer = trace.get_tracer("test")
    with modern_sdk_server("dual") as peer:
        async with open_client(driver, "peer", {"url": peer.url}, tracing=True, protocol=protocol) as face:
            assert (await face.ready(30)).ok
            spans.clear()
            with tracer.start_as_current_span("agent step") as parent:
                await face._run(face.client.subscribe_resource, "peer://greeting")
                await face._run(face.client.unsubscribe_resource, "peer://greeting")
            subscribed, unsubscribed = _client_spans(spans)
    assert subscribed.name == "resources/subscribe"
    assert unsubscribed.name == "resources/unsubscribe"
    for span in (subscribed, unsubscribed):
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
        assert span.attributes is not None and span.attributes["mcp.resource.uri"] == "peer://greeting"
        assert "error.type" not in span.attributes
    methods = {p[0].get("mcp.method.name") for p in _durations()}
    assert "resources/subscribe" in methods  # the wire's trace context: test_observing.py
