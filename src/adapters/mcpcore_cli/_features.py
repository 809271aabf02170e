"""``mcpcore resources``, ``read``, ``prompts`` and ``prompt`` (F10).

The same server forms as ``tools``: a URL, or ``--config FILE`` with
``--server NAME`` (the listing commands list every ready server of the file
without it). Everything the server sent is escaped before it reaches the
terminal (X1); the exit statuses are ``tools``': 0 done, 2 bad usage (an
unknown URI or prompt, arguments that are not strings, an invalid entry),
3 a server unavailable.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpcore import ConfigError, RemoteServer

from ._common import DEFAULT_CONNECT_TIMEOUT, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, UsageError
from ._connect import (
    _check_connection_flags,
    _client,
    _invalid,
    _load_config,
    _not_ready,
    _outcome_name,
    _ready_by,
    _url_server,
)
from ._results import EXTENSIONS, _create_fresh, _safe_stem, _save_dir
from ._term import dumps, quote, show

if TYPE_CHECKING:
    from mcpcore import LocalServer, ReadResult
    from mcpcore_threaded import McpClient

    from ._common import Cli

__all__ = ["cmd_prompt", "cmd_prompts", "cmd_read", "cmd_resources"]


def _one_line(text: str | None) -> str:
    return "" if text is None else show(text, keep_newlines=False)


def _servers(
    cli: Cli, args: argparse.Namespace, url: str | None, *, single: bool
) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    """The servers a command is for: the URL's, or the --config file's (--server NAME
    picks one; a single-server command needs it unless the file has one server)."""
    _check_connection_flags(args, url)
    if url is not None:
        server = _url_server(cli, args, url)
        return {server.name: server}
    outcomes = _load_config(cli, args.config, args)
    selected = {_outcome_name(k, o).lower(): o for k, o in outcomes.items()}
    if args.server is not None:
        wanted = args.server.lower()
        if wanted not in selected:
            names = ", ".join(quote(n) for n in selected) or "none"
            raise UsageError(
                f"no server {quote(args.server)} in {quote(args.config)} (its servers: {names})"
            )
        return {wanted: selected[wanted]}
    if single and len(selected) != 1:
        raise UsageError(f"with --config, --server NAME says which server of {quote(args.config)}")
    return selected


def _each_ready(
    cli: Cli,
    args: argparse.Namespace,
    servers: dict[str, RemoteServer | LocalServer | ConfigError],
    use: Callable[[str, McpClient], None],
) -> int:
    """Run ``use`` on every ready server; the exit status says whether all were."""
    from mcpcore_threaded import McpHub

    status = EXIT_OK
    for name, outcome in servers.items():
        if isinstance(outcome, ConfigError):
            cli.err(_invalid(name, outcome, args))
            status = EXIT_USAGE
    valid = {n: o for n, o in servers.items() if not isinstance(o, ConfigError)}
    hub = McpHub({n: _client(cli, o, n, args) for n, o in valid.items()})
    config = args.config
    with hub:
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        for name, client in hub.clients.items():
            availability = _ready_by(client, deadline, budget)
            if not availability.ok:
                cli.err(_not_ready(args, name, valid[name], availability, config=config))
                if status == EXIT_OK:
                    status = EXIT_UNAVAILABLE
                continue
            use(name, client)
    return status


def _operands(args: argparse.Namespace, wanted: int, what: str) -> tuple[str | None, list[str]]:
    """(URL or None, the command's own operands); ``wanted`` is how many it takes at most."""
    operands: list[str] = list(args.operands)
    url = None
    if args.config is None and operands:
        url = operands.pop(0)
    if len(operands) > wanted:
        form = "--config FILE" if args.config is not None else "URL"
        raise UsageError(f"expected {form} {what}, got {len(args.operands)} operands")
    return url, operands


# --- resources ------------------------------------------------------------------------


def cmd_resources(cli: Cli, args: argparse.Namespace) -> int:
    url, _ = _operands(args, 0, "")
    servers = _servers(cli, args, url, single=False)
    tagged = args.config is not None
    rows: list[dict[str, Any]] = []

    def use(name: str, client: McpClient) -> None:
        if not client.offers("resources"):
            return
        for resource in client.list_resources():
            rows.append(
                {
                    "server": name,
                    "kind": "resource",
                    "uri": resource.uri,
                    "name": resource.name,
                    "mime_type": resource.mime_type,
                    "description": resource.description,
                }
            )
        for template in client.list_resource_templates():
            rows.append(
                {
                    "server": name,
                    "kind": "template",
                    "uri_template": template.uri_template,
                    "name": template.name,
                    "mime_type": template.mime_type,
                    "description": template.description,
                }
            )

    status = _each_ready(cli, args, servers, use)
    if args.json:
        cli.out(
            dumps(
                [row if tagged else {k: v for k, v in row.items() if k != "server"} for row in rows]
            )
        )
        return status
    if not rows and status == 0:
        cli.err("no resources")
    for row in rows:
        where = _one_line(row.get("uri") or row.get("uri_template"))
        prefix = f"{_one_line(row['server'])}: " if tagged else ""
        kind = " (template)" if row["kind"] == "template" else ""
        mime = _one_line(row["mime_type"]) or "-"
        about = f"  {_one_line(row['description'])}" if row["description"] else ""
        cli.out(f"{prefix}{where}{kind}  {mime}  {_one_line(row['name'])}{about}")
    return status


def cmd_read(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = _operands(args, 1, "URI")
    if not operands:
        raise UsageError("give the URI of the resource to read")
    [uri] = operands
    save_dir = _save_dir(args.save) if args.save is not None else None
    [(name, outcome)] = _servers(cli, args, url, single=True).items()
    result: list[ReadResult] = []
    status = _each_ready(
        cli, args, {name: outcome}, lambda _, c: result.append(c.read_resource(uri))
    )
    if not result:
        return status
    written = _print_read(cli, args, result[0], save_dir)
    return status if written else EXIT_USAGE


def _print_read(cli: Cli, args: argparse.Namespace, read: ReadResult, save_dir: Any) -> bool:
    """Text parts as they are (escaped); binary parts summed up, or saved with --save."""
    from mcpcore import TextContents

    parts: list[dict[str, Any]] = []
    complete = True
    for number, part in enumerate(read.contents, start=1):
        entry: dict[str, Any] = {"uri": part.uri, "mime_type": part.mime_type}
        if isinstance(part, TextContents):
            entry["text"] = part.text
            if not args.json:
                cli.out(show(part.text))
            parts.append(entry)
            continue
        data = part.data
        entry["size"] = len(data)
        if save_dir is not None:
            stem = _safe_stem(part.uri.rstrip("/").rsplit("/", 1)[-1]) or f"resource-{number}"
            base, dot, suffix = stem.rpartition(".")
            if dot and base:  # the URI's own extension, unless the MIME type knows better
                stem, extension = base, "." + suffix
            else:
                extension = ""
            mime = (part.mime_type or "").split(";", 1)[0].strip().lower()
            extension = EXTENSIONS.get(mime, extension)
            try:
                path, fd = _create_fresh(save_dir, stem, extension or ".bin")
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
            except OSError as exc:
                cli.err(
                    f"cannot save {quote(part.uri)} in {quote(str(save_dir))}: {exc.strerror or exc}"
                )
                complete = False
            else:
                entry["saved"] = str(path)
                cli.err(f"saved {quote(part.uri)} ({len(data)} bytes) to {quote(str(path))}")
        elif not args.json:
            mime = _one_line(part.mime_type) or "no MIME type"
            cli.out(f"[binary: {mime}, {len(data)} bytes; --save DIR writes it to a file]")
        parts.append(entry)
    if args.json:
        cli.out(dumps({"contents": parts, "ttl_ms": read.ttl_ms, "cache_scope": read.cache_scope}))
    return complete


# --- prompts --------------------------------------------------------------------------


def cmd_prompts(cli: Cli, args: argparse.Namespace) -> int:
    url, _ = _operands(args, 0, "")
    servers = _servers(cli, args, url, single=False)
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

    status = _each_ready(cli, args, servers, use)
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
        prefix = f"{_one_line(row['server'])}: " if tagged else ""
        names = ", ".join(
            _one_line(a["name"]) + ("" if a["required"] else "?") for a in row["arguments"]
        )
        about = f"  {_one_line(row['description'])}" if row["description"] else ""
        cli.out(f"{prefix}{_one_line(row['name'])}({names}){about}")
    return status


def _prompt_operands(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """(URL or None, [NAME, arguments...]): any number of key=value words may follow."""
    from mcpcore import is_argument_pair

    operands: list[str] = list(args.operands)
    url = operands.pop(0) if args.config is None and operands else None
    if len(operands) > 2:
        for number, word in enumerate(operands[1:], 1):
            if not is_argument_pair(word):
                raise _app_usage(
                    f"argument {number} after NAME is not key=value: give either one "
                    "ARGS_JSON object or key=value pairs"
                )
    return url, operands


def _prompt_arguments(words: list[str]) -> dict[str, Any] | None:
    """ARGS_JSON (one JSON object) or ``key=value`` pairs, as ``call`` takes them; a
    prompt's arguments are strings, so a value is the text as it is."""
    from mcpcore import InvalidArguments, arguments_from_pairs, is_argument_pair

    if not words:
        return None
    if len(words) == 1 and not is_argument_pair(words[0]):
        try:
            arguments = json.loads(words[0])
        except (ValueError, RecursionError):
            raise _app_usage(
                "ARGS_JSON is not JSON (give a JSON object of strings, or key=value pairs)"
            ) from None
        if not isinstance(arguments, dict):
            raise _app_usage("ARGS_JSON must be a JSON object of strings")
        return arguments
    try:
        return arguments_from_pairs(words, {"type": "object"})
    except InvalidArguments as exc:
        raise _app_usage(str(exc)) from None


def _app_usage(text: str) -> Exception:
    return UsageError(text)


def cmd_prompt(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = _prompt_operands(args)
    if not operands:
        raise UsageError("give the name of the prompt")
    name = operands[0]
    arguments = _prompt_arguments(operands[1:])
    [(server, outcome)] = _servers(cli, args, url, single=True).items()
    got: list[Any] = []
    status = _each_ready(
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
        cli.out(f"{_one_line(message.role)}: {show(message.text)}")
    return status
