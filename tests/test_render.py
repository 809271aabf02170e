"""Rendering of tools/call results, typed content blocks and output-schema policy (K3–K5, K8)."""

from __future__ import annotations

import base64
import json
import logging
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore import (
    Catalogue,
    OutputSchemaViolation,
    RemoteProtocolError,
    Tool,
    ToolOutput,
    _schema,
    render_result,
)
from mcpcore.base._render import (
    AudioBlock,
    ImageBlock,
    OtherBlock,
    ResourceBlock,
    ResourceLinkBlock,
    TextBlock,
    content_blocks,
    render_content,
)

OCTET = "application/octet-stream"


@pytest.fixture(autouse=True)
def _fresh_schema_probe() -> Any:
    _schema._reset()
    yield
    _schema._reset()


def tool_with(output_schema: object, name: str = "t") -> Tool:
    cat = Catalogue.from_listing(
        "srv", [{"name": name, "inputSchema": {"type": "object"}, "outputSchema": output_schema}]
    )
    (tool,) = cat.tools
    return tool


SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
    "required": ["n"],
}

# --- K3: rendering ---------------------------------------------------------------


def test_k3_text_blocks_joined_with_blank_line() -> None:
    """K3: text blocks → their texts joined with one blank line."""
    out = render_result({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert out == ToolOutput(
        text="a\n\nb", structured=None, is_error=False, content=(TextBlock("a"), TextBlock("b"))
    )


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"type": "text", "text": "hi"}, "hi"),
        ({"type": "text"}, "[text omitted]"),
        ({"type": "text", "text": 3}, "[text omitted]"),
        ({"type": "image", "data": "AAA", "mimeType": "image/png"}, "[image omitted: image/png]"),
        ({"type": "image", "data": "AAA"}, f"[image omitted: {OCTET}]"),
        ({"type": "image", "mimeType": 7}, f"[image omitted: {OCTET}]"),
        ({"type": "audio", "mimeType": "audio/wav"}, "[audio omitted: audio/wav]"),
        ({"type": "audio"}, f"[audio omitted: {OCTET}]"),
        (
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            "body",
        ),
        (
            {"type": "resource", "resource": {"uri": "u", "blob": "AA", "mimeType": "app/x"}},
            "[resource omitted: app/x]",
        ),
        (
            {"type": "resource", "resource": {"uri": "u", "blob": "AA"}},
            f"[resource omitted: {OCTET}]",
        ),
        ({"type": "resource", "resource": {"uri": "u"}}, f"[resource omitted: {OCTET}]"),
        ({"type": "resource", "resource": "nope"}, f"[resource omitted: {OCTET}]"),
        ({"type": "resource"}, f"[resource omitted: {OCTET}]"),
        ({"type": "resource_link", "uri": "https://x/y", "name": "y"}, "[resource: https://x/y]"),
        ({"type": "resource_link"}, "[resource_link omitted]"),
        ({"type": "video", "data": "x"}, "[video omitted]"),
        ({"type": ""}, "[unknown omitted]"),
        ({"type": 5}, "[unknown omitted]"),
        ({"text": "no type"}, "[unknown omitted]"),
        ("just a string", "[unknown omitted]"),
        (None, "[unknown omitted]"),
        ([{"type": "text", "text": "x"}], "[unknown omitted]"),
    ],
)
def test_k3_block_table(block: object, expected: str) -> None:
    """K3: each block kind renders to its text or its placeholder."""
    assert render_result({"content": [block]}).text == expected


def test_k3_mixed_blocks_in_order() -> None:
    """K3: placeholders are joined with texts the same way, in block order."""
    content = [
        {"type": "text", "text": "first"},
        {"type": "image", "mimeType": "image/jpeg", "data": ""},
        {"type": "resource", "resource": {"uri": "u", "text": "doc"}},
        {"type": "resource_link", "uri": "file:///z"},
        {"type": "text", "text": "last"},
    ]
    assert render_result({"content": content}).text == (
        "first\n\n[image omitted: image/jpeg]\n\ndoc\n\n[resource: file:///z]\n\nlast"
    )


