"""The stdio transport's framing and the child process's life, as decisions (S1-S3, P6).

This module owns cutting a child's stdout into message lines and framing
outgoing messages as lines (it knows nothing of JSON: a line is handed on as
bytes, for the JSON-RPC codec to judge), and ``ChildControl``: the child's
environment, when it is started, lost and stopped, when its process tree
counts as gone, and how long closing may take, all as actions for a driver.

Each :meth:`LineFramer.feed` searches only the bytes it just added for the last
``\\n`` and splits everything before it in one C call, so the cost is linear in
the input however it is chunked.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from ..base._errors import LimitExceeded, LocalProtocolError
from ..base._escape import excerpt
from ..base._events import (
    CloseInput,
    KillProcess,
    ProcessAction,
    StartProcess,
    TerminateProcess,
    WriteInput,
)
from ..base._failure import FailureKind, TransportFailure

if TYPE_CHECKING:  # annotations only: a Protocol class costs import time (B5)

    class LocalCommand(Protocol):
        """What stdio reads of a local server's entry (``mcpcore.LocalServer``, which
        the config layer above makes): the command line, its directory and its
        environment."""

        @property
        def name(self) -> str: ...
        @property
        def command(self) -> str: ...
        @property
        def args(self) -> tuple[str, ...]: ...
        @property
        def env(self) -> Mapping[str, str]: ...
        @property
        def cwd(self) -> str: ...
        @property
        def plugin_root(self) -> str: ...
        @property
        def plugin_data(self) -> str | None: ...


__all__ = [
    "DEFAULT_GRACE",
    "INHERITED_VARIABLES",
    "ChildControl",
    "LineFramer",
    "StderrTail",
    "child_environment",
    "frame_message",
]

# S2: all a child inherits from the host's environment, before its entry's own env.
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "USER", "TERM")
_STDERR_WAIT = 0.5  # seconds a lost child's stderr may take to end (its last words)
_KILL_AFTER = 1.0  # seconds between asking a child to stop and killing it
# S3: seconds a server gets to exit on its own once its stdin closed (MCP's stdio
# shutdown: close stdin, wait, SIGTERM, SIGKILL). A server that watches stdin is
# gone in well under a second; one still running after this is one that does
# not watch it, and waiting longer only delays the terminate.
DEFAULT_GRACE = 3.0
_STDERR_PARTIAL = 8192  # bytes of an unfinished stderr line kept
_LOGGED_STDERR_CHARS = 2000  # characters of one stderr line logged

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
    :class:`~mcpcore.LimitExceeded` (checked while it is still being
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


# --- the child process, as actions (S1-S3) ---------------------------------------------


def child_environment(server: LocalCommand, inherited: Mapping[str, str]) -> dict[str, str]:
    """S2: a minimal inherited environment, the plugin directories, then the entry's env."""
    environment = {k: inherited[k] for k in INHERITED_VARIABLES if k in inherited}
    if server.plugin_root:  # the user's own file loaded from memory has no directory
        environment["PLUGIN_ROOT"] = server.plugin_root
    if server.plugin_data is not None:
        environment["PLUGIN_DATA"] = server.plugin_data
    environment.update(server.env)
    return environment


