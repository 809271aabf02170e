"""Skills (SEP-2640): listing without fetching, reading one file verified (N4).

The core's rules are tested on a ``ClientSession`` with nothing but messages
(the entry's reading, the size, digest and frontmatter checks, the bounds, the
directory walk); hypothesis holds two rules for all inputs; then both drivers
(anyio on asyncio and trio, threaded) and the hub against the demo server,
whose two skills are one static and one dynamic with a directory.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore_anyio
import mcpcore_threaded
from drivers import DRIVERS, backend_of, open_client
from mcpcore import (
    InvalidValue,
    LimitExceeded,
    NotOffered,
    Skill,
    SkillFileContent,
    SkillMismatch,
)
from mcpcore.base._events import CallFailed, RequestSucceeded, SessionReady
from mcpcore.features._listing import Listing
from mcpcore.features._resources import Resource
from mcpcore.features._skills import (
    DirectoryWalk,
    digest_matches,
    find_skill,
    parse_frontmatter,
    read_file_ask,
    skill_files,
    skills_ask,
)
from mcpcore.session._session import ClientSession, SessionOptions
from mcpcore.wire._jsonrpc import Result
from mcpcore_demo import DemoServer

NOW = 1000.0
EXT = "io.modelcontextprotocol/skills"
CAPS: dict[str, Any] = {"resources": {}, "extensions": {EXT: {}}}
SKILL_MD = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n"
FORMS = "Supporting content.\n"
ROOT = "skill://pdf-processing"


def digest(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry(skill_md: str = SKILL_MD, **frontmatter: Any) -> dict[str, Any]:
    return {
        "uri": f"{ROOT}/SKILL.md",
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents",
            **frontmatter,
        },
        "resources": [
            {"uri": f"{ROOT}/SKILL.md", "digest": digest(skill_md), "size": len(skill_md.encode())},
            {
                "uri": f"{ROOT}/references/FORMS.md",
                "digest": digest(FORMS),
                "size": len(FORMS.encode()),
            },
        ],
    }


def ready(capabilities: dict[str, Any] | None = None) -> ClientSession:
    session = ClientSession(SessionOptions(server_name="srv", protocol="legacy"))
    session.start(NOW)
    [init] = session.take_outgoing()
    init_result = {
        "protocolVersion": "2025-11-25",
        "capabilities": CAPS if capabilities is None else capabilities,
        "serverInfo": {"name": "fake", "version": "1"},
    }
    session.receive_message(Result(id=init.id, result=init_result), NOW)  # type: ignore[arg-type]
    session.take_outgoing()
    assert any(isinstance(e, SessionReady) for e in session.take_events())
    return session


def exchange(session: ClientSession, ask: Any, result: Any) -> tuple[Any, Any]:
    """Send ``ask``, answer it with ``result``; (the request sent, its value or error)."""
    call_id = session.request(ask, NOW)
    [request] = session.take_outgoing()
    session.receive_message(Result(id=request.id, result=result), NOW)
    [event] = [e for e in session.take_events() if getattr(e, "call_id", None) == call_id]
    if isinstance(event, CallFailed):
        return request, event.error
    assert isinstance(event, RequestSucceeded)
    return request, event.value


def listed(*entries: dict[str, Any], **bounds: Any) -> Listing[Skill]:
    session = ready()
    request, value = exchange(session, skills_ask("srv", CAPS, **bounds), {"skills": list(entries)})
    assert request.method == "skills/list"
    if isinstance(value, Exception):
        raise value
    return value  # type: ignore[no-any-return]


def read(skill: Skill, path: str, text: str | None = None, blob: bytes | None = None) -> Any:
    uri = f"{skill.root}/{path}"
    part: dict[str, Any] = {"uri": uri, "mimeType": "text/markdown"}
    if blob is not None:
        part["blob"] = base64.b64encode(blob).decode()
    else:
        part["text"] = text
    request, value = exchange(ready(), read_file_ask(skill, path), {"contents": [part]})
    assert request.method == "resources/read" and request.params["uri"] == uri
    return value


# --- N4: the listing -------------------------------------------------------------------------


def test_N4_listing_gives_typed_entries_and_sends_skills_list_only() -> None:
    """N4: the entry's name, description, frontmatter and files; one request, no file read."""
    session = ready()
    request, skills = exchange(session, skills_ask("srv", CAPS), {"skills": [entry()]})
    assert request.method == "skills/list" and session.take_outgoing() == []
    [skill] = skills
    assert (skill.name, skill.description, skill.root) == (
        "pdf-processing",
        entry()["frontmatter"]["description"],
        ROOT,
    )
    assert [f.path for f in skill.files] == ["SKILL.md", "references/FORMS.md"]
    assert skill.file("SKILL.md").size == len(SKILL_MD) and not skill.dynamic  # type: ignore[union-attr]
    assert skill_files(skill, CAPS) == ("SKILL.md", "references/FORMS.md")


