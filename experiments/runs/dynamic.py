"""Competitive ratios against the offline optimum P3 on Philly windows, and P3's size and solve time.

    python -m cbalab.experiments.runs.dynamic --out runs/dynamic.csv            # ten 1,000-job windows, two prices
    python -m cbalab.experiments.runs.dynamic --quick                           # two 200-job windows

Two kinds of run (one row each, written atomically through cbalab.models.files):

* ``ratio``: one window of consecutive jobs (in submit order) of the Philly trace, its models and datasets
  assigned with the run's seed, replayed with warm-up under every policy of POLICIES at the default prices or
  with the remote-IO price p_b × ``io_price_factor``.  P3 is solved over the schedule of the CBA replay (the
  same for every policy: proofs/dynamic_lower_bound.md, Lemma 1); ``ratio_<policy>`` is the policy's replay IO
  cost divided by P3's certified lower bound, so it is an upper bound on the policy's competitive ratio on the
  window (Theorem 1 there).
* ``scale``: P3 alone on a window of ``jobs`` jobs with a time limit of ``time_limit_s``: status, LP size
  (rows, columns), wall and CPU seconds.

``grid(quick, seed)`` lists the runs, ``run_one(params)`` does one; ``main`` runs them all and prints the table.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import DEFAULT_PRICES, Workload, assign, load_trace
from cbalab.models.files import atomic_write_csv
from cbalab.models.milp.dynamic import Cluster, schedule_from_replay, solve_dynamic

#: The policies compared; cba-keep is the warm-up-aware online policy (proofs/cba_keep_competitive.md).
POLICIES = ("cba", "silod", "quiver", "cache-all", "io-only", "cba-keep")


def _philly() -> Path:
    """../shared/data/philly/philly_jobs.csv beside the nearest enclosing folder that has one."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "data" / "philly" / "philly_jobs.csv"
        if candidate.exists():
            return candidate
    return here.parents[2].parent / "shared" / "data" / "philly" / "philly_jobs.csv"


PHILLY = _philly()


@functools.lru_cache(maxsize=2)
def _trace(path: str) -> pd.DataFrame:
    return load_trace(path)


def grid(quick: bool, seed: int) -> list[dict]:
    """One parameter dict per run: ten 1,000-job windows × two IO prices, then P3 on growing windows."""
    n_jobs = 200 if quick else 1000
    windows = 2 if quick else 10
    total = len(_trace(str(PHILLY)))
    starts = np.linspace(0, total - n_jobs, windows + 2)[1:-1].astype(int)
    runs: list[dict] = []
    for i, start in enumerate(starts):
        for factor in (1.0, 10.0):
            runs.append(
                {
                    "kind": "ratio",
                    "window": i,
                    "start_job": int(start),
                    "jobs": n_jobs,
                    "io_price_factor": factor,
                    "seed": seed,
                    "time_limit_s": 600.0,
                    "trace": str(PHILLY),
                }
            )
    middle = int(starts[len(starts) // 2])
    for n in (500,) if quick else (1000, 2000, 4000, 8000):
        runs.append(
            {
                "kind": "scale",
                "window": -1,
                "start_job": middle,
                "jobs": n,
                "io_price_factor": 1.0,
                "seed": seed,
                "time_limit_s": 600.0,
                "trace": str(PHILLY),
            }
        )
    return runs


def _window(params: dict) -> Workload:
    trace = _trace(params["trace"])
    part = trace.iloc[params["start_job"] : params["start_job"] + params["jobs"]].reset_index(drop=True)
    part.attrs["source"] = f"philly jobs {params['start_job']}..{params['start_job'] + params['jobs'] - 1}"
    return assign(part, params["seed"])


def run_one(params: dict) -> dict:
    """One run of :func:`grid`: a dict of the parameters and the measured columns."""
    w = _window(params)
    prices = (DEFAULT_PRICES[0], DEFAULT_PRICES[1], DEFAULT_PRICES[2] * params["io_price_factor"])
    cfg = SimConfig(policy="cba", prices=prices, seed=params["seed"])
    row = dict(params)
    row.update({"price_cache": prices[1], "price_bandwidth": prices[2], "cache_gb": cfg.cache_gb, "gpus": cfg.gpus})
    policies = POLICIES if params["kind"] == "ratio" else ("cba",)
    replays = {}
    for name in policies:
        replays[name] = simulate(w, SimConfig(**{**cfg.__dict__, "policy": name}))
        s = replays[name].summary
        row[f"io_{name}"] = s["cost"]["io"]
        row[f"stall_hours_{name}"] = s["stall_hours"]
    jobs = replays["cba"].jobs
    schedule = schedule_from_replay(
        jobs["start_s"].to_numpy(),
        jobs["end_s"].to_numpy(),
        jobs["io_gbps"].to_numpy(),
        w.jobs["dataset_index"].to_numpy(),
        w.datasets["size_gb"].to_numpy(),
    )
    cluster = Cluster(cache_gb=cfg.cache_gb, price_cache=prices[1], price_bandwidth=prices[2])
    wall, cpu = time.perf_counter(), time.process_time()
    out = solve_dynamic(schedule, cluster, time_limit=params["time_limit_s"])
    row.update(
        {
            "p3_status": out.status,
            "p3_cost_io": out.cost_io,
            "p3_bound": out.bound,
            "p3_slots": out.slots,
            "p3_rows": out.rows,
            "p3_cols": out.cols,
            "p3_message": out.message,
            "p3_seconds": time.perf_counter() - wall,
            "p3_cpu_seconds": time.process_time() - cpu,
        }
    )
    for name in policies:
        bound = out.bound if out.bound is not None and out.bound > 0 else math.nan
        row[f"ratio_{name}"] = row[f"io_{name}"] / bound
    return row


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: every run of the grid, the table on stdout, the CSV at ``--out``."""
    p = argparse.ArgumentParser(prog="python -m cbalab.experiments.runs.dynamic", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="two 200-job windows and one 500-job scaling run")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="dynamic.csv")
    p.add_argument("--kind", choices=["ratio", "scale", "all"], default="all")
    args = p.parse_args(argv)
    rows = []
    for params in grid(args.quick, args.seed):
        if args.kind != "all" and params["kind"] != args.kind:
            continue
        rows.append(run_one(params))
        atomic_write_csv(args.out, pd.DataFrame(rows))
    frame = pd.DataFrame(rows)
    ratios = frame[frame.kind == "ratio"]
    if not ratios.empty:
        cols = [f"ratio_{name}" for name in POLICIES]
        table = ratios.groupby("io_price_factor")[cols].agg(["mean", "max"])
        print(table.round(4).to_string())
        print(ratios[["window", "io_price_factor", "p3_status", "p3_seconds", "p3_cpu_seconds", *cols]].round(4))
    scale = frame[frame.kind == "scale"]
    if not scale.empty:
        print(scale[["jobs", "p3_status", "p3_slots", "p3_rows", "p3_cols", "p3_seconds", "p3_cpu_seconds"]])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
