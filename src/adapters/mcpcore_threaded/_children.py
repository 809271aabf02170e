"""Child processes for a local server (S1–S3), for threads: the engine's process actions performed.

Moved out of ``_client.py``: the client starts one ``_Children`` per local
server and hands it the engine's actions under its lock; the pipe threads
report back to the engine through the client.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING

from mcpcore import (
    CloseInput,
    KillProcess,
    ProcessAction,
    StartProcess,
    StdioClientEngine,
    TerminateProcess,
    TransportFailure,
    WriteInput,
)

if TYPE_CHECKING:
    import subprocess

    from ._client import McpClient


class _Child:
    """One started child process, its stdin queue (the writer thread reads it),
    whether no numbered write is under way (``unreported``: set when none is) and
    how many of its watchers (stdout, stderr, the exit) have not ended yet."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.outbox: queue.SimpleQueue[WriteInput | None] = queue.SimpleQueue()
        self.unreported = threading.Event()
        self.unreported.set()
        self.watching = 3


class _Children:
    """Performs the engine's child-process actions (S1–S3); decides nothing.

    Each child is started in its own process group (a launcher that does not
    ``exec`` leaves the real server as a grandchild), and terminate and kill go
    to the whole group. Each child gets four threads: one writes its stdin from
    a queue (callers never write a pipe, and no lock is held while a write
    blocks), one reads its stdout, one its stderr, one waits for its exit and
    reports it as soon as the OS does (a grandchild may hold stdout open long
    after). Each reports to the engine with the child's number, under the
    client's lock. The pipe threads wait on their pipe and on a wake-up pipe
    together: once the engine has finished closing, one byte on it makes every
    one still blocked (on a pipe something outside the group holds) close its
    pipe and end, so closing joins them within a bound.
    """

    def __init__(self, client: McpClient) -> None:
        self.client = client
        self._children: dict[int, _Child] = {}
        self._threads: set[threading.Thread] = set()
        self._wake: tuple[int, int] | None = None  # read end, write end; POSIX only

    def perform(self, action: ProcessAction) -> None:
        """Under the client's lock: one action. Starting a child is one fork and exec."""
        if isinstance(action, StartProcess):
            self._start(action)
            return
        child = self._children.get(action.process)
        if child is None:
            return
        if isinstance(action, WriteInput):
            child.outbox.put(action)
        elif isinstance(action, CloseInput):
            child.outbox.put(None)  # the writer closes stdin once the queue is written
        elif isinstance(action, (TerminateProcess, KillProcess)):
            _signal_group(child.popen, terminate=isinstance(action, TerminateProcess))

    def _start(self, action: StartProcess) -> None:
        import subprocess  # only local servers need it (B5)

        engine = self._engine()
        try:
            popen = subprocess.Popen(
                [action.command, *action.args],
                cwd=action.cwd,
                env=action.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group, signalled as one
            )
        except OSError as exc:
            failure = TransportFailure.from_exception(exc)
            engine.process_failed(failure, self.client._now(), process=action.process)
            return
        if self._wake is None and hasattr(select, "poll"):
            self._wake = os.pipe()
        child = _Child(popen)
        self._children[action.process] = child
        for target, label in (
            (self._read_stdout, "stdout"),
            (self._read_stderr, "stderr"),
            (self._write_stdin, "stdin"),
            (self._wait_exit, "exit"),
        ):
            thread = threading.Thread(
                target=target,
                args=(action.process, child),
                name=f"mcpcore:{self.client.name}:{label}",
                daemon=True,
            )
            self._threads.add(thread)
            thread.start()

    def _engine(self) -> StdioClientEngine:
        engine = self.client._engine
        assert isinstance(engine, StdioClientEngine)
        return engine

    def _report(self, report: Callable[[float], None]) -> None:
        client = self.client
        with client._turn:
            report(client._now())
            client._dispatch()

    def _ready(self, fd: int, *, writing: bool = False) -> bool:
        """Wait until ``fd`` can be read (or written); False once the pipes are abandoned.

        Without ``poll`` (Windows) it returns at once and the read or write blocks.
        """
        if self._wake is None:
            return True
        poller = select.poll()
        poller.register(fd, select.POLLOUT if writing else select.POLLIN)
        poller.register(self._wake[0], select.POLLIN)
        while True:
            ready = {number for number, _ in poller.poll()}
            if self._wake[0] in ready:
                return False
            if fd in ready:
                return True

    def _read(self, number: int, child: _Child, stream: IO[bytes] | None, *, stdout: bool) -> None:
        """Feed one output pipe to the engine until it ends, then report the end."""
        engine = self._engine()
        assert stream is not None
        receive = engine.receive_data if stdout else engine.receive_stderr
        abandoned = False
        try:
            fd = stream.fileno()
            while True:
                if not self._ready(fd):
                    abandoned = True
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._report(partial(receive, chunk, process=number))
        except (OSError, ValueError):
            pass
        stream.close()
        if not abandoned:
            # U3: a write that was all written before the child went is reported first.
            # The pipe threads race for the GIL and the lock; the child's output ending
            # ends that write soon (done, or a broken pipe), so the wait is short.
            child.unreported.wait(_WRITE_WAIT)
            if stdout:
                self._report(lambda now: engine.output_closed(now, process=number))
            else:
                self._report(lambda now: engine.stderr_closed(now, process=number))
        self._watcher_done(number, child)

    def _read_stdout(self, number: int, child: _Child) -> None:
        self._read(number, child, child.popen.stdout, stdout=True)

    def _read_stderr(self, number: int, child: _Child) -> None:
        self._read(number, child, child.popen.stderr, stdout=False)

    def _wait_exit(self, number: int, child: _Child) -> None:
        """Report the exit when the OS does, whoever still holds the pipes."""
        code = child.popen.wait()
        self._report(lambda now: self._engine().process_exited(code, now, process=number))
        self._watcher_done(number, child)

    def _watcher_done(self, number: int, child: _Child) -> None:
        with self.client._lock:
            child.watching -= 1
            if child.watching == 0:  # exited, and nothing of its tree holds its output
                self._children.pop(number, None)
                child.outbox.put(None)  # its writer has nothing left to write to
            self._threads.discard(threading.current_thread())

    def _write_stdin(self, number: int, child: _Child) -> None:
        """The one writer of this child's stdin; ``None`` closes it.

        A numbered write is reported once it is all written (U3: its request
        reached the server); one that fails is not.
        """
        stdin = child.popen.stdin
        assert stdin is not None
        engine = self._engine()
        try:
            fd = stdin.fileno()
            if self._wake is not None:
                os.set_blocking(fd, False)  # a full pipe must not block past abandonment
            while (write := child.outbox.get()) is not None:
                if write.seq:
                    child.unreported.clear()
                view = memoryview(write.data)
                while view:
                    if not self._ready(fd, writing=True):
                        raise ValueError("abandoned")
                    with contextlib.suppress(BlockingIOError):
                        view = view[os.write(fd, view) :]
                if write.seq:
                    with self.client._lock:  # no turn: the engine only notes it
                        engine.input_written(write.seq, self.client._now(), process=number)
                    child.unreported.set()
        except (OSError, ValueError):
            pass  # the child is gone: its stdout reader reports that
        finally:
            child.unreported.set()
        with contextlib.suppress(OSError, ValueError):
            stdin.close()
        with self.client._lock:
            self._threads.discard(threading.current_thread())

    def close(self) -> None:
        """After the engine finished closing (the lock not held): abandon what is left.

        The engine has terminated and killed every child's group that was not
        gone: what still holds a pipe is outside the group. The pipe threads
        blocked on it are woken to close their pipes and end.
        """
        with self.client._lock:
            for child in self._children.values():
                child.outbox.put(None)
            threads = list(self._threads)
        if self._wake is not None:
            os.write(self._wake[1], b"x")
        deadline = time.monotonic() + _RELEASE_WAIT
        for thread in threads:
            if thread is not threading.current_thread():  # closed from an exit report
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._wake is not None and not any(t.is_alive() for t in threads):
            for fd in self._wake:
                os.close(fd)
            self._wake = None


_RELEASE_WAIT = 2.0  # seconds closing waits for a child's threads once they are woken
_WRITE_WAIT = 1.0  # seconds an output's end waits for a write under way to be reported (U3)


def _signal_group(popen: subprocess.Popen[bytes], *, terminate: bool) -> None:
    """SIGTERM or SIGKILL to the child's process group (the child alone off POSIX)."""
    with contextlib.suppress(OSError):  # the group is gone already
        if os.name == "posix":
            os.killpg(popen.pid, signal.SIGTERM if terminate else signal.SIGKILL)
        elif terminate:
            popen.terminate()
        else:
            popen.kill()
