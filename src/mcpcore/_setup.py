"""What both drivers decide the same way before and around I/O, kept in one place.

``ClientOptions`` are the options every driver's ``McpClient`` takes;
``prepare_client`` turns a name, a server (object, raw entry or ``ConfigError``)
and those options into a validated ``ClientSetup`` — never raising for an
invalid or refused entry (seed 000: such a client is installed unavailable).
``child_environment`` is S2's environment for a local server. The caller's
environment and home directory are arguments: the core never reads them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict
from urllib.parse import urlsplit

from ._config import (
    LocalServer,
    RemoteServer,
    check_remote_headers,
    load_mcp_json,
    parse_server,
    server_name,
)
from ._errors import ConfigError, InvalidValue
from ._escape import excerpt
from ._http import HttpLimits
from ._modern import MODERN_VERSIONS
from ._session import SUPPORTED_PROTOCOL_VERSIONS, SessionOptions, positive_seconds
from ._stdio import child_environment
from ._tools import ascii_lower

if TYPE_CHECKING:
    from ._authorizing import AuthOptions

__all__ = [
    "LOCAL_REFUSED",
    "ClientOptions",
    "ClientSetup",
    "child_environment",
    "choose_proxy",
    "hub_entries",
    "prepare_client",
]

LOCAL_REFUSED = "local MCP servers (command) are not supported yet"


class ClientOptions(TypedDict, total=False):
    """The keyword options of ``McpClient`` (and ``McpHub``) in both drivers.

    Every option may be left out; times are in seconds. An option not listed
    here is refused with ``TypeError``.

    ``call_timeout`` (300.0)
        A call's time limit when the call passes no ``timeout=`` (K2).
    ``startup_timeout`` (120.0)
        How long one start-up attempt (connect, ``initialize``, the whole
        listing) may take before it counts as failed and is retried (L2, L4).
    ``separator`` (``"/"``)
        What joins the server name and the tool name in a tool id (T1).
    ``policy`` (``"error"``)
        What a ``structuredContent`` that breaks the tool's ``outputSchema``
        does: ``"error"`` fails the call, ``"lenient"`` logs a warning and
        returns it (K5).
    ``allow_local`` (False)
        Run local servers (an entry with ``command``) as child processes over
        stdio; without it they are refused with a reason (C6). An entry from the
        user's own configuration may name its ``command`` by absolute path (C9);
        a plugin's may not (see ``plugin_root``).
    ``allow_insecure_http`` (False)
        Allow plain ``http://`` to a host other than loopback (C5).
    ``auto_refresh`` (False)
        Re-list the tools when the server says they changed (T6).
    ``listen`` (True)
        Open the GET stream for messages the server starts (H8).
    ``extend_on_progress`` (False)
        Let each progress notification push a call's deadline out by its
        budget again (K2) ...
    ``call_timeout_max`` (3600.0)
        ... but never past this long after the call started.
    ``max_pages`` (1000)
        The most ``tools/list`` pages one listing may take (T5, P6).
    ``max_tools`` (10 000)
        The most tools a server may list (P6).
    ``limits`` (``HttpLimits()``)
        Bounds of what a server may send over HTTP: message and SSE line
        sizes, reconnects, notice timeouts, answers in flight (P6, H4, H10).
    ``max_connections`` (10)
        The size of the client's connection pool; at least 2 while
        ``listen`` is on (the GET stream keeps one open).
    ``plugin_root`` (None)
        Give it when the entries come from a plugin (an ``mcp.json`` shipped
        inside a plugin's directory): it is that directory, and the plugin rules
        then apply to local entries (C6): ``command`` is a bare name or a ``./``
        path inside the directory, ``cwd`` stays inside it. It expands
        ``${PLUGIN_ROOT}`` and is a local server's default working directory and
        ``PLUGIN_ROOT`` (C7, S2). Left out, the entries are the user's own
        (C9); ``McpHub.from_file`` then uses the file's directory the same way.
    ``plugin_data`` (None)
        The plugin's data directory: expands ``${PLUGIN_DATA}``, and is given
        to a local server as ``PLUGIN_DATA`` (C7, S2).
    ``client_name`` (``"mcpcore"``)
        The ``clientInfo.name`` this client gives in ``initialize`` (P1).
    ``protocol`` (``"auto"``)
        Which MCP revision to speak (E1): ``"auto"`` asks the server with
        ``server/discover`` (2026-07-28) and falls back to the ``initialize``
        handshake; ``"legacy"`` always uses the handshake; ``"modern"`` only
        2026-07-28; or a protocol version to use exactly that one.
    ``proxy`` (from the environment)
        The HTTP proxy for a remote server: ``"http://[user:password@]host:port"``
        (or ``https://``), or ``""`` for none. Left out, it comes from the
        environment the driver passes: ``https_proxy``/``HTTPS_PROXY`` for an
        ``https`` URL, ``http_proxy``/``HTTP_PROXY`` for ``http``, then
        ``all_proxy``/``ALL_PROXY``; ``no_proxy``/``NO_PROXY`` (``*``, hosts,
        ``.domain`` or ``*.domain`` suffixes, IP addresses and CIDR networks,
        each optionally with ``:port``) and loopback hosts go direct; a proxy
        given without a scheme is ``http://``; in a CGI program (``REQUEST_METHOD``
        set) ``HTTP_PROXY`` is ignored ("httpoxy").
    ``auth`` (None)
        OAuth for a remote server (``AuthOptions``): the client answers the
        server's 401 with the MCP authorization flow, keeps the tokens in
        ``AuthOptions.store`` and sends them. Without it a 401 is an error
        naming the status. The person-facing step needs the driver's
        ``authorize`` hook; a signed client assertion its ``sign_assertion``.
    """

    call_timeout: float
    startup_timeout: float
    separator: str
    policy: Literal["error", "lenient"]
    allow_local: bool
    allow_insecure_http: bool
    auto_refresh: bool
    listen: bool
    extend_on_progress: bool
    call_timeout_max: float
    max_pages: int
    max_tools: int
    limits: HttpLimits
    max_connections: int  # the pool size; at least 2 while listening (the GET stream)
    plugin_root: str | None
    plugin_data: str | None
    client_name: str
    protocol: str
    proxy: str
    auth: AuthOptions | None


@dataclass(frozen=True, slots=True)
class ClientSetup:
    """A validated client: its session options, limits and server, or why it has none.

    ``name`` is the client's name lowercased in ASCII, the one form used
    everywhere (``session.server_name``, tool ids, the client's ``name``, hub
    keys), even when it is invalid and the client is unavailable for it.
    """

    name: str
    session: SessionOptions
    limits: HttpLimits
    listen: bool
    max_connections: int
    server: RemoteServer | LocalServer | None
    config_error: ConfigError | None
    # The proxy URL to reach ``server`` through, or None (direct). It may hold a
    # password: never shown (C8).
    proxy: str | None = field(default=None, repr=False)
    # OAuth for ``server`` (A1-A3), when asked for and the server is remote.
    auth: AuthOptions | None = None


def prepare_client(
    name: str,
    server: RemoteServer | LocalServer | ConfigError | Mapping[str, Any],
    options: ClientOptions,
    *,
    env: Mapping[str, str],
    home: str,
) -> ClientSetup:
    unknown = set(options) - set(ClientOptions.__annotations__)
    if unknown:
        raise TypeError(f"unknown McpClient option(s): {', '.join(sorted(unknown))}")
    lowered = ascii_lower(name)
    separator = options.get("separator", "/")
    session = SessionOptions(
        server_name=lowered,
        client_name=options.get("client_name", "mcpcore"),
        startup_timeout=positive_seconds(options.get("startup_timeout", 120.0), "startup_timeout"),
        call_timeout=positive_seconds(options.get("call_timeout", 300.0), "call_timeout"),
        extend_on_progress=options.get("extend_on_progress", False),
        call_timeout_max=positive_seconds(
            options.get("call_timeout_max", 3600.0), "call_timeout_max"
        ),
        separator=separator,
        policy=options.get("policy", "error"),
        auto_refresh=options.get("auto_refresh", False),
        max_pages=options.get("max_pages", 1000),
        max_tools=options.get("max_tools", 10_000),
        protocol=_protocol(options.get("protocol", "auto")),
    )
    allow_local = options.get("allow_local", False)
    plugin_root = options.get("plugin_root")
    proxy: str | None = None
    resolved: RemoteServer | LocalServer | None = None
    error: ConfigError | None = None
    try:
        if isinstance(server, ConfigError):
            raise server
        server_name(name)  # C4: a valid tool-id segment once lowercased
        _check_separator(name, lowered, separator)
        if isinstance(server, LocalServer) and not allow_local:
            raise ConfigError(LOCAL_REFUSED, key="command")  # C6
        if isinstance(server, RemoteServer):
            check_remote_headers(server)  # C5: a host-built server's headers are checked too
            resolved = server
        elif isinstance(server, LocalServer):
            resolved = server
        else:
            resolved = parse_server(
                name,
                server,
                env=env,
                home=home,
                plugin_root=plugin_root,
                plugin_data=options.get("plugin_data"),
                allow_local=allow_local,
                allow_insecure_http=options.get("allow_insecure_http", False),
                origin="user" if plugin_root is None else "plugin",
            )
        if isinstance(resolved, RemoteServer):
            proxy = choose_proxy(resolved.url, env, options.get("proxy"))
    except ConfigError as exc:
        error = exc
    listen = options.get("listen", True)
    max_connections = options.get("max_connections", 10)
    # The GET stream (H8) holds one connection for as long as it is open, so a
    # listening client needs a second one for everything else.
    least = 2 if listen else 1
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise TypeError("max_connections must be a whole number of connections")
    if max_connections < least:
        raise ValueError(
            f"max_connections must be at least {least}"
            + (
                " while listening (the GET stream keeps one open); or pass listen=False"
                if listen
                else ""
            )
        )
    return ClientSetup(
        name=lowered,
        session=session,
        limits=options.get("limits") or HttpLimits(),
        listen=listen,
        max_connections=max_connections,
        server=resolved,
        config_error=error,
        proxy=proxy,
        auth=_auth(options.get("auth"), resolved),
    )


def _auth(value: object, server: RemoteServer | LocalServer | None) -> AuthOptions | None:
    """A3: ``auth=`` for a remote server, checked now (``InvalidValue``), not at start."""
    if value is None:
        return None
    from ._authorizing import AuthOptions
    from ._oauth import OAuthFlow

    if not isinstance(value, AuthOptions):
        raise TypeError("auth must be an AuthOptions (or None)")
    if not isinstance(server, RemoteServer):
        return None  # a local server or an invalid entry: nothing to authorize
    OAuthFlow(value.config(server.url, interactive=False), token_bytes=bytes)  # raises if unusable
    return value


def _protocol(value: object) -> str:
    known = ("auto", "legacy", "modern", *MODERN_VERSIONS, *SUPPORTED_PROTOCOL_VERSIONS)
    if value not in known:
        raise InvalidValue(
            f"protocol must be one of {', '.join(repr(k) for k in known)}, not {excerpt(repr(value), 40)}"
        )
    return str(value)


_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_DEFAULT_PORTS = {"http": 80, "https": 443}


def choose_proxy(url: str, env: Mapping[str, str], explicit: str | None) -> str | None:
    """The proxy to reach ``url`` through (C5): ``explicit``, else the environment's.

    ``explicit`` ``""`` means none; any other ``explicit`` is used for every host
    (``no_proxy`` and the loopback rule do not apply to it). From ``env``, for an
    ``http``/``https`` URL only:

    - the scheme's variable, then ``all_proxy``; of each pair the lowercase name
      is read first and, when set, decides (``https_proxy=`` turns off an
      inherited ``HTTPS_PROXY``), as curl and Python's urllib read them;
    - httpoxy: in a CGI program (``REQUEST_METHOD`` is set) ``HTTP_PROXY`` holds
      the request's ``Proxy:`` header, so it is never read; ``http_proxy`` and
      ``all_proxy`` still are;
    - loopback hosts (``localhost``, ``127.0.0.0/8``, ``::1``) go direct, as Go's
      ``ProxyFromEnvironment`` sends them, and so does every host ``no_proxy``
      (else ``NO_PROXY``) lists (see ``_bypassed``).

    A proxy without a scheme (``proxy:3128``) is ``http://``, as curl takes it. A
    proxy URL that is not ``http(s)://[user:password@]host[:port]`` is a
    ``ConfigError`` naming where it came from, never its text (it may hold a
    password).
    """
    if explicit is not None:
        if not isinstance(explicit, str):
            raise TypeError("proxy must be a URL string (or '' for no proxy)")
        return _checked_proxy(explicit, "the proxy option") if explicit else None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None  # not a URL to judge: connecting to it fails on its own
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")  # hostname is lowercase
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    address = _ip_address(host)
    if host == "localhost" or (address is not None and address.is_loopback):
        return None
    chosen = _proxy_variable(env, scheme)
    if chosen is None:
        return None
    no_proxy = env.get("no_proxy", env.get("NO_PROXY", ""))
    if _bypassed(host, address, port or _DEFAULT_PORTS[scheme], no_proxy):
        return None
    name, value = chosen
    return _checked_proxy(value, f"the {name} environment variable")


def _proxy_variable(env: Mapping[str, str], scheme: str) -> tuple[str, str] | None:
    """The environment variable naming the proxy for a ``scheme`` URL, and its value."""
    for lowercase in (f"{scheme}_proxy", "all_proxy"):
        names = [lowercase]
        if not (lowercase == "http_proxy" and "REQUEST_METHOD" in env):  # httpoxy
            names.append(lowercase.upper())
        for name in names:
            if name in env:
                value = env[name].strip()
                if value:
                    return name, value
                break  # set but empty: no proxy from this pair
    return None


def _ip_address(text: str) -> _Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _bypassed(host: str, address: _Address | None, port: int, no_proxy: str) -> bool:
    """Whether ``no_proxy`` lists ``host`` (``address`` if it is one) on ``port``.

    Entries are separated by commas or spaces, case does not matter: ``*`` is
    every host; a domain is itself and every name under it (a leading ``.`` or
    ``*.`` and a trailing ``.`` change nothing); an IP address is itself and a
    network in CIDR form (``10.0.0.0/8``, ``fd00::/8``) its addresses; names are
    not resolved. Each may end in ``:port`` (an IPv6 address then in brackets,
    ``[::1]:8080``), and then matches on that port only (a URL without a port is
    on its scheme's default one).
    """
    for entry in no_proxy.lower().replace(",", " ").split():
        if entry == "*":
            return True
        split = _no_proxy_entry(entry)
        if split is None:
            continue
        entry_host, entry_port = split
        if entry_port is not None and entry_port != port:
            continue
        if "/" in entry_host:  # a network
            try:
                network = ipaddress.ip_network(entry_host, strict=False)
            except ValueError:
                continue
            if address is not None and address in network:
                return True
            continue
        entry_address = _ip_address(entry_host)
        if address is not None or entry_address is not None:
            if address == entry_address:  # an address matches only itself, never a name
                return True
            continue
        domain = entry_host.removeprefix("*").strip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def _no_proxy_entry(entry: str) -> tuple[str, int | None] | None:
    """A ``no_proxy`` entry's host and port (None: any port); None for a malformed one."""
    if entry.startswith("["):  # [v6] or [v6]:port
        inside, closed, rest = entry[1:].partition("]")
        if not closed:
            return None
        if not rest:
            return inside, None
        port = rest.removeprefix(":")
        return (inside, int(port)) if rest.startswith(":") and port.isdigit() else None
    if entry.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        name, _, port = entry.partition(":")
        return (name, int(port)) if port.isdigit() else None
    return entry, None


def _checked_proxy(value: str, origin: str) -> str:
    if "://" not in value:  # "proxy:3128": http, as curl takes it
        value = "http://" + value
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed "[" of an IPv6 host
        raise ConfigError(f"{origin} is not a valid URL", key="proxy") from None
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        raise ConfigError(f"{origin} has an invalid port", key="proxy") from None
    if (
        parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or any(ch.isspace() or ord(ch) < 32 for ch in value)
    ):
        raise ConfigError(
            f"{origin} is not an http:// or https:// proxy URL with a host", key="proxy"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(
            f"{origin} has a path, query or fragment (a proxy URL is http(s)://host[:port])",
            key="proxy",
        )
    return value


def _check_separator(name: str, lowered: str, separator: str) -> None:
    """C4: refuse a name that would make its tool ids route to another server.

    Ids are ``<name><separator><tool>`` and are routed by what comes before the
    first separator, so the name may neither contain the separator nor end with
    a part of it that, with the separator after it, holds one earlier (``a_``
    with ``__``: ``a___x`` splits after ``a``).
    """
    if not separator or separator not in lowered + separator[:-1]:
        return
    how = "contains" if separator in lowered else "runs into"
    raise ConfigError(
        f"the name {how} the tool-id separator {separator!r}, so its tool ids could not be "
        "told apart from another server's; rename the server or choose another separator",
        key=name,
        server=name,
    )


def hub_entries(
    text: str | bytes,
    options: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    home: str,
    directory: str | None = None,
) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    """L7, C2: an ``mcp.json`` document → one outcome per server, keyed by client name.

    Every outcome is keyed by its key lowercased in ASCII: the name its client
    gets, so a hub routes by the same name its tool ids start with. Keys equal
    after lowercasing are one name, whose outcome is the later entry's error
    (the two entries cannot both be honoured). A valid entry whose name holds
    the ``separator`` option becomes a ``ConfigError`` on its own (C2). Raises
    ``ConfigError`` when the top level is invalid (C1).

    Whose file it is decides the rules for local entries: with the
    ``plugin_root`` option it is a plugin's (C6); without, it is the user's own
    (C9), and ``directory`` (the file's directory, when read from a file) takes
    the plugin root's place: ``./`` commands, ``${PLUGIN_ROOT}`` and the default
    working directory are relative to it.
    """
    plugin_root = options.get("plugin_root")
    outcomes = load_mcp_json(
        text,
        env=env,
        home=home,
        origin="user" if plugin_root is None else "plugin",
        plugin_root=directory if plugin_root is None else plugin_root,
        plugin_data=options.get("plugin_data"),
        allow_local=options.get("allow_local", False),
        allow_insecure_http=options.get("allow_insecure_http", False),
    )
    separator = options.get("separator", "/")
    entries: dict[str, RemoteServer | LocalServer | ConfigError] = {}
    for key, outcome in outcomes.items():
        name = ascii_lower(key)
        if not isinstance(outcome, ConfigError):
            try:
                _check_separator(key, name, separator)
            except ConfigError as exc:
                outcome = exc
        entries[name] = outcome
    return entries


ClientOptions.__module__ = "mcpcore"  # documented and exported as mcpcore.ClientOptions
