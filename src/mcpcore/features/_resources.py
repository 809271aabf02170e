"""The resources feature: listing resources and templates, reading one (F2, F9).

It declares three request kinds: ``resources/list`` and
``resources/templates/list`` (paged, every page is collected; safe to send
again after a broken stream) and ``resources/read`` (safe to send again; at
2026-07-28 it carries ``Mcp-Name: <uri>`` and may be answered with
``input_required``). It reads their results into typed, frozen objects:
``Resource``, ``ResourceTemplate``, and a ``ReadResult`` of ``TextContents``
and ``BlobContents``. A blob stays base64 until ``.data`` is asked for, so a
large read costs its text once; base64 that does not decode raises then,
naming the URI. A read of a URI the server does not have raises
``ResourceNotFound``: -32002 in the handshake era, -32602 at 2026-07-28, and
-32602 in the handshake era too, which deployed servers (the official Python
SDK among them) answer an unknown URI with: a read has no other param.

F4's opt-in lives here too: ``reader_tool`` is the ``read_resource`` tool
``register_into(registry, resources=True)`` adds per server, and
``reader_output`` turns a read into that tool's bounded output.

Every string here is untrusted server text. Loaded when a host first lists or
reads, never on import of a driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ..base._errors import InvalidArguments, McpError, RemoteProtocolError, ResourceNotFound
from ..base._escape import excerpt
from ..base._record import record
from ..base._render import decode_base64
from ..wire._jsonrpc import ErrorResponse
from ..wire._requests import Pending, RequestKind, error_detail, refused_by_server, register
from ._listing import Listing, cache_hints, read_items, text

if TYPE_CHECKING:
    from ..base._render import ToolOutput
    from ..base._tools import Tool

__all__ = [
    "RESOURCES_LIST",
    "RESOURCES_READ",
    "RESOURCE_TEMPLATES_LIST",
    "BlobContents",
    "ReadResult",
    "Resource",
    "ResourceTemplate",
    "ServerResource",
    "TextContents",
    "read_params",
    "reader_output",
    "reader_tool",
    "reader_uri",
]

_INVALID_PARAMS = -32602
_RESOURCE_NOT_FOUND = -32002


@record(frozen=True, slots=True)
class Resource:
    """One listed resource: ``uri`` and ``name`` always; the rest when sent as the
    right type (else ``None``). ``raw`` is the entry as received."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@record(frozen=True, slots=True)
class ServerResource:
    """One resource of a hub's ``list_resources``: the ``server`` (the client's
    name in the hub) that listed it, and the ``resource``; read it with
    ``hub.clients[server].read_resource(resource.uri)``."""

    server: str
    resource: Resource


@record(frozen=True, slots=True)
class ResourceTemplate:
    """One listed resource template: ``uri_template`` (RFC 6570) and ``name``."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def variables(self) -> tuple[str, ...]:
        """F3: the names the template uses, in order."""
        from ._templates import template_variables

        return template_variables(self.uri_template)

    def expand(
        self, values: Mapping[str, object] | None = None, *, require_all: bool = True
    ) -> str:
        """F3: the URI to read (RFC 6570, levels 1–4); ``InvalidArguments`` names a
        value that is missing (unless ``require_all=False``) or of a wrong type,
        ``RemoteProtocolError`` a template that does not parse."""
        from ._templates import expand_template

        return expand_template(self.uri_template, values, require_all=require_all)


@record(frozen=True, slots=True)
class TextContents:
    """A text part of a read: ``text`` as the server sent it (untrusted, unescaped)."""

    uri: str
    text: str
    mime_type: str | None = None

    def __repr__(self) -> str:
        return f"TextContents(uri={excerpt(self.uri, 80)!r}, {len(self.text)} chars)"


@record(frozen=True, slots=True)
class BlobContents:
    """A binary part of a read, kept as the base64 the server sent until ``data``
    is asked for (decoded on each access; keep the bytes if you need them twice)."""

    uri: str
    blob: str = field(repr=False)
    mime_type: str | None = None

    @property
    def data(self) -> bytes:
        """The decoded bytes; ``RemoteProtocolError`` when the blob is not base64."""
        data = decode_base64(self.blob)
        if data is None:
            raise RemoteProtocolError(
                f"the blob of resource {excerpt(self.uri, 200)!r} is not valid base64"
            )
        return data

    def __repr__(self) -> str:
        return (
            f"BlobContents(uri={excerpt(self.uri, 80)!r}, mime_type={self.mime_type!r}, "
            f"{len(self.blob)} base64 characters)"
        )


Contents = TextContents | BlobContents


@record(frozen=True, slots=True)
class ReadResult:
    """What ``read_resource`` returns: the parts in order, and the cache hints (F9)."""

    contents: tuple[Contents, ...]
    ttl_ms: int | None = None
    cache_scope: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined by blank lines (``""`` when there are none)."""
        return "\n\n".join(c.text for c in self.contents if isinstance(c, TextContents))

    def __iter__(self) -> Iterator[Contents]:
        return iter(self.contents)

    def __len__(self) -> int:
        return len(self.contents)


