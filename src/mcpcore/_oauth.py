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
then ``receive_assertion``), ``SaveTokens`` / ``DeleteTokens`` /
``SaveClient`` / ``DeleteClient`` (the store, O67; perform them before
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

X4: at DEBUG, ``mcpcore.oauth`` logs each request's purpose, method and URL
without query, and each response status — never a header value, a body, a
query string or a token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Final, Literal, TypeVar, Union
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from ._errors import InvalidState, InvalidValue, McpError, TransportError
from ._escape import excerpt
from ._events import AbortExchange
from ._failure import TransportFailure
from ._outbound import OutboundPolicy, host_is_loopback

__all__ = [
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
    "Fail",
    "HookError",
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

_log = logging.getLogger("mcpcore.oauth")

_PRM_WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
_ASM_WELL_KNOWN: Final = "/.well-known/oauth-authorization-server"
_OIDC_WELL_KNOWN: Final = "/.well-known/openid-configuration"
_JSON: Final = b"application/json"
_FORM: Final = b"application/x-www-form-urlencoded"
_JWT_BEARER_ASSERTION: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_AUTH_METHODS: Final = frozenset(
    {"none", "client_secret_basic", "client_secret_post", "private_key_jwt"}
)
_SHOWN: Final = 200  # characters of server text an error shows (O65)
_REDACTED: Final = "[redacted]"
_SHORTEST_PLANNED: Final = 1.0  # seconds: a token given for less is not refreshed ahead (F6)
_EARLY_REFRESH_PAUSE: Final = 10.0  # seconds between refreshes ahead of expiry that fail (R6)
_REMEMBERED: Final = 64  # secrets kept (after use too) to scrub echoes from server text
_REVISION: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_OIDC_FROM: Final = "2025-11-25"  # first revision that adds OIDC discovery (O11)
_LOCK_POLL: Final = (0.02, 0.05, 0.1, 0.2)  # seconds between asks for a busy refresh lock


# --- errors ---------------------------------------------------------------------------


class OAuthError(McpError):
    """The authorization flow failed. No subclass carries a secret (A4, O64)."""


class DiscoveryError(OAuthError):
    """Protected-resource or authorization-server metadata was unusable."""


class ResourceMismatch(DiscoveryError):
    """O9: no protected-resource metadata names this MCP server as its ``resource``."""


class IssuerMismatch(DiscoveryError):
    """O12: every metadata document named another issuer than the expected one."""

    def __init__(self, message: str, *, expected: str, got: str) -> None:
        super().__init__(message)
        self.expected = expected
        self.got = got


class AuthServerMetadataNotFound(DiscoveryError):
    """O17: no authorization-server metadata candidate answered with a document."""


class InvalidMetadata(DiscoveryError):
    """A metadata document lacks a required field or names an unsafe endpoint (O14, O63)."""


class DestinationRefused(InvalidMetadata):
    """A server named a URL the client will not send a request to: a loopback or
    private address named by a server that is not on one, or plain http (O5, O63).

    ``url`` is the refused URL without query or userinfo; ``reason`` says why.
    Raised before any request goes to it.
    """

    def __init__(self, message: str, *, url: str, reason: str) -> None:
        super().__init__(message)
        self.url = url
        self.reason = reason


class PkceNotSupported(DiscoveryError):
    """O15: the authorization server does not offer PKCE ``S256``; it is refused."""


class RegistrationError(OAuthError):
    """O30: client registration failed. ``status`` and ``error`` (the OAuth code) when known."""

    def __init__(self, message: str, *, status: int | None = None, error: str | None = None):
        super().__init__(message)
        self.status = status
        self.error = error


class ClientRegistrationRequired(RegistrationError):
    """O24: no pre-registered client, no CIMD support and no registration endpoint."""


class RegistrationUnusable(RegistrationError):
    """O27: the registered client's auth method cannot be performed by this client."""


class AuthorizationResponseRejected(OAuthError):
    """O37, O38, O40: the redirect callback failed its ``state``/``iss``/``code`` checks."""


class AuthorizationDenied(OAuthError):
    """O39: the authorization server answered with ``error`` (shown escaped)."""

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message)
        self.error = error


class AuthorizationTimeout(OAuthError):
    """O41: the user did not finish authorizing in time."""


class AuthorizationCancelled(OAuthError):
    """The host cancelled the flow (``cancel``)."""


class HookError(OAuthError):
    """D2: a host hook (the signer, a token store method) did not give a usable answer.

    ``hook`` names it (``"sign_assertion"``, ``"TokenStore.set_tokens"``);
    ``outcome`` says how it failed: ``"raised"``, ``"unusable"`` (an answer of
    the wrong kind), ``"late"`` (no answer within the core's bound) or
    ``"missing"`` (no such hook was given). Never a person's refusal: the next
    request that needs the hook asks it again.
    """

    def __init__(self, message: str, *, hook: str, outcome: str) -> None:
        super().__init__(message)
        self.hook = hook
        self.outcome = outcome


class AuthorizationRequired(OAuthError):
    """The server needs a person to authorize, and this client has no way to ask one
    (no ``authorize`` hook): sign in first, e.g. with ``mcpcore login URL``."""


class TokenError(OAuthError):
    """O47: the token endpoint refused. ``error`` is the OAuth code, ``status`` the HTTP one."""

    def __init__(self, message: str, *, error: str | None = None, status: int | None = None):
        super().__init__(message)
        self.error = error
        self.status = status


class InsufficientScope(OAuthError):
    """O60: the server still demands scopes after the allowed step-up."""

    def __init__(self, message: str, *, challenged: tuple[str, ...]) -> None:
        super().__init__(message)
        self.challenged = challenged


class MalformedResponse(OAuthError):
    """A response is not the JSON object expected, or a member is wrong (O66, O46)."""


class RedirectRefused(OAuthError):
    """O62: a registration or token POST was answered with a redirect; never followed."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class OAuthTransientError(OAuthError, TransportError):
    """O8, O55: 5xx, 429 or a transport failure; tokens are kept, try again later."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# --- configuration and records ----------------------------------------------------------


AuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthConfig:
    """What the host configures for one MCP server (built by ``AuthOptions.config``)."""

    server_url: str
    redirect_uri: str
    client_name: str = "mcpcore"
    application_type: Literal["native", "web"] = "native"
    client_metadata_url: str | None = None  # CIMD (O25)
    preregistered: PreRegisteredClient | None = None
    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    scope: str | None = None  # hard override of O19
    want_refresh_tokens: bool = True
    user_wait: float = 300.0  # O41
    refresh_skew: float = 60.0  # O51
    allow_insecure_http: bool = False  # O63
    protocol_version: str = "2025-11-25"  # era rules and MCP-Protocol-Version (O18)
    max_body: int = 1024 * 1024  # O66
    request_timeout: float = 30.0  # carried on every AuthRequest
    assertion_lifetime: float = 300.0  # O72: exp ≤ iat + 5 min


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenKey:
    """Where tokens are stored: (server URL, issuer) (O67)."""

    server_url: str
    issuer: str


@dataclass(frozen=True, slots=True, kw_only=True)
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

    def __repr__(self) -> str:
        refresh = "<held>" if self.refresh_token else None
        return (
            f"TokenSet(token_type={self.token_type!r}, expires_at={self.expires_at!r}, "
            f"refresh_token={refresh}, scope={self.scope!r}, issuer={self.issuer!r}, "
            f"resource={self.resource!r}, client_id={self.client_id!r})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(slots=True)
class RequestTicket:
    """Counters for one logical MCP request (O52, O60); the engine keeps one per request."""

    generation: int = -1  # which token generation it was sent with
    authorizations: int = 0  # 401-driven flows started or joined
    step_ups: int = 0  # 403 insufficient_scope flows started or joined
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTokens:
    """Forget the tokens under ``key`` (O29, O55), only if the store still holds
    ``only_if`` for the server: a newer set another run stored is never deleted."""

    key: TokenKey
    only_if: TokenSet | None = None
    attempt: int = 0  # D2: set by the engine; report the answer with it


@dataclass(frozen=True, slots=True, kw_only=True)
class LockTokens:
    """Take the store's refresh lock for ``server_url`` without waiting, then read
    the tokens it holds for the server; the answer goes to ``lock_answered``.

    Runs sharing a store (processes sharing a token file) refresh one at a time:
    a refresh token that rotates is used once, and the run that comes second
    finds the first one's tokens instead of spending a dead refresh token. A
    lock that is busy is asked for again later (the flow's deadline says when).
    ``lock_id`` is the flow's number for this ask.
    """

    lock_id: int
    server_url: str
    attempt: int = 0  # D2: set by the engine; report the answer with it


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockTokens:
    """Release the refresh lock the ``LockTokens`` with the same ``lock_id`` took."""

    lock_id: int
    server_url: str
    attempt: int = 0  # D2: set by the engine; report the answer with it


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveClient:
    """Store a registered client, keyed by its issuer (O29, O67)."""

    issuer: str
    client: ClientRecord
    attempt: int = 0  # D2: set by the engine; report the answer with it


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteClient:
    """Forget the client registered with ``issuer`` (O47)."""

    issuer: str
    attempt: int = 0  # D2: set by the engine; report the answer with it


OAuthAction = Union[
    AuthRequest,
    AbortExchange,
    OpenAuthorizationUrl,
    SignAssertion,
    SaveTokens,
    DeleteTokens,
    SaveClient,
    DeleteClient,
    LockTokens,
    UnlockTokens,
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Authorized:
    """A token is held now: requests waiting for the flow call ``prepare`` again."""

    tokens: TokenSet


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True)
class Fail:
    """Fail the request with ``error``."""

    error: OAuthError


# --- pure helpers ---------------------------------------------------------------------


_E = TypeVar("_E", bound=BaseException)


def fresh_copy(error: _E) -> _E:
    """A copy of ``error``: same type, message and attributes, no traceback.

    One error fails every request parked on a flow; each gets its own copy, so
    raising it in one caller (which writes that caller's frames into its
    traceback and context) never changes what another caller sees.
    """
    kind = type(error)
    copy = kind.__new__(kind, *error.args)
    copy.args = error.args
    copy.__dict__.update(vars(error))
    copy.__cause__ = error.__cause__
    copy.__suppress_context__ = error.__suppress_context__
    return copy


def authorization_header(tokens: TokenSet) -> tuple[bytes, bytes]:
    """``(b"authorization", b"Bearer <access token>")`` for an MCP request (O1)."""
    return b"authorization", b"Bearer " + tokens.access_token.encode("utf-8")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def compact_jws(signing_input: bytes, signature: bytes) -> str:
    """A compact JWS from ``SignAssertion.signing_input`` and a raw JWS signature."""
    return signing_input.decode("ascii") + "." + _b64url(signature)


def pkce_challenge(verifier: str) -> str:
    """O31: ``base64url(SHA-256(verifier))`` without padding."""
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class _Malformed(Exception):
    pass


def _parse_field(text: str) -> list[tuple[str, dict[str, str]]]:
    """One ``WWW-Authenticate`` field value → [(scheme lowercased, params)] (RFC 9110 §11.6.1)."""
    n = len(text)
    i = 0

    def skip_ws(i: int) -> int:
        while i < n and text[i] in " \t":
            i += 1
        return i

    def token(i: int) -> tuple[str, int]:
        start = i
        while i < n and text[i] in _TCHAR:
            i += 1
        return text[start:i], i

    def quoted(i: int) -> tuple[str, int]:
        out = []
        i += 1
        while i < n:
            c = text[i]
            if c == "\\":
                if i + 1 >= n:
                    raise _Malformed
                out.append(text[i + 1])
                i += 2
            elif c == '"':
                return "".join(out), i + 1
            else:
                out.append(c)
                i += 1
        raise _Malformed

    def skip_commas(i: int) -> int:
        i = skip_ws(i)
        while i < n and text[i] == ",":
            i = skip_ws(i + 1)
        return i

    def param_ahead(i: int) -> bool:
        # name BWS "=" BWS value; "abc==" (a value starting with "=") is a token68.
        name, j = token(i)
        j = skip_ws(j)
        if not name or j >= n or text[j] != "=":
            return False
        j = skip_ws(j + 1)
        return j < n and text[j] not in "=,"

    challenges: list[tuple[str, dict[str, str]]] = []
    i = skip_commas(i)
    while i < n:
        scheme, i = token(i)
        if not scheme:
            raise _Malformed
        params: dict[str, str] = {}
        challenges.append((scheme.lower(), params))
        if i < n and text[i] not in " \t,":
            raise _Malformed
        i = skip_ws(i)
        if i < n and text[i] != "," and not param_ahead(i):
            # token68
            start = i
            while i < n and text[i] in _TOKEN68:
                i += 1
            while i < n and text[i] == "=":
                i += 1
            if i == start:
                raise _Malformed
            i = skip_commas(i)
            continue
        while True:
            i = skip_commas(i)
            if i >= n or not param_ahead(i):
                break
            name, i = token(i)
            i = skip_ws(i) + 1  # the "="
            i = skip_ws(i)
            if i < n and text[i] == '"':
                value, i = quoted(i)
            else:
                value, i = token(i)
                if not value:
                    raise _Malformed
            key = name.lower()
            if key in params:
                raise _Malformed
            params[key] = value
            i = skip_ws(i)
            if i < n and text[i] != ",":
                raise _Malformed
    return challenges


def parse_www_authenticate(
    headers: Sequence[tuple[bytes, bytes]], scheme: str = "bearer"
) -> dict[str, str] | None:
    """O4: the parameters of the first ``scheme`` challenge over all ``WWW-Authenticate``
    fields; a malformed field counts as absent. ``None`` when there is no such challenge."""
    for name, value in headers:
        if name.lower() != b"www-authenticate":
            continue
        try:
            challenges = _parse_field(value.decode("latin-1"))
        except _Malformed:
            continue
        for found, params in challenges:
            if found == scheme:
                return params
    return None


def _split_scopes(scope: str | None) -> list[str]:
    return [s for s in (scope or "").split(" ") if s]


def _union_scopes(*scopes: str | None) -> str | None:
    """O22: order-preserving (old first), de-duplicated union; None when empty."""
    seen: dict[str, None] = {}
    for scope in scopes:
        for item in _split_scopes(scope):
            seen.setdefault(item, None)
    return " ".join(seen) or None


def _no_query(url: str) -> str:
    """The URL without query, fragment or userinfo: safe to log and show (O64)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    netloc = parts.netloc.rpartition("@")[2]
    # server-given URLs reach logs and errors: escaped, bounded
    return excerpt(urlunsplit((parts.scheme, netloc, parts.path, "", "")), 300)


def _absolute(url: object) -> bool:
    if not isinstance(url, str) or not url:
        return False
    if any(ch <= " " or ch == "\x7f" for ch in url):
        return False  # a control character or space is never part of a usable URL
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2]}"


def _effective_port(url: str) -> int | None:
    parts = urlsplit(url)
    return parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())


def prm_candidates(server_url: str, resource_metadata: str | None) -> list[str]:
    """O6, O7: challenge URL → path-insert well-known (query kept) → root well-known."""
    parts = urlsplit(server_url)
    origin = _origin(server_url)
    urls = [resource_metadata] if resource_metadata else []
    if parts.path not in ("", "/"):
        query = f"?{parts.query}" if parts.query else ""
        urls.append(origin + _PRM_WELL_KNOWN + parts.path + query)
    urls.append(origin + _PRM_WELL_KNOWN)
    return list(dict.fromkeys(urls))


def asm_candidates(issuer: str, protocol_version: str) -> list[str]:
    """O11: RFC 8414 path-insert, OIDC path-insert, OIDC append for a path issuer;
    RFC 8414 then OIDC for a root issuer. Revisions before 2025-11-25 use RFC 8414 only.
    The root RFC 8414 URL is never built for a path issuer."""
    origin = _origin(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    oidc = protocol_version >= _OIDC_FROM
    if path:
        urls = [origin + _ASM_WELL_KNOWN + path]
        if oidc:
            urls += [origin + _OIDC_WELL_KNOWN + path, origin + path + _OIDC_WELL_KNOWN]
        return urls
    urls = [origin + _ASM_WELL_KNOWN]
    if oidc:
        urls.append(origin + _OIDC_WELL_KNOWN)
    return urls


def issuers_match(expected: str, got: str) -> bool:
    """O13: exact string match; the only tolerance is one trailing ``/`` on a root issuer."""
    if expected == got:
        return True
    shorter, longer = sorted((expected, got), key=len)
    if longer != shorter + "/":
        return False
    try:
        return urlsplit(shorter).path == ""
    except ValueError:
        return False


def resource_matches(server_url: str, resource: str) -> bool:
    """O9 (RFC 9728 §3.3): same origin (scheme, host case-insensitively, effective port)
    and ``path(resource)`` a segment-prefix of ``path(server_url)``."""
    if not _absolute(resource) or not _absolute(server_url):
        return False
    a, b = urlsplit(resource), urlsplit(server_url)
    if a.scheme.lower() != b.scheme.lower() or a.hostname != b.hostname:
        return False
    if _effective_port(resource) != _effective_port(server_url):
        return False
    pa = a.path if a.path.endswith("/") else a.path + "/"
    pb = b.path if b.path.endswith("/") else b.path + "/"
    return pb.startswith(pa)


def canonical_resource(server_url: str) -> str:
    """O49 without PRM: lowercase scheme and host, path untouched, no query, fragment
    or userinfo.

    RFC 8707 section 2 says a resource indicator must not hold a fragment and
    should not hold a query, and the MCP authorization spec's canonical server
    URI is scheme, host, port and path: a server URL's query often carries a
    key (``?api_key=...``), and the ``resource`` travels to the authorization
    server in the authorization URL, the code exchange and every refresh.
    """
    parts = urlsplit(server_url)
    netloc = parts.netloc.rpartition("@")[2].lower()
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, "", ""))


def _cimd_url_ok(url: str) -> bool:
    """O25: https, a non-root path, no fragment, no userinfo, no dot segments."""
    if not _absolute(url):
        return False
    parts = urlsplit(url)
    segments = parts.path.split("/")
    return (
        parts.scheme.lower() == "https"
        and parts.path not in ("", "/")
        and not parts.fragment
        and "@" not in parts.netloc
        and "." not in segments
        and ".." not in segments
    )


def _choose_method(
    registered: str | None,
    as_methods: tuple[str, ...] | None,
    has_secret: bool,
) -> str:
    """O45: registered/configured → AS list (basic, post with a secret; else none) →
    RFC 8414 default (basic with a secret, else none)."""
    if registered:
        return registered
    if as_methods:
        if has_secret and "client_secret_basic" in as_methods:
            return "client_secret_basic"
        if has_secret and "client_secret_post" in as_methods:
            return "client_secret_post"
        return "none"
    return "client_secret_basic" if has_secret else "none"


# --- JSON reading ------------------------------------------------------------------------


def _parse_json_object(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise MalformedResponse(f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"{what} is not a JSON object")
    try:
        # A \\ud800 escape decodes to a lone surrogate, which no header, URL or form can
        # carry: refuse it here rather than fail later in the host's I/O.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedResponse(f"{what} holds a lone surrogate (\\ud800-\\udfff)") from None
    return value


def _number(value: object, what: str, key: str) -> float:
    """A JSON number (or a numeric string) as a finite float (O46, O27)."""
    if isinstance(value, bool):
        raise MalformedResponse(f"{what}: {key!r} is not a number")
    try:
        if isinstance(value, int | float):
            number = float(value)
        elif isinstance(value, str):
            number = float(value.strip())
        else:
            raise MalformedResponse(f"{what}: {key!r} is not a number")
    except ValueError:
        raise MalformedResponse(f"{what}: {key!r} is not a number") from None
    except OverflowError:
        raise MalformedResponse(f"{what}: {key!r} is out of range") from None
    if not math.isfinite(number) or number < 0:
        raise MalformedResponse(f"{what}: {key!r} is out of range")
    return number


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _opt_str(doc: Mapping[str, Any], key: str, what: str) -> str | None:
    """A string member; ``null``/``""`` read as absent (O27); another type is an error."""
    value = doc.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MalformedResponse(f"{what}: {key!r} is not a string")
    return value


def _str_list(doc: Mapping[str, Any], key: str, what: str) -> tuple[str, ...] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MalformedResponse(f"{what}: {key!r} is not an array of strings")
    return tuple(value)


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


class _Goal(Enum):
    AUTHORIZE = "authorize"  # 401 without a usable refresh (or login)
    CHECK_THEN_REFRESH = "check_then_refresh"  # O52
    REFRESH = "refresh"  # O51, proactive, no discovery
    STEP_UP = "step_up"  # O59


@dataclass(slots=True)
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


@dataclass(slots=True)
class _Exchange:
    id: int
    purpose: Purpose
    url: str
    status: int = 0
    headers: Sequence[tuple[bytes, bytes]] = ()
    body: bytearray = field(default_factory=bytearray)
    overflow: bool = False


@dataclass(slots=True)
class _PendingToken:
    """A token request waiting for its client assertion (O72)."""

    purpose: Purpose
    url: str
    params: list[tuple[str, str]]


@dataclass(slots=True)
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
    refreshing: TokenSet | None = None  # the set a refresh started from (CAS)


class OAuthFlow:
    """The OAuth 2.1 client flow for one MCP server. See the module docstring."""

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
            tokens.access_token if tokens else None,
            tokens.refresh_token if tokens else None,
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
        # O18: the revision in use, sent on discovery; the engine tells the flow
        # the one its refused request spoke (see ``use_protocol_version``).
        self.protocol_version = config.protocol_version

    def use_protocol_version(self, version: str) -> None:
        """The MCP revision the session speaks (a refused request's
        ``MCP-Protocol-Version``): sent on discovery requests from now on (O18)."""
        if _REVISION.fullmatch(version):
            self.protocol_version = version

    # --- outputs ---------------------------------------------------------------------

    def take_actions(self) -> list[OAuthAction]:
        actions, self._actions = self._actions, []
        return actions

    def take_events(self) -> list[OAuthEvent]:
        events, self._events = self._events, []
        return events

    def next_deadline(self) -> float | None:
        """O41: when the user wait runs out (``handle_timer`` then)."""
        run = self._run
        if run is not None and self._phase is _Phase.AWAIT_USER:
            return run.deadline
        if run is not None and self._phase is _Phase.LOCKING:
            return run.lock_retry_at
        return None

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

    # --- the MCP side ----------------------------------------------------------------

    def prepare(self, ticket: RequestTicket, now: float) -> tuple[bytes, bytes] | Wait | None:
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
                self._start(_Goal.REFRESH, now)  # O51
                run = self._run
        if expired:
            # No usable token: wait for the run in flight (a refresh, a sign-in);
            # with none, send bare and let the server's 401 start one.
            return WAIT if run is not None else None
        ticket.generation = self._generation
        return authorization_header(tokens)

    def current_header(self, now: float) -> tuple[bytes, bytes] | None:
        """The header for the token held now, if it has not expired, starting
        nothing: for requests sent while the client closes (F7)."""
        tokens = self._tokens
        if tokens is None or (tokens.expires_at is not None and now >= tokens.expires_at):
            return None
        return authorization_header(tokens)

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
        params = parse_www_authenticate(headers) or {}
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
            self._start(_Goal.CHECK_THEN_REFRESH, now, scope=scope, resource_metadata=rm)
        else:
            if ticket.authorizations >= 1:
                return Fail(
                    OAuthError(
                        f"{_no_query(self.config.server_url)} still answers 401 after "
                        "authorization (O60)"
                    )
                )
            ticket.authorizations += 1
            self._start(_Goal.AUTHORIZE, now, scope=scope, resource_metadata=rm)
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
        self._start(_Goal.STEP_UP, now, scope=scope, resource_metadata=rm)
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
        self._start(_Goal.AUTHORIZE, now)

    # --- starting a flow -----------------------------------------------------------------

    def _start(
        self,
        goal: _Goal,
        now: float,
        *,
        scope: str | None = None,
        resource_metadata: str | None = None,
    ) -> None:
        self._runs += 1
        run = _Run(
            goal=goal, challenge_scope=scope, resource_metadata=resource_metadata, serial=self._runs
        )
        self._run = run
        if resource_metadata is not None:
            refused = self._refused(resource_metadata, "resource metadata URL")
            if refused is not None:
                # O5: not followed; well-known discovery runs, and if it finds
                # nothing the refusal is the flow's error (not the legacy path).
                resource_metadata = None
                run.prm_problem = refused
        if goal is _Goal.REFRESH:
            self._refresh(now)
            return
        if goal is _Goal.STEP_UP and self._metadata is not None and self._resource is not None:
            self._after_metadata(now)  # O59: reuse what is cached
            return
        run.prm_urls = prm_candidates(self.config.server_url, resource_metadata)
        self._phase = _Phase.DISCOVER_PRM
        self._next_prm(now)

    # --- discovery -----------------------------------------------------------------------

    def _discovery_headers(self, with_version: bool) -> list[tuple[bytes, bytes]]:
        headers = [(b"accept", _JSON)]  # O18
        if with_version:
            headers.append((b"mcp-protocol-version", self.protocol_version.encode("ascii")))
        return headers

    def _next_prm(self, now: float) -> None:
        run = self._need_run()
        if run.prm_index < len(run.prm_urls):
            url = run.prm_urls[run.prm_index]
            run.prm_index += 1
            self._send(Purpose.PRM, "GET", url, self._discovery_headers(True), None)
            return
        if run.prm_problem is not None:
            self._fail(run.prm_problem)
            return
        # O16: every candidate missed: the 2025-03-26 path.
        self._phase = _Phase.LEGACY_ASM
        url = _origin(self.config.server_url) + _ASM_WELL_KNOWN
        self._send(Purpose.LEGACY_ASM, "GET", url, self._discovery_headers(True), None)

    def _on_prm(self, ex: _Exchange, now: float) -> None:
        run = self._need_run()
        if 300 <= ex.status < 500 and ex.status != 429:
            self._next_prm(now)  # O8: a miss
            return
        if ex.status != 200:
            self._fail(self._transient("protected resource metadata", ex))
            return
        try:
            doc = _parse_json_object(bytes(ex.body), "the protected resource metadata")
            resource = doc.get("resource")
            if not isinstance(resource, str):
                raise MalformedResponse("the protected resource metadata has no 'resource'")
            if not resource_matches(self.config.server_url, resource):
                raise ResourceMismatch(
                    f"the protected resource metadata at {_no_query(ex.url)!r} is for "
                    f"{excerpt(_no_query(resource), _SHOWN)!r}, not "
                    f"{_no_query(self.config.server_url)!r} (O9)"
                )
            servers = _str_list(doc, "authorization_servers", "the protected resource metadata")
            usable = tuple(s for s in servers or () if _absolute(s))
            if not usable:
                raise InvalidMetadata(
                    "the protected resource metadata names no authorization server"
                )
            scopes = _str_list(doc, "scopes_supported", "the protected resource metadata")
        except OAuthError as error:
            run.prm_problem = run.prm_problem or error
            self._next_prm(now)  # O9: discard this candidate, try the next
            return
        self._resource = resource  # O49: verbatim
        self._prm_scopes = scopes or ()
        issuer = usable[0]
        pre = self.config.preregistered
        if pre is not None and pre.issuer in usable:
            issuer = pre.issuer  # O10
        self._choose_issuer(issuer, now)

    def _choose_issuer(self, issuer: str, now: float) -> None:
        run = self._need_run()
        run.expected_issuer = issuer
        refused = self._refused(issuer, "authorization server")
        if refused is not None:
            self._fail(refused)
            return
        tokens = self._tokens
        if tokens is not None and not issuers_match(issuer, tokens.issuer):
            # O29: another AS now; its predecessor's tokens are of no use here.
            self._emit(DeleteTokens(key=self._key(tokens.issuer), only_if=tokens))
            self._tokens = None
            self._requested_scope = None
        if self._metadata is not None and issuers_match(issuer, self._metadata.issuer):
            self._after_metadata(now)
            return
        self._metadata = None
        run.asm_urls = asm_candidates(issuer, self.protocol_version)
        self._phase = _Phase.DISCOVER_ASM
        self._next_asm(now)

    def _next_asm(self, now: float) -> None:
        run = self._need_run()
        if run.asm_index < len(run.asm_urls):
            url = run.asm_urls[run.asm_index]
            run.asm_index += 1
            self._send(Purpose.ASM, "GET", url, self._discovery_headers(False), None)
            return
        self._fail(
            run.asm_problem
            or AuthServerMetadataNotFound(
                f"no authorization server metadata found for "
                f"{excerpt(_no_query(run.expected_issuer or ''), _SHOWN)!r} (O11, O17)"
            )
        )

    def _on_asm(self, ex: _Exchange, now: float) -> None:
        run = self._need_run()
        if 300 <= ex.status < 500 and ex.status != 429:
            self._next_asm(now)
            return
        if ex.status != 200:
            self._fail(self._transient("authorization server metadata", ex))
            return
        expected = run.expected_issuer or ""
        try:
            doc = _parse_json_object(bytes(ex.body), "the authorization server metadata")
            issuer = doc.get("issuer")
            if not isinstance(issuer, str) or not issuers_match(expected, issuer):
                shown = issuer if isinstance(issuer, str) else "<none>"
                raise IssuerMismatch(
                    f"the authorization server metadata at {_no_query(ex.url)!r} names issuer "
                    f"{excerpt(shown, _SHOWN)!r}, expected {excerpt(expected, _SHOWN)!r} (O12)",
                    expected=expected,
                    got=excerpt(shown, _SHOWN),
                )
        except OAuthError as error:
            run.asm_problem = run.asm_problem or error
            self._next_asm(now)  # O12: discard it entirely
            return
        try:
            self._metadata = self._read_metadata(doc, issuer)
        except OAuthError as error:
            self._fail(error)
            return
        self._after_metadata(now)

    def _on_legacy_asm(self, ex: _Exchange, now: float) -> None:
        origin = _origin(self.config.server_url)
        self._resource = canonical_resource(self.config.server_url)  # O49 without PRM
        self._prm_scopes = ()
        if 300 <= ex.status < 500 and ex.status != 429:
            # O16: no metadata: default endpoints on the server's origin.
            self._metadata = _Metadata(
                issuer=origin,
                authorization_endpoint=origin + "/authorize",
                token_endpoint=origin + "/token",
                registration_endpoint=origin + "/register",
                scopes_supported=(),
                auth_methods=None,
                cimd=False,
                iss_supported=False,
                legacy_defaults=True,
            )
        elif ex.status != 200:
            self._fail(self._transient("authorization server metadata", ex))
            return
        else:
            try:
                doc = _parse_json_object(bytes(ex.body), "the authorization server metadata")
                issuer = doc.get("issuer")
                # O16: no RFC 8414 §3.3 check on the legacy path; the issuer is recorded.
                recorded = issuer if isinstance(issuer, str) and issuer else origin
                self._metadata = self._read_metadata(doc, recorded)
            except OAuthError as error:
                self._fail(error)
                return
        self._need_run().expected_issuer = self._metadata.issuer
        tokens = self._tokens
        if tokens is not None and tokens.issuer != self._metadata.issuer:
            self._emit(DeleteTokens(key=self._key(tokens.issuer), only_if=tokens))
            self._tokens = None
        self._after_metadata(now)

    def _read_metadata(self, doc: Mapping[str, Any], issuer: str) -> _Metadata:
        what = "the authorization server metadata"
        code_grant = self.config.grant == "authorization_code"
        authz = _opt_str(doc, "authorization_endpoint", what)
        token = _opt_str(doc, "token_endpoint", what)
        registration = _opt_str(doc, "registration_endpoint", what)
        if token is None or (code_grant and authz is None):
            raise InvalidMetadata(f"{what} lacks an authorization or token endpoint (O14)")
        for name, url in (
            ("authorization", authz),
            ("token", token),
            ("registration", registration),
        ):
            if url is None:
                continue
            if not _absolute(url):
                raise InvalidMetadata(
                    f"{what}: the {name} endpoint {excerpt(_no_query(url), _SHOWN)!r} is not an "
                    "absolute https URL (O14, O63)"
                )
            refused = self._refused(url, f"{name} endpoint")
            if refused is not None:
                raise refused
        methods = _str_list(doc, "code_challenge_methods_supported", what)
        if code_grant and "S256" not in (methods or ()):
            raise PkceNotSupported(
                f"the authorization server {excerpt(issuer, _SHOWN)!r} does not offer PKCE "
                "S256; refusing to authorize without it (O15)"
            )
        cimd = doc.get("client_id_metadata_document_supported") is True
        iss_supported = doc.get("authorization_response_iss_parameter_supported") is True
        return _Metadata(
            issuer=issuer,
            authorization_endpoint=authz,
            token_endpoint=token,
            registration_endpoint=registration,
            scopes_supported=_str_list(doc, "scopes_supported", what) or (),
            auth_methods=_str_list(doc, "token_endpoint_auth_methods_supported", what),
            cimd=cimd,
            iss_supported=iss_supported,
        )

    # --- after discovery: refresh, client grant, or registration + authorization --------

    def _after_metadata(self, now: float) -> None:
        run = self._need_run()
        meta = self._need_metadata()
        tokens = self._tokens
        if (
            run.goal is _Goal.CHECK_THEN_REFRESH
            and tokens is not None
            and tokens.refresh_token
            and issuers_match(meta.issuer, tokens.issuer)
        ):
            self._refresh(now)  # O52: same issuer, refresh once
            return
        scope = self._scope_for(run)
        run.scope = scope
        try:
            client = self._client(meta, now)
        except OAuthError as error:
            self._fail(error)
            return
        if client is None:
            self._register(now)
            return
        run.client = client
        if self.config.grant == "client_credentials":
            self._client_credentials(now)  # O71, O61
        else:
            self._authorize(now)

    def _scope_for(self, run: _Run) -> str | None:
        """O19 first time; O22 union on every re-authorization; O21 offline_access."""
        granted = self._tokens.scope if self._tokens else None
        previous = _union_scopes(self._requested_scope, granted)
        base: str | None
        if previous:
            base = _union_scopes(previous, run.challenge_scope)  # O22
        elif self.config.scope is not None:
            base = _union_scopes(self.config.scope, run.challenge_scope)
        else:
            # O19: the challenge's scope, else PRM scopes_supported, else none (never
            # the AS's scopes_supported).
            base = run.challenge_scope or " ".join(self._prm_scopes) or None
        meta = self._metadata
        if (
            base
            and self.config.grant == "authorization_code"
            and self.config.want_refresh_tokens
            and meta is not None
            and "offline_access" in meta.scopes_supported
        ):
            base = _union_scopes(base, "offline_access")
        return base

    def _client(self, meta: _Metadata, now: float) -> ClientRecord | None:
        """O24: pre-registered → CIMD → a stored DCR client still usable (O28) → None."""
        pre = self.config.preregistered
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
                redirect_uris=(self.config.redirect_uri,),
                issuer=meta.issuer,
                kind="pre",
            )
        if self.config.client_metadata_url and meta.cimd:
            return ClientRecord(
                client_id=self.config.client_metadata_url,
                auth_method="none",
                redirect_uris=(self.config.redirect_uri,),
                issuer=meta.issuer,
                kind="cimd",
            )
        stored = self._clients.get(meta.issuer)
        if stored is not None:
            expiry = stored.client_secret_expires_at
            if (
                stored.kind == "dcr"
                and (not expiry or expiry > now)
                and _redirect_registered(self.config.redirect_uri, stored.redirect_uris)
                and _covers(stored.scope, self._need_run().scope)
            ):
                return stored
            self._clients.pop(meta.issuer, None)
        if meta.registration_endpoint is None:
            raise ClientRegistrationRequired(
                f"the authorization server {excerpt(meta.issuer, _SHOWN)!r} offers no "
                "dynamic registration or client ID metadata documents; configure a client "
                "id (O24)"
            )
        return None

    def _register(self, now: float) -> None:
        """O26: dynamic client registration."""
        run = self._need_run()
        meta = self._need_metadata()
        methods = meta.auth_methods
        if not methods or "none" in methods:
            method = "none"
        else:
            method = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in methods), "none"
            )
        grant_types = ["authorization_code"]
        if self.config.want_refresh_tokens:
            grant_types.append("refresh_token")
        body: dict[str, Any] = {
            "redirect_uris": [self.config.redirect_uri],
            "client_name": self.config.client_name,
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.config.application_type,
        }
        if run.scope:
            body["scope"] = run.scope
        self._phase = _Phase.REGISTERING
        headers = [(b"content-type", _JSON), (b"accept", _JSON)]
        url = meta.registration_endpoint or ""
        self._send(Purpose.REGISTER, "POST", url, headers, json.dumps(body).encode("utf-8"))

    def _on_register(self, ex: _Exchange, now: float) -> None:
        meta = self._need_metadata()
        if 300 <= ex.status < 400:
            self._fail(self._redirect("the registration endpoint", ex.status))
            return
        if ex.status >= 500 or ex.status == 429:
            self._fail(self._transient("client registration", ex))
            return
        if ex.status not in (200, 201):
            code, description = self._oauth_error(ex.body)
            self._fail(
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
            uris = _str_list(doc, "redirect_uris", what) or (self.config.redirect_uri,)
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
            self._fail(error)
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
        self._remember(secret)
        self._clients[meta.issuer] = client
        self._emit(SaveClient(issuer=meta.issuer, client=client))
        run = self._need_run()
        run.client = client
        self._authorize(now)

    # --- authorization request and callback --------------------------------------------

    def _entropy(self, n: int) -> bytes:
        data = self._token_bytes(n)
        if not isinstance(data, bytes) or len(data) != n:
            raise InvalidValue(f"token_bytes({n}) must return {n} bytes")
        return data

    def _authorize(self, now: float) -> None:
        """O31–O35: fresh PKCE pair and state; hand the URL to the host."""
        run = self._need_run()
        meta = self._need_metadata()
        client = run.client
        assert client is not None
        run.verifier = _b64url(self._entropy(32))
        run.state = _b64url(self._entropy(32))
        self._remember(run.verifier, run.state)
        run.code_used = False
        params = [
            ("response_type", "code"),
            ("client_id", client.client_id),
            ("redirect_uri", self.config.redirect_uri),
            ("state", run.state),
            ("code_challenge", pkce_challenge(run.verifier)),
            ("code_challenge_method", "S256"),
            ("resource", self._resource or canonical_resource(self.config.server_url)),
        ]
        if run.scope:
            params.append(("scope", run.scope))
            if "offline_access" in _split_scopes(run.scope):
                params.append(("prompt", "consent"))  # O21
        endpoint = meta.authorization_endpoint or ""
        parts = urlsplit(endpoint)
        query = "&".join(q for q in (parts.query, urlencode(params)) if q)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
        run.deadline = now + self.config.user_wait
        self._phase = _Phase.AWAIT_USER
        self._requested_scope = run.scope
        _log.debug("oauth: authorization at %s", _no_query(url))
        self._emit(
            OpenAuthorizationUrl(
                url=url, redirect_uri=self.config.redirect_uri, deadline=run.deadline
            )
        )

    def receive_callback(self, callback_url: str, now: float) -> None:
        """O36–O40: the full redirect URL the user agent arrived at."""
        run = self._run
        if run is None or self._phase is not _Phase.AWAIT_USER:
            return  # late or stray: nothing waits for it
        meta = self._need_metadata()
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
            self._fail(
                AuthorizationResponseRejected(
                    "the authorization response's state is missing or does not match; "
                    "no token was requested (O37)"
                )
            )
            return
        iss = params.get("iss")
        if iss is not None and iss != meta.issuer:
            self._fail(
                AuthorizationResponseRejected(
                    f"the authorization response came from issuer "
                    f"{excerpt(self._scrub(iss), _SHOWN)!r}, "
                    f"expected {excerpt(meta.issuer, _SHOWN)!r}; no token was requested (O38)"
                )
            )
            return
        if iss is None and meta.iss_supported:
            self._fail(
                AuthorizationResponseRejected(
                    "the authorization server promised an 'iss' parameter and the response "
                    "has none; no token was requested (O38)"
                )
            )
            return
        error = params.get("error")
        if error is not None:
            self._fail(
                AuthorizationDenied(
                    f"authorization was refused: {excerpt(self._scrub(error), 60)} (O39)",
                    error=excerpt(self._scrub(error), 60),
                )
            )
            return
        code = params.get("code")
        if not code or run.code_used:
            self._fail(
                AuthorizationResponseRejected("the authorization response has no code (O40)")
            )
            return
        run.code_used = True
        self._remember(code)
        client = run.client
        assert client is not None
        params_out = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri),  # O35
            ("code_verifier", run.verifier or ""),
            ("resource", self._resource or canonical_resource(self.config.server_url)),
        ]
        self._phase = _Phase.EXCHANGING
        # O43: only the token endpoint of the issuer recorded for this state.
        self._token_request(Purpose.TOKEN_CODE, meta.token_endpoint, params_out, client, now)

    def handle_timer(self, now: float) -> None:
        """O41: the user wait ran out; or a busy refresh lock is asked for again."""
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return
        if self._phase is _Phase.LOCKING:
            self._ask_lock(now)
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

    # --- token requests -------------------------------------------------------------------

    def _refresh(self, now: float) -> None:
        """O53: to the token endpoint recorded with the token; never scope widening (O57).

        First the store's refresh lock (``LockTokens``): with it held, what the
        store holds now is read, and a set another run stored meanwhile is taken
        instead of refreshing ours (its refresh token may have rotated ours away)."""
        run = self._need_run()
        if not run.locked:
            self._phase = _Phase.LOCKING
            run.lock_since = now
            run.lock_tries = 0
            self._ask_lock(now)
            return
        tokens = self._tokens
        assert tokens is not None and tokens.refresh_token
        run.refreshing = tokens
        self._phase = _Phase.REFRESHING
        params = [("grant_type", "refresh_token"), ("refresh_token", tokens.refresh_token)]
        params.append(("resource", tokens.resource))
        if tokens.scope:
            params.append(("scope", tokens.scope))
        client = self._client_for_tokens(tokens)
        self._token_request(Purpose.TOKEN_REFRESH, tokens.token_endpoint, params, client, now)

    def _ask_lock(self, now: float) -> None:
        run = self._need_run()
        self._lock_attempts += 1
        run.lock_attempt = self._lock_attempts
        run.lock_retry_at = None
        run.lock_tries += 1
        self._emit(LockTokens(lock_id=run.lock_attempt, server_url=self.config.server_url))

    def lock_answered(self, lock_id: int, held: bool, current: TokenSet | None, now: float) -> None:
        """The store's answer to ``LockTokens(lock_id)``: ``held`` the refresh lock is
        ours now; ``current`` the tokens the store holds for the server, read under it."""
        run = self._run
        if run is None or self._phase is not _Phase.LOCKING or lock_id != run.lock_attempt:
            if held:  # a lock no run waits for any more: give it straight back
                self._emit(UnlockTokens(lock_id=lock_id, server_url=self.config.server_url))
            return
        if not held:
            if now - run.lock_since >= self.config.request_timeout:
                # Another run's refresh is bounded by the same request timeout.
                self._fail(
                    OAuthTransientError(
                        "another run sharing the token store held its refresh lock for "
                        f"{self.config.request_timeout:g} s; try again"
                    )
                )
                return
            run.lock_retry_at = now + _LOCK_POLL[min(run.lock_tries, len(_LOCK_POLL)) - 1]
            return
        run.locked = True
        ours = self._tokens
        if (
            current is not None
            and ours is not None
            and issuers_match(current.issuer, ours.issuer)
            and (current.access_token, current.refresh_token)
            != (ours.access_token, ours.refresh_token)
        ):
            # Another run refreshed (or signed in) meanwhile: its set is the live one.
            _log.debug("oauth: the store holds newer tokens; using them")
            self._tokens = current
            self._remember(current.access_token, current.refresh_token)
            if current.expires_at is None or now < current.expires_at:
                self._adopt(current)
                return
            if not current.refresh_token:
                self._release_lock()
                goal = _Goal.AUTHORIZE
                self._run = None
                self._tokens = None
                self._start(
                    goal, now, scope=run.challenge_scope, resource_metadata=run.resource_metadata
                )
                return
        self._refresh(now)

    def _adopt(self, tokens: TokenSet) -> None:
        """Tokens another run stored (and this one read under the lock) are used as if
        this run had obtained them; nothing is written back."""
        self._release_lock()
        self._generation += 1
        self._phase = _Phase.IDLE
        self._run = None
        self._last_result = Authorized(tokens=tokens)
        self._events.append(self._last_result)

    def _release_lock(self) -> None:
        run = self._run
        if run is not None and run.locked:
            run.locked = False
            self._emit(UnlockTokens(lock_id=run.lock_attempt, server_url=self.config.server_url))

    def _client_for_tokens(self, tokens: TokenSet) -> ClientRecord:
        pre = self.config.preregistered
        if pre is not None and pre.client_id == tokens.client_id:
            meta = self._metadata
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
        stored = self._clients.get(tokens.issuer)
        if stored is not None and stored.client_id == tokens.client_id:
            return stored
        return ClientRecord(client_id=tokens.client_id, issuer=tokens.issuer, kind="cimd")

    def _client_credentials(self, now: float) -> None:
        """O71: no browser, no registration."""
        run = self._need_run()
        meta = self._need_metadata()
        client = run.client
        assert client is not None
        self._phase = _Phase.CLIENT_GRANT
        self._requested_scope = run.scope
        params = [("grant_type", "client_credentials")]
        if run.scope:
            params.append(("scope", run.scope))
        params.append(("resource", self._resource or canonical_resource(self.config.server_url)))
        self._token_request(
            Purpose.TOKEN_CLIENT_CREDENTIALS, meta.token_endpoint, params, client, now
        )

    def _token_request(
        self,
        purpose: Purpose,
        url: str,
        params: list[tuple[str, str]],
        client: ClientRecord,
        now: float,
    ) -> None:
        """O44: client authentication; private_key_jwt goes through the host signer."""
        run = self._need_run()
        run.client = client
        if client.auth_method == "private_key_jwt":
            pre = self.config.preregistered
            meta = self._metadata
            audience = meta.issuer if meta is not None else client.issuer
            iat = int(now)
            claims = {
                "iss": client.client_id,
                "sub": client.client_id,
                "aud": audience,
                "iat": iat,
                "exp": iat + int(min(self.config.assertion_lifetime, 300.0)),
                "jti": _b64url(self._entropy(16)),
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
            self._resume_phase = self._phase
            self._phase = _Phase.SIGNING
            self._emit(
                SignAssertion(
                    request_id=run.assertion_id,
                    audience=audience,
                    header=header,
                    claims=claims,
                    signing_input=signing_input,
                )
            )
            return
        self._post_token(purpose, url, params, client, None)

    def receive_assertion(self, request_id: int, assertion: str, now: float) -> None:
        """The host signed the ``SignAssertion`` with ``request_id`` (O72)."""
        run = self._run
        if run is None or self._phase is not _Phase.SIGNING or request_id != run.assertion_id:
            return
        if not isinstance(assertion, str) or assertion.count(".") != 2 or " " in assertion:
            raise InvalidValue("the assertion must be a compact JWS (header.claims.signature)")
        pending = run.pending_token
        client = run.client
        assert pending is not None and client is not None
        run.pending_token = None
        self._remember(assertion)
        self._phase = self._resume_phase
        self._post_token(pending.purpose, pending.url, pending.params, client, assertion)

    def _post_token(
        self,
        purpose: Purpose,
        url: str,
        params: list[tuple[str, str]],
        client: ClientRecord,
        assertion: str | None,
    ) -> None:
        headers = [(b"content-type", _FORM), (b"accept", _JSON)]
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
        self._send(purpose, "POST", url, headers, urlencode(body).encode("ascii"))

    def _on_token(self, ex: _Exchange, now: float) -> None:
        if 300 <= ex.status < 400:
            self._fail(self._redirect("the token endpoint", ex.status))  # O62
            return
        if ex.status >= 500 or ex.status == 429:
            # O55: a refresh that failed this way keeps the tokens.
            self._fail(self._transient("the token request", ex))
            return
        if ex.status != 200:
            self._on_token_error(ex, now)
            return
        try:
            tokens = self._read_tokens(ex, now)
        except OAuthError as error:
            self._fail(error)
            return
        self._lifetime = None if tokens.expires_at is None else tokens.expires_at - now
        self._store(tokens)

    def _read_tokens(self, ex: _Exchange, now: float) -> TokenSet:
        """O46: 200 JSON, a non-empty ``access_token``, ``token_type`` Bearer."""
        what = "the token response"
        doc = _parse_json_object(bytes(ex.body), what)
        access = doc.get("access_token")
        if not isinstance(access, str) or not access:
            raise MalformedResponse(f"{what} has no 'access_token'")
        token_type = doc.get("token_type")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise MalformedResponse(f"{what}: 'token_type' is not Bearer")
        if not all("!" <= ch <= "~" for ch in access):
            # F3: the token becomes a header value; a line break would add headers
            raise MalformedResponse(f"{what}: 'access_token' has characters outside visible ASCII")
        expires_in = doc.get("expires_in")
        expires_at: float | None = None
        if expires_in is not None:
            expires_at = now + _number(expires_in, what, "expires_in")
        refresh = _opt_str(doc, "refresh_token", what)
        scope = _opt_str(doc, "scope", what)
        run = self._need_run()
        client = run.client
        assert client is not None
        old = self._tokens
        if ex.purpose is Purpose.TOKEN_REFRESH and old is not None:
            # O54: keep the old refresh token and scope when omitted; rotate otherwise.
            return replace(
                old,
                access_token=access,
                token_type="Bearer",
                expires_at=expires_at,
                refresh_token=refresh or old.refresh_token,
                scope=scope or old.scope,
            )
        meta = self._need_metadata()
        return TokenSet(
            access_token=access,
            token_type="Bearer",
            expires_at=expires_at,
            refresh_token=refresh,
            scope=scope or run.scope,  # O23
            issuer=meta.issuer,
            token_endpoint=meta.token_endpoint,
            resource=self._resource or canonical_resource(self.config.server_url),
            client_id=client.client_id,
        )

    def _on_token_error(self, ex: _Exchange, now: float) -> None:
        run = self._need_run()
        code, description = self._oauth_error(ex.body)
        if ex.purpose is Purpose.TOKEN_REFRESH:
            # O55: the refresh token is dead: forget the tokens, authorize anew.
            # Only those this refresh started from: the store's lock is held, so a
            # run sharing the store cannot have stored newer ones meanwhile, and the
            # condition keeps a store without the lock from losing them either.
            tokens = self._tokens
            if tokens is not None:
                self._emit(DeleteTokens(key=self._key(tokens.issuer), only_if=tokens))
            self._release_lock()
            self._tokens = None
            if code == "invalid_client":
                self._forget_client(tokens.issuer if tokens else None)
            _log.debug("oauth: refresh refused (HTTP %d); authorizing anew", ex.status)
            goal = _Goal.AUTHORIZE
            self._run = None
            self._start(
                goal, now, scope=run.challenge_scope, resource_metadata=run.resource_metadata
            )
            return
        client = run.client
        if (
            code == "invalid_client"
            and client is not None
            and client.kind == "dcr"
            and not run.client_retry_used
            and ex.purpose is Purpose.TOKEN_CODE
        ):
            # O47: the stored registration is gone; register once more and re-authorize.
            self._forget_client(client.issuer)
            run.client_retry_used = True
            self._register(now)
            return
        shown = f": {code}" if code else ""
        detail = f" ({description})" if description else ""
        self._fail(
            TokenError(
                f"the token endpoint refused the request with HTTP {ex.status}{shown}{detail} (O47)",
                error=code,
                status=ex.status,
            )
        )

    def _forget_client(self, issuer: str | None) -> None:
        if issuer is not None and self._clients.pop(issuer, None) is not None:
            self._emit(DeleteClient(issuer=issuer))

    def _store(self, tokens: TokenSet) -> None:
        """O48: store first (a refresh's under the lock, in place of the set it started
        from), then tell the waiting requests."""
        run = self._need_run()
        self._tokens = tokens
        self._remember(tokens.access_token, tokens.refresh_token)
        self._generation += 1
        self._early_refresh_at = None  # R6: the pause is for refreshes that failed
        replaces = run.refreshing if run.locked else None
        self._emit(SaveTokens(key=self._key(tokens.issuer), tokens=tokens, replaces=replaces))
        self._release_lock()
        self._phase = _Phase.IDLE
        self._run = None
        self._last_result = Authorized(tokens=tokens)
        self._events.append(self._last_result)

    # --- responses ------------------------------------------------------------------------

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
        handler = {
            Purpose.PRM: self._on_prm,
            Purpose.ASM: self._on_asm,
            Purpose.LEGACY_ASM: self._on_legacy_asm,
            Purpose.REGISTER: self._on_register,
            Purpose.TOKEN_CODE: self._on_token,
            Purpose.TOKEN_REFRESH: self._on_token,
            Purpose.TOKEN_CLIENT_CREDENTIALS: self._on_token,
        }[ex.purpose]
        handler(ex, now)

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

    # --- plumbing ---------------------------------------------------------------------------

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
        return TokenKey(server_url=self.config.server_url, issuer=issuer)

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
            tokens.access_token if tokens else None,
            tokens.refresh_token if tokens else None,
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


def _covers(registered: str | None, wanted: str | None) -> bool:
    """O22, O28: a client registered for ``registered`` may ask for ``wanted``
    (an unknown registered scope is taken to cover anything)."""
    if registered is None:
        return True
    return set(_split_scopes(wanted)) <= set(_split_scopes(registered))


def _redirect_registered(uri: str, registered: Sequence[str]) -> bool:
    """O28: ``uri`` is one of ``registered``; for a loopback ``http`` redirect the
    port does not count (RFC 8252 7.3: a native app's listener takes any port)."""
    if uri in registered:
        return True
    parts = urlsplit(uri)
    if parts.scheme != "http" or not host_is_loopback(parts.hostname):
        return False
    for other in registered:
        theirs = urlsplit(other)
        if (theirs.scheme, theirs.hostname, theirs.path, theirs.query) == (
            parts.scheme,
            parts.hostname,
            parts.path,
            parts.query,
        ):
            return True
    return False


def _as_method(method: str) -> AuthMethod:
    if method == "client_secret_basic":
        return "client_secret_basic"
    if method == "client_secret_post":
        return "client_secret_post"
    if method == "private_key_jwt":
        return "private_key_jwt"
    return "none"


# The errors name their public module (in reprs, tracebacks and pickles, X2).
for _public in (
    OAuthError,
    DiscoveryError,
    ResourceMismatch,
    IssuerMismatch,
    AuthServerMetadataNotFound,
    InvalidMetadata,
    PkceNotSupported,
    RegistrationError,
    ClientRegistrationRequired,
    RegistrationUnusable,
    AuthorizationResponseRejected,
    AuthorizationDenied,
    AuthorizationTimeout,
    AuthorizationCancelled,
    AuthorizationRequired,
    TokenError,
    InsufficientScope,
    MalformedResponse,
    RedirectRefused,
    OAuthTransientError,
    DestinationRefused,
    HookError,
):
    _public.__module__ = "mcpcore"
del _public
