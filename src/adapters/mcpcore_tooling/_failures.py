"""One reading of a failed call for the three framework adapters.

A framework can tell the model about a failed tool call in a few ways: ask it
to try again (pydantic-ai's ``ModelRetry``), show it the failure (LangChain's
``ToolException``, pydantic-ai's ``ToolFailed``, the Agents SDK's text
output), or end the run. Which one fits depends on whether a second call is
safe, and that is decided here, once, for all three:

- ``retryable``: the call did not run, and the model can fix it. The client
  refused it before sending (arguments that are not JSON, a tool id not in the
  catalogue), or the server refused it with ``-32602`` (invalid params: an
  unknown tool or arguments it rejects), which MCP reserves for calls it did
  not run.
- ``tool_error``: the tool ran and said it failed (an ``isError`` result, or
  another JSON-RPC error answer): a ``BackendError``. The model sees the
  tool's text, escaped.
- ``unavailable``: the server is down or the call's fate is unknown: a time
  limit, a transport failure, a cancellation, a broken answer. The call may
  have run, so nothing invites the model to send it again; the message says
  so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mcpcore import (
    BackendError,
    InvalidArguments,
    InvalidValue,
    McpError,
    Unavailable,
    UnknownTool,
    escape_text,
)

__all__ = ["INVALID_PARAMS", "Failure", "FailureKind", "classify"]

FailureKind = Literal["retryable", "tool_error", "unavailable"]

#: JSON-RPC "invalid params": MCP's answer to an unknown tool or arguments the server rejects.
INVALID_PARAMS = -32602

_MAY_HAVE_RUN = "it may have run: check before calling it again"


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed call as an adapter shows it: ``kind`` (see the module docstring),
    ``message`` safe to show a model or a terminal (server text escaped), and the
    mcpcore ``error`` itself."""

    kind: FailureKind
    message: str
    error: McpError


def classify(error: McpError) -> Failure:
    """The kind of a failed call and the message a model should see for it."""
    if isinstance(error, InvalidArguments | InvalidValue | UnknownTool):
        # refused by the client before anything was sent; the words are the core's own
        return Failure("retryable", str(error), error)
    if isinstance(error, BackendError):
        if error.output is None and error.rpc_code == INVALID_PARAMS:
            return Failure("retryable", str(error), error)
        return Failure("tool_error", escape_text(error.text) or str(error), error)
    if isinstance(error, Unavailable):
        return Failure("unavailable", str(error), error)  # refused before sending
    return Failure("unavailable", f"{error}: {_MAY_HAVE_RUN}", error)
