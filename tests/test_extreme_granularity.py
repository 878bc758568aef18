"""P1's integer variants at extreme granularity (docs/model.md §4, §8 "Ranges of the integer variants").

A tier of bandwidth far above the whole demand and a block far below a dataset's size once gave wrong answers:
the MILP called a feasible tier instance infeasible (defect 1), CBA provisioned -0 tiers (defect 2), and CBA's
block counts overflowed int64 into a negative cache (defect 3).  Each instance is the one ``cbalab generate``
writes for the repro (experiments/workload/synthetic.py, seed 0), so the CLI and these tests see the same numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cbalab.algorithms import registry
from cbalab.cli import main
from cbalab.experiments.workload.synthetic import generate_instance
from cbalab.models.certify import instance_tolerance
from cbalab.models.evaluate import Evaluation
from cbalab.models.instance import MAX_BLOCKS, MAX_TIERS, Instance, InstanceError, build, loads
from cbalab.models.types import Status


def _cost_instance(variant: str, **size: float) -> Instance:
    """The repro's instance: 5 jobs on 2 datasets, seed 0, in ``variant`` with the given block or tier size."""
    return generate_instance("cost", 5, 2, 0, variant=variant, **size)  # type: ignore[arg-type]


def _run(inst: Instance, method: str) -> tuple[dict, Evaluation | None]:
    """The scored result document of ``method`` (as ``cbalab solve`` prints it) and the referee's evaluation."""
    return registry.run(inst, "cost", method)


def _accepted_optimum(inst: Instance, method: str) -> float:
    """``method``'s cost after asserting that it claims ``optimal`` and the referee accepts its allocation."""
    doc, ev = _run(inst, method)
    assert doc["status"] == Status.OPTIMAL, doc.get("reason")
    assert ev is not None and ev.feasible, ev and ev.violations
    return float(doc["objective"])


def _assert_agree(inst: Instance, a: float, b: float) -> None:
    """Two costs of ``inst`` are equal within the certification tolerance (8.2) of models/certify.py."""
    assert abs(a - b) <= instance_tolerance(inst, "cost", max(a, b)), (a, b)


@pytest.mark.parametrize("tier_fraction", [3e6, 1e7, 1e9])
def test_milp_buys_a_tier_far_above_the_whole_demand(tier_fraction: float) -> None:
    """Defect 1: with a tier of 3e6-1e9 × Σ r_j the MILP answered ``infeasible`` (0 tiers provisioned).

    Written Σ b_j ≤ β m, the relaxed m = Σ b_j / β lay within HiGHS's integrality tolerance of 0; the integer
    model now states Σ b_j ≤ m Σ r_j (models/milp/cost.py, ``tier_cover``).  CBA's answer is exact by
    Theorem I2 of proofs/cba_integer_gap.md, so both must be ``optimal`` at the same cost: one tier.
    """
    inst = _cost_instance("tiers", tier_fraction=tier_fraction)
    milp = _accepted_optimum(inst, "milp")
    _assert_agree(inst, milp, _accepted_optimum(inst, "cba"))
    one_tier = inst.price_gpu * float(inst.job_gpus.sum()) + inst.price_bandwidth * inst.tier_gbps
    _assert_agree(inst, milp, one_tier)


def test_a_milp_allocation_the_referee_rejects_is_an_error_not_infeasible() -> None:
    """Defect 1 (second part): a MILP allocation broken by HiGHS's tolerances is no proof of infeasibility.

    C is 1e-8 GB short of the one dataset and a tier is the whole demand: the relaxed tier count 1e-8 lies
    within HiGHS's integrality tolerance, and rounded to 0 tiers the allocation leaves 9e-9 GB/s unprovisioned.
    The instance is feasible (one tier; CBA is exact here by Theorem I2), so the MILP may answer ``optimal``
    at CBA's cost or ``error``, never ``infeasible`` (models/solve.py, ``_broken``; Lemma I0 (d) of
    proofs/cba_integer_gap.md).
    """
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([1.0]),
        cache_gb=1.0 - 1e-8,
        prices=(1.0, 0.01, 1.0),
        bandwidth_step_gbps=1.0,
    )
    cba = _accepted_optimum(inst, "cba")
    doc, _ = _run(inst, "milp")
    assert doc["status"] in (Status.OPTIMAL, Status.ERROR), doc.get("reason")
    if doc["status"] == Status.OPTIMAL:
        _assert_agree(inst, float(doc["objective"]), cba)
    else:
        assert "not a proof of infeasibility" in doc["reason"]


