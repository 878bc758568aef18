"""AutoCBA's driver: greedy runs, swap pass, partial enumeration, best single job, CBA feeding, certificate."""

from __future__ import annotations

import math

import numpy as np

from cbalab.algorithms.autocba.certificate import Certificate, Dual, welfare_bound
from cbalab.algorithms.autocba.enumerate import SINGLES_MAX, downgrade_pass, partial_enumeration
from cbalab.algorithms.autocba.exact import EXACT_JOBS, exact_search
from cbalab.algorithms.autocba.feeder import _Feeder
from cbalab.algorithms.autocba.greedy import Weights, _Greedy
from cbalab.algorithms.autocba.limits import _LARGE, fits_alone, standalone_cost
from cbalab.algorithms.cba import feed
from cbalab.models.certify import accepted_limits, instance_tolerance, verdict
from cbalab.models.evaluate import RTOL, Allocation, least_feeding
from cbalab.models.exact_bounds import safe_float, welfare_lagrangian_exact
from cbalab.models.instance import Instance
from cbalab.models.result import SearchFacts
from cbalab.models.types import SolveOptions, Status


def _weightings(inst: Instance, keep: np.ndarray) -> list[Weights]:
    """The greedy's units of cost: weights of (Δ dollars, Δ GPUs, Δ remote IO, Δ rate) per run.

    Always dollars (the brief's criterion).  When G or B can bind, also the
    normalised sum of use/limit over the limits that can bind (Theorem C of
    proofs/autocba_guarantee.md).  When B can bind, also a run that charges
    the raw rate against B: near the cap, remote IO is held at B by forced
    caching, so Δ remote understates what a move uses up.  A limit *can bind*
    when the jobs' largest uses of it among the options that fit alone add up
    to more than it (for the budget, their standalone costs: exact under
    Theorem C's linear feeding, a heuristic otherwise, since the feeding cost
    is not subadditive across datasets, proofs/feeding_cost_concave.md (iv)).
    """
    rows = np.flatnonzero(keep)
    jobs = inst.option_job()[rows]
    cost, _ = standalone_cost(inst)

    def top(values: np.ndarray) -> float:
        best = np.zeros(inst.n_jobs)
        np.maximum.at(best, jobs, values[rows])
        return float(best.sum())

    money = math.isfinite(inst.budget_per_hour) and top(cost) > inst.budget_per_hour
    gpus = inst.gpus is not None and top(inst.option_gpus.astype(float)) > inst.gpus
    io = math.isfinite(inst.bandwidth_gbps) and top(inst.option_io_gbps) > inst.bandwidth_gbps
    w_money = 1.0 / inst.budget_per_hour if money and inst.budget_per_hour > 0 else 0.0
    w_gpus = 1.0 / inst.gpus if gpus and inst.gpus is not None and inst.gpus > 0 else 0.0
    w_io = 1.0 / inst.bandwidth_gbps if io and inst.bandwidth_gbps > 0 else 0.0
    runs = [Weights(1.0, 0.0, 0.0, 0.0)]
    if gpus or io:
        runs.append(Weights(w_money, w_gpus, w_io, 0.0))
    if io and w_io > 0:
        runs.append(Weights(w_money, w_gpus, 0.0, w_io))
    return runs


def _swap_pass(greedy: _Greedy, rounds: int) -> None:
    """Local improvement: drop one job's option when the greedy refilled from there gains more welfare.

    Tries the jobs with the lowest utility per GPU dollar first; each trial is
    a copy of the greedy state, so a failed trial costs nothing.
    """
    chosen = [j for j, o in enumerate(greedy.choice) if o >= 0]
    if not chosen:
        return
    score = sorted(chosen, key=lambda j: greedy.ou[greedy.choice[j]] / max(greedy.og[greedy.choice[j]], 1))
    for j in score[:rounds]:
        trial = greedy.clone()
        trial.drop(j)
        trial.opts[j] = []
        trial.run()
        trial.resync()
        trial.run()
        if trial.welfare > greedy.welfare * (1 + 1e-12) + 1e-12:
            trial.opts[j] = greedy.opts[j]
            greedy.adopt(trial)


