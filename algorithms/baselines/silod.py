"""SiloD-like (Zhao et al., EuroSys 2023; spec/MODEL.md §7): fill the cache by IO density, price-blind.

SiloD treats the cache and the remote IO as resources of the scheduler and
gives cache to the data whose caching removes the most remote IO per byte:
the IO density ρ_k = R_k / d_k of MODEL.md §4.  It has no notion of price,
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
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill
from cbalab.models.types import SolveOptions


def silod(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Cache datasets by decreasing IO density until C is full, whatever the prices; feed every job unstalled."""
    inst.require_fixed()
    d = inst.dataset_size_gb
    rho = inst.dataset_demand(inst.job_io_gbps) / d
    read = np.flatnonzero(rho > 0)
    order = read[np.argsort(-rho[read], kind="stable")]
    return feed_unstalled(inst, prefix_fill(d, order, inst.cache_gb))
