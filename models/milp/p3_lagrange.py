"""P3 by Lagrangian decomposition over datasets: a certified lower bound, deterministic, at trace scale.

P3 (docs/model.md §6; models/milp/dynamic.py) couples its datasets only through the
capacity rows Σ_k d_k y_{k,t} ≤ C and Σ_k b_{k,t} ≤ B of every slot.  Priced
with multipliers μ_t, ν_t ≥ 0 ($ per GB, $ per GB/s over the slot), they leave one
problem per dataset, whose cache costs Δ_t/3600 · p_c d_k + μ_t d_k and whose
reads cost Δ_t/3600 · p_b + ν_t per pair, and

    L(μ, ν) = Σ_k LP_k(μ, ν) − Σ_t (C μ_t + B ν_t) ≤ P3*        (proofs/dynamic_lower_bound.md, Theorem 4)

for every μ, ν ≥ 0.  Each term LP_k is bounded from below, never taken from a
solver's objective:

* an **exact** dataset's LP is the dataset's own rows of :func:`matrix`, cut in
  chunks of at most ``chunk_pairs`` pairs; a chunk after the first starts from a
  free slot that may hand it any fill at no cost (a relaxation of the link
  e⁻ = e_{k,t−1}, Theorem 4 (ii)); each chunk is solved by HiGHS and bounded by
  the weak-duality value of HiGHS's row duals, evaluated in numpy
  (``certified_bound`` of models/milp/dynamic.py), valid whatever the solver's
  tolerances in exact arithmetic; the reported bound (the best iterate's) is
  re-derived exactly at the end (:func:`_exact_value`, docs/model.md §8), so it
  holds in floating point too;
* an **instant** dataset (size below ``exact_min_gb``) drops its warm-up rows,
  a relaxation whose optimum is a closed form per pair,
  min((Δ/3600 p_b + ν) R, (Δ/3600 p_c + μ) d) for y ≤ 1 (Theorem 4 (iii)).

The multipliers start at the duals of P1 per slot (the density at which CBA
fills C; then L equals the bound of instant caches when every dataset is
instant) and move by projected subgradient steps with Polyak's step length
towards the best upper bound, halved after PATIENCE steps without a better bound, for a fixed
number of ``iterations``: no wall clock enters, so the same input gives the
same bound on any machine.  The reported bound is the largest L of all
iterations, each a valid bound.

The upper bound is a schedule that meets every row of P3: the subproblems'
caches (the instant datasets' closed-form ones) scaled by C / used_t in every
slot where they overfill C, then settled against each dataset's whole chain of
rows (:func:`settle`, proofs/dynamic_lower_bound.md Lemma 6) and checked
against the coupling rows in numpy; its cost is re-computed from the prices.
The best such schedule is then improved by a resource-directive step
(:func:`_directed`, Lemma 7): each exact dataset in turn re-solves its own rows
at the true prices within the cache (and bandwidth) its schedule holds plus what
the others leave free, so the join meets the coupling rows by construction and
costs no more; it is settled and checked the same way and kept if cheaper.
At trace scale a joint step follows (:func:`_joint_windows`, Lemma 8): window by
window of slots, the exact datasets are re-solved together with the window's
capacity rows, every other column fixed, so capacity can pass from one dataset
to another in the same slot, which no one-dataset step can do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from cbalab.models.exact_bounds import exact_sum, instant_relaxation_exact, lp_dual_value, safe_float
from cbalab.models.instance import InstanceError
from cbalab.models.kernels import exact_dot, row_sum
from cbalab.models.milp.dynamic import (
    FEAS_ATOL,
    FEAS_RTOL,
    HIGHS_TOLERANCES,
    Cluster,
    Layout,
    Schedule,
    Tangent,
    certified,
    certified_bound,
    entry,
    layout,
    matrix,
    settle,
    tangents,
)
from cbalab.models.milp.statement import Arrays

#: Subgradient iterations by default: each solves every exact chunk once (warm-started from its last basis).
ITERATIONS = 30

#: Pairs per chunk of an exact dataset's LP by default (None: the whole dataset in one LP, no link relaxed).
CHUNK_PAIRS: int | None = None

#: Consecutive iterations without a better bound after which the step factor is halved.
PATIENCE = 3

#: Polyak's target lies at most this share above the best bound found (see :func:`solve_lagrange`).
TARGET_GAP = 0.01

#: A free starting slot reads this many datasets' worth (ξ = Δ R / d), enough for any start fill e⁻ ∈ [0, 1].
FREE_START_READS = 4.0


#: Above this many (dataset, slot) pairs the offline optimum uses the decomposition (:func:`large_schedule`):
#: one LP of P3 with about 70,000 pairs (a 1,000-job Philly window) already takes 11–30 s of CPU.
LARGE_PAIRS = 150_000

#: The limits of the decomposition at trace scale (:func:`solve_trace`; experiments/runs/p3_trace.py measures
#: them on the whole Philly trace): one iteration (P1's duals), chunks of 1,000 pairs, warm-up rows only for
#: datasets of at least TRACE_EXACT_SHARE · C (the rest instant, Theorem 4 (iii)), schedules settled at the end
#: only, then the resource-directive step (:func:`_directed`) and the joint windows (:func:`_joint_windows`).
#: Measured (p3_trace, 2 Dec 2026): 8 exact datasets, 2 iterations: bound 490.18 $, 13.4 × the CBA replay's CPU;
#: 4 exact, 4 iterations: 489.78 $, 11.9 ×;
#: in both every subgradient step lost bound against P1's duals, so one iteration gives the same bound, and the
#: CPU of the second pays for the resource-directive step.  Measured (``nice -n 19 cbalab bench p3-trace``,
#: 5 Dec 2026): bound 490.18 $, schedule 491.91 $ (certified gap 0.35 %; 494.18 $ and 0.81 % without the step),
#: P3 291.0 s of CPU (d58953a's two iterations without the step: 317.6 s for solve_trace alone, same machine) over a
#: CBA replay of 12.55 s: 23.2 × (the replay was 21–35 s when the 13.4 × above was measured).
TRACE_ITERATIONS = 1
#: Chunks of 1,000 pairs, not 2,000 (7 Dec 2026, one process on an idle core unless said; CHUNK_HIGHS, windows of
#: 500): on the first 20,000 Philly jobs P3 took 65.6 s for 79.2 s (beside another run), the bound 157.53655 $ for
#: 157.53937 $, the gap 0.150 % for 0.148 %; chunks of 500 took 58.0 s for a gap of 0.157 %.  On the whole trace
#: chunks of 1,000 give the bound 490.134 $ (490.184 $ with 2,000) and the gap 0.223 % (0.209 %); chunks of 500,
#: 490.052 $ and 0.244 % (beside another run).
TRACE_CHUNK_PAIRS = 1000
#: Slots per window of the joint step at trace scale (:func:`_joint_windows`, Lemma 8), with CHUNK_HIGHS.
#: Measured on the first 20,000 Philly jobs (6 Dec 2026, one process on an idle core): without the step, gap
#: 0.353 % in 66.2 s of CPU; windows of 500 slots, 0.148 % in 80.9 s; of 100, 0.208 %; of 1,000, 0.140 % for a few
#: per cent more CPU than 500.  Whole trace (two runs side by side): 500 slots, gap 0.209 %; 1,000 slots, 0.202 %.
TRACE_WINDOW_SLOTS = 500

#: HiGHS's options for every chunk's LP beside HIGHS_TOLERANCES: no presolve and the dual simplex's Devex pricing.
#: Measured on a 1,000-job window of the dynamic experiment (run 0345d692d36a36aa, 8 iterations, 7 Dec 2026): P3
#: in 16.7 s of CPU and certified ``optimal`` (gap 1.2·10⁻⁹) where HiGHS's defaults took 32.5 s (gap 1.6·10⁻⁸).
CHUNK_HIGHS = (("presolve", "off"), ("simplex_dual_edge_weight_strategy", 1))

#: CHUNK_HIGHS and no scaling: the options at trace scale (:func:`solve_trace`) and of every joint window.
#: Measured on the first 20,000 Philly jobs (7 Dec 2026, every sixth LP of each kind, one process): scaling off took
#: the priced 1,000-pair chunks from 1.72 s to 0.94 s of CPU (their bounds' sum lower by 3·10⁻¹² relative) and the
#: windows from 14.4 s to 3.7 s.  Not for the iterated solves of small windows: on the run above, without scaling
#: the bound fell by 5·10⁻⁵ relative and P3 was no longer certified; HiGHS's duals, whatever their accuracy, give a
#: valid bound (weak duality), and a window's schedule is settled and checked (Lemma 8).
TRACE_HIGHS = (*CHUNK_HIGHS, ("simplex_scale_strategy", 0))
TRACE_EXACT_SHARE = 0.1
#: Slots per block of :func:`_ramp`'s precomputed terms (tangent × slot × dataset arrays of a few MB each).
RAMP_BLOCK = 2048
#: Polyak's target at trace scale: the bound of P1's duals is already within a few per cent of the replay's cost,
#: so full steps towards 1 % above it overshoot (measured on 10,000 Philly jobs: every step lost bound).
TRACE_TARGET_GAP = 0.002


class TraceLimits(NamedTuple):
    """The limits of :func:`solve_trace`, TRACE_* by default; experiments/runs/p3_trace.py passes others to
    measure what a finer relaxation buys (more exact datasets, larger chunks)."""

    iterations: int = TRACE_ITERATIONS
    chunk_pairs: int = TRACE_CHUNK_PAIRS
    exact_share: float = TRACE_EXACT_SHARE
    target_gap: float = TRACE_TARGET_GAP
    window_slots: int = TRACE_WINDOW_SLOTS


#: The TRACE_* limits, what ``cbalab simulate --offline-optimum`` and the dynamic experiment use.
TRACE_LIMITS = TraceLimits()


def large_schedule(schedule: Schedule, cluster: Cluster, *, warmup: bool = True) -> bool:
    """Whether P3 over ``schedule`` goes to the decomposition: warm-up, continuous caches, > LARGE_PAIRS pairs."""
    return warmup and cluster.granularity == "continuous" and layout(schedule).n_pairs > LARGE_PAIRS


@dataclass
class LagrangeResult:
    """P3's Lagrangian answer: the certified lower ``bound`` ($), the IO cost ``cost_io`` of a checked schedule.

    ``status`` is ``optimal`` when the bound meets the cost by :func:`certified`, ``feasible`` when both are
    known but apart (``gap`` = (cost − bound) / cost, never below 0: the settled schedule meets the rows to
    10⁻⁹ relative, so its cost can lie a little under the bound, and ``message`` then says so),
    ``bound_only`` when no schedule was settled.
    ``bounds`` holds every iteration's dual value L (each a lower bound; ``bound`` is their maximum);
    ``at_limit`` says the run ended at its iteration limit without certifying.
    """

    status: str
    cost_io: float | None
    bound: float
    slots: int
    iterations: int
    at_limit: bool
    bounds: list[float] = field(default_factory=list)
    message: str = ""
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        """(cost − bound) / cost, the certified relative gap, 0 where the bound lies above the cost; None without a
        cost."""
        if self.cost_io is None or self.cost_io <= 0:
            return None if self.cost_io is None else 0.0
        return max(0.0, (self.cost_io - self.bound) / self.cost_io)

    def summary(self) -> dict:
        """The ``offline_optimum`` entry of summary.json (docs/interface.md), with the gap and the iterations."""
        keys = ("cost_io", "status", "bound", "gap", "slots", "iterations", "at_limit")
        return entry(self, *keys) | {"method": "lagrange"}


@dataclass
class _Chunk:
    """Pairs ``lo``..``hi`` − 1 of dataset ``k``'s layout (global slots ``slots``), free start if ``free``.

    ``d`` is d_k; ``highs`` HiGHS's options for its LPs (CHUNK_HIGHS or TRACE_HIGHS); ``basis`` keeps HiGHS's
    last basis (column and row statuses) to warm-start the next iteration; ``y``, ``b`` the last solution on the
    chunk's own pairs; ``bound`` its last certified value.
    """

    k: int
    d: float
    slots: np.ndarray
    free: bool
    highs: tuple
    basis: tuple[list, list] | None = None
    y: np.ndarray | None = None
    u: np.ndarray | None = None
    e: np.ndarray | None = None
    b: np.ndarray | None = None
    bound: float = 0.0
    priced: tuple[np.ndarray, np.ndarray] | None = None
    evidence: tuple[Arrays, np.ndarray] | None = None


def _free_start(schedule: Schedule, ks: np.ndarray, first: int, last: int, free: bool = True) -> Schedule:
    """Slots ``first`` .. ``last`` − 1 of datasets ``ks``, after a free starting slot when ``free``.

    The free slot has length 1 s and demand FREE_START_READS · d / 1 s, so it can fill the cache to any level
    e⁻ ∈ [0, 1] (its costs are set to zero by :func:`_chunk_cost`, its columns fixed by the steps).
    """
    times = schedule.times[first : last + 1]
    demand = schedule.demand[ks, first:last]
    d = schedule.size_gb[ks]
    if free:
        times = np.concatenate([[times[0] - 1.0], times])
        demand = np.hstack([FREE_START_READS * d[:, None], demand])
    return Schedule(times, demand, d)


def _chunk_schedule(schedule: Schedule, chunk: _Chunk) -> Schedule:
    """The chunk's own schedule: its slots of dataset k, after a free starting slot when ``chunk.free``."""
    return _free_start(schedule, np.array([chunk.k]), int(chunk.slots[0]), int(chunk.slots[-1]) + 1, chunk.free)


