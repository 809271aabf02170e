"""The rules of MCP revision 2026-07-28 (the modern era) for a tools-only client.

This module owns what is different in that revision, as pure functions the
session drives (E2): the per-request ``_meta`` envelope and the headers that
mirror it (M18–M27, with ``_headers.py`` for their encoding), reading the
answer to the ``server/discover`` probe into an era verdict (E1, M1–M11),
``resultType`` (M43, M44, M57) and the answers a client that declares no
capabilities gives to input requests (E4, M48–M54). The handshake era's rules
stay in ``_session.py`` (``initialize``) and ``_http.py`` (sessions, GET,
DELETE, resumption); the session picks one era per endpoint and never mixes
them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Literal

from ..base._errors import HandshakeError, McpError, RemoteProtocolError, TransportError
from ..base._escape import excerpt
from ..base._record import record

__all__ = [
    "HANDSHAKE_VERSIONS",
    "LOG_LEVELS",
    "MODERN_VERSIONS",
    "Verdict",
    "answer_input_requests",
    "discover_verdict",
    "envelope",
    "is_legacy_answer",
    "probe_error_verdict",
    "probe_failure_is_outage",
    "result_type",
]

# Newest first: the order this client prefers them in.
MODERN_VERSIONS = ("2026-07-28",)
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")

# The envelope's keys share this prefix; a host's own _meta keys may not use it (V1).
RESERVED_META_PREFIX = "io.modelcontextprotocol/"
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
#: The levels a server's log messages carry, least severe first (RFC 5424's names).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

UNSUPPORTED_PROTOCOL_VERSION = -32022
MISSING_CLIENT_CAPABILITY = -32021
HEADER_MISMATCH = -32020

# M54: rounds of input_required one call may take.
MAX_INPUT_ROUNDS = 10

#: Where ``OAuthError`` lives (the auth layer above), for M11's probe check.
OAUTH_ERRORS_MODULE = "mcpcore.auth._oauth_errors"


@record(frozen=True, slots=True)
class Verdict:
    """What the answer to a probe says (E1).

    ``modern``: the server speaks ``version`` (``capabilities`` and ``server_info``
    from its ``DiscoverResult``). ``retry``: send the probe again at ``version``
    (M4). ``legacy``: fall back to ``initialize`` (M3, M6, M8). ``fail``: a hard
    error (M5, M7), ``error`` says why.
    """

    kind: Literal["modern", "retry", "legacy", "fail"]
    version: str | None = None
    capabilities: Mapping[str, Any] | None = None
    server_info: Mapping[str, Any] | None = None
    error: McpError | None = None


def envelope(
    params: Mapping[str, Any] | None,
    version: str,
    client_name: str,
    client_version: str,
    log_level: str | None = None,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``params`` with the modern ``_meta`` envelope (M18–M22).

    Every modern request carries the protocol version, the client's
    capabilities (``{}`` unless the host offers input hooks, Q1) and its info, and
    the log level only when the host asked for one (M21, F8); keys already in
    ``_meta`` (a ``progressToken``) are kept. ``params`` itself is not changed.
    """
    out = dict(params or {})
    meta = dict(out.get("_meta") or {})
    meta[META_PROTOCOL_VERSION] = version
    meta[META_CLIENT_CAPABILITIES] = dict(capabilities or {})
    meta[META_CLIENT_INFO] = {"name": client_name, "version": client_version}
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    out["_meta"] = meta
    return out


def discover_verdict(result: object) -> Verdict:
    """Read a ``server/discover`` result (M2, M3, M15, M16)."""
    if not isinstance(result, Mapping):
        return Verdict("legacy")
    versions = result.get("supportedVersions")
    if not isinstance(versions, list):
        return Verdict("legacy")
    kind = result.get("resultType", "complete")
    if kind != "complete":
        return Verdict("legacy")  # M57: not a DiscoverResult
    offered = {v for v in versions if isinstance(v, str)}
    for version in MODERN_VERSIONS:  # M2: by this client's preference, not list order
        if version in offered:
            capabilities = result.get("capabilities")
            return Verdict(
                "modern",
                version=version,
                capabilities=capabilities if isinstance(capabilities, Mapping) else {},
                server_info=_server_info(result),
            )
    return Verdict("legacy")  # M3: a handshake-era advertisement


