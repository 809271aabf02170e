"""Shared pieces of the OAuth fuzz harnesses (``fuzz_oauth_*.py``); no atheris here.

``FlowDriver`` runs an ``OAuthFlow`` (``mcpcore.auth._oauth``) through its public
API against a world of canned, valid server answers: every request is answered
by its method and URL, the authorization URL by a valid redirect, a signing
request by a signature. Exactly one step is the fuzzed one: the answer to the
n-th request of one purpose (``FlowDriver.fuzzed``) or the redirect callback
(``FlowDriver.callback``). Everything before it puts the flow into the phase
under test; everything after it lets a document that was accepted be used.

What every harness checks on each run (``FlowDriver.finish``):

* nothing but ``AssertionError`` (an invariant) escapes: server output never
  raises; the flow's only outcomes are ``Authorized`` and ``AuthFailed`` with
  an ``OAuthError`` (an ``McpError``);
* the flow settles: a bounded number of rounds, no request left unanswered;
* bounded memory: a response body held by the flow within ``max_body``, the
  remembered secrets within 64;
* error text: no raw control character (server text is escaped);
* secrets (A4, O64): the secrets the flow holds or sends (the held tokens, the
  client secret, the authorization code, the PKCE verifier, ``state``, a signed
  assertion; every one of them made distinctive with ``SECRET``) never appear
  in an error's text, args or attributes, in the ``repr`` of an action, event
  or the flow, or in a log record of ``mcpcore`` at DEBUG - also when the
  server echoes them in ``error``/``error_description`` (the templates do).
  The check is skipped when the fuzz input itself spells ``SECRET`` (then the
  server merely said it, e.g. as a scope);
* the requests: only to https or loopback URLs (O63); header values free of
  CR, LF and NUL.

Open findings, while a fix is pending, are tolerated so that the rest keeps
being fuzzed: see ``KNOWN`` (each with a strict xfail reproduction in
``tests/test_oauth_layer_props.py``; none is open now);
``MCPCORE_FUZZ_STRICT=1`` turns the tolerance off.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore.auth._oauth import (
    AuthFailed,
    Authorized,
    AuthRequest,
    ClientRecord,
    DeleteClient,
    DeleteTokens,
    LockTokens,
    OAuthConfig,
    OAuthError,
    OAuthFlow,
    OpenAuthorizationUrl,
    PreRegisteredClient,
    Purpose,
    RequestTicket,
    SaveClient,
    SaveTokens,
    SignAssertion,
    TokenSet,
    UnlockTokens,
    compact_jws,
)
from mcpcore.base._errors import McpError
from mcpcore.base._events import AbortExchange
from mcpcore.base._failure import FailureKind, TransportFailure

S = "https://mcp.example.test/mcp"
ORIGIN = "https://mcp.example.test"
AS = "https://auth.example.test"
AS_T = AS + "/tenant"  # a path issuer
PRM_PATH = ORIGIN + "/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = ORIGIN + "/.well-known/oauth-protected-resource"
PRM_CUSTOM = ORIGIN + "/meta/prm"  # named by a challenge's resource_metadata
LEGACY_ASM = ORIGIN + "/.well-known/oauth-authorization-server"
REDIRECT = "http://127.0.0.1:53682/callback"
# make_flow's entropy is a counter: the first authorization's state (its second draw)
FIRST_STATE = base64.urlsafe_b64encode((b"entropy-2-" * 4)[:32]).rstrip(b"=").decode()
NOW = 1_700_000_000.0
MAX_BODY = 4096

# Secrets the harnesses plant (all hold SECRET, which fuzz input never spells).
HELD_ACCESS = "at0-" + SECRET
HELD_REFRESH = "rt0-" + SECRET
CLIENT_SECRET = "cs-" + SECRET
CODE = "code-" + SECRET
SIGNATURE = ("sig-" + SECRET).encode()

STRICT = os.environ.get("MCPCORE_FUZZ_STRICT", "") not in ("", "0")

# Open findings (see the module docstring); delete an entry once the core is fixed.
# None is open: F1-F9, found by these harnesses and the property tests, are fixed and
# their reproductions in tests/test_oauth_layer_props.py are regression tests now.
KNOWN: dict[str, str] = {}


def known_finding(exc: BaseException) -> str | None:
    """The open finding ``exc`` is, if any (None under MCPCORE_FUZZ_STRICT)."""
    if STRICT:
        return None
    if isinstance(exc, OverflowError) and "F1" in KNOWN:
        return "F1"
    if (
        isinstance(exc, UnicodeEncodeError)
        and "surrogates not allowed" in str(exc)
        and "F2" in KNOWN
    ):
        return "F2"
    return None


def tolerated(finding: str) -> bool:
    return not STRICT and finding in KNOWN


_CONTROLS = frozenset(chr(c) for c in range(32)) | {"\x7f"}
_BAD_HEADER_BYTES = (b"\r", b"\n", b"\x00")


# --- the canned world -----------------------------------------------------------------


def prm_doc(resource: str = S, servers: tuple[str, ...] = (AS,), **extra: Any) -> dict[str, Any]:
    return {"resource": resource, "authorization_servers": list(servers), **extra}


def asm_doc(issuer: str = AS, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "response_types_supported": ["code"],
    }
    doc.update(extra)
    return {k: v for k, v in doc.items() if v is not None}


def asm_urls(issuer: str) -> list[str]:
    """Every well-known URL an issuer's metadata may be read from (O11)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        origin + "/.well-known/oauth-authorization-server" + path,
        origin + "/.well-known/openid-configuration" + path,
        origin + path + "/.well-known/openid-configuration",
    ]


