"""The framework adapters (LangChain, pydantic-ai, OpenAI Agents SDK), with each real
framework installed and no model: tools are invoked through the framework's own tool
interface, against the demo server and the official SDK server, on asyncio and on
threads where the framework has a sync path.

Each adapter is tested with an image result, an ``isError`` result, a timeout and a
hub in which one server is down (its tools absent, the others working).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("langchain_core")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from agents.tool_context import ToolContext
from langchain_core.tools import ToolException
from pydantic_ai import Agent, BinaryContent, ModelRetry, ToolFailed
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import mcpcore
import mcpcore_anyio
import mcpcore_threaded
from mcpcore import Catalogue, Tool
from mcpcore_demo import IMAGE_PNG, DemoServer, RunningServer
from mcpcore_langchain import tools_from as langchain_tools
from mcpcore_openai_agents import strict_schema
from mcpcore_openai_agents import tools_from as agents_tools
from mcpcore_pydantic_ai import McpcoreToolset
from mcpcore_tooling import MAX_NAME, provider_name, provider_names
from peers import free_port, sdk_server

READY = 20.0
SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ESCAPE = "bad \x1b[31mred"  # a control sequence a terminal would obey


@pytest.fixture(scope="module")
def demo() -> Iterator[RunningServer]:
    with DemoServer().serve_in_thread() as running:
        yield running


def _down_url() -> str:
    return f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there


def _recording(
    running: RunningServer, tools: dict[str, dict[str, Any]], seen: list[tuple[str, Any]]
) -> None:
    """Serve ``tools`` (name → input schema); each call's name and arguments, as the
    server received them, go to ``seen``."""

    def handler_for(name: str) -> Any:
        async def handler(arguments: dict[str, Any], ctx: Any) -> Any:
            seen.append((name, arguments))
            return {"content": [{"type": "text", "text": f"{name} ran"}]}

        return handler

    running.server.set_tools(
        [({"name": n, "inputSchema": schema}, handler_for(n)) for n, schema in tools.items()],
        notify=False,
    )


# --- names (shared by all three) ---------------------------------------------------------


def _tool(server: str, name: str) -> Tool:
    catalogue = Catalogue.from_listing(server, [{"name": name, "inputSchema": {"type": "object"}}])
    (tool,) = catalogue.tools
    return tool


_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=128)


@given(server=_SEGMENT, name=_SEGMENT)
def test_provider_names_are_safe_bounded_and_stable(server: str, name: str) -> None:
    tool = _tool(server, name)
    made = provider_name(tool)
    assert SAFE.match(made) and len(made) <= MAX_NAME
    assert made == provider_name(tool)
    if len(tool.id) + 1 <= MAX_NAME and "." not in tool.id:
        assert made == tool.id.replace("/", "__")


def test_provider_name_collision_keeps_the_first_and_warns_naming_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcpcore.tooling"):
        named = provider_names([_tool("s", "a.b"), _tool("s", "a_b"), _tool("s", "c")])
        assert provider_names([_tool("s", "a.b"), _tool("s", "a_b")]).keys() == {"s__a_b"}
    assert {name: tool.id for name, tool in named.items()} == {"s__a_b": "s/a.b", "s__c": "s/c"}
    (warned,) = [r.getMessage() for r in caplog.records if r.name == "mcpcore.tooling"]
    assert "'s/a_b'" in warned and "'s/a.b'" in warned  # once, however often it is read


def test_one_servers_colliding_tools_leave_every_adapters_other_tools(
    demo: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    """R5: a server listing both ``get.item`` and ``get_item`` loses the second of
    them (with a warning), not every server's tools."""
    seen: list[tuple[str, Any]] = []
    with DemoServer().serve_in_thread() as twin:
        _recording(twin, {"get.item": {"type": "object"}, "get_item": {"type": "object"}}, seen)
        entries = {"mcpServers": {"demo": {"url": demo.url}, "twin": {"url": twin.url}}}
        with (
            caplog.at_level(logging.WARNING, logger="mcpcore.tooling"),
            mcpcore_threaded.McpHub.from_text(json.dumps(entries)) as hub,
        ):
            assert all(a.ok for a in hub.ready(timeout=READY).values())
            chain = {tool.name: tool for tool in langchain_tools(hub)}
            agents = {tool.name: tool for tool in agents_tools(hub)}
            offered = set(asyncio.run(McpcoreToolset(hub).get_tools(None)))  # type: ignore[arg-type]
            assert set(chain) == set(agents) == offered
            assert "twin__get_item" in offered and "demo__echo" in offered
            assert chain["twin__get_item"].metadata["mcp_tool_id"] == "twin/get.item"
            chain["twin__get_item"].invoke({})
            asyncio.run(
                agents["twin__get_item"].on_invoke_tool(_context("twin__get_item", "{}"), "{}")
            )
    assert [name for name, _ in seen] == ["get.item", "get.item"]  # the first one wins
    warned = [r.getMessage() for r in caplog.records if r.name == "mcpcore.tooling"]
    assert len(warned) == 1 and "'twin/get_item'" in warned[0] and "'twin/get.item'" in warned[0]