def _chunk_cost(
    base: np.ndarray, cols: dict[str, np.ndarray], at: np.ndarray, chunk: _Chunk, mu: np.ndarray, nu: np.ndarray
) -> np.ndarray:
    """The chunk's priced costs: P3's plus μ_t d on y and ν_t on b of its pairs; zero on its free slot.

    ``at`` is each pair's position in ``chunk.slots`` (−1 for the free slot).
    """
    cost = base.copy()
    own = at >= 0
    d = float(chunk.d)
    cost[cols["y"][own]] += mu[chunk.slots[at[own]]] * d
    cost[cols["b"][own]] += nu[chunk.slots[at[own]]]
    for idx in cols.values():
        cost[idx[~own]] = 0.0
    return cost


def _run_chunk_lp(rows: Arrays, basis: tuple[list, list] | None, options: tuple) -> tuple[Any, float]:
    """Run HiGHS with ``options`` (CHUNK_HIGHS or TRACE_HIGHS) on one chunk's LP ``rows`` from ``basis`` (None: cold),
    its costs scaled by their largest.

    Returns the solved ``highspy.Highs`` and the scale, by which its row duals are multiplied back to the prices.
    The priced solves (:func:`_solve_chunk`), the directed step (:func:`_solve_directed`) and the joint windows
    (:func:`_window_point`) all run through it.
    """
    import highspy

    top = float(np.max(rows.cost)) if rows.cost.size else 0.0
    scale = top if top > 0 else 1.0
    h = highspy.Highs()
    for option, setting in (("output_flag", False), ("threads", 1), *HIGHS_TOLERANCES, *options):
        h.setOptionValue(option, setting)
    rows.pass_to(h, scale)
    if basis is not None:
        start = highspy.HighsBasis()
        start.col_status = basis[0]
        start.row_status = basis[1]
        start.valid = True
        h.setBasis(start)
    h.run()
    return h, scale