def test_N4_a_server_without_the_extension_is_not_asked() -> None:
    with pytest.raises(NotOffered, match="skills extension"):
        skills_ask("srv", {"resources": {}})


@pytest.mark.parametrize(
    "bad",
    [
        {"uri": f"{ROOT}/README.md"},  # not a SKILL.md
        {"frontmatter": "name: x"},  # not an object
        {"frontmatter": {"name": "pdf-processing"}},  # no description
        {"resources": [{"uri": "skill://elsewhere/SKILL.md", "digest": "sha256:00", "size": 1}]},
        {"resources": [{"uri": f"{ROOT}/SKILL.md", "digest": "sha256:00", "size": -1}]},
        {"resources": [{"uri": f"{ROOT}/../x/SKILL.md", "digest": "sha256:00", "size": 1}]},
        {
            "resources": [{"uri": f"{ROOT}/other.md", "digest": "sha256:00", "size": 1}]
        },  # no SKILL.md
        {"resources": 7},
    ],
)
def test_N4_a_malformed_entry_is_dropped_and_counted(bad: dict[str, Any]) -> None:
    skills = listed({**entry(), **bad}, entry())
    assert len(skills) == 1 and skills.dropped == 1


def test_N4_the_seps_limits_are_bounds_named_when_overrun() -> None:
    """N4, P6: more files, or more bytes, than a skill may have raises LimitExceeded naming the bound."""
    many = entry()
    many["resources"] += [
        {"uri": f"{ROOT}/f{i}", "digest": digest(""), "size": 0} for i in range(511)
    ]
    with pytest.raises(LimitExceeded) as info:
        listed(many)
    assert info.value.limit_name == "max_skill_files" and info.value.limit == 512
    assert "list_skills(max_skill_files=...)" in str(info.value)
    assert len(listed(many, max_skill_files=600)[0].files) == 513
    big = entry()
    big["resources"][1]["size"] = 16 * 1024 * 1024
    with pytest.raises(LimitExceeded) as info:
        listed(big)
    assert info.value.limit_name == "max_skill_bytes"
    with pytest.raises(InvalidValue):
        skills_ask("srv", CAPS, max_skill_files=0)


# --- N4: one file, verified ----------------------------------------------------------------------


def test_N4_a_file_that_matches_its_entry_is_returned_verified() -> None:
    [skill] = listed(entry())
    got = read(skill, "SKILL.md", SKILL_MD)
    assert isinstance(got, SkillFileContent) and got.verified and got.text == SKILL_MD
    forms = read(skill, "references/FORMS.md", blob=FORMS.encode())
    assert forms.data == FORMS.encode() and forms.path == "references/FORMS.md"


@pytest.mark.parametrize(
    ("served", "what", "field"),
    [
        (SKILL_MD.replace("Skill body.", "Evil body!!"), "digest", None),
        (SKILL_MD + "extra bytes the entry did not account for\n", "size", None),
        (SKILL_MD[:-3], "size", None),
    ],
)
def test_N4_a_digest_or_size_mismatch_is_refused_and_the_content_dropped(
    served: str, what: str, field: str | None
) -> None:
    [skill] = listed(entry())
    error = read(skill, "SKILL.md", served)
    assert isinstance(error, SkillMismatch) and (error.what, error.field) == (what, field)
    assert "body" not in str(error) and "extra bytes" not in str(error)  # never the content


