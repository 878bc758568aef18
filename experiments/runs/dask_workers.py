"""Dask workers: one experiment swept on one worker and on two, Dask and local processes.

Each backend sweeps the same grid of one experiment (``--experiment``, default ``optimality --quick``) into a
fresh folder: a local Dask cluster (``distributed.LocalCluster``, one thread per worker process, already up
when the clock starts, as a cluster on other machines would be) with one worker and with two, and the
runner's own local processes (``--workers 1`` and ``2``).  The clock is the sweep's wall time, its runs,
tables and figures: what a user waits for.  The speed-ups are ratios in one run (one worker's wall over
two workers'); on a machine with two cores, two workers can at best halve the runs' part of it.  Every
backend must give the same rows (every column but the ``*_seconds`` timings), or the measurement is not ok.

    nice -n 10 cbalab bench dask-workers
"""

from __future__ import annotations

import logging
import tempfile
import time
from typing import Any

import pandas as pd

from cbalab.experiments.runner import comparable, run_sweep


def _rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The sweep's rows without their timings (runner.comparable), in run-key order: what every backend must
    agree on."""
    return comparable(runs).sort_values("run_key").reset_index(drop=True)


def sweep_wall(experiment: str, quick: bool, seed: int, workers: int, dask: bool) -> tuple[float, pd.DataFrame]:
    """Wall seconds of one sweep of ``experiment`` on ``workers`` workers (Dask or local processes), its rows."""
    with tempfile.TemporaryDirectory() as out:
        if not dask:
            start = time.perf_counter()
            sweep = run_sweep(experiment, out, quick=quick, seed=seed, workers=workers, progress=False)
            return time.perf_counter() - start, _rows(sweep.runs)
        from dask.distributed import LocalCluster

        with LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster:
            start = time.perf_counter()
            sweep = run_sweep(
                experiment, out, quick=quick, seed=seed, scheduler=cluster.scheduler_address, progress=False
            )
            return time.perf_counter() - start, _rows(sweep.runs)


def measure(*, experiment: str = "optimality", quick: bool = True, seed: int = 0) -> dict[str, Any]:
    """The walls of the four sweeps of the module docstring, the two speed-ups, and whether all rows agree."""
    walls: dict[str, float] = {}
    rows: dict[str, pd.DataFrame] = {}
    for backend in ("dask", "local"):
        for workers in (1, 2):
            name = f"{backend}_{workers}"
            walls[name], rows[name] = sweep_wall(experiment, quick, seed, workers, backend == "dask")
    first = rows["local_1"]
    agree = all(r.shape == first.shape and r.equals(first) for r in rows.values())
    return {
        "experiment": experiment,
        "quick": quick,
        "runs": len(first),
        "wall_s": walls,
        "dask_speedup": walls["dask_1"] / walls["dask_2"],
        "local_speedup": walls["local_1"] / walls["local_2"],
        "rows_agree": agree,
        "ok": agree,
    }
