"""OAuth against a real authorization server, on every driver.

The peer is the official Python SDK server with its own authorization
support (``tests/protected_peer.py``): protected-resource and
authorization-server metadata, dynamic client registration, an
``/authorize`` that approves at once with a redirect, a token endpoint with
refresh tokens, and a bearer-protected MCP endpoint whose ``admin_action``
tool needs one more scope (HTTP 403 ``insufficient_scope``). The client's
``authorize`` hook is headless: it GETs the authorization URL and hands back
the redirect it is answered with, as a browser and a person would.

What is checked is what a user sees: call results, how often the hook asked
"the person", and what the server logged (registrations, authorizations,
grants, refusals). Servers run in their own processes on free loopback
ports; every test is bounded in time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from drivers import DRIVERS, Face, backend_of, open_client
from mcpcore import AuthOptions, MemoryTokenStore
from protected_peer import (
    ADMIN_SCOPE,
    READ_SCOPE,
    ProtectedPeer,
    authorize_headless,
    authorize_headless_blocking,
    protected_sdk_server,
)

pytestmark = [pytest.mark.anyio, pytest.mark.realpeer]

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never listened on: the server redirects at once
ERAS = ["auto", "legacy"]  # auto speaks 2026-07-28 with this server; legacy the handshake era
BOUND = 60.0  # seconds any one test may take
SHORT_TTL = 2  # seconds an access token of the short_lived server lives
# docs/interop.md's authorization table is rendered from this (scripts/interop_table.py)
RESULTS = Path(__file__).resolve().parents[1] / "build" / "interop_auth.json"
ERA_SHOWN = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def passed(behaviour: str, driver: str, era: str | None = None) -> None:
    """Record, at the end of a test that passed, that ``behaviour`` held on ``driver``."""
    RESULTS.parent.mkdir(exist_ok=True)
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    eras = data.setdefault(behaviour, {}).setdefault(driver, [])
    shown = ERA_SHOWN[era] if era else ""
    if shown not in eras:
        eras.append(shown)
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True))


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module")
def server() -> Iterator[ProtectedPeer]:
    with protected_sdk_server() as peer:
        yield peer


@pytest.fixture(scope="module")
def short_lived() -> Iterator[ProtectedPeer]:
    """Access tokens of 2 s, shorter than the client's 60 s refresh margin."""
    with protected_sdk_server(token_ttl=SHORT_TTL, step_up=False) as peer:
        yield peer


@pytest.fixture(scope="module")
def dies_early() -> Iterator[ProtectedPeer]:
    """Tokens that die after 1 to 2 s while the token response says an hour: the
    client learns of the expiry from a 401 only."""
    with protected_sdk_server(token_ttl=1, expires_in=3600, step_up=False) as peer:
        yield peer


class Person:
    """The ``authorize`` hook of one client: records every URL it was sent to."""

    def __init__(self, driver: str, *, deny: bool = False) -> None:
        self.threaded = driver == "threaded"
        self.deny = deny
        self.urls: list[str] = []

    @property
    def calls(self) -> int:
        return len(self.urls)

    def params(self, index: int) -> dict[str, str]:
        """The query of the ``index``-th authorization URL (one value per name)."""
        query = parse_qs(urlsplit(self.urls[index]).query, keep_blank_values=True)
        assert all(len(values) == 1 for values in query.values()), query
        return {name: values[0] for name, values in query.items()}

    def _refusal(self, url: str, redirect_uri: str) -> str:
        state = parse_qs(urlsplit(url).query)["state"][0]
        return f"{redirect_uri}?error=access_denied&state={state}"

    async def _hook(self, url: str, redirect_uri: str) -> str:
        self.urls.append(url)
        if self.deny:
            return self._refusal(url, redirect_uri)
        return await authorize_headless(url, redirect_uri)

    def _blocking_hook(self, url: str, redirect_uri: str) -> str:
        self.urls.append(url)
        if self.deny:
            return self._refusal(url, redirect_uri)
        return authorize_headless_blocking(url, redirect_uri)

    @property
    def hook(self) -> Any:
        return self._blocking_hook if self.threaded else self._hook


def client_options(
    person: Person, store: MemoryTokenStore | None = None, **kw: Any
) -> dict[str, Any]:
    return {
        "auth": AuthOptions(redirect_uri=REDIRECT_URI, store=store),
        "authorize": person.hook,
        **kw,
    }


def since(peer: ProtectedPeer, mark: int) -> list[str]:
    """The server's event lines after the first ``mark``."""
    return peer.events()[mark:]


def starting(lines: list[str], prefix: str) -> list[str]:
    return [line for line in lines if line.startswith(prefix)]


async def whoami(client: Face) -> str:
    return (await client.call("p/whoami", {})).text


