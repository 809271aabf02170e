"""W1 and W4b: tokens kept per subject, and the refresh rules of issue 39.

* W1: the subject (the host's user or tenant id) is part of every key the flow
  gives the store, and of its refresh lock; the stores in memory and in the
  token file never hand one subject's tokens to another; a store written before
  subjects still works for the default subject (``subject=`` is passed only
  when it is not the default); a hub's ``auth=`` mapping gives each entry its own.
* W4b: on ``invalid_grant`` the store is read again under the lock before
  anything is deleted (a set another run stored meanwhile is taken), only the
  set read is deleted; a refresh ahead of expiry that is refused leaves the
  access token in use; every refresh sends ``resource``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mcpcore import (
    DEFAULT_SUBJECT,
    AuthFailed,
    AuthOptions,
    ClientRecord,
    DeleteTokens,
    InvalidValue,
    LockTokens,
    MemoryTokenStore,
    SaveTokens,
    TokenError,
    TokenKey,
    TokenSet,
    UnlockTokens,
    apply_to_store,
)
from mcpcore.auth._hooks import read_store
from mcpcore.auth._oauth import Purpose, RequestTicket
from mcpcore.config._setup import prepare_client
from mcpcore_signin import FileTokenStore
from test_oauth import AS, NOW, REDIRECT, S, World, authorized, failed, form, held, js, make_flow

ALICE = "alice@example.com"


def _set(access: str, refresh: str | None = "rt", **changes: Any) -> TokenSet:
    return dataclasses.replace(held(refresh=refresh, **changes), access_token=access)


def _rotating(world: World) -> None:
    answers = iter(range(2, 100))

    def answer(_request: Any) -> Any:
        n = next(answers)
        body = {"access_token": f"at-{n}", "token_type": "Bearer", "refresh_token": f"rt-{n}"}
        return js(200, {**body, "expires_in": 600})

    world.route("POST", AS + "/token", answer)


# --- W1: the flow keys everything by its subject -----------------------------------------------


def test_W1_the_flow_keys_tokens_and_its_refresh_lock_by_subject() -> None:
    world = World().standard()
    _rotating(world)
    old = held(expires_at=NOW + 30)
    flow = make_flow(tokens=old, subject=ALICE)
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    tokens = authorized(flow.take_events())
    assert world.store == [
        SaveTokens(
            key=TokenKey(server_url=S, issuer=AS, subject=ALICE), tokens=tokens, replaces=old
        )
    ]
    assert [(type(a), a.subject) for a in world.locks] == [
        (LockTokens, ALICE),
        (UnlockTokens, ALICE),
    ]


def test_W1_auth_options_carry_the_subject_into_the_flow() -> None:
    assert AuthOptions().config(S, interactive=False).subject == DEFAULT_SUBJECT
    assert AuthOptions(subject=ALICE).config(S, interactive=False).subject == ALICE
    with pytest.raises(InvalidValue, match="subject"):
        AuthOptions(subject="").config(S, interactive=False)


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_W1_a_store_never_hands_one_subjects_tokens_to_another(kind: str, tmp_path: Path) -> None:
    store: Any = MemoryTokenStore() if kind == "memory" else FileTokenStore(tmp_path / "t.json")
    alices = _set("at-alice")
    assert apply_to_store(
        store,
        SaveTokens(key=TokenKey(server_url=S, issuer=AS, subject=ALICE), tokens=alices),
    ).applied
    # Bob, and the default subject, read nothing; the flow's start-up read neither.
    assert store.get_tokens(S, subject="bob") is None
    assert store.get_tokens(S) is None
    assert read_store(store, S, "bob")[0] is None
    assert read_store(store, S)[0] is None
    assert read_store(store, S, ALICE)[0] == alices
    # Bob's refresh lock, and his compare-and-set, are his own.
    bob_lock = LockTokens(lock_id=1, server_url=S, subject="bob")
    outcome = apply_to_store(store, bob_lock)
    assert outcome.applied and outcome.current is None
    # (the token file has one refresh lock for every key: given back first)
    apply_to_store(store, UnlockTokens(lock_id=1, server_url=S, subject="bob"))
    alice_lock = apply_to_store(store, LockTokens(lock_id=2, server_url=S, subject=ALICE))
    assert alice_lock.applied and alice_lock.current == alices
    bobs_key = TokenKey(server_url=S, issuer=AS, subject="bob")
    assert not apply_to_store(store, DeleteTokens(key=bobs_key, only_if=alices)).applied
    assert not apply_to_store(
        store, SaveTokens(key=bobs_key, tokens=_set("at-bob"), replaces=alices)
    ).applied
    assert store.get_tokens(S, subject=ALICE) == alices
    apply_to_store(store, UnlockTokens(lock_id=2, server_url=S, subject=ALICE))


class _PlainStore:
    """A host's store written before subjects: its methods take no ``subject=``."""

    def __init__(self) -> None:
        self.tokens: dict[str, TokenSet] = {}
        self.locked: list[str] = []

    def get_tokens(self, server_url: str) -> TokenSet | None:
        return self.tokens.get(server_url)

    def set_tokens(self, key: TokenKey, tokens: TokenSet) -> None:
        self.tokens[key.server_url] = tokens

    def delete_tokens(self, key: TokenKey) -> None:
        self.tokens.pop(key.server_url, None)

    def lock_tokens(self, server_url: str) -> bool:
        self.locked.append(server_url)
        return True

    def unlock_tokens(self, server_url: str) -> None:
        self.locked.remove(server_url)

    def get_clients(self) -> Sequence[ClientRecord]:
        return []

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        pass

    def delete_client(self, issuer: str) -> None:
        pass