def read_params(uri: object) -> dict[str, Any]:
    """``resources/read``'s params; a ``uri`` that is not a non-empty string is the
    caller's mistake, refused before anything is sent."""
    if not isinstance(uri, str) or not uri:
        raise InvalidArguments(
            "uri", message=f"a resource URI must be a non-empty string, not {type(uri).__name__}"
        )
    return {"uri": uri}


# B3: a listing of 5,000 resources builds 5,000 of these, so each is built by
# setting its slots directly (the frozen dataclass's __init__ goes through
# object.__setattr__ field by field: 2.9 µs → 1.2 µs a resource). The values are
# what ``json.loads`` made, so ``type(v) is str`` is ``isinstance`` here, and it
# refuses a bool for ``size`` as the schema does.
_new = object.__new__
_set_resource = tuple(
    Resource.__dict__[name].__set__
    for name in ("uri", "name", "title", "description", "mime_type", "size", "annotations", "raw")
)


def _resource(raw: dict[str, Any]) -> Resource | None:
    get = raw.get
    uri, name = get("uri"), get("name")
    if type(uri) is not str or type(name) is not str:
        return None
    title, description, mime = get("title"), get("description"), get("mimeType")
    size, annotations = get("size"), get("annotations")
    set_uri, set_name, set_title, set_description, set_mime, set_size, set_ann, set_raw = (
        _set_resource
    )
    resource: Resource = _new(Resource)
    set_uri(resource, uri)
    set_name(resource, name)
    set_title(resource, title if type(title) is str else None)
    set_description(resource, description if type(description) is str else None)
    set_mime(resource, mime if type(mime) is str else None)
    set_size(resource, size if type(size) is int else None)
    set_ann(resource, annotations if type(annotations) is dict else None)
    set_raw(resource, raw)
    return resource


def _template(raw: dict[str, Any]) -> ResourceTemplate | None:
    template, name = text(raw, "uriTemplate"), text(raw, "name")
    if template is None or name is None:
        return None
    annotations = raw.get("annotations")
    return ResourceTemplate(
        uri_template=template,
        name=name,
        title=text(raw, "title"),
        description=text(raw, "description"),
        mime_type=text(raw, "mimeType"),
        annotations=annotations if isinstance(annotations, dict) else None,
        raw=raw,
    )


def _resources(result: dict[str, Any], pending: Pending) -> Listing[Resource]:
    return read_items(result, "resources", _resource, "resources", str(pending.context))


def _templates(result: dict[str, Any], pending: Pending) -> Listing[ResourceTemplate]:
    return read_items(
        result, "resourceTemplates", _template, "resource templates", str(pending.context)
    )


