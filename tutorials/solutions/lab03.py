"""Solutions to the exercises of tutorials/03_a_cluster_over_time.ipynb.

Only ``import cbalab`` (+ numpy, pandas) is used, as in the notebook; tests/test_tutorials.py checks every function.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import cbalab

#: The notebook's cluster: 32 GPUs, 200 GB of cache, prices (p_g, p_c, p_b) with p_c / p_b = 0.001 s⁻¹.
GPUS, CACHE_GB, PRICES = 32, 200.0, (2.5, 0.009, 9.0)
POLICIES = ("cba", "io-only", "cache-all", "coordl", "quiver", "silod")


def replay(
    policy: str = "cba",
    *,
    prices: tuple[float, float, float] = PRICES,
    warmup: bool = True,
    bandwidth_gbps: float | None = None,
) -> cbalab.ReplayResult:
    """The notebook's replay of the small trace under ``policy`` on its cluster."""
    return cbalab.simulate(
        cbalab.examples.small_trace(),
        policy,
        gpus=GPUS,
        cache_gb=CACHE_GB,
        prices=prices,
        warmup=warmup,
        bandwidth_gbps=bandwidth_gbps,
    )


def snapshot(res: cbalab.ReplayResult, t: float) -> cbalab.Instance:
    """The cost instance P1 of the jobs running at time ``t`` (start ≤ t < end) of a replay, on its cluster."""
    jobs = res.jobs
    running = jobs[(jobs["start_s"] <= t) & (t < jobs["end_s"])]
    table = pd.DataFrame(
        {"id": running["job_id"], "dataset": running["dataset"], "gpus": running["gpus"], "io_gbps": running["io_gbps"]}
    )
    datasets = res.datasets.rename(columns={"dataset": "id"})
    config = res.summary["config"]
    return cbalab.build_instance(
        table,
        datasets,
        cache_gb=config["cache_gb"],
        prices=tuple(config["prices"]),
        bandwidth_gbps=config["bandwidth_gbps"],
    )


def exercise1_sequence_of_p1() -> pd.DataFrame:
    """At every event of CBA's replay (instant caches or not, the *target* is CBA's answer on the running jobs):
    the series' ``cache_gb`` against CBA's total cache on the snapshot instance.  They agree at every event."""
    res = replay("cba")
    rows = []
    for t, target in zip(res.timeseries["time_s"], res.timeseries["cache_gb"]):
        inst = snapshot(res, float(t))
        mine = float(cbalab.solve(inst, "cba").datasets_frame()["cache_gb"].sum()) if inst.n_jobs else 0.0
        rows.append({"time_s": float(t), "series": float(target), "snapshot": mine})
    return pd.DataFrame(rows)


def exercise2_imagenet_threshold() -> tuple[float, float, list[str]]:
    """By hand: caching ImageNet pays when p_b R > p_c d, i.e. R > d p_c / p_b = 147 × 0.009 / 9 = 0.147 GB/s.

    By code: the smallest demand at which CBA caches ImageNet on a one-job instance (bisection).  The single jobs
    above it: the 8-GPU pollux-resnet50 runs (0.185 GB/s); the 8-GPU resnet50 runs (0.127 GB/s) are below.
    """
    p_g, p_c, p_b = PRICES
    size = 147.0
    by_hand = size * p_c / p_b
    datasets = [{"id": "imagenet-1k", "size_gb": size}]

    def cached(rate: float) -> bool:
        job = [{"id": "j", "dataset": "imagenet-1k", "gpus": 8, "io_gbps": rate}]
        inst = cbalab.build_instance(job, datasets, cache_gb=200.0, prices=(p_g, p_c, p_b))
        return float(cbalab.solve(inst, "cba").datasets_frame()["cache_gb"].iloc[0]) > 0

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if cached(mid) else (mid, hi)
    jobs = replay("cba").jobs
    above = jobs[(jobs["dataset"] == "imagenet-1k") & (jobs["io_gbps"] > by_hand)]["job_id"].tolist()
    return by_hand, hi, above


def exercise3_cba_cheapest_instant(price_caches: tuple[float, ...] = (0.003, 0.009, 0.03)) -> pd.DataFrame:
    """IO bill of every policy with instant caches and no cap, at several cache prices.

    Why CBA is never beaten: with no cap no job stalls, so every policy sees the same schedule (same jobs running in
    every slot, same GPU bill).  In each slot the IO cost rate of any policy is the cost of a feasible answer to that
    slot's P1, and CBA's is P1's optimum (Theorem 1, proofs/cba_optimality.md); integrating slot by slot, CBA's bill
    is the least.
    """
    rows = {}
    for p_c in price_caches:
        prices = (2.5, p_c, 9.0)
        rows[p_c] = {name: replay(name, warmup=False, prices=prices).summary["cost"]["io"] for name in POLICIES}
    return pd.DataFrame(rows).T


def exercise4_stalls() -> tuple[pd.Series, str]:
    """B = 0.3 GB/s, instant caches: stall hours per policy and io-only's longest-stalled job.

    CBA does not stall because Theorem 1's cap phase caches (unprofitably, if need be) exactly enough to bring the
    remote IO down to B whenever the cache can; io-only never caches, so every slot whose demand exceeds B stalls.
    """
    stalls = pd.Series(
        {name: replay(name, warmup=False, bandwidth_gbps=0.3).summary["stall_hours"] for name in POLICIES}
    )
    jobs = replay("io-only", warmup=False, bandwidth_gbps=0.3).jobs
    worst = str(jobs.loc[np.argmax(jobs["stall_s"].to_numpy()), "job_id"])
    return stalls, worst


def checks() -> list[tuple[str, bool, str]]:
    """Every exercise's check as (what, whether it holds, the numbers), with the tolerances of
    tests/test_tutorials.py: what ``python tutorials/solutions/lab03.py`` prints."""
    sequence = exercise1_sequence_of_p1()
    drift = float((sequence["series"] - sequence["snapshot"]).abs().max())
    by_hand, by_code, above = exercise2_imagenet_threshold()
    bills = exercise3_cba_cheapest_instant()
    cheapest = bool((bills["cba"] <= bills.min(axis=1) * (1 + 1e-9)).all())
    stalls, worst = exercise4_stalls()
    return [
        (
            "1. the replay's target cache is CBA on each snapshot",
            drift <= 1e-9 * max(1.0, sequence["series"].max()),
            f"{len(sequence)} events, largest difference {drift:.3g} GB",
        ),
        (
            "2. ImageNet is cached from R* = d p_c / p_b (GB/s)",
            abs(by_code - by_hand) <= 1e-9 * by_hand,
            f"by hand {by_hand:.6g}, by code {by_code:.6g}; jobs above: {', '.join(above)}",
        ),
        (
            "3. no policy's IO bill is below CBA's (instant caches)",
            cheapest,
            f"at p_c = {', '.join(f'{p:g}' for p in bills.index)}",
        ),
        (
            "4. under B = 0.3 CBA never stalls, io-only most",
            stalls["cba"] == 0.0 and stalls.idxmax() == "io-only",
            f"stall hours: cba {stalls['cba']:.3g}, io-only {stalls['io-only']:.3g}; longest stalled: {worst}",
        ),
    ]


def main() -> int:
    """Print every check, one line each; exit status 1 if one fails."""
    results = checks()
    for what, ok, numbers in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {what}: {numbers}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
