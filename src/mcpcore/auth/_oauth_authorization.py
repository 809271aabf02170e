"""The OAuth flow's authorization phase: the person signs in.

``Authorization`` builds the authorization URL (fresh PKCE pair and state,
the resource and the scope, O31-O35), hands it to the host, and checks the
redirect that comes back (state, issuer, error, code: O36-O40) before the
code goes to the token phase.

Sign-ins are serialized here (R4). Clients that share a store with a sign-in
lock (``lock_sign_in``: ``MemoryTokenStore``, ``FileTokenStore``; the clients
of a hub given one ``auth=``) ask a person to sign in with one authorization
server one at a time: before the URL goes out the flow takes that issuer's
lock (``LockTokens(sign_in=issuer)``, asked again while another run holds
it, for at most ``user_wait``), and holds it until its tokens are stored or
the attempt ends. Holding it, it reads what the store holds for its server:
tokens another run stored meanwhile from the same issuer, for the same
resource, unexpired and granting every scope this run asks for, are used as
they are, and no person is asked at all.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..base._escape import excerpt
from ._oauth_dpop import token_secrets
from ._oauth_errors import (
    AuthorizationDenied,
    AuthorizationResponseRejected,
    AuthorizationTimeout,
)
from ._oauth_rules import (
    _LOCK_POLL,
    _SHOWN,
    _b64url,
    _log,
    _no_query,
    _split_scopes,
    canonical_resource,
    issuers_match,
    pkce_challenge,
)
from ._oauth_types import (
    OpenAuthorizationUrl,
    Purpose,
    TokenSet,
    _Phase,
)

if TYPE_CHECKING:
    from ._oauth_base import FlowBase

__all__ = ["Authorization"]


class Authorization:
    """The authorization request and its redirect callback (O31-O41)."""

    __slots__ = ("flow",)

    def __init__(self, flow: FlowBase) -> None:
        self.flow = flow

    def start(self, now: float) -> None:
        """R4: first the issuer's sign-in lock, when the store is shared; then the URL."""
        flow = self.flow
        run = flow._need_run()
        if flow.config.serialize_sign_ins and not run.locked:
            run.lock_sign_in = flow._need_metadata().issuer
            flow._phase = _Phase.LOCKING
            run.lock_since = now
            run.lock_tries = 0
            flow.refresh.ask_lock(now)
            return
        self.ask_person(now)

    def lock_answered(self, held: bool, current: TokenSet | None, now: float) -> None:
        """The store's answer to this run's sign-in lock: wait on, take the tokens
        another run stored, or ask the person."""
        flow = self.flow
        run = flow._need_run()
        if not held:
            if now - run.lock_since >= flow.config.user_wait:
                flow._fail(
                    AuthorizationTimeout(
                        "another client sharing the token store was signing in with the "
                        f"same authorization server for {flow.config.user_wait:g} s (O41)"
                    )
                )
                return
            run.lock_retry_at = now + _LOCK_POLL[min(run.lock_tries, len(_LOCK_POLL)) - 1]
            return
        run.locked = True
        if current is not None and self._fits(current, now):
            _log.debug("oauth: another run signed in meanwhile; using its tokens")
            flow._tokens = current
            flow._remember(*token_secrets(current))
            flow.refresh.adopt(current)
            return
        self.ask_person(now)

    def _fits(self, tokens: TokenSet, now: float) -> bool:
        """Tokens another run stored serve this run: same issuer and resource, not
        ones this flow already held (a 401 refused those), unexpired, and granting
        every scope this run asks for (``offline_access`` aside: the authorization
        server decides whether to grant it)."""
        flow = self.flow
        run = flow._need_run()
        ours = flow._tokens
        if ours is not None and (ours.access_token, ours.refresh_token) == (
            tokens.access_token,
            tokens.refresh_token,
        ):
            return False
        resource = flow._resource or canonical_resource(flow.config.server_url)
        wanted = set(_split_scopes(run.scope)) - {"offline_access"}
        return (
            issuers_match(flow._need_metadata().issuer, tokens.issuer)
            and tokens.resource == resource
            and (tokens.expires_at is None or now < tokens.expires_at - flow.config.refresh_skew)
            and wanted.issubset(_split_scopes(tokens.scope))
        )

    def ask_person(self, now: float) -> None:
        """O31–O35: fresh PKCE pair and state; hand the URL to the host."""
        flow = self.flow
        run = flow._need_run()
        meta = flow._need_metadata()
        client = run.client
        assert client is not None
        run.verifier = _b64url(flow._entropy(32))
        run.state = _b64url(flow._entropy(32))
        flow._remember(run.verifier, run.state)
        run.code_used = False
        params = [
            ("response_type", "code"),
            ("client_id", client.client_id),
            ("redirect_uri", flow.config.redirect_uri),
            ("state", run.state),
            ("code_challenge", pkce_challenge(run.verifier)),
            ("code_challenge_method", "S256"),
            ("resource", flow._resource or canonical_resource(flow.config.server_url)),
        ]
        if run.scope:
            params.append(("scope", run.scope))
            if "offline_access" in _split_scopes(run.scope):
                params.append(("prompt", "consent"))  # O21
        endpoint = meta.authorization_endpoint or ""
        parts = urlsplit(endpoint)
        query = "&".join(q for q in (parts.query, urlencode(params)) if q)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
        run.deadline = now + flow.config.user_wait
        flow._phase = _Phase.AWAIT_USER
        flow._requested_scope = run.scope
        _log.debug("oauth: authorization at %s", _no_query(url))
        flow._emit(
            OpenAuthorizationUrl(
                url=url, redirect_uri=flow.config.redirect_uri, deadline=run.deadline
            )
        )

    def receive_callback(self, callback_url: str, now: float) -> None:
        """O36–O40: the full redirect URL the user agent arrived at."""
        flow = self.flow
        run = flow._run
        if run is None or flow._phase is not _Phase.AWAIT_USER:
            return  # late or stray: nothing waits for it
        meta = flow._need_metadata()
        try:
            query = urlsplit(callback_url).query
            pairs = parse_qsl(query, keep_blank_values=True)
        except ValueError:
            pairs = []
        params: dict[str, str] = {}
        duplicated = False
        for key, value in pairs:
            duplicated = duplicated or key in params
            params[key] = value
        state = params.get("state")
        expected = run.state or ""
        if (
            duplicated
            or state is None
            or not hmac.compare_digest(state.encode("utf-8", "replace"), expected.encode("utf-8"))
        ):
            flow._fail(
                AuthorizationResponseRejected(
                    "the authorization response's state is missing or does not match; "
                    "no token was requested (O37)"
                )
            )
            return
        iss = params.get("iss")
        if iss is not None and iss != meta.issuer:
            flow._fail(
                AuthorizationResponseRejected(
                    f"the authorization response came from issuer "
                    f"{excerpt(flow._scrub(iss), _SHOWN)!r}, "
                    f"expected {excerpt(meta.issuer, _SHOWN)!r}; no token was requested (O38)"
                )
            )
            return
        if iss is None and meta.iss_supported:
            flow._fail(
                AuthorizationResponseRejected(
                    "the authorization server promised an 'iss' parameter and the response "
                    "has none; no token was requested (O38)"
                )
            )
            return
        error = params.get("error")
        if error is not None:
            flow._fail(
                AuthorizationDenied(
                    f"authorization was refused: {excerpt(flow._scrub(error), 60)} (O39)",
                    error=excerpt(flow._scrub(error), 60),
                )
            )
            return
        code = params.get("code")
        if not code or run.code_used:
            flow._fail(
                AuthorizationResponseRejected("the authorization response has no code (O40)")
            )
            return
        run.code_used = True
        flow._remember(code)
        client = run.client
        assert client is not None
        params_out = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", flow.config.redirect_uri),  # O35
            ("code_verifier", run.verifier or ""),
            ("resource", flow._resource or canonical_resource(flow.config.server_url)),
        ]
        flow._phase = _Phase.EXCHANGING
        # O43: only the token endpoint of the issuer recorded for this state.
        flow.token_requests.request(
            Purpose.TOKEN_CODE, meta.token_endpoint, params_out, client, now
        )
