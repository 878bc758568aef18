"""The cost problem P1 (docs/model.md §4) as a Pyomo model, with its integer variants.

The model is assembled from one builder per group of constraints, each named
for what it states:

* :func:`define_cache`      hit ratio h_k ∈ [0, 1] and c_k = d_k h_k; whole datasets
                            h_k = z_k binary; or whole blocks c_k = u n_k serving
                            d_k h_k ≤ u n_k, h_k ≤ 1;
* :func:`define_bandwidth`  b_j ≥ 0; under tiers a whole number m of tiers,
                            Σ_j b_j ≤ β m ≤ B;
* :func:`define_feeding`    b_j ≥ r_j (1 - h_k(j)), every job unstalled;
* :func:`define_capacity`   Σ_k c_k ≤ C and Σ_j b_j ≤ B;
* :func:`define_cost`       minimise p_g Σ g_j + p_c Σ c_k + p_b (Σ b_j or β m).

Under blocks the model also counts the blocks in one integer N = Σ_k n_k, bounded by ⌊C/u⌋, and
prices the cache as p_c u N.  Nothing changes for the integer points (proofs/cba_integer_gap.md,
Theorem I6), but HiGHS can branch on N: for a fixed number of tiers the cost is a multiple of p_c u
plus a constant, so the branch N ≤ N* − 1 is infeasible or dearer and N ≥ N* closes the gap at once.
Without N, B&B has to prove "no solution uses one block fewer" one n_k at a time; after the
hit-ratio change below it did not finish blocks + tiers (1,000 jobs × 200 datasets) in 120 s
(experiments/runs/integer_milp_bench.py measures both forms).  ``count_blocks=False`` builds the
model without N, as it was before.

``relax=True`` drops integrality (z, n, m continuous) and gives the LP
relaxation from the same builder.  For a ``continuous`` instance without tiers
the model is the LP of P1 whatever ``relax`` says.

B stands in its rows as the referee accepts it, ``tolerated(B, MODEL_SHARE)`` of models/evaluate.py, as CBA
takes it; C as written, as CBA fills it (docs/model.md (8.1)).

``scaled=True`` (what models/solve.py hands HiGHS) states the same model in units where HiGHS's absolute
tolerances mean the same at every scale of the numbers (docs/model.md §8): the objective is divided by a
power of two M near the cost unit of models/certify.py (about the optimal IO cost), each b_j is measured in
units of its job's rate r_j (``bw`` holds b_j / r_j, the share read remotely), and the rows of C, B, the
blocks and the tiers are divided by their limit or their size.  Objective values are then in units of M
(:func:`cost_scales`); the solution (hit ratios, blocks, tiers) is the same.  The default, unscaled, is the
model as docs/model.md §4 writes it.

The served cache enters the model as the hit ratio h_k = s_k / d_k rather
than as GB, so that the feeding rows carry the coefficients r_j and not
r_j / d_k: HiGHS drops matrix entries below 1e-9, and r_j / d_k is that small
for a slow job on a large dataset (1e-6 GB/s on 1e5 GB), which made a
feasible instance look infeasible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.environ as pyo

from cbalab.models.certify import objective_unit
from cbalab.models.evaluate import MODEL_SHARE, RTOL, tolerated
from cbalab.models.instance import Instance
from cbalab.models.kernels import power_of_two


@dataclass(frozen=True)
class CostScales:
    """How a P1 model is scaled: the objective in units of ``objective`` ($/h), job j's bandwidth in units of
    ``rate[j]`` (GB/s; None: GB/s), and whether the rows are divided by their limits (``rows``).  The defaults
    give the model as written."""

    objective: float = 1.0
    rate: np.ndarray | None = None
    rows: bool = False

    def divisor(self, limit: float, fallback: float) -> float:
        """What a row with right-hand side ``limit`` is divided by: the limit, ``fallback`` when it is 0, 1 unscaled."""
        if not self.rows:
            return 1.0
        return limit if limit > 0 else (fallback if fallback > 0 else 1.0)

    def unit(self, j: int) -> float:
        """Job j's bandwidth unit: b_j = unit · bw_j."""
        return 1.0 if self.rate is None else float(self.rate[j])

    def total_bandwidth(self, m: pyo.ConcreteModel) -> Any:
        """Σ_j b_j in GB/s as an expression of the model's ``bw``."""
        return pyo.quicksum(_times(self.unit(j), m.bw[j]) for j in m.J)


