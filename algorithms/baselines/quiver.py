"""Quiver-like (Kumar & Sivathanu, FAST 2020; docs/model.md §7): benefit-aware caching judged per job.

Quiver measures how much each job gains from caching its dataset and gives
the cache to the jobs that gain most per cached byte.  Its judgement is per
job: job j's benefit density is r_j / d_k(j), the remote IO that caching its
dataset saves *for that job* per GB.  Datasets are cached in the order of
their best job's density; once cached, the cache is shared by every job on
the dataset (Quiver's cache is content-addressed), but the decision never
adds up the jobs of one dataset: ten light jobs on one dataset that together
would justify its cache do not get it.

Open choices, made in the baseline's favour:

* it is price-aware per job: a dataset is cached only while its best job
  alone pays for it (p_b r_j / d_k > p_c), so it never caches at a loss
  judged by that job (a price-blind Quiver would only cost more);
* the last dataset that fits only in part is cached in part (Quiver's
  substitutable hits make a partial cache useful);
* ties keep job order.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import feed_unstalled
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill
from cbalab.models.result import CacheRule
from cbalab.models.types import SolveOptions


def quiver(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Cache the datasets of the jobs with the highest r_j / d_k(j) that pay alone, until C is full."""
    inst.require_fixed()
    d = inst.dataset_size_gb
    density = inst.job_io_gbps / d[inst.job_dataset]
    best = np.zeros(inst.n_datasets)
    np.maximum.at(best, inst.job_dataset, density)
    worth = np.flatnonzero(inst.price_bandwidth * best > inst.price_cache)
    order = worth[np.argsort(-best[worth], kind="stable")]
    return feed_unstalled(inst, prefix_fill(d, order, inst.cache_gb), rule=CacheRule(judged="per job"))
