"""RFC 6570 URI templates, levels 1 to 4 (F3): a resource template's ``uriTemplate``
expanded with the host's values into the URI to read.

Every operator (none, ``+``, ``#``, ``.``, ``/``, ``;``, ``?``, ``&``) and both
modifiers (a prefix ``:n``, explode ``*``) are supported; values are strings
(numbers are written out), lists, or mappings (associative arrays).
Characters outside the unreserved set are percent-encoded as UTF-8, except
that ``+`` and ``#`` keep reserved characters and percent-triplets as they
are. Literal text is copied, with anything a URI cannot hold encoded.

A template is server text: one that does not parse (an unclosed brace, an
unknown operator, a bad variable name) raises ``RemoteProtocolError`` naming
where. A variable the template names and the host did not give raises
``InvalidArguments`` naming it, unless ``require_all=False``, when it expands
to nothing, as the RFC says.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..base._errors import InvalidArguments, RemoteProtocolError
from ..base._escape import excerpt
from ..base._record import record

__all__ = ["expand_template", "template_variables"]

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*")
_MAX_PREFIX = 10_000


@record(frozen=True, slots=True)
class _Operator:
    first: str
    sep: str
    named: bool
    if_empty: str
    keeps_reserved: bool


_OPERATORS = {
    "": _Operator("", ",", False, "", False),
    "+": _Operator("", ",", False, "", True),
    "#": _Operator("#", ",", False, "", True),
    ".": _Operator(".", ".", False, "", False),
    "/": _Operator("/", "/", False, "", False),
    ";": _Operator(";", ";", True, "", False),
    "?": _Operator("?", "&", True, "=", False),
    "&": _Operator("&", "&", True, "=", False),
}


@record(frozen=True, slots=True)
class _Var:
    name: str
    prefix: int | None
    explode: bool


def _encode(text: str, keeps_reserved: bool) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in _UNRESERVED or (keeps_reserved and char in _RESERVED):
            out.append(char)
        elif keeps_reserved and char == "%" and _PCT.match(text, i):
            out.append(text[i : i + 3])
            i += 3
            continue
        else:
            out.append("".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


def _parse(template: str) -> list[str | tuple[_Operator, list[_Var]]]:
    parts: list[str | tuple[_Operator, list[_Var]]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        end_brace = template.find("}", i)
        if end_brace != -1 and (start == -1 or end_brace < start):
            raise _malformed(template, f"a '}}' with no '{{' at {end_brace}")
        if start == -1:
            parts.append(template[i:])
            break
        if start > i:
            parts.append(template[i:start])
        end = template.find("}", start)
        if end == -1:
            raise _malformed(template, f"the '{{' at {start} is never closed")
        body = template[start + 1 : end]
        op = body[:1] if body[:1] in _OPERATORS and body[:1] != "" else ""
        if body[:1] in "=,!@|":
            raise _malformed(template, f"the operator {body[:1]!r} is reserved")
        specs = body[len(op) :]
        variables = [_var(template, spec) for spec in specs.split(",")]
        parts.append((_OPERATORS[op], variables))
        i = end + 1
    return parts


def _var(template: str, spec: str) -> _Var:
    explode = spec.endswith("*")
    name, _, prefix = (spec[:-1] if explode else spec).partition(":")
    if not _VARNAME.fullmatch(name):
        raise _malformed(template, f"{excerpt(spec, 40)!r} is not a variable name")
    if prefix:
        if explode or not prefix.isdigit() or prefix.startswith("0") or len(prefix) > 4:
            raise _malformed(template, f"{excerpt(spec, 40)!r} has a bad prefix length")
        return _Var(name, min(int(prefix), _MAX_PREFIX), False)
    if ":" in spec:
        raise _malformed(template, f"{excerpt(spec, 40)!r} has an empty prefix length")
    return _Var(name, None, explode)


def _malformed(template: str, why: str) -> RemoteProtocolError:
    return RemoteProtocolError(f"the URI template {excerpt(template, 200)!r} is malformed: {why}")


def template_variables(template: str) -> tuple[str, ...]:
    """The variable names ``template`` uses, in order, each once."""
    names: dict[str, None] = {}
    for part in _parse(template):
        if not isinstance(part, str):
            for var in part[1]:
                names.setdefault(var.name, None)
    return tuple(names)


Value = str | int | float | Sequence[object] | Mapping[str, object] | None


def expand_template(
    template: str, values: Mapping[str, object] | None = None, *, require_all: bool = True
) -> str:
    """``template`` expanded with ``values`` (RFC 6570, levels 1–4)."""
    values = values or {}
    if not isinstance(values, Mapping):
        raise InvalidArguments("values", message="template values must be a mapping")
    parts = _parse(template)
    if require_all:
        missing = [
            var.name
            for part in parts
            if not isinstance(part, str)
            for var in part[1]
            if _undefined(values.get(var.name))
        ]
        if missing:
            shown = ", ".join(repr(excerpt(n, 40)) for n in dict.fromkeys(missing))
            raise InvalidArguments(
                "values",
                message=f"the URI template needs a value for {shown} "
                "(pass require_all=False to leave it out)",
            )
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(_encode(part, keeps_reserved=True))
        else:
            out.append(_expression(part[0], part[1], values))
    return "".join(out)


def _undefined(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, bytes)):
        return False
    return isinstance(value, (Sequence, Mapping)) and len(value) == 0


def _scalar(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise InvalidArguments(
        f"values[{excerpt(name, 40)!r}]",
        message=f"the template value {excerpt(name, 40)!r} must be a string, a number, "
        f"a list or a mapping, not {type(value).__name__}",
    )


def _expression(op: _Operator, variables: list[_Var], values: Mapping[str, object]) -> str:
    enc = op.keeps_reserved
    pieces: list[str] = []
    for var in variables:
        value = values.get(var.name)
        if _undefined(value):
            continue
        name = var.name
        if isinstance(value, Mapping):
            pairs = [(_scalar(name, k), _scalar(name, v)) for k, v in value.items()]
            if var.prefix is not None:
                raise InvalidArguments(
                    f"values[{excerpt(name, 40)!r}]",
                    message=f"a prefix cannot apply to the mapping {excerpt(name, 40)!r}",
                )
            if var.explode:
                pieces.extend(
                    f"{_encode(k, enc)}{'=' + _encode(v, enc) if v or not op.named else op.if_empty}"
                    for k, v in pairs
                )
            else:
                joined = ",".join(f"{_encode(k, enc)},{_encode(v, enc)}" for k, v in pairs)
                pieces.append(f"{name}={joined}" if op.named else joined)
        elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
            items = [_scalar(name, item) for item in value]
            if var.prefix is not None:
                raise InvalidArguments(
                    f"values[{excerpt(name, 40)!r}]",
                    message=f"a prefix cannot apply to the list {excerpt(name, 40)!r}",
                )
            if var.explode:
                pieces.extend(
                    (f"{name}=" if op.named and item else (name + op.if_empty if op.named else ""))
                    + _encode(item, enc)
                    for item in items
                )
            else:
                joined = ",".join(_encode(item, enc) for item in items)
                pieces.append(f"{name}={joined}" if op.named else joined)
        else:
            text = _scalar(name, value)
            if var.prefix is not None:
                text = text[: var.prefix]
            encoded = _encode(text, enc)
            if op.named:
                pieces.append(f"{name}={encoded}" if text else name + op.if_empty)
            else:
                pieces.append(encoded)
    return op.first + op.sep.join(pieces) if pieces else ""
