"""welfare: how much welfare does AutoCBA add under a budget, against every IO-unaware GPU scheduler × cache policy?

Static instances of the welfare problem P2 (docs/model.md §5) from
experiments.workload.generate_welfare (every job an Amdahl option table over
1, 2, 4, 8 GPUs, utility shapes by the swept mix, Zipf-shared datasets).  One
run is one method on one instance, scored by the referee (models/evaluate.py):

* ``autocba`` (algorithms/autocba.py), with its certificate: a proven upper
  bound on the optimum (proofs/autocba_certificate.md), so that every
  method's welfare is also reported as a fraction of that bound (a lower
  bound on its fraction of the optimum).  The exact MILP is not run here: at
  100 jobs HiGHS needs from a second to over ten minutes per instance (measured
  while sizing this sweep); the optimality experiment measures the gaps to the
  proven optimum on smaller instances;
* every GPU scheduler of algorithms/baselines — Gavel max-throughput, Gavel
  max-min fair, Optimus/Pollux marginal gain, each naive and "tuned" (its best
  split of the budget between GPUs and IO) — with every cache policy of
  the registry's cache policies (algorithms/registry.py) feeding its GPUs, named
  ``SCHEDULER[POLICY]``.

Sweeps: the budget (a fraction of what running every job at 8 GPUs fed by
remote IO alone would cost), the utility mix (all shapes mixed, or one shape),
and the IO prices (p_c and p_b both scaled by ``io_price_scale``: 1 is the
default catalog, 30 makes IO cost as much as a few GPUs per job).  The seed
paper reports AutoCBA "up to 2.27×" the welfare of its baselines; the tables
give the measured ratio AutoCBA / baseline per baseline, its largest value and
where.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms import registry
from cbalab.experiments.plotting import figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions

NAME = "welfare"

#: Every registered GPU scheduler and every cache policy (algorithms/registry.py).
SCHEDULERS = tuple(m.name for m in registry.select("welfare", kind=registry.Kind.GPU_SCHEDULER))
CACHE_POLICIES = tuple(registry.cache_policies())
METHODS = ("autocba", *(f"{s}[{p}]" for s in SCHEDULERS for p in CACHE_POLICIES))
#: The welfare ratio the seed paper reports for AutoCBA over its baselines (INFOCOM 2023: "up to 2.27×").
PAPER_RATIO = 2.27
#: The ratio figure's right edge: a baseline that starves (welfare near 0) has a ratio of up to 1e17.
RATIO_AXIS_MAX = 100.0
DEFAULT_PRICES = (2.5, 0.0004, 0.9)


def grid(quick: bool, seed: int) -> list[dict]:
    """Every method on every instance of (budget, utility mix, IO price scale, replicate)."""
    if quick:
        jobs, datasets, budgets, mixes, scales, reps = 10, 4, (0.2,), ("mixed",), (1.0,), 1
    else:
        jobs, datasets, reps = 100, 20, 2
        budgets = (0.05, 0.1, 0.2, 0.5, 1.0)
        mixes = ("mixed", "linear", "log", "sigmoid", "deadline")
        scales = (1.0, 30.0)
    runs = []
    for budget in budgets:
        for mix in mixes:
            for scale in scales:
                for rep in range(reps):
                    inst_seed = derive_seed(seed, "welfare", jobs, budget, mix, scale, rep)
                    for method in METHODS:
                        runs.append(
                            {
                                "method": method,
                                "jobs": jobs,
                                "datasets": datasets,
                                "budget_fraction": budget,
                                "utility_mix": mix,
                                "io_price_scale": scale,
                                "replicate": rep,
                                "seed": inst_seed,
                            }
                        )
    return runs


def instance(params: dict) -> Instance:
    """The run's instance (every method of one (budget, mix, scale, replicate) sees the same one)."""
    from cbalab.experiments.workload import generate_welfare

    s = float(params["io_price_scale"])
    prices = (DEFAULT_PRICES[0], DEFAULT_PRICES[1] * s, DEFAULT_PRICES[2] * s)
    return generate_welfare(
        int(params["jobs"]),
        int(params["datasets"]),
        int(params["seed"]),
        utility_mix=params["utility_mix"],
        budget_fraction=float(params["budget_fraction"]),
        prices=prices,
    )


