"""The SSE decoder: WHATWG text/event-stream rules under any chunking (H3), event ids,
priming events and retry for resumption (H4), bounded lines and events (P6)."""

from __future__ import annotations

import itertools
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import LimitExceeded, RemoteProtocolError, SSEDecoder, SSEEvent
from mcpcore.wire._sse import SSEOverrun

BOM = b"\xef\xbb\xbf"


def decode(data: bytes, **limits: int) -> tuple[list[SSEEvent], str, int | None]:
    decoder = SSEDecoder(**limits)
    events = decoder.feed(data)
    events += decoder.end()
    return events, decoder.last_event_id, decoder.retry


def decode_chunks(chunks: list[bytes], **limits: int) -> tuple[list[SSEEvent], str, int | None]:
    decoder = SSEDecoder(**limits)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    events += decoder.end()
    return events, decoder.last_event_id, decoder.retry


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# --- a plain second implementation, straight from the WHATWG text ---------------

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)")


def reference(data: bytes) -> tuple[list[SSEEvent], str, int | None]:
    if data.startswith(BOM):
        data = data[3:]
    text = data.decode("utf-8", "replace")
    events: list[SSEEvent] = []
    last_id, retry = "", None
    buffer: str | None = None
    etype, block_id, block_retry = "", None, None
    for match in _LINE.finditer(text):
        line = match.group(1)
        if line == "":
            if buffer is not None:
                events.append(SSEEvent(buffer[:-1], etype or "message", block_id, block_retry))
            elif block_id is not None:
                events.append(SSEEvent("", etype or "message", block_id, block_retry))
            buffer, etype, block_id, block_retry = None, "", None, None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            buffer = (buffer or "") + value + "\n"
        elif name == "event":
            etype = value
        elif name == "id" and "\0" not in value:
            last_id = block_id = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = block_retry = int(value)
    return events, last_id, retry


# --- examples ---------------------------------------------------------------------


def test_h3_basic_event_and_multiline_data() -> None:
    """H3: data lines join with "\\n"; the type defaults to "message"."""
    events, last_id, retry = decode(b"data: a\ndata:  b\ndata\n\nevent: x\ndata: c\n\n")
    assert events == [SSEEvent(data="a\n b\n"), SSEEvent(data="c", event="x")]
    assert (last_id, retry) == ("", None)


def test_h3_line_endings_any_mix() -> None:
    """H3: CR, LF and CRLF each end a line, mixed freely."""
    events, _, _ = decode(b"data: 1\r\rdata: 2\n\ndata: 3\r\n\r\ndata: 4\r\ndata: 5\r\n\r\n")
    assert [e.data for e in events] == ["1", "2", "3", "4\n5"]


def test_h3_cr_at_chunk_end_then_lf_is_one_line_end() -> None:
    """H3: a CR ending one chunk and a LF starting the next make one line end, not two."""
    chunks = [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]
    events, _, _ = decode_chunks(chunks)
    assert events == [SSEEvent(data="a\nb")]
    # The LF may also arrive alone, or after an empty chunk.
    assert decode_chunks([b"data: a\r", b"", b"\n", b"\r", b"\n"])[0] == [SSEEvent(data="a")]
    # A CR then a non-LF chunk: the CR alone was the line end.
    assert decode_chunks([b"data: a\r", b"\r"])[0] == [SSEEvent(data="a")]


def test_h3_bom_stripped_once_even_split() -> None:
    """H3: one leading UTF-8 BOM is dropped, also when split across chunks; a second is data."""
    data = BOM + b"data: x\n\n"
    assert decode(data)[0] == [SSEEvent(data="x")]
    assert decode_chunks(bytewise(data))[0] == [SSEEvent(data="x")]
    assert decode_chunks([BOM[:2], BOM[2:] + b"data: x\n\n"])[0] == [SSEEvent(data="x")]
    # A second BOM is not stripped: the field name then is not "data".
    assert decode(BOM + BOM + b"data: x\n\n")[0] == []
    # A prefix of a BOM that turns out not to be one is kept.
    assert decode_chunks([b"\xef", b"data: x\n\n"])[0] == []
    assert decode_chunks([b"da", b"ta: x\n\n"])[0] == [SSEEvent(data="x")]


