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

from cbalab.experiments.methods import CACHE_POLICIES
from cbalab.experiments.paper.section import (
    PAPER_IO_SAVING,
    ZERO_GAP,
    Results,
    ResultsUnusableError,
    Section,
    as_bool,
    need,
    provenance,
)
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, sci, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.workload import Workload

NAME = "io-cost"
#: The prefix of the paper's macros for this experiment (``\IoCostMaxSavingPct`` …, ``\ifHaveIoCost``).
PREFIX = "IoCost"

#: The cost policies replayed (CBA first; the rest are the cache baselines of algorithms/baselines).
POLICIES = CACHE_POLICIES
#: p_b in $/(GB/s)-h (experiments.workload.DEFAULT_PRICES) and the base price ratio p_c/p_b.
PRICE_BANDWIDTH = 0.9
BASE_RATIO = 0.0004 / 0.9
BASE = {"cache_gb": 500.0, "skew": 1.0, "warmup": True, "bandwidth_gbps": None, "price_ratio": BASE_RATIO}
PHILLY_JOBS = 82_247


def grid(quick: bool, seed: int) -> list[dict]:
    """The runs: price sweep (warm-up on and off), cache, skew and bandwidth-cap sweeps, every policy at each."""
    ratios: tuple[float, ...]
    caches: tuple[float, ...]
    skews: tuple[float, ...]
    caps: tuple[float, ...]
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
                "points_at_or_above_20_5pct": int((saving >= PAPER_IO_SAVING).sum()),
                "times_best_competitor": int((pts["best_competitor"] == rival).sum()),
                **{f"at_{c}": pts.loc[i, c] for c in POINT},
            }
        )
    headline = pd.DataFrame(rows)
    best = pts[[*POINT, "best_competitor", "best_competitor_io_cost_usd", "cba_io_cost_usd", "saving_vs_best"]]
    best = best.assign(reaches_paper_20_5pct=best["saving_vs_best"] >= PAPER_IO_SAVING)
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
    ax[0, 1].axhline(100 * PAPER_IO_SAVING, color="k", lw=0.8, ls="--", label="paper: 20.5%")
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


#: A policy "feeds every job" at a point when its jobs' stall time is at most this fraction of their job-hours
#: (jobs x mean JCT).  IO costs are compared only between policies that feed every job: one that stalls buys less
#: IO and trains slower.
STALL_TOLERANCE = 1e-4


def compared_points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per sweep point: every policy's IO cost (column ``<policy>``), whether it fed every job
    (``<policy>_fed``) and its mean JCT (``<policy>_jct_h``); the cheapest baseline that fed every job
    (``best``, ``best_cost``) and CBA's saving over it (NaN when CBA or every baseline stalled)."""
    frame = runs.assign(
        bandwidth_gbps=runs["bandwidth_gbps"].astype(float).fillna(math.inf),
        warmup=as_bool(runs["warmup"]),
        stall_share=runs["stall_h"] / (runs["jobs"] * runs["mean_jct_h"]),
    )
    index = list(POINT)
    wide = frame.pivot_table(index=index, columns="policy", values="io_cost_usd", aggfunc="first")
    wide = wide.dropna(subset=["cba"])
    stall = frame.pivot_table(index=index, columns="policy", values="stall_share", aggfunc="first").reindex_like(wide)
    jct = frame.pivot_table(index=index, columns="policy", values="mean_jct_h", aggfunc="first").reindex_like(wide)
    rivals = [p for p in POLICIES[1:] if p in wide]
    if not rivals:
        raise ResultsUnusableError("io-cost has no baseline rows")
    fed = stall <= STALL_TOLERANCE
    fed_cost = wide.where(fed)
    out = wide.reset_index()
    for p in wide.columns:
        out[f"{p}_fed"] = fed[p].to_numpy()
        out[f"{p}_jct_h"] = jct[p].to_numpy()
    some = fed_cost[rivals].notna().any(axis=1).to_numpy()
    out["best"] = np.where(some, fed_cost[rivals].fillna(np.inf).idxmin(axis=1).to_numpy(), "")
    out["best_cost"] = fed_cost[rivals].min(axis=1).to_numpy()
    out["saving"] = np.where(
        out["cba_fed"].to_numpy() & some, 1.0 - out["cba"].to_numpy() / out["best_cost"].to_numpy(), np.nan
    )
    out.columns.name = None
    return out


