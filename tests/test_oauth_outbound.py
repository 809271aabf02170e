"""Who the OAuth flow may send requests to (O5, O63; issue 26 R3, R14) and the
hardening around it: a remote server cannot steer the client to this machine or
network, a server URL's query never travels as ``resource``, each parked request
fails with an error of its own, and the layer's bookkeeping stays bounded.

Sans-IO: the flow and the engine are driven with scripted responses and a fake
clock (the World of ``test_oauth`` and the AuthLink of ``test_auth_layer``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore import CallFailed, HookFailure, SessionReady
from mcpcore.auth._oauth import (
    DestinationRefused,
    InvalidMetadata,
    Purpose,
    RequestTicket,
    TokenSet,
    fresh_copy,
)
from mcpcore.wire._outbound import OutboundPolicy, host_is_local
from test_auth_layer import AS as LAYER_AS
from test_auth_layer import _refuse_refresh, make
from test_oauth import (
    AS,
    NOW,
    PRM_PATH,
    PRM_ROOT,
    S,
    World,
    asm,
    authorized,
    challenge,
    failed,
    form,
    js,
    make_flow,
    prm,
    run_401,
)

LOOPBACK = "http://127.0.0.1:8765"
# Spellings of this machine and the local network a resolver takes.
LOCAL_HOSTS = [
    "127.0.0.1",
    "localhost",
    "sub.localhost",
    "[::1]",
    "127.1",
    "0x7f000001",
    "2130706433",
    "[::ffff:127.0.0.1]",
    "10.0.0.7",
    "192.168.1.1",
    "169.254.169.254",
    "0.0.0.0",
]


def _nothing_sent_to(world: World, origin: str) -> None:
    assert not [u for u in world.urls() if u.startswith(origin)], world.urls()


# --- R3: a remote server naming a loopback URL ----------------------------------------------


def test_O5_a_loopback_resource_metadata_url_is_never_fetched() -> None:
    world = World().standard()
    flow = make_flow()
    _, events = run_401(flow, world, challenge(resource_metadata=LOOPBACK + "/prm"))
    authorized(events)  # the well-known URL on the server's own origin answered
    _nothing_sent_to(world, LOOPBACK)
    assert world.urls()[0] == PRM_PATH


def test_O5_when_well_known_discovery_finds_nothing_the_refusal_is_the_error() -> None:
    world = World()
    flow = make_flow()
    _, events = run_401(flow, world, challenge(resource_metadata=LOOPBACK + "/prm"))
    error = failed(events)
    assert isinstance(error, DestinationRefused)
    assert "loopback or private" in str(error) and error.url == LOOPBACK + "/prm"
    _nothing_sent_to(world, LOOPBACK)
    assert world.urls() == [PRM_PATH, PRM_ROOT]  # not the 2025-03-26 path either


@pytest.mark.parametrize("host", LOCAL_HOSTS)
def test_O63_a_loopback_or_private_issuer_is_refused(host: str) -> None:
    issuer = f"https://{host}:8443"
    world = World()
    world.route("GET", PRM_PATH, js(200, prm(servers=[issuer])))
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, DestinationRefused) and isinstance(error, InvalidMetadata)
    assert "authorization server" in str(error)
    assert world.urls() == [PRM_PATH]  # nothing went to the issuer


@pytest.mark.parametrize("endpoint", ["token_endpoint", "registration_endpoint"])
@pytest.mark.parametrize("base", [LOOPBACK, "https://127.0.0.1:9443", "https://[::1]"])
def test_O63_a_loopback_token_or_registration_endpoint_is_refused(endpoint: str, base: str) -> None:
    world = World().standard(**{endpoint: base + "/steal"})
    flow = make_flow()
    _, events = run_401(flow, world)
    error = failed(events)
    assert isinstance(error, DestinationRefused)
    assert endpoint.split("_")[0] in str(error)
    _nothing_sent_to(world, base)
    assert world.opened == []  # no person sent to sign in either
    assert not world.of(Purpose.REGISTER) and not world.of(Purpose.TOKEN_CODE)


def test_O63_a_stored_token_endpoint_on_loopback_is_not_refreshed_against() -> None:
    tokens = TokenSet(
        access_token="at-0",
        expires_at=NOW + 10,
        refresh_token="rt-0",
        issuer=AS,
        token_endpoint=LOOPBACK + "/token",
        resource=S,
        client_id="c",
    )
    world = World()
    flow = make_flow(tokens=tokens)
    flow.prepare(RequestTicket(), NOW)  # due within the skew: a refresh would start
    world.pump(flow)
    error = failed(flow.take_events())
    assert isinstance(error, DestinationRefused)
    _nothing_sent_to(world, LOOPBACK)


def test_O63_a_loopback_server_may_still_use_a_loopback_authorization_server() -> None:
    server = "http://127.0.0.1:3000/mcp"
    issuer = "http://127.0.0.1:3001"
    world = World()
    world.route(
        "GET",
        "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp",
        js(200, prm(server, [issuer])),
    )
    world.route("GET", issuer + "/.well-known/oauth-authorization-server", js(200, asm(issuer)))
    world.route("POST", issuer + "/register", js(201, {"client_id": "c"}))
    world.route("POST", issuer + "/token", js(200, {"access_token": "t", "token_type": "Bearer"}))
    flow = make_flow(server_url=server)
    _, events = run_401(flow, world)
    assert authorized(events).token_endpoint == issuer + "/token"


def test_O63_a_private_server_may_use_a_private_https_authorization_server() -> None:
    server = "https://10.1.2.3/mcp"
    issuer = "https://10.1.2.4"
    world = World()
    world.route(
        "GET",
        "https://10.1.2.3/.well-known/oauth-protected-resource/mcp",
        js(200, prm(server, [issuer])),
    )
    world.route("GET", issuer + "/.well-known/oauth-authorization-server", js(200, asm(issuer)))
    world.route("POST", issuer + "/register", js(201, {"client_id": "c"}))
    world.route("POST", issuer + "/token", js(200, {"access_token": "t", "token_type": "Bearer"}))
    _, events = run_401(make_flow(server_url=server), world)
    authorized(events)


def test_O63_plain_http_to_a_public_host_stays_refused_for_a_loopback_server() -> None:
    policy = OutboundPolicy.for_server("http://127.0.0.1:3000/mcp")
    assert policy.refusal("http://auth.example.com/token") is not None
    assert policy.refusal("https://auth.example.com/token") is None
    allowed = OutboundPolicy.for_server("https://mcp.example", allow_insecure_http=True)
    assert allowed.refusal("http://auth.example.com/token") is None
    assert allowed.refusal("http://127.0.0.1/token") is not None  # insecure is not local


_remote_hosts = st.sampled_from(["mcp.example.com", "8.8.8.8", "[2001:4860:4860::8888]"])
_local_hosts = st.sampled_from(LOCAL_HOSTS)


@given(_remote_hosts, _local_hosts, st.sampled_from(["http", "https"]), st.booleans())
def test_O63_no_remote_server_reaches_a_local_host(
    server: str, target: str, scheme: str, insecure: bool
) -> None:
    policy = OutboundPolicy.for_server(f"https://{server}/mcp", allow_insecure_http=insecure)
    assert not policy.server_is_local
    assert host_is_local(urlsplit(f"{scheme}://{target}/").hostname)
    assert policy.refusal(f"{scheme}://{target}:1234/x?y#z") is not None


# --- R14: the server URL's query is not a resource ----------------------------------------


SECRET_URL = "https://mcp.example.com/mcp?api_key=sk-live-SECRET"


def _legacy_world() -> World:
    """A 2025-03-26 server: no protected-resource metadata, metadata on its origin."""
    origin = "https://mcp.example.com"
    world = World()
    world.route("GET", origin + "/.well-known/oauth-authorization-server", js(200, asm(origin)))
    world.route("POST", origin + "/register", js(201, {"client_id": "c"}))
    world.route(
        "POST",
        origin + "/token",
        js(
            200,
            {
                "access_token": "at",
                "token_type": "Bearer",
                "expires_in": 100,
                "refresh_token": "rt",
            },
        ),
    )
    return world


def test_O49_a_query_in_the_server_url_is_not_sent_as_resource() -> None:
    world = _legacy_world()
    flow = make_flow(server_url=SECRET_URL)
    _, events = run_401(flow, world)
    tokens = authorized(events)
    authz = dict(parse_qsl(urlsplit(world.opened[0].url).query))
    exchange = form(world.of(Purpose.TOKEN_CODE)[0])
    assert authz["resource"] == exchange["resource"] == "https://mcp.example.com/mcp"
    assert tokens.resource == "https://mcp.example.com/mcp"
    flow.prepare(RequestTicket(), NOW + 90)  # inside the skew: refresh
    world.pump(flow)
    authorized(flow.take_events())
    refresh = form(world.of(Purpose.TOKEN_REFRESH)[0])
    assert refresh["resource"] == "https://mcp.example.com/mcp"
    to_as = [r for r in world.requests if "/.well-known/oauth-protected" not in r.url]
    for request in to_as:  # the key goes to the server's own discovery URLs only
        assert "SECRET" not in request.url and b"SECRET" not in (request.body or b"")
    assert "SECRET" not in world.opened[0].url


# --- each parked request fails with its own error -------------------------------------------


def test_parked_requests_each_get_their_own_copy_of_the_flow_error() -> None:
    link = make()
    assert link.of_type(SessionReady)
    link.approve_at_once = False
    link.auth.issued.append("revoked-by-server")
    link.auth.handle = _refuse_refresh(link.auth.handle)  # type: ignore[method-assign]
    first = link.engine.call("srv/echo", {"n": 1}, link.now)
    second = link.engine.call("srv/echo", {"n": 2}, link.now)
    link.pump()
    assert link.pending  # a person is asked; both calls wait
    link.engine.hook_failed(link.pending.pop(0).attempt, HookFailure.RAISED, link.now)
    link.pump()
    errors = {e.call_id: e.error for e in link.of_type(CallFailed)}
    assert set(errors) == {first, second}
    a, b = errors[first], errors[second]
    assert a is not b
    assert type(a) is type(b) and str(a) == str(b) and "authorize hook failed" in str(a)


def test_fresh_copy_keeps_type_message_and_attributes() -> None:
    from mcpcore.auth._oauth import IssuerMismatch

    error = IssuerMismatch("wrong issuer", expected="a", got="b")
    try:
        raise error
    except IssuerMismatch:
        pass
    copy = fresh_copy(error)
    assert copy is not error and copy.__traceback__ is None
    assert (type(copy), str(copy), copy.expected, copy.got) == (
        IssuerMismatch,
        "wrong issuer",
        "a",
        "b",
    )


# --- the layer's record of aborted exchanges stays bounded ---------------------------------


def test_aborted_flow_requests_leave_nothing_behind_in_the_layer() -> None:
    link = make()
    assert link.of_type(SessionReady)
    layer = link.engine.auth
    assert layer is not None

    perform = link._perform

    def never_answer_the_token_endpoint(req: Any) -> None:
        if req.url != f"{LAYER_AS}/token":
            perform(req)  # the token request is left unanswered: it times out

    link._perform = never_answer_the_token_endpoint  # type: ignore[method-assign]
    for n in range(200):
        link.auth.issued.append(f"revoked-{n}")
        link.engine.call("srv/echo", {}, link.now, timeout=1000.0)
        link.pump()
        link.advance(31.0)  # the flow's own request bound (30 s) runs out: aborted
    assert len(layer._dropped) <= 2, len(layer._dropped)


@pytest.mark.parametrize("bad", ["https://mcp.example.com/p\x00rm", "https://mcp.example.com/a b"])
def test_O5_a_resource_metadata_url_with_a_control_character_is_not_followed(bad: str) -> None:
    world = World().standard()
    flow = make_flow()
    _, events = run_401(flow, world, challenge(resource_metadata=bad))
    authorized(events)
    assert bad not in world.urls() and world.urls()[0] == PRM_PATH


@given(st.text(alphabet="0123456789xXabcdefABCDEF._", min_size=1, max_size=20))
def test_O63_an_ip_literal_is_read_as_the_resolver_reads_it(host: str) -> None:
    """Every spelling of an IPv4 address the C resolver takes (``127.1``, ``0x7f.1``,
    ``017700000001``) is read as that address, and nothing else is taken for one."""
    import ipaddress
    import socket

    from mcpcore.wire._outbound import _loose_ipv4

    try:
        expected: ipaddress.IPv4Address | None = ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        expected = None
    assert _loose_ipv4(host) == expected
