"""Bounds re-derived in exact arithmetic, so that a certified ``optimal`` holds in floating point (docs/model.md §8).

Every lower bound cbalab certifies with is a weak-duality value: CBA's D(λ, μ) (proofs/cba_optimality.md,
Lemma 2), the value of an LP's row duals (Neumaier and Shcherbina's safe bound, used for the LP relaxations
of P1 and P2 and for P3's chunks, proofs/dynamic_lower_bound.md), AutoCBA's Lagrangian L(μ, ν, λ, β)
(proofs/autocba_certificate.md, Theorem D).  Weak duality holds for *any* multipliers, so the multipliers may
come from a solver with tolerances; but the value is a sum, and a sum taken in floating point can come out
above its exact value (2^53 + 3 rounds to 2^53 + 4; after cancelling 2^53 the bound reads 4 where the optimum
is 3).  This module evaluates each value exactly, from the data and the multipliers alone: every float is the
dyadic rational m·2^e it stands for (:func:`dyadic`), products and sums are taken on Python integers, and the
result is a :class:`fractions.Fraction`.  :func:`safe_float` then turns it into a float on the safe side,
keeping the float a caller computed when that is already safe, so that a bound that was safe keeps its bits.

The integer path is O(size) Python work (about 2 µs per term) and runs once where a status or a gap is
reported.  CBA's weak dual is checked on every call of ``feed`` (it reports a status each time), so it has a
fast path, :func:`safe_weak_dual`: error-free float transformations (TwoSum, Dekker's product) and a two-level
distillation of the sum decide the sign of D − value exactly in vectorised numpy, with ``math.fsum`` or the
integers only where that cannot decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cbalab.models.instance import Instance


def dyadic(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact value of every float of ``x`` as ``mantissa · 2**exponent``: (object array of ints, int64 array).

    ``np.frexp`` splits x = m · 2^e with 0.5 ≤ abs(m) < 1 (subnormals included), so m · 2^53 is a whole number of
    at most 53 bits: the split loses nothing.  Every element must be finite.
    """
    m, e = np.frexp(np.asarray(x, dtype=float))
    return np.ldexp(m, 53).astype(np.int64).astype(object), e.astype(np.int64) - 53


def _total(mantissa: np.ndarray, exponent: np.ndarray) -> Fraction:
    """Σ_i mantissa_i · 2**exponent_i exactly (integers shifted to the least exponent, then added)."""
    if mantissa.size == 0:
        return Fraction(0)
    low = int(exponent.min())
    shifted = mantissa << (exponent - low).astype(object)
    return _scaled(int(shifted.sum()), low)


def _scaled(n: int, e: int) -> Fraction:
    """n · 2**e as a Fraction."""
    return Fraction(n << e) if e >= 0 else Fraction(n, 1 << -e)


def exact_sum(x: np.ndarray) -> Fraction:
    """Σ_i x_i exactly (finite floats)."""
    return _total(*dyadic(x))


def exact_dot(a: np.ndarray, b: np.ndarray) -> Fraction:
    """Σ_i a_i b_i exactly (finite floats): each product is taken on the integers, not rounded."""
    ma, ea = dyadic(a)
    mb, eb = dyadic(b)
    return _total(ma * mb, ea + eb)


def round_down(q: Fraction) -> float:
    """The largest float ≤ q (−inf below the range of floats)."""
    try:
        f = float(q)  # correctly rounded (CPython's int / int true division)
    except OverflowError:
        return -math.inf if q < 0 else math.inf
    if math.isfinite(f) and Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def round_up(q: Fraction) -> float:
    """The least float ≥ q (+inf above the range of floats)."""
    return -round_down(-q)


