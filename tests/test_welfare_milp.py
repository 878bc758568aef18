"""The exact welfare MILP (models/milp/welfare.py, models/solve.py): Theorem (a) of proofs/mccormick_exact.md,
and the forms of proofs/welfare_milp_forms.md (Theorem F1 and Lemma F2, the array-built P2; Theorem F3, the
stall relaxation; Theorem F4, the GPU-count slices), each named in its test's docstring.

The MILP optimum is checked against an independent brute force: every option
choice of every job is enumerated, each is fed at least cost by the P1 closed
form (algorithms.cba.feed, Theorem 1 of proofs/cba_optimality.md) and kept if
it fits G, C, B and the budget.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbalab.algorithms import registry
from cbalab.algorithms.autocba import autocba
from cbalab.algorithms.cba import feed
from cbalab.api import generate
from cbalab.api import solve as api_solve
from cbalab.experiments.workload import generate_welfare
from cbalab.models import solve as solve_module
from cbalab.models.alone import runs_alone
from cbalab.models.evaluate import RTOL, Allocation, evaluate
from cbalab.models.exact_bounds import DualValue
from cbalab.models.instance import Instance, InstanceError, build
from cbalab.models.milp.statement import Arrays
from cbalab.models.milp.welfare import (
    build_welfare_arrays,
    build_welfare_model,
    standalone_fits,
    start_point,
    with_slice,
)
from cbalab.models.options import SHAPES
from cbalab.models.solve import (
    Outcome,
    neighbourhood,
    solve_arrays,
    solve_model,
    solve_sliced,
    solve_welfare,
    welfare_lp,
    welfare_milp,
    welfare_milp_stall,
)

#: HiGHS's default primal and dual feasibility tolerance: two simplex runs of one LP (from scratch and from
#: another basis) may stop at different vertices that each meet the rows only to it, so their objectives agree
#: to it and no closer (a 1-job LP from a warm basis ended at 0.25 + 2e-9 where the cold run ended at 0.25).
HIGHS_FEASIBILITY = 1e-7


def brute_force(inst: Instance) -> float:
    """Best welfare over every unstalled allocation: all option choices, each fed by P1 (Theorem 1)."""
    return max(brute_force_by_gpus(inst).values())


def brute_force_by_gpus(inst: Instance) -> dict[int, float]:
    """Best welfare of the unstalled allocations by their GPU count (the slices of Theorem F4); 0 GPUs always fits."""
    ptr = inst.option_ptr
    choices = [[None, *range(int(ptr[j]), int(ptr[j + 1]))] for j in range(inst.n_jobs)]
    best: dict[int, float] = {0: 0.0}
    for combo in itertools.product(*choices):
        rows = [o for o in combo if o is not None]
        gpus = sum(int(inst.option_gpus[o]) for o in rows)
        if inst.gpus is not None and gpus > inst.gpus:
            continue
        rates = np.array([0.0 if o is None else float(inst.option_io_gbps[o]) for o in combo])
        f = feed(inst, rates)
        if f.cache_gb is None:
            continue
        cost = inst.price_gpu * gpus + f.io_cost
        if cost > inst.budget_per_hour + RTOL * max(1.0, inst.budget_per_hour):
            continue
        best[gpus] = max(best.get(gpus, 0.0), sum(float(inst.option_utility[o]) for o in rows))
    return best


@st.composite
def tiny_welfare(draw: st.DrawFn) -> Instance:
    """1-4 jobs with 1-3 options of any (also non-concave, non-monotone) utility, 1-2 datasets, mixed caps."""
    n_jobs = draw(st.integers(1, 4))
    n_data = draw(st.integers(1, 2))
    small = st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 7.5])
    counts, gpus, io, util = [], [], [], []
    for _ in range(n_jobs):
        g = draw(st.lists(st.sampled_from([1, 2, 3, 4, 8]), min_size=1, max_size=3, unique=True))
        counts.append(len(g))
        gpus += g
        io += [draw(small) for _ in g]
        util += [draw(small) for _ in g]
    ptr = np.concatenate([[0], np.cumsum(counts)])
    sizes = [draw(st.sampled_from([0.5, 1.0, 4.0, 10.0])) for _ in range(n_data)]
    total_io = sum(io)
    return build(
        dataset_size_gb=np.array(sizes),
        job_dataset=np.array([draw(st.integers(0, n_data - 1)) for _ in range(n_jobs)]),
        cache_gb=draw(st.sampled_from([0.0, 0.5, 1.0, 5.0, 20.0])),
        bandwidth_gbps=draw(st.sampled_from([math.inf, 0.0, 0.5 * total_io, 2.0])),
        gpus=draw(st.sampled_from([None, 1, 3, 6, 12])),
        budget_per_hour=draw(st.sampled_from([math.inf, 0.0, 2.7, 9.3, 21.1])),
        prices=(draw(st.sampled_from([0.0, 1.0, 2.5])), draw(st.sampled_from([0.0, 0.1, 1.3])), 0.9),
        options=(ptr, np.array(gpus), np.array(io), np.array(util)),
    )


@st.composite
def small_generated(draw: st.DrawFn) -> Instance:
    """generate_welfare with 1-4 jobs and 4 options, any utility mix, tight to loose budgets and caps."""
    return generate_welfare(
        draw(st.integers(1, 4)),
        draw(st.integers(1, 3)),
        draw(st.integers(0, 10_000)),
        utility_mix=draw(st.sampled_from([*SHAPES, "mixed"])),
        budget_fraction=draw(st.sampled_from([0.05, 0.2, 0.5, 1.0])),
        gpu_fraction=draw(st.sampled_from([0.2, 0.5, 1.0])),
        cache_fraction=draw(st.sampled_from([0.0, 0.2, 1.0])),
        bandwidth_fraction=draw(st.sampled_from([None, 0.1, 0.5])),
    )


@given(y=st.sampled_from([0, 1]), h=st.fractions(0, 1))
def test_theorem_a_mccormick_envelope_is_the_product(y: int, h: Fraction) -> None:
    """Theorem (a): for binary y and h ∈ [0, 1], the envelope {w: w ≤ y, w ≤ h, w ≥ h + y − 1, w ≥ 0} is {y·h}.

    In exact rational arithmetic the envelope is the interval [max(0, h + y − 1), min(y, h)]; both ends equal y·h.
    """
    lower = max(Fraction(0), h + y - 1)
    upper = min(Fraction(y), h)
    assert lower == upper == y * h


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_a_milp_equals_brute_force(inst: Instance) -> None:
    """Theorem (a) and its corollary: the MILP optimum equals the best option choice fed by P1, and is proven."""
    alloc = welfare_milp(inst)
    assert alloc.status == "optimal"
    ev = evaluate(inst, alloc, "welfare")
    assert ev.feasible, ev.violations
    expected = brute_force(inst)
    assert ev.welfare == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert alloc.bound is not None and alloc.bound >= expected - 1e-6 * max(1.0, expected)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_a_solved_w_equals_y_times_h(inst: Instance) -> None:
    """Theorem (a): in every solved MILP, w_{j,g} = y_{j,g} · h_k(j) on every option row (to HiGHS's tolerance)."""
    model = build_welfare_model(inst)
    out = solve_model(model)
    assert out.status == "optimal"
    k_of = inst.job_dataset[inst.option_job()]
    for o in model.O:
        y, w, h = pyo.value(model.y[o]), pyo.value(model.w[o]), pyo.value(model.h[int(k_of[o])])
        assert abs(w - round(y) * h) <= 1e-6


@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_lp_bound_dominates_milp_and_its_allocation_is_feasible(inst: Instance) -> None:
    """The LP relaxation's optimum bounds the MILP optimum; its rounded-down allocation is feasible and below it."""
    lp = welfare_lp(inst)
    milp = welfare_milp(inst)
    assert lp.status in ("feasible", "optimal")
    ev_lp = evaluate(inst, lp, "welfare")
    ev_milp = evaluate(inst, milp, "welfare")
    assert ev_lp.feasible, ev_lp.violations
    tol = 1e-6 * max(1.0, ev_milp.welfare)
    assert lp.bound >= ev_milp.welfare - tol
    assert ev_lp.welfare <= ev_milp.welfare + tol


def test_regression_welfare_lp_is_optimal_when_its_relaxation_is_whole() -> None:
    """An unbinding budget makes the LP whole (every job at its best option): lp is optimal, meeting its bound and
    the MILP, and its reason counts whole choices (running or not); a binding one leaves a fractional job, which
    is counted as dropped, and lp stays feasible."""
    inst = generate_welfare(30, 5, seed=2).replace(budget_per_hour=math.inf, gpus=None)
    lp, milp = welfare_lp(inst), welfare_milp(inst)
    assert lp.status == "optimal" and milp.status == "optimal"
    assert evaluate(inst, lp, "welfare").welfare == pytest.approx(lp.bound, rel=1e-9)
    assert lp.bound == pytest.approx(milp.bound, rel=1e-6)
    assert "it is whole" in lp.reason and "30 of 30 jobs run" in lp.reason
    tight = generate_welfare(60, 6, seed=0)
    rounded = welfare_lp(tight)
    assert rounded.status == "feasible"
    assert "the allocation drops the 1 of 60 jobs whose LP choice is fractional" in rounded.reason


def test_milp_on_generated_100_jobs_is_proven_and_feasible() -> None:
    """A 100-job, 4-option, 20-dataset instance solves to proven optimality and the referee accepts it unstalled."""
    inst = generate_welfare(100, 20, seed=3, bandwidth_fraction=0.3)
    alloc = welfare_milp(inst)
    ev = evaluate(inst, alloc, "welfare")
    assert alloc.status == "optimal"
    assert ev.feasible, ev.violations
    assert ev.welfare == pytest.approx(alloc.bound, rel=1e-6)
    assert ev.stall_factor.min() >= 1.0 - 1e-6


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cache_granularity": "dataset"}, "cluster.cache_granularity"),
        ({"cache_granularity": "block", "block_gb": 8.0}, "cluster.cache_granularity"),
        ({"bandwidth_step_gbps": 0.5}, "cluster.bandwidth_step_gbps"),
    ],
)
def test_non_continuous_variants_are_rejected_by_name(change: dict, field: str) -> None:
    """P2 is modelled for continuous cache and bandwidth only: other variants are an InstanceError naming the field."""
    inst = generate_welfare(3, 2, seed=0).replace(**change)
    with pytest.raises(InstanceError, match=field.replace(".", r"\.")):
        welfare_milp(inst)