@pytest.mark.parametrize("era", ERAS)
async def test_first_request_runs_the_whole_flow(
    driver: str, era: str, server: ProtectedPeer
) -> None:
    """A 401 on the first request: discovery, registration, one authorization (PKCE,
    resource, the resource's scope), a code exchange; then the tools are listed and
    called with the token."""
    mark = len(server.events())
    person = Person(driver)
    async with open_client(
        driver, "p", {"url": server.url}, **client_options(person, protocol=era)
    ) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            assert {tool.name for tool in client.tools} == {"whoami", "admin_action"}
            text = await whoami(client)
            assert client.protocol_version == ("2026-07-28" if era == "auto" else "2025-11-25")

    assert person.calls == 1
    asked = person.params(0)
    assert urlsplit(person.urls[0])._replace(query="").geturl() == f"{server.issuer}/authorize"
    assert asked["response_type"] == "code"
    assert asked["redirect_uri"] == REDIRECT_URI
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["resource"] == server.url
    assert asked["scope"] == READ_SCOPE  # the protected resource's scopes_supported
    assert asked["state"]

    events = since(server, mark)
    client_id = asked["client_id"]
    assert text == f"client={client_id} scopes={READ_SCOPE}"
    assert starting(events, "http 401 POST"), events  # the first request went without a token
    assert starting(events, "register ") == [
        f"register client_id={client_id} scope={READ_SCOPE} auth_method=client_secret_basic"
    ]
    assert starting(events, "authorize ") == [
        f"authorize client_id={client_id} scope={READ_SCOPE} resource={server.url}"
    ]
    assert starting(events, "token ") == [f"token grant=authorization_code scope={READ_SCOPE}"]
    assert starting(events, "call ") == [f"call whoami scopes={READ_SCOPE}"]
    # the 401 came before the authorization, and nothing was refused after it
    assert max(i for i, line in enumerate(events) if line.startswith("http 401")) < events.index(
        starting(events, "authorize ")[0]
    )
    passed("first call runs the flow (discovery, registration, PKCE code grant)", driver, era)


async def test_refresh_before_expiry(driver: str, short_lived: ProtectedPeer) -> None:
    """Short-lived tokens: calls made after the first token's expiry succeed, the
    token having been refreshed before the server refused it; the person is asked
    once, and there is no refresh storm."""
    peer = short_lived
    mark = len(peer.events())
    person = Person(driver)
    async with open_client(driver, "p", {"url": peer.url}, **client_options(person)) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            refreshes = peer.count("token grant=refresh_token")
            assert availability.ok, f"{availability.reason}; {refreshes} refresh grants so far"
            started = anyio.current_time()
            assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
            calls = 1
            # Call on until a refresh was made and the first token is past its expiry.
            with anyio.fail_after(15):
                while (
                    not starting(since(peer, mark), "token grant=refresh_token")
                    or anyio.current_time() - started < SHORT_TTL + 0.5
                ):
                    await anyio.sleep(0.2)
                    assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
                    calls += 1

    events = since(peer, mark)
    assert person.calls == 1
    assert starting(events, "token grant=authorization_code") == [
        f"token grant=authorization_code scope={READ_SCOPE}"
    ]
    refreshes = len(starting(events, "token grant=refresh_token"))
    assert 1 <= refreshes <= calls + 1, events  # at most one per request
    assert len(starting(events, "call whoami")) == calls
    # refreshed in time: after the first grant, the server never refused a token
    granted = events.index(f"token grant=authorization_code scope={READ_SCOPE}")
    assert not starting(events[granted:], "http 401"), events
    passed("token refreshed before it expires", driver)


async def test_refresh_when_the_server_refuses_an_expired_token(
    driver: str, dies_early: ProtectedPeer
) -> None:
    """A token the server no longer accepts (401) while a refresh token is held: the client
    refreshes and sends the request again; the call succeeds, the person is not asked."""
    peer = dies_early
    mark = len(peer.events())
    person = Person(driver)
    async with open_client(driver, "p", {"url": peer.url}, **client_options(person)) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
            calls = 1
            with anyio.fail_after(15):
                while not starting(since(peer, mark), "token grant=refresh_token"):
                    await anyio.sleep(0.2)
                    assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
                    calls += 1

    events = since(peer, mark)
    assert person.calls == 1
    assert len(starting(events, "token grant=authorization_code")) == 1
    granted = events.index(f"token grant=authorization_code scope={READ_SCOPE}")
    first_refresh = events.index(f"token grant=refresh_token scope={READ_SCOPE}")
    # the token was refused once dead (a 401 after the grant), then refreshed, and the
    # refused request went through with the new one
    assert starting(events[granted:first_refresh], "http 401 POST"), events
    assert f"call whoami scopes={READ_SCOPE}" in events[first_refresh:]
    assert len(starting(events, "call whoami")) == calls  # every call ran exactly once
    passed("token refreshed when the server refuses it (401)", driver)


