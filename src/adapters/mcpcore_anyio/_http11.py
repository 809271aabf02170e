"""HTTP/1.1 on one of the anyio driver's connections, over h11.

Owns ``Http11``: one request at a time on a connected stream, as httpcore's
``AsyncHTTP11Connection`` performs it (the same h11 events, the same
httpcore exceptions, the same ``Response`` and the same reuse and
``has_expired`` rules), for the driver's own pool (``_network.AsyncPool``),
which gives a connection to one request at a time.

Why not httpcore's class: it takes an ``anyio.Lock`` when a request starts
and again when its response is closed, and an ``anyio.Lock`` yields to the
event loop on every acquire, free or not. Those two event-loop turns were
about 7 % of the instructions of a sequential call. Here the state is
checked and changed with no await in between (one event loop: nothing else
runs there), and a cancellation pending when a request starts still stops
it before anything is written, as the lock's acquire did.
Proxied requests still go through httpcore's proxy pool and its classes.
"""

from __future__ import annotations

import enum
from typing import Any

import anyio
import anyio.lowlevel
import h11
import httpcore

# httpcore's own figures (AsyncHTTP11Connection.READ_NUM_BYTES, MAX_INCOMPLETE_EVENT_SIZE)
_READ_BYTES = 64 * 1024
_MAX_INCOMPLETE_EVENT = 100 * 1024


class _State(enum.IntEnum):
    NEW = 0
    ACTIVE = 1
    IDLE = 2
    CLOSED = 3


class Http11:
    """One connected stream's HTTP/1.1 exchanges, one at a time (see the module)."""

    def __init__(self, origin: httpcore.Origin, stream: httpcore.AsyncNetworkStream) -> None:
        self._origin = origin
        self._stream = stream
        self._state = _State.NEW
        self._request_count = 0
        self._h11 = h11.Connection(
            our_role=h11.CLIENT, max_incomplete_event_size=_MAX_INCOMPLETE_EVENT
        )

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        # what the state lock's acquire did first: a cancelled exchange writes nothing
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._state not in (_State.NEW, _State.IDLE):
            raise httpcore.ConnectionNotAvailable()
        self._request_count += 1
        self._state = _State.ACTIVE
        try:
            timeouts = request.extensions.get("timeout", {})
            try:
                await self._send_request(request, timeouts.get("write"))
            except httpcore.WriteError:
                # A server may close before reading the whole request and still send a
                # well-formed response (an error): read it, as httpcore does.
                pass
            read_timeout = timeouts.get("read")
            while True:
                event = await self.receive(read_timeout)
                if isinstance(event, h11.Response):
                    break
                if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
                    break
            return httpcore.Response(
                status=event.status_code,
                headers=event.headers.raw_items(),
                content=_Chunks(self, read_timeout),
                extensions={
                    "http_version": b"HTTP/" + event.http_version,
                    "reason_phrase": event.reason,
                    "network_stream": self._stream,
                },
            )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.response_closed()
            raise

    async def _send_request(self, request: httpcore.Request, timeout: float | None) -> None:
        try:
            head = h11.Request(
                method=request.method, target=request.url.target, headers=request.headers
            )
        except h11.LocalProtocolError as exc:
            raise httpcore.LocalProtocolError(exc) from exc
        await self._send(head, timeout)
        body: Any = request.stream  # an async iterable: the driver's requests are async
        async for chunk in body:
            await self._send(h11.Data(data=chunk), timeout)
        await self._send(h11.EndOfMessage(), timeout)

    async def _send(self, event: h11.Event, timeout: float | None) -> None:
        data = self._h11.send(event)
        if data is not None:
            await self._stream.write(data, timeout)

    async def receive(self, timeout: float | None) -> Any:
        """The next h11 event, reading from the stream as long as h11 needs data."""
        connection = self._h11
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpcore.RemoteProtocolError(exc) from exc
            if event is not h11.NEED_DATA:
                return event
            data = await self._stream.read(_READ_BYTES, timeout)
            if data == b"" and connection.their_state == h11.SEND_RESPONSE:
                raise httpcore.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
            connection.receive_data(data)

    async def response_closed(self) -> None:
        """The response is done with: the connection is idle again, or closed if
        either side did not finish its message."""
        connection = self._h11
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            self._state = _State.IDLE
            connection.start_next_cycle()
        else:
            await self.aclose()

    async def aclose(self) -> None:
        self._state = _State.CLOSED
        await self._stream.aclose()

    @property
    def stream(self) -> httpcore.AsyncNetworkStream:
        return self._stream

    def is_available(self) -> bool:
        return self._state == _State.IDLE

    def has_expired(self) -> bool:
        # No keep-alive expiry (none was set on httpcore's either). An idle connection
        # whose socket is readable can only be about to read b"": the server closed it.
        return self._state == _State.IDLE and bool(self._stream.get_extra_info("is_readable"))

    def is_idle(self) -> bool:
        return self._state == _State.IDLE

    def is_closed(self) -> bool:
        return self._state == _State.CLOSED

    def info(self) -> str:
        return (
            f"{str(self._origin)!r}, HTTP/1.1, {self._state.name}, "
            f"Request Count: {self._request_count}"
        )


class _Chunks:
    """A response's body chunks; closing it ends the response on its connection.

    An iterator object, not an async generator: a body left part-read (handed to
    another task, or dropped by an abort) has no generator to finalise.
    """

    __slots__ = ("_closed", "_connection", "_ended", "_timeout")

    def __init__(self, connection: Http11, timeout: float | None) -> None:
        self._connection = connection
        self._timeout = timeout
        self._ended = False
        self._closed = False

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        while not self._ended:
            try:
                event = await self._connection.receive(self._timeout)
            except BaseException:
                # as httpcore does: the response (and maybe the connection) is closed first
                with anyio.CancelScope(shield=True):
                    await self.aclose()
                raise
            if isinstance(event, h11.Data):
                return bytes(event.data)
            if isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
                self._ended = True
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._connection.response_closed()
