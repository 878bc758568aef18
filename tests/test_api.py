"""The facade ``import cbalab`` (cbalab/api.py): build, generate, solve, evaluate, frames, plot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cbalab
from cbalab.algorithms import registry


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    jobs = pd.DataFrame(
        {"id": ["a", "b", "c"], "dataset": ["x", "x", "y"], "gpus": [1, 2, 4], "io_gbps": [0.5, 1.0, 2.0]}
    )
    datasets = pd.DataFrame({"id": ["x", "y"], "size_gb": [100.0, 400.0]})
    return jobs, datasets


def test_all_names_resolve() -> None:
    """Every name of ``__all__`` exists, and the API is small."""
    for name in cbalab.__all__:
        assert hasattr(cbalab, name), name
    assert {"solve", "evaluate", "generate", "build_instance", "load", "save", "Result"} <= set(cbalab.__all__)


def test_build_from_frames_equals_build_from_dicts(tmp_path: Path) -> None:
    """DataFrames and lists of dicts give the same instance; save/load round-trips it."""
    jobs, datasets = _tables()
    kw = {"cache_gb": 50.0, "prices": (2.0, 0.01, 0.5), "bandwidth_gbps": 10.0}
    a = cbalab.build_instance(jobs, datasets, **kw)
    b = cbalab.build_instance(jobs.to_dict("records"), datasets.to_dict("records"), **kw)
    assert a.to_dict() == b.to_dict()
    path = cbalab.save(a, tmp_path / "inst.json")
    assert cbalab.load(path).to_dict() == a.to_dict()
    assert cbalab.loads(path.read_text()).to_dict() == a.to_dict()


def test_bad_input_names_the_field() -> None:
    """A bad cell raises InstanceError naming the job's field and value."""
    jobs, datasets = _tables()
    jobs.loc[1, "io_gbps"] = -1.0
    with pytest.raises(cbalab.InstanceError, match=r"jobs\[1\]\.io_gbps"):
        cbalab.build_instance(jobs, datasets, cache_gb=50.0, prices=(2.0, 0.01, 0.5))


def test_solve_matches_the_registry_and_the_referee() -> None:
    """solve() infers the problem, returns the result@1 document the registry gives, and the referee's numbers."""
    inst = cbalab.generate("cost", jobs=30, datasets=6, seed=3)
    res = cbalab.solve(inst, "cba")
    doc, _ = registry.run(inst, "cost", "cba")
    mine = res.to_dict()
    for key in ("status", "objective", "bound", "cost_per_hour", "cache_gb", "bandwidth_gbps"):
        assert mine[key] == doc[key], key
    assert res.status is cbalab.Status.OPTIMAL
    ev = cbalab.evaluate(inst, res.allocation, "cost")
    assert ev.feasible and res.objective == pytest.approx(ev.cost_total)
    json.dumps(mine)


def test_frames_are_tidy_and_consistent() -> None:
    """One row per job / dataset; dataset bandwidth sums its jobs'; cache never exceeds the size."""
    inst = cbalab.generate("cost", jobs=25, datasets=5, seed=1)
    res = cbalab.solve(inst, "silod")
    jobs, ds = res.jobs_frame(), res.datasets_frame()
    assert len(jobs) == inst.n_jobs and len(ds) == inst.n_datasets
    assert res.to_frame().equals(jobs)
    assert ds["bandwidth_gbps"].sum() == pytest.approx(jobs["bandwidth_gbps"].sum())
    assert (ds["cache_gb"] <= ds["size_gb"] * (1 + 1e-9)).all()
    assert np.allclose(ds["demand_gbps"].sum(), jobs["rate_gbps"].sum())
    assert (jobs["time_share"] == 1.0).all()
    fair = cbalab.solve(cbalab.examples.elastic_toy(), "gavel-fair").jobs_frame()
    assert fair["time_share"].tolist() == pytest.approx([11 / 20] * 5)


def test_problem_is_inferred_from_the_instance_and_methods_lists_them() -> None:
    """``lp`` serves both problems, so solve() takes the instance's; methods() lists every entry with its fields."""
    inst = cbalab.generate("welfare", jobs=6, datasets=2, seed=0)
    assert cbalab.solve(inst, "lp").problem is cbalab.Problem.WELFARE
    with pytest.raises(cbalab.InstanceError, match=r"^method: no such method"):
        cbalab.solve(inst, "nope")
    res = cbalab.solve(inst, "gavel-tput", cache_policy="cba")
    assert res.problem is cbalab.Problem.WELFARE
    assert res.allocation.facts.cache_policy == "cba"
    table = cbalab.methods()
    assert len(table) == len(registry.all_methods())
    assert set(cbalab.methods("welfare")["name"]) == set(registry.names("welfare"))


