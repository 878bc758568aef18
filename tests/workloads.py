"""Hand-built workloads for the tests: every number of a trace given, none drawn.

:func:`manual` is experiments.workload.elastic.elastic with its random draws replaced by arguments, so a
test can check a replay against integrals worked out by hand (tests/test_elastic.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cbalab.experiments.workload.elastic import ELASTIC_SHAPES, ElasticWorkload, UtilityMix, shape_values
from cbalab.models.instance import InstanceError


def manual(
    *,
    submit_s: list[float],
    duration_s: list[float],
    ref_gpus: list[int],
    options: list[dict[int, float]],
    shapes: list[str],
    values: list[float],
    dataset: list[int],
    sizes_gb: list[float],
    sample_gb: float = 1e-4,
    deadline_slack: list[float] | None = None,
    mix: UtilityMix | None = None,
) -> ElasticWorkload:
    """A hand-built elastic workload: per job {GPUs: samples/s}, shape, U(reference), dataset.

    The same tables, work and utilities as :func:`elastic`, with every random draw replaced by the arguments;
    ``deadline_slack`` (default 1.5) places each deadline job's deadline at submit + slack × duration.
    """
    mix = mix or UtilityMix()
    n = len(submit_s)
    width = max((len(o) for o in options), default=1)
    gpus: np.ndarray = np.zeros((n, width), dtype=np.int64)
    tput = np.ones((n, width))
    valid: np.ndarray = np.zeros((n, width), dtype=bool)
    ref: np.ndarray = np.zeros(n, dtype=np.int64)
    for j, table in enumerate(options):
        if ref_gpus[j] not in table:
            raise InstanceError(f"jobs[{j}].ref_gpus", ref_gpus[j], "must be one of the job's options")
        row = sorted(table)
        gpus[j, : len(row)] = row
        tput[j, : len(row)] = [table[g] for g in row]
        valid[j, : len(row)] = True
        ref[j] = row.index(ref_gpus[j])
    rows = np.arange(n)
    t_ref = tput[rows, ref]
    x = tput / t_ref[:, None]
    shape = np.array([ELASTIC_SHAPES.index(s) for s in shapes], dtype=np.int64)
    value = np.asarray(values, dtype=float)
    base = np.zeros((n, width))
    for j in range(n):
        scale = 1.0 if shapes[j] == "deadline" else value[j]
        base[j] = scale * shape_values(shapes[j], x[j], mix)
    base = np.where(valid, base, 0.0)
    dur = np.asarray(duration_s, dtype=float)
    submit = np.asarray(submit_s, dtype=float)
    slack = np.full(n, 1.5) if deadline_slack is None else np.asarray(deadline_slack, dtype=float)
    deadline = np.where(shape == ELASTIC_SHAPES.index("deadline"), submit + slack * dur, np.nan)
    jobs = pd.DataFrame(
        {
            "job_id": [f"j{j}" for j in range(n)],
            "submit_s": submit,
            "duration_s": dur,
            "gpus": np.asarray(ref_gpus, dtype=np.int64),
            "model": ["manual"] * n,
            "dataset": [f"d{k}" for k in dataset],
            "dataset_index": np.asarray(dataset, dtype=np.int64),
            "shape": shapes,
            "value_per_hour": value,
            "work_samples": dur * t_ref,
            "deadline_s": deadline,
            "options": [" ".join(str(int(g)) for g in gpus[j, valid[j]]) for j in range(n)],
        }
    )
    datasets = pd.DataFrame({"dataset": [f"d{k}" for k in range(len(sizes_gb))], "size_gb": sizes_gb})
    return ElasticWorkload(
        jobs=jobs,
        datasets=datasets,
        gpus=gpus,
        tput=tput,
        rate=tput * sample_gb * valid,
        base=base,
        valid=valid,
        ref=ref,
        work=dur * t_ref,
        shape=shape,
        value=value,
        deadline_s=deadline,
        mix=mix,
        settings={"source": "manual", "utility_mix": mix.record()},
    )
