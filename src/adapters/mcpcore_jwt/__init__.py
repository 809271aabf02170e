"""A ready signer for ``private_key_jwt`` client assertions (A5, O72).

The core builds the JWT's header and claims and asks the host to sign them
(``SignAssertion``); this module does that with a PEM private key through the
``cryptography`` package (the optional extra ``mcpcore[jwt]``). ES256 (an EC
key on P-256) and RS256 (an RSA key of 2048 bits or more) are supported; a key
that does not fit the algorithm is refused when the signer is made. ``PrivateKeySigner`` is a plain callable for the
threaded driver; ``async_signer`` wraps it for ``mcpcore_anyio``.

``DpopKey`` is the key DPoP proofs are signed with (N1): an ES256 key made
with ``DpopKey.generate()`` or read from a PEM with ``DpopKey(pem)``. The core
builds each proof and calls its ``sign``. ``export()`` gives its private part
as a private JWK in JSON, which the core keeps with the tokens bound to the
key, and ``DpopKey.from_export(text)`` makes the key again from it: a later
run given no key of its own uses the stored one (the drivers do this).

The key never appears in a repr, a log record or an error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcpcore import InvalidValue, SignAssertion, compact_jws

__all__ = ["DpopKey", "PrivateKeySigner", "async_signer"]

_ALGORITHMS = ("ES256", "RS256")


class PrivateKeySigner:
    """Signs ``SignAssertion`` requests with one private key (PEM, PKCS#8 or traditional)."""

    def __init__(self, private_key_pem: str | bytes, algorithm: str = "ES256") -> None:
        if algorithm not in _ALGORITHMS:
            raise InvalidValue(f"unsupported signing algorithm {algorithm!r}: use ES256 or RS256")
        try:
            from cryptography.hazmat.primitives.serialization import load_pem_private_key
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise InvalidValue("signing needs the 'cryptography' package: mcpcore[jwt]") from exc
        data = private_key_pem.encode() if isinstance(private_key_pem, str) else private_key_pem
        try:
            self._key: Any = load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise InvalidValue("the private key is not a usable PEM private key") from None
        _check_fits(self._key, algorithm)
        self.algorithm = algorithm

    def __repr__(self) -> str:
        return f"PrivateKeySigner(algorithm={self.algorithm!r})"

    def __call__(self, request: SignAssertion) -> str:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        wanted = request.header.get("alg", self.algorithm)
        if wanted != self.algorithm:
            raise InvalidValue(f"asked to sign with {wanted!r}, the key is for {self.algorithm}")
        if self.algorithm == "ES256":
            der = self._key.sign(request.signing_input, ec.ECDSA(hashes.SHA256()))
            r, s = decode_dss_signature(der)
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")  # JWS: raw r || s
        else:
            signature = self._key.sign(request.signing_input, padding.PKCS1v15(), hashes.SHA256())
        return compact_jws(request.signing_input, signature)


_RSA_MIN_BITS = 2048  # RFC 7518 3.3: RS256 keys of 2048 bits or more


def _check_fits(key: Any, algorithm: str) -> None:
    """Refuse a key that cannot sign ``algorithm`` (RFC 7518 3.3, 3.4): ES256 needs
    an EC key on P-256, RS256 an RSA key of at least 2048 bits. The error names the
    kind of key, never the key."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if algorithm == "ES256":
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise InvalidValue(f"ES256 needs an EC P-256 private key, not {_kind(key)}")
        if not isinstance(key.curve, ec.SECP256R1):
            raise InvalidValue(
                f"ES256 needs an EC key on P-256 (secp256r1), not on {key.curve.name}"
            )
    elif not isinstance(key, rsa.RSAPrivateKey):
        raise InvalidValue(f"RS256 needs an RSA private key, not {_kind(key)}")
    elif key.key_size < _RSA_MIN_BITS:
        raise InvalidValue(
            f"RS256 needs an RSA key of at least {_RSA_MIN_BITS} bits, not {key.key_size}"
        )


def _kind(key: Any) -> str:
    """What kind of key ``key`` is, in words (its type, never its contents)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if isinstance(key, rsa.RSAPrivateKey):
        return f"an RSA key ({key.key_size} bits)"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return f"an EC key on {key.curve.name}"
    return f"a {type(key).__name__.lstrip('_')} key"


def async_signer(
    signer: Callable[[SignAssertion], str],
) -> Callable[[SignAssertion], Awaitable[str]]:
    """The same signer as a coroutine function, for ``mcpcore_anyio.McpClient``."""

    async def sign(request: SignAssertion) -> str:
        return signer(request)

    return sign


class DpopKey:
    """An ES256 key for DPoP proofs (N1): a ``mcpcore.DpopKey``.

    ``DpopKey(pem)`` uses an EC P-256 private key in PEM; ``DpopKey.generate()``
    makes a new one. ``public_jwk`` is its public half; ``sign`` gives the raw
    JWS signature (``r || s``). ``export()`` is the private key as a JWK in
    JSON (a secret: the core stores it with the tokens, never shows it) and
    ``DpopKey.from_export(text)`` the key again. The private key never shows.
    """

    alg = "ES256"

    def __init__(self, private_key_pem: str | bytes) -> None:
        self._signer = PrivateKeySigner(private_key_pem, "ES256")
        numbers = self._signer._key.public_key().public_numbers()
        self.public_jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }

    @classmethod
    def generate(cls) -> DpopKey:
        """A new ES256 key."""
        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise InvalidValue("DPoP needs the 'cryptography' package: mcpcore[jwt]") from exc
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return cls(pem)

    @classmethod
    def from_export(cls, text: str) -> DpopKey:
        """The key ``export()`` gave as ``text`` (``InvalidValue``, never naming it)."""
        import json

        try:
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise InvalidValue("DPoP needs the 'cryptography' package: mcpcore[jwt]") from exc
        try:
            jwk = json.loads(text)
            if not isinstance(jwk, dict) or (jwk.get("kty"), jwk.get("crv")) != ("EC", "P-256"):
                raise ValueError
            d = int.from_bytes(_b64decode(jwk["d"]), "big")
            key = ec.derive_private_key(d, ec.SECP256R1())
        except (ValueError, TypeError, KeyError, RecursionError):
            raise InvalidValue("the exported DPoP key is not an EC P-256 private JWK") from None
        made = cls(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        if (jwk.get("x"), jwk.get("y")) != (made.public_jwk["x"], made.public_jwk["y"]):
            raise InvalidValue(
                "the exported DPoP key's public part does not match its private part"
            )
        return made

    def export(self) -> str:
        """The private key as a JWK in JSON (``from_export`` reads it): a secret."""
        import json

        d = self._signer._key.private_numbers().private_value
        jwk = {**self.public_jwk, "d": _b64url(d.to_bytes(32, "big"))}
        return json.dumps(jwk, separators=(",", ":"), sort_keys=True)

    def __repr__(self) -> str:
        return f"DpopKey(alg='ES256', x={self.public_jwk['x'][:8]!r}...)"

    def sign(self, signing_input: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        der = self._signer._key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def _b64decode(text: object) -> bytes:
    import base64
    import binascii

    if not isinstance(text, str) or not text:
        raise ValueError
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        raise ValueError from None


def _b64url(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
