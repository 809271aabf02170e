"""OAuth 2.1 authorization for MCP as a sans-IO state machine (A1, A2, A4, A5).

One ``OAuthFlow`` per MCP server URL sits beside the session and its HTTP
mapping. It performs no I/O, reads no clock and draws no randomness: responses,
the redirect callback, signed assertions and ``now`` go in; request actions,
"open this URL", "sign this", "store this" actions, outcome events and a
deadline come out. Entropy (PKCE verifier, ``state``, JWT ``jti``) comes from
the injected ``token_bytes(n)`` (e.g. ``secrets.token_bytes`` in a driver).

``now`` is **wall-clock epoch seconds** here (``time.time()``), unlike the
session core's monotonic clock: tokens outlive the process and their absolute
expiry is stored (O67).

Public surface
--------------

Configuration and records (frozen; secrets never in ``repr``, A4/O64):

* ``OAuthConfig(server_url, redirect_uri, *, client_name, application_type,
  client_metadata_url, preregistered, grant, scope, want_refresh_tokens,
  user_wait, refresh_skew, allow_insecure_http, protocol_version,
  max_body, request_timeout, assertion_lifetime)``
* ``PreRegisteredClient(client_id, client_secret=None, auth_method=None,
  issuer=None, signing_alg="ES256", key_id=None)``
* ``TokenSet`` (access_token, token_type, expires_at, refresh_token, scope,
  issuer, token_endpoint, resource, client_id) — what the store keeps,
  keyed by ``TokenKey(server_url, issuer)``.
* ``ClientRecord`` (client_id, client_secret, client_secret_expires_at,
  auth_method, redirect_uris, issuer, kind) — a DCR client, keyed by issuer.
* ``RequestTicket`` — the per-logical-request counters (O52, O60) the engine
  keeps for each MCP request it sends.

Commands (inputs), all taking ``now``:

* ``OAuthFlow(config, *, token_bytes, tokens=None, clients=())`` — restore
  what the store held.
* ``prepare(ticket, now) -> (b"authorization", b"Bearer …") | WAIT | None``:
  before sending an MCP request. A header: attach it (a run in flight holds
  back no request that has a usable token, R5/R6). ``WAIT``: no usable token
  while a refresh or authorization is in flight (possibly started by this
  call, O51), or this request's own 401/403 started it; send after
  ``Authorized``, fail on ``AuthFailed``. ``None``: send without a token (O2).
* ``prepare_headers(ticket, method, url, now)``: as ``prepare``, with every
  header to attach: for a DPoP-bound token ``Authorization: DPoP …`` and a
  fresh ``DPoP`` proof for ``method url`` (N1). ``note_response(url,
  headers)`` keeps a ``DPoP-Nonce`` an MCP response gave.
* ``challenge(ticket, status, headers, now) -> Retry | Wait | Fail | None``:
  the MCP request got ``status`` (401/403). ``None``: not an auth matter,
  deliver the HTTP error as usual (O3). ``RETRY``: a newer token is held,
  call ``prepare`` and resend now. ``WAIT``: as above. ``Fail(error)``: fail
  the request with ``error`` (bounds of O60).
* ``response_started / response_data / response_ended / response_failed``
  for each ``AuthRequest`` (like ``HttpMapping``), or ``receive_response``
  with a whole body.
* ``receive_callback(callback_url, now)`` — the full redirect URL (O36).
* ``receive_assertion(request_id, assertion, now)`` — the host signed a
  ``SignAssertion`` (private_key_jwt, O72); ``compact_jws`` builds one from
  a raw JWS signature.
* ``receive_identity(request_id, assertion, now)`` — the host gave a
  ``ProvideAssertion`` (the workload token of N3, the identity assertion of N2).
* ``handle_timer(now)`` / ``next_deadline()`` — the user wait (O41).
* ``lock_answered(lock_id, held, current, now)`` — the store's answer to
  ``LockTokens``: whether the refresh lock is now held, and the tokens the
  store holds for the server (read under the lock).
* ``cancel(reason)`` — give up the flow in flight.
* ``login(now)`` — start discovery + authorization eagerly (a CLI ``login``).

Outputs: ``take_actions()`` returns, in order, ``AuthRequest`` (perform with
redirects off, body capped, then report), ``AbortExchange`` (stop an
exchange whose body overran the cap), ``OpenAuthorizationUrl`` (host hook:
browser or paste, then ``receive_callback``), ``SignAssertion`` (host signer,
then ``receive_assertion``), ``ProvideAssertion`` (the host's assertion for
the ``jwt_bearer`` and ``enterprise`` grants, then ``receive_identity``),
``SaveTokens`` / ``DeleteTokens`` / ``SaveClient`` / ``DeleteClient`` (the store, O67; perform them before
acting on the event that follows them, O48), ``LockTokens`` /
``UnlockTokens`` (hold the store's refresh lock around a refresh; answer a
lock with ``lock_answered``). ``take_events()`` returns
``Authorized`` (retry waiting requests: ``prepare`` again) and
``AuthFailed(error)`` (fail waiting requests with ``error``).

``authorization_header(tokens)`` gives ``(b"authorization", b"Bearer <token>")``.

Errors are ``OAuthError`` (an ``McpError``) subclasses; none carries a
secret, and server text in them is escaped and cut short (O64, O65).

Integration: ``_authorizing.AuthLayer`` inside ``HttpClientEngine`` keeps one
flow per server and a ``RequestTicket`` per MCP request, calls ``prepare``
before every request and ``challenge`` on a 401/403, gives ``AuthRequest``
actions exchange ids of its own, and parks ``WAIT``-ed requests until
``Authorized``/``AuthFailed``; their deadlines keep running meanwhile (a call
waits for authorization within its own deadline).

Structure: ``OAuthFlow`` composes its phases, one part each, in the order of
the ``PHASES`` table: ``Discovery`` (``_oauth_discovery``), ``Registration``
(``_oauth_registration``), ``Authorization`` (``_oauth_authorization``),
``TokenRequests`` and ``Refresh`` (``_oauth_tokens``; the refresh with the
store's lock around it), and ``AssertionGrants`` (``_oauth_grants``: workload
identity and enterprise sign-in, N2, N3). DPoP's proofs and nonces are
``_oauth_dpop``'s (N1). The state they share and the plumbing they act
through (send, emit, store, fail) are ``FlowBase``'s (``_oauth_base``). The
flow composes the phases and no phase imports the flow: a phase hands over to
another through the ``FlowBase`` it is given (its ports, and ``start_run`` /
``after_metadata``, which this module implements). The errors
(``_oauth_errors``), the pure rules (``_oauth_rules``) and the records,
actions and events (``_oauth_types``) are re-exported here. This module keeps
what the MCP side asks (``prepare``, ``challenge``, ``login``), where a run
starts and what follows discovery, and routes each response to the phase that
sent it.

X4: at DEBUG, ``mcpcore.oauth`` logs each request's purpose, method and URL
without query, and each response status — never a header value, a body, a
query string or a token.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from ..base._errors import InvalidState
from ..base._escape import excerpt
from ..base._failure import TransportFailure
from ._oauth_authorization import Authorization
from ._oauth_base import FlowBase
from ._oauth_discovery import Discovery
from ._oauth_errors import (
    AuthorizationCancelled,
    AuthorizationDenied,
    AuthorizationRequired,
    AuthorizationResponseRejected,
    AuthorizationTimeout,
    AuthServerMetadataNotFound,
    ClientRegistrationRequired,
    DestinationRefused,
    DiscoveryError,
    HookError,
    InsufficientScope,
    InvalidMetadata,
    IssuerMismatch,
    MalformedResponse,
    OAuthError,
    OAuthTransientError,
    PkceNotSupported,
    RedirectRefused,
    RegistrationError,
    RegistrationUnusable,
    ResourceMismatch,
    TokenError,
    fresh_copy,
)
from ._oauth_grants import AssertionGrants
from ._oauth_registration import Registration
from ._oauth_rules import (
    _EARLY_REFRESH_PAUSE,
    _REVISION,
    _SHORTEST_PLANNED,
    _SHOWN,
    _log,
    _no_query,
    _split_scopes,
    asm_candidates,
    canonical_resource,
    compact_jws,
    issuers_match,
    parse_www_authenticate,
    pkce_challenge,
    prm_candidates,
    resource_matches,
)
from ._oauth_rules import _redirect_registered as _redirect_registered  # for the tests
from ._oauth_tokens import Refresh, TokenRequests
from ._oauth_types import (
    RETRY,
    WAIT,
    AuthFailed,
    Authorized,
    AuthRequest,
    ClientRecord,
    DeleteClient,
    DeleteTokens,
    DpopKey,
    Fail,
    IdentityProvider,
    LockTokens,
    OAuthAction,
    OAuthConfig,
    OAuthEvent,
    OpenAuthorizationUrl,
    PreRegisteredClient,
    ProvideAssertion,
    Purpose,
    RequestTicket,
    Retry,
    SaveClient,
    SaveTokens,
    SignAssertion,
    TokenKey,
    TokenSet,
    UnlockTokens,
    Wait,
    _Exchange,
    _Goal,
    _Phase,
    _Run,
    access_token_bytes,
    authorization_header,
)

__all__ = [
    "PHASES",
    "WAIT",
    "AuthFailed",
    "AuthRequest",
    "AuthServerMetadataNotFound",
    "AuthorizationCancelled",
    "AuthorizationDenied",
    "AuthorizationRequired",
    "AuthorizationResponseRejected",
    "AuthorizationTimeout",
    "Authorized",
    "ClientRecord",
    "ClientRegistrationRequired",
    "DeleteClient",
    "DeleteTokens",
    "DestinationRefused",
    "DiscoveryError",
    "DpopKey",
    "Fail",
    "HookError",
    "IdentityProvider",
    "InsufficientScope",
    "InvalidMetadata",
    "IssuerMismatch",
    "LockTokens",
    "MalformedResponse",
    "OAuthAction",
    "OAuthConfig",
    "OAuthError",
    "OAuthEvent",
    "OAuthFlow",
    "OAuthTransientError",
    "OpenAuthorizationUrl",
    "PkceNotSupported",
    "PreRegisteredClient",
    "ProvideAssertion",
    "Purpose",
    "RedirectRefused",
    "RegistrationError",
    "RegistrationUnusable",
    "RequestTicket",
    "ResourceMismatch",
    "Retry",
    "SaveClient",
    "SaveTokens",
    "SignAssertion",
    "TokenError",
    "TokenKey",
    "TokenSet",
    "UnlockTokens",
    "Wait",
    "asm_candidates",
    "authorization_header",
    "canonical_resource",
    "compact_jws",
    "fresh_copy",
    "issuers_match",
    "parse_www_authenticate",
    "pkce_challenge",
    "prm_candidates",
    "resource_matches",
]


#: The phases of a run, in the order a first sign-in meets them, and the
#: requests each sends with the method that reads their answers. A run starts
#: at discovery (or at refresh, for a token due soon); after discovery
#: ``OAuthFlow.after_metadata`` chooses the next phase (a refresh, registration
#: and authorization, or a client-credentials token request); authorization
#: waits for the person and sends the code to the token requests.
PHASES: Final[tuple[tuple[str, tuple[tuple[Purpose, str], ...]], ...]] = (
    (
        "discovery",
        (
            (Purpose.PRM, "on_prm"),
            (Purpose.ASM, "on_asm"),
            (Purpose.LEGACY_ASM, "on_legacy_asm"),
        ),
    ),
    ("registration", ((Purpose.REGISTER, "on_register"),)),
    ("authorization", ()),  # the person signs in; the redirect comes to receive_callback
    (
        "token_requests",
        (
            (Purpose.TOKEN_CODE, "on_response"),
            (Purpose.TOKEN_CLIENT_CREDENTIALS, "on_response"),
            (Purpose.TOKEN_JWT_BEARER, "on_response"),  # N2, N3: a token answer
        ),
    ),
    ("refresh", ((Purpose.TOKEN_REFRESH, "on_response"),)),
    ("grants", ((Purpose.TOKEN_EXCHANGE, "on_exchange"),)),  # N2: the IdP's ID-JAG
)


class OAuthFlow(FlowBase):
    """The OAuth 2.1 client flow for one MCP server: the phases composed (``PHASES``).

    See the module docstring for what goes in and comes out.
    """

    discovery: Discovery
    registration: Registration
    authorization: Authorization
    token_requests: TokenRequests
    refresh: Refresh
    grants: AssertionGrants

    def __init__(
        self,
        config: OAuthConfig,
        *,
        token_bytes: Callable[[int], bytes],
        tokens: TokenSet | None = None,
        clients: Iterable[ClientRecord] = (),
    ) -> None:
        super().__init__(config, token_bytes=token_bytes, tokens=tokens, clients=clients)
        self.discovery = Discovery(self)
        self.registration = Registration(self)
        self.authorization = Authorization(self)
        self.token_requests = TokenRequests(self)
        self.refresh = Refresh(self)
        self.grants = AssertionGrants(self)
        # Which phase reads the answer to each request: the PHASES table.
        self._readers: dict[Purpose, Callable[[_Exchange, float], None]] = {
            purpose: getattr(getattr(self, phase), reader)
            for phase, requests in PHASES
            for purpose, reader in requests
        }

    def use_protocol_version(self, version: str) -> None:
        """The MCP revision the session speaks (a refused request's
        ``MCP-Protocol-Version``): sent on discovery requests from now on (O18)."""
        if _REVISION.fullmatch(version):
            self.protocol_version = version

    def next_deadline(self) -> float | None:
        """O41: when the user wait runs out (``handle_timer`` then)."""
        run = self._run
        if run is not None and self._phase is _Phase.AWAIT_USER:
            return run.deadline
        if run is not None and self._phase is _Phase.LOCKING:
            return run.lock_retry_at
        return None

    @property
    def has_events(self) -> bool:
        """Events are waiting for ``take_events``."""
        return bool(self._events)

    @property
    def busy(self) -> bool:
        """A refresh or authorization is in flight (O56)."""
        return self._run is not None

    @property
    def awaiting_user(self) -> bool:
        """The flow waits for the person (O41: MCP request deadlines pause)."""
        return self._phase is _Phase.AWAIT_USER

    @property
    def tokens(self) -> TokenSet | None:
        return self._tokens

    @property
    def generation(self) -> int:
        """Counts the token sets obtained; -1 before the first."""
        return self._generation

    def __repr__(self) -> str:
        return (
            f"OAuthFlow(server={_no_query(self.config.server_url)!r}, "
            f"phase={self._phase.value}, tokens={'held' if self._tokens else 'none'})"
        )

    def prepare(self, ticket: RequestTicket, now: float) -> tuple[bytes, bytes] | Wait | None:
        """Before an MCP request: its ``Authorization`` header, ``WAIT`` or ``None``
        (see ``prepare_headers``, which also gives a DPoP proof, N1)."""
        verdict = self._prepare(ticket, now)
        if isinstance(verdict, TokenSet):
            return authorization_header(verdict)
        return verdict

    def prepare_headers(
        self, ticket: RequestTicket, method: str, url: str, now: float
    ) -> list[tuple[bytes, bytes]] | Wait | None:
        """Before the MCP request ``method url``: the headers to attach (the
        ``Authorization`` header, and for a DPoP-bound token a fresh ``DPoP``
        proof, N1), ``WAIT``, or ``None`` (send bare)."""
        verdict = self._prepare(ticket, now)
        if isinstance(verdict, TokenSet):
            return self.headers_for(verdict, method, url, now)
        return verdict

    def headers_for(
        self, tokens: TokenSet, method: str, url: str, now: float
    ) -> list[tuple[bytes, bytes]]:
        """The headers ``tokens`` go out with on ``method url`` (O1, N1)."""
        dpop = self.dpop
        if dpop is not None and tokens.dpop_jkt == dpop.jkt:
            proof = dpop.proof(method, url, now, tokens.access_token)
            value = b"DPoP " + access_token_bytes(tokens.access_token)
            return [(b"authorization", value), (b"dpop", proof)]
        return [authorization_header(tokens)]

    def note_response(self, url: str, headers: Sequence[tuple[bytes, bytes]]) -> None:
        """An MCP response's headers: a ``DPoP-Nonce`` in them is kept (N1)."""
        if self.dpop is not None:
            self.dpop.note_nonce(url, headers)

    def _prepare(self, ticket: RequestTicket, now: float) -> TokenSet | Wait | None:
        """Before an MCP request: a header to attach, ``WAIT``, or ``None`` (send bare).

        R5, R6: a run in flight (a refresh, a step-up, a sign-in) holds back only
        a request that has no usable token to go with, and the request whose own
        401/403 started or joined that run; every other request goes out with the
        token held now, so one tool's step-up or a ``login()`` on a client that is
        signed in freezes nothing, and a refresh ahead of expiry that fails fails
        no request while the token is still valid.
        """
        run = self._run
        if run is not None and ticket.waits_for == run.serial:
            return WAIT
        tokens = self._tokens
        if tokens is None:
            return WAIT if run is not None else None
        skew = self.config.refresh_skew
        expires_at = tokens.expires_at
        if self._lifetime is not None:
            if self._lifetime < _SHORTEST_PLANNED:
                # F6: a token given for (next to) no time cannot be refreshed ahead:
                # each new one would be due at once, a refresh storm. It is sent as
                # is, and the server's 401 drives one refresh per request (O52).
                expires_at = None
            # O51: a token that lives less than twice the skew is refreshed halfway
            # through its life, not at once (every request would refresh it again).
            skew = min(skew, self._lifetime / 2)
        expired = expires_at is not None and now >= expires_at
        due = expires_at is not None and now >= expires_at - skew
        if run is None and due and tokens.refresh_token:
            last = self._early_refresh_at
            if expired or last is None or now >= last + _EARLY_REFRESH_PAUSE:
                self._early_refresh_at = now
                self.start_run(_Goal.REFRESH, now)  # O51
                run = self._run
        if expired:
            # No usable token: wait for the run in flight (a refresh, a sign-in);
            # with none, send bare and let the server's 401 start one.
            return WAIT if run is not None else None
        ticket.generation = self._generation
        return tokens

    def current_header(self, now: float) -> tuple[bytes, bytes] | None:
        """The header for the token held now, if it has not expired, starting
        nothing: for requests sent while the client closes (F7)."""
        tokens = self._tokens
        if tokens is None or (tokens.expires_at is not None and now >= tokens.expires_at):
            return None
        return authorization_header(tokens)

    def current_headers(self, method: str, url: str, now: float) -> list[tuple[bytes, bytes]]:
        """``current_header`` with its DPoP proof (N1): no header when no token."""
        tokens = self._tokens
        if tokens is None or (tokens.expires_at is not None and now >= tokens.expires_at):
            return []
        return self.headers_for(tokens, method, url, now)

    def challenge(
        self,
        ticket: RequestTicket,
        status: int,
        headers: Sequence[tuple[bytes, bytes]],
        now: float,
    ) -> Retry | Wait | Fail | None:
        """An MCP request got ``status``; decide what the engine does with it (O3)."""
        if status not in (401, 403):
            return None
        # O4: the Bearer challenge's parameters (one with none is still the one that
        # counts: {} is not absent); with DPoP and no Bearer challenge, the DPoP one's.
        dpop_params = parse_www_authenticate(headers, "dpop")
        params = parse_www_authenticate(headers)
        if params is None and self.dpop is not None:
            params = dpop_params
        params = params or {}
        if (
            status == 401
            and self.dpop is not None
            and dpop_params is not None
            and dpop_params.get("error") == "use_dpop_nonce"
            and self.dpop.note_nonce(self.config.server_url, headers)
            and not ticket.nonce_retried
        ):
            # N1 (RFC 9449 9): the resource server wants a nonce: the request goes
            # once more with a fresh proof that carries it, never twice.
            ticket.nonce_retried = True
            return RETRY
        if status == 403 and params.get("error") != "insufficient_scope":
            return None  # O3: an ordinary HTTP error
        scope = params.get("scope") or None
        if self._run is not None:  # O56: join the flow in flight
            if status == 403:
                ticket.step_ups += 1
            elif self._run.goal in (_Goal.REFRESH, _Goal.CHECK_THEN_REFRESH):
                ticket.refreshed = True
            else:
                ticket.authorizations += 1
            ticket.waits_for = self._run.serial
            return WAIT
        if self._usable(now) and ticket.generation < self._generation:
            return RETRY  # a newer token came meanwhile
        if status == 403:
            return self._step_up(ticket, scope, params, now)
        rm = params.get("resource_metadata")
        tokens = self._tokens
        if tokens is not None and tokens.refresh_token and not ticket.refreshed:
            ticket.refreshed = True
            self.start_run(_Goal.CHECK_THEN_REFRESH, now, scope=scope, resource_metadata=rm)
        else:
            if ticket.authorizations >= 1:
                return Fail(
                    OAuthError(
                        f"{_no_query(self.config.server_url)} still answers 401 after "
                        "authorization (O60)"
                    )
                )
            ticket.authorizations += 1
            self.start_run(_Goal.AUTHORIZE, now, scope=scope, resource_metadata=rm)
        return self._outcome(ticket)

    def _step_up(
        self, ticket: RequestTicket, scope: str | None, params: Mapping[str, str], now: float
    ) -> Retry | Wait | Fail | None:
        challenged = tuple(_split_scopes(scope))
        granted = set(_split_scopes(self._tokens.scope if self._tokens else None))
        if ticket.step_ups >= 1 or (challenged and granted.issuperset(challenged)):
            return Fail(
                InsufficientScope(
                    f"{_no_query(self.config.server_url)} demands scopes "
                    f"{excerpt(' '.join(challenged), _SHOWN)!r} that re-authorizing did not "
                    "grant (O60)",
                    challenged=challenged,
                )
            )
        ticket.step_ups += 1
        rm = params.get("resource_metadata")
        self.start_run(_Goal.STEP_UP, now, scope=scope, resource_metadata=rm)
        return self._outcome(ticket)

    def _outcome(self, ticket: RequestTicket) -> Wait | Fail | Retry:
        if self._run is not None:
            ticket.waits_for = self._run.serial
            return WAIT
        last = self._last_result
        if isinstance(last, AuthFailed):
            return Fail(last.error)
        return RETRY

    def _usable(self, now: float) -> bool:
        tokens = self._tokens
        return tokens is not None and (tokens.expires_at is None or now < tokens.expires_at)

    def login(self, now: float) -> None:
        """Start discovery and authorization eagerly (a CLI ``login``); O2."""
        if self._run is not None:
            raise InvalidState("an authorization flow is already in flight")
        self.refused_grant = None  # N2, N3: the host asks again
        self.start_run(_Goal.AUTHORIZE, now)

    def start_run(
        self,
        goal: _Goal,
        now: float,
        *,
        scope: str | None = None,
        resource_metadata: str | None = None,
    ) -> None:
        """Start a run for ``goal`` at its first phase (O56: one run at a time)."""
        self._runs += 1
        self._run = _Run(
            goal=goal, challenge_scope=scope, resource_metadata=resource_metadata, serial=self._runs
        )
        if goal is not _Goal.REFRESH and self.refused_grant is not None:
            # O74: a refused assertion grant is not tried again on its own.
            self._fail(fresh_copy(self.refused_grant))
            return
        if goal is _Goal.REFRESH:
            self.refresh.start(now)
        elif goal is _Goal.STEP_UP and self._metadata is not None and self._resource is not None:
            self.after_metadata(now)  # O59: reuse what is cached
        else:
            self.discovery.begin(resource_metadata, now)

    def after_metadata(self, now: float) -> None:
        """Discovery is done: refresh (O52), or on to a client and a token (O24, O71)."""
        run = self._need_run()
        meta = self._need_metadata()
        tokens = self._tokens
        if (
            run.goal is _Goal.CHECK_THEN_REFRESH
            and tokens is not None
            and tokens.refresh_token
            and issuers_match(meta.issuer, tokens.issuer)
        ):
            self.refresh.start(now)  # O52: same issuer, refresh once
            return
        scope = self.registration.scope_for(run)
        run.scope = scope
        try:
            client = self.registration.client_for(meta, now)
        except OAuthError as error:
            self._fail(error)
            return
        if client is None:
            self.registration.register(now)
            return
        run.client = client
        if self.config.grant == "client_credentials":
            self.token_requests.client_credentials(now)  # O71, O61
        elif self.config.grant in ("jwt_bearer", "enterprise"):
            self.grants.start(now)  # N2, N3
        else:
            self.authorization.start(now)

    def receive_callback(self, callback_url: str, now: float) -> None:
        """O36-O40: the full redirect URL the user agent arrived at."""
        self.authorization.receive_callback(callback_url, now)

    def receive_assertion(self, request_id: int, assertion: str, now: float) -> None:
        """The host signed the ``SignAssertion`` with ``request_id`` (O72)."""
        self.token_requests.receive_assertion(request_id, assertion, now)

    def receive_identity(self, request_id: int, assertion: str, now: float) -> None:
        """The host gave the ``ProvideAssertion`` with ``request_id`` (N2, N3)."""
        self.grants.receive_identity(request_id, assertion, now)

    def lock_answered(self, lock_id: int, held: bool, current: TokenSet | None, now: float) -> None:
        """The store's answer to ``LockTokens(lock_id)``: ``held`` the refresh lock is
        ours now; ``current`` the tokens the store holds for the server, read under it."""
        self.refresh.lock_answered(lock_id, held, current, now)

    def handle_timer(self, now: float) -> None:
        """O41: the user wait ran out; or a busy refresh lock is asked for again."""
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return
        if self._phase is _Phase.LOCKING:
            self.refresh.ask_lock(now)
            return
        self._fail(AuthorizationTimeout("the authorization was not completed in time (O41)"))

    def cancel(self, reason: str = "cancelled", *, error: OAuthError | None = None) -> None:
        """Give up the flow in flight; waiting requests fail (with ``error`` if given)."""
        if self._run is None:
            return
        self._abort_exchange()
        self._fail(
            error or AuthorizationCancelled(f"authorization cancelled: {excerpt(reason, 80)}")
        )

    def response_started(
        self, exchange_id: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> None:
        ex = self._exchange(exchange_id)
        if ex is None:
            return
        ex.status = status
        ex.headers = list(headers)
        _log.debug("oauth: %s %s answered HTTP %d", ex.purpose.value, _no_query(ex.url), status)

    def response_data(self, exchange_id: int, data: bytes, now: float) -> None:
        ex = self._exchange(exchange_id)
        if ex is None or ex.overflow:
            return
        if len(ex.body) + len(data) > self.config.max_body:
            ex.overflow = True  # O66
            self._abort_exchange()
            self._fail(
                MalformedResponse(
                    f"the {ex.purpose.value} response from {_no_query(ex.url)!r} exceeds "
                    f"{self.config.max_body} bytes (O66)"
                )
            )
            return
        ex.body += data

    def response_ended(self, exchange_id: int, now: float) -> None:
        ex = self._exchange(exchange_id)
        if ex is None or ex.overflow:
            return
        run = self._need_run()
        run.exchange = None
        self._readers[ex.purpose](ex, now)  # the phase that sent it (PHASES)

    def response_failed(self, exchange_id: int, failure: TransportFailure, now: float) -> None:
        ex = self._exchange(exchange_id)
        if ex is None:
            return
        self._need_run().exchange = None
        _log.debug("oauth: %s %s failed", ex.purpose.value, _no_query(ex.url))
        self._fail(
            OAuthTransientError(
                f"the {ex.purpose.value} request to {_no_query(ex.url)!r} failed: "
                f"{failure.describe()}"
            )
        )

    def receive_response(
        self,
        exchange_id: int,
        status: int,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
        now: float,
    ) -> None:
        """A whole response at once: ``response_started`` + ``response_data`` + ``ended``."""
        self.response_started(exchange_id, status, headers, now)
        self.response_data(exchange_id, body, now)
        self.response_ended(exchange_id, now)
