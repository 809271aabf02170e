"""The ``mcpcore`` commands: demo, tools, call, task, resources, read, prompts,
prompt, check, login, logout, auth status.

Exit status: 0 success; 1 the tool reported an error (``isError``) or ``check``
found a server not ready; 2 bad usage, an unknown tool or server, arguments
that do not fit the tool's input schema, or an invalid configuration (the token
file included); 3 an unavailable server (one that needs authorization
included), a transport error, a timeout, a failed sign-in or a protocol
violation by the server; 130 interrupted (Ctrl-C). ``tools --config``
prints the tools of every ready server and exits 0 only when every selected
server is ready: otherwise 2 when an entry is invalid, else 3.

OAuth (A1-A3): ``login`` signs in through the system browser and a loopback
redirect listener and keeps the tokens in a file only its owner can read
(``_tokens.FileTokenStore``); ``tools``, ``call`` and ``check`` use those tokens
(refreshing them when they can) but never ask a person: a server that needs a
sign-in is unavailable with "run `mcpcore login …`". No token, refresh token,
code, verifier or client secret is ever printed.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TextIO, TypeVar, cast

import mcpcore
from mcpcore import (
    LOCAL_REFUSAL_WORDS,
    AudioBlock,
    AuthOptions,
    AuthorizationRequired,
    Availability,
    BackendError,
    CallTimeout,
    ConfigError,
    ContentBlock,
    ImageBlock,
    InvalidArguments,
    LocalProtocolError,
    LocalServer,
    McpError,
    OtherBlock,
    RemoteProtocolError,
    RemoteServer,
    ResourceBlock,
    ResourceLinkBlock,
    TaskHandle,
    TextBlock,
    TokenSet,
    Tool,
    ToolOutput,
    TransportError,
    Unavailable,
    UnknownTool,
    arguments_from_pairs,
    check_arguments,
    describe_parameters,
    is_argument_pair,
    load_mcp_json,
    parse_server,
    signature,
    suggest_ids,
)

from ._ask import TerminalAsker
from ._declared import add_session_flags, client_hooks, credential_headers, in_cli_words, limit_hint
from ._protocol import add_protocol_option, protocol_options, protocol_words
from ._tasks import cmd_task, follow_call, shown_id
from ._term import (
    LogFormatter,
    Redactor,
    Style,
    ToolNotes,
    cut,
    dumps,
    isatty,
    one_line,
    prepare_streams,
    quote,
    show,
    table,
    terminal_width,
    width,
    write,
)
from ._tokens import FileTokenStore, StoreView, TokenFileError, default_token_file

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

    from ._login import LoopbackListener

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "exit_status",
    "main",
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
    "check",
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


class _Parser(argparse.ArgumentParser):
    """argparse, but errors raise instead of exiting (so ``main`` returns a status)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


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
        self.tokens: FileTokenStore | None = None  # the token file, once a command needs it
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


def _error_kind(exc: BaseException) -> str:
    """What went wrong, as ``call --json``'s error object names it."""
    kinds: tuple[tuple[type[BaseException], str], ...] = (
        (CallTimeout, "timeout"),
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


def _describe(exc: BaseException) -> str:
    """A one-line, escaped description of a library error."""
    text = str(exc) or type(exc).__name__
    return show(text, keep_newlines=False)


_SERVER_PREFIX = re.compile(r"""^server (?:'[^']*'|"[^"]*"): """)


def _entry_reason(exc: ConfigError) -> str:
    """An invalid entry's reason without the leading "server 'name': " (shown apart)."""
    return _SERVER_PREFIX.sub("", str(exc), count=1)


def _local_refused(exc: ConfigError, args: argparse.Namespace) -> bool:
    """A local entry refused only because --allow-local was not given (C6): without
    it, the core refuses every entry with a ``command`` before reading it further."""
    return exc.key == "command" and not getattr(args, "allow_local", False)


def _reason(exc: ConfigError, args: argparse.Namespace) -> str:
    """Why an entry is invalid, in the command line's words: a flag it lacks is named."""
    if _local_refused(exc, args):
        return str(getattr(args, "local_refusal", LOCAL_NEEDS_FLAG))
    return _entry_reason(exc)


def _invalid(name: str, exc: ConfigError, args: argparse.Namespace) -> str:
    shown = show(_reason(exc, args), keep_newlines=False)
    return f"server {quote(name)} is invalid: {shown}"


# --- parsing ---------------------------------------------------------------------------


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


_EXIT_HELP = (
    "exit status:\n"
    "  0    success\n"
    "  1    the tool reported an error (isError), or check found a server not ready\n"
    "  2    bad usage, an unknown tool or server, arguments that do not fit the\n"
    "       tool's input schema, or invalid configuration\n"
    "  3    a server unavailable (or needing a sign-in: run 'mcpcore login'), a\n"
    "       transport error, a timeout, a failed sign-in, or a protocol violation\n"
    "       by the server\n"
    "  130  interrupted (Ctrl-C)\n"
    "tools --config prints the tools of every ready server, and exits 0 only when\n"
    "every selected server is ready: otherwise 2 if an entry is invalid, else 3."
)


def _wrapped(text: str) -> str:
    """A description wrapped as argparse would (for parsers whose epilog is kept verbatim)."""
    return textwrap.fill(text, width=min(terminal_width(), 80) - 2)


def _top_parser() -> _Parser:
    parser = _Parser(
        prog="mcpcore",
        usage="mcpcore [-h] [-V] [-v] COMMAND [ARGS...]",
        description="A Model Context Protocol client: list and call the tools of MCP servers.",
        epilog=(
            "commands:\n"
            "  demo    start the bundled demo server on a free loopback port, connect,\n"
            "          list its tools, call each one, read its resources, get a prompt\n"
            "          and print what happened\n"
            "  tools   list the tools of a server (URL) or of the servers of an mcp.json\n"
            "          (--config FILE): a table, or JSON with --json; 'tools URL TOOL'\n"
            "          shows one tool's parameters\n"
            "  call    call one tool with arguments (a JSON object, or key=value pairs\n"
            "          typed by the tool's schema, checked before sending) and print its\n"
            "          result (--json: text, structured content and content blocks;\n"
            "          --save DIR: write images, audio and binary resources to files); a\n"
            "          call the server runs as a task is followed, its status shown, and\n"
            "          Ctrl-C leaves it running and prints its id\n"
            "  task    'task ID': pick up a task 'call' started and print its result like\n"
            "          call; 'task ID --cancel' asks the server to cancel it\n"
            "  resources  list a server's resources and resource templates\n"
            "  read    read one resource by URI and print it (--save DIR: binary parts\n"
            "          to files)\n"
            "  prompts list a server's prompts and their arguments\n"
            "  prompt  get one prompt's messages (arguments: key=value pairs, or a JSON\n"
            "          object of strings)\n"
            "  check   validate an mcp.json and probe every server in it at once: one\n"
            "          row per server (ready, unavailable or invalid, and why)\n"
            "  login   sign in to a server that needs authorization (OAuth): opens the\n"
            "          browser, and keeps the tokens in a file only you can read\n"
            "  logout  forget the tokens of a server (--all: of every server)\n"
            "  auth    'auth status': the servers signed in to, their issuer, scopes\n"
            "          and expiry (never a token)\n\n"
            "Run 'mcpcore COMMAND --help' for a command's options.\n\n" + _EXIT_HELP
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="store_true", help="print the version")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    parser.add_argument(
        "command",
        nargs="?",
        choices=COMMANDS,
        metavar="COMMAND",
        help=(
            "demo, tools, call, task, resources, read, prompts, prompt, check, login, "
            "logout or auth (described below)"
        ),
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging on stderr (never shows headers)"
    )


def _permissions(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-local",
        action="store_true",
        help=(
            "start the local servers (entries with a 'command') of the mcp.json as child "
            "processes; their plugin root (${PLUGIN_ROOT}, and the default working "
            "directory) is the mcp.json's directory"
        ),
    )
    parser.add_argument(
        "--allow-http",
        action="store_true",
        help=(
            "allow plain http:// to hosts other than loopback (unencrypted: the headers, "
            "tokens included, travel in clear text)"
        ),
    )


def _tool_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help=(
            "offer only the tools whose name matches GLOB (repeatable, or comma-separated; "
            "a GLOB with '/' matches the whole id, server/tool)"
        ),
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="hide the tools whose name matches GLOB (repeatable, or comma-separated; wins)",
    )


def _globs(values: list[str] | None) -> list[str] | None:
    """--include/--exclude values: repeated and comma-separated, edge spaces dropped."""
    if values is None:
        return None
    return [glob.strip() for value in values for glob in value.split(",") if glob.strip()]


def _token_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help=(
            "the file 'mcpcore login' keeps tokens in (default: $MCPCORE_TOKEN_FILE, else "
            "$XDG_DATA_HOME/mcpcore/tokens.json, else ~/.local/share/mcpcore/tokens.json)"
        ),
    )


