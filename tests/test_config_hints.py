"""An entry's placeholders in another tool's syntax (C7).

C7 expands ``${env:NAME}``, ``${userHome}`` and the plugin directories, and
leaves any other ``${...}`` as it is. People write Claude Code's ``${VAR}``, a
shell's ``$VAR``, or forget a brace: those still pass through unchanged, and the
entry gets one warning (logging, ``mcpcore.config``) naming where and the
placeholder, never a value.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcpcore import ConfigError, LocalServer, load_mcp_json, parse_server

ENV = {"API_TOKEN": "tok-5e1f-secret", "HOST": "example.com"}


def _parse(entry: dict[str, Any], **options: Any) -> Any:
    return parse_server("svc", entry, env=ENV, home="/home/me", **options)


def _notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mcpcore.config"]


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcpcore.config")


def test_C7_a_foreign_placeholder_passes_through_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entry = {
        "url": "https://$HOST/mcp?key=${KEY}",
        "headers": {
            "Authorization": "Bearer ${API_TOKEN}",
            "X-Broken": "x ${env:API_TOKEN",
            "X-Ok": "${env:API_TOKEN}",
        },
    }
    server = _parse(entry)
    assert server.url == "https://$HOST/mcp?key=${KEY}"  # unchanged (C7)
    assert server.headers["Authorization"] == "Bearer ${API_TOKEN}"
    assert server.headers["X-Broken"] == "x ${env:API_TOKEN"
    assert server.headers["X-Ok"] == ENV["API_TOKEN"]
    assert _notes(caplog) == [
        "server 'svc': "
        "the url holds `${KEY}`, which is not expanded; did you mean `${env:KEY}`?; "
        "the url holds `$HOST`, which is not expanded; did you mean `${env:HOST}`?; "
        "header 'Authorization' holds `${API_TOKEN}`, which is not expanded; "
        "did you mean `${env:API_TOKEN}`?; "
        "header 'X-Broken' holds `${env:API_TOKEN` without its closing '}', so it is "
        "not expanded; did you mean `${env:API_TOKEN}`?"
    ]
    assert ENV["API_TOKEN"] not in caplog.text and "Bearer" not in caplog.text


def test_C7_known_forms_and_dollars_inside_a_value_are_not_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``${env:…}``, ``${userHome}``, the plugin directories and VS Code's
    ``${input:…}`` say nothing; a ``$`` inside a token (``ab$CD``), a lowercase
    ``$name`` and ``$VAR`` in a local server's ``args`` (a shell may read them) are
    not variables to warn about."""
    _parse(
        {
            "url": "https://x.example/${userHome}",
            "headers": {"A": "${env:API_TOKEN}", "B": "${input:key}", "C": "ab$CD", "D": "$low"},
        }
    )
    _parse(
        {"command": "sh", "args": ["-c", "echo $HOME", "${PLUGIN_ROOT}/x"]},
        allow_local=True,
        plugin_root="/plugins/p",
    )
    assert _notes(caplog) == []


def test_C7_a_local_entry_is_warned_about_too(caplog: pytest.LogCaptureFixture) -> None:
    server = _parse(
        {"command": "server", "args": ["--token", "${API_TOKEN}"], "env": {"KEY": "${KEY}"}},
        allow_local=True,
        origin="user",
    )
    assert isinstance(server, LocalServer)
    assert server.args == ("--token", "${API_TOKEN}") and server.env["KEY"] == "${KEY}"
    assert _notes(caplog) == [
        "server 'svc': args[1] holds `${API_TOKEN}`, which is not expanded; did you mean "
        "`${env:API_TOKEN}`?; env 'KEY' holds `${KEY}`, which is not expanded; did you "
        "mean `${env:KEY}`?"
    ]


def test_C7_a_refused_entry_still_says_what_it_left_unexpanded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(ConfigError, match="is not a valid URL"):
        _parse({"url": "https://${HOST}:x/mcp"})
    assert _notes(caplog) == [
        "server 'svc': the url holds `${HOST}`, which is not expanded; did you mean `${env:HOST}`?"
    ]


def test_C7_one_warning_per_entry_in_a_file(caplog: pytest.LogCaptureFixture) -> None:
    text = (
        '{"mcpServers": {"a": {"url": "https://a.example/mcp", "headers": '
        '{"X-1": "${ONE}", "X-2": "${TWO}"}}, "b": {"url": "https://b.example/mcp"}}}'
    )
    load_mcp_json(text, env=ENV, home="/home/me")
    (note,) = _notes(caplog)
    assert note.startswith("server 'a': header 'X-1' holds `${ONE}`")
    assert "header 'X-2' holds `${TWO}`" in note
