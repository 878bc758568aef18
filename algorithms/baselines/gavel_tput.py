"""Gavel-style max-sum-throughput (spec/MODEL.md §7), IO-unaware, on the welfare problem P2.

Gavel's ``max_sum_throughput`` policy maximises the sum of the jobs'
normalised throughputs.  On P2's whole-option choices that is a
multiple-choice knapsack: choose at most one option per job to maximise
Σ_j speedup_j(g_j) subject to Σ_j g_j ≤ cap, with speedup the throughput
relative to the job's smallest option (io_unaware.speedup).  It is solved
exactly by dynamic programming over the GPUs, ``O(J · |O_j| · cap)`` time and a
J × cap table of choices.  When that table would pass :data:`DP_CELLS`
(about 10^4 jobs on 10^4 GPUs) the policy solves Gavel's own LP instead: the
LP relaxation of the knapsack, by the greedy over the upper concave hull of
every job's (g, speedup) points (Sinha and Zoltners, 1979), which is integral
except for at most one job, kept at its last whole hull point.  Utility and
IO cost play no part in the choice; the GPUs are then fed as io_unaware
describes.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.io_unaware import naive, speedup, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions

#: Largest DP choice table (jobs × (cap + 1) cells, 4 bytes each) before the LP-hull greedy takes over.
DP_CELLS = 10**8


def allocate(inst: Instance, cap: int) -> np.ndarray:
    """GPUs per job maximising Σ normalised throughput within ``cap`` GPUs (exact, or Gavel's LP when huge)."""
    if inst.n_jobs * (cap + 1) > DP_CELLS:
        return allocate_hull(inst, cap)
    value = speedup(inst)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    best = np.zeros(cap + 1)
    choice = np.full((inst.n_jobs, cap + 1), -1, dtype=np.int32)
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


def allocate_hull(inst: Instance, cap: int) -> np.ndarray:
    """The LP relaxation of the knapsack by the hull greedy, rounded down: ``O(J |O_j| log(J |O_j|))``.

    Each job's options with (0, 0) form points (g, speedup); the steps between
    consecutive points of their upper concave hull have decreasing slopes.
    All steps are taken in decreasing slope while they fit; a job whose next
    step does not fit stops there (that step is where the LP goes fractional).
    """
    value = speedup(inst)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    steps: list[tuple[float, int, int, int]] = []
    for j in range(inst.n_jobs):
        rows = sorted(range(int(ptr[j]), int(ptr[j + 1])), key=lambda o: (g_opt[o], -value[o]))
        hull: list[tuple[int, float, int]] = [(0, 0.0, -1)]
        for o in rows:
            g, v = int(g_opt[o]), float(value[o])
            if v <= hull[-1][1]:
                continue
            while len(hull) >= 2:
                (g1, v1, _), (g2, v2, _) = hull[-2], hull[-1]
                if (v2 - v1) * (g - g1) <= (v - v1) * (g2 - g1):
                    hull.pop()
                else:
                    break
            hull.append((g, v, o))
        for i in range(1, len(hull)):
            slope = (hull[i][1] - hull[i - 1][1]) / (hull[i][0] - hull[i - 1][0])
            steps.append((-slope, j, i, hull[i][2]))
    steps.sort()
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    stopped = np.zeros(inst.n_jobs, dtype=bool)
    left = cap
    for _, j, _, o in steps:
        if stopped[j]:
            continue
        extra = int(g_opt[o]) - int(gpus[j])
        if extra > left:
            stopped[j] = True
            continue
        left -= extra
        gpus[j] = g_opt[o]
    return gpus


def gavel_tput(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-tput``: max-sum-throughput GPUs on the whole budget, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def gavel_tput_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-tput-tuned``: the same with its best GPU/IO split of the budget (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
