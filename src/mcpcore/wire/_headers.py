"""Modern-era request headers (M24–M26, M32–M42, E5): pure rules, no I/O.

This module owns what the 2026-07-28 Streamable HTTP transport (SEP-2243) says
about the headers a request carries besides the transport's own:

* the standard headers every modern POST mirrors from its body:
  ``MCP-Protocol-Version``, ``Mcp-Method`` and, for ``tools/call``,
  ``prompts/get`` and ``resources/read``, ``Mcp-Name`` (M24–M26);
* reading a tool's ``x-mcp-header`` declarations from its ``inputSchema``, and
  refusing a tool whose declarations break the rules (M32, M33, E5);
* rendering and encoding a value for ``Mcp-Name`` / ``Mcp-Param-*``: plain when
  it is header-safe, the ``=?base64?…?=`` sentinel otherwise (M35, M36);
* the ``Mcp-Param-*`` headers of one ``tools/call`` (M37–M40);
* recognising the server's ``-32020`` HeaderMismatch error (M42).

Everything here is a function of its arguments. Who keeps a tool's parameters,
who warns, and when a call is re-listed and re-sent belong to the session; which
headers go on which POST belongs to the HTTP mapping.
"""

from __future__ import annotations

import binascii
import math
import re
import reprlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from ..base._escape import escape_text
from ..base._record import record

__all__ = [
    "HEADER_MISMATCH",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_NAME_SOURCE",
    "MCP_PARAM_PREFIX",
    "MCP_PROTOCOL_VERSION",
    "HeaderParam",
    "InvalidHeaderDeclaration",
    "decode_header_value",
    "encode_header_text",
    "encode_header_value",
    "is_header_mismatch",
    "param_headers",
    "render_header_value",
    "standard_headers",
    "tool_header_params",
]

MCP_PROTOCOL_VERSION: Final = "MCP-Protocol-Version"
MCP_METHOD: Final = "Mcp-Method"
MCP_NAME: Final = "Mcp-Name"
MCP_PARAM_PREFIX: Final = "Mcp-Param-"

HEADER_MISMATCH: Final = -32020
"""The JSON-RPC error code of HeaderMismatch (HTTP 400). SEP-2243 first gave it
``-32001``; the specification reassigned it, and only ``-32020`` counts (M75)."""

MCP_NAME_SOURCE: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # T7: the tasks extension names the task on every tasks/* request
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
    "tasks/result": "taskId",
}
"""M26: the methods that carry ``Mcp-Name``, and the ``params`` key it mirrors."""

X_MCP_HEADER: Final = "x-mcp-header"

_PRIMITIVE_TYPES: Final = frozenset({"string", "integer", "boolean"})

# RFC 9110 §5.6.2: token = 1*tchar (always used with fullmatch).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# M35: the characters a value may keep when it is sent plain.
_PLAIN = re.compile(r"[\x20-\x7e]*")
# The sentinel as a reader recognises it: prefix, payload, suffix, lowercase.
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_PREFIX: Final = "=?base64?"
_SUFFIX: Final = "?="

# JSON Schema applicators whose value is a schema (or schemas) at a position that
# is *not* on a pure ``properties`` chain: an annotation under any of them makes the
# tool invalid (M32). ``items``/``dependencies`` also take their draft-07 shapes.
# Instance data (``const``, ``enum``, ``default``, ``examples``) and unknown
# keywords are never entered; ``$ref`` is never followed (E6).
_ONE_SCHEMA: Final = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SCHEMA_LIST: Final = frozenset({"allOf", "anyOf", "items", "oneOf", "prefixItems"})
_SCHEMA_MAP: Final = frozenset(
    {"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties"}
)

_repr = reprlib.Repr()
_repr.maxstring = 80


def _shown(text: str) -> str:
    """A server's string in a message: ``repr``, bounded, control characters escaped (X1)."""
    return escape_text(_repr.repr(text), keep_newlines=False)


