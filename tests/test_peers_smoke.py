"""Smoke tests for the real-peer infrastructure in tests/peers.py.

Talks raw HTTP (urllib) on purpose: the mcpcore client is not used here.
The JavaScript peers FAIL (not skip) when missing: run scripts/install_peers.sh.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from peers import (
    INSTALL_HINT,
    SDK_MODES,
    Peer,
    conformance_command,
    everything_server,
    peers_installed,
    sdk_server,
)

pytestmark = pytest.mark.realpeer

PROTOCOL_VERSION = "2025-11-25"
HTTP_TIMEOUT = 10.0
SDK_TOOLS = [
    "echo",
    "add",
    "image",
    "audio",
    "embedded_text",
    "embedded_blob",
    "resource_link",
    "fail",
    "progress",
    "slow",
]


def _parse_body(content_type: str, body: bytes) -> list[dict[str, Any]]:
    if not body.strip():
        return []
    if content_type.startswith("text/event-stream"):
        messages = []
        for event in body.decode().replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(
                line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:")
            )
            if data.strip():
                messages.append(json.loads(data))
        return messages
    decoded = json.loads(body)
    return decoded if isinstance(decoded, list) else [decoded]


def post(
    url: str,
    message: dict[str, Any],
    session_id: str | None = None,
    *,
    initialized: bool = True,
    timeout: float = HTTP_TIMEOUT,
) -> tuple[int, dict[str, str], list[dict[str, Any]]]:
    """POST one JSON-RPC message; returns (status, lower-cased headers, messages received)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if initialized:
        headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    request = urllib.request.Request(
        url, data=json.dumps(message).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, resp_headers, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        with err:
            status, resp_headers, body = err.code, err.headers, err.read()
    lowered = {k.lower(): v for k, v in resp_headers.items()}
    return status, lowered, _parse_body(lowered.get("content-type", ""), body)


def initialize(url: str) -> tuple[dict[str, str], dict[str, Any]]:
    status, headers, messages = post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcpcore-peers-smoke", "version": "0"},
            },
        },
        initialized=False,
    )
    assert status == 200, (status, messages)
    responses = [m for m in messages if m.get("id") == 1]
    assert len(responses) == 1, messages
    assert "result" in responses[0], responses[0]
    return headers, responses[0]["result"]


def open_session(url: str) -> str | None:
    headers, _ = initialize(url)
    session_id = headers.get("mcp-session-id")
    status, _, _ = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
    assert status == 202
    return session_id


def request(
    url: str, session_id: str | None, rid: int | str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    status, _, messages = post(
        url, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, session_id
    )
    assert status == 200, (status, messages)
    responses = [m for m in messages if m.get("id") == rid]
    assert len(responses) == 1, messages
    return responses[0]


def assert_stopped(peer: Peer) -> None:
    assert peer.proc.returncode is not None, "peer process still running after exit"
    with pytest.raises(ProcessLookupError):
        os.kill(peer.pid, 0)


def require_js_peers() -> None:
    if not peers_installed():
        pytest.fail(INSTALL_HINT, pytrace=False)


# --------------------------------------------------------------------------- sdk_server


@pytest.mark.parametrize("mode", SDK_MODES)
def test_sdk_server_initialize(mode: str) -> None:
    with sdk_server(mode) as peer:
        assert peer.url == f"http://127.0.0.1:{peer.port}/mcp"
        headers, result = initialize(peer.url)
        assert result["serverInfo"]["name"] == "mcpcore-test-sdk-server"
        assert result["protocolVersion"] == PROTOCOL_VERSION
        expected_type = "application/json" if mode.endswith("-json") else "text/event-stream"
        assert headers["content-type"].startswith(expected_type)
        session_id = headers.get("mcp-session-id")
        assert (session_id is not None) == mode.startswith("stateful"), headers

        post(peer.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
        reply = request(
            peer.url, session_id, 2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
        )
        assert reply["result"]["content"] == [{"type": "text", "text": "hi"}]
        assert peer.wait_for_event("call echo", timeout=5) == ["call echo"]
    assert_stopped(peer)


def test_sdk_server_pagination() -> None:
    with sdk_server("stateful-json", page_size=3) as peer:
        session_id = open_session(peer.url)
        names: list[str] = []
        cursors: list[str] = []
        params: dict[str, Any] = {}
        for rid in range(2, 20):
            result = request(peer.url, session_id, rid, "tools/list", params)["result"]
            assert 1 <= len(result["tools"]) <= 3
            names += [tool["name"] for tool in result["tools"]]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
            cursors.append(cursor)
            params = {"cursor": cursor}
        assert names == SDK_TOOLS
        assert len(cursors) == 3  # 10 tools in pages of 3: 3 + 3 + 3 + 1

        bad = post(
            peer.url,
            {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"cursor": "nonsense"}},
            session_id,
        )[2]
        assert bad[0]["error"]["code"] == -32602


def test_sdk_server_without_page_size_does_not_page() -> None:
    with sdk_server("stateless-json") as peer:
        result = request(peer.url, None, 2, "tools/list", {})["result"]
        assert [tool["name"] for tool in result["tools"]] == SDK_TOOLS
        assert "nextCursor" not in result
        add = next(tool for tool in result["tools"] if tool["name"] == "add")
        assert add["outputSchema"]["properties"]["sum"]["type"] == "number"
        assert all("outputSchema" not in tool for tool in result["tools"] if tool["name"] != "add")


def test_sdk_server_tool_results() -> None:
    with sdk_server("stateless-json") as peer:

        def call(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
            params = {"name": name, "arguments": arguments or {}}
            return request(peer.url, None, name, "tools/call", params)["result"]

        assert call("add", {"a": 2, "b": 3})["structuredContent"] == {"sum": 5}
        assert call("image")["content"][0]["type"] == "image"
        assert call("image")["content"][0]["mimeType"] == "image/png"
        assert call("audio")["content"][0]["mimeType"] == "audio/wav"
        assert call("embedded_text")["content"][0]["resource"]["text"] == "hello resource"
        assert "blob" in call("embedded_blob")["content"][0]["resource"]
        assert call("resource_link")["content"][0]["type"] == "resource_link"
        failed = call("fail")
        assert failed["isError"] is True
        assert "always fails" in failed["content"][0]["text"]
        assert call("progress", {"steps": 2})["content"][0]["text"] == "completed 2 steps"
        assert call("slow", {"seconds": 0.1})["content"][0]["text"] == "slept 0.1 seconds"
        assert "call fail" in peer.events()


def test_sdk_server_progress_notifications() -> None:
    with sdk_server("stateful-sse") as peer:
        session_id = open_session(peer.url)
        _, _, messages = post(
            peer.url,
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "progress",
                    "arguments": {"steps": 3},
                    "_meta": {"progressToken": "tok"},
                },
            },
            session_id,
        )
        progress = [
            m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"
        ]
        assert progress == [1, 2, 3]
        assert messages[-1]["id"] == 7


