"""The argument parsers of the ``mcpcore`` command line: the top one (``mcpcore
--help``: the commands and the exit statuses) and each command's, with the
flags they share (a server's URL or ``--config FILE``, ``-H``, ``--timeout``,
``--allow-local``, ``--allow-http``, ``--include`` / ``--exclude``,
``--token-file``). A parser's error raises ``UsageError`` (exit 2) instead of
exiting.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import NoReturn

from ._common import (
    COMMANDS,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_LOGIN_TIMEOUT,
    LOCAL_NO_SIGN_IN,
    UsageError,
)
from ._declared import add_session_flags
from ._protocol import add_protocol_option
from ._term import terminal_width

__all__ = ["command_parser", "top_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse, but errors raise instead of exiting (so ``main`` returns a status)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


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


def top_parser() -> _Parser:
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
            "  skills  list a server's skills (SEP-2640) without reading their files\n"
            "  skill   read one file of a skill (SKILL.md unless a PATH is given),\n"
            "          verified against the skill's entry\n"
            "  check   validate an mcp.json and probe every server in it at once: one\n"
            "          row per server (ready, unavailable or invalid, and why)\n"
            "  pins    the pinned tool definitions of a server: each tool pinned, new or\n"
            "          changed since (with a word diff); --accept TOOL accepts a change\n"
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
            "demo, tools, call, task, resources, read, prompts, prompt, skills, skill, "
            "check, pins, login, logout or auth (described below)"
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


def command_parser(command: str) -> _Parser:
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
    elif command == "pins":
        parser = _Parser(
            prog="mcpcore pins",
            usage=(
                "mcpcore pins URL [--accept TOOL] [-H 'Name: value']... [--json] [--name NAME] "
                "[--timeout S] [--protocol auto|legacy|modern] [--allow-http] "
                "[--token-file PATH] [-v]"
            ),
            description=_wrapped(
                "List the pinned tool definitions of a server: each tool it lists is new "
                "(pinned now), pinned (as pinned) or changed since it was pinned (which "
                "parts, and a word diff of its description). Pins are kept in pins.sqlite3 "
                "beside the token file. Exits 1 while a change waits; --accept TOOL pins "
                "that tool's new definition."
            ),
        )
        parser.add_argument("operands", nargs="*", help=argparse.SUPPRESS)
        _connection(parser, server_flag=False)
        parser.add_argument(
            "--accept", metavar="TOOL", help="pin the new definition of this changed tool"
        )
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
    "skills": (
        f"mcpcore skills {_SERVER_FORMS} {_FLAGS}",
        "List the skills (SEP-2640) of one server (URL) or of the servers of an mcp.json: "
        "name, files and bytes (or dynamic), description. No file is read.",
    ),
    "skill": (
        f"mcpcore skill {_SERVER_FORMS} NAME [PATH] {_FLAGS}",
        "Read one file of a skill, SKILL.md unless PATH names another, and print it once "
        "it matches the skill's entry (size, digest, frontmatter); a file that does not "
        "is refused and never printed. With --config, --server NAME says which server.",
    ),
    "prompt": (
        f"mcpcore prompt {_SERVER_FORMS} NAME [ARGS_JSON | key=value...] {_FLAGS}",
        "Get one prompt's messages; its arguments are key=value pairs, e.g. text=hello "
        '(each value a string), or ARGS_JSON, a JSON object of strings, e.g. \'{"text": '
        '"hello"}\'. With --config, --server NAME says which server.',
    ),
}
