"""Where ``mcpcore login`` keeps tokens: a JSON file only its owner can read.

A library's client can use the same file (``FileTokenStore()``, or
``browser_auth()``), and so reuse the sign-ins ``mcpcore login`` made.

``FileTokenStore(path)`` is a ``mcpcore.TokenStore``. The file holds the token
sets (keyed by server URL, issuer and subject, newest last; an entry without a
subject, written before subjects, is ``DEFAULT_SUBJECT``'s) and the registered
clients (keyed by issuer), every field written out by name (never pickled, by
``mcpcore_stores``' codec)::

    {"version": 1,
     "tokens": [{"server_url": ..., "key_issuer": ..., "subject": ..., "access_token": ..., ...}],
     "clients": [{"issuer": ..., "client_id": ..., ...}]}

Its directory is created ``0700`` and the file ``0600``: every write goes to a
fresh temporary file beside it (``O_CREAT | O_EXCL``, mode ``0600``) that then
replaces the file at once (``os.replace``), so a reader never sees half a file
and the file is never, even briefly, readable by others. A lock file beside it
(``flock``) serialises the read-modify-write of concurrent ``mcpcore`` runs.

It is a ``mcpcore.SharedTokenStore``: runs that share the file refresh one at a
time (``lock_tokens`` takes a second lock file, ``<file>.refresh.lock``, for as
long as one refresh lasts), and a refresh's write applies only in place of the
set it started from (``set_tokens(..., replaces=...)``,
``delete_tokens(..., only_if=...)``), so a rotated refresh token is spent once
and no run deletes or overwrites the tokens another just stored. Its sign-in
lock (``lock_sign_in``) has the clients of this process that share it (a hub
given one ``auth=``) ask a person to sign in with one authorization server one
at a time, the later ones taking the tokens the first stored when they fit
(R4); it is held in the process only (a sign-in lasts as long as the person
takes: no other run waits on a file for that long).

Reading and writing refuse a directory owned by another user or writable by
group or others (whoever can write there can replace the file), a file that is
not a regular file, is owned by another user, or is readable or writable by
group or others, and one that is not a token file mcpcore wrote (corrupt JSON,
a wrong field): ``TokenFileError`` says which and how to fix it, and never
shows any of the file's content.

The default location: ``$MCPCORE_TOKEN_FILE`` if set, else
``$XDG_DATA_HOME/mcpcore/tokens.json``, else ``~/.local/share/mcpcore/tokens.json``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcpcore import DEFAULT_SUBJECT, ClientRecord, TokenKey, TokenSet, same_tokens
from mcpcore_stores._errors import StoreCorrupt
from mcpcore_stores._records import (
    client_fields,
    client_from_fields,
    load_json,
    tokens_fields,
    tokens_from_fields,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TOKEN_FILE_ENV",
    "FileTokenStore",
    "StoredTokens",
    "TokenFileError",
    "default_token_file",
]

TOKEN_FILE_ENV = "MCPCORE_TOKEN_FILE"
FORMAT_VERSION = 1
MAX_FILE_SIZE = 4 * 1024 * 1024  # a token file is a few kilobytes; refuse anything huge
LOCK_WAIT = 10.0  # seconds another run may hold the token file's lock

_log = logging.getLogger("mcpcore_signin.tokens")


class TokenFileError(Exception):
    """The token file cannot be used. The message names the file, never its content."""


def default_token_file(env: Mapping[str, str] | None = None) -> Path:
    """``$MCPCORE_TOKEN_FILE``, else the user's data directory (XDG) + ``mcpcore/tokens.json``."""
    env = os.environ if env is None else env
    override = env.get(TOKEN_FILE_ENV)
    if override:
        return Path(override).expanduser()
    data_home = env.get("XDG_DATA_HOME", "")
    # The XDG spec: a relative path in $XDG_DATA_HOME is invalid and is ignored.
    if data_home and os.path.isabs(data_home):
        base = Path(data_home)
    else:
        base = Path(os.path.expanduser("~")) / ".local" / "share"
    return base / "mcpcore" / "tokens.json"


@dataclass(frozen=True, slots=True)
class StoredTokens:
    """One stored token set with its key (what ``auth status`` lists)."""

    key: TokenKey
    tokens: TokenSet


@dataclass(slots=True)
class _Document:
    tokens: list[StoredTokens]
    clients: dict[str, ClientRecord]

    @property
    def empty(self) -> bool:
        return not self.tokens and not self.clients


# --- (de)serialising, field by field (mcpcore_stores' codec) ---------------------------------

# A field of the file is not what mcpcore writes (the message names the field only).
_Bad = StoreCorrupt


