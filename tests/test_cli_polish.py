"""The command line explains itself: help and defaults on every option, --version, problem inference,
``compare``'s bound in the headline's units, ``generate`` saying what it wrote, and the README's commands.

experiments/cli.py; the exit statuses are those of tests/test_cli.py (0 result, 2 bad input, 1 internal).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cbalab
from cbalab.cli import main, parser
from cbalab.experiments.workload import generate_cost, generate_welfare

ROOT = Path(__file__).resolve().parents[1]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_has_help_and_shows_its_default() -> None:
    subs = _subparsers()
    assert set(subs) == {"solve", "generate", "compare", "methods", "simulate", "experiment", "paper"}
    for name, sub in subs.items():
        text = sub.format_help()
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if not action.option_strings or isinstance(action, argparse._StoreTrueAction):
                continue
            shown = sub._get_formatter()._get_help_string(action)
            assert "default" in shown or "(required)" in shown or "(or --" in shown, (name, action.dest, shown)
        assert "(default: 0)" in text or name in ("solve", "methods", "paper")


def test_defaults_shown_are_the_real_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    text = _subparsers()["compare"].format_help()
    assert "(default: 200)" in text and "(default: 40)" in text and "cost for a generated one" in text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cbalab {cbalab.__version__}"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A cost and a welfare instance on disk."""
    out = {"cost": tmp_path / "cost.json", "welfare": tmp_path / "welfare.json"}
    generate_cost(30, 6, seed=1).save(out["cost"])
    generate_welfare(12, 4, seed=1).save(out["welfare"])
    return out


@pytest.mark.parametrize(("method", "problem"), [("cba", "cost"), ("silod", "cost"), ("autocba", "welfare")])
def test_solve_infers_the_problem_of_a_one_problem_method(
    method: str, problem: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["solve", str(files[problem]), "--method", method]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["problem"] == problem and doc["method"] == method


def _both(files: dict[str, Path], tmp_path: Path) -> Path:
    """An instance whose jobs carry both problems' fields: the welfare file with fixed gpus/io_gbps added."""
    doc = json.loads(files["welfare"].read_text())
    for job in doc["jobs"]:
        job.update(gpus=job["options"][0]["gpus"], io_gbps=job["options"][0]["io_gbps"])
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc))
    return path