def safe_float(value: float, exact: Fraction, *, lower: bool) -> float:
    """``value`` if it is on the safe side of ``exact`` (≤ for a lower bound, ≥ for an upper bound), else ``exact``
    rounded to the safe side: a bound that was already safe keeps its bits."""
    if not math.isfinite(value):
        return value if (value < 0) == lower else (round_down(exact) if lower else round_up(exact))
    if (Fraction(value) <= exact) if lower else (Fraction(value) >= exact):
        return value
    return round_down(exact) if lower else round_up(exact)


#: The referee's relative slack (models/evaluate.py ``RTOL``, docs/model.md (8.1)), which its block count takes off
#: d/u; evaluate.py imports this module (through kernels.py), so the number is restated here.
RTOL_BLOCK = 1e-9


def demand_below(inst: Instance, rates: np.ndarray) -> np.ndarray:
    """R_k = Σ_{j reads k} r_j per dataset, each exact sum rounded down: the demands a lower bound may use.

    A weak dual grows with R_k, and the float sum of the rates can round above the exact one; rounded down, every
    bound taken at these demands holds for the exact ones (docs/model.md §8).
    """
    sums = group_sums(np.asarray(rates, dtype=float), inst.job_dataset, inst.n_datasets)
    return np.array([round_down(q) for q in sums], dtype=float)


def p1_relaxation_bound(inst: Instance) -> Fraction:
    """A lower bound on the continuous relaxation of P1 (docs/model.md §4) on ``inst``, exactly: D(λ, μ) of
    Lemma 2 (proofs/cba_optimality.md) at demands rounded down (:func:`demand_below`), plus the exact GPU bill.

    The multipliers are Theorem 1's, read off the ρ-ordered fill in floating point: the vertices of the dual at the
    datasets where C and B stop the fill and their neighbours (any λ, μ ≥ 0 give a bound; the best of these is the
    optimum, by Theorem 1).  ``inst``'s limits are taken as they stand: a caller passes C and B as the
    referee accepts them.
    """
    R = demand_below(inst, inst.job_io_gbps)
    d = inst.dataset_size_gb
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    cacheable = None
    if inst.cache_granularity == "block":  # a dataset below 1e-9 of a block has none to hold (§4, the block rule)
        q = d / inst.block_size_gb
        cacheable = np.ceil(q - RTOL_BLOCK * np.maximum(1.0, q)) >= 1
    rho = np.where(cacheable, R / d, 0.0) if cacheable is not None else R / d
    order = np.argsort(-rho, kind="stable")
    d_s, R_s, rho_s = d[order], R[order], rho[order]
    near = set()
    if R_s.size:
        near.add(min(int(np.searchsorted(np.cumsum(d_s), inst.cache_gb)), R_s.size - 1))
        if math.isfinite(inst.bandwidth_gbps):
            after = np.append(np.cumsum(R_s[::-1])[::-1][1:], 0.0)
            near.add(int(np.argmax(after <= inst.bandwidth_gbps)))
    # The dual's vertices are λ = 0 with (p_b + μ) ρ_t = p_c, or μ = 0 with λ = p_b ρ_t − p_c, at the dataset t
    # where C or B stops the fill, or one beside it when the fill stops on a dataset's edge.
    candidates = [(0.0, 0.0)]
    for t in sorted({t + s for t in near for s in (-1, 0, 1)} & set(range(R_s.size))):
        candidates.append((max(0.0, p_b * float(rho_s[t]) - p_c), 0.0))
        if rho_s[t] > 0 and math.isfinite(inst.bandwidth_gbps):
            candidates.append((0.0, max(0.0, p_c / float(rho_s[t]) - p_b)))
    finite = [(lam, mu) for lam, mu in candidates if math.isfinite(lam) and math.isfinite(mu)]
    return gpu_bill_exact(inst) + max(weak_dual_exact(inst, R, lam, mu, cacheable) for lam, mu in finite)


def gpu_bill_exact(inst: Instance) -> Fraction:
    """P1's GPU bill p_g Σ_j g_j (docs/model.md §4) exactly: the part of a cost bound no decision changes."""
    return Fraction(inst.price_gpu) * int(inst.job_gpus[inst.has_fixed].sum())


