"""OAuth through the engine: ``AuthLayer`` inside ``HttpClientEngine`` against a fake world.

``OAuthWorld`` is an MCP server (``fake_peer.FakeServer``) that answers 401
unless a request carries a token its authorization server issued, and that
authorization server (metadata, dynamic registration, a token endpoint for
codes and refresh tokens), all in memory with a fake clock. It performs every
``HttpRequest`` the engine emits by URL and method (the layer's own exchange
ids, >= 2**40, and the mapping's alike), plays the ``authorize`` hook (the
redirect with the code) and keeps a ``MemoryTokenStore``. ``test_secret_leak``
uses it too.

Here: a whole conversation (sign-in, a refresh, a refused refresh that signs
in again), a property over faults at every OAuth step (arbitrary statuses,
bodies, broken connections, stalls; every call ends exactly once with a typed
error or a result, and the engine settles), the parser's running time on huge
challenges, and one regression test per finding fixed: findings 1-4 and 9 found by
the OAuth fuzz harnesses, findings 5-8 by the property and leak tests (each failed
before its fix; a new finding goes here as a strict xfail, and in ``KNOWN`` in
fuzz/_oauthfuzz.py, until it is fixed).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fake_peer import FakeServer, Reply, Seen
from mcpcore import AuthOptions, HttpClientEngine, PreRegisteredClient, RemoteServer
from mcpcore.auth._oauth import (
    AuthFailed,
    AuthRequest,
    ClientRecord,
    DeleteClient,
    DeleteTokens,
    LockTokens,
    OAuthConfig,
    OAuthError,
    OAuthFlow,
    OpenAuthorizationUrl,
    RequestTicket,
    SaveClient,
    SaveTokens,
    SignAssertion,
    TokenError,
    TokenSet,
    UnlockTokens,
    compact_jws,
    parse_www_authenticate,
)
from mcpcore.auth._store import MemoryTokenStore, apply_to_store
from mcpcore.base._errors import McpError
from mcpcore.base._events import (
    AbortExchange,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    HttpRequest,
    SessionReady,
    StartFailed,
)
from mcpcore.base._failure import FailureKind, TransportFailure
from mcpcore.session._session import SessionOptions

MCP = "https://mcp.example.test/mcp"
AS = "https://auth.example.test"
PRM = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
ASM = AS + "/.well-known/oauth-authorization-server"
REDIRECT = "http://127.0.0.1:53682/callback"
WALL = 1_700_000_000.0  # the wall clock when the engine's clock reads START
START = 1000.0

Handler = Callable[[HttpRequest], Reply]


def js(status: int, doc: Any) -> Reply:
    return Reply(status, [(b"content-type", b"application/json")], [json.dumps(doc).encode()])


def form(request: HttpRequest) -> dict[str, str]:
    return dict(parse_qsl((request.body or b"").decode("ascii")))


@dataclass
class OAuthWorld:
    """The MCP server, its authorization server and the person who signs in."""

    access: Callable[[int], str] = lambda n: f"access-token-{n}-0123456789"
    refresh: Callable[[int], str] = lambda n: f"refresh-token-{n}-0123456789"
    client_secret: str = "dcr-client-secret-0123456789"
    code: str = "authorization-code-0123456789"
    auth_method: str = "client_secret_post"
    expires_in: int | None = 3600
    preregistered: PreRegisteredClient | None = None
    grant: str = "authorization_code"
    signature: bytes = b"signature"  # what the host's signer gives (private_key_jwt)
    tokens: TokenSet | None = None  # what the store held when the engine was made
    clients: tuple[ClientRecord, ...] = ()
    protocol: str = "legacy"
    # what the token endpoint does with a refresh token: None issues new tokens,
    # a Reply is sent as is, a callable builds one from the request
    refresh_reply: Reply | Handler | None = None
    code_reply: Reply | Handler | None = None
    entropy_seed: bytes = b"seed"
    now: float = START
    mcp: FakeServer = field(default_factory=FakeServer)
    routes: dict[tuple[str, str], Reply | Handler] = field(default_factory=dict)
    valid: set[str] = field(default_factory=set)
    issued: int = 0
    requests: list[HttpRequest] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    opened: list[OpenAuthorizationUrl] = field(default_factory=list)
    stalled: set[int] = field(default_factory=set)
    store: MemoryTokenStore = field(default_factory=MemoryTokenStore)
    options: AuthOptions = field(init=False)
    callback: Callable[[OpenAuthorizationUrl], str | None] | None = None
    engine: HttpClientEngine = field(init=False)

    def __post_init__(self) -> None:
        self.mcp.hook = self.guard
        self.routes.setdefault(
            ("GET", PRM), js(200, {"resource": MCP, "authorization_servers": [AS]})
        )
        asm = {
            "issuer": AS,
            "authorization_endpoint": AS + "/authorize",
            "token_endpoint": AS + "/token",
            "registration_endpoint": AS + "/register",
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [self.auth_method],
        }
        self.routes.setdefault(("GET", ASM), js(200, asm))
        registered = {"client_id": "dyn-client", "token_endpoint_auth_method": self.auth_method}
        if self.auth_method != "none":
            registered["client_secret"] = self.client_secret
        self.routes.setdefault(("POST", AS + "/register"), js(201, registered))
        self.routes.setdefault(("POST", AS + "/token"), self.token)
        counter = [0]

        def token_bytes(n: int) -> bytes:
            counter[0] += 1
            seed = self.entropy_seed + b"-%d-" % counter[0]
            return (seed * (n // len(seed) + 1))[:n]

        self.options = AuthOptions(
            redirect_uri=REDIRECT,
            client=self.preregistered,
            store=self.store,
            grant=self.grant,  # type: ignore[arg-type]
        )
        self.engine = HttpClientEngine(
            RemoteServer(name="auth", url=MCP),
            options=SessionOptions(server_name="auth", protocol=self.protocol),
            auth=self.options,
            token_bytes=token_bytes,
            wall_offset=WALL - START,
            interactive=True,
            tokens=self.tokens,
            clients=self.clients,
        )

    # --- the servers ------------------------------------------------------------------

    def guard(self, seen: Seen) -> Reply | None:
        """The MCP server: 401 unless the request carries a token that is still valid."""
        header = seen.headers.get("authorization", "")
        if header.startswith("Bearer ") and header[7:] in self.valid:
            return None
        challenge = b'Bearer error="invalid_token", scope="mcp", resource_metadata="' + PRM.encode()
        return Reply(401, [(b"www-authenticate", challenge + b'"')], [b"unauthorized"])

    def issue(self) -> dict[str, Any]:
        self.issued += 1
        access, refresh = self.access(self.issued), self.refresh(self.issued)
        self.valid.add(access)
        doc: dict[str, Any] = {"access_token": access, "token_type": "Bearer"}
        doc["refresh_token"] = refresh
        if self.expires_in is not None:
            doc["expires_in"] = self.expires_in
        return doc

    def token(self, request: HttpRequest) -> Reply:
        grant = form(request).get("grant_type")
        special = self.refresh_reply if grant == "refresh_token" else self.code_reply
        if special is not None:
            return special(request) if callable(special) else special
        return js(200, self.issue())

    def revoke_access(self) -> None:
        self.valid.clear()

    # --- performing the engine's actions --------------------------------------------------

    def perform(self, request: HttpRequest) -> None:
        self.requests.append(request)
        url = request.url.split("?")[0]
        if url == MCP:
            reply = self.mcp.handle(request)
        else:
            found = self.routes.get((request.method, url))
            if found is None:
                reply = Reply(404, [(b"content-type", b"text/plain")], [b"not found"])
            else:
                reply = found(request) if callable(found) else found
        engine, xid = self.engine, request.exchange_id
        if reply.finish == "before-headers":
            self.stalled.add(xid)
            return
        engine.response_started(xid, reply.status, reply.headers, self.now)
        for chunk in reply.chunks:
            engine.response_data(xid, chunk, self.now)
        if reply.finish == "end":
            engine.response_ended(xid, self.now)
        elif reply.finish == "fail":
            engine.response_failed(xid, TransportFailure(FailureKind.RESET), self.now)
        else:
            self.stalled.add(xid)

    def default_callback(self, action: OpenAuthorizationUrl) -> str | None:
        state = parse_qs(urlsplit(action.url).query)["state"][0]
        return action.redirect_uri + "?" + urlencode({"code": self.code, "state": state})

    def pump(self, rounds: int = 2_000) -> None:
        engine = self.engine
        for _ in range(rounds):
            actions = engine.take_actions()
            self.events += engine.take_events()
            if not actions:
                return
            for action in actions:
                self.actions.append(action)
                if isinstance(action, HttpRequest):
                    self.perform(action)
                elif isinstance(action, AbortExchange):
                    self.stalled.discard(action.exchange_id)
                elif isinstance(action, OpenAuthorizationUrl):
                    self.opened.append(action)
                    url = (self.callback or self.default_callback)(action)
                    if url is not None:
                        engine.hook_answered(action.attempt, url, self.now)
                elif isinstance(action, SignAssertion):
                    jws = compact_jws(action.signing_input, self.signature)
                    engine.hook_answered(action.attempt, jws, self.now)
                else:
                    assert isinstance(
                        action,
                        SaveTokens
                        | DeleteTokens
                        | SaveClient
                        | DeleteClient
                        | LockTokens
                        | UnlockTokens,
                    )
                    outcome = apply_to_store(self.store, action)
                    engine.hook_answered(action.attempt, outcome, self.now)
        raise AssertionError("the engine never settled")

    def advance(self, seconds: float) -> None:
        target = self.now + seconds
        while True:
            self.pump()
            deadline = self.engine.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.engine.handle_timer(self.now)
        self.now = target
        self.pump()

    def start(self) -> None:
        self.engine.start(self.now)
        self.advance(1)

    def call(self, text: str = "hi", timeout: float | None = 60) -> int:
        call_id = self.engine.call("auth/echo", {"text": text}, self.now, timeout=timeout)
        self.advance(1)
        return call_id

    def close(self) -> None:
        self.engine.close(self.now)
        self.advance(30)

    def outcomes(self, call_id: int) -> list[Any]:
        kinds = (CallSucceeded, CallFailed, CallCancelled)
        return [e for e in self.events if isinstance(e, kinds) and e.call_id == call_id]

    def of(self, url: str, method: str = "POST") -> list[HttpRequest]:
        return [r for r in self.requests if r.url.split("?")[0] == url and r.method == method]


def bearer(request: HttpRequest) -> str | None:
    value = dict(request.headers).get(b"authorization")
    return value.decode() if value is not None else None


# --- a whole conversation ------------------------------------------------------------------


def test_A1_the_engine_signs_in_refreshes_and_signs_in_again() -> None:
    world = OAuthWorld()
    world.start()
    assert any(isinstance(e, SessionReady) for e in world.events), world.events
    assert len(world.opened) == 1
    (first,) = world.outcomes(world.call())
    assert isinstance(first, CallSucceeded)
    assert world.store.get_tokens(MCP) is not None
    # the token is revoked: a 401, rediscovery, a refresh, the call again
    world.revoke_access()
    (second,) = world.outcomes(world.call())
    assert isinstance(second, CallSucceeded)
    refreshes = [r for r in world.of(AS + "/token") if form(r)["grant_type"] == "refresh_token"]
    assert len(refreshes) == 1 and len(world.opened) == 1
    # the refresh token is refused too: the person signs in again (O55)
    world.revoke_access()
    world.refresh_reply = js(400, {"error": "invalid_grant"})
    (third,) = world.outcomes(world.call())
    assert isinstance(third, CallSucceeded)
    assert len(world.opened) == 2
    mcp_wires = [r.exchange_id for r in world.requests if r.url == MCP]
    assert any(x >= 1 << 40 for x in mcp_wires), "re-sent requests get the layer's own ids"
    world.close()
    assert world.engine.finished


# --- faults at every OAuth step, through the engine ---------------------------------------------

_STATUSES = st.sampled_from([200, 201, 204, 302, 400, 401, 403, 404, 429, 500, 503])
_BODIES = st.one_of(
    st.binary(max_size=80),
    st.sampled_from(
        [
            b"{}",
            b"[]",
            b'{"error":"invalid_grant","error_description":"no"}',
            b'{"error":"invalid_client"}',
            b'{"access_token":"short","token_type":"Bearer","expires_in":1}',
            b'{"resource":"https://mcp.example.test/mcp","authorization_servers":[]}',
        ]
    ),
)
_FAULTS = st.fixed_dictionaries(
    {
        "status": _STATUSES,
        "body": _BODIES,
        "finish": st.sampled_from(["end", "end", "end", "fail", "stall", "before-headers"]),
        "www": st.sampled_from([b"Bearer", b'Bearer error="insufficient_scope", scope="x"', b""]),
    }
)
_STEPS = st.sampled_from(
    [("GET", PRM), ("GET", ASM), ("POST", AS + "/register"), ("POST", AS + "/token"), ("MCP", MCP)]
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    faults=st.lists(st.tuples(_STEPS, st.integers(0, 2), _FAULTS), max_size=4),
    callbacks=st.lists(st.sampled_from(["ok", "none", "wrong-state", "denied"]), max_size=3),
    calls=st.integers(1, 3),
    expires_in=st.sampled_from([3600, 5, 1, None]),
)
def test_A1_faults_at_every_oauth_step_end_every_call_once(
    faults: list[tuple[tuple[str, str], int, dict[str, Any]]],
    callbacks: list[str],
    calls: int,
    expires_in: int | None,
) -> None:
    """Arbitrary statuses, bodies, broken or stalled connections at the PRM, metadata,
    registration, token and MCP steps: the engine never raises, every call ends exactly
    once (a result, or a typed ``McpError``), and everything settles within the deadlines."""
    world = OAuthWorld(expires_in=expires_in)
    seen: dict[tuple[str, str], int] = {}
    planned = {(step, n): fault for step, n, fault in faults}

    def faulty(step: tuple[str, str], normal: Reply | Handler) -> Handler:
        def handle(request: HttpRequest) -> Reply:
            n = seen.get(step, 0)
            seen[step] = n + 1
            fault = planned.get((step, n))
            if fault is None:
                return normal(request) if callable(normal) else normal
            headers = [(b"content-type", b"application/json")]
            if fault["www"]:
                headers.append((b"www-authenticate", fault["www"]))
            return Reply(fault["status"], headers, [fault["body"]], finish=fault["finish"])

        return handle

    for step in [("GET", PRM), ("GET", ASM), ("POST", AS + "/register"), ("POST", AS + "/token")]:
        world.routes[step] = faulty(step, world.routes[step])
    guard = world.guard

    def mcp_guard(seen_request: Seen) -> Reply | None:
        step = ("MCP", MCP)
        n = seen.get(step, 0)
        seen[step] = n + 1
        fault = planned.get((step, n))
        if fault is not None:
            headers = [(b"content-type", b"text/plain")]
            if fault["www"]:
                headers.append((b"www-authenticate", fault["www"]))
            return Reply(fault["status"], headers, [fault["body"]], finish=fault["finish"])
        return guard(seen_request)

    world.mcp.hook = mcp_guard
    answers = iter(callbacks)

    def callback(action: OpenAuthorizationUrl) -> str | None:
        kind = next(answers, "ok")
        state = parse_qs(urlsplit(action.url).query)["state"][0]
        if kind == "none":
            return None  # the person never comes back: the user wait runs out (O41)
        if kind == "wrong-state":
            state += "x"
        key = "error" if kind == "denied" else "code"
        return action.redirect_uri + "?" + urlencode({key: world.code, "state": state})

    world.callback = callback
    world.start()

    def ready() -> bool:
        return any(isinstance(e, SessionReady) for e in world.events)

    layer = world.engine.auth
    assert layer is not None
    for _ in range(60):  # a failed start is tried again after a backoff (L4)
        if ready():
            break
        if not layer.flow.busy:  # the host lets the person sign in again
            world.engine.login(world.now)
        world.advance(5)
    ids = []
    for n in range(calls):
        if not ready():
            break
        if n:
            world.revoke_access()  # this call meets a 401: a refresh, or a new sign-in
        ids.append(world.engine.call("auth/echo", {"text": "x"}, world.now, timeout=30))
        world.advance(1)
    world.advance(400)  # past every call deadline and the user wait
    event(f"{len(ids)} calls, {len(world.opened)} sign-ins, {len(world.requests)} requests")
    for call_id in ids:
        outcomes = world.outcomes(call_id)
        assert len(outcomes) == 1, (call_id, outcomes)
        if isinstance(outcomes[0], CallFailed):
            assert isinstance(outcomes[0].error, McpError), outcomes[0]
    for happened in world.events:
        if isinstance(happened, StartFailed):
            assert isinstance(happened.error, McpError)
    world.close()
    assert world.engine.finished
    assert not layer._wire_to_flow and not layer._flow_bounds


# --- no hang: the challenge parser is linear ---------------------------------------------------


def _cpu_seconds(*values: bytes) -> list[float]:
    """For each value, the least CPU time (this process's own, so other work on the
    machine counts for little) of five parses, the values parsed in turn so that a
    change in the machine's load weighs on each alike."""
    best = [float("inf")] * len(values)
    for _ in range(5):
        for index, value in enumerate(values):
            started = time.process_time()
            parse_www_authenticate([(b"www-authenticate", value)] * 2)
            best[index] = min(best[index], time.process_time() - started)
    return best


