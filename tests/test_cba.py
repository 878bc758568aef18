"""Property tests of CBA (algorithms/cba.py) against two independent exact methods and the referee.

The exact references are P1's LP solved by HiGHS through Pyomo with gap 0 and
no time limit (models/solve.py) and, when B = ∞, the min-cost flow of
models/flow.py.  Every allocation is scored by the one referee
(models/evaluate.py), never by CBA's own numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import cost_instances, highs_representable, is_clearly_infeasible, min_remote_io

from cbalab.algorithms.cba import cba
from cbalab.models.certify import instance_tolerance
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.flow import cost_flow, flow_cache
from cbalab.models.instance import Instance, InstanceError, build
from cbalab.models.kernels import weak_dual
from cbalab.models.solve import cost_lp, cost_milp

#: Relative agreement required between CBA and an exact optimum (the brief's 1e-7).
REL = 1e-7


def io_cost(inst: Instance, alloc: Allocation) -> float:
    """The referee's IO cost (cache + bandwidth, $/h) of an allocation."""
    return evaluate(inst, alloc, "cost").cost_io


def cost_scale(inst: Instance) -> float:
    """The size of P1's cost terms, p_b Σ r_j + p_c min(C, Σ d_k): what a relative tolerance is relative to.

    The IO cost of every sensible allocation lies in [0, this]; comparing with
    the optimum alone would make a tiny optimum (a cache that saves almost all
    of a large bandwidth bill) demand absurd absolute precision.
    """
    total_size = float(inst.dataset_size_gb.sum())
    scale = inst.price_bandwidth * float(inst.job_io_gbps.sum()) + inst.price_cache * min(inst.cache_gb, total_size)
    return max(scale, 1e-300)


def assert_optimal_and_certified(inst: Instance, alloc: Allocation) -> None:
    """CBA's answer is feasible for the referee, claims ``optimal``, its bound is at most its cost and meets it within
    the certification tolerance (8.2): the bound is for C and B as the referee accepts them (docs/model.md (8.1)),
    which lie a relative 1e-9 above C and B as written."""
    ev = evaluate(inst, alloc, "cost")
    assert ev.feasible, ev.violations
    assert ev.violations == []
    assert alloc.status == "optimal"
    assert alloc.bound is not None
    assert alloc.bound <= ev.cost_total
    assert ev.cost_total - alloc.bound <= instance_tolerance(inst, "cost", ev.cost_total)


#: HiGHS's two answers on a P1 LP it cannot decide (models/solve.py, ``solve_arrays``): the exact method's ``error``.
UNDECIDED = ("HiGHS stopped: kUnknown", "HiGHS reported optimal without a feasible solution: nothing is proven")


