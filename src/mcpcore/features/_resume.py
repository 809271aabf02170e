"""Calls that pause for a person and resume later (Q4, 2026-07-28).

At 2026-07-28 a server that needs input answers a ``tools/call`` with an
``input_required`` result: questions and an opaque ``requestState``. A host
that passes ``on_input="return"`` gets that moment as a value, an
``InputRequired``, instead of a hook call: the questions, and a
``Continuation`` that holds everything needed to finish the call (the
request's params, the state, the questions, the round count) and serializes to
JSON. ``resume(continuation, responses)`` finishes it, from the same client or
from a new one in another process, as long as it talks to the same endpoint.

This module owns the continuation's shape, its JSON form and the checks a
resume passes before anything is sent: the endpoint it belongs to, every
question answered (each answer checked against its form), nothing answered
that was not asked. Whether a continuation was used already is the session's
to remember (per client).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, get_type_hints

from ..base._errors import InvalidState, InvalidValue, UnknownTool
from ..base._escape import excerpt
from ..base._record import record
from ..base._seal import (
    SEAL_FIELD,
    SealKeys,
    canonical_bytes,
    canonical_text,
    check_seal,
    seal_keys,
    seal_of,
)
from ._questions import Elicitation, check_answer, read_elicitation

if TYPE_CHECKING:
    from ._port import SessionPort

__all__ = ["Continuation", "InputRequired", "endpoint_digest", "resume_call", "resume_params"]

_FORMAT = 1
# A continuation larger than this is refused when read back (a host's store may hold anything).
_MAX_CONTINUATION = 4 * 1024 * 1024


def endpoint_digest(url: str) -> str:
    """What names an endpoint in a continuation: a digest of its URL, so that no
    part of the URL (a key in its query) is written into what the host stores."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


@record(frozen=True, slots=True)
class Continuation:
    """Everything needed to finish a paused call (Q4); ``to_json()`` /
    ``Continuation.from_json(text)`` keep it anywhere; ``key=`` seals it and
    checks its seal (U2).

    ``tool`` is the tool's name on the server; ``params`` the call's params as
    first sent (its arguments: store them as carefully as the call itself);
    ``request_state`` the server's opaque state, echoed byte for byte;
    ``input_requests`` the questions as the server sent them; ``rounds`` how
    many rounds of input the call took so far; ``endpoint`` a digest of the
    server's URL; ``pause`` which pause of which call this is (the client's call
    id and the time it paused), so that two calls that paused alike are still two
    continuations. ``id`` names this continuation (a digest of all of it).
    """

    endpoint: str
    tool: str
    params: Mapping[str, Any] = field(repr=False)
    request_state: str | None = field(repr=False)
    input_requests: Mapping[str, Any] = field(repr=False)
    rounds: int
    # T7: the task that waits for the answers (they go with tasks/update), if any.
    task_id: str | None = None
    pause: str = ""

    # U2: the seal this continuation carries (a client with seal_key= made it, or
    # it was read back from sealed text); to_json() writes it. Never compared.
    seal: str = field(default="", repr=False, compare=False)

    @property
    def id(self) -> str:
        return hashlib.sha256(canonical_bytes(self._body())).hexdigest()[:32]

    def _body(self) -> dict[str, Any]:
        """Its fields as written, without the seal: what a seal covers."""
        return {
            "mcpcoreContinuation": _FORMAT,
            "endpoint": self.endpoint,
            "tool": self.tool,
            "params": self.params,
            "requestState": self.request_state,
            "inputRequests": self.input_requests,
            "rounds": self.rounds,
            **({"taskId": self.task_id} if self.task_id is not None else {}),
            **({"pause": self.pause} if self.pause else {}),
        }

    def to_json(self, *, key: SealKeys | None = None) -> str:
        """The continuation as JSON (canonical form). With ``key`` (bytes or text,
        or a sequence of keys: the first is used), sealed with an HMAC-SHA256 of
        that form (U2); without it, the seal it carries, if any."""
        body = self._body()
        seal = seal_of(body, seal_keys(key)[0]) if key is not None else self.seal
        if seal:
            body[SEAL_FIELD] = seal
        return canonical_text(body)

    def sealed(self, key: SealKeys) -> Continuation:
        """This continuation carrying its seal under ``key`` (the first, given several)."""
        return replace(self, seal=seal_of(self._body(), seal_keys(key)[0]))

    @classmethod
    def from_json(cls, text: str | bytes, *, key: SealKeys | None = None) -> Continuation:
        """Read a continuation back; ``InvalidValue`` when ``text`` is not one.

        With ``key`` (one key, or several: the new one first, then old ones while
        keys rotate), its seal must match one of them, or ``SealBroken`` (an
        ``InvalidValue``) is raised, naming nothing of its content (U2). Without
        ``key`` a seal is kept as it is, unchecked: a client made with
        ``seal_key=`` checks it when the continuation is resumed.
        """
        keys = seal_keys(key) if key is not None else None
        if len(text) > _MAX_CONTINUATION:
            raise InvalidValue("the continuation is larger than any this client writes")
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise InvalidValue("the continuation is not JSON") from None
        if not isinstance(data, dict) or data.get("mcpcoreContinuation") != _FORMAT:
            raise InvalidValue("the text is not a continuation this client wrote")
        seal = data.pop(SEAL_FIELD, "")
        if keys is not None:
            check_seal(data, seal, keys, "continuation")
        endpoint, tool, params = data.get("endpoint"), data.get("tool"), data.get("params")
        state, requests, rounds, pause = (
            data.get("requestState"),
            data.get("inputRequests"),
            data.get("rounds"),
            data.get("pause", ""),
        )
        task_id = data.get("taskId")
        if not (
            isinstance(endpoint, str)
            and isinstance(tool, str)
            and isinstance(params, dict)
            and params.get("name") == tool
            and (state is None or isinstance(state, str))
            and isinstance(requests, dict)
            and isinstance(rounds, int)
            and not isinstance(rounds, bool)
            and rounds >= 1
            and (task_id is None or (isinstance(task_id, str) and task_id))
            and isinstance(pause, str)
            and isinstance(seal, str)
        ):
            raise InvalidValue("the continuation is damaged (a field is missing or wrong)")
        return cls(endpoint, tool, params, state, requests, rounds, task_id, pause, seal)


