"""Exact optima of tiny instances in rational arithmetic: the reference every bound and ``optimal`` is fuzzed against.

Nothing here shares code with the methods it checks.  Every float of the instance is read as the rational number
it is (:class:`fractions.Fraction`), and the answer is exact for the instance as written, at any magnitude.

* :func:`feeding_cost` is F(R) of docs/model.md (5.9), the least cache-and-bandwidth bill of dataset demands R
  under C and B, found by enumerating the vertices of its LP in the hit ratios h (two rows and a box: an optimal
  vertex has at most two hit ratios strictly between 0 and 1).  It does not use CBA's order (Theorem 1), so it
  checks that order rather than repeating it.
* :func:`cost_optimum` is P1's optimum (4.1)–(4.4) with the GPU bill, continuous caching only.
* :func:`welfare_optimum` is P2's optimum (5.1)–(5.4) by enumerating every job's option (or none), each choice
  fed at F; a few jobs of a few options only (:data:`MAX_CHOICES`).

``limits`` says which C, B and budget the optimum is taken under: ``"written"`` (the instance's numbers) or
``"accepted"`` (what the referee accepts, ``tolerated(·)`` of docs/model.md (8.1)).  A bound must bound the
accepted optimum, and an ``optimal`` must reach the written one within the tolerance (8.2).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from cbalab.models.evaluate import tolerated
from cbalab.models.instance import Instance

#: The most option combinations :func:`welfare_optimum` enumerates (each needs one F).
MAX_CHOICES = 20_000

#: The most datasets with demand :func:`feeding_cost` enumerates vertices over.
MAX_DATASETS = 8


def _q(x: float) -> Fraction:
    """The rational value of the float ``x``."""
    return Fraction(x)


def _limit(x: float, limits: str) -> Fraction | None:
    """The limit ``x`` as written or as the referee accepts it (None: no limit)."""
    if not math.isfinite(x):
        return None
    return _q(tolerated(x) if limits == "accepted" else x)


def feeding_cost(
    size: list[Fraction],
    demand: list[Fraction],
    cache: Fraction | None,
    cap: Fraction | None,
    p_c: Fraction,
    p_b: Fraction,
) -> Fraction | None:
    """F(R) of docs/model.md (5.9) exactly, or None if no cache within ``cache`` brings the remote IO within ``cap``.

    The LP is min Σ_k p_c d_k h_k + p_b R_k (1 − h_k) over h in [0, 1]^K with Σ d_k h_k ≤ C and
    Σ R_k (1 − h_k) ≤ B.  A dataset without demand is never cached (caching it only costs, p_c ≥ 0).  Every
    vertex has all but at most two h_k at 0 or 1, the others solving the rows they make tight; the least
    objective over the feasible ones is the optimum (the region is a bounded polytope).
    """
    live = [k for k, r in enumerate(demand) if r > 0]
    if len(live) > MAX_DATASETS:
        raise ValueError(f"{len(live)} datasets with demand: the vertex enumeration takes at most {MAX_DATASETS}")
    d = [size[k] for k in live]
    r = [demand[k] for k in live]
    total = sum(r, Fraction(0))
    rows: list[tuple[list[Fraction], Fraction]] = []  # a·h ≤ b
    if cache is not None:
        rows.append((d, cache))
    if cap is not None:
        rows.append(([-x for x in r], cap - total))
    n = len(live)
    best: Fraction | None = None
    for free_count in range(min(2, n, len(rows)) + 1):
        for free in itertools.combinations(range(n), free_count):
            fixed = [k for k in range(n) if k not in free]
            for tight in itertools.combinations(range(len(rows)), free_count):
                for values in itertools.product((Fraction(0), Fraction(1)), repeat=len(fixed)):
                    h = [Fraction(0)] * n
                    for k, v in zip(fixed, values, strict=True):
                        h[k] = v
                    if not _solve_free(h, free, [rows[t] for t in tight]):
                        continue
                    if any(not 0 <= h[k] <= 1 for k in free):
                        continue
                    if any(sum(a[k] * h[k] for k in range(n)) > b for a, b in rows):
                        continue
                    value = sum((p_c * d[k] * h[k] + p_b * r[k] * (1 - h[k]) for k in range(n)), Fraction(0))
                    if best is None or value < best:
                        best = value
    return best


def _solve_free(h: list[Fraction], free: tuple[int, ...], tight: list[tuple[list[Fraction], Fraction]]) -> bool:
    """Set the ``free`` entries of ``h`` so that every row of ``tight`` holds with equality; False if singular."""
    if not free:
        return True
    rest = [b - sum(a[k] * h[k] for k in range(len(h)) if k not in free) for a, b in tight]
    if len(free) == 1:
        (i,), ((a, _),) = free, tight
        if a[i] == 0:
            return False
        h[i] = rest[0] / a[i]
        return True
    (i, j), ((a, _), (c, _)) = free, tight
    det = a[i] * c[j] - a[j] * c[i]
    if det == 0:
        return False
    h[i] = (rest[0] * c[j] - a[j] * rest[1]) / det
    h[j] = (a[i] * rest[1] - rest[0] * c[i]) / det
    return True


def _feeding_of(inst: Instance, rate_per_job: list[Fraction], limits: str) -> Fraction | None:
    """F of the dataset demands that ``rate_per_job`` (GB/s of each job) make on ``inst``."""
    demand = [Fraction(0)] * inst.n_datasets
    for j, rate in enumerate(rate_per_job):
        demand[int(inst.job_dataset[j])] += rate
    return feeding_cost(
        [_q(float(x)) for x in inst.dataset_size_gb],
        demand,
        _limit(inst.cache_gb, limits),
        _limit(inst.bandwidth_gbps, limits),
        _q(inst.price_cache),
        _q(inst.price_bandwidth),
    )


def cost_optimum(inst: Instance, limits: str = "written") -> Fraction | None:
    """P1's optimum (4.1)–(4.4) plus the GPU bill p_g Σ_j g_j, exactly; None if infeasible.  Continuous only."""
    if inst.cache_granularity != "continuous" or inst.bandwidth_step_gbps is not None:
        raise ValueError("the exact reference covers continuous caching and bandwidth only")
    rates = [_q(float(x)) for x in inst.job_io_gbps]
    feed = _feeding_of(inst, rates, limits)
    if feed is None:
        return None
    return _q(inst.price_gpu) * sum((int(g) for g in inst.job_gpus), 0) + feed


