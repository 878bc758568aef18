"""Gavel's max-min fairness (docs/model.md §7), IO-unaware, on the welfare problem P2, as time shares.

Upstream: stanford-futuredata/gavel (commit c4fa400),
``scheduler/policies/max_min_fairness.py``, ``MaxMinFairnessPolicyWithPerf.get_allocation``
(and ``MaxMinFairnessPolicy``, which sets every throughput to 1).  Gavel's LP
chooses time fractions x_j ∈ [0, 1] on each GPU type, with Σ_j s_j x_j ≤ G
(s_j the job's scale factor, its GPU count) and maximises
min_j throughput_j · s_j · x_j / proportional_j.  With one GPU type the
proportional throughput is throughput_j itself (``ProportionalPolicy``: every
job gets the whole type, scaled to a row sum of 1), so the objective is
min_j s_j x_j: the GPU-time share of the worst-off job, whose optimum is
t* = min(G / n, min_j s_j).

cbalab realises that optimum by water-filling, the max-min fair point that
also gives the slack left by capped jobs to the others: every job gets the
GPU-time t_j = min(t, s_j^max), the level t set so that Σ_j t_j = G (or every
job at its largest option when they all fit).  Every job with an option the
cluster can hold gets a share above 0: none is starved.  A job whose every
option needs more GPUs than the cluster has gets none: Gavel's LP would give it
a share, but its rounds place a job on its whole scale factor, so such a job
never runs and the other jobs use that GPU time (:func:`allocate`).  A job then
runs a share x_j = t_j / g_j of the time at g_j, the smallest of its options
that can hold t_j.

Where it departs from upstream: Gavel's jobs have one scale factor, cbalab's
an option table; a job with one option is exactly Gavel's (the fixtures of
tests/fixtures/upstream/gavel_max_min_fairness.json check the objective), and
with several it holds its share on the fewest GPUs that can carry it.  Gavel's
LP leaves the split above t* to the solver (ECOS returns some optimal point);
water-filling is the one that is max-min fair all the way up.  Time sharing is
scored as a fluid (docs/model.md §5, "Time sharing"): Gavel realises it in
rounds.  Utility and IO cost play no part; the GPUs are then fed as io_unaware
describes.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.io_unaware import Schedule, naive, tuned
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def level(caps: np.ndarray, cap: float) -> float:
    """The water level t with Σ_j min(t, caps_j) = cap (inf when Σ caps ≤ cap): equal GPU-time, capped per job."""
    if caps.size == 0 or float(caps.sum()) <= cap:
        return float("inf")
    c = np.sort(caps.astype(float))
    below = np.concatenate([[0.0], np.cumsum(c)[:-1]])
    share = (cap - below) / np.arange(c.size, 0, -1)
    i = int(np.flatnonzero(share <= c)[0])
    return float(share[i])


def allocate(inst: Instance, cap: int, placed: bool = True) -> Schedule:
    """Equal GPU-time shares within ``cap`` GPUs by water-filling (module docstring): GPUs and time share per job.

    ``placed`` keeps to the options the cluster's G can hold: Gavel's rounds place a job on its whole scale
    factor, so one above G never runs and its GPU time goes to the others (and the referee refuses a
    time-shared g_j > G, docs/model.md §5).  ``placed=False`` is Gavel's LP as such, which gives such a job a
    share too (tests/test_baselines_upstream.py compares it with upstream's answers).
    """
    n = inst.n_jobs
    ptr, g_opt = inst.option_ptr, inst.option_gpus
    fit = g_opt <= inst.gpus if placed and inst.gpus is not None else np.ones(g_opt.size, dtype=bool)
    fitting = np.r_[0, np.cumsum(fit)]
    has = fitting[ptr[1:]] > fitting[ptr[:-1]]
    gpus = np.zeros(n, dtype=np.int64)
    share = np.zeros(n)
    if cap <= 0 or not has.any():
        return Schedule(gpus, share)
    jobs = np.flatnonzero(has)
    top = np.maximum.reduceat(np.where(fit, g_opt, 0), ptr[:-1][has])
    t = np.minimum(level(top, float(cap)), top)
    for j, tj in zip(jobs.tolist(), t.tolist()):
        counts = g_opt[ptr[j] : ptr[j + 1]][fit[ptr[j] : ptr[j + 1]]]
        g = int(counts[counts >= tj * (1 - 1e-12)].min())
        gpus[j] = g
        share[j] = min(1.0, tj / g)
    return Schedule(gpus, share)


def gavel_fair(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-fair``: max-min fair time shares, naive budget rule, fed by ``options.cache_policy``."""
    return naive(inst, allocate, options.cache_policy or "silod")


def gavel_fair_tuned(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered ``gavel-fair-tuned``: the oracle envelope over budget splits (io_unaware.tuned)."""
    return tuned(inst, allocate, options.cache_policy or "silod", options.time_limit)