class ChildControl:
    """What happens to a local server's child process, decided without I/O (S1-S3).

    The engine asks it to start a child (with the environment S2 allows), to
    write, to stop; the driver performs the resulting actions and reports what
    the child did. It decides the rest: a child is started again only when a
    request must go out and none runs; a child whose stdout closed is declared
    lost once its stderr has also ended (or after ``_STDERR_WAIT``), with its
    last stderr lines as the reason.

    A child is its whole process tree: a launcher that does not ``exec``
    (``npx``, a shell script) leaves the real server as a grandchild, which the
    driver starts in the child's own process group and signals with it. The
    tree counts as gone once the child has exited *and* its stdout and stderr
    have ended (a grandchild holding them open is still running). Stopping
    closes stdin, then terminates the group after the grace period (3 s), kills
    it a second later; closing is finished once every tree started is gone or,
    whatever the tree does, a second after the kill (``close_bound``): the
    driver then abandons the child's readers.
    """

    def __init__(
        self, server: LocalCommand, environ: Mapping[str, str], *, grace: float = DEFAULT_GRACE
    ) -> None:
        if grace < 0:
            raise ValueError("the close grace must not be negative")
        self.server = server
        self._environ = dict(environ)
        self._grace = grace
        self.process = 0  # the current child's number; 0: none started yet
        self._writes = 0  # the last reported write's number, over every child (U3)
        self.running = False  # the current child was started and is not known to be gone
        self._actions: list[ProcessAction] = []
        self._tail = StderrTail(secrets=server.env.values())
        self._stderr_partial = b""
        self._stderr_open = False
        self._lost_at: float | None = None  # stdout closed: lost at this time at the latest
        self._alive: set[int] = set()  # children started and not reported exited
        self._open_pipes: dict[int, set[str]] = {}  # a child's stdout/stderr not yet ended
        self._kill_at: dict[int, float] = {}  # trees being stopped: when to terminate or kill
        self._closing_until: float | None = None  # closing: finished by then whatever happens
        self._closing_over = False
        self._terminated: set[int] = set()  # trees sent TerminateProcess (kill next)
        self._log = logging.getLogger(f"mcpcore.stderr.{server.name}")

    @property
    def close_bound(self) -> float:
        """Seconds closing takes at most, whatever the child's tree does (S3)."""
        return self._grace + 2 * _KILL_AFTER

    # --- commands from the engine --------------------------------------------------------

    def start(self) -> None:
        """Start a new child (the first, or one after the last was lost)."""
        self.process += 1
        self.running = True
        self._alive.add(self.process)
        self._open_pipes[self.process] = {"stdout", "stderr"}
        self._tail = StderrTail(secrets=self.server.env.values())
        self._stderr_partial = b""
        self._stderr_open = True
        self._lost_at = None
        self._actions.append(
            StartProcess(
                process=self.process,
                command=self.server.command,
                args=tuple(self.server.args),
                env=child_environment(self.server, self._environ),
                cwd=self.server.cwd or None,
            )
        )

    def write(self, data: bytes, *, report: bool = False) -> int:
        """Write ``data`` to the current child; with ``report``, the write's number
        (the driver reports it written: U3), else 0."""
        if not (self.running and data):
            return 0
        seq = 0
        if report:
            self._writes += 1
            seq = self._writes
        self._actions.append(WriteInput(process=self.process, data=data, seq=seq))
        return seq

    def stop(self, now: float, *, grace: float | None = None) -> None:
        """S3: close the current child's stdin; terminate after ``grace``, kill 1 s later."""
        if not self.running:
            return
        self.running = False
        self._lost_at = None
        number = self.process
        self._actions.append(CloseInput(process=number))
        wait = self._grace if grace is None else grace
        if self._tree_alive(number):
            if wait <= 0:
                self._terminate(number, now)
            else:
                self._kill_at[number] = now + wait  # terminate first, then kill (handle_timer)

    def close(self, now: float) -> None:
        """Closing: stop the child with the full grace; ``finished`` says when it is over."""
        if self._closing_until is not None:
            return
        self.stop(now)
        latest = max(self._kill_at.values(), default=now)
        self._closing_until = latest + 2 * _KILL_AFTER

    # --- reports from the driver ---------------------------------------------------------

    def current(self, process: int | None) -> bool:
        """Whether a report about child ``process`` (None: the current one) still matters."""
        return self.running and (process is None or process == self.process)

    def stderr_data(self, data: bytes, process: int | None) -> None:
        if process is not None and process != self.process:
            return
        lines = (self._stderr_partial + data).split(b"\n")
        self._stderr_partial = lines.pop()[-_STDERR_PARTIAL:]
        for raw in lines:
            self._stderr_line(raw)

    def _stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")
        self._tail.add(line)
        if line.strip() and self._log.isEnabledFor(logging.INFO):
            shown = self._tail.redact(line[:_LOGGED_STDERR_CHARS].rstrip("\r"))
            self._log.info("%s", shown.encode("unicode_escape").decode("ascii"))  # X1

    def stderr_closed(self, now: float, process: int | None) -> bool:
        """The child's stderr ended; True when the child is now to be declared lost."""
        self._pipe_ended(process, "stderr")
        if process is not None and process != self.process:
            return False
        if self._stderr_partial:
            self._stderr_line(self._stderr_partial)
            self._stderr_partial = b""
        self._stderr_open = False
        return self._lost_at is not None

    def output_closed(self, now: float, process: int | None) -> bool:
        """The child's stdout ended; True when it is to be declared lost right away."""
        self._pipe_ended(process, "stdout")
        if not self.current(process):
            return False
        if not self._stderr_open:
            return True
        # Its last words on stderr say why it died: give them a moment to arrive.
        self._lost_at = now + _STDERR_WAIT
        return False

    def exited(self, process: int | None, now: float) -> bool:
        """The child exited; True when it is (the current one and) to be declared lost.

        Never on its own: the driver reports the exit as soon as it happens,
        and a launcher may exit while the server it started goes on serving
        on the same pipes. The end of stdout decides (``output_closed``).
        """
        number = self.process if process is None else process
        self._alive.discard(number)
        self._forget_if_gone(number)
        return False

    def lost(self, now: float, what: str) -> str:
        """The current child is gone: the reason, worded with its stderr tail (S1, C8)."""
        number = self.process
        self.running = False
        self._lost_at = None
        if self._tree_alive(number):  # stdout closed but the tree lives on: stop it
            self._actions.append(CloseInput(process=number))
            self._terminate(number, now)
        return self._tail.reason(what)

    def why_not_started(self, failure: TransportFailure) -> str:
        """S1: why the child could not be started, in the configuration's words: a
        missing command is named (never the environment it was searched with)."""
        command = self.server.command
        if failure.kind is FailureKind.NOT_FOUND and failure.missing == command:
            where = "" if "/" in command else " on PATH"
            return f"command {excerpt(command, 200)!r} was not found{where}"
        if failure.kind is FailureKind.NOT_FOUND and failure.missing == self.server.cwd:
            return "its working directory (cwd) does not exist"
        return failure.describe()

    def failed_to_start(self, process: int | None) -> None:
        number = self.process if process is None else process
        self._alive.discard(number)
        self._open_pipes.pop(number, None)
        self._forget_if_gone(number)
        if number == self.process:
            self.running = False
            self._lost_at = None

    def _pipe_ended(self, process: int | None, pipe: str) -> None:
        number = self.process if process is None else process
        self._open_pipes.get(number, set()).discard(pipe)
        self._forget_if_gone(number)

    def _tree_alive(self, number: int) -> bool:
        return number in self._alive or bool(self._open_pipes.get(number))

    def _forget_if_gone(self, number: int) -> None:
        if not self._tree_alive(number):
            self._open_pipes.pop(number, None)
            self._kill_at.pop(number, None)
            self._terminated.discard(number)

    # --- time ------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        times = list(self._kill_at.values())
        if self._lost_at is not None:
            times.append(self._lost_at)
        if self._closing_until is not None and not self.finished:
            times.append(self._closing_until)
        return min(times) if times else None

    def handle_timer(self, now: float) -> bool:
        """Terminate or kill what is due; True when the current child is now lost."""
        for number, at in list(self._kill_at.items()):
            if at > now:
                continue
            if number in self._terminated:
                self._actions.append(KillProcess(process=number))
                del self._kill_at[number]
            else:
                self._terminate(number, now)
        if self._closing_until is not None and now >= self._closing_until:
            self._closing_over = True
        return self._lost_at is not None and now >= self._lost_at

    def _terminate(self, number: int, now: float) -> None:
        self._actions.append(TerminateProcess(process=number))
        self._terminated.add(number)
        self._kill_at[number] = now + _KILL_AFTER

    @property
    def finished(self) -> bool:
        """Closing began and every tree started is gone (or the close bound passed)."""
        if self._closing_until is None:
            return False
        started = self._alive | self._open_pipes.keys()
        return self._closing_over or not any(self._tree_alive(n) for n in started)

    def take_actions(self) -> list[ProcessAction]:
        out, self._actions = self._actions, []
        return out
