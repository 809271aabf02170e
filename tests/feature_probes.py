"""The beyond-tools rows of docs/interop.md, probed live against a real peer (F2–F8).

``probe_features(face, spec, record, sent, logs)`` walks every row of
``FEATURES`` against one peer on one driver in one era: each row is a few
assertions, and a row that held is recorded (``FeatureRecord``) with the
driver and the protocol revision the client found. The records of a test run
are merged into ``build/interop_features.json``; ``scripts/interop_table.py``
renders them as the "Beyond tools" table of docs/interop.md (never written by
hand). A row a peer cannot show is in ``NOT_SHOWN`` with the reason.

``Sent`` is a ``headers=`` callable (V3) that counts what the client sent,
method by method, on any peer: so "refused before sending" and "followed
every page" are checked from the client's side of the wire, the same way for
peers with and without an events file. ``Heard`` keeps what reached the host's
``on_resource_updated=`` and ``on_list_changed=`` hooks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, Face, wait_for
from mcpcore import (
    BlobContents,
    InvalidArguments,
    Listing,
    LogMessage,
    NotOffered,
    Prompt,
    ReadResult,
    Resource,
    ResourceBlock,
    ResourceLinkBlock,
    ResourceNotFound,
    ResourceTemplate,
    ResourceUpdated,
    TextContents,
)
from records import update_json

RESULTS = Path(__file__).resolve().parents[1] / "build" / "interop_features.json"

# The peers, as the table's columns.
SDK = "Python SDK server (mcp 2.3; JSON and SSE)"
TS = "TypeScript SDK server (2.4)"
FASTMCP = "fastmcp 4.2"
EVERYTHING = "server-everything (2026.8.31)"
PEERS = [SDK, TS, FASTMCP, EVERYTHING]

FEATURES = [
    "instructions",
    "list resources (every page)",
    "resources over several pages",
    "list resource templates",
    "read a text resource",
    "read a blob (decoded on access)",
    "read a template expanded (RFC 6570)",
    "read a tool's resource_link",
    "unknown URI: ResourceNotFound, client usable after",
    "list prompts",
    "get a prompt with arguments",
    "a prompt's embedded resource",
    "non-string prompt arguments refused, nothing sent",
    "complete a prompt argument",
    "complete a template variable",
    "logs (on_log, log_level)",
    "a resource list change reaches on_list_changed",
    "a prompt list change reaches on_list_changed",
    "subscribe: an update reaches on_resource_updated, unsubscribe stops it",
]
LIST_CHANGED = {"resources": FEATURES[-3], "prompts": FEATURES[-2]}  # by on_list_changed's ``what``
SUBSCRIBE = FEATURES[-1]

NOT_SHOWN: dict[tuple[str, str], str] = {
    (TS, "resources over several pages"): "the server never pages",
    (EVERYTHING, "resources over several pages"): "the server never pages",
    (FASTMCP, SUBSCRIBE): "fastmcp 4.2 has no resource subscriptions: no resources.subscribe declared",
    (EVERYTHING, LIST_CHANGED["prompts"]): "its prompts never change",
}
# A row a peer shows in one era only: the other era, and why.
NOT_SHOWN_IN: dict[tuple[str, str], str] = {
    (TS, SUBSCRIBE): "handshake era n/a (served statelessly: no session, no GET stream to carry an update; "
    "no resources.subscribe declared)",
}


class Sent:
    """A ``headers=`` callable (V3) that counts the requests the client sends, by method
    (``None`` for a GET or DELETE); it adds no header."""

    def __init__(self) -> None:
        self.methods: Counter[str | None] = Counter()

    def __call__(self, method: str | None, server: str) -> Mapping[str, str]:
        self.methods[method] += 1
        return {}


class Heard:
    """What reached the host's ``on_resource_updated=`` and ``on_list_changed=`` hooks."""

    def __init__(self) -> None:
        self.updates: list[ResourceUpdated] = []
        self.changes: list[tuple[str, str]] = []

    def list_changed(self, server: str, what: str) -> None:
        self.changes.append((server, what))


@dataclass(frozen=True)
class Changes:
    """How a peer is made to announce changes, for the last three rows of FEATURES."""

    # a tool call (name, arguments) after which the server announces these lists changed;
    # each call is new (a peer may need a fresh name each time)
    change_lists: Callable[[], tuple[str, dict[str, Any]]]
    lists: frozenset[str]  # "resources", "prompts"
    uri: str | None = None  # a resource to subscribe to; None: the peer offers no subscriptions
    subscribe_eras: frozenset[str] | None = None  # the eras it offers them in (None: every era)
    # tool calls after which the server announces an update of uri to its subscribers
    touch: tuple[tuple[str, dict[str, Any]], ...] = ()
    quiet: tuple[tuple[str, dict[str, Any]], ...] = ()  # calls that stop any further updates


