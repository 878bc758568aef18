"""Numerical kernels that several methods share, each in one place (docs/model.md §4-§5).

- :func:`prefix_fill`: give items their amount in a given order until a capacity runs out — the ρ-ordered
  fill of Theorem 1 (proofs/cba_optimality.md) and of the price-blind baselines; :func:`fill_in_order` the same
  on items already sorted.
- :func:`weak_dual`: the weak-dual value D(λ, μ) of the substituted cost LP, a lower bound on the least IO
  cost for any λ, μ ≥ 0 (proofs/cba_optimality.md, Lemma 2), safe in floating point (checked exactly).
- :func:`bandwidth_factor`: the one factor that scales a total bandwidth into B and into the money left.
- :func:`exact_dot`: Σ a_i b_i rounded once (math.fsum of the exact products), the same bits on every CPU and
  BLAS kernel, for the sums a decision compares with a limit (time-shared GPU time, welfare).
- :func:`libm`: a math-module function applied element by element, for the transcendental functions of the
  instance generators (exp, log1p, tanh, powers): numpy's SIMD kernels of these round differently on AVX2
  and AVX-512 machines, the C library's scalar ones do not depend on the CPU.
- :func:`power_of_two`: the scale the exact models divide an objective or a column by before HiGHS sees it
  (docs/model.md §8), undone exactly.

The least feeding b_j = r_j (1 − h_k(j)) is :func:`cbalab.models.evaluate.least_feeding`, beside the referee.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from cbalab.models.exact_bounds import safe_weak_dual
from cbalab.models.instance import Instance


def prefix_fill(amount: np.ndarray, order: np.ndarray, capacity: float) -> np.ndarray:
    """Give ``amount[k]`` to the items in ``order`` until ``capacity`` runs out (the last one in part).

    The answer is indexed like ``amount``; items after the last served get 0.
    """
    out = np.zeros(amount.shape)
    out[order] = fill_in_order(amount[order], capacity)
    return out


def fill_in_order(a: np.ndarray, capacity: float, cum: np.ndarray | None = None) -> np.ndarray:
    """:func:`prefix_fill` of items already in their order: ``a[i]`` while ``capacity`` lasts, in the order given.

    ``cum`` is ``np.cumsum(a)`` when the caller has it (CBA's fill, at every event of a replay), else computed.
    """
    before = (a.cumsum() if cum is None else cum) - a
    return (capacity - before).clip(0.0, a)


def weak_dual(inst: Instance, R: np.ndarray, lam: float, mu: float) -> float:
    """D(λ, μ) of the substituted cost LP at dataset demands ``R``: a lower bound on the least IO cost.

    D(λ, μ) = p_b Σ R_k + μ (Σ R_k − B) − λ C − Σ_k d_k max(0, (p_b + μ) ρ_k − p_c − λ), evaluated in
    the equal form Σ_k min((p_b + μ) R_k, (p_c + λ) d_k) − μ B − λ C, which has no cancellation
    between p_b Σ R_k and the savings of a nearly free cache (μ B is taken as 0 when μ = 0, so B = ∞ works).

    The float sum can still round above the exact D (2^53 + 3 rounds to 2^53 + 4), and a bound above the optimum
    would certify what is not optimal: the value is checked against D evaluated exactly
    (:func:`cbalab.models.exact_bounds.safe_weak_dual`) and, only when it lies above, replaced by the largest float
    below D (docs/model.md §8).  A safe value keeps its bits.
    """
    p_c, p_b = inst.price_cache, inst.price_bandwidth
    terms = np.minimum((p_b + mu) * R, (p_c + lam) * inst.dataset_size_gb)
    cap = mu * inst.bandwidth_gbps if mu > 0 else 0.0
    value = float(terms.sum()) - cap - lam * inst.cache_gb
    if not (np.isfinite(R).all() and np.isfinite(terms).all() and math.isfinite(value)):
        return value  # −∞ is safe; +∞ or NaN is no bound, which the certification drops
    return safe_weak_dual(inst, R, lam, mu, value)


def bandwidth_factor(inst: Instance, need: float, money: float) -> float:
    """The largest factor ≤ 1 by which a total bandwidth ``need`` fits B and the ``money`` left ($/h) for it.

    Every job's bandwidth scaled by this one factor stalls every job alike (docs/model.md §5 scoring).
    """
    factor = 1.0
    if need > 0:
        factor = min(1.0, inst.bandwidth_gbps / need)
        if inst.price_bandwidth > 0 and math.isfinite(money):
            factor = min(factor, max(money, 0.0) / (inst.price_bandwidth * need))
    return factor


def exact_dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ_i a_i b_i, correctly rounded: each product is one IEEE multiplication and ``math.fsum`` adds them exactly.

    ``np.dot`` hands the sum to BLAS, whose kernels (chosen by CPU: OpenBLAS's Prescott, Sandybridge, Haswell,
    SkylakeX …) add in different orders; where a decision compares the sum with a limit (gavel-fair's
    water-filling against G, the money left for bandwidth), a last bit then decides differently on another
    machine (tests/test_blas_kernels.py).  A correctly rounded sum has one answer.
    """
    prod = np.multiply(a, b, dtype=float)
    return math.fsum(prod.tolist())


def row_sum(w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Σ_i w_i · m[i, :], the same on every machine: ``w @ m`` without BLAS.

    ``w @ m`` is a BLAS product whose kernels (chosen by CPU, :func:`exact_dot`) add in different orders.  Here
    each product is one IEEE multiplication and the rows are added one at a time, in order, element by element:
    every sum is taken in one order whatever the kernel or the SIMD width.  P3 compares these sums with the
    cache C (proofs/dynamic_lower_bound.md); a last bit of difference there moved its bound between an AVX2 and
    an AVX-512 machine (tests/test_blas_kernels.py).
    """
    prod = np.multiply(np.asarray(w, dtype=float)[:, None], m, dtype=float)
    out = np.zeros(prod.shape[1], dtype=float)
    for row in prod:
        out += row
    return out


def libm(fn: Callable[..., float], x: np.ndarray | float, *args: float) -> np.ndarray:
    """``fn(x_i, *args)`` for every element of ``x``, by the C library's scalar function (``math.tanh``, …).

    numpy dispatches ``tanh``, ``exp``, ``log1p`` and ``power`` to SIMD kernels chosen by the CPU (AVX2,
    AVX-512), which round differently in the last bit; a generated instance then differs from machine to machine,
    and so do its run keys and optima (tests/test_simd_dispatch.py).  The scalar function has one answer for a
    given C library.  The result has the shape of ``x``.
    """
    a = np.asarray(x, dtype=float)
    flat = [fn(v, *args) for v in a.ravel().tolist()]
    return np.array(flat, dtype=float).reshape(a.shape)


def power_of_two(x: float) -> float:
    """The power of two 2^e with 2^(e−1) ≤ x < 2^e (1 for x ≤ 0 or not finite): a scale undone exactly."""
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    return math.ldexp(1.0, math.frexp(x)[1])
