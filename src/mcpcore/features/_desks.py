"""The session's input desk and task desk, made when first needed (B5).

A session that is never asked a question, and has tasks off, never loads
``_input`` or ``_tasks`` (``import mcpcore_anyio`` and making a client load
neither). Until then it holds a stand-in with nothing waiting: no deadline,
no calls, idle, nothing to cancel or close. ``session.input`` and
``session.tasks`` (``OnFirstUse``) make the real desk on first use: a
server's question, a call made with ``on_input="return"``, a -32042 answer,
``start_task`` or ``resume_task``. With ``tasks`` on, the task desk is made
with the session, since it declares the extension and reads every call's
answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from ._input_options import URL_ELICITATION_REQUIRED, check_on_input

if TYPE_CHECKING:
    from ..base._errors import McpError
    from ..base._tools import Tool
    from ..wire._jsonrpc import ErrorResponse
    from ..wire._requests import Pending
    from ._input import AskHost, InputDesk
    from ._port import SessionPort
    from ._tasks import TaskDesk

__all__ = [
    "NO_TASKS",
    "DeskHolder",
    "NoQuestions",
    "NoTasks",
    "OnFirstUse",
    "make_input_desk",
    "make_task_desk",
]

_Desk = TypeVar("_Desk")


class NoQuestions:
    """The input desk until a question first comes: nothing waits for a person."""

    call_ids: tuple[int, ...] = ()
    idle = True
    check_on_input = staticmethod(check_on_input)

    def __init__(self, session: SessionPort) -> None:
        self._s = session

    def session_expired(self) -> None:
        """No question was asked of the person: nothing is void."""

    def next_deadline(self) -> float | None:
        return None

    def handle_timer(self, now: float) -> None:
        return None

    def take_actions(self) -> list[AskHost]:
        return []

    def cancel(self, call_id: int) -> bool:
        return False

    def close(self) -> None:
        return None

    def on_call(self, call_id: int, on_input: str) -> int:
        """A call that may pause for a person (Q4) needs the real desk."""
        return call_id if on_input == "hook" else self._s.input.on_call(call_id, on_input)

    def refusal(self, pending: Pending, message: ErrorResponse) -> McpError | None:
        """Q2: only a -32042 answer needs the real desk."""
        if message.code != URL_ELICITATION_REQUIRED:
            return None
        return self._s.input.refusal(pending, message)


class NoTasks:
    """The task desk with tasks off: nothing is declared, no call follows a task."""

    calls: Mapping[int, object] = {}
    idle = True

    def next_deadline(self) -> float | None:
        return None

    def handle_timer(self, now: float) -> None:
        return None

    def declare(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        return capabilities

    def handshake_capabilities(self, capabilities: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in capabilities.items() if k != "extensions"}

    def task_param(self, tool: Tool, *, chosen: bool = False) -> dict[str, Any] | None:
        return None

    def created(self, pending: Pending, result: dict[str, Any], now: float) -> bool:
        return False

    def cancel(self, call_id: int, now: float, reason: str) -> bool:
        return False

    def close(self, now: float) -> None:
        return None


NO_TASKS = NoTasks()


def make_input_desk(session: SessionPort) -> InputDesk:
    from ._input import InputDesk

    return InputDesk(session)


def make_task_desk(session: SessionPort) -> TaskDesk:
    from ._tasks import TaskDesk

    return TaskDesk(session)


class OnFirstUse(Generic[_Desk]):
    """``session.input`` / ``session.tasks``: the desk the session holds in
    ``attribute``, made by ``make`` (and kept there) while a stand-in holds it."""

    def __init__(self, attribute: str, make: Callable[[SessionPort], _Desk]) -> None:
        self.attribute = attribute
        self.make = make

    @overload
    def __get__(self, session: None, owner: type | None = None) -> OnFirstUse[_Desk]: ...
    @overload
    def __get__(self, session: SessionPort, owner: type | None = None) -> _Desk: ...
    def __get__(
        self, session: SessionPort | None, owner: type | None = None
    ) -> _Desk | OnFirstUse[_Desk]:
        if session is None:
            return self
        desk = getattr(session, self.attribute)
        if isinstance(desk, (NoQuestions, NoTasks)):
            desk = self.make(session)
            setattr(session, self.attribute, desk)
        return desk  # type: ignore[no-any-return]


class DeskHolder:
    """The part of a session that holds its input and task desks (see above)."""

    input = OnFirstUse("input_desk", make_input_desk)
    tasks = OnFirstUse("task_desk", make_task_desk)
    input_desk: InputDesk | NoQuestions
    task_desk: TaskDesk | NoTasks
    endpoint_url: str | None = None  # Q4: what continuations are bound to
