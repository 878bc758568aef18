"""Optimus/Pollux-style marginal-gain greedy (spec/MODEL.md §7), IO-unaware, on the welfare problem P2.

Optimus gives the next GPUs to the job whose objective gains most from them;
in P2 a job's gain from speed is its utility table, so the greedy repeatedly
moves one job to the larger option with the largest utility gained per extra
GPU, (U_j(g') − U_j(g)) / (g' − g), among the moves that fit in the GPUs left,
until no move gains.  Looking at every larger option, not only the next one,
lets it climb non-concave tables (a sigmoid or a deadline step) past their
flat start.  IO cost plays no part; the GPUs are then fed as io_unaware
describes.
"""

from __future__ import annotations

import heapq

import numpy as np

from cbalab.algorithms.baselines.io_unaware import naive, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def allocate(inst: Instance, cap: int) -> np.ndarray:
    """GPUs per job by greedy marginal utility per GPU within ``cap`` GPUs (lazy max-heap)."""
    ptr, g_opt, u_opt = inst.option_ptr, inst.option_gpus, inst.option_utility
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    util = np.zeros(inst.n_jobs)
    left = cap

    def best_move(j: int) -> tuple[float, int] | None:
        best: tuple[float, int] | None = None
        for o in range(int(ptr[j]), int(ptr[j + 1])):
            extra = int(g_opt[o] - gpus[j])
            gain = float(u_opt[o] - util[j])
            if 0 < extra <= left and gain > 0 and (best is None or gain / extra > best[0]):
                best = (gain / extra, o)
        return best

    heap = []
    for j in range(inst.n_jobs):
        move = best_move(j)
        if move is not None:
            heap.append((-move[0], j, move[1]))
    heapq.heapify(heap)
    while heap:
        _, j, o = heapq.heappop(heap)
        extra = int(g_opt[o] - gpus[j])
        if extra > left or extra <= 0:
            move = best_move(j)
            if move is not None:
                heapq.heappush(heap, (-move[0], j, move[1]))
            continue
        left -= extra
        gpus[j] = g_opt[o]
        util[j] = u_opt[o]
        move = best_move(j)
        if move is not None:
            heapq.heappush(heap, (-move[0], j, move[1]))
    return gpus


def optimus(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``optimus``: marginal-gain greedy GPUs on the whole budget, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def optimus_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``optimus-tuned``: the same with its best GPU/IO split of the budget (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