# --- LangChain -----------------------------------------------------------------------------


def test_langchain_invoke_on_threads_gives_content_artifact_and_metadata(
    demo: RunningServer,
) -> None:
    with mcpcore_threaded.McpClient("demo", {"url": demo.url}, call_timeout=30) as client:
        assert client.ready(timeout=READY).ok
        tools = {tool.name: tool for tool in langchain_tools(client)}
        add = tools["demo__add"]
        assert add.args_schema == dict(client.tools[1].parameters)
        message = add.invoke(
            {"type": "tool_call", "id": "c1", "name": add.name, "args": {"a": 2, "b": 3}}
        )
        assert message.content[0]["text"] == "5"
        assert message.artifact.structured == {"sum": 5}
        assert add.metadata == {
            "mcp_server": "demo",
            "mcp_tool_id": "demo/add",
            "mcp_tool_name": "add",
            "timeout": 30,
            "read_only": add.metadata["read_only"],
        }
        (image,) = tools["demo__image"].invoke({})
        assert image["type"] == "image" and image["mime_type"] == "image/png"
        assert base64.b64decode(image["base64"]) == IMAGE_PNG
        with pytest.raises(ToolException) as failed:
            tools["demo__fail"].invoke({"message": ESCAPE})
        assert "\x1b" not in str(failed.value) and "red" in str(failed.value)


def test_langchain_ainvoke_on_asyncio_and_sync_invoke_refused(demo: RunningServer) -> None:
    async def main() -> None:
        async with mcpcore_anyio.McpClient("demo", {"url": demo.url}) as client:
            assert (await client.ready(timeout=READY)).ok
            tools = {tool.name: tool for tool in langchain_tools(client)}
            out = await tools["demo__echo"].ainvoke({"text": "hi"})
            assert out[0]["text"] == "hi"
            with pytest.raises(ToolException, match="failed on purpose"):
                await tools["demo__fail"].ainvoke({})
            with pytest.raises(TypeError, match="call it with ainvoke"):
                await asyncio.to_thread(tools["demo__echo"].invoke, {"text": "x"})

    asyncio.run(main())


def test_langchain_arguments_named_like_langchains_own_reach_the_server() -> None:
    """R1: LangChain fills ``config`` and ``run_manager`` (and ``self``, ``callbacks``)
    itself; a tool's parameter of that name is offered as ``config_`` (and so on)
    and arrives at the server under its own name, on invoke and on ainvoke."""
    schema = {
        "type": "object",
        "properties": {
            "config": {"type": "object"},
            "run_manager": {"type": "string"},
            "self": {"type": "string"},
            "callbacks": {"type": "string"},
            "config_": {"type": "string"},  # taken: config becomes config__
            "plain": {"type": "integer"},
        },
        "required": ["config", "plain"],
    }
    sent = {
        "config": {"depth": 2},
        "run_manager": "rm",
        "self": "me",
        "callbacks": "cb",
        "config_": "mine",
        "plain": 1,
    }
    seen: list[tuple[str, Any]] = []
    with DemoServer().serve_in_thread() as running:
        _recording(running, {"reserved": schema}, seen)
        with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
            assert client.ready(timeout=READY).ok
            (tool,) = langchain_tools(client)
            offered = tool.args_schema
            assert isinstance(offered, dict)
            assert list(offered["properties"]) == [
                "config__",
                "run_manager_",
                "self_",
                "callbacks_",
                "config_",
                "plain",
            ]
            assert offered["required"] == ["config__", "plain"]
            as_offered = {
                "config__": {"depth": 2},
                "run_manager_": "rm",
                "self_": "me",
                "callbacks_": "cb",
                "config_": "mine",
                "plain": 1,
            }
            call = {"type": "tool_call", "id": "c1", "name": tool.name, "args": as_offered}
            assert tool.invoke(call).content[0]["text"] == "reserved ran"

        async def on_asyncio() -> None:
            async with mcpcore_anyio.McpClient("demo", {"url": running.url}) as client:
                assert (await client.ready(timeout=READY)).ok
                (tool,) = langchain_tools(client)
                await tool.ainvoke(as_offered)

        asyncio.run(on_asyncio())
    assert seen == [("reserved", sent), ("reserved", sent)]


