"""Configuration layer: ``mcp.json``, entries, expansion and redaction (C1–C8, see docs/behaviours.md)."""

from __future__ import annotations

import json
import logging
import os.path
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpcore
from mcpcore import (
    ConfigError,
    LocalServer,
    McpError,
    RemoteServer,
    expand,
    load_mcp_json,
    parse_server,
)
from mcpcore.config._config import CLIENT_OWNED_HEADERS, LOCAL_NOT_SUPPORTED

ENV = {"TOKEN": "tok-value", "HOST": "api.example.com", "EMPTY": ""}
HOME = "/home/user"
ROOT = "/plugins/demo"
DATA = "/var/plugin-data/demo"


def load(doc: object, **kw: Any) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    kw.setdefault("env", ENV)
    kw.setdefault("home", HOME)
    return load_mcp_json(text, **kw)


def remote(entry: object, name: str = "srv", **kw: Any) -> RemoteServer:
    kw.setdefault("env", ENV)
    kw.setdefault("home", HOME)
    server = parse_server(name, entry, **kw)
    assert isinstance(server, RemoteServer)
    return server


def local(entry: object, name: str = "srv", **kw: Any) -> LocalServer:
    kw.setdefault("env", ENV)
    kw.setdefault("home", HOME)
    kw.setdefault("plugin_root", ROOT)
    kw.setdefault("plugin_data", DATA)
    kw.setdefault("allow_local", True)
    server = parse_server(name, entry, **kw)
    assert isinstance(server, LocalServer)
    return server


def refused(entry: object, name: str = "srv", **kw: Any) -> ConfigError:
    kw.setdefault("env", ENV)
    kw.setdefault("home", HOME)
    with pytest.raises(ConfigError) as info:
        parse_server(name, entry, **kw)
    return info.value


# ---------------------------------------------------------------------------
# C1: the top level
# ---------------------------------------------------------------------------

TOP_LEVEL_INVALID = [
    pytest.param("", "not valid JSON", None, id="empty"),
    pytest.param("{", "not valid JSON", None, id="truncated"),
    pytest.param('{"mcpServers": {}} x', "not valid JSON", None, id="trailing"),
    pytest.param('{"mcpServers": {"a": NaN}}', "not valid JSON", None, id="nan"),
    pytest.param("[" * 100_000 + "]" * 100_000, "not valid JSON", None, id="deep"),
    pytest.param(b"\xff\xfe{}", "not valid UTF-8", None, id="bad-utf8"),
    pytest.param('{"mcpServers": {}}'.encode("utf-16"), "not valid UTF-8", None, id="utf16-bytes"),
    pytest.param("[]", "must be a JSON object", None, id="array"),
    pytest.param("null", "not null", None, id="null"),
    pytest.param('"x"', "not a string", None, id="string"),
    pytest.param('{"mcpServers": {}, "servers": {}}', "'servers'", "servers", id="unknown-key"),
    pytest.param('{"mcpServers": {}, "$schema": 1}', "'$schema' must be a string", "$schema"),
    pytest.param('{"$schema": "x"}', "'mcpServers' is missing", "mcpServers", id="missing"),
    pytest.param('{"mcpServers": []}', "must be an object, not an array", "mcpServers"),
    pytest.param('{"mcpServers": null}', "must be an object, not null", "mcpServers"),
    pytest.param(
        '{"mcpServers": {}, "mcpServers": {}}', "more than once", "mcpServers", id="dup-top"
    ),
]


@pytest.mark.parametrize(("text", "needle", "key"), TOP_LEVEL_INVALID)
def test_c1_invalid_top_level_raises(text: str | bytes, needle: str, key: str | None) -> None:
    """C1: invalid JSON, wrong types and unknown keys invalidate the whole file."""
    with pytest.raises(ConfigError) as info:
        load_mcp_json(text, env=ENV, home=HOME)
    assert needle in str(info.value)
    assert info.value.key == key
    assert isinstance(info.value, McpError)


def test_c1_invalid_json_names_position() -> None:
    """C1: a syntax error says where it is."""
    with pytest.raises(ConfigError, match=r"line 2, column \d+"):
        load_mcp_json('{"mcpServers":\n  {,}}', env=ENV, home=HOME)


def test_c1_valid_top_level_with_schema_and_bytes() -> None:
    """C1: ``$schema`` and ``mcpServers`` only; bytes are UTF-8 (a BOM is tolerated)."""
    doc = {
        "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
        "mcpServers": {"a": {"url": "https://a.example/mcp"}},
    }
    text = json.dumps(doc)
    for variant in (text, text.encode(), b"\xef\xbb\xbf" + text.encode(), "\ufeff" + text):
        out = load_mcp_json(variant, env={}, home=HOME)
        assert list(out) == ["a"]
        assert isinstance(out["a"], RemoteServer)
    assert load_mcp_json(bytearray(text.encode()), env={}, home=HOME)["a"] == out["a"]  # type: ignore[arg-type]
    assert load_mcp_json('{"mcpServers": {}}', env={}, home=HOME) == {}


# ---------------------------------------------------------------------------
# C2: failure isolation
# ---------------------------------------------------------------------------


def test_c2_each_entry_checked_alone_in_document_order() -> None:
    """C2: an invalid entry is a ConfigError under its key; the others load, in order."""
    doc = {
        "mcpServers": {
            "zeta": {"url": "https://z.example/mcp"},
            "bad": {"url": "ftp://x"},
            "local": {"command": "node"},
            "unset": {"url": "https://${env:MISSING}/"},
            "alpha": {"url": "https://a.example/mcp", "headers": {"X-Tenant": "t"}},
            "not-object": 3,
        }
    }
    out = load(doc)
    assert list(out) == ["zeta", "bad", "local", "unset", "alpha", "not-object"]
    assert isinstance(out["zeta"], RemoteServer)
    assert isinstance(out["alpha"], RemoteServer)
    assert isinstance(out["bad"], ConfigError)
    assert str(out["local"]) == LOCAL_NOT_SUPPORTED
    assert "'MISSING'" in str(out["unset"])
    assert "must be an object" in str(out["not-object"])


# ---------------------------------------------------------------------------
# C3: kind of entry
# ---------------------------------------------------------------------------

KIND_CASES = [
    pytest.param({"url": "https://x.example"}, RemoteServer, id="url"),
    pytest.param({"command": "node"}, LocalServer, id="command"),
    pytest.param({"url": "https://x.example", "type": "streamable-http"}, RemoteServer),
    pytest.param({"url": "https://x.example", "type": "http"}, RemoteServer, id="type-http"),
    pytest.param({"url": "https://x.example", "type": "stdio"}, RemoteServer, id="type-ignored"),
    pytest.param({"url": "https://x.example", "type": 7}, RemoteServer, id="type-not-str"),
    pytest.param({"command": "node", "type": "stdio", "extra": [1]}, LocalServer, id="unknown"),
    pytest.param({"url": "https://x.example", "oauth": {"a": 1}}, RemoteServer, id="unknown2"),
]