def _solve_chunk(schedule: Schedule, cluster: Cluster, chunk: _Chunk, mu: np.ndarray, nu: np.ndarray) -> None:
    """Solve the chunk's LP at (μ, ν) with HiGHS from its last basis; store its solution and certified bound.

    The bound is the weak-duality value of HiGHS's row duals at the priced costs (any duals give one), floored
    at 0 (every priced cost and every column's lower bound is ≥ 0, so is the LP's optimum).
    """

    # Without B: the chunk's own rows b ≤ B are implied by the dualised Σ_k b ≤ B, and dropping them only relaxes
    # (a free slot reads 4 d in its second, more than B may allow; Theorem 4 (ii)).
    built = matrix(_chunk_schedule(schedule, chunk), replace(cluster, bandwidth_gbps=math.inf), warmup=True)
    sub, cols, rows = built
    # The chunk's layout runs from its first to its last slot with demand (Lemma 4): slot i of the chunk's
    # schedule is chunk.slots[i − 1] after a free slot, chunk.slots[i] otherwise.
    at = sub.t - (1 if chunk.free else 0)
    cost = _chunk_cost(rows.cost, cols, at, chunk, mu, nu)
    priced = replace(rows, cost=cost)
    h, scale = _run_chunk_lp(priced, chunk.basis, chunk.highs)
    sol = h.getSolution()
    own = at >= 0
    bound = 0.0
    chunk.evidence = None
    if sol.dual_valid:
        dual = np.asarray(sol.row_dual) * scale
        bound = max(0.0, certified_bound(priced, dual))
        chunk.evidence = (priced, dual)
    chunk.bound = bound
    if sol.value_valid:
        x = np.asarray(sol.col_value)
        for name in ("y", "u", "e", "b"):
            column = np.zeros(chunk.slots.size)
            column[at[own]] = x[cols[name][own]]
            setattr(chunk, name, column)
        got = h.getBasis()
        chunk.basis = (list(got.col_status), list(got.row_status)) if got.valid else None
    else:
        chunk.y = chunk.u = chunk.e = np.zeros(chunk.slots.size)
        chunk.b = schedule.demand[chunk.k, chunk.slots]
        chunk.basis = None


def _instant(
    schedule: Schedule, cluster: Cluster, ks: np.ndarray, mu: np.ndarray, nu: np.ndarray
) -> tuple[float, np.ndarray]:
    """Σ over datasets ``ks`` of their instant relaxations at (μ, ν), and their caches y (K' × S).

    Per pair: min over u ≤ y ≤ min(1, C/d), b ≥ R (1 − u) of (h p_c + μ) d y + (h p_b + ν) b, which is
    (h p_b + ν) R − min(1, C/d) max(0, (h p_b + ν) R − (h p_c + μ) d) (proofs/dynamic_lower_bound.md,
    Theorem 4 (iii)); y is min(1, C/d) where caching does not lose, else 0.
    """
    if ks.size == 0:
        return 0.0, np.zeros((0, schedule.n_slots))
    h = schedule.lengths / 3600.0
    d = schedule.size_gb[ks][:, None]
    R = schedule.demand[ks]
    read = (h * cluster.price_bandwidth + nu)[None, :] * R
    hold = (h * cluster.price_cache + mu)[None, :] * d
    top = np.minimum(1.0, cluster.cache_gb / d) if cluster.cache_gb > 0 else np.zeros_like(d)
    saving = np.maximum(0.0, read - hold)
    # Where caching neither saves nor loses (the dataset at P1's dual price), y = min(1, C/d) is a minimiser too;
    # taking it lets the schedule of :func:`_upper` cut that dataset to what C leaves, as CBA fills C.
    y = np.where((read >= hold) & (R > 0), top, 0.0)
    return float((read - top * saving).sum()), y


def _greedy_targets(schedule: Schedule, cluster: Cluster, live: np.ndarray) -> dict[str, np.ndarray]:
    """Bare cache targets (y only; K × S) of the live datasets: in every slot the datasets with p_b ρ ≥ p_c, whole
    (or C, if smaller), which :func:`_upper` cuts to C densest first, CBA's closed form per slot
    (proofs/cba_optimality.md, Theorem 1).  A schedule that needs no subproblem; :func:`_upper` gives it the fill
    its targets reach."""
    zero = np.zeros(schedule.n_slots)
    traj = {name: np.zeros((schedule.size_gb.size, schedule.n_slots)) for name in ("y", "u", "e", "b")}
    traj["y"][live] = _instant(schedule, cluster, live, zero, zero)[1]
    return traj


