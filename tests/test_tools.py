"""Tools layer: id grammar, catalogue building and diff (T1–T4, T6, P3b, P6, K5, X1)."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore
from mcpcore import Catalogue, LimitExceeded, SyncReport, Tool, _schema, is_valid_segment
from mcpcore.base._tools import ascii_lower

LOGGER = "mcpcore.tools"


def raw(name: object, **extra: Any) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    tool.update(extra)
    return tool


@pytest.fixture(autouse=True)
def _fresh_schema_probe() -> Any:
    _schema._reset()
    yield
    _schema._reset()


# --- T1: id grammar -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("echo", True),
        ("Echo", True),
        ("GET_USER", True),
        ("a.b-c_d", True),
        ("0", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("", False),
        ("has space", False),
        ("slash/inside", False),
        ("colon:x", False),
        ("tab\t", False),
        ("new\nline", False),
        ("trailing\n", False),
        ("émoji", False),
        ("İstanbul", False),  # str.lower would turn İ into 'i̇'; ASCII lowering keeps it
        ("K", True),  # ASCII K
        ("\u212a", False),  # KELVIN SIGN: str.lower gives 'k', ASCII lowering does not
        (42, False),
        (None, False),
    ],
)
def test_t1_segment_table(name: object, valid: bool) -> None:
    """T1: 1–128 chars of a-z 0-9 _ - . after ASCII lowercasing."""
    assert is_valid_segment(name) is valid


def test_t1_ascii_lower_only_touches_a_to_z() -> None:
    """T1: ASCII lowercasing leaves non-ASCII alone (unlike str.lower)."""
    assert ascii_lower("ABC-xyz_ÄÖ\u212a") == "abc-xyz_ÄÖ\u212a"
    assert "\u212a".lower() == "k"


@given(st.text())
def test_t1_ascii_lower_changes_exactly_a_to_z_for_any_text(text: str) -> None:
    """T1: whichever path it takes (ASCII text or not), only A-Z change, each to a-z."""
    lowered = ascii_lower(text)
    assert len(lowered) == len(text)
    for before, after in zip(text, lowered, strict=True):
        assert after == (chr(ord(before) + 32) if "A" <= before <= "Z" else before)


def test_t1_tightened_pattern() -> None:
    """T1: a host may tighten the grammar (64 chars of [a-z0-9_-])."""
    tight = re.compile(r"^[a-z0-9_-]{1,64}$")
    assert is_valid_segment("a_b-c", tight)
    assert not is_valid_segment("a.b", tight)
    assert not is_valid_segment("x" * 65, tight)
    assert not is_valid_segment("abc\n", tight)  # fullmatch: '$' cannot hide a newline


def test_t1_qualified_id_and_separator(caplog: pytest.LogCaptureFixture) -> None:
    """T1: id is <server><sep><segment>; separator configurable (seed 002 uses '__')."""
    slash = Catalogue.from_listing("srv", [raw("Echo")])
    assert slash.tools[0].id == "srv/echo"
    assert slash.tools[0].name == "Echo"
    assert slash.separator == "/"
    under = Catalogue.from_listing("srv", [raw("Echo")], separator="__")
    assert under.tools[0].id == "srv__echo"
    assert under.separator == "__"
    assert "srv__echo" in under
    with pytest.raises(ValueError):
        Catalogue.from_listing("srv", [], separator="")


def test_t1_tightened_pattern_in_catalogue(caplog: pytest.LogCaptureFixture) -> None:
    """T1/T2: with a tightened pattern, names outside it are dropped with a warning."""
    tight = re.compile(r"[a-z0-9_-]{1,64}")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing(
            "srv", [raw("ok_one"), raw("dotted.name"), raw("y" * 65)], segment_pattern=tight
        )
    assert [t.id for t in cat] == ["srv/ok_one"]
    assert "'dotted.name'" in caplog.text


# --- T2: drops ------------------------------------------------------------------


def test_t2_invalid_names_dropped_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    """T2: invalid names are dropped; the warning names the server and repr(name)."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing(
            "my-server", [raw("good"), raw("bad name"), raw(""), raw("x" * 129), raw(7)]
        )
    assert [t.name for t in cat] == ["good"]
    records = [r for r in caplog.records if r.name == LOGGER]
    assert len(records) == 4
    assert all(r.levelno == logging.WARNING for r in records)
    assert all("'my-server'" in r.getMessage() for r in records)
    assert repr("bad name") in caplog.text
    assert "''" in records[1].getMessage()
    assert repr("x" * 129) in caplog.text
    assert "7" in records[3].getMessage()


