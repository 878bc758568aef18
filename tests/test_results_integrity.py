"""The options of ``cbalab bench`` and the checks of committed results (cbalab/cli.py, experiments/meta.py,
experiments/paper/), against docs/interface.md: bad input is exit 2 with one line naming the option, or the file
and the key, before any work; a check never passes silently when what it checks is missing; a copy of the
committed results checks in step; the docs say what an interrupted command prints.

Each test names, in its docstring, the defect of the report it covers (1 to 7).  The CLI runs in-process
(:func:`hostile.run_cli`), as in tests/test_cli.py; a benchmark's ``measure`` is replaced by one that records
its arguments (:func:`measured`), so that a refused option is seen not to reach it and no test measures.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hostile import refused, run_cli

from cbalab import cli
from cbalab.algorithms import registry
from cbalab.experiments import benchmarks, runner
from cbalab.experiments.meta import read_meta
from cbalab.experiments.paper import check

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "paper"


def measured(monkeypatch: pytest.MonkeyPatch, name: str) -> list[dict[str, Any]]:
    """Replace benchmark ``name``'s ``measure`` by one with its signature (so its options stay the same) that
    records the arguments it is called with and returns ``{"ok": True}``; the list of those calls."""
    module = importlib.import_module(benchmarks.BENCHMARKS[name])
    calls: list[dict[str, Any]] = []

    @functools.wraps(module.measure)
    def record(**given: Any) -> dict[str, Any]:
        calls.append(given)
        return {"ok": True}

    monkeypatch.setattr(module, "measure", record)
    return calls


# ------------------------------------------------------------------------------------------ bench options


@pytest.mark.parametrize(
    ("name", "option", "argv"),
    [
        ("integer-milp", "--datasets", ["--jobs", "10", "--datasets", "0"]),
        ("milp-scale", "--datasets", ["--quick", "--datasets", "0"]),
        ("replay-speed", "--n-datasets", ["--jobs", "10", "--n-datasets", "0"]),
        ("replay-speed", "--jobs", ["--jobs", "0"]),
        ("p3-trace", "--chunk-pairs", ["--jobs", "10", "--chunk-pairs", "0"]),
    ],
)
def test_a_count_of_what_a_benchmark_works_on_starts_at_1(
    name: str,
    option: str,
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Defect 1: ``integer-milp --datasets 0`` was an internal error (ValueError, exit 1), ``replay-speed
    --jobs 0`` and ``--n-datasets 0`` a child's traceback; every such count is exit 2 naming the option, before
    the measure runs, and 1 reaches the measure."""
    calls = measured(monkeypatch, name)
    out = ["--out", str(tmp_path / "b")] if any(o.name == "out" for o in benchmarks.options(name)) else []
    refused(capsys, option, "'0'", "bench", name, *argv, *out)
    assert calls == []
    code, _, err = run_cli(capsys, "bench", name, *argv[:-1], "1", *out)
    assert code == 0, err
    assert calls[0][option[2:].replace("-", "_")] == 1


