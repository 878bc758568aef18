"""AutoCBA's partial enumeration: fix one or two jobs' options, run the greedy on the rest (Theorem E).

The classic route from the greedy's ½ towards 1 − ε (Sahni, J. ACM 1975, for one knapsack): guess the
k jobs of largest utility in an optimum and their options, forbid the other jobs every option worth more
than the least of the guessed ones, and let the greedy fill what is left.  Under the linear feeding of
Theorem C the loss is then at most the utility of the k-th largest job of the optimum instead of that of
the best option anywhere (proofs/autocba_guarantee.md, Theorem E).  With caching the feeding cost is
concave and the enumeration is a heuristic there; the cache variant fixes one dataset cached to its
largest hit ratio before the greedy starts, so that jobs which only pay off together on a cached
dataset are priced as such from the first move.  A final downgrade pass (:func:`downgrade_pass`) holds
one chosen job a notch lower and lets the greedy spend the money that frees (1-for-2 exchanges).

Every enumerated run is a complete greedy (moves, CBA pass, resumption) whose answer the driver feeds at
least cost and the referee re-scores; the driver keeps the best.  Cost: one greedy per guess, so the
enumeration is gated by the number of options (:data:`SINGLES_MAX`, :data:`PAIRS_MAX`) and does not run at
cluster scale.
"""

from __future__ import annotations

import numpy as np

from cbalab.algorithms.autocba.greedy import Weights, _Greedy
from cbalab.models.instance import Instance

#: Fix every single (job, option) when at most this many options fit alone (k = 1 of Theorem E).
SINGLES_MAX = 256
#: Fix every pair of (job, option) of different jobs when at most this many options fit alone (k = 2).
PAIRS_MAX = 24
#: Fix each of the largest datasets (by the largest demand its jobs can put on it) cached, when k = 1 runs.
CACHE_TOP = 4
#: Restarts of :func:`downgrade_pass` after an adopted exchange.
DOWNGRADE_ROUNDS = 8


def fixed_greedy(
    inst: Instance,
    keep: np.ndarray,
    weights: Weights,
    group_moves: bool,
    fixed: list[tuple[int, int]],
    *,
    cached: int = -1,
    capped: bool = True,
) -> _Greedy | None:
    """The greedy with the jobs of ``fixed`` held at their options and every other option worth at most theirs.

    ``fixed`` is [(job, option row)] of distinct jobs; the other jobs keep only the options of ``keep`` whose
    utility is at most the least fixed utility (the residual problem of Theorem E).  With ``cached`` = k ≥ 0
    and no fixed jobs, dataset k starts cached to its largest hit ratio min(1, C/d_k) and its cache is not
    displaced by the greedy's moves (the final CBA feeding may still trim it).  None when the fixed options do
    not fit together.
    """
    mask = keep
    if fixed and capped:
        cap = min(float(inst.option_utility[o]) for _, o in fixed)
        mask = keep & (inst.option_utility <= cap)
    greedy = _Greedy(inst, mask, weights, group_moves)
    if cached >= 0:
        cache = np.zeros(inst.n_datasets)
        cache[cached] = min(float(inst.dataset_size_gb[cached]), inst.cache_gb)
        if inst.price_cache * cache[cached] > greedy.budget:
            return None
        greedy.feeder.reset(cache, np.zeros(inst.n_datasets))
        greedy.feeder.pinned = {cached}
    for j, o in fixed:
        greedy.opts[j] = [o]
        cand = greedy.job_candidate(j)
        if cand is None or cand.moves != [(j, o)]:
            return None
        greedy.apply(cand)
        greedy.opts[j] = []
    for _ in range(3):
        greedy.run()
        if not greedy.resync():
            break
    return greedy


def partial_enumeration(
    inst: Instance, keep: np.ndarray, weights: Weights, group_moves: bool, incumbent: float
) -> _Greedy | None:
    """The best greedy over the guesses of Theorem E (k = 1 and, on the smallest instances, k = 2) and the cache fixes.

    Returns the best run whose welfare beats ``incumbent``, or None.  The guesses are the options that fit
    alone: every one of them for k = 1 (when there are at most :data:`SINGLES_MAX`), both capped (Theorem E)
    and uncapped (the others keep every option: a heuristic that finds exchanges the cap forbids), every pair
    of them on different jobs for k = 2 (at most :data:`PAIRS_MAX`), and each of the :data:`CACHE_TOP`
    datasets of largest potential demand fixed cached.
    """
    rows = np.flatnonzero(keep)
    if rows.size > SINGLES_MAX:
        return None
    jobs = inst.option_job()
    best: _Greedy | None = None

    def consider(g: _Greedy | None) -> None:
        nonlocal best, incumbent
        if g is not None and g.welfare > incumbent * (1 + 1e-12) + 1e-12:
            best, incumbent = g, g.welfare

    guesses: list[list[tuple[int, int]]] = [[(int(jobs[o]), int(o))] for o in rows]
    if rows.size <= PAIRS_MAX:
        guesses += [
            [(int(jobs[a]), int(a)), (int(jobs[b]), int(b))]
            for i, a in enumerate(rows)
            for b in rows[i + 1 :]
            if jobs[a] != jobs[b]
        ]
    for fixed in guesses:
        consider(fixed_greedy(inst, keep, weights, group_moves, fixed))
        if len(fixed) == 1:
            consider(fixed_greedy(inst, keep, weights, group_moves, fixed, capped=False))
    if inst.cache_gb > 0:
        peak = np.zeros(inst.n_jobs)
        np.maximum.at(peak, jobs[rows], inst.option_io_gbps[rows])
        demand = np.bincount(inst.job_dataset, weights=peak, minlength=inst.n_datasets)
        for k in np.argsort(-demand, kind="stable")[:CACHE_TOP]:
            if demand[k] > 0:
                consider(fixed_greedy(inst, keep, weights, group_moves, [], cached=int(k)))
    return best


def hold(greedy: _Greedy, j: int, o: int) -> bool:
    """Put job j at option ``o`` (−1: none) and freeze it there; False when that does not fit the state."""
    greedy.drop(j)
    if greedy.choice[j] >= 0:
        return False
    greedy.opts[j] = [o] if o >= 0 else []
    if o >= 0:
        cand = greedy.job_candidate(j)
        if cand is None or cand.moves != [(j, o)]:
            return False
        greedy.apply(cand)
        greedy.opts[j] = []
    return True


def downgrade_pass(greedy: _Greedy, rounds: int = DOWNGRADE_ROUNDS) -> None:
    """Local search: hold one chosen job at a lower option (or none), let the greedy spend what that frees.

    The greedy stops when no single move fits the money left; a job a notch lower can pay for two
    upgrades elsewhere that the greedy's order never reached (a 1-for-2 exchange).  Each trial works on
    a copy (:meth:`_Greedy.clone`), is adopted only if the welfare rises, and the pass restarts after an
    adoption, at most ``rounds`` times.
    """
    ou = greedy.ou
    for _ in range(rounds):
        adopted = False
        for j in [j for j, o in enumerate(greedy.choice) if o >= 0]:
            current = greedy.choice[j]
            lower = [o for o in greedy.opts[j] if ou[o] < ou[current]]
            for o in [*lower, -1]:
                trial = greedy.clone()
                if not hold(trial, j, o):
                    continue
                for _ in range(2):
                    trial.run()
                    if not trial.resync():
                        break
                if trial.welfare > greedy.welfare * (1 + 1e-12) + 1e-12:
                    trial.opts[j] = greedy.opts[j]
                    greedy.adopt(trial)
                    adopted = True
                    break
            if adopted:
                break
        if not adopted:
            return
