"""The welfare problem P2 (docs/model.md §5) and its stall relaxation, stated once (models/milp/statement.py).

Columns are indexed by option row o (the CSR rows of ``Instance.option_*``; j(o) is the job of row o, g_o, r_o,
U_o its GPUs, rate and utility) and by dataset k: y_o ∈ {0, 1} (the choice), w_o ∈ [0, 1] (y_o h_k(j(o))), h_k ∈
[0, 1] (the hit ratio, c_k = d_k h_k), b_j ≥ 0 (job j's bandwidth), and with stalls the fed fractions s_o.  One
row function per group, each named for what it states:

* :func:`one_option`        Σ_{o ∈ O_j} y_o ≤ 1 (a job runs at one option or not at all);
* :func:`w_below_y`, :func:`w_below_h`, :func:`w_above`   w_o = y_o h_k(j(o)) by McCormick: w ≤ y, w ≤ h,
                            w ≥ h + y − 1, w ≥ 0 (exact because y is binary, proofs/mccormick_exact.md);
* :func:`w_per_job`         the valid per-job cut Σ_{o ∈ O_j} w_o ≤ h_k(j);
* :func:`feed`              b_j ≥ Σ_{o ∈ O_j} r_o (y_o − w_o), i.e. b_j ≥ r_j(g_j)(1 − h_k(j)): no stalls;
* :func:`gpu_capacity`, :func:`cache_capacity`, :func:`bandwidth_capacity`   Σ g_o y_o ≤ G, Σ c_k ≤ C, Σ b_j ≤ B;
* :func:`budget`            p_g Σ g_o y_o + p_c Σ c_k + p_b Σ b_j ≤ Budget;

and the objective, maximise Σ U_o y_o.  C, B and the budget stand in their rows as the referee accepts them,
``tolerated(·)`` of models/evaluate.py (docs/model.md (8.1)), the whole slack: so the optimum and every bound
are those of the allocations the referee accepts (an allocation HiGHS's rounding leaves beyond a limit is scaled
back into it by models/solve.py).  y_o is fixed to 0 (its upper
bound) for every option that cannot run even alone (:func:`standalone_fits`, proofs/welfare_milp_forms.md,
Lemma F2).

``relax=True`` makes y continuous in [0, 1]: the LP relaxation, an upper bound on the welfare (McCormick is then
no longer exact, but every integer solution with w = y h satisfies it).  With ``shares`` it is the LP of shares,
with only the options above G fixed (:func:`share_fits`): it bounds time-shared and stalled answers as well,
which may hold a share of an option that cannot run alone.  ``rows_kept`` may drop three groups, each
implied at an optimum or redundant (proofs/welfare_milp_forms.md, Theorem F1: the optimum is the same for every
choice): the bandwidth b_j (it enters P2 only through Σ_j b_j, so Σ_o r_o (y_o − w_o) may be substituted),
``w_above`` (raising w to min(y, h) never hurts) and ``w_below_h`` (implied by the per-job cut and w ≥ 0).  All
are kept by default, because dropping them measured slower: without the feeding rows HiGHS needed > 20 s
instead of 3 s on a 100-job instance, and without the two McCormick rows its presolve took > 60 s instead of
15 s on a 1,000-job one (2 loaded cores).

``stall=True`` states the stall-allowed relaxation P2s: the utility Σ U_o s_o with a fed fraction s_o ≤ y_o, and
the demand r_o s_o with the cache-served part z_o ≤ s_o in w's columns (proofs/welfare_milp_forms.md, Theorem F3
for what it bounds and when it is exact).

The GPU row Σ_o g_o y_o ≤ G is always stated (free when G is unlimited): the slices n = Σ_o g_o y_o of Theorem
F4 set its bounds on the compiled model (:func:`with_slice`), without a rebuild.

Scaled (what HiGHS solves, docs/model.md §8): the objective is divided by a power of two 16 times
below the largest utility of an option that runs alone (:func:`objective_scale`; models/certify.py,
objective_unit), each b_j is measured in a power of two near its job's largest rate, and the rows of C, B and the
budget are divided by their limit.  Powers of two
are undone exactly (``Arrays.objective``), so utilities of 1e-8 meet the same tolerances as utilities of 1.

Only continuous caching without bandwidth tiers is modelled: P2 in docs/model.md §5 is stated for continuous c
and b, and every P2 method in cbalab feeds through the continuous P1 closed form.  Other variants are rejected
with an InstanceError rather than solved under a model nobody else checks.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from cbalab.models.alone import share_fits, standalone_fits
from cbalab.models.certify import objective_unit
from cbalab.models.evaluate import tolerated
from cbalab.models.instance import Instance
from cbalab.models.kernels import power_of_two
from cbalab.models.milp.statement import Arrays, Rows, Statement, group, limit_row, no_rows, stack

#: Rows of docs/model.md §5's form that :func:`welfare_statement` keeps by default (all of them).
DEFAULT_ROWS = frozenset({"feeding", "w_below_h", "w_above"})

_INF = math.inf


def _stall_fits(inst: Instance, slack: float = 1e-9) -> np.ndarray:
    """Per option, when stalls are allowed: its GPUs alone fit G and the budget (it may run fed at rate 0)."""
    g = inst.option_gpus.astype(float)
    ok = share_fits(inst)
    if math.isfinite(inst.budget_per_hour):
        ok &= inst.price_gpu * g <= tolerated(inst.budget_per_hour) + slack * max(1.0, abs(inst.budget_per_hour))
    return ok


#: HiGHS's objective is the welfare divided by a power of two this many times below the unit: HiGHS prunes a node
#: whose bound is within its ``mip_feasibility_tolerance`` (1e-6, absolute in its objective) of the incumbent, so
#: a slice's proven optimum may miss 1e-6 of the scale, which models/solve.py adds to the slice's bound; at 1/16
#: of the unit that is below 1.25e-7 of the optimum (the unit is at most the optimum, Lemma F2 (ii)), well
#: inside the tolerance (8.2).
SCALE_BELOW_UNIT = 16.0


def objective_scale(inst: Instance) -> float:
    """The power of two the welfare is divided by for HiGHS (docs/model.md §8): the unit's, over
    :data:`SCALE_BELOW_UNIT`."""
    return power_of_two(objective_unit(inst, "welfare")) / SCALE_BELOW_UNIT


def welfare_statement(
    inst: Instance,
    *,
    stall: bool = False,
    relax: bool = False,
    shares: bool = False,
    rows_kept: frozenset[str] = DEFAULT_ROWS,
) -> Statement:
    """P2 of docs/model.md §5 (or its stall relaxation) for ``inst`` (every job needs options); module docstring.

    ``shares`` (with ``relax``) is the LP of shares: y_o fixed only where :func:`share_fits` fails, the bound of
    every scored answer, time-shared and stalled ones too (proofs/welfare_milp_forms.md, Lemma F2)."""
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    n_o, n_k, n_j = int(inst.option_ptr[-1]), inst.n_datasets, inst.n_jobs
    o_job = inst.option_job()
    top_rate = np.zeros(n_j)
    np.maximum.at(top_rate, o_job, inst.option_io_gbps.astype(float))
    s = Statement("cbalab-P2s" if stall else "cbalab-P2", "max", objective_scale(inst))
    if shares and (stall or not relax):
        raise ValueError("shares is a form of the LP relaxation of P2: relax=True, stall=False")
    fits = share_fits(inst) if shares else _stall_fits(inst) if stall else standalone_fits(inst)
    earns = np.where(fits, inst.option_utility, 0.0)  # a column fixed at 0 earns nothing: no huge dead costs
    utility = 0.0 if stall else earns
    y = s.columns(
        "y",
        "O",
        n_o,
        upper=np.where(fits, 1.0, 0.0),
        cost=utility,
        integer=not relax,
        doc="y_o, 1 if job j(o) runs at option o (§5)",
    )
    w = s.columns("w", "O", n_o, upper=1.0, doc="z_o, the cache-served part of s_o" if stall else "w_o = y_o h_k(j(o))")
    h = s.columns("h", "K", n_k, upper=1.0, doc="h_k, the share of dataset k served from the cache")
    fed = s.columns("s", "O", n_o, upper=1.0, cost=earns, doc="s_o, the fed fraction") if stall else y
    s.add(one_option(inst, y))
    s.add(w_below_y(w, fed))
    if stall:
        s.add(fed_below_y(fed, y))
    s.add(w_per_job(inst, w, h))
    if "w_below_h" in rows_kept:
        s.add(w_below_h(inst, w, h))
    if "w_above" in rows_kept:
        s.add(w_above(inst, y, w, h))
    s.add(gpu_capacity(inst, y))
    s.add(cache_capacity(inst, h))
    r = inst.option_io_gbps.astype(float)
    demand = (np.r_[fed, w], np.r_[r, -r])  # Σ_o r_o (s_o − w_o), s = y without stalls
    if "feeding" in rows_kept:
        b_unit = np.array([power_of_two(float(x)) for x in top_rate])
        b = s.columns("bw", "J", n_j, unit=b_unit, doc="b_j, job j's remote bandwidth (GB/s)")
        s.add(feed(inst, fed, w, b, b_unit))
        demand = (b, np.ones(n_j))
    s.add(bandwidth_capacity(inst, *demand))
    s.add(budget(inst, y, h, *demand))
    return s


def build_welfare_model(inst: Instance, *, relax: bool = False, scaled: bool = False) -> pyo.ConcreteModel:
    """P2 as a Pyomo model, emitted from :func:`welfare_statement` (``scaled``: the units HiGHS solves)."""
    return welfare_statement(inst, relax=relax).pyomo(scaled=scaled)


def build_welfare_arrays(
    inst: Instance,
    *,
    stall: bool = False,
    relax: bool = False,
    shares: bool = False,
    rows_kept: frozenset[str] = DEFAULT_ROWS,
) -> Arrays:
    """P2 (or P2s, or the LP of shares) compiled, scaled, for highspy: what the registered welfare methods solve
    (Theorem F1; :func:`welfare_statement`)."""
    return welfare_statement(inst, stall=stall, relax=relax, shares=shares, rows_kept=rows_kept).compile(scaled=True)


def _per_job(inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """(job of every option row, dataset of every option row)."""
    o_job = inst.option_job()
    return o_job, inst.job_dataset[o_job]


def _below(lower: np.ndarray, upper: np.ndarray) -> Rows:
    """Rows lower_i − upper_i ≤ 0, one per pair of columns: the three "x ≤ y" groups of P2 and P2s."""
    i = np.arange(lower.size)
    row, col, coef = stack((lower, 1.0, i), (upper, -1.0, i))
    return Rows(row, col, coef, np.full(lower.size, -_INF), np.zeros(lower.size))


@group
def one_option(inst: Instance, y: np.ndarray) -> Rows:
    """One option per job or none: Σ_{o ∈ O_j} y_o ≤ 1 (§5)."""
    row, col, coef = stack((y, 1.0, inst.option_job()))
    return Rows(row, col, coef, np.full(inst.n_jobs, -_INF), np.ones(inst.n_jobs))


@group
def w_below_y(w: np.ndarray, fed: np.ndarray) -> Rows:
    """McCormick w_o ≤ y_o (§5, proofs/mccormick_exact.md); with stalls z_o ≤ s_o (Theorem F3)."""
    return _below(w, fed)


@group
def fed_below_y(fed: np.ndarray, y: np.ndarray) -> Rows:
    """A job is fed only at the option it runs: s_o ≤ y_o (P2s, proofs/welfare_milp_forms.md, Theorem F3)."""
    return _below(fed, y)


@group
def w_per_job(inst: Instance, w: np.ndarray, h: np.ndarray) -> Rows:
    """The valid cut Σ_{o ∈ O_j} w_o ≤ h_k(j) (proofs/mccormick_exact.md, Remarks).

    It holds at every integer point (the sum is h Σ_o y_o ≤ h), changes no integer solution and tightens the
    LP relaxation, which roughly halves HiGHS's time on tight budgets.
    """
    o_job, _ = _per_job(inst)
    jobs = np.arange(inst.n_jobs)
    row, col, coef = stack((w, 1.0, o_job), (h[inst.job_dataset], -1.0, jobs))
    return Rows(row, col, coef, np.full(inst.n_jobs, -_INF), np.zeros(inst.n_jobs))


@group
def w_below_h(inst: Instance, w: np.ndarray, h: np.ndarray) -> Rows:
    """McCormick w_o ≤ h_k(j(o)) (§5, proofs/mccormick_exact.md)."""
    return _below(w, h[_per_job(inst)[1]])


@group
def w_above(inst: Instance, y: np.ndarray, w: np.ndarray, h: np.ndarray) -> Rows:
    """McCormick w_o ≥ h_k(j(o)) + y_o − 1, as h + y − w ≤ 1 (§5, proofs/mccormick_exact.md)."""
    _, o_k = _per_job(inst)
    i = np.arange(w.size)
    row, col, coef = stack((h[o_k], 1.0, i), (y, 1.0, i), (w, -1.0, i))
    return Rows(row, col, coef, np.full(w.size, -_INF), np.ones(w.size))


@group
def feed(inst: Instance, fed: np.ndarray, w: np.ndarray, b: np.ndarray, b_unit: np.ndarray) -> Rows:
    """No stalls: Σ_{o ∈ O_j} r_o (y_o − w_o) − b_j ≤ 0, i.e. b_j ≥ r_j(g_j)(1 − h_k(j)) (§3, §5); scaled, divided
    by b_j's unit."""
    o_job, _ = _per_job(inst)
    r = inst.option_io_gbps.astype(float)
    row, col, coef = stack((fed, r, o_job), (w, -r, o_job), (b, -1.0, np.arange(inst.n_jobs)))
    return Rows(row, col, coef, np.full(inst.n_jobs, -_INF), np.zeros(inst.n_jobs), b_unit)