class InvalidHeaderDeclaration(ValueError):
    """A tool's ``inputSchema`` declares ``x-mcp-header`` against the rules (M32).

    The caller drops the tool and logs a warning naming it and this message (M33,
    E5); the error never reaches the host. ``path`` is the chain of ``properties``
    keys of the offending annotation, or ``None`` when it is not on such a chain.
    The message shows server text escaped and cut short (X1).
    """

    def __init__(self, reason: str, *, path: tuple[str, ...] | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


@record(frozen=True, slots=True, kw_only=True)
class HeaderParam:
    """One valid ``x-mcp-header`` declaration of a tool (M34).

    ``path`` is the chain of ``properties`` keys from the schema root to the
    annotated property (``("region",)``, nested ``("a", "b")``); ``token`` is the
    annotation as declared (``"Region"``); ``type`` is the property's declared
    ``"string"``, ``"integer"`` or ``"boolean"``.
    """

    path: tuple[str, ...]
    token: str
    type: str

    @property
    def header(self) -> str:
        """The header name as sent: ``Mcp-Param-`` and the token as declared (M37, M39)."""
        return MCP_PARAM_PREFIX + self.token


# --- declarations (M32) -----------------------------------------------------------


def _positions(root: Any) -> Iterator[tuple[tuple[str, ...] | None, Mapping[str, Any]]]:
    """Every schema object in ``root``, in document order, with its ``properties`` path.

    The path is ``None`` once the walk has crossed any applicator but
    ``properties``. An explicit stack keeps this total on any depth; the ids of
    the objects being walked (not of all objects seen: one object may sit at two
    positions) keep it finite on a cyclic structure, which JSON cannot produce.
    """
    stack: list[tuple[tuple[str, ...] | None, Any] | int] = [((), root)]
    active: set[int] = set()
    while stack:
        entry = stack.pop()
        if isinstance(entry, int):  # every child of that object has been walked
            active.discard(entry)
            continue
        path, node = entry
        if not isinstance(node, Mapping) or id(node) in active:
            continue
        yield path, node
        children: list[tuple[tuple[str, ...] | None, Any]] = []
        for key, value in node.items():
            if key == "properties" and isinstance(value, Mapping):
                for name, sub in value.items():
                    on_chain = path is not None and isinstance(name, str)
                    children.append(((*path, name) if on_chain and path is not None else None, sub))
            if key in _ONE_SCHEMA:
                children.append((None, value))
            if key in _SCHEMA_LIST and isinstance(value, list | tuple):
                children.extend((None, sub) for sub in value)
            if key in _SCHEMA_MAP and isinstance(value, Mapping):
                children.extend((None, sub) for sub in value.values())
        active.add(id(node))
        stack.append(id(node))  # popped once the children above it are done
        stack.extend(reversed(children))


def tool_header_params(input_schema: Mapping[str, Any]) -> tuple[HeaderParam, ...]:
    """The ``x-mcp-header`` declarations of a tool's ``inputSchema``, in document order (M32, M34).

    Raises :class:`InvalidHeaderDeclaration` (and nothing else, whatever the
    input) when any annotation anywhere in the schema:

    * is not on a property reachable from the root through ``properties`` keys
      alone (on the root itself, or under ``items``, ``prefixItems``,
      ``additionalProperties``, ``patternProperties``, ``allOf``/``anyOf``/
      ``oneOf``/``not``, ``if``/``then``/``else``, ``$defs``/``definitions``,
      ``dependentSchemas``, ``contains`` and the like);
    * is not a string, is empty, or is not an RFC 9110 token (so no space, colon,
      control character or non-ASCII);
    * sits on a property whose ``type`` is not exactly ``"string"``,
      ``"integer"`` or ``"boolean"`` (``number``, ``object``, ``array``,
      ``null``, a missing ``type`` and a list of types are all refused);
    * equals another annotation of the schema, compared case-insensitively.

    No token is reserved: ``"Method"`` is ``Mcp-Param-Method`` (M39). ``$ref`` is
    not followed. A schema that is not a mapping declares nothing.
    """
    params: list[HeaderParam] = []
    seen: dict[str, tuple[str, ...]] = {}
    for path, schema in _positions(input_schema):
        if X_MCP_HEADER not in schema:
            continue
        token = schema[X_MCP_HEADER]
        if not path:
            where = "the schema root" if path == () else "a schema position"
            raise InvalidHeaderDeclaration(
                f"{X_MCP_HEADER} on {where} that is not reached from the root through "
                "'properties' alone",
                path=None,
            )
        prop = _shown(".".join(path))
        if not isinstance(token, str):
            # The type only: repr of an arbitrary value is not total (a huge int).
            raise InvalidHeaderDeclaration(
                f"property {prop}: {X_MCP_HEADER} is a {type(token).__name__}, not a string",
                path=path,
            )
        if token == "":
            raise InvalidHeaderDeclaration(f"property {prop}: {X_MCP_HEADER} is empty", path=path)
        if _TOKEN.fullmatch(token) is None:
            raise InvalidHeaderDeclaration(
                f"property {prop}: {X_MCP_HEADER} {_shown(token)} is not an HTTP token "
                "(letters, digits and !#$%&'*+-.^_`|~ only)",
                path=path,
            )
        declared = schema.get("type")
        if not isinstance(declared, str) or declared not in _PRIMITIVE_TYPES:
            if declared is None:
                got = "missing"
            elif isinstance(declared, str):
                got = _shown(declared)
            else:
                got = f"{type(declared).__name__}, not a string"
            raise InvalidHeaderDeclaration(
                f"property {prop}: {X_MCP_HEADER} is only allowed on a string, integer or "
                f"boolean property (its type is {got})",
                path=path,
            )
        folded = token.lower()  # ASCII only here: a token has been checked
        if folded in seen:
            raise InvalidHeaderDeclaration(
                f"property {prop}: {X_MCP_HEADER} {_shown(token)} repeats the header of "
                f"property {_shown('.'.join(seen[folded]))} (names are case-insensitive)",
                path=path,
            )
        seen[folded] = path
        params.append(HeaderParam(path=path, token=token, type=declared))
    return tuple(params)


# --- values (M35, M36) ------------------------------------------------------------


def _js_number(value: float) -> str:
    """A finite float as JavaScript's ``String(number)`` writes it.

    JSON has one number type, so ``42.0`` is the number ``42`` and is sent as
    ``42`` (M36); other numbers use ECMAScript's Number::toString (shortest
    round-trip digits, exponent outside 1e-7 … 1e21), which is what a JavaScript
    server compares against.
    """
    from decimal import Decimal  # B5: loaded by the first float header, not on import

    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)  # finite
    k = len(digits)
    n = exponent + k  # the decimal point sits after n digits
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text


