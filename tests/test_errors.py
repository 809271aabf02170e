"""X2: one error hierarchy under McpError; L4: the backoff schedule; X1: escaping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore
from mcpcore import (
    BackendError,
    CallTimeout,
    ConfigError,
    HandshakeError,
    LimitExceeded,
    LocalProtocolError,
    McpError,
    ProtocolError,
    RemoteProtocolError,
    TransportError,
    Unavailable,
    UnknownTool,
    backoff_delay,
    escape_text,
)
from mcpcore._escape import excerpt


@pytest.mark.parametrize(
    ("error", "kinds"),
    [
        (ConfigError("bad", key="url"), (McpError,)),
        (LocalProtocolError("misuse"), (ProtocolError, McpError)),
        (RemoteProtocolError("peer"), (ProtocolError, McpError)),
        (HandshakeError("version"), (RemoteProtocolError, ProtocolError, McpError)),
        (LimitExceeded("max_pages", 3, "pages"), (RemoteProtocolError, McpError)),
        (TransportError("down"), (McpError,)),
        (CallTimeout("slow", tool="s/t", budget=1.0), (TransportError, McpError)),
        (BackendError("oops", tool="s/t"), (McpError,)),
        (Unavailable("down", server="s"), (McpError,)),
        (UnknownTool("s/x"), (McpError,)),
    ],
)
def test_X2_hierarchy_lets_a_host_catch_by_kind(error: McpError, kinds: tuple[type, ...]) -> None:
    """X2: every error is an McpError and sits under its kind."""
    for kind in kinds:
        assert isinstance(error, kind)
    assert str(error)


def test_X2_errors_carry_what_a_host_needs() -> None:
    """X2: messages say what happened; attributes carry the details."""
    limit = LimitExceeded("max_pages", 3, "the number of pages")
    assert (limit.limit_name, limit.limit) == ("max_pages", 3) and "max_pages" in str(limit)
    timeout = CallTimeout("tool 's/t' did not finish within its 5 s budget", tool="s/t", budget=5.0)
    assert (timeout.tool, timeout.budget) == ("s/t", 5.0)
    backend = BackendError("the text", tool="s/t")
    assert backend.text == "the text" and "s/t" in str(backend)
    assert Unavailable("refused", server="s").reason == "refused"
    assert UnknownTool("s/x").tool_id == "s/x" and "s/x" in str(UnknownTool("s/x"))
    assert ConfigError("bad", key="url").key == "url"
    assert all(name in mcpcore.__all__ for name in ("McpError", "ConfigError", "CallTimeout"))


def test_L4_backoff_schedule() -> None:
    """L4: 1 s after the first failure, doubling up to 60 s."""
    assert [backoff_delay(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert backoff_delay(10_000) == 60
    with pytest.raises(ValueError):
        backoff_delay(0)


@given(st.text())
def test_X1_escaped_text_has_no_control_characters(text: str) -> None:
    """X1: nothing a terminal would execute survives escaping."""
    shown = escape_text(text, keep_newlines=False)
    assert not any(ord(c) < 0x20 and c != "\t" for c in shown)
    assert "\x1b" not in shown and "\x7f" not in shown and "\x9b" not in shown


def test_X1_escape_shows_sequences() -> None:
    """X1: escape sequences are shown, not executed."""
    assert escape_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert escape_text("line\nnext") == "line\nnext"
    assert escape_text("\u202eevil") == "\\u202eevil"
    assert excerpt(b"\x1b[31m" + b"x" * 500, 10) == "\\x1b[31mxxxxx…"
    assert excerpt("short") == "short"
    assert excerpt("x" * 300).endswith("…")


def test_X1_X5_backend_error_message_is_a_short_escaped_excerpt() -> None:
    """X1, X5: BackendError's message holds an escaped, bounded excerpt; ``.text`` stays raw."""
    raw = "\x1b[31m" + "x" * 100_000
    error = BackendError(raw, tool="s/t")
    message = str(error)
    assert len(message) < 1000
    assert "\x1b" not in message and "\\x1b[31m" in message
    assert message.endswith("…") and "'s/t'" in message
    assert error.text == raw and error.args == (message,)
    # Newlines are kept; a short text is shown whole, without a cut mark.
    assert str(BackendError("line\nnext\x07")) == "the tool reported an error: line\nnext\\x07"
    assert str(BackendError("")) == "the tool reported an error"
