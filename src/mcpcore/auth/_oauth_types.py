"""The OAuth flow's records: what goes in, what it keeps, what comes out.

Data only: the configuration (``OAuthConfig``, ``PreRegisteredClient``), the
records the store keeps (``TokenSet`` under a ``TokenKey``, ``ClientRecord``),
the engine's per-request ``RequestTicket``, the actions the flow hands out
(``AuthRequest``, the host hooks' and the store's), its events (``Authorized``,
``AuthFailed``), its verdicts on a request (``WAIT``, ``RETRY``, ``Fail``), and
the state of one run in flight (``_Run``). Secrets never show in a ``repr``
(A4). The errors are in ``_oauth_errors``, the pure rules in ``_oauth_rules``;
the flow (``OAuthFlow``, ``_oauth.py``) re-exports all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from enum import Enum
from typing import Any, Final, Literal, Protocol, Union

from ..base._events import AbortExchange
from ..base._record import record
from ._oauth_errors import OAuthError
from ._oauth_rules import _no_query

__all__ = [
    "DEFAULT_SUBJECT",
    "WAIT",
    "AuthFailed",
    "AuthRequest",
    "Authorized",
    "ClientRecord",
    "DeleteClient",
    "DeleteTokens",
    "DpopKey",
    "Fail",
    "IdentityProvider",
    "LockTokens",
    "OAuthAction",
    "OAuthConfig",
    "OAuthEvent",
    "OpenAuthorizationUrl",
    "PreRegisteredClient",
    "ProvideAssertion",
    "Purpose",
    "RequestTicket",
    "Retry",
    "SaveClient",
    "SaveTokens",
    "SignAssertion",
    "TokenKey",
    "TokenSet",
    "UnlockTokens",
    "Wait",
    "access_token_bytes",
    "authorization_header",
]


# --- configuration and records ----------------------------------------------------------


AuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]


@record(frozen=True, slots=True, kw_only=True)
class PreRegisteredClient:
    """A client registered out of band (O24). ``client_secret`` never shows (A4)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: AuthMethod | None = None
    issuer: str | None = None  # the issuer it is bound to (O10, O29)
    signing_alg: str = "ES256"  # private_key_jwt (O72)
    key_id: str | None = None

    def __repr__(self) -> str:
        secret = "<held>" if self.client_secret else None
        return (
            f"PreRegisteredClient(client_id={self.client_id!r}, client_secret={secret}, "
            f"auth_method={self.auth_method!r}, issuer={self.issuer!r})"
        )


class DpopKey(Protocol):
    """The key a client proves possession of with DPoP (N1, RFC 9449).

    ``alg`` is its JWS algorithm (``"ES256"``), ``public_jwk`` its public key as
    a JWK (no private part), and ``sign(signing_input)`` the raw JWS signature
    over ``signing_input`` (for ES256, ``r || s``). Signing with a key held in
    memory is computation, not I/O, so the core calls ``sign`` itself, once per
    proof; ``mcpcore_jwt.DpopKey`` is a ready one.

    A key may also have ``export() -> str``: its private part as text the core
    never reads (``mcpcore_jwt``'s is a private JWK in JSON). The tokens bound to
    it are then stored with that text (``TokenSet.dpop_key_export``), so a later
    run given no key of the host's picks the key up again (N1).
    """

    @property
    def alg(self) -> str: ...

    @property
    def public_jwk(self) -> dict[str, str]: ...

    def sign(self, signing_input: bytes) -> bytes: ...


SubjectTokenType = Literal["id_token", "saml2"]


@record(frozen=True, slots=True, kw_only=True)
class IdentityProvider:
    """The enterprise identity provider of N2: where the identity assertion is
    exchanged for an ID-JAG (RFC 8693). ``client_secret`` never shows (A4).

    ``token_endpoint`` is the IdP's token endpoint; ``client_id`` (and
    ``client_secret``, sent with HTTP Basic) this client's registration there;
    ``subject_token_type`` what the ``assertion`` hook gives: an OpenID
    Connect ID token (``"id_token"``) or a SAML 2.0 assertion (``"saml2"``).
    """

    token_endpoint: str
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    subject_token_type: SubjectTokenType = "id_token"

    def __repr__(self) -> str:
        secret = "<held>" if self.client_secret else None
        return (
            f"IdentityProvider(token_endpoint={_no_query(self.token_endpoint)!r}, "
            f"client_id={self.client_id!r}, client_secret={secret}, "
            f"subject_token_type={self.subject_token_type!r})"
        )


