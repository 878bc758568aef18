"""P3, the dynamic cost problem with cache warm-up (docs/model.md §6), as an LP over a replay's schedule.

With fixed GPUs and no stalls, which jobs run when does not depend on the
cache decisions (proofs/dynamic_lower_bound.md, Lemma 1), so a replay fixes
the *schedule*: slot boundaries T_0 < … < T_S (every job start and end, and
every re-allocation tick) and the demand R_{k,t} = Σ_{j on k running in t} r_j
of every dataset in every slot.  P3 chooses, per dataset k and slot t,

* y_{k,t} ∈ [0, 1]  the allocated (paid) cache, as a fraction of d_k;
* u_{k,t} ∈ [0, 1]  the time-average filled cache over the slot, a fraction of d_k;
* e_{k,t} ∈ [0, 1]  the filled cache at the slot's end T_{t+1}, before any eviction;
* b_{k,t} ∈ [0, R_{k,t}]  the time-average remote read rate (GB/s),

and minimises Σ_t Δ_t/3600 · Σ_k (p_c d_k y_{k,t} + p_b b_{k,t}), the IO cost in $
the simulator charges (cache on allocated capacity, bandwidth on what is read).
Each group of constraints is stated once, by one row function (models/milp/statement.py, :func:`p3_statement`);
each states an inequality that every trajectory of the simulator satisfies (proofs/dynamic_lower_bound.md,
Lemma 2 and Lemma 3), so the optimum is a lower bound on the IO cost of every online policy (Theorem 1 there):

* columns                   y, u, b ∈ [0, R] (the simulator reads only what jobs miss), e with warm-up, and
                            the whole blocks n (or whole datasets y) under the integer variants;
* :func:`served_in_blocks`  d y ≤ u_b n under blocks;
* :func:`feed`              b ≥ R (1 − u), the time average of b(s) ≥ R (1 − f(s)/d);
* :func:`filled_paid`, :func:`end_paid`   u ≤ y and e ≤ y (filled ≤ allocated, targets held over a slot);
* :func:`fill_end`, :func:`fill_mean`, :func:`fill_end_mean`, :func:`fill_held`   fill grows only by reads:
                            e ≤ e⁻ + Δ b / d, and for the tangents θ of :func:`tangents`
                            u ≤ e⁻ + (1−θ) Δ b / d + θ² Δ R / (2d),
                            e ≤ u + (1−θ) Δ b / d + θ² Δ R / (2d) and u ≤ (1−θ) y + θ e⁻ + θ² Δ R / (2d)
                            (e⁻ the previous slot's end fill; one group per tangent, suffixed _0, _1, …);
* :func:`cache_capacity`, :func:`bandwidth_capacity`   Σ_k d_k y_{k,t} ≤ C and Σ_k b_{k,t} ≤ B in every slot;
* the objective above, in the columns' costs.

``warmup=False`` drops the fill rows and e (instant caches): the LP then decomposes by slot into P1 and its
optimum equals online CBA's replay cost (Theorem 2 of proofs/dynamic_lower_bound.md).  ``relax=True`` drops
integrality under the integer cache variants.

The cache enters as hit ratios (fractions of d_k), as in models/milp/cost.py: the feeding rows then carry
R_{k,t} and not R_{k,t}/d_k, which HiGHS would drop when it is below 1e-9.

The statement has two derived emitters: :func:`build_dynamic_model` (Pyomo, to read) and :func:`matrix` (the
compiled rows, handed to highspy by :func:`solve_dynamic`; models/milp/p3_lagrange.py decomposes the large
ones by datasets).  The matrix solve certifies its answer: ``bound`` is the Lagrangian value of HiGHS's row
duals evaluated in numpy, a lower bound on P3 whatever the solver's tolerances.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyomo.environ as pyo

from cbalab.models.certify import tolerance
from cbalab.models.instance import InstanceError
from cbalab.models.kernels import exact_dot
from cbalab.models.milp.statement import Arrays, Rows, Statement, group, stack

#: Tangent points of the within-slot warm-up bound (proofs/dynamic_lower_bound.md, Lemma 3): the average fill
#: exceeds the start by at most q(V) = V − V²/(2RΔ) for V GB read, bounded by its tangents at V₀ = θ R Δ.  The
#: tangents sit at V₀ = φ d for φ in READ_TANGENTS (half a dataset, one dataset: where warm-ups happen) and at
#: θ in RATE_TANGENTS (θ = 0: "at most what the slot reads"; θ = 1: "at most half of a full-rate slot").
READ_TANGENTS = (0.5, 1.0)
RATE_TANGENTS = (0.0, 0.5, 1.0)


class Tangent(NamedTuple):
    """One tangent row of Lemma 3 per pair: its point θ, the pairs that get the row and its constant θ² ξ / 2."""

    theta: np.ndarray
    keep: np.ndarray
    const: np.ndarray


def tangents(xi: np.ndarray, R: np.ndarray) -> list[Tangent]:
    """Every tangent row (:class:`Tangent`); ξ = Δ R / d is the most a slot can read.

    A row is left out where its constant θ² ξ / 2 is ≥ 1 (it cannot bind), where R = 0 and θ > 0 (no reads),
    and, for a read tangent, where φ / ξ > ½ (the rate tangents cover it).  The model's rows, the settling of
    a point (:func:`settle`) and the decomposition's ramp (models/milp/p3_lagrange.py) all read the constant
    from here.
    """
    rows = []
    for theta in RATE_TANGENTS:
        th = np.full(xi.size, theta)
        const = th * th * xi / 2.0
        rows.append(Tangent(th, (const < 1.0) & ((theta == 0) | (R > 0)), const))
    with np.errstate(divide="ignore"):
        for phi in READ_TANGENTS:
            th = np.where(xi > 0, phi / xi, 1.0)
            th_c = np.minimum(th, 1.0)
            rows.append(Tangent(th_c, (R > 0) & (th <= 0.5), th_c * th_c * xi / 2.0))
    return rows


@dataclass(frozen=True)
class Schedule:
    """A replay's job schedule: slot boundaries ``times`` (S+1, seconds, increasing) and ``demand`` R_{k,t} (K × S).

    ``size_gb`` holds d_k.  Slots of zero length never occur; a dataset's demand
    is exactly 0 in a slot where none of its jobs runs.
    """

    times: np.ndarray
    demand: np.ndarray
    size_gb: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Δ_t in seconds."""
        return np.diff(self.times)

    @property
    def n_slots(self) -> int:
        """S, the number of slots."""
        return int(self.times.size - 1)


