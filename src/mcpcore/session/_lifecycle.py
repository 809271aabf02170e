"""The session's lifecycle as a table: its states, its inputs and ``TRANSITIONS``.

The states (``SessionState``) are defined with the features' port
(``features/_port.py``), where a feature reads them; they are the table's here.

``ClientSession`` (``_session.py``) and its handshake (``_handshake.py``) move
the state only through this table; ``docs/state-diagram.md`` is drawn from it
by ``scripts/draw_state_diagram.py``.
"""

from __future__ import annotations

from enum import Enum

from ..features._port import SessionState

__all__ = ["TRANSITIONS", "SessionInput", "SessionState"]


class SessionInput(Enum):
    START = "start"
    INIT_SUCCEEDED = "initialized (handshake era)"
    DISCOVERED = "discovered (2026-07-28)"
    FELL_BACK = "fell back to initialize"
    LISTING_DONE = "listing done"
    START_FAILED = "start failed"
    RETRY_DUE = "retry due"
    CALL = "call"
    REFRESH = "refresh"
    CLOSE = "close"


S, In = SessionState, SessionInput

# The lifecycle, as a table: TRANSITIONS[state][input] -> next state.
# docs/state-diagram.md is drawn from it by scripts/draw_state_diagram.py.
TRANSITIONS: dict[SessionState, dict[SessionInput, SessionState]] = {
    S.IDLE: {In.START: S.CONNECTING, In.CLOSE: S.CLOSED},
    S.CONNECTING: {
        In.INIT_SUCCEEDED: S.LISTING,
        In.DISCOVERED: S.LISTING,
        In.FELL_BACK: S.CONNECTING,
        In.START_FAILED: S.BACKOFF,
        In.CLOSE: S.CLOSED,
    },
    S.LISTING: {
        In.LISTING_DONE: S.READY,
        In.START_FAILED: S.BACKOFF,
        In.CLOSE: S.CLOSED,
    },
    S.BACKOFF: {In.RETRY_DUE: S.CONNECTING, In.CLOSE: S.CLOSED},
    S.READY: {
        In.CALL: S.READY,
        In.REFRESH: S.READY,
        In.LISTING_DONE: S.READY,
        In.CLOSE: S.CLOSED,
    },
    S.CLOSED: {In.CLOSE: S.CLOSED},
}
del S, In
