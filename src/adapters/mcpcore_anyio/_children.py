"""Child processes for a local server (S1–S3), for anyio: the engine's process actions performed.

Moved out of ``_client.py``: the client starts one ``_Children`` per local
server and hands it the engine's actions; it reports what the pipes and the
exit say back to the engine through the client.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
from typing import TYPE_CHECKING

import anyio
import anyio.abc

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
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ._client import McpClient


class _Children:
    """Performs the engine's child-process actions (S1–S3), in order; decides nothing.

    One task performs them from a queue, so a start finishes before the writes
    that follow it. Each child is started in its own process group (a launcher
    that does not ``exec`` leaves the real server as a grandchild), and
    terminate and kill go to the whole group. Each child gets a task that runs,
    under one cancel scope: a writer fed by a memory stream (callers never
    write a pipe: concurrent calls never contend for it, trio refuses two
    writers, and a caller cancelled mid-write cannot cut a frame in two), a
    stdout reader, a stderr reader and a waiter that reports the exit as soon
    as the OS does (a grandchild may hold stdout open long after). Once the
    engine has finished closing, the scopes are cancelled: a reader blocked on
    a pipe that something outside the group holds is abandoned, its pipes closed.
    """

    def __init__(self, client: McpClient, task_group: anyio.abc.TaskGroup) -> None:
        self.client = client
        self._group = task_group
        self._children: dict[
            int, tuple[anyio.abc.Process, MemoryObjectSendStream[WriteInput | None]]
        ] = {}
        self._scopes: dict[int, anyio.CancelScope] = {}  # each child's tasks
        self._all_released = anyio.Event()
        self._all_released.set()
        self._queue, inbox = anyio.create_memory_object_stream[ProcessAction](math.inf)
        self._performer_done = anyio.Event()
        task_group.start_soon(self._perform_all, inbox, name=f"mcpcore:{client.name}:child")

    def perform(self, action: ProcessAction) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._queue.send_nowait(action)

    def _engine(self) -> StdioClientEngine:
        engine = self.client._engine
        assert isinstance(engine, StdioClientEngine)
        return engine

    async def _perform_all(self, inbox: MemoryObjectReceiveStream[ProcessAction]) -> None:
        try:
            async with inbox:
                async for action in inbox:
                    await self._perform(action)
        finally:
            self._performer_done.set()

    async def _perform(self, action: ProcessAction) -> None:
        if isinstance(action, StartProcess):
            await self._start(action)
            return
        entry = self._children.get(action.process)
        if entry is None:
            return
        process, outbox = entry
        if isinstance(action, (WriteInput, CloseInput)):
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                outbox.send_nowait(action if isinstance(action, WriteInput) else None)
        elif isinstance(action, TerminateProcess):
            _signal_group(process, terminate=True)
        elif isinstance(action, KillProcess):
            _signal_group(process, terminate=False)

    async def _start(self, action: StartProcess) -> None:
        engine = self._engine()
        try:
            process = await anyio.open_process(
                [action.command, *action.args],
                cwd=action.cwd,
                env=action.env,
                start_new_session=True,  # its own process group, signalled as one
            )
        except OSError as exc:
            failure = TransportFailure.from_exception(exc)
            engine.process_failed(failure, self.client._now(), process=action.process)
            await self.client._dispatch()
            return
        outbox, inbox = anyio.create_memory_object_stream[WriteInput | None](math.inf)
        self._children[action.process] = (process, outbox)
        self._scopes[action.process] = anyio.CancelScope()
        self._all_released = anyio.Event()
        self._group.start_soon(self._run_child, action.process, process, inbox)

    async def _run_child(
        self,
        number: int,
        process: anyio.abc.Process,
        inbox: MemoryObjectReceiveStream[WriteInput | None],
    ) -> None:
        try:
            with self._scopes[number]:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._write_stdin, number, process, inbox)
                    async with anyio.create_task_group() as watchers:
                        watchers.start_soon(self._read_stdout, number, process)
                        watchers.start_soon(self._read_stderr, number, process)
                        watchers.start_soon(self._wait_exit, number, process)
                    # Exited, and nothing of its tree holds its output: nothing to write.
                    entry = self._children.get(number)
                    if entry is not None:
                        entry[1].close()
        finally:
            entry = self._children.pop(number, None)
            if entry is not None:
                entry[1].close()  # also when its tasks were abandoned
            self._scopes.pop(number, None)
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(_RELEASE_WAIT):
                    await process.aclose()  # closes the pipes; the child itself has exited
            if not self._children:
                self._all_released.set()

    async def _read_stdout(self, number: int, process: anyio.abc.Process) -> None:
        engine, client = self._engine(), self.client
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                engine.receive_data(chunk, client._now(), process=number)
                await client._dispatch()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        engine.output_closed(client._now(), process=number)
        await client._dispatch()

    async def _read_stderr(self, number: int, process: anyio.abc.Process) -> None:
        engine, client = self._engine(), self.client
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                engine.receive_stderr(chunk, client._now(), process=number)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        engine.stderr_closed(client._now(), process=number)
        await client._dispatch()

    async def _wait_exit(self, number: int, process: anyio.abc.Process) -> None:
        """Report the exit when the OS does, whoever still holds the pipes."""
        code = await process.wait()
        self._engine().process_exited(code, self.client._now(), process=number)
        await self.client._dispatch()

    async def _write_stdin(
        self,
        number: int,
        process: anyio.abc.Process,
        inbox: MemoryObjectReceiveStream[WriteInput | None],
    ) -> None:
        """The one writer of this child's stdin; ``None`` (or the end of the queue) closes it.

        A numbered write is reported once it is all written (U3: its request
        reached the server); one that fails is not.
        """
        stdin = process.stdin
        assert stdin is not None
        try:
            with inbox:
                async for write in inbox:
                    if write is None:
                        break
                    await stdin.send(write.data)
                    if write.seq:
                        self._engine().input_written(write.seq, self.client._now(), process=number)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the child is gone: its stdout reader reports that
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(Exception):
                    await stdin.aclose()

    async def aclose(self) -> None:
        """After the engine finished closing: stop the performer; abandon what is left.

        The engine has terminated and killed every child's group that was not
        gone: what still holds a pipe is outside the group. Its readers are
        cancelled and the pipes closed.
        """
        self._queue.close()
        with anyio.move_on_after(_RELEASE_WAIT):
            await self._performer_done.wait()
        for scope in self._scopes.values():
            scope.cancel()
        with anyio.move_on_after(2 * _RELEASE_WAIT):
            await self._all_released.wait()


_RELEASE_WAIT = 1.0  # seconds to close a child's pipes once it has exited


def _signal_group(process: anyio.abc.Process, *, terminate: bool) -> None:
    """SIGTERM or SIGKILL to the child's process group (the child alone off POSIX)."""
    with contextlib.suppress(OSError):  # the group is gone already
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGTERM if terminate else signal.SIGKILL)
        elif terminate:
            process.terminate()
        else:
            process.kill()
