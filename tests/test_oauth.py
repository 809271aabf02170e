"""The OAuth 2.1 flow as a sans-IO state machine (A1, A2, A4, A5 and the O rules of docs/behaviours.md).

Every test drives ``OAuthFlow`` with a fake clock (plain numbers), fixed entropy
and a scripted world of HTTP responses; nothing here performs I/O.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpcore.auth._oauth import (
    RETRY,
    WAIT,
    AuthFailed,
    AuthorizationCancelled,
    AuthorizationDenied,
    AuthorizationResponseRejected,
    AuthorizationTimeout,
    Authorized,
    AuthRequest,
    AuthServerMetadataNotFound,
    ClientRecord,
    ClientRegistrationRequired,
    DeleteClient,
    DeleteTokens,
    Fail,
    InsufficientScope,
    InvalidMetadata,
    IssuerMismatch,
    LockTokens,
    MalformedResponse,
    OAuthConfig,
    OAuthError,
    OAuthFlow,
    OAuthTransientError,
    OpenAuthorizationUrl,
    PkceNotSupported,
    PreRegisteredClient,
    Purpose,
    RedirectRefused,
    RegistrationError,
    RegistrationUnusable,
    RequestTicket,
    ResourceMismatch,
    SaveClient,
    SaveTokens,
    SignAssertion,
    TokenError,
    TokenKey,
    TokenSet,
    UnlockTokens,
    asm_candidates,
    authorization_header,
    canonical_resource,
    compact_jws,
    issuers_match,
    parse_www_authenticate,
    pkce_challenge,
    prm_candidates,
    resource_matches,
)
from mcpcore.base._errors import InvalidState, InvalidValue, McpError, TransportError
from mcpcore.base._events import AbortExchange
from mcpcore.base._failure import FailureKind, TransportFailure

S = "https://mcp.example.com/mcp"
AS = "https://auth.example.com"
PRM_PATH = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = "https://mcp.example.com/.well-known/oauth-protected-resource"
ASM_ROOT = AS + "/.well-known/oauth-authorization-server"
OIDC_ROOT = AS + "/.well-known/openid-configuration"
REDIRECT = "http://127.0.0.1:53682/callback"
CIMD = "https://client.example.org/client-metadata.json"
NOW = 1_000_000.0


def counter_entropy() -> Callable[[int], bytes]:
    """Deterministic, distinct bytes per call."""
    calls = [0]

    def token_bytes(n: int) -> bytes:
        calls[0] += 1
        seed = hashlib.sha256(f"entropy-{calls[0]}".encode()).digest()
        return (seed * (n // 32 + 1))[:n]

    return token_bytes


def prm(resource: str = S, servers: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"resource": resource, "authorization_servers": servers or [AS], **extra}


def asm(issuer: str = AS, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }
    doc.update(extra)
    return {k: v for k, v in doc.items() if v is not None}


Response = tuple[int, list[tuple[bytes, bytes]], bytes]
Handler = Callable[[AuthRequest], Response]


def js(status: int, doc: Any) -> Response:
    return status, [(b"content-type", b"application/json")], json.dumps(doc).encode()


def challenge(status: int = 401, **params: str) -> list[tuple[bytes, bytes]]:
    inner = ", ".join(f'{k}="{v}"' for k, v in params.items())
    return [(b"www-authenticate", f"Bearer {inner}".encode())]


@dataclass
class World:
    """A scripted set of servers: (method, URL without query) → response (404 otherwise)."""

    routes: dict[tuple[str, str], Response | Handler] = field(default_factory=dict)
    requests: list[AuthRequest] = field(default_factory=list)
    opened: list[OpenAuthorizationUrl] = field(default_factory=list)
    store: list[Any] = field(default_factory=list)
    signed: list[SignAssertion] = field(default_factory=list)
    locks: list[Any] = field(default_factory=list)  # LockTokens / UnlockTokens, in order
    # What the store holds when a lock is taken (None: whatever the flow holds).
    in_store: Callable[[OAuthFlow], TokenSet | None] | None = None
    callback: Callable[[OpenAuthorizationUrl], str | None] | None = None
    iss: str | None = None  # added to the callback when set
    now: float = NOW

    def route(self, method: str, url: str, response: Response | Handler) -> None:
        self.routes[(method, url)] = response

    def standard(self, **asm_extra: Any) -> World:
        self.route("GET", PRM_PATH, js(200, prm()))
        self.route("GET", ASM_ROOT, js(200, asm(**asm_extra)))
        self.route("POST", AS + "/register", js(201, {"client_id": "dyn-client"}))
        self.route(
            "POST",
            AS + "/token",
            js(200, {"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600}),
        )
        return self

    def default_callback(self, action: OpenAuthorizationUrl) -> str:
        query = parse_qs(urlsplit(action.url).query)
        params = {"code": "test-auth-code", "state": query["state"][0]}
        if self.iss is not None:
            params["iss"] = self.iss
        return action.redirect_uri + "?" + urlencode(params)

    def pump(self, flow: OAuthFlow) -> None:
        for _ in range(100):
            actions = flow.take_actions()
            if not actions:
                return
            for action in actions:
                if isinstance(action, AuthRequest):
                    self.requests.append(action)
                    key = (action.method, action.url.split("?")[0])
                    found = self.routes.get(key)
                    if found is None:
                        response: Response = (404, [], b"not found")
                    elif callable(found):
                        response = found(action)
                    else:
                        response = found
                    flow.receive_response(action.exchange_id, *response, self.now)
                elif isinstance(action, OpenAuthorizationUrl):
                    self.opened.append(action)
                    make = self.callback or self.default_callback
                    url = make(action)
                    if url is not None:
                        flow.receive_callback(url, self.now)
                elif isinstance(action, SignAssertion):
                    self.signed.append(action)
                    flow.receive_assertion(
                        action.request_id, compact_jws(action.signing_input, b"sig"), self.now
                    )
                elif isinstance(action, LockTokens):
                    self.locks.append(action)
                    held = flow.tokens if self.in_store is None else self.in_store(flow)
                    flow.lock_answered(action.lock_id, True, held, self.now)
                elif isinstance(action, UnlockTokens):
                    self.locks.append(action)
                else:
                    self.store.append(action)
        raise AssertionError("the flow did not settle")

    def urls(self) -> list[str]:
        return [r.url for r in self.requests]

    def of(self, purpose: Purpose) -> list[AuthRequest]:
        return [r for r in self.requests if r.purpose is purpose]


def form(request: AuthRequest) -> dict[str, str]:
    assert request.body is not None
    return dict(parse_qsl(request.body.decode()))


def hdr(request: AuthRequest, name: bytes) -> bytes | None:
    return next((v for k, v in request.headers if k == name), None)


def authz_params(world: World, index: int = -1) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(world.opened[index].url).query))


def make_flow(**config: Any) -> OAuthFlow:
    tokens = config.pop("tokens", None)
    clients = config.pop("clients", ())
    entropy = config.pop("token_bytes", None) or counter_entropy()
    cfg = OAuthConfig(server_url=config.pop("server_url", S), redirect_uri=REDIRECT, **config)
    return OAuthFlow(cfg, token_bytes=entropy, tokens=tokens, clients=clients)


def run_401(
    flow: OAuthFlow,
    world: World,
    headers: list[tuple[bytes, bytes]] | None = None,
    ticket: RequestTicket | None = None,
) -> tuple[object, list[object]]:
    ticket = ticket or RequestTicket()
    outcome = flow.challenge(ticket, 401, headers or [], world.now)
    world.pump(flow)
    return outcome, list(flow.take_events())


def failed(events: list[object]) -> OAuthError:
    assert len(events) == 1 and isinstance(events[0], AuthFailed), events
    return events[0].error


def authorized(events: list[object]) -> TokenSet:
    assert len(events) == 1 and isinstance(events[0], Authorized), events
    return events[0].tokens


def held(
    *,
    refresh: str | None = "rt-1",
    expires_at: float | None = NOW + 3600,
    scope: str | None = "mcp:basic",
    issuer: str = AS,
    client_id: str = "dyn-client",
) -> TokenSet:
    return TokenSet(
        access_token="at-0",
        expires_at=expires_at,
        refresh_token=refresh,
        scope=scope,
        issuer=issuer,
        token_endpoint=issuer + "/token",
        resource=S,
        client_id=client_id,
    )


# --- O4: WWW-Authenticate -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            b'Bearer error="invalid_token", error_description="Missing Authorization header", '
            b'scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource"',
            {
                "error": "invalid_token",
                "error_description": "Missing Authorization header",
                "scope": "a b",
                "resource_metadata": "https://x/.well-known/oauth-protected-resource",
            },
        ),
        (b'bEaReR Scope="mcp:basic"', {"scope": "mcp:basic"}),
        (b"Bearer realm=example, scope=read", {"realm": "example", "scope": "read"}),
        (
            b'Bearer error_description="try scope=x", error="e"',
            {"error_description": "try scope=x", "error": "e"},
        ),
        (b'Basic realm="a", Bearer scope="s"', {"scope": "s"}),
        (b'Bearer scope="a \\"quoted\\" b"', {"scope": 'a "quoted" b'}),
        (b'Bearer scope=""', {"scope": ""}),
        (b"Bearer", {}),
        (b"Negotiate abc==, Bearer scope=s", {"scope": "s"}),
        (b"Bearer scope=", {}),  # a token68, not a parameter
    ],
)
def test_O4_challenge_parameters_are_read_from_the_bearer_challenge(
    value: bytes, expected: dict[str, str]
) -> None:
    assert parse_www_authenticate([(b"WWW-Authenticate", value)]) == expected


@pytest.mark.parametrize(
    "value",
    [
        b'Bearer scope="unterminated',
        b'Bearer scope="a" junk',
        b'Bearer scope="a", scope="b"',
        b"=x",
        b"Bearer ,,=,",
    ],
)
def test_O4_a_malformed_header_counts_as_absent(value: bytes) -> None:
    assert parse_www_authenticate([(b"www-authenticate", value)]) is None


def test_O4_several_fields_are_read_and_a_malformed_one_skipped() -> None:
    headers = [
        (b"www-authenticate", b'Bearer scope="x'),
        (b"WWW-Authenticate", b'Basic realm="r"'),
        (b"www-authenticate", b'Bearer scope="second"'),
    ]
    assert parse_www_authenticate(headers) == {"scope": "second"}


@given(st.binary(max_size=300))
def test_O4_the_parser_never_raises(data: bytes) -> None:
    result = parse_www_authenticate([(b"www-authenticate", data)])
    assert result is None or isinstance(result, dict)


# --- URL builders (O6, O7, O11, O13, O9, O49) ------------------------------------------------


def test_O6_O7_prm_candidates_in_order() -> None:
    assert prm_candidates("https://h/public/mcp", None) == [
        "https://h/.well-known/oauth-protected-resource/public/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert prm_candidates("https://h/mcp/", "https://h/custom.json") == [
        "https://h/custom.json",
        "https://h/.well-known/oauth-protected-resource/mcp/",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert prm_candidates("https://h/mcp?tenant=a#frag", None)[0] == (
        "https://h/.well-known/oauth-protected-resource/mcp?tenant=a"
    )
    assert prm_candidates("https://h", None) == ["https://h/.well-known/oauth-protected-resource"]
    assert prm_candidates("https://h/", None) == ["https://h/.well-known/oauth-protected-resource"]


def test_O11_asm_candidates_for_both_revisions() -> None:
    assert asm_candidates("https://as/tenant1", "2025-11-25") == [
        "https://as/.well-known/oauth-authorization-server/tenant1",
        "https://as/.well-known/openid-configuration/tenant1",
        "https://as/tenant1/.well-known/openid-configuration",
    ]
    assert asm_candidates("https://as/", "2026-07-28") == [
        "https://as/.well-known/oauth-authorization-server",
        "https://as/.well-known/openid-configuration",
    ]
    assert asm_candidates("https://as/tenant1/", "2025-06-18") == [
        "https://as/.well-known/oauth-authorization-server/tenant1"
    ]
    assert asm_candidates("https://as", "2025-06-18") == [
        "https://as/.well-known/oauth-authorization-server"
    ]


@given(
    st.from_regex(r"/[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,3}/?", fullmatch=True),
    st.sampled_from(["2025-06-18", "2025-11-25", "2026-07-28"]),
)
def test_O11_a_path_issuer_never_gets_the_root_oauth_url(path: str, version: str) -> None:
    assert "https://as/.well-known/oauth-authorization-server" not in asm_candidates(
        "https://as" + path, version
    )


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("https://as", "https://as", True),
        ("https://as", "https://as/", True),
        ("https://as/t", "https://as/t/", False),
        ("https://as", "https://AS", False),
        ("https://as", "https://as:443", False),
        ("https://as", "https://as//", False),
    ],
)
def test_O13_issuer_equality(a: str, b: str, same: bool) -> None:
    assert issuers_match(a, b) is same
    assert issuers_match(b, a) is same


@pytest.mark.parametrize(
    ("resource", "ok"),
    [
        (S, True),
        ("https://mcp.example.com", True),
        ("https://mcp.example.com/", True),
        ("https://MCP.example.com:443/mcp", True),
        ("https://mcp.example.com/mcp/", True),
        ("https://mcp.example.com/mc", False),
        ("https://mcp.example.com/other", False),
        ("http://mcp.example.com/mcp", False),
        ("https://evil.example.com/mcp", False),
        ("https://mcp.example.com:8443/mcp", False),
        ("not a url", False),
    ],
)
def test_O9_resource_must_be_same_origin_and_a_path_prefix(resource: str, ok: bool) -> None:
    assert resource_matches(S, resource) is ok


def test_O49_canonical_resource_without_prm() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com:8443/Mcp?x=1#f") == (
        "https://mcp.example.com:8443/Mcp"
    )
    assert canonical_resource("http://localhost:3000") == "http://localhost:3000"


def test_O31_pkce_s256() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


# --- the whole flow ---------------------------------------------------------------------------


def test_A1_the_full_flow_from_401_to_a_stored_token() -> None:
    world = World().standard()
    flow = make_flow(protocol_version="2026-07-28")
    ticket = RequestTicket()
    assert flow.prepare(ticket, NOW) is None  # O2: no token, sent bare
    outcome, events = run_401(
        flow, world, challenge(resource_metadata=PRM_PATH, scope="mcp:basic"), ticket
    )
    assert outcome is WAIT
    tokens = authorized(events)
    assert world.urls() == [PRM_PATH, ASM_ROOT, AS + "/register", AS + "/token"]
    assert [r.purpose for r in world.requests] == [
        Purpose.PRM,
        Purpose.ASM,
        Purpose.REGISTER,
        Purpose.TOKEN_CODE,
    ]
    # O18: discovery headers
    assert hdr(world.requests[0], b"accept") == b"application/json"
    assert hdr(world.requests[0], b"mcp-protocol-version") == b"2026-07-28"
    assert hdr(world.requests[1], b"mcp-protocol-version") is None
    # O26: the registration body
    registration = json.loads(world.requests[2].body or b"")
    assert registration == {
        "redirect_uris": [REDIRECT],
        "client_name": "mcpcore",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
        "scope": "mcp:basic",
    }
    # O31–O33: the authorization URL
    params = authz_params(world)
    assert params["response_type"] == "code"
    assert params["client_id"] == "dyn-client"
    assert params["redirect_uri"] == REDIRECT
    assert params["code_challenge_method"] == "S256"
    assert params["resource"] == S
    assert params["scope"] == "mcp:basic"
    assert len(params["state"]) >= 22 and "prompt" not in params
    assert world.opened[0].deadline == NOW + 300
    # O42, O44 (none), O50: the token request
    body = form(world.requests[3])
    assert body["grant_type"] == "authorization_code"
    assert body["code"] == "test-auth-code"
    assert body["redirect_uri"] == REDIRECT
    assert body["resource"] == params["resource"]
    assert body["client_id"] == "dyn-client"
    assert pkce_challenge(body["code_verifier"]) == params["code_challenge"]
    assert len(body["code_verifier"]) == 43
    assert hdr(world.requests[3], b"authorization") is None
    # O23, O67: what is stored
    assert tokens.expires_at == NOW + 3600
    assert tokens.scope == "mcp:basic"
    assert tokens.issuer == AS and tokens.token_endpoint == AS + "/token"
    kinds = [type(a) for a in world.store]
    assert kinds == [SaveClient, SaveTokens]
    assert world.store[1].key == TokenKey(server_url=S, issuer=AS)
    # O1: the header
    ticket2 = RequestTicket()
    assert flow.prepare(ticket2, NOW + 10) == (b"authorization", b"Bearer at-1")
    assert authorization_header(tokens) == (b"authorization", b"Bearer at-1")
    assert ticket2.generation == flow.generation == 0


def test_O31_O32_fresh_pkce_and_state_per_attempt() -> None:
    world = World().standard()
    world.callback = lambda _action: None  # the user never comes back
    flow = make_flow()
    run_401(flow, world)
    flow.cancel("test")
    assert isinstance(failed(flow.take_events()), AuthorizationCancelled)
    run_401(flow, world)
    first, second = authz_params(world, 0), authz_params(world, 1)
    assert first["state"] != second["state"]
    assert first["code_challenge"] != second["code_challenge"]


def test_O33_the_endpoint_query_is_kept() -> None:
    world = World().standard(authorization_endpoint=AS + "/authorize?tenant=x")
    flow = make_flow()
    run_401(flow, world)
    url = world.opened[0].url
    assert url.startswith(AS + "/authorize?tenant=x&response_type=code&")


# --- PRM discovery ------------------------------------------------------------------------


def test_O6_the_challenge_url_wins_and_the_root_is_never_requested() -> None:
    world = World().standard()
    custom = "https://mcp.example.com/custom/metadata/location.json"
    world.route("GET", custom, js(200, prm()))
    flow = make_flow()
    run_401(flow, world, challenge(resource_metadata=custom))
    assert world.urls()[0] == custom
    assert PRM_PATH not in world.urls() and PRM_ROOT not in world.urls()


def test_O5_an_insecure_resource_metadata_url_is_ignored() -> None:
    world = World().standard()
    flow = make_flow()
    run_401(flow, world, challenge(resource_metadata="http://evil.example.com/prm"))
    assert world.urls()[0] == PRM_PATH


def test_O8_a_4xx_or_3xx_moves_on_to_the_root_candidate() -> None:
    world = World().standard()
    world.routes.pop(("GET", PRM_PATH))
    world.route("GET", PRM_ROOT, js(200, prm(resource="https://mcp.example.com")))
    custom = "https://mcp.example.com/moved"
    world.route("GET", custom, (302, [(b"location", b"https://elsewhere/")], b""))
    flow = make_flow()
    _, events = run_401(flow, world, challenge(resource_metadata=custom))
    tokens = authorized(events)
    assert world.urls()[:3] == [custom, PRM_PATH, PRM_ROOT]
    assert "https://elsewhere/" not in world.urls()  # O62
    # O49: the PRM resource string verbatim, no slash added
    assert authz_params(world)["resource"] == "https://mcp.example.com"
    assert form(world.of(Purpose.TOKEN_CODE)[0])["resource"] == "https://mcp.example.com"
    assert tokens.resource == "https://mcp.example.com"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_O8_a_5xx_or_429_stops_discovery_with_a_transient_error(status: int) -> None:
    world = World().standard()
    world.route("GET", PRM_PATH, (status, [], b""))
    flow = make_flow()
    outcome, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, OAuthTransientError) and isinstance(error, TransportError)
    assert error.status == status
    assert world.urls() == [PRM_PATH]
    assert outcome is WAIT


def test_O8_a_transport_failure_is_transient() -> None:
    flow = make_flow()
    flow.challenge(RequestTicket(), 401, [], NOW)
    (request,) = flow.take_actions()
    assert isinstance(request, AuthRequest)
    flow.response_failed(request.exchange_id, TransportFailure(FailureKind.REFUSED), NOW)
    error = failed(flow.take_events())
    assert isinstance(error, OAuthTransientError)
    assert "refused" in str(error)


def test_O9_resource_mismatch_aborts_before_registration_or_authorization() -> None:
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(resource="https://evil.example.com/mcp")))
    world.route("GET", PRM_ROOT, js(200, prm(resource="https://evil.example.com/mcp")))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), ResourceMismatch)
    assert world.urls() == [PRM_PATH, PRM_ROOT]
    assert world.opened == []


def test_O9_a_mismatching_candidate_is_discarded_and_the_next_used() -> None:
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(resource="https://evil.example.com/mcp")))
    world.route("GET", PRM_ROOT, js(200, prm()))
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b'{"resource": 3}', json.dumps(prm(servers=["not a url"])).encode()],
)
def test_O66_unusable_prm_documents_are_typed_errors(body: bytes) -> None:
    world = World().standard()
    world.route("GET", PRM_PATH, (200, [], body))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), MalformedResponse | InvalidMetadata)


def test_O10_a_preregistered_issuer_in_the_list_is_chosen() -> None:
    other = "https://other-as.example.com"
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(servers=[AS, other])))
    world.route("GET", other + "/.well-known/oauth-authorization-server", js(200, asm(other)))
    world.route("POST", other + "/token", js(200, {"access_token": "x", "token_type": "bearer"}))
    flow = make_flow(preregistered=PreRegisteredClient(client_id="pre", issuer=other))
    _, events = run_401(flow, world)
    assert authorized(events).issuer == other


# --- AS metadata --------------------------------------------------------------------------


def test_O11_a_path_issuer_falls_back_through_the_oidc_candidates() -> None:
    issuer = AS + "/tenant1"
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(servers=[issuer])))
    world.route("GET", AS + "/tenant1/.well-known/openid-configuration", js(200, asm(issuer)))
    world.route("POST", issuer + "/register", js(201, {"client_id": "c"}))
    world.route("POST", issuer + "/token", js(200, {"access_token": "t", "token_type": "Bearer"}))
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)
    assert world.urls()[1:4] == asm_candidates(issuer, "2025-11-25")
    assert ASM_ROOT not in world.urls()


def test_O11_a_root_issuer_falls_back_to_openid_configuration() -> None:
    world = World().standard()
    world.route("GET", OIDC_ROOT, world.routes.pop(("GET", ASM_ROOT)))
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)
    assert world.urls()[1:3] == [ASM_ROOT, OIDC_ROOT]


def test_O11_revision_2025_06_18_uses_rfc8414_only() -> None:
    world = World().standard()
    world.route("GET", OIDC_ROOT, world.routes.pop(("GET", ASM_ROOT)))
    flow = make_flow(protocol_version="2025-06-18")
    _, events = run_401(flow, world)
    assert isinstance(failed(events), AuthServerMetadataNotFound)
    assert world.urls() == [PRM_PATH, ASM_ROOT]


def test_O12_a_document_naming_another_issuer_is_discarded() -> None:
    world = World().standard()
    evil = asm("https://attacker.example.com")
    world.route("GET", ASM_ROOT, js(200, evil))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, IssuerMismatch)
    assert error.expected == AS and error.got == "https://attacker.example.com"
    assert world.urls() == [PRM_PATH, ASM_ROOT, OIDC_ROOT]  # next candidate tried
    assert world.opened == []
    assert not any("attacker" in url for url in world.urls())


def test_O12_the_next_candidate_is_used_after_a_mismatch() -> None:
    world = World().standard()
    world.route("GET", OIDC_ROOT, world.routes[("GET", ASM_ROOT)])
    world.route("GET", ASM_ROOT, js(200, asm("https://attacker.example.com")))
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)


def test_O13_a_root_issuer_with_a_trailing_slash_is_accepted() -> None:
    world = World().standard(
        issuer=AS + "/",
        authorization_endpoint=AS + "/authorize",
        token_endpoint=AS + "/token",
        registration_endpoint=AS + "/register",
    )
    flow = make_flow()
    _, events = run_401(flow, world)
    assert authorized(events).issuer == AS + "/"  # recorded verbatim


@pytest.mark.parametrize("methods", [None, ["plain"], []])
def test_O15_an_authorization_server_without_s256_is_refused(methods: list[str] | None) -> None:
    world = World().standard(code_challenge_methods_supported=methods)
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, PkceNotSupported)
    assert "S256" in str(error)
    assert world.urls() == [PRM_PATH, ASM_ROOT]


@pytest.mark.parametrize(
    "extra",
    [
        {"token_endpoint": None},
        {"authorization_endpoint": None},
        {"token_endpoint": "http://auth.example.com/token"},
        {"authorization_endpoint": "javascript:alert(1)"},
        {"registration_endpoint": 5},
    ],
)
def test_O14_O63_unusable_endpoints_are_refused(extra: dict[str, Any]) -> None:
    world = World().standard(**extra)
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), InvalidMetadata | MalformedResponse)
    assert world.opened == []


def test_O63_loopback_http_is_allowed() -> None:
    base = "http://localhost:3001"
    server = base + "/mcp"
    world = World()
    world.route(
        "GET", base + "/.well-known/oauth-protected-resource/mcp", js(200, prm(server, [base]))
    )
    world.route("GET", base + "/.well-known/oauth-authorization-server", js(200, asm(base)))
    world.route("POST", base + "/register", js(201, {"client_id": "c"}))
    world.route("POST", base + "/token", js(200, {"access_token": "t", "token_type": "Bearer"}))
    flow = make_flow(server_url=server)
    _, events = run_401(flow, world)
    authorized(events)


def test_O17_no_endpoints_are_synthesized_when_the_named_as_has_no_metadata() -> None:
    world = World().standard()
    world.routes.pop(("GET", ASM_ROOT))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), AuthServerMetadataNotFound)
    assert world.urls() == [PRM_PATH, ASM_ROOT, OIDC_ROOT]


def test_O16_legacy_path_uses_the_servers_own_metadata_without_issuer_check() -> None:
    origin = "https://mcp.example.com"
    world = World()
    legacy = asm(
        origin + "/oauth",
        authorization_endpoint=origin + "/oauth/authorize",
        token_endpoint=origin + "/oauth/token",
        registration_endpoint=origin + "/oauth/register",
    )
    world.route("GET", origin + "/.well-known/oauth-authorization-server", js(200, legacy))
    world.route("POST", origin + "/oauth/register", js(201, {"client_id": "c"}))
    world.route(
        "POST", origin + "/oauth/token", js(200, {"access_token": "t", "token_type": "Bearer"})
    )
    flow = make_flow(protocol_version="2025-03-26")
    _, events = run_401(flow, world)
    tokens = authorized(events)
    assert world.urls()[:3] == [
        PRM_PATH,
        PRM_ROOT,
        origin + "/.well-known/oauth-authorization-server",
    ]
    assert hdr(world.requests[2], b"mcp-protocol-version") == b"2025-03-26"
    assert tokens.issuer == origin + "/oauth"
    assert authz_params(world)["resource"] == S


def test_O16_legacy_path_without_metadata_uses_default_endpoints() -> None:
    origin = "https://mcp.example.com"
    world = World()
    world.route("POST", origin + "/register", js(201, {"client_id": "c"}))
    world.route("POST", origin + "/token", js(200, {"access_token": "t", "token_type": "Bearer"}))
    flow = make_flow()
    _, events = run_401(flow, world)
    tokens = authorized(events)
    assert world.opened[0].url.startswith(origin + "/authorize?")
    assert world.urls()[-2:] == [origin + "/register", origin + "/token"]
    assert tokens.issuer == origin


def test_O16_a_prm_candidate_that_was_unusable_prevents_the_legacy_path() -> None:
    world = World()
    world.route("GET", PRM_PATH, (200, [], b"{"))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), MalformedResponse)
    assert "https://mcp.example.com/.well-known/oauth-authorization-server" not in world.urls()


# --- scopes ----------------------------------------------------------------------------------


def test_O19_scope_from_the_challenge() -> None:
    """O20: the challenge's scope is taken as the server states it, though the metadata
    advertises other scopes.
    """
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(scopes_supported=["x", "y"])))
    flow = make_flow()
    run_401(flow, world, challenge(scope="mcp:basic"))
    assert authz_params(world)["scope"] == "mcp:basic"


def test_O19_scope_from_prm_scopes_supported() -> None:
    world = World().standard(scopes_supported=["as:only"])
    world.route(
        "GET", PRM_PATH, js(200, prm(scopes_supported=["mcp:basic", "mcp:read", "mcp:write"]))
    )
    flow = make_flow()
    run_401(flow, world)
    assert authz_params(world)["scope"] == "mcp:basic mcp:read mcp:write"


def test_O19_scope_is_omitted_when_undefined_never_taken_from_the_as() -> None:
    world = World().standard(scopes_supported=["as:only"])
    flow = make_flow()
    _, events = run_401(flow, world)
    assert "scope" not in authz_params(world)
    assert "scope" not in json.loads(world.of(Purpose.REGISTER)[0].body or b"")
    assert authorized(events).scope is None


def test_O21_offline_access_only_when_the_as_lists_it() -> None:
    world = World().standard(scopes_supported=["mcp:basic", "offline_access"])
    world.route("GET", PRM_PATH, js(200, prm(scopes_supported=["mcp:basic"])))
    flow = make_flow()
    run_401(flow, world)
    params = authz_params(world)
    assert params["scope"] == "mcp:basic offline_access"
    assert params["prompt"] == "consent"

    world2 = World().standard(scopes_supported=["mcp:basic", "mcp:read"])
    world2.route("GET", PRM_PATH, js(200, prm(scopes_supported=["mcp:basic", "mcp:read"])))
    flow2 = make_flow()
    run_401(flow2, world2)
    assert "offline_access" not in authz_params(world2)["scope"]
    # nor without refresh tokens wanted, nor with no scope at all
    world3 = World().standard(scopes_supported=["offline_access"])
    flow3 = make_flow(want_refresh_tokens=False)
    run_401(flow3, world3, challenge(scope="a"))
    assert authz_params(world3)["scope"] == "a"
    world4 = World().standard(scopes_supported=["offline_access"])
    flow4 = make_flow()
    run_401(flow4, world4)
    assert "scope" not in authz_params(world4)


def test_O23_granted_scope_from_the_response() -> None:
    world = World().standard()
    world.route(
        "POST",
        AS + "/token",
        js(200, {"access_token": "t", "token_type": "bearer", "scope": "a b c"}),
    )
    flow = make_flow()
    _, events = run_401(flow, world, challenge(scope="a"))
    assert authorized(events).scope == "a b c"


# --- registration ---------------------------------------------------------------------------


def test_O24_preregistered_comes_first_no_registration_request() -> None:
    world = World().standard(
        client_id_metadata_document_supported=True,
        token_endpoint_auth_methods_supported=["client_secret_basic"],
    )
    pre = PreRegisteredClient(
        client_id="pre-registered-client", client_secret="pre-registered-secret"
    )
    flow = make_flow(preregistered=pre, client_metadata_url=CIMD)
    _, events = run_401(flow, world)
    authorized(events)
    assert world.of(Purpose.REGISTER) == []
    assert authz_params(world)["client_id"] == "pre-registered-client"
    token = world.of(Purpose.TOKEN_CODE)[0]
    basic = base64.b64decode((hdr(token, b"authorization") or b"")[6:])
    assert basic == b"pre-registered-client:pre-registered-secret"
    assert "client_secret" not in form(token)  # O44: the secret only in the Basic header


def test_O24_O25_cimd_before_dcr() -> None:
    world = World().standard(client_id_metadata_document_supported=True)
    flow = make_flow(client_metadata_url=CIMD)
    _, events = run_401(flow, world)
    assert authorized(events).client_id == CIMD
    assert world.of(Purpose.REGISTER) == []
    assert authz_params(world)["client_id"] == CIMD
    assert form(world.of(Purpose.TOKEN_CODE)[0])["client_id"] == CIMD


def test_O24_cimd_unsupported_falls_back_to_dcr() -> None:
    world = World().standard()
    flow = make_flow(client_metadata_url=CIMD)
    _, events = run_401(flow, world)
    assert authorized(events).client_id == "dyn-client"


def test_O24_no_way_to_register_asks_for_a_client_id() -> None:
    world = World().standard(registration_endpoint=None)
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), ClientRegistrationRequired)
    assert world.opened == []


@pytest.mark.parametrize(
    "url",
    [
        "http://client.example.org/meta.json",
        "https://client.example.org/",
        "https://client.example.org/a/../meta.json",
        "https://user@client.example.org/meta.json",
        "https://client.example.org/meta.json#x",
    ],
)
def test_O25_an_unsafe_cimd_url_is_refused(url: str) -> None:
    with pytest.raises(InvalidValue):
        make_flow(client_metadata_url=url)


@pytest.mark.parametrize(
    ("methods", "sent"),
    [
        (None, "none"),
        (["none", "client_secret_basic"], "none"),
        (["client_secret_post"], "client_secret_post"),
        (["client_secret_basic", "client_secret_post"], "client_secret_basic"),
        (["private_key_jwt"], "none"),
    ],
)
def test_O26_dcr_asks_for_a_method_the_as_lists(methods: list[str] | None, sent: str) -> None:
    world = World().standard(token_endpoint_auth_methods_supported=methods)
    world.route("POST", AS + "/register", js(201, {"client_id": "c", "client_secret": "s3cr3t-x"}))
    flow = make_flow(application_type="web")
    run_401(flow, world)
    body = json.loads(world.of(Purpose.REGISTER)[0].body or b"")
    assert body["token_endpoint_auth_method"] == sent
    assert body["application_type"] == "web"


@pytest.mark.parametrize(
    "answer",
    [
        {"client_id": "c", "token_endpoint_auth_method": "private_key_jwt"},
        {"client_id": "c", "token_endpoint_auth_method": "client_secret_basic"},
        {"client_id": "c", "token_endpoint_auth_method": "tls_client_auth", "client_secret": "x"},
    ],
)
def test_O27_an_unusable_registration_fails_before_the_browser(answer: dict[str, Any]) -> None:
    world = World().standard()
    world.route("POST", AS + "/register", js(201, answer))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), RegistrationUnusable)
    assert world.opened == []


@pytest.mark.parametrize(
    "answer", [{}, {"client_id": ""}, {"client_id": None}, {"client_id": 5}, []]
)
def test_O27_a_registration_without_client_id_is_malformed(answer: Any) -> None:
    world = World().standard()
    world.route("POST", AS + "/register", js(201, answer))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), MalformedResponse)


@pytest.mark.parametrize(
    ("method", "expect_basic", "expect_post"),
    [
        ("client_secret_basic", True, False),
        ("client_secret_post", False, True),
        ("none", False, False),
        (None, False, False),  # O45: the AS lists only none
    ],
)
def test_O44_O45_the_registered_method_is_honoured(
    method: str | None, expect_basic: bool, expect_post: bool
) -> None:
    world = World().standard()
    answer: dict[str, Any] = {"client_id": "c:id", "client_secret": "s e/c"}
    if method:
        answer["token_endpoint_auth_method"] = method
    world.route("POST", AS + "/register", js(201, answer))
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)
    token = world.of(Purpose.TOKEN_CODE)[0]
    body = form(token)
    basic = hdr(token, b"authorization")
    if expect_basic:
        # every non-unreserved byte %-encoded; the body names the client, never its secret
        assert base64.b64decode(basic[6:] if basic else b"") == b"c%3Aid:s%20e%2Fc"
        assert body["client_id"] == "c:id" and "client_secret" not in body
    else:
        assert basic is None
        assert body["client_id"] == "c:id"
        assert ("client_secret" in body) is expect_post


def test_O30_a_failed_registration_is_a_typed_error() -> None:
    world = World().standard()
    world.route(
        "POST",
        AS + "/register",
        js(400, {"error": "invalid_redirect_uri", "error_description": "bad \x1b[31m uri"}),
    )
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, RegistrationError)
    assert error.status == 400 and error.error == "invalid_redirect_uri"
    assert "\x1b" not in str(error)  # O65
    assert len(world.of(Purpose.REGISTER)) == 1


def test_O28_a_stored_client_is_reused_only_when_still_valid() -> None:
    good = ClientRecord(client_id="stored", redirect_uris=(REDIRECT,), issuer=AS)
    world = World().standard()
    flow = make_flow(clients=[good])
    run_401(flow, world)
    assert world.of(Purpose.REGISTER) == []
    assert authz_params(world)["client_id"] == "stored"

    for stale in (
        ClientRecord(client_id="old", redirect_uris=("http://127.0.0.1:1/elsewhere",), issuer=AS),
        ClientRecord(
            client_id="old",
            client_secret="s",
            client_secret_expires_at=NOW - 1,
            redirect_uris=(REDIRECT,),
            issuer=AS,
        ),
        ClientRecord(client_id="old", redirect_uris=(REDIRECT,), issuer="https://other"),
    ):
        world = World().standard()
        flow = make_flow(clients=[stale])
        run_401(flow, world)
        assert len(world.of(Purpose.REGISTER)) == 1
        assert authz_params(world)["client_id"] == "dyn-client"


def test_O29_a_new_issuer_means_new_registration_and_old_tokens_deleted() -> None:
    as2 = "https://as2.example.com"
    old_client = ClientRecord(
        client_id="as1-client-id-LEAKED", redirect_uris=(REDIRECT,), issuer=AS
    )
    world = World()
    world.route("GET", PRM_PATH, js(200, prm(servers=[as2])))
    world.route("GET", as2 + "/.well-known/oauth-authorization-server", js(200, asm(as2)))
    world.route("POST", as2 + "/register", js(201, {"client_id": "as2-client"}))
    world.route("POST", as2 + "/token", js(200, {"access_token": "t2", "token_type": "Bearer"}))
    flow = make_flow(
        tokens=held(refresh=None, client_id="as1-client-id-LEAKED"), clients=[old_client]
    )
    ticket = RequestTicket()
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-0")
    _outcome, events = run_401(flow, world, challenge(scope="mcp:basic"), ticket)
    tokens = authorized(events)
    assert tokens.issuer == as2 and tokens.client_id == "as2-client"
    assert TokenKey(server_url=S, issuer=AS) in [
        a.key for a in world.store if isinstance(a, DeleteTokens)
    ]
    assert not any("LEAKED" in (r.body or b"").decode() + r.url for r in world.requests)
    assert "LEAKED" not in world.opened[0].url
    assert authz_params(world)["scope"] == "mcp:basic"


def test_O29_a_preregistered_client_bound_to_another_issuer_is_an_error() -> None:
    world = World().standard()
    flow = make_flow(preregistered=PreRegisteredClient(client_id="p", issuer="https://other"))
    _, events = run_401(flow, world)
    assert isinstance(failed(events), RegistrationError)
    assert world.opened == []


# --- the callback ----------------------------------------------------------------------------


def _callback_world(**asm_extra: Any) -> tuple[World, OAuthFlow, OpenAuthorizationUrl]:
    world = World().standard(**asm_extra)
    world.callback = lambda _a: None
    flow = make_flow()
    run_401(flow, world)
    assert flow.awaiting_user
    return world, flow, world.opened[0]


def _state(action: OpenAuthorizationUrl) -> str:
    return parse_qs(urlsplit(action.url).query)["state"][0]


@pytest.mark.parametrize(
    "query",
    [
        {"code": "c"},
        {"code": "c", "state": "wrong"},
        {"code": "c", "state": ""},
    ],
)
def test_O37_a_missing_or_wrong_state_is_rejected(query: dict[str, str]) -> None:
    _world, flow, _action = _callback_world()
    flow.receive_callback(REDIRECT + "?" + urlencode(query), NOW)
    assert isinstance(failed(flow.take_events()), AuthorizationResponseRejected)
    assert flow.take_actions() == []  # no token request


def test_O37_a_duplicated_state_is_rejected() -> None:
    _world, flow, action = _callback_world()
    state = _state(action)
    flow.receive_callback(f"{REDIRECT}?code=c&state={state}&state={state}", NOW)
    assert isinstance(failed(flow.take_events()), AuthorizationResponseRejected)


@pytest.mark.parametrize(
    ("advertised", "iss", "ok"),
    [
        (True, AS, True),  # iss-supported
        (False, None, True),  # iss-not-advertised
        (True, None, False),  # iss-supported-missing
        (True, "https://evil.example.com", False),  # iss-wrong-issuer
        (False, "https://evil.example.com", False),  # iss-unexpected
        (True, AS + "/", False),  # iss-normalized: no tolerance here
        (False, AS.upper(), False),
    ],
)
def test_O38_iss_is_compared_whenever_present(advertised: bool, iss: str | None, ok: bool) -> None:
    _world, flow, action = _callback_world(
        authorization_response_iss_parameter_supported=advertised
    )
    query = {"code": "c", "state": _state(action)}
    if iss is not None:
        query["iss"] = iss
    flow.receive_callback(REDIRECT + "?" + urlencode(query), NOW)
    actions = flow.take_actions()
    if ok:
        assert [type(a) for a in actions] == [AuthRequest]
    else:
        assert actions == []
        error = failed(flow.take_events())
        assert isinstance(error, AuthorizationResponseRejected)


def test_O38_the_iss_rule_applies_to_error_responses_too() -> None:
    _world, flow, action = _callback_world(authorization_response_iss_parameter_supported=True)
    query = {"error": "access_denied", "state": _state(action), "iss": "https://evil"}
    flow.receive_callback(REDIRECT + "?" + urlencode(query), NOW)
    error = failed(flow.take_events())
    assert isinstance(error, AuthorizationResponseRejected)
    assert "access_denied" not in str(error)


def test_O39_an_error_response_is_denied_without_retry() -> None:
    _world, flow, action = _callback_world()
    query = {"error": "access_denied\x1b[2J", "state": _state(action)}
    flow.receive_callback(REDIRECT + "?" + urlencode(query), NOW)
    error = failed(flow.take_events())
    assert isinstance(error, AuthorizationDenied)
    assert error.error.startswith("access_denied") and "\x1b" not in str(error)
    assert flow.take_actions() == []


def test_O40_a_response_without_code_is_rejected_and_a_code_used_once() -> None:
    _world, flow, action = _callback_world()
    flow.receive_callback(REDIRECT + "?" + urlencode({"state": _state(action)}), NOW)
    assert isinstance(failed(flow.take_events()), AuthorizationResponseRejected)
    # a late callback after the flow ended is ignored
    flow.receive_callback(REDIRECT + "?" + urlencode({"state": _state(action), "code": "c"}), NOW)
    assert flow.take_actions() == [] and flow.take_events() == []


def test_O41_the_user_wait_is_bounded() -> None:
    _world, flow, _action = _callback_world()
    assert flow.next_deadline() == NOW + 300
    flow.handle_timer(NOW + 299)
    assert flow.take_events() == []
    flow.handle_timer(NOW + 300)
    assert isinstance(failed(flow.take_events()), AuthorizationTimeout)
    assert flow.next_deadline() is None and not flow.busy


# --- token responses --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html>",
        b"[1]",
        b'{"token_type": "Bearer"}',
        b'{"access_token": "", "token_type": "Bearer"}',
        b'{"access_token": 5, "token_type": "Bearer"}',
        b'{"access_token": "t"}',
        b'{"access_token": "t", "token_type": "mac"}',
        b'{"access_token": "t", "token_type": "Bearer", "expires_in": "soon"}',
        b'{"access_token": "t", "token_type": "Bearer", "expires_in": -1}',
        b'{"access_token": "t", "token_type": "Bearer", "expires_in": true}',
        b'{"access_token": "t", "token_type": "Bearer", "expires_in": NaN}',
        b'{"access_token": "t", "token_type": "Bearer", "expires_in": 1e999}',
        b'{"access_token": "t", "token_type": "Bearer", "refresh_token": 3}',
        b"\xff\xfe",
        b"[" * 100_000,
    ],
)
def test_O46_malformed_token_responses_are_typed_errors(body: bytes) -> None:
    world = World().standard()
    world.route("POST", AS + "/token", (200, [], body))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, MalformedResponse)
    assert flow.tokens is None


def test_O46_expires_in_may_be_a_numeric_string_and_bearer_any_case() -> None:
    world = World().standard()
    world.route(
        "POST",
        AS + "/token",
        js(
            200,
            {"access_token": "t", "token_type": "BEARER", "expires_in": "120", "refresh_token": ""},
        ),
    )
    flow = make_flow()
    _, events = run_401(flow, world)
    tokens = authorized(events)
    assert tokens.expires_at == NOW + 120 and tokens.refresh_token is None
    assert tokens.token_type == "Bearer"


def test_O47_invalid_grant_is_a_token_error() -> None:
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, TokenError) and error.error == "invalid_grant" and error.status == 400
    assert len(world.of(Purpose.TOKEN_CODE)) == 1


def test_O47_invalid_client_forgets_the_client_and_registers_once_more() -> None:
    world = World().standard()
    answers = iter([js(401, {"error": "invalid_client"}), js(401, {"error": "invalid_client"})])
    world.route("POST", AS + "/token", lambda _r: next(answers))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, TokenError) and error.error == "invalid_client"
    assert len(world.of(Purpose.REGISTER)) == 2
    assert len(world.opened) == 2
    assert DeleteClient(issuer=AS) in world.store


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_O62_a_redirected_token_post_is_an_error_never_followed(status: int) -> None:
    world = World().standard()
    world.route("POST", AS + "/token", (status, [(b"location", b"https://evil/token")], b""))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, RedirectRefused) and error.status == status
    assert "https://evil/token" not in world.urls()


def test_O62_a_redirected_registration_is_an_error() -> None:
    world = World().standard()
    world.route("POST", AS + "/register", (307, [(b"location", b"https://evil/")], b""))
    flow = make_flow()
    _, events = run_401(flow, world)
    assert isinstance(failed(events), RedirectRefused)


def test_O66_an_oversized_body_is_cut_off() -> None:
    flow = make_flow(max_body=100)
    flow.challenge(RequestTicket(), 401, [], NOW)
    (request,) = flow.take_actions()
    assert isinstance(request, AuthRequest)
    flow.response_started(request.exchange_id, 200, [], NOW)
    flow.response_data(request.exchange_id, b"x" * 60, NOW)
    flow.response_data(request.exchange_id, b"x" * 60, NOW)
    assert flow.take_actions() == [AbortExchange(exchange_id=request.exchange_id)]
    error = failed(flow.take_events())
    assert isinstance(error, MalformedResponse) and "100 bytes" in str(error)
    flow.response_ended(request.exchange_id, NOW)  # late: ignored
    assert flow.take_events() == []


# --- refresh -----------------------------------------------------------------------------------


def _refresh_world(response: Response | Handler) -> World:
    world = World().standard()
    world.route("POST", AS + "/token", response)
    return world


def test_O51_O53_a_due_token_is_refreshed_before_sending() -> None:
    world = _refresh_world(
        js(
            200,
            {
                "access_token": "at-2",
                "token_type": "Bearer",
                "expires_in": 600,
                "refresh_token": "rt-2",
            },
        )
    )
    old = held(expires_at=NOW + 30)
    flow = make_flow(tokens=old)
    ticket = RequestTicket()
    # R6: the refresh starts ahead of expiry; the request goes with the token held
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-0")
    assert flow.busy
    world.pump(flow)
    tokens = authorized(flow.take_events())
    (request,) = world.requests
    assert request.url == AS + "/token"  # the recorded endpoint, no discovery
    assert form(request) == {
        "grant_type": "refresh_token",
        "refresh_token": "rt-1",
        "resource": S,
        "scope": "mcp:basic",
        "client_id": "dyn-client",
    }
    # O54: rotated refresh token stored
    assert tokens.access_token == "at-2" and tokens.refresh_token == "rt-2"
    assert tokens.expires_at == NOW + 600
    # R4: written in place of the set it started from, under the store's refresh lock
    assert world.store == [
        SaveTokens(key=TokenKey(server_url=S, issuer=AS), tokens=tokens, replaces=old)
    ]
    assert [type(a).__name__ for a in world.locks] == ["LockTokens", "UnlockTokens"]
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-2")


def test_O54_a_refresh_without_refresh_token_or_scope_keeps_the_old_ones() -> None:
    world = _refresh_world(js(200, {"access_token": "at-2", "token_type": "Bearer"}))
    flow = make_flow(tokens=held(expires_at=NOW))
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    tokens = authorized(flow.take_events())
    assert tokens.refresh_token == "rt-1" and tokens.scope == "mcp:basic"
    assert tokens.expires_at is None


def test_O56_one_refresh_at_a_time() -> None:
    world = _refresh_world(js(200, {"access_token": "at-2", "token_type": "Bearer"}))
    flow = make_flow(tokens=held(expires_at=NOW))
    first, second = RequestTicket(), RequestTicket()
    assert flow.prepare(first, NOW) is WAIT
    assert flow.prepare(second, NOW) is WAIT
    assert flow.busy
    # a 401 for a request sent earlier joins the refresh
    assert flow.challenge(RequestTicket(generation=0), 401, [], NOW) is WAIT
    world.pump(flow)
    assert len(world.requests) == 1
    authorized(flow.take_events())
    assert (
        flow.prepare(first, NOW) == flow.prepare(second, NOW) == (b"authorization", b"Bearer at-2")
    )


def test_O56_a_401_for_an_older_token_just_retries() -> None:
    world = _refresh_world(js(200, {"access_token": "at-2", "token_type": "Bearer"}))
    flow = make_flow(tokens=held(expires_at=NOW))
    old = RequestTicket(generation=0)
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    flow.take_events()
    assert flow.challenge(old, 401, [], NOW) is RETRY
    assert world.requests[1:] == []


@pytest.mark.parametrize("code", ["invalid_grant", "invalid_request", None])
def test_O55_a_refused_refresh_deletes_tokens_and_authorizes_anew(code: str | None) -> None:
    answers = iter(
        [
            js(400, {"error": code} if code else {}),
            js(200, {"access_token": "at-new", "token_type": "Bearer"}),
        ]
    )
    world = World().standard()
    world.route("POST", AS + "/token", lambda _r: next(answers))
    client = ClientRecord(client_id="dyn-client", redirect_uris=(REDIRECT,), issuer=AS)
    flow = make_flow(tokens=held(expires_at=NOW), clients=[client])
    assert flow.prepare(RequestTicket(), NOW) is WAIT
    world.pump(flow)
    tokens = authorized(flow.take_events())
    assert tokens.access_token == "at-new"
    assert TokenKey(server_url=S, issuer=AS) in [
        a.key for a in world.store if isinstance(a, DeleteTokens)
    ]
    assert len(world.opened) == 1
    assert authz_params(world)["scope"] == "mcp:basic"  # O22: the previous scope kept
    assert world.of(Purpose.REGISTER) == []  # the client is kept


@pytest.mark.parametrize("status", [500, 503, 429])
def test_O55_a_refresh_failing_with_5xx_keeps_the_tokens(status: int) -> None:
    world = _refresh_world((status, [], b""))
    old = held(expires_at=NOW + 30)
    flow = make_flow(tokens=old)
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    assert isinstance(failed(flow.take_events()), OAuthTransientError)
    assert flow.tokens == old
    assert not any(isinstance(a, DeleteTokens) for a in world.store)
    # R6: the token is still valid: requests carry it, and the refresh is tried
    # again after a pause, not on every request
    assert flow.prepare(RequestTicket(), NOW + 1) == (b"authorization", b"Bearer at-0")
    assert not flow.busy
    assert flow.prepare(RequestTicket(), NOW + 11) == (b"authorization", b"Bearer at-0")
    assert flow.busy


def test_O52_a_401_while_holding_a_refresh_token_rediscovers_then_refreshes() -> None:
    world = _refresh_world(js(200, {"access_token": "at-2", "token_type": "Bearer"}))
    flow = make_flow(tokens=held())
    ticket = RequestTicket()
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-0")
    outcome, events = run_401(flow, world, challenge(scope="mcp:basic"), ticket)
    assert outcome is WAIT
    authorized(events)
    assert [r.purpose for r in world.requests] == [Purpose.PRM, Purpose.ASM, Purpose.TOKEN_REFRESH]
    assert world.opened == []
    # the same request gets 401 again: no second refresh, an interactive flow instead
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-2")
    world.requests.clear()
    outcome, events = run_401(flow, world, [], ticket)
    authorized(events)
    assert Purpose.TOKEN_REFRESH not in [r.purpose for r in world.requests]
    assert len(world.opened) == 1
    # and a third 401 for it fails (O60)
    flow.prepare(ticket, NOW)
    outcome = flow.challenge(ticket, 401, [], NOW)
    assert isinstance(outcome, Fail) and isinstance(outcome.error, OAuthError)


def test_O1_O51_an_expired_token_without_refresh_is_not_sent() -> None:
    flow = make_flow(tokens=held(refresh=None, expires_at=NOW - 1))
    assert flow.prepare(RequestTicket(), NOW) is None
    flow2 = make_flow(tokens=held(refresh=None, expires_at=NOW + 30))
    assert flow2.prepare(RequestTicket(), NOW) == (b"authorization", b"Bearer at-0")


# --- step-up ----------------------------------------------------------------------------------


def test_O59_O22_step_up_with_the_union_and_reused_metadata() -> None:
    """O57: more scopes mean a new sign-in (a second authorization and a code exchange), never
    a refresh asking for more.
    """
    world = World().standard()
    world.route("GET", PRM_PATH, js(200, prm(scopes_supported=["mcp:profile"])))
    flow = make_flow()
    run_401(flow, world, challenge(scope="mcp:basic"))
    assert authz_params(world)["scope"] == "mcp:basic"
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    world.requests.clear()
    outcome = flow.challenge(
        ticket, 403, challenge(error="insufficient_scope", scope="mcp:write"), NOW
    )
    assert outcome is WAIT
    world.pump(flow)
    authorized(flow.take_events())
    assert authz_params(world)["scope"] == "mcp:basic mcp:write"
    # cached metadata and client reused: only the token request
    assert [r.purpose for r in world.requests] == [Purpose.TOKEN_CODE]
    # O60: the same request 403s again: no third authorization
    flow.prepare(ticket, NOW)
    outcome = flow.challenge(
        ticket, 403, challenge(error="insufficient_scope", scope="mcp:write"), NOW
    )
    assert isinstance(outcome, Fail) and isinstance(outcome.error, InsufficientScope)
    assert outcome.error.challenged == ("mcp:write",)
    assert len(world.opened) == 2


def test_O60_no_reauthorization_when_the_granted_scope_already_covers_the_challenge() -> None:
    flow = make_flow(tokens=held(scope="mcp:admin mcp:basic"))
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    outcome = flow.challenge(
        ticket, 403, challenge(error="insufficient_scope", scope="mcp:admin"), NOW
    )
    assert isinstance(outcome, Fail) and isinstance(outcome.error, InsufficientScope)
    assert flow.take_actions() == []


def test_O60_scope_retry_limit_stays_within_three_authorizations() -> None:
    world = World().standard()
    flow = make_flow()
    total_fail = 0
    for _ in range(3):  # three logical requests, each answered 403 mcp:admin forever
        ticket = RequestTicket()
        header = flow.prepare(ticket, NOW)
        status = 401 if header is None else 403
        for _round in range(5):
            params = {"scope": "mcp:admin"}
            if status == 403:
                params["error"] = "insufficient_scope"
            outcome = flow.challenge(ticket, status, challenge(**params), NOW)
            world.pump(flow)
            flow.take_events()
            if isinstance(outcome, Fail):
                total_fail += 1
                break
            flow.prepare(ticket, NOW)
            status = 403
    assert total_fail == 3
    assert 1 <= len(world.opened) <= 3


def test_O3_a_403_without_insufficient_scope_is_not_an_auth_matter() -> None:
    flow = make_flow()
    assert flow.challenge(RequestTicket(), 403, challenge(error="invalid_token"), NOW) is None
    assert flow.challenge(RequestTicket(), 403, [], NOW) is None
    assert flow.challenge(RequestTicket(), 500, [], NOW) is None
    assert flow.take_actions() == []


def test_O59_step_up_without_cached_metadata_discovers_first() -> None:
    world = World().standard()
    flow = make_flow(tokens=held(refresh=None, scope="mcp:basic"))
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    flow.challenge(ticket, 403, challenge(error="insufficient_scope", scope="mcp:write"), NOW)
    world.pump(flow)
    authorized(flow.take_events())
    assert [r.purpose for r in world.requests][:2] == [Purpose.PRM, Purpose.ASM]
    assert authz_params(world)["scope"] == "mcp:basic mcp:write"


# --- client credentials (A5) -----------------------------------------------------------------


def _cc_world(methods: list[str]) -> World:
    world = World()
    world.route("GET", PRM_PATH, js(200, prm()))
    world.route(
        "GET",
        ASM_ROOT,
        js(
            200,
            asm(
                grant_types_supported=["client_credentials"],
                token_endpoint_auth_methods_supported=methods,
                code_challenge_methods_supported=None,
                authorization_endpoint=None,
                registration_endpoint=None,
            ),
        ),
    )
    world.route(
        "POST",
        AS + "/token",
        js(200, {"access_token": "cc-token-1", "token_type": "Bearer", "expires_in": 60}),
    )
    return world


def test_O71_client_credentials_with_basic() -> None:
    world = _cc_world(["client_secret_basic"])
    pre = PreRegisteredClient(
        client_id="conformance-test-client", client_secret="conformance-test-secret"
    )
    flow = make_flow(grant="client_credentials", preregistered=pre)
    _, events = run_401(flow, world, challenge(scope="mcp:basic"))
    tokens = authorized(events)
    assert world.opened == [] and world.of(Purpose.REGISTER) == []
    (token,) = world.of(Purpose.TOKEN_CLIENT_CREDENTIALS)
    assert form(token) == {
        "grant_type": "client_credentials",
        "scope": "mcp:basic",
        "resource": S,
        "client_id": "conformance-test-client",  # named in the body too (RFC 6749 3.2.1)
    }
    auth = hdr(token, b"authorization") or b""
    assert base64.b64decode(auth[6:]) == b"conformance-test-client:conformance-test-secret"
    assert tokens.access_token == "cc-token-1"


def test_O71_client_credentials_with_post() -> None:
    world = _cc_world(["client_secret_post"])
    pre = PreRegisteredClient(client_id="c", client_secret="s", auth_method="client_secret_post")
    flow = make_flow(grant="client_credentials", preregistered=pre)
    _, events = run_401(flow, world)
    authorized(events)
    (token,) = world.of(Purpose.TOKEN_CLIENT_CREDENTIALS)
    assert form(token)["client_secret"] == "s" and hdr(token, b"authorization") is None


def test_O72_client_credentials_with_a_jwt_signed_by_the_host() -> None:
    world = _cc_world(["private_key_jwt"])
    pre = PreRegisteredClient(client_id="jwt-client", auth_method="private_key_jwt", key_id="k1")
    flow = make_flow(grant="client_credentials", preregistered=pre)
    _, events = run_401(flow, world)
    authorized(events)
    (sign,) = world.signed
    assert sign.header == {"alg": "ES256", "typ": "JWT", "kid": "k1"}
    claims = sign.claims
    assert claims["iss"] == claims["sub"] == "jwt-client"
    assert claims["aud"] == AS
    assert claims["iat"] == int(NOW) and claims["exp"] - claims["iat"] <= 300
    assert isinstance(claims["jti"], str) and len(claims["jti"]) >= 16
    head, body = sign.signing_input.split(b".")
    assert json.loads(base64.urlsafe_b64decode(body + b"==")) == claims
    assert json.loads(base64.urlsafe_b64decode(head + b"==")) == sign.header
    (token,) = world.of(Purpose.TOKEN_CLIENT_CREDENTIALS)
    fields = form(token)
    assert (
        fields["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    )
    assert fields["client_assertion"] == compact_jws(sign.signing_input, b"sig")
    assert "client_secret" not in fields and hdr(token, b"authorization") is None


def test_O72_a_malformed_assertion_is_the_hosts_mistake() -> None:
    world = _cc_world(["private_key_jwt"])
    pre = PreRegisteredClient(client_id="j", auth_method="private_key_jwt")
    flow = make_flow(grant="client_credentials", preregistered=pre)
    flow.challenge(RequestTicket(), 401, [], NOW)
    world.now = NOW
    for _ in range(2):
        for action in flow.take_actions():
            assert isinstance(action, AuthRequest)
            key = (action.method, action.url)
            response = world.routes[key]
            assert not callable(response)
            flow.receive_response(action.exchange_id, *response, NOW)
    (sign,) = flow.take_actions()
    assert isinstance(sign, SignAssertion)
    with pytest.raises(InvalidValue):
        flow.receive_assertion(sign.request_id, "not a jwt", NOW)
    flow.receive_assertion(sign.request_id + 1, "a.b.c", NOW)  # stale id: ignored
    assert flow.take_actions() == []


def test_O61_client_credentials_step_up_requests_the_union() -> None:
    world = _cc_world(["client_secret_basic"])
    pre = PreRegisteredClient(client_id="c", client_secret="s")
    flow = make_flow(grant="client_credentials", preregistered=pre)
    run_401(flow, world, challenge(scope="a"))
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    flow.challenge(ticket, 403, challenge(error="insufficient_scope", scope="b"), NOW)
    world.pump(flow)
    authorized(flow.take_events())
    last = world.of(Purpose.TOKEN_CLIENT_CREDENTIALS)[-1]
    assert form(last)["scope"] == "a b"


def test_A5_client_credentials_needs_a_preregistered_client() -> None:
    with pytest.raises(InvalidValue):
        make_flow(grant="client_credentials")
    with pytest.raises(InvalidValue):
        make_flow(
            preregistered=PreRegisteredClient(client_id="c", auth_method="client_secret_post")
        )


# --- misc commands -----------------------------------------------------------------------------


def test_A1_login_starts_eagerly_and_twice_is_a_mistake() -> None:
    world = World().standard()
    world.callback = lambda _a: None
    flow = make_flow()
    flow.login(NOW)
    with pytest.raises(InvalidState):
        flow.login(NOW)
    world.pump(flow)
    assert flow.awaiting_user
    assert flow.challenge(RequestTicket(), 401, [], NOW) is WAIT  # joins


def test_A1_entropy_must_give_the_asked_length() -> None:
    world = World().standard()
    flow = make_flow(token_bytes=lambda n: b"short")
    with pytest.raises(InvalidValue):
        run_401(flow, world)


def test_A1_stale_exchange_ids_are_ignored() -> None:
    flow = make_flow()
    flow.receive_response(99, 200, [], b"{}", NOW)
    flow.response_failed(99, TransportFailure(FailureKind.RESET), NOW)
    flow.handle_timer(NOW)
    flow.cancel()
    assert flow.take_actions() == [] and flow.take_events() == []


# --- A4 / O64: secrets never shown ------------------------------------------------------------


def test_A4_O64_reprs_hide_secrets() -> None:
    tokens = TokenSet(
        access_token="SECRET-AT",
        refresh_token="SECRET-RT",
        issuer=AS,
        token_endpoint=AS + "/token",
        resource=S,
        client_id="c",
    )
    client = ClientRecord(client_id="c", client_secret="SECRET-CS", issuer=AS)
    pre = PreRegisteredClient(client_id="c", client_secret="SECRET-PS")
    config = OAuthConfig(server_url=S, redirect_uri=REDIRECT, preregistered=pre)
    request = AuthRequest(
        exchange_id=1,
        purpose=Purpose.TOKEN_CODE,
        method="POST",
        url=AS + "/token?x=SECRET-Q",
        headers=[(b"authorization", b"Basic SECRET-H")],
        body=b"code=SECRET-CODE",
    )
    opened = OpenAuthorizationUrl(
        url=AS + "/authorize?state=SECRET-ST", redirect_uri=REDIRECT, deadline=1
    )
    shown = " ".join(
        repr(x)
        for x in (
            tokens,
            client,
            pre,
            config,
            request,
            opened,
            SaveTokens(key=TokenKey(server_url=S, issuer=AS), tokens=tokens),
            SaveClient(issuer=AS, client=client),
            Authorized(tokens=tokens),
            OAuthFlow(config, token_bytes=counter_entropy(), tokens=tokens, clients=[client]),
        )
    )
    assert "SECRET" not in shown
    assert "purpose=token_code" in shown


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def oauth_log() -> Iterator[_Records]:
    logger = logging.getLogger("mcpcore.oauth")
    handler = _Records()
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


_secret = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=16, max_size=24)


def _everything_shown(world: World, flow: OAuthFlow, events: list[object], log: _Records) -> str:
    parts = [repr(flow), *log.lines]
    for item in [*world.requests, *world.opened, *world.store, *world.signed, *events]:
        parts += [repr(item), str(item)]
        error = getattr(item, "error", None)
        if isinstance(error, BaseException):
            parts += [str(error), repr(error), repr(error.args), repr(vars(error))]
    return "\n".join(parts)


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(
    access=_secret,
    refresh=_secret,
    code=_secret,
    client_secret=_secret,
    seed=st.binary(min_size=4, max_size=8),
    echo=st.sampled_from(["token", "denied", "callback", "refresh", "none"]),
)
def test_A4_O64_no_secret_ever_appears_in_a_repr_error_or_log(
    oauth_log: _Records,
    access: str,
    refresh: str,
    code: str,
    client_secret: str,
    seed: bytes,
    echo: str,
) -> None:
    oauth_log.lines.clear()

    def entropy(n: int) -> bytes:
        return (hashlib.sha256(seed + bytes([n])).digest() * 2)[:n]

    world = World().standard(token_endpoint_auth_methods_supported=["client_secret_post"])
    world.route(
        "POST", AS + "/register", js(201, {"client_id": "c", "client_secret": client_secret})
    )
    secrets = [access, refresh, code, client_secret]
    if echo == "token":
        # the AS echoes the code, secret and verifier back in its error text
        world.route(
            "POST",
            AS + "/token",
            lambda r: js(400, {"error": code, "error_description": f"bad {r.body!r}"}),
        )
    else:
        world.route(
            "POST",
            AS + "/token",
            js(
                200,
                {
                    "access_token": access,
                    "token_type": "Bearer",
                    "refresh_token": refresh,
                    "expires_in": 10,
                },
            ),
        )
    if echo == "denied":
        world.callback = lambda a: (
            a.redirect_uri
            + "?"
            + urlencode(
                {"state": _state(a), "error": "access_denied", "error_description": _state(a)}
            )
        )
    elif echo == "callback":
        world.callback = lambda a: (
            a.redirect_uri
            + "?"
            + urlencode(
                {
                    "state": parse_qs(urlsplit(a.url).query)["state"][0] + "x",
                    "code": code,
                    "error": code,
                }
            )
        )
    else:
        world.callback = lambda a: (
            a.redirect_uri
            + "?"
            + urlencode({"state": parse_qs(urlsplit(a.url).query)["state"][0], "code": code})
        )
    flow = make_flow(token_bytes=entropy)
    _, events = run_401(flow, world, challenge(scope="mcp:basic"))
    if echo == "refresh" and flow.tokens is not None:
        world.route(
            "POST",
            AS + "/token",
            js(400, {"error": "invalid_grant", "error_description": refresh + access}),
        )
        world.now = NOW + 100
        flow.prepare(RequestTicket(), world.now)
        world.pump(flow)
        events += flow.take_events()
    state_and_verifier = []
    for opened in world.opened:
        state_and_verifier.append(parse_qs(urlsplit(opened.url).query)["state"][0])
    for request in world.of(Purpose.TOKEN_CODE):
        state_and_verifier.append(form(request)["code_verifier"])
    shown = _everything_shown(world, flow, events, oauth_log)
    for secret in secrets + state_and_verifier:
        assert secret not in shown


# --- robustness: arbitrary server output never raises --------------------------------------


_statuses = st.sampled_from([200, 201, 204, 301, 302, 307, 400, 401, 403, 404, 429, 500, 503])
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
_plausible = st.fixed_dictionaries(
    {},
    optional={
        "resource": st.sampled_from([S, "https://mcp.example.com", "https://evil/mcp", 3]),
        "authorization_servers": st.sampled_from([[AS], [], ["x"], None, [AS + "/t"]]),
        "issuer": st.sampled_from([AS, AS + "/", AS + "/t", "https://evil", None]),
        "authorization_endpoint": st.sampled_from([AS + "/authorize", "http://evil/a", 1]),
        "token_endpoint": st.sampled_from([AS + "/token", "ftp://x", None]),
        "registration_endpoint": st.sampled_from([AS + "/register", None]),
        "code_challenge_methods_supported": st.sampled_from([["S256"], ["plain"], "S256"]),
        "client_id": st.sampled_from(["c", "", None, 5]),
        "client_secret": st.sampled_from(["s", None]),
        "token_endpoint_auth_method": st.sampled_from(["none", "client_secret_basic", "x"]),
        "access_token": st.sampled_from(["t", "", None]),
        "token_type": st.sampled_from(["Bearer", "dpop", None]),
        "expires_in": st.sampled_from([1, "2", -1, "x", None, 1e308]),
        "refresh_token": st.sampled_from(["r", None, 3]),
        "error": st.sampled_from(["invalid_grant", "invalid_client", 7]),
        "scopes_supported": st.sampled_from([["a"], "a", None]),
    },
)
_bodies = st.one_of(
    st.binary(max_size=64),
    _json_values.map(lambda v: json.dumps(v).encode()),
    _plausible.map(lambda v: json.dumps(v).encode()),
)
_headers = st.lists(
    st.tuples(
        st.sampled_from([b"content-type", b"www-authenticate", b"location"]), st.binary(max_size=40)
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    responses=st.lists(st.tuples(_statuses, _headers, _bodies), min_size=1, max_size=12),
    callbacks=st.lists(st.text(max_size=80), max_size=3),
    mcp=st.lists(st.tuples(st.sampled_from([401, 403]), _headers), max_size=3),
    grant=st.sampled_from(["authorization_code", "client_credentials"]),
)
def test_A1_arbitrary_server_output_never_raises(
    responses: list[tuple[int, list[tuple[bytes, bytes]], bytes]],
    callbacks: list[str],
    mcp: list[tuple[int, list[tuple[bytes, bytes]]]],
    grant: str,
) -> None:
    pre = (
        PreRegisteredClient(client_id="c", client_secret="s")
        if grant == "client_credentials"
        else None
    )
    flow = make_flow(grant=grant, preregistered=pre, tokens=held(expires_at=NOW + 10))
    answers = iter(responses)
    pending_callbacks = iter(callbacks)
    now = NOW
    flow.challenge(RequestTicket(), 401, challenge(scope="a"), now)
    for status, headers in mcp:
        ticket = RequestTicket()
        flow.prepare(ticket, now)
        flow.challenge(ticket, status, headers, now)
    for _ in range(40):
        now += 7
        progressed = False
        for action in flow.take_actions():
            if isinstance(action, AuthRequest):
                answer = next(answers, None)
                if answer is None:
                    flow.response_failed(
                        action.exchange_id, TransportFailure(FailureKind.TIMEOUT), now
                    )
                else:
                    flow.receive_response(action.exchange_id, *answer, now)
                progressed = True
            elif isinstance(action, OpenAuthorizationUrl):
                text = next(pending_callbacks, None)
                if text is not None:
                    flow.receive_callback(REDIRECT + "?" + text, now)
                    flow.receive_callback(
                        REDIRECT + "?" + urlencode({"state": _state(action), "code": text}), now
                    )
                else:
                    flow.handle_timer(now + 1000)
                progressed = True
            elif isinstance(action, SignAssertion):  # pragma: no cover - not configured
                flow.receive_assertion(action.request_id, "a.b.c", now)
        for event in flow.take_events():
            if isinstance(event, AuthFailed):
                assert isinstance(event.error, OAuthError) and isinstance(event.error, McpError)
            else:
                assert isinstance(event, Authorized)
        if not progressed:
            break
        flow.prepare(RequestTicket(), now)


def test_O53_O72_refresh_of_a_preregistered_jwt_client_signs_an_assertion() -> None:
    world = _refresh_world(js(200, {"access_token": "at-2", "token_type": "Bearer"}))
    pre = PreRegisteredClient(client_id="jwt-client", auth_method="private_key_jwt")
    flow = make_flow(preregistered=pre, tokens=held(expires_at=NOW, client_id="jwt-client"))
    assert flow.prepare(RequestTicket(), NOW) is WAIT
    world.pump(flow)
    authorized(flow.take_events())
    (sign,) = world.signed
    assert sign.claims["aud"] == AS  # the issuer recorded with the token
    fields = form(world.requests[0])
    assert fields["grant_type"] == "refresh_token" and "client_assertion" in fields


def test_O19_a_configured_scope_overrides_the_first_choice() -> None:
    world = World().standard()
    flow = make_flow(scope="custom:scope")
    run_401(flow, world, challenge(scope="mcp:basic"))
    assert authz_params(world)["scope"] == "custom:scope mcp:basic"


def test_O24_a_step_up_that_cannot_register_fails_at_once() -> None:
    world = World().standard()
    flow = make_flow()
    run_401(flow, world)
    # the cached registration is lost and the AS offers no way to register now
    flow._clients.clear()
    meta = flow._metadata
    assert meta is not None
    meta.registration_endpoint = None
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    outcome = flow.challenge(ticket, 403, challenge(error="insufficient_scope", scope="x"), NOW)
    assert isinstance(outcome, Fail) and isinstance(outcome.error, ClientRegistrationRequired)


@pytest.mark.parametrize("url", ["mcp.example.com/mcp", "ftp://x/y", ""])
def test_A1_the_server_url_must_be_absolute(url: str) -> None:
    with pytest.raises(InvalidValue):
        make_flow(server_url=url)


def test_O28_a_loopback_redirect_on_another_port_reuses_the_registered_client() -> None:
    """RFC 8252: a native app's loopback listener takes whatever port is free, so a
    client registered for http://127.0.0.1:PORT/callback is reused on another port;
    another host or path is a different redirect."""
    from mcpcore.auth._oauth import _redirect_registered

    registered = ("http://127.0.0.1:50111/callback",)
    assert _redirect_registered("http://127.0.0.1:50999/callback", registered)
    assert not _redirect_registered("http://127.0.0.1:50999/other", registered)
    assert not _redirect_registered(
        "http://192.0.2.1:50111/callback", ("http://192.0.2.1:1/callback",)
    )
    assert not _redirect_registered("https://app.example/cb", ("https://app.example/cb2",))
    assert _redirect_registered("https://app.example/cb", ("https://app.example/cb",))


def test_every_request_of_the_flow_is_read_by_exactly_one_phase() -> None:
    """The PHASES table: each purpose of request is answered to the phase that sends it."""
    from mcpcore.auth._oauth import PHASES

    flow = make_flow()
    purposes = [purpose for _, requests in PHASES for purpose, _ in requests]
    assert sorted(p.value for p in purposes) == sorted(p.value for p in Purpose)
    for phase, requests in PHASES:
        for _, reader in requests:
            assert callable(getattr(getattr(flow, phase), reader))
