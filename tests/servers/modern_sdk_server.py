"""An MCP server speaking revision 2026-07-28 (official Python SDK 2.3 ``MCPServer``).

Run as a subprocess::

    python tests/servers/modern_sdk_server.py PORT --mode {dual,modern-only} [--json] \
        [--stateless] [--events-file PATH] [--log-level LEVEL]

Serves Streamable HTTP at ``http://127.0.0.1:PORT/mcp``; readiness is detected
by polling the port.

Modes:

``dual``
    The SDK default: one endpoint answers both eras.  A request whose
    ``MCP-Protocol-Version`` header is absent or a handshake-era version
    (2024-11-05 .. 2025-11-25) takes the legacy path (``initialize``,
    ``Mcp-Session-Id``, GET stream; stateful unless ``--stateless``); any other
    value takes the SDK's modern per-request path.
``modern-only``
    Only 2026-07-28.  The SDK 2.3 server has no switch for this (its session
    manager always routes handshake-era traffic to the legacy path), so an
    ASGI gate in front of it answers every handshake-era request itself:
    POST → HTTP 400 ``-32022`` UnsupportedProtocolVersion with
    ``data = {"supported": ["2026-07-28"], "requested": <header, or initialize's
    params.protocolVersion, or "2025-03-26">}`` (HTTP 400 ``-32020`` when the body
    carries the modern ``_meta`` envelope but the header is missing); GET and
    DELETE → 405 ``Allow: POST``.  Modern traffic reaches the SDK unchanged.

``--json`` sets the SDK's ``json_response=True``: modern answers are
``application/json`` (``subscriptions/listen`` is still SSE) and a modern
handler is NOT cancelled when the client drops the connection.  Without it a
modern answer is JSON when the handler finishes silently within 15 s, else SSE
(progress forces SSE), and a client disconnect cancels the handler.

Tools:

``echo(text)``
    returns ``text``.
``add(a, b)``
    structured ``{"sum": a + b}`` (with an ``outputSchema``).
``slow(steps=5, delay=0.2)``
    reports progress ``i/steps`` after each step (only when the request carried
    ``_meta.progressToken``), sleeping ``delay`` seconds per step; records
    ``cancelled slow`` when cancelled.
``regional(region, text, priority=0, verbose=False)``
    SEP-2243: ``region`` carries ``"x-mcp-header": "Region"``, ``priority``
    ``"Priority"`` (integer), ``verbose`` ``"Verbose"`` (boolean), so a modern
    client mirrors them as ``Mcp-Param-Region`` / ``-Priority`` / ``-Verbose``
    (the SDK rejects a modern call whose headers do not match the arguments
    with HTTP 400 ``-32020``).  The tool reads the request headers itself and
    returns them: structured ``{"region", "text", "headers": {lower-cased
    mcp-param-* name: raw value}, "decoded": {name: base64-decoded value}}``.
``confirm(action)``
    SEP-2322 input-required: asks ``elicitation/create`` (schema
    ``{"confirmed": boolean}``) before completing.  At 2026-07-28 the first
    call returns ``resultType: "input_required"`` (key ``"ask"``-derived, sealed
    ``requestState``) and the client's retry with ``inputResponses`` completes
    it; a client that declared no ``elicitation`` capability gets ``-32021``.
    In the legacy era it sends a standalone ``elicitation/create`` mid-call.
    Returns ``"<action>: accept confirmed=True"`` / ``"<action>: decline"`` / ...
``visit(service)``, ``gated(service)``, ``roots()``, ``summarize(text)``
    handshake era only: a URL elicitation (``elicitation/complete`` follows an
    accept), ``-32042`` with one URL the first time per service, ``roots/list``,
    ``sampling/createMessage``; each result shows the client's answer.
``signin(service)``
    2026-07-28 only: a URL question in an ``input_required`` round (a
    hand-rolled ``InputRequiredResult``, no ``elicitationId``), with
    ``requestState`` ``"pending-<service>"``; the retry that carries that state
    and an ``accept`` returns ``"<service>: signed in (pending-<service>)"``,
    otherwise ``"<service>: <action>"``.
``add_tool(name)`` / ``remove_tool(name)``
    change the tool list at runtime and publish ``notifications/tools/list_changed``
    to ``subscriptions/listen`` streams (modern); on a legacy request it also
    sends the notification through the legacy session.  The added tool
    ``name(text="")`` returns ``"dynamic <name>: <text>"``.

``--events-file`` receives one line per event (appended and flushed at once):

``request <method>`` / ``notification <method>``
    a JSON-RPC request / notification POSTed (any era); ``get`` / ``delete`` for
    the other HTTP verbs.
``http {json}``
    the same message in detail: ``{"verb", "era": "modern"|"legacy", "kind",
    "method", "id", "name", "headers": {...}}`` where ``headers`` holds the
    lower-cased ``mcp-protocol-version``, ``mcp-method``, ``mcp-name``,
    ``mcp-session-id``, ``last-event-id``, ``accept`` and every ``mcp-param-*``
    header present (raw values).
``closed <method>`` (``closed GET`` for a GET stream)
    the client closed the connection before the response was complete (a
    modern cancellation, or the end of a ``subscriptions/listen`` stream).
``done {json}``
    after each HTTP exchange: ``{"verb", "method", "id", "status",
    "content_type", "closed_by_client"}``.
``rejected <status> <code>``
    (modern-only) a handshake-era request refused by the gate.
``call <tool>``, ``progress slow <i>``, ``finished slow``, ``cancelled slow``,
``ask confirm``, ``tool-added <name>``, ``tool-removed <name>``,
``notified tools/list_changed``
    tool activity.
``subscribe <uri>`` / ``unsubscribe <uri>`` (handshake era), ``call touch <uri>``
(``touch(uri)`` announces ``notifications/resources/updated``: on listen streams
that asked for it, and on a legacy session that subscribed), ``call change_lists``
(``change_lists()`` announces resources and prompts ``list_changed``),
``call shout`` (``shout(text)`` logs ``text`` at info first), ``call link``,
``read greeting``, ``read blob``, ``get review``, ``get quote``
    resource and prompt activity.

Resources (listed one a page): ``peer://greeting`` (text), ``peer://blob`` (16
bytes, 0-15), the template ``peer://items/{item}``. Prompts: ``review(code, language="python")``,
``quote()`` (a text message, then ``peer://greeting`` embedded). ``link(name)``
returns a ``resource_link`` to ``peer://items/<name>``.
"""

