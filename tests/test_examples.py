"""The named teaching instances of cbalab.examples say true things: each stated optimum is checked here.

Every number is the referee's (cbalab.models.evaluate through the registry), for CBA and for the exact
MILP (HiGHS at MIP gap 0), so a docstring of cbalab/examples.py that drifts from the code fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cbalab import examples
from cbalab.algorithms import registry

REL = 1e-9


def _io(doc: dict) -> float:
    """IO cost (cache + bandwidth, $/h) of a scored result."""
    cost = doc["cost_per_hour"]
    return cost["cache"] + cost["bandwidth"]


def _solve(inst, problem: str, method: str) -> dict:
    doc, _ = registry.run(inst, problem, method)
    return doc


def test_toy_cluster_threshold_falls_between_the_densities() -> None:
    inst = examples.toy_cluster()
    assert inst.n_datasets == 3 and inst.n_jobs == 6
    assert inst.job_ids == ("gpt2-small", "gpt2-medium", "resnet50-a", "resnet50-b", "vit-b16", "slowfast")
    rho = inst.dataset_demand(inst.job_io_gbps) / inst.dataset_size_gb
    ratio = inst.price_cache / inst.price_bandwidth
    assert (rho > ratio).any() and (rho < ratio).any()


def test_toy_cluster_optimum_is_as_documented() -> None:
    inst = examples.toy_cluster()
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    assert cba["objective"] == pytest.approx(milp["objective"], rel=REL)
    assert _io(cba) == pytest.approx(0.887, rel=REL)
    assert cba["cache_gb"] == pytest.approx({"openwebtext": 0.0, "imagenet": 140.0, "kinetics": 160.0})
    assert _io(_solve(inst, "cost", "io-only")) == pytest.approx(1.557, rel=REL)
    fifo = _solve(inst, "cost", "cache-all")
    assert fifo["cache_gb"]["openwebtext"] == 40.0 and _io(fifo) > _io(cba)


def test_toy_cluster_large_cache_makes_the_price_blind_policy_pay() -> None:
    inst = examples.toy_cluster(cache_gb=700.0)
    cba, silod = _solve(inst, "cost", "cba"), _solve(inst, "cost", "silod")
    assert cba["cache_gb"]["openwebtext"] == 0.0 and silod["cache_gb"]["openwebtext"] == 40.0
    assert _io(silod) - _io(cba) == pytest.approx(40 * 0.001 - 0.007, rel=1e-6)


@pytest.mark.parametrize(("readers", "io_cost", "coco"), [(4, 0.04, 20.0), (1, 0.03, 0.0)])
def test_shared_dataset_sharing_justifies_the_cache(readers: int, io_cost: float, coco: float) -> None:
    inst = examples.shared_dataset(readers=readers)
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    assert _io(cba) == pytest.approx(io_cost, rel=REL)
    assert _io(milp) == pytest.approx(io_cost, rel=1e-7)
    assert cba["cache_gb"]["coco"] == coco
    per_job = _solve(inst, "cost", "coordl")
    assert per_job["cache_gb"]["coco"] == 0.0
    if readers > 1:
        assert _io(per_job) > _io(cba)


@pytest.mark.parametrize("ratio", [0.0, 5e-5, 2e-4, 2e-3, 5e-3, 2e-2])
def test_threshold_demo_caches_exactly_the_datasets_above_the_ratio(ratio: float) -> None:
    """Theorem 1 (proofs/cba_optimality.md) on threshold_demo: cache ρ_k > p_c/p_b whole, nothing else."""
    inst = examples.threshold_demo(ratio)
    rho = np.array(examples.THRESHOLD_DENSITIES)
    cba, milp = _solve(inst, "cost", "cba"), _solve(inst, "cost", "milp")
    assert cba["status"] == milp["status"] == "optimal"
    np.testing.assert_array_equal(list(cba["cache_gb"].values()), np.where(rho > ratio, 100.0, 0.0))
    expected = 100.0 * rho.sum() - sum(100.0 * (r - ratio) for r in rho if r > ratio)
    assert _io(cba) == pytest.approx(expected, rel=REL)
    assert _io(milp) == pytest.approx(expected, rel=1e-7)
    assert expected <= 1.44 + 1e-12


def test_threshold_demo_default_cost() -> None:
    assert _io(_solve(examples.threshold_demo(), "cost", "cba")) == pytest.approx(0.54, rel=REL)


def test_elastic_toy_optimum_and_binding_budget() -> None:
    inst = examples.elastic_toy()
    milp = _solve(inst, "welfare", "milp")
    assert milp["status"] == "optimal"
    assert milp["welfare"] == pytest.approx(78.0, rel=1e-7)
    assert milp["gpus"] == {"resnet50": 4, "vit-b16": 4, "efficientnet": 1, "wav2vec2": 2, "conformer": 0}
    assert milp["cost_per_hour"]["total"] == pytest.approx(inst.budget_per_hour, rel=1e-6)
    assert sum(milp["gpus"].values()) < inst.gpus
    auto = _solve(inst, "welfare", "autocba")
    assert auto["welfare"] == pytest.approx(78.0, rel=1e-9)
    assert 78.0 <= auto["bound"] <= 78.75
    for name in ("gavel-tput", "gavel-fair", "optimus"):
        doc = _solve(inst, "welfare", name)
        assert doc["feasible"] and doc.get("stall_factor"), name
        assert 45.0 <= doc["welfare"] <= 53.0, (name, doc["welfare"])


def test_elastic_toy_budget_moves_the_optimum() -> None:
    low = _solve(examples.elastic_toy(budget_per_hour=8.0), "welfare", "milp")
    high = _solve(examples.elastic_toy(budget_per_hour=1000.0), "welfare", "milp")
    assert low["status"] == high["status"] == "optimal"
    assert low["welfare"] < 78.0 < high["welfare"]
    assert sum(high["gpus"].values()) <= 12


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="readers"):
        examples.shared_dataset(readers=0)
    with pytest.raises(ValueError, match="price_ratio"):
        examples.threshold_demo(math.nan)


def test_examples_through_the_facade() -> None:
    """``import cbalab`` alone reaches the teaching instances, and solve infers their problem."""
    import cbalab

    assert "examples" in cbalab.__all__
    res = cbalab.solve(cbalab.examples.toy_cluster(), "cba")
    assert res.status == "optimal"
    frame = res.datasets_frame()
    assert frame.set_index("dataset")["cache_gb"].to_dict() == pytest.approx(
        {"openwebtext": 0.0, "imagenet": 140.0, "kinetics": 160.0}
    )
    assert cbalab.solve(cbalab.examples.elastic_toy(), "autocba").objective == pytest.approx(78.0, rel=1e-9)