def test_W1_a_store_written_before_subjects_keeps_working_for_the_default_subject() -> None:
    store = _PlainStore()
    tokens = _set("at-1")
    apply_to_store(store, SaveTokens(key=TokenKey(server_url=S, issuer=AS), tokens=tokens))
    assert read_store(store, S, DEFAULT_SUBJECT)[0] == tokens
    outcome = apply_to_store(store, LockTokens(lock_id=1, server_url=S))
    assert outcome.applied and outcome.current == tokens
    apply_to_store(store, UnlockTokens(lock_id=1, server_url=S))
    assert store.locked == []


def test_W1_the_token_file_keeps_subjects_and_reads_a_file_written_without_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    mine, alices = _set("at-mine"), _set("at-alice")
    store.set_tokens(TokenKey(server_url=S, issuer=AS), mine)
    store.set_tokens(TokenKey(server_url=S, issuer=AS, subject=ALICE), alices)
    assert FileTokenStore(path).get_tokens(S) == mine
    assert FileTokenStore(path).get_tokens(S, subject=ALICE) == alices
    # A file written before subjects: its entries are the default subject's.
    text = path.read_text().replace('"subject": "default",', "")
    path.write_text(text)
    assert [s.key.subject for s in FileTokenStore(path).entries()] == [DEFAULT_SUBJECT, ALICE]


def test_W1_a_hub_gives_each_entry_its_own_auth_options() -> None:
    alice, bob = AuthOptions(subject=ALICE), AuthOptions(subject="bob")
    mapping = {"Docs": alice, "search": bob}

    def setup(name: str) -> Any:
        return prepare_client(name, {"url": S}, {"auth": mapping}, env={}, home="/")

    assert setup("docs").auth is alice
    assert setup("search").auth is bob
    assert setup("other").auth is None
    with pytest.raises(TypeError, match="auth"):
        prepare_client("docs", {"url": S}, {"auth": {"docs": "nope"}}, env={}, home="/")


# --- W4b: the refresh rules -------------------------------------------------------------------


def test_W4b_on_invalid_grant_the_store_is_read_again_and_a_newer_set_is_taken() -> None:
    """Another run refreshed while this one's request was out (its lease ran out, or
    the provider revoked the family): the store, read again under the lock, holds
    the winner's set; it is used, and nothing is deleted."""
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    ours = held(expires_at=NOW + 30)
    winners = _set("at-winner", "rt-winner", expires_at=NOW + 600)
    reads = iter([ours, winners])
    world.in_store = lambda _flow: next(reads)
    flow = make_flow(tokens=ours)
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    assert authorized(flow.take_events()) == winners
    assert not any(isinstance(a, DeleteTokens) for a in world.store)
    assert [type(a) for a in world.locks] == [LockTokens, UnlockTokens] * 2
    assert world.opened == []  # nobody is asked to sign in
    assert flow.prepare(RequestTicket(), NOW) == (b"authorization", b"Bearer at-winner")


