"""CBA's roundings for the integer variants of the cost problem P1 (docs/model.md §4; proofs/cba_integer_gap.md).

Whole-dataset or fixed-block cache granularity and/or bandwidth bought in
tiers: :func:`cba_integer` dispatches on the variant through ``_VARIANTS``
and returns the proven rounding of CBA's closed form (algorithms/cba.py) with
its lower bound and a-priori gap bound (Theorems I1-I5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cbalab.algorithms.cba import REFUSED, Feeding, feed, partial, preferred
from cbalab.models.certify import accepted_limits, certify, widened_limits
from cbalab.models.evaluate import MODEL_SHARE, RTOL, Allocation, block_counts, least_feeding, tolerated
from cbalab.models.exact_bounds import cost_lower_bound, exact_sum, round_down
from cbalab.models.instance import Instance
from cbalab.models.kernels import prefix_fill
from cbalab.models.result import IntegerFacts
from cbalab.models.types import Status

# ------------------------------------------------- integer variants (docs/model.md §4, proofs/cba_integer_gap.md)
#
# Every rounding works on the substituted form of P1: cost = p_c Σ c_k + p_b · (remote IO, or the provisioned
# P = m·β under tiers), remote IO = Σ_k R_k (1 - min(c_k, d_k)/d_k).  Under tiers the cap B is first lowered to
# B̃ = ⌊B/β⌋·β, the most bandwidth a whole number of tiers can provision (Lemma I0 of the proof file).


@dataclass(frozen=True)
class _Setting:
    """What every rounding shares: sizes d_k, demands R_k, densities ρ_k, the ρ order and the caps C and B (or B̃)."""

    inst: Instance
    d: np.ndarray
    R: np.ndarray
    rho: np.ndarray
    order: np.ndarray
    cap_c: float
    cap_b: float

    @property
    def p_c(self) -> float:
        """Cache price p_c ($/h per GB)."""
        return self.inst.price_cache

    @property
    def p_b(self) -> float:
        """Bandwidth price p_b ($/h per GB/s)."""
        return self.inst.price_bandwidth

    @property
    def total(self) -> float:
        """Σ_k R_k, the remote IO with no cache (GB/s)."""
        return float(self.R.sum())


def _setting(inst: Instance) -> _Setting:
    d = inst.dataset_size_gb
    R = inst.dataset_demand(inst.job_io_gbps)
    rho = R / d
    return _Setting(inst, d, R, rho, np.argsort(-rho, kind="stable"), inst.cache_gb, _tier_cap(inst))


#: Share of the referee's slack (docs/model.md (8.1)) that :func:`_tol` allows on top of a cap.
_TOL_SHARE = 0.1


def _tier_cap(inst: Instance) -> float:
    """B̃ = ⌊B/β⌋·β under tiers of size β (B itself without tiers or when B is unlimited); Lemma I0.

    B is taken as the referee accepts it, as P1's MILP states it (``tolerated(B, MODEL_SHARE)``,
    docs/model.md (8.1)); without tiers less the share :func:`_tol` adds on top, so that an answer within
    ``cap + _tol(cap)`` is one the referee accepts.  Below 1 GB/s that slack is more than rounding: at
    B = 1.44e-9 GB/s it lets 1.6e-9 GB/s of remote IO through, which the MILP found and CBA called infeasible.
    """
    step = inst.bandwidth_step_gbps
    if not np.isfinite(inst.bandwidth_gbps):
        return inst.bandwidth_gbps
    if step is None:
        return tolerated(inst.bandwidth_gbps, MODEL_SHARE - _TOL_SHARE)
    return float(np.floor(tolerated(inst.bandwidth_gbps, MODEL_SHARE) / step)) * step


def _tol(x: float) -> float:
    """A tenth of the referee's slack at x: anything within it here passes models/evaluate.py."""
    return _TOL_SHARE * RTOL * max(1.0, abs(x)) if np.isfinite(x) else 0.0


