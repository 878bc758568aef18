"""The trace-driven simulator (experiments/simulate.py): conservation, warm-up, queueing and the static limit."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from cbalab.algorithms import registry as methods
from cbalab.cli import main
from cbalab.experiments.simulate import SimConfig, simulate
from cbalab.experiments.workload import Workload, assign, generate_trace
from cbalab.models.instance import InstanceError, build

PRICES = (2.5, 0.0004, 0.9)


def _workload(submit, duration, gpus, dataset, rate, sizes) -> Workload:
    n = len(submit)
    jobs = pd.DataFrame(
        {
            "line": np.zeros(n, dtype=np.int64),
            "job_id": [f"j{i}" for i in range(n)],
            "submit_s": np.asarray(submit, float),
            "duration_s": np.asarray(duration, float),
            "gpus": np.asarray(gpus, dtype=np.int64),
            "model": ["m"] * n,
            "dataset": [f"d{k}" for k in dataset],
            "dataset_index": np.asarray(dataset, dtype=np.int64),
            "io_gbps": np.asarray(rate, float),
        }
    )
    datasets = pd.DataFrame({"dataset": [f"d{k}" for k in range(len(sizes))], "size_gb": np.asarray(sizes, float)})
    return Workload(jobs, datasets, {"seed": 0})


def _generated(n: int = 300, seed: int = 3) -> Workload:
    return assign(generate_trace(n, seed), seed, skew=1.2, n_datasets=12)


def _integral(series: pd.DataFrame, column: str) -> float:
    """∫ column dt over the replay, each row's value holding until the next row (per hour of the $/h rates)."""
    t = series["time_s"].to_numpy()
    return float(np.sum(series[column].to_numpy()[:-1] * np.diff(t)) / 3600.0)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["cba", "cache-all", "coordl", "quiver", "silod", "io-only"])
@pytest.mark.parametrize("bandwidth", [math.inf, 0.05])
def test_conservation(policy: str, bandwidth: float) -> None:
    w = _generated()
    res = simulate(w, SimConfig(policy=policy, gpus=24, cache_gb=60.0, bandwidth_gbps=bandwidth))
    jobs, series, summary = res.jobs, res.timeseries, res.summary
    # No job finishes faster than its compute-bound time; a stalled job is late by exactly its stall time.
    assert (jobs["end_s"] >= jobs["submit_s"] + jobs["duration_s"]).all()
    assert (jobs["start_s"] >= jobs["submit_s"]).all()
    late = jobs["end_s"] - jobs["start_s"] - jobs["duration_s"]
    assert np.allclose(late, jobs["stall_s"], atol=1e-6 * jobs["end_s"].max())
    assert summary["stall_hours"] == pytest.approx(jobs["stall_s"].sum() / 3600.0)
    # GPU-hours: the integral of busy GPUs equals the per-job sum.
    per_job = float((jobs["gpus"] * (jobs["end_s"] - jobs["start_s"])).sum() / 3600.0)
    assert summary["gpu_hours"] == pytest.approx(per_job, rel=1e-9)
    assert _integral(series, "gpus_busy") == pytest.approx(per_job, rel=1e-9)
    # Cost integrals match the time series, and the jobs' shares add up to the total.
    cost = summary["cost"]
    assert _integral(series, "cost_per_hour") == pytest.approx(cost["total"], rel=1e-9)
    for part in ("gpu", "cache", "bandwidth"):
        assert _integral(series, f"{part}_cost_per_hour") == pytest.approx(cost[part], rel=1e-9, abs=1e-12)
    assert cost["io"] == pytest.approx(cost["cache"] + cost["bandwidth"])
    assert jobs["cost"].sum() == pytest.approx(cost["total"], rel=1e-9)
    assert summary["jobs"] == len(w.jobs) and jobs["end_s"].notna().all()
    if math.isinf(bandwidth):
        assert summary["stall_hours"] == 0.0
    else:
        assert summary["stall_hours"] > 0.0 and (series["bandwidth_gbps"] <= bandwidth * (1 + 1e-9)).all()


