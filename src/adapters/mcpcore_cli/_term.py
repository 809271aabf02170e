"""Terminal output for the command line: escaping, colour, tables, JSON, redaction.

Everything a server sends is untrusted (X1): before it reaches a terminal it goes
through :func:`show` (control characters and escape sequences become visible
``\\xNN`` escapes). JSON output is produced by :func:`dumps`, which leaves no raw
control, C1 or bidi character in the text. Header values (secrets) are removed
from everything written to stderr by :class:`Redactor`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from mcpcore import escape_text

__all__ = [
    "Redactor",
    "Style",
    "cut",
    "dumps",
    "isatty",
    "one_line",
    "quote",
    "show",
    "table",
    "terminal_width",
    "width",
]

# Characters that JSON leaves raw but a terminal may act on: DEL, C1 controls
# (\x9b is a one-byte CSI), bidi/format controls, line/paragraph separators and
# lone surrogates. Inside JSON output they can only occur within strings, where
# a \uXXXX escape is equivalent.
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
_LINE_BREAK = re.compile(r"[ \t]*\r?\n[ \t]*")


def show(text: str, *, keep_newlines: bool = True) -> str:
    """Server (or user) text made safe for a terminal (X1)."""
    return escape_text(text, keep_newlines=keep_newlines)


def quote(text: str) -> str:
    """A name or path quoted for a message, every control character escaped."""
    return show(repr(text), keep_newlines=False)


def one_line(text: str) -> str:
    """Text for a table cell: line breaks become spaces, every control character escaped."""
    return show(_LINE_BREAK.sub(" ", text.strip()), keep_newlines=False).replace("\t", " ")


def dumps(value: Any) -> str:
    """JSON for stdout: ``json.dumps`` plus escapes for the characters it leaves raw."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def width(text: str) -> int:
    """Display width in terminal cells (wide East Asian characters count 2)."""
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` cells, ending with ``…`` when shortened."""
    if width(text) <= limit:
        return text
    if limit <= 0:
        return ""
    kept: list[str] = []
    used = 0
    for char in text:
        cells = width(char)
        if used + cells > limit - 1:
            break
        kept.append(char)
        used += cells
    return "".join(kept) + "…"


def terminal_width() -> int:
    return max(20, shutil.get_terminal_size().columns)


def _pad(text: str, cells: int) -> str:
    return text + " " * max(0, cells - width(text))


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    style: Style,
    fit_last: bool = False,
    right: Sequence[int] = (),
) -> list[str]:
    """Aligned columns; the cells must already be escaped. ``fit_last`` cuts the last
    column so that each line fits the terminal; ``right`` lists right-aligned columns."""
    body = [list(row) for row in rows]
    columns = len(header)
    sizes = [max([width(header[i])] + [width(row[i]) for row in body]) for i in range(columns)]
    lines: list[str] = []

    def render(cells: Sequence[str], head: bool) -> str:
        parts: list[str] = []
        for i, cell in enumerate(cells):
            if i == columns - 1:
                parts.append(cell)
            elif i in right:
                parts.append(" " * (sizes[i] - width(cell)) + cell)
            else:
                parts.append(_pad(cell, sizes[i]))
        line = "  ".join(parts).rstrip()
        if fit_last:
            used = sum(sizes[:-1]) + 2 * (columns - 1)
            if columns > 1 and width(line) > terminal_width():
                last = cut(cells[-1], max(1, terminal_width() - used))
                line = ("  ".join(parts[:-1]) + "  " + last).rstrip()
        return style.bold(line) if head else line

    lines.append(render(header, True))
    lines.extend(render(row, False) for row in body)
    return lines


class Style:
    """ANSI colour, used only when the stream is a terminal and ``NO_COLOR`` is unset."""

    def __init__(self, stream: TextIO) -> None:
        self.enabled = "NO_COLOR" not in os.environ and isatty(stream)

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def red(self, text: str) -> str:
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        return self._sgr("33", text)


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Redactor:
    """Removes known secret values (configured header values) from text.

    The library never puts a header value into a message or log record (C8); this
    is a second line of defence for everything the command line writes to stderr.
    """

    MIN_LENGTH = 4

    def __init__(self) -> None:
        self._secrets: set[str] = set()

    def add(self, values: Iterable[str]) -> None:
        for value in values:
            if len(value) >= self.MIN_LENGTH:
                self._secrets.add(value)
                # A value may also surface in a repr() or an escaped form.
                self._secrets.add(repr(value)[1:-1])
                self._secrets.add(escape_text(value, keep_newlines=False))

    def __call__(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret and secret in text:
                text = text.replace(secret, "***")
        return text


class LogFormatter(logging.Formatter):
    """One line per record on stderr: escaped (X1) and redacted."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__("mcpcore: %(levelname)s: %(name)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(show(super().format(record)))


def write(stream: TextIO, text: str = "") -> None:
    stream.write(text + "\n")
    stream.flush()


def prepare_streams() -> None:
    """Never crash on an unencodable character (e.g. a lone surrogate from a server)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
