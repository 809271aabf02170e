"""Fuzz skills' manifest entries and SKILL.md frontmatter (N4, SEP-2640; issue 44).

The bytes build one ``skills/list`` entry (its ``uri``, its frontmatter, its
``resources``: URIs that climb out with ``../`` or start over at an absolute
path, digests of any algorithm and case, sizes of any type, or ``"dynamic"``),
a path the host asks to read, a file the server answers with (the declared one,
or text or base64 a byte off, or anything), and a ``SKILL.md`` whose frontmatter
is either raw text (byte 0 odd) or written from the entry's frontmatter in the
YAML skills use.

Invariants:

* reading an entry never raises (a malformed one is dropped); a kept skill's
  files each lie under its root (no empty, ``.`` or ``..`` segment, no other
  scheme or host), have distinct paths, non-negative int sizes, and include its
  ``SKILL.md`` unless the skill is dynamic;
* asking to read a path gives ``InvalidValue`` or a ``resources/read`` of a URI
  under the root: a listed file's, or (dynamic) the root joined with a path
  that never climbs out;
* checking a read raises ``RemoteProtocolError`` (``SkillMismatch``, or a blob
  that is not base64) or returns content whose bytes have the declared size and
  digest; a ``SkillMismatch`` names no content (the secret in every file);
* ``parse_frontmatter`` returns a mapping of JSON values or raises
  ``SkillMismatch``, nothing else; a frontmatter written from JSON values
  reads back equal, so its ``SKILL.md`` checks against the entry.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore.base._errors import InvalidValue, RemoteProtocolError, SkillMismatch
from mcpcore.features._resources import BlobContents, TextContents
from mcpcore.features._skills import (
    Skill,
    _skill,
    compare_frontmatter,
    parse_frontmatter,
    read_file_ask,
    verify_content,
)

ROOT = "skill://srv/pdf"
_PATHS = (
    "SKILL.md",
    "references/FORMS.md",
    "a/b/c.txt",
    "../escape.md",
    "a/../../x",
    "./SKILL.md",
    "a//b",
    "/etc/passwd",
    "",
    ".",
    "..",
    "é.md",
    "a/",
)
_ROOTS = (ROOT, "skill://srv/pdf/", "skill://other/pdf", "file:///etc", "skill://srv")
_DIGEST_ALGS = ("sha256", "SHA256", "sha384", "sha512", "md5", "", "sha256:")
_SCALARS: tuple[Any, ...] = (
    "plain",
    "two words",
    "é ü",
    "a: b",
    "# not a comment",
    "- dash",
    "'quoted'",
    '"double"',
    "x" * 120,
    "line\nbreak",
    "",
    " lead",
    "trail ",
    "true",
    "null",
    "12",
    "1.5",
    SECRET,
    7,
    -3,
    2.5,
    True,
    False,
    None,
    10**40,
)


def _file_bytes(r: Reader, path: str) -> bytes:
    return f"{path}: {SECRET} ".encode() + r.chunk(16)


def _entry(r: Reader) -> tuple[dict[str, Any], dict[str, bytes]]:
    root = r.choice(_ROOTS) if r.u8() % 4 == 0 else ROOT
    frontmatter: dict[str, Any] = {
        "name": r.choice(("pdf", "pdf-tools", "é")),
        "description": "Reads PDFs.",
    }
    for _ in range(r.u8() % 4):
        key = r.choice(("license", "version", "tags", "allowed-tools", "metadata", "x"))
        kind = r.u8() % 3
        if kind == 0:
            frontmatter[key] = r.choice(_SCALARS)
        elif kind == 1:
            frontmatter[key] = [r.choice(_SCALARS) for _ in range(r.u8() % 3)]
        else:
            frontmatter[key] = {r.choice(("a", "b-c", "d e")): r.choice(_SCALARS)}
    if r.u8() % 8 == 0:
        frontmatter[r.choice(("name", "description"))] = r.json_value(1)
    raw: dict[str, Any] = {"uri": f"{root}/SKILL.md", "frontmatter": frontmatter}
    contents: dict[str, bytes] = {}
    if r.u8() % 6 == 0:
        raw["resources"] = "dynamic" if r.flag() else r.json_value(1)
        return raw, contents
    resources = []
    paths = ["SKILL.md"] if r.u8() % 8 else []
    paths += [r.choice(_PATHS) for _ in range(r.u8() % 4)]
    for path in paths:
        data = _file_bytes(r, path)
        contents[f"{root}/{path}"] = data
        item: dict[str, Any] = {
            "uri": f"{root}/{path}" if r.u8() % 8 else r.choice(_PATHS),
            "digest": r.choice(_DIGEST_ALGS) + ":" + hashlib.sha256(data).hexdigest(),
            "size": len(data),
        }
        how = r.u8() % 10
        if how == 0:
            item["digest"] = "sha256:" + hashlib.sha256(data).hexdigest().upper()
        elif how == 1:
            item["size"] = r.choice(
                (-1, len(data) + 1, str(len(data)), True, 1.0 * len(data), None)
            )
        elif how == 2:
            del item[r.choice(("uri", "digest", "size"))]
        resources.append(item if r.u8() % 16 else r.json_value(1))
    raw["resources"] = resources
    return raw, contents


def _yaml(frontmatter: dict[str, Any]) -> str:
    """The frontmatter as the block YAML skills use (scalars double-quoted or as
    JSON writes them: JSON's escapes and literals are YAML's too)."""
    lines = ["---"]
    for key, value in frontmatter.items():
        if isinstance(value, list) and value:
            lines.append(f"{key}:")
            lines += [f"  - {json.dumps(v)}" for v in value]
        elif isinstance(value, dict) and value:
            lines.append(f"{key}:")
            lines += [f"  {k}: {json.dumps(v)}" for k, v in value.items()]
        else:
            lines.append(f"{key}: {json.dumps(value)}")
    lines += ["---", "", "# Body", SECRET]
    return "\n".join(lines) + "\n"


def _check_skill(skill: Skill, raw: dict[str, Any]) -> None:
    root = skill.root
    assert skill.uri == raw["uri"] and root + "/SKILL.md" == skill.uri
    paths = [f.path for f in skill.files]
    assert len(set(paths)) == len(paths), "a path listed twice"
    if not skill.dynamic:
        assert "SKILL.md" in paths, "a skill without its SKILL.md"
    for f in skill.files:
        assert f.uri == f"{root}/{f.path}", (f.uri, root)
        assert all(part not in ("", ".", "..") for part in f.path.split("/")), f.path
        assert type(f.size) is int and f.size >= 0


def _check_error(exc: BaseException) -> None:
    text = f"{exc} {exc!r}"
    assert SECRET not in text, f"an error names a file's content: {text!r}"
    assert "\x1b" not in text


def _read(r: Reader, skill: Skill, contents: dict[str, bytes]) -> None:
    path = r.choice(_PATHS) if r.u8() % 4 else r.text(12)
    try:
        ask = read_file_ask(skill, path)
    except InvalidValue as exc:
        _check_error(exc)
        return
    uri = ask.params["uri"] if ask.params else ""
    assert uri.startswith(skill.root + "/"), uri
    assert all(part not in ("", ".", "..") for part in uri[len(skill.root) + 1 :].split("/")), uri
    entry = skill.file(path)
    if entry is None:
        assert skill.dynamic, "an unlisted file was asked for"
    else:
        assert uri == entry.uri
    data = contents.get(uri, b"")
    if uri == skill.uri and r.flag():
        data = _yaml(skill.frontmatter).encode("utf-8", "surrogatepass")
    how = r.u8() % 5
    if how == 1:
        data = data[:-1] + bytes([(data[-1:] or b"\0")[0] ^ 1])
    elif how == 2:
        data = r.chunk(40)
    elif how == 3:
        data += b"x"
    part: TextContents | BlobContents
    if r.flag():
        part = BlobContents(uri, base64.b64encode(data).decode() if r.u8() % 8 else r.text(12))
    else:
        part = TextContents(uri, data.decode("utf-8", "replace"))
    try:
        content = verify_content(ask.context, part)
    except RemoteProtocolError as exc:
        _check_error(exc)
        return
    if entry is not None:
        assert len(content.data) == entry.size
        algorithm, _, hexdigest = entry.digest.partition(":")
        assert hashlib.new(algorithm.lower(), content.data).hexdigest() == hexdigest.lower()


def _frontmatter_text(r: Reader) -> None:
    text = r.rest().decode("utf-8", "replace")
    try:
        found = parse_frontmatter(text, skill="s", path="SKILL.md")
    except SkillMismatch as exc:
        _check_error(exc)
        return
    except Exception as exc:
        _fuzzlib.raise_unexpected("parse_frontmatter", exc)
        raise
    assert isinstance(found, dict)
    json.dumps(found, allow_nan=True)  # JSON values only (a YAML .inf is a float)


def fuzz_one_input(data: bytes) -> None:
    if not data:
        return
    r = Reader(data)
    if r.u8() & 1:
        _frontmatter_text(r)
        return
    raw, contents = _entry(r)
    try:
        skill = _skill(raw)
        if skill is None:
            return
        _check_skill(skill, raw)
        # The frontmatter written as YAML reads back equal: its SKILL.md checks.
        text = _yaml(skill.frontmatter)
        if "\ud800" not in text:
            compare_frontmatter(skill, "SKILL.md", text.encode("utf-8"))
        for _ in range(1 + r.u8() % 3):
            _read(r, skill, contents)
    except AssertionError:
        raise
    except SkillMismatch as exc:
        raise AssertionError(
            f"a frontmatter written from JSON values does not read back: {exc}"
        ) from exc
    except Exception as exc:
        _fuzzlib.raise_unexpected("skills", exc)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