def test_t2_non_object_items_dropped(caplog: pytest.LogCaptureFixture) -> None:
    """T2: items that are not objects are dropped with a warning."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing("srv", ["echo", None, 3, [raw("x")], raw("ok")])
    assert [t.name for t in cat] == ["ok"]
    assert caplog.text.count("not an object") == 4


def test_t2_duplicates_after_lowercasing_first_wins(caplog: pytest.LogCaptureFixture) -> None:
    """T2: a repeat of an earlier id after lowercasing is dropped; the first one wins."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing(
            "srv",
            [
                raw("Search", description="first"),
                raw("search", description="second"),
                raw("SEARCH", description="third"),
            ],
        )
    assert len(cat) == 1
    tool = cat.get("srv/search")
    assert tool is not None
    assert tool.name == "Search"
    assert tool.description == "first"
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 2
    assert "'srv'" in messages[0] and "'search'" in messages[0]
    assert "'SEARCH'" in messages[1]
    assert "'Search'" in messages[1]  # names the kept one


def test_t2_duplicate_of_dropped_tool_is_kept() -> None:
    """T2: only kept tools claim an id; a later valid duplicate of a dropped one stays."""
    cat = Catalogue.from_listing("srv", [{"name": "X"}, raw("x", description="real")])
    assert [t.description for t in cat] == ["real"]


def test_x1_control_characters_never_reach_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """X1/T2: names with control or bidi characters are escaped in warnings."""
    evil = "bad\x1b[31m\u202ename\n"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        Catalogue.from_listing("s\x07rv", [raw(evil), {"name": {"deep": [[[["x" * 1000]]]]}}])
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    for message in messages:
        for ch in ("\x1b", "\u202e", "\x07", "\n"):
            assert ch not in message
        assert len(message) < 1000  # huge names are cut (reprlib)


# --- T3: description and parameters ------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected_description", "expected_title"),
    [
        ({"description": "desc", "title": "T", "annotations": {"title": "A"}}, "desc", "T"),
        ({"description": "", "title": "T", "annotations": {"title": "A"}}, "T", "T"),
        ({"description": "   ", "title": "T"}, "T", "T"),
        ({"description": 5, "annotations": {"title": "A"}}, "A", "A"),
        ({"title": "", "annotations": {"title": "A"}}, "A", "A"),
        ({"title": None, "annotations": {"title": 3}}, "Name", None),
        ({"annotations": "nope"}, "Name", None),
        ({}, "Name", None),
    ],
)
def test_t3_description_fallback_chain(
    extra: dict[str, Any], expected_description: str, expected_title: str | None
) -> None:
    """T3: description, else title, else annotations.title, else the name."""
    cat = Catalogue.from_listing("srv", [raw("Name", **extra)])
    (tool,) = cat.tools
    assert tool.description == expected_description
    assert tool.title == expected_title


@pytest.mark.parametrize("schema", [None, "object", [], 1, True])
def test_t3_missing_or_non_object_input_schema_dropped(
    schema: object, caplog: pytest.LogCaptureFixture
) -> None:
    """T3: a tool without an object inputSchema is dropped with a warning."""
    item: dict[str, Any] = {"name": "t"}
    if schema is not None:
        item["inputSchema"] = schema
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing("srv", [item, raw("ok")])
    assert [t.name for t in cat] == ["ok"]
    assert "inputSchema" in caplog.text and "'t'" in caplog.text