@pytest.mark.parametrize(("entry", "kind"), KIND_CASES)
def test_c3_url_is_remote_command_is_local(entry: dict[str, object], kind: type) -> None:
    """C3: url → remote, command → local; other types and unknown fields ignored."""
    server = parse_server("s", entry, env={}, home=HOME, plugin_root=ROOT, allow_local=True)
    assert type(server) is kind


KIND_INVALID = [
    pytest.param({"url": "https://x", "command": "node"}, "both 'url' and 'command'", "srv"),
    pytest.param({}, "neither 'url'", "srv", id="neither"),
    pytest.param({"headers": {}}, "neither 'url'", "srv", id="headers-only"),
    pytest.param({"url": "https://x", "type": "sse"}, "legacy HTTP+SSE", "type", id="sse"),
    pytest.param({"url": "https://x", "type": "SSE"}, "not supported", "type", id="sse-case"),
    pytest.param({"command": "x", "type": "sse"}, "Streamable HTTP", "type", id="sse-cmd"),
    pytest.param([], "must be an object, not an array", "srv", id="array"),
    pytest.param("https://x", "must be an object, not a string", "srv", id="string"),
    pytest.param(None, "not null", "srv", id="null"),
    pytest.param(object(), "must be an object, not object", "srv", id="python-object"),
    pytest.param(("url",), "not an array", "srv", id="tuple"),
]


@pytest.mark.parametrize(("entry", "needle", "key"), KIND_INVALID)
def test_c3_invalid_kinds(entry: object, needle: str, key: str) -> None:
    """C3: both/neither, type "sse" and non-objects are refused with a reason."""
    error = refused(entry, allow_local=True, plugin_root=ROOT)
    assert needle in str(error)
    assert str(error).startswith("server 'srv': ")
    assert error.key == key


def test_c3_duplicate_fields_in_raw_entry() -> None:
    """C3/C1: a field written twice in one entry makes that entry invalid (not overwritten)."""
    text = '{"mcpServers": {"a": {"url": "https://a.example", "url": "https://b.example"}}}'
    out = load_mcp_json(text, env={}, home=HOME)
    assert isinstance(out["a"], ConfigError)
    assert "key 'url' appears more than once" in str(out["a"])


# ---------------------------------------------------------------------------
# C4: server names
# ---------------------------------------------------------------------------

NAMES = [
    pytest.param("github", "github", id="plain"),
    pytest.param("GitHub", "github", id="upper"),
    pytest.param("WG21-Papers", "wg21-papers", id="dash"),
    pytest.param("a.b_c-9", "a.b_c-9", id="alphabet"),
    pytest.param("x" * 128, "x" * 128, id="128"),
]


@pytest.mark.parametrize(("key", "name"), NAMES)
def test_c4_names_lowercased_in_ascii(key: str, name: str) -> None:
    """C4: the server name is the key lowercased in ASCII."""
    assert remote({"url": "https://x.example"}, name=key).name == name


BAD_NAMES = [
    pytest.param("", id="empty"),
    pytest.param("x" * 129, id="129"),
    pytest.param("a b", id="space"),
    pytest.param("a/b", id="slash"),
    pytest.param("a:b", id="colon"),
    pytest.param("ÄBC", id="non-ascii-upper"),
    pytest.param("é", id="non-ascii"),
    pytest.param("\u212a", id="kelvin-sign"),  # str.lower() would turn this into "k"
    pytest.param("\u0130", id="dotted-I"),
    pytest.param("a\n", id="trailing-newline"),
]


@pytest.mark.parametrize("key", BAD_NAMES)
def test_c4_invalid_names(key: str) -> None:
    """C4: a key that is not a valid id segment after ASCII lowercasing is refused."""
    error = refused({"url": "https://x.example"}, name=key)
    assert "not a valid id" in str(error)
    assert error.key == key


def test_c4_long_invalid_name_is_shortened_in_message() -> None:
    """C4: a very long key is cut in the message but kept whole in ``key``."""
    key = "A " * 200
    error = refused({"url": "https://x.example"}, name=key)
    assert len(str(error)) < 300
    assert error.key == key


def test_c4_case_duplicates_later_is_invalid() -> None:
    """C4: two keys equal after lowercasing: the later one is invalid, naming both."""
    text = (
        '{"mcpServers": {"GitHub": {"url": "https://a.example"},'
        ' "other": {"url": "https://o.example"},'
        ' "GITHUB": {"url": "https://b.example"},'
        ' "github": {"url": "https://c.example"}}}'
    )
    out = load_mcp_json(text, env={}, home=HOME)
    assert list(out) == ["GitHub", "other", "GITHUB", "github"]
    first = out["GitHub"]
    assert isinstance(first, RemoteServer)
    assert first.url == "https://a.example"
    for later in ("GITHUB", "github"):
        error = out[later]
        assert isinstance(error, ConfigError)
        assert f"'{later}'" in str(error)
        assert "'GitHub'" in str(error)
        assert error.key == later


def test_c4_exact_duplicate_keys_are_not_silently_overwritten() -> None:
    """C4: a key written twice in ``mcpServers`` is invalid; neither entry is used."""
    text = (
        '{"mcpServers": {"a": {"url": "https://first.example"},'
        ' "b": {"url": "https://b.example"},'
        ' "a": {"url": "https://second.example"},'
        ' "a": {"url": "https://third.example"}}}'
    )
    out = load_mcp_json(text, env={}, home=HOME)
    assert list(out) == ["a", "b"]
    assert isinstance(out["a"], ConfigError)
    assert "more than once" in str(out["a"])
    assert out["a"].key == "a"
    assert isinstance(out["b"], RemoteServer)


# ---------------------------------------------------------------------------
# C5: remote entries
# ---------------------------------------------------------------------------

GOOD_URLS = [
    ("https://api.example.com/mcp", {}),
    ("HTTPS://API.example.com:8443/mcp?x=1", {}),
    ("http://localhost:8000/mcp", {}),
    ("http://LOCALHOST/mcp", {}),
    ("http://localhost./mcp", {}),
    ("http://foo.localhost:1/mcp", {}),
    ("http://127.0.0.1:3000/mcp", {}),
    ("http://127.8.9.10/mcp", {}),
    ("http://[::1]:3000/mcp", {}),
    ("http://[::ffff:127.0.0.1]/mcp", {}),
    ("http://example.com/mcp", {"allow_insecure_http": True}),
    ("http://10.0.0.1/mcp", {"allow_insecure_http": True}),
    ("https://${env:HOST}/mcp", {}),
    ("https://api.example.com/${unknown}/mcp", {}),
]


@pytest.mark.parametrize(("url", "kw"), GOOD_URLS)
def test_c5_valid_urls(url: str, kw: dict[str, Any]) -> None:
    """C5: absolute http(s) URLs; plain http only for loopback unless allowed."""
    server = remote({"url": url}, **kw)
    assert server.url == url.replace("${env:HOST}", ENV["HOST"])