@given(cost_instances())
def test_theorem1_cba_equals_lp_optimum_and_flow_optimum(inst: Instance) -> None:
    """Theorem 1 of proofs/cba_optimality.md, (i) and (ii), against HiGHS and the min-cost flow.

    (ii) When P1 is feasible, CBA's cost equals the exact LP optimum of P1
    (HiGHS via Pyomo, gap 0, no time limit) and, when B = ∞, the optimum of
    the independent min-cost flow of models/flow.py (within 1e-12).
    (i) CBA reports ``infeasible`` exactly when HiGHS proves the LP infeasible
    (checked where B is clearly below the least remote IO, and where it is not
    below it at all, including B exactly tight).

    HiGHS gets the instance as it is (models/solve.py scales it before HiGHS
    sees it, docs/model.md §8); CBA's cost is compared with HiGHS's to 1e-7 of
    the cost scale plus what HiGHS's own 1e-7 tolerances can be worth on the
    instance in units where the largest rate, dataset and price are of order 1
    (:func:`in_unit_scale`, :func:`highs_cost_tolerance`), mapped back to the
    original units.  (Solving that unit-scale instance instead is another
    problem where B is below 1 in either units: the referee's slack on B has
    an absolute part, docs/model.md (8.1).)
    Instances that keep a feeding coefficient
    r_j / d_k below 1e-8 even then are not given to HiGHS (it drops entries
    below 1e-9).  HiGHS's cost is compared only when its allocation passes the
    referee in the original units: with rates seven decades apart it may leave
    a small job short of feeding by less than its tolerance, answering a
    slightly easier problem; its bound must still be below CBA's cost.  Where HiGHS cannot decide the LP (sizes
    and rates eight decades apart: kUnknown, or "optimal" with no feasible point), the exact method must say
    ``error``, never a status it has not proven, and only CBA's own checks remain.
    """
    tight = min_remote_io(inst)
    ours = cba(inst)
    if math.isinf(inst.bandwidth_gbps):
        assert_optimal_and_certified(inst, ours)
        flow = cost_flow(inst)
        assert flow.status == "optimal"
        assert evaluate(inst, flow, "cost").feasible
        assert abs(io_cost(inst, ours) - io_cost(inst, flow)) <= 1e-12 * cost_scale(inst)
    unit, price_exp = in_unit_scale(inst)
    if not highs_representable(unit):
        return  # HiGHS would drop a feeding coefficient below 1e-9: its LP is another instance
    exact = cost_milp(inst)
    # HiGHS may fail to decide a badly scaled LP (kUnknown, or "optimal" without a feasible point): it then says
    # error and claims nothing, and CBA is checked against the flow (above) and its own certificate only.
    undecided = exact.status == "error" and exact.reason in UNDECIDED
    if is_clearly_infeasible(inst):
        assert ours.status == "infeasible", ours
        assert exact.status == "infeasible" or undecided, exact
        assert ours.reason and "infeasible" in ours.reason
        return
    if tight > inst.bandwidth_gbps:
        return  # within rounding of the tight cap: feasibility is a matter of tolerance, checked elsewhere
    assert_optimal_and_certified(inst, ours)
    if undecided:
        return
    assert exact.status == "optimal", exact
    total = evaluate(inst, ours, "cost").cost_total
    # HiGHS's objective (its bound for an LP) is a lower bound to its tolerance, with its own b_j up to B.
    slack = REL * cost_scale(unit) + highs_cost_tolerance(unit, own_b=True)
    assert total >= exact.bound - math.ldexp(slack, price_exp) - 1e-15 * total
    # HiGHS's cache, fed with the least b_j (as models/solve.py does).
    cache = exact.cache_gb
    hit = np.minimum(cache, inst.dataset_size_gb) / inst.dataset_size_gb
    theirs = Allocation(inst.job_gpus.copy(), cache, inst.job_io_gbps * (1.0 - hit[inst.job_dataset]))
    if evaluate(inst, theirs, "cost").feasible:
        # HiGHS's answer passes the referee: it is an allocation, so CBA can be no costlier, and both meet.
        tol = math.ldexp(REL * cost_scale(unit) + highs_cost_tolerance(unit), price_exp)
        assert abs(io_cost(inst, ours) - io_cost(inst, theirs)) <= tol


def in_unit_scale(inst: Instance) -> tuple[Instance, int]:
    """The same P1 in other units, where the largest rate, dataset and price are in [0.5, 1).

    Rates and B are multiplied by 2^-a, sizes and C by 2^-e, and all prices by
    2^-q (then p_b by 2^a and p_c by 2^e, so that with c' = 2^-e c and
    b' = 2^-a b every cost is 2^-q times the original): the feeding rows and
    both capacities are unchanged, and powers of two make every product exact
    (a tight B stays exactly tight).  Returns the instance and q.
    """
    rate_exp = math.frexp(float(inst.job_io_gbps.max()))[1]  # 0 when every rate is 0
    size_exp = math.frexp(float(inst.dataset_size_gb.max()))[1]
    p_b = math.ldexp(inst.price_bandwidth, rate_exp)
    p_c = math.ldexp(inst.price_cache, size_exp)
    price_exp = math.frexp(max(p_b, p_c))[1]
    unit = inst.replace(
        job_io_gbps=np.ldexp(inst.job_io_gbps, -rate_exp),
        bandwidth_gbps=math.ldexp(inst.bandwidth_gbps, -rate_exp),
        dataset_size_gb=np.ldexp(inst.dataset_size_gb, -size_exp),
        cache_gb=math.ldexp(inst.cache_gb, -size_exp),
        price_bandwidth=math.ldexp(p_b, -price_exp),
        price_cache=math.ldexp(p_c, -price_exp),
        price_gpu=math.ldexp(inst.price_gpu, -price_exp),
    )
    return unit, price_exp