def test_plot_draws(tmp_path: Path) -> None:
    """plot() draws bars for every dataset on a given or new axes."""
    import matplotlib

    matplotlib.use("Agg")
    res = cbalab.solve(cbalab.generate("cost", jobs=10, datasets=4, seed=2), "cba")
    ax = res.plot()
    assert len(ax.patches) == 2 * 4
    ax.figure.savefig(tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_facade_works_beside_a_users_models_package(tmp_path: Path) -> None:
    """From a folder with its own ``models/`` package, ``import cbalab`` solves (see tests/test_architecture.py)."""
    pkg = tmp_path / "models"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('the user package was imported')\n", encoding="utf-8")
    code = "import cbalab; r = cbalab.solve(cbalab.generate('cost', jobs=5, datasets=2), 'cba'); print(r.status)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == "optimal"


def test_regression_api_solve_infers_the_problem_and_words_its_errors() -> None:
    """cbalab.solve takes the problem from the instance; its errors name the argument, say the
    problem in words (no raw enum) and offer the closest method names."""
    cost = cbalab.generate("cost", jobs=8, datasets=2, seed=1)
    welfare = cbalab.generate("welfare", jobs=6, datasets=2, seed=1)
    assert cbalab.solve(cost, "milp").problem is cbalab.Problem.COST
    assert cbalab.solve(welfare, "milp").problem is cbalab.Problem.WELFARE
    with pytest.raises(cbalab.InstanceError) as info:
        cbalab.solve(cost, "autocba")
    assert str(info.value).startswith("method: 'autocba' is a welfare method, but the instance poses the cost")
    assert "Problem." not in str(info.value)
    with pytest.raises(cbalab.InstanceError, match="did you mean 'milp'"):
        cbalab.solve(cost, "mlip")
    with pytest.raises(cbalab.InstanceError, match=r"^problem: must be cost or welfare"):
        cbalab.solve(cost, "cba", problem="speed")
    both = cbalab.build_instance(
        [{"id": "a", "dataset": "x", "gpus": 1, "io_gbps": 0.1, "options": [dict(gpus=1, io_gbps=0.1, utility=1)]}],
        [{"id": "x", "size_gb": 10.0}],
        cache_gb=5.0,
        prices=(1.0, 0.01, 1.0),
    )
    with pytest.raises(cbalab.InstanceError, match=r"^problem: method 'lp' solves both problems"):
        cbalab.solve(both, "lp")
    assert cbalab.solve(both, "lp", problem="welfare").problem is cbalab.Problem.WELFARE


def test_regression_methods_table_explains_exact_and_names_where_each_is_optimal() -> None:
    """cbalab.methods() says what ``exact`` means and has an ``optimal_on`` column; CBA, not
    exact, is proven optimal on continuous P1, and every method claiming continuous P1 answers optimal there."""
    table = cbalab.methods()
    assert list(table.columns) == list(table.attrs["columns"])
    assert "HiGHS" in table.attrs["columns"]["exact"] and "gap 0" in table.attrs["columns"]["exact"]
    cba = table.set_index(["problem", "name"]).loc[("cost", "cba")]
    assert not cba["exact"] and "continuous P1" in cba["optimal_on"] and "Theorem 1" in cba["optimal_on"]
    claimed = table[(table["problem"] == "cost") & table["optimal_on"].str.startswith("continuous P1")]
    assert {"cba", "lp", "flow", "cba-keep"} <= set(claimed["name"])
    for seed in range(3):
        inst = cbalab.generate("cost", jobs=30, datasets=6, seed=seed)  # continuous, no bandwidth cap
        for name in claimed["name"]:
            assert cbalab.solve(inst, name).status is cbalab.Status.OPTIMAL, (seed, name)
    assert set(table[table["exact"]]["name"]) == {m.name for m in registry.select(exact=True)}


def test_regression_cli_methods_explains_exact(capsys: pytest.CaptureFixture[str]) -> None:
    """``cbalab methods`` marks the exact methods, says where each is optimal, fits 100 columns."""
    from cbalab.cli import main

    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "exact: solved by HiGHS at MIP gap 0" in out
    assert "optimal on: continuous P1 (Theorem 1)" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def _overprinted(fig: object) -> list[str]:
    """The visible tick labels of ``fig`` that overlap their neighbour once drawn."""
    fig.canvas.draw()  # type: ignore[attr-defined]
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    bad = []
    for ax in fig.axes:  # type: ignore[attr-defined]
        for axis, labels in ((ax.xaxis, ax.get_xticklabels()), (ax.yaxis, ax.get_yticklabels())):
            shown = [t for t in labels if axis.get_visible() and t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in shown]
            bad += [a.get_text() for a, b, c in zip(shown, boxes, boxes[1:]) if b.overlaps(c)]
    return bad


@pytest.mark.slow
@pytest.mark.parametrize(("jobs", "datasets"), [(24, 24), (200, 40), (10_000, 1_000)])
def test_regression_plot_stays_readable_at_size(jobs: int, datasets: int) -> None:
    """Result.plot at 24, 200 and 10,000 jobs: no tick label overprints another; past
    LABELLED_JOBS there is no per-job bar or name, and the aggregate panels still carry the allocation's numbers
    (the cached bytes shaded, every job's rate on the sorted line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cbalab.api import LABELLED_DATASETS, LABELLED_JOBS

    res = cbalab.solve(cbalab.generate("cost", jobs=jobs, datasets=datasets, seed=0), "cba")
    ax = res.plot()
    datasets_ax, jobs_ax = ax.figure.axes[0], ax.figure.axes[1]
    assert _overprinted(ax.figure) == []
    ds, jf = res.datasets_frame(), res.jobs_frame()
    if jobs <= LABELLED_JOBS:
        assert len(jobs_ax.patches) == 2 * jobs and len(jobs_ax.get_yticklabels()) == jobs
    else:
        assert len(jobs_ax.patches) == 0 and not any("(" in t.get_text() for t in jobs_ax.get_yticklabels())
        np.testing.assert_allclose(jobs_ax.lines[0].get_ydata(), np.sort(jf["rate_gbps"].to_numpy())[::-1])
    if datasets > LABELLED_DATASETS:
        read = ds[ds["demand_gbps"] > 0]
        shaded = sum(p.get_width() for p in datasets_ax.patches if hasattr(p, "get_width"))
        assert shaded == pytest.approx(float(np.minimum(read["cache_gb"], read["size_gb"]).sum()))
        assert len(datasets_ax.get_xticklabels()) < 20
    plt.close("all")


# ---------------------------------------------------------------- one replay specification


def test_regression_the_replay_spec_carries_every_simulate_option() -> None:
    """Every option of ``cbalab simulate`` sets a field of cbalab.ReplaySpec (the CLI only builds the spec): the
    ones mapped by name, the trace source, the price triple and the three negated flags."""
    import dataclasses
    from argparse import _SubParsersAction

    from cbalab import cli

    action = next(a for a in cli.parser()._actions if isinstance(a, _SubParsersAction))
    dests = {a.dest for a in action.choices["simulate"]._actions if a.dest != "help"}
    fields = {f.name for f in dataclasses.fields(cbalab.ReplaySpec)}
    set_otherwise = {"trace": "trace", "generate": "trace", "no_warmup": "warmup", "no_timing": "timing"}
    set_otherwise.update(no_progress="progress", price_gpu="prices", price_cache="prices", price_bandwidth="prices")
    assert set(cli.REPLAY_FIELDS) <= fields
    assert dests == set(cli.REPLAY_FIELDS) | set(set_otherwise)
    assert fields == set(cli.REPLAY_FIELDS) | set(set_otherwise.values())


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"policy": "cba", "cache_policy": "silod"}, "cache_policy"),
        ({"policy": "cba", "utility_mix": "linear"}, "utility_mix"),
        ({"policy": "cba", "budget_per_hour": 5.0}, "budget_per_hour"),
        ({"policy": "cba", "restart_delay_s": 30.0}, "restart_delay_s"),
        ({"policy": "cba", "time_limit": 5.0}, "time_limit"),
        ({"policy": "autocba", "problem": "welfare", "offline_optimum": True}, "offline_optimum"),
        ({"policy": "autocba", "problem": "welfare", "time_limit": 5.0}, "time_limit"),
        ({"policy": "autocba", "problem": "welfare", "utility_mix": "foo"}, "utility_mix"),
        ({"policy": "cba", "window": (5.0, 1.0)}, "window"),
        ({"policy": "cba", "restart_delay_s": -1.0}, "restart_delay_s"),
    ],
)
def test_regression_api_simulate_refuses_what_the_problem_would_ignore(settings: dict, field: str) -> None:
    """The facade, not the CLI, refuses a setting of the other problem (cbalab.simulate ignored
    ``cache_policy`` on the cost replay), naming the keyword, before any work."""
    with pytest.raises(cbalab.InstanceError) as info:
        cbalab.simulate(cbalab.ReplaySpec(trace=5, **settings))
    assert info.value.path == field


def test_regression_the_cli_is_the_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``cbalab simulate`` with window, period, offline optimum and its time limit writes the bytes of
    cbalab.simulate(ReplaySpec(...)) with the same settings: the command line adds nothing of its own."""
    from cbalab.cli import main

    argv = ["simulate", "--generate", "40", "--policy", "cba", "--window", "0:30000", "--period", "3600"]
    argv += ["--offline-optimum", "--time-limit", "60", "--no-warmup", "--no-timing", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    spec = cbalab.ReplaySpec(
        trace=40,
        window=(0.0, 30000.0),
        period_s=3600.0,
        offline_optimum=True,
        time_limit=60.0,
        warmup=False,
        timing=False,
        out=tmp_path / "api",
    )
    res = cbalab.simulate(spec)
    assert res.summary["offline_optimum"]["status"] == "optimal"
    for name in ("jobs.csv", "timeseries.csv", "summary.json"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes(), name
    with pytest.raises(TypeError, match="takes no other arguments"):
        cbalab.simulate(spec, "cba")


def test_regression_api_welfare_replay_takes_the_restart_delay_and_the_window() -> None:
    """The welfare replay's options that the API lacked: a restart delay pauses a job whose GPUs change, so the
    mean JCT grows; the window keeps the jobs submitted in it, with a note when it selects almost none."""
    base = {"trace": 30, "policy": "autocba", "problem": "welfare", "gpus": 32, "budget_per_hour": 100.0}
    base["timing"] = False
    calm = cbalab.simulate(cbalab.ReplaySpec(**base))
    paused = cbalab.simulate(cbalab.ReplaySpec(**base, restart_delay_s=3600.0))
    assert paused.summary["restart_delay_s"] == 3600.0 and paused.summary["restarts"] > 0
    assert paused.summary["mean_jct_s"] > calm.summary["mean_jct_s"]
    first = float(calm.jobs["submit_s"].min())
    few = cbalab.simulate(cbalab.ReplaySpec(**base, window=(first, first + 1.0)))
    assert few.summary["jobs"] < 10 and few.notes and few.notes[0][0] == "window"


def test_regression_compare_is_a_table_of_the_facade() -> None:
    """cbalab.compare: one row per registered method, scored by the referee; on continuous P1 CBA is optimal
    (Theorem 1), so its gap to the proven milp optimum is 0 and an exact method's bound is its IO cost."""
    inst = cbalab.generate("cost", jobs=30, datasets=6, seed=0)
    table = cbalab.compare(inst)
    assert list(table["method"]) == registry.names("cost") and table.attrs["problem"] == "cost"
    rows = table.set_index("method")
    assert rows.loc["cba", "vs_milp"] == pytest.approx(0.0, abs=1e-6)
    assert rows.loc["milp", "bound"] == pytest.approx(rows.loc["milp", "value"], rel=1e-6)
    io = cbalab.solve(inst, "io-only").to_dict()["cost_per_hour"]
    assert rows.loc["io-only", "value"] == pytest.approx(io["cache"] + io["bandwidth"], rel=1e-12)
    assert np.isnan(rows.loc["silod", "bound"])


# ------------------------------------------------ cbalab.simulate names its bad argument


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"trace": 5.0}, "trace"),
        ({"trace": "no/such/trace.csv"}, "trace"),
        ({"trace": 5, "seed": -1}, "seed"),
        ({"trace": 5, "gpus": 2**70}, "gpus"),
        ({"trace": 5, "prices": (1, 2)}, "prices"),
        ({"trace": 5, "prices": (1, 2, float("inf"))}, "prices[2]"),
        ({"trace": 5, "cache_gb": -1.0}, "cache_gb"),
        ({"trace": 5, "policy": "cbba"}, "policy"),
        ({"trace": 5, "problem": "speed"}, "problem"),
    ],
)
def test_regression_api_simulate_names_the_bad_argument(kw: dict, field: str) -> None:
    """cbalab.simulate raises the package's InstanceError naming the argument, not an error
    from deep inside numpy or the replay."""
    with pytest.raises(cbalab.InstanceError) as info:
        cbalab.simulate(**kw)
    assert info.value.path == field


def test_regression_api_simulate_takes_numpy_integers() -> None:
    """np.int64(5) is a whole number of jobs (and of GPUs), replayed like 5."""
    a = cbalab.simulate(np.int64(5), "cba", gpus=np.int64(16), seed=np.int64(1))
    b = cbalab.simulate(5, "cba", gpus=16, seed=1)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
