"""Trace scale: AutoCBA's growth with size and online AutoCBA against the cost replay.

Two CPU-time ratios, each measured in one run (``time.process_time``, so that other load on the machine
does not count), each with its goal:

* ``autocba_100k_over_10k``: AutoCBA (algorithms/autocba/driver.py, the registered ``autocba`` with its
  certificate) on the seeded welfare instance of 100,000 jobs over its time on 10,000 jobs
  (experiments.workload.generate_welfare, N/10 datasets, seed 1, mixed utilities, budget fraction 0.2:
  what ``cbalab generate --kind welfare --jobs N --datasets N/10 --seed 1 --utility mixed
  --budget-fraction 0.2`` writes); goal ≤ 12.
* ``online_over_cost_replay``: the elastic welfare replay of the whole Philly trace under online AutoCBA
  (algorithms/autocba/online.py; ``cbalab simulate --problem welfare --trace data/philly/philly_jobs.csv.gz
  --policy autocba``) over the CBA cost replay of the same trace (``cbalab simulate --trace ... --policy
  cba``); goal ≤ 3.

    nice -n 10 cbalab bench trace-scale
    nice -n 10 cbalab bench trace-scale --repeats 5 --autocba-only   # AutoCBA's ratio alone, medians of 5
    nice -n 10 cbalab bench trace-scale --profile --window 0 2e6   # where online AutoCBA's and CBA's replay time goes

prints the JSON of :func:`measure` with its defaults (the whole trace, sizes 10,000 and 100,000).
``--profile`` adds AutoCBA's work at both sizes (:func:`work_growth`: the calls of its own functions, which
no machine changes, and CPU per call, which the machine does), a third replay, under cProfile
(:func:`online_profile`): the share of its CPU spent in
online AutoCBA's decisions and, within them, in full re-optimisations, local updates and certificates; the
rest is the replay engine's own work per event; and a fourth, the cost replay under cProfile
(:func:`cost_profile`): CBA's solve, the rest of the policy's answer and the engine's steps.  The shares, not
the profiled seconds, are the measurement: cProfile slows Python calls more than numpy's.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

from cbalab.algorithms.autocba import autocba
from cbalab.experiments.workload import generate_welfare
from cbalab.models.instance import Instance, InstanceError

#: The Philly trace shipped with the package (data/philly/).
PHILLY = Path(__file__).resolve().parents[2] / "data" / "philly" / "philly_jobs.csv.gz"


def welfare_instance(jobs: int, seed: int = 1) -> Instance:
    """The seeded welfare instance both AutoCBA measurements use (module docstring): N/10 datasets, mixed
    utilities, budget fraction 0.2."""
    return generate_welfare(jobs, max(1, jobs // 10), seed, utility_mix="mixed", budget_fraction=0.2)


def autocba_cpu(jobs: int, seed: int = 1) -> dict[str, Any]:
    """CPU seconds of AutoCBA on the seeded welfare instance of ``jobs`` jobs (module docstring), and its answer.

    The instance is built before the clock starts; the welfare and bound are AutoCBA's, re-scored by the
    referee elsewhere (tests/test_autocba.py): here they identify the answer, so that a faster AutoCBA can be
    seen to give the same one.
    """
    inst = welfare_instance(jobs, seed)
    start = time.process_time()
    alloc = autocba(inst)
    cpu = time.process_time() - start
    return {"jobs": jobs, "cpu_s": cpu, "welfare": alloc.objective, "bound": alloc.bound, "status": alloc.status}


def replay_cpu(problem: str, trace: Path = PHILLY, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """CPU seconds of one replay of ``trace`` with the command line's defaults: ``welfare`` under online AutoCBA
    (experiments/elastic.py), ``cost`` under CBA (experiments/simulate.py); ``window`` keeps the jobs submitted
    in [start, end) s, as ``--window``.  Reading the trace is outside the clock."""
    from cbalab.experiments.elastic import ElasticConfig
    from cbalab.experiments.elastic import replay as welfare_replay
    from cbalab.experiments.simulate import SimConfig, simulate
    from cbalab.experiments.simulate import window as keep_window
    from cbalab.experiments.workload import make_workload
    from cbalab.experiments.workload.elastic import UtilityMix, elastic

    base = make_workload(trace=trace)
    if window is not None:
        base = keep_window(base, *window)
    if problem == "welfare":
        workload = elastic(base, 0, UtilityMix.parse("mixed"))
        start = time.process_time()
        result = welfare_replay(workload, ElasticConfig(policy="autocba"))
    else:
        start = time.process_time()
        result = simulate(base, SimConfig(policy="cba"))
    cpu = time.process_time() - start
    summary = result.summary
    keys = (
        "jobs",
        "decisions",
        "events",
        "unfinished_jobs",
        "welfare",
        "full_reopts",
        "certified_gap_mean",
        "certified_gap_p99",
    )
    return {"problem": problem, "cpu_s": cpu, **{k: summary[k] for k in keys if k in summary}}


#: The parts of online AutoCBA (algorithms/autocba/online.py, OnlineAutoCBA) that :func:`online_profile` times.
PARTS = {"decide": "decisions", "_full": "full re-optimisations", "_local": "local updates", "certify": "certificates"}
#: The engine's per-event steps of the cost replay (experiments/simulate.py, ``Replay``) that :func:`cost_profile`
#: times beside ``reallocate``, the policy's answer inside it (``_Policy.__call__``) and CBA's solve inside that
#: (:data:`CBA_SOLVE`).
COST_STEPS = ("next_event", "advance", "depart", "admit", "feed")
#: CBA's solve in the cost replay (algorithms/cba.py): its rule on the demands (``on_demand``, which the replay
#: calls when the registry names it) or, through the online protocol, ``cba_continuous``; one of them runs.
CBA_SOLVE = ("on_demand", "cba_continuous")


def _profiled(problem: str, trace: Path, window: tuple[float, float] | None, where: dict[str, str]) -> dict[str, float]:
    """:func:`replay_cpu` of ``problem`` under cProfile (process time): per function named in ``where`` (a name
    and the file it must be defined in), its cumulative seconds summed over its definitions there, and under
    ``replay`` the whole replay's (experiments/replay.py's ``run``, the trace read outside)."""
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    replay_cpu(problem, trace, window)
    profiler.disable()
    stats = pstats.Stats(profiler)
    seconds = dict.fromkeys([*where, "replay"], 0.0)
    for (path, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        defined = Path(path).as_posix()
        if function in where and defined.endswith(where[function]):
            seconds[function] += cumulative
        elif function == "run" and defined.endswith("experiments/replay.py"):
            seconds["replay"] += cumulative
    seconds["replay"] = max(seconds["replay"], 1e-12)
    return seconds


def _shares(total: float, parts: dict[str, float]) -> dict[str, Any]:
    """Each part's profiled seconds and share of ``total``, with ``total`` as ``profiled_cpu_s``."""
    return {"profiled_cpu_s": total, **{k: {"cpu_s": v, "share": v / total} for k, v in parts.items()}}


