"""Tasks: long-running tools (T7–T9), in the core, with a fake clock.

``TaskServer`` is a 2026-07-28 server (``ModernFake``: it checks the envelope and
the headers of every request) that runs the ``build`` tool as a task and plays
scripted ``tasks/get`` answers; ``LegacyTaskServer`` does the same in the
2025-11-25 shape (``CreateTaskResult``, ``tasks/result``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from fake_peer import FakeServer, Reply, connect, tool
from mcpcore import (
    AbortExchange,
    BackendError,
    CallCancelled,
    CallFailed,
    CallSucceeded,
    CallTimeout,
    Cancelled,
    Continuation,
    ElicitResult,
    HttpRequest,
    InputOptions,
    InputRequired,
    InvalidState,
    InvalidValue,
    ProgressReceived,
    RemoteProtocolError,
    RequestSucceeded,
    TaskHandle,
    TaskStatus,
    TransportError,
)
from mcpcore.features._tasks import POLL_MAX, POLL_MIN, TASKS_EXTENSION
from mcpcore.session._session import SessionOptions
from test_elicitation import ELICIT, outcome
from test_modern import JSON, ModernFake, link_to, rpc

CAPS = "io.modelcontextprotocol/clientCapabilities"
BUILD = tool("build", execution={"taskSupport": "required"})
DONE = {"content": [{"type": "text", "text": "built"}], "isError": False}


def working(message: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"status": "working", **extra}
    if message is not None:
        out["statusMessage"] = message
    return out


def completed(result: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"status": "completed", "result": DONE if result is None else result}


class TaskServer(ModernFake):
    """Runs ``build`` as a task; ``answers`` are the tasks/get answers in turn (the
    last one repeats). Every tasks/* request must name the task in Mcp-Name."""

    def __init__(self, answers: list[dict[str, Any]], *, created: dict[str, Any] | None = None,
                 interval: int | None = 500) -> None:
        super().__init__([tool("echo"), BUILD])
        self.answers = list(answers)
        self.created = {"taskId": "t-1", "status": "working", **(created or {})}
        if interval is not None:
            self.created.setdefault("pollIntervalMs", interval)
        self.link: Any = None
        self.polls: list[float] = []
        self.updates: list[dict[str, Any]] = []
        self.cancels: list[str] = []
        self.stall_polls = False
        self.hook = self._tasks
        self.call_reply = self._call

    def _reply(self, rid: Any, result: dict[str, Any]) -> Reply:
        return Reply(200, JSON, [json.dumps(rpc(rid, result)).encode()])

    def _call(self, message: dict[str, Any]) -> Reply:
        if message["params"]["name"] != "build":
            return self._reply(message["id"], DONE)
        return self._reply(message["id"], {"resultType": "task", **self.created})

    def _tasks(self, message: dict[str, Any], headers: dict[str, str]) -> Reply | None:
        method, params = message.get("method", ""), message.get("params") or {}
        if not method.startswith("tasks/"):
            return None
        if headers.get("mcp-name") != params.get("taskId"):
            self.problems.append(f"{method} without Mcp-Name naming the task")
        if method == "tasks/get":
            self.polls.append(self.link.now if self.link else 0.0)
            if self.stall_polls:
                return Reply(200, JSON, [], finish="stall")
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            body = {"resultType": "complete", "taskId": params["taskId"], **answer}
            return self._reply(message["id"], body)
        if method == "tasks/update":
            self.updates.append(params)
        elif method == "tasks/cancel":
            self.cancels.append(params["taskId"])
        return self._reply(message["id"], {"resultType": "complete"})


def task_link(answers: list[dict[str, Any]], *, tasks: bool = True, server: TaskServer | None = None,
              **options: Any) -> tuple[Any, TaskServer]:
    server = server or TaskServer(answers)
    link = link_to(server, tasks=tasks, **options)
    server.link = link
    return link, server


def sent(server: ModernFake, method: str) -> list[dict[str, Any]]:
    return [m for _, _, m in server.seen if m and m.get("method") == method]


def follows_nothing(link: Any) -> bool:
    """Nothing is left polling or waiting for the call (the session is idle)."""
    link.pump()
    session = link.engine.session
    return not session.tasks.calls and session.is_idle and link.engine.next_deadline() is None


# --- T7: declaring, listing ---------------------------------------------------------------------


def test_T7_tasks_off_declares_nothing_and_hides_the_task_required_tool(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mcpcore"):
        link, server = task_link([completed()], tasks=False)
    assert [t.id for t in link.engine.catalogue.tools] == ["srv/echo"]
    assert "hid tool 'build'" in caplog.text and "task" in caplog.text
    assert all(m["params"]["_meta"][CAPS] == {} for m in sent(server, "tools/list"))


def test_T7_tasks_on_declares_the_extension_per_request_and_lists_the_task_required_tool() -> None:
    link, server = task_link([completed()])
    build = link.engine.catalogue.get("srv/build")
    assert build is not None and build.task_support == "required"
    for message in [*sent(server, "server/discover"), *sent(server, "tools/list")]:
        assert message["params"]["_meta"][CAPS] == {"extensions": {TASKS_EXTENSION: {}}}


# --- T7: following ------------------------------------------------------------------------------


def test_T7_a_task_is_polled_at_the_servers_interval_and_its_result_rendered() -> None:
    link, server = task_link([working("compiling"), working("linking"), completed()])
    start = link.now
    call_id = link.engine.call("srv/build", {"target": "all"}, link.now)
    link.pump()
    assert outcome(link, call_id) is None and server.polls == []
    link.advance(0.49)
    assert server.polls == []  # not before the server's 500 ms
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.output.text == "built"
    assert [round(t - start, 2) for t in server.polls] == [0.5, 1.0, 1.5]
    progress = [e.message for e in link.of_type(ProgressReceived) if e.call_id == call_id]
    assert progress == ["working", "compiling", "linking", "completed"]
    assert server.problems == [] and follows_nothing(link)


@pytest.mark.parametrize(("interval", "first"), [(0, POLL_MIN), (10**9, POLL_MAX), ("soon", 1.0), (None, 1.0)])
def test_T7_a_poll_interval_is_clamped_not_obeyed_blindly(interval: Any, first: float) -> None:
    server = TaskServer([completed()], interval=None, created={} if interval is None else {"pollIntervalMs": interval})
    link, _ = task_link([], server=server)
    start = link.now
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(first - 0.01)
    assert server.polls == []
    link.advance(0.02)
    assert [round(t - start, 2) for t in server.polls] == [first]
    assert isinstance(outcome(link, call_id), CallSucceeded)


def test_T7_polls_that_find_nothing_new_are_stretched_and_a_change_resets_them() -> None:
    link, server = task_link([working(), working(), working(), working(), working("half"), completed()])
    start = link.now
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(60)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    gaps = [round(b - a, 3) for a, b in zip([start, *server.polls], server.polls, strict=False)]
    # 0.5 at first; unchanged answers stretch it by half, up to 4x (2 s); "half" resets it
    assert gaps == [0.5, 0.75, 1.125, 1.688, 2.0, 0.5]


def test_T7_the_interval_may_change_mid_task() -> None:
    link, server = task_link([working("a", pollIntervalMs=2000), working("b"), completed()])
    start = link.now
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(60)
    assert isinstance(outcome(link, call_id), CallSucceeded)
    assert [round(t - start, 2) for t in server.polls] == [0.5, 2.5, 4.5]


def test_T7_a_failed_task_raises_like_a_failed_call() -> None:
    failed = {"status": "failed", "statusMessage": "boom", "error": {"code": -32603, "message": "disk full"}}
    link, _ = task_link([failed])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, BackendError)
    assert "t-1" in str(event.error) and "disk full" in str(event.error) and event.error.rpc_code == -32603
    assert follows_nothing(link)


def test_T7_a_completed_result_that_says_is_error_raises_backend_error() -> None:
    link, _ = task_link([completed({"content": [{"type": "text", "text": "no"}], "isError": True})])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, BackendError) and event.error.text == "no"


def test_T7_a_task_cancelled_on_the_server_raises_a_clear_error() -> None:
    link, server = task_link([{"status": "cancelled"}])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, Cancelled)
    assert "task 't-1' was cancelled on the server" in str(event.error) and server.cancels == []


def test_T7_input_required_is_answered_through_the_hook_with_tasks_update() -> None:
    asking = {"status": "input_required", "inputRequests": {"which": ELICIT, "where": {"method": "roots/list"}}}
    link, server = task_link([asking, working(), completed()], input=InputOptions(elicit_form=True))
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(0.6)
    [ask] = link.engine.take_input()
    assert ask.request.tool_id == "srv/build" and ask.request.message == "Which branch?"
    link.advance(10)  # nothing is polled while the person is asked
    assert len(server.polls) == 1 and server.updates == []
    link.engine.hook_answered(ask.attempt, ElicitResult.accept({"branch": "main"}), link.now)
    link.advance(5)
    assert server.updates == [
        {
            "taskId": "t-1",
            "inputResponses": {"which": {"action": "accept", "content": {"branch": "main"}}, "where": {"roots": []}},
            "_meta": server.updates[0]["_meta"],
        }
    ]
    assert isinstance(outcome(link, call_id), CallSucceeded) and server.problems == []


def test_T7_Q4_on_input_return_pauses_a_task_and_resume_answers_it_from_a_new_client() -> None:
    asking = {"status": "input_required", "inputRequests": {"which": ELICIT}}
    link, server = task_link([asking, completed()])
    call_id = link.engine.call("srv/build", {}, link.now, on_input="return")
    link.advance(1)
    event = outcome(link, call_id)
    assert isinstance(event, RequestSucceeded) and isinstance(event.value, InputRequired)
    continuation = event.value.continuation
    assert continuation.task_id == "t-1" and follows_nothing(link)
    # Q4: the polls of a call that may pause declare what its tools/call declared
    declared = {"elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}}
    assert [m["params"]["_meta"][CAPS] for m in sent(server, "tasks/get")] == [declared]
    assert sent(server, "tools/call")[0]["params"]["_meta"][CAPS] == declared
    stored = continuation.to_json()
    fresh, _ = task_link([], server=server)
    again = fresh.engine.resume(Continuation.from_json(stored), {"which": ElicitResult.decline()}, fresh.now)
    fresh.advance(5)
    assert [u["inputResponses"] for u in server.updates] == [{"which": {"action": "decline"}}]
    assert isinstance(outcome(fresh, again), CallSucceeded) and server.problems == []


# --- T7: cancelling, closing --------------------------------------------------------------------


def test_T7_an_abandoned_call_sends_tasks_cancel() -> None:
    link, server = task_link([working()])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(2)
    assert link.engine.cancel(call_id, link.now)
    link.pump()
    assert server.cancels == ["t-1"] and isinstance(outcome(link, call_id), CallCancelled)
    polls = len(server.polls)
    link.advance(30)
    assert len(server.polls) == polls and follows_nothing(link)


@pytest.mark.parametrize("cancel", [False, True])
def test_T7_closing_leaves_running_tasks_alone_unless_the_host_asks(cancel: bool) -> None:
    link, server = task_link([working()], cancel_tasks_on_close=cancel)
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(1)
    link.engine.close(link.now)
    link.advance(5)
    assert isinstance(outcome(link, call_id), CallCancelled)
    assert server.cancels == (["t-1"] if cancel else [])


def test_T9_a_give_up_then_an_immediate_close_still_delivers_tasks_cancel() -> None:
    """T9: the close that follows a give-up before the driver performed anything keeps
    the tasks/cancel (it is not aborted with the other requests) within its bound."""
    link, server = task_link([working()])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(2)
    assert link.engine.cancel(call_id, link.now)
    link.engine.close(link.now)  # nothing performed in between
    actions = link.engine.take_actions()
    aborted = {a.exchange_id for a in actions if isinstance(a, AbortExchange)}
    [cancel] = [a for a in actions if isinstance(a, HttpRequest) and b"tasks/cancel" in a.body]
    assert cancel.exchange_id not in aborted  # the driver performs it, then finishes closing
    for action in actions:
        if isinstance(action, HttpRequest) and action.exchange_id not in aborted:
            link._perform(action)
    link.advance(5)
    assert server.cancels == ["t-1"] and isinstance(outcome(link, call_id), CallCancelled)
    assert link.engine.finished


# --- T8: handles ----------------------------------------------------------------------------------


def test_T8_start_task_returns_a_handle_and_a_new_client_resumes_it() -> None:
    link, server = task_link([working("half"), completed()])
    call_id = link.engine.start_task("srv/build", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, RequestSucceeded) and isinstance(event.value, TaskHandle)
    handle = event.value
    assert (handle.task_id, handle.server, handle.tool) == ("t-1", "srv", "build")
    assert server.polls == [] and follows_nothing(link)
    fresh, _ = task_link([], server=server)
    again = fresh.engine.resume_task(TaskHandle.from_json(handle.to_json()), fresh.now)
    fresh.advance(5)
    done = outcome(fresh, again)
    assert isinstance(done, CallSucceeded) and done.output.text == "built"
    assert sent(server, "tools/call")[1:] == [] and server.problems == []  # never a replay


def test_T8_start_task_gives_the_output_when_the_server_makes_no_task() -> None:
    link, _ = task_link([])
    call_id = link.engine.start_task("srv/echo", {}, link.now)
    assert isinstance(outcome(link, call_id), CallSucceeded)


def test_T8_task_status_and_cancel_task_by_id() -> None:
    link, server = task_link([working("half", pollIntervalMs=250)])
    asked = link.engine.task_status("t-9", link.now)
    event = outcome(link, asked)
    assert isinstance(event, RequestSucceeded)
    assert event.value == TaskStatus("t-9", "working", "half", 0.25, None) and not event.value.done
    cancelled = link.engine.cancel_task("t-9", link.now)
    assert isinstance(outcome(link, cancelled), RequestSucceeded) and server.cancels == ["t-9"]
    assert server.problems == []


def test_T8_a_handle_of_another_server_or_no_task_is_refused_before_sending() -> None:
    link, server = task_link([working()])
    before = len(server.seen)
    with pytest.raises(InvalidValue):
        link.engine.resume_task(TaskHandle("t-1", "srv", "build", "f" * 32), link.now)
    for junk in ("", 42, None):
        with pytest.raises(InvalidValue):
            link.engine.task_status(junk, link.now)  # type: ignore[arg-type]
    with pytest.raises(InvalidValue):
        TaskHandle.from_json('{"mcpcoreTask": 1, "taskId": 3}')
    off, _ = task_link([], tasks=False, server=TaskServer([working()]))
    with pytest.raises(InvalidState):
        off.engine.resume_task("t-1", off.now)
    assert len(server.seen) == before


# --- T9: deadlines --------------------------------------------------------------------------------


def test_T9_the_creating_request_keeps_the_call_deadline_and_the_task_its_own() -> None:
    link, server = task_link([working(), completed()], call_timeout=2.0, task_timeout=100.0)
    server.answers = [working()] * 10 + [completed()]
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(30)  # far past the call's 2 s: the accepted task has 100 s
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded)
    stalled = TaskServer([completed()])
    stalled.call_reply = lambda message: Reply(200, JSON, [], finish="stall")
    slow, _ = task_link([], server=stalled, call_timeout=2.0)
    call_id = slow.engine.call("srv/build", {}, slow.now)
    slow.advance(2.5)
    event = outcome(slow, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, CallTimeout)


def test_T9_a_task_never_completed_fails_at_task_timeout_and_is_cancelled() -> None:
    link, server = task_link([working()], task_timeout=10.0)
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(9.9)
    assert outcome(link, call_id) is None
    link.advance(0.2)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, CallTimeout)
    assert "'t-1'" in str(event.error) and "task_timeout" in str(event.error)
    assert server.cancels == ["t-1"] and follows_nothing(link)


def test_T9_a_server_that_stops_answering_polls_gives_a_transport_error_naming_the_task() -> None:
    link, server = task_link([working()], call_timeout=3.0)
    server.stall_polls = True
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(60)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and type(event.error) is TransportError
    assert "may still be running" in str(event.error) and "'t-1'" in str(event.error)
    assert len(server.polls) == 3 and server.cancels == []
    assert follows_nothing(link)


# --- bad input: each fails only its call, naming it, nothing left polling -------------------------


BAD = {
    "a task id that is not a string": ({"taskId": 42}, None, "task id is not a usable string"),
    "an unknown status": ({}, {"status": "paused"}, "status this client does not know"),
    "a result for another task": ({}, {"taskId": "t-2", "status": "completed", "result": DONE}, "'t-2'"),
    "a completed task without a result": ({}, {"status": "completed"}, "without a result"),
    "an unknown status at creation": ({"status": "sleeping"}, None, "does not know"),
    "input_required without inputRequests": ({}, {"status": "input_required"}, "without inputRequests"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_T7_bad_task_answers_fail_only_that_call(case: str) -> None:
    created, answer, words = BAD[case]
    server = TaskServer([answer or completed()], created=created)
    link, _ = task_link([], server=server)
    call_id = link.engine.call("srv/build", {}, link.now)
    other = link.engine.call("srv/echo", {}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and isinstance(event.error, RemoteProtocolError), event
    assert words in str(event.error)
    assert isinstance(outcome(link, other), CallSucceeded)
    assert follows_nothing(link) and link.engine.state.value == "ready"


def test_T7_a_task_answer_without_tasks_on_is_a_protocol_error() -> None:
    link, _ = task_link([completed()], tasks=False, server=TaskServer([completed()]))
    link.engine.session.tools.catalogue = link.engine.catalogue  # build is hidden: call echo as build
    server = link.server
    server.call_reply = lambda message: Reply(
        200, JSON, [json.dumps(rpc(message["id"], {"resultType": "task", "taskId": "x", "status": "working"})).encode()]
    )
    call_id = link.engine.call("srv/echo", {}, link.now)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "resultType" in str(event.error)


# --- 2025-11-25: the experimental tasks capability -----------------------------------------------


class LegacyTaskServer(FakeServer):
    """A 2025-11-25 server: ``build`` requires a task; tasks/result gives the outcome."""

    def __init__(self, statuses: list[str], outcome: dict[str, Any] | None = None) -> None:
        super().__init__(tools=[tool("echo"), BUILD], version="2025-11-25")
        self.statuses = statuses
        self.outcome = outcome
        self.call_handler = self._call
        self.hook = self._tasks
        self.asked: list[dict[str, Any]] = []

    def _call(self, message: dict[str, Any]) -> list[dict[str, Any] | str]:
        params = message["params"]
        self.asked.append(params)
        task = {"taskId": "L-1", "status": "working", "pollInterval": 200, "ttl": 60000}
        return [{"jsonrpc": "2.0", "id": message["id"], "result": {"task": task}}]

    def _tasks(self, seen: Any) -> Reply | None:
        message = seen.message or {}
        method, rid = message.get("method", ""), message.get("id")
        if method == "tasks/get":
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            return self._stream([{"jsonrpc": "2.0", "id": rid, "result": {"taskId": "L-1", "status": status}}])
        if method == "tasks/result":
            meta = {"io.modelcontextprotocol/related-task": {"taskId": "L-1"}}
            result = {**(self.outcome or DONE), "_meta": meta}
            return self._stream([{"jsonrpc": "2.0", "id": rid, "result": result}])
        return None


def legacy_link(server: LegacyTaskServer, **options: Any) -> Any:
    return connect(server, options=SessionOptions(server_name="srv", **options))


def test_T7_2025_11_25_declares_the_capability_asks_for_a_task_and_fetches_the_result() -> None:
    server = LegacyTaskServer(["working", "completed"])
    link = legacy_link(server, tasks=True, task_timeout=120.0)
    [init] = server.requests("initialize")
    assert init["params"]["capabilities"] == {"tasks": {}}
    call_id = link.engine.call("srv/build", {"x": 1}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.output.text == "built"
    # task_timeout and a minute more: a give-up's tasks/cancel still finds the task (T9)
    assert server.asked[0]["task"] == {"ttl": 180000}
    assert [m["params"] for m in server.requests("tasks/result")] == [{"taskId": "L-1"}]
    assert follows_nothing(link)


def test_T7_2025_11_25_off_declares_nothing_and_asks_for_no_task() -> None:
    server = LegacyTaskServer(["completed"])
    link = legacy_link(server)
    [init] = server.requests("initialize")
    assert init["params"]["capabilities"] == {}
    assert link.engine.catalogue.get("srv/build") is None


def test_T7_2025_11_25_a_result_of_another_task_is_refused() -> None:
    server = LegacyTaskServer(["completed"], outcome={**DONE})
    link = legacy_link(server, tasks=True)
    original = server._tasks

    def other(seen: Any) -> Reply | None:
        reply = original(seen)
        if (seen.message or {}).get("method") == "tasks/result":
            rid = seen.message["id"]
            result = {**DONE, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "L-2"}}}
            return server._stream([{"jsonrpc": "2.0", "id": rid, "result": result}])
        return reply

    server.hook = other
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(5)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "'L-2'" in str(event.error)


def test_T7_M54_a_task_that_keeps_asking_stops_after_the_rounds_bound() -> None:
    asking = {"status": "input_required", "inputRequests": {"where": {"method": "roots/list"}}}
    link, server = task_link([asking])
    call_id = link.engine.call("srv/build", {}, link.now)
    link.advance(60)
    event = outcome(link, call_id)
    assert isinstance(event, CallFailed) and "more than 10 times" in str(event.error)
    assert len(server.updates) == 10 and server.cancels == ["t-1"] and follows_nothing(link)


def test_T8_the_catalogue_keeps_a_task_required_tool_only_with_tasks_on(caplog: pytest.LogCaptureFixture) -> None:
    from mcpcore import Catalogue

    listed = [tool("build", execution={"taskSupport": "required"}), tool("lint", execution={"taskSupport": "optional"})]
    kept = Catalogue.from_listing("srv", listed, tasks=True)
    assert [(t.name, t.task_support) for t in kept] == [("build", "required"), ("lint", "optional")]
    with caplog.at_level(logging.INFO, logger="mcpcore"):
        hidden = Catalogue.from_listing("srv", listed)
    assert [t.name for t in hidden] == ["lint"] and "tasks=True" in caplog.text


def test_T7_tasks_is_a_flag_per_client_or_per_hub_entry() -> None:
    from mcpcore import prepare_client

    def tasks_of(name: str, value: object) -> bool:
        setup = prepare_client(name, {"url": "https://x.test/mcp"}, {"tasks": value}, env={}, home="/h")  # type: ignore[typeddict-item]
        return setup.session.tasks

    assert tasks_of("a", True) and not tasks_of("a", False)
    assert tasks_of("a", {"a": True, "b": False}) and not tasks_of("b", {"a": True}) and not tasks_of("c", {"a": True})
    for junk in ("yes", 1, {"a": "yes"}):
        with pytest.raises(InvalidValue):
            tasks_of("a", junk)


def test_T7_a_task_made_already_completed_is_asked_for_its_result_at_once() -> None:
    server = TaskServer([completed()], created={"status": "completed"})
    link, _ = task_link([], server=server)
    call_id = link.engine.call("srv/build", {}, link.now)
    link.pump()
    event = outcome(link, call_id)
    assert isinstance(event, CallSucceeded) and event.output.text == "built" and len(server.polls) == 1
