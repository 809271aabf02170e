"""The token store as the command line's commands use it.

``FileTokenStore`` (a JSON token file: ``--token-file``, ``$MCPCORE_TOKEN_FILE``),
``SignInStore`` (SQLite, the default) and the rest live in ``mcpcore_signin``
(public: a library's client can share them); ``default_store`` chooses;
``StoreView`` is what one command needs of either.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcpcore import ClientRecord, TokenKey, TokenSet
from mcpcore_signin import (
    TOKEN_FILE_ENV,
    FileTokenStore,
    SignInStore,
    StoredTokens,
    TokenFileError,
    default_store,
    default_token_file,
)

__all__ = [
    "TOKEN_FILE_ENV",
    "FileTokenStore",
    "SignInStore",
    "StoreView",
    "StoredTokens",
    "TokenFileError",
    "default_store",
    "default_token_file",
]


class StoreView:
    """A ``TokenStore`` over the command line's store, as one command needs it.

    ``hide_tokens_of``: ``get_tokens`` of that server URL answers ``None`` (``login``
    signs in afresh even when tokens are held; the new ones replace them).
    ``keep_new_clients=False``: ``set_client`` is ignored. A client without an
    ``authorize`` hook (``tools``, ``call``, ``check``) can never use a client it
    registers (it has no redirect listener); the core registers none for it, and
    should one ever be saved, it would replace, under the same issuer, the client
    ``login`` registered and the stored tokens are refreshed with.
    """

    def __init__(
        self,
        store: FileTokenStore | SignInStore,
        *,
        hide_tokens_of: str | None = None,
        keep_new_clients: bool = True,
    ) -> None:
        self.store = store
        self._hidden = hide_tokens_of
        self._keep_new_clients = keep_new_clients

    def __repr__(self) -> str:
        return f"StoreView({self.store!r})"

    def get_tokens(self, server_url: str) -> TokenSet | None:
        if server_url == self._hidden:
            return None
        return self.store.get_tokens(server_url)

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        return self.store.set_tokens(key, tokens, replaces=replaces)

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        return self.store.delete_tokens(key, only_if=only_if)

    def lock_tokens(self, server_url: str) -> bool:
        return self.store.lock_tokens(server_url)

    def unlock_tokens(self, server_url: str) -> None:
        self.store.unlock_tokens(server_url)

    def get_clients(self) -> Sequence[ClientRecord]:
        return self.store.get_clients()

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        if self._keep_new_clients:
            self.store.set_client(issuer, client)

    def delete_client(self, issuer: str) -> None:
        self.store.delete_client(issuer)
