"""Replays must not depend on the BLAS kernel that OpenBLAS picks for the CPU
(docs/adr/0004-bit-stable-results-across-machines.md).

OpenBLAS chooses its kernels at start-up by CPU, and ``OPENBLAS_CORETYPE`` forces one. A sum taken by
``np.dot`` can then differ in its last bits from one machine to another. Each case here runs in two fresh
interpreters, under the Prescott (SSE3) and Sandybridge (AVX) kernels, which every x86-64 machine can run, and
compares what they print. A rerun on another machine found a replay whose decisions depended on the kernel (an
``np.dot`` of time-shared GPU time); the sums a decision compares with a limit are now
:func:`cbalab.models.kernels.exact_dot`, correctly rounded, and that replay is the last case here.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

KERNELS = ("Prescott", "Sandybridge")


def _openblas() -> bool:
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return "openblas" in str(blas.get("name", "")).lower()


pytestmark = pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64") or not _openblas(),
    reason="OPENBLAS_CORETYPE names x86-64 kernels of OpenBLAS",
)

#: Cost replays (experiments/simulate.py): every table and the summary, as bytes.
COST = """
import hashlib, json, cbalab
out = {}
for policy in ("cba", "silod"):
    r = cbalab.simulate(1000, policy, timing=False)
    tables = r.jobs.to_csv(index=False) + r.timeseries.to_csv(index=False)
    out[policy] = [hashlib.sha256(tables.encode()).hexdigest(), json.dumps(r.summary, sort_keys=True, default=str)]
print(json.dumps(out))
"""

#: Elastic replays (experiments/elastic.py): the decisions and JCTs (jobs.csv) as bytes, the scores as numbers.
ELASTIC = """
import hashlib, json, cbalab
out = {}
for policy in ("autocba", "gavel-fair", "optimus"):
    r = cbalab.simulate(300, policy, problem="welfare", budget_fraction=0.2, timing=False)
    out[policy] = [hashlib.sha256(r.jobs.to_csv(index=False).encode()).hexdigest(),
                   r.timeseries["static_welfare_rate"].tolist()]
print(json.dumps(out))
"""

#: The online-welfare run 852598ffafd4cc48 (paper/results/online-welfare/runs.csv): gavel-fair fed by silod.
KNIFE_EDGE = """
import json
from cbalab.experiments.runs import online_welfare as ow
p = next(p for p in ow.grid(False, 0) if p["policy"] == "gavel-fair" and p["cache_policy"] == "silod"
         and p["window_start"] == 30000 and p["budget_fraction"] == 0.1 and p["utility_mix"] == "mixed"
         and p["io_scale"] == 30.0 and p["restart_delay_s"] == 0.0)
r = ow.run_one(p)
print(json.dumps([r["welfare"], r["mean_jct_s"], r["restarts"]]))
"""


def _under(kernel: str, script: str) -> object:
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:  # not an AssertionError: a crash must not pass as the expected failure below
        raise RuntimeError(f"under OPENBLAS_CORETYPE={kernel}: {done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_cost_replays_are_the_same_bytes_on_every_kernel() -> None:
    """The cost replay's tables and summary are byte-identical under two BLAS kernels (io-cost's 1,512 replays
    were on two machines)."""
    first, second = (_under(k, COST) for k in KERNELS)
    assert first == second


@pytest.mark.slow
def test_elastic_replays_decide_the_same_on_every_kernel() -> None:
    """The elastic replay's decisions and JCTs (jobs.csv) are byte-identical under two BLAS kernels, and the
    referee's scores agree to 1e-12 relative; their last bits come from ``np.dot`` in models/evaluate.py."""
    first, second = (_under(k, ELASTIC) for k in KERNELS)
    assert isinstance(first, dict) and isinstance(second, dict)
    for policy, (jobs, scores) in first.items():
        other_jobs, other_scores = second[policy]
        assert jobs == other_jobs, policy
        np.testing.assert_allclose(scores, other_scores, rtol=1e-12, atol=0.0, err_msg=policy)


@pytest.mark.slow
def test_regression_gavel_fair_replay_is_the_same_on_every_kernel() -> None:
    """The online-welfare replay whose welfare differed by 8.4e-4 between two machines (np.dot of the
    time-shared GPU time, now models.kernels.exact_dot) gives the same restarts, and welfare and mean JCT to
    1e-12 relative, under two BLAS kernels."""
    first, second = (_under(k, KNIFE_EDGE) for k in KERNELS)
    assert isinstance(first, list) and isinstance(second, list)
    assert first[2] == second[2]
    assert first[:2] == pytest.approx(second[:2], rel=1e-12, abs=0.0)


#: P3 (models/milp/p3_lagrange.py) on 400 Philly jobs at ten times the IO price: the upper bound's cost, the
#: bound and the iterations, as text.
P3 = """
import json
from cbalab.experiments.runs import dynamic
r = dynamic.run_one({"kind": "scale", "window": -1, "start_job": 11606, "jobs": 400, "io_price_factor": 10.0,
                     "seed": 1, "iterations": 8})
print(json.dumps([repr(r["p3_cost_io"]), repr(r["p3_bound"]), r["p3_iterations"]]))
"""


@pytest.mark.slow
def test_regression_p3_is_the_same_on_every_kernel() -> None:
    """Theorem 4 of proofs/dynamic_lower_bound.md computed on two kernels gives one bound and one schedule cost:
    with ``@`` for the slots' cache loads and costs, this window's cost was 0.38553772669836717 under Prescott and
    0.3855377266983672 under Sandybridge (and dynamic's row 0345d692 moved by an ulp between an AVX2 and an
    AVX-512 machine); models.kernels.row_sum and exact_dot sum in one order on every kernel."""
    first, second = (_under(k, P3) for k in KERNELS)
    assert first == second