def highs_cost_tolerance(unit: Instance, *, own_b: bool = False) -> float:
    """What HiGHS's tolerances (1e-7 primal and dual) can be worth in cost on a unit-scale instance.

    Primal: each of the J feeding rows may be short by 1e-7 (p_b each) and each
    of the K cache bounds off by 1e-7 (p_c each).  Dual: a reduced cost within
    1e-7 of 0 counts as optimal, which may cost 1e-7 per unit of every variable:
    Σ c_k ≤ Σ d_k, and Σ b_j ≤ Σ r_j for the least feeding (models/solve.py
    re-derives b_j so) but up to B for HiGHS's own b_j (``own_b``), behind its
    reported objective: with p_b below 1e-7, HiGHS may buy all of B.
    """
    primal = unit.price_bandwidth * unit.n_jobs + unit.price_cache * unit.n_datasets
    bandwidth = float(unit.job_io_gbps.sum())
    if own_b and math.isfinite(unit.bandwidth_gbps):
        bandwidth = max(bandwidth, unit.bandwidth_gbps)
    return 1e-7 * (primal + bandwidth + float(unit.dataset_size_gb.sum()))


@given(cost_instances())
def test_theorem1_cba_feasible_exactly_when_rho_fill_fits_and_passes_referee(inst: Instance) -> None:
    """Theorem 1 (i) of proofs/cba_optimality.md: infeasible exactly when the ρ-ordered fill of C leaves > B.

    The least remote IO is computed by an independent loop (tests/strategies.py).
    CBA answers exactly when that fill fits B (within the referee's slack on B);
    then the referee finds its allocation feasible with no violations, the
    status is ``optimal`` and the weak-dual bound (Lemma 2) equals the cost:
    the certificate of Theorem 1 (i) on this instance.
    """
    ours = cba(inst)
    tight = min_remote_io(inst)
    slack = 1e-9 * max(1.0, inst.bandwidth_gbps)  # the referee's slack on B
    if ours.has_allocation:
        assert tight <= inst.bandwidth_gbps + slack + 1e-12 * float(inst.job_io_gbps.sum())
        assert_optimal_and_certified(inst, ours)
    else:
        assert ours.status == "infeasible"
        assert tight > inst.bandwidth_gbps
        assert "infeasible" in (ours.reason or "")
    if is_clearly_infeasible(inst):
        assert ours.status == "infeasible"
    if tight <= inst.bandwidth_gbps:
        assert ours.status == "optimal"


@given(cost_instances(), st.randoms(use_true_random=False))
def test_theorem1_cba_cost_invariant_under_permuting_jobs_and_datasets(inst: Instance, rnd) -> None:
    """Theorem 1 of proofs/cba_optimality.md: the optimum does not depend on the order of jobs or datasets.

    Relabelling jobs and datasets gives the same P1, so CBA (whose ties are
    broken by position) must return the same cost and stay feasible.
    """
    jobs = list(range(inst.n_jobs))
    datasets = list(range(inst.n_datasets))
    rnd.shuffle(jobs)
    rnd.shuffle(datasets)
    jp, dp = np.array(jobs), np.array(datasets)
    new_pos = np.empty_like(dp)
    new_pos[dp] = np.arange(dp.size)
    perm = inst.replace(
        dataset_size_gb=inst.dataset_size_gb[dp],
        dataset_ids=tuple(inst.dataset_ids[k] for k in dp),
        job_dataset=new_pos[inst.job_dataset[jp]],
        job_gpus=inst.job_gpus[jp],
        job_io_gbps=inst.job_io_gbps[jp],
        job_ids=tuple(inst.job_ids[j] for j in jp),
        option_ptr=np.zeros(inst.n_jobs + 1, np.int64),
    )
    a, b = cba(inst), cba(perm)
    assert a.status == b.status or is_borderline(inst)
    if a.has_allocation and b.has_allocation:
        assert evaluate(perm, b, "cost").feasible
        scale = cost_scale(inst)
        assert abs(io_cost(inst, a) - io_cost(perm, b)) <= 1e-9 * scale


