"""HiGHS through Pyomo: exact solves with honest statuses and bounds.

* The MIP gap is 0 (relative and absolute) unless the caller asks otherwise,
  so ``optimal`` means proven optimal, not "within 0.01%".
* A run that stops on its time limit is ``time_limit`` with its incumbent (if
  any) and HiGHS's dual bound; it is never reported as ``optimal``.
* Proven infeasibility is an answer (``infeasible`` with a reason), not a crash.
* HiGHS sees scaled models (docs/model.md §8): objective divided by the instance's
  objective unit, bandwidth columns by a reference rate, the rows of C, B and the
  budget by their limit, which stand in the rows as the referee accepts them
  (``tolerated``, docs/model.md (8.1)).  Objectives and bounds are unscaled before
  anything else sees them.
* ``optimal`` is claimed only when it is certified: every exact answer passes
  :func:`cbalab.models.certify.certify`, which re-scores it with the referee
  (models/evaluate.py) and requires HiGHS's bound to meet that score within the
  tolerance of docs/model.md (8.2), at MIP gap 0; otherwise it is ``feasible``
  with both numbers in its reason.  A refused ``optimal`` is solved once more
  without presolve (:func:`_exact`).
* Magnitudes that HiGHS cannot represent (a matrix entry of 1e15 or more, a
  cost of 1e20 or more, its ``large_matrix_value`` and ``infinite_cost``) are
  refused before solving, as ``error`` naming the field (:func:`beyond_highs`):
  HiGHS would otherwise solve another model and call it optimal.  A
  bandwidth price of 1e308 is such a case; CBA, which needs no solver, still
  answers it.
* ``time_limit`` bounds the whole call: the Pyomo build, the translation to
  HiGHS and the solve.  HiGHS gets only what is left (:func:`solve_model`),
  and a call that ran out is ``time_limit``.  The build, the translation and
  HiGHS's presolve cannot be cut short, so a call can overrun by one of them.
* HiGHS runs in a worker thread, so that Ctrl-C interrupts a solve at once.

The registered methods ``lp`` and ``milp`` of the cost and welfare problems live here, since
only models/milp and this module may import Pyomo (README.md (Layout)).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import Any, cast

import highspy
import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from cbalab.models.certify import accepted_limits, certify, instance_tolerance, widened_limits
from cbalab.models.evaluate import MODEL_SHARE, Allocation, evaluate, least_feeding, tolerated
from cbalab.models.exact_bounds import (
    DualValue,
    cost_lower_bound,
    lp_dual_value,
    p1_relaxation_bound,
    round_down,
    round_up,
    safe_float,
)
from cbalab.models.instance import Instance
from cbalab.models.milp.cost import cost_statement, tier_cover
from cbalab.models.milp.statement import Arrays, solution
from cbalab.models.milp.welfare import (
    build_welfare_arrays,
    build_welfare_model,
    share_fits,
    standalone_fits,
    start_point,
    welfare_statement,
    with_slice,
)
from cbalab.models.result import BandwidthRepair, MilpFacts
from cbalab.models.types import SolveOptions, Status

#: HiGHS's default ``large_matrix_value``: a matrix entry this large or larger makes HiGHS solve another model.
HIGHS_LARGE_MATRIX_VALUE = 1e15

#: HiGHS's default ``infinite_cost``: an objective coefficient this large or larger is taken as infinite.
HIGHS_INFINITE_COST = 1e20

#: Pyomo's change detection is not needed between set_instance and solve (nothing changes): turned off, so that the
#: solve does not walk the model again.
_NO_UPDATES = {
    "check_for_new_or_removed_constraints": False,
    "check_for_new_or_removed_vars": False,
    "check_for_new_or_removed_params": False,
    "check_for_new_objective": False,
    "update_constraints": False,
    "update_vars": False,
    "update_parameters": False,
    "update_named_expressions": False,
    "update_objective": False,
}


@dataclass
class Outcome:
    """What HiGHS said: status, incumbent, bound, message; the solver side's record, which :func:`answer` alone
    turns into the typed result (models/result.py)."""

    status: Status
    objective: float | None
    bound: float | None
    message: str
    has_solution: bool


def answer(
    out: Outcome, alloc: Allocation | None = None, *, scale: float = 1.0, milp: MilpFacts | None = None
) -> Allocation:
    """HiGHS's outcome as the typed result: ``alloc`` (None: no allocation) with the outcome's claims.

    Status, objective and bound are HiGHS's, the last two multiplied back by the model's ``scale``
    (docs/model.md §8; a bound that is not finite is none); the reason is HiGHS's message unless it proved
    optimality.  The claim is then for :func:`cbalab.models.certify.certify` to judge.
    """
    bound = out.bound * scale if out.bound is not None and math.isfinite(out.bound) else None
    if alloc is None:
        alloc = Allocation.none(out.status, out.message, bound=bound)
    else:
        alloc.status, alloc.bound = out.status, bound
        alloc.reason = None if out.status == Status.OPTIMAL else out.message
    alloc.objective = out.objective * scale if out.objective is not None else None
    alloc.milp = milp
    return alloc


@dataclass(frozen=True)
class Budget(SolveOptions):
    """SolveOptions plus the moment (``time.perf_counter()``) the call began, so the build counts against the limit.

    ``presolve`` False turns HiGHS's presolve off: the retry of :func:`_exact` when an answer fails certification.
    """

    started: float = 0.0
    presolve: bool = True


def budgeted(options: SolveOptions) -> Budget:
    """``options`` with the clock started now (kept if it already runs): the registered methods call this first."""
    if isinstance(options, Budget):
        return options
    return Budget(**{f.name: getattr(options, f.name) for f in fields(options)}, started=time.perf_counter())


def solve_model(model: pyo.ConcreteModel, options: SolveOptions = SolveOptions()) -> Outcome:
    """Solve ``model`` with HiGHS and map its termination to a cbalab status; loads the solution if any.

    ``options.time_limit`` is a budget for the whole call: with a :class:`Budget`
    the time since it started (the model build) counts, the clock is checked
    after the build and after the translation to HiGHS, and HiGHS is given only
    what is left.  When nothing is left HiGHS is not started and the answer is
    ``time_limit`` without incumbent; a call that ends past its limit without a
    proof of optimality is ``time_limit``.  Neither the translation nor HiGHS's
    presolve can be cut short, so a call can overrun by one of them.  HiGHS
    runs in a worker thread so that Ctrl-C reaches Python (:func:`_interruptible`).
    """
    started = options.started if isinstance(options, Budget) else time.perf_counter()
    limit = options.time_limit
    late = _ran_out(started, limit, "building the Pyomo model")
    if late is not None:
        return late
    solver = Highs()
    solver.set_instance(model)
    late = _ran_out(started, limit, "translating the model to HiGHS")
    if late is not None:
        return late
    built = time.perf_counter() - started
    res = _interruptible(
        solver,
        lambda: solver.solve(
            model,
            tee=False,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            time_limit=None if limit is None else limit - built,
            solver_options=_highs_options(options),
            auto_updates=_NO_UPDATES,
        ),
    )
    tc = res.termination_condition
    objective = res.incumbent_objective
    has_solution = objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    bound = res.objective_bound
    elapsed = time.perf_counter() - started
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        return Outcome(
            Status.OPTIMAL, objective, bound if bound is not None else objective, "HiGHS: optimal", has_solution
        )
    if tc in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        return Outcome(Status.INFEASIBLE, None, None, f"HiGHS proved the model infeasible ({tc.name})", False)
    if tc == TerminationCondition.maxTimeLimit or (limit is not None and elapsed >= limit):
        message = f"the time limit of {limit:g} s ran out (model build {built:.3g} s, whole call {elapsed:.3g} s)"
        return Outcome(Status.TIME_LIMIT, objective, bound, message, has_solution)
    status = Status.FEASIBLE if has_solution else Status.ERROR
    return Outcome(status, objective, bound, f"HiGHS stopped: {tc.name}", has_solution)


def _highs_options(options: SolveOptions) -> dict[str, float | str]:
    """HiGHS's options for ``options``, on both paths to HiGHS: MIP gap (the absolute one 0 too at gap 0, so that
    ``optimal`` is a proof), threads, presolve off on :func:`_exact`'s retry; the time limit is each caller's."""
    out: dict[str, float | str] = {"mip_rel_gap": options.mip_gap, "threads": options.threads}
    if options.mip_gap == 0.0:
        out["mip_abs_gap"] = 0.0
    if isinstance(options, Budget) and not options.presolve:
        out["presolve"] = "off"
    return out


def _ran_out(started: float, limit: float | None, step: str) -> Outcome | None:
    """A ``time_limit`` Outcome if the budget ``limit`` started at ``started`` is spent after ``step``, else None."""
    spent = time.perf_counter() - started
    if limit is None or spent < limit:
        return None
    message = f"the time limit of {limit:g} s ran out {step} ({spent:.3g} s), before HiGHS started"
    return Outcome(Status.TIME_LIMIT, None, None, message, False)


#: Seconds a cancelled HiGHS run is given to stop before the KeyboardInterrupt is raised anyway.
CANCEL_GRACE_S = 1.0

#: Set when Ctrl-C cancelled a HiGHS run: HiGHS's own worker threads may then still be joinable, and a normal
#: interpreter exit would abort in C++ ("terminate called without an active exception"), so the CLI ends the
#: process with os._exit instead (cbalab/cli.py, _interrupted).
highs_interrupted = False


def _interruptible(solver: Highs, solve: Callable[[], Any]) -> Any:
    """``solve()`` (a HiGHS run) in a worker thread, so that Ctrl-C reaches the main thread at once.

    HiGHS runs in C++ and never returns to Python's signal handling, so a
    Ctrl-C in the main thread would wait for the whole solve.  Here the main
    thread waits in short joins; on KeyboardInterrupt it asks HiGHS to stop
    (highspy's cancelSolve, reached through Pyomo's ``_solver_model``), gives
    it :data:`CANCEL_GRACE_S` seconds, and re-raises.  A thread HiGHS has not
    left yet is a daemon: it ends with the process (the CLI exits 130).
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = solve()
        except BaseException as e:  # handed to the caller's thread below
            box["error"] = e

    worker = threading.Thread(target=work, name="cbalab-highs", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        global highs_interrupted
        highs_interrupted = True
        cancel = getattr(getattr(solver, "_solver_model", None), "cancelSolve", None)
        if cancel is not None:
            cancel()
        worker.join(CANCEL_GRACE_S)
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def beyond_highs(inst: Instance, problem: str, relax: bool = True) -> str | None:
    """Why HiGHS cannot take ``inst`` as it is (naming the field and the value), or None when it can.

    The coefficients of the models/milp models come from the instance: P1
    (docs/model.md §4) has the rates r_j and the sizes d_k (and the block and
    tier sizes) in its matrix and p_c d_k, p_b (p_b β) in its objective — the tier size β in its LP relaxation
    (``relax``), min(β, Σ_j r_j) in the integer model's tier row (models/milp/cost.py, ``tier_cover``); P2
    (§5) has r_o, g_o, d_k and, in its budget row, p_g g_o, p_c d_k, p_b in
    its matrix and U_o in its objective.  A matrix entry of at least
    :data:`HIGHS_LARGE_MATRIX_VALUE` or a cost of at least
    :data:`HIGHS_INFINITE_COST` is not represented faithfully.
    """
    d = inst.dataset_size_gb
    matrix: list[tuple[str, np.ndarray, Callable[[int], str]]] = [
        ("size", d, lambda k: f"datasets[{k}].size_gb = {d[k]:.6g}")
    ]
    costs: list[tuple[str, np.ndarray, Callable[[int], str]]] = []
    if problem == "cost":
        r = np.where(inst.has_fixed, inst.job_io_gbps, 0.0)
        matrix.append(("rate", r, lambda j: f"jobs[{j}].io_gbps = {r[j]:.6g}"))
        if inst.block_gb is not None:
            block = inst.block_gb
            matrix.append(("size", np.array([block]), lambda _: f"cluster.cache_granularity.block_gb = {block:.6g}"))
        if inst.bandwidth_step_gbps is not None:
            beta = inst.bandwidth_step_gbps
            entry = beta if relax else tier_cover(inst, beta)
            matrix.append(("size", np.array([entry]), lambda _: f"cluster.bandwidth_step_gbps = {beta:.6g}"))
        p_c, p_b = inst.price_cache, inst.price_bandwidth
        costs.append(("cache cost", p_c * d, lambda k: f"prices.cache_gb_per_hour = {p_c:.6g} (× {d[k]:.6g} GB)"))
        costs.append(("bandwidth price", np.array([p_b]), lambda _: f"prices.bandwidth_gbps_per_hour = {p_b:.6g}"))
        if inst.bandwidth_step_gbps is not None:
            tier = f"cluster.bandwidth_step_gbps = {inst.bandwidth_step_gbps:.6g} (× p_b = {p_b:.6g})"
            costs.append(("tier price", np.array([p_b * inst.bandwidth_step_gbps]), lambda _: tier))
    else:
        ptr, job = inst.option_ptr, inst.option_job()

        def option(o: int, key: str, x: np.ndarray) -> str:
            return f"jobs[{job[o]}].options[{o - ptr[job[o]]}].{key} = {x[o]:.6g}"

        r, g, u = inst.option_io_gbps, inst.option_gpus.astype(float), inst.option_utility
        matrix.append(("rate", r, lambda o: option(o, "io_gbps", r)))
        matrix.append(("GPU count", g, lambda o: option(o, "gpus", g)))
        if math.isfinite(inst.budget_per_hour):
            p_g, p_c, p_b = inst.price_gpu, inst.price_cache, inst.price_bandwidth
            matrix.append(("GPU cost", p_g * g, lambda o: f"prices.gpu_per_hour = {p_g:.6g} (× {g[o]:.0f} GPUs)"))
            matrix.append(("cache cost", p_c * d, lambda k: f"prices.cache_gb_per_hour = {p_c:.6g} (× {d[k]:.6g} GB)"))
            matrix.append(("price", np.array([p_b]), lambda _: f"prices.bandwidth_gbps_per_hour = {p_b:.6g}"))
        costs.append(("utility", u, lambda o: option(o, "utility", u)))
    for groups, limit, where in (
        (matrix, HIGHS_LARGE_MATRIX_VALUE, "a matrix entry"),
        (costs, HIGHS_INFINITE_COST, "an objective coefficient"),
    ):
        for what, values, field_of in groups:
            if values.size and float(values.max()) >= limit:
                i = int(np.argmax(values))
                return (
                    f"{field_of(i)}: this {what} becomes {where} of at least {limit:g}, beyond what HiGHS represents "
                    f"faithfully; the exact methods refuse it (express the instance in other units)"
                )
    return None


def _exact(
    inst: Instance, problem: str, options: SolveOptions, solve: Callable[..., Allocation], relax: bool = False
) -> Allocation:
    """Run one exact method under this module's rules: clock started, magnitudes checked (``relax``: of the LP
    relaxation, :func:`beyond_highs`), answer certified.

    ``solve`` certifies its own answer (:func:`cbalab.models.certify.certify`).  A claim of ``optimal``
    that the certification refused is solved once more without HiGHS's presolve (on the same clock, at
    MIP gap 0 only); if that answer is certified, it is reported with the reason for the retry, otherwise
    the first one.
    """
    options = budgeted(options)
    refused = beyond_highs(inst, problem, relax)
    if refused is not None:
        return Allocation.none(Status.ERROR, refused)
    if inst.n_jobs == 0:
        return _no_jobs(inst, problem)
    alloc = solve(inst, options=options)
    claimed = alloc.certificate.claimed if alloc.certificate is not None else None
    refused_claim = claimed == Status.OPTIMAL and alloc.status != Status.OPTIMAL
    if refused_claim and options.presolve and options.mip_gap == 0.0:
        retry = solve(inst, options=replace(options, presolve=False))
        if retry.status == "optimal":
            retry.reason = f"solved again without HiGHS's presolve, because the first answer failed: {alloc.reason}"
            return retry
    return alloc


def _no_jobs(inst: Instance, problem: str) -> Allocation:
    """With no job the only allocation is the empty one (no cache, no bandwidth): optimal, its score its bound.

    The models need at least one job (an empty sum makes a capacity row a constant), and nothing is left to decide
    anyway.
    """
    alloc = Allocation(np.zeros(0, dtype=np.int64), np.zeros(inst.n_datasets), np.zeros(0), status=Status.OPTIMAL)
    ev = evaluate(inst, alloc, problem)
    alloc.bound = ev.cost_total if problem == "cost" else float(ev.welfare or 0.0)
    return alloc


def _shrink(total: float, top: float) -> float:
    """The factor ≤ 1 that brings ``total`` to at most ``top``, aiming a relative 1e-12 inside it.

    A repair of HiGHS's row tolerance (1e-7 of a scaled row, more than the referee's 1e-9): the margin keeps
    the referee's own sum, taken in another order, inside the limit too.
    """
    return 1.0 if total <= top else max(top, 0.0) / total * (1.0 - 1e-12)


def _shrink_into(total: float, limit: float) -> float:
    """:func:`_shrink` into ``tolerated(limit)``, the most the referee accepts under a limit (docs/model.md (8.1))."""
    return _shrink(total, tolerated(limit))


def _cover_cap(inst: Instance, cache: np.ndarray) -> np.ndarray:
    """``cache`` topped up until its least feeding fits the cap B (docs/model.md §4, the bandwidth row).

    HiGHS's row tolerance (1e-7 of a scaled row) can leave a dataset a relative 1e-7 short of whole where B binds;
    its jobs then need that much remote IO, which against B = 0 is more than the referee's 1e-9 slack (the
    optimality sweep's "just infeasible" caps).  Only then (the referee would refuse the answer) the partly
    cached datasets are filled, down to the model's own bandwidth row, the most IO per GB first
    (each GB of dataset k saves Σ_{j∈k} r_j / d_k GB/s), within the room C leaves; the cost this adds is of the
    order of the tolerance, and :func:`cbalab.models.certify.certify` still compares it with the LP's bound.
    """
    if not math.isfinite(inst.bandwidth_gbps):
        return cache
    total = float(least_feeding(inst, inst.job_io_gbps, cache).sum())
    room = tolerated(inst.cache_gb) - float(cache.sum())
    if total <= tolerated(inst.bandwidth_gbps) or room <= 0.0:
        return cache
    d = inst.dataset_size_gb
    rate = inst.dataset_demand(inst.job_io_gbps)
    excess = total - tolerated(inst.bandwidth_gbps, MODEL_SHARE)  # down to the model's own row (models/milp/cost.py)
    out = cache.copy()
    density = np.divide(rate, d, out=np.zeros_like(rate), where=d > 0)
    for k in np.argsort(-density, kind="stable"):
        if excess <= 0.0 or room <= 0.0 or density[k] <= 0.0:
            break
        add = min(d[k] - out[k], excess / density[k], room)
        if add > 0.0:
            out[k] += add
            excess -= add * density[k]
            room -= add
    return out


def solve_cost(
    inst: Instance, *, relax: bool, options: SolveOptions = SolveOptions(), limits: Instance | None = None
) -> Allocation:
    """Solve P1 (docs/model.md §4) exactly (``relax=False``) or its LP relaxation, as a certified Allocation.

    HiGHS solves the statement of models/milp/cost.py compiled and scaled (docs/model.md §8; the Pyomo model
    of ``cbalab.build_model`` is its other emission), through :func:`solve_arrays`, which multiplies the
    objective and bound back by the scale M.  The returned ``bound`` is HiGHS's proven lower bound on
    the model it solved; the LP relaxation's bound is also a lower bound on the integer optimum.  Integer
    variables are rounded to their nearest whole value (HiGHS's integrality tolerance leaves them within
    1e-6), a continuous cache that HiGHS's row tolerance left above C is scaled into it, and the bandwidth is
    then the least feeding b_j = r_j (1 - h_k(j)) of that cache, which never costs more and keeps every
    constraint.  The answer passes :func:`cbalab.models.certify.certify` (at MIP gap 0 for the LP).  On an
    integer variant the LP's allocation is certified only when the referee takes it as it is (the relaxation
    came out whole); otherwise the answer is its bound alone (:func:`_fractional`).  A MILP allocation of an
    integer variant that the referee rejects once rounded is ``error`` (:func:`_broken`), never ``infeasible``:
    only HiGHS's proof makes that claim.  ``limits``: the instance whose C and B the model states (by default
    ``inst``; :func:`cbalab.models.certify.widened_limits` for the second try of :func:`_cost_method`); the answer is
    scored and its bound taken on ``inst``.
    """
    model = inst if limits is None else limits
    arrays = cost_statement(model, relax=relax).compile(scaled=True)
    out, x, facts = solve_arrays(arrays, options)
    out.bound = _cost_bound(inst, model, arrays, out.bound, facts.get("solution"))
    if x is None:
        return answer(out)
    if inst.cache_granularity == "block":
        blocks = np.maximum(arrays.value_of("blocks", x), 0.0)
        cache = inst.block_gb * (blocks if relax else np.rint(blocks))
    elif inst.cache_granularity == "dataset" and not relax:
        cache = np.where(arrays.value_of("hit", x) > 0.5, inst.dataset_size_gb, 0.0)
    else:
        cache = np.maximum(inst.dataset_size_gb * arrays.value_of("hit", x), 0.0)
        # c_k = d_k h_k read back as c_k / d_k can fall an ulp short of a whole dataset, and times a rate of 1e7
        # GB/s that ulp is remote IO the referee sees (against 0 tiers it refused the answer): whole it is.
        d = inst.dataset_size_gb
        cache = np.where(cache >= d * (1.0 - 1e-12), np.maximum(cache, d), cache)
        cache *= _shrink_into(float(cache.sum()), inst.cache_gb)
        if inst.bandwidth_step_gbps is None:
            cache = _cover_cap(inst, cache)
    provisioned = None
    if inst.bandwidth_step_gbps is not None:
        tiers = float(arrays.value_of("tiers", x)[0])
        provisioned = inst.bandwidth_step_gbps * (tiers if relax else round(tiers))
    fed = Allocation(inst.job_gpus.copy(), cache, least_feeding(inst, inst.job_io_gbps, cache), provisioned)
    alloc = answer(out, fed)
    integer_variant = inst.cache_granularity != "continuous" or inst.bandwidth_step_gbps is not None
    integral = not relax and integer_variant
    violations = evaluate(inst, alloc, "cost").violations if integer_variant else []
    if violations:
        return _broken(violations) if integral else _fractional(alloc, violations)
    return certify(
        inst,
        "cost",
        alloc,
        mip_gap=options.mip_gap if integral else 0.0,
        source="HiGHS's dual bound" if integral else "the LP optimum",
        model_objective=alloc.objective,
    )


def _cost_bound(
    inst: Instance, model: Instance, arrays: Arrays, bound: float | None, sol: highspy.HighsSolution | None
) -> float | None:
    """P1's bound made safe for what the referee accepts (docs/model.md §8, (8.1)), or None.

    The model's cache row is C as written, and the referee accepts up to ``tolerated(C)``; below 1 GB the difference
    is more than rounding.  So an LP bound (``sol``: the LP's solution, with its row duals) is re-derived exactly,
    at the same duals, on the same model stated with C and B as the referee accepts them, and the lesser of the
    two is kept (any duals give a bound, Neumaier and Shcherbina).  The GPU bill is the model's objective offset, a
    rounded float: it is taken out exactly and the exact bill put in, and the sum rounded down
    (:func:`cbalab.models.exact_bounds.cost_lower_bound`).  HiGHS's branch-and-bound bound of an integer model is
    taken on trust (docs/model.md §8) and only gets the exact bill.  ``model`` is the instance the model states.
    """
    if bound is None or not math.isfinite(bound):
        return None
    if sol is not None:
        held, _ = _safe_lp_bound(_accepted_rows(inst, model, arrays), sol, bound)
        if held is None:
            return None
        bound = min(bound, held)
    io_part = Fraction(bound) - Fraction(arrays.offset * arrays.objective_scale)
    if sol is None and io_part > 0:
        # HiGHS's bound of an integer model, taken on trust, is a bound of the compiled model, whose coefficients
        # are the data's products rounded once: an allowance of (n + 4)·2^-52 of it, n the columns, covers them.
        io_part *= 1 - Fraction(arrays.n_cols + 4, 2**52)
    safe = cost_lower_bound(inst, io_part)
    if not math.isfinite(safe):
        return None
    if sol is not None:
        # The LP's duals are exact for the compiled model, whose coefficients are products of the data rounded
        # once (and rounded up, the duals' value can lie an ulp above the optimum); the relaxation's own weak dual,
        # on the data, at the accepted limits, is exact for the instance: it is the bound (docs/model.md §8).
        safe = round_down(p1_relaxation_bound(accepted_limits(inst)))
    return safe


def _accepted_rows(inst: Instance, model: Instance, arrays: Arrays) -> Arrays:
    """P1's compiled model of ``model`` with the rows of C and B at the limits the referee accepts on ``inst``,
    ``tolerated(·)`` (8.1).

    Each row keeps its divisor (models/milp/cost.py: the model's limit, or the largest dataset for C = 0, 1 for
    B = 0), so the same duals weigh it the same; its right-hand side is the accepted limit over that divisor,
    rounded up.
    """
    hi = arrays.row_hi.copy()
    d_max = float(inst.dataset_size_gb.max()) if inst.n_datasets else 1.0
    for name, limit, written, fallback in (
        ("cache_capacity", inst.cache_gb, model.cache_gb, d_max),
        ("bandwidth_capacity", inst.bandwidth_gbps, model.bandwidth_gbps, 1.0),
    ):
        rows = arrays.rows.get(name)
        if rows is None or not math.isfinite(limit) or hi[rows].size == 0:
            continue
        divisor = written if written > 0 else (fallback if fallback > 0 else 1.0)
        hi[rows] = np.maximum(hi[rows], round_up(Fraction(tolerated(limit)) / Fraction(divisor)))
    return replace(arrays, row_hi=hi)


def _broken(violations: list[str]) -> Allocation:
    """The answer of a P1 solve whose allocation, read back from HiGHS's solution, the referee rejects: ``error``.

    HiGHS accepts a point within its tolerances (an integer within 1e-6, a row within 1e-7 of a scaled row), and
    rounding that point to whole blocks or tiers can leave an allocation that is none of the instance.  That is a
    numerical failure of the method, not a proof that no allocation exists, so the answer is not ``infeasible``
    (which models/evaluate.py's ``score`` would report for a rejected allocation); HiGHS's bound, a bound of the
    model it solved within those tolerances, is not kept either.
    """
    reason = (
        "HiGHS's solution, rounded to an allocation, breaks the instance (" + "; ".join(violations) + "): a point "
        "within HiGHS's tolerances that is no allocation, not a proof of infeasibility"
    )
    return Allocation.none(Status.ERROR, reason)


def _fractional(relaxed: Allocation, violations: list[str]) -> Allocation:
    """The answer of P1's LP relaxation on an integer variant when its allocation is not whole (docs/model.md §4).

    A fraction of a block, of a whole dataset or of a tier is no allocation of the instance, and no verdict on
    it either (``milp`` may well solve it): the answer is ``error`` (``time_limit`` if the LP stopped there),
    without arrays, its reason saying what is fractional, and the relaxation's optimum is kept as ``bound``,
    a lower bound on the integer optimum, when the LP was solved to optimality.
    """
    proven = relaxed.status == Status.OPTIMAL
    reason = (
        "LP relaxation of an integer variant: its allocation is not whole (" + "; ".join(violations) + "), so it "
        "is a bound, not an allocation of the instance nor a verdict on it (milp solves the integer problem)"
    )
    status = Status.TIME_LIMIT if relaxed.status == Status.TIME_LIMIT else Status.ERROR
    return Allocation.none(status, reason, bound=relaxed.bound if proven else None)


def _cost_method(inst: Instance, relax: bool, options: SolveOptions) -> Allocation:
    """:func:`solve_cost` on ``inst``, and once more on its :func:`cbalab.models.certify.widened_limits` when that
    answer is not certified or says infeasible: the bound is for C and B as the referee accepts them, and below
    1 GB or 1 GB/s an allocation for the limits as written can be beaten by more than the tolerance (8.2).  The
    second answer is kept when it is certified ``optimal``, or when the first claimed infeasibility and the referee
    accepts the second (then no infeasibility is proven)."""
    first = solve_cost(inst, relax=relax, options=options)
    integral = not relax and (inst.cache_granularity != "continuous" or inst.bandwidth_step_gbps is not None)
    if integral and min(inst.cache_gb, inst.bandwidth_gbps) < 1.0:
        return _both_limits(inst, first, solve_cost(inst, relax=False, options=options, limits=widened_limits(inst)))
    refused = first.certificate is not None and first.certificate.claimed == Status.OPTIMAL
    if first.status == Status.OPTIMAL or not (refused or first.status == Status.INFEASIBLE):
        return first
    second = solve_cost(inst, relax=relax, options=options, limits=widened_limits(inst))
    if second.status == Status.OPTIMAL:
        return second
    if first.status == Status.INFEASIBLE and second.has_allocation and evaluate(inst, second, "cost").feasible:
        return second  # the referee's slack admits what the limits as written do not: no infeasibility is proven
    return first


def _both_limits(inst: Instance, first: Allocation, second: Allocation) -> Allocation:
    """P1's MILP answer on an integer variant with C or B below 1, from its solves for the limits as written
    (``first``) and as widened (``second``, :func:`cbalab.models.certify.widened_limits`).

    HiGHS's bound holds for the limits its model states, and below 1 the referee's slack (8.1) is more than
    rounding: one more block or tier can fit, and the bound for C as written lies above the optimum the referee
    accepts.  So the bound is the lesser of the two (None if either has none), and the answer the cheaper of the two
    the referee accepts (``first`` unless ``second`` is cheaper by more than the tolerance (8.2)), certified again.
    An ``infeasible`` stands only if both say it.
    """
    scored = []
    for alloc in (first, second):
        if alloc.has_allocation and evaluate(inst, alloc, "cost").feasible:
            scored.append((evaluate(inst, alloc, "cost").cost_total, alloc))
    if not scored:
        return first if first.status == Status.INFEASIBLE and second.status == Status.INFEASIBLE else second
    cost, best = scored[0]
    if len(scored) == 2 and scored[1][0] < cost - instance_tolerance(inst, "cost", cost):
        best = scored[1][1]
    bounds = [a.bound for a in (first, second) if a.status != Status.INFEASIBLE]
    claimed = best.certificate.claimed if best.certificate is not None else best.status
    best.status = Status(claimed)
    best.bound = None if any(b is None for b in bounds) else min(b for b in bounds if b is not None)
    best.certificate = None
    return certify(inst, "cost", best, source="HiGHS's dual bound")


def cost_lp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``lp`` for the cost problem: the continuous relaxation of P1, solved by HiGHS."""
    return _exact(inst, "cost", options, lambda i, options: _cost_method(i, True, options), relax=True)


def cost_milp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp`` for the cost problem: P1 exactly as written (integer variants included)."""
    return _exact(inst, "cost", options, lambda i, options: _cost_method(i, False, options))


@dataclass
class _Direct:
    """A highspy instance where :func:`_interruptible` looks for Pyomo's (``_solver_model``), to cancel it."""

    _solver_model: highspy.Highs


def solve_arrays(
    arrays: Arrays,
    options: SolveOptions = SolveOptions(),
    *,
    start: np.ndarray | None = None,
    basis: highspy.HighsBasis | None = None,
) -> tuple[Outcome, np.ndarray | None, dict]:
    """Solve a compiled statement (models/milp/statement.py) with highspy; same statuses as :func:`solve_model`.

    ``start`` is handed to HiGHS as an incumbent (setSolution; HiGHS checks it and drops it if infeasible).
    ``basis`` (LPs) is a simplex basis of a model with the same rows and columns, where HiGHS's dual simplex
    starts instead of from scratch; an LP solved to optimality leaves its own in the facts (``basis``).  Either
    way the answer is an optimum of the same LP and its bound is re-derived from its duals (:func:`_safe_lp_bound`).
    HiGHS sees the scaled form; the outcome's objective and bound are in the instance's units (multiplied
    back by ``arrays.objective_scale``).  Returns the outcome, the solution vector (None without one) and
    run facts (pass/solve seconds, nodes, whether a start was given, and ``model_status``, HiGHS's own status
    text, which experiments/runs/scaling.py records).
    """
    t0 = time.perf_counter()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    facts: dict = {"start_given": start is not None}
    limit = options.time_limit
    if isinstance(options, Budget):  # the clock of the whole call (build included) and the presolve retry
        late = _ran_out(options.started, limit, "building the array model")
        if late is not None:
            return late, None, facts
        limit = None if limit is None else limit - (t0 - options.started)
    for name, value in _highs_options(options).items():
        h.setOptionValue(name, value)
    if limit is not None:
        h.setOptionValue("time_limit", float(limit))
    arrays.pass_to(h)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(start)
        sol.value_valid = True
        h.setSolution(sol)
    if basis is not None:
        h.setBasis(basis)
    t1 = time.perf_counter()
    _interruptible(cast(Highs, _Direct(h)), h.run)  # a worker thread, so that Ctrl-C stops HiGHS at once
    t2 = time.perf_counter()
    info = h.getInfo()
    status = h.getModelStatus()
    facts.update(pass_seconds=t1 - t0, solve_seconds=t2 - t1, nodes=int(info.mip_node_count))
    facts["model_status"] = h.modelStatusToString(status)
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_solution else None
    scale = arrays.objective_scale
    objective = float(info.objective_function_value) * scale if has_solution else None
    bound = float(info.mip_dual_bound) * scale if arrays.integral.any() else objective
    ms = highspy.HighsModelStatus
    if status in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
        message = f"HiGHS proved the model infeasible ({status.name})"
        if not arrays.integral.any():  # the LP's Farkas ray, for a caller that checks the claim (_empty)
            _, has_ray, ray = h.getDualRay()  # type: ignore[attr-defined]  # highspy 1.15 has it, its stubs do not
            if has_ray:
                facts["dual_ray"] = np.asarray(ray, dtype=float)
        return Outcome(Status.INFEASIBLE, None, None, message, False), None, facts
    if status == ms.kOptimal and not has_solution:  # seen on P1 LPs with sizes and rates eight decades apart
        kind, message = Status.ERROR, "HiGHS reported optimal without a feasible solution: nothing is proven"
    elif status == ms.kOptimal:
        kind, message = Status.OPTIMAL, "HiGHS: optimal"
        bound = bound if bound is not None and math.isfinite(bound) else objective
        if not arrays.integral.any() and bound is not None:
            facts["solution"] = h.getSolution()
            bound, facts["dual_value"] = _safe_lp_bound(arrays, facts["solution"], bound)
            facts["safe_bound"] = bound
            facts["row_dual"] = np.asarray(facts["solution"].row_dual, dtype=float)
            facts["basis"] = h.getBasis()
    elif status == ms.kTimeLimit:
        kind, message = Status.TIME_LIMIT, f"HiGHS stopped at the time limit of {options.time_limit} s"
    else:
        kind, message = Status.FEASIBLE if has_solution else Status.ERROR, f"HiGHS stopped: {status.name}"
    return Outcome(kind, objective, bound, message, has_solution), x, facts


def _safe_lp_bound(arrays: Arrays, sol: highspy.HighsSolution, bound: float) -> tuple[float | None, DualValue | None]:
    """HiGHS's LP optimum as a bound that holds in floating point (docs/model.md §8), in the instance's units,
    with the exact value of the duals behind it (in the min form, unscaled: what reduced-cost fixing reads).

    HiGHS's optimum is the value of a point that meets the rows only to its tolerances, so it is no proof by
    itself.  Its row duals are: the weak-duality value of any duals is a bound (Neumaier and Shcherbina), and
    :func:`cbalab.models.exact_bounds.lp_dual_value` evaluates it exactly on the model HiGHS solved (objective
    scale a power of two, so multiplying back is exact).  HiGHS's number is kept, bit for bit, when it is on the
    safe side of that exact bound; otherwise the exact bound rounded to the safe side replaces it; without duals,
    or when they prove nothing (a reduced cost against an infinite column bound), there is no bound (None).
    """
    if not sol.dual_valid:
        return None, None
    flip = -1.0 if arrays.maximize else 1.0  # max cᵀx is −min(−c)ᵀx, with the duals negated too
    dual = lp_dual_value(
        flip * arrays.cost,
        arrays.start,
        arrays.index,
        arrays.value,
        arrays.row_lo,
        arrays.row_hi,
        arrays.col_lo,
        arrays.col_hi,
        flip * np.asarray(sol.row_dual, dtype=float),
    )
    if dual is None:
        return None, None
    value = -dual.bound if arrays.maximize else dual.bound  # a Fraction: float × Fraction would round it
    in_units = Fraction(arrays.objective_scale) * (value + Fraction(arrays.offset))
    return safe_float(bound, in_units, lower=not arrays.maximize), dual


#: Whole columns a slice's probe leaves free: those with the smallest reduced costs in the slice's LP, where
#: its optimum and the LP's point differ (Lemma F6); the rest are fixed at the LP's whole values.
NEIGHBOURHOOD = 4000

#: Slices solved one GPU count at a time on each side of the LP optimum before the rest of that side is solved as
#: one range (Theorem F4 holds for any partition; this only bounds the number of HiGHS calls).
SINGLE_SLICES = 6


#: HiGHS's default ``mip_feasibility_tolerance``: it prunes a node whose bound is within this (absolute, in its
#: objective) of the incumbent, so a slice it proves optimal may hold a point up to this much better, in the
#: scaled objective; the slice's bound is raised by it (proofs/welfare_milp_forms.md, Theorem F4 (v)).
HIGHS_PRUNING = 1e-6


def _dual_bound(arrays: Arrays, row_dual: np.ndarray, lo: float, hi: float) -> float | None:
    """An upper bound, in the instance's units and rounded up, on U·x over every x of the LP relaxation of
    ``arrays`` with lo ≤ n(x) ≤ hi, from the row duals of any LP with the same rows (Theorem F4 (iii)): their
    Neumaier–Shcherbina value on that range, exactly (docs/model.md §8).  None when it bounds nothing.

    Weak duality holds for every vector of multipliers, so the duals of the slice n = t bound the whole rest of a
    side of the scan when they say so: no claim about where the LP's maximum over n lies is needed."""
    ranged = with_slice(arrays, lo, hi, relax=True)
    flip = -1.0 if ranged.maximize else 1.0
    dual = lp_dual_value(
        flip * ranged.cost,
        ranged.start,
        ranged.index,
        ranged.value,
        ranged.row_lo,
        ranged.row_hi,
        ranged.col_lo,
        ranged.col_hi,
        flip * row_dual,
    )
    if dual is None:
        return None
    value = -dual.bound if ranged.maximize else dual.bound
    return round_up(Fraction(ranged.objective_scale) * (value + Fraction(ranged.offset)))


def _empty(arrays: Arrays, ray: np.ndarray | None, lo: float, hi: float) -> bool:
    """Whether the Farkas ray ``ray`` proves, exactly, that no x of the LP relaxation of ``arrays`` has
    lo ≤ n(x) ≤ hi: the Neumaier–Shcherbina value of ±ray for the objective 0 is above 0 (every point would have
    0 ≥ that value), Theorem F4 (iii).  False without a ray or when neither sign proves it."""
    if ray is None:
        return False
    ranged = with_slice(arrays, lo, hi, relax=True)
    zero = np.zeros(ranged.n_cols)
    for sign in (1.0, -1.0):
        dual = lp_dual_value(
            zero,
            ranged.start,
            ranged.index,
            ranged.value,
            ranged.row_lo,
            ranged.row_hi,
            ranged.col_lo,
            ranged.col_hi,
            sign * ray,
        )
        if dual is not None and dual.bound > 0:
            return True
    return False


def _slice_lp(
    arrays: Arrays, options: SolveOptions, basis: highspy.HighsBasis | None
) -> tuple[Outcome, np.ndarray | None, dict]:
    """A slice's LP relaxation from ``basis``, solved again from scratch when that run ends neither optimal nor
    infeasible (HiGHS's simplex can stop ``kUnknown`` from a warm basis that a cold start solves), and without
    presolve when it is infeasible without a Farkas ray (a presolve that finds infeasibility leaves none)."""
    out, x, facts = solve_arrays(arrays, options, basis=basis)
    if basis is not None and out.status not in ("optimal", "infeasible", "time_limit"):
        out, x, facts = solve_arrays(arrays, options)
        facts["cold"] = True
    if out.status == "infeasible" and "dual_ray" not in facts and isinstance(options, Budget):
        out, x, facts = solve_arrays(arrays, replace(options, presolve=False))  # a presolve proof leaves no ray
        facts["cold"] = True
    return out, x, facts


def _proven(out: Outcome, arrays: Arrays) -> float | None:
    """The bound of a MILP HiGHS solved: its dual bound raised by :data:`HIGHS_PRUNING` of the objective's scale
    (Theorem F4 (v)), unless no whole column is free or no free column earns anything (then HiGHS had nothing
    to branch on, or every point has the welfare 0); None without one."""
    level = out.bound if out.bound is not None and math.isfinite(out.bound) else out.objective
    if level is None:
        return None
    free = arrays.col_lo < arrays.col_hi
    pruned = (arrays.integral & free).any() and (free & (arrays.cost != 0)).any()
    return level + HIGHS_PRUNING * arrays.objective_scale if pruned else level


def solve_sliced(
    arrays: Arrays,
    gpus: np.ndarray,
    options: SolveOptions = SolveOptions(),
    *,
    start: np.ndarray | None = None,
    score: Callable[[np.ndarray], float | None] | None = None,
    proof: list[dict] | None = None,
) -> tuple[Outcome, np.ndarray | None, dict]:
    """Maximise a compiled P2 slice by slice of its GPU count n = Σ_o g_o y_o (proofs/welfare_milp_forms.md, F4).

    Why: when GPUs take most of the budget, P2 is a knapsack in whole GPUs, and HiGHS's branch and bound
    can spend minutes on a gap of a fraction of one GPU's price.  With n fixed the same MILP is proven at
    the root (1,000 jobs: 0.4 s against no proof in 120 s).  The LP relaxation over all n gives n̂, where the
    scan starts: the slices n = ⌊n̂⌋, ⌊n̂⌋ − 1, … and ⌊n̂⌋ + 1, … are visited outwards.  In each, the slice's LP
    is solved first (from the last basis of its side, again from scratch if that run fails); its duals bound,
    exactly, the slice and every slice beyond it on that side (:func:`_dual_bound`), and once that bound is at
    most the incumbent W the side is closed; an infeasible slice LP closes the side only when its Farkas ray
    proves the whole rest empty, exactly (:func:`_empty`).  Otherwise a small restriction of the slice around its
    LP point (:func:`neighbourhood`, Lemma F6) may raise the incumbent first, and then the slice's MILP is solved
    at the same MIP gap, its columns fixed by reduced cost (Theorem F5).  After :data:`SINGLE_SLICES` slices on one
    side, the rest of it is solved as one range.  No step relies on n̂ being HiGHS's exact maximiser.

    Incumbents: the point 0 (no job runs) when it meets the rows, ``start`` (e.g. AutoCBA's allocation by
    ``start_point``) only if it meets every row and bound (``Arrays.fits``; a point the model forbids, such as a
    stalled allocation, must not close a slice), and every HiGHS solution, each valued by ``score`` (the
    referee's welfare of the allocation read from it, None when the referee refuses it) before it becomes W;
    without ``score``, by the model's objective.

    Statuses as :func:`solve_arrays`: ``optimal`` when every slice is closed, with the bound max(W, every solved
    slice's bound raised by HiGHS's pruning tolerance, :func:`_proven`); at a MIP gap above 0 that means only
    "within the gap", which the certification step refuses as a proof (:func:`cbalab.models.certify.verdict`).
    ``feasible`` when an infeasible slice LP could not be checked; on the time limit ``time_limit``; both with a
    bound that covers every slice not closed (the frontier of each side: the last exact bound of its rest).
    ``proof`` (a list) receives, per GPU-count range the scan settled, what settled it: the row duals or the
    Farkas ray of its LP, and HiGHS's bound where HiGHS solved it (:func:`welfare_proof` exports them).
    """
    options = budgeted(options)
    steps: list[dict] = [] if proof is None else proof
    full = arrays

    def value(x: np.ndarray) -> float | None:
        return full.objective(x) if score is None else score(x)

    facts: dict = {"form": "sliced", "start_given": start is not None, "slices": []}
    best_x: np.ndarray | None = None
    best = -math.inf
    zero = np.zeros(full.n_cols)
    for x0 in (zero, start):
        if x0 is not None and full.fits(x0):
            v = value(x0)
            if v is not None and v > best:
                best, best_x = v, x0
    facts["start_fits"] = start is not None and full.fits(start)

    def offer(x: np.ndarray | None, objective: float | None) -> None:
        nonlocal best, best_x
        if x is None or objective is None or objective <= best:
            return
        v = value(x)
        if v is not None and v > best:
            best, best_x = v, x

    t0 = time.perf_counter()
    lp, x_lp, lp_run = solve_arrays(with_slice(full, 0.0, np.inf, relax=True), options)
    facts["lp_seconds"] = time.perf_counter() - t0
    if lp.status != "optimal" or x_lp is None or lp.objective is None:
        return lp, None, facts
    n_hat = float(gpus @ arrays.part("y", x_lp))
    n_max = min(float(gpus.sum()), float(full.row_hi[full.rows["gpu_capacity"]][0]))  # no slice beyond G
    facts["n_hat"] = n_hat
    proven = best  # the largest bound of a slice solved so far
    top = math.inf if lp.bound is None else lp.bound  # the safe bound of the LP over all n bounds every slice
    frontier = {"down": top, "up": top}
    unchecked = False  # a slice LP called infeasible whose ray proved nothing
    nodes = 0
    for side, first, step in (("down", math.floor(n_hat), -1), ("up", math.floor(n_hat) + 1, 1)):
        n = first
        single = 0
        basis = lp_run.get("basis")  # each side's slice LPs start from the last one's basis (same rows and columns)
        while 0 <= n <= n_max:
            lo, hi = (n, n) if single < SINGLE_SLICES else ((0.0, n) if step < 0 else (n, n_max))
            rest = (0.0, hi) if step < 0 else (lo, n_max)  # this slice and every one beyond it on this side
            began = time.perf_counter()
            bound_out, x_slice, lp_facts = _slice_lp(with_slice(full, lo, hi, relax=True), options, basis)
            basis = lp_facts.get("basis", basis)
            record = {
                "lo": lo,
                "hi": hi,
                "lp": bound_out.objective,
                "lp_status": str(bound_out.status),
                "lp_seconds": time.perf_counter() - began,
            }
            facts["slices"].append(record)
            if bound_out.status == "infeasible":
                ray = lp_facts.get("dual_ray")
                if _empty(full, ray, *rest):
                    record["closed_by"] = "farkas"
                    steps.append({"lo": rest[0], "hi": rest[1], "ray": ray})
                    frontier[side] = -math.inf
                    break
                if not _empty(full, ray, lo, hi):
                    record["closed_by"] = None
                    unchecked = True
                    break
                record["closed_by"] = "farkas-slice"
                steps.append({"lo": lo, "hi": hi, "ray": ray})
                if lo != hi:
                    break
                n += step
                single += 1
                continue
            if bound_out.status != "optimal":
                return _sliced_stop(bound_out, best, best_x, frontier, proven, facts)
            row_dual = lp_facts.get("row_dual")
            beyond = None if row_dual is None else _dual_bound(full, row_dual, *rest)
            if beyond is not None:
                frontier[side] = min(frontier[side], beyond)
                record["rest_bound"] = beyond
            if beyond is not None and beyond <= best:
                record["closed_by"] = "lp"
                steps.append({"lo": rest[0], "hi": rest[1], "duals": row_dual})
                break
            level = bound_out.bound  # the safe bound of the slice's duals (docs/model.md §8)
            if level is not None and level <= best:
                record["closed_by"] = "lp-slice"
                steps.append({"lo": lo, "hi": hi, "duals": row_dual})
            else:
                milp = with_slice(full, lo, hi)
                dual = lp_facts.get("dual_value")
                hood = None if dual is None or x_slice is None else neighbourhood(milp, x_slice, dual, NEIGHBOURHOOD)
                if hood is not None:
                    probe, x_probe, probe_run = solve_arrays(hood, options)
                    record.update(probe=str(probe.status), probe_seconds=probe_run.get("solve_seconds"))
                    offer(x_probe, probe.objective)
                    if probe.status == "time_limit":
                        return _sliced_stop(probe, best, best_x, frontier, proven, facts)
                if level is not None and level <= best:
                    record["closed_by"] = "probe"
                    steps.append({"lo": lo, "hi": hi, "duals": row_dual})
                else:
                    if dual is not None and best > -math.inf:
                        milp, record["fixed"] = fixed_by_reduced_cost(milp, dual, best)
                    out, x, run = solve_arrays(milp, options, start=best_x)
                    nodes += int(run.get("nodes", 0))
                    record.update(milp=out.status, seconds=time.perf_counter() - began, nodes=run.get("nodes"))
                    offer(x, out.objective)
                    if out.status == "optimal":
                        slice_bound = _proven(out, milp)
                        if slice_bound is not None and level is not None:
                            slice_bound = min(slice_bound, level)  # the slice's LP bounds it too, exactly
                        if slice_bound is not None:
                            proven = max(proven, slice_bound)
                            record["bound"] = slice_bound
                            steps.append({"lo": lo, "hi": hi, "duals": row_dual, "highs": slice_bound})
                    elif out.status == "error":
                        return out, None, facts
                    elif out.status == "infeasible":
                        steps.append({"lo": lo, "hi": hi, "duals": row_dual, "highs": None})
                    elif out.status != "infeasible":
                        open_bound = _proven(out, milp)
                        stop_at = max(proven, math.inf if open_bound is None else open_bound)
                        return _sliced_stop(out, best, best_x, frontier, stop_at, facts)
            if lo != hi:
                break
            n += step
            single += 1
        else:
            frontier[side] = -math.inf  # every slice of this side was visited
    facts["nodes"] = nodes
    if best_x is None:
        infeasible = Outcome(Status.INFEASIBLE, None, None, "HiGHS proved every GPU-count slice infeasible", False)
        return infeasible, None, facts
    if unchecked:
        message = "a slice LP HiGHS called infeasible without a ray that proves it: its side is bounded, not closed"
        bound = max(best, proven, *frontier.values())
        return Outcome(Status.FEASIBLE, best, bound, message, True), best_x, facts
    message = "HiGHS: optimal in every GPU-count slice"
    if options.mip_gap > 0:
        message += f", each only within the MIP gap {options.mip_gap:g}"
    return Outcome(Status.OPTIMAL, best, max(proven, best), message, True), best_x, facts


def _magnitude(value: float | int | Fraction, exponent: int = 0) -> float:
    """|value|·2**exponent as a double, inf when it is beyond the largest one (an exact int or Fraction may be)."""
    try:
        return math.ldexp(abs(float(value)), exponent)
    except OverflowError:
        return math.inf


def neighbourhood(arrays: Arrays, x_lp: np.ndarray, dual: DualValue, free: int) -> Arrays | None:
    """``arrays`` with every whole column fixed at its value in the LP point ``x_lp`` except the ``free`` ones of
    least reduced cost, or None when that fixes nothing (proofs/welfare_milp_forms.md, Lemma F6).

    Why: a slice's MILP is proven quickly once its incumbent is near the slice's LP bound, for then Theorem F5
    fixes most binaries; without one HiGHS spends minutes in its own heuristics.  An optimum differs from the
    LP's point mostly in columns whose reduced cost is small, so this small MILP (a restriction: every point
    of it is a point of ``arrays``) finds such an incumbent in about a second at 10,000 jobs.  Its bound
    proves nothing about ``arrays`` and is not used.  ``dual`` is the slice LP's :class:`DualValue`.
    """
    lo, hi = arrays.col_lo, arrays.col_hi
    value = np.rint(x_lp)
    fix = arrays.integral & (np.abs(x_lp - value) <= 1e-9) & (lo <= value) & (value <= hi)
    # |r_j| in the units of ``dual.reduced`` (r_j = reduced_j · 2**low); a repaired column's r_j is exact.  Only
    # the order matters: an exact value beyond a double (a cache of 3e302 GB makes one) is taken as inf.
    cost = np.where(arrays.integral, [_magnitude(v) for v in dual.reduced], np.inf)
    for j, r in dual.moved.items():
        if arrays.integral[j]:
            cost[j] = _magnitude(r, -dual.low)
    fix[np.argsort(cost, kind="stable")[:free]] = False
    if not fix.any():
        return None
    col_lo, col_hi = lo.copy(), hi.copy()
    col_lo[fix] = col_hi[fix] = value[fix]
    return replace(arrays, col_lo=col_lo, col_hi=col_hi)


def fixed_by_reduced_cost(arrays: Arrays, dual: DualValue, best: float) -> tuple[Arrays, int]:
    """``arrays`` with every whole column fixed that no point as good as the incumbent ``best`` can move off its
    side, and how many (proofs/welfare_milp_forms.md, Theorem F5).

    ``dual`` is the exact value of the duals of ``arrays``' LP relaxation in the min form
    (:func:`_safe_lp_bound`); the objective objective_scale·(cost·x + offset) is at least ``best`` exactly when
    ±cost·x is at most the target below, taken as a Fraction so that the comparison is exact.
    """
    flip = Fraction(-1 if arrays.maximize else 1)
    target = flip * (Fraction(best) / Fraction(arrays.objective_scale) - Fraction(arrays.offset))
    lo, hi = arrays.col_lo, arrays.col_hi
    finite = np.isfinite(lo) & np.isfinite(hi)
    lo_0, hi_0 = np.where(finite, lo, 0.0), np.where(finite, hi, 0.0)
    whole = arrays.integral & finite & (np.floor(lo_0) == lo_0) & (np.floor(hi_0) == hi_0)
    cols = dual.fixed(target, whole)
    col_lo, col_hi = lo.copy(), hi.copy()
    col_lo[cols] = col_hi[cols] = dual.side[cols]
    return replace(arrays, col_lo=col_lo, col_hi=col_hi), int(cols.size)


def _sliced_stop(
    out: Outcome, best: float, best_x: np.ndarray | None, frontier: dict, open_bound: float, facts: dict
) -> tuple[Outcome, np.ndarray | None, dict]:
    """The answer of :func:`solve_sliced` when a HiGHS call stopped early: its status, the incumbent, and a bound
    valid for every slice (the open one's and the solved ones', ``open_bound``, and each side's frontier, the
    last exact bound of the slices not closed on that side, Theorem F4 (iv))."""
    found = best_x is not None
    bound = max(best, open_bound, *frontier.values())
    return Outcome(out.status, best if found else None, bound, out.message, found), best_x, facts


def solve_welfare(
    inst: Instance,
    *,
    relax: bool,
    options: SolveOptions = SolveOptions(),
    form: str = "arrays",
    warm: Allocation | None = None,
    sliced: bool = True,
) -> Allocation:
    """Solve P2 (docs/model.md §5) exactly (``relax=False``) or its LP relaxation, as a certified Allocation.

    ``form="arrays"`` (the default) compiles the statement of models/milp/welfare.py (scaled) and solves it
    with highspy; ``form="pyomo"`` emits the same statement, unscaled, as the Pyomo model ``cbalab.build_model``
    returns and solves it through Pyomo's HiGHS interface (the path from before the array-built model, timed by
    experiments/runs/milp_scale.py).  ``warm`` (arrays only) is a
    feasible allocation handed to HiGHS as its first incumbent (and to the slices, where it counts only if
    it meets the model's rows).  ``sliced`` (the default for the MILP) solves it slice by slice of the GPU
    count, :func:`solve_sliced` (Theorem F4); ``sliced=False`` is the single MILP of before.  The run facts
    go to ``milp`` (:class:`~cbalab.models.result.MilpFacts`).

    MILP: the chosen option of each job is the row with y_o = 1 (HiGHS leaves
    binaries within 1e-6 of whole), the cache is c_k = d_k h_k and the
    bandwidth the least feeding b_j = r_j(g_j)(1 − h_k(j)), which never costs
    more than the model's b.  ``bound`` is HiGHS's proven upper bound raised by its pruning tolerance
    (:func:`_proven`, proofs/welfare_milp_forms.md, Theorem F4 (v)); on the slices, each closed slice's exact one.

    LP relaxation: a fractional y is no allocation, so the method reports the
    relaxation's optimum as ``bound`` (an upper bound on the welfare optimum)
    and, as its allocation, rounds down: it keeps only the jobs whose LP
    choice is already whole (y_o = 1), fed from the LP's cache.  Rounding
    down only removes GPUs and demand, so the allocation is feasible.  When
    the relaxation is whole (every job's y all 0 or one 1) the rounding is the
    relaxation's optimum itself, so it may be ``optimal``: the certification
    step decides, as for every exact answer (its welfare must meet the bound).

    Either way :func:`_fed_within_limits` then repairs floating-point excess
    (HiGHS's 1e-7 feasibility tolerance) so that the referee, which checks to
    1e-9, sees the capacities and the budget met; the repair factor is kept
    in ``facts`` (:class:`~cbalab.models.result.BandwidthRepair`).  The answer then passes
    :func:`cbalab.models.certify.certify`.  Non-continuous instances raise
    InstanceError (models/milp/welfare.py).
    """
    t0 = time.perf_counter()
    facts: dict = {"form": form}
    if form == "pyomo":
        model = build_welfare_model(inst, relax=relax)
        arrays, t1 = model.arrays, time.perf_counter()
        out = solve_model(model, options)
        x = solution(model) if out.has_solution else None
        facts.update(build_seconds=t1 - t0, solve_seconds=time.perf_counter() - t1)
    elif form == "arrays":
        arrays = build_welfare_arrays(inst, relax=relax)
        t1 = time.perf_counter()
        start = None
        if warm is not None and warm.gpus is not None and warm.cache_gb is not None:
            start = start_point(inst, arrays, warm.gpus, warm.cache_gb)
        if sliced and not relax:
            scored = _referee_score(inst, lambda x: _p2_allocation(inst, arrays, x))
            out, x, run_facts = solve_sliced(arrays, inst.option_gpus, options, start=start, score=scored)
        else:
            out, x, run_facts = solve_arrays(arrays, options, start=start)
            if not relax and out.status == Status.OPTIMAL:  # HiGHS's pruning tolerance, as for a slice (F4 (v))
                out = replace(out, bound=_proven(out, arrays))
        facts.update(run_facts, build_seconds=t1 - t0)
    else:
        raise ValueError(f"form must be 'arrays' or 'pyomo', got {form!r}")
    if x is None:
        return answer(out, milp=MilpFacts.of(facts, form))
    y = arrays.part("y", x)
    alloc = answer(out, _p2_allocation(inst, arrays, x, relax=relax), milp=MilpFacts.of(facts, form))
    if relax:
        running = int(np.count_nonzero(alloc.gpus)) if alloc.gpus is not None else 0
        job = inst.option_job()
        fractional = np.bincount(job, weights=(y > 1e-6) & (y < 1.0 - 1e-6), minlength=inst.n_jobs) > 0
        n_frac = int(fractional.sum())
        alloc.status = out.status if n_frac == 0 else (Status.FEASIBLE if out.status == Status.OPTIMAL else out.status)
        alloc.bound, of = _shares_bound(inst, out, options)
        alloc.reason = f"LP relaxation: bound is the relaxation optimum{of}; " + (
            f"it is whole (every job's choice is 0 or one option; {running} of {inst.n_jobs} jobs run)"
            if n_frac == 0
            else f"the allocation drops the {n_frac} of {inst.n_jobs} jobs whose LP choice is fractional "
            f"({running} run)"
        )
        return certify(inst, "welfare", alloc, source="the LP relaxation's optimum")
    return certify(
        inst, "welfare", alloc, mip_gap=options.mip_gap, source="HiGHS's dual bound", model_objective=out.objective
    )


def welfare_proof(inst: Instance, options: SolveOptions = SolveOptions()) -> dict[str, Any]:
    """P2 solved by GPU-count slices (:func:`solve_sliced`) with what proves its bound, as JSON: a user re-derives
    the bound from the instance file and this document alone with scripts/check_welfare_proof.py (docs/model.md
    §8, "Re-checking an optimal welfare"), without cbalab or a solver.

    The document holds the answer (status, welfare, bound), the options dropped by Lemma F2, the allocation
    (each job's option index or None, each dataset's cache in GB, each job's bandwidth), the range of GPU counts
    [0, n_max], and for each range the scan settled: its row multipliers (the slice LP's duals, rows named as
    the groups of models/milp/welfare.py, for the rows unscaled, in the min form of −U·y), or its Farkas ray,
    and HiGHS's bound where HiGHS solved the range (taken on trust: the one number the checker cannot
    re-derive).  Multipliers are any numbers (weak duality holds for all),
    so their rounding weakens the bound at worst, never its validity.
    """
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    arrays = build_welfare_arrays(inst)
    steps: list[dict] = []
    scored = _referee_score(inst, lambda x: _p2_allocation(inst, arrays, x))
    out, x, _ = solve_sliced(arrays, inst.option_gpus, budgeted(options), score=scored, proof=steps)
    plain = welfare_statement(inst).compile(scaled=False)
    div = _row_divisors(arrays, plain)
    top = float(plain.row_hi[plain.rows["gpu_capacity"]][0])
    doc: dict[str, Any] = {
        "schema": "cbalab/welfare-proof@1",
        "status": str(out.status),
        "bound": out.bound,
        "n_max": min(int(inst.option_gpus.sum()), int(top) if math.isfinite(top) else int(inst.option_gpus.sum())),
        "dropped": [int(o) for o in np.flatnonzero(arrays.col_hi[arrays.blocks["y"]] == 0.0)],
        "allocation": None,
        "ranges": [],
    }
    if x is not None:
        alloc = _p2_allocation(inst, arrays, x)
        assert alloc.gpus is not None and alloc.cache_gb is not None and alloc.bandwidth_gbps is not None
        ev = evaluate(inst, alloc, "welfare")
        ptr, chosen = inst.option_ptr, np.flatnonzero(arrays.part("y", x) >= 0.5)
        option: list[int | None] = [None] * inst.n_jobs
        for o in chosen.tolist():
            j = int(inst.option_job()[o])
            option[j] = o - int(ptr[j])
        doc["welfare"] = float(ev.welfare or 0.0) if ev.feasible else None
        doc["allocation"] = {
            "option": option,
            "cache_gb": alloc.cache_gb.tolist(),
            "bandwidth_gbps": alloc.bandwidth_gbps.tolist(),
        }
    flip = -1.0 if arrays.maximize else 1.0
    for step in steps:
        entry: dict[str, Any] = {"lo": float(step["lo"]), "hi": float(step["hi"])}
        if step.get("duals") is not None:
            y = flip * np.asarray(step["duals"]) * arrays.objective_scale / div
            entry["duals"] = {name: y[span].tolist() for name, span in arrays.rows.items()}
        if step.get("ray") is not None:
            ray = np.asarray(step["ray"]) / div
            entry["ray"] = {name: ray[span].tolist() for name, span in arrays.rows.items()}
        if "highs" in step:
            entry["highs"] = step["highs"]
        doc["ranges"].append(entry)
    return doc


def _row_divisors(scaled: Arrays, plain: Arrays) -> np.ndarray:
    """Per row, the number the scaled statement divided it by (models/milp/statement.py): from any entry, as
    plain value × column unit / scaled value (1 for an empty row)."""
    out = np.ones(scaled.n_rows)
    first = scaled.start[:-1]
    has = np.diff(scaled.start) > 0
    k = first[has]
    out[has] = plain.value[k] * scaled.unit[scaled.index[k]] / scaled.value[k]
    return out


def _p2_allocation(inst: Instance, arrays: Arrays, x: np.ndarray, *, relax: bool = False) -> Allocation:
    """The allocation of a solution ``x`` of P2's arrays: the option with y_o = 1 per job (HiGHS leaves binaries
    within 1e-6 of whole; for the LP, only y_o ≥ 1 − 1e-6), cache d h, least feeding, within the limits."""
    y, h = arrays.part("y", x), arrays.part("h", x)
    chosen = np.flatnonzero(y >= (1.0 - 1e-6 if relax else 0.5))
    jobs = inst.option_job()[chosen]
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    rates = np.zeros(inst.n_jobs)
    gpus[jobs] = inst.option_gpus[chosen]
    rates[jobs] = inst.option_io_gbps[chosen]
    return _fed_within_limits(inst, gpus, rates, np.clip(h, 0.0, 1.0))


def _referee_score(inst: Instance, read: Callable[[np.ndarray], Allocation]) -> Callable[[np.ndarray], float | None]:
    """The incumbent's value for :func:`solve_sliced`: the referee's welfare of the allocation ``read`` from a
    solution, None when the referee refuses it (Theorem F4 (iii): W is a welfare the referee accepts)."""

    def score(x: np.ndarray) -> float | None:
        ev = evaluate(inst, read(x), "welfare")
        return float(ev.welfare or 0.0) if ev.feasible else None

    return score


def _shares_bound(inst: Instance, out: Outcome, options: SolveOptions) -> tuple[float | None, str]:
    """The LP relaxation's bound, with a remark for the reason when it is not P2's LP ``out`` itself: when some
    option within G cannot run alone (Lemma F2), the LP of shares, which keeps those options (a time share or a
    stall may pay for part of one), so that the bound is above time-shared and stalled answers too
    (proofs/welfare_milp_forms.md, Lemma F2, the LP relaxation).  None when the LP solved is not optimal."""
    if out.status != Status.OPTIMAL:
        return None, ""
    if not (share_fits(inst) & ~standalone_fits(inst)).any():
        return out.bound, ""
    wide, _, _ = solve_arrays(build_welfare_arrays(inst, relax=True, shares=True), options)
    remark = " with every option within G (a share may pay for one that cannot run alone)"
    return (wide.bound if wide.status == Status.OPTIMAL else None), remark


def _fed_within_limits(inst: Instance, gpus: np.ndarray, rates: np.ndarray, hit: np.ndarray) -> Allocation:
    """Cache c = d h and least feeding b_j = r_j (1 − h_k(j)), scaled into C, B and the budget if rounding broke them.

    The limits are the referee's, ``tolerated(·)`` (docs/model.md (8.1)), which the model's rows allow too.
    Scaling the cache down or the bandwidth down by a factor 1 − ε stalls jobs by at most ε (docs/model.md §5
    scoring); ε is the solver's feasibility slack.
    """
    cache = inst.dataset_size_gb * hit
    cache *= _shrink_into(float(cache.sum()), inst.cache_gb)
    return _bandwidth_within(inst, gpus, cache, least_feeding(inst, rates, cache))


def _bandwidth_within(inst: Instance, gpus: np.ndarray, cache: np.ndarray, bw: np.ndarray) -> Allocation:
    """The allocation with ``bw`` scaled by one factor into tolerated(B) and into the money tolerated(Budget) leaves.

    The factor is kept in ``facts``, a :class:`~cbalab.models.result.BandwidthRepair`.
    """
    total = float(bw.sum())
    factor = _shrink_into(total, inst.bandwidth_gbps)
    if inst.price_bandwidth > 0 and math.isfinite(inst.budget_per_hour):
        spent = inst.price_gpu * float(gpus.sum()) + inst.price_cache * float(cache.sum())
        left = tolerated(inst.budget_per_hour) - spent
        factor = min(factor, _shrink(inst.price_bandwidth * total, left))
    return Allocation(gpus=gpus, cache_gb=cache, bandwidth_gbps=bw * factor, facts=BandwidthRepair(factor))


def welfare_lp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``lp`` for the welfare problem: the LP relaxation's optimum as ``bound``, rounded down."""
    return _exact(
        inst, "welfare", options, lambda i, options: solve_welfare(i, relax=True, options=options), relax=True
    )


def welfare_milp(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp`` for the welfare problem: the proven optimum of P2 (docs/model.md §5).

    Solved by GPU-count slices (:func:`solve_sliced`, Theorem F4).  The retry of :func:`_exact` (presolve
    off, after an answer failed the certification) solves the single MILP instead: on badly scaled instances
    (tests/test_solve.py, a 64e6 $/h cache coefficient) HiGHS without presolve wrongly declared a
    slice infeasible, and the single MILP without presolve is the path that found the optimum there.
    """

    def solve(i: Instance, options: SolveOptions) -> Allocation:
        presolve = options.presolve if isinstance(options, Budget) else True
        return solve_welfare(i, relax=False, options=options, sliced=presolve)

    return _exact(inst, "welfare", options, solve)


def solve_welfare_stall(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """The stall-allowed welfare problem P2s (docs/model.md §5) through its MILP relaxation, exact when it certifies.

    The array form with ``stall=True`` maximises Σ U_o s_o with fed fractions s_o ≤ y_o and remote demand
    r_o (s_o − z_o), z_o ≤ s_o, Σ_{o ∈ O_j} z_o ≤ h_k(j).  The referee's demand of a job fed at s is
    r s (1 − h) ≥ r (s − min(s, h)), so this MILP is a relaxation of P2s and its optimum bounds P2s from
    above (proofs/welfare_milp_forms.md, Theorem F3); it is solved by GPU-count slices like P2 (Theorem F4,
    :func:`solve_sliced`).  The allocation gives each chosen job the model's
    bandwidth b_j = r_o (s_o − z_o); where s_o or h_k(o) is whole, z_o = s_o h_k(o) and the referee feeds
    the job at exactly s_o.  The answer is certified (:func:`cbalab.models.certify.certify`) against the
    relaxation's bound: ``optimal`` only when the welfare the referee scores (Σ U_o min(1, b_j / (r_o (1 − h))))
    meets it; else ``feasible`` with that bound.  When it does not, P2's answer is tried against the same
    bound (P2 ≤ P2s ≤ the relaxation) and kept when it scores more (:func:`_at_least_p2`).
    """
    arrays = build_welfare_arrays(inst, stall=True)
    scored = _referee_score(inst, lambda x: _p2s_allocation(inst, arrays, x))
    out, x, facts = solve_sliced(arrays, inst.option_gpus, options, score=scored)
    if x is None:
        return answer(out, milp=MilpFacts.of(facts, "sliced"))
    milp = replace(MilpFacts.of(facts, "sliced"), relaxation_objective=out.objective)
    alloc = answer(out, _p2s_allocation(inst, arrays, x), milp=milp)
    alloc = certify(inst, "welfare", alloc, mip_gap=options.mip_gap, source="the P2s relaxation's bound")
    if alloc.status == Status.OPTIMAL:
        return alloc
    return _at_least_p2(inst, alloc, out.status, milp, options)


def _p2s_allocation(inst: Instance, arrays: Arrays, x: np.ndarray) -> Allocation:
    """The allocation of a solution ``x`` of form S (Theorem F3): the chosen options, cache d h, and each job the
    model's bandwidth r_o (s_o − z_o), within the limits."""
    y, z = arrays.part("y", x), arrays.part("w", x)
    h, s = np.clip(arrays.part("h", x), 0.0, 1.0), np.clip(arrays.part("s", x), 0.0, 1.0)
    chosen = np.flatnonzero(y >= 0.5)
    jobs = inst.option_job()[chosen]
    r = inst.option_io_gbps[chosen]
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    gpus[jobs] = inst.option_gpus[chosen]
    cache = inst.dataset_size_gb * h
    cache *= _shrink_into(float(cache.sum()), inst.cache_gb)
    bw = np.zeros(inst.n_jobs)
    bw[jobs] = np.maximum(r * (s[chosen] - np.minimum(z[chosen], s[chosen])), 0.0)
    return _bandwidth_within(inst, gpus, cache, bw)


def _at_least_p2(
    inst: Instance, stall: Allocation, solved: Status, milp: MilpFacts, options: SolveOptions
) -> Allocation:
    """``milp-stall``'s answer when its own, ``stall``, is not certified: the better of it and P2's (``milp``'s).

    P2 ≤ P2s ≤ the relaxation (Theorem F3): every allocation of P2 is one of P2s and the relaxation's bound
    holds for both.  So P2's answer is held to that bound (``optimal`` for P2s when it reaches it) and is
    returned whenever the referee scores it above ``stall``: ``milp-stall`` never answers below ``milp`` (the
    allocation read from a relaxation whose stalled job reads a partly cached dataset can score far below it).
    ``solved`` is the status of the relaxation's HiGHS run; the bound reported stays the relaxation's.
    """
    p2 = solve_welfare(inst, relax=False, options=options)
    if p2.status == Status.OPTIMAL and solved == Status.OPTIMAL:
        claim = Status.OPTIMAL
    elif Status.TIME_LIMIT in (p2.status, solved):
        claim = Status.TIME_LIMIT
    else:
        claim = Status.FEASIBLE
    given = stall.certificate.bound if stall.certificate is not None else stall.bound
    p2.status, p2.bound, p2.reason = claim, given, None
    p2 = certify(inst, "welfare", p2, mip_gap=options.mip_gap, source="the P2s relaxation's bound")
    p2.milp = replace(milp, p2=p2.milp)
    if p2.status == Status.OPTIMAL:
        p2.reason = "the no-stall optimum P2 reaches the P2s relaxation's optimum: P2s-optimal (Theorem F3)"
        return p2
    if _score(p2) > _score(stall):
        why = "the no-stall answer of milp scores more than the P2s relaxation's rounding and is a P2s answer too"
        p2.reason = f"{why} (Theorem F3)" + ("" if p2.reason is None else f"; {p2.reason}")
        return p2
    if solved == Status.OPTIMAL:
        stall.reason = (
            "P2s relaxation optimum not realised (Theorem F3: a stalled job reads a partly cached dataset); "
            f"{stall.reason}"
        )
    return stall


def _score(alloc: Allocation) -> float:
    """The referee's score of a certified answer (its certificate's), -inf for one without (no allocation, or
    one the referee refused)."""
    return alloc.certificate.score if alloc.certificate is not None else -math.inf


def welfare_milp_stall(inst: Instance, options: SolveOptions = SolveOptions()) -> Allocation:
    """Registered method ``milp-stall``: the stall-allowed reference P2s (docs/model.md §5), certified when exact."""
    return _exact(inst, "welfare", options, solve_welfare_stall)
