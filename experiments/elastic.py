"""The elastic replay: welfare over time with jobs arriving and leaving (docs/model.md §6b).

Jobs of an :class:`experiments.workload.elastic.ElasticWorkload` arrive at
their submit times, and at every scheduling event — an arrival, a departure,
and every ``period_s`` when set — the policy re-decides every active job's
option (0 = wait), the cache of every dataset and the bandwidth, under the
cluster's G, C, B and the budget (a spend rate, $/h, that holds at every
instant).  The policy (``--policy``) is any registered welfare method
(algorithms/registry.py), asked through the online protocol of
algorithms/online.py with the P2 instance of the active jobs now:

* ``autocba``: incremental AutoCBA (its registered online form,
  algorithms.autocba.online), with a certified gap per re-decision;
* every registered GPU scheduler (kind ``gpu-scheduler``: ``gavel-tput``,
  ``gavel-fair``, ``optimus``, the ``utility-greedy`` ablation and their
  ``-tuned`` envelopes), the IO-unaware schedulers of docs/model.md §7
  (algorithms.baselines.io_unaware), re-run from scratch on the active jobs
  at every event through their registered function, each fed by a cache
  policy (``cache_policy``, default ``silod``, in their
  :class:`~cbalab.models.types.SolveOptions`) and the money left for
  bandwidth.  Optimus reads each job's remaining work (``Instance.job_work``:
  remaining samples over the throughput at its smallest option);
  ``gavel-fair`` shares time;
* any other welfare method (``lp``, ``milp``, ...), re-solved at every event.

**Between events** everything is constant, and integrated exactly:

* a job at g GPUs that is not restarting trains at throughput(g) × its stall
  factor (samples/s) and earns U_j(g) × its stall factor per hour (§5);
  waiting (g = 0) or restarting, it earns nothing and makes no progress;
* a time-shared job (Gavel's max-min fairness) runs a share x_j of the time:
  the replay realises time sharing as fractions, a fluid (docs/model.md §5,
  "Time sharing"), not as Gavel's rounds: the job holds x_j g GPUs, reads
  x_j of its rate and trains and earns at x_j of its rate; a new share at the
  same GPU count is no restart;
* the spend rate is p_g Σ x g (every allocated GPU, restarting or not) +
  p_c Σ c*_k (the cache capacity allocated, whether filled yet or not) +
  p_b Σ b_j;
* a job leaves when its work W_j is done.

**Cache warm-up** (§6): dataset k's cache holds c_k ≤ c*_k and grows only by
the bytes read remotely for k; each slot uses the cache at its start, and a
cache reaching its target ends the slot.  A lowered target evicts at once.
A policy's effective hit ratio η_k at its target (CoorDL's private slices hit
less than c*_k/d_k) warms in proportion to the fill, as in
experiments/simulate.py.  Jobs need r_j(g)(1 − η_k c_k/c*_k) of remote IO;
the money left after GPUs and cache, and B, buy it; when short, every reading
job gets the same fraction and stalls by it (§5).  So **the spend never
exceeds the budget**, whatever the policy and the warm-up state.

A policy that holds GPUs it cannot feed at all (no money or B left for
their remote IO, which also keeps their caches from ever warming), or leaves
every active job waiting, while no arrival or departure is left to change
anything, or feeds them so little
(an IO share below 10⁻⁶, or a replay still running a million horizons
on) that their progress falls below the clock's resolution, is *stuck*: the replay ends
there and reports ``unfinished_jobs`` and ``stuck_at_s`` (JCT statistics are
over the finished jobs; an unfinished deadline job missed its deadline).  A
scheduler whose running jobs cannot all be fed could do this; the naive form
of every IO-unaware scheduler cuts its GPUs until its bill fits (io_unaware),
so it feeds every job it runs, up to cache warm-up.

**Restarts**: a job that has run before and whose GPU count changes (a
rescale, or resuming after waiting) pays ``restart_delay_s`` holding its new
GPUs without training; the first start is free.  AutoCBA decides on
restart-aware utilities: an option that would restart a job is valued at
U(g) · T_g / (T_g + delay), its rate averaged over the job's remaining run
T_g = remaining work / throughput(g) plus the pause (its certificate is for
that per-event problem; the replay scores the true utilities).  The GPU
schedulers re-decide restart-unaware, as their rules state.

**Welfare** is reported under ``welfare``: ``horizon``, the integral over
the fixed horizon (experiments.workload.elastic.reference_horizon: first
submission to the end of the reference schedule, the same for every policy,
``horizon_s`` long), ``rate_mean``, its time average, and ``replay``, the
integral over the whole replay (which differs when jobs run past the horizon),
beside JCTs and deadline satisfaction (§6b explains why all are needed).

**State between events**: the replay keeps every job's padded GPU and rate tables (and its throughput at
its smallest option) from the start, and the active set, remaining work, caches and options as arrays
updated at arrivals, departures and decisions; per event it computes only what time changes (the utilities
now, deadline tests and restart-aware values) and the P2 instance handed to the policy.  Online AutoCBA keeps
its multipliers, its re-optimisation state and its last CBA feedings (algorithms/autocba/online.py).

Every re-decision's static allocation (options, target cache, least
bandwidth at that cache, scaled to the money left) is scored by the referee
(models.evaluate, ``referee=True``), which must find it within G, C, B and
the budget; its welfare rate against the policy's certificate gives
``certified_gap``, and the rate actually realised at that instant (stalled by
warm-up, paused by restarts) gives ``realised_gap``.

:class:`ElasticReplay` is the welfare problem's strategy of the one replay
engine (experiments/replay.py), which owns the event loop, the clock, stuck
detection, progress, the writer and the summary.  What a replay is asked,
:class:`~cbalab.experiments.elastic_config.ElasticConfig`, is checked in
experiments/elastic_config.py; its outputs (docs/interface.md, "Replay
outputs": jobs.csv, timeseries.csv and summary.json, ``problem: "welfare"``)
are drawn up by experiments/elastic_report.py.
"""

