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

Nowhere may the secret, or any 12-character piece of it, appear: exception
text and ``repr``, ``repr`` of clients, servers, requests and tools,
availability reasons, log records.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    CallTimeout,
    ConfigError,
    FailureKind,
    LocalServer,
    RemoteServer,
    TransportError,
    TransportFailure,
    Unavailable,
    load_mcp_json,
    parse_server,
)
from mcpcore._events import HttpRequest
from mcpcore._http import HttpMapping
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest
from raw_servers import close_at_once, garbage, reset, socket_server

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
    from mcpcore._setup import prepare_client

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
    from mcpcore._jsonrpc import Request

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