def test_jobs_without_options_are_rejected() -> None:
    """The welfare MILP needs every job's option table; a cost-only instance is an InstanceError."""
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([0.1]),
        cache_gb=1.0,
        prices=(1.0, 0.1, 1.0),
    )
    with pytest.raises(InstanceError, match="options"):
        welfare_milp(inst)


def test_a_stalled_allocation_can_outscore_the_p2_optimum() -> None:
    """P2 forbids stalls, the referee scores them (docs/model.md §5): on a tight budget a stalled job beats P2.

    One job, one option (1 GPU, 1 GB/s, utility 10), no cache, p_g = p_b = 1, budget 1.5: P2 cannot afford
    the job unstalled (cost 2), so its optimum is 0; the GPU with 0.5 GB/s runs at half speed and earns 5.
    This is the gap the Remarks of proofs/mccormick_exact.md warn about.
    """
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        cache_gb=0.0,
        prices=(1.0, 0.0, 1.0),
        budget_per_hour=1.5,
        options=(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([10.0])),
    )
    assert evaluate(inst, welfare_milp(inst), "welfare").welfare == 0.0
    stalled = evaluate(inst, Allocation(np.array([1]), np.zeros(1), np.array([0.5])), "welfare")
    assert stalled.feasible
    assert stalled.welfare == pytest.approx(5.0)


