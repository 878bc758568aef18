"""The cache baselines of the cost problem (docs/model.md §7), each scored by the one referee.

CBA is optimal for P1 (proofs/cba_optimality.md, Theorem 1), so on every
instance where a baseline's allocation is feasible CBA's IO cost is no higher:
the property test checks that consequence of Theorem 1 against every baseline.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import magnitudes

from cbalab.algorithms import registry as methods
from cbalab.experiments.workload import generate_cost
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import build

BASELINES = ("io-only", "cache-all", "coordl", "quiver", "silod")


def _inst(sizes, job_dataset, rates, cache_gb, prices=(1.0, 0.01, 1.0), **kw):
    n = len(job_dataset)
    return build(
        dataset_size_gb=np.asarray(sizes, float),
        job_dataset=np.asarray(job_dataset),
        job_gpus=np.ones(n, dtype=np.int64),
        job_io_gbps=np.asarray(rates, float),
        cache_gb=cache_gb,
        prices=prices,
        **kw,
    )


@pytest.mark.parametrize("name", BASELINES)
def test_every_baseline_is_registered_and_scored_by_the_referee(name: str) -> None:
    inst = generate_cost(150, 25, seed=4)
    doc, ev = methods.run(inst, "cost", name)
    assert doc["method"] == name and doc["problem"] == "cost"
    assert doc["status"] == "feasible" and ev is not None and ev.feasible
    assert doc["objective"] == pytest.approx(ev.cost_total)
    assert (ev.stall_factor == 1.0).all()
    assert doc["gpus"] == {jid: int(g) for jid, g in zip(inst.job_ids, inst.job_gpus)}


@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 60),
    datasets=st.integers(1, 15),
    skew=st.floats(0.0, 2.5),
    cache_fraction=magnitudes(1.2),
    ratio=st.sampled_from([1e-5, 4e-4, 1e-2, 1.0]),
    bandwidth_fraction=st.sampled_from([None, 0.3, 0.7, 1.0]),
)
def test_cba_io_cost_is_at_most_every_feasible_baselines(
    seed: int,
    jobs: int,
    datasets: int,
    skew: float,
    cache_fraction: float,
    ratio: float,
    bandwidth_fraction: float | None,
) -> None:
    """Theorem 1 (CBA optimality, continuous P1): CBA's IO cost ≤ any feasible allocation's, baselines included."""
    inst = generate_cost(
        jobs,
        datasets,
        seed,
        skew=skew,
        cache_fraction=cache_fraction,
        bandwidth_fraction=bandwidth_fraction,
        prices=(2.5, ratio * 0.9, 0.9),
    )
    _, cba_ev = methods.run(inst, "cost", "cba")
    for name in BASELINES:
        _, ev = methods.run(inst, "cost", name)
        assert ev is not None  # every baseline returns an allocation for the referee
        if not ev.feasible:
            assert not math.isinf(inst.bandwidth_gbps), f"{name} infeasible without a bandwidth cap: {ev.violations}"
            continue
        assert cba_ev is not None and cba_ev.feasible, f"{name} is feasible where CBA is not"
        assert cba_ev.cost_io <= ev.cost_io + 1e-9 * max(1.0, ev.cost_io), name


def test_io_only_buys_every_rate() -> None:
    inst = _inst([10.0, 5.0], [0, 1, 1], [1.0, 2.0, 3.0], cache_gb=100.0)
    alloc = methods.get("cost", "io-only").function()(inst)
    assert alloc.cache_gb.tolist() == [0.0, 0.0] and alloc.bandwidth_gbps.tolist() == [1.0, 2.0, 3.0]


def test_cache_all_is_whole_datasets_first_come_first_fit() -> None:
    # first references: dataset 2 (job 0), then 0, then 1; C = 12 holds d2 = 8, not d0 = 6, then d1 = 3.
    inst = _inst([6.0, 3.0, 8.0, 1.0], [2, 0, 1, 2], [0.1, 5.0, 0.1, 0.1], cache_gb=12.0)
    alloc = methods.get("cost", "cache-all").function()(inst)
    assert alloc.cache_gb.tolist() == [0.0, 3.0, 8.0, 0.0]  # dataset 3 is never read, so never cached
    ev = evaluate(inst, alloc, "cost")
    assert ev.feasible and ev.hit_ratio.tolist() == [0.0, 1.0, 1.0, 0.0]


def test_silod_fills_all_of_c_by_density_even_when_it_does_not_pay() -> None:
    # Caching costs 1 $/GB-h and saves at most 0.5 $/h per GB: CBA caches nothing, SiloD fills C anyway.
    inst = _inst([10.0, 4.0], [0, 1], [1.0, 2.0], cache_gb=7.0, prices=(1.0, 1.0, 1.0))
    alloc = methods.get("cost", "silod").function()(inst)
    assert alloc.cache_gb.tolist() == [3.0, 4.0]  # ρ = 0.1 and 0.5: dataset 1 first, then 3 GB of dataset 0
    cba = methods.get("cost", "cba").function()(inst)
    assert cba.cache_gb.tolist() == [0.0, 0.0]


def test_quiver_judges_per_job_and_misses_shared_datasets() -> None:
    # Ten light jobs on dataset 0 together pay for its cache (ρ = 10 × 0.05 / 1 = 0.5 > p_c / p_b = 0.1),
    # but no single one does (0.05 < 0.1); dataset 1's single heavy job pays alone.
    inst = _inst([1.0, 1.0], [0] * 10 + [1], [0.05] * 10 + [0.2], cache_gb=5.0, prices=(1.0, 0.1, 1.0))
    quiver = methods.get("cost", "quiver").function()(inst)
    cba = methods.get("cost", "cba").function()(inst)
    assert quiver.cache_gb.tolist() == [0.0, 1.0]
    assert cba.cache_gb.tolist() == [1.0, 1.0]
    assert evaluate(inst, cba, "cost").cost_io < evaluate(inst, quiver, "cost").cost_io


def test_coordl_slices_are_private_and_split_in_proportion_to_need() -> None:
    # Two jobs on dataset 0 (10 GB), one on dataset 1 (20 GB); C = 15 GB; every job pays alone.
    inst = _inst([10.0, 20.0], [0, 0, 1], [5.0, 5.0, 10.0], cache_gb=15.0, prices=(1.0, 0.01, 1.0))
    alloc = methods.get("cost", "coordl").function()(inst)
    alpha = alloc.facts.alpha
    # Σ_k d_k min(1, n_k α) = 10·2α + 20·α = 15  ->  α = 0.375 (dataset 0 not yet full: 2α < 1).
    assert alpha == pytest.approx(0.375)
    assert alloc.cache_gb == pytest.approx([7.5, 7.5])
    # Each job hits only its own slice (α of its dataset), not the 75% the two slices of dataset 0 hold together.
    assert alloc.bandwidth_gbps == pytest.approx([5.0 * 0.625, 5.0 * 0.625, 10.0 * 0.625])
    ev = evaluate(inst, alloc, "cost")
    assert ev.feasible and ev.cost_cache == pytest.approx(0.15)


def test_coordl_gives_the_capacity_left_by_a_full_dataset_to_others() -> None:
    # Four jobs on a 2 GB dataset fill it at α = 1/4 (disjoint quarters); the rest of C goes to dataset 1.
    inst = _inst([2.0, 20.0], [0, 0, 0, 0, 1], [5.0] * 4 + [10.0], cache_gb=12.0, prices=(1.0, 0.01, 1.0))
    alloc = methods.get("cost", "coordl").function()(inst)
    assert alloc.facts.alpha == pytest.approx(0.5)
    assert alloc.cache_gb == pytest.approx([2.0, 10.0])
    assert alloc.bandwidth_gbps == pytest.approx([3.75] * 4 + [5.0])
    assert evaluate(inst, alloc, "cost").feasible


def test_coordl_skips_jobs_whose_private_copy_does_not_pay() -> None:
    inst = _inst([100.0], [0, 0], [0.5, 0.5], cache_gb=100.0, prices=(1.0, 0.01, 1.0))  # 0.5 < 0.01 × 100
    alloc = methods.get("cost", "coordl").function()(inst)
    assert alloc.cache_gb.tolist() == [0.0]


@pytest.mark.parametrize("name", BASELINES)
@pytest.mark.parametrize("granularity", ["dataset", "block"])
def test_baselines_respect_the_integer_cache_variants(name: str, granularity: str) -> None:
    inst = generate_cost(120, 20, seed=7, cache_fraction=0.3)
    inst = inst.replace(cache_granularity=granularity, block_gb=8.0 if granularity == "block" else None)
    doc, ev = methods.run(inst, "cost", name)
    assert ev is not None and ev.feasible, ev.violations if ev else doc