@record(frozen=True, slots=True)
class InputRequired:
    """A call paused for a person (``call(..., on_input="return")``, Q4).

    ``questions`` maps each key the server chose to an ``Elicitation`` (its
    texts untrusted, as always); answer them, then ``resume(continuation,
    {key: ElicitResult, ...})``. The continuation may be kept as JSON and
    resumed later, even by another client in another process.
    """

    server: str
    tool_id: str | None
    questions: Mapping[str, Elicitation] = field(repr=False)
    continuation: Continuation = field(repr=False)


def paused_call(
    *,
    server: str,
    tool_id: str | None,
    tool: str,
    endpoint: str,
    params: Mapping[str, Any],
    request_state: str | None,
    input_requests: Mapping[str, Any],
    rounds: int,
    elicit_url: bool,
    task_id: str | None = None,
    pause: str = "",
    seal_key: bytes | None = None,
) -> InputRequired | None:
    """The ``InputRequired`` for a round that asks the person something, or
    ``None`` when no question in it is for a person (roots only: answered as usual)."""
    questions: dict[str, Elicitation] = {}
    for key, ask in input_requests.items():
        if isinstance(ask, Mapping) and ask.get("method") == "elicitation/create":
            question = read_elicitation(
                ask.get("params"), server=server, tool_id=tool_id, url=elicit_url
            )
            if isinstance(question, Elicitation):
                questions[key] = question
    if not questions:
        return None
    own = {k: v for k, v in params.items() if k != "_meta"}
    meta = params.get("_meta")
    if isinstance(meta, Mapping):
        kept = {k: v for k, v in meta.items() if k != "progressToken"}
        if kept:
            own["_meta"] = kept
    continuation = Continuation(
        endpoint=endpoint,
        tool=tool,
        params=own,
        request_state=request_state,
        input_requests=dict(input_requests),
        rounds=rounds,
        task_id=task_id,
        pause=pause,
    )
    if seal_key is not None:  # U2: the client's seal_key= seals what it gives out
        continuation = continuation.sealed(seal_key)
    return InputRequired(server, tool_id, questions, continuation)