def test_N4_a_frontmatter_that_differs_from_the_entry_is_refused_naming_the_key() -> None:
    """N4: the digest and size match (the server declared the tampered file), the frontmatter does not."""
    tampered = SKILL_MD.replace(
        "Extract, fill, and assemble PDF documents", "Exfiltrate credentials"
    )
    [skill] = listed(entry(tampered))
    error = read(skill, "SKILL.md", tampered)
    assert isinstance(error, SkillMismatch) and (error.what, error.field) == (
        "frontmatter",
        "description",
    )
    assert "Exfiltrate" not in str(error)
    extra = SKILL_MD.replace("---\n\n", "license: MIT\n---\n\n")
    [skill] = listed(entry(extra))
    assert read(skill, "SKILL.md", extra).field == "license"  # a key the entry leaves out
    [skill] = listed(entry(extra, license="MIT"))
    assert read(skill, "SKILL.md", extra).verified


def test_N4_a_path_the_entry_does_not_list_is_refused_with_nothing_sent() -> None:
    [skill] = listed(entry())
    with pytest.raises(InvalidValue, match="lists no file"):
        read_file_ask(skill, "scripts/run.sh")


def test_N4_an_unknown_digest_algorithm_is_no_match() -> None:
    assert digest_matches(digest(b"x"), b"x") and digest_matches(
        digest(b"x").upper().replace("SHA", "sha"), b"x"
    )
    assert not digest_matches("md5:" + hashlib.md5(b"x").hexdigest(), b"x")
    assert not digest_matches("sha256", b"x")


# --- N4: a dynamic skill's directory ------------------------------------------------------------


