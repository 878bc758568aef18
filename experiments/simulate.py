"""Event-driven trace replay: the dynamic problem of docs/model.md §6 under an online cost policy.

Jobs arrive (a :class:`experiments.workload.Workload`), wait in a strict FIFO queue until the cluster's G GPUs can
hold them, run, and leave when their work is done.  A job's work is its ``duration_s``, the run time when never
stalled; it progresses at its stall factor x_j / r_j (docs/model.md §3), so a stalled job runs longer and pays for
its GPUs longer.

Whenever the running jobs change (a job starts, on its arrival if its GPUs are free, else when it leaves the queue;
a job departs) and at every ``period_s`` tick when set, the policy, any registered method of the cost problem P1
(cbalab.algorithms.registry), is re-run on the running jobs and sets each dataset's *target* cache c*_k and the
bandwidth it would buy.  An arrival that only joins the queue and a cache reaching its target end a slot but do not
re-run the policy: neither changes the demand (:meth:`Replay.run`).  Policies whose answer depends on the jobs only
through the per-dataset demand R_k (CBA, IO-only, SiloD: docs/model.md §4) see only R_k, so an event costs
O(K log K) whatever the number of running jobs; the others (cache-all, CoorDL, Quiver, anything else) see the
running jobs in start order.  A policy without a memory is asked by its registry rule on arrays (``on_demand``,
``on_jobs``), with no instance.

Cache warm-up (docs/model.md §6): a dataset's cache holds c_k ≤ c*_k and grows only by the bytes read remotely for
it; every slot between two events uses the cache at its start (hit ratio c_k / d_k), buys the remote IO that keeps
its jobs unstalled at that hit ratio, and the cache grows by that IO until it reaches its target (which ends the
slot).  A lowered target evicts at once.  With ``warmup=False`` caches are instant (c_k = c*_k).  The remote IO is
capped at B: when the jobs need more, the policy's registry rule divides B (``on_cap``; default: every reading job
the same share B / need, stalling by it). A policy's private-cache inefficiency (CoorDL: jobs hit only their own
slices) is kept by warming its *effective* hit ratio 1 − B*_k / R_k in proportion to the cache filled.

Costs are integrated exactly over the slots: GPUs (p_g per busy GPU), cache (p_c per allocated GB, the target
capacity, whether filled yet or not) and bandwidth (p_b per GB/s bought).  A dataset's cache and bandwidth cost is
shared among its running jobs in proportion to their rates r_j.

The outputs are the files of docs/interface.md, "Traces and simulation output": jobs.csv, timeseries.csv and
summary.json (schema ``cbalab/simulation@1``).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from cbalab.algorithms import registry as methods
from cbalab.algorithms.online import OnlinePolicy, State
from cbalab.experiments.replay import Report, SimResult, resolution
from cbalab.experiments.replay import run as run_replay
from cbalab.experiments.workload import DEFAULT_PRICES, Workload
from cbalab.models.instance import InstanceError, aggregate, setting
from cbalab.models.types import SolveOptions

if TYPE_CHECKING:
    from cbalab.models.milp.dynamic import Schedule
    from cbalab.models.milp.p3_lagrange import TraceLimits

#: Relative tolerance for "this job's work is done" and "this cache is warm".
_TOL = 1e-9
#: The sum, the least element and "all" of a K-vector: the reductions ``ndarray.sum``, ``min`` and ``all`` call, in
#: the same order (the same bits), without their Python wrappers, which cost more than the sum itself at every event.
_total = np.add.reduce
_least = np.minimum.reduce
_every = np.logical_and.reduce


@dataclass(frozen=True)
class SimConfig:
    """The cluster and the policy of one replay.

    ``gpus`` is the cluster's G (every job must fit), ``cache_gb`` its C, ``bandwidth_gbps`` its remote-IO cap B
    (inf: none), ``prices`` (p_g, p_c, p_b) in $/h per unit, ``warmup`` False for instant caches, ``period_s`` an
    extra re-allocation period (None: only at arrivals and departures).

    The default G = 768 is sized for the Philly trace (82,247 jobs, on average 374 GPUs busy): with strict FIFO its
    jobs wait 22 min on average, about 9% of the mean JCT (512 GPUs: 5.5 days; 1,024 GPUs: 11 s).
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
            setting(name, value)
        setting("bandwidth_gbps", self.bandwidth_gbps, unlimited=True)
        if self.period_s is not None and not (math.isfinite(self.period_s) and self.period_s > 0):
            raise InstanceError("period_s", self.period_s, "must be finite and > 0")


