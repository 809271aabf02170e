"""Fuzz what a server may ask the person behind a client (Q1-Q5, D2), in both eras.

The input chooses what the client offers (an ``elicit`` hook for form questions,
URL questions too, ``applyDefaults``, roots as a list or a hook, a ``sample``
hook, or nothing at all), the era (the handshake era, or 2026-07-28), and then
a script: server requests ``elicitation/create``, ``roots/list``,
``sampling/createMessage`` (and ``ping``, junk) with params that are well formed,
nearly so or arbitrary JSON, on a call's stream or on none (handshake era);
``input_required`` rounds whose ``inputRequests`` entries are the same (2026-07-28),
also a task's (a call that became a task asks from its poll, T7);
the hooks' reports (an answer built from the question, with fuzzed values and
values JSON cannot carry, an answer of the wrong type, a hook that raises or was
not given, a report for an attempt that is settled or never was); the clock
moving past hook and call deadlines; calls started and cancelled; the close.

Invariants:

* nothing escapes the session (server input and hook reports only become
  answers, errors and events);
* a hook is only asked what it offers, with a well-formed question: an
  ``Elicitation`` of mode ``form`` (a JSON object schema) or ``url`` (an http(s)
  URL, only when URL questions are offered), a ``Sampling`` with a list of
  message objects, ``roots`` with nothing;
* handshake era: every server request gets exactly one answer (unless the
  client closed while its hook was out): ``{}`` for ping, ``-32601`` when
  nothing is offered for it, ``-32602`` for a malformed question, the hook's
  answer in the wire's shape, or ``-32603`` when the hook failed;
* 2026-07-28: a round that goes out again (or a task's ``tasks/update``) answers
  exactly the keys asked;
* every error is an ``McpError`` without raw control characters; every outgoing
  message encodes; each call ends at most once;
* no form value (``_fuzzlib.SECRET``) in a log record, an error or a repr.
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Mapping
from typing import Any

import _fuzzlib
from _fuzzlib import SECRET, Reader

from mcpcore import ElicitResult, HookFailure, InputOptions, SampleResult
from mcpcore.base._errors import LocalProtocolError, McpError
from mcpcore.base._events import CallCancelled, CallFailed, CallSucceeded, RequestSucceeded
from mcpcore.features._input import AskHost, Elicitation, Sampling
from mcpcore.session._session import ClientSession, SessionOptions
from mcpcore.wire._jsonrpc import ErrorResponse, Request, Result, encode_message

_CONTROLS = {chr(c) for c in range(32)} - {"\t", "\n"} | {"\x7f"}
_METHODS = ("elicitation/create", "roots/list", "sampling/createMessage")
_FIELD_TYPES = ("string", "number", "integer", "boolean", "array", "object", None, 7)
_URLS = (
    f"https://idp.example/authorize?token={SECRET}",
    "http://127.0.0.1:8/x",
    "javascript:alert(1)",
    "https://" + "a" * 9000,
    "HTTPS://EXAMPLE.COM/\x1b[2J",
    "",
)
_ROOTS = ({"uri": "file:///work", "name": "w"},)


def _schema(r: Reader) -> Any:
    """A form: mostly the restricted schema's shape, with edge values."""
    if r.u8() % 6 == 0:
        return r.json_value(3)
    properties: dict[str, Any] = {}
    for _ in range(r.u8() % 4):
        spec: dict[str, Any] = {}
        kind = r.choice(_FIELD_TYPES)
        if kind is not None:
            spec["type"] = kind
        extra = r.u8() % 8
        if extra == 1:
            spec["enum"] = [r.json_value(0) for _ in range(r.u8() % 3)]
        elif extra == 2:
            spec["oneOf"] = [{"const": r.json_value(0)}, r.json_value(1)]
        elif extra == 3:
            spec["minLength"], spec["maxLength"] = r.json_value(0), r.json_value(0)
        elif extra == 4:
            spec["minimum"], spec["maximum"] = r.json_value(0), r.json_value(0)
        elif extra == 5:
            spec["default"] = r.json_value(1)
        elif extra == 6:
            spec["items"] = r.choice(({"enum": ["a", "b"]}, r.json_value(1)))
        properties[r.choice(("branch", "count", "ok", "tags", "")) + r.text(3)] = (
            spec if r.u8() % 8 else r.json_value(1)
        )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if r.flag():
        schema["required"] = [*list(properties)[: r.u8() % 3], *([r.json_value(0)] if r.flag() else [])]
    if r.u8() % 8 == 0:
        schema["properties"] = r.json_value(1)
    return schema


