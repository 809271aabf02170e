"""The error hierarchy (X2): every failure the library reports is an ``McpError``.

Rules that every subclass follows:

* A message says what happened and, where it helps, what to do about it.
* A message never contains a header value or an environment value (C8). It may
  name keys, URLs as configured (without query), tool names and limits.
* Server-provided text placed in a message is escaped first (X1), with
  :func:`mcpcore.base._escape.escape_text`, and cut to a short excerpt.
* A mistake of the caller (a call before start, arguments that are not a
  mapping, a timeout that is not positive) is a ``LocalProtocolError`` *and*
  the built-in kind Python code expects for it: ``InvalidState`` is a
  ``RuntimeError``, ``InvalidArguments`` a ``TypeError``, ``InvalidValue`` a
  ``ValueError``.

Every public class here shows as ``mcpcore.<Name>`` (its ``__module__``), in a
traceback too, and pickles by reference to that name; an error pickles with
its message and attributes as they are (``__reduce__``), not by calling its
constructor again.
"""

from __future__ import annotations

from ._escape import escape_text, excerpt

__all__ = [
    "BackendError",
    "CallTimeout",
    "Cancelled",
    "ConfigError",
    "HandshakeError",
    "InvalidArguments",
    "InvalidState",
    "InvalidValue",
    "LimitExceeded",
    "LocalProtocolError",
    "MayHaveRun",
    "McpError",
    "NotOffered",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestRefused",
    "ResourceNotFound",
    "SealBroken",
    "ServerError",
    "SkillMismatch",
    "TransportError",
    "Unavailable",
    "UnknownTool",
]


class McpError(Exception):
    """Base of every error raised by mcpcore and its drivers.

    ``rpc_code`` is the JSON-RPC error code when the error is the server's
    error answer to a request (``None`` otherwise).
    """

    rpc_code: int | None = None

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt from its message and attributes as they are: the constructors
        # word their message from keyword arguments, so calling one again with
        # ``args`` (the default) would word it twice, or fail.
        return (_restore, (type(self), self.args), self.__dict__ or None)


def _restore(cls: type[McpError], args: tuple[object, ...]) -> McpError:
    """An error of ``cls`` with ``args``, its constructor not called (unpickling)."""
    error = cls.__new__(cls, *args)
    error.args = args
    return error


class ConfigError(McpError):
    """An ``mcp.json`` document or a single server entry is invalid (C1–C7).

    ``key`` names the offending key (never its value) when there is one. For an
    entry, ``server`` is its name and the message starts with ``server 'name': ``;
    ``reason`` is the message without that prefix (what a client that is
    unavailable for this entry gives as its reason).
    """

    def __init__(self, message: str, *, key: str | None = None, server: str | None = None) -> None:
        if server is None:
            super().__init__(message)
        else:
            shown = server if len(server) <= 80 else server[:80] + "…"
            super().__init__(f"server {shown!r}: {message}")
        self.key = key
        self.server = server
        self.reason = message


class ProtocolError(McpError):
    """Someone broke the protocol: this side (local) or the peer (remote)."""


class LocalProtocolError(ProtocolError):
    """The caller drove the engine in a way the protocol does not allow."""


class InvalidState(LocalProtocolError, RuntimeError):
    """The caller did something at the wrong time: a call before the client was
    started, a second start, a command the session's state does not allow.

    Also a ``RuntimeError``: it is a caller's mistake, not the server's.
    """


class InvalidArguments(LocalProtocolError, TypeError):
    """A call's arguments are not a mapping, or cannot be sent as JSON (K9): NaN, a set,
    an object...

    ``path`` names the offending argument (``arguments['x'][2]``, or ``arguments``
    itself); the call was never registered or sent. Also a ``TypeError``: it is a
    caller's mistake. ``message`` replaces the default wording.
    """

    def __init__(self, path: str, *, message: str | None = None) -> None:
        super().__init__(
            message or f"the call's arguments cannot be sent as JSON: {path} is not a JSON value"
        )
        self.path = path


class InvalidValue(LocalProtocolError, ValueError):
    """A value the caller passed is out of range: a call timeout that is not a positive
    number of seconds, say. Also a ``ValueError``: it is a caller's mistake.
    """


class SealBroken(InvalidValue):
    """A sealed continuation or task handle (U2) whose seal is missing or does not
    match any key given: it was written by someone without the key, or edited
    since. ``what`` names the kind of text ("continuation", "task handle"); the
    message names nothing of its content, and never a key.
    """

    def __init__(self, what: str, *, missing: bool = False) -> None:
        reason = "carries no seal" if missing else "has a seal that does not match the key"
        super().__init__(
            f"the {what} {reason}: it was not written by a client holding the key, "
            "or it was changed since; it is refused"
        )
        self.what = what
        self.missing = missing


class RemoteProtocolError(ProtocolError):
    """The server sent something the protocol does not allow (P0, P5)."""


