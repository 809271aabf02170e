"""V4: tool filters. ``include=`` / ``exclude=`` glob lists per client and per hub entry;
a filtered tool is never listed, registered or callable (``UnknownTool`` names the
filter) and a re-list's diff treats it as absent; the CLI's ``--include``/``--exclude``.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client
from mcpcore import Catalogue, InvalidValue, ToolFilter, UnknownTool, tool_filter
from mcpcore_demo import DemoServer
from peers import sdk_server

NAME = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.",
    min_size=1,
    max_size=20,
)
GLOB = st.text(alphabet="abcdeABCDE*?_", min_size=1, max_size=6)


def _offered_reference(
    name: str, tool_id: str, include: list[str] | None, exclude: list[str]
) -> bool:
    def hit(patterns: list[str]) -> bool:
        return any(
            fnmatch.fnmatchcase((tool_id if "/" in p else name).lower(), p.lower())
            for p in patterns
        )

    return (include is None or hit(include)) and not hit(exclude)


@given(
    name=NAME,
    include=st.none() | st.lists(GLOB, min_size=1, max_size=3),
    exclude=st.lists(GLOB, max_size=3),
)
def test_V4_filter_is_include_minus_exclude_case_insensitively(
    name: str, include: list[str] | None, exclude: list[str]
) -> None:
    made = tool_filter(include, exclude, server="s")
    tool_id = f"s/{name.lower()}"
    offered = made is None or made.hides(name, tool_id) is None
    assert offered == _offered_reference(name, tool_id, include, exclude)
    # case: neither the name's case nor the patterns' changes the outcome
    upper = tool_filter(
        None if include is None else [p.upper() for p in include],
        [p.upper() for p in exclude],
        server="s",
    )
    assert (upper is None or upper.hides(name.swapcase(), tool_id) is None) == offered
    # exclude wins over include
    if made is not None and any(fnmatch.fnmatchcase(name.lower(), p.lower()) for p in exclude):
        assert made.hides(name, tool_id) is not None


@given(name=NAME, glob=GLOB, server=st.sampled_from(["github", "fs"]))
def test_V4_a_pattern_with_the_separator_matches_the_whole_id(
    name: str, glob: str, server: str
) -> None:
    tool_id = f"{server}/{name.lower()}"
    by_name = ToolFilter(include=(glob.lower(),))
    by_id = ToolFilter(include=(f"github/{glob.lower()}",))
    if server == "github":
        assert (by_id.hides(name, tool_id) is None) == (by_name.hides(name, tool_id) is None)
    else:
        assert by_id.hides(name, tool_id) is not None  # another server's pattern never matches
    custom = ToolFilter(exclude=(f"{server}::*",), separator="::")
    assert custom.hides(name, f"{server}::{name.lower()}") is not None


def test_V4_options_of_the_wrong_shape_are_refused() -> None:
    with pytest.raises(InvalidValue, match="list of glob patterns"):
        tool_filter("search*", None, server="s")
    with pytest.raises(InvalidValue, match="non-empty"):
        tool_filter([""], None, server="s")
    with pytest.raises(InvalidValue, match="non-empty"):
        tool_filter(None, [" x"], server="s")
    # a mapping gives each server its own list; a server it does not name has none
    assert tool_filter({"github": ["a*"]}, None, server="fs") is None
    only = tool_filter({"github": ["a*"]}, None, server="github")
    assert only is not None and only.include == ("a*",)


def test_V4_catalogue_leaves_filtered_tools_out_and_the_diff_treats_them_as_absent() -> None:
    listing = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "add", "image")]
    full = Catalogue.from_listing("demo", listing)
    hiding = tool_filter(None, ["im*"], server="demo")
    filtered = Catalogue.from_listing("demo", listing, tool_filter=hiding)
    assert filtered.ids() == ("demo/echo", "demo/add")
    assert "demo/image" not in filtered and filtered.filtered["demo/image"].startswith(
        "the exclude"
    )
    report = full.diff(filtered)
    assert report.removed == ("demo/image",) and report.added == ()
    assert filtered.diff(full).added == ("demo/image",)


# --- through the drivers -------------------------------------------------------------------


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.anyio
async def test_V4_a_filtered_tool_is_not_listed_registered_or_callable(driver: str) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(
            driver,
            "demo",
            {"url": running.url},
            include=["e*", "a*", "slow"],
            exclude=["embedded*"],
        ) as client:
            assert (await client.ready(10)).ok
            ids = [tool.id for tool in client.tools]
            assert ids == ["demo/echo", "demo/add", "demo/audio", "demo/slow"]
            registry: dict[str, object] = {}
            client.register_into(registry)
            assert sorted(registry) == sorted(ids)
            with pytest.raises(
                UnknownTool, match=r"'demo/image' is filtered out: the include filter"
            ):
                await client.call("demo/image")
            with pytest.raises(
                UnknownTool,
                match=r"'demo/embedded_text' is filtered out: the exclude filter 'embedded\*'",
            ):
                await client.call("demo/embedded_text")
            assert running.server.received and not any(
                r.rpc_method == "tools/call" for r in running.server.received
            )
            # a re-list keeps the filter: the server's new tool that the filter hides stays out
            tools = running.server.tools
            running.server.set_tools(
                [
                    *tools,
                    (
                        {"name": "embedded_more", "inputSchema": {"type": "object"}},
                        tools[0].handler,
                    ),
                ]
            )
            report = await client.sync_into(registry)
            assert report.added == () and "demo/embedded_more" not in registry
            assert (await client.call("demo/echo", {"text": "ok"})).text == "ok"


@pytest.mark.anyio
@pytest.mark.realpeer
async def test_V4_filters_against_the_sdk_server(driver: str) -> None:
    with sdk_server("stateful-json") as peer:
        async with open_client(driver, "sdk", {"url": peer.url}, exclude=["sdk/a*"]) as client:
            assert (await client.ready(20)).ok
            names = {tool.name for tool in client.tools}
            assert "echo" in names and not any(n.startswith("a") for n in names)
            with pytest.raises(UnknownTool, match="filtered out"):
                await client.call("sdk/add", {"a": 1, "b": 2})
            assert "call add" not in peer.events()


def test_V4_hub_entries_take_their_own_lists() -> None:
    with DemoServer().serve_in_thread() as one, DemoServer().serve_in_thread() as two:
        document = json.dumps({"mcpServers": {"one": {"url": one.url}, "two": {"url": two.url}}})
        with mcpcore_threaded.McpHub.from_text(
            document, include={"one": ["echo"]}, exclude=["two/a*"]
        ) as hub:
            assert all(a.ok for a in hub.ready(timeout=10).values())
            ids = {tool.id for tool in hub.tools}
            assert {t for t in ids if t.startswith("one/")} == {"one/echo"}
            assert "two/echo" in ids and not any(t.startswith("two/a") for t in ids)
            with pytest.raises(UnknownTool, match="filtered out"):
                hub.call("two/add", {"a": 1, "b": 2})

        async def on_anyio() -> None:
            async with mcpcore_anyio.McpHub.from_text(document, include=["*/echo"]) as hub:
                await hub.ready(timeout=10)
                assert sorted(tool.id for tool in hub.tools) == ["one/echo", "two/echo"]

        anyio.run(on_anyio)


# --- the command line -------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpcore_cli", *args], capture_output=True, text=True, timeout=60
    )


def test_V4_cli_include_and_exclude() -> None:
    with DemoServer().serve_in_thread() as running:
        listed = _cli(
            "tools", running.url, "--include", "e*,a*", "--exclude", "embedded*", "--json"
        )
        assert listed.returncode == 0, listed.stderr
        assert [tool["name"] for tool in json.loads(listed.stdout)] == ["echo", "add", "audio"]
        refused = _cli("call", running.url, "image", "--exclude", "image")
        assert refused.returncode == 2
        assert (
            "tool 'server/image' is filtered out: the exclude filter 'image' hides it"
            in refused.stderr
        )
        called = _cli("call", running.url, "echo", '{"text": "kept"}', "--include", "echo")
        assert called.returncode == 0 and called.stdout.strip() == "kept"
