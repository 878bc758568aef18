"""io-cost: how much IO cost does CBA save on the Philly trace against the cheapest cache baseline?

Every run replays the Philly trace (the shipped copy, cbalab.experiments.data)
under one cost policy (experiments/simulate.py: FIFO on G GPUs, the policy
re-run at every job start and departure, cache warm-up on) and records the IO
cost (cache + remote bandwidth, $ over the replay), the total cost (GPUs too),
the mean and p99 job completion time and the stall time.

The design is factorial: :data:`PRICE_RATIOS` (p_c/p_b, p_b = 0.9
$/(GB/s)-h) x :data:`DATASET_COUNTS` (the 12 public datasets, or 2 or 4 copies
of each) x :data:`SKEWS` (Zipf popularity) x :data:`CACHES` (C in GB) x
:data:`CAPS` (none, or 1 GB/s, under which io-only and coordl stall at C = 500
GB) is 288 points, about 11 h on one core with 3 seeds; :func:`grid` runs a
documented fraction of it, 84 points:

* **core**: price x datasets x skew (4 x 3 x 4 = 48 points), C = 500 GB, no cap;
* **cache**: C = 250 and 2000 GB for every price x datasets, skew 1 (24);
* **cap**: B = 1 GB/s for every price x datasets, C = 500 GB, skew 1 (12).

With :data:`SEEDS` = 3 replicates (each its own job -> model/dataset
assignment from the sweep seed, the replicate, the skew and the dataset count:
common random numbers across the policies, prices, caches and caps of one
replicate) that is 1,512 priced replays.  The price-blind policies
(:data:`PRICE_BLIND`) are one run per point and replicate, replayed at unit
prices and priced by :func:`priced` at every ratio of its point, so the grid is
945 runs for 1,512 rows; 135 of them are one replay with another run
(:func:`same_run`: a C that holds every dataset).  ``--quick``: 200 jobs, 12
points (2 prices x 2 dataset counts x one level of each arm; a 0.05 GB/s cap,
which binds at that size), 2 replicates: 108 runs, 144 priced replays.

The verdicts on the seed paper's 20.5% are computed from this grid by the
rules of experiments/paper/rules.py; the per-point summary (:func:`summary`)
is the mean and min-max over the replicates of CBA's saving against the
cheapest baseline, every baseline a candidate: the measure is IO +
stall, the stall priced as the GPU time it idles (experiments/runs/io_cost_report.py),
so a policy that stalls is charged for it, never dropped.  Under a cap each
policy divides the link as its namesake would (the registry's ``on_cap``:
SiloD's rule for silod, proportional shares for the rest,
docs/methods/cache-baselines.md).

**Headline.**  The headline values (MaxSavingPct and its replicates' range,
MinSavingPct, PointsReachPaper, PointsReachPaperEverySeed, ReachWhere,
WorseReplays, ComparedPoints, MostOftenBest, the io-cost table) come only from
the uncapped points, where every policy faces the same constraint, C.  Under
the cap CBA's decision reads B while the baselines (SiloD's link division
aside) are blind to it, so the cap arm is reported apart (``Cap…`` values) and
never enters a headline.  The bill (BillSharePct, GpuIoRatioForOnePct/FivePct and
their ``Cap`` forms) is read at the point of the largest mean saving.
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
from cbalab.experiments.plotting import figure, paper_figure, save
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.runs.io_cost_report import (
    cap_and_bill,
    factor_conditions,
    level,
    percent,
    short,
    stall_cost,
    stall_priced,
)
from cbalab.experiments.workload import Workload

NAME = "io-cost"
#: The prefix of the paper's macros for this experiment (``\IoCostMaxSavingPct`` …, ``\ifHaveIoCost``).
PREFIX = "IoCost"

#: The cost policies replayed (CBA first; the rest are the cache baselines of algorithms/baselines).
POLICIES = CACHE_POLICIES
#: p_b in $/(GB/s)-h (experiments.workload.DEFAULT_PRICES); p_c = ratio x p_b.
PRICE_BANDWIDTH = 0.9
#: The factor levels of the factorial design (module docstring).
PRICE_RATIOS = (0.0004 / 0.9, 1e-3, 2e-3, 4e-3)
DATASET_COUNTS = (12, 24, 48)
SKEWS = (0.0, 1.0, 1.5, 2.0)
CACHES = (250.0, 500.0, 2000.0)
BINDING_CAP = 1.0
#: The cap of ``--quick`` (200 jobs need far less bandwidth than 20,000: 1 GB/s would not bind).
QUICK_CAP = 0.05
CAPS: tuple[float | None, ...] = (None, BINDING_CAP)
#: The level of C, skew and B at which the other arms hold them (the core arm's C and B, the side arms' skew).
CENTRE = {"cache_gb": 500.0, "skew": 1.0, "bandwidth_gbps": None}
#: Replicates per point (each a different job -> model/dataset assignment) and jobs replayed.
SEEDS = 3
TRACE_JOBS = 20_000
#: The factors of a grid point, and the columns that identify a point (the replicate and its seed aside).
FACTORS = ("price_ratio", "n_datasets", "skew", "cache_gb", "bandwidth_gbps")
POINT = ("trace_jobs", *FACTORS, "warmup")


def design(quick: bool) -> list[dict]:
    """The grid points (without policy and replicate): the core, cache and cap arms of the module docstring."""
    prices: tuple[float, ...] = (PRICE_RATIOS[0], PRICE_RATIOS[2]) if quick else PRICE_RATIOS
    counts: tuple[int, ...] = (12, 48) if quick else DATASET_COUNTS
    skews: tuple[float, ...] = (1.5,) if quick else SKEWS
    other_caches = tuple(c for c in CACHES if c != CENTRE["cache_gb"] and (not quick or c == max(CACHES)))
    cap = QUICK_CAP if quick else BINDING_CAP
    points = [{**CENTRE, "price_ratio": r, "n_datasets": n, "skew": k} for r in prices for n in counts for k in skews]
    points += [
        {**CENTRE, "price_ratio": r, "n_datasets": n, "cache_gb": c}
        for r in prices
        for n in counts
        for c in other_caches
    ]
    points += [{**CENTRE, "price_ratio": r, "n_datasets": n, "bandwidth_gbps": cap} for r in prices for n in counts]
    return points


def grid(quick: bool, seed: int, first_job: int = 0) -> list[dict]:
    """Every policy at every point of :func:`design` for each replicate (2 in ``--quick``, :data:`SEEDS` else).

    A price-blind policy (:data:`PRICE_BLIND`) has one run per point and replicate, its ``price_ratio`` None
    (:func:`priced` prices it).  Runs are ordered replicate, dataset count, skew, C and B outermost, then policy,
    then price, so that a worker's workload cache (:func:`_workload`) is hit.  ``first_job`` N > 0 replays the
    trace's jobs from position N (a confirmatory window); only then do rows carry ``first_job``.
    """
    jobs, seeds = (200, 2) if quick else (TRACE_JOBS, SEEDS)
    runs = []
    points = sorted(
        design(quick),
        key=lambda p: (p["n_datasets"], p["skew"], p["cache_gb"], p["bandwidth_gbps"] or 0.0, p["price_ratio"]),
    )
    for replicate in range(seeds):
        groups: dict[tuple, list[dict]] = {}
        for p in points:
            groups.setdefault(tuple(p[f] for f in FACTORS if f != "price_ratio"), []).append(p)
        for group in groups.values():
            for policy in POLICIES:
                blind = policy in PRICE_BLIND
                for p in group[:1] if blind else group:
                    assignment = derive_seed(seed, "assign", replicate, p["skew"], p["n_datasets"])
                    runs.append(
                        {
                            "policy": policy,
                            "trace_jobs": jobs,
                            **p,
                            "price_ratio": None if blind else p["price_ratio"],
                            "warmup": True,
                            "replicate": replicate,
                            "seed": assignment,
                            **({"first_job": first_job} if first_job else {}),
                        }
                    )
    return runs


@functools.lru_cache(maxsize=4)
def _workload(trace_jobs: int, skew: float, n_datasets: int, seed: int, first_job: int = 0) -> Workload:
    """``trace_jobs`` jobs of the shipped Philly trace from position ``first_job`` with models and datasets
    assigned (cached)."""
    from cbalab.experiments.data import data_path
    from cbalab.experiments.workload import assign, load_trace

    trace = load_trace(data_path("philly")).iloc[first_job : first_job + trace_jobs].reset_index(drop=True)
    trace.attrs["source"] = (
        f"philly ({trace_jobs} jobs from {first_job})" if first_job else f"philly (first {trace_jobs} jobs)"
    )
    return assign(trace, seed, skew=skew, n_datasets=n_datasets)


#: The cache policies whose decisions read neither p_c nor p_b (io-only buys no cache, cache-all fills C first
#: come first served, silod by IO density): one run per point and replicate at :data:`UNIT_PRICES`, priced by
#: :func:`priced` (test_io_cost_price_blind_policies_replay_the_same_at_every_price: the same replay at two
#: prices).  CBA, coordl and quiver compare p_c with p_b and are replayed at each price.
PRICE_BLIND = ("io-only", "cache-all", "silod")
#: p_c and p_b of a price-blind replay: 1 $ per GB-hour and per (GB/s)-hour, so its costs are its quantities.
UNIT_PRICES = (1.0, 1.0)
#: p_g of every replay, $/GPU-h.
PRICE_GPU = 2.5


def same_run(params: dict) -> tuple[tuple, str] | None:
    """The replay a run computes when its cache C holds every dataset (experiments/runner.py, ``shared_runs``):
    its parameters with C left out, and why; None when C is below Σ_k d_k.

    Every cost policy reads C only through min(C, Σ_k d_k) (docs/adr/0003-replays-computed-once.md): a
    cache that holds every dataset whole leaves nothing for a larger one to change.  So the runs of a point and
    replicate that differ only in such a C are one replay, run once at the smallest such C of the grid.
    """
    from cbalab.experiments.workload import datasets_total_gb

    total = datasets_total_gb(int(params["n_datasets"]))
    cache = float(params["cache_gb"])
    if cache < total:
        return None
    rest = tuple(sorted((k, v) for k, v in params.items() if k != "cache_gb"))
    reason = f"C = {cache:g} GB holds all {int(params['n_datasets'])} datasets ({total:.1f} GB)"
    return rest, reason


def run_one(params: dict) -> dict:
    """Replay the trace under one policy at one grid point and replicate; the summary's costs, JCTs and stall.

    A price-blind policy's run (``price_ratio`` None, :func:`grid`) is replayed at :data:`UNIT_PRICES`: its
    ``cache_cost_usd`` and ``bandwidth_cost_usd`` are then GB-hours and (GB/s)-hours, its price columns and
    ``io_cost_usd`` empty, until :func:`priced` prices them at each ratio.  ``gpu_cost_usd`` includes stalled
    jobs' stretched runs, ``stall_cost_usd`` (p_g Σ_j g_j stall_j, io_cost_report) its part; first_job: :func:`grid`.
    """
    policy = str(params["policy"])
    ratio = params["price_ratio"]
    blind = ratio is None
    if blind != (policy in PRICE_BLIND):
        raise ValueError(f"price_ratio: {ratio!r} for {policy}; a price-blind policy's run has none, another's one")
    prices = (PRICE_GPU, *UNIT_PRICES) if blind else (PRICE_GPU, float(ratio) * PRICE_BANDWIDTH, PRICE_BANDWIDTH)
    from cbalab.experiments.simulate import SimConfig, simulate

    cap = params["bandwidth_gbps"]
    cfg = SimConfig(
        policy=policy,
        cache_gb=float(params["cache_gb"]),
        bandwidth_gbps=math.inf if cap is None else float(cap),
        prices=prices,
        warmup=bool(params["warmup"]),
        seed=int(params["seed"]),
    )
    first = int(params.get("first_job", 0) or 0)
    workload = _workload(int(params["trace_jobs"]), float(params["skew"]), int(params["n_datasets"]), cfg.seed, first)
    start = time.perf_counter()
    result = simulate(workload, cfg)
    s = result.summary
    seconds, gpus = time.perf_counter() - start, cfg.gpus
    cost = s["cost"]
    cache, bandwidth = float(cost["cache"]), float(cost["bandwidth"])
    io = math.nan if blind else cache + bandwidth
    stall = stall_cost(result.jobs, prices[0])
    return {
        "jobs": int(s["jobs"]),
        "gpus": gpus,
        "price_gpu_usd_per_h": prices[0],
        "price_cache_usd_per_gb_h": math.nan if blind else prices[1],
        "price_bandwidth_usd_per_gbps_h": math.nan if blind else prices[2],
        "unit_price_replay": blind,
        "io_cost_usd": io,
        "cache_cost_usd": cache,
        "bandwidth_cost_usd": bandwidth,
        "gpu_cost_usd": float(cost["gpu"]),
        "total_cost_usd": float(cost["gpu"]) + io,
        "stall_cost_usd": stall,
        "io_plus_stall_usd": io + stall,
        "mean_jct_h": float(s["mean_jct_s"]) / 3600.0,
        "p99_jct_h": float(s["p99_jct_s"]) / 3600.0,
        "stall_h": float(s["stall_hours"]),
        "mean_queue_h": float(s["mean_queue_s"]) / 3600.0,
        "events": int(s["events"]),
        "infeasible_events": int(s["infeasible_events"]),
        "replay_seconds": seconds,
    }


def priced(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each price-blind run (``unit_price_replay``, no ``price_ratio``) repeated at every price
    ratio at which another policy ran at its point, its unit-price quantities priced there: p_c = ratio x p_b,
    p_b = :data:`PRICE_BANDWIDTH`, the same products as a run per price made.  Rows with a price pass as they are.
    """
    if "unit_price_replay" not in runs:
        return runs
    blind = as_bool(runs["unit_price_replay"].fillna(False)) & runs["price_ratio"].isna()
    if not blind.any():
        return runs
    # The cap's None is NaN in a table; pandas happens to match NaN keys, but the runs meet on the cap as a number.
    keys = [c for c in POINT if c not in ("price_ratio", "bandwidth_gbps")] + ["cap"]
    frame = runs.assign(cap=runs["bandwidth_gbps"].astype(float).fillna(math.inf))
    ratios = frame.loc[~blind, [*keys, "price_ratio"]].drop_duplicates()
    out = frame.loc[blind].drop(columns="price_ratio").merge(ratios, on=keys, how="inner")
    p_c = out["price_ratio"].astype(float) * PRICE_BANDWIDTH
    cache = out["cache_cost_usd"].astype(float) * p_c
    bandwidth = out["bandwidth_cost_usd"].astype(float) * PRICE_BANDWIDTH
    out = out.assign(
        price_cache_usd_per_gb_h=p_c,
        price_bandwidth_usd_per_gbps_h=PRICE_BANDWIDTH,
        cache_cost_usd=cache,
        bandwidth_cost_usd=bandwidth,
        io_cost_usd=cache + bandwidth,
        total_cost_usd=out["gpu_cost_usd"].astype(float) + (cache + bandwidth),
        **stall_priced(out, cache + bandwidth),
    )
    return pd.concat([runs.loc[~blind], out[runs.columns]], ignore_index=True)


