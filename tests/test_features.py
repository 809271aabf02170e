"""Resources, templates, prompts and instructions in the core (F1, F2, F5, F7, F9), with a
fake clock: the session driven by hand in the handshake era, and the HTTP engine
against a scripted 2026-07-28 server.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fake_peer import Link, Reply, connect, sse
from mcpcore import (
    CallTimeout,
    ErrorResponse,
    InvalidArguments,
    InvalidState,
    LimitExceeded,
    RemoteProtocolError,
    ResourceNotFound,
    Result,
    TransportError,
)
from mcpcore.base._events import (
    CallCancelled,
    CallFailed,
    HttpRequest,
    RequestSucceeded,
    SessionReady,
)
from mcpcore.engine._client_base import ClientBase
from mcpcore.features._prompts import PROMPTS_GET, PROMPTS_LIST, PromptResult, get_params
from mcpcore.features._resources import (
    RESOURCE_TEMPLATES_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    BlobContents,
    ReadResult,
    TextContents,
    read_params,
)
from mcpcore.session._session import ClientSession, SessionOptions
from mcpcore.wire._requests import KINDS, Ask

NOW = 1000.0
V = "2026-07-28"
JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream")]
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"resources": {}, "prompts": {}},
    "serverInfo": {"name": "fake", "version": "1"},
    "instructions": "use the \x1b[31mred\x1b[0m tool",
}


def ready(**options: Any) -> ClientSession:
    """A handshake-era session, ready (no tools capability: nothing listed)."""
    session = ClientSession(SessionOptions(server_name="srv", protocol="legacy", **options))
    session.start(NOW)
    [init] = session.take_outgoing()
    session.receive_message(Result(id=init.id, result=INIT), NOW)  # type: ignore[arg-type]
    session.take_outgoing()
    assert any(isinstance(e, SessionReady) for e in session.take_events())
    return session


def ask(session: ClientSession, what: Ask, **kw: Any) -> tuple[int, Any]:
    call_id = session.request(what, NOW, **kw)
    [request] = session.take_outgoing()
    return call_id, request


def answer(session: ClientSession, request: Any, result: Any) -> Any:
    session.receive_message(Result(id=request.id, result=result), NOW)
    return session.take_events()


def value(events: list[Any], call_id: int) -> Any:
    [event] = [e for e in events if getattr(e, "call_id", None) == call_id]
    if isinstance(event, CallFailed):
        raise event.error
    assert isinstance(event, RequestSucceeded)
    return event.value


def resources_ask() -> Ask:
    return Ask(RESOURCES_LIST, None, "srv")


# --- F1: the kinds are declared in one table ---------------------------------------------------


def test_F1_every_kind_is_declared_once_with_its_rules() -> None:
    import mcpcore.session._handshake  # noqa: F401  (the session's own kinds)

    assert KINDS["tools/call"].resend is False and KINDS["tools/call"].input_rounds
    assert KINDS["resources/read"].resend and KINDS["resources/read"].name_param == "uri"
    assert KINDS["prompts/get"].name_param == "name" and KINDS["prompts/get"].resend
    assert KINDS["resources/list"].pages == "resources"
    assert KINDS["resources/templates/list"].pages == "resourceTemplates"
    assert KINDS["prompts/list"].pages == "prompts"
    assert not KINDS["server/discover"].cancellable and not KINDS["initialize"].cancellable


def test_F1_a_host_request_before_ready_is_refused_with_nothing_sent() -> None:
    session = ClientSession(SessionOptions(server_name="srv", protocol="legacy"))
    with pytest.raises(InvalidState, match="resources/list"):
        session.request(resources_ask(), NOW)
    assert session.take_outgoing() == []


# --- F2: listing every page, with the guards and the cache hints --------------------------------


def test_F2_F9_every_page_is_listed_and_the_last_pages_cache_hints_are_kept() -> None:
    session = ready()
    call_id, first = ask(session, resources_ask())
    assert first.method == "resources/list" and first.params is None
    assert answer(session, first, {"resources": [{"uri": "a://1", "name": "one"}], "nextCursor": "c1"}) == []
    [second] = session.take_outgoing()
    assert second.params == {"cursor": "c1"}
    events = answer(
        session,
        second,
        {
            "resources": [{"uri": "a://2", "name": "two", "size": 5}, {"name": "no uri"}, "junk"],
            "ttlMs": 30000,
            "cacheScope": "public",
        },
    )
    listing = value(events, call_id)
    assert [r.uri for r in listing] == ["a://1", "a://2"] and len(listing) == 2
    assert listing[1].size == 5 and listing.dropped == 2
    assert (listing.ttl_ms, listing.cache_scope) == (30000, "public")


def test_F2_a_resource_list_whose_cursor_loops_fails_naming_the_loop() -> None:
    session = ready()
    call_id, request = ask(session, resources_ask())
    answer(session, request, {"resources": [], "nextCursor": "same"})
    [again] = session.take_outgoing()
    with pytest.raises(RemoteProtocolError, match="cursor loop"):
        value(answer(session, again, {"resources": [], "nextCursor": "same"}), call_id)
    assert session.take_outgoing() == [] and session.is_idle


def test_F2_the_page_cap_and_the_item_cap_hold_for_every_list() -> None:
    session = ready(max_pages=2)
    call_id, request = ask(session, Ask(PROMPTS_LIST, None, "srv"))
    answer(session, request, {"prompts": [], "nextCursor": "1"})
    [again] = session.take_outgoing()
    with pytest.raises(LimitExceeded, match="max_pages"):
        value(answer(session, again, {"prompts": [], "nextCursor": "2"}), call_id)
    session = ready(max_items=1)
    call_id, request = ask(session, Ask(RESOURCE_TEMPLATES_LIST, None, "srv"))
    two = [{"uriTemplate": "a://{x}", "name": "a"}, {"uriTemplate": "b://{x}", "name": "b"}]
    with pytest.raises(LimitExceeded, match="max_items"):
        value(answer(session, request, {"resourceTemplates": two}), call_id)


def test_F2_malformed_items_of_every_page_are_counted_warned_once_and_count_against_the_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Malformed items of every page are dropped and counted, warned about once at the
    end, and count against ``max_items`` as items the server listed."""
    session = ready()
    call_id, request = ask(session, Ask(PROMPTS_LIST, None, "srv"))
    answer(session, request, {"prompts": [{"name": "a"}, {"title": "no name"}], "nextCursor": "1"})
    [again] = session.take_outgoing()
    with caplog.at_level("WARNING", logger="mcpcore.session"):
        listing = value(answer(session, again, {"prompts": ["junk", {"name": "b"}]}), call_id)
    assert [p.name for p in listing] == ["a", "b"] and listing.dropped == 2
    assert [r.getMessage() for r in caplog.records] == [
        "server 'srv': dropped 2 malformed prompts of the listing"
    ]
    session = ready(max_items=2)
    call_id, request = ask(session, resources_ask())
    answer(session, request, {"resources": [{"name": "no uri"}, "junk"], "nextCursor": "1"})
    [again] = session.take_outgoing()
    with pytest.raises(LimitExceeded, match="max_items"):
        value(answer(session, again, {"resources": [{"uri": "a://1", "name": "one"}]}), call_id)


