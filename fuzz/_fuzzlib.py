"""Shared helpers for the fuzz harnesses: no atheris here, so pytest can import it.

``Reader`` turns fuzz bytes into structured choices (like atheris's
``FuzzedDataProvider``, but pure Python so the same harness runs under
hypothesis). Running out of bytes is not an error: every method returns a
default, so a short input is just a short script.
"""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "src", ROOT / "src" / "adapters"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# A secret that fuzz input is very unlikely to contain; harnesses check it never shows.
SECRET = "Zq9SECRETvalue7Xw"


class Reader:
    """Consume fuzz bytes as small integers, choices, byte strings and JSON-ish values."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def u8(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self) -> int:
        return self.u8() | (self.u8() << 8)

    def flag(self) -> bool:
        return bool(self.u8() & 1)

    def choice(self, options: Any) -> Any:
        return options[self.u8() % len(options)]

    def take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out

    def chunk(self, limit: int = 64) -> bytes:
        return self.take(self.u8() % (limit + 1))

    def blob(self, limit: int = 4096) -> bytes:
        """A byte string with a two-byte length (long enough for a real message)."""
        return self.take(self.u16() % (limit + 1))

    def rest(self) -> bytes:
        return self.take(self.left)

    def text(self, limit: int = 24) -> str:
        return self.chunk(limit).decode("utf-8", "replace")

    def json_value(self, depth: int = 3) -> Any:
        kind = self.u8() % (9 if depth > 0 else 6)
        if kind == 0:
            return None
        if kind == 1:
            return self.flag()
        if kind == 2:
            return self.u16() - 1000
        if kind == 3:
            return (self.u16() - 30000) / 7.0
        if kind in (4, 5):
            return self.choice(WORDS) if self.flag() else self.text()
        if kind in (6, 7):
            return {self.key(): self.json_value(depth - 1) for _ in range(self.u8() % 4)}
        return [self.json_value(depth - 1) for _ in range(self.u8() % 4)]

    def key(self) -> str:
        return self.choice(KEYS) if self.u8() % 4 else self.text(8)


KEYS = (
    "name",
    "description",
    "title",
    "inputSchema",
    "outputSchema",
    "annotations",
    "type",
    "text",
    "content",
    "structuredContent",
    "isError",
    "mimeType",
    "uri",
    "resource",
    "blob",
    "data",
    "properties",
    "required",
    "execution",
    "taskSupport",
    "readOnlyHint",
    "nextCursor",
    "tools",
    "progressToken",
    "progress",
    "total",
    "message",
    "level",
    "logger",
)
WORDS = (
    "echo",
    "ECHO",
    "object",
    "text",
    "image",
    "audio",
    "resource",
    "resource_link",
    "required",
    "string",
    "integer",
    "a/b",
    "",
    "x" * 130,
    "\x1b[2J",
    "é",
    "2025-11-25",
    "2025-06-18",
    "1999-01-01",
)


class _LogCheck(logging.Handler):
    """Every log record under ``mcpcore``: never the secret, never a raw ESC (C8, X1)."""

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        assert SECRET not in text, f"a log record holds the secret: {text!r}"
        assert "\x1b" not in text, f"a log record holds a raw ESC: {text!r}"


_logger = logging.getLogger("mcpcore")
if not any(isinstance(h, _LogCheck) for h in _logger.handlers):
    _logger.addHandler(_LogCheck())


def instrument(atheris: Any) -> None:
    """Instrument only the core and the harnesses for coverage (stdlib stays fast)."""
    import gc

    for obj in gc.get_objects():
        module = getattr(obj, "__module__", None)
        if (
            isinstance(module, str)
            and module.startswith(("mcpcore", "fuzz_", "_fuzzlib"))
            and isinstance(getattr(obj, "__code__", None), types.CodeType)
        ):
            try:
                atheris.instrument_func(obj)
            except Exception:  # a few builtins-like objects cannot be patched
                pass


def raise_unexpected(where: str, exc: BaseException) -> None:
    """Re-raise ``exc`` wrapped so a fuzzer report says which invariant broke."""
    raise AssertionError(f"{where}: undocumented exception {type(exc).__name__}: {exc}") from exc
