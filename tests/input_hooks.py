"""What the state machines (tests/test_engine_statemachine.py,
tests/test_modern_statemachine.py) play as a host's input hooks (Q1-Q5, D2).

The server's questions (form, URL and malformed elicitations, roots, sampling,
a method no client offers), the sets of hooks a client may offer, what a hook
returns for each outcome (an answer that fits, one that does not, one of the
wrong type, one JSON cannot carry), the ``InputError`` outcome each failing
report must give, and a log handler that records any record holding a secret.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from mcpcore import ElicitResult, HookFailure, InputOptions, SampleResult

HOOK_TIMEOUT = 2.0
# Never in a log record, a repr or an error: the person's answers, a URL's query,
# the server's prompt.
SECRETS = ("FORMSECRET", "URLSECRET", "PROMPTSECRET")
FORM = {
    "type": "object",
    "properties": {"branch": {"type": "string"}, "count": {"type": "integer"}, "note": {}},
    "required": ["branch"],
}
ROOTS = ({"uri": "file:///FORMSECRET", "name": "w"},)
# question -> (method, params)
QUESTIONS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "elicit-form": ("elicitation/create", {"message": "which branch?", "requestedSchema": FORM}),
    "elicit-url": (
        "elicitation/create",
        {
            "mode": "url",
            "message": "sign in",
            "url": "https://idp.example/authorize?token=URLSECRET",
            "elicitationId": "e-1",
        },
    ),
    "elicit-bad": ("elicitation/create", {"mode": "form", "message": 7}),
    "roots": ("roots/list", {}),
    "sampling": (
        "sampling/createMessage",
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "PROMPTSECRET"}}],
            "maxTokens": 10,
        },
    ),
    "sampling-bad": ("sampling/createMessage", {"messages": "PROMPTSECRET"}),
    "ping": ("ping", None),
    "x/unknown": ("x/unknown", None),
}
# What a client offers: no hook (seed 000), every hook, or roots as a list and
# form questions only.
OFFER_OPTIONS: dict[str, InputOptions] = {
    "none": InputOptions(),
    "all": InputOptions(
        elicit_form=True, elicit_url=True, roots_hook=True, sampling=True, timeout=HOOK_TIMEOUT
    ),
    "lists": InputOptions(elicit_form=True, roots=ROOTS, timeout=HOOK_TIMEOUT),
}
# The questions each offer puts to a hook, and the hook's kind.
HOOKED: dict[str, dict[str, str]] = {
    "none": {},
    "all": {
        "elicit-form": "elicit-form",
        "elicit-url": "elicit-url",
        "roots": "roots",
        "sampling": "sample",
    },
    "lists": {"elicit-form": "elicit-form"},
}
HOOK_OUTCOMES = ["valid", "decline", "invalid", "unusable", "uncarriable", "raised", "missing"]


def hook_value(kind: str, how: str) -> object:
    """What a host's hook of ``kind`` returns for the outcome ``how``."""
    if how == "unusable":
        return "FORMSECRET"  # a str, not the hook's result type
    if kind == "roots":
        return {
            "valid": ["file:///FORMSECRET/a"],
            "decline": [],
            "invalid": ["https://FORMSECRET.example/"],
            "uncarriable": [{"uri": "file:///x", "name": 7}],
        }[how]
    if kind == "sample":
        return {
            "valid": SampleResult(model="m", text="FORMSECRET"),
            "decline": SampleResult(model="m", content={"type": "image", "data": "", "mimeType": "x"}),
            "invalid": SampleResult(model="m", content={"text": "FORMSECRET"}),  # no type
            "uncarriable": SampleResult(model="m", content={"type": "text", "text": math.nan}),
        }[how]
    if kind == "elicit-url":
        return {
            "valid": ElicitResult.accept(),
            "decline": ElicitResult.decline(),
            "invalid": ElicitResult.accept({"branch": "FORMSECRET"}),
            "uncarriable": ElicitResult.accept({"note": math.nan}),
        }[how]
    return {
        "valid": ElicitResult.accept({"branch": "FORMSECRET", "count": 3}),
        "decline": ElicitResult.cancel(),
        "invalid": ElicitResult.accept({"branch": "main", "count": "FORMSECRET"}),
        "uncarriable": ElicitResult.accept({"branch": "main", "note": math.nan}),  # untyped field
    }[how]


def failure_outcome(kind: str, how: str) -> str | None:
    """The ``InputError.outcome`` a report gives, or ``None`` when it is an answer."""
    if how in ("valid", "decline"):
        return None
    if how in ("raised", "missing"):
        return how
    if kind.startswith("elicit") and (how == "invalid" or (kind == "elicit-url" and how == "uncarriable")):
        return "invalid"
    return "unusable"


def report(engine: Any, attempt: int, kind: str, how: str, now: float) -> None:
    """The driver reports what the hook did (D2)."""
    if how == "raised":
        engine.hook_failed(attempt, HookFailure.RAISED, now)
    elif how == "missing":
        engine.hook_failed(attempt, HookFailure.MISSING, now)
    else:
        engine.hook_answered(attempt, hook_value(kind, how), now)


def answer_fits(kind: str, result: object) -> bool:
    """A result the hook of ``kind`` can have produced, in the wire's shape."""
    if not isinstance(result, dict):
        return False
    if kind == "roots":
        return isinstance(result.get("roots"), list)
    if kind == "sample":
        return result.get("role") == "assistant" and isinstance(result.get("content"), dict)
    return result.get("action") in ("accept", "decline", "cancel")


@dataclass
class Asked:
    """One attempt of a host hook, as the test (the driver) sees it."""

    attempt: int
    kind: str  # elicit-form / elicit-url / roots / sample
    cid: int  # the call it belongs to
    deadline: float
    rid: str | None = None  # handshake era: the server request it answers
    key: str | None = None  # 2026-07-28: its key in the round's inputRequests
    settled: bool = False  # answered, failed, past its deadline, forgotten or closed


class SecretWatch(logging.Handler):
    """Records any mcpcore log record that holds a secret (installed at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.leaks: list[str] = []
        self._level = logging.NOTSET

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if any(secret in text for secret in SECRETS):
            self.leaks.append(text)

    def install(self) -> None:
        logger = logging.getLogger("mcpcore")
        self._level = logger.level
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)

    def remove(self) -> None:
        logger = logging.getLogger("mcpcore")
        logger.removeHandler(self)
        logger.setLevel(self._level)


def no_secret_in(*texts: object) -> bool:
    return not any(secret in str(text) for text in texts for secret in SECRETS)
