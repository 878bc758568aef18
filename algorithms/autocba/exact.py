"""AutoCBA's exact mode on small instances: branch and bound over the jobs' options (Theorem F).

Depth first over the jobs (largest utility first), each job taking its options that fit alone in
decreasing utility and then none.  A node fixes the first jobs; it is cut when the fixed jobs alone do
not fit (adding jobs never lowers the least feeding cost nor frees G or B, Theorem B (i) of
proofs/feeding_cost_concave.md, so no completion fits either) or when the Lagrangian dual of Theorem D
(proofs/autocba_certificate.md) with the fixed jobs' rows restricted to their choice, at the root's
multipliers, cannot beat the incumbent.  A leaf's options are fed at least cost by CBA (P1 exactly,
proofs/cba_optimality.md) and checked against G and the budget.  When the search finishes within its
node budget, the incumbent is optimal for P2 (docs/model.md §5); otherwise nothing is claimed.
Numpy only, no solver.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cbalab.algorithms.autocba.certificate import Dual
from cbalab.algorithms.cba import feed
from cbalab.models.instance import Instance

#: Run the exact search up to this many jobs (the driver's gate).
EXACT_JOBS = 24
#: Nodes the search may visit before it gives up without a claim (deterministic, not a time limit).
EXACT_NODES = 5_000


@dataclass
class SearchResult:
    """Outcome: ``proven`` if the search finished; ``pick`` (option row per job, −1 none) if it beat the incumbent."""

    proven: bool
    welfare: float
    pick: np.ndarray | None
    nodes: int


class _NodeBudgetError(Exception):
    """The node budget ran out."""


@dataclass
class _State:
    """The search's running state: incumbent, its pick, nodes visited, the fixed jobs' GPUs and utility."""

    best: float
    pick: np.ndarray | None = None
    nodes: int = 0
    gpus: float = 0.0
    utility: float = 0.0


def exact_search(
    inst: Instance, incumbent: float, multipliers: np.ndarray, node_limit: int = EXACT_NODES
) -> SearchResult:
    """Branch and bound for P2 from ``incumbent`` (a welfare some feasible answer reaches); see the module docstring.

    ``multipliers`` = (μ, ν, λ, β) ≥ 0 of Theorem D, used at every node (any non-negative ones give a valid
    bound; the certificate's are the root's best).  A subtree is cut when its bound, raised by a relative
    1e-9 for floating point, is at most the incumbent, so a finished search proves that no answer exceeds
    the returned welfare.
    """
    dual = Dual(inst)
    table = dual.U.copy()
    n = inst.n_jobs
    rows = inst.option_job()
    col_row = np.full(table.shape, -1, dtype=np.int64)
    col_row[rows, np.arange(rows.size) - inst.option_ptr[rows] + 1] = np.arange(rows.size)
    order = np.argsort(-table.max(axis=1), kind="stable")
    choices = []
    for j in range(n):
        cols = np.flatnonzero(np.isfinite(table[j, 1:])) + 1
        choices.append([*cols[np.argsort(-table[j, cols], kind="stable")].tolist(), 0])
    x = np.asarray(multipliers, dtype=float)
    zero = np.zeros(4)
    rates = np.zeros(n)
    pick = np.full(n, -1, dtype=np.int64)
    G = math.inf if inst.gpus is None else float(inst.gpus)
    state = _State(incumbent)

    def fits() -> bool:
        if state.gpus > G:
            return False
        f = feed(inst, rates, bound=False)
        if f.cache_gb is None:
            return False
        spend = inst.price_gpu * state.gpus + f.io_cost
        return spend <= inst.budget_per_hour * (1 + 1e-12)

    def bound() -> float:
        value = min(dual.value(x, table), dual.value(zero, table))
        return value + 1e-9 * (1.0 + abs(value))

    def visit(depth: int) -> None:
        state.nodes += 1
        if state.nodes > node_limit:
            raise _NodeBudgetError
        if depth == n:
            if state.utility > state.best:
                state.best, state.pick = state.utility, pick.copy()
            return
        j = int(order[depth])
        saved = table[j].copy()
        for c in choices[j]:
            table[j] = -np.inf
            table[j, c] = saved[c]
            o = int(col_row[j, c]) if c > 0 else -1
            if o >= 0:
                pick[j], rates[j] = o, inst.option_io_gbps[o]
                state.gpus += float(inst.option_gpus[o])
                state.utility += float(inst.option_utility[o])
            if (o < 0 or fits()) and bound() > state.best:
                visit(depth + 1)
            if o >= 0:
                pick[j], rates[j] = -1, 0.0
                state.gpus -= float(inst.option_gpus[o])
                state.utility -= float(inst.option_utility[o])
        table[j] = saved

    try:
        if bound() > incumbent:
            visit(0)
        proven = True
    except _NodeBudgetError:
        proven = False
    return SearchResult(proven, state.best, state.pick, state.nodes)