@pytest.mark.parametrize("era", ERAS)
async def test_step_up_asks_for_the_union_of_scopes(
    driver: str, era: str, server: ProtectedPeer
) -> None:
    """A 403 insufficient_scope: one re-authorization asking for the scopes held plus the
    challenged one; the call then succeeds; later calls need no further authorization."""
    mark = len(server.events())
    person = Person(driver)
    async with open_client(
        driver, "p", {"url": server.url}, **client_options(person, protocol=era)
    ) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
            assert person.calls == 1

            assert (await client.call("p/admin_action", {})).text == "admin action done"
            assert person.calls == 2
            stepped = person.params(1)
            # the scopes held first, then the challenged one
            assert stepped["scope"] == f"{READ_SCOPE} {ADMIN_SCOPE}"
            # the SDK's server grants a client only the scope it registered with, so
            # the step-up registers a new client for the union (O22)
            assert stepped["client_id"] != person.params(0)["client_id"]
            assert stepped["state"] != person.params(0)["state"]
            assert stepped["code_challenge"] != person.params(0)["code_challenge"]

            assert (await whoami(client)).endswith(f"scopes={READ_SCOPE} {ADMIN_SCOPE}")
            assert (await client.call("p/admin_action", {})).text == "admin action done"
    assert person.calls == 2

    events = since(server, mark)
    both = f"{READ_SCOPE} {ADMIN_SCOPE}"
    assert [line.split(" scope=")[1] for line in starting(events, "register ")] == [
        f"{READ_SCOPE} auth_method=client_secret_basic",
        f"{both} auth_method=client_secret_basic",
    ]
    assert starting(events, "insufficient_scope ") == [
        f"insufficient_scope admin_action scopes={READ_SCOPE}"
    ]
    assert starting(events, "authorize ")[1].split(" scope=")[1].startswith(f"{both} resource=")
    assert starting(events, "token ") == [
        f"token grant=authorization_code scope={READ_SCOPE}",
        f"token grant=authorization_code scope={both}",
    ]
    assert starting(events, "call ") == [
        f"call whoami scopes={READ_SCOPE}",
        f"call admin_action scopes={both}",
        f"call whoami scopes={both}",
        f"call admin_action scopes={both}",
    ]
    passed("step-up on 403 insufficient_scope (union of scopes)", driver, era)


async def test_tokens_in_a_shared_store_need_no_authorization(
    driver: str, server: ProtectedPeer
) -> None:
    """A second client given the first one's store is ready with its tokens: no
    registration, no authorization, no token request, no 401."""
    store = MemoryTokenStore()
    first = Person(driver)
    async with open_client(
        driver, "p", {"url": server.url}, **client_options(first, store)
    ) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
    assert first.calls == 1
    client_id = first.params(0)["client_id"]

    mark = len(server.events())
    second = Person(driver)
    async with open_client(
        driver, "p", {"url": server.url}, **client_options(second, store)
    ) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            assert availability.ok, availability.reason
            assert await whoami(client) == f"client={client_id} scopes={READ_SCOPE}"
    assert second.calls == 0
    assert since(server, mark) == [f"call whoami scopes={READ_SCOPE}"]
    passed("stored tokens reused: no sign-in", driver)


async def test_a_refused_authorization_is_reported_and_not_asked_again(
    driver: str, server: ProtectedPeer
) -> None:
    """The person refuses: one question; the refusal is what the host is told; no
    start-up in the other era is tried over an authorization matter; and the start-up
    retry that follows does not ask the person again."""
    mark = len(server.events())
    person = Person(driver, deny=True)
    async with open_client(driver, "p", {"url": server.url}, **client_options(person)) as client:
        with anyio.fail_after(BOUND):
            availability = await client.ready(30)
            calls = person.calls
            assert not availability.ok and "access_denied" in (availability.reason or ""), (
                availability
            )
            # The client retries its start-up after a backoff; that attempt ends telling
            # the host to sign in, without asking the person.
            with anyio.fail_after(15):
                while True:
                    retried = await client.ready(0)
                    if not retried.ok and "login" in (retried.reason or "").lower():
                        break
                    await anyio.sleep(0.05)
    events = since(server, mark)
    assert calls == 1, f"the person was asked {calls} times for one start-up attempt"
    assert person.calls == 1, f"the start-up retry asked the person again ({person.calls} calls)"
    assert len(starting(events, "http 401 POST server/discover")) >= 2, events  # it retried
    assert not starting(events, "http 401 POST initialize"), events
    passed("a refused sign-in is reported and not asked again", driver)


# ---------------------------------------------------------------------------
# Interoperability with the SDK's authorization server exactly as shipped. A core
# matter (the token request's form), so one driver shows it: with client_secret_basic
# the SDK's token endpoint wants client_id in the form as well (found here; fixed).


@pytest.mark.parametrize("driver", ["anyio-asyncio"])
async def test_the_sdk_authorization_server_as_shipped(driver: str) -> None:
    """The SDK registers the client for client_secret_basic, as asked, and its token
    endpoint wants client_id in the form as well: the flow still completes."""
    with protected_sdk_server(keep_auth_method=True, step_up=False) as peer:
        person = Person(driver)
        async with open_client(driver, "p", {"url": peer.url}, **client_options(person)) as client:
            with anyio.fail_after(BOUND):
                availability = await client.ready(30)
                assert availability.ok, availability.reason
                assert (await whoami(client)).endswith(f"scopes={READ_SCOPE}")
        assert person.calls == 1
        assert starting(peer.events(), "register ")[0].endswith("auth_method=client_secret_basic")