def render_header_value(value: Any) -> str | None:
    """The string form of an argument value before encoding (M36, M38).

    A string as is; ``True``/``False`` as ``true``/``false``; an integer in
    decimal (``42``, ``-7``); any other finite number as JavaScript writes it
    (``42.0`` → ``42``, ``0.5`` → ``0.5``). ``None`` (JSON null), an object, an
    array, NaN/infinity or an integer too long to write yields ``None``: no header.
    The value's JSON type decides, not the declared one: the server compares
    what the body holds.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(value)
        except ValueError:  # beyond sys.get_int_max_str_digits()
            return None
    if isinstance(value, float):
        return _js_number(value) if math.isfinite(value) else None
    return None


def _is_plain(text: str) -> bool:
    """M35: ``text`` can be sent as it is."""
    return (
        _PLAIN.fullmatch(text) is not None
        and not text.startswith(" ")
        and not text.endswith(" ")
        # Wider than the reader's pattern (it also catches "=?base64?=") so that no
        # plain value looks like the sentinel to any reader.
        and not (text.startswith(_PREFIX) and text.endswith(_SUFFIX))
    )


def encode_header_text(text: str) -> str:
    """``text`` as an ``Mcp-Name`` / ``Mcp-Param-*`` value (M35).

    Plain when every character is in 0x20–0x7E, there is no leading or trailing
    space and it does not look like the sentinel; otherwise ``=?base64?`` +
    padded standard Base64 of its UTF-8 bytes + ``?=``. A tab, CR, LF, DEL or any
    non-ASCII character is always wrapped; the empty string stays empty. A lone
    surrogate (a JSON body can carry one) is written with ``surrogatepass``.
    """
    if _is_plain(text):
        return text
    import base64  # only for a value that needs the sentinel (B5)

    payload = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
    return f"{_PREFIX}{payload}{_SUFFIX}"


def encode_header_value(value: Any) -> str | None:
    """An argument value as an ``Mcp-Param-*`` header value, or ``None``: omit the header.

    :func:`render_header_value` then :func:`encode_header_text` (M35–M38).
    """
    text = render_header_value(value)
    return None if text is None else encode_header_text(text)


def decode_header_value(text: str) -> str:
    """The value a header carries: the inverse of :func:`encode_header_text`.

    A value is decoded only when it is exactly ``=?base64?…?=`` (lowercase
    markers); anything else is literal. A sentinel whose payload is not
    canonical padded Base64 of UTF-8 text raises ``ValueError``, as a server
    rejects it.
    """
    match = _SENTINEL.fullmatch(text)
    if match is None:
        return text
    payload = match.group(1)
    import base64  # only for a value that carries the sentinel (B5)

    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the base64 sentinel's payload is not Base64") from None
    if base64.b64encode(raw).decode("ascii") != payload:
        raise ValueError("the base64 sentinel's payload is not canonical Base64")
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ValueError("the base64 sentinel's payload is not UTF-8") from None


# --- headers of one request (M24–M26, M37–M40) -------------------------------------


def _value_at(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``arguments``; ``None`` when a step is missing or not an object."""
    node: Any = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def param_headers(
    params: Sequence[HeaderParam], arguments: Mapping[str, Any] | None
) -> list[tuple[bytes, bytes]]:
    """The ``Mcp-Param-*`` headers of a ``tools/call`` with ``arguments`` (M37–M40).

    One ``(name, value)`` pair per declaration, in the order of ``params``, when
    ``arguments`` has a non-null primitive at exactly that path; a missing key, a
    ``null``, a non-object on the way, an object or array value, or no arguments
    at all omit it. An empty string is sent as an empty value. Names are
    ``Mcp-Param-<token as declared>``; values are ASCII by construction.
    """
    if not isinstance(arguments, Mapping):
        return []
    headers: list[tuple[bytes, bytes]] = []
    for param in params:
        value = encode_header_value(_value_at(arguments, param.path))
        if value is not None:
            headers.append((param.header.encode("ascii"), value.encode("ascii")))
    return headers