def _connection(parser: argparse.ArgumentParser, *, server_flag: bool) -> None:
    parser.add_argument("--config", metavar="FILE", help="an mcp.json file instead of a URL")
    if server_flag:
        parser.add_argument("--server", metavar="NAME", help="with --config: only this server")
    parser.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'Name: value'",
        help="an HTTP header for a URL (repeatable); the value may use ${env:VAR}",
    )
    parser.add_argument(
        "--name", default="server", help="the server's name for a URL (default: server)"
    )
    if server_flag:
        timeout_help = (
            "at most S seconds to connect to the servers and list their tools "
            f"(default {DEFAULT_CONNECT_TIMEOUT:g})"
        )
    else:
        timeout_help = (
            "at most S seconds to connect and list the tools "
            f"(default {DEFAULT_CONNECT_TIMEOUT:g}), then, counted afresh, at most S seconds "
            f"for the call itself (default {DEFAULT_CALL_TIMEOUT:g})"
        )
    parser.add_argument("--timeout", type=_positive_seconds, metavar="S", help=timeout_help)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--no-tasks",
        action="store_true",
        help=(
            "do not declare tasks: a server then answers every call itself, and tools "
            "it runs only as tasks are hidden"
        ),
    )
    add_protocol_option(parser)
    _permissions(parser)
    _tool_filters(parser)
    _token_file(parser)
    add_session_flags(parser)


