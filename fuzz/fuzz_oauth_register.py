"""Fuzz dynamic client registration answers (``_oauth``: ``_on_register``, O26-O30, O47).

A 401 starts the flow; discovery is canned (the authorization server lists
one of several sets of token endpoint auth methods); the registration POST
gets the fuzzed answer - the first one, or the second one after the token
endpoint said ``invalid_client`` (O47). The body is raw input bytes or a valid
registration answer with members kept, dropped or replaced (a client secret
holding ``SECRET``, ``error_description`` echoing the request). A registered
client is then used: the canned callback, and a token answer that succeeds or
refuses with ``invalid_client`` echoing what it was sent (the client secret).

Invariants (besides those of ``_oauthfuzz``): a saved client has a non-empty
``client_id``, an auth method this client can perform, and a secret when the
method needs one (O27); the person is only sent to authorize with a
registered client; the token request authenticates exactly as the client was
registered (Basic header, form secret, or the bare ``client_id``; O44, O45).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any
from urllib.parse import parse_qsl, quote

import _fuzzlib
from _fuzzlib import Reader
from _oauthfuzz import (
    AS,
    Answer,
    FlowDriver,
    asm_doc,
    asm_urls,
    challenge_header,
    debug_log,
    echo_text,
    js,
    make_flow,
    read_answer,
    run_guarded,
    template,
)

from mcpcore.auth._oauth import AuthRequest, ClientRecord, Purpose, RequestTicket, SaveClient

METHOD_LISTS: tuple[list[str] | None, ...] = (
    ["none"],
    ["client_secret_basic"],
    ["client_secret_post"],
    ["client_secret_basic", "client_secret_post"],
    None,
    ["private_key_jwt"],
    ["none", "client_secret_post"],
    [],
)
_BASE = {
    "client_id": "dyn-client",
    "client_secret": "dcr-" + "x" * 4,
    "token_endpoint_auth_method": "client_secret_post",
    "redirect_uris": ["http://127.0.0.1:53682/callback"],
}


def _check(driver: FlowDriver) -> None:
    saved = [a.client for a in driver.store if isinstance(a, SaveClient)]
    for record in saved:
        assert isinstance(record.client_id, str) and record.client_id, record
        assert record.auth_method in ("none", "client_secret_basic", "client_secret_post"), record
        assert record.auth_method == "none" or record.client_secret, record
    if driver.opened:
        assert saved, "the person was sent to authorize without a registered client"
    client: ClientRecord | None = None
    for action in driver.order:
        if isinstance(action, SaveClient):
            client = action.client
        if not isinstance(action, AuthRequest):
            continue
        request = action
        if request.purpose is Purpose.REGISTER:
            sent = json.loads(request.body or b"")
            assert sent["redirect_uris"] == ["http://127.0.0.1:53682/callback"], sent
        if request.purpose is not Purpose.TOKEN_CODE or client is None:
            continue
        form = dict(parse_qsl((request.body or b"").decode("ascii")))
        header = dict(request.headers).get(b"authorization")
        if client.auth_method == "client_secret_basic":
            raw = f"{quote(client.client_id, safe='')}:{quote(client.client_secret or '', safe='')}"
            assert header == b"Basic " + base64.b64encode(raw.encode("ascii")), request
            assert "client_secret" not in form
        elif client.auth_method == "client_secret_post":
            assert header is None and form.get("client_secret") == client.client_secret, request
            assert form.get("client_id") == client.client_id, request
        else:
            assert header is None and "client_secret" not in form, request
            assert form.get("client_id") == client.client_id, request


def raw_input(body: bytes, methods: int = 0, flags: int = 0, token_kind: int = 1) -> bytes:
    """An input whose registration answer is a 201 JSON answer with ``body``."""
    head = bytes([flags & ~1, methods]) + bytes([4, 1, 0, 1, 2, 0])  # 201
    return head + len(body).to_bytes(2, "little") + body + bytes([token_kind])


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    flags = r.u8()
    methods = METHOD_LISTS[r.u8() % len(METHOD_LISTS)]
    again = bool(flags & 2)  # fuzz the re-registration after invalid_client (O47)
    answer = read_answer(r, b"")
    raw = b"" if flags & 1 else r.blob(3000)
    token_kind = r.u8() % 4

    def registration(request: AuthRequest) -> Answer:
        answer.body = template(r, "register", _BASE, request) if flags & 1 else raw
        return answer

    def token(request: AuthRequest) -> Answer:
        if token_kind == 0:
            doc: dict[str, Any] = {"error": "invalid_client"}
            doc["error_description"] = echo_text(r, request)
            return js(401, doc)
        return js(200, {"access_token": "at-" + "y" * 8, "token_type": "Bearer"})

    routes = {
        ("GET", asm_urls(AS)[0]): js(200, asm_doc(token_endpoint_auth_methods_supported=methods))
    }
    fuzzed: dict[tuple[Purpose, int], Any] = {(Purpose.REGISTER, 1 if again else 0): registration}
    if again:
        fuzzed[(Purpose.TOKEN_CODE, 0)] = js(401, {"error": "invalid_client"})
        fuzzed[(Purpose.TOKEN_CODE, 1)] = token
    else:
        fuzzed[(Purpose.TOKEN_CODE, 0)] = token

    def body() -> None:
        with debug_log() as log:
            flow = make_flow(want_refresh_tokens=bool(flags & 4))
            driver = FlowDriver(flow, data=data, fuzzed=fuzzed, routes=routes)
            flow.challenge(RequestTicket(), 401, challenge_header(scope="mcp"), driver.now)
            driver.pump()
            _check(driver)
            driver.finish(log)

    run_guarded("OAuth registration", body)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