@group
def gpu_capacity(inst: Instance, y: np.ndarray) -> Rows:
    """Σ_o g_o y_o ≤ G (§5), free when G is unlimited; the slices of Theorem F4 set its bounds."""
    row, col, coef = stack((y, inst.option_gpus.astype(float), np.zeros(y.size)))
    return Rows(row, col, coef, np.full(1, -_INF), np.full(1, _INF if inst.gpus is None else float(inst.gpus)))


@group
def cache_capacity(inst: Instance, h: np.ndarray) -> Rows:
    """Σ_k d_k h_k ≤ tolerated(C) (§5, (8.1)); scaled, divided by C."""
    d = inst.dataset_size_gb.astype(float)
    return limit_row(h, d, tolerated(inst.cache_gb), inst.cache_gb, float(d.max(initial=0.0)))


@group
def bandwidth_capacity(inst: Instance, cols: np.ndarray, coef: np.ndarray) -> Rows:
    """Σ_j b_j ≤ tolerated(B) (§5, (8.1)), or Σ_o r_o (y_o − w_o) ≤ B without b; none when B is unlimited."""
    keep = coef != 0
    if not (math.isfinite(inst.bandwidth_gbps) and keep.any()):
        return no_rows()
    limit = tolerated(inst.bandwidth_gbps)
    return limit_row(cols[keep], coef[keep], limit, inst.bandwidth_gbps, float(np.abs(coef[keep]).max()))


