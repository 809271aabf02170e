"""The loopback redirect listener a sign-in comes back to (RFC 8252 §7.3):
``mcpcore login``'s, and ``BrowserSignIn``'s.

``LoopbackListener()`` binds ``127.0.0.1`` on a port the system picks *before*
anything else happens, so ``redirect_uri`` (``http://127.0.0.1:<port>/callback``)
names a port that is already ours. ``start()`` serves on a thread of its own:

* only ``GET /callback`` counts; any other path is 404, any other method 405;
* a request wins only if it carries ``code`` or ``error`` *and* the ``state``
  of an authorization URL under way (``expect_state``): a web page that makes
  the browser fetch ``127.0.0.1`` with made-up parameters cannot end a
  sign-in; for each state the first such request wins, later ones are
  ignored. Until a state is known every request is refused: one that came in
  before the authorization URL existed cannot be the answer to it, whatever
  it carries;
* every answer is a fixed page ("you can close this tab"): no parameter is ever
  echoed, and nothing is logged;
* each connection has ``CONNECTION_TIMEOUT`` seconds to send its request.

``wait(timeout, state)`` returns the full callback URL of that sign-in (for
the OAuth flow to check), or raises ``ListenerTimeout`` / ``ListenerClosed``.
``close()`` stops it. One listener serves several sign-ins at once (R4: the
clients of a hub given one ``auth=``): each has its own ``state``, each
redirect goes to the sign-in whose state it carries, and a sign-in's state no
longer counts once its ``wait`` has ended (a replayed answer is refused).
"""

from __future__ import annotations

import hmac
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "CALLBACK_PATH",
    "CONNECTION_TIMEOUT",
    "ListenerClosed",
    "ListenerTimeout",
    "LoopbackListener",
    "state_of",
]

CALLBACK_PATH = "/callback"
CONNECTION_TIMEOUT = 5.0
HOST = "127.0.0.1"
# Sign-ins under way at once on one listener; beyond it the oldest is dropped
# (a caller that never waits must not make the listener grow).
MAX_SIGN_INS = 32

_DONE_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpcore</title></head>
<body style="font-family: sans-serif; margin: 3em">
<h1>mcpcore</h1>
<p>The sign-in response was received. You can close this tab and return to the terminal.</p>
</body></html>
"""
_NOT_OURS_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpcore</title></head>
<body style="font-family: sans-serif; margin: 3em">
<h1>mcpcore</h1>
<p>This is not the sign-in response mcpcore is waiting for. You can close this tab.</p>
</body></html>
"""
_NOT_FOUND_PAGE = b"not found\n"
_METHOD_PAGE = b"method not allowed\n"


class ListenerTimeout(Exception):
    """No sign-in response arrived in time."""


class ListenerClosed(Exception):
    """The listener was closed before a sign-in response arrived."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck connection never holds the process (each is bounded anyway)
    block_on_close = False
    allow_reuse_address = False

    def __init__(self, listener: LoopbackListener) -> None:
        self.listener = listener
        super().__init__((HOST, 0), _Handler)

    def server_bind(self) -> None:
        """Bind without ``HTTPServer``'s reverse DNS lookup of the address."""
        socketserver.TCPServer.server_bind(self)
        self.server_name = HOST
        self.server_port = self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A broken connection is not worth a traceback on the user's terminal."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = CONNECTION_TIMEOUT  # the socket timeout for reading the request
    server_version = "mcpcore"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request line carries the authorization code."""

    def _reply(self, status: int, body: bytes, content_type: str, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Connection", "close")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A malformed request: a fixed answer (the default page would name the method)."""
        self._reply(code, b"bad request\n", "text/plain; charset=utf-8", {})

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path != CALLBACK_PATH:
            self._reply(404, _NOT_FOUND_PAGE, "text/plain; charset=utf-8", {})
            return
        if self.server.listener.offer(query):
            self._reply(200, _DONE_PAGE, "text/html; charset=utf-8", {})
        else:
            self._reply(400, _NOT_OURS_PAGE, "text/html; charset=utf-8", {})

    def _not_allowed(self) -> None:
        self._reply(405, _METHOD_PAGE, "text/plain; charset=utf-8", {"Allow": "GET"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _not_allowed


class LoopbackListener:
    """See the module docstring. Use as a context manager (``close`` on exit)."""

    def __init__(self) -> None:
        self._server = _Server(self)
        port = self._server.server_address[1]
        self.redirect_uri = f"http://{HOST}:{port}{CALLBACK_PATH}"
        # state -> the callback URL that answered it (None until one did), one
        # entry per sign-in under way, oldest first.
        self._sign_ins: dict[str, str | None] = {}
        self._latest: str | None = None  # the state ``wait()`` without one waits for
        self._closed = False
        self._done = threading.Condition()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"LoopbackListener({self.redirect_uri!r})"

    def __enter__(self) -> LoopbackListener:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Serve (once; later calls do nothing)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="mcpcore-signin:listener",
            daemon=True,
        )
        self._thread.start()

    def expect_state(self, state: str) -> None:
        """A sign-in under way: a response must carry the ``state`` of its
        authorization URL to count (for it, and for no other sign-in). Until this
        is called no response counts."""
        if not state:
            raise ValueError("the authorization URL carries no state to check the answer by")
        with self._done:
            self._sign_ins.pop(state, None)
            self._sign_ins[state] = None
            while len(self._sign_ins) > MAX_SIGN_INS:
                del self._sign_ins[next(iter(self._sign_ins))]
            self._latest = state

    def offer(self, query: str) -> bool:
        """A request to the callback path: True if it is the response of a sign-in
        under way (the first for its state wins)."""
        params = dict(parse_qsl(query, keep_blank_values=True))
        if "code" not in params and "error" not in params:
            return False
        got = params.get("state", "").encode()
        with self._done:
            # Every state is compared, in constant time each: which one matched
            # (or that none did) takes as long either way.
            matched = [s for s in self._sign_ins if hmac.compare_digest(got, s.encode())]
            if not matched:
                return False  # no sign-in under way has it: it cannot be an answer
            state = matched[0]
            if self._sign_ins[state] is None and not self._closed:
                self._sign_ins[state] = f"{self.redirect_uri}?{query}"
                self._done.notify_all()
            return True

    def wait(self, timeout: float, state: str | None = None) -> str:
        """The full callback URL that answered the sign-in with ``state`` (by
        default the one ``expect_state`` was last told); ``ListenerTimeout`` after
        ``timeout`` seconds. Either way that sign-in is over: its state no longer
        counts."""
        with self._done:
            state = state if state is not None else self._latest
            if state is not None and state not in self._sign_ins:
                raise ValueError("no sign-in with that state is under way")

            def answered() -> bool:
                return self._closed or (state is not None and self._sign_ins.get(state) is not None)

            try:
                self._done.wait_for(answered, timeout)
                answer = self._sign_ins.get(state) if state is not None else None
            finally:
                if state is not None:
                    self._sign_ins.pop(state, None)
                    if self._latest == state:
                        self._latest = None
            if answer is not None:
                return answer
            if self._closed:
                raise ListenerClosed("the sign-in was abandoned")
            raise ListenerTimeout(f"no sign-in response within {timeout:g} s")

    def close(self) -> None:
        with self._done:
            self._closed = True
            self._done.notify_all()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


def state_of(url: str) -> str | None:
    """The ``state`` parameter of an authorization URL, if it has one."""
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name == "state":
            return value
    return None
