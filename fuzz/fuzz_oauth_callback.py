"""Fuzz the redirect callback (``OAuthFlow.receive_callback``; O36-O41).

A 401 and canned answers bring the flow to the point where the person is sent
to authorize (the authorization server advertising the ``iss`` parameter or
not; a root or a path issuer). Then the callback URL is raw input text (bytes
decoded as UTF-8 with replacement, or with lone surrogates kept), or a URL
built from parts: ``state`` right, wrong, empty, missing, duplicated or
percent-encoded; ``code`` (holding ``SECRET``) present, empty, missing or
duplicated; ``iss`` right, another, with a trailing slash, empty or missing;
``error``/``error_description`` (echoing the code or state); ``;`` or ``&``
separators, ``+`` for spaces, a fragment, another base URL. Now and then the
user's time runs out first, or the callback comes twice.

Invariants (besides those of ``_oauthfuzz``): a token is requested exactly
when the reference decision says so - no parameter twice, ``state`` equal to
the one sent (O37), ``iss`` equal to the issuer when present and present when advertised
(O38), no ``error`` (O39), a non-empty ``code`` (O40) - and then with that
``code``, the verifier whose S256 challenge was sent (O31) and the same
redirect URI (O35), to the issuer's token endpoint; otherwise the flow fails
with ``AuthorizationResponseRejected``/``AuthorizationDenied`` (or times out,
O41) and requests nothing; a second callback does nothing.
"""

from __future__ import annotations

import sys
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

import _fuzzlib
from _fuzzlib import Reader
from _oauthfuzz import (
    AS,
    AS_T,
    CODE,
    PRM_PATH,
    REDIRECT,
    FlowDriver,
    asm_doc,
    asm_urls,
    challenge_header,
    debug_log,
    js,
    make_flow,
    prm_doc,
    run_guarded,
)

from mcpcore.auth._oauth import (
    AuthFailed,
    AuthorizationDenied,
    AuthorizationResponseRejected,
    AuthorizationTimeout,
    Authorized,
    OpenAuthorizationUrl,
    Purpose,
    RequestTicket,
    pkce_challenge,
)

_BASES = (REDIRECT, REDIRECT, REDIRECT, "http://127.0.0.1:1/other", "", "/callback", REDIRECT + "#")


def _built(r: Reader, state: str, issuer: str) -> str:
    pairs: list[tuple[str, str]] = []
    kind = r.u8() % 8
    if kind < 4:
        pairs.append(("state", state))
    elif kind == 4:
        pairs.append(("state", state + r.choice(("x", " ", "%00"))))
    elif kind == 5:
        pairs.append(("state", r.choice(("", state.upper(), state[:-1]))))
    elif kind == 6:
        pairs += [("state", state), ("state", r.choice((state, "other")))]
    kind = r.u8() % 8
    if kind < 5:
        pairs.append(("code", CODE))
    elif kind == 5:
        pairs.append(("code", ""))
    elif kind == 6:
        pairs += [("code", CODE), ("code", "other-code")]
    kind = r.u8() % 8
    if kind < 3:
        pairs.append(("iss", issuer))
    elif kind == 3:
        pairs.append(("iss", r.choice((issuer + "/", "https://evil.example", "", AS, AS_T))))
    kind = r.u8() % 8
    if kind == 0:
        pairs.append(("error", r.choice(("access_denied", "server_error", ""))))
    elif kind == 1:
        pairs.append(("error", r.choice((CODE, "denied " + CODE, state, r.text(12)))))
        pairs.append(("error_description", r.choice((CODE, state, "\x1b[2J", "x" * 300))))
    for _ in range(r.u8() % 3):
        pairs.append((r.text(6), r.text(10)))
    order = r.u8()
    if order & 1:
        pairs.reverse()
    encode = quote_plus if order & 2 else quote
    separator = ";" if order & 4 and not order & 8 else "&"
    query = separator.join(f"{encode(k, safe='')}={encode(v, safe='')}" for k, v in pairs)
    url: str = r.choice(_BASES) + "?" + query
    if order & 16:
        url += "#" + r.choice(("state=" + state, "code=x", ""))
    return url


