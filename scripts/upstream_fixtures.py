"""Test fixtures produced by running two upstream schedulers, unchanged, on seeded inputs.

This script is run once, by hand, in a throw-away environment; the tests never run it and
it does not import cbalab. It imports the upstream code at run time from checkouts given on
the command line (it puts Gavel's ``scheduler/`` and ``scheduler/policies/`` on ``sys.path``,
as Gavel's own modules do) and copies none of it.

Upstream code
-------------
Gavel -- https://github.com/stanford-futuredata/gavel, commit c4fa40097339e9608ab71fd64c8bdea96a5e4a4c

* ``scheduler/policies/max_sum_throughput.py``, class ``ThroughputSumWithPerf``
* ``scheduler/policies/max_min_fairness.py``, classes ``MaxMinFairnessPolicyWithPerf`` and ``MaxMinFairnessPolicy``
* their imports ``scheduler/policies/policy.py``, ``scheduler/policies/proportional.py``,
  ``scheduler/job_id_pair.py``

Both LPs are solved by cvxpy with ``solver='ECOS'`` (Gavel's default), one GPU type ``"v100"``.

Pollux / AdaptDL -- https://github.com/petuum/adaptdl, branch ``osdi21-artifact``,
commit c793c7089bd307462686339d29707925c461f9a9

* ``simulator/optimus.py``, class ``OptimusPolicy``, methods ``optimize`` and ``predict_step_time``
  (a pure-Python greedy; no solver).

Checkouts and environment
-------------------------
::

    git --git-dir=/work/.mirror/stanford-futuredata+gavel/repo archive \\
        c4fa40097339e9608ab71fd64c8bdea96a5e4a4c scheduler/policies scheduler/job_id_pair.py | tar -x -C /tmp/gavel
    git --git-dir=/work/.mirror/petuum+adaptdl/repo archive \\
        c793c7089bd307462686339d29707925c461f9a9 simulator | tar -x -C /tmp/adaptdl
    python3 -m venv /tmp/upstream-venv && /tmp/upstream-venv/bin/pip install cvxpy ecos numpy

Command (from the repository root)::

    /tmp/upstream-venv/bin/python scripts/upstream_fixtures.py \\
        --gavel /tmp/gavel --adaptdl /tmp/adaptdl --out tests/fixtures/upstream --seed 0

Outputs (in ``--out``): ``gavel_max_sum_throughput.json``, ``gavel_max_min_fairness.json`` and
``pollux_optimus.json``; each has a top-level ``upstream``, ``generator`` and ``cases``.
Inputs are rounded to 12 significant digits *before* they are handed to upstream, so the
recorded inputs are exactly the ones used; the allocations are recorded as returned.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import json
import math
import platform
import shlex
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

GAVEL_REPO = "https://github.com/stanford-futuredata/gavel"
GAVEL_COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
ADAPTDL_REPO = "https://github.com/petuum/adaptdl"
ADAPTDL_BRANCH = "osdi21-artifact"
ADAPTDL_COMMIT = "c793c7089bd307462686339d29707925c461f9a9"
SOLVER = "ECOS"
GPU_TYPE = "v100"
CASES = 30
SCALE_FACTORS = (1, 2, 4, 8)
TARGET_BATCH_SIZE = 128


def sig(value: float, digits: int = 12) -> float:
    """``value`` rounded to ``digits`` significant digits."""
    return float(f"{value:.{digits}g}")


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def call_upstream(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Call upstream code, capturing what it prints and any Python warnings it raises."""
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    messages = [line for line in out.getvalue().splitlines() if line.strip()]
    messages += [f"{w.category.__name__}: {w.message}" for w in caught]
    return result, messages


def job_ids(n: int) -> list[str]:
    """Ids that sort in index order (Gavel sorts job ids)."""
    return [f"j{i:02d}" for i in range(n)]


def gavel_jobs(rng: np.random.Generator) -> list[dict[str, Any]]:
    n = int(rng.integers(2, 13))
    return [
        {"id": jid, "scale_factor": int(rng.choice(SCALE_FACTORS)), "throughput": sig(10 ** rng.uniform(-1.0, 1.0))}
        for jid in job_ids(n)
    ]


def gavel_inputs(jobs: list[dict[str, Any]], gpus: int) -> tuple[dict, dict, dict]:
    throughputs = {j["id"]: {GPU_TYPE: j["throughput"]} for j in jobs}
    scale_factors = {j["id"]: j["scale_factor"] for j in jobs}
    return throughputs, scale_factors, {GPU_TYPE: gpus}


def shares(allocation: dict[str, dict[str, Any]]) -> dict[str, float]:
    return {jid: float(row[GPU_TYPE]) for jid, row in sorted(allocation.items())}


