"""The part of ``McpClient`` that does no I/O, shared by both drivers.

Both drivers' clients inherit this: the catalogue view, the mutable call
settings, and putting the tools into a host's registry. A driver supplies the
engine, the registration objects (async or blocking callables) and, for
``sync_into``, the re-list; the rules themselves live here and in ``_registry.py``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from ..base._errors import InvalidState, InvalidValue, UnknownTool
from ..base._escape import excerpt
from ..base._tools import suggest_ids
from ..features._registry import RegistrationContract, register_catalogue, sync_registry
from ..session._session import SessionState, positive_seconds
from ..wire._requests import Ask

if TYPE_CHECKING:
    from ..auth._authorizing import AuthAction, AuthOptions, TokenStore
    from ..auth._hooks import HookCall
    from ..auth._oauth import ClientRecord, TokenSet
    from ..auth._oauth_types import DpopKey
    from ..base._pins import Pin, PinChanged
    from ..base._render import ToolOutput
    from ..base._tools import SyncReport, Tool
    from ..config._config import LocalServer, RemoteServer
    from ..features._input import AskHost
    from ..features._pins import PinStore
    from ..features._resources import ReadResult, Resource, ServerResource
    from ..features._resume import Continuation
    from ..features._skills import DirectoryWalk, ServerSkill, Skill
    from ..session._session import SessionOptions
    from ..wire._http import HeaderSource, HttpLimits
    from ._engine import HttpClientEngine, StdioClientEngine

__all__ = ["ClientBase", "HubBase", "Registration", "looks_like_document"]

_C = TypeVar("_C", bound="_NamedClient")

_log = logging.getLogger("mcpcore.registry")

# The attribute under which each registration object holds its ledger.
_LEDGER = "_mcpcore_ledger"


class Registration(Protocol):
    """What a driver's registration object offers: its tool and its contract."""

    tool: Tool
    contract: RegistrationContract


class _Ledger:
    """One client's registrations in one registry: the baseline ``sync_into`` diffs against.

    It is held by the registration objects it lists (each has it as an
    attribute), never by the client, so it lives only as long as they do: no
    per-registry state outlives the registry, and the client keeps no
    reference to a registry (only its ``id``, to tell ledgers apart). A new
    registry holds none of this client's registrations, so it starts with an
    empty ledger even when it reuses a dead registry's ``id``.
    """

    __slots__ = ("baseline", "owner", "registry_id")

    def __init__(self, owner: ClientBase, registry_id: int) -> None:
        self.owner = owner
        self.registry_id = registry_id
        self.baseline: dict[str, object] = {}


