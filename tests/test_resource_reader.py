"""F4's opt-in: ``register_into(registry, resources=True)`` adds one ``read_resource``
tool per server, whose calls read a resource and hand back its contents, bounded.

The bound and the shape in the core; the registration on every driver (anyio on
asyncio and trio, threaded) against the official Python SDK server, in both eras.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import InvalidArguments, ReadResult, ResourceBlock, ResourceNotFound, TextContents
from mcpcore.features._resources import BlobContents, reader_output, reader_tool, reader_uri
from peers import Peer, modern_sdk_server


def test_F4_the_reader_tool_is_named_for_its_server_and_takes_one_uri() -> None:
    tool = reader_tool("docs", "/")
    assert (tool.id, tool.name, tool.server) == ("docs/read_resource", "read_resource", "docs")
    assert tool.parameters["required"] == ["uri"] and tool.read_only
    assert reader_uri({"uri": "a://b"}) == "a://b"
    for bad in (None, {}, {"uri": 3}, {"uri": ""}, ["a://b"]):
        with pytest.raises(InvalidArguments):
            reader_uri(bad)


def test_F4_a_read_becomes_bounded_text_and_blocks() -> None:
    blob = base64.b64encode(bytes(range(16))).decode()
    big = base64.b64encode(b"x" * 50).decode()
    result = ReadResult(
        (
            TextContents("a://t", "hello " * 10, "text/plain"),
            BlobContents("a://b", blob, "image/png"),
            BlobContents("a://big", big, None),
            TextContents("a://u", "more"),
        )
    )
    out = reader_output(result, limit=40)
    first, second, third = out.content
    assert isinstance(first, ResourceBlock) and first.text is not None
    assert first.text.startswith("hello hello") and "[cut: 20 more characters]" in first.text
    assert second.data == bytes(range(16)) and second.mime_type == "image/png"
    assert third.uri == "a://u" and third.text == "\n[cut: 4 more characters]"  # the bound is spent
    assert "a://big" in out.text and "left out" in out.text  # 50 bytes > 40
    assert not out.is_error


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    with modern_sdk_server("dual") as running:
        yield running


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.realpeer
@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_F4_register_into_with_resources_adds_one_reader_per_server(
    driver: str, peer: Peer, protocol: str
) -> None:
    async with open_client(driver, "peer", {"url": peer.url}, protocol=protocol) as face:
        with anyio.fail_after(60):
            assert (await face.ready(30)).ok
            plain: dict[str, object] = {}
            face.client.register_into(plain)
            assert "peer/read_resource" not in plain  # opt-in only
            registry: dict[str, object] = {}
            face.client.register_into(registry, resources=True)
            assert set(registry) == set(plain) | {"peer/read_resource"}
            reader = registry["peer/read_resource"]
            assert reader.tool.read_only  # type: ignore[attr-defined]
            text = await face._run(reader, {"uri": "peer://greeting"})
            assert text.text == "hello from the peer"
            blob = await face._run(reader, {"uri": "peer://blob"})
            [part] = blob.content
            assert isinstance(part, ResourceBlock) and part.data == bytes(range(16))
            with pytest.raises(InvalidArguments):
                await face._run(reader, {"url": "peer://greeting"})
            with pytest.raises(ResourceNotFound):
                await face._run(reader, {"uri": "peer://nowhere"})