def max_sum_cases(policies: Any, seed: int) -> list[dict[str, Any]]:
    cases = []
    for i in range(CASES):
        case_seed = seed * 1000 + i
        rng = np.random.default_rng(case_seed)
        jobs = gavel_jobs(rng)
        total = sum(j["scale_factor"] for j in jobs)
        # From well below sum(s)/4 to above sum(s); every fifth case has room for every job.
        factor = 1.25 if i % 5 == 4 else rng.uniform(0.08, 1.05)
        gpus = max(1, round(total * factor))
        throughputs, scale_factors, cluster_spec = gavel_inputs(jobs, gpus)
        policy = policies.ThroughputSumWithPerf(solver=SOLVER)
        result, messages = call_upstream(policy.get_allocation, throughputs, scale_factors, cluster_spec)
        x = shares(result)
        case = {
            "seed": case_seed,
            "gpus": gpus,
            "jobs": jobs,
            "allocation": x,
            "objective": sum(j["throughput"] * x[j["id"]] for j in jobs),
        }
        if messages:
            case["upstream_messages"] = messages
        cases.append(case)
    return cases


def max_min_cases(fairness: Any, seed: int) -> list[dict[str, Any]]:
    cases = []
    for i in range(CASES):
        case_seed = seed * 1000 + 100 + i
        rng = np.random.default_rng(case_seed)
        jobs = gavel_jobs(rng)
        n = len(jobs)
        total = sum(j["scale_factor"] for j in jobs)
        smallest = min(j["scale_factor"] for j in jobs)
        regime = ("fewer_gpus_than_jobs", "min_scale_factor_binds", "general")[i % 3]
        if regime == "fewer_gpus_than_jobs":
            gpus = int(rng.integers(1, n))
        elif regime == "min_scale_factor_binds":
            # G/n > min_j s_j, so the worst-off job runs all the time (x = 1) on its s_j GPUs.
            low = n * smallest + 1
            gpus = int(rng.integers(low, max(low, total) + 1))
        else:
            gpus = max(1, round(total * rng.uniform(0.1, 1.3)))
        throughputs, scale_factors, cluster_spec = gavel_inputs(jobs, gpus)
        weights = {j["id"]: 1.0 for j in jobs}
        perf = fairness.MaxMinFairnessPolicyWithPerf(solver=SOLVER)
        plain = fairness.MaxMinFairnessPolicy(solver=SOLVER)
        result, messages = call_upstream(perf.get_allocation, throughputs, scale_factors, weights, cluster_spec)
        result_plain, messages_plain = call_upstream(
            plain.get_allocation, throughputs, scale_factors, weights, cluster_spec
        )
        x = shares(result)
        case = {
            "seed": case_seed,
            "regime": regime,
            "gpus": gpus,
            "jobs": jobs,
            "priority_weights": weights,
            "allocation": x,
            "allocation_plain": shares(result_plain),
            "objective": min(j["scale_factor"] * x[j["id"]] for j in jobs),
        }
        if messages or messages_plain:
            case["upstream_messages"] = messages + messages_plain
        cases.append(case)
    return cases


class Application:
    """Duck-typed stand-in for what ``OptimusPolicy`` reads from ``job.application``."""

    COMPLETION_EPOCH = 1

    def __init__(self, step_time: list[float], remaining: int) -> None:
        self.step_time = step_time
        self.remaining = remaining
        # max_local_bsz = the target batch size: no gradient accumulation beyond the one upstream forces at
        # 1 replica. (A huge value breaks upstream: local_bsz / max_local_bsz falls under its 1e-8 epsilon,
        # accum_steps becomes -1 and predict_step_time divides by zero.)
        self.max_local_bsz = TARGET_BATCH_SIZE
        self.max_batch_size = 10**6

    def get_completion_epoch(self, batch_size: int) -> int:
        return self.COMPLETION_EPOCH

    def get_iteration(self, batch_size: int, epoch: int) -> int:
        # remaining = get_iteration(bs, completion_epoch) - get_iteration(bs, 0) = W exactly.
        return self.remaining if epoch >= self.COMPLETION_EPOCH else 0

    def get_throughput(self, placement: tuple[int, ...], atomic_bsz: int) -> tuple[float, float]:
        # step_time == sync_time, so predict_step_time adds (step - sync) * accum_steps = 0.
        t = self.step_time[sum(placement) - 1]
        return t, t


def step_table(rng: np.random.Generator, max_replicas: int, noisy: bool) -> list[float]:
    t1 = 10 ** rng.uniform(-1.0, 0.5)
    a = rng.uniform(0.05, 0.6)
    table = [t1 * (a + (1.0 - a) / k) for k in range(1, max_replicas + 1)]
    if noisy:
        table = [t * (1.0 + rng.uniform(-0.15, 0.15)) for t in table]
    return [sig(t) for t in table]