ROW_CHOICES = [frozenset(), frozenset({"feeding"}), frozenset({"feeding", "w_below_h", "w_above"})]


@given(inst=st.one_of(tiny_welfare(), small_generated()), kept=st.sampled_from(ROW_CHOICES))
def test_theorem_f1_array_form_has_the_optimum_of_p2(inst: Instance, kept: frozenset[str]) -> None:
    """Theorem F1 (proofs/welfare_milp_forms.md): the compiled statement, with any of its optional rows, has P2's
    optimum, checked against the brute force."""
    arrays = build_welfare_arrays(inst, rows_kept=kept)
    out, x, _ = solve_arrays(arrays)
    expected = brute_force(inst)
    assert out.status == "optimal" and x is not None
    assert out.objective == pytest.approx(expected, rel=1e-6, abs=1e-6)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_f1_warm_start_keeps_the_optimum(inst: Instance) -> None:
    """Theorem F1 with AutoCBA's allocation as HiGHS's incumbent (the single MILP): the same proven optimum."""
    alloc = solve_welfare(inst, relax=False, warm=autocba(inst), sliced=False)
    ev = evaluate(inst, alloc, "welfare")
    assert alloc.status == "optimal"
    assert ev.feasible, ev.violations
    assert ev.welfare == pytest.approx(brute_force(inst), rel=1e-6, abs=1e-6)


@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_lemma_f2_dropped_options_cannot_run_alone(inst: Instance) -> None:
    """Lemma F2: an option the array form fixes to 0 does not fit alone (its job alone, fed by P1, breaks a limit).

    The check feeds the option alone by CBA's closed form (Theorem 1), independent of standalone_fits.
    """
    for o in np.flatnonzero(~standalone_fits(inst)):
        rates = np.zeros(inst.n_jobs)
        rates[int(inst.option_job()[o])] = inst.option_io_gbps[o]
        f = feed(inst, rates)
        over_gpus = inst.gpus is not None and inst.option_gpus[o] > inst.gpus
        over_budget = f.cache_gb is None or (
            inst.price_gpu * float(inst.option_gpus[o]) + f.io_cost > inst.budget_per_hour * (1 + 1e-9) + 1e-9
        )
        assert over_gpus or over_budget


def test_lemma_f2_the_lp_bound_keeps_the_options_a_share_can_pay_for() -> None:
    """Lemma F2, proofs/welfare_milp_forms.md, the LP relaxation: it fixes only options above G.  Here the budget
    pays for none of the one job's options alone, unstalled (standalone_fits drops all four), but a stalled or
    time-shared share of one fits: the LP fixed all four and answered a bound of 0 while gavel-tput-tuned was
    scored 0.928 and milp-stall 0.322.  The bound is now above every welfare method's referee score."""
    inst = generate(
        "welfare",
        jobs=1,
        datasets=2,
        seed=907625,
        cache_fraction=0.3166584421740133,
        budget_fraction=0.07468345771877008,
        gpu_fraction=0.8349121794326069,
        utility_mix="alpha",
        prices=(0.1329516926206466, 2.3548756046943806e-05, 77.54345550683567),
    )
    assert not standalone_fits(inst).any()
    bound = api_solve(inst, "lp", problem="welfare").bound
    assert bound is not None and bound > 0
    for method in registry.names("welfare"):
        scored = api_solve(inst, method, problem="welfare")
        if scored.objective is not None:
            assert scored.objective <= bound * (1 + 1e-9), method


