"""T6 and seed 002's host integration rules, without any driver: register, then sync."""

from __future__ import annotations

import logging

import pytest

from mcpcore import Catalogue, Tool
from mcpcore.features._registry import RegistrationContract, register_catalogue, sync_registry


class Reg:
    def __init__(self, tool: Tool, timeout: float = 300.0, policy: str = "error") -> None:
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)


def catalogue(*specs: tuple[str, str]) -> Catalogue:
    tools = [{"name": n, "description": d, "inputSchema": {"type": "object"}} for n, d in specs]
    return Catalogue.from_listing("s", tools)


def sync(registry: dict[str, object], cat: Catalogue, baseline: dict[str, object], timeout: float = 300.0, policy: str = "error") -> object:
    return sync_registry(
        registry,
        cat,
        baseline,
        make=lambda tool: Reg(tool, timeout, policy),
        contract_of=lambda reg: reg.contract,  # type: ignore[attr-defined]
        wanted=lambda tool: RegistrationContract(tool=tool, timeout=timeout, policy=policy),
    )


def test_T6_register_then_sync_mirrors_the_diff() -> None:
    """T6: added, removed, changed and untouched ids, sorted; the registry follows."""
    registry: dict[str, object] = {}
    baseline: dict[str, object] = {}
    register_catalogue(registry, catalogue(("a", "1"), ("b", "1"), ("c", "1")), Reg, baseline)
    assert sorted(registry) == ["s/a", "s/b", "s/c"]
    report = sync(registry, catalogue(("a", "2"), ("b", "1"), ("d", "1")), baseline)
    assert report.added == ("s/d",) and report.removed == ("s/c",)  # type: ignore[attr-defined]
    assert report.changed == ("s/a",) and report.untouched == ("s/b",)  # type: ignore[attr-defined]
    assert sorted(registry) == ["s/a", "s/b", "s/d"]
    assert registry["s/a"].tool.description == "2"  # type: ignore[attr-defined]


def test_T6_foreign_entries_are_left_alone_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """seed 002: only this client's own registrations are replaced or removed."""
    caplog.set_level(logging.WARNING, logger="mcpcore")
    registry: dict[str, object] = {}
    baseline: dict[str, object] = {}
    register_catalogue(registry, catalogue(("a", "1"), ("b", "1"), ("c", "1")), Reg, baseline)
    registry["s/a"] = "foreign-a"  # took an id that will change
    registry["s/c"] = "foreign-c"  # took an id that will be dropped
    registry["s/d"] = "foreign-d"  # took an id that will be added
    report = sync(registry, catalogue(("a", "2"), ("b", "1"), ("d", "1")), baseline)
    assert registry["s/a"] == "foreign-a" and registry["s/c"] == "foreign-c" and registry["s/d"] == "foreign-d"
    assert report.changed == ("s/a",) and report.removed == ("s/c",) and report.added == ("s/d",)  # type: ignore[attr-defined]
    warnings = [r.getMessage() for r in caplog.records]
    assert any("'s/a'" in w and "replace" in w for w in warnings)
    assert any("'s/c'" in w and "remove" in w for w in warnings)
    assert any("'s/d'" in w and "add" in w for w in warnings)


def test_T6_timeout_and_policy_are_part_of_the_contract() -> None:
    """seed 002: a changed call timeout or policy re-registers the tool."""
    registry: dict[str, object] = {}
    baseline: dict[str, object] = {}
    cat = catalogue(("a", "1"))
    register_catalogue(registry, cat, Reg, baseline)
    first = registry["s/a"]
    assert sync(registry, cat, baseline).untouched == ("s/a",)  # type: ignore[attr-defined]
    assert sync(registry, cat, baseline, timeout=5.0).changed == ("s/a",)  # type: ignore[attr-defined]
    assert registry["s/a"] is not first
    assert sync(registry, cat, baseline, timeout=5.0, policy="lenient").changed == ("s/a",)  # type: ignore[attr-defined]