def test_t3_parameters_verbatim() -> None:
    """T3: inputSchema is kept verbatim (same object)."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "x-extra": [1, 2]}
    cat = Catalogue.from_listing("srv", [{"name": "q", "inputSchema": schema}])
    assert cat.tools[0].parameters is schema


# --- T4: what a tool keeps -----------------------------------------------------------


def test_t4_tool_keeps_name_annotations_output_schema() -> None:
    """T4: original name, annotations, read_only from readOnlyHint, outputSchema."""
    out = {"type": "object", "properties": {"n": {"type": "integer"}}}
    cat = Catalogue.from_listing(
        "srv",
        [
            raw(
                "ReadIt",
                annotations={"readOnlyHint": True, "destructiveHint": False},
                outputSchema=out,
            ),
            raw("Maybe", annotations={"readOnlyHint": "true"}),
            raw("Plain"),
        ],
    )
    read, maybe, plain = cat.tools
    assert read.name == "ReadIt" and read.server == "srv"
    assert read.read_only is True
    assert read.output_schema == out
    assert read.annotations == {"readOnlyHint": True, "destructiveHint": False}
    assert maybe.read_only is False  # only a JSON true counts
    assert plain.read_only is False and plain.annotations == {} and plain.output_schema is None


def test_t4_tool_is_frozen_and_hashable() -> None:
    """T4: Tool is frozen; hash on (id, name) despite dict fields; equality on all fields."""
    a = Tool(id="s/x", name="x", server="s", description="d", parameters={"type": "object"})
    b = Tool(id="s/x", name="x", server="s", description="d", parameters={"type": "object"})
    c = Tool(id="s/x", name="x", server="s", description="other", parameters={})
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    with pytest.raises(AttributeError):
        a.name = "y"  # type: ignore[misc]


# --- P3b: task-only tools ------------------------------------------------------------


def test_p3b_task_required_hidden(caplog: pytest.LogCaptureFixture) -> None:
    """P3b: execution.taskSupport == 'required' is hidden, logged at INFO (issue 37)."""
    with caplog.at_level(logging.INFO, logger=LOGGER):
        cat = Catalogue.from_listing(
            "srv",
            [
                raw("needs_task", execution={"taskSupport": "required"}),
                raw("optional_task", execution={"taskSupport": "optional"}),
                raw("forbidden_task", execution={"taskSupport": "forbidden"}),
                raw("odd_execution", execution="required"),
            ],
        )
    assert [t.name for t in cat] == ["optional_task", "forbidden_task", "odd_execution"]
    assert "'needs_task'" in caplog.text
    assert "does not invoke tools as tasks" in caplog.text
    assert {r.levelno for r in caplog.records if "needs_task" in r.getMessage()} == {logging.INFO}


# --- P6: bound -------------------------------------------------------------------


def test_p6_max_tools_limit() -> None:
    """P6: more raw tools than max_tools raises LimitExceeded naming the bound."""
    tools = [raw(f"t{i}") for i in range(5)]
    assert len(Catalogue.from_listing("srv", tools, max_tools=5)) == 5
    with pytest.raises(LimitExceeded) as info:
        Catalogue.from_listing("srv", tools, max_tools=4)
    assert info.value.limit_name == "max_tools"
    assert info.value.limit == 4
    assert "max_tools" in str(info.value)
    assert isinstance(info.value, mcpcore.RemoteProtocolError)


# --- K5: output schemas at listing --------------------------------------------------


def test_k5_uncompilable_output_schema_dropped_tool_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """K5: an uncompilable outputSchema is dropped with a warning; the tool stays callable."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cat = Catalogue.from_listing(
            "srv",
            [
                raw("broken", outputSchema={"type": "no-such-type"}),
                raw("notobj", outputSchema=["type"]),
                raw("nullschema", outputSchema=None),
            ],
        )
    assert [t.name for t in cat] == ["broken", "notobj", "nullschema"]
    assert all(t.output_schema is None for t in cat)
    assert all(t.output_validator() is None for t in cat)
    assert "'broken'" in caplog.text and "does not compile" in caplog.text
    assert "'notobj'" in caplog.text and "not an object" in caplog.text


def test_k5_validate_schemas_false_compiles_lazily(caplog: pytest.LogCaptureFixture) -> None:
    """K5: validate_schemas=False keeps schemas unchecked; first use compiles (once)."""
    cat = Catalogue.from_listing(
        "srv",
        [
            raw("good", outputSchema={"type": "object"}),
            raw("broken", outputSchema={"type": 12}),
        ],
        validate_schemas=False,
    )
    good, broken = cat.tools
    assert broken.output_schema == {"type": 12}
    assert good.output_validator() is not None
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert broken.output_validator() is None
        assert broken.output_validator() is None
    assert caplog.text.count("does not compile") == 1