def _random_allocation(inst: Instance, data: st.DataObject) -> Allocation:
    """Any allocation within G, C, B and the budget: drawn options, cache and bandwidth, scaled into the limits."""
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    for j in range(inst.n_jobs):
        rows = [-1, *range(int(inst.option_ptr[j]), int(inst.option_ptr[j + 1]))]
        o = data.draw(st.sampled_from(rows))
        gpus[j] = 0 if o < 0 else inst.option_gpus[o]
    if inst.gpus is not None and gpus.sum() > inst.gpus:
        gpus[:] = 0
    cache = np.array([data.draw(st.floats(0.0, 1.0)) for _ in range(inst.n_datasets)]) * inst.dataset_size_gb
    if cache.sum() > inst.cache_gb:
        cache *= inst.cache_gb / cache.sum()
    bw = np.array([data.draw(st.floats(0.0, 3.0)) for _ in range(inst.n_jobs)])
    spend = inst.price_gpu * gpus.sum() + inst.price_cache * cache.sum()
    if spend > inst.budget_per_hour:
        return Allocation(np.zeros(inst.n_jobs, np.int64), np.zeros(inst.n_datasets), np.zeros(inst.n_jobs))
    factor = 1.0
    if bw.sum() > 0:
        factor = min(1.0, inst.bandwidth_gbps / bw.sum())
        if inst.price_bandwidth > 0:
            factor = min(factor, (inst.budget_per_hour - spend) / (inst.price_bandwidth * bw.sum()))
    return Allocation(gpus, cache, bw * max(factor, 0.0) * (1 - 1e-12))


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()), data=st.data())
def test_theorem_f3_stall_relaxation_bounds_every_scored_allocation(inst: Instance, data: st.DataObject) -> None:
    """Theorem F3 (i): the stall relaxation's optimum ≥ the referee's welfare of any allocation, stalled or not.

    It is also ≥ the no-stall optimum P2 (brute force); an ``optimal`` answer is realised by the referee.
    """
    stall = welfare_milp_stall(inst)
    assert stall.bound is not None
    tol = 1e-6 * max(1.0, stall.bound)
    assert stall.bound >= brute_force(inst) - tol
    other = evaluate(inst, _random_allocation(inst, data), "welfare")
    if other.feasible:
        assert other.welfare <= stall.bound + tol
    ev = evaluate(inst, stall, "welfare")
    assert ev.feasible, ev.violations
    if stall.status == "optimal":
        assert ev.welfare >= stall.bound - tol


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_f3_no_budget_no_b_no_stalls(inst: Instance) -> None:
    """Theorem F3 (ii): with the budget and B unlimited, P2s = P2 and milp-stall proves it."""
    free = inst.replace(budget_per_hour=math.inf, bandwidth_gbps=math.inf)
    stall = welfare_milp_stall(free)
    assert stall.status == "optimal"
    assert evaluate(free, stall, "welfare").welfare == pytest.approx(brute_force(free), rel=1e-6, abs=1e-6)


def test_theorem_f3_stalled_optimum_of_the_half_fed_job() -> None:
    """Theorem F3 (iii): on the example of docs/model.md §5 (budget 1.5, unstalled cost 2) P2s = 5 > P2 = 0, proven."""
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        cache_gb=0.0,
        prices=(1.0, 0.0, 1.0),
        budget_per_hour=1.5,
        options=(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([10.0])),
    )
    stall = welfare_milp_stall(inst)
    assert stall.status == "optimal"
    assert evaluate(inst, stall, "welfare").welfare == pytest.approx(5.0)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()), warm=st.booleans())