def _params(method: str, r: Reader) -> Any:
    """The params of one server question: well formed, nearly, or anything."""
    shape = r.u8() % 8
    if shape == 0:
        return r.json_value(3)
    if shape == 1:
        return None
    if method == "elicitation/create":
        params: dict[str, Any] = {"message": r.choice((r.text(), "which branch?", 7, None))}
        mode = r.u8() % 5
        if mode == 1:
            params["mode"] = "url"
            params["url"] = r.choice((*_URLS, r.json_value(0)))
            if r.flag():
                params["elicitationId"] = r.choice(("e-1", 7, r.text()))
        elif mode == 2:
            params["mode"] = r.choice(("form", "URL", "", 3, None))
        if mode != 1 or r.flag():
            params["requestedSchema"] = _schema(r)
        return params
    if method == "sampling/createMessage":
        messages: Any = [
            r.choice(({"role": "user", "content": {"type": "text", "text": "hi"}}, r.json_value(1)))
            for _ in range(r.u8() % 3)
        ]
        if shape == 2:
            messages = r.json_value(1)
        out: dict[str, Any] = {"messages": messages}
        if r.flag():
            out["maxTokens"] = r.choice((10, -1, True, 1.5, 2**70, "9"))
        if r.flag():
            out["systemPrompt"] = r.json_value(0)
        return out
    return r.choice(({}, {"_meta": r.json_value(1)}, r.json_value(1)))


def _field_value(spec: object, r: Reader) -> Any:
    """A value for one form field: of its type mostly, or anything."""
    kind = spec.get("type") if isinstance(spec, Mapping) else None
    pick = r.u8() % 10
    if pick == 0:
        return r.json_value(1)
    if pick == 1:
        return r.choice((math.nan, math.inf, {1, 2}, object(), b"x", 2**70, -0.0))
    if kind == "string" or kind is None:
        return r.choice((SECRET, r.text(), "", "\x1b[2J" + SECRET))
    if kind == "boolean":
        return r.flag()
    if kind == "integer":
        return r.u16() - 1000
    if kind == "number":
        return (r.u16() - 1000) / 3
    if kind == "array":
        return [r.choice(("a", "b", SECRET)) for _ in range(r.u8() % 3)]
    return r.json_value(1)


def _hook_answer(ask: AskHost, r: Reader) -> object:
    """What the host's hook returns: built from the question, then bent."""
    pick = r.u8() % 12
    if pick == 0:
        return r.choice((None, SECRET, b"x", 3, {"action": "accept"}, ElicitResult.decline()))
    question = ask.request
    if ask.hook == "roots":
        if pick == 1:
            return r.json_value(2)
        return [
            r.choice(("file:///a", {"uri": "file:///b", "name": SECRET}, {"uri": 7}, "http://x", "file://" + SECRET))
            for _ in range(r.u8() % 3)
        ]
    if ask.hook == "sample":
        if pick == 1:
            return SampleResult(model=r.choice(("m", 7)), content=r.json_value(2) or {"type": "text"})  # type: ignore[arg-type]
        if pick == 2:
            return SampleResult(model="m", content={"type": "text", "text": r.choice((math.nan, {1}, SECRET))})
        if pick == 3:  # a SampleResult bent after it was built (a subclass, a patch)
            bent = SampleResult(model="m", text="t")
            field = r.choice(("content", "text", "stop_reason", "model"))
            if field == "content":
                object.__setattr__(bent, "text", None)
            object.__setattr__(bent, field, r.choice((True, [["type", "text"]], 7, None, r.json_value(1))))
            return bent
        return SampleResult(model="m", text=SECRET, stop_reason=r.choice(("endTurn", None, "\x1b" * 200)))
    if pick == 1:
        return ElicitResult.cancel()
    if pick == 2:
        return ElicitResult.decline()
    if pick == 3:
        return ElicitResult.accept({r.text(): r.json_value(1) for _ in range(r.u8() % 3)})
    fields = question.fields if isinstance(question, Elicitation) else {}
    content = {name: _field_value(spec, r) for name, spec in fields.items() if r.u8() % 4}
    return ElicitResult.accept(content)