class _Policy:
    """Asks the online policy for the running jobs' answer; returns (target cache c*_k, bandwidth B*_k per dataset)."""

    def __init__(self, name: str, sizes: np.ndarray, cfg: SimConfig, online: OnlinePolicy | None = None) -> None:
        method = methods.get("cost", name)
        self.name = name
        # Every policy is online (algorithms/online.py): one object per replay, told the time and the filled cache
        # at every event; given explicitly (tests, offline scripts) or by the registry entry (``online``, or the
        # static method re-solved).  Every method takes (instance, options); the fast ones ignore the options.
        self.online = online if online is not None else method.online_policy(SolveOptions())
        self.aggregate = method.aggregable or online is not None
        static = online is None and method.online is None  # re-solved at every event: asked by its rule on arrays
        self.rule, self.job_rule = (method.demand_rule(), method.job_rule()) if static else (None, None)
        self.cap = method.cap_rule()
        self.sizes = sizes
        self.limits = (float(cfg.cache_gb), float(cfg.bandwidth_gbps), float(cfg.prices[1]), float(cfg.prices[2]))
        self.base = aggregate(sizes, np.zeros(sizes.size), cfg.cache_gb, cfg.bandwidth_gbps, cfg.prices)
        self.ids: tuple[str, ...] = ()

    def __call__(
        self,
        demand: np.ndarray,
        run: np.ndarray | None,
        kj: np.ndarray,
        g: np.ndarray,
        r: np.ndarray,
        now_s: float,
        filled_gb: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The policy's cache and bandwidth per dataset at ``now_s`` for the running jobs ``run`` (None on the
        aggregate path, which needs only R_k) given the filled cache per dataset; None when it finds no answer.

        A policy with a rule on the demands or the jobs (algorithms/registry.py, ``on_demand``, ``on_jobs``) is
        asked by it, the others through the online protocol on an instance."""
        if self.rule is not None:
            return self.rule(self.sizes, demand, *self.limits)
        if self.job_rule is not None and run is not None:
            return self.job_rule(self.sizes, kj[run], r[run], *self.limits)
        if self.aggregate or run is None:
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
        alloc = self.online.decide(State(inst, filled_gb.copy()), now_s)
        if not alloc.has_allocation:
            return None
        bw = np.asarray(alloc.bandwidth_gbps)
        if not self.aggregate:
            bw = np.bincount(kj[run], weights=bw, minlength=demand.size)
        return np.asarray(alloc.cache_gb, dtype=float), bw


class Replay:
    """One replay of a workload on a cluster: the cost problem's strategy of the one replay engine,
    experiments/replay.py, which owns the event loop, the clock, stuck detection, progress, the writer and the
    summary (docs/interface.md, "Replay outputs", ``problem: "cost"``).

    The engine repeats, until every job has left: :meth:`next_event` (the
    earliest departure, cache reaching its target or arrival), :meth:`advance`
    (costs, work and cache fill over the slot up to it), :meth:`depart` (jobs
    whose work is done leave), :meth:`admit` (arrivals join the FIFO queue,
    which starts while its head fits), :meth:`reallocate` (the policy's targets
    for the running jobs) and :meth:`feed` (the new slot's remote IO, stalls
    and cost rates).  See the module docstring for the model (docs/model.md §6).
    """

    problem = "cost"
    cache_policy: str | None = None  # every cost policy decides the caches itself
    label = "replay"

    def __init__(self, workload: Workload, cfg: SimConfig, online: OnlinePolicy | None = None) -> None:
        cfg.check()
        self.policy_name = cfg.policy
        self.seed = cfg.seed
        self.workload = workload
        self.cfg = cfg
        jobs = workload.jobs
        self.n = n = len(jobs)
        self.d = workload.datasets["size_gb"].to_numpy(dtype=float)
        self.K = K = self.d.size
        self.submit = jobs["submit_s"].to_numpy(dtype=float)
        order = np.argsort(self.submit, kind="stable")
        self.arrivals, self.arrival_order = self.submit[order].tolist(), order.tolist()  # read one by one
        self.dur = jobs["duration_s"].to_numpy(dtype=float)
        self.g = g = jobs["gpus"].to_numpy(dtype=np.int64)
        self.r = jobs["io_gbps"].to_numpy(dtype=float)
        self.kj = jobs["dataset_index"].to_numpy(dtype=np.int64)
        # The same per job as Python numbers, for the scalar reads of admit and depart (numpy's scalars cost more).
        self.jobs_k, self.jobs_g, self.jobs_r, self.jobs_dur = (x.tolist() for x in (self.kj, g, self.r, self.dur))
        too_big = np.flatnonzero(g > cfg.gpus)
        if too_big.size:
            j = int(too_big[0])
            raise InstanceError(
                f"jobs[{jobs['job_id'].iloc[j]}].gpus", int(g[j]), f"exceeds the cluster's {cfg.gpus} GPUs"
            )
        self.p_g, self.p_c, self.p_b = (float(x) for x in cfg.prices)
        self.B = float(cfg.bandwidth_gbps)
        self.policy = _Policy(cfg.policy, self.d, cfg, online)

        # Per-job results.
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.stall = np.zeros(n)
        self.share = np.zeros(n)
        self.mark_rate = np.zeros(n)  # cost clock A_k (per unit rate) at the job's start
        self.mark_count = np.zeros(n)  # cost clock per job (datasets whose demand is 0) at the job's start
        self.mark_stall = np.zeros(n)
        # Per-dataset state.
        self.demand = np.zeros(K)  # R_k of the running jobs
        self.count = np.zeros(K, dtype=np.int64)
        self.work = np.zeros(K)  # work clock W_k = ∫ s_k dt
        self.stall_clock = np.zeros(K)
        self.cost_rate_clock = np.zeros(K)
        self.cost_count_clock = np.zeros(K)
        self.heads = np.full(K, np.inf)
        self.due_tol = np.full(K, np.inf)  # work left that counts as done, _TOL max(1, |head|); speed 1: tick × 1
        self.heaps: list[list[tuple[float, int]]] = [[] for _ in range(K)]
        self.target = np.zeros(K)  # c*_k
        self.eff = np.zeros(K)  # η*_k, the policy's effective hit ratio at its target
        self.cache = np.zeros(K)  # c_k filled
        self.bw = np.zeros(K)
        self.unit = np.ones(K)
        self.speed = self.unit
        self.io_rate = np.zeros(K)  # p_c c*_k + p_b b_k of the slot, $/h per dataset
        self.grow = np.zeros(K)
        self.inv_demand = np.zeros(K)
        # Cluster state.
        self.running: dict[int, None] = {}
        self.queue: deque[int] = deque()
        self.free = cfg.gpus
        self.busy = 0
        self.totals = {"gpu": 0.0, "cache": 0.0, "bandwidth": 0.0, "gpu_hours": 0.0, "unattributed": 0.0}
        self.infeasible_events = 0
        self.rows: list[tuple] = []
        self.rate_gpu = self.rate_cache = self.rate_bw = 0.0
        self.t = self.arrivals[0] if n else 0.0
        self.nxt = 0
        self.t_dep = math.inf
        self.done = 0
        self.tick_s = 0.0
        self.any_stall = self.any_grow = self.odd = self.orphan = False

    def next_event(self) -> float:
        """The time of the next event, a departure, a cache reaching its target or an arrival, whichever comes
        first (inf: none can come); the next departure's time is kept for :meth:`depart`."""
        t = self.t
        t_dep = t_warm = math.inf
        if self.running:
            if self.any_stall:
                gap = np.where(self.speed > 0, (self.heads - self.work) / self.speed, np.inf)
            else:
                gap = self.heads - self.work
            t_dep = t + float(_least(gap))
        if self.any_grow:
            t_warm = t + float(_least(np.where(self.grow > 0, (self.target - self.cache) / self.grow, np.inf)))
        t_arr = self.arrivals[self.nxt] if self.nxt < self.n else math.inf
        self.t_dep = t_dep
        return min(t_dep, t_warm, t_arr)

    def stuck(self) -> None:
        """No job can ever progress: on the cost problem only B = 0 does that (a cache fills only by remote
        reads, docs/model.md (6.1)), the user's setting, not a bug: exit 2 naming it."""
        if self.B == 0:
            raise InstanceError("bandwidth_gbps", 0.0, "no job can progress: jobs need remote IO (warm-up too)")
        raise RuntimeError("no job can progress (the bandwidth cap B is 0 while jobs need remote IO)")

    def idle_limit(self) -> int:
        """Zero-length slots allowed in a row: one per dataset's cache reaching its target, and two more."""
        return self.K + 2

    def starved(self) -> bool:
        """Never: a cost replay's running jobs are always fed (stalled only by B), so repeated zero-length slots
        are a bug."""
        return False

    def advance(self, t_next: float) -> None:
        """Integrate the slot [t, t_next) at the rates set at its start, then move the clock to t_next.

        Costs accrue exactly (rates are constant within a slot); each dataset's
        work clock advances at its speed and its cache fills by the IO bought.
        """
        dt = max(t_next - self.t, 0.0)
        if dt > 0:
            h = dt / 3600.0
            totals = self.totals
            totals["gpu"] += self.rate_gpu * h
            totals["cache"] += self.rate_cache * h
            totals["bandwidth"] += self.rate_bw * h
            totals["gpu_hours"] += self.busy * h
            if self.rate_cache + self.rate_bw > 0:
                io_k = self.io_rate * h
                self.cost_rate_clock += io_k * self.inv_demand
                if self.odd:
                    demand, count = self.demand, self.count
                    self.cost_count_clock += np.where((demand <= 0) & (count > 0), io_k / np.maximum(count, 1), 0.0)
                if self.orphan:
                    totals["unattributed"] += float(_total(io_k[self.count == 0]))
            if self.any_stall:
                self.work += self.speed * dt
                self.stall_clock += (1.0 - self.speed) * dt
            else:
                self.work += dt
            if self.any_grow:
                self.cache = np.minimum(self.target, self.cache + self.grow * dt)
        self.t = t_next
        # What is left of a fill or of a job's work in less than the clock's resolution at t is done: t + gap
        # would round to t, and the slot would never end.
        self.tick_s = resolution(t_next)
        if self.any_grow:
            self.cache = np.where(self.grow * self.tick_s >= self.target - self.cache, self.target, self.cache)

    def depart(self) -> bool:
        """Every job whose work clock has reached its target leaves; True if any did."""
        t = self.t
        if self.t_dep > t:
            return False
        heads, work, speed, tick_s = self.heads, self.work, self.speed, self.tick_s
        due = (heads - work <= np.maximum(self.due_tol, speed * tick_s if self.any_stall else tick_s)).nonzero()[0]
        for k in due:
            heap = self.heaps[k]
            limit = work[k] + max(_TOL * max(1.0, abs(work[k])), speed[k] * tick_s)
            while heap and heap[0][0] <= limit:
                _, j = heapq.heappop(heap)
                g, r, start = self.jobs_g[j], self.jobs_r[j], self.start[j]
                self.end[j] = max(t, start + self.jobs_dur[j])  # never before its unstalled run time
                self.stall[j] = self.stall_clock[k] - self.mark_stall[j]
                self.share[j] = (
                    self.p_g * g * (t - start) / 3600.0
                    + r * (self.cost_rate_clock[k] - self.mark_rate[j])
                    + (self.cost_count_clock[k] - self.mark_count[j])
                )
                self.demand[k] -= r
                self.count[k] -= 1
                self.free += g
                del self.running[j]
                self.done += 1
            heads[k] = heap[0][0] if heap else math.inf
            self.due_tol[k] = _TOL * max(1.0, abs(heads[k]))
            if self.count[k] == 0:
                self.demand[k] = 0.0
        return due.size > 0

    def admit(self) -> bool:
        """Arrivals join the queue; the queue starts in FIFO order while its head fits.  True if a job started."""
        t, arrivals, g = self.t, self.arrivals, self.jobs_g
        while self.nxt < self.n and arrivals[self.nxt] <= t:
            self.queue.append(self.arrival_order[self.nxt])
            self.nxt += 1
        started = False
        while self.queue and g[self.queue[0]] <= self.free:
            j = self.queue.popleft()
            k = self.jobs_k[j]
            self.start[j] = t
            self.free -= g[j]
            self.demand[k] += self.jobs_r[j]
            self.count[k] += 1
            self.mark_rate[j] = self.cost_rate_clock[k]
            self.mark_count[j] = self.cost_count_clock[k]
            self.mark_stall[j] = self.stall_clock[k]
            heapq.heappush(self.heaps[k], (self.work[k] + self.jobs_dur[j], j))
            self.heads[k] = self.heaps[k][0][0]
            self.due_tol[k] = _TOL * max(1.0, abs(self.heads[k]))
            self.running[j] = None
            started = True
        return started

    def reallocate(self) -> None:
        """The policy's targets c*_k and effective hit ratios for the running jobs (kept on an infeasible answer)."""
        d, demand, count = self.d, self.demand, self.count
        self.busy = self.cfg.gpus - self.free
        policy = self.policy
        reading = demand > 0
        run = None if policy.aggregate else np.fromiter(self.running, dtype=np.int64, count=len(self.running))
        answer = policy(demand, run, self.kj, self.g, self.r, self.t, self.cache if self.cfg.warmup else self.target)
        if answer is not None:
            cache, bw = answer
            self.target = np.minimum(cache, d)
            eff = np.where(reading, 1.0 - bw / demand, 0.0)
            # np.clip's bounds, without its Python wrapper: max with 0, then min with the target's share.
            self.eff = np.minimum(np.maximum(eff, 0.0), self.target / d)
        else:
            self.infeasible_events += 1
            self.target = np.where(count > 0, self.target, 0.0)
            self.eff = self.target / d
        self.cache = np.minimum(self.cache, self.target) if self.cfg.warmup else self.target.copy()
        self.inv_demand = np.where(reading, 1.0 / demand, 0.0)
        # A dataset read by no job has demand 0 (depart sets it), so "some running job's dataset has demand 0" is
        # "fewer datasets have demand than have jobs", and an orphan is a target on a dataset without jobs.
        used = int(np.count_nonzero(count))
        self.odd = bool(np.count_nonzero(reading) < used)
        self.orphan = used < self.K and bool(np.count_nonzero(self.target[count == 0]))

    def feed(self, decision: bool) -> None:
        """The new slot's remote IO at the cache it starts with, its stalls (capped at B) and its cost rates.

        Without a re-decision and with no cache filling nothing changes: the slot repeats the last row's rates.
        """
        if not decision and not self.any_grow:
            if self.rows:
                self.rows.append((self.t, len(self.running), len(self.queue), self.busy, *self.rows[-1][4:]))
            return
        target, demand = self.target, self.demand
        warming = self.cfg.warmup and not _every(self.cache == target)
        if warming:
            cache = np.where(np.abs(target - self.cache) <= _TOL * np.maximum(1.0, target), target, self.cache)
            self.cache = cache
            need = demand * (1.0 - self.eff * np.where(target > 0, cache / target, 0.0))
        else:  # every cache at its target (or instant): share 1 (0 where η* is 0) and η* × 1 = η*, the same bits
            self.cache = target
            need = demand * (1.0 - self.eff)
        total_need = float(_total(need))
        share_b = 1.0 if total_need <= self.B * (1.0 + _TOL) else self.B / total_need
        self.any_stall = share_b < 1.0
        # Unstalled, need × 1 is need, bit for bit; stalled, the policy's division of B (registry ``on_cap``).
        bw, self.speed = self.policy.cap(need, demand, share_b, self.B) if self.any_stall else (need, self.unit)
        self.bw = bw
        if warming:
            self.grow = np.where(self.cache < target * (1.0 - _TOL), bw, 0.0)
        self.any_grow = warming and bool(np.count_nonzero(self.grow > 0))
        cached, bought = float(_total(target)), float(_total(bw))
        filled = float(_total(self.cache)) if warming else cached
        self.rate_gpu = self.p_g * self.busy
        self.rate_cache = self.p_c * cached
        self.rate_bw = self.p_b * bought
        self.io_rate = self.p_c * target + self.p_b * bw
        self.rows.append(
            (
                self.t,
                len(self.running),
                len(self.queue),
                self.busy,
                cached,
                filled,
                bought,
                self.rate_gpu + self.rate_cache + self.rate_bw,
                self.rate_gpu,
                self.rate_cache,
                self.rate_bw,
            )
        )

    def report(self) -> Report:
        """The per-job table, the per-event series and the cost problem's summary entries (docs/interface.md)."""
        cfg, jobs = self.cfg, self.workload.jobs
        start, end, submit, stall, totals = self.start, self.end, self.submit, self.stall, self.totals
        rows, B = self.rows, self.B

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
                "gpus": self.g,
                "io_gbps": self.r,
                "duration_s": self.dur,
                "submit_s": submit,
                "start_s": start,
                "end_s": end,
                "jct_s": jct,
                "queue_s": start - submit,
                "stall_s": stall,
                "cost": self.share,
            }
        )
        io = totals["cache"] + totals["bandwidth"]
        entries = {
            "stall_hours": float(stall.sum() / 3600.0),
            "cost": {
                "gpu": totals["gpu"],
                "cache": totals["cache"],
                "bandwidth": totals["bandwidth"],
                "io": io,
                "total": totals["gpu"] + io,
            },
            "infeasible_events": self.infeasible_events,
        }
        return Report(
            jobs=table,
            timeseries=series,
            finish_s=end,
            queue_s=start - submit,
            gpu_hours=totals["gpu_hours"],
            entries=entries,
            config={**asdict(cfg), "bandwidth_gbps": None if math.isinf(B) else B},
            workload={**self.workload.settings, "source": jobs.attrs.get("source", "")},
        )


