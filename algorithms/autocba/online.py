"""Online AutoCBA: incremental re-decisions of P2 (docs/model.md §5) at every event of the elastic replay (§6b).

Re-running AutoCBA from scratch at each of the ~165,000 events of the Philly
trace (hundreds of active jobs each) takes hours.  :class:`OnlineAutoCBA`
keeps the allocation between events and repairs it:

1. **Warm start.**  The jobs keep their options; a new job starts waiting;
   options that do not fit alone (algorithms/autocba/limits.py, AutoCBA's
   step 1) are never taken.  The options are fed at least cost by CBA's
   closed form on the per-dataset demands (algorithms.cba.feed on a K-job
   aggregate instance: the least feeding cost depends on the jobs only
   through R_k, docs/model.md §4).
2. **Fill.**  While money, GPUs and remote IO are left, the job move of best
   utility per unit of marginal cost is taken, as AutoCBA's greedy does: the
   marginal cost of moving job j from option o to o' is p_g Δg + p_b Δr (1 −
   h_k(j)) at the current cache (an upper bound on the change of the least
   feeding cost, since re-feeding can only lower it; proofs/feeding_cost_concave.md).
   When G can bind as well, cost is the normalised sum Δ$/Budget + Δg/G
   (Theorem C of proofs/autocba_guarantee.md).
3. **Exchange.**  When the best move does not fit, it is paid for by
   downgrading other jobs (each to its option of least utility lost per unit
   of cost saved, in increasing order of that ratio) when the utility gained
   exceeds the utility lost: a local move that strictly raises the welfare.
4. **Re-feed** by CBA (the cost only drops), and repeat 2-4 while anything
   changes (at most ``rounds`` times).
5. **Certificate.**  The Lagrangian dual of Theorem D
   (proofs/autocba_certificate.md) on the active set, warm-started from the
   previous event's multipliers and refined by a few bisection steps per
   coordinate: every evaluated point is a proven upper bound on the P2
   optimum of the active set, so ``gap = 1 − welfare / bound`` is certified.
6. **Full re-optimisation.**  When the certified gap exceeds ``reopt_gap``,
   AutoCBA (algorithms.autocba) is run from scratch on the active set and its
   answer adopted if it is better, and the certificate is recomputed with a
   cold search.  So that a loose bound (not a poor allocation) does not
   trigger a full run at every event, the next one waits until the gap
   exceeds the gap left by the last one by ``reopt_gap``, or ``cooldown``
   decisions have passed.

   **Trigger rule: re-optimise when it pays.**  A full run pays
   only for as long as its allocation holds, and in a burst of arrivals the
   next decision comes seconds later and adds its own gap.  So a decision
   less than ``settle_s`` seconds after the previous one is *in a burst*, and
   there step 6 runs only when the gap exceeds ``hard_factor`` ×
   ``reopt_gap`` (1.5 × by default); outside a burst it
   runs, as before, when the gap exceeds ``reopt_gap`` (and the floor above).
   The cold certificate search that first suspects the bound runs when the
   gap passes the same threshold (``reopt_gap``, or its ``hard_factor``
   multiple in a burst), as it can change the decision only then.
   :meth:`OnlineAutoCBA.reoptimise` states the rule; ``settle_s = 0`` (the
   default, :data:`SETTLE_S`) is the former rule: measured at 60 s, the burst
   rule cut full runs by 9-19 % but raised the per-decision gap's mean and p99,
   so replays keep the former rule.  It is a heuristic: it guarantees that a decision that is
   not in a burst leaves a gap above ``reopt_gap`` only if the full run
   itself cannot close it (as before), and that a decision in a burst does
   so only up to ``hard_factor`` × ``reopt_gap``; it does not bound the
   welfare lost while a burst's gap waits, nor make the per-decision gap's
   mean or tail what the former rule gives (proofs/online_elastic.md, O4).

The allocation never exceeds the budget, G, C or B and never stalls a job
(the feeding is CBA's, within the budget by construction).  What this online
rule can and cannot guarantee over time is in proofs/online_elastic.md.

A decision is the online protocol of algorithms/online.py: the state's P2
instance of the active jobs now and the option each holds, turned into the
padded option tables of the certificate (algorithms/autocba/certificate.py,
:class:`~cbalab.algorithms.autocba.certificate.Dual`: column 0 the "wait"
option, U = 0, g = 0, r = 0, and unavailable options at U = −inf), whose
Lagrangian is also the one evaluated in step 5.  Nothing here imports Pyomo
or the experiments.
"""

