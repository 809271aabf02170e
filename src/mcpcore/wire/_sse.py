"""The incremental ``text/event-stream`` decoder (WHATWG rules; H3, H4, P6).

This module owns turning the bytes of one SSE response body, in chunks of any
size, into :class:`SSEEvent` values, and the two pieces of state SSE carries
across events: the last event id and the ``retry`` delay.

Theory of operation: bytes that do not yet end in a line terminator wait in a
buffer. Each :meth:`SSEDecoder.feed` searches only the bytes it just added for
the *last* terminator (``bytes.rfind``, in C), hands everything before it to
``bytes.splitlines`` (which splits on exactly CR, LF and CRLF, like SSE) and
keeps the rest. Nothing is searched twice, so the cost is linear in the input
however it is chunked, and large chunks are processed at C speed. A CR at the
very end of the input might be the first half of a CRLF; the decoder
remembers it and drops a LF that starts the next chunk.

One deliberate deviation from WHATWG: a block with an ``id`` but no ``data``
is dispatched as an event with empty data, because MCP servers send such
"priming" events to hand the client a resumption point (H4).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base._errors import LimitExceeded
from ..base._record import record

__all__ = ["SSEDecoder", "SSEEvent", "SSEOverrun"]

_BOM = b"\xef\xbb\xbf"
_DEFAULT_LIMIT = 64 * 1024 * 1024 + 1024
# A retry value longer than this is no delay anyone means; ignore it rather
# than build a huge integer.
_MAX_RETRY_DIGITS = 15
# Data values longer than this are decoded through a memoryview instead of a slice.
_COPY_THRESHOLD = 4096
# Input up to this size is split into lines by bytes.splitlines, larger by _split_lines.
# (splitlines costs little per line but looks at every byte in a plain loop;
# find is memchr-fast per byte but costs a Python call per line.)
_SPLITLINES_MAX = 2048


def _split_lines(data: bytes | bytearray, end: int) -> list[bytes | bytearray | memoryview]:
    """``data[:end].splitlines()`` at memchr speed; ``data[end - 1]`` is CR or LF.

    A line longer than ``_COPY_THRESHOLD`` comes as a ``memoryview`` of ``data``
    rather than a copy (a large message is one long ``data:`` line); the caller
    releases those views before ``data`` is resized.
    """
    lines: list[bytes | bytearray | memoryview] = []
    find = data.find
    view: memoryview | None = None
    pos = 0
    lf = -1  # the next LF at or after pos (end when there is none): found once, reused
    while pos < end:
        if lf < pos:
            lf = find(b"\n", pos, end)
            if lf < 0:
                lf = end
        # A CR is searched for only up to the next LF, so no byte is scanned twice.
        eol = find(b"\r", pos, lf)
        stop = lf if eol < 0 else eol
        if stop - pos > _COPY_THRESHOLD:
            if view is None:
                view = memoryview(data)
            lines.append(view[pos:stop])
        else:
            lines.append(data[pos:stop])
        if eol < 0:
            pos = lf + 1
        else:
            pos = eol + 2 if eol + 1 == lf else eol + 1
    if view is not None:
        view.release()  # the slices keep what they need
    return lines


@record(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    ``id`` and ``retry`` are the fields seen in this event's block (``None``
    when the block had none); the persistent values live on the decoder.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEOverrun(LimitExceeded):
    """A limit overrun, with the events the same bytes completed before it (P6).

    Fed whole, one chunk may complete an event and then overrun a limit; fed a
    byte at a time, that event comes out of an earlier :meth:`SSEDecoder.feed`
    before the overrun does. ``completed`` holds such events, in order: the
    caller handles them first and the overrun after, so how the network split
    the stream never changes what happens.
    """

    def __init__(self, limit_name: str, limit: int, what: str, completed: list[SSEEvent]) -> None:
        super().__init__(limit_name, limit, what)
        self.completed = completed


class SSEDecoder:
    """Decode a ``text/event-stream`` body fed in chunks of any size.

    ``max_line_size`` bounds one line (checked while it is still being
    buffered); ``max_event_size`` bounds one event's data. Overruns raise
    :class:`SSEOverrun` (a :class:`~mcpcore.LimitExceeded` carrying
    the events completed before the overrun), after which the decoder must not
    be fed again.
    """

    __slots__ = (
        "_at_start",
        "_block_id",
        "_block_retry",
        "_buf",
        "_data",
        "_data_size",
        "_event_type",
        "_max_event_size",
        "_max_line_size",
        "_skip_lf",
        "last_event_id",
        "retry",
    )

    def __init__(
        self,
        *,
        max_line_size: int = _DEFAULT_LIMIT,
        max_event_size: int = _DEFAULT_LIMIT,
    ) -> None:
        if max_line_size < 1 or max_event_size < 0:
            raise ValueError("SSE limits must be positive")
        self._max_line_size = max_line_size
        self._max_event_size = max_event_size
        #: The persistent last-event-id buffer ("" until an ``id`` field is seen).
        self.last_event_id = ""
        #: The last valid ``retry`` value in milliseconds, or ``None``.
        self.retry: int | None = None
        self._buf = bytearray()
        self._reset_stream()

    def _reset_stream(self) -> None:
        self._buf.clear()
        self._at_start = True  # a BOM may still come
        self._skip_lf = False  # the input so far ended with CR
        self._reset_block()

    def _reset_block(self) -> None:
        self._data: list[str] = []
        self._data_size = 0
        self._event_type = ""
        self._block_id: str | None = None
        self._block_retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add bytes from the stream; return the events they completed."""
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return []
        buf = self._buf
        data: bytes | bytearray
        if self._at_start:
            buf += chunk
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                return []  # could still be a BOM split across chunks
            self._at_start = False
            if buf.startswith(_BOM):
                del buf[: len(_BOM)]
            data, new_from = buf, 0
        elif buf:
            new_from = len(buf)
            buf += chunk
            data = buf
        else:
            data, new_from = chunk, 0  # nothing pending: no copy

        # Only the new bytes can hold a terminator; find the last one.
        lf = data.rfind(b"\n", new_from)
        cr = data.rfind(b"\r", max(new_from, lf + 1))
        last = cr if cr > lf else lf
        if last < 0:
            if data is chunk:
                buf += chunk
            if len(buf) > self._max_line_size:
                raise SSEOverrun("max_line_size", self._max_line_size, "an SSE line", [])
            return []
        end = last + 1
        if cr == last and end == len(data):
            self._skip_lf = True
        events = self._lines(data, end)
        if data is buf:
            del buf[:end]
        elif end < len(data):
            buf += data[end:]
        if len(buf) > self._max_line_size:
            raise SSEOverrun("max_line_size", self._max_line_size, "an SSE line", events)
        return events

    def _lines(self, data: bytes | bytearray, end: int) -> list[SSEEvent]:
        """Process the complete lines in ``data[:end]`` (which ends with a line terminator)."""
        lines: Sequence[bytes | bytearray | memoryview]
        if end <= _SPLITLINES_MAX:
            # One C call; bytes.splitlines splits on exactly CR, LF and CRLF.
            lines = (data if end == len(data) else data[:end]).splitlines()
            return self._process(lines)
        lines = _split_lines(data, end)
        try:
            return self._process(lines)
        finally:
            for line in lines:
                if type(line) is memoryview:
                    line.release()

    def _process(self, lines: Sequence[bytes | bytearray | memoryview]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        max_line = self._max_line_size
        max_event = self._max_event_size
        # The block state lives in locals while the lines are processed (this
        # loop is the hot path) and is stored back at the end.
        parts = self._data
        size = self._data_size
        event_type = self._event_type
        block_id = self._block_id
        block_retry = self._block_retry
        for line in lines:
            if not line:  # a blank line: dispatch
                if parts:
                    text = parts[0] if len(parts) == 1 else "\n".join(parts)
                elif block_id is not None:
                    text = ""  # a priming event: an id and no data (H4)
                else:
                    # Nothing to dispatch (only comments, retry or unknown
                    # fields); the event type still resets.
                    event_type = ""
                    block_retry = None
                    continue
                events.append(SSEEvent(text, event_type or "message", block_id, block_retry))
                parts = []
                size = 0
                event_type = ""
                block_id = block_retry = None
                continue
            length = len(line)
            if length > max_line:
                raise SSEOverrun("max_line_size", max_line, "an SSE line", events)
            if type(line) is memoryview:
                # A long line, not copied: a data value is decoded in place.
                if line[:5].tobytes() == b"data:":
                    vstart = 6 if line[5] == 0x20 else 5
                    size += length - vstart + 1
                    if size - 1 > max_event:
                        raise SSEOverrun("max_event_size", max_event, "an SSE event", events)
                    with line[vstart:] as part:
                        parts.append(str(part, "utf-8", "replace"))
                    continue
                line = line.tobytes()  # any other long line: rare, take the plain path
            field: bytes | bytearray
            if line.startswith(b"data:"):
                field = b"data"
                vstart = 5
            else:
                colon = line.find(b":")
                if colon == 0:
                    continue  # comment
                if colon < 0:
                    field = line
                    vstart = length
                else:
                    field = line[:colon]
                    vstart = colon + 1
            if vstart < length and line[vstart] == 0x20:
                vstart += 1
            if field == b"data":
                size += length - vstart + 1
                if size - 1 > max_event:
                    raise SSEOverrun("max_event_size", max_event, "an SSE event", events)
                if length - vstart > _COPY_THRESHOLD:
                    # Decode in place: slicing first would copy a large value once more.
                    with memoryview(line) as view, view[vstart:] as part:
                        parts.append(str(part, "utf-8", "replace"))
                else:
                    parts.append(line[vstart:].decode("utf-8", "replace"))
            elif field == b"id":
                value = line[vstart:]
                if b"\x00" not in value:
                    self.last_event_id = block_id = value.decode("utf-8", "replace")
            elif field == b"event":
                event_type = line[vstart:].decode("utf-8", "replace")
            elif field == b"retry":
                value = line[vstart:]
                if value.isdigit():
                    digits = value.lstrip(b"0")
                    if len(digits) <= _MAX_RETRY_DIGITS:
                        self.retry = block_retry = int(digits or b"0")
        self._data = parts
        self._data_size = size
        self._event_type = event_type
        self._block_id = block_id
        self._block_retry = block_retry
        return events

    def end(self) -> list[SSEEvent]:
        """Say the stream ended; return the events that completes (none, per WHATWG).

        An unterminated line or an event without its closing blank line is
        discarded. ``last_event_id`` and ``retry`` are kept, and the decoder is
        ready for the next stream (a resumed one, H4), BOM included.
        """
        self._reset_stream()
        return []
