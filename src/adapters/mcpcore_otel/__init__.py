"""OpenTelemetry for mcpcore clients (V2): spans, the duration metric, trace context.

A client or hub given ``tracing=True`` makes a ``Tracing`` (this module is
loaded then, never otherwise) and hands it to its engine as the engine's
``RequestObserver``. Everything MCP about a request (its method, what it is
about, the session, the transport) comes from the engine; this module only
turns what the engine tells it into OpenTelemetry, following the GenAI
semantic conventions for MCP:

* a CLIENT span per request the host makes (``resume``, ``resume_task`` and
  ``subscribe`` included) and per request of the handshake, named ``{mcp.method.name}
  {target}`` (the tool's or the prompt's name; a resource's URI is an
  attribute, not part of the name, which would have no bounded cardinality),
  with ``mcp.method.name``, ``gen_ai.tool.name`` / ``gen_ai.operation.name``
  (``execute_tool``) for a call, ``gen_ai.prompt.name``, ``mcp.resource.uri``,
  ``jsonrpc.request.id``, ``mcp.session.id``, ``mcp.protocol.version``,
  ``network.transport`` (``tcp``, ``pipe``), ``network.protocol.name``,
  ``server.address`` / ``server.port``, and ``error.type`` with an error
  status when it fails (``tool_error`` for a tool's ``isError`` result, the
  JSON-RPC code for an error answer, which ``rpc.response.status_code`` also
  holds);
* the ``mcp.client.operation.duration`` histogram (seconds, measured with
  the driver's own clock) with the same low-cardinality attributes;
* the trace context, injected with the global propagator (W3C
  ``traceparent`` / ``tracestate`` and ``baggage`` by default) into the
  request's ``params._meta`` (SEP-414), so the server's spans join the trace.

The span starts in the caller's context (the engine tells this observer from
inside the caller's ``call``), so its parent is the caller's current span on
every driver, also when a worker thread performs the exchange. It ends
wherever the outcome arrives. Spans and metrics go to the global tracer and
meter providers unless others are given. On the threaded driver a span
ends under the client's lock: export with a ``BatchSpanProcessor`` (as
OpenTelemetry advises for production), not a slow exporter behind a
``SimpleSpanProcessor``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from mcpcore import RequestEnded, RequestStarted, __version__

__all__ = ["DURATION_BUCKETS", "Tracing"]

#: The histogram's bucket boundaries, in seconds, as the MCP conventions advise.
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class Tracing:
    """A ``RequestObserver`` making OpenTelemetry spans and metrics (one per client)."""

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        self._tracer = trace.get_tracer("mcpcore", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("mcpcore", __version__, meter_provider=meter_provider)
        self._duration = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="The duration of an MCP request, as the client observed it.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        # call id -> the span, the metric's attributes, and when it started
        self._open: dict[int, tuple[trace.Span, dict[str, Any], float]] = {}
        self._guard = threading.Lock()  # the threaded driver ends spans from worker threads

    def __repr__(self) -> str:
        return f"Tracing({len(self._open)} open)"

    def request_started(self, request: RequestStarted) -> Mapping[str, Any]:
        method = request.method
        target = request.tool or request.prompt
        measured: dict[str, Any] = {"mcp.method.name": method}
        if request.tool is not None:
            measured["gen_ai.tool.name"] = request.tool
            if method == "tools/call":
                measured["gen_ai.operation.name"] = "execute_tool"
        if request.prompt is not None:
            measured["gen_ai.prompt.name"] = request.prompt
        if request.protocol_version is not None:
            measured["mcp.protocol.version"] = request.protocol_version
        measured["network.transport"] = request.transport
        if request.transport == "tcp":
            measured["network.protocol.name"] = "http"
        if request.address is not None:
            measured["server.address"] = request.address
            if request.port is not None:
                measured["server.port"] = request.port
        attributes = dict(measured)
        attributes["jsonrpc.request.id"] = str(request.call_id)
        if request.session_id is not None:
            attributes["mcp.session.id"] = request.session_id
        if request.uri is not None:
            attributes["mcp.resource.uri"] = request.uri
        span = self._tracer.start_span(
            f"{method} {target}" if target else method,
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        with self._guard:
            self._open[request.call_id] = (span, measured, request.now)
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=trace.set_span_in_context(span))
        return carrier

    def request_ended(self, request: RequestEnded) -> None:
        with self._guard:
            opened = self._open.pop(request.call_id, None)
        if opened is None:
            return
        span, measured, started = opened
        if request.error_type is not None:
            measured = {**measured, "error.type": request.error_type}
            span.set_attribute("error.type", request.error_type)
            if request.rpc_code is not None:
                code = str(request.rpc_code)
                measured["rpc.response.status_code"] = code
                span.set_attribute("rpc.response.status_code", code)
            span.set_status(Status(StatusCode.ERROR, request.error_type))
        self._duration.record(max(0.0, request.now - started), attributes=measured)
        span.end()


def client_tracing() -> Tracing:
    """The observer ``tracing=True`` gives a client's engine."""
    return Tracing()