def cost_lower_bound(inst: Instance, io_bound: float | Fraction, counted: float = 0.0) -> float:
    """A lower bound on P1's cost from a lower bound on its IO cost: the largest float ≤ GPU bill + ``io_bound``.

    ``counted`` is a GPU bill already inside ``io_bound`` as a float (a solver's objective offset): it is taken out
    exactly and the exact bill put in.  The float sum p_g Σ g + IO bound can round above its exact value (three
    1-GPU jobs at 0.1 $/h: 0.30000000000000004 against 0.3000000000000000166), so the sum is taken in rationals
    and rounded down (docs/model.md §8).  A bound of −∞ stays −∞; +∞ or NaN is no bound (NaN).
    """
    if isinstance(io_bound, float) and not math.isfinite(io_bound):
        return io_bound if io_bound == -math.inf else math.nan
    return round_down(Fraction(io_bound) - Fraction(counted) + gpu_bill_exact(inst))


def weak_dual_exact(
    inst: Instance, R: np.ndarray, lam: float, mu: float, cacheable: np.ndarray | None = None
) -> Fraction:
    """D(λ, μ) of Lemma 2 (proofs/cba_optimality.md) exactly, at dataset demands ``R``, for finite λ, μ ≥ 0.

    D = Σ_k min((p_b + μ) R_k, (p_c + λ) d_k) − μ B − λ C, with μ B taken as 0 when μ = 0 (B = ∞ allowed then);
    −∞ when μ > 0 and B = ∞.  Every term is compared and added on the integers.  A dataset ``cacheable`` marks
    False (no whole block to hold, docs/model.md §4) takes its read term (p_b + μ) R_k.
    """
    if mu > 0 and not math.isfinite(inst.bandwidth_gbps):
        return Fraction(-(10**400))
    s = Fraction(inst.price_bandwidth) + Fraction(mu)
    t = Fraction(inst.price_cache) + Fraction(lam)
    mr, er = dyadic(np.asarray(R, dtype=float))
    md, ed = dyadic(inst.dataset_size_gb)
    # s R_k and t d_k as integers over one power of two: s = n_s / 2^a_s, R_k = mr_k 2^er_k, and so on.
    ns, a_s = s.numerator, s.denominator.bit_length() - 1
    nt, a_t = t.numerator, t.denominator.bit_length() - 1
    low = min(int(er.min(initial=0)) - a_s, int(ed.min(initial=0)) - a_t)
    read = (mr * ns) << (er - a_s - low).astype(object)
    held = (md * nt) << (ed - a_t - low).astype(object)
    terms = np.where(read <= held, read, held)
    if cacheable is not None:
        terms = np.where(cacheable, terms, read)
    value = _scaled(int(terms.sum()) if terms.size else 0, low)
    if mu > 0:
        value -= Fraction(mu) * Fraction(inst.bandwidth_gbps)
    return value - Fraction(lam) * Fraction(inst.cache_gb)


#: Magnitudes inside which Dekker's product is error-free: no overflow in the split, no underflow in the error term.
_TWO_PRODUCT_RANGE = (2.0**-450, 2.0**450)


