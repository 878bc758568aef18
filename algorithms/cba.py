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

from dataclasses import dataclass

import numpy as np

from cbalab.models.certify import instance_tolerance, verdict
from cbalab.models.evaluate import MODEL_SHARE, Allocation, least_feeding, tolerated
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill, weak_dual
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


def feed(inst: Instance, rates: np.ndarray, *, b_share: float = 0.0) -> Feeding:
    """CBA's closed form: the cheapest cache and bandwidth that feed jobs at ``rates`` (GB/s) unstalled.

    Continuous cache and bandwidth, cache capacity C and bandwidth cap B of
    the instance; prices p_c, p_b.  Theorem 1 of proofs/cba_optimality.md.
    ``b_share`` of the referee's slack on B (``tolerated``, docs/model.md (8.1)) counts as bandwidth: 0 takes
    B as written (AutoCBA, which keeps its own margin inside the referee's), ``MODEL_SHARE`` takes B as the
    referee and P1's MILP take it (the registered ``cba``).  Either way the answer is infeasible exactly when
    no allocation passes the referee's B.
    """
    written = inst
    if b_share:
        inst = inst.replace(bandwidth_gbps=tolerated(inst.bandwidth_gbps, b_share))
    d = inst.dataset_size_gb
    R = inst.dataset_demand(rates)
    rho = R / d
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    order = np.argsort(-rho, kind="stable")
    d_s, R_s, rho_s = d[order], R[order], rho[order]

    profitable = int(np.count_nonzero(p_b * R_s > p_c * d_s))
    cum_d = np.cumsum(d_s)
    full = prefix_fill(d, order, inst.cache_gb)[order]
    # Remote IO as Σ R_k (1 - c_k/d_k): a wholly cached dataset adds exactly 0, with no cancellation
    # against a large Σ R_k (which would cost the small remainders their precision).
    min_remote = float(np.dot(R_s, 1.0 - full / d_s))
    # The referee's own slack on B (models/evaluate.tolerated): infeasible exactly when no allocation passes it.
    if min_remote > tolerated(written.bandwidth_gbps):
        return _infeasible(written, min_remote)
    if min_remote > inst.bandwidth_gbps:
        # Within the slack: the answer is the fill of C, feasible for B' = min_remote; fill and bound use B'.
        inst = inst.replace(bandwidth_gbps=min_remote)

    c_s = np.zeros_like(d_s)
    c_s[:profitable] = full[:profitable]
    t_c = int(np.searchsorted(cum_d, inst.cache_gb)) if profitable and cum_d[profitable - 1] > inst.cache_gb else None
    excess = float(np.dot(R_s, 1.0 - c_s / d_s)) - inst.bandwidth_gbps
    t_b = None
    read = int(np.count_nonzero(R_s[profitable:] > 0))
    if excess > 0 and t_c is None and read:
        # Only read datasets (R_k > 0, a prefix of the rest) can cut remote IO; rounding in `excess`
        # must not push the fill onto unread ones, and the fill never goes past C (the fill `full`).
        # Every profitable dataset is whole (t_c is None), so the remote IO left after caching the rest
        # up to position t is the tail sum `after[t]`; summed from the tail, it keeps small remainders exact.
        rest_R = R_s[profitable : profitable + read]
        after = np.append(np.cumsum(rest_R[::-1])[::-1][1:], 0.0)
        t = int(np.argmax(after <= inst.bandwidth_gbps))
        t_b = profitable + t
        c_s[profitable:t_b] = d_s[profitable:t_b]
        share = (after[t] + rest_R[t] - inst.bandwidth_gbps) / rest_R[t]
        c_s[t_b] = d_s[t_b] * min(1.0, max(0.0, share))
        c_s[profitable:] = np.minimum(c_s[profitable:], full[profitable:])

    cache = np.empty_like(c_s)
    cache[order] = c_s
    bw = least_feeding(inst, rates, cache)
    io_cost = p_c * float(cache.sum()) + p_b * float(bw.sum())
    lam_mu = [(0.0, 0.0)]
    if t_c is not None:
        lam_mu.append((max(0.0, p_b * rho_s[t_c] - p_c), 0.0))
    if t_b is not None and rho_s[t_b] > 0:
        lam_mu.append((0.0, max(0.0, p_c / rho_s[t_b] - p_b)))
    bound = max(weak_dual(inst, R, lam, mu) for lam, mu in lam_mu)
    return Feeding(cache, bw, io_cost, bound)


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
    than CBA's "optimum" (issue 19).
    Status ``optimal`` when the weak-dual bound meets the cost (Theorem 1) within the certification tolerance
    of docs/model.md (8.2) (:func:`cbalab.models.certify.verdict`, which also keeps the bound at or below the
    cost), ``infeasible`` with the reason of Theorem 1 (ii) otherwise.
    """
    inst.require_fixed()
    f = feed(inst, inst.job_io_gbps, b_share=MODEL_SHARE)
    if f.cache_gb is None or f.bandwidth_gbps is None:
        return Allocation.none(Status.INFEASIBLE, f.reason or "infeasible")
    gpu_cost = inst.price_gpu * float(inst.job_gpus.sum())
    # The cost as the referee sums it (models/evaluate.py), so that the bound is clipped to the very number reported.
    cost = gpu_cost + inst.price_cache * float(f.cache_gb.sum()) + inst.price_bandwidth * float(f.bandwidth_gbps.sum())
    v = verdict(
        cost,
        gpu_cost + f.io_bound,
        minimise=True,
        tol=instance_tolerance(inst, "cost", cost),
        claimed="optimal",
        source="CBA's weak-dual bound",
    )
    return Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=f.cache_gb,
        bandwidth_gbps=f.bandwidth_gbps,
        status=v.status,
        bound=v.bound,
        reason=v.reason,
    )


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
