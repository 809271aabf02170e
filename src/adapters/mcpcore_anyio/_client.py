"""``McpClient`` for anyio (asyncio and trio): performs what the engine asks.

The client holds no protocol state. It owns an engine (``mcpcore``), an
``httpcore.AsyncConnectionPool`` (or a child process for a local server), one
background task that sleeps until the engine's next deadline, and the waiters
of its callers. ``call()`` performs its own call's HTTP exchange in the
caller's task; every other exchange gets a task of its own. After every input
it hands the engine, it performs the engine's actions and routes the engine's
events. Its public methods are ``_surface.py``'s (written once, for both
drivers); this module is the I/O under them: the primitives they call.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import (
    AsyncIterator,
    Callable,
)
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mcpcore import (
    Availability,
    HostCallback,
    HttpClientEngine,
    HttpRequest,
    InvalidState,
    McpError,
    SyncReport,
    TransportFailure,
    WakeCall,
    WakeRefresh,
    call_host,
    closed_outcome,
)

from ._io import _ends_without_waiting, _framed, _loop_clock, _next_chunk, _went_out
from ._io import _OneChunk as _OneChunk
from ._io import _Permits as _Permits
from ._surface import _T, Begin, ClientSurface
from ._surface import ProgressCallback as ProgressCallback
from ._surface import ResourceReader as ResourceReader
from ._surface import ToolRegistration as ToolRegistration

if TYPE_CHECKING:
    import httpcore

    # OAuth's names load only when a client uses it (B5: import time).
    from mcpcore import (
        AskHost,
        AuthAction,
        HookCall,
    )

    from ._asgi import AsgiPool, AsgiResponse
    from ._children import _Children
    from ._network import AsyncPool

__all__ = ["McpClient", "ProgressCallback", "ResourceReader", "ToolRegistration"]

_log = logging.getLogger("mcpcore.anyio")

_AWAKE = float("-inf")  # the timer task is not sleeping: no need to wake it


@dataclass(slots=True)
class _CallWaiter:
    done: anyio.Event
    on_progress: ProgressCallback | None
    output: Any = None
    error: McpError | None = None
    # B3: the next exchange of this call (a later page, a round) that the caller's
    # task performs once its current one is done, instead of a task of its own.
    then: tuple[HttpRequest, anyio.CancelScope] | None = None
    performing: bool = False  # the caller's task is in its exchange loop


@dataclass(slots=True)
class _RefreshWaiter:
    done: anyio.Event
    report: SyncReport | None = None
    error: McpError | None = None


class McpClient(ClientSurface):
    """One MCP server, used from async code (asyncio or trio).

    Constructing does no I/O (L1) and never raises for an invalid or refused
    entry: such a client is unavailable and ``ready()`` says why. With
    ``asgi_app=app`` every exchange goes to that ASGI app in this process
    instead of the network (the in-process transport, ``_asgi.py``).
    """

    _START_FIRST = "start the client first (async with, or start(task_group))"
    _turn = contextlib.nullcontext()  # one task at a time runs the engine: no lock

    def _init_io(self) -> None:
        """The state of this driver's I/O (no I/O yet)."""
        self._pool: AsyncPool | AsgiPool | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        self._own_task_group: anyio.abc.TaskGroup | None = None
        self._scopes: dict[int, anyio.CancelScope] = {}
        self._permits = _Permits(self._max_connections)
        self._calls: dict[int, _CallWaiter] = {}
        self._refreshes: dict[int, _RefreshWaiter] = {}
        self._wakeup = anyio.Event()
        self._exchange_ended = anyio.Event()
        self._sleep_until: float | None = _AWAKE  # the deadline the timer task sleeps until
        self._state_changed = anyio.Event()
        self._availability: Availability | None = None  # as last seen by _dispatch
        self._main_scope: anyio.CancelScope | None = None
        self._clock: Callable[[], float] = anyio.current_time  # the loop's, from start()
        self._children: _Children | None = None
        self._close_progress = anyio.Event()  # set when closing may have finished
        self._hook_scopes: set[anyio.CancelScope] = set()  # host hook tasks (D2)

    # --- lifecycle -------------------------------------------------------------------

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start the background connect in ``task_group`` (L2)."""
        if self._started:
            raise InvalidState("the client was already started")
        self._started = True
        self._task_group = task_group
        self._clock = _loop_clock()
        engine = self._new_engine()
        if engine is None:
            return
        if isinstance(engine, HttpClientEngine):
            if self._asgi_app is not None:
                from ._asgi import AsgiPool  # only the in-process transport needs it

                self._pool = AsgiPool(self._asgi_app)
            else:
                # httpcore is imported on the first remote start, not with the
                # driver: a program with only local servers never needs it (B5).
                from ._network import connection_pool

                self._pool = connection_pool(
                    self._ssl_context, self._max_connections, proxy=self._proxy
                )
        else:
            from ._children import _Children  # only local servers need it (B5)

            self._children = _Children(self, task_group)
        task_group.start_soon(self._run, name=f"mcpcore:{self.name}")

    async def __aenter__(self) -> McpClient:
        self._own_task_group = anyio.create_task_group()
        await self._own_task_group.__aenter__()
        self.start(self._own_task_group)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.aclose()
        finally:
            group, self._own_task_group = self._own_task_group, None
            if group is not None:
                await group.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """L6: the engine closes (cancel notices and DELETE, or the child's stop) within
        its own bound while this client performs what it asks; then all is released."""
        if self._closing:
            return
        self._closing = True
        engine = self._engine
        with anyio.CancelScope(shield=True):
            if engine is not None and self._main_scope is not None:
                engine.close(self._now())
                await self._dispatch()
                # The main task drives the engine's deadlines meanwhile; but a cancel
                # scope around ``async with`` (a caller's timeout) takes the client's own
                # task group, main task included, with it. So closing also wakes at each
                # deadline and hands it to the engine: its close bound holds either way.
                while not engine.finished:
                    self._close_progress = anyio.Event()
                    deadline = engine.next_deadline()
                    wait = 0.05 if deadline is None else max(0.0, deadline - self._now())
                    with anyio.move_on_after(wait):
                        await self._close_progress.wait()
                    if deadline is not None and self._now() >= deadline:
                        engine.handle_timer(self._now())
                        await self._dispatch()
            elif engine is not None:
                engine.close(self._now())  # never started: there is nothing to perform
            self._closed = True
            for scope in [*self._scopes.values(), *self._hook_scopes]:
                scope.cancel()
            if self._main_scope is not None:
                self._main_scope.cancel()
            for waiter in self._calls.values():
                if waiter.output is None:
                    waiter.error = waiter.error or closed_outcome(server=self.name)
                waiter.done.set()
            for refresh in self._refreshes.values():
                refresh.error = closed_outcome(server=self.name)
                refresh.done.set()
            self._state_changed.set()
            if self._children is not None:
                await self._children.aclose()
            if self._pool is not None:
                await self._pool.aclose()

    # --- the background task ----------------------------------------------------------

    def _now(self) -> float:
        return self._clock()

    async def _run(self) -> None:
        engine = self._engine
        assert engine is not None
        if self._closing:
            return  # closed before this task ran (an empty ``async with``): nothing to start
        with anyio.CancelScope() as scope:
            self._main_scope = scope
            if self._asgi_app is not None and self._task_group is not None:
                from ._asgi import AsgiPool

                assert isinstance(self._pool, AsgiPool)
                await self._pool.start(self._task_group)
            if self._closing:
                return
            read_pins = self._pins_to_read()
            if read_pins is not None:
                # U1, D2: the host's pin store is blocking by contract: a worker thread.
                self._pins_read(await anyio.to_thread.run_sync(read_pins, abandon_on_cancel=True))
                if self._closing:
                    return
            engine.start(self._now())
            await self._dispatch()
            while not self._closed:
                self._wakeup = anyio.Event()
                deadline = engine.next_deadline()
                self._sleep_until = deadline
                if deadline is None:
                    await self._wakeup.wait()
                else:
                    delay = deadline - self._now()
                    if delay > 0:
                        with anyio.move_on_after(delay):
                            await self._wakeup.wait()
                    if self._now() >= deadline:
                        engine.handle_timer(self._now())
                self._sleep_until = _AWAKE
                await self._dispatch()

    async def _dispatch(
        self, perform_here: int | None = None
    ) -> tuple[HttpRequest, anyio.CancelScope] | None:
        """Perform the engine's actions and route its events. Never blocks long.

        With ``perform_here`` (a call id), the exchange carrying that call's
        request is not started as a task but returned, for the calling task
        to perform itself.
        """
        engine = self._engine
        if engine is None:
            return None
        here = self._perform_actions(engine, perform_here, self._start_exchange)
        availability = engine.availability
        if availability is not self._availability and availability != self._availability:
            # L5, L8: a new session set up or refused wakes whoever waits in ready().
            self._availability = availability
            self._state_changed.set()
            self._state_changed = anyio.Event()
        if self._login_waiting and isinstance(engine, HttpClientEngine) and engine.login_settled:
            self._state_changed.set()
            self._state_changed = anyio.Event()
        if self._closing and engine.finished:
            self._close_progress.set()
        # Wake the timer task only when the engine now needs an earlier wake-up
        # than the one it sleeps until: waking it on every event cost a task
        # switch and a cancel scope per HTTP chunk.
        deadline = engine.next_deadline()
        if deadline is not None and (self._sleep_until is None or deadline < self._sleep_until):
            self._wakeup.set()
        return here

    def _start_exchange(
        self, action: HttpRequest, perform_here: int | None
    ) -> tuple[HttpRequest, anyio.CancelScope] | None:
        """A task for the exchange ``action``, or ``(action, its scope)`` when the
        caller of ``perform_here`` performs it itself."""
        engine = self._engine
        if self._task_group is None or not isinstance(engine, HttpClientEngine):
            return None
        scope = anyio.CancelScope()
        self._scopes[action.exchange_id] = scope
        if perform_here is not None and action.request_id == perform_here:
            return (action, scope)
        if (caller := self._performer(engine, action)) is not None:
            caller.then = (action, scope)  # B3: its caller's task takes it next
        else:
            self._task_group.start_soon(self._exchange, action, scope)
        return None

    def _abort(self, xid: int) -> None:
        scope = self._scopes.pop(xid, None)
        if scope is not None:
            scope.cancel()

    def _perform_auth(self, action: AuthAction | AskHost) -> None:
        """D2: each hook (sign-in or input) in a task of its own, cancelled on close; a store method
        (blocking by contract) on a worker thread, never in the event loop."""
        if not self._closed and self._task_group is not None:
            self._task_group.start_soon(self._run_hook, self._hook_call(action))

    def _store_pins(self, store_pins: Callable[[], None]) -> None:
        """U1: on a worker thread, in the client's task group (closing waits for it)."""
        if self._task_group is not None:
            self._task_group.start_soon(anyio.to_thread.run_sync, store_pins)

    async def _run_hook(self, call: HookCall) -> None:
        value: object = None
        error: Exception | None = None
        with anyio.CancelScope() as scope:
            self._hook_scopes.add(scope)
            try:
                if call.blocking:
                    value = await anyio.to_thread.run_sync(call.invoke, abandon_on_cancel=True)
                else:
                    value = call.invoke()
                    if hasattr(value, "__await__"):
                        value = await value
            except Exception as exc:  # the hook's own failure: the engine decides (D2)
                error = exc
            finally:
                self._hook_scopes.discard(scope)
        if scope.cancelled_caught:
            return  # closed meanwhile: nothing waits for the answer
        await self._report_hook(call, value, error)

    def _dispatch_soon(self) -> None:
        """Dispatch from synchronous code: the main task picks it up at once."""
        self._wakeup.set()

    def _wake_call(self, step: WakeCall) -> None:
        waiter = self._calls.get(step.call_id)
        if waiter is None:
            return
        if isinstance(step.outcome, McpError):
            waiter.error = step.outcome
        else:
            waiter.output = step.outcome
        waiter.done.set()

    def _wake_refresh(self, step: WakeRefresh) -> None:
        refresh = self._refreshes.get(step.refresh_id)
        if refresh is None:
            return
        if isinstance(step.outcome, McpError):
            refresh.error = step.outcome
        else:
            refresh.report = step.outcome
        refresh.done.set()

    def _wake_state(self) -> None:
        self._state_changed.set()
        self._state_changed = anyio.Event()

    def _call_host(self, callback: Callable[..., object], call: HostCallback) -> None:
        """F2, F8, Q2: a host's callback, a function or a coroutine function; what it
        raises is logged, never the host's task group's end."""
        result = call_host(callback, call, _log)
        if result is not None and self._task_group is not None:

            async def finish() -> None:
                try:
                    await result
                except Exception:
                    _log.exception("%s callback failed", call.option)

            self._task_group.start_soon(finish)

    async def _exchange(
        self, request: HttpRequest, scope: anyio.CancelScope, caller: _CallWaiter | None = None
    ) -> None:
        """Perform one HTTP exchange and report every piece of it to the engine.

        ``caller`` is the call whose task this is: once that call has its
        outcome, whatever the server still sends on the stream is read by a
        task of its own (``_read_rest``) unless it ends without waiting, so
        the caller returns at once.
        """
        engine = self._engine
        pool = self._pool
        assert isinstance(engine, HttpClientEngine) and pool is not None
        xid = request.exchange_id
        handed_off = False
        built: httpcore.Request | None = None  # what the pool was given (U3: was it sent?)
        with scope:
            try:
                async with AsyncExitStack() as stack:
                    # Never queue more requests in httpcore's pool than it has
                    # connections: its bookkeeping is linear in the waiting ones.
                    await stack.enter_async_context(self._permits)
                    response: httpcore.Response | AsgiResponse
                    chunks: AsyncIterator[bytes]
                    if self._asgi_app is None:  # httpcore's request, built once (not by stream())
                        from ._network import AsyncPool, http_request, response_body

                        assert isinstance(pool, AsyncPool)
                        body = request.body
                        framed = None if body is None else (len(body), _OneChunk(body))
                        built = http_request(
                            request.method, request.url, request.headers, framed, request.replayable
                        )
                        response = await pool.handle_async_request(built)
                        chunks, close = response_body(response)
                        stack.push_async_callback(close)
                    else:
                        headers, content = _framed(request)
                        response = await stack.enter_async_context(
                            pool.stream(
                                request.method, request.url, headers=headers, content=content
                            )
                        )
                        chunks = response.aiter_stream()
                    engine.response_started(xid, response.status, response.headers, self._now())
                    await self._dispatch()
                    if caller is None:
                        while await self._feed(xid, chunks) is not None:
                            pass
                    else:
                        received = 0
                        while (chunk := await self._feed(xid, chunks)) is not None:
                            received += len(chunk)
                            # Done, or its next exchange waits on this one: the
                            # rest of a stream the server holds open is not waited on.
                            if (
                                caller.done.is_set() or caller.then is not None
                            ) and not _ends_without_waiting(response, received):
                                handed_off = self._hand_off(request, chunks, stack)
                                if handed_off:
                                    return
                engine.response_ended(xid, self._now())
            except Exception as exc:
                if _went_out(built, exc):  # U3: it failed after going out whole
                    engine.request_sent(xid, self._now())
                engine.response_failed(xid, TransportFailure.from_exception(exc), self._now())
            finally:
                if not handed_off:
                    self._exchange_done(xid, scope)
        if not scope.cancel_called and not handed_off:
            await self._dispatch()

    def _performer(self, engine: HttpClientEngine, action: HttpRequest) -> _CallWaiter | None:
        """B3: the caller whose task performs ``action`` next: the call (a listing's
        later page, an input round) is its own, and its task is in its exchange loop
        with nothing claimed yet. A listing of 100 pages then costs no task per page."""
        if action.request_id is None:
            return None
        owner = engine.owner_of(action.request_id)
        waiter = self._calls.get(owner) if owner is not None else None
        if waiter is None or not waiter.performing or waiter.then is not None:
            return None
        return waiter

    def _start_claimed(self, waiter: _CallWaiter) -> None:
        """An exchange claimed for a caller that left its loop (cancelled, failed):
        a task of its own performs it, as it would have without the claim."""
        claimed, waiter.then = waiter.then, None
        if claimed is None:
            return
        request, scope = claimed
        if not self._closed and self._task_group is not None:
            self._task_group.start_soon(self._exchange, request, scope)
        elif self._scopes.get(request.exchange_id) is scope:
            del self._scopes[request.exchange_id]

    def _hand_off(
        self, request: HttpRequest, chunks: AsyncIterator[bytes], stack: AsyncExitStack
    ) -> bool:
        """Give the rest of a caller's stream to a task of its own (False: closing)."""
        if self._closing or self._task_group is None:
            return False
        scope = anyio.CancelScope()
        self._scopes[request.exchange_id] = scope  # aborts now cancel that task
        self._task_group.start_soon(self._read_rest, request, chunks, stack.pop_all(), scope)
        return True

    async def _read_rest(
        self,
        request: HttpRequest,
        chunks: AsyncIterator[bytes],
        closing: AsyncExitStack,
        scope: anyio.CancelScope,
    ) -> None:
        """Feed the engine the rest of a handed-off stream, then its end; close it."""
        engine = self._engine
        assert isinstance(engine, HttpClientEngine)
        xid = request.exchange_id
        with scope:
            try:
                async with closing:
                    while await self._feed(xid, chunks) is not None:
                        pass
                engine.response_ended(xid, self._now())
            except Exception as exc:
                engine.response_failed(xid, TransportFailure.from_exception(exc), self._now())
            finally:
                self._exchange_done(xid, scope)
        if not scope.cancel_called:
            await self._dispatch()

    async def _feed(self, xid: int, chunks: AsyncIterator[bytes]) -> bytes | None:
        """Hand the engine the next body chunk of ``xid`` (``None``: the body ended)."""
        chunk = await _next_chunk(chunks)
        engine = self._engine
        if chunk is not None and isinstance(engine, HttpClientEngine):
            engine.response_data(xid, chunk, self._now())
            await self._dispatch()
        return chunk

    def _exchange_done(self, xid: int, scope: anyio.CancelScope) -> None:
        if self._scopes.get(xid) is scope:
            del self._scopes[xid]
        self._exchange_ended.set()

    # --- the primitives the surface calls (_surface.py) -------------------------------

    async def _perform_call(self, begin: Begin, on_progress: ProgressCallback | None) -> Any:
        await self._ensure_ready()
        engine = self._engine
        assert engine is not None
        return await self._outcome(begin(engine, self._now()), on_progress)

    async def _perform_refresh(self) -> SyncReport:
        engine = self._engine
        assert engine is not None
        refresh_id = engine.refresh(self._now())
        waiter = _RefreshWaiter(done=anyio.Event())
        self._refreshes[refresh_id] = waiter
        try:
            await self._dispatch()
            await waiter.done.wait()
        finally:
            self._refreshes.pop(refresh_id, None)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.report is not None
        return waiter.report

    async def _wait_for(
        self, check: Callable[[], _T | None], timeout: float | None, *, login: bool = False
    ) -> _T | None:
        found = check()
        if found is not None:
            return found  # the usual case on every call: no cancel scope needed
        self._login_waiting += login
        try:
            with anyio.move_on_after(timeout):
                while (found := check()) is None:
                    await self._state_changed.wait()
                return found
        finally:
            self._login_waiting -= login
        return None

    async def _begin_reconnect(self) -> None:
        engine = self._engine
        if engine is not None and not self._closing:
            engine.reconnect(self._now())
            self._dispatch_soon()
        await self._dispatch()

    async def _outcome(self, call_id: int, on_progress: ProgressCallback | None) -> Any:
        """Wait for the request ``call_id`` to end (performing its exchange here when
        it may); a caller that gives up cancels it (K6)."""
        engine = self._engine
        assert engine is not None
        waiter = _CallWaiter(done=anyio.Event(), on_progress=on_progress)
        self._calls[call_id] = waiter
        try:
            here = await self._dispatch(perform_here=call_id)
            if here is not None:
                waiter.performing = True
                try:
                    while here is not None:
                        await self._exchange(*here, caller=waiter)
                        if waiter.done.is_set():
                            break
                        here, waiter.then = waiter.then, None
                finally:
                    waiter.performing = False
                    self._start_claimed(waiter)
            if not waiter.done.is_set():  # usually set by now: no event-loop turn then
                await waiter.done.wait()
        except BaseException:
            # K6: the caller gave up (cancel scope, task cancel, KeyboardInterrupt).
            if not waiter.done.is_set():
                engine.cancel(call_id, self._now())
                with anyio.CancelScope(shield=True):
                    await self._dispatch()
            raise
        finally:
            self._calls.pop(call_id, None)
        if waiter.error is not None:
            raise waiter.error
        if waiter.output is None:  # cancelled by closing
            raise closed_outcome(server=self.name)
        return waiter.output