def test_warm_up_fills_caches_monotonically_and_costs_more_than_instant_caches() -> None:
    # Three long jobs on one dataset from t = 0: CBA caches it whole; the cache fills only by remote reads.
    w = _workload([0, 0, 0], [5000, 5000, 5000], [1, 1, 1], [0, 0, 0], [0.1, 0.1, 0.1], [60.0])
    warm = simulate(w, SimConfig(policy="cba", gpus=8, cache_gb=100.0))
    cold = simulate(w, SimConfig(policy="cba", gpus=8, cache_gb=100.0, warmup=False))
    filled = warm.timeseries["cache_filled_gb"].to_numpy()
    running = warm.timeseries["running_jobs"].to_numpy() > 0
    assert np.all(np.diff(filled[running]) >= -1e-12)
    assert filled[0] == 0.0 and warm.timeseries["cache_gb"].iloc[0] == pytest.approx(60.0)
    # The first slot reads everything remotely at 0.3 GB/s, which fills 60 GB in 200 s.
    assert warm.timeseries["time_s"].iloc[1] == pytest.approx(200.0)
    assert filled[1] == pytest.approx(60.0)
    assert warm.summary["cost"]["bandwidth"] == pytest.approx(0.9 * 0.3 * 200 / 3600)
    assert cold.summary["cost"]["bandwidth"] == 0.0
    assert warm.summary["cost"]["io"] > cold.summary["cost"]["io"]
    assert (warm.jobs["jct_s"] == 5000.0).all()


def test_instant_caches_with_every_job_at_once_reproduce_the_static_cba_cost_rate() -> None:
    rng = np.random.default_rng(5)
    n, k = 40, 8
    dataset = rng.integers(0, k, n)
    rate = rng.lognormal(np.log(0.05), 0.8, n)
    gpus = rng.choice([1, 2, 4], n)
    sizes = rng.lognormal(np.log(30.0), 1.0, k)
    w = _workload(np.zeros(n), np.full(n, 3600.0), gpus, dataset, rate, sizes)
    res = simulate(w, SimConfig(policy="cba", gpus=int(gpus.sum()), cache_gb=80.0, warmup=False))
    inst = build(
        dataset_size_gb=sizes,
        job_dataset=dataset,
        job_gpus=gpus,
        job_io_gbps=rate,
        cache_gb=80.0,
        prices=PRICES,
    )
    doc, ev = methods.run(inst, "cost", "cba")
    assert doc["status"] == "optimal"
    first = res.timeseries.iloc[0]
    assert first["running_jobs"] == n
    assert first["cost_per_hour"] == pytest.approx(ev.cost_total, rel=1e-12)
    assert first["cache_gb"] == pytest.approx(sum(doc["cache_gb"].values()))
    assert res.summary["cost"]["total"] == pytest.approx(ev.cost_total, rel=1e-9)  # one hour at that rate


@pytest.mark.parametrize("policy", methods.names("cost"))
def test_a_single_job_has_the_same_jct_under_every_policy_when_io_is_unconstrained(policy: str) -> None:
    w = _workload([7.0], [1234.0], [2], [0], [0.3], [50.0])
    res = simulate(w, SimConfig(policy=policy, gpus=2, cache_gb=10.0))
    assert res.jobs["jct_s"].iloc[0] == 1234.0 and res.jobs["stall_s"].iloc[0] == 0.0


def test_gpus_are_a_strict_fifo_queue() -> None:
    w = _workload([0, 1, 2], [100, 50, 10], [4, 4, 1], [0, 0, 0], [0.1, 0.1, 0.1], [10.0])
    res = simulate(w, SimConfig(policy="cba", gpus=4, cache_gb=10.0))
    assert res.jobs["start_s"].tolist() == [0.0, 100.0, 150.0]  # the 1-GPU job waits behind the head
    assert res.jobs["end_s"].tolist() == [100.0, 150.0, 160.0]
    assert res.summary["makespan_s"] == 160.0
    assert res.timeseries["queued_jobs"].max() == 2
    with pytest.raises(InstanceError, match="exceeds the cluster"):
        simulate(w, SimConfig(policy="cba", gpus=3))


def test_aggregated_policies_match_the_per_job_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """P1 depends on the jobs only through R_k (docs/model.md §4): the K-job aggregate gives CBA's answer exactly."""
    w = _generated(200, seed=9)
    cfg = SimConfig(policy="cba", gpus=16, cache_gb=40.0, bandwidth_gbps=0.2)
    fast = simulate(w, cfg)
    entry = methods.get("cost", "cba")
    monkeypatch.setitem(methods._METHODS, (entry.problem, entry.name), dataclasses.replace(entry, aggregable=False))
    slow = simulate(w, cfg)
    for part in ("gpu", "cache", "bandwidth"):
        assert fast.summary["cost"][part] == pytest.approx(slow.summary["cost"][part], rel=1e-9, abs=1e-12)
    assert np.allclose(fast.jobs["end_s"], slow.jobs["end_s"], rtol=1e-12)


def test_a_period_adds_slots_but_changes_nothing_with_instant_caches() -> None:
    w = _generated(150, seed=4)
    base = simulate(w, SimConfig(policy="silod", gpus=16, cache_gb=30.0, warmup=False))
    ticks = simulate(w, SimConfig(policy="silod", gpus=16, cache_gb=30.0, warmup=False, period_s=600.0))
    assert ticks.summary["events"] > base.summary["events"]
    assert ticks.summary["cost"]["total"] == pytest.approx(base.summary["cost"]["total"], rel=1e-9)


