"""Newline-delimited framing for the stdio transport (S1, P6).

This module owns cutting a child's stdout into message lines and framing
outgoing messages as lines. It knows nothing of JSON: a line is handed on as
bytes, for the JSON-RPC codec to judge.

Each :meth:`LineFramer.feed` searches only the bytes it just added for the last
``\\n`` and splits everything before it in one C call, so the cost is linear in
the input however it is chunked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from ._errors import LimitExceeded, LocalProtocolError
from ._escape import excerpt

__all__ = ["LineFramer", "StderrTail", "frame_message"]

_TAIL_LINES = 5
_TAIL_LINE_CHARS = 200
_REDACTED = "***"


def frame_message(data: bytes) -> bytes:
    """Return ``data`` as one stdio frame (``data`` plus ``\\n``).

    Raises :class:`LocalProtocolError` if ``data`` itself contains a newline,
    which would split it into two frames. Compact JSON from
    :func:`mcpcore.encode_message` never does.
    """
    if b"\n" in data:
        raise LocalProtocolError("a stdio message may not contain a newline byte")
    return data + b"\n"


class LineFramer:
    """Split a byte stream into lines ending in ``\\n`` (a ``\\r`` before it is dropped).

    Blank lines are skipped. A line longer than ``max_line_size`` bytes raises
    :class:`~mcpcore._errors.LimitExceeded` (checked while it is still being
    buffered), after which the framer must not be fed again.
    """

    __slots__ = ("_buf", "_max_line_size")

    def __init__(self, *, max_line_size: int = 64 * 1024 * 1024) -> None:
        if max_line_size < 1:
            raise ValueError("max_line_size must be positive")
        self._max_line_size = max_line_size
        self._buf = bytearray()

    def _too_long(self) -> LimitExceeded:
        return LimitExceeded("max_line_size", self._max_line_size, "a stdio line")

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add bytes from the stream; return the complete, non-blank lines."""
        buf = self._buf
        if buf:
            new_from = len(buf)
            buf += chunk
            last = buf.rfind(b"\n", new_from)
            if last < 0:
                if len(buf) > self._max_line_size:
                    raise self._too_long()
                return []
            pieces = bytes(buf[:last]).split(b"\n")
            del buf[: last + 1]
        else:
            last = chunk.rfind(b"\n")
            if last < 0:
                buf += chunk
                if len(buf) > self._max_line_size:
                    raise self._too_long()
                return []
            pieces = chunk[:last].split(b"\n")
            buf += chunk[last + 1 :]
        if len(buf) > self._max_line_size:
            raise self._too_long()
        lines: list[bytes] = []
        for line in pieces:
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self._max_line_size:
                raise self._too_long()
            if line and not line.isspace():
                lines.append(line)
        return lines

    def end(self) -> list[bytes]:
        """Say the stream ended; return its last line if it had no ``\\n`` and is not blank."""
        line = bytes(self._buf)
        self._buf.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if line and not line.isspace():
            return [line]
        return []


class StderrTail:
    """The last lines a child wrote to stderr, kept to say why it died (S1, C8, X1).

    A driver feeds every stderr line; ``reason(what)`` words a transport loss
    with the last few of them, each escaped and cut short, with every value of
    the child's own environment entry replaced by ``***`` (a server that prints
    its configuration must not put a token in a reason).
    """

    __slots__ = ("_lines", "_secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a value that contains another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self._lines: deque[str] = deque(maxlen=_TAIL_LINES)

    def add(self, line: str) -> None:
        line = line.rstrip("\r\n")
        if line.strip():
            self._lines.append(line[: _TAIL_LINE_CHARS * 8])

    def redact(self, line: str) -> str:
        """``line`` with every value of the child's env entry replaced by ``***`` (C8)."""
        for secret in self._secrets:
            line = line.replace(secret, _REDACTED)
        return line

    def reason(self, what: str) -> str:
        """``what`` (say, "the server process closed its output"), with the stderr tail."""
        if not self._lines:
            return what
        shown = [excerpt(self.redact(line), _TAIL_LINE_CHARS) for line in self._lines]
        return f"{what}; its last words on stderr: " + " | ".join(shown)
