"""``mcpcore login`` / ``logout`` / ``auth status`` and stored tokens in ``tools`` (A1-A4, X1).

The end-to-end tests run the command line as a subprocess (``python -m
mcpcore_cli``, every run bounded) against the official Python SDK server with
its own OAuth authorization server (``protected_peer.protected_sdk_server``,
which approves ``/authorize`` at once by redirecting to the client's
``redirect_uri``). The test is the person at the browser: it reads the URL
``login --no-browser`` prints, GETs it without following the redirect, and
GETs the ``Location`` — the command line's loopback listener — to finish.

The unit tests drive ``FileTokenStore`` (the token file) and the loopback
listener directly.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from mcpcore import ClientRecord, TokenKey, TokenSet
from mcpcore_cli._login import (
    CONNECTION_TIMEOUT,
    ListenerClosed,
    ListenerTimeout,
    LoopbackListener,
    state_of,
)
from mcpcore_cli._tokens import (
    FileTokenStore,
    SignInStore,
    StoreView,
    TokenFileError,
    default_token_file,
)

RUN_TIMEOUT = 60
ACCESS = "at-0123456789-secret-access"
REFRESH = "rt-9876543210-secret-refresh"
CLIENT_SECRET = "cs-secret-of-the-client-42"
SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"


def _tokens(access: str = ACCESS, *, expires_at: float | None = 2_000_000_000.0) -> TokenSet:
    return TokenSet(
        access_token=access,
        expires_at=expires_at,
        refresh_token=REFRESH,
        scope="read write",
        issuer=ISSUER,
        token_endpoint=f"{ISSUER}/token",
        resource=SERVER,
        client_id="client-1",
    )


def _client() -> ClientRecord:
    return ClientRecord(
        client_id="client-1",
        client_secret=CLIENT_SECRET,
        client_secret_expires_at=None,
        auth_method="client_secret_post",
        redirect_uris=("http://127.0.0.1:4321/callback",),
        issuer=ISSUER,
        kind="dcr",
    )


def _assert_no_secret(text: str) -> None:
    for secret in (ACCESS, REFRESH, CLIENT_SECRET):
        assert secret not in text
        assert secret[:10] not in text


# ---------------------------------------------------------------- FileTokenStore


def test_store_round_trip_and_private_file(tmp_path: Path) -> None:
    path = tmp_path / "data" / "mcpcore" / "tokens.json"
    store = FileTokenStore(path)
    assert store.get_tokens(SERVER) is None and store.get_clients() == []
    assert not path.exists()  # reading creates nothing

    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    store.set_tokens(key, _tokens())
    store.set_client(ISSUER, _client())

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # A fresh store (another run) reads back exactly what was stored, field by field.
    again = FileTokenStore(path)
    assert again.get_tokens(SERVER) == _tokens()
    assert list(again.get_clients()) == [_client()]
    assert again.get_tokens("https://other.example.com/mcp") is None
    document = json.loads(path.read_text())
    assert document["version"] == 1 and len(document["tokens"]) == 1

    # Newest wins for a server; replacing a key keeps one entry.
    store.set_tokens(key, _tokens("at-newer"))
    assert again.get_tokens(SERVER) == _tokens("at-newer")
    assert len(again.entries()) == 1
    other = TokenKey(server_url=SERVER, issuer="https://other-issuer.example.com")
    store.set_tokens(other, _tokens("at-other-issuer"))
    assert again.get_tokens(SERVER) == _tokens("at-other-issuer")

    store.delete_tokens(other)
    store.delete_tokens(key)
    store.delete_client(ISSUER)
    assert not path.exists()  # nothing left: no file left either


def test_store_writes_are_atomic_and_never_wider_than_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    store.set_tokens(key, _tokens())
    first_inode = path.stat().st_ino

    # Each write is a new 0600 file (O_CREAT|O_EXCL) moved over the old one.
    opened: list[tuple[str, int, int]] = []
    replaced: list[tuple[str, str]] = []
    real_open, real_replace = os.open, os.replace

    def spy_open(file: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        opened.append((str(file), flags, mode))
        return real_open(file, flags, mode, **kw)

    def spy_replace(src: Any, dst: Any, **kw: Any) -> None:
        replaced.append((str(src), str(dst)))
        assert stat.S_IMODE(os.stat(src).st_mode) == 0o600
        real_replace(src, dst, **kw)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "replace", spy_replace)
    old_umask = os.umask(0)  # even with no umask, never readable by others
    try:
        store.set_tokens(key, _tokens("at-second"))
    finally:
        os.umask(old_umask)
    monkeypatch.undo()

    writes = [o for o in opened if o[1] & os.O_CREAT and o[1] & os.O_EXCL]
    assert len(writes) == 1
    temporary, _, mode = writes[0]
    assert mode == 0o600 and Path(temporary).parent == tmp_path
    assert replaced == [(temporary, str(path))]
    assert not Path(temporary).exists()
    assert path.stat().st_ino != first_inode
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert FileTokenStore(path).get_tokens(SERVER) == _tokens("at-second")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_store_failed_write_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    store.set_tokens(key, _tokens())
    before = path.read_bytes()

    def broken_replace(src: Any, dst: Any, **kw: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    store.set_tokens(key, _tokens("at-lost"))  # a driver's write: never raises
    monkeypatch.undo()
    assert store.write_error is not None
    assert "No space left on device" in str(store.write_error)
    _assert_no_secret(str(store.write_error))
    assert path.read_bytes() == before  # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json", "tokens.json.lock"]


@pytest.mark.parametrize(
    "content",
    [
        f'{{"version": 1, "tokens": [{{"access_token": "{ACCESS}"',  # cut short
        f'{{"version": 2, "tokens": [], "clients": [], "x": "{ACCESS}"}}',  # another format
        f'{{"version": 1, "tokens": [{{"access_token": "{ACCESS}", "expires_at": "soon"}}], '
        '"clients": []}',  # a wrong field
        f"\xff\xfe{ACCESS}",  # not UTF-8 JSON at all
        f'["{ACCESS}"]',
    ],
)
def test_store_corrupt_file_is_a_clear_error_without_content(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tokens.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, content.encode("utf-8", "surrogateescape"))
    os.close(fd)
    store = FileTokenStore(path)
    with pytest.raises(TokenFileError) as caught:
        store.get_tokens(SERVER)
    text = str(caught.value)
    assert "is corrupt or was not written by mcpcore" in text and str(path) in text
    _assert_no_secret(text)
    # Not even a traceback shows it (the JSON error, which holds the text, is suppressed).
    _assert_no_secret("".join(traceback.format_exception(caught.value)))
    # A driver's write on a corrupt file: logged and kept, not raised, the file untouched.
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    assert isinstance(store.write_error, TokenFileError)
    assert path.read_bytes() == content.encode("utf-8", "surrogateescape")


def test_store_refuses_a_file_others_can_read_or_a_symlink(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    FileTokenStore(path).set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    os.chmod(path, 0o644)
    with pytest.raises(
        TokenFileError, match=r"can be read or written by other users \(mode 0644\)"
    ):
        FileTokenStore(path).check()
    os.chmod(path, 0o600)
    FileTokenStore(path).check()

    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(TokenFileError, match="symbolic link"):
        FileTokenStore(link).check()


def test_store_refuses_a_directory_others_can_write(tmp_path: Path) -> None:
    """Whoever can write to the token file's directory can replace the file: such a
    directory is refused on read and on write, with the fix in the message;
    logout --all (``forget_all``) still removes the file."""
    directory = tmp_path / "shared"
    directory.mkdir(mode=0o700)
    path = directory / "tokens.json"
    FileTokenStore(path).set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    for mode in (0o770, 0o707, 0o1777):
        os.chmod(directory, mode)
        store = FileTokenStore(path)
        with pytest.raises(TokenFileError, match=r"can be written by other users") as raised:
            store.check()
        assert f"chmod 700 {str(directory)!r}" in str(raised.value)
        store.set_tokens(TokenKey(server_url=SERVER, issuer="https://other"), _tokens())
        assert isinstance(store.write_error, TokenFileError)
        _assert_no_secret(str(raised.value))
    os.chmod(directory, 0o755)  # readable by others is fine: the file itself is 0600
    assert len(FileTokenStore(path).entries()) == 1
    os.chmod(directory, 0o777)
    assert FileTokenStore(path).forget_all() and not path.exists()
    os.chmod(directory, 0o700)


def test_store_forget_all_removes_the_file_and_leaves_the_lock_file(tmp_path: Path) -> None:
    """As its docstring says: the lock file stays (it holds nothing; removing one
    another run holds would let two runs hold the lock)."""
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    lock = tmp_path / "tokens.json.lock"
    assert lock.exists() and lock.stat().st_size == 0
    assert store.forget_all() and not path.exists()
    assert lock.exists() and lock.stat().st_size == 0
    assert not store.forget_all()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_store_refuses_a_directory_of_another_user(tmp_path: Path) -> None:
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    os.chown(directory, 65534, 65534)
    with pytest.raises(TokenFileError, match="belongs to another user"):
        FileTokenStore(directory / "tokens.json").check()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file to another user")
def test_store_refuses_a_file_of_another_user(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    FileTokenStore(path).set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    os.chown(path, 65534, 65534)
    with pytest.raises(TokenFileError, match="belongs to another user"):
        FileTokenStore(path).check()


def test_store_secrets_never_in_repr_or_errors(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    store.set_client(ISSUER, _client())
    shown = " ".join(
        [
            repr(store),
            repr(StoreView(store)),
            repr(store.entries()),
            repr(store.clients()),
            repr(store.get_tokens(SERVER)),
            repr(store.get_clients()),
        ]
    )
    _assert_no_secret(shown)
    assert ISSUER in shown
    # The file itself holds them (that is its job), and only its owner can read it.
    text = path.read_text()
    assert ACCESS in text and REFRESH in text and CLIENT_SECRET in text


def test_store_forget_server_keeps_what_others_use(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    other_server = "https://other.example.com/mcp"
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    store.set_tokens(TokenKey(server_url=other_server, issuer=ISSUER), _tokens())
    store.set_client(ISSUER, _client())
    assert store.forget_server(SERVER) == 1
    assert store.get_tokens(SERVER) is None
    assert store.get_tokens(other_server) is not None
    assert list(store.get_clients()) == [_client()]  # the other server's issuer still uses it
    assert store.forget_server(SERVER) == 0
    assert store.forget_server(other_server) == 1
    assert not path.exists()
    assert store.forget_all() is False


def test_store_view_hides_and_keeps(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    store.set_tokens(key, _tokens())
    fresh = StoreView(store, hide_tokens_of=SERVER)
    assert fresh.get_tokens(SERVER) is None  # login signs in afresh
    quiet = StoreView(store, keep_new_clients=False)
    assert quiet.get_tokens(SERVER) == _tokens()
    quiet.set_client(ISSUER, _client())  # a registration tools cannot use: not kept
    assert store.get_clients() == []
    fresh.set_client(ISSUER, _client())
    assert list(store.get_clients()) == [_client()]


def test_default_token_file(tmp_path: Path) -> None:
    home = os.path.expanduser("~")
    assert default_token_file({}) == Path(home) / ".local/share/mcpcore/tokens.json"
    assert default_token_file({"XDG_DATA_HOME": str(tmp_path)}) == (
        tmp_path / "mcpcore" / "tokens.json"
    )
    relative = {"XDG_DATA_HOME": "relative/dir"}  # invalid per XDG: ignored
    assert default_token_file(relative) == Path(home) / ".local/share/mcpcore/tokens.json"
    override = {"MCPCORE_TOKEN_FILE": str(tmp_path / "t.json"), "XDG_DATA_HOME": "/x"}
    assert default_token_file(override) == tmp_path / "t.json"


def test_store_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Threads of one run (and, through the lock file, other runs) never lose an update."""
    path = tmp_path / "tokens.json"
    stores = [FileTokenStore(path) for _ in range(4)]

    def write(index: int) -> None:
        for n in range(10):
            url = f"https://s{index}-{n}.example.com/mcp"
            stores[index].set_tokens(TokenKey(server_url=url, issuer=ISSUER), _tokens())

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(FileTokenStore(path).entries()) == 40


