"""Small tools of the anyio driver's exchanges: a request body, the loop's clock, permits,
whether a failed request had gone out whole.

Moved out of ``_client.py``; the client uses each (and tests import
``_OneChunk`` and ``_Permits`` from ``_client``, where they are still named).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    import httpcore

    from mcpcore import HttpRequest

    from ._asgi import AsgiResponse


class _OneChunk:
    """A request body as an async iterable that is not an async generator.

    httpcore iterates ``bytes`` content with an async generator; when a server
    closes before reading the body, that generator is dropped unfinished and
    trio reports a ResourceWarning. An iterator object has nothing to finalise.
    Each iteration starts over: the pool may send a request again.
    """

    __slots__ = ("_body", "_data")

    def __init__(self, data: bytes) -> None:
        self._body = data
        self._data: bytes | None = data

    def __aiter__(self) -> _OneChunk:
        self._data = self._body
        return self

    async def __anext__(self) -> bytes:
        data, self._data = self._data, None
        if data is None:
            raise StopAsyncIteration
        return data


def _framed(request: HttpRequest) -> tuple[list[tuple[bytes, bytes]], _OneChunk | None]:
    if request.body is None:
        return request.headers, None
    length = (b"content-length", str(len(request.body)).encode("ascii"))
    return [*request.headers, length], _OneChunk(request.body)


def _loop_clock() -> Callable[[], float]:
    """The running event loop's clock, the one ``anyio.current_time`` reads, without
    finding the backend again on every read (a driver reads it four times a call)."""
    try:
        import sniffio

        library = sniffio.current_async_library()
    except Exception:  # no sniffio, or no loop it knows: anyio finds out each time
        return anyio.current_time
    if library == "asyncio":
        import asyncio

        return asyncio.get_running_loop().time  # what anyio's asyncio backend reads
    if library == "trio":
        import trio

        return trio.current_time  # what anyio's trio backend reads
    return anyio.current_time


async def _next_chunk(chunks: AsyncIterator[bytes]) -> bytes | None:
    """The next body chunk, or ``None`` at the end.

    Not an ``async for``: a caller's stream may be left part-read and handed
    to another task, and a loop helper that is itself an async generator
    would be left unfinished (trio reports those).
    """
    try:
        return await chunks.__anext__()
    except StopAsyncIteration:
        return None


def _ends_without_waiting(response: httpcore.Response | AsgiResponse, received: int) -> bool:
    """Whether reading the rest of ``response`` cannot wait on the server."""
    if getattr(response, "extensions", None) is None:  # the in-process ASGI response
        for name, value in response.headers:
            if name.lower() == b"content-length":
                return value.strip().isdigit() and received >= int(value)
        return False
    from ._network import ends_without_waiting  # loaded by start() already

    return ends_without_waiting(response, received)


def _went_out(built: httpcore.Request | None, error: BaseException) -> bool:
    """U3: whether the request that failed with ``error`` had gone out whole first, for
    the client to report ``request_sent``: the pool's word on ``built`` (httpcore's
    request), or, in process (``built`` is None: no httpcore request), the app's: it
    had received the whole body before it failed or ended without a response."""
    if built is None:
        from ._asgi import AsgiTransportError  # loaded with the in-process pool

        return isinstance(error, AsgiTransportError) and error.received
    from mcpcore_httpcore import was_sent  # loaded with the pool

    return was_sent(built)


class _Permits:
    """At most ``limit`` holders at once, handed over in order of asking.

    Taking a free permit does not yield to the event loop: ``anyio.Semaphore``
    checkpoints on every acquire, a whole event-loop turn on each call.
    """

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._waiting: deque[anyio.Event] = deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        handed = anyio.Event()
        self._waiting.append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():
                self._release()  # handed over as this waiter gave up: pass it on
            else:
                self._waiting.remove(handed)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    def _release(self) -> None:
        if self._waiting:
            self._waiting.popleft().set()  # straight to the next in line
        else:
            self._free += 1
