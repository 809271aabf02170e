"""A tool's arguments before they are sent (K10) and its parameters described.

``check_arguments``, ``arguments_from_pairs``, ``describe_parameters`` and
``signature`` are pure functions of a server's (untrusted) input schema: table
cases for what a person sees, and hypothesis properties for "whatever the
schema and the words, the outcome is a value or ``InvalidArguments``, and never
shows an argument's value".
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import (
    InvalidArguments,
    LocalProtocolError,
    Parameter,
    arguments_from_pairs,
    check_arguments,
    describe_parameters,
    is_argument_pair,
    signature,
    suggest_ids,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What to say"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "level": {"enum": ["info", "debug"]},
        "where": {"$ref": "#/$defs/Place"},
    },
    "required": ["text", "count"],
    "additionalProperties": False,
    "$defs": {
        "Place": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    },
}


def test_K10_describe_parameters_and_signature() -> None:
    described = describe_parameters(SCHEMA)
    assert [p.name for p in described] == [
        "text",
        "count",
        "ratio",
        "loud",
        "tags",
        "limit",
        "level",
        "where",
    ]
    assert described[0] == Parameter("text", "string", True, "What to say", None)
    by_name = {p.name: p for p in described}
    assert by_name["tags"].type == "array of string"
    assert by_name["limit"].type == "integer or null" and by_name["limit"].default == "null"
    assert by_name["level"].type == 'one of "info", "debug"'
    assert by_name["where"].type == "object"
    assert signature(SCHEMA) == "text, count, ratio?, loud?, tags?, limi…"  # 40 at most
    assert signature(SCHEMA, limit=100).endswith("level?, where?")
    assert signature({"type": "object"}) == "" and describe_parameters(None) == ()


def test_K10_pairs_are_typed_by_the_schema() -> None:
    words = [
        "text=42",  # a string parameter takes the text as it is
        "count=3",
        "ratio=2.5",
        "loud=TRUE",
        'tags=["a", "b"]',
        "limit=null",
        "level=info",
        'where:={"city": "Paris"}',
        "other=1",  # not declared: a string
    ]
    assert arguments_from_pairs(words, SCHEMA) == {
        "text": "42",
        "count": 3,
        "ratio": 2.5,
        "loud": True,
        "tags": ["a", "b"],
        "limit": None,
        "level": "info",
        "where": {"city": "Paris"},
        "other": "1",
    }
    assert arguments_from_pairs(["limit=7", "ratio=4"], SCHEMA) == {"limit": 7, "ratio": 4}
    assert arguments_from_pairs(["text=a=b"], SCHEMA) == {"text": "a=b"}
    assert arguments_from_pairs([], SCHEMA) == {}


@pytest.mark.parametrize(
    ("words", "message", "path"),
    [
        (["count=x"], "argument 'count' must be an integer", "arguments['count']"),
        (["count=1.5"], "argument 'count' must be an integer", "arguments['count']"),
        (["ratio=nan"], "argument 'ratio' must be a number", "arguments['ratio']"),
        (["loud=yes"], "must be a boolean (true or false)", "arguments['loud']"),
        (["tags=a,b"], "must be an array (a JSON array such as [1, 2])", "arguments['tags']"),
        (["tags=[1"], "argument 'tags': the value is not valid JSON", "arguments['tags']"),
        (["x:=NaN"], "the value after ':=' is not valid JSON", "arguments['x']"),
        (["text=a", "text=b"], "argument 'text' is given twice", "arguments['text']"),
        (["text"], "argument #1 is not key=value (nor key:=JSON)", "arguments"),
        (["=value"], "argument #1 is not key=value", "arguments"),
    ],
)
def test_K10_pairs_that_cannot_be_read(words: list[str], message: str, path: str) -> None:
    with pytest.raises(InvalidArguments) as info:
        arguments_from_pairs(words, SCHEMA)
    assert message in str(info.value) and info.value.path == path
    assert isinstance(info.value, LocalProtocolError) and isinstance(info.value, TypeError)


def test_K10_is_argument_pair() -> None:
    assert is_argument_pair("a=1") and is_argument_pair("a:=[1]") and is_argument_pair("a b=c")
    for word in ('{"a": 1}', "[1]", "-", '"a=b"', "=x", "plain", " a=1"):
        assert not is_argument_pair(word), word


@pytest.mark.parametrize(
    ("arguments", "message", "path"),
    [
        ({"count": 1}, "missing required argument 'text'", "arguments['text']"),
        (
            {"text": 1, "count": 1},
            "argument 'text' must be a string, not an integer",
            "arguments['text']",
        ),
        ({"text": "a", "count": 0}, "argument 'count' must be at least 1", "arguments['count']"),
        (
            {"text": "a", "count": 1, "zz": 1, "yy": 2},
            "the tool takes no argument 'zz' or 'yy' (it takes: text, count, ratio",
            "arguments['zz']",
        ),
        (
            {"text": "a", "count": 1, "level": "loud"},
            'argument \'level\' must be one of "info", "debug"',
            "arguments['level']",
        ),
        (
            {"text": "a", "count": 1, "tags": ["x", 2]},
            "argument 'tags' (at [1]) must be a string, not an integer",
            "arguments['tags'][1]",
        ),
        (
            {"text": "a", "count": 1, "where": {}},
            "argument 'where' lacks the required key 'city'",
            "arguments['where']['city']",
        ),
        (
            {"text": "a", "count": 1, "limit": "x"},
            "argument 'limit' must be an integer or null, not a string",
            "arguments['limit']",
        ),
    ],
)
def test_K10_check_names_the_argument_at_fault(
    arguments: dict[str, Any], message: str, path: str
) -> None:
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SCHEMA, arguments)
    assert message in str(info.value), str(info.value)
    assert info.value.path == path


def test_K10_check_names_several_problems_given_ones_first() -> None:
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SCHEMA, {"text": 5})
    assert str(info.value) == (
        "argument 'text' must be a string, not an integer; missing required argument 'count'"
    )


def test_K10_conforming_arguments_and_unusable_schemas_pass() -> None:
    check_arguments(SCHEMA, {"text": "a", "count": 2, "where": {"city": "x"}})
    check_arguments({"type": "object"}, {"anything": [1, {"x": None}]})
    check_arguments({"type": 12}, {"a": 1})  # does not compile: the server decides
    check_arguments({"$ref": "https://example.com/remote"}, {"a": 1})  # never fetched
    check_arguments(None, {"a": 1})  # type: ignore[arg-type]


def test_K10_a_refused_value_is_never_shown() -> None:
    secret = "sk-live-0123456789abcdef"
    schema = {
        "type": "object",
        "properties": {"token": {"type": "integer"}, "pin": {"pattern": "^[0-9]+$"}},
    }
    for arguments in ({"token": secret}, {"pin": secret}):
        with pytest.raises(InvalidArguments) as info:
            check_arguments(schema, arguments)
        assert secret not in str(info.value) and secret[:8] not in str(info.value)
    with pytest.raises(InvalidArguments) as info:
        arguments_from_pairs([f"token={secret}"], schema)
    assert secret not in str(info.value)


# The official SDKs' schemas (pydantic, zod) do not say additionalProperties: false.
SDK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "integer", "default": 5}, "delay": {"type": "number"}},
}


def test_K10_strict_refuses_a_name_the_schema_does_not_declare_with_a_suggestion() -> None:
    """issue 37 point 2: without additionalProperties: false a misspelled name would be
    sent (and ignored by the server); strict refuses it, naming the closest name."""
    check_arguments(SDK_SCHEMA, {"stpes": 1})  # by default: unchanged, the schema allows it
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SDK_SCHEMA, {"stpes": 1}, strict=True)
    assert str(info.value) == "the tool takes no argument 'stpes'; did you mean 'steps'?"
    assert info.value.path == "arguments['stpes']"
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SDK_SCHEMA, {"Delay": 1, "steps": 2}, strict=True)
    assert "did you mean 'delay'?" in str(info.value)
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SDK_SCHEMA, {"colour": "red"}, strict=True)
    assert str(info.value) == "the tool takes no argument 'colour' (it takes: steps, delay)"
    check_arguments(SDK_SCHEMA, {"steps": 1, "delay": 0.5}, strict=True)


def test_K10_strict_explains_a_missing_argument_by_the_typo_first() -> None:
    schema = {**SDK_SCHEMA, "required": ["steps"]}
    with pytest.raises(InvalidArguments) as info:
        check_arguments(schema, {"stpes": 1, "delay": "x"}, strict=True)
    assert str(info.value) == (
        "argument 'delay' must be a number, not a string; the tool takes no argument "
        "'stpes'; did you mean 'steps'?; missing required argument 'steps'"
    )


def test_K10_strict_with_additional_properties_false_says_it_once() -> None:
    with pytest.raises(InvalidArguments) as info:
        check_arguments(SCHEMA, {"text": "a", "count": 1, "cuont": 2}, strict=True)
    assert str(info.value) == "the tool takes no argument 'cuont'; did you mean 'count'?"


def test_K10_strict_keeps_pattern_properties_and_schemas_without_properties() -> None:
    """Names a schema declares by pattern are taken; a schema that names no properties
    says nothing about names; a schema that does not compile checks nothing."""
    patterned = {"type": "object", "properties": {}, "patternProperties": {"^x-": {}}}
    check_arguments(patterned, {"x-trace": 1}, strict=True)
    check_arguments({"type": "object"}, {"anything": 1}, strict=True)
    check_arguments({"type": "object", "additionalProperties": {}}, {"a": 1}, strict=True)
    check_arguments({"type": 12, "properties": {}}, {"a": 1}, strict=True)
    with pytest.raises(InvalidArguments, match="the tool takes no argument 'a'"):
        check_arguments({"type": "object", "properties": {}}, {"a": 1}, strict=True)


def test_K7_suggestions_include_names_a_letter_or_two_away() -> None:
    ids = ["py/echo", "py/add", "py/slow_one"]
    assert suggest_ids("ech", ids) == ("py/echo",)
    assert suggest_ids("py/ehco", ids) == ("py/echo",)
    assert suggest_ids("js/slow_on", ids) == ("py/slow_one",)
    assert suggest_ids("mul", ids) == () and suggest_ids("py/nothing", ids) == ()


# ---------------------------------------------------------------- properties

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])
PROPERTY = st.one_of(
    st.builds(lambda t: {"type": t}, TYPES),
    st.builds(lambda ts: {"type": ts}, st.lists(TYPES, max_size=3)),
    st.builds(lambda ts: {"anyOf": [{"type": t} for t in ts]}, st.lists(TYPES, max_size=3)),
    st.builds(lambda vs: {"enum": vs}, st.lists(JSON, max_size=3)),
    JSON,
)
SCHEMAS = st.one_of(
    st.builds(
        lambda props, extra: {
            "type": "object",
            "properties": props,
            "required": list(props)[:1],
            "additionalProperties": extra,
        },
        st.dictionaries(st.text(min_size=1, max_size=5), PROPERTY, max_size=4),
        st.booleans(),
    ),
    JSON,
)


@settings(max_examples=200, deadline=None)
@given(
    schema=SCHEMAS,
    arguments=st.dictionaries(st.text(max_size=5), JSON, max_size=4),
    strict=st.booleans(),
)
def test_K10_check_either_passes_or_names_a_path(
    schema: Any, arguments: dict[str, Any], strict: bool
) -> None:
    """Whatever the server's schema, checking returns or raises InvalidArguments."""
    try:
        check_arguments(schema, arguments, strict=strict)
    except InvalidArguments as exc:
        assert exc.path.startswith("arguments") and str(exc)


@settings(max_examples=200, deadline=None)
@given(schema=SCHEMAS, words=st.lists(st.text(max_size=12), max_size=4))
def test_K10_pairs_either_read_or_raise_invalid_arguments(schema: Any, words: list[str]) -> None:
    try:
        arguments = arguments_from_pairs(words, schema)
    except InvalidArguments:
        return
    assert len(arguments) == len(words)
    for value in arguments.values():
        assert not (isinstance(value, float) and not math.isfinite(value))
    describe_parameters(schema)
    signature(schema)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=20),
    number=st.integers(-(10**12), 10**12),
    real=st.floats(allow_nan=False, allow_infinity=False),
    flag=st.booleans(),
)
def test_K10_typed_values_round_trip(text: str, number: int, real: float, flag: bool) -> None:
    """A value written as its parameter's type comes back as that value."""
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
        },
    }
    words = [f"s={text}", f"i={number}", f"n={real!r}", f"b={str(flag).lower()}"]
    assert arguments_from_pairs(words, schema) == {"s": text, "i": number, "n": real, "b": flag}
