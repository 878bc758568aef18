"""CBA: the closed-form optimum of the cost problem P1 (spec/MODEL.md §4).

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

from models.evaluate import RTOL, Allocation
from models.instance import Instance


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


def feed(inst: Instance, rates: np.ndarray) -> Feeding:
    """CBA's closed form: the cheapest cache and bandwidth that feed jobs at ``rates`` (GB/s) unstalled.

    Continuous cache and bandwidth, cache capacity C and bandwidth cap B of
    the instance; prices p_c, p_b.  Theorem 1 of proofs/cba_optimality.md.
    """
    d = inst.dataset_size_gb
    R = inst.dataset_demand(rates)
    rho = R / d
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    order = np.argsort(-rho, kind="stable")
    d_s, R_s, rho_s = d[order], R[order], rho[order]
    total_R = float(R.sum())

    profitable = int(np.count_nonzero(p_b * R_s > p_c * d_s))
    cum_d = np.cumsum(d_s)
    full = np.clip(inst.cache_gb - (cum_d - d_s), 0.0, d_s)
    min_remote = total_R - float(np.dot(rho_s, full))
    if min_remote > inst.bandwidth_gbps + RTOL * max(1.0, total_R):
        return _infeasible(inst, min_remote)

    c_s = np.zeros_like(d_s)
    c_s[:profitable] = full[:profitable]
    t_c = int(np.searchsorted(cum_d, inst.cache_gb)) if profitable and cum_d[profitable - 1] > inst.cache_gb else None
    excess = total_R - float(np.dot(rho_s, c_s)) - inst.bandwidth_gbps
    t_b = None
    if excess > 0 and t_c is None and profitable < d_s.size:
        rest_R = np.cumsum(R_s[profitable:])
        t = min(int(np.searchsorted(rest_R, excess)), rest_R.size - 1)
        t_b = profitable + t
        c_s[profitable:t_b] = d_s[profitable:t_b]
        before = rest_R[t - 1] if t > 0 else 0.0
        if R_s[t_b] > 0:
            c_s[t_b] = min(d_s[t_b], d_s[t_b] * (excess - before) / R_s[t_b])

    cache = np.empty_like(c_s)
    cache[order] = c_s
    hit = cache / d
    bw = rates * (1.0 - hit[inst.job_dataset])
    io_cost = p_c * float(cache.sum()) + p_b * float(bw.sum())
    lam_mu = [(0.0, 0.0)]
    if t_c is not None:
        lam_mu.append((max(0.0, p_b * rho_s[t_c] - p_c), 0.0))
    if t_b is not None and rho_s[t_b] > 0:
        lam_mu.append((0.0, max(0.0, p_c / rho_s[t_b] - p_b)))
    bound = max(_dual(inst, R, rho, lam, mu) for lam, mu in lam_mu)
    return Feeding(cache, bw, io_cost, bound)


def _dual(inst: Instance, R: np.ndarray, rho: np.ndarray, lam: float, mu: float) -> float:
    """Weak-dual value D(λ, μ) of the substituted LP: a lower bound on the least IO cost for any λ, μ ≥ 0."""
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    total_R = float(R.sum())
    nu = np.maximum(0.0, (p_b + mu) * rho - p_c - lam)
    need = total_R - inst.bandwidth_gbps if np.isfinite(inst.bandwidth_gbps) else 0.0
    return p_b * total_R + mu * need - lam * inst.cache_gb - float(np.dot(nu, inst.dataset_size_gb))


def _infeasible(inst: Instance, remote: float) -> Feeding:
    reason = (
        f"infeasible: caching the {inst.cache_gb:.6g} GB of highest IO density still leaves "
        f"{remote:.6g} GB/s of remote IO, above the bandwidth cap B = {inst.bandwidth_gbps:.6g} GB/s"
    )
    return Feeding(None, None, float("nan"), float("nan"), reason)


def cba(inst: Instance) -> Allocation:
    """The registered method ``cba`` for the cost problem: feed the jobs' fixed GPUs at least cost.

    Status ``optimal`` when the weak-dual bound meets the cost (Theorem 1),
    ``infeasible`` with the reason of Theorem 1 (ii) otherwise.
    """
    inst.require_fixed()
    f = feed(inst, inst.job_io_gbps)
    if f.cache_gb is None:
        return Allocation.none("infeasible", f.reason or "infeasible")
    gpu_cost = inst.price_gpu * float(inst.job_gpus.sum())
    proven = f.io_bound >= f.io_cost - RTOL * max(1.0, abs(f.io_cost))
    return Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=f.cache_gb,
        bandwidth_gbps=f.bandwidth_gbps,
        status="optimal" if proven else "feasible",
        bound=gpu_cost + f.io_bound,
    )
