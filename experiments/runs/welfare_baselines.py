"""Welfare of the IO-unaware GPU baselines (naive and tuned) against the proven P2 optimum, tight to loose budgets.

    python -m cbalab.experiments.runs.welfare_baselines [--jobs 100] [--datasets 20] [--seeds 3]
        [--budgets 0.05,0.1,0.2,0.35,0.5,1.0] [--bandwidth-prices 0.9,27]
        [--cache-policies silod,io-only,...] [--out rows.csv]

For every seed, bandwidth price p_b and budget fraction, one instance of
experiments.workload.generate_welfare is solved by the MILP (HiGHS, gap 0, no
time limit: status ``optimal`` is required) and by every other registered
welfare method; each allocation is scored by the referee.  The table gives,
per (p_b, budget), the MILP's mean welfare and solve time and, for each
method, its mean welfare as a fraction of the MILP optimum (min over seeds in
brackets).  The LP row is its bound over the optimum (≥ 1).  Registered
baselines feed their GPUs with the SiloD-like cache; ``--cache-policies`` adds
every baseline (naive and tuned) with each other named policy of
the registry (algorithms/registry.py, kind ``cache-policy``), as ``NAME[POLICY]``.

A ratio above 1 is possible and is not a bug: the MILP optimises P2 as
MODEL.md §5 states it (no stalls), while the referee also scores stalled
allocations, which earn a fraction of their utility (proofs/mccormick_exact.md,
Remarks).  Every random draw comes from the seeds in the rows.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import pandas as pd

from cbalab.algorithms import registry as methods
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import DEFAULT_PRICES, generate_welfare
from cbalab.models.evaluate import Evaluation, result
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions

SCRIPT = "cbalab.experiments.runs.welfare_baselines"

#: The GPU schedulers (naive and tuned), for runs with another cache policy than the registered default.
BASELINES = tuple(m.name for m in methods.select("welfare", kind="gpu-scheduler"))


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated numbers, got {text!r}") from None


def _with_policy(inst: Instance, name: str, policy: str) -> tuple[dict, Evaluation | None]:
    start = time.perf_counter()
    alloc = methods.get("welfare", name).function()(inst, SolveOptions(cache_policy=policy))
    return result(inst, "welfare", f"{name}[{policy}]", alloc, time.perf_counter() - start)


def run(
    jobs: int,
    datasets: int,
    seeds: int,
    budgets: Sequence[float],
    bandwidth_prices: Sequence[float],
    cache_policies: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per (seed, p_b, budget fraction, method): welfare, cost, stall, seconds, and the MILP optimum."""
    bad = sorted(set(cache_policies) - set(methods.cache_policies()))
    if bad:
        raise ValueError(f"unknown cache policy {bad[0]!r}; known: {', '.join(methods.cache_policies())}")
    rows = []
    names = methods.names("welfare")
    warm = generate_welfare(2, 1, 0)
    for name in names:  # imports (Pyomo, HiGHS) happen here, outside the timed runs
        methods.run(warm, "welfare", name)
    for p_b in bandwidth_prices:
        for budget in budgets:
            for seed in range(seeds):
                inst = generate_welfare(
                    jobs, datasets, seed, budget_fraction=budget, prices=(DEFAULT_PRICES[0], DEFAULT_PRICES[1], p_b)
                )
                docs = {name: methods.run(inst, "welfare", name) for name in names}
                for policy in cache_policies:
                    if policy != "silod":
                        docs.update({f"{n}[{policy}]": _with_policy(inst, n, policy) for n in BASELINES})
                milp = docs["milp"][0]
                if milp["status"] != "optimal":
                    raise RuntimeError(f"MILP not proven optimal (seed {seed}, p_b {p_b}, budget {budget})")
                for name, (doc, ev) in docs.items():
                    rows.append(
                        {
                            "jobs": jobs,
                            "datasets": datasets,
                            "seed": seed,
                            "bandwidth_price": p_b,
                            "budget_fraction": budget,
                            "budget_per_hour": inst.budget_per_hour,
                            "method": name,
                            "status": doc["status"],
                            "welfare": doc["welfare"],
                            "bound": doc["bound"],
                            "optimum": milp["objective"],
                            "cost_per_hour": doc["cost_per_hour"]["total"] if doc["cost_per_hour"] else None,
                            "min_stall_factor": float(ev.stall_factor.min()) if ev is not None and inst.n_jobs else 1.0,
                            "solve_seconds": doc["solve_seconds"],
                        }
                    )
    return pd.DataFrame(rows)


def table(df: pd.DataFrame) -> str:
    """The summary printed by :func:`main`: one column per (p_b, budget), one row per method (ratio to the MILP).

    The first rows are the MILP's mean welfare and solve seconds and the LP bound over the optimum.
    """
    df = df.assign(ratio=df["welfare"] / df["optimum"], lp_ratio=df["bound"] / df["optimum"])
    keys = list(df.groupby(["bandwidth_price", "budget_fraction"]).groups)
    width = 15
    lines = [f"{'p_b / budget':<26}" + "".join(f"{f'{p:g} / {b:g}':>{width}}" for p, b in keys)]
    lines.append("-" * len(lines[0]))

    def cell(method: str, key: tuple, what: str) -> str:
        g = df[(df["method"] == method) & (df["bandwidth_price"] == key[0]) & (df["budget_fraction"] == key[1])]
        if what == "ratio":
            return f"{g['ratio'].mean():.3f} ({g['ratio'].min():.3f})"
        digits = {"optimum": 1, "solve_seconds": 2, "lp_ratio": 4}[what]
        return f"{g[what].mean():.{digits}f}"

    lines.append(f"{'MILP welfare (mean)':<26}" + "".join(f"{cell('milp', k, 'optimum'):>{width}}" for k in keys))
    lines.append(f"{'MILP seconds (mean)':<26}" + "".join(f"{cell('milp', k, 'solve_seconds'):>{width}}" for k in keys))
    lines.append(f"{'LP bound / optimum':<26}" + "".join(f"{cell('lp', k, 'lp_ratio'):>{width}}" for k in keys))
    for name in (m for m in df["method"].unique() if m not in ("milp", "lp")):
        lines.append(f"{name:<26}" + "".join(f"{cell(name, k, 'ratio'):>{width}}" for k in keys))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep, print the table, optionally write the tidy rows as CSV."""
    p = argparse.ArgumentParser(
        prog="python -m cbalab.experiments.runs.welfare_baselines", description=__doc__.split("\n")[0]
    )
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--datasets", type=int, default=20)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budgets", type=_floats, default=[0.05, 0.1, 0.2, 0.35, 0.5, 1.0])
    p.add_argument("--bandwidth-prices", type=_floats, default=[DEFAULT_PRICES[2], 27.0])
    p.add_argument("--cache-policies", type=lambda t: [x for x in t.split(",") if x], default=[])
    p.add_argument("--out")
    args = p.parse_args(argv)
    df = run(args.jobs, args.datasets, args.seeds, args.budgets, args.bandwidth_prices, args.cache_policies)
    print(
        f"{args.jobs} jobs x 4 options, {args.datasets} datasets, seeds 0..{args.seeds - 1}; "
        "welfare / MILP optimum, mean (min)"
    )
    print(table(df))
    if args.out:
        write_results(args.out, df, script=SCRIPT, seed=0, arguments=vars(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