def _check_question(ask: AskHost, offer: InputOptions) -> None:
    """Q1-Q3: a hook is only asked what it offers, with a well-formed question."""
    assert SECRET not in repr(ask), repr(ask)
    if ask.hook == "elicit":
        question = ask.request
        assert offer.elicit_form and isinstance(question, Elicitation), ask
        assert isinstance(question.message, str) and isinstance(question.schema, Mapping)
        assert isinstance(question.fields, Mapping)
        if question.mode == "url":
            assert offer.elicit_url and isinstance(question.url, str), ask
            assert question.url.lower().startswith(("https://", "http://")) and len(question.url) <= 8192
        else:
            assert question.mode == "form" and question.url is None
    elif ask.hook == "sample":
        question = ask.request
        assert offer.sampling and isinstance(question, Sampling), ask
        assert all(isinstance(m, Mapping) for m in question.messages)
        assert question.max_tokens is None or type(question.max_tokens) is int
    else:
        assert ask.hook == "roots" and offer.roots_hook and ask.request is None, ask


def _offer(flags: int, r: Reader) -> InputOptions:
    roots = (flags >> 3) % 3
    return InputOptions(
        elicit_form=bool(flags & 1),
        elicit_url=bool(flags & 1) and bool(flags & 2),
        apply_defaults=bool(flags & 4),
        roots=_ROOTS if roots == 1 else None,
        roots_hook=roots == 2,
        sampling=bool(flags & 32),
        timeout=r.choice((1.0, 3.0, 600.0)),
    )


