"""One statement per formulation (models/milp/statement.py): the model read is the model solved.

Two properties: the Pyomo emission holds the numbers of the compiled matrix, row by row, for every
formulation (P1 with its integer variants, P2, P2s, P3); and a group of rows edited in its one row function
reaches both the Pyomo model and the matrix HiGHS solves, whose optimum becomes the optimum of the instance
with the edited limit.  proofs/welfare_milp_forms.md (the forms of Theorem F1) and proofs/dynamic_lower_bound.md
(the certified bound of Lemma 5) cite the first for "the Pyomo model and the matrix are one statement".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.repn import generate_standard_repn

import cbalab
from cbalab.experiments.simulate import SimConfig, replay_schedule, simulate
from cbalab.experiments.workload import assign, generate_cost, generate_trace, generate_welfare
from cbalab.models.evaluate import evaluate
from cbalab.models.instance import Instance
from cbalab.models.milp import cost, dynamic, welfare
from cbalab.models.milp.statement import Group, Statement
from cbalab.models.solve import cost_milp, welfare_milp


def _schedule(jobs: int, seed: int) -> dynamic.Schedule:
    w = assign(generate_trace(jobs, seed), seed, skew=1.0, n_datasets=3)
    res = simulate(w, SimConfig(gpus=16, cache_gb=50.0))
    return replay_schedule(w, res.jobs)


def _statements() -> list[tuple[str, Statement]]:
    """Every formulation on a small instance: P1 in each cache variant and with tiers, P2, P2s, P3 with and
    without warm-up, and P3 under blocks."""
    base = generate_cost(9, 3, 0, cache_fraction=0.4)
    p1 = [
        ("P1", base),
        ("P1 dataset", base.replace(cache_granularity="dataset")),
        ("P1 block+tiers", base.replace(cache_granularity="block", block_gb=7.0, bandwidth_step_gbps=0.5)),
    ]
    inst = generate_welfare(6, 2, seed=3)
    sched = _schedule(12, 4)
    cluster = dynamic.Cluster(cache_gb=50.0)
    return [
        *((name, cost.cost_statement(i)) for name, i in p1),
        ("P2", welfare.welfare_statement(inst)),
        ("P2 without b", welfare.welfare_statement(inst, rows_kept=frozenset())),
        ("P2s", welfare.welfare_statement(inst, stall=True)),
        ("P3", dynamic.p3_statement(sched, cluster)),
        ("P3 instant", dynamic.p3_statement(sched, cluster, warmup=False)),
        ("P3 block", dynamic.p3_statement(sched, replace(cluster, granularity="block", block_gb=9.0))),
    ]


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize(("name", "statement"), _statements(), ids=[n for n, _ in _statements()])
def test_pyomo_emission_is_the_compiled_matrix(name: str, statement: Statement, scaled: bool) -> None:
    """Every row of every group, every column's bounds and integrality and the objective agree between the
    Pyomo model and the matrix (free rows, which state nothing, are the only rows Pyomo leaves out)."""
    a = statement.compile(scaled=scaled)
    m = statement.pyomo(scaled=scaled)
    columns = [v for b in statement.blocks.values() for v in getattr(m, b.name).values()]
    where = {id(v): j for j, v in enumerate(columns)}
    assert len(columns) == a.n_cols
    for j, v in enumerate(columns):
        assert (v.lb if v.lb is not None else -math.inf) == a.col_lo[j]
        assert (v.ub if v.ub is not None else math.inf) == a.col_hi[j]
        assert v.is_integer() == bool(a.integral[j])
    for group in statement.groups:
        span = a.rows[group.name]
        emitted = list(getattr(m, group.name).values())
        rows = [i for i in range(span.start, span.stop) if not (math.isinf(a.row_lo[i]) and math.isinf(a.row_hi[i]))]
        assert len(emitted) == len(rows), group.name
        for con, i in zip(emitted, rows, strict=True):
            repn = generate_standard_repn(con.body)
            got = {where[id(v)]: c for v, c in zip(repn.linear_vars, repn.linear_coefs, strict=True)}
            cut = slice(int(a.start[i]), int(a.start[i + 1]))
            assert got == dict(zip(a.index[cut].tolist(), a.value[cut].tolist(), strict=True)), (group.name, i)
            assert (con.lower if con.has_lb() else -math.inf) == a.row_lo[i]
            assert (con.upper if con.has_ub() else math.inf) == a.row_hi[i]
    repn = generate_standard_repn(m.objective.expr)
    got = {where[id(v)]: c for v, c in zip(repn.linear_vars, repn.linear_coefs, strict=True)}
    assert got == {j: a.cost[j] for j in np.flatnonzero(a.cost)}
    assert repn.constant == pytest.approx(a.offset, rel=1e-15)


@pytest.mark.parametrize(("name", "statement"), _statements(), ids=[n for n, _ in _statements()])
def test_highs_is_given_the_compiled_matrix(name: str, statement: Statement) -> None:
    """What ``Arrays.pass_to`` hands HiGHS is the compiled matrix: the objective (costs and an offset) divided by
    the scale given, every bound with ±inf as HiGHS's infinity, the row-wise entries, the sense and the
    integrality, read back from HiGHS."""
    import highspy

    a = replace(statement.compile(scaled=True), offset=12.0)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    a.pass_to(h, 4.0)
    lp = h.getLp()
    inf = highspy.kHighsInf
    assert (lp.num_col_, lp.num_row_) == (a.n_cols, a.n_rows)
    assert np.array_equal(lp.col_cost_, a.cost / 4.0)
    assert np.array_equal(lp.col_lower_, np.maximum(a.col_lo, -inf))
    assert np.array_equal(lp.col_upper_, np.minimum(a.col_hi, inf))
    assert np.array_equal(lp.row_lower_, np.maximum(a.row_lo, -inf))
    assert np.array_equal(lp.row_upper_, np.minimum(a.row_hi, inf))
    assert lp.offset_ == a.offset / 4.0
    assert (lp.sense_ == highspy.ObjSense.kMaximize) == a.maximize
    integral = [t == highspy.HighsVarType.kInteger for t in lp.integrality_] if lp.integrality_ else [False] * a.n_cols
    assert integral == a.integral.tolist()
    m = lp.a_matrix_
    rowwise = m.format_ == highspy.MatrixFormat.kRowwise  # HiGHS may keep a column-wise copy: the same entries
    got = _dense(m.start_, m.index_, m.value_, (a.n_rows, a.n_cols), rowwise)
    assert np.array_equal(got, _dense(a.start, a.index, a.value, (a.n_rows, a.n_cols), True))


def _dense(
    start: Sequence[int], index: Sequence[int], value: Sequence[float], shape: tuple[int, int], rowwise: bool
) -> np.ndarray:
    """The dense matrix of a compressed one, row-wise or column-wise."""
    out = np.zeros(shape)
    for major in range(len(start) - 1):
        for p in range(int(start[major]), int(start[major + 1])):
            at = (major, int(index[p])) if rowwise else (int(index[p]), major)
            out[at] += value[p]
    return out


def _welfare(inst: Instance, proven: bool = True) -> float:
    """The welfare of the registered welfare ``milp``'s answer, scored by the referee; ``proven``: certified.

    The answer of an edited model is not required to be certified: the certification may see, with its own
    greedy, that the model solved is not the instance's (it did for the halved budget).
    """
    alloc = welfare_milp(inst)
    assert alloc.status == "optimal" or not proven, alloc.reason
    return float(evaluate(inst, alloc, "welfare").welfare)


def _cost(inst: Instance, proven: bool = True) -> float:
    """The cost of the registered cost ``milp``'s answer, scored by the referee; ``proven``: certified."""
    alloc = cost_milp(inst)
    assert alloc.status == "optimal" or not proven, alloc.reason
    return float(evaluate(inst, alloc, "cost").cost_total)


