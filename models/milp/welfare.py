"""The welfare problem P2 (spec/MODEL.md §5) as a Pyomo MILP, exact for any utility table.

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

``relax=True`` makes y continuous in [0, 1]: the LP relaxation, whose optimum
is an upper bound on the welfare.  (McCormick is then no longer exact, and
the relaxation is correspondingly weaker; it is still a valid bound because
every integer solution with w = y h satisfies it.)

Only continuous caching without bandwidth tiers is modelled: P2 in MODEL.md §5
is stated for continuous c and b, and every P2 method in cbalab (AutoCBA, the
baselines, the brute force of the tests) feeds through the continuous P1
closed form.  Other variants are rejected with an InstanceError rather than
solved under a model nobody else checks.
"""

from __future__ import annotations

import math

import pyomo.environ as pyo

from cbalab.models.instance import Instance


def build_welfare_model(inst: Instance, *, relax: bool = False) -> pyo.ConcreteModel:
    """P2 of MODEL.md §5 for ``inst`` (every job needs options); ``relax`` gives the LP relaxation."""
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
    m.cache_capacity = pyo.Constraint(expr=pyo.quicksum(m.cache[k] for k in m.K) <= float(inst.cache_gb))
    if math.isfinite(inst.bandwidth_gbps):
        m.bandwidth_capacity = pyo.Constraint(expr=pyo.quicksum(m.bw[j] for j in m.J) <= float(inst.bandwidth_gbps))


def define_budget(m: pyo.ConcreteModel, inst: Instance) -> None:
    """p_g Σ g + p_c Σ c + p_b Σ b ≤ Budget (§5); left out when the budget is unlimited."""
    m.spend = pyo.Expression(
        expr=inst.price_gpu * m.gpus_used
        + inst.price_cache * pyo.quicksum(m.cache[k] for k in m.K)
        + inst.price_bandwidth * pyo.quicksum(m.bw[j] for j in m.J)
    )
    if math.isfinite(inst.budget_per_hour):
        m.budget = pyo.Constraint(expr=m.spend <= float(inst.budget_per_hour))


def define_welfare(m: pyo.ConcreteModel, inst: Instance) -> None:
    """Maximise the social welfare Σ_j U_j(g_j) = Σ_o U_o y_o (§5)."""
    u = inst.option_utility
    m.welfare = pyo.Objective(expr=pyo.quicksum(float(u[o]) * m.y[o] for o in m.O), sense=pyo.maximize)
