"""The threads' own tools: an exchange's way out at any stage, permits, workers, a call's handle.

Moved out of ``_client.py``. ``_Abort`` and ``_Performing`` are what the
network layer (``_network``) registers each blocking step with (D1);
``_Permits`` bounds the requests handed to the pool; ``_Workers`` the threads
performing exchanges; ``CallHandle`` a call in flight (moved out of
``_client.py`` too, which still names it).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcpcore import ToolOutput

    from ._client import McpClient
    from ._surface import ProgressCallback

_log = logging.getLogger("mcpcore.threaded")


# --- aborting an exchange at any stage ------------------------------------------------------


class Interruptible(Protocol):
    """A blocking step in progress (a socket in use, a wait for a name lookup)."""

    def interrupt(self) -> None:
        """Make the step return at once (shut its socket down, end its wait)."""


class _Abort:
    """One exchange's way out, from its first step (the name lookup) to its last read (D1).

    The network layer (``_network``) registers each blocking step of the
    exchange here while it blocks: the socket being connected, handshaken,
    written or read (an abort shuts it down and the step returns at once), or
    the wait for a name lookup (an abort ends the wait). An abort between two
    steps is remembered: the next step fails at once. This side needs no HTTP
    library.
    """

    __slots__ = ("_blocked", "_guard", "aborted")

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._blocked: Interruptible | None = None
        self.aborted = False

    def enter(self, step: Interruptible) -> bool:
        """``step`` is about to block; False: the exchange was aborted, do not start it."""
        with self._guard:
            if self.aborted:
                return False
            self._blocked = step
            return True

    def leave(self) -> None:
        """The step returned. After this, an abort no longer touches its socket (which the
        connection may go on to use for another exchange)."""
        with self._guard:
            self._blocked = None

    def abort(self) -> None:
        with self._guard:
            self.aborted = True
            blocked, self._blocked = self._blocked, None
            if blocked is not None:  # under the guard: leave() waits until this is done
                blocked.interrupt()


class _Performing(threading.local):
    """Which exchange's ``_Abort`` the current thread works for (None: no exchange's).

    Set by the thread performing an exchange (a worker, a caller, a hand-off
    thread) before its first step; the network layer reads it in each step,
    as a connection may serve one exchange after another.
    """

    abort: _Abort | None = None


class _Permits:
    """At most ``limit`` holders at once, handed over in order of asking.

    A plain semaphore lets a thread that just released take a permit again
    before a woken waiter runs, so with many callers some waited for seconds;
    here a released permit goes straight to the longest waiter.
    """

    def __init__(self, limit: int) -> None:
        self._guard = threading.Lock()
        self._free = limit
        # Each waiter's own lock, taken at once: releasing it hands the waiter a
        # permit (a bare lock, not an Event: the hand-over is one C call, no
        # Condition, on every call while callers outnumber connections).
        self._waiting: deque[threading.Lock] = deque()

    def acquire(self, give_up: Callable[[], bool]) -> bool:
        """Wait for a permit, in turn; False (no permit held) once ``give_up()``."""
        with self._guard:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return True
            handed = threading.Lock()
            handed.acquire()
            self._waiting.append(handed)
        while not handed.acquire(timeout=0.05):
            if give_up():
                with self._guard:
                    if handed in self._waiting:  # not handed over
                        self._waiting.remove(handed)
                        return False
                break  # handed over just now
        return True

    def release(self) -> None:
        with self._guard:
            if self._waiting:
                self._waiting.popleft().release()  # straight to the next in line
            else:
                self._free += 1


class _Workers:
    """At most ``limit`` threads performing exchanges, started as needed.

    A flood of exchanges (a server sending request after request) waits in
    the queue instead of becoming a flood of threads. A worker left idle for
    ``_IDLE_EXIT`` seconds ends. Exchanges may wait inside for a connection
    permit; those holding one never wait for a worker (a caller's own
    exchange and a hand-off run on their own threads), so the queue drains.
    """

    def __init__(self, limit: int, name: str) -> None:
        self._limit = limit
        self._name = name
        self._guard = threading.Condition(threading.Lock())
        self._jobs: deque[Callable[[], None]] = deque()
        self._threads: set[threading.Thread] = set()
        self._running = 0  # workers running a job
        self._closed = False

    def submit(self, job: Callable[[], None]) -> None:
        with self._guard:
            self._jobs.append(job)
            # A worker not running a job (idle, or just done with one) takes it.
            if len(self._threads) - self._running >= len(self._jobs):
                self._guard.notify()
            elif len(self._threads) < self._limit:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}:worker", daemon=True
                )
                self._threads.add(thread)
                thread.start()

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            with self._guard:
                while not self._jobs:
                    if self._closed or (not self._guard.wait(_IDLE_EXIT) and not self._jobs):
                        self._threads.discard(me)
                        return
                job = self._jobs.popleft()
                self._running += 1
            try:
                job()
            except Exception:  # pragma: no cover - an exchange reports its own failures
                _log.exception("an exchange failed unexpectedly")
            finally:
                with self._guard:
                    self._running -= 1

    @property
    def count(self) -> int:
        with self._guard:
            return len(self._threads)

    def close(self) -> None:
        """Let the workers finish what is queued (aborted by now), then join them."""
        with self._guard:
            self._closed = True
            self._guard.notify_all()
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()


_IDLE_EXIT = 5.0  # seconds an idle worker waits for another exchange before it ends


class CallHandle:
    """A call in flight: ``result()`` blocks for it, ``cancel()`` abandons it from any thread."""

    def __init__(
        self, client: McpClient, call_id: int, on_progress: ProgressCallback | None
    ) -> None:
        self._client = client
        self.call_id = call_id
        self.on_progress = on_progress
        # Not an Event (a Condition built and notified per call): a caller that
        # performed its own exchange finds the outcome in place and never waits;
        # a thread that does wait has a lock of its own, released by _finish.
        self._guard = threading.Lock()
        self._waiters: list[threading.Lock] = []
        self._done = False  # set once the outcome is in place
        self._output: Any = None
        self._error: BaseException | None = None

    def _finish(self, output: Any, error: BaseException | None) -> None:
        with self._guard:
            if self._done:  # the first outcome stands (close() may come after it)
                return
            self._output, self._error = output, error
            self._done = True
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.release()

    @property
    def done(self) -> bool:
        return self._done

    def cancel(self, reason: str = "cancelled by the caller") -> bool:
        """K6: abandon the call; ``notifications/cancelled`` goes to the server."""
        return self._client._cancel(self, reason)

    def _stop_waiting(self, waiter: threading.Lock) -> None:
        with self._guard:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def result(self, timeout: float | None = None) -> ToolOutput:
        """Block until the call ends. Ctrl-C while waiting cancels the call (K6)."""
        output: ToolOutput = self._wait(timeout)
        return output

    def _wait(self, timeout: float | None) -> Any:
        if not self._done:
            waiter = threading.Lock()
            waiter.acquire()
            with self._guard:
                waiting = not self._done
                if waiting:
                    self._waiters.append(waiter)
            if waiting:
                try:
                    finished = waiter.acquire(timeout=-1 if timeout is None else max(0, timeout))
                except BaseException:  # Ctrl-C (KeyboardInterrupt) while waiting
                    self._stop_waiting(waiter)
                    if not self._done:
                        self.cancel()
                    raise
                if not finished:
                    self._stop_waiting(waiter)
                    if not self._done:  # (it may have ended just as the wait did)
                        raise TimeoutError(
                            "the call is still running; result() may be called again"
                        )
        if self._error is not None:
            raise self._error
        assert self._output is not None
        return self._output
