"""HTTP proxies: which proxy a URL goes through (the core's ``choose_proxy``, the one rule
every driver uses through ``prepare_client``: the proxy option, else ``https_proxy``/
``http_proxy`` then ``all_proxy`` from a given environment, with httpoxy, ``no_proxy`` and
loopback hosts direct), ``ProxyTarget``/``redact_proxy``, and both drivers' pools
(``connection_pool(..., proxy=...)``) and whole clients reaching the demo server through a
small proxy on loopback: https through a CONNECT tunnel, http forwarded. A proxy's password
shows in no error, repr or log, also when the proxy refuses it. The proxy is chosen per
origin: OAuth requests to an authorization server on another host go through that host's
proxy, not the MCP server's.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import logging
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpcore
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import AuthOptions, ConfigError, PreRegisteredClient
from mcpcore.config._setup import choose_proxy
from mcpcore_demo import DemoServer
from mcpcore_httpcore import ProxyTarget, body_end_arrived, redact_proxy

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0  # every socket of the test proxy; a test never waits longer on one

USER, PASSWORD = "alice", "pa:ss@wörd/5ecret"  # characters a URL must percent-encode
SECRETS = (
    PASSWORD,
    quote(PASSWORD, safe=""),
    base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
)

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "proxy-test", "version": "0"},
        },
    }
).encode()
HEADERS = [
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]


def with_credentials(proxy_url: str, password: str = PASSWORD) -> str:
    scheme, rest = proxy_url.split("://", 1)
    return f"{scheme}://{quote(USER, safe='')}:{quote(password, safe='')}@{rest}"


def assert_no_secret(*texts: object) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in str(text), f"a proxy secret shows in {text!r}"


# --- choosing the proxy: the core's choose_proxy -------------------------------------------


def test_the_environment_proxy_is_chosen_by_the_urls_scheme() -> None:
    env = {"HTTPS_PROXY": "http://tls-proxy:3128", "HTTP_PROXY": "http://plain-proxy:3128"}
    assert choose_proxy("https://example.com/mcp", env, None) == "http://tls-proxy:3128"
    assert choose_proxy("http://example.com/mcp", env, None) == "http://plain-proxy:3128"
    assert choose_proxy("https://example.com/mcp", {"HTTP_PROXY": "http://p:1"}, None) is None
    assert choose_proxy("https://example.com/mcp", {}, None) is None
    # the lowercase name wins (curl, urllib); an empty value is no proxy; no scheme is http
    both = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1"}
    assert choose_proxy("https://example.com/", both, None) == "http://lower:1"
    assert choose_proxy("https://example.com/", {"https_proxy": "  "}, None) is None
    # a lowercase name set empty turns off the uppercase one (urllib)
    off = {"https_proxy": "", "HTTPS_PROXY": "http://upper:1"}
    assert choose_proxy("https://example.com/", off, None) is None
    assert choose_proxy("https://example.com/", {"HTTPS_PROXY": "proxy:8080"}, None) == (
        "http://proxy:8080"
    )
    assert choose_proxy("https://example.com/", {"HTTPS_PROXY": " u:p@proxy:1 "}, None) == (
        "http://u:p@proxy:1"
    )
    # not a URL this client speaks: no proxy, the request fails on its own
    assert choose_proxy("ftp://example.com/", {"FTP_PROXY": "http://p:1"}, None) is None
    assert choose_proxy("ftp://example.com/", {"ALL_PROXY": "http://p:1"}, None) is None
    assert choose_proxy("https://example.com:port/", {"HTTPS_PROXY": "http://p:1"}, None) is None
    assert choose_proxy("https:///mcp", {"HTTPS_PROXY": "http://p:1"}, None) is None


def test_all_proxy_is_the_fallback_for_both_schemes() -> None:
    every = {"ALL_PROXY": "http://all:1"}
    assert choose_proxy("https://example.com/", every, None) == "http://all:1"
    assert choose_proxy("http://example.com/", every, None) == "http://all:1"
    # the scheme's own variable first; the lowercase all_proxy before ALL_PROXY
    assert choose_proxy("https://example.com/", {**every, "HTTPS_PROXY": "http://s:1"}, None) == (
        "http://s:1"
    )
    assert choose_proxy("https://example.com/", {**every, "all_proxy": "http://a:1"}, None) == (
        "http://a:1"
    )
    # an empty scheme variable gives no proxy of its own: all_proxy still applies
    assert choose_proxy("https://example.com/", {**every, "https_proxy": ""}, None) == (
        "http://all:1"
    )
    # NO_PROXY and the checks apply to it too, naming it
    assert choose_proxy("https://example.com/", {**every, "NO_PROXY": "example.com"}, None) is None
    with pytest.raises(ConfigError, match="ALL_PROXY"):
        choose_proxy("https://example.com/", {"ALL_PROXY": "socks5://p:1"}, None)


def test_httpoxy_a_cgi_programs_HTTP_PROXY_is_ignored() -> None:
    """Under CGI a request's ``Proxy:`` header lands in HTTP_PROXY: only http_proxy counts."""
    cgi = {"REQUEST_METHOD": "GET", "HTTP_PROXY": "http://attacker:1"}
    assert choose_proxy("http://example.com/", cgi, None) is None
    assert choose_proxy("http://example.com/", {**cgi, "http_proxy": "http://ok:1"}, None) == (
        "http://ok:1"
    )
    # all_proxy is no request header's: it still applies; so does HTTPS_PROXY for https
    assert choose_proxy("http://example.com/", {**cgi, "ALL_PROXY": "http://all:1"}, None) == (
        "http://all:1"
    )
    assert choose_proxy("https://example.com/", {**cgi, "HTTPS_PROXY": "http://s:1"}, None) == (
        "http://s:1"
    )
    # outside CGI HTTP_PROXY is read as usual
    assert choose_proxy("http://example.com/", {"HTTP_PROXY": "http://p:1"}, None) == "http://p:1"


