"""Bounds that hold in floating point (docs/model.md §8; models/exact_bounds.py).

Every certified bound is a weak-duality value; these tests build instances on which the value taken in floating
point lies above the true optimum (a sum that rounds up, then cancels) and check that the bound cbalab reports
does not, and that a bound that was safe keeps its bits.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import replace
from fractions import Fraction
from types import FrameType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import cost_instances

import cbalab
from cbalab.algorithms.autocba.certificate import Dual, welfare_bound
from cbalab.algorithms.autocba.driver import autocba
from cbalab.experiments.simulate import SimConfig, replay_schedule, simulate
from cbalab.experiments.workload import assign, generate_trace
from cbalab.models import exact_bounds
from cbalab.models.certify import FLOAT_ULPS, accepted_limits, tolerance, verdict
from cbalab.models.exact_bounds import (
    exact_dot,
    exact_sum,
    lp_dual_value,
    round_down,
    round_up,
    safe_float,
    weak_dual_exact,
    welfare_lagrangian_exact,
)
from cbalab.models.instance import Instance, build
from cbalab.models.kernels import weak_dual
from cbalab.models.milp import dynamic
from cbalab.models.milp.dynamic import Cluster, certified_bound, matrix, settle
from cbalab.models.milp.statement import Arrays
from cbalab.models.solve import solve_arrays

BIG = 2.0**53


def test_exact_arithmetic_is_exact() -> None:
    """The arithmetic every exact bound of docs/model.md §8 rests on: sums and dot products of floats equal the
    Fraction sums of their exact values (subnormals, signed zeros and 2^53-scale cancellation included), and
    rounding goes to the stated side."""
    rng = np.random.default_rng(0)
    x = np.concatenate([[BIG, 3.0, -BIG, 5e-324, -0.0, 0.1], rng.normal(size=200) * 10.0 ** rng.integers(-30, 30, 200)])
    y = rng.normal(size=x.size)
    assert exact_sum(x) == sum((Fraction(v) for v in x), Fraction(0))
    assert exact_dot(x, y) == sum((Fraction(a) * Fraction(b) for a, b in zip(x, y)), Fraction(0))
    tenth = Fraction(1, 10)
    assert Fraction(round_down(tenth)) < tenth < Fraction(round_up(tenth))
    assert round_down(Fraction(3)) == 3.0 == round_up(Fraction(3))
    assert safe_float(4.0, Fraction(3), lower=True) == 3.0
    assert safe_float(2.0, Fraction(3), lower=True) == 2.0  # already safe: kept


def _two_datasets(rates: tuple[float, float], mu_b: float = math.inf) -> Instance:
    """Two datasets too large to cache with profit, one job each, p_c = p_b = 1, no GPU bill."""
    return build(
        dataset_size_gb=[2.0**60, 2.0**60],
        job_dataset=[0, 1],
        job_gpus=[0, 0],
        job_io_gbps=list(rates),
        cache_gb=0.0,
        bandwidth_gbps=mu_b,
        prices=(0.0, 1.0, 1.0),
    )


def test_lemma2_weak_dual_safe_where_the_float_sum_rounds_up() -> None:
    """Lemma 2 of proofs/cba_optimality.md in floating point: D(λ, μ) ≤ the optimum.

    Rates 2^53 and 3 GB/s, nothing worth caching: the least IO cost is exactly 2^53 + 3, and the float sum of
    D(0, 0) is 2^53 + 4, above it.  With μ = 1 and B = 2^53 + 3 the bound cancels down to D = 3 exactly, and
    the float value reads 2 ulps of 2^53 higher.  weak_dual returns the largest float below the exact value."""
    inst = _two_datasets((BIG, 3.0))
    R = inst.dataset_demand(inst.job_io_gbps)
    naive = float(np.minimum(1.0 * R, 1.0 * inst.dataset_size_gb).sum())
    optimum = Fraction(2**53 + 3)
    assert Fraction(naive) > optimum
    assert weak_dual_exact(inst, R, 0.0, 0.0) == optimum
    assert Fraction(weak_dual(inst, R, 0.0, 0.0)) <= optimum
    assert weak_dual(inst, R, 0.0, 0.0) == BIG + 2.0
    capped = _two_datasets((BIG / 2, 1.5), mu_b=BIG / 2 + 1.5)
    Rc = capped.dataset_demand(capped.job_io_gbps)
    naive_mu = float(np.minimum(2.0 * Rc, 1.0 * capped.dataset_size_gb).sum()) - 1.0 * capped.bandwidth_gbps
    exact_mu = weak_dual_exact(capped, Rc, 0.0, 1.0)
    assert Fraction(naive_mu) > exact_mu
    assert Fraction(weak_dual(capped, Rc, 0.0, 1.0)) <= exact_mu
    # The same sums at 2^-600 GB/s: outside the range of the error-free float products, decided on the integers.
    tiny = _two_datasets((BIG * 2.0**-600, 3.0 * 2.0**-600))
    Rt = tiny.dataset_demand(tiny.job_io_gbps)
    assert (
        Fraction(weak_dual(tiny, Rt, 0.0, 0.0)) <= weak_dual_exact(tiny, Rt, 0.0, 0.0) == optimum * Fraction(1, 2**600)
    )


@settings(max_examples=30)
@given(cost_instances())
def test_lemma2_weak_dual_keeps_its_bits_when_safe(inst: Instance) -> None:
    """Lemma 2 of proofs/cba_optimality.md: weak_dual is never above the exact D, and equals the plain float
    evaluation whenever that is not above it (results are compared bit for bit with committed runs)."""
    R = inst.dataset_demand(np.where(inst.has_fixed, inst.job_io_gbps, 0.0))
    for lam, mu in ((0.0, 0.0), (0.37, 0.0), (0.0, 0.21)):
        if mu > 0 and not math.isfinite(inst.bandwidth_gbps):
            continue
        terms = np.minimum((inst.price_bandwidth + mu) * R, (inst.price_cache + lam) * inst.dataset_size_gb)
        plain = float(terms.sum()) - (mu * inst.bandwidth_gbps if mu > 0 else 0.0) - lam * inst.cache_gb
        exact = weak_dual_exact(inst, R, lam, mu)
        got = weak_dual(inst, R, lam, mu)
        assert Fraction(got) <= exact
        assert got == (plain if Fraction(plain) <= exact else round_down(exact))


def _cancelling_lp() -> Arrays:
    """min x0 + x1 + x2 s.t. x0 ≥ 2^53, x1 ≥ 3, x2 ≥ −2^53 (rows), −2^54 ≤ x ≤ 2^54: optimum exactly 3."""
    one = np.ones(3)
    return Arrays(
        cost=one.copy(),
        col_lo=-(2.0**54) * one,
        col_hi=2.0**54 * one,
        integral=np.zeros(3, dtype=bool),
        start=np.array([0, 1, 2, 3], dtype=np.int32),
        index=np.array([0, 1, 2], dtype=np.int32),
        value=one.copy(),
        row_lo=np.array([BIG, 3.0, -BIG]),
        row_hi=np.full(3, np.inf),
        maximize=False,
        offset=0.0,
        objective_scale=1.0,
        unit=one.copy(),
        blocks={"x": slice(0, 3)},
        rows={"r": slice(0, 3)},
    )


def _dual_bound(
    a: Arrays, row_lo: np.ndarray, row_hi: np.ndarray, col_lo: np.ndarray, col_hi: np.ndarray, dual: np.ndarray
) -> Fraction | None:
    """The exact weak-duality bound of ``a``'s costs and matrix with these sides at ``dual`` (None: −∞), the
    ``bound`` of lp_dual_value (docs/model.md §8)."""
    out = lp_dual_value(a.cost, a.start, a.index, a.value, row_lo, row_hi, col_lo, col_hi, dual)
    return None if out is None else out.bound


def test_neumaier_shcherbina_bound_is_exact_where_numpy_cancels() -> None:
    """The weak-duality value of row duals (proofs/dynamic_lower_bound.md, "Every reported bound is certified";
    docs/model.md §8): at the optimal duals y = (1, 1, 1) numpy's value (``certified_bound``) is
    2^53 + 4 − 2^53 = 4, above the optimum 3; the exact value is 3, and HiGHS's LP optimum as reported by
    solve_arrays is not above it."""
    a = _cancelling_lp()
    y = np.ones(3)
    assert certified_bound(a, y) == 4.0
    exact = _dual_bound(a, a.row_lo, a.row_hi, a.col_lo, a.col_hi, y)
    assert exact == 3
    out, _, facts = solve_arrays(a)
    assert out.status == "optimal"
    assert out.bound is not None and Fraction(out.bound) <= 3
    assert facts["safe_bound"] == out.bound


def test_neumaier_shcherbina_needs_finite_sides() -> None:
    """docs/model.md §8: a dual against an infinite row side counts as 0; a reduced cost against an infinite
    column bound is repaired exactly through a row whose dual may take the sign needed (from y = 0 the repair
    finds the optimal duals here), and without such a row the duals prove nothing (None)."""
    a = _cancelling_lp()
    free = np.full(3, np.inf)
    assert _dual_bound(a, a.row_lo, a.row_hi, -free, free, np.ones(3)) == 3
    assert _dual_bound(a, a.row_lo, a.row_hi, -free, free, np.zeros(3)) == 3
    upper_only = (-free, np.array([BIG, 3.0, -BIG]))  # rows A x ≤ hi: y ≤ 0 cannot cancel a cost of +1
    assert _dual_bound(a, *upper_only, -free, free, np.zeros(3)) is None
    # y = −1 on a row without an upper side is clipped to 0: the bound is then that of y = 0 on that row.
    clipped = _dual_bound(a, a.row_lo, a.row_hi, a.col_lo, a.col_hi, -np.ones(3))
    assert clipped == -3 * 2**54


@pytest.mark.parametrize("problem", ["cost", "welfare"])
def test_lp_bounds_are_safe_and_keep_their_bits(problem: str) -> None:
    """docs/model.md §8 on the LP relaxations of P1 and P2 (the registered ``lp``): the reported bound is on
    the safe side of the exact Neumaier–Shcherbina value of HiGHS's duals, equal to HiGHS's optimum whenever that
    is, and meets the referee's score within the tolerance (8.2) (duals tight enough to certify)."""
    from cbalab.models import solve as solve_module

    seen: list[tuple[float, float | None, Fraction | None, bool]] = []
    original = solve_module._safe_lp_bound

    def spy(arrays: Arrays, sol: Any, bound: float) -> tuple[float | None, Any]:
        flip = -1.0 if arrays.maximize else 1.0
        y = flip * np.asarray(sol.row_dual, dtype=float)
        minimum = replace(arrays, cost=flip * arrays.cost)
        exact = _dual_bound(minimum, arrays.row_lo, arrays.row_hi, arrays.col_lo, arrays.col_hi, y)
        out, dual = original(arrays, sol, bound)
        assert dual is not None and dual.bound == exact
        signed = None if exact is None else (-exact if arrays.maximize else exact)
        scaled = None if signed is None else Fraction(arrays.objective_scale) * (signed + Fraction(arrays.offset))
        seen.append((bound, out, scaled, arrays.maximize))
        return out, dual

    solve_module._safe_lp_bound = spy
    try:
        for seed in range(4):
            inst = cbalab.generate(problem, jobs=60, datasets=12, seed=seed)
            res = cbalab.solve(inst, "lp")
            assert res.bound is not None
    finally:
        solve_module._safe_lp_bound = original
    assert seen
    for highs, out, exact, maximize in seen:
        assert out is not None and exact is not None
        safe = (Fraction(highs) >= exact) if maximize else (Fraction(highs) <= exact)
        assert (Fraction(out) >= exact) if maximize else (Fraction(out) <= exact)
        assert out == (highs if safe else (round_up(exact) if maximize else round_down(exact)))
        assert abs(out - highs) <= tolerance(highs, abs(highs))


