"""Connecting to the servers a command names: a URL on the command line (its
``-H`` headers; plain http only to loopback without ``--allow-http``, C5) or the
entries of an mcp.json (``--config FILE``; local servers only with
``--allow-local``, C6). Here are the client for one server (the tokens ``login``
kept, A3, and what every command declares), the wait until it is ready, why it
is not (the sign-in hint when that is why), and a command about the same server,
ready to paste into a hint.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpcore import (
    AuthOptions,
    AuthorizationRequired,
    Availability,
    CallTimeout,
    ConfigError,
    LocalServer,
    RemoteServer,
    load_mcp_json,
    parse_server,
)

from ._ask import TerminalAsker
from ._common import (
    CLOSE_GRACE,
    DEFAULT_CONNECT_TIMEOUT,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    LOCAL_NEEDS_FLAG,
    Cli,
    UsageError,
)
from ._declared import client_hooks, credential_headers, in_cli_words, limit_hint
from ._protocol import protocol_options, protocol_words
from ._term import one_line, quote, show
from ._tokens import FileTokenStore, SignInStore, StoreView, TokenFileError, default_store

if TYPE_CHECKING:
    from mcpcore_threaded import McpClient

__all__ = [
    "Outcome",
    "check_connection_flags",
    "chosen_servers",
    "client_for",
    "command_for",
    "each_ready",
    "ensure_ready",
    "hint_refusals",
    "invalid_entry",
    "invalid_reason",
    "load_config",
    "login_hint",
    "needs_login",
    "not_ready",
    "outcome_name",
    "ready_by",
    "split_operands",
    "token_store",
    "url_server",
]


_SERVER_PREFIX = re.compile(r"""^server (?:'[^']*'|"[^"]*"): """)


# --- configuration errors and flags ----------------------------------------------------


def _entry_reason(exc: ConfigError) -> str:
    """An invalid entry's reason without the leading "server 'name': " (shown apart)."""
    return _SERVER_PREFIX.sub("", str(exc), count=1)


def _local_refused(exc: ConfigError, args: argparse.Namespace) -> bool:
    """A local entry refused only because --allow-local was not given (C6): without
    it, the core refuses every entry with a ``command`` before reading it further."""
    return exc.key == "command" and not getattr(args, "allow_local", False)


def invalid_reason(exc: ConfigError, args: argparse.Namespace) -> str:
    """Why an entry is invalid, in the command line's words: a flag it lacks is named."""
    if _local_refused(exc, args):
        return str(getattr(args, "local_refusal", LOCAL_NEEDS_FLAG))
    return _entry_reason(exc)


def invalid_entry(name: str, exc: ConfigError, args: argparse.Namespace) -> str:
    shown = show(invalid_reason(exc, args), keep_newlines=False)
    return f"server {quote(name)} is invalid: {shown}"


def _globs(values: list[str] | None) -> list[str] | None:
    """--include/--exclude values: repeated and comma-separated, edge spaces dropped."""
    if values is None:
        return None
    return [glob.strip() for value in values for glob in value.split(",") if glob.strip()]