import argparse
import base64
import binascii
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any, TypedDict

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp_types import (
    Completion,
    ElicitRequest,
    ElicitRequestURLParams,
    EmbeddedResource,
    EmptyResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    ResourceLink,
    SamplingMessage,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

MODES = ("dual", "modern-only")
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
RECORDED_HEADERS = (
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-session-id",
    "last-event-id",
    "accept",
)
UNSUPPORTED_PROTOCOL_VERSION = -32022
HEADER_MISMATCH = -32020

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class EventLog:
    """Appends one line per event, flushed immediately (no-op without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def record(self, line: str) -> None:
        if not self.path:
            return
        # Open/append/close per line so readers always see whole lines promptly.
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def record_json(self, tag: str, data: dict[str, Any]) -> None:
        self.record(f"{tag} {json.dumps(data, sort_keys=True, separators=(',', ':'))}")


def _decode_header_value(value: str) -> str:
    """SEP-2243 value decoding: ``=?base64?...?=`` → its UTF-8 text, otherwise as-is."""
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return value
    return value


# ---------------------------------------------------------------------------
# ASGI recorder (+ the modern-only gate)


def _describe_body(body: bytes) -> dict[str, Any]:
    """kind/method/id/name of a POST body (never raises)."""
    try:
        decoded = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):
        return {"kind": "invalid", "method": None, "id": None, "name": None, "decoded": None}
    if isinstance(decoded, list):
        return {"kind": "batch", "method": None, "id": None, "name": None, "decoded": decoded}
    if not isinstance(decoded, dict):
        return {"kind": "invalid", "method": None, "id": None, "name": None, "decoded": decoded}
    method = decoded.get("method")
    if not isinstance(method, str):
        kind = "response" if ("result" in decoded or "error" in decoded) else "invalid"
        method = None
    else:
        kind = "request" if "id" in decoded else "notification"
    params = decoded.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return {
        "kind": kind,
        "method": method,
        "id": decoded.get("id"),
        "name": name if isinstance(name, str) else None,
        "decoded": decoded,
    }


def _json_response_messages(status: int, payload: dict[str, Any]) -> list[Message]:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        },
        {"type": "http.response.body", "body": body, "more_body": False},
    ]


def _modern_only_rejection(
    verb: str, headers: dict[str, str], info: dict[str, Any]
) -> tuple[int, list[Message]] | None:
    """The gate's answer to a handshake-era request, or None to let it through."""
    version = headers.get("mcp-protocol-version")
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None  # the SDK's modern path owns it (including unsupported versions)
    if verb != "POST":
        return 405, [
            {
                "type": "http.response.start",
                "status": 405,
                "headers": [(b"allow", b"POST"), (b"content-length", b"0")],
            },
            {"type": "http.response.body", "body": b"", "more_body": False},
        ]
    decoded = info["decoded"]
    request_id = decoded.get("id") if isinstance(decoded, dict) else None
    params = decoded.get("params") if isinstance(decoded, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if version is None and isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
        error: dict[str, Any] = {
            "code": HEADER_MISMATCH,
            "message": "MCP-Protocol-Version header is required",
        }
    else:
        requested = version
        if requested is None and isinstance(params, dict):
            candidate = params.get("protocolVersion")
            requested = candidate if isinstance(candidate, str) else None
        error = {
            "code": UNSUPPORTED_PROTOCOL_VERSION,
            "message": "Unsupported protocol version: this server speaks only 2026-07-28",
            "data": {
                "supported": list(MODERN_PROTOCOL_VERSIONS),
                "requested": requested or "2025-03-26",
            },
        }
    payload = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return 400, _json_response_messages(400, payload)


class Recorder:
    """ASGI wrapper: records every HTTP exchange in the events file; optionally gates legacy traffic.

    It reads the whole request body first (replaying it to the app), then watches
    the connection itself so that a client closing a response stream early is
    recorded in every mode, even when the app never asks.
    """

    def __init__(self, app: ASGIApp, events: EventLog, *, modern_only: bool) -> None:
        self.app = app
        self.events = events
        self.modern_only = modern_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        verb = str(scope.get("method", "GET")).upper()
        headers: dict[str, str] = {}
        for raw_key, raw_value in scope.get("headers", []):
            key = raw_key.decode("latin-1").lower()
            if key in RECORDED_HEADERS or key.startswith("mcp-param-"):
                headers[key] = raw_value.decode("latin-1")
        version = headers.get("mcp-protocol-version")
        era = (
            "modern"
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
            else "legacy"
        )

        # Buffer the body (bounded by the app's own 4 MiB limit in practice).
        chunks: list[bytes] = []
        disconnected_early = False
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                disconnected_early = True
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        info = (
            _describe_body(body)
            if verb == "POST"
            else {
                "kind": verb.lower(),
                "method": None,
                "id": None,
                "name": None,
                "decoded": None,
            }
        )
        label = info["method"] or verb
        if verb == "POST":
            if info["kind"] in ("request", "notification"):
                self.events.record(f"{info['kind']} {info['method']}")
            else:
                self.events.record(f"post {info['kind']}")
        else:
            self.events.record(verb.lower())
        self.events.record_json(
            "http",
            {
                "verb": verb,
                "era": era,
                "kind": info["kind"],
                "method": info["method"],
                "id": info["id"],
                "name": info["name"],
                "headers": headers,
            },
        )

        state: dict[str, Any] = {
            "status": None,
            "content_type": None,
            "final": False,
            "closed_by_client": disconnected_early,
        }
        client_gone = anyio.Event()
        if disconnected_early:
            client_gone.set()
        body_sent = False

        async def app_receive() -> Message:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await client_gone.wait()
            return {"type": "http.disconnect"}

        async def app_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"] = message.get("status")
                for raw_key, raw_value in message.get("headers", []):
                    if raw_key.lower() == b"content-type":
                        state["content_type"] = raw_value.decode("latin-1")
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["final"] = True
            with contextlib.suppress(OSError):
                await send(message)

        async def watch_disconnect() -> None:
            while not client_gone.is_set():
                message = await receive()
                if message["type"] == "http.disconnect":
                    if not state["final"]:
                        state["closed_by_client"] = True
                        self.events.record(f"closed {label}")
                    client_gone.set()

        try:
            async with anyio.create_task_group() as tg:
                if not disconnected_early:
                    tg.start_soon(watch_disconnect)
                rejection = (
                    _modern_only_rejection(verb, headers, info) if self.modern_only else None
                )
                if rejection is not None:
                    status, messages = rejection
                    error = json.loads(messages[1]["body"] or b"{}").get("error", {})
                    self.events.record(f"rejected {status} {error.get('code', '-')}")
                    for message in messages:
                        await app_send(message)
                else:
                    await self.app(scope, app_receive, app_send)
                tg.cancel_scope.cancel()
        finally:
            self.events.record_json(
                "done",
                {
                    "verb": verb,
                    "method": info["method"],
                    "id": info["id"],
                    "status": state["status"],
                    "content_type": state["content_type"],
                    "closed_by_client": state["closed_by_client"],
                },
            )


# ---------------------------------------------------------------------------
# The MCP server


class AddResult(TypedDict):
    sum: float


class RegionalResult(TypedDict):
    region: str
    text: str
    priority: int
    verbose: bool
    headers: dict[str, str]
    decoded: dict[str, str]


class Confirm(BaseModel):
    confirmed: bool


class PagingServer(MCPServer):
    """``MCPServer`` listing its resources one a page (the stock one never pages): the
    cursor is the next resource's index, as text."""

    # MCPServer.__init__ binds `on_list_resources=self._handle_list_resources`, so
    # overriding the method here replaces the lowlevel resources/list handler.
    async def _handle_list_resources(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        resources = await self.list_resources()
        cursor = params.cursor if params is not None else None
        start = int(cursor) if cursor is not None and cursor.isdigit() else 0
        following = str(start + 1) if start + 1 < len(resources) else None
        return ListResourcesResult(resources=resources[start : start + 1], next_cursor=following)


def build_server(events: EventLog, log_level: str) -> MCPServer:
    mcp = PagingServer(
        "mcpcore-modern-sdk-server",
        version="2.3-peer",
        instructions="mcpcore test peer (MCP 2026-07-28 + handshake era)",
        log_level=log_level,  # type: ignore[arg-type]
    )

    @mcp.tool(structured_output=False)
    def echo(text: str, ctx: Context) -> str:
        """Echo the text back."""
        events.record("call echo")
        # The host's own _meta keys (outside the MCP namespace), for the V1 tests.
        meta = ctx.request_context.meta
        if meta is None:
            dumped: dict[str, Any] = {}
        elif isinstance(meta, dict):
            dumped = dict(meta)
        else:
            dumped = meta.model_dump(by_alias=True)
        own = {
            k: v
            for k, v in dumped.items()
            if "modelcontextprotocol" not in k and k not in ("progressToken", "progress_token")
        }
        if own:
            events.record("meta " + json.dumps(own, sort_keys=True, default=str))
        return text

    @mcp.tool()
    def add(a: float, b: float) -> AddResult:
        """Add two numbers (structured output)."""
        events.record("call add")
        return {"sum": a + b}

    @mcp.tool(structured_output=False)
    async def slow(ctx: Context, steps: int = 5, delay: float = 0.2) -> str:
        """Take `steps` steps of `delay` seconds, reporting progress; cancellable."""
        events.record("call slow")
        try:
            for i in range(1, steps + 1):
                await anyio.sleep(delay)
                await ctx.report_progress(i, steps, f"step {i}/{steps}")
                events.record(f"progress slow {i}")
        except anyio.get_cancelled_exc_class():
            events.record("cancelled slow")
            raise
        events.record("finished slow")
        return f"completed {steps} steps"

    @mcp.tool()
    def regional(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        text: str,
        ctx: Context,
        priority: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Priority"})] = 0,
        verbose: Annotated[bool, Field(json_schema_extra={"x-mcp-header": "Verbose"})] = False,
    ) -> RegionalResult:
        """Echo `text` tagged with `region`; returns the Mcp-Param-* headers it received."""
        events.record("call regional")
        received = ctx.headers or {}
        params = {
            key.lower(): value
            for key, value in received.items()
            if key.lower().startswith("mcp-param-")
        }
        return {
            "region": region,
            "text": text,
            "priority": priority,
            "verbose": verbose,
            "headers": params,
            "decoded": {key: _decode_header_value(value) for key, value in params.items()},
        }

    def ask(action: str) -> Elicit[Confirm]:
        events.record("ask confirm")
        return Elicit(f"Confirm {action}?", Confirm)

    @mcp.tool(structured_output=False)
    def confirm(action: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask)]) -> str:
        """Ask the client to confirm `action` (elicitation / input_required) before completing."""
        events.record("call confirm")
        if answer.action == "accept":
            return f"{action}: accept confirmed={answer.data.confirmed}"  # type: ignore[union-attr]
        return f"{action}: {answer.action}"

    @mcp.tool(structured_output=False)
    async def visit(service: str, ctx: Context) -> str:
        """Handshake era: ask the person to visit a URL (URL elicitation); on accept,
        announce ``notifications/elicitation/complete`` for ``visit-<service>``."""
        events.record("call visit")
        ident = f"visit-{service}"
        result = await ctx.elicit_url(
            f"Sign in to {service}", f"https://auth.example.test/{service}?code=hush", ident
        )
        if result.action == "accept":
            await ctx.session.send_elicit_complete(ident, ctx.request_id)
        return f"{service}: {result.action}"

    visited: set[str] = set()

    @mcp.tool(structured_output=False)
    def gated(service: str) -> str:
        """Refuse with -32042 (URL elicitation required) the first time per service."""
        events.record("call gated")
        if service not in visited:
            visited.add(service)
            raise UrlElicitationRequiredError(
                [
                    ElicitRequestURLParams(
                        message=f"Connect {service}",
                        url=f"https://auth.example.test/connect/{service}?state=hush",
                        elicitation_id=f"gate-{service}",
                    )
                ]
            )
        return f"gated {service}: open"

    @mcp.tool(structured_output=False)
    def signin(service: str, ctx: Context) -> str | InputRequiredResult:
        """2026-07-28: ask the person to sign in to ``service`` at a URL; the retry is
        judged from this server's own requestState."""
        state = ctx.request_state
        responses = ctx.input_responses
        if state is None or not responses or "visit" not in responses:
            events.record("ask signin")
            return InputRequiredResult(
                input_requests={
                    "visit": ElicitRequest(
                        params=ElicitRequestURLParams(
                            message=f"Sign in to {service}",
                            url=f"https://auth.example.test/{service}?code=hush",
                        )
                    )
                },
                request_state=f"pending-{service}",
            )
        events.record("call signin")
        action = getattr(responses["visit"], "action", "?")
        return f"{service}: signed in ({state})" if action == "accept" else f"{service}: {action}"

    @mcp.tool(structured_output=False)
    async def roots(ctx: Context) -> str:
        """Handshake era: ask the client for its roots (``roots/list``) and list their URIs."""
        events.record("call roots")
        listed = await ctx.session.list_roots()
        return " ".join(str(root.uri) for root in listed.roots) or "no roots"

    @mcp.tool(structured_output=False)
    async def summarize(text: str, ctx: Context) -> str:
        """Handshake era: ask the client's model to summarize ``text`` (sampling)."""
        events.record("call summarize")
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=text))],
            max_tokens=50,
        )
        content = result.content
        return f"summary: {getattr(content, 'text', '?')} ({result.model})"

    async def _tools_changed(ctx: Context) -> None:
        await ctx.notify_tools_changed()
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            with contextlib.suppress(Exception):
                await ctx.session.send_tool_list_changed()
        events.record("notified tools/list_changed")

    @mcp.tool(structured_output=False)
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool `name(text)` and announce tools/list_changed."""
        events.record("call add_tool")
        if any(tool.name == name for tool in await mcp.list_tools()):
            raise ToolError(f"tool {name!r} already exists")

        def dynamic(text: str = "") -> str:
            events.record(f"call {name}")
            return f"dynamic {name}: {text}"

        mcp.add_tool(
            dynamic, name=name, description=f"dynamic tool {name}", structured_output=False
        )
        events.record(f"tool-added {name}")
        await _tools_changed(ctx)
        return f"added {name}"

    @mcp.tool(structured_output=False)
    async def remove_tool(name: str, ctx: Context) -> str:
        """Remove a tool added by add_tool and announce tools/list_changed."""
        events.record("call remove_tool")
        try:
            mcp.remove_tool(name)
        except Exception as exc:
            raise ToolError(f"cannot remove {name!r}: {exc}") from exc
        events.record(f"tool-removed {name}")
        await _tools_changed(ctx)
        return f"removed {name}"

    @mcp.tool(structured_output=False)
    async def shout(text: str, ctx: Context) -> str:
        """Send `text` as a log message (info) before answering (F8)."""
        events.record("call shout")
        await ctx.info(text)
        return f"shouted {text}"

    # Resources and prompts (F2-F5): two fixed resources (text, binary), a template
    # and a prompt with arguments.
    @mcp.resource("peer://greeting", name="greeting", mime_type="text/plain")
    def greeting() -> str:
        """A short text."""
        events.record("read greeting")
        return "hello from the peer"

    @mcp.resource("peer://blob", name="blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        """Sixteen bytes, 0 to 15."""
        events.record("read blob")
        return bytes(range(16))

    @mcp.resource("peer://items/{item}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        """One item, by name."""
        return f"item {item}"

    @mcp.prompt()
    def review(code: str, language: str = "python") -> str:
        """Ask for a review of `code`."""
        events.record("get review")
        return f"Please review this {language} code:\n{code}"

    @mcp.prompt()
    def quote() -> list[UserMessage]:
        """Quote the greeting: a text message, then the resource embedded."""
        events.record("get quote")
        embedded = EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="peer://greeting", mime_type="text/plain", text="hello from the peer"
            ),
        )
        return [UserMessage("Here is the greeting:"), UserMessage(embedded)]

    @mcp.tool(structured_output=False)
    def link(name: str) -> list[TextContent | ResourceLink]:
        """A resource_link to the item `name` (F4)."""
        events.record("call link")
        return [
            TextContent(type="text", text=f"the item {name}"),
            ResourceLink(
                type="resource_link", uri=f"peer://items/{name}", name=f"item {name}", mime_type="text/plain"
            ),
        ]

    # F2: resource subscriptions. Handshake era: resources/subscribe and
    # resources/unsubscribe (declaring resources.subscribe), per legacy session;
    # 2026-07-28: the SDK's subscriptions/listen filter. touch(uri) announces an
    # update in both; change_lists() announces resource and prompt list changes.
    legacy_subscriptions: dict[str | None, set[str]] = {}  # by Mcp-Session-Id

    def session_of(request_context: Any) -> str | None:
        request = getattr(request_context, "request", None)
        headers = getattr(request, "headers", None)
        return None if headers is None else headers.get("mcp-session-id")

    async def on_subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        events.record(f"subscribe {params.uri}")
        legacy_subscriptions.setdefault(session_of(ctx), set()).add(str(params.uri))
        return EmptyResult()

    async def on_unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        events.record(f"unsubscribe {params.uri}")
        legacy_subscriptions.get(session_of(ctx), set()).discard(str(params.uri))
        return EmptyResult()

    lowlevel = mcp._lowlevel_server
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)

    @mcp.tool(structured_output=False)
    async def touch(uri: str, ctx: Context) -> str:
        """Announce that the resource at `uri` changed (to whoever subscribed)."""
        events.record(f"call touch {uri}")
        await ctx.notify_resource_updated(uri)
        subscribed = legacy_subscriptions.get(session_of(ctx.request_context), set())
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and uri in subscribed:
            await ctx.session.send_resource_updated(uri)
        return f"touched {uri}"

    @mcp.tool(structured_output=False)
    async def change_lists(ctx: Context) -> str:
        """Announce that the resource and prompt lists changed."""
        events.record("call change_lists")
        await ctx.notify_resources_changed()
        await ctx.notify_prompts_changed()
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await ctx.session.send_resource_list_changed()
            await ctx.session.send_prompt_list_changed()
        return "changed"

    @mcp.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        """Languages for review's `language`, items for the template's `item`."""
        pool = {"language": ["python", "rust", "go"], "item": ["apple", "apricot", "banana"]}
        found = [v for v in pool.get(argument.name, []) if v.startswith(argument.value)]
        return Completion(values=found, total=len(found), has_more=False)

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("port", type=int)
    parser.add_argument("--mode", choices=MODES, default="dual")
    parser.add_argument("--json", action="store_true", help="json_response=True")
    parser.add_argument(
        "--stateless", action="store_true", help="legacy era without sessions (dual mode)"
    )
    parser.add_argument("--events-file", default=None)
    parser.add_argument("--log-level", default=os.environ.get("SDK_SERVER_LOG_LEVEL", "WARNING"))
    args = parser.parse_args(argv)

    events = EventLog(args.events_file)
    server = build_server(events, args.log_level.upper())
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=args.json,
        stateless_http=args.stateless,
        host="127.0.0.1",
    )
    wrapped = Recorder(app, events, modern_only=args.mode == "modern-only")
    print(
        f"modern_sdk_server: mode={args.mode} json={args.json} http://127.0.0.1:{args.port}/mcp",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        wrapped,
        host="127.0.0.1",
        port=args.port,
        log_level=args.log_level.lower(),
        timeout_graceful_shutdown=1,
    )


if __name__ == "__main__":
    main()
