"""The shared, pure part of both drivers: options, entry validation (C6), S2's environment."""

from __future__ import annotations

import pytest

from mcpcore import ConfigError, HttpLimits, LocalServer, RemoteServer
from mcpcore.config._setup import (
    LOCAL_REFUSED,
    child_environment,
    choose_proxy,
    prepare_client,
)


def test_C6_local_server_object_refused_without_opt_in() -> None:
    """C6: a LocalServer is refused with the exact reason unless local servers are allowed."""
    local = LocalServer(name="l", command="tool", plugin_root="/p")
    setup = prepare_client("l", local, {}, env={}, home="/h")
    assert setup.server is None and setup.config_error is not None
    assert (
        str(setup.config_error)
        == LOCAL_REFUSED
        == "local MCP servers (command) are not supported yet: allow_local=True starts them"
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


def test_L7_C2_C4_hub_entries_name_each_outcome() -> None:
    """L7, C2, C4: every outcome by its key lowercased (its client's name); C1 raises."""
    from mcpcore.config._setup import hub_entries

    text = '{"mcpServers": {"Good": {"url": "https://g.example/mcp"}, "Bad": {"url": "ftp://x"}}}'
    entries = hub_entries(text, {}, env={}, home="/h")
    assert isinstance(entries["good"], RemoteServer)
    assert isinstance(entries["bad"], ConfigError)
    with pytest.raises(ConfigError):
        hub_entries('{"extra": 1}', {}, env={}, home="/h")


def test_C5_X5_host_built_remote_server_headers_are_checked() -> None:
    """C5, X5: a RemoteServer a host constructs goes through the same header checks as an
    entry; a refusal leaves the client unavailable with the reason (naming the header only)."""
    for headers, needle in (
        ({"Authorization": " Bearer tok-secret"}, "header 'Authorization' value begins or ends with whitespace"),
        ({"Authorization": "Bearer tok-secret\t"}, "header 'Authorization' value begins or ends with whitespace"),
        ({"X-Key": "tok-secret\r\nX-Evil: 1"}, "header 'X-Key' value contains a line break"),
        ({"Accept": "tok-secret"}, "header 'Accept' is set by the client"),
        ({"bad name": "tok-secret"}, "RFC 9110 token"),
    ):
        server = RemoteServer(name="r", url="https://a.example/mcp", headers=headers)
        setup = prepare_client("r", server, {}, env={}, home="/h")
        assert setup.server is None and isinstance(setup.config_error, ConfigError), headers
        assert needle in str(setup.config_error)
        assert "tok-secret" not in repr(setup.config_error)
    good = RemoteServer(name="r", url="https://a.example/mcp", headers={"Authorization": "Bearer ${x} y"})
    setup = prepare_client("r", good, {}, env={}, home="/h")
    assert setup.server is good and setup.config_error is None


def test_C4_prepare_client_lowercases_the_name_once() -> None:
    """C4: the client name is lowercased in ASCII once; that form is the client's name and
    the session's server name (so tool ids), whatever the server argument is."""
    remote = RemoteServer(name="py-peer", url="https://a.example/mcp")
    for server in ({"url": "https://a.example/mcp"}, remote):
        setup = prepare_client("Py-Peer", server, {}, env={}, home="/h")
        assert setup.config_error is None
        assert setup.name == setup.session.server_name == "py-peer"
    # Only A-Z are lowered; an invalid name still names the client, lowered the same way.
    setup = prepare_client("Bad Name", {"url": "https://a.example/mcp"}, {}, env={}, home="/h")
    assert setup.name == setup.session.server_name == "bad name"


@pytest.mark.parametrize(
    ("name", "separator", "needle"),
    [
        ("bad name", "/", "not a valid id"),
        ("", "/", "not a valid id"),
        ("x" * 129, "/", "not a valid id"),
        ("\u212a", "/", "not a valid id"),  # KELVIN SIGN: not ASCII, stays invalid
        ("a.b", ".", "contains the tool-id separator '.'"),
        ("A.B", ".", "contains the tool-id separator '.'"),
        ("my__srv", "__", "contains the tool-id separator '__'"),
        ("a_", "__", "runs into the tool-id separator '__'"),
        ("a-", "-", "contains the tool-id separator '-'"),
    ],
)
def test_C4_bad_client_name_is_a_config_error_not_a_raise(name: str, separator: str, needle: str) -> None:
    """C4: an invalid name, or one holding the separator (ids are routed by what precedes the
    first separator), leaves the client unavailable with the reason; nothing is raised."""
    for server in ({"url": "https://a.example/mcp"}, RemoteServer(name="r", url="https://a.example/mcp")):
        setup = prepare_client(name, server, {"separator": separator}, env={}, home="/h")
        assert setup.server is None and isinstance(setup.config_error, ConfigError)
        assert needle in str(setup.config_error)
    # With the default separator the dotted and underscored names are fine.
    for good in ("a.b", "my__srv", "a_"):
        assert prepare_client(good, {"url": "https://a.example/mcp"}, {}, env={}, home="/h").config_error is None


def test_C4_C2_hub_entries_refuse_a_name_holding_the_separator() -> None:
    """C4, C2: an entry whose name holds the separator is a ConfigError on its own; two keys
    equal after lowercasing are one name, refused with the duplicate's error."""
    from mcpcore.config._setup import hub_entries

    text = '{"mcpServers": {"a": {"url": "https://a.example/mcp"}, "A.B": {"url": "https://b.example/mcp"}}}'
    entries = hub_entries(text, {"separator": "."}, env={}, home="/h")
    assert list(entries) == ["a", "a.b"]
    assert isinstance(entries["a"], RemoteServer)
    assert isinstance(entries["a.b"], ConfigError) and "separator '.'" in str(entries["a.b"])
    assert all(isinstance(e, RemoteServer) for e in hub_entries(text, {}, env={}, home="/h").values())
    twice = '{"mcpServers": {"dup": {"url": "https://a.example/mcp"}, "DUP": {"url": "https://b.example/mcp"}}}'
    entries = hub_entries(twice, {}, env={}, home="/h")
    assert list(entries) == ["dup"] and isinstance(entries["dup"], ConfigError)
    assert "same name" in str(entries["dup"])


@pytest.mark.parametrize("option", ["call_timeout", "startup_timeout", "call_timeout_max"])
@pytest.mark.parametrize("bad", [0, -5.0, float("nan"), "30", True])
def test_K2_a_time_option_that_is_not_positive_is_a_value_error_naming_it(option: str, bad: object) -> None:
    """K2: a time limit that is not a positive number of seconds is refused at once, naming
    the option: a ValueError (and a LocalProtocolError); a client's ``call_timeout`` setter too."""
    import mcpcore_threaded
    from mcpcore import InvalidValue, LocalProtocolError

    remote = RemoteServer(name="r", url="https://a.example/mcp")
    with pytest.raises(ValueError, match=f"^{option} must be a positive number of seconds") as info:
        prepare_client("r", remote, {option: bad}, env={}, home="/h")  # type: ignore[misc]
    assert isinstance(info.value, InvalidValue) and isinstance(info.value, LocalProtocolError)
    client = mcpcore_threaded.McpClient("r", remote)
    with pytest.raises(ValueError, match="call_timeout must be a positive number"):
        client.call_timeout = bad  # type: ignore[assignment]
    assert client.call_timeout == 300.0


def test_ClientOptions_is_public_and_documents_every_option() -> None:
    """Every option ``McpClient`` takes is exported as ``mcpcore.ClientOptions`` and its
    docstring says what it means and its default."""
    import mcpcore
    from mcpcore.config._setup import ClientOptions

    assert mcpcore.ClientOptions is ClientOptions and "ClientOptions" in mcpcore.__all__
    doc = ClientOptions.__doc__ or ""
    for option in ClientOptions.__annotations__:
        assert f"``{option}`` (" in doc, option


# --- the proxy (from the option or the environment) -------------------------------------------

PROXY = "http://user:hunter2@proxy.corp:3128"


@pytest.mark.parametrize(
    ("url", "env", "explicit", "expected"),
    [
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY}, None, PROXY),
        ("https://api.example.com/mcp", {"https_proxy": PROXY, "HTTPS_PROXY": "http://other:1"}, None, PROXY),
        ("http://api.example.com/mcp", {"HTTPS_PROXY": PROXY}, None, None),
        ("http://api.example.com/mcp", {"HTTP_PROXY": PROXY}, None, PROXY),
        ("https://api.example.com/mcp", {"ALL_PROXY": PROXY}, None, PROXY),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": "proxy.corp:3128"}, None, "http://proxy.corp:3128"),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "*"}, None, None),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "example.com"}, None, None),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "no_proxy": ".example.com"}, None, None),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "ample.com"}, None, PROXY),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com:443"}, None, None),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY, "NO_PROXY": "api.example.com:8443"}, None, PROXY),
        ("https://127.0.0.1:9/mcp", {"HTTPS_PROXY": PROXY}, None, None),
        ("http://localhost:9/mcp", {"HTTP_PROXY": PROXY}, None, None),
        ("https://api.example.com/mcp", {"HTTPS_PROXY": PROXY}, "", None),
        ("https://api.example.com/mcp", {}, "http://p:1", "http://p:1"),
        ("http://localhost:9/mcp", {}, "http://p:1", "http://p:1"),
    ],
)
def test_C5_proxy_from_the_option_or_the_environment(
    url: str, env: dict[str, str], explicit: str | None, expected: str | None
) -> None:
    assert choose_proxy(url, env, explicit) == expected