def test_langchain_timeout_is_a_tool_exception(demo: RunningServer) -> None:
    with mcpcore_threaded.McpClient("demo", {"url": demo.url}, call_timeout=0.5) as client:
        assert client.ready(timeout=READY).ok
        slow = {tool.name: tool for tool in langchain_tools(client)}["demo__slow"]
        with pytest.raises(ToolException, match="did not finish within"):
            slow.invoke({"steps": 50, "delay": 0.2})


def test_langchain_hub_with_a_server_down_offers_the_others(demo: RunningServer) -> None:
    entries = {"mcpServers": {"demo": {"url": demo.url}, "gone": {"url": _down_url()}}}
    with mcpcore_threaded.McpHub.from_text(json.dumps(entries), startup_timeout=2) as hub:
        ready = hub.ready(timeout=5)
        assert ready["demo"].ok and not ready["gone"].ok
        tools = {tool.name: tool for tool in langchain_tools(hub)}
        assert tools and all(name.startswith("demo__") for name in tools)
        assert tools["demo__echo"].invoke({"text": "still here"})[0]["text"] == "still here"


@pytest.mark.realpeer
def test_langchain_against_the_sdk_server() -> None:
    with sdk_server("stateful-json") as peer:

        async def main() -> None:
            async with mcpcore_anyio.McpClient("sdk", {"url": peer.url}) as client:
                assert (await client.ready(timeout=READY)).ok
                tools = {tool.name: tool for tool in langchain_tools(client)}
                out = await tools["sdk__echo"].ainvoke({"text": "from langchain"})
                assert out[0]["text"] == "from langchain"
                (image,) = await tools["sdk__image"].ainvoke({})
                assert image["type"] == "image"

        asyncio.run(main())


# --- pydantic-ai ----------------------------------------------------------------------------