from __future__ import annotations

import math

import numpy as np

from cbalab.algorithms.autocba.certificate import Dual
from cbalab.algorithms.autocba.limits import _SAFE
from cbalab.algorithms.cba import feed
from cbalab.algorithms.online import State
from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.result import OnlineFacts
from cbalab.models.types import SolveOptions

#: A move must gain at least this fraction of its job's largest utility to count, so local search terminates.
_GAIN = 1e-9
#: Decisions less than this many seconds after the previous one are in a burst, where step 6 waits.
#: 0: no burst, the former rule, which replays use: the burst rule raised the per-decision gap's mean and p99
#: (proofs/online_elastic.md, O4), and the aim is fewer full runs at the same certified gap.
SETTLE_S = 0.0
#: CBA feedings remembered by their demands (:meth:`OnlineAutoCBA.feed`).
_FED = 8


class OnlineAutoCBA:
    """Incremental AutoCBA over a stream of decisions on one cluster (see the module docstring).

    An online policy of algorithms/online.py: one object per replay, made with the replay's options, whose
    ``mip_gap`` is the certified gap above which a full re-optimisation runs (step 6; the elastic replay's
    ``reopt_gap``).  The cluster (sizes, C, B, G, prices, budget) is read from the first state it decides.
    """

    def __init__(
        self,
        options: SolveOptions | None = None,
        *,
        target_gap: float = 0.005,
        cooldown: int = 5000,
        rounds: int = 4,
        exchanges: int = 64,
        settle_s: float | None = None,
        hard_factor: float = 1.5,
    ) -> None:
        self.reopt_gap = (options if options is not None else SolveOptions()).mip_gap
        self.target_gap = target_gap
        self.cooldown = cooldown
        self.rounds = rounds
        self.exchanges = exchanges
        self.settle_s = SETTLE_S if settle_s is None else settle_s
        self.hard_factor = hard_factor
        self.last_now = -math.inf
        self.deferred = 0
        self.x = np.zeros(4)
        self.floor = 0.0
        self.since_full = 0
        self.full_runs = 0
        self.full_improved = 0
        self.aggregate: Instance | None = None
        self.fed: dict[bytes, tuple[np.ndarray, float, float] | None] = {}

    def _cluster(self, inst: Instance) -> None:
        """Read the cluster from the first instance and make the K-job aggregate that CBA feeds (step 1)."""
        if self.aggregate is not None:
            return
        self.d = np.asarray(inst.dataset_size_gb, dtype=float)
        self.K = self.d.size
        self.C = float(inst.cache_gb)
        self.B = float(inst.bandwidth_gbps)
        self.G: float = math.inf if inst.gpus is None else int(inst.gpus)
        self.p_g, self.p_c, self.p_b = inst.price_gpu, inst.price_cache, inst.price_bandwidth
        self.budget = float(inst.budget_per_hour)
        ids = tuple(f"d{k}" for k in range(self.K))
        self.aggregate = Instance(
            gpus=None,
            cache_gb=self.C,
            bandwidth_gbps=self.B,
            price_gpu=self.p_g,
            price_cache=self.p_c,
            price_bandwidth=self.p_b,
            dataset_ids=ids,
            dataset_size_gb=self.d,
            job_ids=ids,
            job_dataset=np.arange(self.K, dtype=np.int64),
            job_gpus=np.zeros(self.K, dtype=np.int64),
            job_io_gbps=np.zeros(self.K),
            option_ptr=np.zeros(self.K + 1, dtype=np.int64),
            option_gpus=np.zeros(0, dtype=np.int64),
            option_io_gbps=np.zeros(0),
            option_utility=np.zeros(0),
        )

    # ------------------------------------------------------------------ feeding
    def feed(self, R: np.ndarray) -> tuple[np.ndarray, float, float] | None:
        """CBA's least-cost feeding of the demands R_k: (cache, IO cost $/h, remote GB/s), None if B cannot.

        The last :data:`_FED` answers are kept by their R (bytes): between events the demands seldom change (an
        arrival waits, a round without moves re-feeds the same columns), and the same R gives the same answer.
        """
        assert self.aggregate is not None  # set by the first decision
        key = R.tobytes()
        if key in self.fed:
            return self.fed[key]
        f = feed(self.aggregate, R)
        answer = (
            None
            if f.cache_gb is None or f.bandwidth_gbps is None
            else (f.cache_gb, f.io_cost, float(f.bandwidth_gbps.sum()))
        )
        if len(self.fed) >= _FED:
            self.fed.pop(next(iter(self.fed)))
        self.fed[key] = answer
        return answer

    # ------------------------------------------------------------------ the certificate
    def certify(self, dual: Dual, welfare: float, *, cold: bool = False) -> float:
        """A proven upper bound on the active set's P2 optimum, searched from the last multipliers (Theorem D).

        Evaluates the Lagrangian of algorithms/autocba/certificate.py; stops as soon as the gap to ``welfare``
        is within ``target_gap``; ``cold`` searches longer (after a full re-optimisation).
        """
        if dual.U.shape[0] == 0:
            return 0.0
        top = dual.top
        rhs = dual.rhs
        active = [t for t in range(4) if math.isfinite(rhs[t])]
        best_x = self.x.copy()
        best, sub = dual(best_x)

        def good(value: float) -> bool:
            return min(value, top) * (1.0 - self.target_gap) <= welfare

        steps = 12 if cold else 5
        for _ in range(2 if cold else 1):
            for t in active:
                if good(best):
                    break
                y = best_x.copy()
                if not cold and y[t] == 0 and sub[t] >= 0:
                    continue  # the relaxed answer keeps this limit: raising its multiplier cannot help here
                scale = max(top / rhs[t] if rhs[t] > 0 else 1.0, 1e-300)
                lo, hi = (0.0, 4.0 * max(float(y[t]), scale)) if cold or y[t] == 0 else (0.5 * y[t], 2.0 * y[t])
                for _ in range(steps):
                    y[t] = 0.5 * (lo + hi)
                    value, sub = dual(y)
                    if value < best:
                        best, best_x = value, y.copy()
                    if sub[t] >= 0:
                        hi = y[t]
                    else:
                        lo = y[t]
        self.x = best_x
        bound = min(best, top)
        return bound + 1e-9 * (1.0 + abs(bound))

    # ------------------------------------------------------------------ the decision
    def decide(self, state: State, now: float) -> Allocation:
        """Re-decide the active jobs of ``state.instance`` from the options they hold (module docstring, steps 1-6).

        Options that do not fit alone are dropped (algorithms/autocba/limits.py, through :class:`Dual`); a job
        whose option is gone waits.  The answer is fed by CBA within the budget and never stalls; its ``bound``
        is the certificate, its ``objective`` the welfare Σ U of the chosen options and its ``facts``
        (:class:`~cbalab.models.result.OnlineFacts`) whether step 6 ran and was adopted and the moves made.
        """
        inst = state.instance
        self._cluster(inst)
        dual = Dual(inst)
        U, Gm, Rm = dual.U, dual.G, dual.R
        kj = inst.job_dataset
        m = inst.n_jobs
        rows = np.arange(m)
        cols = np.zeros(m, dtype=np.int64)
        if state.current is not None:
            held = state.current >= 0
            cols[held] = state.current[held] - inst.option_ptr[:-1][held] + 1
        cols[~np.isfinite(U[rows, cols])] = 0
        fed = self._feasible_start(U, Gm, Rm, kj, cols)
        fed, moves = self._repair(U, Gm, Rm, kj, cols, fed)
        cache = fed[0]
        welfare = float(U[rows, cols].sum()) if m else 0.0
        bound = self.certify(dual, welfare)
        full = improved = False
        burst = now - self.last_now < self.settle_s
        self.last_now = now
        # First suspect the bound: search the multipliers afresh, when the gap passes the trigger's threshold.
        if self._gap(welfare, bound) > self.reopt_gap * (self.hard_factor if burst else 1.0):
            bound = min(bound, self.certify(dual, welfare, cold=True))
        gap = self._gap(welfare, bound)
        self.since_full += 1
        if self.since_full >= self.cooldown:
            self.floor = 0.0
        if self.reoptimise(gap, burst):
            full = True
            self.full_runs += 1
            self.since_full = 0
            alt = self._full(inst, dual)
            if alt is not None:
                alt_welfare = float(U[rows, alt].sum())
                if alt_welfare > welfare:
                    refed = self.feed(np.bincount(kj, weights=Rm[rows, alt], minlength=self.K))
                    if refed is not None and self._spend(Gm[rows, alt].sum(), refed[1]) <= self._limit():
                        cols, welfare = alt, alt_welfare
                        cache = refed[0]
                        self.full_improved += 1
                        improved = True
            self.floor = max(self.floor, self._gap(welfare, bound))
        miss = 1.0 - (cache / self.d)[kj]
        bw = Rm[rows, cols] * miss
        return Allocation(
            gpus=Gm[rows, cols].astype(np.int64),
            cache_gb=cache,
            bandwidth_gbps=bw,
            objective=welfare,
            bound=bound,
            facts=OnlineFacts(full_reopt=full, full_reopt_improved=improved, moves=moves),
        )

    def _repair(
        self,
        U: np.ndarray,
        Gm: np.ndarray,
        Rm: np.ndarray,
        kj: np.ndarray,
        cols: np.ndarray,
        fed: tuple[np.ndarray, float, float],
    ) -> tuple[tuple[np.ndarray, float, float], int]:
        """Steps 2-4 from the columns ``cols`` (changed in place) fed by ``fed``: local moves re-fed by CBA, for
        at most ``rounds`` rounds; the last feeding and the number of moves made."""
        rows = np.arange(U.shape[0])
        cache = fed[0]
        moves = 0
        for _ in range(self.rounds):
            made = self._local(U, Gm, Rm, kj, cols, *fed)
            moves += made
            new = self.feed(np.bincount(kj, weights=Rm[rows, cols], minlength=self.K))
            if new is None:  # cannot happen: the moves kept the fixed-cache feeding within B
                break
            same = np.array_equal(new[0], cache)
            fed = new
            cache = fed[0]
            if not made or same:  # the same cache prices every move as before: nothing more fits
                break
        return fed, moves

    def reoptimise(self, gap: float, burst: bool) -> bool:
        """Whether step 6 runs at a decision whose certified gap is ``gap`` (the module docstring's trigger rule).

        It runs when the gap exceeds ``reopt_gap`` and the floor the last full run left by ``reopt_gap``, except
        in a ``burst`` (a decision within ``settle_s`` of the previous one), where the gap must also exceed
        ``hard_factor`` × ``reopt_gap``; a run the burst holds back is counted in ``deferred``.
        """
        if not (gap > self.reopt_gap and gap > self.floor + self.reopt_gap):
            return False
        if burst and gap <= self.hard_factor * self.reopt_gap:
            self.deferred += 1
            return False
        return True

    @staticmethod
    def _gap(welfare: float, bound: float) -> float:
        return 0.0 if bound <= 0 else max(0.0, 1.0 - welfare / bound)

    def _limit(self) -> float:
        return self.budget + _SAFE * max(1.0, self.budget)

    def _spend(self, gpus: float, io_cost: float) -> float:
        return self.p_g * float(gpus) + io_cost

    def _feasible_start(
        self, U: np.ndarray, Gm: np.ndarray, Rm: np.ndarray, kj: np.ndarray, cols: np.ndarray
    ) -> tuple[np.ndarray, float, float]:
        """Feed the current columns; if they no longer fit (never after departures), drop the worst jobs first."""
        rows = np.arange(U.shape[0])
        while True:
            fed = self.feed(np.bincount(kj, weights=Rm[rows, cols], minlength=self.K))
            gpus = int(Gm[rows, cols].sum())
            if fed is not None and gpus <= self.G and self._spend(gpus, fed[1]) <= self._limit():
                return fed
            run = np.flatnonzero(cols > 0)
            worst = run[np.argmin(U[run, cols[run]] / np.maximum(Gm[run, cols[run]], 1))]
            cols[worst] = 0

    def _local(
        self,
        U: np.ndarray,
        Gm: np.ndarray,
        Rm: np.ndarray,
        kj: np.ndarray,
        cols: np.ndarray,
        cache: np.ndarray,
        io_cost: float,
        remote: float,
    ) -> int:
        """Fill and exchange moves at the fixed cache ``cache`` (steps 2-3); returns the number of moves made."""
        m = U.shape[0]
        if m == 0:
            return 0
        rows = np.arange(m)
        rem = Rm * (1.0 - cache / self.d)[kj][:, None]
        gpus = int(Gm[rows, cols].sum())
        room = self._limit() - (self.p_g * gpus + io_cost)
        room_g = self.G - gpus
        room_b = self.B + _SAFE * max(1.0, self.B) - remote if math.isfinite(self.B) else math.inf
        g_binds = float(np.where(np.isfinite(U), Gm, 0).max(axis=1).sum()) > self.G
        w_money = 1.0 / self.budget if self.budget > 0 and g_binds else 1.0
        w_gpu = 1.0 / self.G if g_binds else 0.0
        moves = _Moves(U, self.p_g * Gm + self.p_b * rem, Gm, rem, cols, w_money, w_gpu)
        made = exchanges = 0
        while True:
            fits = (moves.dc <= room) & (moves.dg <= room_g) & (moves.db <= room_b)
            cand = np.where(fits, moves.ratio, -np.inf)
            j, o = divmod(int(np.argmax(cand)), cand.shape[1])
            if cand[j, o] > -np.inf:
                room -= moves.dc[j, o]
                room_g -= int(moves.dg[j, o])
                room_b -= moves.db[j, o]
                moves.move([j], [o])
                made += 1
                continue
            if exchanges >= self.exchanges:
                return made
            done = moves.exchange(room, room_g, room_b)
            if done is None:
                return made
            room, room_g, room_b = done
            exchanges += 1
            made += 1

    def _full(self, inst: Instance, dual: Dual) -> np.ndarray | None:
        """AutoCBA from scratch (algorithms.autocba) on the active set's options that fit alone, as columns of
        ``dual``'s tables; None if it finds nothing."""
        from cbalab.algorithms.autocba.driver import autocba

        U = dual.U
        m = U.shape[0]
        keep = np.isfinite(U) & (U > 0)
        keep[:, 0] = False
        if not keep.any():
            return np.zeros(m, dtype=np.int64)
        counts = keep.sum(axis=1)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        sub = inst.replace(
            option_ptr=ptr,
            option_gpus=dual.G[keep].astype(np.int64),
            option_io_gbps=dual.R[keep],
            option_utility=U[keep],
        )
        # A re-plan must stay as fast as before: no partial enumeration (Theorem E's runs cost one greedy per guess).
        alloc = autocba(sub, certify=False, swaps=0, enumerate_guesses=False)
        if not alloc.has_allocation:
            return None
        g = np.asarray(alloc.gpus)
        cols = np.zeros(m, dtype=np.int64)
        match = (g[:, None] == dual.G) & keep
        has = match.any(axis=1) & (g > 0)
        cols[has] = match[has].argmax(axis=1)
        return cols


