"""Who the client may contact for one MCP server, and through which proxy.

``OutboundPolicy`` is computed per server from the server's URL, the
``allow_insecure_http`` option and the proxy settings (the ``proxy`` option,
else the environment's ``*_proxy`` and ``no_proxy`` variables). Every request
the OAuth flow is about to send passes ``refusal`` first; the drivers' pools
ask ``proxy_for_origin`` for each connection they open, so a request to an
authorization server on another host goes through the proxy chosen for that
host, not the one chosen for the MCP server.

The rule ``refusal`` keeps: a URL a server names (its resource metadata, its
issuer, its endpoints) may point at a loopback or private address only when
the MCP server itself is on one, so a remote server cannot steer the client
to the user's own machine or network; plain ``http`` goes only to a loopback
host of a loopback-or-private server, or anywhere ``allow_insecure_http``
allows it. Names are not resolved (the core does no I/O): ``localhost`` and
names under it count as loopback, every other name as public; IP literals
count by their address, in every spelling a resolver takes (``127.1``,
``0x7f000001``, ``::ffff:127.0.0.1``).

``choose_proxy`` is the one rule for which proxy a URL goes through (C5).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..base._errors import ConfigError
from ..base._record import record

if TYPE_CHECKING:
    import ipaddress

    _Address = ipaddress.IPv4Address | ipaddress.IPv6Address

__all__ = ["OutboundPolicy", "choose_proxy", "host_is_local", "host_is_loopback"]

# The environment variables the proxy choice reads (any other is not kept).
_PROXY_VARIABLES = frozenset(
    {
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
        "REQUEST_METHOD",
    }
)


_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_OCTAL = re.compile(r"0[0-7]*")
_DECIMAL = re.compile(r"[1-9][0-9]*")


def _loose_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` read as the C resolver's ``inet_aton`` reads it (``127.1``,
    ``0x7f.1``, ``2130706433``, ``0177.0.0.1``), or None when it is not such a form."""
    import ipaddress  # B5: loaded when first needed, not on import

    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if _HEX.fullmatch(part):
            numbers.append(int(part[2:], 16))
        elif _OCTAL.fullmatch(part):
            numbers.append(int(part, 8))
        elif _DECIMAL.fullmatch(part):
            numbers.append(int(part))
        else:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(head):
        value |= number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a URL's host names, in any spelling a resolver accepts."""
    import ipaddress  # B5: loaded when first needed, not on import

    host = host.rstrip(".")
    try:
        found = ipaddress.ip_address(host)
    except ValueError:
        return _loose_ipv4(host)
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _loopback_name(host: str) -> bool:
    host = host.rstrip(".").lower()
    return host == "localhost" or host.endswith(".localhost")


def host_is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a URL's hostname) is this machine: ``localhost`` or a loopback address."""
    if not host:
        return False
    if _loopback_name(host):
        return True
    found = _address(host)
    return found is not None and found.is_loopback


def host_is_local(host: str | None) -> bool:
    """Whether ``host`` is loopback or a private, link-local or otherwise non-public address."""
    if not host:
        return False
    if _loopback_name(host):
        return True
    found = _address(host)
    return found is not None and (found.is_loopback or not found.is_global)


def _hostname(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    return parts.hostname


@record(frozen=True, slots=True)
class OutboundPolicy:
    """Who may be contacted for the MCP server ``server_url``, and through which proxy.

    ``proxy`` is the ``proxy`` option (``""``: none; None: from ``env``);
    ``env`` keeps only the proxy variables. Neither ever shows (a proxy URL
    may hold a password).
    """

    server_url: str
    allow_insecure_http: bool = False
    proxy: str | None = field(default=None, repr=False)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    _chosen: dict[tuple[str, str, int], str | None] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def for_server(
        cls,
        server_url: str,
        *,
        env: Mapping[str, str] | None = None,
        proxy: str | None = None,
        allow_insecure_http: bool = False,
    ) -> OutboundPolicy:
        kept = {k: v for k, v in (env or {}).items() if k in _PROXY_VARIABLES}
        return cls(server_url, allow_insecure_http, proxy, kept)

    @property
    def server_is_local(self) -> bool:
        """The MCP server is on loopback or a private address."""
        return host_is_local(_hostname(self.server_url))

    def refusal(self, url: str) -> str | None:
        """Why the client must not send a request to ``url``, or None when it may.

        ``url`` is one the MCP server or its authorization server named.
        """
        host = _hostname(url)
        scheme = url.partition(":")[0].lower()
        if not host or scheme not in ("http", "https"):
            return "it is not an absolute http(s) URL"
        if any(ch <= " " or ch == "\x7f" for ch in url):
            return "it holds a space or a control character"
        if host_is_local(host) and not self.server_is_local:
            return (
                "it names a loopback or private address, and the MCP server is not on one "
                "(a remote server may not send the client to this machine or network)"
            )
        if scheme == "http" and not self.allow_insecure_http and not host_is_loopback(host):
            return "it is plain http to a host that is not loopback"
        return None

    @property
    def proxies_possible(self) -> bool:
        """Whether any request could go through a proxy (else every one goes direct)."""
        if self.proxy is not None:
            return self.proxy != ""
        return any(
            name != "REQUEST_METHOD" and not name.lower().startswith("no_") and value.strip()
            for name, value in self.env.items()
        )

    def proxy_for(self, url: str) -> str | None:
        """The proxy URL to reach ``url`` through, or None (direct): ``choose_proxy``.

        Raises ``ConfigError`` for a proxy setting that is not a usable URL.
        """
        return choose_proxy(url, self.env, self.proxy)

    def proxy_for_origin(self, scheme: str, host: str, port: int) -> str | None:
        """``proxy_for`` an origin as a connection pool sees it (remembered per origin)."""
        key = (scheme, host, port)
        if key not in self._chosen:
            shown = f"[{host}]" if ":" in host else host
            self._chosen[key] = self.proxy_for(f"{scheme}://{shown}:{port}/")
        return self._chosen[key]


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
    import ipaddress  # B5: loaded when first needed, not on import

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
    import ipaddress  # B5: loaded when first needed, not on import

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