def autocba(
    inst: Instance,
    options: SolveOptions = SolveOptions(),
    *,
    group_moves: bool = True,
    best_single: bool = True,
    swaps: int | None = None,
    certify: bool = True,
    enumerate_guesses: bool = True,
    exact: bool = False,
) -> Allocation:
    """Registered method ``autocba`` for the welfare problem P2 (docs/model.md §5); see the module docstring.

    ``group_moves`` and ``best_single`` switch off the two safeguards (the
    counterexamples of proofs/autocba_guarantee.md use that); ``swaps`` is the
    number of drop-and-refill trials of the local-improvement pass (default
    24 up to 100 jobs, else 8; none above 500 jobs); ``enumerate_guesses``
    switches off the partial enumeration and the downgrade pass of
    algorithms/autocba/enumerate.py (Theorem E of proofs/autocba_guarantee.md;
    they run only when at most ``SINGLES_MAX`` options fit alone); ``exact``
    switches on the branch and bound of algorithms/autocba/exact.py, which
    runs up to ``EXACT_JOBS`` jobs when the certificate does not already prove
    the answer, and sets status ``optimal`` only when it finishes within its
    node budget (Theorem F of proofs/autocba_guarantee.md); it is opt-in
    (the registered method keeps the certificate's bound, which the
    tutorials and examples read).  The answer never
    exceeds the budget, G, C or B and never stalls a job; ``bound`` is the
    certificate of :func:`welfare_bound` for C, B and the budget as the referee accepts them (None if
    ``certify`` is False), and the status is ``optimal`` when it meets the welfare within the certification
    tolerance of docs/model.md (8.2).
    """
    inst.require_options()
    inst.require_continuous("the welfare problem is modelled")
    # Half the referee's relative slack, not zero: an option whose caching is forced to leave exactly B remote computes
    # r (1 − (1 − B/r)) = B (1 + 2e-16) and was dropped at zero slack (welfare 0 where OPT = 10).
    keep = fits_alone(inst, _FIT_SLACK, absolute=False)
    best: _Greedy | None = None
    weightings = _weightings(inst, keep)
    if inst.n_jobs > _LARGE:
        weightings = weightings[1:2] or weightings[:1]
    for weights in weightings:
        greedy = _Greedy(inst, keep, weights, group_moves)
        for _ in range(3):
            greedy.run()
            if not greedy.resync():
                break
        trials = swaps if swaps is not None else (24 if inst.n_jobs <= 100 else 8)
        if trials and inst.n_jobs <= _LARGE // 4:
            _swap_pass(greedy, trials)
        if best is None or greedy.welfare > best.welfare:
            best = greedy
    assert best is not None
    if enumerate_guesses:
        guarantee_run = weightings[1] if len(weightings) > 1 else weightings[0]
        better = partial_enumeration(inst, keep, guarantee_run, group_moves, best.welfare)
        if better is not None:
            best = better
        if int(keep.sum()) <= SINGLES_MAX:
            downgrade_pass(best)
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    rates = best.rates.copy()
    for j, o in enumerate(best.choice):
        if o >= 0:
            gpus[j] = best.og[o]
    welfare = float(sum(best.ou[o] for o in best.choice if o >= 0))
    alloc = _fed(inst, gpus, rates, best.feeder)
    source = "greedy"
    if best_single and keep.any():
        rows = np.flatnonzero(keep)
        o = int(rows[np.argmax(inst.option_utility[rows])])
        if inst.option_utility[o] > welfare:
            j = int(inst.option_job()[o])
            g1 = np.zeros(inst.n_jobs, dtype=np.int64)
            r1 = np.zeros(inst.n_jobs)
            g1[j], r1[j] = inst.option_gpus[o], inst.option_io_gbps[o]
            single = _fed(inst, g1, r1, None)
            if single is not None:
                alloc, welfare, source = single, float(inst.option_utility[o]), "best single job"
    if alloc is None:
        alloc = Allocation(np.zeros(inst.n_jobs, np.int64), np.zeros(inst.n_datasets), np.zeros(inst.n_jobs))
        welfare = 0.0
    alloc.objective, alloc.facts = welfare, SearchFacts(source)
    if certify:
        accepted = accepted_limits(inst)  # every allocation the referee accepts, not only the limits as written
        cert = welfare_bound(accepted)
        bound = _safe_bound(accepted, cert)
        proven = _proven(inst, welfare, bound)
        if not proven and exact and inst.n_jobs <= EXACT_JOBS:
            found = exact_search(inst, welfare, np.asarray(cert.multipliers))
            if found.pick is not None:
                searched = _picked(inst, found.pick)
                if searched is not None:
                    alloc, welfare, source = searched, found.welfare, "exact search"
            if found.proven and welfare >= found.welfare:
                proven = True
                bound = min(bound, welfare + 1e-9 * (1.0 + abs(welfare)))
        alloc.objective, alloc.facts = welfare, SearchFacts(source, cert.multipliers)
        alloc.bound = bound
        if proven:
            alloc.status = Status.OPTIMAL
    return alloc


