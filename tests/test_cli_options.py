"""The command line's option checks (cbalab/cli.py, docs/interface.md): every bad option is exit 2 with one line
naming the option and the value, before any generator, solver, replay or benchmark runs; never an internal error
(exit 1), an option silently ignored, or a file the next command refuses.

Each test names, in its docstring, the defect of the hostile tester's report it covers (1 to 10).  The CLI runs
in-process (:func:`hostile.run_cli`, argparse's own refusals included), as in tests/test_cli.py; where the old
behaviour was a long run (a replay ticking for hours, a sweep), the step after the check is replaced by one
that fails at once, so that the test fails rather than hangs without the check.
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hostile import refused, run_cli

from cbalab import api
from cbalab.cli import MAX_SKEW, parser
from cbalab.experiments import runner
from cbalab.experiments.workload import generate_cost
from cbalab.models.instance import MAX_COUNT


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    """A small generated cost instance written to disk."""
    path = tmp_path / "inst.json"
    generate_cost(5, 2, seed=3).save(path)
    return path


def _never(*args: Any, **kwargs: Any) -> NoReturn:
    """Stands in for a long step that a refused option must never reach."""
    raise AssertionError("the option was not refused before the work started")


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "--kind", "cost", "--jobs", "5", "--datasets", "3", "--skew", "700"],
        ["simulate", "--generate", "20", "--policy", "cba", "--skew", "1e308"],
        ["compare", "--jobs", "5", "--datasets", "3", "--skew", "34"],
    ],
)
def test_a_skew_whose_zipf_weights_overflow_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 1: a skew past MAX_SKEW (33) overflowed rank^skew, an internal OverflowError (exit 1); it is exit 2
    naming --skew and the value."""
    err = refused(capsys, "--skew", repr(argv[-1]), *argv)
    assert f"at most {MAX_SKEW}" in err


def test_the_largest_skew_is_computed_at_any_dataset_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 1: the bound is the largest skew whose weights stay finite at 2^31 - 1 datasets (the rank^skew of the
    last dataset is finite at 33 and overflows at 34), and it runs."""
    assert MAX_SKEW == 33
    assert math.isfinite(float(MAX_COUNT) ** MAX_SKEW)
    with pytest.raises(OverflowError):
        float(MAX_COUNT) ** (MAX_SKEW + 1)
    out = tmp_path / "replay"
    code, _, err = run_cli(capsys, "generate", "--kind", "cost", "--jobs", "5", "--datasets", "3", "--skew", "33")
    assert code == 0, err
    code, _, err = run_cli(capsys, "simulate", "--generate", "5", "--policy", "cba", "--skew", "33", "--out", str(out))
    assert code == 0, err


def test_a_gpu_fraction_whose_cluster_overflows_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 2: --gpu-fraction 1e308 made an infinite GPU count (OverflowError, exit 1); it is exit 2 naming
    --gpu-fraction, and a fraction that makes more GPUs than an instance holds names it too."""
    argv = ["generate", "--kind", "welfare", "--jobs", "4", "--datasets", "2"]
    refused(capsys, "--gpu-fraction", "'1e308'", *argv, "--gpu-fraction", "1e308")
    argv = ["generate", "--kind", "welfare", "--jobs", "4000", "--datasets", "2", "--gpu-fraction", "1e9"]
    err = refused(capsys, "--gpu-fraction", "(got 1000000000.0)", *argv)
    assert "cluster.gpus" in err


