"""Fuzz OAuth discovery: protected-resource and authorization-server metadata (``_oauth``).

The flow is put into discovery by a 401 (or a 403 step-up, or a 401 while a
refresh token is held) and the canned world answers every request except the
one under test, which gets the fuzzed answer (status, headers, body, chunking,
ending). The step under test is one of: the PRM document at the path-insert
URL, at the challenge's ``resource_metadata`` URL, at the root URL (after a
404), the authorization-server metadata of a root issuer, of a path issuer,
the OIDC fallback, the legacy (2025-03-26) metadata, rediscovery before a
refresh, and discovery for a step-up. The body is raw input bytes, or a valid
document with members kept, dropped or replaced by edge values (a template).
Afterwards a token obtained is used (``prepare``) and, now and then, a step-up
reuses the cached metadata.

Invariants (besides those of ``_oauthfuzz``): a token is only ever obtained
for a resource matching the MCP server (O9, or the canonical URL on the legacy
path) from an issuer matching the one the PRM named (O12); an authorization
URL is https (O63) and carries PKCE S256 (O15).
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import _fuzzlib
from _fuzzlib import Reader
from _oauthfuzz import (
    AS,
    AS_T,
    CLEAN_200,
    LEGACY_ASM,
    NOT_FOUND,
    ORIGIN,
    PRM_CUSTOM,
    PRM_PATH,
    PRM_ROOT,
    Answer,
    FlowDriver,
    S,
    asm_doc,
    asm_urls,
    challenge_header,
    debug_log,
    held_tokens,
    js,
    make_flow,
    preregistered,
    prm_doc,
    read_answer,
    run_guarded,
    secure_url,
    template,
)

from mcpcore.auth._oauth import (
    Authorized,
    Purpose,
    RequestTicket,
    canonical_resource,
    issuers_match,
    resource_matches,
)

STEPS = (
    "prm-path",
    "prm-challenge-url",
    "prm-root",
    "asm-root-issuer",
    "asm-path-issuer",
    "asm-oidc-fallback",
    "legacy-asm",
    "refresh-prm",
    "refresh-asm",
    "step-up-prm",
)
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")


def _setup(step: str, variant: int) -> tuple[dict[tuple[str, str], Answer], Purpose, int, str]:
    """(routes, purpose and index of the fuzzed request, expected issuer) for ``step``."""
    routes: dict[tuple[str, str], Answer] = {}
    purpose, index, issuer = Purpose.PRM, 0, AS
    if step == "prm-root":
        routes[("GET", PRM_PATH)] = NOT_FOUND
        index = 1
    elif step.startswith("asm") or step == "refresh-asm":
        purpose = Purpose.ASM
        if step == "asm-path-issuer":
            issuer = AS_T
            routes[("GET", PRM_PATH)] = js(200, prm_doc(servers=(AS_T,)))
        elif step == "asm-oidc-fallback":
            routes[("GET", asm_urls(AS)[0])] = NOT_FOUND
            index = 1
    elif step == "legacy-asm":
        purpose, issuer = Purpose.LEGACY_ASM, ORIGIN
        routes[("GET", PRM_PATH)] = NOT_FOUND
        routes[("GET", PRM_ROOT)] = NOT_FOUND
        routes[("GET", LEGACY_ASM)] = js(200, asm_doc(ORIGIN))
        routes[("POST", ORIGIN + "/register")] = js(201, {"client_id": "dyn-client"})
    if variant & 4 and purpose is not Purpose.PRM:
        servers = (AS_T,) if issuer == AS_T else (AS,)
        routes[("GET", PRM_PATH)] = js(
            200, prm_doc(servers=servers, scopes_supported=["mcp", "offline_access"])
        )
    return routes, purpose, index, issuer


def _start(driver: FlowDriver, step: str) -> None:
    flow, now = driver.flow, driver.now
    if step == "prm-challenge-url":
        flow.challenge(RequestTicket(), 401, challenge_header(resource_metadata=PRM_CUSTOM), now)
    elif step.startswith("refresh"):
        ticket = RequestTicket()
        flow.prepare(ticket, now)
        flow.challenge(ticket, 401, challenge_header(error="invalid_token"), now)
    elif step == "step-up-prm":
        ticket = RequestTicket()
        flow.prepare(ticket, now)
        header = challenge_header(error="insufficient_scope", scope="mcp:admin")
        flow.challenge(ticket, 403, header, now)
    else:
        flow.challenge(RequestTicket(), 401, challenge_header(scope="mcp"), now)


def _check(driver: FlowDriver, step: str, expected_issuer: str) -> None:
    insecure_allowed = driver.flow.config.allow_insecure_http
    legacy = any(r.purpose is Purpose.LEGACY_ASM for r in driver.requests)
    for opened in driver.opened:
        assert insecure_allowed or secure_url(opened.url), f"an insecure URL {opened!r}"
        query = dict(parse_qsl(urlsplit(opened.url).query))
        assert query.get("code_challenge_method") == "S256" and query.get("code_challenge")
        assert query.get("response_type") == "code"
    for event in driver.events:
        if not isinstance(event, Authorized):
            continue
        tokens = event.tokens
        if legacy:  # O16: every PRM candidate missed
            assert tokens.resource == canonical_resource(S), tokens
            continue
        assert resource_matches(S, tokens.resource), f"a token for {tokens.resource!r}"
        if step in ("asm-root-issuer", "asm-path-issuer", "asm-oidc-fallback", "refresh-asm"):
            assert issuers_match(expected_issuer, tokens.issuer), tokens
        else:
            assert any(issuers_match(i, tokens.issuer) for i in (AS, AS_T)), tokens


def raw_input(body: bytes, step: int = 0, variant: int = 0, flags: int = 0) -> bytes:
    """An input whose fuzzed answer is a 200 JSON answer with ``body`` (seeds, tests)."""
    return bytes([flags & ~1, step, variant]) + CLEAN_200 + body


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    flags = r.u8()
    step = STEPS[r.u8() % len(STEPS)]
    variant = r.u8()
    routes, purpose, index, issuer = _setup(step, variant)
    answer = read_answer(r, b"")
    if flags & 1:
        base = prm_doc() if purpose is Purpose.PRM else asm_doc(issuer)
        answer.body = template(r, "prm" if purpose is Purpose.PRM else "asm", base, None)
    else:
        answer.body = r.rest()
    tokens = held_tokens() if step.startswith(("refresh", "step-up")) else None
    pre = None
    if variant & 3 == 1:
        pre = preregistered("client_secret_basic", issuer=AS)
    elif variant & 3 == 2:
        pre = preregistered(None)
    config: dict[str, Any] = {
        "protocol_version": VERSIONS[(variant >> 3) % len(VERSIONS)],
        "allow_insecure_http": bool(variant & 0x40),
        "preregistered": pre,
    }

    def body() -> None:
        with debug_log() as log:
            flow = make_flow(tokens=tokens, **config)
            driver = FlowDriver(flow, data=data, fuzzed={(purpose, index): answer}, routes=routes)
            _start(driver, step)
            driver.pump()
            if flow.tokens is not None:
                driver.prepare()
                if flags & 2:  # a step-up that reuses the cached metadata (O59)
                    ticket = RequestTicket()
                    driver.prepare(ticket)
                    header = challenge_header(error="insufficient_scope", scope="mcp:extra")
                    flow.challenge(ticket, 403, header, driver.now)
                    driver.pump()
            _check(driver, step, issuer)
            driver.finish(log)

    run_guarded("OAuth discovery", body)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
