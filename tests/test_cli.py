"""The ``cbalab`` command line (cbalab/cli.py) against docs/interface.md: result documents, exit statuses, error
messages; and the command line explaining itself: help and defaults on every option, --version, problem
inference, ``compare``'s bound in the headline's units, ``generate`` saying what it wrote, the README's commands.

Most tests call ``cbalab.cli.main`` in-process (fast); a few run the installed console script in a
subprocess to check the real entry point and that no traceback reaches stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hostile import doc, one_line_naming, run_cli, write

import cbalab
from cbalab.cli import main, parser
from cbalab.experiments import about, runner
from cbalab.experiments.workload import generate_cost, generate_welfare
from cbalab.models import solve as solve_module
from cbalab.models.instance import build, load

#: The result@1 fields docs/interface.md lists for every answer with an allocation.
RESULT_FIELDS = {
    "schema",
    "problem",
    "method",
    "status",
    "objective",
    "bound",
    "cost_per_hour",
    "welfare",
    "gpus",
    "cache_gb",
    "bandwidth_gbps",
    "solve_seconds",
}


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Call the CLI in-process; return (exit status, stdout, stderr)."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    """A small generated cost instance written to disk."""
    path = tmp_path / "inst.json"
    generate_cost(40, 8, seed=3).save(path)
    return path


@pytest.mark.parametrize("method", ["cba", "lp", "milp", "flow"])
def test_solve_prints_result_document(
    method: str, instance_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``solve`` prints one result@1 JSON object with every INTERFACE field, and writes it to --out."""
    out_file = tmp_path / "res.json"
    code, out, err = run_main(
        ["solve", str(instance_file), "--problem", "cost", "--method", method, "--out", str(out_file)], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc.keys() >= RESULT_FIELDS
    assert doc["schema"] == "cbalab/result@1"
    assert doc["problem"] == "cost" and doc["method"] == method
    assert doc["status"] == "optimal"
    inst = load(instance_file)
    assert set(doc["gpus"]) == set(inst.job_ids)
    assert set(doc["cache_gb"]) == set(inst.dataset_ids)
    assert set(doc["bandwidth_gbps"]) == set(inst.job_ids)
    parts = doc["cost_per_hour"]
    assert parts["total"] == pytest.approx(parts["gpu"] + parts["cache"] + parts["bandwidth"])
    assert doc["objective"] == pytest.approx(parts["total"])
    assert doc["bound"] <= doc["objective"] * (1 + 1e-9)
    assert json.loads(out_file.read_text()) == doc


def test_exact_methods_agree_through_the_cli(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CBA, the LP and the flow report the same optimum on the same file (Theorem 1 of proofs/cba_optimality.md)."""
    objectives = {}
    for method in ("cba", "lp", "flow"):
        code, out, _ = run_main(["solve", str(instance_file), "--problem", "cost", "--method", method], capsys)
        assert code == 0
        objectives[method] = json.loads(out)["objective"]
    assert objectives["lp"] == pytest.approx(objectives["cba"], rel=1e-7)
    assert objectives["flow"] == pytest.approx(objectives["cba"], rel=1e-12)


BAD_FILES = [
    ("negative-size", lambda d: d["datasets"][0].update(size_gb=-3.5), "datasets[0].size_gb", "-3.5"),
    ("unknown-dataset", lambda d: d["jobs"][2].update(dataset="nope"), "jobs[2].dataset", '"nope"'),
    ("unknown-schema", lambda d: d.update(schema="other@9"), "schema", '"other@9"'),
    ("bad-granularity", lambda d: d["cluster"].update(cache_granularity="blocks"), "cache_granularity", "blocks"),
]


@pytest.mark.parametrize(("mutate", "path", "value"), [pytest.param(m, p, v, id=i) for i, m, p, v in BAD_FILES])
def test_bad_instance_exits_2_naming_field_and_value(
    mutate, path: str, value: str, instance_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad instance file: exit 2, stderr names the field and the value, no traceback, nothing on stdout."""
    doc = json.loads(instance_file.read_text())
    mutate(doc)
    instance_file.write_text(json.dumps(doc))
    code, out, err = run_main(["solve", str(instance_file), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2
    assert path in err and value in err
    assert "Traceback" not in err
    assert out == ""


def test_malformed_json_and_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Malformed JSON names line and column; a missing file names the path; both exit 2."""
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "cbalab/instance@1",\n "cluster": }')
    code, _, err = run_main(["solve", str(broken), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2 and "JSON line 2" in err and "Traceback" not in err
    code, _, err = run_main(["solve", str(tmp_path / "absent.json"), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2 and "absent.json" in err


def test_unknown_method_exits_2(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown method is bad input (exit 2) and the message lists the known ones."""
    code, out, err = run_main(["solve", str(instance_file), "--problem", "cost", "--method", "magic"], capsys)
    assert code == 2
    assert "magic" in err and "cba" in err
    assert out == ""


@pytest.mark.parametrize("args", [["--time-limit", "0"], ["--time-limit", "soon"], ["--problem", "speed"]])
def test_bad_options_exit_2(args: list[str], instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse errors (bad time limit, unknown problem) exit 2 without a traceback."""
    full = ["solve", str(instance_file), "--problem", "cost", "--method", "cba", *args]
    with pytest.raises(SystemExit) as info:
        main(full)
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_infeasible_instance_exits_0_with_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md through the CLI: no cache, B below Σ r_j → status infeasible.

    One job of 1 GB/s, C = 0, B = 0.5: the ρ-ordered fill of C leaves 1 GB/s > B.
    Exit 0 (an answer), status ``infeasible`` with a reason, no allocation.
    """
    inst = build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([1.0]),
        cache_gb=0.0,
        bandwidth_gbps=0.5,
        prices=(1.0, 0.1, 1.0),
    )
    path = tmp_path / "inf.json"
    inst.save(path)
    for method in ("cba", "lp"):
        code, out, err = run_main(["solve", str(path), "--problem", "cost", "--method", method], capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["status"] == "infeasible"
        assert doc["reason"]
        assert doc["objective"] is None and doc["cache_gb"] is None


def test_flow_on_capped_instance_is_an_error_status_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flow method does not state a finite B (models/flow.py): status error, reason names field and value."""
    path = tmp_path / "capped.json"
    generate_cost(20, 4, seed=1, bandwidth_fraction=0.75).save(path)
    code, out, _ = run_main(["solve", str(path), "--problem", "cost", "--method", "flow"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "error"
    assert "cluster.bandwidth_gbps" in doc["reason"]
    assert str(load(path).bandwidth_gbps)[:6] in doc["reason"]


def test_time_limit_is_accepted(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--time-limit`` is accepted; a small LP finishes well within it and is still proven optimal."""
    code, out, _ = run_main(
        ["solve", str(instance_file), "--problem", "cost", "--method", "milp", "--time-limit", "60"], capsys
    )
    assert code == 0
    assert json.loads(out)["status"] == "optimal"


def test_generate_is_deterministic_per_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same seed gives byte-identical output (stdout and --out); another seed gives another instance."""
    args = ["generate", "--kind", "cost", "--jobs", "25", "--datasets", "6"]
    texts = []
    for seed in ("5", "5", "6"):
        code, out, _ = run_main([*args, "--seed", seed], capsys)
        assert code == 0
        texts.append(out)
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]
    out_file = tmp_path / "g.json"
    assert run_main([*args, "--seed", "5", "--out", str(out_file)], capsys)[0] == 0
    assert out_file.read_text() == texts[0]
    inst = load(out_file)
    assert inst.n_jobs == 25 and inst.n_datasets == 6
    assert math.isinf(inst.bandwidth_gbps)


def test_generate_rejects_zero_datasets(capsys: pytest.CaptureFixture[str]) -> None:
    """``--datasets 0`` cannot hold any job: exit 2 naming the option."""
    code, _, err = run_main(["generate", "--kind", "cost", "--jobs", "3", "--datasets", "0"], capsys)
    assert code == 2 and "--datasets" in err


def test_console_script_subprocess(instance_file: Path, tmp_path: Path) -> None:
    """The installed ``cbalab`` entry point: a result on stdout with exit 0; a bad file exits 2 without traceback."""
    exe = shutil.which("cbalab", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "cbalab.cli"]
    ok = subprocess.run(
        [*cmd, "solve", str(instance_file), "--problem", "cost", "--method", "cba"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"] == "optimal"
    bad = tmp_path / "bad.json"
    doc = json.loads(instance_file.read_text())
    doc["jobs"][0]["io_gbps"] = -1
    bad.write_text(json.dumps(doc))
    res = subprocess.run(
        [*cmd, "solve", str(bad), "--problem", "cost", "--method", "cba"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2
    assert "jobs[0].io_gbps" in res.stderr and "-1" in res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout == ""


def test_regression_every_file_error_has_one_wording_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing instance and a missing trace (and a folder in the place of either) read alike:
    ``OPTION: no such file (got "PATH")``, one line, exit 2; so do the --out refusals."""
    absent = tmp_path / "absent"
    cases = [
        (["solve", f"{absent}.json", "--method", "cba"], f'INSTANCE: no such file (got "{absent}.json")'),
        (["simulate", "--trace", f"{absent}.csv", "--policy", "cba"], f'--trace: no such file (got "{absent}.csv")'),
        (["solve", str(tmp_path), "--method", "cba"], f'INSTANCE: is a folder, not a file (got "{tmp_path}")'),
        (
            ["simulate", "--trace", str(tmp_path), "--policy", "cba"],
            f'--trace: is a folder, not a file (got "{tmp_path}")',
        ),
        (["compare", f"{absent}.json"], f'INSTANCE: no such file (got "{absent}.json")'),
        (["paper", "--results", str(absent)], f'--results: no such folder (got "{absent}")'),
    ]
    for argv, message in cases:
        code, out, err = run_main(argv, capsys)
        assert (code, out, err) == (2, "", f"cbalab: error: {message}\n"), argv


def _philly() -> str:
    from cbalab.experiments.data import data_path

    return str(data_path("philly"))


def test_regression_window_says_the_traces_span_when_it_selects_almost_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--window 0:20000`` on Philly replays its one job and says so with the trace's span on
    stderr; a window that selects nothing is exit 2 naming --window, with the span."""
    args = ["simulate", "--trace", _philly(), "--policy", "cba", "--quiet", "--no-timing"]
    code, out, err = run_main([*args, "--window", "0:20000"], capsys)
    assert code == 0 and json.loads(out)["jobs"] == 1
    assert err == (
        "cbalab: note: --window 0:20000 selects 1 of the trace's 82,247 jobs, whose submissions span "
        "0 s to 9,408,690 s (108.9 d)\n"
    )
    code, out, err = run_main([*args, "--window", "1:20000"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: --window: selects none of the trace's 82,247 jobs, whose submissions span")
    code, out, err = run_main([*args, "--window", "0:1000000"], capsys)
    assert code == 0 and json.loads(out)["jobs"] > 10 and err == ""


# ---------------------------------------------------------------- the command line explains itself

ROOT = Path(__file__).resolve().parents[1]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_has_help_and_shows_its_default() -> None:
    subs = _subparsers()
    assert set(subs) == {"solve", "generate", "compare", "methods", "simulate", "experiment", "bench", "paper"}
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
        assert "(default: 0)" in text or name in ("solve", "methods", "bench", "paper")


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
def test_regression_solve_infers_the_problem_from_the_instance(
    method: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``solve w.json --method lp`` on a welfare file solves the welfare problem, on a cost
    file the cost problem, with no --problem."""
    for problem in ("cost", "welfare"):
        assert main(["solve", str(files[problem]), "--method", method]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["problem"], doc["method"]) == (problem, method)


def test_regression_a_method_of_the_other_problem_says_so_in_words(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """autocba on a cost file says it is a welfare method and the file has no options (one line,
    exit 2, no raw enum); cba on a welfare file says the converse."""
    assert main(["solve", str(files["cost"]), "--method", "autocba"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cbalab: error: --method: 'autocba' is a welfare method")
    assert "poses the cost problem" in err and "no options" in err and "Problem." not in err
    assert main(["solve", str(files["welfare"]), "--method", "cba"]) == 2
    err = capsys.readouterr().err
    assert "'cba' is a cost method" in err and "no fixed gpus/io_gbps" in err


@pytest.mark.parametrize(("typo", "meant"), [("cbba", "cba"), ("autocb", "autocba"), ("gavel-tputt", "gavel-tput")])
def test_regression_unknown_method_gets_did_you_mean(
    typo: str, meant: str, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt method offers the closest names instead of listing all of them."""
    assert main(["solve", str(files["cost"]), "--method", typo]) == 2
    err = capsys.readouterr().err
    assert f"did you mean '{meant}'" in err and f'"{typo}"' in err
    assert "utility-greedy-tuned" not in err


def test_regression_compare_runs_the_instances_problem(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare w.json`` (a welfare file) runs every welfare method; a file posing both needs
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


# ---------------------------------------------------------------- cbalab bench


@pytest.fixture
def toy_bench(monkeypatch: pytest.MonkeyPatch) -> str:
    """tests/toy_bench.py registered as the benchmark ``toy`` (what a new benchmark's one line does)."""
    from cbalab.experiments import benchmarks

    monkeypatch.setitem(benchmarks.BENCHMARKS, "toy", "toy_bench")
    return "toy"


def test_regression_every_benchmark_follows_the_contract() -> None:
    """Each module of BENCHMARKS has a keyword-only, typed ``measure`` whose options the one parser can build,
    and ``cbalab bench NAME --help`` lists each of them."""
    from cbalab.experiments import benchmarks

    for name in benchmarks.BENCHMARKS:
        options = benchmarks.options(name)
        assert options, name
        with pytest.raises(SystemExit) as info:
            main(["bench", name, "--help"])
        assert info.value.code == 0


def test_regression_bench_maps_the_options_onto_measure(toy_bench: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``cbalab bench toy --values 1 2 3 --label x`` calls measure(values=(1, 2, 3), label="x") and prints its
    dict; ``ok`` False is exit 1; a bad value, an unknown option and an unknown benchmark are exit 2."""
    code, out, err = run_main(["bench", toy_bench, "--values", "1", "2", "3", "--label", "x"], capsys)
    assert code == 0 and json.loads(out) == {"total": 6.0, "label": "x", "ok": True} and err == ""
    code, out, _ = run_main(["bench", toy_bench, "--limit", "2"], capsys)
    assert code == 1 and json.loads(out)["ok"] is False
    with pytest.raises(SystemExit) as info:
        main(["bench", toy_bench, "--limit", "inf"])
    assert info.value.code == 2 and "--limit: must be finite" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["bench", toy_bench, "--nope", "1"])
    assert info.value.code == 2
    capsys.readouterr()
    code, _, err = run_main(["bench", "tooy"], capsys)
    assert code == 2 and "did you mean 'toy'" in err
    code, out, _ = run_main(["bench", "--list"], capsys)
    assert code == 0 and [line.split()[0] for line in out.splitlines()][-1] == "toy"


def test_regression_bench_refuses_a_measure_outside_the_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    """A measure with a positional or an untyped-for-the-parser parameter is named, not half-parsed."""
    import types

    from cbalab.experiments import benchmarks

    module = types.ModuleType("tests.bad_bench")
    exec("def measure(n: int, *, m: dict = None) -> None: ...", module.__dict__)
    monkeypatch.setitem(sys.modules, "tests.bad_bench", module)
    monkeypatch.setitem(benchmarks.BENCHMARKS, "bad", "tests.bad_bench")
    with pytest.raises(TypeError, match="'n' must be keyword-only"):
        benchmarks.options("bad")
    exec("def measure(*, m: dict | None = None) -> None: ...", module.__dict__)
    with pytest.raises(TypeError, match="measure's m"):
        benchmarks.options("bad")


# ------------------------------------------------ hostile input through the command line:
# exit 2 naming the field or the option, strict JSON, Ctrl-C, atomic --out, --no-timing


def test_regression_option_gpus_of_1e30_are_refused_naming_the_field(tmp_path, capsys) -> None:
    """``jobs[0].options[0].gpus = 10**30`` wrapped to −2^63 GPUs; now exit 2 naming the field and the value."""
    d = doc()
    d["jobs"][0]["options"][0]["gpus"] = 10**30
    code, out, err = run_cli(capsys, "solve", str(write(tmp_path, d)), "--problem", "welfare", "--method", "autocba")
    assert code == 2 and out == ""
    assert "jobs[0].options[0].gpus" in err and "1000000000000000000000000000000" in err and "Traceback" not in err


def test_regression_cluster_gpus_of_1e400_is_refused(tmp_path, capsys) -> None:
    """``cluster.gpus = 10**400`` gave exit 0 or an OverflowError; now exit 2 naming cluster.gpus."""
    d = doc()
    d["cluster"]["gpus"] = 10**400
    code, out, err = run_cli(capsys, "solve", str(write(tmp_path, d)), "--problem", "welfare", "--method", "autocba")
    assert code == 2 and out == "" and err.startswith("cbalab: error: cluster.gpus: must be <= 2147483647")


def test_regression_a_price_whose_cost_overflows_is_refused_not_printed_as_infinity(tmp_path, capsys) -> None:
    """``gpu_per_hour = 1e308`` printed ``"objective": Infinity`` with exit 0; now exit 2 naming the price."""
    d = doc()
    d["prices"]["gpu_per_hour"] = 1e308
    code, out, err = run_cli(capsys, "solve", str(write(tmp_path, d)), "--problem", "cost", "--method", "cba")
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: prices.gpu_per_hour: too large") and "1e+308" in err


def test_regression_a_large_finite_instance_gives_strict_json(tmp_path, capsys) -> None:
    """A bandwidth price of 1e308 is accepted (its cost stays finite) and cba's result parses as strict JSON."""
    d = doc()
    d["prices"]["bandwidth_gbps_per_hour"] = 1e308
    d["cluster"]["bandwidth_gbps"] = None
    code, out, _ = run_cli(capsys, "solve", str(write(tmp_path, d)), "--problem", "cost", "--method", "cba")
    assert code == 0
    result = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert result["status"] == "optimal" and result["objective"] > 1e306


def test_regression_deep_nesting_is_an_instance_error_not_a_recursion_error(tmp_path, capsys) -> None:
    """100,000 ``[`` then 100,000 ``]`` raised RecursionError (exit 1); now exit 2 with the line and the column."""
    path = write(tmp_path, "[" * 100_000 + "]" * 100_000)
    code, out, err = run_cli(capsys, "solve", str(path), "--problem", "cost", "--method", "cba")
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: JSON line 1 column 65: nested deeper than 64 levels")


def test_regression_dev_zero_is_refused_on_its_first_block(capsys) -> None:
    """``/dev/zero`` filled memory until a MemoryError; now it is refused as binary at once."""
    code, out, err = run_cli(capsys, "solve", "/dev/zero", "--problem", "cost", "--method", "cba")
    assert code == 2 and out == "" and "binary content (NUL byte at offset 0)" in err


def test_regression_a_tiny_limit_through_the_cli_reports_time_limit(tmp_path, capsys) -> None:
    """``--time-limit 1e-6`` cannot even build the model: exit 0 with status ``time_limit``, never ``optimal``."""
    code, out, _ = run_cli(
        capsys, "solve", str(write(tmp_path, doc())), "--problem", "welfare", "--method", "milp", "--time-limit", "1e-6"
    )
    assert code == 0 and json.loads(out)["status"] == "time_limit"


def trace(tmp_path: Path, rows: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text("submit_time_s,duration_s,gpus\n" + rows)
    return path


def test_regression_a_trace_gpu_count_of_1e20_is_refused_naming_line_and_column(tmp_path, capsys) -> None:
    """The row ``5,100,100000000000000000000`` under ``--gpus 8`` gave negative GPUs and a cost of −$6.6e17."""
    path = trace(tmp_path, "0,100,2\n5,100,100000000000000000000\n")
    code, out, err = run_cli(capsys, "simulate", "--trace", str(path), "--policy", "cba", "--gpus", "8", "--quiet")
    assert code == 2 and out == ""
    assert "line 3, column 'gpus': must be a whole number in [1, 2147483647]" in err
    assert "100000000000000000000" in err


def test_regression_zero_bandwidth_replay_is_bad_input(capsys) -> None:
    """``--bandwidth-gbps 0`` gave exit 1 "internal error: RuntimeError"; now exit 2 naming the setting."""
    code, out, err = run_cli(
        capsys, "simulate", "--generate", "10", "--policy", "cba", "--bandwidth-gbps", "0", "--quiet"
    )
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: --bandwidth-gbps: no job can progress")


def test_regression_solve_out_into_a_missing_folder_is_refused_before_solving(tmp_path, capsys) -> None:
    """``--out`` into a missing folder exited 1 after printing the result; now exit 2 and nothing is printed."""
    missing = tmp_path / "no" / "such" / "result.json"
    code, out, err = run_cli(
        capsys, "solve", str(write(tmp_path, doc())), "--problem", "cost", "--method", "cba", "--out", str(missing)
    )
    assert code == 2 and out == "" and "--out: no such folder" in err
    code, out, err = run_cli(
        capsys, "solve", str(write(tmp_path, doc())), "--problem", "cost", "--method", "cba", "--out", str(tmp_path)
    )
    assert code == 2 and out == "" and "is a folder" in err


def test_regression_simulate_out_onto_a_file_is_refused_before_the_replay(tmp_path, capsys) -> None:
    """``simulate --out`` naming an existing file is refused before the replay runs."""
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    code, out, err = run_cli(capsys, "simulate", "--generate", "5", "--policy", "cba", "--quiet", "--out", str(blocker))
    assert code == 2 and out == "" and "--out: is a file, not a folder" in err


def test_regression_negative_submit_times_are_accepted_as_written(tmp_path, capsys) -> None:
    """Negative submit times ("seconds from any origin") replay like the same trace shifted to start at 0."""
    args = ("--policy", "cba", "--gpus", "8", "--quiet", "--no-timing")
    code_neg, out_neg, _ = run_cli(
        capsys, "simulate", "--trace", str(trace(tmp_path, "-50,100,2\n5,300,8\n", "a.csv")), *args
    )
    code_pos, out_pos, _ = run_cli(
        capsys, "simulate", "--trace", str(trace(tmp_path, "0,100,2\n55,300,8\n", "b.csv")), *args
    )
    assert code_neg == code_pos == 0
    neg, pos = json.loads(out_neg), json.loads(out_pos)
    for key in ("mean_jct_s", "p99_jct_s", "makespan_s", "mean_queue_s", "cost"):
        assert neg[key] == pytest.approx(pos[key], rel=1e-12), key


@pytest.mark.parametrize(
    ("rows", "column"), [("0,100,2\n1e308,3600,1\n", "submit_time_s"), ("0,1e300,2\n", "duration_s")]
)
def test_regression_times_beyond_1e12_seconds_are_refused(tmp_path, capsys, rows: str, column: str) -> None:
    """A job submitted at 1e308 got a JCT of 0 (1e308 + 3600 == 1e308); now the line and the column are named."""
    code, out, err = run_cli(capsys, "simulate", "--trace", str(trace(tmp_path, rows)), "--policy", "cba", "--quiet")
    assert code == 2 and out == "" and f"column '{column}': must be a number in" in err


def test_regression_no_timing_makes_outputs_byte_identical(tmp_path, capsys) -> None:
    """Identical solves differed in ``solve_seconds`` and replays in ``wall_seconds``; ``--no-timing`` omits both."""
    path = str(write(tmp_path, doc()))
    texts = [
        run_cli(capsys, "solve", path, "--problem", "cost", "--method", "milp", "--no-timing")[1] for _ in range(2)
    ]
    assert texts[0] == texts[1] and "solve_seconds" not in json.loads(texts[0])
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        code, text, _ = run_cli(
            capsys, "simulate", "--generate", "40", "--policy", "cba", "--quiet", "--no-timing", "--out", str(out)
        )
        assert code == 0
        runs.append((text, *((out / f).read_bytes() for f in ("jobs.csv", "timeseries.csv", "summary.json"))))
    assert runs[0] == runs[1]
    assert "wall_seconds" not in json.loads(runs[0][0])


def _threads(pid: int) -> int:
    """The number of threads of process ``pid`` (Linux /proc), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def _default_sigint() -> None:
    """SIGINT at its default in the child: Python raises KeyboardInterrupt only for a SIGINT it did not inherit
    as ignored, and a shell that runs the tests in the background (``pytest &``) ignores it for its children."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``cbalab argv``, send SIGINT once its work is under way, and return how it ended.

    "Under way" is a second thread in the process: HiGHS's worker (models/solve.py) or the progress bar's
    monitor, with numpy's BLAS pool held to one thread, so that the signal never lands in the imports.
    """
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cbalab.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )
    deadline = time.monotonic() + 300
    while _threads(proc.pid) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the command ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def test_regression_ctrl_c_in_a_replay_is_one_line_and_exit_130(tmp_path) -> None:
    """Ctrl-C in ``simulate`` printed a KeyboardInterrupt traceback; now one line and exit 130, no partial files.

    (stderr also holds the progress bar the replay was drawing; the bar is what tells the test it runs.)
    """
    out = tmp_path / "run"
    done = _interrupt(["simulate", "--generate", "150000", "--policy", "cba", "--out", str(out)])
    assert done.returncode == 130 and done.stdout == ""
    assert done.stderr.count("cbalab: interrupted\n") == 1 and "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_regression_ctrl_c_in_a_milp_solve_is_one_line_and_exit_130(tmp_path) -> None:
    """Ctrl-C while HiGHS works waited for the whole solve; now one line and exit 130 within seconds.

    HiGHS runs in a worker thread (models/solve.py), so the interrupt reaches Python while HiGHS works.
    """
    path = tmp_path / "w.json"
    generate_welfare(3000, 100, seed=5, budget_fraction=0.2).save(path)
    done = _interrupt(["solve", str(path), "--problem", "welfare", "--method", "milp"])
    assert done.returncode == 130, done.stderr
    assert done.stderr == "cbalab: interrupted\n" and done.stdout == ""


def _children(pid: int) -> list[int]:
    """The ids of ``pid``'s child processes now (Linux /proc; none where it cannot be read)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie that no init reaped counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return not any(line.startswith("State:") and "Z" in line.split()[1] for line in status.splitlines())


def test_sigterm_stops_a_sweep_as_ctrl_c_does_and_leaves_no_worker_behind(tmp_path) -> None:
    """``kill`` (SIGTERM) ended ``cbalab experiment`` at once: no runs.csv and no meta.json were written, and its
    worker processes stayed alive, idle, for good.  Now it stops the sweep as Ctrl-C does: exit 130, the finished
    runs in runs.csv, meta.json saying ``interrupted``, and every process it started gone."""
    out = tmp_path / "out"
    argv = ["experiment", "optimality", "--quick", "--workers", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cbalab.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    runs = out / "optimality" / "runs"
    deadline = time.monotonic() + 300
    while not (runs.is_dir() and any(runs.glob("*.json"))) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be stopped"
    started = _children(proc.pid)
    assert len(started) >= 2, started  # its two workers (and multiprocessing's resource tracker)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    meta = json.loads((out / "optimality" / "meta.json").read_text())
    assert meta["interrupted"] is True and meta["runs"]["done_now"] >= 1
    assert (out / "optimality" / "runs.csv").is_file() and "Traceback" not in err
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)]


def test_regression_ctrl_c_in_the_model_build_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch) -> None:
    """Ctrl-C while the model is built (Pyomo or arrays) printed a traceback; now one line, exit 130."""

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(solve_module, "build_welfare_model", interrupted)
    monkeypatch.setattr(solve_module, "build_welfare_arrays", interrupted)
    code, out, err = run_cli(capsys, "solve", str(write(tmp_path, doc())), "--problem", "welfare", "--method", "milp")
    assert code == 130 and out == "" and err == "cbalab: interrupted\n"


@pytest.mark.slow
def test_regression_concurrent_solves_to_one_out_file_leave_one_document(tmp_path) -> None:
    """Two ``solve --out same.json`` at once left one file with two documents; each write is now a rename."""
    path = write(tmp_path, doc())
    target = tmp_path / "same.json"
    argv = [sys.executable, "-m", "cbalab.cli", "solve", str(path), "--problem", "welfare"]
    procs = [
        subprocess.Popen([*argv, "--method", m, "--out", str(target)], stdout=subprocess.PIPE, text=True)
        for m in ("milp", "autocba", "milp", "autocba")
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert target.read_text() in outputs  # exactly one whole document, one of those printed
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_regression_durations_below_a_millisecond_are_refused(tmp_path, capsys) -> None:
    """Found by the fuzz test: a duration of 9e-179 s submitted at 30 s ended at 30 s, a JCT of 0."""
    code, out, err = run_cli(capsys, "simulate", "--trace", str(trace(tmp_path, "30,9e-179,2\n")), "--policy", "cba")
    assert code == 2 and out == "" and "column 'duration_s': must be a number in [0.001, 1e+12]" in err


def _helps() -> Iterator[tuple[str, str]]:
    top = parser()
    yield "cbalab", top.format_help()
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in action.choices.items():
        yield name, sub.format_help()


def test_regression_help_text_has_no_raw_rest() -> None:
    """No ``literal`` or :role:`x` markup reaches a terminal in any --help."""
    for name, text in _helps():
        assert "``" not in text and not re.search(r":[a-z]+:`", text), (name, text)
    assert about.plain("(``cbalab experiment NAME``, :func:`run_sweep`)") == "(cbalab experiment NAME, run_sweep)"


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["simulate", "--generate", "5", "--policy", "cba", "--gpus", "99999999999999999999999"], "--gpus"),
        (["simulate", "--generate", "5", "--policy", "cba", "--price-gpu", "1e308"], "--price-gpu"),
        (
            ["simulate", "--generate", "5", "--policy", "autocba", "--problem=welfare", "--restart-delay-s=1e308"],
            "--restart-delay-s",
        ),
        (["experiment", "sensitivity", "--seed", "-1"], "--seed"),
        (["experiment", "sensitivity", "--workers", "0"], "--workers"),
    ],
)
def test_regression_out_of_range_options_are_one_line_exit_2(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An overflowing count, a price or delay that would make the replay's bill infinite, and
    a negative seed are exit 2 with one line naming the option, before anything runs."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and one_line_naming(err, option), err


def test_regression_experiment_all_maps_onto_run_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cbalab experiment all`` runs every registered experiment into one --out (runner.run_all)."""
    monkeypatch.setattr(runner, "EXPERIMENTS", {"toy": "toy_experiment", "toy2": "toy_experiment"})
    assert main(["experiment", "all", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    assert (tmp_path / "toy" / "runs.csv").exists() and (tmp_path / "toy2" / "runs.csv").exists()
