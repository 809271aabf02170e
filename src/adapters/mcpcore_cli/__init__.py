"""The ``mcpcore`` command line: ``demo``, ``tools``, ``call``, ``check``, and
``login`` / ``logout`` / ``auth status`` for servers that need authorization (OAuth).

Run ``mcpcore --help`` (or ``python -m mcpcore_cli --help``). ``main(argv)``
returns the exit status: 0 success; 1 the tool reported an error (``isError``)
or ``check`` found a server not ready; 2 bad usage, an unknown tool or server,
arguments that do not fit the tool's input schema, or an invalid configuration;
3 an unavailable server, a transport error, a timeout or a protocol violation
by the server; 130 interrupted.
"""

from __future__ import annotations

from ._app import main
from ._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TOOL_ERROR,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_status,
)

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "exit_status",
    "main",
]
