"""AutoCBA's partial enumeration (algorithms/autocba/enumerate.py) against brute force: Theorem E.

Theorem E of proofs/autocba_guarantee.md: with every guess of one and of two jobs' options enumerated,
(i)-(ii) under linear feeding with at most one limit that can bind, W ≥ OPT − u₂(X) and W ≥ ⅔ OPT, where
u₂(X) is the second largest job utility of an optimal solution X; (iii) on any instance, W is at least the
welfare of every feasible set of at most two jobs.  The references are brute force over every option choice,
fed at least cost by CBA (P1 exactly, proofs/cba_optimality.md).
"""

from __future__ import annotations

import itertools
from unittest import mock

import numpy as np
from hypothesis import assume, given, target
from hypothesis import strategies as st
from test_autocba import (
    TOL,
    _check_feasible,
    _instance,
    binding_limits,
    binding_linear_instances,
    optima,
    tiny_instances,
)

from cbalab.algorithms.autocba import autocba, fits_alone
from cbalab.algorithms.autocba import enumerate as enumerate_module
from cbalab.algorithms.autocba.driver import _FIT_SLACK, _weightings
from cbalab.algorithms.autocba.enumerate import PAIRS_MAX, fixed_greedy
from cbalab.algorithms.autocba.greedy import Weights
from cbalab.models.instance import Instance


@st.composite
def knapsacks(draw: st.DrawFn) -> Instance:
    """3-6 jobs with 1-2 options, no cache (C = 0, (L0)), no G and no B: only the budget can bind (d ≤ 1).

    Small integer GPU counts against a budget of a few GPUs, where the greedy by ratio stops with money left.
    """
    n_j = draw(st.integers(3, 6))
    tables = []
    for _ in range(n_j):
        counts = sorted(draw(st.lists(st.integers(1, 6), min_size=1, max_size=2, unique=True)))
        tables.append([(g, draw(st.sampled_from([0.0, 0.5, 1.0])), float(draw(st.integers(1, 12)))) for g in counts])
    return _instance(
        [1.0] * n_j,
        list(range(n_j)),
        tables,
        prices=(1.0, 0.0, draw(st.sampled_from([0.0, 1.0]))),
        budget=float(draw(st.integers(2, 14))),
    )


@given(st.one_of(tiny_instances(linear_feeding=True), knapsacks()))
def test_partial_enumeration_loses_at_most_the_second_job(inst: Instance) -> None:
    """Theorem E (i)-(ii) of proofs/autocba_guarantee.md: under (L) with d ≤ 1, W ≥ OPT − u₂(X) and W ≥ ⅔ OPT.

    X is the optimum brute force returns (the theorem holds for every optimum); u₂ = 0 when X has one job.
    The instances have at most 12 options, so every guess of one and of two jobs is enumerated.
    """
    assume(binding_limits(inst) <= 1)
    keep = fits_alone(inst, _FIT_SLACK, absolute=False)
    assert int(keep.sum()) <= PAIRS_MAX
    welfare = _check_feasible(inst, autocba(inst))
    opt, utilities = optima(inst)
    second = utilities[1] if len(utilities) > 1 else 0.0
    # The proof's own candidates: the best single job and the capped guesses of one and two jobs, nothing else.
    runs = _weightings(inst, keep)
    weights = runs[1] if len(runs) > 1 else runs[0]
    jobs = inst.option_job()
    rows = np.flatnonzero(keep).tolist()
    guesses = [[(int(jobs[o]), o)] for o in rows]
    guesses += [
        [(int(jobs[a]), a), (int(jobs[b]), b)] for a, b in itertools.combinations(rows, 2) if jobs[a] != jobs[b]
    ]
    proof = max((float(inst.option_utility[o]) for o in rows), default=0.0)
    for fixed in guesses:
        g = fixed_greedy(inst, keep, weights, True, fixed)
        if g is not None:
            proof = max(proof, g.welfare)
    if opt > 0:
        target(-proof / opt, label="enumeration / OPT (pushed down)")
    for w in (welfare, proof):
        assert w >= opt - second - TOL * max(1.0, opt)
        assert w >= 2.0 / 3.0 * opt - TOL * max(1.0, opt)
    assert welfare >= proof - TOL * max(1.0, proof)


