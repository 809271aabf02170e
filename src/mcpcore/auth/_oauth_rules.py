"""The OAuth flow's pure rules, and the constants and logger its parts share.

Functions of their arguments only: the URL and header rules of discovery
(``prm_candidates``, ``asm_candidates``, ``parse_www_authenticate``,
``issuers_match``, ``resource_matches``, ``canonical_resource``), PKCE and
JWS (``pkce_challenge``, ``compact_jws``), scopes, the choice of a client's
auth method, the redirect and CIMD URL checks, and the readers of JSON
answers (a malformed one raises ``MalformedResponse``). It sits under the
records (``_oauth_types``) and over the errors (``_oauth_errors``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..base._escape import excerpt
from ..wire._outbound import host_is_loopback
from ._oauth_errors import MalformedResponse

__all__ = [
    "asm_candidates",
    "canonical_resource",
    "compact_jws",
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


# --- pure helpers ---------------------------------------------------------------------


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