def schedule_from_replay(
    start_s: np.ndarray,
    end_s: np.ndarray,
    io_gbps: np.ndarray,
    dataset_index: np.ndarray,
    size_gb: np.ndarray,
    *,
    period_s: float | None = None,
    origin_s: float | None = None,
) -> Schedule:
    """The schedule of a replay from its per-job start and end times (jobs.csv of docs/interface.md).

    Slots are cut at every distinct start and end and, when the replay
    re-allocated every ``period_s`` seconds from ``origin_s`` (its first
    submission), at those ticks too, accumulated the way the simulator does
    (tick ← tick + period), so that every policy's targets are constant on
    every slot (proofs/dynamic_lower_bound.md, Lemma 1).  R_{k,t} is the sum of
    the rates of the jobs on k with start ≤ T_t and end ≥ T_{t+1}.
    """
    start = np.asarray(start_s, dtype=float)
    end = np.asarray(end_s, dtype=float)
    rate = np.asarray(io_gbps, dtype=float)
    kj = np.asarray(dataset_index, dtype=np.int64)
    d = np.asarray(size_gb, dtype=float)
    n = start.size
    for name, arr in (("end_s", end), ("io_gbps", rate), ("dataset_index", kj)):
        if arr.size != n:
            raise InstanceError(name, arr.size, f"has {arr.size} entries, start_s has {n}")
    if n and not (np.isfinite(start).all() and np.isfinite(end).all() and (end >= start).all()):
        bad = int(np.flatnonzero(~(np.isfinite(start) & np.isfinite(end) & (end >= start)))[0])
        raise InstanceError(f"jobs[{bad}]", (start[bad], end[bad]), "needs finite start_s <= end_s")
    if n and (kj.min() < 0 or kj.max() >= d.size):
        raise InstanceError("dataset_index", int(kj.max()), f"must lie in [0, {d.size})")
    if n and not (np.isfinite(rate).all() and (rate >= 0).all()):
        raise InstanceError("io_gbps", float(rate[~(np.isfinite(rate) & (rate >= 0))][0]), "must be finite and >= 0")
    if n == 0:
        return Schedule(np.zeros(1), np.zeros((d.size, 0)), d)
    cuts = [start, end]
    if period_s is not None:
        if not (math.isfinite(period_s) and period_s > 0):
            raise InstanceError("period_s", period_s, "must be finite and > 0")
        tick = float(start.min() if origin_s is None else origin_s) + period_s
        last = float(end.max())
        ticks = []
        while tick < last:
            ticks.append(tick)
            tick = tick + period_s
        cuts.append(np.asarray(ticks, dtype=float))
    times = np.unique(np.concatenate(cuts))
    S = times.size - 1
    lo = np.searchsorted(times, start)
    hi = np.searchsorted(times, end)
    K = d.size
    delta = np.zeros((K, S + 1))
    count = np.zeros((K, S + 1), dtype=np.int64)
    np.add.at(delta, (kj, lo), rate)
    np.add.at(delta, (kj, hi), -rate)
    np.add.at(count, (kj, lo), 1)
    np.add.at(count, (kj, hi), -1)
    demand = np.cumsum(delta, axis=1)[:, :S]
    active = np.cumsum(count, axis=1)[:, :S] > 0
    demand = np.where(active, np.maximum(demand, 0.0), 0.0)
    return Schedule(times, demand, d)