def _two_sum(a: float, b: float) -> tuple[float, float]:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth's TwoSum)."""
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _two_product(a: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(a x_i) and p + e = a x_i exactly (Dekker's product with Veltkamp's split), for a and x
    inside :data:`_TWO_PRODUCT_RANGE` (or 0)."""
    split = 134217729.0  # 2^27 + 1
    p = a * x
    c = split * a
    ah = c - (c - a)
    al = a - ah
    cx = split * x
    xh = cx - (cx - x)
    xl = x - xh
    return p, ((ah * xh - p) + ah * xl + al * xh) + al * xl


def _in_range(*arrays: np.ndarray) -> bool:
    """Whether every element is 0 or of a magnitude inside :data:`_TWO_PRODUCT_RANGE`."""
    lo, hi = _TWO_PRODUCT_RANGE
    for x in arrays:
        a = np.abs(x)
        if not (((a == 0) | ((a >= lo) & (a <= hi))).all()):
            return False
    return True


def _side_parts(price: float, extra: float, x: np.ndarray) -> list[np.ndarray]:
    """(price + extra) x_i exactly, as floats whose sum it is: two products of the exact two-term sum."""
    hi, lo = _two_sum(price, extra)
    parts = list(_two_product(hi, x))
    if lo != 0.0:
        parts.extend(_two_product(lo, x))
    return parts


def safe_weak_dual(inst: Instance, R: np.ndarray, lam: float, mu: float, value: float) -> float:
    """``value`` if it is at most D(λ, μ) exactly (Lemma 2, proofs/cba_optimality.md), else the largest float below
    D: the float weak dual made safe, keeping its bits when it was safe.

    Fast: every product (p + λ) x is split exactly into floats (TwoSum, Dekker's product), each term's side of the
    min is decided exactly (by the leading parts, and by ``math.fsum`` of the parts where they are within 2^-45 of
    each other), and ``math.fsum``, which rounds an exact sum once, decides the sign of D − value.  Outside the
    range where the split is exact, :func:`weak_dual_exact` (integers) decides instead.
    """
    d = inst.dataset_size_gb
    terms = [inst.price_bandwidth, inst.price_cache, lam, mu, inst.cache_gb]
    if mu > 0:
        terms.append(inst.bandwidth_gbps)
    if not (_in_range(R, d, np.array(terms)) and np.isfinite(terms).all()):
        return safe_float(value, weak_dual_exact(inst, R, lam, mu), lower=True)
    read = _side_parts(inst.price_bandwidth, mu, np.asarray(R, dtype=float))
    held = _side_parts(inst.price_cache, lam, d)
    width = max(len(read), len(held))
    read += [np.zeros_like(d)] * (width - len(read))
    held += [np.zeros_like(d)] * (width - len(held))
    diff = (read[0] - held[0]) + (sum(read[1:], np.zeros_like(d)) - sum(held[1:], np.zeros_like(d)))
    take_read = diff < 0
    close = np.abs(diff) <= 2.0**-45 * (np.abs(read[0]) + np.abs(held[0]))
    for k in np.flatnonzero(close).tolist():
        take_read[k] = math.fsum([p[k] for p in read] + [-p[k] for p in held]) <= 0
    parts = [np.where(take_read, r, h) for r, h in zip(read, held)]
    for factor, limit in ((mu, inst.bandwidth_gbps), (lam, inst.cache_gb)):
        if factor > 0:
            parts.extend(-q for q in _two_product(factor, np.array([limit])))
    every = np.concatenate(parts)
    with np.errstate(over="ignore", invalid="ignore"):
        s1, e1 = _distill(every)
        s2, e2 = _distill(e1)
        spread = float(np.abs(e2).sum())
    below = value
    for _ in range(4):  # the float sum is within an ulp or two of D: step down to the largest float below D
        sign = _sign_after(s1, s2, spread, below)
        if sign is None:
            sign = _fsum_sign(every, below)
        if sign >= 0:
            return below
        below = math.nextafter(below, -math.inf)
    flat = every.tolist()
    try:
        near = math.fsum(flat)
        return math.nextafter(near, -math.inf) if math.fsum([*flat, -near]) < 0 else near
    except OverflowError:
        return safe_float(value, weak_dual_exact(inst, R, lam, mu), lower=True)


def _distill(x: np.ndarray) -> tuple[float, np.ndarray]:
    """(s, e) with Σ x = s + Σ e exactly: a pairwise tree of TwoSums whose errors are kept, Σ|e| ≤ log₂n · 2⁻⁵³ Σ|x|."""
    if x.size == 0:
        return 0.0, np.zeros(0)
    n = 1 << (x.size - 1).bit_length()  # padded with zeros to a power of two: halves without remainders
    x = np.concatenate([x, np.zeros(n - x.size)])
    errors = np.empty(n - 1)
    at = 0
    while x.size > 1:
        a, b = x[: x.size // 2], x[x.size // 2 :]
        total = a + b
        v = total - a
        errors[at : at + total.size] = (a - (total - v)) + (b - v)
        at += total.size
        x = total
    return float(x[0]), errors


def _sign_after(s1: float, s2: float, spread: float, value: float) -> int | None:
    """The sign of Σ x − value from two distillations of x (Σ x = s1 + s2 + Σ e2, Σ|e2| = ``spread``), or None when
    the rest, about (log₂n · 2⁻⁵³)² Σ|x|, could decide it.  Σ x − value = u + ue + te + Σ e2 exactly, with
    (t, te) = TwoSum(s1, −value) and (u, ue) = TwoSum(t, s2)."""
    t, te = _two_sum(s1, -value)
    u, ue = _two_sum(t, s2)
    rest = (abs(ue) + abs(te) + spread) * (1.0 + 2.0**-20)  # the float sum of n ≤ 2^30 magnitudes, rounded up
    if not (math.isfinite(u) and math.isfinite(rest)):
        return None
    if u == 0.0 and rest == 0.0:
        return 0
    if abs(u) > rest:
        return 1 if u > 0 else -1
    return None


def _fsum_sign(x: np.ndarray, value: float) -> int:
    """The sign of Σ x − value by ``math.fsum``, which rounds the exact sum once (so keeps its sign)."""
    exact = math.fsum([*x.tolist(), -value])
    return (exact > 0) - (exact < 0)


def _reduced_costs(
    cost: np.ndarray, row: np.ndarray, index: np.ndarray, value: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, int]:
    """r = c − Aᵀy exactly: integers (object array) and the power of two they are counted in."""
    ma, ea = dyadic(value)
    my, ey = dyadic(y[row])
    mc, ec = dyadic(cost)
    low = min(int((ea + ey).min(initial=0)), int(ec.min(initial=0)))
    reduced = mc << (ec - low).astype(object)
    np.subtract.at(reduced, index, (ma * my) << (ea + ey - low).astype(object))
    return reduced, low


@dataclass(frozen=True)
class DualValue:
    """The exact weak-duality value of row duals (:func:`lp_dual_value`) and the exact reduced costs behind it.

    ``bound`` ≤ cᵀx for every x of the LP; r_j = c_j − (Aᵀy)_j is ``reduced[j] · 2**low`` (Python integers)
    except for the columns a repair moved, whose r_j is ``moved[j]``.  ``side[j]`` is the column bound r_j x_j
    is least at (l_j for r_j > 0, u_j for r_j < 0, 0 for r_j = 0).
    """

    bound: Fraction
    reduced: np.ndarray
    low: int
    moved: dict[int, Fraction]
    side: np.ndarray

    def fixed(self, target: Fraction, whole: np.ndarray) -> np.ndarray:
        """The columns every x with cᵀx ≤ ``target`` has at their ``side`` (proofs/welfare_milp_forms.md, F5).

        For such x, cᵀx ≥ ``bound`` + Σ_j abs(r_j)·abs(x_j − side_j), so a whole column (``whole``: integral,
        with whole finite bounds) off its side costs at least abs(r_j), and abs(r_j) > target − bound rules it
        out.  Compared exactly: for the integer columns abs(reduced_j) > (target − bound)·2**−low, which for
        whole numbers is abs(reduced_j) > ⌊(target − bound)·2**−low⌋.  Returns the indices of those columns.
        """
        gap = max(target - self.bound, Fraction(0))  # below 0 no x reaches the target: any r_j ≠ 0 may fix
        in_units = gap / _scaled(1, self.low)
        out = whole & (np.abs(self.reduced) > in_units.numerator // in_units.denominator).astype(bool)
        for j, r in self.moved.items():
            out[j] = bool(whole[j]) and abs(r) > gap
        return np.flatnonzero(out)


def lp_dual_value(
    cost: np.ndarray,
    start: np.ndarray,
    index: np.ndarray,
    value: np.ndarray,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    col_lo: np.ndarray,
    col_hi: np.ndarray,
    dual: np.ndarray,
) -> DualValue | None:
    """The exact weak-duality lower bound of min cᵀx, lo ≤ A x ≤ hi, l ≤ x ≤ u at row duals near ``dual``, with
    its reduced costs (None: the bound is −∞).

    Neumaier and Shcherbina (Math. Program. 99, 2004): for every feasible x and every y, cᵀx = yᵀAx + rᵀx with
    r = c − Aᵀy, and yᵀAx ≥ Σ_i (y_i lo_i if y_i > 0 else y_i hi_i), rᵀx ≥ Σ_j min(r_j l_j, r_j u_j).  A dual
    whose row side is infinite is taken as 0 (still a valid y).  A reduced cost against an infinite column
    bound would make the bound −∞; a solver's duals leave such a column's r_j within rounding of 0 (a basic
    column), so y is repaired first, exactly: the shortest row i of column j whose dual may take the new sign
    gets y_i + r_j / a_ij, which makes r_j exactly 0 (any y is valid; the repair only keeps the bound finite,
    and moves it by the rounding of r_j times the row's side).  A is row-wise CSR (``start``, ``index``,
    ``value``), as models/milp/statement.py's ``Arrays``.  Every product and sum is exact, so the bound holds
    whatever the solver's tolerances and whatever order a machine adds in.
    """
    y = np.asarray(dual, dtype=float)
    y = np.where(np.isinf(row_lo), np.minimum(y, 0.0), y)
    y = np.where(np.isinf(row_hi), np.maximum(y, 0.0), y)
    row = np.repeat(np.arange(row_lo.size), np.diff(start))
    reduced, low = _reduced_costs(cost, row, index, value, y)
    sign = np.array([(r > 0) - (r < 0) for r in reduced], dtype=np.int64)
    moved: dict[int, Fraction] = {}  # column j: its exact reduced cost after the repair
    shift: dict[int, Fraction] = {}  # row i: what the repair added to y_i

    def r_of(j: int) -> Fraction:
        return moved[j] if j in moved else _scaled(int(reduced[j]), low)

    def wrong(j: int, r: Fraction) -> bool:
        return bool((r > 0 and np.isinf(col_lo[j])) or (r < 0 and np.isinf(col_hi[j])))

    bad = np.flatnonzero(((sign > 0) & np.isinf(col_lo)) | ((sign < 0) & np.isinf(col_hi)))
    length = np.diff(start)
    for j in bad.tolist():
        r_j = r_of(j)
        if not wrong(j, r_j):
            continue
        entries = np.flatnonzero(index == j)
        for p in entries[np.argsort(length[row[entries]], kind="stable")].tolist():
            i = int(row[p])
            delta = r_j / Fraction(value[p])
            new = Fraction(y[i]) + shift.get(i, Fraction(0)) + delta
            if (new > 0 and np.isinf(row_lo[i])) or (new < 0 and np.isinf(row_hi[i])):
                continue
            shift[i] = shift.get(i, Fraction(0)) + delta
            for q in range(int(start[i]), int(start[i + 1])):
                k = int(index[q])
                moved[k] = r_of(k) - Fraction(value[q]) * delta
            break
    if any(wrong(j, r) for j, r in moved.items()):
        return None
    keep = np.ones(sign.size, dtype=bool)
    keep[list(moved)] = False
    sign = np.where(keep, sign, 0)
    side = np.where(sign > 0, col_lo, np.where(sign < 0, col_hi, 0.0))
    if not np.isfinite(side).all():
        return None
    ms, es = dyadic(side)
    total = _total(reduced * ms, es + low)
    for j, r in moved.items():
        if r != 0:
            total += r * Fraction(col_lo[j] if r > 0 else col_hi[j])
    y_kept = np.where(np.isin(np.arange(y.size), list(shift)), 0.0, y)
    side_row = np.where(y_kept > 0, row_lo, np.where(y_kept < 0, row_hi, 0.0))
    total += exact_dot(y_kept, side_row)
    for i, delta in shift.items():
        yi = Fraction(y[i]) + delta
        if yi != 0:
            total += yi * Fraction(row_lo[i] if yi > 0 else row_hi[i])
    for j, r in moved.items():
        side[j] = col_lo[j] if r > 0 else col_hi[j] if r < 0 else 0.0
    return DualValue(total, reduced, low, moved, side)


def group_sums(x: np.ndarray, groups: np.ndarray, n: int) -> list[Fraction]:
    """Σ_{i: groups_i = g} x_i exactly for g = 0 … n − 1 (finite floats), in one pass over the integers."""
    m, e = dyadic(x)
    low = int(e.min(initial=0))
    out = np.zeros(n, dtype=object)
    np.add.at(out, np.asarray(groups, dtype=np.int64), m << (e - low).astype(object))
    return [_scaled(int(v), low) for v in out]


def welfare_lagrangian_exact(
    inst: Instance, U: np.ndarray, G: np.ndarray, R: np.ndarray, multipliers: tuple[float, float, float, float]
) -> Fraction:
    """min(L(μ, ν, λ, β), Σ_j max U_j) of Theorem D (proofs/autocba_certificate.md) exactly: an upper bound on P2.

    ``U``, ``G``, ``R`` are the padded option tables of AutoCBA's certificate (one row per job, column 0 "none"
    at 0, options that cannot run alone at U = −∞); h̄_k = min(1, C/d_k) is taken as the exact rational, not
    its rounding.  Each job's best option is found in floating point; where another option lies within 1e-9 of
    it (far more than the rounding of U − aG − eR) the best is chosen among those exactly.  With the choices
    fixed, each dataset's sum is ΣU − a ΣG − e (1 − h̄_k) ΣR over its jobs, three exact sums.
    """
    mu, nu, lam, beta = (Fraction(v) for v in multipliers)
    a = mu * Fraction(inst.price_gpu) + nu
    e = mu * Fraction(inst.price_bandwidth) + beta
    held_price = mu * Fraction(inst.price_cache) + lam
    cache = Fraction(inst.cache_gb)
    hbar = [min(Fraction(1), cache / Fraction(dk)) for dk in inst.dataset_size_gb.tolist()]
    jd = inst.job_dataset
    K, rows = inst.n_datasets, np.arange(inst.n_jobs)
    miss_f = np.array([float(1 - h) for h in hbar])[jd][:, None]
    af, ef = float(a), float(e)
    with np.errstate(invalid="ignore", over="ignore"):
        size = np.abs(U) + np.abs(af * G) + np.abs(ef * R)
        margin = 1e-9 * np.where(np.isfinite(size), size, 0.0).max(axis=1, initial=0.0) + 1e-300
        sums = []
        for miss, v in ((None, U - af * G - ef * R), (miss_f, U - af * G - (ef * miss_f) * R)):
            pick = v.argmax(axis=1)
            near = (v >= (v[rows, pick] - margin)[:, None]).sum(axis=1) > 1
            for j in np.flatnonzero(near):
                factor = e * (1 - hbar[jd[j]]) if miss is not None else e
                cand = np.flatnonzero(v[j] >= v[j, pick[j]] - margin[j])
                pick[j] = max(
                    cand, key=lambda o: Fraction(U[j, o]) - a * Fraction(G[j, o]) - factor * Fraction(R[j, o])
                )
            sums.append([group_sums(t[rows, pick], jd, K) for t in (U, G, R)])
    (u0, g0, r0), (u1, g1, r1) = sums
    total = Fraction(0)
    for k in range(K):
        s0 = u0[k] - a * g0[k] - e * r0[k]
        held = Fraction(inst.dataset_size_gb[k]) * hbar[k] * held_price
        s1 = u1[k] - a * g1[k] - e * (1 - hbar[k]) * r1[k] - held
        total += max(s0, s1)
    rhs = (
        inst.budget_per_hour,
        math.inf if inst.gpus is None else float(inst.gpus),
        inst.cache_gb,
        inst.bandwidth_gbps,
    )
    for m, side in zip((mu, nu, lam, beta), rhs):
        if m > 0:
            if not math.isfinite(side):
                return Fraction(10**400)
            total += m * Fraction(side)
    top = exact_sum(np.where(np.isfinite(U), U, 0.0).max(axis=1, initial=0.0))
    return min(total, top)


def instant_relaxation_exact(
    lengths: np.ndarray,
    prices: tuple[float, float],
    cache_gb: float,
    size: np.ndarray,
    demand: np.ndarray,
    mu: np.ndarray,
    nu: np.ndarray,
) -> Fraction:
    """Σ_{k,t} of the instant relaxation of P3 at multipliers (μ_t, ν_t), exactly (proofs/dynamic_lower_bound.md,
    Theorem 4 (iii)): per pair, read − min(1, C/d_k) max(0, read − hold) with read = (Δ_t/3600 p_b + ν_t) R_{k,t}
    and hold = (Δ_t/3600 p_c + μ_t) d_k, Δ_t/3600 taken as the exact rational.

    ``size`` (K'), ``demand`` (K' × S) are the instant datasets' d_k and R_{k,t}; ``prices`` is (p_c, p_b).  When
    d_k ≤ C the pair's term is min(read, hold); the side is decided in floating point with a margin of 1e-9 (far
    more than its rounding) and exactly where it is closer, and each side's terms are summed per slot on the
    integers: Σ_t a_t Σ_k R_{k,t} + Σ_t b_t Σ_k d_k.  Datasets larger than C (top below 1) are summed pair by pair.
    """
    p_c, p_b = (Fraction(p) for p in prices)
    h = [Fraction(x) / 3600 for x in lengths.tolist()]
    a = [ht * p_b + Fraction(v) for ht, v in zip(h, nu.tolist())]
    b = [ht * p_c + Fraction(v) for ht, v in zip(h, mu.tolist())]
    S = len(h)
    total = Fraction(0)
    whole = size <= cache_gb
    if whole.any():
        d, R = size[whole], demand[whole]
        read_f = np.array([float(x) for x in a])[None, :] * R
        hold_f = np.array([float(x) for x in b])[None, :] * d[:, None]
        near = np.abs(read_f - hold_f) <= 1e-9 * (read_f + hold_f)
        for k, t in zip(*np.nonzero(near)):  # decided exactly
            read_is_less = a[t] * Fraction(R[k, t]) <= b[t] * Fraction(d[k])
            (read_f if read_is_less else hold_f)[k, t] = -1.0  # marks the side taken below
        reads = np.where(read_f <= hold_f, R, 0.0)
        holds = np.where(read_f <= hold_f, 0.0, np.broadcast_to(d[:, None], R.shape))
        slot = np.broadcast_to(np.arange(S)[None, :], R.shape)
        per_read = group_sums(reads.ravel(), slot.ravel(), S)
        per_hold = group_sums(holds.ravel(), slot.ravel(), S)
        total += sum((a[t] * per_read[t] + b[t] * per_hold[t] for t in range(S)), Fraction(0))
    for k in np.flatnonzero(~whole):
        top = Fraction(cache_gb) / Fraction(size[k]) if cache_gb > 0 else Fraction(0)
        for t in range(S):
            read = a[t] * Fraction(demand[k, t])
            hold = b[t] * Fraction(size[k])
            total += read - top * max(Fraction(0), read - hold)
    return total