def test_k3_structured_only_is_json_with_non_ascii_kept() -> None:
    """K3: no blocks but structuredContent → json.dumps with non-ASCII kept."""
    payload = {"city": "Zürich", "n": [1, 2]}
    for result in (
        {"structuredContent": payload},
        {"content": [], "structuredContent": payload},
        {"content": "not a list", "structuredContent": payload},
    ):
        out = render_result(result)
        assert out.text == json.dumps(payload, ensure_ascii=False)
        assert "Zürich" in out.text
        assert out.structured == payload


def test_k3_blocks_win_over_structured_content() -> None:
    """K3: when blocks exist, the text comes from them; structured is still reported."""
    out = render_result({"content": [{"type": "text", "text": "t"}], "structuredContent": {"a": 1}})
    assert out.text == "t" and out.structured == {"a": 1}


def test_k3_structured_not_serialisable_does_not_raise() -> None:
    """K3: a non-JSON structuredContent (only possible from Python callers) never raises."""
    out = render_result({"structuredContent": {1, 2}})
    assert out.text == "[structuredContent omitted]"


@pytest.mark.parametrize("result", [None, 3, "text", [], [{"type": "text", "text": "x"}], True])
def test_k3_non_object_result_is_empty(result: object) -> None:
    """K3: a result that is not an object renders as empty text, never raises."""
    assert render_result(result) == ToolOutput(text="", structured=None, is_error=False)


def test_k3_render_content_non_list() -> None:
    """K3: render_content of a non-list is empty."""
    assert render_content({"type": "text", "text": "x"}) == ""
    assert render_content([]) == ""


# --- K8: typed content blocks -----------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x01\x02"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize(
    ("block", "typed"),
    [
        ({"type": "text", "text": "hi"}, TextBlock("hi")),
        (
            {"type": "image", "data": b64(PNG), "mimeType": "image/png"},
            ImageBlock(PNG, "image/png"),
        ),
        ({"type": "image", "data": b64(PNG)}, ImageBlock(PNG, None)),
        ({"type": "image", "data": "", "mimeType": 7}, ImageBlock(b"", None)),
        (
            {"type": "audio", "data": b64(b"RIFF"), "mimeType": "audio/wav"},
            AudioBlock(b"RIFF", "audio/wav"),
        ),
        (
            {
                "type": "resource",
                "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "t"},
            },
            ResourceBlock("file:///a", "text/plain", text="t"),
        ),
        (
            {"type": "resource", "resource": {"uri": "u", "blob": b64(b"\x00\xff")}},
            ResourceBlock("u", None, data=b"\x00\xff"),
        ),
        (
            {"type": "resource", "resource": {"uri": 3, "text": "t", "blob": "AA=="}},
            ResourceBlock(None, None, text="t"),
        ),
        (
            {"type": "resource_link", "uri": "https://x/y", "name": "y", "mimeType": "text/html"},
            ResourceLinkBlock("https://x/y", "y", "text/html"),
        ),
        (
            {"type": "resource_link", "uri": "u", "name": 1, "description": "d"},
            ResourceLinkBlock("u", None, None, "d"),
        ),
    ],
)
def test_K8_each_block_is_typed(block: dict[str, Any], typed: object) -> None:
    """K8: each well-formed block becomes its typed, frozen object; bytes are decoded."""
    out = render_result({"content": [block]})
    assert out.content == (typed,)


