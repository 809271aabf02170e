"""The threaded driver's turns of the engine per call (B1: each is the client's lock and a
dispatch): a call whose reply has a ``Content-Length`` body hands its last piece and the
body's end to the engine in one turn, with the same outcome; a streamed (SSE) reply keeps
a turn for its end, which may have to wait on the server."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcpcore_demo import DemoServer
from mcpcore_threaded import McpClient


@pytest.mark.parametrize(("mode", "turns"), [({"json_response": True}, 3), ({}, 4)])
def test_B1_a_calls_turns(mode: dict[str, Any], turns: int) -> None:
    """Three for JSON (the call, the response's head, its body with its end); at least
    four for SSE (the call, the head, each piece of the stream, its end)."""
    with (
        DemoServer(**mode).serve_in_thread() as running,
        McpClient("demo", {"url": running.url}, allow_insecure_http=True) as client,
    ):
        assert client.ready(10).ok
        client.call("demo/echo", {"text": "warm"}, timeout=10)
        dispatched = 0
        dispatch = client._dispatch
        caller = threading.current_thread()  # a call's exchange is performed in its thread

        def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal dispatched
            if threading.current_thread() is caller:  # not the timer thread's turns
                dispatched += 1
            return dispatch(*args, **kwargs)

        client._dispatch = counting  # type: ignore[method-assign]
        for text in ("a", "bc", "def"):
            dispatched = 0
            assert client.call("demo/echo", {"text": text}, timeout=10).text == text
            assert dispatched == turns if mode else dispatched >= turns