def simulate(workload: Workload, cfg: SimConfig, online: OnlinePolicy | None = None) -> SimResult:
    """Replay ``workload`` on the cluster of ``cfg`` under its policy; see the module docstring for the model.

    ``online``, when given, replaces the policy by any online policy of algorithms/online.py (an offline
    schedule replayed through the simulator's accounting, say)."""
    return run_replay(Replay(workload, cfg, online), period_s=cfg.period_s, progress=cfg.progress)


def window(workload: Workload, start_s: float, end_s: float) -> Workload:
    """The jobs of ``workload`` submitted in [start_s, end_s), with their models, datasets and rates unchanged."""
    if not (math.isfinite(start_s) and math.isfinite(end_s) and start_s < end_s):
        raise InstanceError("window", (start_s, end_s), "needs finite START < END (seconds)")
    jobs = workload.jobs
    keep = (jobs["submit_s"] >= start_s) & (jobs["submit_s"] < end_s)
    if not keep.any():
        raise InstanceError("window", (start_s, end_s), "no job is submitted in it")
    part = jobs[keep].reset_index(drop=True)
    part.attrs.update(jobs.attrs)
    settings = {**workload.settings, "window_s": [start_s, end_s]}
    return Workload(part, workload.datasets, settings)


def replay_schedule(workload: Workload, jobs: pd.DataFrame, *, period_s: float | None = None) -> Schedule:
    """P3's schedule of a replay (models/milp/dynamic.py, ``schedule_from_replay``): the start and end times and
    the read rates of ``jobs`` (a replay's jobs.csv), the datasets and their sizes from ``workload``; with
    ``period_s`` the re-allocation ticks count from the workload's first submission, as the replay's do."""
    from cbalab.models.milp.dynamic import schedule_from_replay

    return schedule_from_replay(
        jobs["start_s"].to_numpy(),
        jobs["end_s"].to_numpy(),
        jobs["io_gbps"].to_numpy(),
        workload.jobs["dataset_index"].to_numpy(),
        workload.datasets["size_gb"].to_numpy(dtype=float),
        period_s=period_s,
        origin_s=float(workload.jobs["submit_s"].min()) if len(jobs) else None,
    )


