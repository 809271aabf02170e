"""``mcpcore skills`` and ``skill`` (N4): a server's skills (SEP-2640).

The same server forms as ``tools``: a URL, or ``--config FILE`` with
``--server NAME`` (``skills`` lists every ready server of the file without
it). ``skills`` lists each skill's entry and reads no file; ``skill NAME
[PATH]`` reads one file (``SKILL.md`` by default), verified against the entry
(size, digest, frontmatter): a file that does not match is refused, its
content never printed. Everything the server sent is escaped before it reaches
the terminal (X1); the exit statuses are ``tools``': 0 done, 2 bad usage (an
unknown skill, a path the skill does not list, an invalid entry), 3 a server
unavailable, without the extension, or whose file failed verification.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ._common import Cli, UsageError, escaped_line
from ._connect import chosen_servers, each_ready, split_operands
from ._term import dumps, show

if TYPE_CHECKING:
    from mcpcore import SkillFileContent
    from mcpcore_threaded import McpClient

__all__ = ["cmd_skill", "cmd_skills"]


def cmd_skills(cli: Cli, args: argparse.Namespace) -> int:
    url, _ = split_operands(args, 0, "")
    servers = chosen_servers(cli, args, url, single=False)
    tagged = args.config is not None
    rows: list[dict[str, Any]] = []

    def use(name: str, client: McpClient) -> None:
        if not client.offers("skills"):
            return
        for skill in client.list_skills():
            files = [{"path": f.path, "size": f.size, "digest": f.digest} for f in skill.files]
            rows.append(
                {
                    "server": name,
                    "name": skill.name,
                    "description": skill.description,
                    "uri": skill.uri,
                    "dynamic": skill.dynamic,
                    "files": None if skill.dynamic else files,
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
        cli.err("no skills")
    for row in rows:
        prefix = f"{escaped_line(row['server'])}: " if tagged else ""
        files = row["files"]
        held = (
            "dynamic"
            if files is None
            else f"{len(files)} files, {sum(f['size'] for f in files)} bytes"
        )
        about = f"  {escaped_line(row['description'])}"
        cli.out(f"{prefix}{escaped_line(row['name'])}  ({held}){about}")
    return status


def cmd_skill(cli: Cli, args: argparse.Namespace) -> int:
    url, operands = split_operands(args, 2, "NAME [PATH]")
    if not operands:
        raise UsageError("give the name of the skill (and the path of one of its files)")
    name = operands[0]
    path = operands[1] if len(operands) > 1 else "SKILL.md"
    [(server, outcome)] = chosen_servers(cli, args, url, single=True).items()
    read: list[SkillFileContent] = []
    status = each_ready(
        cli, args, {server: outcome}, lambda _, c: read.append(c.read_skill_file(name, path))
    )
    if not read:
        return status
    got = read[0]
    if args.json:
        shown = {"skill": got.skill, "path": got.path, "uri": got.uri, "size": len(got.data)}
        cli.out(dumps({**shown, "verified": got.verified, "text": got.text}))
    elif got.text is None:
        cli.out(f"[binary: {len(got.data)} bytes]")
    else:
        cli.out(show(got.text))
    if not got.verified:
        cli.err("the skill is dynamic: the file had no digest or size to be verified against")
    return status
