"""The trace-scale benchmark (experiments/runs/trace_scale.py): how it forms its ratio."""

from __future__ import annotations

import itertools

import pytest

from cbalab.experiments.runs import trace_scale
from cbalab.models.instance import InstanceError


@pytest.mark.slow
def test_autocba_ratio_is_that_of_the_median_times_of_the_repeats() -> None:
    """Each size runs ``repeats`` times, the same answer each time; the ratio is median over median."""
    out = trace_scale.measure(small=200, large=2000, repeats=3, autocba_only=True)
    times = out["autocba_cpu_s"]
    assert len(times["200"]) == len(times["2000"]) == 3
    small, large = sorted(times["200"])[1], sorted(times["2000"])[1]
    assert out["autocba_large_over_small"] == pytest.approx(large / small)
    assert "online_over_cost_replay" not in out
    answers = {(a["jobs"], a["welfare"]) for a in out["autocba"]}
    assert len(answers) == 2 and all(w > 0 for _, w in answers)


@pytest.mark.slow
def test_online_profile_splits_the_replay_into_disjoint_parts() -> None:
    """``bench trace-scale --profile``: the decisions' three parts and their rest add up to the decisions, which
    with the engine add up to the replay; on a window with full re-optimisations each part took some CPU."""
    out = trace_scale.online_profile(window=(0.0, 1.5e6))
    total = out["profiled_cpu_s"]
    parts = ["full re-optimisations", "local updates", "certificates", "rest of the decisions"]
    assert sum(out[p]["cpu_s"] for p in parts) == pytest.approx(out["decisions"]["cpu_s"])
    assert out["decisions"]["cpu_s"] + out["engine"]["cpu_s"] == pytest.approx(total)
    assert all(out[p]["cpu_s"] > 0 and out[p]["share"] == pytest.approx(out[p]["cpu_s"] / total) for p in parts)
    assert out["engine"]["cpu_s"] > 0


@pytest.mark.slow
def test_cost_profile_splits_the_cost_replay_into_disjoint_parts() -> None:
    """``bench trace-scale --profile``'s ``cost_profile``: CBA's solve, the rest of the policy's answer, the rest
    of ``reallocate``, the engine's other steps and the loop add up to the replay, and each took some CPU."""
    out = trace_scale.cost_profile(window=(0.0, 3e5))
    total = out.pop("profiled_cpu_s")
    assert set(out) == {
        "cba solve",
        "rest of the policy answer",
        "rest of reallocate",
        "next event",
        "advance",
        "depart",
        "admit",
        "feed",
        "loop",
    }
    assert sum(part["cpu_s"] for part in out.values()) == pytest.approx(total)
    assert all(part["cpu_s"] > 0 and part["share"] == pytest.approx(part["cpu_s"] / total) for part in out.values())


@pytest.mark.slow
def test_autocba_work_is_counted_in_calls_that_grow_at_most_linearly() -> None:
    """AutoCBA's linear growth, as a count no machine changes: the calls of AutoCBA's own functions are the same on a
    second run, and ten times the jobs make at most ten times the calls (AutoCBA's greedy does a bounded number
    of steps per job; a step that scanned every job would make it quadratic and fail here)."""
    a, b = trace_scale.autocba_work(400), trace_scale.autocba_work(400)
    assert a["calls"] == b["calls"] > 0 and a["steps"] == b["steps"] and a["heap_ops"] == b["heap_ops"] > 0
    assert sum(a["steps"].values()) == a["calls"] and a["calls_per_job"] == a["calls"] / 400
    growth = trace_scale.work_growth(400, 4000)
    assert 1.0 < growth["calls_ratio"] <= 10.0
    assert growth["calls_ratio"] == growth["4000"]["calls"] / growth["400"]["calls"]
    assert all(set(counts) == {"400", "4000"} for counts in growth["steps"].values())


def test_no_repeats_is_bad_input() -> None:
    with pytest.raises(InstanceError, match="repeats"):
        trace_scale.measure(small=200, large=2000, repeats=0, autocba_only=True)


@pytest.mark.slow
def test_p3_trace_limits_apply_to_the_measurement_only(monkeypatch) -> None:
    """``cbalab bench p3-trace --exact-share S --chunk-pairs P --window-slots W`` (experiments/runs/p3_trace.py)
    solves the whole schedule by the decomposition under those limits, reports them, and leaves the TRACE_* limits
    of ``--offline-optimum`` as they were; a window below 0 is refused naming the option."""
    from cbalab.experiments.runs import p3_trace
    from cbalab.models.milp import p3_lagrange

    monkeypatch.setattr(p3_lagrange, "LARGE_PAIRS", 0)  # 300 jobs are a "large" schedule: the decomposition runs
    before = (p3_lagrange.TRACE_EXACT_SHARE, p3_lagrange.TRACE_CHUNK_PAIRS)
    out = p3_trace.measure(jobs=300, exact_share=0.5, chunk_pairs=64, window_slots=7)
    assert out["limits"]["exact_share"] == 0.5 and out["limits"]["chunk_pairs"] == 64
    assert out["limits"]["window_slots"] == 7
    assert out["p3_method"] == "lagrange" and out["p3_bound"] <= out["cba_io"] * (1 + 1e-9)
    assert before == (p3_lagrange.TRACE_EXACT_SHARE, p3_lagrange.TRACE_CHUNK_PAIRS)
    assert p3_lagrange.TraceLimits() == p3_lagrange.TRACE_LIMITS
    # The limits reach the decomposition: a larger exact share solves fewer datasets by their warm-up rows.
    default = p3_trace.measure(jobs=300)
    assert default["limits"] == p3_lagrange.TRACE_LIMITS._asdict()
    exact = [int(m.split(" exact chunk LP(s) of ")[1].split()[0]) for m in (out["p3_message"], default["p3_message"])]
    assert exact[0] < exact[1], exact
    with pytest.raises(InstanceError, match="window_slots"):
        p3_trace.measure(jobs=300, window_slots=-1)


@pytest.mark.slow
def test_p3_sides_place_p3_between_the_certified_sides_and_windows_never_raise_the_cost() -> None:
    """``cbalab bench p3-sides --exact --window W`` (experiments/runs/p3_sides.py): the proven P3* lies between the
    trace limits' bound and schedule, and above the all-exact bound (Theorem 4 of proofs/dynamic_lower_bound.md:
    every L(μ, ν) ≤ P3*); each pass of window re-solves keeps a checked schedule that costs no more than the
    one it started from (the old point is a point of every window's LP) and no less than P3*."""
    from cbalab.experiments.runs import p3_sides

    out = p3_sides.measure(jobs=150, exact=True, window=60, sweeps=2)
    star, trace = out["p3"], out["trace"]
    assert star["status"] == "optimal"
    tol = 1e-9 * star["cost_io"]
    assert trace["bound"] <= star["cost_io"] + tol and out["all_exact"]["bound"] <= star["cost_io"] + tol
    assert star["cost_io"] <= trace["cost_io"] + tol
    assert out["bound_below_p3"] >= -1e-9 and out["schedule_above_p3"] >= -1e-9
    costs = [trace["cost_io"], *(one["cost_io"] for one in out["windows"]["passes"])]
    assert None not in costs and len(costs) == 3
    assert all(one["unsolved"] == 0 for one in out["windows"]["passes"])
    for before, after in itertools.pairwise(costs):
        assert star["cost_io"] - tol <= after <= before + tol, costs
    with pytest.raises(InstanceError, match="window"):
        p3_sides.measure(jobs=150, window=-1)