@pytest.mark.parametrize(
    ("prefix", "unit", "suffix", "count"),
    [
        (b"Bearer ", b"a=b, ", b"", 50_000),
        (b"Bearer ", b", ", b"", 100_000),
        (b'Bearer a="', b"\\x", b"", 100_000),
        (b"Bearer ", b"a", b"=", 200_000),
        (b"", b"B ", b"", 100_000),
        (b"Bearer ", b"abc==, ", b"", 40_000),
        (b"Bearer a =", b" ", b"", 200_000),
    ],
)
def test_O4_a_huge_challenge_parses_in_linear_time(
    prefix: bytes, unit: bytes, suffix: bytes, count: int
) -> None:
    """O4: eight times the input costs about eight times the CPU, never the sixty-four
    a quadratic parser would take. Measured as a ratio of CPU times, with a margin of
    four either way, so a loaded machine neither fails it nor hides a quadratic parser."""
    small, large = _cpu_seconds(
        prefix + unit * (count // 8) + suffix, prefix + unit * count + suffix
    )
    assert large < 32 * max(small, 0.002), (small, large)


# --- findings fixed (findings 1-4 and 9 from the fuzz harnesses; findings 5-8 from the property and leak
# tests): each is the smallest reproduction, failing before its fix.


def _flow(**config: Any) -> OAuthFlow:
    tokens = config.pop("tokens", None)
    cfg = OAuthConfig(server_url=MCP, redirect_uri=REDIRECT, **config)
    counter = [0]

    def token_bytes(n: int) -> bytes:
        counter[0] += 1
        return (b"e%d-" % counter[0] * n)[:n]

    return OAuthFlow(cfg, token_bytes=token_bytes, tokens=tokens)


def _run(flow: OAuthFlow, answers: dict[str, Any], code: str = "the-code") -> list[Any]:
    """Answer every request by purpose (``answers[purpose]``: a JSON document, or a
    (status, document) pair); the redirect carries ``code``. Returns the events."""
    defaults: dict[str, Any] = {
        "prm": {"resource": MCP, "authorization_servers": [AS]},
        "asm": {
            "issuer": AS,
            "authorization_endpoint": AS + "/authorize",
            "token_endpoint": AS + "/token",
            "registration_endpoint": AS + "/register",
            "code_challenge_methods_supported": ["S256"],
        },
        "register": (201, {"client_id": "dyn-client"}),
        "token_code": {"access_token": "at-1", "token_type": "Bearer"},
        "token_refresh": {"access_token": "at-2", "token_type": "Bearer"},
    }
    events: list[Any] = []
    for _ in range(50):
        actions = flow.take_actions()
        events += flow.take_events()
        if not actions:
            return events
        for action in actions:
            if isinstance(action, OpenAuthorizationUrl):
                state = parse_qs(urlsplit(action.url).query)["state"][0]
                flow.receive_callback(f"{REDIRECT}?code={code}&state={state}", WALL)
            elif isinstance(action, AuthRequest):
                answer = answers.get(action.purpose.value, defaults.get(action.purpose.value))
                status, doc = answer if isinstance(answer, tuple) else (200, answer)
                body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
                flow.receive_response(action.exchange_id, status, [], body, WALL)
    raise AssertionError("the flow did not settle")


def _held(**kw: Any) -> TokenSet:
    values: dict[str, Any] = {
        "access_token": "at-0",
        "refresh_token": "rt-0",
        "expires_at": WALL + 3600,
        "issuer": AS,
        "token_endpoint": AS + "/token",
        "resource": MCP,
        "client_id": "dyn-client",
    }
    values.update(kw)
    return TokenSet(**values)


def _outcome(thunk: Callable[[], Any]) -> Any:
    """The events, or the exception class a call raised (the finding)."""
    try:
        return thunk()
    except McpError:
        raise
    except Exception as exc:
        return type(exc)


_BIG = b"1" + b"0" * 400  # a JSON integer beyond the float range


def test_finding1_a_huge_integer_expires_in_is_a_malformed_response() -> None:
    flow = _flow()
    flow.login(WALL)
    body = b'{"access_token":"at-1","token_type":"Bearer","expires_in":' + _BIG + b"}"
    events = _outcome(lambda: _run(flow, {"token_code": (200, body)}))
    assert isinstance(events, list) and isinstance(events[-1], AuthFailed), events


def test_finding1_a_huge_integer_client_secret_expires_at_is_a_malformed_response() -> None:
    flow = _flow()
    flow.login(WALL)
    body = b'{"client_id":"c","client_secret_expires_at":' + _BIG + b"}"
    events = _outcome(lambda: _run(flow, {"register": (201, body)}))
    assert isinstance(events, list) and isinstance(events[-1], AuthFailed), events


def test_finding2_a_lone_surrogate_in_a_registered_client_id_is_refused() -> None:
    flow = _flow()
    flow.login(WALL)
    events = _outcome(lambda: _run(flow, {"register": (201, b'{"client_id":"\\ud800"}')}))
    assert isinstance(events, list) and isinstance(events[-1], AuthFailed), events


def test_finding2_a_lone_surrogate_in_prm_scopes_supported_is_refused() -> None:
    flow = _flow()
    flow.login(WALL)
    prm = b'{"resource":"%s","authorization_servers":["%s"],"scopes_supported":["\\udc00"]}' % (
        MCP.encode(),
        AS.encode(),
    )
    events = _outcome(lambda: _run(flow, {"prm": (200, prm)}))
    assert isinstance(events, list) and isinstance(events[-1], AuthFailed), events


def test_finding2_a_lone_surrogate_access_token_is_refused() -> None:
    flow = _flow()
    flow.login(WALL)
    events = _run(flow, {"token_code": (200, b'{"access_token":"\\ud800","token_type":"Bearer"}')})
    assert isinstance(events[-1], AuthFailed), events  # today: Authorized, then prepare raises
    assert _outcome(lambda: flow.prepare(RequestTicket(), WALL)) is None


def test_finding2_a_lone_surrogate_refresh_token_is_refused() -> None:
    flow = _flow()
    flow.login(WALL)
    body = b'{"access_token":"at","token_type":"Bearer","expires_in":10,"refresh_token":"\\udc00"}'
    _run(flow, {"token_code": (200, body)})
    # due: prepare starts a refresh with that refresh token in the form body
    assert _outcome(lambda: flow.prepare(RequestTicket(), WALL + 5)) is not UnicodeEncodeError


def test_finding2_through_the_engine_a_surrogate_token_fails_the_call_not_the_driver() -> None:
    world = OAuthWorld(access=lambda n: "\ud800" if n == 1 else f"access-{n}-0123456789")
    world.valid.add("\ud800")
    assert _outcome(world.start) is None


def test_finding3_an_access_token_with_a_line_break_is_refused() -> None:
    flow = _flow()
    flow.login(WALL)
    body = b'{"access_token":"at\\r\\nX-Injected: 1","token_type":"Bearer"}'
    events = _run(flow, {"token_code": (200, body)})
    assert isinstance(events[-1], AuthFailed), events
    header = flow.prepare(RequestTicket(), WALL)
    assert not isinstance(header, tuple) or b"\r" not in header[1]


def test_finding4_a_control_character_in_an_endpoint_url_is_escaped_in_the_debug_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    flow = _flow()
    flow.login(WALL)
    prm = {"resource": MCP, "authorization_servers": [AS + "/\x1b[2J"]}
    with caplog.at_level("DEBUG", logger="mcpcore"):
        _run(flow, {"prm": prm})
    assert not any("\x1b" in r.getMessage() for r in caplog.records)


def test_finding5_a_held_client_secret_is_scrubbed_however_many_authorizations_came_before() -> (
    None
):
    """Each authorization remembers its verifier, state, code and tokens in a 64-entry
    deque; after a dozen the configured client secret has aged out, and an error text
    echoing it is no longer scrubbed (A4, O64)."""
    secret = "pre-registered-secret-0123456789"
    pre = PreRegisteredClient(
        client_id="pre", client_secret=secret, auth_method="client_secret_post"
    )
    flow = _flow(preregistered=pre)
    for n in range(20):
        flow.login(WALL)
        _run(flow, {"token_code": {"access_token": f"at-{n}", "token_type": "Bearer"}}, f"c-{n}")
    flow.login(WALL)
    echo = (401, {"error": "invalid_client", "error_description": f"bad secret {secret}"})
    events = _run(flow, {"token_code": echo})
    error = events[-1].error
    assert isinstance(error, TokenError)
    assert secret not in str(error), str(error)


def test_finding6_a_token_that_expires_at_once_is_not_refreshed_again_and_again() -> None:
    """``expires_in: 0`` with a refresh token: every ``prepare`` finds the token due and
    starts a refresh, whose answer is due again; the engine sends refresh after refresh
    and never the MCP request (a hang in the sans-IO loop; a request storm on a network)."""
    world = OAuthWorld(expires_in=0)
    world.engine.start(world.now)
    try:
        world.pump(rounds=200)
    finally:
        refreshes = [r for r in world.of(AS + "/token") if form(r)["grant_type"] == "refresh_token"]
        assert len(refreshes) <= 2, f"{len(refreshes)} refreshes"


def test_finding5_control_with_few_authorizations_the_echo_is_scrubbed() -> None:
    """The same echo right after construction is scrubbed (the finding-5 test's control)."""
    secret = "pre-registered-secret-0123456789"
    pre = PreRegisteredClient(
        client_id="pre", client_secret=secret, auth_method="client_secret_post"
    )
    flow = _flow(preregistered=pre)
    flow.login(WALL)
    echo = (401, {"error": "invalid_client", "error_description": f"bad secret {secret}"})
    events = _run(flow, {"token_code": echo})
    assert isinstance(events[-1].error, OAuthError)
    assert secret not in str(events[-1].error) and "[redacted]" in str(events[-1].error)


def test_finding7_closing_never_asks_a_person_to_sign_in() -> None:
    """The session's DELETE on close meets a 401 (the token was revoked, the refresh is
    refused): the layer hands it to the flow like any request, which rediscovers, refreshes,
    and sends the person to sign in (OpenAuthorizationUrl) while the client closes."""
    world = OAuthWorld()
    world.start()
    assert len(world.opened) == 1
    world.revoke_access()
    world.refresh_reply = js(400, {"error": "invalid_grant"})
    before = len(world.requests)
    world.close()
    assert world.engine.finished
    after = [r.url.split("?")[0] for r in world.requests[before:]]
    assert len(world.opened) == 1, f"asked to sign in while closing; requests: {after}"


def test_finding8_an_mcp_error_body_echoing_the_access_token_is_scrubbed() -> None:
    """The flow scrubs the secrets it holds from the authorization server's error text
    (O64), but an ordinary MCP error (a 403 that is not insufficient_scope, a 400, a 500)
    is worded by the HTTP mapping, which does not know the token the layer attached."""
    world = OAuthWorld()
    world.start()
    guard = world.guard

    def echo(seen: Seen) -> Reply | None:
        if seen.message and seen.message.get("method") == "tools/call":
            token = seen.headers["authorization"][7:]
            return Reply(
                403, [(b"content-type", b"text/plain")], [b"token %s: no" % token.encode()]
            )
        return guard(seen)

    world.mcp.hook = echo
    (outcome,) = world.outcomes(world.call())
    assert isinstance(outcome, CallFailed), outcome
    assert "access-token-1" not in str(outcome.error), str(outcome.error)


def test_finding9_an_iss_quoting_the_state_is_scrubbed_like_error_text() -> None:
    """O38's rejection quotes the redirect's ``iss`` as is; ``error`` (O39) goes through the
    scrubber, ``iss`` does not, so an ``iss`` quoting the state shows it (minor: the state
    is spent by then)."""
    flow = _flow()
    flow.login(WALL)
    (opened,) = [a for a in _actions_until_open(flow)]
    state = parse_qs(urlsplit(opened.url).query)["state"][0]
    flow.receive_callback(f"{REDIRECT}?code=c&state={state}&iss=x{state}", WALL)
    (failed,) = flow.take_events()
    assert isinstance(failed, AuthFailed)
    assert state not in str(failed.error), str(failed.error)


def _actions_until_open(flow: OAuthFlow) -> list[OpenAuthorizationUrl]:
    """Answer discovery and registration with ``_run``'s defaults until the person is sent."""
    answers = {
        "prm": {"resource": MCP, "authorization_servers": [AS]},
        "asm": {
            "issuer": AS,
            "authorization_endpoint": AS + "/authorize",
            "token_endpoint": AS + "/token",
            "registration_endpoint": AS + "/register",
            "code_challenge_methods_supported": ["S256"],
        },
        "register": {"client_id": "dyn-client"},
    }
    for _ in range(10):
        for action in flow.take_actions():
            if isinstance(action, OpenAuthorizationUrl):
                return [action]
            if isinstance(action, AuthRequest):
                body = json.dumps(answers[action.purpose.value]).encode()
                flow.receive_response(action.exchange_id, 200, [], body, WALL)
    raise AssertionError("the person was never sent to authorize")
