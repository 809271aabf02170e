"""Tasks on the command line (T7, T8): ``mcpcore call`` following a task, and
``mcpcore task ID`` / ``mcpcore task ID --cancel``.

``call`` starts the call with ``start_task``: a call the server answers at once
is printed as always; one it runs as a task is then followed on a worker
thread, its status shown while it runs (the progress line on a terminal, one
line per change on stderr otherwise). Ctrl-C while a task runs does not cancel
it: the run prints the task's id and the ``mcpcore task`` command that picks it
up again, and exits 130 (closing the client leaves the task alone). In the
handshake era the run still ends its session as it exits, and a server that
keeps its tasks per session (server-everything does) forgets the task with it:
the hint says so. (Keeping the session open instead would need the next run to
join it with its id, a value the command line does not show.) Ctrl-C before the
server made a task cancels the call, as for any call.

``task`` takes the server forms of ``read``: a URL, or ``--config FILE``
(with ``--server NAME`` when the file has several servers). The task's id and
status messages are server text: escaped and cut short before they are shown.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpcore import BackendError, ConfigError, TaskHandle, ToolOutput

from ._common import EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, Cli, UsageError
from ._connect import (
    chosen_servers,
    client_for,
    command_for,
    ensure_ready,
    invalid_entry,
    split_operands,
)
from ._results import Progress, print_output
from ._term import dumps, one_line, quote, show

if TYPE_CHECKING:
    from mcpcore import InputRequired, LocalServer, RemoteServer
    from mcpcore_threaded import McpClient

__all__ = ["cmd_task", "follow_call", "shown_id"]

#: How much of a task id is shown (ids are server text).
_ID_SHOWN = 80

#: T8: why the pick-up command may find no task (the handshake era).
_PER_SESSION = (
    "that works only while the server still has the task: this run ends its session "
    "with the server as it exits, and a server that keeps its tasks per session (as "
    "servers built on the TypeScript SDK's examples do) forgets the task with it"
)


def shown_id(task_id: str) -> str:
    """A task id as the terminal may show it: escaped, on one line, cut short."""
    text = show(task_id, keep_newlines=False)
    return text if len(text) <= _ID_SHOWN else text[: _ID_SHOWN - 1] + "…"


class _Following:
    """``resume_task`` on a worker thread, waitable like a ``CallHandle`` by the
    progress line: its ``cancel`` does nothing, so Ctrl-C leaves the task running."""

    def __init__(
        self, client: McpClient, task: TaskHandle | str, on_status: Callable[..., None]
    ) -> None:
        self._done = threading.Event()
        self._output: ToolOutput | InputRequired | None = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._output = client.resume_task(task, on_progress=on_status)
            except BaseException as exc:  # handed to the waiting thread
                self._error = exc
            finally:
                self._done.set()

        self._thread = threading.Thread(target=run, name="mcpcore-task", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self, reason: str = "") -> bool:
        return False  # a task outlives the command: it is left running

    def result(self, timeout: float | None = None) -> Any:
        self._done.wait(timeout)
        if self._error is not None:
            raise self._error
        return self._output


class _StatusLines:
    """A task's status changes: to the progress line, and on stderr (one line per
    change) when stderr is not a terminal."""

    def __init__(self, cli: Cli, progress: Progress, task_id: str) -> None:
        self.cli = cli
        self.progress = progress
        self.task = shown_id(task_id)
        self.last: str | None = None

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.update(progress, total, message)
        if self.progress.enabled or not message or message == self.last:
            return
        self.last = message
        text = one_line(show(message, keep_newlines=False))
        self.cli.stderr.write(self.cli.redact(f"mcpcore: task {self.task}: {text}") + "\n")
        self.cli.stderr.flush()


def follow_call(
    cli: Cli,
    client: McpClient,
    tool_id: str,
    arguments: dict[str, Any],
    progress: Progress,
    resume_command: Callable[[str], str],
) -> ToolOutput:
    """Call ``tool_id``; when the server runs the call as a task, follow it (see the
    module docstring). Raises as ``call()`` does; Ctrl-C while following a task
    prints its id and ``resume_command(task_id)``, then raises KeyboardInterrupt."""
    started = progress.run(
        lambda: client.start_task(tool_id, arguments, on_progress=progress.update)
    )
    if not isinstance(started, TaskHandle):
        return _output(started)
    return follow_task(cli, client, started, progress, resume_command)


def follow_task(
    cli: Cli,
    client: McpClient,
    task: TaskHandle | str,
    progress: Progress,
    resume_command: Callable[[str], str],
) -> ToolOutput:
    """Follow a task to its end with the progress line; Ctrl-C leaves it running."""
    task_id = task.task_id if isinstance(task, TaskHandle) else task
    try:
        # Everything from here on is inside the try: a Ctrl-C that lands while the
        # worker thread is being started (it may already be polling the task)
        # still leaves the task running and says so.
        if isinstance(task, TaskHandle):
            progress.label = f"{progress.label} (task {shown_id(task_id)})"
        following = _Following(client, task, _StatusLines(cli, progress, task_id))
        return _output(progress.wait(following))
    except KeyboardInterrupt:
        cli.err(f"task {shown_id(task_id)} is still running on the server")
        cli.hint(f"pick it up again with: {resume_command(task_id)}")
        if client.era != "modern":
            # T8: a 2026-07-28 server has no sessions; in the handshake era this
            # run's session (or local server process) ends as it exits.
            cli.hint(_PER_SESSION)
        raise


def _output(value: object) -> ToolOutput:
    if isinstance(value, ToolOutput):
        return value
    # on_input="hook" (the default): a call never returns InputRequired; guard anyway.
    raise BackendError("the server asked for input the command line could not give")


# --- mcpcore task ---------------------------------------------------------------------


def cmd_task(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = split_operands(args, 1, "TASK_ID")
    if not operands:
        raise UsageError("give the id of the task (as 'mcpcore call' printed it)")
    [task_id] = operands
    if not task_id or len(task_id) > 256 or not task_id.isprintable():
        raise UsageError("a task id is 1 to 256 printable characters")
    [(name, outcome)] = chosen_servers(cli, args, url, single=True).items()
    if isinstance(outcome, ConfigError):
        raise cli.fail(EXIT_USAGE, invalid_entry(name, outcome, args))
    server: RemoteServer | LocalServer = outcome
    config = args.config

    def resume_command(tid: str) -> str:
        return command_for(args, server, config, "task", tid)

    with client_for(cli, server, name, args) as client:
        ensure_ready(cli, client, args.timeout, args=args, server=server, config=config)
        if args.cancel:
            client.cancel_task(task_id)
            if args.json:
                cli.out(dumps({"task_id": task_id, "cancelled": True}))
            else:
                cli.out(f"asked the server to cancel task {shown_id(task_id)}")
            return EXIT_OK
        progress = Progress(cli, f"task {shown_id(task_id)}")
        failed = False
        try:
            output = follow_task(cli, client, task_id, progress, resume_command)
        except BackendError as exc:
            kept = getattr(exc, "output", None)
            output = kept if isinstance(kept, ToolOutput) else ToolOutput(exc.text, None, True)
            failed = True
        print_output(cli, output, args.json)
        if failed:
            raise cli.fail(
                EXIT_TOOL_ERROR, f"the task {quote(shown_id(task_id))} reported an error"
            )
    return EXIT_OK
