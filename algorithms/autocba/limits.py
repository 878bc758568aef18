"""AutoCBA's numerical constants and step 1: the options that fit alone (proofs/autocba_guarantee.md)."""

from __future__ import annotations

import numpy as np

from cbalab.models.instance import Instance

#: Relative slack a move may use on the budget and on B (floating point only: far inside the referee's RTOL = 1e-9).
_SAFE = 1e-12
#: Relative tolerance by which an option may exceed a limit alone and still count in the bound (solver slack).
_BOUND_SLACK = 1e-7
_TINY = 1e-300
_HUGE = 1e150
#: Above this many jobs AutoCBA runs one greedy (the normalised one when G or B can bind, the one with a
#: guarantee) instead of two, and the swap pass only below a quarter of it: it stays near-linear in time.
_LARGE = 2000


def standalone_cost(inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """Per option row: (least total cost $/h of running that option alone, remote IO it then needs GB/s).

    Alone, the job's dataset may take h ∈ [0, min(1, C/d)] and must leave at
    most B remote: the cost p_g g + p_c d h + p_b r (1 − h) is linear in h, so
    an end point is optimal.  The cost is +inf when even the largest hit ratio
    leaves more than B remote IO.
    """
    rows = inst.option_job()
    d = inst.dataset_size_gb[inst.job_dataset[rows]]
    r = inst.option_io_gbps
    h_max = np.minimum(1.0, inst.cache_gb / d)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h_min = np.where(r > 0, np.maximum(0.0, 1.0 - inst.bandwidth_gbps / np.where(r > 0, r, 1.0)), 0.0)
    h = np.where(inst.price_cache * d < inst.price_bandwidth * r, h_max, np.minimum(h_min, h_max))
    cost = inst.price_gpu * inst.option_gpus + inst.price_cache * d * h + inst.price_bandwidth * r * (1.0 - h)
    remote = r * (1.0 - h)
    cost = np.where(h_min > h_max + 1e-12, np.inf, cost)
    return cost, remote


def fits_alone(inst: Instance, slack: float = 0.0, *, absolute: bool = True) -> np.ndarray:
    """Mask of option rows that fit G, B and the budget when their job runs alone (within ``slack``).

    The one "fits alone" rule of the package's algorithms: AutoCBA's step 1, its certificate, online
    AutoCBA and the elastic replay's check that every job can run at all use it.

    The slack is relative, plus the same amount absolute unless ``absolute`` is False (the greedy's filter:
    a relative slack absorbs the rounding of r (1 − (1 − B/r)) = B (1 + 2e-16) under forced caching, without admitting
    an option that costs 1e-30 $/h over a zero budget).
    """
    cost, remote = standalone_cost(inst)
    extra = slack if absolute else 0.0
    ok = (inst.option_utility > 0) & np.isfinite(cost)  # +inf: B cannot be met alone, whatever the budget
    if inst.gpus is not None:
        ok &= inst.option_gpus <= inst.gpus
    ok &= remote <= inst.bandwidth_gbps * (1 + slack) + extra
    ok &= cost <= inst.budget_per_hour * (1 + slack) + extra
    return ok
