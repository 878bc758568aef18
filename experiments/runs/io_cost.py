"""io-cost: how much IO cost does CBA save on the Philly trace against every cache baseline?

Every run replays the Philly trace (the shipped copy, cbalab.experiments.data)
under one cost policy (experiments/simulate.py: FIFO on G GPUs, the policy
re-run at every job start and departure, cache warm-up or instant caches) and
records the IO cost (cache + remote bandwidth, $ over the replay), the total
cost (GPUs too), the mean and p99 job completion time and the stall time.

Sweeps, one factor at a time around a base point (price ratio p_c/p_b =
0.0004/0.9 $/GB-h per $/(GB/s)-h, cache C = 500 GB, Zipf skew 1, warm-up on,
no bandwidth cap):

* the price ratio p_c/p_b from 1e-6 /s (caching nearly free: the cache fills)
  to 10 /s (caching worthless: no dataset's IO density ρ_k = R_k/d_k, at most
  about 7 /s on this trace, passes Theorem 1's threshold), with warm-up on and
  off; p_b stays 0.9 $/(GB/s)-h and p_c = ratio × p_b;
* the cache capacity C; the dataset-popularity skew; a bandwidth cap B (the
  only setting where JCT and stall time differ between policies: uncapped,
  every policy feeds every job, and JCTs are the trace's own).

Every policy of a point replays the same workload: one model and dataset
assignment per skew, drawn with a seed derived from the sweep seed (common
random numbers, so differences are the policies', not the draw's).  The
full size replays the first 20,000 jobs of the trace (the whole trace takes
about 12 s per replay alone and 222 replays; 20,000 jobs keep the sweep
near a quarter of an hour on one busy core), plus every policy on the whole trace at the base point.
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.experiments.plotting import figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.workload import Workload

NAME = "io-cost"

#: The cost policies replayed (CBA first; the rest are the cache baselines of algorithms/baselines).
POLICIES = tuple(registry.cache_policies())
#: The IO-cost saving the seed paper reports for CBA (INFOCOM 2023, abstract: "up to 20.5%").
PAPER_SAVING = 0.205
#: p_b in $/(GB/s)-h (experiments.workload.DEFAULT_PRICES) and the base price ratio p_c/p_b.
PRICE_BANDWIDTH = 0.9
BASE_RATIO = 0.0004 / 0.9
BASE = {"cache_gb": 500.0, "skew": 1.0, "warmup": True, "bandwidth_gbps": None, "price_ratio": BASE_RATIO}
PHILLY_JOBS = 82_247


def grid(quick: bool, seed: int) -> list[dict]:
    """The runs: price sweep (warm-up on and off), cache, skew and bandwidth-cap sweeps, every policy at each."""
    if quick:
        jobs, ratios, caches, skews, caps, whole = 200, (1e-5, 1.0), (100.0,), (0.0,), (0.05,), False
    else:
        ratios = (1e-6, 1e-5, 1e-4, 2e-4, BASE_RATIO, 1e-3, 2e-3, 4e-3, 1e-2, 1e-1, 1.0, 10.0)
        jobs, whole = 20_000, True
        caches, skews, caps = (100.0, 250.0, 1000.0, 2000.0), (0.0, 0.5, 1.5, 2.0), (2.0, 1.0, 0.5, 0.1)
    points = [{**BASE, "price_ratio": r, "warmup": w} for r in ratios for w in ((True,) if quick else (True, False))]
    points += [{**BASE, "cache_gb": c} for c in caches]
    points += [{**BASE, "skew": s} for s in skews]
    points += [{**BASE, "bandwidth_gbps": b} for b in caps]
    points = [{"trace_jobs": jobs, **p} for p in points]
    if whole:
        points.append({"trace_jobs": PHILLY_JOBS, **BASE})
    runs = []
    for p in points:
        for policy in POLICIES:
            runs.append({"policy": policy, **p, "seed": derive_seed(seed, "assign", p["skew"])})
    return runs


@functools.lru_cache(maxsize=4)
def _workload(trace_jobs: int, skew: float, seed: int) -> Workload:
    """The first ``trace_jobs`` jobs of the shipped Philly trace with models and datasets assigned (cached)."""
    from cbalab.experiments.data import data_path
    from cbalab.experiments.workload import assign, load_trace

    trace = load_trace(data_path("philly")).iloc[:trace_jobs].reset_index(drop=True)
    trace.attrs["source"] = f"philly (first {trace_jobs} jobs)"
    return assign(trace, seed, skew=skew)


def run_one(params: dict) -> dict:
    """Replay the trace under one policy at one sweep point; the summary's costs, JCTs and stall time."""
    from cbalab.experiments.simulate import SimConfig, simulate

    workload = _workload(int(params["trace_jobs"]), float(params["skew"]), int(params["seed"]))
    cap = params["bandwidth_gbps"]
    cfg = SimConfig(
        policy=params["policy"],
        cache_gb=float(params["cache_gb"]),
        bandwidth_gbps=math.inf if cap is None else float(cap),
        prices=(2.5, float(params["price_ratio"]) * PRICE_BANDWIDTH, PRICE_BANDWIDTH),
        warmup=bool(params["warmup"]),
        seed=int(params["seed"]),
    )
    start = time.perf_counter()
    s = simulate(workload, cfg).summary
    seconds = time.perf_counter() - start
    return {
        "jobs": int(s["jobs"]),
        "gpus": cfg.gpus,
        "price_gpu_usd_per_h": cfg.prices[0],
        "price_cache_usd_per_gb_h": cfg.prices[1],
        "price_bandwidth_usd_per_gbps_h": cfg.prices[2],
        "io_cost_usd": float(s["cost"]["io"]),
        "cache_cost_usd": float(s["cost"]["cache"]),
        "bandwidth_cost_usd": float(s["cost"]["bandwidth"]),
        "gpu_cost_usd": float(s["cost"]["gpu"]),
        "total_cost_usd": float(s["cost"]["total"]),
        "mean_jct_h": float(s["mean_jct_s"]) / 3600.0,
        "p99_jct_h": float(s["p99_jct_s"]) / 3600.0,
        "stall_h": float(s["stall_hours"]),
        "mean_queue_h": float(s["mean_queue_s"]) / 3600.0,
        "events": int(s["events"]),
        "infeasible_events": int(s["infeasible_events"]),
        "replay_seconds": seconds,
    }