def _remote(s: _Setting, cache: np.ndarray) -> float:
    """Remote IO Σ_k R_k (1 - h_k) of an occupied cache, with h_k = min(c_k, d_k)/d_k (docs/model.md §3-§4)."""
    return float(np.dot(s.R, 1.0 - np.minimum(cache, s.d) / s.d))


def _io_cost(s: _Setting, cache: np.ndarray, provisioned: float | None) -> float:
    """p_c Σ c_k + p_b · (remote IO, or the provisioned bandwidth under tiers)."""
    bandwidth = _remote(s, cache) if provisioned is None else provisioned
    return s.p_c * float(cache.sum()) + s.p_b * bandwidth


def _io_cost_below(s: _Setting, cache: np.ndarray, provisioned: float | None) -> float:
    """:func:`_io_cost` taken exactly and rounded down: a variant's proven optimum as a bound that holds in floats."""
    d = [Fraction(x) for x in s.d.tolist()]
    held = [min(Fraction(c), dk) for c, dk in zip(cache.tolist(), d)]
    if provisioned is None:
        bandwidth = sum((Fraction(r) * (dk - h) / dk for r, dk, h in zip(s.R.tolist(), d, held)), Fraction(0))
    else:
        bandwidth = Fraction(provisioned)
    exact = Fraction(s.p_c) * exact_sum(cache) + Fraction(s.p_b) * bandwidth
    # The answer is the variant's optimum up to the rounding of its float cover (a fill of K datasets, each step
    # rounded once): an allowance of (K + 4)·2^-52 of the cost covers it (proofs/cba_integer_gap.md, "Bounds").
    return round_down(exact * (1 - Fraction(s.d.size + 4, 2**52)))


def _fits(s: _Setting, cache: np.ndarray, provisioned: float | None) -> bool:
    """Σ c_k ≤ C and remote IO ≤ B (and ≤ the provisioned bandwidth under tiers)."""
    limit = s.cap_b if provisioned is None else min(s.cap_b, provisioned)
    return float(cache.sum()) <= s.cap_c + _tol(s.cap_c) and _remote(s, cache) <= limit + _tol(limit)


def _cover_continuous(s: _Setting, limit: float) -> np.ndarray | None:
    """The least continuous cache that brings remote IO down to ``limit``: ρ-ordered fill (fractional knapsack).

    None when even that exceeds C.  Lemma I2 of proofs/cba_integer_gap.md.
    """
    cache = np.zeros_like(s.d)
    R_s, d_s = s.R[s.order], s.d[s.order]
    # Only read datasets (R_k > 0, a prefix of the ρ order) cut remote IO.  The remote IO left after caching the
    # first t of them whole is the tail sum ``after[t - 1]``, summed from the tail: a difference Σ R − limit (or a
    # running sum compared with it) loses a small dataset's IO beside a large one (100 GB/s beside 1.1e23 GB/s
    # rounds away, and the cover then stopped a dataset short and found nothing).
    read = R_s[: int(np.count_nonzero(R_s > 0))]
    if read.size and float(read.sum()) > limit:
        after = np.append(np.cumsum(read[::-1])[::-1][1:], 0.0)
        t = int(np.argmax(after <= limit)) if (after <= limit).any() else read.size - 1
        c_s = np.where(np.arange(d_s.size) < t, d_s, 0.0)
        c_s[t] = partial(d_s[t], read[t], (after[t] + read[t] - limit) / read[t], limit - after[t])
        cache[s.order] = c_s
    return cache if _fits(s, cache, limit) else None


