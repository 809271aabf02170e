"""Tools (T1–T4, T6, P3b, P6): id rules, qualification, the catalogue and its diff.

This module owns what a tool *is* to the client:

* the id grammar (T1): a segment is 1–128 characters of ``a-z 0-9 _ - .`` after
  ASCII lowercasing; the qualified id is ``<server><separator><segment>``;
* turning raw ``tools/list`` tool objects (all pages, in order) into a
  :class:`Catalogue`, dropping what cannot be used, each drop a logging
  ``WARNING`` on ``mcpcore.tools`` that names the server and shows the offending
  name with ``repr`` and control characters escaped (T2, T3, P3b, X1);
* the contract comparison behind a re-list's :class:`SyncReport` (T6).

Paging (T5) belongs to the session layer; this module sees the concatenated
tool objects.
"""

from __future__ import annotations

import logging
import re
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from ._errors import LimitExceeded
from ._escape import escape_text
from ._record import record
from ._schema import SchemaInvalid, Validator, compile_schema

if TYPE_CHECKING:
    from ._filters import ToolFilter
    from ._pins import PinChanged

__all__ = [
    "DEFAULT_SEGMENT_PATTERN",
    "Catalogue",
    "SyncReport",
    "Tool",
    "ascii_lower",
    "is_valid_segment",
    "suggest_ids",
]

_log = logging.getLogger("mcpcore.tools")

DEFAULT_SEGMENT_PATTERN: re.Pattern[str] = re.compile(r"[a-z0-9_.\-]{1,128}")
"""T1: the MCP tool-name alphabet, lowercased. Always applied with ``fullmatch``."""

_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}

_repr = reprlib.Repr()
_repr.maxstring = 200
_repr.maxother = 200
_repr.maxlevel = 2


def _shown(value: object) -> str:
    """``repr`` of a server value, bounded in size, control characters escaped (X1)."""
    return escape_text(_repr.repr(value), keep_newlines=False)


def ascii_lower(text: str) -> str:
    """Lowercase ``A``–``Z`` only; every other character (non-ASCII too) is kept as is."""
    # On ASCII text str.lower() changes exactly A-Z, and is several times faster
    # than translate (a listing lowercases every name).
    return text.lower() if text.isascii() else text.translate(_LOWER)


def is_valid_segment(text: object, pattern: re.Pattern[str] | None = None) -> bool:
    """True when ``text`` is a string whose ASCII-lowercased form is a valid id segment (T1).

    ``pattern`` tightens (or replaces) the default grammar; it is applied with
    ``fullmatch`` to the lowercased text, so anchors are optional.
    """
    if not isinstance(text, str):
        return False
    grammar = DEFAULT_SEGMENT_PATTERN if pattern is None else pattern
    return grammar.fullmatch(ascii_lower(text)) is not None


def suggest_ids(
    tool_id: object, ids: Iterable[str], separator: str = "/", *, limit: int = 3
) -> tuple[str, ...]:
    """K7: the ids a caller who wrote ``tool_id`` may have meant, at most ``limit``.

    Ids are lowercased and qualified (``<server><separator><tool>``), so the usual
    slips are: a different case (``Py/Add`` → ``py/add``), the plain tool name
    without its server (``add`` → ``py/add``), and another server's prefix
    (``github/add`` → ``py/add``). When none of these matches, a name one or two
    letters away (``ech`` → ``py/echo``, ``py/ehco`` → ``py/echo``), closest
    first. Ids are scanned in order; ``tool_id`` itself is never suggested. For
    the error path only.
    """
    if not isinstance(tool_id, str) or not separator:
        return ()
    ids = list(ids)
    wanted = ascii_lower(tool_id)
    candidates = {wanted}
    _, found_separator, tail = wanted.partition(separator)
    if found_separator and tail:
        candidates.add(tail)
    exact: list[str] = []
    by_name: list[str] = []
    for known in ids:
        if known == tool_id:
            continue
        if known == wanted:
            exact.append(known)
        elif known.partition(separator)[2] in candidates:
            by_name.append(known)
    if exact or by_name:
        return tuple((exact or by_name)[:limit])
    # A slip of a letter or two in the name: the closest names, whatever the server.
    name = tail if found_separator and tail else wanted
    others = [known for known in ids if known != tool_id]
    names = {known.partition(separator)[2] or known: known for known in reversed(others)}
    import difflib  # B5: loaded by the first unknown tool id, not on import

    close = difflib.get_close_matches(name, list(names), n=limit, cutoff=0.75)
    return tuple(names[match] for match in close)