def _binary_model(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """A small min cᵀx, lo ≤ Mx ≤ hi, x binary, in whole numbers (so that every point's value is exact)."""
    n, m = int(rng.integers(2, 8)), int(rng.integers(1, 4))
    dense = rng.integers(-3, 4, size=(m, n)).astype(float)
    lo = np.where(rng.random(m) < 0.5, -np.inf, rng.integers(-2, 2, m).astype(float))
    hi = np.where(rng.random(m) < 0.3, np.inf, rng.integers(0, 5, m).astype(float))
    cost = rng.integers(-9, 10, n).astype(float)
    return cost, dense, lo, np.maximum(lo, hi)


@given(st.integers(0, 2**32 - 1))
def test_theorem_f5_fixing_keeps_every_point_as_good_as_the_target(seed: int) -> None:
    """Theorem F5 (ii), proofs/welfare_milp_forms.md: with any row multipliers and any target T, a column the
    exact reduced costs fix holds its side at every integer point of value at most T (every point of small
    random binary models enumerated, targets around the points' values, ties included)."""
    rng = np.random.default_rng(seed)
    cost, dense, lo, hi = _binary_model(rng)
    m, n = dense.shape
    start = np.arange(m + 1) * n
    index, value = np.tile(np.arange(n), m), dense.ravel()
    dual = rng.normal(size=m) * rng.choice([0.0, 0.5, 3.0], size=m)
    out = lp_dual_value(cost, start, index, value, lo, hi, np.zeros(n), np.ones(n), dual)
    assert out is not None
    points = [np.array(x, dtype=float) for x in itertools.product((0, 1), repeat=n)]
    feasible = [x for x in points if np.all(dense @ x >= lo) and np.all(dense @ x <= hi)]
    values = sorted({Fraction(float(cost @ x)) for x in feasible} | {out.bound - 1, out.bound + Fraction(1, 3)})
    for target in values:
        cols = out.fixed(target, np.ones(n, dtype=bool))
        assert np.isin(out.side[cols], (0.0, 1.0)).all()
        for x in feasible:
            if Fraction(float(cost @ x)) <= target:
                assert (x[cols] == out.side[cols]).all(), (target, x, cols)


def test_theorem_f5_fixing_is_decided_exactly_where_the_float_sum_rounds() -> None:
    """Theorem F5 of proofs/welfare_milp_forms.md, "Floating point": costs (1, −2⁵³, −1) on three binaries, no
    rows.  D = −2⁵³ − 1 exactly,
    but the float sum reads −2⁵³; against the target T = −2⁵³ (the value of the point (1, 1, 1)) the float gap
    T − D is 0, which would fix the first column at 0 and cut that point; the exact gap is 1 = abs(r_0), so
    only the second column is fixed (at 1)."""
    cost = np.array([1.0, -BIG, -1.0])
    none = np.array([], dtype=float)
    out = lp_dual_value(
        cost, np.zeros(1, dtype=np.int64), none.astype(np.int64), none, none, none, np.zeros(3), np.ones(3), none
    )
    assert out is not None and out.bound == -(2**53) - 1
    float_bound = float(np.sum(cost * np.array([0.0, 1.0, 1.0])))
    target = Fraction(float(cost.sum()))
    assert target == -(2**53) and abs(cost[0]) > float(target) - float_bound  # the float test would fix column 0
    whole = np.ones(3, dtype=bool)
    assert out.fixed(target, whole).tolist() == [1]  # abs(r_1) = 2⁵³ > 1: x_1 = 0 costs at least 0 − 1 > T
    assert out.fixed(target - 1, whole).tolist() == [0, 1, 2]  # one below, only the point (0, 1, 1) is kept


def test_theorem_d_exact_lagrangian_matches_and_bounds_autocba() -> None:
    """Theorem D of proofs/autocba_certificate.md in floating point: the exact L at the certificate's multipliers
    agrees with the float L to 1e-9, the certificate's bound (with its 1e-9 margin) is at or above it, and the
    bound AutoCBA reports is at or above the exact value (models/exact_bounds.welfare_lagrangian_exact)."""
    for seed in range(3):
        given_inst = cbalab.generate("welfare", jobs=80, datasets=10, seed=seed)
        inst = accepted_limits(given_inst)  # as AutoCBA certifies: every allocation the referee accepts
        cert = welfare_bound(inst)
        dual = Dual(inst)
        exact = welfare_lagrangian_exact(inst, dual.U, dual.G, dual.R, tuple(cert.multipliers))
        floated = min(dual.value(np.asarray(cert.multipliers), dual.U), dual.top)
        assert float(exact) == pytest.approx(floated, rel=1e-9, abs=1e-9)
        assert Fraction(cert.bound) >= exact
        alloc = autocba(given_inst)
        assert alloc.bound is not None and Fraction(alloc.bound) >= exact


def test_theorem_d_exact_lagrangian_catches_a_rounded_down_bound() -> None:
    """Theorem D of proofs/autocba_certificate.md: an upper bound handed in below the exact L (as a float sum that
    cancelled could give) is raised to the least float above it; one above it keeps its bits."""
    inst = accepted_limits(cbalab.generate("welfare", jobs=30, datasets=5, seed=4))
    cert = welfare_bound(inst)
    dual = Dual(inst)
    exact = welfare_lagrangian_exact(inst, dual.U, dual.G, dual.R, tuple(cert.multipliers))
    low = float(exact) * (1 - 1e-6)
    assert safe_float(low, exact, lower=False) == round_up(exact)
    assert safe_float(cert.bound, exact, lower=False) == cert.bound


def test_verdict_reports_a_negative_gap_as_zero_with_its_reason() -> None:
    """docs/model.md (8.2) and §8: a lower bound above the cost within the tolerance is clipped to the cost (gap 0)
    and the verdict's note says by how much and why; a bound beyond the tolerance is dropped."""
    v = verdict(100.0, 100.0 + 1e-5, minimise=True, tol=1e-4, claimed="optimal", source="the LP optimum")
    assert v.status == "optimal" and v.bound == 100.0
    assert v.note is not None and "gap as 0" in v.note and "the LP optimum" in v.note
    assert verdict(100.0, 99.99999, minimise=True, tol=1e-4, claimed="optimal").note is None
    dropped = verdict(100.0, 101.0, minimise=True, tol=1e-4, claimed="optimal")
    assert dropped.status == "feasible" and dropped.bound is None


def test_tolerance_counts_the_resolution_of_the_score() -> None:
    """docs/model.md (8.2) and proofs/cba_optimality.md, "Floating point and the slack in H2": the tolerance has a
    floating-point part of FLOAT_ULPS units in the last place of the score, so that two numbers equal in exact
    arithmetic but rounded apart (a 7e-9 $/h IO cost beside a 32 $/h GPU bill) are not refused; it is below 1e-15
    of the score."""
    assert tolerance(32.000000007, 7e-9, 32.0) == pytest.approx(1e-6 * 7e-9 + 1e-9 * 7e-9 + FLOAT_ULPS * math.ulp(32.0))
    assert FLOAT_ULPS * math.ulp(1.0) < 1e-15


def _settle_rounds(built: Any, cluster: Cluster, values: dict[str, np.ndarray]) -> int:
    """The number of rounds of the repair loop of Lemma 6 (``_settle_warmup``'s ``while``) in one ``settle``."""
    code = dynamic._settle_warmup.__code__
    loop_line = code.co_firstlineno + next(
        i for i, line in enumerate(_source_lines(code)) if line.strip().startswith("while todo.size")
    )
    hits = [0]

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == loop_line:
            hits[0] += 1
        return local

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code is code else None

    sys.settrace(tracer)
    try:
        settle(values, built, cluster, warmup=True)
    finally:
        sys.settrace(None)
    return max(hits[0] - 1, 0)  # the last test of the condition ends the loop


def _source_lines(code: Any) -> list[str]:
    import inspect

    return inspect.getsource(code).splitlines()


def lemma6_corpus(seeds: range) -> list[tuple[int, int, int]]:
    """(rounds, longest chain of pairs, pairs) of ``settle`` with warm-up on seeded traces (experiments/workload):
    random points and all-zero points, caches that bind or not."""
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(3, 40)), int(rng.integers(1, 6))
        w = assign(generate_trace(n, seed), seed, skew=float(rng.choice([0.0, 1.0, 2.0])), n_datasets=k)
        w.jobs["io_gbps"] = w.jobs["io_gbps"] * float(rng.choice([1.0, 30.0]))
        total = float(w.datasets["size_gb"].sum())
        cfg = SimConfig(
            policy="cba",
            gpus=max(64, int(w.jobs["gpus"].max())),
            cache_gb=total * float(rng.choice([0.3, 0.7, 1.5])),
            prices=(2.5, 0.0004, 0.9),
            period_s=float(rng.choice([120.0, 500.0])),
        )
        sched = replay_schedule(w, simulate(w, cfg).jobs, period_s=cfg.period_s)
        cluster = Cluster(cache_gb=cfg.cache_gb, bandwidth_gbps=math.inf, price_cache=0.0004, price_bandwidth=0.9)
        built = matrix(sched, cluster, warmup=True)
        lay, cols, rows = built
        if lay.n_pairs == 0:
            continue
        chain = int(np.bincount(lay.k).max())
        for point in ("random", "zero"):
            if point == "random":
                values = {name: rng.uniform(-0.2, 1.2, idx.size) * rows.col_hi[idx] for name, idx in cols.items()}
            else:
                values = {name: np.zeros(idx.size) for name, idx in cols.items()}
            out.append((_settle_rounds(built, cluster, values), chain, lay.n_pairs))
    return out