def test_sdk_server_slow_records_cancelled() -> None:
    with sdk_server("stateful-sse") as peer:
        session_id = open_session(peer.url)
        outcome: dict[str, Any] = {}

        def call_slow() -> None:
            try:
                outcome["reply"] = post(
                    peer.url,
                    {
                        "jsonrpc": "2.0",
                        "id": "slow-1",
                        "method": "tools/call",
                        "params": {"name": "slow", "arguments": {"seconds": 60}},
                    },
                    session_id,
                    timeout=30,
                )
            except Exception as exc:  # reported by the main thread
                outcome["error"] = exc

        worker = threading.Thread(target=call_slow, daemon=True)
        worker.start()
        peer.wait_for_event("call slow", timeout=10)
        status, _, _ = post(
            peer.url,
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "slow-1", "reason": "smoke test"},
            },
            session_id,
        )
        assert status == 202
        assert "cancelled" in peer.wait_for_event("cancelled", timeout=10)
        worker.join(timeout=15)
        assert not worker.is_alive(), "slow tools/call POST did not finish after cancellation"
        assert "error" not in outcome, outcome
        # The SDK answers the cancelled request with an error (-32800), never with a result.
        replies = [m for m in outcome["reply"][2] if m.get("id") == "slow-1"]
        assert all("result" not in m for m in replies), replies


def test_sdk_server_process_is_stopped_even_on_error() -> None:
    with pytest.raises(RuntimeError, match="boom"), sdk_server("stateless-json") as peer:
        raise RuntimeError("boom")
    assert_stopped(peer)


# --------------------------------------------------------------------------- JS peers


def test_everything_server_initialize() -> None:
    require_js_peers()
    with everything_server() as peer:
        headers, result = initialize(peer.url)
        assert result["serverInfo"]["name"] == "mcp-servers/everything"
        session_id = headers["mcp-session-id"]
        post(peer.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
        tools = request(peer.url, session_id, 2, "tools/list", {})["result"]["tools"]
        names = {tool["name"] for tool in tools}
        assert {
            "echo",
            "get-tiny-image",
            "get-resource-reference",
            "get-resource-links",
            "get-structured-content",
            "trigger-long-running-operation",
        } <= names
    assert_stopped(peer)


def test_conformance_cli_runs_under_node22() -> None:
    require_js_peers()
    deadline = time.monotonic() + 60
    done = subprocess.run(
        conformance_command("list", "--client"),
        capture_output=True,
        text=True,
        timeout=max(1.0, deadline - time.monotonic()),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "initialize" in done.stdout
    assert "tools_call" in done.stdout