def online_profile(trace: Path = PHILLY, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """The welfare replay of :func:`replay_cpu` under cProfile: its profiled CPU seconds (the engine's loop, the
    trace read outside) and, per part of :data:`PARTS`, the seconds inside it (cumulative, calls below included)
    and their share of the replay.

    The three parts inside the decisions are disjoint; ``rest of the decisions`` is what else a decision does
    (its dual's matrices, the feeder); ``engine`` is the replay's CPU outside the decisions: the elastic
    engine's per-event work (experiments/elastic.py) and the referee's scoring.
    """
    s = _profiled("welfare", trace, window, dict.fromkeys(PARTS, "algorithms/autocba/online.py"))
    total = s["replay"]
    rest = s["decide"] - s["_full"] - s["_local"] - s["certify"]
    parts = {PARTS[k]: s[k] for k in PARTS}
    return _shares(total, {**parts, "rest of the decisions": rest, "engine": total - s["decide"]})


def cost_profile(trace: Path = PHILLY, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """The CBA cost replay of :func:`replay_cpu` under cProfile, split into disjoint parts (where a cost
    replay, io-cost's unit of work, spends its time): CBA's solve; the rest of the policy's answer
    (the aggregate instance, the online wrapper); the rest of ``reallocate`` (the targets from the answer); the
    engine's other steps (:data:`COST_STEPS`), and the loop around them.  Shares as in :func:`online_profile`.
    """
    where = dict.fromkeys((*COST_STEPS, "reallocate", "__call__"), "experiments/simulate.py")
    s = _profiled("cost", trace, window, where | dict.fromkeys(CBA_SOLVE, "algorithms/cba.py"))
    total = s["replay"]
    solve = sum(s[k] for k in CBA_SOLVE)
    parts = {
        "cba solve": solve,
        "rest of the policy answer": s["__call__"] - solve,
        "rest of reallocate": s["reallocate"] - s["__call__"],
        **{k.replace("_", " "): s[k] for k in COST_STEPS},
        "loop": total - s["reallocate"] - sum(s[k] for k in COST_STEPS),
    }
    return _shares(total, parts)


#: Where AutoCBA's own functions live (:func:`autocba_work` counts their calls).
AUTOCBA_CODE = "algorithms/autocba/"


def autocba_work(jobs: int, seed: int = 1) -> dict[str, Any]:
    """AutoCBA on the instance of :func:`autocba_cpu` under cProfile: its calls, which a machine does not change.

    ``calls`` is the number of calls of AutoCBA's own functions (defined under :data:`AUTOCBA_CODE`),
    ``heap_ops`` that of its heap pushes and pops (``heapq``, where a log factor lives), ``steps`` the calls per
    function, and ``cpu_s`` the profiled CPU seconds (cProfile's clock: its overhead is per call, so CPU per
    call is the comparable figure).  Work that grows linearly keeps ``calls`` per job the same at every size.
    """
    inst = welfare_instance(jobs, seed)
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    autocba(inst)
    profiler.disable()
    stats = pstats.Stats(profiler)
    steps: dict[str, int] = {}
    heap_ops = 0
    for (path, _line, function), (_cc, calls, _tt, _cum, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if AUTOCBA_CODE in Path(path).as_posix():
            name = f"{Path(path).stem}.{function}"
            steps[name] = steps.get(name, 0) + calls
        elif function in ("<built-in method _heapq.heappush>", "<built-in method _heapq.heappop>"):
            heap_ops += calls
    total = sum(steps.values())
    cpu = float(stats.total_tt)  # type: ignore[attr-defined]
    return {
        "jobs": jobs,
        "calls": total,
        "calls_per_job": total / jobs,
        "heap_ops": heap_ops,
        "cpu_s": cpu,
        "steps": steps,
    }


def work_growth(small: int, large: int) -> dict[str, Any]:
    """:func:`autocba_work` at both sizes and how each grows: the calls' ratio (the work's growth, the same on
    every machine), the heap operations', and CPU per call (what the machine adds: deeper heaps, caches missed)."""
    a, b = autocba_work(small), autocba_work(large)
    return {
        "calls_ratio": b["calls"] / a["calls"],
        "heap_ops_ratio": b["heap_ops"] / max(a["heap_ops"], 1),
        "cpu_ratio": b["cpu_s"] / a["cpu_s"],
        "cpu_per_call_ratio": (b["cpu_s"] / b["calls"]) / (a["cpu_s"] / a["calls"]),
        "steps": {
            name: {str(small): a["steps"].get(name, 0), str(large): n}
            for name, n in sorted(b["steps"].items(), key=lambda kv: -kv[1])
        },
        str(small): {k: v for k, v in a.items() if k != "steps"},
        str(large): {k: v for k, v in b.items() if k != "steps"},
    }


def measure(
    *,
    small: int = 10_000,
    large: int = 100_000,
    trace: Path = PHILLY,
    window: tuple[float, ...] | None = None,
    repeats: int = 1,
    autocba_only: bool = False,
    profile: bool = False,
) -> dict[str, Any]:
    """Both ratios of the module docstring in one run: AutoCBA at ``large`` over ``small`` jobs, and online
    AutoCBA's welfare replay of ``trace`` over the CBA cost replay of it (``window``: START,END seconds, only
    that part of the trace).  AutoCBA runs ``repeats`` times at each size, alternating, and its ratio is that
    of the median CPU times (the ratio moves with the machine's load; each run's times are listed);
    ``autocba_only`` leaves the two timed replays out; ``profile`` adds :func:`work_growth` of AutoCBA,
    :func:`online_profile` of the welfare replay and :func:`cost_profile` of the cost replay.  ``cbalab bench
    trace-scale`` runs it."""
    if window is not None and len(window) != 2:
        raise InstanceError("window", list(window), "must be two numbers, START,END in seconds")
    if repeats < 1:
        raise InstanceError("repeats", repeats, "must be >= 1")
    span = None if window is None else (window[0], window[1])
    runs = [(autocba_cpu(small), autocba_cpu(large)) for _ in range(repeats)]
    at_small, at_large = runs[0]
    median_small = statistics.median(r[0]["cpu_s"] for r in runs)
    median_large = statistics.median(r[1]["cpu_s"] for r in runs)
    out: dict[str, Any] = {
        "autocba": [at_small, at_large],
        "autocba_cpu_s": {str(small): [r[0]["cpu_s"] for r in runs], str(large): [r[1]["cpu_s"] for r in runs]},
        "autocba_large_over_small": median_large / median_small,
        "goals": {"autocba_large_over_small": 12.0, "online_over_cost_replay": 3.0},
    }
    if profile:
        out["autocba_work"] = work_growth(small, large)
        out["online_profile"] = online_profile(trace, span)
        out["cost_profile"] = cost_profile(trace, span)
    if autocba_only:
        return out
    online, cost = replay_cpu("welfare", trace, span), replay_cpu("cost", trace, span)
    return {
        **out,
        "online_autocba": online,
        "cba_cost_replay": cost,
        "online_over_cost_replay": online["cpu_s"] / cost["cpu_s"],
    }
