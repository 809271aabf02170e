"""The install a user does: the sdist and the wheel, each in a fresh venv, no ``-e``.

An editable install puts ``src`` and ``src/adapters`` on ``sys.path`` and so hides
a wheel that lays the drivers out wrongly (they once landed in
``adapters/mcpcore_*``, and ``mcpcore`` failed with ``No module named
'mcpcore_cli'``). Here the package is built as ``python -m build`` builds it (the
sdist, then the wheel from the sdist), each artefact is installed into a venv of
its own, and from a directory outside the checkout every public package is
imported and ``mcpcore demo`` is run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_PACKAGES = (
    "mcpcore",
    "mcpcore_anyio",
    "mcpcore_threaded",
    "mcpcore_httpcore",
    "mcpcore_cli",
    "mcpcore_demo",
    "mcpcore_jwt",
    "mcpcore_signin",
    "mcpcore_tooling",
    "mcpcore_stores",  # imports without its extras (postgres, redis load lazily)
)
# Need their framework (an extra), so they are only checked to be in the wheel.
FRAMEWORK_ADAPTERS = (
    "mcpcore_langchain",
    "mcpcore_pydantic_ai",
    "mcpcore_openai_agents",
    "mcpcore_otel",  # the otel extra (opentelemetry-api)
)
BUILD_TIMEOUT = 240.0
INSTALL_TIMEOUT = 240.0
RUN_TIMEOUT = 60.0


def _run(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], out, BUILD_TIMEOUT)
    (wheel,) = out.glob("mcpcore-*.whl")
    (sdist,) = out.glob("mcpcore-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def test_wheel_lays_every_package_out_at_the_top_level(artefacts: dict[str, Path]) -> None:
    import zipfile

    with zipfile.ZipFile(artefacts["wheel"]) as wheel:
        tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    assert not any(top.startswith("adapters") or top == "src" for top in tops), tops
    assert set(PUBLIC_PACKAGES) | set(FRAMEWORK_ADAPTERS) <= tops


def test_readme_main_job_is_a_plain_install_then_the_demo() -> None:
    """The README's first command is the one ``checkout`` below follows, word for word."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    assert first == (
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/mcpcore demo"
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["wheel", "sdist", "checkout"])
def test_installed_without_editable_imports_and_runs_the_demo(
    kind: str, artefacts: dict[str, Path], tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    _run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(ROOT if kind == "checkout" else artefacts[kind])],
        tmp_path,
        INSTALL_TIMEOUT,
    )
    # From outside the checkout, so nothing but the installed copy can be found.
    where = tmp_path / "elsewhere"
    where.mkdir()
    probe = (
        "import importlib, sys\n"
        f"for name in {PUBLIC_PACKAGES!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert {str(ROOT)!r} not in (module.__file__ or ''), module.__file__\n"
        "import importlib.util\n"
        "frameworks = ('langchain_core', 'pydantic_ai', 'agents', 'openai', 'mcp', 'opentelemetry')\n"
        "assert not [f for f in frameworks if importlib.util.find_spec(f)], 'the base install grew'\n"
        "print('imported', len(sys.modules))\n"
    )
    _run([str(python), "-c", probe], where, RUN_TIMEOUT)
    demo = _run([str(env_dir / "bin" / "mcpcore"), "demo"], where, RUN_TIMEOUT)
    assert "demo server listening at" in demo.stdout
    assert "connected as server 'demo'" in demo.stdout
