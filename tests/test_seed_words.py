"""The seeds' fixed words, held to the letter wherever they surface (C6, K3).

Hosts match on these phrases, so a reason may add a hint after ``": "`` but the
seed's words themselves never change. Each test names the surface it holds:
the core's constant, ``Availability.reason``, ``ConfigError``, a hub entry's
reason, ``mcpcore check`` (text and JSON), and the rendered placeholders.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import mcpcore
import mcpcore_anyio
import mcpcore_threaded
from mcpcore import ConfigError, parse_server, render_result

#: Seed 000, to the letter.
SEED_LOCAL = "local MCP servers (command) are not supported yet"


def _holds_seed_words(reason: str | None) -> None:
    """The reason is the seed's words, optionally followed by ``": "`` and a hint."""
    assert reason is not None
    assert reason == SEED_LOCAL or reason.startswith(SEED_LOCAL + ": "), reason


def test_C6_the_public_constant_is_the_seeds_words() -> None:
    """C6: the words hosts match on are public, so a host need not copy them."""
    assert mcpcore.LOCAL_REFUSAL_WORDS == SEED_LOCAL


def test_C6_config_error_begins_with_the_seeds_words() -> None:
    """C6: parsing a local entry without allowing it refuses with the seed's words."""
    with pytest.raises(ConfigError) as caught:
        parse_server("local", {"command": "server", "args": ["--x"]}, env={}, home="/h")
    _holds_seed_words(str(caught.value))


@pytest.mark.parametrize("module", [mcpcore_threaded, mcpcore_anyio], ids=["threaded", "anyio"])
def test_C6_availability_and_hub_entry_reason_begin_with_the_seeds_words(
    module: object, tmp_path: Path
) -> None:
    """C6: a hub entry with a ``command`` is unavailable with the seed's words."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"local": {"command": "python3"}}}))
    hub = module.McpHub.from_mcp_json(str(path))  # type: ignore[attr-defined]
    if module is mcpcore_threaded:
        hub.start()
        try:
            states = hub.ready(5)
        finally:
            hub.close()
    else:

        async def main() -> dict[str, mcpcore.Availability]:
            with anyio.fail_after(10):
                async with hub:
                    return await hub.ready(5)  # type: ignore[no-any-return]

        states = anyio.run(main)
    assert not states["local"].ok
    _holds_seed_words(states["local"].reason)


def test_C6_mcpcore_check_begins_with_the_seeds_words(tmp_path: Path) -> None:
    """C6: ``mcpcore check`` (JSON and text) shows the seed's words, then the CLI's hint."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"local": {"command": "python3"}}}))
    command = [sys.executable, "-m", "mcpcore_cli", "check", str(path)]
    as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=60)
    (row,) = json.loads(as_json.stdout)
    _holds_seed_words(row["reason"])
    as_text = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert SEED_LOCAL + ": " in as_text.stdout


@pytest.mark.parametrize(
    ("block", "placeholder"),
    [
        ({"type": "image", "data": "AAAA", "mimeType": "image/png"}, "[image omitted: image/png]"),
        ({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, "[audio omitted: audio/wav]"),
        (
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA", "mimeType": "application/pdf"}},
            "[resource omitted: application/pdf]",
        ),
        ({"type": "resource_link", "uri": "file:///x.txt", "name": "x"}, "[resource: file:///x.txt]"),
    ],
)
def test_K3_placeholders_are_the_seeds_words(block: dict[str, object], placeholder: str) -> None:
    """K3 (seed 000): an image, audio or binary resource becomes ``[<kind> omitted: <mime>]``
    and a resource link ``[resource: <uri>]``, to the letter."""
    result = {"content": [{"type": "text", "text": "before"}, block]}
    assert render_result(result).text == f"before\n\n{placeholder}"


def test_K3_structured_content_alone_gives_that_json() -> None:
    """K3 (seed 000): a result with no blocks but with structuredContent gives that JSON."""
    assert render_result({"content": [], "structuredContent": {"a": 1}}).text == '{"a": 1}'