def standard_headers(
    method: str, name: str | None, protocol_version: str
) -> list[tuple[bytes, bytes]]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and, where it applies, ``Mcp-Name`` (M24–M26).

    ``method`` is the body's ``method`` and ``protocol_version`` the
    ``_meta`` version of the same body (M27); both are sent byte for byte and must
    be non-empty and plain (no encoding is defined for them): otherwise
    ``ValueError``. ``name`` is the body's ``params.name`` for ``tools/call`` and
    ``prompts/get``, ``params.uri`` for ``resources/read`` (see
    :data:`MCP_NAME_SOURCE`), encoded per M35; it must be given for those
    methods and ``None`` for every other (``ValueError`` otherwise).
    """
    for label, text in (("method", method), ("protocol version", protocol_version)):
        if not text or not _is_plain(text):
            raise ValueError(f"the {label} {_shown(text)} cannot be sent as a header value")
    headers = [
        (MCP_PROTOCOL_VERSION.encode("ascii"), protocol_version.encode("ascii")),
        (MCP_METHOD.encode("ascii"), method.encode("ascii")),
    ]
    if method in MCP_NAME_SOURCE:
        if name is None:
            raise ValueError(f"{method} needs {MCP_NAME} (its params.{MCP_NAME_SOURCE[method]})")
        headers.append((MCP_NAME.encode("ascii"), encode_header_text(name).encode("ascii")))
    elif name is not None:
        raise ValueError(f"{MCP_NAME} is not sent with {_shown(method)}")
    return headers


# --- the server's answer (M42) -----------------------------------------------------


def is_header_mismatch(error: Mapping[str, Any]) -> bool:
    """Whether a JSON-RPC error is HeaderMismatch (``code`` ``-32020``, M42, M73).

    ``error`` is the error object (``{"code": …, "message": …}``) or a whole error
    response (``{"jsonrpc": "2.0", "id": …, "error": {…}}``). The code must be a
    JSON integer; the message is not looked at.
    """
    if not isinstance(error, Mapping):
        return False
    inner = error.get("error")
    if isinstance(inner, Mapping):
        error = inner
    code = error.get("code")
    return isinstance(code, int) and not isinstance(code, bool) and code == HEADER_MISMATCH
