"""Terminal output for the command line: escaping, colour, tables, JSON, redaction.

Everything a server sends is untrusted (X1): before it reaches a terminal it goes
through :func:`show` (control characters and escape sequences become visible
``\\xNN`` escapes). JSON output is produced by :func:`dumps`, which leaves no raw
control, C1 or bidi character in the text. Header values (secrets) are removed
from everything written to stderr by :class:`Redactor`.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from mcpcore import escape_text

__all__ = [
    "NAME_LIMIT",
    "Redactor",
    "Style",
    "ToolNotes",
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


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    style: Style,
    fit: int | None = None,
    right: Sequence[int] = (),
    paint: Mapping[int, Callable[[str], str]] | None = None,
) -> list[str]:
    """Aligned columns; the cells must already be escaped and hold no colour.

    ``fit`` cuts the last column so that each line fits that many cells (``None``:
    never cut); ``right`` lists right-aligned columns; ``paint`` colours a body
    column's cells. Padding is worked out on the visible text and added outside
    the colour, so colour never shifts a column.
    """
    body = [list(row) for row in rows]
    columns = len(header)
    sizes = [max([width(header[i])] + [width(row[i]) for row in body]) for i in range(columns)]
    painters = paint or {}
    used = sum(sizes[:-1]) + 2 * (columns - 1)

    def render(cells: Sequence[str], head: bool) -> str:
        parts: list[str] = []
        for i, cell in enumerate(cells):
            last = i == columns - 1
            if last and fit is not None and columns > 1:
                cell = cut(cell, max(1, fit - used))
            pad = 0 if last else sizes[i] - width(cell)
            shown = cell if head or i not in painters else painters[i](cell)
            parts.append(" " * pad + shown if i in right else shown + " " * pad)
        line = "  ".join(parts).rstrip()
        return style.bold(line) if head else line

    return [render(header, True), *(render(row, False) for row in body)]


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


#: How many characters of a server's name a note about its tools shows.
NAME_LIMIT = 60

_TOOL_NOTES = "mcpcore.tools"


def _is_tool_note(record: logging.LogRecord) -> bool:
    return record.name == _TOOL_NOTES or record.name.startswith(_TOOL_NOTES + ".")


def _quoted(text: str) -> bool:
    return len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""


def _short_name(arg: object) -> object:
    """A quoted (repr'd) name in a tool note, cut to ``NAME_LIMIT`` with an ellipsis."""
    if isinstance(arg, str) and _quoted(arg) and len(arg) > NAME_LIMIT + 2:
        return arg[0] + cut(arg[1:-1], NAME_LIMIT) + arg[0]
    return arg


class ToolNotes(logging.Filter):
    """The library's notes about listed tools (``mcpcore.tools``: a tool dropped, hidden,
    or its schema ignored), as the command line shows them (X4): each one once per run,
    and, when ``only`` is set (by ``call``), only those naming one of those names.
    """

    def __init__(self) -> None:
        super().__init__()
        self.only: frozenset[str] | None = None
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not _is_tool_note(record):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        if self.only is not None:
            names = {a.lower() for a in args if isinstance(a, str) and _quoted(a)}
            wanted = {show(repr(n), keep_newlines=False).lower() for n in self.only}
            if not names & wanted:
                return False
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


class LogFormatter(logging.Formatter):
    """One line per record on stderr: escaped (X1) and redacted; the names in a note
    about tools are cut to ``NAME_LIMIT`` characters."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__("mcpcore: %(levelname)s: %(name)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        args = record.args
        if _is_tool_note(record) and isinstance(args, tuple):
            record = copy.copy(record)
            record.args = tuple(_short_name(arg) for arg in args)
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