def _same(a: object, b: object) -> bool:
    """Strict JSON equality: ``1``, ``1.0`` and ``true`` differ (Python's ``==`` says equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@record(eq=True, frozen=True)
class Tool:
    """One usable tool of one server (T1–T4).

    * ``id``: the qualified id, ``<server><separator><segment>`` (T1);
    * ``name``: the original name, as the server sent it, used on ``tools/call`` (T4);
    * ``description``: ``description``, else ``title``, else ``annotations.title``,
      else the name (T3);
    * ``parameters``: ``inputSchema`` verbatim (T3);
    * ``output_schema``: ``outputSchema`` verbatim, or ``None`` when absent or
      dropped as uncompilable (K5);
    * ``annotations``: the server's annotations (untrusted hints), possibly empty;
    * ``title``: ``title``, else ``annotations.title``, else ``None``;
    * ``task_support``: ``execution.taskSupport`` (``"required"``, ``"optional"``,
      ``"forbidden"``) or ``None`` (T8).

    Equality compares every field. The dict fields make the default hash
    impossible, so a tool hashes on its ``id`` and ``name`` (equal tools have
    equal ids, so this is consistent with ``==``). :meth:`same_contract` is the
    comparison behind a re-list's "changed" (T6).
    """

    id: str
    name: str
    server: str
    description: str
    parameters: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    # T8: the server's execution.taskSupport ("required", "optional"), None when absent
    task_support: str | None = None
    # Compiled outputSchema validator, cached on first use: None = not compiled
    # yet; a 1-tuple = compiled (holding None when validation is off).
    _compiled: tuple[Validator | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __hash__(self) -> int:
        return hash((self.id, self.name))

    @property
    def read_only(self) -> bool:
        """True only when the server's ``readOnlyHint`` annotation is exactly ``true`` (T4)."""
        return self.annotations.get("readOnlyHint") is True

    def same_contract(self, other: Tool) -> bool:
        """True when name, description, parameters, output schema and annotations match (T6)."""
        return (
            self.name == other.name
            and self.description == other.description
            and _same(self.parameters, other.parameters)
            and _same(self.output_schema, other.output_schema)
            and _same(self.annotations, other.annotations)
        )

    def output_validator(self) -> Validator | None:
        """The compiled ``output_schema`` validator, or ``None`` when there is none to apply.

        ``None`` when the tool declares no output schema, when ``jsonschema`` is not
        installed, or when the schema does not compile (logged once per tool).
        """
        if self.output_schema is None:
            return None
        if self._compiled is None:
            try:
                compiled = compile_schema(self.output_schema)
            except SchemaInvalid as exc:
                _log.warning(
                    "server %s: tool %s: outputSchema does not compile, calls are unvalidated: %s",
                    _shown(self.server),
                    _shown(self.name),
                    exc,
                )
                compiled = None
            object.__setattr__(self, "_compiled", (compiled,))
        assert self._compiled is not None
        return self._compiled[0]


@record(frozen=True)
class SyncReport:
    """The diff of two catalogues of one server (T6): sorted tuples of ids.

    ``added``, ``removed``, ``changed`` and ``untouched`` partition the union of
    both catalogues' ids. ``pins`` holds a ``PinChanged`` for each tool whose
    listed definition differs from its pin, first seen in this listing (U1).
    """

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    untouched: tuple[str, ...] = ()
    pins: tuple[PinChanged, ...] = ()