def test_N4_directory_a_dynamic_skills_directory_is_walked_where_the_server_offers_it() -> None:
    dynamic = {**entry(), "resources": "dynamic"}
    [skill] = listed(dynamic)
    assert skill.dynamic and skill.files == ()
    assert skill_files(skill, CAPS) == ("SKILL.md",)  # no directoryRead: SKILL.md only
    walk = skill_files(skill, {"extensions": {EXT: {"directoryRead": True}}})
    assert isinstance(walk, DirectoryWalk)
    session = ready({"extensions": {EXT: {"directoryRead": True}}})
    answers = {
        ROOT: [
            {"uri": f"{ROOT}/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
            {"uri": f"{ROOT}/references", "name": "references", "mimeType": "inode/directory"},
            {"uri": "skill://other/SKILL.md", "name": "SKILL.md"},  # outside: ignored
        ],
        f"{ROOT}/references": [{"uri": f"{ROOT}/references/FORMS.md", "name": "FORMS.md"}],
    }
    while (ask := walk.next_ask()) is not None:
        request, listing = exchange(session, ask, {"resources": answers[request_uri(ask)]})
        assert request.method == "resources/directory/read"
        walk.add(listing)
    assert walk.paths == ["SKILL.md", "references/FORMS.md"]
    unverified = read(skill, "references/FORMS.md", FORMS)
    assert not unverified.verified and unverified.text == FORMS


def request_uri(ask: Any) -> str:
    return str(ask.params["uri"])


def test_N4_directory_a_directory_with_more_entries_than_the_bound_is_refused() -> None:
    [skill] = listed({**entry(), "resources": "dynamic"})
    walk = DirectoryWalk(skill, max_files=2)
    walk.next_ask()
    many = [Resource(f"{ROOT}/f{i}", f"f{i}") for i in range(3)]
    with pytest.raises(LimitExceeded, match="max_skill_files"):
        walk.add(Listing(tuple(many)))


# --- properties ----------------------------------------------------------------------------------


# Pieces of the block YAML skills use, for the properties to put together.
YAMLISH = st.sampled_from(
    [
        "\n",
        "\n  ",
        "\n    ",
        "\n- ",
        "\n  - ",
        "name: ",
        "description: ",
        "meta:",
        "  x: ",
        "- a: ",
        "a",
        "b c",
        "2",
        "1.0",
        "false",
        "|",
        ">",
        ">+",
        "|-",
        "\n\n",
        "'it''s'",
        '"q\\"x"',
        "~",
        "[1, two]",
        " #c",
        "é",
        "http://x.y/z",
        "a-b_c",
    ]
)
YAMLISH_TEXT = st.lists(YAMLISH, max_size=40).map("".join)


@given(st.one_of(st.text(max_size=300), YAMLISH_TEXT))
def test_N4_parsing_any_frontmatter_raises_nothing_but_skill_mismatch(text: str) -> None:
    """N4: whatever a server sends as SKILL.md, the reading is a dict or SkillMismatch."""
    for candidate in (text, "---\n" + text, "---\n" + text + "\n---\n"):
        try:
            assert isinstance(parse_frontmatter(candidate), dict)
        except SkillMismatch as exc:
            assert exc.what == "frontmatter"


@given(YAMLISH_TEXT)
def test_N4_frontmatter_that_is_read_reads_as_yaml_does(body: str) -> None:
    """N4: whenever this reader accepts a frontmatter, it reads what a YAML library
    reads (the entry's JSON is the server's YAML reading of the same text)."""
    yaml = pytest.importorskip("yaml")
    try:
        ours = parse_frontmatter("---\n" + body + "\n---\n")
    except SkillMismatch:
        return
    theirs = yaml.safe_load(body + "\n") or {}
    assert json.loads(json.dumps(theirs)) == ours


@given(st.binary(min_size=1, max_size=200), st.data())
def test_N4_the_digest_check_rejects_any_flipped_byte(data: bytes, draw: st.DataObject) -> None:
    index = draw.draw(st.integers(0, len(data) - 1))
    bit = draw.draw(st.integers(0, 7))
    flipped = bytearray(data)
    flipped[index] ^= 1 << bit
    assert digest_matches(digest(data), data) and not digest_matches(digest(data), bytes(flipped))


def test_N4_block_yaml_frontmatter_reads_as_json_does() -> None:
    text = (
        "---\nname: x\ndescription: >\n  folded\n  text\nmetadata:\n  owner: me\n  version: 1.0\n"
        "allowed-tools:\n  - bash\n  - read\ntags: [a, b]\nq: \"quoted: yes\"\ns: 'it''s'\non: true\nn: ~\n---\nbody\n"
    )
    assert parse_frontmatter(text) == {
        "name": "x",
        "description": "folded text\n",
        "metadata": {"owner": "me", "version": 1.0},
        "allowed-tools": ["bash", "read"],
        "tags": ["a", "b"],
        "q": "quoted: yes",
        "s": "it's",
        "on": True,
        "n": None,
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("a: |\n  one\n  two\nb: x\n", {"a": "one\ntwo\n", "b": "x"}),
        ("a: |-\n  one\n\n  two\n", {"a": "one\n\ntwo"}),
        ("a: |+\n  one\n\n", {"a": "one\n\n"}),
        (
            "a: >\n  one\n  two\n\n  three\n    indented\n  four\n",
            {"a": "one two\nthree\n  indented\nfour\n"},
        ),
        ("a: |\n\n", {"a": ""}),
        ("a: |+\n\n\n", {"a": "\n\n"}),
        ("a: first\n  second\n\n  third\n", {"a": "first second\nthird"}),
        ("a:\n  just text\n", {"a": "just text"}),
        ("a:\n- x\n- y\n", {"a": ["x", "y"]}),
        ("a:\n  - x\n  -\n    b: 1\n", {"a": ["x", {"b": 1}]}),
        (
            "a: 'it''s'\nb: \"\\u00e9\\n\"\nc: [1, two, 3.5]\nd: {\"k\": 1}\ne: ~\nf: -1\ng: .5\n",
            {
                "a": "it's",
                "b": "é\n",
                "c": [1, "two", 3.5],
                "d": {"k": 1},
                "e": None,
                "f": -1,
                "g": 0.5,
            },
        ),
        ("a: b # comment\n# whole line\nc: d\n", {"a": "b", "c": "d"}),
        ("  a: 1\n  b: 2\n", {"a": 1, "b": 2}),
    ],
)
def test_N4_frontmatter_cases_read_as_yaml(body: str, expected: dict[str, Any]) -> None:
    assert parse_frontmatter("---\n" + body + "---\n") == expected


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter\n",
        "---\nname: x\n",  # never closed
        "---\na: 1\na: 2\n---\n",  # a key twice
        "---\na:\tb\n---\n",
        "---\n--- a\n---\n",
        "---\na: b: c\n---\n",
        "---\na: |\n    x\n  y\n---\n",
        "---\na: |\n\n    \n  y\n---\n",
        "---\na: &anchor x\n---\n",
        '---\na: "\\x41"\n---\n',
        "---\na: 'open\n---\n",
        "---\na: x # c\n  more\n---\n",
        "---\n- a\n---\n",  # not a mapping
        "---\na: |2\n  x\n---\n",
        "---\na: [b, [c]]\n---\n",
        "---\n  a: 1\n b: 2\n---\n",
        "---\na: 1\n  b: 2\n---\n",
    ],
)
def test_N4_frontmatter_outside_what_is_read_is_a_mismatch(text: str) -> None:
    with pytest.raises(SkillMismatch) as info:
        parse_frontmatter(text, skill="s")
    assert (info.value.what, info.value.field) == ("frontmatter", None)


