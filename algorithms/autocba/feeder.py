"""Incremental least feeding cost of a demand change: CBA's threshold rule without a re-solve.

Why it is exact and why sharing a cached dataset gets cheaper: proofs/feeding_cost_concave.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from cbalab.algorithms.autocba.limits import _SAFE
from cbalab.models.instance import Instance


class Change(NamedTuple):
    """What raising one dataset's demand does: Δ io cost ($/h), Δ remote IO (Gbps), cache added (GB), displaced."""

    io_cost: float
    remote_gbps: float
    cache_added_gb: float
    displaced: list[tuple[int, float]]


class _Feeder:
    """A feasible feeding of the current demands and its exact cost, updated move by move.

    The state is a cache vector c (Σ c ≤ C) whose least bandwidth
    b_j = r_j (1 − c_k/d_k) keeps every job unstalled within B; ``io_cost`` is
    its exact cost p_c Σ c + p_b Σ b.  :meth:`change` prices raising R_k by
    ΔR as CBA's threshold rule would re-feed it (proofs/feeding_cost_concave.md,
    Lemma 2): keep the cache, pay p_b ΔR (1 − h_k) more bandwidth, and if k's
    new IO density makes caching pay (p_b ρ_k > p_c) extend k's cache from free
    capacity, then by displacing cached bytes of lower density, lowest first.
    Starting from CBA's optimum this is the exact optimum of the new demands;
    from any other state it is a feasible feeding, so the tracked cost is always
    an upper bound on the least one, which the final CBA pass only lowers.
    """

    def __init__(self, inst: Instance, cache: np.ndarray, demand: np.ndarray) -> None:
        self.p_c, self.p_b = inst.price_cache, inst.price_bandwidth
        self.C, self.B = inst.cache_gb, inst.bandwidth_gbps
        # CBA's cap phase meets B with equality: allow float slack far inside the referee's (models/evaluate.RTOL)
        self.B_lim = self.B + _SAFE * max(1.0, self.B)
        self.d = inst.dataset_size_gb.tolist()
        self._d = np.asarray(inst.dataset_size_gb, dtype=float)
        #: Datasets whose cache no move displaces (partial enumeration's cache fix, algorithms/autocba/enumerate.py).
        self.pinned: set[int] = set()
        self.reset(cache, demand)

    def reset(self, cache: np.ndarray, demand: np.ndarray) -> None:
        """Adopt the feeding with cache ``cache`` of demands ``demand`` (e.g. CBA's optimum)."""
        d = self._d
        # c and R twice: lists for the moves' scalar reads, arrays (kept equal by :meth:`apply`) for
        # :meth:`profile`, so that a rebuild never converts K Python floats (it did, quadratic at 100k jobs).
        self._c = np.minimum(np.asarray(cache, dtype=float), d)
        self._R = np.array(demand, dtype=float)
        self.c = self._c.tolist()
        self.R = self._R.tolist()
        self.free = max(0.0, self.C - float(np.sum(self.c)))
        self.remote = float(np.dot(demand, 1.0 - self._c / d))
        self.io_cost = self.p_c * float(np.sum(self.c)) + self.p_b * self.remote
        self._profile = _Profile(np.zeros(0, dtype=np.int64), np.zeros(0))
        self._stale = -1

    def copy(self) -> _Feeder:
        """An independent copy of the state (the pinned set and the profile are shared: neither changes)."""
        f = object.__new__(_Feeder)
        f.__dict__.update(self.__dict__)
        f.c, f.R = list(self.c), list(self.R)
        f._c, f._R = self._c.copy(), self._R.copy()
        return f

    def _density(self, i: int) -> float:
        return self.p_b * self.R[i] / self.d[i] - self.p_c

    def profile(self) -> _Profile:
        """Cached datasets in increasing IO density (rebuilt when the cached set changed or every 32 moves)."""
        if self._stale < 0 or self._stale >= 32:
            ks = np.flatnonzero(self._c > 0)
            if self.pinned:
                ks = ks[~np.isin(ks, list(self.pinned))]
            self._profile = _Profile(ks, self.p_b * self._R[ks] / self._d[ks])
            self._stale = 0
        return self._profile

    def change(self, k: int, dR: float) -> Change | None:
        """Price raising R_k by ``dR``: (Δ io cost, Δ remote IO, cache added to k, displaced [(i, GB)]).

        None when the resulting remote IO would exceed B.
        """
        ck, dk = self.c[k], self.d[k]
        hk = ck / dk
        dF = self.p_b * dR * (1.0 - hk)
        drem = dR * (1.0 - hk)
        added = 0.0
        moved: list[tuple[int, float]] = []
        if dR > 0 and ck < dk:
            Rn = self.R[k] + dR
            dens = self.p_b * Rn / dk - self.p_c
            if dens > 0:
                rho = Rn / dk
                room = dk - ck
                added = min(room, self.free)
                dF -= added * dens
                drem -= added * rho
                room -= added
                if room > 1e-12 * dk:
                    for i in self.profile():
                        ci = self.c[i]
                        if i == k or ci <= 0:
                            continue
                        di = self._density(i)
                        if di >= dens:
                            break
                        x = min(ci, room)
                        dF -= x * (dens - di)
                        drem -= x * (rho - self.R[i] / self.d[i])
                        moved.append((i, x))
                        added += x
                        room -= x
                        if room <= 1e-12 * dk:
                            break
        if self.remote + drem > self.B_lim:
            return None
        return Change(dF, drem, added, moved)

    def apply(self, k: int, dR: float, priced: tuple[float, float, float, list[tuple[int, float]]]) -> bool:
        """Commit a priced change; True when the cached set changed (jobs on k then re-price)."""
        dF, drem, added, moved = priced
        before = self.c[k]
        self.R[k] += dR
        self.c[k] = min(self.d[k], before + added)
        self._R[k], self._c[k] = self.R[k], self.c[k]
        self.free = max(0.0, self.free - (added - sum(x for _, x in moved)))
        for i, x in moved:
            self.c[i] = max(0.0, self.c[i] - x)
            self._c[i] = self.c[i]
        self.remote += drem
        self.io_cost += dF
        changed = bool(moved) or (before == 0.0) != (self.c[k] == 0.0)
        if changed:
            self._stale = -1
        elif dR != 0 and self.c[k] > 0:
            self._stale += 1
        return changed or added > 0


