"""Cache-all FIFO (docs/model.md §7): whole datasets in arrival order until the cache is full.

What dataset-level caches do today (Alluxio or Fluid dataset mounts): a
dataset is mounted into the cache whole when the first job that reads it
arrives, first come first served, with no regard to price or to how much IO
it saves.  The arrival order is the job order of the instance (a trace's
submission order): dataset k's place is the position of the first job that
reads it.  Datasets that no job reads are never cached.

Open choices, made in the baseline's favour:

* a dataset that no longer fits is skipped and later, smaller ones are still
  cached (first fit), instead of stopping at the first that does not fit, so
  the capacity is used as fully as whole datasets allow;
* the bandwidth is exactly what keeps every job unstalled, no more.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import dataset_feeding, feed_unstalled, whole_first_fit
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.result import CacheRule
from cbalab.models.types import SolveOptions


def cache_all(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Whole datasets in order of first reference, first fit, until C is full (:func:`first_reference_fill`); then
    feed every job unstalled."""
    cache = first_reference_fill(inst.dataset_size_gb, inst.job_dataset, inst.cache_gb)
    return feed_unstalled(inst, cache, rule=CacheRule(order="first reference"))


def first_reference_fill(d: np.ndarray, kj: np.ndarray, cache_gb: float) -> np.ndarray:
    """Cache-all's rule, stated once on arrays: the cache per dataset for jobs on datasets ``kj``, in job order.

    :func:`cache_all` and a replay's events (:func:`on_jobs`) both call it.  The datasets in the order of the first
    job that reads each (``dict.fromkeys`` keeps first appearances in order), each whole if it still fits in what
    is left of ``cache_gb`` (``whole_first_fit``).
    """
    return whole_first_fit(d, list(dict.fromkeys(kj.tolist())), cache_gb)


def on_jobs(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray]:
    """cache-all on the running jobs ``kj``, ``r`` in start order (the order decides what is cached, so it is not
    aggregable, docs/model.md §4): :func:`first_reference_fill`, every job fed unstalled, the bandwidth summed per
    dataset; the numbers :func:`cache_all` gives on the instance of those jobs with a continuous cache
    (tests/test_perjob_rules.py), for a replay's events (algorithms/registry.py, ``on_jobs``).  Neither B nor the
    prices are read: cache-all caches first come first served.
    """
    return dataset_feeding(d, kj, r, first_reference_fill(d, kj, cache_gb))
