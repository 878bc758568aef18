"""Replays computed once: the rule on the demands of each aggregable cost policy, and the runs of a
grid declared one computation (experiments/runner.py, ``shared_runs``;
docs/adr/0003-replays-computed-once.md)."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cbalab.algorithms import registry
from cbalab.experiments import runner
from cbalab.experiments.runs import io_cost
from cbalab.experiments.workload import datasets_total_gb
from cbalab.models.instance import Instance, aggregate
from cbalab.models.types import SolveOptions

RULED = [m for m in registry.select(problem="cost") if m.on_demand is not None]


def _aggregate(d: np.ndarray, R: np.ndarray, C: float, B: float, p_c: float, p_b: float) -> Instance:
    """One pseudo-job of rate R_k per dataset (docs/model.md §4), as a replay builds it."""
    return aggregate(d, R, C, B, (2.5, p_c, p_b))


@st.composite
def demands(draw: st.DrawFn) -> tuple:
    k = draw(st.integers(1, 20))
    d = np.array(draw(st.lists(st.floats(0.5, 300.0), min_size=k, max_size=k)))
    R = np.array(draw(st.lists(st.one_of(st.just(0.0), st.floats(1e-4, 5.0)), min_size=k, max_size=k)))
    C = draw(st.one_of(st.just(0.0), st.floats(0.0, float(d.sum()) * 1.5)))
    total = float(R.sum())
    B = draw(st.one_of(st.just(math.inf), st.floats(0.0, 2.0 * total + 1.0), st.just(total)))
    p_c = draw(st.floats(1e-5, 0.01))
    p_b = draw(st.floats(0.01, 2.0))
    return d, R, C, B, p_c, p_b


def test_the_aggregable_policies_with_a_demand_rule_are_cba_io_only_and_silod() -> None:
    assert sorted(m.name for m in RULED) == ["cba", "io-only", "silod"]
    assert all(m.aggregable and m.online is None for m in RULED)


@pytest.mark.parametrize("name", [m.name for m in RULED])
@settings(deadline=None)
@given(case=demands())
def test_a_demand_rule_gives_the_policys_answer_on_the_aggregate_instance_bit_for_bit(name: str, case: tuple) -> None:
    """The rule a replay calls at every event (algorithms/registry.py, ``on_demand``) is the registered
    function on the aggregate instance (docs/model.md §4; for cba Theorem 1 of proofs/cba_optimality.md): the
    same cache and bandwidth, to the last bit, and no answer exactly when the function finds the instance
    infeasible."""
    d, R, C, B, p_c, p_b = case
    method = registry.get("cost", name)
    rule = method.demand_rule()
    assert rule is not None
    alloc = method.function()(_aggregate(d, R, C, B, p_c, p_b), SolveOptions())
    got = rule(d, R.copy(), C, B, p_c, p_b)
    assert (got is None) == (not alloc.has_allocation)
    if got is not None:
        cache, bw = got
        np.testing.assert_array_equal(cache, np.asarray(alloc.cache_gb, dtype=float))
        np.testing.assert_array_equal(bw, np.asarray(alloc.bandwidth_gbps, dtype=float))


def _pad_module() -> types.ModuleType:
    """A toy experiment whose ``pad`` parameter changes nothing, declared so by ``same_run``."""
    mod = types.ModuleType("pad_experiment")
    mod.NAME = "pad"  # type: ignore[attr-defined]
    mod.grid = lambda quick, seed: [{"x": x, "pad": p} for x in range(4) for p in (1, 2)]  # type: ignore[attr-defined]
    mod.run_one = lambda params: {"value": float(params["x"]) ** 0.5}  # type: ignore[attr-defined]
    mod.same_run = lambda params: (params["x"], f"pad {params['pad']} changes nothing")  # type: ignore[attr-defined]
    mod.figures = lambda runs, outdir: []  # type: ignore[attr-defined]
    return mod


def test_a_run_declared_the_same_as_an_earlier_one_is_run_once_and_its_row_names_it(tmp_path: Path) -> None:
    """experiments/runner.py ``shared_runs``: the first run of a computation runs, the later one takes its
    result under its own parameters, with the first run's key and the reason in its row."""
    mod = _pad_module()
    sys.modules[mod.__name__] = mod
    try:
        sweep = runner.run_sweep("pad", tmp_path, module=mod, progress=False)
    finally:
        del sys.modules[mod.__name__]
    rows = sweep.runs
    assert sweep.done == 4 and len(rows) == 8
    assert len(list((tmp_path / "pad" / "runs").glob("*.json"))) == 4
    first = rows[rows["pad"] == 1].set_index("x")
    later = rows[rows["pad"] == 2].set_index("x")
    assert (first["same_run_as"] == "").all()
    assert list(later["same_run_as"]) == list(first["run_key"])
    assert list(later["same_run_reason"]) == ["pad 2 changes nothing"] * 4
    pd.testing.assert_series_equal(first["value"], later["value"])


def test_io_cost_shares_exactly_the_runs_whose_cache_holds_every_dataset() -> None:
    """docs/adr/0003-replays-computed-once.md: a shared io-cost run differs from the run it takes its row
    from in C alone, and both Cs hold every dataset; 135 of the 945 runs are shared."""
    grid = io_cost.grid(False, 0)
    by_key = {runner.run_key(p): p for p in grid}
    shared = runner.shared_runs(io_cost, grid)
    assert len(grid) == 945 and len(shared) == 135
    for key, (source, reason) in shared.items():
        a, b = by_key[key], by_key[source]
        assert {k for k in a if a[k] != b[k]} == {"cache_gb"}
        total = datasets_total_gb(int(a["n_datasets"]))
        assert min(a["cache_gb"], b["cache_gb"]) >= total
        assert reason.startswith(f"C = {a['cache_gb']:g} GB holds all")


@pytest.mark.slow
@pytest.mark.parametrize("policy", io_cost.POLICIES)
def test_a_cache_that_holds_every_dataset_gives_one_replay_whatever_its_size(policy: str) -> None:
    """The argument of docs/adr/0003-replays-computed-once.md, checked: 200 Philly jobs on the 12 datasets
    (227.7 GB) give the same row at C = 250, 500 and 2,000 GB for every policy, computed separately."""
    blind = policy in io_cost.PRICE_BLIND
    rows = []
    for cache in (250.0, 500.0, 2000.0):
        params = {
            "policy": policy,
            "trace_jobs": 200,
            "price_ratio": None if blind else io_cost.PRICE_RATIOS[2],
            "n_datasets": 12,
            "skew": 1.0,
            "cache_gb": cache,
            "bandwidth_gbps": None,
            "warmup": True,
            "replicate": 0,
            "seed": 5,
        }
        assert io_cost.same_run(params) is not None
        row = io_cost.run_one(params)
        row.pop("replay_seconds")
        rows.append({k: repr(v) for k, v in row.items()})  # as text, so that NaN equals NaN
    assert rows[0] == rows[1] == rows[2]
    assert float(rows[0]["cache_cost_usd"]) > 0 or policy == "io-only"
