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

from cbalab.algorithms.baselines.cache_common import feed_unstalled, whole_first_fit
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.result import CacheRule
from cbalab.models.types import SolveOptions


def cache_all(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Whole datasets in order of first reference, first fit, until C is full; then feed every job unstalled."""
    referenced, first = np.unique(inst.job_dataset, return_index=True)
    order = referenced[np.argsort(first, kind="stable")]
    cache = whole_first_fit(inst.dataset_size_gb, order, inst.cache_gb)
    return feed_unstalled(inst, cache, rule=CacheRule(order="first reference"))