def solve(inst: Instance, method: str) -> Allocation:
    """Method ``method`` of :data:`METHODS` on ``inst``: a registered method, or ``SCHEDULER[POLICY]``."""
    name, policy = method[:-1].split("[") if "[" in method else (method, None)
    return registry.get("welfare", name).function()(inst, SolveOptions(cache_policy=policy))


def run_one(params: dict) -> dict:
    """One method on one instance, scored by the referee: welfare, cost, budget use, stall, GPUs, solve time."""
    from cbalab.models.evaluate import evaluate

    inst = instance(params)
    start = time.perf_counter()
    alloc = solve(inst, params["method"])
    seconds = time.perf_counter() - start
    row = {"status": alloc.status, "budget_usd_per_h": float(inst.budget_per_hour), "solve_seconds": seconds}
    if not alloc.has_allocation:
        return {**row, "welfare": 0.0, "feasible": False}
    ev = evaluate(inst, alloc, "welfare")
    gpus = np.asarray(alloc.gpus)
    return {
        **row,
        "feasible": bool(ev.feasible),
        "welfare": float(ev.welfare) if ev.feasible else 0.0,
        "bound": None if alloc.bound is None else float(alloc.bound),
        "cost_usd_per_h": float(ev.cost_total),
        "io_cost_usd_per_h": float(ev.cost_io),
        "budget_use": float(ev.cost_total / inst.budget_per_hour) if inst.budget_per_hour > 0 else None,
        "jobs_running": int((gpus > 0).sum()),
        "gpus_used": int(gpus.sum()),
        "min_stall_factor": float(ev.stall_factor.min()) if inst.n_jobs else 1.0,
        "mean_stall_factor_running": float(ev.stall_factor[gpus > 0].mean()) if (gpus > 0).any() else 1.0,
    }


INSTANCE = ("jobs", "datasets", "budget_fraction", "utility_mix", "io_price_scale", "replicate", "seed")


