"""The drivers' shared, I/O-free client surface (mcpcore.engine._client_base)."""

from __future__ import annotations

import gc
import logging
import weakref
from types import SimpleNamespace

import pytest

import mcpcore_anyio
import mcpcore_threaded
from mcpcore import Catalogue, SessionOptions, Tool
from mcpcore.engine._client_base import ClientBase
from mcpcore.features._registry import RegistrationContract


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


# --- seed 002: a registry's baseline lives in the registry, not in the client ----------------


class _Registration:
    def __init__(self, client: ClientBase, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)


class _Client(ClientBase):
    """A ClientBase with a fixed catalogue and no engine behind it."""

    def __init__(self, *specs: tuple[str, str]) -> None:
        self._options = SessionOptions(server_name="s")
        self._engine = None
        self.list(*specs)

    def list(self, *specs: tuple[str, str]) -> None:
        raw = [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in specs]
        self._engine = SimpleNamespace(catalogue=Catalogue.from_listing("s", raw))  # type: ignore[assignment]

    def _make_registration(self, tool: Tool) -> _Registration:
        return _Registration(self, tool, self._options.call_timeout, self._options.policy)


class _Registry(dict[str, object]):
    """A registry that can be weakly referenced (a plain dict cannot)."""


def _registry_at(address: int) -> dict[str, object]:
    """A new, empty registry, at ``address`` when the allocator hands that back (it usually does)."""
    held: list[dict[str, object]] = []
    for _ in range(10_000):
        registry: dict[str, object] = {}
        if id(registry) == address:
            return registry
        held.append(registry)
    return {}


def test_seed002_a_new_registry_never_inherits_a_dead_registrys_baseline() -> None:
    """seed 002: no per-registry state outlives the registry. A registry that was dropped
    leaves nothing in the client (its registrations die with it), and a new registry, even one
    at the dropped registry's id, starts from nothing: syncing into it adds every tool."""
    client = _Client(("a", "1"), ("b", "1"))
    old: dict[str, object] = {}
    client.register_into(old)
    registration = weakref.ref(old["s/a"])
    address = id(old)
    del old
    gc.collect()
    assert registration() is None  # the client kept neither the registry's baseline nor its entries
    fresh = _registry_at(address)
    report = client._mirror_into(fresh)
    assert report.added == ("s/a", "s/b") and report.untouched == ()
    assert sorted(fresh) == ["s/a", "s/b"]

    kept = _Registry()
    client.register_into(kept)
    watcher = weakref.ref(kept)
    del kept
    gc.collect()
    assert watcher() is None  # the client holds no reference to a dropped registry


def test_seed002_baselines_are_per_registry_and_per_client(caplog: pytest.LogCaptureFixture) -> None:
    """seed 002: each registry keeps its own baseline (found through this client's registrations
    in it), foreign entries are still left alone with a warning, and another client's
    registrations in the same registry are not this client's."""
    caplog.set_level(logging.WARNING, logger="mcpcore")
    client = _Client(("a", "1"), ("b", "1"), ("c", "1"))
    other = _Client(("z", "1"))
    first: dict[str, object] = {}
    second: dict[str, object] = {}
    client.register_into(first)
    other.register_into(first)
    client.register_into(second)
    first["s/a"] = "foreign-a"  # took an id that will change
    first["s/c"] = "foreign-c"  # took an id that will be dropped
    first["s/d"] = "foreign-d"  # took an id that will be added
    client.list(("a", "2"), ("b", "1"), ("d", "1"))
    report = client._mirror_into(first)
    assert report.changed == ("s/a",) and report.removed == ("s/c",)
    assert report.added == ("s/d",) and report.untouched == ("s/b",)
    assert first["s/a"] == "foreign-a" and first["s/c"] == "foreign-c" and first["s/d"] == "foreign-d"
    assert first["s/z"].client is other  # type: ignore[attr-defined]
    assert any("'s/c'" in r.getMessage() and "remove" in r.getMessage() for r in caplog.records)
    # The second registry still diffs against its own registration: nothing foreign there.
    report = client._mirror_into(second)
    assert report.changed == ("s/a",) and report.removed == ("s/c",) and report.added == ("s/d",)
    assert sorted(second) == ["s/a", "s/b", "s/d"]
    assert second["s/a"].tool.description == "2"  # type: ignore[attr-defined]
