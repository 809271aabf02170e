"""Fuzz the incremental SSE decoder (``mcpcore.wire._sse``).

Invariants, for any bytes and any limits:

* only ``LimitExceeded`` (a ``RemoteProtocolError``) escapes ``feed``/``end``;
* the input fed whole, one byte at a time, and in input-chosen chunks gives the
  same events, ``last_event_id`` and ``retry`` (or the same limit error);
* without a limit error, the events equal those of a plain reference
  implementation of the WHATWG rules (plus MCP's priming events);
* the pending buffer never exceeds ``max_line_size`` and one event's data
  never exceeds ``max_event_size``.

Input layout: byte 0 picks the limits, byte 1 the chunk sizes; the rest is the body.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import _fuzzlib

from mcpcore.base._errors import LimitExceeded
from mcpcore.wire._sse import SSEDecoder, SSEEvent

_BOM = b"\xef\xbb\xbf"
_LIMITS = ((1 << 30, 1 << 30), (16, 1 << 30), (1 << 30, 16), (64, 64), (1, 0), (200, 100))


def reference(body: bytes) -> tuple[list[SSEEvent], str, int | None]:
    """WHATWG event-stream interpretation, written plainly (complete lines only)."""
    if body.startswith(_BOM):
        body = body[len(_BOM) :]
    lines = re.split(rb"\r\n|\r|\n", body)[:-1]  # the last piece is unterminated
    events: list[SSEEvent] = []
    last_id = ""
    retry: int | None = None
    data: list[str] = []
    event_type = ""
    block_id: str | None = None
    block_retry: int | None = None
    for line in lines:
        if not line:
            if data or block_id is not None:
                events.append(SSEEvent("\n".join(data), event_type or "message", block_id, block_retry))
            data, event_type, block_id, block_retry = [], "", None, None
            continue
        if line.startswith(b":"):
            continue
        field, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            data.append(value.decode("utf-8", "replace"))
        elif field == b"event":
            event_type = value.decode("utf-8", "replace")
        elif field == b"id":
            if b"\x00" not in value:
                last_id = block_id = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit() and len(value.lstrip(b"0")) <= 15:
            retry = block_retry = int(value)
    return events, last_id, retry


def _run(body: bytes, sizes: list[int], limits: tuple[int, int]) -> tuple[str, Any]:
    decoder = SSEDecoder(max_line_size=limits[0], max_event_size=limits[1])
    events: list[SSEEvent] = []
    pos = 0
    i = 0
    try:
        while pos < len(body):
            size = sizes[i % len(sizes)] if sizes else len(body)
            i += 1
            events.extend(decoder.feed(body[pos : pos + size]))
            pos += size
            # A BOM still arriving (at most 2 of its 3 bytes) is not line content.
            slack = len(_BOM) - 1 if decoder._at_start else 0
            assert len(decoder._buf) <= limits[0] + slack, "pending buffer over max_line_size"
            assert decoder._data_size <= limits[1] + 1, "event data over max_event_size"
        events.extend(decoder.end())
    except LimitExceeded as exc:
        assert exc.limit_name in ("max_line_size", "max_event_size"), exc
        return "error", exc.limit_name
    except Exception as exc:
        _fuzzlib.raise_unexpected("SSEDecoder", exc)
    # After end() the decoder is ready for a resumed stream, state kept.
    return "ok", (events, decoder.last_event_id, decoder.retry)


def fuzz_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    limits = _LIMITS[data[0] % len(_LIMITS)]
    seed = data[1]
    body = data[2:]
    whole = _run(body, [], limits)
    single = _run(body, [1], limits)
    chunked = _run(body, [1 + (seed >> 4), 1 + (seed & 15), 3], limits)
    assert whole == single, (whole, single)
    assert whole == chunked, (whole, chunked)
    if whole[0] == "ok" and limits[0] >= 1 << 30:
        expected = reference(body)
        assert whole[1] == expected, (whole[1], expected)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
