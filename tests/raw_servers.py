"""Bare TCP servers on loopback for the fault tests: HTTP broken on purpose.

``socket_server(behaviour)`` accepts connections in a thread and runs
``behaviour(conn)`` on each; the behaviours below read the request and then
close, reset, or answer bytes that are not HTTP.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def socket_server(behaviour: Callable[[socket.socket], None]) -> Iterator[tuple[int, list[float]]]:
    """A bare TCP server on loopback: ``behaviour(conn)`` per connection; yields (port, accept times)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.05)
    accepted: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(time.monotonic())
            with conn:
                conn.settimeout(2.0)
                with contextlib.suppress(OSError):
                    behaviour(conn)

    thread = threading.Thread(target=loop, name="fault-socket-server")
    thread.start()
    try:
        yield int(listener.getsockname()[1]), accepted
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def read_request(conn: socket.socket) -> None:
    """Read one whole request (head and Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def close_at_once(conn: socket.socket) -> None:
    # The request is read first: closing before the client finished sending its
    # body makes httpcore drop its request-body generator unexhausted, which trio
    # reports as a ResourceWarning (an httpcore/driver issue, see the report).
    read_request(conn)  # then leaving the `with` closes: no response at all


def reset(conn: socket.socket) -> None:
    read_request(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close → RST


def garbage(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"\x16\x03\x01 \xff\xfe garbage, not HTTP at all\r\n\r\n")




# --- a fault front: HTTP in front of a real server, faulting its tools/call requests (U3) ---

#: What ``FaultFront`` does to a ``tools/call`` request, by mode:
#: - ``drop_after_read``: reads the whole request, then closes without a byte of answer;
#: - ``reset_after_read``: reads the whole request, then resets the connection (RST);
#: - ``cut_after_head``: passes it to the server, relays the head of its answer, then closes;
#: - ``reset_on_head``: reads the request's head only, then resets: a body larger than the
#:   socket buffers cannot all go out (the request never reached the server whole);
#: - ``status_before_body``: reads the head only and answers 400 without reading the body.
FAULT_MODES = ("drop_after_read", "reset_after_read", "cut_after_head", "reset_on_head", "status_before_body")


def mark_calls(method: str | None, server: str) -> dict[str, str]:
    """A client's ``headers=`` callable that marks its ``tools/call`` requests for ``FaultFront``."""
    return {"x-fault-call": "1"} if method == "tools/call" else {}


def _read_head(conn: socket.socket) -> tuple[bytes, bytes] | None:
    """A request's head (through the blank line) and what came after it, or None at EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _rst(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close → RST


class FaultFront:
    """An HTTP front on loopback for a real MCP server: every request is passed on (one
    per connection, ``Connection: close``), but a ``tools/call`` meets ``mode`` (one of
    ``FAULT_MODES``, or None to pass it on too). ``refuse()`` closes the listening
    socket: connects are refused from then on. ``faulted`` counts the calls faulted.
    A request is told a ``tools/call`` by the ``x-fault-call`` header in its head (the
    client's ``headers=`` callable adds it for that method: ``mark_calls``), so that
    the modes that read no body tell it too; a request read whole, by its method."""

    def __init__(self, target_port: int, mode: str | None = None) -> None:
        assert mode is None or mode in FAULT_MODES
        self.mode = mode
        self.faulted = 0
        self.dropped: list[bytes] = []  # the bodies of the calls read whole and not answered
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, name="fault-front")]
        self._threads[0].start()

    def refuse(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # stops listening now, and wakes accept()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._open.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), name="fault-front-conn")
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.settimeout(10.0)
            got = _read_head(conn)
            if got is None:
                return
            head, body = got
            length = _content_length(head)
            is_call = self.mode is not None and b"\r\nx-fault-call:" in head.lower()
            if is_call and self.mode in ("reset_on_head", "status_before_body"):
                self.faulted += 1
                if self.mode == "reset_on_head":
                    _rst(conn)
                    return
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 14\r\nconnection: close\r\n\r\nbody not read\n")
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):  # drained, so closing sends no RST
                    pass
                return
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            # a request read whole is told by its method too (a client without mark_calls)
            is_call = is_call or (self.mode is not None and b'"method":"tools/call"' in body)
            if is_call and self.mode in ("drop_after_read", "reset_after_read"):
                self.faulted += 1
                self.dropped.append(body)
                if self.mode == "reset_after_read":
                    _rst(conn)
                return  # leaving the `with` closes: no answer at all
            self._pass_on(conn, head, body, cut=is_call and self.mode == "cut_after_head")

    def _pass_on(self, conn: socket.socket, head: bytes, body: bytes, *, cut: bool) -> None:
        lines = [line for line in head[:-4].split(b"\r\n") if not line.lower().startswith(b"connection:")]
        upstream = socket.create_connection(("127.0.0.1", self._target), timeout=10.0)
        with upstream:
            with self._lock:
                self._open.append(upstream)
            upstream.sendall(b"\r\n".join([*lines, b"connection: close"]) + b"\r\n\r\n" + body)
            seen = b""
            while b"\r\n\r\n" not in seen:
                data = upstream.recv(65536)
                if not data:
                    return
                seen += data
            # The answer's head says the connection closes (a server may leave that out):
            # the client then never sends another request on a connection this front ends.
            answer, _, rest = seen.partition(b"\r\n\r\n")
            kept = [line for line in answer.split(b"\r\n") if not line.lower().startswith(b"connection:")]
            conn.sendall(b"\r\n".join([*kept, b"connection: close"]) + b"\r\n\r\n")
            if cut:  # the head, and not a byte of the body
                self.faulted += 1
                return
            while True:
                if rest:
                    conn.sendall(rest)
                rest = upstream.recv(65536)
                if not rest:
                    return

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5)