@dataclass
class Answer:
    """One HTTP answer: status, headers, body; how it arrives and ends."""

    status: int
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    finish: str = "end"  # end | fail | timeout | silent (never ends: cancelled later)
    split: int = 0  # 0: one chunk; n: chunks of n bytes


def js(status: int, doc: Any, **kw: Any) -> Answer:
    return Answer(status, [(b"content-type", b"application/json")], json.dumps(doc).encode(), **kw)


NOT_FOUND = Answer(404, [(b"content-type", b"text/plain")], b"not found")

STATUSES = (200, 200, 200, 200, 201, 204, 301, 302, 307, 400, 401, 403, 404, 429, 500, 503, 100)
CONTENT_TYPES = (
    b"application/json",
    b"application/json; charset=utf-8",
    b"text/html",
    b"",
    b"application/x-www-form-urlencoded",
)


# The input bytes read_answer turns into a 200 JSON answer, in one chunk, that ends.
CLEAN_200 = bytes([0, 1, 0, 1, 2, 0])


def read_answer(r: Reader, body: bytes) -> Answer:
    """Status, headers and ending from the input; ``body`` as given."""
    status = r.choice(STATUSES)
    headers: list[tuple[bytes, bytes]] = []
    if r.u8() % 4:
        headers.append((b"content-type", r.choice(CONTENT_TYPES)))
    if r.u8() % 8 == 0:
        headers.append((b"location", b"https://evil.example/steal"))
    ending = r.u8() % 16
    finish = "fail" if ending == 0 else "timeout" if ending == 1 else "end"
    split = r.choice((0, 0, 0, 1, 3, 64))
    return Answer(status, headers, body, finish, split)


# --- templates: plausible documents with the values that break parsers ----------------