def _ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (instance, method): welfare / AutoCBA's certified upper bound and AutoCBA's welfare / the method's."""
    auto = runs[runs["method"] == "autocba"][[*INSTANCE, "welfare", "bound"]]
    ref = auto.rename(columns={"welfare": "autocba", "bound": "upper_bound"})
    out = runs.drop(columns=["bound"], errors="ignore").merge(ref, on=list(INSTANCE), how="inner")
    out["of_bound"] = out["welfare"] / out["upper_bound"]
    positive = out["welfare"].where(out["welfare"] > 0)
    out["autocba_over"] = np.where(out["welfare"] > 0, out["autocba"] / positive, np.inf)
    return out


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``headline``: per method, AutoCBA / method (geometric mean, median, max and where), share of the upper bound.

    Ratios are over instances where the method's welfare is positive (those
    with welfare 0 are counted apart: AutoCBA's ratio is unbounded there).
    """
    r = _ratios(runs)
    rows = []
    for method, g in r.groupby("method", sort=False):
        pos = g[g["welfare"] > 0]
        row = {
            "method": method,
            "instances": len(g),
            "of_bound_mean": float(g["of_bound"].mean()),
            "of_bound_min": float(g["of_bound"].min()),
            "autocba_over_geomean": float(np.exp(np.log(pos["autocba_over"]).mean())) if len(pos) else None,
            "autocba_over_median": float(pos["autocba_over"].median()) if len(pos) else None,
            "autocba_over_max": float(pos["autocba_over"].max()) if len(pos) else None,
            "instances_zero_welfare": int((g["welfare"] <= 0).sum()),
            "instances_ratio_at_least_2_27": int((pos["autocba_over"] >= PAPER_RATIO).sum()),
        }
        if len(pos):
            at = pos.loc[pos["autocba_over"].idxmax()]
            row.update({f"max_at_{c}": at[c] for c in ("budget_fraction", "utility_mix", "io_price_scale")})
        rows.append(row)
    head = pd.DataFrame(rows)
    by = (
        r[r["method"].str.contains(r"\[", regex=True)]
        .assign(scheduler=lambda f: f["method"].str.split("[").str[0])
        .groupby(["budget_fraction", "io_price_scale", "scheduler"])["autocba_over"]
        .agg(lambda s: float(s[np.isfinite(s)].max()) if np.isfinite(s).any() else np.inf)
        .unstack("scheduler")
        .reset_index()
    )
    by.columns.name = None
    return {"headline": head, "max_ratio_by_budget": by}


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """welfare_budget: share of AutoCBA's certified upper bound vs budget; welfare_ratio: CDF of AutoCBA / baseline."""
    if runs.empty:
        return []
    r = _ratios(runs)
    paths: list[Path] = []
    scales = sorted(r["io_price_scale"].unique())
    fig, ax = figure(len(scales), 1, width=4.6, height=3.4)
    for a, scale in zip(ax[0], scales):
        part = r[r["io_price_scale"] == scale]
        for method, colour in (("autocba", style("cba")["color"]),):
            g = part[part["method"] == method].groupby("budget_fraction")["of_bound"].mean()
            a.plot(g.index, g.to_numpy(), "o-", color=colour, label="AutoCBA", lw=2)
        for sched, colour in ((s, style(s)["color"]) for s in SCHEDULERS):
            sub = part[part["method"].str.startswith(sched + "[")]
            best = sub.groupby(["budget_fraction", *INSTANCE[3:]])["of_bound"].max().groupby("budget_fraction")
            worst = sub.groupby(["budget_fraction", *INSTANCE[3:]])["of_bound"].min().groupby("budget_fraction")
            a.plot(best.mean().index, best.mean().to_numpy(), "-", color=colour, label=f"{sched} (best cache)")
            a.plot(worst.mean().index, worst.mean().to_numpy(), ":", color=colour)
        a.set(
            xscale="log",
            xlabel="budget (fraction of all jobs at 8 GPUs)",
            ylabel="welfare / certified upper bound (mean)",
        )
        a.set_title(f"IO prices × {scale:g} (dotted: worst cache policy)", fontsize=8)
    ax[0, 0].legend(fontsize=6)
    paths += save(fig, outdir, "welfare_budget")

    fig, ax = figure(1, 1, width=5.0, height=3.4)
    a = ax[0, 0]
    base = r[r["method"].str.contains(r"\[", regex=True)]
    for sched, colour in ((s, style(s)["color"]) for s in SCHEDULERS):
        v = np.sort(base[base["method"].str.startswith(sched + "[")]["autocba_over"].to_numpy())
        v = np.where(np.isfinite(v), np.minimum(v, RATIO_AXIS_MAX), np.nan)
        a.plot(v, np.arange(1, v.size + 1) / v.size, "-", color=colour, label=sched)
    a.axvline(PAPER_RATIO, color="k", ls="--", lw=0.8, label="paper: 2.27×")
    a.set(
        xscale="log",
        xlim=(0.9, RATIO_AXIS_MAX * 1.1),
        xlabel=f"AutoCBA welfare / baseline welfare (≥ {RATIO_AXIS_MAX:g} drawn at {RATIO_AXIS_MAX:g})",
        ylabel="fraction of instances × cache policies",
    )
    a.set_title("a curve below 1 at the right: baseline welfare 0 there", fontsize=8)
    a.legend(fontsize=7)
    paths += save(fig, outdir, "welfare_ratio")
    return paths
