"""P3 by Lagrangian decomposition (models/milp/p3_lagrange.py).

Each test names the part of Theorem 4 of proofs/dynamic_lower_bound.md (the Lagrangian dual of the
dualised capacity rows bounds P3 from below) that it checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cbalab.experiments.simulate import SimConfig, replay_schedule, simulate
from cbalab.experiments.workload import assign, generate_trace
from cbalab.models.instance import InstanceError
from cbalab.models.milp import dynamic
from cbalab.models.milp.dynamic import (
    Cluster,
    Deadline,
    Schedule,
    instant_bound,
    matrix,
    settle,
    solve_dynamic,
)
from cbalab.models.milp.p3_lagrange import LagrangeResult, solve_lagrange


def _case(n: int, seed: int, k: int, share: float, period: float | None = None) -> tuple[Schedule, Cluster, float]:
    """A small replay's schedule whose cache C (``share`` of the datasets' sizes) binds, its cluster, CBA's IO."""
    w = assign(generate_trace(n, seed), seed, skew=1.0, n_datasets=k)
    w.jobs["io_gbps"] = w.jobs["io_gbps"] * 30.0
    cfg = SimConfig(policy="cba", gpus=64, cache_gb=share * float(w.datasets["size_gb"].sum()), period_s=period)
    res = simulate(w, cfg)
    schedule = replay_schedule(w, res.jobs, period_s=period)
    return schedule, Cluster(cache_gb=cfg.cache_gb), float(res.summary["cost"]["io"])


