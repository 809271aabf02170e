"""The OAuth flow's vocabulary: its errors, records, actions, events and pure rules.

Everything here is data or a pure function: the errors the flow raises (none
carries a secret, A4/O64), the configuration and the records the store keeps
(``OAuthConfig``, ``TokenSet``, ``ClientRecord``), the actions and events the
flow hands out, the URL and header rules of discovery (``prm_candidates``,
``asm_candidates``, ``parse_www_authenticate``, ``canonical_resource``...),
the JSON readers, and the state of one run in flight (``_Run``). The flow
itself (``OAuthFlow`` and its phases) is in ``_oauth.py`` and the
``_oauth_*`` modules; ``_oauth.py`` re-exports all of this.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal, TypeVar, Union
from urllib.parse import urlsplit, urlunsplit

from ..base._errors import McpError, TransportError
from ..base._escape import excerpt
from ..base._events import AbortExchange
from ..wire._outbound import host_is_loopback

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
    # A3: the store is shared and has a sign-in lock: one sign-in at a time per
    # issuer, and a later one first takes fitting tokens another run stored.
    serialize_sign_ins: bool = False


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

    With ``sign_in`` (an issuer) it is that issuer's sign-in lock instead
    (``lock_sign_in``): clients sharing a store ask a person to sign in with
    one authorization server one at a time, and the one that comes second
    first reads what the first stored (R4).
    """

    lock_id: int
    server_url: str
    sign_in: str | None = None
    attempt: int = 0  # D2: set by the engine; report the answer with it


@dataclass(frozen=True, slots=True, kw_only=True)
class UnlockTokens:
    """Release the lock the ``LockTokens`` with the same ``lock_id`` took."""

    lock_id: int
    server_url: str
    sign_in: str | None = None
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
    lock_sign_in: str | None = None  # the lock asked for is this issuer's sign-in lock
    refreshing: TokenSet | None = None  # the set a refresh started from (CAS)


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
