"""The exact reference (models/exact_reference.py) and every method's status and bound against it, at magnitudes
from 1e-12 to 1e22 (docs/model.md §8, "When cbalab says optimal" and "Bounds that hold in floating point")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cbalab
from cbalab.algorithms import registry
from cbalab.experiments.runs import exact_fuzz
from cbalab.experiments.runs.magnitude_fuzz import in_units
from cbalab.models.exact_reference import cost_optimum, feeding_cost, welfare_optimum

#: Cases per property test: a fifth of the profile's examples (each case runs every method of its problem).
CASES = max(10, settings.default.max_examples // 5)

ONE = Fraction(1)


def test_the_feeding_cost_of_the_non_convex_example() -> None:
    """docs/model.md §5: two 1 GB datasets, C = 1 GB, B = 1 GB/s; demands (10, 0) are fed by caching the busy
    dataset, (5, 5) cannot be fed at all (at least 5 GB/s stays remote)."""
    size, cache, cap, p_c, p_b = [ONE, ONE], ONE, ONE, Fraction(1, 10), ONE
    assert feeding_cost(size, [Fraction(10), Fraction(0)], cache, cap, p_c, p_b) == p_c
    assert feeding_cost(size, [Fraction(5), Fraction(5)], cache, cap, p_c, p_b) is None


def test_the_feeding_cost_caches_exactly_what_pays_off() -> None:
    """(4.7): a dataset is cached whole when its IO density beats p_c / p_b, left remote otherwise; with the cap
    binding, cached at a loss only as far as the cap needs (Theorem 1's rule, computed here by vertices)."""
    size, demand = [Fraction(10), Fraction(10)], [Fraction(5), Fraction(1)]
    p_c, p_b = Fraction(1, 5), ONE  # densities 1/2 and 1/10 against the threshold 1/5
    assert feeding_cost(size, demand, None, None, p_c, p_b) == p_c * 10 + p_b * 1
    # B = 1/2: dataset 1 must shed half a GB/s, so half of it is cached at a loss.
    assert feeding_cost(size, demand, None, Fraction(1, 2), p_c, p_b) == p_c * 15 + p_b * Fraction(1, 2)
    # C = 5: only half of the dense dataset fits.
    assert feeding_cost(size, demand, Fraction(5), None, p_c, p_b) == p_c * 5 + p_b * (Fraction(5, 2) + 1)


def test_the_welfare_optimum_does_not_run_a_job_it_cannot_feed_within_the_budget() -> None:
    """docs/model.md §5, "Scoring a method that stalls": one job worth 10 at a no-stall cost of 2 $/h and a
    budget of 1.5 $/h; the P2 optimum is not to run it."""
    inst = cbalab.build_instance(
        [{"id": "j", "dataset": "d", "options": [{"gpus": 1, "io_gbps": 1.0, "utility": 10.0}]}],
        [{"id": "d", "size_gb": 100.0}],
        cache_gb=0.0,
        prices=(1.0, 0.0, 1.0),
        budget_per_hour=1.5,
    )
    assert welfare_optimum(inst) == 0
    assert welfare_optimum(inst.replace(budget_per_hour=2.0)) == 10


def test_the_accepted_optimum_takes_the_referees_slack() -> None:
    """docs/model.md (8.1): below 1 GB the referee accepts 1e-9 GB beyond C, so a cost optimum under the accepted
    limits is below the written one when more cache pays, and a bound must bound the accepted one."""
    inst = cbalab.build_instance(
        [{"id": "j", "dataset": "d", "gpus": 1, "io_gbps": 1.0}],
        [{"id": "d", "size_gb": 1.0}],
        cache_gb=1e-12,
        prices=(0.0, 0.1, 1.0),
    )
    written, accepted = cost_optimum(inst), cost_optimum(inst, "accepted")
    assert written is not None and accepted is not None
    assert accepted < written


@settings(max_examples=CASES)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_cost_method_against_the_exact_optimum_at_any_magnitude(seed: int) -> None:
    """docs/model.md §8: no P1 method's bound lies beyond the exact optimum (of the limits the referee accepts),
    no ``optimal`` is further from it than the tolerance (8.2), no claimed ``infeasible`` has an optimum, with
    numbers anywhere from 1e-12 to 1e22 of their usual size (``cbalab bench exact-fuzz`` runs more)."""
    _no_wrong_answer("cost", seed)


@settings(max_examples=CASES)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_welfare_method_against_the_exact_optimum_at_any_magnitude(seed: int) -> None:
    """docs/model.md §8: as for P1, for P2's methods (autocba, lp, milp, milp-stall and the GPU schedulers)."""
    _no_wrong_answer("welfare", seed)


def _no_wrong_answer(problem: str, seed: int) -> None:
    """Draw one case of ``problem`` from ``seed`` as the bench does, and assert every method's answer right."""
    rng = np.random.default_rng(seed)
    base = exact_fuzz.welfare_case(rng) if problem == "welfare" else exact_fuzz.cost_case(rng)
    inst = in_units(base, exact_fuzz.units(rng, problem))
    opt = exact_fuzz.exact(inst, problem)
    for method in exact_fuzz.WELFARE_METHODS if problem == "welfare" else exact_fuzz.COST_METHODS:
        doc, ev = registry.run(inst, problem, method)
        score = None
        if ev is not None and ev.feasible:
            score = ev.cost_total if problem == "cost" else float(ev.welfare or 0.0)
        assert exact_fuzz.wrong(inst, problem, method, doc, score, opt) == [], (method, doc["status"], doc["bound"])


@pytest.mark.parametrize("problem", ["cost", "welfare"])
def test_a_bound_beyond_the_exact_optimum_is_found(problem: str) -> None:
    """The check can fail: a bound one ulp beyond the exact optimum, and an ``optimal`` below it by more than the
    tolerance, are both reported."""
    rng = np.random.default_rng(3)
    inst = exact_fuzz.welfare_case(rng) if problem == "welfare" else exact_fuzz.cost_case(rng)
    opt = exact_fuzz.exact(inst, problem)
    assert opt.accepted is not None and opt.written is not None
    side = 1.0 if problem == "cost" else -1.0
    beyond = float(opt.accepted) + side * 4 * abs(np.spacing(float(opt.accepted))) + side * 1e-300
    method = "milp"
    doc = {"status": "optimal", "bound": beyond}
    far = float(opt.written) * (1 + side * 1e-3) + side
    lines = exact_fuzz.wrong(inst, problem, method, doc, far, opt)
    assert any("beyond the exact optimum" in line for line in lines)
    assert any(line.startswith("optimal at") for line in lines)
