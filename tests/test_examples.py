"""The named teaching instances of cbalab.examples say true things: each stated optimum is checked here.

Every number is the referee's (cbalab.models.evaluate through the registry), for CBA and for the exact
MILP (HiGHS at MIP gap 0), so a docstring of cbalab/examples.py that drifts from the code fails here.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cbalab
from cbalab import examples
from cbalab.algorithms import registry

REL = 1e-9


def _io(doc: dict) -> float:
    """IO cost (cache + bandwidth, $/h) of a scored result."""
    cost = doc["cost_per_hour"]
    return cost["cache"] + cost["bandwidth"]


def _solve(inst, problem: str, method: str) -> dict:
    doc, _ = registry.run(inst, problem, method)
    return doc


def test_toy_cluster_threshold_falls_between_the_densities() -> None:
    inst = examples.toy_cluster()
    assert inst.n_datasets == 3 and inst.n_jobs == 6
    assert inst.job_ids == ("gpt2-small", "gpt2-medium", "resnet50-a", "resnet50-b", "vit-b16", "slowfast")
    rho = inst.dataset_demand(inst.job_io_gbps) / inst.dataset_size_gb
    ratio = inst.price_cache / inst.price_bandwidth
    assert (rho > ratio).any() and (rho < ratio).any()


def test_toy_cluster_optimum_is_as_documented() -> None:
    inst = examples.toy_cluster()
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    assert cba["objective"] == pytest.approx(milp["objective"], rel=REL)
    assert _io(cba) == pytest.approx(0.887, rel=REL)
    assert cba["cache_gb"] == pytest.approx({"openwebtext": 0.0, "imagenet": 140.0, "kinetics": 160.0})
    assert _io(_solve(inst, "cost", "io-only")) == pytest.approx(1.557, rel=REL)
    fifo = _solve(inst, "cost", "cache-all")
    assert fifo["cache_gb"]["openwebtext"] == 40.0 and _io(fifo) > _io(cba)


def test_toy_cluster_large_cache_makes_the_price_blind_policy_pay() -> None:
    inst = examples.toy_cluster(cache_gb=700.0)
    cba, silod = _solve(inst, "cost", "cba"), _solve(inst, "cost", "silod")
    assert cba["cache_gb"]["openwebtext"] == 0.0 and silod["cache_gb"]["openwebtext"] == 40.0
    assert _io(silod) - _io(cba) == pytest.approx(40 * 0.001 - 0.007, rel=1e-6)


@pytest.mark.parametrize(("readers", "io_cost", "coco"), [(4, 0.04, 20.0), (1, 0.03, 0.0)])
def test_shared_dataset_sharing_justifies_the_cache(readers: int, io_cost: float, coco: float) -> None:
    inst = examples.shared_dataset(readers=readers)
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    assert _io(cba) == pytest.approx(io_cost, rel=REL)
    assert _io(milp) == pytest.approx(io_cost, rel=1e-7)
    assert cba["cache_gb"]["coco"] == coco
    per_job = _solve(inst, "cost", "coordl")
    assert per_job["cache_gb"]["coco"] == 0.0
    if readers > 1:
        assert _io(per_job) > _io(cba)


@pytest.mark.parametrize("ratio", [0.0, 5e-5, 2e-4, 2e-3, 5e-3, 2e-2])
def test_threshold_demo_caches_exactly_the_datasets_above_the_ratio(ratio: float) -> None:
    """Theorem 1 (proofs/cba_optimality.md) on threshold_demo: cache ρ_k > p_c/p_b whole, nothing else."""
    inst = examples.threshold_demo(ratio)
    rho = np.array(examples.THRESHOLD_DENSITIES)
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    np.testing.assert_array_equal(list(cba["cache_gb"].values()), np.where(rho > ratio, 100.0, 0.0))
    expected = 100.0 * rho.sum() - sum(100.0 * (r - ratio) for r in rho if r > ratio)
    assert _io(cba) == pytest.approx(expected, rel=REL)
    assert _io(milp) == pytest.approx(expected, rel=1e-7)
    assert expected <= 1.44 + 1e-12


def test_threshold_demo_default_cost() -> None:
    assert _io(_solve(examples.threshold_demo(), "cost", "cba")) == pytest.approx(0.54, rel=REL)


def test_elastic_toy_optimum_and_binding_budget() -> None:
    inst = examples.elastic_toy()
    milp = _solve(inst, "welfare", "milp")
    assert milp["status"] == "optimal"
    assert milp["welfare"] == pytest.approx(78.0, rel=1e-7)
    assert milp["gpus"] == {"resnet50": 4, "vit-b16": 4, "efficientnet": 1, "wav2vec2": 2, "conformer": 0}
    # The budget binds: less than one GPU's price (1 $/h) is left, and one more dollar buys more welfare.
    assert inst.budget_per_hour - 1.0 < milp["cost_per_hour"]["total"] <= inst.budget_per_hour * (1 + 1e-9)
    assert _solve(examples.elastic_toy(budget_per_hour=15.0), "welfare", "milp")["welfare"] > 78.0 + 1e-6
    assert sum(milp["gpus"].values()) < inst.gpus
    auto = _solve(inst, "welfare", "autocba")
    assert auto["welfare"] == pytest.approx(78.0, rel=1e-9)
    assert 78.0 <= auto["bound"] <= 78.75
    for name in ("gavel-tput", "optimus"):
        doc = _solve(inst, "welfare", name)
        assert doc["feasible"] and not doc.get("stall_factor") and not doc.get("time_share"), name
        assert doc["gpus"] == dict.fromkeys(doc["gpus"], 2), name
        assert doc["welfare"] == pytest.approx(69.0, rel=1e-9), name
    fair = _solve(inst, "welfare", "gavel-fair")
    assert fair["feasible"] and not fair.get("stall_factor")
    assert fair["gpus"] == dict.fromkeys(fair["gpus"], 4)
    assert fair["time_share"] == pytest.approx(dict.fromkeys(fair["gpus"], 11 / 20))
    assert fair["welfare"] == pytest.approx(64.9, rel=1e-9)
    assert _solve(inst, "welfare", "utility-greedy")["welfare"] == pytest.approx(78.0, rel=1e-9)


def test_elastic_toy_budget_moves_the_optimum() -> None:
    low = _solve(examples.elastic_toy(budget_per_hour=8.0), "welfare", "milp")
    high = _solve(examples.elastic_toy(budget_per_hour=1000.0), "welfare", "milp")
    assert low["status"] == high["status"] == "optimal"
    assert low["welfare"] < 78.0 < high["welfare"]
    assert sum(high["gpus"].values()) <= 12


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="readers"):
        examples.shared_dataset(readers=0)
    with pytest.raises(ValueError, match="price_ratio"):
        examples.threshold_demo(math.nan)


def test_examples_through_the_facade() -> None:
    """``import cbalab`` alone reaches the teaching instances, and solve infers their problem."""
    import cbalab

    assert "examples" in cbalab.__all__
    res = cbalab.solve(cbalab.examples.toy_cluster(), "cba")
    assert res.status == "optimal"
    frame = res.datasets_frame()
    assert frame.set_index("dataset")["cache_gb"].to_dict() == pytest.approx(
        {"openwebtext": 0.0, "imagenet": 140.0, "kinetics": 160.0}
    )
    assert cbalab.solve(cbalab.examples.elastic_toy(), "autocba").objective == pytest.approx(78.0, rel=1e-9)


# ---------------------------------------------------------------- Lab 2 and 3 instances (tutorials/)


def test_mccormick_toy_values_and_model_rows() -> None:
    """mccormick_toy: MILP 9 (cached), LP bound 9.64, AutoCBA 9 with certificate 9.64; the model's McCormick rows.

    Theorem (a) of proofs/mccormick_exact.md: in the solved MILP every w_o equals y_o · h_k.
    """
    inst = examples.mccormick_toy()
    milp = cbalab.solve(inst, "milp", problem="welfare")
    assert milp.objective == pytest.approx(9.0, abs=1e-9)
    assert milp.to_dict()["cache_gb"] == {"shared": pytest.approx(40.0)}
    assert cbalab.solve(inst, "lp", problem="welfare").bound == pytest.approx(9.64, abs=1e-6)
    auto = cbalab.solve(inst, "autocba")
    assert auto.objective == pytest.approx(9.0)
    assert auto.bound == pytest.approx(9.64, abs=1e-6)
    model = cbalab.build_model(inst, "welfare")
    for row in ("w_below_y", "w_below_h", "w_above", "one_option", "feed", "budget"):
        assert hasattr(model, row), row
    out = cbalab.solve_model(model)
    assert out.status == "optimal"
    assert out.objective == pytest.approx(9.0, abs=1e-9)
    assert model.h[0].value == pytest.approx(1.0)
    for o in model.O:
        assert model.w[o].value == pytest.approx(model.y[o].value * model.h[0].value, abs=1e-7)


@pytest.mark.parametrize("m", [2, 10, 100])
def test_greedy_trap_is_counterexample_1(m: int) -> None:
    """Counterexample 1 of proofs/autocba_guarantee.md: optimum 1.5 m (big alone); AutoCBA finds it."""
    inst = examples.greedy_trap(m)
    assert cbalab.solve(inst, "milp", problem="welfare").objective == pytest.approx(1.5 * m)
    auto = cbalab.solve(inst, "autocba")
    assert auto.objective == pytest.approx(1.5 * m)
    assert auto.to_dict()["gpus"] == {"small": 0, "big": m}


def test_greedy_trap_rejects_small_m() -> None:
    """m < 2 is no counterexample (the two jobs would fit together): a clear error."""
    with pytest.raises(ValueError, match="m must be >= 2"):
        examples.greedy_trap(1)


def test_small_trace_replays_and_cba_tracks_imagenet() -> None:
    """small_trace: valid generic-trace columns; every job finishes; CBA's ImageNet cache comes and goes."""
    trace = examples.small_trace()
    assert list(trace.columns) == ["submit_time_s", "duration_s", "gpus", "job_id", "model", "dataset"]
    assert trace["job_id"].is_unique and trace["submit_time_s"].is_monotonic_increasing
    res = cbalab.simulate(trace, "cba", gpus=32, cache_gb=200.0, prices=(2.5, 0.009, 9.0))
    assert res.jobs["end_s"].notna().all() and len(res.jobs) == len(trace)
    target = res.timeseries["cache_gb"].to_numpy()
    assert target.max() >= 147.0 and target.min() < 147.0
    assert isinstance(res.jobs, pd.DataFrame) and math.isfinite(res.summary["cost"]["total"])


