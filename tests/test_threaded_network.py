"""The threaded driver's network stream (``mcpcore_threaded._network.AbortableStream``) on a
socket pair: a request's writes go out together on the read that follows, the socket's
timeout is set only when it changes, failures map to httpcore's errors, an abort before a
read fails it; through its backend, on a TCP connection, TLS on it and TLS inside an https
proxy's TLS. (Every threaded driver test runs over it against real servers as well, TLS
included; tests/test_deadlines.py aborts it at every stage, D1.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpcore
import pytest

from mcpcore_httpcore import COALESCE_LIMIT, BodyEnd
from mcpcore_threaded._client import _Abort, _Performing
from mcpcore_threaded._network import AbortableBackend, AbortableStream


class CountingSocket(socket.socket):
    """A socket that counts the system calls the stream makes on it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.sends = 0
        self.timeouts_set = 0

    def sendall(self, data: object, flags: int = 0) -> None:  # type: ignore[override]
        self.sends += 1
        super().sendall(data, flags)  # type: ignore[arg-type]

    def send(self, data: object, flags: int = 0) -> int:  # type: ignore[override]
        self.sends += 1
        return super().send(data, flags)  # type: ignore[arg-type]

    def settimeout(self, value: float | None) -> None:
        self.timeouts_set += 1
        super().settimeout(value)


@pytest.fixture
def pair() -> Iterator[tuple[CountingSocket, socket.socket]]:
    ours, peer = socket.socketpair()
    counting = CountingSocket(fileno=ours.detach())
    peer.settimeout(5)
    yield counting, peer
    counting.close()
    peer.close()


def stream_on(sock: socket.socket, performing: _Performing | None = None) -> AbortableStream:
    return AbortableStream(sock, performing or _Performing())


def received_now(peer: socket.socket) -> bytes:
    peer.setblocking(False)
    try:
        return peer.recv(1 << 20)
    except BlockingIOError:
        return b""
    finally:
        peer.settimeout(5)


def test_B1_a_requests_head_and_body_go_out_together_on_the_read(
    pair: tuple[CountingSocket, socket.socket],
) -> None:
    """httpcore writes a request's head and its body separately; the stream sends both in
    one system call when the response is read, in order, and nothing before."""
    sock, peer = pair
    stream = stream_on(sock)
    stream.write(b"POST / HTTP/1.1\r\n\r\n")
    stream.write(b'{"jsonrpc": "2.0"}')
    stream.write(b"")
    assert received_now(peer) == b""
    assert sock.sends == 0
    peer.sendall(b"HTTP/1.1 200 OK\r\n")
    assert stream.read(1024) == b"HTTP/1.1 200 OK\r\n"
    assert peer.recv(1024) == b'POST / HTTP/1.1\r\n\r\n{"jsonrpc": "2.0"}'
    assert sock.sends == 1


def test_B1_a_large_write_is_not_held(pair: tuple[CountingSocket, socket.socket]) -> None:
    """A body past the limit goes out at once, after what was held, in order."""
    sock, peer = pair
    stream = stream_on(sock)
    head, body = b"HEAD\r\n", b"x" * (COALESCE_LIMIT + 1)
    stream.write(head)
    stream.write(body)
    got = b""
    while len(got) < len(head) + len(body):
        got += peer.recv(1 << 20)
    assert got == head + body


def test_B1_the_socket_timeout_is_set_only_when_it_changes(
    pair: tuple[CountingSocket, socket.socket],
) -> None:
    """httpcore sets it before every read and write (a system call each time)."""
    sock, peer = pair
    stream = stream_on(sock)
    for _ in range(3):
        stream.write(b"ping")
        peer.sendall(b"pong")
        assert stream.read(4) == b"pong"
        assert peer.recv(4) == b"ping"
    assert sock.timeouts_set == 1
    peer.sendall(b"pong")
    assert stream.read(4, timeout=2.0) == b"pong"
    assert sock.timeouts_set == 2


