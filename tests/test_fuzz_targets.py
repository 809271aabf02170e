"""The fuzz harnesses under pytest: every corpus file, then hypothesis with a short budget.

Each harness in fuzz/ exposes ``fuzz_one_input(data: bytes)`` that asserts its
invariants (see fuzz/README.md). Here each one runs over its whole seed corpus
(fuzz/corpus/<target>/, captured from real servers, plus every input the
fuzzer found), over arbitrary bytes, and over structured inputs, so anything
atheris finds replays in the normal suite once its input is saved in the corpus.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpcore.base._failure import FailureKind, TransportFailure

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
CORPUS = FUZZ / "corpus"
OAUTH_TARGETS = [
    "oauth_metadata",
    "oauth_register",
    "oauth_token",
    "oauth_challenge",
    "oauth_callback",
]
# Issue 44: this round's parsers (hand-written and generated seeds).
NEW_TARGETS = ["seal", "records", "dpop", "pins", "skills"]
TARGETS = ["sse", "jsonrpc", "http", "session", "input", "config", *OAUTH_TARGETS, *NEW_TARGETS]

if str(FUZZ) not in sys.path:
    sys.path.insert(0, str(FUZZ))


def harness(target: str) -> ModuleType:
    return importlib.import_module(f"fuzz_{target}")


def corpus(target: str) -> list[Path]:
    return sorted(p for p in (CORPUS / target).iterdir() if p.is_file())


BUDGET = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_corpus_replays(target: str) -> None:
    """Every seed (real captured exchanges) and every saved finding passes the invariants."""
    files = corpus(target)
    assert files, f"fuzz/corpus/{target} is empty: run fuzz/capture_corpus.py"
    run = harness(target).fuzz_one_input
    for path in files:
        run(path.read_bytes())


def test_corpus_comes_from_both_real_servers() -> None:
    """The seed corpus holds exchanges of the official SDK server and the reference server."""
    names = {p.name for t in TARGETS for p in corpus(t)}
    assert any(n.startswith("sdk-") for n in names)
    assert any(n.startswith("everything-") for n in names)


# --- arbitrary bytes -------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@BUDGET
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes(target: str, data: bytes) -> None:
    harness(target).fuzz_one_input(data)


@BUDGET
@given(data=st.binary(max_size=600))
def test_T7_task_answers(data: bytes) -> None:
    """T7–T9: a ready session whose calls become tasks; the bytes script the task answers."""
    harness("session").fuzz_task_input(data)


# --- structured inputs ------------------------------------------------------------------------

_SSE_LINES = st.sampled_from(
    [
        b'data: {"jsonrpc":"2.0","id":1,"result":{}}',
        b"data:",
        b"data: x",
        b"data",
        b"id: 7",
        b"id",
        b"id: a\x00b",
        b"retry: 250",
        b"retry: 12x",
        b"retry: 0000000000000000001",
        b"event: message",
        b"event",
        b": keepalive",
        b"",
        b"\xef\xbb\xbfdata: bom",
        b"field: value",
        b"data: \xff\xfe",
    ]
)
_TERMINATORS = st.sampled_from([b"\n", b"\r", b"\r\n"])


@st.composite
def sse_inputs(draw: Any) -> bytes:
    lines = draw(st.lists(st.tuples(_SSE_LINES, _TERMINATORS), max_size=20))
    body = b"".join(line + end for line, end in lines)
    if draw(st.booleans()):
        body = b"\xef\xbb\xbf" + body
    if draw(st.booleans()):
        body += draw(st.binary(max_size=20))
    return bytes([draw(st.integers(0, 255)), draw(st.integers(0, 255))]) + body


@BUDGET
@given(data=sse_inputs())
def test_sse_structured(data: bytes) -> None:
    harness("sse").fuzz_one_input(data)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_ids = st.none() | st.integers() | st.text(max_size=5) | st.booleans() | st.floats(allow_nan=False)


@st.composite
def jsonrpc_inputs(draw: Any) -> bytes:
    message: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2.0]))
    for key, values in [
        ("id", _ids),
        ("method", st.text(max_size=20) | st.integers()),
        ("params", _json),
        ("result", _json),
        (
            "error",
            st.fixed_dictionaries({}, optional={"code": _json, "message": _json, "data": _json}),
        ),
    ]:
        if draw(st.booleans()):
            message[key] = draw(values)
    text = json.dumps(message, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8", "surrogatepass")


@BUDGET
@given(data=jsonrpc_inputs())
def test_jsonrpc_structured(data: bytes) -> None:
    harness("jsonrpc").fuzz_one_input(data)


@st.composite
def mutated_seed(draw: Any, target: str) -> bytes:
    """A real seed with a few splices: bytes replaced, inserted or cut at random places."""
    seed = bytearray(draw(st.sampled_from(corpus(target))).read_bytes())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(seed)))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            seed[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == 1:
            del seed[at : at + draw(st.integers(1, 16))]
        else:
            seed[at : at + 1] = bytes([draw(st.integers(0, 255))])
    return bytes(seed)


@pytest.mark.parametrize(
    "target", ["http", "session", "input", "sse", "config", *OAUTH_TARGETS, *NEW_TARGETS]
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_exchanges(target: str, data: st.DataObject) -> None:
    harness(target).fuzz_one_input(data.draw(mutated_seed(target)))


_config_strings = st.sampled_from(
    [
        "https://example.com/mcp",
        "http://127.0.0.1:1/mcp",
        "https://${env:HOST}/mcp",
        "Bearer ${env:TOKEN}",
        "${env:UNSET}",
        "${env:CRLF}",
        "./server",
        "${PLUGIN_ROOT}/x",
        "sse",
    ]
) | st.text(max_size=12)
_config_values = st.recursive(
    _config_strings | st.integers() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "url",
                    "command",
                    "args",
                    "env",
                    "cwd",
                    "headers",
                    "type",
                    "Authorization",
                    "bad key",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@BUDGET
@given(
    flags=st.integers(0, 15),
    servers=st.dictionaries(st.text(max_size=6), _config_values, max_size=3),
    extra=st.dictionaries(st.sampled_from(["$schema", "extra"]), _config_values, max_size=1),
)
def test_config_structured(flags: int, servers: dict[str, Any], extra: dict[str, Any]) -> None:
    document = {"mcpServers": servers, **extra}
    harness("config").fuzz_one_input(bytes([flags]) + json.dumps(document).encode())


# --- OAuth: documents, challenges and callbacks ----------------------------------------------
# Each OAuth harness reads a few control bytes, then the server's answer: raw bytes (here: JSON
# documents, challenge fields or callback queries drawn by hypothesis, through the harness's
# ``raw_input``) or, when the first byte is odd, a template the harness fills from the rest.

_EDGE = st.sampled_from(
    ["", "\ud800", "a\r\nb", "\x1b[2J", "é", "x" * 300, 10**400, -1, 0, 1e308, True, None]
)
_URLS = st.sampled_from(
    [
        "https://auth.example.test",
        "https://auth.example.test/tenant",
        "https://mcp.example.test/mcp",
        "https://auth.example.test/token",
        "https://auth.example.test/authorize",
        "https://auth.example.test/register",
        "http://127.0.0.1:9/x",
        "http://evil.example/x",
        "https://[::1/x",
    ]
)
_WORDS = st.sampled_from(
    [
        *("S256", "plain", "none", "client_secret_basic", "client_secret_post"),
        *("private_key_jwt", "Bearer", "bearer", "DPoP", "mcp", "offline_access"),
        *("invalid_grant", "invalid_client"),
    ]
)
_OAUTH_VALUES = _URLS | _WORDS | _EDGE | _json | st.lists(_URLS | _WORDS | _EDGE, max_size=4)
_OAUTH_KEYS = [
    "resource",
    "authorization_servers",
    "scopes_supported",
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "code_challenge_methods_supported",
    "token_endpoint_auth_methods_supported",
    "client_id_metadata_document_supported",
    "authorization_response_iss_parameter_supported",
    "client_id",
    "client_secret",
    "client_secret_expires_at",
    "token_endpoint_auth_method",
    "redirect_uris",
    "access_token",
    "token_type",
    "expires_in",
    "refresh_token",
    "scope",
    "error",
    "error_description",
]
_oauth_docs = st.dictionaries(st.sampled_from(_OAUTH_KEYS), _OAUTH_VALUES, max_size=10) | _json


@st.composite
def oauth_inputs(draw: Any, target: str) -> bytes:
    module = harness(target)
    if draw(st.booleans()):  # a template: the harness builds the document from the bytes
        return bytes([draw(st.integers(0, 255)) | 1]) + draw(st.binary(max_size=300))
    flags = draw(st.integers(0, 255))
    if target == "oauth_challenge":
        pieces = st.sampled_from(
            [
                *("Bearer", "Basic", " ", ", ", "=", '"', "\\", "scope", "error", "abc=="),
                *("realm", "insufficient_scope", "resource_metadata"),
                '"https://mcp.example.test/meta/prm"',
            ]
        )
        fields = st.lists(pieces, max_size=12).map(lambda p: "".join(p).encode("latin-1"))
        return module.raw_input(*draw(st.lists(fields, min_size=1, max_size=4)), flags=flags)
    if target == "oauth_callback":
        from _oauthfuzz import CODE, FIRST_STATE

        names = st.sampled_from(["state", "code", "iss", "error", "error_description", "x"])
        values = st.sampled_from([FIRST_STATE, CODE, "https://auth.example.test", ""]) | st.text(
            max_size=8
        )
        pairs = draw(st.lists(st.tuples(names, values), max_size=6))
        query = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in pairs)
        return module.raw_input(query, flags=flags & ~32)
    text = json.dumps(draw(_oauth_docs), ensure_ascii=draw(st.booleans()))
    body = text.encode("utf-8", "surrogatepass")
    if target == "oauth_register":
        return module.raw_input(body, methods=draw(st.integers(0, 7)), flags=flags)
    return module.raw_input(body, draw(st.integers(0, 9)), flags=flags)


@pytest.mark.parametrize("target", OAUTH_TARGETS)
@BUDGET
@given(data=st.data())
def test_oauth_structured(target: str, data: st.DataObject) -> None:
    harness(target).fuzz_one_input(data.draw(oauth_inputs(target)))


# --- regressions the fuzzers found ------------------------------------------------------------


def test_H4_resume_uses_the_last_dispatched_event_id_not_a_pending_one() -> None:
    """H4 (found by fuzz_http): one chunk holding a dispatched event and the id line of an
    event still in flight must resume from the dispatched event, or the in-flight event is
    lost (the server replays only what follows the Last-Event-ID). Whole and byte-wise alike."""
    from mcpcore.base._events import HttpRequest
    from mcpcore.wire._http import HttpLimits, HttpMapping
    from mcpcore.wire._jsonrpc import Request

    body = (
        b'id: e1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
        b'id: e2\ndata: {"jsonrpc":"2.0","id":1,"res'
    )
    for pieces in ([body], [body[i : i + 1] for i in range(len(body))]):
        mapping = HttpMapping("https://example.test/mcp", limits=HttpLimits(default_retry=0.5))
        mapping.send(Request(id=1, method="tools/call", params={"name": "t"}), 0.0)
        (post,) = mapping.take_actions()
        mapping.response_started(
            post.exchange_id, 200, [(b"content-type", b"text/event-stream")], 0.0
        )
        for piece in pieces:
            mapping.response_data(post.exchange_id, piece, 0.0)
        mapping.response_failed(post.exchange_id, TransportFailure(FailureKind.RESET), 0.0)
        mapping.handle_timer(1.0)
        (resume,) = [a for a in mapping.take_actions() if isinstance(a, HttpRequest)]
        assert resume.method == "GET"
        assert dict(resume.headers)[b"last-event-id"] == b"e1"


def test_U2_a_lone_surrogate_in_a_continuation_is_written_sealed_and_read_back() -> None:
    """U2 (found by fuzz_seal): a server may send a lone surrogate as a ``\\ud800``
    escape (the wire keeps it), and a paused call's state or questions carry it into
    its continuation. Its id, seal and text were an undocumented UnicodeEncodeError
    (UTF-8 has no form for it); now the canonical bytes take it as ``surrogatepass``
    (as a pin's fingerprint does) and the text written escapes it."""
    from mcpcore import Continuation, TaskHandle
    from mcpcore.features._resume import paused_call

    key = b"host key"
    asks = {
        "q": {
            "method": "elicitation/create",
            "params": {
                "message": "a\ud800",
                "requestedSchema": {"type": "object", "properties": {}},
            },
        }
    }
    paused = paused_call(
        server="s",
        tool_id="s.echo",
        tool="echo",
        endpoint="e" * 32,
        params={"name": "echo", "arguments": {}},
        request_state="\udfff",
        input_requests=asks,
        rounds=1,
        elicit_url=False,
        seal_key=key,
    )
    assert paused is not None
    sealed = paused.continuation
    assert sealed.id and sealed.seal
    for obj in (sealed, TaskHandle("t\ud800", "s", "echo", "e" * 32).sealed(key)):
        text = obj.to_json()
        text.encode("utf-8")  # a file or a store can keep it
        kind = type(obj)
        assert kind.from_json(text, key=key) == obj
        assert kind.from_json(text, key=key).seal == obj.seal
        assert kind.from_json(obj.to_json(key=key), key=[b"newer", key]) == obj
    # Texts without a lone surrogate are written and sealed as before (the canonical form).
    plain = Continuation("e" * 32, "echo", {"name": "echo", "arguments": {"é": 1}}, None, {}, 1)
    assert plain.to_json() == json.dumps(
        plain._body(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


@pytest.mark.parametrize("field", ["expires_at", "client_secret_expires_at"])
def test_W5_a_stored_time_past_a_floats_range_is_store_corrupt_naming_the_field(field: str) -> None:
    """W5 (found by fuzz_records): JSON integers have no bound, and another writer's
    row may hold one no float can carry; reading it raised OverflowError (out of
    ``math.isfinite``). It is ``StoreCorrupt`` naming the field, like NaN or a string."""
    from mcpcore_stores import StoreCorrupt
    from mcpcore_stores._records import decode_client, decode_tokens, encode_client, encode_tokens

    records = harness("records")  # the rows the harness starts from
    tokens = json.loads(encode_tokens(records.TOKENS))
    client = json.loads(encode_client(records.CLIENT))
    row, decode = (tokens, decode_tokens) if field == "expires_at" else (client, decode_client)
    for value in (10**400, -(10**400)):
        with pytest.raises(StoreCorrupt) as caught:
            decode(json.dumps({**row, field: value}))
        assert str(caught.value) == field
    assert decode(json.dumps({**row, field: 10**9})) is not None  # an ordinary time reads


def test_N1_a_stored_token_outside_ascii_gets_a_proof_of_the_bytes_sent() -> None:
    """N1 (found by fuzz_dpop): a token endpoint's token is visible ASCII (O46), but
    one a store held may be any text; bound to the key, its request raised
    UnicodeEncodeError (``ath`` hashed it as ASCII while ``Authorization`` sent UTF-8).
    Both now use one encoding, so the proof's ``ath`` is the hash of what is sent."""
    import base64
    import hashlib

    from mcpcore.auth._oauth import RequestTicket, TokenSet

    dpop = harness("dpop")
    for access in ("tøk", "t\ud800k", "plain"):
        tokens = TokenSet(
            access_token=access,
            token_type="DPoP",
            expires_at=dpop.NOW + 3600,
            issuer=dpop.AS,
            token_endpoint=dpop.AS + "/token",
            resource=dpop.S,
            client_id="app",
            dpop_jkt=dpop.JKT,
        )
        flow = dpop.make_flow(tokens=tokens, dpop=True, dpop_key=dpop.Key())
        headers = dict(flow.prepare_headers(RequestTicket(), "POST", dpop.S, dpop.NOW))
        sent = headers[b"authorization"].removeprefix(b"DPoP ")
        claims = json.loads(base64.urlsafe_b64decode(headers[b"dpop"].split(b".")[1] + b"=="))
        digest = base64.urlsafe_b64encode(hashlib.sha256(sent).digest()).rstrip(b"=").decode()
        assert claims["ath"] == digest
        if access == "plain":  # an ASCII token: the same bytes as ever
            assert sent == b"plain"


def test_U1_a_stored_pin_nested_past_the_parsers_depth_is_no_object() -> None:
    """U1 (found by fuzz_pins): a pin store's definition text is whatever the store
    held; nested past ``json``'s depth it raised RecursionError out of
    ``PinBook.observe`` (through ``Pin.fields``), so one bad row broke the listing.
    It reads as no object, like any text that is not one: the change is reported."""
    from mcpcore.base._pins import Pin
    from mcpcore.base._tools import Catalogue
    from mcpcore.features._pins import PinBook

    deep = Pin("0" * 64, "[" * 100_000)
    assert deep.fields() == {}
    book = PinBook()
    book.load({"echo": deep})
    listing = Catalogue.from_listing("srv", [{"name": "echo", "inputSchema": {"type": "object"}}])
    visible, changes = book.observe(listing, "block")
    assert [change.name for change in changes] == ["echo"] and visible.tools == ()


def test_N4_a_frontmatter_integer_past_pythons_digit_limit_is_a_skill_mismatch() -> None:
    """N4 (found by fuzz_skills): a YAML integer of more than 4,300 digits in a
    SKILL.md raised ValueError out of ``parse_frontmatter`` (and so out of a file's
    read), where only ``SkillMismatch`` is documented. No entry's JSON can carry such
    a number either (the wire refuses it), so the frontmatter does not match."""
    from mcpcore.base._errors import SkillMismatch
    from mcpcore.features._skills import parse_frontmatter

    for value in ("9" * 4400, "[" + "1" * 4400 + ", a]", "-" + "1" * 5000):
        with pytest.raises(SkillMismatch):
            parse_frontmatter(f"---\nname: s\nversion: {value}\n---\n", skill="s")
    assert parse_frontmatter("---\nname: s\nversion: 12\n---\n")["version"] == 12


@pytest.mark.parametrize(
    "fields",
    [
        [b"Bearer abc==", b'DPoP scope="a,b"'],  # a Bearer challenge without parameters
        [b'DPoP scope="a,b"'],  # no Bearer challenge, and this client has no DPoP
    ],
)
def test_O4_only_the_bearer_challenge_counts_for_a_client_without_dpop(fields: list[bytes]) -> None:
    """O4, N1 (found by fuzz_oauth_challenge once DPoP landed): the challenge's
    parameters were ``bearer or dpop``, so a Bearer challenge with no parameters
    (``{}``) let a DPoP challenge's ``scope`` be asked for, by a client that does not
    even do DPoP. The Bearer challenge counts when present; the DPoP one only for a
    client with DPoP and no Bearer challenge (test_oauth_extensions covers that)."""
    from urllib.parse import parse_qsl, urlsplit

    from _oauthfuzz import NOW, FlowDriver, make_flow

    from mcpcore.auth._oauth import RequestTicket

    flow = make_flow()
    driver = FlowDriver(flow, data=b"")
    ticket = RequestTicket()
    flow.prepare(ticket, NOW)
    flow.challenge(ticket, 401, [(b"www-authenticate", f) for f in fields], NOW)
    driver.pump(taken=flow.take_actions())
    assert driver.opened
    for opened in driver.opened:
        assert dict(parse_qsl(urlsplit(opened.url).query)).get("scope") != "a,b"