BAD_URLS = [
    pytest.param(3, "'url' must be a string", id="not-string"),
    pytest.param("", "absolute http", id="empty"),
    pytest.param("/mcp", "absolute http", id="relative"),
    pytest.param("api.example.com/mcp", "absolute http", id="no-scheme"),
    pytest.param("ftp://example.com/mcp", "absolute http", id="ftp"),
    pytest.param("ws://localhost/mcp", "absolute http", id="ws"),
    pytest.param("https:/example.com", "absolute http", id="one-slash"),
    pytest.param("https:///mcp", "has no host", id="no-host"),
    pytest.param("https://:443/mcp", "has no host", id="port-only"),
    pytest.param("https://user:pw@example.com/mcp", "user info", id="userinfo"),
    pytest.param("https://user@example.com/mcp", "user info", id="user"),
    pytest.param("https://example.com/mcp#frag", "fragment", id="fragment"),
    pytest.param("https://example.com/mcp#", "fragment", id="empty-fragment"),
    pytest.param("https://example.com:99999/mcp", "not a valid URL", id="port-range"),
    pytest.param("https://example.com:abc/mcp", "not a valid URL", id="port-text"),
    pytest.param("https://[::1/mcp", "not a valid URL", id="bad-ipv6"),
    pytest.param("https://example.com/a b", "whitespace", id="space"),
    pytest.param("https://example.com/\u00e9", "non-ASCII", id="non-ascii"),
    pytest.param("https://example.com/\x00", "control", id="nul"),
    pytest.param("http://example.com/mcp", "plain http", id="insecure"),
    pytest.param("http://127.0.0.1.example.com/mcp", "plain http", id="fake-loopback"),
    pytest.param("http://localhost.example.com/mcp", "plain http", id="fake-localhost"),
    pytest.param("http://10.0.0.1/mcp", "plain http", id="private-ip"),
    pytest.param("http://[::2]/mcp", "plain http", id="ipv6-nonloop"),
    pytest.param("https://${env:MISSING}/mcp", "'MISSING' is not set", id="unset"),
]


@pytest.mark.parametrize(("url", "needle"), BAD_URLS)
def test_c5_invalid_urls(url: object, needle: str) -> None:
    """C5: the URL is checked after expansion; each refusal says why and names ``url``."""
    error = refused({"url": url})
    assert needle in str(error)
    assert error.key == "url"


def test_c5_url_rules_apply_after_expansion() -> None:
    """C5/C7: a URL assembled from the environment is checked as expanded."""
    env = {"U": "http://example.com/mcp", "F": "x#y", "UI": "u:p@"}
    assert "plain http" in str(refused({"url": "${env:U}"}, env=env))
    assert "fragment" in str(refused({"url": "https://h.example/${env:F}"}, env=env))
    assert "user info" in str(refused({"url": "https://${env:UI}h.example/"}, env=env))
    # ${PLUGIN_ROOT} does not expand in a URL (C7): it stays literal.
    server = remote({"url": "https://h.example/${PLUGIN_ROOT}"}, plugin_root=ROOT)
    assert server.url == "https://h.example/${PLUGIN_ROOT}"


def test_c5_headers_are_expanded_and_read_only() -> None:
    """C5: headers are an object of strings, expanded; the result is read-only."""
    server = remote(
        {
            "url": "https://x.example/mcp",
            "headers": {
                "Authorization": "Bearer ${env:TOKEN}",
                "X-Home": "${userHome}",
                "X-Root": "${PLUGIN_ROOT}",
                "X-Tab": "a\tb",
                "X-Empty": "${env:EMPTY}",
            },
        },
        plugin_root=ROOT,
    )
    assert dict(server.headers) == {
        "Authorization": "Bearer tok-value",
        "X-Home": HOME,
        "X-Root": "${PLUGIN_ROOT}",
        "X-Tab": "a\tb",
        "X-Empty": "",
    }
    with pytest.raises(TypeError):
        server.headers["X"] = "y"  # type: ignore[index]


BAD_HEADERS = [
    pytest.param([], "'headers' must be an object, not an array", "headers", id="not-object"),
    pytest.param({"X-A": 1}, "value must be a string, not a number", "headers.X-A", id="int"),
    pytest.param({"X-A": None}, "not null", "headers.X-A", id="null"),
    pytest.param({"X-A": True}, "not a boolean", "headers.X-A", id="bool"),
    pytest.param({"X-A": ["v"]}, "not an array", "headers.X-A", id="array"),
    pytest.param({"X A": "v"}, "RFC 9110 token", "headers.X A", id="space-name"),
    pytest.param({"": "v"}, "RFC 9110 token", "headers.", id="empty-name"),
    pytest.param({"X:A": "v"}, "RFC 9110 token", "headers.X:A", id="colon-name"),
    pytest.param({"Ä": "v"}, "RFC 9110 token", "headers.Ä", id="non-ascii-name"),
    pytest.param({"X-A": "a\r\nb"}, "contains a line break", "headers.X-A", id="crlf"),
    pytest.param({"X-A": "a\nb"}, "contains a line break", "headers.X-A", id="lf"),
    pytest.param({"X-A": "a\rb"}, "contains a line break", "headers.X-A", id="cr"),
    pytest.param({"X-A": "a\x00b"}, "NUL", "headers.X-A", id="nul"),
    pytest.param({"X-A": "a\x07b"}, "control character", "headers.X-A", id="bell"),
    pytest.param({"X-A": "a\x7fb"}, "control character", "headers.X-A", id="del"),
    pytest.param({"X-A": "caf\u00e9"}, "non-ASCII", "headers.X-A", id="non-ascii"),
    pytest.param({"X-A": "${env:NOPE}"}, "'NOPE' is not set", "headers.X-A", id="unset"),
    pytest.param({"X-A": "1", "x-a": "2"}, "case-insensitive", "headers.x-a", id="case-dup"),
]


@pytest.mark.parametrize(("headers", "needle", "key"), BAD_HEADERS)
def test_c5_invalid_headers(headers: object, needle: str, key: str) -> None:
    """C5: header names are tokens; values strings without CR, LF, NUL (named, not shown)."""
    error = refused({"url": "https://x.example", "headers": headers})
    assert needle in str(error)
    assert error.key == key


def test_c5_header_line_break_message_format() -> None:
    """C5/C8: the message names the server and the header key, never the value."""
    error = refused(
        {"url": "https://x.example", "headers": {"Authorization": "Bearer x\r\nEvil: 1"}},
        name="GitHub",
    )
    assert str(error) == "server 'github': header 'Authorization' value contains a line break"


@pytest.mark.parametrize(
    "value",
    [" tok-value", "tok-value ", "\ttok-value", "tok-value\t", " ", "Bearer tok-value\t "],
    ids=["lead-space", "trail-space", "lead-tab", "trail-tab", "only-space", "trail-mixed"],
)
def test_C5_X5_header_value_with_edge_whitespace_refused(value: str) -> None:
    """C5, X5: a pasted token's leading/trailing space or tab is refused here, naming the
    header and never the value (HTTP would refuse it later, with the value in its message)."""
    error = refused({"url": "https://x.example", "headers": {"Authorization": value}}, name="GitHub")
    assert str(error) == "server 'github': header 'Authorization' value begins or ends with whitespace"
    assert error.key == "headers.Authorization"
    assert "tok-value" not in repr(error)
    through_env = refused(
        {"url": "https://x.example", "headers": {"Authorization": "${env:V}"}}, env={"V": value}
    )
    assert "begins or ends with whitespace" in str(through_env) and "tok-value" not in repr(through_env)
    # Whitespace inside a value is fine.
    assert remote({"url": "https://x.example", "headers": {"Authorization": "Bearer a\tb c"}})