@given(st.one_of(tiny_instances(linear_feeding=True), knapsacks(), binding_linear_instances()))
def test_single_guesses_lose_at_most_the_first_job(inst: Instance) -> None:
    """Theorem E (ii) of proofs/autocba_guarantee.md for k = 1: under (L) with d ≤ 1, with only the guesses of one
    job, W ≥ OPT − u₁(X) and W ≥ ½ OPT.

    Checked on the proof's own candidates (the best single job and the capped residual greedy of every guess of
    one option, computed here) and on AutoCBA with the pair guesses off (``PAIRS_MAX`` = 0, what it runs above
    24 options) and no swap pass, so that nothing but the k = 1 enumeration and the greedy runs is left.  X is
    the optimum brute force returns; u₁ its largest job utility.
    """
    assume(binding_limits(inst) <= 1)
    keep = fits_alone(inst, _FIT_SLACK, absolute=False)
    opt, utilities = optima(inst, relative=True)
    first = utilities[0] if utilities else 0.0
    runs = _weightings(inst, keep)
    weights = runs[1] if len(runs) > 1 else runs[0]
    jobs = inst.option_job()
    rows = np.flatnonzero(keep).tolist()
    proof = max((float(inst.option_utility[o]) for o in rows), default=0.0)
    for o in rows:
        g = fixed_greedy(inst, keep, weights, True, [(int(jobs[o]), o)])
        if g is not None:
            proof = max(proof, g.welfare)
    if opt > 0:
        target(-(proof - (opt - first)) / opt, label="k = 1 candidates − (OPT − u₁), over OPT (pushed down)")
    with mock.patch.object(enumerate_module, "PAIRS_MAX", 0):
        welfare = _check_feasible(inst, autocba(inst, swaps=0))
    for w in (welfare, proof):
        assert w >= opt - first - TOL * max(1.0, opt)
        assert w >= 0.5 * opt - TOL * max(1.0, opt)
    assert welfare >= proof - TOL * max(1.0, proof)


@given(tiny_instances())
def test_partial_enumeration_at_least_every_pair(inst: Instance) -> None:
    """Theorem E (iii) of proofs/autocba_guarantee.md: on any instance, W ≥ the best feasible set of ≤ 2 jobs.

    Caching, forced caching under a finite B and non-concave tables included: the pair's feeding is priced
    exactly from the empty state, so a guess that fits is taken.
    """
    welfare = _check_feasible(inst, autocba(inst))
    pair, _ = optima(inst, most=2)
    assert welfare >= pair - TOL * max(1.0, pair)


def test_cap_forbids_options_above_the_guess() -> None:
    """Theorem E's residual: with job 0 held at an option worth 3, job 1 keeps only its options worth ≤ 3."""
    inst = _instance(
        [1.0, 1.0],
        [0, 1],
        [[(1, 0.0, 3.0)], [(1, 0.0, 2.0), (2, 0.0, 5.0)]],
        prices=(1.0, 0.0, 0.0),
        budget=10.0,
    )
    keep = fits_alone(inst)
    capped = fixed_greedy(inst, keep, Weights(1.0, 0.0, 0.0, 0.0), True, [(0, 0)])
    free = fixed_greedy(inst, keep, Weights(1.0, 0.0, 0.0, 0.0), True, [(0, 0)], capped=False)
    assert capped is not None and free is not None
    assert capped.choice == [0, 1] and capped.welfare == 5.0
    assert free.choice == [0, 2] and free.welfare == 8.0


def test_pair_guesses_reach_two_thirds_where_single_guesses_do_not() -> None:
    """Theorem E (ii) needs the guesses of two jobs: here every single guess stops at 11 < ⅔ · 18.

    Budget 10 $/h, p_g = 1: job A (1 GPU, worth 2, ratio 2), jobs B and C (5 GPUs, worth 9 each, ratio 1.8).
    The optimum is B + C = 18.  The greedy takes A, then B, and C no longer fits: 11; holding any one job
    (capped or not) gives the same 11, while the pair guess (B, C) gives 18.  AutoCBA without the swap pass
    (which would find the exchange as well) reaches 18 only with enumeration.
    """
    inst = _instance(
        [1.0, 1.0, 1.0],
        [0, 1, 2],
        [[(1, 0.0, 2.0)], [(5, 0.0, 9.0)], [(5, 0.0, 9.0)]],
        prices=(1.0, 0.0, 0.0),
        budget=10.0,
    )
    keep = fits_alone(inst)
    dollars = Weights(1.0, 0.0, 0.0, 0.0)
    singles = [fixed_greedy(inst, keep, dollars, True, [(j, j)], capped=c) for j in range(3) for c in (True, False)]
    assert max(g.welfare for g in singles if g is not None) == 11.0 < 2.0 / 3.0 * 18.0
    pair = fixed_greedy(inst, keep, dollars, True, [(1, 1), (2, 2)])
    assert pair is not None and pair.welfare == 18.0
    naive = _check_feasible(inst, autocba(inst, swaps=0, enumerate_guesses=False, exact=False))
    full = _check_feasible(inst, autocba(inst, swaps=0, exact=False))
    assert naive == 11.0
    assert full == 18.0 == optima(inst)[0]
