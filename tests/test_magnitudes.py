"""P1's statuses and bounds against the exact optimum, at magnitudes from 1e-12 to 1e22 (docs/model.md §4, §8).

The exact optimum is :func:`cbalab.experiments.runs.magnitude_fuzz.exact_p1`: rationals from the instance's floats,
with C and B as the referee accepts them ((8.1)), by the ρ-ordered fill's closed form for continuous P1 and by
enumeration for the integer variants.  No method may say ``optimal`` above it by more than the tolerance (8.2),
print a bound above it, or say ``infeasible`` where it exists.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from cbalab.algorithms import registry
from cbalab.experiments.runs.magnitude_fuzz import EXACT_METHODS, exact_case, exact_p1, judge
from cbalab.models.certify import simple_allocation
from cbalab.models.evaluate import RTOL, Allocation, block_counts, evaluate
from cbalab.models.exact_bounds import RTOL_BLOCK
from cbalab.models.instance import Instance, build, from_dict

#: A tiers instance where one tier (2.2e22 GB/s) costs far more than caching every read dataset (1.07e20 $/h).
HUGE_TIERS = {
    "schema": "cbalab/instance@1",
    "cluster": {
        "gpus": None,
        "cache_gb": 2.1474836555e20,
        "bandwidth_gbps": None,
        "bandwidth_step_gbps": 2.199023255552e22,
    },
    "prices": {"gpu_per_hour": 0.0, "cache_gb_per_hour": 1.0, "bandwidth_gbps_per_hour": 1.0},
    "datasets": [
        {"id": "d0", "size_gb": 750000000000.0},
        {"id": "d1", "size_gb": 1.073741824e20},
        {"id": "d2", "size_gb": 1.073741824e20},
    ],
    "jobs": [
        {"id": "j0", "dataset": "d2", "gpus": 3, "io_gbps": 1.099511627776e23},
        {"id": "j1", "dataset": "d1", "gpus": 1, "io_gbps": 0.0},
        {"id": "j2", "dataset": "d0", "gpus": 3, "io_gbps": 100.0},
    ],
}


def _doc(inst: Instance, method: str) -> dict:
    doc, _ = registry.run(inst, "cost", method)
    return doc


def _assert_exact(inst: Instance, methods: tuple[str, ...] = EXACT_METHODS) -> None:
    optimum = exact_p1(inst)
    for method in methods:
        j = judge(inst, method, optimum)
        assert not (j.false_optimal or j.wrong_side or j.false_infeasible), (method, j, optimum)


def _huge(**cluster: object) -> Instance:
    doc = json.loads(json.dumps(HUGE_TIERS))
    doc["cluster"].update(cluster)
    return from_dict(doc)


def test_regression_tiers_cache_everything_beats_one_tier() -> None:
    """Theorem I2 of proofs/cba_integer_gap.md at 1e22: CBA's cover of 0 tiers keeps the 100 GB/s of d0 beside the
    1.1e23 GB/s of d2 (tail sums), so it caches both and buys no tier: 1.07e20 $/h, not one tier at 2.2e22."""
    inst = _huge()
    doc = _doc(inst, "cba")
    assert doc["status"] == "optimal"
    assert doc["objective"] < 1.1e20
    assert doc["cost_per_hour"]["bandwidth"] == 0.0
    _assert_exact(inst, ("cba",))


def test_regression_blocks_and_tiers_at_1e22() -> None:
    """Theorems I1 and I4 of proofs/cba_integer_gap.md at 1e22: the block cover finds the fewest blocks by the remote
    IO left (tail sums), so it caches d0's blocks too and buys no tier (the exact optimum checked where the blocks
    are few enough to enumerate)."""
    for block in (7.5e11, 1e15, 1.073741824e20, 5.36870912e19):
        inst = _huge(cache_granularity={"block_gb": block})
        doc = _doc(inst, "cba")
        assert doc["status"] == "optimal", doc
        assert doc["objective"] < 2.2e20, doc
        if block > 1e19:
            _assert_exact(inst, ("cba",))


def test_regression_cache_everything_witness() -> None:
    """docs/model.md §8: the allocation anyone can write down includes every read dataset cached (here 1.07e20 $/h,
    no tier), so a bound at one tier's 2.2e22 $/h is caught whatever a method claims."""
    witness = simple_allocation(_huge(), "cost")
    assert witness is not None
    assert witness[0] == "every read dataset cached"
    assert witness[1] < 1.1e20


