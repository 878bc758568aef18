"""Event-driven trace replay: the dynamic problem of spec/MODEL.md §6 under an online cost policy.

Jobs arrive (a :class:`experiments.workload.Workload`), wait in a strict FIFO
queue until the cluster's G GPUs can hold them, run, and leave when their
work is done.  A job's work is its ``duration_s``, the run time when never
stalled; it progresses at its stall factor x_j / r_j (MODEL.md §3), so a
stalled job runs longer and pays for its GPUs longer.

At every event (an arrival, a start, a departure, and every ``period_s`` when
set) the policy, any registered method of the cost problem P1
(experiments.methods), is re-run on the running jobs and sets each dataset's
*target* cache c*_k and the bandwidth it would buy.  Policies whose answer
depends on the jobs only through the per-dataset demand R_k (CBA, IO-only,
SiloD: MODEL.md §4 shows P1 depends on the jobs only through R_k) are called
on a fixed K-job aggregate instance (one pseudo-job of rate R_k per dataset),
so an event costs O(K log K) whatever the number of running jobs; the others
(cache-all, CoorDL, Quiver, anything else) get an instance of the running
jobs in arrival order.

Cache warm-up (MODEL.md §6): a dataset's cache holds c_k ≤ c*_k and grows
only by the bytes read remotely for it; every slot between two events uses
the cache at its start (hit ratio c_k / d_k), buys the remote IO that keeps
its jobs unstalled at that hit ratio, and the cache grows by that IO until
it reaches its target (which ends the slot).  A lowered target evicts at
once.  With ``warmup=False`` caches are instant (c_k = c*_k).  The remote IO
is capped at B: when the jobs need more, every reading job gets the same
share B / need and stalls by that factor.  A policy's private-cache
inefficiency (CoorDL: jobs hit only their own slices) is kept by warming its
*effective* hit ratio 1 − B*_k / R_k in proportion to the cache filled.

Costs are integrated exactly over the slots: GPUs (p_g per busy GPU), cache
(p_c per allocated GB, the target capacity, whether filled yet or not) and
bandwidth (p_b per GB/s bought).  A dataset's cache and bandwidth cost is
shared among its running jobs in proportion to their rates r_j.

The outputs are the files of spec/INTERFACE.md, "Traces and simulation
output": jobs.csv, timeseries.csv and summary.json (schema
``cbalab/simulation@1``).
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cbalab.algorithms import registry as methods
from cbalab.experiments.workload import DEFAULT_PRICES, Workload
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance, InstanceError, check

SCHEMA = "cbalab/simulation@1"

#: Policies that depend on the running jobs only through the per-dataset demand R_k (MODEL.md §4).
AGGREGABLE = frozenset({"cba", "io-only", "silod", "lp", "milp"})

#: Relative tolerance for "this job's work is done" and "this cache is warm".
_TOL = 1e-9


@dataclass(frozen=True)
class SimConfig:
    """The cluster and the policy of one replay.

    ``gpus`` is the cluster's G (every job must fit), ``cache_gb`` its C,
    ``bandwidth_gbps`` its remote-IO cap B (inf: none), ``prices`` (p_g, p_c,
    p_b) in $/h per unit, ``warmup`` False for instant caches, ``period_s``
    an extra re-allocation period (None: only at arrivals and departures).

    The default G = 768 is sized for the Philly trace (82,247 jobs, on
    average 374 GPUs busy): with strict FIFO its jobs wait 22 min on average,
    about 9% of the mean JCT (512 GPUs: 5.5 days; 1,024 GPUs: 11 s).
    """

    policy: str = "cba"
    gpus: int = 768
    cache_gb: float = 500.0
    bandwidth_gbps: float = math.inf
    prices: tuple[float, float, float] = DEFAULT_PRICES
    warmup: bool = True
    period_s: float | None = None
    seed: int = 0
    progress: bool = False

    def check(self) -> None:
        """InstanceError naming the setting if a value is out of range."""
        if self.gpus < 1:
            raise InstanceError("gpus", self.gpus, "must be >= 1")
        for name, value in (("cache_gb", self.cache_gb), *zip(("p_g", "p_c", "p_b"), self.prices)):
            if not (math.isfinite(value) and value >= 0):
                raise InstanceError(name, value, "must be finite and >= 0")
        if not (self.bandwidth_gbps >= 0):
            raise InstanceError("bandwidth_gbps", self.bandwidth_gbps, "must be >= 0")
        if self.period_s is not None and not (math.isfinite(self.period_s) and self.period_s > 0):
            raise InstanceError("period_s", self.period_s, "must be finite and > 0")


@dataclass
class SimResult:
    """A replay's per-job table, per-event time series and summary (spec/INTERFACE.md)."""

    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict = field(default_factory=dict)

    def write(self, out_dir: str | Path) -> Path:
        """Write jobs.csv, timeseries.csv and summary.json into ``out_dir`` (created if missing)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.jobs.to_csv(out / "jobs.csv", index=False)
        self.timeseries.to_csv(out / "timeseries.csv", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=1) + "\n")
        return out


class _Policy:
    """Calls a registered cost method on the running jobs; returns (target cache c*_k, bandwidth B*_k per dataset)."""

    def __init__(self, name: str, sizes: np.ndarray, cfg: SimConfig, online: Any = None) -> None:
        method = methods.get("cost", name) if online is None else None
        self.name = name
        self.options = None
        if online is None and method.online is not None:
            online = method.online_policy()()
        self.online = online
        self.fn = method.function() if online is None else None
        if method is not None and method.exact:
            from cbalab.models.solve import SolveOptions

            self.options = SolveOptions()
        self.aggregate = name in AGGREGABLE or online is not None
        k = sizes.size
        self.base = check(
            Instance(
                gpus=None,
                cache_gb=float(cfg.cache_gb),
                bandwidth_gbps=float(cfg.bandwidth_gbps),
                price_gpu=float(cfg.prices[0]),
                price_cache=float(cfg.prices[1]),
                price_bandwidth=float(cfg.prices[2]),
                dataset_ids=tuple(f"d{i}" for i in range(k)),
                dataset_size_gb=sizes,
                job_ids=tuple(f"j{i}" for i in range(k)),
                job_dataset=np.arange(k, dtype=np.int64),
                job_gpus=np.zeros(k, dtype=np.int64),
                job_io_gbps=np.zeros(k),
                option_ptr=np.zeros(k + 1, dtype=np.int64),
                option_gpus=np.zeros(0, dtype=np.int64),
                option_io_gbps=np.zeros(0),
                option_utility=np.zeros(0),
            )
        )
        self.ids: tuple[str, ...] = ()

    def __call__(
        self,
        demand: np.ndarray,
        run: np.ndarray | None,
        kj: np.ndarray,
        g: np.ndarray,
        r: np.ndarray,
        now: float = 0.0,
        filled: np.ndarray | None = None,
    ) -> Allocation:
        """The policy's answer for the running jobs ``run`` (None on the aggregate path, which needs only R_k)."""
        if self.online is not None:
            inst = self.base.replace(job_io_gbps=demand)
            return self.online.decide(inst, now, np.zeros(demand.size) if filled is None else filled.copy())
        if self.aggregate:
            inst = self.base.replace(job_io_gbps=demand)
        else:
            n = run.size
            if len(self.ids) < n:
                self.ids = tuple(f"j{i}" for i in range(max(n, 2 * len(self.ids))))
            inst = self.base.replace(
                job_ids=self.ids[:n],
                job_dataset=kj[run],
                job_gpus=g[run],
                job_io_gbps=r[run],
                option_ptr=np.zeros(n + 1, dtype=np.int64),
            )
        alloc = self.fn(inst) if self.options is None else self.fn(inst, self.options)
        if alloc.has_allocation and not self.aggregate:
            alloc.bandwidth_gbps = np.bincount(kj[run], weights=alloc.bandwidth_gbps, minlength=demand.size)
        return alloc


