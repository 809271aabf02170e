"""What a caller of ``McpClient`` uses, written once: the source of both drivers' surfaces.

Every public method of the client (``call``, ``list_resources``,
``start_task``, ``ready``, ...) with its docstring lives here, as calls of a few
driver primitives that ``McpClient`` (``_client.py``) implements with its own
I/O: ``_perform_call`` (start a request in the engine and wait for its
outcome), ``_perform_refresh``, ``_act`` (one turn of the engine, then its
actions performed), ``_act_soon``, ``_wait_for`` (wait until the client's state
says so) and ``_begin_reconnect``. ``scripts/unasync.py`` writes the blocking
driver's copy (``mcpcore_threaded/_surface.py``) from this file.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from mcpcore import (
    Availability,
    HttpClientEngine,
    InvalidState,
    RegistrationContract,
    StdioClientEngine,
    SyncReport,
    Tool,
    ToolOutput,
    Unavailable,
)

from ._surface_core import _T as _T
from ._surface_core import Begin as Begin
from ._surface_core import ProgressCallback as ProgressCallback
from ._surface_core import SurfaceCore

if TYPE_CHECKING:
    from mcpcore import (
        Ask,
        Completion,
        Continuation,
        ElicitResult,
        InputRequired,
        Listing,
        Prompt,
        PromptResult,
        ReadResult,
        Resource,
        ResourceTemplate,
        Skill,
        SkillFileContent,
        TaskHandle,
        TaskStatus,
    )

    from ._client import McpClient


_log = logging.getLogger("mcpcore.anyio")


__all__ = ["ClientSurface", "ProgressCallback", "ResourceReader", "ToolRegistration"]


class ToolRegistration:
    """One tool put into a host registry by ``register_into``: ``await reg(args)`` calls it."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    async def __call__(
        self, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> ToolOutput:
        # The contract's timeout is the client's default: not passed as the caller's
        # own, so a call the server runs as a task follows task_timeout (T9).
        output: ToolOutput = await self.client.call(self.tool.id, arguments, **kwargs)
        return output

    def __repr__(self) -> str:
        return f"ToolRegistration({self.tool.id!r})"


