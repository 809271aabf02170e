"""An OAuth-protected real MCP peer: the official Python SDK server with its own
authorization server (``tests/servers/protected_sdk_server.py``), on loopback.

::

    with protected_sdk_server(token_ttl=3600, step_up=True) as peer:
        peer.url            # http://127.0.0.1:PORT/mcp  (the bearer-protected MCP endpoint)
        peer.issuer         # http://127.0.0.1:PORT      (the authorization server)
        peer.events()       # ["register client_id=... scope=... auth_method=...",
                            #  "authorize client_id=... scope=mcp:read resource=...",
                            #  "token grant=authorization_code scope=mcp:read",
                            #  "call whoami scopes=mcp:read", "token grant=refresh_token ...",
                            #  "insufficient_scope admin_action scopes=...", "http 401 POST ...", ...]
        peer.count("token grant=refresh_token")   # lines starting so
        peer.wait_for(lambda events: ..., timeout=10)
        peer.pid

    authorize_headless(url, redirect_uri)         # async ``authorize`` hook: the callback URL
    authorize_headless_blocking(url, redirect_uri)  # the same, blocking (threaded driver)

The server's ``/authorize`` approves at once with a 302 to the redirect URI,
so a hook that GETs the URL without following redirects and returns the
``Location`` header signs in with no person and no browser. The process runs
like every peer of ``tests/peers.py``: a free port (retried if taken), ready
when the port accepts connections, stopped by its process id.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpcore

from peers import ROOT, START_TIMEOUT, Peer, _run_peer

PROTECTED_SDK_SERVER_SCRIPT = ROOT / "tests" / "servers" / "protected_sdk_server.py"
READ_SCOPE = "mcp:read"
ADMIN_SCOPE = "mcp:admin"


@dataclass
class ProtectedPeer:
    """A running protected_sdk_server (see the module docstring)."""

    peer: Peer
    token_ttl: int
    step_up: bool

    @property
    def url(self) -> str:
        """The bearer-protected MCP endpoint."""
        return self.peer.url

    @property
    def issuer(self) -> str:
        """The authorization server's issuer (the same origin)."""
        return f"http://{self.peer.host}:{self.peer.port}"

    @property
    def pid(self) -> int:
        return self.peer.pid

    def alive(self) -> bool:
        return self.peer.alive()

    def events(self) -> list[str]:
        """The event lines the server printed so far, in order."""
        return self.peer.events()

    def count(self, prefix: str) -> int:
        """How many event lines start with ``prefix``."""
        return sum(1 for line in self.events() if line.startswith(prefix))

    def wait_for(self, condition: Callable[[list[str]], bool], timeout: float = 10.0) -> list[str]:
        """Poll (bounded) until ``condition(events())`` holds; returns the events."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            events = self.events()
            if condition(events):
                return events
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"condition not met by {self.peer.name} within {timeout}s; events={events!r}\n"
                    f"output tail:\n{self.output_tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def output_tail(self, lines: int = 40) -> str:
        return self.peer.output_tail(lines)

    def stop(self) -> None:
        self.peer.stop()


@contextlib.contextmanager
def protected_sdk_server(
    *,
    token_ttl: int = 3600,
    step_up: bool = True,
    expires_in: int | None = None,
    keep_registered_scope: bool = True,
    keep_auth_method: bool = True,
    start_timeout: float = START_TIMEOUT,
) -> Iterator[ProtectedPeer]:
    """Run tests/servers/protected_sdk_server.py on a free loopback port.

    ``token_ttl``: access token lifetime in seconds (under one more: the
    server rounds the expiry up). ``step_up``: offer ``admin_action`` (scope
    ``mcp:admin``, 403 ``insufficient_scope`` without it). ``expires_in``:
    what the token response tells the client (default ``token_ttl``).
    ``keep_registered_scope`` / ``keep_auth_method``: keep the SDK's own
    registration rules (see the server's docstring), as shipped, by default: a
    client may only ask for the scopes it registered with (a step-up registers
    anew), and a client_secret_basic token request names the client in its form
    too. False relaxes them.
    """

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [sys.executable, str(PROTECTED_SDK_SERVER_SCRIPT), str(port)]
        cmd += ["--token-ttl", str(token_ttl)]
        if expires_in is not None:
            cmd += ["--expires-in", str(expires_in)]
        if not step_up:
            cmd.append("--no-step-up")
        if keep_registered_scope:
            cmd.append("--keep-registered-scope")
        if keep_auth_method:
            cmd.append("--keep-auth-method")
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd

    with _run_peer("protected-sdk", argv, with_events=True, start_timeout=start_timeout) as peer:
        yield ProtectedPeer(peer, token_ttl=token_ttl, step_up=step_up)


def _location(response: httpcore.Response, url: str) -> str:
    for name, value in response.headers:
        if name.lower() == b"location":
            return value.decode("latin-1")
    raise RuntimeError(
        f"the authorization endpoint answered HTTP {response.status} without a redirect "
        f"({url.split('?', 1)[0]})"
    )


async def authorize_headless(url: str, redirect_uri: str) -> str:
    """An ``authorize`` hook for ``mcpcore_anyio.McpClient``: the callback URL the
    server redirects to at once (GET without following redirects)."""
    async with httpcore.AsyncConnectionPool() as http:
        response = await http.request("GET", url)
    return _location(response, url)


def authorize_headless_blocking(url: str, redirect_uri: str) -> str:
    """The same, blocking: an ``authorize`` hook for ``mcpcore_threaded.McpClient``."""
    with httpcore.ConnectionPool() as http:
        response = http.request("GET", url)
    return _location(response, url)
