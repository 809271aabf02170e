"""``mcpcore prompts`` and ``prompt`` (F10).

The same server forms as ``tools``: a URL, or ``--config FILE`` with
``--server NAME`` (``prompts`` lists every ready server of the file without
it). Everything the server sent is escaped before it reaches the terminal (X1);
the exit statuses are ``tools``': 0 done, 2 bad usage (an unknown prompt,
arguments that are not strings, an invalid entry), 3 a server unavailable.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from mcpcore import InvalidArguments, arguments_from_pairs, is_argument_pair

from ._common import Cli, UsageError, escaped_line
from ._connect import chosen_servers, each_ready, split_operands
from ._term import dumps, show

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

__all__ = ["cmd_prompt", "cmd_prompts"]


def cmd_prompts(cli: Cli, args: argparse.Namespace) -> int:
    url, _ = split_operands(args, 0, "")
    servers = chosen_servers(cli, args, url, single=False)
    tagged = args.config is not None
    rows: list[dict[str, Any]] = []

    def use(name: str, client: McpClient) -> None:
        if not client.offers("prompts"):
            return
        for prompt in client.list_prompts():
            rows.append(
                {
                    "server": name,
                    "name": prompt.name,
                    "description": prompt.description,
                    "arguments": [
                        {"name": a.name, "required": a.required, "description": a.description}
                        for a in prompt.arguments
                    ],
                }
            )

    status = each_ready(cli, args, servers, use)
    if args.json:
        cli.out(
            dumps(
                [row if tagged else {k: v for k, v in row.items() if k != "server"} for row in rows]
            )
        )
        return status
    if not rows and status == 0:
        cli.err("no prompts")
    for row in rows:
        prefix = f"{escaped_line(row['server'])}: " if tagged else ""
        names = ", ".join(
            escaped_line(a["name"]) + ("" if a["required"] else "?") for a in row["arguments"]
        )
        about = f"  {escaped_line(row['description'])}" if row["description"] else ""
        cli.out(f"{prefix}{escaped_line(row['name'])}({names}){about}")
    return status


def _prompt_operands(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """(URL or None, [NAME, arguments...]): any number of key=value words may follow."""
    operands: list[str] = list(args.operands)
    url = operands.pop(0) if args.config is None and operands else None
    if len(operands) > 2:
        for number, word in enumerate(operands[1:], 1):
            if not is_argument_pair(word):
                raise UsageError(
                    f"argument {number} after NAME is not key=value: give either one "
                    "ARGS_JSON object or key=value pairs"
                )
    return url, operands


def _prompt_arguments(words: list[str]) -> dict[str, Any] | None:
    """ARGS_JSON (one JSON object) or ``key=value`` pairs, as ``call`` takes them; a
    prompt's arguments are strings, so a value is the text as it is."""
    if not words:
        return None
    if len(words) == 1 and not is_argument_pair(words[0]):
        try:
            arguments = json.loads(words[0])
        except (ValueError, RecursionError):
            raise UsageError(
                "ARGS_JSON is not JSON (give a JSON object of strings, or key=value pairs)"
            ) from None
        if not isinstance(arguments, dict):
            raise UsageError("ARGS_JSON must be a JSON object of strings")
        return arguments
    try:
        return arguments_from_pairs(words, {"type": "object"})
    except InvalidArguments as exc:
        raise UsageError(str(exc)) from None


def cmd_prompt(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = _prompt_operands(args)
    if not operands:
        raise UsageError("give the name of the prompt")
    name = operands[0]
    arguments = _prompt_arguments(operands[1:])
    [(server, outcome)] = chosen_servers(cli, args, url, single=True).items()
    got: list[Any] = []
    status = each_ready(
        cli, args, {server: outcome}, lambda _, c: got.append(c.get_prompt(name, arguments))
    )
    if not got:
        return status
    result = got[0]
    if args.json:
        messages = [
            {"role": m.role, "type": m.content.kind, "text": m.text} for m in result.messages
        ]
        cli.out(dumps({"description": result.description, "messages": messages}))
        return status
    for message in result.messages:
        cli.out(f"{escaped_line(message.role)}: {show(message.text)}")
    return status