def _safe_bound(inst: Instance, cert: Certificate) -> float:
    """The certificate's bound, raised to the exact L at its multipliers if it lay below (docs/model.md §8).

    ``welfare_bound`` evaluates L in floating point and adds a relative 1e-9 for rounding; here L is re-derived
    exactly from the data and the multipliers (:func:`cbalab.models.exact_bounds.welfare_lagrangian_exact`), so
    that the bound holds whatever the rounding (Theorem D, proofs/autocba_certificate.md).  A bound that was
    already safe keeps its bits.
    """
    dual = Dual(inst)
    exact = welfare_lagrangian_exact(inst, dual.U, dual.G, dual.R, cert.multipliers)
    return safe_float(cert.bound, exact, lower=False)


def _proven(inst: Instance, welfare: float, bound: float) -> bool:
    """Whether the certificate ``bound`` meets ``welfare`` by the shared rule (models/certify.py, ``verdict``)."""
    tol = instance_tolerance(inst, "welfare", welfare)
    return verdict(welfare, bound, minimise=False, tol=tol, claimed="optimal").status == "optimal"


def _picked(inst: Instance, pick: np.ndarray) -> Allocation | None:
    """The allocation running option row ``pick[j]`` for each job j (−1: none), fed at least cost."""
    gpus = np.zeros(inst.n_jobs, dtype=np.int64)
    rates = np.zeros(inst.n_jobs)
    on = pick >= 0
    gpus[on] = inst.option_gpus[pick[on]]
    rates[on] = inst.option_io_gbps[pick[on]]
    return _fed(inst, gpus, rates, None)


def _fed(inst: Instance, gpus: np.ndarray, rates: np.ndarray, feeder: _Feeder | None) -> Allocation | None:
    """Feed the options at least cost (CBA); fall back to the greedy's tracked feeding; None if neither fits."""
    f = feed(inst, rates, bound=False)
    candidates: list[tuple[np.ndarray, np.ndarray]] = []
    if f.cache_gb is not None and f.bandwidth_gbps is not None:
        candidates.append((f.cache_gb, f.bandwidth_gbps))
    if feeder is not None:
        cache = np.asarray(feeder.c)
        candidates.append((cache, least_feeding(inst, rates, cache)))
    for cache, bw in candidates:
        spend = inst.price_gpu * float(gpus.sum()) + inst.price_cache * float(cache.sum())
        spend += inst.price_bandwidth * float(bw.sum())
        ok = _within(spend, inst.budget_per_hour) and _within(float(bw.sum()), inst.bandwidth_gbps)
        ok = ok and _within(float(cache.sum()), inst.cache_gb)
        ok = ok and (inst.gpus is None or int(gpus.sum()) <= inst.gpus)
        if ok:
            return Allocation(gpus, np.asarray(cache, float), np.asarray(bw, float))
    return None


#: Relative slack of the fits-alone filter (no absolute part): half the referee's RTOL, as :func:`_within` allows.
_FIT_SLACK = 0.5 * RTOL


def _within(value: float, limit: float) -> bool:
    """value ≤ limit with half the referee's slack (models/evaluate.py), so the referee agrees."""
    return value <= limit + 0.5 * RTOL * max(1.0, abs(limit))
