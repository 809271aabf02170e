"""stdio framing: newline-delimited JSON-RPC (S1), bounded lines (P6)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import (
    LimitExceeded,
    LineFramer,
    LocalProtocolError,
    Request,
    decode_message,
    encode_message,
    frame_message,
)


def test_s1_lines_split_on_newline() -> None:
    """S1: each complete line is one message; the tail waits for its newline."""
    framer = LineFramer()
    assert framer.feed(b'{"a":1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert framer.feed(b":3}") == []
    assert framer.feed(b"\n") == [b'{"c":3}']
    assert framer.end() == []


def test_s1_crlf_and_blank_lines() -> None:
    """S1: a CR before the newline is dropped; blank and whitespace-only lines are skipped."""
    framer = LineFramer()
    assert framer.feed(b"one\r\n\r\n\n  \ntwo\n\r\n") == [b"one", b"two"]
    assert framer.feed(b"three\r") == []
    assert framer.feed(b"\nfour\n") == [b"three", b"four"]


def test_s1_end_returns_unterminated_last_line() -> None:
    """S1: at end of stream a final line without newline is still a message."""
    framer = LineFramer()
    assert framer.feed(b"a\nlast") == [b"a"]
    assert framer.end() == [b"last"]
    assert framer.end() == []
    framer.feed(b"tail\r")
    assert framer.end() == [b"tail"]
    framer.feed(b"  ")
    assert framer.end() == []


def test_s1_frame_message() -> None:
    """S1: a frame is the message plus a newline; a newline inside is refused."""
    assert frame_message(b'{"x":1}') == b'{"x":1}\n'
    with pytest.raises(LocalProtocolError, match="newline"):
        frame_message(b"a\nb")


def test_s1_round_trip_through_framing() -> None:
    """S1: encoded messages framed, concatenated and re-split decode to themselves."""
    messages = [Request(id=i, method="m", params={"text": "a\nb\r\n☃"}) for i in range(5)]
    stream = b"".join(frame_message(encode_message(m)) for m in messages)
    framer = LineFramer()
    lines = [line for i in range(len(stream)) for line in framer.feed(stream[i : i + 1])]
    assert [decode_message(line) for line in lines] == messages


@given(
    st.lists(
        st.binary(min_size=1).filter(
            lambda b: b"\n" not in b and not b.endswith(b"\r") and not b.isspace()
        )
    ),
    st.data(),
)
@settings(max_examples=200)
def test_s1_chunking_invariance(lines: list[bytes], data: st.DataObject) -> None:
    """S1: any split of a stream gives the same lines."""
    stream = b"".join(frame_message(line) for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    bounds = [0, *cuts, len(stream)]
    framer = LineFramer()
    got: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        got += framer.feed(stream[a:b])
    got += framer.end()
    assert got == lines


def test_p6_line_limit() -> None:
    """P6: a line over max_line_size raises LimitExceeded naming the bound, even unterminated."""
    framer = LineFramer(max_line_size=8)
    framer.feed(b"12345")
    with pytest.raises(LimitExceeded) as info:
        framer.feed(b"6789")
    assert info.value.limit_name == "max_line_size"
    assert info.value.limit == 8
    with pytest.raises(LimitExceeded, match="max_line_size"):
        LineFramer(max_line_size=8).feed(b"123456789")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        LineFramer(max_line_size=8).feed(b"123456789\n")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        LineFramer(max_line_size=8).feed(b"ok\n123456789")
    framer = LineFramer(max_line_size=8)
    framer.feed(b"1234")
    with pytest.raises(LimitExceeded, match="max_line_size"):
        framer.feed(b"5\n123456789")
    # Exactly at the limit (a CR before the newline does not count) is fine.
    assert LineFramer(max_line_size=8).feed(b"12345678\r\n") == [b"12345678"]
    with pytest.raises(ValueError):
        LineFramer(max_line_size=0)


def test_s1_linear_byte_at_a_time() -> None:
    """S1/P6: feeding one byte at a time is linear (10x input, about 10x time)."""

    def seconds(size: int) -> float:
        stream = b"x" * (size // 2) + b"\n" + b"ab\r\n" * (size // 8)
        framer = LineFramer()
        start = time.perf_counter()
        for i in range(len(stream)):
            framer.feed(stream[i : i + 1])
        return time.perf_counter() - start

    small = min(seconds(50_000) for _ in range(2))
    assert seconds(500_000) / small < 25


# --- why a child died: the tail of its stderr ---------------------------------------------------


def test_S1_C8_X1_stderr_tail_words_a_death_escaped_bounded_and_without_env_values() -> None:
    """S1, C8, X1: the reason names the child's last stderr lines — the last five,
    each escaped and cut short, with the values of its env entry replaced."""
    from mcpcore.wire._stdio import StderrTail

    tail = StderrTail(secrets=["s3cr3t-token", "ab"])  # too short to redact: kept
    assert tail.reason("the server process closed its output") == "the server process closed its output"
    for i in range(10):
        tail.add(f"line {i}\n")
    tail.add("   ")  # blank lines are not words
    tail.add("Traceback: token=s3cr3t-token ab \x1b[31mred\x1b[0m " + "z" * 5000)
    reason = tail.reason("the server process closed its output")
    assert reason.startswith("the server process closed its output; its last words on stderr: line 6 | ")
    assert "line 5" not in reason and "s3cr3t-token" not in reason and "token=*** ab" in reason
    assert "\x1b" not in reason and "\\x1b[31mred" in reason
    assert len(reason) < 1000 and reason.endswith("…")