def offline_optimum(
    workload: Workload,
    cfg: SimConfig,
    result: SimResult,
    time_limit: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
    trace_limits: TraceLimits | None = None,
) -> dict:
    """P3 over the replay's schedule (models/milp/dynamic.py): the ``offline_optimum`` entry of summary.json.

    Its ``bound`` is a lower bound on the IO cost of every online policy over this replay when no job stalls
    (proofs/dynamic_lower_bound.md, Theorem 1); with instant caches (``warmup=False``) its warm-up rows are
    dropped and it equals re-solved CBA's cost (Theorem 2 there).  ``status`` is ``optimal`` only when that
    bound meets the re-computed cost of a checked schedule (models/milp/dynamic.py, ``certified``).
    ``time_limit`` covers the whole call, from building the schedule to the last HiGHS run, on ``clock``
    (injectable for tests); when it runs out the entry is ``time_limit`` with the best checked cost or none.
    Without a time limit, a schedule too large for one LP (models/milp/p3_lagrange.py, ``large_schedule``) is
    solved by Lagrangian decomposition with fixed iteration limits (Theorem 4 there): deterministic, a certified
    bound and its ``gap`` to the best schedule found, and ``gap_to_replay``, the gap to this replay's own cost;
    ``trace_limits`` replaces its TRACE_* limits (None: those).
    """
    from cbalab.models.milp.dynamic import Cluster, Deadline, solve_dynamic
    from cbalab.models.milp.p3_lagrange import TRACE_LIMITS, large_schedule, solve_trace

    deadline = Deadline(time_limit, clock)
    schedule = replay_schedule(workload, result.jobs, period_s=cfg.period_s)
    cluster = Cluster(
        cache_gb=cfg.cache_gb,
        bandwidth_gbps=cfg.bandwidth_gbps,
        price_cache=float(cfg.prices[1]),
        price_bandwidth=float(cfg.prices[2]),
    )
    if time_limit is None and large_schedule(schedule, cluster, warmup=cfg.warmup):
        wall = time.perf_counter()
        big = solve_trace(schedule, cluster, trace_limits or TRACE_LIMITS)
        doc = big.summary() | {"seconds": time.perf_counter() - wall, "message": big.message}
        io = float(result.summary["cost"]["io"])
        if result.summary.get("stall_hours", 0.0) == 0 and io > 0:
            # The replay's own schedule is feasible for P3 (proofs/dynamic_lower_bound.md, Theorem 1).
            doc["gap_to_replay"] = (io - big.bound) / io
    else:
        out = solve_dynamic(schedule, cluster, warmup=cfg.warmup, deadline=deadline)
        doc = out.summary() | {"message": out.message}
    if result.summary.get("stall_hours", 0.0) > 0:
        doc["message"] += "; jobs stalled in this replay, so the bound covers only policies that do not stall"
    return doc