def test_theorem_f4_slices_have_the_optimum_of_p2(inst: Instance, warm: bool) -> None:
    """Theorem F4 (i, iii), proofs/welfare_milp_forms.md: the outward scan over GPU-count slices proves P2's optimum.

    Against the brute force, with and without AutoCBA's allocation as the first incumbent, scored by the
    referee; form S (the stall relaxation) scanned by slices has the optimum of form S solved as one MILP.
    """
    alloc = solve_welfare(inst, relax=False, warm=autocba(inst) if warm else None)
    ev = evaluate(inst, alloc, "welfare")
    assert alloc.status == "optimal" and alloc.milp.form == "sliced"
    assert ev.feasible, ev.violations
    assert ev.welfare == pytest.approx(brute_force(inst), rel=1e-6, abs=1e-6)
    stall = build_welfare_arrays(inst, stall=True)
    single, _, _ = solve_arrays(stall)
    sliced, x, _ = solve_sliced(stall, inst.option_gpus)
    assert single.status == sliced.status == "optimal" and x is not None
    # 1e-5: form S's fed fractions are continuous, and HiGHS's 1e-7 row tolerance on B, scaled by U_o / r_o
    # (up to about 100 here), moves its optimum by up to 1e-5 between two correct solves (found: 1.3e-6 relative).
    assert sliced.objective == pytest.approx(single.objective, rel=1e-5, abs=1e-5)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_f4_slice_bound_is_concave_and_bounds_each_slice(inst: Instance) -> None:
    """Theorem F4 (ii): L(t), the LP optimum with Σ g y = t, is concave on an interval, peaks at n̂, bounds slice t.

    Every whole t from 0 to Σ g_o is solved; each slice's brute-force optimum is at most L(t) and a slice the
    brute force finds feasible has a finite L(t).
    """
    full = build_welfare_arrays(inst)
    top = int(inst.option_gpus.sum())
    values = []
    for t in range(top + 1):
        out, _, _ = solve_arrays(with_slice(full, t, t, relax=True))
        assert out.status in ("optimal", "infeasible")
        values.append(out.objective if out.status == "optimal" else -math.inf)
    feasible = [t for t, v in enumerate(values) if v > -math.inf]
    assert feasible == list(range(feasible[0], feasible[-1] + 1))  # an interval
    tol = 1e-6 * max(1.0, max(abs(values[t]) for t in feasible))
    for t in feasible[1:-1]:
        assert values[t] >= 0.5 * (values[t - 1] + values[t + 1]) - tol
    lp, x, _ = solve_arrays(with_slice(full, 0.0, math.inf, relax=True))
    assert lp.status == "optimal" and x is not None
    n_hat = float(inst.option_gpus @ full.part("y", x))
    assert feasible[0] <= math.ceil(n_hat - 1e-9) and math.floor(n_hat + 1e-9) <= feasible[-1]
    for t in feasible:
        assert values[t] <= lp.objective + tol
        if t + 1 in feasible and t + 1 <= n_hat + 1e-9:
            assert values[t] <= values[t + 1] + tol  # non-decreasing up to n̂
        if t - 1 in feasible and t - 1 >= n_hat - 1e-9:
            assert values[t] <= values[t - 1] + tol  # non-increasing from n̂
    for t, best in brute_force_by_gpus(inst).items():
        assert best <= values[t] + tol


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()))
def test_theorem_f4_slice_lps_from_a_neighbours_basis_keep_their_optimum(inst: Instance) -> None:
    """Theorem F4 (ii), as the scan solves it: each slice's LP started from the basis its neighbour left (the
    chain ⌊n̂⌋, ⌊n̂⌋ − 1, … from the LP over all n, as solve_sliced walks one side) has the optimum L(t) of the
    same LP solved from scratch (to HiGHS's feasibility tolerance), its bound from its own duals is at least
    L(t) and at least the brute force of the slice, and it is infeasible exactly where the cold one is
    (proofs/welfare_milp_forms.md)."""
    full = build_welfare_arrays(inst)
    lp, _, run = solve_arrays(with_slice(full, 0.0, math.inf, relax=True))
    assert lp.status == "optimal" and "basis" in run
    basis = run["basis"]
    brute = brute_force_by_gpus(inst)
    for t in range(int(inst.option_gpus.sum()), -1, -1):
        cold, _, _ = solve_arrays(with_slice(full, t, t, relax=True))
        warm, _, facts = solve_arrays(with_slice(full, t, t, relax=True), basis=basis)
        assert warm.status == cold.status
        if cold.status != "optimal":
            continue
        assert warm.objective is not None and cold.objective is not None and warm.bound is not None
        tol = HIGHS_FEASIBILITY * max(1.0, abs(cold.objective))
        assert warm.objective == pytest.approx(cold.objective, rel=HIGHS_FEASIBILITY, abs=HIGHS_FEASIBILITY)
        assert warm.bound >= cold.objective - tol
        assert warm.bound >= brute.get(t, -math.inf)
        basis = facts.get("basis", basis)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()), data=st.data())
def test_theorem_f4_duals_close_a_side_and_rays_prove_it_empty(inst: Instance, data: st.DataObject) -> None:
    """Theorem F4 (iii), proofs/welfare_milp_forms.md: the duals of any slice's LP, evaluated exactly on a range of
    GPU counts, bound the brute force of every slice in that range, and so do random multipliers (weak duality
    holds for every y); a Farkas ray proves empty a slice above Σ g_o, and no vector proves a range empty that
    holds an allocation."""
    full = build_welfare_arrays(inst)
    top = int(inst.option_gpus.sum())
    brute = brute_force_by_gpus(inst)
    t = data.draw(st.integers(0, top))
    a, b = sorted(data.draw(st.lists(st.integers(0, top), min_size=2, max_size=2)))
    inside = [v for n, v in brute.items() if a <= n <= b]
    out, _, facts = solve_arrays(with_slice(full, t, t, relax=True))
    noise = np.array(data.draw(st.lists(st.floats(-4, 4), min_size=full.n_rows, max_size=full.n_rows)))
    for y in ([facts["row_dual"]] if out.status == "optimal" else []) + [noise]:
        bound = solve_module._dual_bound(full, y, a, b)
        if bound is not None and inside:
            assert bound >= max(inside)
        if inside:
            assert not solve_module._empty(full, y, a, b)
    beyond = with_slice(full.with_rows("gpu_capacity", -math.inf, math.inf), top + 1, top + 1, relax=True)
    empty, _, ray_facts = solve_arrays(beyond, solve_module.Budget(presolve=False))
    assert empty.status == "infeasible"
    free = full.with_rows("gpu_capacity", -math.inf, math.inf)
    assert solve_module._empty(free, ray_facts.get("dual_ray"), top + 1, top + 1)