HUGE_INT = 10**400  # beyond the float range: json.dumps writes 401 digits (F1)
EDGE_STRINGS: tuple[Any, ...] = (
    "",
    "\ud800",  # a lone surrogate: json.dumps writes the escape \\ud800 (F2)
    "a\udcff",
    "a\r\nX-Evil: 1",
    "a\x00b",
    "\x1b[2J",
    "é",
    "x" * 300,
    " ",
    "null",
    HUGE_INT,
    -(10**30),
    -1,
    0,
    1e308,
    True,
    None,
    [],
    {},
)
URLS: tuple[Any, ...] = (
    "https://auth.example.test/x",
    "http://127.0.0.1:9/x",
    "http://auth.example.test/x",
    "ftp://auth.example.test/x",
    "/relative",
    "https://",
    "https://u:p@auth.example.test/x",
    "https://auth.example.test:99999/x",
    "https://[::1/x",
    "https://auth.example.test/x?q=1#f",
    "https://auth.example.test/\x1b[2J",
    "https://auth.example.test/\ud800",
    "https://аuth.example.test/x",  # a Cyrillic a
)
ISSUERS = (AS, AS + "/", AS_T, "https://evil.example", "HTTPS://AUTH.EXAMPLE.TEST", ORIGIN)
RESOURCES = (
    S,
    S + "/",
    ORIGIN,
    ORIGIN + "/",
    "https://MCP.example.test/mcp",
    "https://mcp.example.test:443/mcp",
    ORIGIN + "/mcpx",
    "http://mcp.example.test/mcp",
    "https://evil.example/mcp",
    S + "?x=1",
)
SCOPES = ("mcp", "mcp:read mcp:write", "offline_access", "a  b", "", "é")
METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt", "tls", "")


def _edge(r: Reader) -> Any:
    kind = r.u8() % 4
    if kind == 0:
        return r.json_value(2)
    if kind == 1:
        return r.text(24)
    return r.choice(EDGE_STRINGS)


def _list_of(r: Reader, pool: tuple[Any, ...]) -> Any:
    if r.u8() % 5 == 0:
        return _edge(r)
    return [r.choice(pool) if r.u8() % 6 else _edge(r) for _ in range(r.u8() % 4)]


def _secret_value(r: Reader, tag: str) -> Any:
    """A secret the server hands out (it holds SECRET, so any later echo must be scrubbed)."""
    return f"{tag}{r.u8()}-{SECRET}" if r.u8() % 4 else _edge(r)


def echo_text(r: Reader, request: AuthRequest | None) -> Any:
    """``error_description`` text: often an echo of what the server was sent."""
    form = (
        dict(parse_qsl(request.body.decode("ascii", "replace"))) if request and request.body else {}
    )
    kind = r.u8() % 8
    if kind == 0:
        return "bad request " + (request.body or b"").decode("ascii", "replace") if request else ""
    if kind in (1, 2, 3) and form:
        value = form[r.choice(sorted(form))]
        return f"invalid value {value!r} in the request" if r.flag() else value
    if kind == 4 and form:
        return " ".join(f"{k}={v}" for k, v in form.items())
    if kind == 5:
        headers = dict(request.headers) if request else {}
        return "bad credentials " + headers.get(b"authorization", b"").decode("latin-1")
    return _edge(r) if r.flag() else r.text(40)