def _scripted_model(calls: list[tuple[str, dict[str, Any]]], seen: list[Any]) -> FunctionModel:
    """A model that asks for each call in turn, records what came back, then answers."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [
            part
            for message in messages
            for part in getattr(message, "parts", ())
            if isinstance(part, ToolReturnPart)
        ]
        if len(returned) > len(seen):
            seen.extend(part.content for part in returned[len(seen) :])
        step = len(seen)
        if step < len(calls):
            name, args = calls[step]
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args)])
        from pydantic_ai.messages import TextPart

        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def test_pydantic_ai_agent_calls_tools_through_the_toolset_on_asyncio(demo: RunningServer) -> None:
    async def main() -> None:
        async with mcpcore_anyio.McpClient("demo", {"url": demo.url}) as client:
            assert (await client.ready(timeout=READY)).ok
            seen: list[Any] = []
            model = _scripted_model(
                [
                    ("demo__add", {"a": 1, "b": 2}),
                    ("demo__image", {}),
                    ("demo__echo", {"text": "x"}),
                ],
                seen,
            )
            agent = Agent(model, toolsets=[McpcoreToolset(client)])
            result = await agent.run("go")
            assert result.output == "done"
            assert seen[0] == {"sum": 3}  # structuredContent is the return value
            assert seen[2] == "x"

    asyncio.run(main())


def test_pydantic_ai_returns_binary_content_for_an_image(demo: RunningServer) -> None:
    async def main() -> None:
        async with mcpcore_anyio.McpClient("demo", {"url": demo.url}) as client:
            assert (await client.ready(timeout=READY)).ok
            toolset = McpcoreToolset(client)
            tools = await toolset.get_tools(None)  # type: ignore[arg-type]
            image = await toolset.call_tool("demo__image", {}, None, tools["demo__image"])  # type: ignore[arg-type]
            assert isinstance(image, BinaryContent) and image.data == IMAGE_PNG
            assert image.media_type == "image/png"

    asyncio.run(main())


def test_pydantic_ai_tool_error_is_a_model_retry_and_a_timeout_is_not_on_threads(
    demo: RunningServer,
) -> None:
    with mcpcore_threaded.McpClient("demo", {"url": demo.url}, call_timeout=0.5) as client:
        assert client.ready(timeout=READY).ok
        toolset = McpcoreToolset(client)

        async def main() -> None:
            tools = await toolset.get_tools(None)  # type: ignore[arg-type]
            with pytest.raises(ModelRetry) as failed:
                await toolset.call_tool(
                    "demo__fail", {"message": ESCAPE}, None, tools["demo__fail"]
                )  # type: ignore[arg-type]
            assert "\x1b" not in failed.value.message
            with pytest.raises(ToolFailed, match="did not finish within"):
                await toolset.call_tool(
                    "demo__slow",
                    {"steps": 50, "delay": 0.2},
                    None,
                    tools["demo__slow"],  # type: ignore[arg-type]
                )
            # tool_error="failed": the tool's own error is shown, with no request to retry
            failed_toolset = McpcoreToolset(client, tool_error="failed")
            with pytest.raises(ToolFailed, match="failed on purpose"):
                await failed_toolset.call_tool("demo__fail", {}, None, tools["demo__fail"])  # type: ignore[arg-type]
            raising = McpcoreToolset(client, tool_error="raise")
            with pytest.raises(mcpcore.CallTimeout):
                await raising.call_tool(
                    "demo__slow",
                    {"steps": 50, "delay": 0.2},
                    None,
                    tools["demo__slow"],  # type: ignore[arg-type]
                )

        asyncio.run(main())
        # the sync path of the framework: run_sync drives the same toolset
        seen: list[Any] = []
        agent = Agent(_scripted_model([("demo__echo", {"text": "sync"})], seen), toolsets=[toolset])
        try:
            assert agent.run_sync("go").output == "done"
        finally:  # run_sync leaves the event loop it made open and current
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                asyncio.get_event_loop().close()
            asyncio.set_event_loop(None)
        assert seen == ["sync"]


def test_pydantic_ai_toolset_follows_list_changed() -> None:
    with DemoServer().serve_in_thread() as running:
        with mcpcore_threaded.McpClient("demo", {"url": running.url}, auto_refresh=True) as client:
            assert client.ready(timeout=READY).ok
            toolset = McpcoreToolset(client)
            before = asyncio.run(toolset.get_tools(None))  # type: ignore[arg-type]
            assert "demo__echo" in before
            running.server.set_tools([t for t in running.server.tools if t.name != "echo"])
            deadline = time.monotonic() + 10
            while any(t.name == "echo" for t in client.tools):  # wait for the re-list
                assert time.monotonic() < deadline, "the re-list never came"
                time.sleep(0.02)
            after = asyncio.run(toolset.get_tools(None))  # type: ignore[arg-type]
            assert "demo__echo" not in after and "demo__add" in after


def test_adapters_keep_the_clients_tool_filters(demo: RunningServer) -> None:
    """V4 lives under the catalogue: a tool that include=/exclude= hides is offered by
    none of the three adapters."""
    with mcpcore_threaded.McpClient(
        "demo", {"url": demo.url}, include=["e*", "add"], exclude=["embedded*"]
    ) as client:
        assert client.ready(timeout=READY).ok
        expected = {"demo__echo", "demo__add"}
        assert {tool.name for tool in langchain_tools(client)} == expected
        assert {tool.name for tool in agents_tools(client)} == expected
        toolset = McpcoreToolset(client)
        assert set(asyncio.run(toolset.get_tools(None))) == expected  # type: ignore[arg-type]


def test_pydantic_ai_hub_with_a_server_down(demo: RunningServer) -> None:
    entries = {"mcpServers": {"demo": {"url": demo.url}, "gone": {"url": _down_url()}}}

    async def main() -> None:
        async with mcpcore_anyio.McpHub.from_text(json.dumps(entries), startup_timeout=2) as hub:
            await hub.ready(timeout=5)
            toolset = McpcoreToolset(hub)
            tools = await toolset.get_tools(None)  # type: ignore[arg-type]
            assert tools and all(name.startswith("demo__") for name in tools)
            out = await toolset.call_tool("demo__echo", {"text": "ok"}, None, tools["demo__echo"])  # type: ignore[arg-type]
            assert out == "ok"

    asyncio.run(main())


@pytest.mark.realpeer
def test_pydantic_ai_against_the_sdk_server() -> None:
    with sdk_server("stateful-sse") as peer:

        async def main() -> None:
            async with mcpcore_anyio.McpClient("sdk", {"url": peer.url}) as client:
                assert (await client.ready(timeout=READY)).ok
                seen: list[Any] = []
                agent = Agent(
                    _scripted_model([("sdk__add", {"a": 2, "b": 2})], seen),
                    toolsets=[McpcoreToolset(client)],
                )
                assert (await agent.run("go")).output == "done"
                assert seen[0] == {"sum": 4.0} or seen[0] == {"sum": 4}

        asyncio.run(main())


# --- OpenAI Agents SDK ---------------------------------------------------------------------


def _context(name: str, args: str) -> ToolContext[Any]:
    return ToolContext(context=None, tool_name=name, tool_call_id="call-1", tool_arguments=args)


def test_agents_on_invoke_tool_on_asyncio_and_threads(demo: RunningServer) -> None:
    async def use(tools: dict[str, Any]) -> None:
        add = tools["demo__add"]
        assert add.strict_json_schema
        assert (
            await add.on_invoke_tool(_context(add.name, '{"a": 2, "b": 5}'), '{"a": 2, "b": 5}')
        ).text == "7"
        image = await tools["demo__image"].on_invoke_tool(_context("demo__image", "{}"), "{}")
        assert image.image_url == "data:image/png;base64," + base64.b64encode(IMAGE_PNG).decode()
        failed = await tools["demo__fail"].on_invoke_tool(
            _context("demo__fail", "{}"), json.dumps({"message": ESCAPE})
        )
        assert isinstance(failed, str) and "reported an error" in failed and "\x1b" not in failed
        # an optional property sent as null (strict mode) reaches the server left out
        greeted = await tools["demo__structured"].on_invoke_tool(
            _context("demo__structured", ""), '{"name": null}'
        )
        assert "world" in greeted.text

    async def on_asyncio() -> None:
        async with mcpcore_anyio.McpClient("demo", {"url": demo.url}) as client:
            assert (await client.ready(timeout=READY)).ok
            await use({tool.name: tool for tool in agents_tools(client)})

    asyncio.run(on_asyncio())
    with mcpcore_threaded.McpClient("demo", {"url": demo.url}) as client:
        assert client.ready(timeout=READY).ok
        asyncio.run(use({tool.name: tool for tool in agents_tools(client)}))


_NESTED = {
    "type": "object",
    "properties": {
        "filter": {  # anyOf: an object branch with an optional property, and a string
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "label": {"type": ["string", "null"]},  # null is an answer here
                        "limit": {"type": "integer"},
                    },
                    "required": ["limit"],
                },
                {"type": "string"},
            ]
        },
        "entries": {  # oneOf in array items
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"tag": {"type": "string"}, "note": {"type": "string"}},
                        "required": ["tag"],
                    },
                    {"type": "integer"},
                ]
            },
        },
        "wrapped": {  # allOf (a single entry, merged by the SDK) inside an anyOf
            "anyOf": [
                {"allOf": [{"type": "object", "properties": {"z": {"type": "string"}}}]},
                {"type": "integer"},
            ]
        },
        "pair": {  # a tuple
            "type": "array",
            "prefixItems": [
                {"type": "object", "properties": {"k": {"type": "string"}}},
                {"type": "integer"},
            ],
        },
        "note": {"type": ["string", "null"]},  # top level, optional and nullable
        "count": {"type": "integer"},
    },
    "required": ["filter", "entries", "wrapped", "pair"],
}


def test_agents_strict_drops_only_the_nulls_the_rewrite_introduced() -> None:
    """R2: strict mode makes optional properties required but nullable wherever they
    are, in anyOf / oneOf / allOf branches and tuples too; the nulls the model must
    then send for them are left out before the call. A null for a property whose own
    schema accepts null is the model's answer, and reaches the server."""
    strict = {
        "filter": {"name": None, "label": None, "limit": 3},
        "entries": [{"tag": "a", "note": None}, 7],
        "wrapped": {"z": None},
        "pair": [{"k": None}, 1],
        "note": None,
        "count": None,
    }
    seen: list[tuple[str, Any]] = []
    with DemoServer().serve_in_thread() as running:
        _recording(running, {"nested": _NESTED}, seen)
        with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
            assert client.ready(timeout=READY).ok
            (tool,) = agents_tools(client)
            assert tool.strict_json_schema
            args = json.dumps(strict)
            out = asyncio.run(tool.on_invoke_tool(_context(tool.name, args), args))
            assert out.text == "nested ran"
    assert seen == [
        (
            "nested",
            {
                "filter": {"label": None, "limit": 3},
                "entries": [{"tag": "a"}, 7],
                "wrapped": {},
                "pair": [{}, 1],
                "note": None,
            },
        )
    ]