def test_c5_header_value_with_line_break_from_environment() -> None:
    """C5/C7: the CR/LF check applies to the expanded value."""
    error = refused({"url": "https://x.example", "headers": {"X-A": "${env:V}"}}, env={"V": "a\nb"})
    assert "line break" in str(error)


@pytest.mark.parametrize("owned", sorted(CLIENT_OWNED_HEADERS))
@pytest.mark.parametrize("style", [str.lower, str.upper, str.title])
def test_c5_client_owned_headers_refused_any_case(owned: str, style: Any) -> None:
    """C5: headers the client owns are refused in any case, naming the header."""
    header = style(owned)
    error = refused({"url": "https://x.example", "headers": {header: "v"}})
    assert f"header '{header}' is set by the client" in str(error)
    assert error.key == f"headers.{header}"


def test_c5_spec_client_owned_set_is_covered() -> None:
    """C5: every header the design lists is client-owned."""
    listed = {
        "accept",
        "mcp-session-id",
        "last-event-id",
        "mcp-protocol-version",
        "content-type",
        "content-length",
        "host",
        "transfer-encoding",
        "connection",
    }
    assert listed <= CLIENT_OWNED_HEADERS


def test_c5_duplicate_header_keys_in_raw_document() -> None:
    """C5: a header written twice in the raw JSON is refused, not overwritten."""
    text = (
        '{"mcpServers": {"a": {"url": "https://a.example", "headers": {"X-A": "1", "X-A": "2"}}}}'
    )
    out = load_mcp_json(text, env={}, home=HOME)
    assert isinstance(out["a"], ConfigError)
    assert "key 'X-A' appears more than once" in str(out["a"])
    assert out["a"].key == "headers"


def test_c5_display_url_is_configured_form_without_query() -> None:
    """C5/C8: ``display_url`` is the URL as configured, minus user info, query and fragment."""
    server = remote({"url": "https://${env:HOST}/mcp?key=${env:TOKEN}"})
    assert server.url == "https://api.example.com/mcp?key=tok-value"
    assert server.display_url == "https://${env:HOST}/mcp"
    direct = RemoteServer(name="d", url="https://h.example/p?secret=1#f")
    assert direct.display_url == "https://h.example/p"
    assert dict(direct.headers) == {}
    assert RemoteServer(name="d", url="https://u:p@h.example").display_url == "https://h.example"
    assert RemoteServer(name="d", url="no-scheme?q").display_url == "no-scheme"
    assert RemoteServer(name="d", url="https://h.example", display_url="X").display_url == "X"


def test_c5_remote_server_value_semantics() -> None:
    """C5: RemoteServer is a frozen value: equal, hashable, immutable."""
    a = RemoteServer(name="a", url="https://h.example", headers={"X": "1"})
    b = RemoteServer(name="a", url="https://h.example", headers={"X": "1"})
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.name = "b"  # type: ignore[misc]


# ---------------------------------------------------------------------------
# C6: local entries
# ---------------------------------------------------------------------------


def test_c6_local_refused_by_default_with_exact_reason() -> None:
    """C6: by default a command entry is refused with exactly the seed's reason."""
    for entry in ({"command": "node"}, {"command": "./bin/x", "args": ["${env:NOPE}"]}):
        error = refused(entry, plugin_root=ROOT)
        assert str(error) == "local MCP servers (command) are not supported yet: allow_local=True starts them"
        assert error.key == "command"
    out = load({"mcpServers": {"l": {"command": 3}}})
    assert str(out["l"]) == LOCAL_NOT_SUPPORTED


def test_c6_local_allowed_full_entry() -> None:
    """C6: with opt-in, seed 004's example entry loads with everything resolved."""
    server = local(
        {
            "type": "stdio",
            "command": "./bin/validator",
            "args": ["--data", "${PLUGIN_DATA}/validator", "${env:TOKEN}", "${userHome}"],
            "env": {"CONFIG": "${PLUGIN_ROOT}/config.json", "LIT": "${env:TOKEN}x", "K": ""},
            "cwd": "${PLUGIN_ROOT}",
        }
    )
    assert server.command == "/plugins/demo/bin/validator"
    assert server.args == ("--data", f"{DATA}/validator", "tok-value", HOME)
    assert dict(server.env) == {"CONFIG": f"{ROOT}/config.json", "LIT": "tok-valuex", "K": ""}
    assert server.cwd == ROOT
    assert server.plugin_root == ROOT
    assert server.plugin_data == DATA


def test_c6_command_never_expanded() -> None:
    """C6/C7: ``command`` is never expanded."""
    assert local({"command": "${env:TOKEN}"}).command == "${env:TOKEN}"
    assert local({"command": "./${PLUGIN_ROOT}"}).command == f"{ROOT}/${{PLUGIN_ROOT}}"


COMMANDS_OK = [
    ("node", "node"),
    ("uvx", "uvx"),
    ("python3.12", "python3.12"),
    ("./server", f"{ROOT}/server"),
    ("./bin/../server", f"{ROOT}/server"),
    ("./bin//x", f"{ROOT}/bin/x"),
]


@pytest.mark.parametrize(("command", "resolved"), COMMANDS_OK)
def test_c6_command_forms(command: str, resolved: str) -> None:
    """C6: a bare name, or a ./ path resolved against the plugin root."""
    assert local({"command": command}).command == resolved


COMMANDS_BAD = [
    pytest.param(3, "must be a string", id="int"),
    pytest.param(["node"], "not an array", id="array"),
    pytest.param("", "one executable token", id="empty"),
    pytest.param("node server.js", "one executable token", id="space"),
    pytest.param("node\tx", "one executable token", id="tab"),
    pytest.param("node\n", "one executable token", id="newline"),
    pytest.param("/usr/bin/node", "bare executable name", id="absolute"),
    pytest.param("bin/node", "bare executable name", id="relative-no-dot"),
    pytest.param("../node", "bare executable name", id="dotdot"),
    pytest.param("..", "bare executable name", id="dotdot-alone"),
    pytest.param(".", "bare executable name", id="dot"),
    pytest.param("bin\\node", "bare executable name", id="backslash"),
    pytest.param("./../outside", "inside the plugin root", id="escape"),
    pytest.param("./bin/../../x", "inside the plugin root", id="escape2"),
    pytest.param("./", "inside the plugin root", id="root-itself"),
    pytest.param("./.", "inside the plugin root", id="root-dot"),
]


@pytest.mark.parametrize(("command", "needle"), COMMANDS_BAD)
def test_c6_invalid_commands(command: object, needle: str) -> None:
    """C6: anything but one bare token or a ./ path inside the plugin root is refused."""
    error = refused({"command": command}, plugin_root=ROOT, plugin_data=DATA, allow_local=True)
    assert needle in str(error)
    assert error.key == "command"


def test_c6_local_needs_plugin_root() -> None:
    """C6: with opt-in but no plugin root, a local entry is refused."""
    error = refused({"command": "node"}, allow_local=True)
    assert "plugin root" in str(error)