class Catalogue:
    """One server's usable tools, in listing order, by qualified id.

    Build one with :meth:`from_listing`. Iterating yields :class:`Tool` objects;
    ``in`` and :meth:`get` take qualified ids (exact match).
    """

    __slots__ = ("_by_id", "filtered", "separator", "server", "tools")

    def __init__(
        self,
        server: str,
        tools: Sequence[Tool] = (),
        *,
        separator: str = "/",
        filtered: Mapping[str, str] | None = None,
    ) -> None:
        self.server = server
        self.separator = separator
        self.tools: tuple[Tool, ...] = tuple(tools)
        # V4: ids the client's include/exclude filter left out → why (for UnknownTool)
        self.filtered: dict[str, str] = dict(filtered or {})
        self._by_id: dict[str, Tool] = {}
        for tool in self.tools:
            self._by_id.setdefault(tool.id, tool)

    @classmethod
    def from_listing(
        cls,
        server: str,
        tools: Sequence[object],
        *,
        separator: str = "/",
        segment_pattern: re.Pattern[str] | None = None,
        max_tools: int | None = None,
        validate_schemas: bool = True,
        tool_filter: ToolFilter | None = None,
        tasks: bool = False,
    ) -> Catalogue:
        """Raw ``tools/list`` tool objects (all pages, in order) → catalogue (T1–T4, P3b).

        A tool that ``tool_filter`` hides (V4) is left out silently; its id and
        why are kept in ``filtered``.

        Dropped, each with a ``WARNING`` naming the server and the name: items that
        are not objects, names that are not strings or whose lowercased form is not
        a valid segment under ``segment_pattern`` (default: T1), names that repeat
        the id of an earlier *kept* tool (the first wins), tools without an object
        ``inputSchema`` and, unless ``tasks`` (T8), tools whose
        ``execution.taskSupport`` is ``"required"``.

        An ``outputSchema`` that is not an object, or (with ``validate_schemas``)
        does not compile, is dropped with a warning; the tool stays (K5). With
        ``validate_schemas=False`` schemas are kept unchecked and compiled on first use.

        More than ``max_tools`` raw tool objects raise :class:`LimitExceeded` (P6).
        """
        if not separator:
            raise ValueError("separator must not be empty")
        if max_tools is not None and len(tools) > max_tools:
            raise LimitExceeded(
                "max_tools", max_tools, f"server {server!r} listing of {len(tools)} tools"
            )
        where = f"server {_shown(server)}"
        prefix = server + separator
        fullmatch = (
            DEFAULT_SEGMENT_PATTERN if segment_pattern is None else segment_pattern
        ).fullmatch
        kept: list[Tool] = []
        seen: dict[str, str] = {}
        filtered: dict[str, str] = {}
        for index, item in enumerate(tools):
            if not isinstance(item, dict):
                _log.warning(
                    "%s: dropped tools/list item #%d: not an object (%s)",
                    where,
                    index,
                    type(item).__name__,
                )
                continue
            tool = _build(where, server, prefix, item, fullmatch, validate_schemas, tasks)
            if tool is None:
                continue
            first = seen.get(tool.id)
            if first is not None:
                _log.warning(
                    "%s: dropped tool %s: its id %s repeats tool %s (the first one wins)",
                    where,
                    _shown(tool.name),
                    _shown(tool.id),
                    _shown(first),
                )
                continue
            seen[tool.id] = tool.name
            hidden = None if tool_filter is None else tool_filter.hides(tool.name, tool.id)
            if hidden is not None:
                filtered[tool.id] = hidden
                continue
            kept.append(tool)
        return cls(server, kept, separator=separator, filtered=filtered)

    def get(self, tool_id: str) -> Tool | None:
        """The tool with this qualified id, or ``None``."""
        return self._by_id.get(tool_id)

    def suggest(self, tool_id: str) -> tuple[str, ...]:
        """The ids a caller who wrote ``tool_id`` may have meant (K7; see ``suggest_ids``)."""
        return suggest_ids(tool_id, self._by_id, self.separator)

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __contains__(self, tool_id: object) -> bool:
        return isinstance(tool_id, str) and tool_id in self._by_id

    def __repr__(self) -> str:
        return f"Catalogue(server={self.server!r}, tools={len(self.tools)})"

    def ids(self) -> tuple[str, ...]:
        """The qualified ids, in listing order."""
        return tuple(tool.id for tool in self.tools)

    def diff(self, newer: Catalogue) -> SyncReport:
        """What changed from this catalogue to ``newer`` (T6), each tuple sorted."""
        old, new = self._by_id, newer._by_id
        added = sorted(new.keys() - old.keys())
        removed = sorted(old.keys() - new.keys())
        changed: list[str] = []
        untouched: list[str] = []
        for tool_id in sorted(old.keys() & new.keys()):
            if old[tool_id].same_contract(new[tool_id]):
                untouched.append(tool_id)
            else:
                changed.append(tool_id)
        return SyncReport(
            added=tuple(added),
            removed=tuple(removed),
            changed=tuple(changed),
            untouched=tuple(untouched),
        )


