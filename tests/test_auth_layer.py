"""OAuth inside the HTTP engine (A1, A3): the AuthLayer between the mapping and the driver.

Sans-IO, with a fake clock: ``FakeServer`` plays the MCP endpoint (401 without a
valid bearer token), a small in-test authorization server answers discovery,
registration and the token endpoint, and ``AuthLink`` performs the host hooks
the way a driver would (the person at the browser is simulated, at once or
later). Each test checks what a user of the client would see: ready or not and
why, the call's result or error, what went over the wire.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from fake_peer import URL, FakeServer, Link, Reply, Seen
from mcpcore import (
    AuthOptions,
    AuthorizationCancelled,
    AuthorizationRequired,
    AuthorizationTimeout,
    CallFailed,
    CallSucceeded,
    HookError,
    HookFailure,
    MemoryTokenStore,
    OpenAuthorizationUrl,
    PreRegisteredClient,
    SaveTokens,
    SessionReady,
    SignAssertion,
    StartFailed,
    TokenKey,
    TokenSet,
    TransportError,
    compact_jws,
)
from mcpcore.base._events import AbortExchange, HttpRequest
from mcpcore.config._config import RemoteServer
from mcpcore.engine._engine import HttpClientEngine
from mcpcore.session._session import SessionOptions

AS = "https://as.example.test"
PRM_URL = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
WALL = 1_700_000_000.0  # the wall clock at the Link's now=1000


def _json(status: int, doc: Any, headers: list[tuple[bytes, bytes]] | None = None) -> Reply:
    return Reply(
        status,
        [(b"content-type", b"application/json"), *(headers or [])],
        [json.dumps(doc).encode()],
    )


class AuthServer:
    """The protected resource's metadata, the authorization server and its token endpoint."""

    def __init__(
        self, *, expires_in: int = 3600, refresh: bool = True, token_status: int = 200
    ) -> None:
        self.expires_in = expires_in
        self.refresh = refresh
        self.token_status = token_status  # set to 503 and the token endpoint fails
        self.issued: list[str] = []
        self.grants: list[str] = []
        self.registrations = 0
        self.counter = 0

    def handle(self, req: HttpRequest) -> Reply | None:
        url = req.url.split("?", 1)[0]
        if url == PRM_URL:
            return _json(200, {"resource": URL, "authorization_servers": [AS]})
        if url == f"{AS}/.well-known/oauth-authorization-server":
            return _json(
                200,
                {
                    "issuer": AS,
                    "authorization_endpoint": f"{AS}/authorize",
                    "token_endpoint": f"{AS}/token",
                    "registration_endpoint": f"{AS}/register",
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
                },
            )
        if url == f"{AS}/register":
            self.registrations += 1
            return _json(201, {"client_id": "client-1", "redirect_uris": ["http://127.0.0.1:9/cb"]})
        if url == f"{AS}/token":
            form = parse_qs((req.body or b"").decode())
            self.grants.append(form["grant_type"][0])
            if self.token_status != 200:
                return Reply(self.token_status)
            self.counter += 1
            token = f"access-{self.counter}"
            self.issued.append(token)
            doc: dict[str, Any] = {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.expires_in,
            }
            if self.refresh:
                doc["refresh_token"] = f"refresh-{self.counter}"
            return _json(200, doc)
        if url.startswith(AS) or url.startswith("https://mcp.example.test/.well-known"):
            return Reply(404)
        return None