def test_W4b_on_invalid_grant_only_the_set_read_again_is_deleted() -> None:
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    world.callback = lambda _action: None  # the new sign-in stays open
    ours = held(expires_at=NOW)
    client = ClientRecord(client_id="dyn-client", redirect_uris=(REDIRECT,), issuer=AS)
    flow = make_flow(tokens=ours, clients=[client])
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    deletes = [a for a in world.store if isinstance(a, DeleteTokens)]
    assert deletes == [DeleteTokens(key=TokenKey(server_url=S, issuer=AS), only_if=ours)]
    assert len(world.opened) == 1


def test_W4b_on_invalid_grant_with_an_empty_store_nothing_is_deleted() -> None:
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    world.callback = lambda _action: None
    ours = held(expires_at=NOW)
    reads = iter([ours, None])
    world.in_store = lambda _flow: next(reads)
    client = ClientRecord(client_id="dyn-client", redirect_uris=(REDIRECT,), issuer=AS)
    flow = make_flow(tokens=ours, clients=[client])
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    assert not any(isinstance(a, DeleteTokens) for a in world.store)
    assert len(world.opened) == 1


def test_W4b_a_refused_refresh_ahead_of_expiry_leaves_the_access_token_in_use() -> None:
    world = World().standard()
    world.route("POST", AS + "/token", js(400, {"error": "invalid_grant"}))
    ours = held(expires_at=NOW + 30)
    flow = make_flow(tokens=ours)
    assert flow.prepare(RequestTicket(), NOW) == (b"authorization", b"Bearer at-0")
    world.pump(flow)
    error = failed(flow.take_events())
    assert isinstance(error, TokenError) and error.error == "invalid_grant"
    assert world.opened == []  # nobody is asked to sign in while the token is valid
    # the dead set is deleted from the store (only it), and the access token goes on
    deletes = [a for a in world.store if isinstance(a, DeleteTokens)]
    assert deletes == [DeleteTokens(key=TokenKey(server_url=S, issuer=AS), only_if=ours)]
    assert flow.prepare(RequestTicket(), NOW + 1) == (b"authorization", b"Bearer at-0")
    assert flow.prepare(RequestTicket(), NOW + 29) == (b"authorization", b"Bearer at-0")
    assert not flow.busy  # its refresh token is gone: no refresh is tried again
    assert len(world.of(Purpose.TOKEN_REFRESH)) == 1
    # once it expires, it is not sent, and the server's 401 starts a sign-in
    assert flow.prepare(RequestTicket(), NOW + 30) is None


def test_W4b_every_refresh_sends_resource() -> None:
    """Ahead of expiry, after a 401, and with a set another run stored."""
    world = World().standard()
    _rotating(world)
    flow = make_flow(tokens=held(expires_at=NOW + 30))
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    authorized(flow.take_events())
    flow.challenge(RequestTicket(generation=flow._generation), 401, [], NOW)
    world.pump(flow)
    authorized(flow.take_events())
    theirs = _set("at-theirs", "rt-theirs", expires_at=NOW - 1)
    world.in_store = lambda _flow: theirs
    flow.prepare(RequestTicket(), NOW + 10_000)
    world.pump(flow)
    authorized(flow.take_events())
    refreshes = world.of(Purpose.TOKEN_REFRESH)
    assert len(refreshes) == 3
    assert [form(r)["resource"] for r in refreshes] == [S] * 3
    assert form(refreshes[-1])["refresh_token"] == "rt-theirs"


def test_W4b_a_failed_refresh_is_an_auth_failed_event_not_a_sign_out() -> None:
    """The 5xx case (O55) keeps the whole set; invalid_grant keeps the access token."""
    world = World().standard()
    world.route("POST", AS + "/token", (503, [], b""))
    ours = held(expires_at=NOW + 30)
    flow = make_flow(tokens=ours)
    flow.prepare(RequestTicket(), NOW)
    world.pump(flow)
    assert isinstance(flow._last_result, AuthFailed)
    assert flow.tokens == ours
