"""A tool's arguments before they are sent, and its parameters as people read them.

A tool declares its parameters as a JSON Schema (``inputSchema``, kept verbatim
as :attr:`Tool.parameters`). This module reads that schema for three things a
caller wants before a call goes out:

* :func:`describe_parameters` / :func:`signature`: the parameters' names,
  types, whether each is required and its description, and a short one-line
  form (``a, b, note?``) for a table;
* :func:`arguments_from_pairs`: arguments from ``key=value`` words, each value
  typed by its parameter's schema (integer, number, boolean, string, null;
  arrays and objects as JSON values; ``key:=JSON`` for any JSON value);
* :func:`check_arguments`: the arguments checked against the schema, the error
  naming the argument at fault (K10).

All three are pure functions of the schema and the words or values given. The
schema comes from the server, so it is untrusted: whatever shape it has, each
function returns or raises :class:`~mcpcore.InvalidArguments`, and a schema
that cannot be read is treated as saying nothing (the server then decides).
Messages name arguments and types, never an argument's value (it may be a
secret).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..base._errors import InvalidArguments
from ..base._escape import excerpt
from ..base._record import record
from ..base._schema import SchemaInvalid, compile_schema

__all__ = [
    "Parameter",
    "arguments_from_pairs",
    "check_arguments",
    "describe_parameters",
    "is_argument_pair",
    "signature",
]

#: The JSON types a ``key=value`` word can be read as, in the order they are tried.
_TRIED = ("boolean", "integer", "number", "null", "array", "object")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: ``key=value`` or ``key:=json``: a key that cannot start a JSON text.
_PAIR = re.compile(r"(?P<key>[^\s=:{}\[\]\"][^=]*?)(?P<op>:?=)(?P<value>.*)", re.DOTALL)
#: At most this many problems are named in one error.
MAX_PROBLEMS = 3
_MAX_DEPTH = 20  # $ref / anyOf nesting followed when reading a parameter's type
_JSON_TYPE = {
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
    type(None): "null",
}
_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
#: How to write each type as a ``key=value`` word.
_WRITTEN = {
    "boolean": "true or false",
    "array": "a JSON array such as [1, 2]",
    "object": 'a JSON object such as {"k": 1}',
}

#: How a broken bound reads: "argument 'n' must be at least 1".
_BOUNDS = {
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "greater than {}",
    "exclusiveMaximum": "less than {}",
    "multipleOf": "a multiple of {}",
    "minLength": "at least {} characters long",
    "maxLength": "at most {} characters long",
    "minItems": "an array of at least {} items",
    "maxItems": "an array of at most {} items",
    "pattern": "text matching the pattern {}",
    "const": "exactly {}",
}


@record(frozen=True)
class Parameter:
    """One parameter of a tool, as its input schema declares it.

    ``type`` is a short, readable type (``string``, ``integer or null``,
    ``array of string``, ``one of 'a', 'b'``; ``any`` when the schema does not
    say); ``description`` and ``default`` are the server's, ``None`` when absent
    (``default`` as JSON text). Every text is the server's, unescaped: escape it
    before it reaches a terminal.
    """

    name: str
    type: str
    required: bool
    description: str | None = None
    default: str | None = None


def _properties(schema: object) -> tuple[dict[str, Any], frozenset[str]]:
    """The schema's properties and required names (empty when it declares none)."""
    if not isinstance(schema, Mapping):
        return {}, frozenset()
    properties = schema.get("properties")
    required = schema.get("required")
    props = (
        {k: v for k, v in properties.items() if isinstance(k, str)}
        if isinstance(properties, Mapping)
        else {}
    )
    names = (
        frozenset(r for r in required if isinstance(r, str))
        if isinstance(required, list)
        else frozenset()
    )
    return props, names