@pytest.mark.parametrize(
    ("block", "kind", "reason"),
    [
        ({"type": "video", "data": "x"}, "video", "a content type this client does not know"),
        ({"type": "text"}, "text", "'text' is missing or not a string"),
        ({"type": "image", "mimeType": "image/png"}, "image", "'data' is missing or not a string"),
        ({"type": "image", "data": "not base64!"}, "image", "'data' is not valid base64"),
        ({"type": "audio", "data": "A"}, "audio", "'data' is not valid base64"),
        ({"type": "audio", "data": "AAAA=AAA"}, "audio", "'data' is not valid base64"),
        ({"type": "image", "data": "QUJD\u00e9"}, "image", "'data' is not valid base64"),
        (
            {"type": "resource", "resource": {"uri": "u", "blob": "%%"}},
            "resource",
            "'blob' is not valid base64",
        ),
        (
            {"type": "resource", "resource": {"uri": "u"}},
            "resource",
            "the resource has neither 'text' nor 'blob'",
        ),
        (
            {"type": "resource", "resource": "x"},
            "resource",
            "'resource' is missing or not an object",
        ),
        (
            {"type": "resource_link", "name": "n"},
            "resource_link",
            "'uri' is missing or not a string",
        ),
        ({"type": ""}, None, "the block has no type"),
        ({"text": "no type"}, None, "the block has no type"),
        ("just a string", None, "the block is not an object"),
        (None, None, "the block is not an object"),
    ],
)
def test_K8_other_block_says_why(block: object, kind: str | None, reason: str) -> None:
    """K8: an unknown or malformed block is an OtherBlock with its type and a reason."""
    (typed,) = render_result({"content": [block]}).content
    assert isinstance(typed, OtherBlock)
    assert (typed.type, typed.reason) == (kind, reason)
    assert typed.raw == block
    assert typed.kind == "other"


