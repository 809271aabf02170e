"""``mcpcore login``, ``logout`` and ``auth status``.

OAuth (A1-A3): ``login`` signs in through the system browser and a loopback
redirect listener and keeps the tokens in a store only its owner can read
(``_tokens.default_store``: SQLite, or the JSON file ``--token-file`` names); ``tools``, ``call`` and ``check`` use those tokens
(refreshing them when they can) but never ask a person: a server that needs a
sign-in is unavailable with "run `mcpcore login …`" (``_connect``). No token,
refresh token, code, verifier or client secret is ever printed. ``logout``
forgets a server's tokens (they are not revoked); ``auth status`` lists the
servers signed in to, with issuer, scopes and expiry.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from mcpcore import AuthOptions, ConfigError, RemoteServer, TokenSet

from ._common import (
    DEFAULT_LOGIN_TIMEOUT,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    LOGIN_MARGIN,
    Cli,
    UsageError,
)
from ._connect import (
    hint_refusals,
    invalid_entry,
    load_config,
    outcome_name,
    token_store,
    url_server,
)
from ._term import cut, dumps, one_line, quote, show, table, write
from ._tokens import StoreView, default_store

if TYPE_CHECKING:
    from ._login import LoopbackListener

__all__ = ["cmd_auth", "cmd_login", "cmd_logout"]


# --- sign-in: login, logout, auth status ---------------------------------------------


def _one_server(cli: Cli, args: argparse.Namespace) -> RemoteServer:
    """The one remote server ``login`` / ``logout`` is about: URL, or --config + --server."""
    if args.config is not None and args.url is not None:
        raise UsageError("give either a URL or --config FILE --server NAME, not both")
    if args.config is None and args.url is None:
        raise UsageError("give a server URL or --config FILE --server NAME")
    if args.config is None:
        if args.server is not None:
            raise UsageError("--server applies to --config")
        return url_server(cli, args, args.url)
    if args.header:
        raise UsageError("-H applies to a URL; with --config, put the headers in the file")
    if args.server is None:
        raise UsageError("with --config, name the server: --server NAME")
    outcomes = load_config(cli, args.config, args)
    found = {outcome_name(k, o).lower(): o for k, o in outcomes.items()}
    wanted = args.server.lower()
    if wanted not in found:
        raise UsageError(f"no server {quote(args.server)} in {quote(args.config)}")
    outcome = found[wanted]
    if isinstance(outcome, ConfigError):
        failure = cli.fail(EXIT_USAGE, invalid_entry(wanted, outcome, args), kind="config")
        hint_refusals(cli, [outcome], args)
        raise failure
    if not isinstance(outcome, RemoteServer):  # pragma: no cover - local entries are refused
        raise UsageError(f"server {quote(args.server)} is not a remote (url) server")
    return outcome


def _server_shown(server: RemoteServer) -> str:
    return f"server {quote(server.name)} ({show(server.display_url, keep_newlines=False)})"


def _when(epoch: float) -> str:
    """An instant as ISO 8601 in UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _span(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def _expiry(expires_at: float | None, now: float) -> str:
    if expires_at is None:
        return "no expiry given"
    if expires_at <= now:
        return f"expired {_when(expires_at)} ({_span(now - expires_at)} ago)"
    return f"expires {_when(expires_at)} (in {_span(expires_at - now)})"


def _tokens_shown(tokens: TokenSet, now: float) -> str:
    """Issuer, scopes, expiry and refresh: never a token's text (A4)."""
    scopes = one_line(tokens.scope) if tokens.scope else "(not stated)"
    refresh = "refreshable" if tokens.refresh_token else "not refreshable"
    issuer = show(tokens.issuer, keep_newlines=False)
    return f"issuer {issuer}, scopes {scopes}, {_expiry(tokens.expires_at, now)}, {refresh}"


class _BrowserSignIn:
    """The ``authorize`` hook of ``login`` (A3), run on a driver thread: print the URL,
    open the browser (unless ``--no-browser``), wait for the loopback listener."""

    def __init__(
        self, cli: Cli, listener: LoopbackListener, *, open_browser: bool, timeout: float
    ) -> None:
        self.cli = cli
        self.listener = listener
        self.open_browser = open_browser
        self.timeout = timeout
        self.asked = False
        self.failure: str | None = None

    def __call__(self, url: str, redirect_uri: str) -> str:
        import webbrowser
        from urllib.parse import parse_qsl, urlsplit

        from ._login import ListenerClosed, ListenerTimeout, state_of

        self.asked = True
        if redirect_uri != self.listener.redirect_uri:  # pragma: no cover - the flow's own
            self.failure = "the sign-in was to come back elsewhere than this listener"
            raise RuntimeError(self.failure)
        state = state_of(url)
        if not state:  # pragma: no cover - the flow always sends one
            self.failure = "the authorization URL carries no state"
            raise RuntimeError(self.failure)
        self.listener.expect_state(state)
        # The URL holds the PKCE challenge and the state, never a secret.
        write(
            self.cli.stderr,
            self.cli.redact(f"Open this URL to sign in: {show(url, keep_newlines=False)}"),
        )
        if self.open_browser:
            try:
                opened = webbrowser.open(url)
            except Exception:  # a broken browser setting: the URL is printed anyway
                opened = False
            if not opened:
                self.cli.err("could not start a browser: open the URL above yourself")
        self.cli.err(f"waiting for the sign-in (at most {self.timeout:g} s; Ctrl-C cancels)")
        try:
            answer = self.listener.wait(self.timeout, state)
        except ListenerTimeout as exc:
            self.failure = str(exc)
            raise
        except ListenerClosed:
            raise  # the command is ending: it has its own reason
        # A refusal is the flow's to act on; its words are kept for the message (the
        # client's own reason for it may be a later attempt's).
        params = dict(parse_qsl(urlsplit(answer).query))
        if "error" in params:
            said = params["error"]
            if params.get("error_description"):
                said += f" ({params['error_description']})"
            self.failure = f"the authorization server refused: {cut(one_line(said), 200)}"
        return answer


def cmd_login(cli: Cli, args: argparse.Namespace) -> int:
    from mcpcore_threaded import McpClient

    from ._login import LoopbackListener

    server = _one_server(cli, args)
    if any(name.lower() == "authorization" for name in server.headers):
        raise UsageError(
            f"{_server_shown(server)} is given its own Authorization header (a static "
            "token): there is nothing to sign in to"
        )
    store = token_store(cli, args)
    before = store.get_tokens(server.url)
    timeout: float = args.timeout or DEFAULT_LOGIN_TIMEOUT
    try:
        # Bound (port 0) before anything else: the redirect URI names a port that is ours.
        listener = LoopbackListener()
    except OSError as exc:
        raise cli.fail(
            EXIT_UNAVAILABLE, f"cannot listen on 127.0.0.1 for the sign-in: {exc.strerror or exc}"
        ) from None
    hook = _BrowserSignIn(cli, listener, open_browser=not args.no_browser, timeout=timeout)
    auth = AuthOptions(
        store=StoreView(store, hide_tokens_of=server.url),  # sign in afresh
        redirect_uri=listener.redirect_uri,
        scope=args.scope,
        user_wait=timeout + 10,  # the listener's own timeout comes first, and says so
        allow_insecure_http=args.allow_http,
    )
    with (
        listener,
        McpClient(
            server.name,
            server,
            auth=auth,
            authorize=hook,
            startup_timeout=timeout + LOGIN_MARGIN,
            allow_insecure_http=args.allow_http,
        ) as client,
    ):
        availability = client.ready(timeout + LOGIN_MARGIN)
    if store.write_error is not None:
        raise cli.fail(EXIT_USAGE, show(str(store.write_error), keep_newlines=False))
    after = store.get_tokens(server.url)
    signed_in = hook.asked and after is not None and after != before
    if not availability.ok and not signed_in:
        reason = hook.failure or availability.reason or "unavailable"
        raise cli.fail(
            EXIT_UNAVAILABLE,
            f"signing in to {_server_shown(server)} failed: {show(reason, keep_newlines=False)}",
        )
    if not signed_in:
        cli.err(f"{_server_shown(server)} did not ask for authorization: nothing to sign in to")
        return EXIT_OK
    assert after is not None
    cli.out(f"signed in to {_server_shown(server)}: {_tokens_shown(after, time.time())}")
    cli.err(f"tokens kept in {quote(str(store.path))}")
    if not availability.ok:
        reason = show(availability.reason or "unavailable", keep_newlines=False)
        raise cli.fail(EXIT_UNAVAILABLE, f"but the server is unavailable: {reason}")
    return EXIT_OK


def cmd_logout(cli: Cli, args: argparse.Namespace) -> int:
    if args.all:
        if args.url is not None or args.config is not None or args.server is not None:
            raise UsageError("--all forgets every server: give no URL, --config or --server")
        # Not checked first: removing a corrupt or unsafe token file is the way out.
        store = default_store(args.token_file or None)
        if store.forget_all():
            cli.out(f"removed the token file {quote(str(store.path))}")
        else:
            cli.err(f"no token file at {quote(str(store.path))}: nothing to forget")
        return EXIT_OK
    server = _one_server(cli, args)
    store = token_store(cli, args)
    removed = store.forget_server(server.url)
    if not removed:
        cli.err(f"no tokens kept for {_server_shown(server)}: nothing to forget")
        return EXIT_OK
    cli.out(
        f"signed out of {_server_shown(server)}: its tokens are forgotten "
        "(not revoked at the authorization server)"
    )
    return EXIT_OK


def cmd_auth(cli: Cli, args: argparse.Namespace) -> int:
    store = token_store(cli, args)
    now = time.time()
    rows: list[dict[str, Any]] = []
    entries = store.entries()
    for entry in entries:
        tokens = entry.tokens
        rows.append(
            {
                "server_url": RemoteServer(name="server", url=entry.key.server_url).display_url,
                "issuer": tokens.issuer,
                "scopes": tokens.scope.split() if tokens.scope else [],
                "expires_at": None if tokens.expires_at is None else _when(tokens.expires_at),
                "expired": tokens.expires_at is not None and tokens.expires_at <= now,
                "refreshable": tokens.refresh_token is not None,
            }
        )
    if args.json:
        cli.out(dumps({"token_file": str(store.path), "servers": rows}))
        return EXIT_OK
    if not rows:
        cli.err(f"not signed in to any server (token file {quote(str(store.path))})")
        return EXIT_OK
    body = []
    for row, entry in zip(rows, entries, strict=True):
        body.append(
            (
                one_line(row["server_url"]),
                one_line(row["issuer"]),
                one_line(" ".join(row["scopes"])) or "-",
                _expiry(entry.tokens.expires_at, now),
                "yes" if row["refreshable"] else "no",
            )
        )
    for line in table(
        ("SERVER", "ISSUER", "SCOPES", "EXPIRY", "REFRESH"),
        body,
        style=cli.style,
        fit=cli.table_width(),
    ):
        cli.out(line)
    cli.err(f"tokens kept in {quote(str(store.path))}")
    return EXIT_OK
