"""A legacy HTTP+SSE URL (``…/sse``) is named as such (H11), on every driver and in the CLI.

The scripted server answers every request as a legacy transport's ``/sse`` does
to a POST: ``405 Method Not Allowed`` with ``Allow: GET``.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers import DRIVERS, backend_of, open_client
from mcpcore import Unavailable
from mcpcore.base._failure import legacy_sse_reason
from raw_servers import read_request, socket_server

pytestmark = pytest.mark.anyio


def legacy_stream_endpoint(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(
        b"HTTP/1.1 405 Method Not Allowed\r\nallow: GET\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: 18\r\nconnection: close\r\n\r\nMethod Not Allowed"
    )


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


def expected(port: int) -> str:
    return (
        f"http://127.0.0.1:{port}/sse refused a POST (HTTP 405 Method Not Allowed): it looks like "
        "the legacy HTTP+SSE transport, which is not supported; use the server's Streamable HTTP "
        f"endpoint instead (often http://127.0.0.1:{port}/mcp)"
    )


async def test_H11_legacy_sse_url_is_named_on_every_driver(driver: str) -> None:
    """H11: start-up against a legacy ``/sse`` URL ends unavailable with a reason that
    names the legacy transport and the usual Streamable HTTP endpoint, not a bare 405;
    a call raises ``Unavailable`` with the same reason."""
    with socket_server(legacy_stream_endpoint) as (port, _):
        async with open_client(driver, "old", {"url": f"http://127.0.0.1:{port}/sse"}) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
                assert not availability.ok
                assert availability.reason == expected(port)
                with pytest.raises(Unavailable) as info:
                    await client.call("old/anything", {})
            assert info.value.reason == expected(port)


async def test_H11_other_405s_keep_the_status_wording(driver: str) -> None:
    """H7 still holds elsewhere: a 405 at a URL that is not ``…/sse`` names the status."""
    with socket_server(legacy_stream_endpoint) as (port, _):
        async with open_client(driver, "other", {"url": f"http://127.0.0.1:{port}/mcp"}) as client:
            with anyio.fail_after(20):
                availability = await client.ready(10)
    assert availability.reason == f"http://127.0.0.1:{port}/mcp answered HTTP 405: Method Not Allowed"


def test_H11_cli_names_the_legacy_transport() -> None:
    """H11 through the real command: ``mcpcore tools URL/sse`` exits 3 with the reason."""
    with socket_server(legacy_stream_endpoint) as (port, _):
        result = subprocess.run(
            [sys.executable, "-m", "mcpcore_cli", "tools", f"http://127.0.0.1:{port}/sse"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 3, result.stderr
    assert expected(port) in result.stderr
    assert "answered HTTP 405" not in result.stderr


@pytest.mark.parametrize(
    ("url", "usual"),
    [
        ("http://127.0.0.1:8000/sse", "http://127.0.0.1:8000/mcp"),
        ("https://api.example/v1/SSE/", "https://api.example/v1/mcp"),
        ("https://api.example/sse", "https://api.example/mcp"),
    ],
)
def test_H11_reason_points_at_the_usual_endpoint(url: str, usual: str) -> None:
    reason = legacy_sse_reason(url)
    assert reason is not None and reason.endswith(f"(often {usual})")
    assert "legacy HTTP+SSE transport, which is not supported" in reason


@given(st.text(alphabet="abcdes/_-.", max_size=20))
def test_H11_property_only_a_path_ending_in_sse_is_taken_for_legacy(path: str) -> None:
    """H11 for every path: the legacy wording only for a last segment ``sse``."""
    url = "https://h.example/" + path
    last = path.rstrip("/").rpartition("/")[2]
    assert (legacy_sse_reason(url) is not None) == (last.lower() == "sse")