@pytest.mark.parametrize(
    ("root", "data", "needle"),
    [("plugins/demo", None, "plugin root"), (".", None, "plugin root"), (ROOT, "data", "data")],
)
def test_c6_plugin_dirs_must_be_absolute(root: str, data: str | None, needle: str) -> None:
    """C6: the host's plugin directories must be absolute (containment is path arithmetic)."""
    error = refused({"command": "node"}, allow_local=True, plugin_root=root, plugin_data=data)
    assert needle in str(error)
    assert "absolute" in str(error)


ARGS_ENV_BAD = [
    pytest.param({"args": "x"}, "'args' must be an array", "args", id="args-string"),
    pytest.param({"args": {"a": 1}}, "'args' must be an array", "args", id="args-object"),
    pytest.param({"args": ["a", 2]}, "args[1] must be a string", "args[1]", id="args-int"),
    pytest.param({"args": ["${env:NOPE}"]}, "'NOPE' is not set", "args[0]", id="args-unset"),
    pytest.param({"args": ["a\x00"]}, "args[0] contains a NUL", "args[0]", id="args-nul"),
    pytest.param({"env": []}, "'env' must be an object", "env", id="env-array"),
    pytest.param({"env": {"A": 1}}, "value must be a string", "env.A", id="env-int"),
    pytest.param({"env": {"PLUGIN_ROOT": "/x"}}, "PLUGIN_ROOT", "env.PLUGIN_ROOT"),
    pytest.param({"env": {"PLUGIN_DATA": "/x"}}, "PLUGIN_DATA", "env.PLUGIN_DATA"),
    pytest.param({"env": {"plugin_root": "/x"}}, "set by the client", "env.plugin_root"),
    pytest.param({"env": {"": "v"}}, "not a valid environment", "env.", id="env-empty-key"),
    pytest.param({"env": {"A=B": "v"}}, "not a valid environment", "env.A=B", id="env-eq"),
    pytest.param({"env": {"A\x00": "v"}}, "not a valid environment", "env.A\x00"),
    pytest.param({"env": {"A": "${env:NOPE}"}}, "'NOPE' is not set", "env.A", id="env-unset"),
    pytest.param({"env": {"A": "\x00"}}, "NUL", "env.A", id="env-nul"),
    pytest.param({"env": {"A": "${env:Z}"}}, "NUL", "env.A", id="env-nul-expanded"),
]


@pytest.mark.parametrize(("extra", "needle", "key"), ARGS_ENV_BAD)
def test_c6_invalid_args_and_env(extra: dict[str, object], needle: str, key: str) -> None:
    """C6: args a list of strings; env an object of strings not setting PLUGIN_*."""
    error = refused(
        {"command": "node", **extra},
        env={**ENV, "Z": "\x00"},
        plugin_root=ROOT,
        plugin_data=DATA,
        allow_local=True,
    )
    assert needle in str(error)
    assert error.key == key


def test_c6_env_keys_not_expanded() -> None:
    """C6/C7: environment keys are never expanded."""
    server = local({"command": "node", "env": {"${env:TOKEN}": "v"}})
    assert dict(server.env) == {"${env:TOKEN}": "v"}


def test_c6_plugin_data_left_literal_when_not_supplied() -> None:
    """C6/C7: ${PLUGIN_DATA} in args stays literal when the host gives no data dir."""
    server = local({"command": "node", "args": ["${PLUGIN_DATA}/x"]}, plugin_data=None)
    assert server.args == ("${PLUGIN_DATA}/x",)
    assert server.plugin_data is None


CWD_OK = [
    pytest.param(None, ROOT, id="omitted"),
    pytest.param("", ROOT, id="empty"),
    pytest.param(".", ROOT, id="dot"),
    pytest.param("sub/dir", f"{ROOT}/sub/dir", id="relative"),
    pytest.param("./sub", f"{ROOT}/sub", id="dot-relative"),
    pytest.param("sub/../other", f"{ROOT}/other", id="inner-dotdot"),
    pytest.param("${PLUGIN_ROOT}", ROOT, id="root"),
    pytest.param("${PLUGIN_ROOT}/", ROOT, id="root-slash"),
    pytest.param("${PLUGIN_ROOT}/a/b", f"{ROOT}/a/b", id="root-sub"),
    pytest.param("${PLUGIN_DATA}", DATA, id="data"),
    pytest.param("${PLUGIN_DATA}/cache", f"{DATA}/cache", id="data-sub"),
    pytest.param("${PLUGIN_DATA}//x/./y/", f"{DATA}/x/y", id="data-messy"),
    pytest.param("${env:SUB}", f"{ROOT}/from-env", id="env-relative"),
    pytest.param("${PLUGIN_ROOT}/${env:SUB}", f"{ROOT}/from-env", id="root-env"),
    pytest.param("${PLUGIN_ROOT}/${env:ABS}", f"{ROOT}/etc", id="root-abs-env"),
]


@pytest.mark.parametrize(("cwd", "expected"), CWD_OK)
def test_c6_cwd_resolution(cwd: str | None, expected: str) -> None:
    """C6: cwd is plugin-relative or rooted at a plugin dir; omitted cwd is the root."""
    entry: dict[str, object] = {"command": "node"}
    if cwd is not None:
        entry["cwd"] = cwd
    env = {"SUB": "from-env", "ABS": "/etc"}
    assert local(entry, env=env).cwd == os.path.normpath(expected)


CWD_BAD = [
    pytest.param(3, "'cwd' must be a string", id="int"),
    pytest.param("..", "stay inside the plugin root", id="dotdot"),
    pytest.param("sub/../../x", "stay inside the plugin root", id="escape"),
    pytest.param("/etc", "relative to the plugin root", id="absolute"),
    pytest.param("${userHome}", "relative to the plugin root", id="home"),
    pytest.param("${env:ABS}", "relative to the plugin root", id="env-abs"),
    pytest.param("${env:UP}", "stay inside the plugin root", id="env-up"),
    pytest.param("${PLUGIN_ROOT}/..", "stay inside the plugin root", id="root-up"),
    pytest.param("${PLUGIN_ROOT}/a/../../b", "stay inside the plugin root", id="root-up2"),
    pytest.param("${PLUGIN_ROOT}x", "continue with '/'", id="root-sibling"),
    pytest.param("${PLUGIN_DATA}/../demo2", "stay inside the plugin data", id="data-up"),
    pytest.param("${PLUGIN_DATA}..", "continue with '/'", id="data-sibling"),
    pytest.param("${PLUGIN_ROOT}/${env:NOPE}", "'NOPE' is not set", id="unset"),
    pytest.param("${env:NOPE}", "'NOPE' is not set", id="unset-relative"),
    pytest.param("a\x00b", "NUL", id="nul"),
]


@pytest.mark.parametrize(("cwd", "needle"), CWD_BAD)
def test_c6_invalid_cwd(cwd: object, needle: str) -> None:
    """C6: a cwd outside its directory (after normalization) is refused."""
    error = refused(
        {"command": "node", "cwd": cwd},
        env={"ABS": "/etc", "UP": "../x"},
        plugin_root=ROOT,
        plugin_data=DATA,
        allow_local=True,
    )
    assert needle in str(error)
    assert error.key == "cwd"


