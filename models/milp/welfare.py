"""The welfare problem P2 (docs/model.md §5) as a Pyomo MILP, exact for any utility table.

Variables are indexed by option row o (the CSR rows of ``Instance.option_*``;
j(o) is the job of row o, g_o, r_o, U_o its GPUs, rate and utility) and by
dataset k:

* :func:`define_choice`     y_o ∈ {0, 1}, Σ_{o ∈ O_j} y_o ≤ 1 (a job runs at one option or not at all);
* :func:`define_cache`      h_k ∈ [0, 1], c_k = d_k h_k;
* :func:`define_mccormick`  w_o = y_o h_k(j(o)) by McCormick: w ≤ y, w ≤ h, w ≥ h + y − 1, w ≥ 0
                            (exact because y is binary, proofs/mccormick_exact.md), plus the
                            valid per-job cut Σ_{o ∈ O_j} w_o ≤ h_k(j);
* :func:`define_feeding`    b_j ≥ Σ_{o ∈ O_j} r_o (y_o − w_o), i.e. b_j ≥ r_j(g_j)(1 − h_k(j)): no stalls;
* :func:`define_capacity`   Σ g_o y_o ≤ G, Σ c_k ≤ C, Σ b_j ≤ B;
* :func:`define_budget`     p_g Σ g_o y_o + p_c Σ c_k + p_b Σ b_j ≤ Budget;
* :func:`define_welfare`    maximise Σ U_o y_o.

C, B and the budget stand in their rows as the referee accepts them, ``tolerated(·, MODEL_SHARE)`` of
models/evaluate.py (docs/model.md (8.1)): the model optimises over the allocations the referee accepts.

``relax=True`` makes y continuous in [0, 1]: the LP relaxation, whose optimum
is an upper bound on the welfare.  (McCormick is then no longer exact, and
the relaxation is correspondingly weaker; it is still a valid bound because
every integer solution with w = y h satisfies it.)

Only continuous caching without bandwidth tiers is modelled: P2 in docs/model.md §5
is stated for continuous c and b, and every P2 method in cbalab (AutoCBA, the
baselines, the brute force of the tests) feeds through the continuous P1
closed form.  Other variants are rejected with an InstanceError rather than
solved under a model nobody else checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pyomo.environ as pyo

from cbalab.models.certify import objective_unit
from cbalab.models.evaluate import MODEL_SHARE, tolerated
from cbalab.models.instance import Instance
from cbalab.models.kernels import power_of_two


def build_welfare_model(inst: Instance, *, relax: bool = False) -> pyo.ConcreteModel:
    """P2 of docs/model.md §5 for ``inst`` (every job needs options); ``relax`` gives the LP relaxation."""
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    m = pyo.ConcreteModel(name="cbalab-P2")
    m.K = pyo.RangeSet(0, inst.n_datasets - 1)
    m.J = pyo.RangeSet(0, inst.n_jobs - 1)
    m.O = pyo.RangeSet(0, int(inst.option_ptr[-1]) - 1)
    define_choice(m, inst, relax)
    define_cache(m, inst)
    define_mccormick(m, inst)
    define_feeding(m, inst)
    define_capacity(m, inst)
    define_budget(m, inst)
    define_welfare(m, inst)
    return m


def _rows(inst: Instance, j: int) -> range:
    return range(int(inst.option_ptr[j]), int(inst.option_ptr[j + 1]))


def define_choice(m: pyo.ConcreteModel, inst: Instance, relax: bool) -> None:
    """One option per job or none: y_o binary (continuous in [0, 1] if ``relax``), Σ_{o ∈ O_j} y_o ≤ 1 (§5)."""
    m.y = pyo.Var(m.O, domain=pyo.UnitInterval if relax else pyo.Binary)
    m.one_option = pyo.Constraint(m.J, rule=lambda mm, j: pyo.quicksum(mm.y[o] for o in _rows(inst, j)) <= 1)


def define_cache(m: pyo.ConcreteModel, inst: Instance) -> None:
    """Hit ratio h_k ∈ [0, 1] per dataset and the cache it occupies, c_k = d_k h_k (§2-§3)."""
    d = inst.dataset_size_gb
    m.h = pyo.Var(m.K, domain=pyo.UnitInterval)
    m.cache = pyo.Expression(m.K, rule=lambda mm, k: float(d[k]) * mm.h[k])


def define_mccormick(m: pyo.ConcreteModel, inst: Instance) -> None:
    """w_o = y_o · h_k(j(o)) by its McCormick envelope (§5; exact for binary y, proofs/mccormick_exact.md).

    Plus the valid cut Σ_{o ∈ O_j} w_o ≤ h_k(j) per job (it holds at every integer point, where the sum
    is h Σ_o y_o ≤ h): it changes no integer solution but tightens the LP relaxation, which roughly
    halves HiGHS's time on tight budgets (proofs/mccormick_exact.md, Remarks).
    """
    k_of = inst.job_dataset[inst.option_job()]
    m.w = pyo.Var(m.O, domain=pyo.UnitInterval)
    m.w_below_y = pyo.Constraint(m.O, rule=lambda mm, o: mm.w[o] <= mm.y[o])
    m.w_below_h = pyo.Constraint(m.O, rule=lambda mm, o: mm.w[o] <= mm.h[int(k_of[o])])
    m.w_above = pyo.Constraint(m.O, rule=lambda mm, o: mm.w[o] >= mm.h[int(k_of[o])] + mm.y[o] - 1)
    m.w_per_job = pyo.Constraint(
        m.J,
        rule=lambda mm, j: pyo.quicksum(mm.w[o] for o in _rows(inst, j)) <= mm.h[int(inst.job_dataset[j])],
    )


def define_feeding(m: pyo.ConcreteModel, inst: Instance) -> None:
    """No stalls: b_j ≥ Σ_{o ∈ O_j} r_o (y_o − w_o) = r_j(g_j)(1 − h_k(j)) (§3, §5)."""
    r = inst.option_io_gbps
    m.bw = pyo.Var(m.J, domain=pyo.NonNegativeReals)

    def rule(mm: pyo.ConcreteModel, j: int) -> pyo.Expression:
        rows = [o for o in _rows(inst, j) if r[o] > 0]
        if not rows:
            return pyo.Constraint.Skip
        return mm.bw[j] >= pyo.quicksum(float(r[o]) * (mm.y[o] - mm.w[o]) for o in rows)

    m.feed = pyo.Constraint(m.J, rule=rule)


def define_capacity(m: pyo.ConcreteModel, inst: Instance) -> None:
    """Σ_o g_o y_o ≤ G, Σ_k c_k ≤ C, Σ_j b_j ≤ B (§5); a cap that is unlimited is left out."""
    g = inst.option_gpus
    m.gpus_used = pyo.Expression(expr=pyo.quicksum(float(g[o]) * m.y[o] for o in m.O))
    if inst.gpus is not None:
        m.gpu_capacity = pyo.Constraint(expr=m.gpus_used <= float(inst.gpus))
    m.cache_capacity = pyo.Constraint(
        expr=pyo.quicksum(m.cache[k] for k in m.K) <= tolerated(inst.cache_gb, MODEL_SHARE)
    )
    if math.isfinite(inst.bandwidth_gbps):
        m.bandwidth_capacity = pyo.Constraint(
            expr=pyo.quicksum(m.bw[j] for j in m.J) <= tolerated(inst.bandwidth_gbps, MODEL_SHARE)
        )


def define_budget(m: pyo.ConcreteModel, inst: Instance) -> None:
    """p_g Σ g + p_c Σ c + p_b Σ b ≤ Budget (§5); left out when the budget is unlimited."""
    m.spend = pyo.Expression(
        expr=inst.price_gpu * m.gpus_used
        + inst.price_cache * pyo.quicksum(m.cache[k] for k in m.K)
        + inst.price_bandwidth * pyo.quicksum(m.bw[j] for j in m.J)
    )
    if math.isfinite(inst.budget_per_hour):
        m.budget = pyo.Constraint(expr=m.spend <= tolerated(inst.budget_per_hour, MODEL_SHARE))


def define_welfare(m: pyo.ConcreteModel, inst: Instance) -> None:
    """Maximise the social welfare Σ_j U_j(g_j) = Σ_o U_o y_o (§5)."""
    u = inst.option_utility
    m.welfare = pyo.Objective(expr=pyo.quicksum(float(u[o]) * m.y[o] for o in m.O), sense=pyo.maximize)


# ----------------------------------------------------------------- the array form, built from numpy for HiGHS
#
# build_welfare_model above is P2 as docs/model.md §5 writes it, one Pyomo component per row.  The array form
# below states the same problem built from numpy in milliseconds; proofs/welfare_milp_forms.md proves both
# have the same optima (Theorem F1) and tests/test_welfare_milp.py checks it against the Pyomo model and
# brute force.  It may drop three groups of rows, each implied at an optimum or redundant (measured: HiGHS
# is slower without them, so by default all are kept, see build_welfare_arrays):
#
# * b_j: the bandwidth enters P2 only through Σ_j b_j (cap, budget), so every feeding row is tight at
#   some optimum and Σ_j b_j = Σ_o r_o (y_o − w_o) may be substituted (w ≤ y keeps it ≥ 0);
# * w ≥ h + y − 1: w only lowers the remote demand, so raising w to min(y, h) never hurts;
# * w_o ≤ h_k(o): implied by the per-job cut Σ_{o ∈ O_j} w_o ≤ h_k(j) and w ≥ 0;
#
# and fixes y_o = 0 for options that do not fit the cluster even alone (g_o > G, or the cheapest
# standalone feeding over budget or B, proofs/welfare_milp_forms.md, Lemma F2).
#
# The stall-allowed relaxation (``stall=True``) replaces the utility Σ U_o y_o by Σ U_o s_o with a fed
# fraction s_o ≤ y_o, and the demand r_o y_o by r_o s_o with the cache-served part z_o ≤ s_o (z_o plays
# w_o's role): proofs/welfare_milp_forms.md, Theorem F3, for what it bounds and when it is exact.
#
# HiGHS's tolerances are absolute (1e-7 on a row, 1e-6 on integrality, a MIP gap of 0 in objective units), so
# the array form is scaled before HiGHS sees it (docs/model.md §8, issue 19): the objective is divided by a
# power of two near the largest utility of an option that can run (models/certify.py, objective_unit), each
# b_j is measured in a power of two near its job's largest rate, and the rows of C, B and the budget are
# divided by their limit.  Scaling rows changes no solution, and powers
# of two are undone exactly: WelfareArrays.welfare gives the welfare in the instance's units.  Utilities of
# 1e-8 (welfare 5e-6) then meet the same tolerances as utilities of 1.


#: Rows of docs/model.md §5's form that the array form keeps by default (build_welfare_arrays).
DEFAULT_ROWS = frozenset({"feeding", "w_below_h", "w_above"})


@dataclass(frozen=True)
class WelfareArrays:
    """P2 (or its stall relaxation) as maximise cost·x s.t. row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi.

    A is row-wise CSR (``start``, ``index``, ``value``).  Columns: y at [0, O), w (or z) at [O, 2O), h at
    [2O, 2O + K), with ``stall`` the fed fractions s at [2O + K, 3O + K), then b_j / ``bandwidth_scale[j]``
    if the feeding rows are kept.  ``integral`` marks y.  ``cost`` is the utility divided by
    ``objective_scale`` (all scales are powers of two; see the comment above).
    """

    cost: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integral: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    n_options: int
    n_datasets: int
    stall: bool
    objective_scale: float = 1.0
    bandwidth_scale: np.ndarray | None = None

    def welfare(self, x: np.ndarray) -> float:
        """The objective of a solution vector in the instance's units (utility/h): U·x, unscaled exactly."""
        return float(self.cost @ x) * self.objective_scale

    def fits(self, x: np.ndarray, tol: float = 1e-12) -> bool:
        """Whether ``x`` meets every row and column bound to a relative ``tol`` and is whole where it must be.

        The check a warm start passes before it may count as an incumbent (proofs/welfare_milp_forms.md,
        Theorem F4 (iii)): the rows already hold the referee's slack, so ``tol`` covers rounding only.
        """
        if x.shape != (self.n_cols,) or not np.all(np.isfinite(x)):
            return False
        slack_col = tol * np.maximum(1.0, np.abs(x))
        if np.any(x < self.col_lo - slack_col) or np.any(x > self.col_hi + slack_col):
            return False
        whole = x[self.integral]
        if np.any(np.abs(whole - np.rint(whole)) > tol):
            return False
        rows = np.repeat(np.arange(self.row_hi.size), np.diff(self.start))
        activity = np.bincount(rows, weights=self.value * x[self.index], minlength=self.row_hi.size)
        size = np.bincount(rows, weights=np.abs(self.value * x[self.index]), minlength=self.row_hi.size)
        slack_row = tol * np.maximum(1.0, size)
        return bool(np.all(activity <= self.row_hi + slack_row) and np.all(activity >= self.row_lo - slack_row))

    @property
    def n_cols(self) -> int:
        """Number of columns."""
        return int(self.cost.size)

    def y(self, x: np.ndarray) -> np.ndarray:
        """The option choices y of a solution vector."""
        return x[: self.n_options]

    def h(self, x: np.ndarray) -> np.ndarray:
        """The hit ratios h of a solution vector."""
        o = self.n_options
        return x[2 * o : 2 * o + self.n_datasets]

    def w(self, x: np.ndarray) -> np.ndarray:
        """w (no-stall form) or z (stall form) of a solution vector."""
        return x[self.n_options : 2 * self.n_options]

    def fed(self, x: np.ndarray) -> np.ndarray:
        """The fed fractions s (stall form) or y (no-stall form) of a solution vector."""
        o, k = self.n_options, self.n_datasets
        return x[2 * o + k : 3 * o + k] if self.stall else x[:o]


