"""A server's questions for the person, and the host's answers: their shapes (Q1–Q5).

A server may ask the person behind a client a question in the middle of a
call: a small form ("which branch?"), or a URL to visit (a third-party
sign-in, a payment) that the library never opens itself; or it may ask the
host's model for a completion (``sampling/createMessage``). This module owns
the values of that exchange and their checks, apart from the desk that asks
and answers (``_input``):

* what the host's hook receives (``Elicitation``, ``Sampling``) and answers
  (``ElicitResult``, ``SampleResult``), and the action that runs it
  (``AskHost``, D2);
* reading a server's ``elicitation/create`` params into an ``Elicitation``
  (``read_elicitation``), and checking an accepted answer against the
  question's form before it is sent, filling in the form's defaults when the
  host asked for that (``check_answer``);
* the errors: a hook's answer that cannot be sent (``InputError``), and the
  handshake era's ``-32042`` as a ``UrlElicitationRequired`` carrying the URLs
  to visit (``url_elicitation_required``).

It loads with the first question, a resume, or a public name that needs it
(B5), never with a client.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from ..base._errors import McpError
from ..base._escape import excerpt
from ..base._record import record

if TYPE_CHECKING:
    from ._links import LinkTarget

__all__ = [
    "MAX_URL",
    "AskHost",
    "ElicitResult",
    "Elicitation",
    "InputError",
    "SampleResult",
    "Sampling",
    "UrlElicitationRequired",
    "check_answer",
    "read_elicitation",
    "url_elicitation_required",
]

# The longest URL a URL question may carry.
MAX_URL = 8192

# What a form field may hold: the restricted schema's primitive types.
_PRIMITIVES = ("string", "number", "integer", "boolean")


@record(frozen=True, slots=True)
class Elicitation:
    """A server's question for the person, as the ``elicit`` hook receives it.

    ``server`` is the client's name; ``tool_id`` the call it belongs to (``None``
    when it came outside a call, and always over stdio, where one pipe carries
    every message and a server's request does not name the call it serves);
    ``mode`` is ``"form"`` or ``"url"``.
    ``message`` and ``schema`` (the form: a flat JSON object schema of string,
    number, integer, boolean and enum fields; empty for a URL) are the
    server's, exactly as sent: **untrusted** text, escape it
    (``mcpcore.escape_text``) before showing it.

    A URL question (``mode == "url"``) carries ``url``, which the library never
    opens: show it (its host above all: ``target``, never a host read from the
    URL by hand) and ask the person whether to go there; ``accept`` means they
    consented. ``elicitation_id`` (handshake era) names it in a later
    ``ElicitationCompleted``.
    """

    server: str
    tool_id: str | None
    mode: Literal["form", "url"]
    message: str = field(repr=False)
    schema: Mapping[str, Any] = field(repr=False)
    url: str | None = field(default=None, repr=False)  # its query may hold a secret
    elicitation_id: str | None = None

    @property
    def target(self) -> LinkTarget | None:
        """The site a browser would open for ``url`` (``mcpcore.link_target``);
        ``None`` for a form."""
        from ._links import link_target

        return link_target(self.url) if self.url is not None else None

    @property
    def fields(self) -> Mapping[str, Any]:
        """The form's fields: name → its schema (empty when the form has none)."""
        properties = self.schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}


