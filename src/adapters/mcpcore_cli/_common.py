"""What every ``mcpcore`` command shares: the exit statuses and the defaults, the
errors that end a command (``UsageError``, ``Failure``), and ``Cli``, the output
of one run (stdout and stderr, styles, the secret redactor, the tool-note filter
and ``call --json``'s error object).

Exit status: 0 success; 1 the tool reported an error (``isError``) or ``check``
found a server not ready; 2 bad usage, an unknown tool or server, arguments
that do not fit the tool's input schema, or an invalid configuration (the token
file included); 3 an unavailable server (one that needs authorization
included), a transport error, a timeout, a failed sign-in or a protocol
violation by the server; 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import logging
from typing import TextIO

import mcpcore
from mcpcore import (
    LOCAL_REFUSAL_WORDS,
    AuthorizationRequired,
    BackendError,
    CallTimeout,
    ConfigError,
    InvalidArguments,
    LocalProtocolError,
    MayHaveRun,
    McpError,
    RemoteProtocolError,
    TransportError,
    Unavailable,
    UnknownTool,
)

from ._term import Redactor, Style, ToolNotes, dumps, isatty, show, terminal_width, write
from ._tokens import FileTokenStore, SignInStore, TokenFileError

__all__ = [
    "CLOSE_GRACE",
    "COMMANDS",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_LOGIN_TIMEOUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "LOCAL_NEEDS_FLAG",
    "LOCAL_NO_SIGN_IN",
    "LOGIN_MARGIN",
    "PROGRESS_AFTER",
    "SIGNATURE_LIMIT",
    "Cli",
    "Failure",
    "UsageError",
    "describe",
    "error_kind",
    "escaped_line",
    "exit_status",
]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
EXIT_INTERRUPTED = 130

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 300.0
# S3: a local server gets this long to exit on its own after its stdin closes (the
# library's default is 3 s). The CLI exits right after: a server that watches stdin
# is gone in a few hundred milliseconds even on a loaded machine, and one that does
# not (server-everything once a tool started its timers) would cost every command
# the whole grace. It is still terminated politely first, and killed a second later.
CLOSE_GRACE = 1.0
PROGRESS_AFTER = 1.0
#: The widest a tool's signature gets in the tools table's ARGS column.
SIGNATURE_LIMIT = 32
DEFAULT_LOGIN_TIMEOUT = 300.0
#: How long login waits, beyond the person's time, for discovery, registration,
#: the token request and the first connection.
LOGIN_MARGIN = 60.0
COMMANDS = (
    "demo",
    "tools",
    "call",
    "task",
    "resources",
    "read",
    "prompts",
    "prompt",
    "skills",
    "skill",
    "check",
    "pins",
    "login",
    "logout",
    "auth",
)
#: Why a local entry is not started when --allow-local is not given (C6).
LOCAL_NEEDS_FLAG = f"{LOCAL_REFUSAL_WORDS}: --allow-local starts it"
#: ... and for login and logout, which have no such flag.
LOCAL_NO_SIGN_IN = f"{LOCAL_REFUSAL_WORDS}: only url servers sign in"

_log = logging.getLogger("mcpcore_cli")


class UsageError(Exception):
    """Bad command-line usage: exit 2. The message never holds a header value."""


class Failure(Exception):
    """A failure already explained on stderr, with its exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


# --- the context of one run ------------------------------------------------------------


class Cli:
    """Streams, styles, the secret redactor and the tool-note filter for one invocation."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.style = Style(stdout)
        self.redact = Redactor()
        self.notes = ToolNotes()
        self._hinted: set[str] = set()
        # the token store, once a command needs it
        self.tokens: FileTokenStore | SignInStore | None = None
        #: ``call --json``: a failure before any output still prints a JSON object.
        self.json_errors = False
        self.wrote_out = False
        self.last_error: str | None = None
        self.error_kind: str | None = None

    def out(self, text: str = "") -> None:
        self.wrote_out = True
        write(self.stdout, text)

    def err(self, text: str) -> None:
        self.last_error = self.redact(text)
        write(self.stderr, self.redact(f"mcpcore: {text}"))

    def hint(self, text: str) -> None:
        """A hint on stderr, at most once per run."""
        if text not in self._hinted:
            self._hinted.add(text)
            write(self.stderr, self.redact(f"mcpcore: hint: {text}"))

    def table_width(self) -> int | None:
        """How wide a table may be: the terminal's width, or no limit when stdout is not one."""
        return terminal_width() if isatty(self.stdout) else None

    def fail(self, status: int, text: str, *, kind: str | None = None) -> Failure:
        """Say why on stderr; the ``Failure`` to raise. ``kind`` names the failure in
        ``call --json``'s error object (by default, from the status)."""
        self.err(text)
        self.error_kind = kind
        return Failure(status)

    def json_error(self, status: int) -> None:
        """``call --json``: when nothing was printed, the failure as a JSON object on
        stdout, so a script always reads JSON."""
        if not self.json_errors or self.wrote_out or status == EXIT_OK:
            return
        kind = self.error_kind or _KIND_OF_STATUS.get(status, "error")
        message = self.last_error or kind
        self.out(dumps({"error": {"kind": kind, "message": message}, "exit_status": status}))


_KIND_OF_STATUS = {
    EXIT_TOOL_ERROR: "tool_error",
    EXIT_USAGE: "usage",
    EXIT_UNAVAILABLE: "unavailable",
    EXIT_INTERRUPTED: "interrupted",
}


def error_kind(exc: BaseException) -> str:
    """What went wrong, as ``call --json``'s error object names it."""
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (CallTimeout, "timeout"),
        (MayHaveRun, "may_have_run"),  # U3: before "transport", which it also is
        (UnknownTool, "unknown_tool"),
        (InvalidArguments, "invalid_arguments"),
        (ConfigError, "config"),
        (TokenFileError, "config"),
        (AuthorizationRequired, "needs_authorization"),
        (Unavailable, "unavailable"),
        (TransportError, "transport"),
        (RemoteProtocolError, "protocol"),
        (UsageError, "usage"),
        (LocalProtocolError, "usage"),
        (KeyboardInterrupt, "interrupted"),
    )
    for cls, kind in kinds:
        if isinstance(exc, cls):
            return kind
    return "error"


def exit_status(exc: BaseException) -> int:
    """The exit status for a library error (see the module docstring)."""
    if isinstance(exc, BackendError):
        return EXIT_TOOL_ERROR
    if isinstance(exc, (ConfigError, UnknownTool, LocalProtocolError, UsageError)):
        return EXIT_USAGE
    if isinstance(exc, mcpcore.ResourceNotFound):
        return EXIT_USAGE  # F10: the URI given names nothing there
    if isinstance(exc, (Unavailable, TransportError, RemoteProtocolError, McpError)):
        return EXIT_UNAVAILABLE
    return EXIT_UNAVAILABLE


def describe(exc: BaseException) -> str:
    """A one-line, escaped description of a library error."""
    text = str(exc) or type(exc).__name__
    return show(text, keep_newlines=False)


def escaped_line(text: str | None) -> str:
    return "" if text is None else show(text, keep_newlines=False)
