"""dynamic: competitive ratios of the online cache policies against the offline optimum P3.

    cbalab experiment dynamic [--quick] [--seed 0] [--out results/]

Three kinds of run (one row each):

* ``ratio``: one window of ``jobs`` consecutive jobs (in submit order) of the
  Philly trace shipped with the package (cbalab.experiments.data), its models
  and datasets assigned with the run's seed, replayed with warm-up under every
  policy of :data:`POLICIES` at the default prices (``io_price_factor`` 1) or
  with the remote-IO price p_b × 10.  P3 is bounded over the schedule of the
  CBA replay (the same for every policy: proofs/dynamic_lower_bound.md,
  Lemma 1) by Lagrangian decomposition with the deterministic limits
  :data:`ITERATIONS` and :data:`CHUNK_PAIRS` (models/milp/p3_lagrange.py,
  Theorem 4 there); ``ratio_<policy>`` is the policy's replay IO cost divided
  by P3's certified lower bound, so it is an upper bound on the policy's
  competitive ratio on the window (Theorem 1 there).  ``p3_gap`` is the
  certified gap between that bound and the best schedule the decomposition
  settled; ``p3_at_limit`` flags a row that ended at its iteration limit
  without certifying.
* ``scale``: P3 alone on a window of ``jobs`` jobs with the same limits:
  status, gap, wall and CPU seconds.
* ``trace`` (full grid only): the whole trace replayed under every policy and
  P3 bounded by the trace-scale decomposition (``solve_trace``), so the
  ratios are ratios on the whole trace, not only on windows.

Sizes:

* ``--quick``: two 200-job windows × two prices and one 500-job scaling run;
* full (what ``grid(quick=False)`` gives, the size committed under
  paper/results/dynamic/): :data:`FULL_WINDOWS` windows of
  :data:`FULL_JOBS` jobs spread evenly over the trace × two prices,
  scaling runs on :data:`FULL_SCALE` jobs, and the whole-trace row.  P3's
  limits are the decomposition's iteration counts, not a wall-clock limit,
  so its bounds do not change from machine to machine.

The runner (experiments/runner.py) writes the rows, the ratio table
(:func:`tables`) and the figure (:func:`figures`).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from cbalab.experiments.data import data_path
from cbalab.experiments.paper.section import Results, ResultsUnusableError, Section, as_bool, need, provenance
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, sig, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, strips, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.simulate import SimConfig, replay_schedule, simulate
from cbalab.experiments.workload import DEFAULT_PRICES, Workload, assign, load_trace
from cbalab.models.milp.dynamic import Cluster
from cbalab.models.milp.p3_lagrange import solve_lagrange, solve_trace

NAME = "dynamic"
#: The prefix of the paper's macros for this experiment (``\DynamicWorstRatio`` …, ``\ifHaveDynamic``).
PREFIX = "Dynamic"

#: The grid's arms for ``--verify --record`` (experiments/verify.py): the kinds of run, sizes, prices and P3's
#: limits; the windows repeat the same code on other jobs of the trace.
ARMS = ("kind", "jobs", "io_price_factor", "iterations")
#: The policies compared; cba-keep is the warm-up-aware online policy (proofs/cba_keep_competitive.md).
POLICIES = ("cba", "silod", "quiver", "cache-all", "io-only", "cba-keep")
#: Remote-IO price factors: the default p_b and ten times it.
PRICE_FACTORS = (1.0, 10.0)
#: The full grid (module docstring): windows, jobs per window, scaling sizes.
FULL_WINDOWS = 6
FULL_JOBS = 1000
FULL_SCALE = (1000, 2000)
#: P3's deterministic limits on a window (models/milp/p3_lagrange.py, Theorem 4 of
#: proofs/dynamic_lower_bound.md): subgradient iterations and pairs per chunk; every dataset keeps its warm-up
#: rows.  No wall clock: the same window gives the same bound on any machine.  A row that ends at the iteration
#: limit without certifying its schedule has ``p3_at_limit`` True and its certified ``p3_gap``.
ITERATIONS = 8
CHUNK_PAIRS = 2000

_TRACES: dict[str, pd.DataFrame] = {}


def _trace() -> pd.DataFrame:
    path = str(data_path("philly"))
    if path not in _TRACES:
        _TRACES[path] = load_trace(path)
    return _TRACES[path]


def grid(quick: bool, seed: int) -> list[dict]:
    """One parameter dict per run: windows × IO prices (``ratio``), then P3 on growing windows (``scale``)."""
    n_jobs = 200 if quick else FULL_JOBS
    windows = 2 if quick else FULL_WINDOWS
    total = len(_trace())
    starts = np.linspace(0, total - n_jobs, windows + 2)[1:-1].astype(int)
    runs: list[dict] = []
    for i, start in enumerate(starts):
        for factor in PRICE_FACTORS:
            runs.append(
                {
                    "kind": "ratio",
                    "window": i,
                    "start_job": int(start),
                    "jobs": n_jobs,
                    "io_price_factor": factor,
                    "seed": derive_seed(seed, NAME, int(start), n_jobs),
                    "iterations": ITERATIONS,
                }
            )
    middle = int(starts[len(starts) // 2])
    for n in (500,) if quick else FULL_SCALE:
        runs.append(
            {
                "kind": "scale",
                "window": -1,
                "start_job": middle,
                "jobs": n,
                "io_price_factor": 1.0,
                "seed": derive_seed(seed, NAME, middle, n),
                "iterations": ITERATIONS,
            }
        )
    if not quick:
        # The whole trace: every policy's replay and P3 by the trace-scale decomposition (solve_trace).
        runs.append(
            {
                "kind": "trace",
                "window": -1,
                "start_job": 0,
                "jobs": total,
                "io_price_factor": 1.0,
                "seed": derive_seed(seed, NAME, 0, total),
                "iterations": 0,
            }
        )
    return runs


def _window(params: dict) -> Workload:
    start, n = int(params["start_job"]), int(params["jobs"])
    part = _trace().iloc[start : start + n].reset_index(drop=True)
    part.attrs["source"] = f"philly jobs {start}..{start + n - 1}"
    return assign(part, int(params["seed"]))


def run_one(params: dict) -> dict:
    """One run of :func:`grid`: every policy's replay IO cost, P3's bound and the ratios (module docstring)."""
    w = _window(params)
    prices = (DEFAULT_PRICES[0], DEFAULT_PRICES[1], DEFAULT_PRICES[2] * params["io_price_factor"])
    cfg = SimConfig(policy="cba", prices=prices, seed=int(params["seed"]))
    row: dict = {"price_cache": prices[1], "price_bandwidth": prices[2], "cache_gb": cfg.cache_gb, "gpus": cfg.gpus}
    policies = POLICIES if params["kind"] in ("ratio", "trace") else ("cba",)
    replays = {}
    for name in policies:
        replays[name] = simulate(w, SimConfig(**{**cfg.__dict__, "policy": name}))
        s = replays[name].summary
        row[f"io_{name}"] = s["cost"]["io"]
        row[f"stall_hours_{name}"] = s["stall_hours"]
    schedule = replay_schedule(w, replays["cba"].jobs)
    cluster = Cluster(cache_gb=cfg.cache_gb, price_cache=prices[1], price_bandwidth=prices[2])
    wall, cpu = time.perf_counter(), time.process_time()
    if params["kind"] == "trace":
        out = solve_trace(schedule, cluster)
    else:
        out = solve_lagrange(schedule, cluster, iterations=int(params["iterations"]), chunk_pairs=CHUNK_PAIRS)
    row.update(
        {
            "p3_status": out.status,
            "p3_cost_io": out.cost_io,
            "p3_bound": out.bound,
            "p3_gap": out.gap,
            "p3_iterations": out.iterations,
            "p3_at_limit": out.at_limit,
            "p3_slots": out.slots,
            "p3_message": out.message,
            "p3_seconds": time.perf_counter() - wall,
            "p3_cpu_seconds": time.process_time() - cpu,
        }
    )
    bound = out.bound if out.bound is not None and out.bound > 0 else math.nan
    for name in policies:
        row[f"ratio_{name}"] = row[f"io_{name}"] / bound
    return row


def ratio_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and max competitive-ratio bound per policy and IO price factor over the ``ratio`` windows."""
    ratios = runs[runs["kind"] == "ratio"]
    rows = []
    for factor, part in ratios.groupby("io_price_factor", sort=True):
        for name in POLICIES:
            values = part[f"ratio_{name}"].astype(float)
            rows.append(
                {
                    "policy": name,
                    "io_price_factor": float(factor),
                    "windows": int(values.notna().sum()),
                    "ratio_mean": float(values.mean()),
                    "ratio_max": float(values.max()),
                }
            )
    return pd.DataFrame(rows)


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``ratios``: :func:`ratio_table`; ``p3_scale``: P3's status, size and solve time on the scaling runs."""
    scale = runs[runs["kind"] == "scale"]
    cols = ["jobs", "p3_status", "p3_gap", "p3_at_limit", "p3_slots", "p3_seconds", "p3_cpu_seconds"]
    out = {"ratios": ratio_table(runs), "p3_scale": scale[[c for c in cols if c in scale]].reset_index(drop=True)}
    trace = runs[runs["kind"] == "trace"]
    if len(trace):
        out["trace"] = pd.DataFrame(
            [
                {"policy": name, "ratio": float(trace[f"ratio_{name}"].iloc[0]), "p3_gap": trace["p3_gap"].iloc[0]}
                for name in POLICIES
            ]
        )
    return out


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """dynamic: each policy's competitive-ratio bound per window (warm-up on), default vs 10× remote-IO price."""
    ratios = runs[runs["kind"] == "ratio"]
    factors = sorted(ratios["io_price_factor"].unique())
    fig, ax = figure(len(factors), 1, width=3.6, height=3.2)
    for j, factor in enumerate(factors):
        a = ax[0, j]
        part = ratios[ratios["io_price_factor"] == factor]
        for i, name in enumerate(POLICIES):
            values = part[f"ratio_{name}"].astype(float).to_numpy()
            jitter = i + np.linspace(-0.2, 0.2, max(values.size, 1))[: values.size]
            st = style(name)
            a.scatter(jitter, values, s=12, color=st["color"], marker=st["marker"], alpha=0.7)
            a.hlines(np.nanmean(values), i - 0.3, i + 0.3, color=st["color"], lw=2)
        a.axhline(1.0, color="0.6", lw=0.8)
        a.set_xticks(range(len(POLICIES)), POLICIES, rotation=35, ha="right", fontsize=7)
        a.set_yscale("log")
        a.yaxis.set_major_locator(LogLocator(subs=(1.0, 1.5, 2.0, 3.0, 5.0)))
        a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        a.yaxis.set_minor_formatter(NullFormatter())
        a.set_title(f"p_b × {factor:g} ({part['window'].nunique()} windows)", fontsize=8)
        if j == 0:
            a.set_ylabel("replay IO cost / P3 lower bound")
    return save(fig, outdir, "dynamic")