def _parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``-H 'Name: value'`` arguments → a headers mapping. Messages never show a value."""
    headers: dict[str, str] = {}
    seen: set[str] = set()
    for number, value in enumerate(values, 1):
        name, colon, rest = value.partition(":")
        name = name.strip()
        if not colon or not name:
            raise UsageError(
                f"-H #{number}: expected 'Name: value' (the header name, a colon, the value)"
            )
        if name.lower() in seen:
            raise UsageError(f"-H #{number}: header {quote(name)} is given more than once")
        seen.add(name.lower())
        headers[name] = rest.strip()
    return headers


# --- servers ---------------------------------------------------------------------------


Outcome = RemoteServer | LocalServer | ConfigError


def _home() -> str:
    return os.path.expanduser("~")


_PLAIN_HTTP = "plain http to a non-loopback host"


def url_server(cli: Cli, args: argparse.Namespace, url: str) -> RemoteServer:
    """A server given on the command line: plain http only to loopback unless
    ``--allow-http`` (C5)."""
    headers = _parse_headers(args.header)
    entry: dict[str, Any] = {"url": url}
    if headers:
        entry["headers"] = headers
    try:
        server = parse_server(
            args.name, entry, env=os.environ, home=_home(), allow_insecure_http=args.allow_http
        )
    except ConfigError as exc:
        if _PLAIN_HTTP in str(exc):
            raise ConfigError(f"{exc}; --allow-http allows it", key=exc.key) from None
        raise
    assert isinstance(server, RemoteServer)
    cli.redact.add(server.headers.values())
    return server


def load_config(cli: Cli, path: str, args: argparse.Namespace) -> dict[str, Outcome]:
    """The outcomes of an mcp.json; local entries allowed with ``--allow-local``, their
    plugin root the file's directory."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {quote(path)}: {exc.strerror or exc}") from None
    plugin_root = os.path.dirname(os.path.abspath(path)) if args.allow_local else None
    try:
        outcomes = load_mcp_json(
            data,
            env=os.environ,
            home=_home(),
            plugin_root=plugin_root,
            allow_local=args.allow_local,
            allow_insecure_http=args.allow_http,
            origin="user",  # the user's own file, not a plugin's (C9)
        )
    except ConfigError as exc:
        raise _about_file(exc, path) from None
    for outcome in outcomes.values():
        if isinstance(outcome, RemoteServer):
            cli.redact.add(outcome.headers.values())
    return outcomes


def _about_file(exc: ConfigError, path: str) -> ConfigError:
    """A whole-file error naming the file given (not "mcp.json"); the core's message
    already suggests 'mcpServers' for a file in VS Code's format."""
    message = str(exc)
    if message.startswith("mcp.json"):
        message = quote(path) + message[len("mcp.json") :]
    return ConfigError(message, key=exc.key)


def hint_refusals(cli: Cli, outcomes: Iterable[Outcome], args: argparse.Namespace) -> None:
    """Say once which option lifts a refusal the user may not know is optional (the
    local-server refusal names its flag itself)."""
    for outcome in outcomes:
        if (
            isinstance(outcome, ConfigError)
            and not _local_refused(outcome, args)
            and _PLAIN_HTTP in _entry_reason(outcome)
        ):
            cli.hint("--allow-http allows plain http:// to hosts other than loopback")


def outcome_name(key: str, outcome: Outcome) -> str:
    return key if isinstance(outcome, ConfigError) else outcome.name


def client_for(
    cli: Cli,
    server: Outcome,
    name: str,
    args: argparse.Namespace,
    *,
    elicit: TerminalAsker | None = None,
    extra: Mapping[str, Any] | None = None,
) -> McpClient:
    """The client of one server for a command; ``extra``: options of the command's own
    (the pins of ``pins`` and ``check``, U1)."""
    from mcpcore_threaded import McpClient  # imported when needed: a quick --help

    timeout: float | None = args.timeout
    options: dict[str, Any] = {
        "startup_timeout": timeout or DEFAULT_CONNECT_TIMEOUT,
        "allow_local": args.allow_local,
        "allow_insecure_http": args.allow_http,
        "close_grace": CLOSE_GRACE,
        # T7: the command line follows tasks (the library's default is off)
        "tasks": not getattr(args, "no_tasks", False),
    }
    if timeout is not None:
        options["call_timeout"] = timeout
    options.update(protocol_options(args))  # E1: else the entry's own pin, else auto
    for option in ("include", "exclude"):
        globs = _globs(getattr(args, option, None))
        if globs is not None:
            options[option] = globs
    auth = _stored_auth(cli, server, args)
    if auth is not None:
        options["auth"] = auth
    # The same capabilities for every command (Q6: call's questions are asked, or
    # declined), --log-level and --max-message-size: decided in one place.
    options.update(client_hooks(cli, args, elicit))
    options.update(extra or {})
    return McpClient(name, server, **options)


def _stored_auth(cli: Cli, server: Outcome, args: argparse.Namespace) -> AuthOptions | None:
    """OAuth with the tokens ``login`` stored, and no way to ask a person (A3): for a
    remote server that does not bring its own credentials (``Authorization``, an API
    key: ``credential_headers``)."""
    if not isinstance(server, RemoteServer):
        return None
    if credential_headers(server.headers):
        # A static credential (-H or the mcp.json: Authorization, an API key...): never
        # a second Authorization, and a 401 is said as it is, not as "run login".
        return None
    store = token_store(cli, args)
    return AuthOptions(
        store=StoreView(store, keep_new_clients=False), allow_insecure_http=args.allow_http
    )


