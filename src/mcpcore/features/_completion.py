"""Completion (F6): the values a server suggests for one argument of a prompt or
of a resource template, as a person types it.

It declares ``completion/complete`` (changes nothing on the server, so it may
go out again after a broken stream) and reads its result into a
``Completion``: at most 100 values (more are cut, and ``has_more`` says so),
the ``total`` when the server gave one. The reference is a listed ``Prompt``
or ``ResourceTemplate``, or the protocol's own ``{"type": "ref/prompt",
"name": …}`` / ``{"type": "ref/resource", "uri": …}``; the value and the
context's arguments are strings, refused before sending otherwise.

Loaded when a host first asks for a completion, never on import of a driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base._errors import InvalidArguments, RemoteProtocolError
from ..base._record import record
from ..wire._requests import Pending, RequestKind, refused_by_server, register

__all__ = ["COMPLETE", "Completion", "complete_params"]

MAX_VALUES = 100


@record(frozen=True, slots=True)
class Completion:
    """What ``complete`` returns: the suggested ``values`` (untrusted server text)."""

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False


def _reference(ref: object) -> dict[str, str]:
    uri_template = getattr(ref, "uri_template", None)
    if isinstance(uri_template, str):
        return {"type": "ref/resource", "uri": uri_template}
    name = getattr(ref, "name", None)
    if isinstance(name, str) and not isinstance(ref, Mapping):
        return {"type": "ref/prompt", "name": name}
    if isinstance(ref, Mapping):
        kind = ref.get("type")
        key = "name" if kind == "ref/prompt" else "uri" if kind == "ref/resource" else None
        if key is not None and isinstance(ref.get(key), str):
            return {"type": str(kind), key: ref[key]}
    raise InvalidArguments(
        "ref",
        message="a completion's ref must be a Prompt, a ResourceTemplate, or "
        '{"type": "ref/prompt", "name": ...} / {"type": "ref/resource", "uri": ...}',
    )


def complete_params(
    ref: object, argument: object, value: object, context: Mapping[str, str] | None
) -> dict[str, Any]:
    """``completion/complete``'s params; a caller's mistake is refused before sending."""
    if not isinstance(argument, str) or not argument:
        raise InvalidArguments("argument", message="the argument's name must be a non-empty string")
    if not isinstance(value, str):
        raise InvalidArguments(
            "value", message=f"the value to complete must be a string, not {type(value).__name__}"
        )
    params: dict[str, Any] = {
        "ref": _reference(ref),
        "argument": {"name": argument, "value": value},
    }
    if context is not None:
        if not isinstance(context, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in context.items()
        ):
            raise InvalidArguments(
                "context", message="the context's arguments must be a mapping of strings to strings"
            )
        params["context"] = {"arguments": dict(context)}
    return params


def _completion(result: dict[str, Any], pending: Pending) -> Completion:
    completion = result.get("completion")
    if not isinstance(completion, dict) or not isinstance(completion.get("values"), list):
        raise RemoteProtocolError("the completion/complete result has no 'completion.values' list")
    values = tuple(v for v in completion["values"] if isinstance(v, str))
    total = completion.get("total")
    total = total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None
    has_more = completion.get("hasMore") is True or len(values) > MAX_VALUES
    return Completion(values[:MAX_VALUES], total, has_more)


COMPLETE = register(
    RequestKind(
        method="completion/complete", parse=_completion, refused=refused_by_server, resend=True
    )
)
