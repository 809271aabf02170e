"""``--protocol auto|legacy|modern`` and an entry's own ``"protocol"`` (issue 37 point 4; E1, C9).

Against the official Python SDK's server in its default mode, which speaks both
2026-07-28 and the handshake era on one endpoint. Its ``visit`` tool asks with
``ctx.elicit_url()``, which the SDK refuses at 2026-07-28 (no back-channel for a
request from the server): only the handshake era lets it ask, so ``--protocol
legacy`` (or a pin in the user's mcp.json) is how such a tool works.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from peers import Peer, modern_sdk_server
from test_cli import run, write_config

pytestmark = pytest.mark.realpeer


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


def _revisions(result_stdout: str) -> dict[str, str | None]:
    return {row["name"]: row["protocol"] for row in json.loads(result_stdout)}


def test_E1_check_speaks_the_revision_asked_for(peer: Peer, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"sdk": {"url": peer.url}})
    for flag, revision in ((None, "2026-07-28"), ("auto", "2026-07-28"), ("modern", "2026-07-28")):
        result = run("check", config, "--json", *(["--protocol", flag] if flag else []))
        assert result.returncode == 0, result.stderr
        assert _revisions(result.stdout) == {"sdk": revision}
    result = run("check", config, "--json", "--protocol", "legacy")
    assert result.returncode == 0, result.stderr
    assert _revisions(result.stdout)["sdk"] < "2026-07-28"


def test_C9_E1_the_users_entry_pins_a_revision_and_the_flag_wins(
    peer: Peer, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        {
            "pinned": {"url": peer.url, "protocol": "legacy"},
            "free": {"url": peer.url},
            "bad": {"url": peer.url, "protocol": "old"},
        },
    )
    result = run("check", config, "--json")
    assert result.returncode == 1  # "bad" is invalid
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["pinned"]["status"] == "ready" and rows["pinned"]["protocol"] < "2026-07-28"
    assert rows["free"]["protocol"] == "2026-07-28"
    assert rows["bad"]["status"] == "invalid"
    assert rows["bad"]["reason"].startswith(
        "'protocol' must be 'auto', 'legacy', 'modern' or a protocol version"
    )
    assert "not 'old'" in rows["bad"]["reason"]

    result = run("check", config, "--json", "--protocol", "modern")
    assert _revisions(result.stdout)["pinned"] == "2026-07-28"


def test_E1_a_tool_that_asks_with_ctx_elicit_works_only_at_legacy(
    peer: Peer, tmp_path: Path
) -> None:
    """What the guide says: at 2026-07-28 only tools written for input_required can
    ask; --protocol legacy, or the entry's pin, lets a ctx.elicit() tool ask."""
    result = run("call", peer.url, "visit", "service=x", "--no-input")
    assert result.returncode == 1  # the SDK's refusal, as the tool's error
    assert "back-channel" in result.stdout

    result = run("call", peer.url, "visit", "service=x", "--no-input", "--protocol", "legacy")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "x: decline\n"
    assert "asked a question; declined" in result.stderr

    config = write_config(tmp_path, {"sdk": {"url": peer.url, "protocol": "legacy"}})
    result = run("call", "--config", config, "sdk/visit", "service=y", "--no-input")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "y: decline\n"

    result = run("tools", peer.url, "--protocol", "legacy")
    assert result.returncode == 0 and "server/visit" in result.stdout


def test_E1_protocol_flag_is_on_tools_call_and_check_and_refuses_other_words() -> None:
    for command in ("tools", "call", "check"):
        text = run(command, "--help").stdout
        assert "--protocol auto|legacy|modern" in text, command
    result = run("tools", "http://127.0.0.1:9/mcp", "--protocol", "newest")
    assert result.returncode == 2
    assert "argument --protocol: invalid choice: 'newest'" in result.stderr