def is_borderline(inst: Instance) -> bool:
    """B within rounding of the least remote IO, where summation order may decide feasibility."""
    tight = min_remote_io(inst)
    return math.isfinite(inst.bandwidth_gbps) and abs(tight - inst.bandwidth_gbps) <= 1e-9 * max(
        1.0, float(inst.job_io_gbps.sum())
    )


@given(cost_instances(), st.floats(-6.0, 6.0))
def test_theorem1_cba_scales_with_prices(inst: Instance, exponent: float) -> None:
    """Theorem 1 of proofs/cba_optimality.md: P1's optimum is linear in the prices (p_g, p_c, p_b) → α·(…).

    Multiplying every price by α > 0 multiplies every allocation's cost by α
    and keeps the optimal set, so CBA's cost scales by α exactly (to rounding)
    and its feasibility verdict does not change.
    """
    alpha = 10.0**exponent
    scaled = inst.replace(
        price_gpu=alpha * inst.price_gpu,
        price_cache=alpha * inst.price_cache,
        price_bandwidth=alpha * inst.price_bandwidth,
    )
    a, b = cba(inst), cba(scaled)
    assert a.status == b.status
    if a.has_allocation:
        assert evaluate(scaled, b, "cost").feasible
        ca, cb = evaluate(inst, a, "cost").cost_total, evaluate(scaled, b, "cost").cost_total
        assert abs(cb - alpha * ca) <= 1e-9 * alpha * (cost_scale(inst) + inst.price_gpu * inst.job_gpus.sum())


def _inst(sizes: list[float], job_dataset: list[int], rates: list[float], **kw: object) -> Instance:
    n = len(rates)
    return build(
        dataset_size_gb=np.array(sizes),
        job_dataset=np.array(job_dataset),
        job_gpus=np.ones(n, np.int64),
        job_io_gbps=np.array(rates),
        **kw,
    )


def test_theorem1_hand_example_threshold_rule() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md (Case A) on a hand-solved instance.

    Datasets a (10 GB, ρ = 2/10 = 0.2), b (10 GB, ρ = 0.5/10 = 0.05), c (5 GB, unread).
    p_c = 0.1, p_b = 1: caching pays when p_b ρ > p_c, i.e. ρ > 0.1: only a.
    C = 15, B = ∞: cache a whole (10 GB), b nothing.  Cost = p_c·10 + p_b·0.5 = 1.5
    (+ p_g·2 GPUs·1.0 = 2.0) = 3.5.
    """
    inst = _inst([10.0, 10.0, 5.0], [0, 1], [2.0, 0.5], cache_gb=15.0, prices=(1.0, 0.1, 1.0))
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    np.testing.assert_allclose(a.cache_gb, [10.0, 0.0, 0.0])
    np.testing.assert_allclose(a.bandwidth_gbps, [0.0, 0.5])
    assert evaluate(inst, a, "cost").cost_total == pytest.approx(3.5, rel=1e-12)


def test_theorem1_hand_example_case_b() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md, Case B worked by hand (C binds in the profit phase).

    d = (10, 10) GB, r = (2, 1) GB/s, p_c = 0.01, p_b = 1, C = 15, B = ∞: cache (10, 5), remote 0.5 GB/s,
    IO cost 0.5 + 0.15 = 0.65; the dual λ = p_b ρ_2 − p_c = 0.09, ν = (0.1, 0) gives 3 − 1.35 − 1 = 0.65.
    """
    inst = _inst([10.0, 10.0], [0, 1], [2.0, 1.0], cache_gb=15.0, prices=(0.0, 0.01, 1.0))
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    np.testing.assert_allclose(a.cache_gb, [10.0, 5.0])
    assert evaluate(inst, a, "cost").cost_io == pytest.approx(0.65, rel=1e-12)
    assert weak_dual(inst, np.array([2.0, 1.0]), 0.09, 0.0) == pytest.approx(0.65, rel=1e-12)


