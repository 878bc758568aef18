"""CBA: the closed-form optimum of the cost problem P1 (docs/model.md §4).

Substituting b_j = r_j (1 - c_k(j)/d_k(j)) turns P1 into

    min  p_b Σ_k R_k  +  Σ_k c_k (p_c - p_b ρ_k)
    s.t. Σ_k c_k ≤ C,   Σ_k ρ_k c_k ≥ Σ_k R_k - B,   0 ≤ c_k ≤ d_k,

with ρ_k = R_k / d_k the IO density.  CBA sorts datasets by decreasing ρ_k
(ties by position, so the answer is deterministic), caches the profitable ones
(p_b ρ_k > p_c) whole until C is used, then, if the remaining remote IO still
exceeds B, keeps caching in the same order only as far as B forces.  The
instance is infeasible exactly when the ρ-ordered fill of all of C leaves more
than B of remote IO.  proofs/cba_optimality.md proves all of this; the weak
dual solution written there is evaluated here as the ``bound`` of every answer,
so CBA's claim of optimality is certified on each run, not assumed.

Cost: one sort of the K datasets and two passes over the J jobs,
O(K log K + J), all in numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cbalab.models.certify import accepted_limits, certify, instance_tolerance, widened_limits
from cbalab.models.evaluate import MODEL_SHARE, Allocation, evaluate, hit_ratio, least_feeding, tolerated
from cbalab.models.exact_bounds import cost_lower_bound, demand_below
from cbalab.models.instance import Instance
from cbalab.models.kernels import fill_in_order, weak_dual
from cbalab.models.types import SolveOptions, Status


@dataclass
class Feeding:
    """The least-cost way to feed given job rates (P1's optimum), with its dual certificate.

    ``cache_gb`` per dataset and ``bandwidth_gbps`` per job are None when
    infeasible; ``io_cost`` is p_c Σ c + p_b Σ b and ``io_bound`` a weak-dual
    lower bound on it (proofs/cba_optimality.md, Lemma 2).
    """

    cache_gb: np.ndarray | None
    bandwidth_gbps: np.ndarray | None
    io_cost: float
    io_bound: float
    reason: str | None = None


@dataclass
class Fill:
    """CBA's cache per dataset and what its dual bound needs (proofs/cba_optimality.md, Theorem 1).

    ``cache_gb`` is None when infeasible, and ``remote_gbps`` is then the least remote IO of any cache (the
    ρ-ordered fill of all of C).  Otherwise ``bandwidth_gbps`` is the B the fill met: the B it was given, or the
    least remote IO when that lies within the referee's slack above it.  ``order`` sorts the datasets by
    decreasing IO density ``rho_s`` (sorted); ``t_c`` and ``t_b`` are the sorted positions where C, and where B,
    stopped the fill (None: they did not), which fix the dual multipliers of the bound.
    """

    cache_gb: np.ndarray | None
    remote_gbps: float
    bandwidth_gbps: float
    rho_s: np.ndarray
    t_c: int | None
    t_b: int | None


def fill(
    d: np.ndarray, R: np.ndarray, cache_gb: float, bandwidth_gbps: float, accepted_gbps: float, p_c: float, p_b: float
) -> Fill:
    """CBA's rule on arrays: the least-cost cache per dataset for dataset demands ``R`` (Theorem 1).

    The one statement of the rule: :func:`feed` (every method that feeds jobs by CBA) and the replay's decision
    at each event (experiments/simulate.py) both call it, so an event needs no Instance and no certificate.
    ``d`` are the dataset sizes, ``cache_gb`` C, ``bandwidth_gbps`` the B the fill aims at and ``accepted_gbps``
    the largest remote IO the referee accepts (``tolerated(B)``, docs/model.md (8.1)); p_c, p_b the prices.
    Sort by decreasing ρ_k = R_k/d_k (ties by position), cache the profitable datasets (p_b R_k > p_c d_k)
    whole while C lasts, then, if the remote IO left still exceeds B, cache the next read ones in the same order
    only as far as B forces.  Cost: one sort and a few passes over the K datasets.
    """
    rho = R / d
    order = (-rho).argsort(kind="stable")  # the array methods: np.argsort's and np.cumsum's results, no wrapper
    d_s, R_s, rho_s = d[order], R[order], rho[order]

    profitable = int(np.count_nonzero(p_b * R_s > p_c * d_s))
    cum_d = d_s.cumsum()
    full = fill_in_order(d_s, cache_gb, cum_d)
    # Remote IO as Σ R_k (1 - c_k/d_k): a wholly cached dataset adds exactly 0, with no cancellation
    # against a large Σ R_k (which would cost the small remainders their precision).
    min_remote = float(np.dot(R_s, 1.0 - full / d_s))
    # The referee's own slack on B (models/evaluate.tolerated): infeasible exactly when no allocation passes it.
    if min_remote > accepted_gbps:
        return Fill(None, min_remote, bandwidth_gbps, rho_s, None, None)
    if min_remote > bandwidth_gbps:
        # Within the slack: the answer is the fill of C, feasible for B' = min_remote; fill and bound use B'.
        bandwidth_gbps = min_remote

    c_s = np.zeros(d_s.size)
    c_s[:profitable] = full[:profitable]
    t_c = int(np.searchsorted(cum_d, cache_gb)) if profitable and cum_d[profitable - 1] > cache_gb else None
    t_b = None
    # B forces more cache only when C is not used up by the profitable datasets and the remote IO left exceeds a
    # finite B (the excess and the count of read datasets are computed only then; with B = ∞ the excess is -∞).
    capped = t_c is None and bandwidth_gbps < np.inf
    if (
        capped
        and float(np.dot(R_s, 1.0 - c_s / d_s)) - bandwidth_gbps > 0
        and (read := int(np.count_nonzero(R_s[profitable:] > 0)))
    ):
        # Only read datasets (R_k > 0, a prefix of the rest) can cut remote IO; rounding in the excess
        # must not push the fill onto unread ones, and the fill never goes past C (the fill `full`).
        # Every profitable dataset is whole (t_c is None), so the remote IO left after caching the rest
        # up to position t is the tail sum `after[t]`; summed from the tail, it keeps small remainders exact.
        rest_R = R_s[profitable : profitable + read]
        after = np.append(np.cumsum(rest_R[::-1])[::-1][1:], 0.0)
        t = int(np.argmax(after <= bandwidth_gbps))
        t_b = profitable + t
        c_s[profitable:t_b] = d_s[profitable:t_b]
        share = (after[t] + rest_R[t] - bandwidth_gbps) / rest_R[t]
        c_s[t_b] = partial(d_s[t_b], rest_R[t], share, bandwidth_gbps - after[t])
        c_s[profitable:] = np.minimum(c_s[profitable:], full[profitable:])

    cache = np.empty_like(c_s)
    cache[order] = c_s
    return Fill(cache, min_remote, bandwidth_gbps, rho_s, t_c, t_b)


def partial(d: float, R: float, share: float, room: float) -> float:
    """The cache d·share of the one dataset a fill takes in part, raised by up to 8 ulps until the remote IO
    the referee computes for it, R (1 − c/d), is within ``room``: with R = 6.7e15 GB/s and room 0.6 GB/s the share
    1 − 9e-17 rounds to one ulp below 1, and the ulp left uncached is 0.7 GB/s of remote IO, over B."""
    first = c = d * min(1.0, max(0.0, share))
    for _ in range(8):
        if c >= d or R * (1.0 - c / d) <= room:
            return min(c, d)
        c = math.nextafter(c, math.inf)
    return first  # a few ulps do not decide it: the share as computed, which the referee's slack then judges


def feed(
    inst: Instance,
    rates: np.ndarray,
    *,
    b_share: float = 0.0,
    bound: bool = True,
    accepted: Instance | None = None,
) -> Feeding:
    """CBA's closed form: the cheapest cache and bandwidth that feed jobs at ``rates`` (GB/s) unstalled.

    Continuous cache and bandwidth, cache capacity C and bandwidth cap B of
    the instance; prices p_c, p_b.  Theorem 1 of proofs/cba_optimality.md: the cache is :func:`fill`'s, the
    bandwidth the least that feeds it, and ``io_bound`` the weak dual at the multipliers the fill fixes.
    ``b_share`` of the referee's slack on B (``tolerated``, docs/model.md (8.1)) counts as bandwidth: 0 takes
    B as written (AutoCBA, which keeps its own margin inside the referee's), ``MODEL_SHARE`` takes B as the
    referee and P1's MILP take it (the registered ``cba``).  Either way the answer is infeasible exactly when
    no allocation passes the referee's B.  ``bound=False`` leaves ``io_bound`` NaN: a caller that only feeds
    (AutoCBA's greedy, its search, cba-keep) need not pay for the certificate it does not report.

    The bound is the weak dual at C and B as the referee accepts them (``accepted``, by default
    :func:`cbalab.models.certify.accepted_limits` of ``inst``; docs/model.md (8.1)): D falls as C and B grow, so it
    bounds every allocation the referee accepts, also below 1 GB or 1 GB/s where the slack is more than rounding.
    """
    written = inst
    if b_share:
        inst = inst.replace(bandwidth_gbps=tolerated(inst.bandwidth_gbps, b_share))
    R = inst.dataset_demand(rates)
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    f = fill(
        inst.dataset_size_gb,
        R,
        inst.cache_gb,
        inst.bandwidth_gbps,
        tolerated(written.bandwidth_gbps),
        p_c,
        p_b,
    )
    if f.cache_gb is None:
        return _infeasible(written, f.remote_gbps)
    if f.bandwidth_gbps != inst.bandwidth_gbps:
        inst = inst.replace(bandwidth_gbps=f.bandwidth_gbps)
    cache = f.cache_gb
    bw = least_feeding(inst, rates, cache)
    io_cost = p_c * float(cache.sum()) + p_b * float(bw.sum())
    if not bound:
        return Feeding(cache, bw, io_cost, float("nan"))
    lam_mu = [(0.0, 0.0)]
    if f.t_c is not None:
        lam_mu.append((max(0.0, p_b * f.rho_s[f.t_c] - p_c), 0.0))
    if f.t_b is not None and f.rho_s[f.t_b] > 0:
        lam_mu.append((0.0, max(0.0, p_c / f.rho_s[f.t_b] - p_b)))
    limits = accepted_limits(written) if accepted is None else accepted
    at = inst.replace(
        cache_gb=max(inst.cache_gb, limits.cache_gb), bandwidth_gbps=max(inst.bandwidth_gbps, limits.bandwidth_gbps)
    )
    low = demand_below(inst, rates)  # D grows with R: the float sums of the rates may round above the exact ones
    return Feeding(cache, bw, io_cost, max(weak_dual(at, low, lam, mu) for lam, mu in lam_mu))


def on_demand(
    d: np.ndarray, R: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """The registered ``cba`` on the aggregate instance of demands ``R`` (one pseudo-job per dataset,
    docs/model.md §4): its cache and bandwidth per dataset, None when infeasible (Theorem 1 (ii)).

    The numbers :func:`cba_continuous` gives on that instance (tests/test_registry.py), by :func:`fill` with B
    taken as the referee accepts it, without an Instance or the certificate, which a replay's event does not
    report; experiments/simulate.py calls it at every event (algorithms/registry.py, ``on_demand``).
    """
    f = fill(d, R, cache_gb, tolerated(bandwidth_gbps, MODEL_SHARE), tolerated(bandwidth_gbps), p_c, p_b)
    if f.cache_gb is None:
        return None
    return f.cache_gb, R * (1.0 - hit_ratio(d, f.cache_gb))


def _infeasible(inst: Instance, remote: float) -> Feeding:
    reason = (
        f"infeasible: caching the {inst.cache_gb:.6g} GB of highest IO density still leaves "
        f"{remote:.6g} GB/s of remote IO, above the bandwidth cap B = {inst.bandwidth_gbps:.6g} GB/s"
    )
    return Feeding(None, None, float("nan"), float("nan"), reason)


def cba_continuous(inst: Instance) -> Allocation:
    """CBA for continuous cache and bandwidth: feed the jobs' fixed GPUs at least cost.

    B is taken as the referee accepts it (``feed(b_share=MODEL_SHARE)``), as P1's MILP takes it: with B one ulp
    below Σ r_j, B as written forced a sliver of cache, and io-only, which the referee accepts, was cheaper
    than CBA's "optimum".
    Status ``optimal`` when the weak-dual bound meets the referee's cost (Theorem 1) within the certification
    tolerance of docs/model.md (8.2) (:func:`cbalab.models.certify.certify`, which also keeps the bound at or below
    the cost and drops it when an allocation anyone can write down beats it), ``infeasible`` with the reason of
    Theorem 1 (ii) otherwise.  The bound is the GPU bill plus the weak dual at the limits the referee accepts, summed
    exactly and rounded down (:func:`cbalab.models.exact_bounds.cost_lower_bound`): never above the optimum.
    """
    inst.require_fixed()
    accepted = accepted_limits(inst)
    f = feed(inst, inst.job_io_gbps, b_share=MODEL_SHARE, accepted=accepted)
    wide = feed(widened_limits(inst), inst.job_io_gbps, b_share=MODEL_SHARE, accepted=accepted)
    answers = [a for a in (f, wide) if a.cache_gb is not None and a.bandwidth_gbps is not None]
    if not answers:
        if feed(accepted, inst.job_io_gbps, bound=False).cache_gb is not None:
            reason = (
                f"undecided: {f.reason}; but with C and B as the referee accepts them (docs/model.md (8.1)) the "
                "ρ-ordered fill meets B, so no infeasibility is proven"
            )
            return Allocation.none(Status.ERROR, reason)
        return Allocation.none(Status.INFEASIBLE, f.reason or "infeasible")
    bound = cost_lower_bound(inst, max(a.io_bound for a in answers))
    allocs = [
        Allocation(inst.job_gpus.copy(), a.cache_gb, a.bandwidth_gbps, status=Status.OPTIMAL, bound=bound)
        for a in answers
    ]
    chosen = preferred(inst, allocs)
    if chosen is None:
        return Allocation.none(Status.ERROR, REFUSED, bound=bound)
    return certify(inst, "cost", chosen, source="CBA's weak-dual bound")


#: The answer of a P1 rounding whose every allocation the referee refuses (the slack a fill may use is not the
#: referee's below 1 GB): no allocation and no verdict, its bound kept.
REFUSED = (
    "undecided: every allocation CBA's fill found lies beyond the referee's limits (docs/model.md (8.1)), so neither "
    "an answer nor an infeasibility is proven; solve with --method milp"
)


def preferred(inst: Instance, allocs: list[Allocation]) -> Allocation | None:
    """The first of ``allocs`` (the answer for the limits as written) unless the referee refuses it, or a later one
    the referee accepts is cheaper by more than the certification tolerance (8.2), or meets their common bound
    within it where the first does not (:func:`cbalab.models.certify.widened_limits`); None if the referee accepts
    none.  Above 1 GB and 1 GB/s the first is kept."""
    scored = []
    for alloc in allocs:
        ev = evaluate(inst, alloc, "cost")
        if ev.feasible:
            scored.append((ev.cost_total, alloc))
    if not scored:
        return None
    bound = allocs[0].bound

    def meets(cost: float) -> bool:
        return bound is not None and cost - bound <= instance_tolerance(inst, "cost", cost)

    first_cost, first = scored[0]
    if first is not allocs[0]:  # the referee refuses the answer for the limits as written
        return first
    for cost, alloc in scored[1:]:
        if cost < first_cost - instance_tolerance(inst, "cost", first_cost) or (meets(cost) and not meets(first_cost)):
            return alloc
    return first


def cba(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """The registered method ``cba`` for the cost problem: dispatch on the instance's variant (docs/model.md §4).

    Continuous cache and bandwidth: the closed form, :func:`cba_continuous`.  Any integer variant:
    :func:`cbalab.algorithms.cba_integer.cba_integer`.
    """
    inst.require_fixed()
    if inst.cache_granularity == "continuous" and inst.bandwidth_step_gbps is None:
        return cba_continuous(inst)
    # imported here: cba_integer builds on this module's feed(), so a top-level import would be circular
    from cbalab.algorithms.cba_integer import cba_integer

    return cba_integer(inst)