def _tightened(module: object, name: str, factor: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace row function ``name`` of ``module`` by itself with its upper bounds times ``factor``."""
    real = getattr(module, name)

    def edited(*args: object) -> Group:
        g = real(*args)
        return replace(g, rows=g.rows._replace(hi=g.rows.hi * factor))

    monkeypatch.setattr(module, name, edited)


def test_editing_the_budget_group_reaches_the_model_read_and_the_model_solved(monkeypatch: pytest.MonkeyPatch) -> None:
    """P2: the budget row function edited to half the budget; ``build_model`` shows it, the compiled matrix
    has it, and the registered ``milp`` answers with the optimum of the instance whose budget is half."""
    inst = generate_welfare(12, 3, seed=1)
    half = inst.replace(budget_per_hour=inst.budget_per_hour / 2)
    full_optimum = _welfare(inst)
    half_optimum = _welfare(half)
    assert half_optimum < full_optimum - 1e-6  # the edit matters on this instance
    read, solved = cbalab.build_model(inst, "welfare").budget[1].upper, welfare.build_welfare_arrays(inst)
    _tightened(welfare, "budget", 0.5, monkeypatch)
    assert cbalab.build_model(inst, "welfare").budget[1].upper == 0.5 * read
    arrays = welfare.build_welfare_arrays(inst)
    assert arrays.row_hi[arrays.rows["budget"]] == 0.5 * solved.row_hi[solved.rows["budget"]]
    assert _welfare(inst, proven=False) == pytest.approx(half_optimum, rel=1e-7)


def test_editing_the_cache_group_reaches_both_forms_of_p1_and_p3(monkeypatch: pytest.MonkeyPatch) -> None:
    """P1 (the cache row of ``cost``, solved as its Pyomo emission) and P3 (the per-slot cache rows of
    ``dynamic``, solved as its matrix): C halved in the row function gives the optimum of C halved."""
    inst = generate_cost(20, 4, 1, cache_fraction=0.5).replace(cache_granularity="dataset")
    half = inst.replace(cache_gb=inst.cache_gb / 2)
    sched = _schedule(15, 2)
    cluster = dynamic.Cluster(cache_gb=60.0)
    p3_half = dynamic.solve_dynamic(sched, replace(cluster, cache_gb=30.0))
    p1_half, p1_full = _cost(half), _cost(inst)
    assert p1_half > p1_full + 1e-6 and p3_half.cost_io > dynamic.solve_dynamic(sched, cluster).cost_io + 1e-9
    _tightened(cost, "cache_capacity", 0.5, monkeypatch)
    _tightened(dynamic, "cache_capacity", 0.5, monkeypatch)
    assert cbalab.build_model(inst, "cost").cache_capacity[1].upper == pytest.approx(half.cache_gb, rel=1e-12)
    assert _cost(inst, proven=False) == pytest.approx(p1_half, rel=1e-9)
    assert pyo.value(dynamic.build_dynamic_model(sched, cluster).cache_capacity[1].upper) == pytest.approx(30.0)
    out = dynamic.solve_dynamic(sched, cluster)
    assert out.status == p3_half.status == "optimal"
    assert out.cost_io == pytest.approx(p3_half.cost_io, rel=1e-7)