def test_N4_odd_answers_and_odd_asks() -> None:
    """N4: two parts for one file, a blob of the wrong length, a SKILL.md that is not
    UTF-8, an unknown skill, a path outside the root: each refused, naming it."""
    [skill] = listed(entry())
    session = ready()
    part = {"uri": f"{ROOT}/SKILL.md", "text": SKILL_MD}
    _, error = exchange(session, read_file_ask(skill), {"contents": [part, part]})
    assert isinstance(error, SkillMismatch) and error.what == "contents"
    assert read(skill, "SKILL.md", blob=SKILL_MD.encode() + b"!").what == "size"
    latin = SKILL_MD.replace("Skill body.", "caf\xe9").encode("latin-1")
    [odd] = listed(
        {
            **entry(),
            "resources": [{"uri": f"{ROOT}/SKILL.md", "digest": digest(latin), "size": len(latin)}],
        }
    )
    got = read(odd, "SKILL.md", blob=latin)
    assert isinstance(got, SkillMismatch) and got.what == "frontmatter"
    with pytest.raises(InvalidValue, match="lists no skill 'nope'"):
        find_skill(listed(entry()), "nope", "srv")
    with pytest.raises(InvalidValue):
        read_file_ask(skill, "")
    with pytest.raises(InvalidValue):
        read_file_ask("pdf-processing", "SKILL.md")  # type: ignore[arg-type]
    [dynamic] = listed({**entry(), "resources": "dynamic"})
    with pytest.raises(InvalidValue, match="not a path under"):
        read_file_ask(dynamic, "../other/SKILL.md")
    with pytest.raises(InvalidValue):
        skill_files("pdf-processing", CAPS)  # type: ignore[arg-type]
    blob = SkillFileContent("s", "p", "u", b"\xff")
    assert blob.text is None and "1 bytes" in repr(blob)
    assert (
        str(skills_ask("srv", CAPS).context) == "srv"
        and str(read_file_ask(skill).context) == skill.uri
    )


