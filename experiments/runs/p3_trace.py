"""p3_trace: P3, the offline dynamic optimum, on the whole Philly trace, by Lagrangian decomposition.

    cbalab bench p3-trace            (--jobs N: only the first N jobs; --exact-share S, --chunk-pairs P,
                                      --window-slots W (0: no joint step): other limits)

Measures in one run, in CPU seconds (``time.process_time``, so that the machine's other load does not count):

* the CBA cost replay of the whole trace (what ``cbalab simulate --trace data/philly/philly_jobs.csv.gz
  --policy cba`` does: 82,247 jobs, default cluster and prices, warm-up on);
* P3 over that replay's schedule as ``--offline-optimum`` solves it (experiments/simulate.py
  ``offline_optimum``): on the whole trace, :func:`cbalab.models.milp.p3_lagrange.solve_trace`, the
  decomposition with its fixed deterministic limits TRACE_* (no wall clock: the same numbers on any machine);

and prints JSON: the ratio of the two CPU times (goal ≤ 15) and P3's certified gap, (cost − bound) / cost
between its settled schedule and its Lagrangian bound (goal ≤ 2 %), and the gap of the bound to CBA's own
replay cost, itself a P3-feasible schedule when no job stalls (proofs/dynamic_lower_bound.md, Theorem 1).
"""

from __future__ import annotations

import time

from cbalab.experiments.data import data_path
from cbalab.experiments.simulate import SimConfig, offline_optimum, simulate
from cbalab.experiments.workload import Workload, make_workload
from cbalab.models.instance import InstanceError
from cbalab.models.milp import p3_lagrange


def measure(
    *,
    jobs: int | None = None,
    exact_share: float | None = None,
    chunk_pairs: int | None = None,
    window_slots: int | None = None,
) -> dict:
    """The CBA replay and P3's decomposition on the Philly trace (its first ``jobs`` jobs, None: all); CPU s.

    ``exact_share``, ``chunk_pairs`` and ``window_slots`` replace TRACE_EXACT_SHARE, TRACE_CHUNK_PAIRS and
    TRACE_WINDOW_SLOTS in the :class:`~cbalab.models.milp.p3_lagrange.TraceLimits` passed to ``offline_optimum``
    (how much bound a finer relaxation buys, how much schedule the joint windows buy; ``--offline-optimum``
    itself always uses the TRACE_* limits).  A window below 0 is InstanceError naming the option.
    """
    limits = p3_lagrange.TRACE_LIMITS
    if exact_share is not None:
        limits = limits._replace(exact_share=exact_share)
    if chunk_pairs is not None:
        limits = limits._replace(chunk_pairs=chunk_pairs)
    if window_slots is not None:
        if window_slots < 0:
            raise InstanceError("window_slots", window_slots, "must be >= 0 (0: no joint window step)")
        limits = limits._replace(window_slots=window_slots)
    workload = make_workload(trace=str(data_path("philly")), n_jobs=None, seed=0)
    if jobs is not None:
        workload = Workload(workload.jobs.iloc[:jobs].reset_index(drop=True), workload.datasets, workload.settings)
    cfg = SimConfig(policy="cba")
    cpu = time.process_time()
    replay = simulate(workload, cfg)
    replay_cpu = time.process_time() - cpu
    cpu = time.process_time()
    # What ``cbalab simulate --offline-optimum`` adds to summary.json: above LARGE_PAIRS pairs, solve_trace.
    out = offline_optimum(workload, cfg, replay, trace_limits=limits)
    p3_cpu = time.process_time() - cpu
    cba_io = float(replay.summary["cost"]["io"])
    return {
        "jobs": len(workload.jobs),
        "slots": out["slots"],
        "limits": limits._asdict(),
        "replay_cpu_s": replay_cpu,
        "p3_cpu_s": p3_cpu,
        "cpu_ratio": p3_cpu / replay_cpu,
        "p3_method": out.get("method", "whole LP"),
        "p3_status": out["status"],
        "p3_bound": out["bound"],
        "p3_cost_io": out["cost_io"],
        "p3_gap": out.get("gap"),
        "p3_iterations": out.get("iterations"),
        "p3_message": out["message"],
        "cba_io": cba_io,
        "cba_stall_hours": float(replay.summary["stall_hours"]),
        "gap_to_cba": (cba_io - out["bound"]) / cba_io if cba_io > 0 else None,
    }
