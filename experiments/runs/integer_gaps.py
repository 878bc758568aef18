"""Acceptance run for the integer variants of P1 (spec/MODEL.md §4; proofs/cba_integer_gap.md).

For each variant — whole datasets, blocks, bandwidth tiers, blocks + tiers, whole datasets + tiers — over
``--instances`` generated instances (experiments/workload/variants.py: generate_cost with the variant set by
Instance.replace; 5-40 jobs, 2-12 datasets, swept price ratio, cache and bandwidth caps, block and tier sizes)
it measures CBA's rounding against the exact MILP (Pyomo + HiGHS, MIP gap 0, ``--time-limit``), both scored by
the referee, and checks every proven claim on the way (bound ≤ optimum ≤ CBA ≤ optimum + a-priori gap bound).
Then, per variant, it times the MILP and CBA on ``--big-jobs`` × ``--big-datasets`` instances.

    nice -n 10 python -m cbalab.experiments.runs.integer_gaps [--instances 1000] [--out results/integer_gaps]

Writes ``gaps.csv`` (one row per instance and variant, every parameter a column), ``timing.csv`` (each with
its ``.meta.json``, experiments/runs/common.py) and prints the summary tables.  Deterministic: instance i of
every variant uses seed i.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from cbalab.algorithms.cba import cba
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload.variants import (
    BANDWIDTH_FRACTIONS,
    CACHE_FRACTIONS,
    CACHE_PRICE_SCALES,
    VARIANTS,
    variant_instance,
)
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.instance import Instance
from cbalab.models.solve import SolveOptions, cost_milp

SCRIPT = "cbalab.experiments.runs.integer_gaps"

#: Relative tolerance of the checks (HiGHS's feasibility tolerance is 1e-7).
TOL = 1e-6


def _scored(inst: Instance, alloc: Allocation) -> tuple[float, float]:
    """(total cost, IO cost) by the referee; raises if the allocation is infeasible (a bug, never a result)."""
    ev = evaluate(inst, alloc, "cost")
    if not ev.feasible:
        raise AssertionError(f"referee rejects the allocation: {ev.violations}")
    return ev.cost_total, ev.cost_io


def compare(variant: str, i: int, time_limit: float | None = 120.0) -> dict:
    """One row: CBA's rounding vs the exact MILP on instance i of ``variant``, with every proven claim checked.

    A MILP that stops at ``time_limit`` proves nothing: its row is kept with status ``time_limit`` and no gap.
    """
    inst = variant_instance(variant, i)
    t0 = time.perf_counter()
    mine = cba(inst)
    t1 = time.perf_counter()
    exact = cost_milp(inst, SolveOptions(time_limit=time_limit))
    t2 = time.perf_counter()
    row = {
        "variant": variant,
        "seed": i,
        "jobs": inst.n_jobs,
        "datasets": inst.n_datasets,
        "cache_price_scale": CACHE_PRICE_SCALES[i % len(CACHE_PRICE_SCALES)],
        "cache_fraction": CACHE_FRACTIONS[i % len(CACHE_FRACTIONS)],
        "bandwidth_fraction": BANDWIDTH_FRACTIONS[i % len(BANDWIDTH_FRACTIONS)],
        "block_gb": inst.block_gb,
        "tier_gbps": inst.bandwidth_step_gbps,
        "cba_status": mine.status,
        "milp_status": exact.status,
        "cba_seconds": t1 - t0,
        "milp_seconds": t2 - t1,
    }
    if exact.status == "time_limit":
        return row
    if exact.status not in ("optimal", "infeasible"):
        raise AssertionError(f"{variant} seed {i}: MILP ended {exact.status}: {exact.reason}")
    if mine.status == "infeasible" and exact.status != "infeasible":
        raise AssertionError(f"{variant} seed {i}: CBA claims infeasible, the MILP found a solution")
    if exact.status == "infeasible" or not mine.has_allocation:
        return row
    opt, opt_io = _scored(inst, exact)
    cost, _ = _scored(inst, mine)
    gap = cost - opt
    gap_bound = mine.extra.get("gap_bound")
    slack = TOL * max(1.0, opt)
    if mine.bound is not None and mine.bound > opt + slack:
        raise AssertionError(f"{variant} seed {i}: CBA's bound {mine.bound} exceeds the optimum {opt}")
    if gap < -slack or (gap_bound is not None and gap > gap_bound + slack):
        raise AssertionError(f"{variant} seed {i}: gap {gap} outside [0, {gap_bound}]")
    if mine.status == "optimal" and gap > slack:
        raise AssertionError(f"{variant} seed {i}: CBA claims optimal with gap {gap}")
    row.update(
        cost=cost,
        optimum=opt,
        optimum_io=opt_io,
        gap_per_hour=max(gap, 0.0),
        gap_io_relative=max(gap, 0.0) / opt_io if opt_io > 0 else 0.0,
        gap_bound_per_hour=gap_bound,
        bound_per_hour=mine.bound,
    )
    return row


def timing(variant: str, n_jobs: int, n_datasets: int, seeds: int, time_limit: float | None = 120.0) -> list[dict]:
    """MILP (Pyomo build + HiGHS, gap 0, ``time_limit``) and CBA wall time on ``seeds`` n_jobs × n_datasets cases."""
    rows = []
    for s in range(seeds):
        inst = variant_instance(variant, s, n_jobs, n_datasets)
        t0 = time.perf_counter()
        mine = cba(inst)
        t1 = time.perf_counter()
        exact = cost_milp(inst, SolveOptions(time_limit=time_limit))
        t2 = time.perf_counter()
        gap = None
        if exact.status == "optimal" and mine.has_allocation:
            gap = _scored(inst, mine)[0] - _scored(inst, exact)[0]
        rows.append(
            {
                "variant": variant,
                "seed": s,
                "jobs": n_jobs,
                "datasets": n_datasets,
                "milp_status": exact.status,
                "milp_seconds": t2 - t1,
                "cba_status": mine.status,
                "cba_seconds": t1 - t0,
                "gap_per_hour": gap,
            }
        )
    return rows


def summarize(gaps: pd.DataFrame) -> pd.DataFrame:
    """Per variant: instance and status counts, worst and mean gaps, worst gap / a-priori bound."""
    out = []
    for variant, g in gaps.groupby("variant", sort=False):
        solved = g.dropna(subset=["gap_per_hour"]) if "gap_per_hour" in g else g.iloc[:0]
        ratio = solved["gap_per_hour"] / solved["gap_bound_per_hour"].where(solved["gap_bound_per_hour"] > 0)
        out.append(
            {
                "variant": variant,
                "instances": len(g),
                "both_feasible": len(solved),
                "milp_infeasible": int((g["milp_status"] == "infeasible").sum()),
                "cba_optimal": int((g["cba_status"] == "optimal").sum()),
                "cba_undecided": int((g["cba_status"] == "error").sum()),
                "cba_gap_zero": int((solved["gap_per_hour"] <= TOL * solved["optimum"].clip(lower=1.0)).sum()),
                "worst_gap_io_pct": 100 * solved["gap_io_relative"].max(),
                "mean_gap_io_pct": 100 * solved["gap_io_relative"].mean(),
                "worst_gap_per_hour": solved["gap_per_hour"].max(),
                "mean_gap_per_hour": solved["gap_per_hour"].mean(),
                "worst_gap_over_bound": ratio.max(),
                "no_a_priori_bound": int(solved["gap_bound_per_hour"].isna().sum()),
            }
        )
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> None:
    """Run the gap comparison and the timing, write the CSVs and print the summaries."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--instances", type=int, default=1000)
    p.add_argument("--big-jobs", type=int, default=1000)
    p.add_argument("--big-datasets", type=int, default=200)
    p.add_argument("--big-seeds", type=int, default=3)
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per MILP (a stop is time_limit)")
    p.add_argument("--out", default="results/integer_gaps")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows: list[dict] = []
    for variant in args.variants:
        for i in range(args.instances):
            rows.append(compare(variant, i, args.time_limit))
            if (i + 1) % 100 == 0 or i + 1 == args.instances:
                write_results(out / "gaps.csv", pd.DataFrame(rows), script=SCRIPT, seed=0, arguments=vars(args))
                print(f"{variant}: {i + 1}/{args.instances} at {time.perf_counter() - start:.0f} s", flush=True)
    gaps = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summarize(gaps).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    times = []
    if args.big_seeds > 0:
        for variant in args.variants:
            times.extend(timing(variant, args.big_jobs, args.big_datasets, args.big_seeds, args.time_limit))
            write_results(out / "timing.csv", pd.DataFrame(times), script=SCRIPT, seed=0, arguments=vars(args))
            print(f"{variant}: timing done at {time.perf_counter() - start:.0f} s", flush=True)
        timed = pd.DataFrame(times)
        table = timed.groupby("variant", sort=False).agg(
            milp_median_s=("milp_seconds", "median"),
            milp_max_s=("milp_seconds", "max"),
            cba_median_s=("cba_seconds", "median"),
            milp_statuses=("milp_status", lambda s: ",".join(sorted(set(s)))),
            worst_gap_per_hour=("gap_per_hour", "max"),
        )
        table["milp_over_cba"] = table["milp_median_s"] / table["cba_median_s"]
        print(table.to_string(float_format=lambda x: f"{x:.4g}"))
    print(f"total {time.perf_counter() - start:.0f} s; wrote {out / 'gaps.csv'} and {out / 'timing.csv'}")


if __name__ == "__main__":
    main()