def test_cba_never_pays_more_io_than_a_baseline_with_instant_caches() -> None:
    """With instant caches every event is a static P1, where CBA is optimal (Theorem 1); so is the integral."""
    w = _generated(300, seed=11)
    io = {
        p: simulate(w, SimConfig(policy=p, gpus=24, cache_gb=40.0, warmup=False)).summary["cost"]["io"]
        for p in ("cba", "io-only", "cache-all", "coordl", "quiver", "silod")
    }
    assert all(io["cba"] <= v * (1 + 1e-9) for v in io.values()), io


def test_cli_writes_the_three_files(tmp_path) -> None:
    out = tmp_path / "run"
    code = main(["simulate", "--generate", "120", "--policy", "quiver", "--out", str(out), "--seed", "2", "--quiet"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == "cbalab/simulation@1" and summary["policy"] == "quiver" and summary["seed"] == 2
    for key in ("jobs", "makespan_s", "gpu_hours", "stall_hours", "cost", "mean_jct_s", "p99_jct_s"):
        assert key in summary
    assert set(summary["cost"]) >= {"gpu", "cache", "bandwidth", "io", "total"}
    jobs = pd.read_csv(out / "jobs.csv")
    wanted = ["job_id", "dataset", "gpus", "submit_s", "start_s", "end_s", "jct_s", "stall_s", "cost"]
    assert set(wanted) <= set(jobs.columns) and len(jobs) == 120
    series = pd.read_csv(out / "timeseries.csv")
    wanted = ["time_s", "running_jobs", "queued_jobs", "cache_gb", "bandwidth_gbps", "cost_per_hour"]
    assert set(wanted) <= set(series.columns)
    assert main(["simulate", "--generate", "5", "--policy", "nope"]) == 2


def test_slots_shorter_than_the_clock_resolution_still_end() -> None:
    """At t ≈ 1.5e9 s (epoch timestamps) a 1e-7 GB cache fills in less than one ulp of t; the replay must go on."""
    w = _workload([1.5e9, 1.5e9, 1.5e9 + 7], [100.0, 100.0, 0.5], [1, 1, 1], [0, 0, 1], [1.0, 1.0, 0.2], [1e-7, 50.0])
    res = simulate(w, SimConfig(policy="cba", gpus=3, cache_gb=100.0, bandwidth_gbps=0.5))
    assert res.jobs["end_s"].notna().all()
    assert (res.jobs["end_s"] >= res.jobs["submit_s"] + res.jobs["duration_s"]).all()
    assert res.summary["events"] < 20


def test_summary_is_written_last_with_the_sha256_of_each_table(tmp_path) -> None:
    """summary.json names jobs.csv and timeseries.csv with their sha256, so a reader can check the set is whole."""
    from cbalab.models.files import sha256_file

    w = assign(generate_trace(60, 4), 4, n_datasets=6)
    out = simulate(w, SimConfig(policy="cba", gpus=32)).write(tmp_path / "run")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == {name: {"sha256": sha256_file(out / name)} for name in ("jobs.csv", "timeseries.csv")}
    assert sorted(p.name for p in out.iterdir()) == ["jobs.csv", "summary.json", "timeseries.csv"]


def test_make_workload_needs_exactly_one_source() -> None:
    from cbalab.experiments.workload import make_workload

    with pytest.raises(InstanceError, match="exactly one"):
        make_workload()
    with pytest.raises(InstanceError, match="exactly one"):
        make_workload(trace="t.csv", n_jobs=3)
    w = make_workload(n_jobs=20, seed=5, n_datasets=4)
    assert w.jobs.equals(assign(generate_trace(20, 5), 5, n_datasets=4).jobs)


@pytest.mark.parametrize(
    ("field", "settings"),
    [
        ("bandwidth_gbps", {"bandwidth_gbps": 1e-40}),
        ("cache_gb", {"cache_gb": 1e-35}),
        ("p_b", {"prices": (2.5, 1e-4, 1e-31)}),
        ("cache_gb", {"cache_gb": math.inf}),
        ("bandwidth_gbps", {"bandwidth_gbps": -1.0}),
    ],
)
def test_a_replay_setting_an_instance_file_may_not_hold_is_refused(field: str, settings: dict) -> None:
    """A replay's C, prices and B follow the number rule of an instance file (models/instance.py, ``setting``):
    finite (B may be inf, no cap), ≥ 0, and 0 or at least 1e-30.  B = 1e-40 GB/s was accepted and replayed to a
    1e42 s makespan, while the same B in a file is refused."""
    with pytest.raises(InstanceError, match=field):
        SimConfig(**settings).check()
    SimConfig(bandwidth_gbps=math.inf).check()
