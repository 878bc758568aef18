"""P1 with no bandwidth cap as a min-cost flow: a second exact method, independent of CBA's sort.

The problem (docs/model.md §4) with B = ∞ and continuous cache and bandwidth:

    minimise  p_c Σ_k c_k + p_b Σ_j b_j
    s.t.      b_j ≥ r_j (1 − c_k(j)/d_k(j)),  Σ_k c_k ≤ C,  0 ≤ c_k ≤ d_k,  b_j ≥ 0.

Since p_b ≥ 0, for any cache c the least bandwidth b_j = r_j (1 − c_k(j)/d_k(j))
is optimal, so P1 equals  p_b Σ_k R_k + min Σ_k a_k c_k  over Σ c ≤ C, 0 ≤ c ≤ d,
with a_k = p_c − p_b R_k/d_k (R_k = Σ_{j reads k} r_j).  That is a flow of C GB
of cache through the network

    source ──(cap d_k, cost a_k)──> dataset k ──(cap ∞, cost 0)──> sink
    source ──(cap C,  cost 0)───────────────────────────────> sink   (cache left unused)

with supply C at the source and demand C at the sink; the flow on the arc into
dataset k is c_k.  networkx.network_simplex solves it.

Why B < ∞ is refused: the cap adds Σ_k ρ_k c_k ≥ Σ_k R_k − B, a second side
constraint whose coefficients ρ_k differ per arc (GB of cache against GB/s of
IO).  No choice of units makes both it and Σ c_k ≤ C plain arc capacities, so
the capped problem is a flow with gains, not a min-cost flow.  Integer cache
granularities and bandwidth tiers are likewise outside a flow's continuous
arcs.  For such instances :func:`flow_cache` raises InstanceError and the
registered :func:`cost_flow` answers status ``error``, both naming the field
and its value.

Exact integer data.  networkx's network simplex is unreliable with float data
(its own documentation says so: round-off in the pivots), but it is exact on
Python integers, which are unbounded.  Every float64 is a dyadic rational
m·2^e, so multiplying all capacities (d_k, C) by one power of two 2^s, with s
the largest number of binary fraction digits among them, turns them into
integers *exactly*; the same is done, with its own power of two, for the
costs a_k as computed in float64.  The flow problem networkx solves is thus
the float64 problem itself, with no rounding, and its integer optimum divided
by 2^s is an exact optimum of the float64 data.

Tolerance argument.  The only inexactness left is that the float64 costs
ã_k differ from the true a_k = p_c − p_b R_k/d_k by the round-off of computing
them, ``|ã_k − a_k| ≤ ε_k`` with ε_k ≤ 4u (p_c + p_b ρ_k), u = 2^-53.  For the
flow's cache c and the true optimum c*:
Σ a c − Σ a c* ≤ Σ ã c − Σ ã c* + Σ ε_k (c_k + c*_k) ≤ 8u (p_c C + p_b Σ_k R_k),
a relative error of order 1e-15 of the largest cost term.  The returned cache
is the exact rational flow rounded once to float64 (relative 2^-53 per entry,
so Σ c_k exceeds C by at most a few ulps, far inside the referee's 1e-9).

Status: ``optimal`` is claimed only when a certificate proves it: the Lagrangian
lower bound D(λ) = p_b Σ R_k − λ C − Σ_k d_k max(0, −a_k − λ) (valid for every
λ ≥ 0 by weak duality, Lemma 2 of proofs/cba_optimality.md with μ = 0; summed
as Σ_k min(p_b R_k, (p_c + λ) d_k) − λ C, the same number without cancellation) is
evaluated at λ = the marginal value of cache read off the flow, with C as the
referee accepts it (docs/model.md (8.1)), and must meet the flow's cost within the
referee's relative tolerance; the GPU bill is added exactly and the sum rounded down,
and the claim then passes the certification every ``optimal`` passes
(models/certify.py).  Otherwise the answer is ``feasible`` with that bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np

from cbalab.models.certify import accepted_limits, certify, widened_limits
from cbalab.models.evaluate import RTOL, Allocation, least_feeding
from cbalab.models.exact_bounds import cost_lower_bound, demand_below
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.kernels import weak_dual
from cbalab.models.types import SolveOptions, Status


def _scale(values: list[float]) -> tuple[list[int], int]:
    """Exact integers n_i and one power of two 2^s with values[i] = n_i / 2^s (every float64 is dyadic)."""
    ratios = [Fraction(v) for v in values]
    shift = max((r.denominator.bit_length() - 1 for r in ratios), default=0)
    return [int(r * (1 << shift)) for r in ratios], 1 << shift


def scope_error(inst: Instance) -> InstanceError | None:
    """Why a min-cost flow cannot state ``inst`` (see the module docstring), naming the field; None if it can."""
    if math.isfinite(inst.bandwidth_gbps):
        return InstanceError(
            "cluster.bandwidth_gbps",
            inst.bandwidth_gbps,
            "method flow solves P1 only without a bandwidth cap (null): a finite cap is a side constraint, not an arc",
        )
    if inst.cache_granularity != "continuous":
        gran = {"block_gb": inst.block_gb} if inst.cache_granularity == "block" else inst.cache_granularity
        return InstanceError(
            "cluster.cache_granularity", gran, 'method flow solves P1 only with "continuous" cache granularity'
        )
    if inst.bandwidth_step_gbps is not None:
        return InstanceError(
            "cluster.bandwidth_step_gbps",
            inst.bandwidth_step_gbps,
            "method flow solves P1 only with continuous bandwidth (null)",
        )
    return None


def flow_cache(inst: Instance) -> np.ndarray:
    """The optimal cache c_k (GB per dataset) of uncapped continuous P1, by networkx's network simplex.

    Raises InstanceError (naming the field) for an instance outside that scope.
    """
    inst.require_fixed()
    err = scope_error(inst)
    if err is not None:
        raise err
    d = inst.dataset_size_gb
    R = inst.dataset_demand(inst.job_io_gbps)
    costs = inst.price_cache - inst.price_bandwidth * (R / d)
    caps, cap_den = _scale([float(inst.cache_gb), *map(float, d)])
    weights, _ = _scale([float(a) for a in costs])
    supply = caps[0]
    g = nx.DiGraph()
    g.add_node("source", demand=-supply)
    g.add_node("sink", demand=supply)
    g.add_edge("source", "sink", capacity=supply, weight=0)
    for k in range(inst.n_datasets):
        g.add_edge("source", ("dataset", k), capacity=caps[1 + k], weight=weights[k])
        g.add_edge(("dataset", k), "sink", weight=0)
    _, flow = nx.network_simplex(g)
    out = flow["source"]
    return np.array([float(Fraction(out[("dataset", k)], cap_den)) for k in range(inst.n_datasets)])


def _lower_bound(inst: Instance, cache: np.ndarray, R: np.ndarray) -> float:
    """Weak-dual lower bound D(λ) on the least IO cost, at λ = the marginal value of cache in ``cache``.

    λ is the largest saving −a_k of a dataset left partly cached or uncached
    when the cache is full, else 0: the price a shadow unit of C would fetch.
    """
    d = inst.dataset_size_gb
    gain = inst.price_bandwidth * (R / d) - inst.price_cache
    full = cache.sum() >= inst.cache_gb - RTOL * max(1.0, inst.cache_gb)
    unsaturated = cache < d * (1.0 - RTOL)
    lam = max(0.0, float(gain[unsaturated].max())) if full and unsaturated.any() else 0.0
    return weak_dual(accepted_limits(inst), demand_below(inst, inst.job_io_gbps), lam, 0.0)


def cost_flow(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``flow`` for the cost problem: uncapped continuous P1 as a min-cost flow.

    A finite bandwidth cap, integer cache granularity or bandwidth tiers are
    outside what a flow states (module docstring): the answer is then status
    ``error`` with the reason naming the field and its value, so that
    ``cbalab compare`` still lists every other method.  The status is
    ``optimal`` only when the weak-dual bound meets the cost.
    """
    inst.require_fixed()
    err = scope_error(inst)
    if err is not None:
        return Allocation.none(Status.ERROR, str(err))
    first = _flow_answer(inst, inst)
    if first.status == Status.OPTIMAL:
        return first
    # The bound is for C as the referee accepts it: below 1 GB the flow for C as written can be beaten by more
    # than the tolerance, and the flow for C as a model may aim at it (widened_limits) is the second try.
    second = _flow_answer(inst, widened_limits(inst))
    return second if second.status == Status.OPTIMAL else first


def _flow_answer(inst: Instance, limits: Instance) -> Allocation:
    """The flow's optimum for the C of ``limits``, scored and certified on ``inst``."""
    cache = flow_cache(limits)
    R = inst.dataset_demand(inst.job_io_gbps)
    bw = least_feeding(inst, inst.job_io_gbps, cache)
    alloc = Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=cache,
        bandwidth_gbps=bw,
        status=Status.OPTIMAL,
        bound=cost_lower_bound(inst, _lower_bound(inst, cache, R)),
    )
    return certify(inst, "cost", alloc, source="the flow's weak-dual bound")