def standalone_fits(inst: Instance, slack: float = 1e-9) -> np.ndarray:
    """Per option: can it run alone, unstalled, within G, C, B and the budget? (proofs/welfare_milp_forms.md, F2).

    Alone, option o pays p_g g_o + min over h ≤ min(1, C/d) with r_o(1 − h) ≤ B of p_c d h + p_b r_o (1 − h);
    the minimum is at an end of the feasible h interval (linear cost).  C, B and the budget are taken as the
    referee accepts them (``tolerated``, docs/model.md (8.1)), and ``slack`` is relative and on the side of
    keeping on top: an option is dropped only if it misses a limit by more than it, so a rounding error can
    never remove a feasible option (the AutoCBA bug of issue 12 was the opposite).
    """
    o_job = inst.option_job()
    d = inst.dataset_size_gb[inst.job_dataset[o_job]]
    r = inst.option_io_gbps
    g = inst.option_gpus.astype(float)
    h_top = np.minimum(1.0, tolerated(inst.cache_gb) / d)
    h_low = np.zeros_like(r)
    if math.isfinite(inst.bandwidth_gbps):
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(r > 0, 1.0 - tolerated(inst.bandwidth_gbps) / r, 0.0)
        h_low = np.clip(need, 0.0, None)
    ok = h_low <= h_top + slack
    cheapest = np.full(r.size, np.inf)
    for h in (h_low, h_top):
        h = np.minimum(h, h_top)
        cost = inst.price_gpu * g + inst.price_cache * d * h + inst.price_bandwidth * r * (1 - h)
        cheapest = np.minimum(cheapest, cost)
    if math.isfinite(inst.budget_per_hour):
        ok &= cheapest <= tolerated(inst.budget_per_hour) + slack * max(1.0, abs(inst.budget_per_hour))
    if inst.gpus is not None:
        ok &= g <= inst.gpus
    return ok


