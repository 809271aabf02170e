"""Modern request headers (M24–M26, M32–M42, E5): declarations, value encoding, headers."""

from __future__ import annotations

import base64
import copy
import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.wire._headers import (
    HEADER_MISMATCH,
    MCP_NAME_SOURCE,
    HeaderParam,
    InvalidHeaderDeclaration,
    decode_header_value,
    encode_header_text,
    encode_header_value,
    is_header_mismatch,
    param_headers,
    render_header_value,
    standard_headers,
    tool_header_params,
)

TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 9110 §5.5 field-value without obs-text: VCHAR, SP, HTAB inside, none at the ends.
FIELD_VALUE = re.compile(rb"(?:[\x21-\x7e](?:[\x20\x09\x21-\x7e]*[\x21-\x7e])?)?")


def prop(type_: Any = "string", header: Any = "X", **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"x-mcp-header": header, **extra}
    if type_ is not None:
        schema["type"] = type_
    return schema


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def reason(schema: Any) -> str:
    with pytest.raises(InvalidHeaderDeclaration) as info:
        tool_header_params(schema)
    return str(info.value)


def as_dict(headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("ascii"): value.decode("ascii") for name, value in headers}


# --- M32: where declarations live, and what makes one invalid ----------------------

# The conformance scenario `http-invalid-tool-headers`, tool by tool.
INVALID_TOOLS = {
    "invalid_empty_header": obj(region=prop("string", "")),
    "invalid_object_header": obj(region=prop("object", "Region")),
    "invalid_array_header": obj(region=prop("array", "Region")),
    "invalid_null_header": obj(region=prop("null", "Region")),
    "invalid_number_header": obj(region=prop("number", "Region")),
    "invalid_duplicate_same_case": obj(a=prop("string", "Region"), b=prop("string", "Region")),
    "invalid_duplicate_diff_case": obj(a=prop("string", "MyField"), b=prop("string", "myfield")),
    "invalid_space_in_name": obj(region=prop("string", "My Region")),
    "invalid_colon_in_name": obj(region=prop("string", "Region:Primary")),
    "invalid_non_ascii_name": obj(region=prop("string", "Région")),
    "invalid_control_char_name": obj(region=prop("string", "Region\t1")),
}


@pytest.mark.parametrize("tool", sorted(INVALID_TOOLS))
def test_M32_M33_conformance_invalid_tools_are_refused(tool: str) -> None:
    """M32, M33: every invalid tool of `http-invalid-tool-headers` raises the declared error."""
    with pytest.raises(InvalidHeaderDeclaration):
        tool_header_params(INVALID_TOOLS[tool])


def test_M32_conformance_valid_tool_is_kept() -> None:
    """M32: `valid_tool` (region → Region) declares one header."""
    params = tool_header_params(obj(region=prop("string", "Region")))
    assert params == (HeaderParam(path=("region",), token="Region", type="string"),)


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("", "empty"),
        (7, "int, not a string"),
        (True, "bool, not a string"),
        (None, "NoneType, not a string"),
        (["X"], "list, not a string"),
        ({"name": "X"}, "dict, not a string"),
        ("My Region", "not an HTTP token"),
        ("Region:Primary", "not an HTTP token"),
        ("Région", "not an HTTP token"),
        ("Region\t1", "not an HTTP token"),
        ("Region\r\n1", "not an HTTP token"),
        ("Region\x00", "not an HTTP token"),
        ("Mcp(Param)", "not an HTTP token"),
        ('"quoted"', "not an HTTP token"),
        ("a/b", "not an HTTP token"),
        ("a@b", "not an HTTP token"),
        ("X\x7f", "not an HTTP token"),
    ],
)
def test_M32_annotation_must_be_a_non_empty_token(header: Any, words: str) -> None:
    """M32: the annotation is a non-empty string of RFC 9110 tchar only."""
    assert words in reason(obj(a=prop("string", header)))


def test_M32_every_tchar_is_allowed() -> None:
    """M32: the whole tchar alphabet makes a valid token."""
    token = "!#$%&'*+-.^_`|~09AZaz"
    assert tool_header_params(obj(a=prop("string", token)))[0].token == token


