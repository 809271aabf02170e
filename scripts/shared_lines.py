"""How much of the anyio driver appears verbatim in the threaded one.

For each pair of driver files (``_client.py``, ``_network.py``) this counts the
code lines of the anyio file that also occur, after normalising, somewhere in
the threaded file. Normalising drops ``async `` and ``await `` and surrounding
whitespace; blank lines, comments and docstrings are not code lines. The
figure is a measure of duplicated code between the drivers, not a test.

    python scripts/shared_lines.py
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [
    ("src/adapters/mcpcore_anyio/_client.py", "src/adapters/mcpcore_threaded/_client.py"),
    ("src/adapters/mcpcore_anyio/_network.py", "src/adapters/mcpcore_threaded/_network.py"),
]
_ASYNC = re.compile(r"\b(?:async|await)\s+")


def _docstring_lines(source: str) -> set[int]:
    """Line numbers (1-based) covered by a module, class or function docstring."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                first = body[0]
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(path: Path) -> list[str]:
    """The file's code lines, normalised: no comments, docstrings or blanks."""
    source = path.read_text(encoding="utf-8")
    skip = _docstring_lines(source)
    # Strip comments with the tokenizer (a '#' inside a string is not one).
    comments: dict[int, int] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.start[1]
    out: list[str] = []
    for number, line in enumerate(source.splitlines(), start=1):
        if number in skip:
            continue
        if number in comments:
            line = line[: comments[number]]
        text = _ASYNC.sub("", line).strip()
        if text:
            out.append(text)
    return out


def shared(anyio_file: Path, threaded_file: Path) -> tuple[int, int]:
    """(code lines of ``anyio_file`` found verbatim in ``threaded_file``, its code lines)."""
    theirs = set(code_lines(threaded_file))
    mine = code_lines(anyio_file)
    return sum(1 for line in mine if line in theirs), len(mine)


def main() -> int:
    for anyio_name, threaded_name in PAIRS:
        same, total = shared(ROOT / anyio_name, ROOT / threaded_name)
        print(f"{anyio_name}: {same} of {total} code lines appear verbatim in {threaded_name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
