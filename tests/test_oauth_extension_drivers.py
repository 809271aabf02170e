"""DPoP, enterprise-managed authorization and workload identity through both
drivers (N1, N2, N3), over loopback: the demo server made into a protected
resource with an authorization server and an identity provider on its origin.

Each test runs on the anyio driver (asyncio and trio) and the threaded one.
What is checked is what the servers received: the proofs on the token request
and on every MCP request, the nonce retries, the two requests of the ID-JAG
flow, the workload token read anew before each grant.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import AuthOptions, IdentityProvider, PreRegisteredClient, ProvideAssertion
from mcpcore.auth._oauth_dpop import jwk_thumbprint
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest
from mcpcore_jwt import DpopKey
from mcpcore_stores import SqliteTokenStore

pytestmark = pytest.mark.anyio

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def claims_of(jws: str) -> dict[str, Any]:
    """A proof's claims (its signature is ``mcpcore_jwt``'s, tested in the core tests)."""
    part = jws.split(".")[1]
    value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return value


def header_of(jws: str) -> dict[str, Any]:
    part = jws.split(".")[0]
    value: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return value


class Servers:
    """The fault hook: resource metadata, an authorization server (``/token``), an
    identity provider (``/idp/token``); the MCP endpoint wants the current token
    (with DPoP: the DPoP scheme, a proof, and the nonce ``rs-nonce``)."""

    def __init__(self, *, dpop: bool = False) -> None:
        self.origin = ""
        self.dpop = dpop
        self.token_forms: list[dict[str, str]] = []
        self.token_proofs: list[dict[str, Any]] = []
        self.idp_forms: list[dict[str, str]] = []
        self.basic: list[str | None] = []
        self.mcp_proofs: list[dict[str, Any]] = []
        self.mcp_keys: list[str] = []  # the thumbprint of each MCP proof's key
        self.schemes: list[str | None] = []
        self.rs_nonce_challenges = 0
        self.issued = 0
        self.idp_refuses = False

    @property
    def current(self) -> str:
        return f"tok-{self.issued}"

    def __call__(self, request: ReceivedRequest) -> FaultResponse | None:
        path = request.path.split("?", 1)[0]
        if path == "/.well-known/oauth-protected-resource/mcp":
            return FaultResponse.json(
                {"resource": f"{self.origin}/mcp", "authorization_servers": [self.origin]}
            )
        if path == "/.well-known/oauth-authorization-server":
            return FaultResponse.json(
                {
                    "issuer": self.origin,
                    "authorization_endpoint": f"{self.origin}/authorize",
                    "token_endpoint": f"{self.origin}/token",
                    "response_types_supported": ["code"],
                    "grant_types_supported": [JWT_BEARER, "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                    "dpop_signing_alg_values_supported": ["ES256"],
                }
            )
        if path == "/idp/token":
            self.idp_forms.append(dict(parse_qsl((request.body or b"").decode())))
            if self.idp_refuses:
                return FaultResponse.json({"error": "invalid_grant"}, status=400)
            return FaultResponse.json(
                {
                    "access_token": "the-id-jag",
                    "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "token_type": "N_A",
                }
            )
        if path == "/token":
            return self.token(request)
        if path.startswith("/.well-known/"):
            return FaultResponse.respond(404)
        return self.mcp(request)

    def token(self, request: ReceivedRequest) -> FaultResponse:
        self.token_forms.append(dict(parse_qsl((request.body or b"").decode())))
        self.basic.append(request.headers.get("authorization"))
        kind = "Bearer"
        if self.dpop:
            claims = claims_of(request.headers["dpop"])
            self.token_proofs.append(claims)
            if claims.get("nonce") != "as-nonce":
                return FaultResponse.json(
                    {"error": "use_dpop_nonce"}, status=400, headers={"dpop-nonce": "as-nonce"}
                )
            kind = "DPoP"
        self.issued += 1
        return FaultResponse.json(
            {"access_token": self.current, "token_type": kind, "expires_in": 3600}
        )

    def mcp(self, request: ReceivedRequest) -> FaultResponse | None:
        authorization = request.headers.get("authorization")
        self.schemes.append(authorization.split(" ")[0] if authorization else None)
        metadata = f'resource_metadata="{self.origin}/.well-known/oauth-protected-resource/mcp"'
        if self.dpop and authorization == f"DPoP {self.current}":
            claims = claims_of(request.headers["dpop"])
            self.mcp_proofs.append(claims)
            self.mcp_keys.append(jwk_thumbprint(header_of(request.headers["dpop"])["jwk"]))
            if claims.get("nonce") != "rs-nonce":
                self.rs_nonce_challenges += 1
                return FaultResponse.respond(
                    401,
                    {
                        "www-authenticate": f'DPoP error="use_dpop_nonce", {metadata}',
                        "dpop-nonce": "rs-nonce",
                    },
                )
            return None
        if not self.dpop and authorization == f"Bearer {self.current}":
            return None
        scheme = "DPoP" if self.dpop else "Bearer"
        return FaultResponse.respond(401, {"www-authenticate": f"{scheme} {metadata}"})


async def test_N1_dpop_proofs_on_the_token_request_and_every_mcp_request(driver: str) -> None:
    """N1: the driver makes the key (``mcpcore_jwt``); the token endpoint's and the
    MCP server's nonce challenges are answered once each; every MCP request has
    the DPoP scheme and a fresh proof for it, with ath and the MCP origin's nonce."""
    servers = Servers(dpop=True)
    options = AuthOptions(
        client=PreRegisteredClient(client_id="app"),
        grant="client_credentials",
        dpop=True,
    )
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(driver, "bound", {"url": running.url}, auth=options) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                output = await client.call("bound/echo", {"text": "proved"})
    assert "proved" in output.text
    assert [p.get("nonce") for p in servers.token_proofs] == [None, "as-nonce"]
    assert all(
        p["htm"] == "POST" and p["htu"] == f"{servers.origin}/token" for p in servers.token_proofs
    )
    assert servers.rs_nonce_challenges == 1  # kept for the origin after the first
    assert {s for s in servers.schemes if s is not None} == {"DPoP"}
    ath = base64.urlsafe_b64encode(hashlib.sha256(b"tok-1").digest()).rstrip(b"=").decode()
    proofs = servers.mcp_proofs
    assert proofs and all(p["ath"] == ath and p["htu"] == running.url for p in proofs)
    assert len({p["jti"] for p in proofs}) == len(proofs)  # fresh each time
    assert all(p.get("nonce") == "rs-nonce" for p in proofs[1:])


