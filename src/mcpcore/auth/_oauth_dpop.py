"""DPoP (N1, RFC 9449): proofs of possession, and the nonces servers hand out.

``Dpop`` holds the host's key (a ``DpopKey``: its public JWK, its algorithm,
a ``sign`` function) and the nonces each origin gave (``DPoP-Nonce``). For
each request it builds a proof: the header ``{"typ": "dpop+jwt", "alg", "jwk"}``
(the public key only) and the claims ``jti`` (fresh), ``htm`` (the method),
``htu`` (the URL without query and fragment), ``iat``, ``ath``
(``base64url(SHA-256(access token))`` when a token rides with it) and
``nonce`` (when the origin gave one); the key signs ``header.claims``. The
key's ``sign`` is the host's computation, called here like ``token_bytes``:
signing with a key in memory is no I/O, and a proof is needed on every
request, so it never waits for a hook.

Whether a token request carries a proof is the flow's decision (``active``):
always with ``dpop=True``; with ``dpop="auto"`` when the authorization
server lists the key's algorithm in ``dpop_signing_alg_values_supported``;
and for a refresh of a token that is bound to the key. A token comes back
bound when its ``token_type`` is ``DPoP``; it then goes out as
``Authorization: DPoP <token>`` with a proof of its own on every MCP request.

The key is kept with the tokens bound to it: a key that can ``export()`` its
private part (opaque text: the core never reads it) has that text stored in
``TokenSet.dpop_key_export``. A client given no key of the host's takes the
stored key up again (``stored_key``): the driver revives the text into a key
(``mcpcore_jwt.DpopKey.from_export``), and it is used only when its thumbprint
is the one the tokens are bound to. A key the host gave always wins.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

from ..base._errors import InvalidValue
from ._oauth_rules import _b64url, compact_jws
from ._oauth_types import DpopKey, TokenSet, _Metadata, access_token_bytes

__all__ = ["Dpop", "jwk_thumbprint", "key_secrets", "stored_key", "token_secrets"]

_log = logging.getLogger("mcpcore.oauth")

# RFC 7638 3.2: the members of each key type that a thumbprint covers.
_THUMBPRINT_MEMBERS: Final = {
    "EC": ("crv", "kty", "x", "y"),
    "RSA": ("e", "kty", "n"),
    "OKP": ("crv", "kty", "x"),
}
_PRIVATE_MEMBERS: Final = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_NONCES_KEPT: Final = 32  # origins whose last nonce is kept


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638: ``base64url(SHA-256)`` of the key's required members, sorted, compact."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None or not all(isinstance(jwk.get(m), str) for m in members):
        raise InvalidValue("the DPoP key's public JWK must be an EC, RSA or OKP key")
    canonical = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return _b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def key_secrets(export: str | None) -> tuple[str, ...]:
    """O64: what of an exported key must never show: the text, and (when it is a
    JWK in JSON) each private member's value, which a server might quote alone."""
    if not export:
        return ()
    found = [export]
    try:
        doc = json.loads(export)
    except (ValueError, RecursionError):
        return tuple(found)
    if isinstance(doc, dict):
        found += [v for k, v in doc.items() if k in _PRIVATE_MEMBERS and isinstance(v, str)]
    return tuple(found)


def token_secrets(tokens: TokenSet | None) -> tuple[str | None, ...]:
    """O64: the secrets a token set holds: its tokens and the key kept with them."""
    if tokens is None:
        return ()
    return (tokens.access_token, tokens.refresh_token, *key_secrets(tokens.dpop_key_export))


def stored_key(tokens: TokenSet | None, revive: Callable[[str], DpopKey]) -> DpopKey | None:
    """N1: for a client given no key of the host's, the key the stored ``tokens``
    are bound to, revived from its export by ``revive`` (the driver's
    ``mcpcore_jwt.DpopKey.from_export``); None when they are not bound, no export
    was stored, or it does not revive into the key they are bound to (logged by
    the error's type, never the text)."""
    if tokens is None or tokens.dpop_jkt is None or not tokens.dpop_key_export:
        return None
    try:
        key = revive(tokens.dpop_key_export)
        jkt = jwk_thumbprint(key.public_jwk)
    except Exception as exc:
        _log.warning("oauth: the stored DPoP key could not be used: %s", type(exc).__name__)
        return None
    if jkt != tokens.dpop_jkt:
        _log.warning("oauth: the stored DPoP key is not the one its tokens are bound to")
        return None
    return key


