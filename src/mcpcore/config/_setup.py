"""What both drivers decide the same way before and around I/O, kept in one place.

``ClientOptions`` are the options every driver's ``McpClient`` takes;
``prepare_client`` turns a name, a server (object, raw entry or ``ConfigError``)
and those options into a validated ``ClientSetup`` — never raising for an
invalid or refused entry (seed 000: such a client is installed unavailable).
``child_environment`` is S2's environment for a local server. The caller's
environment and home directory are arguments: the core never reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from ..base._errors import ConfigError, InvalidValue
from ..base._escape import excerpt
from ..base._events import LogMessage, ResourceUpdated
from ..base._record import record
from ..base._tools import ascii_lower
from ..features._input_options import InputOptions
from ..session._session import SUPPORTED_PROTOCOL_VERSIONS, SessionOptions, positive_seconds
from ..wire._http import HeaderSource, HttpLimits
from ..wire._modern import LOG_LEVELS, MODERN_VERSIONS
from ..wire._outbound import OutboundPolicy, choose_proxy
from ..wire._stdio import DEFAULT_GRACE, child_environment
from ._config import (
    LOCAL_NOT_SUPPORTED,
    LocalServer,
    RemoteServer,
    check_remote_headers,
    load_mcp_json,
    parse_server,
    server_name,
)

if TYPE_CHECKING:
    from ..auth._authorizing import AuthOptions
    from ..base._filters import ToolFilter
    from ..features._pins import PinStore

__all__ = [
    "LOCAL_REFUSED",
    "ClientOptions",
    "ClientSetup",
    "child_environment",
    "choose_proxy",
    "hub_entries",
    "prepare_client",
]

LOCAL_REFUSED = LOCAL_NOT_SUPPORTED  # the one wording (C6)


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
    ``close_grace`` (3.0)
        How long a local server gets to exit on its own once closing has
        closed its stdin, before its process group is terminated (and killed a
        second later); closing takes this plus 2 s at the most (S3). A server
        that watches stdin exits well within it; a program about to exit may
        pass less, so that a server that does not watch stdin costs it less.
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
        2026-07-28; or a protocol version to use exactly that one. Left out, an
        entry of the user's own file may pin one with its ``"protocol"`` key (C9).
    ``proxy`` (from the environment)
        The HTTP proxy for a remote server and every host its OAuth flow
        reaches, each host judged on its own: ``"http://[user:password@]host:port"``
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
        For a hub, a mapping of server names to ``AuthOptions`` gives each
        entry its own (another store, another ``subject``, W1).
    ``include`` / ``exclude`` (None)
        Tool filters (V4): lists of glob patterns (``"search_*"``) matched
        against each tool's original name, case-insensitively; a pattern
        holding the separator matches the whole tool id (``"github/search*"``).
        A tool is offered when ``include`` (if given) names it and ``exclude``
        does not. A hidden tool is never listed, registered or callable
        (calling it raises ``UnknownTool`` naming the filter). For a hub, either
        option may map server names to lists, one list per entry.
    ``log_level`` (None)
        Ask the server for its log messages from this level up (F8): one of
        ``"debug"``, ``"info"``, ``"notice"``, ``"warning"``, ``"error"``,
        ``"critical"``, ``"alert"``, ``"emergency"``. In the handshake era it is
        sent as ``logging/setLevel`` once each session is up (when the server
        declares ``logging``); at 2026-07-28 every request carries it. Left
        out, nothing is asked.
    ``on_log`` (None)
        Receives each of the server's log messages as a ``LogMessage`` (F8):
        a function (a coroutine function too, in ``mcpcore_anyio``); what it
        raises is logged. Its ``logger`` and ``data`` are untrusted server
        values. Left out, the messages go to the ``mcpcore.server`` logger,
        escaped and cut short.
    ``on_resource_updated`` (None)
        Receives each ``ResourceUpdated`` (server, uri, title) for a resource
        the host subscribed to with ``subscribe_resource(uri)`` (F2): a function
        (a coroutine function too, in ``mcpcore_anyio``); what it raises is
        logged. Left out, updates are logged at debug and dropped.
    ``on_list_changed`` (None)
        Called as ``on_list_changed(server, what)`` when the server says its
        list of ``"tools"``, ``"resources"`` or ``"prompts"`` changed (F2, F5):
        a function (a coroutine function too, in ``mcpcore_anyio``); what it
        raises is logged. At 2026-07-28 it is what makes the client ask for
        those changes on ``subscriptions/listen``. Nothing is re-listed on its
        own (tools are, with ``auto_refresh``).
    ``honour_cache_hints`` (False)
        E7, F9: a re-list within the ``ttlMs`` a 2026-07-28 server gave its last
        answer is served from that answer (``refresh()``, ``list_resources()``,
        ``list_resource_templates()``, ``list_prompts()``); a notification that
        the list changed, or a new session, ends it early. Off, every re-list asks
        the server.
    ``headers`` (None)
        Headers computed per request (V3): a callable ``headers(method, server)``
        → a mapping of header names to values, added to the entry's own headers
        (a name it gives replaces the entry's). ``method`` is the JSON-RPC method
        the HTTP request carries (``None`` for the GET stream, the ``DELETE`` on
        close and an answer to the server); ``server`` is the client's name. For a
        hub, a mapping of server names to callables gives each entry its own.
        It runs synchronously as each request is built, and for a request of
        the host (a call, a read, a listing...) always in its caller's context:
        the engine keeps a copy of it (``contextvars.copy_context()``) for every
        HTTP request that carries the call, wherever it is built (a further
        ``input_required`` round, a page, a re-send after a new session), so a
        value the caller set in a ``contextvars.ContextVar`` (the tenant) is
        always seen. A request the client sends of its own (the handshake, a
        re-list, a notice, the GET stream, ``DELETE``) runs it in the client's
        own context. It
        must be quick and must not block (it is not a hook the client waits on:
        keep a token cache it reads, refreshed elsewhere). What it returns passes
        the checks of configured headers (C5); a callable that raises or returns
        anything else fails that request alone, with a reason that names the
        header or the exception's type, never a value. Its values are secrets:
        never shown, and cut out of server text (C8).
    ``tracing`` (False)
        OpenTelemetry for every request the host makes (V2; the ``otel`` extra,
        ``opentelemetry-api``): a CLIENT span named ``{method} {target}`` as a
        child of the caller's current span, the ``mcp.client.operation.duration``
        histogram, and the caller's W3C trace context (``traceparent``,
        ``tracestate``, ``baggage``) in the request's ``params._meta``. Spans go
        to the global tracer and meter providers. Without the package installed,
        ``tracing=True`` raises ``InvalidValue``; off, nothing of it is loaded.
    ``elicit_url`` (False)
        With the driver's ``elicit`` hook: take URL questions too (declared as
        ``elicitation.url``): the hook then also receives questions whose
        ``mode`` is ``"url"``, to show and ask consent for, never opened by the
        library (Q2).
    ``elicit_defaults`` (False)
        With the driver's ``elicit`` hook: fill the fields an accepted form
        leaves out from the form's own defaults, and tell the server so
        (``applyDefaults``, Q1).
    ``input_timeout`` (600.0)
        How long the ``elicit`` hook may take to answer one question before
        the call it belongs to fails (Q5); the call's own time limit holds too.
    ``tasks`` (False)
        Declare the tasks extension (T7): a server may then run a call as a
        task, which ``call()`` follows to its end (polling), and tools the
        server says must run as tasks are listed (hidden otherwise, with a
        warning). ``start_task()`` returns a ``TaskHandle`` instead. For a hub,
        a mapping of server names to flags turns it on per entry.
    ``task_timeout`` (3600.0)
        How long a call may follow its task once the server accepted it (T9);
        the request that creates the task keeps ``call_timeout``.
    ``cancel_tasks_on_close`` (False)
        Closing the client cancels the tasks its calls follow (``tasks/cancel``);
        left off, they run on and may be picked up with ``resume_task()``.
    ``seal_key`` (None)
        Seal what the client gives out to be kept (U2): every ``Continuation``
        and ``TaskHandle`` carries an HMAC-SHA256 of its canonical form under
        this key, and ``to_json()`` writes it; every one given back
        (``resume``, ``resume_task``, ``task_status``, ``cancel_task``) must
        carry a seal that matches, or ``SealBroken`` is raised and nothing is
        sent (a bare task id is refused too). Bytes or text, or a sequence of
        keys to rotate them: the first seals, any of them is accepted. The key
        is a secret: never shown.
    ``pins`` (``"warn"``)
        What a tool whose definition (name, title, description, schemas,
        annotations) changed since it was first listed does (U1): ``"warn"``
        logs it and reports it in the sync report's ``pins``; ``"block"``
        also withholds the tool (out of ``tools`` and ``register_into``;
        calling it raises ``ToolChanged``) until ``accept_change(tool_id)``.
    ``pin_store`` (a ``MemoryPinStore`` of the client's own)
        Where pins outlive the client (a ``PinStore``, such as
        ``mcpcore_stores.SqlitePinStore``): read when the client starts,
        written as tools are pinned and changes accepted, always off the
        event loop. A hub's clients may share one: pins are per server.
    ``pin_subject`` (``"default"``)
        Whose pins these are (the host's user or tenant): pins are kept per
        server and per subject.
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
    close_grace: float
    plugin_root: str | None
    plugin_data: str | None
    client_name: str
    protocol: str
    proxy: str
    auth: AuthOptions | Mapping[str, AuthOptions | None] | None
    include: Sequence[str] | Mapping[str, Sequence[str]] | None
    exclude: Sequence[str] | Mapping[str, Sequence[str]] | None
    log_level: str
    on_log: Callable[[LogMessage], object] | None
    on_resource_updated: Callable[[ResourceUpdated], object] | None
    on_list_changed: Callable[[str, str], object] | None
    honour_cache_hints: bool
    tracing: bool
    headers: HeaderSource | Mapping[str, HeaderSource] | None
    elicit_url: bool
    elicit_defaults: bool
    input_timeout: float
    tasks: bool | Mapping[str, bool]
    task_timeout: float
    cancel_tasks_on_close: bool
    seal_key: bytes | str | Sequence[bytes | str] | None  # U2: one key, or newest first
    pins: Literal["warn", "block"]
    pin_store: PinStore | None
    pin_subject: str


@record(frozen=True, slots=True)
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
    # Who may be contacted for ``server`` and through which proxy, per request
    # (the drivers' pools ask it for each origin; None for a local server).
    outbound: OutboundPolicy | None = None
    # S3: seconds a local server gets to exit on its own once its stdin closed.
    close_grace: float = DEFAULT_GRACE
    # V2: the driver gives the engine an OpenTelemetry observer (mcpcore_otel).
    tracing: bool = False
    # V3: the headers= callable for this server (its repr may hold a secret: never shown).
    headers: HeaderSource | None = field(default=None, repr=False)
    # U1: where pins outlive the client (None: in memory only), and whose they are.
    pin_store: PinStore | None = None
    pin_subject: str = "default"


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
        tool_filter=_tool_filter(options, lowered, separator),
        log_level=_log_level(options.get("log_level")),
        log_events=_hook("on_log", options.get("on_log")) is not None,
        update_events=_hook("on_resource_updated", options.get("on_resource_updated")) is not None,
        list_events=_hook("on_list_changed", options.get("on_list_changed")) is not None,
        honour_cache_hints=bool(options.get("honour_cache_hints", False)),
        credentials_vary=options.get("headers") is not None,
        input=InputOptions(
            elicit_url=bool(options.get("elicit_url", False)),
            apply_defaults=bool(options.get("elicit_defaults", False)),
            timeout=positive_seconds(options.get("input_timeout", 600.0), "input_timeout"),
        ),
        tasks=_per_server_flag(options.get("tasks", False), lowered, "tasks"),
        task_timeout=positive_seconds(options.get("task_timeout", 3600.0), "task_timeout"),
        cancel_tasks_on_close=bool(options.get("cancel_tasks_on_close", False)),
        seal_keys=_seal_keys(options.get("seal_key")),
        pins=_pins_policy(options.get("pins", "warn")),
    )
    allow_local = options.get("allow_local", False)
    plugin_root = options.get("plugin_root")
    proxy: str | None = None
    outbound: OutboundPolicy | None = None
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
            check_remote_headers(server)  # C5: a server built in code has its headers checked too
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
            outbound = OutboundPolicy.for_server(
                resolved.url,
                env=env,
                proxy=options.get("proxy"),
                allow_insecure_http=options.get("allow_insecure_http", False),
            )
    except ConfigError as exc:
        error = exc
    if resolved is not None and resolved.protocol is not None and "protocol" not in options:
        # E1, C9: the user's entry pins a revision; the protocol= option, when given, wins.
        session = dataclasses.replace(session, protocol=resolved.protocol)
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
        outbound=outbound,
        auth=_auth(options.get("auth"), resolved, lowered),
        close_grace=positive_seconds(options.get("close_grace", DEFAULT_GRACE), "close_grace"),
        tracing=_flag(options.get("tracing", False), "tracing"),
        headers=_header_source(options.get("headers"), lowered),
        pin_store=options.get("pin_store"),
        pin_subject=_pin_subject(options.get("pin_subject")),
    )


def _seal_keys(value: object) -> tuple[bytes, ...]:
    """U2: the ``seal_key`` option as keys, newest first (none when left out)."""
    if value is None:
        return ()
    from ..base._seal import seal_keys  # loaded by a client that seals (B5)

    try:
        return seal_keys(value)
    except InvalidValue as exc:
        raise InvalidValue(f"seal_key: {exc}") from None


def _pins_policy(value: object) -> Literal["warn", "block"]:
    """U1: the ``pins=`` option (``InvalidValue`` for anything but its two words)."""
    if value == "warn" or value == "block":
        return value
    raise InvalidValue('pins must be "warn" or "block"')


def _pin_subject(value: object) -> str:
    """U1: whose pins (``"default"``, mcpcore's default subject, when left out)."""
    if value is None:
        return "default"
    if not isinstance(value, str) or not value:
        raise InvalidValue("pin_subject must be a non-empty string")
    return value


def _header_source(value: object, server: str) -> HeaderSource | None:
    """V3: ``headers=`` for the client named ``server``: a callable, or a hub's
    mapping of server names to callables (an entry not named there has none)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        for name, chosen in value.items():
            if not callable(chosen):  # fixed headers belong in the server's entry
                raise InvalidValue(
                    f"headers[{excerpt(repr(name), 40)}] must be a callable (method, server)"
                )
        return cast("HeaderSource | None", value.get(server))
    if not callable(value):
        raise InvalidValue(
            "headers must be a callable (method, server) -> headers, or a mapping of "
            "server names to such callables"
        )
    return cast("HeaderSource", value)


def _per_server_flag(value: object, server: str, option: str) -> bool:
    """A flag for the client named ``server``: ``True``/``False``, or a hub's mapping
    of server names to flags (an entry not named there: ``False``)."""
    if isinstance(value, Mapping):
        for name, flag in value.items():
            _flag(flag, f"{option}[{excerpt(repr(name), 40)}]")
        return bool(value.get(server, False))
    return _flag(value, option)


def _flag(value: object, option: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"{option} must be True or False, not a {type(value).__name__}")
    return value


def _auth(
    value: object, server: RemoteServer | LocalServer | None, name: str
) -> AuthOptions | None:
    """A3: ``auth=`` for a remote server, checked now (``InvalidValue``), not at start.
    A hub's mapping of server names to ``AuthOptions`` gives each entry its own
    (its own store or subject, W1); an entry not named there has none."""
    if value is None:
        return None
    from ..auth._authorizing import AuthOptions
    from ..auth._oauth import OAuthFlow

    if isinstance(value, Mapping):
        for key, each in value.items():
            if each is not None and not isinstance(each, AuthOptions):
                raise TypeError(f"auth[{excerpt(repr(key), 40)}] must be an AuthOptions (or None)")
        value = {ascii_lower(str(key)): each for key, each in value.items()}.get(name)
        if value is None:
            return None
    if not isinstance(value, AuthOptions):
        raise TypeError("auth must be an AuthOptions (or None)")
    if not isinstance(server, RemoteServer):
        return None  # a local server or an invalid entry: nothing to authorize
    config = value.config(server.url, interactive=False)
    if config.dpop and config.dpop_key is None:
        from dataclasses import replace

        config = replace(config, dpop=False)  # N1: the driver makes the key at start
    OAuthFlow(config, token_bytes=bytes)  # raises if unusable
    return value


def _tool_filter(options: ClientOptions, server: str, separator: str) -> ToolFilter | None:
    """V4: the include/exclude filter; ``_filters`` loads only when one is given (B5)."""
    include, exclude = options.get("include"), options.get("exclude")
    if include is None and exclude is None:
        return None
    from ..base._filters import tool_filter

    return tool_filter(include, exclude, server=server, separator=separator)


def _protocol(value: object) -> str:
    known = ("auto", "legacy", "modern", *MODERN_VERSIONS, *SUPPORTED_PROTOCOL_VERSIONS)
    if value not in known:
        raise InvalidValue(
            f"protocol must be one of {', '.join(repr(k) for k in known)}, not {excerpt(repr(value), 40)}"
        )
    return str(value)


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


def _log_level(level: object) -> str | None:
    """F8: a log level the protocol names, or None; anything else is the caller's mistake."""
    if level is None or level in LOG_LEVELS:
        return level
    raise InvalidValue(
        f"log_level must be one of {', '.join(LOG_LEVELS)}, not {excerpt(repr(level), 40)}"
    )


def _hook(name: str, callback: object) -> object:
    if callback is not None and not callable(callback):
        raise TypeError(f"{name} must be a function, not {type(callback).__name__}")
    return callback