@dataclass(frozen=True)
class _Blocks:
    """Block caching as unit items (Lemma I1): dataset k's first ⌈d_k/u⌉-1 blocks save ρ_k·u GB/s each, its last
    saves ρ_k·ℓ_k (ℓ_k the part of the last block that holds data).  Items are grouped per (dataset, kind) and the
    groups sorted by decreasing saving, so the first t items are a best choice of t blocks."""

    u: float
    dataset: np.ndarray
    count: np.ndarray
    value: np.ndarray
    cum_n: np.ndarray
    cum_v: np.ndarray
    top: int

    def take(self, t: int, n_datasets: int) -> np.ndarray:
        """Occupied cache u·n_k of the first t items."""
        taken = np.clip(t - (self.cum_n - self.count), 0, self.count)
        return self.u * np.bincount(self.dataset, weights=taken, minlength=n_datasets)

    def fewest(self, limit: float) -> int | None:
        """Fewest items that leave at most ``limit`` GB/s of remote IO (None: all of them leave more).

        The remote IO left when the groups before i are taken is a tail sum of the items' savings, summed from the
        tail: a difference Σ R − limit compared with a running sum loses a small dataset's IO beside a large one
        (100 GB/s beside 1.1e23 GB/s), and the cover then took a dataset's blocks too few.
        """
        saved = self.count * self.value
        after = np.append(np.cumsum(saved[::-1])[::-1][1:], 0.0)  # left once groups 0 … i are all taken
        if saved.size == 0 or float(saved.sum()) <= limit:
            return 0
        ok = after <= limit
        if not ok.any():
            return None
        i = int(np.argmax(ok))
        keep = int(np.floor((limit - after[i]) / self.value[i]))  # items of group i that may stay out
        before_n = int(self.cum_n[i - 1]) if i else 0
        return before_n + int(np.clip(self.count[i] - keep, 0, self.count[i]))


def _blocks(s: _Setting) -> _Blocks:
    u = s.inst.block_size_gb
    n = block_counts(s.d, u)  # the referee's count: 0 for a dataset below 1e-9 of a block, which is never cached
    last = np.minimum(u, s.d - (n - 1.0) * u)
    k = np.flatnonzero((s.R > 0) & (n >= 1))
    dataset = np.concatenate([k, k])
    count = np.concatenate([n[k] - 1.0, np.ones(k.size)])
    value = np.concatenate([s.rho[k] * u, s.rho[k] * last[k]])
    order = np.argsort(-value, kind="stable")
    keep = order[count[order] > 0]
    count, value = count[keep].astype(np.int64), value[keep]
    top = int(np.floor((s.cap_c + _tol(s.cap_c)) / u))
    return _Blocks(u, dataset[keep], count, value, np.cumsum(count), np.cumsum(count * value), top)


def _cover_blocks(s: _Setting, limit: float, blocks: _Blocks | None = None) -> np.ndarray | None:
    """The fewest whole blocks that bring remote IO down to ``limit`` (exact, Lemma I1); None if > ⌊C/u⌋ needed."""
    blocks = blocks or _blocks(s)
    t = blocks.fewest(limit + _tol(limit))
    if t is None or t > blocks.top:
        return None
    cache = blocks.take(t, s.d.size)
    return cache if _fits(s, cache, limit) else None


def _priced_blocks(s: _Setting) -> np.ndarray | None:
    """Block CBA: the first t* = clamp(t₀, t_min, ⌊C/u⌋) items, t₀ = #items with p_b·saving > p_c·u (Theorem I1)."""
    blocks = _blocks(s)
    t_min = blocks.fewest(s.cap_b + _tol(s.cap_b))
    if t_min is None or t_min > blocks.top:
        return None
    t0 = int(blocks.count[s.p_b * blocks.value > s.p_c * blocks.u].sum())
    return blocks.take(min(max(t0, t_min), blocks.top), s.d.size)


