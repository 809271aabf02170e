"""The OAuth flow's token phases: token requests, and refreshing.

``TokenRequests`` performs the code exchange and the client-credentials grant
with the client's authentication (secret, or a signed assertion through the
host, O44, O45, O71, O72) and reads the answer (O46-O48, O54, O55);
``Refresh`` refreshes a token with the endpoint and client recorded with it
(O51-O53, O57), always naming its ``resource``, and starts anew when the
refresh token is refused (O55), by the rules of W4b: the store is read again
under the lock first (another run may have refreshed: its set is taken), only
the set read is deleted, and a refresh ahead of expiry leaves the access token
in use until it expires.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from ..base._errors import InvalidValue
from ._oauth_dpop import key_secrets, token_secrets
from ._oauth_errors import (
    MalformedResponse,
    OAuthError,
    OAuthTransientError,
    TokenError,
)
from ._oauth_rules import (
    _FORM,
    _JSON,
    _JWT_BEARER_ASSERTION,
    _LOCK_POLL,
    _b64url,
    _choose_method,
    _log,
    _number,
    _opt_str,
    _parse_json_object,
    canonical_resource,
    issuers_match,
)
from ._oauth_types import (
    Authorized,
    ClientRecord,
    DeleteTokens,
    LockTokens,
    Purpose,
    SignAssertion,
    TokenSet,
    UnlockTokens,
    _as_method,
    _Exchange,
    _Goal,
    _PendingToken,
    _Phase,
)
from ._store import same_tokens

if TYPE_CHECKING:
    from ._oauth_base import FlowBase

__all__ = ["TokenRequests"]


class TokenRequests:
    """Token requests and their answers (O43-O48, O54, O55, O71, O72)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def client_credentials(self, now: float) -> None:
        """O71: no browser, no registration."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        client = run.client
        assert client is not None
        flow._phase = _Phase.CLIENT_GRANT
        flow._requested_scope = run.scope
        params = [("grant_type", "client_credentials")]
        if run.scope:
            params.append(("scope", run.scope))
        params.append(("resource", flow._resource or canonical_resource(flow.config.server_url)))
        self.request(Purpose.TOKEN_CLIENT_CREDENTIALS, meta.token_endpoint, params, client, now)

    def request(
        self,
        purpose: Purpose,
        url: str,
        params: list[tuple[str, str]],
        client: ClientRecord,
        now: float,
    ) -> None:
        """O44: client authentication; private_key_jwt goes through the host signer."""
        flow = self.flow
        run = flow._need_run()
        run.client = client
        if client.auth_method == "private_key_jwt":
            pre = flow.config.preregistered
            meta = flow._metadata
            audience = meta.issuer if meta is not None else client.issuer
            iat = int(now)
            claims = {
                "iss": client.client_id,
                "sub": client.client_id,
                "aud": audience,
                "iat": iat,
                "exp": iat + int(min(flow.config.assertion_lifetime, 300.0)),
                "jti": _b64url(flow._entropy(16)),
            }
            header: dict[str, Any] = {"alg": pre.signing_alg if pre else "ES256", "typ": "JWT"}
            if pre is not None and pre.key_id:
                header["kid"] = pre.key_id
            signing_input = (
                _b64url(json.dumps(header, separators=(",", ":")).encode("utf-8"))
                + "."
                + _b64url(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
            ).encode("ascii")
            run.assertion_id += 1
            run.pending_token = _PendingToken(purpose=purpose, url=url, params=params)
            flow._resume_phase = flow._phase
            flow._phase = _Phase.SIGNING
            flow._emit(
                SignAssertion(
                    request_id=run.assertion_id,
                    audience=audience,
                    header=header,
                    claims=claims,
                    signing_input=signing_input,
                )
            )
            return
        self.post(purpose, url, params, client, None, now)

    def receive_assertion(self, request_id: int, assertion: str, now: float) -> None:
        """The host signed the ``SignAssertion`` with ``request_id`` (O72)."""
        flow = self.flow
        run = flow._run
        if run is None or flow._phase is not _Phase.SIGNING or request_id != run.assertion_id:
            return
        if not isinstance(assertion, str) or assertion.count(".") != 2 or " " in assertion:
            raise InvalidValue("the assertion must be a compact JWS (header.claims.signature)")
        pending = run.pending_token
        client = run.client
        assert pending is not None and client is not None
        run.pending_token = None
        flow._remember(assertion)
        flow._phase = flow._resume_phase
        self.post(pending.purpose, pending.url, pending.params, client, assertion, now)

    def post(
        self,
        purpose: Purpose,
        url: str,
        params: list[tuple[str, str]],
        client: ClientRecord,
        assertion: str | None,
        now: float,
    ) -> None:
        flow = self.flow
        headers = [(b"content-type", _FORM), (b"accept", _JSON)]
        dpop = flow._dpop_on()
        if dpop is not None:
            # N1: a fresh proof on every token request (RFC 9449 5); kept to be
            # sent once more with the nonce a use_dpop_nonce answer gives.
            headers.append((b"dpop", dpop.proof("POST", url, now)))
            flow._need_run().resend = _PendingToken(purpose=purpose, url=url, params=params)
        body = list(params)
        method = client.auth_method
        if method == "client_secret_basic" and client.client_secret:
            raw = quote(client.client_id, safe="") + ":" + quote(client.client_secret, safe="")
            headers.append((b"authorization", b"Basic " + base64.b64encode(raw.encode("ascii"))))
            # RFC 6749 3.2.1 lets the body name the client too; some authorization
            # servers (the official Python SDK's) refuse a token request without it.
            body.append(("client_id", client.client_id))
        elif method == "client_secret_post" and client.client_secret:
            body += [("client_id", client.client_id), ("client_secret", client.client_secret)]
        elif method == "private_key_jwt" and assertion is not None:
            body += [
                ("client_id", client.client_id),
                ("client_assertion_type", _JWT_BEARER_ASSERTION),
                ("client_assertion", assertion),
            ]
        else:
            body.append(("client_id", client.client_id))
        flow._send(purpose, "POST", url, headers, urlencode(body).encode("ascii"))

    def on_response(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        dpop = flow._dpop_on()
        if dpop is not None:
            dpop.note_nonce(ex.url, ex.headers)  # N1: the nonce is kept per origin
        if 300 <= ex.status < 400:
            flow._fail(flow._redirect("the token endpoint", ex.status))  # O62
            return
        if ex.status >= 500 or ex.status == 429:
            # O55: a refresh that failed this way keeps the tokens.
            flow._fail(flow._transient("the token request", ex))
            return
        if ex.status != 200:
            self.on_error(ex, now)
            return
        try:
            tokens = self.read(ex, now)
        except OAuthError as error:
            flow._fail(error)
            return
        flow._lifetime = None if tokens.expires_at is None else tokens.expires_at - now
        flow._store(tokens)

    def read(self, ex: _Exchange, now: float) -> TokenSet:
        """O46: 200 JSON, a non-empty ``access_token``, ``token_type`` Bearer."""
        flow = self.flow
        what = "the token response"
        doc = _parse_json_object(bytes(ex.body), what)
        access = doc.get("access_token")
        if not isinstance(access, str) or not access:
            raise MalformedResponse(f"{what} has no 'access_token'")
        token_type = doc.get("token_type")
        dpop = flow._dpop_on()
        bound: str | None = None
        export: str | None = None  # N1: the key, kept with the tokens bound to it
        if dpop is not None and isinstance(token_type, str) and token_type.lower() == "dpop":
            bound = dpop.jkt  # N1: bound to the key the proof was made with
            export = dpop.export()
            flow._remember(*key_secrets(export))
        elif not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise MalformedResponse(f"{what}: 'token_type' is not Bearer")
        kind = "DPoP" if bound is not None else "Bearer"
        if not all("!" <= ch <= "~" for ch in access):
            # F3: the token becomes a header value; a line break would add headers
            raise MalformedResponse(f"{what}: 'access_token' has characters outside visible ASCII")
        expires_in = doc.get("expires_in")
        expires_at: float | None = None
        if expires_in is not None:
            expires_at = now + _number(expires_in, what, "expires_in")
        refresh = _opt_str(doc, "refresh_token", what)
        scope = _opt_str(doc, "scope", what)
        run = flow._need_run()
        client = run.client
        assert client is not None
        old = flow._tokens
        if ex.purpose is Purpose.TOKEN_REFRESH and old is not None:
            # O54: keep the old refresh token and scope when omitted; rotate otherwise.
            return replace(
                old,
                access_token=access,
                token_type=kind,
                expires_at=expires_at,
                refresh_token=refresh or old.refresh_token,
                scope=scope or old.scope,
                dpop_jkt=bound,
                dpop_key_export=export,
            )
        meta = flow._need_metadata()
        return TokenSet(
            access_token=access,
            token_type=kind,
            expires_at=expires_at,
            refresh_token=refresh,
            scope=scope or run.scope,  # O23
            issuer=meta.issuer,
            token_endpoint=meta.token_endpoint,
            resource=flow._resource or canonical_resource(flow.config.server_url),
            client_id=client.client_id,
            dpop_jkt=bound,
            dpop_key_export=export,
        )

    def on_error(self, ex: _Exchange, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        code, description = flow._oauth_error(ex.body)
        client = run.client
        dpop = flow._dpop_on()
        if (
            code == "use_dpop_nonce"
            and ex.status == 400
            and dpop is not None
            and dpop.nonce(ex.url) is not None
            and not run.nonce_retried
            and run.resend is not None
            and client is not None
        ):
            # N1 (RFC 9449 8): the token endpoint wants a nonce; the request goes
            # once more with a fresh proof that carries it, never twice.
            run.nonce_retried = True
            pending = run.resend
            # Through ``request``: a private_key_jwt client signs a fresh assertion.
            self.request(pending.purpose, pending.url, pending.params, client, now)
            return
        if ex.purpose is Purpose.TOKEN_REFRESH:
            flow.refresh.refused(ex, code, now)
            return
        if (
            code == "invalid_client"
            and client is not None
            and client.kind == "dcr"
            and not run.client_retry_used
            and ex.purpose is Purpose.TOKEN_CODE
        ):
            # O47: the stored registration is gone; register once more and re-authorize.
            flow._forget_client(client.issuer)
            run.client_retry_used = True
            flow.registration.register(now)
            return
        shown = f": {code}" if code else ""
        detail = f" ({description})" if description else ""
        if ex.purpose is Purpose.TOKEN_JWT_BEARER:
            # N2, N3: the step that failed is named; the assertion never is.
            flow._grant_refused(
                TokenError(
                    "the JWT bearer grant at the authorization server failed with HTTP "
                    f"{ex.status}{shown}{detail}",
                    error=code,
                    status=ex.status,
                    step="jwt_bearer",
                )
            )
            return
        flow._fail(
            TokenError(
                f"the token endpoint refused the request with HTTP {ex.status}{shown}{detail} (O47)",
                error=code,
                status=ex.status,
            )
        )


class Refresh:
    """Refreshing a token (O51-O53, O55, O57)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def start(self, now: float) -> None:
        """O53: to the token endpoint recorded with the token; never scope widening (O57).

        First the store's refresh lock (``LockTokens``): with it held, what the
        store holds now is read, and a set another run stored meanwhile is taken
        instead of refreshing ours (its refresh token may have rotated ours away)."""
        flow = self.flow
        run = flow._need_run()
        if not run.locked:
            flow._phase = _Phase.LOCKING
            run.lock_since = now
            run.lock_tries = 0
            self.ask_lock(now)
            return
        tokens = flow._tokens
        assert tokens is not None and tokens.refresh_token
        run.refreshing = tokens
        flow._phase = _Phase.REFRESHING
        params = [("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token)]
        params.append(("resource", tokens.resource))
        if tokens.scope:
            params.append(("scope", tokens.scope))
        client = self.client_for_tokens(tokens)
        flow.token_requests.request(
            Purpose.TOKEN_REFRESH, tokens.token_endpoint, params, client, now
        )

    def ask_lock(self, now: float) -> None:
        flow = self.flow
        run = flow._need_run()
        flow._lock_attempts += 1
        run.lock_attempt = flow._lock_attempts
        run.lock_retry_at = None
        run.lock_tries += 1
        if run.lock_sign_in is not None:
            flow._sign_in_locks[run.lock_attempt] = run.lock_sign_in
        flow._emit(
            LockTokens(
                lock_id=run.lock_attempt,
                server_url=flow.config.server_url,
                sign_in=run.lock_sign_in,
                subject=flow.config.subject,
            )
        )

    def lock_answered(self, lock_id: int, held: bool, current: TokenSet | None, now: float) -> None:
        """The store's answer to ``LockTokens(lock_id)``: ``held`` the refresh lock is
        ours now; ``current`` the tokens the store holds for the server, read under it."""
        flow = self.flow
        run = flow._run
        sign_in = flow._sign_in_locks.pop(lock_id, None)
        if run is None or flow._phase is not _Phase.LOCKING or lock_id != run.lock_attempt:
            if held:  # a lock no run waits for any more: give it straight back
                flow._emit(
                    UnlockTokens(
                        lock_id=lock_id,
                        server_url=flow.config.server_url,
                        sign_in=sign_in,
                        subject=flow.config.subject,
                    )
                )
            return
        if run.lock_sign_in is not None:
            flow.authorization.lock_answered(held, current, now)
            return
        if not held:
            if now - run.lock_since >= flow.config.request_timeout:
                # Another run's refresh is bounded by the same request timeout.
                flow._fail(
                    OAuthTransientError(
                        "another run sharing the token store held its refresh lock for "
                        f"{flow.config.request_timeout:g} s; try again"
                    )
                )
                return
            run.lock_retry_at = now + _LOCK_POLL[min(run.lock_tries, len(_LOCK_POLL)) - 1]
            return
        run.locked = True
        ours = flow._tokens
        refused = run.refused
        if refused is not None:
            run.refused = None
            if (
                current is None
                or same_tokens(current, refused[0])
                or not issuers_match(current.issuer, refused[0].issuer)
            ):
                self.give_up(refused, current, now)
                return
            # W4b: another run stored a newer set meanwhile: it is taken, not deleted.
        if (
            current is not None
            and ours is not None
            and issuers_match(current.issuer, ours.issuer)
            and (current.access_token, current.refresh_token)
            != (ours.access_token, ours.refresh_token)
        ):
            # Another run refreshed (or signed in) meanwhile: its set is the live one.
            _log.debug("oauth: the store holds newer tokens; using them")
            flow._tokens = current
            flow._remember(*token_secrets(current))
            if current.expires_at is None or now < current.expires_at:
                self.adopt(current)
                return
            if not current.refresh_token:
                flow._release_lock()
                goal = _Goal.AUTHORIZE
                flow._run = None
                flow._tokens = None
                flow.start_run(
                    goal, now, scope=run.challenge_scope, resource_metadata=run.resource_metadata
                )
                return
        self.start(now)

    def adopt(self, tokens: TokenSet) -> None:
        """Tokens another run stored (and this one read under the lock) are used as if
        this run had obtained them; nothing is written back."""
        flow = self.flow
        flow._release_lock()
        flow._generation += 1
        flow._phase = _Phase.IDLE
        flow._run = None
        flow._last_result = Authorized(tokens=tokens)
        flow._events.append(flow._last_result)

    def client_for_tokens(self, tokens: TokenSet) -> ClientRecord:
        flow = self.flow
        pre = flow.config.preregistered
        if pre is not None and pre.client_id == tokens.client_id:
            meta = flow._metadata
            method = _choose_method(
                pre.auth_method, meta.auth_methods if meta else None, bool(pre.client_secret)
            )
            return ClientRecord(
                client_id=pre.client_id,
                client_secret=pre.client_secret,
                auth_method=_as_method(method),
                issuer=tokens.issuer,
                kind="pre",
            )
        stored = flow._clients.get(tokens.issuer)
        if stored is not None and stored.client_id == tokens.client_id:
            return stored
        return ClientRecord(client_id=tokens.client_id, issuer=tokens.issuer, kind="cimd")

    def on_response(self, ex: _Exchange, now: float) -> None:
        """A refresh is answered like any token request (O46, O54, O55)."""
        self.flow.token_requests.on_response(ex, now)

    def refused(self, ex: _Exchange, code: str | None, now: float) -> None:
        """O55, W4b: the refresh token is dead. Nothing is deleted yet: the store is
        read again under its lock (``give_up`` follows, or the set another run
        stored meanwhile is taken: a lease that ran out, a store without a lock,
        a provider that revoked the family when two runs spent one token)."""
        flow = self.flow
        run = flow._need_run()
        tokens = flow._tokens
        if code == "invalid_client":
            flow._forget_client(tokens.issuer if tokens else None)
        flow._release_lock()
        if tokens is None:  # pragma: no cover - a refresh always starts from a set
            self.give_up(None, None, now, ex.status, code)
            return
        _log.debug("oauth: refresh refused (HTTP %d); reading the store again", ex.status)
        run.refused = (tokens, code, ex.status)
        flow._phase = _Phase.LOCKING
        run.lock_since = now
        run.lock_tries = 0
        self.ask_lock(now)

    def give_up(
        self,
        refused: tuple[TokenSet, str | None, int] | None,
        read: TokenSet | None,
        now: float,
        status: int = 400,
        code: str | None = None,
    ) -> None:
        """W4b: the store holds no newer set: delete only ``read`` (the set read
        under the lock, if any). A refresh ahead of expiry (the access token still
        valid) leaves the access token in use until it expires, without its refresh
        token (the next 401 or expiry signs in anew); otherwise authorize anew."""
        flow = self.flow
        run = flow._need_run()
        if read is not None:
            flow._emit(DeleteTokens(key=flow._key(read.issuer), only_if=read))
        flow._release_lock()
        if refused is not None:
            tokens, code, status = refused
            if run.goal is _Goal.REFRESH and (tokens.expires_at is None or now < tokens.expires_at):
                _log.debug("oauth: refresh refused (HTTP %d); the access token is kept", status)
                flow._tokens = replace(tokens, refresh_token=None)
                shown = f": {code}" if code else ""
                flow._fail(
                    TokenError(
                        f"the token endpoint refused the refresh with HTTP {status}{shown}; "
                        "the access token is used until it expires (O55)",
                        error=code,
                        status=status,
                    )
                )
                return
        flow._tokens = None
        _log.debug("oauth: refresh refused (HTTP %d); authorizing anew", status)
        flow._run = None
        flow.start_run(
            _Goal.AUTHORIZE, now, scope=run.challenge_scope, resource_metadata=run.resource_metadata
        )
