"""Where ``mcpcore login`` and ``browser_auth()`` keep sign-ins by default: SQLite (W2).

``SignInStore(path)`` is ``mcpcore_stores.SqliteTokenStore`` with what the
commands need besides (``check``, ``entries``, ``clients``, ``forget_server``,
``forget_all``), shaped as ``FileTokenStore``'s, so ``mcpcore auth status`` and
``logout`` serve either. Any number of processes share it safely (compare-and-
set in one transaction, leases for the refresh lock), and it keeps subjects.

Nothing is created until something is kept: while the database does not exist,
reading answers nothing (as ``FileTokenStore`` does for a missing file), so a
command that only reads (``mcpcore tools`` unsigned) leaves no file behind.

The default location: ``$MCPCORE_TOKEN_STORE`` if set, else
``$XDG_DATA_HOME/mcpcore/tokens.sqlite3``, else
``~/.local/share/mcpcore/tokens.sqlite3``: beside the JSON token file's
default. ``$MCPCORE_TOKEN_FILE`` (or ``--token-file``) still names a JSON token
file, and then that file is used as before (``FileTokenStore``):
``default_store()`` decides.

Importing the JSON file once: the first time the default store is opened
(``check()``, or ``default_store()``), a JSON token file at its default place
(``tokens.json`` beside it) is read, each token set and client it holds is
copied in unless the store already holds one under that key, and the file is
renamed ``tokens.json.imported`` (kept for the user to delete: it still holds
tokens). The rename is what makes it once: a later run finds no
``tokens.json``. A file that cannot be read is left where it is (logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from mcpcore import DEFAULT_SUBJECT, ClientRecord, TokenSet
from mcpcore_stores import SqliteTokenStore, StoreError

from ._tokens import (
    TOKEN_FILE_ENV,
    FileTokenStore,
    StoredTokens,
    TokenFileError,
    default_token_file,
)

__all__ = [
    "IMPORTED_SUFFIX",
    "TOKEN_STORE_ENV",
    "SignInStore",
    "default_store",
    "default_token_store",
]

TOKEN_STORE_ENV = "MCPCORE_TOKEN_STORE"
IMPORTED_SUFFIX = ".imported"

_log = logging.getLogger("mcpcore_signin.tokens")


def default_token_store(env: Mapping[str, str] | None = None) -> Path:
    """``$MCPCORE_TOKEN_STORE``, else ``tokens.sqlite3`` in the user's data directory
    (beside the JSON token file's default)."""
    env = os.environ if env is None else env
    override = env.get(TOKEN_STORE_ENV)
    if override:
        return Path(override).expanduser()
    json_default = default_token_file({k: v for k, v in env.items() if k != TOKEN_FILE_ENV})
    return json_default.with_name("tokens.sqlite3")


class SignInStore(SqliteTokenStore):
    """The SQLite store with the commands' methods (see the module docstring).

    ``legacy``: a JSON token file to import once (``default_store`` gives the
    JSON file's default place; None: nothing to import).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        legacy: str | os.PathLike[str] | None = None,
        lease: float = 30.0,
        timeout: float = 5.0,
    ) -> None:
        super().__init__(
            default_token_store() if path is None else path, lease=lease, timeout=timeout
        )
        self.legacy = None if legacy is None else Path(legacy)
        self.write_error: TokenFileError | None = None  # FileTokenStore's: never set here

    def __repr__(self) -> str:
        return f"SignInStore({str(self.path)!r})"

    def _error(self, exc: StoreError) -> TokenFileError:
        return TokenFileError(f"{exc}; remove it (then sign in again with 'mcpcore login')")

    def check(self) -> None:
        """Open the store now if it exists (importing the JSON file once);
        ``TokenFileError`` if it cannot be used: as for the JSON token file, one
        that others can read or write, or another user owns, or in a directory
        others can write, is refused."""
        checker = FileTokenStore(self.path)
        checker._check_directory()
        if not self._missing():
            try:
                info = os.lstat(self.path)
            except OSError as exc:
                raise checker._error(f"cannot be read: {exc.strerror or exc}") from None
            checker._check_safe(info)
        try:
            self.get_clients()
        except StoreError as exc:
            raise self._error(exc) from None
        self.import_legacy()

    def _missing(self) -> bool:
        return not os.path.lexists(self.path)

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        return None if self._missing() else super().get_tokens(server_url, subject=subject)

    def get_clients(self) -> Sequence[ClientRecord]:
        return [] if self._missing() else super().get_clients()

    def import_legacy(self) -> int:
        """Copy the JSON token file's sign-ins in, once (see the module docstring);
        returns how many token sets were copied."""
        legacy = self.legacy
        if legacy is None or not legacy.exists():
            return 0
        source = FileTokenStore(legacy)
        try:
            entries, clients = source.entries(), source.clients()
        except TokenFileError as exc:
            _log.warning("the JSON token file is not imported: %s", exc)
            return 0
        copied = 0
        held = {issuer for issuer in self.clients()}
        for issuer, client in clients.items():
            if issuer not in held:
                self.set_client(issuer, client)
        present = {key for key, _ in super().entries()} if not self._missing() else set()
        for entry in entries:
            if entry.key not in present:
                self.set_tokens(entry.key, entry.tokens)
                copied += 1
        with contextlib.suppress(FileNotFoundError):  # another run imported it meanwhile
            os.replace(legacy, legacy.with_name(legacy.name + IMPORTED_SUFFIX))
        _log.info("imported %d token sets from the JSON token file", copied)
        return copied

    def entries(self) -> list[StoredTokens]:  # type: ignore[override]
        """Every stored token set, oldest first."""
        if self._missing():
            return []
        try:
            return [StoredTokens(key, tokens) for key, tokens in super().entries()]
        except StoreError as exc:
            raise self._error(exc) from None

    def clients(self) -> dict[str, ClientRecord]:
        if self._missing():
            return {}
        try:
            return super().clients()
        except StoreError as exc:
            raise self._error(exc) from None

    def forget_server(self, server_url: str) -> int:
        """Remove the tokens held for ``server_url`` (every subject's), and the clients
        no other server's tokens use. Returns how many token sets were removed."""
        if self._missing():
            return 0
        try:
            entries = super().entries()
            gone = [(key, tokens) for key, tokens in entries if key.server_url == server_url]
            kept = [(key, tokens) for key, tokens in entries if key.server_url != server_url]
            for key, _tokens in gone:
                self.delete_tokens(key)
            still_used = {k.issuer for k, _ in kept} | {t.issuer for _, t in kept}
            for key, tokens in gone:
                for issuer in (key.issuer, tokens.issuer):
                    if issuer not in still_used:
                        self.delete_client(issuer)
        except StoreError as exc:
            raise self._error(exc) from None
        return len(gone)

    def forget_all(self) -> bool:
        """Delete the database (and its WAL files); True if there was one."""
        self.close()
        found = False
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{self.path}{suffix}")
                found = found or suffix == ""
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise TokenFileError(
                    f"the token store {str(self.path)!r} cannot be removed: {exc.strerror or exc}"
                ) from None
        return found


def default_store(
    token_file: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> FileTokenStore | SignInStore:
    """The store ``mcpcore login`` uses: the JSON token file named by ``token_file``
    (``--token-file``) or ``$MCPCORE_TOKEN_FILE``, else the SQLite store
    (``default_token_store``), which imports the JSON file's default once."""
    env = os.environ if env is None else env
    if token_file is not None:
        return FileTokenStore(token_file)
    if env.get(TOKEN_FILE_ENV):
        return FileTokenStore(default_token_file(env))
    return SignInStore(default_token_store(env), legacy=default_token_file(env))
