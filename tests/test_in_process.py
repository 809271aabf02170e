"""The in-process transport: the anyio driver against the official SDK server's
ASGI app in the same process, with no socket (issue 7, point 4).

The same behaviours as over HTTP: handshake, paging, every content type,
progress, errors and cancellation, on asyncio and trio.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcpcore_anyio
from mcpcore import BackendError, CallTimeout

sys.path.insert(0, str(Path(__file__).parent / "servers"))
import sdk_server

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _app(tmp_path: Path, **options: Any) -> tuple[Any, Path]:
    events = tmp_path / "events.txt"
    server = sdk_server.build_server(page_size=3, events=sdk_server.EventLog(str(events)))
    return server.streamable_http_app(**options), events


@pytest.mark.parametrize("mode", [{}, {"json_response": True}, {"stateless_http": True}], ids=["sse", "json", "stateless"])
async def test_in_process_sdk_app_without_sockets(
    tmp_path: Path, mode: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole conversation over an ASGI app: no socket is ever opened."""
    app, events = _app(tmp_path, **mode)
    opened: list[object] = []
    real_socket = socket.socket

    def no_socket(*args: Any, **kwargs: Any) -> socket.socket:
        opened.append(args)
        return real_socket(*args, **kwargs)

    monkeypatch.setattr(socket, "socket", no_socket)
    progress: list[float] = []
    async with mcpcore_anyio.McpClient("sdk", {"url": "http://127.0.0.1:8000/mcp"}, asgi_app=app) as client:
        with anyio.fail_after(30):
            availability = await client.ready(20)
            assert availability.ok, availability.reason
            assert len(client.tools) >= 10  # listed through pages of 3
            assert (await client.call("sdk/echo", {"text": "in process"})).text == "in process"
            assert (await client.call("sdk/image", {})).text == "[image omitted: image/png]"
            assert (await client.call("sdk/add", {"a": 1, "b": 2})).structured is not None
            with pytest.raises(BackendError):
                await client.call("sdk/fail", {})
            await client.call("sdk/progress", {"steps": 2}, on_progress=lambda p, t, m: progress.append(p))
            with pytest.raises(CallTimeout):
                await client.call("sdk/slow", {"seconds": 30}, timeout=0.3)
    if "json_response" not in mode:
        assert len(progress) == 2
    if not mode:
        with anyio.fail_after(10):
            while "cancelled" not in events.read_text():
                await anyio.sleep(0.02)
    assert opened == []
