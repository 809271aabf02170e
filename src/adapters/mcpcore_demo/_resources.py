"""The demo server's resources, resource template and prompts (F10).

Two fixed resources (a text one and a binary one), a template whose reads
greet a name, and two prompts. Each handler takes the request's params and
returns the result, or ``(code, message)`` for a JSON-RPC error.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote

from ._jsonrpc import INVALID_PARAMS
from ._skills import read_skill
from ._tools import IMAGE_PNG

__all__ = ["get_prompt", "list_prompts", "list_resources", "list_templates", "read_resource"]

RESOURCE_NOT_FOUND = -32002

README = "# The mcpcore demo server\n\nTools for every content type, resources and prompts.\n"
_GREETING = "demo://greeting/"

_RESOURCES: list[dict[str, Any]] = [
    {
        "uri": "demo://readme",
        "name": "readme",
        "title": "About this server",
        "mimeType": "text/markdown",
        "size": len(README.encode()),
    },
    {
        "uri": "demo://logo.png",
        "name": "logo",
        "title": "A one-pixel image",
        "mimeType": "image/png",
        "size": len(IMAGE_PNG),
    },
]
_TEMPLATES: list[dict[str, Any]] = [
    {
        "uriTemplate": _GREETING + "{name}",
        "name": "greeting",
        "title": "A greeting",
        "mimeType": "text/plain",
    },
]
_PROMPTS: list[dict[str, Any]] = [
    {
        "name": "summarize",
        "title": "Summarize a text",
        "description": "Ask for a short summary.",
        "arguments": [{"name": "text", "description": "what to summarize", "required": True}],
    },
    {
        "name": "translate",
        "title": "Translate a text",
        "description": "Ask for a translation.",
        "arguments": [
            {"name": "text", "required": True},
            {"name": "language", "description": "into which language (French)"},
        ],
    },
]


def list_resources(params: dict[str, Any]) -> dict[str, Any]:
    return {"resources": [dict(r) for r in _RESOURCES]}


def list_templates(params: dict[str, Any]) -> dict[str, Any]:
    return {"resourceTemplates": [dict(t) for t in _TEMPLATES]}


def read_resource(params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        return (INVALID_PARAMS, "resources/read needs params.uri")
    if uri == "demo://readme":
        return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": README}]}
    if uri == "demo://logo.png":
        blob = base64.b64encode(IMAGE_PNG).decode("ascii")
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": blob}]}
    if uri.startswith("skill://"):
        skill = read_skill(uri)
        if skill is not None:
            return skill
    if uri.startswith(_GREETING) and len(uri) > len(_GREETING):
        name = unquote(uri[len(_GREETING) :])
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"Hello, {name}!"}]}
    return (RESOURCE_NOT_FOUND, f"Resource not found: {uri[:200]}")


def list_prompts(params: dict[str, Any]) -> dict[str, Any]:
    return {"prompts": [dict(p) for p in _PROMPTS]}


def get_prompt(params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        return (INVALID_PARAMS, "prompt arguments must be strings")
    text = arguments.get("text")
    if name not in ("summarize", "translate"):
        return (INVALID_PARAMS, f"Unknown prompt: {str(name)[:100]}")
    if text is None:
        return (INVALID_PARAMS, "the argument 'text' is required")
    if name == "summarize":
        ask = f"Summarize this in one sentence:\n\n{text}"
    else:
        ask = f"Translate this into {arguments.get('language', 'French')}:\n\n{text}"
    return {
        "description": next(p["description"] for p in _PROMPTS if p["name"] == name),
        "messages": [{"role": "user", "content": {"type": "text", "text": ask}}],
    }