@settings(max_examples=max(4, settings().max_examples // 15))
@given(
    st.integers(4, 12),
    st.integers(0, 10_000),
    st.integers(2, 4),
    st.sampled_from([0.2, 0.5, 0.8]),
    st.sampled_from([None, 64, 3]),
    st.sampled_from([0.0, 1.0, math.inf]),
    st.sampled_from([math.inf, 0.05]),
)
def test_every_iterate_is_below_the_lp(n, seed, k, share, chunk, exact_min_gb, bandwidth) -> None:
    """Theorem 4 (i)–(iv) of proofs/dynamic_lower_bound.md: every iteration's L ≤ P3*, for whole, chunked and
    instant subproblems, with and without a finite B; the settled schedule meets every row of P3."""
    schedule, cluster, _ = _case(n, seed, k, share)
    if math.isfinite(bandwidth):
        cluster = Cluster(cache_gb=cluster.cache_gb, bandwidth_gbps=bandwidth * float(schedule.demand.sum(0).max()))
    exact = solve_dynamic(schedule, cluster)
    if exact.status == "infeasible":
        return
    assert exact.status == "optimal"
    out = solve_lagrange(schedule, cluster, iterations=6, chunk_pairs=chunk, exact_min_gb=exact_min_gb, upper_every=3)
    top = exact.cost_io * (1 + 1e-9) + 1e-12
    assert max(out.bounds) <= top
    assert out.bound == pytest.approx(max(0.0, max(out.bounds)))
    if out.cost_io is not None:
        assert out.cost_io >= exact.bound * (1 - 1e-9) - 1e-12
        _assert_priced_and_feasible(out, schedule, cluster)


def _assert_priced_and_feasible(out: LagrangeResult, schedule: Schedule, cluster: Cluster) -> None:
    """The reported cost is the prices' cost of the reported schedule, and that schedule meets every row of P3
    (settling it again finds nothing the check refuses; Lemma 6 of proofs/dynamic_lower_bound.md)."""
    assert out.cost_io is not None
    built = matrix(schedule, cluster)
    x = np.zeros(built.rows.n_cols)
    for name, idx in built.cols.items():
        x[idx] = out.values[name]
    assert float(built.rows.cost @ x) == pytest.approx(out.cost_io, rel=1e-12, abs=1e-15)
    assert settle(out.values, built, cluster, warmup=True) is not None


@pytest.mark.parametrize("chunk", [None, 16])
@pytest.mark.parametrize("bandwidth", [math.inf, 0.5])
def test_resource_directive_schedule_meets_every_row(chunk: int | None, bandwidth: float) -> None:
    """Lemma 7 of proofs/dynamic_lower_bound.md: the resource-directive step (each exact dataset re-solved at the
    true prices within its share of C and B, chunk by chunk from a fixed start fill) gives a schedule that meets
    every row of the whole P3, so exact LP optimum ≤ its cost, and never a dearer one than without the step;
    the bound is not touched (≤ the exact LP optimum), on windows where C binds, whole and chunked, with a
    finite B (half the largest slot's demand: binding, and on some windows infeasible or without a schedule
    before the step, which are skipped)."""
    checked = 0
    for n, seed, k, share in ((10, 11, 3, 0.3), (12, 5, 3, 0.5), (16, 2, 4, 0.2)):
        schedule, cluster, _ = _case(n, seed, k, share)
        if math.isfinite(bandwidth):
            top = bandwidth * float(schedule.demand.sum(0).max())
            cluster = Cluster(cache_gb=cluster.cache_gb, bandwidth_gbps=top)
        exact = solve_dynamic(schedule, cluster)
        limits = {"iterations": 2, "chunk_pairs": chunk, "upper_every": 2}
        before = solve_lagrange(schedule, cluster, directed=False, **limits)
        if exact.status == "infeasible" or before.cost_io is None:
            continue
        assert exact.status == "optimal"
        out = solve_lagrange(schedule, cluster, **limits)
        assert out.bound == before.bound <= exact.cost_io * (1 + 1e-9) + 1e-12
        assert out.cost_io is not None
        assert exact.cost_io * (1 - 1e-9) - 1e-12 <= out.cost_io <= before.cost_io
        checked += 1
        _assert_priced_and_feasible(out, schedule, cluster)
    assert checked >= 1


def test_resource_directive_step_is_no_dearer_on_its_own() -> None:
    """Lemma 7 of proofs/dynamic_lower_bound.md, on the step itself: from a settled schedule, the re-solved
    trajectories meet the coupling rows before any settling (each dataset keeps to its share plus what the others
    leave free), and once settled and checked they cost at most the schedule they came from."""
    from cbalab.models.milp import p3_lagrange

    schedule, cluster, _ = _case(16, 2, 4, 0.2)
    out = solve_lagrange(schedule, cluster, iterations=1, chunk_pairs=16, directed=False)
    assert out.cost_io is not None
    lay = dynamic.layout(schedule)
    pieces = p3_lagrange.chunks(schedule, np.unique(lay.k), 16, p3_lagrange.CHUNK_HIGHS)
    traj = p3_lagrange._directed(schedule, cluster, out.values, pieces)
    used = (traj["y"] * schedule.size_gb[:, None]).sum(axis=0)
    assert (used <= cluster.cache_gb * (1 + 1e-9) + 1e-12).all()
    point = p3_lagrange._upper(schedule, cluster, traj, np.empty(0, dtype=np.int64))
    assert point is not None and point[1] <= out.cost_io * (1 + 1e-9)


@pytest.mark.parametrize("window", [2, 5, 10_000])
@pytest.mark.parametrize("bandwidth", [math.inf, 0.5])
def test_joint_windows_meet_every_row_and_reach_p3_when_whole(window: int, bandwidth: float) -> None:
    """Lemma 8 of proofs/dynamic_lower_bound.md: the joint window step (the exact datasets re-solved together over
    windows of slots, with the capacity rows of the window) gives a schedule that meets every row of the whole
    P3, so exact LP optimum ≤ its cost, and no dearer one than the resource-directive step alone (to HiGHS's
    dual tolerance on the scaled costs, 1e-9, which the lemma's floating-point clause allows; the bound is not
    touched); with one window over every slot (every dataset exact here) its LP is P3 itself, so the schedule
    costs P3* to the same tolerance.  On windows where C binds, with B infinite or binding (windows that are
    infeasible, or have no schedule before the step, are skipped)."""
    checked = 0
    for n, seed, k, share in ((12, 5, 3, 0.5), (16, 2, 4, 0.2), (24, 3, 5, 0.2), (30, 9, 6, 0.25)):
        schedule, cluster, _ = _case(n, seed, k, share)
        if math.isfinite(bandwidth):
            top = bandwidth * float(schedule.demand.sum(0).max())
            cluster = Cluster(cache_gb=cluster.cache_gb, bandwidth_gbps=top)
        exact = solve_dynamic(schedule, cluster)
        limits = {"iterations": 1, "chunk_pairs": 16, "upper_every": 1}
        before = solve_lagrange(schedule, cluster, **limits)
        if exact.status == "infeasible" or before.cost_io is None:
            continue
        assert exact.status == "optimal" and exact.cost_io is not None
        out = solve_lagrange(schedule, cluster, window_slots=window, **limits)
        assert out.bound == before.bound
        assert out.cost_io is not None
        assert exact.cost_io * (1 - 1e-9) - 1e-12 <= out.cost_io <= before.cost_io * (1 + 1e-8)
        if window >= schedule.n_slots:
            assert out.cost_io <= exact.cost_io * (1 + 1e-8)
        checked += 1
        _assert_priced_and_feasible(out, schedule, cluster)
    assert checked >= 1


def test_joint_window_step_is_no_dearer_on_its_own() -> None:
    """Lemma 8 of proofs/dynamic_lower_bound.md, on the step itself: from a settled schedule, the joint windows'
    trajectories meet C in every slot before any settling (each window's capacity rows hold what the pairs outside
    it use), and once settled and checked they cost at most the schedule they came from, less here (the
    resource-directive step left a trade between datasets that the windows make)."""
    from cbalab.models.milp import p3_lagrange

    schedule, cluster, _ = _case(24, 3, 5, 0.2)
    out = solve_lagrange(schedule, cluster, iterations=1, chunk_pairs=16)
    assert out.cost_io is not None
    start = p3_lagrange.trajectories(schedule, out.values)
    traj, unsolved = p3_lagrange._joint_windows(schedule, cluster, start, np.arange(schedule.size_gb.size), 5)
    assert unsolved == 0
    used = (traj["y"] * schedule.size_gb[:, None]).sum(axis=0)
    assert (used <= cluster.cache_gb * (1 + 1e-9) + 1e-12).all()
    point = p3_lagrange._upper(schedule, cluster, traj, np.empty(0, dtype=np.int64))
    assert point is not None and point[1] < out.cost_io * (1 - 1e-6)


def test_regression_small_window_is_certified() -> None:
    """proofs/dynamic_lower_bound.md, "When P3 says `optimal`": a 4-job window costing 1.5e-4 $, where HiGHS's
    primal tolerance of 1e-9 left the settled cost 1.2e-6 above the bound (``feasible``), is certified by both
    paths, the datasets alone (Lemma 5 (i)) and the whole LP."""
    schedule, cluster, _ = _case(4, 904, 2, 0.2)
    alone = solve_dynamic(schedule, cluster)
    whole = dynamic._solve_matrix(schedule, cluster, warmup=True, relax=False, deadline=Deadline(None), threads=1)
    assert alone.status == whole.status == "optimal"
    assert "Lemma 5 (i)" in alone.message and "certified after" in whole.message
    assert alone.cost_io == pytest.approx(whole.cost_io, rel=1e-6)


@pytest.mark.parametrize("period", [None, 600.0])
def test_schedule_is_no_dearer_than_the_cba_replay(period: float | None) -> None:
    """Theorem 4 of proofs/dynamic_lower_bound.md, "The upper bound": with P1's duals the candidates include CBA's
    targets, which reach at least the replay's fill (the rows are relaxations of the simulator's dynamics,
    Lemmas 2 and 3) and pay no unfilled cache (Lemma 6, step 3), so the schedule found costs at most CBA's
    replay, on windows where C binds and where it does not."""
    for n, seed, share in ((8, 1, 0.2), (12, 4, 0.5), (20, 2, 0.8), (40, 5, 0.2)):
        schedule, cluster, cba = _case(n, seed, 3, share, period)
        out = solve_lagrange(schedule, cluster, iterations=1)
        assert out.cost_io is not None and out.cost_io <= cba * (1 + 1e-9)


def test_schedule_from_cba_targets_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Theorem 4 of proofs/dynamic_lower_bound.md, "The upper bound", as ``solve_trace`` uses it (``upper_every``
    0): only CBA's targets are settled (one candidate, where ``upper_every`` 1 settles the iterate's too), so the
    schedule is theirs, cut, ramped and settled, it meets every row of P3 and costs at most CBA's replay; without
    P1's duals there is then no schedule, and a negative ``upper_every`` is refused by name."""
    from cbalab.models.milp import p3_lagrange

    settled: list[int] = []
    uppers = p3_lagrange._uppers

    def counted(*args: object, **kwargs: object) -> object:
        settled.append(len(args[2]))  # type: ignore[arg-type]
        return uppers(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(p3_lagrange, "_uppers", counted)
    for n, seed, share in ((12, 4, 0.5), (40, 5, 0.2)):
        schedule, cluster, cba = _case(n, seed, 3, share)
        settled.clear()
        solve_lagrange(schedule, cluster, iterations=1, upper_every=1, directed=False)
        assert settled == [2]
        settled.clear()
        out = solve_lagrange(schedule, cluster, iterations=1, upper_every=0, directed=False)
        assert settled == [1]
        live = np.unique(dynamic.layout(schedule).k)
        point = p3_lagrange._upper(schedule, cluster, p3_lagrange._greedy_targets(schedule, cluster, live), live)
        assert point is not None and out.cost_io == point[1] <= cba * (1 + 1e-9)
        _assert_priced_and_feasible(out, schedule, cluster)
        alone = solve_lagrange(schedule, cluster, iterations=1, upper_every=0, priced=False, directed=False)
        assert alone.status == "bound_only" and alone.cost_io is None
    with pytest.raises(InstanceError, match="upper_every"):
        solve_lagrange(schedule, cluster, upper_every=-1)


def test_reaches_the_lp_optimum() -> None:
    """Theorem 4 (v) of proofs/dynamic_lower_bound.md: uncut, every dataset exact, the Lagrangian dual of the LP
    is tight; 40 subgradient steps come within 0.5 % of P3* on windows where C binds, and close at least half of
    the first iterate's gap (P1's duals), so the steps, not the start, get there."""
    for n, seed, k, share in ((8, 3, 2, 0.5), (10, 11, 3, 0.3), (12, 5, 3, 0.5)):
        schedule, cluster, _ = _case(n, seed, k, share)
        exact = solve_dynamic(schedule, cluster)
        assert exact.status == "optimal"
        out = solve_lagrange(schedule, cluster, iterations=40, upper_every=10)
        assert out.bound <= exact.cost_io * (1 + 1e-9) + 1e-12
        assert out.bound >= exact.cost_io * (1 - 5e-3)
        assert exact.cost_io - out.bound <= 0.5 * (exact.cost_io - out.bounds[0])
        assert out.cost_io is not None and out.gap is not None and out.gap >= -1e-9


def test_same_input_same_bound() -> None:
    """Theorem 4 of proofs/dynamic_lower_bound.md, determinism: a fixed iteration limit and no clock, so the same
    input twice gives identical bounds, iterates and schedules."""
    schedule, cluster, _ = _case(10, 7, 3, 0.4, period=500.0)
    one = solve_lagrange(schedule, cluster, iterations=5, chunk_pairs=16, upper_every=2)
    two = solve_lagrange(schedule, cluster, iterations=5, chunk_pairs=16, upper_every=2)
    assert one.bounds == two.bounds
    assert one.bound == two.bound and one.cost_io == two.cost_io
    assert one.values.keys() == two.values.keys()
    for name in one.values:
        assert np.array_equal(one.values[name], two.values[name])


def test_all_instant_starts_at_the_instant_bound() -> None:
    """Theorem 4 (iii) of proofs/dynamic_lower_bound.md: with every dataset instant, the first iterate (P1's duals
    per slot) is Σ_t Δ_t/3600 P1*(R_t), the closed form of instant caches (Lemma 5 (ii)); and it stays ≤ CBA's
    replay cost, a P3-feasible schedule (Theorem 1)."""
    schedule, cluster, cba_io = _case(12, 2, 3, 0.3)
    out = solve_lagrange(schedule, cluster, iterations=1, exact_min_gb=math.inf)
    assert out.bounds[0] == pytest.approx(instant_bound(schedule, cluster), rel=1e-9, abs=1e-15)
    assert out.bound <= cba_io * (1 + 1e-9)


def test_rejects_what_it_cannot_do() -> None:
    """The decomposition is for continuous caches and needs at least one iteration."""
    schedule, cluster, _ = _case(4, 1, 2, 0.5)
    with pytest.raises(InstanceError, match="granularity"):
        solve_lagrange(schedule, Cluster(cache_gb=cluster.cache_gb, granularity="dataset"))
    with pytest.raises(InstanceError, match="iterations"):
        solve_lagrange(schedule, cluster, iterations=0)


def test_offline_optimum_of_a_large_schedule(monkeypatch) -> None:
    """Theorem 4 and Theorem 1 of proofs/dynamic_lower_bound.md through the replay layer: without a time limit a
    schedule above LARGE_PAIRS goes to the decomposition, whose certified bound is ≤ the replay's IO cost (a
    P3-feasible schedule) and ≤ its own settled schedule's cost, the same twice."""
    from cbalab.experiments.simulate import offline_optimum
    from cbalab.models.milp import p3_lagrange

    w = assign(generate_trace(12, 5), 5, skew=1.0, n_datasets=3)
    w.jobs["io_gbps"] = w.jobs["io_gbps"] * 30.0
    cfg = SimConfig(policy="cba", gpus=64, cache_gb=0.5 * float(w.datasets["size_gb"].sum()))
    res = simulate(w, cfg)
    monkeypatch.setattr(p3_lagrange, "LARGE_PAIRS", 0)
    doc = offline_optimum(w, cfg, res)
    io = float(res.summary["cost"]["io"])
    assert doc["method"] == "lagrange" and doc["iterations"] <= p3_lagrange.TRACE_ITERATIONS
    assert 0 < doc["bound"] <= io * (1 + 1e-9)
    assert doc["cost_io"] is not None and doc["bound"] <= doc["cost_io"] * (1 + 1e-9)
    assert doc["gap_to_replay"] == pytest.approx((io - doc["bound"]) / io)
    again = offline_optimum(w, cfg, res)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in doc.items() if k != "seconds"}
    monkeypatch.setattr(p3_lagrange, "LARGE_PAIRS", 10**9)
    assert "method" not in offline_optimum(w, cfg, res)