def test_c6_cwd_plugin_data_needs_the_directory() -> None:
    """C6: ${PLUGIN_DATA} as cwd needs the plugin data directory (the plugin_data option)."""
    error = refused(
        {"command": "node", "cwd": "${PLUGIN_DATA}/x"}, plugin_root=ROOT, allow_local=True
    )
    assert "the plugin data directory was not given (plugin_data)" in str(error)
    assert error.key == "cwd"


def test_c6_local_server_value_semantics_and_defaults() -> None:
    """C6: LocalServer can be built directly; cwd defaults to plugin_root; it is hashable."""
    a = LocalServer(name="l", command="node", args=["a"], env={"K": "v"}, plugin_root=ROOT)  # type: ignore[arg-type]
    b = LocalServer(name="l", command="node", args=("a",), env={"K": "v"}, plugin_root=ROOT)
    assert a.args == ("a",)
    assert a.cwd == ROOT
    assert a == b
    assert hash(a) == hash(b)
    with pytest.raises(TypeError):
        a.env["K"] = "w"  # type: ignore[index]


# ---------------------------------------------------------------------------
# C7: expansion
# ---------------------------------------------------------------------------

EXPANSIONS = [
    ("plain", "plain"),
    ("${env:TOKEN}", "tok-value"),
    ("a${env:TOKEN}b${env:HOST}c", "atok-valuebapi.example.comc"),
    ("${env:EMPTY}", ""),
    ("${userHome}/x", f"{HOME}/x"),
    ("${PLUGIN_ROOT}/x", f"{ROOT}/x"),
    ("${PLUGIN_DATA}/x", f"{DATA}/x"),
    ("${USERHOME}", "${USERHOME}"),
    ("${HOME}", "${HOME}"),
    ("${env.TOKEN}", "${env.TOKEN}"),
    ("${ENV:TOKEN}", "${ENV:TOKEN}"),
    ("${}", "${}"),
    ("${", "${"),
    ("$env:TOKEN", "$env:TOKEN"),
    ("$${env:TOKEN}", "$tok-value"),
    ("${a${env:TOKEN}}", "${atok-value}"),
    ("${workspaceFolder}", "${workspaceFolder}"),
]


@pytest.mark.parametrize(("text", "expected"), EXPANSIONS)
def test_c7_expand_table(text: str, expected: str) -> None:
    """C7: env, userHome and plugin placeholders; anything else passes through."""
    assert expand(text, env=ENV, home=HOME, plugin_root=ROOT, plugin_data=DATA) == expected


def test_c7_plugin_placeholders_only_when_given() -> None:
    """C7: ${PLUGIN_ROOT} / ${PLUGIN_DATA} stay literal when not supplied."""
    text = "${PLUGIN_ROOT}:${PLUGIN_DATA}"
    assert expand(text, env={}, home=HOME) == text
    assert expand(text, env={}, home=HOME, plugin_root="/r") == "/r:${PLUGIN_DATA}"


def test_c7_unset_variable_names_it() -> None:
    """C7: an unset variable is a ConfigError naming it, with ``key`` set to it."""
    with pytest.raises(ConfigError) as info:
        expand("x${env:NOT_SET_VAR}", env=ENV, home=HOME)
    assert str(info.value) == "environment variable 'NOT_SET_VAR' is not set"
    assert info.value.key == "NOT_SET_VAR"


def test_c7_expansion_is_single_pass() -> None:
    """C7: a substituted value is never expanded again."""
    env = {"A": "${env:B}", "B": "no", "R": "${PLUGIN_ROOT}", "H": "${userHome}"}
    assert expand("${env:A}", env=env, home=HOME) == "${env:B}"
    assert expand("${env:R}", env=env, home=HOME, plugin_root=ROOT) == "${PLUGIN_ROOT}"
    assert expand("${env:H}", env=env, home=HOME) == "${userHome}"
    assert expand("${userHome}", env=env, home="${env:B}") == "${env:B}"
    assert expand("${PLUGIN_ROOT}", env=env, home=HOME, plugin_root="${env:NOPE}") == (
        "${env:NOPE}"
    )


_NAME = st.text(
    alphabet=st.characters(codec="ascii", exclude_characters="{}"), min_size=0, max_size=12
)


@given(st.text().filter(lambda t: "${" not in t), st.dictionaries(_NAME, st.text()))
def test_c7_property_identity_without_placeholders(text: str, env: dict[str, str]) -> None:
    """C7: a string without "${" is returned unchanged."""
    assert expand(text, env=env, home=HOME, plugin_root=ROOT, plugin_data=DATA) == text


@given(_NAME, st.text(), st.text().filter(lambda t: "${" not in t))
def test_c7_property_single_pass(name: str, inner: str, prefix: str) -> None:
    """C7: a value that itself contains "${env:X}" stays literal after substitution."""
    value = "${env:" + name + "}" + inner + "${userHome}${PLUGIN_ROOT}"
    env = {name: value}
    out = expand(prefix + "${env:" + name + "}", env=env, home=HOME, plugin_root=ROOT)
    assert out == prefix + value


_UNKNOWN = _NAME.filter(
    lambda b: not b.startswith("env:") and b not in ("userHome", "PLUGIN_ROOT", "PLUGIN_DATA")
)


@given(_UNKNOWN, st.text().filter(lambda t: "${" not in t))
def test_c7_property_unknown_placeholders_untouched(body: str, around: str) -> None:
    """C7: any other ${...} passes through unchanged."""
    text = around + "${" + body + "}" + around
    assert expand(text, env=ENV, home=HOME, plugin_root=ROOT, plugin_data=DATA) == text


_SECRET = st.text(alphabet="QXZJKVWqxzjkvw@%", min_size=8, max_size=24)


@given(_NAME, st.dictionaries(_NAME, _SECRET, max_size=5))
def test_c7_property_unset_error_names_variable_not_values(name: str, env: dict[str, str]) -> None:
    """C7/C8: an unset variable's error names it and contains no environment value."""
    env.pop(name, None)
    with pytest.raises(ConfigError) as info:
        expand("${env:" + name + "}", env=env, home=HOME)
    message = str(info.value)
    assert repr(name) in message
    for value in env.values():
        assert value not in message
        assert value not in repr(info.value)


def test_c7_expansion_applies_to_every_string_value_except_command() -> None:
    """C7: url, header values, args, env values and cwd expand; command and keys do not."""
    env = {"V": "val", "D": "dir"}
    srv = remote({"url": "https://h.example/${env:V}", "headers": {"X-V": "${env:V}"}}, env=env)
    assert srv.url == "https://h.example/val"
    assert dict(srv.headers) == {"X-V": "val"}
    loc = local(
        {
            "command": "${env:V}",
            "args": ["${env:V}"],
            "env": {"${env:V}": "${env:V}"},
            "cwd": "${env:D}",
        },
        env=env,
    )
    assert loc.command == "${env:V}"
    assert loc.args == ("val",)
    assert dict(loc.env) == {"${env:V}": "val"}
    assert loc.cwd == f"{ROOT}/dir"


# ---------------------------------------------------------------------------
# C8: redaction
# ---------------------------------------------------------------------------


