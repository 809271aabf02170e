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
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping

import mcpcore
from mcpcore import McpError, UnknownTool

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
from ._parsers import command_parser, top_parser
from ._term import LogFormatter, prepare_streams, show
from ._tokens import TokenFileError

__all__ = ["main"]


# --- entry point -----------------------------------------------------------------------


# command -> (its group's module, its function). A command imports its own module
# when it runs, so a command's startup pays only for what it uses (`call` and
# `tools` never load the sign-in, resources, prompts, check or demo commands).
_COMMANDS: Mapping[str, tuple[str, str]] = {
    "demo": ("._demo", "cmd_demo"),
    "tools": ("._tools", "cmd_tools"),
    "call": ("._tools", "cmd_call"),
    "task": ("._tasks", "cmd_task"),
    "resources": ("._resources", "cmd_resources"),
    "read": ("._resources", "cmd_read"),
    "prompts": ("._prompts", "cmd_prompts"),
    "prompt": ("._prompts", "cmd_prompt"),
    "skills": ("._skills", "cmd_skills"),
    "skill": ("._skills", "cmd_skill"),
    "check": ("._check", "cmd_check"),
    "pins": ("._pins", "cmd_pins"),
    "login": ("._auth", "cmd_login"),
    "logout": ("._auth", "cmd_logout"),
    "auth": ("._auth", "cmd_auth"),
}


def _command(name: str) -> Callable[[Cli, argparse.Namespace], int]:
    module, function = _COMMANDS[name]
    run: Callable[[Cli, argparse.Namespace], int] = getattr(
        importlib.import_module(module, __package__), function
    )
    return run


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
        return _command(ns.command)(cli, args)
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