def _read(result: dict[str, Any], pending: Pending) -> ReadResult:
    contents = result.get("contents")
    if not isinstance(contents, list):
        raise RemoteProtocolError("the resources/read result has no 'contents' array")
    parts: list[Contents] = []
    for raw in contents:
        if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str):
            raise RemoteProtocolError("a part of the resources/read result has no 'uri' string")
        mime = text(raw, "mimeType")
        if isinstance(raw.get("text"), str):
            parts.append(TextContents(raw["uri"], raw["text"], mime))
        elif isinstance(raw.get("blob"), str):
            parts.append(BlobContents(raw["uri"], raw["blob"], mime))
        else:
            raise RemoteProtocolError(
                "a part of the resources/read result has neither a 'text' nor a 'blob' string"
            )
    ttl, scope = cache_hints(result)
    return ReadResult(tuple(parts), ttl, scope)


def _read_refused(message: ErrorResponse, pending: Pending, modern: bool) -> McpError:
    if message.code in (_RESOURCE_NOT_FOUND, _INVALID_PARAMS):
        return ResourceNotFound(str(pending.context), detail=error_detail(message))
    return refused_by_server(message, pending, modern)


RESOURCES_LIST = register(
    RequestKind(
        method="resources/list",
        pages="resources",
        resend=True,
        parse=_resources,
        refused=refused_by_server,
    )
)
RESOURCE_TEMPLATES_LIST = register(
    RequestKind(
        method="resources/templates/list",
        pages="resourceTemplates",
        resend=True,
        parse=_templates,
        refused=refused_by_server,
    )
)
RESOURCES_READ = register(
    RequestKind(
        method="resources/read",
        parse=_read,
        refused=_read_refused,
        resend=True,
        input_rounds=True,
        name_param="uri",
        large_result=True,
    )
)


# --- F4: a server's resources as one tool in a host's registry (opt-in) ---------------

#: The name of the tool ``register_into(registry, resources=True)`` adds per server.
READER_NAME = "read_resource"
#: The most characters of text (and bytes of a blob) one reader call hands back.
READER_LIMIT = 100_000


def reader_tool(server: str, separator: str) -> Tool:
    """F4: the ``read_resource`` tool of ``server`` (it is not the server's own: a
    call reads a resource). Its id is ``<server><separator>read_resource``."""
    from ..base._tools import Tool

    return Tool(
        id=f"{server}{separator}{READER_NAME}",
        name=READER_NAME,
        server=server,
        description=(
            f"Read one resource of the MCP server {server!r} by its URI (one it lists, "
            "one made from its URI templates, or a tool result's resource_link). "
            "Returns the resource's text; a binary part is returned as data."
        ),
        parameters={
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
            "required": ["uri"],
            "additionalProperties": False,
        },
        annotations={"readOnlyHint": True, "title": "Read resource"},
        title="Read resource",
    )


def reader_uri(arguments: object) -> str:
    """The URI a reader call names; ``InvalidArguments`` (nothing sent) otherwise."""
    uri = arguments.get("uri") if isinstance(arguments, Mapping) else None
    if not isinstance(uri, str) or not uri:
        raise InvalidArguments("uri", message="read_resource takes {'uri': <a non-empty string>}")
    return uri


def reader_output(result: ReadResult, limit: int = READER_LIMIT) -> ToolOutput:
    """F4: a read as a tool's output, bounded: each part an embedded ``ResourceBlock``
    (text cut to ``limit`` characters overall, a blob of more than ``limit`` bytes
    left out and described); ``text`` the text parts, and a line per binary part."""
    from ..base._render import ResourceBlock, ToolOutput

    blocks: list[ResourceBlock] = []
    lines: list[str] = []
    room = limit
    for part in result.contents:
        if isinstance(part, TextContents):
            text = part.text[:room]
            if len(part.text) > room:
                text += f"\n[cut: {len(part.text) - room} more characters]"
            room = max(0, room - len(part.text))
            blocks.append(ResourceBlock(part.uri, part.mime_type, text=text))
            lines.append(text)
        else:
            data = part.data
            shown = f"[binary resource {excerpt(part.uri, 200)!r}: {part.mime_type or 'no type'}, {len(data)} bytes"
            if len(data) > limit:
                lines.append(shown + f", over the {limit}-byte bound: left out]")
                continue
            blocks.append(ResourceBlock(part.uri, part.mime_type, data=data))
            lines.append(shown + "]")
    return ToolOutput(text="\n\n".join(lines), content=tuple(blocks))