def token_store(cli: Cli, args: argparse.Namespace) -> FileTokenStore | SignInStore:
    """The run's token store (``--token-file``'s JSON file, else the default), checked
    once: an unusable one is a configuration error."""
    if cli.tokens is None:
        store = default_store(args.token_file or None)
        try:
            store.check()
        except TokenFileError as exc:
            raise cli.fail(EXIT_USAGE, show(str(exc), keep_newlines=False)) from None
        cli.tokens = store
    return cli.tokens


def needs_login(availability: Availability) -> bool:
    """The server needs a person to sign in, and this client cannot ask one."""
    return not availability.ok and isinstance(availability.error, AuthorizationRequired)


def login_hint(args: argparse.Namespace, server: RemoteServer, config: str | None) -> str:
    """The sign-in hint: needs authorization: run `mcpcore login …` (ready to paste)."""
    words = ["mcpcore", "login"]
    if config is not None:
        words += ["--config", config, "--server", server.name]
    elif server.display_url == server.url:
        words.append(server.url)
    else:
        words.append("URL")  # the URL has a secret part (user info, query): not shown
    if getattr(args, "allow_http", False) and not server.url.startswith("https:"):
        words.append("--allow-http")
    if getattr(args, "token_file", None):
        words += ["--token-file", args.token_file]
    command = " ".join(w if w == "URL" else shlex.quote(one_line(w)) for w in words)
    suffix = " (with the same URL)" if "URL" in words else ""
    return f"needs authorization: run `{command}`{suffix}"


def not_ready(
    args: argparse.Namespace,
    name: str,
    server: Outcome | None,
    availability: Availability,
    *,
    config: str | None,
) -> str:
    """Why a server is not ready, as a message: the sign-in hint when that is why."""
    if needs_login(availability) and isinstance(server, RemoteServer):
        return f"server {quote(name)} {login_hint(args, server, config)}"
    reason = in_cli_words(availability.reason or "unavailable", availability.error)
    shown = show(reason, keep_newlines=False)
    lifted = limit_hint(availability.error)
    refused = getattr(availability.error, "status", None) in (401, 403)
    given = credential_headers(server.headers) if isinstance(server, RemoteServer) else []
    if refused and given and not lifted:
        names = ", ".join(quote(n) for n in given)
        lifted = f"the server did not accept the credentials given in {names}"
    return f"server {quote(name)} is unavailable: {shown}" + (f"; {lifted}" if lifted else "")


def ensure_ready(
    cli: Cli,
    client: McpClient,
    timeout: float | None,
    *,
    args: argparse.Namespace | None = None,
    server: Outcome | None = None,
    config: str | None = None,
) -> None:
    budget = timeout or DEFAULT_CONNECT_TIMEOUT
    availability = ready_by(client, time.monotonic() + budget, budget)
    if not availability.ok:
        if args is not None and server is not None:
            text = not_ready(args, client.name, server, availability, config=config)
            raise cli.fail(EXIT_UNAVAILABLE, text)
        reason = show(availability.reason or "unavailable", keep_newlines=False)
        raise cli.fail(EXIT_UNAVAILABLE, f"server {quote(client.name)} is unavailable: {reason}")


def ready_by(client: McpClient, deadline: float, budget: float) -> Availability:
    """Wait for a server until ``deadline`` (``budget`` seconds from the start); one
    still starting then is said so in the user's terms: what it waited for, and for
    how long (the whole budget, not what was left of it for this server)."""
    availability = client.ready(max(0.0, deadline - time.monotonic()))
    timed_out = isinstance(availability.error, CallTimeout) or (
        availability.error is None and time.monotonic() >= deadline
    )
    if availability.ok or not timed_out:
        return availability
    reason = (
        f"not ready within {budget:g} s: still connecting, or listing its tools "
        "(--timeout S waits longer)"
    )
    return Availability(False, reason)