@pytest.mark.parametrize(
    ("type_", "words"),
    [
        ("number", "type is 'number'"),
        ("object", "type is 'object'"),
        ("array", "type is 'array'"),
        ("null", "type is 'null'"),
        ("String", "type is 'String'"),
        (None, "type is missing"),
        (["string", "null"], "type is list, not a string"),
        (["string"], "type is list, not a string"),
        (7, "type is int, not a string"),
    ],
)
def test_M32_only_string_integer_boolean_properties(type_: Any, words: str) -> None:
    """M32: the property's `type` is exactly "string", "integer" or "boolean"."""
    assert words in reason(obj(a=prop(type_, "A")))


@pytest.mark.parametrize("type_", ["string", "integer", "boolean"])
def test_M32_primitive_types_are_accepted(type_: str) -> None:
    """M32: the three primitive types carry a header."""
    assert tool_header_params(obj(a=prop(type_, "A")))[0].type == type_


@pytest.mark.parametrize(
    ("first", "second"),
    [("Region", "Region"), ("MyField", "myfield"), ("REGION", "region"), ("a-B", "A-b")],
)
def test_M32_duplicates_compare_case_insensitively(first: str, second: str) -> None:
    """M32: two annotations that differ only in case are a duplicate; the message names both."""
    text = reason(obj(a=prop("string", first), b=prop("integer", second)))
    assert "repeats the header of property 'a'" in text
    assert "property 'b'" in text


def test_M32_duplicates_across_nesting_levels() -> None:
    """M32: uniqueness is over the whole inputSchema, nested properties included."""
    assert "repeats" in reason(obj(a=prop("string", "X"), b=obj(c=prop("string", "x"))))


OFF_CHAIN = {
    "root": {"type": "object", "x-mcp-header": "X"},
    "items": {"type": "array", "items": prop()},
    "items-properties": {"type": "array", "items": obj(a=prop())},
    "items-tuple": {"type": "array", "items": [prop()]},
    "prefixItems": {"type": "array", "prefixItems": [prop()]},
    "additionalItems": {"type": "array", "additionalItems": prop()},
    "unevaluatedItems": {"type": "array", "unevaluatedItems": prop()},
    "contains": {"type": "array", "contains": prop()},
    "additionalProperties": {"type": "object", "additionalProperties": prop()},
    "unevaluatedProperties": {"type": "object", "unevaluatedProperties": prop()},
    "patternProperties": {"type": "object", "patternProperties": {"^a": prop()}},
    "propertyNames": {"type": "object", "propertyNames": prop()},
    "allOf": {"allOf": [obj(a=prop())]},
    "anyOf": {"anyOf": [obj(a=prop())]},
    "oneOf": {"oneOf": [obj(a=prop())]},
    "not": {"not": obj(a=prop())},
    "if": {"if": obj(a=prop())},
    "then": {"if": {}, "then": obj(a=prop())},
    "else": {"if": {}, "else": obj(a=prop())},
    "$defs": {"$defs": {"r": prop()}, "properties": {"a": {"$ref": "#/$defs/r"}}},
    "definitions": {"definitions": {"r": prop()}},
    "dependentSchemas": {"dependentSchemas": {"a": obj(b=prop())}},
    "dependencies": {"dependencies": {"a": obj(b=prop())}},
    "contentSchema": {"type": "string", "contentSchema": prop()},
    "nested-under-allOf": obj(a={"allOf": [prop()]}),
    "deep-under-items": obj(a=obj(b={"type": "array", "items": obj(c=prop())})),
}


@pytest.mark.parametrize("where", sorted(OFF_CHAIN))
def test_M32_annotation_off_the_properties_chain_is_invalid(where: str) -> None:
    """M32: an annotation not reached by `properties` keys alone invalidates the tool."""
    assert "not reached from the root through 'properties' alone" in reason(OFF_CHAIN[where])