def _stall_fits(inst: Instance, slack: float = 1e-9) -> np.ndarray:
    """Per option, when stalls are allowed: its GPUs alone fit G and the budget (it may run fed at rate 0)."""
    g = inst.option_gpus.astype(float)
    ok = np.ones(g.size, dtype=bool)
    if math.isfinite(inst.budget_per_hour):
        ok &= inst.price_gpu * g <= tolerated(inst.budget_per_hour) + slack * max(1.0, abs(inst.budget_per_hour))
    if inst.gpus is not None:
        ok &= g <= inst.gpus
    return ok


def build_welfare_arrays(
    inst: Instance, *, stall: bool = False, relax: bool = False, rows_kept: frozenset[str] = DEFAULT_ROWS
) -> WelfareArrays:
    """P2 of docs/model.md §5 (or its stall relaxation) in array form; see the comment above and Theorem F1.

    ``rows_kept`` chooses which of the rows the array form can do without it puts back (Theorem F1 holds for
    every choice): ``"feeding"`` the per-job bandwidth b_j ≥ Σ_o r_o (y_o − w_o), ``"w_below_h"`` the rows
    w_o ≤ h_k(o), ``"w_above"`` the rows w_o ≥ h_k(o) + y_o − 1.  All are kept by default, because dropping
    them measured slower although the LP bound is the same: without the feeding rows HiGHS needed > 20 s
    instead of 3 s on a 100-job instance, and without the two McCormick rows its presolve took > 60 s
    instead of 15 s on a 1,000-job one (2 loaded cores).  The form is scaled as the comment above says.
    """
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    n_o, n_k, n_j = int(inst.option_ptr[-1]), inst.n_datasets, inst.n_jobs
    o_job = inst.option_job()
    r = inst.option_io_gbps.astype(float)
    g = inst.option_gpus.astype(float)
    d = inst.dataset_size_gb.astype(float)
    y = np.arange(n_o)
    w = n_o + y
    h0 = 2 * n_o
    s = 2 * n_o + n_k + y if stall else y  # the columns that carry utility and demand
    n_cols = 3 * n_o + n_k if stall else 2 * n_o + n_k
    b0 = n_cols
    if "feeding" in rows_kept:
        n_cols += n_j
    rows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (row, col, val, lo, hi)
    n_rows = 0
    u_scale = power_of_two(objective_unit(inst, "welfare"))
    top_rate = np.zeros(n_j)
    np.maximum.at(top_rate, o_job, r)
    b_scale = np.array([power_of_two(float(x)) for x in top_rate])  # b_j = b_scale[j] · b'_j

    def add(row: np.ndarray, col: np.ndarray, val: np.ndarray, count: int, hi: np.ndarray | float) -> None:
        nonlocal n_rows
        rows.append((row + n_rows, col, val, np.full(count, -np.inf), np.broadcast_to(hi, (count,)).astype(float)))
        n_rows += count

    def add_limit(col: np.ndarray, val: np.ndarray, limit: float) -> None:
        """One row Σ val·x ≤ tolerated(limit, MODEL_SHARE), divided by the limit (by its largest entry if it is 0)."""
        scale = limit if limit > 0 else (float(np.abs(val).max()) if val.size and np.abs(val).max() > 0 else 1.0)
        add(np.zeros(col.size, np.int64), col, val / scale, 1, tolerated(limit, MODEL_SHARE) / scale)

    ones = np.ones(n_o)
    add(o_job, y, ones, n_j, 1.0)  # one option per job
    add(np.r_[y, y], np.r_[w, s], np.r_[ones, -ones], n_o, 0.0)  # w_o ≤ y_o (z_o ≤ s_o)
    if stall:
        add(np.r_[y, y], np.r_[s, y], np.r_[ones, -ones], n_o, 0.0)  # s_o ≤ y_o
    jobs = np.arange(n_j)
    add(np.r_[o_job, jobs], np.r_[w, h0 + inst.job_dataset], np.r_[ones, -np.ones(n_j)], n_j, 0.0)  # Σ w ≤ h
    o_k = inst.job_dataset[o_job]
    if "w_below_h" in rows_kept:
        add(np.r_[y, y], np.r_[w, h0 + o_k], np.r_[ones, -ones], n_o, 0.0)
    if "w_above" in rows_kept:  # h + y − w ≤ 1
        add(np.r_[y, y, y], np.r_[h0 + o_k, y, w], np.r_[ones, ones, -ones], n_o, 1.0)
    if inst.gpus is not None:
        add(np.zeros(n_o, np.int64), y, g, 1, float(inst.gpus))
    add_limit(h0 + np.arange(n_k), d, inst.cache_gb)
    demand_cols, demand_vals = np.r_[s, w], np.r_[r, -r]  # Σ_o r_o (s_o − w_o), s = y without stalls
    keep = demand_vals != 0
    demand_cols, demand_vals = demand_cols[keep], demand_vals[keep]
    if "feeding" in rows_kept:  # Σ_o (r_o / ρ_j)(s_o − w_o) − b'_j ≤ 0 per job, b_j = ρ_j b'_j; sums run over b
        rho = np.r_[r, -r] / b_scale[np.r_[o_job, o_job]]
        add(np.r_[o_job, o_job, jobs], np.r_[s, w, b0 + jobs], np.r_[rho, -np.ones(n_j)], n_j, 0.0)
        demand_cols, demand_vals = b0 + jobs, b_scale
    if math.isfinite(inst.bandwidth_gbps) and demand_cols.size:
        add_limit(demand_cols, demand_vals, inst.bandwidth_gbps)
    if math.isfinite(inst.budget_per_hour):
        spend_cols = np.r_[y, h0 + np.arange(n_k), demand_cols]
        spend_vals = np.r_[inst.price_gpu * g, inst.price_cache * d, inst.price_bandwidth * demand_vals]
        nz = spend_vals != 0
        add_limit(spend_cols[nz], spend_vals[nz], inst.budget_per_hour)
    row = np.concatenate([t[0] for t in rows])
    col = np.concatenate([t[1] for t in rows])
    val = np.concatenate([t[2] for t in rows])
    order = np.lexsort((col, row))
    row, col, val = row[order], col[order], val[order]
    first = np.r_[True, (row[1:] != row[:-1]) | (col[1:] != col[:-1])]  # sum repeated entries (y in the budget)
    cuts = np.flatnonzero(first)
    row, col, val = row[cuts], col[cuts], np.add.reduceat(val, cuts)
    start = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(row, minlength=n_rows), out=start[1:])
    cost = np.zeros(n_cols)
    cost[s] = inst.option_utility / u_scale
    col_hi = np.ones(n_cols)
    col_hi[b0:] = np.inf
    col_hi[y] = np.where(_stall_fits(inst) if stall else standalone_fits(inst), 1.0, 0.0)
    integral = np.zeros(n_cols, dtype=bool)
    integral[y] = not relax
    return WelfareArrays(
        cost=cost,
        col_lo=np.zeros(n_cols),
        col_hi=col_hi,
        integral=integral,
        start=start,
        index=col.astype(np.int32),
        value=val,
        row_lo=np.concatenate([t[3] for t in rows]),
        row_hi=np.concatenate([t[4] for t in rows]),
        n_options=n_o,
        n_datasets=n_k,
        stall=stall,
        objective_scale=u_scale,
        bandwidth_scale=b_scale,
    )