def _p1_duals(schedule: Schedule, cluster: Cluster) -> np.ndarray:
    """μ_t = Δ_t/3600 · max(0, p_b ρ − p_c) at the density ρ of the dataset that fills C in slot t (P1's dual).

    The datasets with p_b ρ_k > p_c in decreasing ρ_k = R_k / d_k fill C (proofs/cba_optimality.md,
    Theorem 1); where they do not fill it, μ_t = 0.
    """
    d = schedule.size_gb
    p_c, p_b = cluster.price_cache, cluster.price_bandwidth
    mu = np.zeros(schedule.n_slots)
    for part in np.array_split(np.arange(schedule.n_slots), max(1, schedule.n_slots // 4096)):
        if part.size == 0:
            continue
        rho = schedule.demand[:, part] / d[:, None]
        order = np.argsort(-rho, axis=0, kind="stable")
        rho_sorted = np.take_along_axis(rho, order, axis=0)
        filled = np.cumsum(np.where(p_b * rho_sorted > p_c, d[order], 0.0), axis=0) > cluster.cache_gb
        first = np.argmax(filled, axis=0)
        price = p_b * rho_sorted[first, np.arange(part.size)] - p_c
        mu[part] = np.where(filled.any(axis=0), np.maximum(price, 0.0), 0.0)
    return mu * schedule.lengths / 3600.0


def chunks(schedule: Schedule, exact: np.ndarray, chunk_pairs: int | None, highs: tuple) -> list[_Chunk]:
    """The chunks of the exact datasets: each dataset's pairs (first to last demand) cut every ``chunk_pairs``,
    their LPs to be run with HiGHS's options ``highs``."""
    lay = layout(schedule)
    out: list[_Chunk] = []
    for k in exact:
        slots = lay.t[lay.k == k]
        step = slots.size if chunk_pairs is None else max(1, int(chunk_pairs))
        for i in range(0, slots.size, step):
            out.append(_Chunk(int(k), float(schedule.size_gb[k]), slots[i : i + step], free=i > 0, highs=highs))
    return out


def _ramp(schedule: Schedule, y: np.ndarray) -> dict[str, np.ndarray]:
    """The fill that caches targeted at ``y`` (K' × S, rows of ``schedule``'s first K' datasets) reach, slot by slot.

    In each slot, from the previous end fill e⁻ (0 before the first), the mean fill u is the largest that every
    warm-up row of (P3b) allows when the slot reads exactly its misses, b = R (1 − u): the mean rows give
    u (1 + (1 − θ) x R) ≤ e⁻ + (1 − θ) x R + θ² ξ / 2 (x = Δ/d, ξ = x R), the held-target ramp
    u ≤ (1 − θ) y + θ e⁻ + θ² ξ / 2, and u ≤ y; then e is the largest its rows allow.  Settling the result
    (:func:`settle`) changes nothing but rounding; starting from b = R (1 − y) instead, it would read the whole
    first slot of every warm-up remotely.
    """
    d = schedule.size_gb[: y.shape[0]]
    out = {name: np.zeros_like(y) for name in ("u", "e", "b")}
    demand = schedule.demand[: y.shape[0]].T
    lengths = schedule.lengths
    before = np.zeros(y.shape[0])
    # Only e⁻ runs from slot to slot: every term without it is computed for RAMP_BLOCK slots at once (tangent ×
    # slot × dataset), each with the operations of the formulas above in the same order, so the bits are those of a
    # loop that does all of it slot by slot (checked on the first 20,000 Philly jobs; 3× faster).
    for lo in range(0, schedule.n_slots, RAMP_BLOCK):
        part = slice(lo, min(lo + RAMP_BLOCK, schedule.n_slots))
        R = demand[part]
        x = lengths[part, None] / d[None, :]
        xi = x * R
        rows = tangents(xi.ravel(), R.ravel())
        theta, keep, c = (np.stack([getattr(row, name).reshape(xi.shape) for row in rows]) for name in Tangent._fields)
        rate = (1.0 - theta) * x
        slope = rate * R
        held = keep & (theta > 0) & (R > 0)
        yt_all = y[:, part].T
        toward = (1.0 - theta) * yt_all
        for i in range(R.shape[0]):
            yt, r, rate_i = yt_all[i], R[i], rate[:, i]
            mean = np.where(keep[:, i], (before + slope[:, i] + c[:, i]) / (1.0 + slope[:, i]), np.inf)
            ramp = np.where(held[:, i], toward[:, i] + theta[:, i] * before + c[:, i], np.inf)
            u = np.maximum(np.minimum(yt, np.minimum(mean.min(axis=0), ramp.min(axis=0))), 0.0)
            b = r * (1.0 - u)
            e = np.minimum(yt, before + x[i] * b)
            end = np.where(keep[:, i], u + rate_i * b + c[:, i], np.inf)
            e = np.maximum(np.minimum(e, end.min(axis=0)), 0.0)
            t = lo + i
            out["u"][:, t], out["e"][:, t], out["b"][:, t] = u, e, b
            before = e
    return out


def trajectories(schedule: Schedule, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A schedule's ``values`` on :func:`layout`'s pairs as trajectories y, u, e, b (K × S, 0 outside the pairs)."""
    lay = layout(schedule)
    traj = {name: np.zeros((schedule.size_gb.size, schedule.n_slots)) for name in ("y", "u", "e", "b")}
    for name, value in traj.items():
        value[lay.k, lay.t] = values[name]
    return traj


def _directed(
    schedule: Schedule, cluster: Cluster, values: dict[str, np.ndarray], pieces: list[_Chunk]
) -> dict[str, np.ndarray]:
    """The resource-directive step (proofs/dynamic_lower_bound.md, Lemma 7): trajectories (y, u, e, b; K × S)
    made from the settled schedule ``values`` (on :func:`layout`'s pairs) by re-solving the exact datasets' own
    rows at the true prices, each within the capacity it holds plus what the others leave free.

    Why: the Lagrangian iterates' caches are cut to C slot by slot and settled, which leaves capacity unused in
    priced slots and fill lost across cuts; the subproblems alone cannot see either.  Here the datasets of
    ``pieces`` go in decreasing size (ties by index).  Dataset k's chunks are solved in slot order by HiGHS,
    warm-started from the chunk's last basis, with y ≤ (d_k y + s_t) / d_k and (B finite) b ≤ b + s^B_t, where
    s_t, s^B_t are the free C and B of slot t at the current point; a chunk after the first starts from its
    free slot fixed at y = e = the previous chunk's new end fill e⁻, u = 0, b = FREE_START_READS d_k (a point
    of its rows, Theorem 4 (ii)), so the chunks join into one chain of dataset k's rows; the chunk's last
    pair keeps at least the old end fill, so the old trajectory is a point of every chunk's LP and the step
    does not raise the cost.  Pairs of a chunk that its LP leaves out (after its last demand) keep their old
    values.  A dataset whose chunk HiGHS does not solve to optimality keeps its old trajectory.  The result
    still needs :func:`settle` (HiGHS meets the rows only to its tolerances) and the check of the coupling
    rows, which :func:`_upper` does.
    """
    d = schedule.size_gb
    traj = trajectories(schedule, values)
    spare = cluster.cache_gb - row_sum(d, traj["y"])
    finite_b = math.isfinite(cluster.bandwidth_gbps)
    spare_b = cluster.bandwidth_gbps - traj["b"].sum(axis=0) if finite_b else np.zeros(schedule.n_slots)
    ks = np.unique([piece.k for piece in pieces])
    for k in ks[np.argsort(-d[ks], kind="stable")]:
        new = {name: value[k].copy() for name, value in traj.items()}
        start = 0.0
        for piece in (piece for piece in pieces if piece.k == k):
            point = _directed_chunk(schedule, cluster, piece, new, spare, spare_b if finite_b else None, start)
            if point is None:  # this dataset keeps its old trajectory (the loop's else is skipped)
                break
            for name, value in point[1].items():
                new[name][point[0]] = value
            start = float(np.clip(new["e"][piece.slots[-1]], 0.0, min(1.0, cluster.cache_gb / d[k])))
        else:
            spare += (traj["y"][k] - new["y"]) * d[k]
            if finite_b:
                spare_b += traj["b"][k] - new["b"]
            for name, value in traj.items():
                value[k] = new[name]
    return traj


def _directed_chunk(
    schedule: Schedule,
    cluster: Cluster,
    piece: _Chunk,
    old: dict[str, np.ndarray],
    spare: np.ndarray,
    spare_b: np.ndarray | None,
    start: float,
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """One chunk of :func:`_directed`: the global slots of the pairs its LP holds and their new y, u, e, b, or None
    when HiGHS does not solve it.  ``old`` is the dataset's trajectory (rows of length S), ``spare`` and
    ``spare_b`` (None: B = ∞) the free C and B per slot, ``start`` the end fill the previous chunk left.  A chunk
    whose LP holds no pair of its own (no demand in its slots after a free start) keeps its old values."""
    d = piece.d
    sub, cols, rows = matrix(_chunk_schedule(schedule, piece), replace(cluster, bandwidth_gbps=math.inf))
    at = sub.t - (1 if piece.free else 0)
    own = at >= 0
    slots = piece.slots[at[own]]
    if slots.size == 0:
        return slots, {}
    lo, hi = rows.col_lo.copy(), rows.col_hi.copy()
    cap = (old["y"][slots] * d + np.maximum(spare[slots], 0.0)) / d
    hi[cols["y"][own]] = np.minimum(hi[cols["y"][own]], cap)
    if spare_b is not None:
        hi[cols["b"][own]] = np.minimum(hi[cols["b"][own]], old["b"][slots] + np.maximum(spare_b[slots], 0.0))
    free = {"y": start, "u": 0.0, "e": start, "b": FREE_START_READS * d}
    for name, fixed in free.items():
        lo[cols[name][~own]] = hi[cols[name][~own]] = fixed
    last = cols["e"][own][np.argmax(at[own])]
    lo[last] = min(hi[last], old["e"][piece.slots[int(at.max())]] * (1.0 - FEAS_RTOL))
    zero = np.zeros(schedule.n_slots)
    x = _solve_directed(
        replace(rows, cost=_chunk_cost(rows.cost, cols, at, piece, zero, zero), col_lo=lo, col_hi=hi), piece
    )
    if x is None:
        return None
    point = {name: x[cols[name][own]] for name in ("y", "u", "e", "b")}
    point["y"] = np.minimum(point["y"], cap)
    return slots, point


def _solve_directed(lp_rows: Arrays, piece: _Chunk) -> np.ndarray | None:
    """The optimal point of one chunk's LP of :func:`_directed` (HiGHS, warm-started from the chunk's last basis),
    or None when HiGHS does not report it optimal."""
    import highspy

    h, _ = _run_chunk_lp(lp_rows, piece.basis, piece.highs)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal or not h.getSolution().value_valid:
        return None
    return np.asarray(h.getSolution().col_value)


def _joint_windows(
    schedule: Schedule, cluster: Cluster, start: dict[str, np.ndarray], exact: np.ndarray, window: int
) -> tuple[dict[str, np.ndarray], int]:
    """The joint window step (proofs/dynamic_lower_bound.md, Lemma 8): trajectories (y, u, e, b; K × S) made from
    the trajectories ``start`` of a schedule that meets the coupling rows by re-solving, ``window`` slots at a time, the
    ``exact`` datasets' own rows of the window together with the window's capacity rows, at the true prices;
    and the number of windows HiGHS did not solve (they keep their old values).

    Why: the resource-directive step (:func:`_directed`) re-solves one dataset at a time, so capacity that one
    dataset holds in a slot can never pass to another that would save more with it; on the first 10,000 Philly
    jobs that trade between the exact datasets is most of the gap the step leaves
    (docs/adr/0010-p3-at-trace-scale-by-lagrangian-decomposition.md).  Every
    column outside the window's LP keeps its value and counts in the capacity rows' bounds, the window starts
    from its datasets' old fills (a fixed free slot, Theorem 4 (ii)) and each dataset's last pair keeps at least
    its old end fill, so the old point is a point of the window's LP and the step does not raise the cost.  The
    result still needs :func:`settle` and the check of the coupling rows, which :func:`_upper` does.
    """
    traj = {name: value.copy() for name, value in start.items()}
    final = schedule.n_slots - 1 - np.argmax(schedule.demand[:, ::-1] > 0, axis=1)  # each dataset's last demand
    on = np.zeros(schedule.size_gb.size, dtype=bool)
    on[exact] = True
    unsolved = 0
    for first in range(0, schedule.n_slots, window):
        last = min(first + window, schedule.n_slots)
        ks = np.flatnonzero(on & (schedule.demand[:, first:last] > 0).any(axis=1))
        if ks.size < 2 or not _binds(schedule, cluster, traj, first, last):
            continue
        point = _window_point(schedule, cluster, traj, ks, first, last, final)
        if point is None:
            unsolved += 1
            continue
        k, t, new = point
        for name, value in new.items():
            traj[name][k, t] = value
    return traj, unsolved


def _binds(schedule: Schedule, cluster: Cluster, traj: dict[str, np.ndarray], first: int, last: int) -> bool:
    """Whether C (or a finite B) is full to FEAS_RTOL in some slot ``first`` .. ``last`` − 1 of ``traj``: elsewhere
    no capacity row binds, and the datasets' own rows are what :func:`_directed` re-solves one at a time."""
    used = row_sum(schedule.size_gb, traj["y"][:, first:last])
    if (used >= cluster.cache_gb * (1.0 - FEAS_RTOL)).any():
        return True
    read = traj["b"][:, first:last].sum(axis=0)
    return math.isfinite(cluster.bandwidth_gbps) and bool((read >= cluster.bandwidth_gbps * (1.0 - FEAS_RTOL)).any())


def _window_point(
    schedule: Schedule,
    cluster: Cluster,
    traj: dict[str, np.ndarray],
    ks: np.ndarray,
    first: int,
    last: int,
    final: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None:
    """One window of :func:`_joint_windows`: slots ``first`` .. ``last`` − 1 of the datasets ``ks``, after a free
    slot fixed at their fills at the end of slot ``first`` − 1 (``final``: each dataset's last slot with demand);
    the (dataset, slot) of the pairs its LP holds and their new y, u, e, b, or None when HiGHS does not solve it
    to optimality."""
    import highspy

    d = schedule.size_gb[ks]
    sub, cols, rows = matrix(_free_start(schedule, ks, first, last), cluster, warmup=True)
    own = sub.t > 0
    k, t = ks[sub.k[own]], sub.t[own] - 1 + first
    lo, hi = rows.col_lo.copy(), rows.col_hi.copy()
    start = traj["e"][ks, first - 1] if first > 0 else np.zeros(ks.size)
    start = np.clip(start, 0.0, np.minimum(1.0, cluster.cache_gb / d))
    head = np.flatnonzero(~own)
    for name, fixed in (("y", start), ("u", np.zeros(ks.size)), ("e", start), ("b", FREE_START_READS * d)):
        lo[cols[name][head]] = hi[cols[name][head]] = fixed[sub.k[head]]
    # A dataset's last pair in the LP keeps at least its old end fill when pairs follow it: they keep their values.
    ends = np.flatnonzero(own & np.append(sub.k[1:] != sub.k[:-1], True))
    ends = ends[sub.t[ends] - 1 + first < final[ks[sub.k[ends]]]]
    old_end = traj["e"][ks[sub.k[ends]], sub.t[ends] - 1 + first]
    lo[cols["e"][ends]] = np.minimum(hi[cols["e"][ends]], old_end * (1.0 - FEAS_RTOL))
    # The capacity rows hold what every column outside the LP uses; the free slot's rows bind nothing.
    row_lo, row_hi = rows.row_lo.copy(), rows.row_hi.copy()
    slots = np.unique(sub.t)
    inside = np.zeros((schedule.size_gb.size, last - first), dtype=bool)
    inside[k, t - first] = True
    kept_y = np.where(inside, 0.0, traj["y"][:, first:last])
    kept_b = np.where(inside, 0.0, traj["b"][:, first:last])
    for group, used, top in (
        ("cache_capacity", row_sum(schedule.size_gb, kept_y), cluster.cache_gb),
        ("bandwidth_capacity", kept_b.sum(axis=0), cluster.bandwidth_gbps),
    ):
        part = rows.rows[group]
        if part.stop > part.start:
            row_hi[part] = np.where(slots > 0, top - used[np.maximum(slots, 1) - 1], math.inf)
    cost = rows.cost.copy()
    for idx in cols.values():
        cost[idx[head]] = 0.0
    window_lp = replace(rows, cost=cost, col_lo=lo, col_hi=hi, row_lo=row_lo, row_hi=row_hi)
    h, _ = _run_chunk_lp(window_lp, None, TRACE_HIGHS)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal or not h.getSolution().value_valid:
        return None
    x = np.asarray(h.getSolution().col_value)
    return k, t, {name: x[cols[name][own]] for name in ("y", "u", "e", "b")}


#: A checked P3 schedule: its values on :func:`layout`'s pairs, its cost ($), and each dataset's part of the cost.
Point = tuple[dict[str, np.ndarray], float, dict[int, float]]


def _targets(
    schedule: Schedule, cluster: Cluster, traj: dict[str, np.ndarray], instant: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The start of :func:`_uppers` for one candidate: ``traj`` with its caches cut to C where y overfills, in
    increasing order of density R_k / d_k (the densest keep theirs, as CBA fills C), and the instant datasets'
    fill made by :func:`_ramp`; returned with the factor by which each pair's y, u and e are cut."""
    over = np.flatnonzero(row_sum(schedule.size_gb, traj["y"]) > cluster.cache_gb)
    cut = traj["y"].copy()
    if over.size:
        d = schedule.size_gb
        rho = schedule.demand[:, over] / d[:, None]
        order = np.argsort(-rho, axis=0, kind="stable")
        gb = np.take_along_axis(traj["y"][:, over], order, axis=0) * d[order]
        kept = np.clip(cluster.cache_gb - (np.cumsum(gb, axis=0) - gb), 0.0, gb)
        part = cut[:, over]
        np.put_along_axis(part, order, kept / d[order], axis=0)
        cut[:, over] = part
    scale = np.divide(cut, traj["y"], out=np.ones_like(cut), where=traj["y"] > 0)
    if instant.size:
        # The instant datasets' caches are targets without a fill: give them the fill they reach (_ramp).
        ramp = _ramp(Schedule(schedule.times, schedule.demand[instant], schedule.size_gb[instant]), cut[instant])
        traj = {name: value.copy() for name, value in traj.items()}
        traj["y"][instant] = cut[instant]
        scale[instant] = 1.0
        for name, value in ramp.items():
            traj[name][instant] = value
    return traj, scale


def _uppers(
    schedule: Schedule,
    cluster: Cluster,
    candidates: list[tuple[dict[str, np.ndarray], np.ndarray]],
    known: Point | None = None,
) -> list[Point | None]:
    """Checked P3 schedules from ``candidates``, each per-dataset trajectories (y, u, e, b; K × S) with the
    datasets whose trajectories are bare targets (``instant``: their u, e, b are made by :func:`_ramp`); for
    each its point and cost, or None.

    Each candidate is cut to C (:func:`_targets`), then settled against each dataset's own rows (:func:`settle`,
    Lemma 6 of proofs/dynamic_lower_bound.md: it lowers u, e and raises b until every row but the coupling ones
    holds); the coupling rows are then checked in numpy to FEAS_RTOL, as :func:`settle` checks its rows, and the
    cost is re-computed from the prices.  Why several at once: a dataset's rows are built once for all of them.
    A dataset whose start is bit for bit its values in the settled point ``known`` keeps them and their cost
    (they met every row of its own when ``known`` was settled) without being settled again.
    """
    starts = [_targets(schedule, cluster, traj, instant) for traj, instant in candidates]
    lay = layout(schedule)
    names = ("y", "u", "e", "b")
    points: list[Point | None] = [({name: np.zeros(lay.n_pairs) for name in names}, 0.0, {}) for _ in starts]
    for k in np.unique(lay.k):
        mask = lay.k == k
        t = lay.t[mask]
        built = None
        for i, (traj, scale) in enumerate(starts):
            into = points[i]
            if into is None:
                continue
            start = {name: traj[name][k, t] * (scale[k, t] if name != "b" else 1.0) for name in names}
            if (
                known is not None
                and int(k) in known[2]
                and all(np.array_equal(start[name], known[0][name][mask]) for name in names)
            ):
                point: tuple[dict[str, np.ndarray], float] | None = (start, known[2][int(k)])
            else:
                if built is None:
                    demand = schedule.demand[[k], t[0] : t[-1] + 1]
                    built = matrix(Schedule(schedule.times[t[0] : t[-1] + 2], demand, schedule.size_gb[[k]]), cluster)
                point = settle(start, built, cluster, warmup=True)
            if point is None:
                points[i] = None
                continue
            for name in names:
                into[0][name][mask] = point[0][name]
            into[2][int(k)] = point[1]
            points[i] = (into[0], into[1] + point[1], into[2])
    return [_coupled(schedule, cluster, point, lay) if point is not None else None for point in points]


def _coupled(schedule: Schedule, cluster: Cluster, point: Point, lay: Layout) -> Point | None:
    """``point`` if it meets the coupling rows Σ_k d_k y ≤ C and Σ_k b ≤ B to FEAS_RTOL, else None (``lay`` is
    the schedule's :func:`layout`, which the caller holds)."""
    paid = np.bincount(lay.t, weights=point[0]["y"] * lay.d, minlength=schedule.n_slots)
    read = np.bincount(lay.t, weights=point[0]["b"], minlength=schedule.n_slots)
    if (paid > cluster.cache_gb * (1.0 + FEAS_RTOL) + FEAS_ATOL).any():
        return None
    if math.isfinite(cluster.bandwidth_gbps) and (read > cluster.bandwidth_gbps * (1.0 + FEAS_RTOL) + FEAS_ATOL).any():
        return None
    return point


def _upper(
    schedule: Schedule, cluster: Cluster, traj: dict[str, np.ndarray], instant: np.ndarray, known: Point | None = None
) -> Point | None:
    """A checked P3 schedule from per-dataset trajectories ``traj`` (y, u, e, b; K × S), its cost and each
    dataset's part, or None: :func:`_uppers` of one candidate."""
    return _uppers(schedule, cluster, [(traj, instant)], known)[0]


def solve_lagrange(
    schedule: Schedule,
    cluster: Cluster,
    *,
    iterations: int = ITERATIONS,
    chunk_pairs: int | None = CHUNK_PAIRS,
    exact_min_gb: float = 0.0,
    exact_share: float | None = None,
    upper_every: int = 10,
    target_gap: float = TARGET_GAP,
    priced: bool = True,
    directed: bool = True,
    window_slots: int = 0,
    highs: tuple = CHUNK_HIGHS,
) -> LagrangeResult:
    """P3's certified lower bound by Lagrangian decomposition over datasets, and a checked schedule (module doc).

    ``iterations`` subgradient steps at most (the deterministic limit); ``chunk_pairs`` cuts exact datasets'
    LPs (None: whole); datasets smaller than ``exact_min_gb`` GB (or, when given, ``exact_share`` · C) get
    their instant relaxation; a schedule is built from the iterates (and their mean) and settled every
    ``upper_every`` iterations and at the end (0: never; CBA's targets are settled at the first iteration when
    ``priced``, whatever ``upper_every``); Polyak's target lies at most
    ``target_gap`` above the best bound.  ``priced`` False starts from zero multipliers instead of P1's
    duals: one iteration is then every dataset's LP alone with all of C, optimal when the joined schedule
    meets the coupling rows (Lemma 5 (i)).  ``directed`` False leaves out the resource-directive step
    (:func:`_directed`, Lemma 7) after the last iteration; ``window_slots`` > 0 adds the joint window step
    (:func:`_joint_windows`, Lemma 8) over windows of that many slots after it.  ``highs`` are HiGHS's options for
    the chunks' LPs (CHUNK_HIGHS; TRACE_HIGHS at trace scale).  Continuous caches only.
    """
    cluster.check()
    if cluster.granularity != "continuous":
        raise InstanceError("granularity", cluster.granularity, "the Lagrangian decomposition is for continuous caches")
    if iterations < 1:
        raise InstanceError("iterations", iterations, "must be >= 1")
    if upper_every < 0:
        raise InstanceError("upper_every", upper_every, "must be >= 0 (0: no schedule from the iterates)")
    S = schedule.n_slots
    lay = layout(schedule)
    if lay.n_pairs == 0:
        return LagrangeResult("optimal", 0.0, 0.0, S, 0, False, [0.0], "no demand")
    live = np.unique(lay.k)
    if exact_share is not None:
        exact_min_gb = exact_share * cluster.cache_gb
    exact = live[schedule.size_gb[live] >= exact_min_gb]
    instant = np.setdiff1d(live, exact)
    pieces = chunks(schedule, exact, chunk_pairs, highs)
    # Multipliers only where the coupling row can bind: the live datasets' sizes (or demands) exceed C (or B).
    room = np.bincount(lay.t, weights=np.minimum(lay.d, cluster.cache_gb), minlength=S)
    can_c = room > cluster.cache_gb
    finite_b = math.isfinite(cluster.bandwidth_gbps)
    can_b = (schedule.demand.sum(axis=0) > cluster.bandwidth_gbps) if finite_b else np.zeros(S, dtype=bool)
    mu = np.where(can_c, _p1_duals(schedule, cluster), 0.0) if priced else np.zeros(S)
    nu = np.zeros(S)
    B = cluster.bandwidth_gbps if finite_b else 0.0
    best_bound = -math.inf
    best_at: tuple[np.ndarray, np.ndarray, list[tuple[Arrays, np.ndarray] | None]] | None = None
    best: Point | None = None
    bounds: list[float] = []
    factor, stall = 1.0, 0
    traj = {name: np.zeros((schedule.size_gb.size, S)) for name in ("y", "u", "e", "b")}
    ys = traj["y"]
    mean = {name: np.zeros_like(value) for name, value in traj.items()}
    done, norm = 0, math.inf
    for it in range(iterations):
        done = it + 1
        total, y_inst = _instant(schedule, cluster, instant, mu, nu)
        for name in ("y", "u", "e"):
            traj[name][instant] = y_inst
        traj["b"][instant] = schedule.demand[instant] * (1.0 - y_inst)
        reads = np.zeros(S)
        for piece in pieces:
            if piece.priced is None or not (
                np.array_equal(piece.priced[0], mu[piece.slots]) and np.array_equal(piece.priced[1], nu[piece.slots])
            ):
                _solve_chunk(schedule, cluster, piece, mu, nu)
                piece.priced = (mu[piece.slots].copy(), nu[piece.slots].copy())
            total += piece.bound
            for name in ("y", "u", "e", "b"):
                traj[name][piece.k, piece.slots] = getattr(piece, name)
            reads[piece.slots] += piece.b
        value = total - cluster.cache_gb * float(mu.sum()) - B * float(nu.sum())
        bounds.append(value)
        # The mean of the iterates' trajectories meets every dataset's own rows (each set is convex) and tends to
        # an optimum's as the multipliers converge, where a single iterate's caches are all-or-nothing; at the
        # first iterate it is the iterate.
        for name in mean:
            mean[name] += (traj[name] - mean[name]) / (it + 1)
        g_c = np.where(can_c, row_sum(schedule.size_gb, ys) - cluster.cache_gb, 0.0)
        if finite_b:
            reads += (schedule.demand[instant] * (1.0 - y_inst)).sum(axis=0)
        g_b = np.where(can_b, reads - B, 0.0) if finite_b else np.zeros(S)
        # Projected subgradient: components that would go below 0 from 0 do not count in the step length.
        g_c = np.where((mu <= 0) & (g_c < 0), 0.0, g_c)
        g_b = np.where((nu <= 0) & (g_b < 0), 0.0, g_b)
        norm = exact_dot(g_c, g_c) + exact_dot(g_b, g_b)
        last = it == iterations - 1 or norm == 0.0
        tries: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
        if upper_every > 0 and (it % upper_every == upper_every - 1 or last):
            tries += [(candidate, instant) for candidate in ((traj, mean) if it else (traj,))]
        if it == 0 and priced:  # CBA's targets, beside the subproblems' schedules (the join is alone unpriced)
            tries.append((_greedy_targets(schedule, cluster, live), live))
        for point in _uppers(schedule, cluster, tries) if tries else []:
            if point is not None and (best is None or point[1] < best[1]):
                best = point
        if value > best_bound:
            best_bound, stall = value, 0
            best_at = (mu.copy(), nu.copy(), [piece.evidence for piece in pieces])
        else:
            stall += 1
            if stall >= PATIENCE:
                factor, stall = factor / 2.0, 0
        if last or (best is not None and certified(best[1], max(best_bound, 0.0))):
            break
        # Polyak's step towards a target above the best bound: the best schedule's cost, but at most
        # TARGET_GAP above the bound, since a repaired schedule is often much dearer than the optimum.
        target = best_bound + target_gap * abs(best_bound)
        if best is not None:
            target = min(target, best[1])
        step = factor * max(target - value, 1e-12 * max(1.0, abs(target))) / norm
        mu = np.maximum(0.0, mu + step * g_c)
        nu = np.maximum(0.0, nu + step * g_b)
    unsolved = 0
    if (directed or window_slots > 0) and best is not None and pieces and not certified(best[1], max(best_bound, 0.0)):
        # The directed trajectories meet the coupling rows by construction, so the joint step starts from them
        # unsettled; _upper settles and checks the joint result, and the directed one only if that is no cheaper.
        tried = [_directed(schedule, cluster, best[0], pieces)] if directed else []
        if window_slots > 0:
            start = tried[0] if directed else trajectories(schedule, best[0])
            joint, unsolved = _joint_windows(schedule, cluster, start, exact, window_slots)
            tried.insert(0, joint)
        for candidate in tried:
            point = _upper(schedule, cluster, candidate, np.empty(0, dtype=np.int64), best)
            if point is not None and point[1] < best[1]:
                best = point
                break
    bound = max(best_bound, 0.0)
    if best_at is not None:
        bound = safe_float(bound, _exact_value(schedule, cluster, instant, B, best_at), lower=True)
    values, cost = (best[0], best[1]) if best is not None else ({}, None)
    proven = certified(cost, bound)
    status = "optimal" if proven else ("feasible" if cost is not None else "bound_only")
    note = (
        f"{len(pieces)} exact chunk LP(s) of {exact.size} dataset(s), {instant.size} instant dataset(s); "
        f"{done} iteration(s)" + ("; stopped at a zero subgradient (the multipliers maximise L)" if norm == 0.0 else "")
    )
    if unsolved:
        note += f"; {unsolved} joint window(s) not solved by HiGHS kept their values"
    if cost is not None and bound > cost:
        note += (
            f"; the bound lies {bound - cost:.3g} above the settled schedule's cost (the schedule meets the rows to "
            "10⁻⁹ relative, proofs/dynamic_lower_bound.md, Lemma 6): the gap is reported as 0"
        )
    return LagrangeResult(status, cost, bound, S, done, not proven and done == iterations, bounds, note, values)


def _exact_value(
    schedule: Schedule,
    cluster: Cluster,
    instant: np.ndarray,
    B: float,
    at: tuple[np.ndarray, np.ndarray, list[tuple[Arrays, np.ndarray] | None]],
) -> Fraction:
    """max(0, L(μ, ν)) of the best iteration re-derived exactly from the data and the multipliers (Theorem 4;
    docs/model.md §8): each chunk's weak-duality value of its row duals (0 without duals, as in the float
    sum), the instant datasets' closed form, minus Σ_t (C μ_t + B ν_t), every product and sum exact.
    """
    mu, nu, evidence = at
    total = Fraction(0)
    for item in evidence:
        if item is not None:
            a, dual = item
            value = lp_dual_value(a.cost, a.start, a.index, a.value, a.row_lo, a.row_hi, a.col_lo, a.col_hi, dual)
            total += max(Fraction(0), value.bound) if value is not None else Fraction(0)
    if instant.size:
        prices = (cluster.price_cache, cluster.price_bandwidth)
        size, demand = schedule.size_gb[instant], schedule.demand[instant]
        total += instant_relaxation_exact(schedule.lengths, prices, cluster.cache_gb, size, demand, mu, nu)
    total -= Fraction(cluster.cache_gb) * exact_sum(mu) + Fraction(B) * exact_sum(nu)
    return max(total, Fraction(0))


def solve_trace(schedule: Schedule, cluster: Cluster, limits: TraceLimits = TRACE_LIMITS) -> LagrangeResult:
    """:func:`solve_lagrange` with the trace-scale ``limits`` (the offline optimum of a large schedule), its
    upper bound from CBA's targets alone (``upper_every`` 0), its LPs without scaling (TRACE_HIGHS).

    Why not the iterate's schedule too: one iteration at P1's duals leaves the subproblems' caches all or nothing,
    and cut to C they cost far more than CBA's targets (7 Dec 2026: 518.26 $ against 494.18 $ on the whole Philly
    trace, 164.61 $ against 158.94 $ on its first 20,000 jobs), while settling them took about a tenth of P3's CPU.
    """
    return solve_lagrange(
        schedule,
        cluster,
        iterations=limits.iterations,
        chunk_pairs=limits.chunk_pairs,
        exact_share=limits.exact_share,
        upper_every=0,
        target_gap=limits.target_gap,
        window_slots=limits.window_slots,
        highs=TRACE_HIGHS,
    )