class AuthLink(Link):
    """A driver with the host hooks: the store, and a person who approves at once
    (``approve_at_once``) or when the test says so (``approve``)."""

    def __init__(
        self,
        engine: HttpClientEngine,
        server: FakeServer,
        auth: AuthServer,
        store: MemoryTokenStore,
    ) -> None:
        super().__init__(engine, server)
        self.auth = auth
        self.store = store
        self.approve_at_once = True
        self.pending: list[OpenAuthorizationUrl] = []
        self.opened: list[str] = []
        self.order: list[str] = []  # "save" / "mcp" in the order the driver performed them
        self.signs: list[SignAssertion] = []  # the signer answers when the test says
        self.hold_store = False  # the store's writes wait until finish_store()
        self.store_pending: list[Any] = []

    def pump(self) -> None:
        for _ in range(10_000):
            actions = self.engine.take_actions()
            self.events.extend(self.engine.take_events())
            if not actions:
                return
            for action in actions:
                if isinstance(action, AbortExchange):
                    self.aborted.append(action.exchange_id)
                    self.stalled.discard(action.exchange_id)
                elif isinstance(action, HttpRequest):
                    self.requests.append(action)
                    if action.url == URL:
                        self.order.append("mcp")
                    self._perform(action)
                elif isinstance(action, OpenAuthorizationUrl):
                    self.opened.append(action.url)
                    self.pending.append(action)
                    if self.approve_at_once:
                        self.approve()
                elif isinstance(action, SignAssertion):
                    self.signs.append(action)
                elif self.hold_store:
                    self.store_pending.append(action)
                else:
                    self._store(action)
        raise AssertionError("the engine never settled")

    def _store(self, action: Any) -> None:
        from mcpcore import apply_to_store

        if isinstance(action, SaveTokens):
            self.order.append("save")
        try:
            outcome = apply_to_store(self.store, action)
        except Exception:  # as a driver does: the engine decides what it means
            self.engine.hook_failed(action.attempt, HookFailure.RAISED, self.now)
        else:
            self.engine.hook_answered(action.attempt, outcome, self.now)

    def finish_store(self) -> None:
        """The store's held writes return now, and later ones at once."""
        self.hold_store = False
        while self.store_pending:
            self._store(self.store_pending.pop(0))
        self.pump()

    def approve(self, action: OpenAuthorizationUrl | None = None) -> None:
        """The person signs in: the authorization server redirects back with a code."""
        action = action or self.pending.pop(0)
        query = parse_qs(urlsplit(action.url).query)
        back = {"code": "the-code", "state": query["state"][0]}
        self.engine.hook_answered(
            action.attempt, f"{action.redirect_uri}?{urlencode(back)}", self.now
        )

    def _perform(self, req: HttpRequest) -> None:
        reply = self.auth.handle(req)
        if reply is None:
            return super()._perform(req)
        e = self.engine
        e.response_started(req.exchange_id, reply.status, reply.headers, self.now)
        for chunk in reply.chunks:
            e.response_data(req.exchange_id, chunk, self.now)
        e.response_ended(req.exchange_id, self.now)


def protected(
    server: FakeServer, auth: AuthServer, *, status_for: dict[str, int] | None = None
) -> None:
    """Make ``server`` answer 401 unless the request carries a token ``auth`` issued
    and is still valid; ``status_for`` forces a status per JSON-RPC method."""

    def hook(seen: Seen) -> Reply | None:
        method = (seen.message or {}).get("method", "")
        if status_for and method in status_for:
            return Reply(
                status_for[method], [(b"www-authenticate", b'Bearer error="insufficient_scope"')]
            )
        header = seen.headers.get("authorization", "")
        token = header.removeprefix("Bearer ")
        if token in auth.issued[-1:]:
            return None
        challenge = f'Bearer resource_metadata="{PRM_URL}"'.encode()
        return Reply(401, [(b"www-authenticate", challenge)])

    server.hook = hook


def make(
    *,
    interactive: bool = True,
    store: MemoryTokenStore | None = None,
    auth: AuthServer | None = None,
    start: bool = True,
    protocol: str = "legacy",
    auth_options: AuthOptions | None = None,
    **server_options: Any,
) -> AuthLink:
    store = store if store is not None else MemoryTokenStore()
    auth = auth or AuthServer()
    server = FakeServer(**server_options)
    protected(server, auth)
    options = dataclasses.replace(SessionOptions(server_name="srv"), protocol=protocol)
    engine = HttpClientEngine(
        RemoteServer(name="srv", url=URL),
        options=options,
        listen=False,
        auth=dataclasses.replace(
            auth_options or AuthOptions(), store=store, redirect_uri="http://127.0.0.1:9/cb"
        ),
        token_bytes=lambda n: b"\x01" * n,
        wall_offset=WALL - 1000.0,
        interactive=interactive,
        tokens=store.get_tokens(URL),
        clients=store.get_clients(),
    )
    link = AuthLink(engine, server, auth, store)
    if start:
        link.start()
    return link


