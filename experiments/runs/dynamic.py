"""dynamic: competitive ratios of the online cache policies against the offline optimum P3 (issue 11).

    cbalab experiment dynamic [--quick] [--seed 0] [--out results/]

Two kinds of run (one row each):

* ``ratio``: one window of ``jobs`` consecutive jobs (in submit order) of the
  Philly trace shipped with the package (cbalab.experiments.data), its models
  and datasets assigned with the run's seed, replayed with warm-up under every
  policy of :data:`POLICIES` at the default prices (``io_price_factor`` 1) or
  with the remote-IO price p_b × 10.  P3 is solved over the schedule of the
  CBA replay (the same for every policy: proofs/dynamic_lower_bound.md,
  Lemma 1); ``ratio_<policy>`` is the policy's replay IO cost divided by P3's
  certified lower bound, so it is an upper bound on the policy's competitive
  ratio on the window (Theorem 1 there).
* ``scale``: P3 alone on a window of ``jobs`` jobs with a time limit of
  ``time_limit_s``: status, LP size (rows, columns), wall and CPU seconds.

Sizes:

* ``--quick``: two 200-job windows × two prices and one 500-job scaling run
  (under a minute);
* full (what ``grid(quick=False)`` gives, the size committed under
  paper/results/dynamic/): :data:`FULL_WINDOWS` windows of
  :data:`FULL_JOBS` jobs spread evenly over the trace × two prices, and
  scaling runs on :data:`FULL_SCALE` jobs, P3 limited to
  :data:`TIME_LIMIT_S` seconds.  This is a middle size, chosen so that the
  sweep finishes in about ten minutes on two shared cores (9.5 min with
  ``--workers 2``); the first design had ten windows and scaling runs up to
  8,000 jobs with a 600 s limit.  Where P3's groups overfill C, P3 answers
  ``feasible`` with a certified bound below its cost, and the ratio is the
  looser bound ``io / p3_bound``.

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
from cbalab.experiments.paper.section import Results, ResultsUnusableError, Section, need, provenance
from cbalab.experiments.paper.text import booktabs, fixed, integer, sig, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, strips, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import DEFAULT_PRICES, Workload, assign, load_trace
from cbalab.models.milp.dynamic import Cluster, schedule_from_replay, solve_dynamic

NAME = "dynamic"
#: The prefix of the paper's macros for this experiment (``\DynamicWorstRatio`` …, ``\ifHaveDynamic``).
PREFIX = "Dynamic"

#: The policies compared; cba-keep is the warm-up-aware online policy (proofs/cba_keep_competitive.md).
POLICIES = ("cba", "silod", "quiver", "cache-all", "io-only", "cba-keep")
#: Remote-IO price factors: the default p_b and ten times it.
PRICE_FACTORS = (1.0, 10.0)
#: The full grid (module docstring): windows, jobs per window, scaling sizes.
FULL_WINDOWS = 6
FULL_JOBS = 1000
FULL_SCALE = (1000, 2000)
#: P3's time limit per solve (a limited solve is recorded as ``time_limit`` with its bound, never ``optimal``).
TIME_LIMIT_S = 300.0

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
                    "time_limit_s": TIME_LIMIT_S,
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
                "time_limit_s": TIME_LIMIT_S,
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
    policies = POLICIES if params["kind"] == "ratio" else ("cba",)
    replays = {}
    for name in policies:
        replays[name] = simulate(w, SimConfig(**{**cfg.__dict__, "policy": name}))
        s = replays[name].summary
        row[f"io_{name}"] = s["cost"]["io"]
        row[f"stall_hours_{name}"] = s["stall_hours"]
    jobs = replays["cba"].jobs
    schedule = schedule_from_replay(
        jobs["start_s"].to_numpy(),
        jobs["end_s"].to_numpy(),
        jobs["io_gbps"].to_numpy(),
        w.jobs["dataset_index"].to_numpy(),
        w.datasets["size_gb"].to_numpy(),
    )
    cluster = Cluster(cache_gb=cfg.cache_gb, price_cache=prices[1], price_bandwidth=prices[2])
    wall, cpu = time.perf_counter(), time.process_time()
    out = solve_dynamic(schedule, cluster, time_limit=float(params["time_limit_s"]))
    row.update(
        {
            "p3_status": out.status,
            "p3_cost_io": out.cost_io,
            "p3_bound": out.bound,
            "p3_slots": out.slots,
            "p3_rows": out.rows,
            "p3_cols": out.cols,
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
    cols = ["jobs", "p3_status", "p3_slots", "p3_rows", "p3_cols", "p3_seconds", "p3_cpu_seconds"]
    return {"ratios": ratio_table(runs), "p3_scale": scale[cols].reset_index(drop=True)}


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
