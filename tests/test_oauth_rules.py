"""OAuth rules the other OAuth tests relied on without naming (O34, O35, O36, O43, O68, O69).

The flow is driven as ``tests/test_oauth.py`` drives it: a ``World`` of canned
authorization-server answers, a fake clock, and the actions the flow asks for.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from mcpcore import MemoryTokenStore, SessionReady
from mcpcore.auth._oauth import ClientRecord, OpenAuthorizationUrl, Purpose, RequestTicket, TokenKey
from test_auth_layer import URL, _bearer, make
from test_oauth import (
    AS,
    NOW,
    PRM_PATH,
    REDIRECT,
    S,
    World,
    _state,
    authorized,
    authz_params,
    challenge,
    failed,
    form,
    hdr,
    held,
    js,
    make_flow,
    run_401,
)


def _everything_sent(world: World) -> list[tuple[str, bytes]]:
    """Each request's URL with its headers and body, as bytes (to look for a secret)."""
    sent = []
    for request in world.requests:
        blob = b"\n".join([*(k + b": " + v for k, v in request.headers), request.body or b""])
        sent.append((request.url, request.url.encode() + b"\n" + blob))
    return sent


def test_O35_O43_one_redirect_uri_and_the_code_goes_only_to_the_issuers_token_endpoint() -> None:
    """O35: the registration, the authorization request and the token request carry the
    same redirect URI string. O43: the code and the PKCE verifier go to the token
    endpoint of the issuer recorded for the attempt, and nowhere else."""
    world = World().standard()
    flow = make_flow()
    run_401(flow, world, challenge(resource_metadata=PRM_PATH))
    (registration,) = world.of(Purpose.REGISTER)
    (token,) = world.of(Purpose.TOKEN_CODE)
    assert json.loads(registration.body or b"")["redirect_uris"] == [REDIRECT]
    assert authz_params(world)["redirect_uri"] == REDIRECT
    assert form(token)["redirect_uri"] == REDIRECT
    verifier = form(token)["code_verifier"].encode()
    assert token.url == AS + "/token"
    for url, sent in _everything_sent(world):
        if url != AS + "/token":
            assert b"test-auth-code" not in sent and verifier not in sent, url


def test_O36_the_redirect_query_is_decoded_once_and_a_fragment_ignored() -> None:
    """O36: the host gives back the whole redirect URL; its query is decoded once (a
    code with '+', '/' and '%' in it arrives as sent) and a fragment never counts."""
    world = World().standard()

    def back(action: OpenAuthorizationUrl) -> str:
        query = urlencode({"code": "a+b/c%20", "state": _state(action)})
        return f"{action.redirect_uri}?{query}#code=from-the-fragment&state=x"

    world.callback = back
    flow = make_flow()
    _, events = run_401(flow, world)
    authorized(events)
    (token,) = world.of(Purpose.TOKEN_CODE)
    assert form(token)["code"] == "a+b/c%20"


def test_O34_an_authorization_endpoint_that_is_not_https_is_never_handed_to_the_host() -> None:
    """O34: only an authorization endpoint the destination rules allow reaches the host
    (which opens it with a URL API): a script or file URL is refused before anyone is
    sent to sign in."""
    for endpoint in ("javascript:alert(1)", "file:///etc/passwd", "http://auth.example.com/a"):
        world = World().standard(authorization_endpoint=endpoint)
        flow = make_flow()
        _, events = run_401(flow, world)
        failed(events)
        assert world.opened == [], endpoint


def test_O69_the_mcp_token_never_goes_to_the_authorization_server() -> None:
    """O69: a refresh (a flow request) carries no MCP access token; an MCP request
    carries the access token and never the client's secret."""
    world = World().standard()
    world.route(
        "POST",
        AS + "/token",
        js(200, {"access_token": "at-2", "token_type": "Bearer", "expires_in": 600}),
    )
    client = ClientRecord(
        client_id="dyn-client",
        client_secret="client-secret-1",
        redirect_uris=(REDIRECT,),
        issuer=AS,
        auth_method="client_secret_post",
    )
    flow = make_flow(tokens=held(expires_at=NOW + 30), clients=[client])
    ticket = RequestTicket()
    header = flow.prepare(ticket, NOW)
    assert header == (b"authorization", b"Bearer at-0")
    world.pump(flow)
    authorized(flow.take_events())
    (refresh,) = world.of(Purpose.TOKEN_REFRESH)
    assert hdr(refresh, b"authorization") is None
    assert b"at-0" not in (refresh.body or b"")
    header = flow.prepare(ticket, NOW)
    assert header == (b"authorization", b"Bearer at-2")
    assert b"client-secret-1" not in header[1]


def test_O68_stored_tokens_are_sent_only_to_the_server_they_were_obtained_for() -> None:
    """O68: the token store is keyed by the server's URL, and a client starts with the
    tokens kept for its own URL only: tokens for another server are not sent."""
    store = MemoryTokenStore()
    elsewhere = "https://other.example.test/mcp"
    store.set_tokens(TokenKey(server_url=elsewhere, issuer=AS), held())
    assert store.get_tokens(URL) is None and store.get_tokens(elsewhere) is not None
    link = make(store=store)
    assert link.of_type(SessionReady)
    first = next(r for r in link.requests if r.url == URL)
    assert _bearer(first) is None  # the other server's token is not offered here
    assert store.get_tokens(elsewhere) == held()  # and it is left alone
    assert S != URL  # (the flow tests' server is yet another one)


def test_O58_a_refresh_refused_over_its_resource_is_not_tried_again_without_it() -> None:
    """O58 (not done, on purpose): a refresh refused with ``invalid_target`` is not sent
    again without ``resource``; the tokens are dropped and the person signs in anew."""
    answers = iter(
        [
            js(400, {"error": "invalid_target"}),
            js(200, {"access_token": "at-new", "token_type": "Bearer"}),
        ]
    )
    world = World().standard()
    world.route("POST", AS + "/token", lambda _r: next(answers))
    client = ClientRecord(client_id="dyn-client", redirect_uris=(REDIRECT,), issuer=AS)
    flow = make_flow(tokens=held(expires_at=NOW), clients=[client])
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    authorized(flow.take_events())
    (refresh,) = world.of(Purpose.TOKEN_REFRESH)
    assert form(refresh)["resource"] == S
    assert len(world.opened) == 1  # a new sign-in, not a second refresh