# --- F2: reading -------------------------------------------------------------------------------


def test_F2_a_read_gives_typed_text_and_blob_contents_and_a_blob_is_decoded_only_on_access() -> None:
    session = ready()
    call_id, request = ask(session, Ask(RESOURCES_READ, read_params("a://x"), "a://x"))
    assert request.method == "resources/read" and request.params == {"uri": "a://x"}
    result = value(
        answer(
            session,
            request,
            {
                "contents": [
                    {"uri": "a://x", "mimeType": "text/plain", "text": "hello"},
                    {"uri": "a://x#1", "blob": base64.b64encode(b"\x00\x01").decode()},
                    {"uri": "a://x#2", "blob": "not base64!"},
                ]
            },
        ),
        call_id,
    )
    assert isinstance(result, ReadResult) and len(result) == 3
    text, blob, bad = result.contents
    assert isinstance(text, TextContents) and result.text == "hello" and text.mime_type == "text/plain"
    assert isinstance(blob, BlobContents) and blob.data == b"\x00\x01"
    assert "not base64" not in repr(bad)  # the bytes never show in a repr
    with pytest.raises(RemoteProtocolError, match=r"a://x#2.*not valid base64"):
        bad.data  # noqa: B018


@pytest.mark.parametrize("code", [-32002, -32602])
def test_F2_an_unknown_uri_is_resource_not_found(code: int) -> None:
    session = ready()
    call_id, request = ask(session, Ask(RESOURCES_READ, read_params("a://gone"), "a://gone"))
    session.receive_message(ErrorResponse(id=request.id, code=code, message="Unknown resource"), NOW)
    with pytest.raises(ResourceNotFound, match="a://gone") as caught:
        value(session.take_events(), call_id)
    assert caught.value.uri == "a://gone"


