"""A tool's result on the terminal, for ``call``, ``task`` and ``read``: the
progress line while a call runs (Ctrl-C cancels the call), the result printed as
text or as JSON with its typed content blocks (K8), and binary parts written to
fresh files with ``--save DIR`` (never over a file, never through a symlink).
"""

from __future__ import annotations

import base64
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from mcpcore import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    OtherBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
    ToolOutput,
)

from ._common import PROGRESS_AFTER, Cli, UsageError
from ._term import cut, dumps, isatty, one_line, quote, show, terminal_width

__all__ = [
    "EXTENSIONS",
    "Progress",
    "create_fresh",
    "prepare_save_dir",
    "print_output",
    "safe_stem",
    "save_blocks",
]

# --- the progress line -----------------------------------------------------------------


_T = TypeVar("_T")


class _Waitable(Protocol):
    """A call in flight: a ``CallHandle``, or a task followed on another thread."""

    @property
    def done(self) -> bool: ...

    def cancel(self, reason: str = ...) -> bool: ...

    def result(self, timeout: float | None = None) -> Any: ...


class Progress:
    """The progress line on stderr (a terminal only) for calls longer than a second."""

    SPINNER = "|/-\\"

    def __init__(self, cli: Cli, label: str, quiet: threading.Event | None = None) -> None:
        self.cli = cli
        self.label = label
        self.enabled = isatty(cli.stderr)
        self.quiet = quiet  # set while a question is asked at the terminal (Q6)
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._latest: tuple[float, float | None, str | None] | None = None
        self._drawn = False
        self._frame = 0

    def update(self, progress: float, total: float | None, message: str | None) -> None:
        """Called on a client thread for each progress notification."""
        with self._lock:
            self._latest = (progress, total, message)
        self.wake.set()

    def draw(self, elapsed: float) -> None:
        with self._lock:
            latest = self._latest
        parts = [self.SPINNER[self._frame % len(self.SPINNER)], self.label]
        self._frame += 1
        if latest is not None:
            progress, total, message = latest
            parts.append(f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
            if message:
                parts.append(one_line(message))
        parts.append(f"({elapsed:.1f} s)")
        line = cut(self.cli.redact(" ".join(parts)), terminal_width() - 1)
        self.cli.stderr.write("\r\x1b[K" + line)
        self.cli.stderr.flush()
        self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            self.cli.stderr.write("\r\x1b[K")
            self.cli.stderr.flush()
            self._drawn = False

    def run(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` on this thread (Ctrl-C interrupts it, and the call it makes
        is cancelled as always) while another thread draws the progress line."""
        if not self.enabled:
            return work()
        stop = threading.Event()
        start = time.monotonic()

        def draw_until_stopped() -> None:
            while not stop.is_set():
                self.wake.wait(0.1)
                self.wake.clear()
                elapsed = time.monotonic() - start
                asking = self.quiet is not None and self.quiet.is_set()
                if not stop.is_set() and elapsed >= PROGRESS_AFTER and not asking:
                    self.draw(elapsed)

        drawer = threading.Thread(target=draw_until_stopped, name="mcpcore-progress", daemon=True)
        drawer.start()
        try:
            return work()
        finally:
            stop.set()
            self.wake.set()
            drawer.join(1.0)
            self.clear()

    def wait(self, handle: _Waitable) -> ToolOutput:
        """Block for the call; Ctrl-C cancels it (``notifications/cancelled``).

        The wait is in short steps, never one unbounded wait: a SIGINT that the
        kernel hands to another thread only marks the interrupt pending, and the
        main thread acts on it when its wait returns, so it must return soon.
        """
        start = time.monotonic()
        try:
            while not handle.done:
                self.wake.wait(0.1 if self.enabled else 0.2)
                self.wake.clear()
                elapsed = time.monotonic() - start
                asking = self.quiet is not None and self.quiet.is_set()
                if self.enabled and elapsed >= PROGRESS_AFTER and not handle.done and not asking:
                    self.draw(elapsed)
        except BaseException:
            if not handle.done:
                handle.cancel()
            raise
        finally:
            self.clear()
        output: ToolOutput = handle.result()
        return output


# --- printing a result -----------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _block_json(block: ContentBlock) -> dict[str, Any]:
    """One typed content block (K8) as JSON: bytes as base64, with their size."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, (ImageBlock, AudioBlock)):
        return {
            "type": block.kind,
            "mime_type": block.mime_type,
            "size": len(block.data),
            "data": _b64(block.data),
        }
    if isinstance(block, ResourceBlock):
        payload: dict[str, Any] = {
            "type": "resource",
            "uri": block.uri,
            "mime_type": block.mime_type,
        }
        if block.text is not None:
            payload["text"] = block.text
        elif block.data is not None:
            payload["size"] = len(block.data)
            payload["data"] = _b64(block.data)
        return payload
    if isinstance(block, ResourceLinkBlock):
        return {
            "type": "resource_link",
            "uri": block.uri,
            "name": block.name,
            "mime_type": block.mime_type,
            "description": block.description,
        }
    assert isinstance(block, OtherBlock)
    return {"type": "other", "block_type": block.type, "reason": block.reason}


def print_output(
    cli: Cli, output: ToolOutput, as_json: bool, saved: Mapping[int, str] | None = None
) -> None:
    if as_json:
        blocks = []
        for index, block in enumerate(output.content):
            shown = _block_json(block)
            if saved and index in saved:
                shown["saved_to"] = saved[index]
            blocks.append(shown)
        payload = {
            "text": output.text,
            "structured": output.structured,
            "is_error": output.is_error,
            "content": blocks,
        }
        cli.out(dumps(payload))
    else:
        cli.out(show(output.text))


# --- --save DIR ------------------------------------------------------------------------

#: File extensions for the MIME types tools commonly return; any other type gets ".bin".
EXTENSIONS: Mapping[str, str] = {
    "application/gzip": ".gz",
    "application/json": ".json",
    "application/octet-stream": ".bin",
    "application/pdf": ".pdf",
    "application/zip": ".zip",
    "audio/aac": ".aac",
    "audio/flac": ".flac",
    "audio/mp3": ".mp3",
    "audio/mp4": ".m4a",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/wav": ".wav",
    "audio/wave": ".wav",
    "audio/webm": ".weba",
    "audio/x-wav": ".wav",
    "image/avif": ".avif",
    "image/bmp": ".bmp",
    "image/gif": ".gif",
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/svg+xml": ".svg",
    "image/tiff": ".tif",
    "image/webp": ".webp",
    "text/csv": ".csv",
    "text/html": ".html",
    "text/markdown": ".md",
    "text/plain": ".txt",
}
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_SAFE_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}")
_MAX_STEM = 64


def prepare_save_dir(text: str) -> Path:
    """``--save DIR``, created if missing; checked before anything is called."""
    directory = Path(text)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--save {quote(text)} is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save {quote(text)}: {exc.strerror or exc}") from None
    return directory


def safe_stem(text: str) -> str:
    """A file-name stem from server text: ``A-Z a-z 0-9 . _ -`` only, no leading dot or
    dash, at most 64 characters; ``""`` when nothing is left."""
    return _UNSAFE_NAME.sub("_", text).strip("._-")[:_MAX_STEM].rstrip("._-")


def _file_name(block: ContentBlock, number: int) -> tuple[str, str]:
    """(stem, extension) for a binary block: a resource is named after its URI's last
    segment, anything else after its kind and its number among the blocks of that kind
    (``image-1.png`` for the first image); the extension comes from the MIME type when
    known."""
    stem, extension = "", ""
    if isinstance(block, ResourceBlock) and block.uri:
        from urllib.parse import unquote

        last = block.uri.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        last = unquote(last).replace("\\", "/").rsplit("/", 1)[-1]
        base, dot, suffix = last.rpartition(".")
        if dot and base and _SAFE_EXTENSION.fullmatch("." + suffix):
            last, extension = base, "." + suffix.lower()
        stem = safe_stem(last)
    mime = block.mime_type if isinstance(block, (ImageBlock, AudioBlock, ResourceBlock)) else None
    if mime is not None:
        known = EXTENSIONS.get(mime.split(";", 1)[0].strip().lower())
        if known is not None:
            extension = known
    return (stem or f"{block.kind}-{number}"), (extension or ".bin")


def create_fresh(directory: Path, stem: str, extension: str) -> tuple[Path, int]:
    """A new file in ``directory`` (never an existing one, never through a symlink)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_BINARY", 0)
    for number in range(1, 10_000):
        name = f"{stem}{extension}" if number == 1 else f"{stem}-{number}{extension}"
        path = directory / name
        try:
            return path, os.open(path, flags, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"too many files named {stem}-N{extension}")


def save_blocks(cli: Cli, output: ToolOutput, directory: Path) -> tuple[dict[int, str], bool]:
    """Write each binary block to a fresh file in ``directory``; say so on stderr.

    Returns the path written for each block's index, and whether every one was
    written (a block that cannot be written is reported; the others are still tried).
    """
    saved: dict[int, str] = {}
    complete = True
    numbers: dict[str, int] = {}  # blocks of each kind so far
    for index, block in enumerate(output.content):
        if not isinstance(block, (ImageBlock, AudioBlock, ResourceBlock)) or block.data is None:
            continue
        data = block.data
        numbers[block.kind] = numbers.get(block.kind, 0) + 1
        stem, extension = _file_name(block, numbers[block.kind])
        try:
            path, fd = create_fresh(directory, stem, extension)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
        except OSError as exc:
            where = quote(str(directory))
            cli.err(f"cannot save block {index + 1} in {where}: {exc.strerror or exc}")
            complete = False
            continue
        saved[index] = str(path)
        mime = one_line(block.mime_type) if block.mime_type else "no MIME type"
        cli.err(f"saved {block.kind} ({mime}, {len(data)} bytes) to {quote(str(path))}")
    if not saved and complete:
        cli.err("nothing to save: the result has no images, audio or binary resources")
    return saved, complete
