"""The drivers and the example use public names only: of ``mcpcore`` and of httpcore.

A driver built on ``mcpcore``'s private modules breaks when the core is
reorganised, and one that reaches into httpcore's internals breaks on a minor
httpcore release. This reads (never imports) every module under
``src/adapters/`` and ``examples/`` and fails on:

- importing a private core module: ``import mcpcore._x``,
  ``from mcpcore._x import ...``, ``from mcpcore import _x``, or ``mcpcore._x``;
- touching a private httpcore name: ``import httpcore._x``,
  ``from httpcore._x import ...``, ``from httpcore import _x``, ``httpcore._x``;
- a private attribute (``._name``, not a dunder) of an object that came from
  httpcore: a name or ``self`` attribute annotated with an httpcore type, the
  result of calling httpcore or such an object (``with pool.stream(...) as
  response``: ``response.stream._stream``);
- ``getattr``/``hasattr``/``setattr``/``delattr`` with a private name as a string
  literal, on anything but ``self``/``cls`` (the way around the rule above).

A package's own private modules (``from ._client import ...``) are its own.
Names given to ``importlib`` as strings are out of scope.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ROOT / "src" / "adapters"
EXAMPLES = ROOT / "examples"
EXPECTED_PACKAGES = {
    "mcpcore_anyio",
    "mcpcore_threaded",
    "mcpcore_httpcore",
    "mcpcore_cli",
    "mcpcore_demo",
    "mcpcore_jwt",
}
WATCHED = ("mcpcore", "httpcore")  # top-level modules whose private names are off limits
REFLECTION = {"getattr", "hasattr", "setattr", "delattr"}
_HTTPCORE_IN_TEXT = re.compile(r"\bhttpcore\.")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(dotted: str) -> str | None:
    """``mcpcore._x.y`` → ``mcpcore``; None when the path is public or not watched."""
    first, *rest = dotted.split(".")
    if first in WATCHED and any(is_private(part) for part in rest):
        return first
    if first == "mcpcore" and rest:
        return first  # the core's folders hold private modules only: its surface is ``mcpcore``
    return None


class _Checker:
    """Finds the violations in one module's syntax tree."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.modules: dict[str, str] = {}  # local name -> watched module it is bound to
        self.httpcore_names: set[str] = set()  # names imported from httpcore (its classes)
        self.tracked: set[str] = set()  # local names holding something from httpcore
        self.tracked_self: set[str] = set()  # ``self.<attr>`` holding something from httpcore
        self.found: list[tuple[int, str]] = []

    # --- what came from httpcore ----------------------------------------------------------

    def _mentions_httpcore(self, annotation: ast.expr | None) -> bool:
        if annotation is None:
            return False
        for node in ast.walk(annotation):
            if isinstance(node, ast.Name) and (
                self.modules.get(node.id) == "httpcore" or node.id in self.httpcore_names
            ):
                return True
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _HTTPCORE_IN_TEXT.search(node.value)
            ):
                return True
        return False

    def _from_httpcore(self, node: ast.expr) -> bool:
        """Whether ``node`` evaluates to httpcore, or to something reached from it."""
        while True:
            if isinstance(node, ast.Name):
                return (
                    self.modules.get(node.id) == "httpcore"
                    or node.id in self.httpcore_names
                    or node.id in self.tracked
                )
            if isinstance(node, ast.Attribute):
                if isinstance(node.value, ast.Name) and node.value.id == "self":
                    return node.attr in self.tracked_self
                node = node.value
            elif isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, (ast.Subscript, ast.Await, ast.Starred)):
                node = node.value
            else:
                return False

    def _track(self, target: ast.expr) -> bool:
        """Remember ``target`` as holding something from httpcore; True when new."""
        if isinstance(target, ast.Name) and target.id not in self.tracked:
            self.tracked.add(target.id)
            return True
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and target.attr not in self.tracked_self
        ):
            self.tracked_self.add(target.attr)
            return True
        return False

    def _collect(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in WATCHED:
                        # ``import a.b`` binds ``a``; ``import a.b as c`` binds the submodule.
                        if alias.asname is None:
                            self.modules[top] = top
                        elif "." not in alias.name:
                            self.modules[alias.asname] = top
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").split(".")[0] == "httpcore"
            ):
                self.httpcore_names.update(a.asname or a.name for a in node.names)
        changed = True
        while changed:  # until nothing new is found to come from httpcore
            changed = False
            for node in ast.walk(self.tree):
                if isinstance(node, ast.arg) and self._mentions_httpcore(node.annotation):
                    if node.arg not in self.tracked:
                        self.tracked.add(node.arg)
                        changed = True
                elif isinstance(node, ast.AnnAssign):
                    if self._mentions_httpcore(node.annotation) or (
                        node.value is not None and self._from_httpcore(node.value)
                    ):
                        changed |= self._track(node.target)
                elif isinstance(node, (ast.Assign, ast.NamedExpr)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if self._from_httpcore(node.value):
                        for target in targets:
                            changed |= self._track(target)
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    for item in node.items:
                        if item.optional_vars is not None and self._from_httpcore(
                            item.context_expr
                        ):
                            changed |= self._track(item.optional_vars)
                elif isinstance(node, (ast.For, ast.AsyncFor)) and self._from_httpcore(node.iter):
                    changed |= self._track(node.target)

    # --- the rules --------------------------------------------------------------------------

    def _flag(self, node: ast.stmt | ast.expr, what: str) -> None:
        self.found.append((node.lineno, what))

    def check(self) -> list[tuple[int, str]]:
        self._collect()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if module := _private_module(alias.name):
                        self._flag(node, f"imports a private {module} module: import {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if module := _private_module(node.module):
                    self._flag(
                        node,
                        f"imports from a private {module} module: from {node.module} import ...",
                    )
                elif node.module in WATCHED:
                    for alias in node.names:
                        if is_private(alias.name):
                            self._flag(
                                node,
                                f"imports a private name: from {node.module} import {alias.name}",
                            )
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                value = node.value
                if isinstance(value, ast.Name) and value.id in self.modules:
                    self._flag(node, f"uses a private name: {self.modules[value.id]}.{node.attr}")
                elif self._from_httpcore(value):
                    self._flag(
                        node,
                        f"reads a private attribute of an httpcore object: {ast.unparse(node)}",
                    )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in REFLECTION
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and is_private(node.args[1].value)
                and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))
            ):
                self._flag(node, f"reaches a private attribute by name: {ast.unparse(node)}")
        return sorted(set(self.found))


