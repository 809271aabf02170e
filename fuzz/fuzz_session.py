"""Fuzz the session's receive path (``mcpcore.session._session``) with whole conversations.

The input scripts a server: first the handshake (an ``initialize`` result that
may be valid, refused, malformed or preceded by other messages), then any mix
of responses to the client's pending requests (valid, malformed, duplicated,
for unknown ids), server requests (ping, sampling, elicitation, roots, junk),
notifications, raw JSON text, transport failures, expiry, clock ticks, and
client commands (call, cancel, refresh).

Invariants:

* ``receive_message`` / ``request_failed`` / ``session_expired`` / ``handle_timer``
  never raise: server input only becomes events;
* commands raise only the documented misuse errors (``LocalProtocolError`` for
  a call in the wrong state, ``UnknownTool``);
* every failure in an event is an ``McpError``, with no raw control character;
* each call ends at most once (succeeded, failed or cancelled);
* every server request gets exactly one answer: ``{}`` for ping, -32601 otherwise
  (none at all on the 2026-07-28 wire, M29);
* the probe's answers (E1), result types and rounds of input (M43–M54) on the
  2026-07-28 path only ever become events;
* everything the session sends encodes as JSON-RPC; a request id is never reused
  for another request: only the same request may go out again under its id (H6's
  re-send on a new session, stamped anew for that session's era, since the 404
  closed the one stream that could have answered the first send);
* the catalogue never holds more than ``max_tools`` tools;
* task answers (T7–T9: a ``tools/call`` answered with a task in either era's
  shape, ``tasks/get`` with any status, id, interval or outcome, ``tasks/result``)
  only ever become events, and once the session is closed no task is followed.
"""

from __future__ import annotations

import sys
from typing import Any

import _fuzzlib
from _fuzzlib import Reader

from mcpcore.base._errors import LocalProtocolError, McpError, RemoteProtocolError, UnknownTool
from mcpcore.base._events import (
    CallCancelled,
    CallFailed,
    CallSucceeded,
    RefreshFailed,
    StartFailed,
)
from mcpcore.session._session import ClientSession, SessionOptions, SessionState
from mcpcore.wire._jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Result,
    decode_message,
    decode_value,
    encode_message,
)

_CONTROLS = {chr(c) for c in range(32)} - {"\t", "\n"} | {"\x7f"}
_SERVER_METHODS = (
    "ping",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tools/call",
    "",
    "\x1b[2J" * 40,
)
_NOTES = (
    "notifications/progress",
    "notifications/tools/list_changed",
    "notifications/message",
    "notifications/cancelled",
    "notifications/whatever",
)


def _tool_object(r: Reader) -> Any:
    if r.u8() % 4 == 0:
        return r.json_value(2)
    tool: dict[str, Any] = {"name": r.choice(("echo", "Echo", "ECHO", "add", "a b", "x" * 129, "ok.1"))}
    if r.flag():
        tool["inputSchema"] = {"type": "object"} if r.flag() else r.json_value(2)
    else:
        tool["inputSchema"] = {"type": "object"}
    if r.flag():
        tool["description"] = r.json_value(1)
    if r.u8() % 4 == 0:
        tool["outputSchema"] = r.choice(
            ({"type": "object"}, {"type": "nonsense"}, {"type": "object", "required": ["x"]})
        )
    if r.u8() % 6 == 0:
        tool["execution"] = {"taskSupport": r.choice(("required", "optional", 3))}
    if r.u8() % 6 == 0:
        tool["annotations"] = r.json_value(1)
    return tool


def _task(r: Reader, task_id: object, modern: bool) -> dict[str, Any]:
    """A task object in either era's shape (T7), often broken."""
    task: dict[str, Any] = {
        "taskId": r.choice((task_id, task_id, "t-1", "other", 7, "", None)),
        "status": r.choice(("working", "input_required", "completed", "failed", "cancelled", "weird", 3)),
    }
    if r.flag():
        task["pollIntervalMs" if modern else "pollInterval"] = r.choice((0, 250, 10**9, -5, "x", 1.5))
    if r.flag():
        task["statusMessage"] = r.choice(("half", "\x1b[2J", 9, "m" * 3000))
    return task


