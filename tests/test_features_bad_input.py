"""Bad input to the beyond-tools features gets a clear, typed error and loses nothing
(F2, F3, F5), on every driver (anyio on asyncio and trio, threaded).

A scripted server (the demo server, with a fault hook where it must answer what no
real peer does) gives each bad input; after each, the same client keeps working.
The real peers' unknown-URI answers (-32602 in both eras) are proven in
tests/feature_probes.py; the 2026-07-28 scripted one in tests/test_features.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    BlobContents,
    InvalidArguments,
    RemoteProtocolError,
    ResourceNotFound,
    TextContents,
)
from mcpcore_demo import DemoServer, FaultResponse, ReceivedRequest

pytestmark = pytest.mark.anyio


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def answer(request: ReceivedRequest, result: dict[str, Any]) -> FaultResponse:
    body = {"jsonrpc": "2.0", "id": request.json["id"], "result": result}
    return FaultResponse.respond(200, {"content-type": "application/json"}, json.dumps(body).encode())


async def still_usable(face: Any) -> None:
    """The client that just failed lists, reads and calls as before."""
    readme = await face._run(face.client.read_resource, "demo://readme")
    assert readme.text.startswith("# The mcpcore demo server")
    assert (await face.call("demo/echo", {"text": "still here"})).text == "still here"


async def test_F2_an_unknown_uri_is_resource_not_found_and_the_client_stays_usable(driver: str) -> None:
    """The demo server answers an unknown URI as the handshake era says: -32002."""
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok
                with pytest.raises(ResourceNotFound, match="-32002") as missing:
                    await face._run(face.client.read_resource, "demo://nowhere")
                assert missing.value.uri == "demo://nowhere"
                await still_usable(face)


async def test_F2_a_blob_that_is_not_base64_fails_on_access_and_the_rest_of_the_read_is_intact(
    driver: str,
) -> None:
    good = base64.b64encode(b"\x00\x01\x02").decode()

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "resources/read" and request.json["params"]["uri"] == "demo://mixed":
            contents = [
                {"uri": "demo://mixed#text", "mimeType": "text/plain", "text": "before"},
                {"uri": "demo://mixed#bad", "mimeType": "image/png", "blob": "this is not base64!"},
                {"uri": "demo://mixed#good", "mimeType": "image/png", "blob": good},
            ]
            return answer(request, {"contents": contents})
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok
                read = await face._run(face.client.read_resource, "demo://mixed")  # the read succeeds
                text, bad, fine = read.contents
                assert isinstance(text, TextContents) and read.text == "before"
                assert isinstance(bad, BlobContents) and bad.mime_type == "image/png"
                with pytest.raises(RemoteProtocolError, match=r"demo://mixed#bad.*not valid base64"):
                    bad.data  # noqa: B018  (the error comes on access, naming the part)
                assert isinstance(fine, BlobContents) and fine.data == b"\x00\x01\x02"
                await still_usable(face)


async def test_F5_non_string_prompt_arguments_are_refused_with_nothing_sent(driver: str) -> None:
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok
                for arguments in ({"text": 3}, {"text": None}, {"text": ["a"]}, {"text": "ok", "n": True}):
                    with pytest.raises(InvalidArguments, match="must be a string"):
                        await face._run(face.client.get_prompt, "summarize", arguments)
                with pytest.raises(InvalidArguments):
                    await face._run(face.client.get_prompt, "summarize", ["text"])
                assert running.server.requests_for("prompts/get") == []  # the server saw nothing
                got = await face._run(face.client.get_prompt, "summarize", {"text": "a long story"})
                assert got.messages[0].text.endswith("a long story")
                await still_usable(face)


async def test_F3_a_missing_template_variable_is_named_before_anything_is_read(driver: str) -> None:
    """RFC 6570 expands an undefined variable to nothing (``demo://greeting/``): a URI
    the host did not mean. So ``expand`` asks for every variable the template names
    and names the missing one, with nothing sent; ``require_all=False`` is the RFC's
    expansion, for templates whose variables are optional (``{?page}``)."""
    async with DemoServer().serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok
                [template] = await face._run(face.client.list_resource_templates)
                assert template.variables == ("name",)
                with pytest.raises(InvalidArguments, match="'name'"):
                    await face._run(face.client.read_resource, template.expand({}))
                with pytest.raises(InvalidArguments, match="'name'"):
                    template.expand({"other": "x"})
                assert running.server.requests_for("resources/read") == []
                assert template.expand({}, require_all=False) == "demo://greeting/"
                with pytest.raises(ResourceNotFound):  # the RFC's expansion, sent as asked
                    await face._run(face.client.read_resource, template.expand({}, require_all=False))
                hello = await face._run(face.client.read_resource, template.expand({"name": "Ada L"}))
                assert hello.text == "Hello, Ada L!"
                await still_usable(face)


async def test_F2_a_resource_list_whose_cursor_loops_is_a_typed_error_not_a_hang(driver: str) -> None:
    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if request.rpc_method == "resources/list":
            cursor = (request.json.get("params") or {}).get("cursor")
            nxt = {None: "a", "a": "b", "b": "a"}[cursor]  # a, b, a: the loop
            return answer(request, {"resources": [{"uri": f"demo://{nxt}", "name": nxt}], "nextCursor": nxt})
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok
                with pytest.raises(RemoteProtocolError, match="cursor loop"):
                    await face._run(face.client.list_resources)
                assert len(running.server.requests_for("resources/list")) == 3  # then it stopped
                await still_usable(face)
                prompts = await face._run(face.client.list_prompts)
                assert {p.name for p in prompts} == {"summarize", "translate"}