@dataclass(frozen=True)
class Cluster:
    """The cluster of P3: cache capacity C (GB), bandwidth cap B (GB/s, inf: none), prices p_c, p_b ($/h per unit).

    ``granularity`` is the cache variant of docs/model.md §4 (continuous, dataset, block of ``block_gb``).
    """

    cache_gb: float
    bandwidth_gbps: float = math.inf
    price_cache: float = 0.0004
    price_bandwidth: float = 0.9
    granularity: str = "continuous"
    block_gb: float | None = None

    def block(self) -> float:
        """The block size u_b in GB (block caching only)."""
        if self.block_gb is None:
            raise InstanceError("block_gb", None, "block caching needs a block size")
        return float(self.block_gb)

    def check(self) -> None:
        """InstanceError naming the field if a value is out of range."""
        for name in ("cache_gb", "price_cache", "price_bandwidth"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise InstanceError(name, value, "must be finite and >= 0")
        if not self.bandwidth_gbps >= 0:
            raise InstanceError("bandwidth_gbps", self.bandwidth_gbps, "must be >= 0")
        if self.granularity not in ("continuous", "dataset", "block"):
            raise InstanceError("granularity", self.granularity, "must be continuous, dataset or block")
        if self.granularity == "block" and not (
            self.block_gb is not None and math.isfinite(self.block_gb) and self.block_gb > 0
        ):
            raise InstanceError("block_gb", self.block_gb, "block caching needs a finite block size > 0")


@dataclass(frozen=True)
class Layout:
    """The (dataset, slot) pairs P3 needs: dataset k from its first to its last slot with demand.

    Before its first read a cache is empty (nothing was read into it) and after
    its last read it serves nobody, so y = u = e = b = 0 there is optimal and
    those pairs are left out (proofs/dynamic_lower_bound.md, Lemma 4).
    ``prev[p]`` is the pair of the same dataset one slot earlier (−1 at its first).
    """

    k: np.ndarray
    t: np.ndarray
    prev: np.ndarray
    R: np.ndarray
    dt: np.ndarray
    d: np.ndarray

    @property
    def n_pairs(self) -> int:
        """Number of (dataset, slot) pairs."""
        return int(self.k.size)


def layout(schedule: Schedule) -> Layout:
    """The pairs of :class:`Layout`, dataset-major, slots increasing."""
    ks: list[np.ndarray] = []
    ts: list[np.ndarray] = []
    prev: list[np.ndarray] = []
    offset = 0
    for k in range(schedule.demand.shape[0]):
        live = np.flatnonzero(schedule.demand[k] > 0)
        if live.size == 0:
            continue
        t = np.arange(live[0], live[-1] + 1)
        ks.append(np.full(t.size, k, dtype=np.int64))
        ts.append(t)
        prev.append(np.concatenate([[-1], offset + np.arange(t.size - 1)]))
        offset += t.size
    if not ks:
        empty = np.zeros(0, dtype=np.int64)
        return Layout(empty, empty, empty, np.zeros(0), np.zeros(0), np.zeros(0))
    kk = np.concatenate(ks)
    tt = np.concatenate(ts)
    return Layout(
        kk,
        tt,
        np.concatenate(prev).astype(np.int64),
        schedule.demand[kk, tt],
        schedule.lengths[tt],
        schedule.size_gb[kk],
    )


# ------------------------------------------------------------------------------------------------ the statement


def p3_statement(schedule: Schedule, cluster: Cluster, *, warmup: bool = True, relax: bool = False) -> Statement:
    """P3 of docs/model.md §6 over ``schedule`` for ``cluster`` (proofs/dynamic_lower_bound.md, LP (P3)), stated
    once (models/milp/statement.py): its columns per (dataset, slot) pair of :func:`layout` and one row function
    per group of the module docstring.  ``statement.layout`` is the layout."""
    cluster.check()
    lay = layout(schedule)
    P = lay.n_pairs
    h = lay.dt / 3600.0
    block = cluster.granularity == "block"
    s = Statement("cbalab-P3", "min")
    s.data["layout"] = lay
    y = s.columns(
        "y",
        "P",
        P,
        upper=1.0,
        cost=0.0 if block else cluster.price_cache * h * lay.d,
        integer=cluster.granularity == "dataset" and not relax,
        doc="y, the allocated cache as a fraction of d_k",
    )
    u = s.columns("u", "P", P, upper=1.0, doc="u, the slot's mean filled cache as a fraction of d_k")
    b = s.columns("b", "P", P, upper=lay.R, cost=cluster.price_bandwidth * h, doc="b, the mean remote read rate")
    e = s.columns("e", "P", P, upper=1.0, doc="e, the filled cache at the slot's end") if warmup else None
    paid = (y, lay.d)
    if block:
        ub = cluster.block()
        n = s.columns(
            "n",
            "P",
            P,
            upper=np.ceil(lay.d / ub - 1e-9 * np.maximum(1.0, lay.d / ub)),
            cost=cluster.price_cache * h * ub,
            integer=not relax,
            doc="n, whole cache blocks paid",
        )
        paid = (n, np.full(P, ub))
        s.add(served_in_blocks(lay, y, n, ub))
    s.add(feed(lay, u, b))
    s.add(filled_paid(y, u))
    if e is not None:
        before = np.where(lay.prev >= 0, e[np.maximum(lay.prev, 0)], -1)
        s.add(end_paid(y, e))
        s.add(fill_end(lay, e, before, b))
        for i, tan in enumerate(tangents(lay.dt * lay.R / lay.d, lay.R)):
            s.add(fill_mean(lay, u, before, b, tan), f"_{i}")
            s.add(fill_end_mean(lay, e, u, b, tan), f"_{i}")
            s.add(fill_held(lay, u, y, before, tan), f"_{i}")
    s.add(cache_capacity(lay, cluster, *paid))
    s.add(bandwidth_capacity(lay, cluster, b))
    return s


def build_dynamic_model(
    schedule: Schedule, cluster: Cluster, *, warmup: bool = True, relax: bool = False
) -> pyo.ConcreteModel:
    """P3 as a Pyomo model, emitted from :func:`p3_statement`; ``model.lay`` is its layout."""
    s = p3_statement(schedule, cluster, warmup=warmup, relax=relax)
    m = s.pyomo()
    m.lay = s.data["layout"]
    return m


def _one_per_pair(
    *terms: tuple[np.ndarray, np.ndarray | float], sel: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, coef) of one row per selected pair, row i reading Σ coef · x[col] over ``terms`` at pair sel[i]."""
    i = np.arange(sel.size)
    return stack(*((col[sel], coef[sel] if isinstance(coef, np.ndarray) else coef, i) for col, coef in terms))


@group
def served_in_blocks(lay: Layout, y: np.ndarray, n: np.ndarray, ub: float) -> Rows:
    """Blocks serve what they hold: d y ≤ u_b n (docs/model.md §4; dynamic_lower_bound.md, (P3a))."""
    P = lay.n_pairs
    return Rows(*_one_per_pair((y, lay.d), (n, -ub), sel=np.arange(P)), np.full(P, -math.inf), np.zeros(P))


@group
def feed(lay: Layout, u: np.ndarray, b: np.ndarray) -> Rows:
    """No stalls: b + R u ≥ R, the slot average of b(s) ≥ R (1 − f(s)/d) (docs/model.md §3, §6; Lemma 2 (iii))."""
    fed = np.flatnonzero(lay.R > 0)
    return Rows(*_one_per_pair((b, 1.0), (u, lay.R), sel=fed), lay.R[fed], np.full(fed.size, math.inf))


@group
def filled_paid(y: np.ndarray, u: np.ndarray) -> Rows:
    """Filled ≤ allocated: u ≤ y (Lemma 2 (ii))."""
    P = y.size
    return Rows(*_one_per_pair((u, 1.0), (y, -1.0), sel=np.arange(P)), np.full(P, -math.inf), np.zeros(P))


@group
def end_paid(y: np.ndarray, e: np.ndarray) -> Rows:
    """The slot's end fill under its held target: e ≤ y (Lemma 2 (ii)); only with warm-up."""
    P = y.size
    return Rows(*_one_per_pair((e, 1.0), (y, -1.0), sel=np.arange(P)), np.full(P, -math.inf), np.zeros(P))


@group
def fill_end(lay: Layout, e: np.ndarray, before: np.ndarray, b: np.ndarray) -> Rows:
    """A cache grows only by the bytes read for it: e ≤ e⁻ + Δ b / d, e⁻ the previous slot's end fill (0 at a
    dataset's first slot; docs/model.md §6, Lemma 3)."""
    P = lay.n_pairs
    sel = np.arange(P)
    return Rows(
        *_one_per_pair((e, 1.0), (before, -1.0), (b, -lay.dt / lay.d), sel=sel), np.full(P, -math.inf), np.zeros(P)
    )


def _read_tangent(lay: Layout, fill: np.ndarray, start: np.ndarray, b: np.ndarray, tan: Tangent) -> Rows:
    """fill ≤ start + (1 − θ) Δ b / d + θ² ξ / 2 at the kept pairs: the fill above ``start`` is at most the
    tangent at θ of the exact bound x − x²/(2ξ) on what a slot reading x = Δ b / d adds (Lemma 3)."""
    sel = np.flatnonzero(tan.keep)
    rows = _one_per_pair((fill, 1.0), (start, -1.0), (b, -(1.0 - tan.theta) * lay.dt / lay.d), sel=sel)
    return Rows(*rows, np.full(sel.size, -math.inf), tan.const[sel])


@group
def fill_mean(lay: Layout, u: np.ndarray, before: np.ndarray, b: np.ndarray, tan: Tangent) -> Rows:
    """The mean fill at tangent θ of :func:`tangents`: u ≤ e⁻ + (1 − θ) Δ b / d + θ² ξ / 2 (Lemma 3)."""
    return _read_tangent(lay, u, before, b, tan)


@group
def fill_end_mean(lay: Layout, e: np.ndarray, u: np.ndarray, b: np.ndarray, tan: Tangent) -> Rows:
    """The end fill at tangent θ: e ≤ u + (1 − θ) Δ b / d + θ² ξ / 2 (Lemma 3)."""
    return _read_tangent(lay, e, u, b, tan)


@group
def fill_held(lay: Layout, u: np.ndarray, y: np.ndarray, before: np.ndarray, tan: Tangent) -> Rows:
    """The fill ramps at most at rate R towards a target held over the slot: u ≤ (1 − θ) y + θ e⁻ + θ² ξ / 2 for
    θ > 0 (Lemma 3, the held-target ramp)."""
    theta = tan.theta
    sel = np.flatnonzero(tan.keep & (theta > 0) & (lay.R > 0))
    rows = _one_per_pair((u, 1.0), (y, -(1.0 - theta)), (before, -theta), sel=sel)
    return Rows(*rows, np.full(sel.size, -math.inf), tan.const[sel])


@group
def cache_capacity(lay: Layout, cluster: Cluster, cols: np.ndarray, size: np.ndarray) -> Rows:
    """Σ_k paid_{k,t} ≤ C in every slot with a pair (docs/model.md §4, §6; Lemma 2 (i))."""
    used = np.unique(lay.t)
    row, col, coef = stack((cols, size, np.searchsorted(used, lay.t)))
    return Rows(row, col, coef, np.full(used.size, -math.inf), np.full(used.size, float(cluster.cache_gb)))


@group
def bandwidth_capacity(lay: Layout, cluster: Cluster, b: np.ndarray) -> Rows:
    """Σ_k b_{k,t} ≤ B in every slot with a pair (Lemma 2 (v)); none when B is unlimited."""
    used = np.unique(lay.t) if math.isfinite(cluster.bandwidth_gbps) else np.zeros(0, dtype=np.int64)
    sel = np.arange(b.size) if used.size else np.zeros(0, dtype=np.int64)
    row, col, coef = stack((b[sel], 1.0, np.searchsorted(used, lay.t[sel])))
    return Rows(row, col, coef, np.full(used.size, -math.inf), np.full(used.size, float(cluster.bandwidth_gbps)))


# ------------------------------------------------------------------------------------------------ solving

#: The certification rule of P3 is the one of every exact method (docs/model.md (8.2), models/certify.py): an
#: independent bound must meet the cost of a checked feasible point within CERTIFY_RTOL of the cost plus
#: CERTIFY_ATOL of the objective's unit; P3's unit is the cost itself (a schedule's IO bill in $ has no fixed
#: part and no scale of its own).  ``cost`` is re-computed from a point that meets every row (:func:`settle`) and
#: ``bound`` is the numpy Lagrangian of HiGHS's duals (HiGHS's dual bound, rescaled, for the integer variants).

#: A settled point meets a row when its violation is at most FEAS_RTOL · (abs(side) + Σ_j abs(a_ij x_j)) + FEAS_ATOL:
#: the repair of :func:`settle` leaves only rounding, so this is a check of the repair, not a slack HiGHS may use.
FEAS_RTOL = 1e-9
FEAS_ATOL = 1e-12

#: HiGHS solves of one P3 matrix at most: the first with the objective scaled by the closed-form lower bound
#: (:func:`instant_bound`), each further one scaled by the cheapest feasible cost found so far, so that HiGHS's
#: absolute tolerances are relative to the optimum (:func:`_solve_matrix`).
SCALE_PASSES = 3

#: HiGHS's feasibility tolerances for P3's LPs (the whole matrix and p3_lagrange's chunks).  Its rows are not
#: scaled, so the primal tolerance is absolute in GB/s and fractions of d_k: a feeding row b + R u ≥ R met only to
#: 1e-9 leaves settle (:func:`settle`) to read that much more, which on a schedule costing 1e-4 $ lifted the cost
#: above the bound by more than the certification rule allows (1.2e-6 relative, after SCALE_PASSES runs).  So the
#: primal tolerance is HiGHS's smallest, 1e-10; the bound does not rest on either (weak duality, any duals).
HIGHS_TOLERANCES = (("primal_feasibility_tolerance", 1e-10), ("dual_feasibility_tolerance", 1e-9))

#: The scaled objective's largest coefficient is kept at or below this, so that a tiny reference scale does not
#: give HiGHS costs it treats as infinite (1e20) or that swamp its dual tolerance in rounding.
MAX_SCALED_COST = 1e15


def certified(cost: float | None, bound: float | None) -> bool:
    """Whether ``bound`` meets ``cost`` by the certification rule (8.2), the cost its own unit (both finite)."""
    if cost is None or bound is None or not (math.isfinite(cost) and math.isfinite(bound)):
        return False
    return abs(cost - bound) <= tolerance(cost, unit=abs(cost))


class Deadline:
    """A time budget of ``seconds`` (None: none) that starts when it is made, read from ``clock``.

    One budget covers a whole offline-optimum call: building the schedule, the
    matrices, and every HiGHS run, which gets only what is left.  ``clock`` is
    injectable so that tests can exhaust the budget at any step without timing.
    """

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = seconds
        self.clock = clock
        self.started = clock()

    def left(self) -> float | None:
        """Seconds left (≤ 0 when spent), or None without a limit."""
        return None if self.seconds is None else self.seconds - (self.clock() - self.started)

    def expired(self) -> bool:
        """Whether the budget is spent: a caller stops before its next step."""
        left = self.left()
        return left is not None and left <= 0


@dataclass
class DynamicResult:
    """P3's answer: ``status``, the IO cost ``cost_io`` ($) of a point that meets every row, a proven lower
    ``bound``, ``slots``, ``seconds``.

    ``status`` is ``optimal`` only when ``bound`` meets ``cost_io`` by :func:`certified`; ``feasible`` gives
    both numbers otherwise; ``time_limit`` gives the best checked point found before the budget ran out, or
    no cost at all.  ``pairs`` is the layout; ``y``, ``u``, ``b`` (``e`` with warm-up, ``n`` under blocks)
    the checked solution per pair, when there is one.  ``rows`` and ``cols`` give the LP size.
    """

    status: str
    cost_io: float | None
    bound: float | None
    slots: int
    seconds: float
    rows: int = 0
    cols: int = 0
    message: str = ""
    pairs: Layout | None = None
    values: dict[str, np.ndarray] = field(default_factory=dict)

    def summary(self) -> dict:
        """The ``offline_optimum`` entry of summary.json (docs/interface.md)."""
        return entry(self, "cost_io", "status", "bound", "slots", "seconds", "rows", "cols")


def entry(result: object, *keys: str) -> dict:
    """The named attributes of a P3 answer as summary.json's ``offline_optimum`` entry, in the order named."""
    return {key: getattr(result, key) for key in keys}


class Matrix(NamedTuple):
    """P3 compiled (unscaled) for highspy from :func:`p3_statement`: the pairs, each block's column numbers
    {name: indices}, and the compiled model (models/milp/statement.py, ``Arrays``: costs, bounds, rows)."""

    layout: Layout
    cols: dict[str, np.ndarray]
    rows: Arrays


def matrix(schedule: Schedule, cluster: Cluster, *, warmup: bool = True, relax: bool = False) -> Matrix:
    """P3 of :func:`p3_statement` compiled: its :class:`Matrix`."""
    s = p3_statement(schedule, cluster, warmup=warmup, relax=relax)
    a = s.compile()
    return Matrix(s.data["layout"], {name: np.arange(part.start, part.stop) for name, part in a.blocks.items()}, a)


def solve_dynamic(
    schedule: Schedule,
    cluster: Cluster,
    *,
    warmup: bool = True,
    relax: bool = False,
    time_limit: float | None = None,
    threads: int = 1,
    deadline: Deadline | None = None,
) -> DynamicResult:
    """Solve P3 whole from its matrix with highspy and certify the answer (:func:`_solve_matrix`).

    The answer's point is settled against every row (:func:`settle`) and is ``optimal`` only when its
    re-computed cost meets the bound (:func:`certified`); otherwise the bound is at least the closed form of
    instant caches (proofs/dynamic_lower_bound.md, Lemma 5 (ii)).  Without a time limit, continuous caches
    with warm-up are first solved one dataset at a time with all of C (the Lagrangian at zero multipliers,
    models/milp/p3_lagrange.py), which is the optimum when no capacity row binds (Lemma 5 (i)): then
    ``rows`` and ``cols`` are 0, as no single LP was solved.  A schedule too large for one LP is
    decomposed by datasets instead (models/milp/p3_lagrange.py, Theorem 4 there; experiments/simulate.py
    chooses).  ``time_limit`` (or an already running ``deadline``, which replaces it) covers every step: the
    clock is read before the matrix build, the hand-over to HiGHS and each HiGHS run, which gets only what is
    left; once it has run out the answer is ``time_limit`` with the best checked point (or no cost) and the
    closed-form bound.
    """
    cluster.check()
    wall = time.perf_counter()
    deadline = Deadline(time_limit) if deadline is None else deadline
    lay = layout(schedule)
    if lay.n_pairs == 0:
        return DynamicResult("optimal", 0.0, 0.0, schedule.n_slots, time.perf_counter() - wall, pairs=lay)
    if deadline.expired():
        return _out_of_time(schedule, cluster, lay, wall, "before the LP")
    built = None
    if warmup and cluster.granularity == "continuous" and deadline.seconds is None:
        from cbalab.models.milp.p3_lagrange import solve_lagrange  # it builds on this module

        alone = solve_lagrange(schedule, cluster, iterations=1, priced=False)
        # Checked against every row of the whole statement (the coupling rows included), not only the bound.
        built = matrix(schedule, cluster)
        settled = settle(alone.values, built, cluster, warmup=True) if alone.values else None
        if settled is not None and certified(settled[1], alone.bound):
            message = "one LP per dataset; no capacity row binds (Lemma 5 (i))"
            return DynamicResult(
                "optimal",
                settled[1],
                alone.bound,
                schedule.n_slots,
                time.perf_counter() - wall,
                message=message,
                pairs=lay,
                values=settled[0],
            )
    out = _solve_matrix(
        schedule, cluster, warmup=warmup, relax=relax, deadline=deadline, threads=threads, wall=wall, built=built
    )
    if out.status in ("feasible", "time_limit", "error"):
        instant = instant_bound(schedule, cluster)
        if out.bound is None or instant > out.bound:
            out.bound, out.message = instant, out.message + "; bound from instant caches (Lemma 5 (ii))"
    return out


def instant_bound(schedule: Schedule, cluster: Cluster) -> float:
    """Σ_t Δ_t/3600 · P1*(R_t) with B = ∞: P3 without its warm-up rows (proofs/dynamic_lower_bound.md, Theorem 2).

    P1* in closed form (proofs/cba_optimality.md, Theorem 1): cache the datasets with p_b ρ_k > p_c in
    decreasing ρ_k = R_k/d_k until C is full; cost p_b Σ R_k − Σ_k c_k (p_b ρ_k − p_c).  Evaluated for
    blocks of slots at once (one sort per slot, along the dataset axis).
    """
    d = schedule.size_gb
    p_c, p_b = cluster.price_cache, cluster.price_bandwidth
    slots = np.flatnonzero(schedule.lengths > 0)
    total = 0.0
    for part in np.array_split(slots, max(1, slots.size // 4096)) if slots.size else []:
        R = schedule.demand[:, part]
        rho = R / d[:, None]
        order = np.argsort(-rho, axis=0, kind="stable")
        rho_sorted = np.take_along_axis(rho, order, axis=0)
        d_sorted = d[order]
        pays = p_b * rho_sorted > p_c  # a prefix of every column: ρ decreases down the column
        room = np.clip(cluster.cache_gb - (np.cumsum(d_sorted, axis=0) - d_sorted), 0.0, d_sorted)
        saving = np.where(pays, room * (p_b * rho_sorted - p_c), 0.0).sum(axis=0)
        rate = p_b * R.sum(axis=0) - saving
        total += exact_dot(schedule.lengths[part], rate) / 3600.0
    return total


def _out_of_time(schedule: Schedule, cluster: Cluster, lay: Layout, wall: float, step: str) -> DynamicResult:
    """``time_limit`` with no cost: the budget ran out ``step``; the bound is the closed form of instant caches."""
    return DynamicResult(
        "time_limit",
        None,
        instant_bound(schedule, cluster),
        schedule.n_slots,
        time.perf_counter() - wall,
        message=f"the time limit ran out {step}; bound from instant caches (Lemma 5 (ii))",
        pairs=lay,
    )


def _infeasible(
    schedule: Schedule, lay: Layout, wall: float, message: str, rows: int = 0, cols: int = 0
) -> DynamicResult:
    """``infeasible``, with no cost and no bound: ``message`` says what proved it."""
    return DynamicResult(
        "infeasible", None, None, schedule.n_slots, time.perf_counter() - wall, rows, cols, message, pairs=lay
    )


def settle(
    values: dict[str, np.ndarray], built: Matrix, cluster: Cluster, *, warmup: bool
) -> tuple[dict[str, np.ndarray], float] | None:
    """A point that meets every row of P3, made from a solver's ``values``, and its IO cost re-computed in numpy
    from the statement's costs (Δ/3600 times the prices, not HiGHS's objective); None if the capacity rows
    (C, B) still fail (proofs/dynamic_lower_bound.md, Lemma 6).

    HiGHS's point meets the rows only to its absolute tolerances, and at a time limit it may be no point at
    all (the all-zero start).  The repair: columns are clipped into their bounds and integer columns
    rounded; y ≤ u_b n / d under blocks; u is lowered to its upper bounds (u ≤ y, the (P3b) rows at the
    current b, the held-target ramp); b is raised to min(R, max(b, R (1 − u))); e is lowered to its upper
    bounds; and a pair whose previous end fill fell is done again.  Raising b loosens every row it enters
    but B's, lowering u or e loosens every row but the next one's that reads them, which the pass redoes,
    so only C's and B's rows can remain violated.  Then every row of the matrix is evaluated in numpy and
    must hold to :data:`FEAS_RTOL` relative (the check of the repair, not a slack).
    """
    lay, cols, rows = built
    out: dict[str, np.ndarray] = {}
    for name, idx in cols.items():
        v = np.clip(np.asarray(values[name], dtype=float), rows.col_lo[idx], rows.col_hi[idx])
        out[name] = np.where(rows.integral[idx], np.round(v), v)
    y, u, b, R = out["y"], out["u"], out["b"], lay.R
    if cluster.granularity == "block":
        y = out["y"] = np.minimum(y, out["n"] * cluster.block() / lay.d)
    np.minimum(u, y, out=u)
    continuous = not rows.integral[cols["y"]].any()
    if not warmup:
        out["b"] = np.minimum(R, np.maximum(b, R * (1.0 - u)))
        if continuous:  # without warm-up rows the least y a pair allows is its mean fill u (Lemma 6, step 3)
            out["y"] = np.minimum(out["y"], u)
    else:
        tan = tangents(lay.dt * R / lay.d, R)
        _settle_warmup(out, lay, tan)
        if continuous:
            out["y"] = np.minimum(out["y"], _least_paid(out, lay, tan))
    x = np.zeros(rows.n_cols)
    for name, idx in cols.items():
        x[idx] = out[name]
    act, mag = rows.activity(x)
    lo, hi = rows.row_lo, rows.row_hi
    with np.errstate(invalid="ignore"):
        low = np.where(np.isinf(lo), 0.0, lo - act)
        high = np.where(np.isinf(hi), 0.0, act - hi)
        side = np.where(np.isinf(lo), 0.0, np.abs(lo)) + np.where(np.isinf(hi), 0.0, np.abs(hi))
    if (np.maximum(low, high) > FEAS_RTOL * (side + mag) + FEAS_ATOL).any():
        return None
    return out, exact_dot(rows.cost, x)


def _settle_warmup(out: dict[str, np.ndarray], lay: Layout, tan: list[Tangent]) -> None:
    """The forward pass of :func:`settle` with warm-up rows, in place: u, b, e of every pair, then again for the
    pairs whose previous pair's end fill fell (by more than FEAS_ATOL / 2; less is within the check)."""
    y, u, b, e, R = out["y"], out["u"], out["b"], out["e"], lay.R
    step = lay.dt / lay.d
    nxt = np.full(lay.n_pairs, -1, dtype=np.int64)
    has_prev = lay.prev >= 0
    nxt[lay.prev[has_prev]] = np.flatnonzero(has_prev)
    todo = np.arange(lay.n_pairs)
    while todo.size:
        prev = lay.prev[todo]
        before = np.where(prev >= 0, e[np.maximum(prev, 0)], 0.0)
        ut, bt, yt, st, Rt = u[todo], b[todo], y[todo], step[todo], R[todo]
        for theta, keep, const in tan:
            th, k, c = theta[todo], keep[todo], const[todo]
            ut = np.where(k, np.minimum(ut, before + (1.0 - th) * st * bt + c), ut)
            ut = np.where(k & (th > 0) & (Rt > 0), np.minimum(ut, (1.0 - th) * yt + th * before + c), ut)
        ut = np.maximum(ut, 0.0)
        bt = np.minimum(Rt, np.maximum(bt, Rt * (1.0 - ut)))
        et = np.minimum(np.minimum(e[todo], yt), before + st * bt)
        for theta, keep, const in tan:
            th, k, c = theta[todo], keep[todo], const[todo]
            et = np.where(k, np.minimum(et, ut + (1.0 - th) * st * bt + c), et)
        et = np.maximum(et, 0.0)
        fell = et < e[todo] - FEAS_ATOL / 2.0
        u[todo], b[todo], e[todo] = ut, bt, et
        todo = nxt[todo[fell]]
        todo = todo[todo >= 0]


def _least_paid(out: dict[str, np.ndarray], lay: Layout, tan: list[Tangent]) -> np.ndarray:
    """The least y each pair's rows allow at the settled u, e and b: y ≥ u, y ≥ e and, for every held-target
    ramp of :func:`fill_held` with 0 < θ < 1, y ≥ (u − θ e⁻ − θ² ξ / 2) / (1 − θ) (Lemma 6, step 3).

    Every other row holds y on its loosening side (d y ≤ u_b n, Σ_k d_k y ≤ C), so lowering y to this keeps
    every row and can only lower the cost: cache paid for but never filled (a warm-up's target held from its
    first slot) is not paid for.
    """
    u, e = out["u"], out["e"]
    need = np.maximum(u, e)
    before = np.where(lay.prev >= 0, e[np.maximum(lay.prev, 0)], 0.0)
    for theta, keep, const in tan:
        held = keep & (theta > 0) & (theta < 1) & (lay.R > 0)
        ramp = (u - theta * before - const) / np.where(held, 1.0 - theta, 1.0)
        need = np.where(held, np.maximum(need, ramp), need)
    return need


def _scale(cost: np.ndarray, reference: float) -> float:
    """The objective's divisor for HiGHS: ``reference`` (a value near the optimum), but at least the largest
    cost over MAX_SCALED_COST, and the largest cost when there is no positive reference."""
    top = float(np.max(np.abs(cost))) if cost.size else 0.0
    if top == 0.0:
        return 1.0
    ref = reference if math.isfinite(reference) and reference > 0 else top
    return max(ref, top / MAX_SCALED_COST)


def _solve_matrix(
    schedule: Schedule,
    cluster: Cluster,
    *,
    warmup: bool,
    relax: bool,
    deadline: Deadline,
    threads: int,
    wall: float | None = None,
    built: Matrix | None = None,
) -> DynamicResult:
    """Solve the whole P3 matrix with highspy and certify the answer (:func:`certified`); ``built`` is the matrix
    of these arguments when the caller has it already.

    HiGHS's tolerances are absolute, so the objective is divided before HiGHS
    sees it by a value near the optimum (:func:`_scale`): first the closed-form
    bound of instant caches (:func:`instant_bound`, exact without warm-up),
    then, while the answer is not certified, the cheapest re-computed cost
    found, re-solving from HiGHS's last basis (at most SCALE_PASSES runs).  The
    duals are unscaled for the certificate: for row duals π (signs clipped to
    each row's sense) and reduced costs r = c − Aᵀπ,
    Σ_i π_i·(L_i or U_i) + Σ_j min(r_j l_j, r_j u_j) ≤ cᵀx for every feasible x
    (weak duality), evaluated in numpy; for a MIP, HiGHS's dual bound, rescaled.
    Every point is settled (:func:`settle`) and costed from the prices.
    """
    import highspy

    wall = time.perf_counter() if wall is None else wall
    built = matrix(schedule, cluster, warmup=warmup, relax=relax) if built is None else built
    lay, cols, rows = built
    n_cols = rows.n_cols
    if lay.n_pairs == 0:
        return DynamicResult("optimal", 0.0, 0.0, schedule.n_slots, time.perf_counter() - wall, pairs=lay)
    if deadline.expired():
        return _out_of_time(schedule, cluster, lay, wall, "building the matrix")
    n_rows = rows.n_rows
    is_mip = bool(rows.integral.any())
    scale = _scale(rows.cost, instant_bound(schedule, cluster))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(threads))
    for option, setting in HIGHS_TOLERANCES:
        h.setOptionValue(option, setting)
    if is_mip:
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.0)
    rows.pass_to(h, scale)
    best: tuple[dict[str, np.ndarray], float] | None = None
    bound: float | None = None
    stopped = ""
    for run in range(SCALE_PASSES):
        left = deadline.left()
        if left is not None and left <= 0:
            stopped = "the time limit ran out between HiGHS runs"
            break
        if run:
            h.changeColsCost(n_cols, np.arange(n_cols, dtype=np.int32), rows.cost / scale)
        if left is not None:
            h.setOptionValue("time_limit", float(left))
        h.run()
        status = h.getModelStatus()
        if status in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            return _infeasible(schedule, lay, wall, "HiGHS proved P3 infeasible", n_rows, n_cols)
        sol = h.getSolution()
        if sol.value_valid:
            x = np.asarray(sol.col_value)
            point = settle({name: x[idx] for name, idx in cols.items()}, built, cluster, warmup=warmup)
            if point is not None and (best is None or point[1] < best[1]):
                best = point
        found = _run_bound(h, sol, is_mip, scale, rows)
        if found is not None:
            bound = found if bound is None else max(bound, found)
        if status != highspy.HighsModelStatus.kOptimal:
            stopped = (
                "the time limit ran out in HiGHS"
                if status == highspy.HighsModelStatus.kTimeLimit
                else f"HiGHS stopped: {h.modelStatusToString(status)}"
            )
            break
        if best is None or certified(best[1], bound) or best[1] <= 0:
            break
        scale = _scale(rows.cost, best[1])
    seconds = time.perf_counter() - wall
    values, cost = best if best is not None else ({}, None)
    if certified(cost, bound):
        status_text, message = "optimal", f"certified after {run + 1} HiGHS run(s)"
    elif stopped.startswith("the time limit"):
        status_text, message = "time_limit", stopped
    elif best is not None:
        status_text, message = "feasible", (stopped or f"HiGHS's optimum is not certified after {run + 1} run(s)")
        message += f": cost {cost!r}, bound {bound!r}"
    else:
        status_text, message = "error", (stopped or "HiGHS's point does not meet the rows") + " (no checked point)"
    return DynamicResult(status_text, cost, bound, schedule.n_slots, seconds, n_rows, n_cols, message, lay, values)


def _run_bound(
    h: Any,
    sol: Any,
    is_mip: bool,
    scale: float,
    rows: Arrays,
) -> float | None:
    """The lower bound one HiGHS run proves, in $: a MIP's dual bound, or the LP's Lagrangian certificate of its
    row duals (valid for any duals, optimal or not); never below 0, since every cost and lower bound is ≥ 0."""
    if is_mip:
        dual_bound = float(h.getInfo().mip_dual_bound)
        return max(0.0, dual_bound * scale) if math.isfinite(dual_bound) else None
    if not sol.dual_valid:
        return None
    dual = np.asarray(sol.row_dual) * scale
    return max(0.0, certified_bound(rows, dual))


def certified_bound(a: Arrays, dual: np.ndarray) -> float:
    """Weak-duality value of row duals ``dual`` for min cᵀx, lo ≤ Ax ≤ hi, l ≤ x ≤ u (all column bounds finite)."""
    lo, hi = a.row_lo, a.row_hi
    pi = np.where(np.isinf(lo), np.minimum(dual, 0.0), dual)
    pi = np.where(np.isinf(hi), np.maximum(pi, 0.0), pi)
    row = np.repeat(np.arange(a.n_rows), np.diff(a.start))
    at_pi = np.bincount(a.index, weights=a.value * pi[row], minlength=a.n_cols)
    reduced = a.cost - at_pi
    rows_part = np.where(pi > 0, pi * np.where(np.isinf(lo), 0.0, lo), pi * np.where(np.isinf(hi), 0.0, hi))
    cols_part = np.minimum(reduced * a.col_lo, reduced * a.col_hi)
    return float(rows_part.sum() + cols_part.sum())
