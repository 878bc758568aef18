"""How the exact welfare MILP (P2, docs/model.md §5) scales, today's formulation against the new ones, in one run.

Instance family: ``cbalab generate --kind welfare --jobs N --datasets N/10 --seed S --utility mixed
--budget-fraction F`` (experiments.workload.generate_welfare; 4 GPU options per job), N ∈ {100, 300, 1000,
3000}, F ∈ {0.1, 0.2, 0.35}, 3 seeds.  Per instance, every form is timed wall-clock, build included:

* ``pyomo``       P2 as docs/model.md §5 writes it, built through Pyomo and handed to HiGHS as one MILP (the
                  method before the array form, the reference of the speed-ups);
* ``arrays``      the array form of models/milp/welfare.py built from numpy and passed to highspy, one MILP;
* ``arrays+warm`` the same with AutoCBA's allocation as HiGHS's first incumbent (AutoCBA's time not included;
                  it is the ``autocba`` row);
* ``sliced``      the array form solved by GPU-count slices (models/solve.py: solve_sliced,
                  proofs/welfare_milp_forms.md Theorem F4): the registered ``milp`` method;
* ``sliced+warm`` the slices with AutoCBA's allocation as the first incumbent (AutoCBA's time not included);
* ``stall``       the stall-allowed reference P2s (models/solve.py: solve_welfare_stall, also by slices);
* ``autocba``     AutoCBA itself: its time, welfare and certified bound.

``seconds`` is wall time and ``cpu_seconds`` the process's CPU time (HiGHS runs in-process on one thread),
which says how much of the wall time a loaded machine added.  Every MILP runs at MIP gap 0 under
``--time-limit``; a run that stops there is ``time_limit``, never optimal.
Every allocation is scored by the referee (models/evaluate.py).  AutoCBA's gap is taken against the no-stall
optimum P2 (the proven welfare of any optimal no-stall form on the same instance).

    nice -n 10 cbalab bench milp-scale [--quick] [--seed 1] [--time-limit 300] [--jobs 100 300] [--forms sliced]

Prints a line per run as it ends, rewrites ``milp_scale.csv`` (tidy: one row per instance and form)
atomically after every run, and prints the summary table at the end.  ``grid`` and ``run_one`` are the
interface of ``cbalab experiment scaling``.
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from cbalab.algorithms.autocba import autocba
from cbalab.experiments.plotting import figure, save
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import generate_welfare
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.solve import solve_welfare, solve_welfare_stall
from cbalab.models.types import SolveOptions

FORMS = ("autocba", "pyomo", "arrays", "arrays+warm", "sliced", "sliced+warm", "stall")
JOBS = (100, 300, 1000, 3000)
#: The size of the quick run (CI): small enough that every form proves its optimum at once.
QUICK_JOBS = (30,)
FRACTIONS = (0.1, 0.2, 0.35)


def grid(quick: bool, seed: int) -> list[dict]:
    """The runs: every size × budget fraction × seed × form.

    ``quick`` (CI) is one 30-job instance at budget fraction 0.2 in every form, each well under a second.
    """
    jobs = QUICK_JOBS if quick else JOBS
    fractions = (0.2,) if quick else FRACTIONS
    seeds = (seed,) if quick else (seed, seed + 1, seed + 2)
    limit = 60.0 if quick else 300.0
    return [
        {"jobs": n, "datasets": max(1, n // 10), "budget_fraction": f, "seed": s, "form": form, "time_limit": limit}
        for n in jobs
        for f in fractions
        for s in seeds
        for form in FORMS
    ]


@lru_cache(maxsize=2)
def _instance(jobs: int, datasets: int, fraction: float, seed: int) -> Instance:
    return generate_welfare(jobs, datasets, seed, utility_mix="mixed", budget_fraction=fraction)


@lru_cache(maxsize=2)
def _autocba(jobs: int, datasets: int, fraction: float, seed: int) -> tuple[Allocation, float]:
    inst = _instance(jobs, datasets, fraction, seed)
    start = time.perf_counter()
    alloc = autocba(inst)
    return alloc, time.perf_counter() - start


def run_one(params: dict) -> dict:
    """One form on one instance: status, wall seconds (build included), referee welfare, proven bound."""
    key = (int(params["jobs"]), int(params["datasets"]), float(params["budget_fraction"]), int(params["seed"]))
    inst = _instance(*key)
    options = SolveOptions(time_limit=float(params["time_limit"]))
    form = params["form"]
    start, cpu = time.perf_counter(), time.process_time()
    if form == "autocba":
        alloc, seconds = _autocba(*key)
    else:
        if form == "pyomo":
            alloc = solve_welfare(inst, relax=False, options=options, form="pyomo")
        elif form in ("arrays", "sliced"):
            alloc = solve_welfare(inst, relax=False, options=options, sliced=form == "sliced")
        elif form in ("arrays+warm", "sliced+warm"):
            warm = _autocba(*key)[0]
            start, cpu = time.perf_counter(), time.process_time()
            alloc = solve_welfare(inst, relax=False, options=options, warm=warm, sliced=form == "sliced+warm")
        elif form == "stall":
            alloc = solve_welfare_stall(inst, options)
        else:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu
    ev = evaluate(inst, alloc, "welfare")
    facts = alloc.milp
    return {
        **params,
        "status": alloc.status,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds if form != "autocba" else None,
        "build_seconds": None if facts is None else facts.build_seconds,
        "nodes": None if facts is None else facts.nodes,
        "slices": len(facts.slices) if facts is not None and facts.form == "sliced" else None,
        "welfare": ev.welfare if ev.feasible else None,
        "feasible": ev.feasible,
        "bound": alloc.bound,
    }


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """Per size × fraction × form: proven count, median/max seconds, speed-up vs pyomo, AutoCBA's gap to P2.

    A speed-up against a ``pyomo`` run that hit its time limit is a lower bound (``pyomo_proven`` counts the
    instances where the reference itself proved its optimum).
    """
    df = rows.copy()
    p2 = df[df["form"].isin(["pyomo", "arrays", "arrays+warm", "sliced", "sliced+warm"])]
    p2 = p2[p2["status"] == "optimal"]
    opt = p2.groupby(["jobs", "budget_fraction", "seed"])["welfare"].max().rename("optimum")
    df = df.join(opt, on=["jobs", "budget_fraction", "seed"])
    df["gap_pct"] = 100 * (df["optimum"] - df["welfare"]) / df["optimum"]
    pyomo = df[df["form"] == "pyomo"].set_index(["jobs", "budget_fraction", "seed"])
    ref = pyomo["seconds"].rename("pyomo_seconds")
    df = df.join(ref, on=["jobs", "budget_fraction", "seed"])
    df = df.join((pyomo["status"] == "optimal").rename("pyomo_proven"), on=["jobs", "budget_fraction", "seed"])
    df["speedup"] = df["pyomo_seconds"] / df["seconds"]
    return (
        df.groupby(["jobs", "budget_fraction", "form"], sort=True)
        .agg(
            runs=("status", "size"),
            optimal=("status", lambda s: int((s == "optimal").sum())),
            median_s=("seconds", "median"),
            max_s=("seconds", "max"),
            min_speedup=("speedup", "min"),
            median_speedup=("speedup", "median"),
            pyomo_proven=("pyomo_proven", "sum"),
            mean_gap_pct=("gap_pct", "mean"),
            worst_gap_pct=("gap_pct", "max"),
        )
        .reset_index()
    )


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """milp_scale: wall time (build included) of each form against jobs, median over budgets and seeds.

    Hollow markers are runs that did not prove their optimum (``time_limit`` or ``feasible``).
    """
    if runs.empty:
        return []
    fig, ax = figure(1, 1, width=5.0, height=3.4)
    a = ax[0, 0]
    for form, part in runs.groupby("form", sort=False):
        med = part.groupby("jobs")["seconds"].median()
        a.plot(med.index, med.to_numpy(), "-o", ms=4, label=str(form))
        open_ = part[part["status"] != "optimal"]
        if not open_.empty:
            a.plot(open_["jobs"], open_["seconds"], "o", mfc="none", color="0.3", ms=6)
    a.set(xscale="log", yscale="log", xlabel="jobs (4 options each)", ylabel="wall seconds (build + solve)")
    a.set_title("P2 MILP forms and AutoCBA (hollow: optimum not proven)", fontsize=8)
    a.legend(fontsize=7)
    return save(fig, outdir, "milp_scale")


def measure(
    *,
    quick: bool = False,
    seed: int = 1,
    time_limit: float = 300.0,
    jobs: tuple[int, ...] | None = None,
    fractions: tuple[float, ...] | None = None,
    forms: tuple[str, ...] = FORMS,
    datasets: int | None = None,
    out: str = "results/milp_scale",
) -> None:
    """Run the grid (or the sizes ``jobs``, budget ``fractions`` and ``forms`` asked for), each MILP under
    ``time_limit`` seconds, writing the CSV after every run; print the summary.  ``cbalab bench milp-scale``
    runs it.  A size outside the grid (``--jobs 10000``, the frontier of 10,000 jobs over 300 datasets) is run at
    every fraction and seed of the grid; ``datasets`` replaces the grid's N/10 datasets (300 at that frontier).  An
    unknown form, and a selection with no run, is InstanceError naming the option.
    """
    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        raise InstanceError("forms", unknown, f"must be among {', '.join(FORMS)}")
    if datasets is not None and datasets < 1:
        raise InstanceError("datasets", datasets, "must be >= 1")
    arguments: dict[str, Any] = {"quick": quick, "seed": seed, "time_limit": time_limit, "jobs": jobs}
    arguments["fractions"] = fractions
    arguments.update(forms=list(forms), datasets=datasets, out=out)
    base = grid(quick, seed)
    sizes = sorted({int(r["jobs"]) for r in base}) if jobs is None else sorted(set(jobs))
    template = [r for r in base if r["jobs"] == base[0]["jobs"]]
    runs = [
        {**r, "jobs": n, "datasets": datasets or max(1, n // 10), "time_limit": time_limit}
        for n in sizes
        for r in template
        if r["form"] in forms and (fractions is None or r["budget_fraction"] in fractions)
    ]
    if not runs:
        raise InstanceError("fractions", fractions, f"selects no run; the grid's fractions are {FRACTIONS}")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    begin = time.perf_counter()
    for i, params in enumerate(runs, 1):
        row = run_one(params)
        rows.append(row)
        write_results(
            folder / "milp_scale.csv", pd.DataFrame(rows), script="milp_scale", seed=seed, arguments=arguments
        )
        print(
            f"[{i}/{len(runs)} {time.perf_counter() - begin:.0f} s] N={row['jobs']} F={row['budget_fraction']} "
            f"seed={row['seed']} {row['form']}: {row['status']} {row['seconds']:.2f} s welfare={row['welfare']}",
            flush=True,
        )
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summarize(pd.DataFrame(rows)).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"wrote {folder / 'milp_scale.csv'}")
