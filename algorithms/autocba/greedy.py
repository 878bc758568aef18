"""AutoCBA's greedy: moves by utility per unit of true marginal cost, group moves (proofs/autocba_guarantee.md)."""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cbalab.algorithms.autocba.feeder import _Feeder
from cbalab.algorithms.autocba.limits import _SAFE
from cbalab.algorithms.cba import feed
from cbalab.models.instance import Instance


class Weights(NamedTuple):
    """One greedy run's unit of cost: weights of Δ dollars, Δ GPUs, Δ remote IO and Δ rate (driver._weightings)."""

    dollars: float
    gpus: float
    remote: float
    rate: float


@dataclass
class _Candidate:
    ratio: float
    gain: float
    moves: list[tuple[int, int]]  # (job, option row)
    dcost: float
    dgpu: int
    drate: float
    priced: tuple | None  # incremental pricing, or None when a full CBA solve priced it (cache in ``full``)
    full: np.ndarray | None = None
    cached: bool = False  # a single job on a fully cached dataset: its pricing holds while k stays cached


class _Greedy:
    """One greedy run (step 2-3 of the module docstring) with weights (dollars, GPUs, remote IO)."""

    def __init__(self, inst: Instance, keep: np.ndarray, weights: Weights, group_moves: bool) -> None:
        self.inst = inst
        self.w = weights
        self.group_moves = group_moves
        self.p_g = inst.price_gpu
        self.budget = inst.budget_per_hour + _SAFE * max(1.0, inst.budget_per_hour)
        self.G = math.inf if inst.gpus is None else inst.gpus
        self.jd = inst.job_dataset.tolist()
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((inst.option_utility[rows], inst.option_job()[rows]))]
        self.opts: list[list[int]] = [[] for _ in range(inst.n_jobs)]
        for o, j in zip(order.tolist(), inst.option_job()[order].tolist()):
            self.opts[j].append(o)
        self.og = inst.option_gpus.tolist()
        self.orate = inst.option_io_gbps.tolist()
        self.ou = inst.option_utility.tolist()
        self.jobs_of: list[list[int]] = [[] for _ in range(inst.n_datasets)]
        for j, k in enumerate(self.jd):
            self.jobs_of[k].append(j)
        self.choice = [-1] * inst.n_jobs
        self.rates = np.zeros(inst.n_jobs)
        self.gpus_used = 0
        self.welfare = 0.0
        self.feeder = _Feeder(inst, np.zeros(inst.n_datasets), np.zeros(inst.n_datasets))
        self.version_job = [0] * inst.n_jobs
        self.version_set = [0] * inst.n_datasets
        self.set_live = [False] * inst.n_datasets
        self.group_wait = [0] * inst.n_datasets
        self.stored: dict[int, _Candidate] = {}
        self.heap: list = []
        self.heap_ready = True  # False while run() fills the heap, heapified once at the end (O(n), not O(n log n))
        self.seq = 0

    # -- state of one job
    def _cur(self, j: int) -> tuple[float, int, float]:
        o = self.choice[j]
        return (0.0, 0, 0.0) if o < 0 else (self.ou[o], self.og[o], self.orate[o])

    def cost(self) -> float:
        """Tracked total cost $/h: GPUs plus the current (feasible) feeding."""
        return self.p_g * self.gpus_used + self.feeder.io_cost

    def _weight(self, dcost: float, dgpu: int, drem: float, drate: float) -> float:
        return self.w[0] * dcost + self.w[1] * dgpu + self.w[2] * drem + self.w[3] * drate

    def _price(self, k: int, dR: float, jobs: list[tuple[int, int]]) -> tuple | None:
        """(ΔF, Δremote, incremental pricing or None, full cache or None) of raising R_k by dR with these moves."""
        priced = self.feeder.change(k, dR)
        if priced is not None:
            return priced[0], priced[1], priced, None
        if not math.isfinite(self.feeder.B):
            return None
        rates = self.rates.copy()
        for j, o in jobs:
            rates[j] = self.orate[o]
        f = feed(self.inst, rates, bound=False)
        if f.cache_gb is None or f.bandwidth_gbps is None:
            return None
        remote = float(f.bandwidth_gbps.sum())
        if remote > self.feeder.B_lim:
            return None
        return f.io_cost - self.feeder.io_cost, remote - self.feeder.remote, None, f.cache_gb

    def job_candidate(self, j: int) -> _Candidate | None:
        """Job j's best jump by utility per unit of marginal cost among those that fit now.

        A jump that keeps k's cache as it is (k fully cached, or the rate does
        not rise) is priced inline: p_b ΔR (1 − h_k) of bandwidth, exactly what
        :meth:`_Feeder.change` returns for it.
        """
        o0 = self.choice[j]
        ou, og, orate = self.ou, self.og, self.orate
        if o0 < 0:
            u0, g0, r0 = 0.0, 0, 0.0
        else:
            u0, g0, r0 = ou[o0], og[o0], orate[o0]
        k = self.jd[j]
        feeder = self.feeder
        miss = 1.0 - feeder.c[k] / feeder.d[k]
        p_g, p_b = self.p_g, feeder.p_b
        w0, w1, w2, w3 = self.w
        room_money = self.budget - (p_g * self.gpus_used + feeder.io_cost)
        room_gpus = self.G - self.gpus_used
        room_remote = feeder.B_lim - feeder.remote
        best = None
        best_key = (-math.inf, 0.0)
        for o in self.opts[j]:
            du = ou[o] - u0
            if du <= 0:
                continue
            dg = og[o] - g0
            if dg > room_gpus:
                continue
            dR = orate[o] - r0
            if (miss <= 0.0 or dR <= 0.0) and dR * miss <= room_remote:
                dF = p_b * dR * miss
                no_moves: list[tuple[int, float]] = []
                priced = (dF, dR * miss, 0.0, no_moves)
                drem, full = priced[1], None
            else:
                res = self._price(k, dR, [(j, o)])
                if res is None:
                    continue
                dF, drem, priced, full = res
            dcost = p_g * dg + dF
            if dcost > room_money:
                continue
            wgt = w0 * dcost + w1 * dg + w2 * drem + w3 * dR
            ratio = du / wgt if wgt > 0 else math.inf
            if (ratio, du) > best_key:
                best_key = (ratio, du)
                best = (o, dcost, dg, dR, priced, full)
        if best is None:
            return None
        o, dcost, dg, dR, priced, full = best
        return _Candidate(best_key[0], best_key[1], [(j, o)], dcost, dg, dR, priced, full, miss <= 0.0)

    def group_candidate(self, k: int) -> _Candidate | None:
        """Dataset k's best joint move: a prefix of its jobs' upgrades, priced with the joint feeding change."""
        jobs = self.jobs_of[k]
        if len(jobs) < 2 or self.feeder.c[k] >= self.feeder.d[k]:
            return None
        items = []
        for j in jobs:
            u0, g0, r0 = self._cur(j)
            best = None
            for o in self.opts[j]:
                du = self.ou[o] - u0
                if du <= 0:
                    continue
                dg = self.og[o] - g0
                wgt = self._weight(self.p_g * dg, dg, 0.0, 0.0)
                ratio = du / wgt if wgt > 0 else math.inf
                if best is None or (ratio, du) > best[:2]:
                    best = (ratio, du, dg, self.orate[o] - r0, j, o)
            if best is not None:
                items.append(best)
        if len(items) < 2:
            return None
        items.sort(key=lambda t: (-t[0], -t[1]))
        base = self.cost()
        out: _Candidate | None = None
        du = dR = 0.0
        dg = 0
        sizes = _prefix_sizes(len(items))
        m_prev = 0
        moves: list[tuple[int, int]] = []  # the prefix's moves, grown with it (copied only into a candidate)
        for m in sizes:
            for t in items[m_prev:m]:
                du += t[1]
                dg += t[2]
                dR += t[3]
                moves.append((t[4], t[5]))
            m_prev = m
            if self.gpus_used + dg > self.G:
                break
            priced = self._price(k, dR, moves)
            if priced is None:
                continue
            dF, drem, inc, full = priced
            if inc is not None and inc[2] <= 0:
                continue  # no cache gained: the members' single moves price this exactly
            dcost = self.p_g * dg + dF
            if base + dcost > self.budget:
                continue
            wgt = self._weight(dcost, dg, drem, dR)
            ratio = du / wgt if wgt > 0 else math.inf
            if out is None or (ratio, du) > (out.ratio, out.gain):
                out = _Candidate(ratio, du, list(moves), dcost, dg, dR, inc, full)
        return out

    # -- the heap
    def push_job(self, j: int) -> None:
        self.version_job[j] += 1
        cand = self.job_candidate(j)
        if cand is not None:
            self._push(cand, 0, j, self.version_job[j])
            if cand.cached:
                self.stored[j] = cand

    def push_set(self, k: int) -> None:
        self.version_set[k] += 1
        self.set_live[k] = False
        if self.group_moves:
            cand = self.group_candidate(k)
            if cand is not None:
                self.set_live[k] = True
                self._push(cand, 1, k, self.version_set[k])
            else:  # no joint move gains cache now: look again after a quarter of k's jobs moved
                self.group_wait[k] = max(1, len(self.jobs_of[k]) // 4)

    def _push(self, cand: _Candidate, kind: int, ident: int, version: int) -> None:
        self.seq += 1
        entry = (-cand.ratio, -cand.gain, self.seq, kind, ident, version)
        if self.heap_ready:
            heapq.heappush(self.heap, entry)
        else:
            self.heap.append(entry)

    def apply(self, cand: _Candidate) -> None:
        """Commit a candidate: options, GPUs, welfare and the feeding (incremental or the full CBA re-feed)."""
        k = self.jd[cand.moves[0][0]]
        for j, o in cand.moves:
            self.choice[j] = o
            self.rates[j] = self.orate[o]
        self.gpus_used += cand.dgpu
        self.welfare += cand.gain
        if cand.priced is not None:
            changed = self.feeder.apply(k, cand.drate, cand.priced)
        else:
            assert cand.full is not None  # a move not priced incrementally carries its full CBA cache
            demand = self.inst.dataset_demand(self.rates)
            self.feeder.reset(cand.full, demand)
            changed = True
        touched = {j for j, _ in cand.moves}
        if changed:
            touched.update(self.jobs_of[k])
        for j in touched:
            self.push_job(j)
        self.group_wait[k] -= 1
        if changed or (not self.set_live[k] and self.group_wait[k] <= 0):
            self.push_set(k)

    def run(self) -> None:
        """Greedy to exhaustion (lazy re-pricing: a popped move is re-priced and kept only if still the best)."""
        self.heap = []
        self.stored = {}
        self.heap_ready = False
        for j in range(self.inst.n_jobs):
            self.push_job(j)
        for k in range(self.inst.n_datasets):
            self.push_set(k)
        heapq.heapify(self.heap)  # the pops' order is the keys' (seq breaks every tie), however the heap was built
        self.heap_ready = True
        while self.heap:
            _, _, _, kind, ident, version = heapq.heappop(self.heap)
            if version != (self.version_job[ident] if kind == 0 else self.version_set[ident]):
                continue
            if kind == 1:
                self.set_live[ident] = False
                cand = self.group_candidate(ident) if self.group_moves else None
            else:
                cand = self.stored.pop(ident, None)
                if cand is None or not self._still_valid(cand):
                    cand = self.job_candidate(ident)
            if cand is None:
                continue
            if self.heap and (cand.ratio, cand.gain) < (-self.heap[0][0], -self.heap[0][1]):
                self._push(cand, kind, ident, version)
                if kind == 1:
                    self.set_live[ident] = True
                continue
            self.apply(cand)

    def _still_valid(self, cand: _Candidate) -> bool:
        """A stored jump on a fully cached dataset is still exact and best while k stays cached and it fits."""
        k = self.jd[cand.moves[0][0]]
        if self.feeder.c[k] < self.feeder.d[k]:
            return False
        if self.gpus_used + cand.dgpu > self.G:
            return False
        return self.p_g * self.gpus_used + self.feeder.io_cost + cand.dcost <= self.budget

    def resync(self) -> bool:
        """The CBA pass: feed the chosen options at least cost; adopt that feeding if it is cheaper (then True)."""
        f = feed(self.inst, self.rates, bound=False)
        if f.cache_gb is None or f.io_cost >= self.feeder.io_cost * (1.0 - 1e-12):
            return False
        self.feeder.reset(f.cache_gb, self.inst.dataset_demand(self.rates))
        return True

    def clone(self) -> _Greedy:
        """An independent copy of the state (options, feeding), with an empty heap: a trial that costs nothing."""
        c = object.__new__(_Greedy)
        c.__dict__.update(self.__dict__)
        c.opts = list(self.opts)
        c.choice = list(self.choice)
        c.rates = self.rates.copy()
        c.version_job = list(self.version_job)
        c.version_set = list(self.version_set)
        c.set_live = list(self.set_live)
        c.group_wait = list(self.group_wait)
        c.heap = []
        c.stored = {}
        c.feeder = self.feeder.copy()
        return c

    def adopt(self, other: _Greedy) -> None:
        """Take over the state of ``other`` (a successful trial of :meth:`clone`)."""
        self.__dict__.update(other.__dict__)

    def drop(self, j: int) -> None:
        """Put job j back to no GPUs (its bandwidth is released; the cache stays, the next CBA pass trims it)."""
        o = self.choice[j]
        if o < 0:
            return
        k = self.jd[j]
        dR = -self.orate[o]
        priced = self.feeder.change(k, dR)
        if priced is None:  # lowering demand never raises remote IO; kept for safety of the invariant
            return
        self.feeder.apply(k, dR, priced)
        self.choice[j] = -1
        self.rates[j] = 0.0
        self.gpus_used -= self.og[o]
        self.welfare -= self.ou[o]


def _prefix_sizes(n: int) -> list[int]:
    """Prefix lengths a group move tries: 2..16 each, then geometric, then all."""
    sizes = list(range(2, min(n, 16) + 1))
    m = 16
    while m < n:
        m = min(n, int(m * 1.5))
        sizes.append(m)
    return sizes
