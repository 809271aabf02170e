"""The default demo tool set: one tool per content shape, plus progress, logging and a
long job that runs as a task."""

from __future__ import annotations

import base64
import io
import json
import struct
import wave
import zlib
from typing import TYPE_CHECKING, Any

import anyio

from ._context import DemoTool, ToolResult
from ._types import LOG_LEVELS

if TYPE_CHECKING:
    from ._context import ToolContext

__all__ = ["AUDIO_WAV", "IMAGE_PNG", "default_tools"]


def _png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    pixel = b"\x00" + bytes((0x2E, 0x8B, 0x57, 0xFF))  # filter byte + sea green
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixel))
        + chunk(b"IEND", b"")
    )


def _wav_silence() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(8000)
        out.writeframes(b"\x80" * 80)  # 10 ms of 8-bit silence
    return buffer.getvalue()


IMAGE_PNG: bytes = _png_1x1()
AUDIO_WAV: bytes = _wav_silence()
_BLOB: bytes = bytes(range(16))

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_READ_ONLY: dict[str, Any] = {"readOnlyHint": True, "openWorldHint": False}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _error(text: str) -> dict[str, Any]:
    return {"content": [_text(text)], "isError": True}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


async def _echo(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text = args.get("text", "")
    if not isinstance(text, str):
        return _error("echo: 'text' must be a string")
    return {"content": [_text(text)]}


async def _add(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    a, b = args.get("a"), args.get("b")
    if not (isinstance(a, (int, float)) and isinstance(b, (int, float))) or not (
        _number(a) and _number(b)
    ):
        return _error("add: 'a' and 'b' must be numbers")
    total = a + b
    return {"content": [_text(json.dumps(total))], "structuredContent": {"sum": total}}


async def _image(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    data = base64.b64encode(IMAGE_PNG).decode("ascii")
    return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}


async def _audio(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    data = base64.b64encode(AUDIO_WAV).decode("ascii")
    return {"content": [{"type": "audio", "data": data, "mimeType": "audio/wav"}]}


async def _embedded_text(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    resource = {
        "uri": "demo://text/hello.txt",
        "mimeType": "text/plain",
        "text": "Hello from an embedded text resource.",
    }
    return {"content": [{"type": "resource", "resource": resource}]}


async def _embedded_blob(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    resource = {
        "uri": "demo://blob/data.bin",
        "mimeType": "application/octet-stream",
        "blob": base64.b64encode(_BLOB).decode("ascii"),
    }
    return {"content": [{"type": "resource", "resource": resource}]}


async def _resource_link(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    link = {
        "type": "resource_link",
        "uri": "demo://text/hello.txt",
        "name": "hello.txt",
        "description": "A small text resource",
        "mimeType": "text/plain",
    }
    return {"content": [link]}


async def _structured(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    name = args.get("name", "world")
    if not isinstance(name, str):
        return _error("structured: 'name' must be a string")
    data = {"greeting": f"Hello, {name}!", "length": len(name), "tags": ["demo", "structured"]}
    return {"content": [_text(json.dumps(data))], "structuredContent": data}


async def _fail(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    message = args.get("message", "the demo tool failed on purpose")
    if not isinstance(message, str):
        message = "the demo tool failed on purpose"
    return _error(message)


async def _slow(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    steps, delay = args.get("steps", 3), args.get("delay", 0.05)
    if not isinstance(steps, int) or isinstance(steps, bool) or not 0 <= steps <= 10_000:
        return _error("slow: 'steps' must be an integer between 0 and 10000")
    if not _number(delay) or not 0 <= delay <= 3600:
        return _error("slow: 'delay' must be a number of seconds between 0 and 3600")
    for step in range(1, steps + 1):
        await anyio.sleep(delay)
        await ctx.progress(step, steps, f"step {step} of {steps}")
    return {"content": [_text(f"slow: completed {steps} steps")]}


_BUILD_STEPS: tuple[str, ...] = ("fetching sources", "compiling", "running tests", "packaging")


async def _build(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    delay = args.get("delay", 0.05)
    if not _number(delay) or not 0 <= delay <= 60:
        return _error("build: 'delay' must be a number of seconds between 0 and 60")
    total = len(_BUILD_STEPS)
    for step, phase in enumerate(_BUILD_STEPS, 1):
        await ctx.progress(step - 1, total, phase)
        await anyio.sleep(delay)
    await ctx.progress(total, total, "done")
    return {"content": [_text(f"build: {total} steps done in {total * delay:g} s")]}


async def _log(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    level = args.get("level", "info")
    if level not in LOG_LEVELS:
        return _error(f"log: 'level' must be one of {', '.join(LOG_LEVELS)}")
    data = args.get("data", "hello from the demo server")
    await ctx.log(level, data)
    return {"content": [_text(f"logged at {level}")]}


def default_tools(build_task_support: str = "optional") -> list[DemoTool]:
    """A fresh list of the default demo tools (the definitions are new dicts).

    ``build_task_support`` is the ``execution.taskSupport`` of ``build``:
    ``"optional"`` (a client may call it either way) or ``"required"`` (only as
    a task; a client that does not use tasks hides it)."""
    if build_task_support not in ("optional", "required"):
        raise ValueError("build_task_support must be 'optional' or 'required'")
    number = {"type": "number"}
    return [
        DemoTool(
            {
                "name": "echo",
                "title": "Echo",
                "description": "Return the given text unchanged.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Text to echo"}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
                "annotations": dict(_READ_ONLY),
            },
            _echo,
        ),
        DemoTool(
            {
                "name": "add",
                "title": "Add",
                "description": "Add two numbers; the sum comes back as text and structured content.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"a": dict(number), "b": dict(number)},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"sum": dict(number)},
                    "required": ["sum"],
                },
                "annotations": dict(_READ_ONLY),
            },
            _add,
        ),
        DemoTool(
            {
                "name": "image",
                "title": "Image",
                "description": "Return a 1x1 PNG image.",
                "inputSchema": dict(_NO_ARGS),
                "annotations": dict(_READ_ONLY),
            },
            _image,
        ),
        DemoTool(
            {
                "name": "audio",
                "title": "Audio",
                "description": "Return 10 ms of silence as a WAV file.",
                "inputSchema": dict(_NO_ARGS),
                "annotations": dict(_READ_ONLY),
            },
            _audio,
        ),
        DemoTool(
            {
                "name": "embedded_text",
                "title": "Embedded text resource",
                "description": "Return an embedded text resource.",
                "inputSchema": dict(_NO_ARGS),
                "annotations": dict(_READ_ONLY),
            },
            _embedded_text,
        ),
        DemoTool(
            {
                "name": "embedded_blob",
                "title": "Embedded binary resource",
                "description": "Return an embedded binary resource (16 bytes).",
                "inputSchema": dict(_NO_ARGS),
                "annotations": dict(_READ_ONLY),
            },
            _embedded_blob,
        ),
        DemoTool(
            {
                "name": "resource_link",
                "title": "Resource link",
                "description": "Return a link to a resource.",
                "inputSchema": dict(_NO_ARGS),
                "annotations": dict(_READ_ONLY),
            },
            _resource_link,
        ),
        DemoTool(
            {
                "name": "structured",
                "title": "Structured",
                "description": "Return a greeting as structured content (and as JSON text).",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Who to greet"}},
                    "additionalProperties": False,
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "greeting": {"type": "string"},
                        "length": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["greeting", "length", "tags"],
                },
                "annotations": dict(_READ_ONLY),
            },
            _structured,
        ),
        DemoTool(
            {
                "name": "fail",
                "title": "Fail",
                "description": "Always fail: the result has isError set.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}},
                    "additionalProperties": False,
                },
            },
            _fail,
        ),
        DemoTool(
            {
                "name": "slow",
                "title": "Slow",
                "description": (
                    "Run for steps x delay seconds, reporting progress after each step; "
                    "stops early when cancelled."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "steps": {"type": "integer", "minimum": 0, "default": 3},
                        "delay": {"type": "number", "minimum": 0, "default": 0.05},
                    },
                    "additionalProperties": False,
                },
            },
            _slow,
        ),
        DemoTool(
            {
                "name": "log",
                "title": "Log",
                "description": "Send a log message notification, then return.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "level": {"type": "string", "enum": list(LOG_LEVELS), "default": "info"},
                        "data": {"description": "Anything JSON; the log message"},
                    },
                    "additionalProperties": False,
                },
            },
            _log,
        ),
        DemoTool(
            {
                "name": "build",
                "title": "Build",
                "description": (
                    "A long job of four steps of delay seconds; runs "
                    + (
                        "only as a task"
                        if build_task_support == "required"
                        else "as a task when asked"
                    )
                    + " (its status after each step)."
                ),
                "inputSchema": {
                    "type": "object",
                    "properties": {"delay": {"type": "number", "minimum": 0, "default": 0.05}},
                    "additionalProperties": False,
                },
                "execution": {"taskSupport": build_task_support},
            },
            _build,
        ),
    ]