@record(frozen=True, slots=True)
class ElicitResult:
    """The person's answer: ``accept`` (with the form's ``content``), ``decline``
    (they said no) or ``cancel`` (they dismissed the question).

    ``ElicitResult.accept({"branch": "main"})``, ``ElicitResult.decline()``,
    ``ElicitResult.cancel()``. The content is the person's and is never shown
    in a repr or a log.
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.action not in ("accept", "decline", "cancel"):
            raise ValueError(
                f"an ElicitResult's action is 'accept', 'decline' or 'cancel', not {self.action!r}"
            )
        if self.content is not None and not isinstance(self.content, Mapping):
            raise TypeError("an ElicitResult's content is a mapping of field names to values")
        if self.content is not None and self.action != "accept":
            raise ValueError(f"a {self.action!r} answer carries no content")

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitResult:
        return cls("accept", dict(content or {}))

    @classmethod
    def decline(cls) -> ElicitResult:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitResult:
        return cls("cancel")


class InputError(McpError):
    """The host's answer to a server's question could not be sent, so the call it
    belonged to failed (Q1, Q5).

    ``hook`` names the hook (``"elicit"``); ``outcome`` says what happened:
    ``"raised"`` (the hook raised), ``"unusable"`` (it returned something other
    than an ``ElicitResult``), ``"invalid"`` (accepted content that does not fit
    the server's form), ``"late"`` (no answer within the client's
    ``input_timeout``) or ``"missing"`` (no such hook).
    """

    def __init__(self, message: str, *, hook: str, outcome: str) -> None:
        super().__init__(message)
        self.hook = hook
        self.outcome = outcome


@record(frozen=True, slots=True)
class Sampling:
    """A server's request for a completion from the host's model, as the ``sample``
    hook receives it (``sampling/createMessage``, Q3).

    ``messages`` (each ``{"role", "content"}``), ``system_prompt``,
    ``max_tokens`` and the whole ``params`` are the server's, exactly as sent:
    **untrusted** (a prompt injection is as likely here as anywhere). Return a
    ``SampleResult``.
    """

    server: str
    tool_id: str | None
    messages: tuple[Mapping[str, Any], ...] = field(repr=False)
    max_tokens: int | None = None
    system_prompt: str | None = field(default=None, repr=False)
    params: Mapping[str, Any] = field(default_factory=dict, repr=False)


@record(frozen=True, slots=True)
class SampleResult:
    """The host model's answer to a ``Sampling``: ``text`` (or a whole content block
    as ``content``), the ``model`` that wrote it and why it stopped."""

    model: str
    text: str | None = field(default=None, repr=False)
    content: Mapping[str, Any] | None = field(default=None, repr=False)
    stop_reason: str | None = "endTurn"

    def __post_init__(self) -> None:
        if (self.text is None) == (self.content is None):
            raise ValueError("a SampleResult has text or content, one of the two")
        if self.text is not None and not isinstance(self.text, str):
            raise TypeError("a SampleResult's text is a string")
        if self.content is not None and not isinstance(self.content, Mapping):
            raise TypeError("a SampleResult's content is a mapping (one content block)")
        if self.stop_reason is not None and not isinstance(self.stop_reason, str):
            raise TypeError("a SampleResult's stop_reason is a string or None")


class UrlElicitationRequired(McpError):
    """The server refused the call until the person visits one or more URLs
    (``-32042``, Q2). ``elicitations`` holds them as URL ``Elicitation``s; the
    library opens none of them. Once the person has been there (an
    ``ElicitationCompleted`` may say so), call again."""

    def __init__(self, message: str, *, elicitations: tuple[Elicitation, ...] = ()) -> None:
        super().__init__(message)
        self.elicitations = elicitations


@record(frozen=True, slots=True)
class AskHost:
    """D2: run the host's ``hook`` with ``request`` and report what it returned under
    ``attempt`` (``hook_answered`` / ``hook_failed``): ``"elicit"`` with an
    ``Elicitation``, ``"sample"`` with a ``Sampling``, ``"roots"`` with nothing
    (``request`` is ``None``: the hook takes no argument)."""

    attempt: int
    hook: str
    request: Elicitation | Sampling | None


# --- reading the question, checking the answer ------------------------------------------


def read_elicitation(
    params: object, *, server: str, tool_id: str | None, url: bool = False
) -> Elicitation | str:
    """The question a server's ``elicitation/create`` params ask, or why they are not
    one this client can put to a person (a short, escaped reason). ``url``: the
    host takes URL questions."""
    if not isinstance(params, Mapping):
        return "the elicitation/create params are not a JSON object"
    mode = params.get("mode", "form")
    if mode not in ("form", "url") or (mode == "url" and not url):
        shown = excerpt(mode, 20) if isinstance(mode, str) else "a non-string"
        return f"this client does not offer {shown} elicitation"
    message = params.get("message")
    if not isinstance(message, str):
        return "the elicitation has no message"
    if mode == "url":
        return _url_question(params, message, server=server, tool_id=tool_id)
    schema = params.get("requestedSchema")
    if not isinstance(schema, Mapping) or (
        "properties" in schema and not isinstance(schema["properties"], Mapping)
    ):
        return "the elicitation's requestedSchema is not a JSON object schema"
    return Elicitation(server=server, tool_id=tool_id, mode="form", message=message, schema=schema)


def _url_question(
    params: Mapping[str, Any], message: str, *, server: str, tool_id: str | None
) -> Elicitation | str:
    from ._links import link_target  # loaded with the first URL question (B5)

    link = params.get("url")
    if (
        not isinstance(link, str)
        or not link.lower().startswith(("https://", "http://"))
        or link_target(link) is None  # no host a browser would open: nothing to show
    ):
        return "the URL elicitation has no http(s) URL"
    if len(link) > MAX_URL:
        return f"the URL elicitation's URL is longer than {MAX_URL} characters"
    ident = params.get("elicitationId")
    return Elicitation(
        server=server,
        tool_id=tool_id,
        mode="url",
        message=message,
        schema={},
        url=link,
        elicitation_id=ident if isinstance(ident, str) else None,
    )


def url_elicitation_required(
    data: object, detail: str, *, server: str, tool_id: str | None
) -> UrlElicitationRequired:
    """The ``-32042`` error as a typed one: the URLs its data names (malformed
    entries are left out), and a message showing only their hosts."""
    entries = data.get("elicitations") if isinstance(data, Mapping) else None
    found: list[Elicitation] = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping):
            question = _url_question(
                entry, str(entry.get("message") or ""), server=server, tool_id=tool_id
            )
            if isinstance(question, Elicitation):
                found.append(question)
    hosts = ", ".join(excerpt(_origin_of(q.url or ""), 80) for q in found[:5]) or "none given"
    return UrlElicitationRequired(
        f"the server needs the person to visit {len(found)} URL(s) first ({hosts}): {detail}",
        elicitations=tuple(found),
    )


def _origin_of(link: str) -> str:
    """The site a browser would open for ``link`` (``link_target``, the one rule):
    what may be shown of it (its path and query may hold a secret)."""
    from ._links import link_target

    target = link_target(link)
    return target.origin if target is not None else "?"


def check_answer(
    elicitation: Elicitation, answer: object, *, apply_defaults: bool
) -> dict[str, Any]:
    """The wire form of the hook's ``answer``; ``InputError`` when it cannot be sent.

    Accepted content must fit the form: only its fields, each of its type (and
    among an enum's values, within a string's or number's bounds), every
    required field present; with ``apply_defaults`` the form's defaults fill
    the fields the person left out first.
    """
    if not isinstance(answer, ElicitResult):
        raise InputError(
            f"the elicit hook returned a {type(answer).__name__}, not an ElicitResult",
            hook="elicit",
            outcome="unusable",
        )
    if answer.action != "accept":
        return {"action": answer.action}
    if elicitation.mode == "url":
        if answer.content:
            raise InputError(
                "an accepted URL question carries no content (the person's visit is "
                "between them and the server)",
                hook="elicit",
                outcome="invalid",
            )
        return {"action": "accept"}
    content = dict(answer.content or {})
    fields = elicitation.fields
    if apply_defaults:
        for name, spec in fields.items():
            if name not in content and isinstance(spec, Mapping) and "default" in spec:
                content[name] = spec["default"]
    problems = [p for name, value in content.items() if (p := _field_problem(fields, name, value))]
    required = elicitation.schema.get("required")
    if isinstance(required, list):
        problems += [
            f"{excerpt(name, 60)!r} is required"
            for name in required
            if isinstance(name, str) and name not in content
        ]
    if problems:
        shown = "; ".join(problems[:5]) + ("; …" if len(problems) > 5 else "")
        raise InputError(
            f"the accepted answer does not fit the server's form: {shown}",
            hook="elicit",
            outcome="invalid",
        )
    return {"action": "accept", "content": content}


def _field_problem(fields: Mapping[str, Any], name: object, value: object) -> str | None:
    """What is wrong with one answered field (its value itself is never shown)."""
    if not isinstance(name, str):
        return "a field name is not a string"
    shown = repr(excerpt(name, 60))
    spec = fields.get(name)
    if spec is None:
        return f"{shown} is not a field of the form"
    if not isinstance(spec, Mapping):
        return None  # a field the server did not describe: nothing to check it against
    kind = spec.get("type")
    if kind == "array":
        return _choices_problem(shown, spec, value)
    if kind in _PRIMITIVES and not _is_type(kind, value):
        return f"{shown} must be {'an' if kind == 'integer' else 'a'} {kind}"
    if kind is None and not isinstance(value, (str, int, float, bool)):
        return f"{shown} must be a string, number or boolean"
    allowed = _allowed(spec)
    if allowed is not None and value not in allowed:
        return f"{shown} must be one of the form's choices"
    if isinstance(value, str):
        if _outside(len(value), spec.get("minLength"), spec.get("maxLength")):
            return f"{shown} has a length outside the form's bounds"
    elif _is_type("number", value) and _outside(value, spec.get("minimum"), spec.get("maximum")):  # type: ignore[arg-type]
        return f"{shown} is outside the form's bounds"
    return None


def _choices_problem(shown: str, spec: Mapping[str, Any], value: object) -> str | None:
    """A multi-select field: a list of the allowed strings, within its item bounds."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"{shown} must be a list of strings"
    items = spec.get("items")
    allowed = _allowed(items) if isinstance(items, Mapping) else None
    if allowed is not None and any(v not in allowed for v in value):
        return f"{shown} must hold only the form's choices"
    if _outside(len(value), spec.get("minItems"), spec.get("maxItems")):
        return f"{shown} has a number of choices outside the form's bounds"
    return None


def _allowed(spec: Mapping[str, Any]) -> list[object] | None:
    """The values an enum field allows (``enum``, or ``oneOf``/``anyOf`` of ``const``)."""
    enum = spec.get("enum")
    if isinstance(enum, list):
        return enum
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list):
            return [o.get("const") for o in options if isinstance(o, Mapping) and "const" in o]
    return None


def _is_type(kind: str, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if kind == "integer":
        return isinstance(value, int) or (math.isfinite(value) and value.is_integer())
    return math.isfinite(value)


def _outside(value: float, low: object, high: object) -> bool:
    """``value`` breaks a bound the form gives (a bound that is not a number is none)."""
    if isinstance(low, (int, float)) and not isinstance(low, bool) and value < low:
        return True
    return isinstance(high, (int, float)) and not isinstance(high, bool) and value > high


# The public classes show under their public names; their annotations are resolved
# here first, where their names are in scope (get_type_hints would look in mcpcore).
for _public in (
    AskHost,
    ElicitResult,
    Elicitation,
    InputError,
    SampleResult,
    Sampling,
    UrlElicitationRequired,
):
    _public.__annotations__ = get_type_hints(_public)
    _public.__module__ = "mcpcore"
del _public