def optimus_cases(optimus: Any, seed: int) -> list[dict[str, Any]]:
    cases = []
    for i in range(CASES):
        case_seed = seed * 1000 + 200 + i
        rng = np.random.default_rng(case_seed)
        regime = ("fewer_gpus_than_jobs", "about_one_per_job", "many_gpus_per_job")[i % 3]
        noisy = i % 4 == 3
        n = int(rng.integers(5, 13)) if regime == "fewer_gpus_than_jobs" else int(rng.integers(2, 13))
        per_node = 8 if i % 7 == 6 else 4
        if regime == "fewer_gpus_than_jobs":
            num_nodes = max(1, (n - 1) // per_node)
        elif regime == "about_one_per_job":
            num_nodes = math.ceil(n * rng.uniform(1.0, 2.0) / per_node)
        else:
            num_nodes = math.ceil(n * rng.uniform(2.5, 5.0) / per_node)
        nodes = [per_node] * num_nodes
        jobs: list[dict[str, Any]] = []
        for jid in job_ids(n):
            max_replicas = 1 if rng.random() < 0.1 else int(rng.integers(2, 17))
            jobs.append(
                {
                    "id": jid,
                    "max_replicas": max_replicas,
                    "step_time": step_table(rng, max_replicas, noisy),
                    "remaining_iterations": round(float(10 ** rng.uniform(2.0, 4.0))),
                }
            )
        # Jobs in arrival order (dict keys in index order), nodes keyed by index.
        upstream_jobs = {
            j["id"]: SimpleNamespace(
                application=Application(j["step_time"], j["remaining_iterations"]),
                target_batch_size=TARGET_BATCH_SIZE,
                epoch=0,
                max_replicas=j["max_replicas"],
            )
            for j in jobs
        }
        upstream_nodes = {k: SimpleNamespace(resources={"nvidia.com/gpu": g}) for k, g in enumerate(nodes)}
        policy = optimus.OptimusPolicy()
        (allocations, _), messages = call_upstream(policy.optimize, upstream_jobs, upstream_nodes, {}, None)
        case = {
            "seed": case_seed,
            "regime": regime,
            "noisy_step_times": noisy,
            "nodes": nodes,
            "jobs": jobs,
            "allocation": {j["id"]: len(allocations.get(j["id"], [])) for j in jobs},
        }
        if messages:
            case["upstream_messages"] = messages
        cases.append(case)
    return cases


def write(path: Path, upstream: dict[str, Any], generator: dict[str, Any], cases: list[dict[str, Any]]) -> None:
    document = {"upstream": upstream, "generator": generator, "cases": cases}
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"{path}: {len(cases)} cases, {path.stat().st_size} bytes")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", type=Path, required=True, help="checkout of Gavel at " + GAVEL_COMMIT)
    parser.add_argument("--adaptdl", type=Path, required=True, help="checkout of AdaptDL at " + ADAPTDL_COMMIT)
    parser.add_argument("--out", type=Path, required=True, help="folder for the three JSON files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    scheduler = args.gavel.resolve() / "scheduler"
    simulator = args.adaptdl.resolve() / "simulator"
    sys.path[:0] = [str(scheduler), str(scheduler / "policies"), str(simulator)]
    max_sum_throughput = importlib.import_module("max_sum_throughput")
    max_min_fairness = importlib.import_module("max_min_fairness")
    optimus = importlib.import_module("optimus")

    versions = {
        "python_version": platform.python_version(),
        "numpy_version": version("numpy"),
    }
    solver_versions = {"solver": SOLVER, "cvxpy_version": version("cvxpy"), "ecos_version": version("ecos")}
    generator = {
        "script": "scripts/upstream_fixtures.py",
        "seed": args.seed,
        "command": shlex.join([sys.executable, "scripts/upstream_fixtures.py", *(argv or sys.argv[1:])]),
    }
    gavel = {"repository": GAVEL_REPO, "commit": GAVEL_COMMIT}
    args.out.mkdir(parents=True, exist_ok=True)
    write(
        args.out / "gavel_max_sum_throughput.json",
        {
            **gavel,
            "file": "scheduler/policies/max_sum_throughput.py",
            "class": "ThroughputSumWithPerf",
            "method": "get_allocation(throughputs, scale_factors, cluster_spec)",
            **solver_versions,
            **versions,
        },
        generator,
        max_sum_cases(max_sum_throughput, args.seed),
    )
    write(
        args.out / "gavel_max_min_fairness.json",
        {
            **gavel,
            "file": "scheduler/policies/max_min_fairness.py",
            "class": "MaxMinFairnessPolicyWithPerf (allocation); MaxMinFairnessPolicy (allocation_plain)",
            "method": "get_allocation(throughputs, scale_factors, priority_weights, cluster_spec)",
            **solver_versions,
            **versions,
        },
        generator,
        max_min_cases(max_min_fairness, args.seed),
    )
    write(
        args.out / "pollux_optimus.json",
        {
            "repository": ADAPTDL_REPO,
            "branch": ADAPTDL_BRANCH,
            "commit": ADAPTDL_COMMIT,
            "file": "simulator/optimus.py",
            "class": "OptimusPolicy",
            "method": "optimize(jobs, nodes, prev_allocations={}, node_template=None), via predict_step_time",
            "solver": None,
            "cvxpy_version": None,
            **versions,
        },
        generator,
        optimus_cases(optimus, args.seed),
    )


if __name__ == "__main__":
    main()