#: How a user raises each bound a client takes (issue 37): named in the message.
_RAISED_WITH = {
    "max_message_size": "limits=HttpLimits(max_message_size=...)",
    "max_read_size": "limits=HttpLimits(max_read_size=...)",
    "max_sse_line": "limits=HttpLimits(max_sse_line=...)",
    # a local server's line: the larger of the two bounds (HttpLimits.stdio_line_limit)
    "max_line_size": "limits=HttpLimits(max_message_size=..., max_read_size=...)",
    "max_pages": "max_pages=...",
    "max_tools": "max_tools=...",
    # N4: the skills extension's limits (SEP-2640: a host accepts at least these)
    "max_skill_files": "list_skills(max_skill_files=...)",
    "max_skill_bytes": "list_skills(max_skill_bytes=...)",
}


class LimitExceeded(RemoteProtocolError):
    """A configured bound was overrun (P6). ``limit_name`` and ``limit`` name it; the
    message says which client option raises it."""

    def __init__(self, limit_name: str, limit: int, what: str) -> None:
        how = _RAISED_WITH.get(limit_name)
        hint = f"; the client option {how} raises it" if how else ""
        super().__init__(f"{what} exceeds the {limit_name} limit of {limit}{hint}")
        self.limit_name = limit_name
        self.limit = limit
        #: The library's own hint, which a host with its own word for the option
        #: (a command line's flag) may take out of the message.
        self.option_hint = hint


class SkillMismatch(RemoteProtocolError):
    """A skill's file does not match the entry ``skills/list`` gave for it (N4,
    SEP-2640): its ``digest``, its ``size``, or (``SKILL.md``) its ``frontmatter``
    (``field`` names the key, or the whole block when it does not parse). The
    content was dropped, never returned; the message names the skill, the path
    and what mismatched (escaped server text), never the content."""

    def __init__(self, skill: str, path: str, what: str, *, field: str | None = None) -> None:
        detail = f" ({excerpt(field, 80)!r})" if field is not None else ""
        super().__init__(
            f"skill {excerpt(skill, 80)!r}, file {excerpt(path, 200)!r}: its {what}{detail} "
            "does not match the skill's entry; the content was dropped"
        )
        self.skill = skill
        self.path = path
        self.what = what
        self.field = field


class HandshakeError(RemoteProtocolError):
    """The ``initialize`` exchange failed (P2: unsupported version, error reply)."""


class TransportError(McpError):
    """The exchange failed: connection, HTTP status, malformed reply or deadline (K4).

    ``status`` is the HTTP status when the server answered with an error status
    (``None`` when no answer came: refused, reset, timed out).
    """

    status: int | None = None


