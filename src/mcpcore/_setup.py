"""What both drivers decide the same way before and around I/O, kept in one place.

``ClientOptions`` are the options every driver's ``McpClient`` takes;
``prepare_client`` turns a name, a server (object, raw entry or ``ConfigError``)
and those options into a validated ``ClientSetup`` — never raising for an
invalid or refused entry (seed 000: such a client is installed unavailable).
``child_environment`` is S2's environment for a local server, and
``describe_failure`` words a connection failure without secrets. The host's
environment and home directory are arguments: the core never reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from ._config import LocalServer, RemoteServer, load_mcp_json, parse_server
from ._errors import ConfigError
from ._http import HttpLimits
from ._session import SessionOptions

__all__ = [
    "LOCAL_REFUSED",
    "ClientOptions",
    "ClientSetup",
    "child_environment",
    "describe_failure",
    "hub_entries",
    "prepare_client",
]

LOCAL_REFUSED = "local MCP servers (command) are not supported yet"

# S2: what a local server inherits from the host, besides its entry's env.
INHERITED_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "USER", "TERM")


class ClientOptions(TypedDict, total=False):
    """Options of ``McpClient`` in both drivers (seconds for times)."""

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


@dataclass(frozen=True, slots=True)
class ClientSetup:
    """A validated client: its session options, limits and server, or why it has none."""

    session: SessionOptions
    limits: HttpLimits
    listen: bool
    max_connections: int
    server: RemoteServer | LocalServer | None
    config_error: ConfigError | None


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
    session = SessionOptions(
        server_name=name,
        client_name=options.get("client_name", "mcpcore"),
        startup_timeout=options.get("startup_timeout", 120.0),
        call_timeout=options.get("call_timeout", 300.0),
        extend_on_progress=options.get("extend_on_progress", False),
        call_timeout_max=options.get("call_timeout_max", 3600.0),
        separator=options.get("separator", "/"),
        policy=options.get("policy", "error"),
        auto_refresh=options.get("auto_refresh", False),
        max_pages=options.get("max_pages", 1000),
        max_tools=options.get("max_tools", 10_000),
    )
    allow_local = options.get("allow_local", False)
    resolved: RemoteServer | LocalServer | None = None
    error: ConfigError | None = None
    try:
        if isinstance(server, ConfigError):
            raise server
        if isinstance(server, LocalServer) and not allow_local:
            raise ConfigError(LOCAL_REFUSED, key="command")  # C6
        if isinstance(server, (RemoteServer, LocalServer)):
            resolved = server
        else:
            resolved = parse_server(
                name,
                server,
                env=env,
                home=home,
                plugin_root=options.get("plugin_root"),
                plugin_data=options.get("plugin_data"),
                allow_local=allow_local,
                allow_insecure_http=options.get("allow_insecure_http", False),
            )
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
        session=session,
        limits=options.get("limits") or HttpLimits(),
        listen=listen,
        max_connections=max_connections,
        server=resolved,
        config_error=error,
    )


def child_environment(server: LocalServer, inherited: Mapping[str, str]) -> dict[str, str]:
    """S2: a minimal inherited environment, the plugin directories, then the entry's env."""
    environment = {k: inherited[k] for k in INHERITED_VARIABLES if k in inherited}
    environment["PLUGIN_ROOT"] = server.plugin_root
    if server.plugin_data is not None:
        environment["PLUGIN_DATA"] = server.plugin_data
    environment.update(server.env)
    return environment


def describe_failure(exc: BaseException) -> str:
    """A connection failure in words: the exception and its causes, never a header.

    Some backends raise with an empty message and keep the reason (say, a
    certificate error) in the exception chain, so the chain is walked.
    """
    texts: list[str] = []
    current: BaseException | None = exc
    while current is not None and len(texts) < 3:
        text = str(current)
        if text and text not in texts:
            texts.append(text)
        current = current.__cause__ or current.__context__
    name = type(exc).__name__
    return f"{name}: {'; '.join(texts)}" if texts else name


def hub_entries(
    text: str | bytes, options: Mapping[str, Any], *, env: Mapping[str, str], home: str
) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    """L7, C2: an ``mcp.json`` document → one outcome per server, keyed by client name.

    A valid entry is named by its server name (the key lowercased in ASCII); an
    invalid one keeps its key as written. Raises ``ConfigError`` when the top
    level is invalid (C1).
    """
    outcomes = load_mcp_json(
        text,
        env=env,
        home=home,
        plugin_root=options.get("plugin_root"),
        plugin_data=options.get("plugin_data"),
        allow_local=options.get("allow_local", False),
        allow_insecure_http=options.get("allow_insecure_http", False),
    )
    return {
        (key if isinstance(outcome, ConfigError) else outcome.name): outcome
        for key, outcome in outcomes.items()
    }
