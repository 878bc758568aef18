"""Hypothesis strategies for cost-problem (P1) instances, built through models.instance.build.

The strategies aim at the corners of Theorem 1 of proofs/cba_optimality.md
(CBA's closed form and its infeasibility criterion):

* equal IO densities ρ_k (ties in CBA's sort), and prices placed exactly on a
  dataset's threshold p_b ρ_k = p_c;
* datasets that no job reads (R_k = 0, ρ_k = 0) and jobs with rate 0;
* no cache (C = 0), a cache that holds everything, and everything between;
* a bandwidth cap B that is unlimited, loose, exactly tight (B equal to the
  remote IO left by the ρ-ordered fill of C) or just below tight (infeasible);
* magnitudes over eight decades (sizes 1e-3..1e5 GB, rates 1e-6..1e3 GB/s)
  and zero prices.

:func:`min_remote_io` computes the tight B independently of algorithms/cba.py
(a plain Python loop, not CBA's numpy code), so a test that uses it does not
check CBA against itself.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from cbalab.models.instance import MIN_MAGNITUDE, Instance, build

#: Bandwidth-cap modes of :func:`cost_instances`.
BANDWIDTH_MODES = ("unlimited", "loose", "tight", "below", "zero")

#: How far below the tight cap the ``below`` mode sets B, relative to Σ_j r_j:
#: far above every solver and referee tolerance (1e-9 relative, HiGHS 1e-7).
BELOW_MARGIN = 1e-3


def magnitudes(hi: float) -> st.SearchStrategy[float]:
    """A non-negative quantity up to ``hi`` that the loader accepts: 0, or at least MIN_MAGNITUDE (no subnormals)."""
    return st.one_of(st.just(0.0), st.floats(MIN_MAGNITUDE, hi))


def sizes_gb() -> st.SearchStrategy[float]:
    """Dataset sizes over eight decades, 1e-3..1e5 GB, with round values that make ties likely."""
    return st.one_of(
        st.sampled_from([1e-3, 0.5, 1.0, 2.0, 10.0, 147.0, 1e5]),
        st.floats(-3.0, 5.0).map(lambda e: float(10.0**e)),
    )


def rates_gbps() -> st.SearchStrategy[float]:
    """Job data rates 1e-6..1e3 GB/s, and 0 (a job that reads nothing)."""
    return st.one_of(
        st.sampled_from([0.0, 1e-6, 0.05, 0.1, 1.0, 1e3]),
        st.floats(-6.0, 3.0).map(lambda e: float(10.0**e)),
    )


def prices() -> st.SearchStrategy[float]:
    """A price per unit-hour: 0 or 1e-6..1e3."""
    return st.one_of(st.just(0.0), st.sampled_from([1e-4, 0.9, 1.0]), st.floats(-6.0, 3.0).map(lambda e: 10.0**e))


def min_remote_io(inst: Instance) -> float:
    """Remote IO (GB/s) left when C is filled in decreasing IO density ρ_k = R_k / d_k (Theorem 1 (ii)).

    The least remote IO any cache of capacity C can leave; P1 is feasible
    exactly when it is at most B.  Written as a plain loop, independent of
    algorithms/cba.py.
    """
    demand = [0.0] * inst.n_datasets
    for j in range(inst.n_jobs):
        demand[int(inst.job_dataset[j])] += float(inst.job_io_gbps[j])
    sizes = [float(x) for x in inst.dataset_size_gb]
    order = sorted(range(inst.n_datasets), key=lambda k: -demand[k] / sizes[k])
    left = inst.cache_gb
    remote = 0.0
    for k in order:
        cached = min(left, sizes[k])
        left -= cached
        remote += demand[k] * (1.0 - cached / sizes[k])
    return max(remote, 0.0)


@st.composite
def cost_instances(
    draw: st.DrawFn,
    *,
    max_jobs: int = 30,
    max_datasets: int = 8,
    bandwidth_modes: tuple[str, ...] = BANDWIDTH_MODES,
) -> Instance:
    """A continuous P1 instance (MODEL.md §4) with the adversarial corners listed in the module docstring."""
    n_datasets = draw(st.integers(1, max_datasets))
    n_jobs = draw(st.integers(1, max_jobs))
    ties = draw(st.booleans())
    if ties:
        # Equal IO densities: every dataset has the same size and every job the same rate,
        # one job per dataset (so R_k / d_k is bit-for-bit equal), plus optional unread datasets.
        size = draw(sizes_gb())
        rate = draw(rates_gbps())
        n_jobs = min(n_jobs, n_datasets)
        sizes = np.full(n_datasets, size)
        rates = np.full(n_jobs, rate)
        job_dataset = np.arange(n_jobs)
    else:
        sizes = np.array(draw(st.lists(sizes_gb(), min_size=n_datasets, max_size=n_datasets)))
        rates = np.array(draw(st.lists(rates_gbps(), min_size=n_jobs, max_size=n_jobs)))
        # Jobs read only the first `read` datasets, so some datasets may be read by no job.
        read = draw(st.integers(1, n_datasets))
        job_dataset = np.array(draw(st.lists(st.integers(0, read - 1), min_size=n_jobs, max_size=n_jobs)))
    gpus = np.array(draw(st.lists(st.integers(0, 16), min_size=n_jobs, max_size=n_jobs)))

    total_size = float(sizes.sum())
    cache_mode = draw(st.sampled_from(["zero", "fraction", "all", "more"]))
    cache_gb = {
        "zero": 0.0,
        "fraction": draw(st.floats(1e-3, 1.0)) * total_size,
        "all": total_size,
        "more": 2.0 * total_size,
    }[cache_mode]

    p_g = draw(prices())
    p_b = draw(prices())
    demand = np.bincount(job_dataset, weights=rates, minlength=n_datasets)
    if draw(st.booleans()) and p_b > 0:
        # Price exactly on one dataset's threshold p_c = p_b ρ_k: caching it neither gains nor loses.
        k = draw(st.integers(0, n_datasets - 1))
        p_c = p_b * float(demand[k] / sizes[k])
    else:
        p_c = draw(prices())

    inst = build(
        dataset_size_gb=sizes,
        job_dataset=job_dataset,
        job_gpus=gpus,
        job_io_gbps=rates,
        cache_gb=cache_gb,
        prices=(p_g, p_c, p_b),
        gpus=int(gpus.sum()),
    )
    mode = draw(st.sampled_from(bandwidth_modes))
    return inst.replace(bandwidth_gbps=bandwidth_for(inst, mode, draw(st.floats(0.0, 1.0))))


def bandwidth_for(inst: Instance, mode: str, u: float) -> float:
    """The bandwidth cap B of one of :data:`BANDWIDTH_MODES` (``u`` in [0, 1] places a loose cap)."""
    tight = min_remote_io(inst)
    total = float(inst.job_io_gbps.sum())
    if mode == "unlimited":
        return math.inf
    if mode == "tight":
        return tight
    if mode == "loose":
        return tight + u * (total - tight) + 1.0
    if mode == "zero":
        return 0.0
    if mode == "below":
        return max(0.0, tight - BELOW_MARGIN * total)
    raise ValueError(f"unknown bandwidth mode {mode!r}")


#: Absolute part of the "clearly infeasible" margin, GB/s: ten times HiGHS's primal feasibility tolerance (1e-7),
#: below which HiGHS may rightly call a slightly infeasible LP feasible.
ABSOLUTE_MARGIN = 1e-6


def is_clearly_infeasible(inst: Instance) -> bool:
    """True when B is below the least remote IO by more than BELOW_MARGIN / 2 of Σ r_j and ABSOLUTE_MARGIN.

    Then every exact method must say infeasible, whatever its tolerances; a
    smaller shortfall is a question of tolerance, not of the model.
    """
    total = float(inst.job_io_gbps.sum())
    return min_remote_io(inst) > inst.bandwidth_gbps + max(0.5 * BELOW_MARGIN * total, ABSOLUTE_MARGIN)


#: HiGHS drops matrix entries below its small_matrix_value (1e-9) as zero, so an LP whose feeding
#: coefficient r_j / d_k(j) is smaller is not the instance any more (it can even be called infeasible).
HIGHS_SMALLEST_COEFFICIENT = 1e-8


def highs_representable(inst: Instance) -> bool:
    """True when every nonzero coefficient r_j / d_k(j) of P1's feeding rows is one HiGHS keeps (≥ 1e-8)."""
    coef = inst.job_io_gbps / inst.dataset_size_gb[inst.job_dataset]
    coef = coef[coef > 0]
    return bool(coef.size == 0 or coef.min() >= HIGHS_SMALLEST_COEFFICIENT)