def test_M32_ref_is_not_followed() -> None:
    """M32: `$ref` is not dereferenced; an annotation beside it needs its own `type`."""
    schema = {"$defs": {"r": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/r"}}}
    assert tool_header_params(schema) == ()
    assert "type is missing" in reason(obj(a={"$ref": "#/$defs/r", "x-mcp-header": "A"}))


@pytest.mark.parametrize("keyword", ["const", "enum", "default", "examples", "x-vendor", "title"])
def test_M32_instance_data_and_unknown_keywords_are_not_schemas(keyword: str) -> None:
    """M32: an `x-mcp-header` key inside data (`const`, `default`, ...) is not an annotation."""
    value: Any = [prop("number")] if keyword in ("enum", "examples") else prop("number")
    schema = obj(a={"type": "object", keyword: value})
    schema[keyword] = value
    assert tool_header_params(schema) == ()


def test_M32_nested_properties_chain_is_valid() -> None:
    """M32, M34: nested object properties reached by `properties` keys alone are fine."""
    schema = obj(a=obj(b=obj(c=prop("boolean", "Deep"))), z=prop("integer", "Top"))
    assert tool_header_params(schema) == (
        HeaderParam(path=("a", "b", "c"), token="Deep", type="boolean"),
        HeaderParam(path=("z",), token="Top", type="integer"),
    )


def test_M32_property_named_like_the_keyword_is_just_a_property() -> None:
    """M32: a property called `x-mcp-header` is a name, not an annotation."""
    assert tool_header_params(obj(**{"x-mcp-header": {"type": "string"}})) == ()


@pytest.mark.parametrize("schema", [None, [], "x", 3, True, {}, {"type": "object"}])
def test_M32_schema_without_annotations_declares_nothing(schema: Any) -> None:
    """M32: no annotations (or not a schema object at all): no headers, no error."""
    assert tool_header_params(schema) == ()


def test_M32_cyclic_structures_terminate() -> None:
    """M32: a (non-JSON) cyclic structure does not hang the walk."""
    schema: dict[str, Any] = {"type": "object", "properties": {"a": prop("string", "A")}}
    schema["properties"]["self"] = schema
    schema["allOf"] = [schema]
    assert tool_header_params(schema) == (HeaderParam(path=("a",), token="A", type="string"),)


def test_M32_one_object_at_two_positions_is_seen_at_both() -> None:
    """M32: a shared sub-object is checked at every position it occupies."""
    shared = prop("string", "S")
    assert "repeats" in reason({"properties": {"a": shared, "b": shared}})
    assert "not reached" in reason({"properties": {"a": shared}, "items": shared})


def test_M33_E5_the_error_says_what_is_wrong_and_is_a_ValueError() -> None:
    """M33, E5: the caller drops the tool with a warning; the error carries its reason and path."""
    with pytest.raises(InvalidHeaderDeclaration) as info:
        tool_header_params(obj(region=obj(inner=prop("number", "Region"))))
    error = info.value
    assert isinstance(error, ValueError)
    assert error.path == ("region", "inner")
    assert error.reason == str(error)
    assert str(error) == (
        "property 'region.inner': x-mcp-header is only allowed on a string, integer or "
        "boolean property (its type is 'number')"
    )


def test_M33_server_text_in_the_message_is_escaped_and_bounded() -> None:
    """M33: a warning built from the message shows no raw control characters or huge text."""
    text = reason(obj(**{"a\x1b[31m\n": prop("string", "B\x1b\r\n" + "x" * 5000)}))
    assert "\x1b" not in text and "\n" not in text and "\r" not in text
    assert len(text) < 400


def test_M33_a_huge_integer_annotation_is_named_by_type() -> None:
    """M33: a non-string annotation is described by its type (a repr is not always possible)."""
    assert "int, not a string" in reason(obj(a=prop("string", 10**5000)))


# --- M34: what is remembered ----------------------------------------------------------


def test_M34_header_param_shape() -> None:
    """M34: path → token, plus the header name as sent; frozen and slotted."""
    param = HeaderParam(path=("a", "b"), token="X", type="string")
    assert param.header == "Mcp-Param-X"
    with pytest.raises(AttributeError):
        param.token = "Y"  # type: ignore[misc]
    assert not hasattr(param, "__dict__")


def test_M34_declarations_come_in_document_order() -> None:
    """M34: the order of `properties` is kept (headers go out in that order)."""
    schema = obj(c=prop("string", "C"), a=prop("string", "A"), b=obj(x=prop("string", "B")))
    assert [p.token for p in tool_header_params(schema)] == ["C", "A", "B"]


# --- M35, M36: values -------------------------------------------------------------------

SPEC_EXAMPLES = [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    (" us-west1", "=?base64?IHVzLXdlc3Qx?="),
    ("us-west1 ", "=?base64?dXMtd2VzdDEg?="),
    (" us-west1 ", "=?base64?IHVzLXdlc3QxIA==?="),
    ("us west 1", "us west 1"),
    ("日本語", "=?base64?5pel5pys6Kqe?="),
    ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ("\tindented", "=?base64?CWluZGVudGVk?="),
    ("", ""),
    ("test-method", "test-method"),
]


@pytest.mark.parametrize(("value", "header"), SPEC_EXAMPLES)
def test_M35_spec_and_conformance_examples(value: str, header: str) -> None:
    """M35: the encoding tables of the spec, SEP-2243 and `http-custom-headers`."""
    assert encode_header_text(value) == header
    assert encode_header_value(value) == header
    assert decode_header_value(header) == value


@pytest.mark.parametrize(
    "value",
    [
        "a\tb",  # a tab anywhere, even inside
        "a\x7fb",  # DEL
        "a\x00b",
        "é",
        "\u2028",
        "x ",
        " ",
        "=?base64??=",
        "=?base64?=",  # looks like the sentinel to a prefix/suffix reader
        "=?base64?abc?=",
    ],
)
def test_M35_unsafe_values_are_wrapped(value: str) -> None:
    """M35: controls, DEL, non-ASCII, edge spaces and sentinel look-alikes are wrapped."""
    encoded = encode_header_text(value)
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize(
    "value", ["a b", "=?BASE64?SGVsbG8=?=", "=?base64?abc", "SGVsbG8=", "?=", "~!@#$%^&*()"]
)
def test_M35_safe_values_are_plain(value: str) -> None:
    """M35: printable ASCII without edge spaces and not the sentinel is sent as is."""
    assert encode_header_text(value) == value
    assert decode_header_value(value) == value


def test_M35_lone_surrogate_is_still_encodable() -> None:
    """M35: a lone surrogate (a JSON body can carry one) is wrapped, never an exception."""
    encoded = encode_header_text("a\ud800")
    assert encoded.startswith("=?base64?")
    assert decode_header_value(encoded) == "a\ud800"


@pytest.mark.parametrize(
    "header",
    ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?SGVsbG9=?=", "=?base64?/w==?="],
)
def test_M35_malformed_sentinel_does_not_decode(header: str) -> None:
    """M35: bad padding, bad characters, non-canonical Base64, non-UTF-8 are refused."""
    with pytest.raises(ValueError):
        decode_header_value(header)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (42, "42"),
        (-7, "-7"),
        (0, "0"),
        (2**53 + 1, "9007199254740993"),
        (True, "true"),
        (False, "false"),
        (42.0, "42"),
        (-0.0, "0"),
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (3.14159, "3.14159"),
        (0.000001, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (-2.5e300, "-2.5e+300"),
        ("42", "42"),
    ],
)
def test_M36_type_conversion(value: Any, text: str) -> None:
    """M36: integers in decimal, booleans lowercase, integral numbers without a fraction."""
    assert render_header_value(value) == text
    assert encode_header_value(value) == text


@pytest.mark.parametrize(
    "value",
    [None, {}, {"a": 1}, [], [1], math.nan, math.inf, 10**5000],
    ids=["null", "empty-object", "object", "empty-array", "array", "nan", "inf", "huge-int"],
)
def test_M37_M38_no_header_for_null_objects_arrays(value: Any) -> None:
    """M37, M38: null omits the header; objects and arrays have no header form."""
    assert render_header_value(value) is None
    assert encode_header_value(value) is None


# --- M37–M40: the headers of one tools/call ----------------------------------------------

CUSTOM_HEADERS_TOOL = obj(
    region=prop("string", "Region"),
    priority=prop("integer", "Priority"),
    verbose=prop("boolean", "Verbose"),
    debug=prop("boolean", "Debug"),
    empty_val=prop("string", "EmptyVal"),
    method_val=prop("string", "Method"),
    non_ascii_val=prop("string", "NonAscii"),
    whitespace_val=prop("string", "Whitespace"),
    leading_space_val=prop("string", "LeadingSpace"),
    trailing_space_val=prop("string", "TrailingSpace"),
    internal_space_val=prop("string", "InternalSpace"),
    control_char_val=prop("string", "ControlChar"),
    crlf_val=prop("string", "CrLf"),
    tab_val=prop("string", "Tab"),
    float_val={"type": "number"},
    query={"type": "string"},
)


def test_M37_M39_conformance_custom_headers_call() -> None:
    """M37, M39: `http-custom-headers`' first call gives exactly the expected headers."""
    arguments = {
        "region": "us-west1",
        "priority": 42,
        "verbose": False,
        "debug": True,
        "empty_val": "",
        "method_val": "test-method",
        "float_val": 3.14159,
        "non_ascii_val": "Hello, 世界",
        "whitespace_val": " padded ",
        "leading_space_val": " us-west1",
        "trailing_space_val": "us-west1 ",
        "internal_space_val": "us west 1",
        "control_char_val": "line1\nline2",
        "crlf_val": "line1\r\nline2",
        "tab_val": "\tindented",
        "query": "SELECT * FROM users",
    }
    headers = param_headers(tool_header_params(CUSTOM_HEADERS_TOOL), arguments)
    assert as_dict(headers) == {
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
        "Mcp-Param-Debug": "true",
        "Mcp-Param-EmptyVal": "",
        "Mcp-Param-Method": "test-method",
        "Mcp-Param-NonAscii": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "Mcp-Param-Whitespace": "=?base64?IHBhZGRlZCA=?=",
        "Mcp-Param-LeadingSpace": "=?base64?IHVzLXdlc3Qx?=",
        "Mcp-Param-TrailingSpace": "=?base64?dXMtd2VzdDEg?=",
        "Mcp-Param-InternalSpace": "us west 1",
        "Mcp-Param-ControlChar": "=?base64?bGluZTEKbGluZTI=?=",
        "Mcp-Param-CrLf": "=?base64?bGluZTENCmxpbmUy?=",
        "Mcp-Param-Tab": "=?base64?CWluZGVudGVk?=",
    }
    assert len(headers) == 14  # no duplicates, nothing for float_val or query


def test_M37_conformance_null_call_omits_the_header() -> None:
    """M37: `test_custom_headers_null` sends Region and Priority, not Verbose."""
    schema = obj(
        region=prop("string", "Region"),
        priority=prop("integer", "Priority"),
        verbose=prop("boolean", "Verbose"),
        query={"type": "string"},
    )
    arguments = {"region": "us-east1", "priority": 1, "verbose": None, "query": "SELECT 1"}
    assert param_headers(tool_header_params(schema), arguments) == [
        (b"Mcp-Param-Region", b"us-east1"),
        (b"Mcp-Param-Priority", b"1"),
    ]


@pytest.mark.parametrize(
    "arguments",
    [None, {}, {"a": None}, {"a": {}}, {"a": {"b": None}}, {"a": "text"}, {"a": [{"b": "x"}]}],
)
def test_M37_header_only_when_a_value_sits_at_exactly_the_path(arguments: Any) -> None:
    """M37: a missing key, a null, or a non-object on the way omits the header."""
    params = tool_header_params(obj(a=obj(b=prop("string", "B"))))
    assert param_headers(params, arguments) == []


def test_M37_nested_value_is_mirrored() -> None:
    """M37: the value at the nested path is sent under the declared token."""
    params = tool_header_params(obj(a=obj(b=prop("integer", "Tenant"))))
    assert param_headers(params, {"a": {"b": 7, "c": 1}}) == [(b"Mcp-Param-Tenant", b"7")]


def test_M38_value_of_the_wrong_json_type() -> None:
    """M38: an object or array produces no header; a scalar of another type is rendered."""
    params = tool_header_params(obj(a=prop("string", "A"), b=prop("integer", "B")))
    assert param_headers(params, {"a": {"x": 1}, "b": [1]}) == []
    assert param_headers(params, {"a": 5, "b": "5"}) == [
        (b"Mcp-Param-A", b"5"),
        (b"Mcp-Param-B", b"5"),
    ]


def test_M39_method_token_never_touches_mcp_method() -> None:
    """M39: a token named like a standard header is still an Mcp-Param-* header."""
    params = tool_header_params(obj(m=prop("string", "Method"), n=prop("string", "Name")))
    names = [name for name, _ in param_headers(params, {"m": "x", "n": "y"})]
    assert names == [b"Mcp-Param-Method", b"Mcp-Param-Name"]


def test_M39_unannotated_properties_are_never_mirrored() -> None:
    """M39: `number` and other unannotated properties produce nothing."""
    params = tool_header_params(CUSTOM_HEADERS_TOOL)
    names = {name for name, _ in param_headers(params, {"float_val": 3.1, "query": "q"})}
    assert names == set()


def test_M40_arguments_are_not_changed() -> None:
    """M40: headers mirror the body; the arguments (nulls included) stay as they are."""
    arguments: dict[str, Any] = {"region": None, "priority": 3, "nested": {"x": [1, None]}}
    before = copy.deepcopy(arguments)
    param_headers(tool_header_params(CUSTOM_HEADERS_TOOL), arguments)
    assert arguments == before


# --- M24–M26: standard headers --------------------------------------------------------------


def test_M24_M25_every_request_carries_version_and_method() -> None:
    """M24, M25: version and method byte for byte; no Mcp-Name for other methods."""
    assert standard_headers("tools/list", None, "2026-07-28") == [
        (b"MCP-Protocol-Version", b"2026-07-28"),
        (b"Mcp-Method", b"tools/list"),
    ]
    assert standard_headers("server/discover", None, "2026-07-28")[1] == (
        b"Mcp-Method",
        b"server/discover",
    )


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("tools/call", "test_headers"),
        ("tools/call", "my-hyphenated-tool"),
        ("prompts/get", "test_prompt"),
        ("resources/read", "file:///path/to/file%20name.txt"),
        ("resources/read", "https://example.com/resource?id=123"),
    ],
)
def test_M26_mcp_name_for_call_get_read(method: str, name: str) -> None:
    """M26: `http-standard-headers`: Mcp-Name = params.name / params.uri, sent as is."""
    assert standard_headers(method, name, "2026-07-28") == [
        (b"MCP-Protocol-Version", b"2026-07-28"),
        (b"Mcp-Method", method.encode()),
        (b"Mcp-Name", name.encode()),
    ]