def test_h3_comments_unknown_fields_and_no_colon() -> None:
    """H3: comments and unknown fields are ignored; a line without colon is a field name."""
    events, _, _ = decode(b": hello\nfoo: bar\ndata\nevent\n\n")
    assert events == [SSEEvent(data="")]
    assert decode(b": only a comment\n\n")[0] == []


def test_h3_only_one_leading_space_stripped() -> None:
    """H3: exactly one space after the colon is removed; colons in the value stay."""
    assert decode(b"data:   x: y\n\n")[0] == [SSEEvent(data="  x: y")]
    assert decode(b"data:x\n\n")[0] == [SSEEvent(data="x")]


def test_h3_event_type_resets_after_dispatch_and_empty_means_message() -> None:
    """H3: the type applies to one event; an empty type is "message"."""
    events, _, _ = decode(b"event: a\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\n")
    assert [e.event for e in events] == ["a", "message", "message"]
    # A block that dispatches nothing still resets the type.
    events, _, _ = decode(b"event: a\n\ndata: 1\n\n")
    assert events == [SSEEvent(data="1")]


def test_h4_ids_persist_and_belong_to_their_block() -> None:
    """H4: last_event_id persists; SSEEvent.id is the id seen in its own block."""
    decoder = SSEDecoder()
    events = decoder.feed(b"id: 1\ndata: a\n\ndata: b\n\n")
    assert events == [SSEEvent(data="a", id="1"), SSEEvent(data="b")]
    assert decoder.last_event_id == "1"


def test_h4_priming_event_with_only_an_id() -> None:
    """H4: a block with an id and no data is dispatched as a priming event with data ""."""
    events, last_id, _ = decode(b"id: abc\nretry: 500\n\ndata: x\n\n")
    assert events == [SSEEvent(data="", id="abc", retry=500), SSEEvent(data="x")]
    assert last_id == "abc"
    # An empty id is still an id field (it resets the last event id).
    assert decode(b"id: z\n\nid\n\n") == (
        [SSEEvent(data="", id="z"), SSEEvent(data="", id="")],
        "",
        None,
    )


def test_h4_id_with_nul_is_ignored() -> None:
    """H4: an id containing NUL is ignored entirely (and so makes no priming event)."""
    events, last_id, _ = decode(b"id: good\n\nid: b\x00d\n\nid: b\x00d\ndata: x\n\n")
    assert events == [SSEEvent(data="", id="good"), SSEEvent(data="x")]
    assert last_id == "good"


def test_h4_retry_only_all_digits() -> None:
    """H4: retry counts only when every character is an ASCII digit; it is remembered."""
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 1500\n\n") == []  # retry alone dispatches nothing
    assert decoder.retry == 1500
    for bad in (
        b"retry: 1.5\n",
        b"retry: -1\n",
        b"retry:\n",
        b"retry: 1 \n",
        "retry: ١٢\n".encode(),
    ):
        decoder.feed(bad)
    decoder.feed(b"retry\n\n")
    assert decoder.retry == 1500
    decoder.feed(b"retry: 0002\ndata: x\n\n")
    assert decoder.retry == 2
    # Absurdly long values are ignored rather than turned into huge integers.
    decoder.feed(b"retry: " + b"9" * 5000 + b"\n")
    assert decoder.retry == 2
    decoder.feed(b"retry: " + b"0" * 5000 + b"7\n")
    assert decoder.retry == 7


def test_h3_invalid_utf8_is_replaced() -> None:
    """H3: each line is decoded as UTF-8 with replacement characters."""
    assert decode(b"data: a\xffb\n\n")[0] == [SSEEvent(data="a\ufffdb")]


