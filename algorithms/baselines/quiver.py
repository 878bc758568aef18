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

from cbalab.algorithms.baselines.cache_common import dataset_feeding, feed_unstalled, rule_inputs
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill
from cbalab.models.result import CacheRule
from cbalab.models.types import SolveOptions


def quiver(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Cache the datasets of the jobs with the highest r_j / d_k(j) that pay alone, until C is full
    (:func:`benefit_fill`); feed every job unstalled."""
    cache = benefit_fill(*rule_inputs(inst))
    return feed_unstalled(inst, cache, rule=CacheRule(judged="per job"))


def benefit_fill(d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache_gb: float, p_c: float, p_b: float) -> np.ndarray:
    """Quiver's rule, stated once on arrays: the cache per dataset for jobs on datasets ``kj`` at rates ``r``.

    :func:`quiver` and a replay's events (:func:`on_jobs`) both call it.  Each dataset is ranked by its best
    job's benefit density max_j r_j / d_k; the datasets whose best job pays alone (p_b r_j / d_k > p_c) fill
    ``cache_gb`` in decreasing density (ties in dataset order), the last one in part.
    """
    density = r / d[kj]
    best = np.zeros(d.size)
    np.maximum.at(best, kj, density)
    # The array methods, not np.flatnonzero and np.argsort: the same indices without the Python wrappers, which
    # cost more than the work on a replay's dozen datasets at every event.
    worth = (p_b * best > p_c).nonzero()[0]
    order = worth[(-best[worth]).argsort(kind="stable")]
    return prefix_fill(d, order, cache_gb)


def on_jobs(
    d: np.ndarray, kj: np.ndarray, r: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray]:
    """quiver on the running jobs ``kj``, ``r`` (it judges per job, so it is not aggregable, docs/model.md §4):
    :func:`benefit_fill`, every job fed unstalled, the bandwidth summed per dataset; the numbers :func:`quiver`
    gives on the instance of those jobs with a continuous cache (tests/test_perjob_rules.py), for a replay's
    events (algorithms/registry.py, ``on_jobs``).  ``bandwidth_gbps`` is not read: Quiver ignores the cap B.
    """
    return dataset_feeding(d, kj, r, benefit_fill(d, kj, r, cache_gb, p_c, p_b))
