"""``mcpcore check FILE``: validate an mcp.json and probe every server in it at
once, one row per server (ready, unavailable or invalid; the revision it speaks;
how many tools, resources and prompts; why it is not ready, or which of its tools
changed since they were pinned: U1). Exits 1 when a server is not ready.
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import TYPE_CHECKING, Any

from mcpcore import ConfigError, McpError, RemoteServer

from ._common import DEFAULT_CONNECT_TIMEOUT, EXIT_OK, EXIT_TOOL_ERROR, Cli
from ._connect import (
    Outcome,
    client_for,
    hint_refusals,
    invalid_reason,
    load_config,
    login_hint,
    needs_login,
    outcome_name,
    ready_by,
)
from ._pins import pin_options
from ._term import dumps, one_line, table

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

__all__ = ["cmd_check"]


# --- check -----------------------------------------------------------------------------


def cmd_check(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_threaded import McpHub

    outcomes = load_config(cli, args.file, args)
    rows: list[dict[str, Any]] = []
    valid: dict[str, McpClient] = {}
    servers: dict[str, Outcome] = {}
    for key, outcome in outcomes.items():
        name = outcome_name(key, outcome)
        row: dict[str, Any] = {
            "name": name,
            "status": "invalid",
            "protocol": None,
            "tools": 0,
            "resources": None,
            "prompts": None,
            "reason": None,
            "changed": [],
        }
        if isinstance(outcome, ConfigError):
            row["reason"] = invalid_reason(outcome, args)
        else:
            # U1: each ready server's tools are pinned in the command line's pin file,
            # and the ones changed since are named.
            valid[name] = client_for(cli, outcome, name, args, extra=pin_options(args, "warn"))
            servers[name] = outcome
        rows.append(row)
    with McpHub(valid):  # every client connects on its own thread: probed concurrently
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        for row in rows:
            client = valid.get(row["name"])
            if client is None:
                continue
            availability = ready_by(client, deadline, budget)
            row["status"] = "ready" if availability.ok else "unavailable"
            row["protocol"] = client.protocol_version if availability.ok else None  # E1
            row["tools"] = len(client.tools) if availability.ok else 0
            if availability.ok:
                row["resources"], row["prompts"] = _feature_counts(client, budget)
            row["reason"] = None if availability.ok else (availability.reason or "unavailable")
            if availability.ok:
                row["changed"] = sorted(change.tool_id for change in client.pin_changes)
            server = servers[row["name"]]
            if needs_login(availability):
                assert isinstance(server, RemoteServer)
                row["reason"] = login_hint(args, server, args.file)

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
                one_line(row["reason"] or _changed_shown(row["changed"])),
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
    hint_refusals(cli, outcomes.values(), args)
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


def _changed_shown(changed: list[str]) -> str:
    """U1: a ready server's tools changed since they were pinned ('mcpcore pins URL')."""
    return f"tools changed since pinned: {', '.join(changed)}" if changed else ""


def _count_shown(count: int | None) -> str:
    return "-" if count is None else str(count)


def _era_shown(version: str | None) -> str:
    """E1: the revision a server speaks, and its era: "modern" or "legacy", the words
    of ``protocol=`` and ``client.era``."""
    if version is None:
        return "-"
    return f"{version} (modern)" if version >= "2026-07-28" else f"{version} (legacy)"
