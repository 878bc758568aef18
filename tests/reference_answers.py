"""Answers of AutoCBA and of online AutoCBA saved before a speed-up of both, to prove them unchanged by it.

``python -m tests.reference_answers`` rewrites tests/fixtures/autocba_reference.json from the code as it is;
it was run once on the code before the change (commit 88f8302), and tests/test_autocba.py and
tests/test_elastic.py compare the faster code with those answers bit for bit (floats by ``repr``, arrays by
the SHA-256 of their bytes), but for the online replays' certificate (:data:`CERTIFICATE_COLUMNS`) and summary
floats, which are compared to a relative 1e-12 (:func:`same`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from cbalab.algorithms.autocba import autocba
from cbalab.experiments.elastic import ElasticConfig, replay
from cbalab.experiments.workload import assign, generate_trace, generate_welfare
from cbalab.experiments.workload.elastic import elastic

FIXTURE = Path(__file__).parent / "fixtures" / "autocba_reference.json"

#: (jobs, datasets, seed, budget fraction, bandwidth fraction or None, cache fraction) of the offline cases:
#: the enumeration regime (≤ 256 options that fit), the swap pass (≤ 500 jobs), one greedy (> 2,000 jobs),
#: and a finite B (re-pricing by full CBA solves).
OFFLINE = [
    (6, 2, 0, 0.3, None, 0.2),
    (12, 3, 1, 0.2, 0.4, 0.3),
    (40, 10, 2, 0.2, None, 0.2),
    (40, 4, 3, 0.4, 0.3, 0.1),
    (150, 15, 4, 0.2, None, 0.2),
    (600, 60, 5, 0.3, 0.5, 0.2),
    (2500, 250, 6, 0.2, None, 0.2),
    (2500, 100, 7, 0.2, 0.3, 0.3),
]

#: (trace jobs, seed, datasets, GPUs, cache GB, prices, budget fraction) of the elastic replays.
ONLINE = [
    (80, 11, 8, 24, 40.0, (2.5, 0.004, 9.0), 0.3),
    (150, 3, 6, 64, 100.0, (2.5, 0.0004, 0.9), 0.5),
]


def digest(a: Any) -> str:
    """SHA-256 of an array's float64 (or int64) bytes: equal digests, bit-identical arrays."""
    arr = np.asarray(a)
    arr = arr.astype(np.int64 if arr.dtype.kind in "iub" else np.float64)
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def offline_case(jobs: int, datasets: int, seed: int, budget: float, bw: float | None, cache: float) -> dict:
    """AutoCBA's answer on one generated instance: welfare, bound and status, and digests of its arrays."""
    inst = generate_welfare(
        jobs, datasets, seed, utility_mix="mixed", budget_fraction=budget, bandwidth_fraction=bw, cache_fraction=cache
    )
    alloc = autocba(inst)
    return {
        "welfare": repr(float(alloc.objective)),
        "bound": repr(alloc.bound),
        "status": str(alloc.status),
        "source": alloc.facts.source,
        "gpus": digest(alloc.gpus),
        "cache_gb": digest(alloc.cache_gb),
        "bandwidth_gbps": digest(alloc.bandwidth_gbps),
    }


#: timeseries.csv's columns of the certificate, a sum over the active jobs whose last bits depend on the CPU's
#: vector width (the same code gave other bits on another machine): kept as values, compared to a relative
#: 1e-12, where every other column is a digest of its bits.
CERTIFICATE_COLUMNS = ("certified_gap", "static_welfare_rate")
#: The columns of utility (jobs.csv's welfare earned; timeseries.csv's welfare rate, its bound and the realised
#: gap between them), kept as values and compared to a relative 1e-12 (gaps to :data:`GAP_ATOL`): the utilities
#: became the C library's tanh (models/kernels.py ``libm``) after the fixture was written, numpy's AVX2 tanh
#: before, which differ in last bits; every decision (GPUs, times, costs, cache, bandwidth) is still compared
#: bit for bit.  The values were written by the code before that change; their digests are the fixture's old ones.
UTILITY_COLUMNS = {"jobs": ("welfare",), "timeseries": ("welfare_rate", "bound", "realised_gap")}


def online_case(
    n: int, seed: int, datasets: int, gpus: int, cache: float, prices: tuple[float, float, float], fraction: float
) -> dict:
    """Online AutoCBA's elastic replay of a generated trace: every summary number, digests of jobs.csv's numeric
    columns and of timeseries.csv's decisions, and the values of its utility and certificate columns (NaN as
    None)."""
    w = elastic(assign(generate_trace(n, seed), seed, n_datasets=datasets), seed)
    cfg = ElasticConfig(policy="autocba", gpus=gpus, cache_gb=cache, prices=prices, budget_fraction=fraction)
    res = replay(w, cfg)
    res.drop_timing()
    numeric = res.jobs.select_dtypes("number")
    series = res.timeseries
    return {
        "summary": json.loads(json.dumps(res.summary, default=str)),
        "jobs": {
            c: digest(numeric[c].to_numpy(dtype=float)) for c in numeric.columns if c not in UTILITY_COLUMNS["jobs"]
        },
        "timeseries": {
            c: digest(series[c].to_numpy(dtype=float))
            for c in series.columns
            if c not in CERTIFICATE_COLUMNS and c not in UTILITY_COLUMNS["timeseries"]
        },
        "utility": {
            f"{table}.{c}": [None if np.isnan(v) else v for v in frame[c].to_numpy(dtype=float).tolist()]
            for table, frame in (("jobs", numeric), ("timeseries", series))
            for c in UTILITY_COLUMNS[table]
        },
        "certificate": {
            c: [None if np.isnan(v) else float(v) for v in series[c].to_numpy(dtype=float)] for c in CERTIFICATE_COLUMNS
        },
    }


#: A certified gap is 1 − welfare / bound, a number in [0, 1] computed with an absolute error of a few ulps of 1:
#: a last bit of the welfare sum moves a gap of 1e-6 by 2.2e-16, 2e-10 of it (the referee's welfare became a
#: correctly rounded sum after the fixture was written, models.kernels.exact_dot).  Gaps are compared to this.
GAP_ATOL = 1e-15
#: The keys compared to :data:`GAP_ATOL`.
GAPS = ("certified_gap", "timeseries.realised_gap")


def same(saved: Any, now: Any, rel: float = 1e-12, atol: float = 1e-300) -> bool:
    """Whether two answers agree: floats to a relative ``rel`` or an absolute ``atol`` (the certificate's sums,
    CERTIFICATE_COLUMNS, and the utilities, UTILITY_COLUMNS; the gaps to :data:`GAP_ATOL`), everything else
    (digests, statuses, counts) exactly."""
    if isinstance(saved, dict) and isinstance(now, dict):
        return saved.keys() == now.keys() and all(
            same(saved[k], now[k], rel, GAP_ATOL if k in GAPS else atol) for k in saved
        )
    if isinstance(saved, list) and isinstance(now, list):
        return len(saved) == len(now) and all(same(a, b, rel, atol) for a, b in zip(saved, now))
    if isinstance(saved, float) and isinstance(now, float):
        return math.isclose(saved, now, rel_tol=rel, abs_tol=atol) or (math.isnan(saved) and math.isnan(now))
    return bool(saved == now)


def answers() -> dict:
    """Every case's answer, keyed by its parameters."""
    return {
        "offline": {json.dumps(case): offline_case(*case) for case in OFFLINE},
        "online": {json.dumps(case): online_case(*case) for case in ONLINE},
    }


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(answers(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