class _Moves:
    """Every job's move to every option at a fixed cache (Δ utility, Δ $, Δ GPUs, Δ remote), row by row.

    A move changes one job's row only, so after it only that row is recomputed (the limits left are the
    caller's).  Per row it also keeps the best upgrade (utility gained per unit of cost, ignoring the
    limits) and the best downgrade (utility lost per unit of cost saved), which the exchange uses.
    """

    def __init__(
        self, U: np.ndarray, cost: np.ndarray, Gm: np.ndarray, rem: np.ndarray, cols: np.ndarray, wm: float, wg: float
    ) -> None:
        self.U, self.cost, self.Gm, self.rem, self.cols = U, cost, Gm, rem, cols
        self.wm, self.wg = wm, wg
        # A move must gain more than a fixed fraction of its own job's utility scale: the same threshold at
        # every event, so a gain left out now is not taken later (which would restart the job for nothing).
        self.tiny = _GAIN * np.maximum(1.0, np.where(np.isfinite(U), U, 0.0).max(axis=1))
        shape = U.shape
        self.du, self.dc, self.db = np.empty(shape), np.empty(shape), np.empty(shape)
        self.dg = np.empty(shape, dtype=Gm.dtype)
        self.ratio, self.dratio = np.empty(shape), np.empty(shape)
        m = shape[0]
        self.up, self.up_ratio = np.zeros(m, dtype=np.int64), np.zeros(m)
        self.down, self.down_ratio = np.zeros(m, dtype=np.int64), np.zeros(m)
        self.refresh(np.arange(m))

    def refresh(self, r: np.ndarray) -> None:
        """Recompute the rows ``r`` from their current columns."""
        c = self.cols[r]
        k = np.arange(len(r))
        U, cost, Gm, rem = self.U[r], self.cost[r], self.Gm[r], self.rem[r]
        du = U - U[k, c][:, None]
        dc = cost - cost[k, c][:, None]
        dg = Gm - Gm[k, c][:, None]
        db = rem - rem[k, c][:, None]
        weight = self.wm * dc + self.wg * dg
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(weight > 0, du / weight, np.inf)
            ratio = np.where(du > self.tiny[r][:, None], ratio, -np.inf)
            save = -weight
            down = ((dc < 0) | (dg < 0)) & np.isfinite(U) & (save > 0)
            dratio = np.where(down, np.maximum(-du, 0.0) / save, np.inf)
        self.du[r], self.dc[r], self.dg[r], self.db[r] = du, dc, dg, db
        self.ratio[r], self.dratio[r] = ratio, dratio
        up = ratio.argmax(axis=1)
        dn = dratio.argmin(axis=1)
        self.up[r], self.up_ratio[r] = up, ratio[k, up]
        self.down[r], self.down_ratio[r] = dn, dratio[k, dn]

    def move(self, jobs: list[int] | np.ndarray, options: list[int] | np.ndarray) -> None:
        """Set the jobs' columns and refresh their rows."""
        self.cols[jobs] = options
        self.refresh(np.asarray(jobs, dtype=np.int64))

    def _first_enough(
        self, others: np.ndarray, oc: np.ndarray, need_c: float, need_g: float, need_b: float
    ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
        """The least p such that the first p + 1 downgrades free ``need_*``, and the running sums of what they free.

        The sums are taken over a prefix that doubles until it suffices (an exchange usually needs a few
        downgrades, not all of them); a prefix of a running sum is the running sum of the prefix, so
        p and the sums are those over all the downgrades.  None when even all of them do not suffice.
        """
        length = 16
        while True:
            head, hc = others[:length], oc[:length]
            cum_c = np.cumsum(-self.dc[head, hc])
            cum_g = np.cumsum(-self.dg[head, hc])
            cum_b = np.cumsum(-self.db[head, hc])
            ok = (cum_c >= need_c) & (cum_g >= need_g) & (cum_b >= need_b)
            if ok.any():
                return int(np.argmax(ok)), cum_c, cum_g, cum_b
            if length >= others.size:
                return None
            length *= 4

    def exchange(self, room: float, room_g: float, room_b: float) -> tuple[float, float, float] | None:
        """The best upgrade that does not fit, paid for by the cheapest downgrades of other jobs, if it gains.

        Downgrades are taken in increasing utility lost per unit of cost saved until they free what the
        upgrade lacks in money, GPUs and remote IO; the exchange is made only if the utility gained exceeds
        the utility lost.  Returns the limits left, or None when no exchange among the best four gains.
        """
        dval = self.down_ratio
        order = np.argsort(dval, kind="stable")
        order = order[np.isfinite(dval[order])]
        if order.size == 0:
            return None
        rows = np.arange(self.U.shape[0])
        up = self.up
        gain = self.du[rows, up]
        need_w = self.wm * np.maximum(self.dc[rows, up] - room, 0.0) + self.wg * np.maximum(
            self.dg[rows, up] - room_g, 0
        )
        # Every exchange loses at least the least downgrade ratio per unit of cost it must free.
        hopeful = (self.up_ratio > -np.inf) & (float(dval[order[0]]) * need_w < gain)
        if not hopeful.any():
            return None
        best_up = np.where(hopeful, self.up_ratio, -np.inf)
        dn = self.down
        for j in np.argsort(-best_up, kind="stable")[:4]:
            if not best_up[j] > -np.inf:
                break
            o = int(up[j])
            need_c = self.dc[j, o] - room
            need_g = int(self.dg[j, o]) - room_g
            need_b = self.db[j, o] - room_b
            others = order[order != j]
            oc = dn[others]
            found = self._first_enough(others, oc, need_c, need_g, need_b)
            if found is None:
                continue
            p, cum_c, cum_g, cum_b = found
            lost = float(-self.du[others[: p + 1], oc[: p + 1]].sum())
            if not lost < gain[j] * (1.0 - 1e-9):
                continue
            freed = (float(cum_c[p]), int(cum_g[p]), float(cum_b[p]))
            left = (
                room + freed[0] - float(self.dc[j, o]),
                room_g + freed[1] - int(self.dg[j, o]),
                room_b + freed[2] - float(self.db[j, o]),
            )
            self.move(np.append(others[: p + 1], j), np.append(oc[: p + 1], o))
            return left
        return None
