"""S1-S3, L4, L6: a local server's child process as the engine's actions.

The engine decides the child's environment, when a child is started (again),
when it counts as lost and why, and how closing stops it; these tests play
the driver by hand with a fake clock.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpcore import (
    CallCancelled,
    CallFailed,
    FailureKind,
    LocalServer,
    Notification,
    Result,
    SessionOptions,
    SessionReady,
    StartFailed,
    StdioClientEngine,
    TransportFailure,
    decode_message,
    encode_message,
)
from mcpcore.base._events import CloseInput, KillProcess, StartProcess, TerminateProcess, WriteInput

NOW = 1000.0
SECRET = "tok-123456789"
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "fake", "version": "1"},
}
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]
ENVIRON = {"PATH": "/usr/bin", "HOME": "/home/u", "AWS_SECRET_ACCESS_KEY": "never-inherited"}


def server(**kw: Any) -> LocalServer:
    return LocalServer(
        name="loc",
        command="srv",
        args=("--token", SECRET),
        env={"API_TOKEN": SECRET},
        plugin_root="/plug",
        **kw,
    )


def engine() -> StdioClientEngine:
    return StdioClientEngine(server(), environ=ENVIRON, options=SessionOptions(server_name="loc"))


def written(actions: list[Any]) -> list[Any]:
    return [decode_message(a.data.rstrip(b"\n")) for a in actions if isinstance(a, WriteInput)]


def line(message: Any) -> bytes:
    return encode_message(message) + b"\n"


def ready(e: StdioClientEngine, now: float = NOW, process: int = 1) -> None:
    """Answer the handshake and the listing as the child would."""
    [init] = written(e.take_actions())
    e.receive_data(line(Result(id=init.id, result=INIT)), now, process=process)
    _, listing = written(e.take_actions())
    e.receive_data(line(Result(id=listing.id, result={"tools": TOOLS})), now, process=process)
    assert any(isinstance(ev, SessionReady) for ev in e.take_events())


def test_S1_S2_start_asks_for_the_child_with_the_minimal_environment_then_writes() -> None:
    e = engine()
    e.start(NOW)
    start, write = e.take_actions()
    assert isinstance(start, StartProcess) and isinstance(write, WriteInput)
    assert (start.process, start.command, start.args, start.cwd) == (1, "srv", ("--token", SECRET), "/plug")
    assert start.env == {"PATH": "/usr/bin", "HOME": "/home/u", "PLUGIN_ROOT": "/plug", "API_TOKEN": SECRET}
    assert decode_message(write.data.rstrip(b"\n")).method == "initialize"
    assert SECRET not in repr(start) and "API_TOKEN" in repr(start)  # C8: keys only
    assert SECRET not in repr(write)


def test_S1_C8_a_child_whose_output_closes_is_lost_with_its_last_stderr_words_redacted() -> None:
    e = engine()
    e.start(NOW)
    ready(e)
    call_id = e.call("loc/echo", {}, NOW)
    e.take_actions()
    e.receive_stderr(b"starting\nfatal: bad token " + SECRET.encode() + b"\npartial", NOW, process=1)
    e.output_closed(NOW, process=1)
    assert e.take_events() == []  # its stderr may still be coming
    assert e.next_deadline() == NOW + 0.5
    e.stderr_closed(NOW + 0.1, process=1)
    [failed] = e.take_events()
    assert isinstance(failed, CallFailed) and failed.call_id == call_id
    reason = str(failed.error)
    assert "closed its output" in reason and "fatal: bad token ***" in reason and "partial" in reason
    assert SECRET not in reason
    # the child lives on without stdout: it is stopped (stdin closed, terminate, kill),
    # and a new child gets a new session before any later call reaches it
    stop_input, terminate, start, init = e.take_actions()
    assert (stop_input, terminate) == (CloseInput(process=1), TerminateProcess(process=1))
    assert isinstance(start, StartProcess) and start.process == 2
    assert [m.method for m in written([init])] == ["initialize"]
    later = e.call("loc/echo", {}, NOW + 0.2)
    assert written(e.take_actions()) == []  # parked until the new session is up
    [init_msg] = written([init])
    e.receive_data(line(Result(id=init_msg.id, result=INIT)), NOW + 0.3, process=2)
    sent = written(e.take_actions())
    assert [m.method for m in sent][:1] == ["notifications/initialized"]
    assert later in [m.id for m in sent if hasattr(m, "id") and getattr(m, "method", "") == "tools/call"]
    e.handle_timer(NOW + 2)
    assert KillProcess(process=1) in e.take_actions()


def test_S1_stdout_closed_without_stderr_end_is_lost_after_half_a_second() -> None:
    e = engine()
    e.start(NOW)
    ready(e)
    e.output_closed(NOW, process=1)
    e.take_actions()
    e.handle_timer(NOW + 0.5)
    assert StartProcess in {type(a) for a in e.take_actions()}  # lost: a new child


def test_L4_a_new_attempt_starts_a_new_child_and_the_old_ones_reports_are_ignored() -> None:
    e = engine()
    e.start(NOW)
    e.take_actions()
    e.process_exited(1, NOW, process=1)
    e.output_closed(NOW, process=1)
    e.stderr_closed(NOW, process=1)
    [failed] = [ev for ev in e.take_events() if isinstance(ev, StartFailed)]
    e.take_actions()
    e.handle_timer(failed.retry_at)
    start, write = e.take_actions()
    assert isinstance(start, StartProcess) and start.process == 2 and isinstance(write, WriteInput)
    [init] = written([write])
    e.receive_data(line(Result(id=init.id, result=INIT)), failed.retry_at, process=1)  # the old child
    assert e.take_actions() == []
    e.receive_data(line(Result(id=init.id, result=INIT)), failed.retry_at, process=2)
    assert [m.method for m in written(e.take_actions())] == ["notifications/initialized", "tools/list"]


def test_S1_a_child_that_cannot_start_makes_the_server_unavailable_with_the_reason() -> None:
    e = engine()
    e.start(NOW)
    e.take_actions()
    e.process_failed(TransportFailure(FailureKind.OTHER, "No such file or directory"), NOW, process=1)
    [failed] = e.take_events()
    assert isinstance(failed, StartFailed)
    assert "could not start the server" in str(failed.error)
    assert e.take_actions() == []  # nothing to stop: it never ran


def test_S3_a_failed_handshake_stops_the_child_at_once() -> None:
    e = engine()
    e.start(NOW)
    [init] = written(e.take_actions())
    e.receive_data(line(Result(id=init.id, result={"protocolVersion": "1999-01-01"})), NOW, process=1)
    assert any(isinstance(ev, StartFailed) for ev in e.take_events())
    assert [type(a) for a in e.take_actions()] == [CloseInput, TerminateProcess]
    e.handle_timer(NOW + 1)  # also the retry: a new child, the old one killed
    actions = e.take_actions()
    assert KillProcess(process=1) in actions and StartProcess in {type(a) for a in actions}


def test_L6_S3_close_cancels_closes_stdin_terminates_after_3_s_kills_1_s_later() -> None:
    e = engine()
    e.start(NOW)
    ready(e)
    call_id = e.call("loc/echo", {}, NOW)
    e.take_actions()
    e.close(NOW)
    actions = e.take_actions()
    [notice] = written(actions)
    assert isinstance(notice, Notification) and notice.params["requestId"] == call_id
    assert isinstance(actions[-1], CloseInput)
    assert [type(ev) for ev in e.take_events()] == [CallCancelled]
    assert not e.finished and e.next_deadline() == NOW + 3
    e.handle_timer(NOW + 3)
    assert [type(a) for a in e.take_actions()] == [TerminateProcess]
    e.handle_timer(NOW + 4)
    assert [type(a) for a in e.take_actions()] == [KillProcess]
    assert not e.finished
    e.process_exited(-9, NOW + 4.1, process=1)
    assert not e.finished  # its pipes are still open: part of its tree may live on
    e.output_closed(NOW + 4.1, process=1)
    e.stderr_closed(NOW + 4.1, process=1)
    assert e.finished and e.next_deadline() is None


def test_L6_close_is_finished_when_the_child_exits_within_the_grace() -> None:
    e = engine()
    e.start(NOW)
    ready(e)
    e.close(NOW)
    e.take_actions()
    e.output_closed(NOW + 0.2, process=1)
    e.stderr_closed(NOW + 0.2, process=1)
    e.process_exited(0, NOW + 0.2, process=1)
    assert e.finished
    e.handle_timer(NOW + 10)
    assert e.take_actions() == []


def test_L6_close_gives_up_on_a_child_never_reported_gone() -> None:
    e = engine()
    e.start(NOW)
    e.close(NOW)
    now = NOW
    while not e.finished:
        deadline = e.next_deadline()
        assert deadline is not None and deadline <= NOW + 10
        now = deadline
        e.handle_timer(now)
    assert now == NOW + 3 + 1 + 1  # grace, terminate, kill, one second for the exit


def test_S3_a_tree_that_holds_the_pipes_after_the_child_exits_is_terminated_then_killed() -> None:
    """A launcher that does not exec, or a server that leaves a helper behind: the
    child exits, something of its tree keeps stdout open. Closing is not over
    then; the group is terminated after the grace and killed a second later."""
    e = engine()
    e.start(NOW)
    ready(e)
    e.close(NOW)
    e.take_actions()
    e.process_exited(0, NOW + 0.1, process=1)
    e.stderr_closed(NOW + 0.1, process=1)
    assert not e.finished and e.next_deadline() == NOW + 3
    e.handle_timer(NOW + 3)
    assert e.take_actions() == [TerminateProcess(process=1)]
    e.handle_timer(NOW + 4)
    assert e.take_actions() == [KillProcess(process=1)]
    e.output_closed(NOW + 4.01, process=1)
    assert e.finished and e.next_deadline() is None


def test_S1_a_child_that_exits_while_its_stdout_stays_open_is_not_lost() -> None:
    """A launcher may exit while the server it started goes on serving on the same
    pipes: only the end of stdout makes the server lost."""
    e = engine()
    e.start(NOW)
    ready(e)
    e.process_exited(0, NOW, process=1)
    assert e.next_deadline() is None or e.next_deadline() > NOW + 60
    call_id = e.call("loc/echo", {}, NOW + 1)
    [call] = written(e.take_actions())
    assert call.id == call_id  # still written to the first child
    e.output_closed(NOW + 2, process=1)
    e.stderr_closed(NOW + 2, process=1)
    assert any(isinstance(ev, CallFailed) for ev in e.take_events())
    assert any(isinstance(a, StartProcess) and a.process == 2 for a in e.take_actions())


REPORTS = ("exited", "stdout", "stderr")


@settings(max_examples=200, deadline=None)
@given(
    grace=st.sampled_from([0.5, 3.0]),
    reports=st.lists(
        st.tuples(st.sampled_from(REPORTS), st.floats(min_value=0, max_value=12)), max_size=3, unique_by=lambda r: r[0]
    ),
)
def test_S3_closing_ends_within_its_bound_whatever_the_tree_reports(
    grace: float, reports: list[tuple[str, float]]
) -> None:
    """Whatever the tree does (any subset of the exit and the pipes' ends, at any
    time, or nothing at all), closing is finished by ``close_grace`` + 2 s; it is
    finished earlier only once the child exited and both pipes ended; the group
    is terminated only after the grace, and killed only a second after that."""
    e = StdioClientEngine(server(), environ=ENVIRON, close_grace=grace)
    e.start(NOW)
    ready(e)
    e.close(NOW)
    e.take_actions()
    pending = sorted(reports, key=lambda r: r[1])
    done: set[str] = set()
    now = NOW
    terminated_at: float | None = None
    while not e.finished:
        deadline = e.next_deadline()
        assert deadline is not None
        if pending and NOW + pending[0][1] <= deadline:
            what, at = pending.pop(0)
            now = max(now, NOW + at)
            done.add(what)
            if what == "exited":
                e.process_exited(0, now, process=1)
            elif what == "stdout":
                e.output_closed(now, process=1)
            else:
                e.stderr_closed(now, process=1)
        else:
            now = deadline
            e.handle_timer(now)
        for action in e.take_actions():
            if isinstance(action, TerminateProcess):
                assert now >= NOW + grace and terminated_at is None
                terminated_at = now
            elif isinstance(action, KillProcess):
                assert terminated_at is not None and now >= terminated_at + 1
            else:
                raise AssertionError(f"unexpected {action!r}")
        assert now <= NOW + grace + 2
    assert done == set(REPORTS) or now == NOW + grace + 2


def test_L6_closing_before_start_asks_for_nothing() -> None:
    e = engine()
    e.close(NOW)
    assert e.take_actions() == [] and e.finished


@pytest.mark.parametrize("level", [logging.INFO])
def test_X1_C8_stderr_lines_are_logged_escaped_and_redacted(level: int, caplog: pytest.LogCaptureFixture) -> None:
    e = engine()
    e.start(NOW)
    with caplog.at_level(level, logger="mcpcore.stderr.loc"):
        e.receive_stderr(b"token=" + SECRET.encode() + b" \x1b[31mred\n", NOW, process=1)
    [record] = caplog.records
    assert SECRET not in record.getMessage() and "\x1b" not in record.getMessage()
    assert "token=***" in record.getMessage()
