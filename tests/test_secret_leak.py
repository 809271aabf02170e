"""C8: secrets never leak — a property over random secrets and every error path.

Random secrets (a distinctive alphabet, 15+ characters) go into header values
(literal and through ``${env:NAME}``), environment values and URL query
strings. Then every error path is driven: config errors (bad header names and
values, client-owned headers, bad URLs built from the environment, unset
variables, reserved local env keys), and, live on both drivers, a successful
exchange, HTTP 401/500 (the server's bodies do not echo headers), a call
timeout, an unauthorised handshake, a refused entry, and every kind of network
failure (refused, closed, reset, bytes that are not HTTP, a TLS handshake that
fails), all with DEBUG logging on the ``mcpcore`` logger. The failure
classification itself is checked over every kind with secrets planted in the
exceptions' own text (X5).

OAuth (A4, O64): a whole conversation through ``HttpClientEngine`` with
``auth=`` (sign-in with registration or a pre-registered or restored client
and tokens, a DPoP key's export kept with them among the secrets,
client credentials with a signed assertion, a refresh, refused refreshes,
code exchanges and re-registrations whose error text echoes every secret they
were sent, a denied redirect echoing the state), over random tokens, codes,
client secrets and signatures.

Nowhere may the secret, or any 12-character piece of it, appear: exception
text and ``repr``, ``repr`` of clients, servers, requests and tools,
availability reasons, log records.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import anyio
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    CallTimeout,
    ConfigError,
    FailureKind,
    LocalServer,
    PreRegisteredClient,
    RemoteServer,
    TransportError,
    TransportFailure,
    Unavailable,
    load_mcp_json,
    parse_server,
)
from mcpcore.auth._oauth import ClientRecord, SaveClient, SaveTokens, TokenError, TokenSet
from mcpcore.base._events import CallFailed, CallSucceeded, HttpRequest
from mcpcore.wire._http import HttpMapping
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest
from raw_servers import close_at_once, garbage, reset, socket_server
from test_oauth_layer_props import AS, MCP, REDIRECT, WALL, OAuthWorld, form, js

ALPHABET = "QZXJKVWqzxjkvw0123456789-_.~+/="
secrets = st.text(alphabet=ALPHABET, min_size=12, max_size=40).map(lambda s: "QZX" + s)
ENV_NAME = "MCPCORE_LEAK_TEST_SECRET"


def leaks(secret: str, texts: list[str]) -> list[str]:
    """The texts holding the secret or any 12-character piece of it."""
    pieces = {secret[i : i + 12] for i in range(len(secret) - 11)}
    return [t for t in texts if any(p in t for p in pieces)]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1])
        self.texts.append(text)


@contextlib.contextmanager
def debug_records() -> Iterator[Records]:
    """Every record of the ``mcpcore`` logger hierarchy, at DEBUG."""
    logger = logging.getLogger("mcpcore")
    handler = Records()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def shown(value: object) -> list[str]:
    """Every way a value is shown: str and repr, and an error's args and key."""
    out = [str(value), repr(value)]
    if isinstance(value, BaseException):
        out += [repr(a) for a in value.args]
        out.append(repr(getattr(value, "key", None)))
        out.append(repr(getattr(value, "reason", None)))
    return out


# --- config errors and config objects (pure) ---------------------------------------------------


