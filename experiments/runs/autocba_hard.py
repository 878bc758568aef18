"""AutoCBA on a hard class: the budget binds, IO is dear and caching changes the optimum.

Generator (experiments.workload.generate_welfare, instance i uses seed i): 3-50 jobs (3 + i mod 48),
max(1, jobs // 4) datasets, mixed utility shapes, p_g = 2.5 $/GPU·h, p_b uniform in [5, 60] $/(GB/s)·h,
p_c uniform in [2e-3, 5e-2] $/GB·h (both drawn from seed i), budget fraction uniform in [0.1, 0.5], cache
fraction uniform in [0.05, 0.3].  A candidate is kept when, at the proven no-stall optimum P2 (the ``milp``
method, MIP gap 0), the budget binds (spend ≥ (1 − 1e-6) × budget) and caching matters (the optimum with
C = 0 is lower by more than 1e-9 relative).  Gaps are against P2 (AutoCBA never stalls), scored by the referee.

    nice -n 10 cbalab bench autocba-hard [--candidates 3000] [--out results/autocba_hard]
        [--reuse earlier/hard.csv]   # the optima and filters of an earlier run: AutoCBA only
        [--exact]                    # AutoCBA with its exact mode on small instances

Prints progress and rewrites ``hard.csv`` (one row per candidate) every 10 candidates and at the end,
with ``summary.csv`` beside it: over the kept instances, all of them and by size band (3-15, 16-30, 31-50
jobs), the count, mean, p99 and worst gap, the share solved to the optimum, and AutoCBA's CPU seconds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cbalab.algorithms.autocba import autocba
from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload import generate_welfare
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import Instance
from cbalab.models.solve import welfare_milp
from cbalab.models.types import SolveOptions

SCRIPT = "cbalab.experiments.runs.autocba_hard"


def candidate(i: int) -> tuple[Instance, dict]:
    """Candidate i of the hard class (see the module docstring) and its parameters."""
    rng = np.random.default_rng([12, i])
    n = 3 + i % 48
    params: dict[str, Any] = {
        "seed": i,
        "jobs": n,
        "datasets": max(1, n // 4),
        "price_bandwidth": float(rng.uniform(5.0, 60.0)),
        "price_cache": float(rng.uniform(2e-3, 5e-2)),
        "budget_fraction": float(rng.uniform(0.1, 0.5)),
        "cache_fraction": float(rng.uniform(0.05, 0.3)),
    }
    inst = generate_welfare(
        n,
        max(1, n // 4),
        seed=i,
        utility_mix="mixed",
        budget_fraction=params["budget_fraction"],
        cache_fraction=params["cache_fraction"],
        prices=(2.5, params["price_cache"], params["price_bandwidth"]),
    )
    return inst, params


def measure_candidate(i: int, time_limit: float, known: dict | None = None, exact: bool = False) -> dict:
    """AutoCBA vs the proven P2 optimum on candidate i, with the two class filters.

    ``known`` is candidate i's row of an earlier run (``--reuse``): its optimum and class filters are taken
    from there and only AutoCBA runs again.  ``exact`` runs AutoCBA with its exact mode (``--exact``).
    """
    inst, row = candidate(i)
    if known is not None:
        row["milp_status"] = known["milp_status"]
        if known["milp_status"] != "optimal":
            return row
        opt = float(known["optimum"])
        binds, matters = bool(known["budget_binds"]), bool(known["caching_matters"])
    else:
        optimum = welfare_milp(inst, SolveOptions(time_limit=time_limit))
        row["milp_status"] = optimum.status
        if optimum.status != "optimal":
            return row
        ev = evaluate(inst, optimum, "welfare")
        opt = ev.welfare_score
        no_cache = welfare_milp(inst.replace(cache_gb=0.0), SolveOptions(time_limit=time_limit))
        binds = ev.cost_total >= (1 - 1e-6) * inst.budget_per_hour
        matters = no_cache.status == "optimal" and evaluate(inst, no_cache, "welfare").welfare_score < opt * (1 - 1e-9)
    start = time.process_time()
    mine = autocba(inst, exact=exact)
    seconds = time.process_time() - start
    ours = evaluate(inst, mine, "welfare")
    if not ours.feasible:
        raise AssertionError(f"seed {i}: the referee rejects AutoCBA: {ours.violations}")
    row.update(
        optimum=opt,
        autocba=ours.welfare_score,
        autocba_cpu_seconds=seconds,
        autocba_bound=mine.bound,
        autocba_status=mine.status,
        gap=(opt - ours.welfare_score) / opt if opt > 0 else 0.0,
        budget_binds=binds,
        caching_matters=matters,
    )
    row["hard"] = bool(row["budget_binds"] and row["caching_matters"])
    return row


#: Size bands of the summary (jobs, inclusive).
BANDS = ((3, 50), (3, 15), (16, 30), (31, 50))


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Gap statistics over the kept (hard) instances of ``df``, overall and by size band."""
    hard = df[df.get("hard", pd.Series(False, index=df.index)).fillna(False).astype(bool)]
    rows = []
    for lo, hi in BANDS:
        band = hard[(hard["jobs"] >= lo) & (hard["jobs"] <= hi)]
        gap = band["gap"].to_numpy(float) if len(band) else np.zeros(0)
        rows.append(
            {
                "jobs_min": lo,
                "jobs_max": hi,
                "candidates": int(((df["jobs"] >= lo) & (df["jobs"] <= hi)).sum()),
                "kept": len(band),
                "mean_gap": float(gap.mean()) if gap.size else float("nan"),
                "p99_gap": float(np.quantile(gap, 0.99)) if gap.size else float("nan"),
                "worst_gap": float(gap.max()) if gap.size else float("nan"),
                "share_optimal": float((gap <= 1e-9).mean()) if gap.size else float("nan"),
                "autocba_cpu_mean_s": float(band["autocba_cpu_seconds"].mean()) if len(band) else float("nan"),
                "autocba_cpu_max_s": float(band["autocba_cpu_seconds"].max()) if len(band) else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def measure(
    *,
    candidates: int = 3000,
    first: int = 0,
    time_limit: float = 60.0,
    out: str = "results/autocba_hard",
    exact: bool = False,
    reuse: str | None = None,
) -> None:
    """Measure candidates ``first`` … ``first + candidates - 1``, keep the hard ones, print their gap statistics.

    ``time_limit`` bounds each P2 solve (seconds); ``exact`` runs AutoCBA with its exact mode
    (``autocba(..., exact=True)``); ``reuse`` is the hard.csv of an earlier run, whose optima and class filters
    are reused so that only AutoCBA runs again.  ``cbalab bench autocba-hard`` runs it.
    """
    arguments = {"candidates": candidates, "first": first, "time_limit": time_limit, "out": out, "exact": exact}
    arguments["reuse"] = reuse
    folder = Path(out)
    known: dict[int, dict] = {}
    if reuse is not None:
        known = {int(r["seed"]): r for r in pd.read_csv(reuse, comment="#").to_dict("records")}
    rows: list[dict] = []
    begin = time.perf_counter()
    for i in range(first, first + candidates):
        rows.append(measure_candidate(i, time_limit, known[i] if reuse is not None else None, exact))
        if len(rows) % 10 == 0 or i == first + candidates - 1:
            df = pd.DataFrame(rows)
            write_results(folder / "hard.csv", df, script=SCRIPT, seed=first, arguments=arguments)
            table = summarise(df)
            write_results(folder / "summary.csv", table, script=SCRIPT, seed=first, arguments=arguments)
            top = table.iloc[0]
            print(
                f"[{len(rows)} candidates, {time.perf_counter() - begin:.0f} s] hard {int(top['kept'])}: "
                f"mean gap {100 * top['mean_gap']:.4f}% p99 {100 * top['p99_gap']:.4f}% "
                f"worst {100 * top['worst_gap']:.4f}%",
                flush=True,
            )
    print(f"wrote {folder / 'hard.csv'}")
