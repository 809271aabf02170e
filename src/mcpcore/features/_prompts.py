"""The prompts feature: listing prompts and getting one (F5).

It declares ``prompts/list`` (paged, every page collected) and ``prompts/get``
(at 2026-07-28 it carries ``Mcp-Name: <name>`` and may be answered with
``input_required``); both change nothing on the server and may go out again
after a broken stream. A prompt's arguments are strings: anything else is
refused before sending, naming the argument. A prompt's messages carry the
same typed content blocks as a tool's output (K8).

Every string here is untrusted server text. Loaded when a host first lists or
gets a prompt, never on import of a driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from ..base._errors import InvalidArguments, RemoteProtocolError
from ..base._escape import excerpt
from ..base._record import record
from ..base._render import ContentBlock, content_blocks, render_content
from ..wire._requests import Pending, RequestKind, refused_by_server, register
from ._listing import Listing, cache_hints, read_items, text

__all__ = [
    "PROMPTS_GET",
    "PROMPTS_LIST",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "get_params",
]


@record(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt takes: its ``name``, and whether it is ``required``."""

    name: str
    description: str | None = None
    required: bool = False


@record(frozen=True, slots=True)
class Prompt:
    """One listed prompt: its ``name`` and the arguments it takes."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@record(frozen=True, slots=True)
class PromptMessage:
    """One message of a prompt: ``role`` ("user" or "assistant", as sent) and one
    typed content block."""

    role: str
    content: ContentBlock
    text: str = ""


@record(frozen=True, slots=True)
class PromptResult:
    """What ``get_prompt`` returns: the messages in order, and the cache hints (F9)."""

    messages: tuple[PromptMessage, ...]
    description: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None


def get_params(name: object, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """``prompts/get``'s params. A name that is not a string, arguments that are not
    a mapping of strings to strings: the caller's mistake, refused before sending."""
    if not isinstance(name, str) or not name:
        raise InvalidArguments(
            "name", message=f"a prompt name must be a non-empty string, not {type(name).__name__}"
        )
    if arguments is None:
        return {"name": name}
    if not isinstance(arguments, Mapping):
        raise InvalidArguments(
            "arguments",
            message="prompt arguments must be a mapping of strings to strings, "
            f"not {type(arguments).__name__}",
        )
    for key, value in arguments.items():
        if not isinstance(key, str) or not isinstance(value, str):
            shown = excerpt(key, 60) if isinstance(key, str) else f"a {type(key).__name__} key"
            raise InvalidArguments(
                f"arguments[{shown!r}]",
                message=f"prompt argument {shown!r} must be a string, "
                f"not {type(value).__name__} (prompt arguments are strings)",
            )
    return {"name": name, "arguments": dict(arguments)}


def _argument(raw: object) -> PromptArgument | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return None
    return PromptArgument(raw["name"], text(raw, "description"), raw.get("required") is True)


def _prompt(raw: dict[str, Any]) -> Prompt | None:
    name = text(raw, "name")
    if name is None:
        return None
    arguments = raw.get("arguments")
    parsed = [_argument(a) for a in arguments] if isinstance(arguments, list) else []
    return Prompt(
        name=name,
        title=text(raw, "title"),
        description=text(raw, "description"),
        arguments=tuple(a for a in parsed if a is not None),
        raw=raw,
    )


def _prompts(result: dict[str, Any], pending: Pending) -> Listing[Prompt]:
    return read_items(result, "prompts", _prompt, "prompts", str(pending.context))


def _got(result: dict[str, Any], pending: Pending) -> PromptResult:
    messages = result.get("messages")
    if not isinstance(messages, list):
        raise RemoteProtocolError("the prompts/get result has no 'messages' array")
    out: list[PromptMessage] = []
    for raw in messages:
        if not isinstance(raw, dict) or not isinstance(raw.get("role"), str):
            raise RemoteProtocolError("a message of the prompts/get result has no 'role' string")
        content = raw.get("content")
        [block] = content_blocks([content])
        out.append(PromptMessage(raw["role"], block, render_content([content])))
    ttl, scope = cache_hints(result)
    return PromptResult(tuple(out), text(result, "description"), ttl, scope)


PROMPTS_LIST = register(
    RequestKind(
        method="prompts/list",
        pages="prompts",
        resend=True,
        parse=_prompts,
        refused=refused_by_server,
    )
)
PROMPTS_GET = register(
    RequestKind(
        method="prompts/get",
        parse=_got,
        refused=refused_by_server,
        resend=True,
        input_rounds=True,
        name_param="name",
    )
)