def _result_for(kind: str, r: Reader, params: Any = None) -> Any:
    shape = r.u8() % 8
    if shape == 0:
        return r.json_value(2)
    task_id = params.get("taskId") if isinstance(params, dict) else None
    if kind == "tasks/get":  # T7: a poll's answer, with what it inlines
        answer = _task(r, task_id, True)
        answer["resultType"] = r.choice(("complete", "task", None))
        if r.flag():
            answer["result"] = r.choice(({"content": [{"type": "text", "text": "done"}]}, r.json_value(2)))
        if r.flag():
            answer["error"] = r.choice(({"code": -32603, "message": "broke"}, r.json_value(1)))
        if r.flag():
            answer["inputRequests"] = r.choice(
                ({"a": {"method": "elicitation/create"}}, {"s": {"method": "sampling/createMessage"}}, r.json_value(1))
            )
        return answer
    if kind in ("tasks/update", "tasks/cancel"):
        return r.json_value(1)
    if kind == "tools/call" and shape == 7:  # T7: the call became a task (either era)
        if r.flag():
            return {"resultType": "task", **_task(r, "t-1", True)}
        return {"task": _task(r, "t-1", False)}
    if kind == "server/discover":  # E1: the probe's answers, modern and legacy shapes
        return {
            "supportedVersions": r.choice(
                (["2026-07-28"], ["2025-11-25"], ["2026-07-28", "2025-11-25"], [], "x", [3])
            ),
            "capabilities": r.choice(({"tools": {"listChanged": True}}, {}, r.json_value(1))),
            "resultType": r.choice(("complete", "input_required", None)),
            "serverInfo": r.json_value(1),
        }
    if kind == "subscriptions/listen":
        return r.json_value(1)
    if kind == "initialize":
        return {
            "protocolVersion": r.choice(("2025-11-25", "2025-06-18", "2025-03-26", "2099-01-01", 5)),
            "capabilities": {"tools": {}} if shape != 1 else r.json_value(1),
            "serverInfo": r.json_value(1),
        }
    if kind == "tools/list":
        result: dict[str, Any] = {"tools": [_tool_object(r) for _ in range(r.u8() % 4)]}
        if shape == 2:
            result["nextCursor"] = r.choice(("c1", "c2", "", 7))
        return result
    content = [
        r.choice(
            (
                {"type": "text", "text": "hi"},
                {"type": "image", "mimeType": "image/png", "data": ""},
                {"type": "zzz"},
                {"type": "resource", "resource": {"text": "r"}},
                r.json_value(1),
            )
        )
        for _ in range(r.u8() % 3)
    ]
    out: dict[str, Any] = {"content": content}
    if shape == 3:
        out["isError"] = True
    if shape == 4:
        out["structuredContent"] = r.json_value(2)
    if shape >= 5:  # M43-M54: result types and rounds of input
        out["resultType"] = r.choice(("complete", "input_required", "weird", 5))
        if r.flag():
            out["requestState"] = r.choice(("s", "", 7, None))
        if r.flag():
            out["inputRequests"] = r.choice(
                (
                    {"a": {"method": "elicitation/create"}},
                    {"r": {"method": "roots/list"}},
                    {"s": {"method": "sampling/createMessage"}},
                    r.json_value(2),
                )
            )
    return out


def _server_message(session: ClientSession, sent: list[Request], r: Reader) -> Message | None:
    kind = r.u8() % 10
    open_requests = [m for m in sent if isinstance(m.id, int)]
    if kind <= 3 and open_requests:
        target = open_requests[-1] if r.flag() else r.choice(open_requests)
        if r.u8() % 5 == 0:
            code = r.choice((r.u16() - 40000, -32022, -32020, -32021, -32601))
            data = r.choice(({"supported": ["2026-07-28"]}, {"supported": ["2025-11-25"]}, None))
            return ErrorResponse(id=target.id, code=code, message=r.text(), data=data)
        return Result(id=target.id, result=_result_for(target.method, r, target.params))
    if kind == 4:
        return Result(id=r.choice((999, "1", 0, -1)), result=r.json_value(1))
    if kind == 5:
        return Request(id=r.choice((1, "s1", 2**70)), method=r.choice(_SERVER_METHODS), params=None)
    if kind == 6:
        params = {"progressToken": r.choice((1, 2, 3, 4, "1", True)), "progress": r.json_value(0)}
        if r.flag():
            params["total"] = r.json_value(0)
            params["message"] = r.json_value(0)
        return Notification(method=r.choice(_NOTES), params=params)
    if kind == 7:
        value = r.json_value(3)
        try:
            return decode_value(value)
        except RemoteProtocolError:
            return None
    if kind == 8:
        raw = r.blob(8192)
        try:
            return decode_message(raw)
        except RemoteProtocolError:
            return None
    return Notification(method=r.choice(_NOTES), params={"level": r.json_value(0), "data": r.json_value(1)})


