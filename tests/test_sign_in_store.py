"""W2: ``mcpcore login`` and ``browser_auth()`` keep sign-ins in SQLite by default.

``SignInStore`` (``mcpcore_signin``) is ``SqliteTokenStore`` with the commands'
methods: the default store is ``tokens.sqlite3`` in the user's data directory;
an existing JSON token file at its default place is imported once (then renamed
``tokens.json.imported``); ``--token-file`` / ``$MCPCORE_TOKEN_FILE`` still name
a JSON token file; a command that only reads creates nothing; ``auth status``
and ``logout --all`` serve the SQLite store.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from mcpcore import TokenKey
from mcpcore_signin import (
    IMPORTED_SUFFIX,
    FileTokenStore,
    SignInStore,
    default_store,
    default_token_store,
)
from test_cli_auth import ISSUER, SERVER, _client, _env, _tokens, run


def test_W2_the_default_store_is_sqlite_beside_the_json_file_and_json_when_named(
    tmp_path: Path,
) -> None:
    xdg = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert default_token_store(xdg) == tmp_path / "xdg" / "mcpcore" / "tokens.sqlite3"
    assert default_token_store({**xdg, "MCPCORE_TOKEN_STORE": "/x/s.db"}) == Path("/x/s.db")
    store = default_store(env=xdg)
    assert isinstance(store, SignInStore)
    assert store.legacy == tmp_path / "xdg" / "mcpcore" / "tokens.json"
    named = default_store(env={**xdg, "MCPCORE_TOKEN_FILE": str(tmp_path / "t.json")})
    assert isinstance(named, FileTokenStore) and named.path == tmp_path / "t.json"
    assert isinstance(default_store(tmp_path / "u.json", env=xdg), FileTokenStore)


def test_W2_a_store_that_is_only_read_creates_nothing(tmp_path: Path) -> None:
    store = SignInStore(tmp_path / "data" / "tokens.sqlite3")
    assert store.get_tokens(SERVER) is None and store.get_clients() == []
    assert store.entries() == [] and store.clients() == {} and store.forget_server(SERVER) == 0
    store.check()
    assert not (tmp_path / "data").exists()


def test_W2_login_imports_the_json_token_file_once(tmp_path: Path) -> None:
    directory = tmp_path / "xdg" / "mcpcore"
    legacy = FileTokenStore(directory / "tokens.json")
    legacy.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    legacy.set_client(ISSUER, _client())

    status = run(tmp_path, "auth", "status", "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["token_file"] == str(directory / "tokens.sqlite3")
    assert [row["server_url"] for row in shown["servers"]] == [SERVER]
    # renamed, kept for the user to delete; the store is the user's own
    assert not (directory / "tokens.json").exists()
    assert (directory / ("tokens.json" + IMPORTED_SUFFIX)).exists()
    assert stat.S_IMODE((directory / "tokens.sqlite3").stat().st_mode) == 0o600
    store = SignInStore(directory / "tokens.sqlite3")
    assert store.get_tokens(SERVER) == _tokens() and store.clients() == {ISSUER: _client()}

    # Once: a JSON file written there again later is not imported over the store.
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens("at-newer"))
    store.close()
    FileTokenStore(directory / "tokens.json").set_tokens(
        TokenKey(server_url=SERVER, issuer=ISSUER), _tokens()
    )
    again = run(tmp_path, "auth", "status", "--json")
    assert again.returncode == 0, again.stderr
    assert SignInStore(directory / "tokens.sqlite3").get_tokens(SERVER) == _tokens("at-newer")

    removed = run(tmp_path, "logout", "--all")
    assert removed.returncode == 0 and "removed the token file" in removed.stdout
    assert not (directory / "tokens.sqlite3").exists()


def test_W2_a_store_others_can_read_is_refused_naming_no_content(tmp_path: Path) -> None:
    path = tmp_path / "tokens.sqlite3"
    store = SignInStore(path)
    store.set_tokens(TokenKey(server_url=SERVER, issuer=ISSUER), _tokens())
    store.close()
    path.chmod(0o644)
    status = subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", "auth", "status", "--json"],
        capture_output=True,
        text=True,
        env=_env(tmp_path, {"MCPCORE_TOKEN_STORE": str(path)}),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert status.returncode == 2 and "chmod 600" in status.stderr
    assert _tokens().access_token not in status.stderr + status.stdout