def check_connection_flags(args: argparse.Namespace, url: str | None) -> None:
    if args.config is not None and url is not None:
        raise UsageError("give either a URL or --config FILE, not both")
    if args.config is None and url is None:
        raise UsageError("give a server URL or --config FILE")
    if args.config is not None and args.header:
        raise UsageError("-H applies to a URL; with --config, put the headers in the file")
    if getattr(args, "server", None) is not None and args.config is None:
        raise UsageError("--server applies to --config")
    if args.allow_local and args.config is None:
        raise UsageError("--allow-local applies to --config (local servers are mcp.json entries)")


def command_for(
    args: argparse.Namespace,
    server: RemoteServer | LocalServer,
    config: str | None,
    verb: str,
    *extra: str,
) -> str:
    """A ``mcpcore`` command about the same server, ready to paste (a URL with a secret
    part, user info or a query, is left out: "URL")."""
    words = ["mcpcore", verb]
    if config is not None:
        words += ["--config", config, "--server", server.name]
        if getattr(args, "allow_local", False):
            words.append("--allow-local")
    elif isinstance(server, RemoteServer) and server.display_url == server.url:
        words.append(server.url)
    else:
        words.append("URL")
    if config is None and getattr(args, "name", "server") != "server":
        words += ["--name", args.name]
    if getattr(args, "allow_http", False):
        words.append("--allow-http")
    if getattr(args, "token_file", None):
        words += ["--token-file", args.token_file]
    words += protocol_words(args)
    words += extra
    command = " ".join(w if w == "URL" else shlex.quote(one_line(w)) for w in words)
    if "URL" in words:
        command += " (with the same URL)"
    if config is None and getattr(args, "header", None):
        command += " (with the same -H headers)"
    return command


# --- the server forms of resources, read, prompts, prompt and task ---------------------


def chosen_servers(
    cli: Cli, args: argparse.Namespace, url: str | None, *, single: bool
) -> dict[str, RemoteServer | LocalServer | ConfigError]:
    """The servers a command is for: the URL's, or the --config file's (--server NAME
    picks one; a single-server command needs it unless the file has one server)."""
    check_connection_flags(args, url)
    if url is not None:
        server = url_server(cli, args, url)
        return {server.name: server}
    outcomes = load_config(cli, args.config, args)
    selected = {outcome_name(k, o).lower(): o for k, o in outcomes.items()}
    if args.server is not None:
        wanted = args.server.lower()
        if wanted not in selected:
            names = ", ".join(quote(n) for n in selected) or "none"
            raise UsageError(
                f"no server {quote(args.server)} in {quote(args.config)} (its servers: {names})"
            )
        return {wanted: selected[wanted]}
    if single and len(selected) != 1:
        raise UsageError(f"with --config, --server NAME says which server of {quote(args.config)}")
    return selected


def each_ready(
    cli: Cli,
    args: argparse.Namespace,
    servers: dict[str, RemoteServer | LocalServer | ConfigError],
    use: Callable[[str, McpClient], None],
) -> int:
    """Run ``use`` on every ready server; the exit status says whether all were."""
    from mcpcore_threaded import McpHub

    status = EXIT_OK
    for name, outcome in servers.items():
        if isinstance(outcome, ConfigError):
            cli.err(invalid_entry(name, outcome, args))
            status = EXIT_USAGE
    valid = {n: o for n, o in servers.items() if not isinstance(o, ConfigError)}
    hub = McpHub({n: client_for(cli, o, n, args) for n, o in valid.items()})
    config = args.config
    with hub:
        budget = args.timeout or DEFAULT_CONNECT_TIMEOUT
        deadline = time.monotonic() + budget
        for name, client in hub.clients.items():
            availability = ready_by(client, deadline, budget)
            if not availability.ok:
                cli.err(not_ready(args, name, valid[name], availability, config=config))
                if status == EXIT_OK:
                    status = EXIT_UNAVAILABLE
                continue
            use(name, client)
    return status


def split_operands(
    args: argparse.Namespace, wanted: int, what: str
) -> tuple[str | None, list[str]]:
    """(URL or None, the command's own operands); ``wanted`` is how many it takes at most."""
    operands: list[str] = list(args.operands)
    url = None
    if args.config is None and operands:
        url = operands.pop(0)
    if len(operands) > wanted:
        form = "--config FILE" if args.config is not None else "URL"
        raise UsageError(f"expected {form} {what}, got {len(args.operands)} operands")
    return url, operands
