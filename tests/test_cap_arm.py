"""The io-cost experiment's fair cap arm, stall pricing, full comparison, bill and confirmatory window.

SiloD's division of a capped link and the proportional default (algorithms/registry.py ``on_cap``,
docs/methods/cache-baselines.md), the stall priced at p_g (experiments/runs/io_cost_report.py), every policy in
every compared point, the bill-share formula against a replay at scaled IO prices, and ``first_job``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cbalab.algorithms import registry
from cbalab.algorithms.baselines.silod import on_cap
from cbalab.experiments.replay import SimResult
from cbalab.experiments.runs import io_cost
from cbalab.experiments.runs.io_cost_report import bill_share, ratio_for_share, stall_cost
from cbalab.experiments.simulate import SimConfig, simulate


def test_silod_feeds_the_best_cached_datasets_first_within_b() -> None:
    """The hand example: miss ratios 0.5, 1, 0.5 (and a dataset nobody reads); B = 5 feeds dataset 0 in full,
    dataset 2 in part and dataset 1 not at all."""
    need, demand = np.array([4.0, 2.0, 3.0, 0.0]), np.array([8.0, 2.0, 6.0, 1.0])
    bandwidth, speed = on_cap(need, demand, 5.0 / 9.0, 5.0)
    assert bandwidth == pytest.approx([4.0, 0.0, 1.0, 0.0])
    assert speed == pytest.approx([1.0, 0.0, 1.0 / 3.0, 1.0])


def test_silod_never_exceeds_b() -> None:
    """On random needs above B the bandwidth sums to B (to rounding), never more, and speeds are in [0, 1]."""
    rng = np.random.default_rng(4)
    for _ in range(200):
        demand = rng.uniform(0.1, 5.0, 12)
        need = demand * rng.uniform(0.0, 1.0, 12) * (rng.random(12) > 0.2)
        B = float(need.sum()) * rng.uniform(0.01, 0.99)
        bandwidth, speed = on_cap(need, demand, B / need.sum(), B)
        assert bandwidth.sum() <= B * (1 + 1e-12)
        assert bandwidth.sum() == pytest.approx(B)
        assert ((speed >= 0) & (speed <= 1)).all()
        assert np.allclose(bandwidth, speed * need)


def test_the_others_keep_proportional_shares() -> None:
    """Every cache policy but silod divides a capped link proportionally, with the replay's old arithmetic."""
    for name in io_cost.POLICIES:
        rule = registry.get("cost", name).cap_rule()
        assert (rule is on_cap) == (name == "silod")
    need = np.array([3.0, 0.0, 1.0])
    bandwidth, speed = registry.proportional_share(need, need, 0.5, 2.0)
    assert bandwidth.tolist() == (need * 0.5).tolist() and speed.tolist() == [0.5, 1.0, 0.5]


def _tiny(policy: str, prices: tuple[float, float, float], cap: float = 0.01) -> SimResult:
    """A 60-job replay of the shipped trace under ``policy`` at ``prices`` with a binding cap."""
    workload = io_cost._workload(60, 1.0, 12, 7)
    cfg = SimConfig(policy=policy, cache_gb=500.0, bandwidth_gbps=cap, prices=prices, warmup=True, seed=7)
    return simulate(workload, cfg)


def test_stall_cost_is_p_g_times_stalled_gpu_hours() -> None:
    """stall_cost_usd = p_g Σ_j g_j stall_j on a tiny capped replay, inside the GPU cost (the stretched run)."""
    params = {"policy": "io-only", "trace_jobs": 60, "price_ratio": None, "n_datasets": 12, "skew": 1.0}
    params |= {"cache_gb": 500.0, "bandwidth_gbps": 0.01, "warmup": True, "seed": 7, "replicate": 0}
    row = io_cost.run_one(params)
    jobs = _tiny("io-only", (io_cost.PRICE_GPU, *io_cost.UNIT_PRICES)).jobs
    expected = io_cost.PRICE_GPU * float((jobs["gpus"] * jobs["stall_s"]).sum()) / 3600.0
    assert row["stall_h"] > 0 and row["stall_cost_usd"] == pytest.approx(expected)
    assert stall_cost(jobs, io_cost.PRICE_GPU) == pytest.approx(expected)
    assert row["stall_cost_usd"] < row["gpu_cost_usd"]
    # Priced at a ratio, IO + stall moves with the IO only: the stall is at p_g, the same at every ratio.
    priced = io_cost.priced(
        pd.DataFrame([{**params, **row}, {**params, **row, "policy": "cba", "price_ratio": 1e-3}])
    ).set_index("policy")
    assert priced.loc["io-only", "stall_cost_usd"] == row["stall_cost_usd"]
    assert priced.loc["io-only", "io_plus_stall_usd"] == pytest.approx(
        priced.loc["io-only", "io_cost_usd"] + row["stall_cost_usd"]
    )


