"""The configuration layer (C1–C8): ``mcp.json`` and single entries → server configs.

This module owns:

* :func:`load_mcp_json` — a whole ``mcp.json`` document → one outcome per server
  key (C1, C2, C4), with failure isolation between entries;
* :func:`parse_server` — one entry → :class:`RemoteServer` or :class:`LocalServer`
  (C3–C7), raising :class:`~mcpcore.ConfigError`;
* :func:`expand` — single-pass, non-recursive placeholder expansion (C7);
* redaction (C8): no ``repr``, ``str``, message or log record made here contains
  a header value or an environment value. Messages may name keys, and show a URL
  only as configured (before expansion), without user info, query or fragment.

Everything is pure: the environment, the home directory and the plugin
directories are inputs. Resolving ``cwd`` and ``./`` commands is path
arithmetic (``os.path.normpath``); the disk is never touched.
"""

from __future__ import annotations

import json
import logging
import os.path
import re
from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Literal, NoReturn
from urllib.parse import urlsplit

from ..base._errors import ConfigError
from ..base._escape import json_type_name, shown_key
from ..base._record import record
from ..wire._header_checks import CLIENT_OWNED_HEADERS, check_dynamic_headers, checked_headers
from ..wire._modern import HANDSHAKE_VERSIONS, MODERN_VERSIONS

__all__ = [
    "CLIENT_OWNED_HEADERS",
    "LOCAL_NOT_SUPPORTED",
    "LOCAL_REFUSAL_WORDS",
    "LocalServer",
    "Origin",
    "RemoteServer",
    "check_dynamic_headers",
    "check_remote_headers",
    "expand",
    "load_mcp_json",
    "parse_server",
    "server_name",
]

_log = logging.getLogger("mcpcore.config")

#: Whose ``mcp.json`` an entry comes from: a plugin's (the plugin rules apply to
#: local entries, C6) or the user's own (trusted as written, C9).
Origin = Literal["plugin", "user"]

#: Seed 000's words for refusing a local (``command``) entry, to the letter:
#: hosts match on them, so a reason may add a hint after ``": "`` but never
#: rewords them (C6).
LOCAL_REFUSAL_WORDS = "local MCP servers (command) are not supported yet"

#: The reason a local entry is refused by default (C6): the seed's words, then
#: the hint, since local servers do start once the caller allows them.
LOCAL_NOT_SUPPORTED = f"{LOCAL_REFUSAL_WORDS}: allow_local=True starts them"

_RESERVED_ENV = frozenset({"PLUGIN_ROOT", "PLUGIN_DATA"})
#: What an entry of the user's own file may pin in ``protocol`` (E1): the words of
#: the ``protocol=`` option, or one revision.
_PROTOCOLS = ("auto", "legacy", "modern", *MODERN_VERSIONS, *HANDSHAKE_VERSIONS)
_TOP_LEVEL_KEYS = ("$schema", "mcpServers")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# The patterns are compiled when first used (``re.compile`` keeps them), not on
# import: a client's configuration is read after the import (B5, issue 40).
_SEGMENT = r"[a-z0-9_.\-]{1,128}"
_PLACEHOLDER = r"\$\{([^{}]*)\}"
# Placeholders written in other tools' syntax, which C7 leaves as they are: ${VAR}
# (Claude Code's, optionally with a ":-default"), a "${" never closed, and, in a
# url or header (no shell ever reads them), a shell's $VAR after a separator.
_FOREIGN = r"(?s)([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+].*)?"
_KNOWN_NAMES = frozenset({"userHome", "PLUGIN_ROOT", "PLUGIN_DATA"})
_OPENED = r"\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)?"
_SHELL_VAR = r"(?<![^\s=/:,;\"'(])\$([A-Z_][A-Z0-9_]*)(?![A-Za-z0-9_])"
_ENV_STYLE = r"[A-Z_][A-Z0-9_]*"
#: At most this many unexpanded placeholders are named in an entry's warning.
_MAX_NOTED = 5
# Anything that cannot appear raw in a request target: controls, space, DEL, non-ASCII.
_URL_BAD_CHAR = r"[^\x21-\x7e]"


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


