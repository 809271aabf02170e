"""A task's handle: what a host keeps to pick a task up again (T8).

The handle names a task the server runs (its id, the client it was made
through, the tool, a digest of the endpoint) and writes itself as JSON, so
that another client, in another process, can follow the task again. Following
tasks is ``_tasks``'s; the handle lives apart, below the features' port, which
names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import get_type_hints

from ..base._errors import InvalidValue

__all__ = ["MAX_TASK_ID", "TaskHandle"]

#: The longest task id this client takes.
MAX_TASK_ID = 256
_FORMAT = 1
_MAX_HANDLE = 64 * 1024


@dataclass(frozen=True, slots=True)
class TaskHandle:
    """A tool call the server runs as a task (T8): enough to pick it up again,
    from this client or a new one in another process.

    ``task_id`` is the server's id; ``server`` the name of the client (and hub
    entry) it was made through; ``tool`` the tool's name on the server;
    ``endpoint`` a digest of the server's URL (never the URL itself), which a
    client checks before it resumes a handle. ``to_json()`` /
    ``TaskHandle.from_json(text)`` keep it anywhere. A task id may be all a
    server needs to hand out the result: store it as carefully as the call.
    """

    task_id: str
    server: str
    tool: str
    endpoint: str = field(default="", repr=False)

    def to_json(self) -> str:
        return json.dumps(
            {
                "mcpcoreTask": _FORMAT,
                "taskId": self.task_id,
                "server": self.server,
                "tool": self.tool,
                "endpoint": self.endpoint,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> TaskHandle:
        """Read a handle back; ``InvalidValue`` when ``text`` is not one."""
        if len(text) > _MAX_HANDLE:
            raise InvalidValue("the task handle is larger than any this client writes")
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            raise InvalidValue("the task handle is not JSON") from None
        if not isinstance(data, dict) or data.get("mcpcoreTask") != _FORMAT:
            raise InvalidValue("the text is not a task handle this client wrote")
        task_id, server, tool, endpoint = (
            data.get("taskId"),
            data.get("server"),
            data.get("tool"),
            data.get("endpoint"),
        )
        if not (
            isinstance(task_id, str)
            and 0 < len(task_id) <= MAX_TASK_ID
            and isinstance(server, str)
            and isinstance(tool, str)
            and isinstance(endpoint, str)
        ):
            raise InvalidValue("the task handle is damaged (a field is missing or wrong)")
        return cls(task_id, server, tool, endpoint)


TaskHandle.__annotations__ = get_type_hints(TaskHandle)
TaskHandle.__module__ = "mcpcore"
