"""The per-job cost policies' rules on arrays: cache-all's, coordl's and quiver's answers stated once,
called by the registered function and by a replay's events without an instance (algorithms/registry.py,
``on_jobs``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from strategies import cost_instances

from cbalab.algorithms import registry
from cbalab.algorithms.online import Resolved
from cbalab.experiments.replay import run as run_replay
from cbalab.experiments.simulate import Replay, SimConfig
from cbalab.experiments.workload import Workload, assign, generate_trace
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions

PER_JOB = [m for m in registry.select(problem="cost") if m.on_jobs is not None]


def _bits(a: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """An array's dtype, shape and bytes: equal exactly when the arrays are the same to the last bit (−0.0 too)."""
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def test_the_policies_with_a_rule_on_the_jobs_are_cache_all_coordl_and_quiver() -> None:
    assert sorted(m.name for m in PER_JOB) == ["cache-all", "coordl", "quiver"]
    assert all(not m.aggregable and m.online is None and m.on_demand is None for m in PER_JOB)


def test_a_rule_must_match_the_entrys_aggregability() -> None:
    """A rule on the jobs for an aggregable entry, or on the demands for a per-job one, is refused; the
    registry is left as it was."""
    before = registry.all_methods()
    with pytest.raises(ValueError, match="on_jobs"):
        registry.register("x", "cost", "m:f", "x", aggregable=True, on_jobs="m:g")
    with pytest.raises(ValueError, match="on_demand"):
        registry.register("x", "cost", "m:f", "x", on_demand="m:g")
    assert registry.all_methods() == before


@pytest.mark.parametrize("name", [m.name for m in PER_JOB])
@settings(deadline=None)
@given(inst=cost_instances())
def test_a_job_rule_gives_the_policys_answer_on_the_instance_of_the_jobs_bit_for_bit(name: str, inst: Instance) -> None:
    """The rule a replay calls at every event is the registered function on the instance of the running jobs
    (continuous P1, docs/model.md §4): the same cache per dataset and the same per-job bandwidths summed per
    dataset in job order, to the last bit."""
    method = registry.get("cost", name)
    rule = method.job_rule()
    assert rule is not None
    alloc = method.function()(inst, SolveOptions())
    assert alloc.has_allocation
    d, kj, r = inst.dataset_size_gb, inst.job_dataset, inst.job_io_gbps
    got = rule(d, kj.copy(), r.copy(), inst.cache_gb, inst.bandwidth_gbps, inst.price_cache, inst.price_bandwidth)
    assert got is not None
    cache, bw = got
    per_dataset = np.bincount(kj, weights=np.asarray(alloc.bandwidth_gbps, dtype=float), minlength=inst.n_datasets)
    assert _bits(cache) == _bits(np.asarray(alloc.cache_gb, dtype=float))
    assert _bits(bw) == _bits(per_dataset)


def _workload() -> Workload:
    return assign(generate_trace(300, 3), 3, skew=1.2, n_datasets=12)


def _replay(workload: Workload, cfg: SimConfig, *, rule: bool) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """A replay's jobs, time series and summary (its wall time left out), through the policy's rule on the jobs
    or, with ``rule`` False, through the online protocol on an instance of the running jobs."""
    replay = Replay(workload, cfg)
    assert replay.policy.job_rule is not None
    if not rule:
        replay.policy.job_rule = None
    result = run_replay(replay, period_s=cfg.period_s)
    result.drop_timing()
    return result.jobs, result.timeseries, result.summary


@pytest.mark.parametrize("name", [m.name for m in PER_JOB])
@pytest.mark.parametrize(
    "setting",
    [
        {},
        {"bandwidth_gbps": 0.05},
        {"warmup": False, "bandwidth_gbps": 0.05},
        {"cache_gb": 5.0, "period_s": 900.0},
        {"cache_gb": 0.0, "prices": (2.5, 0.05, 0.9)},
    ],
)
def test_a_replay_through_the_job_rule_equals_one_through_the_instance(name: str, setting: dict) -> None:
    """experiments/simulate.py asks a per-job policy by its rule on the running jobs: every job's times, stall
    and cost share, every row of the time series and the summary are the same bits as through the instance
    (caps that bind, instant caches, periods, no cache)."""
    workload = _workload()
    cfg = SimConfig(**{"policy": name, "gpus": 24, "cache_gb": 60.0, "bandwidth_gbps": math.inf, **setting})
    jobs, series, summary = _replay(workload, cfg, rule=True)
    jobs_i, series_i, summary_i = _replay(workload, cfg, rule=False)
    for a, b in ((jobs, jobs_i), (series, series_i)):
        assert list(a.columns) == list(b.columns)
        for column in a.columns:
            if a[column].dtype == object:
                assert list(a[column]) == list(b[column])
            else:
                assert _bits(a[column].to_numpy()) == _bits(b[column].to_numpy())
    assert summary == summary_i


def test_an_online_policy_given_explicitly_is_asked_through_the_instance() -> None:
    """The rule stands only for the static entry re-solved at every event: a policy object handed to the replay
    is asked through the online protocol."""
    cfg = SimConfig(policy="quiver", gpus=24, cache_gb=60.0)
    online = Resolved(registry.get("cost", "quiver").function(), SolveOptions())
    assert Replay(_workload(), cfg, online).policy.job_rule is None
    assert Replay(_workload(), cfg).policy.job_rule is not None