def test_c8_reprs_show_names_only() -> None:
    """C8: reprs show header names, env keys and the configured URL, never values."""
    srv = remote(
        {
            "url": "https://h.example/${env:TOKEN}?k=${env:TOKEN}",
            "headers": {"Authorization": "Bearer ${env:TOKEN}", "X-Lit": "literal-v"},
        }
    )
    text = repr(srv) + str(srv)
    assert "tok-value" not in text
    assert "literal-v" not in text
    assert "Authorization" in text
    assert "https://h.example/${env:TOKEN}" in text
    assert "k=" not in text
    loc = local({"command": "node", "args": ["${env:TOKEN}"], "env": {"SECRET_KEY": "lit-secret"}})
    text = repr(loc) + str(loc)
    assert "tok-value" not in text
    assert "lit-secret" not in text
    assert "SECRET_KEY" in text
    assert "node" in text


def _texts(obj: object) -> list[str]:
    out = [repr(obj), str(obj)]
    if isinstance(obj, BaseException):
        out.extend(str(arg) for arg in obj.args)
        out.append(repr(getattr(obj, "key", None)))
    return out


def _bad_entries(secret: str, secret2: str) -> list[tuple[Mapping[str, object], dict[str, Any]]]:
    """Entries whose header or env values carry the secrets, driven through every error path."""
    env = {"S": secret, "S2": secret2, "CRLF": secret + "\r\n" + secret2, "NUL": secret + "\x00"}
    url = "https://h.example/mcp"
    cases: list[dict[str, object]] = [
        {"url": url, "headers": {"Authorization": secret}},
        {"url": url, "headers": {"Authorization": "Bearer ${env:S}", "X-B": secret2}},
        {"url": url, "headers": {"X-A": secret + "\r\n" + secret2}},
        {"url": url, "headers": {"X-A": "${env:CRLF}"}},
        {"url": url, "headers": {"X-A": "${env:NUL}"}},
        {"url": url, "headers": {"X-A": secret + "\x07"}},
        {"url": url, "headers": {"X-A": secret + "é"}},
        {"url": url, "headers": {"X-A": 5, "X-B": secret}},
        {"url": url, "headers": {"X-A": secret, "Accept": secret2}},
        {"url": url, "headers": {"Content-Type": secret}},
        {"url": url, "headers": {"Bad Name": secret}},
        {"url": url, "headers": {"X-A": secret, "x-a": secret2}},
        {"url": url, "headers": {"X-A": "${env:MISSING}", "X-B": secret}},
        {"url": "${env:S}"},
        {"url": "https://${env:S}/mcp"},
        {"url": "http://${env:S}.example/mcp"},
        {"url": "https://h.example/${env:S}#x"},
        {"url": "https://${env:S}:${env:S2}@h.example/"},
        {"url": "https://h.example:${env:S}/"},
        {"url": "https://h.example/ ${env:S}"},
        {"url": "https://h.example/?q=${env:S}", "headers": {"X": "${env:MISSING}"}},
        {"url": "https://h.example/${env:MISSING}", "headers": {"X": secret}},
        {"url": "https://u:" + secret + "@h.example/"},
        {"url": "https://h.example/?token=" + secret, "headers": {"Host": "x"}},
        {"url": "http://h.example/?token=" + secret},
        {"url": url, "command": "node", "headers": {"X": secret}},
        {"url": url, "type": "sse", "headers": {"X": secret}},
        {"command": "node", "env": {"K": secret}, "args": [secret2]},
        {"command": "node", "env": {"K": "${env:S}", "PLUGIN_ROOT": secret2}},
        {"command": "node", "env": {"K": "${env:NUL}"}},
        {"command": "node", "env": {"K": secret, "L": 3}},
        {"command": "node", "env": {"K": secret, "M": "${env:MISSING}"}},
        {"command": "node", "args": ["${env:S}", "${env:NUL}"]},
        {"command": "node", "args": ["${env:S}", 1]},
        {"command": "node", "args": [secret], "cwd": "${env:S}/../.."},
        {"command": "node", "args": [secret], "cwd": "/" + secret},
        {"command": "node", "cwd": "${PLUGIN_ROOT}/${env:S}/../../.."},
        {"command": "./../${env:S}"},
        {"command": "node", "env": {"K": secret}},
        {"command": "node", "args": ["${env:S}", secret2], "cwd": "${env:S}"},
    ]
    options: list[dict[str, Any]] = [
        {"env": env},
        {"env": env, "allow_local": True, "plugin_root": ROOT, "plugin_data": DATA},
    ]
    return [(entry, opts) for entry in cases for opts in options]


@settings(max_examples=40, deadline=None)
@given(_SECRET, _SECRET)
def test_c8_property_secrets_never_appear(secret: str, secret2: str) -> None:
    """C8: header and env values (expanded or not) never appear in reprs, errors or logs."""
    handler_records: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            handler_records.append(record)

    logger = logging.getLogger("mcpcore")
    handler = Capture(level=logging.DEBUG)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    texts: list[str] = []
    try:
        for entry, opts in _bad_entries(secret, secret2):
            try:
                result: object = parse_server("srv", entry, home=HOME, **opts)
            except ConfigError as exc:
                result = exc
            texts.extend(_texts(result))
            document = json.dumps({"mcpServers": {"a": entry, "A": entry, "b": {"url": 1}}})
            for outcome in load_mcp_json(document, home=HOME, **opts).values():
                texts.extend(_texts(outcome))
        for bad_doc in (
            '{"mcpServers": {"a": {"headers": {"X": "' + secret + '"}}}, "x": 1}',
            '{"mcpServers": {"a": {"url": "https://h", "headers": {"X": "' + secret,
            '{"mcpServers": {"a": {"url": "https://h", "headers": {"X": "' + secret + '"}}}}',
            '{"mcpServers": {"a": {"command": "n", "env": {"K": "' + secret + '\\u0000"}}}}',
            (secret + "\xff").encode("latin-1"),
            ('{"mcpServers": {"a": {"env": {"K": "' + secret + '\xff"}}}}').encode("latin-1"),
        ):
            try:
                outcomes = load_mcp_json(
                    bad_doc, env={"S": secret}, home=HOME, allow_local=True, plugin_root=ROOT
                )
            except ConfigError as exc:
                texts.extend(_texts(exc))
            else:
                for outcome in outcomes.values():
                    texts.extend(_texts(outcome))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    texts.extend(record.getMessage() for record in handler_records)
    for text in texts:
        assert secret not in text
        assert secret2 not in text


def test_c8_log_records_carry_no_values(caplog: pytest.LogCaptureFixture) -> None:
    """C8/X4: the config layer's debug logs name ignored fields, not values."""
    caplog.set_level(logging.DEBUG, logger="mcpcore")
    remote({"url": "https://h.example", "oauth": "secret-oauth-value", "headers": {"X": "hv"}})
    local({"command": "node", "extra": "secret-extra", "env": {"K": "ev"}})
    assert caplog.records
    assert all(r.name.startswith("mcpcore") for r in caplog.records)
    assert "oauth" in caplog.text
    for value in ("secret-oauth-value", "secret-extra", "hv", "ev"):
        assert value not in caplog.text