async def test_N1_a_restarted_client_takes_up_the_stored_dpop_key(
    driver: str, tmp_path: Path
) -> None:
    """N1: the key the driver made is kept in the store with the tokens bound to
    it; a client started again on that store with ``dpop=True`` and no key of the
    host's takes it up and uses the stored DPoP token (no new grant, proofs by
    the same key). A client given a key of the host's uses that one: the stored
    token, bound to another key, is not used (a new grant)."""
    servers = Servers(dpop=True)
    store = SqliteTokenStore(tmp_path / "tokens.db")
    options = AuthOptions(
        client=PreRegisteredClient(client_id="app"),
        grant="client_credentials",
        dpop=True,
        store=store,
    )
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        for run in ("first", "restarted"):
            async with open_client(driver, "kept", {"url": running.url}, auth=options) as client:
                with anyio.fail_after(20):
                    assert (await client.ready(10)).ok
                    output = await client.call("kept/echo", {"text": run})
            assert run in output.text
        stored = store.get_tokens(running.url)
        assert stored is not None and stored.dpop_jkt is not None and stored.dpop_key_export
        assert servers.issued == 1 and len(servers.token_forms) == 2  # one grant (+ its nonce)
        assert set(servers.mcp_keys) == {stored.dpop_jkt}  # both runs proved with one key
        own = DpopKey.generate()
        mine = AuthOptions(
            client=PreRegisteredClient(client_id="app"),
            grant="client_credentials",
            dpop=True,
            dpop_key=own,
            store=store,
        )
        async with open_client(driver, "kept", {"url": running.url}, auth=mine) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                await client.call("kept/echo", {"text": "own key"})
    assert servers.issued == 2  # the host's key wins: a grant of its own
    assert servers.mcp_keys[-1] == jwk_thumbprint(own.public_jwk)
    again = store.get_tokens(running.url)
    assert again is not None and again.dpop_jkt == jwk_thumbprint(own.public_jwk)


async def test_N3_the_workload_token_file_is_read_again_before_each_grant(
    driver: str, tmp_path: Path
) -> None:
    """N3: ``assertion=`` a path: the driver reads it for each grant; a rotated
    file's new token is what the next grant sends."""
    servers = Servers()
    token_file = tmp_path / "token"
    token_file.write_text("platform-jwt-1\n")
    options = AuthOptions(
        client=PreRegisteredClient(client_id="workload"),
        grant="jwt_bearer",
        assertion=token_file,
    )
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(driver, "wl", {"url": running.url}, auth=options) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                token_file.write_text("platform-jwt-2\n")
                servers.issued += 1  # the server no longer takes the first token
                output = await client.call("wl/echo", {"text": "again"})
    assert "again" in output.text
    assert [(f["grant_type"], f["assertion"]) for f in servers.token_forms] == [
        (JWT_BEARER, "platform-jwt-1"),
        (JWT_BEARER, "platform-jwt-2"),
    ]
    assert all(f["client_id"] == "workload" for f in servers.token_forms)


