"""A real MCP server (official Python SDK, ``MCPServer``) for mcpcore's tests.

Run as a subprocess::

    python tests/servers/sdk_server.py --port N \
        --mode {stateful-sse,stateful-json,stateless-sse,stateless-json} \
        [--page-size K] [--events-file PATH]

Serves Streamable HTTP at ``http://127.0.0.1:N/mcp``.  Nothing is printed to
stdout except uvicorn's own output; readiness is detected by polling the port.

Tools: ``echo``, ``add`` (structured output + outputSchema), ``image``,
``audio``, ``embedded_text``, ``embedded_blob``, ``resource_link``, ``fail``
(isError), ``progress``, ``slow`` (records ``cancelled`` when cancelled).

``--events-file`` receives one line per event: ``call <tool>`` when a tool
starts, ``cancelled`` when ``slow`` is cancelled by ``notifications/cancelled``.

``--page-size K`` makes ``tools/list`` return pages of K tools with an opaque
``nextCursor`` (the stock ``MCPServer`` never pages).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import struct
import wave
import zlib
from typing import Any, TypedDict

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    ResourceLink,
    TextResourceContents,
)

MODES = ("stateful-sse", "stateful-json", "stateless-sse", "stateless-json")


def _tiny_png() -> bytes:
    """A valid 1x1 RGBA PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return (
            struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00\xff")  # filter byte + one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _tiny_wav() -> bytes:
    """A valid WAV: 8 kHz mono 16-bit, 8 samples of silence."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 8)
    return buf.getvalue()


PNG_B64 = base64.b64encode(_tiny_png()).decode()
WAV_B64 = base64.b64encode(_tiny_wav()).decode()
BLOB_BYTES = bytes(range(16))


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


class AddResult(TypedDict):
    sum: float


class TestServer(MCPServer):
    """``MCPServer`` with cursor pagination of ``tools/list`` and a call log."""

    def __init__(self, *args: Any, page_size: int | None, events: EventLog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._page_size = page_size
        self._events = events

    # MCPServer.__init__ binds `on_list_tools=self._handle_list_tools`, so overriding
    # the method here replaces the lowlevel tools/list handler.
    async def _handle_list_tools(
        self, ctx: Any, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        tools = await self.list_tools()
        if not self._page_size:
            return ListToolsResult(tools=tools)
        cursor = params.cursor if params is not None else None
        start = 0
        if cursor is not None:
            try:
                start = int(
                    base64.urlsafe_b64decode(cursor.encode()).decode().removeprefix("offset:")
                )
            except (ValueError, UnicodeDecodeError) as exc:
                raise MCPError(code=INVALID_PARAMS, message=f"invalid cursor: {cursor!r}") from exc
            if not 0 <= start <= len(tools):
                raise MCPError(code=INVALID_PARAMS, message=f"invalid cursor: {cursor!r}")
        end = start + self._page_size
        next_cursor = (
            base64.urlsafe_b64encode(f"offset:{end}".encode()).decode()
            if end < len(tools)
            else None
        )
        return ListToolsResult(tools=tools[start:end], next_cursor=next_cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        self._events.record(f"call {name}")
        # The host keys of the request's _meta (V1 tests read them back): the ones
        # outside the MCP namespace, as "meta <json>".
        meta = getattr(getattr(context, "request_context", None), "meta", None)
        if meta is not None:
            dumped = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else dict(meta)
            own = {
                k: v
                for k, v in dumped.items()
                if "modelcontextprotocol" not in k and k not in ("progressToken", "progress_token")
            }
            if own:
                self._events.record("meta " + json.dumps(own, sort_keys=True, default=str))
        return await super().call_tool(name, arguments, context)


def build_server(page_size: int | None, events: EventLog, log_level: str = "WARNING") -> TestServer:
    mcp = TestServer(
        name="mcpcore-test-sdk-server",
        version="1.0.0",
        instructions="Test server for mcpcore.",
        log_level=log_level,
        page_size=page_size,
        events=events,
    )

    @mcp.tool(structured_output=False)
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def add(a: float, b: float) -> AddResult:
        """Add two numbers; structured result {sum}."""
        return AddResult(sum=a + b)

    @mcp.tool(structured_output=False)
    def image() -> ImageContent:
        """Return a 1x1 PNG image block."""
        return ImageContent(data=PNG_B64, mime_type="image/png")

    @mcp.tool(structured_output=False)
    def audio() -> AudioContent:
        """Return a tiny WAV audio block."""
        return AudioContent(data=WAV_B64, mime_type="audio/wav")

    @mcp.tool(structured_output=False)
    def embedded_text() -> EmbeddedResource:
        """Return an embedded text resource."""
        return EmbeddedResource(
            resource=TextResourceContents(
                uri="test://embedded/text", mime_type="text/plain", text="hello resource"
            )
        )

    @mcp.tool(structured_output=False)
    def embedded_blob() -> EmbeddedResource:
        """Return an embedded blob resource."""
        return EmbeddedResource(
            resource=BlobResourceContents(
                uri="test://embedded/blob",
                mime_type="application/octet-stream",
                blob=base64.b64encode(BLOB_BYTES).decode(),
            )
        )

    @mcp.tool(structured_output=False)
    def resource_link() -> ResourceLink:
        """Return a resource link block."""
        return ResourceLink(
            uri="test://linked/readme",
            name="readme",
            title="Linked README",
            description="A linked resource",
            mime_type="text/markdown",
        )

    @mcp.tool(structured_output=False)
    def fail() -> str:
        """Always fails with isError=true."""
        raise ToolError("this tool always fails")

    @mcp.tool(structured_output=False)
    async def progress(steps: int, ctx: Context) -> str:
        """Report progress `steps` times, then return."""
        for i in range(1, steps + 1):
            await anyio.sleep(0.02)
            await ctx.report_progress(i, steps, f"step {i}/{steps}")
        return f"completed {steps} steps"

    @mcp.tool(structured_output=False)
    async def slow(seconds: float) -> str:
        """Sleep `seconds` in small steps; records `cancelled` in the events file if cancelled."""
        try:
            remaining = seconds
            while remaining > 0:
                step = min(0.05, remaining)
                await anyio.sleep(step)
                remaining -= step
        except anyio.get_cancelled_exc_class():
            events.record("cancelled")
            raise
        return f"slept {seconds} seconds"

    return mcp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=MODES, default="stateful-sse")
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--events-file", default=None)
    parser.add_argument("--log-level", default=os.environ.get("SDK_SERVER_LOG_LEVEL", "WARNING"))
    args = parser.parse_args(argv)
    if args.page_size is not None and args.page_size < 1:
        parser.error("--page-size must be >= 1")

    server = build_server(args.page_size, EventLog(args.events_file), args.log_level.upper())
    stateless = args.mode.startswith("stateless")
    json_response = args.mode.endswith("-json")
    server.run(
        "streamable-http",
        host="127.0.0.1",
        port=args.port,
        stateless_http=stateless,
        json_response=json_response,
    )


if __name__ == "__main__":
    main()
