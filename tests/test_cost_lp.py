"""P1's LP compiled from its one statement (models/milp/cost.py), unscaled, and solved by highspy
(models/solve.py, solve_arrays), against CBA's closed form (proofs/cba_optimality.md, Theorem 1): the LP that
experiments/runs/scaling.py times against CBA."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cbalab.algorithms.cba import cba
from cbalab.experiments.workload import generate_cost
from cbalab.models.evaluate import MODEL_SHARE, evaluate, tolerated
from cbalab.models.instance import Instance, build
from cbalab.models.milp.cost import cost_statement
from cbalab.models.solve import Outcome, solve_arrays


def _solve(inst: Instance) -> tuple[Outcome, np.ndarray | None]:
    """The LP's outcome and its cache c_k = d_k h_k (None without a solution)."""
    arrays = cost_statement(inst, relax=True).compile()
    out, x, _ = solve_arrays(arrays)
    return out, None if x is None else np.clip(arrays.part("hit", x), 0.0, 1.0) * inst.dataset_size_gb


def _instances() -> list[Instance]:
    """Small generated instances under no cap, a loose cap, the tight cap and a cap below it."""
    out = []
    for seed in range(6):
        inst = generate_cost(12 + 3 * seed, 2 + seed, seed, skew=0.5 * seed, cache_fraction=0.1 + 0.15 * seed)
        total = float(inst.job_io_gbps.sum())
        least = float(cba(inst.replace(price_cache=0.0, price_bandwidth=1.0)).bandwidth_gbps.sum())
        for bandwidth in (math.inf, 0.5 * (least + total), least, least - 1e-3 * total):
            out.append(inst.replace(bandwidth_gbps=max(bandwidth, 0.0)))
    return out


@pytest.mark.parametrize("inst", _instances())
def test_highspy_lp_has_the_optimum_of_cba(inst: Instance) -> None:
    """Theorem 1: the LP's optimum is CBA's cost (to HiGHS's 1e-7 tolerances); infeasible exactly when CBA is."""
    ours, cache = _solve(inst)
    reference = cba(inst)
    if ours.status != "optimal":
        assert reference.status == "infeasible", (ours.status, reference.status)
        return
    assert cache is not None and ours.objective is not None
    scale = inst.price_bandwidth * float(inst.job_io_gbps.sum()) + inst.price_cache * inst.cache_gb
    assert cache.sum() <= inst.cache_gb * (1 + 1e-7)
    assert (cache >= 0).all() and (cache <= inst.dataset_size_gb).all()
    total = evaluate(inst, reference, "cost").cost_total
    assert abs(ours.objective - total) <= 1e-7 * (scale + abs(total))


def test_a_slow_job_on_a_huge_dataset_stays_feasible() -> None:
    """r_j / d_k = 1e-11 (below HiGHS's 1e-9 drop threshold) must not make a feasible instance infeasible.

    The GB form of the feeding row had that coefficient; the hit-ratio form has r_j.  B = 0.5e-6 GB/s is taken
    as the referee accepts it, with 0.999e-9 GB/s of slack (docs/model.md (8.1)), by the LP and CBA alike.
    """
    inst = build(
        dataset_size_gb=np.array([1e5, 10.0]),
        job_dataset=np.array([0, 1]),
        job_gpus=np.array([1, 1]),
        job_io_gbps=np.array([1e-6, 1.0]),
        cache_gb=1e5 + 10.0,
        bandwidth_gbps=0.5e-6,
        prices=(2.5, 1e-9, 0.9),
    )
    ours, cache = _solve(inst)
    assert ours.status == "optimal" and cache is not None and ours.objective is not None, ours.status
    assert cache[0] >= (1.0 - tolerated(0.5e-6, MODEL_SHARE) / 1e-6) * 1e5 * (1 - 1e-6)
    assert abs(ours.objective - evaluate(inst, cba(inst), "cost").cost_total) <= 1e-9