def _nonce_ok(value: str) -> bool:
    """RFC 9449 8.1: a nonce is 1*NQCHAR (visible ASCII but ``"`` and ``\\``)."""
    return bool(value) and all("!" <= ch <= "~" and ch not in '"\\' for ch in value)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2].lower()}"


def htu(url: str) -> str:
    """RFC 9449 4.2: the request's URL without query and fragment."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme.lower(), netloc.lower(), parts.path or "/", "", ""))


class Dpop:
    """The key and the nonces of one flow (see the module docstring)."""

    __slots__ = ("_entropy", "_export", "_nonces", "jkt", "key", "mode")

    def __init__(
        self, mode: bool | Literal["auto"], key: DpopKey, entropy: Callable[[int], bytes]
    ) -> None:
        jwk = key.public_jwk
        if not isinstance(jwk, Mapping) or _PRIVATE_MEMBERS & set(jwk):
            raise InvalidValue("the DPoP key's public_jwk must be a public JWK (no private part)")
        if not isinstance(key.alg, str) or not key.alg or key.alg == "none":
            raise InvalidValue("the DPoP key needs an asymmetric JWS algorithm, e.g. ES256")
        self.mode = mode
        self.key = key
        self.jkt = jwk_thumbprint(jwk)
        self._entropy = entropy
        self._nonces: dict[str, str] = {}  # origin -> the last nonce it gave
        self._export: str | None = None

    def __repr__(self) -> str:
        return f"Dpop(mode={self.mode!r}, alg={self.key.alg!r}, jkt={self.jkt!r})"

    def export(self) -> str | None:
        """The key's private part as it exports it (None: it cannot), asked once."""
        if self._export is None:
            export = getattr(self.key, "export", None)
            if not callable(export):
                return None
            text = export()
            if not isinstance(text, str) or not text:
                raise InvalidValue("the DPoP key's export() must return its text")
            self._export = text
        return self._export

    def active(self, meta: _Metadata | None) -> bool:
        """Whether a token request to ``meta``'s server carries a proof."""
        if self.mode is True:
            return True
        return meta is not None and self.key.alg in meta.dpop_algs

    def nonce(self, url: str) -> str | None:
        return self._nonces.get(_origin(url))

    def note_nonce(self, url: str, headers: Sequence[tuple[bytes, bytes]]) -> bool:
        """Keep the ``DPoP-Nonce`` a response from ``url`` gave (per origin); True if one came."""
        for name, value in headers:
            if name.lower() != b"dpop-nonce":
                continue
            text = value.decode("latin-1").strip()
            if not _nonce_ok(text):
                return False  # unusable: as if none came
            origin = _origin(url)
            self._nonces.pop(origin, None)
            if len(self._nonces) >= _NONCES_KEPT:
                self._nonces.pop(next(iter(self._nonces)))
            self._nonces[origin] = text
            return True
        return False

    def proof(self, method: str, url: str, now: float, access_token: str | None = None) -> bytes:
        """A fresh proof for ``method url`` (the ``DPoP`` header's value)."""
        header = {"typ": "dpop+jwt", "alg": self.key.alg, "jwk": dict(self.key.public_jwk)}
        claims: dict[str, Any] = {
            "jti": _b64url(self._entropy(16)),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(now),
        }
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token_bytes(access_token)).digest())
        nonce = self.nonce(url)
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = (
            _b64url(json.dumps(header, separators=(",", ":")).encode("utf-8"))
            + "."
            + _b64url(json.dumps(claims, separators=(",", ":")).encode("utf-8"))
        ).encode("ascii")
        signature = self.key.sign(signing_input)
        if not isinstance(signature, bytes) or not signature:
            raise InvalidValue("the DPoP key's sign() must return the signature's bytes")
        return compact_jws(signing_input, signature).encode("ascii")
