"""The loopback redirect listener ``mcpcore login`` signs in through: it lives in
``mcpcore_signin`` (public, for a library's own sign-in too)."""

from __future__ import annotations

from mcpcore_signin import (
    CALLBACK_PATH,
    CONNECTION_TIMEOUT,
    ListenerClosed,
    ListenerTimeout,
    LoopbackListener,
    state_of,
)

__all__ = [
    "CALLBACK_PATH",
    "CONNECTION_TIMEOUT",
    "ListenerClosed",
    "ListenerTimeout",
    "LoopbackListener",
    "state_of",
]
