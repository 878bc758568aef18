"""HiGHS through Pyomo: exact solves with honest statuses and bounds.

* The MIP gap is 0 (relative and absolute) unless the caller asks otherwise,
  so ``optimal`` means proven optimal, not "within 0.01%".
* A run that stops on its time limit is ``time_limit`` with its incumbent (if
  any) and HiGHS's dual bound; it is never reported as ``optimal``.
* Proven infeasibility is an answer (``infeasible`` with a reason), not a crash.

The registered methods ``lp`` and ``milp`` of the cost and welfare problems live here, since
only models/milp and this module may import Pyomo (spec/DESIGN.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import highspy
import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from cbalab.models.evaluate import Allocation, least_feeding
from cbalab.models.instance import Instance
from cbalab.models.kernels import bandwidth_factor
from cbalab.models.milp.cost import build_cost_model
from cbalab.models.milp.welfare import WelfareArrays, build_welfare_arrays, build_welfare_model, start_point
from cbalab.models.types import SolveOptions


@dataclass
class Outcome:
    """What HiGHS said: status (optimal/feasible/time_limit/infeasible/error), incumbent, bound, message."""

    status: str
    objective: float | None
    bound: float | None
    message: str
    has_solution: bool


def solve_model(model: pyo.ConcreteModel, options: SolveOptions = SolveOptions()) -> Outcome:
    """Solve ``model`` with HiGHS and map its termination to a cbalab status; loads the solution if any."""
    solver_options = {"mip_rel_gap": options.mip_gap, "threads": options.threads}
    if options.mip_gap == 0.0:
        solver_options["mip_abs_gap"] = 0.0
    res = Highs().solve(
        model,
        tee=False,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
        time_limit=options.time_limit,
        solver_options=solver_options,
    )
    tc = res.termination_condition
    objective = res.incumbent_objective
    has_solution = objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    bound = res.objective_bound
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        return Outcome("optimal", objective, bound if bound is not None else objective, "HiGHS: optimal", has_solution)
    if tc in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        return Outcome("infeasible", None, None, f"HiGHS proved the model infeasible ({tc.name})", False)
    if tc == TerminationCondition.maxTimeLimit:
        return Outcome(
            "time_limit", objective, bound, f"HiGHS stopped at the time limit of {options.time_limit} s", has_solution
        )
    status = "feasible" if has_solution else "error"
    return Outcome(status, objective, bound, f"HiGHS stopped: {tc.name}", has_solution)


def solve_cost(inst: Instance, *, relax: bool, options: SolveOptions = SolveOptions()) -> Allocation:
    """Solve P1 (MODEL.md §4) exactly (``relax=False``) or its LP relaxation, as an Allocation.

    The returned ``bound`` is HiGHS's proven lower bound on the model it
    solved; the LP relaxation's bound is also a lower bound on the integer
    optimum.  Integer variables are rounded to their nearest whole value
    (HiGHS's integrality tolerance leaves them within 1e-6) and the bandwidth
    is then set to the least feeding b_j = r_j (1 - h_k(j)) of that cache,
    which never costs more and keeps every constraint.
    """
    model = build_cost_model(inst, relax=relax)
    out = solve_model(model, options)
    if not out.has_solution:
        return Allocation.none(out.status, out.message, bound=out.bound)
    cache = np.fromiter((pyo.value(model.cache[k]) for k in range(inst.n_datasets)), dtype=float, count=inst.n_datasets)
    cache = np.maximum(cache, 0.0)
    if inst.cache_granularity == "block":
        cache = inst.block_gb * np.rint(cache / inst.block_gb) if not relax else cache
    elif inst.cache_granularity == "dataset" and not relax:
        cache = np.where(cache > inst.dataset_size_gb / 2, inst.dataset_size_gb, 0.0)
    provisioned = None
    if inst.bandwidth_step_gbps is not None:
        tiers = float(pyo.value(model.tiers))
        provisioned = inst.bandwidth_step_gbps * (tiers if relax else round(tiers))
    bound = out.bound if out.bound is not None and math.isfinite(out.bound) else None
    return Allocation(
        gpus=inst.job_gpus.copy(),
        cache_gb=cache,
        bandwidth_gbps=least_feeding(inst, inst.job_io_gbps, cache),
        provisioned_gbps=provisioned,
        status=out.status,
        bound=bound,
        reason=None if out.status == "optimal" else out.message,
    )


def cost_lp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``lp`` for the cost problem: the continuous relaxation of P1, solved by HiGHS."""
    return solve_cost(inst, relax=True, options=options)


def cost_milp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp`` for the cost problem: P1 exactly as written (integer variants included)."""
    return solve_cost(inst, relax=False, options=options)


def solve_arrays(
    arrays: WelfareArrays,
    options: SolveOptions = SolveOptions(),
    *,
    start: np.ndarray | None = None,
    cutoff: float | None = None,
) -> tuple[Outcome, np.ndarray | None, dict]:
    """Maximise an array-form P2 (models/milp/welfare.py) with highspy; same statuses as :func:`solve_model`.

    ``start`` is handed to HiGHS as an incumbent (setSolution; HiGHS checks it and drops it if infeasible).
    ``cutoff`` is a welfare every optimum reaches (that of a known feasible allocation, minus a tolerance),
    passed as HiGHS's ``objective_bound`` so that nodes whose bound is below it are pruned.  Returns the
    outcome, the solution vector (None without one) and run facts (build/solve seconds, nodes, whether
    HiGHS kept the start).
    """
    t0 = time.perf_counter()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", options.mip_gap)
    if options.mip_gap == 0.0:
        h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("threads", options.threads)
    if options.time_limit is not None:
        h.setOptionValue("time_limit", float(options.time_limit))
    if cutoff is not None:
        h.setOptionValue("objective_bound", float(cutoff))
    integrality = arrays.integral.astype(np.int32)  # HighsVarType: 0 continuous, 1 integer
    h.passModel(
        arrays.n_cols,
        int(arrays.row_hi.size),
        int(arrays.value.size),
        int(highspy.MatrixFormat.kRowwise),
        int(highspy.ObjSense.kMaximize),
        0.0,
        arrays.cost,
        arrays.col_lo,
        arrays.col_hi,
        arrays.row_lo,
        arrays.row_hi,
        arrays.start,
        arrays.index,
        arrays.value,
        integrality,
    )
    facts: dict = {"start_given": start is not None, "cutoff": cutoff}
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(start)
        sol.value_valid = True
        h.setSolution(sol)
    t1 = time.perf_counter()
    h.run()
    t2 = time.perf_counter()
    info = h.getInfo()
    status = h.getModelStatus()
    facts.update(pass_seconds=t1 - t0, solve_seconds=t2 - t1, nodes=int(info.mip_node_count))
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_solution else None
    objective = float(info.objective_function_value) if has_solution else None
    bound = float(info.mip_dual_bound) if arrays.integral.any() else objective
    ms = highspy.HighsModelStatus
    if status == ms.kOptimal:
        return (
            Outcome(
                "optimal",
                objective,
                bound if bound is not None and math.isfinite(bound) else objective,
                "HiGHS: optimal",
                has_solution,
            ),
            x,
            facts,
        )
    if status in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
        if cutoff is not None:
            return Outcome("error", None, None, f"HiGHS found nothing above the cutoff {cutoff}", False), None, facts
        return (
            Outcome("infeasible", None, None, f"HiGHS proved the model infeasible ({status.name})", False),
            None,
            facts,
        )
    if status == ms.kTimeLimit:
        message = f"HiGHS stopped at the time limit of {options.time_limit} s"
        return Outcome("time_limit", objective, bound, message, has_solution), x, facts
    return (
        Outcome(
            "feasible" if has_solution else "error", objective, bound, f"HiGHS stopped: {status.name}", has_solution
        ),
        x,
        facts,
    )


def solve_welfare(
    inst: Instance,
    *,
    relax: bool,
    options: SolveOptions = SolveOptions(),
    form: str = "arrays",
    warm: Allocation | None = None,
    cutoff: bool = False,
) -> Allocation:
    """Solve P2 (docs/model.md §5) exactly (``relax=False``) or its LP relaxation, as an Allocation.

    ``form="arrays"`` (the default) builds the array form of models/milp/welfare.py and solves it with
    highspy; ``form="pyomo"`` builds P2 as docs/model.md §5 writes it through Pyomo (the reference the array
    form is checked against, proofs/welfare_milp_forms.md Theorem F1).  ``warm`` (arrays only) is a
    feasible allocation handed to HiGHS as its first incumbent; with ``cutoff`` its welfare (less a
    relative 1e-9) also becomes HiGHS's objective bound.  The run facts go to ``extra["milp"]``.

    MILP: the chosen option of each job is the row with y_o = 1 (HiGHS leaves
    binaries within 1e-6 of whole), the cache is c_k = d_k h_k and the
    bandwidth the least feeding b_j = r_j(g_j)(1 − h_k(j)), which never costs
    more than the model's b.  ``bound`` is HiGHS's proven upper bound.

    LP relaxation: a fractional y is no allocation, so the method reports the
    relaxation's optimum as ``bound`` (an upper bound on the welfare optimum)
    and, as its allocation, rounds down: it keeps only the jobs whose LP
    choice is already whole (y_o = 1), fed from the LP's cache.  Rounding
    down only removes GPUs and demand, so the allocation is feasible; its
    status is ``feasible``, never ``optimal``.

    Either way :func:`_fed_within_limits` then repairs floating-point excess
    (HiGHS's 1e-7 feasibility tolerance) so that the referee, which checks to
    1e-9, sees the capacities and the budget met; the repair factor is kept
    in ``extra["bandwidth_repair"]``.  Non-continuous instances raise
    InstanceError (models/milp/welfare.py).
    """
    t0 = time.perf_counter()
    facts: dict = {"form": form}
    if form == "pyomo":
        model = build_welfare_model(inst, relax=relax)
        t1 = time.perf_counter()
        out = solve_model(model, options)
        if out.has_solution:
            n_rows = int(inst.option_ptr[-1])
            y = np.fromiter((pyo.value(model.y[o]) for o in range(n_rows)), dtype=float, count=n_rows)
            h = np.fromiter((pyo.value(model.h[k]) for k in range(inst.n_datasets)), dtype=float, count=inst.n_datasets)
        facts.update(build_seconds=t1 - t0, solve_seconds=time.perf_counter() - t1)
    elif form == "arrays":
        arrays = build_welfare_arrays(inst, relax=relax)
        t1 = time.perf_counter()
        start = None
        level = None
        if warm is not None and warm.has_allocation:
            start = start_point(inst, arrays, warm.gpus, warm.cache_gb)
            if cutoff:
                value = float(arrays.cost @ start)
                level = value - 1e-9 * max(1.0, abs(value))
        out, x, run_facts = solve_arrays(arrays, options, start=start, cutoff=level)
        facts.update(run_facts, build_seconds=t1 - t0)
        if out.status == "error" and level is not None and x is None:
            # Nothing strictly above the warm start's welfare less 1e-9: the warm start is optimal to that
            # tolerance, which is not a proof at gap 0; solve again without the cutoff.
            out, x, run_facts = solve_arrays(arrays, options, start=start)
            facts.update(run_facts, resolved_without_cutoff=True)
        if x is not None:
            y, h = arrays.y(x), arrays.h(x)
    else:
        raise ValueError(f"form must be 'arrays' or 'pyomo', got {form!r}")
    if not out.has_solution:
        alloc = Allocation.none(out.status, out.message, bound=out.bound)
        alloc.extra = {"milp": facts}
        return alloc
    chosen = np.flatnonzero(y >= (1.0 - 1e-6 if relax else 0.5))
    jobs = inst.option_job()[chosen]
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    rates = np.zeros(inst.n_jobs)
    gpus[jobs] = inst.option_gpus[chosen]
    rates[jobs] = inst.option_io_gbps[chosen]
    alloc = _fed_within_limits(inst, gpus, rates, np.clip(h, 0.0, 1.0))
    alloc.extra["milp"] = facts
    if relax:
        alloc.status = "feasible" if out.status == "optimal" else out.status
        alloc.bound = out.objective if out.status == "optimal" else None
        alloc.reason = (
            "LP relaxation: bound is the relaxation optimum; the allocation keeps only the jobs whose LP choice is "
            f"whole ({jobs.size} of {inst.n_jobs})"
        )
    else:
        alloc.status = out.status
        alloc.bound = out.bound if out.bound is not None and math.isfinite(out.bound) else None
        alloc.reason = None if out.status == "optimal" else out.message
    return alloc


def _fed_within_limits(inst: Instance, gpus: np.ndarray, rates: np.ndarray, hit: np.ndarray) -> Allocation:
    """Cache c = d h and least feeding b_j = r_j (1 − h_k(j)), scaled into C, B and the budget if rounding broke them.

    Scaling the cache down or the bandwidth down by a factor 1 − ε stalls jobs
    by at most ε (docs/model.md §5 scoring); ε is the solver's feasibility slack.
    """
    d = inst.dataset_size_gb
    cache = d * hit
    if cache.sum() > inst.cache_gb:
        cache *= inst.cache_gb / cache.sum()
    bw = least_feeding(inst, rates, cache)
    money = inst.budget_per_hour - inst.price_gpu * float(gpus.sum()) - inst.price_cache * float(cache.sum())
    factor = bandwidth_factor(inst, float(bw.sum()), money)
    return Allocation(gpus=gpus, cache_gb=cache, bandwidth_gbps=bw * factor, extra={"bandwidth_repair": factor})


def welfare_lp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``lp`` for the welfare problem: the LP relaxation's optimum as ``bound``, rounded down."""
    return solve_welfare(inst, relax=True, options=options)


def welfare_milp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp`` for the welfare problem: the proven optimum of P2 (docs/model.md §5)."""
    return solve_welfare(inst, relax=False, options=options)


def solve_welfare_stall(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """The stall-allowed welfare problem P2s (docs/model.md §5) through its MILP relaxation, exact when it certifies.

    The array form with ``stall=True`` maximises Σ U_o s_o with fed fractions s_o ≤ y_o and remote demand
    r_o (s_o − z_o), z_o ≤ s_o, Σ_{o ∈ O_j} z_o ≤ h_k(j).  The referee's demand of a job fed at s is
    r s (1 − h) ≥ r (s − min(s, h)), so this MILP is a relaxation of P2s and its optimum bounds P2s from
    above (proofs/welfare_milp_forms.md, Theorem F3).  The allocation gives each chosen job the model's
    bandwidth b_j = r_o (s_o − z_o); where s_o or h_k(o) is whole, z_o = s_o h_k(o) and the referee feeds
    the job at exactly s_o.  The answer is ``optimal`` only when the welfare the referee will score
    (Σ U_o min(1, b_j / (r_o (1 − h)))) reaches the relaxation's proven optimum; else ``feasible`` with
    that optimum as ``bound``.
    """
    arrays = build_welfare_arrays(inst, stall=True)
    out, x, facts = solve_arrays(arrays, options)
    if x is None:
        alloc = Allocation.none(out.status, out.message, bound=out.bound)
        alloc.extra = {"milp": facts}
        return alloc
    y, z, h, s = arrays.y(x), arrays.w(x), np.clip(arrays.h(x), 0.0, 1.0), np.clip(arrays.fed(x), 0.0, 1.0)
    chosen = np.flatnonzero(y >= 0.5)
    o_job = inst.option_job()
    jobs = o_job[chosen]
    r = inst.option_io_gbps[chosen]
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    rates = np.zeros(inst.n_jobs)
    gpus[jobs] = inst.option_gpus[chosen]
    rates[jobs] = r
    cache = inst.dataset_size_gb * h
    if cache.sum() > inst.cache_gb:
        cache *= inst.cache_gb / cache.sum()
    hit = np.minimum(cache, inst.dataset_size_gb) / inst.dataset_size_gb
    bw = np.zeros(inst.n_jobs)
    bw[jobs] = np.maximum(r * (s[chosen] - np.minimum(z[chosen], s[chosen])), 0.0)
    need = float(bw.sum())
    factor = 1.0
    if need > 0:
        money = inst.budget_per_hour - inst.price_gpu * float(gpus.sum()) - inst.price_cache * float(cache.sum())
        factor = min(1.0, inst.bandwidth_gbps / need)
        if inst.price_bandwidth > 0 and math.isfinite(money):
            factor = min(factor, max(money, 0.0) / (inst.price_bandwidth * need))
    bw *= factor
    miss = 1.0 - hit[inst.job_dataset[jobs]]
    with np.errstate(divide="ignore", invalid="ignore"):
        fed = np.where(r * miss > 0, np.minimum(1.0, bw[jobs] / (r * miss)), 1.0)
    scored = float(inst.option_utility[chosen] @ fed)
    alloc = Allocation(gpus=gpus, cache_gb=cache, bandwidth_gbps=bw, extra={"bandwidth_repair": factor})
    alloc.extra.update(milp=facts, relaxation_objective=out.objective, scored_welfare=scored)
    alloc.bound = out.bound if out.bound is not None and math.isfinite(out.bound) else None
    exact = out.status == "optimal" and out.objective is not None
    exact = exact and scored >= out.objective - 1e-6 * max(1.0, abs(out.objective))
    alloc.status = "optimal" if exact else ("feasible" if out.status == "optimal" else out.status)
    alloc.reason = (
        None
        if exact
        else (
            out.message
            if out.status != "optimal"
            else "P2s relaxation optimum not realised: a stalled job reads a partly cached dataset (Theorem F3)"
        )
    )
    return alloc


def welfare_milp_stall(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp-stall``: the stall-allowed reference P2s (docs/model.md §5), certified when exact."""
    return solve_welfare_stall(inst, options)