def test_an_explicit_proxy_or_none_wins_over_the_environment() -> None:
    env = {"HTTPS_PROXY": "http://env-proxy:3128", "NO_PROXY": "example.com"}
    assert choose_proxy("https://example.com/", env, "http://mine:8080") == "http://mine:8080"
    assert choose_proxy("https://example.com/", env, "mine:8080") == "http://mine:8080"
    assert choose_proxy("https://other.org/", env, "") is None  # "" is no proxy
    with pytest.raises(TypeError):
        choose_proxy("https://other.org/", env, False)  # type: ignore[arg-type]


def test_loopback_hosts_go_direct_unless_the_proxy_is_explicit() -> None:
    """As Go's ProxyFromEnvironment: the environment's proxy never serves a loopback host."""
    env = {"HTTPS_PROXY": "http://p:1", "HTTP_PROXY": "http://p:1", "ALL_PROXY": "http://p:1"}
    for url in (
        "http://localhost:8000/mcp",
        "https://LOCALHOST./mcp",
        "http://127.0.0.1:8000/mcp",
        "http://127.1.2.3/mcp",
        "http://[::1]:8000/mcp",
    ):
        assert choose_proxy(url, env, None) is None, url
        assert choose_proxy(url, env, "http://mine:1") == "http://mine:1", url
    # names are not resolved, and a name is not an address
    for url in ("http://127.example.com/", "http://localhost.example.com/", "http://[::2]/"):
        assert choose_proxy(url, env, None) == "http://p:1", url


