"""The ``mcpcore`` commands: demo, tools, call, task, resources, read, prompts,
prompt, skills, skill, check, pins, login, logout, auth status.

This module is the top: ``main`` parses the command line (``_parsers``), runs
the command from the dispatch table, and turns an error into a message on
stderr and the exit status (``_common`` lists them). Each command group has a
module of its own, and none imports this one:

- ``_tools``: ``tools`` and ``call``; ``_tasks``: ``task``, and following a
  task that ``call`` started; ``_resources``: ``resources`` and ``read``;
  ``_prompts``: ``prompts`` and ``prompt``; ``_skills``: ``skills`` and
  ``skill``; ``_check``: ``check``; ``_pins``: ``pins``;
  ``_auth``: ``login``, ``logout`` and ``auth status``; ``_demo``: ``demo``.
- What they share: ``_connect`` (the servers a command names, their clients,
  readiness and the hints), ``_results`` (the progress line, a result printed
  or saved), ``_common`` (exit statuses, errors, the run's output); below
  those, ``_declared``, ``_ask``, ``_protocol``, ``_term``, ``_tokens`` and
  ``_login``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping

import mcpcore
from mcpcore import McpError, UnknownTool

from ._auth import cmd_auth, cmd_login, cmd_logout
from ._check import cmd_check
from ._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Cli,
    Failure,
    UsageError,
    describe,
    error_kind,
    exit_status,
)
from ._declared import in_cli_words, limit_hint
from ._demo import cmd_demo
from ._parsers import command_parser, top_parser
from ._pins import cmd_pins
from ._prompts import cmd_prompt, cmd_prompts
from ._resources import cmd_read, cmd_resources
from ._skills import cmd_skill, cmd_skills
from ._tasks import cmd_task
from ._term import LogFormatter, prepare_streams, show
from ._tokens import TokenFileError
from ._tools import cmd_call, cmd_tools

__all__ = ["main"]


# --- entry point -----------------------------------------------------------------------


_COMMANDS: Mapping[str, Callable[[Cli, argparse.Namespace], int]] = {
    "demo": cmd_demo,
    "tools": cmd_tools,
    "call": cmd_call,
    "task": cmd_task,
    "resources": cmd_resources,
    "read": cmd_read,
    "prompts": cmd_prompts,
    "prompt": cmd_prompt,
    "skills": cmd_skills,
    "skill": cmd_skill,
    "check": cmd_check,
    "pins": cmd_pins,
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
            top = top_parser()
            ns = top.parse_args(arguments)
            if ns.version:
                cli.out(f"mcpcore {mcpcore.__version__}")
                return EXIT_OK
            if ns.command is None:
                top.print_usage(cli.stderr)
                raise UsageError(
                    "a command is required (demo, tools, call, task, resources, read, prompts, "
                    "prompt, skills, skill, check, pins, login, logout, auth)"
                )
            command = ns.command
            cli.json_errors = command == "call" and "--json" in ns.rest
            args = command_parser(ns.command).parse_intermixed_args(ns.rest)
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
        cli.err(describe(exc))
        cli.hint("'mcpcore tools' with the same server lists the tools")
        cli.error_kind = "unknown_tool"
        return EXIT_USAGE
    except McpError as exc:
        cli.err(in_cli_words(describe(exc), exc))
        lifted = limit_hint(exc)
        if lifted is not None:
            cli.hint(lifted)
        cli.error_kind = error_kind(exc)
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
