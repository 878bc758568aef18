"""Regression benchmark of the integer P1 MILP (docs/model.md §4; proofs/cba_integer_gap.md, Theorem I6).

Blocks + bandwidth tiers, seed 0, 1,000 jobs × 200 datasets (experiments/workload/variants.variant_instance), built
and solved twice in one run: with the block count N = Σ_k n_k (today's formulation) and without it (the
formulation of commit be36df3, which stopped proving optimality).  Both are HiGHS at MIP gap 0 under the
same time limit; the result is the ratio of wall times (build + solve), never a bare time.

    nice -n 10 cbalab bench integer-milp [--seeds 0] [--time-limit 120]

Prints one line per solve as it ends and writes ``integer_milp_bench.csv`` atomically after every solve.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from cbalab.experiments.runs.common import write_results
from cbalab.experiments.workload.variants import variant_instance
from cbalab.models.milp.cost import build_cost_model
from cbalab.models.solve import SolveOptions, solve_model

#: formulation name -> build_cost_model's count_blocks
FORMS = {"without_block_count": False, "with_block_count": True}


def run_one(seed: int, form: str, n_jobs: int, n_datasets: int, time_limit: float) -> dict:
    """Build and solve one blocks + tiers instance in one formulation; wall time includes the build."""
    inst = variant_instance("block+tiers", seed, n_jobs, n_datasets)
    start = time.perf_counter()
    model = build_cost_model(inst, count_blocks=FORMS[form])
    built = time.perf_counter()
    out = solve_model(model, SolveOptions(time_limit=time_limit))
    end = time.perf_counter()
    return {
        "seed": seed,
        "jobs": n_jobs,
        "datasets": n_datasets,
        "form": form,
        "status": out.status,
        "objective": out.objective,
        "bound": out.bound,
        "build_seconds": built - start,
        "wall_seconds": end - start,
        "time_limit": time_limit,
    }


def measure(
    *,
    seeds: tuple[int, ...] = (0,),
    jobs: int = 1000,
    datasets: int = 200,
    time_limit: float = 120.0,
    out: str = "results/integer_milp_bench",
) -> None:
    """Both forms on every seed; speed-up = old wall time / new (a lower bound if the old form hit its limit).
    ``cbalab bench integer-milp`` runs it."""
    arguments = {"seeds": list(seeds), "jobs": jobs, "datasets": datasets, "time_limit": time_limit, "out": out}
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for seed in seeds:
        pair = {}
        for form in FORMS:
            row = run_one(seed, form, jobs, datasets, time_limit)
            rows.append(row)
            pair[form] = row
            write_results(
                folder / "integer_milp_bench.csv",
                pd.DataFrame(rows),
                script="integer_milp_bench",
                seed=None,
                arguments=arguments,
            )
            print(f"seed {seed} {form}: {row['status']} in {row['wall_seconds']:.2f} s", flush=True)
        old, new = pair["without_block_count"], pair["with_block_count"]
        if new["status"] != "optimal":
            print(f"seed {seed}: the block-count form did not prove optimality ({new['status']})", flush=True)
        bound = " (at least: the old form hit its limit)" if old["status"] == "time_limit" else ""
        print(f"seed {seed}: speed-up {old['wall_seconds'] / new['wall_seconds']:.1f}x{bound}", flush=True)
    print(f"wrote {folder / 'integer_milp_bench.csv'}")
