"""The IO-unaware GPU baselines of MODEL.md §7 on the welfare problem (algorithms/baselines/)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbalab.algorithms import registry as methods
from cbalab.algorithms.baselines import gavel_fair, gavel_tput, io_unaware, optimus
from cbalab.experiments.workload import generate_welfare
from cbalab.models.evaluate import RTOL, evaluate
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.options import SHAPES
from cbalab.models.solve import welfare_milp

BASELINES = ("gavel-tput", "gavel-fair", "optimus")
ALLOCATORS = {"gavel-tput": gavel_tput.allocate, "gavel-fair": gavel_fair.allocate, "optimus": optimus.allocate}


@st.composite
def welfare_instances(draw: st.DrawFn) -> Instance:
    """generate_welfare over seeds, sizes, utility mixes, budgets from none to loose, with and without B."""
    return generate_welfare(
        draw(st.integers(0, 25)),
        draw(st.integers(1, 6)),
        draw(st.integers(0, 100_000)),
        utility_mix=draw(st.sampled_from([*SHAPES, "mixed"])),
        budget_fraction=draw(st.sampled_from([0.0, 0.02, 0.1, 0.3, 0.6, 1.0, 2.0])),
        gpu_fraction=draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        cache_fraction=draw(st.sampled_from([0.0, 0.05, 0.3, 1.0])),
        bandwidth_fraction=draw(st.sampled_from([None, 0.0, 0.05, 0.5])),
        skew=draw(st.sampled_from([0.0, 1.0, 2.0])),
        prices=draw(st.sampled_from([(2.5, 0.0004, 0.9), (2.5, 0.01, 30.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)])),
    )


def _within_limits(inst: Instance, ev_doc: dict) -> None:
    gpus = sum(ev_doc["gpus"].values())
    cache = sum(ev_doc["cache_gb"].values())
    bandwidth = sum(ev_doc["bandwidth_gbps"].values())
    slack = RTOL * max(1.0, inst.budget_per_hour if math.isfinite(inst.budget_per_hour) else 1.0)
    assert ev_doc["cost_per_hour"]["total"] <= inst.budget_per_hour + slack
    assert inst.gpus is None or gpus <= inst.gpus
    assert cache <= inst.cache_gb * (1 + RTOL) + RTOL
    assert bandwidth <= inst.bandwidth_gbps * (1 + RTOL) + RTOL


@given(inst=welfare_instances())
def test_every_baseline_is_scored_and_stays_within_budget_and_capacities(inst: Instance) -> None:
    """Every naive and tuned baseline returns an allocation the referee scores as feasible (stalls allowed, §5)."""
    for name in BASELINES:
        for variant in (name, f"{name}-tuned"):
            doc, ev = methods.run(inst, "welfare", variant)
            assert doc["status"] == "feasible", doc.get("violations")
            assert ev is not None and ev.feasible, ev.violations
            _within_limits(inst, doc)
            assert doc["welfare"] >= 0


@given(inst=welfare_instances())
def test_tuned_is_never_worse_than_naive(inst: Instance) -> None:
    """The tuned grid includes the naive split (all of the budget for GPUs), so tuned welfare ≥ naive welfare."""
    for name in BASELINES:
        naive = methods.run(inst, "welfare", name)[0]["welfare"]
        tuned = methods.run(inst, "welfare", f"{name}-tuned")[0]["welfare"]
        assert tuned >= naive - 1e-9 * max(1.0, naive)


@given(
    inst=welfare_instances(),
    policy=st.sampled_from(sorted(methods.cache_policies())),
    split=st.sampled_from([0.3, 1.0]),
)
def test_every_cache_policy_feeds_within_budget(inst: Instance, policy: str, split: float) -> None:
    """Each cache policy, at any GPU share of the budget, gives a feasible allocation; stalls are the common cut.

    Every job gets at least the common factor of its need; for policies whose bandwidth is exactly
    r_j (1 − h_k(j)) every reading job runs at exactly that factor.
    """
    for allocate in ALLOCATORS.values():
        alloc = io_unaware.feed_within_budget(inst, allocate(inst, io_unaware.gpu_cap(inst, split)), policy)
        ev = evaluate(inst, alloc, "welfare")
        assert ev.feasible, ev.violations
        factor = alloc.extra["io_factor"]
        assert 0.0 <= factor <= 1.0
        assert np.all(ev.stall_factor >= factor * (1 - 1e-9))
        if policy in ("silod", "io-only", "cba"):
            need = ev.rate_gbps * (1.0 - ev.hit_ratio[inst.job_dataset])
            # the referee ignores a shortfall within its slack (e.g. a fully cached dataset's rounding residue)
            short = need * (1.0 - factor) > RTOL * np.maximum(1.0, need)
            assert np.allclose(ev.stall_factor[short], factor, rtol=1e-9, atol=1e-12)
            assert np.all(ev.stall_factor[~short] == 1.0)


@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 5),
    cap=st.integers(0, 20),
)
def test_gavel_tput_is_the_exact_max_sum_throughput(seed: int, n: int, cap: int) -> None:
    """Gavel max-sum-throughput's knapsack DP equals enumeration of every option choice within the GPU cap."""
    inst = generate_welfare(n, 2, seed, gpu_options=(1, 2, 3, 8))
    value = io_unaware.speedup(inst)
    gpus = gavel_tput.allocate(inst, cap)
    assert gpus.sum() <= cap
    ptr = inst.option_ptr
    best = 0.0
    for combo in itertools.product(*[[None, *range(int(ptr[j]), int(ptr[j + 1]))] for j in range(n)]):
        rows = [o for o in combo if o is not None]
        if sum(int(inst.option_gpus[o]) for o in rows) <= cap:
            best = max(best, float(sum(value[o] for o in rows)))
    rows = np.flatnonzero(inst.option_gpus == gpus[inst.option_job()])
    assert float(value[rows].sum()) == pytest.approx(best, rel=1e-9)