def test_N4_the_entry_frontmatter_is_compared_as_json() -> None:
    """N4: 1 and 1.0 are one number; true is no number; lists and objects compare
    item by item."""
    text = SKILL_MD.replace("---\n\n", "n: 1.0\nflag: true\ntags: [a, b]\nmeta:\n  k: v\n---\n\n")
    [skill] = listed(entry(text, n=1, flag=True, tags=["a", "b"], meta={"k": "v"}))
    assert read(skill, "SKILL.md", text).verified
    [skill] = listed(entry(text, n=1, flag=1, tags=["a", "b"], meta={"k": "v"}))
    assert read(skill, "SKILL.md", text).field == "flag"
    [skill] = listed(entry(text, n=1, flag=True, tags=["a"], meta={"k": "v"}))
    assert read(skill, "SKILL.md", text).field == "tags"


# --- both drivers, and the hub, against the demo server ---------------------------------------------


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return backend_of(driver)


@pytest.mark.anyio
async def test_N4_both_drivers_list_read_and_walk_skills(driver: str) -> None:
    """N4: listing reads no file; a read is verified; a tampered read raises
    SkillMismatch; a dynamic skill's files come from its directory."""
    from mcpcore_demo import FaultResponse, ReceivedRequest

    tamper = {"on": False}

    def fault(request: ReceivedRequest) -> FaultResponse | None:
        if tamper["on"] and request.rpc_method == "resources/read":
            uri = request.json["params"]["uri"]  # type: ignore[index]
            body = {
                "jsonrpc": "2.0",
                "id": request.json["id"],
                "result": {"contents": [{"uri": uri, "text": "evil\n"}]},
            }  # type: ignore[index]
            return FaultResponse.respond(
                200, {"content-type": "application/json"}, json.dumps(body).encode()
            )
        return None

    async with DemoServer(fault=fault).serve() as running:
        async with open_client(driver, "demo", {"url": running.url}) as face:
            client = face.client
            with anyio.fail_after(20):
                assert (await face.ready(10)).ok and client.offers("skills")
                skills = await face._run(client.list_skills)
                assert [s.name for s in skills] == ["greeting-style", "release-notes"]
                reads = [r for r in running.server.received if r.rpc_method == "resources/read"]
                assert reads == []  # N4: no prefetch
                style, notes = skills
                got = await face._run(client.read_skill_file, style, "references/TONE.md")
                assert got.verified and got.text.startswith("Warm")
                by_name = await face._run(client.read_skill_file, "greeting-style")
                assert by_name.path == "SKILL.md" and "Greet by name" in by_name.text
                assert await face._run(client.list_skill_files, style) == (
                    "SKILL.md",
                    "references/TONE.md",
                )
                assert await face._run(client.list_skill_files, notes) == (
                    "SKILL.md",
                    "templates/short.md",
                )
                tamper["on"] = True
                with pytest.raises(SkillMismatch) as info:
                    await face._run(client.read_skill_file, style, "SKILL.md")
                assert info.value.what == "size" and "evil" not in str(info.value)


@pytest.mark.anyio
async def test_N4_the_hub_lists_every_servers_skills_tagged(driver: str, tmp_path: Path) -> None:
    async with DemoServer().serve() as one, DemoServer().serve() as two:
        path = tmp_path / "mcp.json"
        path.write_text(
            json.dumps({"mcpServers": {"one": {"url": one.url}, "two": {"url": two.url}}})
        )
        module = mcpcore_threaded if driver == "threaded" else mcpcore_anyio
        hub = module.McpHub.from_mcp_json(str(path))
        with anyio.fail_after(20):
            if driver == "threaded":
                await anyio.to_thread.run_sync(hub.start)
                try:
                    await anyio.to_thread.run_sync(lambda: hub.ready(10))
                    found = await anyio.to_thread.run_sync(hub.list_skills)
                finally:
                    await anyio.to_thread.run_sync(hub.close)
            else:
                async with hub:
                    await hub.ready(10)
                    found = await hub.list_skills()
    assert [(s.server, s.skill.name) for s in found] == [
        ("one", "greeting-style"),
        ("one", "release-notes"),
        ("two", "greeting-style"),
        ("two", "release-notes"),
    ]
