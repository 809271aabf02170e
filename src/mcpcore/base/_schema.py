"""Output-schema validation (K5): the only module that touches ``jsonschema``.

``jsonschema`` is a dependency of the package (the ``schema`` extra is kept, empty,
for compatibility), but the core's own imports stay standard-library only (X3):
it is imported lazily, inside :func:`compile_schema`, the first time a tool
declares an ``outputSchema``, so ``import mcpcore`` never imports it. Should it
be missing anyway (a vendored core, a broken environment), :func:`compile_schema`
returns ``None`` (validation is off) and says so once per process with a logging
``WARNING`` that says how to fix it.

A schema that ``jsonschema`` rejects raises :class:`SchemaInvalid`, so the tools
layer can drop it at listing with a warning and keep the tool callable (K5).
Validation never fetches anything (E6, M47): each validator gets an empty
``referencing.Registry`` of its own, which has no retrieval, so a ``$ref``
resolves inside the schema only; without it ``jsonschema`` would still fetch
remote references with ``urllib`` (a deprecated fallback it keeps).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from types import ModuleType
from typing import Any, Protocol

from ._escape import excerpt
from ._record import record

__all__ = [
    "SchemaInvalid",
    "Validator",
    "Violation",
    "compile_schema",
    "validate",
    "violation",
]

_log = logging.getLogger("mcpcore.schema")

_ABSENT_MESSAGE = (
    "jsonschema is not installed: outputSchema validation is off; "
    "install it with `pip install jsonschema` (mcpcore depends on it)"
)


class Validator(Protocol):
    """The part of a ``jsonschema`` validator this library uses."""

    def iter_errors(self, instance: Any) -> Iterable[Any]: ...


class SchemaInvalid(ValueError):
    """A declared schema is not a valid JSON Schema; the message says why (escaped)."""


@record(frozen=True)
class Violation:
    """One way an instance breaks a schema.

    ``keyword`` is the violated schema keyword (``"required"``, ``"type"``, …, or
    ``"false"`` for the ``false`` schema); ``path`` is a JSON path into the
    instance (``$.x``); ``message`` is the full, escaped, human-readable message.
    """

    keyword: str
    path: str
    message: str


class _Probe:
    """Whether ``jsonschema`` was looked for, and what was found (once per process).

    Safe under threads without a lock (the core never touches threads): a
    result is published only once its import has finished, ``module`` before
    ``checked``, so a caller that sees ``checked`` also sees the module. Callers
    that arrive before that each import (Python's import system is itself
    thread-safe and runs the module once); ``warned`` is claimed with one atomic
    ``dict.setdefault``, so the absence is logged once, and only by a caller
    whose import really failed.
    """

    checked: bool = False
    module: ModuleType | None = None
    warned: dict[str, object]

    def __init__(self) -> None:
        self.warned = {}


_probe = _Probe()


def _reset() -> None:
    """Forget the probe and the once-warning flag (for tests)."""
    _probe.checked = False
    _probe.module = None
    _probe.warned = {}


def _validators() -> ModuleType | None:
    if _probe.checked:
        module = _probe.module
    else:
        try:
            module = importlib.import_module("jsonschema.validators")
        except ImportError:
            module = None
        if module is not None or not _probe.checked:  # a found module is never unpublished
            _probe.module = module
            _probe.checked = True
    if module is None:
        claim = object()
        if _probe.warned.setdefault("absent", claim) is claim:
            _log.warning(_ABSENT_MESSAGE)
    return module


def compile_schema(schema: object) -> Validator | None:
    """Compile ``schema`` into a validator.

    Returns ``None`` when ``jsonschema`` is not installed (validation is off).
    Raises :class:`SchemaInvalid` when the schema itself is not valid.
    """
    if not isinstance(schema, (dict, bool)):
        raise SchemaInvalid(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    validators = _validators()
    if validators is None:
        return None
    try:
        cls: Any = validators.validator_for(schema, default=validators.Draft202012Validator)
        cls.check_schema(schema)
        # E6, M47: an empty registry of our own. Without one, jsonschema falls back
        # (deprecated, but still) to fetching a remote $ref with urllib: a server
        # could make the client connect anywhere, and hang it.
        registry = importlib.import_module("referencing").Registry()
        compiled: Validator = cls(schema, registry=registry)
    except Exception as exc:  # SchemaError, RecursionError, odd $schema values, …
        detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise SchemaInvalid(excerpt(str(detail), 200)) from exc
    return compiled


def violation(validator: Validator, instance: object) -> Violation | None:
    """The most relevant way ``instance`` breaks the schema, or ``None`` when it conforms.

    A schema that fails while validating (an unresolvable ``$ref``, runaway
    recursion) is logged as a warning and treated as no violation: the schema,
    not the payload, is at fault, and an unusable schema means "unvalidated" (K5).
    """
    try:
        errors = list(validator.iter_errors(instance))
        if not errors:
            return None
        exceptions = importlib.import_module("jsonschema.exceptions")
        error: Any = exceptions.best_match(errors)
    except Exception as exc:
        _log.warning(
            "outputSchema could not be applied (%s); structuredContent left unvalidated",
            excerpt(type(exc).__name__ + ": " + str(exc), 200),
        )
        return None
    keyword = "false" if error.validator is None else str(error.validator)
    path = str(getattr(error, "json_path", "$"))
    message = (
        f"structuredContent violates outputSchema: {keyword!r} at {excerpt(path, 100)}: "
        f"{excerpt(str(error.message), 200)}"
    )
    return Violation(keyword=keyword, path=path, message=message)


def validate(validator: Validator, instance: object) -> str | None:
    """A message naming the violated keyword, or ``None`` when ``instance`` conforms."""
    found = violation(validator, instance)
    return None if found is None else found.message