def test_regression_gpu_bill_added_exactly() -> None:
    """Lemma 2 of proofs/cba_optimality.md with the GPU bill: one job on one GPU at 2^53 $/h, 3 GB/s of IO, C = 0.
    The optimum is 2^53 + 3 (less 3e-9, what the 1e-9 GB of cache the referee accepts under C = 0 saves); the float
    sum 2^53 + 3 rounds to 2^53 + 4, which no method may print as its bound."""
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([3.0]),
        cache_gb=0.0,
        prices=(2.0**53, 1.0, 1.0),
    )
    optimum = exact_p1(inst)
    assert optimum is not None and 2**53 + 2 < optimum <= 2**53 + 3
    for method in EXACT_METHODS:
        doc = _doc(inst, method)
        assert doc["status"] == "optimal"
        assert Fraction(doc["bound"]) <= optimum, method


def test_regression_gpu_bill_of_three_tenths() -> None:
    """Lemma 2 of proofs/cba_optimality.md with the GPU bill: three 1-GPU jobs at 0.1 $/h and no IO.  The exact bill
    is 3 × 0.1000000000000000055 = 0.3000000000000000166; the float 0.30000000000000004 lies above it."""
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0, 0, 0]),
        job_gpus=np.array([1, 1, 1]),
        job_io_gbps=np.array([0.0, 0.0, 0.0]),
        cache_gb=0.0,
        prices=(0.1, 1.0, 1.0),
    )
    exact = 3 * Fraction(0.1)
    assert exact_p1(inst) == exact
    for method in EXACT_METHODS:
        doc = _doc(inst, method)
        assert doc["status"] == "optimal"
        assert Fraction(doc["bound"]) <= exact, method


def _below_a_billionth_of_a_block() -> Instance:
    """One job at 100 GB/s on a dataset of 1e-10 GB, 1 GB blocks, C = 1, no cap, prices (0, 1, 1)."""
    return build(
        dataset_size_gb=np.array([1e-10]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([100.0]),
        cache_gb=1.0,
        prices=(0.0, 1.0, 1.0),
        cache_granularity="block",
        block_gb=1.0,
    )


def test_regression_dataset_below_a_billionth_of_a_block() -> None:
    """Theorem I1 of proofs/cba_integer_gap.md with docs/model.md §4's block rule: a dataset smaller than 1e-9 of a
    block has no whole block to hold (the referee's count ⌈d/u − 1e-9⌉ is 0), so CBA, lp and milp all feed its job
    remotely, at 100 $/h."""
    inst = _below_a_billionth_of_a_block()
    assert exact_p1(inst) == 100
    for method in ("cba", "lp", "milp"):
        doc = _doc(inst, method)
        assert doc["status"] == "optimal", (method, doc)
        assert doc["objective"] == 100.0


def test_regression_cache_below_one_gigabyte() -> None:
    """Theorem 1 of proofs/cba_optimality.md for C as the referee accepts it ((8.1)): C = 1e-12 GB accepts 1e-9 GB
    of cache, which holds the whole 1e-11 GB dataset.  Caching 1e-12 GB of it (29.7 $/h) is no optimum: every
    method answers 1e-11 $/h, or prints a bound at or below it."""
    inst = build(
        dataset_size_gb=np.array([1e-11]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([32.98]),
        cache_gb=1e-12,
        prices=(0.0, 1.0, 1.0),
    )
    optimum = exact_p1(inst)
    assert optimum is not None and optimum < Fraction(2e-11)
    for method in EXACT_METHODS:
        doc = _doc(inst, method)
        assert doc["status"] == "optimal", (method, doc)
        assert doc["objective"] < 2e-11, method
        assert Fraction(doc["bound"]) <= optimum, method


def test_referee_counts_no_block_below_a_billionth() -> None:
    """docs/model.md §4, the block rule: the referee refuses one block for a dataset below 1e-9 of a block."""
    inst = _below_a_billionth_of_a_block()
    one = Allocation(inst.job_gpus.copy(), np.array([1.0]), np.array([0.0]))
    assert not evaluate(inst, one, "cost").feasible
    assert block_counts(inst.dataset_size_gb, 1.0)[0] == 0
    assert RTOL_BLOCK == RTOL  # the bound's block count is the referee's


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_p1_methods_never_beyond_the_exact_optimum_at_any_magnitude(seed: int) -> None:
    """Theorem 1 and Lemma 2 of proofs/cba_optimality.md and Theorems I1-I5 of proofs/cba_integer_gap.md, with the
    bounds of docs/model.md §8: on tiny P1 instances whose sizes, rates and prices lie anywhere from 1e-12 to 1e22
    (:func:`cbalab.experiments.runs.magnitude_fuzz.exact_case`), cba, lp, milp and flow never say ``optimal`` above
    the exact optimum by more than the tolerance (8.2), never print a bound above it, and never say ``infeasible``
    where it exists."""
    _assert_exact(exact_case(np.random.default_rng(seed)))