@pytest.mark.parametrize("bad", ["ftp://user:hunter2@p:1", "http://user:hunter2@", "http://user:hunter2@p:x", "http://p:1 x"])
def test_C5_C8_a_bad_proxy_is_refused_naming_its_origin_never_its_text(bad: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        choose_proxy("https://api.example.com/mcp", {"HTTPS_PROXY": bad}, None)
    assert "HTTPS_PROXY" in str(excinfo.value) and "hunter2" not in str(excinfo.value)
    with pytest.raises(ConfigError) as excinfo:
        choose_proxy("https://api.example.com/mcp", {}, bad)
    assert "proxy option" in str(excinfo.value) and "hunter2" not in str(excinfo.value)


def test_C5_C8_the_chosen_proxy_is_in_the_setup_but_never_in_its_repr() -> None:
    setup = prepare_client(
        "s", {"url": "https://api.example.com/mcp"}, {}, env={"HTTPS_PROXY": PROXY}, home="/h"
    )
    assert setup.proxy == PROXY and "hunter2" not in repr(setup)
    bad = prepare_client(
        "s", {"url": "https://api.example.com/mcp"}, {}, env={"HTTPS_PROXY": "socks5://nonsense"}, home="/h"
    )
    assert bad.config_error is not None and "HTTPS_PROXY" in str(bad.config_error)
