"""A3 for library users (issue 25 item 7): ``mcpcore_signin``'s one-line ``auth=``.

``browser_auth()`` / ``async_browser_auth()`` sign in through a browser and a
loopback listener, keeping the tokens in ``mcpcore login``'s token file. Here
the browser is scripted (``open_browser`` is injectable): it does what a
browser and an approving person do against the protected SDK server, whose
``/authorize`` redirects back at once. Checked: one line signs in on every
driver, the command line then uses those tokens, a second client needs no
browser, and the hook itself (the state it waits for, reuse, no browser).
"""

from __future__ import annotations

import http.client
import logging
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from drivers import DRIVERS, Face, backend_of, open_client
from mcpcore import AuthOptions
from mcpcore_signin import (
    TOKEN_FILE_ENV,
    BrowserSignIn,
    FileTokenStore,
    ListenerTimeout,
    SignInStore,
    async_browser_auth,
    browser_auth,
)
from protected_peer import ProtectedPeer, protected_sdk_server
from test_cli_auth import run

pytestmark = [pytest.mark.anyio, pytest.mark.realpeer]


def _get(url: str) -> tuple[int, str | None]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""))
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("Location")
    finally:
        connection.close()


class Browser:
    """A scripted system browser: opens the authorization URL (the server approves at
    once with a redirect) and follows the redirect to the loopback listener."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.pages: list[int] = []

    def __call__(self, url: str) -> bool:
        self.urls.append(url)
        status, location = _get(url)
        assert status in (302, 303, 307) and location is not None
        self.pages.append(_get(location)[0])
        return True


def _no_browser(url: str) -> bool:
    raise AssertionError("no sign-in was needed, yet the browser was opened")


def _close(auth: AuthOptions) -> None:
    hook = auth.authorize
    getattr(hook, "__self__", hook).close()  # type: ignore[union-attr]


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module")
def server() -> Iterator[ProtectedPeer]:
    with protected_sdk_server(step_up=False) as peer:
        yield peer


async def _whoami(client: Face) -> str:
    return (await client.call("p/whoami", {})).text


async def test_A3_one_line_signs_in_and_shares_the_token_file_with_the_cli(
    driver: str, server: ProtectedPeer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "state" / "tokens.json"
    monkeypatch.setenv(TOKEN_FILE_ENV, str(token_file))  # mcpcore login's file, by default
    make = browser_auth if driver == "threaded" else async_browser_auth
    browser = Browser()
    auth = make(open_browser=browser)  # the one line
    try:
        async with open_client(driver, "p", {"url": server.url}, auth=auth) as client:
            assert "scopes=mcp:read" in await _whoami(client)
    finally:
        _close(auth)
    assert len(browser.urls) == 1 and browser.pages == [200]
    query = parse_qs(urlsplit(browser.urls[0]).query)
    assert query["redirect_uri"] == [auth.redirect_uri] and query["code_challenge_method"] == [
        "S256"
    ]
    stored = FileTokenStore(token_file).get_tokens(server.url)
    assert stored is not None and stored.refresh_token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600

    # The command line uses the library's sign-in as its own ...
    called = run(tmp_path, "call", server.url, "whoami", "--token-file", str(token_file))
    assert called.returncode == 0, called.stderr
    assert "scopes=mcp:read" in called.stdout
    # ... and so does the next library client: no browser.
    again = make(open_browser=_no_browser)
    try:
        async with open_client(driver, "p", {"url": server.url}, auth=again) as client:
            assert "scopes=mcp:read" in await _whoami(client)
    finally:
        _close(again)


def test_A3_the_hook_checks_the_state_and_serves_one_sign_in_after_another(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The listener answers the sign-in under way only (R13: a made-up state, or the
    last sign-in's replayed, is refused), a second sign-in on the same hook works,
    and with no browser (the opener answers False) the URL is logged."""
    code = {"first": "c1", "second": "c2"}

    def opener(url: str) -> bool:
        state = parse_qs(urlsplit(url).query)["state"][0]
        base = sign_in.redirect_uri
        assert _get(f"{base}?code=forged&state=made-up")[0] == 400
        if state == "second":
            assert _get(f"{base}?code=c1&state=first")[0] == 400
        assert _get(f"{base}?code={code[state]}&state={state}")[0] == 200
        return state == "first"

    with BrowserSignIn(open_browser=opener) as sign_in:
        redirect = sign_in.redirect_uri
        with caplog.at_level(logging.WARNING, logger="mcpcore_signin"):
            first = sign_in("https://as.example/authorize?client_id=c&state=first", redirect)
            assert not caplog.records
            second = sign_in("https://as.example/authorize?client_id=c&state=second", redirect)
        assert first == f"{redirect}?code=c1&state=first"
        assert second == f"{redirect}?code=c2&state=second"
        [record] = caplog.records
        assert "open this URL to sign in" in record.getMessage()
        assert "state=second" in record.getMessage()
        with pytest.raises(ValueError, match="elsewhere"):
            sign_in("https://as.example/authorize?state=s", "http://127.0.0.1:1/callback")
        with pytest.raises(ValueError, match="no state"):
            sign_in("https://as.example/authorize?client_id=c", redirect)


