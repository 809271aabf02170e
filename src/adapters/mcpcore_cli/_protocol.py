"""``--protocol``: which MCP revision the command line speaks (E1).

By default (``auto``) the client asks each server for 2026-07-28 first and
falls back to the ``initialize`` handshake. ``legacy`` always uses the
handshake: a tool written with ``ctx.elicit()`` can then ask its questions,
which both official SDKs refuse at 2026-07-28 (there only tools written for
``input_required`` can ask). ``modern`` speaks 2026-07-28 only.

Left out, an entry of the user's ``mcp.json`` may pin a revision with its own
``"protocol"`` key (the library reads it, C9); the flag, when given, wins.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["CHOICES", "add_protocol_option", "protocol_options", "protocol_words"]

CHOICES = ("auto", "legacy", "modern")

_HELP = (
    "the MCP revision to speak: auto (the default: 2026-07-28 when the server has it, "
    "else the handshake), legacy (the initialize handshake; tools written with "
    "ctx.elicit() can ask only there) or modern (2026-07-28 only); an mcp.json entry "
    'may pin one with its "protocol" key, which this overrides'
)


def add_protocol_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--protocol", choices=CHOICES, metavar="auto|legacy|modern", help=_HELP)


def protocol_options(args: argparse.Namespace) -> dict[str, Any]:
    """The client's ``protocol=`` option, only when the flag was given (so an entry's
    own pin applies otherwise)."""
    protocol = getattr(args, "protocol", None)
    return {} if protocol is None else {"protocol": protocol}


def protocol_words(args: argparse.Namespace) -> list[str]:
    """The flag again, for a command printed as a hint (the same revision)."""
    protocol = getattr(args, "protocol", None)
    return [] if protocol is None else ["--protocol", protocol]
