"""Fuzz config loading (``mcpcore.load_mcp_json``).

The input is an ``mcp.json`` document: either raw bytes, or (when byte 0 is
odd) a document built from the bytes with realistic keys and placeholders.
The environment holds a secret.

Invariants:

* only ``ConfigError`` escapes, and every outcome is a ``RemoteServer``,
  ``LocalServer`` or ``ConfigError``;
* bytes and the same text as ``str`` load alike;
* the environment's secret never appears in an error's text, nor in the
  ``repr``/``str`` of a server (C8) — unless the document itself contains it;
* a remote server's headers are free of CR, LF and NUL, its URL is http(s).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import ConfigError, LocalServer, RemoteServer, load_mcp_json

ENV = {"TOKEN": SECRET, "HOST": f"h{SECRET}.example", "EMPTY": "", "CRLF": f"a\r\n{SECRET}"}
_STRINGS = (
    "https://example.com/mcp",
    "http://127.0.0.1:8000/mcp",
    "http://example.com/mcp",
    "https://${env:HOST}/mcp",
    "https://example.com/mcp?token=${env:TOKEN}",
    "https://user:${env:TOKEN}@example.com/mcp",
    "https://example.com/mcp#${env:TOKEN}",
    "ftp://example.com",
    "Bearer ${env:TOKEN}",
    "${env:TOKEN}",
    "${env:CRLF}",
    "${env:UNSET}",
    "${userHome}/x",
    "${PLUGIN_ROOT}/bin",
    "${PLUGIN_DATA}",
    "./server",
    "../escape",
    "python3",
    "sse",
    "",
    "\x1b[2J",
)
_KEYS = (
    "url",
    "command",
    "args",
    "env",
    "cwd",
    "headers",
    "type",
    "Authorization",
    "X-Key",
    "bad header",
    "Accept",
    "Mcp-Session-Id",
    "PLUGIN_ROOT",
)


def _value(r: Reader, depth: int) -> Any:
    kind = r.u8() % (6 if depth > 0 else 4)
    if kind <= 1:
        return r.choice(_STRINGS)
    if kind == 2:
        return r.json_value(0)
    if kind == 3:
        return r.text(16)
    if kind == 4:
        return [_value(r, depth - 1) for _ in range(r.u8() % 3)]
    return {r.choice(_KEYS): _value(r, depth - 1) for _ in range(r.u8() % 4)}


def _document(r: Reader) -> bytes:
    servers: dict[str, Any] = {}
    for _ in range(r.u8() % 4):
        name = r.choice(("a", "A", "b", "B", "bad name", "x" * 130, "ok-1.2", ""))
        entry: dict[str, Any] = {}
        for _ in range(r.u8() % 5):
            entry[r.choice(_KEYS)] = _value(r, 2)
        servers[name] = entry if r.u8() % 8 else _value(r, 1)
    doc: dict[str, Any] = {"mcpServers": servers}
    if r.u8() % 8 == 0:
        doc["extra"] = 1
    if r.u8() % 8 == 0:
        doc["$schema"] = _value(r, 0)
    return json.dumps(doc).encode()


def _load(text: str | bytes, r_flags: int) -> Any:
    try:
        outcomes = load_mcp_json(
            text,
            env=ENV,
            home="/home/u",
            plugin_root="/plug" if r_flags & 1 else None,
            plugin_data="/data" if r_flags & 2 else None,
            allow_local=bool(r_flags & 4),
            allow_insecure_http=bool(r_flags & 8),
        )
    except ConfigError as exc:
        return ("error", str(exc))
    except Exception as exc:
        _fuzzlib.raise_unexpected("load_mcp_json", exc)
    assert isinstance(outcomes, dict)
    shown = []
    for key, outcome in outcomes.items():
        assert isinstance(outcome, (RemoteServer, LocalServer, ConfigError)), repr(outcome)
        if isinstance(outcome, RemoteServer):
            # URL schemes are case-insensitive (RFC 3986 3.1): "htTp://" is http.
            assert outcome.url.lower().startswith(("http://", "https://")), outcome.display_url
            for name, value in outcome.headers.items():
                assert not set("\r\n\x00") & set(value), name
        shown.append((key, type(outcome).__name__, str(outcome), repr(outcome)))
    return ("ok", shown)


def fuzz_one_input(data: bytes) -> None:
    if not data:
        return
    r = Reader(data)
    flags = r.u8()
    document = _document(r) if flags & 16 else data[1:]
    result = _load(document, flags)
    if SECRET not in document.decode("utf-8", "replace"):
        assert SECRET not in repr(result), "a secret from the environment leaked"
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError:
        assert result[0] == "error"
        return
    assert _load(text, flags) == result, "bytes and str loaded differently"


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