def test_agents_timeout_is_a_message_for_the_model(demo: RunningServer) -> None:
    with mcpcore_threaded.McpClient("demo", {"url": demo.url}, call_timeout=0.5) as client:
        assert client.ready(timeout=READY).ok
        slow = {tool.name: tool for tool in agents_tools(client)}["demo__slow"]
        out = asyncio.run(
            slow.on_invoke_tool(_context("demo__slow", ""), '{"steps": 50, "delay": 0.2}')
        )
        assert isinstance(out, str) and re.search("did not finish within", out)


def test_agents_hub_with_a_server_down(demo: RunningServer) -> None:
    entries = {"mcpServers": {"demo": {"url": demo.url}, "gone": {"url": _down_url()}}}
    with mcpcore_threaded.McpHub.from_text(json.dumps(entries), startup_timeout=2) as hub:
        hub.ready(timeout=5)
        tools = {tool.name: tool for tool in agents_tools(hub)}
        assert tools and all(name.startswith("demo__") for name in tools)
        out = asyncio.run(
            tools["demo__echo"].on_invoke_tool(_context("demo__echo", ""), '{"text": "up"}')
        )
        assert out.text == "up"


@pytest.mark.realpeer
def test_agents_against_the_sdk_server() -> None:
    with (
        sdk_server("stateless-json") as peer,
        mcpcore_threaded.McpClient("sdk", {"url": peer.url}) as client,
    ):
        assert client.ready(timeout=READY).ok
        echo = {tool.name: tool for tool in agents_tools(client)}["sdk__echo"]
        out = asyncio.run(echo.on_invoke_tool(_context("sdk__echo", ""), '{"text": "agents"}'))
        assert out.text == "agents"


