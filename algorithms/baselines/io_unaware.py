"""What every IO-unaware GPU scheduler of spec/MODEL.md §7 shares: feeding its GPUs under the budget, and tuning.

An IO-unaware scheduler (Gavel, Optimus, Pollux) decides GPUs only.  To run it
on the welfare problem P2 (MODEL.md §5) it is given

* a GPU budget: at most ``split`` × Budget may go to GPUs, so it uses at most
  min(G, ⌊split · Budget / p_g⌋) GPUs (:func:`gpu_cap`); the naive scheduler
  has ``split = 1`` — it knows nothing of IO, so nothing is held back for it;
* a cache policy that feeds the chosen GPUs: one of the cost-problem methods
  of the registry (kind ``cache-policy``), default ``silod``, the SiloD-like price-blind
  fill of C by IO density;
* whatever money is left after GPUs and cache, which buys bandwidth.  If it is
  short (or B is), every job's bandwidth is cut by the same factor and the
  jobs stall; the referee scores them at the stalled rate (§5).

The "tuned" variant of a scheduler is given its best fixed split of the budget
between GPUs and IO, found by trying every split of :data:`SPLITS` on the
instance and scoring each allocation with the referee (:func:`tuned`).  The
grid includes 1, so a tuned scheduler is never worse than its naive self.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from cbalab.algorithms import registry
from cbalab.models.evaluate import Allocation, evaluate, least_feeding, option_lookup
from cbalab.models.instance import Instance
from cbalab.models.kernels import bandwidth_factor, prefix_fill
from cbalab.models.types import SolveOptions

#: Fractions of the budget a tuned scheduler may give to GPUs (the rest is held for IO).
SPLITS = tuple(round(0.05 * i, 2) for i in range(1, 21))

#: A GPU scheduler: (instance, GPU cap) -> GPUs per job, each 0 or one of the job's options.
Scheduler = Callable[[Instance, int], np.ndarray]


def gpu_cap(inst: Instance, split: float) -> int:
    """GPUs a scheduler may use when ``split`` of the budget goes to GPUs: min(G, ⌊split · Budget / p_g⌋)."""
    top = int(inst.option_gpus.max(initial=0)) * inst.n_jobs
    cap = top if inst.gpus is None else min(inst.gpus, top)
    if inst.price_gpu > 0 and math.isfinite(inst.budget_per_hour):
        cap = min(cap, math.floor(split * inst.budget_per_hour / inst.price_gpu + 1e-9))
    return max(cap, 0)


def speedup(inst: Instance) -> np.ndarray:
    """Per option row, the job's normalised throughput: r_j(g) / r_j(g_min), its rate at its smallest option.

    Throughput is proportional to the data rate (MODEL.md §2: r = samples/s ×
    sample size), so this is the per-job normalised throughput Gavel's
    policies use.  A job whose smallest option reads no data falls back to
    g / g_min.
    """
    ptr = inst.option_ptr
    first = ptr[:-1][np.diff(ptr) > 0]
    job = inst.option_job()
    start = np.zeros(inst.n_jobs, dtype=np.int64)
    start[job[first]] = first
    base_rows = start[job]
    base_rate = inst.option_io_gbps[base_rows]
    by_rate = inst.option_io_gbps / np.where(base_rate > 0, base_rate, 1.0)
    by_gpus = inst.option_gpus / inst.option_gpus[base_rows]
    return np.where(base_rate > 0, by_rate, by_gpus)


def policy_feeding(inst: Instance, gpus: np.ndarray, rates: np.ndarray, policy: str) -> tuple[np.ndarray, np.ndarray]:
    """The cache per dataset and bandwidth per job that cost-problem ``policy`` gives the jobs at ``rates``.

    The policy is a registered cache policy (algorithms/registry.py), run on
    the instance with the scheduler's GPUs and rates as the fixed allocation
    of P1.  ``silod`` (the default of every scheduler) fills C by decreasing
    IO density, price-blind.  ``cba``, when P1 is infeasible under B (no
    cache avoids a stall), falls back to ``silod``, whose densest fill then
    stalls least.  The bandwidth is what keeps every job unstalled; B and the
    budget are applied by :func:`feed_within_budget`.
    """
    method = registry.cache_policy(policy)
    fixed = inst.replace(job_gpus=np.asarray(gpus, dtype=np.int64), job_io_gbps=np.asarray(rates, dtype=float))
    alloc = method(fixed, SolveOptions())
    if not alloc.has_allocation:
        return policy_feeding(inst, gpus, rates, "silod")
    return np.asarray(alloc.cache_gb, dtype=float), np.asarray(alloc.bandwidth_gbps, dtype=float)


def feed_within_budget(inst: Instance, gpus: np.ndarray, policy: str = "silod") -> Allocation:
    """Feed a scheduler's GPUs with ``policy``'s cache and the money left for bandwidth (MODEL.md §5, §7).

    The cache is cut (densest datasets kept) to the money left after GPUs;
    each job's unstalled bandwidth, max(the policy's b_j, r_j (1 − h_k(j)))
    for the cache that is left, is then scaled by one common factor so that
    Σ b ≤ B and the bill stays within the budget.  ``extra["io_factor"]`` is
    that factor (1: no job stalls).  ``gpus`` must already respect G and the
    budget (see :func:`gpu_cap`).
    """
    inst.require_continuous("the welfare problem is modelled")
    gpus = np.asarray(gpus, dtype=np.int64)
    _, rates, _ = option_lookup(inst, gpus)
    d = inst.dataset_size_gb
    money = inst.budget_per_hour - inst.price_gpu * float(gpus.sum())
    cache, policy_bw = policy_feeding(inst, gpus, rates, policy)
    if inst.price_cache > 0 and math.isfinite(money) and inst.price_cache * float(cache.sum()) > money:
        R = inst.dataset_demand(rates)
        order = np.argsort(-(R / d), kind="stable")
        cache = prefix_fill(cache, order, max(money, 0.0) / inst.price_cache)
    money -= inst.price_cache * float(cache.sum())
    need = np.maximum(policy_bw, least_feeding(inst, rates, cache))
    factor = bandwidth_factor(inst, float(need.sum()), money)
    return Allocation(
        gpus=gpus,
        cache_gb=cache,
        bandwidth_gbps=need * factor,
        status="feasible",
        extra={"io_factor": factor, "cache_policy": policy},
    )


def naive(inst: Instance, schedule: Scheduler, policy: str = "silod") -> Allocation:
    """The IO-unaware scheduler as it is: every GPU the budget and G allow, then fed by ``policy``."""
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    alloc = feed_within_budget(inst, schedule(inst, gpu_cap(inst, 1.0)), policy)
    alloc.extra["split"] = 1.0
    return alloc


def tuned(inst: Instance, schedule: Scheduler, policy: str = "silod", time_limit: float | None = None) -> Allocation:
    """The scheduler with its best fixed GPU/IO split of the budget over :data:`SPLITS`, scored by the referee.

    The naive split 1 is scored first, so that a search stopped by
    ``time_limit`` (seconds for the whole call, checked between splits) is
    never worse than the naive scheduler; such an answer is ``time_limit``
    with a reason counting the splits tried.  Otherwise the grid is searched
    in increasing order as before (ties go to the larger split).
    """
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    started = time.perf_counter()
    scored: dict[int, tuple[Allocation, float]] = {}

    def score(cap: int) -> tuple[Allocation, float]:
        if cap not in scored:
            alloc = feed_within_budget(inst, schedule(inst, cap), policy)
            scored[cap] = (alloc, float(evaluate(inst, alloc, "welfare").welfare or 0.0))
        return scored[cap]

    naive_cap = gpu_cap(inst, 1.0)
    score(naive_cap)
    best: Allocation | None = None
    best_welfare = -math.inf
    seen: set[int] = set()
    stopped = False
    for split in SPLITS:
        cap = gpu_cap(inst, split)
        if cap in seen:
            continue
        if cap not in scored and time_limit is not None and time.perf_counter() - started >= time_limit:
            stopped = True
            break
        alloc, welfare = score(cap)
        seen.add(cap)
        if welfare >= best_welfare:
            best, best_welfare = alloc, welfare
            alloc.extra["split"] = split
    if stopped:
        alloc, welfare = scored[naive_cap]
        if naive_cap not in seen and welfare >= best_welfare:
            best, best_welfare = alloc, welfare
            alloc.extra["split"] = 1.0
        assert best is not None
        caps = len({gpu_cap(inst, x) for x in SPLITS})
        best.status = "time_limit"
        best.reason = f"the time limit of {time_limit:g} s ran out after {len(scored)} of {caps} GPU/IO splits"
    assert best is not None
    return best