Grant = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"]
# W1: the subject of tokens stored without one (a single-user host's).
DEFAULT_SUBJECT = "default"


@record(frozen=True, slots=True, kw_only=True)
class OAuthConfig:
    """What the host configures for one MCP server (built by ``AuthOptions.config``)."""

    server_url: str
    redirect_uri: str
    client_name: str = "mcpcore"
    application_type: Literal["native", "web"] = "native"
    client_metadata_url: str | None = None  # CIMD (O25)
    preregistered: PreRegisteredClient | None = None
    grant: Grant = "authorization_code"
    scope: str | None = None  # hard override of O19
    want_refresh_tokens: bool = True
    user_wait: float = 300.0  # O41
    refresh_skew: float = 60.0  # O51
    allow_insecure_http: bool = False  # O63
    protocol_version: str = "2025-11-25"  # era rules and MCP-Protocol-Version (O18)
    max_body: int = 1024 * 1024  # O66
    request_timeout: float = 30.0  # carried on every AuthRequest
    assertion_lifetime: float = 300.0  # O72: exp ≤ iat + 5 min
    # A3: the store is shared and has a sign-in lock: one sign-in at a time per
    # issuer, and a later one first takes fitting tokens another run stored.
    serialize_sign_ins: bool = False
    # N1: DPoP always (True), when the authorization server lists the key's
    # algorithm in dpop_signing_alg_values_supported ("auto"), or never (False).
    dpop: bool | Literal["auto"] = False
    dpop_key: DpopKey | None = field(default=None, repr=False)
    identity_provider: IdentityProvider | None = None  # N2: grant="enterprise"
    # W1: whose tokens these are (the host's user or tenant id): part of every key.
    subject: str = DEFAULT_SUBJECT


@record(frozen=True, slots=True, kw_only=True)
class TokenKey:
    """Where tokens are stored: (server URL, issuer, subject) (O67, W1).

    ``subject`` is whose tokens they are: the host's user or tenant id
    (``AuthOptions.subject``); ``DEFAULT_SUBJECT`` when the host has one user.
    """

    server_url: str
    issuer: str
    subject: str = DEFAULT_SUBJECT


@record(frozen=True, slots=True, kw_only=True)
class TokenSet:
    """Tokens for one resource from one issuer (O67). Token text never shows (A4)."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None  # wall-clock epoch seconds
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None  # granted scope (O23)
    issuer: str
    token_endpoint: str
    resource: str
    client_id: str
    # N1: the RFC 7638 thumbprint of the DPoP key a "DPoP" token is bound to (the
    # key's public half: no secret); a token bound to another key is not used.
    dpop_jkt: str | None = None
    # N1: that key's private part as the key exported it (opaque text, a secret):
    # a later run given no key of the host's takes the key up again from here.
    dpop_key_export: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        refresh = "<held>" if self.refresh_token else None
        return (
            f"TokenSet(token_type={self.token_type!r}, expires_at={self.expires_at!r}, "
            f"refresh_token={refresh}, scope={self.scope!r}, issuer={self.issuer!r}, "
            f"resource={self.resource!r}, client_id={self.client_id!r})"
        )


@record(frozen=True, slots=True, kw_only=True)
class ClientRecord:
    """A client bound to one issuer (O28, O29, O67). The secret never shows (A4)."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    client_secret_expires_at: float | None = None
    auth_method: AuthMethod = "none"
    redirect_uris: tuple[str, ...] = ()
    issuer: str
    kind: Literal["pre", "cimd", "dcr"] = "dcr"
    # The scope a registered client was registered for (None: not known): an
    # authorization server may refuse to grant it more (step-up then registers anew).
    scope: str | None = None

    def __repr__(self) -> str:
        secret = "<held>" if self.client_secret else None
        return (
            f"ClientRecord(client_id={self.client_id!r}, client_secret={secret}, "
            f"auth_method={self.auth_method!r}, issuer={self.issuer!r}, kind={self.kind!r})"
        )


