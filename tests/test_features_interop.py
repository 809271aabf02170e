"""Resources, templates, links, prompts, completion, instructions, logs, list changes and
resource subscriptions live against the TypeScript SDK 2.x server, fastmcp 4.2 and
server-everything (F2–F8), on every driver (anyio on asyncio and trio, threaded),
in every era each peer speaks.

Each test walks every row of the "Beyond tools" table of docs/interop.md
(tests/feature_probes.py) and records the rows that held; the official Python
SDK server's runs are in tests/test_features_peers.py. One server per module,
one client per driver and era: the whole file takes a few seconds per peer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from drivers import DRIVERS, backend_of, open_client, wait_for
from feature_probes import (
    EVERYTHING,
    FASTMCP,
    TS,
    Changes,
    Heard,
    PeerSpec,
    Sent,
    client_options,
    probe_features,
    recording,
)
from mcpcore import LogMessage
from peers import MODERN_PROTOCOL_VERSION, Peer, everything_server, fastmcp_server, ts_modern_server

pytestmark = [pytest.mark.realpeer, pytest.mark.anyio]

TS_SPEC = PeerSpec(
    name="ts",
    instructions="mcpcore test peer (TypeScript SDK v2)",
    resources={"ts://greeting": "text/plain", "ts://blob": "application/octet-stream"},
    text=("ts://greeting", "hello from the ts peer"),
    blob=("ts://blob", bytes(range(16))),
    template=("ts://items/{item}", {"item": "pear"}, "item pear"),
    link=("link", {"name": "plum"}),
    prompt=("review", {"code": "x = 1", "language": "rust"}, "Please review this rust code:\nx = 1"),
    embedded=("review", {"code": "x"}, "ts://greeting"),
    complete_prompt=("review", "language", "r", {"code": "x"}, ("rust",)),
    complete_template=("item", "ap", ("apple", "apricot")),
    log_tool=("shout", {"text": "hello log"}),
    missing="ts://nowhere",
    changes=Changes(
        change_lists=lambda: ("change_lists", {}),
        lists=frozenset({"resources", "prompts"}),
        uri="ts://greeting",
        subscribe_eras=frozenset({MODERN_PROTOCOL_VERSION}),  # stateless in the handshake era
        touch=(("touch", {"uri": "ts://greeting"}),),
    ),
)
FASTMCP_SPEC = PeerSpec(
    name="fast",
    instructions="mcpcore test peer (fastmcp)",
    resources={
        "fast://greeting": "text/plain",
        "fast://blob": "application/octet-stream",
        "fast://notes/3": "text/plain",
    },
    text=("fast://greeting", "hello from the fastmcp peer"),
    blob=("fast://blob", bytes(range(16))),
    template=("fast://items/{item}", {"item": "a b/ü"}, "item a b/ü"),  # encoded by us, decoded by it
    link=("link", {"name": "plum"}),
    prompt=("review", {"code": "x = 1", "language": "rust"}, "Please review this rust code:\nx = 1"),
    embedded=("review", {"code": "x"}, "fast://greeting"),
    complete_prompt=("review", "language", "r", {"code": "x"}, ("rust",)),
    complete_template=("item", "ap", ("apple", "apricot")),
    log_tool=("shout", {"text": "hello log"}),
    missing="fast://nowhere",
    min_pages=3,  # five resources, two a page
    changes=Changes(change_lists=lambda: ("change_lists", {}), lists=frozenset({"resources", "prompts"})),
)
_gzipped = itertools.count()
# server-everything: toggle-subscriber-updates sends an update of every subscribed URI
# at once, then every 5 s until toggled again; gzip-file-as-resource registers a new
# resource (announced with resources/list_changed). Its prompts never change.
EVERYTHING_TOGGLE = ("toggle-subscriber-updates", {})
EVERYTHING_SPEC = PeerSpec(
    name="ev",
    instructions="# Everything Server",
    resources={"demo://resource/static/document/features.md": "text/markdown"},
    text=("demo://resource/static/document/features.md", "#"),
    blob=("demo://resource/dynamic/blob/1", b"Resource 1: This is a base64 blob"),
    template=("demo://resource/dynamic/text/{resourceId}", {"resourceId": "7"}, "Resource 7: "),
    link=("get-resource-links", {"count": 2}),  # a blob and a text resource
    prompt=("args-prompt", {"city": "Chicago", "state": "IL"}, "What's weather in Chicago, IL?"),
    embedded=(
        "resource-prompt",
        {"resourceType": "Text", "resourceId": "2"},
        "demo://resource/dynamic/text/2",
    ),
    complete_prompt=("completable-prompt", "name", "A", {"department": "Engineering"}, ("Alice",)),
    complete_template=("resourceId", "3", ("3",)),
    log_tool=("toggle-simulated-logging", {}),
    missing="demo://nowhere",
    changes=Changes(
        change_lists=lambda: (
            "gzip-file-as-resource",
            {"name": f"mcpcore-{next(_gzipped)}.gz", "data": "data:text/plain,hello", "outputType": "resourceLink"},
        ),
        lists=frozenset({"resources"}),
        uri="demo://resource/static/document/features.md",
        touch=(EVERYTHING_TOGGLE,),
        quiet=(EVERYTHING_TOGGLE,),
    ),
)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.fixture(scope="module")
def ts_peer() -> Iterator[Peer]:
    with ts_modern_server("dual") as peer:
        yield peer


@pytest.fixture(scope="module")
def fast_peer() -> Iterator[Peer]:
    with fastmcp_server() as peer:
        yield peer


@pytest.fixture(scope="module")
def everything_peer() -> Iterator[Peer]:
    with everything_server() as peer:
        yield peer


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F2_F3_F4_F5_F6_F7_F8_the_typescript_sdk_server_on_every_driver_in_both_eras(
    driver: str, ts_peer: Peer, protocol: str
) -> None:
    sent, logs, heard = Sent(), list[LogMessage](), Heard()
    options = client_options(sent, logs, heard)
    with recording(TS, driver) as record:
        async with open_client(driver, "ts", {"url": ts_peer.url}, protocol=protocol, **options) as face:
            await probe_features(face, TS_SPEC, record, sent, logs, heard)
            assert record.era == (MODERN_PROTOCOL_VERSION if protocol == "auto" else "2025-11-25")


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F2_F3_F4_F5_F6_F7_F8_fastmcp_on_every_driver_in_both_eras(driver: str, fast_peer: Peer, protocol: str) -> None:
    sent, logs, heard = Sent(), list[LogMessage](), Heard()
    options = client_options(sent, logs, heard)
    with recording(FASTMCP, driver) as record:
        async with open_client(driver, "fast", {"url": fast_peer.url}, protocol=protocol, **options) as face:
            await probe_features(face, FASTMCP_SPEC, record, sent, logs, heard)
            assert record.era == (MODERN_PROTOCOL_VERSION if protocol == "auto" else "2025-11-25")


async def test_F2_F3_F4_F5_F6_F7_F8_server_everything_on_every_driver(driver: str, everything_peer: Peer) -> None:
    """server-everything speaks the handshake era only: the probe finds 2025-11-25. Its
    log messages come on the standalone stream, so the client's GET is waited for."""
    sent, logs, heard = Sent(), list[LogMessage](), Heard()
    options = client_options(sent, logs, heard)
    with recording(EVERYTHING, driver) as record:
        async with open_client(driver, "ev", {"url": everything_peer.url}, **options) as face:
            assert (await face.ready(30)).ok
            await wait_for(lambda: sent.methods[None] > 0, 10)  # the GET stream is open
            await probe_features(face, EVERYTHING_SPEC, record, sent, logs, heard)
            assert record.era == "2025-11-25"
