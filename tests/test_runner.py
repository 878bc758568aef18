"""The sweep runner (experiments/runner.py): same rows whatever the workers, resume, failures, every experiment.

"Same rows" means equal after dropping the wall-time columns (names ending
``_seconds``, :func:`cbalab.experiments.runner.comparable`): those are
measurements and differ between any two sweeps.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import pytest

from cbalab.experiments import runner
from cbalab.experiments.runner import EXPERIMENTS, ExperimentError, comparable, run_key, run_sweep
from cbalab.models.files import sha256_file
from tests import toy_experiment as toy


def _sweep(out: Path, **kw: object) -> runner.Sweep:
    return run_sweep("toy", out, module=toy, progress=False, **kw)


def _rows(path: Path) -> pd.DataFrame:
    return comparable(pd.read_csv(path / "toy" / "runs.csv", keep_default_na=False))


def test_run_key_is_a_hash_of_the_parameters_whatever_their_order() -> None:
    assert run_key({"a": 1, "b": [1, 2]}) == run_key({"b": [1, 2], "a": 1})
    assert run_key({"a": 1}) != run_key({"a": 2})
    assert runner.derive_seed(0, "x", 1) == runner.derive_seed(0, "x", 1) != runner.derive_seed(1, "x", 1)


def test_same_rows_for_one_and_two_workers(tmp_path: Path) -> None:
    one = _sweep(tmp_path / "one", quick=True, workers=1)
    two = _sweep(tmp_path / "two", quick=True, workers=2)
    assert one.exit_code == two.exit_code == 0
    assert len(one.runs) == 8
    assert "work_seconds" in one.runs and "run_seconds" not in comparable(one.runs)
    pd.testing.assert_frame_equal(_rows(tmp_path / "one"), _rows(tmp_path / "two"))
    assert list(one.runs["x"]) == list(range(8))  # grid order, not completion order


def test_rows_differ_with_the_seed(tmp_path: Path) -> None:
    a = _sweep(tmp_path / "a", quick=True, seed=0)
    b = _sweep(tmp_path / "b", quick=True, seed=1)
    assert not a.runs["draw"].equals(b.runs["draw"])


def test_interrupted_sweep_resumes_to_the_rows_of_an_uninterrupted_one(tmp_path: Path, monkeypatch) -> None:
    clean = _sweep(tmp_path / "clean", quick=True)
    monkeypatch.setenv("CBALAB_TOY_INTERRUPT", "5")
    cut = _sweep(tmp_path / "cut", quick=True)
    assert cut.interrupted and cut.exit_code == runner.EXIT_INTERRUPTED
    assert list(cut.runs["x"]) == [0, 1, 2, 3, 4]  # only whole runs, and runs.csv assembled from them
    files = sorted((tmp_path / "cut" / "toy" / "runs").iterdir())
    assert len(files) == 5 and all(json.loads(f.read_text())["row"] for f in files)
    meta = json.loads((tmp_path / "cut" / "toy" / "meta.json").read_text())
    assert meta["interrupted"] and meta["runs"]["missing"] == 3
    monkeypatch.delenv("CBALAB_TOY_INTERRUPT")
    resumed = _sweep(tmp_path / "cut", quick=True)
    assert (resumed.skipped, resumed.done) == (5, 3)
    pd.testing.assert_frame_equal(_rows(tmp_path / "clean"), _rows(tmp_path / "cut"))
    assert clean.exit_code == resumed.exit_code == 0


def test_a_failed_run_is_recorded_and_the_sweep_goes_on_and_a_rerun_retries_it(tmp_path: Path, monkeypatch) -> None:
    clean = _sweep(tmp_path / "clean", quick=True)
    monkeypatch.setenv("CBALAB_TOY_FAIL", "2,6")
    broken = _sweep(tmp_path / "run", quick=True)
    assert broken.exit_code == runner.EXIT_FAILED and broken.failed == 2
    assert len(broken.runs) == 8
    failed = broken.runs[broken.runs["error"] != ""]
    assert list(failed["x"]) == [2, 6]
    assert failed["error"].str.contains("ValueError: toy run . fails on purpose").all()
    assert failed["value"].isna().all() and broken.runs[broken.runs["error"] == ""]["value"].notna().all()
    assert (tmp_path / "run" / "toy" / "toy.png").exists()  # figures come from the successful rows
    meta = json.loads((tmp_path / "run" / "toy" / "meta.json").read_text())
    assert meta["runs"]["failed"] == 2
    monkeypatch.delenv("CBALAB_TOY_FAIL")
    fixed = _sweep(tmp_path / "run", quick=True)
    assert (fixed.skipped, fixed.done, fixed.exit_code) == (6, 2, 0)
    pd.testing.assert_frame_equal(_rows(tmp_path / "clean"), _rows(tmp_path / "run"))
    assert clean.exit_code == 0


def test_meta_json_records_the_configuration_and_the_machine(tmp_path: Path) -> None:
    _sweep(tmp_path, quick=True, seed=7)
    meta = json.loads((tmp_path / "toy" / "meta.json").read_text())
    assert meta["seed"] == 7 and meta["config"]["quick"] is True and meta["config"]["grid_size"] == 8
    assert meta["cbalab_version"] and meta["packages"]["numpy"] and meta["machine"]["cpu_count"] >= 1
    assert meta["started"] <= meta["ended"]
    assert meta["figures"] == ["toy.pdf", "toy.png"] and meta["tables"] == ["summary.csv"]
    assert pd.read_csv(tmp_path / "toy" / "summary.csv")["rows"].tolist() == [8]


def test_dask_cluster_gives_the_rows_of_local_processes(tmp_path: Path) -> None:
    from dask.distributed import LocalCluster

    local = _sweep(tmp_path / "local", quick=True, workers=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        remote = _sweep(tmp_path / "dask", quick=True, scheduler=cluster.scheduler_address)
    assert local.exit_code == remote.exit_code == 0
    pd.testing.assert_frame_equal(_rows(tmp_path / "local"), _rows(tmp_path / "dask"))


def test_an_unreachable_scheduler_is_bad_input(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(runner, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(ExperimentError, match=r"no Dask scheduler answered at 'tcp://127\.0\.0\.1:9' within 1 s"):
        _sweep(tmp_path, quick=True, scheduler="tcp://127.0.0.1:9")


def test_unknown_and_missing_experiments_fail_clearly(monkeypatch) -> None:
    with pytest.raises(ExperimentError, match="unknown experiment 'nope'; known: io-cost"):
        runner.load_experiment("nope")
    monkeypatch.setitem(EXPERIMENTS, "ghost", "cbalab.experiments.runs.ghost_of_an_experiment")
    with pytest.raises(ExperimentError, match=r"listed but its module .* is not installed"):
        runner.load_experiment("ghost")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cbalab")
    runner.add_experiment_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_experiment_list_prints_one_line_per_experiment() -> None:
    lines: list[str] = []
    assert runner.run_experiment(_parse(["experiment", "--list"]), echo=lines.append) == 0
    names = [line.split()[0] for line in lines[1:-1]]
    assert names == ["io-cost", "welfare", "optimality", "scaling", "sensitivity", "dynamic", "online-welfare"]


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_quick_writes_runs_meta_and_a_figure(name: str, tmp_path: Path) -> None:
    lines: list[str] = []
    args = _parse(["experiment", name, "--quick", "--out", str(tmp_path), "--no-progress"])
    assert runner.run_experiment(args, echo=lines.append) == 0, "\n".join(lines)
    folder = tmp_path / name
    runs = pd.read_csv(folder / "runs.csv", keep_default_na=False)
    assert len(runs) > 0 and (runs["error"] == "").all()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["experiment"] == name and meta["config"]["quick"] is True
    assert meta["runs"]["total"] == len(runs) and meta["runs"]["failed"] == 0
    pngs = sorted(folder.glob("*.png"))
    assert pngs and all((folder / f"{p.stem}.pdf").exists() for p in pngs)
    # issue 23 item 7: the console summary fits 100 columns (lines naming a path aside), with the columns chosen
    assert all(len(line) <= 100 for text in lines for line in text.splitlines() if str(tmp_path) not in line)
    for table, columns in runner.ABOUT[name].console.items():
        header = pd.read_csv(folder / f"{table}.csv", nrows=0).columns
        assert set(columns) <= set(header), (table, set(columns) - set(header))


def test_shipped_data_replays_philly_and_matches_the_catalog() -> None:
    """data/ ships the Philly trace (gzip) and the Gavel and Pollux tables that the catalog's throughputs come from."""
    from cbalab.experiments.data import data_path, data_root
    from cbalab.experiments.workload import check_catalog, load_trace

    trace = load_trace(data_path("philly"))
    assert len(trace) == 82_247 and trace["gpus"].min() >= 1
    assert check_catalog(data_root()) == []
    for folder in ("philly", "gavel", "pollux-scalability"):
        assert (data_root() / folder / "LICENSE").exists() and (data_root() / folder / "README.md").exists()
    with pytest.raises(ValueError, match="no shipped data 'nope'"):
        data_path("nope")