def test_lemma6_repair_rounds_at_most_the_longest_chain() -> None:
    """Lemma 6 of proofs/dynamic_lower_bound.md (how fast the repair loop ends): a round redoes only successors of
    pairs redone in the round before, so the rounds are at most the longest chain of one dataset's pairs; on the
    seeded corpus they are far fewer.  The worst case stated in the proof was measured by
    ``python -c "import sys; sys.path.insert(0, 'tests'); from test_safe_bounds import lemma6_corpus; ..."``
    (the proof gives the command in full)."""
    corpus = lemma6_corpus(range(12))
    assert corpus
    for rounds, chain, _ in corpus:
        assert 1 <= rounds <= chain


def test_exact_bounds_module_is_free_of_solvers() -> None:
    """docs/model.md §8: the checker re-derives each bound from the data and the multipliers alone; it imports no
    solver and no algorithm (it is the small, separate piece a reader audits)."""
    import inspect

    source = inspect.getsource(exact_bounds)
    for banned in ("highspy", "pyomo", "cbalab.algorithms", "scipy"):
        assert banned not in source


def _p3_case(n: int, seed: int, k: int, share: float) -> tuple[Any, Cluster]:
    """A small replay's schedule (experiments/workload) whose cache C, ``share`` of the datasets' sizes, binds."""
    w = assign(generate_trace(n, seed), seed, skew=1.0, n_datasets=k)
    w.jobs["io_gbps"] = w.jobs["io_gbps"] * 30.0
    cfg = SimConfig(policy="cba", gpus=64, cache_gb=share * float(w.datasets["size_gb"].sum()))
    return replay_schedule(w, simulate(w, cfg).jobs, period_s=None), Cluster(cache_gb=cfg.cache_gb)


