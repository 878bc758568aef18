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


def whole_first_fit(size: np.ndarray, order: list[int] | np.ndarray, capacity: float) -> np.ndarray:
    """Whole items in ``order``, each only if it still fits in what is left (first fit, nothing in part)."""
    out = np.zeros(size.shape)
    left, slack, sizes = capacity, RTOL * max(1.0, capacity), size.tolist()  # Python numbers: read one by one
    for k in order:
        if sizes[k] <= left + slack:
            out[k] = sizes[k]
            left -= sizes[k]
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


def rule_inputs(inst: Instance) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float, float]:
    """What a per-job cache rule reads of a fixed-GPU instance, in its arguments' order: dataset sizes d, each
    job's dataset and rate r_j, C, p_c and p_b (docs/model.md §2).  Quiver's ``quiver.benefit_fill`` and CoorDL's
    ``coordl.slices`` take these arrays, so a replay can call them without an Instance."""
    inst.require_fixed()
    return (
        inst.dataset_size_gb,
        inst.job_dataset,
        inst.job_io_gbps,
        inst.cache_gb,
        inst.price_cache,
        inst.price_bandwidth,
    )


def unstalled(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache: np.ndarray, paid: np.ndarray, job_hit: np.ndarray | None
) -> np.ndarray:
    """Every job's bandwidth b_j = r_j (1 − h_j) that keeps it unstalled (eq. (3.3), docs/model.md §3), stated
    once on arrays for :func:`feed_unstalled` and for the per-job rules a replay calls (:func:`dataset_feeding`).

    ``d`` are the dataset sizes, ``kj`` and ``r`` each job's dataset and rate, ``cache`` the baseline's cache
    per dataset and ``paid`` what is left of it after rounding to the granularity (``cache`` itself when
    continuous).  A job hits its dataset's shared ratio min(paid_k, d_k) / d_k, or, with ``job_hit`` (private
    caches), its own ratio scaled by what rounding left of its dataset's cache.
    """
    hit = (np.minimum(paid, d) / d)[kj]
    if job_hit is None:
        return r * (1.0 - hit)
    before = hit if paid is cache else (np.minimum(cache, d) / d)[kj]
    # job_hit × hit / before where before > 0, else 0: divided only where it can be, so no warning to silence.
    own = np.divide(job_hit * hit, before, out=np.zeros(before.size), where=before > 0)
    return r * (1.0 - own)


def dataset_feeding(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache: np.ndarray, job_hit: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A continuous ``cache`` and the bandwidth per dataset that feeds every job unstalled: what
    :func:`feed_unstalled` answers on the jobs ``kj``, ``r`` (:func:`unstalled`), its per-job bandwidths summed
    per dataset in job order.

    The answer of a per-job rule (algorithms/registry.py, ``on_jobs``) at a replay's event
    (experiments/simulate.py), which needs only the per-dataset sums (docs/model.md §6).
    """
    return cache, np.bincount(kj, weights=unstalled(d, kj, r, cache, cache, job_hit), minlength=d.size)


def feed_unstalled(
    inst: Instance, cache: np.ndarray, job_hit: np.ndarray | None = None, rule: CacheRule | None = None
) -> Allocation:
    """The Allocation that pays for ``cache`` (rounded to the granularity) and feeds every job unstalled.

    ``job_hit`` is each job's own hit ratio when it differs from its
    dataset's shared one (private caches); it is scaled down with the cache
    when rounding takes capacity away (:func:`unstalled`).  ``rule`` is what the baseline chose, declared in the
    answer's ``facts``.
    """
    inst.require_fixed()
    paid = granular(inst, cache)
    bandwidth = unstalled(inst.dataset_size_gb, inst.job_dataset, inst.job_io_gbps, cache, paid, job_hit)
    return Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=paid,
        bandwidth_gbps=bandwidth,
        facts=rule,
    )
