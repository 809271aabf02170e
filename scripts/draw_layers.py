"""Draw the core's layers from its imports, and refuse a circle or an upward import.

    python scripts/draw_layers.py           # write docs/layers.md
    python scripts/draw_layers.py --check   # exit 1 when the file is stale or a rule is broken

Every import of one core module by another counts: at the top of a module,
under ``TYPE_CHECKING`` and inside a function. Two rules hold:

- no circle: no module reaches itself through the imports;
- imports only run downward: a module imports modules of its own folder or
  of a folder below it in ``LAYERS``; ``mcpcore/__init__.py`` sits above all.

The output depends only on the sources, so it is deterministic;
tests/test_layers.py fails when the committed file no longer matches them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "mcpcore"
TARGET = ROOT / "docs" / "layers.md"

#: The core's folders, bottom first. A folder imports only itself and those before it.
LAYERS = ("base", "wire", "auth", "features", "session", "config", "engine")


def module_name(path: Path, core: Path) -> str:
    """``src/mcpcore/wire/_http.py`` -> ``mcpcore.wire._http``."""
    parts = path.relative_to(core.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(core: Path) -> dict[str, set[str]]:
    """Each core module, and the core modules it imports (anywhere in its body)."""
    paths = {module_name(p, core): p for p in sorted(core.rglob("*.py"))}
    top = core.name
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    if f"{target}.{alias.name}" in paths:  # from package import module
                        found.add(f"{target}.{alias.name}")
                    elif target in paths:
                        found.add(target)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in paths)
        found.discard(name)
        # A package's own __init__ is imported with any of its modules: not an edge.
        graph[name] = {m for m in found if m != top and not name.startswith(m + ".")}
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every group of modules that import each other round (Tarjan's strongly
    connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative: the recursion would be as deep as the longest import chain.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def folder_of(module: str) -> str | None:
    """The layer folder of ``mcpcore.<folder>._x`` (None for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else None


def problems(graph: Mapping[str, Iterable[str]], layers: tuple[str, ...] = LAYERS) -> list[str]:
    """What breaks the two rules (empty when the imports are sound)."""
    found = [f"import circle among: {', '.join(group)}" for group in circles(graph)]
    for module in sorted(graph):
        here = folder_of(module)
        if here is None:
            continue
        if here not in layers:
            found.append(f"{module}: folder {here!r} is not in LAYERS")
            continue
        for target in sorted(graph[module]):
            there = folder_of(target)
            if there in layers and layers.index(there) > layers.index(here):
                found.append(f"upward import: {module} ({here}) imports {target} ({there})")
    return found


def render(graph: Mapping[str, Iterable[str]]) -> str:
    by_folder: dict[str, list[str]] = {layer: [] for layer in LAYERS}
    for module in sorted(graph):
        folder = folder_of(module)
        if folder is not None and module != f"mcpcore.{folder}":
            by_folder.setdefault(folder, []).append(module.rsplit(".", 1)[1])
    edges: dict[tuple[str, str], int] = {}
    for module, targets in graph.items():
        here = folder_of(module)
        for target in targets:
            there = folder_of(target)
            if here and there and here != there:
                edges[(here, there)] = edges.get((here, there), 0) + 1
    lines = [
        "# The core's layers",
        "",
        "<!-- Generated by scripts/draw_layers.py from the imports of src/mcpcore; "
        "do not edit. -->",
        "",
        "The folders of `src/mcpcore`, top to bottom. An arrow is a folder importing",
        "another (its label: how many module imports make it), counting imports under",
        "`TYPE_CHECKING` and inside functions. Imports only run downward, and no",
        "module imports itself round a circle; `scripts/draw_layers.py --check` and",
        "`tests/test_layers.py` hold both. `mcpcore/__init__.py` sits above them all.",
        "",
        "```mermaid",
        "flowchart TB",
    ]
    for layer in reversed(LAYERS):
        lines.append(f'    {layer}["{layer}/<br/>{len(by_folder[layer])} modules"]')
    for (here, there), count in sorted(
        edges.items(), key=lambda e: (-LAYERS.index(e[0][0]), -LAYERS.index(e[0][1]))
    ):
        lines.append(f"    {here} -->|{count}| {there}")
    lines += ["```", "", "| Folder | Modules | Imports from |", "|---|---|---|"]
    for layer in reversed(LAYERS):
        below = sorted({there for (here, there) in edges if here == layer}, key=LAYERS.index)
        modules = ", ".join(f"`{m}`" for m in by_folder[layer])
        lines.append(f"| `{layer}/` | {modules} | {', '.join(below) or '—'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if stale or a rule is broken")
    parser.add_argument("--output", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    graph = imports(CORE)
    broken = problems(graph)
    if broken:
        print("the core's imports break its layers:\n" + "\n".join(broken), file=sys.stderr)
        return 1
    text = render(graph)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run scripts/draw_layers.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