def _server_info(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """M16: ``_meta``'s serverInfo, else a top-level one; malformed reads as absent."""
    meta = result.get("_meta")
    if isinstance(meta, Mapping):
        info = meta.get(META_SERVER_INFO)
        if isinstance(info, Mapping):
            return info
    info = result.get("serverInfo")
    return info if isinstance(info, Mapping) else {}


def probe_error_verdict(code: object, data: object, *, retried: bool, sent: str) -> Verdict:
    """A JSON-RPC error answering the probe (M4–M8)."""
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        supported = data.get("supported") if isinstance(data, Mapping) else None
        if not isinstance(supported, list):
            return Verdict("legacy")  # M6: unparseable
        offered = [v for v in supported if isinstance(v, str)]
        mutual = [v for v in MODERN_VERSIONS if v in offered]
        if mutual and not retried:
            return Verdict("retry", version=mutual[0])  # M4, even the version just sent
        if mutual or not any(v in HANDSHAKE_VERSIONS for v in offered):
            shown = ", ".join(excerpt(v, 30) for v in offered[:8]) or "none"
            return Verdict(
                "fail",
                error=HandshakeError(
                    f"the server supports protocol versions {shown}; this client asked for "
                    f"{sent} and speaks {', '.join(MODERN_VERSIONS + HANDSHAKE_VERSIONS)}"
                ),
            )
        return Verdict("legacy")  # M6: handshake versions only
    if code in (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY):
        # M7: a modern server that refused a well-formed probe; falling back would
        # not help.
        return Verdict(
            "fail",
            error=HandshakeError(f"the server refused server/discover with error {code}"),
        )
    return Verdict("legacy")  # M8


def probe_failure_is_outage(error: McpError) -> bool:
    """M10, M11: network failures, timeouts (the network's or an HTTP 408), a
    rate limit (429), 5xx, 401, 403 and a failed OAuth flow are never era
    evidence.

    Everything else that failed the probe (a 4xx without a JSON-RPC body, a
    2xx that is not a result, 202, a body that is not JSON) is the handshake
    era's answer (M8).
    """
    # OAuth's errors are loaded only by a client that authorizes: without them no
    # error can be an OAuthError. (Looked up by name: auth sits above wire.)
    oauth = sys.modules.get(OAUTH_ERRORS_MODULE)
    if oauth is not None and isinstance(error, oauth.OAuthError):
        return True  # A1: authorizing failed (a person declined, no token): not the era
    if not isinstance(error, TransportError):
        return False
    status = getattr(error, "status", None)
    # M11: 401 and 403 are about authorization, not the era: the attempt fails
    # with them (and is retried), rather than falling back. A 408 is the probe's
    # own timeout and a 429 a busy server (M10): either era answers them.
    return status is None or status >= 500 or status in _NOT_ERA_EVIDENCE


_NOT_ERA_EVIDENCE = frozenset((401, 403, 408, 429))


def is_legacy_answer(error: McpError) -> bool:
    """M13: an HTTP 4xx without a JSON-RPC body (M8's shapes) answering a request
    sent in the 2026-07-28 era: the endpoint may speak the handshake era now."""
    status = getattr(error, "status", None)
    return (
        isinstance(error, TransportError)
        and isinstance(status, int)
        and 400 <= status < 500
        and status not in _NOT_ERA_EVIDENCE
    )


def result_type(result: Mapping[str, Any], *, mrtr: bool) -> str:
    """``resultType`` of a modern result (M43, M44, M57): absent is ``complete``.

    ``input_required`` is accepted only where ``mrtr`` (``tools/call``); any
    other value is a protocol error.
    """
    kind = result.get("resultType", "complete")
    if kind == "complete" or (mrtr and kind == "input_required"):
        return str(kind)
    raise RemoteProtocolError(
        f"the server answered with an unknown resultType {excerpt(repr(kind), 40)}"
    )


def answer_input_requests(input_requests: object) -> dict[str, Any]:
    """E4, M52: the answers of a client that declares no capabilities.

    An elicitation is answered ``cancel`` (no person saw it), ``roots/list`` with
    no roots; sampling, or any other method, cannot be answered: it raises
    ``RemoteProtocolError`` naming the method, and the call fails without a retry.
    """
    if input_requests is None:
        return {}
    if not isinstance(input_requests, Mapping):
        raise RemoteProtocolError("the server's inputRequests is not a JSON object")
    answers: dict[str, Any] = {}
    for key, request in input_requests.items():
        method = request.get("method") if isinstance(request, Mapping) else None
        if method == "elicitation/create":
            answers[key] = {"action": "cancel"}
        elif method == "roots/list":
            answers[key] = {"roots": []}
        else:
            shown = excerpt(method, 60) if isinstance(method, str) else "no method"
            raise RemoteProtocolError(
                f"the server asked for {shown} to finish the call, which this client does "
                "not offer (it declares no capabilities)"
            )
    return answers