def _greedy_whole(s: _Setting, start: np.ndarray, limit: float, priced: bool) -> list[np.ndarray]:
    """Whole datasets in ρ order after ``start``: take one that fits in C if it pays (``priced``) or remote IO still
    exceeds ``limit``.  Returns the occupied caches of the final choice and, for every dataset taken only
    because remote IO still exceeded ``limit``, of the choice so far completed instead by the one dataset that
    closes the gap at least cost (:func:`_complete`; the step-wise completion of covering-knapsack greedy)."""
    z = start.copy()
    used = float(s.d[z].sum())
    remote = s.total - float(s.R[z].sum())
    worth = s.p_b * s.R > s.p_c * s.d
    room = s.cap_c + _tol(s.cap_c)
    out = []
    for k in s.order.tolist():
        if z[k] or used + s.d[k] > room or s.R[k] <= 0:
            continue
        forced = remote > limit + _tol(limit)
        if forced and not (priced and worth[k]):
            done = _complete(s, z, limit, priced)
            if done is not None:
                out.append(np.where(done, s.d, 0.0))
        if (priced and worth[k]) or forced:
            z[k] = True
            used += float(s.d[k])
            remote -= float(s.R[k])
    return [np.where(z, s.d, 0.0), *out]


def _whole_starts(s: _Setting) -> list[np.ndarray]:
    """Greedy starts that need no LP: nothing, and each of the single datasets that fit in C with the largest
    R_k (most remote IO saved) and the largest p_b R_k - p_c d_k (most money saved: greedy plus best single
    item is the classic ½-approximation of the knapsack)."""
    none = np.zeros(s.d.size, dtype=bool)
    starts = [none]
    fits = np.flatnonzero(s.d <= s.cap_c + _tol(s.cap_c))
    for score in (s.R, s.p_b * s.R - s.p_c * s.d) if fits.size else ():
        one = none.copy()
        one[fits[np.argmax(score[fits])]] = True
        starts.append(one)
    return starts


def _complete(s: _Setting, z: np.ndarray, limit: float, priced: bool) -> np.ndarray | None:
    """z plus the one dataset outside z that alone brings remote IO down to ``limit``, fits in C and adds the
    least cost (p_c d_k, less p_b R_k if ``priced``); None when remote IO is already within ``limit`` or no
    dataset does.  Rounding the LP's fractional dataset up is one such choice (Theorem I3)."""
    residual = s.total - float(s.R[z].sum()) - limit
    room = s.cap_c + _tol(s.cap_c) - float(s.d[z].sum())
    short = residual - _tol(limit)
    ok = np.flatnonzero(~z & (short <= s.R) & (s.d <= room))
    if residual <= _tol(limit) or not ok.size:
        return None
    cost = s.p_c * s.d[ok] - (s.p_b * s.R[ok] if priced else 0.0)
    out = z.copy()
    out[ok[np.argmin(cost)]] = True
    return out


def _exchanges(s: _Setting, z: np.ndarray, t: np.ndarray) -> list[np.ndarray]:
    """z with the datasets of ``t`` added and, to make room, one dataset of z that frees enough cache removed:
    the one of least profit p_b R_k - p_c d_k, and the one of least saving R_k (one exchange step of knapsack
    local search, for the cost and for the bandwidth cap); none if no dataset frees enough."""
    add = t & ~z
    if not add.any():
        return []
    short = float(s.d[z | add].sum()) - s.cap_c - _tol(s.cap_c)
    if short <= 0:
        return [z | add]
    ok = np.flatnonzero(z & (short <= s.d))
    out = []
    for loss in (s.p_b * s.R[ok] - s.p_c * s.d[ok], s.R[ok]) if ok.size else ():
        swapped = z | add
        swapped[ok[np.argmin(loss)]] = False
        out.append(swapped)
    return out


def _cover_whole(s: _Setting, limit: float) -> np.ndarray | None:
    """Whole datasets that bring remote IO down to ``limit`` at little cache (greedy, not exact: a knapsack).

    Starts: the datasets the least continuous cover (:func:`_cover_continuous`) holds whole, that set completed
    by one dataset, nothing, the largest-R dataset; each completed greedily in ρ order; the least cache wins.
    """
    starts: list[np.ndarray | None] = [*_whole_starts(s)]
    lp = _cover_continuous(s, limit)
    if lp is not None:
        full = lp >= s.d
        starts += [full, _complete(s, full, limit, priced=False)]
    best = None
    for start in starts:
        for cache in _greedy_whole(s, start, limit, priced=False) if start is not None else ():
            if _fits(s, cache, limit) and (best is None or cache.sum() < best.sum()):
                best = cache
    return best