def test_M26_name_sources() -> None:
    """M26 (and T7: every tasks/* request names its task): which params key each
    Mcp-Name method mirrors."""
    assert dict(MCP_NAME_SOURCE) == {
        "tools/call": "name",
        "prompts/get": "name",
        "resources/read": "uri",
        "tasks/get": "taskId",
        "tasks/update": "taskId",
        "tasks/cancel": "taskId",
        "tasks/result": "taskId",
    }


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("get weather", b"get weather"),
        ("天気", b"=?base64?5aSp5rCX?="),
        (" x", b"=?base64?IHg=?="),
        ("=?base64?x?=", b"=?base64?PT9iYXNlNjQ/eD89?="),
    ],
)
def test_M26_M35_mcp_name_is_encoded_like_a_param(name: str, header: bytes) -> None:
    """M26, M35: a name that is not header-safe is sentinel-wrapped."""
    assert standard_headers("tools/call", name, "2026-07-28")[2] == (b"Mcp-Name", header)


def test_M26_caller_mistakes_are_refused() -> None:
    """M26: Mcp-Name is required for call/get/read and refused for every other method."""
    with pytest.raises(ValueError, match="needs Mcp-Name"):
        standard_headers("tools/call", None, "2026-07-28")
    with pytest.raises(ValueError, match="not sent with"):
        standard_headers("tools/list", "x", "2026-07-28")


