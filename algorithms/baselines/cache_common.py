"""What every cache baseline of the cost problem shares (docs/model.md §7): greedy filling and unstalled feeding.

A cache baseline decides only the cache; the bandwidth then follows as in
P1's constraint (docs/model.md §4): every job gets b_j = r_j (1 − h_j), where h_j
is the fraction of its reads that hit the cache (h_k(j) = c_k / d_k when the
dataset's cache is shared, less for CoorDL's private slices), so no job
stalls.  The baselines ignore the bandwidth cap B: when Σ b_j exceeds it the
referee (models/evaluate.py) reports the allocation infeasible.
"""

from __future__ import annotations

import numpy as np

from cbalab.models.evaluate import RTOL, Allocation
from cbalab.models.instance import Instance
from cbalab.models.result import CacheRule


def whole_first_fit(size: np.ndarray, order: np.ndarray, capacity: float) -> np.ndarray:
    """Whole items in ``order``, each only if it still fits in what is left (first fit, nothing in part)."""
    out = np.zeros_like(size, dtype=float)
    left = capacity
    for k in order:
        if size[k] <= left + RTOL * max(1.0, capacity):
            out[k] = size[k]
            left -= size[k]
    return out


def granular(inst: Instance, cache: np.ndarray) -> np.ndarray:
    """Round a cache to the instance's granularity (docs/model.md §4) without exceeding C.

    ``dataset``: a partly cached dataset is dropped.  ``block``: a whole
    dataset occupies ⌈d_k/u⌉ blocks when they still fit in C, a partly cached
    one the whole blocks below its share.  ``continuous``: unchanged.
    """
    d = inst.dataset_size_gb
    full = cache >= d * (1.0 - RTOL)
    if inst.cache_granularity == "dataset":
        return np.where(full, d, 0.0)
    if inst.cache_granularity == "block":
        u = inst.block_size_gb
        out = np.floor(cache / u + RTOL) * u
        left = inst.cache_gb - float(out.sum())
        for k in np.flatnonzero(full):
            extra = np.ceil(d[k] / u - RTOL) * u - out[k]
            if extra <= left + RTOL * max(1.0, inst.cache_gb):
                out[k] += extra
                left -= extra
        return out
    return cache


def feed_unstalled(
    inst: Instance, cache: np.ndarray, job_hit: np.ndarray | None = None, rule: CacheRule | None = None
) -> Allocation:
    """The Allocation that pays for ``cache`` (rounded to the granularity) and feeds every job unstalled.

    ``job_hit`` is each job's own hit ratio when it differs from its
    dataset's shared one (private caches); it is scaled down with the cache
    when rounding takes capacity away.  ``rule`` is what the baseline chose, declared in the answer's ``facts``.
    """
    inst.require_fixed()
    d = inst.dataset_size_gb
    shared = np.minimum(cache, d) / d
    paid = granular(inst, cache)
    hit = np.minimum(paid, d) / d
    if job_hit is None:
        own = hit[inst.job_dataset]
    else:
        before = shared[inst.job_dataset]
        with np.errstate(divide="ignore", invalid="ignore"):
            own = np.where(before > 0, job_hit * hit[inst.job_dataset] / before, 0.0)
    bandwidth = inst.job_io_gbps * (1.0 - own)
    return Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=paid,
        bandwidth_gbps=bandwidth,
        facts=rule,
    )