def _where(row: pd.Series, base_ratio: float, tex: bool = True) -> str:
    """The sweep point of ``row`` in words (LaTeX, or plain text for claims.md): what differs from the base point."""
    parts = []
    ratio = float(row["price_ratio"])
    if not math.isclose(ratio, base_ratio, rel_tol=1e-9):
        parts.append(f"$p_c/p_b={sci(ratio)}$" if tex else f"p_c/p_b = {ratio:.3g}/s")
    if row["cache_gb"] != BASE["cache_gb"]:
        parts.append(f"$C={fixed(float(row['cache_gb']), 0)}$\\,GB" if tex else f"C = {float(row['cache_gb']):g} GB")
    if row["skew"] != BASE["skew"]:
        parts.append(f"skew {fixed(float(row['skew']), 1)}")
    if not bool(row["warmup"]):
        parts.append("no warm-up")
    cap = float(row["bandwidth_gbps"])
    if math.isfinite(cap):
        parts.append(f"$B={fixed(cap, 1)}$\\,GB/s" if tex else f"B = {cap:g} GB/s")
    return ", ".join(parts) or "the base point"


def paper_section(res: Results) -> Section:
    """The paper's io-cost section: CBA against every cache baseline on the Philly replay (docs/model.md §4, §6).

    IO costs are compared only between policies that feed every job (:func:`compared_points`).
    """
    runs = res.runs
    need(runs, *POINT, "policy", "jobs", "io_cost_usd", "total_cost_usd", "mean_jct_h", "stall_h")
    s = Section(PREFIX)
    provenance(s, res)
    jobs = int(runs["trace_jobs"].min())
    sweep = runs[runs["trace_jobs"] == jobs]
    pts = compared_points(sweep)
    ratios = sorted(pts["price_ratio"].unique())
    base_pts = _base(pts, "price_ratio")
    base_ratio = float(base_pts["price_ratio"].median()) if len(base_pts) else float(ratios[len(ratios) // 2])
    s.number("Jobs", jobs, integer(jobs))
    s.number("Points", len(pts), integer(len(pts)))
    s.number("RatioMin", min(ratios), sci(min(ratios)))
    s.number("RatioMax", max(ratios), sci(max(ratios)))
    s.number("BaseRatio", base_ratio, sci(base_ratio))
    s.number("StallTolPct", STALL_TOLERANCE, sci(100 * STALL_TOLERANCE))
    stalled = pts[~pts["cba_fed"].astype(bool)]
    s.number("CbaStalledPoints", len(stalled), integer(len(stalled)))
    if "infeasible_events" in sweep:
        events = int(sweep[sweep["policy"] == "cba"]["infeasible_events"].sum())
        s.number("CbaInfeasibleEvents", events, integer(events))
    pts = pts.dropna(subset=["saving"])
    s.number("ComparedPoints", len(pts), integer(len(pts)))
    if pts.empty:
        raise ResultsUnusableError("io-cost: no sweep point where CBA and a baseline both feed every job")
    i = int(pts["saving"].idxmax())
    s.number("MaxSavingPct", float(pts.loc[i, "saving"]), pct(float(pts.loc[i, "saving"])))
    s.word("MaxSavingRival", str(pts.loc[i, "best"]))
    s.number("MaxSavingWhere", math.nan, _where(pts.loc[i], base_ratio))
    s.values["max_where"] = _where(pts.loc[i], base_ratio, tex=False)
    j = int(pts["saving"].idxmin())
    s.number("MinSavingPct", float(pts.loc[j, "saving"]), pct(float(pts.loc[j, "saving"]), 2))
    worse = int((pts["saving"] < -ZERO_GAP).sum())
    if worse:
        s.number("WorsePoints", worse, integer(worse))
    s.word("MinSavingRival", str(pts.loc[j, "best"]))
    s.number("MinSavingWhere", math.nan, _where(pts.loc[j], base_ratio))
    s.values["min_where"] = _where(pts.loc[j], base_ratio, tex=False)
    reach = int((pts["saving"] >= PAPER_IO_SAVING).sum())
    s.number("PointsReachPaper", reach, integer(reach))
    naive = [p for p in ("io-only", "cache-all", "silod") if p in pts]
    if naive:
        savings = pd.DataFrame({p: (1.0 - pts["cba"] / pts[p]).where(pts[f"{p}_fed"].astype(bool)) for p in naive})
        s.number("NaiveMaxSavingPct", float(savings.max().max()), pct(float(savings.max().max())))
        s.word("NaiveMaxSavingRival", str(savings.max().idxmax()))
    counts = pts["best"].value_counts()
    s.word("MostOftenBest", str(counts.index[0]))
    s.number("MostOftenBestPoints", int(counts.iloc[0]), integer(int(counts.iloc[0])))
    base = base_pts[base_pts["warmup"] & base_pts["saving"].notna()]
    if len(base):
        b = base.iloc[0]
        s.number("BaseSavingPct", float(b["saving"]), pct(float(b["saving"])))
        s.word("BaseBest", str(b["best"]))
    whole = runs[runs["trace_jobs"] > jobs]
    whole_pts = compared_points(whole).dropna(subset=["saving"]) if len(whole) else pd.DataFrame()
    if len(whole_pts):
        wp = whole_pts.iloc[0]
        s.number("WholeJobs", int(wp["trace_jobs"]), integer(int(wp["trace_jobs"])))
        s.number("WholeSavingPct", float(wp["saving"]), pct(float(wp["saving"])))
        s.word("WholeBest", str(wp["best"]))
        io_only = float(wp["io-only"])
        s.number("WholeVsIoOnlyPct", 1 - float(wp["cba"]) / io_only, pct(1 - float(wp["cba"]) / io_only))
    stall = sweep.groupby("policy")["stall_h"].max()
    s.number("CbaMaxStallH", float(stall.get("cba", 0.0)), fixed(float(stall.get("cba", 0.0)), 1))
    capped = sweep[np.isfinite(sweep["bandwidth_gbps"].astype(float).fillna(math.inf))]
    if len(capped):
        tight = capped[capped["bandwidth_gbps"].astype(float) == capped["bandwidth_gbps"].astype(float).min()]
        jct = tight.set_index("policy")["mean_jct_h"]
        s.number("TightCap", float(tight["bandwidth_gbps"].iloc[0]), fixed(float(tight["bandwidth_gbps"].iloc[0]), 1))
        s.number("TightCbaJctH", float(jct["cba"]), fixed(float(jct["cba"]), 1))
        s.number("TightWorstJctH", float(jct.max()), fixed(float(jct.max()), 1))
        s.word("TightWorstJctPolicy", str(jct.idxmax()))
        s.number("TightBestJctH", float(jct.min()), fixed(float(jct.min()), 1))
        s.word("TightBestJctPolicy", str(jct.idxmin()))

    rows = []
    for rival in POLICIES[1:]:
        if rival not in pts:
            continue
        both = pts[pts[f"{rival}_fed"].astype(bool)]
        if both.empty:
            continue
        saving = 1.0 - both["cba"] / both[rival]
        k = int(saving.idxmax())
        rows.append(
            [
                tex_escape(rival),
                pct(float(saving.max())),
                pct(float(saving.min()), 2),
                _where(both.loc[k], base_ratio),
                integer(int((saving >= PAPER_IO_SAVING).sum())),
                integer(len(both)),
                integer(int((pts["best"] == rival).sum())),
            ]
        )
    s.table(
        "io-cost",
        booktabs(
            ["vs", "max \\%", "min \\%", "where the max is", "$\\geq$20.5\\%", "of", "cheapest"],
            rows,
            "lrrlrrr",
        ),
    )

    fig, ax = paper_figure(2, 1, width=7.0, height=2.4)
    data = []
    part = _base(pts, "price_ratio", warmup=True).sort_values("price_ratio")
    for policy in POLICIES:
        if policy in part:
            ax[0, 0].plot(
                part["price_ratio"],
                part[policy],
                "-",
                **style(policy),
                label=policy,
            )
            data += [
                {"panel": "a", "series": policy, "x": x, "y": y} for x, y in zip(part["price_ratio"], part[policy])
            ]
    ax[0, 0].set(
        xscale="log", yscale="log", xlabel="price ratio $p_c/p_b$ (1/s)", ylabel="IO cost over the replay (\\$)"
    )
    ax[0, 0].legend(ncol=2)
    for warm, dash, marker, colour in ((True, "-", "o", style("cba")["color"]), (False, "--", "s", "#7b1010")):
        g = _base(pts, "price_ratio", warmup=warm).sort_values("price_ratio")
        label = f"warm-up {'on' if warm else 'off'}"
        ax[0, 1].plot(
            g["price_ratio"], 100 * g["saving"], dash, marker=marker, mfc="none", ms=4, color=colour, label=label
        )
        data += [{"panel": "b", "series": label, "x": x, "y": y} for x, y in zip(g["price_ratio"], g["saving"])]
    ax[0, 1].axhline(100 * PAPER_IO_SAVING, color="k", lw=0.8, ls="--", label="seed paper: 20.5%")
    ax[0, 1].axhline(0.0, color="#999999", lw=0.6)
    ax[0, 1].set(xscale="log", xlabel="price ratio $p_c/p_b$ (1/s)", ylabel="CBA's saving vs best baseline (%)")
    ax[0, 1].legend()
    ax[0, 0].set_title("(a) IO cost per policy (warm-up on)")
    ax[0, 1].set_title("(b) CBA's saving over the cheapest baseline")
    fig.tight_layout()
    s.figure("io-cost", fig, pd.DataFrame(data))
    return s
