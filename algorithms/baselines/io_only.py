"""IO-only (docs/model.md §7): no cache at all; every job reads its whole stream remotely.

What the field does without a compute-side cache: b_j = r_j for every job.
There is no open choice to make in its favour.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import feed_unstalled
from cbalab.models.evaluate import Allocation, hit_ratio
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def io_only(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """No cache; every job's bandwidth is its full rate r_j (infeasible when Σ r_j > B)."""
    return feed_unstalled(inst, np.zeros(inst.n_datasets))


def on_demand(
    d: np.ndarray, R: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray]:
    """io-only on the aggregate instance of demands ``R`` (docs/model.md §4): no cache, bandwidth R_k.

    The numbers :func:`io_only` gives on that instance (tests/test_registry.py), for a replay's events
    (algorithms/registry.py, ``on_demand``).
    """
    cache = np.zeros(d.shape)
    return cache, R * (1.0 - hit_ratio(d, cache))
