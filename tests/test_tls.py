"""TLS: verified by default; a custom ``ssl.SSLContext`` is honoured (issue 4).

A self-signed certificate (made with the ``openssl`` command) fronts the demo
server through a small TLS-terminating relay on loopback.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore_demo import DemoServer

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]
HANDSHAKE = 10.0  # the relay's bound on a client's TLS handshake and on its connect upstream


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


class TlsRelay:
    """Accepts TLS on a loopback port and relays plain bytes to ``target_port``."""

    def __init__(self, cert: Path, key: Path, target_port: int) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.handshakes_failed = 0
        self._lock = threading.Lock()
        self._closed = False
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            raw.settimeout(HANDSHAKE)  # a client that never handshakes holds no one up
            try:
                tls = self.context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                self.handshakes_failed += 1
                raw.close()
                continue
            tls.settimeout(None)
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), HANDSHAKE)
            except OSError:
                tls.close()
                continue
            upstream.settimeout(None)
            with self._lock:  # close() closes the pair, or it is closed here: never neither
                closed = self._closed
                if not closed:
                    self.sockets += [tls, upstream]
            if closed:  # accepted as close() began: its handshake ended after close's look
                tls.close()
                upstream.close()
                return
            for a, b in ((tls, upstream), (upstream, tls)):
                thread = threading.Thread(target=self._pipe, args=(a, b), daemon=True)
                thread.start()
                with self._lock:
                    self.threads.append(thread)

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
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self.listener.close()
        with self._lock:
            self._closed = True
            sockets = list(self.sockets)
        for s in sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.accepter.join(5)
        with self._lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(5)
        for s in sockets:
            s.close()


@pytest.fixture
def relay(certificate: tuple[Path, Path]) -> Iterator[TlsRelay]:
    with DemoServer(json_response=True).serve_in_thread() as running:
        relay = TlsRelay(*certificate, running.port)
        try:
            yield relay
        finally:
            relay.close()


async def test_tls_is_verified_by_default(driver: str, relay: TlsRelay) -> None:
    """A self-signed certificate is refused unless the host trusts it."""
    url = f"https://localhost:{relay.port}/mcp"
    async with open_client(driver, "tls", {"url": url}, listen=False) as client:
        with anyio.fail_after(20):
            availability = await client.ready(10)
    assert not availability.ok
    assert "certificate" in (availability.reason or "").lower()


async def test_custom_ssl_context_is_used(driver: str, relay: TlsRelay, certificate: tuple[Path, Path]) -> None:
    """ssl_context=...: a host-supplied context (here trusting the test CA) is used."""
    context = ssl.create_default_context(cafile=str(certificate[0]))
    url = f"https://localhost:{relay.port}/mcp"
    async with open_client(driver, "tls", {"url": url}, ssl_context=context, listen=False) as client:
        with anyio.fail_after(20):
            availability = await client.ready(10)
            assert availability.ok, availability.reason
            assert (await client.call("tls/echo", {"text": "over tls"})).text == "over tls"
