"""The kind of each runs.csv column, as ``cbalab experiment NAME --verify`` compares it
(docs/adr/0002-verification-by-column-kind.md).

A column is *exact* (statuses, counts, names, flags, and the numbers whose every bit the code fixes: closed
forms, replays, the referee's sums in a fixed order) or a *solver* column: a number that passes through HiGHS
or a BLAS kernel, whose last digits move with the CPU (HiGHS's and OpenBLAS's AVX2 or AVX-512 paths) at the
same package versions.  An exact column is compared as text; a solver column within :data:`RTOL` relative with the
floor :data:`ATOL` (:func:`close`).  :data:`SOLVER` declares the solver columns of each experiment, in this one
place: the run modules do not import this module, so the declaration moves no digest of the code the rows were
computed from (experiments/provenance.py).
"""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

#: Relative tolerance of a solver column: a thousand times tighter than the certification's (models/certify.py
#: ``CERTIFY_RTOL`` = 1e-6), and some thousand times looser than the largest difference between two CPUs measured
#: (1.5e-12 relative, an LP bound on AVX-512 against AVX2).
RTOL = 1e-9

#: Absolute floor of a solver column, for values near 0: the gaps and relative differences (cba_gap,
#: max_rel_diff …) are differences of two solver numbers of magnitude ~1 over one of them, so their rounding is
#: absolute (1e-16 to 1e-13), not relative; 1e-12 is six orders below the smallest threshold a claim judges such
#: a column by (``ZERO_GAP`` = 1e-6), and a dollar amount near 0 that differs by 1e-12 USD differs by nothing.
ATOL = 1e-12

#: Each experiment's solver columns (``fnmatch`` patterns, case-sensitive); every other column is exact.  A
#: pattern matches float cells only: a status or a flag of the same name stays text.
SOLVER: dict[str, tuple[str, ...]] = {
    # The LP/MILP optimum (Pyomo + HiGHS) and everything measured against it; cba_gap_bound is CBA's closed form.
    "optimality": ("optimum_*", "*_gap", "*_gap_reference", "*_certificate_slack", "p2*_bound_welfare"),
    # Pyomo + HiGHS and highspy's optima, their agreement with CBA, and AutoCBA's certificate (an LP dual).
    "scaling": ("pyomo_lp_*", "highspy_*", "max_rel_diff", "autocba_welfare", "autocba_bound", "autocba_certified_gap"),
    # P3's decomposition (HiGHS LPs) and every ratio to its bound; the replays' IO costs are exact.
    "dynamic": ("p3_cost_io", "p3_bound", "p3_gap", "ratio_*"),
    # The milp, milp-stall and lp methods are HiGHS's answers, scored by the referee: every score of an allocation.
    "welfare": (
        "welfare",
        "bound",
        "cost_usd_per_h",
        "io_cost_usd_per_h",
        "budget_use",
        "min_stall_factor",
        "mean_stall_factor_running",
    ),
    # The stall cost is a BLAS dot product (io_cost_report.stall_cost, np.dot): OpenBLAS picks its kernel by CPU.
    "io-cost": ("stall_cost_usd", "io_plus_stall_usd"),
}
# The confirmation reruns io-cost, welfare and online-welfare (exact) on held-out data.
SOLVER["confirm"] = SOLVER["io-cost"] + SOLVER["welfare"]


def solver_column(name: str, column: str) -> bool:
    """Whether ``column`` of experiment ``name``'s runs.csv is a solver column (:data:`SOLVER`)."""
    return any(fnmatchcase(column, p) for p in SOLVER.get(name, ()))


def as_float(text: str) -> float | None:
    """The float a CSV cell holds ("" is NaN), or None when it is not a number (a word, a flag)."""
    if text == "":
        return math.nan
    if text in ("True", "False"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def difference(old: str, new: str) -> float:
    """How far the cell ``new`` is from ``old`` relative to :func:`close`'s allowance: 0 when the same, up to 1
    within it, above 1 outside it; ``inf`` when either is not a number or only one is NaN."""
    a, b = as_float(old), as_float(new)
    if a is None or b is None:
        return 0.0 if old == new else math.inf
    if math.isnan(a) or math.isnan(b):
        return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
    if a == b:
        return 0.0
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return abs(a - b) / (RTOL * max(abs(a), abs(b)) + ATOL)


def relative(old: str, new: str) -> float:
    """The relative difference of two numeric cells, ``|a - b| / max(|a|, |b|)`` (0 for equal cells, ``inf``
    when either is not a number)."""
    a, b = as_float(old), as_float(new)
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return 0.0 if old == new else math.inf
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def close(old: str, new: str) -> bool:
    """Whether two cells of a solver column agree: ``|a - b| <= RTOL * max(|a|, |b|) + ATOL``, both empty, or the
    same text when either is not a number."""
    return difference(old, new) <= 1.0
