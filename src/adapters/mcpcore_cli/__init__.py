"""The ``mcpcore`` command line."""

from __future__ import annotations

import sys

import mcpcore


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("--version", "-V"):
        print(f"mcpcore {mcpcore.__version__}")
        return 0
    print("usage: mcpcore {demo,tools,call,check} ...", file=sys.stderr)
    return 2
