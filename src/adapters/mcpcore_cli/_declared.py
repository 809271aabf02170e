"""What every command's client declares and asks for: one place decides.

A server may list a different set of tools to a client that declares
elicitation than to one that does not (server-everything hides
``trigger-elicitation-request`` from the second). So ``tools``, ``call``,
``task``, ``check`` and the resource and prompt commands all declare the same
capabilities: form and URL questions (Q1, Q2) and, unless ``--no-tasks``,
tasks (T7). Only ``call`` can put a question to the person at a terminal;
every other command answers one with a decline, and says so on stderr.

The flags every such command takes are here too: ``--log-level`` asks the
server for its log messages (F8) and prints each on stderr, escaped (X1);
``--max-message-size`` raises (or lowers) the bound on one message from the
server (P6, 64 MiB by default).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mcpcore import HttpLimits, LimitExceeded, LogMessage

from ._ask import TerminalAsker
from ._term import isatty, one_line

if TYPE_CHECKING:
    from ._common import Cli

__all__ = [
    "LOG_LEVELS",
    "add_session_flags",
    "client_hooks",
    "credential_headers",
    "in_cli_words",
    "limit_hint",
    "message_size",
]

#: The levels a server's log messages may be asked from (RFC 5424's names, F8).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: A log message's text is cut to this many characters before it is printed.
LOG_TEXT_LIMIT = 2000

# A header whose name says it carries a credential (Authorization, X-API-Key,
# X-Auth-Token, Ocp-Apim-Subscription-Key, Cookie...): the user signs in with it.
_CREDENTIAL = re.compile(r"auth|key|token|secret|passw|credential|cookie|signature", re.I)
_SIZE = re.compile(r"(?P<number>[0-9]+)\s*(?P<unit>[kmg]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def message_size(text: str) -> int:
    """``--max-message-size``: bytes, or with a K, M or G suffix (KiB, MiB, GiB)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or int(match["number"]) <= 0:
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r} (a number of bytes, or with K, M or G: 200M)"
        )
    return int(match["number"]) * _UNITS[match["unit"].lower()]


def add_session_flags(parser: argparse.ArgumentParser) -> None:
    """``--log-level`` and ``--max-message-size``, for every command that connects."""
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help=(
            "ask each server for its log messages from LEVEL up and print them on stderr "
            f"({', '.join(LOG_LEVELS)})"
        ),
    )
    parser.add_argument(
        "--max-message-size",
        type=message_size,
        metavar="SIZE",
        help=(
            "the largest message a server may send, in bytes or with K, M or G "
            "(default 64M; a resource read may take at least 128M)"
        ),
    )


def client_hooks(cli: Cli, args: argparse.Namespace, asker: TerminalAsker | None) -> dict[str, Any]:
    """``McpClient``'s hooks and options that every command gives alike: the same
    capabilities everywhere; ``asker`` is ``call``'s, asking at a terminal."""
    if asker is None:  # not call: a question is declined, and the person told so
        asker = TerminalAsker(sys.stdin, cli.stderr, interactive=False, redact=cli.redact)
    hooks: dict[str, Any] = {"elicit": asker, "elicit_url": True}
    level = getattr(args, "log_level", None)
    if level is not None:
        hooks["log_level"] = level
        hooks["on_log"] = _LogPrinter(cli, level)
    size = getattr(args, "max_message_size", None)
    if size is not None:
        defaults = HttpLimits()
        hooks["limits"] = HttpLimits(
            max_message_size=size,
            # one SSE data line carries one whole message
            max_sse_line=size + (defaults.max_sse_line - defaults.max_message_size),
            max_read_size=max(size, defaults.max_read_size),
        )
    return hooks


class _LogPrinter:
    """``on_log``: each log message of a server as one escaped line on stderr."""

    def __init__(self, cli: Cli, level: str) -> None:
        self.cli = cli
        # F8: what was asked for, and nothing below it. A server may send a message
        # before the logging/setLevel the client sends once ready has reached it.
        self._below = frozenset(LOG_LEVELS[: LOG_LEVELS.index(level)])
        self._lock = threading.Lock()  # one line at a time from the hook threads

    def __call__(self, message: LogMessage) -> None:
        if message.level in self._below:
            return
        data = message.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        origin = f" {one_line(message.logger)}" if message.logger else ""
        line = (
            f"mcpcore: server {one_line(repr(message.server))} log {one_line(message.level)}"
            f"{origin}: {one_line(text[:LOG_TEXT_LIMIT])}"
        )
        # Over a progress line on a terminal: clear it first (it is drawn again).
        clear = "\r\x1b[K" if isatty(self.cli.stderr) else ""
        with self._lock:
            self.cli.stderr.write(clear + self.cli.redact(line) + "\n")
            self.cli.stderr.flush()


def limit_hint(error: BaseException | None) -> str | None:
    """What lifts the bound a server's message overran, in the command line's words."""
    if isinstance(error, LimitExceeded) and error.limit_name in (
        "max_message_size",
        "max_read_size",
        "max_sse_line",
    ):
        return "--max-message-size SIZE raises the limit (e.g. 200M)"
    return None


def in_cli_words(text: str, error: BaseException | None) -> str:
    """``text`` without the library's option hint where the command line gives its
    own flag instead (the library names ``limits=HttpLimits(...)``)."""
    if limit_hint(error) is not None and isinstance(error, LimitExceeded) and error.option_hint:
        return text.replace(error.option_hint, "")
    return text


def credential_headers(headers: Mapping[str, str]) -> list[str]:
    """The names of the configured headers that carry a credential (never a value):
    with one, the user signed in themselves, so a 401 is theirs to fix, not a
    reason to run ``mcpcore login``."""
    return [name for name in headers if _CREDENTIAL.search(name)]