@pytest.mark.parametrize("variant", ["tiers", "block+tiers", "dataset+tiers"])
def test_cba_provisions_one_whole_tier_when_a_tier_dwarfs_the_demand(variant: str) -> None:
    """Defect 2: at a tier of 1e10 × Σ r_j CBA provisioned -0 tiers, its slack taken as 1e-10 of a tier.

    ``_tiers_up`` of algorithms/cba_integer.py now takes the slack in GB/s.  Theorems I2, I4 and I5 of
    proofs/cba_integer_gap.md (tiers, blocks + tiers, whole datasets + tiers): CBA and the MILP agree, at one tier.
    """
    inst = _cost_instance(variant, tier_fraction=1e10)
    doc, ev = _run(inst, "cba")
    assert doc["status"] == Status.OPTIMAL, doc.get("reason")
    assert ev is not None and ev.feasible and ev.provisioned_gbps == inst.tier_gbps
    _assert_agree(inst, float(doc["objective"]), _accepted_optimum(inst, "milp"))


@pytest.mark.parametrize("tier_fraction", [1e20, 1e300])
def test_cba_answers_every_finite_tier_and_milp_names_the_step_it_refuses(tier_fraction: float) -> None:
    """Defect 2 up to 1e300 × Σ r_j: CBA is ``optimal`` at one tier (Theorem I2 of proofs/cba_integer_gap.md);
    the MILP claims nothing there.  At 1e300 × Σ r_j the tier's price p_b·β passes 1e20 $/h, an objective
    coefficient beyond HiGHS, and it refuses the instance as ``error`` naming cluster.bandwidth_step_gbps
    (``beyond_highs``); at 1e20 × Σ r_j the price, 3.3e19 $/h, is just within that range and HiGHS itself gives up
    (``error``, its status named), never a status it has not proven.
    """
    inst = _cost_instance("tiers", tier_fraction=tier_fraction)
    doc, ev = _run(inst, "cba")
    assert doc["status"] == Status.OPTIMAL, doc.get("reason")
    assert ev is not None and ev.feasible and ev.provisioned_gbps == inst.tier_gbps
    milp, _ = _run(inst, "milp")
    refused = inst.price_bandwidth * inst.tier_gbps >= 1e20
    named = "cluster.bandwidth_step_gbps" if refused else "HiGHS"
    assert milp["status"] == Status.ERROR and named in milp["reason"], milp["reason"]