@record(slots=True)
class RequestTicket:
    """Counters for one logical MCP request (O52, O60); the engine keeps one per request."""

    generation: int = -1  # which token generation it was sent with
    authorizations: int = 0  # 401-driven flows started or joined
    step_ups: int = 0  # 403 insufficient_scope flows started or joined
    nonce_retried: bool = False  # N1: a use_dpop_nonce 401 was answered once
    refreshed: bool = False  # a refresh was already tried for it (O52)
    waits_for: int = 0  # the flow run its own 401/403 started or joined (0: none)


# --- actions ----------------------------------------------------------------------------


class Purpose(Enum):
    PRM = "prm"
    ASM = "asm"
    LEGACY_ASM = "legacy_asm"
    REGISTER = "register"
    TOKEN_CODE = "token_code"
    TOKEN_REFRESH = "token_refresh"
    TOKEN_CLIENT_CREDENTIALS = "token_client_credentials"
    TOKEN_EXCHANGE = "token_exchange"  # N2: at the identity provider (RFC 8693)
    TOKEN_JWT_BEARER = "token_jwt_bearer"  # N2, N3: at the authorization server (RFC 7523)


@record(frozen=True, slots=True, kw_only=True)
class AuthRequest:
    """Perform this exchange with redirects **off** (O62) and report its response.

    ``exchange_id`` is the flow's own numbering. ``repr`` shows the purpose,
    method and URL without query, never a header value or the body (A4).
    """

    exchange_id: int
    purpose: Purpose
    method: str
    url: str = field(repr=False)
    headers: list[tuple[bytes, bytes]] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)
    timeout: float | None = None

    def __repr__(self) -> str:
        names = ", ".join(name.decode("latin-1") for name, _ in self.headers)
        size = 0 if self.body is None else len(self.body)
        return (
            f"AuthRequest(exchange_id={self.exchange_id}, purpose={self.purpose.value}, "
            f"method={self.method!r}, url={_no_query(self.url)!r}, headers=[{names}], "
            f"body={size} bytes)"
        )


@record(frozen=True, slots=True, kw_only=True)
class OpenAuthorizationUrl:
    """Let the user authorize at ``url`` (O34: a URL API, never a shell), then call
    ``receive_callback`` with the redirect URL, before ``deadline`` (O41)."""

    url: str = field(repr=False)
    redirect_uri: str
    deadline: float
    attempt: int = 0  # D2: set by the engine; report the answer with it

    def __repr__(self) -> str:
        return (
            f"OpenAuthorizationUrl(url={_no_query(self.url)!r}, "
            f"redirect_uri={self.redirect_uri!r}, deadline={self.deadline!r}, "
            f"attempt={self.attempt})"
        )


@record(frozen=True, slots=True, kw_only=True)
class SignAssertion:
    """Sign a JWT (O72) and give it back with ``receive_assertion(request_id, jwt)``.

    ``signing_input`` is ``b64url(header) "." b64url(claims)``; a host with a raw
    signer returns ``compact_jws(signing_input, signature)``, one with a JWT
    library signs ``claims`` with ``header``.
    """

    request_id: int
    audience: str
    header: dict[str, Any] = field(repr=False)
    claims: dict[str, Any] = field(repr=False)
    signing_input: bytes = field(repr=False)
    attempt: int = 0  # D2: set by the engine; report the answer with it

    def __repr__(self) -> str:
        return (
            f"SignAssertion(request_id={self.request_id}, alg={self.header.get('alg')!r}, "
            f"audience={self.audience!r}, attempt={self.attempt})"
        )