def _unstamped(params: object) -> object:
    """A request's params without ``_meta`` (the era's envelope and progress token)."""
    if not isinstance(params, dict):
        return params
    return {k: v for k, v in params.items() if k != "_meta"}


def _same_request(first: Request, then: Request) -> bool:
    """``then`` is ``first`` sent again: the same id, method and params, whatever
    envelope each era's ``_meta`` gave it."""
    return (first.id, first.method, _unstamped(first.params)) == (
        then.id,
        then.method,
        _unstamped(then.params),
    )


def fuzz_one_input(data: bytes) -> None:
    r = Reader(data)
    options = SessionOptions(
        server_name="fz",
        max_tools=r.choice((2, 5, 100)),
        max_pages=r.choice((1, 3, 50)),
        auto_refresh=r.flag(),
        extend_on_progress=r.flag(),
        call_timeout=5.0,
        startup_timeout=30.0,
        protocol=r.choice(("auto", "legacy", "modern")),
        tasks=r.flag(),
        task_timeout=r.choice((5.0, 60.0)),
    )
    session = ClientSession(options)
    now = 0.0
    sent: list[Request] = []
    ids_used: set[int] = set()
    ended: set[int] = set()
    calls: set[int] = set()
    answers_owed: list[Any] = []

    def drain() -> None:
        for message in session.take_outgoing():
            encode_message(message)
            if session.modern:
                # M30: nothing but requests on the 2026-07-28 wire, each stamped (M18)
                assert isinstance(message, Request), f"{message!r} sent to a modern server"
                meta = (message.params or {}).get("_meta") or {}
                assert meta.get("io.modelcontextprotocol/protocolVersion"), message
            if isinstance(message, Request):
                assert isinstance(message.id, int)
                if message.id in ids_used:
                    assert any(_same_request(m, message) for m in sent), "request id reused"
                ids_used.add(message.id)
                sent.append(message)
            elif isinstance(message, (Result, ErrorResponse)):
                assert answers_owed, f"an answer nobody asked for: {message!r}"
                method, request_id = answers_owed.pop(0)
                assert message.id == request_id
                if method == "ping":
                    assert isinstance(message, Result) and message.result == {}
                else:
                    assert isinstance(message, ErrorResponse) and message.code == -32601
        session.take_abandoned()
        for event in session.take_events():
            error = getattr(event, "error", None)
            if error is not None:
                assert isinstance(error, McpError), repr(error)
                assert not _CONTROLS & set(str(error)), f"raw control character in {error}"
            if isinstance(event, (CallSucceeded, CallFailed, CallCancelled)):
                assert event.call_id in calls, "an event for a call never made"
                assert event.call_id not in ended, "a call ended twice"
                ended.add(event.call_id)
            elif isinstance(event, (StartFailed, RefreshFailed)):
                pass
        if session.catalogue is not None:
            assert len(session.catalogue.tools) <= options.max_tools
        # Requests that were answered or failed are no longer pending.
        sent[:] = [m for m in sent if m.id in session.path.pending]

    try:
        session.start(now)
        drain()
        while r.left:
            op = r.u8() % 16
            if op < 9:
                message = _server_message(session, sent, r)
                if message is not None:
                    if isinstance(message, Request) and not session.modern:
                        answers_owed.append((message.method, message.id))  # M29: not on 2026
                    session.receive_message(message, now)
            elif op == 9 and sent:
                target = r.choice(sent)
                session.request_failed(target.id, RemoteProtocolError("broken"), now)
            elif op == 10:
                session.session_expired([m for m in sent if m.method == "tools/call"][:1], now)
            elif op == 11:
                now += r.u8() / 8.0
                session.handle_timer(now)
            elif op == 12:
                try:
                    ids = [t.id for t in session.catalogue.tools] if session.catalogue else []
                    tool_id = r.choice(ids) if ids and r.u8() % 4 else "fz/nope"
                    call_id = session.call(tool_id, {"x": 1}, now, timeout=r.choice((None, 0.5, 2.0)))
                    calls.add(call_id)
                except (LocalProtocolError, UnknownTool):
                    pass
            elif op == 13 and calls:
                session.cancel(r.choice(sorted(calls)), now)
            elif op == 14:
                try:
                    session.refresh(now)
                except LocalProtocolError:
                    assert session.state is not SessionState.READY
            elif op == 15 and r.flag() and session.state is SessionState.READY:
                from mcpcore.features._tasks import resume_task

                try:  # T8: follow a task by id (tasks off: InvalidState)
                    calls.add(resume_task(session, r.choice(("t-1", "other")), now))
                except LocalProtocolError:
                    assert not options.tasks
            else:
                now += 0.01
            drain()
        session.close(now)
        drain()
        assert not session.tasks.calls, "a task is still followed after close"
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("ClientSession", exc)