def _display_url(url: str) -> str:
    """``url`` without user info, query string and fragment: safe to show (C8)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at != -1:
            end = min(end, at)
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    for stop in "?#":
        tail = tail.split(stop, 1)[0]
    return f"{scheme}{sep}{authority}{tail}"


def _readonly(mapping: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(mapping))


@record(frozen=True, repr=False)
class RemoteServer:
    """A validated remote (Streamable HTTP) server (C5).

    ``url`` and ``headers`` are expanded and may carry secrets, so ``repr`` and
    ``str`` show only ``display_url`` (the URL as configured, without user info,
    query and fragment) and the header *names* (C8).
    """

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    display_url: str = ""
    #: The MCP revision the entry pins (E1), as the ``protocol=`` option takes it
    #: (``"legacy"``, ``"modern"``, ``"auto"`` or a version); ``None``: not pinned.
    #: Only the user's own file pins one (C9); the client's option, when given, wins.
    protocol: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", _readonly(self.headers))
        if not self.display_url:
            object.__setattr__(self, "display_url", _display_url(self.url))

    def __repr__(self) -> str:
        return (
            f"RemoteServer(name={self.name!r}, url={self.display_url!r}, "
            f"headers={sorted(self.headers)!r})"
        )

    def __hash__(self) -> int:
        return hash((self.name, self.url, tuple(sorted(self.headers.items())), self.protocol))


@record(frozen=True, repr=False)
class LocalServer:
    """A validated local (stdio) server (C6, C9); only built with ``allow_local``.

    ``command`` is a bare executable name or an absolute path (a plugin's ``./``
    command, resolved inside its root; in the user's own file, any path).
    ``args``, ``env`` values and ``cwd`` are expanded and may carry secrets, so
    ``repr`` shows the name, the command, the number of arguments and the
    environment *keys* only (C8). An empty ``cwd`` defaults to ``plugin_root``
    (the plugin's directory, or the user's file's); with neither, the child
    starts in the current directory.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    plugin_root: str = ""
    plugin_data: str | None = None
    #: The MCP revision the entry pins, as for :attr:`RemoteServer.protocol`.
    protocol: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", _readonly(self.env))
        if not self.cwd:
            object.__setattr__(self, "cwd", self.plugin_root)

    def __repr__(self) -> str:
        return (
            f"LocalServer(name={self.name!r}, command={self.command!r}, "
            f"args=<{len(self.args)} args>, env={sorted(self.env)!r})"
        )

    def __hash__(self) -> int:
        return hash(
            (
                self.name,
                self.command,
                self.args,
                tuple(sorted(self.env.items())),
                self.cwd,
                self.plugin_root,
                self.plugin_data,
                self.protocol,
            )
        )


# ---------------------------------------------------------------------------
# Expansion (C7)
# ---------------------------------------------------------------------------


def expand(
    text: str,
    *,
    env: Mapping[str, str],
    home: str,
    plugin_root: str | None = None,
    plugin_data: str | None = None,
) -> str:
    """Expand placeholders in ``text`` in one pass (C7).

    ``${env:NAME}`` → ``env[NAME]`` (unset: :class:`ConfigError` naming ``NAME``,
    with ``key=NAME``); ``${userHome}`` → ``home``; ``${PLUGIN_ROOT}`` /
    ``${PLUGIN_DATA}`` → the directory when given, else left as is. Any other
    ``${...}`` is left unchanged. Text produced by a substitution is never
    expanded again.
    """

    def substitute(match: re.Match[str]) -> str:
        body = match.group(1)
        if body.startswith("env:"):
            var = body[4:]
            try:
                return env[var]
            except KeyError:
                raise ConfigError(f"environment variable {var!r} is not set", key=var) from None
        if body == "userHome":
            return home
        if body == "PLUGIN_ROOT" and plugin_root is not None:
            return plugin_root
        if body == "PLUGIN_DATA" and plugin_data is not None:
            return plugin_data
        return match.group(0)

    if "${" not in text:
        return text
    return re.compile(_PLACEHOLDER).sub(substitute, text)


def _foreign_placeholders(text: str, *, shell: bool = False) -> list[str]:
    """What ``text`` holds that looks like a placeholder but is not expanded (C7).

    ``${VAR}`` (Claude Code's syntax, with or without ``:-default``), a ``${``
    that is never closed (named when it is ``${env:VAR`` or ``${VAR`` in
    capitals), and with ``shell`` (urls and headers) a shell's ``$VAR``
    (capitals, after a separator or at the start). Each note names the
    placeholder and suggests ``${env:VAR}``; it quotes the placeholder's name
    only, never the rest of the text (a header's value may be a secret, C8).
    ``${env:…}``, ``${userHome}`` and the plugin directories are not noted.
    """
    if "$" not in text:
        return []
    notes: list[str] = []
    closed: set[int] = set()
    for match in re.compile(_PLACEHOLDER).finditer(text):
        closed.add(match.start())
        body = match.group(1)
        written = re.compile(_FOREIGN).fullmatch(body)
        if body.startswith("env:") or written is None or written.group(1) in _KNOWN_NAMES:
            continue
        name = written.group(1)
        shown = f"${{{name}:-…}}" if written.group(2) else f"${{{name}}}"
        notes.append(f"holds `{shown}`, which is not expanded; did you mean `${{env:{name}}}`?")
    for match in re.compile(_OPENED).finditer(text):
        if match.start() in closed:
            continue
        prefix, name = match.group(1) or "", match.group(2)
        if name is None or not (prefix or re.compile(_ENV_STYLE).fullmatch(name)):
            # Not a variable's name: said without quoting the text (it may be a secret).
            notes.append("holds a '${' that is never closed, so it is not expanded")
            continue
        notes.append(
            f"holds `${{{prefix}{name}` without its closing '}}', so it is not expanded; "
            f"did you mean `${{env:{name}}}`?"
        )
    if shell:
        for match in re.compile(_SHELL_VAR).finditer(text):
            name = match.group(1)
            if any(c.isalpha() for c in name):
                notes.append(
                    f"holds `${name}`, which is not expanded; did you mean `${{env:{name}}}`?"
                )
    return notes


# ---------------------------------------------------------------------------
# JSON with duplicate-key detection
# ---------------------------------------------------------------------------


class _JsonObject(dict[str, object]):
    """A decoded JSON object that remembers keys written more than once.

    The first occurrence is kept (nothing is silently overwritten); the checks
    below turn a repeated key into an error.
    """

    duplicates: tuple[str, ...] = ()


def _vscode_hint(doc: Mapping[str, object]) -> str:
    """C1: a file in VS Code's format (servers under ``servers``, often after
    ``inputs``) is refused with the key it meant."""
    if "servers" in doc and "mcpServers" not in doc:
        return "; did you mean 'mcpServers'? (VS Code's format names the key 'servers')"
    return ""


def _object_pairs(pairs: list[tuple[str, object]]) -> _JsonObject:
    obj = _JsonObject()
    dups: list[str] = []
    for key, value in pairs:
        if key in obj:
            if key not in dups:
                dups.append(key)
            continue
        obj[key] = value
    if dups:
        obj.duplicates = tuple(dups)
    return obj


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _duplicates(obj: object) -> tuple[str, ...]:
    return obj.duplicates if isinstance(obj, _JsonObject) else ()


# ---------------------------------------------------------------------------
# The document (C1, C2, C4)
# ---------------------------------------------------------------------------


def load_mcp_json(
    text: str | bytes,
    *,
    env: Mapping[str, str],
    home: str,
    plugin_root: str | None = None,
    plugin_data: str | None = None,
    allow_local: bool = False,
    allow_insecure_http: bool = False,
    origin: Origin = "plugin",
) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    """Load an ``mcp.json`` document: one outcome per server key, in document order.

    Raises :class:`ConfigError` when the top level is invalid (C1). Each entry
    is checked alone (C2): an invalid one becomes a :class:`ConfigError` value
    under its key and the others still load. A key equal to an earlier one after
    ASCII lowercasing is invalid (C4); a key written twice verbatim is invalid
    as a whole, since the two entries cannot both be honoured. ``origin`` says
    whose file it is (see :func:`parse_server`).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"mcp.json is not valid UTF-8 (invalid byte at offset {exc.start}); "
                "the file must be encoded as UTF-8"
            ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = json.loads(text, object_pairs_hook=_object_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"mcp.json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise ConfigError(f"mcp.json is not valid JSON: {exc}") from None
    except RecursionError:
        raise ConfigError("mcp.json is not valid JSON: it is nested too deeply") from None

    if not isinstance(doc, dict):
        raise ConfigError(
            f"mcp.json must be a JSON object at the top level, not {json_type_name(doc)}"
        )
    for dup in _duplicates(doc):
        raise ConfigError(
            f"mcp.json: top-level key {shown_key(dup)} appears more than once", key=dup
        )
    for key in doc:
        if key not in _TOP_LEVEL_KEYS:
            raise ConfigError(
                f"mcp.json: unknown top-level key {shown_key(key)} "
                "(only '$schema' and 'mcpServers' are allowed)" + _vscode_hint(doc),
                key=key,
            )
    if "$schema" in doc and not isinstance(doc["$schema"], str):
        raise ConfigError(
            f"mcp.json: '$schema' must be a string, not {json_type_name(doc['$schema'])}",
            key="$schema",
        )
    if "mcpServers" not in doc:
        raise ConfigError("mcp.json: 'mcpServers' is missing", key="mcpServers")
    servers = doc["mcpServers"]
    if not isinstance(servers, dict):
        raise ConfigError(
            f"mcp.json: 'mcpServers' must be an object, not {json_type_name(servers)}",
            key="mcpServers",
        )

    repeated = set(_duplicates(servers))
    seen: dict[str, str] = {}
    outcomes: dict[str, RemoteServer | LocalServer | ConfigError] = {}
    for key, entry in servers.items():
        lowered = key.translate(_ASCII_LOWER)
        earlier = seen.setdefault(lowered, key)
        if key in repeated:
            outcomes[key] = ConfigError(
                "the key appears more than once in 'mcpServers'", key=key, server=key
            )
        elif earlier != key:
            outcomes[key] = ConfigError(
                f"same name as the earlier server {shown_key(earlier)} after lowercasing "
                f"({shown_key(lowered)})",
                key=key,
                server=key,
            )
        else:
            try:
                outcomes[key] = parse_server(
                    key,
                    entry,
                    env=env,
                    home=home,
                    plugin_root=plugin_root,
                    plugin_data=plugin_data,
                    allow_local=allow_local,
                    allow_insecure_http=allow_insecure_http,
                    origin=origin,
                )
            except ConfigError as exc:
                outcomes[key] = exc
    return outcomes


# ---------------------------------------------------------------------------
# One entry (C3–C7)
# ---------------------------------------------------------------------------


class _Entry:
    """Error and expansion helpers bound to one entry's name and inputs."""

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        home: str,
        plugin_root: str | None,
        plugin_data: str | None,
    ) -> None:
        self.name = name
        self.env = env
        self.home = home
        self.plugin_root = plugin_root
        self.plugin_data = plugin_data
        #: Placeholders in another tool's syntax, left as they are (C7): said once.
        self.unexpanded: list[str] = []

    def fail(self, message: str, key: str | None) -> NoReturn:
        raise ConfigError(message, key=key, server=self.name)

    def expand(
        self,
        text: str,
        where: str,
        key: str,
        *,
        plugin_dirs: bool,
        said: str | None = None,
        shell: bool = False,
    ) -> str:
        """``text`` expanded (C7). Placeholders it holds in another syntax are noted
        under ``said`` (``where`` by default), and ``$VAR`` too when ``shell``."""
        for note in _foreign_placeholders(text, shell=shell):
            self.unexpanded.append(f"{said or where} {note}")
        try:
            return expand(
                text,
                env=self.env,
                home=self.home,
                plugin_root=self.plugin_root if plugin_dirs else None,
                plugin_data=self.plugin_data if plugin_dirs else None,
            )
        except ConfigError as exc:
            self.fail(f"{where}: {exc}", key)

    def warn_unexpanded(self) -> None:
        """One warning for the entry, naming each placeholder left unexpanded (C7)."""
        if not self.unexpanded:
            return
        notes = self.unexpanded[:_MAX_NOTED]
        more = len(self.unexpanded) - len(notes)
        _log.warning(
            "server %r: %s%s",
            self.name,
            "; ".join(notes),
            f"; and {more} more" if more > 0 else "",
        )

    def check_object(self, value: object, what: str, key: str) -> Mapping[str, object]:
        if not isinstance(value, Mapping):
            self.fail(f"{what} must be an object, not {json_type_name(value)}", key)
        for dup in _duplicates(value):
            self.fail(f"{what}: key {shown_key(dup)} appears more than once", key)
        return value


def server_name(name: str) -> str:
    """A server's name from its key: ``name`` lowercased in ASCII, a valid tool-id segment (C4).

    Raises :class:`ConfigError` (``key=name``) when it is not one.
    """
    lowered = name.translate(_ASCII_LOWER)
    if not re.compile(_SEGMENT).fullmatch(lowered):
        raise ConfigError(
            "the name is not a valid id "
            "(1–128 characters from a-z, 0-9, '_', '-', '.' after lowercasing)",
            key=name,
            server=name,
        )
    return lowered


def parse_server(
    name: str,
    entry: Mapping[str, object] | object,
    *,
    env: Mapping[str, str],
    home: str,
    plugin_root: str | None = None,
    plugin_data: str | None = None,
    allow_local: bool = False,
    allow_insecure_http: bool = False,
    origin: Origin = "plugin",
) -> RemoteServer | LocalServer:
    """Validate one ``mcpServers`` entry under the key ``name`` (C3–C7, C9).

    The server's name is ``name`` lowercased in ASCII; it must be a valid tool-id
    segment (C4). An entry with ``url`` is remote (C5), one with ``command`` is
    local (refused unless ``allow_local``).

    ``origin`` says whose entry it is. ``"plugin"``: a plugin's ``mcp.json``,
    whose local entries follow the plugin rules (C6): ``plugin_root`` is
    required, ``command`` is a bare name or a ``./`` path inside it, ``cwd``
    stays inside the plugin's directories. ``"user"``: the user's own file
    (C9), trusted as the user wrote it: ``command`` may also be an absolute
    path, or a path relative to ``plugin_root`` (then the file's directory,
    optional), and ``cwd`` any directory. Raises :class:`ConfigError`.
    """
    if origin not in ("plugin", "user"):
        raise ValueError(f"origin must be 'plugin' or 'user', not {origin!r}")
    lowered = server_name(name)
    ctx = _Entry(lowered, env, home, plugin_root, plugin_data)
    obj = ctx.check_object(entry, "the entry", name)

    kind = obj.get("type")
    if isinstance(kind, str) and kind.strip().lower() == "sse":
        ctx.fail(
            "type 'sse' is the legacy HTTP+SSE transport, which is not supported; "
            "use a Streamable HTTP endpoint",
            "type",
        )
    has_url, has_command = "url" in obj, "command" in obj
    if has_url and has_command:
        ctx.fail("has both 'url' and 'command'; an entry is either remote or local", name)
    if not has_url and not has_command:
        ctx.fail("has neither 'url' (remote) nor 'command' (local)", name)
    known: tuple[str, ...] = (
        ("type", "url", "headers") if has_url else ("type", "command", "args", "env", "cwd")
    )
    if origin == "user":
        known += ("protocol",)  # a plugin's file stays as seed 000 defines it
    ignored = [key for key in obj if key not in known]
    if ignored:
        _log.debug("server %r: ignoring unknown fields %r", lowered, ignored)
    protocol = _entry_protocol(ctx, obj) if origin == "user" else None
    try:
        if has_url:
            return _parse_remote(ctx, obj, allow_insecure_http, protocol)
        if not allow_local:
            raise ConfigError(LOCAL_NOT_SUPPORTED, key="command")
        return _parse_local(ctx, obj, origin, protocol)
    finally:
        # Said even when the entry is refused: a ${VAR} left as it is may be why.
        ctx.warn_unexpanded()


def _entry_protocol(ctx: _Entry, obj: Mapping[str, object]) -> str | None:
    """The user's entry's ``protocol`` (E1, C9): one of ``_PROTOCOLS``, or ``None``."""
    if "protocol" not in obj:
        return None
    value = obj["protocol"]
    if not isinstance(value, str):
        ctx.fail(f"'protocol' must be a string, not {json_type_name(value)}", "protocol")
    if value not in _PROTOCOLS:
        ctx.fail(
            f"'protocol' must be 'auto', 'legacy', 'modern' or a protocol version "
            f"({', '.join(repr(v) for v in _PROTOCOLS[3:])}), not {shown_key(value)}",
            "protocol",
        )
    return value


def _is_loopback(host: str) -> bool:
    host = host.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress  # only URLs with an address need it: keeps `import` cheap (B5)

    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _parse_remote(
    ctx: _Entry, obj: Mapping[str, object], allow_insecure_http: bool, protocol: str | None
) -> RemoteServer:
    raw = obj["url"]
    if not isinstance(raw, str):
        ctx.fail(f"'url' must be a string, not {json_type_name(raw)}", "url")
    shown = repr(_display_url(raw))
    url = ctx.expand(raw, f"url {shown}", "url", plugin_dirs=False, said="the url", shell=True)
    if re.compile(_URL_BAD_CHAR).search(url):
        ctx.fail(
            f"url {shown} contains whitespace, control or non-ASCII characters "
            "(percent-encode them)",
            "url",
        )
    scheme, sep, _ = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        ctx.fail(f"url {shown} must be an absolute http:// or https:// URL", "url")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        ctx.fail(f"url {shown} is not a valid URL (bad host or port)", "url")
    if "@" in parts.netloc:
        ctx.fail(f"url {shown} must not contain user info (user:password@)", "url")
    if "#" in url:
        ctx.fail(f"url {shown} must not contain a fragment ('#')", "url")
    host = parts.hostname
    if not host:
        ctx.fail(f"url {shown} has no host", "url")
    if parts.scheme == "http" and not allow_insecure_http and not _is_loopback(host):
        ctx.fail(
            f"url {shown} uses plain http to a non-loopback host; use https "
            "(plain http must be allowed explicitly)",
            "url",
        )

    headers: dict[str, str] = {}
    if "headers" in obj:
        headers = _checked_headers(
            ctx, ctx.check_object(obj["headers"], "'headers'", "headers"), expand=True
        )
    return RemoteServer(
        name=ctx.name,
        url=url,
        headers=headers,
        display_url=_display_url(raw),
        protocol=protocol,
    )


def _checked_headers(ctx: _Entry, headers: Mapping[str, object], *, expand: bool) -> dict[str, str]:
    """C5 for an entry's headers: ``checked_headers`` failing through the entry,
    each value expanded first when ``expand``."""

    def expanded(value: str, label: str, key: str) -> str:
        return ctx.expand(value, f"{label} value", key, plugin_dirs=False, said=label, shell=True)

    return checked_headers(headers, ctx.fail, expanded if expand else None)


def check_remote_headers(server: RemoteServer) -> None:
    """C5 for a ``RemoteServer`` built in code: its headers pass an entry's checks.

    The values are taken as final (nothing is expanded). Raises
    :class:`ConfigError` naming the server and the header, never the value.
    """
    _checked_headers(_Entry(server.name, {}, "", None, None), server.headers, expand=False)


def _inside(base: str, path: str) -> bool:
    try:
        return os.path.commonpath([base, path]) == base
    except ValueError:  # pragma: no cover - only reachable with Windows drive letters
        return False


def _parse_local(
    ctx: _Entry, obj: Mapping[str, object], origin: Origin, protocol: str | None
) -> LocalServer:
    plugin = origin == "plugin"
    if plugin and ctx.plugin_root is None:
        ctx.fail(
            "a plugin's local server needs the plugin root (the plugin_root option)",
            "command",
        )
    if ctx.plugin_root is not None and not os.path.isabs(ctx.plugin_root):
        ctx.fail(
            "the plugin root must be an absolute path"
            if plugin
            else "the file's directory (plugin_root) must be an absolute path",
            "command",
        )
    if ctx.plugin_data is not None and not os.path.isabs(ctx.plugin_data):
        ctx.fail("the plugin data directory must be an absolute path", "command")
    root = None if ctx.plugin_root is None else os.path.normpath(ctx.plugin_root)

    command = obj["command"]
    if not isinstance(command, str):
        ctx.fail(f"'command' must be a string, not {json_type_name(command)}", "command")
    if plugin:
        assert root is not None  # refused above
        command = _command(ctx, command, root)
    else:
        command = _user_command(ctx, command, root)

    args: list[str] = []
    if "args" in obj:
        raw_args = obj["args"]
        if not isinstance(raw_args, list):
            ctx.fail(f"'args' must be an array of strings, not {json_type_name(raw_args)}", "args")
        for i, arg in enumerate(raw_args):
            if not isinstance(arg, str):
                ctx.fail(f"args[{i}] must be a string, not {json_type_name(arg)}", f"args[{i}]")
            value = ctx.expand(arg, f"args[{i}]", f"args[{i}]", plugin_dirs=True)
            if "\x00" in value:
                ctx.fail(f"args[{i}] contains a NUL character", f"args[{i}]")
            args.append(value)

    child_env: dict[str, str] = {}
    if "env" in obj:
        for var, raw_value in ctx.check_object(obj["env"], "'env'", "env").items():
            key = f"env.{var}"
            label = f"env {shown_key(var)}"
            if var.upper() in _RESERVED_ENV:
                ctx.fail(f"{label}: PLUGIN_ROOT and PLUGIN_DATA are set by the client", key)
            if not var or "=" in var or "\x00" in var:
                ctx.fail(f"{label}: not a valid environment variable name", key)
            if not isinstance(raw_value, str):
                ctx.fail(f"{label} value must be a string, not {json_type_name(raw_value)}", key)
            value = ctx.expand(raw_value, f"{label} value", key, plugin_dirs=True, said=label)
            if "\x00" in value:
                ctx.fail(f"{label} value contains a NUL character", key)
            child_env[var] = value

    cwd = root or ""
    if "cwd" in obj:
        if plugin:
            assert root is not None
            cwd = _resolve_cwd(ctx, obj["cwd"], root)
        else:
            cwd = _user_cwd(ctx, obj["cwd"], root)
    return LocalServer(
        name=ctx.name,
        command=command,
        args=tuple(args),
        env=child_env,
        cwd=cwd,
        plugin_root=ctx.plugin_root or "",
        plugin_data=ctx.plugin_data,
        protocol=protocol,
    )


def _command(ctx: _Entry, command: str, root: str) -> str:
    """A plugin's ``command`` (C6): one token, a bare name or a ``./`` path inside the root."""
    if not command or re.search(r"[\s\x00-\x1f\x7f]", command):
        ctx.fail(
            "'command' must be one executable token (no spaces; not a shell command)", "command"
        )
    if command.startswith("./"):
        resolved = os.path.normpath(os.path.join(root, command[2:]))
        if resolved == root or not _inside(root, resolved):
            ctx.fail("'command' must name a file inside the plugin root", "command")
        return resolved
    if "/" in command or "\\" in command or command in (".", ".."):
        ctx.fail(
            "'command' must be a bare executable name or a path starting with './' "
            "(relative to the plugin root); a plugin may not name an absolute path",
            "command",
        )
    return command


def _user_command(ctx: _Entry, command: str, root: str | None) -> str:
    """The user's own ``command`` (C9): a bare name, an absolute path, or a path
    relative to the file's directory. Still one executable, not a shell command:
    a space is allowed only inside a path (``/Applications/My App/bin/server``)."""
    if not command or re.search(r"[\t\n\r\v\f\x00-\x1f\x7f]", command):
        ctx.fail("'command' must be one executable (not a shell command)", "command")
    is_path = "/" in command or "\\" in command or command in (".", "..")
    if not is_path and " " in command:
        ctx.fail(
            "'command' must be one executable, not a shell command: put its arguments in 'args'",
            "command",
        )
    if not is_path:
        return command
    if os.path.isabs(command):
        return os.path.normpath(command)
    if root is None:
        ctx.fail(
            "'command' is a relative path, and there is no file directory to resolve it "
            "against (plugin_root); give an absolute path",
            "command",
        )
    resolved = os.path.normpath(os.path.join(root, command))
    if resolved == root:
        ctx.fail("'command' names a directory, not an executable", "command")
    return resolved


def _user_cwd(ctx: _Entry, raw: object, root: str | None) -> str:
    """The user's own ``cwd`` (C9): any directory; a relative one is taken from the
    file's directory."""
    if not isinstance(raw, str):
        ctx.fail(f"'cwd' must be a string, not {json_type_name(raw)}", "cwd")
    cwd = ctx.expand(raw, "cwd", "cwd", plugin_dirs=True)
    if "\x00" in cwd:
        ctx.fail("'cwd' contains a NUL character", "cwd")
    if not cwd:
        return root or ""
    if os.path.isabs(cwd):
        return os.path.normpath(cwd)
    if root is None:
        ctx.fail(
            "'cwd' is a relative path, and there is no file directory to resolve it "
            "against (plugin_root); give an absolute path",
            "cwd",
        )
    return os.path.normpath(os.path.join(root, cwd))


def _resolve_cwd(ctx: _Entry, raw: object, root: str) -> str:
    """``cwd``: plugin-relative, or rooted at ``${PLUGIN_ROOT}`` / ``${PLUGIN_DATA}`` (C6)."""
    if not isinstance(raw, str):
        ctx.fail(f"'cwd' must be a string, not {json_type_name(raw)}", "cwd")
    base, where = root, "the plugin root"
    for marker, directory, label in (
        ("${PLUGIN_ROOT}", ctx.plugin_root, "the plugin root"),
        ("${PLUGIN_DATA}", ctx.plugin_data, "the plugin data directory"),
    ):
        if raw.startswith(marker):
            rest = raw[len(marker) :]
            if directory is None:
                option = "plugin_root" if marker == "${PLUGIN_ROOT}" else "plugin_data"
                ctx.fail(f"'cwd' uses {marker}, but {label} was not given ({option})", "cwd")
            if rest and not rest.startswith(("/", os.sep)):
                ctx.fail(f"'cwd' must continue with '/' after {marker}", "cwd")
            base, where = os.path.normpath(directory), label
            tail = ctx.expand(rest, "cwd", "cwd", plugin_dirs=True).lstrip("/" + os.sep)
            break
    else:
        tail = ctx.expand(raw, "cwd", "cwd", plugin_dirs=True)
        if os.path.isabs(tail) or os.path.splitdrive(tail)[0]:
            ctx.fail(
                "'cwd' must be relative to the plugin root or start with "
                "${PLUGIN_ROOT} or ${PLUGIN_DATA}",
                "cwd",
            )
    if "\x00" in tail:
        ctx.fail("'cwd' contains a NUL character", "cwd")
    resolved = os.path.normpath(os.path.join(base, tail))
    if not _inside(base, resolved):
        ctx.fail(f"'cwd' must stay inside {where}", "cwd")
    return resolved
