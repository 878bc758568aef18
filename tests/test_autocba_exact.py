"""AutoCBA's exact mode (algorithms/autocba/exact.py) against brute force: Theorem F.

Theorem F of proofs/autocba_guarantee.md: when the branch and bound finishes within its node budget, its
answer is optimal for P2; AutoCBA then reports status ``optimal``.  The reference is brute force over every
option choice, fed at least cost by CBA (tests/test_autocba.py).
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_autocba import TOL, _check_feasible, _instance, brute_force, tiny_instances

from cbalab.algorithms.autocba import autocba, welfare_bound
from cbalab.algorithms.autocba.certificate import Dual
from cbalab.algorithms.autocba.exact import exact_search
from cbalab.algorithms.cba import feed
from cbalab.models.instance import Instance


@given(tiny_instances())
def test_exact_search_finds_the_brute_force_optimum(inst: Instance) -> None:
    """Theorem F: from incumbent 0 the search finishes (≤ 4 jobs: at most 341 nodes) at the brute-force optimum.

    Any instance: caching, a finite B, G, non-concave tables.  AutoCBA, which runs the search when its
    certificate does not already close the gap (``exact=True``), then reports ``optimal`` at the same welfare.
    """
    opt = brute_force(inst)
    found = exact_search(inst, 0.0, np.asarray(welfare_bound(inst).multipliers))
    assert found.proven
    assert abs(found.welfare - opt) <= TOL * max(1.0, opt)
    alloc = autocba(inst, exact=True)
    welfare = _check_feasible(inst, alloc)
    assert alloc.status == "optimal"
    assert abs(welfare - opt) <= TOL * max(1.0, opt)
    assert alloc.bound >= opt - TOL * max(1.0, opt)


def restricted_optimum(inst: Instance, allowed: list[list[int]]) -> float:
    """Brute force over the choices ``allowed[j]`` (option rows, −1 none) of each job; −inf if none is feasible."""
    best = -np.inf
    for pick in itertools.product(*allowed):
        rows = [o for o in pick if o >= 0]
        gpus = int(inst.option_gpus[rows].sum()) if rows else 0
        if inst.gpus is not None and gpus > inst.gpus:
            continue
        rates = np.array([inst.option_io_gbps[o] if o >= 0 else 0.0 for o in pick])
        f = feed(inst, rates)
        if f.cache_gb is None or inst.price_gpu * gpus + f.io_cost > inst.budget_per_hour * (1 + 1e-12):
            continue
        best = max(best, float(inst.option_utility[rows].sum()) if rows else 0.0)
    return best


@given(tiny_instances(), st.data())
def test_restricted_dual_bounds_the_restricted_optimum(inst: Instance, data: st.DataObject) -> None:
    """Theorem F's pruning rule: the dual with some jobs fixed bounds the optimum over their completions.

    Jobs are fixed at a drawn choice (an option, or none) in the dual's table exactly as the search does;
    the value at the certificate's multipliers and at zero must be at least the restricted brute force.
    """
    dual = Dual(inst)
    table = dual.U.copy()
    allowed = []
    for j in range(inst.n_jobs):
        rows = list(range(int(inst.option_ptr[j]), int(inst.option_ptr[j + 1])))
        choice = data.draw(st.sampled_from(["free", -1, *rows]))
        if choice == "free":
            allowed.append([-1, *rows])
            continue
        c = 0 if choice == -1 else int(choice) - int(inst.option_ptr[j]) + 1
        keep = table[j, c]
        table[j] = -np.inf
        table[j, c] = keep
        allowed.append([int(choice)] if np.isfinite(keep) else [])
    opt = restricted_optimum(inst, allowed)
    if not np.isfinite(opt):
        return
    for x in (np.asarray(welfare_bound(inst).multipliers), np.zeros(4)):
        value = dual.value(x, table)
        assert value >= opt - TOL * max(1.0, abs(opt))


def test_exact_search_out_of_nodes_claims_nothing() -> None:
    """A search stopped by its node budget is not proven, and AutoCBA without it keeps status ``feasible``.

    Budget 10 $/h, p_g = 1: A (1 GPU, worth 2), B and C (5 GPUs, worth 9 each); the optimum B + C = 18 needs
    more than one node, and the greedy alone (no swaps, no enumeration) stops at 11.
    """
    inst = _instance(
        [1.0, 1.0, 1.0],
        [0, 1, 2],
        [[(1, 0.0, 2.0)], [(5, 0.0, 9.0)], [(5, 0.0, 9.0)]],
        prices=(1.0, 0.0, 0.0),
        budget=10.0,
    )
    multipliers = np.asarray(welfare_bound(inst).multipliers)
    stopped = exact_search(inst, 11.0, multipliers, node_limit=1)
    assert not stopped.proven
    full = exact_search(inst, 11.0, multipliers)
    assert full.proven and full.welfare == 18.0 and full.pick is not None
    assert full.pick.tolist() == [-1, 1, 2]
    naive = autocba(inst, swaps=0, enumerate_guesses=False, exact=False)
    assert _check_feasible(inst, naive) == 11.0 and naive.status == "feasible"
    exact = autocba(inst, swaps=0, enumerate_guesses=False, exact=True)
    assert _check_feasible(inst, exact) == 18.0 and exact.status == "optimal"
    assert exact.facts.source == "exact search"
