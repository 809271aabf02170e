"""The OAuth flow's errors: ``OAuthError`` and the kinds a host can tell apart.

Each says which rule failed (discovery, registration, the person's answer,
the token endpoint, a host hook, a transient failure); none carries a secret,
and server text in one is escaped and cut short (A4, O64, O65). They are
shown as ``mcpcore.<Name>`` (X2). ``fresh_copy`` gives each request that fails
with one error a copy of its own. This module imports nothing of the flow.
"""

from __future__ import annotations

from typing import TypeVar

from ..base._errors import McpError, TransportError

__all__ = [
    "AuthServerMetadataNotFound",
    "AuthorizationCancelled",
    "AuthorizationDenied",
    "AuthorizationRequired",
    "AuthorizationResponseRejected",
    "AuthorizationTimeout",
    "ClientRegistrationRequired",
    "DestinationRefused",
    "DiscoveryError",
    "HookError",
    "InsufficientScope",
    "InvalidMetadata",
    "IssuerMismatch",
    "MalformedResponse",
    "OAuthError",
    "OAuthTransientError",
    "PkceNotSupported",
    "RedirectRefused",
    "RegistrationError",
    "RegistrationUnusable",
    "ResourceMismatch",
    "TokenError",
    "fresh_copy",
]


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
    """O47: the token endpoint refused. ``error`` is the OAuth code, ``status`` the HTTP one.

    ``step`` names the request of a two-step grant that failed (N2):
    ``"token_exchange"`` at the identity provider, ``"jwt_bearer"`` at the
    authorization server; ``None`` for a grant of one step.
    """

    def __init__(
        self,
        message: str,
        *,
        error: str | None = None,
        status: int | None = None,
        step: str | None = None,
    ):
        super().__init__(message)
        self.error = error
        self.status = status
        self.step = step


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