class ClientBase:
    """Catalogue, settings and registries of one client (no I/O)."""

    _options: SessionOptions
    _engine: HttpClientEngine | StdioClientEngine | None
    _limits: HttpLimits
    _listen: bool
    _auth: AuthOptions | None
    _store: TokenStore | None
    _authorize: Callable[..., object] | None
    _sign_assertion: Callable[..., object] | None
    _assertion: Callable[..., object] | None = None  # N2, N3: AuthOptions.assertion
    _assertion_blocks: bool = False  # it reads a file: run it as the store's methods are
    # N1: DPoP with no key of the host's: how the driver turns a stored key's
    # export back into a key (None: the host gave a key, or no DPoP).
    _revive_dpop_key: Callable[[str], DpopKey] | None = None
    _header_source: HeaderSource | None = None  # V3: the headers= callable, if any
    _server: RemoteServer | LocalServer | None
    _pin_store: PinStore | None = None  # U1: the host's, else pins live in memory only
    _pin_subject: str = "default"
    _elicit: Callable[..., object] | None = None
    _roots_hook: Callable[..., object] | None = None
    _sample: Callable[..., object] | None = None

    def _offer_input(
        self,
        elicit: Callable[..., object] | None,
        roots: object = None,
        sample: Callable[..., object] | None = None,
    ) -> None:
        """Q1, Q3: keep the host's ``elicit`` and ``sample`` hooks and its roots (a
        list, or a hook returning one); the session declares each capability
        exactly when it was given (seed 000: none by default). A roots list that
        is not one raises ``InvalidValue`` now."""
        self._elicit, self._sample = elicit, sample
        changes: dict[str, Any] = {"sampling": sample is not None}
        if elicit is not None:
            changes["elicit_form"] = True
        changes.update(self._roots_options(roots))
        self._options = replace(self._options, input=replace(self._options.input, **changes))

    def _roots_options(self, roots: object) -> dict[str, Any]:
        if roots is None:
            return {"roots": None, "roots_hook": False}
        if callable(roots):
            self._roots_hook = roots
            return {"roots": None, "roots_hook": True}
        from ..features._roots import check_roots

        self._roots_hook = None
        return {"roots": check_roots(roots, hook=False), "roots_hook": False}

    def _change_roots(self, roots: object) -> None:
        """Q3: new roots (a list, or a hook) for a client given ``roots=``; the
        driver then tells the engine (``roots_changed``)."""
        current = self._options.input
        if current.roots is None and not current.roots_hook:
            raise InvalidState("this client offers no roots: give roots= when creating it")
        if roots is None:
            raise InvalidValue("roots are a list of file:// URIs, or a hook returning one")
        self._set_options(input=replace(current, **self._roots_options(roots)))

    # --- OAuth's part of a remote client (A3, D2) ---------------------------------------

    def _remote_engine(
        self,
        server: RemoteServer,
        *,
        token_bytes: Callable[[int], bytes],
        wall_offset: float,
    ) -> HttpClientEngine:
        """The engine for ``server``; with ``auth=``, the token store is chosen (the
        host's, else one in memory) and what it holds is read first (with the
        DPoP key kept with its tokens, for a client given none of the host's)."""
        from ._engine import HttpClientEngine

        auth = self._auth
        tokens: TokenSet | None = None
        clients: Sequence[ClientRecord] = ()
        if auth is not None:
            from ..auth._authorizing import MemoryTokenStore
            from ..auth._hooks import read_store

            self._store = auth.store or MemoryTokenStore()
            tokens, clients = read_store(self._store, server.url, auth.subject)
            revive = self._revive_dpop_key
            if revive is not None:
                from ..auth._oauth_dpop import stored_key

                # N1: no key of the host's: the key the stored tokens are bound to
                # is taken up again (kept for later engines of this client too).
                key = stored_key(tokens, revive)
                if key is not None:
                    auth = self._auth = replace(auth, dpop_key=key)
        return HttpClientEngine(
            server,
            options=self._options,
            limits=self._limits,
            listen=self._listen,
            auth=auth,
            token_bytes=token_bytes,
            wall_offset=wall_offset,
            interactive=self._authorize is not None,
            tokens=tokens,
            clients=clients,
            headers=self._header_source,
        )

    def _hook_call(self, action: AuthAction | AskHost) -> HookCall:
        """What to run for a host hook action (D2): this client's hooks and store."""
        from ..auth._hooks import HookCall, hook_call
        from ..features._input import AskHost

        if isinstance(action, AskHost):
            # Q1, Q3: the driver's own kind (a coroutine function in mcpcore_anyio).
            hooks = {"elicit": self._elicit, "roots": self._roots_hook, "sample": self._sample}
            arguments = () if action.request is None else (action.request,)
            return HookCall(action.attempt, action.hook, hooks.get(action.hook), arguments)

        return hook_call(
            action,
            authorize=self._authorize,
            sign_assertion=self._sign_assertion,
            store=self._store,
            assertion=self._assertion,
            assertion_blocks=self._assertion_blocks,
        )

    # --- pinned tool definitions (U1) ----------------------------------------------

    def _pin_server(self) -> str:
        """The server the pins are kept under: its URL, or ``local:<name>``."""
        from ..config._config import RemoteServer

        server = self._server
        return (
            server.url if isinstance(server, RemoteServer) else f"local:{self._options.server_name}"
        )

    def _pins_to_read(self) -> Callable[[], dict[str, Pin]] | None:
        """What reads the host's pin store when the client starts (blocking: the
        driver runs it off its lock and off the event loop), or None without one."""
        store = self._pin_store
        if store is None:
            return None
        from ..features._pins import read_pins

        return partial(read_pins, store, self._pin_server(), self._pin_subject)

    def _pins_read(self, pins: Mapping[str, Pin]) -> None:
        """Seed the engine's pins with what the store held (before the engine starts)."""
        engine = self._engine
        if engine is not None:
            engine.session.tools.pins.load(pins)

    def _pin_writes(self) -> Callable[[], None] | None:
        """The pins the engine made since the last turn, as one blocking function that
        stores them in order (the driver runs it off its lock), or None."""
        engine = self._engine
        if engine is None:
            return None
        writes = engine.session.tools.take_pin_writes()
        store = self._pin_store
        if not writes or store is None:
            return None  # without a store of the host's, pins live in the engine only
        server, subject = self._pin_server(), self._pin_subject

        def store_pins() -> None:
            for write in writes:
                write.apply(store, server, subject)

        return store_pins

    def _accept(self, tool_id: str) -> bool:
        """U1: the engine's part of ``accept_change`` (in a turn)."""
        engine = self._engine
        if engine is None:
            return False
        return engine.session.tools.accept_change(tool_id)

    @property
    def pin_changes(self) -> tuple[PinChanged, ...]:
        """U1: the tools whose listed definition differs from their pin, not accepted
        yet (withheld ones under ``pins="block"``), as of the last listing."""
        engine = self._engine
        return () if engine is None else engine.session.tools.pins.changes

    def owns(self, continuation: Continuation) -> bool:
        """Whether ``continuation`` is of a call to this client's server (Q4)."""
        engine = self._engine
        return engine is not None and engine.session.input.endpoint == continuation.endpoint

    def _login_engine(self) -> HttpClientEngine:
        """The engine ``login()`` signs in with (``InvalidState`` without one)."""
        from ._engine import HttpClientEngine

        engine = self._engine
        if not isinstance(engine, HttpClientEngine) or engine.auth is None:
            raise InvalidState("login() needs a started client of a remote server with auth=")
        return engine

    def _make_registration(self, tool: Tool) -> Registration:
        """A registration object for ``tool``; it must accept new attributes (the ledger)."""
        raise NotImplementedError

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The current catalogue's tools (empty until the server is ready)."""
        engine = self._engine
        if engine is None or engine.catalogue is None:
            return ()
        return engine.catalogue.tools

    @property
    def filtered(self) -> dict[str, str]:
        """The tools the server lists that this client's ``include``/``exclude`` hide
        (V4): tool id → which filter hides it."""
        engine = self._engine
        if engine is None or engine.catalogue is None:
            return {}
        return dict(engine.catalogue.filtered)

    @property
    def protocol_version(self) -> str | None:
        """The MCP revision spoken with the server (``None`` until it is known)."""
        engine = self._engine
        return (
            None
            if engine is None or engine.state is not SessionState.READY
            else engine.session.protocol_version
        )

    @property
    def era(self) -> str | None:
        """``"modern"`` (2026-07-28), ``"legacy"`` (the handshake era) or ``None`` (not known yet, E1)."""
        engine = self._engine
        return None if engine is None else engine.session.era

    @property
    def separator(self) -> str:
        """What joins the server name and the tool name in this client's tool ids."""
        return self._options.separator

    @property
    def instructions(self) -> str | None:
        """F7: the server's instructions (from ``initialize`` or ``server/discover``),
        exactly as sent: **untrusted** text, never put into anything by this
        library; escape it (``mcpcore.escape_text``) before showing it. ``None``
        until the server is ready, or when it sent none."""
        engine = self._engine
        return (
            None
            if engine is None or engine.state is not SessionState.READY
            else engine.session.instructions
        )

    def offers(self, feature: str) -> bool:
        """Whether the server declared ``feature`` among its capabilities
        (``"tools"``, ``"resources"``, ``"prompts"``, ``"completions"``,
        ``"logging"``), or ``"skills"``: the skills extension (N4, SEP-2640);
        ``False`` until it is ready."""
        capabilities = self._capabilities()
        if feature == "skills":
            from ..features._skills import skills_offered

            return skills_offered(capabilities) is not None
        return feature in capabilities

    # --- the asks behind each driver's resources and prompts methods (F2, F5) -----
    # Each feature module loads here, on first use, never on import of a driver.

    def _ask_list(self, what: Literal["resources", "templates", "prompts"]) -> Ask:
        name = self._options.server_name
        if what == "prompts":
            from ..features._prompts import PROMPTS_LIST

            return Ask(PROMPTS_LIST, None, name)
        from ..features._resources import RESOURCE_TEMPLATES_LIST, RESOURCES_LIST

        return Ask(RESOURCES_LIST if what == "resources" else RESOURCE_TEMPLATES_LIST, None, name)

    def _ask_read(self, uri: str) -> Ask:
        from ..features._resources import RESOURCES_READ, read_params

        return Ask(RESOURCES_READ, read_params(uri), uri)

    def _ask_complete(
        self, ref: object, argument: str, value: str, context: Mapping[str, str] | None
    ) -> Ask:
        from ..features._completion import COMPLETE, complete_params

        return Ask(COMPLETE, complete_params(ref, argument, value, context))

    def _ask_prompt(self, name: str, arguments: Mapping[str, str] | None) -> Ask:
        from ..features._prompts import PROMPTS_GET, get_params

        return Ask(PROMPTS_GET, get_params(name, arguments), name)

    # --- the asks behind the skills methods (N4) -------------------------------

    def _capabilities(self) -> Mapping[str, Any]:
        engine = self._engine
        if engine is None or engine.state is not SessionState.READY:
            return {}
        return engine.session.server_capabilities

    def _ask_skills(self, max_skill_files: int | None, max_skill_bytes: int | None) -> Ask:
        from ..features._skills import skills_ask

        return skills_ask(
            self._options.server_name,
            self._capabilities(),
            max_skill_files=max_skill_files,
            max_skill_bytes=max_skill_bytes,
        )

    def _ask_skill_file(self, skill: Skill, path: str) -> Ask:
        from ..features._skills import read_file_ask

        return read_file_ask(skill, path)

    def _skill_named(self, skills: Sequence[Skill], name: str) -> Skill:
        from ..features._skills import find_skill

        return find_skill(tuple(skills), name, self._options.server_name)

    def _skill_files(
        self, skill: Skill, max_skill_files: int | None
    ) -> tuple[str, ...] | DirectoryWalk:
        from ..features._skills import skill_files

        return skill_files(skill, self._capabilities(), max_files=max_skill_files)

    @property
    def call_timeout(self) -> float:
        return self._options.call_timeout

    @call_timeout.setter
    def call_timeout(self, value: float) -> None:
        self._set_options(call_timeout=positive_seconds(value, "call_timeout"))

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

    def register_into(
        self, registry: MutableMapping[str, object], *, resources: bool = False
    ) -> None:
        """Put one registration per tool into ``registry`` (call ``ready()`` first).

        With ``resources=True`` (F4, opt-in), a server that offers resources adds
        one more: ``<server><separator>read_resource``, which reads the resource
        at the ``uri`` it is given and returns its contents, bounded (a server's
        own tool of that name keeps the id; the reader is then left out, with a
        warning). ``sync_into`` leaves it where it is.
        """
        engine = self._engine
        if engine is None or engine.catalogue is None:
            return
        ledger = self._ledger_for(registry)
        register_catalogue(registry, engine.catalogue, self._maker(ledger), ledger.baseline)
        if resources and self.offers("resources"):
            from ..features._resources import reader_tool

            tool = reader_tool(self._options.server_name, self._options.separator)
            if engine.catalogue.get(tool.id) is not None:
                _log.warning(
                    "server %r has a tool named read_resource: its resources are not "
                    "added to the registry as one",
                    self._options.server_name,
                )
            else:
                registry[tool.id] = self._make_reader(tool)

    def _make_reader(self, tool: Tool) -> Registration:
        """F4: the registration object of a server's ``read_resource`` tool."""
        raise NotImplementedError

    def _reader_ask(self, arguments: object) -> Ask:
        """F4: the read a reader registration's call makes (``InvalidArguments`` first)."""
        from ..features._resources import reader_uri

        return self._ask_read(reader_uri(arguments))

    @staticmethod
    def _reader_output(result: ReadResult) -> ToolOutput:
        from ..features._resources import reader_output

        return reader_output(result)

    def _mirror_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        """After a re-list: mirror the catalogue into a host's ``registry``."""
        engine = self._engine
        assert engine is not None and engine.catalogue is not None
        ledger = self._ledger_for(registry)

        def contract_of(registration: object) -> RegistrationContract:
            contract: RegistrationContract = registration.contract  # type: ignore[attr-defined]
            return contract

        return sync_registry(
            registry,
            engine.catalogue,
            ledger.baseline,
            make=self._maker(ledger),
            contract_of=contract_of,
            wanted=self._contract_for,
        )

    def _ledger_for(self, registry: MutableMapping[str, object]) -> _Ledger:
        """This client's ledger for ``registry``, found through its registrations in it.

        A registration counts only under the id it was registered with. When
        the registry holds none of them (a new registry, or every one taken by
        another owner), the ledger starts empty.
        """
        registry_id = id(registry)
        for tool_id, value in registry.items():
            ledger = getattr(value, _LEDGER, None)
            if (
                isinstance(ledger, _Ledger)
                and ledger.owner is self
                and ledger.registry_id == registry_id
                and ledger.baseline.get(tool_id) is value
            ):
                return ledger
        return _Ledger(self, registry_id)

    def _maker(self, ledger: _Ledger) -> Callable[[Tool], object]:
        """``_make_registration`` whose registrations hold ``ledger``."""

        def make(tool: Tool) -> object:
            registration = self._make_registration(tool)
            setattr(registration, _LEDGER, ledger)
            return registration

        return make


