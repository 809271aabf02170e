"""Resource subscriptions and list changes in the core, on a fake clock (F2, F5, H6, M63–M68).

The handshake era against a scripted server (``resources/subscribe`` and
``resources/unsubscribe``, sent again on a new session), the 2026-07-28 era
against a scripted modern server (``resourceSubscriptions`` on the one
``subscriptions/listen`` stream, re-opened make-before-break when the set
changes), and the notifications that reach the host as events.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from fake_peer import FakeServer, Link, Reply, connect, sse
from mcpcore import (
    CallFailed,
    CallSucceeded,
    CallTimeout,
    InvalidArguments,
    NotOffered,
    PromptsListChanged,
    RequestSucceeded,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcpcore.session._session import SessionOptions
from test_modern import SSE, ModernFake, link_to, rpc

URI = "file:///project/config.json"
OTHER = "file:///project/notes.md"


def note(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params or {}}


def ended(link: Link, call_id: int) -> Any:
    link.pump()
    [event] = [
        e
        for e in link.events
        if isinstance(e, (RequestSucceeded, CallFailed)) and e.call_id == call_id
    ]
    return event


# --- the handshake era ------------------------------------------------------------------------------


class SubscribingServer(FakeServer):
    """A handshake-era server that declares resources (with ``subscribe`` unless told not to)."""

    def __init__(self, *, subscribe: bool = True, **kw: Any) -> None:
        super().__init__(**kw)
        self.resources: dict[str, Any] = {"subscribe": subscribe, "listChanged": True}
        self.subscribed: list[tuple[str, str, str | None]] = []  # (method, uri, session)

    def _initialize(self, message: dict[str, Any]) -> Reply:
        reply = super()._initialize(message)
        body = reply.chunks[0].decode()
        body = body.replace('"capabilities": {"tools"', f'"capabilities": {{"resources": {json.dumps(self.resources)}, "tools"')
        reply.chunks[0] = body.encode()
        return reply

    def _request(self, message: dict[str, Any]) -> Reply:
        if message["method"] in ("resources/subscribe", "resources/unsubscribe"):
            sid = next((s.headers.get("mcp-session-id") for s in reversed(self.seen)), None)
            self.subscribed.append((message["method"], message["params"]["uri"], sid))
            return self._stream([{"jsonrpc": "2.0", "id": message["id"], "result": {}}])
        return super()._request(message)


def legacy_link(server: FakeServer, **options: Any) -> Link:
    return connect(server, options=SessionOptions(server_name="srv", **options))


def test_F2_subscribe_resource_sends_resources_subscribe_and_updates_reach_the_host() -> None:
    server = SubscribingServer()
    link = legacy_link(server, update_events=True)
    call_id = link.engine.subscribe(URI, link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
    assert [(m, u) for m, u, _ in server.subscribed] == [("resources/subscribe", URI)]
    from mcpcore import Notification

    link.engine.session.receive_message(
        Notification(method="notifications/resources/updated", params={"uri": URI, "title": "Config"}),
        link.now,
    )
    assert link.engine.session.take_events() == [ResourceUpdated(server="srv", uri=URI, title="Config")]


def test_F2_without_subscribe_declared_nothing_is_sent_and_NotOffered_says_so() -> None:
    server = SubscribingServer(subscribe=False)
    link = legacy_link(server)
    before = len(server.seen)
    for on in (True, False):
        with pytest.raises(NotOffered) as refused:
            link.engine.subscribe(URI, link.now, on=on)
        assert refused.value.feature == "resources.subscribe" and "'srv'" in str(refused.value)
    link.pump()
    assert len(server.seen) == before and server.subscribed == []


def test_F2_a_uri_that_is_not_a_string_is_refused_before_sending() -> None:
    server = SubscribingServer()
    link = legacy_link(server)
    with pytest.raises(InvalidArguments):
        link.engine.subscribe(42, link.now)  # type: ignore[arg-type]
    with pytest.raises(InvalidArguments):
        link.engine.subscribe("", link.now)
    assert server.subscribed == []


def test_F2_H6_subscriptions_survive_a_new_session_and_an_unsubscribed_uri_does_not() -> None:
    server = SubscribingServer()
    link = legacy_link(server)
    for uri in (URI, OTHER):
        assert isinstance(ended(link, link.engine.subscribe(uri, link.now)), RequestSucceeded)
    assert isinstance(ended(link, link.engine.subscribe(OTHER, link.now, on=False)), RequestSucceeded)
    first_session = server.subscribed[0][2]
    server.sessions.clear()  # the server forgets the session: the next request gets 404
    call_id = link.engine.call("srv/echo", {"x": 1}, link.now)
    link.pump()
    assert [e.call_id for e in link.of_type(CallSucceeded)] == [call_id]  # after a new session
    again = server.subscribed[3:]
    assert [(m, u) for m, u, _ in again] == [("resources/subscribe", URI)]
    assert again[0][2] is not None and again[0][2] != first_session


def test_F2_a_failed_subscribe_is_not_kept() -> None:
    server = SubscribingServer()
    link = legacy_link(server)

    def refuse(seen: Any) -> Reply | None:
        message = seen.message or {}
        if message.get("method") == "resources/subscribe":
            error = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "no"}}
            return Reply(200, [(b"content-type", b"application/json")], [json.dumps(error).encode()])
        return None

    server.hook = refuse
    assert isinstance(ended(link, link.engine.subscribe(URI, link.now)), CallFailed)
    assert link.engine.session.subscriptions.uris == ()


def test_F2_without_on_resource_updated_an_update_is_logged_at_debug_and_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcpcore import Notification

    link = legacy_link(SubscribingServer())
    caplog.set_level(logging.DEBUG, "mcpcore.session")
    link.engine.session.receive_message(
        Notification(method="notifications/resources/updated", params={"uri": URI}), link.now
    )
    assert link.engine.session.take_events() == []
    assert any("updated" in r.getMessage() and URI in r.getMessage() for r in caplog.records)


def test_F2_F5_resource_and_prompt_list_changes_reach_the_host_as_events() -> None:
    from mcpcore import Notification

    link = legacy_link(SubscribingServer())
    session = link.engine.session
    for method in ("notifications/resources/list_changed", "notifications/prompts/list_changed"):
        session.receive_message(Notification(method=method, params={}), link.now)
    events = link.engine.session.take_events()
    assert events == [ResourcesListChanged(), PromptsListChanged()]
    assert [e.what for e in events] == ["resources", "prompts"]


# --- 2026-07-28: resourceSubscriptions on the one listen stream ------------------------------------


ACK = "notifications/subscriptions/acknowledged"
CAPS = {"tools": {}, "resources": {"subscribe": True, "listChanged": True}, "prompts": {"listChanged": True}}


class Streams:
    """The listen requests a modern fake received, each answered with an acknowledgement
    of what it asked for (less ``refuse``) unless ``silent``; each stays open."""

    def __init__(self, server: ModernFake, link: Link | None = None) -> None:
        self.listens: list[dict[str, Any]] = []
        self.refuse: set[str] = set()
        self.silent = False
        self.fail_next = False
        server.hook = self.hook

    def hook(self, message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        if message["method"] != "subscriptions/listen":
            return None
        self.listens.append(message)
        if self.fail_next:
            self.fail_next = False
            return Reply(200, SSE, [], finish="fail")
        if self.silent:
            return Reply(200, SSE, [], finish="stall")
        agreed = dict(message["params"]["notifications"])
        if "resourceSubscriptions" in agreed:
            agreed["resourceSubscriptions"] = [u for u in agreed["resourceSubscriptions"] if u not in self.refuse]
        meta = {"io.modelcontextprotocol/subscriptionId": message["id"]}
        return Reply(200, SSE, [sse(note(ACK, {"_meta": meta, "notifications": agreed}))], finish="stall")

    def filters(self) -> list[dict[str, Any]]:
        return [m["params"]["notifications"] for m in self.listens]


def modern(**options: Any) -> tuple[ModernFake, Streams, Link]:
    server = ModernFake(capabilities=CAPS)
    streams = Streams(server)
    link = link_to(server, **options)
    return server, streams, link


def listen_exchange(link: Link, listen_id: int) -> int:
    [xid] = [
        r.exchange_id
        for r in link.requests
        if r.body and json.loads(r.body).get("id") == listen_id
    ]
    return xid


def test_F2_M63_subscribing_opens_a_listen_stream_with_resourceSubscriptions_and_updates_arrive() -> None:
    server, streams, link = modern(update_events=True)
    assert streams.listens == []  # nothing is wanted yet: no stream
    call_id = link.engine.subscribe(URI, link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
    assert streams.filters() == [{"resourceSubscriptions": [URI]}]
    assert "resources/subscribe" not in server.methods()  # M71
    listen_id = streams.listens[0]["id"]
    update = note("notifications/resources/updated", {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}, "uri": URI})
    link.engine.response_data(listen_exchange(link, listen_id), sse(update), link.now)
    link.pump()
    assert link.of_type(ResourceUpdated) == [ResourceUpdated(server="srv", uri=URI)]
    assert server.problems == []


def test_F2_changing_the_set_opens_the_new_stream_before_closing_the_old() -> None:
    _, streams, link = modern()
    assert isinstance(ended(link, link.engine.subscribe(URI, link.now)), RequestSucceeded)
    first = listen_exchange(link, streams.listens[0]["id"])
    streams.silent = True  # the next stream is not acknowledged yet
    call_id = link.engine.subscribe(OTHER, link.now, timeout=5)
    link.pump()
    assert streams.filters()[-1] == {"resourceSubscriptions": [URI, OTHER]}
    assert first not in link.aborted  # the old stream still carries URI
    second_id = streams.listens[-1]["id"]
    meta = {"io.modelcontextprotocol/subscriptionId": second_id}
    agreed = note(ACK, {"_meta": meta, "notifications": {"resourceSubscriptions": [URI, OTHER]}})
    link.engine.response_data(listen_exchange(link, second_id), sse(agreed), link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
    assert first in link.aborted  # M68: closed once the new one is up
    assert link.engine.session.subscriptions.uris == (URI, OTHER)


def test_F2_M64_a_uri_the_server_leaves_out_of_its_acknowledgement_fails_with_NotOffered() -> None:
    _, streams, link = modern()
    streams.refuse = {OTHER}
    event = ended(link, link.engine.subscribe(OTHER, link.now))
    assert isinstance(event, CallFailed) and isinstance(event.error, NotOffered)
    assert event.error.uri == OTHER
    assert link.engine.session.subscriptions.uris == ()


def test_F2_unsubscribing_the_last_uri_closes_the_stream() -> None:
    _, streams, link = modern()
    assert isinstance(ended(link, link.engine.subscribe(URI, link.now)), RequestSucceeded)
    xid = listen_exchange(link, streams.listens[0]["id"])
    assert isinstance(ended(link, link.engine.subscribe(URI, link.now, on=False)), RequestSucceeded)
    assert xid in link.aborted and len(streams.listens) == 1


def test_F2_a_subscription_not_acknowledged_in_time_fails_with_CallTimeout() -> None:
    _, streams, link = modern()
    streams.silent = True
    call_id = link.engine.subscribe(URI, link.now, timeout=2)
    link.advance(2.5)
    event = ended(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, CallTimeout)
    assert link.engine.session.subscriptions.uris == ()


def test_F2_M67_a_lost_stream_is_opened_again_with_the_subscriptions() -> None:
    _, streams, link = modern()
    assert isinstance(ended(link, link.engine.subscribe(URI, link.now)), RequestSucceeded)
    xid = listen_exchange(link, streams.listens[0]["id"])
    from mcpcore.base._failure import FailureKind, TransportFailure

    link.engine.response_failed(xid, TransportFailure(FailureKind.RESET), link.now)
    link.advance(1.5)
    assert streams.filters() == [{"resourceSubscriptions": [URI]}] * 2


def test_F2_F5_M63_an_on_list_changed_host_asks_for_every_list_the_server_says_may_change() -> None:
    _, streams, link = modern(list_events=True)
    assert streams.filters() == [{"resourcesListChanged": True, "promptsListChanged": True}]
    listen_id = streams.listens[0]["id"]
    changed = [note(f"notifications/{w}/list_changed") for w in ("resources", "prompts")]
    link.engine.response_data(listen_exchange(link, listen_id), sse(*changed), link.now)
    link.pump()
    assert [e.what for e in link.events if isinstance(e, (ResourcesListChanged, PromptsListChanged))] == [
        "resources",
        "prompts",
    ]


# --- E7, F9: re-lists served from a fresh answer, only when the host opts in ----------------------


def cached_server(ttl_ms: int = 60_000, scope: str = "public") -> ModernFake:
    server = ModernFake(capabilities=CAPS)

    def hook(message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        hints = {"resultType": "complete", "ttlMs": ttl_ms, "cacheScope": scope}
        if message["method"] == "tools/list":
            result = {**hints, "tools": server.tools}
        elif message["method"] == "resources/list":
            result = {**hints, "resources": [{"uri": URI, "name": "config"}]}
        else:
            return None
        return Reply(200, [(b"content-type", b"application/json")], [json.dumps(rpc(message["id"], result)).encode()])

    server.hook = hook
    return server


def test_E7_F9_refresh_within_ttl_is_served_from_the_catalogue_only_when_asked() -> None:
    from mcpcore import ToolsRefreshed

    for honour in (False, True):
        server = cached_server()
        link = link_to(server, honour_cache_hints=honour)
        listed = server.methods().count("tools/list")
        refresh_id = link.engine.refresh(link.now)
        link.pump()
        [done] = [e for e in link.of_type(ToolsRefreshed) if e.refresh_id == refresh_id]
        assert done.catalogue is link.engine.catalogue and done.report.untouched == ("srv/echo",)
        assert server.methods().count("tools/list") == listed + (0 if honour else 1)
    link.advance(61)  # M78: past the ttl, the server is asked again
    link.engine.refresh(link.now)
    link.pump()
    assert server.methods().count("tools/list") == listed + 1


def test_E7_M66_M79_a_list_changed_notification_ends_the_freshness() -> None:
    from mcpcore import Notification
    from mcpcore.features._resources import RESOURCES_LIST
    from mcpcore.wire._requests import Ask

    server = cached_server()
    link = link_to(server, honour_cache_hints=True)
    ask = Ask(RESOURCES_LIST, None, "srv")
    first = ended(link, link.engine.request(ask, link.now)).value
    again = ended(link, link.engine.request(ask, link.now)).value
    assert again is first and server.methods().count("resources/list") == 1
    link.engine.session.receive_message(Notification(method="notifications/resources/list_changed"), link.now)
    ended(link, link.engine.request(ask, link.now))
    assert server.methods().count("resources/list") == 2
    link.engine.session.receive_message(Notification(method="notifications/tools/list_changed"), link.now)
    link.engine.refresh(link.now)
    link.pump()
    assert server.methods().count("tools/list") == 2


@pytest.mark.parametrize(("scope", "reused"), [("private", False), ("public", True)])
def test_F9_M78_with_per_request_credentials_a_private_answer_is_never_reused(scope: str, reused: bool) -> None:
    from mcpcore.features._resources import RESOURCES_LIST
    from mcpcore.wire._requests import Ask

    server = cached_server(scope=scope)
    link = link_to(server, honour_cache_hints=True, credentials_vary=True)
    for _ in range(2):
        ended(link, link.engine.request(Ask(RESOURCES_LIST, None, "srv"), link.now))
    assert server.methods().count("resources/list") == (1 if reused else 2)


def test_E7_M80_a_handshake_era_servers_hints_are_ignored() -> None:
    server = SubscribingServer()

    def hinted(seen: Any) -> Reply | None:
        message = seen.message or {}
        if message.get("method") == "tools/list":
            body = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": server.tools, "ttlMs": 60_000, "cacheScope": "public"}}
            return Reply(200, [(b"content-type", b"application/json")], [json.dumps(body).encode()])
        return None

    server.hook = hinted
    link = legacy_link(server, honour_cache_hints=True)
    link.engine.refresh(link.now)
    link.pump()
    assert [s.message["method"] for s in server.seen if s.message and "method" in s.message].count("tools/list") == 2


def test_E7_the_client_options_reach_the_session() -> None:
    from mcpcore import prepare_client

    setup = prepare_client(
        "s", {"url": "https://example.test/mcp"}, {"honour_cache_hints": True, "headers": lambda m, s: {}},
        env={}, home="/nonexistent",
    )
    assert setup.session.honour_cache_hints and setup.session.credentials_vary
    plain = prepare_client("s", {"url": "https://example.test/mcp"}, {}, env={}, home="/nonexistent")
    assert not plain.session.honour_cache_hints and not plain.session.credentials_vary


def test_F2_M65_an_acknowledgement_of_another_subscription_changes_nothing() -> None:
    _, streams, link = modern()
    streams.silent = True
    call_id = link.engine.subscribe(URI, link.now, timeout=5)
    link.pump()
    listen_id = streams.listens[0]["id"]
    other = note(ACK, {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id + 100}, "notifications": {"resourceSubscriptions": [URI]}})
    link.engine.response_data(listen_exchange(link, listen_id), sse(other), link.now)
    link.pump()
    assert not [e for e in link.events if getattr(e, "call_id", None) == call_id]  # still waiting
    mine = note(ACK, {"_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}, "notifications": {"resourceSubscriptions": [URI]}})
    link.engine.response_data(listen_exchange(link, listen_id), sse(mine), link.now)
    assert isinstance(ended(link, call_id), RequestSucceeded)