def test_K8_undecodable_base64_fails_only_that_block() -> None:
    """K8: base64 that does not decode spoils only its block: it renders as the
    placeholder, is an OtherBlock saying why, and the call's other blocks are intact."""
    content = [
        {"type": "text", "text": "before"},
        {"type": "image", "data": "@@not-base64@@", "mimeType": "image/png"},
        {"type": "image", "data": b64(PNG), "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "u", "blob": "!", "mimeType": "app/x"}},
        {"type": "text", "text": "after"},
    ]
    out = render_result({"content": content})
    assert out.text == (
        "before\n\n[image omitted: image/png]\n\n[image omitted: image/png]"
        "\n\n[resource omitted: app/x]\n\nafter"
    )
    first, bad, good, bad_blob, last = out.content
    assert first == TextBlock("before") and last == TextBlock("after")
    assert isinstance(bad, OtherBlock) and bad.reason == "'data' is not valid base64"
    assert good == ImageBlock(PNG, "image/png")
    assert isinstance(bad_blob, OtherBlock) and bad_blob.reason == "'blob' is not valid base64"


def test_K8_base64_may_be_wrapped_or_unpadded() -> None:
    """K8: line-wrapped base64 and base64 without its '=' padding decode."""
    data = bytes(range(256)) * 3
    wrapped = base64.encodebytes(data).decode("ascii")  # 76-character lines
    assert "\n" in wrapped
    unpadded = b64(b"ab").rstrip("=")
    out = render_result(
        {
            "content": [
                {"type": "image", "data": wrapped},
                {"type": "audio", "data": unpadded},
                {"type": "image", "data": " " + b64(b"x") + "\r\n"},
            ]
        }
    )
    assert out.content == (ImageBlock(data), AudioBlock(b"ab"), ImageBlock(b"x"))


def test_K8_reprs_show_sizes_not_bytes() -> None:
    """K8: a block's repr shows the size of its bytes and cuts long text: never megabytes."""
    big = b"\x00" * 3_000_000
    text = "y" * 3_000_000
    blocks: list[object] = [
        ImageBlock(big, "image/png"),
        AudioBlock(big, "audio/wav"),
        ResourceBlock("u" * 10_000, "application/octet-stream", data=big),
        ResourceBlock("u", "text/plain", text=text),
        TextBlock(text),
        ResourceLinkBlock("l" * 10_000, "n" * 10_000, "m" * 10_000),
        OtherBlock("video", "a content type this client does not know", {"data": text}),
    ]
    for block in blocks:
        shown = repr(block)
        assert len(shown) < 400, shown[:400]
        assert type(block).__name__ in shown
    assert "<3000000 bytes>" in repr(blocks[0])
    assert "3000000 chars" in repr(blocks[4])
    output = render_result({"content": [{"type": "image", "data": b64(big)}]})
    assert len(repr(output)) < 400


def test_K8_blocks_are_frozen_and_hashable() -> None:
    """K8: blocks are frozen values: equal by content, hashable, not assignable."""
    import dataclasses

    block = ImageBlock(PNG, "image/png")
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.data = b""  # type: ignore[misc]
    assert block == ImageBlock(PNG, "image/png") and hash(block) == hash(
        ImageBlock(PNG, "image/png")
    )
    other = OtherBlock("video", "why", {"type": "video"})
    assert hash(other) == hash(OtherBlock("video", "why", {"type": "video"}))
    kinds = [TextBlock, ImageBlock, AudioBlock, ResourceBlock, ResourceLinkBlock, OtherBlock]
    assert [k.kind for k in kinds] == [
        "text",
        "image",
        "audio",
        "resource",
        "resource_link",
        "other",
    ]


def test_K8_no_blocks_without_a_content_list() -> None:
    """K8: content missing or not a list → no blocks; an error result keeps its blocks."""
    assert render_result({"structuredContent": {"a": 1}}).content == ()
    assert render_result({"content": "text"}).content == ()
    assert render_result(None).content == ()
    assert content_blocks({"type": "text", "text": "x"}) == ()
    out = render_result({"content": [{"type": "text", "text": "bad"}], "isError": True})
    assert out.is_error and out.content == (TextBlock("bad"),)


@given(st.binary(max_size=2048), st.one_of(st.none(), st.text(max_size=12)))
def test_K8_property_image_bytes_round_trip(data: bytes, mime: str | None) -> None:
    """K8 property: any bytes, sent as base64, come back as the same bytes and MIME type."""
    for kind, cls in (("image", ImageBlock), ("audio", AudioBlock)):
        block: dict[str, Any] = {"type": kind, "data": b64(data)}
        if mime is not None:
            block["mimeType"] = mime
        (typed,) = render_result({"content": [block]}).content
        assert typed == cls(data, mime)
    resource = {"type": "resource", "resource": {"uri": "u", "blob": b64(data)}}
    assert render_result({"content": [resource]}).content == (ResourceBlock("u", None, data=data),)


def _k3_reference(content: object) -> str:
    """K3's rendering as it was before typed blocks existed: the oracle for K8."""

    def mime(block: dict[str, Any]) -> str:
        value = block.get("mimeType")
        return value if isinstance(value, str) else OCTET

    def one(block: object) -> str:
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
                return f"[resource omitted: {OCTET}]"
            text = resource.get("text")
            return text if isinstance(text, str) else f"[resource omitted: {mime(resource)}]"
        if kind in ("image", "audio"):
            return f"[{kind} omitted: {mime(block)}]"
        if kind == "resource_link":
            uri = block.get("uri")
            return f"[resource: {uri}]" if isinstance(uri, str) else "[resource_link omitted]"
        return f"[{kind} omitted]"

    if not isinstance(content, list):
        return ""
    return "\n\n".join(one(block) for block in content)


_base64ish = st.one_of(
    st.binary(max_size=32).map(b64),
    st.text(alphabet="ABCD=+/ \n!é", max_size=12),
    st.integers(),
    st.none(),
)
_k8_block = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["image", "audio"])},
        optional={"data": _base64ish, "mimeType": st.one_of(st.text(max_size=8), st.integers())},
    ),
    st.fixed_dictionaries(
        {"type": st.just("resource")},
        optional={
            "resource": st.one_of(
                st.text(max_size=3),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "uri": st.one_of(st.text(max_size=5), st.integers()),
                        "text": st.one_of(st.text(max_size=5), st.integers()),
                        "blob": _base64ish,
                        "mimeType": st.text(max_size=5),
                    },
                ),
            )
        },
    ),
    st.deferred(lambda: _fuzzy_block),  # and anything JSON-shaped (defined below)
)


