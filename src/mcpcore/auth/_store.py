"""The token store: where tokens and registered clients live between runs (A3, O67, R4).

``TokenStore`` is the host's store, as a protocol; ``SharedTokenStore`` is one
that runs (threads, processes) may share; ``MemoryTokenStore`` is the default,
a dictionary gone with the process. ``apply_to_store`` performs one of the
flow's store actions (``StoreAction``: ``SaveTokens``, ``DeleteTokens``,
``SaveClient``, ``DeleteClient``, ``LockTokens``, ``UnlockTokens``) on any
store and says what came of it (``StoreOutcome``): a refresh's write applies
only in place of the set it started from (compare-and-swap, ``same_tokens``).
``AuthAction`` is every action a host hook performs, the store's and the
person's and signer's (``OpenAuthorizationUrl``, ``SignAssertion``).

It sits under the hooks (``_hooks``) and the layer (``_authorizing``), which
both use it, and over the flow's records (``_oauth_types``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Protocol, Union

from ..base._record import record
from ._oauth_types import (
    DEFAULT_SUBJECT,
    ClientRecord,
    DeleteClient,
    DeleteTokens,
    LockTokens,
    OpenAuthorizationUrl,
    ProvideAssertion,
    SaveClient,
    SaveTokens,
    SignAssertion,
    TokenKey,
    TokenSet,
    UnlockTokens,
)

__all__ = [
    "AuthAction",
    "MemoryTokenStore",
    "SharedTokenStore",
    "StoreAction",
    "StoreOutcome",
    "TokenStore",
    "apply_to_store",
    "get_tokens",
    "same_tokens",
]


class TokenStore(Protocol):
    """Where tokens and registered clients live between runs (A3, O67).

    Each method is a host hook (D2): the drivers call it off their lock (on a
    worker thread in ``mcpcore_anyio``, a thread of its own in
    ``mcpcore_threaded``), one write at a time, in order. A method that raises or
    does not answer within ``AuthOptions.hook_timeout`` loses nothing but the
    write: the tokens stay in memory for the client's life, and it is logged.
    Tokens are keyed by ``TokenKey(server_url, issuer, subject)``; ``get_tokens``
    gives the newest set held for a server and subject whatever its issuer.
    Clients are keyed by issuer. A store shared between clients is called from
    several threads at once.

    Subjects (W1): a client whose ``AuthOptions.subject`` is not
    ``DEFAULT_SUBJECT`` calls ``get_tokens(server_url, subject=...)`` (and
    ``lock_tokens``/``unlock_tokens`` likewise), and its keys carry the subject;
    the store must never answer one subject with another's tokens. A client of
    the default subject calls them without ``subject=``, so a store written
    before subjects keeps working for a single-user host.

    A store with only these methods keeps working but is not safe to share
    between processes: two refreshing at once can spend a rotating refresh token
    twice and sign the user out. ``SharedTokenStore`` adds what sharing needs.
    """

    # A store that keeps subjects takes ``subject=`` too (W1: see above).
    def get_tokens(self, server_url: str) -> TokenSet | None: ...

    def set_tokens(self, key: TokenKey, tokens: TokenSet) -> object: ...

    def delete_tokens(self, key: TokenKey) -> object: ...

    def get_clients(self) -> Sequence[ClientRecord]: ...

    def set_client(self, issuer: str, client: ClientRecord) -> None: ...

    def delete_client(self, issuer: str) -> None: ...


class SharedTokenStore(TokenStore, Protocol):
    """A ``TokenStore`` that runs (threads, processes) may share (R4).

    ``set_tokens(key, tokens, replaces=old)`` stores only if the newest set held
    for ``key.server_url`` and ``key.subject`` is still ``old`` (``same_tokens``), and
    ``delete_tokens(key, only_if=old)`` deletes only then; each returns whether
    it applied, atomically for every user of the store. Without
    ``replaces``/``only_if`` they write whatever is there (and return True).
    ``lock_tokens(server_url)`` takes the refresh lock for that server without
    waiting (True: taken; False: another run holds it, and the client asks again
    shortly); ``unlock_tokens`` releases it (a lock not held: nothing happens).
    A store says it is one by having ``lock_tokens``.
    """

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool: ...

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool: ...

    def lock_tokens(self, server_url: str) -> bool: ...  # and subject=, as get_tokens

    def unlock_tokens(self, server_url: str) -> None: ...


def same_tokens(a: TokenSet | None, b: TokenSet | None) -> bool:
    """The same token set: the same access and refresh token (what a refresh changes)."""
    if a is None or b is None:
        return a is b
    return (a.access_token, a.refresh_token) == (b.access_token, b.refresh_token)


class MemoryTokenStore:
    """The default ``TokenStore``: a dictionary, gone with the process.

    One store may be shared by clients on several threads (R15). No method
    needs a lock (the core holds none): each is one indivisible step on a
    dictionary, a copy to read or a single store or removal to write, so a
    reader never sees a change half made and a write never undoes another.

    It is a ``SharedTokenStore`` for the clients of one process: they refresh
    one at a time (``lock_tokens``), and a refresh's write applies only in place
    of the set it started from (``replaces``, ``only_if``). Those checks compare
    and then write in two steps: the drivers perform one store action at a time
    per client, and the refresh lock keeps two clients' refreshes apart. Its
    sign-in lock (``lock_sign_in``) has the clients sharing it ask a person to
    sign in with one authorization server one at a time (R4).
    """

    def __init__(self) -> None:
        # key -> (when it was stored, the tokens): get_tokens gives the newest.
        self._tokens: dict[TokenKey, tuple[int, TokenSet]] = {}
        self._clients: dict[str, ClientRecord] = {}
        self._stored = itertools.count()
        # (server URL, subject) pairs whose refresh lock is held
        self._refreshing: dict[tuple[str, str], object] = {}
        self._signing_in: dict[str, object] = {}  # issuers whose sign-in lock is held

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._tokens)} token sets, {len(self._clients)} clients)"

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        found = [
            held
            for k, held in self._tokens.copy().items()
            if k.server_url == server_url and k.subject == subject
        ]
        return max(found, key=lambda held: held[0])[1] if found else None

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        if replaces is not None and not same_tokens(self._newest(key), replaces):
            return False
        self._tokens[key] = (next(self._stored), tokens)
        return True

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        if only_if is not None and not same_tokens(self._newest(key), only_if):
            return False
        self._tokens.pop(key, None)
        return True

    def _newest(self, key: TokenKey) -> TokenSet | None:
        return self.get_tokens(key.server_url, subject=key.subject)

    def lock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        # setdefault is one indivisible step: of two threads asking, one gets its mark in.
        mark = object()
        return self._refreshing.setdefault((server_url, subject), mark) is mark

    def unlock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> None:
        self._refreshing.pop((server_url, subject), None)

    def lock_sign_in(self, issuer: str) -> bool:
        """Take the sign-in lock for ``issuer`` without waiting (R4)."""
        mark = object()
        return self._signing_in.setdefault(issuer, mark) is mark

    def unlock_sign_in(self, issuer: str) -> None:
        self._signing_in.pop(issuer, None)

    def get_clients(self) -> Sequence[ClientRecord]:
        return list(self._clients.copy().values())

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        self._clients[issuer] = client

    def delete_client(self, issuer: str) -> None:
        self._clients.pop(issuer, None)


StoreAction = Union[SaveTokens, DeleteTokens, SaveClient, DeleteClient, LockTokens, UnlockTokens]
AuthAction = Union[
    OpenAuthorizationUrl,
    SignAssertion,
    ProvideAssertion,
    SaveTokens,
    DeleteTokens,
    SaveClient,
    DeleteClient,
    LockTokens,
    UnlockTokens,
]


@record(frozen=True, slots=True)
class StoreOutcome:
    """What came of a store action: ``applied`` (the write was made, the lock is
    held) and, for ``LockTokens``, ``current``: what the store holds for the server."""

    applied: bool
    current: TokenSet | None = field(default=None, repr=False)


def _subject(subject: str | None) -> dict[str, str]:
    """The ``subject=`` to pass a store: none for the default subject, so a host's
    store written before subjects keeps working (W1)."""
    return {} if subject is None or subject == DEFAULT_SUBJECT else {"subject": subject}


def get_tokens(store: TokenStore, server_url: str, subject: str | None) -> TokenSet | None:
    """``store.get_tokens`` for ``server_url`` and ``subject`` (W1)."""
    return store.get_tokens(server_url, **_subject(subject))


def _shared(store: TokenStore) -> SharedTokenStore | None:
    return store if callable(getattr(store, "lock_tokens", None)) else None  # type: ignore[return-value]


def _locks_for(
    store: TokenStore, action: LockTokens | UnlockTokens
) -> tuple[Callable[[], bool] | None, Callable[[], None] | None]:
    """The store's take and give-back for the lock ``action`` names: the refresh
    lock of its server, or (``sign_in``) its issuer's sign-in lock; None for a
    store without it (the action then takes nothing)."""
    if action.sign_in is not None:
        key, names, extra = action.sign_in, ("lock_sign_in", "unlock_sign_in"), {}
    else:
        key, names = action.server_url, ("lock_tokens", "unlock_tokens")
        extra = _subject(action.subject)
    take, give = (getattr(store, name, None) for name in names)
    if not callable(take) or not callable(give):
        return None, None
    return (lambda: take(key, **extra) is True), (lambda: give(key, **extra))


def apply_to_store(store: TokenStore, action: StoreAction) -> StoreOutcome:
    """Perform one store action on ``store`` and say what came of it (the drivers
    run this for the token actions, off their lock, as the store's hook, D2)."""
    shared = _shared(store)
    if isinstance(action, (LockTokens, UnlockTokens)):
        lock, unlock = _locks_for(store, action)
        if isinstance(action, UnlockTokens):
            if unlock is not None:
                unlock()
            return StoreOutcome(True)
        if lock is not None and not lock():
            return StoreOutcome(False)
        try:
            return StoreOutcome(True, get_tokens(store, action.server_url, action.subject))
        except BaseException:
            if unlock is not None:
                unlock()
            raise
    if isinstance(action, SaveTokens):
        if action.replaces is None:
            store.set_tokens(action.key, action.tokens)
            return StoreOutcome(True)
        if shared is not None:
            return StoreOutcome(
                shared.set_tokens(action.key, action.tokens, replaces=action.replaces) is True
            )
        # A plain store: checked by reading first (not atomic: see TokenStore).
        if not same_tokens(
            get_tokens(store, action.key.server_url, action.key.subject), action.replaces
        ):
            return StoreOutcome(False)
        store.set_tokens(action.key, action.tokens)
        return StoreOutcome(True)
    if isinstance(action, DeleteTokens):
        if action.only_if is None:
            store.delete_tokens(action.key)
            return StoreOutcome(True)
        if shared is not None:
            return StoreOutcome(shared.delete_tokens(action.key, only_if=action.only_if) is True)
        if not same_tokens(
            get_tokens(store, action.key.server_url, action.key.subject), action.only_if
        ):
            return StoreOutcome(False)
        store.delete_tokens(action.key)
        return StoreOutcome(True)
    if isinstance(action, SaveClient):
        store.set_client(action.issuer, action.client)
    else:
        store.delete_client(action.issuer)
    return StoreOutcome(True)


MemoryTokenStore.__module__ = "mcpcore"  # shown as mcpcore.MemoryTokenStore