def test_h4_incomplete_event_at_end_is_discarded_and_decoder_reusable() -> None:
    """H4: end() drops a partial event and line, keeps id and retry, re-arms the BOM."""
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 7\nretry: 10\ndata: partial\n") == []
    assert decoder.feed(b"data: unterminated") == []
    assert decoder.end() == []
    assert (decoder.last_event_id, decoder.retry) == ("7", 10)
    assert decoder.feed(BOM + b"data: next\n\n") == [SSEEvent(data="next")]


def test_h3_feed_empty_chunk() -> None:
    """H3: an empty chunk changes nothing."""
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: x\n") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n") == [SSEEvent(data="x")]


# --- chunking invariance ------------------------------------------------------------

_ends = st.sampled_from([b"\r", b"\n", b"\r\n"])
_value = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=12).map(
    lambda s: s.encode()
)
_digits = st.text("0123456789", min_size=1, max_size=6).map(str.encode)
_line = st.one_of(
    st.builds(lambda v: b"data: " + v, _value),
    st.builds(lambda v: b"data:" + v, _value),
    st.just(b"data"),
    st.builds(lambda v: b"event: " + v, _value),
    st.builds(lambda v: b"id: " + v, _value),
    st.just(b"id: a\x00b"),
    st.builds(lambda v: b"retry: " + v, _digits),
    st.builds(lambda v: b"retry: " + v, _value),
    st.builds(lambda v: b":" + v, _value),
    st.builds(lambda v: b"other: " + v, _value),
    st.just(b"\xff\xfe: bad utf8 \xc3"),
    st.just(b""),
    st.just(b""),
)
streams = st.builds(
    lambda bom, lines, tail: (
        (BOM if bom else b"") + b"".join(line + end for line, end in lines) + tail
    ),
    st.booleans(),
    st.lists(st.tuples(_line, _ends), max_size=30),
    st.sampled_from([b"", b"data: unterminated", b"\r", b"id: 9"]),
)