@pytest.mark.parametrize(
    ("no_proxy", "url", "bypassed"),
    [
        ("*", "https://anything.example/", True),
        ("example.com", "https://example.com/mcp", True),
        ("example.com", "https://api.example.com/mcp", True),  # a host suffix
        ("example.com", "https://badexample.com/mcp", False),  # not a label boundary
        ("ample.com", "https://api.example.com/mcp", False),
        (".example.com", "https://api.example.com/", True),
        (".example.com", "https://example.com/", True),
        ("*.example.com", "https://a.b.example.com/", True),
        ("EXAMPLE.com.", "https://Example.COM/", True),  # case and a trailing dot
        ("example.com", "https://example.com./", True),  # the host's trailing dot
        ("example.com:8443", "https://example.com:8443/", True),  # host:port
        ("example.com:8443", "https://example.com/", False),  # 443 is another port
        ("example.com:443", "https://example.com/", True),  # the scheme's default port
        ("example.com:80", "http://example.com/", True),
        ("example.com:x", "https://example.com/", False),  # a malformed entry matches nothing
        ("other.org, example.com", "https://example.com/", True),
        ("other.org example.com", "https://example.com/", True),  # spaces separate too
        ("other.org,,", "https://example.com/", False),
        ("192.0.2.1", "http://192.0.2.1:8000/mcp", True),
        ("192.0.2.1:9000", "http://192.0.2.1:8000/mcp", False),
        ("10.0.0.0/8", "https://10.1.2.3/", True),
        ("10.0.0.0/8", "https://11.1.2.3/", False),
        ("10.0.0.0/8", "https://ten.example/", False),
        ("10.0.0.0/8:443", "https://10.1.2.3/", True),
        ("::/0", "https://10.1.2.3/", False),  # an IPv6 network holds no IPv4 address
        ("2001:db8::1", "http://[2001:db8::1]:8000/", True),
        ("2001:DB8:0:0::1", "http://[2001:db8::1]/", True),  # compared as addresses
        ("[2001:db8::1]", "http://[2001:db8::1]:8000/", True),
        ("[2001:db8::1]:8000", "http://[2001:db8::1]:8000/", True),
        ("[2001:db8::1]:8001", "http://[2001:db8::1]:8000/", False),
        ("fd00::/8", "https://[fd12::1]/", True),
        ("router.example", "http://192.0.2.1/", False),  # names are not resolved
        ("192.0.2.1", "http://router.example/", False),
        ("", "https://example.com/", False),
    ],
)
def test_NO_PROXY(no_proxy: str, url: str, bypassed: bool) -> None:
    for name in ("NO_PROXY", "no_proxy"):
        env = {"HTTPS_PROXY": "http://p:1", "HTTP_PROXY": "http://p:1", name: no_proxy}
        assert (choose_proxy(url, env, None) is None) == bypassed, (name, no_proxy, url)


def test_the_lowercase_no_proxy_wins() -> None:
    env = {"HTTPS_PROXY": "http://p:1", "no_proxy": "other.org", "NO_PROXY": "example.com"}
    assert choose_proxy("https://example.com/", env, None) == "http://p:1"
    env = {"HTTPS_PROXY": "http://p:1", "no_proxy": "", "NO_PROXY": "example.com"}
    assert choose_proxy("https://example.com/", env, None) == "http://p:1"


def test_a_bad_proxy_url_fails_early_and_without_its_password() -> None:
    for bad in (
        with_credentials("socks5://proxy:1080"),
        with_credentials("http://proxy:port"),
        with_credentials("http://proxy:8080/some/path"),
        with_credentials("http://proxy:8080") + "?q",
        with_credentials("http://[::1"),
        f"http://{USER}:{quote(PASSWORD, safe='')}@",
        f"{USER}:{quote(PASSWORD, safe='')}@",  # no scheme: http://, but no host
    ):
        for call, origin in (
            (lambda proxy: choose_proxy("https://example.com/", {}, proxy), "proxy option"),
            (
                lambda proxy: choose_proxy("https://example.com/", {"HTTPS_PROXY": proxy}, None),
                "HTTPS_PROXY",
            ),
            (
                lambda proxy: choose_proxy("http://example.com/", {"all_proxy": proxy}, None),
                "all_proxy",
            ),
        ):
            with pytest.raises(ConfigError) as caught:
                call(bad)
            assert caught.value.key == "proxy"
            assert origin in str(caught.value), (bad, caught.value)
            assert "@" not in str(caught.value)  # not even a redacted copy: no text at all
            assert_no_secret(caught.value, repr(caught.value), caught.value.__context__)
        if "://" in bad:  # what the drivers' pools do with a proxy URL
            with pytest.raises(ValueError) as raised:
                ProxyTarget(bad)
            assert_no_secret(raised.value, repr(raised.value))
            assert "***@" in str(raised.value) or "@" not in str(raised.value)


def test_a_proxy_url_is_split_into_a_bare_url_and_credentials() -> None:
    target = ProxyTarget(with_credentials("http://Proxy.example:3128"))
    assert target.url == "http://proxy.example:3128"
    assert target.auth == (USER.encode(), PASSWORD.encode())
    assert_no_secret(repr(target))
    assert ProxyTarget("https://proxy.example").url == "https://proxy.example:443"
    assert ProxyTarget("http://[::1]").url == "http://[::1]:80"
    assert ProxyTarget("http://proxy:1/").auth is None
    assert redact_proxy(with_credentials("http://proxy:3128")) == "http://***@proxy:3128"
    assert redact_proxy("proxy:3128") == "proxy:3128"


# --- a proxy on loopback --------------------------------------------------------------------