def test_A3_the_hook_times_out_and_closes() -> None:
    sign_in = BrowserSignIn(open_browser=lambda url: True, timeout=0.2)
    try:
        with pytest.raises(ListenerTimeout):
            sign_in("https://as.example/authorize?state=s", sign_in.redirect_uri)
    finally:
        sign_in.close()
    sign_in.close()  # twice: nothing happens
    with pytest.raises(ValueError, match="positive"):
        BrowserSignIn(timeout=0)


def test_A3_browser_auth_is_a_plain_auth_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the one line builds: the token file, the hook, its redirect URI and the
    other AuthOptions fields given; nothing secret in its repr."""
    store = FileTokenStore(tmp_path / "t.json")
    auth = browser_auth(store=store, scope="mcp:read", timeout=30)
    try:
        assert isinstance(auth, AuthOptions) and auth.store is store
        assert isinstance(auth.authorize, BrowserSignIn)
        assert auth.redirect_uri == auth.authorize.redirect_uri
        assert auth.scope == "mcp:read" and auth.user_wait == 40
        assert "BrowserSignIn" not in repr(auth)
    finally:
        _close(auth)
    # W2: SQLite by default (nothing is created until a sign-in is kept)...
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    monkeypatch.delenv("MCPCORE_TOKEN_STORE", raising=False)
    default = async_browser_auth()
    try:
        assert isinstance(default.store, SignInStore)
        assert default.store.path == tmp_path / "xdg" / "mcpcore" / "tokens.sqlite3"
        assert not (tmp_path / "xdg").exists()
    finally:
        _close(default)
    # ... the JSON token file when $MCPCORE_TOKEN_FILE names one
    monkeypatch.setenv(TOKEN_FILE_ENV, str(tmp_path / "named.json"))
    named = async_browser_auth()
    try:
        assert isinstance(named.store, FileTokenStore)
        assert named.store.path == tmp_path / "named.json"
    finally:
        _close(named)


@pytest.mark.parametrize("module", ["mcpcore_threaded", "mcpcore_anyio"])
def test_A3_option_mistakes_raise_when_the_client_is_made(module: str) -> None:
    """docs/authorization.md: every mistake in auth= raises InvalidValue at
    construction, the hook without a redirect_uri included (it raised at start)."""
    import importlib

    from mcpcore import InvalidValue, PreRegisteredClient

    client_class = importlib.import_module(module).McpClient
    server = {"url": "https://mcp.example.com/mcp"}
    for auth, hook in (
        (AuthOptions(), lambda url, redirect_uri: url),
        (AuthOptions(grant="client_credentials"), None),
        (AuthOptions(client_metadata_url="http://client.example/meta"), None),
        (
            AuthOptions(
                client=PreRegisteredClient(client_id="c", auth_method="client_secret_post")
            ),
            None,
        ),
        (AuthOptions(hook_timeout=0), None),
    ):
        with pytest.raises(InvalidValue):
            client_class("p", server, auth=auth, authorize=hook)


def test_N1_the_token_file_keeps_the_dpop_key_and_never_shows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """N1, A4: the JSON token file keeps a DPoP-bound set's key export (a private
    JWK, made by ``mcpcore_jwt``) with its tokens, reads it back whole and the key
    revives from it; a record written before the field reads as None; the export
    shows in no repr, str or log record."""
    import json

    from mcpcore import TokenKey, TokenSet
    from mcpcore.auth._oauth_dpop import jwk_thumbprint
    from mcpcore_jwt import DpopKey

    dpop_key = DpopKey.generate()
    export = dpop_key.export()
    private = json.loads(export)["d"]
    key = TokenKey(server_url="https://mcp.example/mcp", issuer="https://as.example")
    bound = TokenSet(
        access_token="at-bound",
        token_type="DPoP",
        issuer="https://as.example",
        token_endpoint="https://as.example/token",
        resource="https://mcp.example/mcp",
        client_id="client",
        dpop_jkt=jwk_thumbprint(dpop_key.public_jwk),
        dpop_key_export=export,
    )
    caplog.set_level(logging.DEBUG)
    store = FileTokenStore(tmp_path / "tokens.json")
    assert store.set_tokens(key, bound)
    back = FileTokenStore(tmp_path / "tokens.json").get_tokens(key.server_url)
    assert back == bound and back.dpop_key_export is not None
    assert DpopKey.from_export(back.dpop_key_export).public_jwk == dpop_key.public_jwk
    shown = [repr(back), str(back), repr(store), repr(dpop_key), caplog.text]
    assert all(private not in text and export not in text for text in shown)
    # a file written before the field: the set reads with no key
    document = json.loads((tmp_path / "tokens.json").read_text())
    for record in document["tokens"]:
        del record["dpop_key_export"]
    (tmp_path / "tokens.json").write_text(json.dumps(document))
    old = store.get_tokens(key.server_url)
    assert old is not None and old.dpop_key_export is None and old.access_token == "at-bound"
