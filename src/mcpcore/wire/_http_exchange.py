"""One Streamable HTTP exchange as data, and what the mapping and its reader share.

``HttpMapping`` (``_http``) opens exchanges and owns their bookkeeping;
``ResponseReader`` (``_http_responses``) reads what comes back on them. Both
work on the records defined here: an exchange, its logical stream and its
reopening timer; what goes up to the session (a message, a failed request,
an expired session); the P6 bounds an exchange's messages are held to; and
the small helpers both sides use for headers, errors and debug records. It
sits below both so that neither imports the other's module for them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import field
from enum import Enum
from typing import TYPE_CHECKING, NoReturn, Protocol, Union

from ..base._errors import LimitExceeded, McpError, TransportError
from ..base._escape import excerpt
from ..base._record import record
from ._jsonrpc import ErrorResponse, Message, Request, decode_message, describe_message
from ._sse import SSEDecoder

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..base._events import Action

_log = logging.getLogger("mcpcore.http")


_DEBUG = logging.DEBUG


_SHOWN_SESSION_ID = 40  # characters of a session id a debug record shows


_ERROR_EXCERPT_BYTES = 512


_ERROR_JSON_BYTES = 64 * 1024  # M9: an error status's JSON body read whole up to this


_SSE_LINE_SLACK = 1024  # room for "data: " and the like beyond max_message_size


@record(frozen=True, slots=True, kw_only=True)
class HttpLimits:
    """P6 bounds for what a server may send."""

    max_message_size: int = 64 * 1024 * 1024
    max_sse_line: int = 64 * 1024 * 1024 + 1024
    # B11: the bound for the response to a kind declared ``large_result``
    # (``resources/read``): a read carries a file whole, and a blob in base64 is
    # 4/3 of its bytes, so a 50 MiB file is a 67 MiB message. A call's result
    # stays under max_message_size; on stdio, where a line is bounded before it
    # is known which request it answers, lines take the larger of the two.
    max_read_size: int = 128 * 1024 * 1024

    @property
    def stdio_line_limit(self) -> int:
        """The longest line a stdio server may send: the larger of the two bounds."""
        return max(self.max_message_size, self.max_read_size)

    max_reconnects: int = 5  # resumes in a row that bring no new event (H4)
    default_retry: float = 1.0  # seconds, when the server sent no `retry`
    # L6, H9: seconds closing may take in all: the cancel notices and the DELETE
    # go out together, and whatever has not finished by then is aborted.
    close_timeout: float = 2.0
    response_linger: float = 5.0  # seconds a stream may stay open after its response
    # H10: seconds a notification or answer POST may take before it is dropped.
    notice_timeout: float = 10.0
    # P6: answers to server requests (ping, ...) on their way at once; more wait in
    # a queue of at most max_queued_answers, beyond which an answer is dropped.
    max_answers_in_flight: int = 4
    max_queued_answers: int = 1024


@record(frozen=True, slots=True)
class MessageArrived:
    message: Message
    # The id of our request whose response stream carried it (None: the GET stream).
    related: int | None = None


@record(frozen=True, slots=True)
class RequestFailed:
    request_id: int
    error: McpError
    # U3: the request reached the server whole (written whole, or answered with a
    # success status): a call that fails so may have run.
    sent: bool = False


@record(frozen=True, slots=True)
class SessionExpired:
    """H6: resend these requests on a new session (each at most once)."""

    resend: list[Request]


Upward = Union[MessageArrived, RequestFailed, SessionExpired]


class _Kind(Enum):
    POST = "post"  # a message of ours
    RESUME = "resume"  # GET with Last-Event-ID continuing a POST's stream
    LISTEN = "listen"  # the GET stream for server-initiated messages
    DELETE = "delete"


class _Mode(Enum):
    WAITING = "waiting"  # no status yet
    JSON = "json"
    SSE = "sse"
    IGNORE = "ignore"  # body not wanted (202, DELETE, notification replies)
    ERROR = "error"  # collecting an excerpt of an error body


@record(slots=True)
class _Stream:
    """A logical response stream: one POST's replies, across resumptions."""

    request_id: int | None  # the request whose response it carries (None: GET stream)
    session_id: str | None = None  # the session it belongs to
    last_event_id: str | None = None
    retry: float | None = None
    quiet_reconnects: int = 0
    got_response: bool = False
    large: bool = False  # it answers a large_result kind: max_read_size bounds it (B11)


@record(slots=True)
class _Exchange:
    id: int
    kind: _Kind
    message: Message | None
    stream: _Stream | None
    sent_session_id: str | None
    mode: _Mode = _Mode.WAITING
    status: int = 0
    body: bytearray = field(default_factory=bytearray)
    decoder: SSEDecoder | None = None
    new_event: bool = False
    candidate_session_id: str | None = None
    opened_at: float = 0.0  # the ``now`` it was asked for (X4: timings)
    json_error: bool = False  # an error status with a JSON body (M9)
    sent: bool = False  # U3: the driver wrote the request whole (request_sent)
    owed: bool = False  # a request closing still delivers (T9), like a notice


@record(slots=True)
class _Timer:
    """A stream to reopen with GET once ``at`` has come (H4, H8)."""

    at: float
    stream: _Stream
    kind: _Kind  # RESUME or LISTEN


