"""p3_sides: which side of P3's certified gap is loose on the first N Philly jobs.

    cbalab bench p3-sides --jobs 5000 --exact          (P3* by one exact LP: about 15 min, 8 GB at 5,000 jobs)
    cbalab bench p3-sides --jobs 10000 --window 300    (joint window re-solves of the trace schedule)

The decomposition at trace scale (models/milp/p3_lagrange.py, ``solve_trace``) certifies P3* ∈ [bound, cost].
This benchmark says how much of that gap each side holds, over the CBA cost replay of the first ``jobs`` jobs
(p3_trace's replay), in CPU seconds:

* the trace limits' bound and schedule (since 5023317 with the joint window step of Lemma 8 over the exact
  datasets; the windows below re-solve every dataset), and the bound with every dataset exact (``exact_share``
  0: no instant relaxation, Theorem 4 (iii) of proofs/dynamic_lower_bound.md), which leaves the multipliers as
  the only slack;
* with ``exact``, P3* itself (``solve_dynamic``, one LP, proven): then bound and schedule each have a distance;
* with ``window`` > 0, ``sweeps`` passes of joint re-solves over windows of ``window`` slots (every ``step``
  slots, default ``window``·2/3): all datasets' pairs of the window are re-solved together with the capacity
  rows of its slots, every other column fixed at the schedule's value (moved into the row bounds).  The old
  schedule is a point of each window's LP, so every window costs no more; the pass ends with ``settle`` and its
  check of every row, and its cost is the settled schedule's.  An upper bound on how loose the schedule is: a
  diagnostic, not part of ``solve_trace``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from cbalab.experiments.data import data_path
from cbalab.experiments.simulate import SimConfig, replay_schedule, simulate
from cbalab.experiments.workload import Workload, make_workload
from cbalab.models.instance import InstanceError
from cbalab.models.milp import p3_lagrange
from cbalab.models.milp.dynamic import HIGHS_TOLERANCES, Cluster, Matrix, Schedule, matrix, settle, solve_dynamic
from cbalab.models.milp.statement import Arrays


def philly_schedule(jobs: int) -> tuple[Schedule, Cluster]:
    """P3's schedule and cluster of the CBA cost replay of the shipped trace's first ``jobs`` jobs (p3_trace's)."""
    workload = make_workload(trace=str(data_path("philly")), n_jobs=None, seed=0)
    workload = Workload(workload.jobs.iloc[:jobs].reset_index(drop=True), workload.datasets, workload.settings)
    cfg = SimConfig(policy="cba")
    replay = simulate(workload, cfg)
    cluster = Cluster(
        cache_gb=cfg.cache_gb,
        bandwidth_gbps=cfg.bandwidth_gbps,
        price_cache=float(cfg.prices[1]),
        price_bandwidth=float(cfg.prices[2]),
    )
    return replay_schedule(workload, replay.jobs, period_s=cfg.period_s), cluster


def _window_lp(built: Matrix, x: np.ndarray, free: np.ndarray) -> tuple[Arrays, np.ndarray]:
    """The LP of the ``free`` columns with every other column fixed at ``x``: rows that read a free column, their
    bounds less the fixed columns' activity, costs scaled by the whole LP's largest; and the free columns."""
    _, _, rows = built
    row_of = np.repeat(np.arange(rows.n_rows), np.diff(rows.start))
    at_free = free[rows.index]
    fixed = np.bincount(row_of[~at_free], weights=rows.value[~at_free] * x[rows.index[~at_free]], minlength=rows.n_rows)
    kept = np.flatnonzero(np.bincount(row_of[at_free], minlength=rows.n_rows) > 0)
    cols = np.flatnonzero(free)
    new_col = np.full(rows.n_cols, -1)
    new_col[cols] = np.arange(cols.size)
    new_row = np.full(rows.n_rows, -1)
    new_row[kept] = np.arange(kept.size)
    entry = at_free & (new_row[row_of] >= 0)  # CSR order: rows stay increasing
    lp = replace(
        rows,
        cost=rows.cost[cols] / max(float(np.max(rows.cost)), 1e-300),
        col_lo=rows.col_lo[cols],
        col_hi=rows.col_hi[cols],
        integral=rows.integral[cols],
        unit=rows.unit[cols],
        start=np.concatenate([[0], np.cumsum(np.bincount(new_row[row_of[entry]], minlength=kept.size))]),
        index=new_col[rows.index[entry]],
        value=rows.value[entry],
        row_lo=rows.row_lo[kept] - fixed[kept],
        row_hi=rows.row_hi[kept] - fixed[kept],
        offset=0.0,
        blocks={},
        rows={},
    )
    return lp, cols


def window_sweeps(
    schedule: Schedule, cluster: Cluster, values: dict[str, np.ndarray], window: int, step: int, sweeps: int
) -> list[dict[str, float | None]]:
    """``sweeps`` passes of joint window re-solves (module doc) from the settled schedule ``values``; per pass its
    settled cost (None if the check failed), its CPU seconds, HiGHS's apart, and the windows HiGHS did not solve
    to optimality (each keeps its old values)."""
    import highspy

    built = matrix(schedule, cluster)
    lay, cols, _ = built
    x = np.zeros(built.rows.n_cols)
    for name, idx in cols.items():
        x[idx] = values[name]
    out: list[dict[str, float | None]] = []
    for _ in range(sweeps):
        cpu, highs_cpu, unsolved = time.process_time(), 0.0, 0
        for first in range(0, schedule.n_slots, step):
            inside = (lay.t >= first) & (lay.t < first + window)
            if not inside.any():
                continue
            free = np.zeros(x.size, dtype=bool)
            for idx in cols.values():
                free[idx[inside]] = True
            lp, where = _window_lp(built, x, free)
            h = highspy.Highs()
            for option, setting in (("output_flag", False), ("threads", 1), *HIGHS_TOLERANCES):
                h.setOptionValue(option, setting)
            lp.pass_to(h)
            start = time.process_time()
            h.run()
            highs_cpu += time.process_time() - start
            if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
                x[where] = np.asarray(h.getSolution().col_value)
            else:  # the window keeps its old values, a point of its LP
                unsolved += 1
        settled = settle({name: x[idx] for name, idx in cols.items()}, built, cluster, warmup=True)
        if settled is not None:
            for name, idx in cols.items():
                x[idx] = settled[0][name]
        cost = None if settled is None else settled[1]
        out.append(
            {"cost_io": cost, "cpu_s": time.process_time() - cpu, "highs_cpu_s": highs_cpu, "unsolved": unsolved}
        )
    return out


def measure(
    *, jobs: int = 5000, exact: bool = False, window: int = 0, step: int | None = None, sweeps: int = 1
) -> dict:
    """The two sides of P3's gap on the first ``jobs`` Philly jobs (module doc); CPU seconds.  A value out of
    range is InstanceError naming the option."""
    for option, value, least in (("jobs", jobs, 1), ("window", window, 0), ("step", step, 1), ("sweeps", sweeps, 1)):
        if value is not None and value < least:
            raise InstanceError(option, value, f"must be >= {least}")
    schedule, cluster = philly_schedule(jobs)
    out: dict[str, Any] = {"jobs": jobs, "slots": schedule.n_slots}
    cpu = time.process_time()
    trace = p3_lagrange.solve_trace(schedule, cluster)
    out["trace"] = {
        "bound": trace.bound,
        "cost_io": trace.cost_io,
        "gap": trace.gap,
        "cpu_s": time.process_time() - cpu,
    }
    cpu = time.process_time()
    every = p3_lagrange.solve_trace(schedule, cluster, p3_lagrange.TRACE_LIMITS._replace(exact_share=0.0))
    out["all_exact"] = {"bound": every.bound, "cost_io": every.cost_io, "cpu_s": time.process_time() - cpu}
    if exact:
        cpu = time.process_time()
        whole = solve_dynamic(schedule, cluster)
        out["p3"] = {"status": whole.status, "cost_io": whole.cost_io, "bound": whole.bound}
        out["p3"]["cpu_s"] = time.process_time() - cpu
        if whole.status == "optimal" and whole.cost_io and trace.cost_io:
            out["schedule_above_p3"] = (trace.cost_io - whole.cost_io) / whole.cost_io
            out["bound_below_p3"] = (whole.cost_io - trace.bound) / whole.cost_io
            out["all_exact_bound_below_p3"] = (whole.cost_io - every.bound) / whole.cost_io
    if window > 0 and trace.values:
        passes = window_sweeps(schedule, cluster, trace.values, window, step or max(1, 2 * window // 3), sweeps)
        for one in passes:
            if one["cost_io"] is not None:
                one["gap_to_bound"] = (one["cost_io"] - max(trace.bound, every.bound)) / one["cost_io"]
        out["windows"] = {"window": window, "passes": passes}
    return out