class CallTimeout(TransportError):
    """A call (or the start-up) ran past its deadline (K2). Names the tool and budget."""

    def __init__(
        self, message: str, *, tool: str | None = None, budget: float | None = None
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.budget = budget


#: How much of a tool's error text a ``BackendError`` message shows (X1, X5).
_BACKEND_EXCERPT = 300


class MayHaveRun(TransportError):
    """A ``tools/call`` was sent whole and its answer did not arrive (U3): the
    server may have run the tool, so calling it again may run it twice.

    A ``TransportError``, so handlers of transport errors still catch it. The
    message is the transport's reason with the words "the server may have run
    tool ..." after it; ``tool`` is the tool's id, ``request_id`` the JSON-RPC
    id the call carried (what a server's logs name). A call that provably
    never reached the server (refused, no connection, failed before its
    request was written) keeps its own error instead.
    """

    def __init__(self, message: str, *, tool: str | None, request_id: int | None) -> None:
        super().__init__(message)
        self.tool = tool
        self.request_id = request_id


class ServerError(McpError):
    """The server kept to the protocol and answered with a failure of its own (X2).

    A tool's error result or a JSON-RPC error answer to a call is a
    ``BackendError``; a JSON-RPC error answer to a read, a listing, a prompt or
    a completion is a ``RequestRefused``. Unlike a ``RemoteProtocolError`` (the
    server broke the protocol) or a ``TransportError`` (it could not be
    reached), the server is up and said no: the same request will likely get
    the same answer. ``rpc_code`` is the JSON-RPC code when there was one.
    """


class BackendError(ServerError):
    """The tool ran and reported ``isError: true`` (K4), or the server answered the
    call with a JSON-RPC error.

    ``text`` is the tool's rendered output, raw and complete. It is **untrusted
    server text**: it may be very long and may hold terminal escapes or other
    control characters, so escape it (``mcpcore.escape_text``) before showing
    it. The message (``str(exc)``) holds only an escaped excerpt of it, newlines
    kept, cut at a few hundred characters with "…" (X1, X5). ``output`` is the
    whole result (a ``ToolOutput``, with its content blocks, K8) when the error
    came from a result that said ``isError``.
    """

    def __init__(self, text: str, *, tool: str | None = None, output: object = None) -> None:
        prefix = f"tool {tool!r} reported an error" if tool else "the tool reported an error"
        super().__init__(f"{prefix}: {_excerpt(text)}" if text else prefix)
        self.text = text
        self.tool = tool
        self.output = output


def _excerpt(text: str) -> str:
    """``text`` escaped (newlines kept) and cut to ``_BACKEND_EXCERPT`` characters."""
    cut = len(text) > _BACKEND_EXCERPT
    return escape_text(text[:_BACKEND_EXCERPT]) + ("…" if cut else "")


class Cancelled(McpError):
    """The call was cancelled before it finished (K9): by its caller, or by closing.

    The same error on every driver. ``reason`` says who cancelled it. (An anyio
    caller whose own task is cancelled sees the framework's cancellation instead,
    as usual.)
    """

    def __init__(self, reason: str, *, server: str | None = None) -> None:
        prefix = (
            f"a call to server {server!r} was cancelled" if server else "the call was cancelled"
        )
        super().__init__(f"{prefix}: {reason}")
        self.reason = reason
        self.server = server


class RequestRefused(ServerError):
    """The server refused a request with a JSON-RPC error answer (F2–F7, issue 37):
    a resource's read, a listing of resources, templates or prompts, a prompt, a
    completion. ``method`` names the request; ``detail`` is the answer's code and
    message, escaped and cut short (server text, X1); ``rpc_code`` its code."""

    def __init__(self, method: str, *, detail: str = "") -> None:
        super().__init__(f"{method} failed ({detail})" if detail else f"{method} was refused")
        self.method = method
        self.detail = detail


class ResourceNotFound(RequestRefused):
    """The server has no resource at ``uri`` (F2): its answer to ``resources/read``
    was -32002 (the handshake era's code) or -32602 (2026-07-28's, and what
    deployed handshake-era servers send). ``detail`` is that answer's code and
    message, escaped and cut short."""

    def __init__(self, uri: str, *, detail: str = "") -> None:
        shown = excerpt(uri, 200)
        McpError.__init__(
            self, f"the server has no resource {shown!r}" + (f" ({detail})" if detail else "")
        )
        self.method = "resources/read"
        self.uri = uri
        self.detail = detail


class NotOffered(McpError):
    """The server does not offer what was asked of it (F2): it did not declare
    ``feature`` among its capabilities (``"resources.subscribe"``), or it left
    ``uri`` out of what it agreed to on ``subscriptions/listen``. Nothing was sent
    when the capability is missing."""

    def __init__(self, feature: str, *, server: str | None = None, uri: str | None = None) -> None:
        who = f"server {server!r}" if server else "the server"
        if uri is None:
            message = f"{who} does not offer {feature}"
        else:
            message = f"{who} did not agree to {feature} for {excerpt(uri, 200)!r}"
        super().__init__(message)
        self.feature = feature
        self.server = server
        self.uri = uri


class Unavailable(McpError):
    """The server is not ready; ``reason`` says why (L3, K7)."""

    def __init__(self, reason: str, *, server: str | None = None) -> None:
        super().__init__(f"server {server!r} is unavailable: {reason}" if server else reason)
        self.reason = reason
        self.server = server


class UnknownTool(McpError):
    """No tool with that id is in the catalogue (K7).

    ``suggestions`` holds the ids the caller may have meant (the plain tool name
    without its server, a different case, another server's prefix), at most a
    few; the message names them ("did you mean 'py/add'?"). ``filtered`` says which
    of the client's ``include``/``exclude`` patterns hid a tool the server has.
    """

    def __init__(
        self, tool_id: str, *, suggestions: tuple[str, ...] = (), filtered: str | None = None
    ) -> None:
        message = f"unknown tool {tool_id!r}"
        if filtered is not None:
            # V4: the server has it, the client's own include/exclude filter hid it
            message = f"tool {tool_id!r} is filtered out: {filtered}"
        elif len(suggestions) == 1:
            message += f"; did you mean {suggestions[0]!r}?"
        elif suggestions:
            message += f"; did you mean one of {', '.join(map(repr, suggestions))}?"
        super().__init__(message)
        self.tool_id = tool_id
        self.suggestions = suggestions
        self.filtered = filtered


# Tracebacks and reprs name the public module, where every one of these lives.
for _public in (
    McpError,
    ConfigError,
    ProtocolError,
    LocalProtocolError,
    InvalidState,
    InvalidArguments,
    InvalidValue,
    SealBroken,
    RemoteProtocolError,
    LimitExceeded,
    HandshakeError,
    TransportError,
    CallTimeout,
    MayHaveRun,
    BackendError,
    Cancelled,
    ServerError,
    RequestRefused,
    ResourceNotFound,
    NotOffered,
    SkillMismatch,
    Unavailable,
    UnknownTool,
):
    _public.__module__ = "mcpcore"
del _public