def _whole_saving_bound(s: _Setting) -> float:
    """Martello-Toth bound U2 ≥ the most remote IO whole datasets within C can save (Theorem I3 (iii)).

    With datasets in ρ order and s the first that does not fit after its predecessors, U0 bounds the choices
    without s (fill the rest of C at ρ_{s+1}), U1 those with s (give up d_s - rest of C at ρ_{s-1}).
    """
    R_s, d_s, rho_s = s.R[s.order], s.d[s.order], s.rho[s.order]
    room = s.cap_c + _tol(s.cap_c)
    cum = np.cumsum(d_s)
    i = int(np.searchsorted(cum, room, side="right"))
    if i == cum.size:
        return s.total
    base = float(R_s[:i].sum())
    rest = room - (float(cum[i - 1]) if i else 0.0)
    u0 = base + rest * (float(rho_s[i + 1]) if i + 1 < cum.size else 0.0)
    u1 = base + float(R_s[i]) - (float(d_s[i]) - rest) * float(rho_s[i - 1]) if i and d_s[i] <= room else -np.inf
    return max(u0, u1)


@dataclass
class _Answer:
    """A rounding's result: occupied cache, provisioned bandwidth (tiers), proven IO lower bound, a-priori gap."""

    cache: np.ndarray | None
    provisioned: float | None
    io_bound: float
    gap_bound: float | None
    reason: str | None = None


def _cheapest(
    s: _Setting, plans: Sequence[tuple[np.ndarray | None, float | None]]
) -> tuple[np.ndarray, float | None] | None:
    ok = [(c, b) for c, b in plans if c is not None and _fits(s, c, b)]
    return min(ok, key=lambda p: _io_cost(s, *p)) if ok else None


def _continuous_lp(s: _Setting) -> Feeding:
    """Continuous CBA (Theorem 1 of proofs/cba_optimality.md) with the setting's cap (B̃ under tiers)."""
    inst = s.inst if s.cap_b == s.inst.bandwidth_gbps else s.inst.replace(bandwidth_gbps=s.cap_b)
    return feed(inst, inst.job_io_gbps)


def _whole(s: _Setting) -> _Answer:
    """Whole-dataset CBA (Theorem I3): round the continuous optimum's one fractional dataset t down (A) or up (B),
    complete greedily in ρ order, also try greedy from scratch and from the largest-R dataset; keep the cheapest."""
    lp = _continuous_lp(s)
    if lp.cache_gb is None:
        return _Answer(None, None, np.nan, None, lp.reason)
    full = lp.cache_gb >= s.d
    rounded = [full, full | (lp.cache_gb > 0)]
    caches = [np.where(z, s.d, 0.0) for z in rounded]
    deltas = [_io_cost(s, c, None) - lp.io_cost for c in caches if _fits(s, c, None)]
    starts = [*rounded, _complete(s, full, s.cap_b, priced=True), *_exchanges(s, full, rounded[1]), *_whole_starts(s)]
    plans = [(c, None) for z in starts if z is not None for c in _greedy_whole(s, z, s.cap_b, priced=True)]
    best = _cheapest(s, plans)
    if best is not None:
        return _Answer(best[0], None, lp.io_bound, max(0.0, min(deltas)) if deltas else None)
    saving = _whole_saving_bound(s)
    if saving < s.total - s.cap_b - _tol(s.cap_b):
        reason = (
            f"infeasible: whole datasets within C = {s.cap_c:.6g} GB save at most {saving:.6g} GB/s of remote IO "
            f"(Martello-Toth bound), short of the {s.total - s.cap_b:.6g} GB/s that {_cap_text(s)} requires "
            "(Theorem I3 (iii))"
        )
        return _Answer(None, None, lp.io_bound, None, reason)
    return _Answer(None, None, lp.io_bound, None, _undecided(s))