class _Script:
    """The conversation: the server's side, the driver's hook runner, the checks."""

    def __init__(self, r: Reader) -> None:
        self.r = r
        flags = r.u8()
        self.offer = _offer(flags, r)
        self.modern = r.flag()
        self.tasks = self.modern and bool(flags & 64)  # T7: a call may become a task that asks
        self.session = ClientSession(
            SessionOptions(
                server_name="fz",
                call_timeout=5.0,
                startup_timeout=30.0,
                protocol="modern" if self.modern else "legacy",
                input=self.offer,
                tasks=self.tasks,
                task_timeout=20.0,
            )
        )
        self.now = 0.0
        self.pending: dict[Any, Request] = {}  # request id -> our request the server holds
        self.owed: dict[Any, str] = {}  # server request id -> the answer it must get
        self.answered: set[Any] = set()
        self.asks: list[AskHost] = []  # hook attempts not reported yet
        self.attempts_seen: list[int] = []
        self.rounds: dict[int, set[str]] = {}  # call id -> the keys its next round answers
        self.task_rounds: dict[str, set[str]] = {}  # task id -> the keys its tasks/update answers
        self.calls: set[int] = set()
        self.ended: set[int] = set()
        self.next_server_id = 0

    # --- the checks on everything that comes out ---------------------------------------

    def drain(self) -> None:
        s = self.session
        for message in s.take_outgoing():
            encode_message(message)
            if isinstance(message, Request):
                assert isinstance(message.id, int)
                self.pending[message.id] = message
                self._check_round(message)
            elif isinstance(message, (Result, ErrorResponse)):
                self._check_answer(message)
        s.take_abandoned()
        for ask in s.input.take_actions():
            _check_question(ask, self.offer)
            self.asks.append(ask)
            self.attempts_seen.append(ask.attempt)
        # attempts the desk settled itself (deadline, cancel, failed round, close)
        self.asks = [a for a in self.asks if a.attempt in s.input._attempts]
        for event in s.take_events():
            error = getattr(event, "error", None)
            if error is not None:
                assert isinstance(error, McpError), repr(error)
                text = f"{error} {error!r}"
                assert not _CONTROLS & set(str(error)), f"raw control character in {error}"
                assert SECRET not in text, f"the secret in an error: {text!r}"
            ending = isinstance(event, (CallSucceeded, CallFailed, CallCancelled, RequestSucceeded))
            if ending and event.call_id in self.calls:
                assert event.call_id not in self.ended, "a call ended twice"
                self.ended.add(event.call_id)
                self.rounds.pop(event.call_id, None)
        carrying = set(s.path.pending)
        self.pending = {k: v for k, v in self.pending.items() if k in carrying}

    def _check_answer(self, message: Result | ErrorResponse) -> None:
        rid = message.id
        assert rid in self.owed and rid not in self.answered, f"an answer nobody asked for: {message!r}"
        self.answered.add(rid)
        expected = self.owed[rid]
        if expected == "ping":
            assert isinstance(message, Result) and message.result == {}
        elif expected == "refused":
            assert isinstance(message, ErrorResponse) and message.code == -32601, message
        elif isinstance(message, ErrorResponse):
            # malformed (-32602) or the hook failed (-32603)
            assert message.code in (-32602, -32603), message
            assert SECRET not in message.message
        else:
            _check_wire_answer(expected, message.result)

    def _check_round(self, request: Request) -> None:
        """2026-07-28: a round sent again (or a task's ``tasks/update``) answers exactly
        the keys asked."""
        params = request.params or {}
        if request.method == "tasks/update":
            keys = self.task_rounds.pop(str(params.get("taskId")), None)
            responses = params.get("inputResponses")
            assert keys is None or (isinstance(responses, dict) and set(responses) == keys), (responses, keys)
            return
        if request.method != "tools/call" or not self.modern:
            return
        call_id = next((c for c, rid in self.session.path.carriers.items() if rid == request.id), None)
        keys = self.rounds.pop(call_id, None) if call_id is not None else None
        responses = params.get("inputResponses")
        if keys is None:
            return
        assert isinstance(responses, dict) and set(responses) == keys, (responses, keys)
        for key, answer in responses.items():
            assert isinstance(answer, dict), (key, answer)

    # --- the server's side --------------------------------------------------------------

    def reply_handshake(self) -> None:
        """A valid handshake (legacy) or probe (2026-07-28), then one tool."""
        for _ in range(6):
            for rid, request in list(self.pending.items()):
                result: dict[str, Any]
                if request.method == "initialize":
                    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {}}
                elif request.method == "server/discover":
                    result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
                elif request.method == "tools/list":
                    result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
                else:
                    continue
                del self.pending[rid]
                self.session.receive_message(Result(id=rid, result=result), self.now)
                self.drain()

    def server_request(self) -> None:
        """Handshake era: a question on a call's stream (or on no stream)."""
        r = self.r
        method = r.choice((*_METHODS, *_METHODS, "ping", "x/other"))
        self.next_server_id += 1
        rid = r.choice((f"q{self.next_server_id}", self.next_server_id + 10_000))
        calls = [rid_ for rid_, m in self.pending.items() if m.method == "tools/call"]
        related = r.choice(calls) if calls and r.u8() % 4 else None
        offered = {
            "elicitation/create": self.offer.elicit_form,
            "roots/list": self.offer.roots is not None or self.offer.roots_hook,
            "sampling/createMessage": self.offer.sampling,
        }
        if method == "ping":
            self.owed[rid] = "ping"
        elif offered.get(method):
            self.owed[rid] = method
        else:
            self.owed[rid] = "refused"
        params = _params(method, r) if method in _METHODS else None
        self.session.receive_message(Request(id=rid, method=method, params=params), self.now, related=related)

    def input_round(self) -> None:
        """2026-07-28: a held call's answer (or a task's poll) asks for input; with tasks
        on, a held call may become a task first."""
        r = self.r
        calls = [(rid, m) for rid, m in self.pending.items() if m.method in ("tools/call", "tasks/get")]
        if not calls:
            return
        rid, held = r.choice(calls)
        if held.method == "tools/call" and self.tasks and r.u8() % 3 == 0:
            del self.pending[rid]
            task = {"resultType": "task", "taskId": f"t-{rid}", "status": "working", "pollIntervalMs": 100}
            self.session.receive_message(Result(id=rid, result=task), self.now)
            return
        requests: Any = {}
        for _ in range(r.u8() % 3 + 1):
            if r.u8() % 8 == 0:
                requests[r.text(4)] = r.json_value(2)
            else:
                method = r.choice((*_METHODS, "ping", 7))
                entry: dict[str, Any] = {"method": method}
                if r.u8() % 4:
                    entry["params"] = _params(method if isinstance(method, str) else "", r)
                requests[r.choice(("a", "b", "c", "")) + r.text(2)] = entry
        if r.u8() % 10 == 0:
            requests = r.json_value(2)
        result: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
        if held.method == "tasks/get":  # T7: the task waits for the person
            task_id = (held.params or {}).get("taskId")
            result = {"taskId": task_id, "status": "input_required", "inputRequests": requests}
            if isinstance(requests, dict):
                self.task_rounds[str(task_id)] = set(requests)
            del self.pending[rid]
            self.session.receive_message(Result(id=rid, result=result), self.now)
            return
        if r.flag():
            result["requestState"] = r.choice(("s", "", SECRET))
        call_id = next((c for c, q in self.session.path.carriers.items() if q == rid), None)
        if call_id is not None and isinstance(requests, dict):
            self.rounds[call_id] = set(requests)
        del self.pending[rid]
        self.session.receive_message(Result(id=rid, result=result), self.now)

    def finish_call(self) -> None:
        calls = [rid for rid, m in self.pending.items() if m.method == "tools/call"]
        if calls:
            rid = self.r.choice(calls)
            del self.pending[rid]
            result = {"content": [{"type": "text", "text": "done"}]}
            self.session.receive_message(Result(id=rid, result=result), self.now)

    # --- the driver's side --------------------------------------------------------------

    def report(self) -> None:
        r = self.r
        if not self.asks or r.u8() % 6 == 0:
            # a report for an attempt that is settled, or never was: nothing happens
            attempt = r.choice(self.attempts_seen) if self.attempts_seen and r.flag() else r.u16() + (1 << 32)
            if any(a.attempt == attempt for a in self.asks):
                return
            before = (list(self.owed), set(self.answered))
            self._report_to(attempt, r)
            assert self.session.take_outgoing() == [], "a stale report sent something"
            assert self.session.take_events() == [], "a stale report ended something"
            assert self.session.input.take_actions() == []
            assert (list(self.owed), set(self.answered)) == before
            return
        ask = self.asks.pop(r.u8() % len(self.asks))
        self._report_to(ask.attempt, r, ask)

    def _report_to(self, attempt: int, r: Reader, ask: AskHost | None = None) -> None:
        how = r.u8() % 8
        if how == 0:
            self.session.input.hook_failed(attempt, HookFailure.RAISED, self.now)
        elif how == 1:
            self.session.input.hook_failed(attempt, HookFailure.MISSING, self.now)
        elif ask is None:
            self.session.input.hook_answered(attempt, ElicitResult.accept({"x": SECRET}), self.now)
        else:
            try:
                value = _hook_answer(ask, r)
            except (TypeError, ValueError):  # the hook raised building its answer
                self.session.input.hook_failed(attempt, HookFailure.RAISED, self.now)
                return
            self.session.input.hook_answered(attempt, value, self.now)

    def run(self) -> None:
        s, r = self.session, self.r
        s.start(self.now)
        self.drain()
        self.reply_handshake()
        while r.left:
            op = r.u8() % 12
            if op <= 1 and s.ready:
                try:
                    self.calls.add(s.call("fz/echo", {}, self.now, timeout=r.choice((None, 2.0))))
                except LocalProtocolError:
                    pass
            elif op <= 4:
                if self.modern:
                    self.input_round()
                else:
                    self.server_request()
            elif op <= 7:
                self.report()
            elif op == 8:
                self.finish_call()
            elif op == 9 and self.calls:
                s.cancel(r.choice(sorted(self.calls)), self.now)
            else:
                self.now += r.choice((0.1, 1.0, 5.0))
                s.handle_timer(self.now)
            self.drain()
        # The clock runs out: no question outlives its deadline (D2)
        self.now += 700.0
        s.handle_timer(self.now)
        self.drain()
        assert s.input.idle, "a hook attempt outlived its deadline"
        if not self.modern:
            for rid in self.owed:
                assert rid in self.answered, f"server request {rid!r} never answered"
        s.close(self.now)
        self.drain()


def _check_wire_answer(method: str, result: object) -> None:
    """The hook's answer as sent: the wire's shape; accepted content only form fields."""
    assert isinstance(result, dict), result
    if method == "roots/list":
        roots = result.get("roots")
        assert isinstance(roots, list)
        assert all(isinstance(x, dict) and str(x.get("uri", "")).startswith("file://") for x in roots), roots
    elif method == "sampling/createMessage":
        assert result.get("role") == "assistant" and isinstance(result.get("model"), str)
        assert isinstance(result.get("content"), dict) and isinstance(result["content"].get("type"), str)
    else:
        assert result.get("action") in ("accept", "decline", "cancel"), result
        if result["action"] != "accept":
            assert "content" not in result


def fuzz_one_input(data: bytes) -> None:
    logger = logging.getLogger("mcpcore")
    level = logger.level
    logger.setLevel(logging.DEBUG)  # _fuzzlib's check sees every record
    try:
        _Script(Reader(data)).run()
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("InputDesk", exc)
    finally:
        logger.setLevel(level)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
