"""Fuzz the JSON-RPC codec (``mcpcore.wire._jsonrpc``).

Invariants, for any bytes:

* ``decode_message`` returns a message or raises ``RemoteProtocolError``, nothing else;
* bytes and the same text as ``str`` decode alike;
* a decoded message encodes (never ``LocalProtocolError``) and decodes back to itself;
* an error's text holds no raw control character (X1).
"""

from __future__ import annotations

import sys

import _fuzzlib

from mcpcore.base._errors import RemoteProtocolError
from mcpcore.wire._jsonrpc import (
    ErrorResponse,
    Notification,
    Request,
    Result,
    decode_message,
    encode_message,
)

_CONTROLS = {chr(c) for c in range(32)} - {"\t"} | {"\x7f"}


def _decode(data: bytes | str) -> tuple[str, object]:
    try:
        return "ok", decode_message(data)
    except RemoteProtocolError as exc:
        text = str(exc)
        assert not _CONTROLS & set(text), f"raw control character in {text!r}"
        return "error", type(exc)
    except Exception as exc:
        _fuzzlib.raise_unexpected("decode_message", exc)
        raise


def _same(a: object, b: object) -> bool:
    # NaN never decodes; -0.0 == 0.0 is fine for a round trip of JSON numbers.
    return a == b


def fuzz_one_input(data: bytes) -> None:
    outcome, message = _decode(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        assert outcome == "error"
        return
    again = _decode(text)
    assert again[0] == outcome, (outcome, again)
    if outcome != "ok":
        return
    assert isinstance(message, (Request, Notification, Result, ErrorResponse))
    assert _same(again[1], message)
    encoded = encode_message(message)  # LocalProtocolError here would be a bug
    back = decode_message(encoded)
    assert _same(back, message), (back, message)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