def _times(factor: float, expr: Any) -> Any:
    """``factor · expr``, or ``expr`` itself when the factor is 1 (the unscaled model reads as written)."""
    return expr if factor == 1.0 else factor * expr


def cost_scales(inst: Instance) -> CostScales:
    """The scales of the model HiGHS sees (``scaled=True``): a power of two near the cost unit, and each job's
    bandwidth in units of its own rate r_j (1 GB/s for a job that reads nothing), so that bw_j is the share of
    its reads that come over the network and its feeding row reads bw_j ≥ 1 − h_k(j).

    The cost unit is :func:`cbalab.models.certify.objective_unit` of P1, at most about the optimal IO cost.
    """
    rates = inst.job_io_gbps
    return CostScales(
        objective=power_of_two(objective_unit(inst, "cost")), rate=np.where(rates > 0, rates, 1.0), rows=True
    )


def build_cost_model(
    inst: Instance, *, relax: bool = False, count_blocks: bool = True, scaled: bool = False
) -> pyo.ConcreteModel:
    """P1 of docs/model.md §4 for ``inst`` (fixed GPUs and rates), exact for its cache and bandwidth variants.

    ``count_blocks`` adds the block count N under blocks (not in the relaxation, whose LP it leaves
    unchanged); ``scaled`` states it in the units of :func:`cost_scales`; see the module docstring.
    """
    inst.require_fixed()
    scales = cost_scales(inst) if scaled else CostScales()
    m = pyo.ConcreteModel(name="cbalab-P1")
    m.K = pyo.RangeSet(0, inst.n_datasets - 1)
    m.J = pyo.RangeSet(0, inst.n_jobs - 1)
    define_cache(m, inst, relax, scales)
    define_bandwidth(m, inst, relax, scales)
    define_feeding(m, inst, scales)
    define_capacity(m, inst, scales)
    if count_blocks and not relax and inst.cache_granularity == "block":
        define_block_count(m, inst)
    define_cost(m, inst, scales)
    return m


def define_cache(m: pyo.ConcreteModel, inst: Instance, relax: bool, scales: CostScales = CostScales()) -> None:
    """Occupied cache c_k and hit ratio h_k = s_k / d_k per dataset (docs/model.md §3-§4, cache granularity).

    continuous: h_k ∈ [0, 1], c_k = d_k h_k.  dataset: h_k = z_k ∈ {0, 1}, c_k = d_k z_k.
    block of size u: c_k = u n_k with n_k ∈ {0, …, ⌈d_k/u⌉}, and d_k h_k ≤ c_k, h_k ≤ 1
    (a last, partly filled block is paid in full but serves only what the dataset has; scaled, that row
    is divided by d_k).
    """
    d = inst.dataset_size_gb
    if inst.cache_granularity == "continuous":
        m.hit = pyo.Var(m.K, bounds=(0.0, 1.0))
        m.cache = pyo.Expression(m.K, rule=lambda mm, k: float(d[k]) * mm.hit[k])
    elif inst.cache_granularity == "dataset":
        m.hit = pyo.Var(m.K, domain=pyo.UnitInterval if relax else pyo.Binary)
        m.cache = pyo.Expression(m.K, rule=lambda mm, k: float(d[k]) * mm.hit[k])
    else:
        u = inst.block_size_gb
        # ⌈d_k/u⌉ with the referee's slack (models/evaluate.py), so that both agree when d_k/u is a whole number
        # up to rounding (d = 7.3, u = 7.3/3 gives d/u = 3.0000000000000004).
        top = np.ceil(d / u - RTOL * np.maximum(1.0, d / u))
        m.blocks = pyo.Var(
            m.K,
            domain=pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers,
            bounds=lambda _, k: (0, float(top[k])),
        )
        m.cache = pyo.Expression(m.K, rule=lambda mm, k: u * mm.blocks[k])
        div = [scales.divisor(float(x), u) for x in d]
        m.hit = pyo.Var(m.K, bounds=(0.0, 1.0))
        m.served_in_blocks = pyo.Constraint(
            m.K, rule=lambda mm, k: _times(float(d[k]) / div[k], mm.hit[k]) <= _times(u / div[k], mm.blocks[k])
        )