def resume_call(
    session: SessionPort,
    continuation: Continuation,
    responses: Mapping[str, Any],
    now: float,
    *,
    timeout: float | None = None,
    meta: Mapping[str, Any] | None = None,
) -> int:
    """Q4: finish a paused call: its next round with ``responses`` (key →
    ``ElicitResult``); it ends like a call made with ``on_input="return"``.
    ``meta``: the trace context of this resume (V2); it replaces the keys of the
    same names the paused call carried (that call's span has ended).

    Raises at once, with nothing sent: ``InvalidState`` before the session is
    ready, outside 2026-07-28, or for a continuation this client resumed
    already; ``SealBroken`` for one whose seal does not match the client's
    ``seal_key`` (when it has one, U2); ``InvalidValue`` for one of another server, or for answers that do
    not match the questions; ``InputError`` for an answer that does not fit its
    form; ``UnknownTool`` when the server no longer lists the tool.
    """
    from ._port import SessionState, positive_seconds

    desk, options = session.input, session.options
    if session.state is not SessionState.READY:
        raise InvalidState(f"cannot resume a call while the session is {session.state.value!r}")
    if not isinstance(continuation, Continuation):
        raise InvalidValue("resume() takes the Continuation of an InputRequired")
    if not session.modern:
        raise InvalidState("resuming a paused call needs a server that speaks 2026-07-28")
    if options.seal_keys:  # U2: only a continuation sealed with the host's key resumes
        check_seal(continuation._body(), continuation.seal, options.seal_keys, "continuation")
    if continuation.endpoint != desk.endpoint:
        raise InvalidValue("this continuation belongs to a call to another server")
    ident = continuation.id
    if ident in desk.used:
        raise InvalidState("this continuation was resumed already; a call resumes once")
    catalogue = session.tools.catalogue
    tools = catalogue.tools if catalogue is not None else ()
    tool = next((t for t in tools if t.name == continuation.tool), None)
    if tool is None:
        raise UnknownTool(f"{options.server_name}{options.separator}{continuation.tool}")
    budget = options.call_timeout if timeout is None else positive_seconds(timeout)
    extra = resume_params(
        continuation,
        responses,
        server=options.server_name,
        tool_id=tool.id,
        elicit_url=options.input.elicit_url,
        apply_defaults=options.input.apply_defaults,
        roots=options.input.roots,
    )
    if continuation.task_id is not None:  # T7: the answers go to the task
        call_id = session.tasks.answer(continuation.task_id, continuation.rounds, tool, extra, now)
        desk.used.add(ident)
        desk.pause(call_id)
        return call_id
    params = dict(continuation.params)
    if meta:
        kept = params.get("_meta")
        params["_meta"] = {**(kept if isinstance(kept, Mapping) else {}), **meta}
    call_id = session.tools.resume(
        tool,
        params,
        extra,
        now,
        budget,
        rounds=continuation.rounds,
        capabilities=desk.pause_capabilities(),
        firm=timeout is not None,
    )
    desk.used.add(ident)
    desk.pause(call_id)
    return call_id


def resume_params(
    continuation: Continuation,
    responses: Mapping[str, Any],
    *,
    server: str,
    tool_id: str | None,
    elicit_url: bool,
    apply_defaults: bool,
    roots: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The params a resumed call adds (``inputResponses``, ``requestState``).

    A ``roots/list`` in the round is answered with the resuming client's roots
    when it was given them as a list (``roots``), else with none (E4: a roots
    hook is not asked on resume; the host's answers are the person's only).

    Raises before anything is sent: ``InvalidValue`` for a question left
    unanswered, an answer to a question not asked, or responses that are not a
    mapping; ``InputError`` for an answer that does not fit its question.
    """
    if not isinstance(responses, Mapping):
        raise InvalidValue("responses map each question's key to its ElicitResult")
    answers: dict[str, Any] = {}
    for key, ask in continuation.input_requests.items():
        method = ask.get("method") if isinstance(ask, Mapping) else None
        if method == "roots/list":
            answers[key] = {"roots": [dict(root) for root in roots or ()]}
            continue
        question = (
            read_elicitation(ask.get("params"), server=server, tool_id=tool_id, url=elicit_url)
            if isinstance(ask, Mapping) and method == "elicitation/create"
            else "not a question"
        )
        if isinstance(question, str):
            if key in responses:
                # The host answered a question this client cannot send an answer
                # to (a URL question on a client without elicit_url): sending
                # "cancel" instead would lose the person's answer unseen.
                raise InvalidValue(
                    f"the question {excerpt(key, 60)!r} cannot be answered by this client "
                    f"({question}); a URL question needs elicit_url=True"
                )
            answers[key] = {"action": "cancel"}  # E4: no person could see it
            continue
        if key not in responses:
            raise InvalidValue(f"the question {excerpt(key, 60)!r} has no answer")
        answers[key] = check_answer(question, responses[key], apply_defaults=apply_defaults)
    extra = [k for k in responses if k not in continuation.input_requests]
    if extra:
        shown = ", ".join(repr(excerpt(str(k), 60)) for k in extra[:5])
        raise InvalidValue(f"answers to questions the server did not ask: {shown}")
    added: dict[str, Any] = {"inputResponses": answers}
    if continuation.request_state is not None:
        added["requestState"] = continuation.request_state
    return added


for _public in (Continuation, InputRequired):
    _public.__annotations__ = get_type_hints(_public)
    _public.__module__ = "mcpcore"
del _public
