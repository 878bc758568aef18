"""The cost problem P1 (docs/model.md §4) with its integer variants, stated once (models/milp/statement.py).

Columns (:func:`cost_statement`): the hit ratio h_k ∈ [0, 1] per dataset (binary under whole datasets); under
blocks of size u the whole blocks n_k ∈ {0, …, ⌈d_k/u⌉}; b_j ≥ 0 per job; under tiers of size β the whole
number m of tiers; under blocks (``count_blocks``) the block count N.  One row function per group, each named
for what it states:

* :func:`served_in_blocks`   d_k h_k ≤ u n_k (a last, partly filled block is paid but serves what the dataset has);
* :func:`within_tiers`       Σ_j b_j ≤ β m (≤ Σ_j r_j · m when a tier exceeds the whole demand, :func:`tier_cover`);
* :func:`feed`               b_j ≥ r_j (1 − h_k(j)), every job unstalled;
* :func:`cache_capacity`     Σ_k c_k ≤ C, with c_k = d_k h_k (or u n_k under blocks);
* :func:`bandwidth_capacity` Σ_j b_j ≤ B;
* :func:`count_blocks`       N = Σ_k n_k (proofs/cba_integer_gap.md, Theorem I6);

and the objective, minimise p_g Σ g_j + p_c Σ c_k + p_b (Σ b_j or β m) (Σ c_k = u N when counted), in the
columns' costs.  Counting the blocks changes no integer point (Theorem I6), but HiGHS can branch on N: for a
fixed number of tiers the cost is a multiple of p_c u plus a constant, so N ≤ N* − 1 is infeasible or dearer
and N ≥ N* closes the gap at once (experiments/runs/integer_milp_bench.py measures both forms).

``relax=True`` drops integrality (the LP relaxation); for a ``continuous`` instance without tiers the model is
the LP of P1 whatever ``relax`` says.  B stands in its rows as the referee accepts it,
``tolerated(B, MODEL_SHARE)`` of models/evaluate.py, as CBA takes it; C as written, as CBA fills it
(docs/model.md (8.1)).

Scaled (what HiGHS solves, docs/model.md §8): the objective unit M is a power of two near the cost unit of
models/certify.py (about the optimal IO cost), b_j is measured in units of its rate r_j (the share read
remotely; its feeding row becomes b'_j + h ≥ 1), and the rows of C, B, the blocks and the tiers are divided by
their limit or their size.  The hit ratio rather than GB keeps the feeding rows' coefficients at r_j: HiGHS
drops matrix entries below 1e-9, and r_j / d_k is that small for a slow job on a large dataset (1e-6 GB/s on
1e5 GB), which made a feasible instance look infeasible.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from cbalab.models.certify import objective_unit
from cbalab.models.evaluate import MODEL_SHARE, RTOL, tolerated
from cbalab.models.instance import Instance
from cbalab.models.kernels import power_of_two
from cbalab.models.milp.statement import Rows, Statement, group, limit_row, no_rows, stack

_INF = math.inf


def block_tops(inst: Instance) -> np.ndarray:
    """⌈d_k/u⌉ with the referee's slack (models/evaluate.py), so that both agree when d_k/u is whole up to
    rounding (d = 7.3, u = 7.3/3 gives d/u = 3.0000000000000004)."""
    d, u = inst.dataset_size_gb, inst.block_size_gb
    return np.ceil(d / u - RTOL * np.maximum(1.0, d / u))


def cost_statement(inst: Instance, *, relax: bool = False, count_blocks: bool = True) -> Statement:
    """P1 of docs/model.md §4 for ``inst`` (fixed GPUs and rates), exact for its cache and bandwidth variants."""
    inst.require_fixed()
    K, J = inst.n_datasets, inst.n_jobs
    d, r = inst.dataset_size_gb.astype(float), inst.job_io_gbps.astype(float)
    s = Statement(
        "cbalab-P1", "min", power_of_two(objective_unit(inst, "cost")), inst.price_gpu * float(inst.job_gpus.sum())
    )
    blocks = inst.cache_granularity == "block"
    counted = count_blocks and not relax and blocks
    tiers = inst.bandwidth_step_gbps is not None
    whole = not relax and inst.cache_granularity == "dataset"
    hit = s.columns(
        "hit",
        "K",
        K,
        upper=1.0,
        cost=0.0 if blocks else inst.price_cache * d,
        integer=whole,
        doc="h_k, the share of dataset k served from the cache (§4)",
    )
    bw = s.columns(
        "bw",
        "J",
        J,
        cost=0.0 if tiers else inst.price_bandwidth,
        unit=np.where(r > 0, r, 1.0),
        doc="b_j, job j's remote bandwidth (GB/s)",
    )
    cache = (hit, d)
    if blocks:
        u = inst.block_size_gb
        n = s.columns(
            "blocks",
            "K",
            K,
            upper=block_tops(inst),
            cost=0.0 if counted else inst.price_cache * u,
            integer=not relax,
            doc="n_k, whole cache blocks paid for dataset k",
        )
        cache = (n, np.full(K, u))
        s.add(served_in_blocks(inst, hit, n))
    if tiers:
        step = float(inst.bandwidth_step_gbps)  # type: ignore[arg-type]
        top = (
            math.floor(tolerated(inst.bandwidth_gbps, MODEL_SHARE) / step)
            if math.isfinite(inst.bandwidth_gbps)
            else _INF
        )
        m = s.columns(
            "tiers",
            "one",
            1,
            upper=top,
            cost=inst.price_bandwidth * step,
            integer=not relax,
            doc="m, whole bandwidth tiers of β GB/s",
        )
        s.add(within_tiers(bw, m, step if relax else tier_cover(inst, step)))
    s.add(feed(inst, hit, bw))
    s.add(cache_capacity(inst, *cache))
    s.add(bandwidth_capacity(inst, bw))
    if counted:
        most = min(float(block_tops(inst).sum()), math.floor(inst.cache_gb / inst.block_size_gb * (1 + 1e-12)))
        total = s.columns(
            "total_blocks",
            "one",
            1,
            upper=most,
            cost=inst.price_cache * inst.block_size_gb,
            integer=True,
            doc="N = Σ_k n_k (Theorem I6)",
        )
        s.add(block_count(n, total))
    return s


def build_cost_model(
    inst: Instance, *, relax: bool = False, count_blocks: bool = True, scaled: bool = False
) -> pyo.ConcreteModel:
    """P1 as a Pyomo model, emitted from :func:`cost_statement` (``scaled``: the units HiGHS solves)."""
    return cost_statement(inst, relax=relax, count_blocks=count_blocks).pyomo(scaled=scaled)


@group
def served_in_blocks(inst: Instance, hit: np.ndarray, n: np.ndarray) -> Rows:
    """Blocks serve what they hold: d_k h_k ≤ u n_k (§4, cache granularity); scaled, divided by d_k."""
    K = hit.size
    k = np.arange(K)
    row, col, coef = stack((hit, inst.dataset_size_gb, k), (n, -inst.block_size_gb, k))
    div = np.where(inst.dataset_size_gb > 0, inst.dataset_size_gb, inst.block_size_gb)
    return Rows(row, col, coef, np.full(K, -_INF), np.zeros(K), div)


def tier_cover(inst: Instance, step: float) -> float:
    """The coefficient a of m in the integer model's tier row Σ_j b_j ≤ a·m: β, or Σ_j r_j when that is less.

    The two rows have the same whole solutions up to b, which costs nothing under tiers: m = 0 forces Σ b_j = 0
    in both, and for m ≥ 1 the least feeding b_j = r_j (1 − h_k(j)) ≤ r_j (Lemma I0 (a) of
    proofs/cba_integer_gap.md), which keeps every other row and the objective, has Σ_j b_j ≤ Σ_j r_j ≤ a·m ≤ β m.
    Written with β, a tier far above the whole demand leaves m's relaxed value Σ_j b_j / β inside HiGHS's
    integrality tolerance (1e-6): at β = 10⁷ Σ_j r_j HiGHS took m = 1e-7 as 0 tiers, and the answer, rounded,
    provisioned nothing.  With a = Σ_j r_j that value is the share of the demand read remotely.
    """
    total = float(inst.job_io_gbps.sum())
    return min(step, total) if total > 0 else step


@group
def within_tiers(bw: np.ndarray, m: np.ndarray, size: float) -> Rows:
    """Bandwidth in whole tiers: Σ_j b_j ≤ a·m (§4), a = β or, in the integer model, :func:`tier_cover`;
    scaled, divided by a."""
    return limit_row(np.r_[bw, m], np.r_[np.ones(bw.size), -size], 0.0, size)


@group
def feed(inst: Instance, hit: np.ndarray, bw: np.ndarray) -> Rows:
    """No stalls: b_j + r_j h_k(j) ≥ r_j, i.e. b_j ≥ r_j (1 − h_k(j)), for every job with r_j > 0 (§3-§4)."""
    r = inst.job_io_gbps.astype(float)
    fed = np.flatnonzero(r > 0)
    i = np.arange(fed.size)
    row, col, coef = stack((bw[fed], 1.0, i), (hit[inst.job_dataset[fed]], r[fed], i))
    return Rows(row, col, coef, r[fed], np.full(fed.size, _INF), r[fed])


@group
def cache_capacity(inst: Instance, cols: np.ndarray, size: np.ndarray) -> Rows:
    """Σ_k c_k ≤ C (§4); scaled, divided by C (by the largest dataset when C = 0)."""
    top = float(inst.dataset_size_gb.max()) if inst.n_datasets else 1.0
    return limit_row(cols, size, inst.cache_gb, inst.cache_gb, top)


@group
def bandwidth_capacity(inst: Instance, bw: np.ndarray) -> Rows:
    """Σ_j b_j ≤ tolerated(B) (§4, (8.1)); no row when B is unlimited or there is no job; scaled, divided by B."""
    if not (math.isfinite(inst.bandwidth_gbps) and bw.size):
        return no_rows()
    return limit_row(bw, 1.0, tolerated(inst.bandwidth_gbps, MODEL_SHARE), inst.bandwidth_gbps)


@group
def block_count(n: np.ndarray, total: np.ndarray) -> Rows:
    """N = Σ_k n_k, whole, 0 ≤ N ≤ ⌊C/u⌋ (proofs/cba_integer_gap.md, Theorem I6).

    N's upper bound repeats Σ_k c_k ≤ C, so that presolve keeps N as a column (with only bounds the row
    implies, HiGHS substitutes N away and loses the branching it offers).
    """
    row, col, coef = stack((total, 1.0, np.zeros(1)), (n, -1.0, np.zeros(n.size)))
    return Rows(row, col, coef, np.zeros(1), np.zeros(1))