def test_store_waits_for_another_run_but_not_for_ever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from mcpcore_signin import _tokens as tokens_module

    monkeypatch.setattr(tokens_module, "LOCK_WAIT", 0.3)
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    key = TokenKey(server_url=SERVER, issuer=ISSUER)
    store.set_tokens(key, _tokens())
    other_run = os.open(tmp_path / "tokens.json.lock", os.O_RDWR)
    try:
        fcntl.flock(other_run, fcntl.LOCK_EX)
        store.set_tokens(key, _tokens("at-blocked"))  # a driver's write: kept, not raised
        assert store.write_error is not None
        assert "is locked by another mcpcore run" in str(store.write_error)
        assert store.get_tokens(SERVER) == _tokens()  # reading needs no lock
    finally:
        os.close(other_run)
    store.set_tokens(key, _tokens("at-later"))
    assert store.get_tokens(SERVER) == _tokens("at-later")


# ---------------------------------------------------------------- the loopback listener


def _get(url: str, method: str = "GET") -> tuple[int, bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        connection.request(method, target)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_listener_takes_the_first_matching_response_and_echoes_nothing() -> None:
    with LoopbackListener() as listener:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", listener.redirect_uri)
        listener.expect_state("st4te")
        base = listener.redirect_uri
        # Not the callback path, not GET, no code, a wrong state: none of them wins.
        assert _get(base.replace("/callback", "/other?code=x&state=st4te"))[0] == 404
        assert _get(f"{base}?code=x&state=st4te", method="POST")[0] == 405
        assert _get(f"{base}?state=st4te")[0] == 400
        status, body = _get(f"{base}?code=forged-code&state=wrong")
        assert status == 400 and b"forged-code" not in body
        # The right one wins; its answer is a fixed page that echoes no parameter.
        status, body = _get(f"{base}?code=the-code&state=st4te")
        assert status == 200 and b"close this tab" in body and b"the-code" not in body
        assert _get(f"{base}?code=later&state=st4te")[0] == 200
        assert listener.wait(5) == f"{base}?code=the-code&state=st4te"
    assert state_of("https://as.example/authorize?client_id=c&state=abc%20d") == "abc d"
    assert state_of("https://as.example/authorize?client_id=c") is None


def test_listener_refuses_a_callback_before_it_knows_the_state() -> None:
    """R13: a request that reaches the listener before the authorization URL (and so
    its state) exists is refused whatever it carries, and the real answer still wins."""
    with LoopbackListener() as listener:
        base = listener.redirect_uri
        assert _get(f"{base}?code=forged&state=guessed")[0] == 400
        assert _get(f"{base}?code=forged")[0] == 400
        assert _get(f"{base}?error=access_denied")[0] == 400
        listener.expect_state("real-state")
        assert _get(f"{base}?code=the-code&state=real-state")[0] == 200
        assert listener.wait(5) == f"{base}?code=the-code&state=real-state"
    with LoopbackListener() as listener, pytest.raises(ValueError, match="no state"):
        listener.expect_state("")


def test_listener_racing_request_during_sign_in_loses() -> None:
    """R13, as it happens: a page hammers the callback from the moment the listener
    is up; the sign-in that follows still gets its own answer."""
    with LoopbackListener() as listener:
        base = listener.redirect_uri
        stop = threading.Event()
        answers: list[int] = []

        def hammer() -> None:
            while not stop.is_set():
                answers.append(_get(f"{base}?code=forged&state=forged")[0])

        racer = threading.Thread(target=hammer)
        racer.start()
        try:
            deadline = time.monotonic() + 10
            while not answers and time.monotonic() < deadline:
                time.sleep(0.01)
            listener.expect_state("s-123")
            assert _get(f"{base}?code=real&state=s-123")[0] == 200
        finally:
            stop.set()
            racer.join(10)
        assert answers and set(answers) == {400}
        assert listener.wait(5) == f"{base}?code=real&state=s-123"


def test_listener_error_response_wins_too() -> None:
    with LoopbackListener() as listener:
        listener.expect_state("s")
        assert _get(f"{listener.redirect_uri}?error=access_denied&state=s")[0] == 200
        assert "error=access_denied" in listener.wait(5)


def test_listener_times_out_and_closes() -> None:
    with LoopbackListener() as listener:
        start = time.monotonic()
        with pytest.raises(ListenerTimeout):
            listener.wait(0.2)
        assert time.monotonic() - start < 5
    closed = LoopbackListener()
    closed.start()
    threading.Timer(0.1, closed.close).start()
    with pytest.raises(ListenerClosed):
        closed.wait(30)


def test_listener_bounds_a_silent_connection() -> None:
    """A connection that never sends its request is dropped after CONNECTION_TIMEOUT, and
    does not keep the real response from arriving meanwhile."""
    with LoopbackListener() as listener:
        listener.expect_state("s")
        port = urlsplit(listener.redirect_uri).port
        with socket.create_connection(("127.0.0.1", port or 0), timeout=30) as idle:
            assert _get(f"{listener.redirect_uri}?code=c&state=s")[0] == 200
            start = time.monotonic()
            assert idle.recv(1) == b""  # closed by the listener
            assert time.monotonic() - start < CONNECTION_TIMEOUT + 5
        assert listener.wait(1).endswith("code=c&state=s")


# ---------------------------------------------------------------- the command line, end to end


def _env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's data directory in tmp_path: no run of these tests touches ~."""
    env = dict(os.environ)
    env.pop("MCPCORE_TOKEN_FILE", None)
    env.pop("MCPCORE_TOKEN_STORE", None)
    env.pop("NO_COLOR", None)
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


def run(
    tmp_path: Path, *args: str, timeout: float = RUN_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


def _http_get(url: str) -> tuple[int, dict[str, str], bytes]:
    """One GET, redirects not followed (a browser's first step)."""
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1"
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


class LoginRun:
    """``mcpcore login … --no-browser`` as a subprocess, its stderr read as it comes."""

    URL_LINE = re.compile(r"^Open this URL to sign in: (\S+)$")

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcore_cli", "login", *args, "--no-browser"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=_env(tmp_path),
        )
        self.err_lines: list[str] = []
        self._url: str | None = None
        self._seen = threading.Event()
        self._reader = threading.Thread(target=self._read, name="test-login-stderr")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err_lines.append(line)
            found = self.URL_LINE.match(line.rstrip("\n"))
            if found and self._url is None:
                self._url = found.group(1)
                self._seen.set()
        self._seen.set()  # stderr closed: the process is ending

    def authorization_url(self, timeout: float = RUN_TIMEOUT) -> str:
        assert self._seen.wait(timeout), "login printed no URL in time"
        assert self._url is not None, f"login printed no URL: {''.join(self.err_lines)}"
        return self._url

    def finish(self, timeout: float = RUN_TIMEOUT) -> tuple[int, str, str]:
        """Wait for the exit (bounded); (status, stdout, stderr)."""
        try:
            assert self.proc.stdout is not None
            out = self.proc.stdout.read()  # ends when the process closes it
            status = self.proc.wait(timeout)
        finally:
            self.kill()
        return status, out, "".join(self.err_lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def _sign_in_as_the_browser(login: LoginRun) -> tuple[str, str]:
    """What a browser does: GET the authorization URL (the server approves at once with a
    302), then GET its Location, the command line's loopback listener. Returns
    (the authorization code, the listener's page)."""
    url = login.authorization_url()
    query = parse_qs(urlsplit(url).query)
    redirect_uri = query["redirect_uri"][0]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect_uri)
    assert query["code_challenge_method"] == ["S256"] and "state" in query
    status, headers, _ = _http_get(url)
    assert status in (302, 303, 307), status
    location = headers["location"]
    assert location.startswith(redirect_uri + "?")
    code = parse_qs(urlsplit(location).query)["code"][0]
    status, _, page = _http_get(location)
    assert status == 200
    text = page.decode()
    assert "close this tab" in text and code not in text  # no parameter echoed
    return code, text


def _secrets_in(token_file: Path) -> list[str]:
    """Every secret the token file (or the SQLite token store) holds (tokens, client secrets)."""
    if token_file.suffix == ".sqlite3":
        store = SignInStore(token_file)
        found = [
            s for e in store.entries() for s in (e.tokens.access_token, e.tokens.refresh_token)
        ]
        found += [c.client_secret for c in store.clients().values()]
        store.close()
        found = [s for s in found if s]
        assert found
        return found
    document = json.loads(token_file.read_text())
    found = []
    for entry in document["tokens"]:
        found.append(entry["access_token"])
        if entry["refresh_token"]:
            found.append(entry["refresh_token"])
    for client in document["clients"]:
        if client["client_secret"]:
            found.append(client["client_secret"])
    assert found
    return found


def _assert_none_shown(secrets: list[str], *texts: str) -> None:
    joined = "\n".join(texts)
    for secret in secrets:
        assert secret not in joined
        assert secret[:12] not in joined


@pytest.fixture(scope="module")
def peer() -> Iterator[Any]:
    from protected_peer import protected_sdk_server

    with protected_sdk_server() as running:
        yield running


def test_login_tools_call_status_logout(tmp_path: Path, peer: Any) -> None:
    token_file = tmp_path / "state" / "tokens.json"  # its directory does not exist yet
    tf = ["--token-file", str(token_file)]
    login_hint = f"run `mcpcore login {peer.url} --token-file {token_file}`"

    # Before: tools says how to sign in, exits 3, and keeps nothing (nor registers a
    # client at the authorization server: it could never use one).
    registered = peer.count("register ")
    before = run(tmp_path, "tools", peer.url, *tf)
    assert before.returncode == 3, before.stderr
    assert f"server 'server' needs authorization: {login_hint}" in before.stderr
    assert not token_file.exists()
    assert peer.count("register ") == registered

    # login: the test is the browser.
    login = LoginRun(tmp_path, peer.url, *tf)
    code, _ = _sign_in_as_the_browser(login)
    status, out, err = login.finish()
    assert status == 0, err
    assert (
        f"signed in to server 'server' ({peer.url}): issuer {peer.issuer}, scopes mcp:read" in out
    )
    assert "refreshable" in out
    assert peer.count("authorize ") == 1 and peer.count("token grant=authorization_code") == 1

    # The token file: created 0600 in a new 0700 directory; nothing secret was printed.
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    secrets = [*_secrets_in(token_file), code]
    _assert_none_shown(secrets, out, err)

    shown = run(tmp_path, "auth", "status", *tf)
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if peer.url in line)
    assert peer.issuer in row and "mcp:read" in row and "expires" in row and "yes" in row
    as_json = run(tmp_path, "auth", "status", "--json", *tf)
    assert as_json.returncode == 0
    document = json.loads(as_json.stdout)
    assert document["token_file"] == str(token_file)
    [server] = document["servers"]
    assert server["server_url"] == peer.url and server["issuer"] == peer.issuer
    assert server["scopes"] == ["mcp:read"] and server["refreshable"] is True
    assert server["expired"] is False and server["expires_at"].endswith("Z")
    _assert_none_shown(secrets, shown.stdout, shown.stderr, as_json.stdout, as_json.stderr)

    # tools and call use the stored token: no new sign-in, no prompt.
    tools = run(tmp_path, "tools", peer.url, *tf)
    assert tools.returncode == 0, tools.stderr
    assert "server/whoami" in tools.stdout
    assert "Open this URL" not in tools.stderr and "needs authorization" not in tools.stderr
    call = run(tmp_path, "call", peer.url, "whoami", *tf)
    assert call.returncode == 0, call.stderr
    assert "scopes=mcp:read" in call.stdout
    assert peer.count("authorize ") == 1 and peer.count("token grant=") == 1
    _assert_none_shown(secrets, tools.stdout, tools.stderr, call.stdout, call.stderr)

    # logout: the tokens are gone (the file with them: nothing else was in it).
    logout = run(tmp_path, "logout", peer.url, *tf)
    assert logout.returncode == 0, logout.stderr
    assert f"signed out of server 'server' ({peer.url})" in logout.stdout
    assert not token_file.exists()
    again = run(tmp_path, "logout", peer.url, *tf)
    assert again.returncode == 0 and "nothing to forget" in again.stderr

    after = run(tmp_path, "tools", peer.url, *tf)
    assert after.returncode == 3
    assert f"needs authorization: {login_hint}" in after.stderr
    status_after = run(tmp_path, "auth", "status", *tf)
    assert status_after.returncode == 0 and "not signed in to any server" in status_after.stderr