def _bearer(req: HttpRequest) -> str | None:
    for name, value in req.headers:
        if name == b"authorization":
            return value.decode()
    return None


def test_A1_a_401_at_start_runs_the_flow_and_the_session_comes_up_with_the_token() -> None:
    link = make()
    assert link.of_type(SessionReady), link.events
    assert not link.of_type(StartFailed)
    assert len(link.opened) == 1
    mcp = [r for r in link.requests if r.url == URL]
    # the first initialize went bare and got a 401; it went again with the token
    assert _bearer(mcp[0]) is None
    assert all(_bearer(r) == "Bearer access-1" for r in mcp[1:]), [_bearer(r) for r in mcp]
    assert mcp[0].exchange_id in link.aborted  # the 401 is not read further
    assert link.auth.grants == ["authorization_code"]
    call_id = link.engine.call("srv/echo", {"x": 1}, link.now)
    link.pump()
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]


def test_A3_O48_tokens_are_stored_before_the_request_goes_again() -> None:
    link = make()
    assert link.order.index("save") < link.order.index("mcp", 1)
    stored = link.store.get_tokens(URL)
    assert stored is not None and stored.access_token == "access-1"


def test_A3_stored_tokens_are_used_from_the_first_request() -> None:
    store = MemoryTokenStore()
    first = make(store=store)
    assert first.of_type(SessionReady)
    second = make(store=store, auth=first.auth)
    assert second.of_type(SessionReady)
    assert second.opened == []  # no person asked
    mcp = [r for r in second.requests if r.url == URL]
    assert _bearer(mcp[0]) == "Bearer access-1"
    assert not any(r.url.startswith(AS) for r in second.requests)


def test_A3_without_an_authorize_hook_the_client_is_unavailable_saying_sign_in_first() -> None:
    link = make(interactive=False)
    failed = link.of_type(StartFailed)
    assert failed and isinstance(failed[0].error, AuthorizationRequired)
    assert "sign in first" in str(failed[0].error)
    assert link.opened == []
    assert link.auth.registrations == 0  # no client left behind at the authorization server
    assert isinstance(link.engine.availability.error, AuthorizationRequired)  # type: ignore[union-attr]
    assert link.engine.availability is not None and not link.engine.availability.ok


def test_O51_O56_an_expired_token_is_refreshed_once_for_concurrent_calls() -> None:
    link = make(auth=AuthServer(expires_in=120))
    assert link.of_type(SessionReady)
    link.advance(125)  # expired now: nothing can go before the refresh
    first = link.engine.call("srv/echo", {"n": 1}, link.now)
    second = link.engine.call("srv/echo", {"n": 2}, link.now)
    link.pump()
    assert link.auth.grants == ["authorization_code", "refresh_token"]
    assert sorted(e.call_id for e in link.of_type(CallSucceeded)) == sorted([first, second])
    calls = [r for r in link.requests if r.url == URL and b"tools/call" in (r.body or b"")]
    assert {_bearer(r) for r in calls} == {"Bearer access-2"}
    assert len(link.opened) == 1  # no person asked again


def test_A1_a_401_mid_session_with_a_refresh_token_refreshes_and_resends() -> None:
    link = make()
    assert link.of_type(SessionReady)
    link.auth.issued.append("revoked-by-server")  # the server no longer takes access-1
    call_id = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    assert link.auth.grants == ["authorization_code", "refresh_token"]
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]
    assert not link.of_type(CallFailed)


