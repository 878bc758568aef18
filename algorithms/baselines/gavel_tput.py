"""Gavel's max-sum-throughput (docs/model.md §7), IO-unaware, on the welfare problem P2.

Upstream: stanford-futuredata/gavel (commit c4fa400),
``scheduler/policies/max_sum_throughput.py``, ``ThroughputSumWithPerf`` (through
``ThroughputNormalizedByCostSumWithPerfSLOs.get_allocation`` with no SLOs and
unit instance costs).  Gavel's LP chooses time fractions x_j ∈ [0, 1] with
Σ_j s_j x_j ≤ G (s_j the job's scale factor) and maximises Σ_j throughput_j x_j,
raw throughputs summed.

cbalab keeps the objective and makes two choices of its own:

* **Whole options.**  Each job runs at one option or waits (no time sharing),
  so the LP becomes a multiple-choice knapsack: at most one option per job,
  Σ_j g_j ≤ cap, maximise Σ_j value_j(g_j).  It is solved exactly by dynamic
  programming over the GPUs, ``O(J · |O_j| · cap)`` time and a J × cap table
  of choices; when that table would pass :data:`DP_CELLS` (about 10^4 jobs on
  10^4 GPUs) the policy solves Gavel's own LP instead, by the greedy over the
  upper concave hull of every job's (g, value) points (Sinha and Zoltners,
  1979), which is integral except for at most one job (:func:`allocate_hull`).
  Ties go to more GPUs, so that no GPU sits idle for nothing while a job could
  hold it at the same value.
* **Normalised throughput** (the default, ``raw=False``): value_j(g) is the
  job's throughput relative to its smallest option (io_unaware.speedup), so a
  job's value does not depend on its model's samples per second.  Gavel's code
  sums raw throughputs; ``allocate(..., raw=True)`` does that, with the data
  rate r_j(g) as the throughput (samples/s × sample size, docs/model.md §2),
  which is Gavel's sum when every sample has the same size.  With one option
  per job and a whole LP solution the two coincide (the fixtures of
  tests/fixtures/upstream/gavel_max_sum_throughput.json).

Utility and IO cost play no part in the choice; the GPUs are then fed as
io_unaware describes.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.io_unaware import Schedule, naive, speedup, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions

#: Largest DP choice table (jobs × (cap + 1) cells, 4 bytes each) before the LP-hull greedy takes over.
DP_CELLS = 10**8


#: Relative tolerance of a tie in the knapsack's value (floating point): a tie goes to more GPUs.
TIE = 1e-12


def values(inst: Instance, raw: bool = False) -> np.ndarray:
    """Per option row, the value Gavel's objective sums: normalised throughput, or the raw rate r_j(g) if ``raw``."""
    return np.asarray(inst.option_io_gbps, dtype=float) if raw else speedup(inst)


def allocate(inst: Instance, cap: int, raw: bool = False) -> Schedule:
    """GPUs per job maximising Σ value within ``cap`` GPUs (exact, or Gavel's LP when huge); ties to more GPUs."""
    if inst.n_jobs * (cap + 1) > DP_CELLS:
        return allocate_hull(inst, cap, raw)
    value = values(inst, raw)
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    best = np.zeros(cap + 1)
    choice = np.full((inst.n_jobs, cap + 1), -1, dtype=np.int32)
    for j in range(inst.n_jobs):
        new = best.copy()
        for o in sorted(range(int(ptr[j]), int(ptr[j + 1])), key=lambda r: g_opt[r]):
            g = int(g_opt[o])
            if g > cap:
                continue
            cand = best[: cap + 1 - g] + value[o]
            better = cand >= new[g:] - TIE * np.maximum(1.0, np.abs(new[g:]))
            new[g:][better] = np.maximum(cand[better], new[g:][better])
            choice[j, g:][better] = o
        best = new
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    c = cap
    for j in range(inst.n_jobs - 1, -1, -1):
        o = int(choice[j, c])
        if o >= 0:
            gpus[j] = g_opt[o]
            c -= int(g_opt[o])
    return Schedule(gpus)


def allocate_hull(inst: Instance, cap: int, raw: bool = False) -> Schedule:
    """Gavel's LP (the knapsack's relaxation) by the hull greedy, made whole: ``O(J |O_j| log(J |O_j|))``.

    Each job's options with (0, 0) form points (g, value); the steps between
    consecutive points of their upper concave hull have decreasing slopes.
    All steps are taken in decreasing slope while they fit; a job whose next
    step does not fit stops there (that step is where the LP goes fractional).
    A stopped job then takes the best of its options that fits in its GPUs and
    those left, if that beats what it holds: a hull step may skip options (a
    superlinear first step from 0 to 2 GPUs passes over the 1-GPU option),
    and rounding down alone would leave such a job with nothing.
    """
    value = values(inst, raw)
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
    held = np.zeros(inst.n_jobs)
    stopped = np.zeros(inst.n_jobs, dtype=bool)
    left = cap
    for _, j, _, o in steps:
        if stopped[j]:
            continue
        extra = int(g_opt[o]) - int(gpus[j])
        if extra > left:
            stopped[j] = True
            rows = [r for r in range(int(ptr[j]), int(ptr[j + 1])) if g_opt[r] <= gpus[j] + left]
            r = max(rows, key=lambda r: (value[r], g_opt[r]), default=None)
            if r is not None and value[r] > held[j]:
                left -= int(g_opt[r]) - int(gpus[j])
                gpus[j], held[j] = g_opt[r], value[r]
            continue
        left -= extra
        gpus[j], held[j] = g_opt[o], value[o]
    return Schedule(gpus)


def gavel_tput(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-tput``: max-sum-throughput GPUs, naive budget rule, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def gavel_tput_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-tput-tuned``: the oracle envelope over budget splits (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