def test_theorem1_hand_example_bandwidth_forces_unprofitable_cache() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md (Case C): B forces caching past the price threshold.

    Same datasets as above, B = 0.25.  After caching a, 0.5 GB/s remain > B, so
    b (ρ = 0.05) must cache 0.25 / 0.05 = 5 GB (total 15 = C).  Cost = 0.1·15 +
    1·0.25 = 1.75 (+ 2.0 for GPUs) = 3.75.  With B = 0.2 the fill of C leaves
    0.25 > 0.2: infeasible (Theorem 1 (i)).  CBA takes B as the referee accepts it,
    B' = 0.25 + 0.999e-9 (docs/model.md (8.1)): b caches 2e-8 GB less, and the cost is 3.75 − 0.999e-9.
    """
    inst = _inst([10.0, 10.0, 5.0], [0, 1], [2.0, 0.5], cache_gb=15.0, prices=(1.0, 0.1, 1.0), bandwidth_gbps=0.25)
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    np.testing.assert_allclose(a.cache_gb, [10.0, 5.0 - 1.998e-8, 0.0], rtol=1e-12)
    assert evaluate(inst, a, "cost").cost_total == pytest.approx(3.75 - 0.999e-9, rel=1e-12)
    tighter = inst.replace(bandwidth_gbps=0.2)
    b = cba(tighter)
    assert b.status == "infeasible"
    assert "0.25" in (b.reason or "")
    assert cost_milp(tighter).status == "infeasible"


def test_regression_forced_fill_skips_unread_datasets() -> None:
    """Theorem 1 (i) of proofs/cba_optimality.md; regression: B forced CBA to cache a dataset no job reads.

    Datasets of 1 MB each; d0 is read at 0.1 GB/s (ρ = 100), d1 at 1000 GB/s (ρ = 1e6),
    d2, d3 by nobody.  p_c = 0.9, p_b = 1e-4: only d1 pays (p_b ρ = 100 > 0.9).
    B = 0 forces d0 whole too: cost 0.9 · 0.002 = 0.0018.  Rounding in Σ R once made
    the fill run past d0 onto the unread d2 (cost 0.0027, status ``feasible``).  (B is taken as the
    referee accepts it, 0.999e-9 GB/s, docs/model.md (8.1): d0 caches 1e-11 GB less than whole.)
    """
    inst = _inst(
        [0.001] * 4,
        [0] * 12 + [1],
        [0.0] * 11 + [0.1, 1000.0],
        cache_gb=0.004,
        prices=(0.0, 0.9, 1e-4),
        bandwidth_gbps=0.0,
    )
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    np.testing.assert_allclose(a.cache_gb, [0.001 - 0.999e-9 / 0.1 * 0.001, 0.001, 0.0, 0.0], rtol=1e-12, atol=0)
    assert evaluate(inst, a, "cost").cost_total == pytest.approx(0.0018, rel=1e-8)


def test_regression_fill_never_exceeds_cache_capacity() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md; regression: CBA returned cache above C = 0.

    One job of 1e-6 GB/s, C = 0, B = 0.999e-6.  The least remote IO 1e-6 exceeds B by 1e-9,
    inside the referee's absolute slack, so the answer is feasible with no cache at all; CBA
    used to cache 1e-6 GB of a zero-capacity cache (and call it optimal).
    """
    inst = _inst([0.001], [0], [1e-6], cache_gb=0.0, prices=(0.0, 0.0, 0.0), bandwidth_gbps=0.999e-6)
    a = cba(inst)
    assert a.has_allocation
    assert_optimal_and_certified(inst, a)
    np.testing.assert_array_equal(a.cache_gb, [0.0])