def _command_parser(command: str) -> _Parser:
    if command == "demo":
        parser = _Parser(
            prog="mcpcore demo",
            description=(
                "Start the bundled demo MCP server on a free loopback port, connect, "
                "list its tools, call each one, list and read its resources, get a prompt "
                "and print what happened."
            ),
        )
    elif command == "tools":
        parser = _Parser(
            prog="mcpcore tools",
            usage=(
                "mcpcore tools (URL [TOOL] | --config FILE [--server NAME] [TOOL]) "
                "[-H 'Name: value']... [--json] [--name NAME] [--timeout S] "
                "[--protocol auto|legacy|modern] [--allow-local] [--allow-http] "
                "[--token-file PATH] [-v]"
            ),
            description=_wrapped(
                "List the tools of one server (URL) or of the servers of an mcp.json: "
                "their ids, whether they are read-only, their arguments (a trailing ? marks "
                "an optional one) and their descriptions. With TOOL, show that tool's "
                "parameters: name, type, whether required, description. With --config, the "
                "tools of every ready server are printed; the exit status is 0 only when "
                "every selected server is ready, otherwise 2 if an entry is invalid, else 3 "
                "(a server unavailable)."
            ),
            epilog=(
                "positional arguments:\n"
                "  URL   a Streamable HTTP endpoint (or --config FILE instead)\n"
                "  TOOL  a tool whose parameters to show: its name with a URL, its id\n"
                "        (server/tool) with --config"
            ),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument("operands", nargs="*", help=argparse.SUPPRESS)
        _connection(parser, server_flag=True)
    elif command == "call":
        parser = _Parser(
            prog="mcpcore call",
            usage=(
                "mcpcore call (URL | --config FILE) TOOL [ARGS_JSON | key=value...] "
                "[-H 'Name: value']... [--timeout S] [--json] [--save DIR] [--no-check] [--no-input] "
                "[--name NAME] [--protocol auto|legacy|modern] [--allow-local] [--allow-http] "
                "[--token-file PATH] [-v]"
            ),
            description=_wrapped(
                "Call one tool and print its rendered result. The arguments are checked "
                "against the tool's input schema before the call is sent (--no-check sends "
                "them as given); 'mcpcore tools URL TOOL' shows a tool's parameters."
            ),
            epilog=(
                "positional arguments:\n"
                "  URL        a Streamable HTTP endpoint (or --config FILE instead)\n"
                "  TOOL       the tool's name with a URL; its id (server/tool) with --config\n"
                '  ARGS_JSON  the arguments as one JSON object, e.g. \'{"a": 2, "b": 3}\'\n'
                "             ('-' reads it from stdin)\n"
                "  key=value  or the arguments as pairs, e.g. a=2 b=3: each value is read as\n"
                "             its parameter's type (a string parameter takes the text as it\n"
                "             is; a number, an integer, true or false, null; an array or an\n"
                "             object as JSON); key:=JSON gives any JSON value as it is\n"
                "  (none)     the tool is called with no arguments"
            ),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        parser.add_argument("operands", nargs="*", help=argparse.SUPPRESS)
        _connection(parser, server_flag=False)
        parser.add_argument(
            "--no-check",
            action="store_true",
            help="send the arguments without checking them against the tool's input schema",
        )
        parser.add_argument(
            "--save",
            metavar="DIR",
            help=(
                "write the result's images, audio and binary resources to files in DIR "
                "(created if missing; never overwrites: a taken name gets a number)"
            ),
        )
        parser.add_argument(
            "--no-input",
            action="store_true",
            help=(
                "decline any question the server asks during the call (without a terminal "
                "they are declined anyway; on one, each form field or URL is asked)"
            ),
        )
    elif command == "task":
        parser = _Parser(
            prog="mcpcore task",
            usage=f"mcpcore task {_SERVER_FORMS} TASK_ID [--cancel] {_FLAGS}",
            description=_wrapped(
                "Pick up a task that 'mcpcore call' started (the server runs the call in "
                "the background), follow it to its end and print its result like call: "
                "the same exit statuses; Ctrl-C leaves the task running. With --cancel, "
                "ask the server to cancel it instead. With --config, --server NAME says "
                "which server."
            ),
        )
        parser.add_argument("operands", nargs="*", help=argparse.SUPPRESS)
        _connection(parser, server_flag=True)
        parser.add_argument(
            "--cancel", action="store_true", help="ask the server to cancel the task"
        )
    elif command in _FEATURE_USAGE:
        usage, description = _FEATURE_USAGE[command]
        parser = _Parser(prog=f"mcpcore {command}", usage=usage, description=_wrapped(description))
        parser.add_argument("operands", nargs="*", help=argparse.SUPPRESS)
        _connection(parser, server_flag=True)
        if command == "read":
            parser.add_argument(
                "--save",
                metavar="DIR",
                help="write the binary parts to files in DIR (created if missing; never overwrites)",
            )
    elif command in ("login", "logout", "auth"):
        parser = _auth_parser(command)
    else:
        parser = _Parser(
            prog="mcpcore check",
            usage=(
                "mcpcore check FILE [--json] [--timeout S] [--protocol auto|legacy|modern] "
                "[--allow-local] [--allow-http] [--token-file PATH] [-v]"
            ),
            description=(
                "Validate an mcp.json and probe every server at once: one row per server "
                "(name, ready / unavailable / invalid, tool count, reason). Exits 1 if any "
                "server is not ready."
            ),
        )
        parser.add_argument("file", metavar="FILE", help="the mcp.json file")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument(
            "--timeout",
            type=_positive_seconds,
            metavar="S",
            help=(
                "at most S seconds for all the servers to connect and list their tools "
                f"(default {DEFAULT_CONNECT_TIMEOUT:g})"
            ),
        )
        add_protocol_option(parser)
        _permissions(parser)
        _tool_filters(parser)
        _token_file(parser)
        add_session_flags(parser)
    _common(parser)
    return parser


def _auth_parser(command: str) -> _Parser:
    """The parsers of ``login``, ``logout`` and ``auth``."""
    if command == "login":
        parser = _Parser(
            prog="mcpcore login",
            usage=(
                "mcpcore login (URL | --config FILE --server NAME) [--no-browser] [--scope S] "
                "[-H 'Name: value']... [--name NAME] [--timeout S] [--allow-http] "
                "[--token-file PATH] [-v]"
            ),
            description=(
                "Sign in to a server that needs authorization (OAuth 2.1, authorization "
                "code with PKCE): the authorization URL opens in the system browser (and "
                "is printed on stderr); once you have signed in, the browser comes back to "
                "a listener on 127.0.0.1, and the tokens are kept in the token file, which "
                "only you can read. tools, call and check then use them."
            ),
        )
        parser.add_argument("url", nargs="?", metavar="URL", help="a Streamable HTTP endpoint")
        parser.add_argument("--config", metavar="FILE", help="an mcp.json file instead of a URL")
        parser.add_argument("--server", metavar="NAME", help="with --config: the server")
        parser.add_argument(
            "--no-browser",
            action="store_true",
            help="do not open a browser: only print the URL to open (on this machine)",
        )
        parser.add_argument(
            "--scope",
            metavar="S",
            help="more scopes to ask for, besides those the server names (space-separated)",
        )
        parser.add_argument(
            "-H",
            "--header",
            action="append",
            default=[],
            metavar="'Name: value'",
            help="an HTTP header for a URL (repeatable); the value may use ${env:VAR}",
        )
        parser.add_argument(
            "--name", default="server", help="the server's name for a URL (default: server)"
        )
        parser.add_argument(
            "--timeout",
            type=_positive_seconds,
            metavar="S",
            help=f"at most S seconds to sign in (default {DEFAULT_LOGIN_TIMEOUT:g})",
        )
        parser.add_argument(
            "--allow-http",
            action="store_true",
            help=(
                "allow plain http:// to hosts other than loopback, for the server and its "
                "authorization server (unencrypted: tokens travel in clear text)"
            ),
        )
        parser.set_defaults(allow_local=False, local_refusal=LOCAL_NO_SIGN_IN)
    elif command == "logout":
        parser = _Parser(
            prog="mcpcore logout",
            usage=(
                "mcpcore logout (URL | --config FILE --server NAME | --all) "
                "[--token-file PATH] [-v]"
            ),
            description=(
                "Forget the tokens kept for a server (and the client registered for its "
                "authorization server, when no other server uses it); --all removes the "
                "token file. The tokens are not revoked at the authorization server."
            ),
        )
        parser.add_argument("url", nargs="?", metavar="URL", help="the server's URL")
        parser.add_argument("--config", metavar="FILE", help="an mcp.json file instead of a URL")
        parser.add_argument("--server", metavar="NAME", help="with --config: the server")
        parser.add_argument("--all", action="store_true", help="forget every server's tokens")
        parser.set_defaults(
            allow_local=False,
            allow_http=True,
            header=[],
            name="server",
            local_refusal=LOCAL_NO_SIGN_IN,
        )
    else:
        parser = _Parser(
            prog="mcpcore auth",
            usage="mcpcore auth status [--json] [--token-file PATH] [-v]",
            description=(
                "status: the servers signed in to (with 'mcpcore login'): issuer, scopes, "
                "expiry and whether the tokens can be refreshed. Never shows a token."
            ),
        )
        parser.add_argument(
            "action",
            metavar="status",
            choices=("status",),
            help="the only action: show the servers signed in to",
        )
        parser.add_argument("--json", action="store_true", help="print JSON")
    _token_file(parser)
    return parser


def _parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``-H 'Name: value'`` arguments → a headers mapping. Messages never show a value."""
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for number, value in enumerate(values, 1):
        name, colon, rest = value.partition(":")
        name = name.strip()
        if not colon or not name:
            raise UsageError(
                f"-H #{number}: expected 'Name: value' (the header name, a colon, the value)"
            )
        if name.lower() in seen:
            raise UsageError(f"-H #{number}: header {quote(name)} is given more than once")
        seen.add(name.lower())
        headers[name] = rest.strip()
    return headers


def _parse_arguments(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    if text == "-":
        text = sys.stdin.read()

    def no_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not valid JSON")

    try:
        value = json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"ARGS_JSON is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"ARGS_JSON is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(value), "a number"
        )
        raise UsageError(f"ARGS_JSON must be a JSON object, not {kind}")
    return value


# --- servers ---------------------------------------------------------------------------


Outcome = RemoteServer | LocalServer | ConfigError


def _home() -> str:
    return os.path.expanduser("~")


_PLAIN_HTTP = "plain http to a non-loopback host"


def _url_server(cli: Cli, args: argparse.Namespace, url: str) -> RemoteServer:
    """A server given on the command line: plain http only to loopback unless
    ``--allow-http`` (C5)."""
    headers = _parse_headers(args.header)
    entry: dict[str, Any] = {"url": url}
    if headers:
        entry["headers"] = headers
    try:
        server = parse_server(
            args.name, entry, env=os.environ, home=_home(), allow_insecure_http=args.allow_http
        )
    except ConfigError as exc:
        if _PLAIN_HTTP in str(exc):
            raise ConfigError(f"{exc}; --allow-http allows it", key=exc.key) from None
        raise
    assert isinstance(server, RemoteServer)
    cli.redact.add(server.headers.values())
    return server


def _load_config(cli: Cli, path: str, args: argparse.Namespace) -> dict[str, Outcome]:
    """The outcomes of an mcp.json; local entries allowed with ``--allow-local``, their
    plugin root the file's directory."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {quote(path)}: {exc.strerror or exc}") from None
    plugin_root = os.path.dirname(os.path.abspath(path)) if args.allow_local else None
    try:
        outcomes = load_mcp_json(
            data,
            env=os.environ,
            home=_home(),
            plugin_root=plugin_root,
            allow_local=args.allow_local,
            allow_insecure_http=args.allow_http,
            origin="user",  # the user's own file, not a plugin's (C9)
        )
    except ConfigError as exc:
        raise _about_file(exc, path) from None
    for outcome in outcomes.values():
        if isinstance(outcome, RemoteServer):
            cli.redact.add(outcome.headers.values())
    return outcomes


def _about_file(exc: ConfigError, path: str) -> ConfigError:
    """A whole-file error naming the file given (not "mcp.json"); the core's message
    already suggests 'mcpServers' for a file in VS Code's format."""
    message = str(exc)
    if message.startswith("mcp.json"):
        message = quote(path) + message[len("mcp.json") :]
    return ConfigError(message, key=exc.key)


def _hint_refusals(cli: Cli, outcomes: Iterable[Outcome], args: argparse.Namespace) -> None:
    """Say once which option lifts a refusal the user may not know is optional (the
    local-server refusal names its flag itself)."""
    for outcome in outcomes:
        if (
            isinstance(outcome, ConfigError)
            and not _local_refused(outcome, args)
            and _PLAIN_HTTP in _entry_reason(outcome)
        ):
            cli.hint("--allow-http allows plain http:// to hosts other than loopback")


def _outcome_name(key: str, outcome: Outcome) -> str:
    return key if isinstance(outcome, ConfigError) else outcome.name


def _client(
    cli: Cli,
    server: Outcome,
    name: str,
    args: argparse.Namespace,
    *,
    elicit: TerminalAsker | None = None,
) -> McpClient:
    from mcpcore_threaded import McpClient  # imported when needed: a quick --help

    timeout: float | None = args.timeout
    options: dict[str, Any] = {
        "startup_timeout": timeout or DEFAULT_CONNECT_TIMEOUT,
        "allow_local": args.allow_local,
        "allow_insecure_http": args.allow_http,
        "close_grace": CLOSE_GRACE,
        # T7: the command line follows tasks (the library's default is off)
        "tasks": not getattr(args, "no_tasks", False),
    }
    if timeout is not None:
        options["call_timeout"] = timeout
    options.update(protocol_options(args))  # E1: else the entry's own pin, else auto
    for option in ("include", "exclude"):
        globs = _globs(getattr(args, option, None))
        if globs is not None:
            options[option] = globs
    auth = _stored_auth(cli, server, args)
    if auth is not None:
        options["auth"] = auth
    # The same capabilities for every command (Q6: call's questions are asked, or
    # declined), --log-level and --max-message-size: decided in one place.
    options.update(client_hooks(cli, args, elicit))
    return McpClient(name, server, **options)


def _stored_auth(cli: Cli, server: Outcome, args: argparse.Namespace) -> AuthOptions | None:
    """OAuth with the tokens ``login`` stored, and no way to ask a person (A3): for a
    remote server that does not bring its own credentials (``Authorization``, an API
    key: ``credential_headers``)."""
    if not isinstance(server, RemoteServer):
        return None
    if credential_headers(server.headers):
        # A static credential (-H or the mcp.json: Authorization, an API key...): never
        # a second Authorization, and a 401 is said as it is, not as "run login".
        return None
    store = _token_store(cli, args)
    return AuthOptions(
        store=StoreView(store, keep_new_clients=False), allow_insecure_http=args.allow_http
    )


def _token_store(cli: Cli, args: argparse.Namespace) -> FileTokenStore:
    """The run's token file, checked once: an unusable one is a configuration error."""
    if cli.tokens is None:
        path = args.token_file or default_token_file()
        store = FileTokenStore(path)
        try:
            store.check()
        except TokenFileError as exc:
            raise cli.fail(EXIT_USAGE, show(str(exc), keep_newlines=False)) from None
        cli.tokens = store
    return cli.tokens


def _needs_login(availability: Availability) -> bool:
    """The server needs a person to sign in, and this client cannot ask one."""
    return not availability.ok and isinstance(availability.error, AuthorizationRequired)


def _login_hint(args: argparse.Namespace, server: RemoteServer, config: str | None) -> str:
    """The sign-in hint: needs authorization: run `mcpcore login …` (ready to paste)."""
    words = ["mcpcore", "login"]
    if config is not None:
        words += ["--config", config, "--server", server.name]
    elif server.display_url == server.url:
        words.append(server.url)
    else:
        words.append("URL")  # the URL has a secret part (user info, query): not shown
    if getattr(args, "allow_http", False) and not server.url.startswith("https:"):
        words.append("--allow-http")
    if getattr(args, "token_file", None):
        words += ["--token-file", args.token_file]
    command = " ".join(w if w == "URL" else shlex.quote(one_line(w)) for w in words)
    suffix = " (with the same URL)" if "URL" in words else ""
    return f"needs authorization: run `{command}`{suffix}"


def _not_ready(
    args: argparse.Namespace,
    name: str,
    server: Outcome | None,
    availability: Availability,
    *,
    config: str | None,
) -> str:
    """Why a server is not ready, as a message: the sign-in hint when that is why."""
    if _needs_login(availability) and isinstance(server, RemoteServer):
        return f"server {quote(name)} {_login_hint(args, server, config)}"
    reason = in_cli_words(availability.reason or "unavailable", availability.error)
    shown = show(reason, keep_newlines=False)
    lifted = limit_hint(availability.error)
    refused = getattr(availability.error, "status", None) in (401, 403)
    given = credential_headers(server.headers) if isinstance(server, RemoteServer) else []
    if refused and given and not lifted:
        names = ", ".join(quote(n) for n in given)
        lifted = f"the server did not accept the credentials given in {names}"
    return f"server {quote(name)} is unavailable: {shown}" + (f"; {lifted}" if lifted else "")


def _ensure_ready(
    cli: Cli,
    client: McpClient,
    timeout: float | None,
    *,
    args: argparse.Namespace | None = None,
    server: Outcome | None = None,
    config: str | None = None,
) -> None:
    budget = timeout or DEFAULT_CONNECT_TIMEOUT
    availability = _ready_by(client, time.monotonic() + budget, budget)
    if not availability.ok:
        if args is not None and server is not None:
            text = _not_ready(args, client.name, server, availability, config=config)
            raise cli.fail(EXIT_UNAVAILABLE, text)
        reason = show(availability.reason or "unavailable", keep_newlines=False)
        raise cli.fail(EXIT_UNAVAILABLE, f"server {quote(client.name)} is unavailable: {reason}")


def _ready_by(client: McpClient, deadline: float, budget: float) -> Availability:
    """Wait for a server until ``deadline`` (``budget`` seconds from the start); one
    still starting then is said so in the user's terms: what it waited for, and for
    how long (the whole budget, not what was left of it for this server)."""
    availability = client.ready(max(0.0, deadline - time.monotonic()))
    timed_out = isinstance(availability.error, CallTimeout) or (
        availability.error is None and time.monotonic() >= deadline
    )
    if availability.ok or not timed_out:
        return availability
    reason = (
        f"not ready within {budget:g} s: still connecting, or listing its tools "
        "(--timeout S waits longer)"
    )
    return Availability(False, reason)


def _check_connection_flags(args: argparse.Namespace, url: str | None) -> None:
    if args.config is not None and url is not None:
        raise UsageError("give either a URL or --config FILE, not both")
    if args.config is None and url is None:
        raise UsageError("give a server URL or --config FILE")
    if args.config is not None and args.header:
        raise UsageError("-H applies to a URL; with --config, put the headers in the file")
    if getattr(args, "server", None) is not None and args.config is None:
        raise UsageError("--server applies to --config")
    if args.allow_local and args.config is None:
        raise UsageError("--allow-local applies to --config (local servers are mcp.json entries)")


# --- tools -----------------------------------------------------------------------------


def _tool_json(tool: Tool) -> dict[str, Any]:
    return {
        "id": tool.id,
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "parameters": tool.parameters,
        "output_schema": tool.output_schema,
        "annotations": tool.annotations,
        "read_only": tool.read_only,
    }


#: The description keeps at least this many cells when the ARGS column is shown.
DESCRIPTION_ROOM = 24


def _tool_table(cli: Cli, tools: Sequence[Tool]) -> list[str]:
    """ID, RO, ARGS (the short signature, where the width allows) and DESCRIPTION."""
    fit = cli.table_width()
    ids = [one_line(t.id) for t in tools]
    marks = ["ro" if t.read_only else "" for t in tools]
    signatures = [one_line(signature(t.parameters, SIGNATURE_LIMIT)) for t in tools]
    descriptions = [one_line(t.description) for t in tools]
    used = sum(
        max([len(h)] + [width(c) for c in col]) + 2 for h, col in (("ID", ids), ("RO", marks))
    )
    arguments = max([len("ARGS")] + [width(c) for c in signatures]) + 2
    if fit is None or used + arguments + DESCRIPTION_ROOM <= fit:
        return table(
            ("ID", "RO", "ARGS", "DESCRIPTION"),
            zip(ids, marks, signatures, descriptions, strict=True),
            style=cli.style,
            fit=fit,
            paint={1: cli.style.green},
        )
    return table(
        ("ID", "RO", "DESCRIPTION"),
        zip(ids, marks, descriptions, strict=True),
        style=cli.style,
        fit=fit,
        paint={1: cli.style.green},
    )


def _tool_details(cli: Cli, tool: Tool) -> None:
    """One tool: its id, description and parameters."""
    read_only = "  " + cli.style.green("(read-only)") if tool.read_only else ""
    cli.out(cli.style.bold(one_line(tool.id)) + read_only)
    if tool.description:
        for line in show(tool.description).splitlines():
            cli.out(f"  {line}")
    parameters = describe_parameters(tool.parameters)
    cli.out()
    if not parameters:
        cli.out("no parameters")
    else:
        rows = [
            (
                one_line(p.name),
                one_line(p.type),
                "yes" if p.required else "no",
                one_line(
                    (p.description or "")
                    + (f" (default {p.default})" if p.default is not None else "")
                ).strip(),
            )
            for p in parameters
        ]
        for line in table(
            ("PARAMETER", "TYPE", "REQUIRED", "DESCRIPTION"),
            rows,
            style=cli.style,
            fit=cli.table_width(),
        ):
            cli.out(line)


def _parameters_json(tool: Tool) -> list[dict[str, Any]]:
    return [
        {
            "name": p.name,
            "type": p.type,
            "required": p.required,
            "description": p.description,
            "default": p.default,
        }
        for p in describe_parameters(tool.parameters)
    ]


def _print_tools(cli: Cli, tools: Sequence[Tool], as_json: bool, *, none: str | None) -> None:
    """The tools as JSON or a table; with no tools, ``none`` (if any) goes to stderr."""
    if as_json:
        cli.out(dumps([_tool_json(t) for t in tools]))
    elif tools:
        for line in _tool_table(cli, tools):
            cli.out(line)
    elif none is not None:
        cli.err(none)


def _tools_operands(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``tools``' positionals: (URL, TOOL) with a URL, (None, TOOL) with --config."""
    operands: list[str] = list(args.operands)
    limit = 1 if args.config is not None else 2
    if len(operands) > limit:
        expected = "--config FILE [TOOL]" if args.config is not None else "URL [TOOL]"
        raise UsageError(f"expected {expected}, got {len(operands)} operands")
    if args.config is not None:
        return None, operands[0] if operands else None
    return (operands[0] if operands else None), (operands[1] if len(operands) > 1 else None)


def cmd_tools(cli: Cli, args: argparse.Namespace) -> int:
    args.url, wanted_tool = _tools_operands(args)
    _check_connection_flags(args, args.url)
    if args.url is not None:
        server = _url_server(cli, args, args.url)
        with _client(cli, server, server.name, args) as client:
            _ensure_ready(cli, client, args.timeout, args=args, server=server)
            if wanted_tool is not None:
                return _show_tool(cli, args, client, server, wanted_tool, config=None)
            _print_tools(cli, client.tools, args.json, none="the server has no tools")
        return EXIT_OK
    if wanted_tool is not None:
        return _show_configured_tool(cli, args, wanted_tool)

    # Partial success: every ready server's tools are printed; the status says whether
    # all selected servers were ready (0), an entry is invalid (2) or a server is not (3).
    outcomes = _load_config(cli, args.config, args)
    selected = {_outcome_name(k, o): o for k, o in outcomes.items()}
    if args.server is not None:
        wanted = args.server.lower()
        if wanted not in selected:
            raise UsageError(f"no server {quote(args.server)} in {quote(args.config)}")
        selected = {wanted: selected[wanted]}
    if not selected:
        cli.err(f"{quote(args.config)} has no servers")
        return EXIT_OK
    status = EXIT_OK
    for name, outcome in selected.items():
        if isinstance(outcome, ConfigError):
            cli.err(_invalid(name, outcome, args))
            status = EXIT_USAGE
    _hint_refusals(cli, selected.values(), args)
    from mcpcore_threaded import McpHub

    valid = {n: o for n, o in selected.items() if not isinstance(o, ConfigError)}
    hub = McpHub({n: _client(cli, o, n, args) for n, o in valid.items()})
    with hub:
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        tools: list[Tool] = []
        ready = 0
        for name, client in hub.clients.items():
            availability = _ready_by(client, deadline, budget)
            if availability.ok:
                ready += 1
                tools.extend(client.tools)
            else:
                text = _not_ready(args, name, valid.get(name), availability, config=args.config)
                cli.err(text)
                if status == EXIT_OK:
                    status = EXIT_UNAVAILABLE
        # "no tools" only when a server answered with none: never after a failure's reason.
        none = None
        if ready and status == EXIT_OK:
            none = "the server has no tools" if ready == 1 else "the servers have no tools"
        _print_tools(cli, tools, args.json, none=none)
    return status


def _show_tool(
    cli: Cli,
    args: argparse.Namespace,
    client: McpClient,
    server: RemoteServer | LocalServer,
    written: str,
    *,
    config: str | None,
) -> int:
    """``tools URL TOOL``: one tool's parameters, as a table or JSON."""
    tool = _find_tool(cli, args, client, server, written, config=config)
    if args.json:
        cli.out(dumps({**_tool_json(tool), "parameter_list": _parameters_json(tool)}))
    else:
        _tool_details(cli, tool)
    return EXIT_OK


def _show_configured_tool(cli: Cli, args: argparse.Namespace, written: str) -> int:
    """``tools --config FILE server/tool``."""
    server = _configured_server(cli, args, written)
    with _client(cli, server, server.name, args) as client:
        _ensure_ready(cli, client, args.timeout, args=args, server=server, config=args.config)
        return _show_tool(cli, args, client, server, written, config=args.config)


# --- call ------------------------------------------------------------------------------


_T = TypeVar("_T")


class _Waitable(Protocol):
    """A call in flight: a ``CallHandle``, or a task followed on another thread."""

    @property
    def done(self) -> bool: ...

    def cancel(self, reason: str = ...) -> bool: ...

    def result(self, timeout: float | None = None) -> Any: ...


class _Progress:
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


def _command(
    args: argparse.Namespace,
    server: RemoteServer | LocalServer,
    config: str | None,
    verb: str,
    *extra: str,
) -> str:
    """A ``mcpcore`` command about the same server, ready to paste (a URL with a secret
    part, user info or a query, is left out: "URL")."""
    words = ["mcpcore", verb]
    if config is not None:
        words += ["--config", config, "--server", server.name]
        if getattr(args, "allow_local", False):
            words.append("--allow-local")
    elif isinstance(server, RemoteServer) and server.display_url == server.url:
        words.append(server.url)
    else:
        words.append("URL")
    if config is None and getattr(args, "name", "server") != "server":
        words += ["--name", args.name]
    if getattr(args, "allow_http", False):
        words.append("--allow-http")
    if getattr(args, "token_file", None):
        words += ["--token-file", args.token_file]
    words += protocol_words(args)
    words += extra
    command = " ".join(w if w == "URL" else shlex.quote(one_line(w)) for w in words)
    if "URL" in words:
        command += " (with the same URL)"
    if config is None and getattr(args, "header", None):
        command += " (with the same -H headers)"
    return command


def _did_you_mean(names: Sequence[str]) -> str:
    if not names:
        return ""
    if len(names) == 1:
        return f"; did you mean {quote(names[0])}?"
    return f"; did you mean one of {', '.join(quote(n) for n in names)}?"


def _find_tool(
    cli: Cli,
    args: argparse.Namespace,
    client: McpClient,
    server: RemoteServer | LocalServer,
    written: str,
    *,
    config: str | None,
) -> Tool:
    """The tool a command line names (K7): with a URL, its name (or its id); with
    --config, its id. Unknown: a failure that says what was probably meant, and a
    hint that lists the tools."""
    tools = client.tools
    by_id = {t.id: t for t in tools}
    if written in by_id:
        return by_id[written]
    prefix, slash, rest = written.partition("/")
    hidden = client.filtered
    for candidate in (written, f"{client.name}/{rest if slash else written}"):
        if candidate in hidden:  # V4: the server has it; --include/--exclude hid it
            text = f"tool {quote(candidate)} is filtered out: {hidden[candidate]}"
            raise _unknown_tool(cli, args, server, config, text)
    if config is None:
        for tool in tools:
            if tool.name == written:
                return tool
        if slash and prefix.lower() == client.name.lower():
            for tool in tools:
                if tool.name == rest:
                    return tool  # the server's name in another case
        if slash and prefix.lower() != client.name.lower():
            meant = [t.name for t in tools if t.name == rest]
            text = (
                f"no server {quote(prefix)}: with a URL, TOOL is the tool's name (this server "
                f"is named {quote(client.name)}){_did_you_mean(meant)}"
            )
            raise _unknown_tool(cli, args, server, config, text)
        asked = f"{client.name}/{rest}" if slash else f"{client.name}/{written}"
        # Said as it was written: names with a URL, ids when an id was given.
        meant = [i if slash else by_id[i].name for i in suggest_ids(asked, by_id)]
    else:
        meant = list(suggest_ids(written, by_id))
    text = f"unknown tool {quote(written)}{_did_you_mean(meant)}"
    raise _unknown_tool(cli, args, server, config, text)


def _unknown_tool(
    cli: Cli,
    args: argparse.Namespace,
    server: RemoteServer | LocalServer,
    config: str | None,
    text: str,
) -> Failure:
    failure = cli.fail(EXIT_USAGE, text, kind="unknown_tool")
    cli.hint(f"list the tools: {_command(args, server, config, 'tools')}")
    return failure


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


def _print_output(
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


# --- call --save -----------------------------------------------------------------------

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


def _save_dir(text: str) -> Path:
    """``--save DIR``, created if missing; checked before anything is called."""
    directory = Path(text)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--save {quote(text)} is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--save {quote(text)}: {exc.strerror or exc}") from None
    return directory


def _safe_stem(text: str) -> str:
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
        stem = _safe_stem(last)
    mime = block.mime_type if isinstance(block, (ImageBlock, AudioBlock, ResourceBlock)) else None
    if mime is not None:
        known = EXTENSIONS.get(mime.split(";", 1)[0].strip().lower())
        if known is not None:
            extension = known
    return (stem or f"{block.kind}-{number}"), (extension or ".bin")


def _create_fresh(directory: Path, stem: str, extension: str) -> tuple[Path, int]:
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


def _save_blocks(cli: Cli, output: ToolOutput, directory: Path) -> tuple[dict[int, str], bool]:
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
            path, fd = _create_fresh(directory, stem, extension)
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


def _asked_names(tool: str, *, qualified: bool) -> frozenset[str]:
    """The tool names a ``call`` asks for (the notes about other tools are not shown)."""
    names = {tool.split("/", 1)[1]} if "/" in tool else {tool}
    if not qualified:
        names.add(tool)
    return frozenset(names)


def _call_operands(args: argparse.Namespace) -> tuple[str | None, str, list[str]]:
    """``call``'s positionals: (URL or None with --config, TOOL, the argument words)."""
    operands: list[str] = list(args.operands)
    if args.config is None:
        if len(operands) < 2:
            raise UsageError("expected URL TOOL [ARGS_JSON | key=value...]")
        return operands[0], operands[1], operands[2:]
    if not operands:
        raise UsageError(
            "expected --config FILE TOOL [ARGS_JSON | key=value...] (TOOL is 'server/tool')"
        )
    return None, operands[0], operands[1:]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _argument_words(words: Sequence[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """ARGS_JSON (one word that is not key=value) or key=value pairs: (the JSON
    object, []) or (None, the pairs); read before anything is connected."""
    if len(words) == 1 and not is_argument_pair(words[0]):
        if (
            words[0] != "-"
            and words[0].lstrip()[:1] not in ("{", "[", '"')
            and not _is_json(words[0])
        ):
            raise UsageError(
                "the word after TOOL is neither ARGS_JSON (a JSON object such as "
                """'{"a": 1}') nor key=value pairs (such as a=1)"""
            )
        return _parse_arguments(words[0]), []
    for number, word in enumerate(words, 1):
        if not is_argument_pair(word):
            raise UsageError(
                f"argument {number} after TOOL is not key=value: give either one ARGS_JSON "
                "object or key=value pairs"
            )
    return None, list(words)


def _configured_server(
    cli: Cli, args: argparse.Namespace, written: str
) -> RemoteServer | LocalServer:
    """The mcp.json entry a qualified id ``server/tool`` names."""
    outcomes = _load_config(cli, args.config, args)
    if "/" not in written:
        raise UsageError(
            f"with --config, TOOL is a qualified id 'server/tool', not {quote(written)}"
        )
    wanted = written.split("/", 1)[0]
    found = {_outcome_name(k, o).lower(): o for k, o in outcomes.items()}
    if getattr(args, "server", None) is not None and args.server.lower() != wanted.lower():
        raise UsageError(f"--server {quote(args.server)} and TOOL {quote(written)} differ")
    if wanted.lower() not in found:
        names = ", ".join(quote(n) for n in found) or "none"
        failure = cli.fail(
            EXIT_USAGE,
            f"no server {quote(wanted)} in {quote(args.config)} (its servers: {names})",
            kind="unknown_tool",
        )
        cli.hint(f"list the servers: {shlex.join(['mcpcore', 'check', args.config])}")
        raise failure
    outcome = found[wanted.lower()]
    if isinstance(outcome, ConfigError):
        failure = cli.fail(EXIT_USAGE, _invalid(wanted.lower(), outcome, args), kind="config")
        _hint_refusals(cli, [outcome], args)
        raise failure
    return outcome


def _call_arguments(
    cli: Cli,
    args: argparse.Namespace,
    tool: Tool,
    given: dict[str, Any] | None,
    pairs: Sequence[str],
    where: tuple[RemoteServer | LocalServer, str | None],
) -> dict[str, Any]:
    """The call's arguments: the JSON object, or the pairs typed by the tool's schema;
    checked against it unless --no-check (K10). A name the schema does not declare is
    refused even when the schema would let it through (strict): it is a typo far more
    often than not, and the server would ignore it."""
    try:
        arguments = given if given is not None else arguments_from_pairs(pairs, tool.parameters)
        if not args.no_check:
            check_arguments(tool.parameters, arguments, strict=True)
    except InvalidArguments as exc:
        failure = cli.fail(EXIT_USAGE, _describe(exc), kind="invalid_arguments")
        server, config = where
        shown = tool.name if config is None else tool.id
        cli.hint(f"its parameters: {_command(args, server, config, 'tools', shown)}")
        raise failure from None
    return arguments


def cmd_call(cli: Cli, args: argparse.Namespace) -> int:
    url, tool, words = _call_operands(args)
    _check_connection_flags(args, url)
    given, pairs = _argument_words(words)
    save_dir = _save_dir(args.save) if args.save is not None else None
    cli.notes.only = _asked_names(tool, qualified=url is None)

    server: RemoteServer | LocalServer
    if url is not None:
        server = _url_server(cli, args, url)
    else:
        server = _configured_server(cli, args, tool)

    config = args.config if url is None else None
    asker = TerminalAsker(
        sys.stdin,
        cli.stderr,
        interactive=not args.no_input and isatty(sys.stdin) and isatty(cli.stderr),
        redact=cli.redact,
    )
    with _client(cli, server, server.name, args, elicit=asker) as client:
        _ensure_ready(cli, client, args.timeout, args=args, server=server, config=config)
        found = _find_tool(cli, args, client, server, tool, config=config)
        arguments = _call_arguments(cli, args, found, given, pairs, (server, config))
        tool_id = found.id
        progress = _Progress(cli, show(tool_id, keep_newlines=False), quiet=asker.asking)
        failed = False

        def resume_command(task_id: str) -> str:
            return _command(args, server, config, "task", task_id)

        try:
            output = follow_call(cli, client, tool_id, arguments, progress, resume_command)
        except AuthorizationRequired:
            # The tokens stopped working during the call and could not be refreshed.
            if not isinstance(server, RemoteServer):
                raise
            hint = _login_hint(args, server, config)
            raise cli.fail(
                EXIT_UNAVAILABLE,
                f"server {quote(server.name)} {hint} (the stored sign-in did not let this call "
                "through; if it needs more access, ask for it with --scope)",
                kind="needs_authorization",
            ) from None
        except BackendError as exc:
            # The error result's blocks, when the core keeps them on the error.
            kept = getattr(exc, "output", None)
            output = kept if isinstance(kept, ToolOutput) else ToolOutput(exc.text, None, True)
            failed = True
        saved, complete = _save_blocks(cli, output, save_dir) if save_dir else ({}, True)
        _print_output(cli, output, args.json, saved)
        if failed:
            raise cli.fail(EXIT_TOOL_ERROR, f"tool {quote(tool_id)} reported an error")
    # The output is printed either way; a block that could not be saved is a bad --save DIR.
    return EXIT_OK if complete else EXIT_USAGE


# --- check -----------------------------------------------------------------------------


def cmd_check(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_threaded import McpHub

    outcomes = _load_config(cli, args.file, args)
    rows: list[dict[str, Any]] = []
    valid: dict[str, McpClient] = {}
    servers: dict[str, Outcome] = {}
    for key, outcome in outcomes.items():
        name = _outcome_name(key, outcome)
        row: dict[str, Any] = {
            "name": name,
            "status": "invalid",
            "protocol": None,
            "tools": 0,
            "resources": None,
            "prompts": None,
            "reason": None,
        }
        if isinstance(outcome, ConfigError):
            row["reason"] = _reason(outcome, args)
        else:
            valid[name] = _client(cli, outcome, name, args)
            servers[name] = outcome
        rows.append(row)
    with McpHub(valid):  # every client connects on its own thread: probed concurrently
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        for row in rows:
            client = valid.get(row["name"])
            if client is None:
                continue
            availability = _ready_by(client, deadline, budget)
            row["status"] = "ready" if availability.ok else "unavailable"
            row["protocol"] = client.protocol_version if availability.ok else None  # E1
            row["tools"] = len(client.tools) if availability.ok else 0
            if availability.ok:
                row["resources"], row["prompts"] = _feature_counts(client, budget)
            row["reason"] = None if availability.ok else (availability.reason or "unavailable")
            server = servers[row["name"]]
            if _needs_login(availability):
                assert isinstance(server, RemoteServer)
                row["reason"] = _login_hint(args, server, args.file)

    if args.json:
        cli.out(dumps(rows))
    elif rows:
        colour = {
            "ready": cli.style.green,
            "unavailable": cli.style.red,
            "invalid": cli.style.yellow,
        }
        body = [
            (
                one_line(row["name"]),
                row["status"],
                _era_shown(row["protocol"]),
                str(row["tools"]) if row["status"] == "ready" else "-",
                _count_shown(row["resources"]),
                _count_shown(row["prompts"]),
                one_line(row["reason"] or ""),
            )
            for row in rows
        ]
        lines = table(
            ("NAME", "STATUS", "PROTOCOL", "TOOLS", "RESOURCES", "PROMPTS", "REASON"),
            body,
            style=cli.style,
            right=(3, 4, 5),
            paint={1: lambda status: colour[status](status)},
        )
        for line in lines:
            cli.out(line)
    else:
        cli.err("the file has no servers")
    _hint_refusals(cli, outcomes.values(), args)
    bad = sum(1 for row in rows if row["status"] != "ready")
    return EXIT_TOOL_ERROR if bad else EXIT_OK


def _feature_counts(client: McpClient, budget: float) -> tuple[int | None, int | None]:
    """F10: how many resources and prompts a ready server lists (``None`` when it does
    not offer them, or its listing failed: that is logged, and the row stays ready)."""
    counts: list[int | None] = []
    for feature, listing in (
        ("resources", client.list_resources),
        ("prompts", client.list_prompts),
    ):
        if not client.offers(feature):
            counts.append(None)
            continue
        try:
            counts.append(len(listing(timeout=budget)))
        except McpError as exc:
            logging.getLogger("mcpcore.cli").info(
                "server %r: its %s could not be listed: %s", client.name, feature, exc
            )
            counts.append(None)
    return counts[0], counts[1]


def _count_shown(count: int | None) -> str:
    return "-" if count is None else str(count)


def _era_shown(version: str | None) -> str:
    """E1: the revision a server speaks, and its era: "modern" or "legacy", the words
    of ``protocol=`` and ``client.era``."""
    if version is None:
        return "-"
    return f"{version} (modern)" if version >= "2026-07-28" else f"{version} (legacy)"


# --- sign-in: login, logout, auth status ---------------------------------------------


def _one_server(cli: Cli, args: argparse.Namespace) -> RemoteServer:
    """The one remote server ``login`` / ``logout`` is about: URL, or --config + --server."""
    if args.config is not None and args.url is not None:
        raise UsageError("give either a URL or --config FILE --server NAME, not both")
    if args.config is None and args.url is None:
        raise UsageError("give a server URL or --config FILE --server NAME")
    if args.config is None:
        if args.server is not None:
            raise UsageError("--server applies to --config")
        return _url_server(cli, args, args.url)
    if args.header:
        raise UsageError("-H applies to a URL; with --config, put the headers in the file")
    if args.server is None:
        raise UsageError("with --config, name the server: --server NAME")
    outcomes = _load_config(cli, args.config, args)
    found = {_outcome_name(k, o).lower(): o for k, o in outcomes.items()}
    wanted = args.server.lower()
    if wanted not in found:
        raise UsageError(f"no server {quote(args.server)} in {quote(args.config)}")
    outcome = found[wanted]
    if isinstance(outcome, ConfigError):
        failure = cli.fail(EXIT_USAGE, _invalid(wanted, outcome, args), kind="config")
        _hint_refusals(cli, [outcome], args)
        raise failure
    if not isinstance(outcome, RemoteServer):  # pragma: no cover - local entries are refused
        raise UsageError(f"server {quote(args.server)} is not a remote (url) server")
    return outcome


def _server_shown(server: RemoteServer) -> str:
    return f"server {quote(server.name)} ({show(server.display_url, keep_newlines=False)})"


def _when(epoch: float) -> str:
    """An instant as ISO 8601 in UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def _expiry(expires_at: float | None, now: float) -> str:
    if expires_at is None:
        return "no expiry given"
    if expires_at <= now:
        return f"expired {_when(expires_at)} ({_span(now - expires_at)} ago)"
    return f"expires {_when(expires_at)} (in {_span(expires_at - now)})"


def _tokens_shown(tokens: TokenSet, now: float) -> str:
    """Issuer, scopes, expiry and refresh: never a token's text (A4)."""
    scopes = one_line(tokens.scope) if tokens.scope else "(not stated)"
    refresh = "refreshable" if tokens.refresh_token else "not refreshable"
    issuer = show(tokens.issuer, keep_newlines=False)
    return f"issuer {issuer}, scopes {scopes}, {_expiry(tokens.expires_at, now)}, {refresh}"


class _BrowserSignIn:
    """The ``authorize`` hook of ``login`` (A3), run on a driver thread: print the URL,
    open the browser (unless ``--no-browser``), wait for the loopback listener."""

    def __init__(
        self, cli: Cli, listener: LoopbackListener, *, open_browser: bool, timeout: float
    ) -> None:
        self.cli = cli
        self.listener = listener
        self.open_browser = open_browser
        self.timeout = timeout
        self.asked = False
        self.failure: str | None = None

    def __call__(self, url: str, redirect_uri: str) -> str:
        import webbrowser
        from urllib.parse import parse_qsl, urlsplit

        from ._login import ListenerClosed, ListenerTimeout, state_of

        self.asked = True
        if redirect_uri != self.listener.redirect_uri:  # pragma: no cover - the flow's own
            self.failure = "the sign-in was to come back elsewhere than this listener"
            raise RuntimeError(self.failure)
        state = state_of(url)
        if not state:  # pragma: no cover - the flow always sends one
            self.failure = "the authorization URL carries no state"
            raise RuntimeError(self.failure)
        self.listener.expect_state(state)
        # The URL holds the PKCE challenge and the state, never a secret.
        write(
            self.cli.stderr,
            self.cli.redact(f"Open this URL to sign in: {show(url, keep_newlines=False)}"),
        )
        if self.open_browser:
            try:
                opened = webbrowser.open(url)
            except Exception:  # a broken browser setting: the URL is printed anyway
                opened = False
            if not opened:
                self.cli.err("could not start a browser: open the URL above yourself")
        self.cli.err(f"waiting for the sign-in (at most {self.timeout:g} s; Ctrl-C cancels)")
        try:
            answer = self.listener.wait(self.timeout, state)
        except ListenerTimeout as exc:
            self.failure = str(exc)
            raise
        except ListenerClosed:
            raise  # the command is ending: it has its own reason
        # A refusal is the flow's to act on; its words are kept for the message (the
        # client's own reason for it may be a later attempt's).
        params = dict(parse_qsl(urlsplit(answer).query))
        if "error" in params:
            said = params["error"]
            if params.get("error_description"):
                said += f" ({params['error_description']})"
            self.failure = f"the authorization server refused: {cut(one_line(said), 200)}"
        return answer


def cmd_login(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_threaded import McpClient

    from ._login import LoopbackListener

    server = _one_server(cli, args)
    if any(name.lower() == "authorization" for name in server.headers):
        raise UsageError(
            f"{_server_shown(server)} is given its own Authorization header (a static "
            "token): there is nothing to sign in to"
        )
    store = _token_store(cli, args)
    before = store.get_tokens(server.url)
    timeout: float = args.timeout or DEFAULT_LOGIN_TIMEOUT
    try:
        # Bound (port 0) before anything else: the redirect URI names a port that is ours.
        listener = LoopbackListener()
    except OSError as exc:
        raise cli.fail(
            EXIT_UNAVAILABLE, f"cannot listen on 127.0.0.1 for the sign-in: {exc.strerror or exc}"
        ) from None
    hook = _BrowserSignIn(cli, listener, open_browser=not args.no_browser, timeout=timeout)
    auth = AuthOptions(
        store=StoreView(store, hide_tokens_of=server.url),  # sign in afresh
        redirect_uri=listener.redirect_uri,
        scope=args.scope,
        user_wait=timeout + 10,  # the listener's own timeout comes first, and says so
        allow_insecure_http=args.allow_http,
    )
    with (
        listener,
        McpClient(
            server.name,
            server,
            auth=auth,
            authorize=hook,
            startup_timeout=timeout + LOGIN_MARGIN,
            allow_insecure_http=args.allow_http,
        ) as client,
    ):
        availability = client.ready(timeout + LOGIN_MARGIN)
    if store.write_error is not None:
        raise cli.fail(EXIT_USAGE, show(str(store.write_error), keep_newlines=False))
    after = store.get_tokens(server.url)
    signed_in = hook.asked and after is not None and after != before
    if not availability.ok and not signed_in:
        reason = hook.failure or availability.reason or "unavailable"
        raise cli.fail(
            EXIT_UNAVAILABLE,
            f"signing in to {_server_shown(server)} failed: {show(reason, keep_newlines=False)}",
        )
    if not signed_in:
        cli.err(f"{_server_shown(server)} did not ask for authorization: nothing to sign in to")
        return EXIT_OK
    assert after is not None
    cli.out(f"signed in to {_server_shown(server)}: {_tokens_shown(after, time.time())}")
    cli.err(f"tokens kept in {quote(str(store.path))}")
    if not availability.ok:
        reason = show(availability.reason or "unavailable", keep_newlines=False)
        raise cli.fail(EXIT_UNAVAILABLE, f"but the server is unavailable: {reason}")
    return EXIT_OK


def cmd_logout(cli: Cli, args: argparse.Namespace) -> int:
    if args.all:
        if args.url is not None or args.config is not None or args.server is not None:
            raise UsageError("--all forgets every server: give no URL, --config or --server")
        # Not checked first: removing a corrupt or unsafe token file is the way out.
        store = FileTokenStore(args.token_file or default_token_file())
        if store.forget_all():
            cli.out(f"removed the token file {quote(str(store.path))}")
        else:
            cli.err(f"no token file at {quote(str(store.path))}: nothing to forget")
        return EXIT_OK
    server = _one_server(cli, args)
    store = _token_store(cli, args)
    removed = store.forget_server(server.url)
    if not removed:
        cli.err(f"no tokens kept for {_server_shown(server)}: nothing to forget")
        return EXIT_OK
    cli.out(
        f"signed out of {_server_shown(server)}: its tokens are forgotten "
        "(not revoked at the authorization server)"
    )
    return EXIT_OK


def cmd_auth(cli: Cli, args: argparse.Namespace) -> int:
    store = _token_store(cli, args)
    now = time.time()
    rows: list[dict[str, Any]] = []
    entries = store.entries()
    for entry in entries:
        tokens = entry.tokens
        rows.append(
            {
                "server_url": RemoteServer(name="server", url=entry.key.server_url).display_url,
                "issuer": tokens.issuer,
                "scopes": tokens.scope.split() if tokens.scope else [],
                "expires_at": None if tokens.expires_at is None else _when(tokens.expires_at),
                "expired": tokens.expires_at is not None and tokens.expires_at <= now,
                "refreshable": tokens.refresh_token is not None,
            }
        )
    if args.json:
        cli.out(dumps({"token_file": str(store.path), "servers": rows}))
        return EXIT_OK
    if not rows:
        cli.err(f"not signed in to any server (token file {quote(str(store.path))})")
        return EXIT_OK
    body = []
    for row, entry in zip(rows, entries, strict=True):
        body.append(
            (
                one_line(row["server_url"]),
                one_line(row["issuer"]),
                one_line(" ".join(row["scopes"])) or "-",
                _expiry(entry.tokens.expires_at, now),
                "yes" if row["refreshable"] else "no",
            )
        )
    for line in table(
        ("SERVER", "ISSUER", "SCOPES", "EXPIRY", "REFRESH"),
        body,
        style=cli.style,
        fit=cli.table_width(),
    ):
        cli.out(line)
    cli.err(f"tokens kept in {quote(str(store.path))}")
    return EXIT_OK


# --- demo ------------------------------------------------------------------------------

_DEMO_ARGUMENTS: Mapping[str, dict[str, Any]] = {
    "echo": {"text": "Hello from mcpcore!"},
    "add": {"a": 2, "b": 3},
    "structured": {"name": "Ada"},
    "fail": {"message": "this tool always fails (on purpose)"},
    "slow": {"steps": 3, "delay": 0.1},
    "log": {"level": "info", "data": "hello from the demo"},
    "build": {"delay": 0.5},
}
_EXPECTED_ERRORS = frozenset({"fail"})


def cmd_demo(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_demo import DemoServer, default_tools
    from mcpcore_threaded import McpClient

    style = cli.style
    problems = 0
    # build runs only as a task here, so that the demo shows one being followed (T7)
    server = DemoServer(tools=default_tools(build_task_support="required"), record=False)
    with server.serve_in_thread() as running:
        cli.out(f"demo server listening at {running.url}")
        with McpClient("demo", {"url": running.url}, startup_timeout=10.0, tasks=True) as client:
            _ensure_ready(cli, client, 10.0)
            tools = client.tools
            cli.out(f"connected as server 'demo': {len(tools)} tools")
            cli.out()
            for line in _tool_table(cli, tools):
                cli.out(line)
            for tool in tools:
                arguments = _DEMO_ARGUMENTS.get(tool.name, {})
                cli.out()
                cli.out(style.bold(f"> call {show(tool.id)} {json.dumps(arguments)}"))
                on_progress = _demo_progress(cli)
                try:
                    if tool.task_support == "required":
                        output = _demo_task(cli, client, tool.id, arguments)
                    else:
                        output = client.call(tool.id, arguments, on_progress=on_progress)
                except BackendError as exc:
                    expected = tool.name in _EXPECTED_ERRORS
                    label = "error (expected)" if expected else "unexpected error"
                    paint = style.yellow if expected else style.red
                    cli.out(f"  {paint(label)}: {show(exc.text, keep_newlines=False)}")
                    problems += 0 if expected else 1
                    continue
                except McpError as exc:
                    cli.out(f"  {style.red('failed')}: {_describe(exc)}")
                    problems += 1
                    continue
                for line in show(output.text).splitlines() or [""]:
                    cli.out(f"  {line}")
                if output.structured is not None:
                    structured = show(
                        json.dumps(output.structured, ensure_ascii=False), keep_newlines=False
                    )
                    cli.out(f"  {style.dim('structured:')} {structured}")
                if tool.name in _EXPECTED_ERRORS:
                    cli.out(f"  {style.red('expected an error, got a result')}")
                    problems += 1
            problems += _demo_resources_and_prompts(cli, client)
    cli.out()
    if problems:
        cli.out(f"{problems} of {len(tools)} calls went wrong; the server is stopped")
        return EXIT_TOOL_ERROR
    cli.out(f"called {len(tools)} tools; client closed and server stopped")
    return EXIT_OK


def _demo_resources_and_prompts(cli: Cli, client: McpClient) -> int:
    """F10: list the demo's resources, read a text one, a blob and an expanded template,
    get a prompt; the number of steps that went wrong."""
    bold = cli.style.bold
    try:
        cli.out()
        cli.out(bold("> list resources and templates"))
        for resource in client.list_resources():
            mime = show(resource.mime_type or "-", keep_newlines=False)
            cli.out(f"  {show(resource.uri, keep_newlines=False)}  {mime}")
        [template] = client.list_resource_templates()
        cli.out(f"  {show(template.uri_template, keep_newlines=False)} (template)")
        cli.out()
        cli.out(bold("> read demo://readme"))
        for line in show(client.read_resource("demo://readme").text).splitlines():
            cli.out(f"  {line}".rstrip())
        cli.out()
        cli.out(bold("> read demo://logo.png"))
        [logo] = client.read_resource("demo://logo.png").contents
        cli.out(f"  [binary: {show(logo.mime_type or '-')}, {len(logo.data)} bytes]")  # type: ignore[union-attr]
        uri = template.expand({"name": "Ada"})
        cli.out()
        cli.out(bold(f"> read {show(uri)} (the template, expanded)"))
        cli.out(f"  {show(client.read_resource(uri).text, keep_newlines=False)}")
        cli.out()
        cli.out(bold("> list prompts"))
        for prompt in client.list_prompts():
            names = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments)
            cli.out(f"  {show(prompt.name, keep_newlines=False)}({show(names)})")
        arguments = {"text": "MCP connects models to tools and data."}
        cli.out()
        cli.out(bold(f"> get prompt summarize {json.dumps(arguments)}"))
        for message in client.get_prompt("summarize", arguments).messages:
            cli.out(f"  {show(message.role, keep_newlines=False)}:")
            for line in show(message.text).splitlines():
                cli.out(f"    {line}".rstrip())
    except (McpError, ValueError) as exc:
        cli.out(f"  {cli.style.red('failed')}: {_describe(exc)}")
        return 1
    return 0


def _demo_task(cli: Cli, client: McpClient, tool_id: str, arguments: Any) -> ToolOutput:
    """T7, T8: start the call as a task, then follow it; each status the client sees."""
    started = client.start_task(tool_id, arguments)
    if not isinstance(started, TaskHandle):
        return cast(ToolOutput, started)
    cli.out(f"  {cli.style.dim('task')} {shown_id(started.task_id)} (the server runs the call)")

    def status(progress: float, total: float | None, message: str | None) -> None:
        cli.out(f"  {cli.style.dim('status')} {one_line(message or '')}")

    return cast(ToolOutput, client.resume_task(started, on_progress=status))


def _demo_progress(cli: Cli) -> Callable[[float, float | None, str | None], None]:
    def report(progress: float, total: float | None, message: str | None) -> None:
        shown = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        suffix = f" {one_line(message)}" if message else ""
        cli.out(f"  {cli.style.dim('progress')} {shown}{suffix}")

    return report


# --- entry point -----------------------------------------------------------------------


def _feature(name: str) -> Callable[[Cli, argparse.Namespace], int]:
    """F10's commands, loaded when run (a quick --help)."""

    def run(cli: Cli, args: argparse.Namespace) -> int:
        from . import _features

        command: Callable[[Cli, argparse.Namespace], int] = getattr(_features, f"cmd_{name}")
        return command(cli, args)

    return run


_SERVER_FORMS = "(URL | --config FILE [--server NAME])"
_FLAGS = "[-H 'Name: value']... [--json] [--timeout S] [--allow-local] [--allow-http] [-v]"
_FEATURE_USAGE = {
    "resources": (
        f"mcpcore resources {_SERVER_FORMS} {_FLAGS}",
        "List the resources and resource templates of one server (URL) or of the servers "
        "of an mcp.json: URI, MIME type, name and description.",
    ),
    "read": (
        f"mcpcore read {_SERVER_FORMS} URI [--save DIR] {_FLAGS}",
        "Read one resource and print its text parts; binary parts are summed up, or "
        "written to files with --save DIR. With --config, --server NAME says which server.",
    ),
    "prompts": (
        f"mcpcore prompts {_SERVER_FORMS} {_FLAGS}",
        "List the prompts of one server (URL) or of the servers of an mcp.json, with "
        "their arguments (a trailing ? marks an optional one).",
    ),
    "prompt": (
        f"mcpcore prompt {_SERVER_FORMS} NAME [ARGS_JSON | key=value...] {_FLAGS}",
        "Get one prompt's messages; its arguments are key=value pairs, e.g. text=hello "
        '(each value a string), or ARGS_JSON, a JSON object of strings, e.g. \'{"text": '
        '"hello"}\'. With --config, --server NAME says which server.',
    ),
}


def _task_command(cli: Cli, args: argparse.Namespace) -> int:
    return cmd_task(cli, args)


_COMMANDS: Mapping[str, Callable[[Cli, argparse.Namespace], int]] = {
    "demo": cmd_demo,
    "tools": cmd_tools,
    "call": cmd_call,
    "task": _task_command,
    "resources": _feature("resources"),
    "read": _feature("read"),
    "prompts": _feature("prompts"),
    "prompt": _feature("prompt"),
    "check": cmd_check,
    "login": cmd_login,
    "logout": cmd_logout,
    "auth": cmd_auth,
}


def _setup_logging(cli: Cli, verbose: bool) -> logging.Handler:
    handler = logging.StreamHandler(cli.stderr)
    handler.setFormatter(LogFormatter(cli.redact))
    handler.addFilter(cli.notes)  # X4: each note about tools once, and in call only its tool's
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    # -v: debug for mcpcore's own loggers only (not httpcore's wire traces).
    level = logging.DEBUG if verbose else logging.NOTSET
    for name in ("mcpcore", "mcpcore_cli"):
        logging.getLogger(name).setLevel(level)
    return handler


def _honour_ctrl_c() -> None:
    """Make SIGINT raise KeyboardInterrupt, even when it was inherited as ignored.

    A shell without job control starts background commands with SIGINT ignored,
    and so may a CI runner or a test harness; Python then leaves it ignored, and
    Ctrl-C (or ``kill -INT``) would be lost while a call runs to its end. The
    command line promises that Ctrl-C cancels the call and exits 130, so it
    installs the handler itself, first thing.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    """The ``mcpcore`` console script; returns the exit status."""
    _honour_ctrl_c()
    prepare_streams()
    cli = Cli(sys.stdout, sys.stderr)
    arguments = list(sys.argv[1:] if argv is None else argv)
    status = _run(cli, arguments)
    try:
        cli.json_error(status)
    except BrokenPipeError:
        return _stdout_gone()
    return status


def _stdout_gone() -> int:
    """stdout went away (e.g. piped into head): leave quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def _run(cli: Cli, arguments: list[str]) -> int:
    handler: logging.Handler | None = None
    command: str | None = None
    try:
        try:
            top = _top_parser()
            ns = top.parse_args(arguments)
            if ns.version:
                cli.out(f"mcpcore {mcpcore.__version__}")
                return EXIT_OK
            if ns.command is None:
                top.print_usage(cli.stderr)
                raise UsageError(
                    "a command is required (demo, tools, call, task, resources, read, prompts, "
                    "prompt, check, login, logout, auth)"
                )
            command = ns.command
            cli.json_errors = command == "call" and "--json" in ns.rest
            args = _command_parser(ns.command).parse_intermixed_args(ns.rest)
        except SystemExit as exc:  # --help
            return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
        handler = _setup_logging(cli, ns.verbose or args.verbose)
        return _COMMANDS[ns.command](cli, args)
    except UsageError as exc:
        where = f"mcpcore {command} --help" if command else "mcpcore --help"
        cli.err(f"{exc} (see '{where}')")
        cli.error_kind = "usage"
        return EXIT_USAGE
    except Failure as exc:
        return exc.status
    except TokenFileError as exc:
        cli.err(show(str(exc), keep_newlines=False))
        cli.error_kind = "config"
        return EXIT_USAGE
    except UnknownTool as exc:
        cli.err(_describe(exc))
        cli.hint("'mcpcore tools' with the same server lists the tools")
        cli.error_kind = "unknown_tool"
        return EXIT_USAGE
    except McpError as exc:
        cli.err(in_cli_words(_describe(exc), exc))
        lifted = limit_hint(exc)
        if lifted is not None:
            cli.hint(lifted)
        cli.error_kind = _error_kind(exc)
        return exit_status(exc)
    except KeyboardInterrupt:
        cli.err("interrupted")
        cli.error_kind = "interrupted"
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _stdout_gone()
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