def test_A3_a_call_waiting_for_a_person_fails_at_its_own_deadline() -> None:
    link = make()
    assert link.of_type(SessionReady)
    link.approve_at_once = False
    link.auth.issued.append("revoked-by-server")  # access-1 is refused from now on ...
    link.auth.handle = _refuse_refresh(link.auth.handle)  # type: ignore[method-assign]
    # ... and so is refresh-1: a person must sign in again, and does not
    call_id = link.engine.call("srv/echo", {}, link.now, timeout=5.0)
    link.pump()
    assert len(link.opened) == 2  # a person is asked again
    link.advance(6.0)
    failed = link.of_type(CallFailed)
    assert [e.call_id for e in failed] == [call_id]
    assert "5" in str(failed[0].error) or "time" in str(failed[0].error).lower()
    sent_after = [r for r in link.requests if r.url == URL and b'"tools/call"' in (r.body or b"")]
    assert len(sent_after) == 1  # the 401'd attempt only: never sent again


def _refuse_refresh(handle: Any) -> Any:
    def wrapped(req: HttpRequest) -> Reply | None:
        if req.url == f"{AS}/token" and b"grant_type=refresh_token" in (req.body or b""):
            return _json(400, {"error": "invalid_grant"})
        return handle(req)

    return wrapped


def test_A3_a_hook_that_gives_up_fails_the_waiting_requests_with_its_reason() -> None:
    link = make(start=False)
    link.approve_at_once = False
    link.start()
    assert len(link.pending) == 1
    link.engine.hook_failed(link.pending.pop(0).attempt, HookFailure.RAISED, link.now)
    link.pump()
    failed = link.of_type(StartFailed)
    assert failed and isinstance(failed[0].error, AuthorizationCancelled)
    assert "the authorize hook failed" in str(failed[0].error)


def test_M11_A1_a_failed_flow_on_the_probe_is_no_evidence_of_the_handshake_era() -> None:
    """The first 401 may answer server/discover (2026-07-28): when the person then
    declines, the attempt fails with that; it does not fall back to initialize."""
    link = make(start=False, protocol="auto")
    link.approve_at_once = False
    link.start()
    first = next(r for r in link.requests if r.url == URL)
    assert b"server/discover" in (first.body or b"")
    link.engine.hook_failed(link.pending.pop(0).attempt, HookFailure.RAISED, link.now)
    link.pump()
    failed = link.of_type(StartFailed)
    assert failed and isinstance(failed[0].error, AuthorizationCancelled)
    assert not any(b'"initialize"' in (r.body or b"") for r in link.requests)
    assert link.engine.session.era != "legacy"


@pytest.mark.parametrize(("protocol", "sent"), [("auto", b"2026-07-28"), ("legacy", b"2025-11-25")])
def test_O18_discovery_names_the_revision_the_refused_request_spoke(
    protocol: str, sent: bytes
) -> None:
    """O18: the protected-resource metadata request carries MCP-Protocol-Version of the
    revision in use: on the 2026-07-28 path, the one the refused server/discover spoke."""
    link = make(start=False, protocol=protocol)
    link.approve_at_once = False
    link.start()
    prm = next(r for r in link.requests if "/.well-known/oauth-protected-resource" in r.url)
    assert (b"mcp-protocol-version", sent) in prm.headers


def test_A3_a_person_who_declined_is_not_asked_again_until_login() -> None:
    link = make(start=False)
    link.approve_at_once = False
    link.start()
    link.engine.hook_failed(link.pending.pop(0).attempt, HookFailure.RAISED, link.now)
    link.pump()
    link.advance(1.5)  # the start-up retry: a new 401, but no person asked
    assert len(link.opened) == 1
    reasons = [str(e.error) for e in link.of_type(StartFailed)]
    assert len(reasons) == 2 and "call login()" in reasons[1], reasons
    link.approve_at_once = True
    link.engine.login(link.now)
    link.pump()
    assert len(link.opened) == 2
    assert link.of_type(SessionReady)  # at once: the backoff is not sat out
    assert link.now < 1000.0 + 1.5 + 2.0


def test_L6_closing_while_a_person_is_signing_in_finishes() -> None:
    link = make(start=False)
    link.approve_at_once = False
    link.start()
    assert link.pending
    link.engine.close(link.now)
    link.advance(10)
    assert link.engine.finished


