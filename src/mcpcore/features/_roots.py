"""Roots and sampling: the two other things a server may ask a client for (Q3).

Both are deprecated at 2026-07-28 but handshake-era servers still use them.
This module owns their shapes: the host's roots (a list given up front, or
what its ``roots`` hook returns) as the ``roots/list`` answer, and a
``sampling/createMessage`` request read into the ``Sampling`` the host's
``sample`` hook receives, and the ``SampleResult`` it returns checked before
it is sent.
Where they are asked and answered is ``InputDesk``'s (``_input.py``); the
values are ``_questions``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base._errors import InvalidValue
from ..base._escape import excerpt
from ._questions import InputError, SampleResult, Sampling

__all__ = ["check_roots", "check_sample", "read_sampling"]

# The most roots a host may give, and the longest URI or name of one.
_MAX_ROOTS = 1000
_MAX_TEXT = 8192


def check_roots(value: object, *, hook: bool) -> tuple[dict[str, Any], ...]:
    """The host's roots as the wire carries them: each a ``file://`` URI (a string),
    or a mapping with ``uri`` and an optional ``name``.

    A list given to the client that breaks this raises ``InvalidValue`` at once;
    what the ``roots`` hook returned (``hook``) raises ``InputError`` instead.
    """

    def refuse(why: str) -> Exception:
        if hook:
            return InputError(f"the roots hook returned {why}", hook="roots", outcome="unusable")
        return InvalidValue(f"roots must be file:// URIs (or mappings with a 'uri'); {why}")

    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise refuse(f"a {type(value).__name__}, not a list")
    if len(value) > _MAX_ROOTS:
        raise refuse(f"more than {_MAX_ROOTS} roots")
    roots: list[dict[str, Any]] = []
    for item in value:
        uri, name = (item, None) if isinstance(item, str) else (None, None)
        if isinstance(item, Mapping):
            uri, name = item.get("uri"), item.get("name")
        if not isinstance(uri, str) or not uri.startswith("file://") or len(uri) > _MAX_TEXT:
            raise refuse("a root that is not a file:// URI")
        if name is not None and (not isinstance(name, str) or len(name) > _MAX_TEXT):
            raise refuse("a root whose name is not a string")
        roots.append({"uri": uri} if name is None else {"uri": uri, "name": name})
    return tuple(roots)


def read_sampling(params: object, *, server: str, tool_id: str | None) -> Sampling | str:
    """The request ``sampling/createMessage`` params make, or why they are not one."""
    if not isinstance(params, Mapping):
        return "the sampling/createMessage params are not a JSON object"
    messages = params.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        return "the sampling request has no list of messages"
    tokens = params.get("maxTokens")
    prompt = params.get("systemPrompt")
    return Sampling(
        server=server,
        tool_id=tool_id,
        messages=tuple(messages),
        max_tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None,
        system_prompt=prompt if isinstance(prompt, str) else None,
        params=params,
    )


def check_sample(answer: object) -> dict[str, Any]:
    """The wire form of the ``sample`` hook's answer; ``InputError`` when unusable."""
    if not isinstance(answer, SampleResult):
        raise InputError(
            f"the sample hook returned a {type(answer).__name__}, not a SampleResult",
            hook="sample",
            outcome="unusable",
        )
    # SampleResult checks its fields when built; a subclass or a patched instance
    # may still carry anything, which must fail only the call, not the engine.
    text, block, stop = answer.text, answer.content, answer.stop_reason
    if (
        (block is None and not isinstance(text, str))
        or (block is not None and not isinstance(block, Mapping))
        or (stop is not None and not isinstance(stop, str))
    ):
        raise InputError(
            "the sample hook's SampleResult holds a field of the wrong type",
            hook="sample",
            outcome="unusable",
        )
    content = {"type": "text", "text": text} if block is None else dict(block)
    if not isinstance(content.get("type"), str) or not isinstance(answer.model, str):
        raise InputError(
            "the sample hook's content has no type, or its model is not a string",
            hook="sample",
            outcome="unusable",
        )
    wire: dict[str, Any] = {"role": "assistant", "content": content, "model": answer.model}
    if stop is not None:
        wire["stopReason"] = excerpt(stop, 100)
    return wire
