"""Replay speed: one io-cost replay per policy against a pinned older install, side by side, and a
large generated trace.

Each measurement runs in a fresh Python process (so that neither install's imports nor caches help the other)
and reports its CPU seconds (``time.process_time``, so that other load on the machine does not count) and its
peak resident memory.  The replay is io-cost's (experiments/runs/io_cost.py): the first ``jobs`` jobs of the
shipped Philly trace on ``n_datasets`` datasets at skew ``skew``, C = 500 GB, no cap, warm-up on, p_c/p_b =
1e-3; the same seed for both installs, so that their summaries must agree (``same_summary``: every cost, JCT
and event count, the wall time aside, on the columns both installs report; ``columns_only_here`` names the
others).  Each child runs in the system's temporary folder, so that a source tree in the working folder cannot
shadow the reference's install.  With ``reference``, the Python of a pinned install (e.g. a virtual
environment with cbalab installed at b6884cc), each policy is replayed ``repeats`` times by each install in
alternation and ``speedup`` is the reference's median CPU over this install's.  With ``large`` > 0, a generated
trace of that many jobs (``cbalab simulate --generate N``'s workload, seed 0) is replayed by CBA and by online
AutoCBA (the elastic replay, mixed utilities), each with its CPU seconds and peak memory.  Online AutoCBA is stopped
after ``large_cpu_s`` CPU seconds (``finished`` False; its ratio to CBA is then a lower bound) and reports, over
the decisions it made, how many jobs were active (waiting or holding GPUs) and the CPU each decision took.

    nice -n 10 cbalab bench replay-speed --reference /tmp/venv_ref/bin/python
    nice -n 10 cbalab bench replay-speed --policies cba --large 100000
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

#: The child's program: one replay, its CPU seconds, peak memory and the summary entries compared.
_IO_COST_REPLAY = """
import json, resource, sys, time
from cbalab.experiments.runs import io_cost
policy, jobs, n, skew = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
blind = policy in io_cost.PRICE_BLIND
params = {"policy": policy, "trace_jobs": jobs, "price_ratio": None if blind else 1e-3, "n_datasets": n,
          "skew": skew, "cache_gb": 500.0, "bandwidth_gbps": None, "warmup": True, "replicate": 0, "seed": 11}
io_cost._workload(jobs, skew, n, 11)
start = time.process_time()
row = io_cost.run_one(params)
cpu = time.process_time() - start
row.pop("replay_seconds")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu_s": cpu, "peak_mb": peak, "row": {k: repr(v) for k, v in row.items()}}))
"""

_LARGE_REPLAY = """
import json, resource, sys, time
import numpy as np
from cbalab.experiments.workload import make_workload
problem, jobs, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
base = make_workload(n_jobs=jobs, seed=0)
extra = {}
if problem == "welfare":
    from cbalab.experiments.elastic import ElasticConfig, ElasticReplay
    from cbalab.experiments.replay import run
    from cbalab.experiments.workload.elastic import UtilityMix, elastic

    class OutOfTime(Exception):
        pass

    class Measured(ElasticReplay):
        # The elastic replay, counting at each decision its active jobs, those holding GPUs and its CPU seconds.
        def reallocate(self):
            active = self.active
            sizes.append(active.size)
            holding.append(int(np.count_nonzero(self.g[active] > 0)))
            t0 = time.process_time()
            super().reallocate()
            spent.append(time.process_time() - t0)
            if time.process_time() - start > limit:
                raise OutOfTime

    sizes, holding, spent = [], [], []
    replay = Measured(elastic(base, 0, UtilityMix.parse("mixed")), ElasticConfig(policy="autocba"))
    start = time.process_time()
    try:
        summary, finished = run(replay).summary, True
    except OutOfTime:
        summary, finished = {"jobs": replay.n, "unfinished_jobs": replay.n - replay.done}, False
    extra = {"finished": finished, "decisions": len(sizes),
             "jobs_admitted": int(replay.nxt), "jobs_left": int(replay.done),
             "active_mean": float(np.mean(sizes)), "active_p99": float(np.percentile(sizes, 99)),
             "active_max": int(max(sizes)), "holding_gpus_mean": float(np.mean(holding)),
             "cpu_per_decision_ms_mean": 1e3 * float(np.mean(spent)),
             "cpu_per_decision_ms_p99": 1e3 * float(np.percentile(spent, 99))}
else:
    from cbalab.experiments.simulate import SimConfig, simulate
    start = time.process_time()
    summary = simulate(base, SimConfig(policy="cba")).summary
    extra = {"finished": True}
cpu = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
keys = ("jobs", "events", "unfinished_jobs", "welfare", "full_reopts")
print(json.dumps({"problem": problem, "cpu_s": cpu, "peak_mb": peak, **{k: summary[k] for k in keys if k in summary},
                  **extra}))
"""


def _child(python: str, program: str, *args: object) -> dict[str, Any]:
    """Run ``program`` under ``python`` with ``args`` in a fresh process; its JSON answer (the last line)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [python, "-c", program, *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{python}: the replay failed:\n{done.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def measure(
    *,
    reference: Path | None = None,
    policies: tuple[str, ...] = ("cba", "io-only"),
    jobs: int = 20_000,
    n_datasets: int = 12,
    skew: float = 1.0,
    repeats: int = 3,
    large: int = 0,
    large_cpu_s: float = 1800.0,
) -> dict[str, Any]:
    """The replays of the module docstring: per policy this install's median CPU seconds and peak memory, with
    ``reference`` the reference's too, their ratio and whether the summaries agree; with ``large`` the large
    generated trace under CBA and online AutoCBA, the latter stopped after ``large_cpu_s`` CPU seconds."""
    out: dict[str, Any] = {"jobs": jobs, "n_datasets": n_datasets, "skew": skew, "repeats": repeats}
    for policy in policies:
        mine: list[dict[str, Any]] = []
        theirs: list[dict[str, Any]] = []
        for _ in range(repeats):
            mine.append(_child(sys.executable, _IO_COST_REPLAY, policy, jobs, n_datasets, skew))
            if reference is not None:
                theirs.append(_child(str(reference), _IO_COST_REPLAY, policy, jobs, n_datasets, skew))
        entry: dict[str, Any] = {
            "cpu_s": statistics.median(m["cpu_s"] for m in mine),
            "peak_mb": max(m["peak_mb"] for m in mine),
        }
        if theirs:
            entry["reference_cpu_s"] = statistics.median(t["cpu_s"] for t in theirs)
            entry["speedup"] = entry["reference_cpu_s"] / entry["cpu_s"]
            # Columns added after the reference (stall_cost_usd, io_plus_stall_usd) are listed, not compared.
            common = set(mine[0]["row"]) & set(theirs[0]["row"])
            entry["same_summary"] = all(
                {k: m["row"][k] for k in common} == {k: theirs[0]["row"][k] for k in common} for m in mine + theirs
            )
            entry["columns_only_here"] = sorted(set(mine[0]["row"]) - common)
        out[policy] = entry
    if reference is not None:
        out["reference"] = str(reference)
    if large > 0:
        out["large"] = [
            _child(sys.executable, _LARGE_REPLAY, problem, large, large_cpu_s) for problem in ("cost", "welfare")
        ]
        cost, welfare = out["large"]
        # A lower bound when online AutoCBA was stopped before its last job left (``finished`` False).
        out["large_online_over_cba"] = welfare["cpu_s"] / cost["cpu_s"]
    return out
