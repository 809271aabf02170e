"""How a failed exchange is worded (X5): from the failure's kind, never from ``str(exc)``.

A driver that could not perform an exchange reports a ``TransportFailure``: the
kind of failure (refused, TLS, reset, timeout, protocol error, ...) and, at
most, a short text known to be safe — an operating-system error string or a
certificate verdict. The core words the reason from those. Text of a
third-party exception is never used: an HTTP library that refuses a request
may quote the request's bytes in its message, header values included (h11
does, for a header value with surrounding whitespace).

``TransportFailure.from_exception`` classifies an exception chain by the
standard library's exception types and by the class names of common HTTP and
async libraries (httpcore, h11, anyio), without importing any of them.

``legacy_sse_reason`` words the one HTTP answer whose usual cause is a wrong
URL rather than a failing server: a 405 to a POST at a legacy ``…/sse`` URL.
"""

from __future__ import annotations

import os
import re
from dataclasses import field
from enum import Enum

from ._escape import excerpt
from ._record import record

__all__ = ["FailureKind", "TransportFailure", "legacy_sse_reason", "status_reason"]

_DETAIL_LIMIT = 120
_CHAIN_LIMIT = 16


class FailureKind(Enum):
    """What kind of thing went wrong under an exchange."""

    REFUSED = "refused"
    NAME_RESOLUTION = "name resolution"
    TLS = "tls"
    RESET = "reset"
    TIMEOUT = "timeout"
    PROTOCOL = "protocol"  # the reply was not valid HTTP
    REQUEST = "request"  # the HTTP library refused to send our request
    NOT_FOUND = "not found"  # a file (a local server's command or directory) is missing
    OTHER = "other"


_WORDS = {
    FailureKind.REFUSED: "the connection was refused",
    FailureKind.NAME_RESOLUTION: "the host name could not be resolved",
    FailureKind.TLS: "the TLS handshake failed",
    FailureKind.RESET: "the connection was closed or reset",
    FailureKind.TIMEOUT: "the network timed out",
    FailureKind.PROTOCOL: "the reply was not valid HTTP",
    FailureKind.REQUEST: "the request could not be sent",
    FailureKind.NOT_FOUND: "a file was not found",
    FailureKind.OTHER: "the connection failed",
}

# Class names (anywhere in an exception's MRO) and the kind they mean.
_BY_NAME = {
    "SSLCertVerificationError": FailureKind.TLS,
    "SSLError": FailureKind.TLS,
    "ConnectionRefusedError": FailureKind.REFUSED,
    "gaierror": FailureKind.NAME_RESOLUTION,
    "TimeoutError": FailureKind.TIMEOUT,
    "TimeoutException": FailureKind.TIMEOUT,  # httpcore's timeouts
    "ConnectTimeout": FailureKind.TIMEOUT,
    "ReadTimeout": FailureKind.TIMEOUT,
    "WriteTimeout": FailureKind.TIMEOUT,
    "PoolTimeout": FailureKind.TIMEOUT,
    "ConnectionResetError": FailureKind.RESET,
    "ConnectionAbortedError": FailureKind.RESET,
    "BrokenPipeError": FailureKind.RESET,
    "ReadError": FailureKind.RESET,  # httpcore
    "WriteError": FailureKind.RESET,  # httpcore
    "EndOfStream": FailureKind.RESET,  # anyio
    "BrokenResourceError": FailureKind.RESET,  # anyio
    "ClosedResourceError": FailureKind.RESET,  # anyio
    "LocalProtocolError": FailureKind.REQUEST,  # httpcore, h11: our request was refused
    "RemoteProtocolError": FailureKind.PROTOCOL,  # httpcore, h11
    "ProtocolError": FailureKind.PROTOCOL,
    "FileNotFoundError": FailureKind.NOT_FOUND,
}

# Which kind wins when a chain holds several: the most specific first.
_PRIORITY = (
    FailureKind.TLS,
    FailureKind.NAME_RESOLUTION,
    FailureKind.REFUSED,
    FailureKind.TIMEOUT,
    FailureKind.REQUEST,
    FailureKind.PROTOCOL,
    FailureKind.RESET,
    FailureKind.NOT_FOUND,
    FailureKind.OTHER,
)

# httpcore and h11 report a connection the server closed as a protocol error; these
# fixed texts tell it apart. They are compared, never shown.
_CLOSED_TEXTS = (
    "Server disconnected",
    "peer closed connection without sending complete message body",
)