@record(frozen=True, slots=True, kw_only=True)
class ProvideAssertion:
    """Give the assertion a grant presents, with ``receive_identity(request_id, text)``.

    ``kind`` ``"workload"`` (N3): the platform's workload token, read anew for
    each grant (platform tokens rotate); ``"identity"`` (N2): the person's
    identity assertion from the enterprise identity provider (an ID token or a
    SAML assertion), exchanged there for an ID-JAG. ``audience`` is the MCP
    server's authorization server (its issuer), ``resource`` the MCP server.
    """

    request_id: int
    kind: Literal["workload", "identity"]
    audience: str
    resource: str
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class SaveTokens:
    """Store ``tokens`` under ``key`` (O48, O54, O67).

    ``replaces``: the set a refresh started from. The write applies only if the
    store still holds that set for the server (compare-and-swap): another run
    sharing the store may have refreshed meanwhile, and its tokens are kept.
    ``None``: a new sign-in, written whatever was there.
    """

    key: TokenKey
    tokens: TokenSet
    replaces: TokenSet | None = None
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class DeleteTokens:
    """Forget the tokens under ``key`` (O29, O55), only if the store still holds
    ``only_if`` for the server: a newer set another run stored is never deleted."""

    key: TokenKey
    only_if: TokenSet | None = None
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class LockTokens:
    """Take the store's refresh lock for ``server_url`` without waiting, then read
    the tokens it holds for the server; the answer goes to ``lock_answered``.

    Runs sharing a store (processes sharing a token file) refresh one at a time:
    a refresh token that rotates is used once, and the run that comes second
    finds the first one's tokens instead of spending a dead refresh token. A
    lock that is busy is asked for again later (the flow's deadline says when).
    ``lock_id`` is the flow's number for this ask.

    With ``sign_in`` (an issuer) it is that issuer's sign-in lock instead
    (``lock_sign_in``): clients sharing a store ask a person to sign in with
    one authorization server one at a time, and the one that comes second
    first reads what the first stored (R4).

    ``subject``: whose tokens the refresh lock guards (W1).
    """

    lock_id: int
    server_url: str
    sign_in: str | None = None
    subject: str = DEFAULT_SUBJECT
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class UnlockTokens:
    """Release the lock the ``LockTokens`` with the same ``lock_id`` took."""

    lock_id: int
    server_url: str
    sign_in: str | None = None
    subject: str = DEFAULT_SUBJECT  # W1
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class SaveClient:
    """Store a registered client, keyed by its issuer (O29, O67)."""

    issuer: str
    client: ClientRecord
    attempt: int = 0  # D2: set by the engine; report the answer with it


@record(frozen=True, slots=True, kw_only=True)
class DeleteClient:
    """Forget the client registered with ``issuer`` (O47)."""

    issuer: str
    attempt: int = 0  # D2: set by the engine; report the answer with it


OAuthAction = Union[
    AuthRequest,
    AbortExchange,
    OpenAuthorizationUrl,
    SignAssertion,
    ProvideAssertion,
    SaveTokens,
    DeleteTokens,
    SaveClient,
    DeleteClient,
    LockTokens,
    UnlockTokens,
]


@record(frozen=True, slots=True, kw_only=True)
class Authorized:
    """A token is held now: requests waiting for the flow call ``prepare`` again."""

    tokens: TokenSet


@record(frozen=True, slots=True, kw_only=True)
class AuthFailed:
    """The flow failed: requests waiting for it fail with ``error``."""

    error: OAuthError


OAuthEvent = Union[Authorized, AuthFailed]


class Wait:
    """A flow is in flight: hold the request until ``Authorized`` or ``AuthFailed``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "WAIT"


class Retry:
    """A newer token is held: ``prepare`` and resend the request now."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "RETRY"


WAIT: Final = Wait()
RETRY: Final = Retry()


@record(frozen=True, slots=True)
class Fail:
    """Fail the request with ``error``."""

    error: OAuthError


def access_token_bytes(access_token: str) -> bytes:
    """The bytes an access token goes out as, in ``Authorization`` and hashed in a
    DPoP proof's ``ath`` (N1): one encoding for both, so the hash is of what is sent.
    A token endpoint's token is visible ASCII (O46); one a store held may be any
    text, and is sent as its UTF-8 (a lone surrogate as ``surrogatepass``) for the
    server to refuse, rather than failing the request here."""
    return access_token.encode("utf-8", "surrogatepass")


