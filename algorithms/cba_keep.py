"""cba-keep: online CBA that keeps a warm cache through short lulls (rent-or-buy), docs/model.md §6.

Re-solved CBA (docs/model.md §4) treats every event as a fresh static
problem: when a dataset's demand drops, even for a second, its cache is
evicted, and when the demand comes back the cache has to be read in again
(docs/model.md §6: a cache grows only by remote reads).  With p_b/3600 $ per GB
read and p_c $ per GB-hour held, re-reading a cache of e GB costs p_b e/3600 $
while holding it costs p_c e $ per hour: keeping is worth it through a lull
shorter than T* = p_b / (3600 p_c) hours, and nobody knows the lull's length in
advance.  That is ski rental, and cba-keep plays its deterministic strategy
(proofs/cba_keep_competitive.md):

1. at every event it computes CBA's static targets c^s_k for the running jobs;
2. a dataset whose *filled* cache f_k exceeds c^s_k keeps the excess
   e_k = f_k − c^s_k (it never grows it: growing is CBA's call) while the
   rent it has paid on kept bytes since the lull began, net of the remote IO
   the kept bytes saved, stays below the re-read cost p_b e_k / 3600; then it
   lets go;
3. kept bytes only use the capacity CBA's targets leave free; when they do
   not all fit, the keeps closest to expiry go first.

The policy sees only the past and the present: the filled cache per dataset
and the time of each call, which the replay hands to :meth:`CbaKeep.decide`
(the online protocol of algorithms/online.py).  Called as a static method
(``cba_keep(inst, options)``, no history) it is CBA.

Cost per event: one CBA solve, O(K log K + J), plus O(K log K) for the keeps.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.cba import cba, feed
from cbalab.algorithms.online import State
from cbalab.models.evaluate import Allocation, least_feeding
from cbalab.models.instance import Instance
from cbalab.models.result import KeepFacts
from cbalab.models.types import SolveOptions, Status


def cba_keep(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """cba-keep with no history (no filled cache, no time): exactly CBA's static answer (docs/model.md §4)."""
    return cba(inst)


class CbaKeep:
    """The online, stateful cba-keep: one object per replay, :meth:`decide` at every event in time order.

    ``trust`` is λ ∈ (0, 1] of learning-augmented ski rental: a lull predicted long (the dataset's last lull
    lasted ≥ T*, or it has had none yet) lets go once the rent reaches λ times the re-read cost, a lull
    predicted short once it reaches 1/λ times it.  λ = 1 (the default, the registered policy) is the plain
    deterministic rent-or-buy; proofs/cba_keep_competitive.md, Theorem K2, bounds every λ.
    """

    def __init__(self, options: SolveOptions | None = None, trust: float = 1.0) -> None:
        if not 0 < trust <= 1:
            raise ValueError(f"trust must lie in (0, 1], got {trust!r}")
        self.options = options if options is not None else SolveOptions()
        self.trust = trust
        self.last_s: float | None = None
        self.keep = np.zeros(0)
        self.rent = np.zeros(0)
        self.rate = np.zeros(0)
        self.lull_start = np.zeros(0)
        self.lull_level = np.zeros(0)
        self.predicted = np.zeros(0)

    def _resize(self, K: int) -> None:
        self.keep = np.zeros(K)
        self.rent = np.zeros(K)
        self.rate = np.zeros(K)
        self.lull_start = np.full(K, np.nan)
        self.lull_level = np.zeros(K)
        self.predicted = np.full(K, np.inf)

    def decide(self, state: State, now: float) -> Allocation:
        """Targets for the running jobs of ``state.instance`` at time ``now`` given the filled cache per dataset.

        Rent accrues over [last call, now) at the rate fixed at the last call:
        p_c e_k − p_b R_k e_k / d_k $/h (the kept bytes' rent net of the remote
        IO they save, never below 0), proofs/cba_keep_competitive.md, Policy.
        A lull of dataset k starts when CBA's target falls below its filled
        cache and ends when CBA's target is back at that level; its length is
        the prediction for k's next lull.
        """
        inst = state.instance
        K = inst.n_datasets
        d = inst.dataset_size_gb
        if self.keep.size != K:
            self._resize(K)
        if self.last_s is not None and now > self.last_s:
            self.rent += self.rate * (now - self.last_s) / 3600.0
        self.last_s = now
        static = feed(inst, inst.job_io_gbps, bound=False)
        if static.cache_gb is None:
            self._resize(K)
            return Allocation.none(Status.INFEASIBLE, static.reason or "infeasible")
        base = static.cache_gb
        filled = np.minimum(np.asarray(state.filled_gb, dtype=float), d)
        p_c, p_b = inst.price_cache, inst.price_bandwidth
        # Lulls: the ones that end now teach the prediction; new ones start where CBA drops a filled cache.
        open_ = ~np.isnan(self.lull_start)
        back = open_ & (base >= self.lull_level * (1 - 1e-9))
        self.predicted = np.where(back, now - self.lull_start, self.predicted)
        self.lull_start = np.where(back, np.nan, self.lull_start)
        excess = np.maximum(filled - base, 0.0)
        start = np.isnan(self.lull_start) & (excess > 0)
        self.lull_start = np.where(start, now, self.lull_start)
        self.lull_level = np.where(start, filled, self.lull_level)
        t_star = p_b / p_c if p_c > 0 else np.inf
        factor = np.where(self.predicted >= t_star, self.trust, 1.0 / self.trust)
        buy = factor * p_b * excess / 3600.0
        alive = (excess > 0) & (self.rent < buy)
        free = max(inst.cache_gb - float(base.sum()), 0.0)
        keep = np.zeros(K)
        # Keeps with the most budget left first; ties by position, so the answer is deterministic.
        left = np.where(alive, 1.0 - self.rent / np.where(buy > 0, buy, 1.0), -np.inf)
        for k in np.argsort(-left, kind="stable"):
            if not alive[k] or free <= 0:
                break
            keep[k] = min(excess[k], free)
            free -= keep[k]
        self.rent = np.where(keep > 0, self.rent, 0.0)
        R = inst.dataset_demand(inst.job_io_gbps)
        self.rate = np.maximum(p_c * keep - p_b * R * keep / d, 0.0)
        self.keep = keep
        cache = np.minimum(base + keep, d)
        return Allocation(
            gpus=inst.job_gpus.copy(),
            cache_gb=cache,
            bandwidth_gbps=least_feeding(inst, inst.job_io_gbps, cache),
            facts=KeepFacts(float(keep.sum())),
        )