@group
def budget(inst: Instance, y: np.ndarray, h: np.ndarray, cols: np.ndarray, coef: np.ndarray) -> Rows:
    """p_g Σ_o g_o y_o + p_c Σ_k d_k h_k + p_b Σ_j b_j ≤ tolerated(Budget) (§5, (8.1)); none when unlimited.

    Without b the demand Σ_o r_o (y_o − w_o) stands for Σ_j b_j, and y's two coefficients are added.
    """
    if not math.isfinite(inst.budget_per_hour):
        return no_rows()
    terms = np.r_[y, h, cols]
    values = np.r_[
        inst.price_gpu * inst.option_gpus, inst.price_cache * inst.dataset_size_gb, inst.price_bandwidth * coef
    ]
    col, where = np.unique(terms, return_inverse=True)
    val = np.bincount(where, weights=values, minlength=col.size)
    nz = val != 0
    limit = tolerated(inst.budget_per_hour)
    return limit_row(col[nz], val[nz], limit, inst.budget_per_hour, float(np.abs(val[nz]).max(initial=0.0)))


def start_point(inst: Instance, arrays: Arrays, gpus: np.ndarray, cache_gb: np.ndarray) -> np.ndarray:
    """A solution vector of ``arrays`` for an allocation (options by GPUs, h = min(c, d)/d, w = y h, s = y).

    The warm start handed to HiGHS; it counts as an incumbent only if it meets the rows
    (:meth:`Arrays.fits`), and HiGHS checks it too.  Its b_j is the least feeding, in the scaled units.
    """
    x = np.zeros(arrays.n_cols)
    o_job, o_k = _per_job(inst)
    chosen = ((inst.option_gpus == gpus[o_job]) & (gpus[o_job] > 0)).astype(float)
    hit = np.clip(np.minimum(cache_gb, inst.dataset_size_gb) / inst.dataset_size_gb, 0.0, 1.0)
    x[arrays.blocks["y"]] = chosen
    x[arrays.blocks["w"]] = chosen * hit[o_k]
    x[arrays.blocks["h"]] = hit
    if "s" in arrays.blocks:
        x[arrays.blocks["s"]] = chosen
    if "bw" in arrays.blocks:  # b_j = the least feeding of the chosen option
        remote = chosen * inst.option_io_gbps * (1 - hit[o_k])
        x[arrays.blocks["bw"]] = (
            np.bincount(o_job, weights=remote, minlength=inst.n_jobs) / arrays.unit[arrays.blocks["bw"]]
        )
    return x


def with_slice(arrays: Arrays, lo: float, hi: float, *, relax: bool = False) -> Arrays:
    """The slice lo ≤ n ≤ hi, n = Σ_o g_o y_o, of an unsliced compiled P2: the bounds of its GPU row, within G
    (proofs/welfare_milp_forms.md, Theorem F4); ``relax`` drops integrality (the slice's LP relaxation, whose
    optimum L(n) bounds the slice)."""
    top = float(arrays.row_hi[arrays.rows["gpu_capacity"]][0])
    sliced = arrays.with_rows("gpu_capacity", lo, min(hi, top))
    return sliced.relaxed() if relax else sliced