# key -> value maker for each document kind
Maker = Callable[[Reader, AuthRequest | None], Any]
KINDS: dict[str, dict[str, Maker]] = {
    "prm": {
        "resource": lambda r, q: r.choice(RESOURCES),
        "authorization_servers": lambda r, q: _list_of(r, ISSUERS + URLS),
        "scopes_supported": lambda r, q: _list_of(r, SCOPES),
        "bearer_methods_supported": lambda r, q: _list_of(r, ("header", "body")),
        "resource_name": lambda r, q: r.text(12),
    },
    "asm": {
        "issuer": lambda r, q: r.choice(ISSUERS),
        "authorization_endpoint": lambda r, q: r.choice(URLS),
        "token_endpoint": lambda r, q: r.choice(URLS),
        "registration_endpoint": lambda r, q: r.choice(URLS),
        "code_challenge_methods_supported": lambda r, q: _list_of(r, ("S256", "plain", "s256")),
        "token_endpoint_auth_methods_supported": lambda r, q: _list_of(r, METHODS),
        "scopes_supported": lambda r, q: _list_of(r, SCOPES),
        "client_id_metadata_document_supported": lambda r, q: r.choice((True, False, "true", 1)),
        "authorization_response_iss_parameter_supported": lambda r, q: r.choice(
            (True, False, "true", None)
        ),
        "response_types_supported": lambda r, q: _list_of(r, ("code", "token")),
    },
    "register": {
        "client_id": lambda r, q: r.choice(("dyn-client", "c", "é-client", "a b&c=d")),
        "client_secret": lambda r, q: _secret_value(r, "dcr"),
        "client_secret_expires_at": lambda r, q: r.choice((0, NOW + 10, NOW - 10, 1.5, "1")),
        "client_id_issued_at": lambda r, q: r.choice((0, NOW)),
        "token_endpoint_auth_method": lambda r, q: r.choice(METHODS),
        "redirect_uris": lambda r, q: _list_of(r, (REDIRECT, "http://127.0.0.1/other")),
        "grant_types": lambda r, q: _list_of(r, ("authorization_code", "refresh_token")),
        "error": lambda r, q: r.choice(("invalid_client_metadata", "invalid_redirect_uri")),
        "error_description": echo_text,
    },
    "token": {
        "access_token": lambda r, q: _secret_value(r, "at"),
        "token_type": lambda r, q: r.choice(("Bearer", "bearer", "BEARER", "DPoP", "mac")),
        "expires_in": lambda r, q: r.choice((3600, "3600", " 60 ", 0, -5, "x", 1e308, 2.5, "1e3")),
        "refresh_token": lambda r, q: _secret_value(r, "rt"),
        "scope": lambda r, q: r.choice(SCOPES),
        "id_token": lambda r, q: r.text(20),
        "error": lambda r, q: r.choice(
            ("invalid_grant", "invalid_client", "invalid_request", "unauthorized_client")
        ),
        "error_description": echo_text,
    },
}


def template(r: Reader, kind: str, base: dict[str, Any], request: AuthRequest | None) -> bytes:
    """``base`` (a valid document) with members kept, dropped or replaced, as JSON bytes."""
    makers = KINDS[kind]
    doc: dict[str, Any] = {}
    for key in sorted(set(base) | set(makers)):
        op = r.u8() % 10
        if op < 4 and key in base:
            doc[key] = base[key]
        elif op in (4, 5) or (op < 4 and key not in base):
            continue
        elif op < 9 and key in makers:
            doc[key] = makers[key](r, request)
        else:
            doc[key] = _edge(r)
    if r.u8() % 8 == 0:
        doc[r.key()] = r.json_value(2)
    shape = r.u8() % 32
    value: Any = doc
    if shape == 0:
        value = [doc]
    elif shape == 1:
        value = r.json_value(2)
    text = json.dumps(value, ensure_ascii=r.u8() % 4 != 0)
    if shape == 2:
        text = text[: r.u8() % (len(text) + 1)]  # cut short
    return text.encode("utf-8", "surrogatepass")


# --- the driver ------------------------------------------------------------------------


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


@contextmanager
def debug_log() -> Iterator[_Records]:
    """Every ``mcpcore`` record at DEBUG while a run lasts.

    ``_fuzzlib``'s own log check is set aside meanwhile: ``FlowDriver.finish``
    makes the same checks (secrets, raw controls) with the tolerance of ``KNOWN``.
    """
    logger = logging.getLogger("mcpcore")
    handler = _Records()
    level = logger.level
    others = [h for h in logger.handlers if isinstance(h, _fuzzlib._LogCheck)]
    for other in others:
        logger.removeHandler(other)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        for other in others:
            logger.addHandler(other)


def shown(value: object) -> list[str]:
    """Every way a value is shown: str, repr, and an error's args and attributes."""
    out = [str(value), repr(value)]
    if isinstance(value, BaseException):
        out += [repr(a) for a in value.args]
        out += [repr(v) for v in vars(value).values()]
    error = getattr(value, "error", None)
    if isinstance(error, BaseException):
        out += shown(error)
    return out


