"""``record`` (mcpcore.base._record) behaves as ``dataclass`` does, without its import cost.

Issue 40: ``dataclass`` compiles six methods a class, which was two thirds of
``import mcpcore_anyio``. Each test here makes the same class body both ways,
with every combination of the arguments the package uses, and checks that what
a user of the class can see is the same: construction and its errors, ``repr``,
equality, hashing, immutability, ``fields``/``replace``/``asdict``, copying
and pickling. The last test holds the import path to records.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
import pickle
import subprocess
import sys
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpcore.base import _record
from mcpcore.base._record import record

SHAPES = [
    dict(frozen=frozen, slots=slots, kw_only=kw_only, repr=repr_, eq=eq)
    for frozen, slots, kw_only, repr_, eq in itertools.product([False, True], repeat=5)
]


def make(decorator: Any, **params: Any) -> Any:
    """The same class body, made by ``decorator`` (``dataclass`` or ``record``)."""

    class Shape:
        a: int
        b: str = "x"
        c: tuple[int, ...] = field(default_factory=tuple)
        d: object = field(default=None, repr=False, compare=False)
        e: int = field(default=0, hash=False)
        f: int = field(default=7, init=False)

    return decorator(**params)(Shape)


def pair(params: dict[str, Any]) -> tuple[Any, Any]:
    return make(dataclass, **params), make(record, **params)


VALUES = st.fixed_dictionaries(
    {"a": st.integers(-3, 3)},
    optional={
        "b": st.sampled_from(["", "x", "y'\n"]),
        "c": st.lists(st.integers(0, 2), max_size=2).map(tuple),
        "d": st.none() | st.integers(),
        "e": st.integers(0, 2),
    },
)


def outcome(action: Any) -> tuple[str, Any]:
    """What ``action()`` returned, or the type of what it raised."""
    try:
        return "value", action()
    except Exception as exc:
        return "raised", type(exc)


@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(k for k, v in p.items() if v))
@given(x=VALUES, y=VALUES)
def test_a_record_is_seen_as_the_dataclass_of_the_same_body(
    params: dict[str, Any], x: dict[str, Any], y: dict[str, Any]
) -> None:
    theirs, ours = pair(params)
    made = [(cls(**x), cls(**y)) for cls in (theirs, ours)]
    (tx, ty), (ox, oy) = made
    assert dataclasses.is_dataclass(ours)
    assert repr(ox).replace("Shape", "S") == repr(tx).replace("Shape", "S") or not params["repr"]
    assert (ox == oy) == (tx == ty)
    assert (ox != oy) == (tx != ty)
    assert (ox == 1) == (tx == 1)
    assert (
        outcome(lambda: hash(ox) == hash(oy) if ox == oy else True)[0]
        == outcome(lambda: hash(tx) == hash(ty) if tx == ty else True)[0]
    )
    if params["eq"] and params["frozen"] and ox == oy and outcome(lambda: hash(tx))[0] == "value":
        assert hash(ox) == hash(oy)
    assert dataclasses.asdict(ox) == dataclasses.asdict(tx)
    assert [f.name for f in dataclasses.fields(ox)] == [f.name for f in dataclasses.fields(tx)]
    assert ours.__match_args__ == theirs.__match_args__
    assert dataclasses.asdict(dataclasses.replace(ox, a=9)) == dataclasses.asdict(
        dataclasses.replace(tx, a=9)
    )
    assert dataclasses.asdict(ox.__replace__(a=9)) == dataclasses.asdict(  # copy.replace
        dataclasses.replace(tx, a=9)
    )
    assert outcome(lambda: setattr(ox, "a", 5)) == outcome(lambda: setattr(tx, "a", 5))
    assert outcome(lambda: delattr(oy, "b")) == outcome(lambda: delattr(ty, "b"))
    for copied in (copy.copy(ox), copy.deepcopy(ox)):
        assert dataclasses.asdict(copied) == dataclasses.asdict(ox)
        assert type(copied) is ours


@pytest.mark.parametrize("compiled", [False, True], ids=["shared", "compiled"])
@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(k for k, v in p.items() if v))
def test_a_record_refuses_the_calls_a_dataclass_refuses(
    params: dict[str, Any], compiled: bool
) -> None:
    """With the shared constructor, and with the one a class gets after 256 objects."""
    theirs, ours = pair(params)
    for n in range(_record._COMPILED_AFTER if compiled else 1):
        assert ours(n).a == n if not params["kw_only"] else ours(a=n).a == n
    assert (ours.__init__ is _record._init) is not compiled
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((), {}),  # a required field left out
        ((), {"a": 1, "zzz": 2}),  # a field it does not have
        ((), {"a": 1, "f": 2}),  # a field not set by the constructor
        ((1,), {}),  # positional: refused when keyword-only
        ((1, "b"), {"a": 1}),  # one field twice
        ((1, "b", [], None, 0, 5), {}),  # too many
    ]
    for args, kwargs in calls:
        ours_did = outcome(lambda a=args, k=kwargs: ours(*a, **k))[0]
        theirs_did = outcome(lambda a=args, k=kwargs: theirs(*a, **k))[0]
        assert ours_did == theirs_did, (args, kwargs)
    # By now the record's own constructor is compiled: it takes what dataclass's takes.
    assert [
        (p.name, p.kind, repr(p.default)) for p in inspect.signature(ours).parameters.values()
    ] == [(p.name, p.kind, repr(p.default)) for p in inspect.signature(theirs).parameters.values()]


def test_a_frozen_record_refuses_changes_with_the_dataclass_error() -> None:
    cls = make(record, frozen=True, slots=True, kw_only=True)
    one = cls(a=1)
    with pytest.raises(FrozenInstanceError):
        one.a = 2
    with pytest.raises(FrozenInstanceError):
        del one.a
    assert one.f == 7 and one.c == ()


def test_a_factory_runs_for_each_record() -> None:
    @record(slots=True)
    class Bag:
        items: list[int] = field(default_factory=list)

    first, second = Bag(), Bag()
    first.items.append(1)
    assert second.items == [] and Bag([2]).items == [2]


def test_a_record_at_module_level_pickles() -> None:
    one = Point(x=1, y=2)
    assert pickle.loads(pickle.dumps(one)) == one
    assert repr(one) == "Point(x=1, y=2)"
    assert {one: "kept"}[Point(x=1, y=2)] == "kept"


@record(frozen=True, slots=True, kw_only=True)
class Point:
    x: int
    y: int


def test_a_record_inside_itself_shows_dots_not_a_recursion_error() -> None:
    cls = make(record, frozen=False, slots=True)
    one = cls(a=1)
    one.c = [one]
    assert repr(one).endswith(".Shape(a=1, b='x', c=[...], e=0, f=7)")


# What each check loads before it looks: the driver's import path, and then every
# module of the core (the features loaded on first use too).
LOADED = {
    "import_path": "import mcpcore_anyio\n",
    "every_module": (
        "import importlib, pkgutil, mcpcore\n"
        "for info in pkgutil.walk_packages(mcpcore.__path__, 'mcpcore.'):\n"
        "    importlib.import_module(info.name)\n"
    ),
}


@pytest.mark.parametrize("loaded", sorted(LOADED))
def test_every_value_class_of_the_core_is_a_record(loaded: str) -> None:
    """B5/B12: no dataclass of the core is compiled by ``dataclass`` at import: on the
    driver's import path, nor in a feature module (OAuth, tasks, resources, ...), paid
    for by a process's first use of it (a sign-in's first 401, a first listing). A
    listed ``Tool`` is built without its constructor, so it is a record too."""
    code = LOADED[loaded] + (
        "import sys, dataclasses\n"
        "print('modules', len(sys.modules))\n"
        "for name, module in list(sys.modules.items()):\n"
        "    if name.split('.')[0] != 'mcpcore' or module is None: continue\n"
        "    for value in vars(module).values():\n"
        "        if (isinstance(value, type) and value.__module__ == name\n"
        "                and dataclasses.is_dataclass(value) and '__record__' not in vars(value)):\n"
        "            print(value.__qualname__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.split()[:1] == ["modules"]  # it ran
    assert run.stdout.split()[2:] == []