def _read_head(sock: socket.socket, buffer: bytearray) -> bytes | None:
    """The next message head from ``sock`` (``buffer`` keeps what came after it)."""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            return None
        buffer += data
        if len(buffer) > 65536:
            return None
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    buffer[:] = rest
    return head


def _close_quietly(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


class LoopbackProxy:
    """An HTTP proxy on a free loopback port, a thread per connection and direction.

    ``CONNECT host:port`` opens a tunnel; a request with an absolute URL is forwarded
    (sent on in origin form, without the ``Proxy-*`` headers). With ``credentials`` every
    request must carry them in ``Proxy-Authorization`` (Basic), or gets 407 and the
    connection closes. ``seen`` lists what each request asked for. ``hosts`` maps
    names that exist only for the proxy (``auth.example.test``) to real addresses.
    """

    def __init__(
        self,
        credentials: tuple[str, str] | None = None,
        hosts: dict[str, str] | None = None,
    ) -> None:
        self.hosts = hosts or {}
        self.expected_auth = (
            None
            if credentials is None
            else b"Basic " + base64.b64encode(":".join(credentials).encode())
        )
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.seen: list[str] = []
        self.forwarded_headers: list[dict[bytes, bytes]] = []
        self.refused = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _track(self, sock: socket.socket) -> socket.socket:
        sock.settimeout(TIMEOUT)
        with self._lock:
            self._sockets.append(sock)
        return sock

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self._spawn(self._serve, self._track(client))

    def _serve(self, client: socket.socket) -> None:
        buffer = bytearray()
        upstream: socket.socket | None = None
        try:
            while (head := _read_head(client, buffer)) is not None:
                line, *fields = head.split(b"\r\n")
                method, target, version = line.split(b" ", 2)
                headers = {}
                for field in fields:
                    name, _, value = field.partition(b":")
                    headers[name.strip().lower()] = value.strip()
                self.seen.append(f"{method.decode()} {target.decode()}")
                if (
                    self.expected_auth is not None
                    and headers.get(b"proxy-authorization") != self.expected_auth
                ):
                    self.refused += 1
                    client.sendall(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\n'
                        b"Content-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                    return
                if method == b"CONNECT":
                    host, _, port = target.decode().rpartition(":")
                    host = self.hosts.get(host, host)
                    upstream = self._track(socket.create_connection((host, int(port)), TIMEOUT))
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    if buffer:
                        upstream.sendall(buffer)
                    self._spawn(self._pipe, upstream, client)
                    self._pipe(client, upstream)
                    return
                # forwarding: http://host:port/path -> /path to host:port
                assert target.startswith(b"http://"), target
                authority, _, path = target[len(b"http://") :].partition(b"/")
                if upstream is None:
                    host, _, port = authority.decode().rpartition(":")
                    host = self.hosts.get(host, host)
                    upstream = self._track(socket.create_connection((host, int(port)), TIMEOUT))
                    self._spawn(self._pipe, upstream, client)
                kept = [f for f in fields if not f.lower().startswith(b"proxy-")]
                self.forwarded_headers.append(
                    {k: v for k, v in headers.items() if not k.startswith(b"proxy-")}
                )
                length = int(headers.get(b"content-length", b"0"))
                while len(buffer) < length:
                    data = client.recv(65536)
                    if not data:
                        return
                    buffer += data
                body, buffer[:] = bytes(buffer[:length]), buffer[length:]
                upstream.sendall(
                    b"\r\n".join([b" ".join([method, b"/" + path, version]), *kept])
                    + b"\r\n\r\n"
                    + body
                )
        except (OSError, ValueError):
            pass
        finally:
            _close_quietly(client)
            if upstream is not None:
                _close_quietly(upstream)

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        _close_quietly(self.listener)  # wakes the accept()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for s in sockets:
            _close_quietly(s)
        for thread in threads:
            thread.join(TIMEOUT)
        assert not any(thread.is_alive() for thread in threads)


@pytest.fixture
def proxy() -> Iterator[LoopbackProxy]:
    running = LoopbackProxy()
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def guarded_proxy() -> Iterator[LoopbackProxy]:
    running = LoopbackProxy(credentials=(USER, PASSWORD))
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("proxy-tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


class TlsFront:
    """TLS on a loopback port, relayed as plain bytes to ``target_port``."""

    def __init__(self, cert: Path, key: Path, target_port: int) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    def _start(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            raw.settimeout(TIMEOUT)
            try:
                tls = self.context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), TIMEOUT)
            except OSError:
                tls.close()
                continue
            with self._lock:  # close() closes the pair, or it is closed here: never neither
                closed = self._closed
                if not closed:
                    self._sockets += [tls, upstream]
            if closed:  # accepted as close() began: its handshake ended after close's look
                tls.close()
                upstream.close()
                return
            self._start(LoopbackProxy._pipe, tls, upstream)
            self._start(LoopbackProxy._pipe, upstream, tls)

    def close(self) -> None:
        _close_quietly(self.listener)
        with self._lock:
            self._closed = True
            sockets = list(self._sockets)
        for s in sockets:
            _close_quietly(s)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(TIMEOUT)


@pytest.fixture(params=[False, True], ids=["json", "sse"])
def demo(request: pytest.FixtureRequest) -> Iterator[Any]:
    with DemoServer(json_response=request.param is False).serve_in_thread() as running:
        yield running


@pytest.fixture
def tls_demo(certificate: tuple[Path, Path]) -> Iterator[tuple[str, ssl.SSLContext]]:
    with DemoServer(json_response=True).serve_in_thread() as running:
        front = TlsFront(*certificate, running.port)
        try:
            context = ssl.create_default_context(cafile=str(certificate[0]))
            yield f"https://127.0.0.1:{front.port}/mcp", context
        finally:
            front.close()


# --- requests through it, on both drivers' pools ------------------------------------------------


def threaded_initialize(
    url: str, proxy: str, ssl_context: ssl.SSLContext | None = None
) -> tuple[int, bytes, bool]:
    """One ``initialize`` POST through the threaded driver's pool: status, body, and whether
    the driver's stream saw the body's end."""
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool, ends_without_waiting

    with connection_pool(ssl_context, 4, _Performing(), proxy=proxy) as pool:
        with pool.stream("POST", url, headers=HEADERS, content=INITIALIZE) as response:
            body = b"".join(response.iter_stream())
            # once it is all read, its end was seen on the stream, through the proxy too
            return response.status, body, ends_without_waiting(response, len(body))


async def anyio_initialize(
    url: str, proxy: str, ssl_context: ssl.SSLContext | None = None
) -> tuple[int, bytes, bool]:
    """The same through the anyio driver's pool (on the running backend)."""
    from mcpcore_anyio._network import connection_pool, ends_without_waiting

    async with connection_pool(ssl_context, 4, proxy=proxy) as pool:
        async with pool.stream("POST", url, headers=HEADERS, content=INITIALIZE) as response:
            body = b""
            async for chunk in response.aiter_stream():
                body += chunk
            # once it is all read, its end was seen on the stream, through the proxy too
            return response.status, body, ends_without_waiting(response, len(body))


def initialized(status: int, body: bytes) -> None:
    assert status == 200, body
    text = body.decode()
    if not text.startswith("{"):  # an SSE stream: its one message (after a priming event)
        text = next(
            line[len("data: ") :] for line in text.splitlines() if line.startswith("data: {")
        )
    assert json.loads(text)["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_http_is_forwarded_through_the_proxy_on_the_anyio_pool(
    proxy: LoopbackProxy, demo: Any, anyio_backend: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        status, body, ended = await anyio_initialize(demo.url, proxy.url)
    initialized(status, body)
    assert ended  # its end arrived, seen through the proxy as well
    assert proxy.seen == [f"POST {demo.url}"]
    assert [r.rpc_method for r in demo.server.received] == ["initialize"]


async def test_http_is_forwarded_through_the_proxy_on_the_threaded_pool(
    proxy: LoopbackProxy, demo: Any
) -> None:
    with anyio.fail_after(TIMEOUT):
        status, body, ended = await anyio.to_thread.run_sync(
            threaded_initialize, demo.url, proxy.url
        )
    initialized(status, body)
    assert ended
    assert proxy.seen == [f"POST {demo.url}"]
    assert [r.rpc_method for r in demo.server.received] == ["initialize"]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_https_goes_through_a_CONNECT_tunnel_on_the_anyio_pool(
    guarded_proxy: LoopbackProxy, tls_demo: tuple[str, ssl.SSLContext], anyio_backend: str
) -> None:
    url, context = tls_demo
    with anyio.fail_after(TIMEOUT):
        status, body, _ = await anyio_initialize(url, with_credentials(guarded_proxy.url), context)
    initialized(status, body)
    assert guarded_proxy.seen == [f"CONNECT {url.split('/')[2]}"]
    assert guarded_proxy.refused == 0


async def test_https_goes_through_a_CONNECT_tunnel_on_the_threaded_pool(
    guarded_proxy: LoopbackProxy, tls_demo: tuple[str, ssl.SSLContext]
) -> None:
    url, context = tls_demo
    with anyio.fail_after(TIMEOUT):
        status, body, _ = await anyio.to_thread.run_sync(
            threaded_initialize, url, with_credentials(guarded_proxy.url), context
        )
    initialized(status, body)
    assert guarded_proxy.seen == [f"CONNECT {url.split('/')[2]}"]
    assert guarded_proxy.refused == 0


async def test_forwarded_requests_carry_the_credentials_to_the_proxy_only(
    guarded_proxy: LoopbackProxy, demo: Any
) -> None:
    with anyio.fail_after(TIMEOUT):
        status, body, _ = await anyio_initialize(demo.url, with_credentials(guarded_proxy.url))
    initialized(status, body)
    assert guarded_proxy.refused == 0
    for received in demo.server.received:
        assert "proxy-authorization" not in received.headers
        assert_no_secret(received.headers)


def _check_refusal(exc: BaseException, pool_repr: str, caplog: pytest.LogCaptureFixture) -> None:
    chain: list[object] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 20:
        chain += [seen, repr(seen), seen.args]
        seen = seen.__cause__ or seen.__context__
    assert_no_secret(*chain, pool_repr, caplog.text)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_refused_password_shows_nowhere_anyio(
    guarded_proxy: LoopbackProxy,
    tls_demo: tuple[str, ssl.SSLContext],
    caplog: pytest.LogCaptureFixture,
    anyio_backend: str,
) -> None:
    from mcpcore_anyio._network import connection_pool

    url, context = tls_demo
    caplog.set_level(logging.DEBUG)
    wrong = with_credentials(guarded_proxy.url, PASSWORD + "-wrong")
    with anyio.fail_after(TIMEOUT):
        async with connection_pool(context, 4, proxy=wrong) as pool:
            with pytest.raises(httpcore.ProxyError) as caught:
                await pool.request("POST", url, headers=HEADERS, content=INITIALIZE)
            pool_repr = f"{pool!r} {pool.connections!r}"
    assert "407" in str(caught.value)
    assert guarded_proxy.refused == 1
    _check_refusal(caught.value, pool_repr, caplog)
    for secret in SECRETS:
        assert secret + "-wrong" not in caplog.text


async def test_a_refused_password_shows_nowhere_threaded(
    guarded_proxy: LoopbackProxy,
    tls_demo: tuple[str, ssl.SSLContext],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool

    url, context = tls_demo
    caplog.set_level(logging.DEBUG)
    wrong = with_credentials(guarded_proxy.url, PASSWORD + "-wrong")

    def attempt() -> tuple[BaseException, str]:
        with connection_pool(context, 4, _Performing(), proxy=wrong) as pool:
            try:
                pool.request("POST", url, headers=HEADERS, content=INITIALIZE)
            except httpcore.ProxyError as exc:
                return exc, f"{pool!r} {pool.connections!r}"
        raise AssertionError("the proxy let the request through")

    with anyio.fail_after(TIMEOUT):
        exc, pool_repr = await anyio.to_thread.run_sync(attempt)
    assert "407" in str(exc)
    assert guarded_proxy.refused == 1
    _check_refusal(exc, pool_repr, caplog)


async def test_a_proxy_that_is_not_there_fails_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcpcore_anyio._network import connection_pool

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(TIMEOUT):
        async with connection_pool(None, 4, proxy=with_credentials(gone)) as pool:
            with pytest.raises(httpcore.ConnectError) as caught:
                await pool.request("POST", "https://example.invalid/mcp", content=b"{}")
    _check_refusal(caught.value, repr(pool), caplog)


def test_a_bad_proxy_fails_when_the_pool_is_made() -> None:
    from mcpcore_anyio._network import connection_pool as anyio_pool
    from mcpcore_threaded._client import _Performing
    from mcpcore_threaded._network import connection_pool as threaded_pool

    for make in (
        lambda proxy: anyio_pool(None, 4, proxy=proxy),
        lambda proxy: threaded_pool(None, 4, _Performing(), proxy=proxy),
    ):
        with pytest.raises(ValueError) as caught:
            make(with_credentials("socks5://p:1"))
        assert_no_secret(caught.value)
        assert_no_secret(repr(make(with_credentials("http://p:1"))))


def test_body_end_arrived_goes_by_content_length_without_a_stream() -> None:
    class Bare:  # the in-process ASGI response: headers, no extensions
        def __init__(self, headers: list[tuple[bytes, bytes]]) -> None:
            self.headers = headers

    assert body_end_arrived(Bare([(b"Content-Length", b"10")]), 10) is True
    assert body_end_arrived(Bare([(b"Content-Length", b"10")]), 9) is False
    assert body_end_arrived(Bare([]), 9) is None


class HeldServer:
    """Answers ``ok`` to each request once ``release`` is set (a thread per connection)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/"
        self.requests = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._start(self._accept)

    def _start(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.settimeout(TIMEOUT)
            self._sockets.append(conn)
            self._start(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        try:
            while _read_head(conn, buffer) is not None:
                self.requests += 1
                self.release.wait(TIMEOUT)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.release.set()
        _close_quietly(self.listener)
        for s in list(self._sockets):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in list(self._threads):
            thread.join(TIMEOUT)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_requests_cancelled_through_the_proxy_leave_the_pool_usable(
    proxy: LoopbackProxy, anyio_backend: str
) -> None:
    """Cancelled while the proxy's pool holds their connections (waiting for the answer),
    or while waiting for one: afterwards every connection is free again."""
    from mcpcore_anyio._network import connection_pool

    held = HeldServer()
    try:
        with anyio.fail_after(TIMEOUT):
            async with connection_pool(None, 2, proxy=proxy.url) as pool:
                for _ in range(3):
                    async with anyio.create_task_group() as tasks:
                        for _ in range(4):  # two on the connections, two waiting for one
                            tasks.start_soon(pool.request, "GET", held.url)
                        while held.requests < 2:
                            await anyio.sleep(0.005)
                        await anyio.sleep(0.02)
                        tasks.cancel_scope.cancel()
                    held.requests = 0
                held.release.set()
                for _ in range(4):
                    assert (await pool.request("GET", held.url)).content == b"ok"
                assert len(pool.connections) <= 2
    finally:
        held.close()


# --- through a whole client: the proxy= option (C5) -------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_C5_a_client_with_proxy_goes_through_it_on_every_driver(driver: str) -> None:
    """The core chooses the proxy (proxy=, else the environment; loopback direct unless
    given explicitly); every driver's requests then go through it."""
    from mcpcore_demo import DemoServer

    async def conversation(url: str, proxy_url: str) -> str:
        async with open_client(driver, "demo", {"url": url}, proxy=proxy_url) as client:
            with anyio.fail_after(TIMEOUT):
                assert (await client.ready(10)).ok
                return (await client.call("demo/echo", {"text": "via proxy"})).text

    running_proxy = LoopbackProxy()
    try:
        with DemoServer().serve_in_thread() as running:
            text = anyio.run(
                conversation, running.url, running_proxy.url, backend=backend_of(driver)
            )
        assert text == "via proxy"
        assert f"POST {running.url}" in running_proxy.seen
    finally:
        running_proxy.close()


# --- OAuth through the proxy chosen for the authorization server's host ------------------------


class _Scripted(http.server.BaseHTTPRequestHandler):
    """One request of a scripted server: ``self.server.answer`` gives the reply."""

    def _reply(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        status, headers, content = self.server.answer(self, body)  # type: ignore[attr-defined]
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_DELETE = _reply

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _scripted_server(answer: Any) -> Iterator[str]:
    """A server on a free loopback port answering with ``answer(handler, body)``;
    its base URL. Each connection closes after its response (HTTP/1.0)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.daemon_threads = False  # server_close() joins every handler thread
    server.answer = answer  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)


def _json_reply(doc: Any, status: int = 200) -> tuple[int, list[tuple[str, str]], bytes]:
    return status, [("content-type", "application/json")], json.dumps(doc).encode()


@pytest.mark.parametrize("driver", DRIVERS)
def test_C5_oauth_requests_go_through_the_proxy_chosen_for_the_authorization_servers_host(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server is on loopback (direct); its authorization server is on a host
    only the proxy can reach (``HTTP_PROXY``): discovery and the token request go
    through the proxy, the MCP requests do not."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "NO_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    fake_as = "auth.example.test"

    def authorization_server(handler: Any, body: bytes) -> Any:
        issuer = f"http://{fake_as}:{handler.server.server_address[1]}"
        if handler.path == "/.well-known/oauth-authorization-server":
            return _json_reply(
                {
                    "issuer": issuer,
                    "authorization_endpoint": issuer + "/authorize",
                    "token_endpoint": issuer + "/token",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post"],
                }
            )
        if handler.path == "/token" and b"grant_type=client_credentials" in body:
            return _json_reply({"access_token": "good", "token_type": "Bearer"})
        return _json_reply({"error": "not_found"}, 404)

    def mcp_server(handler: Any, body: bytes) -> Any:
        base = f"http://127.0.0.1:{handler.server.server_address[1]}"
        if handler.path == "/.well-known/oauth-protected-resource/mcp":
            return _json_reply({"resource": base + "/mcp", "authorization_servers": [as_issuer]})
        if handler.headers.get("authorization") != "Bearer good":
            challenge = (
                f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
            )
            return 401, [("www-authenticate", challenge)], b""
        if handler.command != "POST":
            return 405, [], b""
        message = json.loads(body)
        if "id" not in message:
            return 202, [], b""
        result: dict[str, Any] = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        if message["method"] == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "gate", "version": "1"},
            }
        return _json_reply({"jsonrpc": "2.0", "id": message["id"], "result": result})

    async def conversation(url: str) -> list[str]:
        auth = AuthOptions(
            grant="client_credentials",
            client=PreRegisteredClient(client_id="c", client_secret="s3cret-value"),
            allow_insecure_http=True,
        )
        async with open_client(
            driver, "gate", {"url": url}, auth=auth, listen=False, protocol="legacy"
        ) as client:
            with anyio.fail_after(TIMEOUT):
                status = await client.ready(10)
                assert status.ok, status
                return [tool.name for tool in client.tools]

    with _scripted_server(authorization_server) as as_url:
        as_port = as_url.rpartition(":")[2]
        as_issuer = f"http://{fake_as}:{as_port}"
        running_proxy = LoopbackProxy(hosts={fake_as: "127.0.0.1"})
        try:
            monkeypatch.setenv("HTTP_PROXY", running_proxy.url)
            with _scripted_server(mcp_server) as mcp_url:
                names = anyio.run(conversation, mcp_url + "/mcp", backend=backend_of(driver))
        finally:
            running_proxy.close()
    assert names and names[0].endswith("echo")
    assert f"GET {as_issuer}/.well-known/oauth-authorization-server" in running_proxy.seen
    assert f"POST {as_issuer}/token" in running_proxy.seen
    assert not [seen for seen in running_proxy.seen if "127.0.0.1" in seen]  # MCP: direct


def test_C5_the_core_chooses_the_proxy_per_origin() -> None:
    """``OutboundPolicy.proxy_for_origin``: what each driver's pool asks per origin."""
    from mcpcore.wire._outbound import OutboundPolicy

    env = {"HTTPS_PROXY": "http://corp:3128", "NO_PROXY": "mcp.example", "PATH": "/bin"}
    policy = OutboundPolicy.for_server("https://mcp.example/mcp", env=env)
    assert policy.proxies_possible and "PATH" not in policy.env
    assert policy.proxy_for_origin("https", "mcp.example", 443) is None  # NO_PROXY
    assert policy.proxy_for_origin("https", "auth.example", 443) == "http://corp:3128"
    assert policy.proxy_for_origin("https", "127.0.0.1", 8443) is None  # loopback: direct
    assert policy.proxy_for_origin("http", "auth.example", 80) is None  # no HTTP_PROXY
    explicit = OutboundPolicy.for_server("https://mcp.example/mcp", env=env, proxy="http://p:1")
    assert explicit.proxy_for_origin("https", "::1", 443) == "http://p:1"
    assert not OutboundPolicy.for_server(
        "https://mcp.example/mcp", env=env, proxy=""
    ).proxies_possible
    assert not OutboundPolicy.for_server("https://x/", env={"NO_PROXY": "*"}).proxies_possible
    assert_no_secret(
        repr(OutboundPolicy.for_server("https://x/", proxy=with_credentials("http://p:1")))
    )