def test_c8_error_messages_use_configured_url_without_query() -> None:
    """C8: a message showing the URL uses the configured form, without query string."""
    error = refused({"url": "http://${env:HOST}/mcp?key=${env:TOKEN}"})
    assert "'http://${env:HOST}/mcp'" in str(error)
    assert "api.example.com" not in str(error)
    assert "key=" not in str(error)


# ---------------------------------------------------------------------------
# Public surface
# ---------------------------------------------------------------------------


def test_c1_c8_public_names_exported() -> None:
    """C1–C8: the config names are part of ``mcpcore``'s public surface."""
    for name in ("load_mcp_json", "parse_server", "expand", "RemoteServer", "LocalServer"):
        assert name in mcpcore.__all__
        assert getattr(mcpcore, name) is not None


# ---------------------------------------------------------------------------
# C9: the user's own file is not a plugin
# ---------------------------------------------------------------------------

USER_DIR = "/home/user/.config/mcp"


def user_local(entry: object, **kw: Any) -> LocalServer:
    kw.setdefault("origin", "user")
    kw.setdefault("plugin_data", None)
    return local(entry, **kw)


USER_COMMANDS_OK = [
    pytest.param("uvx", USER_DIR, "uvx", id="bare"),
    pytest.param("/usr/local/bin/uvx", USER_DIR, "/usr/local/bin/uvx", id="absolute"),
    pytest.param("/opt/venv/bin/python", None, "/opt/venv/bin/python", id="absolute-no-dir"),
    pytest.param("/Applications/My App/bin/server", None, "/Applications/My App/bin/server", id="space-in-path"),
    pytest.param("/usr/local/bin/../bin/uvx", None, "/usr/local/bin/uvx", id="normalised"),
    pytest.param("./run", USER_DIR, f"{USER_DIR}/run", id="dot-relative"),
    pytest.param("../bin/run", USER_DIR, "/home/user/.config/bin/run", id="dotdot-relative"),
    pytest.param("bin/run", USER_DIR, f"{USER_DIR}/bin/run", id="relative"),
]


@pytest.mark.parametrize(("command", "directory", "resolved"), USER_COMMANDS_OK)
def test_C9_user_file_accepts_absolute_and_relative_commands(
    command: str, directory: str | None, resolved: str
) -> None:
    """C9: in the user's own file a command may be an absolute path (a venv's python,
    /usr/local/bin/uvx) or a path relative to the file's directory."""
    server = user_local({"command": command}, plugin_root=directory)
    assert server.command == resolved
    assert server.cwd == (directory or "")
    assert server.plugin_root == (directory or "")


def test_C9_the_same_entries_keep_the_plugin_rules_in_a_plugin() -> None:
    """C9 and C6: a plugin's file (the default origin) still refuses an absolute
    command, and a plugin without its root is refused."""
    for command in ("/usr/local/bin/uvx", "../bin/run", "bin/run"):
        error = refused({"command": command}, plugin_root=ROOT, allow_local=True)
        assert "a plugin may not name an absolute path" in error.reason
        assert user_local({"command": command}, plugin_root=ROOT).command.startswith("/")
    assert "plugin root" in refused({"command": "uvx"}, allow_local=True).reason
    assert user_local({"command": "uvx"}, plugin_root=None).command == "uvx"


USER_COMMANDS_BAD = [
    pytest.param("npx -y server", USER_DIR, "put its arguments in 'args'", id="shell-command"),
    pytest.param("uvx\tserver", USER_DIR, "not a shell command", id="tab"),
    pytest.param("", USER_DIR, "not a shell command", id="empty"),
    pytest.param("./run", None, "give an absolute path", id="relative-without-directory"),
    pytest.param(".", USER_DIR, "names a directory", id="the-directory"),
]


@pytest.mark.parametrize(("command", "directory", "needle"), USER_COMMANDS_BAD)
def test_C9_user_file_still_refuses_shell_commands(command: str, directory: str | None, needle: str) -> None:
    """C9: still one executable, never a shell command; a relative path needs a directory."""
    error = refused({"command": command}, plugin_root=directory, allow_local=True, origin="user")
    assert needle in error.reason
    assert error.key == "command"


@pytest.mark.parametrize(
    ("cwd", "directory", "expected"),
    [
        ("/srv/work", None, "/srv/work"),
        ("/srv/work/../data", USER_DIR, "/srv/data"),
        ("sub", USER_DIR, f"{USER_DIR}/sub"),
        ("..", USER_DIR, "/home/user/.config"),
        ("${userHome}/work", None, "/home/user/work"),
        ("${PLUGIN_ROOT}/x", USER_DIR, f"{USER_DIR}/x"),
    ],
)
def test_C9_user_file_cwd_is_any_directory(cwd: str, directory: str | None, expected: str) -> None:
    """C9: the user's own cwd may be absolute or outside the file's directory."""
    assert user_local({"command": "uvx", "cwd": cwd}, plugin_root=directory).cwd == expected


def test_C9_relative_cwd_without_directory_refused() -> None:
    error = refused({"command": "uvx", "cwd": "sub"}, allow_local=True, origin="user")
    assert "give an absolute path" in error.reason and error.key == "cwd"


def test_C9_load_mcp_json_passes_the_origin_to_every_entry() -> None:
    doc = {"mcpServers": {"a": {"command": "/usr/bin/a"}, "b": {"command": "b"}}}
    user = load(doc, allow_local=True, origin="user")
    assert isinstance(user["a"], LocalServer) and user["a"].command == "/usr/bin/a"
    plugin = load(doc, allow_local=True, plugin_root=ROOT)
    assert isinstance(plugin["a"], ConfigError) and isinstance(plugin["b"], LocalServer)
    with pytest.raises(ValueError, match="origin"):
        parse_server("a", {"command": "a"}, env={}, home=HOME, origin="nobody")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abc.- _", min_size=1, max_size=6), min_size=1, max_size=4))
def test_C9_property_absolute_commands_user_yes_plugin_no(parts: list[str]) -> None:
    """C9/C6 for every absolute path: the user's file takes it (normalised); a plugin never does."""
    command = "/" + "/".join(parts)
    server = user_local({"command": command}, plugin_root=None)
    assert server.command == os.path.normpath(command)
    with pytest.raises(ConfigError):
        parse_server("s", {"command": command}, env={}, home=HOME, plugin_root=ROOT, allow_local=True)


def test_messages_name_each_server_once_and_never_a_host() -> None:
    """An entry's error starts with its server once; ``reason`` is the rest. No
    message speaks of a "host" the library user never met."""
    outcomes = load(
        {
            "mcpServers": {
                "a": {"command": "uvx"},
                "b": {"command": "uvx", "cwd": "${PLUGIN_DATA}"},
                "c": {"url": "http://example.com/mcp"},
                "C": {"url": "https://c.example/mcp"},
                "d e": {"url": "https://d.example/mcp"},
            }
        },
        allow_local=True,
    )
    for key, outcome in outcomes.items():
        assert isinstance(outcome, ConfigError), key
        text = str(outcome)
        assert text == f"server {key!r}: {outcome.reason}"
        assert not outcome.reason.startswith("server ")
        assert "host did not" not in text and "host application" not in text
