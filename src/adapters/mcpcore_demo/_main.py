"""Command-line entry point of the demo server."""

from __future__ import annotations

import argparse

import anyio

from ._server import DemoServer

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mcpcore_demo",
        description="Run the mcpcore demo MCP server (Streamable HTTP) until interrupted.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--path", default="/mcp", help="endpoint path (default /mcp)")
    parser.add_argument("--json", action="store_true", help="answer requests with JSON, not SSE")
    parser.add_argument("--stateless", action="store_true", help="no sessions, no GET stream")
    parser.add_argument("--page-size", type=int, default=None, help="paginate tools/list")
    parser.add_argument("--retry-ms", type=int, default=None, help="SSE retry field value")
    parser.add_argument(
        "--close-after-priming",
        action="store_true",
        help="close tools/call SSE streams after the priming event (clients poll with GET)",
    )
    parser.add_argument("--crlf", action="store_true", help="end SSE lines with CRLF")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    server = DemoServer(
        path=args.path,
        json_response=args.json,
        stateless=args.stateless,
        page_size=args.page_size,
        retry_ms=args.retry_ms,
        close_after_priming=args.close_after_priming,
        sse_newline="\r\n" if args.crlf else "\n",
        record=False,
    )

    async def run() -> None:
        async with server.serve(host=args.host, port=args.port) as running:
            print(running.url, flush=True)
            await anyio.sleep_forever()

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass
    return 0
