"""The one replay engine of cbalab: the event loop, its clock, progress, the writer and the summary.

A replay moves a cluster through time under an online policy (docs/model.md
§6 for the cost problem, §6b for welfare over time).  What differs between the
problems (the state, how it is integrated, what the policy is asked and what
is reported) is a :class:`Strategy`: experiments/simulate.py's
:class:`~cbalab.experiments.simulate.Replay` (cost) and
experiments/elastic.py's :class:`~cbalab.experiments.elastic.ElasticReplay`
(welfare).  What is the same is here, once:

* **The loop** (:func:`run`): until every job has left, find the strategy's
  next event (a departure, an arrival, a restart ending, a cache reaching its
  target), or the next period tick if it comes first; integrate the slot up
  to it; let the jobs that are done leave and the arrivals in; re-decide when
  anything changed (a tick counts as a change); feed the new slot and record
  it.
* **Stuck replays.**  A tick re-decides on the same state; it is no
  progress.  When no event but a tick can ever come, the replay is stuck,
  with or without ``period_s``: the strategy says what that means for its
  problem (:meth:`Strategy.stuck`: bad input on the cost problem, where only
  B = 0 can stall every job for ever; a result with ``stuck_at_s`` on the
  welfare problem, where a policy may hold GPUs it cannot feed).  A
  zero-length slot that repeats more than :meth:`Strategy.idle_limit` times
  with nothing changing is stuck too when the strategy finds its jobs starved
  (:meth:`Strategy.starved`), else an internal error.
* **The clock's resolution** (:func:`resolution`, 4 ulp of the time): what is
  left of a job's work or of a cache fill in less than it is done, or the slot
  would never end.  A period below the resolution at the trace's latest
  submission is refused (:func:`check_period`), and a tick is never closer
  than the resolution to the time it follows, so the clock always moves.
* **Progress** (a tqdm bar over the jobs that have left), **the writer**
  (:meth:`SimResult.write`) and **the summary** (:func:`summary`): one
  ``summary.json`` shape for both problems, schema ``cbalab/simulation@1``
  (docs/interface.md, "Replay outputs").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from cbalab.models.files import atomic_write_csv, atomic_write_json, sha256_file, unwritable_file, unwritable_folder
from cbalab.models.instance import InstanceError

SCHEMA = "cbalab/simulation@1"

#: The wall-clock entries of a summary, which ``--no-timing`` leaves out (top level; inside ``offline_optimum``).
TIMING_KEYS = ("wall_seconds", "seconds")


#: The files a replay writes into its output folder, in the order written (docs/interface.md, "Replay outputs").
OUTPUT_FILES = ("jobs.csv", "timeseries.csv", "summary.json")


def unwritable_outputs(out_dir: str | Path) -> str | None:
    """Why a replay cannot write its output into ``out_dir``, naming the file at fault; None when it can.

    The folder must be, or become, a writable folder, and no file of :data:`OUTPUT_FILES` may be a folder
    (models/files.py says why in its one wording), so that a replay writes all its files or none of them.
    """
    out = Path(out_dir)
    problem = unwritable_folder(out)
    if problem is not None or not out.is_dir():
        return problem
    for name in OUTPUT_FILES:
        problem = unwritable_file(out / name)
        if problem is not None:
            return f"its {name} {problem}"
    return None


def resolution(t: float) -> float:
    """The clock's resolution at time ``t`` (seconds): 4 ulp of max(1, abs(t)), below which a slot would not end."""
    return 4.0 * math.ulp(max(1.0, abs(t)))


def check_period(period_s: float | None, submit_s: np.ndarray) -> None:
    """InstanceError naming ``period_s`` when it is below the clock's resolution at the latest submission.

    Ticks that close together could not advance the clock (t + period = t), so the replay would spin at one
    instant; the clock reaches at least the latest submission, so that is where the period must still count.
    """
    if period_s is None or submit_s.size == 0:
        return
    latest = float(np.max(np.abs(submit_s)))
    if period_s < resolution(latest):
        raise InstanceError(
            "period_s",
            period_s,
            f"is below the clock's resolution at the trace's latest submission "
            f"({resolution(latest):.3g} s at t = {latest:.6g} s): ticks would not advance the clock",
        )