def authorization_header(tokens: TokenSet) -> tuple[bytes, bytes]:
    """``(b"authorization", b"Bearer <access token>")`` for an MCP request (O1)."""
    return b"authorization", b"Bearer " + access_token_bytes(tokens.access_token)


# --- internal state --------------------------------------------------------------------


class _Phase(Enum):
    IDLE = "idle"
    DISCOVER_PRM = "discover_prm"
    DISCOVER_ASM = "discover_asm"
    LEGACY_ASM = "legacy_asm"
    REGISTERING = "registering"
    SIGNING = "signing"
    AWAIT_USER = "await_user"
    EXCHANGING = "exchanging"
    LOCKING = "locking"  # waiting for the store's refresh lock
    REFRESHING = "refreshing"
    CLIENT_GRANT = "client_grant"
    ASSERTING = "asserting"  # N2, N3: waiting for the host's assertion


class _Goal(Enum):
    AUTHORIZE = "authorize"  # 401 without a usable refresh (or login)
    CHECK_THEN_REFRESH = "check_then_refresh"  # O52
    REFRESH = "refresh"  # O51, proactive, no discovery
    STEP_UP = "step_up"  # O59


@record(slots=True)
class _Metadata:
    issuer: str  # the document's issuer string verbatim (what ``iss`` is compared to)
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None
    scopes_supported: tuple[str, ...]
    auth_methods: tuple[str, ...] | None
    cimd: bool
    iss_supported: bool
    legacy_defaults: bool = False  # O16: no document at all
    dpop_algs: tuple[str, ...] = ()  # N1: dpop_signing_alg_values_supported


@record(slots=True)
class _Exchange:
    id: int
    purpose: Purpose
    url: str
    status: int = 0
    headers: Sequence[tuple[bytes, bytes]] = ()
    body: bytearray = field(default_factory=bytearray)
    overflow: bool = False


@record(slots=True)
class _PendingToken:
    """A token request waiting for its client assertion (O72)."""

    purpose: Purpose
    url: str
    params: list[tuple[str, str]]


@record(slots=True)
class _Run:
    """One flow in flight (O56: at most one per server)."""

    goal: _Goal
    challenge_scope: str | None = None
    resource_metadata: str | None = None
    prm_urls: list[str] = field(default_factory=list)
    prm_index: int = 0
    prm_problem: OAuthError | None = None  # a 200 that was unusable (O9)
    asm_urls: list[str] = field(default_factory=list)
    asm_index: int = 0
    asm_problem: OAuthError | None = None
    expected_issuer: str | None = None
    scope: str | None = None  # the scope requested in this attempt
    state: str | None = None
    verifier: str | None = None
    deadline: float | None = None
    client: ClientRecord | None = None
    client_retry_used: bool = False  # O47: one re-registration on invalid_client
    exchange: _Exchange | None = None
    pending_token: _PendingToken | None = None
    assertion_id: int = 0
    code_used: bool = False
    serial: int = 0  # which run this is: a ticket that waits for it names it
    lock_attempt: int = 0  # the LockTokens this run is waiting for or holds
    locked: bool = False  # the store's refresh lock is held
    lock_since: float = 0.0
    lock_retry_at: float | None = None  # a busy lock is asked for again then
    lock_tries: int = 0
    lock_sign_in: str | None = None  # the lock asked for is this issuer's sign-in lock
    refreshing: TokenSet | None = None  # the set a refresh started from (CAS)
    nonce_retried: bool = False  # N1: the token endpoint's use_dpop_nonce answered once
    # N1: the token request last sent, to send again with the nonce a
    # use_dpop_nonce answer gives.
    resend: _PendingToken | None = None
    # W4b: the set whose refresh was refused, and the refusal (its code and HTTP
    # status), while the store is read again under the lock before anything is deleted.
    refused: tuple[TokenSet, str | None, int] | None = None


def _as_method(method: str) -> AuthMethod:
    if method == "client_secret_basic":
        return "client_secret_basic"
    if method == "client_secret_post":
        return "client_secret_post"
    if method == "private_key_jwt":
        return "private_key_jwt"
    return "none"
