"""What every phase of the OAuth flow shares: its state and the means to act.

``FlowBase`` holds what the flow knows (the tokens, the clients registered,
the authorization server's metadata, the resource, the run in flight) and
the plumbing every phase uses: send a request (after the outbound policy's
check, O63), emit an action, store tokens, fail the run, remember and scrub
secrets, word an error. ``OAuthFlow`` (``_oauth.py``) is a ``FlowBase`` that
composes the phases (``_oauth_discovery``, ``_oauth_registration``,
``_oauth_authorization``, ``_oauth_tokens``); they read and change this state
through the flow they belong to.

A phase imports neither the flow nor another phase. Where one hands over to
another (discovery to what follows it, registration to authorization, a
refused refresh to a new run...), it goes through the flow it was given, as a
``FlowBase`` sees it: ``start_run`` and ``after_metadata``, which the flow
implements, and the ports below (``RegistrationPort``, ``AuthorizationPort``,
``TokenRequestsPort``, ``RefreshPort``: what the other phases ask of each
one), which the flow's phases fill.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from ..base._errors import InvalidState, InvalidValue
from ..base._escape import excerpt
from ..base._events import AbortExchange
from ..wire._outbound import OutboundPolicy
from ._oauth_dpop import Dpop, token_secrets
from ._oauth_errors import (
    DestinationRefused,
    OAuthError,
    OAuthTransientError,
    RedirectRefused,
)
from ._oauth_rules import (
    _REDACTED,
    _REMEMBERED,
    _SHOWN,
    _absolute,
    _cimd_url_ok,
    _log,
    _no_query,
    _refuse_constant,
)
from ._oauth_types import (
    AuthFailed,
    Authorized,
    AuthRequest,
    ClientRecord,
    DeleteClient,
    OAuthAction,
    OAuthConfig,
    OAuthEvent,
    Purpose,
    SaveTokens,
    TokenKey,
    TokenSet,
    UnlockTokens,
    _Exchange,
    _Goal,
    _Metadata,
    _Phase,
    _Run,
)

__all__ = ["AuthorizationPort", "FlowBase", "RefreshPort", "RegistrationPort", "TokenRequestsPort"]


class RegistrationPort(Protocol):
    """What the other phases ask of registration (``_oauth_registration``)."""

    def register(self, now: float) -> None: ...


class AuthorizationPort(Protocol):
    """What the other phases ask of authorization (``_oauth_authorization``)."""

    def start(self, now: float) -> None: ...

    def lock_answered(self, held: bool, current: TokenSet | None, now: float) -> None: ...


class TokenRequestsPort(Protocol):
    """What the other phases ask of the token requests (``_oauth_tokens``)."""

    def request(
        self,
        purpose: Purpose,
        url: str,
        params: list[tuple[str, str]],
        client: ClientRecord,
        now: float,
    ) -> None: ...

    def on_response(self, ex: _Exchange, now: float) -> None: ...


class RefreshPort(Protocol):
    """What the other phases ask of the refresh (``_oauth_tokens``)."""

    def ask_lock(self, now: float) -> None: ...

    def adopt(self, tokens: TokenSet) -> None: ...

    def refused(self, ex: _Exchange, code: str | None, now: float) -> None: ...


class FlowBase:
    """The state of one server's OAuth flow and the plumbing its phases share."""

    # The phases as the others reach them, set by the flow that composes them.
    registration: RegistrationPort
    authorization: AuthorizationPort
    token_requests: TokenRequestsPort
    refresh: RefreshPort

    def __init__(
        self,
        config: OAuthConfig,
        *,
        token_bytes: Callable[[int], bytes],
        tokens: TokenSet | None = None,
        clients: Iterable[ClientRecord] = (),
    ) -> None:
        if not _absolute(config.server_url):
            raise InvalidValue("the MCP server URL must be an absolute http(s) URL")
        if not _absolute(config.redirect_uri):
            raise InvalidValue("the redirect URI must be an absolute http(s) URL")
        if config.client_metadata_url is not None and not _cimd_url_ok(config.client_metadata_url):
            raise InvalidValue(
                "the client ID metadata document URL must be https with a path, "
                "without fragment, userinfo or dot segments (O25)"
            )
        pre = config.preregistered
        if config.grant == "client_credentials" and pre is None:
            raise InvalidValue("the client_credentials grant needs a pre-registered client (O71)")
        if config.grant in ("jwt_bearer", "enterprise") and pre is None:
            raise InvalidValue(f"the {config.grant} grant needs a pre-registered client (N2, N3)")
        if config.grant == "enterprise" and config.identity_provider is None:
            raise InvalidValue("the enterprise grant needs an identity_provider (N2)")
        if config.identity_provider is not None and not _absolute(
            config.identity_provider.token_endpoint
        ):
            raise InvalidValue("the identity provider's token endpoint must be an absolute URL")
        self.dpop: Dpop | None = None
        if config.dpop not in (False, True, "auto"):
            raise InvalidValue('dpop must be True, False or "auto"')
        if config.dpop:
            if config.dpop_key is None:
                raise InvalidValue("DPoP needs a key: dpop_key=mcpcore_jwt.DpopKey.generate() (N1)")
            self.dpop = Dpop(config.dpop, config.dpop_key, self._checked_entropy(token_bytes))
        if (
            tokens is not None
            and (tokens.dpop_jkt is not None or tokens.token_type.lower() == "dpop")
            and (self.dpop is None or tokens.dpop_jkt != self.dpop.jkt)
        ):
            tokens = None  # N1: a token bound to a key this client does not hold is of no use
        if (
            pre is not None
            and pre.auth_method in ("client_secret_basic", "client_secret_post")
            and not pre.client_secret
        ):
            raise InvalidValue(f"auth method {pre.auth_method} needs a client secret")
        self.config = config
        # Who the flow may send requests to: checked before each one (O63).
        self._outbound = OutboundPolicy.for_server(
            config.server_url, allow_insecure_http=config.allow_insecure_http
        )
        self._token_bytes = token_bytes
        self._tokens = tokens
        self._clients: dict[str, ClientRecord] = {c.issuer: c for c in clients}
        self._metadata: _Metadata | None = None  # cached for the current issuer (O59)
        self._resource: str | None = tokens.resource if tokens else None
        self._prm_scopes: tuple[str, ...] = ()
        self._requested_scope: str | None = tokens.scope if tokens else None
        self._generation = 0 if tokens else -1
        # How long the token held now was given for, when it came from this flow.
        self._lifetime: float | None = None
        self._phase = _Phase.IDLE
        self._run: _Run | None = None
        self._next_xid = 1
        self._actions: list[OAuthAction] = []
        self._events: list[OAuthEvent] = []
        # O64: every secret the flow has held, spent ones too, so that server text
        # echoing one (an error_description quoting a request) is scrubbed.
        self._known: deque[str] = deque(maxlen=_REMEMBERED)
        self._remember(
            *token_secrets(tokens),
            pre.client_secret if pre else None,
            *(c.client_secret for c in self._clients.values()),
        )
        self._last_result: OAuthEvent | None = None
        self._resume_phase = _Phase.IDLE
        self._runs = 0  # runs started: each run's serial
        # R6: when the last refresh ahead of expiry started; one that failed is
        # tried again only after a pause, not on every request meanwhile.
        self._early_refresh_at: float | None = None
        self._lock_attempts = 0
        self._sign_in_locks: dict[int, str] = {}  # asked-for sign-in locks: id -> issuer
        # N2, N3: the refusal of the last assertion grant; none is tried again until
        # ``login`` (a refused platform token is not sent over and over, O74).
        self.refused_grant: OAuthError | None = None
        # O18: the revision in use, sent on discovery; the engine tells the flow
        # the one its refused request spoke (see ``use_protocol_version``).
        self.protocol_version = config.protocol_version

    def start_run(
        self,
        goal: _Goal,
        now: float,
        *,
        scope: str | None = None,
        resource_metadata: str | None = None,
    ) -> None:
        """Start a run for ``goal`` at its first phase (the flow composes it)."""
        raise NotImplementedError

    def after_metadata(self, now: float) -> None:
        """Discovery is done: on to the phase that follows (the flow decides)."""
        raise NotImplementedError

    def take_actions(self) -> list[OAuthAction]:
        actions, self._actions = self._actions, []
        return actions

    def _release_lock(self) -> None:
        run = self._run
        if run is not None and run.locked:
            run.locked = False
            self._emit(
                UnlockTokens(
                    lock_id=run.lock_attempt,
                    server_url=self.config.server_url,
                    sign_in=run.lock_sign_in,
                    subject=self.config.subject,
                )
            )

    def take_events(self) -> list[OAuthEvent]:
        events, self._events = self._events, []
        return events

    @staticmethod
    def _checked_entropy(token_bytes: Callable[[int], bytes]) -> Callable[[int], bytes]:
        def entropy(n: int) -> bytes:
            data = token_bytes(n)
            if not isinstance(data, bytes) or len(data) != n:
                raise InvalidValue(f"token_bytes({n}) must return {n} bytes")
            return data

        return entropy

    def _dpop_on(self) -> Dpop | None:
        """N1: the key, when this run's token requests carry a proof."""
        dpop = self.dpop
        if dpop is None:
            return None
        tokens = self._tokens
        if dpop.active(self._metadata) or (tokens is not None and tokens.dpop_jkt == dpop.jkt):
            return dpop
        return None

    def _entropy(self, n: int) -> bytes:
        data = self._token_bytes(n)
        if not isinstance(data, bytes) or len(data) != n:
            raise InvalidValue(f"token_bytes({n}) must return {n} bytes")
        return data

    def _forget_client(self, issuer: str | None) -> None:
        if issuer is not None and self._clients.pop(issuer, None) is not None:
            self._emit(DeleteClient(issuer=issuer))

    def _store(self, tokens: TokenSet) -> None:
        """O48: store first (a refresh's under the lock, in place of the set it started
        from), then tell the waiting requests."""
        run = self._need_run()
        self._tokens = tokens
        self._remember(*token_secrets(tokens))
        self._generation += 1
        self._early_refresh_at = None  # R6: the pause is for refreshes that failed
        replaces = run.refreshing if run.locked else None
        self._emit(SaveTokens(key=self._key(tokens.issuer), tokens=tokens, replaces=replaces))
        self._release_lock()
        self._phase = _Phase.IDLE
        self._run = None
        self._last_result = Authorized(tokens=tokens)
        self._events.append(self._last_result)

    def _exchange(self, exchange_id: int) -> _Exchange | None:
        run = self._run
        if run is None or run.exchange is None or run.exchange.id != exchange_id:
            return None  # stale or unknown: ignored
        return run.exchange

    def _send(
        self,
        purpose: Purpose,
        method: str,
        url: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes | None,
    ) -> None:
        run = self._need_run()
        refused = self._refused(url, f"{purpose.value} request URL")
        if refused is not None:
            self._fail(refused)  # never sent (O63)
            return
        xid = self._next_xid
        self._next_xid += 1
        run.exchange = _Exchange(id=xid, purpose=purpose, url=url)
        _log.debug("oauth: %s %s %s", purpose.value, method, _no_query(url))
        self._emit(
            AuthRequest(
                exchange_id=xid,
                purpose=purpose,
                method=method,
                url=url,
                headers=headers,
                body=body,
                timeout=self.config.request_timeout,
            )
        )

    def _abort_exchange(self) -> None:
        run = self._run
        if run is not None and run.exchange is not None:
            self._emit(AbortExchange(exchange_id=run.exchange.id))
            run.exchange = None

    def _refused(self, url: str, what: str) -> DestinationRefused | None:
        """The error for a URL the outbound policy refuses (O5, O63), or None."""
        reason = self._outbound.refusal(url)
        if reason is None:
            return None
        shown = excerpt(_no_query(url), _SHOWN)
        return DestinationRefused(
            f"the {what} {shown!r} is refused: {reason}; no request was sent to it (O63)",
            url=shown,
            reason=reason,
        )

    def _emit(self, action: OAuthAction) -> None:
        self._actions.append(action)

    def _grant_refused(self, error: OAuthError) -> None:
        """N2, N3: an assertion grant was refused: no retry and no other grant
        until the host signs in again (``login``); the flow fails with ``error``."""
        self.refused_grant = error
        self._fail(error)

    def _fail(self, error: OAuthError) -> None:
        _log.debug("oauth: flow failed: %s", type(error).__name__)
        self._release_lock()
        self._phase = _Phase.IDLE
        self._run = None
        self._last_result = AuthFailed(error=error)
        self._events.append(self._last_result)

    def _need_run(self) -> _Run:
        if self._run is None:  # pragma: no cover - internal invariant
            raise InvalidState("no authorization flow is in flight")
        return self._run

    def _need_metadata(self) -> _Metadata:
        if self._metadata is None:  # pragma: no cover - internal invariant
            raise InvalidState("no authorization server metadata is held")
        return self._metadata

    def _key(self, issuer: str) -> TokenKey:
        return TokenKey(
            server_url=self.config.server_url, issuer=issuer, subject=self.config.subject
        )

    def _remember(self, *secrets: str | None) -> None:
        for secret in secrets:
            if secret and len(secret) >= 4 and secret not in self._known:
                self._known.append(secret)

    def _scrub(self, text: str) -> str:
        """Server text with every secret the flow has held cut out (O64, O65): the
        recently spent ones, and always those it holds now (F5: however many came
        and went since, the configured secret and the live tokens stay covered)."""
        held = set(self._known)
        pre = self.config.preregistered
        tokens = self._tokens
        for secret in (
            pre.client_secret if pre else None,
            *token_secrets(tokens),
            *(c.client_secret for c in self._clients.values()),
        ):
            if secret and len(secret) >= 4:
                held.add(secret)
        for secret in sorted(held, key=len, reverse=True):
            text = text.replace(secret, _REDACTED)
        return text

    def scrub(self, text: str) -> str:
        """``text`` with every secret this flow holds or recently held replaced by
        ``[redacted]``: for server text worded elsewhere (an MCP error body)."""
        return self._scrub(text)

    def _oauth_error(self, body: bytearray) -> tuple[str | None, str | None]:
        """``error`` and ``error_description`` of an error body, escaped and cut (O65)."""
        try:
            doc = json.loads(bytes(body).decode("utf-8"), parse_constant=_refuse_constant)
        except (ValueError, RecursionError, UnicodeDecodeError):
            return None, None
        if not isinstance(doc, dict):
            return None, None
        code, description = doc.get("error"), doc.get("error_description")
        return (
            excerpt(self._scrub(code), 60) if isinstance(code, str) and code else None,
            excerpt(self._scrub(description), _SHOWN)
            if isinstance(description, str) and description
            else None,
        )

    def _transient(self, what: str, ex: _Exchange) -> OAuthTransientError:
        return OAuthTransientError(
            f"{what} at {_no_query(ex.url)!r} answered HTTP {ex.status}; try again later (O8, O55)",
            status=ex.status,
        )

    def _redirect(self, what: str, status: int) -> RedirectRefused:
        return RedirectRefused(
            f"{what} answered HTTP {status} (a redirect); credentials are never re-sent to "
            "another URL (O62)",
            status=status,
        )