def test_no_policy_is_dropped_from_a_compared_point() -> None:
    """A baseline that stalls stays in the comparison (charged its stall) and every policy's IO, IO + stall and
    bill are in the point's summary; a capped point is outside the headline."""
    rows = []
    for cap in (None, 0.5):
        point = {"trace_jobs": 10, "price_ratio": 1e-3, "n_datasets": 12, "skew": 1.0, "cache_gb": 500.0}
        point |= {"bandwidth_gbps": cap, "warmup": True, "replicate": 0, "jobs": 10, "mean_jct_h": 1.0}
        for policy, io, stall in (("cba", 80.0, 0.0), ("io-only", 100.0, 0.0), ("quiver", 10.0, 200.0)):
            costs = {"io_cost_usd": io, "stall_cost_usd": stall, "io_plus_stall_usd": io + stall}
            rows.append({**point, "policy": policy, **costs, "total_cost_usd": 1000.0 + io, "stall_h": stall / 10})
    pts = io_cost.compared_points(pd.DataFrame(rows))
    assert pts["saving"].notna().all() and (pts["best"] == "io-only").all()
    assert pts["saving"].tolist() == pytest.approx([0.2, 0.2])
    s = io_cost.summary(pd.DataFrame(rows))
    for p in ("cba", "io-only", "quiver"):
        assert {f"{p}_io_usd", f"{p}_io_stall_usd", f"{p}_total_usd"} <= set(s.columns)
    assert s["quiver_io_stall_usd"].tolist() == [210.0, 210.0]
    capped = np.isfinite(s["bandwidth_gbps"].astype(float))
    assert (s["compared"] == ~capped).all() and capped.sum() == 1


def test_bill_share_matches_a_replay_at_scaled_io_prices() -> None:
    """share(f) from the replays at the calibrated prices equals the share measured at p_c and p_b scaled by f;
    the closed-form ratio for a share gives that share back."""
    p_g, p_b, ratio, f = io_cost.PRICE_GPU, io_cost.PRICE_BANDWIDTH, 2e-3, 40.0

    def costs(policy: str, scale: float) -> tuple[float, float, float]:
        r = _tiny(policy, (p_g, scale * ratio * p_b, scale * p_b), cap=0.02)
        io = float(r.summary["cost"]["cache"] + r.summary["cost"]["bandwidth"])
        return io, stall_cost(r.jobs, p_g), float(r.summary["cost"]["gpu"])

    (io_a, s_a, _), (io_b, s_b, g_b) = costs("cba", 1.0), costs("quiver", 1.0)
    (io_af, s_af, _), (io_bf, s_bf, g_bf) = costs("cba", f), costs("quiver", f)
    assert (s_af, s_bf, g_bf) == pytest.approx((s_a, s_b, g_b))
    measured = ((io_bf + s_bf) - (io_af + s_af)) / (g_bf + io_bf)
    assert bill_share(io_b - io_a, s_b - s_a, g_b, io_b, f) == pytest.approx(measured, rel=1e-9)
    target = bill_share(io_b - io_a, s_b - s_a, g_b, io_b, f)
    gpu_io = ratio_for_share(target, io_b - io_a, s_b - s_a, g_b, io_b, p_g, p_b)
    assert gpu_io == pytest.approx(p_g / (f * p_b))


def test_first_job_selects_later_jobs() -> None:
    """``first_job`` N replays the trace from job N; the grid's rows carry it only when it is nonzero."""
    from cbalab.experiments.data import data_path
    from cbalab.experiments.workload import load_trace

    trace = load_trace(data_path("philly"))
    later = io_cost._workload(10, 1.0, 12, 7, 25)
    assert later.jobs["submit_s"].tolist() == pytest.approx(trace["submit_s"].iloc[25:35].tolist())
    assert io_cost._workload(10, 1.0, 12, 7).jobs["submit_s"].tolist() == pytest.approx(
        trace["submit_s"].iloc[:10].tolist()
    )
    assert all("first_job" not in r for r in io_cost.grid(True, 0))
    assert all(r["first_job"] == 40_000 for r in io_cost.grid(True, 1, first_job=40_000))
