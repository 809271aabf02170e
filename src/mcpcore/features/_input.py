"""Input from a person: what the session does with a server's question (Q1, Q5).

A server may ask the person behind a client a question in the middle of a
call: a small form ("which branch?"), or a URL to visit (a third-party
sign-in, a payment) that the library never opens itself. This module owns
the ``InputDesk``, the session's part that acts on it, apart from the wire's
framing, what a host declares (``_input_options``, read by every session,
while this module loads only when a question first comes, B5) and the shapes
of the questions and answers (``_questions``):

* the ``InputDesk`` turns a question into a hook action (``AskHost``, with an
  attempt id and a deadline, D2), waits for its answer, checks it, and sends
  it: as the response to the server's ``elicitation/create`` request in the
  handshake era, or in the next round of an ``input_required`` call at
  2026-07-28. A hook that raises, answers something unusable or answers too
  late fails only the call it belongs to (``InputError``);
* the handshake era's URL leftovers (Q2): ``notifications/elicitation/complete``
  becomes an ``ElicitationCompleted`` event, and the ``-32042`` error a
  ``UrlElicitationRequired`` carrying the URLs to visit.

The hook's attempts are numbered from ``INPUT_ATTEMPTS_FROM`` so that a
driver reports every hook, sign-in and input alike, through one
``hook_answered`` / ``hook_failed`` pair and the engine knows whose it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..base._errors import LocalProtocolError, McpError, RemoteProtocolError
from ..base._escape import excerpt
from ..base._events import ElicitationCompleted, RequestSucceeded
from ..base._record import record
from ..wire._jsonrpc import ErrorResponse, Notification, Request, Result, encode_message
from ..wire._modern import answer_input_requests
from ._input_options import (
    INPUT_ATTEMPTS_FROM,
    URL_ELICITATION_REQUIRED,
    InputOptions,
    check_on_input,
    client_capabilities,
)
from ._questions import (
    MAX_URL,
    AskHost,
    Elicitation,
    InputError,
    Sampling,
    check_answer,
    read_elicitation,
    url_elicitation_required,
)

if TYPE_CHECKING:
    from ..auth._hooks import HookFailure
    from ..wire._requests import Pending
    from ._port import Finish, SessionPort

__all__ = [
    "INPUT_ATTEMPTS_FROM",
    "URL_ELICITATION_REQUIRED",
    "AskHost",
    "InputDesk",
    "InputOptions",
    "client_capabilities",
]

_log = logging.getLogger("mcpcore.input")

_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603


# --- the session's desk ------------------------------------------------------------------

# What the desk does with one server request: ("answer", the result), ("refuse",
# why), or (the hook to ask, what it receives).
_Read = tuple[str, Any]


@record(slots=True)
class _Round:
    """One ``input_required`` round of a call waiting for its hooks (2026-07-28)."""

    pending: Pending
    state: str | None
    has_requests: bool
    answers: dict[str, Any]
    waiting: set[int]
    # Where the answers go (a task's tasks/update, T7); None: the request again.
    finish: Finish | None = None


@record(slots=True)
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

    def __init__(self, session: SessionPort) -> None:
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
            seal_key=keys[0] if (keys := self._s.options.seal_keys) else None,
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
        if self.options.elicit_url and isinstance(ident, str) and len(ident) <= MAX_URL:
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