@pytest.mark.slow
@given(inst=small_generated(), stop=st.integers(1, 4))
def test_theorem_f4_a_stopped_scan_keeps_a_valid_bound(inst: Instance, stop: int) -> None:
    """Theorem F4 (iv): a scan cut short (HiGHS's time limit on its ``stop``-th call) is ``time_limit``, never
    ``optimal``, and its bound is at least the brute-force optimum; with AutoCBA's start it keeps that incumbent."""
    calls = {"n": 0}
    real = solve_module.solve_arrays

    def limited(*args: object, **kwargs: object) -> tuple[Outcome, np.ndarray | None, dict]:
        calls["n"] += 1
        if calls["n"] >= stop:
            return Outcome("time_limit", None, None, "stopped by the test", False), None, {}
        return real(*args, **kwargs)  # type: ignore[arg-type]

    arrays = build_welfare_arrays(inst)
    warm = autocba(inst)
    start = start_point(inst, arrays, warm.gpus, warm.cache_gb)
    solve_module.solve_arrays = limited  # type: ignore[assignment]
    try:
        out, x, _ = solve_sliced(arrays, inst.option_gpus, start=start)
    finally:
        solve_module.solve_arrays = real  # type: ignore[assignment]
    optimum = brute_force(inst)
    if calls["n"] < stop:  # the scan ended before the stop: a proof
        assert out.status == "optimal" and out.objective == pytest.approx(optimum, rel=1e-6, abs=1e-6)
        return
    assert out.status == "time_limit"
    if stop > 1:
        assert out.bound is not None and out.bound >= optimum - 1e-6 * max(1.0, optimum)
        assert x is not None and out.objective is not None and out.objective <= optimum + 1e-6 * max(1.0, optimum)


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()), free=st.integers(0, 6))
def test_lemma_f6_neighbourhood_is_a_restriction_of_the_slice(inst: Instance, free: int) -> None:
    """Lemma F6 (i), proofs/welfare_milp_forms.md: in every slice t, the probe's model keeps the slice's rows,
    its column bounds lie inside the slice's, every column it fixes is integral and sits at the LP's whole
    value, the ``free`` columns of least reduced cost stay free, and its MILP optimum (a point of the slice,
    by the model's own check) is at most the brute force of that slice."""
    full = build_welfare_arrays(inst)
    brute = brute_force_by_gpus(inst)
    for t in range(int(inst.option_gpus.sum()) + 1):
        lp, x_lp, facts = solve_arrays(with_slice(full, t, t, relax=True))
        if lp.status != "optimal" or x_lp is None or facts.get("dual_value") is None:
            continue
        milp = with_slice(full, t, t)
        hood = neighbourhood(milp, x_lp, facts["dual_value"], free)
        if hood is None:  # nothing to fix: every integral column whole in the LP is among the ``free``
            assert int((milp.integral & (np.abs(x_lp - np.rint(x_lp)) <= 1e-9)).sum()) <= free
            continue
        assert np.array_equal(hood.row_lo, milp.row_lo) and np.array_equal(hood.row_hi, milp.row_hi)
        assert np.all(hood.col_lo >= milp.col_lo) and np.all(hood.col_hi <= milp.col_hi)
        fixed = (hood.col_lo != milp.col_lo) | (hood.col_hi != milp.col_hi)
        assert np.all(milp.integral[fixed]) and np.array_equal(hood.col_lo[fixed], np.rint(x_lp[fixed]))
        assert np.array_equal(hood.col_lo[fixed], hood.col_hi[fixed])
        assert int((milp.integral & ~fixed).sum()) >= min(free, int(milp.integral.sum()))
        out, x, _ = solve_arrays(hood)
        if out.status == "optimal":
            assert x is not None and out.objective is not None
            assert milp.fits(x, tol=1e-6)
            assert out.objective <= brute[t] + 1e-6 * max(1.0, abs(brute[t]))


def _three_binaries() -> Arrays:
    """Three binary columns of cost 1 in one row x_0 + x_1 + x_2 <= 3: a probe's model whose columns differ only
    by the reduced costs a test gives them (Lemma F6)."""
    one = np.ones(3)
    return Arrays(
        cost=one.copy(),
        col_lo=np.zeros(3),
        col_hi=one.copy(),
        integral=np.ones(3, dtype=bool),
        start=np.array([0, 3], dtype=np.int32),
        index=np.array([0, 1, 2], dtype=np.int32),
        value=one.copy(),
        row_lo=np.array([-np.inf]),
        row_hi=np.array([3.0]),
        maximize=False,
        offset=0.0,
        objective_scale=1.0,
        unit=one.copy(),
        blocks={"x": slice(0, 3)},
        rows={"r": slice(0, 1)},
    )


def test_lemma_f6_neighbourhood_ranks_a_repaired_column_by_its_exact_reduced_cost() -> None:
    """Lemma F6, proofs/welfare_milp_forms.md: the probe frees the columns of least |r_j|, with r_j =
    reduced_j · 2**low and a repaired column's r_j exact (exact_bounds.DualValue).  Here r = (16, 8, 24): the
    repaired column 0 (r_0 = 16, two units of 2**3) ranks between the others, so with two free columns
    column 2 is the one fixed; compared in mixed units (16 against 1 and 3) column 0 would be."""
    arrays = _three_binaries()
    reduced = np.array([0, 1, 3], dtype=object)
    dual = DualValue(Fraction(0), reduced, 3, {0: Fraction(16)}, np.zeros(3))
    hood = neighbourhood(arrays, np.zeros(3), dual, 2)
    assert hood is not None
    assert list(hood.col_hi) == [1.0, 1.0, 0.0]


def test_lemma_f6_neighbourhood_ranks_an_exact_reduced_cost_beyond_a_double_last() -> None:
    """Lemma F6, proofs/welfare_milp_forms.md: only the order of |r_j| matters, so an exact r_j beyond the largest
    double (a cache of 3e302 GB made one; float() raised OverflowError) ranks as inf, behind every finite one.
    Here column 1's r_1 = 10**400 and column 2's repaired r_2 = 2**1100 · 2**3: with one free column, column 0
    (r_0 = 0) is freed and the other two are fixed."""
    arrays = _three_binaries()
    reduced = np.array([0, 10**400, 1], dtype=object)
    dual = DualValue(Fraction(0), reduced, 3, {2: Fraction(2**1103)}, np.zeros(3))
    hood = neighbourhood(arrays, np.zeros(3), dual, 1)
    assert hood is not None
    assert list(hood.col_hi) == [1.0, 0.0, 0.0]


