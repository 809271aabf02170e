"""Fuzz DPoP nonces and challenges (N1, RFC 9449; issue 44).

An ``OAuthFlow`` with ``dpop=True`` holds a token (bound to its key, or to another
key, or a plain Bearer one; a stored token may be any text). The bytes script a
conversation with the resource server: responses whose headers carry
``DPoP-Nonce`` fields (any name case, any value, several), 401s whose
``WWW-Authenticate`` fields hold ``DPoP``/``Bearer`` challenges built from
pieces (``error="use_dpop_nonce"``, quotes, commas, junk), and requests whose
headers are prepared, to URLs of the server with any path, query or fragment,
or of other origins.

Invariants:

* nothing raises (a nonce or challenge is server input; a stored token is the
  host's);
* nonces follow a reference: per origin, the first ``DPoP-Nonce`` field of a
  response decides; a value that is not ``1*NQCHAR`` is as if none came (the old
  one stays); at most 32 origins are kept, the least recently set dropped first;
* a 401 whose DPoP challenge says ``use_dpop_nonce`` and carries a usable nonce
  is retried at once, once per request, and never on any other 401;
* a request with a bound token goes out as ``Authorization: DPoP <token>`` with
  a proof that round-trips: header ``typ``/``alg``/``jwk`` (the public key only),
  claims ``htm`` (the method), ``htu`` (no query, no fragment), ``iat``, a fresh
  ``jti``, ``ath`` = ``base64url(SHA-256(token))``, and ``nonce`` exactly when
  the origin gave one; the key signed exactly ``header.claims``; the token itself
  is never in the proof;
* a token bound to another key (or a DPoP one bound to none) is not used (the
  request goes bare); an unbound
  one goes out as Bearer, with no proof.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from typing import Any
from urllib.parse import urlsplit

import _fuzzlib
from _fuzzlib import SECRET, Reader
from _oauthfuzz import AS, NOW, S, make_flow

from mcpcore.auth._oauth import RequestTicket, TokenSet
from mcpcore.auth._oauth_dpop import htu, jwk_thumbprint
from mcpcore.auth._oauth_rules import parse_www_authenticate
from mcpcore.auth._oauth_types import RETRY

JWK = {"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ"}
JKT = jwk_thumbprint(JWK)
SIGNATURE = b"sig-" + SECRET.encode()  # a proof carries it: it is no secret of the token


class Key:
    alg = "ES256"
    public_jwk = JWK

    def __init__(self) -> None:
        self.signed: list[bytes] = []

    def sign(self, signing_input: bytes) -> bytes:
        self.signed.append(signing_input)
        return SIGNATURE


_URLS = (
    S,
    S + "?q=1",
    S + "#frag",
    "https://MCP.example.test/mcp",
    "https://user:pw@mcp.example.test/mcp",
    "https://mcp.example.test:443/other",
    "https://mcp.example.test:8443/mcp",
    AS + "/token",
    "http://127.0.0.1:9/mcp",
)
_NAMES = (b"DPoP-Nonce", b"dpop-nonce", b"DPOP-NONCE", b"dpop-nonce ", b"x-nonce", b"dpop")
_NONCES = (b"n-1", b"n-2", b"  n-3  ", b"", b'"quoted"', b"a\\b", b"\xe9", b"n 4", b"\x7f", b"!~")
_PIECES = (
    "DPoP",
    "dpop",
    "Bearer",
    " ",
    ", ",
    "=",
    '"',
    "error",
    '"use_dpop_nonce"',
    "use_dpop_nonce",
    "error_description",
    '"x"',
    "algs",
    '"ES256"',
    "realm",
    "\\",
)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.rpartition('@')[2].lower()}"


def _nonce_ok(value: str) -> bool:
    return bool(value) and all("!" <= ch <= "~" and ch not in '"\\' for ch in value)


class Reference:
    """What the nonces should be (the invariants above)."""

    def __init__(self) -> None:
        self.nonces: dict[str, str] = {}

    def note(self, url: str, headers: list[tuple[bytes, bytes]]) -> bool:
        for name, value in headers:
            if name.lower() != b"dpop-nonce":
                continue
            text = value.decode("latin-1").strip()
            if not _nonce_ok(text):
                return False
            origin = _origin(url)
            self.nonces.pop(origin, None)
            if len(self.nonces) >= 32:
                self.nonces.pop(next(iter(self.nonces)))
            self.nonces[origin] = text
            return True
        return False


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _part(text: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _nonce_headers(r: Reader) -> list[tuple[bytes, bytes]]:
    headers = []
    for _ in range(r.u8() % 4):
        name = r.choice(_NAMES)
        value = r.choice(_NONCES) if r.flag() else r.chunk(12)
        headers.append((name, value))
    return headers


def _challenge_headers(r: Reader) -> list[tuple[bytes, bytes]]:
    headers = []
    for _ in range(1 + r.u8() % 3):
        if r.u8() % 3:
            value = "".join(r.choice(_PIECES) for _ in range(r.u8() % 10))
        else:
            value = 'DPoP error="use_dpop_nonce", error_description="nonce"'
        headers.append((b"www-authenticate", value.encode("latin-1")))
    return headers + _nonce_headers(r)


def _token(r: Reader) -> TokenSet:
    kind = r.u8() % 4
    if kind == 3:
        access = r.text(16) or "t"  # a stored token: any text the host's store held
    else:
        access = f"at-{SECRET}-{r.u8()}"
    return TokenSet(
        access_token=access,
        token_type="DPoP" if r.u8() % 4 else "Bearer",
        expires_at=NOW + 3600,
        refresh_token=None,
        scope="mcp",
        issuer=AS,
        token_endpoint=AS + "/token",
        resource=S,
        client_id="app",
        dpop_jkt=(JKT if kind != 1 else "other-key") if kind != 2 else None,
    )


def _check_request(
    headers: Any, tokens: TokenSet, method: str, url: str, ref: Reference, key: Key, jtis: set[str]
) -> None:
    bound = tokens.dpop_jkt is not None or tokens.token_type.lower() == "dpop"
    if bound and tokens.dpop_jkt != JKT:
        assert headers is None, "a token bound to another key was used"  # N1: sent bare
        return
    assert isinstance(headers, list), headers
    shown = dict(headers)
    if tokens.dpop_jkt != JKT:
        sent = tokens.access_token.encode("utf-8", "surrogatepass")
        assert headers == [(b"authorization", b"Bearer " + sent)]
        return
    assert shown[b"authorization"] == b"DPoP " + tokens.access_token.encode(
        "utf-8", "surrogatepass"
    )
    proof = shown[b"dpop"].decode("ascii")
    if SECRET in tokens.access_token:
        assert SECRET not in proof, "the token is in the proof"
    head, body, signature = proof.split(".")
    assert key.signed[-1] == f"{head}.{body}".encode("ascii"), "the key signed something else"
    assert signature == _b64(SIGNATURE)
    header, claims = _part(head), _part(body)
    assert header == {"typ": "dpop+jwt", "alg": "ES256", "jwk": JWK}, header
    expected = {"jti", "htm", "htu", "iat", "ath"} | (
        {"nonce"} if _origin(url) in ref.nonces else set()
    )
    assert set(claims) == expected, (claims, ref.nonces)
    assert claims["htm"] == method.upper() and claims["htu"] == htu(url)
    assert "?" not in claims["htu"] and "#" not in claims["htu"]
    assert claims["iat"] == int(NOW)
    sent = shown[b"authorization"].removeprefix(b"DPoP ")
    assert claims["ath"] == _b64(hashlib.sha256(sent).digest()), "ath is not of the token sent"
    assert claims.get("nonce") == ref.nonces.get(_origin(url))
    assert claims["jti"] not in jtis, "a jti used twice"
    jtis.add(claims["jti"])


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    tokens = _token(r)
    key = Key()
    flow = make_flow(tokens=tokens, dpop=True, dpop_key=key)
    ref = Reference()
    jtis: set[str] = set()
    tickets = [RequestTicket() for _ in range(3)]
    try:
        for _ in range(r.u8() % 12 + 1):
            op = r.u8() % 3
            url = r.choice(_URLS)
            if op == 0:
                headers = _nonce_headers(r)
                flow.note_response(url, headers)
                ref.note(url, headers)
            elif op == 1:
                method = r.choice(("POST", "get", "DELETE"))
                got = flow.prepare_headers(r.choice(tickets), method, url, NOW)
                _check_request(got, tokens, method, url, ref, key, jtis)
            else:
                ticket = r.choice(tickets)
                headers = _challenge_headers(r)
                params = parse_www_authenticate(headers, "dpop")
                retried = ticket.nonce_retried
                wants = params is not None and params.get("error") == "use_dpop_nonce"
                noted = wants and ref.note(S, headers)
                outcome = flow.challenge(ticket, 401, headers, NOW)
                if noted and not retried:
                    assert outcome is RETRY and ticket.nonce_retried, outcome
                elif not wants or not noted:
                    assert ticket.nonce_retried == retried
                if (
                    flow._run is not None
                ):  # a sign-in or refresh began: its requests are another harness's
                    return
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("dpop", exc)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