@given(st.lists(_k8_block, max_size=6))
def test_K8_property_text_rendering_is_unchanged(content: list[object]) -> None:
    """K8 property: typed blocks change nothing in K3's text; one block per entry, in order."""
    out = render_result({"content": content})
    assert out.text == _k3_reference(content)
    assert len(out.content) == len(content)
    for raw, typed in zip(content, out.content, strict=True):
        if isinstance(typed, OtherBlock):
            assert typed.raw == raw
        else:
            assert isinstance(raw, dict) and raw["type"] == typed.kind


# --- K4: the outcome object ----------------------------------------------------------


def test_k4_is_error_reported_not_raised() -> None:
    """K4: isError: true → is_error True, with the rendered text; never raises."""
    out = render_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert out == ToolOutput(
        text="boom", structured=None, is_error=True, content=(TextBlock("boom"),)
    )
    assert render_result({"isError": "true"}).is_error is False
    assert render_result({"isError": 1}).is_error is False


def test_k4_unknown_policy_is_value_error() -> None:
    """K4/K5: an unknown policy is a caller bug: ValueError."""
    with pytest.raises(ValueError, match="policy"):
        render_result({}, policy="strict")  # type: ignore[arg-type]


# --- K5: output-schema validation ------------------------------------------------------


def test_k5_valid_payload_passes() -> None:
    """K5: a conforming structuredContent passes under both policies."""
    tool = tool_with(SCHEMA)
    result = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1, "s": "x"}}
    for policy in ("error", "lenient"):
        out = render_result(result, tool=tool, policy=policy)
        assert out.structured == {"n": 1, "s": "x"} and not out.is_error


@pytest.mark.parametrize(
    ("structured", "keyword", "path"),
    [
        ({"s": "x"}, "required", "$"),
        ({"n": "one"}, "type", "$.n"),
        ([1, 2], "type", "$"),
        (None, "missing", "$"),
    ],
)
def test_k5_error_policy_raises_naming_keyword(structured: object, keyword: str, path: str) -> None:
    """K5: policy error → OutputSchemaViolation naming the violated keyword."""
    tool = tool_with(SCHEMA)
    result: dict[str, Any] = {"content": []}
    if structured is not None:
        result["structuredContent"] = structured
    with pytest.raises(OutputSchemaViolation) as info:
        render_result(result, tool=tool)
    err = info.value
    assert isinstance(err, RemoteProtocolError)
    assert err.keyword == keyword
    assert err.path == path
    assert err.tool == "srv/t"
    assert keyword in str(err)
    assert "srv/t" in str(err)


def test_k5_false_schema_keyword() -> None:
    """K5: the boolean-false sub-schema reports keyword 'false'."""
    tool = tool_with({"type": "object", "properties": {"x": False}})
    with pytest.raises(OutputSchemaViolation) as info:
        render_result({"structuredContent": {"x": 1}}, tool=tool)
    assert info.value.keyword == "false"