def violations(source: str) -> list[str]:
    """``"<line>: <what>"`` for each violation in ``source``."""
    return [f"{line}: {what}" for line, what in _Checker(ast.parse(source)).check()]


def _packages() -> list[Path]:
    found = sorted(p for p in ADAPTERS.iterdir() if (p / "__init__.py").is_file())
    return [*found, EXAMPLES]


PACKAGES = _packages()


def test_every_adapter_package_is_checked() -> None:
    names = {p.name for p in PACKAGES}
    assert names >= EXPECTED_PACKAGES, EXPECTED_PACKAGES - names
    assert (EXAMPLES / "stdlib_driver.py").is_file()


@pytest.mark.parametrize("package", PACKAGES, ids=[p.name for p in PACKAGES])
def test_no_private_core_or_httpcore_names(package: Path) -> None:
    """Each package (and the example) reaches mcpcore and httpcore through public names only."""
    problems: list[str] = []
    files = sorted(package.rglob("*.py"))
    assert files, f"no modules under {package}"
    for path in files:
        where = path.relative_to(ROOT).as_posix()
        problems += [f"{where}:{v}" for v in violations(path.read_text(encoding="utf-8"))]
    assert not problems, "private names used:\n" + "\n".join(problems)


# --- the checker itself --------------------------------------------------------------------

FLAGGED = {
    "import-private-core": "import mcpcore.engine._engine",
    "import-private-core-as": "import mcpcore.engine._engine as engine",
    "from-private-core": "from mcpcore.base._events import HttpRequest",
    "from-core-private-name": "from mcpcore import _events",
    "from-core-folder": "from mcpcore.engine import ClientBase",
    "core-attribute": "import mcpcore\nmcpcore._setup.prepare_client",
    "import-private-httpcore": "import httpcore._backends.sync",
    "from-private-httpcore": "from httpcore._backends.sync import SyncStream",
    "from-httpcore-private-name": "from httpcore import _models",
    "httpcore-attribute": "import httpcore\nhttpcore._async.ConnectionPool",
    "httpcore-alias-attribute": "import httpcore as hc\nhc._exceptions",
    "getattr-private": "x = getattr(response, '_stream', None)",
    "getattr-nested": "getattr(getattr(body, '_stream', None), '_connection', None)",
    "hasattr-private": "hasattr(parser, '_h11_state')",
    "annotated-parameter": "import httpcore\ndef f(r: httpcore.Response) -> object:\n    return r.stream._stream",
    "quoted-annotation": "def f(r: 'httpcore.Response') -> object:\n    return r._content",
    "imported-class": "from httpcore import Response\ndef f(r: Response) -> object:\n    return r._stream",
    "self-attribute": (
        "import httpcore\nclass C:\n    def __init__(self) -> None:\n"
        "        self._pool: httpcore.ConnectionPool | None = None\n"
        "    def f(self) -> object:\n        return self._pool._connections"
    ),
    "with-stream": (
        "import httpcore\ndef f(pool: httpcore.ConnectionPool) -> None:\n"
        "    with pool.stream('GET', 'http://x/') as response:\n        response.stream._stream"
    ),
    "constructed": "import httpcore\npool = httpcore.ConnectionPool()\npool._pool_lock",
}

ALLOWED = {
    "public-core": "from mcpcore import HttpClientEngine, TransportFailure",
    "own-private-module": "from ._client import McpClient\nfrom . import _network",
    "public-httpcore": "import httpcore\npool = httpcore.ConnectionPool()\npool.close()",
    "own-private-attribute": "class C:\n    def f(self) -> None:\n        self._lock = 1\n        self._lock",
    "getattr-on-self": "getattr(self, '_cache', None)",
    "getattr-public-or-dunder": "getattr(os, 'O_NOFOLLOW', 0)\ngetattr(x, '__name__')",
    "dunder": "import httpcore\nhttpcore.__version__",
    "other-package": "from mcpcore_httpcore import COALESCE_LIMIT",
    "importlib-string": "import importlib\nimportlib.import_module('mcpcore.engine._engine')",
    "unrelated-private": "def f(x: int) -> object:\n    return x._thing",
}


@pytest.mark.parametrize("source", FLAGGED.values(), ids=FLAGGED.keys())
def test_the_check_flags(source: str) -> None:
    assert violations(source)


@pytest.mark.parametrize("source", ALLOWED.values(), ids=ALLOWED.keys())
def test_the_check_allows(source: str) -> None:
    assert violations(source) == []