def test_regression_certificate_without_cancellation() -> None:
    """Theorem 1 (i) of proofs/cba_optimality.md, Lemma 2; regression: the dual lost its digits to cancellation.

    d = 1 MB read at 1000 GB/s (ρ = 1e6), C = 1 MB, B = ∞, p_c = 1e-4·α, p_b = 0.9·α with α = 10^4.5.
    Optimum: cache it all, cost p_c · 0.001.  D(0, 0) was computed as p_b ΣR − d (p_b ρ − p_c),
    two numbers near 2.8e4 whose difference is 3e-3, and missed the cost by more than 1e-9.
    """
    alpha = 10.0**4.5
    inst = _inst([0.001], [0], [1000.0], cache_gb=0.001, prices=(0.0, 1e-4 * alpha, 0.9 * alpha))
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    assert a.bound == pytest.approx(1e-7 * alpha, rel=1e-12)


def test_regression_referee_slack_decides_infeasibility() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md; regression: CBA's tolerance on B was relative to Σ r_j.

    Σ r = 1e6 GB/s, no cache, B = Σ r − 1e-4.  The referee's slack on B is 1e-9 · B ≈ 1e-3 > 1e-4,
    so the all-remote allocation passes; with B = Σ r − 1 it does not, and CBA must say infeasible
    (its old slack 1e-9 · Σ r = 1e-3 agreed here, but for Σ r ≫ B it accepted what the referee rejects).
    """
    near = _inst([1.0], [0], [1e6], cache_gb=0.0, prices=(0.0, 0.0, 1.0), bandwidth_gbps=1e6 - 1e-4)
    assert_optimal_and_certified(near, cba(near))
    far = near.replace(bandwidth_gbps=1e6 - 1.0)
    assert cba(far).status == "infeasible"
    big = _inst([1.0, 1.0], [0, 1], [1e6, 1.0], cache_gb=1.0, prices=(0.0, 0.0, 1.0), bandwidth_gbps=1.0 - 1e-6)
    # caching d0 leaves 1 GB/s > B by 1e-6 > the referee's 1e-9: infeasible (the old slack 1e-9·Σr = 1e-3 said fine)
    assert cba(big).status == "infeasible"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"bandwidth_gbps": 2.0}, "cluster.bandwidth_gbps"),
        ({"cache_granularity": "dataset"}, "cluster.cache_granularity"),
        ({"cache_granularity": "block", "block_gb": 4.0}, "cluster.cache_granularity"),
        ({"bandwidth_step_gbps": 0.5}, "cluster.bandwidth_step_gbps"),
    ],
)
def test_flow_refuses_what_a_flow_cannot_state(changes: dict, field: str) -> None:
    """models/flow.py states only uncapped continuous P1: anything else is refused, naming the field and value."""
    inst = _inst([10.0, 10.0], [0, 1], [2.0, 0.5], cache_gb=15.0, prices=(1.0, 0.1, 1.0)).replace(**changes)
    answer = cost_flow(inst)
    assert answer.status == "error"
    assert not answer.has_allocation
    assert field in (answer.reason or "")
    with pytest.raises(InstanceError) as info:
        flow_cache(inst)
    assert info.value.path == field


def test_theorem1_flow_exact_on_dyadic_scaling_of_extreme_data() -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md: flow and CBA agree on data spanning 1e-3..1e5 GB.

    Capacities 0.1 + 0.2 (not a short binary fraction), 1e5 and 1e-3 GB become exact integers
    under one power of two (models/flow.py), so the network simplex sees the float data itself.
    Densities ρ = 0.1/0.3 = 0.333, 1e3/1e5 = 0.01, 1/1e-3 = 1000; p_c = 0.005, p_b = 1: all three
    pay (ρ > 0.005).  C = 1e5 + 0.1 + 1e-3: d2 (1e-3) and d0 (0.3) whole, d1 the rest, 1e5 − 0.2.
    """
    inst = _inst(
        [0.1 + 0.2, 1e5, 1e-3], [0, 1, 2], [0.1, 1e3, 1.0], cache_gb=1e5 + 0.1 + 1e-3, prices=(0.0, 0.005, 1.0)
    )
    ours, flow = cba(inst), cost_flow(inst)
    assert flow.status == "optimal"
    assert_optimal_and_certified(inst, ours)
    np.testing.assert_allclose(flow.cache_gb, [0.1 + 0.2, 1e5 - 0.2, 1e-3], rtol=1e-12)
    np.testing.assert_allclose(flow.cache_gb, ours.cache_gb, rtol=1e-12)
    assert io_cost(inst, flow) == pytest.approx(io_cost(inst, ours), rel=1e-14)


