"""V2: the client CPU a call costs with ``tracing=True`` beside tracing off.

A small timing loop, not part of ``python -m bench``: the demo server runs in a
child process (so its CPU is not counted), and the threaded client makes
sequential ``tools/call`` round trips, tracing off and on in alternating rounds.
With tracing on, the OpenTelemetry SDK is set up as production would: a
``BatchSpanProcessor`` (its export thread's CPU counts) with an exporter that
drops the spans, and a ``MeterProvider`` whose reader collects the histogram.

    PYTHONPATH=src:src/adapters python -m bench.tracing [calls per round] [rounds]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

import mcpcore_threaded


def _serve() -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen(
        [sys.executable, "-m", "mcpcore_demo"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    return child, url


def _install_sdk() -> None:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))


def _cpu_per_call(url: str, calls: int, tracing: bool) -> float:
    with mcpcore_threaded.McpClient("demo", {"url": url}, tracing=tracing) as client:
        assert client.ready(10).ok
        for _ in range(50):  # warm the connection and the code paths
            client.call("demo/echo", {"text": "warm"})
        start = time.process_time()
        for _ in range(calls):
            client.call("demo/echo", {"text": "x"})
        return (time.process_time() - start) / calls


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    _install_sdk()
    child, url = _serve()
    try:
        off: list[float] = []
        on: list[float] = []
        for _ in range(rounds):
            off.append(_cpu_per_call(url, calls, tracing=False))
            on.append(_cpu_per_call(url, calls, tracing=True))
    finally:
        child.terminate()
        child.wait(10)
    median_off, median_on = statistics.median(off), statistics.median(on)
    print(f"tracing off: {median_off * 1e6:,.0f} µs CPU per call (median of {rounds})")
    print(f"tracing on:  {median_on * 1e6:,.0f} µs CPU per call (median of {rounds})")
    print(f"added:       {(median_on - median_off) * 1e6:,.0f} µs per call")


if __name__ == "__main__":
    main()
