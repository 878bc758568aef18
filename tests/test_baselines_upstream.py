"""cbalab's GPU schedulers against their upstream code's own outputs (tests/fixtures/upstream/).

The fixtures were made once by scripts/upstream_fixtures.py (then experiments/upstream_fixtures.py, the path their
``generator`` records), which ran the upstream code unchanged:
Gavel's ``ThroughputSumWithPerf`` and ``MaxMinFairnessPolicyWithPerf`` (stanford-futuredata/gavel c4fa400, cvxpy
with ECOS) and Pollux's ``OptimusPolicy`` (petuum/adaptdl osdi21-artifact c793c70).  Each case becomes a cbalab
instance whose option tables say what the upstream job says: one option at its scale factor for Gavel (rate =
throughput, so the raw form sums Gavel's throughputs), the counts 1 .. max_replicas for Optimus (rate = 1 / step
time, remaining work = iterations × step time at 1 GPU).  Where the two settings coincide the allocations must be
equal; where Gavel's LP answer is fractional or not unique, the objective must agree within the solver's tolerance.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cbalab.algorithms.baselines import gavel_fair, gavel_tput, optimus
from cbalab.models.instance import Instance, build

FIXTURES = Path(__file__).parent / "fixtures" / "upstream"
#: ECOS's x is off a vertex by about 1e-7 (the fixture script's report); comparisons allow this much.
SOLVER_TOL = 1e-6


def _cases(name: str) -> list[dict]:
    return json.loads((FIXTURES / f"{name}.json").read_text())["cases"]


def _gavel_instance(case: dict) -> Instance:
    """One option per job, at its scale factor, with rate = throughput; G = the case's GPUs; no money limits."""
    jobs = case["jobs"]
    n = len(jobs)
    return build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.zeros(n, dtype=np.int64),
        cache_gb=0.0,
        prices=(1.0, 0.0, 0.0),
        gpus=int(case["gpus"]),
        options=(
            np.arange(n + 1),
            np.array([j["scale_factor"] for j in jobs]),
            np.array([j["throughput"] for j in jobs], dtype=float),
            np.ones(n),
        ),
        job_ids=tuple(j["id"] for j in jobs),
    )


@pytest.mark.parametrize("case", _cases("gavel_max_sum_throughput"), ids=lambda c: f"seed{c['seed']}")
def test_gavel_tput_raw_matches_gavel_max_sum_throughput(case: dict) -> None:
    """Raw gavel-tput on Gavel's instances: Gavel's LP value bounds cbalab's whole-option optimum, which loses at
    most one job's throughput (the LP has at most one fractional job); where Gavel's x is whole, x is cbalab's."""
    inst = _gavel_instance(case)
    T = inst.option_io_gbps
    s = inst.option_gpus
    x_up = np.array([case["allocation"][j] for j in inst.job_ids])
    gpus = gavel_tput.allocate(inst, int(case["gpus"]), raw=True).gpus
    mine = float(T[gpus > 0].sum())
    assert float(np.dot(s, gpus > 0)) <= case["gpus"]
    assert mine <= case["objective"] * (1 + SOLVER_TOL)
    assert mine >= case["objective"] - float(T.max()) - SOLVER_TOL
    whole = np.all(np.minimum(x_up, 1 - x_up) <= SOLVER_TOL)
    if whole:
        assert (gpus > 0).tolist() == (x_up > 0.5).tolist()
        assert mine == pytest.approx(case["objective"], rel=SOLVER_TOL)


def test_the_gavel_max_sum_fixtures_have_whole_and_fractional_cases() -> None:
    """The comparison above covers both regimes: some upstream answers are whole, some are fractional."""
    whole = [
        all(min(x, 1 - x) <= SOLVER_TOL for x in c["allocation"].values()) for c in _cases("gavel_max_sum_throughput")
    ]
    assert any(whole) and not all(whole)