def _decide(url: str, state: str, issuer: str, advertised: bool) -> str:
    """The reference decision: "token", or why not."""
    try:
        pairs = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    except ValueError:
        return "rejected"
    names = [k for k, _ in pairs]
    params = dict(pairs)
    if len(set(names)) != len(names):  # no parameter more than once (RFC 6749 §3.1)
        return "rejected"
    if params.get("state") != state:
        return "rejected"
    if ("iss" in params and params["iss"] != issuer) or ("iss" not in params and advertised):
        return "rejected"
    if "error" in params:
        return "denied"
    if not params.get("code"):
        return "rejected"
    return "token"


def raw_input(query: str, flags: int = 0) -> bytes:
    """An input whose callback is the redirect URI with ``query`` (a whole URL with
    ``flags & 32``)."""
    return bytes([flags & ~1, 1]) + query.encode("utf-8", "surrogateescape")


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    flags = r.u8()
    advertised = bool(flags & 2)
    issuer = AS_T if flags & 4 else AS
    timeout_first = r.u8() % 16 == 0
    twice = bool(flags & 8)
    built = bool(flags & 1)
    raw = r.rest() if not built else b""
    text = raw.decode("utf-8", "surrogateescape" if flags & 16 else "replace")
    routes = {
        ("GET", PRM_PATH): js(200, prm_doc(servers=(issuer,))),
        ("GET", asm_urls(issuer)[0]): js(
            200, asm_doc(issuer, authorization_response_iss_parameter_supported=advertised)
        ),
    }
    sent: list[str] = []
    driver: FlowDriver

    def callback(action: OpenAuthorizationUrl) -> str | None:
        state = dict(parse_qsl(urlsplit(action.url).query))["state"]
        if timeout_first:
            driver.flow.handle_timer(action.deadline)
        url = _built(r, state, issuer) if built else (text if flags & 32 else REDIRECT + "?" + text)
        sent.append(url)
        return url

    def body() -> None:
        nonlocal driver
        with debug_log() as log:
            flow = make_flow()
            driver = FlowDriver(flow, data=data, callback=callback, routes=routes)
            flow.challenge(RequestTicket(), 401, challenge_header(scope="mcp"), driver.now)
            driver.pump()
            assert len(driver.opened) == 1 and len(sent) == 1, (driver.opened, sent)
            opened = driver.opened[0]
            query = dict(parse_qsl(urlsplit(opened.url).query))
            tokens = [q for q in driver.requests if q.purpose is Purpose.TOKEN_CODE]
            decision = (
                "timeout" if timeout_first else _decide(sent[0], query["state"], issuer, advertised)
            )
            event = driver.events[0]
            if decision == "token":
                assert len(tokens) == 1, (sent[0], driver.events)
                form = dict(parse_qsl((tokens[0].body or b"").decode("ascii")))
                assert form["code"] == dict(parse_qsl(urlsplit(sent[0]).query))["code"]
                assert pkce_challenge(form["code_verifier"]) == query["code_challenge"]
                assert form["redirect_uri"] == REDIRECT and tokens[0].url == issuer + "/token"
                assert isinstance(event, Authorized), event
            else:
                assert not tokens, f"a token was requested for {sent[0]!r}"
                assert isinstance(event, AuthFailed), event
                expected = {
                    "timeout": AuthorizationTimeout,
                    "denied": AuthorizationDenied,
                    "rejected": AuthorizationResponseRejected,
                }[decision]
                assert type(event.error) is expected, (sent[0], event)
            if twice:  # a second callback finds nothing waiting
                flow.receive_callback(sent[0], driver.now)
                assert not flow.take_actions() and not flow.take_events()
            driver.finish(log)

    run_guarded("the redirect callback", body)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
