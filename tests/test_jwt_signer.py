"""The ready signer for private_key_jwt client assertions (A5, O72): ``mcpcore_jwt``.

The core builds the JWT and asks the host to sign it (``SignAssertion``); the
signer returns a compact JWS whose signature verifies with the public key, for
ES256 (raw r || s, 64 bytes, as JWS wants, not DER) and RS256. The key never
shows in a repr or an error.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from mcpcore import InvalidValue, SignAssertion
from mcpcore_jwt import PrivateKeySigner, async_signer


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _request(alg: str) -> SignAssertion:
    header = {"alg": alg, "typ": "JWT"}
    claims = {"iss": "client", "sub": "client", "aud": "https://as.example.test", "jti": "1"}
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return SignAssertion(
        request_id=1,
        audience="https://as.example.test",
        header=header,
        claims=claims,
        signing_input=signing_input.encode(),
    )


def _pem(key: object) -> bytes:
    return key.private_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def test_O72_es256_signature_verifies_and_is_raw_r_s() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    request = _request("ES256")
    jws = PrivateKeySigner(_pem(key).decode(), "ES256")(request)
    head, body, signature = jws.split(".")
    assert f"{head}.{body}".encode() == request.signing_input
    raw = _unb64(signature)
    assert len(raw) == 64
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key.public_key().verify(der, request.signing_input, ec.ECDSA(hashes.SHA256()))


def test_O72_rs256_signature_verifies() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    request = _request("RS256")
    jws = PrivateKeySigner(_pem(key), "RS256")(request)
    signature = _unb64(jws.rsplit(".", 1)[1])
    key.public_key().verify(signature, request.signing_input, padding.PKCS1v15(), hashes.SHA256())


async def _sign_async(signer: PrivateKeySigner, request: SignAssertion) -> str:
    return await async_signer(signer)(request)


@pytest.mark.anyio
async def test_A5_the_async_wrapper_signs_the_same_way() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    jws = await _sign_async(PrivateKeySigner(_pem(key), "ES256"), _request("ES256"))
    assert jws.count(".") == 2


def test_A4_a_bad_key_or_algorithm_is_a_clear_error_without_the_key() -> None:
    secret_pem = (
        "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----\n"
    )
    with pytest.raises(InvalidValue) as caught:
        PrivateKeySigner(secret_pem)
    assert "c2VjcmV0" not in str(caught.value)
    with pytest.raises(InvalidValue, match="ES256 or RS256"):
        PrivateKeySigner(secret_pem, "HS256")
    key = ec.generate_private_key(ec.SECP256R1())
    signer = PrivateKeySigner(_pem(key))
    assert "PRIVATE" not in repr(signer) and repr(signer) == "PrivateKeySigner(algorithm='ES256')"
    with pytest.raises(InvalidValue, match="RS256"):
        signer(_request("RS256"))  # the request asks for another algorithm than the key's


def _never_shown(error: BaseException, pem: bytes) -> None:
    text = str(error) + repr(error)
    body = b"".join(pem.splitlines()[1:-1]).decode()
    for start in range(0, len(body) - 16, 16):  # no run of the key's base64 shows
        assert body[start : start + 16] not in text


@pytest.mark.parametrize(
    ("make", "algorithm", "says"),
    [
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048), "ES256", "RSA"),
        (lambda: ec.generate_private_key(ec.SECP384R1()), "ES256", "secp384r1"),
        (lambda: ec.generate_private_key(ec.SECP256K1()), "ES256", "secp256k1"),
        (lambda: ec.generate_private_key(ec.SECP256R1()), "RS256", "EC key"),
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=1024), "RS256", "1024"),
        (lambda: ed25519.Ed25519PrivateKey.generate(), "ES256", "Ed25519"),
    ],
)
def test_O72_a_key_that_does_not_fit_the_algorithm_is_refused_when_the_signer_is_made(
    make: Any, algorithm: str, says: str
) -> None:
    pem = _pem(make())
    with pytest.raises(InvalidValue) as caught:
        PrivateKeySigner(pem, algorithm)
    assert algorithm in str(caught.value) and says in str(caught.value)
    _never_shown(caught.value, pem)