def test_A1_late_pieces_of_an_aborted_401_are_ignored() -> None:
    link = make(start=False)
    link.approve_at_once = False
    link.start()
    first = next(r for r in link.requests if r.url == URL)
    assert first.exchange_id in link.aborted
    # a driver that had already read more of it reports it anyway
    link.engine.response_data(first.exchange_id, b"garbage", link.now)
    link.engine.response_ended(first.exchange_id, link.now)
    link.pump()
    link.approve()
    link.pump()
    assert link.of_type(SessionReady)


def test_O3_a_403_that_is_not_about_scope_is_an_ordinary_http_error() -> None:
    link = make()
    assert link.of_type(SessionReady)
    server = link.server
    base = server.hook
    assert base is not None

    def hook(seen: Seen) -> Reply | None:
        if (seen.message or {}).get("method") == "tools/call":
            return Reply(403, [(b"content-type", b"text/plain")], [b"forbidden"])
        return base(seen)

    server.hook = hook
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    failed = link.of_type(CallFailed)
    assert [e.call_id for e in failed] == [call_id]
    assert isinstance(failed[0].error, TransportError) and failed[0].error.status == 403
    assert len(link.opened) == 1


@pytest.mark.parametrize("token", ["access-1"])
def test_A4_no_token_in_the_reprs_of_what_the_driver_performs(token: str) -> None:
    link = make()
    shown = " ".join(repr(r) for r in link.requests) + repr(link.engine) + repr(link.store)
    shown += " ".join(repr(e) for e in link.events)
    assert token not in shown
    tokens = link.store.get_tokens(URL)
    assert isinstance(tokens, TokenSet) and token not in repr(tokens)


def test_A3_unusable_auth_options_fail_when_the_client_is_made() -> None:
    """A client-credentials grant without a client, or an http metadata-document URL,
    is the caller's mistake: ``InvalidValue`` at construction, not at start."""
    from mcpcore import InvalidValue, prepare_client

    for bad in (
        AuthOptions(grant="client_credentials"),
        AuthOptions(client_metadata_url="http://example.com/client.json"),
    ):
        with pytest.raises(InvalidValue):
            prepare_client("srv", {"url": URL}, {"auth": bad}, env={}, home="/home/x")
    with pytest.raises(TypeError, match="AuthOptions"):
        prepare_client("srv", {"url": URL}, {"auth": "token"}, env={}, home="/home/x")  # type: ignore[typeddict-item]
    # a local server has nothing to authorize: auth= is ignored for it
    local = prepare_client(
        "srv",
        {"command": "true"},
        {"auth": AuthOptions(), "allow_local": True},
        env={},
        home="/home/x",
    )
    assert local.auth is None


def test_A1_the_token_replaces_a_configured_authorization_header() -> None:
    store = MemoryTokenStore()
    first = make(store=store)
    assert first.of_type(SessionReady)
    server = FakeServer()
    protected(server, first.auth)
    engine = HttpClientEngine(
        RemoteServer(name="srv", url=URL, headers={"Authorization": "Bearer static"}),
        options=dataclasses.replace(SessionOptions(server_name="srv"), protocol="legacy"),
        listen=False,
        auth=AuthOptions(store=store, redirect_uri="http://127.0.0.1:9/cb"),
        token_bytes=lambda n: b"\x01" * n,
        wall_offset=WALL - 1000.0,
        interactive=True,
        tokens=store.get_tokens(URL),
    )
    link = AuthLink(engine, server, first.auth, store)
    link.start()
    assert link.of_type(SessionReady)
    for request in link.requests:
        values = [v for k, v in request.headers if k.lower() == b"authorization"]
        assert values == [b"Bearer access-1"], values


def test_O51_a_short_lived_token_is_refreshed_halfway_not_on_every_request() -> None:
    """A token given for 30 s (less than the 60 s refresh skew) is used for 15 s; the
    requests before that carry it, none of them starts a refresh."""
    link = make(auth=AuthServer(expires_in=30))
    assert link.of_type(SessionReady)
    for _ in range(5):
        link.engine.call("srv/echo", {}, link.now)
        link.pump()
        link.advance(2)
    assert link.auth.grants == ["authorization_code"]
    link.advance(6)  # now 16 s into its life: past half of it
    link.engine.call("srv/echo", {}, link.now)
    link.pump()
    assert link.auth.grants == ["authorization_code", "refresh_token"]
    assert len(link.of_type(CallSucceeded)) == 6