#: A policy "feeds every job" in a replay when its jobs' stall time is at most this fraction of their job-hours
#: (jobs x mean JCT): reported (``<policy>_fed``, CapStalledReplays), never a reason to drop a policy, since
#: the comparison charges a stall its GPU time (io_cost_report).
STALL_TOLERANCE = 1e-4


def _frame(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`priced` ``runs`` with the cap as a number (inf for none), warm-up as booleans and each replay's
    stall share."""
    runs = priced(runs)
    return runs.assign(
        bandwidth_gbps=runs["bandwidth_gbps"].astype(float).fillna(math.inf),
        warmup=as_bool(runs["warmup"]),
        stall_share=runs["stall_h"] / (runs["jobs"] * runs["mean_jct_h"]),
    )


def compared_points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per grid point and replicate: every policy's IO + stall cost (column ``<policy>``, the IO cost
    where a run has no stall cost), IO cost (``<policy>_io``), bill (``<policy>_total``) and whether it fed every
    job (``<policy>_fed``, stall share at most :data:`STALL_TOLERANCE`); the cheapest baseline by IO + stall
    (``best``, ``best_cost``), every baseline a candidate, and CBA's saving over it (``saving``)."""
    frame = _frame(runs)
    measure = "io_plus_stall_usd" if "io_plus_stall_usd" in frame else "io_cost_usd"
    index = [*POINT, "replicate"]
    wide = frame.pivot_table(index=index, columns="policy", values=measure, aggfunc="first")
    if "cba" not in wide:
        raise ResultsUnusableError("io-cost has no cba rows")
    wide = wide.dropna(subset=["cba"])
    rivals = [p for p in POLICIES[1:] if p in wide]
    if not rivals:
        raise ResultsUnusableError("io-cost has no baseline rows")
    out = wide.reset_index()
    for value, suffix in (("stall_share", "_fed"), ("io_cost_usd", "_io"), ("total_cost_usd", "_total")):
        if value not in frame:  # results written before the bill columns have none
            continue
        table = frame.pivot_table(index=index, columns="policy", values=value, aggfunc="first").reindex_like(wide)
        for p in wide.columns:
            out[f"{p}{suffix}"] = (table[p] <= STALL_TOLERANCE).to_numpy() if suffix == "_fed" else table[p].to_numpy()
    costs = wide[rivals]
    some = costs.notna().any(axis=1).to_numpy()
    out["best"] = np.where(some, costs.fillna(np.inf).idxmin(axis=1).to_numpy(), "")
    out["best_cost"] = costs.min(axis=1).to_numpy()
    out["saving"] = np.where(some, 1.0 - out["cba"].to_numpy() / out["best_cost"].to_numpy(), np.nan)
    out.columns.name = None
    return out


#: The per-policy means of :func:`summary`: ``<policy>_io_usd`` (IO), ``<policy>_io_stall_usd`` (IO + stall),
#: ``<policy>_total_usd`` (the bill), from the columns of :func:`compared_points`.
_MEANS = (("io", "_io"), ("io_stall", ""), ("total", "_total"))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per grid point: every policy's mean IO cost, IO + stall and bill (:data:`_MEANS`), CBA's saving
    on IO + stall over the cheapest baseline, mean, min and max over the replicates (``mean_saving``,
    ``min_saving``, ``max_saving``), the baseline cheapest in most replicates (``cheapest``; ties to the first
    in :data:`POLICIES`), whether the mean reaches the seed paper's 20.5% (``reaches_20_5pct``) and whether the
    point is in the headline (``compared``: every replicate compared and no cap, :data:`HEADLINE`)."""
    pts = compared_points(runs)
    order = {p: i for i, p in enumerate(POLICIES)}
    rows = []
    for key, g in pts.groupby(list(POINT), sort=True, dropna=False):
        saving = g["saving"].astype(float)
        best = g.loc[saving.notna(), "best"]
        counts = best.value_counts()
        cheapest = min(counts.index[counts == counts.max()], key=lambda p: order[p]) if len(counts) else ""
        means = {f"{p}_{m}_usd": float(g[f"{p}{c}"].mean()) for p in POLICIES for m, c in _MEANS if f"{p}{c}" in g}
        rows.append(
            {
                **dict(zip(POINT, key)),
                **means,
                "replicates": len(g),
                "replicates_compared": int(saving.notna().sum()),
                "mean_saving": float(saving.mean()),
                "min_saving": float(saving.min()),
                "max_saving": float(saving.max()),
                "cheapest": cheapest,
                "cheapest_replicates": int(counts.max()) if len(counts) else 0,
            }
        )
    out = pd.DataFrame(rows)
    out["compared"] = (out["replicates_compared"] == out["replicates"]) & np.isinf(out["bandwidth_gbps"].astype(float))
    out["reaches_20_5pct"] = out["compared"] & (out["mean_saving"] >= PAPER_IO_SAVING)
    return out


def where(row: pd.Series, tex: bool = False) -> str:
    """A grid point in words: every factor's level."""
    return ", ".join(level(f, row[f], tex) for f in FACTORS)


def conditions(points: pd.DataFrame, holds: pd.Series, tex: bool = False) -> str:
    """The conditions under which ``holds`` (a boolean per row of ``points``) is found, over :data:`FACTORS`
    (the rule: io_cost_report.conditions)."""
    return factor_conditions(points, holds, FACTORS, tex)


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``points``: :func:`summary`, per grid point.  ``headline``: the largest mean saving and its point, the
    smallest saving of any replicate, the share of compared points whose mean reaches 20.5% and under which
    conditions (:func:`conditions`)."""
    pts = summary(runs)
    cmp = pts[pts["compared"]].reset_index(drop=True)
    if cmp.empty:
        return {"points": pts}
    top = cmp.loc[cmp["mean_saving"].idxmax()]
    low = cmp.loc[cmp["min_saving"].idxmin()]
    headline = pd.DataFrame(
        [
            {
                "points": len(pts),
                "compared_points": len(cmp),
                "max_mean_saving": float(top["mean_saving"]),
                "max_point_min_saving": float(top["min_saving"]),
                "max_point_max_saving": float(top["max_saving"]),
                "max_point": where(top),
                "max_point_cheapest": str(top["cheapest"]),
                "min_replicate_saving": float(low["min_saving"]),
                "min_point": where(low),
                "share_reaching_20_5pct": float(cmp["reaches_20_5pct"].mean()),
                "reaching_conditions": conditions(cmp, cmp["reaches_20_5pct"]),
            }
        ]
    )
    return {"points": pts, "headline": headline}


def _core(pts: pd.DataFrame) -> pd.DataFrame:
    """The points of the core arm: C = 500 GB, no cap (every price x datasets x skew)."""
    return pts[(pts["cache_gb"] == CENTRE["cache_gb"]) & np.isinf(pts["bandwidth_gbps"].astype(float))]


def _heatmaps(axes: list, pts: pd.DataFrame) -> pd.DataFrame:
    """Draw, one panel per skew, CBA's mean saving (%) over price x datasets at C = 500 GB without a cap, each
    cell labelled with its mean saving and the cheapest baseline; returns the data drawn."""
    core = _core(pts)
    prices = sorted(core["price_ratio"].unique())
    counts = sorted(core["n_datasets"].unique())
    skews = sorted(core["skew"].unique())
    data = []
    image = None
    for a, k in zip(axes, skews):
        part = core[core["skew"] == k]
        grid_ = np.full((len(counts), len(prices)), np.nan)
        for _, row in part.iterrows():
            i, j = counts.index(row["n_datasets"]), prices.index(row["price_ratio"])
            grid_[i, j] = 100 * row["mean_saving"]
            # A name broken at its hyphen ("cache-", "all"), so that it stays inside its cell at the paper's width.
            name = str(row["cheapest"]).replace("-", "-\n")
            text = f"{percent(100 * row['mean_saving'])}\n{name}"
            a.text(j, i, text, ha="center", va="center", fontsize=5)
            data.append(
                {
                    "skew": k,
                    "price_ratio": row["price_ratio"],
                    "n_datasets": row["n_datasets"],
                    "mean_saving": row["mean_saving"],
                    "cheapest": row["cheapest"],
                }
            )
        image = a.imshow(grid_, cmap="RdYlGn", vmin=-10, vmax=50, origin="lower", aspect="auto")
        a.set_xticks(range(len(prices)), [short(p) for p in prices])
        a.set_yticks(range(len(counts)), [f"{int(n)}" for n in counts])
        a.set_title(f"skew {k:g}")
        a.set_xlabel("$p_c/p_b$ (1/s)")
    if axes and image is not None:
        axes[0].set_ylabel("datasets")
        axes[-1].figure.colorbar(image, ax=axes, label="saving (%)", fraction=0.03, pad=0.01)
    return pd.DataFrame(data)


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """io_cost_grid: CBA's mean saving over the cheapest baseline, price x datasets, one panel per skew."""
    if runs.empty:
        return []
    pts = summary(runs)
    skews = _core(pts)["skew"].nunique()
    fig, ax = figure(skews, 1, width=2.9, height=2.6)
    fig.subplots_adjust(left=0.08, right=0.88, bottom=0.18, top=0.82, wspace=0.25)
    _heatmaps(list(ax[0]), pts)
    fig.suptitle("CBA's mean saving over the cheapest baseline (%), C = 500 GB, no cap", fontsize=8)
    return save(fig, outdir, "io_cost_grid", tight=False)


def paper_section(res: Results) -> Section:
    """The paper's io-cost section: CBA against the cheapest cache baseline over the factorial grid
    (docs/model.md §4, §6), on IO + stall with every policy compared; the headline from the uncapped points,
    the cap arm and the bill apart (module docstring)."""
    runs = res.runs
    need(runs, *POINT, "replicate", "policy", "jobs", "io_cost_usd", "mean_jct_h", "stall_h")
    s = Section(PREFIX)
    provenance(s, res)
    pts = summary(runs)
    cmp = pts[pts["compared"]].reset_index(drop=True)
    if cmp.empty:
        raise ResultsUnusableError("io-cost: no grid point where CBA and a baseline feed every job in every replicate")
    jobs = int(runs["trace_jobs"].min())
    s.number("Jobs", jobs, integer(jobs))
    s.number("Points", len(pts), integer(len(pts)))
    s.number("Seeds", int(pts["replicates"].max()), integer(int(pts["replicates"].max())))
    s.number("ComparedPoints", len(cmp), integer(len(cmp)))
    s.number("StallTolPct", STALL_TOLERANCE, sci(100 * STALL_TOLERANCE))
    for f, name in (
        ("price_ratio", "Prices"),
        ("n_datasets", "DatasetCounts"),
        ("skew", "Skews"),
        ("cache_gb", "Caches"),
    ):
        levels = sorted(pts[f].astype(float).unique())
        s.number(name, len(levels), integer(len(levels)))
    caps = sorted(c for c in pts["bandwidth_gbps"].astype(float).unique() if math.isfinite(c))
    if caps:
        s.number("Cap", caps[0], fixed(caps[0], 1))
    top = cmp.loc[cmp["mean_saving"].idxmax()]
    s.number("MaxSavingPct", float(top["mean_saving"]), pct(float(top["mean_saving"])))
    s.number("MaxSavingLowPct", float(top["min_saving"]), pct(float(top["min_saving"])))
    s.number("MaxSavingHighPct", float(top["max_saving"]), pct(float(top["max_saving"])))
    s.word("MaxSavingRival", str(top["cheapest"]))
    s.number("MaxSavingWhere", math.nan, where(top, tex=True))
    s.values["max_where"] = where(top)
    low = cmp.loc[cmp["min_saving"].idxmin()]
    s.number("MinSavingPct", float(low["min_saving"]), pct(float(low["min_saving"]), 2))
    s.number("MinSavingWhere", math.nan, where(low, tex=True))
    s.values["min_where"] = where(low)
    reach = cmp["reaches_20_5pct"]
    robust = cmp["min_saving"] >= PAPER_IO_SAVING
    s.number("PointsReachPaper", int(reach.sum()), integer(int(reach.sum())))
    s.number("ShareReachPaperPct", float(reach.mean()), pct(float(reach.mean())))
    s.number("PointsReachPaperEverySeed", int(robust.sum()), integer(int(robust.sum())))
    s.number("ReachWhere", math.nan, conditions(cmp, reach, tex=True))
    s.values["reach_where"] = conditions(cmp, reach)
    s.values["robust_where"] = conditions(cmp, robust)
    per_replicate = compared_points(runs).dropna(subset=["saving"])
    capped_reps = ~np.isinf(per_replicate["bandwidth_gbps"].astype(float))
    per_replicate, cap_reps = per_replicate[~capped_reps], per_replicate[capped_reps]
    worse = per_replicate["saving"] < -ZERO_GAP
    s.number("WorseReplays", int(worse.sum()), integer(int(worse.sum())))
    s.number("Replays", len(per_replicate), integer(len(per_replicate)))
    worse_pts = cmp["min_saving"] < -ZERO_GAP
    s.values["never_worse_where"] = conditions(cmp, ~worse_pts)
    counts = cmp["cheapest"].value_counts()
    s.word("MostOftenBest", str(counts.index[0]))
    s.number("MostOftenBestPoints", int(counts.iloc[0]), integer(int(counts.iloc[0])))
    frame = _frame(runs)
    capped = frame[np.isfinite(frame["bandwidth_gbps"])]
    if len(capped):
        stalled = capped[capped["stall_share"] > STALL_TOLERANCE]
        s.number("CapStalledReplays", len(stalled), integer(len(stalled)))
        s.number("CapReplays", len(capped), integer(len(capped)))
        s.number(
            "CapCbaStalled", int((stalled["policy"] == "cba").sum()), integer(int((stalled["policy"] == "cba").sum()))
        )
    cap_and_bill(s, pts, cap_reps, top, where, (PRICE_GPU, PRICE_BANDWIDTH))

    rows = []
    for f in FACTORS:
        for v in sorted(cmp[f].astype(float).unique()):
            g = cmp[cmp[f].astype(float) == v]
            if len(g) == len(cmp):
                continue
            rows.append(
                [
                    level(f, v, tex=True),
                    integer(len(g)),
                    pct(float(g["mean_saving"].mean())),
                    pct(float(g["mean_saving"].max())),
                    pct(float(g["min_saving"].min()), 2),
                    integer(int(g["reaches_20_5pct"].sum())),
                    tex_escape(str(g["cheapest"].value_counts().index[0])),
                ]
            )
    s.table(
        "io-cost",
        booktabs(
            ["level", "points", "mean \\%", "max mean \\%", "min \\%", "$\\geq$20.5\\%", "cheapest most often"],
            rows,
            "lrrrrrl",
        ),
    )
    fig, ax = paper_figure(_core(pts)["skew"].nunique(), 1, width=7.0, height=2.1)
    fig.subplots_adjust(left=0.07, right=0.9, bottom=0.2, top=0.9, wspace=0.2)
    data = _heatmaps(list(ax[0]), pts)
    s.figure("io-cost", fig, data)
    return s
