"""The OAuth flow's registration phase: which client identity to use, and registering one.

``Registration`` chooses the scope to ask for (O19-O22), the client
(pre-registered, a client ID metadata document, a stored registration or a new
one: O24-O29) and performs dynamic client registration (O26, O27, O30),
then hands on to the authorization phase.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..base._escape import excerpt
from ._oauth_errors import (
    ClientRegistrationRequired,
    MalformedResponse,
    OAuthError,
    RegistrationError,
    RegistrationUnusable,
)
from ._oauth_rules import (
    _AUTH_METHODS,
    _JSON,
    _SHOWN,
    _choose_method,
    _covers,
    _number,
    _opt_str,
    _parse_json_object,
    _redirect_registered,
    _str_list,
    _union_scopes,
    issuers_match,
)
from ._oauth_types import (
    ClientRecord,
    Purpose,
    SaveClient,
    _as_method,
    _Exchange,
    _Metadata,
    _Phase,
    _Run,
)

if TYPE_CHECKING:
    from ._oauth_base import FlowBase

__all__ = ["Registration"]


class Registration:
    """The scope and the client identity of a run (O19-O30)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def scope_for(self, run: _Run) -> str | None:
        """O19 first time; O22 union on every re-authorization; O21 offline_access."""
        flow = self.flow
        granted = flow._tokens.scope if flow._tokens else None
        previous = _union_scopes(flow._requested_scope, granted)
        base: str | None
        if previous:
            base = _union_scopes(previous, run.challenge_scope)  # O22
        elif flow.config.scope is not None:
            base = _union_scopes(flow.config.scope, run.challenge_scope)
        else:
            # O19: the challenge's scope, else PRM scopes_supported, else none (never
            # the AS's scopes_supported).
            base = run.challenge_scope or " ".join(flow._prm_scopes) or None
        meta = flow._metadata
        if (
            base
            and flow.config.grant == "authorization_code"
            and flow.config.want_refresh_tokens
            and meta is not None
            and "offline_access" in meta.scopes_supported
        ):
            base = _union_scopes(base, "offline_access")
        return base

    def client_for(self, meta: _Metadata, now: float) -> ClientRecord | None:
        """O24: pre-registered → CIMD → a stored DCR client still usable (O28) → None."""
        flow = self.flow
        pre = flow.config.preregistered
        if pre is not None:
            if pre.issuer is not None and not issuers_match(pre.issuer, meta.issuer):
                raise RegistrationError(
                    f"the pre-registered client is bound to issuer "
                    f"{excerpt(pre.issuer, _SHOWN)!r}, but the server uses "
                    f"{excerpt(meta.issuer, _SHOWN)!r} (O29)"
                )
            method = _choose_method(pre.auth_method, meta.auth_methods, bool(pre.client_secret))
            return ClientRecord(
                client_id=pre.client_id,
                client_secret=pre.client_secret,
                auth_method=_as_method(method),
                redirect_uris=(flow.config.redirect_uri,),
                issuer=meta.issuer,
                kind="pre",
            )
        if flow.config.client_metadata_url and meta.cimd:
            return ClientRecord(
                client_id=flow.config.client_metadata_url,
                auth_method="none",
                redirect_uris=(flow.config.redirect_uri,),
                issuer=meta.issuer,
                kind="cimd",
            )
        stored = flow._clients.get(meta.issuer)
        if stored is not None:
            expiry = stored.client_secret_expires_at
            if (
                stored.kind == "dcr"
                and (not expiry or expiry > now)
                and _redirect_registered(flow.config.redirect_uri, stored.redirect_uris)
                and _covers(stored.scope, flow._need_run().scope)
            ):
                return stored
            flow._clients.pop(meta.issuer, None)
        if meta.registration_endpoint is None:
            raise ClientRegistrationRequired(
                f"the authorization server {excerpt(meta.issuer, _SHOWN)!r} offers no "
                "dynamic registration or client ID metadata documents; configure a client "
                "id (O24)"
            )
        return None

    def register(self, now: float) -> None:
        """O26: dynamic client registration."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        methods = meta.auth_methods
        if not methods or "none" in methods:
            method = "none"
        else:
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in methods), "none"
            )
        grant_types = ["authorization_code"]
        if flow.config.want_refresh_tokens:
            grant_types.append("refresh_token")
        body: dict[str, Any] = {
            "redirect_uris": [flow.config.redirect_uri],
            "client_name": flow.config.client_name,
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": flow.config.application_type,
        }
        if run.scope:
            body["scope"] = run.scope
        flow._phase = _Phase.REGISTERING
        headers = [(b"content-type", _JSON), (b"accept", _JSON)]
        url = meta.registration_endpoint or ""
        flow._send(Purpose.REGISTER, "POST", url, headers, json.dumps(body).encode("utf-8"))

    def on_register(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        meta = flow._need_metadata()
        if 300 <= ex.status < 400:
            flow._fail(flow._redirect("the registration endpoint", ex.status))
            return
        if ex.status >= 500 or ex.status == 429:
            flow._fail(flow._transient("client registration", ex))
            return
        if ex.status not in (200, 201):
            code, description = flow._oauth_error(ex.body)
            flow._fail(
                RegistrationError(
                    f"client registration failed with HTTP {ex.status}"
                    + (f": {code}" if code else "")
                    + (f" ({description})" if description else "")
                    + " (O30)",
                    status=ex.status,
                    error=code,
                )
            )
            return
        what = "the registration response"
        try:
            doc = _parse_json_object(bytes(ex.body), what)
            client_id = _opt_str(doc, "client_id", what)
            if client_id is None:
                raise MalformedResponse(f"{what} has no 'client_id'")
            secret = _opt_str(doc, "client_secret", what)
            expires = doc.get("client_secret_expires_at")
            if isinstance(expires, str):
                raise MalformedResponse(f"{what}: 'client_secret_expires_at' is not a number")
            # 0 (or absent) means the secret does not expire (RFC 7591 3.2.1)
            secret_expiry = (
                None if expires is None else _number(expires, what, "client_secret_expires_at")
            )
            registered = _opt_str(doc, "token_endpoint_auth_method", what)
            uris = _str_list(doc, "redirect_uris", what) or (flow.config.redirect_uri,)
            method = _choose_method(registered, meta.auth_methods, bool(secret))
            if method not in _AUTH_METHODS or method == "private_key_jwt":
                raise RegistrationUnusable(
                    f"the registered client must authenticate with "
                    f"{excerpt(method, 60)!r}, which this client cannot do (O27)"
                )
            if method != "none" and not secret:
                raise RegistrationUnusable(
                    f"the registered client must authenticate with {method} but the "
                    "registration gave no secret (O27)"
                )
        except OAuthError as error:
            flow._fail(error)
            return
        granted = doc.get("scope")
        client = ClientRecord(
            client_id=client_id,
            client_secret=secret,
            client_secret_expires_at=secret_expiry or None,
            auth_method=_as_method(method),
            redirect_uris=uris,
            issuer=meta.issuer,
            kind="dcr",
            # only a scope the server answered with binds the client (RFC 7591 3.2.1)
            scope=granted if isinstance(granted, str) else None,
        )
        flow._remember(secret)
        flow._clients[meta.issuer] = client
        flow._emit(SaveClient(issuer=meta.issuer, client=client))
        run = flow._need_run()
        run.client = client
        flow.authorization.start(now)