# --- D2: host hooks are actions with attempt ids, bounded by the core -------------------------


def _jws(action: SignAssertion) -> str:
    return compact_jws(action.signing_input, b"signature")


def _machine(**options: Any) -> AuthLink:
    """A client-credentials client whose pre-registered key signs through the host."""
    return make(
        interactive=False,
        start=False,
        auth_options=AuthOptions(
            grant="client_credentials",
            client=PreRegisteredClient(client_id="m2m", auth_method="private_key_jwt"),
            **options,
        ),
    )


def test_D2_R7_a_stale_authorize_hooks_late_failure_leaves_a_newer_sign_in_alone() -> None:
    """The person never came back to the first page (its wait ran out); after
    ``login()`` they sign in on a second one. The first hook's failure, reported
    late, changes nothing: the second sign-in completes."""
    link = make(start=False, auth_options=AuthOptions(user_wait=5.0))
    link.approve_at_once = False
    link.start()
    (first,) = link.pending
    link.advance(6.0)  # the person's wait runs out
    assert isinstance(link.of_type(StartFailed)[0].error, AuthorizationTimeout)
    link.pending.clear()
    link.engine.login(link.now)
    link.pump()
    (second,) = link.pending
    assert second.attempt != first.attempt
    link.engine.hook_failed(first.attempt, HookFailure.RAISED, link.now)  # late
    link.engine.hook_answered(first.attempt, "http://127.0.0.1:9/cb?code=x", link.now)  # late
    link.pump()
    link.approve(second)
    link.pump()
    assert link.of_type(SessionReady)
    assert link.engine.login_settled


def test_D2_R8_a_signer_answering_bytes_fails_the_waiting_request_and_a_retry_works() -> None:
    link = _machine()
    link.start()
    (sign,) = link.signs
    link.engine.hook_answered(sign.attempt, _jws(sign).encode(), link.now)  # bytes, not str
    link.pump()
    (failed,) = link.of_type(StartFailed)
    assert isinstance(failed.error, HookError) and failed.error.outcome == "unusable"
    assert "sign_assertion hook answered a bytes" in str(failed.error)
    link.advance(failed.retry_at - link.now)  # the start-up retry asks the signer again
    again = link.signs[-1]
    assert again.attempt != sign.attempt
    link.engine.hook_answered(again.attempt, _jws(again), link.now)
    link.pump()
    assert link.of_type(SessionReady)


def test_D2_R9_a_signer_that_never_answers_fails_the_request_at_the_cores_deadline() -> None:
    link = _machine(hook_timeout=5.0)
    link.start()
    (sign,) = link.signs
    link.advance(4.9)
    assert not link.of_type(StartFailed)
    link.advance(0.2)  # the signer's bound: the waiting request fails, clearly
    (failed,) = link.of_type(StartFailed)
    assert isinstance(failed.error, HookError) and failed.error.outcome == "late"
    assert "did not answer within 5 s" in str(failed.error)
    link.engine.hook_answered(sign.attempt, _jws(sign), link.now)  # too late: ignored
    link.pump()
    assert not link.of_type(SessionReady)
    link.advance(failed.retry_at - link.now)
    again = link.signs[-1]
    link.engine.hook_answered(again.attempt, _jws(again), link.now)
    link.pump()
    assert link.of_type(SessionReady)


def test_D2_R8_a_signer_that_raises_or_is_missing_fails_with_hook_error() -> None:
    for failure, outcome in ((HookFailure.RAISED, "raised"), (HookFailure.MISSING, "missing")):
        link = _machine()
        link.start()
        link.engine.hook_failed(link.signs[0].attempt, failure, link.now)
        link.pump()
        (failed,) = link.of_type(StartFailed)
        assert isinstance(failed.error, HookError) and failed.error.outcome == outcome


class _BrokenStore(MemoryTokenStore):
    def set_tokens(self, key: Any, tokens: Any) -> None:
        raise OSError("disk full")