@pytest.mark.parametrize(
    ("option", "value", "extra"),
    [
        ("--bandwidth-fraction", "1e-40", ["--kind", "cost"]),
        ("--cache-fraction", "1e-40", ["--kind", "cost"]),
        ("--tier-fraction", "1e-40", ["--kind", "cost", "--variant", "tiers"]),
        ("--block-gb", "1e-40", ["--kind", "cost", "--variant", "block"]),
        ("--price-gpu", "1e-40", ["--kind", "cost"]),
        ("--budget-fraction", "1e-40", ["--kind", "welfare"]),
        ("--cache-fraction", "1e308", ["--kind", "cost"]),
    ],
)
def test_generate_refuses_an_instance_the_loader_would_refuse(
    option: str, value: str, extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 3: ``generate`` wrote instances that ``solve`` then refused (a field below 1e-30, or infinite); it
    is exit 2 naming the option that set the field, with the option's value, and no file is written."""
    out = tmp_path / "g.json"
    argv = ["generate", *extra, "--jobs", "5", "--datasets", "2", option, value, "--out", str(out)]
    refused(capsys, option, f"(got {float(value)!r})", *argv)
    assert not out.exists()


def test_compare_refuses_a_generated_instance_the_loader_would_refuse(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 3: ``compare`` with generator options holds its instance to the same rule as ``generate``."""
    argv = ["compare", "--jobs", "5", "--datasets", "2", "--bandwidth-fraction", "1e-40"]
    refused(capsys, "--bandwidth-fraction", "(got 1e-40)", *argv)


def test_an_alpha_that_overflows_the_utilities_is_named_without_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 3: --alpha 1e308 printed numpy RuntimeWarnings, then named ``options[0].utility``; it is one line
    naming the options given that shape the utilities, --alpha and --utility, with their values (a RuntimeWarning
    is made an error here, so one that escapes fails the test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        argv = ["generate", "--kind", "welfare", "--jobs", "4", "--datasets", "2", "--utility", "alpha"]
        refused(capsys, "--alpha/--utility", '(got [1e+308, "alpha"])', *argv, "--alpha", "1e308")


@pytest.mark.parametrize(
    ("option", "value"),
    [("--jobs", "5"), ("--jobs", "200"), ("--seed", "3"), ("--bandwidth-fraction", "0.01"), ("--utility", "linear")],
)
def test_compare_refuses_generator_options_with_a_file(
    option: str, value: str, instance_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 4: ``compare FILE --jobs 5`` ignored --jobs without a word; it is exit 2 naming the option, even
    when its value is the default."""
    err = refused(capsys, option, value, "compare", str(instance_file), option, value)
    assert "only with a generated instance" in err


@pytest.mark.parametrize(
    ("option", "value"),
    [("--candidates", "-5"), ("--candidates", "0"), ("--time-limit", "-1"), ("--time-limit", "0")],
)
def test_bench_autocba_hard_refuses_counts_and_time_limits_out_of_range(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 5: ``--candidates -5`` and ``0`` exited 0 claiming a file they never wrote, ``--time-limit -1`` ran
    with nan gaps; each is exit 2 naming the option, and nothing is written."""
    out = tmp_path / "bh"
    argv = ["bench", "autocba-hard", "--candidates", "1", "--out", str(out), option, value]
    refused(capsys, option, repr(value), *argv)
    assert not out.exists()


def test_bench_autocba_hard_refuses_an_unwritable_out_and_a_missing_reuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 5: ``--out /proc/x`` and ``--reuse nonexist.csv`` were internal errors (FileNotFoundError, exit 1)
    after the measurement; both are exit 2 naming the option before it."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    refused(
        capsys, "--out", str(blocker / "x"), "bench", "autocba-hard", "--candidates", "1", "--out", str(blocker / "x")
    )
    missing = str(tmp_path / "nonexist.csv")
    argv = ["bench", "autocba-hard", "--candidates", "1", "--out", str(tmp_path / "bh"), "--reuse", missing]
    err = refused(capsys, "--reuse", missing, *argv)
    assert "no such file" in err


def test_bench_checks_every_measure_by_option_name(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 5: the check is the bench command's, by option name and type, for every benchmark: a negative count
    of magnitude-fuzz (which reported ``welfare_cases: -1``, ok) is exit 2 naming it."""
    refused(capsys, "--welfare", "'-1'", "bench", "magnitude-fuzz", "--welfare", "-1", "--cost", "0")


def test_a_period_that_would_tick_for_hours_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 6: ``--period 1e-6`` on 10 generated jobs ran for many minutes (10^10 ticks); it is exit 2 naming
    --period with the smallest period allowed, before the replay (which here fails at once if reached).  The rule
    is the API's (api.check_ticks), which the command line names by its option."""
    monkeypatch.setattr(api, "_replay_cost", _never)
    monkeypatch.setattr(api, "_replay_welfare", _never)
    for problem, policy in (("cost", "cba"), ("welfare", "autocba")):
        argv = ["simulate", "--generate", "10", "--problem", problem, "--policy", policy, "--no-progress"]
        err = refused(capsys, "--period", "(got 1e-06)", *argv, "--period", "1e-6")
        assert "more than 10,000,000" in err and "give at least" in err


def test_a_sane_period_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 6: the bound refuses only absurd tick counts: a period of 10 minutes replays as before."""
    code, _, err = run_cli(
        capsys, "simulate", "--generate", "10", "--policy", "cba", "--period", "600", "--no-progress"
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("option", "argv"),
    [
        ("--time-limit", ["solve", "INSTANCE", "--method", "cba", "--time-limit", "inf"]),
        ("--period/--period-s", ["simulate", "--generate", "5", "--policy", "cba", "--period", "inf"]),
    ],
)
def test_an_infinite_time_limit_or_period_is_refused_as_not_finite(
    option: str, argv: list[str], instance_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 7: ``--time-limit inf`` said "must be > 0"; it says the value must be a finite number of seconds
    (argparse names an option with two spellings by both)."""
    argv = [str(instance_file) if a == "INSTANCE" else a for a in argv]
    err = refused(capsys, option, "(got 'inf')", *argv)
    assert "must be a finite number of seconds" in err


#: One command line of every command that takes --out.
OUT_COMMANDS = [
    ["simulate", "--generate", "20", "--policy", "cba"],
    ["generate", "--kind", "cost", "--jobs", "3", "--datasets", "1"],
    ["solve", "INSTANCE", "--method", "cba"],
    ["experiment", "optimality", "--quick"],
    ["bench", "autocba-hard", "--candidates", "1"],
]


@pytest.mark.parametrize("argv", OUT_COMMANDS)
def test_an_empty_out_is_refused_by_every_command(
    argv: list[str],
    instance_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Defect 8: ``simulate --out ""`` wrote jobs.csv and its siblings into the current folder, ``solve --out ""``
    said "is a folder"; every command taking --out says "--out: empty path", and writes nothing."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(runner, "run_experiment", _never)
    argv = [str(instance_file) if a == "INSTANCE" else a for a in argv]
    err = refused(capsys, "--out", "(got '')", *argv, "--out", "")
    assert "empty path" in err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("name", ["x" * 5000, "x/" * 2100 + "y", "x" * 300])
@pytest.mark.parametrize("argv", OUT_COMMANDS)
def test_an_out_too_long_for_the_file_system_is_refused_by_every_command(
    argv: list[str],
    name: str,
    instance_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 5,000-character --out ended as "internal error: OSError File name too long" (exit 1); a path longer
    than the system's PATH_MAX, or with a name longer than NAME_MAX, is refused by name (exit 2), nothing written
    (models.files.too_long)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_experiment", _never)
    argv = [str(instance_file) if a == "INSTANCE" else a for a in argv]
    before = sorted(tmp_path.iterdir())
    err = refused(capsys, "--out", name[:20], *argv, "--out", name)
    assert "bytes long, and this system takes at most" in err
    assert sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize(
    ("option", "argv"),
    [
        ("--utility/--utility-mix", ["generate", "--kind", "welfare", "--jobs", "4", "--datasets", "2", "--utility"]),
        ("--utility/--utility-mix", ["compare", "--problem", "welfare", "--jobs", "4", "--datasets", "2", "--utility"]),
        (
            "--utility-mix",
            ["simulate", "--generate", "20", "--problem", "welfare", "--policy", "autocba", "--utility-mix"],
        ),
    ],
)
def test_a_utility_mix_that_repeats_a_shape_is_refused(
    option: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 9: ``--utility linear=1,linear=2`` kept the last share without a word; it is exit 2 naming the
    option and the repeated shape."""
    err = refused(capsys, option, "linear=1, linear =2", *argv, "linear=1, linear =2")
    assert "'linear' two shares" in err


def test_gpu_type_says_it_needs_a_trace_of_models_measured_on_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 10: ``--gpu-type v100`` with generated jobs is always refused (they mix models measured on v100 and
    on t4); the message names --gpu-type and the value and says a --trace of such models is needed, and so does
    the option's help."""
    err = refused(
        capsys, "--gpu-type", '"v100"', "simulate", "--generate", "20", "--policy", "cba", "--gpu-type", "v100"
    )
    assert "--trace" in err
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    (action,) = [a for a in commands.choices["simulate"]._actions if "--gpu-type" in a.option_strings]
    assert "--trace" in (action.help or "")


def test_a_refused_field_of_several_options_names_the_ones_given(capsys: pytest.CaptureFixture[str]) -> None:
    """A generated cluster's GPU count comes from --gpu-options and --gpu-fraction: a refusal of it named the bare
    field ``cluster.gpus`` when only --gpu-options was given, and blamed --gpu-fraction alone when both were.  It
    names the options given among those behind the field, with their values."""
    argv = ["generate", "--kind", "welfare", "--jobs", "10", "--datasets", "2", "--gpu-options", "2000000000"]
    refused(capsys, "--gpu-options", "(got [2000000000])", *argv)
    refused(capsys, "--gpu-fraction/--gpu-options", "(got [0.5, [2000000000]])", *argv, "--gpu-fraction", "0.5")


def test_solve_refuses_an_out_that_is_its_instance(capsys: pytest.CaptureFixture[str], instance_file: Path) -> None:
    """``solve inst.json --out inst.json`` exited 0 and replaced the instance with the result document.  An --out
    that is the input file (by any spelling or link) is refused naming --out, and the instance is kept."""
    before = instance_file.read_bytes()
    link = instance_file.parent / "link.json"
    link.symlink_to(instance_file.name)
    for out in (str(instance_file), str(link), f"{instance_file.parent}/./{instance_file.name}"):
        err = refused(capsys, "--out", out, "solve", str(instance_file), "--method", "cba", "--out", out)
        assert "INSTANCE" in err
    assert instance_file.read_bytes() == before
    code, _, err = run_cli(capsys, "solve", str(instance_file), "--method", "cba", "--out", str(link.parent / "r.json"))
    assert code == 0, err


def test_simulate_refuses_an_out_folder_that_holds_its_trace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``simulate --trace DIR/jobs.csv --out DIR`` would write its jobs.csv over the trace it replays: refused
    naming --out and the file, and the trace is kept."""
    trace = tmp_path / "jobs.csv"
    trace.write_text("submit_time_s,duration_s,gpus\n0,60,1\n")
    before = trace.read_bytes()
    err = refused(
        capsys, "--out", str(tmp_path), "simulate", "--trace", str(trace), "--policy", "cba", "--out", str(tmp_path)
    )
    assert "jobs.csv" in err and "--trace" in err
    assert trace.read_bytes() == before


def test_an_empty_instance_or_paper_path_is_named_as_empty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``solve ""`` said "is a folder, not a file", ``compare ""`` silently compared a generated instance, and
    ``paper --paper ""`` said "no such folder": each names the empty path."""
    refused(capsys, "INSTANCE", "empty path", "solve", "", "--method", "cba")
    refused(capsys, "INSTANCE", "empty path", "compare", "")
    refused(capsys, "--paper", "empty path", "paper", "--paper", "")
    refused(capsys, "--results", "empty path", "paper", "--paper", str(tmp_path), "--results", "")
