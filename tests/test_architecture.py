"""The house's one-way arrows (README "Layout"): experiments → algorithms → models, one import root.

These tests read the source as text (ast), so they hold whatever happens to be
imported at run time: a module that imports Pyomo lazily inside a function
still breaks the rule for algorithms/.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
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


def test_regression_pytest_puts_no_bare_package_on_the_path(tmp_path: Path) -> None:
    """pytest's ``pythonpath`` holds tests/ only (its helpers ``strategies`` and ``toy_experiment``),
    so that a test cannot import ``models`` by a bare name; from that path, in a fresh interpreter outside the
    repository, none of the three packages is found (the installed ``cbalab.*`` is)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        paths = tomllib.load(f)["tool"]["pytest"]["ini_options"].get("pythonpath", [])
    assert paths == ["tests"]
    code = (
        "import importlib.util as u, sys\n"
        f"sys.path[:0] = {[str(ROOT / p) for p in paths]!r}\n"
        f"print([u.find_spec(n) is None for n in {sorted(PACKAGES)!r}], u.find_spec('cbalab.models') is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[True,", "True,", "True]", "True"]


def test_models_import_neither_algorithms_nor_experiments() -> None:
    """models/ is the ground floor: it knows nothing of the floors above it."""
    assert _offences(["models"], ("cbalab.algorithms", "cbalab.experiments", "cbalab.api")) == []


def test_algorithms_never_import_pyomo_or_experiments() -> None:
    """algorithms/ stays numpy-only and below experiments/."""
    assert _offences(["algorithms"], ("pyomo", "cbalab.experiments", "cbalab.models.solve", "cbalab.models.milp")) == []


#: The one module that parses arguments (DESIGN.md: "cbalab/cli.py ... the only place that parses arguments").
ARGUMENT_PARSER = "cbalab/cli.py"

#: The facade and the command line above the three floors: what none of them may import.
ABOVE = ("cbalab.cli", "cbalab.api", "cbalab.examples", "cbalab.__version__")


def _facade_imports(path: Path) -> list[str]:
    """The imports of ``path`` that reach above the three floors: the facade, the CLI, or ``cbalab`` itself
    (``import cbalab``, ``from cbalab import __version__``; ``from cbalab import models`` is a floor)."""
    bad = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"cbalab.{a.name}" for a in node.names] if node.module == "cbalab" else [node.module]
        else:
            continue
        bad += [
            f"{path.name}:{node.lineno} imports {name}"
            for name in names
            if name == "cbalab" or any(name == b or name.startswith(b + ".") for b in ABOVE)
        ]
    return bad


def test_regression_no_floor_imports_the_facade_or_the_cli() -> None:
    """models/, algorithms/ and experiments/ import neither cbalab/cli.py nor the facade (cbalab/__init__.py,
    cbalab/api.py): the version they record is ``cbalab.models.__version__``, so no lazy import hides a cycle."""
    assert [bad for folder in PACKAGES for path in _sources(folder) for bad in _facade_imports(path)] == []


def _argument_parsers(folders: list[str]) -> list[str]:
    """Every import of argparse in ``folders`` except the command line's own."""
    return [o for o in _offences(folders, ("argparse",)) if not o.startswith(ARGUMENT_PARSER + ":")]


def test_regression_no_argparse_outside_the_cli() -> None:
    """No installed module but cbalab/cli.py parses arguments: the runner, the benchmarks and the run modules
    take typed parameters, and ``cbalab experiment`` / ``cbalab bench`` map the one parser onto them
    (scripts/, not installed, may have its own)."""
    assert _argument_parsers(["cbalab", *PACKAGES, "data"]) == []
    assert _offences(["cbalab"], ("argparse",)), "the command line's own import is found"


