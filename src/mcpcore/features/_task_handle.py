"""A task's handle: what a host keeps to pick a task up again (T8).

The handle names a task the server runs (its id, the client it was made
through, the tool, a digest of the endpoint) and writes itself as JSON, so
that another client, in another process, can follow the task again. Following
tasks is ``_tasks``'s; the handle lives apart, below the features' port, which
names it.
"""

from __future__ import annotations

import json
from dataclasses import field, replace
from typing import get_type_hints

from ..base._errors import InvalidValue
from ..base._record import record
from ..base._seal import (
    SEAL_FIELD,
    SealKeys,
    canonical_text,
    check_seal,
    seal_keys,
    seal_of,
)

__all__ = ["MAX_TASK_ID", "TaskHandle"]

#: The longest task id this client takes.
MAX_TASK_ID = 256
_FORMAT = 1
_MAX_HANDLE = 64 * 1024


@record(frozen=True, slots=True)
class TaskHandle:
    """A tool call the server runs as a task (T8): enough to pick it up again,
    from this client or a new one in another process.

    ``task_id`` is the server's id; ``server`` the name of the client (and hub
    entry) it was made through; ``tool`` the tool's name on the server;
    ``endpoint`` a digest of the server's URL (never the URL itself), which a
    client checks before it resumes a handle. ``to_json()`` /
    ``TaskHandle.from_json(text)`` keep it anywhere; ``key=`` seals it and
    checks its seal (U2). A task id may be all a
    server needs to hand out the result: store it as carefully as the call.
    """

    task_id: str
    server: str
    tool: str
    endpoint: str = field(default="", repr=False)

    # U2: the seal this handle carries (a client with seal_key= made it, or it was
    # read back from sealed text); to_json() writes it. Never compared.
    seal: str = field(default="", repr=False, compare=False)

    def _body(self) -> dict[str, object]:
        """Its fields as written, without the seal: what a seal covers."""
        return {
            "mcpcoreTask": _FORMAT,
            "taskId": self.task_id,
            "server": self.server,
            "tool": self.tool,
            "endpoint": self.endpoint,
        }

    def to_json(self, *, key: SealKeys | None = None) -> str:
        """The handle as JSON (canonical form). With ``key`` (bytes or text, or a
        sequence of keys: the first is used), sealed with an HMAC-SHA256 of that
        form (U2); without it, the seal it carries, if any."""
        body = self._body()
        seal = seal_of(body, seal_keys(key)[0]) if key is not None else self.seal
        if seal:
            body[SEAL_FIELD] = seal
        return canonical_text(body)

    def sealed(self, key: SealKeys) -> TaskHandle:
        """This handle carrying its seal under ``key`` (the first, given several)."""
        return replace(self, seal=seal_of(self._body(), seal_keys(key)[0]))

    @classmethod
    def from_json(cls, text: str | bytes, *, key: SealKeys | None = None) -> TaskHandle:
        """Read a handle back; ``InvalidValue`` when ``text`` is not one.

        With ``key`` (one key, or several: the new one first, then old ones while
        keys rotate), its seal must match one of them, or ``SealBroken`` (an
        ``InvalidValue``) is raised, naming nothing of its content (U2). Without
        ``key`` a seal is kept as it is, unchecked: a client made with
        ``seal_key=`` checks it when the handle is used.
        """
        keys = seal_keys(key) if key is not None else None
        if len(text) > _MAX_HANDLE:
            raise InvalidValue("the task handle is larger than any this client writes")
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise InvalidValue("the task handle is not JSON") from None
        if not isinstance(data, dict) or data.get("mcpcoreTask") != _FORMAT:
            raise InvalidValue("the text is not a task handle this client wrote")
        seal = data.pop(SEAL_FIELD, "")
        if keys is not None:
            check_seal(data, seal, keys, "task handle")
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
            and isinstance(seal, str)
        ):
            raise InvalidValue("the task handle is damaged (a field is missing or wrong)")
        return cls(task_id, server, tool, endpoint, seal)


TaskHandle.__annotations__ = get_type_hints(TaskHandle)
TaskHandle.__module__ = "mcpcore"
