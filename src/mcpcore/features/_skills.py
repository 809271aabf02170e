"""The skills extension (SEP-2640, ``io.modelcontextprotocol/skills``): listing
skills without fetching a file, reading one file verified against its entry
(N4), and walking a dynamic skill's directory where the server offers it.

A server that declares the extension answers ``skills/list`` with one entry per
skill: the ``skill://`` URI of its ``SKILL.md``, that file's frontmatter as
JSON, and its ``resources``, each file's URI with a ``digest``
(``sha256:<hex>``) and ``size`` in bytes (or the word ``"dynamic"``: files made
per request, with nothing declared to verify). ``Skill`` is an entry,
``SkillFile`` one of its files. Listing sends ``skills/list`` only: no file is
read ahead of need (the SEP's no-prefetch rule).

A file is read when the host asks (``resources/read`` of its URI) and checked
before anything is returned: the size first, from the text's length or the
base64's before decoding it, then the exact byte count, then the digest; for
``SKILL.md`` its YAML frontmatter is parsed and compared key by key with the
entry's. Any difference raises ``SkillMismatch`` naming what differed (never
the content), and the content is dropped. The SEP's limits, 512 files and 16
MiB a skill (a host accepts at least these), are the bounds
``max_skill_files`` and ``max_skill_bytes``: a listing with a skill over one
raises ``LimitExceeded`` naming it.

``resources/directory/read`` (N4, E4b), the SEP's optional method, is followed
when the server sets ``directoryRead`` in its declaration of the extension: a
dynamic skill's files are the walk of its root directory, one request per
directory, subdirectories (``inode/directory``) descended, bounded by
``max_skill_files``.

Every string here is untrusted server text. Loaded when a host first lists
skills, never on import of a driver.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import field, replace
from typing import Any

from ..base._errors import InvalidValue, LimitExceeded, NotOffered, SkillMismatch
from ..base._escape import excerpt
from ..base._record import record
from ..wire._requests import Ask, Pending, RequestKind, refused_by_server, register
from ._listing import Listing, read_items
from ._resources import RESOURCES_READ, BlobContents, Resource, TextContents, _read, _read_refused

__all__ = [
    "DIRECTORY_MIME",
    "EXTENSION",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "RESOURCES_DIRECTORY_READ",
    "SKILLS_LIST",
    "DirectoryWalk",
    "ServerSkill",
    "Skill",
    "SkillFile",
    "SkillFileContent",
    "directory_read_offered",
    "find_skill",
    "parse_frontmatter",
    "read_file_ask",
    "skill_files",
    "skills_ask",
    "verify_content",
]

_log = logging.getLogger("mcpcore.session")

#: The extension's identifier, under ``capabilities.extensions``.
EXTENSION = "io.modelcontextprotocol/skills"
#: The SEP's limits: a host accepts skills of up to this many files ...
MAX_SKILL_FILES = 512
#: ... and this many bytes in all.
MAX_SKILL_BYTES = 16 * 1024 * 1024
#: What a directory's entry in ``resources/directory/read`` carries as its type.
DIRECTORY_MIME = "inode/directory"
_SKILL_MD = "SKILL.md"
_DIGESTS = {"sha256", "sha384", "sha512"}


@record(frozen=True, slots=True)
class SkillFile:
    """One file of a skill's entry: its ``uri``, its ``path`` under the skill's
    root (``SKILL.md``, ``references/FORMS.md``), and what the server declared
    of it: ``digest`` (``algorithm:hex``) and ``size`` in bytes."""

    uri: str
    path: str
    digest: str
    size: int


@record(frozen=True, slots=True)
class Skill:
    """One skill as ``skills/list`` gave it (N4): ``uri`` (its ``SKILL.md``),
    ``name`` and ``description`` (from ``frontmatter``, the entry's JSON copy of
    the file's), and ``files`` with their digests and sizes; ``dynamic`` when the
    server declared none (files made per request). Untrusted server text."""

    uri: str
    name: str
    description: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...] = ()
    dynamic: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def root(self) -> str:
        """The skill's directory URI (its ``SKILL.md``'s, without the file name)."""
        return self.uri[: -len(_SKILL_MD) - 1]

    @property
    def size(self) -> int:
        """The bytes its files declare, together."""
        return sum(f.size for f in self.files)

    def file(self, path: str) -> SkillFile | None:
        """The entry's file at ``path`` (under the root), else ``None``."""
        for item in self.files:
            if item.path == path:
                return item
        return None


