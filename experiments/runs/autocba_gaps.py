"""Acceptance run for AutoCBA (spec/MODEL.md §5; proofs/autocba_guarantee.md, proofs/autocba_certificate.md).

Over ``--instances`` generated welfare instances (experiments/workload.generate_welfare: 5-50 jobs, mixed
utility shapes — linear, log, sqrt, α-fair, sigmoid, deadline — Zipf-shared datasets; swept budget, GPU
capacity, cache capacity, bandwidth cap and cache price) it scores AutoCBA and the exact MILP (Pyomo + HiGHS,
MIP gap 0, ``--time-limit``) with the referee and reports AutoCBA's gap to the optimum, 1 − welfare/OPT, and
the slack of its certificate, bound/OPT − 1, checking welfare ≤ OPT ≤ bound on every instance.  Then it
times AutoCBA (greedy, CBA pass and certificate together) on ``--big-jobs`` jobs × 4 options.

    nice -n 10 python -m cbalab.experiments.runs.autocba_gaps [--instances 1000] [--out results/autocba_gaps]

Writes ``gaps.csv`` (one row per instance, every parameter a column) and ``timing.csv`` under ``--out``, each
with its ``.meta.json`` (experiments/runs/common.py), and prints the summary.  Deterministic: instance i uses seed i.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms.autocba import autocba
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import DEFAULT_PRICES, generate_welfare
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import Instance
from cbalab.models.solve import welfare_milp
from cbalab.models.types import SolveOptions

SCRIPT = "cbalab.experiments.runs.autocba_gaps"

#: Swept parameters (instance i takes entry i mod len of each, with co-prime lengths so they mix).
BUDGET_FRACTIONS = (0.2, 0.35, 0.5, 0.8, 0.1)
GPU_FRACTIONS = (0.5, 0.3, 1.0)
CACHE_FRACTIONS = (0.2, 0.05, 0.5, 0.1)
BANDWIDTH_FRACTIONS = (None, 0.3, None, None, 0.1, None, 0.5)
CACHE_PRICE_SCALES = (1.0, 100.0, 10.0, 1000.0, 0.1, 300.0, 30.0, 3.0, 3000.0, 1.0, 100.0)

#: Relative tolerance of the checks (HiGHS's feasibility tolerance is 1e-7).
TOL = 1e-6


def instance(i: int, n_jobs: int | None = None, n_datasets: int | None = None) -> tuple[Instance, dict]:
    """Instance i: generate_welfare(seed=i) with swept sizes, limits and cache price; returns it and its params."""
    rng = np.random.default_rng(i)
    n = n_jobs if n_jobs is not None else int(rng.integers(5, 51))
    k = n_datasets if n_datasets is not None else int(rng.integers(1, max(2, n // 3) + 1))
    p_g, p_c, p_b = DEFAULT_PRICES
    params = {
        "budget_fraction": BUDGET_FRACTIONS[i % len(BUDGET_FRACTIONS)],
        "gpu_fraction": GPU_FRACTIONS[i % len(GPU_FRACTIONS)],
        "cache_fraction": CACHE_FRACTIONS[i % len(CACHE_FRACTIONS)],
        "bandwidth_fraction": BANDWIDTH_FRACTIONS[i % len(BANDWIDTH_FRACTIONS)],
    }
    scale = CACHE_PRICE_SCALES[i % len(CACHE_PRICE_SCALES)]
    inst = generate_welfare(n, k, seed=i, utility_mix="mixed", prices=(p_g, p_c * scale, p_b), **params)
    return inst, {"seed": i, "n_jobs": n, "n_datasets": k, "cache_price_scale": scale, **params}


def measure(i: int, time_limit: float | None = 120.0) -> dict:
    """One row: AutoCBA and the MILP on instance i, scored by the referee, with the checks asserted.

    A MILP that stops at ``time_limit`` proves nothing: the row keeps its status and has no gap.
    """
    inst, row = instance(i)
    start = time.perf_counter()
    alloc = autocba(inst)
    row["autocba_s"] = time.perf_counter() - start
    ev = evaluate(inst, alloc, "welfare")
    assert ev.feasible and np.all(ev.stall_factor == 1.0), (i, ev.violations)
    start = time.perf_counter()
    exact = welfare_milp(inst, SolveOptions(time_limit=time_limit))
    row["milp_s"] = time.perf_counter() - start
    row["milp_status"] = exact.status
    if exact.status == "time_limit":
        return row
    assert exact.status == "optimal", (i, exact.status, exact.reason)
    opt = float(exact.bound)
    welfare = float(ev.welfare)
    assert welfare <= opt * (1 + TOL) + TOL, (i, welfare, opt)
    assert alloc.bound >= opt * (1 - TOL) - TOL, (i, alloc.bound, opt)
    row.update(
        welfare_autocba=welfare,
        welfare_milp=opt,
        bound_autocba=alloc.bound,
        status_autocba=alloc.status,
        source_autocba=alloc.extra.get("source"),
        gap=1.0 - welfare / opt if opt > 0 else 0.0,
        certificate_slack=alloc.bound / opt - 1.0 if opt > 0 else 0.0,
        certified_gap=1.0 - welfare / alloc.bound if alloc.bound > 0 else 0.0,
    )
    return row


def timing(n_jobs: int, n_datasets: int, repeats: int) -> pd.DataFrame:
    """AutoCBA end to end (greedy, CBA pass, certificate) on n_jobs × 4 options, ``repeats`` seeds."""
    rows = []
    for seed in range(repeats):
        inst = generate_welfare(n_jobs, n_datasets, seed=seed)
        start = time.perf_counter()
        alloc = autocba(inst)
        seconds = time.perf_counter() - start
        ev = evaluate(inst, alloc, "welfare")
        assert ev.feasible
        rows.append(
            {
                "seed": seed,
                "n_jobs": n_jobs,
                "n_datasets": n_datasets,
                "options": int(inst.option_gpus.size),
                "autocba_s": seconds,
                "welfare": ev.welfare,
                "bound": alloc.bound,
                "certified_gap": 1.0 - ev.welfare / alloc.bound,
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    """Run the gaps and the timing, write the CSVs and print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--big-jobs", type=int, default=10_000)
    parser.add_argument("--big-datasets", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per MILP (a stop is time_limit)")
    parser.add_argument("--out", type=Path, default=Path("results/autocba_gaps"))
    args = parser.parse_args(argv)

    rows: list[dict] = []
    begin = time.perf_counter()
    for i in range(args.instances):
        rows.append(measure(i, args.time_limit))
        if (i + 1) % 100 == 0 or i + 1 == args.instances:
            write_results(args.out / "gaps.csv", pd.DataFrame(rows), script=SCRIPT, seed=0, arguments=vars(args))
            print(f"{i + 1}/{args.instances} instances at {time.perf_counter() - begin:.0f} s", flush=True)
    gaps = pd.DataFrame(rows)
    unproven = int((gaps.milp_status != "optimal").sum())
    if unproven:
        print(f"{unproven} MILPs stopped at the time limit; their instances are left out of the gaps")
    gaps = gaps[gaps.milp_status == "optimal"]
    print(f"AutoCBA vs MILP over {len(gaps)} instances ({gaps.n_jobs.min()}-{gaps.n_jobs.max()} jobs):")
    print(
        f"  gap 1 - W/OPT: mean {gaps.gap.mean():.4%}, worst {gaps.gap.max():.4%}, "
        f"median {gaps.gap.median():.4%}, share optimal (gap < 1e-6) {(gaps.gap < 1e-6).mean():.1%}"
    )
    print(
        f"  certificate slack bound/OPT - 1: mean {gaps.certificate_slack.mean():.4%}, "
        f"worst {gaps.certificate_slack.max():.4%}"
    )
    print(f"  certified gap 1 - W/bound: mean {gaps.certified_gap.mean():.4%}, worst {gaps.certified_gap.max():.4%}")
    print(f"  answer from the best single job: {(gaps.source_autocba != 'greedy').sum()} instances")
    print(f"  time: AutoCBA mean {gaps.autocba_s.mean() * 1e3:.1f} ms, MILP mean {gaps.milp_s.mean() * 1e3:.1f} ms")
    by = gaps.groupby(pd.cut(gaps.n_jobs, [4, 15, 30, 50]), observed=True)
    print(by[["gap", "certificate_slack"]].agg(["mean", "max"]).to_string())

    times = timing(args.big_jobs, args.big_datasets, args.repeats)
    write_results(args.out / "timing.csv", times, script=SCRIPT, seed=0, arguments=vars(args))
    print(f"AutoCBA on {args.big_jobs} jobs x 4 options ({args.big_datasets} datasets), {args.repeats} seeds:")
    print(
        f"  seconds: min {times.autocba_s.min():.2f}, median {times.autocba_s.median():.2f}, "
        f"max {times.autocba_s.max():.2f}; certified gap mean {times.certified_gap.mean():.4%}"
    )


if __name__ == "__main__":
    main()
