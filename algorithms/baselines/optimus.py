"""Optimus, as Pollux's artifact implements it (docs/model.md §7), IO-unaware, on the welfare problem P2.

Upstream: petuum/adaptdl, branch ``osdi21-artifact`` (commit c793c70),
``simulator/optimus.py``, ``OptimusPolicy.optimize``.  Its rule, and how each
step maps onto an option table:

1. Every job gets its minimum number of replicas (1 upstream; here its
   smallest option), jobs taken by that minimum and then in arrival order
   (upstream sorts by ``min_replicas``, a stable sort of the arrival-ordered
   dict), while GPUs last; a job whose minimum does not fit gets nothing and
   never more.
2. Then GPUs go, one step at a time, to the job with the largest gain, the
   reduction in its remaining time: upstream
   ``(predict_step_time(n) − predict_step_time(n + 1)) × remaining iterations``.
   Here the job's next option n′ > n (the next larger GPU count in its table)
   gives ``work_j × (1/speed(n) − 1/speed(n′)) / (n′ − n)`` per extra GPU, with
   speed the throughput relative to the smallest option (io_unaware.speedup)
   and ``work_j`` the remaining work in hours at the smallest option
   (``Instance.job_work``; without it every job has equal work, 1).  Ties go to
   the earlier job of step 1's order, as upstream's ``max`` over the dict.
3. A job whose next step gains nothing (a flat or falling table), is at its
   largest option (upstream ``max_replicas``), or needs more GPUs than are
   left, gets no more (upstream sets its gain to 0).  It stops when no job
   gains or no GPU is left.

Where it departs from upstream: a step may be more than one GPU, because an
option table lists only some counts (1, 2, 4, 8); upstream's tables are
contiguous, where the two coincide (the fixtures of
tests/fixtures/upstream/pollux_optimus.json).  The step time comes from the
measured option table, not from Pollux's fitted throughput model, and
placement on nodes plays no part.  Optimus never reads a utility U_j nor IO;
the GPUs are then fed as io_unaware describes.
"""

from __future__ import annotations

import heapq

import numpy as np

from cbalab.algorithms.baselines.io_unaware import Schedule, naive, smallest_option, speedup, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def allocate(inst: Instance, cap: int) -> Schedule:
    """GPUs per job by Optimus's rule (module docstring) within ``cap`` GPUs: minimum first, then remaining time."""
    n = inst.n_jobs
    speed = speedup(inst)
    work = np.ones(n) if inst.job_work is None else np.asarray(inst.job_work, dtype=float)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    ladders = [sorted(range(int(ptr[j]), int(ptr[j + 1])), key=lambda o: g_opt[o]) for j in range(n)]
    first = smallest_option(inst)
    order = sorted((j for j in range(n) if first[j] >= 0), key=lambda j: (int(g_opt[first[j]]), j))
    rank = {j: i for i, j in enumerate(order)}
    gpus = np.zeros(n, dtype=np.int64)
    step = np.zeros(n, dtype=np.int64)
    left = cap
    for j in order:
        g = int(g_opt[first[j]])
        if g <= left:
            gpus[j] = g
            left -= g

    def gain(j: int) -> float:
        ladder = ladders[j]
        if step[j] + 1 >= len(ladder):
            return 0.0
        now, nxt = ladder[step[j]], ladder[step[j] + 1]
        extra = int(g_opt[nxt] - g_opt[now])
        if extra > left:
            return 0.0
        return float(work[j] * (1.0 / speed[now] - 1.0 / speed[nxt]) / extra)

    heap = [(-gain(j), rank[j], j) for j in order if gpus[j] > 0]
    heap = [item for item in heap if item[0] < 0]
    heapq.heapify(heap)
    while heap and left > 0:
        _, _, j = heapq.heappop(heap)
        if gain(j) <= 0:  # a job's gain changes only when it moves, or drops to 0 once its step no longer fits
            continue
        step[j] += 1
        left -= int(g_opt[ladders[j][step[j]]] - gpus[j])
        gpus[j] = g_opt[ladders[j][step[j]]]
        value = gain(j)
        if value > 0:
            heapq.heappush(heap, (-value, rank[j], j))
    return Schedule(gpus)


def optimus(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``optimus``: Optimus's GPUs under the naive budget rule, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def optimus_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``optimus-tuned``: the oracle envelope over budget splits (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