@pytest.mark.slow
@given(inst=st.one_of(tiny_welfare(), small_generated()), free=st.integers(0, 3))
def test_lemma_f6_probes_change_no_optimum(inst: Instance, free: int) -> None:
    """Lemma F6 (ii), proofs/welfare_milp_forms.md: the slice scan with probes of ``free`` free columns (every
    slice probed) proves P2's optimum: the brute force, scored by the referee, with AutoCBA's start."""
    with mock.patch.object(solve_module, "NEIGHBOURHOOD", free):
        alloc = solve_welfare(inst, relax=False, warm=autocba(inst))
    ev = evaluate(inst, alloc, "welfare")
    assert alloc.status == "optimal" and alloc.milp.form == "sliced"
    assert ev.feasible, ev.violations
    assert ev.welfare == pytest.approx(brute_force(inst), rel=1e-6, abs=1e-6)


@pytest.mark.slow
def test_lemma_f6_probes_run_and_change_no_optimum_at_200_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lemma F6 (ii): on the generator's 200-job instances (3 seeds × the 10,000-job benchmark's budget
    fractions) the scan with probes of 50 free columns proves the optimum of the scan without probes, and
    probes ran and closed or improved something (the records say so)."""
    records = []
    for seed, fraction in itertools.product(range(3), (0.1, 0.2, 0.35)):
        inst = generate_welfare(200, 20, seed, utility_mix="mixed", budget_fraction=fraction)
        warm = autocba(inst)
        with monkeypatch.context() as patch:
            patch.setattr(solve_module, "NEIGHBOURHOOD", 50)
            probed = solve_welfare(inst, relax=False, warm=warm)
            patch.setattr(solve_module, "neighbourhood", lambda arrays, x_lp, dual, free: None)
            plain = solve_welfare(inst, relax=False, warm=warm)
        assert probed.status == plain.status == "optimal"
        a, b = evaluate(inst, probed, "welfare").welfare, evaluate(inst, plain, "welfare").welfare
        assert a == pytest.approx(b, rel=RTOL)
        records += probed.milp.slices
    assert sum("probe" in r for r in records) > 0


@pytest.mark.slow
def test_theorem_f5_fixing_changes_no_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Theorem F5 (ii), proofs/welfare_milp_forms.md: reduced-cost fixing in the slices of solve_sliced, warm
    started from AutoCBA, proves the same optimum as the scan without fixing, and it does fix columns (200 jobs
    of the experiments' generator, 3 seeds × the budget fractions of the 10,000-job benchmark)."""
    runs = []
    for seed, fraction in itertools.product(range(3), (0.1, 0.2, 0.35)):
        inst = generate_welfare(200, 20, seed, utility_mix="mixed", budget_fraction=fraction)
        warm = autocba(inst)
        with monkeypatch.context() as patch:
            plain = solve_welfare(inst, relax=False, warm=warm)
            patch.setattr(solve_module, "fixed_by_reduced_cost", lambda arrays, dual, best: (arrays, 0))
            unfixed = solve_welfare(inst, relax=False, warm=warm)
        runs.append((inst, plain, unfixed))
    assert sum(s.get("fixed", 0) for _, alloc, _ in runs for s in alloc.milp.slices) > 0
    for inst, fixed, unfixed in runs:
        assert fixed.status == unfixed.status == "optimal"
        a, b = evaluate(inst, fixed, "welfare").welfare, evaluate(inst, unfixed, "welfare").welfare
        assert a == pytest.approx(b, rel=RTOL)


def _reproducer(n: int, decoy_utility: float) -> tuple[list[dict], list[dict], dict]:
    """Jobs, datasets and limits of the instance where one option that cannot run set the welfare's unit: n jobs
    of three options, and a job of utility ``decoy_utility`` on a 1e6 GB dataset read at 1e4 GB/s, which no
    budget here feeds (None: no such job)."""
    r = np.random.default_rng(104)
    ds = [{"id": f"d{k}", "size_gb": float(r.uniform(10, 50))} for k in range(3)] + [{"id": "big", "size_gb": 1e6}]
    jobs = []
    for i in range(n):
        gs = sorted(r.choice([1, 2, 3, 4, 5], size=3, replace=False))
        options = [
            {"gpus": int(g), "io_gbps": float(0.01 * g), "utility": float(g * (1.0 + 1e-3 * r.integers(0, 20)))}
            for g in gs
        ]
        jobs.append({"id": f"j{i}", "dataset": f"d{i % 3}", "options": options})
    if decoy_utility > 0:
        decoy = {"gpus": 1, "io_gbps": 1e4, "utility": decoy_utility}
        jobs.append({"id": "decoy", "dataset": "big", "options": [decoy]})
    limits = {"cache_gb": 60.0, "prices": (2.5, 0.0004, 0.9), "budget_per_hour": 0.05 * n * 5 * 2.5 + 0.37}
    return jobs, ds, limits