@pytest.mark.parametrize("case", _cases("gavel_max_min_fairness"), ids=lambda c: f"seed{c['seed']}")
def test_gavel_fair_matches_gavel_max_min_fairness(case: dict) -> None:
    """gavel-fair's time shares are optimal for Gavel's LP: feasible (Σ s x ≤ G, x ≤ 1) with the same worst-off
    GPU-time share min_j s_j x_j as upstream's, min(G/n, min_j s_j); where that optimum is unique (G/n ≤ min s,
    every job held at G/n exactly), the shares are upstream's; and both of Gavel's policies agree."""
    inst = _gavel_instance(case)
    sched = gavel_fair.allocate(inst, int(case["gpus"]), placed=False)
    assert sched.share is not None
    s = inst.option_gpus
    assert sched.gpus.tolist() == s.tolist()
    held = s * sched.share
    assert held.sum() <= case["gpus"] * (1 + 1e-12)
    assert np.all(sched.share <= 1)
    assert held.min() == pytest.approx(case["objective"], rel=SOLVER_TOL)
    n = inst.n_jobs
    assert held.min() == pytest.approx(min(case["gpus"] / n, float(s.min())), rel=1e-12)
    x_up = np.array([case["allocation"][j] for j in inst.job_ids])
    x_plain = np.array([case["allocation_plain"][j] for j in inst.job_ids])
    np.testing.assert_allclose(x_up, x_plain, atol=SOLVER_TOL)
    if case["gpus"] / n <= s.min():
        np.testing.assert_allclose(sched.share, x_up, atol=SOLVER_TOL)


def test_the_gavel_max_min_fixtures_cover_fewer_gpus_than_jobs() -> None:
    """The case that starved jobs in the old progressive filling (G < n) is among the fixtures."""
    assert sum(c["gpus"] < len(c["jobs"]) for c in _cases("gavel_max_min_fairness")) >= 5


def _optimus_instance(case: dict) -> Instance:
    """Options 1 .. max_replicas with rate 1 / step_time(n); work = iterations × step_time(1) in hours."""
    jobs = case["jobs"]
    n = len(jobs)
    counts = [int(j["max_replicas"]) for j in jobs]
    ptr = np.concatenate([[0], np.cumsum(counts)])
    return build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.zeros(n, dtype=np.int64),
        cache_gb=0.0,
        prices=(1.0, 0.0, 0.0),
        gpus=int(sum(case["nodes"])),
        options=(
            ptr,
            np.concatenate([np.arange(1, m + 1) for m in counts]),
            np.concatenate([1.0 / np.asarray(j["step_time"], dtype=float) for j in jobs]),
            np.ones(int(ptr[-1])),
        ),
        job_ids=tuple(j["id"] for j in jobs),
        job_work=np.array([j["remaining_iterations"] * j["step_time"][0] / 3600.0 for j in jobs]),
    )


@pytest.mark.parametrize("case", _cases("pollux_optimus"), ids=lambda c: f"seed{c['seed']}")
def test_optimus_matches_pollux_optimus(case: dict) -> None:
    """cbalab's optimus gives every job exactly the GPUs Pollux's OptimusPolicy.optimize gives it."""
    inst = _optimus_instance(case)
    gpus = optimus.allocate(inst, int(sum(case["nodes"]))).gpus
    assert dict(zip(inst.job_ids, gpus.tolist())) == case["allocation"]


def test_the_optimus_fixtures_cover_scarce_gpus_and_noisy_tables() -> None:
    """Fewer GPUs than jobs (arrival order decides) and non-monotone step times (a job stops) are both covered."""
    cases = _cases("pollux_optimus")
    assert sum(sum(c["nodes"]) < len(c["jobs"]) for c in cases) >= 5
    assert sum(bool(c["noisy_step_times"]) for c in cases) >= 5
    assert all(sum(c["allocation"].values()) <= sum(c["nodes"]) for c in cases)
