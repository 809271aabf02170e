"""Fuzz token endpoint answers (``_oauth``: ``_read_tokens``, ``_on_token_error``; O44-O55, O71, O72).

The flow is brought to a token request with canned answers - an authorization
code exchange (dynamic client, pre-registered with ``client_secret_basic`` or
``client_secret_post``), a refresh before sending (a token that is due), a
refresh after a 401 and rediscovery, client credentials (Basic, or a JWT the
host signs), a refresh of a JWT client - and that request gets the fuzzed
answer. The body is raw input bytes or a valid token answer with members kept,
dropped or replaced (tokens holding ``SECRET``; ``error_description`` echoing
the code, verifier, refresh token, client secret or assertion it was sent).
A token obtained is then used (``prepare``) and refreshed once more, so the
values the answer gave (refresh token, scope) go out again.

Invariants (besides those of ``_oauthfuzz``): the outcome of a 200 answer
agrees with a small reference reading of O46 (a JSON object with a non-empty
``access_token``, ``token_type`` Bearer in any case, ``expires_in`` a finite
non-negative number or numeric string, ``refresh_token``/``scope`` strings),
and a token obtained has ``expires_at = now + expires_in``; a refresh keeps the
old refresh token and scope when the answer omits them and the issuer,
resource, token endpoint and client always (O54); tokens are deleted after a
refresh exactly when the server refused it (a 4xx other than 429), never after
a redirect, a 5xx, a 429 or a broken connection (O55).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import Reader
from _oauthfuzz import (
    AS,
    CLEAN_200,
    MAX_BODY,
    NOW,
    Answer,
    FlowDriver,
    S,
    challenge_header,
    debug_log,
    held_tokens,
    make_flow,
    preregistered,
    read_answer,
    run_guarded,
    template,
)

from mcpcore.auth._oauth import (
    AuthFailed,
    Authorized,
    AuthRequest,
    DeleteTokens,
    Purpose,
    RequestTicket,
    TokenSet,
)

STEPS = (
    "code-dcr",
    "code-basic",
    "code-post",
    "refresh-due",
    "refresh-401",
    "cc-basic",
    "cc-jwt",
    "refresh-jwt",
)
_PURPOSE = {
    "code": Purpose.TOKEN_CODE,
    "refresh": Purpose.TOKEN_REFRESH,
    "cc": Purpose.TOKEN_CLIENT_CREDENTIALS,
}
_BASE = {
    "access_token": "at-base-token",
    "token_type": "Bearer",
    "expires_in": 3600,
    "refresh_token": "rt-base-token",
    "scope": "mcp",
}


def _refuse(name: str) -> Any:
    raise ValueError(name)


def reference(body: bytes) -> dict[str, Any] | None:
    """O46 read independently: the fields a 200 answer gives, or None if unusable."""
    try:
        doc = json.loads(body.decode("utf-8"), parse_constant=_refuse)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None  # F2: a lone surrogate anywhere makes the document unusable
    access, kind = doc.get("access_token"), doc.get("token_type")
    if not isinstance(access, str) or not access:
        return None
    if any(not 0x21 <= ord(ch) <= 0x7E for ch in access):
        return None  # F3: the token must be a clean header value
    if not isinstance(kind, str) or kind.lower() != "bearer":
        return None
    expires = doc.get("expires_in")
    seconds: float | None = None
    if expires is not None:
        if isinstance(expires, bool) or not isinstance(expires, int | float | str):
            return None
        try:
            seconds = float(expires.strip() if isinstance(expires, str) else expires)
        except (ValueError, OverflowError):
            return None
        if not math.isfinite(seconds) or seconds < 0:
            return None
    out: dict[str, Any] = {"access_token": access, "expires_in": seconds}
    for name in ("refresh_token", "scope"):
        value = doc.get(name)
        if value is not None and not isinstance(value, str):
            return None
        out[name] = value or None
    return out


def _setup(step: str) -> tuple[dict[str, Any], TokenSet | None]:
    config: dict[str, Any] = {}
    tokens = None
    if step == "code-basic":
        config["preregistered"] = preregistered("client_secret_basic")
    elif step == "code-post":
        config["preregistered"] = preregistered("client_secret_post")
    elif step == "refresh-due":
        tokens = held_tokens(expires_at=NOW + 10)
    elif step == "refresh-401":
        tokens = held_tokens()
    elif step == "cc-basic":
        config["grant"] = "client_credentials"
        config["preregistered"] = preregistered("client_secret_basic")
    elif step == "cc-jwt":
        config["grant"] = "client_credentials"
        config["preregistered"] = preregistered("private_key_jwt")
    elif step == "refresh-jwt":
        config["preregistered"] = preregistered("private_key_jwt")
        tokens = held_tokens(expires_at=NOW + 10, client_id="pre-client")
    return config, tokens


def _check(driver: FlowDriver, step: str, answer: Answer, old: TokenSet | None) -> None:
    purpose = _PURPOSE[step.split("-")[0]]
    fuzzed = next((r for r in driver.requests if r.purpose is purpose), None)
    if fuzzed is None or not driver.events:
        return
    first = driver.events[0]
    whole = answer.finish == "end" and len(answer.body) <= MAX_BODY
    if answer.status == 200 and whole:
        expected = reference(answer.body)
        if expected is None:
            assert isinstance(first, AuthFailed), f"accepted an unusable answer: {first!r}"
        else:
            assert isinstance(first, Authorized), f"refused a usable answer: {first!r}"
            tokens = first.tokens
            assert tokens.access_token == expected["access_token"]
            if expected["expires_in"] is None:
                assert tokens.expires_at is None
            else:
                assert tokens.expires_at == driver.now + expected["expires_in"], tokens
            if purpose is Purpose.TOKEN_REFRESH and old is not None:  # O54
                assert tokens.refresh_token == (expected["refresh_token"] or old.refresh_token)
                assert tokens.scope == (expected["scope"] or old.scope)
                for name in ("issuer", "resource", "token_endpoint", "client_id"):
                    assert getattr(tokens, name) == getattr(old, name), name
            else:
                assert tokens.refresh_token == expected["refresh_token"]
                assert tokens.resource == S and tokens.issuer == AS, tokens
    elif answer.status != 200 and isinstance(first, Authorized):
        # only a refused refresh (O55) or invalid_client for a registered client (O47,
        # once more registered) may go on to a new authorization
        again = driver.counts.get(Purpose.REGISTER, 0) >= 2
        assert purpose is Purpose.TOKEN_REFRESH or again, f"HTTP {answer.status}: {first!r}"
    if purpose is Purpose.TOKEN_REFRESH:
        before = driver.order[: driver.order.index(fuzzed)]
        assert not any(isinstance(a, DeleteTokens) for a in before)
        deleted = any(isinstance(a, DeleteTokens) for a in driver.order)
        refused = whole and 400 <= answer.status < 500 and answer.status != 429
        refused = refused or (whole and answer.status in (100, 201, 204))  # not 200: refused
        assert deleted == refused, f"HTTP {answer.status} ({answer.finish}): deleted={deleted}"


def raw_input(body: bytes, step: int = 0, flags: int = 0) -> bytes:
    """An input whose token answer is a 200 JSON answer with ``body``."""
    return bytes([flags & ~1, step]) + CLEAN_200 + len(body).to_bytes(2, "little") + body


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    flags = r.u8()
    step = STEPS[r.u8() % len(STEPS)]
    answer = read_answer(r, b"")
    raw = b"" if flags & 1 else r.blob(3000)
    purpose = _PURPOSE[step.split("-")[0]]
    config, tokens = _setup(step)

    def token(request: AuthRequest) -> Answer:
        answer.body = template(r, "token", _BASE, request) if flags & 1 else raw
        return answer

    def body() -> None:
        with debug_log() as log:
            flow = make_flow(tokens=tokens, **config)
            driver = FlowDriver(flow, data=data, fuzzed={(purpose, 0): token})
            now = driver.now
            if step.startswith("refresh-due") or step == "refresh-jwt":
                driver.prepare()
            elif step == "refresh-401":
                ticket = RequestTicket()
                flow.prepare(ticket, now)
                flow.challenge(ticket, 401, challenge_header(error="invalid_token"), now)
            else:
                flow.challenge(RequestTicket(), 401, challenge_header(scope="mcp"), now)
            driver.pump()
            _check(driver, step, answer, tokens)
            held = flow.tokens
            if held is not None and not flow.busy:
                driver.prepare()
                # once more: the answer's refresh token and scope go out again
                if held.refresh_token and held.expires_at is not None:
                    driver.prepare(now=held.expires_at)
                else:
                    ticket = RequestTicket()
                    driver.prepare(ticket)
                    flow.challenge(ticket, 401, challenge_header(), driver.now)
                    driver.pump()
            driver.finish(log)

    run_guarded("OAuth token response", body)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
