"""The drivers' shared, I/O-free client surface (mcpcore._client_base)."""

from __future__ import annotations

import pytest

import mcpcore_anyio
import mcpcore_threaded
from mcpcore._client_base import ClientBase


@pytest.mark.parametrize("module", [mcpcore_anyio, mcpcore_threaded], ids=["anyio", "threaded"])
def test_both_drivers_share_one_client_surface(module: object) -> None:
    """Issue 5: no drift: the same base class, and a client before start has no tools."""
    client = module.McpClient("x", {"url": "https://x.example/mcp"})  # type: ignore[attr-defined]
    assert isinstance(client, ClientBase)
    assert client.tools == ()
    client.call_timeout = 7
    client.policy = "lenient"
    assert (client.call_timeout, client.policy) == (7.0, "lenient")
    registry: dict[str, object] = {}
    client.register_into(registry)  # nothing listed yet: nothing registered
    assert registry == {}
    with pytest.raises(NotImplementedError):
        ClientBase()._make_registration(None)  # type: ignore[arg-type]
