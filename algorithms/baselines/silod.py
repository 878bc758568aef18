"""SiloD-like (Zhao et al., EuroSys 2023; docs/model.md §7): fill the cache by IO density, price-blind.

SiloD treats the cache and the remote IO as resources of the scheduler and
gives cache to the data whose caching removes the most remote IO per byte:
the IO density ρ_k = R_k / d_k of docs/model.md §4.  It has no notion of price,
so it uses the whole capacity C whether or not a cached GB pays for itself;
that is exactly where CBA differs (CBA stops where p_b ρ_k ≤ p_c unless the
bandwidth cap B forces more).

Open choices, made in the baseline's favour: datasets that no job reads
(ρ_k = 0) are never cached, the last dataset that fits only in part is cached
in part (SiloD allocates cache in any amount), and ties in ρ keep dataset
order (as CBA does), so the two differ only by the price rule.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import feed_unstalled
from cbalab.models.evaluate import Allocation, hit_ratio
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill
from cbalab.models.types import SolveOptions


def silod(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Cache datasets by decreasing IO density until C is full, whatever the prices; feed every job unstalled."""
    inst.require_fixed()
    d = inst.dataset_size_gb
    return feed_unstalled(inst, density_fill(d, inst.dataset_demand(inst.job_io_gbps), inst.cache_gb))


def density_fill(d: np.ndarray, R: np.ndarray, cache_gb: float) -> np.ndarray:
    """SiloD's rule, stated once: the read datasets by decreasing IO density R_k / d_k (ties in dataset order)
    fill ``cache_gb``, the last one in part."""
    rho = R / d
    read = np.flatnonzero(rho > 0)
    order = read[np.argsort(-rho[read], kind="stable")]
    return prefix_fill(d, order, cache_gb)


def on_demand(
    d: np.ndarray, R: np.ndarray, cache_gb: float, bandwidth_gbps: float, p_c: float, p_b: float
) -> tuple[np.ndarray, np.ndarray]:
    """silod on the aggregate instance of demands ``R`` (docs/model.md §4): :func:`density_fill`, every dataset
    fed unstalled; the numbers :func:`silod` gives there (tests/test_registry.py), for a replay's events."""
    cache = density_fill(d, R, cache_gb)
    return cache, R * (1.0 - hit_ratio(d, cache))


def on_cap(need: np.ndarray, demand: np.ndarray, share: float, B: float) -> tuple[np.ndarray, np.ndarray]:
    """SiloD's division of a capped remote link (docs/methods/cache-baselines.md): B goes to the datasets in
    increasing order of miss ratio need_k / R_k (ties in dataset order), each fed in full, the last in part.

    SiloD's performance model makes a job's data throughput its remote IO divided by its miss ratio (1 − h), and
    its scheduler hands the remote IO to the jobs that gain the most throughput per unit of it; those are the
    best-cached ones.  Datasets left without IO stall outright (speed 0) until an event frees bandwidth.
    ``share`` (the proportional B / Σ need) is not read: SiloD does not share the link in proportion.
    """
    reading = np.flatnonzero(need > 0)
    order = reading[np.argsort(need[reading] / demand[reading], kind="stable")]
    bandwidth = np.zeros_like(need)
    fed = np.minimum(need[order], np.maximum(B - (np.cumsum(need[order]) - need[order]), 0.0))
    bandwidth[order] = fed
    speed = np.ones_like(need)
    speed[order] = fed / need[order]
    return bandwidth, speed