def config_cases(secret: str) -> list[tuple[dict[str, Any], dict[str, str], bool]]:
    """(entry, env, allow_local) for entries that fail or hold the secret somewhere."""
    env = {"S": secret, "CRLF": f"{secret}\r\nX-Evil: 1", "NUL": f"a\x00{secret}", "PAD": f"{secret}\t"}
    ok = "https://example.com/mcp"
    return [
        ({"url": ok, "headers": {"bad name": secret}}, env, False),
        ({"url": ok, "headers": {"bad name": "${env:S}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": f"{secret}\r\nX-Evil: 1"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:CRLF}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:NUL}"}}, env, False),
        ({"url": ok, "headers": {"Authorization": f" Bearer {secret}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:PAD}"}}, env, False),
        ({"url": ok, "headers": {"Accept": secret}}, env, False),
        ({"url": ok, "headers": {"Mcp-Session-Id": "${env:S}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": 12}}, env, False),
        ({"url": ok, "headers": {"X-Key": secret, "X-Other": "${env:UNSET}"}}, env, False),
        ({"url": "ftp://${env:S}/mcp"}, env, False),
        ({"url": "https://${env:S}:notaport/mcp"}, env, False),
        ({"url": "http://${env:S}.example.com/mcp"}, env, False),
        ({"url": "https://user:${env:S}@example.com/mcp"}, env, False),
        # a literal password (percent-encoded: a raw "/" would end the authority)
        ({"url": f"https://user:{quote(secret, safe='')}@example.com/mcp"}, env, False),
        ({"url": "https://example.com/mcp#${env:S}"}, env, False),
        ({"url": "https://example.com/m p?k=${env:S}"}, env, False),
        ({"url": "http://example.com/mcp?k=${env:S}"}, env, False),
        ({"url": "https://example.com/${env:UNSET}", "headers": {"X-Key": "${env:S}"}}, env, False),
        ({"url": ok, "command": "x", "headers": {"X-Key": "${env:S}"}}, env, False),
        ({"type": "sse", "url": "https://example.com/sse?k=${env:S}"}, env, False),
        ({"command": "srv", "env": {"K": "${env:S}"}}, env, False),
        ({"command": "srv", "env": {"PLUGIN_ROOT": "${env:S}"}}, env, True),
        ({"command": "srv", "env": {"K": secret, "J": 3}}, env, True),
        ({"command": "srv", "args": ["--token", secret], "cwd": "../${env:S}"}, env, True),
        ({"command": "srv", "args": ["${env:S}"], "env": {"K": "${env:UNSET}"}}, env, True),
        # valid entries: the secret sits in headers, query, args and env
        ({"url": "https://example.com/mcp?k=${env:S}", "headers": {"Authorization": f"Bearer {secret}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:S}"}}, env, False),
        ({"command": "srv", "args": ["${env:S}"], "env": {"K": secret}}, env, True),
    ]


@settings(max_examples=50, deadline=None)
@given(secret=secrets)
def test_C8_config_errors_and_objects_never_show_secrets(secret: str) -> None:
    """C8: no ConfigError, server repr or config log record shows a header or env value."""
    texts: list[str] = []
    with debug_records() as records:
        for entry, env, allow_local in config_cases(secret):
            try:
                server = parse_server(
                    "leaky", entry, env=env, home="/home/u", plugin_root="/plug", allow_local=allow_local
                )
            except ConfigError as exc:
                texts += shown(exc)
            else:
                assert isinstance(server, (RemoteServer, LocalServer))
                texts += shown(server)
            document = {"mcpServers": {"leaky": entry, "Leaky": entry}}
            outcomes = load_mcp_json(json.dumps(document), env=env, home="/h", allow_local=allow_local)
            for outcome in outcomes.values():
                texts += shown(outcome)
        for bad_doc in (
            json.dumps({"mcpServers": [{"url": secret}]}),
            json.dumps({"mcpServers": {"a": {"url": secret}}, "$schema": 1}),
            json.dumps({"mcpServers": {"a": {"url": "${env:S}"}}})[:-3],  # truncated: invalid JSON
        ):
            with pytest.raises(ConfigError) as info:
                load_mcp_json(bad_doc, env={"S": secret}, home="/h")
            texts += shown(info.value)
    assert leaks(secret, texts + records.texts) == []


edge_whitespace = st.tuples(
    st.text(alphabet=" \t", max_size=3), st.text(alphabet=" \t", max_size=3)
).filter(lambda pad: pad != ("", ""))


@settings(max_examples=50, deadline=None)
@given(secret=secrets, pad=edge_whitespace, scheme=st.sampled_from(["", "Bearer "]))
def test_C5_C8_X5_header_values_with_edge_whitespace_are_refused_without_the_value(
    secret: str, pad: tuple[str, str], scheme: str
) -> None:
    """C5, X5, C8: a header value with a leading or trailing space or tab (a pasted token) is
    refused by the config layer, literal, through ${env:...}, in an mcp.json document and in a
    RemoteServer a host builds; every refusal names the header and never shows the value."""
    from mcpcore.config._setup import prepare_client

    value = pad[0] + scheme + secret + pad[1]
    env = {"S": value}
    texts: list[str] = []
    refusals: list[object] = []
    with debug_records() as records:
        for written in (value, "${env:S}"):
            entry = {"url": "https://example.com/mcp", "headers": {"Authorization": written}}
            with pytest.raises(ConfigError) as info:
                parse_server("leaky", entry, env=env, home="/h")
            refusals.append(info.value)
            document = json.dumps({"mcpServers": {"leaky": entry}})
            refusals.append(load_mcp_json(document, env=env, home="/h")["leaky"])
        built = RemoteServer(name="leaky", url="https://example.com/mcp", headers={"Authorization": value})
        refusals.append(prepare_client("leaky", built, {}, env={}, home="/h").config_error)
    for refusal in refusals:
        assert isinstance(refusal, ConfigError)
        assert "header 'Authorization' value begins or ends with whitespace" in str(refusal)
        texts += shown(refusal)
    assert leaks(secret, texts + records.texts) == []


@settings(max_examples=100, deadline=None)
@given(secret=secrets)
def test_C8_http_requests_never_show_header_values(secret: str) -> None:
    """C8: the engine's request actions show header names only."""
    from mcpcore.wire._jsonrpc import Request

    mapping = HttpMapping("https://example.com/mcp?k=" + secret, [("Authorization", f"Bearer {secret}")])
    mapping.send(Request(id=1, method="initialize", params={}), 0.0)
    actions = mapping.take_actions()
    assert actions and all(isinstance(a, HttpRequest) for a in actions)
    texts = [repr(a) for a in actions] + [str(a) for a in actions] + [mapping.display_url]
    assert leaks(secret, texts) == []
    assert any(b"Bearer " + secret.encode() in dict(a.headers).values() for a in actions)  # really sent


# --- live: both drivers, every error path --------------------------------------------------------

HTML_401 = b"<html><body><h1>401 Unauthorized</h1><p>bad credentials</p></body></html>"
HTML_500 = b"<html><body><h1>500 Internal Server Error</h1></body></html>"


def leak_fault(request: ReceivedRequest) -> FaultResponse | None:
    """Faults chosen by the URL query (handshake) or the echo text (calls). Bodies never echo headers."""
    if "mode=init401" in request.path and request.rpc_method == "initialize":
        return FaultResponse.respond(401, {"content-type": "text/html", "www-authenticate": "Bearer"}, HTML_401)
    if request.rpc_method == "tools/call":
        text = ((request.json.get("params") or {}).get("arguments") or {}).get("text")
        if text == "401":
            return FaultResponse.respond(401, {"content-type": "text/html"}, HTML_401)
        if text == "500":
            return FaultResponse.respond(500, {"content-type": "text/html"}, HTML_500)
        if text == "stall":
            return FaultResponse.stall(200, {"content-type": "text/event-stream"})
    return None


@pytest.fixture(scope="module")
def leak_server() -> Iterator[str]:
    server = DemoServer(fault=leak_fault, record=False)
    with server.serve_in_thread() as running:
        yield running.url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def live_paths(driver: str, base: str, literal: str) -> list[str]:
    """Drive every live error path once; return everything the client showed."""
    texts: list[str] = []
    headers = {"Authorization": f"Bearer {literal}", "X-Env": f"${{env:{ENV_NAME}}}"}
    query = f"?token=${{env:{ENV_NAME}}}"
    with anyio.fail_after(30):
        # A good session: success, 401, 500 and a timeout on calls.
        async with open_client(driver, "leak", {"url": base + query, "headers": headers}, listen=False) as client:
            texts.append(repr(client.client))
            availability = await client.ready(10)
            assert availability.ok, availability.reason
            texts += [repr(client.tools), repr(availability)]
            texts.append((await client.call("leak/echo", {"text": "hello"})).text)
            for mode in ("401", "500"):
                with pytest.raises(TransportError) as info:
                    await client.call("leak/echo", {"text": mode})
                assert f"HTTP {mode}" in str(info.value)
                texts += shown(info.value)
            with pytest.raises(CallTimeout) as timeout:
                await client.call("leak/echo", {"text": "stall"}, timeout=0.2)
            texts += shown(timeout.value)
        # An unauthorised handshake, and every kind of network failure (X5).
        with contextlib.ExitStack() as stack:
            ports = [stack.enter_context(socket_server(b))[0] for b in (close_at_once, reset, garbage)]
            urls = [
                base + "?mode=init401&token=${env:" + ENV_NAME + "}",
                f"http://127.0.0.1:{free_port()}/mcp{query}",  # refused
                *(f"http://127.0.0.1:{port}/mcp{query}" for port in ports),  # closed, reset, not HTTP
                f"https://127.0.0.1:{ports[2]}/mcp{query}",  # the TLS handshake fails
            ]
            for url in urls:
                async with open_client(driver, "leak", {"url": url, "headers": headers}) as client:
                    availability = await client.ready(10)
                    assert not availability.ok
                    texts += [repr(client.client), availability.reason or "", repr(availability)]
                    with pytest.raises(Unavailable) as unavailable:
                        await client.call("leak/echo", {"text": "x"})
                    texts += shown(unavailable.value)
        refused_entries: list[Any] = [
            {"url": base, "headers": {"bad name": literal}},
            {"url": "ftp://${env:" + ENV_NAME + "}/x"},
            {"url": base, "headers": {"Authorization": f" Bearer {literal} "}},  # pasted with spaces
            RemoteServer(name="leak", url=base, headers={"Authorization": f"Bearer {literal}\t"}),
        ]
        for bad in refused_entries:
            async with open_client(driver, "leak", bad) as client:
                availability = await client.ready(1)
                assert not availability.ok
                texts += [repr(client.client), availability.reason or ""]
    return texts


@pytest.mark.parametrize("driver", DRIVERS)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(literal=secrets, from_env=secrets)
def test_C8_live_error_paths_never_show_secrets(driver: str, leak_server: str, literal: str, from_env: str) -> None:
    """C8 on both drivers: success, HTTP 401/500, timeout, refused, unauthorised, refused entry."""
    os.environ[ENV_NAME] = from_env
    try:
        with debug_records() as records:
            texts = anyio.run(live_paths, driver, leak_server, literal, backend=backend_of(driver))
    finally:
        del os.environ[ENV_NAME]
    everything = texts + records.texts
    assert any("HTTP 401" in t for t in everything)
    assert leaks(literal, everything) == []
    assert leaks(from_env, everything) == []


class _Named(Exception):
    """An exception of a library the core does not import, known by its class name."""


def _library_error(name: str, text: str, cause: BaseException | None = None) -> BaseException:
    exc = type(name, (_Named,), {})(text)
    exc.__cause__ = cause
    return exc


def _failures(secret: str) -> list[tuple[BaseException, FailureKind]]:
    """One exception chain per kind, each carrying the secret in its own text."""
    import ssl

    cert = ssl.SSLCertVerificationError(1, f"verify failed {secret}")
    cert.verify_message = "certificate has expired"
    return [
        (ConnectionRefusedError(111, f"refused {secret}"), FailureKind.REFUSED),
        (_library_error("ConnectError", f"connect {secret}", ConnectionRefusedError(111, secret)), FailureKind.REFUSED),
        (_library_error("ConnectError", secret, __import__("socket").gaierror(-2, "Name or service not known")),
         FailureKind.NAME_RESOLUTION),
        (_library_error("ConnectError", secret, cert), FailureKind.TLS),
        (ssl.SSLError(1, f"[SSL] {secret}"), FailureKind.TLS),
        (_library_error("ReadTimeout", secret), FailureKind.TIMEOUT),
        (TimeoutError(secret), FailureKind.TIMEOUT),
        (ConnectionResetError(104, secret), FailureKind.RESET),
        (_library_error("ReadError", secret), FailureKind.RESET),
        (_library_error("RemoteProtocolError", "Server disconnected without sending a response."), FailureKind.RESET),
        (_library_error("RemoteProtocolError", f"illegal status line: {secret}"), FailureKind.PROTOCOL),
        # h11 quotes a header value it refuses (a pasted token with a trailing space):
        (_library_error("LocalProtocolError", f"Illegal header value b'Bearer {secret} '"), FailureKind.REQUEST),
        (OSError(f"something {secret}"), FailureKind.OTHER),
        (_library_error("Whatever", secret), FailureKind.OTHER),
    ]


@settings(max_examples=50, deadline=None)
@given(secret=secrets)
def test_X5_every_failure_kind_is_worded_by_the_core_without_the_exceptions_text(secret: str) -> None:
    """X5: a failure's reason comes from its kind and system text, never from ``str()``
    of the exception, whatever that text holds; the reason reaches the caller as is."""
    from fake_peer import FakeServer, Reply, connect

    for exc, kind in _failures(secret):
        failure = TransportFailure.from_exception(exc)
        assert failure.kind is kind, (exc, failure)
        assert leaks(secret, [failure.describe(), repr(failure)]) == [], exc
        server = FakeServer()
        server.hook = lambda seen: Reply(200, [], [], finish="before-headers")
        link = connect(server, start=True)
        initialize = link.requests[0].exchange_id
        link.engine.response_failed(initialize, failure, link.now)
        availability = link.engine.availability
        assert availability is not None and not availability.ok
        assert failure.describe() in (availability.reason or "")
        assert leaks(secret, [availability.reason or ""]) == []


def test_X5_response_failed_refuses_a_plain_string() -> None:
    """X5: a driver cannot hand the engine free text (which may echo a header value)."""
    from fake_peer import FakeServer, connect

    link = connect(FakeServer(), start=False)
    link.engine.start(link.now)
    [request] = link.engine.take_actions()
    with pytest.raises(TypeError, match="TransportFailure"):
        link.engine.response_failed(request.exchange_id, "Illegal header value", link.now)  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(secret=secrets)
def test_C8_X4_the_engines_debug_trace_never_shows_secrets_arguments_or_results(secret: str) -> None:
    """C8, X4: the DEBUG trace (methods, ids, statuses, content types, session ids, sizes,
    timings) over a start, calls (SSE, polled and resumed, JSON), HTTP errors, a broken
    stream, an expired session, a timeout and close shows no header value, no URL query and
    no argument or result value (the fake server echoes the arguments as the result)."""
    from fake_peer import URL, FakeServer, Link, Reply
    from mcpcore import HttpClientEngine, SessionOptions

    server = FakeServer(polls=1)
    remote = RemoteServer(
        name="leak",
        url=f"{URL}?token={secret}",
        headers={"Authorization": f"Bearer {secret}", "X-Key": secret},
    )
    engine = HttpClientEngine(remote, options=SessionOptions(server_name="leak"))
    link = Link(engine, server)

    def call(arguments: dict[str, Any], timeout: float | None = None) -> None:
        engine.call("leak/echo", arguments, link.now, timeout=timeout)
        link.advance(3)

    with debug_records() as records:
        link.start()
        call({"text": secret})
        server.polls = 0
        server.json_response = True
        call({"nested": [secret]})
        server.hook = lambda seen: Reply(401, [(b"content-type", b"text/plain")], [b"no"]) if seen.message and seen.message.get("method") == "tools/call" else None
        call({"text": secret})
        server.hook = lambda seen: Reply(200, [(b"content-type", b"text/event-stream")], [], finish="fail") if seen.message and seen.message.get("method") == "tools/call" else None
        call({"text": secret})
        server.hook = None
        server.sessions.clear()
        call({"text": secret})
        server.hook = lambda seen: Reply(200, [(b"content-type", b"text/event-stream")], [], finish="stall") if seen.message and seen.message.get("method") == "tools/call" else None
        call({"text": secret}, timeout=1)
        engine.close(link.now)
        link.pump()
    assert any("HTTP 401" in text for text in records.texts)
    assert any("session id 'session-2'" in text for text in records.texts)
    assert leaks(secret, records.texts) == []
    assert any(secret in str(request.headers) for request in link.requests)  # really sent


# --- OAuth: every new path (A4, O64) --------------------------------------------------------------
# A whole conversation through HttpClientEngine with auth=, against the in-memory MCP server and
# authorization server of test_oauth_layer_props (OAuthWorld): the secrets are the client secret
# (registered, pre-registered or restored from the store), the authorization code, the access and
# refresh tokens (issued, or restored from the store, with a DPoP key's export: N1), the PKCE
# verifier and state, and a signed assertion. Only a request's Authorization header and body may
# hold them (not shown anywhere).

OAUTH_SCENARIOS = ["registered", "restored", "preregistered", "jwt"]


def _oauth_texts(world: Any, extra: list[object]) -> list[str]:
    """Everything the conversation showed: reprs of every action, event and error, the
    engine and its layer, the options, the records and the store, the availability."""
    engine = world.engine
    texts: list[str] = []
    for action in world.actions:
        texts += shown(action)
        if isinstance(action, SaveTokens):
            texts += shown(action.tokens)
        elif isinstance(action, SaveClient):
            texts += shown(action.client)
    for event in world.events:
        texts += shown(event)
        error = getattr(event, "error", None)
        if isinstance(error, BaseException):
            texts += [*shown(error), repr(vars(error))]
    availability = engine.availability
    texts += [*shown(availability), availability.reason or "" if availability else ""]
    error = getattr(availability, "error", None)
    if isinstance(error, BaseException):
        texts += [*shown(error), repr(vars(error))]
    layer = engine.auth
    texts += [repr(engine), repr(engine.http), repr(layer), repr(layer.flow)]
    texts.append(repr(layer.flow.config))
    texts += [repr(world.options), repr(world.store), repr(world.store.get_clients())]
    texts += [repr(world.store.get_tokens(engine.http.url)), repr(engine.session.last_error)]
    for value in extra:
        texts += shown(value)
    return texts


def _echo(form: dict[str, str], planted: list[str], turn: int) -> list[str]:
    """What a refusing server quotes: every value it was sent and the tokens it knows, each
    whole, turned by ``turn`` so that each comes first sometimes (error text is cut short)."""
    said = [v for k, v in form.items() if k not in ("grant_type", "redirect_uri", "resource")]
    items = [*said, *planted]
    turn %= len(items)
    return items[turn:] + items[:turn]


@settings(max_examples=30, deadline=None)
@given(
    access=secrets,
    refresh=secrets,
    client_secret=secrets,
    code=secrets,
    stored=secrets,
    signature=st.binary(min_size=16, max_size=32),
    scenario=st.sampled_from(OAUTH_SCENARIOS),
    method=st.sampled_from(["client_secret_post", "client_secret_basic"]),
    turn=st.integers(0, 9),
    in_code=st.booleans(),
)
def test_A4_C8_an_oauth_conversation_never_shows_a_secret(
    access: str,
    refresh: str,
    client_secret: str,
    code: str,
    stored: str,
    signature: bytes,
    scenario: str,
    method: str,
    turn: int,
    in_code: bool,
) -> None:
    """A4, C8, O64: 401 -> discovery -> registration -> the authorize hook's callback -> code
    exchange -> the call again with a Bearer token -> a later 401 -> a refresh -> a refused
    refresh (its error_description echoes every secret it was sent and the tokens) -> a new
    sign-in whose code exchange is refused the same way: no secret in any repr, error, event,
    availability or DEBUG record; only in the requests' Authorization headers and bodies."""
    # distinct secrets: no 12-character piece of one inside another
    distinct = [access, refresh, client_secret, code, stored]
    assume(all(not leaks(a, [b]) for a in distinct for b in distinct if a is not b))
    issued: dict[str, list[str]] = {"access": [], "refresh": []}

    def issue(kind: str, base: str) -> Any:
        def make(n: int) -> str:
            value = base if n == 1 else f"{base}{n}"
            issued[kind].append(value)
            return value

        return make

    kw: dict[str, Any] = {}
    if scenario == "restored":
        kw["tokens"] = TokenSet(
            access_token=stored + "A",
            refresh_token=stored + "R",
            expires_at=WALL + 3600,
            issuer=AS,
            token_endpoint=AS + "/token",
            resource=MCP,
            client_id="dyn-client",
            # N1: a DPoP key kept with the set (a private JWK): a secret like the tokens
            dpop_key_export=json.dumps({"kty": "EC", "crv": "P-256", "d": stored + "D"}),
        )
        kw["clients"] = (
            ClientRecord(
                client_id="dyn-client",
                client_secret=client_secret,
                auth_method=method,  # type: ignore[arg-type]
                redirect_uris=(REDIRECT,),
                issuer=AS,
            ),
        )
    elif scenario == "preregistered":
        kw["preregistered"] = PreRegisteredClient(
            client_id="pre-client",
            client_secret=client_secret,
            auth_method=method,  # type: ignore[arg-type]
        )
    elif scenario == "jwt":
        kw["preregistered"] = PreRegisteredClient(
            client_id="jwt-client", auth_method="private_key_jwt"
        )
        kw["grant"] = "client_credentials"
        kw["signature"] = signature
    world = OAuthWorld(
        access=issue("access", access),
        refresh=issue("refresh", refresh),
        client_secret=client_secret,
        code=code,
        auth_method=method,
        **kw,
    )
    # what the flow holds (or held) in this scenario: the server echoes those
    planted = [access, refresh]
    if scenario != "jwt":
        planted.append(client_secret)
    if scenario == "restored":
        planted += [stored + "A", stored + "R", stored + "D"]

    def refused(request: Any) -> Any:
        items = _echo(form(request), planted, turn)
        code = items[0] if in_code else "invalid_grant"  # the OAuth error code echoes too
        return js(400, {"error": code, "error_description": "invalid: " + " ".join(items)})

    with debug_records() as records:
        world.start()
        (first,) = world.outcomes(world.call())
        world.revoke_access()  # a later 401: a refresh
        (second,) = world.outcomes(world.call())
        world.revoke_access()  # and now the refresh is refused, echoing what it was sent
        world.refresh_reply = refused
        world.code_reply = refused
        (third,) = world.outcomes(world.call())
        world.close()
    # the conversation went where it should
    assert isinstance(first, CallSucceeded) and isinstance(second, CallSucceeded), (first, second)
    assert isinstance(third, CallFailed) and isinstance(third.error, TokenError), third
    assert "[redacted]" in str(third.error)
    bearers = [dict(r.headers).get(b"authorization", b"") for r in world.requests if r.url == MCP]
    assert f"Bearer {access}".encode() in bearers or scenario == "restored"  # really sent
    # the secrets: planted ones, every token issued, and what the flow made itself
    made = []
    for request in world.requests:
        values = form(request) if request.url == AS + "/token" else {}
        made += [values.get(k, "") for k in ("code_verifier", "client_assertion")]
    for opened in world.opened:
        made.append(parse_qs(urlsplit(opened.url).query)["state"][0])
    if scenario == "jwt":
        made.append(base64.urlsafe_b64encode(signature).rstrip(b"=").decode())
    everything = _oauth_texts(world, [world.options, world.preregistered, *world.clients])
    everything += records.texts
    secrets_held = [*planted, code, client_secret, *issued["access"], *issued["refresh"]]
    if scenario == "jwt":
        secrets_held.remove(client_secret)  # never held: not a secret of this conversation
        secrets_held.remove(code)  # no person, no code
    for secret in [*secrets_held, *(m for m in made if m)]:
        assert leaks(secret, everything) == [], secret


@settings(max_examples=20, deadline=None)
@given(
    access=secrets,
    refresh=secrets,
    client_secret=secrets,
    code=secrets,
    path=st.sampled_from(["denied", "reregister"]),
    turn=st.integers(0, 9),
)
def test_A4_C8_oauth_refusals_never_show_a_secret(
    access: str, refresh: str, client_secret: str, code: str, path: str, turn: int
) -> None:
    """A4, C8, O64, O39, O47: after a sign-in, the refresh is refused and the person is asked
    again; then either the authorization server's redirect is an error echoing the ``state``
    (AuthorizationDenied), or the code exchange says ``invalid_client`` and the registration
    made once more (O47) is refused, both echoing every secret they were sent or know
    (RegistrationError): the call's error, the events and the DEBUG trace show none."""
    distinct = [access, refresh, client_secret, code]
    assume(all(not leaks(a, [b]) for a in distinct for b in distinct if a is not b))
    world = OAuthWorld(
        access=lambda n: access if n == 1 else f"{access}{n}",
        refresh=lambda n: refresh if n == 1 else f"{refresh}{n}",
        client_secret=client_secret,
        code=code,
    )
    planted = [access, refresh, client_secret]
    states: list[str] = []

    def denied(action: Any) -> str:
        state = parse_qs(urlsplit(action.url).query)["state"][0]
        states.append(state)
        if len(states) == 1:
            return world.default_callback(action) or ""
        query = {"state": state, "error": state, "error_description": f"{state} {code}"}
        return action.redirect_uri + "?" + urlencode(query)

    def refused(status: int, error: str) -> Any:
        def reply(request: Any) -> Any:
            sent = form(request) if request.body and not request.body.startswith(b"{") else {}
            items = _echo(sent, [*planted, code], turn)
            return js(status, {"error": error, "error_description": "no: " + " ".join(items)})

        return reply

    if path == "denied":
        world.callback = denied
    with debug_records() as records:
        world.start()
        (first,) = world.outcomes(world.call())
        world.revoke_access()
        world.refresh_reply = js(400, {"error": "invalid_grant"})
        if path == "reregister":
            world.code_reply = refused(401, "invalid_client")
            world.routes[("POST", AS + "/register")] = refused(400, "invalid_client_metadata")
        (second,) = world.outcomes(world.call())
        world.close()
    assert isinstance(first, CallSucceeded), first
    assert isinstance(second, CallFailed), second
    kind = {"denied": "AuthorizationDenied", "reregister": "RegistrationError"}[path]
    assert type(second.error).__name__ == kind, second.error
    assert "[redacted]" in str(second.error), second.error
    made = [*states]
    for request in world.requests:
        if request.url == AS + "/token":
            made.append(form(request).get("code_verifier", ""))
    everything = _oauth_texts(world, [world.options]) + records.texts
    for secret in [*planted, code, *(m for m in made if m)]:
        assert leaks(secret, everything) == [], secret