def test_k5_listing_without_jsonschema(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: without jsonschema, schemas are kept, nothing validates, one warning per process."""
    monkeypatch.setitem(__import__("sys").modules, "jsonschema", None)
    monkeypatch.setitem(__import__("sys").modules, "jsonschema.validators", None)
    with caplog.at_level(logging.WARNING):
        cat = Catalogue.from_listing(
            "srv",
            [raw("a", outputSchema={"type": "object"}), raw("b", outputSchema={"type": 1})],
        )
        Catalogue.from_listing("srv2", [raw("c", outputSchema={"type": "object"})])
    assert [t.output_schema for t in cat] == [{"type": "object"}, {"type": 1}]
    assert all(t.output_validator() is None for t in cat)
    assert caplog.text.count("jsonschema is not installed") == 1


def test_k5_concurrent_first_probes_all_get_a_validator(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: the once-per-process jsonschema probe is safe under threads.

    Eight threads start together on a fresh probe and every import waits until
    all eight are inside it, so each first caller runs while no result has been
    published: every one must still get a validator, and nothing may say
    "not installed".
    """
    import importlib
    import threading
    import types

    count = 8
    start = threading.Barrier(count)
    inside_import = threading.Barrier(count, timeout=2)

    def import_module(name: str, package: str | None = None) -> types.ModuleType:
        if name == "jsonschema.validators":
            try:
                inside_import.wait()
            except threading.BrokenBarrierError:
                pass  # not every thread imported: the assertions below say so
        return importlib.import_module(name, package)

    monkeypatch.setattr(_schema, "importlib", types.SimpleNamespace(import_module=import_module))
    results: list[object] = []
    errors: list[BaseException] = []

    def probe() -> None:
        start.wait()
        try:
            results.append(_schema.compile_schema({"type": "object"}))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    with caplog.at_level(logging.WARNING, logger="mcpcore.schema"):
        threads = [threading.Thread(target=probe) for _ in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    assert errors == []
    assert len(results) == count and all(result is not None for result in results)
    assert "not installed" not in caplog.text
    assert _schema.compile_schema({"type": "object"}) is not None  # published for later callers


# --- T6: diff --------------------------------------------------------------------


def test_t6_diff_added_removed_changed_untouched() -> None:
    """T6: diff reports added, removed, changed (each contract part) and untouched, sorted."""
    base = [
        raw("zeta"),
        raw("alpha"),
        raw("desc", description="one"),
        raw("params", inputSchema={"type": "object", "properties": {}}),
        raw("ann", annotations={"readOnlyHint": True}),
        raw("out", outputSchema={"type": "object"}),
        raw("Case"),
        raw("gone"),
        raw("gone2"),
        raw("numeric", inputSchema={"type": "object", "maxProperties": 1}),
    ]
    newer = [
        raw("alpha"),
        raw("zeta"),
        raw("desc", description="two"),
        raw("params", inputSchema={"type": "object", "properties": {"q": {}}}),
        raw("ann", annotations={"readOnlyHint": False}),
        raw("out", outputSchema={"type": "object", "required": ["x"]}),
        raw("CASE"),
        raw("numeric", inputSchema={"type": "object", "maxProperties": True}),
        raw("new2"),
        raw("new1"),
    ]
    old_cat = Catalogue.from_listing("s", base)
    new_cat = Catalogue.from_listing("s", newer)
    report = old_cat.diff(new_cat)
    assert report == SyncReport(
        added=("s/new1", "s/new2"),
        removed=("s/gone", "s/gone2"),
        changed=("s/ann", "s/case", "s/desc", "s/numeric", "s/out", "s/params"),
        untouched=("s/alpha", "s/zeta"),
    )


def test_t6_same_contract_parts() -> None:
    """T6: same_contract compares name, description, parameters, output schema, annotations."""
    base = Tool(
        id="s/x",
        name="x",
        server="s",
        description="d",
        parameters={"type": "object", "properties": {"n": {"maximum": 1}}},
        output_schema={"type": "object"},
        annotations={"a": [1, 2]},
    )
    same = Tool(
        id="s/x",
        name="x",
        server="s",
        description="d",
        parameters={"type": "object", "properties": {"n": {"maximum": 1}}},
        output_schema={"type": "object"},
        annotations={"a": [1, 2]},
        title="titles are not part of the contract",
    )
    assert base.same_contract(same)
    variants: list[dict[str, Any]] = [
        {"name": "X"},
        {"description": "e"},
        {"parameters": {"type": "object", "properties": {"n": {"maximum": 1.0}}}},
        {"parameters": {"type": "object", "properties": {"n": {"maximum": True}}}},
        {"parameters": {"type": "object"}},
        {"output_schema": None},
        {"annotations": {"a": [1]}},
        {"annotations": {"a": [1, 3]}},
        {"annotations": {"b": [1, 2]}},
    ]
    fields = {
        "id": "s/x",
        "name": "x",
        "server": "s",
        "description": "d",
        "parameters": base.parameters,
        "output_schema": base.output_schema,
        "annotations": base.annotations,
    }
    for change in variants:
        other = Tool(**{**fields, **change})
        assert not base.same_contract(other), change


def test_catalogue_container_protocol() -> None:
    """T1/T4: get, len, iter, contains, ids, repr."""
    cat = Catalogue.from_listing("srv", [raw("b"), raw("a")])
    assert len(cat) == 2
    assert [t.id for t in cat] == ["srv/b", "srv/a"]
    assert cat.ids() == ("srv/b", "srv/a")
    assert cat.get("srv/a") is cat.tools[1]
    assert cat.get("srv/A") is None
    assert "srv/a" in cat and "srv/zz" not in cat and 3 not in cat
    assert cat.server == "srv"
    assert "srv" in repr(cat) and "2" in repr(cat)
    empty = Catalogue("srv")
    assert len(empty) == 0 and empty.diff(cat).added == ("srv/a", "srv/b")


# --- T6 properties -------------------------------------------------------------

_json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_name = st.text(alphabet="abcABC_-.", min_size=1, max_size=3)
_raw_tool = st.builds(
    lambda name, desc, props, ann: {
        "name": name,
        "description": desc,
        "inputSchema": {"type": "object", "properties": props},
        "annotations": ann,
    },
    _name,
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=2), _json, max_size=2),
    st.dictionaries(st.text(max_size=2), _json, max_size=2),
)


