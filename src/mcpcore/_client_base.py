"""The part of ``McpClient`` that does no I/O, shared by both drivers.

Both drivers' clients inherit this: the catalogue view, the mutable call
settings, and host registration (seed 002). A driver supplies the engine, the
registration objects (async or blocking callables) and, for ``sync_into``, the
re-list; the rules themselves live here and in ``_registry.py``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._registry import RegistrationContract, register_catalogue, sync_registry

if TYPE_CHECKING:
    from ._engine import HttpClientEngine, StdioClientEngine
    from ._session import SessionOptions
    from ._tools import SyncReport, Tool

__all__ = ["ClientBase", "Registration"]


class Registration(Protocol):
    """What a driver's registration object offers: its tool and its contract."""

    tool: Tool
    contract: RegistrationContract


class ClientBase:
    """Catalogue, settings and registries of one client (no I/O)."""

    _options: SessionOptions
    _engine: HttpClientEngine | StdioClientEngine | None
    _baselines: dict[int, dict[str, object]]

    def _make_registration(self, tool: Tool) -> Registration:
        raise NotImplementedError

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The current catalogue's tools (empty until the server is ready)."""
        engine = self._engine
        if engine is None or engine.catalogue is None:
            return ()
        return engine.catalogue.tools

    @property
    def call_timeout(self) -> float:
        return self._options.call_timeout

    @call_timeout.setter
    def call_timeout(self, value: float) -> None:
        self._set_options(call_timeout=float(value))

    @property
    def policy(self) -> str:
        return self._options.policy

    @policy.setter
    def policy(self, value: Literal["error", "lenient"]) -> None:
        self._set_options(policy=value)

    def _set_options(self, **changes: Any) -> None:
        self._options = replace(self._options, **changes)
        if self._engine is not None:
            self._engine.session.options = self._options

    def _contract_for(self, tool: Tool) -> RegistrationContract:
        return RegistrationContract(
            tool=tool, timeout=self._options.call_timeout, policy=self._options.policy
        )

    def register_into(self, registry: MutableMapping[str, object]) -> None:
        """Put one registration per tool into ``registry`` (call ``ready()`` first)."""
        engine = self._engine
        if engine is None or engine.catalogue is None:
            return
        baseline = self._baselines.setdefault(id(registry), {})
        register_catalogue(registry, engine.catalogue, self._make_registration, baseline)

    def _mirror_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        """After a re-list: mirror the catalogue into ``registry`` (seed 002)."""
        engine = self._engine
        assert engine is not None and engine.catalogue is not None
        baseline = self._baselines.setdefault(id(registry), {})

        def contract_of(registration: object) -> RegistrationContract:
            contract: RegistrationContract = registration.contract  # type: ignore[attr-defined]
            return contract

        return sync_registry(
            registry,
            engine.catalogue,
            baseline,
            make=self._make_registration,
            contract_of=contract_of,
            wanted=self._contract_for,
        )