def test_gavel_fair_serves_everyone_before_upgrading_anyone() -> None:
    """Max-min progressive filling: with GPUs for every job's smallest option but not more, every job gets it."""
    inst = generate_welfare(12, 3, seed=5)
    gpus = gavel_fair.allocate(inst, 12 + 5)
    assert np.all(gpus >= 1)
    assert gpus.sum() <= 17
    assert gavel_fair.allocate(inst, 5).tolist().count(0) == 7


def test_optimus_takes_every_top_option_when_nothing_binds() -> None:
    """With GPUs and budget unlimited, the marginal-gain greedy moves every job to its best-utility option."""
    inst = generate_welfare(15, 3, seed=2, utility_mix="linear").replace(gpus=None, budget_per_hour=math.inf)
    gpus = optimus.allocate(inst, io_unaware.gpu_cap(inst, 1.0))
    assert gpus.tolist() == [8] * 15
    alloc = optimus.optimus(inst)
    assert alloc.extra["io_factor"] == 1.0
    assert evaluate(inst, alloc, "welfare").welfare == pytest.approx(inst.option_utility[inst.option_ptr[1:] - 1].sum())


def test_naive_spends_the_budget_on_gpus_and_stalls_on_a_tight_budget() -> None:
    """IO-unaware on a tight budget: GPUs take the money, bandwidth is cut, the jobs stall (MODEL.md §5, §7)."""
    inst = generate_welfare(40, 8, seed=1, budget_fraction=0.2, prices=(2.5, 0.01, 30.0))
    alloc = gavel_tput.gavel_tput(inst)
    ev = evaluate(inst, alloc, "welfare")
    assert ev.feasible
    assert alloc.extra["io_factor"] < 1.0
    assert ev.stall_factor.min() < 1.0
    assert ev.cost_total == pytest.approx(inst.budget_per_hour, rel=1e-9)
    assert ev.welfare < methods.run(inst, "welfare", "gavel-tput-tuned")[0]["welfare"]


@given(seed=st.integers(0, 10_000), budget=st.sampled_from([0.1, 0.3, 0.6]))
def test_unstalled_baselines_never_beat_the_milp_optimum(seed: int, budget: float) -> None:
    """An allocation with no stalls is feasible for P2, so its welfare is at most the MILP's proven optimum."""
    inst = generate_welfare(8, 3, seed, budget_fraction=budget)
    opt = evaluate(inst, welfare_milp(inst), "welfare").welfare
    for name in BASELINES:
        for variant in (name, f"{name}-tuned"):
            doc, ev = methods.run(inst, "welfare", variant)
            if ev.stall_factor.min() >= 1.0:
                assert doc["welfare"] <= opt + 1e-6 * max(1.0, opt)


@pytest.mark.parametrize("name", [*BASELINES, *(f"{b}-tuned" for b in BASELINES)])
def test_non_continuous_instances_are_rejected_by_name(name: str) -> None:
    """Like the MILP, the baselines answer P2 for continuous cache and bandwidth only: an InstanceError otherwise."""
    inst = generate_welfare(3, 2, seed=0).replace(cache_granularity="dataset")
    with pytest.raises(InstanceError, match=r"cluster\.cache_granularity"):
        methods.get("welfare", name).function()(inst)


@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), cap=st.integers(0, 120))
def test_gavel_hull_greedy_is_within_one_job_of_the_exact_knapsack(seed: int, n: int, cap: int) -> None:
    """Gavel's LP (hull greedy, rounded down) fits the cap and loses at most one job's speedup to the exact DP.

    The LP relaxation bounds the DP optimum and has at most one fractional job (Sinha-Zoltners), whose
    step is worth at most that job's largest speedup.
    """
    inst = generate_welfare(n, 3, seed, gpu_options=(1, 2, 3, 8))
    value = io_unaware.speedup(inst)

    def total(gpus: np.ndarray) -> float:
        return float(value[np.flatnonzero(inst.option_gpus == gpus[inst.option_job()])].sum())

    hull = gavel_tput.allocate_hull(inst, cap)
    exact = gavel_tput.allocate(inst, cap)
    assert hull.sum() <= cap
    assert total(hull) <= total(exact) + 1e-9 * max(1.0, total(exact))
    assert total(hull) >= total(exact) - float(value.max()) - 1e-9


def test_gavel_switches_to_the_hull_greedy_when_the_table_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above DP_CELLS the allocation is the hull greedy's (same answer as calling it directly)."""
    inst = generate_welfare(40, 4, seed=9)
    monkeypatch.setattr(gavel_tput, "DP_CELLS", 0)
    assert gavel_tput.allocate(inst, 37).tolist() == gavel_tput.allocate_hull(inst, 37).tolist()