def test_agents_schema_left_non_strict_when_it_cannot_be_strict(
    caplog: pytest.LogCaptureFixture,
) -> None:
    open_object = {
        "type": "object",
        "properties": {"x": {"type": "string"}},
        "additionalProperties": True,
    }
    made, why = strict_schema(open_object)
    assert made is None and "does not name" in why
    made, why = strict_schema({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}})
    assert made is None and "$ref" in why
    # an object whose properties are named in its branches only: closing it would
    # refuse them all, so it stays non-strict
    split = {"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}}]}
    made, why = strict_schema({"type": "object", "properties": {"f": split}, "required": ["f"]})
    assert made is None and why == "input.f names properties in anyOf only"
    made, _ = strict_schema(
        {"type": "object", "properties": {"x": {"type": "string", "default": "d"}}}
    )
    assert made is not None and made["required"] == ["x"]
    # through tools_from: the tool is left non-strict and a debug line says why
    with DemoServer().serve_in_thread() as running:

        async def handler(arguments: dict[str, Any], ctx: Any) -> Any:
            return {"content": [{"type": "text", "text": "ok"}]}

        open_tool = {"name": "open", "inputSchema": open_object}
        running.server.set_tools([(open_tool, handler)], notify=False)
        with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
            assert client.ready(timeout=READY).ok
            with caplog.at_level(logging.DEBUG, logger="mcpcore.openai_agents"):
                (tool,) = agents_tools(client)
    assert not tool.strict_json_schema and tool.params_json_schema == open_object
    assert "'demo__open' is not strict: input allows properties it does not name" in caplog.text


# --- a failed call, read once for the three -------------------------------------------------


def _failing_server(running: RunningServer) -> None:
    """``slow`` outlasts any test's call timeout, ``fail`` reports an error, ``gone``
    is listed, to be taken away without notice."""

    async def slow(arguments: dict[str, Any], ctx: Any) -> Any:
        await anyio.sleep(30)  # cancelled by the client's give-up or the server's close
        return {"content": [{"type": "text", "text": "late"}]}

    async def fail(arguments: dict[str, Any], ctx: Any) -> Any:
        return {"content": [{"type": "text", "text": ESCAPE}], "isError": True}

    async def gone(arguments: dict[str, Any], ctx: Any) -> Any:
        raise AssertionError("never listed when called")

    def tool(name: str) -> dict[str, Any]:
        return {"name": name, "inputSchema": {"type": "object"}}

    running.server.set_tools(
        [(tool("slow"), slow), (tool("fail"), fail), (tool("gone"), gone)], notify=False
    )


def _slow_calls(running: RunningServer) -> int:
    """How many ``tools/call`` of ``slow`` the server received (recorded on arrival)."""
    return sum(
        1
        for r in running.server.requests_for("tools/call")
        if isinstance(r.json, dict) and r.json.get("params", {}).get("name") == "slow"
    )


def test_a_failed_call_is_read_once_and_each_adapter_says_it_its_own_way() -> None:
    """One classification in mcpcore_tooling: a call the server refused as invalid
    params (it did not run) is retryable, an isError result is the tool's error, a
    timeout is unavailable (it may have run). pydantic-ai asks for a retry only for
    the first two: a timeout is ToolFailed, never ModelRetry; LangChain raises
    ToolException and the Agents SDK gets text, each message saying which it is."""
    with DemoServer().serve_in_thread() as running:
        _failing_server(running)
        with mcpcore_threaded.McpClient("demo", {"url": running.url}, call_timeout=0.5) as client:
            assert client.ready(timeout=READY).ok
            running.server.set_tools(
                [t for t in running.server.tools if t.name != "gone"], notify=False
            )
            chain = {tool.name: tool for tool in langchain_tools(client)}
            agents = {tool.name: tool for tool in agents_tools(client)}
            toolset = McpcoreToolset(client)

            async def pydantic_ai(name: str) -> Exception:
                tools = await toolset.get_tools(None)  # type: ignore[arg-type]
                try:
                    await toolset.call_tool(name, {}, None, tools[name])  # type: ignore[arg-type]
                except Exception as exc:
                    return exc
                raise AssertionError(f"{name} did not fail")

            said: dict[str, tuple[str, Exception, str]] = {}
            for name in ("demo__gone", "demo__fail", "demo__slow"):
                with pytest.raises(ToolException) as raised:
                    chain[name].invoke({})
                agents_text = asyncio.run(agents[name].on_invoke_tool(_context(name, "{}"), "{}"))
                assert isinstance(agents_text, str)
                said[name] = (str(raised.value), asyncio.run(pydantic_ai(name)), agents_text)
        slow_calls = _slow_calls(running)
    gone, fail, slow = said["demo__gone"], said["demo__fail"], said["demo__slow"]
    assert type(gone[1]) is ModelRetry and type(fail[1]) is ModelRetry
    assert type(slow[1]) is ToolFailed
    for text in (*gone[::2], str(gone[1])):
        assert "-32602" in text and "may have run" not in text
    for text in (*fail[::2], str(fail[1])):
        assert "\\x1b[31mred" in text and "\x1b" not in text
    for text in (*slow[::2], str(slow[1])):
        assert "did not finish within" in text and "it may have run" in text
    assert slow_calls == 3  # once per adapter: nothing sent the slow call twice


def test_pydantic_ai_agent_does_not_run_a_timed_out_call_again() -> None:
    """A model that obeys every retry prompt still calls the slow tool once: its
    timeout reaches the model as a failed result, not as a request to try again."""
    outcomes: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        from pydantic_ai.messages import TextPart

        returned = [
            part
            for message in messages
            for part in getattr(message, "parts", ())
            if isinstance(part, ToolReturnPart)
        ]
        if returned:
            outcomes.append(returned[-1].outcome)
        if not returned or returned[-1].outcome == "retried":
            return ModelResponse(parts=[ToolCallPart(tool_name="demo__slow", args={})])
        return ModelResponse(parts=[TextPart("done")])

    with DemoServer().serve_in_thread() as running:
        _failing_server(running)

        async def main() -> None:
            async with mcpcore_anyio.McpClient(
                "demo", {"url": running.url}, call_timeout=0.5
            ) as client:
                assert (await client.ready(timeout=READY)).ok
                agent = Agent(
                    FunctionModel(respond), toolsets=[McpcoreToolset(client, max_retries=3)]
                )
                assert (await agent.run("go")).output == "done"

        asyncio.run(main())
        assert outcomes == ["failed"] and _slow_calls(running) == 1


def test_agents_a_server_gone_after_listing_is_a_message_not_a_crash() -> None:
    """A transport failure (the server went away after its tools were listed) is
    ``unavailable``: the Agents SDK tool gives the model a message, as for a timeout,
    instead of raising (which ends the SDK's whole run)."""
    with contextlib.ExitStack() as stack:
        server = contextlib.ExitStack()
        stack.callback(server.close)  # after the client's close; a second close does nothing
        running = server.enter_context(DemoServer().serve_in_thread())
        client = stack.enter_context(
            mcpcore_threaded.McpClient("demo", {"url": running.url}, call_timeout=5)
        )
        assert client.ready(timeout=READY).ok
        echo = {tool.name: tool for tool in agents_tools(client)}["demo__echo"]
        chain = {tool.name: tool for tool in langchain_tools(client)}["demo__echo"]
        server.close()
        out = asyncio.run(echo.on_invoke_tool(_context("demo__echo", ""), '{"text": "x"}'))
        assert isinstance(out, str) and "it may have run" in out
        with pytest.raises(ToolException, match="it may have run"):
            chain.invoke({"text": "x"})


# --- the base install ----------------------------------------------------------------------


def test_importing_a_driver_loads_no_framework() -> None:
    probe = (
        "import sys, mcpcore_anyio, mcpcore_threaded\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'pydantic_ai', 'agents', 'openai', 'mcp', 'pydantic')]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_adapter_imports_the_mcp_sdk() -> None:
    """Our adapters never import ``mcp``: not in their source, and not at run time for
    LangChain and pydantic-ai. (The Agents SDK itself imports ``mcp`` for its own MCP
    support, so ``import agents`` loads it whatever we do.)"""
    import ast
    from pathlib import Path

    adapters = Path(__file__).resolve().parents[1] / "src" / "adapters"
    for package in (
        "mcpcore_langchain",
        "mcpcore_pydantic_ai",
        "mcpcore_openai_agents",
        "mcpcore_tooling",
    ):
        for path in (adapters / package).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                assert not any(n == "mcp" or n.startswith("mcp.") for n in names), path
    probe = (
        "import sys, mcpcore_langchain, mcpcore_pydantic_ai\n"
        "print([m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the README's examples, as written ------------------------------------------------------


def _readme_examples() -> list[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## In LangChain, pydantic-ai and the OpenAI Agents SDK", 1)[1]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)


@pytest.mark.parametrize("index", [0, 1, 2], ids=["langchain", "pydantic-ai", "openai-agents"])
def test_readme_framework_example_runs_as_written(index: int) -> None:
    code = _readme_examples()[index]
    assert len(code.strip().splitlines()) <= 15
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    expected = {0: "5\n", 1: '{"demo__add":{"sum":0.0}}\n', 2: "['demo__echo', 'demo__add']\n"}
    assert done.stdout == expected[index]