# ---------------------------------------------------------------- the facade's teaching additions (cbalab/api.py)


def test_build_model_cost_solves_to_the_known_optimum() -> None:
    """build_model + solve_model give the P1 MILP's optimum of toy_cluster, the value CBA certifies (Theorem 1)."""
    model = cbalab.build_model(examples.toy_cluster(), "cost")
    out = cbalab.solve_model(model)
    assert out.status == "optimal"
    assert out.objective == pytest.approx(120.887, rel=1e-7)
    relaxed = cbalab.build_model(examples.toy_cluster(), "cost", relax=True)
    assert cbalab.solve_model(relaxed).objective == pytest.approx(120.887, rel=1e-7)


def test_simulate_bad_trace_row_names_line_and_column() -> None:
    """A DataFrame trace is validated like a file: a negative GPU count names the DataFrame's row (its index, not
    the line of a temporary file the user never sees) and the column."""
    trace = examples.small_trace()
    trace.loc[1, "gpus"] = -1
    with pytest.raises(cbalab.InstanceError, match=r"trace row 1, column 'gpus'"):
        cbalab.simulate(trace, "cba", gpus=32)


def test_simulate_unknown_policy_names_the_argument() -> None:
    """An unknown policy is a ValueError naming ``policy`` and the known cost methods."""
    with pytest.raises(cbalab.InstanceError, match=r"^policy: no such method.*cba"):
        cbalab.simulate(examples.small_trace(), "nope", gpus=32)


