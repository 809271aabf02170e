"""A3 with several sign-ins at once (issue 36, R4): one ``BrowserSignIn`` serving the
clients of a hub given one ``auth=``.

The listener used to hold one ``state``: the second sign-in replaced the first's,
the first's genuine redirect was refused (HTTP 400), and both waits returned the
second's redirect, so the first server's flow failed its state check. Here the
scripted browser holds every authorization URL until both sign-ins have asked
(so both are under way at once, every run), then follows each to the real
authorization server, which redirects back at once. Each sign-in must get its
own code, every genuine redirect a 200, and both servers come up.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of
from mcpcore import MemoryTokenStore
from mcpcore_signin import LoopbackListener, async_browser_auth, browser_auth
from protected_peer import ProtectedPeer, protected_sdk_server
from test_signin import Browser, _close, _get

WAIT = 60.0  # bound on every wait here


class HoldingBrowser:
    """Opens nothing until ``together`` sign-ins have asked, then follows each URL to
    the authorization server and its redirect to the listener (from the thread that
    asked, as a browser tab of its own would)."""

    def __init__(self, together: int) -> None:
        self.asked = threading.Barrier(together, timeout=WAIT)
        self.lock = threading.Lock()
        self.urls: list[str] = []
        self.redirects: dict[str, tuple[str, int]] = {}  # state -> (code, listener's status)

    def __call__(self, url: str) -> bool:
        with self.lock:
            self.urls.append(url)
        self.asked.wait()  # every sign-in is under way before any comes back
        status, location = _get(url)
        assert status in (302, 303, 307) and location is not None
        params = parse_qs(urlsplit(location).query)
        page = _get(location)[0]
        with self.lock:
            self.redirects[params["state"][0]] = (params["code"][0], page)
        return True


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ProtectedPeer, ProtectedPeer]]:
    with protected_sdk_server(step_up=False) as one, protected_sdk_server(step_up=False) as two:
        yield one, two


def test_A3_the_listener_routes_each_redirect_by_its_state() -> None:
    """Two sign-ins under way on one listener: each redirect goes to the sign-in whose
    state it carries, in whatever order they come; a forged state, and one whose
    sign-in is over (a replay), are refused."""
    with LoopbackListener() as listener:
        base = listener.redirect_uri
        listener.expect_state("first")
        listener.expect_state("second")
        got: dict[str, str] = {}
        waiter = threading.Thread(target=lambda: got.update(first=listener.wait(WAIT, "first")))
        waiter.start()
        assert _get(f"{base}?code=c2&state=second")[0] == 200
        assert _get(f"{base}?code=forged&state=third")[0] == 400
        assert _get(f"{base}?code=c1&state=first")[0] == 200
        waiter.join(WAIT)
        assert got == {"first": f"{base}?code=c1&state=first"}
        assert listener.wait(WAIT, "second") == f"{base}?code=c2&state=second"
        assert _get(f"{base}?code=c1&state=first")[0] == 400  # that sign-in is over
        with pytest.raises(ValueError, match="no sign-in with that state"):
            listener.wait(1, "first")


@pytest.mark.anyio
@pytest.mark.realpeer
async def test_A3_one_browser_sign_in_serves_two_sign_ins_at_once(
    driver: str, servers: tuple[ProtectedPeer, ProtectedPeer]
) -> None:
    one, two = servers
    document = json.dumps({"mcpServers": {"one": {"url": one.url}, "two": {"url": two.url}}})
    browser = HoldingBrowser(together=2)
    options = {"store": MemoryTokenStore(), "open_browser": browser, "timeout": WAIT}
    if driver == "threaded":
        auth = browser_auth(**options)
        try:

            def run() -> dict[str, str]:
                with mcpcore_threaded.McpHub.from_text(document, auth=auth) as hub:
                    hub.ready(WAIT)
                    return {name: hub.call(f"{name}/whoami", {}).text for name in ("one", "two")}

            said = await anyio.to_thread.run_sync(run)
        finally:
            _close(auth)
    else:
        auth = async_browser_auth(**options)
        try:
            async with mcpcore_anyio.McpHub.from_text(document, auth=auth) as hub:
                await hub.ready(WAIT)
                said = {
                    name: (await hub.call(f"{name}/whoami", {})).text for name in ("one", "two")
                }
        finally:
            _close(auth)
    # Both sign-ins were under way at once, through the one listener ...
    states = [parse_qs(urlsplit(url).query)["state"][0] for url in browser.urls]
    assert len(states) == 2 and len(set(states)) == 2
    # ... each genuine redirect was taken (none refused) ...
    assert sorted(browser.redirects) == sorted(states)
    assert [page for _, page in browser.redirects.values()] == [200, 200]
    # ... and each sign-in got its own code: both servers signed in and answer.
    assert all("scopes=mcp:read" in text for text in said.values()), said
    for peer in (one, two):
        assert peer.count("token grant=authorization_code") >= 1


@pytest.mark.anyio
@pytest.mark.realpeer
async def test_A3_clients_sharing_a_store_sign_in_once_per_issuer(
    driver: str, servers: tuple[ProtectedPeer, ProtectedPeer]
) -> None:
    """R4, the core's part: two clients of one server sharing a store (a hub given one
    ``auth=``) start at once and both meet a 401. They sign in one at a time (the
    issuer's sign-in lock): the second finds the first's tokens in the store, and
    they fit, so the person is asked once and both clients use that sign-in."""
    one, _ = servers
    document = json.dumps({"mcpServers": {"a": {"url": one.url}, "b": {"url": one.url}}})
    browser = Browser()
    before = one.count("authorize ")
    options = {"store": MemoryTokenStore(), "open_browser": browser, "timeout": WAIT}
    if driver == "threaded":
        auth = browser_auth(**options)
        try:

            def run() -> dict[str, str]:
                with mcpcore_threaded.McpHub.from_text(document, auth=auth) as hub:
                    hub.ready(WAIT)
                    return {name: hub.call(f"{name}/whoami", {}).text for name in ("a", "b")}

            said = await anyio.to_thread.run_sync(run)
        finally:
            _close(auth)
    else:
        auth = async_browser_auth(**options)
        try:
            async with mcpcore_anyio.McpHub.from_text(document, auth=auth) as hub:
                await hub.ready(WAIT)
                said = {name: (await hub.call(f"{name}/whoami", {})).text for name in ("a", "b")}
        finally:
            _close(auth)
    assert all("scopes=mcp:read" in text for text in said.values()), said
    assert len(browser.urls) == 1 and browser.pages == [200]
    assert one.count("authorize ") - before == 1


def test_A3_a_sign_in_waits_for_another_on_the_same_issuer_at_most_user_wait() -> None:
    """R4, sans-IO: while another client sharing the store signs in with the same
    authorization server (its sign-in lock held), no person is asked; once it is
    given back the sign-in goes on; held past ``user_wait`` the attempt fails with
    ``AuthorizationTimeout`` rather than waiting for ever."""
    from mcpcore import AuthOptions, AuthorizationTimeout, SessionReady, StartFailed
    from test_auth_layer import AS, make

    store = MemoryTokenStore()
    assert store.lock_sign_in(AS)  # another client's sign-in under way
    link = make(start=False, store=store, auth_options=AuthOptions(user_wait=20.0))
    link.start()
    link.advance(5.0)
    assert not link.opened and not link.of_type(SessionReady)
    store.unlock_sign_in(AS)  # that sign-in is over (it stored nothing that fits)
    link.advance(1.0)
    assert len(link.opened) == 1 and link.of_type(SessionReady)
    assert store.lock_sign_in(AS)  # given back once this sign-in was done
    store.unlock_sign_in(AS)

    stuck = MemoryTokenStore()
    assert stuck.lock_sign_in(AS)
    waiting = make(start=False, store=stuck, auth_options=AuthOptions(user_wait=20.0))
    waiting.start()
    waiting.advance(21.0)
    assert not waiting.opened
    [failed] = waiting.of_type(StartFailed)[:1]
    assert isinstance(failed.error, AuthorizationTimeout)
    assert "another client sharing the token store" in str(failed.error)
