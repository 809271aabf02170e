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

With the first byte's top bit set, the input is a command line instead: a URL
and ``-H`` headers (as ``mcpcore call URL -H ...`` builds its entry, through
``parse_server``), a tool's input schema and ``key=value`` / ``key:=JSON``
arguments (``arguments_from_pairs``). There:

* only ``ConfigError`` (the server) and ``InvalidArguments`` (the arguments)
  escape, and neither error, nor the server's ``repr``/``str``, nor any log
  record holds the environment's secret or an argument's value (the secret
  stands only in values);
* every pair is kept under its key: a parameter that takes a string (or one
  the schema does not declare) keeps the text as written, ``:=`` its JSON;
* a URL or header holding ``${NAME}`` in another tool's syntax (not
  ``${env:…}``, nor a plugin directory, nor ``${userHome}``) is named in the
  entry's one warning, which says ``${env:NAME}`` instead (C7), and names at
  most five placeholders.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import (
    ConfigError,
    InvalidArguments,
    LocalServer,
    RemoteServer,
    arguments_from_pairs,
    is_argument_pair,
    load_mcp_json,
    parse_server,
)

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


# The command line's words: placeholders in other tools' syntax beside ours.
_CLI_TEXTS = (
    "${TOKEN}",
    "${TOKEN:-x}",
    "${HOST}",
    "${env:TOKEN}",
    "${env:TOKEN",
    "${TOKEN",
    "${userHome}",
    "${PLUGIN_ROOT}",
    "$TOKEN",
    "${",
    "}",
    "Bearer ",
    "a=b",
    ":=",
    "\r\n",
    "\x1b[2J",
)
_CLI_URLS = ("https://example.com/mcp", "http://127.0.0.1:9/mcp", "http://example.com/mcp", "")
_SCHEMA_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_ARG_VALUES = ("1", "-2.5", "true", "FALSE", "null", "[1]", '{"a":1}', "", "x", "1e999", "[", "{")
_FOREIGN_NAMED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+][^{}]*)?\}")
_KNOWN = {"userHome", "PLUGIN_ROOT", "PLUGIN_DATA"}


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def _cli_text(r: Reader) -> str:
    return "".join(r.choice(_CLI_TEXTS) if r.u8() % 3 else r.text(6) for _ in range(r.u8() % 4))


def _cli_server(r: Reader) -> None:
    """``mcpcore call URL -H 'Name: value'...``: the entry the CLI builds."""
    url = r.choice(_CLI_URLS) + _cli_text(r)
    headers = {r.choice(_KEYS): _cli_text(r) for _ in range(r.u8() % 3)}
    entry: dict[str, Any] = {"url": url}
    if headers:
        entry["headers"] = headers
    caught = _Warnings()
    logger = logging.getLogger("mcpcore")
    logger.addHandler(caught)
    try:
        server = parse_server("cli", entry, env=ENV, home="/home/u", allow_insecure_http=r.flag())
    except ConfigError as exc:
        assert SECRET not in str(exc), "a secret from the environment leaked into an error"
        return
    except Exception as exc:
        _fuzzlib.raise_unexpected("parse_server", exc)
    finally:
        logger.removeHandler(caught)
    assert SECRET not in repr(server) + str(server), "a secret leaked into a server's repr"
    said = " ".join(caught.texts)
    assert len(caught.texts) <= 1, "more than one warning for one entry"
    for text in (url, *headers.values()):
        for match in _FOREIGN_NAMED.finditer(text):
            name = match.group(1)
            if name in _KNOWN or (name == "env" and match.group(2).startswith(":")):
                continue  # ours, or ${env:-x}: an env placeholder without a name
            if re.search(r"; and \d+ more$", said):
                break  # past the five named, the rest are counted

            assert f"${{env:{name}}}" in said, f"${{{name}}} not named in the warning: {said!r}"
    assert said.count("did you mean") <= 5, "more than five placeholders named"


def _cli_arguments(r: Reader) -> None:
    """``key=value`` words typed by a tool's schema, the secret only in values."""
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    for _ in range(r.u8() % 4):
        kinds = [r.choice(_SCHEMA_TYPES) for _ in range(1 + r.u8() % 2)]
        schema["properties"][r.choice(("a", "b", "n", "x y", "é"))] = {
            "type": kinds if len(kinds) > 1 else kinds[0]
        }
    if r.u8() % 8 == 0:
        schema = r.json_value(2)
    words = []
    for _ in range(r.u8() % 5):
        key = r.choice(("a", "b", "n", "x y", "é", "", "=", "{a", "k:")) if r.flag() else r.text(4)
        value = r.choice(_ARG_VALUES) if r.u8() % 3 else r.text(8)
        words.append(key + r.choice(("=", ":=", "", "==")) + value + (SECRET if r.flag() else ""))
    try:
        arguments = arguments_from_pairs(words, schema)
    except InvalidArguments as exc:
        assert SECRET not in str(exc) + repr(exc), "an argument's value is quoted in an error"
        return
    except Exception as exc:
        _fuzzlib.raise_unexpected("arguments_from_pairs", exc)
    assert len(arguments) == len(words), "a pair was lost or merged"
    properties = schema.get("properties") if isinstance(schema, dict) else None
    for word in words:
        assert is_argument_pair(word), word
        key, _, value = word.partition("=")
        if key.endswith(":"):
            continue  # key:=JSON, read as JSON
        declared = properties.get(key) if isinstance(properties, dict) else None
        kinds = declared.get("type") if isinstance(declared, dict) else None
        if kinds is None or kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
            assert arguments[key] == value, "a string argument changed"


def fuzz_one_input(data: bytes) -> None:
    if not data:
        return
    r = Reader(data)
    flags = r.u8()
    if flags & 128:
        _cli_server(r)
        _cli_arguments(r)
        return
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
