"""An OAuth-protected MCP server: the official Python SDK 2.3 ``MCPServer`` with its own
authorization server (``mcp.server.auth``), on loopback.

Run as a subprocess::

    python tests/servers/protected_sdk_server.py PORT [--token-ttl SECONDS] [--expires-in SECONDS]
        [--no-step-up] [--keep-registered-scope] [--keep-auth-method]
        [--events-file PATH] [--log-level LEVEL]

One origin, ``http://127.0.0.1:PORT``, is both the authorization server (the
issuer) and the resource server; readiness is detected by polling the port.
The SDK serves, from ``AuthSettings`` and an ``OAuthAuthorizationServerProvider``:

* ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728; ``scopes_supported``
  is ``["mcp:read"]``, the ``required_scopes``);
* ``/.well-known/oauth-authorization-server`` (RFC 8414; PKCE S256,
  ``client_secret_post``/``client_secret_basic``);
* ``/register`` (RFC 7591 dynamic client registration; scopes ``mcp:read`` and
  ``mcp:admin`` are valid, ``mcp:read`` is the default);
* ``/authorize``: the provider approves at once, with no page and no person:
  HTTP 302 to ``redirect_uri?code=...&state=...``;
* ``/token``: ``authorization_code`` and ``refresh_token`` grants; access
  tokens live ``--token-ttl`` seconds (under one more: the expiry is rounded
  up to a whole second); ``expires_in`` says ``--expires-in``, by default the
  same (a larger ``--expires-in`` makes tokens die before the client expects,
  so the server answers 401 to a token the client holds valid); refresh
  tokens do not expire and rotate on use;
* ``/mcp``: Streamable HTTP (both eras the SDK speaks), bearer-protected by the
  SDK (401 with ``WWW-Authenticate: Bearer ... resource_metadata=...``), tokens
  bound to the resource ``http://127.0.0.1:PORT/mcp`` (``validate_token_resource``).

Tools: ``whoami()`` returns ``"client=<client_id> scopes=<granted scopes>"``;
with step-up (the default) also ``admin_action()``, returning ``"admin action
done"``, which needs scope ``mcp:admin``. The SDK has no per-tool scopes, so a
small ASGI gate in front of the SDK app reads the JSON-RPC body of each POST
to ``/mcp``: a ``tools/call`` of ``admin_action`` whose (valid) token lacks
``mcp:admin`` is answered HTTP 403 ``WWW-Authenticate: Bearer
error="insufficient_scope", scope="mcp:admin", resource_metadata="..."``.

Two provider policies differ from what the SDK does by itself (each flag
restores the SDK's behaviour):

* registered scope (``--keep-registered-scope``): the SDK's ``/authorize``
  refuses (``invalid_scope``) any scope the client did not register with, and
  clients (mcpcore, and the SDK's own client) keep their dynamic registration
  when they step up; so the provider records every registered client as
  allowed all valid scopes (consent, not the registration, limits the grant);
* token endpoint authentication (``--keep-auth-method``): the SDK's
  ``ClientAuthenticator`` demands ``client_id`` in the token request body even
  with HTTP Basic client authentication, which mcpcore does not send; so a
  client registering for ``client_secret_basic`` is registered (and told, in
  the registration response) ``client_secret_post`` instead.

Event lines, printed to stdout (flushed) and appended to ``--events-file``:

``register client_id=<id> scope=<registered scope> auth_method=<method>``
``authorize client_id=<id> scope=<requested scopes> resource=<resource>``
``token grant=authorization_code scope=<scopes>`` / ``token grant=refresh_token scope=<scopes>``
``token refused grant=refresh_token (...)``: an unknown or already used refresh token
``call whoami scopes=<scopes>`` / ``call admin_action scopes=<scopes>``
``insufficient_scope admin_action scopes=<scopes>`` (the gate's 403)
``http <status> <verb> <JSON-RPC method or ->`` for every ``/mcp`` answer of 400 or more.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

READ_SCOPE = "mcp:read"
ADMIN_SCOPE = "mcp:admin"
VALID_SCOPES = [READ_SCOPE, ADMIN_SCOPE]
CODE_LIFETIME = 300

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class EventLog:
    """Prints one line per event to stdout (flushed) and appends it to a file if given."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def record(self, line: str) -> None:
        print(line, flush=True)
        if self.path:
            # Open/append/close per line so readers always see whole lines promptly.
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")


class AutoApproveProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """An in-memory ``OAuthAuthorizationServerProvider`` that approves every request at once."""

    def __init__(
        self,
        events: EventLog,
        *,
        token_ttl: int,
        expires_in: int,
        keep_registered_scope: bool,
        keep_auth_method: bool,
    ) -> None:
        self.events = events
        self.token_ttl = token_ttl
        self.expires_in = expires_in
        self.keep_registered_scope = keep_registered_scope
        self.keep_auth_method = keep_auth_method
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, AccessToken] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # Policies that deviate from the SDK's defaults; see the module docstring.
        if not self.keep_registered_scope:
            client_info.scope = " ".join(VALID_SCOPES)
        if (
            not self.keep_auth_method
            and client_info.token_endpoint_auth_method == "client_secret_basic"
        ):
            client_info.token_endpoint_auth_method = "client_secret_post"
        self.clients[client_info.client_id] = client_info
        self.events.record(
            f"register client_id={client_info.client_id} scope={client_info.scope} "
            f"auth_method={client_info.token_endpoint_auth_method}"
        )

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        scopes = params.scopes or [READ_SCOPE]
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=scopes,
            expires_at=time.time() + CODE_LIFETIME,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="test-user",
        )
        self.events.record(
            f"authorize client_id={client.client_id} scope={' '.join(scopes)} resource={params.resource}"
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        found = self.codes.get(authorization_code)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError(
                error="invalid_grant", error_description="authorization code already used"
            )
        self.events.record(
            f"token grant=authorization_code scope={' '.join(authorization_code.scopes)}"
        )
        return self._issue(
            authorization_code.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh_tokens.get(refresh_token)
        if found is None or found.client_id != client.client_id:
            self.events.record("token refused grant=refresh_token (unknown or already used)")
            return None
        return found

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh_tokens.pop(refresh_token.token, None) is None:  # rotation
            self.events.record("token refused grant=refresh_token (already used)")
            raise TokenError(error="invalid_grant", error_description="refresh token already used")
        self.events.record(f"token grant=refresh_token scope={' '.join(scopes)}")
        return self._issue(
            refresh_token.client_id, scopes, refresh_token.resource, refresh_token.subject
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access_tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None
    ) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        self.access_tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=math.ceil(time.time()) + self.token_ttl,  # valid >= token_ttl s
            resource=resource,
            subject=subject,
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.expires_in,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


class StepUpGate:
    """ASGI gate in front of the SDK app: per-tool scope for ``admin_action`` (403
    ``insufficient_scope``), and an ``http <status> ...`` event for every refused ``/mcp`` request."""

    def __init__(
        self,
        app: ASGIApp,
        provider: AutoApproveProvider,
        events: EventLog,
        *,
        resource_metadata_url: str,
        step_up: bool,
    ) -> None:
        self.app = app
        self.provider = provider
        self.events = events
        self.resource_metadata_url = resource_metadata_url
        self.step_up = step_up

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != "/mcp":
            await self.app(scope, receive, send)
            return
        verb = scope["method"]
        buffered: list[Message] = []
        message: Any = None
        if verb == "POST":
            body = b""
            while True:
                received = await receive()
                buffered.append(received)
                if received["type"] != "http.request":
                    break
                body += received.get("body", b"")
                if not received.get("more_body", False):
                    break
            try:
                message = json.loads(body)
            except ValueError:
                message = None
        method = message.get("method", "-") if isinstance(message, dict) else "-"
        if self.step_up and method == "tools/call" and _tool_name(message) == "admin_action":
            access = await self.provider.load_access_token(_bearer(scope) or "")
            if access is not None and ADMIN_SCOPE not in access.scopes:
                self.events.record(
                    f"insufficient_scope admin_action scopes={' '.join(access.scopes)}"
                )
                await self._forbid(send)
                return

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        async def watch(out: Message) -> None:
            if out["type"] == "http.response.start" and out["status"] >= 400:
                self.events.record(f"http {out['status']} {verb} {method}")
            await send(out)

        await self.app(scope, replay, watch)

    async def _forbid(self, send: Send) -> None:
        body = json.dumps(
            {"error": "insufficient_scope", "error_description": f"Required scope: {ADMIN_SCOPE}"}
        ).encode()
        challenge = (
            f'Bearer error="insufficient_scope", scope="{ADMIN_SCOPE}", '
            f'resource_metadata="{self.resource_metadata_url}", '
            f'error_description="admin_action needs {ADMIN_SCOPE}"'
        )
        self.events.record("http 403 POST tools/call")
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _tool_name(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            text = bytes(value).decode("latin-1")
            if text.lower().startswith("bearer "):
                return text[7:].strip()
    return None


def _scopes() -> str:
    token = get_access_token()
    return " ".join(token.scopes) if token is not None else "<none>"


def build_server(
    port: int,
    events: EventLog,
    *,
    token_ttl: int,
    expires_in: int,
    step_up: bool,
    keep_registered_scope: bool,
    keep_auth_method: bool,
    log_level: str,
) -> tuple[MCPServer, AutoApproveProvider, AuthSettings]:
    origin = f"http://127.0.0.1:{port}"
    provider = AutoApproveProvider(
        events,
        token_ttl=token_ttl,
        expires_in=expires_in,
        keep_registered_scope=keep_registered_scope,
        keep_auth_method=keep_auth_method,
    )
    auth = AuthSettings(
        issuer_url=origin,  # type: ignore[arg-type]
        resource_server_url=f"{origin}/mcp",  # type: ignore[arg-type]
        validate_token_resource=True,
        required_scopes=[READ_SCOPE],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=VALID_SCOPES, default_scopes=[READ_SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    mcp = MCPServer(
        "protected-sdk",
        auth_server_provider=provider,
        auth=auth,
        log_level=log_level,  # type: ignore[arg-type]
    )

    @mcp.tool(structured_output=False)
    def whoami() -> str:
        """Who the bearer token says the caller is."""
        token = get_access_token()
        scopes = _scopes()
        events.record(f"call whoami scopes={scopes}")
        client = token.client_id if token is not None else "<none>"
        return f"client={client} scopes={scopes}"

    if step_up:

        @mcp.tool(structured_output=False)
        def admin_action() -> str:
            """An action that needs scope mcp:admin (HTTP 403 insufficient_scope without it)."""
            events.record(f"call admin_action scopes={_scopes()}")
            return "admin action done"

    return mcp, provider, auth


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument(
        "--token-ttl", type=int, default=3600, help="access token lifetime, seconds"
    )
    parser.add_argument(
        "--expires-in",
        type=int,
        default=None,
        help="the expires_in told to clients (default: --token-ttl)",
    )
    parser.add_argument(
        "--no-step-up", dest="step_up", action="store_false", help="no admin_action"
    )
    parser.add_argument(
        "--keep-registered-scope",
        action="store_true",
        help="the SDK's rule: only scopes a client registered with can be authorized",
    )
    parser.add_argument(
        "--keep-auth-method",
        action="store_true",
        help="keep the token endpoint auth method a client registered with (client_secret_basic)",
    )
    parser.add_argument("--events-file", default=None)
    parser.add_argument("--log-level", default=os.environ.get("SDK_SERVER_LOG_LEVEL", "WARNING"))
    args = parser.parse_args(argv)

    events = EventLog(args.events_file)
    mcp, provider, auth = build_server(
        args.port,
        events,
        token_ttl=args.token_ttl,
        expires_in=args.token_ttl if args.expires_in is None else args.expires_in,
        step_up=args.step_up,
        keep_registered_scope=args.keep_registered_scope,
        keep_auth_method=args.keep_auth_method,
        log_level=args.log_level.upper(),
    )
    assert auth.resource_server_url is not None
    app = StepUpGate(
        mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"),
        provider,
        events,
        resource_metadata_url=str(build_resource_metadata_url(auth.resource_server_url)),
        step_up=args.step_up,
    )
    print(
        f"protected_sdk_server: http://127.0.0.1:{args.port}/mcp token_ttl={args.token_ttl} "
        f"step_up={args.step_up}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level=args.log_level.lower(),
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