def test_k5_lenient_policy_warns_and_passes(caplog: pytest.LogCaptureFixture) -> None:
    """K5: policy lenient → warning on mcpcore.render and passthrough."""
    tool = tool_with(SCHEMA)
    bad = {"n": "\x1b[31mred"}
    with caplog.at_level(logging.WARNING, logger="mcpcore.render"):
        out = render_result({"structuredContent": bad}, tool=tool, policy="lenient")
    assert out.structured == bad
    assert out.text == json.dumps(bad, ensure_ascii=False)
    records = [r for r in caplog.records if r.name == "mcpcore.render"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    message = records[0].getMessage()
    assert "'type'" in message and "srv/t" in message
    assert "\x1b" not in message  # X1: server data in the message is escaped


def test_k5_is_error_never_validated() -> None:
    """K5: an isError result is never validated, under any policy."""
    tool = tool_with(SCHEMA)
    for result in (
        {"isError": True, "content": [{"type": "text", "text": "bad"}]},
        {"isError": True, "structuredContent": {"n": "wrong"}},
    ):
        out = render_result(result, tool=tool, policy="error")
        assert out.is_error


def test_k5_tool_without_output_schema_not_validated() -> None:
    """K5: no declared schema → nothing validated (missing structuredContent is fine)."""
    tool = tool_with(None)
    assert render_result({"content": []}, tool=tool).text == ""
    assert render_result({"structuredContent": [1]}, tool=tool).structured == [1]


def test_k5_uncompilable_schema_tool_is_unvalidated() -> None:
    """K5: a tool whose outputSchema was dropped at listing is called unvalidated."""
    tool = tool_with({"type": "no-such-type"})
    assert tool.output_schema is None
    assert render_result({"structuredContent": 5}, tool=tool).structured == 5


def test_k5_directly_built_tool_compiles_lazily() -> None:
    """K5: a Tool built by hand with output_schema validates too (compiled on first use)."""
    tool = Tool(
        id="s/x", name="x", server="s", description="x", parameters={}, output_schema=SCHEMA
    )
    with pytest.raises(OutputSchemaViolation):
        render_result({"structuredContent": {}}, tool=tool)
    assert render_result({"structuredContent": {"n": 2}}, tool=tool).structured == {"n": 2}


def test_k5_unresolvable_ref_leaves_payload_unvalidated(caplog: pytest.LogCaptureFixture) -> None:
    """K5: a schema that fails while validating (unresolvable $ref) → warning, unvalidated."""
    tool = tool_with({"type": "object", "properties": {"a": {"$ref": "urn:nowhere"}}})
    with caplog.at_level(logging.WARNING, logger="mcpcore.schema"):
        out = render_result({"structuredContent": {"a": 1}}, tool=tool)
    assert out.structured == {"a": 1}
    assert "could not be applied" in caplog.text


def test_k5_jsonschema_absent_warns_once_and_skips(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: without jsonschema, validation is off and says so once per process."""
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    monkeypatch.setitem(sys.modules, "jsonschema.validators", None)
    with caplog.at_level(logging.WARNING):
        tool = tool_with(SCHEMA)
        other = Tool(
            id="s/y", name="y", server="s", description="y", parameters={}, output_schema=SCHEMA
        )
        assert tool.output_schema == SCHEMA
        for t in (tool, other, tool):
            out = render_result({"structuredContent": {"n": "bad"}}, tool=t)
            assert out.structured == {"n": "bad"}
            assert render_result({"content": []}, tool=t).text == ""
    assert caplog.text.count("jsonschema is not installed: outputSchema validation is off") == 1


def test_k5_import_mcpcore_does_not_import_jsonschema() -> None:
    """K5/X3: importing mcpcore never imports jsonschema."""
    import subprocess

    code = "import sys, mcpcore; sys.exit(1 if 'jsonschema' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_k5_schema_module_helpers() -> None:
    """K5: compile_schema/validate: messages name the keyword; bad schemas raise SchemaInvalid."""
    validator = _schema.compile_schema(SCHEMA)
    assert validator is not None
    assert _schema.validate(validator, {"n": 1}) is None
    message = _schema.validate(validator, {})
    assert message is not None
    assert message.startswith("structuredContent violates outputSchema: 'required' at $:")
    assert _schema.compile_schema(True) is not None
    bad_schemas: list[object] = ["object", [], {"type": 3}, {"minimum": "x"}]
    for bad in bad_schemas:
        with pytest.raises(_schema.SchemaInvalid):
            _schema.compile_schema(bad)


def test_k5_schema_invalid_without_message_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    """K5: any failure while compiling (not only SchemaError) becomes SchemaInvalid."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["not"] = {}
        node = node["not"]
    with pytest.raises(_schema.SchemaInvalid):
        _schema.compile_schema(deep)


# --- properties ------------------------------------------------------------------------

_texts = st.lists(st.text(max_size=20), max_size=8)


@given(_texts)
def test_k3_property_text_blocks_join(texts: list[str]) -> None:
    """K3 property: any list of text blocks renders as the texts joined by a blank line."""
    content = [{"type": "text", "text": t} for t in texts]
    assert render_result({"content": content}).text == "\n\n".join(texts)


_mime = st.one_of(st.none(), st.text(max_size=10), st.integers())


def _with_mime(block: dict[str, Any], mime: object) -> dict[str, Any]:
    if mime is not None:
        block["mimeType"] = mime
    return block


def _expected_mime(mime: object) -> str:
    return mime if isinstance(mime, str) else OCTET


_block_and_part = st.one_of(
    st.text(max_size=10).map(lambda t: ({"type": "text", "text": t}, t)),
    st.tuples(st.sampled_from(["image", "audio"]), _mime).map(
        lambda km: (
            _with_mime({"type": km[0], "data": ""}, km[1]),
            f"[{km[0]} omitted: {_expected_mime(km[1])}]",
        )
    ),
    st.text(max_size=10).map(
        lambda t: ({"type": "resource", "resource": {"uri": "u", "text": t}}, t)
    ),
    _mime.map(
        lambda m: (
            {"type": "resource", "resource": _with_mime({"uri": "u", "blob": "AA=="}, m)},
            f"[resource omitted: {_expected_mime(m)}]",
        )
    ),
    st.text(max_size=10).map(lambda u: ({"type": "resource_link", "uri": u}, f"[resource: {u}]")),
    st.text(min_size=1, max_size=8)
    .filter(lambda k: k not in {"text", "image", "audio", "resource", "resource_link"})
    .map(lambda k: ({"type": k}, f"[{k} omitted]")),
    st.one_of(st.none(), st.integers(), st.lists(st.none(), max_size=1)).map(
        lambda b: (b, "[unknown omitted]")
    ),
)


@given(st.lists(_block_and_part, max_size=8))
def test_k3_property_mixed_blocks(pairs: list[tuple[object, str]]) -> None:
    """K3 property: every block yields exactly its text or placeholder, in order."""
    content = [block for block, _ in pairs]
    expected = "\n\n".join(part for _, part in pairs)
    assert render_result({"content": content}).text == expected


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
_field_values = st.one_of(
    _json,
    st.sampled_from(["text", "image", "audio", "resource", "resource_link", "x"]),
)
_fuzzy_block = st.one_of(
    _json,
    st.dictionaries(
        st.sampled_from(["type", "text", "mimeType", "resource", "uri", "data", "blob"]),
        _field_values
        | st.dictionaries(st.sampled_from(["text", "blob", "mimeType", "uri"]), _json),
        max_size=5,
    ),
)
_fuzzy_result = st.one_of(
    _json,
    st.fixed_dictionaries(
        {},
        optional={
            "content": st.one_of(_json, st.lists(_fuzzy_block, max_size=5)),
            "structuredContent": _json,
            "isError": _json,
        },
    ),
)


@given(_fuzzy_result, st.sampled_from(["error", "lenient"]))
def test_k3_property_never_raises_without_schema(result: object, policy: str) -> None:
    """K3/K4 property: no exception for any JSON-shaped result, with or without a tool."""
    out = render_result(result, policy=policy)  # type: ignore[arg-type]
    assert isinstance(out.text, str)
    out = render_result(result, tool=tool_with(None), policy=policy)  # type: ignore[arg-type]
    assert isinstance(out, ToolOutput)


_SCHEMA_TOOL = Tool(
    id="s/x", name="x", server="s", description="x", parameters={}, output_schema=SCHEMA
)


@given(_fuzzy_result)
def test_k5_property_only_violation_is_raised(result: object) -> None:
    """K5 property: with a schema, the only exception ever raised is OutputSchemaViolation."""
    try:
        out = render_result(result, tool=_SCHEMA_TOOL)
    except OutputSchemaViolation as exc:
        assert exc.keyword
    else:
        assert isinstance(out, ToolOutput)
    out = render_result(result, tool=_SCHEMA_TOOL, policy="lenient")
    assert isinstance(out, ToolOutput)
