"""Hand-computed examples of the one referee (models/evaluate.py), docs/model.md §3-§5.

Every number below is worked out by hand in the comments, on one small instance:

    datasets  a: 10 GB,  b: 4 GB
    jobs      j0 reads a, 2 GPUs, r = 1.0 GB/s   options {2: r 1.0, U 10}
              j1 reads a, 1 GPU,  r = 0.5 GB/s   options {1: r 0.5, U 4}, {2: r 0.9, U 7}
              j2 reads b, 4 GPUs, r = 2.0 GB/s   options {4: r 2.0, U 20}
    prices    p_g = 1 $/GPU-h, p_c = 0.1 $/GB-h, p_b = 2 $/(GB/s)-h
    cluster   G = 8 GPUs, C = 12 GB, B = 3 GB/s, no budget
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbalab.models.evaluate import Allocation, _slack, evaluate, result, score
from cbalab.models.instance import Instance, build
from cbalab.models.kernels import exact_dot
from cbalab.models.types import Status


def base(**changes: object) -> Instance:
    """The instance of the module docstring (``changes`` replace fields)."""
    inst = build(
        dataset_size_gb=np.array([10.0, 4.0]),
        job_dataset=np.array([0, 0, 1]),
        job_gpus=np.array([2, 1, 4]),
        job_io_gbps=np.array([1.0, 0.5, 2.0]),
        cache_gb=12.0,
        bandwidth_gbps=3.0,
        gpus=8,
        prices=(1.0, 0.1, 2.0),
        options=(
            np.array([0, 1, 3, 4]),
            np.array([2, 1, 2, 4]),
            np.array([1.0, 0.5, 0.9, 2.0]),
            np.array([10.0, 4.0, 7.0, 20.0]),
        ),
        dataset_ids=("a", "b"),
        job_ids=("j0", "j1", "j2"),
    )
    return inst.replace(**changes) if changes else inst


def alloc(gpus: list[int], cache: list[float], bw: list[float], provisioned: float | None = None) -> Allocation:
    """An allocation from plain lists."""
    return Allocation(np.array(gpus), np.array(cache), np.array(bw), provisioned_gbps=provisioned)


def test_feasible_allocation_costs() -> None:
    # cache a = 5 (h_a = 0.5), b = 4 (h_b = 1): j0 needs 1.0·0.5 = 0.5, j1 0.5·0.5 = 0.25, j2 2·0 = 0.
    # cost: GPUs 1·(2+1+4) = 7; cache 0.1·9 = 0.9; bandwidth 2·0.75 = 1.5; total 9.4.
    ev = evaluate(base(), alloc([2, 1, 4], [5.0, 4.0], [0.5, 0.25, 0.0]), "cost")
    assert ev.feasible and ev.violations == []
    assert ev.cost_gpu == pytest.approx(7.0)
    assert ev.cost_cache == pytest.approx(0.9)
    assert ev.cost_bandwidth == pytest.approx(1.5)
    assert ev.cost_total == pytest.approx(9.4)
    assert ev.cost_io == pytest.approx(2.4)
    np.testing.assert_allclose(ev.hit_ratio, [0.5, 1.0])
    np.testing.assert_allclose(ev.stall_factor, [1.0, 1.0, 1.0])
    # every job runs at an option it has: welfare U = 10 + 4 + 20 = 34 even for the cost problem
    assert ev.welfare == pytest.approx(34.0)


def test_stalled_job_is_a_cost_violation() -> None:
    # Same cache, but j0 gets 0.25 < r (1 - h) = 0.5: it runs at x = 0.25 / (1 - 0.5) = 0.5 GB/s,
    # stall factor x / r = 0.5 — in P1 every job must be unstalled, so this is infeasible.
    ev = evaluate(base(), alloc([2, 1, 4], [5.0, 4.0], [0.25, 0.25, 0.0]), "cost")
    assert not ev.feasible
    assert len(ev.violations) == 1
    assert "bandwidth_gbps[j0]" in ev.violations[0] and "stalls" in ev.violations[0]
    np.testing.assert_allclose(ev.stall_factor, [0.5, 1.0, 1.0])
    # the bill is still scored: 7 + 0.9 + 2·0.5 = 8.9
    assert ev.cost_total == pytest.approx(8.9)


def test_cache_over_capacity() -> None:
    # a = 10, b = 4: 14 GB > C = 12.  Nothing stalls with b = 0 everywhere (h = 1 on both).
    ev = evaluate(base(), alloc([2, 1, 4], [10.0, 4.0], [0.0, 0.0, 0.0]), "cost")
    assert not ev.feasible
    assert ev.violations == ["total cache 14 GB exceeds the capacity C = 12"]
    assert ev.cost_cache == pytest.approx(1.4)


def test_cache_over_dataset_size() -> None:
    # a = 11 GB of a 10 GB dataset (continuous granularity): more than the dataset can use.
    ev = evaluate(base(), alloc([2, 1, 4], [11.0, 0.0], [0.0, 0.0, 2.0]), "cost")
    assert not ev.feasible
    assert any("cache_gb[a] = 11" in v and "exceeds what the dataset can use (10 GB)" in v for v in ev.violations)


def test_bandwidth_over_cap() -> None:
    # No cache: b = r = (1, 0.5, 2), Σ = 3.5 GB/s > B = 3.  Bill 2·3.5 = 7, total 14.
    ev = evaluate(base(), alloc([2, 1, 4], [0.0, 0.0], [1.0, 0.5, 2.0]), "cost")
    assert not ev.feasible
    assert ev.violations == ["total bandwidth 3.5 GB/s exceeds the cap B = 3"]
    assert ev.cost_total == pytest.approx(14.0)


def test_dataset_granularity() -> None:
    # Whole datasets only: a = 5 of 10 GB is neither 0 nor 10.
    inst = base(cache_granularity="dataset")
    ev = evaluate(inst, alloc([2, 1, 4], [5.0, 4.0], [0.5, 0.25, 0.0]), "cost")
    assert not ev.feasible
    assert ev.violations == ["cache_gb[a] = 5 is not 0 or the whole dataset (1 datasets)"]
    # a = 0, b = 4 whole: j0, j1 read all of a remotely (1.5), j2 nothing; 0.1·4 + 2·1.5 = 3.4 + 7 GPUs
    ok = evaluate(inst, alloc([2, 1, 4], [0.0, 4.0], [1.0, 0.5, 0.0]), "cost")
    assert ok.feasible
    assert ok.cost_total == pytest.approx(10.4)


def test_block_granularity_pays_whole_blocks() -> None:
    # Blocks of 3 GB.  b (4 GB) takes ⌈4/3⌉ = 2 blocks = 6 GB paid, hit ratio min(6, 4)/4 = 1.
    # a = 6 GB = 2 blocks, h_a = 0.6: j0 needs 0.4, j1 0.2.  Cache 12 GB = C.
    # Cost: 7 + 0.1·12 + 2·0.6 = 9.4.
    inst = base(cache_granularity="block", block_gb=3.0)
    ev = evaluate(inst, alloc([2, 1, 4], [6.0, 6.0], [0.4, 0.2, 0.0]), "cost")
    assert ev.feasible, ev.violations
    np.testing.assert_allclose(ev.hit_ratio, [0.6, 1.0])
    assert ev.cost_cache == pytest.approx(1.2)
    assert ev.cost_total == pytest.approx(9.4)


def test_block_granularity_violations() -> None:
    # a = 5 GB is 5/3 of a block; b = 9 GB is 3 blocks where ⌈4/3⌉ = 2 is all b can use.
    inst = base(cache_granularity="block", block_gb=3.0, cache_gb=20.0)
    ev = evaluate(inst, alloc([2, 1, 4], [5.0, 9.0], [0.5, 0.25, 0.0]), "cost")
    assert not ev.feasible
    assert any("cache_gb[a] = 5 is not a whole number of 3 GB blocks" in v for v in ev.violations)
    assert any("cache_gb[b] = 9 exceeds what the dataset can use (6 GB)" in v for v in ev.violations)


def test_tier_billing_rounds_up() -> None:
    # Tiers of 0.4 GB/s.  Σ b = 0.5 + 0.25 = 0.75 → ⌈0.75/0.4⌉ = 2 tiers = 0.8 GB/s billed:
    # bandwidth bill 2·0.8 = 1.6 (not 2·0.75 = 1.5); total 7 + 0.9 + 1.6 = 9.5.
    inst = base(bandwidth_step_gbps=0.4)
    ev = evaluate(inst, alloc([2, 1, 4], [5.0, 4.0], [0.5, 0.25, 0.0]), "cost")
    assert ev.feasible, ev.violations
    assert ev.provisioned_gbps == pytest.approx(0.8)
    assert ev.cost_bandwidth == pytest.approx(1.6)
    assert ev.cost_total == pytest.approx(9.5)
    doc, _ = result(inst, "cost", "hand", alloc([2, 1, 4], [5.0, 4.0], [0.5, 0.25, 0.0]), 0.0)
    assert doc["provisioned_gbps"] == pytest.approx(0.8)


def test_tier_claims_that_break_the_rules() -> None:
    # A claimed 0.6 GB/s is 1.5 tiers; a claimed 0.4 GB/s is below Σ b = 0.75; 3.2 GB/s (8 tiers) is above B = 3.
    inst = base(bandwidth_step_gbps=0.4)
    cache, bw = [5.0, 4.0], [0.5, 0.25, 0.0]
    half = evaluate(inst, alloc([2, 1, 4], cache, bw, provisioned=0.6), "cost")
    assert any("is not a whole number of 0.4 GB/s tiers" in v for v in half.violations)
    short = evaluate(inst, alloc([2, 1, 4], cache, bw, provisioned=0.4), "cost")
    assert any("exceeds the provisioned 0.4" in v for v in short.violations)
    over = evaluate(inst, alloc([2, 1, 4], cache, bw, provisioned=3.2), "cost")
    assert any("exceeds the cap B = 3" in v for v in over.violations)
    # a claim without tiers in the instance is a violation too
    flat = evaluate(base(), alloc([2, 1, 4], cache, bw, provisioned=1.0), "cost")
    assert any("not sold in tiers" in v for v in flat.violations)


def test_welfare_scales_a_stalled_job_by_x_over_r() -> None:
    # Welfare problem, no cache: j0 at 2 GPUs (r = 1.0) gets 0.5 GB/s → x = 0.5, factor 0.5, earns 10·0.5 = 5.
    # j1 at 2 GPUs (r = 0.9, U = 7) gets 0.9: unstalled, 7.  j2 (r = 2, U = 20) gets 1.0: factor 0.5, 10.
    # Welfare 5 + 7 + 10 = 22.  Σ b = 2.4 ≤ B; GPUs 2 + 2 + 4 = 8 = G.  Stalls are allowed in P2.
    ev = evaluate(base(), alloc([2, 2, 4], [0.0, 0.0], [0.5, 0.9, 1.0]), "welfare")
    assert ev.feasible, ev.violations
    np.testing.assert_allclose(ev.stall_factor, [0.5, 1.0, 0.5])
    np.testing.assert_allclose(ev.rate_gbps, [1.0, 0.9, 2.0])
    assert ev.welfare == pytest.approx(22.0)
    # With half of a cached (h_a = 0.5), j0 needs only 0.5: unstalled, welfare 10 + 7 + 10 = 27.
    cached = evaluate(base(), alloc([2, 2, 4], [5.0, 0.0], [0.5, 0.9, 1.0]), "welfare")
    assert cached.welfare == pytest.approx(27.0)


def test_welfare_zero_gpus_earns_nothing_and_bad_option_is_a_violation() -> None:
    # j1 off (0 GPUs): earns 0 and needs no bandwidth; j0, j2 unstalled: welfare 10 + 20 = 30.
    ev = evaluate(base(), alloc([2, 0, 4], [0.0, 4.0], [1.0, 0.0, 0.0]), "welfare")
    assert ev.feasible and ev.welfare == pytest.approx(30.0)
    # j1 at 3 GPUs: not one of its options {1, 2}.
    bad = evaluate(base(), alloc([2, 3, 4], [0.0, 4.0], [1.0, 0.0, 0.0]), "welfare")
    assert any("gpus[j1] = 3 is not one of the job's options" in v for v in bad.violations)


def test_welfare_gpu_cap_and_budget() -> None:
    # GPUs 2 + 2 + 4 = 8 > G = 7.  Budget 10 $/h: cost 8 + 0 + 2·2.4 = 12.8 > 10.
    inst = base(gpus=7, budget_per_hour=10.0)
    ev = evaluate(inst, alloc([2, 2, 4], [0.0, 0.0], [0.5, 0.9, 1.0]), "welfare")
    assert "total GPUs 8 exceed the cluster's G = 7" in ev.violations
    assert "cost 12.8 $/h exceeds the budget 10 $/h" in ev.violations


def test_time_shares_count_gpus_io_and_utility_at_the_share() -> None:
    # docs/model.md §5 "Time sharing".  Shares (0.5, 0.25, 1): j0 at 2 GPUs half the time holds 1 GPU, reads
    # 0.5 GB/s, earns 10·0.5 = 5; j1 at 2 GPUs a quarter of the time holds 0.5, reads 0.225, earns 7·0.25 = 1.75;
    # j2 full: 4 GPUs, 2 GB/s, 20.  GPUs 1 + 0.5 + 4 = 5.5; no cache, bandwidth (0.5, 0.225, 2.0), Σ 2.725 ≤ B.
    # Welfare 26.75; cost 5.5 + 2·2.725 = 10.95 $/h.
    share = Allocation(
        np.array([2, 2, 4]), np.zeros(2), np.array([0.5, 0.225, 2.0]), time_share=np.array([0.5, 0.25, 1.0])
    )
    ev = evaluate(base(budget_per_hour=10.95), share, "welfare")
    assert ev.feasible, ev.violations
    assert ev.welfare == pytest.approx(26.75)
    assert ev.cost_gpu == pytest.approx(5.5)
    assert ev.cost_total == pytest.approx(10.95)
    np.testing.assert_allclose(ev.stall_factor, [1.0, 1.0, 1.0])
    # j1 given half its shared need (0.1125 of 0.225): stall factor 0.5 on top of the share, earns 7·0.25·0.5.
    short = Allocation(
        np.array([2, 2, 4]), np.zeros(2), np.array([0.5, 0.1125, 2.0]), time_share=np.array([0.5, 0.25, 1.0])
    )
    assert evaluate(base(), short, "welfare").welfare == pytest.approx(5 + 0.875 + 20)
    # 5.5 GPUs held on average exceed G = 5, a share outside [0, 1] is a violation, and so is any share
    # below 1 in the cost problem (which runs every job all the time).
    over = evaluate(base(gpus=5), share, "welfare")
    assert "total GPUs 5.5 exceed the cluster's G = 5" in over.violations
    bad = Allocation(np.array([2, 2, 4]), np.zeros(2), np.array([1.0, 0.9, 2.0]), time_share=np.array([1.5, 1, 1]))
    assert any("time_share[j0] = 1.5 is not in [0, 1]" in v for v in evaluate(base(), bad, "welfare").violations)
    cost = Allocation(np.array([2, 1, 4]), np.zeros(2), np.array([1.0, 0.5, 2.0]), time_share=np.array([0.5, 1, 1]))
    assert any("the cost problem runs every job" in v for v in evaluate(base(), cost, "cost").violations)


def test_wrong_gpus_for_the_cost_problem() -> None:
    # The cost problem fixes g = (2, 1, 4); giving j2 3 GPUs is a violation (and 3 is no option of j2: welfare None).
    ev = evaluate(base(), alloc([2, 1, 3], [5.0, 4.0], [0.5, 0.25, 0.0]), "cost")
    assert not ev.feasible
    assert ev.violations == ["gpus[j2] = 3 differs from the job's fixed 4 (1 jobs)"]
    assert ev.welfare is None


def test_negative_and_non_finite_values_are_violations() -> None:
    ev = evaluate(base(), alloc([2, 1, 4], [-1.0, 4.0], [1.0, math.nan, 0.0]), "cost")
    assert any("cache_gb[a] = -1.0 is negative or not finite" in v for v in ev.violations)
    assert any("bandwidth_gbps[j1] = nan is negative or not finite" in v for v in ev.violations)


def test_wrong_shapes_and_problem_raise() -> None:
    with pytest.raises(ValueError, match="shape"):
        evaluate(base(), alloc([2, 1], [5.0, 4.0], [0.5, 0.25, 0.0]), "cost")
    with pytest.raises(ValueError, match="problem must be one of"):
        evaluate(base(), alloc([2, 1, 4], [5.0, 4.0], [0.5, 0.25, 0.0]), "makespan")
    with pytest.raises(ValueError, match="no arrays"):
        evaluate(base(), Allocation.none("infeasible", "no"), "cost")


def test_result_reports_referee_verdict_over_method_claim() -> None:
    # A method claiming "optimal" for the over-cap allocation is reported infeasible with its violations.
    a = alloc([2, 1, 4], [0.0, 0.0], [1.0, 0.5, 2.0])
    a.status = "optimal"
    doc, ev = result(base(), "cost", "liar", a, 0.001)
    assert doc["status"] == "infeasible"
    assert doc["feasible"] is False
    assert doc["violations"] == ["total bandwidth 3.5 GB/s exceeds the cap B = 3"]
    assert doc["objective"] == pytest.approx(14.0)
    assert ev is not None and not ev.feasible


#: The keys of the ``cbalab/result@1`` document of docs/interface.md, in the order ``cbalab solve`` writes them.
HEAD_KEYS = ["schema", "problem", "method", "status", "objective", "bound", "cost_per_hour", "welfare"]
ARRAY_KEYS = ["gpus", "cache_gb", "bandwidth_gbps", "solve_seconds"]


def _solve_json(tmp_path: Path, inst: Instance, *args: str) -> dict:
    """``cbalab solve`` run as a user runs it (the installed script, a fresh process) on ``inst``; its JSON file."""
    from cbalab.api import save

    source, out = save(inst, tmp_path / "inst.json"), tmp_path / "result.json"
    script = Path(sys.executable).with_name("cbalab")
    done = subprocess.run([str(script), "solve", str(source), *args, "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(out.read_text())
    return json.loads(out.read_text())


def test_regression_the_result_json_keeps_its_shape_with_the_typed_result(tmp_path: Path) -> None:
    """The document written from the typed result (``Scored.document``) has the keys, order and
    types of docs/interface.md: a scored answer, an answer without allocation, and the referee's demotion."""
    doc = _solve_json(tmp_path, base(), "--problem", "cost", "--method", "cba")
    assert list(doc) == [*HEAD_KEYS, *ARRAY_KEYS, "feasible"]
    assert doc["status"] in ("optimal", "feasible") and isinstance(doc["status"], str)
    assert set(doc["cost_per_hour"]) == {"gpu", "cache", "bandwidth", "total"}
    assert doc["objective"] == pytest.approx(doc["cost_per_hour"]["total"])
    assert doc["gpus"] == {"j0": 2, "j1": 1, "j2": 4} and set(doc["cache_gb"]) == {"a", "b"}

    none = _solve_json(tmp_path, base(cache_gb=0.0, bandwidth_gbps=1.0), "--problem", "cost", "--method", "cba")
    assert list(none) == [*HEAD_KEYS, *ARRAY_KEYS, "reason"]
    assert none["status"] == "infeasible" and none["objective"] is None and none["gpus"] is None

    liar = alloc([2, 1, 4], [0.0, 0.0], [1.0, 0.5, 2.0])
    liar.status = Status.OPTIMAL
    scored = score(base(), "cost", "liar", liar, 0.5)
    assert scored.status is Status.INFEASIBLE and scored.objective == pytest.approx(14.0)
    assert list(scored.document()) == [*HEAD_KEYS, *ARRAY_KEYS, "feasible", "violations", "reason"]
    assert json.loads(json.dumps(scored.document()))["status"] == "infeasible"