@dataclass
class Report:
    """What a strategy hands the engine when the loop ends: its two tables and the numbers only it knows.

    ``finish_s`` (NaN while unfinished) and ``queue_s`` are per job, in the workload's order;
    ``entries`` are the problem's own summary entries (docs/interface.md), ``config`` and ``workload``
    the settings the summary records.
    """

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    finish_s: np.ndarray
    queue_s: np.ndarray
    gpu_hours: float
    entries: dict[str, Any]
    config: dict[str, Any]
    workload: dict[str, Any]


class Strategy(Protocol):
    """One problem's replay state and the steps :func:`run` calls, in this order, at every event.

    ``t`` is the state's time, ``n`` the number of jobs, ``done`` how many have left, ``submit`` their
    submission times; ``problem``, ``policy_name``, ``cache_policy`` and ``seed`` head the summary,
    ``label`` names the progress bar.
    """

    problem: str
    policy_name: str
    cache_policy: str | None
    seed: int
    label: str
    n: int
    done: int
    t: float
    submit: np.ndarray

    def next_event(self) -> float:
        """The time of the next event other than a tick (inf: none can ever come)."""
        ...

    def advance(self, t_next: float) -> None:
        """Integrate the slot [t, t_next) at the rates set at its start, and move the clock to ``t_next``."""
        ...

    def depart(self) -> bool:
        """The jobs whose work is done leave; True if any did."""
        ...

    def admit(self) -> bool:
        """The jobs submitted by now arrive (and start, where the problem starts them); True if anything changed."""
        ...

    def reallocate(self) -> None:
        """The policy re-decides (the online protocol of algorithms/online.py)."""
        ...

    def feed(self, decision: bool) -> None:
        """The new slot's IO, stalls and rates, and its row of the time series (``decision``: after a re-decision)."""
        ...

    def idle_limit(self) -> int:
        """How many zero-length slots in a row, nothing changing, the loop allows before it asks :meth:`starved`."""
        ...

    def starved(self) -> bool:
        """True when repeated zero-length slots mean the jobs are starved (stuck), False when they are a bug."""
        ...

    def stuck(self) -> None:
        """What a replay that can never move again means for the problem: raise for bad input, or return."""
        ...

    def report(self) -> Report:
        """The tables and the problem's own summary entries, once the loop has ended."""
        ...


@dataclass
class SimResult:
    """A replay's per-job table, per-event time series and summary (docs/interface.md, "Replay outputs")."""

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict = field(default_factory=dict)

    def write(self, out_dir: str | Path) -> Path:
        """Write jobs.csv, timeseries.csv and summary.json into ``out_dir`` (created if missing), each atomically.

        An old summary.json is removed first, so a rerun cut short leaves tables without a summary, never a
        summary that describes other tables; summary.json is written last and records the sha256 of each
        table under ``files`` as ``{name: {"sha256": hex}}`` (also set in :attr:`summary`), so a reader can
        tell a complete, matching set from one interrupted half-way.  Every target is checked first
        (:func:`unwritable_outputs`): one that cannot be written is an InstanceError naming it, and the folder
        is left as it was.
        """
        refused = unwritable_outputs(out_dir)
        if refused is not None:
            raise InstanceError("out", str(out_dir), refused)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").unlink(missing_ok=True)
        files = {}
        for name, frame in (("jobs.csv", self.jobs), ("timeseries.csv", self.timeseries)):
            files[name] = {"sha256": sha256_file(atomic_write_csv(out / name, frame))}
        self.summary["files"] = files
        atomic_write_json(out / "summary.json", self.summary)
        return out

    def drop_timing(self) -> None:
        """Leave out every wall-clock entry (:data:`TIMING_KEYS`), so that identical runs give identical bytes."""
        self.summary.pop(TIMING_KEYS[0], None)
        optimum = self.summary.get("offline_optimum")
        if isinstance(optimum, dict):
            optimum.pop(TIMING_KEYS[1], None)