@dataclass
class FeatureRecord:
    """The rows that held for one peer on one driver, in the era the client found."""

    peer: str
    driver: str
    era: str = ""
    held: list[str] = field(default_factory=list)

    def ok(self, feature: str) -> None:
        assert feature in FEATURES, feature
        self.held.append(feature)

    def save(self) -> None:
        if not self.held:
            return
        def change(data: dict[str, Any]) -> None:
            rows = data.setdefault(self.peer, {})
            for feature in self.held:
                cell = rows.setdefault(feature, {"drivers": [], "eras": []})
                cell["drivers"] = sorted({*cell["drivers"], self.driver}, key=DRIVERS.index)
                cell["eras"] = sorted({*cell["eras"], self.era})

        update_json(RESULTS, change)


@contextmanager
def recording(peer: str, driver: str) -> Iterator[FeatureRecord]:
    """Record the rows that held, even when a later one fails (the test fails then)."""
    record = FeatureRecord(peer, driver)
    try:
        yield record
    finally:
        record.save()


@dataclass(frozen=True)
class PeerSpec:
    """What one peer offers, for ``probe_features``."""

    name: str  # the client's name: tool ids are "<name>/<tool>"
    instructions: str  # the instructions start with this
    resources: Mapping[str, str]  # uri -> mime type, at least these are listed
    text: tuple[str, str]  # a text resource's uri, and the start of its text
    blob: tuple[str, bytes]  # a blob resource's uri, and the start of its bytes
    template: tuple[str, Mapping[str, str], str]  # uriTemplate, values, start of the text read
    link: tuple[str, dict[str, Any]]  # a tool returning a resource_link, its arguments
    prompt: tuple[str, dict[str, str], str]  # name, arguments, start of the first message
    embedded: tuple[str, dict[str, str], str]  # a prompt embedding a resource, its uri
    complete_prompt: tuple[str, str, str, dict[str, str] | None, tuple[str, ...]]
    complete_template: tuple[str, str, tuple[str, ...]]  # variable, typed, values
    log_tool: tuple[str, dict[str, Any]]  # a tool that makes the server log
    missing: str  # a URI the server has no resource at
    min_pages: int = 1  # resources/list requests a full listing takes at least
    changes: Changes | None = None  # how the peer announces changes (None: not probed)


async def probe_features(
    face: Face,
    spec: PeerSpec,
    record: FeatureRecord,
    sent: Sent,
    logs: list[LogMessage] | None,
    heard: Heard,
) -> None:
    """Every row of FEATURES against the peer behind ``face`` (opened with
    ``client_options(sent, logs, heard)``: ``on_log`` unless ``logs`` is None, the
    peer cannot log in this mode)."""
    client = face.client

    async def run(name: str, *args: Any) -> Any:
        return await face._run(getattr(client, name), *args)

    with anyio.fail_after(60):
        assert (await face.ready(30)).ok
        record.era = str(client.protocol_version)

        assert isinstance(client.instructions, str) and client.instructions.startswith(spec.instructions)
        record.ok("instructions")

        lists_before = sent.methods["resources/list"]
        resources = await run("list_resources")
        assert isinstance(resources, Listing) and all(isinstance(r, Resource) for r in resources)
        assert {r.uri: r.mime_type for r in resources}.items() >= dict(spec.resources).items()
        record.ok("list resources (every page)")
        if spec.min_pages > 1:
            assert sent.methods["resources/list"] - lists_before >= spec.min_pages
            record.ok("resources over several pages")

        templates = await run("list_resource_templates")
        [template] = [t for t in templates if t.uri_template == spec.template[0]]
        assert isinstance(template, ResourceTemplate)
        record.ok("list resource templates")

        text = await run("read_resource", spec.text[0])
        assert isinstance(text, ReadResult) and isinstance(text.contents[0], TextContents)
        assert text.text.startswith(spec.text[1]), text.text
        record.ok("read a text resource")

        blob = await run("read_resource", spec.blob[0])
        [part] = blob.contents
        assert isinstance(part, BlobContents) and part.data.startswith(spec.blob[1])
        record.ok("read a blob (decoded on access)")

        uri = template.expand(spec.template[1])  # F3: our expansion, the server's routing
        item = await run("read_resource", uri)
        assert item.text.startswith(spec.template[2]), item.text
        record.ok("read a template expanded (RFC 6570)")

        output = await face.call(f"{spec.name}/{spec.link[0]}", spec.link[1])
        links = [b for b in output.content if isinstance(b, ResourceLinkBlock)]
        assert links, output.content
        for link in links:  # F4: read through read_resource(link.uri); nothing fetched on its own
            linked = await run("read_resource", link.uri)
            assert linked.contents and linked.contents[0].uri == link.uri
        record.ok("read a tool's resource_link")

        with pytest.raises(ResourceNotFound) as missing:
            await run("read_resource", spec.missing)
        assert missing.value.uri == spec.missing
        assert (await run("read_resource", spec.text[0])).text == text.text  # still usable
        record.ok("unknown URI: ResourceNotFound, client usable after")

        prompts = await run("list_prompts")
        assert all(isinstance(p, Prompt) for p in prompts)
        by_name = {p.name: p for p in prompts}
        assert {spec.prompt[0], spec.embedded[0], spec.complete_prompt[0]} <= set(by_name)
        record.ok("list prompts")

        got = await run("get_prompt", spec.prompt[0], spec.prompt[1])
        assert got.messages and got.messages[0].text.startswith(spec.prompt[2]), got.messages
        record.ok("get a prompt with arguments")

        got = await run("get_prompt", spec.embedded[0], spec.embedded[1])
        embedded = [m.content for m in got.messages if isinstance(m.content, ResourceBlock)]
        assert embedded and embedded[0].uri == spec.embedded[2], got.messages
        record.ok("a prompt's embedded resource")

        gets_before = sent.methods["prompts/get"]
        with pytest.raises(InvalidArguments, match="must be a string"):
            await run("get_prompt", spec.prompt[0], {**spec.prompt[1], "extra": 1})
        assert sent.methods["prompts/get"] == gets_before  # refused before sending
        again = await run("get_prompt", spec.prompt[0], spec.prompt[1])
        assert again.messages[0].text.startswith(spec.prompt[2])
        record.ok("non-string prompt arguments refused, nothing sent")

        name, argument, typed, context, expected = spec.complete_prompt
        completion = await run("complete", by_name[name], argument, typed, context)
        assert completion.values == expected, completion
        record.ok("complete a prompt argument")
        argument, typed, expected = spec.complete_template
        completion = await run("complete", template, argument, typed)
        assert completion.values == expected, completion
        record.ok("complete a template variable")

        if logs is not None:
            await face.call(f"{spec.name}/{spec.log_tool[0]}", spec.log_tool[1])
            await wait_for(lambda: bool(logs), 15)
            assert all(isinstance(m, LogMessage) and m.server == spec.name for m in logs)
            record.ok("logs (on_log, log_level)")

        if spec.changes is not None:
            await probe_changes(face, spec, record, sent, heard)