def _resolve(root: object, node: object, depth: int = 0) -> object:
    """``node`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and depth < _MAX_DEPTH:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return node
        target: object = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return node
            target = target[part]
        node, depth = target, depth + 1
    return node


def _types(root: object, node: object, depth: int = 0) -> list[str]:
    """The JSON types ``node`` allows, in the schema's order; ``[]`` when it does not say."""
    node = _resolve(root, node, depth)
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return []
    found: list[str] = []
    declared = node.get("type")
    if isinstance(declared, str):
        found.append(declared)
    elif isinstance(declared, list):
        found.extend(t for t in declared if isinstance(t, str))
    if not found:
        for key in ("anyOf", "oneOf"):
            members = node.get(key)
            if isinstance(members, list):
                for member in members:
                    for kind in _types(root, member, depth + 1) or ["any"]:
                        if kind not in found:
                            found.append(kind)
        if "any" in found:
            return []
    if not found and isinstance(node.get("enum"), list):
        found = _unique(_kind(value) for value in node["enum"])
    if not found and "const" in node:
        found = [_kind(node["const"])]
    return found


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _unique(values: Any) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _type_shown(root: object, node: object) -> str:
    resolved = _resolve(root, node)
    if isinstance(resolved, Mapping) and isinstance(resolved.get("enum"), list):
        choices = [json.dumps(v, ensure_ascii=False) for v in resolved["enum"][:8]]
        more = ", …" if len(resolved["enum"]) > 8 else ""
        return "one of " + ", ".join(choices) + more
    kinds = _types(root, node)
    if not kinds:
        return "any"
    shown = []
    for kind in kinds:
        if kind == "array" and isinstance(resolved, Mapping):
            items = _types(root, resolved.get("items"))
            shown.append(f"array of {' or '.join(items)}" if items else "array")
        else:
            shown.append(kind)
    return " or ".join(shown)


def describe_parameters(schema: object) -> tuple[Parameter, ...]:
    """The parameters a tool's input schema declares: required ones first, each
    group in the schema's order."""
    properties, required = _properties(schema)
    found: list[Parameter] = []
    for name, node in properties.items():
        resolved = _resolve(schema, node)
        description = default = None
        if isinstance(resolved, Mapping):
            text = resolved.get("description")
            if not isinstance(text, str) and isinstance(node, Mapping):
                text = node.get("description")  # a $ref's sibling description
            description = text if isinstance(text, str) and text else None
            if "default" in resolved:
                default = json.dumps(resolved["default"], ensure_ascii=False)
        found.append(
            Parameter(
                name=name,
                type=_type_shown(schema, node),
                required=name in required,
                description=description,
                default=default,
            )
        )
    return tuple(sorted(found, key=lambda p: not p.required))


def signature(schema: object, limit: int = 40) -> str:
    """A one-line summary of the parameters: ``a, b, note?`` (``?``: optional), at
    most ``limit`` characters (cut with ``…``); ``""`` for a tool without parameters."""
    text = ", ".join(p.name + ("" if p.required else "?") for p in describe_parameters(schema))
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def is_argument_pair(word: str) -> bool:
    """Whether a word is a ``key=value`` (or ``key:=JSON``) pair rather than JSON text."""
    return _PAIR.fullmatch(word) is not None


def _name(key: str) -> str:
    return repr(excerpt(key, 60))


def _read_json(key: str, text: str, what: str) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=no_constant)
    except (ValueError, RecursionError):
        raise InvalidArguments(
            f"arguments[{_name(key)}]",
            message=f"argument {_name(key)}: {what} is not valid JSON",
        ) from None


def _typed(key: str, value: str, kinds: Sequence[str]) -> Any:
    """``value`` read as the first of ``kinds`` it can be (a string when a string will do)."""
    if not kinds or "string" in kinds:
        return value
    for kind in _TRIED:
        if kind not in kinds:
            continue
        if kind == "boolean" and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if kind == "integer" and _INTEGER.fullmatch(value):
            return int(value)
        if kind == "number" and _NUMBER.fullmatch(value):
            number = float(value)
            if _INTEGER.fullmatch(value):
                return int(value)
            if number not in (float("inf"), float("-inf")):
                return number
        if kind == "null" and value == "null":
            return None
        if kind in ("array", "object") and value.lstrip()[:1] in ("[", "{"):
            parsed = _read_json(key, value, "the value")
            if _kind(parsed) == kind:
                return parsed
    wanted = " or ".join(_ARTICLE.get(k, k) for k in kinds)
    how = "; ".join(_WRITTEN[k] for k in kinds if k in _WRITTEN)
    raise InvalidArguments(
        f"arguments[{_name(key)}]",
        message=f"argument {_name(key)} must be {wanted}" + (f" ({how})" if how else ""),
    )