def test_config_form_default_location_and_check(tmp_path: Path, peer: Any) -> None:
    """--config FILE --server NAME, the token store in the user's data directory
    ($XDG_DATA_HOME/mcpcore/tokens.sqlite3, W2), and check's hint."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"Prot": {"url": peer.url}}}))
    token_file = tmp_path / "xdg" / "mcpcore" / "tokens.sqlite3"
    hint = f"run `mcpcore login --config {config} --server prot`"

    check = run(tmp_path, "check", str(config), "--json")
    assert check.returncode == 1
    [row] = json.loads(check.stdout)
    assert row["status"] == "unavailable" and row["reason"] == f"needs authorization: {hint}"
    listed = run(tmp_path, "tools", "--config", str(config))
    assert listed.returncode == 3 and f"server 'prot' needs authorization: {hint}" in listed.stderr
    called = run(tmp_path, "call", "--config", str(config), "prot/whoami")
    assert called.returncode == 3 and f"needs authorization: {hint}" in called.stderr

    login = LoginRun(tmp_path, "--config", str(config), "--server", "prot")
    _sign_in_as_the_browser(login)
    status, out, err = login.finish()
    assert status == 0, err
    assert f"signed in to server 'prot' ({peer.url})" in out
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700

    check = run(tmp_path, "check", str(config), "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)[0]["status"] == "ready"
    called = run(tmp_path, "call", "--config", str(config), "prot/whoami")
    assert called.returncode == 0 and "scopes=mcp:read" in called.stdout
    _assert_none_shown(
        _secrets_in(token_file), check.stdout, called.stdout, called.stderr, out, err
    )

    logout = run(tmp_path, "logout", "--config", str(config), "--server", "prot")
    assert logout.returncode == 0 and "signed out of server 'prot'" in logout.stdout
    assert SignInStore(token_file).entries() == []


def test_login_with_scope_then_all_logout(tmp_path: Path, peer: Any) -> None:
    token_file = tmp_path / "tokens.json"
    tf = ["--token-file", str(token_file)]
    login = LoginRun(tmp_path, "-v", peer.url, "--scope", "mcp:read mcp:admin", *tf)
    url = login.authorization_url()
    assert parse_qs(urlsplit(url).query)["scope"] == ["mcp:read mcp:admin"]
    _sign_in_as_the_browser(login)
    status, out, err = login.finish()
    assert status == 0, err
    assert "scopes mcp:read mcp:admin" in out
    assert "DEBUG" in err  # -v: the flow's steps are logged, never a secret
    _assert_none_shown(_secrets_in(token_file), out, err)
    call = run(tmp_path, "call", peer.url, "admin_action", *tf)
    assert call.returncode == 0 and "admin action done" in call.stdout

    removed = run(tmp_path, "logout", "--all", *tf)
    assert removed.returncode == 0 and "removed the token file" in removed.stdout
    assert not token_file.exists()
    assert "nothing to forget" in run(tmp_path, "logout", "--all", *tf).stderr


def test_tools_refreshes_an_expired_token_and_keeps_the_new_one(tmp_path: Path, peer: Any) -> None:
    token_file = tmp_path / "tokens.json"
    tf = ["--token-file", str(token_file)]
    login = LoginRun(tmp_path, peer.url, *tf)
    _sign_in_as_the_browser(login)
    assert login.finish()[0] == 0
    store = FileTokenStore(token_file)
    [entry] = store.entries()
    store.set_tokens(entry.key, dataclasses.replace(entry.tokens, expires_at=time.time() - 60))
    assert "expired" in run(tmp_path, "auth", "status", *tf).stdout
    refreshes = peer.count("token grant=refresh_token")

    tools = run(tmp_path, "-v", "tools", peer.url, *tf)
    assert tools.returncode == 0, tools.stderr
    assert peer.count("token grant=refresh_token") == refreshes + 1
    [renewed] = FileTokenStore(token_file).entries()
    assert renewed.tokens.access_token != entry.tokens.access_token
    assert renewed.tokens.refresh_token != entry.tokens.refresh_token  # rotated, kept
    assert renewed.tokens.expires_at is not None and renewed.tokens.expires_at > time.time()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # -v included: neither the old tokens nor the new ones are shown.
    old = [entry.tokens.access_token, entry.tokens.refresh_token or ""]
    _assert_none_shown([*_secrets_in(token_file), *old], tools.stdout, tools.stderr)


FAKE_BROWSER = """
import http.client, sys
from urllib.parse import urlsplit

