"""IO-only (spec/MODEL.md §7): no cache at all; every job reads its whole stream remotely.

What the field does without a compute-side cache: b_j = r_j for every job.
There is no open choice to make in its favour.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.baselines.cache_common import feed_unstalled
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


def io_only(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """No cache; every job's bandwidth is its full rate r_j (infeasible when Σ r_j > B)."""
    return feed_unstalled(inst, np.zeros(inst.n_datasets))
