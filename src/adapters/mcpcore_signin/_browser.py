"""A ready ``authorize`` hook: the system browser and a loopback listener (A3).

``BrowserSignIn()`` binds its listener on ``127.0.0.1`` at once (a port the
system picks), so ``redirect_uri`` is known before any sign-in. Called as
``authorize(url, redirect_uri)`` (blocking: the threaded driver's kind) it
tells the listener the ``state`` to expect, opens ``url`` with
``open_browser`` (``webbrowser.open`` unless given) and waits, at most
``timeout`` seconds, for the authorization server to send the person back.
Several sign-ins may run through one instance at once (the clients of a hub
given one ``auth=``): the listener routes each redirect by its ``state``;
``authorize_async`` is the same for ``mcpcore_anyio`` (the wait runs on a
worker thread). The listener refuses every answer until it knows the state
(R13). ``close()`` stops the listener; an instance nobody holds any more is
closed when it is collected.

``browser_auth()`` / ``async_browser_auth()`` build the whole ``auth=`` option
in one call: this hook, and the token file ``mcpcore login`` uses, so a
library's client and the command line share their sign-ins.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import Any

from mcpcore import AuthOptions, TokenStore
from mcpcore_stores import StoreError

from ._listener import LoopbackListener, state_of
from ._sqlite_file import SignInStore, default_store
from ._tokens import TokenFileError

__all__ = ["BrowserSignIn", "async_browser_auth", "browser_auth"]

_log = logging.getLogger("mcpcore_signin")

DEFAULT_TIMEOUT = 300.0  # seconds a person has to sign in (the flow's own wait is longer)


def _system_browser(url: str) -> bool:
    import webbrowser

    return webbrowser.open(url)


class BrowserSignIn:
    """See the module docstring. ``open_browser(url)`` may return False to say no
    browser could be started; the URL is then logged (it holds the PKCE challenge
    and the state, never a secret) for the person to open."""

    def __init__(
        self,
        *,
        open_browser: Callable[[str], object] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        self._open = open_browser or _system_browser
        self.timeout = float(timeout)
        self._listener = LoopbackListener()
        self.redirect_uri = self._listener.redirect_uri
        self._finalizer = weakref.finalize(self, self._listener.close)

    def __repr__(self) -> str:
        return f"BrowserSignIn({self.redirect_uri!r})"

    def __enter__(self) -> BrowserSignIn:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the listener: a sign-in waiting now ends with ``ListenerClosed``."""
        self._finalizer()

    def __call__(self, url: str, redirect_uri: str) -> str:
        """The ``authorize`` hook (blocking): the URL the person came back to."""
        if redirect_uri != self.redirect_uri:
            raise ValueError("the sign-in was to come back elsewhere than this listener")
        state = state_of(url)
        if not state:
            raise ValueError("the authorization URL carries no state to check the answer by")
        listener = self._listener
        listener.expect_state(state)  # before the browser can come back, never after
        listener.start()
        try:
            opened = self._open(url)
        except Exception as exc:  # a broken browser setting: the URL is logged instead
            _log.info("the browser could not be started: %s", type(exc).__name__)
            opened = False
        if opened is False:
            _log.warning("open this URL to sign in: %s", url)
        return listener.wait(self.timeout, state)

    async def authorize_async(self, url: str, redirect_uri: str) -> str:
        """The ``authorize`` hook for ``mcpcore_anyio``: the wait on a worker thread
        (given up when the client closes: the listener's own timeout ends it)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self, url, redirect_uri, abandon_on_cancel=True)


def _options(
    hook: Callable[..., Any],
    sign_in: BrowserSignIn,
    store: TokenStore | None,
    options: dict[str, Any],
) -> AuthOptions:
    options.setdefault("user_wait", sign_in.timeout + 10)  # the listener's timeout says it first
    if store is None:
        store = default_store()
        if isinstance(store, SignInStore):
            try:
                store.import_legacy()  # the JSON token file's sign-ins, once
            except (StoreError, TokenFileError) as exc:
                _log.warning("the JSON token file is not imported: %s", exc)
    return AuthOptions(
        store=store,
        redirect_uri=sign_in.redirect_uri,
        authorize=hook,
        **options,
    )


def browser_auth(
    *,
    store: TokenStore | None = None,
    open_browser: Callable[[str], object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> AuthOptions:
    """``auth=`` for ``mcpcore_threaded.McpClient``: sign in through the browser when
    the server asks, keeping tokens in ``store`` (by default ``mcpcore login``'s
    store: SQLite, ``SignInStore``, or the JSON token file ``$MCPCORE_TOKEN_FILE``
    names: ``default_store()``). ``options`` are more ``AuthOptions`` fields
    (``scope``, ``subject`` …)."""
    sign_in = BrowserSignIn(open_browser=open_browser, timeout=timeout)
    return _options(sign_in, sign_in, store, options)


def async_browser_auth(
    *,
    store: TokenStore | None = None,
    open_browser: Callable[[str], object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> AuthOptions:
    """``browser_auth`` for ``mcpcore_anyio.McpClient`` (the hook is a coroutine)."""
    sign_in = BrowserSignIn(open_browser=open_browser, timeout=timeout)
    return _options(sign_in.authorize_async, sign_in, store, options)
