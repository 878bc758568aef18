"""What every IO-unaware GPU scheduler of docs/model.md §7 shares: a GPU cap, feeding its GPUs, and the bill.

An IO-unaware scheduler (Gavel, Optimus, Pollux) decides GPUs only.  To run it
on the welfare problem P2 (docs/model.md §5) it is given

* a GPU cap: at most ``split`` × Budget may go to GPUs, so it uses at most
  min(G, ⌊split · Budget / p_g⌋) GPUs (:func:`gpu_cap`);
* a cache policy that feeds the chosen GPUs: one of the cost-problem methods
  of the registry (kind ``cache-policy``), default ``silod``, the SiloD-like price-blind
  fill of C by IO density;
* whatever money is left after GPUs and cache, which buys bandwidth.  If it is
  short (or B is), every job's bandwidth is cut by the same factor and the
  jobs stall; the referee scores them at the stalled rate (§5).

A scheduler's answer is a :class:`Schedule`: GPUs per job and, for a
time-sharing scheduler (Gavel's max-min fairness), the share of the time each
job runs (docs/model.md §5, "Time sharing"); its GPUs, IO and utility all
count at that share.

**The naive form** (:func:`naive`, the registered ``gavel-tput``,
``gavel-fair``, ``optimus``, ``utility-greedy``) is how an operator runs an
IO-unaware scheduler: blind to IO when it chooses which jobs get GPUs, but not
blind to the bill.  It starts from every GPU the budget and G allow and, while
the cache policy cannot feed the chosen jobs unstalled within the budget and B,
lowers the cap by what the bill overshoots (:func:`billed_cap`) and asks the
scheduler again.  The cap falls at every round, so the rule ends, at worst at
no GPUs (every job waits); the answer it keeps feeds every running job in full.

**The tuned form** (:func:`tuned`, ``-tuned``) is an oracle, not a scheduler:
it tries every fixed split of :data:`SPLITS` between GPUs and IO and keeps the
one the referee scores best, together with the naive answer, so it is the
upper envelope of every budget split and never worse than the naive form.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from cbalab.algorithms import registry
from cbalab.models.evaluate import RTOL, Allocation, evaluate, least_feeding, option_lookup
from cbalab.models.instance import Instance
from cbalab.models.kernels import bandwidth_factor, exact_dot, prefix_fill
from cbalab.models.result import IoFeeding
from cbalab.models.types import SolveOptions, Status

#: Fractions of the budget a tuned scheduler may give to GPUs (the rest is held for IO).
SPLITS = tuple(round(0.05 * i, 2) for i in range(1, 21))


class Schedule(NamedTuple):
    """A GPU scheduler's decision: GPUs per job (0 or one of its options) and each job's time share (None: all 1)."""

    gpus: np.ndarray
    share: np.ndarray | None = None

    def gpu_time(self) -> float:
        """GPUs held on average, Σ_j share_j · g_j (docs/model.md §5, "Time sharing")."""
        g = np.asarray(self.gpus, dtype=float)
        return float(g.sum()) if self.share is None else exact_dot(g, self.share)


#: A GPU scheduler: (instance, GPU cap) -> its Schedule within ``cap`` GPUs (time-averaged when it shares time).
Scheduler = Callable[[Instance, int], Schedule]


def gpu_cap(inst: Instance, split: float) -> int:
    """GPUs a scheduler may use when ``split`` of the budget goes to GPUs: min(G, ⌊split · Budget / p_g⌋)."""
    top = int(inst.option_gpus.max(initial=0)) * inst.n_jobs
    cap = top if inst.gpus is None else min(inst.gpus, top)
    if inst.price_gpu > 0 and math.isfinite(inst.budget_per_hour):
        cap = min(cap, math.floor(split * inst.budget_per_hour / inst.price_gpu + 1e-9))
    return max(cap, 0)


def speedup(inst: Instance) -> np.ndarray:
    """Per option row, the job's normalised throughput: r_j(g) / r_j(g_min), its rate at its smallest option.

    Throughput is proportional to the data rate (docs/model.md §2: r = samples/s ×
    sample size), so this is the per-job normalised throughput Gavel's
    policies use.  A job whose smallest option reads no data falls back to
    g / g_min.
    """
    base_rows = smallest_option(inst)[inst.option_job()]
    base_rate = inst.option_io_gbps[base_rows]
    by_rate = inst.option_io_gbps / np.where(base_rate > 0, base_rate, 1.0)
    by_gpus = inst.option_gpus / inst.option_gpus[base_rows]
    return np.where(base_rate > 0, by_rate, by_gpus)


def smallest_option(inst: Instance) -> np.ndarray:
    """Per job, the option row with the fewest GPUs (-1 for a job without options)."""
    job = inst.option_job()
    rows = np.lexsort((inst.option_gpus, job))
    first = np.full(inst.n_jobs, -1, dtype=np.int64)
    has = np.diff(inst.option_ptr) > 0
    starts = inst.option_ptr[:-1][has]
    first[has] = rows[starts]
    return first


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


def feed_within_budget(inst: Instance, schedule: Schedule, policy: str = "silod") -> Allocation:
    """Feed a scheduler's GPUs with ``policy``'s cache and the money left for bandwidth (docs/model.md §5, §7).

    A time-shared job reads its share of its rate (§5, "Time sharing").  The
    cache is cut, densest datasets kept, until it and the bandwidth it leaves
    to buy fit the money left after GPUs (:func:`affordable_cache`); each
    job's unstalled bandwidth, max(the policy's b_j, r_j (1 − h_k(j))) for the
    cache that is left, is then scaled by one common factor so that Σ b ≤ B
    and the bill stays within the budget.  ``facts`` (an :class:`IoFeeding`) records that factor
    (``io_factor``, 1: no job stalls) and ``bill_per_hour``, what GPUs, cache
    and the unstalled bandwidth would cost.  ``schedule`` must already respect
    G and the budget (see :func:`gpu_cap`).
    """
    inst.require_continuous("the welfare problem is modelled")
    gpus = np.asarray(schedule.gpus, dtype=np.int64)
    _, rates, _ = option_lookup(inst, gpus)
    if schedule.share is not None:
        rates = rates * schedule.share
    gpu_cost = inst.price_gpu * schedule.gpu_time()
    money = inst.budget_per_hour - gpu_cost
    cache, policy_bw = policy_feeding(inst, gpus, rates, policy)
    if math.isfinite(money):
        cache = affordable_cache(inst, cache, inst.dataset_demand(rates), money)
    money -= inst.price_cache * float(cache.sum())
    need = np.maximum(policy_bw, least_feeding(inst, rates, cache))
    total = float(need.sum())
    factor = bandwidth_factor(inst, total, money)
    bill = gpu_cost + inst.price_cache * float(cache.sum()) + inst.price_bandwidth * total
    return Allocation(
        gpus=gpus,
        cache_gb=cache,
        bandwidth_gbps=need * factor,
        facts=IoFeeding(io_factor=factor, cache_policy=policy, bill_per_hour=bill, bandwidth_need_gbps=total),
        time_share=None if schedule.share is None else np.asarray(schedule.share, dtype=float),
    )


def affordable_cache(inst: Instance, cache: np.ndarray, R: np.ndarray, money: float) -> np.ndarray:
    """The policy's cache, cut to the largest prefix (densest datasets first) whose bill fits ``money`` ($/h).

    The bill of keeping x GB of that prefix is p_c x plus p_b times the
    remote IO the rest of the demand needs; along the prefix it is piecewise
    linear and convex (each GB saves p_b R_k / d_k, less as the densities
    fall).  The answer keeps all of the cache when that fits, else the
    largest x at which the bill meets ``money``, else (when no cut fits) the
    cut with the least bill among those whose cache alone the money pays for,
    which stalls least.  Price-blind in what it caches, it reads only the bill.
    """
    d = inst.dataset_size_gb
    order = np.argsort(-(R / d), kind="stable")
    a = np.minimum(cache, d)[order]
    saves = R[order] / d[order]
    x = np.concatenate([[0.0], np.cumsum(a)])
    remote = float(R.sum()) - np.concatenate([[0.0], np.cumsum(a * saves)])
    bill = inst.price_cache * x + inst.price_bandwidth * remote
    if bill[-1] <= money:
        return cache
    fits = np.flatnonzero(bill <= money)
    if not fits.size:  # no cut fits: the least bill among the cuts whose cache alone the money pays for
        limit = max(money, 0.0) / inst.price_cache if inst.price_cache > 0 else float(x[-1])
        within = x <= limit
        best = float(x[within][int(np.argmin(bill[within]))])
        if limit < x[-1] and float(np.interp(limit, x, bill)) < float(bill[within].min()):  # bill is linear between
            best = limit
        return prefix_fill(cache, order, best)
    i = int(fits[-1])
    slope = inst.price_cache - inst.price_bandwidth * saves[i]
    keep = x[i] + (min((money - bill[i]) / slope, a[i]) if slope > 0 else a[i])
    return prefix_fill(cache, order, float(keep))


def billed_cap(inst: Instance, cap: int, schedule: Schedule, fed: Allocation) -> int:
    """The next, smaller GPU cap of the naive rule: cut the GPUs by what the unstalled bill overshoots.

    The bill ``fed.facts.bill_per_hour`` (GPUs, cache and the bandwidth that
    would feed every chosen job) exceeds the budget, or the bandwidth need
    exceeds B.  The operator cuts the GPUs it holds, ``used``, by the
    overshoot: to ⌊(Budget − IO bill) / p_g⌋ if the IO bill stayed as it is,
    or to ⌊used · Budget / bill⌋ if the whole bill shrank with the GPUs,
    whichever cuts less (the truth lies between), and to ⌊used · B / need⌋
    for B; in any case to at least one GPU fewer than it holds, so the rule
    ends, but not below one GPU in one round: a job that fits alone is tried
    before none.
    """
    used = math.ceil(schedule.gpu_time() - 1e-9)
    facts = feeding(fed)
    bill = facts.bill_per_hour
    cuts = [used - 1]
    if math.isfinite(inst.budget_per_hour) and bill > inst.budget_per_hour:
        estimates = [math.floor(used * inst.budget_per_hour / bill)]
        if inst.price_gpu > 0:
            io_bill = bill - inst.price_gpu * schedule.gpu_time()
            estimates.append(math.floor((inst.budget_per_hour - io_bill) / inst.price_gpu + 1e-9))
        cuts.append(max(estimates))
    need = facts.bandwidth_need_gbps
    if need > inst.bandwidth_gbps:
        cuts.append(math.floor(used * inst.bandwidth_gbps / need))
    return max(min(cap - 1, *cuts), 1 if cap > 1 else 0)


def naive(inst: Instance, schedule: Scheduler, policy: str = "silod") -> Allocation:
    """The IO-unaware scheduler as an operator runs it: blind in its choice, not in its bill (module docstring).

    From every GPU the budget and G allow, the cap is lowered by
    :func:`billed_cap` until ``policy`` feeds every chosen job unstalled
    within the budget and B.  ``facts.caps_tried`` counts the rounds.
    """
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    cap = gpu_cap(inst, 1.0)
    rounds = 0
    while True:
        rounds += 1
        chosen = schedule(inst, cap)
        alloc = feed_within_budget(inst, chosen, policy)
        if feeding(alloc).io_factor >= 1.0 - RTOL or cap == 0:  # fed up to the referee's rounding slack
            break
        cap = billed_cap(inst, cap, chosen, alloc)
    alloc.facts = replace(feeding(alloc), split=None, gpu_cap=cap, caps_tried=rounds)
    return alloc


def tuned(inst: Instance, schedule: Scheduler, policy: str = "silod", time_limit: float | None = None) -> Allocation:
    """The oracle envelope: the naive answer and every fixed GPU/IO split of :data:`SPLITS`, best by the referee.

    The naive answer (:func:`naive`) is scored first, so that the envelope is
    never below it and a search stopped by ``time_limit`` (seconds for the
    whole call, checked between splits) still returns it; such an answer is
    ``time_limit`` with a reason counting the splits tried.  The splits are
    tried from the largest down, and one replaces the answer only when the
    referee scores it strictly higher: ties keep the naive answer, then the
    larger split.
    """
    started = time.perf_counter()
    best = naive(inst, schedule, policy)
    best_welfare = _welfare(inst, best)
    scored: set[int] = set()
    caps = {gpu_cap(inst, x) for x in SPLITS}
    for split in reversed(SPLITS):
        cap = gpu_cap(inst, split)
        if cap in scored:
            continue
        if time_limit is not None and time.perf_counter() - started >= time_limit:
            best.status = Status.TIME_LIMIT
            best.reason = f"the time limit of {time_limit:g} s ran out after {len(scored)} of {len(caps)} GPU/IO splits"
            return best
        alloc = feed_within_budget(inst, schedule(inst, cap), policy)
        scored.add(cap)
        welfare = _welfare(inst, alloc)
        if welfare > best_welfare:
            best, best_welfare = alloc, welfare
            alloc.facts = replace(feeding(alloc), split=split, gpu_cap=cap)
    return best


def feeding(alloc: Allocation) -> IoFeeding:
    """The :class:`IoFeeding` facts of an answer of :func:`feed_within_budget` (a method bug if it has none)."""
    if not isinstance(alloc.facts, IoFeeding):
        raise TypeError(f"expected an IO-unaware scheduler's answer with IoFeeding facts, got {alloc.facts!r}")
    return alloc.facts


def _welfare(inst: Instance, alloc: Allocation) -> float:
    """The referee's welfare of a scheduler's allocation (docs/model.md (5.7))."""
    return float(evaluate(inst, alloc, "welfare").welfare or 0.0)