def _undecided(s: _Setting) -> str:
    return (
        "undecided: the continuous relaxation is feasible but no greedy choice of whole datasets brings remote IO "
        f"under B = {s.cap_b:.6g} GB/s within C = {s.cap_c:.6g} GB; whether one exists is a knapsack question "
        "(NP-complete) that CBA does not decide; solve with --method milp"
    )


def _blocks_priced(s: _Setting) -> _Answer:
    """Block CBA, exact (Theorem I1): its cost is also the proven lower bound."""
    cache = _priced_blocks(s)
    if cache is None:
        reason = (
            f"infeasible: the ⌊C/u⌋ = {int(np.floor(s.cap_c / s.inst.block_size_gb))} blocks of highest saving still "
            f"leave more than {_cap_text(s)} of remote IO (Theorem I1)"
        )
        return _Answer(None, None, np.nan, None, reason)
    return _Answer(cache, None, _io_cost_below(s, cache, None), 0.0)


def _tiers(
    s: _Setting,
    base: _Answer,
    cover: Callable[[_Setting, float], np.ndarray | None],
    scan: int = 0,
    exact_cover: bool = False,
) -> _Answer:
    """Bandwidth tiers on top of a rounding ``base`` solved with cap B̃ (Theorems I2, I4, I5).

    Candidates: base's cache with m↑ = ⌈P/β⌉ tiers (P its remote IO), and for m ∈ {⌊P/β⌋, m↑, ⌊P*/β⌋, ⌈P*/β⌉,
    ⌊B̃/β⌋} (P* the continuous optimum's remote IO) the least cache that fits the remote IO in m·β (``cover``);
    the cheapest feasible one wins.  The a-priori gap grows by p_b (m↑·β - P) < p_b·β.  Then, when at most
    ``scan`` tier counts can still beat that (:func:`_tier_range`), every one of them is tried: with an
    ``exact_cover`` this is the exact optimum (Theorem I4 (ii)).
    """
    step = s.inst.tier_gbps
    if base.cache is None:
        if not np.isfinite(s.cap_b):
            return _Answer(None, None, base.io_bound, None, base.reason)
        capped = float(np.rint(s.cap_b / step)) * step
        found = cover(s, capped)
        if found is None:
            return _Answer(None, None, base.io_bound, None, base.reason)
        return _Answer(found, capped, base.io_bound, None)
    remote = _remote(s, base.cache)
    up = _tiers_up(remote, step)
    tiers = {up, _tiers_down(remote, step)}
    lp = _continuous_lp(s)
    if lp.bandwidth_gbps is not None:
        lp_remote = float(lp.bandwidth_gbps.sum())
        tiers |= {_tiers_down(lp_remote, step), _tiers_up(lp_remote, step)}
    if np.isfinite(s.cap_b):
        tiers.add(float(np.rint(s.cap_b / step)))
    plans = [(base.cache, up * step)] + [(cover(s, m * step), m * step) for m in sorted(tiers)]
    best = _cheapest(s, plans) or (base.cache, up * step)
    lo, hi = _tier_range(s, step, _io_cost(s, *best))
    if hi - lo + 1 <= scan:
        best = _cheapest(s, [best] + [(cover(s, m * step), m * step) for m in range(lo, hi + 1)]) or best
        if exact_cover:
            return _Answer(best[0], best[1], _io_cost_below(s, *best), 0.0)
    slack = s.p_b * (up * step - remote)
    return _Answer(best[0], best[1], base.io_bound, None if base.gap_bound is None else base.gap_bound + slack)