def arguments_from_pairs(pairs: Sequence[str], schema: object) -> dict[str, Any]:
    """Arguments from ``key=value`` words, each value typed by its parameter's schema.

    ``key=value``: a parameter that accepts a string takes the text as it is;
    otherwise the text is read as the parameter's type: ``true``/``false``, an
    integer, a number, ``null``, or a JSON array or object. ``key:=JSON`` takes
    any JSON value as it is. A parameter the schema does not declare takes a
    string. Raises :class:`~mcpcore.InvalidArguments` naming the key for a word
    that is not a pair, a key given twice, or a value that is not of its type.
    """
    properties, _ = _properties(schema)
    arguments: dict[str, Any] = {}
    for number, word in enumerate(pairs, 1):
        match = _PAIR.fullmatch(word)
        if match is None:
            raise InvalidArguments(
                "arguments",
                message=f"argument #{number} is not key=value (nor key:=JSON)",
            )
        key, op, value = match["key"], match["op"], match["value"]
        if key in arguments:
            raise InvalidArguments(
                f"arguments[{_name(key)}]", message=f"argument {_name(key)} is given twice"
            )
        if op == ":=":
            arguments[key] = _read_json(key, value, "the value after ':='")
        else:
            arguments[key] = _typed(key, value, _types(schema, properties.get(key)))
    return arguments


def _path(parts: Sequence[object]) -> str:
    """``arguments['a'][0]``: keys and indexes only, never a value."""
    return "arguments" + "".join(
        f"[{i}]" if isinstance(i, int) else f"[{_name(str(i))}]" for i in parts
    )


def _subject(parts: Sequence[object]) -> str:
    if not parts:
        return "the arguments"
    head = f"argument {_name(str(parts[0]))}"
    rest = "".join(f"[{i}]" if isinstance(i, int) else f"[{_name(str(i))}]" for i in parts[1:])
    return head + (f" (at {rest})" if rest else "")


def check_arguments(schema: object, arguments: Mapping[str, Any], *, strict: bool = False) -> None:
    """Check ``arguments`` against a tool's input schema before the call is sent (K10).

    Raises :class:`~mcpcore.InvalidArguments` whose message names the argument
    at fault and what was expected: a missing required argument, one the tool
    does not take, a value of the wrong type, not among its choices, and so on.
    The schema is the server's: when it does not compile, or ``jsonschema`` is
    not installed, nothing is checked (the server decides).

    A schema refuses an argument it does not name only when it says
    ``"additionalProperties": false``, which the official SDKs' schemas
    (pydantic, zod) do not say, so a misspelled name would reach the server and
    be ignored there. With ``strict=True``, an argument the schema does not name
    in ``properties`` (nor match with ``patternProperties``) is refused whatever
    ``additionalProperties`` says, with the closest name as a suggestion
    ("did you mean 'steps'?"). Only the top-level names are held to this, and
    only when the schema lists ``properties`` (a schema that names none says
    nothing about names).
    """
    if not isinstance(schema, Mapping):
        return
    try:
        validator = compile_schema(dict(schema))
    except SchemaInvalid:
        return
    found: list[InvalidArguments] = []
    given = 0  # how many of them are about a value given (they come first)
    if validator is not None:
        try:
            errors: list[Any] = list(validator.iter_errors(dict(arguments)))
            if errors:
                import importlib

                best_match = importlib.import_module("jsonschema.exceptions").best_match
                # The given arguments' own problems first, then what is missing or
                # extra; an anyOf / oneOf failure is said through its most relevant
                # branch.
                ordered = sorted(errors, key=lambda e: not e.absolute_path)
                found = [_violation(schema, best_match([error])) for error in ordered]
                given = sum(1 for error in ordered if error.absolute_path)
        except Exception:  # a schema that fails while validating: unchecked (K5's rule)
            found = []
    unknown = _unknown_names(schema, arguments) if strict else None
    if unknown is not None:
        # Before what is missing: a misspelled name explains the required one it lacks.
        found.insert(min(given, len(found)), unknown)
    if not found:
        return
    messages = _unique(str(problem) for problem in found)
    shown = "; ".join(messages[:MAX_PROBLEMS])
    if len(messages) > MAX_PROBLEMS:
        shown += f"; and {len(messages) - MAX_PROBLEMS} more"
    raise InvalidArguments(found[0].path, message=shown)


