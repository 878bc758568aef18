"""The house's one-way arrows (README "Layout"): experiments → algorithms → models, one import root.

These tests read the source as text (ast), so they hold whatever happens to be
imported at run time: a module that imports Pyomo lazily inside a function
still breaks the rule for algorithms/.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"models": "cbalab.models", "algorithms": "cbalab.algorithms", "experiments": "cbalab.experiments"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every absolute module name that ``path`` imports (anywhere in the file), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return found


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _offences(folders: list[str], banned: tuple[str, ...]) -> list[str]:
    bad = []
    for folder in folders:
        for path in _sources(folder):
            for line, name in _imports(path):
                if any(name == b or name.startswith(b + ".") for b in banned):
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return bad


def test_no_bare_top_level_imports() -> None:
    """No module anywhere imports ``models``, ``algorithms`` or ``experiments`` by a bare name."""
    folders = ["cbalab", *PACKAGES, "tests"]
    assert _offences(folders, tuple(PACKAGES)) == []


def test_models_import_neither_algorithms_nor_experiments() -> None:
    """models/ is the ground floor: it knows nothing of the floors above it."""
    assert _offences(["models"], ("cbalab.algorithms", "cbalab.experiments", "cbalab.api")) == []


def test_algorithms_never_import_pyomo_or_experiments() -> None:
    """algorithms/ stays numpy-only and below experiments/."""
    assert _offences(["algorithms"], ("pyomo", "cbalab.experiments", "cbalab.models.solve", "cbalab.models.milp")) == []


def test_the_checks_catch_an_offence(tmp_path: Path) -> None:
    """The scanner itself: a planted bare import and a planted Pyomo import are both found."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    import pyomo.environ\n    from models.instance import load\n", encoding="utf-8")
    names = [n for _, n in _imports(planted)]
    assert "pyomo.environ" in names
    assert "models.instance" in names


def test_importing_algorithms_does_not_load_pyomo() -> None:
    """``import cbalab.algorithms.registry`` and every fast method leave Pyomo unloaded (a fresh interpreter)."""
    code = (
        "import sys, cbalab, cbalab.algorithms.registry as r\n"
        "for m in r.all_methods():\n"
        "    if not m.exact: m.function()\n"
        "print('pyomo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("shadow", ["models", "algorithms", "experiments"])
def test_a_users_own_package_does_not_shadow_cbalab(tmp_path: Path, shadow: str) -> None:
    """A working folder with its own ``models/`` (most ML projects have one) does not break ``import cbalab``."""
    pkg = tmp_path / shadow
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('the user package was imported')\n", encoding="utf-8")
    code = "import cbalab, cbalab.models.instance, cbalab.experiments.cli; print(cbalab.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == "cbalab"


#: The most lines one source file of experiments/ may hold: a longer one holds more than one concern.
MAX_LINES = 600
#: Files above it today, each awaiting its split (issue 20: one replay engine, item 1; the CLI above the facade,
#: item 3, which also takes the runner's parser and listing out of runner.py).  No other file may grow past it.
OVER_LONG = {"experiments/cli.py", "experiments/elastic.py", "experiments/simulate.py", "experiments/runner.py"}


def test_no_experiments_file_holds_more_than_one_concern() -> None:
    """No file of experiments/ (the paper package and the run modules included) is longer than MAX_LINES."""
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in _sources("experiments")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(path.relative_to(ROOT)) not in OVER_LONG
    ]
    assert long == []


def test_the_paper_reaches_the_experiments_through_the_runner_only() -> None:
    """experiments/paper/ imports no run module: it assembles the sections over runner.EXPERIMENTS, not a list."""
    assert _offences(["experiments/paper"], ("cbalab.experiments.runs",)) == []