def _tokens_to_json(key: TokenKey, tokens: TokenSet) -> dict[str, Any]:
    return {
        "server_url": key.server_url,
        "key_issuer": key.issuer,
        "subject": key.subject,
        **tokens_fields(tokens),
    }


def _tokens_from_json(obj: object) -> StoredTokens:
    if not isinstance(obj, dict):
        raise _Bad("tokens[]")
    server_url, issuer = obj.get("server_url"), obj.get("key_issuer")
    subject = obj.get("subject", DEFAULT_SUBJECT)  # a file written before subjects (W1)
    if not isinstance(server_url, str):
        raise _Bad("server_url")
    if not isinstance(issuer, str):
        raise _Bad("key_issuer")
    if not isinstance(subject, str):
        raise _Bad("subject")
    key = TokenKey(server_url=server_url, issuer=issuer, subject=subject)
    return StoredTokens(key, tokens_from_fields(obj))


def _client_to_json(issuer: str, client: ClientRecord) -> dict[str, Any]:
    return {"key_issuer": issuer, **client_fields(client)}


def _client_from_json(obj: object) -> tuple[str, ClientRecord]:
    if not isinstance(obj, dict):
        raise _Bad("clients[]")
    record = client_from_fields(obj)
    issuer = obj.get("key_issuer")
    if not isinstance(issuer, str):
        raise _Bad("key_issuer")
    return issuer, record


def _parse(data: bytes) -> _Document:
    """The document in ``data``; raises ``_Bad`` (naming a field at most)."""

    root = load_json(data)
    if not isinstance(root, dict) or root.get("version") != FORMAT_VERSION:
        raise _Bad("version")
    tokens, clients = root.get("tokens"), root.get("clients")
    if not isinstance(tokens, list) or not isinstance(clients, list):
        raise _Bad("tokens/clients")
    document = _Document([_tokens_from_json(t) for t in tokens], {})
    for obj in clients:
        issuer, record = _client_from_json(obj)
        document.clients[issuer] = record
    return document


def _serialise(document: _Document) -> bytes:
    root = {
        "version": FORMAT_VERSION,
        "tokens": [_tokens_to_json(s.key, s.tokens) for s in document.tokens],
        "clients": [_client_to_json(i, c) for i, c in document.clients.items()],
    }
    return (json.dumps(root, indent=2) + "\n").encode("utf-8")


def _newest(document: _Document, key: TokenKey) -> TokenSet | None:
    """What ``get_tokens`` would answer for ``key``'s server."""
    return _newest_for(document, key.server_url, key.subject)


def _newest_for(document: _Document, server_url: str, subject: str) -> TokenSet | None:
    """The newest set held for ``server_url`` and ``subject``, whatever its issuer."""
    found = [
        s.tokens
        for s in document.tokens
        if s.key.server_url == server_url and s.key.subject == subject
    ]
    return found[-1] if found else None


# --- the store ------------------------------------------------------------------------------