def define_block_count(m: pyo.ConcreteModel, inst: Instance) -> None:
    """N = Σ_k n_k, whole, 0 ≤ N ≤ ⌊C/u⌋ (proofs/cba_integer_gap.md, Theorem I6).

    The upper bound repeats Σ_k c_k ≤ C as a bound on N, so that presolve keeps N as a column
    (with only bounds the row implies, HiGHS substitutes N away and loses the branching it offers).
    """
    u = inst.block_size_gb
    top = sum(int(pyo.value(m.blocks[k].ub)) for k in m.K)
    most = min(top, math.floor(inst.cache_gb / u * (1 + 1e-12)))
    m.total_blocks = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, most))
    m.count_blocks = pyo.Constraint(expr=m.total_blocks == pyo.quicksum(m.blocks[k] for k in m.K))


def define_bandwidth(m: pyo.ConcreteModel, inst: Instance, relax: bool, scales: CostScales = CostScales()) -> None:
    """Bandwidth b_j ≥ 0 per job (scaled, ``bw`` = b_j / r_j); under tiers of size β, Σ_j b_j ≤ β·m, m whole (§4).

    At most ⌊tolerated(B, MODEL_SHARE) / β⌋ tiers: what the referee accepts (docs/model.md (8.1)).
    """
    m.bw = pyo.Var(m.J, domain=pyo.NonNegativeReals)
    step = inst.bandwidth_step_gbps
    if step is not None:
        top = (
            math.floor(tolerated(inst.bandwidth_gbps, MODEL_SHARE) / step)
            if math.isfinite(inst.bandwidth_gbps)
            else None
        )
        m.tiers = pyo.Var(domain=pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers, bounds=(0, top))
        m.provisioned = pyo.Expression(expr=step * m.tiers)
        div = scales.divisor(step, 1.0)
        m.within_tiers = pyo.Constraint(
            expr=_times(1.0 / div, scales.total_bandwidth(m)) <= _times(step / div, m.tiers)
        )


def define_feeding(m: pyo.ConcreteModel, inst: Instance, scales: CostScales = CostScales()) -> None:
    """No stalls: b_j ≥ r_j (1 - h_k(j)) for every job (docs/model.md §3-§4); scaled, bw_j ≥ 1 − h_k(j)."""
    r = inst.job_io_gbps
    k_of = inst.job_dataset

    def rule(mm: pyo.ConcreteModel, j: int) -> pyo.Expression:
        if r[j] == 0:
            return pyo.Constraint.Skip
        return mm.bw[j] >= _times(float(r[j]) / scales.unit(j), 1 - mm.hit[int(k_of[j])])

    m.feed = pyo.Constraint(m.J, rule=rule)


def define_capacity(m: pyo.ConcreteModel, inst: Instance, scales: CostScales = CostScales()) -> None:
    """Σ_k c_k ≤ C and Σ_j b_j ≤ B (docs/model.md §4), B as the referee accepts it (``tolerated``, (8.1)); the
    second is dropped when B is unlimited.

    Scaled, each row is divided by its limit (by the largest dataset, or 1, when the limit is 0).
    """
    c_div = scales.divisor(inst.cache_gb, float(inst.dataset_size_gb.max()) if inst.n_datasets else 1.0)
    m.cache_capacity = pyo.Constraint(
        expr=_times(1.0 / c_div, pyo.quicksum(m.cache[k] for k in m.K)) <= inst.cache_gb / c_div
    )
    if math.isfinite(inst.bandwidth_gbps) and inst.n_jobs:  # with no job the sum is 0 and the row trivial
        b_div = scales.divisor(inst.bandwidth_gbps, 1.0)
        m.bandwidth_capacity = pyo.Constraint(
            expr=_times(1.0 / b_div, scales.total_bandwidth(m)) <= tolerated(inst.bandwidth_gbps, MODEL_SHARE) / b_div
        )


def define_cost(m: pyo.ConcreteModel, inst: Instance, scales: CostScales = CostScales()) -> None:
    """Minimise p_g Σ g_j + p_c Σ c_k + p_b (Σ b_j, or the provisioned β m under tiers); Σ c_k = u N if counted.

    Scaled, the objective is this cost divided by M = ``scales.objective`` (b_j = r_j bw_j).
    """
    gpu = inst.price_gpu * float(inst.job_gpus.sum())
    bandwidth = m.provisioned if hasattr(m, "provisioned") else scales.total_bandwidth(m)
    counted = hasattr(m, "total_blocks")
    occupied = inst.block_size_gb * m.total_blocks if counted else pyo.quicksum(m.cache[k] for k in m.K)
    m.cost = pyo.Objective(
        expr=_times(1.0 / scales.objective, gpu + inst.price_cache * occupied + inst.price_bandwidth * bandwidth),
        sense=pyo.minimize,
    )
