"""AutoCBA online against the IO-unaware GPU schedulers on Philly windows: the paper's welfare comparison (§6b).

    python -m cbalab.experiments.runs.online_welfare [--quick] [--seed 0] [--out runs.csv]
        [--trace ../shared/data/philly/philly_jobs.csv]

Each run replays one window of the Philly trace (``window_jobs`` consecutive
jobs from position ``window_start`` of the trace sorted by submit time; the
windows are listed in the CSV) through experiments.elastic with one policy,
one budget fraction, one utility mix, one IO price scale (p_c and p_b both
multiplied: 1, 10 or 30) and one restart delay.  The cluster is G = 768 GPUs
and C = 500 GB over 48 datasets (the replay defaults), the workload seeded.

The grid (:func:`grid`) has three parts, so that it runs in tens of minutes
rather than days:

* the **central setting** (budget 0.5, mixed utilities, restart delay 0) on
  both windows, for each IO price: AutoCBA, gavel-tput, gavel-fair and
  optimus, naive and tuned (a tuned run re-solves 20 budget splits at every
  event), fed by the default silod cache;
* **every cache policy** on the first window at the central setting: the
  three naive schedulers fed by silod, io-only, cache-all, coordl, quiver
  and cba;
* **sweeps** on the first window of the budget (0.25, 0.5, 1.0), the utility
  mix (mixed, linear, concave, sigmoid, deadline) and the restart delay
  (0, 60 s) for AutoCBA and the three naive schedulers with silod.

The runs come in that order and the CSV is rewritten after each, so an
interrupted grid leaves a usable table.
* ``--quick``: one small window, AutoCBA and the three naive schedulers, IO
  ×1 and ×30 (under a minute).

Every row carries the welfare over the fixed horizon, its total, JCTs,
deadline satisfaction, restarts, spend and AutoCBA's certified gaps; the
printed table gives each baseline's welfare relative to AutoCBA in the same
setting (AutoCBA / baseline: above 1 means AutoCBA wins).  Tidy CSV and its
meta JSON through experiments.runs.common; ``grid`` and ``run_one`` are the interface of
``cbalab experiment online-welfare``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from cbalab.algorithms import registry
from cbalab.experiments.elastic import SCHEDULERS, ElasticConfig, replay
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import DEFAULT_PRICES, assign, generate_trace, load_trace
from cbalab.experiments.workload.elastic import UtilityMix, elastic

_ROOT = Path(__file__).resolve().parents[2]
#: The Philly trace as shipped in ../shared/data (Microsoft Philly traces, CC-BY 4.0); a git worktree one level
#: deeper finds it one folder further up.
PHILLY = next(
    (
        p
        for p in (r / "shared" / "data" / "philly" / "philly_jobs.csv" for r in (_ROOT.parent, _ROOT.parent.parent))
        if p.exists()
    ),
    _ROOT.parent / "shared" / "data" / "philly" / "philly_jobs.csv",
)
#: Windows of the trace (start position, jobs): a busy stretch in the middle of the trace and one near its end.
WINDOWS = ((30_000, 250), (70_000, 250))
QUICK_WINDOW = (30_000, 120)
IO_SCALES = (1.0, 10.0, 30.0)
BUDGETS = (0.25, 0.5, 1.0)
MIXES = ("mixed", "linear", "concave", "sigmoid", "deadline")
DELAYS = (0.0, 60.0)

_TRACES: dict[str, pd.DataFrame] = {}
#: The parameters that identify a run (a rerun skips the rows it finds with the same values).
KEYS = (
    "window_start",
    "window_jobs",
    "policy",
    "cache_policy",
    "budget_fraction",
    "utility_mix",
    "io_scale",
    "restart_delay_s",
    "seed",
)


def grid(quick: bool, seed: int) -> list[dict]:
    """The runs of the experiment (module docstring), each a dict of :func:`run_one` parameters."""
    naive = list(SCHEDULERS)
    rows: list[dict] = []

    def add(window: tuple[int, int], policy: str, cache: str, budget: float, mix: str, io: float, delay: float):
        rows.append(
            {
                "window_start": window[0],
                "window_jobs": window[1],
                "policy": policy,
                "cache_policy": cache if policy != "autocba" else "cba",
                "budget_fraction": budget,
                "utility_mix": mix,
                "io_scale": io,
                "restart_delay_s": delay,
                "seed": seed,
            }
        )

    if quick:
        for io in (1.0, 30.0):
            for policy in ("autocba", *naive):
                add(QUICK_WINDOW, policy, "silod", 0.5, "mixed", io, 0.0)
        return rows
    seen: set[tuple] = set()

    def once(window: tuple[int, int], policy: str, cache: str, budget: float, mix: str, io: float, delay: float):
        key = (window, policy, cache, budget, mix, io, delay)
        if key not in seen:
            seen.add(key)
            add(window, policy, cache, budget, mix, io, delay)

    tuned = [f"{s}-tuned" for s in naive]
    main, second = WINDOWS
    # Most informative first (a partial run is still a table): the central setting on both windows, then
    # every cache policy, then the sweeps.
    for window in (main, second):
        for io in IO_SCALES:
            for policy in ("autocba", *naive, *tuned):
                once(window, policy, "silod", 0.5, "mixed", io, 0.0)
    for io in IO_SCALES:
        for policy in naive:
            for cache in registry.cache_policies():
                once(main, policy, cache, 0.5, "mixed", io, 0.0)
    for io in IO_SCALES:
        settings = [(b, "mixed", 0.0) for b in BUDGETS]
        settings += [(0.5, m, 0.0) for m in MIXES]
        settings += [(0.5, "mixed", d) for d in DELAYS]
        for budget, mix, delay in settings:
            for policy in ("autocba", *naive):
                once(main, policy, "silod", budget, mix, io, delay)
    return rows


def _trace(path: str) -> pd.DataFrame:
    if path not in _TRACES:
        _TRACES[path] = load_trace(path)
    return _TRACES[path]


def run_one(params: dict) -> dict:
    """Replay one window under one policy and setting; the row of the tidy CSV (parameters + results)."""
    path = params.get("trace") or str(PHILLY)
    start, n = int(params["window_start"]), int(params["window_jobs"])
    seed = int(params["seed"])
    if Path(path).exists():
        trace = _trace(path).iloc[start : start + n].reset_index(drop=True)
        trace.attrs["source"] = f"{path}[{start}:{start + n}]"
    else:  # without ../shared: the Philly-calibrated generator, so the script still runs (and says so)
        trace = generate_trace(n, seed)
        path = "generated"
    workload = elastic(assign(trace, seed), seed, UtilityMix.parse(params["utility_mix"]))
    io = float(params["io_scale"])
    prices = (DEFAULT_PRICES[0], DEFAULT_PRICES[1] * io, DEFAULT_PRICES[2] * io)
    policy = params["policy"]
    cfg = ElasticConfig(
        policy=policy,
        cache_policy=params["cache_policy"] if policy != "autocba" else "silod",
        prices=prices,
        budget_fraction=float(params["budget_fraction"]),
        restart_delay_s=float(params["restart_delay_s"]),
        seed=seed,
    )
    wall = time.perf_counter()
    s = replay(workload, cfg).summary
    return {
        **params,
        "trace": path,
        "jobs": s["jobs"],
        "welfare": s["welfare"],
        "welfare_total": s["welfare_total"],
        "welfare_rate_mean": s["welfare_rate_mean"],
        "welfare_horizon_s": s["welfare_horizon_s"],
        "budget_per_hour": s["budget_per_hour"],
        "spend": s["spend"],
        "spend_per_hour_max": s["spend_per_hour_max"],
        "gpu_hours": s["gpu_hours"],
        "mean_jct_s": s["mean_jct_s"],
        "p50_jct_s": s["p50_jct_s"],
        "p99_jct_s": s["p99_jct_s"],
        "deadlines_met": s["deadlines_met"],
        "restarts": s["restarts"],
        "unfinished_jobs": s["unfinished_jobs"],
        "decisions": s["decisions"],
        "certified_gap_mean": s["certified_gap_mean"],
        "certified_gap_p99": s["certified_gap_p99"],
        "replay_seconds": time.perf_counter() - wall,
    }


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Each baseline row with AutoCBA's welfare, mean JCT and deadline share in the same setting, and the ratios."""
    keys = ["window_start", "window_jobs", "budget_fraction", "utility_mix", "io_scale", "restart_delay_s", "seed"]
    auto = frame[frame["policy"] == "autocba"][[*keys, "welfare", "welfare_total", "mean_jct_s", "deadlines_met"]]
    auto = auto.rename(columns=lambda c: c if c in keys else f"autocba_{c}")
    out = frame[frame["policy"] != "autocba"].merge(auto, on=keys, how="left")
    out["welfare_ratio"] = out["autocba_welfare"] / out["welfare"]
    out["welfare_total_ratio"] = out["autocba_welfare_total"] / out["welfare_total"]
    out["jct_ratio"] = out["mean_jct_s"] / out["autocba_mean_jct_s"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid, write the tidy CSV atomically, print the ratio table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace", default=None, help="Philly-form trace (default: ../shared/data/philly)")
    p.add_argument("--out", default="online_welfare.csv")
    args = p.parse_args(argv)
    rows: list[dict] = []
    done: set[tuple] = set()
    if Path(args.out).exists():  # a rerun resumes: the rows already written are kept, their runs skipped
        rows = pd.read_csv(args.out).to_dict("records")
        done = {tuple(str(r[k]) for k in KEYS) for r in rows}
    start = time.perf_counter()
    for params in grid(args.quick, args.seed):
        if args.trace:
            params["trace"] = args.trace
        if tuple(str(params[k]) for k in KEYS) in done:
            continue
        rows.append(run_one(params))
        frame = pd.DataFrame(rows)  # rewritten after every run, so an interrupted grid keeps its rows
        write_results(args.out, frame, script="online_welfare", seed=args.seed, arguments=vars(args))
    table = ratios(frame)
    pd.set_option("display.width", 200)
    cols = ["window_start", "io_scale", "budget_fraction", "utility_mix", "restart_delay_s", "policy", "cache_policy"]
    show = table[[*cols, "welfare_ratio", "welfare_total_ratio", "jct_ratio", "deadlines_met", "autocba_deadlines_met"]]
    print(show.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    best = table.loc[table["welfare_ratio"].idxmax()] if len(table) else None
    if best is not None and math.isfinite(best["welfare_ratio"]):
        print(
            f"largest AutoCBA/baseline welfare ratio: {best['welfare_ratio']:.3f} "
            f"({best['policy']}[{best['cache_policy']}], IO x{best['io_scale']:g}, "
            f"budget {best['budget_fraction']}, {best['utility_mix']})"
        )
    print(f"{len(rows)} runs in {time.perf_counter() - start:.1f} s; rows in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
