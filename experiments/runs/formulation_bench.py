"""Speed limits of the one-statement formulations (models/milp/statement.py) against a base commit, in one run.

Cases (fixed):

* ``p1``: P1's LP at 100,000 jobs and 1,000 datasets (``generate_cost(100000, 1000, 0)``): the build of the
  highspy LP (``cost_statement(inst, relax=True).compile()`` passed to a ``highspy.Highs``; on a base that still has it,
  ``models/milp/cost_highspy.py``'s ``build_cost_lp``), median of five builds in the process, and its optimum;
* ``welfare/S/F``: the registered welfare ``milp`` on the 1,000-job instance of milp_scale (``generate_welfare
  (1000, 100, S, utility_mix="mixed", budget_fraction=F)``), S ∈ {1, 2, 3}, F ∈ {0.1, 0.2, 0.35}: wall time,
  status, the referee's welfare;
* ``p3``: P3 on the 1,000-job window of the dynamic experiment's scaling run (experiments/runs/dynamic.py,
  ``grid(False, 0)``): the matrix build (``matrix``) and the whole ``solve_dynamic`` (build + solve), its
  status and cost;
* ``p3-whole``: the same window solved as one LP on both sides (the formulation's own build and solve; before
  the one-statement formulations, ``solve_dynamic`` split a window of more than 20,000 pairs by datasets instead).

Each case runs in a fresh interpreter, once for the base package and once for this checkout (:data:`ROOTS`),
the two orders alternating between repeats so that the load of the shared machine falls on both alike.
Printed: JSON with every run and, per case, the median seconds of each side and their ratio (new / base).
Timings are wall clock on a loaded machine: only the ratios of one run mean anything.

    nice -n 10 python -m cbalab.experiments.runs.formulation_bench
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: The import root of each side (a folder holding ``cbalab`` linked to a checkout, as .ci/typecheck makes);
#: None: this interpreter's own ``cbalab``.
ROOTS: dict[str, str | None] = {"base": "/tmp/h21root", "new": None}
#: Welfare instances: (seed, budget fraction) of milp_scale at 1,000 jobs.
WELFARE = tuple((s, f) for s in (1, 2, 3) for f in (0.1, 0.2, 0.35))
CASES = ("p1", *(f"welfare/{s}/{f}" for s, f in WELFARE), "p3", "p3-whole")
#: Repeats of every case on each side.
REPEATS = 2


def measure(case: str) -> dict[str, Any]:
    """Run one case (module docstring) with whichever ``cbalab`` this interpreter imports; seconds and answers."""
    if case == "p1":
        from cbalab.experiments.workload import generate_cost

        inst = generate_cost(100_000, 1_000, 0)
        try:  # an older base solved P1's LP in a module of its own
            from cbalab.models.milp.cost_highspy import build_cost_lp, solve_cost_lp  # type: ignore[import-not-found]
        except ModuleNotFoundError:  # since: compiled from the statement and solved as every compiled model is
            from cbalab.models.milp.cost import cost_statement
            from cbalab.models.solve import solve_arrays

            def build() -> Any:
                import highspy

                h = highspy.Highs()
                cost_statement(inst, relax=True).compile().pass_to(h)
                return h

            def solve() -> tuple[str, float | None]:
                out, _, run = solve_arrays(cost_statement(inst, relax=True).compile())
                return run["model_status"], out.objective
        else:

            def build() -> Any:
                return build_cost_lp(inst)

            def solve() -> tuple[str, float | None]:
                answer = solve_cost_lp(inst)
                return answer.status, answer.objective

        builds = []
        for _ in range(5):
            began = time.perf_counter()
            build()
            builds.append(time.perf_counter() - began)
        status, objective = solve()
        return {"seconds": statistics.median(builds), "status": status, "objective": objective}
    if case.startswith("welfare/"):
        from cbalab.experiments.workload import generate_welfare
        from cbalab.models.evaluate import evaluate
        from cbalab.models.solve import welfare_milp

        _, seed, fraction = case.split("/")
        inst = generate_welfare(1_000, 100, int(seed), utility_mix="mixed", budget_fraction=float(fraction))
        began = time.perf_counter()
        alloc = welfare_milp(inst)
        seconds = time.perf_counter() - began
        return {"seconds": seconds, "status": alloc.status, "objective": evaluate(inst, alloc, "welfare").welfare}
    if case in ("p3", "p3-whole"):
        from cbalab.experiments.runs import dynamic as experiment
        from cbalab.experiments.simulate import SimConfig, simulate
        from cbalab.models.milp import dynamic
        from cbalab.models.milp.dynamic import Cluster, matrix, schedule_from_replay, solve_dynamic

        params = next(p for p in experiment.grid(False, 0) if p["kind"] == "scale" and p["jobs"] == 1_000)
        w = experiment._window(params)
        cfg = SimConfig(policy="cba", seed=int(params["seed"]))
        jobs = simulate(w, cfg).jobs
        # schedule_from_replay, not simulate.replay_schedule, which an older base does not have
        schedule = schedule_from_replay(
            jobs["start_s"].to_numpy(),
            jobs["end_s"].to_numpy(),
            jobs["io_gbps"].to_numpy(),
            w.jobs["dataset_index"].to_numpy(),
            w.datasets["size_gb"].to_numpy(dtype=float),
        )
        cluster = Cluster(cache_gb=cfg.cache_gb, price_cache=cfg.prices[1], price_bandwidth=cfg.prices[2])
        began = time.perf_counter()
        matrix(schedule, cluster)
        built = time.perf_counter() - began
        began = time.perf_counter()
        if case == "p3":
            out = solve_dynamic(schedule, cluster)
        elif hasattr(dynamic, "_solve_matrix"):  # the whole LP, in a base with the one-statement formulations
            out = dynamic._solve_matrix(
                schedule, cluster, warmup=True, relax=False, deadline=dynamic.Deadline(None), threads=1
            )
        else:  # before: the whole LP is the split solve with the split turned off
            dynamic.FULL_LP_PAIRS = 10**12  # type: ignore[attr-defined]
            out = dynamic.solve_dynamic_matrix(schedule, cluster)  # type: ignore[attr-defined]
        seconds = time.perf_counter() - began
        return {
            "seconds": seconds,
            "build_seconds": built,
            "status": out.status,
            "objective": out.cost_io,
            "bound": out.bound,
        }
    raise ValueError(f"case must be one of {CASES}, got {case!r}")


def _run(case: str, side: str) -> dict[str, Any]:
    """``measure(case)`` in a fresh interpreter, on the package of ``side`` (:data:`ROOTS`)."""
    env = dict(os.environ)
    root = ROOTS[side]
    if root is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = root
    code = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('bench', {str(Path(__file__).resolve())!r})\n"
        "bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench)\n"
        f"print(json.dumps(bench.measure({case!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd="/")
    return {"case": case, "side": side, **json.loads(done.stdout.strip().splitlines()[-1])}


def compare(cases: tuple[str, ...] = CASES, repeats: int = REPEATS) -> dict[str, Any]:
    """Every case ``repeats`` times on each side, alternating which side goes first; medians and ratios."""
    runs = []
    for rep in range(repeats):
        for case in cases:
            for side in ("base", "new") if rep % 2 == 0 else ("new", "base"):
                runs.append(_run(case, side))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    summary = {}
    for case in cases:
        med = {
            s: statistics.median(r["seconds"] for r in runs if r["case"] == case and r["side"] == s)
            for s in ("base", "new")
        }
        summary[case] = {**med, "ratio": med["new"] / med["base"]}
    return {"runs": runs, "summary": summary}


if __name__ == "__main__":
    print(json.dumps(compare(), indent=1))