@pytest.mark.parametrize(
    ("method", "version"),
    [("", "2026-07-28"), ("tools/\ncall", "2026-07-28"), ("tools/call ", "2026-07-28"),
     ("tools/list", ""), ("tools/list", "2026-07-28\r\nX: y"), ("méthode", "2026-07-28")],
)  # fmt: skip
def test_M24_M25_method_and_version_are_never_encoded(method: str, version: str) -> None:
    """M24, M25: no encoding is defined for them, so a value that needs one is a caller bug."""
    with pytest.raises(ValueError, match="cannot be sent as a header value"):
        standard_headers(method, None, version)


# --- M42, M73: HeaderMismatch ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": -32020, "message": "Header mismatch: Mcp-Name"}, True),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "x"}}, True),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": HEADER_MISMATCH}}, True),
        ({"code": -32001, "message": "Header mismatch: Mcp-Name"}, False),
        ({"code": -32022, "message": "x", "data": {"supported": []}}, False),
        ({"code": -32021}, False),
        ({"code": "-32020"}, False),
        ({"code": -32020.5}, False),
        ({"message": "Header mismatch"}, False),
        ({"error": "boom"}, False),
        ({}, False),
    ],
)
def test_M42_M73_header_mismatch_is_code_32020(error: dict[str, Any], expected: bool) -> None:
    """M42, M73: only the -32020 code (in an error object or a whole response) counts."""
    assert is_header_mismatch(error) is expected