def test_D2_R10_a_store_that_raises_costs_the_write_not_the_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    link = make(store=_BrokenStore())
    assert link.of_type(SessionReady)  # the tokens are used from memory
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]
    assert "set_tokens raised" in caplog.text and "disk full" not in caplog.text


def test_D2_O48_requests_wait_for_the_store_and_go_once_it_answers() -> None:
    link = make(start=False)
    link.hold_store = True
    link.start()
    assert link.store_pending and not link.of_type(SessionReady)
    with_token = [r for r in link.requests if r.url == URL and _bearer(r)]
    assert with_token == []  # nothing used the new token before it was stored
    link.finish_store()
    assert link.of_type(SessionReady)


def test_D2_a_store_that_never_answers_holds_requests_only_until_its_bound() -> None:
    link = make(start=False, auth_options=AuthOptions(hook_timeout=3.0))
    link.hold_store = True
    link.start()
    assert not link.of_type(SessionReady)
    link.advance(3.1)  # the client's registration: given up on
    assert not link.of_type(SessionReady)
    link.advance(3.1)  # the sign-in lock (R4): given up on, the sign-in goes on without it
    assert not link.of_type(SessionReady)
    link.advance(3.1)  # the tokens: given up on too
    assert link.of_type(SessionReady)  # the tokens are used from memory
    link.finish_store()  # the late answer changes nothing
    assert len(link.of_type(SessionReady)) == 1


def test_D2_hook_timeout_must_be_positive() -> None:
    from mcpcore import InvalidValue, prepare_client

    for bad in (0, -1.0, float("nan"), True, "5"):
        with pytest.raises(InvalidValue, match="hook_timeout"):
            prepare_client(
                "srv",
                {"url": URL},
                {"auth": AuthOptions(hook_timeout=bad)},
                env={},
                home="/h",  # type: ignore[arg-type]
            )


def test_R15_a_shared_memory_store_is_safe_across_threads() -> None:
    """Clients on several threads share one store: a reader never misses tokens a
    writer keeps replacing, and no reader trips over a write in progress."""
    import sys
    import threading

    store = MemoryTokenStore()
    first = TokenSet(
        access_token="a",
        expires_at=None,
        refresh_token=None,
        scope=None,
        issuer=AS,
        token_endpoint=f"{AS}/token",
        resource=URL,
        client_id="c",
    )
    key = TokenKey(server_url=URL, issuer=AS)
    store.set_tokens(key, first)
    problems: list[str] = []
    stop = threading.Event()

    def write(n: int) -> None:
        other = TokenKey(server_url=f"https://other{n}.example/mcp", issuer=AS)
        while not stop.is_set():
            store.set_tokens(key, first)
            store.set_tokens(other, first)
            store.delete_tokens(other)

    def read() -> None:
        try:
            for _ in range(20_000):
                if store.get_tokens(URL) is None:
                    problems.append("a reader found no tokens")
                    return
        except RuntimeError as exc:
            problems.append(f"a reader failed: {exc}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        writers = [threading.Thread(target=write, args=(n,)) for n in range(3)]
        readers = [threading.Thread(target=read) for _ in range(3)]
        for thread in writers + readers:
            thread.start()
        for thread in readers:
            thread.join(30)
        stop.set()
        for thread in writers:
            thread.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert problems == []


# --- R5, R6: a running flow holds back only the requests that need it ------------------------


def _step_up_for(link: AuthLink, tool_argument: str) -> None:
    """The server wants a wider scope for calls with ``tool_argument`` while the
    first token is held; every other request is fine with it."""
    base = link.server.hook
    assert base is not None

    def hook(seen: Seen) -> Reply | None:
        message = seen.message or {}
        arguments = (message.get("params") or {}).get("arguments") or {}
        token = seen.headers.get("authorization", "").removeprefix("Bearer ")
        if tool_argument in arguments and token == "access-1":
            return Reply(
                403, [(b"www-authenticate", b'Bearer error="insufficient_scope", scope="admin"')]
            )
        return base(seen)

    link.server.hook = hook


def test_R5_a_step_up_for_one_call_does_not_hold_back_the_others() -> None:
    link = make()
    assert link.of_type(SessionReady)
    _step_up_for(link, "admin")
    link.approve_at_once = False
    waiting = link.engine.call("srv/echo", {"admin": 1}, link.now)
    link.pump()
    assert len(link.pending) == 1  # the person is asked for the wider scope
    other = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [other]  # it did not wait
    link.approve()
    link.pump()
    assert sorted(e.call_id for e in link.of_type(CallSucceeded)) == sorted([waiting, other])


def test_R5_login_on_a_signed_in_client_freezes_nothing() -> None:
    link = make()
    assert link.of_type(SessionReady)
    link.approve_at_once = False
    link.engine.login(link.now)
    link.pump()
    assert len(link.pending) == 1 and not link.engine.login_settled
    call_id = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]
    link.approve()
    link.pump()
    assert link.engine.login_settled


