"""Issue 37 §7: a server's JSON-RPC error answer to a resource, prompt or completion
request is the server's own refusal (``RequestRefused``, a ``ServerError`` like a
tool's ``BackendError``), never ``RemoteProtocolError`` (the server broke the
protocol), on every driver."""

from __future__ import annotations

import pytest

from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    BackendError,
    RemoteProtocolError,
    RequestRefused,
    ResourceNotFound,
    ServerError,
)
from mcpcore_demo import DemoServer

pytestmark = pytest.mark.anyio


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


async def test_X2_an_error_answer_to_prompts_get_or_completion_is_a_request_refused(
    driver: str,
) -> None:
    with DemoServer().serve_in_thread() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            assert (await face.ready(10)).ok
            client = face.client
            with pytest.raises(RequestRefused) as prompt:
                await face._run(client.get_prompt, "no-such-prompt", {"text": "x"})
            with pytest.raises(RequestRefused) as completion:
                await face._run(client.complete, {"type": "ref/prompt", "name": "summarize"}, "text", "a")
            with pytest.raises(ResourceNotFound) as missing:
                await face._run(client.read_resource, "demo://nowhere")
    for refused, method in ((prompt, "prompts/get"), (completion, "completion/complete")):
        error = refused.value
        assert isinstance(error, ServerError) and not isinstance(error, RemoteProtocolError)
        assert error.method == method and error.rpc_code is not None and error.rpc_code < 0
        assert error.detail.startswith(str(error.rpc_code))
    assert prompt.value.rpc_code == -32602 and "Unknown prompt" in str(prompt.value)
    # one base for the server's own refusals: a host catches them all with ServerError
    assert isinstance(missing.value, RequestRefused) and missing.value.method == "resources/read"
    assert issubclass(BackendError, ServerError)
