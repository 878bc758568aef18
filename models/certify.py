"""The one certification step every ``optimal`` passes (docs/model.md §8, "When cbalab says optimal").

A method may claim ``optimal``; this module decides whether the claim stands.  It stands when

* the referee (models/evaluate.py) accepts the allocation, and its score is the objective reported;
* the method brings a bound on the optimum that does not come from that score (HiGHS's dual bound,
  rescaled to the instance's units; the LP bound; AutoCBA's Lagrangian certificate; CBA's weak dual),
  and no allocation cbalab can write down without a solver beats that bound (:func:`simple_allocation`);
* the bound meets the score within the tolerance of docs/model.md (8.2),
  ``abs(bound − score) ≤ CERTIFY_RTOL · abs(score − fixed) + CERTIFY_ATOL · unit + FLOAT_ULPS · ulp(score)``,
  where ``unit`` is the instance's objective unit (:func:`objective_unit`), ``fixed`` the part of the objective
  no decision changes (:func:`fixed_part`) and the last term the resolution of the two floats compared;
* the bound is safe in floating point: every bound handed here is a weak-duality value re-derived exactly
  from the data and the multipliers (models/exact_bounds.py, docs/model.md §8) or HiGHS's branch-and-bound
  bound, the one bound taken on trust (docs/model.md §8 says so);
* and the solve ran at MIP gap 0: "within a gap" is not a proof.

Otherwise the answer is ``feasible`` and its reason gives the referee's score and the bound.  A bound that
the referee's score (or the simple allocation) beats by more than the tolerance was no bound: it is dropped.
A bound that exceeds the score within the tolerance is clipped to the score, so that a lower bound never
exceeds its cost and an upper bound never falls below its welfare: the gap is reported as 0, and
:attr:`Verdict.note` (the answer's ``reason`` when it is ``optimal``) says by how much the bound was beyond the score.

:func:`verdict` is the rule on two numbers, for a caller whose referee is not :func:`evaluate` (the
offline optimum P3 is scored by the replay); :func:`certify` applies it to an Allocation of P1 or P2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cbalab.models.alone import runs_alone
from cbalab.models.evaluate import (
    MODEL_SHARE,
    Allocation,
    Evaluation,
    evaluate,
    least_feeding,
    tolerated,
    usable_cache,
)
from cbalab.models.exact_bounds import exact_sum, round_down
from cbalab.models.instance import Instance
from cbalab.models.result import Certificate
from cbalab.models.types import Status

#: Relative part of the certification tolerance (8.2): HiGHS's 1e-7 row tolerances, met again by the
#: referee after the allocation is repaired into the limits, move a score by a few 1e-7; 1e-6 leaves room.
CERTIFY_RTOL = 1e-6

#: Absolute part of the certification tolerance (8.2), in units of :func:`objective_unit` (the scale HiGHS
#: works in after scaling): it decides the optimum 0, where the relative part is 0 too.
CERTIFY_ATOL = 1e-9

#: Last part of the certification tolerance (8.2), in units in the last place of the score: the score and the
#: bound are each the rounded sum of a few terms (the referee adds the GPU bill, the cache and the bandwidth), so
#: two numbers equal in exact arithmetic can be an ulp or two apart, and a tolerance below that is not checkable.
#: It decides only where the decisions' part is below about 1e-9 of the fixed part (as with a 7e-9 $/h IO
#: cost beside a 32 $/h GPU bill, whose one-ulp rounding was 1e-6 of the IO cost).
FLOAT_ULPS = 4.0


def objective_unit(inst: Instance, problem: str) -> float:
    """The instance's own unit of the objective, at most about the optimum's size (docs/model.md (8.2)).

    Welfare (§5): the largest utility U_o among the options that run alone within every limit as written
    (``runs_alone``, proofs/welfare_milp_forms.md, Lemma F2 (ii)); each such option alone is an allocation the
    referee accepts, so the unit is at most the optimum, and an option that cannot run (a utility of 1e11 on a
    job no budget feeds) cannot inflate the tolerance or HiGHS's scale.  Cost
    (§4): the least IO cost with C and B left out, Σ_k min(p_b R_k, p_c d_k), a lower bound on the optimum's
    IO cost (Theorem 1's dual at λ = μ = 0); when that is 0, the cost of all-remote IO p_b Σ_k R_k, then of
    caching everything p_c Σ_k d_k, then the GPU bill, then 1.  HiGHS sees the objective divided by (a power
    of two near) this unit, and the absolute part of the certification tolerance is measured in it, so that
    both mean the same at every scale of the numbers.  (The largest single coefficient is no such unit: a
    job reading 1e15 GB/s from a dataset cached whole costs 33 $/h, not 9e14.)
    """
    if problem == "welfare":
        u = inst.option_utility[runs_alone(inst)]
        return float(u.max()) if u.size and u.max() > 0 else 1.0
    demand = inst.dataset_demand(np.where(inst.has_fixed, inst.job_io_gbps, 0.0))
    remote = inst.price_bandwidth * demand
    cached = inst.price_cache * inst.dataset_size_gb
    for unit in (float(np.minimum(remote, cached).sum()), float(remote.sum()), float(cached.sum())):
        if unit > 0:
            return unit
    gpu_bill = fixed_part(inst, problem)
    return gpu_bill if gpu_bill > 0 else 1.0


def accepted_limits(inst: Instance) -> Instance:
    """``inst`` with C, B and the budget as the referee accepts them, ``tolerated(·)`` (docs/model.md (8.1)).

    A bound on this instance bounds every allocation the referee accepts on ``inst``: below 1 GB, 1 GB/s or
    1 $/h the referee's slack is more than rounding, and a bound for the limits as written can be beaten.
    """
    return inst.replace(
        cache_gb=tolerated(inst.cache_gb),
        bandwidth_gbps=tolerated(inst.bandwidth_gbps),
        budget_per_hour=tolerated(inst.budget_per_hour),
    )


def widened_limits(inst: Instance) -> Instance:
    """``inst`` with C and B as near the referee's limits (8.1) as a model may aim: the second try of P1's methods.

    C becomes ``tolerated(C, MODEL_SHARE)``, and B the B whose model row ``tolerated(B, MODEL_SHARE)`` keeps a
    millionth of the slack of ``tolerated(B)`` for rounding.  Below 1 GB or 1 GB/s the slack is more than rounding
    (C = 10⁻¹² GB accepts 10⁻⁹ GB of cache), and the bound, taken for the accepted limits
    (:func:`accepted_limits`), can then prove an answer for the limits as written not optimal.  CBA, ``lp`` and
    ``milp`` then answer this instance too, and keep that answer only where it is cheaper by more than the
    certification tolerance (8.2), or certified where the first is not: above 1 GB and 1 GB/s, where the two differ
    by rounding, the answer stays the one for the limits as written.
    """
    share = MODEL_SHARE * (1.0 - MODEL_SHARE) * (1.0 - 1e-3)
    return inst.replace(
        cache_gb=tolerated(inst.cache_gb, MODEL_SHARE), bandwidth_gbps=tolerated(inst.bandwidth_gbps, share)
    )


def fixed_part(inst: Instance, problem: str) -> float:
    """The part of the objective that no decision changes: P1's GPU bill p_g Σ_j g_j (§4), 0 for welfare."""
    if problem != "cost":
        return 0.0
    return inst.price_gpu * float(inst.job_gpus[inst.has_fixed].sum())


def tolerance(score: float, unit: float, fixed: float = 0.0) -> float:
    """docs/model.md (8.2): ``CERTIFY_RTOL · abs(score − fixed) + CERTIFY_ATOL · unit + FLOAT_ULPS · ulp(score)``."""
    resolution = FLOAT_ULPS * math.ulp(score) if math.isfinite(score) else 0.0
    return CERTIFY_RTOL * abs(score - fixed) + CERTIFY_ATOL * unit + resolution


def instance_tolerance(inst: Instance, problem: str, score: float) -> float:
    """The certification tolerance (8.2) of a score on ``inst``: :func:`tolerance` with its unit and fixed part."""
    return tolerance(score, objective_unit(inst, problem), fixed_part(inst, problem))


@dataclass(frozen=True)
class Verdict:
    """What the certification decided: the status, the bound kept (None: it was no bound) and why, if not optimal.

    ``note`` says why the gap is 0 when the bound lay beyond the score within the tolerance and was clipped to it
    (a negative gap is never reported); None otherwise.
    """

    status: Status
    bound: float | None
    reason: str | None
    note: str | None = None


def verdict(
    score: float,
    bound: float | None,
    *,
    minimise: bool,
    tol: float,
    claimed: str,
    mip_gap: float = 0.0,
    source: str = "the bound",
    clip: float | None = None,
) -> Verdict:
    """Certify a claim on numbers alone: ``score`` is the referee's objective, ``bound`` the independent bound.

    ``minimise`` says which side the bound is on (a lower bound of a cost, or an upper bound of a
    welfare); ``tol`` is the tolerance (8.2) of the score (:func:`tolerance`); ``claimed`` the method's
    status, of which only ``optimal`` is tested (``time_limit``, ``feasible`` stay what they are);
    ``mip_gap`` the relative gap the solver ran at; ``source`` names the bound in the reason; ``clip`` the value a
    bound beyond the score is moved to (by default the score; :func:`certify` gives a cost's exact value rounded
    down, since the float score can lie an ulp above the exact optimum).

    * A bound that is missing or not finite proves nothing: ``optimal`` becomes ``feasible``.
    * A bound the score beats by more than ``tol`` is no bound: it is dropped and ``optimal`` becomes
      ``feasible``.
    * Otherwise the bound is kept, clipped to the score (a lower bound never above the cost, an upper
      bound never below the welfare; the gap is then 0 and ``note`` says by how much it was beyond),
      and ``optimal`` stands iff ``mip_gap`` is 0 and the bound meets
      the score within ``tol``.
    """
    downgraded = Status.FEASIBLE if claimed == Status.OPTIMAL else Status(claimed)
    if bound is None or not math.isfinite(bound):
        reason = f"the referee scores {score:.9g} and there is no finite bound" if claimed == "optimal" else None
        return Verdict(downgraded, None, reason)
    beyond = score < bound - tol if minimise else score > bound + tol
    if beyond:
        reason = (
            f"the referee scores {score:.9g}, beyond {source} {bound:.9g} by more than the tolerance {tol:.3g} "
            "(docs/model.md (8.2)): that bound does not hold, so it is dropped"
        )
        return Verdict(downgraded, None, reason)
    edge = score if clip is None else clip
    kept = min(bound, edge) if minimise else max(bound, edge)
    note = None
    if kept != bound:
        note = (
            f"{source} {bound:.17g} lies {abs(bound - score):.3g} beyond the referee's score {score:.17g}, within the "
            f"tolerance {tol:.3g} (docs/model.md (8.2)): the bound is reported as the score and the gap as 0"
        )
    if claimed != Status.OPTIMAL:
        return Verdict(Status(claimed), kept, None, note)
    if mip_gap > 0:
        reason = (
            f"solved at MIP gap {mip_gap:g}, which proves only a value within the gap: the referee scores "
            f"{score:.9g}, {source} is {kept:.9g}"
        )
        return Verdict(Status.FEASIBLE, kept, reason, note)
    if abs(kept - score) > tol:
        reason = (
            f"not proven optimal: the referee scores {score:.9g} and {source} is {kept:.9g}, "
            f"{abs(kept - score):.3g} apart, more than the tolerance {tol:.3g} (docs/model.md (8.2))"
        )
        return Verdict(Status.FEASIBLE, kept, reason, note)
    return Verdict(Status.OPTIMAL, kept, None, note)


def certify(
    inst: Instance,
    problem: str,
    alloc: Allocation,
    *,
    mip_gap: float = 0.0,
    source: str = "HiGHS's bound",
    model_objective: float | None = None,
) -> Allocation:
    """``alloc`` with its status and bound decided by the certification step (docs/model.md §8, (8.2)).

    ``alloc.status`` is the method's claim and ``alloc.bound`` its independent bound, in the instance's
    units (a lower bound for ``problem == "cost"``, P1, an upper bound for welfare, P2 or P2s).  The
    referee scores the allocation; an allocation it rejects is returned as it is (models/evaluate.py's
    ``result`` reports it ``infeasible``).  Before :func:`verdict` decides, two pieces of evidence that
    the solver solved another model than the instance drop the bound: ``model_objective`` (the solver's
    own value of its incumbent) disagreeing with the score, and :func:`simple_allocation` beating the
    bound.  The numbers go to ``alloc.certificate`` (models/result.py); a claim that does not stand gets the reason.
    """
    if not alloc.has_allocation:
        return alloc
    ev = evaluate(inst, alloc, problem)
    if not ev.feasible:
        return alloc
    minimise = problem == "cost"
    score = ev.cost_total if minimise else float(ev.welfare or 0.0)
    tol = instance_tolerance(inst, problem, score)
    claimed = alloc.status
    bound = alloc.bound
    problems = []
    if model_objective is not None and abs(score - model_objective) > tol:
        problems.append(f"the solver's objective is {model_objective:.9g}")
    if bound is not None and math.isfinite(bound):
        witness = simple_allocation(inst, problem)
        if witness is not None and (witness[1] < bound - tol if minimise else witness[1] > bound + tol):
            problems.append(f"{witness[0]} scores {witness[1]:.9g}, beyond {source} {bound:.9g}")
    if problems:
        what = "cost" if minimise else "welfare"
        alloc.reason = (
            f"the referee scores this allocation's {what} at {score:.9g} but {' and '.join(problems)}: the solver's "
            f"answer does not hold for this instance (largest input: {largest_input(inst)}); "
            f"status downgraded from {claimed}, bound dropped"
        )
        alloc.status = Status.FEASIBLE if claimed in (Status.OPTIMAL, Status.FEASIBLE) else claimed
        alloc.bound = None
    else:
        clip = round_down(exact_cost(inst, alloc, ev)) if minimise else None
        v = verdict(
            score, bound, minimise=minimise, tol=tol, claimed=claimed, mip_gap=mip_gap, source=source, clip=clip
        )
        alloc.status, alloc.bound = v.status, v.bound
        if v.reason is not None:
            alloc.reason = v.reason if alloc.reason is None else f"{alloc.reason}; {v.reason}"
        elif v.note is not None and v.status == Status.OPTIMAL and alloc.reason is None:
            alloc.reason = v.note
    alloc.certificate = Certificate(claimed, score, bound, tol)
    return alloc


def exact_cost(inst: Instance, alloc: Allocation, ev: Evaluation) -> Fraction:
    """The exact value of the cost the referee scores (docs/model.md §4): p_g Σ g + p_c Σ c + p_b (Σ b, or the
    provisioned bandwidth under tiers), every float taken as the rational it stands for.

    The referee's float sum can round above it (2^53 + 3 rounds to 2^53 + 4), so a lower bound clipped to the score
    could lie above the optimum; clipped to this value rounded down it cannot (:func:`certify`).
    """
    assert alloc.cache_gb is not None and alloc.bandwidth_gbps is not None
    gpus = Fraction(inst.price_gpu) * int(np.asarray(alloc.gpus).sum()) if alloc.time_share is None else None
    gpu = Fraction(ev.cost_gpu) if gpus is None else gpus
    billed = exact_sum(alloc.bandwidth_gbps) if ev.provisioned_gbps is None else Fraction(ev.provisioned_gbps)
    return gpu + Fraction(inst.price_cache) * exact_sum(alloc.cache_gb) + Fraction(inst.price_bandwidth) * billed


def simple_allocation(inst: Instance, problem: str) -> tuple[str, float] | None:
    """An allocation anyone can write down and its referee score, or None: no proven bound may be worse than it.

    Cost (docs/model.md §4): the cheaper of no cache, every job fed by remote IO (b_j = r_j), and every read
    dataset cached as far as it can be (whole, or its whole blocks) with the rest fed remotely, when that fits C.
    Welfare (§5): without cache, options taken greedily (by utility per
    dollar U_o / (p_g g_o + p_b r_o), or by utility), at most one per job,
    while G, B and the budget allow (:func:`_greedy_without_cache`).  Each
    is scored by the referee and used only if it finds it feasible.
    This catches a solver whose bound is self-consistent but wrong, e.g. a
    presolve that reduces a MILP with optimum 54 to an empty one with
    optimum 0 (found by tests/test_fuzz.py with HiGHS 1.15.1).
    """
    if problem == "cost":
        if not inst.has_fixed.all():
            return None
        read = inst.dataset_demand(inst.job_io_gbps) > 0
        held = np.where(read, usable_cache(inst), 0.0)
        found = []
        for what, cache in (
            ("no cache with every job on remote IO", np.zeros(inst.n_datasets)),
            ("every read dataset cached", held),
        ):
            alloc = Allocation(inst.job_gpus.copy(), cache, least_feeding(inst, inst.job_io_gbps, cache))
            ev = evaluate(inst, alloc, problem)
            if ev.feasible:
                found.append((what, ev.cost_total))
        return min(found, key=lambda w: w[1]) if found else None
    else:
        gpus, bw = _greedy_without_cache(inst)
        alloc = Allocation(gpus, np.zeros(inst.n_datasets), bw)
        what = f"a greedy choice of {int((gpus > 0).sum())} jobs without cache"
    ev = evaluate(inst, alloc, problem)
    if not ev.feasible:
        return None
    return what, ev.cost_total if problem == "cost" else float(ev.welfare or 0.0)


def _greedy_without_cache(inst: Instance) -> tuple[np.ndarray, np.ndarray]:
    """GPUs and bandwidth per job of the greedy no-cache welfare allocation of :func:`simple_allocation`.

    Two greedy orders, by utility per dollar and by utility, each taking at
    most one option per job while G, B and the budget allow; the one with the
    larger total utility is returned.
    """
    g, r, u = inst.option_gpus, inst.option_io_gbps, inst.option_utility
    cost = inst.price_gpu * g + inst.price_bandwidth * r
    with np.errstate(divide="ignore", invalid="ignore"):
        density = np.where(cost > 0, u / cost, np.inf)
    job = inst.option_job()
    best: tuple[float, np.ndarray, np.ndarray] = (-1.0, np.zeros(inst.n_jobs, np.int64), np.zeros(inst.n_jobs))
    for order in (np.lexsort((-u, -density)), np.lexsort((cost, -u))):
        gpus, bw = np.zeros(inst.n_jobs, dtype=np.int64), np.zeros(inst.n_jobs)
        money, bw_left = inst.budget_per_hour, inst.bandwidth_gbps
        gpu_left = math.inf if inst.gpus is None else inst.gpus
        total = 0.0
        for o in order:
            j = job[o]
            if u[o] <= 0 or gpus[j] > 0 or cost[o] > money or g[o] > gpu_left or r[o] > bw_left:
                continue
            gpus[j], bw[j] = g[o], r[o]
            money, gpu_left, bw_left, total = money - cost[o], gpu_left - g[o], bw_left - r[o], total + u[o]
        if total > best[0]:
            best = (total, gpus, bw)
    return best[1], best[2]


def largest_input(inst: Instance) -> str:
    """The field and value of the instance's largest number (sizes, rates, utilities, prices, capacities)."""
    candidates: list[tuple[float, str]] = [
        (inst.cache_gb, "cluster.cache_gb"),
        (inst.price_gpu, "prices.gpu_per_hour"),
        (inst.price_cache, "prices.cache_gb_per_hour"),
        (inst.price_bandwidth, "prices.bandwidth_gbps_per_hour"),
    ]
    for x, name in ((inst.bandwidth_gbps, "cluster.bandwidth_gbps"), (inst.budget_per_hour, "budget_per_hour")):
        if math.isfinite(x):
            candidates.append((x, name))
    ptr, job = inst.option_ptr, inst.option_job()
    columns: list[tuple[np.ndarray, Callable[[int], str]]] = [
        (inst.dataset_size_gb, lambda k: f"datasets[{k}].size_gb"),
        (np.where(inst.has_fixed, inst.job_io_gbps, 0.0), lambda j: f"jobs[{j}].io_gbps"),
        (inst.option_io_gbps, lambda o: f"jobs[{job[o]}].options[{o - ptr[job[o]]}].io_gbps"),
        (inst.option_utility, lambda o: f"jobs[{job[o]}].options[{o - ptr[job[o]]}].utility"),
    ]
    for values, field_of in columns:
        if values.size:
            i = int(np.argmax(values))
            candidates.append((float(values[i]), field_of(i)))
    value, name = max(candidates)
    return f"{name} = {value:.6g}"
