"""What one option can do alone (proofs/welfare_milp_forms.md, Lemma F2): the rule that drops options from P2
and the rule that picks the welfare objective's unit (models/certify.py, ``objective_unit``).

Free of Pyomo, so that the certification step and the models both read it.
"""

from __future__ import annotations

import math

import numpy as np

from cbalab.models.evaluate import tolerated
from cbalab.models.instance import Instance


def share_fits(inst: Instance) -> np.ndarray:
    """Per option, for the LP of shares: its GPUs fit G.  That LP bounds time-shared and stalled answers
    (docs/model.md §5, "Time sharing"), and a share of an option that cannot run alone, unstalled or within the
    budget, may still be paid for; only g_o > G can never run, in any round (proofs/welfare_milp_forms.md, F2)."""
    g = inst.option_gpus
    return np.ones(g.size, dtype=bool) if inst.gpus is None else g <= inst.gpus


def standalone_fits(inst: Instance, slack: float = 1e-9, share: float = 1.0) -> np.ndarray:
    """Per option: can it run alone, unstalled, within G, C, B and the budget? (proofs/welfare_milp_forms.md, F2).

    Alone, option o pays p_g g_o + min over h ≤ min(1, C/d) with r_o(1 − h) ≤ B of p_c d h + p_b r_o (1 − h);
    the minimum is at an end of the feasible h interval (linear cost).  C, B and the budget are taken as
    ``tolerated(·, share)``: with ``share`` 1 as the referee accepts them (docs/model.md (8.1)), with 0 as
    written.  ``slack`` is relative and on the side of keeping on top: with the defaults an option is dropped
    only if it misses a limit by more than it, so a rounding error can never remove a feasible option (the
    opposite error once dropped feasible options from AutoCBA).  With ``slack=0, share=0`` an option passes
    only if it meets the limits as written, which leaves the referee's whole slack (8.1) for the rounding of the
    few products compared here: such an option alone is an allocation the referee accepts, unstalled (Lemma F2 (ii)).
    """
    o_job = inst.option_job()
    d = inst.dataset_size_gb[inst.job_dataset[o_job]]
    r = inst.option_io_gbps
    g = inst.option_gpus.astype(float)
    h_top = np.minimum(1.0, tolerated(inst.cache_gb, share) / d)
    h_low = np.zeros_like(r)
    if math.isfinite(inst.bandwidth_gbps):
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(r > 0, 1.0 - tolerated(inst.bandwidth_gbps, share) / r, 0.0)
        h_low = np.clip(need, 0.0, None)
    ok = h_low <= h_top + slack
    cheapest = np.full(r.size, np.inf)
    for h in (h_low, h_top):
        h = np.minimum(h, h_top)
        cost = inst.price_gpu * g + inst.price_cache * d * h + inst.price_bandwidth * r * (1 - h)
        cheapest = np.minimum(cheapest, cost)
    if math.isfinite(inst.budget_per_hour):
        ok &= cheapest <= tolerated(inst.budget_per_hour, share) + slack * max(1.0, abs(inst.budget_per_hour))
    return ok & share_fits(inst)


def runs_alone(inst: Instance) -> np.ndarray:
    """Per option: does it meet G, C, B and the budget as written when it runs alone, unstalled?  Then the option
    alone is an allocation the referee accepts, and its utility is at most the welfare optimum
    (proofs/welfare_milp_forms.md, Lemma F2 (ii)): the options that give the welfare its unit."""
    return standalone_fits(inst, slack=0.0, share=0.0)