def test_R6_a_failing_refresh_ahead_of_expiry_fails_no_request_while_the_token_is_valid() -> None:
    link = make(auth=AuthServer(expires_in=120))
    assert link.of_type(SessionReady)
    link.auth.token_status = 503  # the authorization server is down from now on
    link.advance(100)  # inside the last minute before expiry
    first = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    link.advance(1)
    second = link.engine.call("srv/echo", {"n": 2}, link.now)
    link.pump()
    assert sorted(e.call_id for e in link.of_type(CallSucceeded)) == sorted([first, second])
    assert not link.of_type(CallFailed)
    # one refresh tried, not one per request
    assert link.auth.grants == ["authorization_code", "refresh_token"]


def test_D2_A4_a_hook_call_shows_no_secret() -> None:
    """What a driver holds for a hook never shows the authorization URL's query
    (``state``, the PKCE challenge) or a token in its ``repr``."""
    from mcpcore import hook_call

    link = make(start=False)
    link.approve_at_once = False
    link.start()
    (action,) = link.pending
    call = hook_call(action, authorize=lambda url, redirect: url)
    assert "state=" not in repr(call) and "?" not in repr(call)
    assert call.attempt == action.attempt and "authorize" in repr(call)
    saved = hook_call(
        SaveTokens(key=TokenKey(server_url=URL, issuer=AS), tokens=_tokens("secret-token")),
        store=link.store,
    )
    assert "secret-token" not in repr(saved)


def _tokens(access: str) -> TokenSet:
    return TokenSet(
        access_token=access,
        expires_at=None,
        refresh_token=None,
        scope=None,
        issuer=AS,
        token_endpoint=f"{AS}/token",
        resource=URL,
        client_id="c",
    )


def test_R6_D2_a_refresh_waiting_for_the_stores_lock_holds_back_no_request() -> None:
    """A refresh ahead of expiry first takes the shared store's refresh lock (R4),
    which may take a while when another run holds it; requests with the still
    valid token go on meanwhile. Only a new token's save holds them (O48)."""
    link = make(auth=AuthServer(expires_in=120))
    assert link.of_type(SessionReady)
    link.hold_store = True
    link.advance(100)  # inside the last minute: the next request starts a refresh
    first = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    assert link.store_pending  # the store has not answered yet
    second = link.engine.call("srv/echo", {"n": 1}, link.now)
    link.pump()
    assert link.store_pending  # still not
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [first, second]
    link.finish_store()
    later = link.engine.call("srv/echo", {"n": 2}, link.now)
    link.pump()
    assert later in [e.call_id for e in link.of_type(CallSucceeded)]


def test_M11_A1_the_probe_check_names_the_module_oauth_errors_live_in() -> None:
    """M11, A1: the wire layer looks ``OAuthError`` up by module name (auth sits
    above it); that name is where the class lives, so a move of the module
    cannot quietly turn a failed sign-in into era evidence."""
    import importlib

    import mcpcore
    from mcpcore.wire import _modern

    module = importlib.import_module(_modern.OAUTH_ERRORS_MODULE)
    assert module.OAuthError is mcpcore.OAuthError
