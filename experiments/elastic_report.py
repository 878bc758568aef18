"""What the elastic replay (experiments/elastic.py) writes: its time-series rows, jobs.csv and its summary entries.

:func:`record` appends the row of the slot starting now; :func:`report` turns the replay's state at its end
into the welfare problem's :class:`~cbalab.experiments.replay.Report` (docs/interface.md, "Replay outputs"),
which the engine of experiments/replay.py writes.  Both read the state of an
:class:`~cbalab.experiments.elastic.ElasticReplay` and change nothing but its rows.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cbalab.experiments.replay import Report

if TYPE_CHECKING:
    from cbalab.experiments.elastic import ElasticReplay


def record(r: ElasticReplay, decision: bool) -> None:
    """One time-series row: the slot starting now."""
    a = r.active
    running = int((r.g[a] > 0).sum())
    rate = float(r.urate[a].sum())
    p = r.pending if decision else {}
    bound = p.get("bound", math.nan)
    realised = max(0.0, 1.0 - rate / bound) if decision and bound > 0 else (0.0 if bound == 0 else math.nan)
    r.rows.append(
        (
            r.t,
            a.size,
            running,
            a.size - running,
            r.gpus_busy,
            r.spend_rate,
            rate,
            float(r.target.sum()),
            float(r.cache.sum()),
            float(r.bw[a].sum()),
            r.io_factor,
            int(decision),
            p.get("certified_gap", math.nan),
            realised,
            bound,
            p.get("static_welfare", math.nan),
            p.get("full", 0),
        )
    )


def report(r: ElasticReplay) -> Report:
    """jobs.csv, timeseries.csv and the welfare problem's summary entries (docs/interface.md, "Replay outputs")."""
    w = r.w
    series = pd.DataFrame(
        r.rows,
        columns=[
            "time_s",
            "active_jobs",
            "running_jobs",
            "waiting_jobs",
            "gpus_busy",
            "spend_per_hour",
            "welfare_rate",
            "cache_gb",
            "cache_filled_gb",
            "bandwidth_gbps",
            "io_factor",
            "decision",
            "certified_gap",
            "realised_gap",
            "bound",
            "static_welfare_rate",
            "full_reopt",
        ],
    )
    jct = r.finish - r.submit
    deadline = w.deadline_s
    has_deadline = np.isfinite(deadline)
    met = np.where(has_deadline, r.finish <= deadline, False)
    jobs = pd.DataFrame(
        {
            "job_id": w.jobs["job_id"].to_numpy(),
            "model": w.jobs["model"].to_numpy(),
            "dataset": w.jobs["dataset"].to_numpy(),
            "shape": w.jobs["shape"].to_numpy(),
            "ref_gpus": w.jobs["gpus"].to_numpy(),
            "options": w.jobs["options"].to_numpy(),
            "duration_s": w.jobs["duration_s"].to_numpy(),
            "submit_s": r.submit,
            "start_s": r.start,
            "finish_time_s": r.finish,
            "jct_s": jct,
            "queue_s": r.wait_s,
            "gpu_hours": r.gpu_s / 3600.0,
            "welfare": r.welfare_j,
            "deadline_s": deadline,
            "deadline_met": pd.array([bool(m) if h else None for h, m in zip(has_deadline, met)], dtype="boolean"),
            "restarts": r.restarts,
        }
    )
    dec = series[series["decision"] == 1]
    gaps = dec["certified_gap"].to_numpy(dtype=float)
    gaps = gaps[np.isfinite(gaps)]
    real = dec["realised_gap"].to_numpy(dtype=float)
    real = real[np.isfinite(real)]
    hours = r.horizon / 3600.0
    n_dl = int(has_deadline.sum())
    entries = {
        "welfare": {
            "horizon": r.totals["welfare_horizon"],
            "horizon_s": r.horizon,
            "rate_mean": r.totals["welfare_horizon"] / hours if hours > 0 else 0.0,
            "replay": r.totals["welfare"],
        },
        "budget_per_hour": r.budget,
        "budget_fraction": None if r.cfg.budget_per_hour is not None else r.cfg.budget_fraction,
        "reference_spend_per_hour": r.reference,
        "spend_per_hour_max": r.spend_max,
        "spend": r.totals["spend"],
        "deadline_jobs": n_dl,
        "deadlines_met": float(met[has_deadline].mean()) if n_dl else None,
        "restarts": int(r.restarts.sum()),
        "restart_delay_s": r.cfg.restart_delay_s,
        "decisions": r.decisions,
        "full_reopts": r.full_runs,
        "full_reopts_improved": r.full_improved,
        "referee_checks": r.referee_checks,
        "certified_gap_mean": float(gaps.mean()) if gaps.size else None,
        "certified_gap_p99": float(np.percentile(gaps, 99)) if gaps.size else None,
        "certified_gap_max": float(gaps.max()) if gaps.size else None,
        "realised_gap_mean": float(real.mean()) if real.size else None,
    }
    return Report(
        jobs=jobs,
        timeseries=series,
        finish_s=r.finish,
        queue_s=r.wait_s,
        gpu_hours=r.totals["gpu_hours"],
        entries=entries,
        config={
            **asdict(r.cfg),
            "cache_policy": r.cache_policy,
            "bandwidth_gbps": None if math.isinf(r.B) else r.B,
        },
        workload={**w.settings, "source": w.jobs.attrs.get("source", "")},
    )