def test_a_block_size_beyond_the_block_range_is_refused_on_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 3: blocks of 1e-25 GB overflowed CBA's int64 counts into a negative cache (and the MILP, whose
    blocks row HiGHS dropped, called a no-cache answer optimal).  Beyond 2^28 blocks per dataset the instance is
    refused when generated, built or loaded: one line, exit 2, naming block_gb and the value."""
    with pytest.raises(InstanceError, match=r"cluster\.cache_granularity\.block_gb.*1e-25"):
        _cost_instance("block", block_gb=1e-25)
    doc = _cost_instance("block", block_gb=1.0).to_dict()
    doc["cluster"]["cache_granularity"] = {"block_gb": 1e-25}
    with pytest.raises(InstanceError, match=r"cluster\.cache_granularity\.block_gb"):
        loads(json.dumps(doc))
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["solve", str(path), "--method", "cba"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "cluster.cache_granularity.block_gb" in err and "1e-25" in err


def test_cba_and_milp_agree_at_the_most_blocks_allowed() -> None:
    """Defect 3, the rule's edge: 2^28 blocks of the largest dataset are allowed and one ulp smaller is not.

    At the edge CBA's block rounding is exact (Theorem I1 of proofs/cba_integer_gap.md) and the MILP keeps its
    blocks row, so both are ``optimal`` at the same cost.
    """
    base = _cost_instance("continuous")
    u = float(base.dataset_size_gb.max()) / MAX_BLOCKS
    inst = _cost_instance("block", block_gb=u)
    _assert_agree(inst, _accepted_optimum(inst, "cba"), _accepted_optimum(inst, "milp"))
    with pytest.raises(InstanceError, match=r"cluster\.cache_granularity\.block_gb"):
        _cost_instance("block", block_gb=float(np.nextafter(u, 0.0)))


@pytest.mark.parametrize(("rate_factor", "cache_gb"), [(1e-8, 160.0), (1e-9, None), (1e-6, 160.0)])
def test_cba_and_milp_agree_on_tiers_in_small_units(rate_factor: float, cache_gb: float | None) -> None:
    """The tier roundings of CBA take their slack relative to the bandwidth, so the answer does not depend on the
    unit (docs/model.md §8): the repro's instance (seed 1) with its rates times 1e-8 or 1e-9 GB/s and p_b divided by
    as much, a tier of 5% of the whole demand.  With a slack of 1e-10 GB/s (a fixed part of a GB/s below 1), CBA
    provisioned a tier too few there and called a cost below the MILP's proven optimum optimal; Theorem I2 of
    proofs/cba_integer_gap.md: CBA is exact under tiers with a continuous cache, so both must agree."""
    base = generate_instance("cost", 5, 2, 1)  # type: ignore[arg-type]
    rates = base.job_io_gbps * rate_factor
    inst = base.replace(
        job_io_gbps=rates,
        price_bandwidth=base.price_bandwidth / rate_factor,
        bandwidth_step_gbps=0.05 * float(rates.sum()),
        **({} if cache_gb is None else {"cache_gb": cache_gb}),
    )
    _assert_agree(inst, _accepted_optimum(inst, "cba"), _accepted_optimum(inst, "milp"))


def test_the_milp_solves_a_tier_only_its_lp_relaxation_cannot_hold() -> None:
    """A tier of 3.6e15 GB/s (1e16 × Σ r_j) is a matrix entry of 1e15 or more only in the LP relaxation, which keeps
    β in its row; the integer model's row holds min(β, Σ_j r_j) (Lemma I0 (d) of proofs/cba_integer_gap.md), and
    the tier's price, 3.3e15 $/h, is an objective coefficient HiGHS holds.  So ``lp`` refuses it naming
    cluster.bandwidth_step_gbps and ``milp`` answers it, at CBA's one tier."""
    inst = _cost_instance("tiers", tier_fraction=1e16)
    _assert_agree(inst, _accepted_optimum(inst, "cba"), _accepted_optimum(inst, "milp"))
    lp, _ = _run(inst, "lp")
    assert lp["status"] == Status.ERROR and "cluster.bandwidth_step_gbps" in lp["reason"]


def test_cba_and_milp_agree_at_the_most_tiers_allowed() -> None:
    """The tiers' rule, at its edge: a tier of Σ_j r_j / 2^28 is allowed, and there CBA and the MILP are both
    ``optimal`` at one cost; one ulp smaller is refused naming cluster.bandwidth_step_gbps.  Past it the MILP
    answered ``feasible`` 50% above CBA's proven optimum (a tier of 1e-12 × Σ r_j), or ``error`` "HiGHS stopped:
    kNotset" (1e-20 × Σ r_j)."""
    edge = 1.0 / MAX_TIERS
    inst = _cost_instance("tiers", tier_fraction=edge)
    _assert_agree(inst, _accepted_optimum(inst, "cba"), _accepted_optimum(inst, "milp"))
    with pytest.raises(InstanceError, match=r"cluster\.bandwidth_step_gbps"):
        _cost_instance("tiers", tier_fraction=float(np.nextafter(edge, 0.0)))


def test_a_tier_too_fine_for_highs_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ``bandwidth_step_gbps`` of 1e-20 GB/s was accepted, and ``lp`` and ``milp`` then answered ``error``
    "HiGHS stopped: kNotset" where CBA said ``optimal``.  The loader refuses it, naming the field, the value and
    the limit; the generator's --tier-fraction (generate and compare) is refused by that name."""
    doc = _cost_instance("tiers").to_dict()
    doc["cluster"]["bandwidth_step_gbps"] = 1e-20
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    for method in ("milp", "lp", "cba"):
        assert main(["solve", str(path), "--method", method, "--problem", "cost"]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith("cbalab: error: cluster.bandwidth_step_gbps: ") and "1e-20" in err
        assert str(MAX_TIERS) in err
    for fraction in ("1e-20", "1e-12"):
        for command in (["compare"], ["generate", "--kind", "cost"]):
            argv = [*command, "--jobs", "5", "--datasets", "2", "--variant", "tiers", "--tier-fraction", fraction]
            assert main(argv) == 2
            err = capsys.readouterr().err.strip()
            assert "\n" not in err and err.startswith("cbalab: error: --tier-fraction: ") and fraction in err
