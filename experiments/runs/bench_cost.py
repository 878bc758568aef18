"""Benchmark of the cost problem P1 (spec/MODEL.md §4): CBA's closed form against HiGHS on the same LP.

Not a test: it prints a table of times measured in one run, and the ratios
between them, for generated instances of 1k, 10k and 100k jobs (100k jobs ×
10k datasets for the largest), with a bandwidth cap that binds (so both
capacity rows of P1 matter).  Methods:

* ``cba``             algorithms.cba.cba on the loaded instance (best of several repeats);
* ``pyomo build+solve`` models.milp.cost.build_cost_model + models.solve.solve_model (HiGHS via Pyomo);
* ``pyomo solve``     the solve_model part alone;
* ``highspy build+solve`` the same LP (same hit-ratio form) assembled from numpy arrays
  (models.milp.cost_highspy.solve_cost_lp) and solved by HiGHS directly;
* ``highspy solve``   HiGHS's run() alone.

It checks that all objectives agree (prints the largest relative difference)
and times ``models.instance.load`` of the largest instance's JSON file.

Acceptance target (issue #2): CBA on 100k jobs × 10k datasets under 20 ms and
at least 500× faster than HiGHS on the same LP.

Run:  nice -n 10 python -m cbalab.experiments.runs.bench_cost [--repeats 7] [--out bench_cost.csv]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.algorithms.cba import cba
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import generate_cost
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import Instance, load
from cbalab.models.milp.cost_highspy import solve_cost_lp

#: (jobs, datasets) of the benchmark instances.
SIZES = ((1_000, 100), (10_000, 1_000), (100_000, 10_000))


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
    uncapped_remote = float(cba(inst).bandwidth_gbps.sum())
    full = cba(inst.replace(price_cache=0.0, price_bandwidth=1.0))  # caching is free: the least remote IO
    least = float(full.bandwidth_gbps.sum())
    return inst.replace(bandwidth_gbps=0.5 * (least + uncapped_remote))


def best_of(fn, repeats: int) -> float:
    """The least wall time of ``repeats`` calls of ``fn`` (seconds)."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench(n_jobs: int, n_datasets: int, repeats: int) -> dict:
    """Time every method on one instance; return the row of the table."""
    from cbalab.models.milp.cost import build_cost_model
    from cbalab.models.solve import SolveOptions, solve_model

    inst = binding_instance(n_jobs, n_datasets, seed=n_jobs)
    ours = cba(inst)
    uncapped_remote = float(cba(inst.replace(bandwidth_gbps=math.inf)).bandwidth_gbps.sum())
    t_cba = best_of(lambda: cba(inst), repeats)
    cba_cost = evaluate(inst, ours, "cost").cost_total

    start = time.perf_counter()
    model = build_cost_model(inst, relax=True)
    built = time.perf_counter()
    out = solve_model(model, SolveOptions())
    solved = time.perf_counter()

    hs = solve_cost_lp(inst)
    objectives = {"cba": cba_cost, "pyomo": out.objective, "highspy": hs.objective}
    ref = cba_cost
    diff = max(abs(v - ref) / abs(ref) for v in objectives.values() if v is not None)
    return {
        "jobs": n_jobs,
        "datasets": n_datasets,
        "seed": n_jobs,
        "cba_status": ours.status,
        "pyomo_status": out.status,
        "highspy_status": hs.status,
        "cba_s": t_cba,
        "pyomo_build_solve_s": solved - start,
        "pyomo_solve_s": solved - built,
        "highspy_build_solve_s": hs.build_seconds + hs.solve_seconds,
        "highspy_solve_s": hs.solve_seconds,
        "max_rel_diff": diff,
        "objectives": objectives,
        "binds": f"B = {inst.bandwidth_gbps:.6g} GB/s < uncapped optimum's remote IO {uncapped_remote:.6g}: "
        f"{inst.bandwidth_gbps < uncapped_remote}",
        "missing": [k for k, v in objectives.items() if v is None],
    }


def load_seconds(n_jobs: int, n_datasets: int, repeats: int) -> float:
    """Best-of-``repeats`` time of models.instance.load on the JSON file of a generated instance."""
    inst = generate_cost(n_jobs, n_datasets, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inst.json"
        inst.save(path)
        return best_of(lambda: load(path), repeats)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--largest", type=int, default=len(SIZES), help="how many of the sizes to run (1..3)")
    ap.add_argument("--out", help="also write the rows as a tidy CSV (with its .meta.json)")
    args = ap.parse_args(argv)
    rows = [bench(n, k, args.repeats) for n, k in SIZES[: args.largest]]
    if args.out:
        tidy = pd.DataFrame(
            [
                {
                    **{k: v for k, v in r.items() if k not in ("objectives", "missing")},
                    **{f"objective_{k}": v for k, v in r["objectives"].items()},
                }
                for r in rows
            ]
        )
        write_results(args.out, tidy, script="cbalab.experiments.runs.bench_cost", seed=None, arguments=vars(args))
    head = (
        f"{'jobs':>8} {'datasets':>8} {'cba ms':>9} {'pyomo b+s s':>12} {'pyomo s s':>10} {'highspy b+s s':>14}"
        f" {'highspy s s':>12} {'pyomo/cba':>10} {'highspy/cba':>12} {'max rel diff':>13}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['jobs']:>8} {r['datasets']:>8} {1e3 * r['cba_s']:>9.3f} {r['pyomo_build_solve_s']:>12.3f}"
            f" {r['pyomo_solve_s']:>10.3f} {r['highspy_build_solve_s']:>14.3f} {r['highspy_solve_s']:>12.3f}"
            f" {r['pyomo_build_solve_s'] / r['cba_s']:>10.0f} {r['highspy_build_solve_s'] / r['cba_s']:>12.0f}"
            f" {r['max_rel_diff']:>13.2e}"
        )
        print(
            f"   statuses: cba {r['cba_status']}, pyomo {r['pyomo_status']}, highspy {r['highspy_status']}; "
            "objectives $/h: " + ", ".join(f"{k} {v!r}" for k, v in r["objectives"].items())
        )
        print(f"   {r['binds']}")
    n, k = SIZES[args.largest - 1]
    print(f"JSON load of a {n}-job x {k}-dataset instance: {load_seconds(n, k, 3):.3f} s (best of 3)")
    big = rows[-1]
    print(
        f"acceptance: cba {1e3 * big['cba_s']:.3f} ms (< 20 ms: {big['cba_s'] < 0.02}); "
        f"highspy solve / cba = {big['highspy_solve_s'] / big['cba_s']:.0f}x, "
        f"highspy build+solve / cba = {big['highspy_build_solve_s'] / big['cba_s']:.0f}x (>= 500x: "
        f"{big['highspy_solve_s'] / big['cba_s'] >= 500})"
    )


if __name__ == "__main__":
    main()