def get(url):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("GET", parts.path + "?" + parts.query)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.getheader("Location")

get(get(sys.argv[1]))
"""


def test_login_opens_the_browser(tmp_path: Path, peer: Any) -> None:
    """Without --no-browser the URL goes to ``webbrowser.open`` ($BROWSER here: a script
    that does what a browser and an approving person do), and is printed as well."""
    browser = tmp_path / "browser.py"
    browser.write_text(FAKE_BROWSER)
    token_file = tmp_path / "tokens.json"
    result = subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", "login", peer.url, "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, {"BROWSER": f"{sys.executable} {browser} %s"}),
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert "Open this URL to sign in: http://127.0.0.1:" in result.stderr
    assert "could not start a browser" not in result.stderr
    assert "signed in to server 'server'" in result.stdout
    assert FileTokenStore(token_file).get_tokens(peer.url) is not None


def test_call_needing_more_scope_says_to_sign_in_again(tmp_path: Path, peer: Any) -> None:
    tf = ["--token-file", str(tmp_path / "tokens.json")]
    login = LoginRun(tmp_path, peer.url, *tf)
    _sign_in_as_the_browser(login)
    assert login.finish()[0] == 0
    call = run(tmp_path, "call", peer.url, "admin_action", *tf)
    assert call.returncode == 3
    assert "needs authorization: run `mcpcore login" in call.stderr and "--scope" in call.stderr


def test_login_declined_stores_nothing(tmp_path: Path, peer: Any) -> None:
    """The person says no: the authorization server sends the browser back with
    ``error=access_denied``; login fails (3) and keeps no token."""
    token_file = tmp_path / "tokens.json"
    login = LoginRun(tmp_path, peer.url, "--token-file", str(token_file))
    query = parse_qs(urlsplit(login.authorization_url()).query)
    redirect_uri, state = query["redirect_uri"][0], query["state"][0]
    status, _, page = _http_get(f"{redirect_uri}?error=access_denied&state={state}")
    assert status == 200 and b"access_denied" not in page
    status, out, err = login.finish()
    assert status == 3
    assert "signing in to server 'server'" in err and "failed" in err and "access_denied" in err
    assert "signed in" not in out
    assert not token_file.exists() or json.loads(token_file.read_text())["tokens"] == []


def test_login_times_out_when_nobody_signs_in(tmp_path: Path, peer: Any) -> None:
    token_file = tmp_path / "tokens.json"
    login = LoginRun(tmp_path, peer.url, "--token-file", str(token_file), "--timeout", "1")
    login.authorization_url()
    status, _, err = login.finish()
    assert status == 3
    assert "no sign-in response within 1 s" in err
    assert not token_file.exists() or json.loads(token_file.read_text())["tokens"] == []


def test_login_to_a_server_without_authorization(tmp_path: Path) -> None:
    from mcpcore_demo import DemoServer

    token_file = tmp_path / "tokens.json"
    with DemoServer().serve_in_thread() as running:
        result = run(
            tmp_path, "login", running.url, "--no-browser", "--token-file", str(token_file)
        )
    assert result.returncode == 0, result.stderr
    assert "did not ask for authorization" in result.stderr
    assert "Open this URL" not in result.stderr
    assert not token_file.exists()


def test_unusable_token_file_is_a_clear_error(tmp_path: Path) -> None:
    """tools, call, check, login and auth status refuse a corrupt or world-readable token
    file with exit 2, never showing its content; logout --all removes it."""
    token_file = tmp_path / "tokens.json"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, f'{{"version": 1, "tokens": [{{"access_token": "{ACCESS}"'.encode())
    os.close(fd)
    tf = ["--token-file", str(token_file)]
    url = "http://127.0.0.1:9/mcp"  # never reached: the file is checked first
    for args in (
        ["tools", url],
        ["call", url, "echo"],
        ["login", url, "--no-browser"],
        ["auth", "status"],
        ["logout", url],
    ):
        result = run(tmp_path, *args, *tf)
        assert result.returncode == 2, (args, result.stderr)
        assert "is corrupt or was not written by mcpcore" in result.stderr, args
        _assert_no_secret(result.stdout + result.stderr)

    token_file.write_text(json.dumps({"version": 1, "tokens": [], "clients": []}))
    os.chmod(token_file, 0o644)
    result = run(tmp_path, "tools", url, *tf)
    assert result.returncode == 2
    assert "can be read or written by other users (mode 0644)" in result.stderr
    assert "chmod 600" in result.stderr

    removed = run(tmp_path, "logout", "--all", *tf)
    assert removed.returncode == 0 and not token_file.exists()


def test_usage_errors(tmp_path: Path) -> None:
    for args in (
        ["login"],
        ["login", "http://127.0.0.1:9/mcp", "--config", "x.json"],
        ["login", "--config", "x.json"],
        ["login", "http://127.0.0.1:9/mcp", "--server", "a"],
        ["logout"],
        ["logout", "--all", "http://127.0.0.1:9/mcp"],
        ["auth"],
        ["auth", "list"],
    ):
        result = run(tmp_path, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert "see 'mcpcore" in result.stderr
    assert not (tmp_path / "xdg").exists()  # nothing was written anywhere
    help_text = run(tmp_path, "--help").stdout
    for command in ("login", "logout", "auth"):
        assert f"  {command}  " in help_text
