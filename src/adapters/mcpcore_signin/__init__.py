"""Signing in to OAuth-protected servers from a library, as ``mcpcore login`` does.

::

    from mcpcore_signin import browser_auth          # async_browser_auth for mcpcore_anyio
    from mcpcore_threaded import McpClient

    with McpClient("notes", {"url": "https://mcp.example.com/mcp"}, auth=browser_auth()) as client:
        print(client.call("notes/search", {"query": "x"}).text)

``browser_auth()`` is the ``auth=`` option with the pieces the command line
uses: ``SignInStore`` (a SQLite store only its owner can read, shared with
``mcpcore login``: a sign-in made by either is used by both; it imports the
older JSON token file once) or, when ``$MCPCORE_TOKEN_FILE`` names one,
``FileTokenStore`` (that JSON token file), and
``BrowserSignIn`` (the ``authorize`` hook: the system browser and a loopback
listener on ``127.0.0.1``). Each piece is usable on its own: a ``FileTokenStore``
as ``AuthOptions(store=...)``, a ``BrowserSignIn`` as the ``authorize`` hook.
These do I/O (a file, a socket, a browser): they are not part of the core.
"""

from __future__ import annotations

from ._browser import BrowserSignIn, async_browser_auth, browser_auth
from ._listener import (
    CALLBACK_PATH,
    CONNECTION_TIMEOUT,
    ListenerClosed,
    ListenerTimeout,
    LoopbackListener,
    state_of,
)
from ._sqlite_file import (
    IMPORTED_SUFFIX,
    TOKEN_STORE_ENV,
    SignInStore,
    default_store,
    default_token_store,
)
from ._tokens import (
    TOKEN_FILE_ENV,
    FileTokenStore,
    StoredTokens,
    TokenFileError,
    default_token_file,
)

__all__ = [
    "CALLBACK_PATH",
    "CONNECTION_TIMEOUT",
    "IMPORTED_SUFFIX",
    "TOKEN_FILE_ENV",
    "TOKEN_STORE_ENV",
    "BrowserSignIn",
    "FileTokenStore",
    "ListenerClosed",
    "ListenerTimeout",
    "LoopbackListener",
    "SignInStore",
    "StoredTokens",
    "TokenFileError",
    "async_browser_auth",
    "browser_auth",
    "default_store",
    "default_token_file",
    "default_token_store",
    "state_of",
]