_HUB_REPR_NAMES = 10  # server names a hub's repr shows


class _NamedClient(Protocol):
    name: str

    def owns(self, continuation: Continuation) -> bool: ...

    @property
    def tools(self) -> tuple[Tool, ...]: ...

    @property
    def pin_changes(self) -> tuple[PinChanged, ...]: ...

    def accept_change(self, tool_id: str) -> bool: ...


class HubBase(Generic[_C]):
    """The part of ``McpHub`` that does no I/O, shared by both drivers (L7, C4, K7).

    Clients are keyed by their own (lowercased) name, whatever the mapping's
    keys: the name their tool ids start with, so a call goes to the client that
    listed the tool.
    """

    def __init__(self, clients: Mapping[str, _C], *, separator: str = "/") -> None:
        self.clients: dict[str, _C] = {}
        for client in clients.values():
            if client.name in self.clients:
                raise ValueError(f"two clients are named {client.name!r}")
            self.clients[client.name] = client
        self.separator = separator

    def __repr__(self) -> str:
        # Names only (never an entry, a header or a URL), at most a few of them.
        names = list(self.clients)
        shown = ", ".join(repr(name) for name in names[:_HUB_REPR_NAMES])
        more = ", …" if len(names) > _HUB_REPR_NAMES else ""
        count = f"{len(names)} server" + ("" if len(names) == 1 else "s")
        return f"McpHub({count}: {shown}{more})" if names else f"McpHub({count})"

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(tool for client in self.clients.values() for tool in client.tools)

    @property
    def pin_changes(self) -> tuple[PinChanged, ...]:
        """U1: every client's changed tools not accepted yet (see ``McpClient.pin_changes``)."""
        return tuple(change for client in self.clients.values() for change in client.pin_changes)

    def accept_change(self, tool_id: str) -> bool:
        """U1: accept the changed definition of ``tool_id`` on the client it routes to
        (``UnknownTool`` for a server this hub does not have); False when that tool
        has no change waiting."""
        return self.client_for(tool_id).accept_change(tool_id)

    def _tagged(self, listings: Mapping[str, Sequence[Resource]]) -> list[ServerResource]:
        """F2: each server's resources tagged with its name, in the hub's order."""
        from ..features._resources import ServerResource

        return [
            ServerResource(name, resource)
            for name in self.clients
            for resource in listings.get(name, ())
        ]

    def _tagged_skills(self, listings: Mapping[str, Sequence[Skill]]) -> list[ServerSkill]:
        """N4: each server's skills tagged with its name, in the hub's order."""
        from ..features._skills import ServerSkill

        return [
            ServerSkill(name, skill) for name in self.clients for skill in listings.get(name, ())
        ]

    def _chosen(self, server: str | None) -> dict[str, _C]:
        """L8: the clients ``reconnect(server)`` acts on: the one named, else all;
        ``InvalidValue`` for a name this hub does not have."""
        if server is None:
            return dict(self.clients)
        client = self.clients.get(server.lower())
        if client is None:
            names = ", ".join(repr(name) for name in list(self.clients)[:_HUB_REPR_NAMES])
            raise InvalidValue(f"this hub has no server named {excerpt(server, 60)!r} ({names})")
        return {client.name: client}

    def client_for_continuation(self, continuation: Continuation) -> _C:
        """The client whose server a paused call belongs to (Q4); ``InvalidValue`` when
        none of this hub's servers is its endpoint."""
        for client in self.clients.values():
            if client.owns(continuation):
                return client
        from ..base._errors import InvalidValue

        raise InvalidValue("this continuation belongs to a call to a server this hub does not have")

    def client_for_task(self, task: object) -> _C:
        """The client a task belongs to (T8): the one its ``TaskHandle`` names;
        ``InvalidValue`` for a bare id (a hub cannot tell whose it is) or a server
        this hub does not have."""
        from ..base._errors import InvalidValue
        from ..features._tasks import TaskHandle

        if not isinstance(task, TaskHandle):
            raise InvalidValue("a hub resumes a task from its TaskHandle, not a bare id")
        client = self.clients.get(task.server)
        if client is None:
            raise InvalidValue("this task handle belongs to a server this hub does not have")
        return client

    def client_for(self, tool_id: str) -> _C:
        """The client a tool id routes to; ``UnknownTool`` (with what was probably meant)
        when no server has that name (K7)."""
        server, separator, _ = tool_id.partition(self.separator)
        client = self.clients.get(server) if separator else None
        if client is None:
            ids = (tool.id for tool in self.tools)
            raise UnknownTool(tool_id, suggestions=suggest_ids(tool_id, ids, self.separator))
        return client


def looks_like_document(path_or_text: str | os.PathLike[str]) -> bool:
    """``McpHub.from_mcp_json``'s guess: a string starting with ``{`` is the document."""
    return isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{")