@given(
    st.lists(
        st.tuples(
            st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False),
            st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False),
        ),
        max_size=60,
    ),
    st.randoms(use_true_random=False),
)
def test_exact_dot_is_correctly_rounded_in_any_order(pairs: list[tuple[float, float]], rnd: random.Random) -> None:
    """models.kernels.exact_dot, the referee's time-shared GPU time and welfare, is the correctly rounded Σ a_i b_i
    of the rounded products: equal to the exact rational sum rounded once, so no order of the terms (and no
    BLAS kernel, tests/test_blas_kernels.py) changes a bit."""
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    exact = float(sum((Fraction(x) for x in (a * b).tolist()), Fraction(0)))
    assert exact_dot(a, b) == exact
    perm = list(range(len(pairs)))
    rnd.shuffle(perm)
    assert exact_dot(a[perm], b[perm]) == exact


@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**6), max_value=10**6),
        st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nextafter(1.0, 0.0), math.nextafter(1.0, 2.0)]),
    )
)
def test_the_slack_of_a_number_is_the_slack_of_the_array_holding_it(x: float) -> None:
    """The referee's slack RTOL·max(1, |x|) (docs/model.md (8.1)) taken on a number, as ``tolerated`` and a replay's
    B take it, has the bits of the same slack taken element-wise on an array (NaN stays NaN), so both paths of
    ``_slack`` are one tolerance."""
    one = float(_slack(x))
    array = float(_slack(np.array([x], dtype=float))[0])
    assert np.array_equal(np.array([one]), np.array([array]), equal_nan=True)
    assert math.copysign(1.0, one) == math.copysign(1.0, array) or math.isnan(one)
