"""Input from a person: the ``elicit`` hook and what the session does with it (Q1, Q5).

A server may ask the person behind a client a question in the middle of a
call: a small form ("which branch?"), or a URL to visit (a third-party
sign-in, a payment) that the library never opens itself. This module owns
everything about that question except the wire's framing:

* what a host declares (``InputOptions`` → the ``elicitation`` capability,
  only when it gave an ``elicit`` hook, ``url`` only when it asked for URL
  questions too; nothing at all otherwise, seed 000), which lives in
  ``_input_options`` because every session reads it, while this module loads
  only when a question first comes (B5);
* what the host's hook receives (``Elicitation``) and answers (``ElicitResult``);
* checking an accepted answer against the question's form before it is sent,
  and filling in the form's defaults when the host asked for that
  (``applyDefaults``);
* the ``InputDesk``, the session's part that turns a question into a hook
  action (``AskHost``, with an attempt id and a deadline, D2), waits for its
  answer, and sends it: as the response to the server's ``elicitation/create``
  request in the handshake era, or in the next round of an ``input_required``
  call at 2026-07-28. A hook that raises, answers something unusable or
  answers too late fails only the call it belongs to (``InputError``);
* the handshake era's URL leftovers (Q2): ``notifications/elicitation/complete``
  becomes an ``ElicitationCompleted`` event, and the ``-32042`` error a
  ``UrlElicitationRequired`` carrying the URLs to visit.

The hook's attempts are numbered from ``INPUT_ATTEMPTS_FROM`` so that a
driver reports every hook, sign-in and input alike, through one
``hook_answered`` / ``hook_failed`` pair and the engine knows whose it is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from ..base._errors import LocalProtocolError, McpError, RemoteProtocolError
from ..base._escape import excerpt
from ..base._events import ElicitationCompleted, RequestSucceeded
from ..wire._jsonrpc import ErrorResponse, Notification, Request, Result, encode_message
from ..wire._modern import answer_input_requests
from ._desks import check_on_input
from ._input_options import (
    INPUT_ATTEMPTS_FROM,
    URL_ELICITATION_REQUIRED,
    InputOptions,
    client_capabilities,
)

if TYPE_CHECKING:
    from ..auth._hooks import HookFailure
    from ..session._session import ClientSession
    from ..wire._requests import Pending
    from ._links import LinkTarget

__all__ = [
    "INPUT_ATTEMPTS_FROM",
    "URL_ELICITATION_REQUIRED",
    "AskHost",
    "ElicitResult",
    "Elicitation",
    "InputDesk",
    "InputError",
    "InputOptions",
    "SampleResult",
    "Sampling",
    "UrlElicitationRequired",
    "check_answer",
    "client_capabilities",
    "read_elicitation",
]

_log = logging.getLogger("mcpcore.input")

_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603

# The longest URL a URL question may carry.
_MAX_URL = 8192

# What a form field may hold: the restricted schema's primitive types.
_PRIMITIVES = ("string", "number", "integer", "boolean")


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
    if len(link) > _MAX_URL:
        return f"the URL elicitation's URL is longer than {_MAX_URL} characters"
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


# --- the session's desk ------------------------------------------------------------------

# Where a round's answers go when not into the request again: (params added, now).
Finish = Callable[[dict[str, Any], float], None]

# What the desk does with one server request: ("answer", the result), ("refuse",
# why), or (the hook to ask, what it receives).
_Read = tuple[str, Any]


@dataclass(slots=True)
class _Round:
    """One ``input_required`` round of a call waiting for its hooks (2026-07-28)."""

    pending: Pending
    state: str | None
    has_requests: bool
    answers: dict[str, Any]
    waiting: set[int]
    # Where the answers go (a task's tasks/update, T7); None: the request again.
    finish: Finish | None = None


@dataclass(slots=True)
class _Attempt:
    """One hook attempt: the hook, its question, its deadline, where its answer goes."""

    hook: str
    question: Elicitation | Sampling | None
    deadline: float
    # Handshake era: the server's request to answer and the request whose stream
    # carried it (None: the GET stream). 2026-07-28: the call's id and the key.
    request: Request | None = None
    related: int | None = None
    call_id: int | None = None
    key: str | None = None


class InputDesk:
    """The session's questions for the person: hook attempts, their deadlines, and
    the answers they become. See the module docstring."""

    def __init__(self, session: ClientSession) -> None:
        self._s = session
        self._next = INPUT_ATTEMPTS_FROM
        self._attempts: dict[int, _Attempt] = {}
        self._rounds: dict[int, _Round] = {}  # by the call's id
        self.actions: list[AskHost] = []
        # Q4: calls that return their questions instead of asking the hook, the
        # endpoint's digest continuations are bound to, and the ones resumed here.
        self.pausing: set[int] = set()
        self.used: set[str] = set()

    @property
    def endpoint(self) -> str:
        """Q4: the digest continuations of this endpoint carry (``""`` without a URL);
        computed when a call pauses or resumes, so hashlib loads only then (B5)."""
        url = self._s.endpoint_url
        if url is None:
            return ""
        from ._resume import endpoint_digest

        return endpoint_digest(url)

    @property
    def options(self) -> InputOptions:
        return self._s.options.input

    # --- outputs -------------------------------------------------------------------

    def take_actions(self) -> list[AskHost]:
        out, self.actions = self.actions, []
        return out

    def next_deadline(self) -> float | None:
        if not self._attempts and not self._rounds:
            return None  # nobody is being asked: the usual case, asked after every input
        times = [a.deadline for a in self._attempts.values()]
        times += [r.pending.deadline for r in self._rounds.values() if r.pending.deadline]
        return min(times) if times else None

    @property
    def call_ids(self) -> list[int]:
        """The calls waiting for the person between two rounds (2026-07-28)."""
        return list(self._rounds)

    @property
    def idle(self) -> bool:
        return not self._attempts and not self._rounds

    # --- questions in -------------------------------------------------------------

    def _read(self, method: object, params: object, tool_id: str | None) -> _Read | None:
        """What this client does with one server request: ``None`` when it offers
        nothing for it; else an answer now, a refusal (why), or a hook to ask."""
        options, server = self.options, self._s.options.server_name
        if method == "elicitation/create" and options.elicit_form:
            question = read_elicitation(
                params, server=server, tool_id=tool_id, url=options.elicit_url
            )
            return ("refuse", question) if isinstance(question, str) else ("elicit", question)
        if method == "roots/list" and options.roots is not None:
            return ("answer", {"roots": [dict(root) for root in options.roots]})
        if method == "roots/list" and options.roots_hook:
            return ("roots", None)
        if method == "sampling/createMessage" and options.sampling:
            from ._roots import read_sampling

            sampling = read_sampling(params, server=server, tool_id=tool_id)
            return ("refuse", sampling) if isinstance(sampling, str) else ("sample", sampling)
        return None

    def server_request(self, request: Request, related: int | None, now: float) -> bool:
        """Handshake era: a server's ``elicitation/create``, ``roots/list`` or
        ``sampling/createMessage``, answered or put to its hook. False when this
        client offers no answer to it (the session refuses it as before)."""
        carrier = self._s.path.pending.get(related) if related is not None else None
        tool = carrier.tool if carrier is not None else None
        read = self._read(request.method, request.params, tool.id if tool is not None else None)
        if read is None:
            return False
        kind, what = read
        if kind == "refuse":
            self._s.path.outgoing.append(
                ErrorResponse(id=request.id, code=_INVALID_PARAMS, message=str(what))
            )
        elif kind == "answer":
            self._s.path.outgoing.append(Result(id=request.id, result=what))
        else:
            question = what if isinstance(what, (Elicitation, Sampling)) else None
            self._ask(_Attempt(kind, question, 0.0, request=request, related=related), now)
        return True

    def roots_changed(self) -> None:
        """Q3: the host's roots changed: the handshake era's server is told (a
        2026-07-28 server asks for them in each round anyway)."""
        if not (self.options.roots is not None or self.options.roots_hook):
            from ..base._errors import InvalidState

            raise InvalidState("this client offers no roots: give roots= when creating it")
        if self._s.era == "legacy" and self._s.ready:
            self._s.path.outgoing.append(
                Notification(method="notifications/roots/list_changed", params=None)
            )

    def input_round(
        self,
        pending: Pending,
        requests: object,
        state: str | None,
        now: float,
        finish: Finish | None = None,
    ) -> None:
        """2026-07-28: the ``inputRequests`` of an ``input_required`` result, answered
        from the host's hooks and lists, then the request sent again; a client that
        offers nothing answers as E4 says. Raises ``RemoteProtocolError`` for a
        request this client cannot answer. A call made with ``on_input="return"``
        ends here with an ``InputRequired`` when the round asks the person (Q4)."""
        if requests is not None and not isinstance(requests, Mapping):
            raise RemoteProtocolError("the server's inputRequests is not a JSON object")
        if (
            pending.call_id in self.pausing
            and requests
            and self._pause(pending, requests, state, now)
        ):
            return
        if not self.options.offered:
            extra: dict[str, Any] = {}
            if requests is not None:
                extra["inputResponses"] = answer_input_requests(requests)
            if state is not None:
                extra["requestState"] = state  # M50: byte for byte; absent when absent
            if finish is not None:
                finish(extra, now)
            else:
                self._s.path.again(pending, now, extra)
            return
        tool_id = pending.tool.id if pending.tool is not None else None
        answers: dict[str, Any] = {}
        hooks: dict[str, tuple[str, Elicitation | Sampling | None]] = {}
        for key, ask in (requests or {}).items():
            method = ask.get("method") if isinstance(ask, Mapping) else None
            read = self._read(
                method, ask.get("params") if isinstance(ask, Mapping) else None, tool_id
            )
            if read is not None and read[0] == "answer":
                answers[key] = read[1]
            elif read is not None and read[0] not in ("refuse", "answer"):
                what = read[1]
                hooks[key] = (read[0], what if isinstance(what, (Elicitation, Sampling)) else None)
            elif method == "elicitation/create":
                answers[key] = {"action": "cancel"}  # E4: no person saw it
            elif method == "roots/list":
                answers[key] = {"roots": []}  # E4
            else:
                shown = excerpt(method, 60) if isinstance(method, str) else "no method"
                raise RemoteProtocolError(
                    f"the server asked for {shown} to finish the call, which this client "
                    "does not offer" + (" in that form" if read is not None else "")
                )
        waiting: set[int] = set()
        round_ = _Round(pending, state, requests is not None, answers, waiting, finish)
        self._rounds[pending.call_id] = round_
        for key, (hook, question) in hooks.items():
            waiting.add(
                self._ask(_Attempt(hook, question, 0.0, call_id=pending.call_id, key=key), now)
            )
        if not waiting:
            self._finish_round(round_, now)

    check_on_input = staticmethod(check_on_input)

    def on_call(self, call_id: int, on_input: str) -> int:
        """Q4: a call made with ``on_input="return"`` ends with an ``InputRequired``
        (``RequestSucceeded``) at its first question for the person, and at
        2026-07-28 declares that it takes questions; in the handshake era the
        questions go to the hook as always. Returns ``call_id``."""
        if on_input == "return":
            self.pause(call_id)
            if self._s.modern:
                self._s.path.declare(call_id, self.pause_capabilities())
        return call_id

    def pause(self, call_id: int) -> None:
        # Calls that ended without pausing are forgotten here (they no longer carry).
        carriers, tasks = self._s.path.carriers, self._s.task_desk.calls
        self.pausing = {c for c in self.pausing if c in carriers or c in tasks}
        self.pausing.add(call_id)

    def pause_capabilities(self) -> dict[str, Any]:
        """What a call that may pause declares: form elicitation at least (Q4)."""
        return self._s.task_desk.declare(
            client_capabilities(replace(self.options, elicit_form=True))
        )

    def _pause(
        self, pending: Pending, requests: Mapping[str, Any], state: str | None, now: float
    ) -> bool:
        from ._resume import paused_call

        for ask in requests.values():
            method = ask.get("method") if isinstance(ask, Mapping) else None
            if method not in ("elicitation/create", "roots/list"):
                return False  # not something a person can answer: fails as usual
        tool = pending.tool
        paused = paused_call(
            server=self._s.options.server_name,
            tool_id=tool.id if tool is not None else None,
            tool=tool.name if tool is not None else str((pending.base or {}).get("name")),
            endpoint=self.endpoint,
            params=pending.base or {},
            request_state=state,
            input_requests=requests,
            rounds=pending.rounds,
            elicit_url=self.options.elicit_url,
            task_id=(pending.extra or {}).get("taskId")
            if pending.kind.method == "tasks/get"
            else None,
            # two calls that paused alike stay two continuations, each resumable once
            pause=f"{pending.call_id}@{now!r}",
        )
        if paused is None:
            return False
        self.pausing.discard(pending.call_id)
        _log.debug("%s call id=%d paused for input", self._s.tag, pending.call_id)
        self._s.events.append(RequestSucceeded(call_id=pending.call_id, value=paused))
        return True

    def _ask(self, attempt: _Attempt, now: float) -> int:
        number = self._next
        self._next += 1
        attempt.deadline = now + self.options.timeout
        self._attempts[number] = attempt
        self.actions.append(AskHost(attempt=number, hook=attempt.hook, request=attempt.question))
        _log.debug("%s asked the %s hook (attempt %d)", self._s.tag, attempt.hook, number)
        return number

    def _check(self, held: _Attempt, value: object) -> dict[str, Any]:
        """The wire answer a hook's value makes; ``InputError`` when it cannot."""
        answer: dict[str, Any]
        if held.hook == "roots":
            from ._roots import check_roots

            answer = {"roots": list(check_roots(value, hook=True))}
        elif held.hook == "sample":
            from ._roots import check_sample

            answer = check_sample(value)
        else:
            assert isinstance(held.question, Elicitation)
            answer = check_answer(held.question, value, apply_defaults=self.options.apply_defaults)
        try:
            # A value JSON cannot carry (NaN, a set, any object) in a field the form
            # does not type, or in a sample's content, would otherwise raise later,
            # out of the engine, when the answer or the next round is encoded.
            encode_message(Result(id=0, result=answer))
        except LocalProtocolError:
            raise InputError(
                f"the {held.hook} hook's answer holds a value JSON cannot carry",
                hook=held.hook,
                outcome="unusable",
            ) from None
        return answer

    # --- answers in ---------------------------------------------------------------

    def hook_answered(self, attempt: int, value: object, now: float) -> None:
        held = self._attempts.pop(attempt, None)
        if held is None:
            _log.debug("a late answer to input hook attempt %d was ignored", attempt)
            return
        try:
            answer = self._check(held, value)
        except InputError as exc:
            self._failed(held, exc, now)
            return
        if held.request is not None:
            self._s.path.outgoing.append(Result(id=held.request.id, result=answer))
            return
        round_ = self._rounds.get(held.call_id) if held.call_id is not None else None
        if round_ is None:
            return
        assert held.key is not None
        round_.answers[held.key] = answer
        round_.waiting.discard(attempt)
        if not round_.waiting:
            self._finish_round(round_, now)

    def hook_failed(self, attempt: int, failure: HookFailure, now: float) -> None:
        held = self._attempts.pop(attempt, None)
        if held is None:
            _log.debug("a late failure of input hook attempt %d was ignored", attempt)
            return
        outcome = failure.value
        why = "raised an exception" if outcome == "raised" else "was not given"
        error = InputError(f"the {held.hook} hook {why}", hook=held.hook, outcome=outcome)
        self._failed(held, error, now)

    def _finish_round(self, round_: _Round, now: float) -> None:
        pending = round_.pending
        del self._rounds[pending.call_id]
        extra: dict[str, Any] = {}
        if round_.has_requests:
            extra["inputResponses"] = round_.answers
        if round_.state is not None:
            extra["requestState"] = round_.state  # M50: byte for byte; absent when absent
        if round_.finish is not None:
            round_.finish(extra, now)
        else:
            self._s.path.again(pending, now, extra)

    def _failed(self, held: _Attempt, error: InputError, now: float) -> None:
        """The hook's failure costs only the call it belongs to."""
        _log.info("%s %s", self._s.tag, error)
        if held.request is not None:
            # The server learns that no answer will come; its call then ends as it
            # chooses, and ours fails with the reason.
            self._s.path.outgoing.append(
                ErrorResponse(
                    id=held.request.id,
                    code=_INTERNAL_ERROR,
                    message=f"the client could not answer {held.request.method[:60]}",
                )
            )
            carrier = self._s.path.pending.get(held.related) if held.related is not None else None
            if carrier is not None and carrier.hosted:
                self._s.fail_request(carrier, error, now, f"the {held.hook} hook failed")
            return
        round_ = self._rounds.pop(held.call_id, None) if held.call_id is not None else None
        if round_ is None:
            return
        self._forget_round(round_)
        round_.pending.on_failed(round_.pending, error, now)

    def _forget_round(self, round_: _Round) -> None:
        for number in round_.waiting:
            self._attempts.pop(number, None)

    def refusal(self, pending: Pending, message: ErrorResponse) -> McpError | None:
        """Q2: a ``-32042`` answering the host's request, as ``UrlElicitationRequired``."""
        if message.code != URL_ELICITATION_REQUIRED or not pending.hosted:
            return None
        from ..wire._requests import error_detail

        return url_elicitation_required(
            message.data,
            error_detail(message),
            server=self._s.options.server_name,
            tool_id=pending.tool.id if pending.tool is not None else None,
        )

    def completed(self, params: Mapping[str, Any]) -> None:
        """Handshake era: ``notifications/elicitation/complete`` for a host that takes
        URL questions becomes an event (anything malformed is dropped)."""
        ident = params.get("elicitationId")
        if self.options.elicit_url and isinstance(ident, str) and len(ident) <= _MAX_URL:
            self._s.events.append(
                ElicitationCompleted(server=self._s.options.server_name, elicitation_id=ident)
            )
        else:
            _log.debug("%s ignored an elicitation/complete notice", self._s.tag)

    # --- time, cancelling, closing ---------------------------------------------------

    def handle_timer(self, now: float) -> None:
        for number, held in list(self._attempts.items()):
            if now >= held.deadline and number in self._attempts:
                self._attempts.pop(number)
                limit = self.options.timeout
                self._failed(
                    held,
                    InputError(
                        f"the {held.hook} hook did not answer within {limit:g} s",
                        hook=held.hook,
                        outcome="late",
                    ),
                    now,
                )
        for call_id, round_ in list(self._rounds.items()):
            deadline = round_.pending.deadline
            if deadline is not None and now >= deadline and call_id in self._rounds:
                del self._rounds[call_id]
                self._forget_round(round_)
                from ._port import timeout_error

                round_.pending.on_failed(round_.pending, timeout_error(round_.pending), now)

    def session_expired(self) -> None:
        """H6: the server forgot the session whose requests the handshake era's questions
        were: they are void. Their hooks' later reports change nothing, and no answer
        goes to the next session (which never asked; a failure would otherwise also
        fail a call resent there)."""
        for number, held in list(self._attempts.items()):
            if held.request is not None:
                del self._attempts[number]
                _log.debug("%s forgot input hook attempt %d (session ended)", self._s.tag, number)

    def cancel(self, call_id: int) -> bool:
        """A call waiting for the person is abandoned: its questions are forgotten
        (at 2026-07-28 its stream is already closed: nothing to tell the server)."""
        round_ = self._rounds.pop(call_id, None)
        if round_ is None:
            return False
        self._forget_round(round_)
        return True

    def close(self) -> None:
        self.pausing.clear()
        self._attempts.clear()
        self._rounds.clear()
        self.actions.clear()


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
