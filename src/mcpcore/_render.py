"""Rendering a ``tools/call`` result (K3–K5): text, structured content, error flag.

This module owns turning a raw result object into a :class:`ToolOutput` and
applying the tool's output-schema policy. It never raises for a result of any
JSON shape: missing or wrongly typed fields degrade to placeholders or empty
text. The only exceptions are :class:`OutputSchemaViolation` (policy
``"error"``, K5) and ``ValueError`` for an unknown policy (a caller bug).

Rendering of ``content``, block by block, parts joined with ``"\\n\\n"``:

* ``text`` with a string ``text`` → that text (otherwise ``[text omitted]``);
* ``resource`` whose ``resource.text`` is a string → that text; any other
  ``resource`` → ``[resource omitted: <mimeType>]``;
* ``image`` / ``audio`` → ``[image omitted: <mimeType>]`` / ``[audio omitted: <mimeType>]``;
  the mime type is ``application/octet-stream`` when absent or not a string;
* ``resource_link`` with a string ``uri`` → ``[resource: <uri>]`` (otherwise
  ``[resource_link omitted]``);
* any other string type ``t`` → ``[t omitted]``; a block that is not an object,
  or whose ``type`` is missing, not a string or empty → ``[unknown omitted]``.

With no blocks at all (``content`` missing, empty or not a list) and a
``structuredContent`` that is not ``null``, the text is that JSON
(``json.dumps``, non-ASCII kept). Texts are returned as the server sent them:
escaping for a terminal (X1) is the printer's job.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from ._errors import RemoteProtocolError
from ._schema import Violation, violation
from ._tools import Tool

__all__ = ["OutputSchemaViolation", "ToolOutput", "render_content", "render_result"]

_log = logging.getLogger("mcpcore.render")

_OCTET = "application/octet-stream"
_POLICIES = ("error", "lenient")


class OutputSchemaViolation(RemoteProtocolError):
    """``structuredContent`` broke the tool's declared ``outputSchema`` (K5, policy ``error``).

    ``keyword`` names the violated schema keyword (``"required"``, ``"type"``, …;
    ``"missing"`` when the result has no ``structuredContent`` at all), ``path``
    the place in the payload (``$.x``), ``tool`` the tool id when known.
    """

    def __init__(
        self, message: str, *, keyword: str, path: str = "$", tool: str | None = None
    ) -> None:
        super().__init__(message)
        self.keyword = keyword
        self.path = path
        self.tool = tool


@dataclass(frozen=True)
class ToolOutput:
    """The outcome of one call (K4): rendered ``text``, ``structured`` content, ``is_error``.

    ``structured`` is the result's ``structuredContent`` (``None`` when absent).
    """

    text: str
    structured: Any = None
    is_error: bool = False


def _mime(block: dict[str, Any]) -> str:
    mime = block.get("mimeType")
    return mime if isinstance(mime, str) else _OCTET


def _render_block(block: object) -> str:
    if not isinstance(block, dict):
        return "[unknown omitted]"
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        return "[unknown omitted]"
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) else "[text omitted]"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return f"[resource omitted: {_OCTET}]"
        text = resource.get("text")
        return text if isinstance(text, str) else f"[resource omitted: {_mime(resource)}]"
    if kind in ("image", "audio"):
        return f"[{kind} omitted: {_mime(block)}]"
    if kind == "resource_link":
        uri = block.get("uri")
        return f"[resource: {uri}]" if isinstance(uri, str) else "[resource_link omitted]"
    return f"[{kind} omitted]"


def render_content(content: object) -> str:
    """A ``content`` list → the rendered text (K3); anything but a list renders as ``""``."""
    if not isinstance(content, list):
        return ""
    return "\n\n".join(_render_block(block) for block in content)


def _dump(structured: object) -> str:
    try:
        return json.dumps(structured, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "[structuredContent omitted]"


def render_result(
    result: object,
    *,
    tool: Tool | None = None,
    policy: Literal["error", "lenient"] = "error",
) -> ToolOutput:
    """A raw ``tools/call`` result object → :class:`ToolOutput` (K3–K5).

    Never raises for ``isError`` (the output says ``is_error=True``; an error
    result is never validated) nor for any malformed result. When ``tool``
    declares a compilable ``outputSchema`` and ``jsonschema`` is installed,
    ``structuredContent`` is validated: a violation raises
    :class:`OutputSchemaViolation` under policy ``"error"``, and under
    ``"lenient"`` logs a warning and passes the payload through.
    """
    if policy not in _POLICIES:
        raise ValueError(f"policy must be 'error' or 'lenient', not {policy!r}")
    if not isinstance(result, dict):
        return ToolOutput(text="")
    content = result.get("content")
    structured = result.get("structuredContent")
    is_error = result.get("isError") is True
    text = render_content(content)
    if (not isinstance(content, list) or not content) and structured is not None:
        text = _dump(structured)
    output = ToolOutput(text=text, structured=structured, is_error=is_error)
    if is_error or tool is None:
        return output
    validator = tool.output_validator()
    if validator is None:
        return output
    if structured is None:
        found: Violation | None = Violation(
            keyword="missing",
            path="$",
            message="structuredContent is missing, but the tool declares an outputSchema",
        )
    else:
        found = violation(validator, structured)
    if found is None:
        return output
    if policy == "error":
        raise OutputSchemaViolation(
            f"tool {tool.id!r}: {found.message}",
            keyword=found.keyword,
            path=found.path,
            tool=tool.id,
        )
    _log.warning("tool %r: %s (policy lenient: passed through)", tool.id, found.message)
    return output
