"""Welfare of the IO-unaware GPU baselines (naive and tuned) against the proven P2 optimum, tight to loose budgets.

    python -m experiments.welfare_baselines [--jobs 100] [--datasets 20] [--seeds 3]
        [--budgets 0.05,0.1,0.2,0.35,0.5,1.0] [--bandwidth-prices 0.9,27] [--out rows.csv]

For every seed, bandwidth price p_b and budget fraction, one instance of
experiments.workload.generate_welfare is solved by the MILP (HiGHS, gap 0, no
time limit: status ``optimal`` is required) and by every other registered
welfare method; each allocation is scored by the referee.  The table gives,
per (p_b, budget), the MILP's mean welfare and solve time and, for each
method, its mean welfare as a fraction of the MILP optimum (min over seeds in
brackets).  The LP row is its bound over the optimum (≥ 1).

A ratio above 1 is possible and is not a bug: the MILP optimises P2 as
MODEL.md §5 states it (no stalls), while the referee also scores stalled
allocations, which earn a fraction of their utility (proofs/mccormick_exact.md,
Remarks).  Every random draw comes from the seeds in the rows.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import pandas as pd

from experiments import methods
from experiments.workload import DEFAULT_PRICES, generate_welfare


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated numbers, got {text!r}") from None


def run(
    jobs: int, datasets: int, seeds: int, budgets: Sequence[float], bandwidth_prices: Sequence[float]
) -> pd.DataFrame:
    """One row per (seed, p_b, budget fraction, method): welfare, cost, stall, seconds, and the MILP optimum."""
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
    """The summary printed by :func:`main`: per (p_b, budget), MILP welfare and time, every method's ratio."""
    df = df.copy()
    df["ratio"] = df["welfare"] / df["optimum"]
    lp = df[df["method"] == "lp"]
    lp_ratio = (lp["bound"] / lp["optimum"]).groupby([lp["bandwidth_price"], lp["budget_fraction"]]).mean()
    names = [m for m in df["method"].unique() if m not in ("milp", "lp")]
    lines = []
    head = f"{'p_b':>5} {'budget':>6} {'MILP welfare':>12} {'MILP s':>7} {'LP/opt':>6}"
    head += "".join(f" {n:>17}" for n in names)
    lines += [head, "-" * len(head)]
    for (p_b, budget), g in df.groupby(["bandwidth_price", "budget_fraction"]):
        milp = g[g["method"] == "milp"]
        line = f"{p_b:>5g} {budget:>6g} {milp['optimum'].mean():>12.1f} {milp['solve_seconds'].mean():>7.2f}"
        line += f" {lp_ratio[(p_b, budget)]:>6.3f}"
        for n in names:
            r = g[g["method"] == n]["ratio"]
            line += f" {f'{r.mean():.3f} ({r.min():.3f})':>17}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweep, print the table, optionally write the tidy rows as CSV."""
    p = argparse.ArgumentParser(prog="python -m experiments.welfare_baselines", description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--datasets", type=int, default=20)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--budgets", type=_floats, default=[0.05, 0.1, 0.2, 0.35, 0.5, 1.0])
    p.add_argument("--bandwidth-prices", type=_floats, default=[DEFAULT_PRICES[2], 27.0])
    p.add_argument("--out")
    args = p.parse_args(argv)
    df = run(args.jobs, args.datasets, args.seeds, args.budgets, args.bandwidth_prices)
    print(
        f"{args.jobs} jobs x 4 options, {args.datasets} datasets, seeds 0..{args.seeds - 1}; "
        "welfare / MILP optimum, mean (min)"
    )
    print(table(df))
    if args.out:
        df.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