#: The columns that identify a sweep point (everything but the policy and the result).
POINT = ("trace_jobs", "price_ratio", "cache_gb", "skew", "warmup", "bandwidth_gbps")


def _points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per sweep point with CBA's IO cost and every baseline's, and the best baseline."""
    frame = runs.assign(bandwidth_gbps=runs["bandwidth_gbps"].fillna(math.inf))
    wide = frame.pivot_table(index=list(POINT), columns="policy", values="io_cost_usd", aggfunc="first")
    wide = wide.dropna(subset=["cba"])
    rivals = [p for p in POLICIES if p != "cba" and p in wide]
    out = wide.reset_index()
    out["best_competitor"] = wide[rivals].idxmin(axis=1).to_numpy()
    out["best_competitor_io_cost_usd"] = wide[rivals].min(axis=1).to_numpy()
    out["saving_vs_best"] = 1.0 - wide["cba"].to_numpy() / out["best_competitor_io_cost_usd"]
    return out.rename(columns={p: f"{p}_io_cost_usd" for p in POLICIES})


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``best_competitor``: per point, the cheapest baseline and CBA's saving over it.

    ``headline``: per baseline, the largest and smallest saving of CBA over the
    sweep and where the largest happens, and at how many points the saving
    reaches the paper's 20.5%.
    """
    pts = _points(runs)
    rows = []
    for rival in (p for p in POLICIES if p != "cba"):
        col = f"{rival}_io_cost_usd"
        if col not in pts:
            continue
        saving = 1.0 - pts["cba_io_cost_usd"] / pts[col]
        i = int(saving.idxmax())
        rows.append(
            {
                "competitor": rival,
                "max_saving": float(saving.max()),
                "min_saving": float(saving.min()),
                "points": len(pts),
                "points_at_or_above_20_5pct": int((saving >= PAPER_SAVING).sum()),
                "times_best_competitor": int((pts["best_competitor"] == rival).sum()),
                **{f"at_{c}": pts.loc[i, c] for c in POINT},
            }
        )
    headline = pd.DataFrame(rows)
    best = pts[[*POINT, "best_competitor", "best_competitor_io_cost_usd", "cba_io_cost_usd", "saving_vs_best"]]
    best = best.assign(reaches_paper_20_5pct=best["saving_vs_best"] >= PAPER_SAVING)
    best.columns.name = None
    return {"headline": headline, "best_competitor": best}


