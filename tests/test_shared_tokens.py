"""A6 (R4 of issue 26): runs sharing a token store refresh one at a time and never
sign each other out.

* the flow: a refresh takes the store's refresh lock first, reads the store under
  it, takes a newer set another run stored, writes back only in place of the set
  it started from, and deletes only that set when the refresh is refused; a busy
  lock is asked for again, bounded;
* the stores: compare-and-swap and the refresh lock of ``MemoryTokenStore`` and
  of the command line's token file (across processes too), and a plain
  ``TokenStore`` without them still works;
* end to end: several ``mcpcore call`` processes share one token file against an
  authorization server that rotates refresh tokens, with 2-second access tokens.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import (
    AuthFailed,
    ClientRecord,
    DeleteTokens,
    LockTokens,
    MemoryTokenStore,
    OAuthTransientError,
    SaveTokens,
    TokenKey,
    TokenSet,
    UnlockTokens,
    apply_to_store,
    same_tokens,
)
from mcpcore.auth._oauth import AuthRequest, Purpose, RequestTicket
from mcpcore_cli._tokens import FileTokenStore, StoreView
from test_cli_auth import LoginRun, _assert_none_shown, _secrets_in, _sign_in_as_the_browser, run
from test_oauth import (
    AS,
    NOW,
    REDIRECT,
    S,
    World,
    authorized,
    failed,
    form,
    held,
    js,
    make_flow,
)

KEY = TokenKey(server_url=S, issuer=AS)


def _set(
    access: str, refresh: str | None = "rt", *, expires_at: float | None = NOW + 3600
) -> TokenSet:
    return dataclasses.replace(held(refresh=refresh, expires_at=expires_at), access_token=access)


def _rotating_token_endpoint(world: World) -> None:
    answers = iter(range(2, 100))

    def answer(_request: Any) -> Any:
        n = next(answers)
        return js(
            200,
            {
                "access_token": f"at-{n}",
                "token_type": "Bearer",
                "expires_in": 600,
                "refresh_token": f"rt-{n}",
            },
        )

    world.route("POST", AS + "/token", answer)


# --- the flow ---------------------------------------------------------------------------------


def test_A6_a_refresh_takes_the_newer_tokens_another_run_stored() -> None:
    """Under the lock the store holds a set this run has not seen (another run refreshed
    first): it is used as is; no refresh token is spent and nothing is written."""
    world = World().standard()
    _rotating_token_endpoint(world)
    theirs = _set("at-theirs", "rt-theirs")
    world.in_store = lambda _flow: theirs
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    world.pump(flow)
    assert authorized(flow.take_events()) == theirs
    assert world.requests == [] and world.store == []
    assert [type(a) for a in world.locks] == [LockTokens, UnlockTokens]
    assert world.locks[0].lock_id == world.locks[1].lock_id
    assert flow.prepare(ticket, NOW) == (b"authorization", b"Bearer at-theirs")


def test_A6_a_newer_set_that_expired_too_is_refreshed_with_its_own_refresh_token() -> None:
    world = World().standard()
    _rotating_token_endpoint(world)
    theirs = _set("at-theirs", "rt-theirs", expires_at=NOW - 1)
    world.in_store = lambda _flow: theirs
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    flow.prepare(RequestTicket(), NOW)  # the refresh starts (R6: the token still goes)
    world.pump(flow)
    tokens = authorized(flow.take_events())
    [request] = world.of(Purpose.TOKEN_REFRESH)
    assert form(request)["refresh_token"] == "rt-theirs"  # never ours: it may be spent
    assert world.store == [SaveTokens(key=KEY, tokens=tokens, replaces=theirs)]
    assert [type(a) for a in world.locks] == [LockTokens, UnlockTokens]


def test_A6_the_save_happens_under_the_lock_and_before_the_waiting_requests_go() -> None:
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    flow.prepare(RequestTicket(), NOW)  # the refresh starts (R6: the token still goes)
    order: list[str] = []
    for _ in range(10):  # as a driver does: the actions, then the events
        actions, events = flow.take_actions(), flow.take_events()
        if not actions and not events:
            break
        order += [type(a).__name__ for a in actions] + [type(e).__name__ for e in events]
        for action in actions:
            if isinstance(action, LockTokens):
                flow.lock_answered(action.lock_id, True, flow.tokens, NOW)
            elif isinstance(action, AuthRequest):
                answer = {"access_token": "at-2", "token_type": "Bearer", "refresh_token": "rt-2"}
                flow.receive_response(action.exchange_id, *js(200, answer), NOW)
    assert order == ["LockTokens", "AuthRequest", "SaveTokens", "UnlockTokens", "Authorized"]


def test_A6_a_refused_refresh_deletes_only_the_set_it_started_from() -> None:
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    world.callback = lambda _action: None  # the new sign-in stays open
    ours = held(expires_at=NOW)
    client = ClientRecord(client_id="dyn-client", redirect_uris=(REDIRECT,), issuer=AS)
    flow = make_flow(tokens=ours, clients=[client])
    flow.prepare(RequestTicket(), NOW)  # the refresh starts
    world.pump(flow)
    assert DeleteTokens(key=KEY, only_if=ours) in world.store
    # W4b: the store is read again under the lock before anything is deleted; the
    # lock is given back before the new sign-in goes on (it may take minutes)
    assert [type(a) for a in world.locks] == [LockTokens, UnlockTokens] * 2
    assert len(world.opened) == 1


def test_A6_a_busy_lock_is_asked_again_until_the_request_timeout() -> None:
    flow = make_flow(tokens=held(expires_at=NOW + 30), request_timeout=5.0)
    flow.prepare(RequestTicket(), NOW)  # the refresh starts (R6: the token still goes)
    now, asks = NOW, 0
    while True:
        actions = flow.take_actions()
        if flow.take_events():
            break
        assert all(isinstance(a, LockTokens) for a in actions) and len(actions) == 1
        asks += 1
        flow.lock_answered(actions[0].lock_id, False, None, now)
        deadline = flow.next_deadline()
        if deadline is None:
            break
        assert now < deadline <= now + 0.25  # asked again soon, never in a busy loop
        now = deadline
        flow.handle_timer(now)
        assert asks < 200
    error = flow._last_result
    assert isinstance(error, AuthFailed) and isinstance(error.error, OAuthTransientError)
    assert "refresh lock" in str(error.error)
    assert now - NOW >= 5.0 and asks > 5
    assert flow.take_actions() == []  # nothing was sent, nothing is left to give back


def test_A6_a_lock_granted_after_the_run_ended_is_given_back() -> None:
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    flow.prepare(RequestTicket(), NOW)  # the refresh starts (R6: the token still goes)
    [lock] = flow.take_actions()
    assert isinstance(lock, LockTokens)
    flow.cancel("closing")
    assert isinstance(failed(flow.take_events()), Exception)
    flow.lock_answered(lock.lock_id, True, None, NOW)
    assert flow.take_actions() == [UnlockTokens(lock_id=lock.lock_id, server_url=S)]
    flow.lock_answered(lock.lock_id, False, None, NOW)  # a refusal needs nothing
    assert flow.take_actions() == []


def test_A6_cancelling_while_the_lock_is_held_gives_it_back() -> None:
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    flow.prepare(RequestTicket(), NOW)  # the refresh starts (R6: the token still goes)
    [lock] = flow.take_actions()
    flow.lock_answered(lock.lock_id, True, flow.tokens, NOW)
    [request] = flow.take_actions()
    assert request.purpose is Purpose.TOKEN_REFRESH
    flow.cancel("closing")
    actions = flow.take_actions()
    assert UnlockTokens(lock_id=lock.lock_id, server_url=S) in actions


# --- the stores ---------------------------------------------------------------------------------


def _stores(tmp_path: Path) -> list[Any]:
    file_store = FileTokenStore(tmp_path / "tokens.json")
    return [MemoryTokenStore(), file_store, StoreView(file_store)]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["memory", "file", "view"])
def test_A6_store_writes_compare_and_swap(tmp_path: Path, which: int) -> None:
    store = _stores(tmp_path)[which]
    first, second, third = _set("at-1"), _set("at-2"), _set("at-3")
    assert store.set_tokens(KEY, first) is True  # a sign-in: whatever was there
    assert store.set_tokens(KEY, second, replaces=third) is False
    assert same_tokens(store.get_tokens(S), first)
    assert store.set_tokens(KEY, second, replaces=first) is True
    assert same_tokens(store.get_tokens(S), second)
    assert store.delete_tokens(KEY, only_if=first) is False  # newer tokens are kept
    assert same_tokens(store.get_tokens(S), second)
    assert store.delete_tokens(KEY, only_if=second) is True
    assert store.get_tokens(S) is None
    assert store.set_tokens(KEY, third, replaces=first) is False  # signed out meanwhile
    assert store.get_tokens(S) is None


@pytest.mark.parametrize("which", [0, 1, 2], ids=["memory", "file", "view"])
def test_A6_store_refresh_lock(tmp_path: Path, which: int) -> None:
    store = _stores(tmp_path)[which]
    assert store.lock_tokens(S) is True
    assert store.lock_tokens(S) is False  # another client of this process waits
    store.unlock_tokens(S)
    assert store.lock_tokens(S) is True
    store.unlock_tokens(S)
    store.unlock_tokens(S)  # twice: nothing happens


def test_A6_two_file_stores_on_one_file_share_the_lock(tmp_path: Path) -> None:
    one, two = FileTokenStore(tmp_path / "t.json"), FileTokenStore(tmp_path / "t.json")
    assert one.lock_tokens(S)
    assert not two.lock_tokens(S) and not two.lock_tokens("https://other.example/mcp")
    one.unlock_tokens(S)
    assert two.lock_tokens(S)
    two.unlock_tokens(S)


HOLD_LOCK = """
import sys
from mcpcore_cli._tokens import FileTokenStore
store = FileTokenStore(sys.argv[1])
assert store.lock_tokens(sys.argv[2])
print("held", flush=True)
sys.stdin.readline()
store.unlock_tokens(sys.argv[2])
print("released", flush=True)
sys.stdin.readline()
"""


def test_A6_the_file_lock_holds_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path), S],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "held"
        store = FileTokenStore(path)
        assert store.lock_tokens(S) is False
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "released"
        assert store.lock_tokens(S) is True
        store.unlock_tokens(S)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(30) == 0
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()


class PlainStore:
    """A ``TokenStore`` as written before compare-and-swap: six methods, no lock."""

    def __init__(self) -> None:
        self.tokens: dict[TokenKey, TokenSet] = {}

    def get_tokens(self, server_url: str) -> TokenSet | None:
        found = [t for k, t in self.tokens.items() if k.server_url == server_url]
        return found[-1] if found else None

    def set_tokens(self, key: TokenKey, tokens: TokenSet) -> None:
        self.tokens.pop(key, None)
        self.tokens[key] = tokens

    def delete_tokens(self, key: TokenKey) -> None:
        self.tokens.pop(key, None)

    def get_clients(self) -> Sequence[ClientRecord]:
        return []

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        pass

    def delete_client(self, issuer: str) -> None:
        pass


def test_A6_a_plain_store_keeps_working_checked_by_reading_first() -> None:
    store = PlainStore()
    first, second = _set("at-1"), _set("at-2")
    assert apply_to_store(store, SaveTokens(key=KEY, tokens=first)).applied
    lock = apply_to_store(store, LockTokens(lock_id=1, server_url=S))
    assert lock.applied and same_tokens(lock.current, first)
    assert not apply_to_store(store, SaveTokens(key=KEY, tokens=second, replaces=second)).applied
    assert apply_to_store(store, SaveTokens(key=KEY, tokens=second, replaces=first)).applied
    assert not apply_to_store(store, DeleteTokens(key=KEY, only_if=first)).applied
    assert apply_to_store(store, UnlockTokens(lock_id=1, server_url=S)).applied
    assert apply_to_store(store, DeleteTokens(key=KEY, only_if=second)).applied
    assert store.get_tokens(S) is None


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "delete"]),
        st.integers(0, 3),  # the set written
        st.one_of(st.none(), st.integers(0, 3)),  # what it must replace (None: anything)
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(ops=_OPS)
def test_A6_every_store_applies_a_write_exactly_when_it_holds_what_it_replaces(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int | None]]
) -> None:
    """The memory store, the token file and a plain store (through ``apply_to_store``)
    agree with the model: a conditional write applies iff the set held is the one named."""
    sets = [_set(f"at-{n}", f"rt-{n}") for n in range(4)]
    directory = tmp_path_factory.mktemp("store")
    stores: list[Any] = [MemoryTokenStore(), FileTokenStore(directory / "t.json"), PlainStore()]
    model: TokenSet | None = None
    for op, n, cond in ops:
        condition = None if cond is None else sets[cond]
        applies = condition is None or same_tokens(model, condition)
        for store in stores:
            if op == "set":
                action: Any = SaveTokens(key=KEY, tokens=sets[n], replaces=condition)
            else:
                action = DeleteTokens(key=KEY, only_if=condition)
            assert apply_to_store(store, action).applied is applies
        if applies:
            model = sets[n] if op == "set" else None
        for store in stores:
            assert same_tokens(store.get_tokens(S), model)


# --- end to end: several mcpcore processes share one token file ------------------------------


def test_A6_cli_runs_sharing_a_token_file_all_succeed_and_stay_signed_in(tmp_path: Path) -> None:
    """R4: 2-second access tokens, refresh tokens that rotate on use (a spent one is
    refused), four ``mcpcore call`` processes at once, three rounds: every call
    succeeds, no refresh is refused, and the user is still signed in at the end."""
    from protected_peer import protected_sdk_server

    token_file = tmp_path / "tokens.json"
    tf = ["--token-file", str(token_file)]
    with protected_sdk_server(token_ttl=2, step_up=False) as peer:
        login = LoginRun(tmp_path, peer.url, *tf)
        _sign_in_as_the_browser(login)
        assert login.finish()[0] == 0
        secrets = _secrets_in(token_file)
        for _round in range(3):
            time.sleep(2.5)  # the access token has expired: every run must refresh first
            runs = [
                subprocess.Popen(
                    [sys.executable, "-m", "mcpcore_cli", "call", peer.url, "whoami", *tf],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=_cli_env(tmp_path),
                )
                for _ in range(4)
            ]
            results = []
            for proc in runs:
                try:
                    out, err = proc.communicate(timeout=60)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.communicate(timeout=10)
                results.append((proc.returncode, out, err))
            for status, out, err in results:
                assert status == 0, err
                assert "scopes=mcp:read" in out
                _assert_none_shown(secrets, out, err)
            secrets += _secrets_in(token_file)
        events = peer.events()
        refreshes = [e for e in events if e.startswith("token grant=refresh_token")]
        assert refreshes, events
        # every refresh token was spent once: the server refused none
        assert not [e for e in events if e.startswith("token refused")], events
        # still signed in: the file holds a set, and a later run needs no sign-in
        assert FileTokenStore(token_file).get_tokens(peer.url) is not None
        after = run(tmp_path, "call", peer.url, "whoami", *tf)
        assert after.returncode == 0, after.stderr


def _cli_env(tmp_path: Path) -> dict[str, str]:
    from test_cli_auth import _env

    return _env(tmp_path)


# --- the engine: two clients sharing one store, and closing mid-refresh ---------------------


def test_A6_two_clients_sharing_a_store_spend_one_refresh() -> None:
    """The second client's refresh finds, under the lock, the tokens the first one
    stored: it uses them, and its own (spent) refresh token is never sent."""
    from mcpcore import CallSucceeded
    from test_auth_layer import URL, AuthServer, make

    store = MemoryTokenStore()
    first = make(store=store, auth=AuthServer(expires_in=120))
    second = make(store=store, auth=first.auth)
    assert second.opened == []  # signed in through the store
    first.advance(125)
    second.advance(125)  # both hold the same expired set now
    one = first.engine.call("srv/echo", {"n": 1}, first.now)
    first.pump()
    two = second.engine.call("srv/echo", {"n": 2}, second.now)
    second.pump()
    assert first.auth.grants == ["authorization_code", "refresh_token"]
    assert [e.call_id for e in first.of_type(CallSucceeded)] == [one]
    assert [e.call_id for e in second.of_type(CallSucceeded)] == [two]
    stored = store.get_tokens(URL)
    assert stored is not None and stored.access_token == "access-2"
    assert store.lock_tokens(URL)  # given back by both


def test_A6_closing_a_client_mid_refresh_gives_the_lock_back() -> None:
    from test_auth_layer import URL, AuthServer, make

    store = MemoryTokenStore()
    link = make(store=store, auth=AuthServer(expires_in=120))
    perform = link._perform

    def stall_refreshes(req: Any) -> None:
        if req.url.endswith("/token") and b"refresh_token" in (req.body or b""):
            link.stalled.add(req.exchange_id)  # the token endpoint never answers
            return
        perform(req)

    link._perform = stall_refreshes  # type: ignore[method-assign]
    link.advance(125)
    link.engine.call("srv/echo", {}, link.now)
    link.pump()
    assert not store.lock_tokens(URL)  # the refresh holds it, its request hangs
    link.engine.close(link.now)
    link.pump()
    assert store.lock_tokens(URL)
