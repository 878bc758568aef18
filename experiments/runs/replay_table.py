"""Every cache policy on one trace replay: IO cost and total cost side by side (the acceptance table of the simulator).

    python -m cbalab.experiments.runs.replay_table --trace ../shared/data/philly/philly_jobs.csv --out replay.csv
    python -m cbalab.experiments.runs.replay_table --generate 5000 --quick

Each policy replays the same workload (same seeded model and dataset
assignment, same cluster, same prices) through experiments.simulate; the CSV
has one row per policy with every setting as a column, and the table printed
gives each policy's IO cost relative to CBA's.  Nothing is tuned per policy.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import pandas as pd

from cbalab.algorithms import registry as methods
from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import DEFAULT_PRICES, assign, generate_trace, load_trace

POLICIES = tuple(methods.cache_policies())


def table(args: argparse.Namespace) -> pd.DataFrame:
    """Replay the workload of ``args`` under every policy; one tidy row per (policy, warm-up) run."""
    trace = load_trace(args.trace) if args.trace else generate_trace(args.generate, args.seed)
    workload = assign(trace, args.seed, skew=args.skew, n_datasets=args.datasets)
    rows = []
    for warmup in (True, False) if args.both_warmups else (not args.no_warmup,):
        for policy in args.policies:
            cfg = SimConfig(
                policy=policy,
                gpus=args.gpus,
                cache_gb=args.cache_gb,
                bandwidth_gbps=math.inf if args.bandwidth_gbps is None else args.bandwidth_gbps,
                prices=DEFAULT_PRICES,
                warmup=warmup,
                seed=args.seed,
            )
            start = time.perf_counter()
            s = simulate(workload, cfg).summary
            rows.append(
                {
                    "trace": args.trace or f"generated:{args.generate}",
                    "jobs": s["jobs"],
                    "policy": policy,
                    "warmup": warmup,
                    "seed": args.seed,
                    "skew": args.skew,
                    "datasets": args.datasets,
                    "gpus": args.gpus,
                    "cache_gb": args.cache_gb,
                    "bandwidth_gbps": args.bandwidth_gbps,
                    "price_gpu": DEFAULT_PRICES[0],
                    "price_cache": DEFAULT_PRICES[1],
                    "price_bandwidth": DEFAULT_PRICES[2],
                    "cache_cost": s["cost"]["cache"],
                    "bandwidth_cost": s["cost"]["bandwidth"],
                    "io_cost": s["cost"]["io"],
                    "total_cost": s["cost"]["total"],
                    "mean_jct_s": s["mean_jct_s"],
                    "stall_hours": s["stall_hours"],
                    "infeasible_events": s["infeasible_events"],
                    "seconds": time.perf_counter() - start,
                }
            )
    frame = pd.DataFrame(rows)
    cba = frame[frame.policy == "cba"].set_index("warmup")["io_cost"]
    frame["io_vs_cba"] = frame["io_cost"] / frame["warmup"].map(cba) - 1.0 if not cba.empty else math.nan
    return frame


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: run the table, print it, write ``--out`` (CSV)."""
    p = argparse.ArgumentParser(
        prog="python -m cbalab.experiments.runs.replay_table", description=__doc__.splitlines()[0]
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--trace")
    src.add_argument("--generate", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skew", type=float, default=1.0)
    p.add_argument("--datasets", type=int, default=48)
    p.add_argument("--gpus", type=int, default=768)
    p.add_argument("--cache-gb", type=float, default=500.0)
    p.add_argument("--bandwidth-gbps", type=float, default=None)
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--both-warmups", action="store_true", help="every policy with and without cache warm-up")
    p.add_argument("--policies", nargs="+", default=list(POLICIES))
    p.add_argument("--out")
    args = p.parse_args(argv)
    frame = table(args)
    if args.out:
        frame.to_csv(args.out, index=False)
    shown = frame[["policy", "warmup", "cache_cost", "bandwidth_cost", "io_cost", "io_vs_cba", "total_cost"]]
    print(shown.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