def _build(
    where: str,
    server: str,
    prefix: str,
    item: Mapping[str, Any],
    fullmatch: Callable[[str], object],
    validate_schemas: bool,
    tasks: bool,
) -> Tool | None:
    """One raw tool object → a :class:`Tool`, or ``None`` (warned) when it is unusable.

    A listing builds thousands of these (B3), so the rules are written out here,
    without a helper call per field, and the tool is made without its
    constructor: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``; this gives the new instance its dict at once. A
    property test checks it builds the tool the constructor builds, field for field.
    """
    name = item.get("name")
    if not isinstance(name, str):
        _log.warning("%s: dropped tool %s: its name is not a string", where, _shown(name))
        return None
    # ascii_lower, inlined: on ASCII text str.lower() changes exactly A-Z
    segment = name.lower() if name.isascii() else name.translate(_LOWER)
    if fullmatch(segment) is None:
        _log.warning("%s: dropped tool %s: not a valid tool name", where, _shown(name))
        return None
    parameters = item.get("inputSchema")
    if not isinstance(parameters, dict):
        _log.warning("%s: dropped tool %s: inputSchema is not an object", where, _shown(name))
        return None
    task_support = None
    execution = item.get("execution")
    if isinstance(execution, dict):
        support = execution.get("taskSupport")
        if support in ("required", "optional", "forbidden"):
            task_support = support
    if task_support == "required" and not tasks:
        # INFO, not WARNING (issue 37): hiding it is this client's configured
        # behaviour (tasks are off by default), not a fault of the server's; as a
        # warning, Python's last-resort handler printed it on stderr at every start
        # and re-listing of a host that configured no logging. Once per process would
        # not help: each CLI command is a process, and the core keeps no such state.
        _log.info(
            "%s: hid tool %s: it requires task invocation, "
            "and this client does not invoke tools as tasks (tasks=True turns that on)",
            where,
            _shown(name),
        )
        return None
    annotations = item.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
    # T3: a title or description counts when it is a string with more than whitespace
    title = item.get("title")
    if not (isinstance(title, str) and title.strip()):
        title = annotations.get("title")
        if not (isinstance(title, str) and title.strip()):
            title = None
    description = item.get("description")
    if not (isinstance(description, str) and description.strip()):
        description = title or name
    fields = {
        "id": prefix + segment,
        "name": name,
        "server": server,
        "description": description,
        "parameters": parameters,
        "output_schema": None,
        "annotations": annotations,
        "title": title,
        "task_support": task_support,
    }
    if "outputSchema" in item:
        output_schema, compiled = _output_schema(where, name, item, validate_schemas)
        fields["output_schema"] = output_schema
        if compiled is not None:
            # Compiled at listing: cache it so calls do not compile again.
            fields["_compiled"] = compiled
    tool = _new(Tool)
    _set(tool, "__dict__", fields)
    return tool


_new = object.__new__
_set = object.__setattr__


def _output_schema(
    where: str, name: str, item: Mapping[str, Any], validate_schemas: bool
) -> tuple[dict[str, Any] | None, tuple[Validator | None] | None]:
    """The usable ``outputSchema`` and, when compiled here, its validator (K5)."""
    schema = item.get("outputSchema")
    if schema is None:
        return None, None
    if not isinstance(schema, dict):
        _log.warning(
            "%s: tool %s: outputSchema is not an object, dropped (calls are unvalidated)",
            where,
            _shown(name),
        )
        return None, None
    if not validate_schemas:
        return schema, None
    try:
        validator = compile_schema(schema)
    except SchemaInvalid as exc:
        _log.warning(
            "%s: tool %s: outputSchema does not compile, dropped (calls are unvalidated): %s",
            where,
            _shown(name),
            exc,
        )
        return None, None
    return schema, (validator,)


# The public classes name their public module (in reprs of their type, and pickles).
Catalogue.__module__ = SyncReport.__module__ = "mcpcore"