def _unknown_names(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> InvalidArguments | None:
    """``strict``: the arguments the schema's ``properties`` do not name, as one problem."""
    if not isinstance(schema.get("properties"), Mapping):
        return None
    extra = [key for key in arguments if not _declared(schema, str(key))]
    return _not_taken(schema, [str(key) for key in extra]) if extra else None


def _not_taken(schema: Mapping[str, Any], extra: Sequence[str]) -> InvalidArguments:
    """Arguments the tool does not take: named, with the closest declared name when
    one is close ("did you mean 'steps'?"), else the names it takes."""
    import difflib  # the error path only

    names = [p.name for p in describe_parameters(schema)]
    named = " or ".join(_name(k) for k in extra[:5]) + (" or …" if extra[5:] else "")
    by_lower = {name.lower(): name for name in reversed(names)}
    meant = [
        by_lower[match]
        for key in extra[:5]
        for match in difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    ]
    meant = [name for name in _unique(meant) if name not in extra]
    if meant:
        how = " or ".join(_name(name) for name in meant)
        message = f"the tool takes no argument {named}; did you mean {how}?"
    else:
        message = f"the tool takes no argument {named} (it takes: {', '.join(names) or 'none'})"
    return InvalidArguments(_path([extra[0]]), message=message)


def _declared(node: Mapping[str, Any], key: str) -> bool:
    """Whether an object schema names ``key`` in its properties or patternProperties."""
    properties = node.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return True
    patterns = node.get("patternProperties")
    for pattern in patterns if isinstance(patterns, Mapping) else ():
        try:
            if re.search(str(pattern), key):
                return True
        except re.error:
            continue
    return False


def _violation(schema: Mapping[str, Any], error: Any) -> InvalidArguments:
    parts = list(getattr(error, "absolute_path", ()))
    keyword = str(error.validator) if error.validator is not None else "false"
    instance, value = error.instance, error.validator_value
    if keyword == "required" and isinstance(instance, Mapping) and isinstance(value, list):
        missing = [name for name in value if isinstance(name, str) and name not in instance]
        if missing:
            where = _path([*parts, missing[0]])
            if not parts:
                return InvalidArguments(
                    where, message=f"missing required argument {_name(missing[0])}"
                )
            return InvalidArguments(
                where, message=f"{_subject(parts)} lacks the required key {_name(missing[0])}"
            )
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        node = error.schema if isinstance(error.schema, Mapping) else {}
        extra = [k for k in instance if not _declared(node, k)]
        if extra:
            if not parts:
                return _not_taken(schema, extra)
            return InvalidArguments(
                _path([*parts, extra[0]]),
                message=f"{_subject(parts)} has a key it does not take: {_name(extra[0])}",
            )
    if keyword == "type":
        kinds = [value] if isinstance(value, str) else list(value or [])
        wanted = " or ".join(_ARTICLE.get(str(k), excerpt(str(k), 20)) for k in kinds)
        given = _JSON_TYPE.get(type(instance), "another value")
        return InvalidArguments(
            _path(parts), message=f"{_subject(parts)} must be {wanted}, not {given}"
        )
    if keyword in ("anyOf", "oneOf"):
        kinds = _types(schema, error.schema)
        given = _JSON_TYPE.get(type(instance), "another value")
        wanted = " or ".join(_ARTICLE.get(k, excerpt(k, 20)) for k in kinds)
        fits = _kind(instance) in kinds or (_kind(instance) == "integer" and "number" in kinds)
        if kinds and not fits:
            return InvalidArguments(
                _path(parts), message=f"{_subject(parts)} must be {wanted}, not {given}"
            )
        return InvalidArguments(
            _path(parts),
            message=f"{_subject(parts)} matches none of the forms the tool's schema allows",
        )
    if keyword == "enum" and isinstance(value, list):
        choices = ", ".join(excerpt(json.dumps(v, ensure_ascii=False), 40) for v in value[:8])
        more = ", …" if len(value) > 8 else ""
        return InvalidArguments(
            _path(parts), message=f"{_subject(parts)} must be one of {choices}{more}"
        )
    # Any other keyword (minimum, pattern, maxLength, …): jsonschema's words quote the
    # value, so only the keyword and its limit are named.
    limit = excerpt(json.dumps(value, ensure_ascii=False, default=str), 60)
    if keyword in _BOUNDS:
        return InvalidArguments(
            _path(parts), message=f"{_subject(parts)} must be {_BOUNDS[keyword].format(limit)}"
        )
    return InvalidArguments(
        _path(parts),
        message=f"{_subject(parts)} breaks the tool's schema: {excerpt(keyword, 40)} {limit}",
    )