class FileTokenStore:
    """A ``mcpcore.TokenStore`` in one JSON file (see the module docstring).

    Each method reads the file afresh (another ``mcpcore`` run may have changed
    it) and each change rewrites it atomically under the lock. Reads raise
    ``TokenFileError`` for an unusable file. Writes made by a client's driver
    (``set_tokens`` …) never raise into it: a failure is logged (without
    content) and kept in ``write_error`` for the command to report; the
    command's own changes (``forget_server``, ``forget_all``) raise.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        """``path``: the token file; by default the one ``mcpcore login`` uses
        (``default_token_file()``)."""
        self.path = Path(path) if path is not None else default_token_file()
        self.write_error: TokenFileError | None = None
        self._lock = threading.RLock()
        # (server URL, subject) -> the held lock file's fd
        self._refresh_locks: dict[tuple[str, str], int] = {}
        self._signing_in: set[str] = set()  # issuers whose sign-in lock is held here

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    # --- TokenStore ---------------------------------------------------------------------

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        return _newest_for(self._read(), server_url, subject)

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        """Store ``tokens``; with ``replaces``, only if the file still holds that set
        for the server. True if it was written."""

        def change(document: _Document) -> bool:
            if replaces is not None and not same_tokens(_newest(document, key), replaces):
                return False
            document.tokens = [s for s in document.tokens if s.key != key]
            document.tokens.append(StoredTokens(key, tokens))  # newest last
            return True

        return self._change_quietly(change)

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        """Forget the tokens under ``key``; with ``only_if``, only if the file still
        holds that set for the server. True if they were removed (or were not there)."""

        def change(document: _Document) -> bool:
            if only_if is not None and not same_tokens(_newest(document, key), only_if):
                return False
            document.tokens = [s for s in document.tokens if s.key != key]
            return True

        return self._change_quietly(change)

    def lock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        """Take the refresh lock without waiting: False if another run (or another
        client of this process) holds it. One lock file serves every server: a
        refresh is short. A lock that cannot be taken at all (the directory cannot
        be written) is logged and answered True: refreshing unlocked beats never."""
        if fcntl is None:  # pragma: no cover - not POSIX
            return True
        with self._lock:
            if (server_url, subject) in self._refresh_locks:
                return False
            try:
                self._make_directory()
                path = self.path.with_name(self.path.name + ".refresh.lock")
                flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                fd = os.open(path, flags, 0o600)
            except (OSError, TokenFileError) as exc:
                _log.warning("the token file's refresh lock cannot be taken: %s", exc)
                return True
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return False
            self._refresh_locks[(server_url, subject)] = fd
            return True

    def unlock_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> None:
        """Release the refresh lock ``lock_tokens`` took (closing the file releases it)."""
        with self._lock:
            fd = self._refresh_locks.pop((server_url, subject), None)
        if fd is not None:
            os.close(fd)

    def lock_sign_in(self, issuer: str) -> bool:
        """Take the sign-in lock for ``issuer`` without waiting: False while another
        client of this process signs in there (R4)."""
        with self._lock:
            if issuer in self._signing_in:
                return False
            self._signing_in.add(issuer)
            return True

    def unlock_sign_in(self, issuer: str) -> None:
        with self._lock:
            self._signing_in.discard(issuer)

    def get_clients(self) -> Sequence[ClientRecord]:
        return list(self._read().clients.values())

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        def change(document: _Document) -> bool:
            document.clients[issuer] = client
            return True

        self._change_quietly(change)

    def delete_client(self, issuer: str) -> None:
        def change(document: _Document) -> bool:
            document.clients.pop(issuer, None)
            return True

        self._change_quietly(change)

    # --- what the commands use ----------------------------------------------------------

    def check(self) -> None:
        """Raise ``TokenFileError`` now if the file exists and cannot be used."""
        self._read()

    def entries(self) -> list[StoredTokens]:
        """Every stored token set, oldest first."""
        return list(self._read().tokens)

    def clients(self) -> dict[str, ClientRecord]:
        """The registered clients by issuer."""
        return dict(self._read().clients)

    def forget_server(self, server_url: str) -> int:
        """Remove the tokens held for ``server_url``, and the clients no other server's
        tokens use; delete the file when nothing is left. Returns how many token sets
        were removed."""
        removed = 0

        def change(document: _Document) -> None:
            nonlocal removed
            kept = [s for s in document.tokens if s.key.server_url != server_url]
            gone = [s for s in document.tokens if s.key.server_url == server_url]
            removed = len(gone)
            document.tokens = kept
            still_used = {s.key.issuer for s in kept} | {s.tokens.issuer for s in kept}
            for stored in gone:
                for issuer in (stored.key.issuer, stored.tokens.issuer):
                    if issuer not in still_used:
                        document.clients.pop(issuer, None)

        self._change(change)
        return removed

    def forget_all(self) -> bool:
        """Delete the file; True if there was one. The lock files beside it stay:
        they hold nothing, and removing one while another run holds it would let a
        third run lock a new file of the same name, and two runs think they hold
        the lock."""
        with self._locked(check=False):
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise self._error(f"cannot be removed: {exc.strerror or exc}") from None
            return True

    # --- reading --------------------------------------------------------------------------

    def _error(self, text: str) -> TokenFileError:
        return TokenFileError(f"the token file {str(self.path)!r} {text}")

    def _read(self) -> _Document:
        with self._lock:
            return self._read_unlocked()

    def _read_unlocked(self) -> _Document:
        self._check_directory()
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return _Document([], {})
        except OSError as exc:
            if self.path.is_symlink():
                raise self._error("is a symbolic link; mcpcore only uses a regular file") from None
            raise self._error(f"cannot be read: {exc.strerror or exc}") from None
        try:
            info = os.fstat(fd)
            self._check_safe(info)
            if info.st_size > MAX_FILE_SIZE:
                raise self._error("is too large to be a token file; remove it")
            with os.fdopen(fd, "rb") as file:
                fd = -1
                data = file.read(MAX_FILE_SIZE + 1)
        except OSError as exc:
            raise self._error(f"cannot be read: {exc.strerror or exc}") from None
        finally:
            if fd != -1:
                os.close(fd)
        try:
            return _parse(data)
        except _Bad:
            raise self._error(
                "is corrupt or was not written by mcpcore; remove it (then sign in again "
                "with 'mcpcore login')"
            ) from None

    def _check_safe(self, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise self._error("is not a regular file")
        getuid = getattr(os, "getuid", None)
        if getuid is not None and info.st_uid != getuid():
            raise self._error("belongs to another user; mcpcore only uses a token file you own")
        mode = stat.S_IMODE(info.st_mode)
        if os.name == "posix" and mode & 0o077:
            raise self._error(
                f"can be read or written by other users (mode {mode:04o}); "
                f"make it private with: chmod 600 {str(self.path)!r}"
            )

    def _check_directory(self) -> None:
        """The file's directory is the user's own and only they can write to it
        (another user who can write there could replace the file)."""
        directory = self.path.parent
        try:
            info = os.stat(directory)
        except FileNotFoundError:
            return  # created 0700 on the first write
        except OSError as exc:
            raise TokenFileError(
                f"the directory {str(directory)!r} of the token file cannot be read: "
                f"{exc.strerror or exc}"
            ) from None
        if not stat.S_ISDIR(info.st_mode):
            raise TokenFileError(
                f"{str(directory)!r} (the token file's directory) is not a directory"
            )
        getuid = getattr(os, "getuid", None)
        if getuid is not None and info.st_uid != getuid():
            raise TokenFileError(
                f"the directory {str(directory)!r} of the token file belongs to another user; "
                "keep the token file in a directory you own (--token-file or "
                f"${TOKEN_FILE_ENV})"
            )
        mode = stat.S_IMODE(info.st_mode)
        if os.name == "posix" and mode & 0o022:
            raise TokenFileError(
                f"the directory {str(directory)!r} of the token file can be written by other "
                f"users (mode {mode:04o}); make it private with: chmod 700 {str(directory)!r}"
            )

    # --- writing --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, *, check: bool = True) -> Iterator[None]:
        """This process's lock, then the lock file's (other mcpcore runs). Without
        ``check`` an unsafe directory is not refused (``forget_all`` is the way out)."""
        with self._lock:
            self._make_directory(check=check)
            if fcntl is None:  # pragma: no cover - not POSIX
                yield
                return
            lock_path = self.path.with_name(self.path.name + ".lock")
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            try:
                fd = os.open(lock_path, flags, 0o600)
            except OSError as exc:
                raise self._error(f"cannot be locked: {exc.strerror or exc}") from None
            try:
                self._flock(fd)
                yield
            finally:
                os.close(fd)  # releases the lock

    def _flock(self, fd: int) -> None:
        """The lock file's lock, waiting at most ``LOCK_WAIT`` seconds (never for ever:
        the driver calls the store with its own lock held)."""
        assert fcntl is not None
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise self._error(
                        f"is locked by another mcpcore run (waited {LOCK_WAIT:g} s)"
                    ) from None
                time.sleep(0.02)
            except OSError as exc:
                raise self._error(f"cannot be locked: {exc.strerror or exc}") from None

    def _make_directory(self, *, check: bool = True) -> None:
        directory = self.path.parent
        if directory.is_dir():
            if check:
                self._check_directory()
            return
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(directory, 0o700)  # whatever the umask did
        except OSError as exc:
            raise TokenFileError(
                f"cannot create the directory {str(directory)!r} for the token file: "
                f"{exc.strerror or exc}"
            ) from None

    def _change(self, change: Callable[[_Document], object]) -> object:
        """Read, change and write the document under the locks (raises ``TokenFileError``).
        A change that returns False changed nothing: nothing is written."""
        with self._locked():
            document = self._read_unlocked()
            result = change(document)
            if result is False:
                return result
            if document.empty:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path)
            else:
                self._write(_serialise(document))
            return result

    def _change_quietly(self, change: Callable[[_Document], bool]) -> bool:
        """``_change`` for the driver's store actions: a failure is logged and kept
        (and the change counts as not made)."""
        try:
            return self._change(change) is not False
        except TokenFileError as exc:
            self.write_error = exc
            _log.warning("%s", exc)
            return False

    def _write(self, data: bytes) -> None:
        """Atomically: a fresh 0600 file beside the target, then ``os.replace``."""
        directory = self.path.parent
        temporary = directory / f".{self.path.name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(temporary, flags, 0o600)
        except OSError as exc:
            raise self._error(f"cannot be written: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as file:
                if hasattr(os, "fchmod"):
                    os.fchmod(file.fileno(), 0o600)  # never wider, whatever the umask
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise self._error(f"cannot be written: {exc.strerror or exc}") from None
        if hasattr(os, "O_DIRECTORY"):
            with contextlib.suppress(OSError):
                dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
