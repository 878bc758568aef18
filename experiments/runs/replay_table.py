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
from pathlib import Path

import pandas as pd

from cbalab.algorithms import registry as methods
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import DEFAULT_PRICES, make_workload

SCRIPT = "cbalab.experiments.runs.replay_table"

POLICIES = tuple(methods.cache_policies())


def table(
    *,
    trace: str | Path | None = None,
    n_jobs: int | None = None,
    seed: int = 0,
    skew: float = 1.0,
    n_datasets: int = 48,
    gpus: int = 768,
    cache_gb: float = 500.0,
    bandwidth_gbps: float | None = None,
    warmups: Sequence[bool] = (True,),
    policies: Sequence[str] = POLICIES,
) -> pd.DataFrame:
    """Replay one workload (``trace`` or ``n_jobs`` generated jobs) under every policy and warm-up setting.

    One tidy row per (warm-up, policy) run with every setting as a column;
    ``io_vs_cba`` is each run's IO cost relative to CBA's with the same
    warm-up setting.  ``bandwidth_gbps`` None is no cap.
    """
    workload = make_workload(trace=trace, n_jobs=n_jobs, seed=seed, skew=skew, n_datasets=n_datasets)
    rows = []
    for warmup in warmups:
        for policy in policies:
            cfg = SimConfig(
                policy=policy,
                gpus=gpus,
                cache_gb=cache_gb,
                bandwidth_gbps=math.inf if bandwidth_gbps is None else bandwidth_gbps,
                prices=DEFAULT_PRICES,
                warmup=warmup,
                seed=seed,
            )
            start = time.perf_counter()
            s = simulate(workload, cfg).summary
            rows.append(
                {
                    "trace": str(trace) if trace is not None else f"generated:{n_jobs}",
                    "jobs": s["jobs"],
                    "policy": policy,
                    "warmup": warmup,
                    "seed": seed,
                    "skew": skew,
                    "datasets": n_datasets,
                    "gpus": gpus,
                    "cache_gb": cache_gb,
                    "bandwidth_gbps": bandwidth_gbps,
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
    frame = table(
        trace=args.trace,
        n_jobs=args.generate,
        seed=args.seed,
        skew=args.skew,
        n_datasets=args.datasets,
        gpus=args.gpus,
        cache_gb=args.cache_gb,
        bandwidth_gbps=args.bandwidth_gbps,
        warmups=(True, False) if args.both_warmups else (not args.no_warmup,),
        policies=args.policies,
    )
    if args.out:
        write_results(args.out, frame, script=SCRIPT, seed=args.seed, arguments=vars(args))
    shown = frame[["policy", "warmup", "cache_cost", "bandwidth_cost", "io_cost", "io_vs_cba", "total_cost"]]
    print(shown.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
