"""The named teaching instances (cbalab/examples.py): each teaches what its docstring says, with its known optimum."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cbalab
from cbalab import examples


def _io_cost(res: cbalab.Result) -> float:
    cost = res.to_dict()["cost_per_hour"]
    return float(cost["cache"] + cost["bandwidth"])


def test_toy_cluster_threshold_rule_and_known_optimum() -> None:
    """Theorem 1 of proofs/cba_optimality.md on toy_cluster: cached exactly the datasets with p_b ρ_k > p_c.

    The known optimum 80.265 $/h is reached by CBA, the LP and the MILP, and beats io-only and cache-all.
    """
    inst = examples.toy_cluster()
    p_g, p_c, p_b = examples.TOY_PRICES
    cba = cbalab.solve(inst, "cba")
    frame = cba.datasets_frame()
    rho = frame["demand_gbps"] / frame["size_gb"]
    profitable = p_b * rho > p_c
    assert profitable.tolist() == [True, True, False]
    np.testing.assert_allclose(frame["cache_gb"], np.where(profitable, frame["size_gb"], 0.0))
    assert cba.status == cbalab.Status.OPTIMAL
    assert cba.objective == pytest.approx(80.265, rel=1e-12)
    assert cba.objective == pytest.approx(p_g * 30 + p_c * 165.0 + p_b * 0.09, rel=1e-12)
    for exact in ("lp", "milp"):
        assert cbalab.solve(inst, exact, problem="cost").objective == pytest.approx(80.265, rel=1e-7)
    for naive in ("io-only", "cache-all"):
        assert cbalab.solve(inst, naive).objective > cba.objective + 0.5
    # The decision is close: ImageNet sits within a factor 1.4 of the threshold, so the question is not trivial.
    assert 1.0 < rho.iloc[0] / (p_c / p_b) < 1.4


def test_toy_cluster_prices_move_the_threshold() -> None:
    """Raising p_c past p_b ρ_ImageNet drops ImageNet from the cache; lowering it caches LibriSpeech too."""
    p_b = examples.TOY_PRICES[2]
    rho_imagenet, rho_libri = 0.6 / 147.0, 0.09 / 59.3
    high = cbalab.solve(examples.toy_cluster(price_cache=1.01 * p_b * rho_imagenet), "cba").datasets_frame()
    assert high["cache_gb"].tolist() == [0.0, 18.0, 0.0]
    low = cbalab.solve(examples.toy_cluster(price_cache=0.99 * p_b * rho_libri), "cba").datasets_frame()
    assert low["cache_gb"].tolist() == [147.0, 18.0, 59.3]


def test_elastic_toy_budget_binds_and_known_values() -> None:
    """elastic_toy: MILP optimum 130.06 spends the whole budget; AutoCBA 127.74 ≤ OPT ≤ its certificate 131.63."""
    inst = examples.elastic_toy()
    milp = cbalab.solve(inst, "milp", problem="welfare")
    auto = cbalab.solve(inst, "autocba")
    assert milp.status == cbalab.Status.OPTIMAL
    assert milp.objective == pytest.approx(130.06, abs=1e-6)
    assert milp.to_dict()["cost_per_hour"]["total"] == pytest.approx(80.0, rel=1e-6)
    assert auto.objective == pytest.approx(127.74, abs=1e-6)
    assert auto.bound == pytest.approx(131.63, abs=5e-3)
    assert auto.objective <= milp.objective <= auto.bound
    # Every job at 8 GPUs alone would cost 6 × 8 × 2.5 = 120 $/h of GPUs: the budget binds.
    assert 6 * 8 * examples.TOY_PRICES[0] > inst.budget_per_hour
    assert cbalab.solve(inst, "gavel-tput").objective == 0.0


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
    assert out.objective == pytest.approx(80.265, rel=1e-7)
    relaxed = cbalab.build_model(examples.toy_cluster(), "cost", relax=True)
    assert cbalab.solve_model(relaxed).objective == pytest.approx(80.265, rel=1e-7)


def test_simulate_bad_trace_row_names_line_and_column() -> None:
    """A DataFrame trace is validated like a file: a negative GPU count names the CSV line and the column."""
    trace = examples.small_trace()
    trace.loc[1, "gpus"] = -1
    with pytest.raises(cbalab.InstanceError, match=r"line 3, column 'gpus'"):
        cbalab.simulate(trace, "cba", gpus=32)


def test_simulate_unknown_policy_names_the_argument() -> None:
    """An unknown policy is a ValueError naming ``policy`` and the known cost methods."""
    with pytest.raises(ValueError, match=r"policy: no method 'nope'.*cba"):
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
    """Result.plot: per dataset size/cache and demand/bandwidth bars; per job rate and bandwidth bars (issue 14, 4)."""
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
    assert jobs_ax.get_yticklabels()[0].get_text() == "resnet50 (imagenet-1k)"
    plt.close("all")


def test_simulate_refuses_a_bool_trace() -> None:
    """``True`` is no number of jobs: a ValueError naming ``trace``."""
    with pytest.raises(ValueError, match="trace: a trace file, a DataFrame or a number of jobs"):
        cbalab.simulate(True, "cba")