def secure_url(url: str) -> bool:
    """O63 read independently: an absolute https URL, or http to a loopback host,
    with no control character or space (F4)."""
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    host = parts.hostname or ""
    if not host or parts.scheme.lower() not in ("http", "https"):
        return False
    if parts.scheme.lower() == "https":
        return True
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


Callback = Callable[[OpenAuthorizationUrl], str | None]


class FlowDriver:
    """Runs a flow against the canned world; one step is the fuzzed one."""

    def __init__(
        self,
        flow: OAuthFlow,
        *,
        data: bytes,
        fuzzed: dict[tuple[Purpose, int], Answer | Callable[[AuthRequest], Answer]] | None = None,
        callback: Callback | None = None,
        routes: dict[tuple[str, str], Answer] | None = None,
    ) -> None:
        self.flow = flow
        self.now = NOW
        self.fuzzed = dict(fuzzed or {})
        self.callback = callback
        self.routes = self.canned()
        self.routes.update(routes or {})
        self.requests: list[AuthRequest] = []
        self.opened: list[OpenAuthorizationUrl] = []
        self.events: list[Authorized | AuthFailed] = []
        self.store: list[Any] = []
        self.order: list[Any] = []  # every action, in order
        self.aborted: list[int] = []
        self.silent: list[int] = []
        self.counts: dict[Purpose, int] = {}
        self.texts: list[str] = []
        self.secrets: set[str] = set()
        held = flow.tokens
        pre = flow.config.preregistered
        for secret in (
            held.access_token if held else None,
            held.refresh_token if held else None,
            pre.client_secret if pre else None,
            *(c.client_secret for c in flow._clients.values()),
        ):
            if secret:
                self.secrets.add(secret)
        self.check_secrets = SECRET.encode() not in data
        self.issued = 0

    # --- the world ---

    def canned(self) -> dict[tuple[str, str], Answer]:
        routes: dict[tuple[str, str], Answer] = {}
        for url in (PRM_PATH, PRM_ROOT, PRM_CUSTOM):
            routes[("GET", url)] = js(200, prm_doc())
        for issuer in (AS, AS_T):
            for url in asm_urls(issuer):
                routes[("GET", url)] = js(200, asm_doc(issuer))
            routes[("POST", issuer + "/register")] = js(201, {"client_id": "dyn-client"})
        return routes

    def token_answer(self) -> Answer:
        self.issued += 1
        return js(
            200,
            {
                "access_token": f"at{self.issued}-{SECRET}",
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": f"rt{self.issued}-{SECRET}",
            },
        )

    def answer_for(self, request: AuthRequest, index: int) -> Answer:
        fuzzed = self.fuzzed.get((request.purpose, index))
        if fuzzed is not None:
            return fuzzed(request) if callable(fuzzed) else fuzzed
        key = (request.method, request.url.split("?")[0])
        if key in self.routes:
            return self.routes[key]
        if request.method == "POST" and request.url.endswith("/token"):
            return self.token_answer()
        return NOT_FOUND

    def default_callback(self, action: OpenAuthorizationUrl) -> str | None:
        state = parse_qs(urlsplit(action.url).query)["state"][0]
        params = {"code": CODE, "state": state}
        meta = self.flow._metadata
        if meta is not None and meta.iss_supported:  # O38: as a server that promised it
            params["iss"] = meta.issuer
        return action.redirect_uri + "?" + urlencode(params)

    # --- running ---

    def note(self, value: object) -> None:
        self.texts += shown(value)

    def learn(self, request: AuthRequest) -> None:
        """Remember what the request carries that is secret."""
        if request.body and request.purpose not in (Purpose.REGISTER,):
            form = dict(parse_qsl(request.body.decode("ascii")))
            # made by the flow: always; given by the server or the harness: when
            # distinctive (they hold SECRET; "x" * 300 may be a scope as well)
            for name in ("code_verifier", "client_assertion"):
                if form.get(name):
                    self.secrets.add(form[name])
            for name in ("code", "refresh_token", "client_secret"):
                value = form.get(name)
                if value and SECRET in value:
                    self.secrets.add(value)
        for header, raw in request.headers:
            assert not any(b in raw for b in _BAD_HEADER_BYTES), (
                f"a control character in the {header!r} header of {request!r}"
            )

    def deliver(self, request: AuthRequest, answer: Answer) -> None:
        flow, xid, now = self.flow, request.exchange_id, self.now
        if answer.finish == "timeout" and answer.split == 0:
            flow.response_failed(xid, TransportFailure(FailureKind.TIMEOUT), now)
            return
        flow.response_started(xid, answer.status, answer.headers, now)
        body = answer.body
        size = answer.split or len(body) or 1
        for at in range(0, len(body), size):
            flow.response_data(xid, body[at : at + size], now)
            self.check_bounds()
        if answer.finish == "end":
            flow.response_ended(xid, now)
        elif answer.finish == "silent":
            self.silent.append(xid)
        else:
            kind = FailureKind.RESET if answer.finish == "fail" else FailureKind.TIMEOUT
            flow.response_failed(xid, TransportFailure(kind), now)

    def check_bounds(self) -> None:
        run = self.flow._run
        if run is not None and run.exchange is not None:
            assert len(run.exchange.body) <= self.flow.config.max_body, "body over max_body"
        assert len(self.flow._known) <= 64

    def pump(self, rounds: int = 60, taken: list[Any] | None = None) -> None:
        """Perform every action (``taken``: ones already taken from the flow first)
        until the flow asks for nothing more."""
        flow = self.flow
        for _ in range(rounds):
            actions = (taken or []) + flow.take_actions()
            taken = None
            events = flow.take_events()
            for event in events:
                self.note(event)
                if isinstance(event, AuthFailed):
                    error = event.error
                    assert isinstance(error, OAuthError) and isinstance(error, McpError), error
                    text = str(error)
                    assert not _CONTROLS & set(text), f"raw control character in {text!r}"
                else:
                    assert isinstance(event, Authorized), event
                    self.check_tokens(event.tokens)
                self.events.append(event)
            if not actions and not events:
                return
            for action in actions:
                self.note(action)
                self.order.append(action)
                if isinstance(action, AuthRequest):
                    assert flow.config.allow_insecure_http or secure_url(action.url), (
                        f"a request to an insecure URL: {action!r}"
                    )
                    self.requests.append(action)
                    self.learn(action)
                    index = self.counts.get(action.purpose, 0)
                    self.counts[action.purpose] = index + 1
                    self.deliver(action, self.answer_for(action, index))
                elif isinstance(action, OpenAuthorizationUrl):
                    self.opened.append(action)
                    query = dict(parse_qsl(urlsplit(action.url).query))
                    self.secrets.add(query.get("state", ""))
                    make = self.callback or self.default_callback
                    url = make(action)
                    if url is not None:
                        flow.receive_callback(url, self.now)
                elif isinstance(action, SignAssertion):
                    jws = compact_jws(action.signing_input, SIGNATURE)
                    self.secrets.add(jws)
                    flow.receive_assertion(action.request_id, jws, self.now)
                elif isinstance(action, AbortExchange):
                    self.aborted.append(action.exchange_id)
                elif isinstance(action, LockTokens):
                    # One process: the refresh lock is free, the store holds the flow's own set.
                    flow.lock_answered(action.lock_id, True, flow.tokens, self.now)
                elif isinstance(action, UnlockTokens):
                    pass
                else:
                    assert isinstance(action, SaveTokens | DeleteTokens | SaveClient | DeleteClient)
                    secret = action.client.client_secret if isinstance(action, SaveClient) else None
                    if secret and SECRET in secret:
                        self.secrets.add(secret)
                    self.store.append(action)
        raise AssertionError("the flow did not settle")

    def check_tokens(self, tokens: TokenSet) -> None:
        assert isinstance(tokens.access_token, str) and tokens.access_token
        assert tokens.token_type == "Bearer"
        assert tokens.expires_at is None or math.isfinite(tokens.expires_at)
        # server-issued tokens count as secrets when distinctive (they hold SECRET): an
        # edge value such as "x" * 300 may well be the scope too
        for token in (tokens.access_token, tokens.refresh_token):
            if token and SECRET in token:
                self.secrets.add(token)

    def prepare(self, ticket: RequestTicket | None = None, now: float | None = None) -> Any:
        """``prepare`` for an MCP request; a header must be clean (F3)."""
        verdict = self.flow.prepare(ticket or RequestTicket(), self.now if now is None else now)
        if isinstance(verdict, tuple):
            name, value = verdict
            bad = any(b in value for b in _BAD_HEADER_BYTES)
            assert not bad or tolerated("F3"), f"F3: a control character in the {name!r} header"
        self.pump()
        return verdict

    def cancel_silent(self) -> None:
        if self.flow.busy:
            self.flow.cancel("the harness gave up")
            self.pump()

    def finish(self, log: _Records) -> None:
        """The secret and text checks over everything shown in the run."""
        self.cancel_silent()
        self.note(self.flow)
        texts = self.texts
        if self.check_secrets:
            secrets = [s for s in self.secrets if len(s) >= 8]
            for text in texts:
                if "came from issuer" in text and tolerated("F9"):
                    continue
                for secret in secrets:
                    assert secret not in text, f"a secret ({secret[:6]}…) is shown: {text[:300]!r}"
            for text in log.texts:
                for secret in secrets:
                    assert secret not in text, f"a log record shows a secret: {text[:300]!r}"
        for text in log.texts:
            if _CONTROLS & set(text) and not tolerated("F4"):
                raise AssertionError(f"F4: raw control character in a log record {text!r}")