class ResourceReader:
    """F4: a server's ``read_resource`` tool put into a host registry by
    ``register_into(registry, resources=True)``: ``await reader({"uri": uri})`` reads
    the resource and returns its contents as a ``ToolOutput`` (bounded)."""

    def __init__(self, client: McpClient, tool: Tool, timeout: float, policy: str) -> None:
        self.client = client
        self.tool = tool
        self.contract = RegistrationContract(tool=tool, timeout=timeout, policy=policy)

    async def __call__(self, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        client = self.client
        ask = client._reader_ask(arguments)
        result = await client._ask(ask, self.contract.timeout)
        return client._reader_output(result)

    def __repr__(self) -> str:
        return f"ResourceReader({self.tool.id!r})"


class ClientSurface(SurfaceCore):
    """The public methods of ``McpClient``, over the driver's primitives."""

    # --- what callers use --------------------------------------------------------------

    async def login(self, timeout: float | None = None) -> Availability:
        """A3: sign in to this server now, through the ``authorize`` hook; this also asks
        a person again after they declined (they are not asked again on their own).
        Waits for the start-up attempt that follows (at most ``timeout``) and returns
        the availability then; a client already up stays up meanwhile."""

        def begin(now: float) -> HttpClientEngine:
            engine = self._login_engine()
            engine.login(now)
            return engine

        engine = await self._act(begin)

        def settled() -> bool | None:
            return True if engine.login_settled or self._closing else None

        await self._wait_for(settled, timeout, login=True)
        return engine.availability or Availability(False, f"still signing in after {timeout} s")

    async def ready(self, timeout: float | None = None) -> Availability:
        """Wait for the current start-up attempt (L3); unavailable at once while down."""
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState(self._START_FIRST)
        known = await self._wait_for(self._known_availability, timeout)
        if known is None:
            return Availability(False, f"still starting after {timeout:g} s")
        return known

    def _known_availability(self) -> Availability | None:
        engine = self._engine
        assert engine is not None
        availability = engine.availability
        if availability is not None:
            return availability
        if self._closing:
            return Availability(False, "the client is closed")
        return None

    async def reconnect(self, timeout: float | None = None) -> Availability:
        """L8: set up a new session now, then wait for it as ``ready()`` does.

        For a server that restarted, or a host that knows better than the backoff:
        calls running on the old session fail with ``TransportError`` (they may have
        run, so nothing is sent again); a server that is down is tried at once.
        """
        if self._config_error is not None:
            return Availability(False, self._config_error.reason)
        if not self._started:
            raise InvalidState(self._START_FIRST)
        await self._begin_reconnect()
        return await self.ready(timeout)

    async def _ensure_ready(self) -> None:
        availability = await self.ready()
        if not availability.ok:
            raise Unavailable(availability.reason or "unavailable", server=self.name)

    @overload
    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook"] = "hook",
    ) -> ToolOutput: ...

    @overload
    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["return"],
    ) -> ToolOutput | InputRequired: ...

    async def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> ToolOutput | InputRequired:
        """Call the tool ``tool_id`` (``server/tool``, as ``tools`` lists it) with
        ``arguments`` and wait until it finishes; returns its ``ToolOutput``.
        ``meta`` adds keys of your own to the request's ``_meta`` (a tenant or
        request id); the client's own keys cannot be set (``ValueError``).

        Fails with ``UnknownTool`` (naming the id probably meant) or ``InvalidArguments``
        (arguments JSON cannot carry) before anything is sent; ``BackendError`` when the
        tool reports an error (``isError``); ``CallTimeout`` past ``timeout`` (the
        client's ``call_timeout`` by default); ``Unavailable`` or ``TransportError``
        when the server cannot be reached; ``MayHaveRun`` (a ``TransportError``) when
        the request went out whole and no answer came: the server may have run the
        tool, so check before calling it again (U3; a key of your own in ``meta``,
        an idempotency key, goes unchanged, and the client never sends a call
        twice). ``on_progress(progress, total, message)``
        is called for each progress report.
        ``on_input="return"``: when a 2026-07-28 server asks the person something,
        the call returns an ``InputRequired`` (its questions and a ``Continuation``)
        instead of asking the ``elicit`` hook; ``resume()`` finishes it (Q4). In the
        handshake era questions go to the hook as usual.
        """
        begin = _call_begin(tool_id, arguments, timeout, meta, on_input)
        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    def set_roots(
        self,
        roots: Sequence[str | Mapping[str, str]]
        | Callable[[], Awaitable[Sequence[str | Mapping[str, str]]]],
    ) -> None:
        """Q3: new roots (a list, or a coroutine function returning one) for a client
        created with ``roots=``; a handshake-era server is told they changed.
        ``InvalidState`` for a client given no roots, ``InvalidValue`` for a list
        that is not one of ``file://`` URIs."""

        def change(now: float) -> bool:
            self._change_roots(roots)
            engine = self._engine
            if engine is None or self._closing:
                return False
            engine.roots_changed(now)
            return True

        self._act_soon(change)

    async def resume(
        self,
        continuation: Continuation,
        responses: Mapping[str, ElicitResult],
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Finish a call that returned an ``InputRequired`` (Q4): ``responses`` maps
        each question's key to the person's ``ElicitResult``. Any client of the same
        server may resume it (a continuation read back with
        ``Continuation.from_json``), once. Returns the tool's output, or another
        ``InputRequired`` when the server asks again. Raises at once, with nothing
        sent, for a continuation of another server or one resumed already, or
        answers that do not fit (``InvalidValue``, ``InvalidState``, ``InputError``);
        with the ``seal_key`` option, for one whose seal does not match
        (``SealBroken``, U2).
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.resume(continuation, responses, now, timeout=timeout)

        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    async def start_task(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        on_input: Literal["hook", "return"] = "hook",
    ) -> TaskHandle | ToolOutput | InputRequired:
        """Start a call and return as soon as the server runs it as a task (T8):
        its ``TaskHandle`` (``task_id``, ``server``, ``tool``; ``to_json()`` keeps
        it), to follow with ``resume_task()``, ask about with ``task_status()`` or
        stop with ``cancel_task()``, here or from a new client in another
        process. A server that answers the call directly gives its ``ToolOutput``
        (or ``InputRequired``) as ``call()`` would. Needs ``tasks=True`` for a
        server to make a task at all. Raises as ``call()`` does. (Not named
        ``start_call``: the blocking client's ``start_call`` is a call in flight.)
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.start_task(
                tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input
            )

        started: TaskHandle | ToolOutput | InputRequired = await self._perform_call(
            begin, on_progress
        )
        return started

    async def resume_task(
        self,
        task: TaskHandle | str,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput | InputRequired:
        """Follow a task to its end (T8), from its ``TaskHandle`` (or its id, on
        this client's server) and return the tool's ``ToolOutput``, as ``call()``
        would have; status changes come to ``on_progress``. ``timeout``: how long
        to follow it (the client's ``task_timeout`` by default). A task that
        failed raises ``BackendError``; one cancelled ``Cancelled``; a handle of
        another server ``InvalidValue`` (nothing sent); with the ``seal_key``
        option, a handle whose seal does not match ``SealBroken`` and a bare id
        ``InvalidValue`` (U2). Giving up (cancelling the caller) sends
        ``tasks/cancel``.
        """

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.resume_task(task, now, timeout=timeout)

        output: ToolOutput | InputRequired = await self._perform_call(begin, on_progress)
        return output

    async def task_status(
        self, task: TaskHandle | str, *, timeout: float | None = None
    ) -> TaskStatus:
        """Ask the server once where a task stands (``tasks/get``) → ``TaskStatus``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.task_status(task, now, timeout=timeout)

        status: TaskStatus = await self._perform_call(begin, None)
        return status

    async def cancel_task(self, task: TaskHandle | str, *, timeout: float | None = None) -> None:
        """Ask the server to cancel a task (``tasks/cancel``); returns once the server
        acknowledged it. A call following the task then raises ``Cancelled``."""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.cancel_task(task, now, timeout=timeout)

        await self._perform_call(begin, None)

    async def _ask(self, ask: Ask, timeout: float | None) -> Any:
        """Send one request of the host (F1) once ready and wait for what it reads.
        (``ask`` was built first: a caller's mistake is refused before any wait.)"""

        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.request(ask, now, timeout=timeout)

        return await self._perform_call(begin, None)

    async def list_resources(self, *, timeout: float | None = None) -> Listing[Resource]:
        """F2: every resource the server lists (all pages), with its cache hints."""
        return await self._ask(self._ask_list("resources"), timeout)  # type: ignore[no-any-return]

    async def list_resource_templates(
        self, *, timeout: float | None = None
    ) -> Listing[ResourceTemplate]:
        """F2, F3: every resource template the server lists (all pages)."""
        return await self._ask(self._ask_list("templates"), timeout)  # type: ignore[no-any-return]

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResult:
        """F2, F4: read one resource (a listed URI, an expanded template, a tool's
        ``resource_link``); ``ResourceNotFound`` when the server has none there."""
        return await self._ask(self._ask_read(uri), timeout)  # type: ignore[no-any-return]

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: be told (``on_resource_updated=``) when the resource at ``uri`` changes;
        the subscription lasts for the client's life, across new sessions.
        ``NotOffered`` (nothing sent) when the server does not declare
        ``resources.subscribe``, or (at 2026-07-28) leaves ``uri`` out."""
        await self._change_subscription(uri, True, timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """F2: stop the subscription to ``uri``."""
        await self._change_subscription(uri, False, timeout)

    async def _change_subscription(self, uri: str, on: bool, timeout: float | None) -> None:
        def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
            return engine.subscribe(uri, now, on=on, timeout=timeout)  # F2

        await self._perform_call(begin, None)

    async def list_prompts(self, *, timeout: float | None = None) -> Listing[Prompt]:
        """F5: every prompt the server lists (all pages)."""
        return await self._ask(self._ask_list("prompts"), timeout)  # type: ignore[no-any-return]

    async def complete(
        self,
        ref: Prompt | ResourceTemplate | Mapping[str, str],
        argument: str,
        value: str,
        context: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Completion:
        """F6: the server's suggestions for ``argument`` of a prompt or a resource
        template, given what was typed so far (``value``) and the arguments already
        chosen (``context``); at most 100 values."""
        ask = self._ask_complete(ref, argument, value, context)
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> PromptResult:
        """F5: one prompt's messages; the arguments are strings (anything else is
        refused before sending, ``InvalidArguments``)."""
        return await self._ask(self._ask_prompt(name, arguments), timeout)  # type: ignore[no-any-return]

    async def list_skills(
        self,
        *,
        max_skill_files: int | None = None,
        max_skill_bytes: int | None = None,
        timeout: float | None = None,
    ) -> Listing[Skill]:
        """N4: every skill the server lists (``skills/list``, SEP-2640), each its
        entry: name, description, frontmatter, files with digest and size. No file
        is read. ``NotOffered`` (nothing sent) when the server does not declare the
        skills extension; ``LimitExceeded`` names the bound a skill overruns
        (``None``: the SEP's 512 files and 16 MiB, ``MAX_SKILL_FILES`` and
        ``MAX_SKILL_BYTES``)."""
        await self._ensure_ready()
        ask = self._ask_skills(max_skill_files, max_skill_bytes)
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def read_skill_file(
        self, skill: Skill | str, path: str = "SKILL.md", *, timeout: float | None = None
    ) -> SkillFileContent:
        """N4: one file of a skill (its entry, or its name: listed first), read and
        checked against the entry: size, digest, and for ``SKILL.md`` the
        frontmatter. A mismatch raises ``SkillMismatch`` and the content is
        dropped; a path the entry does not list is refused (``InvalidValue``)."""
        if isinstance(skill, str):
            skill = self._skill_named(await self.list_skills(timeout=timeout), skill)
        ask = self._ask_skill_file(skill, path)
        return await self._ask(ask, timeout)  # type: ignore[no-any-return]

    async def list_skill_files(
        self,
        skill: Skill | str,
        *,
        max_skill_files: int | None = None,
        timeout: float | None = None,
    ) -> tuple[str, ...]:
        """N4: the paths of a skill's files: its entry's, or for a dynamic
        skill the walk of its directory with ``resources/directory/read`` where
        the server offers it. No file is read."""
        if isinstance(skill, str):
            skill = self._skill_named(await self.list_skills(timeout=timeout), skill)
        found = self._skill_files(skill, max_skill_files)
        if isinstance(found, tuple):
            return found
        while (ask := found.next_ask()) is not None:
            found.add(await self._ask(ask, timeout))
        return tuple(found.paths)

    async def refresh(self) -> SyncReport:
        """Re-list the tools (T6) → what changed since the last listing; its ``pins``
        names each tool whose definition differs from its pin, first seen now (U1)."""
        await self._ensure_ready()
        return await self._perform_refresh()

    def accept_change(self, tool_id: str) -> bool:
        """U1: pin the listed definition of ``tool_id``, a tool in ``pin_changes``: it
        is no longer reported and, under ``pins="block"``, no longer withheld
        (``sync_into`` or ``register_into`` puts it into a registry again). The pin
        goes to the ``pin_store`` off the engine's turn. False when that tool has no
        change waiting."""
        accepted = False

        def accept(now: float) -> bool:
            nonlocal accepted
            accepted = self._accept(tool_id)
            return accepted

        self._act_soon(accept)
        return accepted

    # --- a host's tool registry ----------------------------------------------------------------

    def _make_registration(self, tool: Tool) -> ToolRegistration:
        client = cast("McpClient", self)
        return ToolRegistration(client, tool, self._options.call_timeout, self._options.policy)

    def _make_reader(self, tool: Tool) -> ResourceReader:
        client = cast("McpClient", self)
        return ResourceReader(client, tool, self._options.call_timeout, self._options.policy)

    async def sync_into(self, registry: MutableMapping[str, object]) -> SyncReport:
        """Re-list the tools and bring ``registry`` (filled by ``register_into``) up to
        date: new tools are added, removed ones taken out, changed ones replaced;
        registrations of unchanged tools are kept. Returns what changed."""
        report = await self.refresh()
        mirrored = self._mirror_into(registry)
        return replace(mirrored, pins=report.pins) if report.pins else mirrored


def _call_begin(
    tool_id: str,
    arguments: Mapping[str, Any] | None,
    timeout: float | None,
    meta: Mapping[str, Any] | None,
    on_input: Literal["hook", "return"],
) -> Begin:
    """What starts a call of ``tool_id`` in the engine (``call``, and the blocking
    client's ``start_call``)."""

    def begin(engine: HttpClientEngine | StdioClientEngine, now: float) -> int:
        return engine.call(tool_id, arguments, now, timeout=timeout, meta=meta, on_input=on_input)

    return begin
