"""scaling: how does solve time grow with the number of jobs, and how much faster is CBA than a solver?

One run is one generated instance of J jobs (10 … 100,000; J/10 datasets), on
which every method is timed side by side in the same process (so the ratios
between them are measured in one run, under the same load):

* problem ``cost`` (P1, docs/model.md §4; a bandwidth cap that binds, see
  :func:`binding_instance`): CBA's closed form (algorithms/cba.py, best of
  ``repeats`` calls), the LP through Pyomo + HiGHS (models.milp.cost +
  models.solve; build + solve and solve alone) and the same LP compiled from
  its statement to a sparse matrix and handed to highspy directly
  (``cost_statement(…).compile()`` and models.solve.solve_arrays; build +
  solve and solve alone).  Both LPs are unscaled, as docs/model.md §4 writes
  P1, so that the two time one model; the objectives must agree with CBA's
  (``max_rel_diff``);
* problem ``welfare`` (P2, docs/model.md §5): AutoCBA (greedy, CBA feeding and
  its certificate) and, up to ``LP_MAX_JOBS`` jobs, the LP relaxation of P2
  through Pyomo + HiGHS.

The exact MILPs' growth is not part of this experiment: it is the benchmark
``cbalab bench milp-scale`` (experiments/runs/milp_scale.py), whose 1,000- and
3,000-job MILPs take hours.  (Since that module is installed with the package,
this experiment used to pick its grid up too and grew from 28 runs to 280.)
Every row has ``part`` = ``fast``.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms.cba import cba
from cbalab.experiments.paper.section import Results, ResultsUnusableError, Section, need, provenance
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, sci, sig
from cbalab.experiments.plotting import figure, paper_figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.workload import generate_cost, generate_welfare
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import Instance

NAME = "scaling"
#: The prefix of the paper's macros for this experiment (``\ScalingMaxJobs`` …, ``\ifHaveScaling``).
PREFIX = "Scaling"

#: The welfare LP through Pyomo is timed up to this many jobs (its model building grows fastest).
LP_MAX_JOBS = 10_000


def binding_instance(n_jobs: int, n_datasets: int, seed: int) -> Instance:
    """A generate_cost instance on which both capacities of P1 matter.

    The cache holds half of all dataset bytes and costs p_b times the median
    IO density, so that caching pays for only about half of the datasets and
    the uncapped optimum leaves C partly empty; the cap B then lies halfway
    between the least remote IO (C filled by density) and that optimum's
    remote IO, so it binds and CBA must cache past the price threshold.
    """
    inst = generate_cost(n_jobs, n_datasets, seed, cache_fraction=0.5)
    rho = inst.dataset_demand(inst.job_io_gbps) / inst.dataset_size_gb
    inst = inst.replace(price_cache=inst.price_bandwidth * float(np.median(rho[rho > 0])))
    uncapped_remote = float(cba(inst).arrays()[2].sum())
    full = cba(inst.replace(price_cache=0.0, price_bandwidth=1.0))  # caching is free: the least remote IO
    least = float(full.arrays()[2].sum())
    return inst.replace(bandwidth_gbps=0.5 * (least + uncapped_remote))


def best_of(fn: Callable[[], object], repeats: int) -> float:
    """The least wall time of ``repeats`` calls of ``fn`` (seconds; inf for none)."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def grid(quick: bool, seed: int) -> list[dict]:
    """Cost and welfare instances of 10 … 100k jobs (quick: 10 … 1,000)."""
    sizes = (10, 100, 1_000) if quick else (10, 100, 1_000, 10_000, 100_000)
    runs = []
    for problem in ("cost", "welfare"):
        for jobs in sizes:
            for rep in range(1 if quick else (3 if jobs <= 10_000 else 2)):
                runs.append(
                    {
                        "part": "fast",
                        "problem": problem,
                        "jobs": jobs,
                        "datasets": max(2, jobs // 10),
                        "replicate": rep,
                        "repeats": 5 if jobs <= 1_000 else (3 if jobs <= 10_000 else 1),
                        "seed": derive_seed(seed, "scaling", problem, jobs, rep),
                    }
                )
    return runs


def run_one(params: dict) -> dict:
    """Time every method of the run's problem on its instance (see the module docstring)."""
    jobs, datasets, seed, repeats = (int(params[k]) for k in ("jobs", "datasets", "seed", "repeats"))
    if params["problem"] == "cost":
        return _cost(binding_instance(jobs, datasets, seed), repeats)
    return _welfare(generate_welfare(jobs, datasets, seed), repeats)


@functools.cache
def _warm_up() -> None:
    """Solve one tiny instance of each kind once per process, so no timing includes an import or a plugin load."""
    from cbalab.algorithms.autocba import autocba
    from cbalab.models.solve import cost_lp, welfare_lp

    cost_lp(generate_cost(4, 2, 0))  # also the compile and highspy path of the direct LP
    small = generate_welfare(4, 2, 0)
    autocba(small)
    welfare_lp(small)


def _cost(inst: Instance, repeats: int) -> dict:
    from cbalab.models.milp.cost import build_cost_model, cost_statement
    from cbalab.models.solve import SolveOptions, solve_arrays, solve_model

    _warm_up()

    start = time.perf_counter()
    ours = cba(inst)
    t_cba = min(time.perf_counter() - start, best_of(lambda: cba(inst), repeats - 1))
    cba_cost = evaluate(inst, ours, "cost").cost_total
    start = time.perf_counter()
    model = build_cost_model(inst, relax=True)
    built = time.perf_counter()
    out = solve_model(model, SolveOptions())
    solved = time.perf_counter()
    began = time.perf_counter()
    arrays = cost_statement(inst, relax=True).compile()
    compiled = time.perf_counter() - began
    hs, _, run = solve_arrays(arrays)
    values = [v for v in (out.objective, hs.objective) if v is not None]
    diff = max((abs(v - cba_cost) / max(abs(cba_cost), 1e-12) for v in values), default=None)
    return {
        "cba_status": ours.status,
        "pyomo_lp_status": out.status,
        "highspy_status": run["model_status"],
        "cba_total_cost_usd_per_h": cba_cost,
        "pyomo_lp_objective_usd_per_h": out.objective,
        "highspy_objective_usd_per_h": hs.objective,
        "max_rel_diff": diff,
        "cba_seconds": t_cba,
        "pyomo_lp_seconds": solved - start,
        "pyomo_lp_solve_seconds": solved - built,
        "highspy_seconds": compiled + run["pass_seconds"] + run["solve_seconds"],
        "highspy_solve_seconds": run["solve_seconds"],
    }


def _welfare(inst: Instance, repeats: int) -> dict:
    from cbalab.algorithms.autocba import autocba

    _warm_up()
    start = time.perf_counter()
    alloc = autocba(inst)
    t_auto = min(time.perf_counter() - start, best_of(lambda: autocba(inst), repeats - 1))
    ev = evaluate(inst, alloc, "welfare")
    row = {
        "options": int(inst.option_gpus.size),
        "autocba_status": alloc.status,
        "autocba_feasible": bool(ev.feasible),
        "autocba_welfare": ev.welfare_score,
        "autocba_bound": None if alloc.bound is None else float(alloc.bound),
        "autocba_certified_gap": 1.0 - ev.welfare_score / alloc.bound if alloc.bound else None,
        "autocba_seconds": t_auto,
    }
    if inst.n_jobs <= LP_MAX_JOBS:
        from cbalab.models.solve import welfare_lp

        start = time.perf_counter()
        lp = welfare_lp(inst)
        row["pyomo_lp_seconds"] = time.perf_counter() - start
        row["pyomo_lp_status"] = lp.status
        row["pyomo_lp_bound"] = None if lp.bound is None else float(lp.bound)
    return row


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``ratios_cost``, ``ratios_welfare``: per size, each method's median time and its ratio to CBA's / AutoCBA's."""
    fast = runs[runs["part"] == "fast"] if "part" in runs else runs
    rows = []
    for (problem, jobs), g in fast.groupby(["problem", "jobs"]):
        ref = "cba_seconds" if problem == "cost" else "autocba_seconds"
        row = {"problem": problem, "jobs": int(jobs), "replicates": len(g)}
        for col in [c for c in g.columns if c.endswith("_seconds") and g[c].notna().any()]:
            if col == "run_seconds":
                continue
            row[f"median_{col}"] = float(g[col].median())
            if col != ref:
                row[f"{col.removesuffix('_seconds')}_over_{ref.removesuffix('_seconds')}"] = float(
                    (g[col] / g[ref]).median()
                )
        if problem == "cost":
            row["max_rel_diff"] = float(g["max_rel_diff"].max())
        rows.append(row)
    frame = pd.DataFrame(rows)
    return {
        f"ratios_{problem}": frame[frame["problem"] == problem].dropna(axis=1, how="all").reset_index(drop=True)
        for problem in ("cost", "welfare")
        if (frame["problem"] == problem).any()
    }


#: The timing columns the scaling figure draws, per problem: (column, label, style key of experiments/plotting.py).
SERIES = {
    "cost": (
        ("cba_seconds", "CBA", "cba"),
        ("pyomo_lp_seconds", "LP, Pyomo + HiGHS", "lp"),
        ("highspy_seconds", "LP, highspy direct", "highspy"),
        ("highspy_solve_seconds", "HiGHS run() alone", "milp"),
    ),
    "welfare": (("autocba_seconds", "AutoCBA", "autocba"), ("pyomo_lp_seconds", "LP relaxation, Pyomo", "lp")),
}


def median_times(fast: pd.DataFrame) -> Iterator[tuple[str, str, str, pd.Series]]:
    """(problem, label, style key, median wall seconds per job count) of every :data:`SERIES` line with data."""
    for problem, lines in SERIES.items():
        part = fast[fast["problem"] == problem]
        for col, label, key in lines:
            if col in part and not part[col].isna().all():
                yield problem, label, key, part.groupby("jobs")[col].median().dropna()


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """scaling: wall time vs jobs, log-log, cost (left) and welfare (right)."""
    if runs.empty:
        return []
    fast = runs[runs["part"] == "fast"]
    fig, ax = figure(2, 1, width=4.4, height=3.4)
    panels = dict(zip(SERIES, ax[0]))
    for problem, label, key, g in median_times(fast):
        panels[problem].plot(g.index, g.to_numpy(), "-", label=label, ms=4, **style(key))
    for problem, a in panels.items():
        a.set(xscale="log", yscale="log", xlabel="jobs", ylabel="wall time (s, median)")
        a.set_title(f"{problem} problem ({'P1' if problem == 'cost' else 'P2'})", fontsize=9)
        a.legend(fontsize=7)
    return save(fig, outdir, "scaling")


def paper_section(res: Results) -> Section:
    """The paper's scaling section: solve time against jobs, ratios measured in one run (docs/model.md §4, §5)."""
    runs = res.runs
    need(runs, "problem", "jobs", "cba_seconds", "highspy_seconds", "pyomo_lp_seconds", "autocba_seconds")
    fast = runs[runs["part"] == "fast"] if "part" in runs else runs
    s = Section(PREFIX)
    provenance(s, res)
    cost = fast[fast["problem"] == "cost"]
    wel = fast[fast["problem"] == "welfare"]
    if cost.empty or wel.empty:
        raise ResultsUnusableError("scaling lacks cost or welfare rows")
    top = int(cost["jobs"].max())
    s.number("MinJobs", int(cost["jobs"].min()), integer(int(cost["jobs"].min())))
    s.number("MaxJobs", top, integer(top))
    big = cost[cost["jobs"] == top]
    s.number("CbaMsAtMax", float(big["cba_seconds"].median()) * 1e3, sig(float(big["cba_seconds"].median()) * 1e3))
    hs = float((big["highspy_seconds"] / big["cba_seconds"]).median())
    py = float((big["pyomo_lp_seconds"] / big["cba_seconds"]).median())
    s.number("HighspyOverCbaAtMax", hs, integer(hs))
    s.number("PyomoOverCbaAtMax", py, integer(py))
    s.number("HighspySecondsAtMax", float(big["highspy_seconds"].median()), sig(float(big["highspy_seconds"].median())))
    s.number("PyomoSecondsAtMax", float(big["pyomo_lp_seconds"].median()), sig(float(big["pyomo_lp_seconds"].median())))
    ratio_all = (cost["highspy_seconds"] / cost["cba_seconds"]).groupby(cost["jobs"]).median()
    s.number("HighspyOverCbaMin", float(ratio_all.min()), integer(float(ratio_all.min())))
    rel = float(cost["max_rel_diff"].astype(float).max()) if "max_rel_diff" in cost else math.nan
    s.number("MaxRelDiff", rel, sci(rel))
    wtop = int(wel["jobs"].max())
    wbig = wel[wel["jobs"] == wtop]
    s.number("AutoMaxJobs", wtop, integer(wtop))
    s.number("AutoSecondsAtMax", float(wbig["autocba_seconds"].median()), sig(float(wbig["autocba_seconds"].median())))
    if "autocba_certified_gap" in wbig:
        cg = float(wbig["autocba_certified_gap"].astype(float).mean())
        s.number("AutoCertGapAtMaxPct", cg, pct(cg, 2))
    lp = wel.dropna(subset=["pyomo_lp_seconds"])
    if len(lp):
        ltop = int(lp["jobs"].max())
        lb = lp[lp["jobs"] == ltop]
        r = float((lb["pyomo_lp_seconds"] / lb["autocba_seconds"]).median())
        s.number("LpMaxJobs", ltop, integer(ltop))
        s.number("LpOverAutoAtMax", r, fixed(r, 1))

    rows = []
    for jobs, g in cost.groupby("jobs"):
        w = wel[wel["jobs"] == jobs]
        lpw = w["pyomo_lp_seconds"].dropna() if "pyomo_lp_seconds" in w else pd.Series([], dtype=float)
        rows.append(
            [
                integer(int(jobs)),
                sig(float(g["cba_seconds"].median()) * 1e3),
                integer(float((g["highspy_seconds"] / g["cba_seconds"]).median())),
                integer(float((g["pyomo_lp_seconds"] / g["cba_seconds"]).median())),
                sig(float(w["autocba_seconds"].median())) if len(w) else "--",
                fixed(float((w.loc[lpw.index, "pyomo_lp_seconds"] / w.loc[lpw.index, "autocba_seconds"]).median()), 1)
                if len(lpw)
                else "--",
            ]
        )
    s.table(
        "scaling",
        booktabs(
            ["jobs", "CBA ms", "highspy/CBA", "Pyomo/CBA", "AutoCBA s", "LP/AutoCBA"],
            rows,
            "rrrrrr",
        ),
    )
    fig, ax = paper_figure(2, 1, width=7.0, height=2.3)
    data = []
    panels = dict(zip(SERIES, ax[0]))
    for problem, label, key, g in median_times(fast):
        panels[problem].plot(g.index, g.to_numpy(), "o-", label=label, color=style(key)["color"])
        data += [{"panel": problem, "series": label, "x": x, "y": y} for x, y in zip(g.index, g.to_numpy())]
    for problem, a in panels.items():
        a.set(xscale="log", yscale="log", xlabel="jobs", ylabel="wall time (s, median)")
        a.set_title(f"({'a' if problem == 'cost' else 'b'}) {problem} problem ({'P1' if problem == 'cost' else 'P2'})")
        a.legend()
    fig.tight_layout()
    s.figure("scaling", fig, pd.DataFrame(data))
    return s