@record(frozen=True, slots=True)
class TransportFailure:
    """A failed exchange: its kind and, optionally, text known to hold no secret.

    ``detail`` is shown escaped and cut short; give only text that cannot carry
    request bytes (an OS error string, a certificate verdict), or nothing.
    """

    kind: FailureKind
    detail: str = ""
    # NOT_FOUND: the path the error names (a local server's command, or its working
    # directory, which may hold an expanded secret): compared, never shown.
    missing: str = field(default="", repr=False, compare=False)

    @classmethod
    def from_exception(cls, exc: BaseException) -> TransportFailure:
        """Classify ``exc``, its causes and the members of exception groups.

        Libraries wrap the telling error (a refused connection inside a connect
        error inside an exception group; a TLS error under a "broken resource"),
        so the most specific kind found anywhere in the chain wins.
        """
        best: TransportFailure | None = None
        fallback_detail = ""
        for current in _chain(exc):
            kind = _kind_of(current)
            detail = _safe_detail(current)
            if kind is None:
                fallback_detail = fallback_detail or detail
            elif best is None or _PRIORITY.index(kind) < _PRIORITY.index(best.kind):
                missing = getattr(current, "filename", None)
                best = cls(kind, detail, missing if isinstance(missing, str) else "")
        return best or cls(FailureKind.OTHER, fallback_detail)

    def describe(self) -> str:
        """The failure in words, for a reason or an error message."""
        words = _WORDS[self.kind]
        detail = excerpt(self.detail, _DETAIL_LIMIT) if self.detail else ""
        return f"{words} ({detail})" if detail else words


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups (bounded)."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < _CHAIN_LIMIT:
        current = todo.pop(0)
        if any(current is s for s in seen):
            continue
        seen.append(current)
        members = getattr(current, "exceptions", None)
        if isinstance(members, tuple):
            todo.extend(m for m in members if isinstance(m, BaseException))
        follow = current.__cause__ or current.__context__
        if follow is not None:
            todo.append(follow)
    return seen


def _kind_of(exc: BaseException) -> FailureKind | None:
    for klass in type(exc).__mro__:
        kind = _BY_NAME.get(klass.__name__)
        if kind is FailureKind.PROTOCOL and str(exc).startswith(_CLOSED_TEXTS):
            return FailureKind.RESET
        if kind is not None:
            return kind
    return None


def _safe_detail(exc: BaseException) -> str:
    """Text that comes from the system, not from whoever raised the exception."""
    verdict = getattr(exc, "verify_message", None)  # ssl.SSLCertVerificationError
    if isinstance(verdict, str) and verdict:
        return verdict
    if not isinstance(exc, OSError):
        return ""
    reason = getattr(exc, "reason", None)  # ssl.SSLError: an OpenSSL reason code
    if isinstance(reason, str) and reason.replace("_", "").isalnum():
        return reason
    number = exc.errno
    if not isinstance(number, int):
        return ""
    if number > 0:
        return os.strerror(number)  # the system's text for the error number
    # getaddrinfo's errors (socket.gaierror) are negative; their text is the resolver's.
    strerror = exc.strerror
    return strerror if type(exc).__name__ == "gaierror" and isinstance(strerror, str) else ""


def legacy_sse_reason(display_url: str) -> str | None:
    """Why a POST to ``display_url`` got HTTP 405, when the URL looks like the legacy
    HTTP+SSE transport's stream; ``None`` when it does not.

    The legacy transport (MCP 2024-11-05) opens a GET stream at an ``…/sse`` URL
    and takes messages elsewhere, so its ``/sse`` refuses a POST. The reason
    says so and names where a Streamable HTTP endpoint usually is, as a
    ``"type": "sse"`` entry's refusal does. ``display_url`` is shown as given:
    pass the URL without user info or query (it is already in every message).
    """
    path = display_url.partition("://")[2].partition("/")[2].rstrip("/")
    if path.lower() != "sse" and not path.lower().endswith("/sse"):
        return None
    usual = display_url.rstrip("/")[: -len("sse")] + "mcp"
    return (
        f"{display_url} refused a POST (HTTP 405 Method Not Allowed): it looks like the "
        "legacy HTTP+SSE transport, which is not supported; use the server's Streamable "
        f"HTTP endpoint instead (often {usual})"
    )


# H7: an HTML error page (a web server's, a proxy's) is summed up, not quoted whole.
_HTML_PAGE = re.compile(
    r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body|title)\b", re.I | re.S
)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)
_HIDDEN = re.compile(r"<(script|style|head)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>?")
_PAGE_EXCERPT = 80
# How much of an HTML page is read to sum it up: a title sits in the head, and the
# lazy patterns above rescan from every '<' they try, so a hostile 64 KiB page of
# unclosed tags would cost seconds of the caller's CPU (about 3 s, measured).
_PAGE_READ = 4096


def status_reason(display_url: str, status: int, body: str) -> str:
    """Why a request failed with an HTTP error status (H7): the status and a short,
    escaped excerpt of the body. An HTML page is summed up by its title (or the
    start of its text), never quoted whole; a 404 to a request that carried no
    session id means nothing is served at that path, so the reason says where
    an MCP endpoint usually is. Pass ``body`` with every secret already cut out.
    """
    if _HTML_PAGE.match(body):
        import html  # with its entity tables, only for an HTML error page (B5)

        page = body[:_PAGE_READ]
        title = _TITLE.search(page)
        text = title.group(1) if title else _TAG.sub(" ", _HIDDEN.sub(" ", page))
        shown = excerpt(" ".join(html.unescape(text).split()), _PAGE_EXCERPT)
        shown = f"{shown} (an HTML page)" if shown else "an HTML page"
    else:
        shown = excerpt(body, 200).strip()
    reason = f"{display_url} answered HTTP {status}" + (f": {shown}" if shown else "")
    if status == 404:
        scheme, _, rest = display_url.partition("://")
        host, _, path = rest.partition("/")
        if path.rstrip("/").lower().endswith("mcp"):
            reason += "; check the URL's path: is this the server's MCP endpoint?"
        else:
            reason += f"; check the URL's path (often /mcp: {scheme}://{host}/mcp)"
    return reason