def run(strategy: Strategy, *, period_s: float | None = None, progress: bool = False) -> SimResult:
    """Replay ``strategy`` until every job has left or it is stuck (module docstring); its tables and summary.

    ``period_s`` adds a re-decision every that many seconds (None: only at events); ``progress`` draws a bar.
    """
    wall = time.perf_counter()
    s = strategy
    check_period(period_s, s.submit)
    tick = s.t + max(period_s, resolution(s.t)) if period_s is not None else math.inf
    bar = _progress(s.n, progress, s.label)
    idle = 0
    stuck_at: float | None = None
    with np.errstate(divide="ignore", invalid="ignore"):
        while s.done < s.n:
            t_event = s.next_event()
            if not math.isfinite(t_event):  # nothing but a tick can come, and a tick is no progress
                s.stuck()
                stuck_at = s.t
                break
            t_next = min(t_event, tick)
            idle = idle + 1 if t_next == s.t else 0
            s.advance(t_next)
            changed = s.depart()
            changed = s.admit() or changed
            if period_s is not None and s.t >= tick:
                tick = s.t + max(period_s, resolution(s.t))
                changed = True
            if changed:
                s.reallocate()
            elif idle > s.idle_limit():
                if not s.starved():
                    raise RuntimeError(f"the replay makes no progress at t = {s.t!r} s (a zero-length slot repeats)")
                stuck_at = s.t
                break
            s.feed(changed)
            if bar is not None and s.done - bar.n >= 500:
                bar.update(s.done - bar.n)
    if bar is not None:
        bar.update(s.done - bar.n)
        bar.close()
    report = s.report()
    return SimResult(report.jobs, report.timeseries, summary(s, report, stuck_at, time.perf_counter() - wall))


def summary(strategy: Strategy, report: Report, stuck_at: float | None, wall_seconds: float) -> dict[str, Any]:
    """The one summary.json shape of both problems (docs/interface.md, "Replay outputs"), JSON-safe.

    The head is the same for both problems (what ran, how many jobs finished, when it got stuck, the events,
    makespan, GPU-hours and the JCT and queueing statistics over the finished jobs); the problem's own entries
    follow, then the wall time, the configuration and the workload.
    """
    n = strategy.n
    finish = report.finish_s
    submit = strategy.submit
    jct = finish - submit
    done = np.isfinite(jct)
    finished = jct[done]
    head: dict[str, Any] = {
        "schema": SCHEMA,
        "problem": strategy.problem,
        "policy": strategy.policy_name,
        "cache_policy": strategy.cache_policy,
        "seed": strategy.seed,
        "jobs": n,
        "unfinished_jobs": int((~done).sum()),
        "stuck_at_s": stuck_at,
        "events": len(report.timeseries),
        "makespan_s": float(np.max(finish) - np.min(submit)) if n and done.all() else None,
        "gpu_hours": report.gpu_hours,
        "mean_jct_s": float(np.mean(finished)) if finished.size else None,
        "p50_jct_s": float(np.percentile(finished, 50)) if finished.size else None,
        "p99_jct_s": float(np.percentile(finished, 99)) if finished.size else None,
        "mean_queue_s": float(np.mean(report.queue_s)) if n else 0.0,
    }
    tail = {"wall_seconds": wall_seconds, "config": report.config, "workload": report.workload}
    return _finite({**head, **report.entries, **tail})


def _finite(doc: Any) -> Any:
    """JSON-safe: NaN and infinities become None (strict JSON refuses them), numpy scalars Python numbers."""
    if isinstance(doc, dict):
        return {k: _finite(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite(v) for v in doc]
    if isinstance(doc, (float, np.floating)):
        return float(doc) if math.isfinite(doc) else None
    if isinstance(doc, np.integer):
        return int(doc)
    return doc


def _progress(total: int, enabled: bool, label: str) -> Any:
    """A tqdm bar over the jobs that have left, or None when progress is off."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="job", desc=label, mininterval=0.5)