@pytest.mark.parametrize(("n", "seed", "exact_min_gb"), [(12, 1, 0.0), (12, 2, math.inf), (40, 3, 1.0)])
def test_theorem4_p3_lagrange_bound_is_safe(
    monkeypatch: pytest.MonkeyPatch, n: int, seed: int, exact_min_gb: float
) -> None:
    """Theorem 4 (iv) of proofs/dynamic_lower_bound.md in floating point: the bound P3's decomposition reports is at
    or below the exact L of its best iterate (chunks' duals, instant closed forms and the multipliers' terms,
    re-derived exactly), equal to the float maximum whenever that is, and the gap it reports is never negative."""
    from cbalab.models.milp import p3_lagrange

    seen: list[Fraction] = []
    original = p3_lagrange._exact_value

    def spy(*args: Any) -> Fraction:
        seen.append(original(*args))
        return seen[-1]

    monkeypatch.setattr(p3_lagrange, "_exact_value", spy)
    schedule, cluster = _p3_case(n, seed, 3, 0.5)
    out = p3_lagrange.solve_lagrange(schedule, cluster, iterations=8, exact_min_gb=exact_min_gb, chunk_pairs=64)
    assert len(seen) == 1
    top = max(max(out.bounds), 0.0)
    assert Fraction(out.bound) <= seen[0]
    assert out.bound == (top if Fraction(top) <= seen[0] else round_down(seen[0]))
    assert out.gap is None or out.gap >= 0.0


def test_theorem4_gap_reported_as_zero_when_the_bound_lies_above_the_schedule() -> None:
    """proofs/dynamic_lower_bound.md, "The gap is never negative": a settled schedule meets the rows to 1e-9
    relative, so its cost may lie under the bound; the gap is then 0, not negative."""
    from cbalab.models.milp.p3_lagrange import LagrangeResult

    above = LagrangeResult("optimal", 1.0, 1.0 + 1e-12, slots=1, iterations=1, at_limit=False)
    assert above.gap == 0.0
    below = LagrangeResult("feasible", 1.0, 0.5, slots=1, iterations=1, at_limit=False)
    assert below.gap == 0.5
