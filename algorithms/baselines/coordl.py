"""CoorDL / MinIO per job (Mohan et al., VLDB 2021; docs/model.md §7): private cache slices, no sharing.

CoorDL's MinIO cache keeps a fixed random part of a job's dataset and never
evicts it (the uniform caching of docs/model.md §3), but each job caches for
itself: two jobs reading one dataset do not hit each other's bytes.  Job j
with a private slice s_j hits on a fraction s_j / d_k(j) of its reads and
needs b_j = r_j (1 − s_j / d_k(j)) of remote IO.

The paper sizes MinIO by the memory of the job's servers and says nothing of
a shared pool or of prices, so the split of C is our choice, each made in the
baseline's favour:

* only jobs whose private copy pays for itself get a slice
  (p_b r_j > p_c d_k(j)); caching at a loss would only cost it more;
* C is split in proportion to need, the size of the job's dataset: every
  eligible job gets the same fraction α of its dataset, with α as large as C
  allows (water-filling);
* the slices of one dataset's jobs are taken disjoint and together at most
  d_k: once n_k α reaches 1 each of the n_k jobs keeps d_k / n_k and the
  capacity left goes to other datasets.  This one is *not* a choice in the
  baseline's favour but a limit of the model: the referee's cache is per
  dataset (c_k ≤ d_k, docs/model.md §2) and cannot hold duplicate copies, so
  when C has room for a private full copy per job, CoorDL here saves less
  bandwidth than real private copies would (at their extra cache cost);
* the cache paid for is Σ of the slices; the bandwidth is exactly what keeps
  every job unstalled.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import dataset_feeding, feed_unstalled, rule_inputs
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.result import CacheRule
from cbalab.models.types import SolveOptions


def coordl(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Private slices: the same fraction α of its dataset for every job that pays alone, one dataset's ≤ d_k
    (:func:`slices`); feed every job unstalled at its own hit ratio."""
    cache, job_hit, alpha = slices(*rule_inputs(inst))
    return feed_unstalled(inst, cache, job_hit, CacheRule(alpha=alpha))


def slices(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache_gb: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """CoorDL's rule, stated once on arrays: (cache per dataset, each job's own hit ratio, α) for jobs on
    datasets ``kj`` at rates ``r``.

    :func:`coordl` and a replay's events (:func:`on_jobs`) both call it.  The jobs whose private copy pays
    alone (p_b r_j > p_c d_k(j)) each get the fraction min(α, 1 / n_k) of their dataset, n_k of them on
    dataset k, with α ≤ 1 the largest that ``cache_gb`` holds (:func:`_water_level`); the others hit nothing.
    """
    eligible = p_b * r > p_c * d[kj]
    n = np.bincount(kj[eligible], minlength=d.size).astype(float)
    alpha = _water_level(d, n, cache_gb)
    fraction = np.where(n > 0, np.minimum(alpha, 1.0 / np.maximum(n, 1.0)), 0.0)
    cache = d * np.minimum(1.0, n * fraction)
    job_hit = np.where(eligible, fraction[kj], 0.0)
    return cache, job_hit, alpha


def on_jobs(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray]:
    """coordl on the running jobs ``kj``, ``r`` (its slices are per job, so it is not aggregable, docs/model.md
    §4): :func:`slices`, every job fed unstalled at its own hit ratio, the bandwidth summed per dataset; the
    numbers :func:`coordl` gives on the instance of those jobs with a continuous cache
    (tests/test_perjob_rules.py), for a replay's events (algorithms/registry.py, ``on_jobs``).
    ``bandwidth_gbps`` is not read: CoorDL ignores the cap B.
    """
    cache, job_hit, _alpha = slices(d, kj, r, cache_gb, p_c, p_b)
    return dataset_feeding(d, kj, r, cache, job_hit)


def _water_level(d: np.ndarray, n: np.ndarray, capacity: float) -> float:
    """The largest α ≤ 1 with Σ_k d_k min(1, n_k α) ≤ capacity (datasets with n_k jobs that get a slice)."""
    used = n > 0
    if not used.any() or float(np.add.reduce(d[used])) <= capacity:
        return 1.0
    d, n = d[used], n[used]
    cut = 1.0 / n
    order = np.argsort(cut)
    cut_s, d_s, n_s = cut[order], d[order], n[order]
    full = np.cumsum(d_s) - d_s
    slope = np.cumsum((d_s * n_s)[::-1])[::-1]
    # At α in [cut_s[i-1], cut_s[i]] datasets 0..i-1 are full and the rest grow at slope[i].
    lower = np.concatenate([[0.0], cut_s[:-1]])
    level = (capacity - full) / slope
    ok = np.flatnonzero((level >= lower) & (level <= cut_s))
    return float(min(1.0, level[ok[0]])) if ok.size else float(min(1.0, cut_s[-1]))