async def probe_changes(face: Face, spec: PeerSpec, record: FeatureRecord, sent: Sent, heard: Heard) -> None:
    """F2, F5: a list change reaches ``on_list_changed``; an update of a subscribed
    resource reaches ``on_resource_updated``, and none after unsubscribing. A list
    change is also the fence: the server announces it after where an update would
    have been, on the same stream, so once it is here no update is on its way."""
    changes = spec.changes
    assert changes is not None
    client = face.client

    async def call(tool: str, arguments: dict[str, Any]) -> None:
        await face.call(f"{spec.name}/{tool}", arguments)

    async def lists_change() -> None:
        before = len(heard.changes)
        await call(*changes.change_lists())
        wanted = {(spec.name, what) for what in changes.lists}
        await wait_for(lambda: wanted <= set(heard.changes[before:]), 15)

    offered = changes.uri is not None and (changes.subscribe_eras is None or record.era in changes.subscribe_eras)
    uri = changes.uri or spec.text[0]
    if not offered:  # the reason the table gives: the server does not declare resources.subscribe
        with pytest.raises(NotOffered, match=r"resources\.subscribe"):
            await face._run(client.subscribe_resource, uri)
    if offered:
        if record.era == "2025-11-25":  # a handshake-era server sends updates on the GET stream
            await wait_for(lambda: sent.methods[None] > 0, 10)
        await face._run(client.subscribe_resource, uri)
        for touch in changes.touch:
            await call(*touch)
        await wait_for(lambda: bool(heard.updates), 15)
        assert {(u.server, u.uri) for u in heard.updates} == {(spec.name, uri)}, heard.updates
        assert all(isinstance(u, ResourceUpdated) for u in heard.updates)
        for quiet in changes.quiet:
            await call(*quiet)
    await lists_change()  # every update announced before it has arrived
    for what in sorted(changes.lists):
        record.ok(LIST_CHANGED[what])
    if offered:
        updates = len(heard.updates)
        await face._run(client.unsubscribe_resource, uri)
        for touch in changes.touch:
            await call(*touch)
        await lists_change()
        for quiet in changes.quiet:
            await call(*quiet)
        assert len(heard.updates) == updates, heard.updates[updates:]
        record.ok(SUBSCRIBE)


def client_options(
    sent: Sent, logs: list[LogMessage] | None, heard: Heard
) -> dict[str, Callable[..., Any] | str]:
    """The options ``probe_features`` needs the client opened with."""
    options: dict[str, Callable[..., Any] | str] = {
        "headers": sent,
        "on_resource_updated": heard.updates.append,
        "on_list_changed": heard.list_changed,
    }
    if logs is not None:
        options.update(on_log=logs.append, log_level="debug")
    return options
