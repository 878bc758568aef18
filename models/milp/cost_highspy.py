"""P1's LP (docs/model.md §4) handed to highspy directly: the compiled :func:`cbalab.models.milp.cost.cost_statement`.

For a continuous instance without tiers the statement is the LP of P1 in the hit-ratio form, compiled to one
row-wise sparse matrix (models/milp/statement.py) without Pyomo, whose model building dominates when thousands
of small LPs are solved (the CBA sweep) or when the LP has 10^5 rows (the P1 benchmark).  The objective offset
is the fixed GPU bill p_g Σ_j g_j.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np

from cbalab.models.instance import Instance, InstanceError
from cbalab.models.milp.cost import cost_statement


@dataclass
class HighsAnswer:
    """What HiGHS returned on P1's LP: model status text, objective (IO + GPU cost, $/h), cache and bandwidth.

    ``cache_gb`` (c_k = d_k h_k) and ``bandwidth_gbps`` (HiGHS's own b_j) are None unless HiGHS reports an
    optimum; the timings split building the LP from solving it.
    """

    status: str
    objective: float | None
    cache_gb: np.ndarray | None
    bandwidth_gbps: np.ndarray | None
    build_seconds: float
    solve_seconds: float

    @property
    def optimal(self) -> bool:
        """True when HiGHS reported an optimum."""
        return self.objective is not None


def build_cost_lp(inst: Instance) -> highspy.HighsLp:
    """P1's LP for a continuous instance without tiers (fixed GPUs and rates), unscaled, as docs/model.md §4."""
    if inst.cache_granularity != "continuous" or inst.bandwidth_step_gbps is not None:
        raise InstanceError(
            "cache_granularity, bandwidth_step_gbps",
            (inst.cache_granularity, inst.bandwidth_step_gbps),
            "the highspy LP covers continuous caches without bandwidth tiers; use models.milp.cost",
        )
    return cost_statement(inst, relax=True).compile().to_highs()


def solve_cost_lp(inst: Instance, *, threads: int = 1) -> HighsAnswer:
    """Build P1's LP with :func:`build_cost_lp` and solve it with HiGHS (no time limit, no output)."""
    start = time.perf_counter()
    lp = build_cost_lp(inst)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", threads)
    h.passModel(lp)
    built = time.perf_counter()
    h.run()
    solved = time.perf_counter()
    model_status = h.getModelStatus()
    status = h.modelStatusToString(model_status)
    if model_status != highspy.HighsModelStatus.kOptimal:
        return HighsAnswer(status, None, None, None, built - start, solved - built)
    K = inst.n_datasets
    x = np.asarray(h.getSolution().col_value)
    cache = np.clip(x[:K], 0.0, 1.0) * inst.dataset_size_gb
    objective = h.getInfo().objective_function_value
    return HighsAnswer(status, objective, cache, x[K:], built - start, solved - built)