def _ready(session: ClientSession, now: float) -> None:
    """Answer the handshake and the listing well: ``echo`` and a task-required ``build``."""
    tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "build")]
    tools[1]["execution"] = {"taskSupport": "required"}
    for _ in range(10):
        for message in session.take_outgoing():
            if not isinstance(message, Request):
                continue
            result: dict[str, Any] = {}
            if message.method == "server/discover":
                result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
            elif message.method == "initialize":
                result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {}}
            elif message.method == "tools/list":
                result = {"tools": tools}
            session.receive_message(Result(id=message.id, result=result), now)
    assert session.state is SessionState.READY, session.state


def fuzz_task_input(data: bytes) -> None:
    """T7–T9: a session made ready (either era, tasks on) whose calls of the
    task-required ``build`` the input turns into tasks, then scripts every task
    answer (any status, id, interval, outcome), transport failures, the clock,
    cancels and resumes. Invariants: nothing raises but documented misuse; each
    call ends at most once, with an ``McpError`` free of raw control characters;
    no ``tasks/*`` request without a task id; after close no task is followed."""
    r = Reader(data)
    options = SessionOptions(
        server_name="fz",
        call_timeout=5.0,
        tasks=True,
        task_timeout=r.choice((3.0, 60.0)),
        protocol=r.choice(("modern", "legacy")),
        cancel_tasks_on_close=r.flag(),
    )
    session = ClientSession(options)
    now = 0.0
    calls: set[int] = set()
    ended: set[int] = set()
    sent: list[Request] = []
    try:
        session.start(now)
        _ready(session, now)
        session.take_events()
        while r.left:
            op = r.u8() % 8
            if op == 0:
                calls.add(session.call(r.choice(("fz/build", "fz/build", "fz/echo")), {}, now))
            elif op <= 3 and sent:
                target = r.choice(sent)
                if r.u8() % 6 == 0:
                    message: Message = ErrorResponse(id=target.id, code=r.choice((-32602, -32603)), message="no")
                elif target.method == "tools/call" and r.u8() % 4:
                    modern = session.modern
                    task = _task(r, "t-1", modern)
                    result = {"resultType": "task", **task} if modern else {"task": task}
                    message = Result(id=target.id, result=result)
                else:
                    message = Result(id=target.id, result=_result_for(target.method, r, target.params))
                session.receive_message(message, now)
            elif op == 4 and sent:
                session.request_failed(r.choice(sent).id, RemoteProtocolError("broken"), now)  # type: ignore[arg-type]
            elif op == 5:
                now += r.choice((0.05, 0.5, 2.0, 10.0))
                session.handle_timer(now)
            elif op == 6 and calls:
                session.cancel(r.choice(sorted(calls)), now)
            elif op == 7:
                from mcpcore.features._tasks import resume_task

                calls.add(resume_task(session, r.choice(("t-1", "other")), now))
            for out in session.take_outgoing():
                encode_message(out)
                if isinstance(out, Request):
                    if out.method.startswith("tasks/"):
                        assert isinstance((out.params or {}).get("taskId"), str), out
                    sent.append(out)
            sent[:] = [m for m in sent if m.id in session.path.pending]
            session.take_abandoned()
            for event in session.take_events():
                error = getattr(event, "error", None)
                if error is not None:
                    assert isinstance(error, McpError), repr(error)
                    assert not _CONTROLS & set(str(error)), f"raw control character in {error}"
                if isinstance(event, (CallSucceeded, CallFailed, CallCancelled)):
                    assert event.call_id in calls and event.call_id not in ended, event
                    ended.add(event.call_id)
        session.close(now)
        assert not session.tasks.calls, "a task is still followed after close"
    except AssertionError:
        raise
    except Exception as exc:
        _fuzzlib.raise_unexpected("ClientSession (tasks)", exc)


if __name__ == "__main__":
    import atheris

    _fuzzlib.instrument(atheris)
    atheris.Setup(sys.argv, fuzz_one_input)
    atheris.Fuzz()