@record(frozen=True, slots=True)
class ServerSkill:
    """One skill of a hub's ``list_skills``: the ``server`` (the client's name in
    the hub) that listed it, and the ``skill``; read its files with
    ``hub.clients[server].read_skill_file(skill, path)``."""

    server: str
    skill: Skill


@record(frozen=True, slots=True)
class SkillFileContent:
    """One file of a skill, read and checked (N4): ``data`` its bytes, ``text``
    them as UTF-8 (``None`` when they are not). ``verified``: the digest and size
    matched the entry's (``False`` only for a dynamic skill, which declares
    none). Untrusted server text still: escape before showing it."""

    skill: str
    path: str
    uri: str
    data: bytes = field(repr=False)
    mime_type: str | None = None
    verified: bool = True

    @property
    def text(self) -> str | None:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def __repr__(self) -> str:
        return (
            f"SkillFileContent(skill={excerpt(self.skill, 80)!r}, path={excerpt(self.path, 80)!r}, "
            f"{len(self.data)} bytes, verified={self.verified})"
        )


# --- skills/list ------------------------------------------------------------------------


@record(frozen=True, slots=True)
class _ListAsk:
    """What reading a ``skills/list`` answer needs: the server's name, the bounds."""

    server: str
    max_files: int
    max_bytes: int

    def __str__(self) -> str:
        return self.server