def test_M42_non_mapping_is_not_a_mismatch() -> None:
    """M42: anything that is not an error object is not a mismatch."""
    assert is_header_mismatch([-32020]) is False  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------------------

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
tricky_text = st.one_of(
    any_text,
    st.text(st.sampled_from(" \t\r\n\x00\x7f=?base64aZ~é世"), max_size=20),
    st.builds(lambda s: f"=?base64?{s}?=", any_text),
)
json_scalar = st.one_of(
    tricky_text,
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)


@given(json_scalar)
def test_M35_M36_round_trip(value: Any) -> None:
    """M35, M36: decode(encode(v)) is the string form of v the spec defines."""
    encoded = encode_header_value(value)
    assert encoded is not None
    text = decode_header_value(encoded)
    assert text == render_header_value(value)
    if isinstance(value, str):
        assert text == value
    elif isinstance(value, bool):
        assert text == ("true" if value else "false")
    elif isinstance(value, int):
        assert text == str(value)
    else:
        assert float(text) == value
        if value.is_integer() and abs(value) < 1e21:
            assert re.fullmatch(r"-?[0-9]+", text)  # no fraction, no exponent
        if value.is_integer() and abs(value) <= 2**53:
            assert int(text) == value  # exact in the safe range
    if encoded != text:
        assert encoded.startswith("=?base64?") and encoded.endswith("?=")
        payload = encoded[len("=?base64?") : -len("?=")]
        assert base64.b64decode(payload, validate=True) == text.encode("utf-8", "surrogatepass")


