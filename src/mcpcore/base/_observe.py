"""Watching each request of the host (V2): a neutral hook point for tracing.

The core imports nothing for tracing. An engine may be given a
``RequestObserver`` (``engine.observer``); the ``mcpcore_otel`` adapter is
one, which makes OpenTelemetry spans and metrics of what it is told. The
engine tells it two things per request the host makes (a call, a read, a
listing, a prompt):

* ``request_started``, from inside ``engine.call`` / ``engine.request``, so in
  the caller's own thread or task and before anything is sent: the observer
  may read the caller's context (its current span) there. What it returns is
  added to the request's ``params._meta`` (the W3C trace context, SEP-414),
  and stays there for every wire request that carries it (pages,
  ``input_required`` rounds, a re-send). Keys the host passed itself
  (``meta=``) win.
* ``request_ended``, once the request's outcome is known (the ending event
  under its call id), with the kind of failure as OpenTelemetry's
  ``error.type`` wants it. A request refused before anything was sent
  (``UnknownTool``, bad arguments) ends at once.

Both carry ``now`` from the driver's clock, so a duration is the driver's
own. An observer is called synchronously and must be quick (no I/O: the
threaded driver calls the engine under its lock); one that raises is logged
and ignored, never failing the request. With no observer the engine does
nothing more than one ``None`` check per request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from ._errors import BackendError, McpError
from ._record import record

__all__ = ["RequestEnded", "RequestObserver", "RequestStarted", "error_type"]

_log = logging.getLogger("mcpcore.observe")


@record(frozen=True, slots=True, kw_only=True)
class RequestStarted:
    """A request of the host is about to be sent (V2).

    ``call_id`` is the id its outcome arrives under (the first JSON-RPC request's
    id). ``tool``, ``prompt`` and ``uri`` are what it is about, when it is about
    one: the tool's name as the server knows it, a prompt's name, a resource's
    URI. ``transport`` is ``"tcp"`` (HTTP) or ``"pipe"`` (a local server's stdio);
    ``address``/``port`` the HTTP server's. No argument value is ever here.
    """

    call_id: int
    method: str
    server: str
    tool: str | None = None
    prompt: str | None = None
    uri: str | None = None
    protocol_version: str | None = None
    session_id: str | None = None
    transport: str = "tcp"
    address: str | None = None
    port: int | None = None
    now: float = 0.0


@record(frozen=True, slots=True, kw_only=True)
class RequestEnded:
    """The request ``call_id`` ended: ``error_type`` is ``None`` when it succeeded.

    ``error_type`` follows OpenTelemetry's ``error.type``: ``"tool_error"`` for a
    tool's own error result (``isError``), the JSON-RPC error code (as text)
    for the server's error answer, ``"cancelled"`` for a request its caller
    (or closing) gave up, else the error's class name (``CallTimeout``,
    ``TransportError``...). ``rpc_code`` is that JSON-RPC code, if any.
    ``error`` is the error itself (its text may hold server text: untrusted).
    """

    call_id: int
    error_type: str | None
    rpc_code: int | None = None
    error: BaseException | None = None
    now: float = 0.0


class RequestObserver(Protocol):
    """What an engine tells about each request of the host (see the module docstring)."""

    def request_started(self, request: RequestStarted) -> Mapping[str, Any] | None:
        """Called in the caller's context before sending; returns ``_meta`` keys to add."""

    def request_ended(self, request: RequestEnded) -> None:
        """Called once per started request, when its outcome is known."""


def error_type(error: BaseException) -> str:
    """OpenTelemetry's ``error.type`` for a request that failed with ``error``."""
    if isinstance(error, BackendError) and error.output is not None:
        return "tool_error"  # the tool answered, with isError
    if isinstance(error, McpError) and error.rpc_code is not None:
        return str(error.rpc_code)  # the server's JSON-RPC error answer
    return type(error).__name__


def safely_started(observer: RequestObserver, request: RequestStarted) -> Mapping[str, Any] | None:
    """``request_started``, where an observer that raises (or returns junk) is only logged."""
    try:
        carrier = observer.request_started(request)
    except Exception as exc:
        _log.warning("the request observer failed (%s); the request goes on", type(exc).__name__)
        return None
    if carrier is not None and not isinstance(carrier, Mapping):
        return None
    return carrier


def safely_ended(observer: RequestObserver, request: RequestEnded) -> None:
    try:
        observer.request_ended(request)
    except Exception as exc:
        _log.warning("the request observer failed (%s)", type(exc).__name__)
