"""``record``: a dataclass whose methods cost nothing to make at import.

``@dataclasses.dataclass`` writes each class its own ``__init__``, ``__repr__``,
``__eq__``, ``__hash__`` (and, frozen, ``__setattr__`` and ``__delattr__``) as
source text and compiles it, six compilations a class: on Python 3.11 that was
two thirds of ``import mcpcore_anyio`` (about 34 of 50 ms, for 67 classes), paid
by every fresh process before its first connection (issue 40's B12).

``record`` takes the same arguments for what this package uses (``frozen``,
``slots``, ``kw_only``, ``repr``, ``eq``; fields with ``field(default=...,
default_factory=..., repr=..., hash=..., compare=..., init=...)``) and keeps
everything a dataclass is to its users: ``dataclasses.fields``, ``replace``,
``asdict`` and ``is_dataclass`` work (the class *is* a dataclass, made with no
method asked for), type checkers read it as one (``dataclass_transform``), and
equality, hashing, ``repr``, immutability, pickling and the constructor's
errors behave as ``dataclass`` makes them.

The methods are written once, here: shared by every record, they read a table
of the class's fields made when the class is. The constructor merges the given
keywords over the table's defaults and sets the fields; two C-level checks (the
keywords are fields; none is missing) stand for the argument list ``dataclass``
compiles. That costs about half a microsecond more an object, so a class that
has made 256 objects gets, from ``make_dataclass``, the constructor ``dataclass``
would have compiled: a short-lived process compiles nothing it barely uses, and
a long-lived host's hot records cost what dataclass's do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, field
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["record"]

_T = TypeVar("_T", bound=type)


class _Factory:
    """Where a field's factory makes the value: in a record's table of defaults, and
    in its signature (shown as ``<factory>``, as dataclass's is)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Any = _Factory()


class _Layout:
    """One record class's fields, as its shared methods read them."""

    __slots__ = (
        "accepted",
        "compared",
        "count",
        "defaults",
        "factories",
        "frozen",
        "hashed",
        "names",
        "positional",
        "post_init",
        "qualname",
        "shown",
        "signature",
        "slots",
        "uses",
    )

    def __init__(self, cls: type, frozen: bool, slots: bool) -> None:
        fields = dataclasses.fields(cls)
        self.qualname = cls.__qualname__
        self.frozen, self.slots = frozen, slots
        self.uses = _COMPILED_AFTER
        self.post_init = hasattr(cls, "__post_init__")
        self.shown = tuple(f.name for f in fields if f.repr)
        compared = [f.name for f in fields if f.compare]
        self.compared = attrgetter(*compared) if compared else None
        hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
        self.hashed = attrgetter(*hashed) if hashed else None
        self.names = tuple(f.name for f in fields)
        # What the constructor sets, as dataclass's does: each field it takes, and a
        # field it does not take when a factory makes it or (slotted) it has a default.
        self.accepted = frozenset(f.name for f in fields if f.init)
        self.positional = tuple(f.name for f in fields if f.init and not f.kw_only)
        self.defaults: dict[str, object] = {}
        for f in fields:
            if f.default_factory is not MISSING:
                self.defaults[f.name] = _FACTORY
            elif f.default is not MISSING and (f.init or slots):
                self.defaults[f.name] = f.default
        self.factories = tuple(
            (f.name, f.default_factory) for f in fields if f.default_factory is not MISSING
        )
        self.count = len(self.accepted | self.defaults.keys())
        self.signature: object = None  # made when first asked for (help(), inspect)
        # As dataclass checks when it writes the constructor.
        defaulted = False
        for f in fields:
            if not f.init or f.kw_only:
                continue
            if defaulted and f.default is MISSING and f.default_factory is MISSING:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            defaulted = f.default is not MISSING or f.default_factory is not MISSING

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keywords, with the positional arguments given by name."""
        if len(args) > len(self.positional):
            raise TypeError(
                f"{self.qualname}.__init__() takes {len(self.positional) + 1} positional "
                f"arguments but {len(args) + 1} were given"
            )
        for name, value in zip(self.positional, args, strict=False):
            if name in kwargs:
                raise TypeError(
                    f"{self.qualname}.__init__() got multiple values for argument {name!r}"
                )
            kwargs[name] = value
        return kwargs

    def refuse(self, values: dict[str, Any]) -> TypeError:
        """The error for keywords that are not fields, or fields left out."""
        unknown = [name for name in values if name not in self.accepted]
        if unknown:
            return TypeError(
                f"{self.qualname}.__init__() got an unexpected keyword argument {unknown[0]!r}"
            )
        missing = [name for name in self.names if name in self.accepted and name not in values]
        listed = " and ".join(repr(name) for name in missing)
        return TypeError(
            f"{self.qualname}.__init__() missing {len(missing)} required argument(s): {listed}"
        )


def _layout(obj: object) -> _Layout:
    layout: _Layout = type(obj).__record__  # type: ignore[attr-defined]
    return layout


# A class that has made this many objects gets the constructor dataclass compiles:
# a long-lived host's hot records then cost what dataclass's do, and a short-lived
# process never pays the compilation (0.2-0.4 ms a class) for a class it barely uses.
_COMPILED_AFTER = 256


def _init(self: object, /, *args: Any, **kwargs: Any) -> None:
    """A record's constructor until it is compiled: the table's defaults under the
    given keywords, set field by field (two C-level checks stand for dataclass's
    argument list)."""
    layout: _Layout = type(self).__record__  # type: ignore[attr-defined]
    # No lock: threads racing here at most compile a class twice, or (a count that
    # steps past zero) not at all; either way each object is made the same.
    layout.uses -= 1
    if not layout.uses:
        cls = type(self)
        cls.__init__ = _constructor(cls, layout)  # type: ignore[method-assign]
    if args:
        kwargs = layout.arguments(args, kwargs)
    if not kwargs.keys() <= layout.accepted:
        raise layout.refuse(kwargs)
    values = {**layout.defaults, **kwargs}
    if len(values) != layout.count:
        raise layout.refuse(values)
    put = object.__setattr__
    for name, value in values.items():
        put(self, name, value)
    for name, factory in layout.factories:
        if values[name] is _FACTORY:
            put(self, name, factory())
    if layout.post_init:
        self.__post_init__()  # type: ignore[attr-defined]


def _constructor(cls: type, layout: _Layout) -> Callable[..., None]:
    """The ``__init__`` that ``dataclass`` writes for ``cls``'s fields, taken from a
    twin made by ``make_dataclass`` with only a constructor: the same arguments, so
    the same errors, as straight-line code. (The twin's ``__post_init__`` stands
    in: the call finds the record's own.)"""
    specs = []
    for f in dataclasses.fields(cls):
        given: dict[str, Any] = {"init": f.init, "kw_only": f.kw_only}
        if f.default is not MISSING:
            given["default"] = f.default
        if f.default_factory is not MISSING:
            given["default_factory"] = f.default_factory
        specs.append((f.name, f.type, field(**given)))
    # A docstring of its own, or dataclass would build one with inspect.signature
    # (about 1 ms a class, which B3 measured).
    namespace: dict[str, Any] = {"__doc__": cls.__doc__ or cls.__name__}
    if layout.post_init:
        namespace["__post_init__"] = _post_init
    twin = dataclasses.make_dataclass(
        cls.__name__,
        specs,
        namespace=namespace,
        repr=False,
        eq=False,
        match_args=False,
        frozen=layout.frozen,
        slots=layout.slots,
    )
    init: Callable[..., None] = vars(twin)["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _post_init(self: object) -> None:  # pragma: no cover - never called (see _constructor)
    raise AssertionError("a record's own __post_init__ is the one called")


class _Signature:
    """A record class's ``__signature__`` (what ``inspect`` and ``help()`` show): the
    arguments dataclass's constructor would take, made when first asked for."""

    def __get__(self, obj: object, owner: type) -> object:
        layout: _Layout = owner.__record__  # type: ignore[attr-defined]
        if layout.signature is None:
            import inspect  # only for whoever asks

            kind = inspect.Parameter
            parameters = [
                kind(
                    f.name,
                    kind.KEYWORD_ONLY if f.kw_only else kind.POSITIONAL_OR_KEYWORD,
                    default=layout.defaults.get(f.name, kind.empty),
                    annotation=f.type,
                )
                for f in dataclasses.fields(owner)
                if f.init
            ]
            layout.signature = inspect.Signature(parameters, return_annotation=None)
        return layout.signature


@recursive_repr()  # a record met inside its own repr shows "...", as dataclass's does
def _repr(self: object) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _layout(self).shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    compared = type(self).__record__.compared  # type: ignore[attr-defined]
    return compared is None or bool(compared(self) == compared(other))


def _hash(self: object) -> int:
    hashed = type(self).__record__.hashed  # type: ignore[attr-defined]
    return hash((hashed(self),) if hashed is not None else ())


def _replace(self: object, /, **changes: Any) -> object:
    """``copy.replace`` (Python 3.13) on a record, as on a dataclass."""
    return dataclasses.replace(self, **changes)  # type: ignore[type-var]


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: object) -> list[object]:
    return [getattr(self, name) for name in _layout(self).names]


def _setstate(self: object, state: list[object]) -> None:
    for name, value in zip(_layout(self).names, state, strict=True):
        object.__setattr__(self, name, value)


@overload
def record(
    cls: None = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
) -> Callable[[_T], _T]: ...


@overload
def record(
    cls: _T,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
) -> _T: ...


@dataclass_transform(field_specifiers=(field, Field))
def record(
    cls: _T | None = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
    repr: bool = True,
    eq: bool = True,
) -> _T | Callable[[_T], _T]:
    """The class, made a dataclass as ``dataclass(...)`` with these arguments would."""

    def make(cls: _T) -> _T:
        body = cls.__dict__
        if not body.get("__doc__"):
            # What dataclass writes for a class without one (the name and the fields),
            # without the inspect.signature it writes it with.
            fields = ", ".join(body.get("__annotations__", {}))
            cls.__doc__ = f"{cls.__name__}({fields})"
        made: Any = dataclasses.dataclass(
            cls, init=False, repr=False, eq=False, frozen=False, slots=slots, kw_only=kw_only
        )
        params = made.__dataclass_params__
        params.init, params.repr, params.eq, params.frozen = True, repr, eq, frozen
        methods: dict[str, object] = {
            "__record__": _Layout(made, frozen, slots),
            "__init__": _init,
            "__signature__": _Signature(),
            "__replace__": _replace,
        }
        if repr and "__repr__" not in body:
            methods["__repr__"] = _repr
        if eq and "__eq__" not in body:
            methods["__eq__"] = _eq
            # As dataclass: a frozen record hashes by its fields, a mutable one not at all.
            if body.get("__hash__") is None:
                methods["__hash__"] = _hash if frozen else None
        if frozen:
            methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
            if slots:  # what pickle and copy restore a frozen slotted record with
                methods.update(__getstate__=_getstate, __setstate__=_setstate)
        for name, method in methods.items():
            setattr(made, name, method)
        return made  # type: ignore[no-any-return]

    return make if cls is None else make(cls)