def test_regression_lemma_f2_an_option_that_cannot_run_sets_no_unit() -> None:
    """Lemma F2 (ii), proofs/welfare_milp_forms.md, and docs/model.md (8.2): the welfare's unit comes from the
    options that run alone, so a job of utility 1e9 that no budget can feed neither widens the certification
    tolerance nor shrinks HiGHS's objective.  With the unit taken from every option whose GPUs fit, milp said
    ``optimal`` at 15.105 on 60 jobs while the optimum (SCIP on the same model) is 15.285: the decoy made the
    absolute tolerance 1 and the real utilities 1e-9 of HiGHS's objective.  Checked against the same instance
    without the decoy job (which cannot run, so the optima are equal; the single unsliced MILP of it took
    290 s, so milp solves it too)."""
    from cbalab import build_instance
    from cbalab.models.certify import objective_unit

    jobs, ds, limits = _reproducer(60, 1e9)
    inst = build_instance(jobs, ds, **limits)
    clean = build_instance(jobs[:-1], ds, **limits)
    assert not standalone_fits(inst)[-1]
    sliced = welfare_milp(inst)
    single = welfare_milp(clean)
    assert sliced.status == single.status == "optimal"
    welfare = evaluate(inst, sliced, "welfare").welfare
    assert welfare == pytest.approx(evaluate(clean, single, "welfare").welfare, rel=1e-12)
    assert objective_unit(inst, "welfare") == objective_unit(clean, "welfare") <= welfare
    assert sliced.bound is not None and sliced.bound >= welfare


@st.composite
def with_decoy(draw: st.DrawFn) -> Instance:
    """A tiny instance (:func:`tiny_welfare`) plus one job of utility 1e7 to 1e11 that cannot run: on a dataset of
    1e6 GB read at 1e4 GB/s (the budget or B refuses it), or on more GPUs than G."""
    inst = draw(tiny_welfare())
    limited = math.isfinite(inst.budget_per_hour) or math.isfinite(inst.bandwidth_gbps)
    if not limited and inst.gpus is None:
        inst = inst.replace(budget_per_hour=21.1)
        limited = True
    utility = draw(st.floats(1e7, 1e11))
    gpus = 1 if limited else int(inst.gpus or 0) + 1
    ptr = np.r_[inst.option_ptr, inst.option_ptr[-1] + 1]
    return build(
        dataset_size_gb=np.r_[inst.dataset_size_gb, 1e6],
        job_dataset=np.r_[inst.job_dataset, inst.n_datasets],
        cache_gb=inst.cache_gb,
        bandwidth_gbps=inst.bandwidth_gbps,
        gpus=inst.gpus,
        budget_per_hour=inst.budget_per_hour,
        prices=(inst.price_gpu, inst.price_cache, inst.price_bandwidth),
        options=(
            ptr,
            np.r_[inst.option_gpus, gpus],
            np.r_[inst.option_io_gbps, 1e4],
            np.r_[inst.option_utility, utility],
        ),
    )


@given(inst=with_decoy())
def test_lemma_f2_decoys_that_cannot_run_change_no_optimum(inst: Instance) -> None:
    """Lemma F2 (ii) and Theorem F4, proofs/welfare_milp_forms.md: with a job of utility 1e7–1e11 that cannot run,
    milp is proven at the brute force's optimum (every option choice fed by CBA's closed form, kept if it fits;
    no HiGHS, no model: independent of the MILP and of its unit), and its bound is not below that optimum."""
    best = brute_force(inst)
    alloc = welfare_milp(inst)
    ev = evaluate(inst, alloc, "welfare")
    assert alloc.status == "optimal" and ev.feasible, (alloc.reason, ev.violations)
    assert ev.welfare == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert alloc.bound is not None and alloc.bound >= best * (1 - 1e-12)


def _checker() -> Any:
    """scripts/check_welfare_proof.py, loaded from its file (it is no part of the package: it must run without it)."""
    path = Path(__file__).resolve().parent.parent / "scripts" / "check_welfare_proof.py"
    spec = importlib.util.spec_from_file_location("check_welfare_proof", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@given(inst=st.one_of(with_decoy(), tiny_welfare(), small_generated()))
def test_theorem_f4_a_proof_is_rechecked_without_cbalab(inst: Instance) -> None:
    """Theorem F4 (iii)–(v) and Lemma F2, proofs/welfare_milp_forms.md: the document of ``welfare_proof``, read back
    from JSON with the instance file, is re-derived by scripts/check_welfare_proof.py (standard library and
    fractions only) to a bound that is at least the brute force's optimum and at most the bound milp reports; and
    the checker refuses it once the allocation breaks C, a runnable option is said to be dropped, or the reported
    bound is put below the allocation's welfare."""
    check = _checker().check
    data = json.loads(inst.dumps())
    doc = json.loads(json.dumps(solve_module.welfare_proof(inst)))
    ok, text = check(data, doc)
    assert doc["status"] == "optimal" and ok, text
    derived = float(text.split("re-derived bound = ")[1].split("\n")[0])
    assert derived >= brute_force(inst) * (1 - 1e-12) - 1e-300
    wide = json.loads(json.dumps(doc))
    wide["allocation"]["cache_gb"] = [x + 2 * inst.cache_gb + 1.0 for x in wide["allocation"]["cache_gb"]]
    assert not check(data, wide)[0]
    runnable = [o for o in np.flatnonzero(runs_alone(inst)).tolist() if o not in doc["dropped"]]
    if runnable:
        assert not check(data, {**doc, "dropped": [*doc["dropped"], runnable[0]]})[0]
    if doc["welfare"] > 0:
        assert not check(data, {**doc, "bound": doc["welfare"] / 2})[0]