def _base(frame: pd.DataFrame, free: str, **fixed: object) -> pd.DataFrame:
    """Rows at the base point except for ``free`` (and the ``fixed`` overrides)."""
    want = {**BASE, **fixed}
    mask = pd.Series(True, index=frame.index)
    for col, value in want.items():
        if col == free:
            continue
        if value is None:
            mask &= frame[col].isna() | np.isinf(frame[col].astype(float))
        elif isinstance(value, float):
            mask &= np.isclose(frame[col].astype(float), value)
        else:
            mask &= frame[col] == value
    return frame[mask]


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """io_cost_price (IO cost and CBA's saving vs the price ratio) and io_cost_sweeps (cache, skew, bandwidth cap)."""
    if runs.empty:
        return []
    jobs = int(runs["trace_jobs"].min())
    runs = runs[runs["trace_jobs"] == jobs]
    paths: list[Path] = []
    fig, ax = figure(2, 1, width=4.6, height=3.4)
    for warm, dash in ((True, "-"), (False, ":")):
        part = _base(runs, "price_ratio", warmup=warm)
        for policy in POLICIES:
            g = part[part["policy"] == policy].sort_values("price_ratio")
            label = policy if warm else None
            ax[0, 0].plot(g["price_ratio"], g["io_cost_usd"], dash, label=label, ms=4, **style(policy))
    ax[0, 0].set(xscale="log", yscale="log", xlabel="price ratio p_c/p_b (1/s)", ylabel="IO cost over the replay ($)")
    ax[0, 0].set_title(f"Philly, first {jobs:,} jobs (solid: warm-up, dotted: instant)", fontsize=8)
    ax[0, 0].legend(fontsize=7)
    pts = _points(runs)
    for warm, dash in ((True, "-"), (False, ":")):
        g = _base(pts, "price_ratio", warmup=warm).sort_values("price_ratio")
        ax[0, 1].plot(
            g["price_ratio"],
            100 * g["saving_vs_best"],
            dash,
            label=f"warm-up {'on' if warm else 'off'}",
            **style("cba"),
        )
        for _, row in g.iterrows():
            ax[0, 1].annotate(
                row["best_competitor"],
                (row["price_ratio"], 100 * row["saving_vs_best"]),
                fontsize=6,
                textcoords="offset points",
                xytext=(2, 4 if warm else -9),
            )
    ax[0, 1].axhline(100 * PAPER_SAVING, color="k", lw=0.8, ls="--", label="paper: 20.5%")
    ax[0, 1].set(xscale="log", xlabel="price ratio p_c/p_b (1/s)", ylabel="CBA's saving vs best baseline (%)")
    ax[0, 1].legend(fontsize=7)
    paths += save(fig, outdir, "io_cost_price")

    fig, ax = figure(2, 2, width=4.2, height=3.1)
    panels = (
        (ax[0, 0], "cache_gb", "io_cost_usd", "cache capacity C (GB)", "IO cost ($)", True),
        (ax[0, 1], "skew", "io_cost_usd", "dataset popularity skew (Zipf)", "IO cost ($)", False),
        (ax[1, 0], "bandwidth_gbps", "total_cost_usd", "bandwidth cap B (GB/s)", "total cost ($)", False),
        (ax[1, 1], "bandwidth_gbps", "mean_jct_h", "bandwidth cap B (GB/s)", "mean JCT (h)", False),
    )
    for a, free, y, xlabel, ylabel, logx in panels:
        part = _base(runs, free)
        top = None
        if free == "bandwidth_gbps" and part["bandwidth_gbps"].notna().any():
            caps = sorted(part["bandwidth_gbps"].dropna().unique())
            top = 2.0 * float(caps[-1])
            a.set_xticks([*caps, top], [f"{c:g}" for c in caps] + ["none"])
        for policy in POLICIES:
            g = part[part["policy"] == policy].copy()
            if top is not None:
                g["bandwidth_gbps"] = g["bandwidth_gbps"].fillna(top)
            g = g.sort_values(free)
            a.plot(g[free], g[y], "-", label=policy, ms=4, **style(policy))
        a.set(xlabel=xlabel, ylabel=ylabel, yscale="log")
        if logx:
            a.set_xscale("log")
    ax[0, 0].legend(fontsize=7)
    paths += save(fig, outdir, "io_cost_sweeps")
    return paths