def test_failures_map_to_httpcores_errors(pair: tuple[CountingSocket, socket.socket]) -> None:
    sock, peer = pair
    stream = stream_on(sock)
    with pytest.raises(httpcore.ReadTimeout):
        stream.read(10, timeout=0.01)
    stream.write(b"held")
    peer.close()
    sock.shutdown(socket.SHUT_WR)
    with pytest.raises(httpcore.WriteError):  # the held write fails when it is sent
        stream.read(10)
    with pytest.raises(httpcore.WriteError):
        stream.write(b"y" * (COALESCE_LIMIT + 1))
    sock.close()
    with pytest.raises(httpcore.ReadError):
        stream.read(10)


def test_an_abort_before_the_read_fails_it_without_sending(
    pair: tuple[CountingSocket, socket.socket],
) -> None:
    """An exchange aborted while its request was being written does not send it."""
    sock, peer = pair
    performing = _Performing()
    performing.abort = _Abort()
    stream = stream_on(sock, performing)
    stream.write(b"request")
    performing.abort.abort()
    with pytest.raises(httpcore.ReadError):
        stream.read(10)
    assert sock.sends == 0
    assert peer.recv(10) == b""  # shut down, nothing sent


def test_B1_on_a_tcp_connection_the_stream_uses_its_socket_itself() -> None:
    """Through the driver's backend the stream reads
    and writes the connection's socket directly, and everything read counts for where a
    body ends; the other side sees what was written, all of it on the first read."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        stream = AbortableBackend(_Performing()).connect_tcp(
            "127.0.0.1", listener.getsockname()[1], timeout=5
        )
        assert isinstance(stream, AbortableStream)
        peer, _ = listener.accept()
        with peer:
            peer.settimeout(5)
            assert stream._sock is stream.get_extra_info("socket")
            stream.write(b"GET / HTTP/1.1\r\n\r\n")
            peer.sendall(b"HTTP/1.1 200 OK\r\n\r\n0\r\n\r\n")
            assert stream.read(1024).endswith(b"\r\n0\r\n\r\n")
            assert stream.read_tail().endswith(b"\r\n0\r\n\r\n")
            assert peer.recv(1024) == b"GET / HTTP/1.1\r\n\r\n"
            stream.close()


def test_B1_an_idle_tcp_connection_is_readable_as_poll_tells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether an idle connection has something to read (httpcore asks it before reusing
    the connection) is what a poll of its socket says: nothing on a quiet connection, or
    after everything sent was read; something once the server sent bytes, closed, or reset
    it. On Linux it is told without the poll (which lets other threads take the GIL)."""
    import struct
    import sys

    from mcpcore_httpcore import wait_readable

    with socket.create_server(("127.0.0.1", 0)) as listener:
        streams = []
        for _ in range(2):
            stream = AbortableBackend(_Performing()).connect_tcp(
                "127.0.0.1", listener.getsockname()[1], timeout=5
            )
            assert isinstance(stream, AbortableStream)
            peer, _ = listener.accept()
            streams.append((stream, peer))
        (stream, peer), (reset, reset_peer) = streams
        sock = stream.get_extra_info("socket")

        def readable(expected: bool) -> None:
            if expected:  # what the peer sent or did has arrived (a bounded wait on it)
                assert wait_readable(sock, 5)
            told = stream.get_extra_info("is_readable")
            assert told == wait_readable(sock, 0) == expected

        if sys.platform == "linux":
            polled: list[object] = []
            monkeypatch.setattr(
                "mcpcore_threaded._network.wait_readable", lambda *a: polled.append(a)
            )
        with peer, reset_peer:
            readable(False)
            peer.sendall(b"x" * 100_000)
            readable(True)
            got = 0
            while got < 100_000:
                got += len(stream.read(1 << 16))
            readable(False)
            stream.write(b"GET / HTTP/1.1\r\n\r\n")
            peer.sendall(b"HTTP/1.1 200 OK\r\n\r\n")
            assert stream.read(1024) == b"HTTP/1.1 200 OK\r\n\r\n"
            readable(False)
            peer.shutdown(socket.SHUT_WR)
            readable(True)
            reset_peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            reset_peer.close()  # a reset
            assert wait_readable(reset.get_extra_info("socket"), 5)
            assert reset.get_extra_info("is_readable")
        if sys.platform == "linux":
            assert not polled
            monkeypatch.undo()
        stream.close()
        reset.close()
        assert stream.get_extra_info("is_readable")  # closed: as poll says


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    import subprocess

    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return str(cert), str(key)


