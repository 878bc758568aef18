"""Gavel-style max-sum-throughput (spec/MODEL.md §7), IO-unaware, on the welfare problem P2.

Gavel's ``max_sum_throughput`` policy maximises the sum of the jobs'
normalised throughputs.  On P2's whole-option choices that is a
multiple-choice knapsack: choose at most one option per job to maximise
Σ_j speedup_j(g_j) subject to Σ_j g_j ≤ cap, with speedup the throughput
relative to the job's smallest option (io_unaware.speedup).  It is solved
exactly by dynamic programming over the GPUs, O(J · |O_j| · cap) time.
Utility and IO cost play no part in the choice; the GPUs are then fed as
io_unaware describes.
"""

from __future__ import annotations

import numpy as np

from algorithms.baselines.io_unaware import naive, speedup, tuned
from models.evaluate import Allocation
from models.instance import Instance


def allocate(inst: Instance, cap: int) -> np.ndarray:
    """GPUs per job maximising Σ normalised throughput within ``cap`` GPUs (exact multiple-choice knapsack)."""
    value = speedup(inst)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    best = np.zeros(cap + 1)
    choice = np.full((inst.n_jobs, cap + 1), -1, dtype=np.int64)
    for j in range(inst.n_jobs):
        new = best.copy()
        for o in range(int(ptr[j]), int(ptr[j + 1])):
            g = int(g_opt[o])
            if g > cap:
                continue
            cand = best[: cap + 1 - g] + value[o]
            better = cand > new[g:] + 1e-12
            new[g:][better] = cand[better]
            choice[j, g:][better] = o
        best = new
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    c = int(np.argmax(best))
    for j in range(inst.n_jobs - 1, -1, -1):
        o = int(choice[j, c])
        if o >= 0:
            gpus[j] = g_opt[o]
            c -= int(g_opt[o])
    return gpus


def gavel_tput(inst: Instance, cache_policy: str = "silod") -> Allocation:
    """Registered ``gavel-tput``: max-sum-throughput GPUs on the whole budget, fed by ``cache_policy``."""
    return naive(inst, allocate, cache_policy)


def gavel_tput_tuned(inst: Instance, cache_policy: str = "silod") -> Allocation:
    """Registered ``gavel-tput-tuned``: the same with its best GPU/IO split of the budget (io_unaware.tuned)."""
    return tuned(inst, allocate, cache_policy)
