"""The demo server's skills (SEP-2640, ``io.modelcontextprotocol/skills``): N4.

Two skills. ``greeting-style`` is static: its entry lists its two files with
their SHA-256 digests and sizes. ``release-notes`` is dynamic (its files are
made per request, nothing declared), and its directory is offered through
``resources/directory/read`` (``directoryRead``). Each handler takes the
request's params and returns the result, or ``(code, message)`` for a
JSON-RPC error.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ._jsonrpc import INVALID_PARAMS

__all__ = ["EXTENSION", "SETTINGS", "list_skills", "read_directory", "read_skill"]

EXTENSION = "io.modelcontextprotocol/skills"
SETTINGS: dict[str, Any] = {"directoryRead": True}
DIRECTORY = "inode/directory"

_STYLE = "skill://demo/greeting-style"
_NOTES = "skill://demo/release-notes"
_FILES: dict[str, str] = {
    f"{_STYLE}/SKILL.md": (
        "---\n"
        "name: greeting-style\n"
        "description: How the demo server greets people\n"
        "---\n\n"
        "Greet by name, briefly. See references/TONE.md for the tone.\n"
    ),
    f"{_STYLE}/references/TONE.md": "Warm, short, never more than one sentence.\n",
    f"{_NOTES}/SKILL.md": (
        "---\n"
        "name: release-notes\n"
        "description: Write release notes from a change list\n"
        "---\n\n"
        "One line per change, newest first. Templates are under templates/.\n"
    ),
    f"{_NOTES}/templates/short.md": "- {change}\n",
}
_FRONTMATTER = {
    _STYLE: {"name": "greeting-style", "description": "How the demo server greets people"},
    _NOTES: {"name": "release-notes", "description": "Write release notes from a change list"},
}


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def list_skills(params: dict[str, Any]) -> dict[str, Any]:
    style = [
        {"uri": uri, "digest": _digest(text), "size": len(text.encode())}
        for uri, text in _FILES.items()
        if uri.startswith(_STYLE + "/")
    ]
    return {
        "skills": [
            {"uri": f"{_STYLE}/SKILL.md", "frontmatter": _FRONTMATTER[_STYLE], "resources": style},
            {
                "uri": f"{_NOTES}/SKILL.md",
                "frontmatter": _FRONTMATTER[_NOTES],
                "resources": "dynamic",
            },
        ]
    }


def read_skill(uri: str) -> dict[str, Any] | None:
    """A skill file's ``resources/read`` result; ``None`` when there is none at ``uri``."""
    text = _FILES.get(uri)
    if text is None:
        return None
    return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}


def read_directory(params: dict[str, Any]) -> dict[str, Any] | tuple[int, str]:
    """A directory's direct children: files with their type, subdirectories as ``inode/directory``."""
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri.startswith("skill://"):
        return (INVALID_PARAMS, "resources/directory/read needs params.uri, a skill:// directory")
    children: dict[str, dict[str, Any]] = {}
    for path in _FILES:
        if not path.startswith(uri + "/"):
            continue
        name = path[len(uri) + 1 :].split("/")[0]
        child = f"{uri}/{name}"
        kind = "text/markdown" if child in _FILES else DIRECTORY
        children[child] = {"uri": child, "name": name, "mimeType": kind}
    if not children:
        return (INVALID_PARAMS, f"Not a directory: {uri[:200]}")
    return {"resources": list(children.values())}