def test_the_checks_catch_an_offence(tmp_path: Path) -> None:
    """The scanner itself: a planted bare import, a planted Pyomo import, a planted argparse and planted imports
    of the facade and of the version from below are all found."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    import pyomo.environ\n    from models.instance import load\n", encoding="utf-8")
    names = [n for _, n in _imports(planted)]
    assert "pyomo.environ" in names
    assert "models.instance" in names
    parser = tmp_path / "parser.py"
    parser.write_text("def f():\n    from argparse import ArgumentParser\n", encoding="utf-8")
    assert "argparse" in [n for _, n in _imports(parser)]
    for text in ("from cbalab import __version__\n", "import cbalab\n", "from cbalab.cli import main\n"):
        parser.write_text(text, encoding="utf-8")
        assert _facade_imports(parser), text
    parser.write_text("from cbalab import models\nfrom cbalab.models import __version__\n", encoding="utf-8")
    assert _facade_imports(parser) == []


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
    code = "import cbalab, cbalab.models.instance, cbalab.cli; print(cbalab.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == "cbalab"


#: The most lines one source file of experiments/ may hold: a longer one holds more than one concern.
MAX_LINES = 600


def test_no_experiments_file_holds_more_than_one_concern() -> None:
    """No file of experiments/ (the paper package and the run modules included) is longer than MAX_LINES."""
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in _sources("experiments")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert long == []


def test_the_paper_reaches_the_experiments_through_the_runner_only() -> None:
    """experiments/paper/ imports no run module: it assembles the sections over runner.EXPERIMENTS, not a list."""
    assert _offences(["experiments/paper"], ("cbalab.experiments.runs",)) == []


#: The replay engine and the two problems' strategies (one system for both problems).
REPLAY_MODULES = (
    "experiments/replay.py",
    "experiments/simulate.py",
    "experiments/elastic.py",
    "experiments/elastic_config.py",
    "experiments/elastic_report.py",
)


def _is_replay_loop(node: ast.While) -> bool:
    """A ``while`` loop that steps a replay: it calls ``next_event`` or runs while ``….done < ….n``."""
    calls = {n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    test = node.test
    counts = (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "done"
        and any(isinstance(c, ast.Attribute) and c.attr == "n" for c in test.comparators)
    )
    return "next_event" in calls or counts


def test_regression_no_replay_loop_outside_the_engine() -> None:
    """One event loop (experiments/replay.py): the cost and welfare replays are strategies plugged into it."""
    loops = []
    for folder in ("cbalab", *PACKAGES):
        for path in _sources(folder):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            loops += [
                f"{path.relative_to(ROOT)}:{n.lineno}"
                for n in ast.walk(tree)
                if isinstance(n, ast.While) and _is_replay_loop(n)
            ]
    assert [p for p in loops if not p.startswith("experiments/replay.py:")] == []
    assert loops, "the engine's own loop is found"


def _dispatches(tree: ast.AST, names: set[str]) -> list[str]:
    """Lines that dispatch on a method's name: a comparison with it, or name surgery (``removesuffix("-tuned")``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(isinstance(o, ast.Constant) and o.value in names for o in (node.left, *node.comparators)):
                found.append(f"{node.lineno}: compares with a method's name")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("removesuffix", "removeprefix", "endswith", "startswith")
            and any(isinstance(a, ast.Constant) and str(a.value).startswith("-") for a in node.args)
        ):
            found.append(f"{node.lineno}: takes a method's name apart ({node.func.attr})")
    return found


def test_regression_no_policy_table_outside_the_registry() -> None:
    """The replays find their policies in the registry (algorithms/registry.py): no module-level table of method
    names, no comparison with a method's name and no name surgery such as ``removesuffix("-tuned")``."""
    import importlib

    from cbalab.algorithms import registry

    names = {m.name for m in registry.all_methods()}
    bad = []
    for rel in REPLAY_MODULES:
        module = importlib.import_module("cbalab." + rel.removesuffix(".py").replace("/", "."))
        for key, value in vars(module).items():
            items = list(value) if isinstance(value, (tuple, list, set, frozenset, dict)) else []
            if len(items) >= 2 and all(isinstance(v, str) and v in names for v in items):
                bad.append(f"{rel}: {key} is a table of methods")
        bad += [f"{rel}:{line}" for line in _dispatches(ast.parse((ROOT / rel).read_text(encoding="utf-8")), names)]
    assert bad == []


def test_the_replay_checks_catch_an_offence() -> None:
    """The scanners themselves: planted loops and planted dispatches are all found."""
    planted = ast.parse(
        "while self.done < self.n:\n    pass\nwhile True:\n    t = self.next_event()\n"
        "if p == 'autocba':\n    pass\nq = p.removesuffix('-tuned')\n"
    )
    assert [_is_replay_loop(n) for n in ast.walk(planted) if isinstance(n, ast.While)] == [True, True]
    assert len(_dispatches(planted, {"autocba"})) == 2
