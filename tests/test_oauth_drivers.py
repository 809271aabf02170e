"""OAuth through both drivers (A1, A3), over loopback against the demo server made
into a protected resource with a tiny authorization server on the same origin.

Each test runs on the anyio driver (asyncio and trio) and the threaded one. The
``authorize`` hook stands in for the person at the browser; the test decides
when (and whether) they finish. What is checked is what a host sees: ready or
not and why, call results, how often a person was asked, what the server got.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import pytest

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client, threads_named, wait_for
from mcpcore import (
    AuthOptions,
    AuthorizationRequired,
    HookError,
    MemoryTokenStore,
    PreRegisteredClient,
)
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

pytestmark = pytest.mark.anyio

TOKEN = "the-good-token"
REDIRECT = "http://127.0.0.1:9/callback"  # never listened on: the hook answers for it


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


class Protected:
    """The demo server's fault hook: 401 without the token; metadata and a token endpoint."""

    def __init__(self) -> None:
        self.origin = ""
        self.token_requests = 0
        self.bearers: list[str | None] = []

    def __call__(self, request: ReceivedRequest) -> FaultResponse | None:
        path = request.path.split("?", 1)[0]
        if path == "/.well-known/oauth-protected-resource/mcp":
            return FaultResponse.json(
                {"resource": f"{self.origin}/mcp", "authorization_servers": [self.origin]}
            )
        if path == "/.well-known/oauth-authorization-server":
            return FaultResponse.json(
                {
                    "issuer": self.origin,
                    "authorization_endpoint": f"{self.origin}/authorize",
                    "token_endpoint": f"{self.origin}/token",
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                }
            )
        if path == "/token":
            self.token_requests += 1
            return FaultResponse.json(
                {"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600}
            )
        if path.startswith("/.well-known/"):
            return FaultResponse.respond(404)
        bearer = request.headers.get("authorization")
        self.bearers.append(bearer)
        if bearer == f"Bearer {TOKEN}":
            return None  # the demo server answers as usual
        challenge = (
            f'Bearer resource_metadata="{self.origin}/.well-known/oauth-protected-resource/mcp"'
        )
        return FaultResponse.respond(401, {"www-authenticate": challenge})


def callback_for(url: str, redirect_uri: str) -> str:
    """What the authorization server sends a person back to once they approve."""
    state = parse_qs(urlsplit(url).query)["state"][0]
    return f"{redirect_uri}?{urlencode({'code': 'a-code', 'state': state})}"


def auth_options(store: MemoryTokenStore | None = None) -> AuthOptions:
    return AuthOptions(
        client=PreRegisteredClient(client_id="host-app"), redirect_uri=REDIRECT, store=store
    )


class Person:
    """The ``authorize`` hook for either driver; ``release`` lets a waiting person finish
    (``approve=False``: they give up, the hook raises)."""

    def __init__(self, *, wait: bool = False) -> None:
        self.asked: list[str] = []
        self._go = threading.Event()
        self._approve = True
        if not wait:
            self._go.set()

    def release(self, *, approve: bool = True) -> None:
        self._approve = approve
        self._go.set()

    def blocking(self, url: str, redirect_uri: str) -> str:
        self.asked.append(url)
        if not self._go.wait(20):
            raise TimeoutError("the test never released the person")
        if not self._approve:
            raise RuntimeError("the person closed the page")
        return callback_for(url, redirect_uri)

    async def waiting(self, url: str, redirect_uri: str) -> str:
        return await anyio.to_thread.run_sync(
            self.blocking, url, redirect_uri, abandon_on_cancel=True
        )

    def hook(self, driver: str) -> Any:
        return self.blocking if driver == "threaded" else self.waiting


async def test_A1_A3_a_401_runs_the_flow_through_the_hook_and_the_call_goes_through(
    driver: str,
) -> None:
    protected = Protected()
    person = Person()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(
            driver,
            "locked",
            {"url": running.url},
            auth=auth_options(),
            authorize=person.hook(driver),
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                output = await client.call("locked/echo", {"text": "hello"})
    assert "hello" in output.text
    assert len(person.asked) == 1 and person.asked[0].startswith(f"{protected.origin}/authorize?")
    assert protected.token_requests == 1
    assert protected.bearers[0] is None and protected.bearers[-1] == f"Bearer {TOKEN}"


async def test_A3_the_store_spares_a_second_client_the_person(driver: str) -> None:
    protected = Protected()
    store = MemoryTokenStore()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        for _ in range(2):
            person = Person()
            async with open_client(
                driver,
                "locked",
                {"url": running.url},
                auth=auth_options(store),
                authorize=person.hook(driver),
            ) as client:
                with anyio.fail_after(20):
                    assert (await client.ready(10)).ok
        assert person.asked == []  # the second client's person was never asked
    assert protected.token_requests == 1


async def test_A3_without_a_hook_the_server_is_unavailable_saying_sign_in_first(
    driver: str,
) -> None:
    protected = Protected()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(
            driver, "locked", {"url": running.url}, auth=auth_options()
        ) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
    assert not availability.ok
    assert "needs authorization" in (availability.reason or "")
    assert "sign in first" in (availability.reason or "")
    assert isinstance(availability.error, AuthorizationRequired)  # a host can tell the kind
    assert protected.token_requests == 0


async def test_A3_one_servers_login_does_not_block_another_in_a_hub(driver: str) -> None:
    """While a person takes their time signing in to one server, the hub's other
    server is ready and answers calls; when the person gives up, only the first
    server is unavailable, with the hook's failure as its reason; its start-up
    retries do not ask the person again; ``login()`` does, and then it is ready
    at once (no waiting out the retry backoff)."""
    protected = Protected()
    person = Person(wait=True)
    module: Any = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
    async with DemoServer(fault=protected).serve() as locked, DemoServer().serve() as open_:
        protected.origin = locked.url.rsplit("/mcp", 1)[0]
        document = json.dumps(
            {"mcpServers": {"locked": {"url": locked.url}, "open": {"url": open_.url}}}
        )
        hub = module.McpHub.from_mcp_json(
            document, auth=auth_options(), authorize=person.hook(driver), listen=False
        )
        with anyio.fail_after(30):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                try:
                    clients = hub.clients
                    assert (await anyio.to_thread.run_sync(clients["open"].ready, 10)).ok
                    output = await anyio.to_thread.run_sync(
                        lambda: hub.call("open/echo", {"text": "meanwhile"})
                    )
                    # the locked server's sign-in reaches the person in its own time
                    await wait_for(lambda: bool(person.asked), 10)
                    assert not (await anyio.to_thread.run_sync(clients["locked"].ready, 0.2)).ok
                    person.release(approve=False)
                    reason = await _reason_when_down(
                        lambda: anyio.to_thread.run_sync(clients["locked"].ready, 1)
                    )
                    later = await _reason_when_down(
                        lambda: anyio.to_thread.run_sync(clients["locked"].ready, 1), "login()"
                    )
                    assert len(person.asked) == 1
                    person.release(approve=True)
                    assert (await anyio.to_thread.run_sync(clients["locked"].login, 10)).ok
                    locked_output = await anyio.to_thread.run_sync(
                        lambda: hub.call("locked/echo", {"text": "signed in"})
                    )
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    clients = hub.clients
                    assert (await clients["open"].ready(10)).ok
                    output = await hub.call("open/echo", {"text": "meanwhile"})
                    await wait_for(lambda: bool(person.asked), 10)
                    assert not (await clients["locked"].ready(0.2)).ok
                    person.release(approve=False)
                    reason = await _reason_when_down(lambda: clients["locked"].ready(1))
                    later = await _reason_when_down(lambda: clients["locked"].ready(1), "login()")
                    assert len(person.asked) == 1
                    person.release(approve=True)
                    assert (await clients["locked"].login(10)).ok
                    locked_output = await hub.call("locked/echo", {"text": "signed in"})
    assert "meanwhile" in output.text
    assert "authorize hook failed" in reason
    assert "not completed" in later
    assert "signed in" in locked_output.text and len(person.asked) == 2
    assert threads_named("mcpcore") == []


async def _reason_when_down(ready: Any, saying: str = "hook") -> str:
    """The unavailability reason once it says ``saying`` (polls the condition, bounded)."""
    for _ in range(200):
        availability = await ready()
        if not availability.ok and saying in (availability.reason or ""):
            return str(availability.reason)
        await anyio.sleep(0.05)
    raise AssertionError(f"the locked server never reported {saying!r}: {availability.reason!r}")


# --- D2: every hook's outcome is defined, on every driver ----------------------------------


def _machine_options(store: MemoryTokenStore | None = None, **options: Any) -> AuthOptions:
    """A client-credentials client whose key signs through the host's signer."""
    return AuthOptions(
        grant="client_credentials",
        client=PreRegisteredClient(client_id="m2m", auth_method="private_key_jwt"),
        store=store,
        **options,
    )


class Signer:
    """The ``sign_assertion`` hook for either driver: the first request gets
    ``first`` ("bytes": a JWS as bytes; "silent": no answer until the test
    ends), every later one a compact JWS."""

    def __init__(self, first: str) -> None:
        self.first = first
        self.asked = 0
        self.released = threading.Event()

    def _answer(self) -> str | bytes | None:
        self.asked += 1
        if self.asked > 1:
            return "e30.e30.c2ln"
        if self.first == "bytes":
            return b"e30.e30.c2ln"
        return None

    def blocking(self, request: Any) -> Any:
        answer = self._answer()
        if answer is None:
            self.released.wait(30)  # never answers in time; ends with the test
            return "e30.e30.c2ln"
        return answer

    async def waiting(self, request: Any) -> Any:
        answer = self._answer()
        if answer is None:
            await anyio.sleep_forever()  # cancelled when the client closes
        return answer

    def hook(self, driver: str) -> Any:
        return self.blocking if driver == "threaded" else self.waiting


async def _ready_later(client: Any, within: float = 15.0) -> None:
    """The start-up retry after a failed attempt comes up (polled, bounded)."""
    with anyio.fail_after(within):
        while not (await client.ready(1)).ok:
            await anyio.sleep(0.05)


@pytest.mark.parametrize("first", ["bytes", "silent"])
async def test_D2_R8_R9_a_signer_that_answers_bytes_or_never_fails_clearly_and_a_retry_works(
    driver: str, first: str
) -> None:
    """R8: a signer answering ``bytes`` fails the waiting request (``HookError``);
    the threaded driver used to wedge OAuth for good. R9: a signer that never
    answers fails it at the core's deadline (``hook_timeout``) instead of
    holding the client until close. Either way the start-up retry works."""
    protected = Protected()
    signer = Signer(first)
    try:
        async with DemoServer(fault=protected).serve() as running:
            protected.origin = running.url.rsplit("/mcp", 1)[0]
            async with open_client(
                driver,
                "machine",
                {"url": running.url},
                auth=_machine_options(hook_timeout=1.0),
                sign_assertion=signer.hook(driver),
            ) as client:
                with anyio.fail_after(20):
                    availability = await client.ready(10)
                    assert not availability.ok
                    assert isinstance(availability.error, HookError)
                    if first == "bytes":
                        assert "sign_assertion hook answered a bytes" in str(availability.reason)
                    else:
                        assert "did not answer within 1 s" in str(availability.reason)
                    await _ready_later(client)
                    output = await client.call("machine/echo", {"text": "signed"})
    finally:
        signer.released.set()
    assert "signed" in output.text
    assert signer.asked == 2


class _RaisingStore(MemoryTokenStore):
    def set_tokens(self, key: Any, tokens: Any) -> None:
        raise OSError("the disk is full")


async def test_D2_R10_a_store_that_raises_loses_no_request(driver: str) -> None:
    """The threaded driver lost the request waiting for the tokens; the anyio one
    cancelled the host's task group. Now the write is lost, nothing else."""
    protected = Protected()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(
            driver,
            "locked",
            {"url": running.url},
            auth=auth_options(_RaisingStore()),
            authorize=Person().hook(driver),
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                output = await client.call("locked/echo", {"text": "kept in memory"})
    assert "kept in memory" in output.text


@pytest.mark.parametrize("driver", ["threaded"])
async def test_D2_the_threaded_driver_writes_the_store_off_its_lock(driver: str) -> None:
    """While the store writes, the client stays usable from other threads."""
    blocked: list[bool] = []
    others: list[threading.Thread] = []

    class Observing(MemoryTokenStore):
        client: Any = None

        def set_tokens(self, key: Any, tokens: Any) -> None:
            other = threading.Thread(target=lambda: self.client.ready(0.01))
            others.append(other)
            other.start()
            other.join(2)
            blocked.append(other.is_alive())
            super().set_tokens(key, tokens)

    store = Observing()
    protected = Protected()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        client = mcpcore_threaded.McpClient(
            "locked",
            {"url": running.url},
            auth=auth_options(store),
            authorize=Person().blocking,
        )
        store.client = client
        await anyio.to_thread.run_sync(client.start)
        try:
            assert (await anyio.to_thread.run_sync(client.ready, 10)).ok
        finally:
            await anyio.to_thread.run_sync(client.close)
            for other in others:
                other.join(10)
    assert blocked == [False]


class StalePerson:
    """The ``authorize`` hook: the person never finishes the first page (it fails
    much later, once the second sign-in has begun); the second one they approve,
    after the first page's failure has been reported."""

    def __init__(self) -> None:
        self.asked = 0
        self.release_first = threading.Event()
        self.first_thread: threading.Thread | None = None
        self.first_raising: anyio.Event | None = None

    def blocking(self, url: str, redirect_uri: str) -> str:
        self.asked += 1
        if self.asked == 1:
            self.first_thread = threading.current_thread()
            self.release_first.wait(20)
            raise RuntimeError("the person closed the first page")
        self.release_first.set()
        assert self.first_thread is not None
        self.first_thread.join(20)  # that thread has reported its failure by now
        return callback_for(url, redirect_uri)

    async def waiting(self, url: str, redirect_uri: str) -> str:
        self.asked += 1
        if self.asked == 1:
            self.first_raising = anyio.Event()
            with anyio.fail_after(20):
                while not self.release_first.is_set():
                    await anyio.sleep(0.01)
            self.first_raising.set()
            raise RuntimeError("the person closed the first page")
        self.release_first.set()
        while self.first_raising is None:
            await anyio.sleep(0.01)
        # The first hook's task reports its failure before it next yields.
        await self.first_raising.wait()
        return callback_for(url, redirect_uri)

    def hook(self, driver: str) -> Any:
        return self.blocking if driver == "threaded" else self.waiting


async def test_D2_R7_a_stale_authorize_hooks_failure_leaves_a_newer_sign_in_alone(
    driver: str,
) -> None:
    protected = Protected()
    person = StalePerson()
    try:
        async with DemoServer(fault=protected).serve() as running:
            protected.origin = running.url.rsplit("/mcp", 1)[0]
            options = AuthOptions(
                client=PreRegisteredClient(client_id="host-app"),
                redirect_uri=REDIRECT,
                user_wait=1.0,
            )
            async with open_client(
                driver, "locked", {"url": running.url}, auth=options, authorize=person.hook(driver)
            ) as client:
                with anyio.fail_after(20):
                    first = await client.ready(10)
                    assert not first.ok and "not completed in time" in str(first.reason)
                    signed_in = await client._run(client.client.login, 10)
                    assert signed_in.ok, signed_in.reason
                    output = await client.call("locked/echo", {"text": "second page"})
    finally:
        person.release_first.set()
    assert "second page" in output.text and person.asked == 2


async def test_R5_login_on_a_signed_in_client_holds_back_no_call(driver: str) -> None:
    """While the person signs in again, calls go out with the token in hand."""
    protected = Protected()
    person = Person()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(
            driver,
            "locked",
            {"url": running.url},
            auth=auth_options(),
            authorize=person.hook(driver),
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                person._go.clear()  # the person takes their time from now on
                results: list[Any] = []
                async with anyio.create_task_group() as group:

                    async def login() -> None:
                        results.append(await client._run(client.client.login, 15))

                    group.start_soon(login)
                    while len(person.asked) < 2:
                        await anyio.sleep(0.01)
                    output = await client.call("locked/echo", {"text": "meanwhile"}, timeout=3)
                    assert not results  # the sign-in is still running
                    person.release()
    assert "meanwhile" in output.text
    assert results and results[0].ok


class StepUpProtected(Protected):
    """As ``Protected``, and a call with the text "admin" needs a second token:
    the first one gets 403 ``insufficient_scope`` for it (every other request
    is fine with the first token)."""

    def __init__(self) -> None:
        super().__init__()
        self.issued: list[str] = []

    def __call__(self, request: ReceivedRequest) -> FaultResponse | None:
        path = request.path.split("?", 1)[0]
        if path == "/token":
            token = f"token-{len(self.issued) + 1}"
            self.issued.append(token)
            return FaultResponse.json(
                {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
            )
        if path.startswith("/.well-known/"):
            return super().__call__(request)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if bearer not in self.issued:
            return super().__call__(request)  # 401
        params = request.json.get("params") if isinstance(request.json, dict) else None
        arguments = params.get("arguments") if isinstance(params, dict) else None
        if isinstance(arguments, dict) and arguments.get("text") == "admin" and bearer == "token-1":
            challenge = 'Bearer error="insufficient_scope", scope="admin"'
            return FaultResponse.respond(403, {"www-authenticate": challenge})
        return None


async def test_R5_a_step_up_for_one_call_holds_back_no_other_call(driver: str) -> None:
    """One call needs a wider scope and waits for the person; meanwhile another
    call goes out with the token in hand and returns."""
    protected = StepUpProtected()
    person = Person()
    async with DemoServer(fault=protected).serve() as running:
        protected.origin = running.url.rsplit("/mcp", 1)[0]
        async with open_client(
            driver,
            "locked",
            {"url": running.url},
            auth=auth_options(),
            authorize=person.hook(driver),
        ) as client:
            with anyio.fail_after(20):
                assert (await client.ready(10)).ok
                person._go.clear()  # the person takes their time from now on
                admin: list[Any] = []
                async with anyio.create_task_group() as group:

                    async def wider() -> None:
                        admin.append(await client.call("locked/echo", {"text": "admin"}))

                    group.start_soon(wider)
                    while len(person.asked) < 2:
                        await anyio.sleep(0.01)
                    output = await client.call("locked/echo", {"text": "meanwhile"}, timeout=3)
                    assert not admin  # still waiting for the person
                    person.release()
    assert "meanwhile" in output.text
    assert admin and "admin" in admin[0].text
    assert protected.issued == ["token-1", "token-2"]