def start_point(inst: Instance, arrays: WelfareArrays, gpus: np.ndarray, cache_gb: np.ndarray) -> np.ndarray:
    """A solution vector of ``arrays`` for an allocation (options by GPUs, h = min(c, d)/d, w = y h, s = y).

    The warm start handed to HiGHS (issue 12, item 2); it counts as an incumbent only if it meets the rows
    (:meth:`WelfareArrays.fits`), and HiGHS checks it too.  Its b_j is the least feeding, in the scaled units.
    """
    x = np.zeros(arrays.n_cols)
    o_job = inst.option_job()
    chosen = (inst.option_gpus == gpus[o_job]) & (gpus[o_job] > 0)
    hit = np.clip(np.minimum(cache_gb, inst.dataset_size_gb) / inst.dataset_size_gb, 0.0, 1.0)
    n_o = arrays.n_options
    x[:n_o] = chosen
    x[n_o : 2 * n_o] = chosen * hit[inst.job_dataset[o_job]]
    x[2 * n_o : 2 * n_o + arrays.n_datasets] = hit
    k0 = 2 * n_o + arrays.n_datasets
    if arrays.stall:
        x[k0 : k0 + n_o] = chosen
        k0 += n_o
    if arrays.n_cols > k0:  # b_j = the least feeding of the chosen option
        remote = chosen * inst.option_io_gbps * (1 - hit[inst.job_dataset[o_job]])
        scale = arrays.bandwidth_scale if arrays.bandwidth_scale is not None else 1.0
        x[k0:] = np.bincount(o_job, weights=remote, minlength=inst.n_jobs) / scale
    return x


