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


