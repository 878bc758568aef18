"""The LP of the cost problem P1 (docs/model.md §4) built from numpy arrays and solved by highspy directly.

The same formulation as :func:`cbalab.models.milp.cost.build_cost_model` with
``relax=True`` on a continuous instance without bandwidth tiers, in the same
hit-ratio form, but assembled as one row-wise sparse matrix: Pyomo's model
building dominates when thousands of small LPs are solved (the CBA sweep) or
when the LP has 10^5 rows (the P1 benchmark).

Columns: h_k ∈ [0, 1] (cost p_c d_k) for every dataset, then b_j ≥ 0 (cost
p_b) for every job.  Rows:

* feeding, b_j + r_j h_k(j) ≥ r_j for every job with r_j > 0 (b_j ≥ r_j (1 − h_k(j)));
* cache capacity, Σ_k d_k h_k ≤ C;
* bandwidth capacity, Σ_j b_j ≤ B, when B is finite and there is a job; B as the referee accepts it,
  ``tolerated(B, MODEL_SHARE)`` (docs/model.md (8.1)), as in build_cost_model and CBA.

The objective offset is the fixed GPU bill p_g Σ_j g_j.  The hit ratio keeps
the feeding rows' coefficients at r_j: with the cache in GB they would be
r_j / d_k, which HiGHS drops below 1e-9 (a slow job on a large dataset), and a
feasible instance then looked infeasible (see models/milp/cost.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import highspy
import numpy as np

from cbalab.models.evaluate import MODEL_SHARE, tolerated
from cbalab.models.instance import Instance, InstanceError


@dataclass
class HighsAnswer:
    """What HiGHS returned on P1's LP: model status text, objective (IO + GPU cost, $/h), cache and bandwidth.

    ``cache_gb`` (c_k = d_k h_k) and ``bandwidth_gbps`` (HiGHS's own b_j) are
    None unless HiGHS reports an optimum; the timings split building the LP
    from solving it.
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
    """P1's LP for a continuous instance without tiers (fixed GPUs and rates), in the hit-ratio form above."""
    inst.require_fixed()
    if inst.cache_granularity != "continuous" or inst.bandwidth_step_gbps is not None:
        raise InstanceError(
            "cache_granularity, bandwidth_step_gbps",
            (inst.cache_granularity, inst.bandwidth_step_gbps),
            "the highspy LP covers continuous caches without bandwidth tiers; use models.milp.cost",
        )
    K, J = inst.n_datasets, inst.n_jobs
    r = np.asarray(inst.job_io_gbps, dtype=float)
    d = np.asarray(inst.dataset_size_gb, dtype=float)
    fed = np.flatnonzero(r > 0)
    n_fed = fed.size
    index = np.empty(2 * n_fed, dtype=np.int32)
    value = np.empty(2 * n_fed)
    index[0::2] = inst.job_dataset[fed]
    value[0::2] = r[fed]
    index[1::2] = K + fed
    value[1::2] = 1.0
    starts: list[np.ndarray] = [2 * np.arange(n_fed), np.array([2 * n_fed])]
    indices: list[np.ndarray] = [index, np.arange(K, dtype=np.int32)]
    values: list[np.ndarray] = [value, d]
    lower: list[np.ndarray] = [r[fed], np.array([-highspy.kHighsInf])]
    upper: list[np.ndarray] = [np.full(n_fed, highspy.kHighsInf), np.array([float(inst.cache_gb)])]
    if math.isfinite(inst.bandwidth_gbps) and J:
        starts.append(np.array([2 * n_fed + K]))
        indices.append(K + np.arange(J, dtype=np.int32))
        values.append(np.ones(J))
        lower.append(np.array([-highspy.kHighsInf]))
        upper.append(np.array([tolerated(inst.bandwidth_gbps, MODEL_SHARE)]))
    lp = highspy.HighsLp()
    lp.num_col_ = K + J
    lp.num_row_ = n_fed + len(starts) - 1
    lp.col_cost_ = np.concatenate([inst.price_cache * d, np.full(J, float(inst.price_bandwidth))])
    lp.col_lower_ = np.zeros(K + J)
    lp.col_upper_ = np.concatenate([np.ones(K), np.full(J, highspy.kHighsInf)])
    lp.row_lower_ = np.concatenate(lower).astype(float)
    lp.row_upper_ = np.concatenate(upper).astype(float)
    lp.offset_ = inst.price_gpu * float(inst.job_gpus.sum())
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.concatenate([*starts, np.array([sum(x.size for x in indices)])]).astype(np.int32)
    lp.a_matrix_.index_ = np.concatenate(indices).astype(np.int32)
    lp.a_matrix_.value_ = np.concatenate(values)
    return lp


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