def test_run_all_runs_every_experiment_into_one_folder(tmp_path: Path, monkeypatch) -> None:
    """``cbalab experiment all`` (runner.run_all): each experiment of the registry writes its runs.csv and
    meta.json under one --out, a failed run makes the exit status 1 without stopping the others, and
    meta.json names the commit that computed the rows and the sha256 of runs.csv."""
    monkeypatch.setattr(runner, "EXPERIMENTS", {"toy": "tests.toy_experiment", "toy2": "tests.toy_experiment"})
    lines: list[str] = []
    assert runner.run_all(tmp_path, quick=True, echo=lines.append) == 0
    for name in ("toy", "toy2"):
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        assert meta["runs_sha256"] == sha256_file(tmp_path / name / "runs.csv")
        assert meta["rows_commits"] == ([meta["git"]] if meta["git"] else [])
    assert [line.split(":")[0] for line in lines] == ["toy", "toy2"]
    monkeypatch.setenv("CBALAB_TOY_FAIL", "1")
    assert runner.run_all(tmp_path / "again", quick=True, echo=lines.append) == 1
    assert (tmp_path / "again" / "toy2" / "runs.csv").exists()
    with pytest.raises(runner.ExperimentError, match="--workers"):
        runner.run_all(tmp_path, workers=0)
