"""What ``help()`` shows a library user is written in their words.

The docstrings of the public names (``mcpcore``, both drivers, the command
line) and of their public methods never send the reader to the project's
internal notes ("seed 002"); ``McpClient.call`` says what it returns and what
it raises, rather than a bare range of behaviour ids.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator

import pytest

PACKAGES = ("mcpcore", "mcpcore_threaded", "mcpcore_anyio", "mcpcore_cli")
SEED = re.compile(r"\bseeds? \d{3}\b")
ID_RANGE = re.compile(r"\([A-Z]\d+\s*[–-]\s*[A-Z]?\d+\)")  # a parenthesised range of ids


def _docstrings() -> Iterator[tuple[str, str]]:
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            yield f"{package}.{name}", inspect.getdoc(value) or ""
            if not inspect.isclass(value):
                continue
            for attribute, member in vars(value).items():
                if attribute.startswith("_") and attribute != "__init__":
                    continue
                doc = member.__doc__ if isinstance(member, property) else inspect.getdoc(member)
                yield f"{package}.{name}.{attribute}", doc or ""


def test_no_public_docstring_sends_the_reader_to_internal_notes() -> None:
    found = [f"{where}: {doc[:80]!r}" for where, doc in _docstrings() if SEED.search(doc)]
    assert found == []


@pytest.mark.parametrize("driver", ["mcpcore_threaded", "mcpcore_anyio"])
def test_call_says_what_it_returns_and_raises(driver: str) -> None:
    doc = inspect.getdoc(importlib.import_module(driver).McpClient.call) or ""
    assert not ID_RANGE.search(doc)
    for word in ("ToolOutput", "UnknownTool", "InvalidArguments", "BackendError", "CallTimeout"):
        assert word in doc, word
    assert "on_progress" in doc and "timeout" in doc
