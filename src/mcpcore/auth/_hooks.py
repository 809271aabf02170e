"""Host hooks as actions with attempt ids (D2): what a driver calls, how it reports.

Every host hook reaches a driver as an action that carries an ``attempt``
number: ``OpenAuthorizationUrl`` (the ``authorize`` hook), ``SignAssertion``
(``sign_assertion``), ``ProvideAssertion`` (``AuthOptions.assertion``) and the store's ``SaveTokens`` / ``DeleteTokens`` /
``SaveClient`` / ``DeleteClient`` / ``LockTokens`` / ``UnlockTokens`` (a
``TokenStore``'s methods; the token ones through ``apply_to_store``, which
answers a ``StoreOutcome``). The engine
bounds each attempt with a deadline of its own and gives every report one
defined outcome:

=========  ===============================================================
answered   ``hook_answered(attempt, value, now)`` with an answer of the kind
           the hook owes (a ``str`` from ``authorize`` and ``sign_assertion``)
unusable   the same report with an answer of another kind (``bytes``, ``None``,
           a coroutine from a blocking driver): the flow fails with ``HookError``
raised     ``hook_failed(attempt, HookFailure.RAISED, now)``
missing    ``hook_failed(attempt, HookFailure.MISSING, now)``: no such hook
late       any report for an attempt past its deadline, one the flow has moved
           on from, or one that comes after close: ignored
=========  ===============================================================

A driver does no more than this: ``hook_call`` says which callable to run
with which arguments; the driver runs it off its lock (a task, a thread) and
hands what came back to ``HookCall.report``, which classifies it and feeds
the engine. The ``elicit`` hook takes the same path (``AskHost``, whose
attempts the engine tells apart by number, Q1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import field
from enum import Enum
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, get_type_hints

from ..base._record import record

if TYPE_CHECKING:
    from ._oauth_types import ClientRecord, TokenSet
    from ._store import AuthAction, TokenStore

__all__ = ["HookCall", "HookFailure", "hook_call", "read_store"]

_log = logging.getLogger("mcpcore.hooks")


class HookFailure(Enum):
    """How a hook failed, as a driver saw it (``hook_failed``)."""

    RAISED = "raised"  # the callable raised an exception
    MISSING = "missing"  # the host gave no such hook


class _HookReceiver(Protocol):
    def hook_answered(self, attempt: int, value: object, now: float) -> None: ...

    def hook_failed(self, attempt: int, failure: HookFailure, now: float) -> None: ...


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING = _Missing()


@record(frozen=True, slots=True)
class HookCall:
    """One attempt of one hook: ``function(*args)``, to run off the driver's lock.

    ``blocking`` is true for a ``TokenStore`` method (plain functions in
    every driver: an async driver runs them on a worker thread); the
    ``authorize`` and ``sign_assertion`` hooks are the driver's own kind
    (coroutines in ``mcpcore_anyio``, blocking callables in
    ``mcpcore_threaded``).
    """

    attempt: int
    name: str
    function: Callable[..., object] | None = field(repr=False)
    args: tuple[Any, ...] = field(repr=False)  # the authorization URL's query is a secret (A4)
    blocking: bool = False

    def invoke(self) -> object:
        """Call the hook: its answer, or an awaitable for an async hook."""
        if self.function is None:
            return _MISSING
        return self.function(*self.args)

    def report(
        self,
        engine: _HookReceiver,
        now: float,
        *,
        value: object = None,
        error: BaseException | None = None,
    ) -> None:
        """Feed the engine what came back: ``value``, or the exception it raised.

        A blocking driver that got an awaitable (an ``async def`` hook) reports
        it as it is: the engine finds it unusable. It is closed first, so
        Python does not warn that it was never awaited.
        """
        if error is not None:
            # A4: the exception's type only; its text may hold anything.
            _log.info("the %s hook failed: %s", self.name, type(error).__name__)
            engine.hook_failed(self.attempt, HookFailure.RAISED, now)
            return
        if value is _MISSING:
            engine.hook_failed(self.attempt, HookFailure.MISSING, now)
            return
        close = getattr(value, "close", None)
        if hasattr(value, "__await__") and callable(close):
            close()
        engine.hook_answered(self.attempt, value, now)


def hook_call(
    action: AuthAction,
    *,
    authorize: Callable[..., object] | None = None,
    sign_assertion: Callable[..., object] | None = None,
    store: TokenStore | None = None,
    assertion: Callable[..., object] | None = None,
    assertion_blocks: bool = False,
) -> HookCall:
    """What to run for ``action``, given the host's hooks (any of them may be absent)."""
    # OAuth's modules load only for a client that signs in (an input hook needs none of them).
    from ._oauth_types import (
        DeleteClient,
        DeleteTokens,
        LockTokens,
        OpenAuthorizationUrl,
        ProvideAssertion,
        SaveClient,
        SaveTokens,
        SignAssertion,
        UnlockTokens,
    )

    attempt = action.attempt
    if isinstance(action, OpenAuthorizationUrl):
        return HookCall(
            attempt, "authorize", authorize, (action.url, action.redirect_uri), blocking=False
        )
    if isinstance(action, SignAssertion):
        return HookCall(attempt, "sign_assertion", sign_assertion, (action,), blocking=False)
    if isinstance(action, ProvideAssertion):
        # N2, N3: the driver's own kind, or a plain function that reads the path
        # the host gave (``assertion_blocks``: run off the driver's loop).
        return HookCall(attempt, "assertion", assertion, (action,), blocking=assertion_blocks)
    function: Callable[..., object] | None
    args: tuple[Any, ...]
    if isinstance(action, (SaveTokens, DeleteTokens, LockTokens, UnlockTokens)):
        # R4: through apply_to_store, which makes a write conditional (compare-and-
        # swap) and answers a StoreOutcome the engine reads.
        from ._store import apply_to_store

        method = {
            SaveTokens: "set_tokens",
            DeleteTokens: "delete_tokens",
            LockTokens: "lock_tokens",
            UnlockTokens: "unlock_tokens",
        }[type(action)]
        function = None if store is None else partial(apply_to_store, store)
        name, args = f"TokenStore.{method}", (action,)
    elif isinstance(action, SaveClient):
        function = None if store is None else store.set_client
        name, args = "TokenStore.set_client", (action.issuer, action.client)
    elif isinstance(action, DeleteClient):
        function = None if store is None else store.delete_client
        name, args = "TokenStore.delete_client", (action.issuer,)
    else:  # pragma: no cover - the union above is closed
        raise TypeError(f"not a hook action: {type(action).__name__}")
    return HookCall(attempt, name, function, args, blocking=True)


def read_store(
    store: TokenStore, server_url: str, subject: str | None = None
) -> tuple[TokenSet | None, Sequence[ClientRecord]]:
    """What ``store`` holds for ``server_url`` (and ``subject``, W1) when a client
    starts (D2).

    A store that raises, or answers with something else, is treated as empty
    (logged by the exception's type): the client starts signed out rather
    than not at all.
    """
    from ._oauth_types import ClientRecord, TokenSet
    from ._store import get_tokens

    try:
        tokens = get_tokens(store, server_url, subject)
        clients = list(store.get_clients())
    except Exception as exc:
        _log.warning("the token store could not be read: %s", type(exc).__name__)
        return None, ()
    if tokens is not None and not isinstance(tokens, TokenSet):
        _log.warning("the token store's get_tokens answered a %s", type(tokens).__name__)
        tokens = None
    return tokens, [c for c in clients if isinstance(c, ClientRecord)]


# Shown as mcpcore.HookCall: its annotations are resolved here first, where their
# names are in scope (typing.get_type_hints would look them up in mcpcore).
HookCall.__annotations__ = get_type_hints(HookCall)
HookCall.__module__ = "mcpcore"
HookFailure.__module__ = "mcpcore"