def paper_section(res: Results) -> Section:
    """The paper's dynamic section: each online policy's competitive ratio to P3 on Philly windows (model.md §6).

    A ``ratio`` row replays one window under every policy; ``ratio_<policy>`` is its IO cost over P3's
    certified lower bound, so an upper bound on its competitive ratio on that window
    (proofs/dynamic_lower_bound.md).  A ``scale`` row is P3 alone on a larger window (size and solve time).
    """
    runs = res.runs
    need(runs, "kind", "io_price_factor", "jobs")
    ratio_cols = [c for c in runs.columns if c.startswith("ratio_")]
    if not ratio_cols:
        raise ResultsUnusableError("runs.csv lacks the ratio_<policy> columns this generator reads")
    s = Section(PREFIX)
    provenance(s, res)
    rows_ = runs[runs["kind"] == "ratio"]
    if rows_.empty:
        raise ResultsUnusableError("dynamic has no ratio rows")
    long = rows_.melt(
        id_vars=[c for c in ("window", "io_price_factor", "jobs") if c in rows_],
        value_vars=ratio_cols,
        var_name="policy",
        value_name="ratio",
    ).dropna(subset=["ratio"])
    long["policy"] = long["policy"].str.removeprefix("ratio_")
    if long.empty:
        raise ResultsUnusableError("dynamic has no finite ratio (P3 gave no positive bound)")
    windows = int(rows_["window"].nunique()) if "window" in rows_ else len(rows_)
    s.number("Windows", windows, integer(windows))
    s.number("Cases", len(rows_), integer(len(rows_)))
    s.number("WindowJobs", int(rows_["jobs"].max()), integer(int(rows_["jobs"].max())))
    factors = sorted(rows_["io_price_factor"].unique())
    s.number("PriceFactors", len(factors), integer(len(factors)))
    s.number("BestRatio", float(long["ratio"].min()), fixed(float(long["ratio"].min()), 3))
    s.number("WorstRatio", float(long["ratio"].max()), fixed(float(long["ratio"].max()), 2))
    mean = long.groupby("policy")["ratio"].mean()
    s.word("BestPolicy", str(mean.idxmin()))
    s.number("BestPolicyMeanRatio", float(mean.min()), fixed(float(mean.min()), 3))
    s.word("WorstPolicy", str(mean.idxmax()))
    s.number("WorstPolicyMeanRatio", float(mean.max()), fixed(float(mean.max()), 2))
    for policy, name in (("cba", "Cba"), ("cba-keep", "Keep")):
        r = long[long["policy"] == policy]["ratio"]
        if len(r):
            s.number(f"{name}MeanRatio", float(r.mean()), fixed(float(r.mean()), 3))
            s.number(f"{name}WorstRatio", float(r.max()), fixed(float(r.max()), 3))
    if "p3_status" in rows_:
        optimal = int((rows_["p3_status"].astype(str) == "optimal").sum())
        s.number("OptimalWindows", optimal, integer(optimal))
    if "p3_at_limit" in rows_:
        at_limit = int(as_bool(rows_["p3_at_limit"]).sum())
        s.number("AtLimitCases", at_limit, integer(at_limit))
    stall_cols = [c for c in rows_.columns if c.startswith("stall_hours_")]
    if stall_cols:
        stalled = int((rows_[stall_cols].astype(float) > 0).any(axis=1).sum())
        s.number("StalledWindows", stalled, integer(stalled))
    scale = runs[runs["kind"] == "scale"]
    if len(scale) and "p3_seconds" in scale:
        top = scale.loc[scale["jobs"].idxmax()]
        s.number("ScaleMaxJobs", int(top["jobs"]), integer(int(top["jobs"])))
        s.number("ScaleSecondsAtMax", float(top["p3_seconds"]), sig(float(top["p3_seconds"])))
        s.word("ScaleStatusAtMax", str(top.get("p3_status", "")))
    trace = runs[runs["kind"] == "trace"]
    if len(trace) and "p3_gap" in trace:
        whole = trace.iloc[0]
        s.number("TraceJobs", int(whole["jobs"]), integer(int(whole["jobs"])))
        s.number("TraceGap", float(whole["p3_gap"]), pct(float(whole["p3_gap"])))
        for policy, name in (("cba", "Cba"), ("cba-keep", "Keep")):
            if f"ratio_{policy}" in trace:
                r = float(whole[f"ratio_{policy}"])
                s.number(f"Trace{name}Ratio", r, fixed(r, 3))

    table = []
    for (policy, factor), g in long.groupby(["policy", "io_price_factor"]):
        r = g["ratio"]
        table.append(
            [
                tex_escape(str(policy)),
                fixed(float(factor), 0),
                integer(len(r)),
                fixed(float(r.mean()), 3),
                fixed(float(r.median()), 3),
                fixed(float(r.max()), 3),
            ]
        )
    s.table(
        "dynamic",
        booktabs(["policy", "$p_b$ $\\times$", "windows", "mean", "median", "worst"], table, "lrrrrr"),
    )
    fig, ax = paper_figure(1, 1, width=3.4, height=2.4)
    data = []
    parts = []
    for factor in factors:
        part = long[long["io_price_factor"] == factor]
        parts.append((f"$p_b$ x {fixed(float(factor), 0)}", part["policy"], part["ratio"]))
        data += [{"series": f"pb x {factor:g}", "x": p, "y": r} for p, r in zip(part["policy"], part["ratio"])]
    strips(ax[0, 0], sorted(long["policy"].unique()), parts, 0.2, "IO cost / P3 lower bound")
    ax[0, 0].legend()
    fig.tight_layout()
    s.figure("dynamic", fig, pd.DataFrame(data))
    return s