def _identity_hook(driver: str, asked: list[ProvideAssertion]) -> Any:
    def blocking(request: ProvideAssertion) -> str:
        asked.append(request)
        return "the-id-token"

    async def waiting(request: ProvideAssertion) -> str:
        return blocking(request)

    return blocking if driver == "threaded" else waiting


def _enterprise(servers: Servers, driver: str, asked: list[ProvideAssertion]) -> AuthOptions:
    return AuthOptions(
        client=PreRegisteredClient(
            client_id="app", client_secret="app-secret", auth_method="client_secret_basic"
        ),
        grant="enterprise",
        identity_provider=IdentityProvider(
            token_endpoint=f"{servers.origin}/idp/token", client_id="idp-app"
        ),
        assertion=_identity_hook(driver, asked),
    )


async def test_N2_the_id_jag_flow_through_the_driver(driver: str) -> None:
    """N2: the identity assertion from the hook, exchanged at the IdP for an
    ID-JAG, presented at the authorization server with the client's Basic
    credentials; no person."""
    servers = Servers()
    asked: list[ProvideAssertion] = []
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        options = _enterprise(servers, driver, asked)
        async with open_client(driver, "ent", {"url": running.url}, auth=options) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
    (ask,) = asked
    assert (ask.kind, ask.audience, ask.resource) == ("identity", servers.origin, running.url)
    (exchange,) = servers.idp_forms
    assert exchange["subject_token"] == "the-id-token"
    assert exchange["audience"] == servers.origin and exchange["resource"] == running.url
    assert exchange["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
    (grant,) = servers.token_forms
    assert (grant["grant_type"], grant["assertion"]) == (JWT_BEARER, "the-id-jag")
    assert servers.basic == ["Basic " + base64.b64encode(b"app:app-secret").decode()]


async def test_N2_a_refusal_names_the_step_on_the_driver(driver: str) -> None:
    """N2: the host sees which step failed, and no token."""
    servers = Servers()
    servers.idp_refuses = True
    asked: list[ProvideAssertion] = []
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        options = _enterprise(servers, driver, asked)
        async with open_client(driver, "ent", {"url": running.url}, auth=options) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
    assert not availability.ok
    reason = availability.reason or ""
    assert "token exchange at the identity provider" in reason and "invalid_grant" in reason
    assert "the-id-token" not in reason
    assert servers.token_forms == []


async def test_N3_an_assertion_hook_that_raises_fails_with_a_hook_error(driver: str) -> None:
    """D2, N3: the ``assertion`` hook's failure is a ``HookError`` naming it."""
    from mcpcore import HookError

    def blocking(request: ProvideAssertion) -> str:
        raise OSError("no token file yet")

    async def waiting(request: ProvideAssertion) -> str:
        return blocking(request)

    servers = Servers()
    options = AuthOptions(
        client=PreRegisteredClient(client_id="workload"),
        grant="jwt_bearer",
        assertion=blocking if driver == "threaded" else waiting,
    )
    async with DemoServer(fault=servers).serve() as running:
        servers.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(driver, "wl", {"url": running.url}, auth=options) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
    assert not availability.ok
    assert isinstance(availability.error, HookError)
    assert availability.error.hook == "assertion" and availability.error.outcome == "raised"
    assert servers.token_forms == []


@pytest.mark.parametrize("module", ["mcpcore_threaded", "mcpcore_anyio"])
def test_N2_N3_option_mistakes_raise_when_the_client_is_made(module: str) -> None:
    """The grants' mistakes raise ``InvalidValue`` at construction, like the others."""
    import importlib

    from mcpcore import InvalidValue

    client_class = importlib.import_module(module).McpClient
    server = {"url": "https://mcp.example.com/mcp"}
    app = PreRegisteredClient(client_id="app")
    for auth in (
        AuthOptions(grant="jwt_bearer", client=app),  # no assertion
        AuthOptions(grant="jwt_bearer", assertion="/run/token"),  # no client
        AuthOptions(grant="enterprise", client=app, assertion="/run/token"),  # no IdP
        AuthOptions(dpop="always", client=app),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidValue):
            client_class("p", server, auth=auth)
