"""The user's own entry pins an MCP revision with ``"protocol"`` (issue 37 point 4; C9, E1).

A plugin's mcp.json stays as the seeds define it (the key is ignored there, as
unknown fields are, C3); in the user's own file, ``"protocol"`` takes the
``protocol=`` option's words or a version, and anything else refuses the entry.
The client's own ``protocol=`` option, when given, wins. (Against a real server
and the command line: tests/test_cli_protocol.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpcore import ConfigError, LocalServer, RemoteServer, parse_server
from mcpcore.config._setup import prepare_client

ENV = {"API_TOKEN": "tok-5e1f-secret"}


def _parse(entry: dict[str, Any], **options: Any) -> Any:
    return parse_server("svc", entry, env=ENV, home="/home/me", **options)


@pytest.mark.parametrize("protocol", ["legacy", "modern", "auto", "2025-06-18"])
def test_C9_E1_the_users_entry_pins_a_revision(protocol: str) -> None:
    server = _parse({"url": "https://x.example/mcp", "protocol": protocol}, origin="user")
    assert isinstance(server, RemoteServer) and server.protocol == protocol
    local = _parse({"command": "srv", "protocol": protocol}, origin="user", allow_local=True)
    assert isinstance(local, LocalServer) and local.protocol == protocol


def test_C9_a_plugins_entry_stays_as_the_seeds_define_it() -> None:
    """A plugin's mcp.json has no "protocol": the key is ignored, as unknown fields are (C3)."""
    server = _parse({"url": "https://x.example/mcp", "protocol": "bogus"})
    assert server.protocol is None


@pytest.mark.parametrize("value", ["Legacy", "2024-11-05", 1, None])
def test_C9_an_unknown_protocol_is_refused_naming_the_key(value: object) -> None:
    with pytest.raises(ConfigError) as info:
        _parse({"url": "https://x.example/mcp", "protocol": value}, origin="user")
    assert info.value.key == "protocol"
    assert str(info.value).startswith("server 'svc': 'protocol' must be")
    if isinstance(value, str):
        assert "'auto', 'legacy', 'modern' or a protocol version" in str(info.value)


def test_C9_E1_the_client_option_wins_over_the_entrys_pin() -> None:
    """The pin applies when the client is not given ``protocol=``; given, it wins."""
    entry = {"url": "https://x.example/mcp", "protocol": "legacy"}
    server = _parse(entry, origin="user")

    def spoken(server: Any, **options: Any) -> str:
        return prepare_client("svc", server, options, env=ENV, home="/h").session.protocol

    assert spoken(server) == "legacy"
    assert spoken(entry) == "legacy"  # a raw entry given to a client is the user's
    assert spoken(server, protocol="modern") == "modern"
    assert spoken(_parse({"url": "https://x.example/mcp"})) == "auto"