def skills_offered(capabilities: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The server's settings for the extension, ``None`` when it does not declare it."""
    extensions = capabilities.get("extensions")
    settings = extensions.get(EXTENSION) if isinstance(extensions, Mapping) else None
    return settings if isinstance(settings, Mapping) else None


def directory_read_offered(capabilities: Mapping[str, Any]) -> bool:
    """N4: the server answers ``resources/directory/read`` (``directoryRead: true``)."""
    settings = skills_offered(capabilities)
    return settings is not None and settings.get("directoryRead") is True


def skills_ask(
    server: str,
    capabilities: Mapping[str, Any],
    *,
    max_skill_files: int | None = None,
    max_skill_bytes: int | None = None,
) -> Ask:
    """``skills/list``; ``NotOffered`` (nothing sent) when the server does not
    declare the extension, ``InvalidValue`` for a bound that is not a positive int
    (``None``: the SEP's limit)."""
    max_skill_files = _bound("max_skill_files", max_skill_files, MAX_SKILL_FILES)
    max_skill_bytes = _bound("max_skill_bytes", max_skill_bytes, MAX_SKILL_BYTES)
    if skills_offered(capabilities) is None:
        raise NotOffered(f"the skills extension ({EXTENSION})", server=server)
    return Ask(SKILLS_LIST, None, _ListAsk(server, max_skill_files, max_skill_bytes))


def _bound(name: str, value: object, default: int) -> int:
    if value is None:
        return default
    if type(value) is not int or value <= 0:
        raise InvalidValue(f"{name} must be a positive int")
    return value


def _relative(uri: str, root: str) -> str | None:
    """The path of ``uri`` under the directory ``root``; ``None`` outside it."""
    if not uri.startswith(root + "/"):
        return None
    path = uri[len(root) + 1 :]
    parts = path.split("/")
    if not path or any(part in ("", ".", "..") for part in parts):
        return None
    return path


def _file(raw: object, root: str) -> SkillFile | None:
    if not isinstance(raw, dict):
        return None
    uri, digest, size = raw.get("uri"), raw.get("digest"), raw.get("size")
    if type(uri) is not str or type(digest) is not str or type(size) is not int or size < 0:
        return None
    path = _relative(uri, root)
    return None if path is None else SkillFile(uri, path, digest, size)


def _skill(raw: dict[str, Any]) -> Skill | None:
    """One entry, or ``None`` when malformed (dropped from the listing, counted)."""
    uri, frontmatter, resources = raw.get("uri"), raw.get("frontmatter"), raw.get("resources")
    if type(uri) is not str or not uri.endswith("/" + _SKILL_MD) or type(frontmatter) is not dict:
        return None
    name, description = frontmatter.get("name"), frontmatter.get("description")
    if type(name) is not str or type(description) is not str:
        return None
    root = uri[: -len(_SKILL_MD) - 1]
    if resources == "dynamic":
        return Skill(uri, name, description, frontmatter, (), True, raw)
    if not isinstance(resources, list):
        return None
    files = tuple(_file(item, root) for item in resources)
    if any(f is None for f in files) or not any(f.uri == uri for f in files if f is not None):
        return None  # a malformed file, or the entry leaves its own SKILL.md out
    paths = [f.path for f in files if f is not None]
    if len(set(paths)) != len(paths):
        return None
    return Skill(uri, name, description, frontmatter, files, False, raw)  # type: ignore[arg-type]


def _skills(result: dict[str, Any], pending: Pending) -> Listing[Skill]:
    ask: _ListAsk = pending.context
    listing = read_items(result, "skills", _skill, "skills", ask.server)
    for skill in listing:
        if len(skill.files) > ask.max_files:
            raise LimitExceeded(
                "max_skill_files",
                ask.max_files,
                f"the number of files skill {excerpt(skill.name, 80)!r} lists",
            )
        if skill.size > ask.max_bytes:
            raise LimitExceeded(
                "max_skill_bytes",
                ask.max_bytes,
                f"the bytes skill {excerpt(skill.name, 80)!r} declares",
            )
    return listing


SKILLS_LIST = register(
    RequestKind(
        method="skills/list",
        pages="skills",
        resend=True,
        parse=_skills,
        refused=refused_by_server,
    )
)


def find_skill(skills: Listing[Skill] | tuple[Skill, ...], name: str, server: str) -> Skill:
    """The listed skill called ``name``; ``InvalidValue`` naming it when none is."""
    for skill in skills:
        if skill.name == name:
            return skill
    raise InvalidValue(f"server {server!r} lists no skill {excerpt(name, 80)!r}")


# --- one file, read and verified -----------------------------------------------------------


@record(frozen=True, slots=True)
class _FileAsk:
    """What checking a read needs: the skill's entry, the path, and its file's."""

    skill: Skill
    path: str
    uri: str
    entry: SkillFile | None

    def __str__(self) -> str:
        return self.uri


def read_file_ask(skill: Skill, path: str = _SKILL_MD) -> Ask:
    """``resources/read`` of one file of ``skill``, checked on arrival. A path
    the entry does not list is refused before anything is sent (``InvalidValue``):
    unverified content is never used. A dynamic skill's file is any path under
    its root (there is nothing declared to check but ``SKILL.md``'s frontmatter)."""
    if not isinstance(path, str) or not path:
        raise InvalidValue("a skill file's path must be a non-empty string")
    if not isinstance(skill, Skill):
        raise InvalidValue(f"read_skill_file takes a Skill or its name, not {type(skill).__name__}")
    entry = skill.file(path)
    if entry is None and not skill.dynamic:
        raise InvalidValue(
            f"skill {excerpt(skill.name, 80)!r} lists no file {excerpt(path, 200)!r}"
        )
    uri = entry.uri if entry is not None else f"{skill.root}/{path}"
    if entry is None and _relative(uri, skill.root) is None:
        raise InvalidValue(f"{excerpt(path, 200)!r} is not a path under the skill's root")
    return Ask(SKILL_FILE_READ, {"uri": uri}, _FileAsk(skill, path, uri, entry))


def _declared_length(part: TextContents | BlobContents) -> tuple[int, int]:
    """Bounds on the part's byte count, known before encoding or decoding it: a
    text of n characters is n to 4n bytes of UTF-8; base64 of n characters is
    exactly 3n/4 bytes less its padding."""
    if isinstance(part, TextContents):
        return len(part.text), 4 * len(part.text)
    blob = part.blob.rstrip("=")
    exact = len(blob) * 3 // 4
    return exact, exact


def verify_content(ask: _FileAsk, part: TextContents | BlobContents) -> SkillFileContent:
    """The part checked against the entry (see the module docstring); raises
    ``SkillMismatch`` (the content dropped) on any difference."""
    skill, entry = ask.skill, ask.entry
    if entry is not None:
        low, high = _declared_length(part)
        if not low <= entry.size <= high:
            raise SkillMismatch(skill.name, ask.path, "size")
    data = part.text.encode("utf-8") if isinstance(part, TextContents) else part.data
    if entry is not None:
        if len(data) != entry.size:
            raise SkillMismatch(skill.name, ask.path, "size")
        if not digest_matches(entry.digest, data):
            raise SkillMismatch(skill.name, ask.path, "digest")
    if ask.uri == skill.uri:
        compare_frontmatter(skill, ask.path, data)
    return SkillFileContent(
        skill.name, ask.path, ask.uri, data, part.mime_type, verified=entry is not None
    )


def digest_matches(digest: str, data: bytes) -> bool:
    """``data`` hashes to ``digest`` (``sha256:<hex>``; sha384 and sha512 too). An
    algorithm this library does not know is no match: unverified content is
    never used."""
    algorithm, _, expected = digest.partition(":")
    if algorithm.lower() not in _DIGESTS or not expected:
        return False
    actual = hashlib.new(algorithm.lower(), data).hexdigest()
    return hmac.compare_digest(actual, expected.lower())


def _read_verified(result: dict[str, Any], pending: Pending) -> SkillFileContent:
    ask: _FileAsk = pending.context
    contents = _read(result, pending).contents
    parts = [p for p in contents if p.uri == ask.uri] or list(contents)
    if len(parts) != 1:  # one file is one part: two would leave which one to check open
        raise SkillMismatch(ask.skill.name, ask.path, "contents")
    return verify_content(ask, parts[0])


#: ``resources/read`` of a skill's file: the kind ``RESOURCES_READ`` is (resent,
#: ``Mcp-Name``, a large result), its reading the verifying one. Not registered:
#: the method's row in ``KINDS`` stays ``RESOURCES_READ``'s, which it equals in
#: everything the table is read for.
SKILL_FILE_READ = replace(RESOURCES_READ, parse=_read_verified, refused=_read_refused)


# --- SKILL.md's frontmatter --------------------------------------------------------------


class _Unparsed(Exception):
    """The frontmatter is outside the YAML this reader knows (or not YAML)."""


def compare_frontmatter(skill: Skill, path: str, data: bytes) -> None:
    """``SKILL.md``'s frontmatter equals the entry's, key by key; ``SkillMismatch``
    naming the first key that differs (``name`` and ``description`` first)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillMismatch(skill.name, path, "frontmatter") from None
    found = parse_frontmatter(text, skill=skill.name, path=path)
    expected = skill.frontmatter
    keys = ["name", "description", *sorted((set(found) | set(expected)) - {"name", "description"})]
    for key in keys:
        if key not in found and key not in expected:
            continue
        if key not in found or key not in expected or not _same(found[key], expected[key]):
            raise SkillMismatch(skill.name, path, "frontmatter", field=key)


def _same(a: object, b: object) -> bool:
    """JSON equality: a bool is never a number, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def parse_frontmatter(text: str, *, skill: str = "", path: str = _SKILL_MD) -> dict[str, Any]:
    """The YAML frontmatter at the top of ``text`` (between ``---`` lines) as
    JSON values. The block YAML skills use is read: mappings, sequences, plain
    and quoted scalars, ``|`` and ``>`` blocks, flow lists. Anything else, or no
    frontmatter, raises ``SkillMismatch`` (what: ``frontmatter``) and nothing else."""
    try:
        return _frontmatter(text)
    except (_Unparsed, RecursionError):
        raise SkillMismatch(skill, path, "frontmatter") from None


_Line = tuple[int, str, str]  # (indent, the line without it and trailing spaces, and with them)


def _frontmatter(text: str) -> dict[str, Any]:
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r").rstrip() != "---":
        raise _Unparsed
    body: list[_Line] = []
    for line in lines[1:]:
        line = line.rstrip("\r")
        if line.rstrip() in ("---", "..."):
            break
        if line.startswith(("--- ", "... ")):
            raise _Unparsed  # a document marker with content
        if "\t" in line:
            raise _Unparsed  # YAML indents with spaces only; a tab elsewhere is left to full YAML
        stripped = line.lstrip(" ")
        body.append((len(line) - len(stripped), stripped.rstrip(), stripped))
    else:
        raise _Unparsed  # never closed
    first = _skip(body, 0)
    value, at = _block(body, first, body[first][0] if first < len(body) else 0)
    if _skip(body, at) != len(body) or not isinstance(value, dict):
        raise _Unparsed
    return value


def _skip(body: list[_Line], at: int) -> int:
    while at < len(body) and (not body[at][1] or body[at][1].startswith("#")):
        at += 1
    return at


def _block(body: list[_Line], at: int, indent: int) -> tuple[Any, int]:
    if at >= len(body):
        return None, at
    if body[at][1] == "-" or body[at][1].startswith("- "):
        return _sequence(body, at, indent)
    return _mapping(body, at, indent)


_KEY = re.compile(
    r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\[\]{}&*!|>%@`,?:-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(.*))?$"""
)


def _mapping(body: list[_Line], at: int, indent: int) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    while (at := _skip(body, at)) < len(body) and body[at][0] >= indent:
        depth, line, _ = body[at]
        match = _KEY.match(line)
        if depth != indent or match is None:
            raise _Unparsed
        key = _scalar(match.group(1))
        if not isinstance(key, str) or key in result:
            raise _Unparsed
        result[key], at = _value(body, at, indent, match.group(2) or "")
    return result, at


def _sequence(body: list[_Line], at: int, indent: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    while (at := _skip(body, at)) < len(body) and body[at][0] == indent:
        line = body[at][1]
        if line != "-" and not line.startswith("- "):
            break
        rest = line[2:].strip()
        if _KEY.match(rest) and not rest.startswith(('"', "'")):
            # "- key: value" opens a mapping at the key's column
            column = indent + len(line) - len(line[1:].lstrip())
            body[at] = (column, rest, rest)
            item, at = _mapping(body, at, column)
        else:
            item, at = _value(body, at, indent, rest, key=False)
        items.append(item)
    return items, at


def _value(
    body: list[_Line], at: int, indent: int, rest: str, *, key: bool = True
) -> tuple[Any, int]:
    """The value after a key (or a dash: ``key=False``) on line ``at``; the line after it."""
    whole = rest.strip()
    rest = _uncomment(rest)
    commented = whole != rest  # a comment ends a plain scalar: no line may go on
    if not rest:
        nxt = _skip(body, at + 1)
        if nxt < len(body) and body[nxt][0] > indent:
            line = body[nxt][1]
            if line == "-" or line.startswith("- ") or _KEY.match(line):
                return _block(body, nxt, body[nxt][0])
            return _value(body, nxt, indent, line, key=key)  # a scalar on the next line
        dash = body[nxt][1] == "-" or body[nxt][1].startswith("- ") if nxt < len(body) else False
        if key and dash and body[nxt][0] == indent:
            return _sequence(body, nxt, indent)  # a list under a key, not indented
        return None, at + 1
    if rest[0] in "|>":
        return _literal(body, at, indent, rest)
    at += 1
    if rest[0] not in "\"'[{":  # a plain scalar may go on over more indented lines
        more = at
        while more < len(body) and (not body[more][1] or body[more][0] > indent):
            more += 1
        while more > at and not body[more - 1][1]:
            more -= 1
        if more > at:
            if commented:
                raise _Unparsed
            folded = [rest] + [body[i][1] for i in range(at, more)]
            for line in folded:
                _plain(line)
            text = folded[0]
            for before, line in itertools.pairwise(folded):
                # a line break folds to a space; each blank line stays a line break
                text += "\n" if not line else (line if not before else " " + line)
            return text, more
    return _scalar(rest), at


def _literal(body: list[_Line], at: int, indent: int, head: str) -> tuple[str, int]:
    style, chomp = head[0], head[1:].strip()
    if chomp not in ("", "-", "+"):
        raise _Unparsed
    end = at + 1
    while end < len(body) and (not body[end][1] or body[end][0] > indent):
        end += 1
    lines = body[at + 1 : end]
    content = [ln for ln in lines if ln[1]]
    if not content:
        return ("\n" * len(lines) if chomp == "+" else ""), end  # no text, only blank lines
    base = content[0][0]
    leading = lines[: lines.index(content[0])]
    if any(ln[0] < base for ln in content) or any(ln[0] > base for ln in leading):
        raise _Unparsed  # the first line of text sets the block's indentation
    # a line of spaces past the block's indentation is text too
    texts = [" " * max(0, d - base) + raw for d, _, raw in lines]
    while texts and not texts[-1] and chomp != "+":
        texts.pop()
    if style == "|":
        value = "\n".join(texts)
    else:
        value = _fold(texts)
    if texts and chomp != "-":
        value += "\n"
    return value, end


def _fold(texts: list[str]) -> str:
    """A ``>`` block's lines folded: a break between two lines of text is a space,
    each blank line a break, and lines indented further keep their breaks."""
    value, before, blanks = "", "", 0
    for text in texts:
        if not text:
            blanks += 1
            continue
        if not value and not before:
            value = "\n" * blanks + text
        elif before.startswith(" ") or text.startswith(" ") or blanks:
            value += (
                "\n"
                * (
                    blanks
                    + (
                        0
                        if blanks and not before.startswith(" ") and not text.startswith(" ")
                        else 1
                    )
                )
                + text
            )
        else:
            value += " " + text
        before, blanks = text, 0
    return value + "\n" * blanks


def _uncomment(text: str) -> str:
    if text.startswith(("'", '"')):
        return text
    if text.startswith("#"):
        return ""
    cut = text.find(" #")
    return (text if cut < 0 else text[:cut]).strip()


_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"'):
            raise _Unparsed
        try:
            value = json.loads(text)
        except ValueError:  # an escape YAML has and JSON has not (\x41, \e)
            raise _Unparsed from None
        if not isinstance(value, str):
            raise _Unparsed
        return value
    if text.startswith("'"):
        inner = text[1:-1]
        if len(text) < 2 or not text.endswith("'") or re.search(r"(?<!')'(?!')", inner):
            raise _Unparsed
        return inner.replace("''", "'")
    if text.startswith(("[", "{")):
        return _flow(text)
    _plain(text)
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if _INT.match(text):
        try:
            return int(text)
        except ValueError:  # past Python's 4,300 digits: no entry's JSON could hold it either
            raise _Unparsed from None
    if _FLOAT.match(text):
        return float(text)
    return text


def _plain(text: str) -> None:
    """A plain scalar's line: none starts with an indicator (``- `` a sequence's,
    ``#`` a comment's, ``&`` an anchor's...), none holds a key (``: ``)."""
    first, second = text[:1], text[1:2]
    if first and (first in ",[]{}#&*!|>%@`'\"" or (first in "-?:" and second in ("", " "))):
        raise _Unparsed
    if ": " in text or text.endswith(":") or " #" in text:
        raise _Unparsed


def _flow(text: str) -> Any:
    """A flow list or mapping: as JSON, or a list of plain scalars (``[a, b]``)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    if not (text.startswith("[") and text.endswith("]")) or any(c in text[1:-1] for c in "[]{}"):
        raise _Unparsed
    inner = text[1:-1].strip()
    return [_scalar(item) for item in inner.split(",")] if inner else []


# --- N4: a dynamic skill's directory --------------------------------------------------------


def _directory(result: dict[str, Any], pending: Pending) -> Listing[Resource]:
    from ._resources import _resource

    return read_items(result, "resources", _resource, "directory entries", str(pending.context))


RESOURCES_DIRECTORY_READ = register(
    RequestKind(
        method="resources/directory/read",
        pages="resources",
        resend=True,
        parse=_directory,
        refused=refused_by_server,
    )
)


class DirectoryWalk:
    """N4: a skill's files found by walking its root with
    ``resources/directory/read``, one directory a request, breadth first. The
    driver asks ``next_ask()``, performs it, gives the listing to ``add()``, until
    ``next_ask()`` is ``None``; ``paths`` are then the files found. Entries
    outside the directory asked are ignored; more than ``max_files`` entries in
    all raises ``LimitExceeded`` (``max_skill_files``)."""

    def __init__(self, skill: Skill, *, max_files: int = MAX_SKILL_FILES) -> None:
        self.skill = skill
        self.max_files = max_files
        self.paths: list[str] = []
        self._todo = [skill.root]
        self._seen: set[str] = {skill.root}
        self._asked: str | None = None

    def next_ask(self) -> Ask | None:
        if not self._todo:
            return None
        self._asked = self._todo.pop(0)
        return Ask(RESOURCES_DIRECTORY_READ, {"uri": self._asked}, self._asked)

    def add(self, listing: Listing[Resource]) -> None:
        asked = self._asked
        assert asked is not None
        for entry in listing:
            if _relative(entry.uri, asked) is None or entry.uri in self._seen:
                _log.warning(
                    "skill %r: directory entry %r is outside %r; ignored",
                    excerpt(self.skill.name, 80),
                    excerpt(entry.uri, 200),
                    excerpt(asked, 200),
                )
                continue
            self._seen.add(entry.uri)
            if len(self._seen) - 1 > self.max_files:
                raise LimitExceeded(
                    "max_skill_files",
                    self.max_files,
                    f"the entries of skill {excerpt(self.skill.name, 80)!r}'s directory",
                )
            if entry.mime_type == DIRECTORY_MIME:
                self._todo.append(entry.uri)
            else:
                path = _relative(entry.uri, self.skill.root)
                if path is not None:
                    self.paths.append(path)


def skill_files(
    skill: Skill, capabilities: Mapping[str, Any], *, max_files: int | None = None
) -> tuple[str, ...] | DirectoryWalk:
    """The paths of ``skill``'s files, or the walk that finds them (N4, E4b): a
    static skill's are its entry's (nothing sent: the entry is what is verified
    against); a dynamic skill's are its directory's, walked where the server
    offers ``resources/directory/read``, else only its ``SKILL.md``."""
    if not isinstance(skill, Skill):
        raise InvalidValue(
            f"list_skill_files takes a Skill or its name, not {type(skill).__name__}"
        )
    if not skill.dynamic:
        return tuple(f.path for f in skill.files)
    if directory_read_offered(capabilities):
        return DirectoryWalk(skill, max_files=_bound("max_skill_files", max_files, MAX_SKILL_FILES))
    return (_SKILL_MD,)
