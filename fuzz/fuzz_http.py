"""Fuzz the Streamable HTTP mapping's response consumption (``mcpcore.wire._http``).

A script read from the input answers the mapping's requests, in order, with
arbitrary statuses, headers, body chunks and endings (end, connection failure,
or nothing more), while the clock moves so resumes fire; now and then a new
request, notification or abandon is sent. The script runs twice: with the
chunks as given, and with every chunk split into single bytes.

Invariants:

* nothing escapes the mapping: server input only ever becomes upward items;
* every failure is a ``RemoteProtocolError`` or ``TransportError`` whose text
  holds no raw control character and never the configured header's secret;
* both runs give the same upward items and the same actions (chunking is
  invisible);
* buffers stay within the configured limits: a JSON body within
  ``max_message_size``, an error excerpt within 512 bytes, the SSE decoder's
  pending line within the SSE line limit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore.base._errors import McpError, RemoteProtocolError, TransportError
from mcpcore.base._events import AbortExchange, HttpRequest
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.wire._http import (
    HttpLimits,
    HttpMapping,
    MessageArrived,
    RequestFailed,
    SessionExpired,
)
from mcpcore.wire._jsonrpc import Notification, Request, Result

URL = "https://mcp.example.test/mcp"
_STATUSES = (200, 200, 200, 200, 202, 204, 201, 301, 307, 400, 401, 404, 405, 409, 500, 503, 100, 999)
_TYPES = (
    b"text/event-stream",
    b"text/event-stream",
    b"application/json",
    b"application/json; charset=utf-8",
    b"Text/Event-Stream ; x=1",
    b"text/html",
    b"",
    None,
)
_CONTROLS = {chr(c) for c in range(32)} - {"\t"} | {"\x7f"}


@dataclass(frozen=True)
class Reply:
    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    chunks: tuple[bytes, ...]
    finish: int  # 0 end, 1 connection failed, 2 nothing more


@dataclass(frozen=True)
class Step:
    kind: str  # "reply", "send", "note", "abandon", "tick"
    reply: Reply | None = None
    value: int = 0


_CANNED = (
    b'data: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}\n\n',
    b"id: a1\nretry: 10\ndata: \n\n",
    b'id: b2\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n',
    b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}',
    b'data: {"jsonrpc":"2.0","id":"x","method":"ping"}\n\n',
    b": keepalive\r\n\r\n",
    b"data: {not json\n\n",
)


def _script(r: Reader) -> list[Step]:
    steps: list[Step] = []
    while r.left and len(steps) < 40:
        op = r.u8() % 16
        if op < 10:
            status = r.choice(_STATUSES)
            headers: list[tuple[bytes, bytes]] = []
            content_type = r.choice(_TYPES)
            if content_type is not None:
                headers.append((b"content-type", content_type))
            if r.flag():
                headers.append((b"Mcp-Session-Id", r.choice((b"s-1", b"s-2", b"\x1b[31m"))))
            chunks = []
            for _ in range(r.u8() % 8):
                chunks.append(r.choice(_CANNED) if r.u8() % 3 == 0 else r.blob(2048))
            steps.append(Step("reply", Reply(status, tuple(headers), tuple(chunks), r.u8() % 3)))
        elif op == 10:
            steps.append(Step("send", value=r.u8() % 8 + 2))
        elif op == 11:
            steps.append(Step("note"))
        elif op == 12:
            steps.append(Step("abandon", value=r.u8() % 8 + 1))
        else:
            steps.append(Step("tick", value=r.u8()))
    return steps


def _shown(item: Any) -> Any:
    if isinstance(item, MessageArrived):
        return ("message", item.message)
    if isinstance(item, RequestFailed):
        return ("failed", item.request_id, type(item.error).__name__, str(item.error))
    if isinstance(item, SessionExpired):
        return ("expired", tuple(item.resend))
    raise AssertionError(f"unknown upward item {item!r}")


def _check_error(error: McpError) -> None:
    assert isinstance(error, (RemoteProtocolError, TransportError)), repr(error)
    text = str(error)
    assert SECRET not in text, text
    assert not _CONTROLS & set(text), f"raw control character in {text!r}"


def _check_bounds(mapping: HttpMapping) -> None:
    limits = mapping.limits
    for ex in mapping._exchanges.values():
        if ex.mode.value == "json":
            assert len(ex.body) <= limits.max_message_size, "JSON body over max_message_size"
        elif ex.mode.value == "error":
            # an excerpt of 512 bytes, or a JSON error body read whole up to 64 KiB (M9)
            assert len(ex.body) <= (64 * 1024 if ex.json_error else 512), "error body over its bound"
        if ex.decoder is not None:
            assert len(ex.decoder._buf) <= limits.max_sse_line, "SSE line over max_sse_line"
            assert len(ex.decoder._buf) <= limits.max_message_size + 1024


def run(steps: list[Step], limits: HttpLimits, split: bool) -> tuple[list[Any], list[Any]]:
    """Run the script; returns (actions, upward items), each in order.

    The two are kept apart: how actions interleave with upward items depends
    on when they are taken, not on what the mapping decided.
    """
    mapping = HttpMapping(URL, [("Authorization", f"Bearer {SECRET}")], limits=limits)
    now = 100.0
    log: list[Any] = []  # actions
    upward: list[Any] = []
    pending: list[int] = []

    def collect() -> None:
        for action in mapping.take_actions():
            if isinstance(action, HttpRequest):
                pending.append(action.exchange_id)
                log.append(("request", action.method, tuple(action.headers)))
            else:
                assert isinstance(action, AbortExchange)
                if action.exchange_id in pending:
                    pending.remove(action.exchange_id)
                log.append(("abort", action.exchange_id))
        for item in mapping.take_upward():
            if isinstance(item, RequestFailed):
                _check_error(item.error)
            upward.append(_shown(item))
        _check_bounds(mapping)

    try:
        mapping.send(Request(id=1, method="initialize", params={"protocolVersion": "2025-11-25"}), now)
        collect()
        for step in steps:
            if step.kind == "reply" and pending:
                reply = step.reply
                assert reply is not None
                xid = pending.pop(0)
                mapping.response_started(xid, reply.status, list(reply.headers), now)
                collect()
                for chunk in reply.chunks:
                    pieces = [chunk[i : i + 1] for i in range(len(chunk))] if split else [chunk]
                    for piece in pieces:
                        mapping.response_data(xid, piece, now)
                        collect()
                if reply.finish == 0:
                    mapping.response_ended(xid, now)
                elif reply.finish == 1:
                    mapping.response_failed(xid, TransportFailure(FailureKind.RESET), now)
                collect()
            elif step.kind == "send":
                mapping.protocol_version = "2025-11-25"
                mapping.send(Request(id=step.value, method="tools/call", params={"name": "t"}), now)
            elif step.kind == "note":
                mapping.send(Notification(method="notifications/initialized"), now)
            elif step.kind == "abandon":
                mapping.abandon(step.value)
            elif step.kind == "tick":
                now += step.value / 50.0
                mapping.handle_timer(now)
            else:  # a reply with no request waiting: answer a late result instead
                mapping.send(Result(id="srv", result={}), now)
            collect()
        mapping.drop_exchanges()
        mapping.end_session()
        collect()
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("HttpMapping", exc)
    log.append(("session", mapping.session_id))
    return log, upward


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    size = r.choice((64, 300, 4096, 1 << 20))
    limits = HttpLimits(
        max_message_size=size,
        max_sse_line=r.choice((80, 1000, size + 1024)),
        max_reconnects=r.u8() % 3,
        default_retry=0.5,
    )
    steps = _script(r)
    whole = run(steps, limits, split=False)
    single = run(steps, limits, split=True)
    for kind, a, b in (("actions", whole[0], single[0]), ("upward", whole[1], single[1])):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            assert x == y, f"chunking changed the {kind} at #{i}: whole {x!r:.300}, bytes {y!r:.300}"
        assert len(a) == len(b), f"chunking changed the number of {kind}: {len(a)} vs {len(b)}"


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