@given(st.lists(_raw_tool, max_size=8))
def test_t6_property_diff_with_itself_is_untouched(tools: list[dict[str, Any]]) -> None:
    """T6 property: diffing a catalogue with itself (or a rebuild) is all-untouched."""
    cat = Catalogue.from_listing("s", tools)
    again = Catalogue.from_listing("s", tools)
    for report in (cat.diff(cat), cat.diff(again)):
        assert report.added == report.removed == report.changed == ()
        assert report.untouched == tuple(sorted(t.id for t in cat))


@given(st.lists(_raw_tool, max_size=8), st.lists(_raw_tool, max_size=8))
def test_t6_property_report_partitions_union(
    old: list[dict[str, Any]], new: list[dict[str, Any]]
) -> None:
    """T6 property: added/removed/changed/untouched are sorted and partition the id union."""
    a = Catalogue.from_listing("s", old)
    b = Catalogue.from_listing("s", new)
    report = a.diff(b)
    parts = (report.added, report.removed, report.changed, report.untouched)
    for part in parts:
        assert list(part) == sorted(part)
    flat = [i for part in parts for i in part]
    assert len(flat) == len(set(flat))
    assert set(flat) == {t.id for t in a} | {t.id for t in b}
    assert set(report.added) == {t.id for t in b} - {t.id for t in a}
    assert set(report.removed) == {t.id for t in a} - {t.id for t in b}


@given(st.lists(_json | _raw_tool, max_size=6))
def test_t2_property_listing_never_raises(items: list[object]) -> None:
    """T2/T3 property: any JSON-shaped listing builds a catalogue of valid, unique ids."""
    cat = Catalogue.from_listing("s", items)
    ids = [t.id for t in cat]
    assert len(ids) == len(set(ids))
    for tool in cat:
        assert is_valid_segment(tool.id.removeprefix("s/"))
        assert isinstance(tool.parameters, dict)
        assert tool.description