def _tiers_up(x: float, step: float) -> float:
    """⌈x/β⌉ up to a relative slack on x: the fewest whole tiers of β GB/s that provision x GB/s, never -0.

    The slack is the share :data:`_TOL_SHARE` of the referee's relative one, taken on x itself: a fixed part of a
    tier (1e-10 of β) was more than all of x once β passed 10¹⁰ x, and ⌈x/β − slack⌉ came out −0 tiers; a fixed
    part of a GB/s (:func:`_tol` below 1 GB/s) was all of x in small units (rates of 1e-8 GB/s), where it let a
    tier too few through.  Relative to x it is neither, in any unit (docs/model.md §8).
    """
    return max(0.0, float(np.ceil(x * (1.0 - _TOL_SHARE * RTOL) / step)))


def _tiers_down(x: float, step: float) -> float:
    """⌊x/β⌋ up to the relative slack of :func:`_tiers_up`: the most whole tiers within x."""
    return float(np.floor(x * (1.0 + _TOL_SHARE * RTOL) / step))


def _tier_range(s: _Setting, step: float, best: float) -> tuple[int, int]:
    """The tier counts m that can cost less than ``best``: m·β at least the least remote IO any cache within C
    leaves (ρ-ordered fill of C), m·β ≤ B̃ (or ≤ ⌈Σ R/β⌉·β, enough for everything, when B is unlimited), and
    p_b·m·β ≤ best (Theorem I4 (ii)).  Each slack is relative to its quantity (GB/s, $/h), never a part of a tier."""
    fill = prefix_fill(s.d, s.order, s.cap_c)[s.order]
    lo = int(_tiers_up(s.total - float(np.dot(s.rho[s.order], fill)), step))
    top = float(np.rint(s.cap_b / step)) if np.isfinite(s.cap_b) else float(np.ceil(s.total / step))
    if s.p_b > 0:
        top = min(top, float(np.floor(best * (1.0 + _TOL_SHARE * RTOL) / (s.p_b * step))))
    return lo, int(top)


def _tiers_continuous(s: _Setting) -> _Answer:
    """Continuous cache with tiers, exact (Theorem I2): T(m) is convex, its minimum is at ⌊P*/β⌋ or ⌈P*/β⌉."""
    lp = _continuous_lp(s)
    if lp.cache_gb is None:
        return _Answer(None, None, np.nan, None, _no_tiers(s))
    ans = _tiers(s, _Answer(lp.cache_gb, None, lp.io_bound, 0.0), _cover_continuous)
    assert ans.cache is not None  # a base with a cache always leaves one
    return _Answer(ans.cache, ans.provisioned, _io_cost_below(s, ans.cache, ans.provisioned), 0.0)


def _no_tiers(s: _Setting) -> str:
    return (
        f"infeasible: caching the {s.cap_c:.6g} GB of highest IO density still leaves more remote IO than "
        f"{_cap_text(s)} (Theorem I2)"
    )


def _cap_text(s: _Setting) -> str:
    if s.inst.bandwidth_step_gbps is None:
        return f"the cap B = {s.cap_b:.6g} GB/s"
    return (
        f"the B̃ = {s.cap_b:.6g} GB/s that whole tiers of {s.inst.bandwidth_step_gbps:g} GB/s can provision "
        f"under B = {s.inst.bandwidth_gbps:.6g}"
    )


def _blocks_tiers(s: _Setting) -> _Answer:
    """Blocks with tiers (Theorem I4): exact block CBA under B̃, then tiers; gap < p_b·β."""
    blocks = _blocks(s)
    ans = _tiers(s, _blocks_priced(s), lambda ss, limit: _cover_blocks(ss, limit, blocks), BLOCK_TIER_SCAN, True)
    if ans.cache is None:
        return ans
    ans.io_bound = max(ans.io_bound, _tiers_continuous(s).io_bound)
    return ans


def _whole_tiers(s: _Setting) -> _Answer:
    """Whole datasets with tiers (Theorem I5): whole-dataset CBA under B̃, then tiers."""
    relaxed = _tiers_continuous(s)
    if relaxed.cache is None:
        return relaxed
    ans = _tiers(s, _whole(s), _cover_whole, WHOLE_TIER_SCAN)
    ans.io_bound = max(ans.io_bound, relaxed.io_bound) if np.isfinite(ans.io_bound) else relaxed.io_bound
    return ans