def test_B1_tls_inside_an_https_proxys_tls(certificate: tuple[str, str]) -> None:
    """Through an https proxy to an https server, the tunnel's TLS runs inside the proxy
    connection's TLS (the stream's own, over ``ssl.SSLObject``): the handshake, a request
    and its response, and where the body ends."""
    import ssl
    import threading

    cert, key = certificate
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=cert)
    seen: list[bytes] = []

    def proxy_then_server(listener: socket.socket) -> None:
        raw, _ = listener.accept()
        with server_context.wrap_socket(raw, server_side=True) as outer:
            outer.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head:
                head += outer.recv(1024)
            seen.append(head.split(b"\r\n")[0])
            outer.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            # the "server" behind the proxy, its TLS inside the proxy's
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            inner = server_context.wrap_bio(incoming, outgoing, server_side=True)
            request = b""
            while b"\r\n\r\n" not in request:
                try:
                    request += inner.read(4096)
                except ssl.SSLWantReadError:
                    pass
                if out := outgoing.read():
                    outer.sendall(out)
                if b"\r\n\r\n" not in request:
                    incoming.write(outer.recv(65536))
            seen.append(request)
            inner.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
            outer.sendall(outgoing.read())
            outer.recv(1)  # until the client closes

    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(target=proxy_then_server, args=(listener,), name="tls-proxy")
        thread.start()
        stream = AbortableBackend(_Performing()).connect_tcp(
            "127.0.0.1", listener.getsockname()[1], timeout=5
        )
        stream = stream.start_tls(client_context, "localhost", timeout=5)
        stream.write(b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += stream.read(1024, timeout=5)
        assert reply.startswith(b"HTTP/1.1 200")
        tunnel = stream.start_tls(client_context, "localhost", timeout=5)
        assert tunnel.get_extra_info("ssl_object").selected_alpn_protocol() is None
        tunnel.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", timeout=5)
        response = b""
        while not response.endswith(b"0\r\n\r\n"):
            response += tunnel.read(65536, timeout=5)
        assert response.endswith(b"2\r\nok\r\n0\r\n\r\n")
        assert isinstance(tunnel, BodyEnd) and tunnel.read_tail().endswith(b"\r\n0\r\n\r\n")
        tunnel.close()
        thread.join(5)
    assert seen == [b"CONNECT localhost:443 HTTP/1.1", b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"]


@pytest.mark.parametrize(
    ("headers", "length"),
    [
        ([(b"Content-Length", b"12")], 12),
        ([(b"content-length", b" 0 ")], 0),
        ([(b"Content-Type", b"text/event-stream"), (b"Transfer-Encoding", b"chunked")], None),
        ([(b"Content-Length", b"12"), (b"Transfer-Encoding", b"chunked")], None),
        ([(b"Content-Length", b"x")], None),
        ([], None),
    ],
)
def test_B1_a_body_length_is_its_content_length_alone(
    headers: list[tuple[bytes, bytes]], length: int | None
) -> None:
    """A call's last piece and its end go in one turn only for a body whose length is known:
    a ``Content-Length`` and no ``Transfer-Encoding`` (which would frame it instead)."""
    from mcpcore_threaded._network import content_length

    assert content_length(httpcore.Response(200, headers=headers)) == length