class _Profile:
    """Datasets ``ks`` in increasing ``dens`` (ties by index: a stable sort), sorted only as far as it is read.

    A move displaces the cached bytes of lowest density first and stops at the first density at least its
    own (:meth:`_Feeder.change`), so it reads a short prefix; sorting all cached datasets at every rebuild
    made AutoCBA quadratic at 100,000 jobs.  The prefix of the first t is exactly that of the full
    stable sort: the datasets of density at most the t-th smallest, in stable order.
    """

    def __init__(self, ks: np.ndarray, dens: np.ndarray) -> None:
        self.ks, self.dens = ks, dens
        self.head: list[int] = []
        self.complete = ks.size == 0

    def _extend(self) -> None:
        t = max(64, 4 * len(self.head))
        if t >= self.ks.size:
            self.head = self.ks[np.argsort(self.dens, kind="stable")].tolist()
            self.complete = True
            return
        v = np.partition(self.dens, t - 1)[t - 1]
        sel = np.flatnonzero(self.dens <= v)
        self.head = self.ks[sel[np.argsort(self.dens[sel], kind="stable")]].tolist()
        self.complete = sel.size == self.ks.size

    def __iter__(self) -> Iterator[int]:
        i = 0
        while True:
            head = self.head
            while i < len(head):
                yield head[i]
                i += 1
            if self.complete:
                return
            self._extend()
