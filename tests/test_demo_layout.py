"""The demo server's modules import downward only, and none is over 1,000 lines.

Every module of ``src/adapters/mcpcore_demo`` is parsed (never imported). An
import of another of its modules is an edge, wherever it stands: at the top,
under ``if TYPE_CHECKING:``, or inside a function. ``from . import name`` and
``from mcpcore_demo import name`` point at the submodule ``name`` when there
is one, else at the package's ``__init__``. A circle among these edges fails
the test, as does a file over 1,000 lines or a module without a docstring
saying what it owns.
"""

from __future__ import annotations

import ast
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "src" / "adapters" / "mcpcore_demo"
PACKAGE = "mcpcore_demo"
MAX_LINES = 1000


def _targets(node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The package's modules that one import statement loads."""
    found: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            first, _, rest = alias.name.partition(".")
            if first == PACKAGE:
                found.add(rest.split(".")[0] if rest else "__init__")
        return found
    if node.level > 1:
        return found  # above the package: not one of its modules
    if node.level == 1:
        base = node.module or ""
    elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
        base = node.module.removeprefix(PACKAGE).lstrip(".") if node.module else ""
    else:
        return found
    if base:
        found.add(base.split(".")[0])
        return found
    for alias in node.names:  # from . import x: a submodule, or a name of __init__
        found.add(alias.name if alias.name in modules else "__init__")
    return found


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Module name -> the modules of the same package it imports (anywhere in it)."""
    paths = {path.stem: path for path in sorted(folder.glob("*.py"))}
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(node, modules) & modules
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module, or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_demo_modules_form_no_import_circle() -> None:
    """Imports run downward: no circle, counting TYPE_CHECKING and function-level imports."""
    graph = import_graph(DEMO)
    assert len(graph) > 5, sorted(graph)  # the package was found and read
    assert circles(graph) == []


def test_no_demo_file_is_over_1000_lines_and_each_says_what_it_owns() -> None:
    too_long = []
    undocumented = []
    for path in sorted(DEMO.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_LINES:
            too_long.append(f"{path.name}: {len(text.splitlines())} lines")
        if not ast.get_docstring(ast.parse(text)):
            undocumented.append(path.name)
    assert too_long == []
    assert undocumented == []


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    """Each way of importing a sibling counts: at the top, typing-only, in a function."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text('"""P."""\nfrom ._low import Low\n')
    (package / "_low.py").write_text(
        '"""Low."""\nfrom typing import TYPE_CHECKING\n'
        "if TYPE_CHECKING:\n    from ._top import Top\n"
    )
    (package / "_mid.py").write_text('"""Mid."""\ndef f():\n    from . import _low\n')
    (package / "_top.py").write_text(
        '"""Top."""\nimport mcpcore_demo._mid\nfrom mcpcore_demo import Low\n'
    )
    graph = import_graph(package)
    assert graph == {
        "__init__": {"_low"},
        "_low": {"_top"},
        "_mid": {"_low"},
        "_top": {"_mid", "__init__"},
    }
    assert circles(graph) == [["__init__", "_low", "_mid", "_top"]]
    (package / "_low.py").write_text('"""Low."""\n')
    assert circles(import_graph(package)) == []
