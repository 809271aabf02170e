"""``mcpcore tools`` and ``mcpcore call``.

``tools``: the tools table of one server or of the servers of an mcp.json, or
one tool's parameters. ``tools --config`` prints the tools of every ready server
and exits 0 only when every selected server is ready: otherwise 2 when an entry
is invalid, else 3. ``call``: the tool named (K7: its name with a URL, its id
with ``--config``; an unknown one says what was probably meant), its arguments
(ARGS_JSON or ``key=value`` pairs typed by the tool's schema, and checked
against it, K10), the call, followed as a task when the server makes it one
(``_tasks``), and its result printed and saved (``_results``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from mcpcore import (
    AuthorizationRequired,
    BackendError,
    ConfigError,
    InvalidArguments,
    LocalServer,
    RemoteServer,
    Tool,
    ToolOutput,
    arguments_from_pairs,
    check_arguments,
    describe_parameters,
    is_argument_pair,
    signature,
    suggest_ids,
)

from ._ask import TerminalAsker
from ._common import (
    DEFAULT_CONNECT_TIMEOUT,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    SIGNATURE_LIMIT,
    Cli,
    Failure,
    UsageError,
    describe,
)
from ._connect import (
    check_connection_flags,
    client_for,
    command_for,
    ensure_ready,
    hint_refusals,
    invalid_entry,
    load_config,
    login_hint,
    not_ready,
    outcome_name,
    ready_by,
    url_server,
)
from ._results import Progress, prepare_save_dir, print_output, save_blocks
from ._tasks import follow_call
from ._term import dumps, isatty, one_line, quote, show, table, width

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

__all__ = ["cmd_call", "cmd_tools", "tool_table"]


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


def tool_table(cli: Cli, tools: Sequence[Tool]) -> list[str]:
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
        for line in tool_table(cli, tools):
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
    check_connection_flags(args, args.url)
    if args.url is not None:
        server = url_server(cli, args, args.url)
        with client_for(cli, server, server.name, args) as client:
            ensure_ready(cli, client, args.timeout, args=args, server=server)
            if wanted_tool is not None:
                return _show_tool(cli, args, client, server, wanted_tool, config=None)
            _print_tools(cli, client.tools, args.json, none="the server has no tools")
        return EXIT_OK
    if wanted_tool is not None:
        return _show_configured_tool(cli, args, wanted_tool)

    # Partial success: every ready server's tools are printed; the status says whether
    # all selected servers were ready (0), an entry is invalid (2) or a server is not (3).
    outcomes = load_config(cli, args.config, args)
    selected = {outcome_name(k, o): o for k, o in outcomes.items()}
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
            cli.err(invalid_entry(name, outcome, args))
            status = EXIT_USAGE
    hint_refusals(cli, selected.values(), args)
    from mcpcore_threaded import McpHub

    valid = {n: o for n, o in selected.items() if not isinstance(o, ConfigError)}
    hub = McpHub({n: client_for(cli, o, n, args) for n, o in valid.items()})
    with hub:
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        tools: list[Tool] = []
        ready = 0
        for name, client in hub.clients.items():
            availability = ready_by(client, deadline, budget)
            if availability.ok:
                ready += 1
                tools.extend(client.tools)
            else:
                text = not_ready(args, name, valid.get(name), availability, config=args.config)
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
    with client_for(cli, server, server.name, args) as client:
        ensure_ready(cli, client, args.timeout, args=args, server=server, config=args.config)
        return _show_tool(cli, args, client, server, written, config=args.config)


# --- naming a tool: tools URL TOOL and call --------------------------------------------


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
    cli.hint(f"list the tools: {command_for(args, server, config, 'tools')}")
    return failure


# --- call ------------------------------------------------------------------------------


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
    outcomes = load_config(cli, args.config, args)
    if "/" not in written:
        raise UsageError(
            f"with --config, TOOL is a qualified id 'server/tool', not {quote(written)}"
        )
    wanted = written.split("/", 1)[0]
    found = {outcome_name(k, o).lower(): o for k, o in outcomes.items()}
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
        failure = cli.fail(EXIT_USAGE, invalid_entry(wanted.lower(), outcome, args), kind="config")
        hint_refusals(cli, [outcome], args)
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
        failure = cli.fail(EXIT_USAGE, describe(exc), kind="invalid_arguments")
        server, config = where
        shown = tool.name if config is None else tool.id
        cli.hint(f"its parameters: {command_for(args, server, config, 'tools', shown)}")
        raise failure from None
    return arguments


def cmd_call(cli: Cli, args: argparse.Namespace) -> int:
    url, tool, words = _call_operands(args)
    check_connection_flags(args, url)
    given, pairs = _argument_words(words)
    save_dir = prepare_save_dir(args.save) if args.save is not None else None
    cli.notes.only = _asked_names(tool, qualified=url is None)

    server: RemoteServer | LocalServer
    if url is not None:
        server = url_server(cli, args, url)
    else:
        server = _configured_server(cli, args, tool)

    config = args.config if url is None else None
    asker = TerminalAsker(
        sys.stdin,
        cli.stderr,
        interactive=not args.no_input and isatty(sys.stdin) and isatty(cli.stderr),
        redact=cli.redact,
    )
    with client_for(cli, server, server.name, args, elicit=asker) as client:
        ensure_ready(cli, client, args.timeout, args=args, server=server, config=config)
        found = _find_tool(cli, args, client, server, tool, config=config)
        arguments = _call_arguments(cli, args, found, given, pairs, (server, config))
        tool_id = found.id
        progress = Progress(cli, show(tool_id, keep_newlines=False), quiet=asker.asking)
        failed = False

        def resume_command(task_id: str) -> str:
            return command_for(args, server, config, "task", task_id)

        try:
            output = follow_call(cli, client, tool_id, arguments, progress, resume_command)
        except AuthorizationRequired:
            # The tokens stopped working during the call and could not be refreshed.
            if not isinstance(server, RemoteServer):
                raise
            hint = login_hint(args, server, config)
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
        saved, complete = save_blocks(cli, output, save_dir) if save_dir else ({}, True)
        print_output(cli, output, args.json, saved)
        if failed:
            raise cli.fail(EXIT_TOOL_ERROR, f"tool {quote(tool_id)} reported an error")
    # The output is printed either way; a block that could not be saved is a bad --save DIR.
    return EXIT_OK if complete else EXIT_USAGE