def welfare_optimum(inst: Instance, limits: str = "written") -> Fraction:
    """P2's optimum (5.1)–(5.4), exactly: the most Σ U_j(g_j) of an option (or none) per job whose GPUs fit G
    and whose GPU bill plus F fits the budget.  Options above G never run; 0 when nothing fits."""
    ptr = [int(x) for x in inst.option_ptr]
    choices = [[None, *range(ptr[j], ptr[j + 1])] for j in range(inst.n_jobs)]
    count = math.prod(len(c) for c in choices)
    if count > MAX_CHOICES:
        raise ValueError(f"{count} option combinations: the enumeration takes at most {MAX_CHOICES}")
    budget = _limit(inst.budget_per_hour, limits)
    p_g = _q(inst.price_gpu)
    best = Fraction(0)
    for pick in itertools.product(*choices):
        gpus = sum(int(inst.option_gpus[o]) for o in pick if o is not None)
        if inst.gpus is not None and gpus > inst.gpus:
            continue
        utility = sum((_q(float(inst.option_utility[o])) for o in pick if o is not None), Fraction(0))
        if utility <= best:
            continue
        rates = [Fraction(0) if o is None else _q(float(inst.option_io_gbps[o])) for o in pick]
        feed = _feeding_of(inst, rates, limits)
        if feed is None or (budget is not None and p_g * gpus + feed > budget):
            continue
        best = utility
    return best