def with_gpu_count(arrays: WelfareArrays, gpus: np.ndarray) -> WelfareArrays:
    """``arrays`` plus a last row n = Σ_o g_o y_o, unbounded ([0, ∞)) until a slice sets it (Theorem F4).

    proofs/welfare_milp_forms.md, Theorem F4: P2's feasible set splits by the integer n, so its optimum is the
    best of the slices n = 0, 1, …, and the LP bound of a slice is concave in n.  The row changes no
    solution; :func:`cbalab.models.solve.solve_sliced` sets its bounds slice by slice.
    """
    n_o = arrays.n_options
    keep = gpus != 0
    start = np.r_[arrays.start, arrays.start[-1] + int(keep.sum())].astype(np.int32)
    return replace(
        arrays,
        start=start,
        index=np.r_[arrays.index, np.arange(n_o, dtype=np.int32)[keep]].astype(np.int32),
        value=np.r_[arrays.value, gpus[keep].astype(float)],
        row_lo=np.r_[arrays.row_lo, 0.0],
        row_hi=np.r_[arrays.row_hi, np.inf],
    )


def with_slice(arrays: WelfareArrays, lo: float, hi: float, *, relax: bool = False) -> WelfareArrays:
    """The slice lo ≤ n ≤ hi of an array form made by :func:`with_gpu_count` (its last row); ``relax`` drops
    integrality (the slice's LP relaxation, whose optimum L(n) bounds the slice, Theorem F4)."""
    row_lo, row_hi = arrays.row_lo.copy(), arrays.row_hi.copy()
    row_lo[-1], row_hi[-1] = lo, hi
    integral = np.zeros_like(arrays.integral) if relax else arrays.integral
    return replace(arrays, row_lo=row_lo, row_hi=row_hi, integral=integral)