def _json_rpc_error(body: bytes, request_id: object) -> ErrorResponse | None:
    """M9: the JSON-RPC error object in an error status's body, as the answer to
    ``request_id``; None when the body is not one."""
    try:
        message = decode_message(body)
    except McpError:
        return None
    if not isinstance(message, ErrorResponse):
        return None
    return ErrorResponse(
        id=request_id,  # type: ignore[arg-type]
        code=message.code,
        message=message.message,
        data=message.data,
    )


def _may_have_run() -> TransportError:
    return TransportError(
        "the session expired while the request was running; "
        "it may have run, so it was not sent again"
    )


def _header_pairs(headers: Sequence[tuple[bytes, bytes]]) -> Sequence[tuple[bytes, bytes]]:
    """``headers`` as a sequence, each pair checked to be ``(bytes, bytes)``.

    A ``str`` pair would otherwise never match a name and be misread (as "no
    content type", say), so it is refused with a ``TypeError`` naming the types
    only: no value is shown (a header may hold a secret). An iterator is taken
    into a list first, so that checking it does not use it up.
    """
    if not isinstance(headers, (list, tuple)):
        try:
            headers = list(headers)
        except TypeError:
            _refuse_headers(f"a {type(headers).__name__}, not a sequence of pairs")
    for pair in headers:
        try:
            name, value = pair
        except (TypeError, ValueError):
            _refuse_headers(f"a {type(pair).__name__} that is not a pair")
        if not (isinstance(name, bytes) and isinstance(value, bytes)):
            _refuse_headers(f"a ({type(name).__name__}, {type(value).__name__}) pair")
    return headers


def _refuse_headers(got: str) -> NoReturn:
    raise TypeError(
        "response_started takes the response headers as (bytes, bytes) pairs, "
        f"e.g. [(b'content-type', b'application/json')]; got {got}"
    )


def _exchange_what(ex: _Exchange) -> str:
    """What an exchange carries, for debug records (X4): no header, no body."""
    if ex.kind is _Kind.POST:
        return "POST " + (describe_message(ex.message) if ex.message is not None else "message")
    if ex.kind is _Kind.DELETE:
        return "DELETE"
    if ex.kind is _Kind.RESUME and ex.stream is not None:
        return f"GET resuming request id={ex.stream.request_id}"
    return "GET message stream"


def _shown_session(session_id: str | None) -> str:
    """A session id for a debug record: a server value, so escaped and cut short (X4)."""
    return "none" if session_id is None else f"'{excerpt(session_id, _SHOWN_SESSION_ID)}'"


def _header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


HttpLimits.__module__ = "mcpcore"  # exported and documented as mcpcore.HttpLimits


def message_limit(limits: HttpLimits, ex: _Exchange) -> tuple[str, int]:
    """P6, B11: the bound on one message of this exchange, and its name."""
    if ex.stream is not None and ex.stream.large:
        return "max_read_size", limits.max_read_size
    return "max_message_size", limits.max_message_size


def sse_line_limit(limits: HttpLimits, ex: _Exchange) -> int:
    """P6: a data line longer than this carries a message over the message bound,
    so it is refused while it streams rather than buffered up to max_sse_line.
    A read's larger bound raises the line bound with it (a blob is one line)."""
    _, bound = message_limit(limits, ex)
    line = limits.max_sse_line
    if bound > limits.max_message_size:
        line = max(line, bound + _SSE_LINE_SLACK)
    return min(line, bound + _SSE_LINE_SLACK)


def sse_limit(limits: HttpLimits, ex: _Exchange, exc: LimitExceeded) -> LimitExceeded:
    """P6: name the bound the user configures here, not the decoder's parameter."""
    name, bound = message_limit(limits, ex)
    if exc.limit_name == "max_event_size" or (
        exc.limit_name == "max_line_size" and exc.limit < limits.max_sse_line
    ):
        return LimitExceeded(name, bound, "an SSE event")
    if exc.limit_name == "max_line_size" and exc.limit > limits.max_sse_line:
        return LimitExceeded(name, bound, "an SSE line")
    if exc.limit_name == "max_line_size":
        return LimitExceeded("max_sse_line", limits.max_sse_line, "an SSE line")
    return exc


if TYPE_CHECKING:  # annotations only: a Protocol class costs import time (B5)

    class MappingState(Protocol):
        """What ``ResponseReader`` reads and calls of its ``HttpMapping``.

        The reader is the response half of the mapping, with no state of its own:
        it works on the mapping's exchanges, timers and queues directly. Naming
        that here lets the reader's module sit beside the mapping's without
        importing it (``HttpMapping`` implements this; mypy checks it where the
        mapping makes its reader).
        """

        display_url: str
        limits: HttpLimits
        modern: bool
        protocol_version: str | None
        session_id: str | None
        redact: Callable[[str], str]
        _actions: list[Action]
        _awaiting_session: bool
        _closing_at: float | None
        _exchanges: dict[int, _Exchange]
        _last_now: float
        _listen_refused_for: str | None
        _listening: bool
        _resent: set[int]
        _tag: str
        _upward: list[Upward]

        def send(self, message: Message, now: float) -> None: ...
        def abandon(self, request_id: int) -> None: ...
        def _bound_exchange(self, xid: int, at: float) -> None: ...
        def _schedule(self, timer: _Timer) -> None: ...
        def _finish(self, ex: _Exchange) -> None: ...
        def _fail(self, ex: _Exchange, error: McpError, now: float) -> None: ...