def test_regression_bound_within_the_slack_on_b() -> None:
    """Theorem 1 of proofs/cba_optimality.md, Lemma 2; regression: a bound above the cost inside the B slack.

    One job of 1e-6 GB/s on a 0.5 GB dataset, C = 0, B = 0.999e-6: the all-remote answer is 1e-9
    over B, inside the referee's slack, and costs 0 (p_b = 0).  The dual was evaluated for the
    strict cap, μ = p_c/ρ = 50: D = 5e-5 − 50 · 0.999e-6 = 5e-8 > 0, a "lower bound" above the
    cost of an accepted allocation.  CBA now states the bound for B' = 1e-6, where it is 0.
    """
    inst = _inst([0.5], [0], [1e-6], cache_gb=0.0, prices=(0.0, 1e-4, 0.0), bandwidth_gbps=0.999e-6)
    a = cba(inst)
    assert_optimal_and_certified(inst, a)
    assert a.bound == 0.0


def test_regression_lp_keeps_tiny_feeding_coefficients() -> None:
    """Theorem 1 of proofs/cba_optimality.md on a slow job over a huge dataset: LP, MILP and CBA all feasible.

    r_j / d_k = 1e-11 is below HiGHS's small-matrix-value (1e-9); with the cache in GB the LP dropped that
    coefficient and called this instance infeasible. The builder now uses hit ratios (coefficient r_j).
    B = 0 is taken as the referee accepts it, up to 1e-9 GB/s (docs/model.md (8.1)), by all three: that is
    a thousandth of this job's 1e-6 GB/s, so each caches 99.9 % of the dataset.  The bound is for the limits the
    referee accepts, so the answer for B = 0.999e-9 GB/s (the model's row) is beaten by 1e-4 $/h, more than the
    tolerance: each answers the second try, B within a millionth of the slack (``widened_limits``).
    """
    inst = build(
        dataset_size_gb=[1e5],
        job_dataset=[0],
        job_gpus=[1],
        job_io_gbps=[1e-6],
        cache_gb=1e5,
        bandwidth_gbps=0.0,
        prices=(1.0, 1e-3, 1.0),
    )
    for method in (cost_lp, cost_milp, cba):
        alloc = method(inst)
        assert alloc.status == "optimal", (method.__name__, alloc.reason)
        ev = evaluate(inst, alloc, "cost")
        assert ev.feasible, ev.violations
        assert ev.cost_cache == pytest.approx(1e-3 * 1e5 * (1 - 1e-9 / 1e-6), rel=1e-8)


def test_regression_theorem1_cba_certified_at_a_cost_of_seven_nanodollars() -> None:
    """Theorem 1 (i) of proofs/cba_optimality.md, on the instance hypothesis found for
    test_theorem1_cba_feasible_exactly_when_rho_fill_fits_and_passes_referee (dev profile, 4 December 2026):
    seven 1 MB datasets, one job each, no remote bandwidth, a cache that holds exactly all of them.

    The IO cost 7e-9 $/h and CBA's weak-dual bound agree to 4e-26 in exact arithmetic (the
    bound is 3.6e-26 above the cost, the worth of the referee's slack on B, proofs/cba_optimality.md,
    "Floating point and the slack in H2"), but each is added to the 32 $/h GPU bill and rounded: 32.000000007000004
    against 32.000000007, one ulp of 32 (7.1e-15), more than the (8.2) tolerance of 7e-15 before it counted the
    resolution of the score (FLOAT_ULPS units in the last place)."""
    inst = build(
        dataset_size_gb=np.full(7, 0.001),
        job_dataset=np.arange(7),
        cache_gb=0.007,
        prices=(1.0, 1e-06, 0.001),
        job_gpus=np.array([0, 0, 0, 0, 0, 16, 16]),
        job_io_gbps=np.full(7, 1e-06),
        bandwidth_gbps=0.0,
        gpus=32,
    )
    assert_optimal_and_certified(inst, cba(inst))