@given(
    name=st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True),
    description=st.none() | st.text(max_size=20),
    title=st.none() | st.text(max_size=20),
    annotations=st.none()
    | st.dictionaries(
        st.sampled_from(["title", "readOnlyHint"]), st.text(max_size=5) | st.booleans()
    ),
    output_schema=st.none() | st.just({"type": "object"}),
)
def test_t3_a_listed_tool_is_the_tool_the_constructor_builds(
    name: str,
    description: str | None,
    title: str | None,
    annotations: dict[str, Any] | None,
    output_schema: dict[str, Any] | None,
) -> None:
    """T3: listing builds its tools without the dataclass constructor (B3: thousands of
    them); each has exactly the constructor's fields and compares, hashes and prints the same."""
    import dataclasses

    item = raw(name, description=description, title=title, annotations=annotations)
    if output_schema is not None:
        item["outputSchema"] = output_schema
    (listed,) = Catalogue.from_listing("srv", [item], validate_schemas=False)
    built = Tool(
        id=listed.id,
        name=listed.name,
        server=listed.server,
        description=listed.description,
        parameters=listed.parameters,
        output_schema=listed.output_schema,
        annotations=listed.annotations,
        title=listed.title,
    )
    assert vars(listed).keys() == {f.name for f in dataclasses.fields(Tool) if f.init}
    assert vars(listed) == vars(built)
    assert listed == built and hash(listed) == hash(built) and repr(listed) == repr(built)
    assert listed.id == "srv/" + ascii_lower(name)


# --- K7: what an unknown id probably meant ----------------------------------------------


def test_K7_suggestions_for_an_unknown_id() -> None:
    """K7: a different case, a plain tool name, another server's prefix; never the id itself."""
    from mcpcore.base._tools import suggest_ids

    cat = Catalogue.from_listing("py", [raw("add"), raw("Sub"), raw("a.b")])
    assert cat.ids() == ("py/add", "py/sub", "py/a.b")
    assert cat.suggest("add") == ("py/add",)
    assert cat.suggest("SUB") == ("py/sub",)
    assert cat.suggest("Py/Add") == ("py/add",)
    assert cat.suggest("js/add") == ("py/add",)
    assert cat.suggest("a.b") == ("py/a.b",)
    assert cat.suggest("mul") == () and cat.suggest("py/mul") == ()
    ids = ["a/add", "b/add", "c/add", "d/add"]
    assert suggest_ids("add", ids) == ("a/add", "b/add", "c/add")  # at most three
    assert suggest_ids("a/add", ids) == ("b/add", "c/add", "d/add")  # never the id itself
    assert suggest_ids("A/ADD", ids) == ("a/add",)  # the exact id in another case wins
    assert suggest_ids("add", ["py.add"], ".") == ("py.add",)
    assert suggest_ids(None, ids) == () and suggest_ids("add", ids, "") == ()


# --- K5: jsonschema comes with the package ----------------------------------------------


def test_K5_jsonschema_is_a_regular_dependency_and_the_schema_extra_stays() -> None:
    """K5: validation is on out of the box: jsonschema is a dependency, not an extra
    (``mcpcore[schema]`` still installs, as an empty alias), and the core still imports
    it lazily only (X3, checked by test_core_purity)."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0] for requirement in project["dependencies"]]
    assert "jsonschema" in names
    assert project["optional-dependencies"]["schema"] == []


def test_K5_the_missing_jsonschema_warning_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """K5: should jsonschema be missing anyway, the one warning says what to run."""
    monkeypatch.setitem(__import__("sys").modules, "jsonschema", None)
    monkeypatch.setitem(__import__("sys").modules, "jsonschema.validators", None)
    with caplog.at_level(logging.WARNING, logger="mcpcore.schema"):
        Catalogue.from_listing("srv", [raw("a", outputSchema={"type": "object"})])
    [record] = [r for r in caplog.records if r.name == "mcpcore.schema"]
    assert "outputSchema validation is off" in record.getMessage()
    assert "pip install jsonschema" in record.getMessage()