@pytest.mark.parametrize(
    "result",
    [{"contents": "x"}, {"contents": [{"text": "no uri"}]}, {"contents": [{"uri": "a://x"}]}, []],
)
def test_F2_a_malformed_read_result_is_a_protocol_error(result: Any) -> None:
    session = ready()
    call_id, request = ask(session, Ask(RESOURCES_READ, read_params("a://x"), "a://x"))
    with pytest.raises(RemoteProtocolError):
        value(answer(session, request, result), call_id)


@pytest.mark.parametrize("uri", ["", None, 3, b"a://x"])
def test_F2_a_uri_that_is_not_a_string_is_refused_before_sending(uri: Any) -> None:
    with pytest.raises(InvalidArguments, match="URI"):
        read_params(uri)


def test_F2_a_read_has_its_deadline_and_can_be_cancelled() -> None:
    session = ready()
    call_id, _ = ask(session, Ask(RESOURCES_READ, read_params("a://x"), "a://x"), timeout=2)
    session.handle_timer(NOW + 2)
    [failed] = session.take_events()
    assert isinstance(failed, CallFailed) and isinstance(failed.error, CallTimeout)
    assert "resources/read did not finish within its 2 s budget" in str(failed.error)
    [notice] = session.take_outgoing()
    assert notice.method == "notifications/cancelled"  # type: ignore[union-attr]
    call_id, request = ask(session, Ask(RESOURCES_READ, read_params("a://x"), "a://x"))
    assert session.cancel(call_id, NOW)
    assert isinstance(session.take_events()[0], CallCancelled)
    assert session.take_outgoing()[0].params["requestId"] == request.id  # type: ignore[union-attr]


# --- F5: prompts -------------------------------------------------------------------------------


def test_F5_a_prompt_gives_messages_with_typed_blocks() -> None:
    session = ready()
    call_id, request = ask(session, Ask(PROMPTS_GET, get_params("review", {"code": "x"}), "review"))
    assert request.params == {"name": "review", "arguments": {"code": "x"}}
    result = value(
        answer(
            session,
            request,
            {
                "description": "a review",
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "look"}},
                    {"role": "assistant", "content": {"type": "image", "data": "AAE=", "mimeType": "image/png"}},
                ],
            },
        ),
        call_id,
    )
    assert isinstance(result, PromptResult) and result.description == "a review"
    user, assistant = result.messages
    assert (user.role, user.text, user.content.kind) == ("user", "look", "text")
    assert assistant.content.kind == "image" and assistant.content.data == b"\x00\x01"  # type: ignore[union-attr]


@given(st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.none(), st.lists(st.text()), st.booleans()), min_size=1))
def test_F5_prompt_arguments_that_are_not_strings_are_refused_before_sending(arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidArguments, match="must be a string"):
        get_params("review", arguments)


@pytest.mark.parametrize("name, arguments", [("", None), (None, None), ("p", ["a"]), ("p", {1: "x"})])
def test_F5_a_bad_prompt_name_or_arguments_mapping_is_refused(name: Any, arguments: Any) -> None:
    with pytest.raises(InvalidArguments):
        get_params(name, arguments)


# --- F7: instructions ----------------------------------------------------------------------------


def test_F7_instructions_are_kept_as_sent_and_only_once_ready() -> None:
    session = ready()
    assert session.instructions == INIT["instructions"]  # raw: escaping is the printer's job

    class Client(ClientBase):
        pass

    client = Client()
    client._engine = None
    assert client.instructions is None


# --- 2026-07-28: headers, re-sending, input_required (F1, F2, F5) --------------------------------