token_text = st.text(st.sampled_from("!#$%&'*+-.^_`|~09AZaz"), min_size=1, max_size=12)


@given(
    st.dictionaries(token_text, json_scalar | st.none(), max_size=6),
    tricky_text,
    st.sampled_from(sorted(MCP_NAME_SOURCE)),
)
def test_M24_M26_M35_M37_every_header_is_legal_http(
    arguments: dict[str, Any], name: str, method: str
) -> None:
    """M24–M26, M35, M37: every name is a token; every value a legal RFC 9110 field value."""
    schema = obj(**{key: prop("string", f"P{i}") for i, key in enumerate(arguments)})
    headers = param_headers(tool_header_params(schema), arguments)
    headers += standard_headers(method, name, "2026-07-28")
    for header_name, value in headers:
        assert TOKEN.fullmatch(header_name), header_name
        assert FIELD_VALUE.fullmatch(value), value
        assert b"\t" not in value  # the conformance mock wants tabs wrapped too


schema_keys = st.sampled_from(
    [
        "x-mcp-header",
        "type",
        "properties",
        "items",
        "prefixItems",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$defs",
        "definitions",
        "additionalProperties",
        "patternProperties",
        "dependentSchemas",
        "dependencies",
        "contains",
        "$ref",
        "const",
        "a",
        "b",
    ]
)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.sampled_from(["string", "integer", "boolean", "number", "X", "x", "", "A b", "é"]),
    any_text,
)
json_ish = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(schema_keys | any_text, children, max_size=5)
    ),
    max_leaves=40,
)


@given(json_ish)
def test_M32_validator_raises_only_its_own_error(schema: Any) -> None:
    """M32, E5: on any JSON-ish input the result is declarations or InvalidHeaderDeclaration."""
    try:
        params = tool_header_params(schema)
    except InvalidHeaderDeclaration as error:
        assert str(error)
        return
    folded = [param.token.lower() for param in params]
    assert len(folded) == len(set(folded))
    for param in params:
        assert param.path
        assert param.type in {"string", "integer", "boolean"}
        assert TOKEN.fullmatch(param.header.encode("ascii"))


@given(json_ish, json_ish)
def test_M37_param_headers_is_total(schema: Any, arguments: Any) -> None:
    """M37: whatever the schema declared and the arguments hold, headers come out legal."""
    try:
        params = tool_header_params(schema)
    except InvalidHeaderDeclaration:
        return
    for header_name, value in param_headers(params, arguments):
        assert TOKEN.fullmatch(header_name)
        assert FIELD_VALUE.fullmatch(value)
