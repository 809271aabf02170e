"""``mcpcore resources`` and ``read`` (F10).

The same server forms as ``tools``: a URL, or ``--config FILE`` with
``--server NAME`` (``resources`` lists every ready server of the file without
it). Everything the server sent is escaped before it reaches the terminal (X1);
the exit statuses are ``tools``': 0 done, 2 bad usage (an unknown URI, an
invalid entry), 3 a server unavailable.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from mcpcore import TextContents

from ._common import EXIT_USAGE, Cli, UsageError, escaped_line
from ._connect import chosen_servers, each_ready, split_operands
from ._results import EXTENSIONS, create_fresh, prepare_save_dir, safe_stem
from ._term import dumps, quote, show

if TYPE_CHECKING:
    from mcpcore import ReadResult
    from mcpcore_threaded import McpClient

__all__ = ["cmd_read", "cmd_resources"]


def cmd_resources(cli: Cli, args: argparse.Namespace) -> int:
    url, _ = split_operands(args, 0, "")
    servers = chosen_servers(cli, args, url, single=False)
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

    status = each_ready(cli, args, servers, use)
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
        where = escaped_line(row.get("uri") or row.get("uri_template"))
        prefix = f"{escaped_line(row['server'])}: " if tagged else ""
        kind = " (template)" if row["kind"] == "template" else ""
        mime = escaped_line(row["mime_type"]) or "-"
        about = f"  {escaped_line(row['description'])}" if row["description"] else ""
        cli.out(f"{prefix}{where}{kind}  {mime}  {escaped_line(row['name'])}{about}")
    return status


def cmd_read(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = split_operands(args, 1, "URI")
    if not operands:
        raise UsageError("give the URI of the resource to read")
    [uri] = operands
    save_dir = prepare_save_dir(args.save) if args.save is not None else None
    [(name, outcome)] = chosen_servers(cli, args, url, single=True).items()
    result: list[ReadResult] = []
    status = each_ready(
        cli, args, {name: outcome}, lambda _, c: result.append(c.read_resource(uri))
    )
    if not result:
        return status
    written = _print_read(cli, args, result[0], save_dir)
    return status if written else EXIT_USAGE


def _print_read(cli: Cli, args: argparse.Namespace, read: ReadResult, save_dir: Any) -> bool:
    """Text parts as they are (escaped); binary parts summed up, or saved with --save."""
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
            stem = safe_stem(part.uri.rstrip("/").rsplit("/", 1)[-1]) or f"resource-{number}"
            base, dot, suffix = stem.rpartition(".")
            if dot and base:  # the URI's own extension, unless the MIME type knows better
                stem, extension = base, "." + suffix
            else:
                extension = ""
            mime = (part.mime_type or "").split(";", 1)[0].strip().lower()
            extension = EXTENSIONS.get(mime, extension)
            try:
                path, fd = create_fresh(save_dir, stem, extension or ".bin")
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
            mime = escaped_line(part.mime_type) or "no MIME type"
            cli.out(f"[binary: {mime}, {len(data)} bytes; --save DIR writes it to a file]")
        parts.append(entry)
    if args.json:
        cli.out(dumps({"contents": parts, "ttl_ms": read.ttl_ms, "cache_scope": read.cache_scope}))
    return complete