class ModernFeatures:
    """A 2026-07-28 server with resources and prompts; ``script`` overrides an answer."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.script: dict[str, list[Reply]] = {}

    def methods(self) -> list[str]:
        return [m["method"] for _, m in self.seen]

    def handle(self, req: HttpRequest) -> Reply:
        headers = {k.decode().lower(): v.decode() for k, v in req.headers}
        message = json.loads(req.body or b"null")
        if req.method != "POST" or "id" not in message:
            return Reply(202)
        self.seen.append((headers, message))
        method, rid = message["method"], message["id"]
        scripted = self.script.get(method)
        if scripted:
            reply = scripted.pop(0)
            if reply.chunks == [b"ID"]:
                reply.chunks = [sse({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "input_required", "requestState": "s1"}})]
            reply.chunks = [c.replace(b'"$ID"', json.dumps(rid).encode()) for c in reply.chunks]  # the request's id
            return reply
        results: dict[str, Any] = {
            "server/discover": {
                "supportedVersions": [V],
                "capabilities": {"resources": {}, "prompts": {}},
                "instructions": "modern instructions",
            },
            "tools/list": {"tools": []},
            "resources/read": {"contents": [{"uri": message["params"].get("uri"), "text": "t"}], "ttlMs": 5, "cacheScope": "private"},
            "prompts/get": {"messages": [{"role": "user", "content": {"type": "text", "text": "p"}}]},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": results[method]}).encode()
        return Reply(200, JSON, [body])


def modern_link(server: ModernFeatures) -> Link:
    link = connect(server, options=SessionOptions(server_name="srv"), protocol="auto")  # type: ignore[arg-type]
    assert link.of_type(SessionReady)
    return link


def outcome(link: Link, call_id: int) -> Any:
    link.pump()
    return value(link.events, call_id)


def test_F2_F5_M25_reads_and_prompts_carry_mcp_name_and_the_envelope() -> None:
    server = ModernFeatures()
    link = modern_link(server)
    assert link.engine.session.instructions == "modern instructions"
    read = outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("file:///a b.txt"), "x"), link.now))
    assert read.text == "t" and (read.ttl_ms, read.cache_scope) == (5, "private")
    got = outcome(link, link.engine.request(Ask(PROMPTS_GET, get_params("review", None), "review"), link.now))
    assert got.messages[0].text == "p"
    (read_headers, read_message), (prompt_headers, _) = server.seen[-2:]
    assert read_headers["mcp-method"] == "resources/read" and "mcp-name" in read_headers
    assert "a b.txt" in read_headers["mcp-name"] or read_headers["mcp-name"].startswith("=?base64?")
    assert read_message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == V
    assert prompt_headers["mcp-name"] == "review"


@pytest.mark.parametrize("code", [-32602, -32002])
def test_F2_at_2026_07_28_an_unknown_uri_is_resource_not_found_and_the_next_read_goes_out(code: int) -> None:
    """2026-07-28 answers an unknown URI with -32602 (-32002 is kept from the handshake era)."""
    server = ModernFeatures()
    error = {"jsonrpc": "2.0", "id": "$ID", "error": {"code": code, "message": "Resource not found"}}
    server.script["resources/read"] = [Reply(200, JSON, [json.dumps(error).encode()])]
    link = modern_link(server)
    with pytest.raises(ResourceNotFound, match="a://gone") as caught:
        outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://gone"), "a://gone"), link.now))
    assert caught.value.uri == "a://gone" and str(code) in str(caught.value)
    assert server.methods().count("resources/read") == 1  # not sent again: it was an answer
    read = outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now))
    assert read.text == "t"


def test_F1_E3_a_read_whose_stream_broke_is_sent_once_more_with_a_new_id() -> None:
    server = ModernFeatures()
    server.script["resources/read"] = [Reply(200, SSE, [], finish="fail")]
    link = modern_link(server)
    result = outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now))
    assert result.text == "t"
    reads = [m for _, m in server.seen if m["method"] == "resources/read"]
    assert len(reads) == 2 and reads[0]["id"] != reads[1]["id"]


def test_F1_E3_a_read_that_breaks_twice_fails_rather_than_loop() -> None:
    server = ModernFeatures()
    server.script["resources/read"] = [Reply(200, SSE, [], finish="fail"), Reply(200, SSE, [], finish="fail")]
    link = modern_link(server)
    call_id = link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now)
    link.pump()
    [failed] = [e for e in link.events if isinstance(e, CallFailed) and e.call_id == call_id]
    assert isinstance(failed.error, TransportError)
    assert server.methods().count("resources/read") == 2


def test_F1_M48_M50_a_read_answered_with_input_required_is_sent_again_with_the_state() -> None:
    server = ModernFeatures()
    server.script["resources/read"] = [Reply(200, SSE, [b"ID"])]
    link = modern_link(server)
    result = outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now))
    assert result.text == "t"
    first, second = [m for _, m in server.seen if m["method"] == "resources/read"]
    assert "requestState" not in first["params"] and second["params"]["requestState"] == "s1"
    assert second["params"]["uri"] == "a://x" and second["id"] != first["id"]


def test_F2_M13_a_read_parked_during_a_new_session_goes_out_once_it_is_up() -> None:
    from fake_peer import FakeServer

    server = FakeServer()
    link = connect(server)
    sessions = set(server.sessions)
    server.sessions.clear()  # the server forgets the session: the next request gets 404
    call_id = link.engine.request(Ask(RESOURCES_LIST, None, "srv"), link.now)
    link.pump()
    assert server.sessions and server.sessions != sessions  # a new session was set up
    # the fake has no resources: its -32601 reaches the caller once, after the re-send
    [failed] = [e for e in link.events if getattr(e, "call_id", None) == call_id]
    assert isinstance(failed, CallFailed) and "resources/list failed" in str(failed.error)
    assert len(server.requests("resources/list")) == 2


def test_F1_M50_E3_a_round_re_sent_after_its_stream_broke_keeps_that_rounds_state() -> None:
    server = ModernFeatures()
    server.script["resources/read"] = [Reply(200, SSE, [b"ID"]), Reply(200, SSE, [], finish="fail")]
    link = modern_link(server)
    result = outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now))
    assert result.text == "t"
    first, second, third = [m for _, m in server.seen if m["method"] == "resources/read"]
    assert "requestState" not in first["params"]
    assert second["params"]["requestState"] == third["params"]["requestState"] == "s1"
    assert len({first["id"], second["id"], third["id"]}) == 3


# --- F6: completion --------------------------------------------------------------------------------


def test_F6_a_completion_names_its_ref_and_gives_at_most_100_values() -> None:
    from mcpcore.features._completion import Completion, complete_params
    from mcpcore.features._prompts import Prompt
    from mcpcore.features._resources import ResourceTemplate

    session = ready()
    params = complete_params(Prompt(name="review"), "language", "py", {"code": "x"})
    assert params == {
        "ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "language", "value": "py"},
        "context": {"arguments": {"code": "x"}},
    }
    template = complete_params(ResourceTemplate(uri_template="a://{x}", name="a"), "x", "", None)
    assert template["ref"] == {"type": "ref/resource", "uri": "a://{x}"}
    from mcpcore.features._completion import COMPLETE

    call_id, request = ask(session, Ask(COMPLETE, params))
    assert request.method == "completion/complete"
    many = [f"v{i}" for i in range(150)] + [7]
    result = value(answer(session, request, {"completion": {"values": many, "total": 150}}), call_id)
    assert isinstance(result, Completion) and len(result.values) == 100
    assert result.has_more and result.total == 150
    call_id, request = ask(session, Ask(COMPLETE, params))
    with pytest.raises(RemoteProtocolError, match=r"completion\.values"):
        value(answer(session, request, {"completion": {}}), call_id)


@pytest.mark.parametrize(
    "ref, argument, value_, context",
    [
        ("review", "a", "", None),
        ({"type": "ref/prompt"}, "a", "", None),
        ({"type": "ref/other", "name": "x"}, "a", "", None),
        ({"type": "ref/prompt", "name": "p"}, "", "", None),
        ({"type": "ref/prompt", "name": "p"}, "a", 3, None),
        ({"type": "ref/prompt", "name": "p"}, "a", "", {"b": 1}),
    ],
)
def test_F6_a_bad_completion_request_is_refused_before_sending(
    ref: Any, argument: Any, value_: Any, context: Any
) -> None:
    from mcpcore.features._completion import complete_params

    with pytest.raises(InvalidArguments):
        complete_params(ref, argument, value_, context)


# --- F8: logs ---------------------------------------------------------------------------------------


def _legacy_ready(capabilities: dict[str, Any], **options: Any) -> tuple[ClientSession, list[Any]]:
    session = ClientSession(SessionOptions(server_name="srv", protocol="legacy", **options))
    session.start(NOW)
    [init] = session.take_outgoing()
    result = {**INIT, "capabilities": capabilities}
    session.receive_message(Result(id=init.id, result=result), NOW)  # type: ignore[arg-type]
    return session, session.take_outgoing()


def test_F8_a_log_level_is_asked_once_a_session_is_up_only_when_given_and_the_server_logs() -> None:
    session, sent = _legacy_ready({"logging": {}}, log_level="warning")
    [_, set_level] = sent
    assert set_level.method == "logging/setLevel" and set_level.params == {"level": "warning"}
    session.receive_message(Result(id=set_level.id, result={}), NOW)
    assert session.is_idle
    _, sent = _legacy_ready({"logging": {}})  # M21: nothing asked by default
    assert [m.method for m in sent] == ["notifications/initialized"]
    _, sent = _legacy_ready({}, log_level="debug")  # the server does not log
    assert [m.method for m in sent] == ["notifications/initialized"]


def test_F8_a_refused_set_level_costs_nothing_but_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    session, sent = _legacy_ready({"logging": {}}, log_level="error")
    with caplog.at_level("INFO", logger="mcpcore.session"):
        session.receive_message(ErrorResponse(id=sent[-1].id, code=-32601, message="no"), NOW)
    assert "logging/setLevel failed" in caplog.text and session.is_idle
    assert session.state.value == "ready"


def test_F8_with_on_log_server_messages_become_events_else_they_go_to_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcpcore import LogMessage, Notification

    note = Notification(
        method="notifications/message",
        params={"level": "warning", "logger": "db", "data": {"rows": 3}},
    )
    session = ready(log_events=True)
    session.receive_message(note, NOW)
    [event] = session.take_events()
    assert event == LogMessage(server="srv", level="warning", logger="db", data={"rows": 3})
    odd = Notification(method="notifications/message", params={"level": "loud", "data": "x"})
    session.receive_message(odd, NOW)
    assert session.take_events()[0].level == "info"
    session = ready()
    with caplog.at_level("WARNING", logger="mcpcore.server"):
        session.receive_message(note, NOW)
    assert session.take_events() == [] and "[srv:db]" in caplog.text


def test_F8_M21_the_2026_envelope_carries_the_log_level_only_when_given() -> None:
    from mcpcore.wire._modern import envelope

    assert "io.modelcontextprotocol/logLevel" not in envelope({}, V, "c", "1")["_meta"]
    assert envelope({}, V, "c", "1", "notice")["_meta"]["io.modelcontextprotocol/logLevel"] == "notice"
    server = ModernFeatures()
    link = connect(server, options=SessionOptions(server_name="srv", log_level="debug"), protocol="auto")  # type: ignore[arg-type]
    outcome(link, link.engine.request(Ask(RESOURCES_READ, read_params("a://x"), "a://x"), link.now))
    assert all(m["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "debug" for _, m in server.seen)
    assert "logging/setLevel" not in server.methods()  # M71


@pytest.mark.parametrize("level", ["verbose", "", 3, "DEBUG"])
def test_F8_a_log_level_the_protocol_does_not_name_is_refused(level: Any) -> None:
    from mcpcore import InvalidValue, prepare_client

    with pytest.raises(InvalidValue, match="log_level"):
        prepare_client("s", {"url": "http://127.0.0.1:9/mcp"}, {"log_level": level}, env={}, home="/")  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match="on_log"):
        prepare_client("s", {"url": "http://127.0.0.1:9/mcp"}, {"on_log": "print"}, env={}, home="/")  # type: ignore[typeddict-item]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@given(
    st.dictionaries(
        st.sampled_from(
            ["uri", "name", "title", "description", "mimeType", "size", "annotations", "other"]
        ),
        _JSON_VALUES | st.text(max_size=12),
    )
)
def test_F2_B3_a_listed_resource_is_the_one_its_constructor_builds(raw: dict[str, Any]) -> None:
    """B3: the fast build of a listed resource equals the dataclass's own, for any entry
    JSON can hold (a malformed one is dropped; a field of the wrong type is None); the
    resource stays frozen."""
    import dataclasses

    from mcpcore.features._resources import Resource, _resource

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    size, annotations = raw.get("size"), raw.get("annotations")
    expected = (
        None
        if text("uri") is None or text("name") is None
        else Resource(
            uri=raw["uri"],
            name=raw["name"],
            title=text("title"),
            description=text("description"),
            mime_type=text("mimeType"),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            annotations=annotations if isinstance(annotations, dict) else None,
            raw=raw,
        )
    )
    got = _resource(raw)
    assert got == expected
    assert repr(got) == repr(expected)
    if got is not None:
        assert got.raw is raw
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.name = "x"  # type: ignore[misc]