def test_simulate_generated_and_written(tmp_path: Path) -> None:
    """An int trace generates jobs; write() produces the three files with summary.json last naming the tables."""
    res = cbalab.simulate(30, "io-only", gpus=64, seed=1)
    assert len(res.jobs) == 30 and res.summary["policy"] == "io-only"
    out = res.write(tmp_path / "run")
    assert sorted(p.name for p in out.iterdir()) == ["jobs.csv", "summary.json", "timeseries.csv"]


def test_replay_plot_draws_every_policy_on_shared_panels() -> None:
    """ReplayResult.plot draws cache (filled, target), bandwidth and IO spend; a second call adds to its axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trace = examples.small_trace()
    a = cbalab.simulate(trace, "cba", gpus=32, cache_gb=200.0, prices=(2.5, 0.009, 9.0))
    b = cbalab.simulate(trace, "io-only", gpus=32, cache_gb=200.0, prices=(2.5, 0.009, 9.0))
    axes = a.plot()
    assert b.plot(axes) is axes
    cache_ax, bw_ax, cost_ax = axes
    assert len(cache_ax.get_lines()) == 4 and len(bw_ax.get_lines()) == 2 and len(cost_ax.get_lines()) == 2
    # The drawn spend is the IO part of the series (GPU spend left out).
    io = a.timeseries["cost_per_hour"] - a.timeseries["gpu_cost_per_hour"]
    np.testing.assert_allclose(cost_ax.get_lines()[0].get_ydata()[: len(io)], io.to_numpy())
    plt.close("all")


def test_result_plot_draws_datasets_and_jobs() -> None:
    """Result.plot: per dataset size/cache and demand/bandwidth bars; per job rate and bandwidth bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = cbalab.solve(examples.toy_cluster(), "cba")
    ax = res.plot()
    datasets_ax, jobs_ax = ax.figure.axes[0], ax.figure.axes[1]
    assert datasets_ax is ax and len(ax.patches) == 2 * 3
    assert len(jobs_ax.patches) == 2 * 6
    widths = [p.get_width() for p in jobs_ax.patches]
    np.testing.assert_allclose(widths[:6], res.jobs_frame()["rate_gbps"])
    np.testing.assert_allclose(widths[6:], res.jobs_frame()["bandwidth_gbps"])
    assert jobs_ax.get_yticklabels()[0].get_text() == "gpt2-small (openwebtext)"
    plt.close("all")


