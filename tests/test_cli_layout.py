"""The house, for the command line: one module per command group over a few shared
modules, and no import circle among ``mcpcore_cli``'s modules.

Every module of ``src/adapters/mcpcore_cli`` is parsed (never imported), and each
import of a sibling counts: at the top, under ``TYPE_CHECKING`` and inside a
function. A circle fails, and so does a command module that imports ``_app`` (the
top: ``main`` and the dispatch table), or a file over 1,000 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "mcpcore_cli"
ROOT = Path(__file__).resolve().parents[1] / "src" / "adapters" / PACKAGE
MAX_LINES = 1_000
#: The top of the package, and what only starts it: nothing below imports them.
TOP = {"_app", "__main__"}


def sibling_imports(package: Path, name: str = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` (by file stem) and the modules of the same package
    it imports anywhere in its file. ``from . import x`` names module ``x`` when there
    is one, else the package's ``__init__``."""
    modules = {path.stem for path in package.glob("*.py")}

    def target(module: str | None, names: Iterable[str]) -> set[str]:
        if module:  # from ._x import y, from mcpcore_cli._x.y import z
            first = module.split(".")[0]
            return {first} if first in modules else set()
        return {n if n in modules else "__init__" for n in names}

    graph: dict[str, set[str]] = {}
    for path in sorted(package.glob("*.py")):
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [alias.name for alias in node.names]
                module = node.module or ""
                if node.level == 1:
                    edges |= target(module, names)
                elif node.level == 0 and module == name:
                    edges |= target(None, names)
                elif node.level == 0 and module.startswith(name + "."):
                    edges |= target(module.removeprefix(name + "."), names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == name:
                        edges.add("__init__")
                    elif alias.name.startswith(name + "."):
                        edges |= target(alias.name.removeprefix(name + "."), [])
        edges.discard(path.stem)
        graph[path.stem] = edges
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import circles: each group of modules that reach one another (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_command_line_modules_import_in_no_circle() -> None:
    """No circle among ``mcpcore_cli``'s modules, counting every import."""
    assert circles(sibling_imports(ROOT)) == []


def test_no_command_module_imports_the_top() -> None:
    """``_app`` imports the command modules; none of them imports it back."""
    graph = sibling_imports(ROOT)
    assert {m: sorted(e & TOP) for m, e in graph.items() if e & TOP and m != "__init__"} == {
        "__main__": ["_app"]
    }


def test_each_command_runs_from_a_module_of_its_group() -> None:
    """The dispatch table names functions of the command modules, none of ``_app``
    (each imported when its command runs: the CLI's startup, issue 40)."""
    from mcpcore_cli import _app

    homes = {command: _app._command(command).__module__ for command in _app._COMMANDS}
    assert homes == {
        "demo": "mcpcore_cli._demo",
        "tools": "mcpcore_cli._tools",
        "call": "mcpcore_cli._tools",
        "task": "mcpcore_cli._tasks",
        "resources": "mcpcore_cli._resources",
        "read": "mcpcore_cli._resources",
        "skills": "mcpcore_cli._skills",
        "skill": "mcpcore_cli._skills",
        "prompts": "mcpcore_cli._prompts",
        "prompt": "mcpcore_cli._prompts",
        "check": "mcpcore_cli._check",
        "pins": "mcpcore_cli._pins",
        "login": "mcpcore_cli._auth",
        "logout": "mcpcore_cli._auth",
        "auth": "mcpcore_cli._auth",
    }


def test_no_command_line_file_is_over_1000_lines() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in ROOT.glob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    """The check is not vacuous: a circle closed only by an import inside a function,
    or only under ``TYPE_CHECKING``, is found, and so is one through the package."""
    package = tmp_path / PACKAGE
    package.mkdir()
    files = {
        "__init__.py": "from ._top import main\nVERSION = '1'\n",
        "_top.py": "from . import VERSION\n\ndef main(): ...\n",
        "_high.py": "from ._low import helper\n",
        "_low.py": "def helper():\n    from . import _high\n",
        "_typed.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from mcpcore_cli._other import A\n",
        "_other.py": "import mcpcore_cli._typed\n\nclass A: ...\n",
        "_alone.py": "from ._low import helper\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = sibling_imports(package)
    assert graph["_top"] == {"__init__"}
    assert circles(graph) == [["__init__", "_top"], ["_high", "_low"], ["_other", "_typed"]]