def simulate(workload: Workload, cfg: SimConfig, online: Any = None) -> SimResult:
    """Replay ``workload`` on the cluster of ``cfg`` under its policy; see the module docstring for the model.

    ``online`` replaces the registered policy by any object with ``decide(inst, now_s, filled_gb)``."""
    cfg.check()
    wall = time.perf_counter()
    jobs = workload.jobs
    n = len(jobs)
    d = workload.datasets["size_gb"].to_numpy(dtype=float)
    K = d.size
    submit = jobs["submit_s"].to_numpy(dtype=float)
    order = np.argsort(submit, kind="stable")
    dur = jobs["duration_s"].to_numpy(dtype=float)
    g = jobs["gpus"].to_numpy(dtype=np.int64)
    r = jobs["io_gbps"].to_numpy(dtype=float)
    kj = jobs["dataset_index"].to_numpy(dtype=np.int64)
    too_big = np.flatnonzero(g > cfg.gpus)
    if too_big.size:
        j = int(too_big[0])
        raise InstanceError(f"jobs[{jobs['job_id'].iloc[j]}].gpus", int(g[j]), f"exceeds the cluster's {cfg.gpus} GPUs")
    p_g, p_c, p_b = (float(x) for x in cfg.prices)
    B = float(cfg.bandwidth_gbps)
    policy = _Policy(cfg.policy, d, cfg, online)

    # Per-job results.
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    stall = np.zeros(n)
    share = np.zeros(n)
    mark_rate = np.zeros(n)  # cost clock A_k (per unit rate) at the job's start
    mark_count = np.zeros(n)  # cost clock per job (datasets whose demand is 0) at the job's start
    mark_stall = np.zeros(n)
    # Per-dataset state.
    demand = np.zeros(K)  # R_k of the running jobs
    count = np.zeros(K, dtype=np.int64)
    work = np.zeros(K)  # work clock W_k = ∫ s_k dt
    stall_clock = np.zeros(K)
    cost_rate_clock = np.zeros(K)
    cost_count_clock = np.zeros(K)
    heads = np.full(K, np.inf)
    heaps: list[list[tuple[float, int]]] = [[] for _ in range(K)]
    target = np.zeros(K)  # c*_k
    eff = np.zeros(K)  # η*_k, the policy's effective hit ratio at its target
    cache = np.zeros(K)  # c_k filled
    need = np.zeros(K)
    bw = np.zeros(K)
    speed = np.ones(K)
    grow = np.zeros(K)
    running: dict[int, None] = {}
    queue: deque[int] = deque()
    free = cfg.gpus
    busy = 0
    totals = {"gpu": 0.0, "cache": 0.0, "bandwidth": 0.0, "gpu_hours": 0.0, "unattributed": 0.0}
    infeasible_events = 0
    rows: list[tuple] = []
    rate_gpu = rate_cache = rate_bw = 0.0
    t = float(submit[order[0]]) if n else 0.0
    nxt = 0
    tick = t + cfg.period_s if cfg.period_s else math.inf
    bar = _progress(n, cfg.progress)
    done = 0

    inv_demand = np.zeros(K)
    idle = 0
    any_stall = any_grow = odd = orphan = False
    with np.errstate(divide="ignore", invalid="ignore"):
        while done < n:
            # ---- the next event: a departure, a cache reaching its target, an arrival or a period tick
            t_dep = t_warm = math.inf
            if running:
                gap = np.where(speed > 0, (heads - work) / speed, np.inf) if any_stall else heads - work
                t_dep = t + float(gap.min())
            if any_grow:
                t_warm = t + float(np.where(grow > 0, (target - cache) / grow, np.inf).min())
            t_arr = float(submit[order[nxt]]) if nxt < n else math.inf
            t_next = min(t_dep, t_warm, t_arr, tick)
            if not math.isfinite(t_next):
                raise RuntimeError("no job can progress (the bandwidth cap B is 0 while jobs need remote IO)")
            dt = max(t_next - t, 0.0)
            # ---- integrate the slot [t, t_next) at the rates set at its start
            if dt > 0:
                h = dt / 3600.0
                totals["gpu"] += rate_gpu * h
                totals["cache"] += rate_cache * h
                totals["bandwidth"] += rate_bw * h
                totals["gpu_hours"] += busy * h
                if rate_cache + rate_bw > 0:
                    io_k = (p_c * target + p_b * bw) * h
                    cost_rate_clock += io_k * inv_demand
                    if odd:
                        cost_count_clock += np.where((demand <= 0) & (count > 0), io_k / np.maximum(count, 1), 0.0)
                    if orphan:
                        totals["unattributed"] += float(io_k[count == 0].sum())
                if any_stall:
                    work += speed * dt
                    stall_clock += (1.0 - speed) * dt
                else:
                    work += dt
                if any_grow:
                    cache = np.minimum(target, cache + grow * dt)
            idle = idle + 1 if t_next == t else 0
            t = t_next
            changed = False
            # What is left of a fill or of a job's work in less than the clock's resolution at t is done: t + gap
            # would round to t, and the slot would never end.
            tick_s = 4.0 * math.ulp(max(1.0, abs(t)))
            if any_grow:
                cache = np.where(grow * tick_s >= target - cache, target, cache)
            # ---- departures: every job whose work clock has reached its target
            if t_dep <= t:
                due = np.flatnonzero(heads - work <= np.maximum(_TOL * np.maximum(1.0, np.abs(heads)), speed * tick_s))
                for k in due:
                    heap = heaps[k]
                    limit = work[k] + max(_TOL * max(1.0, abs(work[k])), speed[k] * tick_s)
                    while heap and heap[0][0] <= limit:
                        _, j = heapq.heappop(heap)
                        end[j] = max(t, start[j] + dur[j])  # never before its unstalled run time, to the last ulp
                        stall[j] = stall_clock[k] - mark_stall[j]
                        share[j] = (
                            p_g * g[j] * (t - start[j]) / 3600.0
                            + r[j] * (cost_rate_clock[k] - mark_rate[j])
                            + (cost_count_clock[k] - mark_count[j])
                        )
                        demand[k] -= r[j]
                        count[k] -= 1
                        free += g[j]
                        del running[j]
                        done += 1
                    heads[k] = heap[0][0] if heap else math.inf
                    if count[k] == 0:
                        demand[k] = 0.0
                    changed = True
            # ---- arrivals join the queue; the queue starts in FIFO order while the head fits
            while nxt < n and submit[order[nxt]] <= t:
                queue.append(int(order[nxt]))
                nxt += 1
            while queue and g[queue[0]] <= free:
                j = queue.popleft()
                k = kj[j]
                start[j] = t
                free -= g[j]
                demand[k] += r[j]
                count[k] += 1
                mark_rate[j] = cost_rate_clock[k]
                mark_count[j] = cost_count_clock[k]
                mark_stall[j] = stall_clock[k]
                heapq.heappush(heaps[k], (work[k] + dur[j], j))
                heads[k] = heaps[k][0][0]
                running[j] = None
                changed = True
            if t >= tick:
                tick = t + cfg.period_s
                changed = True
            if idle > K + 2 and not changed:
                raise RuntimeError(f"the replay makes no progress at t = {t!r} s (a zero-length slot repeats)")
            # ---- re-allocate: the policy's targets for the running jobs
            if changed:
                busy = cfg.gpus - free
                run = None if policy.aggregate else np.fromiter(running, dtype=np.int64, count=len(running))
                alloc = policy(demand, run, kj, g, r, t, cache if cfg.warmup else target)
                if alloc.has_allocation:
                    target = np.minimum(np.asarray(alloc.cache_gb, dtype=float), d)
                    eff = np.where(demand > 0, 1.0 - np.asarray(alloc.bandwidth_gbps) / demand, 0.0)
                    eff = np.clip(eff, 0.0, target / d)
                else:
                    infeasible_events += 1
                    target = np.where(count > 0, target, 0.0)
                    eff = target / d
                cache = np.minimum(cache, target) if cfg.warmup else target.copy()
                inv_demand = np.where(demand > 0, 1.0 / demand, 0.0)
                odd = bool(((demand <= 0) & (count > 0)).any())
                orphan = bool(((count == 0) & (target > 0)).any())
            elif not any_grow:
                if rows:
                    rows.append((t, len(running), len(queue), busy, *rows[-1][4:]))
                continue
            # ---- the slot's feeding at the cache it starts with, its stalls and its cost rate
            if cfg.warmup:
                cache = np.where(np.abs(target - cache) <= _TOL * np.maximum(1.0, target), target, cache)
                need = demand * (1.0 - eff * np.where(target > 0, cache / target, 0.0))
            else:
                need = demand * (1.0 - eff)
            total_need = float(need.sum())
            share_b = 1.0 if total_need <= B * (1.0 + _TOL) else B / total_need
            bw = need * share_b
            any_stall = share_b < 1.0
            speed = np.where(need > 0, share_b, 1.0) if any_stall else np.ones(K)
            if cfg.warmup:
                grow = np.where(cache < target * (1.0 - _TOL), bw, 0.0)
                any_grow = bool((grow > 0).any())
            rate_gpu = p_g * busy
            rate_cache = p_c * float(target.sum())
            rate_bw = p_b * float(bw.sum())
            rows.append(
                (
                    t,
                    len(running),
                    len(queue),
                    busy,
                    float(target.sum()),
                    float(cache.sum()),
                    float(bw.sum()),
                    rate_gpu + rate_cache + rate_bw,
                    rate_gpu,
                    rate_cache,
                    rate_bw,
                )
            )
            if bar is not None and done - bar.n >= 500:
                bar.update(done - bar.n)
    if bar is not None:
        bar.update(done - bar.n)
        bar.close()

    series = pd.DataFrame(
        rows,
        columns=[
            "time_s",
            "running_jobs",
            "queued_jobs",
            "gpus_busy",
            "cache_gb",
            "cache_filled_gb",
            "bandwidth_gbps",
            "cost_per_hour",
            "gpu_cost_per_hour",
            "cache_cost_per_hour",
            "bandwidth_cost_per_hour",
        ],
    )
    jct = end - submit
    table = pd.DataFrame(
        {
            "job_id": jobs["job_id"].to_numpy(),
            "model": jobs["model"].to_numpy(),
            "dataset": jobs["dataset"].to_numpy(),
            "gpus": g,
            "io_gbps": r,
            "duration_s": dur,
            "submit_s": submit,
            "start_s": start,
            "end_s": end,
            "jct_s": jct,
            "queue_s": start - submit,
            "stall_s": stall,
            "cost": share,
        }
    )
    io = totals["cache"] + totals["bandwidth"]
    summary = {
        "schema": SCHEMA,
        "policy": cfg.policy,
        "seed": cfg.seed,
        "jobs": n,
        "makespan_s": float(np.max(end) - np.min(submit)) if n else 0.0,
        "gpu_hours": totals["gpu_hours"],
        "stall_hours": float(stall.sum() / 3600.0),
        "cost": {
            "gpu": totals["gpu"],
            "cache": totals["cache"],
            "bandwidth": totals["bandwidth"],
            "io": io,
            "total": totals["gpu"] + io,
        },
        "mean_jct_s": float(np.mean(jct)) if n else 0.0,
        "p99_jct_s": float(np.percentile(jct, 99)) if n else 0.0,
        "mean_queue_s": float(np.mean(start - submit)) if n else 0.0,
        "events": len(rows),
        "infeasible_events": infeasible_events,
        "wall_seconds": time.perf_counter() - wall,
        "config": {**asdict(cfg), "bandwidth_gbps": None if math.isinf(B) else B},
        "workload": {**workload.settings, "source": jobs.attrs.get("source", "")},
    }
    return SimResult(table, series, summary)


def _progress(total: int, enabled: bool) -> Any:
    """A tqdm bar over the jobs finished, or None when progress is off."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="job", desc="replay", mininterval=0.5)


def run_command(args: Any) -> dict:
    """What ``cbalab simulate`` does: build the workload, replay it, write ``--out``; return the summary."""
    from cbalab.experiments.workload import assign, generate_trace, load_trace

    trace = load_trace(args.trace) if args.trace else generate_trace(args.generate, args.seed)
    workload = assign(trace, args.seed, skew=args.skew, n_datasets=args.datasets, gpu_type=args.gpu_type)
    prices = tuple(
        DEFAULT_PRICES[i] if value is None else value
        for i, value in enumerate((args.price_gpu, args.price_cache, args.price_bandwidth))
    )
    cfg = SimConfig(
        policy=args.policy,
        gpus=args.gpus,
        cache_gb=args.cache_gb,
        bandwidth_gbps=math.inf if args.bandwidth_gbps is None else args.bandwidth_gbps,
        prices=prices,
        warmup=not args.no_warmup,
        period_s=args.period,
        seed=args.seed,
        progress=not args.quiet and len(trace) >= 10_000,
    )
    result = simulate(workload, cfg)
    if args.out:
        result.write(args.out)
    return result.summary
