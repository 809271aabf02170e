"""V2 in the core, on a fake clock: what an engine tells its ``RequestObserver`` about
requests other than calls and reads (issue 36): ``subscribe`` in both eras, and the
handshake's own requests (``initialize``, ``server/discover``), each told once and
ended once, with the trace context in ``params._meta``. The drivers' spans are in
``test_tracing.py``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fake_peer import FakeServer, Reply, connect
from mcpcore import RequestEnded, RequestStarted, RequestSucceeded
from mcpcore.session._session import SessionOptions
from test_subscriptions import URI, SubscribingServer, ended, modern

CARRIER = {"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}


class Recorder:
    def __init__(self) -> None:
        self.started: list[RequestStarted] = []
        self.ended: list[RequestEnded] = []

    def request_started(self, request: RequestStarted) -> Mapping[str, Any]:
        self.started.append(request)
        return CARRIER

    def request_ended(self, request: RequestEnded) -> None:
        self.ended.append(request)

    def outcome(self, method: str) -> list[tuple[str | None, int | None]]:
        ids = [s.call_id for s in self.started if s.method == method]
        return [(e.error_type, e.rpc_code) for e in self.ended if e.call_id in ids]


def test_V2_a_handshake_era_subscribe_is_told_and_carries_the_trace_context() -> None:
    server = SubscribingServer()
    link = connect(server, options=SessionOptions(server_name="srv"))
    recorder = Recorder()
    link.engine.observer = recorder
    call_id = link.engine.subscribe(URI, link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
    (started,) = recorder.started
    assert (started.method, started.uri, started.call_id) == ("resources/subscribe", URI, call_id)
    assert recorder.outcome("resources/subscribe") == [(None, None)]
    (sent,) = server.requests("resources/subscribe")
    assert sent["params"]["_meta"]["traceparent"] == CARRIER["traceparent"]


def test_V2_a_2026_subscribe_is_told_and_its_listen_stream_carries_the_trace_context() -> None:
    _, streams, link = modern()
    recorder = Recorder()
    link.engine.observer = recorder
    call_id = link.engine.subscribe(URI, link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
    assert [s.method for s in recorder.started] == ["resources/subscribe"]
    assert recorder.outcome("resources/subscribe") == [(None, None)]
    (listen,) = streams.listens
    assert listen["params"]["_meta"]["traceparent"] == CARRIER["traceparent"]


def test_V2_each_handshake_request_is_told_once_ended_once_and_carries_the_trace_context() -> None:
    server = FakeServer()
    link = connect(server, start=False, protocol="auto")
    recorder = Recorder()
    link.engine.observer = recorder
    link.start()
    # the probe this fake refuses, then initialize, answered
    assert [s.method for s in recorder.started] == ["server/discover", "initialize"]
    (probe,) = recorder.outcome("server/discover")
    assert probe[0] is not None  # refused: an error type
    assert recorder.outcome("initialize") == [(None, None)]
    (sent,) = server.requests("initialize")
    assert sent["params"]["_meta"]["traceparent"] == CARRIER["traceparent"]
    assert len(recorder.ended) == len(recorder.started)


def test_V2_a_handshake_request_left_unanswered_ends_with_the_attempt_or_on_close() -> None:
    server = FakeServer()
    server.hook = lambda seen: (
        Reply(200, finish="before-headers")
        if seen.message and seen.message.get("method") == "initialize"
        else None
    )
    link = connect(server, start=False, options=SessionOptions(server_name="srv", startup_timeout=5))
    recorder = Recorder()
    link.engine.observer = recorder
    link.start()
    assert recorder.ended == []  # still waiting for its answer
    link.advance(5.5)  # the start-up deadline: the attempt fails without an answer
    assert recorder.outcome("initialize")[0] == ("CallTimeout", None)
    link.advance(1.0)  # the next attempt's initialize
    link.engine.close(link.now)
    link.pump()
    assert [e.error_type for e in recorder.ended] == ["CallTimeout", "cancelled"]
    assert len(recorder.started) == 2


class Stamping(Recorder):
    """Each request gets its own trace context (its call id in the span id's place)."""

    def request_started(self, request: RequestStarted) -> Mapping[str, Any]:
        self.started.append(request)
        return {"traceparent": f"00-{'0' * 32}-{request.call_id:016x}-01"}


def test_V2_Q4_a_resumed_call_is_told_and_carries_its_own_trace_context_not_the_paused_calls() -> None:
    from mcpcore import CallSucceeded, ElicitResult
    from test_modern import calls
    from test_resume import ASKED, paused_call

    link, server, _, paused = paused_call([ASKED])
    recorder = Stamping()
    link.engine.observer = recorder
    answers = {"which": ElicitResult.accept({"branch": "main"})}
    # as a traced paused call keeps it: the trace context of a span that has ended
    params = {**paused.continuation.params, "_meta": {"tenant": "t1", "traceparent": "00-stale-01"}}
    continuation = dataclasses.replace(paused.continuation, params=params)
    again = link.engine.resume(continuation, answers, link.now)
    link.pump()
    assert any(isinstance(e, CallSucceeded) and e.call_id == again for e in link.events)
    (started,) = recorder.started
    assert (started.method, started.tool, started.call_id) == ("tools/call", "echo", again)
    assert recorder.outcome("tools/call") == [(None, None)]
    resumed = calls(server)[-1]["params"]["_meta"]
    assert resumed["traceparent"] == f"00-{'0' * 32}-{again:016x}-01"
    assert resumed["tenant"] == "t1"  # the host's own keys of the paused call stay