#: Most tier counts tried one by one under blocks (each an exact O(K) cover) and under whole datasets (each an
#: O(K) greedy); beyond that only the O(1) candidates of :func:`_tiers` are tried.
BLOCK_TIER_SCAN = 4096
WHOLE_TIER_SCAN = 64

#: The rounding of each variant: (cache granularity, bandwidth sold in tiers?) -> procedure.
_VARIANTS: dict[tuple[str, bool], Callable[[_Setting], _Answer]] = {
    ("dataset", False): _whole,
    ("block", False): _blocks_priced,
    ("continuous", True): _tiers_continuous,
    ("dataset", True): _whole_tiers,
    ("block", True): _blocks_tiers,
}


def cba_integer(inst: Instance) -> Allocation:
    """CBA's rounding for an integer variant of P1 (docs/model.md §4; proofs/cba_integer_gap.md, Theorems I1-I5).

    ``status`` is ``optimal`` when proven (Theorems I1, I2 and the scan of I4 (ii) are exact, and so is any answer
    meeting its lower bound within the certification tolerance of docs/model.md (8.2),
    :func:`cbalab.models.certify.verdict`), else ``feasible``; ``infeasible`` only when proven (the continuous
    relaxation, an exact variant, or the Martello-Toth bound of Theorem I3 (iii) says so); ``error`` with an
    ``undecided`` reason when a whole-dataset instance with a bandwidth cap defeats every candidate (a knapsack
    question).
    ``bound`` is a proven lower bound; ``facts.gap_bound`` (:class:`~cbalab.models.result.IntegerFacts`) the
    a-priori additive bound on cost - optimum that the variant's theorem gives on this instance (None: none applies).
    """
    key = (inst.cache_granularity, inst.bandwidth_step_gbps is not None)
    variant = _VARIANTS[key]
    ans = variant(_setting(inst))
    wide = variant(_setting(widened_limits(inst)))
    # The bound: the variant's own bounds on the instance with C and B as the referee accepts them (docs/model.md
    # (8.1)), where the exact variants' optimum is itself the bound; every one lies at or below the optimum of
    # every allocation the referee accepts.
    held = variant(_setting(accepted_limits(inst)))
    bound = cost_lower_bound(inst, held.io_bound) if np.isfinite(held.io_bound) else None
    if bound is not None and not np.isfinite(bound):
        bound = None
    found = [a for a in (ans, wide) if a.cache is not None]
    if not found:
        status = Status.ERROR if ans.reason and ans.reason.startswith("undecided") else Status.INFEASIBLE
        reason = ans.reason or str(status)
        if held.cache is not None:  # the referee's slack admits what the limits as written do not
            status = Status.ERROR
            reason = (
                f"undecided: {reason}; but with C and B as the referee accepts them (docs/model.md (8.1)) the same "
                "rounding finds an allocation, so no infeasibility is proven"
            )
        return Allocation.none(status, reason, bound=bound)
    allocs = [
        Allocation(
            gpus=inst.job_gpus.copy(),
            cache_gb=a.cache,
            bandwidth_gbps=least_feeding(inst, inst.job_io_gbps, a.cache),
            provisioned_gbps=a.provisioned,
            status=Status.OPTIMAL,
            bound=bound,
            facts=IntegerFacts(_variant_name(key), a.gap_bound),
        )
        for a in found
        if a.cache is not None
    ]
    chosen = preferred(inst, allocs)
    if chosen is None:
        return Allocation.none(Status.ERROR, REFUSED, bound=bound)
    return certify(inst, "cost", chosen, source="the rounding's lower bound")


def _variant_name(key: tuple[str, bool]) -> str:
    return key[0] + ("+tiers" if key[1] else "")
