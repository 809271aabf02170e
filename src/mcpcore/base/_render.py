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

Besides the text, each block becomes one typed, frozen object in
``ToolOutput.content``, in order (K8): :class:`TextBlock`, :class:`ImageBlock`,
:class:`AudioBlock` (bytes decoded from base64), :class:`ResourceBlock` (an
embedded resource, text or bytes), :class:`ResourceLinkBlock`, and
:class:`OtherBlock` for everything else, which says why in ``reason`` (an
unknown type, a missing field, base64 that does not decode). A bad block fails
only itself: it is an ``OtherBlock`` and renders as its placeholder. Every
value in a block is untrusted server data. Base64 may be wrapped in
whitespace and may lack its ``=`` padding; any other deviation does not decode.
Reprs show sizes, never the bytes, and cut long texts.
"""

from __future__ import annotations

import binascii
import json
import logging
import reprlib
from dataclasses import field
from typing import Any, ClassVar, Literal, TypeAlias

from ._errors import RemoteProtocolError
from ._record import record
from ._schema import Violation, violation
from ._tools import Tool

__all__ = [
    "AudioBlock",
    "ContentBlock",
    "ImageBlock",
    "OtherBlock",
    "OutputSchemaViolation",
    "ResourceBlock",
    "ResourceLinkBlock",
    "TextBlock",
    "ToolOutput",
    "content_blocks",
    "decode_base64",
    "render_content",
    "render_result",
]

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


OutputSchemaViolation.__module__ = "mcpcore"  # shown as mcpcore.OutputSchemaViolation


# --- typed content blocks (K8) ---------------------------------------------------------

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80


def _size(data: bytes | None) -> str:
    return "None" if data is None else f"<{len(data)} bytes>"


@record(frozen=True, repr=False)
class TextBlock:
    """A ``text`` block: ``text`` as the server sent it (untrusted, unescaped)."""

    text: str
    kind: ClassVar[str] = "text"

    def __repr__(self) -> str:
        return f"TextBlock(text={_short.repr(self.text)}, {len(self.text)} chars)"


@record(frozen=True, repr=False)
class ImageBlock:
    """An ``image`` block: ``data`` decoded from base64; ``mime_type`` as sent (``None``
    when absent or not a string)."""

    data: bytes
    mime_type: str | None = None
    kind: ClassVar[str] = "image"

    def __repr__(self) -> str:
        return f"ImageBlock(mime_type={_short.repr(self.mime_type)}, data={_size(self.data)})"


@record(frozen=True, repr=False)
class AudioBlock:
    """An ``audio`` block: ``data`` decoded from base64; ``mime_type`` as sent (or ``None``)."""

    data: bytes
    mime_type: str | None = None
    kind: ClassVar[str] = "audio"

    def __repr__(self) -> str:
        return f"AudioBlock(mime_type={_short.repr(self.mime_type)}, data={_size(self.data)})"


@record(frozen=True, repr=False)
class ResourceBlock:
    """An embedded ``resource``: its ``uri`` and ``mime_type`` (``None`` when absent or not
    strings) and exactly one of ``text`` (a text resource) or ``data`` (a ``blob``, decoded)."""

    uri: str | None
    mime_type: str | None = None
    text: str | None = None
    data: bytes | None = None
    kind: ClassVar[str] = "resource"

    def __repr__(self) -> str:
        body = (
            f"text={_short.repr(self.text)}, {len(self.text)} chars"
            if self.text is not None
            else f"data={_size(self.data)}"
        )
        return (
            f"ResourceBlock(uri={_short.repr(self.uri)}, "
            f"mime_type={_short.repr(self.mime_type)}, {body})"
        )


@record(frozen=True, repr=False)
class ResourceLinkBlock:
    """A ``resource_link``: ``uri``, and ``name``, ``mime_type``, ``description`` when
    the server sent them as strings (otherwise ``None``)."""

    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None
    kind: ClassVar[str] = "resource_link"

    def __repr__(self) -> str:
        return (
            f"ResourceLinkBlock(uri={_short.repr(self.uri)}, name={_short.repr(self.name)}, "
            f"mime_type={_short.repr(self.mime_type)})"
        )


@record(frozen=True, repr=False)
class OtherBlock:
    """A block this client cannot type: an unknown ``type``, or a known one that is
    malformed (a missing field, base64 that does not decode).

    ``type`` is the block's ``type`` when it is a non-empty string (``None`` when the
    block is not an object or has none); ``reason`` says why in this client's words
    (it holds no server text); ``raw`` is the block as received (untrusted JSON).
    """

    type: str | None
    reason: str
    raw: Any = field(default=None, hash=False)
    kind: ClassVar[str] = "other"

    def __repr__(self) -> str:
        return f"OtherBlock(type={_short.repr(self.type)}, reason={self.reason!r})"


ContentBlock: TypeAlias = (
    TextBlock | ImageBlock | AudioBlock | ResourceBlock | ResourceLinkBlock | OtherBlock
)
"""One typed content block of a result (K8)."""


@record(frozen=True)
class ToolOutput:
    """The outcome of one call (K4): rendered ``text``, ``structured`` content, ``is_error``,
    and the typed ``content`` blocks (K8).

    ``structured`` is the result's ``structuredContent`` (``None`` when absent);
    ``content`` holds one block per entry of the result's ``content`` list, in
    order (empty when it is missing or not a list).
    """

    text: str
    structured: Any = None
    is_error: bool = False
    content: tuple[ContentBlock, ...] = ()


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


def _decode(value: str) -> bytes | None:
    """Base64 → bytes; whitespace and missing ``=`` padding are tolerated. ``None``: no."""
    if not value.isascii():
        return None
    compact = "".join(value.split())
    compact += "=" * (-len(compact) % 4)
    try:
        return binascii.a2b_base64(compact, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def decode_base64(value: str) -> bytes | None:
    """Base64 → bytes, as blocks are read (whitespace, missing padding); ``None``: no."""
    return _decode(value)


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _typed_block(block: object) -> ContentBlock:
    if not isinstance(block, dict):
        return OtherBlock(None, "the block is not an object", block)
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        return OtherBlock(None, "the block has no type", block)
    if kind == "text":
        text = block.get("text")
        if isinstance(text, str):
            return TextBlock(text)
        return OtherBlock(kind, "'text' is missing or not a string", block)
    if kind in ("image", "audio"):
        encoded = block.get("data")
        if not isinstance(encoded, str):
            return OtherBlock(kind, "'data' is missing or not a string", block)
        data = _decode(encoded)
        if data is None:
            return OtherBlock(kind, "'data' is not valid base64", block)
        mime = _string(block.get("mimeType"))
        return ImageBlock(data, mime) if kind == "image" else AudioBlock(data, mime)
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return OtherBlock(kind, "'resource' is missing or not an object", block)
        uri, mime = _string(resource.get("uri")), _string(resource.get("mimeType"))
        text = resource.get("text")
        if isinstance(text, str):
            return ResourceBlock(uri, mime, text=text)
        blob = resource.get("blob")
        if not isinstance(blob, str):
            return OtherBlock(kind, "the resource has neither 'text' nor 'blob'", block)
        data = _decode(blob)
        if data is None:
            return OtherBlock(kind, "'blob' is not valid base64", block)
        return ResourceBlock(uri, mime, data=data)
    if kind == "resource_link":
        uri = block.get("uri")
        if not isinstance(uri, str):
            return OtherBlock(kind, "'uri' is missing or not a string", block)
        return ResourceLinkBlock(
            uri,
            _string(block.get("name")),
            _string(block.get("mimeType")),
            _string(block.get("description")),
        )
    return OtherBlock(kind, "a content type this client does not know", block)


def content_blocks(content: object) -> tuple[ContentBlock, ...]:
    """A ``content`` list → its typed blocks, one per entry, in order (K8); never raises.

    Anything but a list gives ``()``.
    """
    if not isinstance(content, list):
        return ()
    return tuple(_typed_block(block) for block in content)


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
    output = ToolOutput(
        text=text, structured=structured, is_error=is_error, content=content_blocks(content)
    )
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