def make_flow(
    *,
    tokens: TokenSet | None = None,
    clients: tuple[ClientRecord, ...] = (),
    **config: Any,
) -> OAuthFlow:
    counter = [0]

    def entropy(n: int) -> bytes:
        counter[0] += 1
        seed = f"entropy-{counter[0]}-".encode()
        return (seed * (n // len(seed) + 1))[:n]

    config.setdefault("max_body", MAX_BODY)
    cfg = OAuthConfig(server_url=config.pop("server_url", S), redirect_uri=REDIRECT, **config)
    return OAuthFlow(cfg, token_bytes=entropy, tokens=tokens, clients=clients)


def held_tokens(
    *,
    refresh: bool = True,
    expires_at: float | None = NOW + 3600,
    scope: str | None = "mcp",
    issuer: str = AS,
    client_id: str = "dyn-client",
) -> TokenSet:
    return TokenSet(
        access_token=HELD_ACCESS,
        expires_at=expires_at,
        refresh_token=HELD_REFRESH if refresh else None,
        scope=scope,
        issuer=issuer,
        token_endpoint=issuer + "/token",
        resource=S,
        client_id=client_id,
    )


def preregistered(method: str | None, issuer: str | None = None) -> PreRegisteredClient:
    secret = CLIENT_SECRET if method in ("client_secret_basic", "client_secret_post") else None
    return PreRegisteredClient(
        client_id="pre-client",
        client_secret=secret,
        auth_method=method,  # type: ignore[arg-type]
        issuer=issuer,
    )


def challenge_header(**params: str) -> list[tuple[bytes, bytes]]:
    inner = ", ".join(f'{k}="{v}"' for k, v in params.items())
    return [(b"www-authenticate", f"Bearer {inner}".strip().encode())]


def run_guarded(where: str, body: Callable[[], None]) -> None:
    """Run one harness body: invariants raise AssertionError; anything else is a finding
    (unless it is a known, tolerated one)."""
    try:
        body()
    except AssertionError:
        raise
    except Exception as exc:
        if known_finding(exc) is None:
            _fuzzlib.raise_unexpected(where, exc)
