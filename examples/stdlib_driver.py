"""A third MCP client driver, on the Python standard library alone.

``mcpcore`` is sans-IO: ``HttpClientEngine`` makes every protocol decision
(handshake, listing, request ids, deadlines, cancellation, resumption, close)
and this file only performs what it asks for. It proves that the public names
of ``mcpcore`` are enough to write a driver: nothing here imports a private
module, httpcore or anyio. Remote (Streamable HTTP) servers only.

How it works, in four pieces:

* **One lock** guards the engine. Every input or command runs under it and
  ends in ``_take_work``, which takes the engine's actions and events. Events
  are routed there (a queue put per call, nothing more). No I/O is done under
  the lock: a request's thread is started there and connects on its own; an
  abort's socket shutdown is done just after the lock is released.
* **A thread per exchange** (``_Exchange``): each ``HttpRequest`` gets its own
  connection (``http.client``; no pooling, to stay short) and thread, which
  reports the status, every chunk and the end. An SSE stream or the GET
  listen stream simply stays in its thread for as long as it lasts.
  ``AbortExchange`` shuts that connection's socket down, so a blocked read
  returns at once; nothing more is reported for it.
* **A timer thread** sleeps until ``engine.next_deadline()`` and then calls
  ``engine.handle_timer(now)``. Every wait in this driver ends by an engine
  deadline: call timeouts, the start-up bound, the close bound.
* **Callers** wait on their call's queue. Progress (``on_progress``) runs in
  the thread that waits for the result, never under the lock, and always
  before the result is returned.

Try it against the bundled demo server::

    python -m mcpcore_demo --port 8000    # prints its URL
    python examples/stdlib_driver.py http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import http.client
import os
import queue
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, Unpack

from mcpcore import (
    AbortExchange,
    Availability,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    ClientOptions,
    FailureKind,
    HttpClientEngine,
    HttpRequest,
    McpError,
    ProgressReceived,
    RemoteServer,
    Tool,
    ToolOutput,
    TransportFailure,
    Unavailable,
    call_outcome,
    closed_outcome,
    prepare_client,
)

__all__ = ["CallHandle", "ExampleClient"]

_T = TypeVar("_T")
ProgressCallback = Callable[[float, "float | None", "str | None"], None]
CONNECT_TIMEOUT = 10.0  # seconds; a connect cannot be aborted, so it is bounded instead
READ_SIZE = 65536


class _Exchange:
    """One HTTP exchange: its own connection, performed in its own thread."""

    def __init__(self, client: ExampleClient, request: HttpRequest) -> None:
        self.client = client
        self.request = request
        self.aborted = False  # set under the client's lock: report nothing more
        self._guard = threading.Lock()  # guards ``_sock`` against a concurrent abort
        self._sock: socket.socket | None = None
        self.thread = threading.Thread(
            target=self.run,
            name=f"mcpcore-example:{client.name}:{request.method}-{request.exchange_id}",
            daemon=True,
        )

    def abort(self) -> None:
        """Break a blocked read (or write): shut the socket down. Never blocks."""
        with self._guard:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed

    def run(self) -> None:
        request, xid = self.request, self.request.exchange_id
        url = urllib.parse.urlsplit(request.url)
        connect = min(request.timeout or CONNECT_TIMEOUT, CONNECT_TIMEOUT)
        conn: http.client.HTTPConnection
        if url.scheme == "https":
            context = ssl.create_default_context()
            conn = http.client.HTTPSConnection(
                url.hostname or "", url.port, timeout=connect, context=context
            )
        else:
            conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=connect)
        response: http.client.HTTPResponse | None = None
        try:
            conn.connect()
            assert conn.sock is not None
            conn.sock.settimeout(request.timeout)  # None: the engine's deadlines bound it
            with self._guard:
                self._sock = conn.sock
            if self.aborted:  # aborted while connecting: the socket was not known yet
                return
            conn.putrequest(
                request.method,
                (url.path or "/") + (f"?{url.query}" if url.query else ""),
                skip_accept_encoding=True,
            )
            for name, value in request.headers:
                conn.putheader(name, value)
            if request.body is not None:
                conn.putheader("Content-Length", str(len(request.body)))
            conn.endheaders(request.body)
            response = conn.getresponse()
            engine, report = self.client.engine, self.client._report
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.getheaders()]
            if not report(self, engine.response_started, xid, response.status, headers):
                return
            while chunk := response.read1(READ_SIZE):
                if not report(self, engine.response_data, xid, chunk):
                    return
            report(self, engine.response_ended, xid)
        except Exception as exc:
            failure = (
                TransportFailure(FailureKind.PROTOCOL)  # not valid HTTP (BadStatusLine, ...)
                if isinstance(exc, http.client.HTTPException) and not isinstance(exc, OSError)
                else TransportFailure.from_exception(exc)  # never str(exc): it may hold headers
            )
            self.client._report(self, self.client.engine.response_failed, xid, failure)
        finally:
            if response is not None:
                response.close()
            conn.close()
            self.client._exchange_done(self)


class CallHandle:
    """A call in flight: ``result()`` waits for it, ``cancel()`` abandons it from any thread."""

    def __init__(
        self, client: ExampleClient, call_id: int, on_progress: ProgressCallback | None
    ) -> None:
        self._client = client
        self.call_id = call_id
        self._on_progress = on_progress
        # ProgressReceived items, then one final ToolOutput or McpError, in the engine's order.
        self._inbox: queue.SimpleQueue[ProgressReceived | ToolOutput | McpError] = (
            queue.SimpleQueue()
        )
        self._outcome: ToolOutput | McpError | None = None

    def cancel(self, reason: str = "cancelled by the caller") -> bool:
        """K6: abandon the call; the engine sends ``notifications/cancelled``."""
        return self._client._cancel(self.call_id, reason)

    def result(self, timeout: float | None = None) -> ToolOutput:
        """Wait for the outcome (call it from one thread); runs ``on_progress`` here.

        Without ``timeout`` the wait is still bounded: the engine ends every call
        by its deadline, and closing the client ends it too.
        """
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while self._outcome is None:
                remaining = None if end is None else max(0.0, end - time.monotonic())
                try:
                    item = self._inbox.get(timeout=remaining)
                except queue.Empty:
                    raise TimeoutError("the call is still running") from None
                if isinstance(item, ProgressReceived):
                    if self._on_progress is not None:
                        self._on_progress(item.progress, item.total, item.message)
                else:
                    self._outcome = item
        except KeyboardInterrupt:
            self.cancel()  # Ctrl-C while waiting abandons the call
            raise
        if isinstance(self._outcome, McpError):
            raise self._outcome
        return self._outcome


class ExampleClient:
    """One remote MCP server, used from blocking code (a subset of ``mcpcore_threaded.McpClient``)."""

    def __init__(
        self, name: str, server: Mapping[str, Any] | RemoteServer, **options: Unpack[ClientOptions]
    ) -> None:
        setup = prepare_client(name, server, options, env=os.environ, home=os.path.expanduser("~"))
        self.name = setup.name
        self._unavailable: str | None = None
        self._engine: HttpClientEngine | None = None
        if setup.config_error is not None:
            self._unavailable = str(setup.config_error)
        elif not isinstance(setup.server, RemoteServer):
            self._unavailable = "this example drives remote (url) servers only"
        else:
            self._engine = HttpClientEngine(
                setup.server, options=setup.session, limits=setup.limits, listen=setup.listen
            )
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # anything moved: timer, ready, close
        self._exchanges: dict[int, _Exchange] = {}
        self._calls: dict[int, CallHandle] = {}
        self._closing = False
        self._stopped = False
        self._timer = threading.Thread(
            target=self._run_timer, name=f"mcpcore-example:{self.name}", daemon=True
        )

    # --- lifecycle ---------------------------------------------------------------------

    @property
    def engine(self) -> HttpClientEngine:
        """The engine; ``Unavailable`` when the entry gave none (say, a config error)."""
        if self._engine is None:
            raise Unavailable(self._unavailable or "unavailable", server=self.name)
        return self._engine

    def __enter__(self) -> ExampleClient:
        if self._engine is not None and self._timer.ident is None:
            self._timer.start()
            self._command(self._engine.start)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """L6: the engine cancels running calls and ends the session; we perform it all."""
        engine = self._engine
        if engine is None or self._timer.ident is None:  # never entered: nothing runs
            return
        with self._lock:
            first, self._closing = not self._closing, True
        if first:
            self._command(engine.close)
        with self._lock:
            while not engine.finished:  # bounded by the engine's close deadline
                self._changed.wait()
            self._stopped = True
            self._changed.notify_all()
            for handle in self._calls.values():  # none should be left; be sure anyway
                handle._inbox.put(closed_outcome(server=self.name))
            self._calls.clear()
            threads = [ex.thread for ex in self._exchanges.values()]
        self._timer.join()
        for thread in threads:  # each one ended or was aborted: they return at once
            thread.join()

    # --- the engine, under the lock ----------------------------------------------------------

    def _command(self, command: Callable[[float], _T]) -> _T:
        """Run ``command(now)`` on the engine under the lock, then do the aborts it asked for."""
        with self._lock:
            result = command(time.monotonic())
            work = self._take_work()
        self._perform(work)
        return result

    def _report(self, exchange: _Exchange, engine_input: Callable[..., None], *args: Any) -> bool:
        """Feed ``engine_input(*args, now)`` for an exchange; False once it was aborted."""
        with self._lock:
            if exchange.aborted:
                return False  # the engine wants nothing more from it: its thread stops
            engine_input(*args, time.monotonic())
            work = self._take_work()
        self._perform(work)
        return True

    def _take_work(self) -> list[Callable[[], None]]:
        """Under the lock: book the actions, route the events, wake waiters.

        A request's thread starts here, so a later abort always finds it; the
        aborts themselves (a socket shutdown each) are returned, to be done
        after the lock is released.
        """
        work: list[Callable[[], None]] = []
        for action in self.engine.take_actions():
            if isinstance(action, HttpRequest):
                exchange = _Exchange(self, action)
                self._exchanges[action.exchange_id] = exchange
                exchange.thread.start()  # no I/O yet: the thread connects on its own
            elif isinstance(action, AbortExchange):
                aborted = self._exchanges.get(action.exchange_id)
                if aborted is not None:
                    aborted.aborted = True  # from now on its reports are dropped
                    work.append(aborted.abort)
        for event in self.engine.take_events():
            if isinstance(event, (CallSucceeded, CallFailed, CallCancelled)):
                handle = self._calls.pop(event.call_id, None)
                if handle is not None:
                    handle._inbox.put(call_outcome(event, server=self.name))
            elif isinstance(event, ProgressReceived):
                handle = self._calls.get(event.call_id)
                if handle is not None:
                    handle._inbox.put(event)  # the waiting caller runs on_progress
            # SessionReady / StartFailed: ``availability`` says it. Tool-list
            # events need nothing here: ``tools`` reads the engine's catalogue.
        self._changed.notify_all()  # the deadline may have moved; availability may be known
        return work

    def _perform(self, work: list[Callable[[], None]]) -> None:
        for step in work:  # outside the lock
            step()

    def _exchange_done(self, exchange: _Exchange) -> None:
        with self._lock:
            if self._exchanges.get(exchange.request.exchange_id) is exchange:
                del self._exchanges[exchange.request.exchange_id]

    def _run_timer(self) -> None:
        engine = self.engine
        while True:
            with self._lock:
                while True:
                    if self._stopped:
                        return
                    deadline, now = engine.next_deadline(), time.monotonic()
                    if deadline is not None and deadline <= now:
                        break
                    self._changed.wait(None if deadline is None else deadline - now)
                engine.handle_timer(now)
                work = self._take_work()
            self._perform(work)

    # --- what callers use -------------------------------------------------------------------

    def ready(self, timeout: float | None = None) -> Availability:
        """Wait for the current start-up attempt (L2, L3); its outcome, or why not yet."""
        if self._engine is None:
            return Availability(False, self._unavailable)
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while (availability := self._engine.availability) is None:
                remaining = None if end is None else end - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return Availability(False, f"still starting after {timeout:g} s")
                self._changed.wait(remaining)  # the 120 s start-up bound ends it anyway
            return availability

    @property
    def tools(self) -> tuple[Tool, ...]:
        with self._lock:
            catalogue = None if self._engine is None else self._engine.catalogue
            return () if catalogue is None else catalogue.tools

    def start_call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> CallHandle:
        """Start a call (after start-up) and return its handle at once."""
        availability = self.ready()
        if not availability:
            raise Unavailable(availability.reason or "unavailable", server=self.name)
        with self._lock:
            if self._closing:
                raise Unavailable("the client was closed", server=self.name)
            call_id = self.engine.call(tool_id, arguments, time.monotonic(), timeout=timeout)
            handle = CallHandle(self, call_id, on_progress)
            self._calls[call_id] = handle
            work = self._take_work()
        self._perform(work)
        return handle

    def call(
        self,
        tool_id: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ToolOutput:
        """Call a tool and wait; raises ``BackendError``, ``CallTimeout``, ``Cancelled``, ..."""
        return self.start_call(
            tool_id, arguments, timeout=timeout, on_progress=on_progress
        ).result()

    def _cancel(self, call_id: int, reason: str) -> bool:
        return self._command(lambda now: self.engine.cancel(call_id, now, reason))


def main(url: str) -> None:
    with ExampleClient("demo", {"url": url}) as client:
        availability = client.ready(30)
        if not availability:
            sys.exit(f"unavailable: {availability.reason}")
        print("tools:", ", ".join(tool.id for tool in client.tools))
        if any(tool.id == "demo/slow" for tool in client.tools):
            output = client.call(
                "demo/slow",
                {"steps": 3, "delay": 0.1},
                on_progress=lambda done, total, message: print(f"progress {done:g} of {total}"),
            )
            print("result:", output.text)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp")