def test_simulate_refuses_a_bool_trace() -> None:
    """``True`` is no number of jobs: a ValueError naming ``trace``."""
    with pytest.raises(ValueError, match="trace: a trace file, a DataFrame or a number of jobs"):
        cbalab.simulate(True, "cba")


def test_simulate_welfare_is_the_elastic_replay() -> None:
    """problem="welfare" runs the elastic replay under the budget: spend never above it, AutoCBA beats the
    IO-unaware scheduler on welfare, and plot() draws the whole spend; an unknown welfare policy is named."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kw = {"gpus": 32, "cache_gb": 200.0, "prices": (2.5, 0.009, 9.0), "budget_per_hour": 60.0, "problem": "welfare"}
    auto = cbalab.simulate(examples.small_trace(), "autocba", **kw)
    naive = cbalab.simulate(examples.small_trace(), "gavel-tput", **kw)
    assert auto.summary["problem"] == "welfare"
    assert auto.timeseries["spend_per_hour"].max() <= 60.0 * (1 + 1e-9)
    assert auto.summary["welfare"]["horizon"] > naive.summary["welfare"]["horizon"]
    axes = auto.plot()
    assert axes[2].get_ylabel() == "spend ($/h)"
    np.testing.assert_allclose(axes[2].get_lines()[0].get_ydata(), auto.timeseries["spend_per_hour"].to_numpy())
    plt.close("all")
    with pytest.raises(cbalab.InstanceError, match="is a cost method: the cost replay runs it"):
        cbalab.simulate(examples.small_trace(), "cba", **kw)
