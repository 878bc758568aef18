"""``utility-greedy``: AutoCBA's GPU search without IO awareness, an ablation (docs/model.md §7), on P2.

Not a model of any scheduler: it reads the utilities U_j, which no IO-unaware
GPU scheduler of §7 sees (Optimus reads remaining work and step times, Gavel
throughputs).  It repeatedly moves one job to the larger option with the
largest utility gained per extra GPU, (U_j(g') − U_j(g)) / (g' − g), among the
moves that fit in the GPUs left, until no move gains.  Looking at every larger
option, not only the next one, lets it climb non-concave tables (a sigmoid or
a deadline step) past their flat start.  IO cost plays no part; the GPUs are
then fed as io_unaware describes.  Compared with AutoCBA it isolates what IO
awareness adds to the same kind of greedy; the welfare experiments report it
apart from the schedulers.
"""

from __future__ import annotations

import heapq

import numpy as np

from cbalab.algorithms.baselines.io_unaware import Schedule, naive, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def allocate(inst: Instance, cap: int) -> Schedule:
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
    return Schedule(gpus)


def utility_greedy(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``utility-greedy``: the greedy's GPUs under the naive budget rule, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def utility_greedy_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``utility-greedy-tuned``: the oracle envelope over budget splits (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
