"""The core in layers: no import circle, imports only run downward, the drawing is current.

docs/layers.md is drawn from the imports of src/mcpcore by scripts/draw_layers.py;
every import counts, at a module's top, under ``TYPE_CHECKING`` and inside a
function.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "draw_layers.py"
DOC = ROOT / "docs" / "layers.md"
sys.path.insert(0, str(ROOT / "scripts"))

import draw_layers  # noqa: E402


def test_the_core_has_no_import_circle_and_imports_only_downward() -> None:
    """No module of the core reaches itself through imports, and no folder imports
    one above it (LAYERS, bottom first)."""
    graph = draw_layers.imports(draw_layers.CORE)
    assert len(graph) > 50  # every module was read
    assert draw_layers.problems(graph) == []


def test_the_core_is_in_at_least_four_layer_folders() -> None:
    folders = {p.name for p in draw_layers.CORE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(draw_layers.LAYERS) and len(folders) >= 4
    assert [p.name for p in draw_layers.CORE.glob("*.py")] == ["__init__.py"]  # none left flat
    for folder in folders:  # each folder says what it owns
        doc = (draw_layers.CORE / folder / "__init__.py").read_text(encoding="utf-8")
        assert doc.startswith('"""') and "owns" in doc


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    core = tmp_path / "mcpcore"
    for name, text in {"__init__.py": "", **files}.items():
        path = core / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return core


def test_a_circle_through_a_type_checking_or_function_import_is_caught(tmp_path: Path) -> None:
    """The check is not vacuous: a circle closed by an import under TYPE_CHECKING,
    or by one inside a function, is found."""
    core = _package(
        tmp_path,
        {
            "base/__init__.py": "",
            "base/_a.py": "from ._b import x\n",
            "base/_b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._c import y\n",
            "base/_c.py": "def f():\n    from ._a import z\n",
        },
    )
    found = draw_layers.problems(draw_layers.imports(core))
    assert found == ["import circle among: mcpcore.base._a, mcpcore.base._b, mcpcore.base._c"]


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    core = _package(
        tmp_path,
        {
            "base/__init__.py": "",
            "wire/__init__.py": "",
            "base/_errors.py": "def f():\n    from ..wire._http import g\n",
            "wire/_http.py": "g = 1\n",
        },
    )
    found = draw_layers.problems(draw_layers.imports(core))
    assert found == ["upward import: mcpcore.base._errors (base) imports mcpcore.wire._http (wire)"]


def test_committed_layers_drawing_is_current() -> None:
    """The committed docs/layers.md matches the imports (run the script to refresh it)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_check_fails_on_a_stale_file_and_writing_fixes_it(tmp_path: Path) -> None:
    target = tmp_path / "layers.md"
    target.write_text("stale\n", encoding="utf-8")
    run = [sys.executable, str(SCRIPT), "--output", str(target)]
    stale = subprocess.run([*run, "--check"], capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1 and "stale" in stale.stderr
    subprocess.run(run, check=True, timeout=60)
    assert target.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8")
    assert subprocess.run([*run, "--check"], timeout=60).returncode == 0


def test_no_source_file_is_over_1000_lines_nor_a_driver_client_over_800() -> None:
    """Small parts: no file under src/ is over 1,000 lines, and each driver's
    ``_client.py`` (what is left of a client once its public surface is written
    once) is 800 lines or fewer."""
    src = ROOT / "src"
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in src.rglob("*.py")}
    assert len(sizes) > 100
    assert {str(p.relative_to(src)): n for p, n in sizes.items() if n > 1000} == {}
    for driver in ("mcpcore_anyio", "mcpcore_threaded"):
        assert sizes[src / "adapters" / driver / "_client.py"] <= 800


def test_the_blocking_driver_copies_at_most_15_percent_of_the_async_one() -> None:
    """Code written twice is a run of lines written twice: at most 15% of the async
    driver's code lines stand again, in a run of 3 or more, in the blocking driver's
    hand-written files (its generated ones are written by scripts/unasync.py)."""
    import shared_lines

    _, total, threaded = shared_lines.measure_tree(ROOT)
    assert {path.name for path in threaded.files} >= {"_client.py", "_network.py"}
    assert total.total > 1500  # the whole driver was read
    assert 100 * total.copied / total.total <= shared_lines.LIMIT


def test_a_copied_run_is_counted_and_bare_syntax_is_not(tmp_path: Path) -> None:
    import shared_lines

    for driver in ("mcpcore_anyio", "mcpcore_threaded"):
        (tmp_path / "src" / "adapters" / driver).mkdir(parents=True)
    copied = "    x = compute(a)\n    y = x + 1\n    return y\n"
    (tmp_path / "src/adapters/mcpcore_anyio/_client.py").write_text(
        f"def f(a):\n    try:\n        pass\n    finally:\n        pass\n{copied}"
    )
    (tmp_path / "src/adapters/mcpcore_threaded/_client.py").write_text(
        f"def g(a):\n    try:\n        z = 1\n    finally:\n        z = 2\n{copied}"
    )
    _, total, _ = shared_lines.measure_tree(tmp_path)
    assert (total.copied, total.total) == (3, 8)
    assert total.any_line == 5  # try: and finally: (and the copied three) stand in g too
    assert (total.logic_shared, total.logic_total) == (3, 4)  # f's def is its own


def test_no_class_in_src_is_over_600_lines() -> None:
    """A class is read whole by whoever changes it: none in ``src/`` runs past 600 lines."""
    import ast

    long = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > 600:
                    long.append(f"{path.relative_to(ROOT)}: {node.name} ({lines} lines)")
    assert not long, long
