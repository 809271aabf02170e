"""``mcpcore pins URL [--accept TOOL]``: the pinned tool definitions of one server (U1).

The command line keeps pins in ``pins.sqlite3`` beside the token file (a
``SqlitePinStore``), per server URL, for the default subject. ``pins URL``
connects with ``pins="block"`` and prints each listed tool: ``new`` (pinned by
this run), ``pinned`` (as pinned) or ``changed`` (its definition differs from
the pin: which parts, and a word diff of the description, escaped), and each
pin whose tool the server no longer lists. It exits 1 while a change waits.
``--accept TOOL`` pins that tool's new definition. ``check`` uses the same
file (``pins="warn"``) and names the changed tools of each ready server.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, Cli, UsageError
from ._connect import check_connection_flags, client_for, ensure_ready, url_server
from ._term import dumps, one_line, quote, table
from ._tokens import default_token_file

if TYPE_CHECKING:
    from mcpcore_stores import SqlitePinStore

__all__ = ["cmd_pins", "pin_options"]

PIN_FILE = "pins.sqlite3"
SUBJECT = "default"  # the command line is one user: mcpcore's default subject


def pin_file(args: argparse.Namespace) -> Path:
    """Beside the token file (``--token-file``, else its default location)."""
    token_file = getattr(args, "token_file", None)
    base = Path(token_file).expanduser() if token_file else default_token_file()
    return base.with_name(PIN_FILE)


def pin_store(args: argparse.Namespace) -> SqlitePinStore:
    from mcpcore_stores import SqlitePinStore

    return SqlitePinStore(pin_file(args))


def pin_options(args: argparse.Namespace, policy: str) -> dict[str, Any]:
    """The client options that keep this run's pins in the command line's pin file."""
    return {"pins": policy, "pin_store": pin_store(args), "pin_subject": SUBJECT}


def cmd_pins(cli: Cli, args: argparse.Namespace) -> int:
    operands: list[str] = list(args.operands)
    if args.config is not None:
        raise UsageError("pins takes a server URL, not --config")
    if len(operands) != 1:
        raise UsageError(f"expected URL, got {len(operands)} operands")
    args.url = operands[0]
    check_connection_flags(args, args.url)
    server = url_server(cli, args, args.url)
    options = pin_options(args, "block")
    before = options["pin_store"].get_pins(server.url, SUBJECT)
    with client_for(cli, server, server.name, args, extra=options) as client:
        ensure_ready(cli, client, args.timeout, args=args, server=server)
        changes = {change.tool_id: change for change in client.pin_changes}
        if args.accept is not None:
            wanted = args.accept
            tool_id = wanted if client.separator in wanted else client.name + "/" + wanted
            if not client.accept_change(tool_id.lower()):
                raise cli.fail(
                    EXIT_USAGE, f"tool {quote(wanted)} has no changed definition to accept"
                )
            cli.out(f"accepted the new definition of {one_line(tool_id.lower())}")
            return EXIT_OK  # closing the client waits for the pin to be stored
        rows: list[dict[str, Any]] = []
        listed: set[str] = set()
        for tool in client.tools:
            listed.add(tool.name)
            status = "pinned" if tool.name in before else "new"
            rows.append({"tool": tool.id, "status": status, "changed": [], "diff": None})
        for change in changes.values():
            listed.add(change.name)
            rows.append(
                {
                    "tool": change.tool_id,
                    "status": "changed",
                    "changed": list(change.fields),
                    "diff": change.description_diff,
                }
            )
        for name in sorted(set(before) - listed):
            rows.append({"tool": name, "status": "not listed", "changed": [], "diff": None})
    rows.sort(key=lambda row: str(row["tool"]))
    _print(cli, args, rows)
    if changes:
        cli.hint(f"'mcpcore pins URL --accept TOOL' accepts a change ({len(changes)} waiting)")
    return EXIT_TOOL_ERROR if changes else EXIT_OK


def _print(cli: Cli, args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    if args.json:
        cli.out(dumps(rows))
        return
    if not rows:
        cli.err("the server has no tools")
        return
    body = [
        (
            one_line(str(row["tool"])),
            row["status"],
            ", ".join(row["changed"]) or "-",
            one_line(row["diff"] or ""),
        )
        for row in rows
    ]
    colour = {
        "new": cli.style.green,
        "pinned": cli.style.green,
        "changed": cli.style.red,
        "not listed": cli.style.yellow,
    }
    lines = table(
        ("TOOL", "STATUS", "CHANGED", "DESCRIPTION DIFF"),
        body,
        style=cli.style,
        paint={1: lambda status: colour[status](status)},
    )
    for line in lines:
        cli.out(line)
