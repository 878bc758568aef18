"""The Lagrangian certificate of AutoCBA: a proven upper bound on the P2 optimum (proofs/autocba_certificate.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from cbalab.algorithms.autocba.limits import _BOUND_SLACK, _HUGE, _TINY, fits_alone
from cbalab.models.instance import Instance

#: Rows of the option tables one step of a dual evaluation works on: its temporaries stay in the processor's cache.
_BLOCK = 2048


class Multipliers(NamedTuple):
    """The Lagrange multipliers of the certificate: μ budget, ν GPUs, λ cache, β bandwidth."""

    budget: float
    gpus: float
    cache: float
    bandwidth: float


@dataclass
class Certificate:
    """A proven upper bound on the P2 optimum and the multipliers that give it (proofs/autocba_certificate.md).

    ``multipliers`` are (μ budget, ν GPUs, λ cache, β bandwidth); ``evaluations``
    counts the dual evaluations spent.
    """

    bound: float
    multipliers: Multipliers
    evaluations: int


class Dual:
    """The Lagrangian dual L(μ, ν, λ, β) of P2 (Theorem D of proofs/autocba_certificate.md), vectorised.

    For fixed multipliers the relaxed problem separates by dataset; within a
    dataset the value is convex in the hit ratio h ∈ [0, h̄_k], h̄_k =
    min(1, C/d_k) (the cache one dataset can ever hold), so h ∈ {0, h̄_k}
    suffices, and for fixed h each job takes its best option (or none)
    independently.

    ``U``, ``G`` and ``R`` are the padded option tables (one row per job,
    column 0 "none" at 0, option o of job j at column o − ptr_j + 1, padding
    and options that do not fit alone at U = −inf): the one place that turns
    an instance's options into the tables that the certificate, the exact
    search and online AutoCBA work on.
    """

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        keep = fits_alone(inst, _BOUND_SLACK)
        rows = inst.option_job()
        counts = np.bincount(rows, minlength=inst.n_jobs)
        width = int(counts.max(initial=0)) + 1
        col = np.arange(rows.size) - inst.option_ptr[rows] + 1
        n = inst.n_jobs
        self.U = np.full((n, width), -np.inf)
        self.U[:, 0] = 0.0
        self.G = np.zeros((n, width))
        self.R = np.zeros((n, width))
        self.U[rows[keep], col[keep]] = inst.option_utility[keep]
        self.G[rows, col] = inst.option_gpus
        self.R[rows, col] = inst.option_io_gbps
        self.rhs = (
            inst.budget_per_hour,
            math.inf if inst.gpus is None else float(inst.gpus),
            inst.cache_gb,
            inst.bandwidth_gbps,
        )
        self.top = float(self.U.max(axis=1).sum())
        self.hbar = np.minimum(1.0, inst.cache_gb / inst.dataset_size_gb)
        self.miss = (1.0 - self.hbar[inst.job_dataset])[:, None]
        self.count = 0
        # Work tables of one block of rows, made once: fresh (n × width) temporaries at every evaluation fell
        # out of the processor's cache and grew faster than the instance; the arithmetic is the same.
        self._rows = np.arange(n)
        block = (min(n, _BLOCK), width)
        self._base, self._v0, self._v1 = np.empty(block), np.empty(block), np.empty(block)
        self._best = (np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp), np.empty(n), np.empty(n))

    def value(self, x: np.ndarray, utility: np.ndarray) -> float:
        """L at multipliers ``x`` with the table ``utility`` in place of U (−inf forbids an entry; column 0 is none).

        Restricting the table restricts P2 to the choices it allows, and L is still an upper bound on the
        restricted optimum (weak duality, Theorem D): the exact search of algorithms/autocba/exact.py prunes
        with it.
        """
        inst = self.inst
        mu, nu, lam, beta = (float(v) for v in x)
        base = utility - (mu * inst.price_gpu + nu) * self.G
        e = mu * inst.price_bandwidth + beta
        f0 = (base - e * self.R).max(axis=1)
        f1 = (base - (e * self.miss) * self.R).max(axis=1)
        s0 = np.bincount(inst.job_dataset, weights=f0, minlength=inst.n_datasets)
        held = inst.dataset_size_gb * self.hbar * (mu * inst.price_cache + lam)
        s1 = np.bincount(inst.job_dataset, weights=f1, minlength=inst.n_datasets) - held
        value = float(np.maximum(s0, s1).sum())
        for m, rhs in zip((mu, nu, lam, beta), self.rhs):
            if m > 0:
                value += m * rhs
        return value

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """L at multipliers ``x`` = (μ, ν, λ, β) ≥ 0 and a subgradient (RHS minus the relaxed left-hand sides)."""
        inst = self.inst
        self.count += 1
        mu, nu, lam, beta = (float(v) for v in x)
        a = mu * inst.price_gpu + nu
        e = mu * inst.price_bandwidth + beta
        i0, i1, f0, f1 = self._best
        em = e * self.miss
        for start in range(0, inst.n_jobs, _BLOCK):
            part = slice(start, start + _BLOCK)
            U, G, R = self.U[part], self.G[part], self.R[part]
            size = U.shape[0]
            base, v0, v1 = self._base[:size], self._v0[:size], self._v1[:size]
            np.subtract(U, np.multiply(G, a, out=base), out=base)  # U − a G
            np.subtract(base, np.multiply(R, e, out=v1), out=v0)  # U − a G − e R
            np.subtract(base, np.multiply(R, em[part], out=v1), out=v1)  # U − a G − (e (1 − h̄)) R
            here = self._rows[:size]
            i0[part] = c0 = v0.argmax(axis=1)
            i1[part] = c1 = v1.argmax(axis=1)
            f0[part] = v0[here, c0]
            f1[part] = v1[here, c1]
        rows = self._rows
        d = inst.dataset_size_gb
        s0 = np.bincount(inst.job_dataset, weights=f0, minlength=inst.n_datasets)
        held = d * self.hbar
        s1 = np.bincount(inst.job_dataset, weights=f1, minlength=inst.n_datasets) - held * (mu * inst.price_cache + lam)
        h = s1 > s0
        value = float(np.maximum(s0, s1).sum())
        for m, rhs in zip((mu, nu, lam, beta), self.rhs):
            if m > 0:
                value += m * rhs
        hj = h[inst.job_dataset]
        pick = np.where(hj, i1, i0)
        g = self.G[rows, pick]
        remote = self.R[rows, pick] * np.where(hj, self.miss[:, 0], 1.0)
        cache = float(held[h].sum())
        spend = inst.price_gpu * float(g.sum()) + inst.price_cache * cache + inst.price_bandwidth * float(remote.sum())
        lhs = (spend, float(g.sum()), cache, float(remote.sum()))
        sub = np.array([rhs - v for rhs, v in zip(self.rhs, lhs)])
        return value, sub


def welfare_bound(inst: Instance, *, rounds: int | None = None, steps: int = 30) -> Certificate:
    """A proven upper bound on the optimum of P2 (docs/model.md §5): Theorem D of proofs/autocba_certificate.md.

    Minimises the Lagrangian dual over its multipliers by cyclic coordinate
    bisection on the sign of the subgradient (``rounds`` cycles, by default 8
    up to 20,000 options and 3 above; ``steps`` bisections each); every
    evaluated point is a valid bound, the least is kept, and it is also capped
    by Σ_j max_g U_j(g).  A relative 1e-9 margin
    covers floating-point rounding.  O(``rounds`` · ``steps`` · options).
    """
    inst.require_options()
    if rounds is None:
        rounds = 8 if inst.option_gpus.size <= 20_000 else 3
    dual = Dual(inst)
    if inst.n_jobs == 0:
        return Certificate(0.0, Multipliers(0.0, 0.0, 0.0, 0.0), 0)
    x = np.zeros(4)
    best_value, _ = dual(x)
    best_x = x.copy()
    active = [t for t in range(4) if math.isfinite(dual.rhs[t])]
    scale = [dual.top / rhs if 0 < rhs < math.inf else 1.0 for rhs in dual.rhs]

    def probe(y: np.ndarray) -> np.ndarray:
        nonlocal best_value, best_x
        value, s = dual(y)
        if value < best_value:
            best_value, best_x = value, y.copy()
        return s

    for _ in range(rounds):
        for t in active:
            y = best_x.copy()
            y[t] = 0.0
            if probe(y)[t] >= 0:
                continue
            lo, hi = _bracket(probe, y, t, min(max(best_x[t], scale[t], _TINY), _HUGE))
            for _ in range(steps):
                y[t] = 0.5 * (lo + hi)
                if probe(y)[t] >= 0:
                    hi = y[t]
                else:
                    lo = y[t]
    bound = min(best_value, dual.top)
    bound += 1e-9 * (1.0 + abs(bound))
    return Certificate(bound, Multipliers(*(float(v) for v in best_x)), dual.count)


def _bracket(probe: Callable[[np.ndarray], np.ndarray], y: np.ndarray, t: int, start: float) -> tuple[float, float]:
    """[lo, hi] with a negative subgradient in coordinate t at lo (or lo = 0) and a non-negative one at hi.

    Doubles or halves from ``start`` (a point of the right magnitude), so the
    bisection that follows has relative precision whatever the units.
    """
    y[t] = start
    if probe(y)[t] >= 0:
        hi = start
        for _ in range(60):
            y[t] = hi / 2.0
            if probe(y)[t] < 0:
                return hi / 2.0, hi
            hi /= 2.0
        return 0.0, hi
    lo = start
    while lo < _HUGE:
        y[t] = min(2.0 * lo, _HUGE)
        if probe(y)[t] >= 0:
            return lo, y[t]
        lo = y[t]
    return lo, _HUGE
