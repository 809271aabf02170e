"""The shared, pure part of both drivers: options, entry validation (C6), S2's environment."""

from __future__ import annotations

import pytest

from mcpcore import ConfigError, HttpLimits, LocalServer, RemoteServer
from mcpcore._setup import LOCAL_REFUSED, child_environment, describe_failure, prepare_client


def test_C6_local_server_object_refused_without_opt_in() -> None:
    """C6: a LocalServer is refused with the exact reason unless local servers are allowed."""
    local = LocalServer(name="l", command="tool", plugin_root="/p")
    setup = prepare_client("l", local, {}, env={}, home="/h")
    assert setup.server is None and setup.config_error is not None
    assert (
        str(setup.config_error)
        == LOCAL_REFUSED
        == "local MCP servers (command) are not supported yet"
    )
    assert prepare_client("l", local, {"allow_local": True}, env={}, home="/h").server is local


def test_prepare_client_never_raises_for_a_bad_entry_and_keeps_options() -> None:
    """seed 000: an invalid entry gives an unavailable client, with its reason."""
    setup = prepare_client(
        "x",
        {"url": "ftp://nope"},
        {"call_timeout": 5.0, "limits": HttpLimits(max_reconnects=2)},
        env={},
        home="/h",
    )
    assert setup.server is None and isinstance(setup.config_error, ConfigError)
    assert setup.session.call_timeout == 5.0 and setup.limits.max_reconnects == 2
    error = ConfigError("given")
    assert prepare_client("x", error, {}, env={}, home="/h").config_error is error
    remote = RemoteServer(name="r", url="https://a.example/mcp")
    assert prepare_client("r", remote, {}, env={}, home="/h").server is remote
    with pytest.raises(TypeError, match="call_timout"):
        prepare_client("x", remote, {"call_timout": 1.0}, env={}, home="/h")  # type: ignore[typeddict-unknown-key]


def test_max_connections_leaves_room_for_calls_beside_the_get_stream() -> None:
    """H8's GET stream keeps one connection for as long as it is open: a listening client
    with one connection would queue every call behind it until the call's deadline, so that
    is refused at construction with what to change; a bad type is a TypeError."""
    remote = RemoteServer(name="r", url="https://a.example/mcp")
    with pytest.raises(ValueError, match=r"at least 2 while listening.*listen=False"):
        prepare_client("r", remote, {"max_connections": 1}, env={}, home="/h")
    assert prepare_client("r", remote, {"max_connections": 1, "listen": False}, env={}, home="/h").max_connections == 1
    with pytest.raises(ValueError, match="at least 1"):
        prepare_client("r", remote, {"max_connections": 0, "listen": False}, env={}, home="/h")
    for bad in (2.5, "4", True):
        with pytest.raises(TypeError, match="whole number"):
            prepare_client("r", remote, {"max_connections": bad}, env={}, home="/h")  # type: ignore[typeddict-item]
    assert prepare_client("r", remote, {}, env={}, home="/h").max_connections == 10


def test_S2_child_environment_is_minimal() -> None:
    """S2: PATH and a few basics are inherited; nothing else of the host's environment."""
    server = LocalServer(
        name="l",
        command="tool",
        env={"A": "1", "PATH": "/custom"},
        plugin_root="/p",
        plugin_data="/d",
    )
    env = child_environment(server, {"PATH": "/usr/bin", "SECRET": "s", "HOME": "/h"})
    assert env == {
        "PATH": "/custom",
        "HOME": "/h",
        "PLUGIN_ROOT": "/p",
        "PLUGIN_DATA": "/d",
        "A": "1",
    }


def test_describe_failure_walks_the_chain() -> None:
    """A backend that raises with an empty message still gets a reason."""
    try:
        try:
            raise OSError("certificate verify failed")
        except OSError as inner:
            raise ConnectionError() from inner
    except ConnectionError as exc:
        assert describe_failure(exc) == "ConnectionError: certificate verify failed"
    assert describe_failure(TimeoutError()) == "TimeoutError"


def test_L7_C2_hub_entries_name_each_outcome() -> None:
    """L7, C2: valid entries by server name, invalid ones by their key; C1 raises."""
    from mcpcore._setup import hub_entries

    text = '{"mcpServers": {"Good": {"url": "https://g.example/mcp"}, "Bad": {"url": "ftp://x"}}}'
    entries = hub_entries(text, {}, env={}, home="/h")
    assert isinstance(entries["good"], RemoteServer)
    assert isinstance(entries["Bad"], ConfigError)
    with pytest.raises(ConfigError):
        hub_entries('{"extra": 1}', {}, env={}, home="/h")