@st.composite
def chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(streams)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return data, [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(chunked())
@settings(max_examples=400)
def test_h3_chunking_invariance(case: tuple[bytes, list[bytes]]) -> None:
    """H3/H4: any split of the same bytes gives the same events, last_event_id and retry,
    and those match a plain implementation of the WHATWG rules."""
    data, chunks = case
    whole = decode(data)
    assert decode_chunks(chunks) == whole
    assert decode_chunks(bytewise(data)) == whole
    assert whole == reference(data)


# --- limits (P6) ---------------------------------------------------------------------


def test_p6_line_limit_checked_while_buffering() -> None:
    """P6: a line over max_line_size raises before its line end arrives."""
    decoder = SSEDecoder(max_line_size=100)
    decoder.feed(b"data: " + b"x" * 90)
    with pytest.raises(LimitExceeded) as info:
        decoder.feed(b"x" * 20)
    assert info.value.limit_name == "max_line_size"
    assert info.value.limit == 100
    assert isinstance(info.value, RemoteProtocolError)
    assert "max_line_size" in str(info.value)


def test_p6_line_limit_on_complete_lines() -> None:
    """P6: a complete over-long line in one chunk, and an over-long tail, both raise."""
    with pytest.raises(LimitExceeded, match="max_line_size"):
        SSEDecoder(max_line_size=10).feed(b"data: 0123456789\n\n")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        SSEDecoder(max_line_size=10).feed(b"data: x\n\ndata: 0123456789")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        SSEDecoder(max_line_size=10).feed(b"0123456789A")  # at stream start
    decoder = SSEDecoder(max_line_size=10)
    decoder.feed(b"data:")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        decoder.feed(b" 0123\n\ndata: 0123456789")
    # Exactly at the limit is fine.
    assert SSEDecoder(max_line_size=10).feed(b"data: 0123\n\n") == [SSEEvent(data="0123")]


def test_p6_event_limit() -> None:
    """P6: an event whose data exceeds max_event_size raises, naming the limit."""
    decoder = SSEDecoder(max_event_size=10)
    assert decoder.feed(b"data: 01234\ndata: 0123\n\n") == [SSEEvent(data="01234\n0123")]
    with pytest.raises(LimitExceeded) as info:
        decoder.feed(b"data: 01234\ndata: 01234\n\n")
    assert info.value.limit_name == "max_event_size"


def _outcome(chunks: list[bytes], line: int, event: int) -> tuple[list[SSEEvent], str | None]:
    """Every event the decoder gave, those an overrun carried included, then the
    overrun's limit name (or ``None``)."""
    decoder = SSEDecoder(max_line_size=line, max_event_size=event)
    events: list[SSEEvent] = []
    for chunk in chunks:
        try:
            events += decoder.feed(chunk)
        except SSEOverrun as overrun:
            return [*events, *overrun.completed], overrun.limit_name
    return events, None


def test_p6_an_overrun_carries_the_events_completed_before_it() -> None:
    """P6: one chunk that completes an event and then overruns gives that event
    first (as byte-at-a-time feeding would), then the overrun."""
    with pytest.raises(SSEOverrun) as info:
        SSEDecoder(max_event_size=10).feed(b"data: {bad\n\ndata: 0123456789AB\n\n")
    assert info.value.completed == [SSEEvent(data="{bad")]
    assert info.value.limit_name == "max_event_size"
    with pytest.raises(SSEOverrun) as info:
        SSEDecoder(max_line_size=10).feed(b"data: x\n\ndata: 0123456789")
    assert info.value.completed == [SSEEvent(data="x")]


@given(chunked(), st.integers(1, 40), st.integers(0, 40))
@settings(max_examples=400)
def test_p6_limits_are_chunking_invariant(
    case: tuple[bytes, list[bytes]], line: int, event: int
) -> None:
    """P6: the events and the limit that stops them are the same however the
    network splits the bytes, so a limit cannot be slipped past by chunking."""
    data, chunks = case
    whole = _outcome([data], line, event)
    assert _outcome(chunks, line, event) == whole
    assert _outcome(bytewise(data), line, event) == whole


def test_p6_limits_must_be_sane() -> None:
    """P6: a nonsensical bound is refused at construction."""
    with pytest.raises(ValueError):
        SSEDecoder(max_line_size=0)


# --- linear time and big payloads ---------------------------------------------------------


def _bytewise_seconds(data: bytes) -> float:
    decoder = SSEDecoder()
    chunks = bytewise(data)  # one-byte slices are cached singletons: cheap to hold
    start = time.perf_counter()
    events = sum(map(len, map(decoder.feed, chunks)))
    elapsed = time.perf_counter() - start
    assert events >= 1
    return elapsed


def test_h3_linear_time_byte_at_a_time() -> None:
    """H3/P6: 1 MB fed one byte at a time costs about 10x what 100 KB does, not 100x."""

    def stream(size: int) -> bytes:
        # One big data line (the case a rescanning buffer turns quadratic) and many small lines.
        half = size // 2
        small = b"data: x\r\n\r\nid: 1\r" * (half // 16)
        return b"data: " + b"y" * half + b"\n\n" + small

    small = _bytewise_seconds(stream(100_000))
    big = _bytewise_seconds(stream(1_000_000))
    assert big / small < 25, (big, small)


def test_h3_big_line_in_chunks_and_many_lines_in_one_chunk() -> None:
    """H3: a 2 MB data line in 64 KB chunks, and 200k short lines in one chunk, decode correctly."""
    payload = b"z" * 2_000_000
    data = b"data: " + payload + b"\r\n\r\n"
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for i in range(0, len(data), 65536):
        events += decoder.feed(data[i : i + 65536])
    assert events == [SSEEvent(data=payload.decode())]
    many = b"data: a\r" * 200_000 + b"\r"
    (event,) = SSEDecoder().feed(many)
    assert event.data.count("\n") == 199_999
