"""DPoP, enterprise-managed authorization and workload identity in the OAuth flow
(N1, N2, N3), driven as a sans-IO state machine like ``test_oauth``: a fake
clock, fixed entropy, a scripted world of responses; nothing here does I/O.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from mcpcore import IdentityProvider, ProvideAssertion
from mcpcore.auth._oauth import (
    RETRY,
    AuthRequest,
    Fail,
    PreRegisteredClient,
    Purpose,
    RequestTicket,
    TokenError,
    TokenSet,
    Wait,
)
from mcpcore.auth._oauth_dpop import jwk_thumbprint
from mcpcore.base._errors import InvalidValue
from test_oauth import (
    AS,
    ASM_ROOT,
    NOW,
    PRM_PATH,
    S,
    World,
    asm,
    authorized,
    failed,
    form,
    hdr,
    js,
    make_flow,
    prm,
    run_401,
)

IDP = "https://idp.example.com/token"
JWK = {"kty": "EC", "crv": "P-256", "x": "eA", "y": "eQ"}


class FakeKey:
    """A ``DpopKey`` whose signature is a fixed string: the proofs' contents are
    what is tested here; the real ES256 signature is ``mcpcore_jwt``'s."""

    alg = "ES256"

    def __init__(self, jwk: dict[str, str] | None = None) -> None:
        self.public_jwk = dict(jwk or JWK)
        self.signed: list[bytes] = []

    def sign(self, signing_input: bytes) -> bytes:
        self.signed.append(signing_input)
        return b"signature"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def decode(jws: bytes | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A compact JWS's header and claims."""
    assert jws is not None
    header, claims, signature = jws.decode().split(".")
    assert signature == _b64(b"signature")

    def part(text: str) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return value

    return part(header), part(claims)


def dpop_world(*, token_type: str = "DPoP", **asm_extra: Any) -> World:
    world = World().standard(**{"dpop_signing_alg_values_supported": ["ES256"], **asm_extra})
    world.route(
        "POST",
        AS + "/token",
        js(200, {"access_token": "at-1", "token_type": token_type, "expires_in": 3600}),
    )
    return world


def dpop_flow(mode: Any = True, key: FakeKey | None = None, **config: Any) -> Any:
    return make_flow(
        preregistered=PreRegisteredClient(client_id="app"),
        dpop=mode,
        dpop_key=key or FakeKey(),
        **config,
    )


def dpop_header(request: AuthRequest) -> bytes | None:
    return hdr(request, b"dpop")


# --- N1: DPoP ---------------------------------------------------------------------------


def test_N1_the_token_request_carries_a_proof_and_the_token_is_bound_to_the_key() -> None:
    """N1, O75: typ dpop+jwt, the public JWK, htm/htu/iat/jti and no ath at the token
    endpoint; a DPoP token comes back bound (its thumbprint kept with it)."""
    world = dpop_world()
    flow = dpop_flow()
    _, events = run_401(flow, world)
    tokens = authorized(events)
    (token_request,) = world.of(Purpose.TOKEN_CODE)
    header, claims = decode(dpop_header(token_request))
    assert header == {"typ": "dpop+jwt", "alg": "ES256", "jwk": JWK}
    assert claims["htm"] == "POST" and claims["htu"] == AS + "/token"
    assert claims["iat"] == int(NOW) and claims["jti"] and "ath" not in claims
    assert "nonce" not in claims
    assert tokens.token_type == "DPoP"
    assert tokens.dpop_jkt == jwk_thumbprint(JWK)
    # No proof on discovery or registration: only the token requests carry one.
    assert all(dpop_header(r) is None for r in world.requests if r is not token_request)


def test_N1_the_thumbprint_is_rfc_7638s() -> None:
    """N1: SHA-256 of the required members, sorted, without whitespace."""
    canonical = '{"crv":"P-256","kty":"EC","x":"eA","y":"eQ"}'
    expected = _b64(hashlib.sha256(canonical.encode()).digest())
    assert jwk_thumbprint({**JWK, "kid": "ignored", "use": "sig"}) == expected


def test_N1_every_mcp_request_gets_the_dpop_scheme_and_a_fresh_proof() -> None:
    """N1: ``Authorization: DPoP``; htm and htu (no query, no fragment) of the
    request; ath = base64url(SHA-256(token)); a new jti each time."""
    world = dpop_world()
    flow = dpop_flow()
    run_401(flow, world)
    proofs = []
    for method in ("POST", "GET"):
        headers = flow.prepare_headers(RequestTicket(), method, S + "?session=1#frag", NOW + 5)
        assert isinstance(headers, list)
        named = dict(headers)
        assert named[b"authorization"] == b"DPoP at-1"
        header, claims = decode(named[b"dpop"])
        assert header["typ"] == "dpop+jwt" and header["jwk"] == JWK
        assert claims["htm"] == method and claims["htu"] == S
        assert claims["iat"] == int(NOW + 5)
        assert claims["ath"] == _b64(hashlib.sha256(b"at-1").digest())
        proofs.append(claims["jti"])
    assert len(set(proofs)) == 2


def test_N1_a_bearer_answer_is_used_as_bearer() -> None:
    """N1: an authorization server that did not bind the token (token_type
    Bearer) gets it back as Bearer, without a proof."""
    world = dpop_world(token_type="Bearer")
    flow = dpop_flow()
    tokens = authorized(run_401(flow, world)[1])
    assert tokens.token_type == "Bearer" and tokens.dpop_jkt is None
    headers = flow.prepare_headers(RequestTicket(), "POST", S, NOW)
    assert headers == [(b"authorization", b"Bearer at-1")]


def test_N1_auto_uses_dpop_only_when_the_server_lists_the_keys_algorithm() -> None:
    """N1: ``dpop="auto"``: a proof when dpop_signing_alg_values_supported lists
    ES256, none (and a DPoP token_type refused) when it does not."""
    listed = dpop_world()
    flow = dpop_flow("auto")
    assert authorized(run_401(flow, listed)[1]).token_type == "DPoP"
    assert dpop_header(listed.of(Purpose.TOKEN_CODE)[0]) is not None

    unlisted = World().standard()
    flow = dpop_flow("auto")
    assert authorized(run_401(flow, unlisted)[1]).token_type == "Bearer"
    assert dpop_header(unlisted.of(Purpose.TOKEN_CODE)[0]) is None

    other = dpop_world(dpop_signing_alg_values_supported=["RS256"])
    flow = dpop_flow("auto")
    error = failed(run_401(flow, other)[1])
    assert dpop_header(other.of(Purpose.TOKEN_CODE)[0]) is None
    assert "not Bearer" in str(error)  # a DPoP token it did not ask for is refused


def _nonce_answer(nonce: str, then: tuple[int, dict[str, Any]] | None) -> Any:
    calls = [0]

    def token(request: AuthRequest) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        calls[0] += 1
        if calls[0] == 1 or then is None:
            body = {"error": "use_dpop_nonce", "error_description": "a nonce, please"}
            return 400, [(b"dpop-nonce", nonce.encode())], json.dumps(body).encode()
        return then[0], [], json.dumps(then[1]).encode()

    return token


def test_N1_the_token_endpoints_nonce_challenge_is_answered_once() -> None:
    """N1 (RFC 9449 8): a 400 use_dpop_nonce with DPoP-Nonce: the same request
    again with a fresh proof carrying the nonce; then the token."""
    world = dpop_world()
    good = {"access_token": "at-1", "token_type": "DPoP", "expires_in": 60}
    world.route("POST", AS + "/token", _nonce_answer("n-as", (200, good)))
    flow = dpop_flow()
    authorized(run_401(flow, world)[1])
    first, second = world.of(Purpose.TOKEN_CODE)
    assert "nonce" not in decode(dpop_header(first))[1]
    claims = decode(dpop_header(second))[1]
    assert claims["nonce"] == "n-as"
    assert claims["jti"] != decode(dpop_header(first))[1]["jti"]
    assert form(first) == form(second)  # the same request, the same code


def test_N1_a_second_nonce_challenge_at_the_token_endpoint_fails_the_flow() -> None:
    """N1: answered once, never twice."""
    world = dpop_world()
    world.route("POST", AS + "/token", _nonce_answer("n-as", None))
    flow = dpop_flow()
    error = failed(run_401(flow, world)[1])
    assert isinstance(error, TokenError) and error.error == "use_dpop_nonce"
    assert len(world.of(Purpose.TOKEN_CODE)) == 2


def test_N1_the_resource_servers_nonce_challenge_is_answered_once_per_request() -> None:
    """N1 (RFC 9449 9): a 401 with ``DPoP error="use_dpop_nonce"`` and a nonce:
    send again at once with the nonce; the same challenge again is not retried."""
    world = dpop_world()
    flow = dpop_flow()
    run_401(flow, world)
    ticket = RequestTicket()
    headers = flow.prepare_headers(ticket, "POST", S, NOW)
    assert isinstance(headers, list) and "nonce" not in decode(dict(headers)[b"dpop"])[1]
    nonce_401 = [
        (b"www-authenticate", b'DPoP error="use_dpop_nonce", error_description="nonce"'),
        (b"dpop-nonce", b"n-rs"),
    ]
    assert flow.challenge(ticket, 401, nonce_401, NOW) is RETRY
    headers = flow.prepare_headers(ticket, "POST", S, NOW)
    assert isinstance(headers, list)
    assert decode(dict(headers)[b"dpop"])[1]["nonce"] == "n-rs"
    assert flow.challenge(ticket, 401, nonce_401, NOW) is not RETRY


def test_N1_nonces_are_kept_per_origin() -> None:
    """N1: the authorization server's nonce never goes to the MCP server, and the
    MCP server's never to the token endpoint; a later request reuses its origin's."""
    world = dpop_world()
    good = {"access_token": "at-1", "token_type": "DPoP", "expires_in": 60}
    world.route("POST", AS + "/token", _nonce_answer("n-as", (200, good)))
    flow = dpop_flow()
    run_401(flow, world)
    headers = flow.prepare_headers(RequestTicket(), "POST", S, NOW)
    assert isinstance(headers, list) and "nonce" not in decode(dict(headers)[b"dpop"])[1]
    flow.note_response(S, [(b"dpop-nonce", b"n-rs")])
    headers = flow.prepare_headers(RequestTicket(), "DELETE", S, NOW)
    assert isinstance(headers, list)
    assert decode(dict(headers)[b"dpop"])[1]["nonce"] == "n-rs"


def test_N1_a_stored_token_bound_to_another_key_is_not_used() -> None:
    """N1: the token store keeps the key's thumbprint with the token; a client with
    another key (or none) starts signed out rather than send a token it cannot prove."""
    bound = TokenSet(
        access_token="at-0",
        token_type="DPoP",
        issuer=AS,
        token_endpoint=AS + "/token",
        resource=S,
        client_id="app",
        dpop_jkt=jwk_thumbprint(JWK),
    )
    assert dpop_flow(tokens=bound).tokens == bound
    other = FakeKey({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AQ"})
    assert dpop_flow(key=other, tokens=bound).tokens is None
    assert make_flow(tokens=bound).tokens is None
    assert "at-0" not in repr(bound) and "jwk" not in repr(dpop_flow().dpop)


class ExportingKey(FakeKey):
    """A ``FakeKey`` that can ``export()`` its private part (as mcpcore_jwt's does)."""

    def export(self) -> str:
        return json.dumps({**self.public_jwk, "d": PRIVATE_D})


PRIVATE_D = "d-private-Wq7-never-shown"


def test_N1_the_key_is_kept_with_the_tokens_bound_to_it() -> None:
    """N1: a key that can export has its export stored with the DPoP token bound to
    it; a key that cannot has none stored, and a Bearer token none either. The export is not in the set's or flow's repr."""
    world = dpop_world()
    flow = dpop_flow(key=ExportingKey())
    tokens = authorized(run_401(flow, world)[1])
    assert tokens.dpop_jkt == jwk_thumbprint(JWK)
    assert tokens.dpop_key_export is not None
    assert json.loads(tokens.dpop_key_export)["d"] == PRIVATE_D
    assert all(PRIVATE_D not in text for text in (repr(tokens), str(tokens), repr(flow)))
    plain = authorized(run_401(dpop_flow(), dpop_world())[1])
    assert plain.dpop_jkt is not None and plain.dpop_key_export is None
    bearer = authorized(run_401(dpop_flow(key=ExportingKey()), dpop_world(token_type="Bearer"))[1])
    assert bearer.dpop_jkt is None and bearer.dpop_key_export is None


def test_N1_a_stored_key_is_taken_up_only_when_it_is_the_one_the_tokens_are_bound_to(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """N1: ``stored_key`` (the core's decision for a client given no key of the
    host's): the revived export when the tokens are bound to its thumbprint; None
    for tokens not bound, with no export, whose export revives into another key,
    or that does not revive (logged by the error's type, never the text)."""
    from dataclasses import replace

    from mcpcore.auth._oauth_dpop import stored_key

    export = ExportingKey().export()
    bound = TokenSet(
        access_token="at-0",
        token_type="DPoP",
        issuer=AS,
        token_endpoint=AS + "/token",
        resource=S,
        client_id="app",
        dpop_jkt=jwk_thumbprint(JWK),
        dpop_key_export=export,
    )
    revived: list[str] = []

    def revive(text: str) -> FakeKey:
        revived.append(text)
        return ExportingKey()

    key = stored_key(bound, revive)
    assert key is not None and revived == [export]
    assert dpop_flow(key=key, tokens=bound).tokens == bound  # its tokens are used
    assert stored_key(None, revive) is None
    assert stored_key(replace(bound, dpop_key_export=None), revive) is None
    assert stored_key(replace(bound, dpop_jkt=None, token_type="Bearer"), revive) is None
    other = FakeKey({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AQ"})
    assert stored_key(bound, lambda text: other) is None

    def broken(text: str) -> FakeKey:
        raise InvalidValue(f"cannot read {text}")

    with caplog.at_level("DEBUG"):
        assert stored_key(bound, broken) is None
    assert "InvalidValue" in caplog.text and PRIVATE_D not in caplog.text


def test_N1_mcpcore_jwt_keys_export_and_revive() -> None:
    """N1: ``mcpcore_jwt.DpopKey.export()`` is a private JWK in JSON that
    ``from_export`` makes the same key from; text that is not one is refused
    without being named."""
    pytest.importorskip("cryptography")
    from mcpcore_jwt import DpopKey as RealKey

    key = RealKey.generate()
    export = key.export()
    jwk = json.loads(export)
    assert {k: jwk[k] for k in key.public_jwk} == key.public_jwk and jwk["d"]
    again = RealKey.from_export(export)
    assert again.public_jwk == key.public_jwk
    assert jwk["d"] not in repr(again) and jwk["d"] not in repr(key)
    wrong_d = json.dumps({**jwk, "d": RealKey.generate().export().split('"d":"')[1][:43]})
    for text in ("not json", "[]", json.dumps({**jwk, "crv": "P-384"}), wrong_d):
        with pytest.raises(InvalidValue) as caught:
            RealKey.from_export(text)
        assert jwk["d"] not in str(caught.value) and text not in str(caught.value)


def test_N1_dpop_without_a_key_or_with_a_private_jwk_is_refused() -> None:
    with pytest.raises(InvalidValue, match="DPoP needs a key"):
        make_flow(dpop=True)
    with pytest.raises(InvalidValue, match="public JWK"):
        dpop_flow(key=FakeKey({**JWK, "d": "secret"}))


def test_N1_the_challenge_parameters_come_from_a_dpop_challenge() -> None:
    """O4, N1: a resource server that only speaks DPoP names its metadata there."""
    world = dpop_world()
    world.route("GET", "https://mcp.example.com/meta", js(200, prm()))
    flow = dpop_flow()
    headers = [(b"www-authenticate", b'DPoP resource_metadata="https://mcp.example.com/meta"')]
    authorized(run_401(flow, world, headers)[1])
    assert world.requests[0].url == "https://mcp.example.com/meta"


def test_N1_the_real_key_makes_a_proof_that_verifies() -> None:
    """N1: ``mcpcore_jwt.DpopKey`` signs the core's proof with ES256 (r || s)."""
    ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    from mcpcore_jwt import DpopKey as RealKey

    key = RealKey.generate()
    world = dpop_world()
    flow = make_flow(preregistered=PreRegisteredClient(client_id="app"), dpop=True, dpop_key=key)
    run_401(flow, world)
    proof = dpop_header(world.of(Purpose.TOKEN_CODE)[0])
    assert proof is not None
    head, body, signature = proof.split(b".")
    raw = base64.urlsafe_b64decode(signature + b"=" * (-len(signature) % 4))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(base64.urlsafe_b64decode(key.public_jwk["x"] + "="), "big"),
        int.from_bytes(base64.urlsafe_b64decode(key.public_jwk["y"] + "="), "big"),
        ec.SECP256R1(),
    ).public_key()
    public.verify(der, head + b"." + body, ec.ECDSA(hashes.SHA256()))
    assert "BEGIN" not in repr(key)


# --- N2, N3: the assertion grants -------------------------------------------------------


class Host:
    """The ``assertion`` hook: answers each ``ProvideAssertion`` from a list."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[ProvideAssertion] = []


def pump(world: World, flow: Any, host: Host) -> list[object]:
    """``World.pump``, answering ``ProvideAssertion`` too; the events at the end."""
    for _ in range(20):
        world.pump(flow)
        asks = [a for a in world.store if isinstance(a, ProvideAssertion)]
        world.store = [a for a in world.store if not isinstance(a, ProvideAssertion)]
        if not asks:
            return list(flow.take_events())
        for ask in asks:
            host.asked.append(ask)
            flow.receive_identity(ask.request_id, host.answers.pop(0), NOW)
    raise AssertionError("the flow did not settle")


def grant_world() -> World:
    world = World()
    world.route("GET", PRM_PATH, js(200, prm()))
    world.route(
        "GET",
        ASM_ROOT,
        js(
            200,
            asm(
                grant_types_supported=["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                token_endpoint_auth_methods_supported=["client_secret_basic", "none"],
                code_challenge_methods_supported=None,
            ),
        ),
    )
    world.route("POST", AS + "/token", js(200, {"access_token": "at-1", "token_type": "Bearer"}))
    world.route(
        "POST",
        IDP,
        js(
            200,
            {
                "access_token": "the-id-jag",
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
            },
        ),
    )
    return world


def enterprise_flow(**idp: Any) -> Any:
    return make_flow(
        grant="enterprise",
        preregistered=PreRegisteredClient(client_id="app", client_secret="app-secret"),
        identity_provider=IdentityProvider(token_endpoint=IDP, client_id="idp-app", **idp),
    )


def start(flow: Any, world: World, host: Host) -> list[object]:
    flow.challenge(RequestTicket(), 401, [], NOW)
    return pump(world, flow, host)


def test_N2_token_exchange_at_the_idp_then_a_jwt_bearer_grant_at_the_as() -> None:
    """N2, O73: the exact forms of both requests, and no browser."""
    world = grant_world()
    host = Host("the-id-token")
    flow = enterprise_flow()
    tokens = authorized(start(flow, world, host))
    assert tokens.access_token == "at-1"
    assert world.opened == [] and world.of(Purpose.REGISTER) == []
    (ask,) = host.asked
    assert (ask.kind, ask.audience, ask.resource) == ("identity", AS, S)
    (exchange,) = world.of(Purpose.TOKEN_EXCHANGE)
    assert exchange.url == IDP
    assert form(exchange) == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": AS,
        "resource": S,
        "subject_token": "the-id-token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "client_id": "idp-app",
    }
    (bearer,) = world.of(Purpose.TOKEN_JWT_BEARER)
    assert bearer.url == AS + "/token"
    assert form(bearer) == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": "the-id-jag",
        "resource": S,
        "client_id": "app",
    }
    assert hdr(bearer, b"authorization") == b"Basic " + base64.b64encode(b"app:app-secret")
    # The ID-JAG goes to that token endpoint and nowhere else.
    assert [r for r in world.requests if b"the-id-jag" in (r.body or b"")] == [bearer]


def test_N2_a_saml_assertion_and_an_idp_client_secret() -> None:
    world = grant_world()
    flow = enterprise_flow(client_secret="idp-secret", subject_token_type="saml2")
    authorized(start(flow, world, Host("PHNhbWw+")))
    (exchange,) = world.of(Purpose.TOKEN_EXCHANGE)
    assert form(exchange)["subject_token_type"] == "urn:ietf:params:oauth:token-type:saml2"
    assert hdr(exchange, b"authorization") == b"Basic " + base64.b64encode(b"idp-app:idp-secret")
    assert "idp-secret" not in repr(flow.config.identity_provider)


def test_N2_a_refusal_at_the_idp_names_the_step_and_no_token() -> None:
    world = grant_world()
    world.route(
        "POST",
        IDP,
        js(400, {"error": "invalid_grant", "error_description": "bad the-id-token"}),
    )
    flow = enterprise_flow()
    error = failed(start(flow, world, Host("the-id-token")))
    assert isinstance(error, TokenError) and error.step == "token_exchange"
    assert error.error == "invalid_grant"
    assert "token exchange at the identity provider" in str(error)
    assert "invalid_grant" in str(error) and "the-id-token" not in str(error)
    assert world.of(Purpose.TOKEN_JWT_BEARER) == []


def test_N2_a_refusal_at_the_as_names_the_step_and_no_token() -> None:
    world = grant_world()
    world.route(
        "POST",
        AS + "/token",
        js(400, {"error": "invalid_grant", "error_description": "the-id-jag expired"}),
    )
    flow = enterprise_flow()
    error = failed(start(flow, world, Host("the-id-token")))
    assert isinstance(error, TokenError) and error.step == "jwt_bearer"
    assert "JWT bearer grant at the authorization server failed" in str(error)
    assert "the-id-jag" not in str(error) and "the-id-token" not in str(error)


def test_N2_an_answer_that_is_not_an_id_jag_is_refused() -> None:
    world = grant_world()
    world.route(
        "POST",
        IDP,
        js(
            200,
            {
                "access_token": "x",
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            },
        ),
    )
    error = failed(start(enterprise_flow(), world, Host("the-id-token")))
    assert isinstance(error, TokenError) and error.step == "token_exchange"
    assert "not an ID-JAG" in str(error)


def workload_flow() -> Any:
    return make_flow(grant="jwt_bearer", preregistered=PreRegisteredClient(client_id="workload"))


def test_N3_the_workload_token_is_the_jwt_bearer_grant() -> None:
    """N3: grant_type jwt-bearer, the platform token as the assertion, the client
    named, no secret; the hook is asked with the authorization server as audience."""
    world = grant_world()
    host = Host("platform-jwt-1")
    tokens = authorized(start(workload_flow(), world, host))
    assert tokens.access_token == "at-1"
    (ask,) = host.asked
    assert (ask.kind, ask.audience, ask.resource) == ("workload", AS, S)
    (bearer,) = world.of(Purpose.TOKEN_JWT_BEARER)
    assert form(bearer) == {
        "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": "platform-jwt-1",
        "resource": S,
        "client_id": "workload",
    }
    assert hdr(bearer, b"authorization") is None
    assert world.of(Purpose.TOKEN_EXCHANGE) == []


def test_N3_the_token_is_asked_for_again_before_each_grant() -> None:
    """N3: platform tokens rotate: a second grant asks the hook again and sends
    what it answers now."""
    world = grant_world()
    host = Host("platform-jwt-1", "platform-jwt-2")
    flow = workload_flow()
    authorized(start(flow, world, host))
    ticket = RequestTicket()
    ticket.generation = flow.generation
    flow.challenge(ticket, 401, [], NOW)
    authorized(pump(world, flow, host))
    assert [form(r)["assertion"] for r in world.of(Purpose.TOKEN_JWT_BEARER)] == [
        "platform-jwt-1",
        "platform-jwt-2",
    ]
    assert len(host.asked) == 2


def test_N3_a_refused_grant_is_not_retried_until_login() -> None:
    """N3, O74: after a token error, no retry and no other grant, even on the next
    401; ``login`` asks again."""
    world = grant_world()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    host = Host("platform-jwt-1", "platform-jwt-2")
    flow = workload_flow()
    error = failed(start(flow, world, host))
    assert isinstance(error, TokenError) and error.step == "jwt_bearer"
    verdict = flow.challenge(RequestTicket(), 401, [], NOW)
    assert isinstance(verdict, Fail) and isinstance(verdict.error, TokenError)
    pump(world, flow, host)
    assert len(world.of(Purpose.TOKEN_JWT_BEARER)) == 1
    flow.login(NOW)
    failed(pump(world, flow, host))
    assert len(world.of(Purpose.TOKEN_JWT_BEARER)) == 2


def test_N3_an_unusable_assertion_is_refused() -> None:
    world = grant_world()
    flow = workload_flow()
    flow.challenge(RequestTicket(), 401, [], NOW)
    world.pump(flow)
    (ask,) = [a for a in world.store if isinstance(a, ProvideAssertion)]
    with pytest.raises(InvalidValue):
        flow.receive_identity(ask.request_id, "two tokens", NOW)
    flow.receive_identity(ask.request_id, "  jwt-with-newline\n", NOW)  # trimmed
    world.pump(flow)
    assert form(world.of(Purpose.TOKEN_JWT_BEARER)[0])["assertion"] == "jwt-with-newline"


def test_N2_N3_the_grants_need_a_client_and_the_enterprise_one_an_idp() -> None:
    with pytest.raises(InvalidValue, match="pre-registered"):
        make_flow(grant="jwt_bearer")
    with pytest.raises(InvalidValue, match="identity_provider"):
        make_flow(grant="enterprise", preregistered=PreRegisteredClient(client_id="a"))


def test_N1_prepare_waits_the_same_way_with_headers() -> None:
    """``prepare_headers`` is ``prepare`` with the headers: no token, no header."""
    flow = dpop_flow()
    assert flow.prepare_headers(RequestTicket(), "POST", S, NOW) is None
    flow.challenge(RequestTicket(), 401, [], NOW)
    ticket = RequestTicket()
    assert isinstance(flow.prepare_headers(ticket, "POST", S, NOW), Wait)


def test_N1_N2_N3_the_guides_programs_use_names_that_exist() -> None:
    """docs/authorization.md: the DPoP, enterprise and workload identity programs
    compile, and every name they import from mcpcore's packages exists."""
    import ast
    import importlib
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "authorization.md").read_text()
    start = doc.index("### DPoP: tokens bound to a key (N1)")
    section = doc[start : doc.index("## Command line", start)]
    programs = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(programs) == 3
    for program in programs:
        tree = ast.parse(program)
        compile(tree, "authorization.md", "exec")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and "mcpcore" in node.module:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), (node.module, alias.name)


def test_N1_the_token_file_keeps_the_keys_thumbprint(tmp_path: Any) -> None:
    """N1: ``mcpcore_signin.FileTokenStore`` keeps a DPoP token's binding, so a
    later run with the same key uses it (and one with another key does not)."""
    from mcpcore import TokenKey
    from mcpcore_signin import FileTokenStore

    bound = TokenSet(
        access_token="at-0",
        token_type="DPoP",
        issuer=AS,
        token_endpoint=AS + "/token",
        resource=S,
        client_id="app",
        dpop_jkt=jwk_thumbprint(JWK),
    )
    FileTokenStore(tmp_path / "tokens.json").set_tokens(TokenKey(server_url=S, issuer=AS), bound)
    again = FileTokenStore(tmp_path / "tokens.json").get_tokens(S)
    assert again == bound
    assert dpop_flow(tokens=again).tokens == bound


@pytest.mark.parametrize("status", [500, 503, 429])
def test_N2_an_idp_that_is_down_is_a_transient_error_and_not_a_refusal(status: int) -> None:
    """N2: a 5xx or 429 from the identity provider is tried again on the next
    request (OAuthTransientError), unlike a refusal."""
    from mcpcore.auth._oauth import OAuthTransientError

    world = grant_world()
    world.route("POST", IDP, js(status, {"error": "temporarily_unavailable"}))
    flow = enterprise_flow()
    assert isinstance(failed(start(flow, world, Host("t1", "t2"))), OAuthTransientError)
    assert flow.refused_grant is None
    flow.challenge(RequestTicket(), 401, [], NOW)
    pump(world, flow, Host("t2"))
    assert len(world.of(Purpose.TOKEN_EXCHANGE)) == 2


def test_N1_the_nonce_retry_of_a_private_key_jwt_client_signs_a_new_assertion() -> None:
    """N1, O72: the token request sent again with the nonce carries a client
    assertion signed anew (a fresh jti), not the one already spent."""
    from test_oauth import _cc_world

    world = _cc_world(["private_key_jwt"])
    good = {"access_token": "cc-1", "token_type": "DPoP", "expires_in": 60}
    world.route("POST", AS + "/token", _nonce_answer("n-as", (200, good)))
    flow = make_flow(
        grant="client_credentials",
        preregistered=PreRegisteredClient(client_id="m2m", auth_method="private_key_jwt"),
        dpop=True,
        dpop_key=FakeKey(),
    )
    assert authorized(run_401(flow, world)[1]).token_type == "DPoP"
    first, second = world.of(Purpose.TOKEN_CLIENT_CREDENTIALS)
    assert len(world.signed) == 2
    assert world.signed[0].claims["jti"] != world.signed[1].claims["jti"]
    assert form(first)["client_assertion"] != form(second)["client_assertion"]
    assert decode(dpop_header(second))[1]["nonce"] == "n-as"
