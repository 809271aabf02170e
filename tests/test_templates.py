"""RFC 6570 URI templates, levels 1-4 (F3): the RFC's own examples, hypothesis properties,
and the errors a host sees for a bad template or a missing value."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from mcpcore import InvalidArguments, RemoteProtocolError, ResourceTemplate
from mcpcore.features._templates import expand_template, template_variables

# RFC 6570 section 3.2's variables
VALUES: dict[str, Any] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}

RFC = [
    # level 1
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    # level 2
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
    # level 3
    ("map?{x,y}", "map?1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    ("X{.var}", "X.value"),
    ("X{.x,y}", "X.1024.768"),
    ("{/var}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    # level 4
    ("{var:3}", "val"),
    ("{var:30}", "value"),
    ("{list}", "red,green,blue"),
    ("{list*}", "red,green,blue"),
    ("{keys}", "semi,%3B,dot,.,comma,%2C"),
    ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
    ("{+path:6}/here", "/foo/b/here"),
    ("{+list}", "red,green,blue"),
    ("{+list*}", "red,green,blue"),
    ("{+keys}", "semi,;,dot,.,comma,,"),
    ("{+keys*}", "semi=;,dot=.,comma=,"),
    ("{#path:6}/here", "#/foo/b/here"),
    ("{#list}", "#red,green,blue"),
    ("{#list*}", "#red,green,blue"),
    ("{#keys}", "#semi,;,dot,.,comma,,"),
    ("{#keys*}", "#semi=;,dot=.,comma=,"),
    ("X{.var:3}", "X.val"),
    ("X{.list}", "X.red,green,blue"),
    ("X{.list*}", "X.red.green.blue"),
    ("X{.keys}", "X.semi,%3B,dot,.,comma,%2C"),
    ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
    ("{/var:1,var}", "/v/value"),
    ("{/list}", "/red,green,blue"),
    ("{/list*}", "/red/green/blue"),
    ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ("{/keys}", "/semi,%3B,dot,.,comma,%2C"),
    ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
    ("{;hello:5}", ";hello=Hello"),
    ("{;list}", ";list=red,green,blue"),
    ("{;list*}", ";list=red;list=green;list=blue"),
    ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
    ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
    ("{?var:3}", "?var=val"),
    ("{?list}", "?list=red,green,blue"),
    ("{?list*}", "?list=red&list=green&list=blue"),
    ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
    ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
    ("{&var:3}", "&var=val"),
    ("{&list}", "&list=red,green,blue"),
    ("{&list*}", "&list=red&list=green&list=blue"),
    ("{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"),
    ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
    # section 3.2's extra cases
    ("{count}", "one,two,three"),
    ("{count*}", "one,two,three"),
    ("{/count}", "/one,two,three"),
    ("{/count*}", "/one/two/three"),
    ("{;count}", ";count=one,two,three"),
    ("{;count*}", ";count=one;count=two;count=three"),
    ("{?count}", "?count=one,two,three"),
    ("{?count*}", "?count=one&count=two&count=three"),
    ("{&count*}", "&count=one&count=two&count=three"),
    ("{half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("{+half}", "50%25"),
    ("{.dom*}", ".example.com"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{?var,empty}", "?var=value&empty="),
    ("{?var,undef}", "?var=value"),
    ("{#var,empty_keys}", "#value"),
    ("{keys*,undef}", "semi=%3B,dot=.,comma=%2C"),
    ("{/dub}", "/me%2Ftoo"),
    ("{+dub}", "me/too"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,empty}", "1024,"),
    ("{?empty_keys}", ""),
]


@pytest.mark.parametrize("template, expected", RFC)
def test_F3_the_rfcs_examples_expand_as_the_rfc_says(template: str, expected: str) -> None:
    assert expand_template(template, VALUES, require_all=False) == expected


# RFC 3986's pct-encoded is "%" HEXDIG HEXDIG, and ABNF's HEXDIG matches either
# case: a template's literal "%0a" is copied as written (RFC 6570 §3.1), and is
# valid, though uppercase is what RFC 3986 recommends a producer write.
_URI_CHARS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")
_OPS = ["", "+", "#", ".", "/", ";", "?", "&"]
names = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
scalars = st.text(max_size=12)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(names, scalars, max_size=3))
literals = st.text(alphabet=st.characters(blacklist_characters="{}", codec="utf-8"), max_size=8)


@st.composite
def templates(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    parts: list[str] = []
    given_values: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 4))):
        parts.append(draw(literals))
        op = draw(st.sampled_from(_OPS))
        specs = []
        fresh = names.filter(lambda name: name not in given_values)
        for name in draw(st.lists(fresh, min_size=1, max_size=3, unique=True)):
            value = draw(values)
            given_values[name] = value
            modifier = draw(st.sampled_from(["", "*"] + ([":3"] if isinstance(value, str) else [])))
            specs.append(name + modifier)
        parts.append("{" + op + ",".join(specs) + "}")
    parts.append(draw(literals))
    return "".join(parts), given_values


@given(templates())
@example(("%0a", {}))  # found at 3,000 examples: a literal's lowercase escape is kept, and valid
def test_F3_an_expansion_is_always_a_valid_uri_reference(case: tuple[str, dict[str, Any]]) -> None:
    template, given_values = case
    assert _URI_CHARS.fullmatch(expand_template(template, given_values, require_all=False))


@given(scalars)
def test_F3_a_simple_expansion_encodes_every_reserved_character_and_round_trips(value: str) -> None:
    expanded = expand_template("{v}", {"v": value})
    assert not set(expanded) & set(":/?#[]@!$&'()*+,;=")
    assert unquote(expanded, errors="surrogatepass") == value


@given(st.text(alphabet=":/?#[]@!$&'()*+,;=abc", max_size=12))
def test_F3_reserved_expansion_keeps_reserved_characters(value: str) -> None:
    assert expand_template("{+v}", {"v": value}) == value
    assert expand_template("{#v}", {"v": value}) == "#" + value  # an empty string is defined


@given(templates())
def test_F3_with_no_values_only_the_literal_parts_are_left(case: tuple[str, dict[str, Any]]) -> None:
    template, _ = case
    literals_alone = "".join(expand_template(part, {}) for part in re.split(r"\{[^}]*\}", template))
    assert expand_template(template, {}, require_all=False) == literals_alone


def test_F3_a_missing_variable_is_named_before_anything_is_read() -> None:
    with pytest.raises(InvalidArguments, match="'item'"):
        expand_template("peer://items/{item}{?page}", {"page": 2})
    assert expand_template("peer://items/{item}{?page}", {"item": "a b"}, require_all=False) == "peer://items/a%20b"
    assert template_variables("x{a}{?b,a}{/c*}") == ("a", "b", "c")


@pytest.mark.parametrize(
    "template", ["a{b", "a}b", "{!x}", "{x:0}", "{x:12345}", "{x*:3}", "{bad name}", "{x:}", "{}", "{.}"]
)
def test_F3_a_malformed_template_is_a_protocol_error_naming_it(template: str) -> None:
    with pytest.raises(RemoteProtocolError, match="malformed"):
        expand_template(template, {"x": "1"}, require_all=False)


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", [object()]])
def test_F3_a_value_of_another_type_is_refused(value: Any) -> None:
    with pytest.raises(InvalidArguments):
        expand_template("{x}", {"x": value})


def test_F3_a_listed_template_expands_into_the_uri_to_read() -> None:
    template = ResourceTemplate(uri_template="file:///{+dir}/{name}{?rev}", name="files")
    assert template.variables == ("dir", "name", "rev")
    assert template.expand({"dir": "a/b", "name": "c d.txt"}, require_all=False) == "file:///a/b/c%20d.txt"
    assert template.expand({"dir": "x", "name": "y", "rev": 3}) == "file:///x/y?rev=3"
