"""C8: secrets never leak — a property over random secrets and every error path.

Random secrets (a distinctive alphabet, 15+ characters) go into header values
(literal and through ``${env:NAME}``), environment values and URL query
strings. Then every error path is driven: config errors (bad header names and
values, client-owned headers, bad URLs built from the environment, unset
variables, reserved local env keys), and, live on both drivers, a successful
exchange, HTTP 401/500 (the server's bodies do not echo headers), a call
timeout, an unauthorised handshake, a refused connection and a refused entry,
all with DEBUG logging on the ``mcpcore`` logger.

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
    LocalServer,
    McpError,
    RemoteServer,
    TransportError,
    Unavailable,
    load_mcp_json,
    parse_server,
)
from mcpcore._events import HttpRequest
from mcpcore._http import HttpMapping
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

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
    env = {"S": secret, "CRLF": f"{secret}\r\nX-Evil: 1", "NUL": f"a\x00{secret}"}
    ok = "https://example.com/mcp"
    return [
        ({"url": ok, "headers": {"bad name": secret}}, env, False),
        ({"url": ok, "headers": {"bad name": "${env:S}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": f"{secret}\r\nX-Evil: 1"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:CRLF}"}}, env, False),
        ({"url": ok, "headers": {"X-Key": "${env:NUL}"}}, env, False),
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


@settings(max_examples=100, deadline=None)
@given(secret=secrets)
def test_C8_http_requests_never_show_header_values(secret: str) -> None:
    """C8: the engine's request actions show header names only."""
    from mcpcore._jsonrpc import Request

    mapping = HttpMapping("https://example.com/mcp?k=" + secret, [("Authorization", f"Bearer {secret}")])
    mapping.send(Request(id=1, method="initialize", params={}))
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
        # An unauthorised handshake; a refused connection; a refused entry.
        for url in (base + "?mode=init401&token=${env:" + ENV_NAME + "}", f"http://127.0.0.1:{free_port()}/mcp{query}"):
            async with open_client(driver, "leak", {"url": url, "headers": headers}) as client:
                availability = await client.ready(10)
                assert not availability.ok
                texts += [repr(client.client), availability.reason or "", repr(availability)]
                with pytest.raises(Unavailable) as unavailable:
                    await client.call("leak/echo", {"text": "x"})
                texts += shown(unavailable.value)
        for bad in ({"url": base, "headers": {"bad name": literal}}, {"url": "ftp://${env:" + ENV_NAME + "}/x"}):
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


def test_C8_errors_are_mcp_errors_with_safe_text() -> None:
    """The hierarchy used above: every error raised on these paths is an McpError."""
    for kind in (TransportError, CallTimeout, Unavailable, ConfigError):
        assert issubclass(kind, McpError)