@pytest.mark.parametrize("policy", ["nosuch", "autocba"])
def test_an_unknown_policy_of_a_benchmark_is_refused_with_the_known_ones(
    policy: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 2: ``replay-speed --policies nosuch`` printed a child process's traceback (exit 1); a name that is
    not a cost policy of the registry (a welfare method included) is exit 2 naming --policies and listing the
    known cost policies, before any replay; registered cost policies pass unchanged."""
    calls = measured(monkeypatch, "replay-speed")
    err = refused(
        capsys, "--policies", repr(policy), "bench", "replay-speed", "--policies", "cba", policy, "--jobs", "10"
    )
    assert all(known in err for known in registry.names("cost")), err
    assert calls == []
    code, _, err = run_cli(capsys, "bench", "replay-speed", "--policies", "cba", "io-only", "--jobs", "10")
    assert code == 0, err
    assert calls[0]["policies"] == ("cba", "io-only")


@pytest.mark.parametrize("value", ["-1", "1.5"])
def test_a_share_outside_0_to_1_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 3: ``p3-trace --exact-share -1`` ran; a share (of the cache) outside [0, 1] is exit 2 naming it,
    and its ends are shares."""
    calls = measured(monkeypatch, "p3-trace")
    refused(capsys, "--exact-share", repr(value), "bench", "p3-trace", "--exact-share", value, "--jobs", "10")
    assert calls == []
    for end in ("0", "1"):  # every dataset solved exactly, and none unless as large as the cache
        code, _, err = run_cli(capsys, "bench", "p3-trace", "--exact-share", end, "--jobs", "10")
        assert code == 0, err
        assert calls[-1]["exact_share"] == float(end)


# ----------------------------------------------------------------------------------------------- meta.json


@pytest.fixture(scope="module")
def quick_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``cbalab experiment sensitivity --quick``'s results (about 5 s), for the tests to copy."""
    out = tmp_path_factory.mktemp("sweep")
    assert cli.main(["experiment", "sensitivity", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out


def _edited_copy(source: Path, target: Path, meta: dict) -> Path:
    """``source`` copied to ``target`` with its sensitivity/meta.json replaced by ``meta``; that meta.json's path."""
    shutil.copytree(source, target)
    path = target / "sensitivity" / "meta.json"
    path.write_text(json.dumps(meta))
    return path


@pytest.mark.parametrize("quick", [True, False])
def test_verify_over_a_meta_json_without_config_names_the_file_and_the_key(
    quick: bool, quick_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 4: ``--verify`` over a meta.json without ``config`` said "holds full rows; drop --quick" (with
    --quick) or that a run "is not in the grid of this code" (exit 1, without); both are exit 2 naming the
    meta.json and the key."""
    meta = json.loads((quick_sweep / "sensitivity" / "meta.json").read_text())
    del meta["config"]
    path = _edited_copy(quick_sweep, tmp_path / "r", meta)
    argv = ["experiment", "sensitivity", "--verify", "--out", str(tmp_path / "r"), *(["--quick"] if quick else [])]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith(f"cbalab: error: {path}: ") and "'config'" in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("meta", "key"), [({}, "'config'"), ({"schema": "other@1"}, "'schema'")])
def test_a_sweep_over_a_meta_json_that_is_not_one_is_exit_2(
    meta: dict, key: str, quick_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 4: ``cbalab experiment sensitivity --quick`` over a meta.json of ``{}`` or of another schema ran
    and exited 0, where docs/interface.md says a meta.json that is not one is exit 2: it is, naming the file and
    the key, before any run (the rows and the file stay as they were)."""
    path = _edited_copy(quick_sweep, tmp_path / "r", meta)
    code, out, err = run_cli(capsys, "experiment", "sensitivity", "--quick", "--out", str(tmp_path / "r"))
    assert code == 2, (out, err)
    assert err.startswith(f"cbalab: error: {path}: ") and key in err and err.count("\n") == 1, err
    assert json.loads(path.read_text()) == meta


# ------------------------------------------------------------------------------------------ paper --check


def test_a_meta_json_that_records_no_checksum_is_a_problem(tmp_path: Path) -> None:
    """Defect 5: a meta.json without ``runs_sha256`` (or no meta.json beside runs.csv) switched the check of
    runs.csv against its recorded sha256 off, and ``paper --check`` said "in step"; either is a problem naming
    the file.  Every committed meta.json (full and quick) is one to the stricter reader of defect 4 and records
    the key, so a missing one is a problem, not a note."""
    for path in sorted(PAPER.glob("*/*/meta.json")):
        meta = read_meta(path)
        assert meta is not None and {"config", "runs", "runs_sha256"} <= meta.keys(), path
    shutil.copytree(PAPER / "results" / "sensitivity", tmp_path / "sensitivity", ignore=shutil.ignore_patterns("runs"))
    assert check.recorded_hashes(tmp_path) == []
    meta_path = tmp_path / "sensitivity" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["runs_sha256"]
    meta_path.write_text(json.dumps(meta))
    problems = check.recorded_hashes(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("sensitivity/meta.json: no runs_sha256"), problems
    meta_path.unlink()
    problems = check.recorded_hashes(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("sensitivity/meta.json: missing"), problems


def test_paper_check_does_not_call_stale_results_in_step() -> None:
    """``paper --check`` printed "in step with the results" right after listing stale experiments; its last line
    now names them, and says in step only when nothing is stale."""
    stale = ["io-cost (verified at 09f19bc7): module x changed", "confirm (rerun at 09f19bc7): module y changed"]
    line = check.verdict_line([], stale)
    assert "stale" in line and "confirm, io-cost" in line and "2 experiment(s)" in line
    assert check.verdict_line([], []) == "in step with the results"
    assert check.verdict_line(["a"], stale) == "1 problem(s)"


def test_a_copy_of_the_committed_results_checks_in_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 6: ``paper --check --results COPY`` on an untouched copy of paper/results said claims.md was out of
    step, because claims.md embedded the results folder's path; nothing generated depends on it now."""
    copy = tmp_path / "R0"
    shutil.copytree(PAPER / "results", copy)
    code, out, err = run_cli(capsys, "paper", "--paper", str(PAPER), "--results", str(copy), "--check")
    assert code == 0, out + err
    last = out.rstrip().splitlines()[-1]
    assert last == "paper --check: in step with the results" or last.startswith(
        "paper --check: the paper is in step with its results, but"
    ), out
    assert str(copy) not in out


# ---------------------------------------------------------------------------------------------- the docs


def test_the_docs_say_what_an_interrupted_command_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 7: the README and docs/interface.md said every interrupted command prints ``cbalab: interrupted``,
    but an interrupted sweep prints its own line; both docs quote both lines, as the commands print them."""

    def interrupt(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_methods", interrupt)
    code, _, err = run_cli(capsys, "methods")
    assert code == 130
    plain = err.strip()

    def interrupted_sweep(name: str, out: Path, **kwargs: Any) -> runner.Sweep:
        return runner.Sweep(name, Path(out) / name, pd.DataFrame(), interrupted=True)

    monkeypatch.setattr(runner, "run_sweep", interrupted_sweep)
    lines: list[str] = []
    assert runner.run_experiment("sensitivity", "unused", echo=lines.append) == 130
    sweep = lines[-1]
    for doc in (ROOT / "README.md", ROOT / "docs" / "interface.md"):
        text = re.sub(r"\s+", " ", doc.read_text())
        assert f"`{plain}`" in text and f"`{sweep}`" in text, doc
