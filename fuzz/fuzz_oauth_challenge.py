"""Fuzz the ``WWW-Authenticate`` parser and what a challenge starts (``_oauth``, O3-O7, O19, O59).

Up to four header fields (``WWW-Authenticate`` in any case, or another name)
with raw input bytes as values, or challenges built from schemes, parameters
(quoted, escaped, bare, empty, duplicated), token68s, commas and whitespace.

Invariants:

* ``parse_www_authenticate`` never raises; it gives None or a dict of str to
  str with lowercase token keys; it is the first field's answer that has a
  Bearer challenge (other names and malformed fields count as absent, O4);
  it ignores the header name's case; the parameters written back as one
  quoted challenge parse to the same parameters;
* ``OAuthFlow.challenge`` with those headers never raises: a 403 without
  ``insufficient_scope`` is not an auth matter (O3); a 401 starts discovery
  at the challenge's ``resource_metadata`` URL when it is https (O5, O6) and
  at the path-insert well-known URL otherwise; then, with canned answers, the
  flow asks for exactly the challenged scope (O19) and obtains a token.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import _fuzzlib
from _fuzzlib import Reader
from _oauthfuzz import (
    PRM_CUSTOM,
    PRM_PATH,
    FlowDriver,
    debug_log,
    held_tokens,
    make_flow,
    run_guarded,
    secure_url,
)

from mcpcore.auth._oauth import RETRY, WAIT, Fail, RequestTicket, parse_www_authenticate

_NAMES = (b"www-authenticate", b"WWW-Authenticate", b"WwW-aUtHeNtIcAtE", b"x-authenticate")
_SCHEMES = ("Bearer", "bearer", "BEARER", "Basic", "Negotiate", "DPoP", "Bearer2", "")
_PARAMS = ("scope", "error", "resource_metadata", "realm", "error_description", "Scope", "a b")
_VALUES = (
    "mcp",
    "mcp:read mcp:write",
    "insufficient_scope",
    "invalid_token",
    PRM_CUSTOM,
    "http://evil.example/prm",
    "",
    'say "hi"',
    "a,b",
    "x=y",
    "é",
    "\\",
    "\x00",
)
_JOINERS = (", ", ",", " , ", ",, ", " ", ",\t")
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _built(r: Reader) -> bytes:
    parts: list[str] = []
    for _ in range(r.u8() % 3 + 1):
        scheme = r.choice(_SCHEMES)
        items: list[str] = []
        if r.u8() % 6 == 0:
            items.append(r.choice(("abc==", "a.b-c~d+e/f", "=", "tok en")))
        for _ in range(r.u8() % 4):
            name = r.choice(_PARAMS)
            value = r.choice(_VALUES) if r.u8() % 4 else r.text(12)
            style = r.u8() % 6
            if style == 0:
                items.append(f"{name}={value}")
            elif style == 1:
                items.append(f"{name} = {_quoted(value)}")
            elif style == 2:
                items.append(f"{name}=")
            else:
                items.append(f"{name}={_quoted(value)}")
        parts.append((scheme + " " + r.choice(_JOINERS).join(items)).strip())
    joiner: str = r.choice(_JOINERS)
    return joiner.join(parts).encode("utf-8", "surrogateescape")


def _check_params(params: Any) -> None:
    assert params is None or isinstance(params, dict), params
    if params is None:
        return
    for key, value in params.items():
        assert isinstance(key, str) and isinstance(value, str), params
        assert key and set(key) <= _TCHAR, f"a parameter name {key!r}"


def _check_parser(headers: list[tuple[bytes, bytes]]) -> dict[str, str] | None:
    params = parse_www_authenticate(headers)
    _check_params(params)
    # the first field (of the right name) that has a Bearer challenge answers
    first = None
    for name, value in headers:
        one = parse_www_authenticate([(name, value)])
        _check_params(one)
        if one is not None:
            assert name.lower() == b"www-authenticate"
            first = one
            break
    assert params == first, (params, first)
    # the header name's case does not matter
    swapped = [(n.upper() if n.lower() == b"www-authenticate" else n, v) for n, v in headers]
    assert parse_www_authenticate(swapped) == params
    # written back as one quoted challenge, the parameters read the same
    if params is not None:
        text = "Bearer " + ", ".join(f"{k}={_quoted(v)}" for k, v in params.items())
        again = parse_www_authenticate([(b"www-authenticate", text.encode("latin-1"))])
        assert again == params, (text, again, params)
    return params


def raw_input(*values: bytes, flags: int = 0) -> bytes:
    """An input whose ``WWW-Authenticate`` fields are ``values`` (at most four)."""
    out = bytes([flags & ~1, len(values) - 1])
    for value in values:
        out += bytes([1, 0]) + len(value).to_bytes(2, "little") + value
    return out


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    flags = r.u8()
    headers: list[tuple[bytes, bytes]] = []
    for _ in range(r.u8() % 4 + 1):
        name = r.choice(_NAMES) if r.u8() % 8 else b"content-type"
        value = _built(r) if flags & 1 else r.blob(600)
        headers.append((name, value))
    status = 403 if flags & 2 else 401
    with_tokens = bool(flags & 4)

    def body() -> None:
        params = _check_parser(headers)
        with debug_log() as log:
            tokens = held_tokens(refresh=False, scope=None) if with_tokens else None
            flow = make_flow(tokens=tokens)
            driver = FlowDriver(flow, data=data)
            ticket = RequestTicket()
            flow.prepare(ticket, driver.now)
            verdict = flow.challenge(ticket, status, headers, driver.now)
            first = flow.take_actions()
            flow.take_events()
            error = (params or {}).get("error")
            if status == 403 and error != "insufficient_scope":
                assert verdict is None and not first, verdict  # O3
                return
            assert verdict is WAIT or verdict is RETRY or isinstance(verdict, Fail), verdict
            if verdict is WAIT:
                rm = (params or {}).get("resource_metadata")
                wanted = rm if rm is not None and secure_url(rm) else PRM_PATH
                assert first and first[0].url == wanted, (first, rm)  # type: ignore[union-attr]
            driver.pump(taken=first)
            scope = (params or {}).get("scope") or None
            for opened in driver.opened:
                asked = dict(parse_qsl(urlsplit(opened.url).query)).get("scope")
                assert asked == scope, (asked, scope)  # O19
            driver.finish(log)

    run_guarded("WWW-Authenticate", body)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