from __future__ import annotations

import math

import numpy as np

from cbalab.algorithms import registry
from cbalab.algorithms.autocba.limits import fits_alone, standalone_cost
from cbalab.algorithms.online import State
from cbalab.experiments import elastic_report
from cbalab.experiments.elastic_config import ElasticConfig
from cbalab.experiments.replay import Report, SimResult, resolution
from cbalab.experiments.replay import run as run_replay
from cbalab.experiments.workload.elastic import ELASTIC_SHAPES, ElasticWorkload, reference_horizon, reference_spend
from cbalab.models.evaluate import RTOL, Allocation, evaluate
from cbalab.models.instance import Instance, InstanceError
from cbalab.models.kernels import exact_dot
from cbalab.models.result import IoFeeding, OnlineFacts
from cbalab.models.types import SolveOptions

__all__ = ["ElasticConfig", "ElasticReplay", "replay"]

#: Relative tolerance for "this job's work is done" and "this cache is warm".
_TOL = 1e-9
_DEADLINE = ELASTIC_SHAPES.index("deadline")


class ElasticReplay:
    """One replay: the welfare problem's strategy of experiments/replay.py, whose loop calls next_event → advance
    → depart → admit → reallocate → feed (which records the slot)."""

    problem = "welfare"
    label = "elastic replay"

    def __init__(self, workload: ElasticWorkload, cfg: ElasticConfig) -> None:
        cfg.check()
        self.w = workload
        self.cfg = cfg
        self.policy_name = cfg.policy
        self.seed = cfg.seed
        self.method = registry.get("welfare", cfg.policy)
        self.cache_policy = (cfg.cache_policy or "silod") if self.method.takes_cache_policy else None
        self.p_g, self.p_c, self.p_b = (float(p) for p in cfg.prices)
        self.reference = reference_spend(workload, cfg.prices)
        self.budget = float(
            cfg.budget_per_hour if cfg.budget_per_hour is not None else cfg.budget_fraction * self.reference
        )
        self.G = int(cfg.gpus)
        self.B = float(cfg.bandwidth_gbps)
        self.d = workload.datasets["size_gb"].to_numpy(dtype=float)
        self.K = self.d.size
        jobs = workload.jobs
        self.n = n = workload.n
        self.submit = jobs["submit_s"].to_numpy(dtype=float)
        self.order = np.argsort(self.submit, kind="stable")
        self.kj = jobs["dataset_index"].to_numpy(dtype=np.int64)
        self.horizon = reference_horizon(workload)
        self.job_ids = jobs["job_id"].to_numpy(dtype=object)
        self.dataset_ids = tuple(workload.datasets["dataset"])
        self.t0 = float(self.submit.min()) if n else 0.0
        # per-job state (global positions); col indexes [wait, option 0, option 1, ...]
        self.rem = workload.work.astype(float).copy()
        self.col = np.zeros(n, dtype=np.int64)
        self.g = np.zeros(n, dtype=np.int64)
        self.share = np.ones(n)
        self.ran = np.zeros(n, dtype=bool)
        self.pause_until = np.full(n, -math.inf)
        self.start = np.full(n, np.nan)
        self.finish = np.full(n, np.nan)
        self.wait_s = np.zeros(n)
        self.gpu_s = np.zeros(n)
        self.welfare_j = np.zeros(n)
        self.restarts = np.zeros(n, dtype=np.int64)
        self.speed = np.zeros(n)
        self.urate = np.zeros(n)
        self.bw = np.zeros(n)
        # per-dataset state
        self.target = np.zeros(self.K)
        self.eta = np.zeros(self.K)
        self.cache = np.zeros(self.K)
        self.grow = np.zeros(self.K)
        self.active: np.ndarray = np.zeros(0, dtype=np.int64)
        self.t = self.t0
        self.nxt = 0
        self.done = 0
        self.spend_rate = self.gpus_busy = 0.0
        self.io_factor = 1.0
        self.totals = {"welfare": 0.0, "welfare_horizon": 0.0, "spend": 0.0, "gpu_hours": 0.0}
        self.rows: list[tuple] = []
        self.pending: dict[str, float] = {}
        self.referee_checks = 0
        self.spend_max = 0.0
        self.decisions = 0
        self.full_runs = 0
        self.full_improved = 0
        # The padded GPU and rate tables of every job (column 0 = wait) do not change: made once, read per event.
        zero = np.zeros((n, 1))
        self.Gpad = np.hstack([zero.astype(np.int64), np.where(workload.valid, workload.gpus, 0)])
        self.Rpad = np.hstack([zero, np.where(workload.valid, workload.rate, 0.0)])
        smallest = np.where(workload.valid, workload.gpus, np.iinfo(np.int64).max).argmin(axis=1)
        self.tput_small = workload.tput[np.arange(n), smallest]  # throughput at the smallest option (Optimus)
        self._check_fits()
        # One online policy per replay (algorithms/online.py), found in the registry.
        self.policy = self.method.online_policy(SolveOptions(cache_policy=self.cache_policy, mip_gap=cfg.reopt_gap))

    def _check_fits(self) -> None:
        """Every job must be able to run alone at one of its options, or no policy could ever finish it.

        The one "fits alone" rule (algorithms/autocba/limits.py, docs/model.md §5): alone, its dataset takes the
        cheapest feeding cache that leaves at most B remote; the error names the limit the smallest option exceeds.
        """
        if self.n == 0:
            return
        every = np.arange(self.n)
        U, Gm, Rm = self._matrices(every)
        inst, _ = self._instance(every, np.where(np.isfinite(U), 1.0, U), Gm, Rm)  # every option offered
        ok = fits_alone(inst, 1e-9, absolute=False)
        fits = np.bincount(inst.option_job(), weights=ok, minlength=self.n) > 0
        if fits.all():
            return
        j = int(np.flatnonzero(~fits)[0])
        rows = np.arange(inst.option_ptr[j], inst.option_ptr[j + 1])
        o = int(rows[np.argmin(inst.option_gpus[rows])])
        _, remote = standalone_cost(inst)
        g = int(inst.option_gpus[o])
        if g > self.G:
            what, limit = "gpus", float(self.G)
        elif not remote[o] <= self.B * (1 + 1e-9):
            what, limit = "bandwidth_gbps", self.B
        else:
            what, limit = "budget_per_hour", self.budget
        how = ""
        if what == "budget_per_hour" and self.cfg.budget_per_hour is None:  # the budget is a share of a peak
            peak = f"the reference schedule's peak {self.reference:.6g} $/h"
            how = f" (budget_fraction {self.cfg.budget_fraction:g} of {peak}: a larger one lets the job run)"
        raise InstanceError(
            f"jobs[{self.job_ids[j]}]", g, f"its smallest option alone exceeds {what} = {limit:.6g}{how}"
        )

    # ------------------------------------------------------------------ the steps of the engine's loop
    def next_event(self) -> float:
        """The earliest of: an arrival, a departure, a restart ending, a cache reaching its target (inf: none)."""
        t = self.t
        nxt = float(self.submit[self.order[self.nxt]]) if self.nxt < self.n else math.inf
        a = self.active
        if a.size:
            sp = self.speed[a]
            moving = sp > 0
            if moving.any():
                nxt = min(nxt, t + float((self.rem[a][moving] / sp[moving]).min()))
            pu = self.pause_until[a]
            later = pu > t
            if later.any():
                nxt = min(nxt, float(pu[later].min()))
        growing = self.grow > 0
        if growing.any():
            nxt = min(nxt, t + float(((self.target - self.cache)[growing] / self.grow[growing]).min()))
        return nxt

    def stuck(self) -> None:
        """Nothing will change (GPUs held with no money or B left to feed them, or every job left waiting): a
        result on the welfare problem, reported as ``stuck_at_s`` with the unfinished jobs."""

    def idle_limit(self) -> int:
        """Zero-length slots allowed in a row: one per dataset's cache and three per active job, and two more."""
        return self.K + 3 * self.active.size + 2

    def starved(self) -> bool:
        """GPUs held at a vanishing IO share (below 10⁻⁶, or a million horizons on): progress below the clock."""
        starved = self.io_factor < 1e-6 or self.t > self.t0 + 1e6 * max(self.horizon, 1.0)
        return bool(starved and (self.g[self.active] > 0).any())

    def advance(self, t_next: float) -> None:
        """Integrate the slot up to ``t_next`` (:meth:`integrate`) and move the clock there."""
        self.integrate(t_next - self.t)
        self.t = t_next

    def integrate(self, dt: float) -> None:
        """Advance the slot [t, t + dt) at its constant rates: work, welfare, spend, GPU time, cache fill."""
        if dt <= 0:
            return
        a = self.active
        h = dt / 3600.0
        ur = self.urate[a]
        self.welfare_j[a] += ur * h
        total = float(ur.sum())
        self.totals["welfare"] += total * h
        inside = min(self.t + dt, self.t0 + self.horizon) - self.t
        if inside > 0:
            self.totals["welfare_horizon"] += total * inside / 3600.0
        self.totals["spend"] += self.spend_rate * h
        self.totals["gpu_hours"] += self.gpus_busy * h
        ga = self.g[a]
        self.gpu_s[a] += ga * self.share[a] * dt
        self.wait_s[a] += np.where(ga == 0, dt, 0.0)
        self.rem[a] = self.rem[a] - self.speed[a] * dt
        if self.cfg.warmup:
            self.cache = np.minimum(self.target, self.cache + self.grow * dt)

    def depart(self) -> bool:
        """Jobs whose work is done leave (their GPUs, money and IO are freed); True if any did."""
        a = self.active
        if not a.size:
            return False
        limit = np.maximum(_TOL * self.w.work[a], self.speed[a] * resolution(self.t))
        gone = (self.rem[a] <= limit) & (self.speed[a] > 0)
        if not gone.any():
            return False
        out = a[gone]
        self.finish[out] = self.t
        self.rem[out] = 0.0
        self.g[out] = 0
        self.share[out] = 1.0
        self.col[out] = 0
        self.speed[out] = 0.0
        self.urate[out] = 0.0
        self.bw[out] = 0.0
        self.done += out.size
        self.active = a[~gone]
        return True

    def admit(self) -> bool:
        """Jobs submitted by now join the active set, waiting; True if any did."""
        first = self.nxt
        while self.nxt < self.n and self.submit[self.order[self.nxt]] <= self.t:
            self.nxt += 1
        if self.nxt == first:
            return False
        self.active = np.concatenate([self.active, self.order[first : self.nxt]])
        return True

    # ------------------------------------------------------------------ decisions
    def _matrices(self, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Padded option matrices of the active jobs with column 0 = wait: utility now, GPUs, rates."""
        w = self.w
        delay = self.cfg.restart_delay_s
        u = w.utility(a, self.t, self.rem[a], self.g[a], self.ran[a], delay)
        if self.method.restart_aware and delay > 0:
            # Restart-aware AutoCBA: an option that restarts the job is worth its utility averaged over the
            # job's remaining life with the pause, U(g) · T_g / (T_g + delay), T_g = remaining work / τ(g).
            pays = (w.gpus[a] != self.g[a][:, None]) & self.ran[a][:, None]
            life = self.rem[a][:, None] / w.tput[a]
            u = np.where(pays, u * life / (life + delay), u)
        U = np.hstack([np.zeros((a.size, 1)), u])
        return U, self.Gpad[a], self.Rpad[a]

    def _instance(self, a: np.ndarray, U: np.ndarray, Gm: np.ndarray, Rm: np.ndarray) -> tuple[Instance, np.ndarray]:
        """The P2 instance of the active jobs now (options with U > 0), and its option mask over the matrices.

        ``job_work`` is each job's remaining work in hours at its smallest option, what Optimus reads.
        """
        keep = np.isfinite(U) & (U > 0)
        keep[:, 0] = False
        ptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
        m = a.size
        work_h = self.rem[a] / self.tput_small[a] / 3600.0
        inst = Instance(
            gpus=self.G,
            cache_gb=float(self.cfg.cache_gb),
            bandwidth_gbps=self.B,
            price_gpu=self.p_g,
            price_cache=self.p_c,
            price_bandwidth=self.p_b,
            dataset_ids=self.dataset_ids,
            dataset_size_gb=self.d,
            job_ids=tuple(self.job_ids[a]),
            job_dataset=self.kj[a],
            job_gpus=np.full(m, -1, dtype=np.int64),
            job_io_gbps=np.full(m, np.nan),
            option_ptr=ptr,
            option_gpus=Gm[keep].astype(np.int64),
            option_io_gbps=Rm[keep],
            option_utility=U[keep],
            budget_per_hour=self.budget,
            job_work=work_h,
        )
        return inst, keep

    def reallocate(self) -> None:
        """The policy re-decides every active job's option, the target caches and the bandwidth (a re-decision)."""
        a = self.active
        m = a.size
        self.decisions += 1
        rows = np.arange(m)
        if m == 0:
            self.target = np.zeros(self.K)
            self.eta = np.zeros(self.K)
            self.cache = np.zeros(self.K)
            self.pending = {"certified_gap": 0.0, "bound": 0.0, "static_welfare": 0.0, "full": 0}
            return
        U, Gm, Rm = self._matrices(a)
        kj = self.kj[a]
        inst, keep = self._instance(a, U, Gm, Rm)
        filled = self.cache if self.cfg.warmup else self.target
        alloc = self.policy.decide(State(inst, filled.copy(), self._current(a, keep, inst)), self.t)
        if not alloc.has_allocation:
            raise RuntimeError(
                f"{self.cfg.policy} at t = {self.t:.6g} s: no allocation ({alloc.status}: {alloc.reason})"
            )
        g = np.asarray(alloc.gpus)
        share = np.ones(m) if alloc.time_share is None else np.where(g > 0, alloc.time_share, 1.0)
        match = (Gm == g[:, None]) & keep
        cols = np.where(g > 0, match.argmax(axis=1), 0)
        target = np.asarray(alloc.cache_gb, dtype=float)
        bw = np.asarray(alloc.bandwidth_gbps, dtype=float)
        hit = np.minimum(target, self.d) / self.d
        eta = hit  # a policy that feeds its options itself buys the least feeding: its hit ratio is its cache's
        if self.method.takes_cache_policy:  # a cache policy may hit less than its cache (CoorDL's private slices)
            factor = alloc.facts.io_factor if isinstance(alloc.facts, IoFeeding) else 1.0
            R = np.bincount(kj, weights=Rm[rows, cols] * share, minlength=self.K)
            if factor > 0:
                wanted = np.bincount(kj, weights=bw / factor, minlength=self.K)
                eta = np.where(R > 0, np.clip(1.0 - wanted / R, 0.0, hit), hit)
        bound = math.nan if alloc.bound is None else float(alloc.bound)
        online = alloc.facts if isinstance(alloc.facts, OnlineFacts) else None
        full = int(online is not None and online.full_reopt)
        self.full_improved += int(online is not None and online.full_reopt_improved)
        static = math.nan
        if self.cfg.referee:
            shared = None if (share == 1.0).all() else share
            ev = evaluate(inst, Allocation(Gm[rows, cols], target, bw, time_share=shared), "welfare")
            if not ev.feasible:
                raise RuntimeError(
                    f"{self.cfg.policy} at t = {self.t:.6g} s: the referee rejects the allocation: "
                    + "; ".join(ev.violations)
                )
            assert ev.welfare is not None  # a feasible welfare evaluation scores welfare
            static = float(ev.welfare)
            self.referee_checks += 1
        else:
            static = float((U[rows, cols] * share).sum())
        self._apply(a, cols, Gm[rows, cols])
        self.share[a] = share
        self.target = np.minimum(target, self.d)
        self.eta = eta
        self.cache = np.minimum(self.cache, self.target) if self.cfg.warmup else self.target.copy()
        self.full_runs += full
        gap = max(0.0, 1.0 - static / bound) if bound > 0 else (0.0 if bound == 0 else math.nan)
        self.pending = {"certified_gap": gap, "bound": bound, "static_welfare": static, "full": full}

    def _current(self, a: np.ndarray, keep: np.ndarray, inst: Instance) -> np.ndarray:
        """Each active job's option row in ``inst`` now (``keep`` maps the matrices' columns to it), −1 while it
        waits or when its option is no longer offered (U ≤ 0)."""
        col = self.col[a]
        rows = np.arange(a.size)
        rank = np.cumsum(keep, axis=1) - 1
        held = (col > 0) & keep[rows, col]
        return np.where(held, inst.option_ptr[:-1] + rank[rows, col], -1)

    def _apply(self, a: np.ndarray, cols: np.ndarray, g: np.ndarray) -> None:
        """Adopt the new options: first starts, restarts (a job that has run and changes its count) and pauses."""
        old = self.g[a]
        change = g != old
        restart = change & (g > 0) & self.ran[a]
        if restart.any():
            r = a[restart]
            self.restarts[r] += 1
            if self.cfg.restart_delay_s > 0:
                self.pause_until[r] = self.t + self.cfg.restart_delay_s
        stop = a[change & (g == 0)]
        self.pause_until[stop] = -math.inf
        first = a[(g > 0) & ~self.ran[a]]
        self.start[first] = self.t
        self.ran[first] = True
        self.col[a] = cols
        self.g[a] = g

    def feed(self, decision: bool) -> None:
        """Feed the new slot (:meth:`feed_slot`) and record it (experiments/elastic_report.py, ``record``)."""
        self.feed_slot()
        elastic_report.record(self, decision)

    def feed_slot(self) -> None:
        """The slot's feeding at the cache it starts with: bandwidth, stalls, speeds, utility rates, spend rate."""
        a = self.active
        w = self.w
        t = self.t
        cols = self.col[a]
        g = self.g[a]
        train = (g > 0) & (self.pause_until[a] <= t)
        opt = np.maximum(cols - 1, 0)
        x = self.share[a]
        r = np.where(train, w.rate[a, opt] * x, 0.0)
        kj = self.kj[a]
        if self.cfg.warmup:
            with np.errstate(divide="ignore", invalid="ignore"):
                filled = np.where(self.target > 0, self.cache / self.target, 0.0)
            hit = self.eta * filled
        else:
            hit = self.eta
        need = r * (1.0 - hit[kj])
        total = float(need.sum())
        gpus = exact_dot(g, x)
        money = self.budget - self.p_g * gpus - self.p_c * float(self.target.sum())
        factor = 1.0
        if total > 0:
            slack = 0.25 * RTOL * max(1.0, self.budget)
            if self.p_b > 0 and self.p_b * total > money + slack:
                factor = max(money, 0.0) / (self.p_b * total)
            if total > self.B:
                factor = min(factor, self.B / total)
        self.io_factor = factor
        bw = need * factor
        self.bw[a] = bw
        stall = np.where(need > 0, factor, 1.0)
        tput = w.tput[a, opt]
        speed = np.where(train, tput * x * stall, 0.0)
        self.speed[a] = speed
        u = np.where(g > 0, w.base[a, opt], 0.0)
        dl = (w.shape[a] == _DEADLINE) & (g > 0)
        if dl.any():
            pause = np.maximum(self.pause_until[a][dl] - t, 0.0)
            with np.errstate(divide="ignore"):
                eta_finish = t + pause + self.rem[a][dl] / np.where(speed[dl] > 0, speed[dl], tput[dl] * stall[dl])
            value = w.value[a][dl]
            u[dl] = np.where(
                eta_finish <= w.deadline_s[a][dl], value, w.mix.late_value * value * w.base[a[dl], opt[dl]]
            )
        self.urate[a] = np.where(train, u * x * stall, 0.0)
        self.grow = np.bincount(kj, weights=bw, minlength=self.K).astype(float) if self.cfg.warmup else np.zeros(self.K)
        if self.cfg.warmup:
            self.grow = np.where(self.cache < self.target * (1.0 - _TOL), self.grow, 0.0)
            self.cache = np.where(
                self.target - self.cache <= _TOL * np.maximum(1.0, self.target), self.target, self.cache
            )
        self.gpus_busy = gpus
        self.spend_rate = self.p_g * gpus + self.p_c * float(self.target.sum()) + self.p_b * float(bw.sum())
        self.spend_max = max(self.spend_max, self.spend_rate)
        if gpus > self.G * (1 + RTOL):
            raise RuntimeError(f"{self.cfg.policy} at t = {self.t:.6g} s: {gpus:.9g} GPUs busy > G = {self.G}")
        if self.spend_rate > self.budget + RTOL * max(1.0, self.budget):
            raise RuntimeError(
                f"{self.cfg.policy} at t = {self.t:.6g} s: spend {self.spend_rate:.9g} $/h > budget {self.budget:.9g}"
            )

    # ------------------------------------------------------------------ outputs
    def report(self) -> Report:
        """jobs.csv, timeseries.csv and the welfare problem's summary entries (experiments/elastic_report.py)."""
        return elastic_report.report(self)


def replay(workload: ElasticWorkload, cfg: ElasticConfig) -> SimResult:
    """Run one elastic replay (:class:`ElasticReplay`) on the engine of experiments/replay.py."""
    return run_replay(ElasticReplay(workload, cfg), period_s=cfg.period_s, progress=cfg.progress)
