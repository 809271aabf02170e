"""Issue 37 §11, the library's gaps: the blocking hub's ``start_call``; a tool hidden
because it requires tasks is logged at INFO, so a host that configured no logging
prints nothing at every start; a limit's error names the option that raises it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import pytest

import mcpcore_threaded
from mcpcore import Cancelled, LimitExceeded
from mcpcore_demo import DemoServer, default_tools


def test_the_blocking_hub_starts_a_call_and_returns_its_handle() -> None:
    with DemoServer().serve_in_thread() as running:
        document = json.dumps({"mcpServers": {"demo": {"url": running.url}}})
        with mcpcore_threaded.McpHub.from_text(document) as hub:
            assert hub.ready(10)["demo"].ok
            handle = hub.start_call("demo/echo", {"text": "from the hub"})
            assert isinstance(handle, mcpcore_threaded.CallHandle)
            assert handle.result(10).text == "from the hub"
            slow = hub.start_call("demo/slow", {"steps": 100, "delay": 0.1})
            assert slow.cancel()
            with pytest.raises(Cancelled):
                slow.result(10)


def test_a_tool_hidden_for_requiring_tasks_prints_nothing_without_logging_configured() -> None:
    """With logging not configured, Python's last-resort handler prints WARNING and up
    on stderr: the hidden tool is logged at INFO, so every start stays quiet."""
    code = textwrap.dedent(
        """
        import mcpcore_threaded
        from mcpcore_demo import DemoServer, default_tools
        with DemoServer(tools=default_tools("required")).serve_in_thread() as running:
            with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
                assert client.ready(10).ok
                print(sorted(t.id for t in client.tools if t.name == "build"))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"  # hidden: this client does not invoke tasks
    assert done.stderr == ""


def test_the_hidden_tool_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpcore.tools")
    with DemoServer(tools=default_tools("required")).serve_in_thread() as running:
        with mcpcore_threaded.McpClient("demo", {"url": running.url}) as client:
            assert client.ready(10).ok
    hid = [r for r in caplog.records if "requires task invocation" in r.getMessage()]
    assert hid and {r.levelno for r in hid} == {logging.INFO}


def test_P6_a_limit_s_error_names_the_client_option_that_raises_it() -> None:
    """The driver-level case is ``test_drivers.test_P6_oversized_response_names_the_limit``."""
    error = LimitExceeded("max_message_size", 1000, "a JSON response body")
    assert str(error) == (
        "a JSON response body exceeds the max_message_size limit of 1000; "
        "the client option limits=HttpLimits(max_message_size=...) raises it"
    )
    # a local server's line is bounded by the larger of the two message bounds
    assert "max_read_size" in str(LimitExceeded("max_line_size", 10, "a stdio line"))
    assert "max_pages=..." in str(LimitExceeded("max_pages", 3, "the number of pages"))
    assert "option" not in str(LimitExceeded("max_event_size", 3, "an SSE event"))
