"""Gavel-style max-min fairness (spec/MODEL.md §7), IO-unaware, on the welfare problem P2.

Gavel's max-min fairness policy maximises the smallest normalised
throughput.  On whole options it is progressive filling: repeatedly raise the
job with the lowest normalised throughput (0 while it has no GPUs; ties by
position) to its next option of higher throughput, skipping a job for good
once its next step no longer fits in the GPUs left, until no job can be
raised.  Utility and IO cost play no part; the GPUs are then fed as
io_unaware describes.
"""

from __future__ import annotations

import heapq

import numpy as np

from cbalab.algorithms.baselines.io_unaware import naive, speedup, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def allocate(inst: Instance, cap: int) -> np.ndarray:
    """GPUs per job by max-min progressive filling of normalised throughput within ``cap`` GPUs."""
    value = speedup(inst)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    level = np.zeros(inst.n_jobs)
    left = cap
    heap = [(0.0, j) for j in range(inst.n_jobs) if ptr[j + 1] > ptr[j]]
    heapq.heapify(heap)
    while heap:
        _, j = heapq.heappop(heap)
        rows = range(int(ptr[j]), int(ptr[j + 1]))
        ups = [o for o in rows if g_opt[o] > gpus[j] and value[o] > level[j]]
        if not ups:
            continue
        o = min(ups, key=lambda r: (g_opt[r], -value[r]))
        extra = int(g_opt[o] - gpus[j])
        if extra > left:
            continue
        left -= extra
        gpus[j] = g_opt[o]
        level[j] = value[o]
        heapq.heappush(heap, (float(level[j]), j))
    return gpus


def gavel_fair(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-fair``: max-min fair GPUs on the whole budget, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def gavel_fair_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-fair-tuned``: the same with its best GPU/IO split of the budget (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
