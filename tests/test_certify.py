"""The certification step (models/certify.py, docs/model.md §8) and its regression tests.

No ``optimal`` without a proof, at any scale of the numbers.  Each known case of a false ``optimal`` is a test
named test_regression_...; the magnitude fuzz of experiments/runs/magnitude_fuzz.py runs here
through hypothesis, one test per problem, with a fifth of the profile's examples (ci: 30 each, thorough: 2,000).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hostile import doc
from hypothesis import given, settings
from hypothesis import strategies as st

import cbalab
from cbalab.algorithms import registry
from cbalab.algorithms.cba import cba
from cbalab.experiments.runs import magnitude_fuzz as fuzz
from cbalab.models.certify import CERTIFY_ATOL, CERTIFY_RTOL, certify, instance_tolerance, objective_unit, verdict
from cbalab.models.evaluate import Allocation, evaluate, tolerated
from cbalab.models.instance import Instance, build, from_dict
from cbalab.models.milp.welfare import build_welfare_arrays, start_point
from cbalab.models.solve import cost_milp, solve_cost, solve_sliced, solve_welfare, welfare_milp
from cbalab.models.types import SolveOptions

#: Examples of each fuzz test: a fifth of the profile's (ci 150 → 30, thorough 10,000 → 2,000).
FUZZ_EXAMPLES = max(10, settings.default.max_examples // 5)


# ---------------------------------------------------------------- the rule (docs/model.md (8.2))


def test_verdict_keeps_optimal_only_when_the_bound_meets_the_score() -> None:
    """docs/model.md (8.2): optimal iff the bound meets the score within the tolerance, at MIP gap 0.

    A bound within the tolerance is clipped to the score; one beyond it on the wrong side is no bound and is
    dropped; a missing bound or a gap above 0 never proves anything; a claim other than ``optimal`` stays.
    """
    tol = 1e-6
    assert verdict(100.0, 100.0 - 5e-7, minimise=True, tol=tol, claimed="optimal").status == "optimal"
    clipped = verdict(100.0, 100.0 + 5e-7, minimise=True, tol=tol, claimed="optimal")
    assert clipped.status == "optimal" and clipped.bound == 100.0  # a lower bound never above the cost
    weak = verdict(100.0, 99.0, minimise=True, tol=tol, claimed="optimal")
    assert weak.status == "feasible" and weak.bound == 99.0 and "100" in weak.reason and "99" in weak.reason
    wrong = verdict(100.0, 101.0, minimise=True, tol=tol, claimed="optimal")
    assert wrong.status == "feasible" and wrong.bound is None
    assert verdict(5.0, 5.0, minimise=False, tol=tol, claimed="optimal", mip_gap=0.5).status == "feasible"
    assert verdict(5.0, None, minimise=False, tol=tol, claimed="optimal").status == "feasible"
    assert verdict(5.0, 6.0, minimise=False, tol=tol, claimed="time_limit").status == "time_limit"
    upper = verdict(5.0, 5.0 - 1e-9, minimise=False, tol=tol, claimed="optimal")
    assert upper.status == "optimal" and upper.bound == 5.0  # an upper bound never below the welfare


def test_the_tolerance_is_relative_and_absolute_in_the_instance_unit() -> None:
    """docs/model.md (8.2): CERTIFY_RTOL of the decided part of the score plus CERTIFY_ATOL of the objective unit.

    The unit scales with the instance's numbers (utilities times 1e-8: unit times 1e-8), so the rule means
    the same at every scale; for P1 the fixed GPU bill is left out of the relative part.
    """
    inst = cbalab.generate("welfare", jobs=5, datasets=2, seed=0)
    tiny = inst.replace(option_utility=inst.option_utility * 1e-8)
    assert objective_unit(tiny, "welfare") == pytest.approx(1e-8 * objective_unit(inst, "welfare"), rel=1e-15)
    unit = objective_unit(inst, "welfare")
    assert instance_tolerance(inst, "welfare", 10.0) == pytest.approx(CERTIFY_RTOL * 10.0 + CERTIFY_ATOL * unit)
    cost = cbalab.generate("cost", jobs=5, datasets=2, seed=0)
    gpu_bill = cost.price_gpu * float(cost.job_gpus.sum())
    expected = CERTIFY_RTOL * 1.0 + CERTIFY_ATOL * objective_unit(cost, "cost")
    assert instance_tolerance(cost, "cost", gpu_bill + 1.0) == pytest.approx(expected)


@pytest.mark.parametrize("problem", ["welfare", "cost"])
def test_scaled_models_are_the_same_model_in_powers_of_two(problem: str) -> None:
    """docs/model.md §8: HiGHS sees the objective and the limit rows divided by the instance's own scales.

    Change every unit by a power of two and HiGHS gets the same numbers bit for bit: the same allocation,
    and an objective scaled exactly by the utility (welfare) or money (cost) factor.  (The limits stay above
    1 here: below 1 the referee's slack has an absolute floor, docs/model.md (8.1), and the rows differ.)
    """
    units = fuzz.Units(utility=2.0**-30, money=2.0**25, size=2.0**10, rate=2.0**8)
    if problem == "welfare":
        inst = cbalab.generate("welfare", jobs=12, datasets=3, seed=4, bandwidth_fraction=0.3)
        factor = units.utility
    else:
        inst = cbalab.generate("cost", jobs=20, datasets=4, seed=4, bandwidth_fraction=0.6)
        factor = units.money
    home, _ = registry.run(inst, problem, "milp")
    away, _ = registry.run(fuzz.in_units(inst, units), problem, "milp")
    assert home["status"] == away["status"] == "optimal"
    assert away["gpus"] == home["gpus"]
    assert away["objective"] == home["objective"] * factor
    assert away["bound"] == home["bound"] * factor


# ---------------------------------------------------------------- the known cases


def test_regression_utilities_times_1e_minus_8_are_proven_not_guessed() -> None:
    """Utilities times 1e-8: milp said optimal 5.369953e-06 (bound the same) where autocba finds 5.387989e-06.

    Unscaled both give 538.7989.  HiGHS now sees the objective divided by a power of two near the largest
    utility (docs/model.md §8) and proves 5.387989e-06; the certification step would refuse the old answer.
    """
    inst = cbalab.generate("welfare", jobs=40, datasets=10, seed=1)
    tiny = inst.replace(option_utility=inst.option_utility * 1e-8)
    exact, _ = registry.run(tiny, "welfare", "milp")
    auto, _ = registry.run(tiny, "welfare", "autocba")
    assert exact["status"] == "optimal"
    assert exact["objective"] == pytest.approx(538.7989010248593e-8, rel=1e-9)
    assert auto["objective"] <= exact["objective"] + instance_tolerance(tiny, "welfare", exact["objective"])
    found = welfare_milp(tiny)
    old = Allocation(found.gpus, found.cache_gb, found.bandwidth_gbps, status="optimal", bound=5.369953e-06)
    refused = certify(tiny, "welfare", old)
    assert refused.status == "feasible" and refused.bound is None and "5.369953e-06" in refused.reason


@pytest.mark.parametrize("budget", [1e-3, 1.0, 1e9])
@pytest.mark.parametrize("excess", [1e-12, 3e-10])
def test_regression_the_milp_accepts_the_budget_slack_the_referee_accepts(budget: float, excess: float) -> None:
    """A budget just below a GPU-count step: the referee accepts AutoCBA's use of the slack, and so does the MILP.

    Two jobs: A (2 GPUs, worth 3.259e9) costs the budget times 1 + ``excess``, B (1 GPU, 2.933e9) half of it.
    The referee accepts A (its slack is 1e-9 of the budget, docs/model.md (8.1)); AutoCBA takes A (its best
    single job, within half the slack).  The MILP's budget row holds the same slack (all of it, so that its
    bound bounds every allocation the referee accepts, docs/model.md (8.1)), so its
    optimum is A as well, never B (before the fix: 3.259e9 against the MILP's 2.933e9, both called optimal).
    """
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0, 0]),
        cache_gb=0.0,
        prices=(budget / 2 * (1 + excess), 0.0, 0.0),
        budget_per_hour=budget,
        options=(np.array([0, 1, 2]), np.array([2, 1]), np.array([0.0, 0.0]), np.array([3.259e9, 2.933e9])),
    )
    arrays = build_welfare_arrays(inst)
    assert arrays.row_hi[-1] == tolerated(budget) / budget  # the referee's tolerance, in the row
    auto, auto_ev = registry.run(inst, "welfare", "autocba")
    exact, exact_ev = registry.run(inst, "welfare", "milp")
    assert auto_ev is not None and auto_ev.feasible and auto["objective"] == 3.259e9
    assert exact_ev is not None and exact_ev.feasible
    assert exact["status"] == "optimal" and exact["objective"] == 3.259e9


def test_regression_a_mip_gap_above_0_never_gives_optimal() -> None:
    """``mip_gap=0.5`` returned optimal with bound = objective = 783.35 while AutoCBA finds 783.98.

    Every GPU-count slice was "optimal", which at a gap above 0 means only "within the gap".  Now the answer
    is ``feasible`` with the referee's score and HiGHS's bound in its reason, and the bound is one AutoCBA's
    welfare does not beat; at gap 0 the same instance is proven at 783.98.
    """
    inst = cbalab.generate("welfare", jobs=60, datasets=10, seed=0)
    auto, _ = registry.run(inst, "welfare", "autocba")
    for method in ("milp", "milp-stall"):
        loose, _ = registry.run(inst, "welfare", method, options=SolveOptions(mip_gap=0.5))
        assert loose["status"] == "feasible", method
        assert f"{loose['objective']:.9g}" in loose["reason"] and f"{loose['bound']:.9g}" in loose["reason"]
        assert auto["objective"] <= loose["bound"] + instance_tolerance(inst, "welfare", loose["bound"])
    exact, _ = registry.run(inst, "welfare", "milp")
    assert exact["status"] == "optimal" and exact["objective"] == pytest.approx(783.9798515267432, rel=1e-9)
    whole = cbalab.generate("cost", jobs=30, datasets=6, seed=0).replace(cache_granularity="dataset")
    loose, _ = registry.run(whole, "cost", "milp", options=SolveOptions(mip_gap=0.5))
    assert loose["status"] == "feasible" and "MIP gap 0.5" in loose["reason"]


def test_regression_a_stalled_warm_start_cannot_close_a_slice() -> None:
    """Theorem F4 (iii) of proofs/welfare_milp_forms.md: a warm start must be a point of the model it closes.

    A stalled allocation (referee-feasible, forbidden by P2) as warm start gave optimal with bound 10.

    The half-fed job of docs/model.md §5 (worth 10, unstalled cost 2, budget 1.5): the P2 optimum is 0.  Its
    warm start is now checked against the rows (``Arrays.fits``) and counts as no incumbent, so the
    sliced solve proves 0.
    """
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        cache_gb=0.0,
        prices=(1.0, 0.0, 1.0),
        budget_per_hour=1.5,
        options=(np.array([0, 1]), np.array([1]), np.array([1.0]), np.array([10.0])),
    )
    stalled = Allocation(np.array([1]), np.zeros(1), np.array([0.5]))
    assert evaluate(inst, stalled, "welfare").feasible
    arrays = build_welfare_arrays(inst)
    start = start_point(inst, arrays, stalled.gpus, stalled.cache_gb)
    out, _, facts = solve_sliced(arrays, inst.option_gpus, start=start)
    assert not facts["start_fits"]
    assert out.status == "optimal" and out.objective == 0.0 and out.bound == 0.0
    alloc = solve_welfare(inst, relax=False, warm=stalled)
    assert alloc.status == "optimal" and alloc.bound == 0.0 and evaluate(inst, alloc, "welfare").welfare == 0.0


def test_regression_cba_one_ulp_below_the_sum_of_rates() -> None:
    """Theorem 1 of proofs/cba_optimality.md: B one ulp below Σ r_j.

    cba said optimal 110.0089 with lower bound 110.0156, above its own cost.

    (The instance first found: optimal 277.3455, bound 277.375, milp 277.2743.)  Caching is forced only by that
    ulp, which the referee's slack absorbs: io-only, with no cache at all, is accepted and costs 110.  CBA
    now takes B as the referee accepts it, like the MILP's row (docs/model.md (8.1)): both say 110, and the
    bound never exceeds the cost.
    """
    rates = np.array([0.7, 0.3])
    inst = build(
        dataset_size_gb=np.array([4e13]),
        job_dataset=np.array([0, 0]),
        job_gpus=np.array([4, 7]),
        job_io_gbps=rates,
        cache_gb=4e13,
        bandwidth_gbps=float(np.nextafter(rates.sum(), 0.0)),
        prices=(10.0, 2.0, 0.0),
    )
    ours, exact, bare = (registry.run(inst, "cost", m)[0] for m in ("cba", "milp", "io-only"))
    assert bare["objective"] == 110.0
    assert ours["status"] == exact["status"] == "optimal"
    assert ours["objective"] == exact["objective"] == 110.0
    assert ours["bound"] <= ours["objective"]


@given(inst=st.integers(0, 10_000).map(lambda s: cbalab.generate("cost", jobs=6, datasets=3, seed=s)))
def test_regression_cba_bound_never_above_its_cost_near_the_sum_of_rates(inst: Instance) -> None:
    """Theorem 1 of proofs/cba_optimality.md: with B a few ulps around Σ r_j (and C small),
    CBA's lower bound never exceeds its cost, and its ``optimal`` is the MILP's optimum."""
    total = float(inst.job_io_gbps.sum())
    for b in (float(np.nextafter(total, 0.0)), total, float(np.nextafter(total, math.inf))):
        near = inst.replace(bandwidth_gbps=b, cache_gb=0.05 * inst.cache_gb)
        ours = cba(near)
        if not ours.has_allocation:
            continue
        cost = evaluate(near, ours, "cost").cost_total
        assert ours.bound is not None and ours.bound <= cost
        exact, _ = registry.run(near, "cost", "milp")
        if ours.status == "optimal" and exact["status"] == "optimal":
            assert abs(cost - exact["objective"]) <= instance_tolerance(near, "cost", cost)


def test_regression_fuzz_the_tier_cover_never_caches_an_unread_dataset() -> None:
    """Found by the magnitude fuzz: with tiers, cba cached a 27 GB dataset no job reads and called it optimal.

    Zero tiers need all remote IO cached away; rounding in Σ R_k pushed the ρ-ordered cover of
    algorithms/cba_integer.py past the last read dataset, and CBA's "lower bound" was its own cost, 0.0108 $/h
    above the MILP's optimum.  The cover now stops at the read datasets, and both agree.
    """
    from cbalab.experiments.workload import generate_cost

    base = generate_cost(19, 8, 658055603, cache_fraction=1.0, bandwidth_fraction=0.9)
    demand = base.dataset_demand(base.job_io_gbps)
    inst = base.replace(bandwidth_step_gbps=float(base.job_io_gbps.sum()) / 8)
    ours, exact = (registry.run(inst, "cost", m)[0] for m in ("cba", "milp"))
    assert exact["status"] == "optimal"
    unread = [k for k, r in zip(inst.dataset_ids, demand) if r == 0]
    assert unread and all(ours["cache_gb"][k] == 0.0 for k in unread)
    assert ours["objective"] <= exact["objective"] + instance_tolerance(inst, "cost", exact["objective"])
    assert ours["bound"] <= exact["objective"] + instance_tolerance(inst, "cost", exact["objective"])


# ---------------------------------------------------------------- the magnitude fuzz

exponent = st.one_of(st.none(), st.floats(fuzz.LOW, fuzz.HIGH))


def _units(u: float | None, m: float | None, s: float | None, t: float | None) -> fuzz.Units:
    return fuzz.Units(*(1.0 if x is None else float(10.0**x) for x in (u, m, s, t)))


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES)
@given(seed=st.integers(0, 2**32 - 1), u=exponent, m=exponent, s=exponent, t=exponent)
def test_regression_magnitude_fuzz_welfare_has_no_false_optimum(
    seed: int, u: float | None, m: float | None, s: float | None, t: float | None
) -> None:
    """A welfare instance in units from 1e-8 to 1e9: no method's optimal or bound is beaten by a feasible answer.

    experiments/runs/magnitude_fuzz.py: every welfare method and the milp of the instance in its own units,
    all scored by the referee, compared within the certification tolerance (8.2).
    """
    base = fuzz.welfare_case(np.random.default_rng(seed))
    units = _units(u, m, s, t)
    inst = fuzz.in_units(base, units)
    assert fuzz.false_optima(inst, "welfare", fuzz.answers(inst, "welfare", base, units)) == []


@settings(max_examples=FUZZ_EXAMPLES)
@given(seed=st.integers(0, 2**32 - 1), m=exponent, s=exponent, t=exponent)
def test_regression_magnitude_fuzz_cost_has_no_false_optimum(
    seed: int, m: float | None, s: float | None, t: float | None
) -> None:
    """A cost instance (integer variants included) in units from 1e-8 to 1e9: no optimal or bound is beaten."""
    base = fuzz.cost_case(np.random.default_rng(seed))
    units = _units(None, m, s, t)
    inst = fuzz.in_units(base, units)
    assert fuzz.false_optima(inst, "cost", fuzz.answers(inst, "cost", base, units)) == []


# ------------------------------------------------ an optimal the referee scores otherwise loses it


def test_regression_the_cross_check_catches_highs_solving_another_model() -> None:
    """Unrefused, HiGHS called a wrong answer optimal at io_gbps = 1e15 (32.5588 against CBA's 32.984).

    Scaled before HiGHS sees it (docs/model.md §8) the same model now gives CBA's cost; the
    certification step still catches a solver objective that the referee's score does not match, as
    HiGHS's 32.5588 was.
    """
    d = doc()
    d["jobs"][0]["io_gbps"] = 1e15
    d["cluster"]["bandwidth_gbps"] = None
    inst = from_dict(d)
    solved = solve_cost(inst, relax=False, options=SolveOptions())
    referee = evaluate(inst, solved, "cost").cost_total
    assert solved.status == "optimal" and referee == pytest.approx(evaluate(inst, cba(inst), "cost").cost_total)
    claim = Allocation(solved.gpus, solved.cache_gb, solved.bandwidth_gbps, status="optimal", bound=32.5588)
    checked = certify(inst, "cost", claim, model_objective=32.5588)
    assert checked.status == "feasible" and checked.bound is None
    assert "status downgraded from optimal" in checked.reason and "jobs[0].io_gbps = 1e+15" in checked.reason


def test_regression_an_optimal_claim_the_referee_scores_differently_is_downgraded() -> None:
    """Any ``optimal`` whose bound the referee's score misses by more than the tolerance (8.2) loses its status.

    A bound 10 % below the cost is still a bound (it is kept); one above the cost is none (it is dropped).
    """
    inst = from_dict(doc())
    good = cost_milp(inst)
    assert good.status == "optimal"
    score = evaluate(inst, good, "cost").cost_total
    kept = certify(inst, "cost", good)
    assert kept.status == "optimal" and kept.bound == pytest.approx(score, rel=1e-6)
    weak = Allocation(good.gpus, good.cache_gb, good.bandwidth_gbps, status="optimal", bound=score * 0.9)
    checked = certify(inst, "cost", weak)
    assert checked.status == "feasible" and checked.bound == pytest.approx(score * 0.9)
    assert "not proven optimal" in checked.reason and f"{score:.9g}" in checked.reason
    wrong = Allocation(good.gpus, good.cache_gb, good.bandwidth_gbps, status="optimal", bound=score * 1.1)
    checked = certify(inst, "cost", wrong)
    assert checked.status == "feasible" and checked.bound is None and "bound" in checked.reason