def test_solve_asks_for_the_problem_only_when_method_and_instance_share_two(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = _both(files, tmp_path)
    assert main(["solve", str(both), "--method", "milp"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cbalab: error: --problem:") and "'milp' solves both problems" in err
    assert main(["solve", str(both), "--method", "milp", "--problem", "cost"]) == 0
    assert json.loads(capsys.readouterr().out)["problem"] == "cost"


def test_solve_unknown_method_names_the_known_ones(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(files["cost"]), "--method", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--method" in err and '"nope"' in err and "cba" in err and "autocba" in err
    assert main(["solve", str(files["cost"]), "--method", "autocba", "--problem", "cost"]) == 2
    err = capsys.readouterr().err
    assert "'autocba' is a welfare method; it does not solve the cost problem" in err


@pytest.mark.parametrize("method", ["lp", "milp"])
def test_regression_issue23_solve_infers_the_problem_from_the_instance(
    method: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 1: ``solve w.json --method lp`` on a welfare file solves the welfare problem, on a cost
    file the cost problem, with no --problem."""
    for problem in ("cost", "welfare"):
        assert main(["solve", str(files[problem]), "--method", method]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["problem"], doc["method"]) == (problem, method)


def test_regression_issue23_a_method_of_the_other_problem_says_so_in_words(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 1: autocba on a cost file says it is a welfare method and the file has no options (one line,
    exit 2, no raw enum); cba on a welfare file says the converse."""
    assert main(["solve", str(files["cost"]), "--method", "autocba"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cbalab: error: --method: 'autocba' is a welfare method")
    assert "poses the cost problem" in err and "no options" in err and "Problem." not in err
    assert main(["solve", str(files["welfare"]), "--method", "cba"]) == 2
    err = capsys.readouterr().err
    assert "'cba' is a cost method" in err and "no fixed gpus/io_gbps" in err


@pytest.mark.parametrize(("typo", "meant"), [("cbba", "cba"), ("autocb", "autocba"), ("gavel-tputt", "gavel-tput")])
def test_regression_issue23_unknown_method_gets_did_you_mean(
    typo: str, meant: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 1: a misspelt method offers the closest names instead of listing all of them."""
    assert main(["solve", str(files["cost"]), "--method", typo]) == 2
    err = capsys.readouterr().err
    assert f"did you mean '{meant}'" in err and f'"{typo}"' in err
    assert "utility-greedy-tuned" not in err


def test_regression_issue23_compare_runs_the_instances_problem(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 1: ``compare w.json`` (a welfare file) runs every welfare method; a file posing both needs
    --problem; --problem welfare on a cost file names the missing field."""
    from cbalab.algorithms import registry

    assert main(["compare", str(files["welfare"])]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("every welfare method")
    assert set(_table(out)) == set(registry.names("welfare"))
    assert max(len(line) for line in out.splitlines()[1:]) <= 100  # the first line holds the path
    assert main(["compare", str(_both(files, tmp_path))]) == 2
    assert capsys.readouterr().err.startswith("cbalab: error: --problem: the instance poses both problems")
    assert main(["compare", str(files["cost"]), "--problem", "welfare"]) == 2
    assert "jobs[0].options" in capsys.readouterr().err


def _table(out: str) -> dict[str, list[str]]:
    """compare's rows by method: the whitespace-separated cells after the method name."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-----")) + 1
    rows = {}
    for line in lines[start:]:
        cells = line.split()
        if len(cells) >= 9 and cells[1] in {str(s) for s in cbalab.Status}:
            rows[cells[0]] = cells[1:]
    return rows


def test_compare_bound_is_in_the_headline_units(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Cost: the headline is the IO cost, so an exact method's bound equals its headline value (GPU bill removed)."""
    assert main(["compare", str(files["cost"])]) == 0
    rows = _table(capsys.readouterr().out)
    for name in ("cba", "lp", "milp"):
        status, headline, _, bound = rows[name][:4]
        assert status == "optimal"
        assert float(bound) == pytest.approx(float(headline), rel=1e-5), name
    assert rows["silod"][3] == "-"
    assert not any(cells[2].startswith("-0.00") for cells in rows.values())


def test_compare_welfare_bound_is_at_least_the_welfare(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(files["welfare"]), "--problem", "welfare"]) == 0
    rows = _table(capsys.readouterr().out)
    welfare, bound = float(rows["autocba"][1]), float(rows["autocba"][3])
    assert bound >= welfare - 1e-9
    assert float(rows["milp"][3]) == pytest.approx(float(rows["milp"][1]), rel=1e-5)


def test_generate_says_what_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "inst.json"
    args = ["generate", "--kind", "welfare", "--jobs", "7", "--datasets", "3", "--seed", "5", "--out", str(out)]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out}:") and "welfare" in said and "7 jobs" in said and "3 datasets" in said
    assert "seed 5" in said
    inst = cbalab.load(out)
    assert (inst.n_jobs, inst.n_datasets) == (7, 3)
    assert main(["generate", "--kind", "cost", "--jobs", "4", "--datasets", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "cbalab/instance@1"


def test_closed_pipe_is_not_an_internal_error(tmp_path: Path) -> None:
    """``cbalab generate ... | head`` ends quietly with status 0, not 'internal error: BrokenPipeError'."""
    exe = shutil.which("cbalab", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.Popen(
        [exe, "generate", "--kind", "cost", "--jobs", "5000", "--datasets", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100).startswith(b"{")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "internal error" not in err and "Traceback" not in err


def _readme_commands() -> list[str]:
    """Every command line of the README's code blocks that calls cbalab or one of its modules."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith(("cbalab ", "python -m cbalab", ".venv/bin/cbalab "))]


def test_readme_commands_work_as_written() -> None:
    """Each README command parses (cbalab) or names a module whose --help runs (python -m); none is stale."""
    commands = _readme_commands()
    assert any(c.startswith("cbalab experiment ") for c in commands)
    assert any(c.startswith("cbalab solve") for c in commands)
    modules = set()
    for line in commands:
        words = shlex.split(line)
        if words[0] == "python":
            modules.add(words[2])
        else:
            parser().parse_args(words[1:])
    for module in sorted(modules):
        assert importlib.util.find_spec(module) is not None, module
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (module, proc.stderr)
        assert "usage" in proc.stdout
