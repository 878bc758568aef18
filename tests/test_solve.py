"""HiGHS behind the exact methods (models/solve.py): magnitudes it cannot represent, its false optima, the time limit.

Regression tests of an honest ``optimal`` at every magnitude (refused by name, caught by the certification and
solved again, or downgraded) and of ``--time-limit`` covering the build of the model.
The certification itself is tests/test_certify.py's.
"""

from __future__ import annotations

import time

import pytest
from hostile import doc, set_field

from cbalab.algorithms import registry
from cbalab.models import solve as solve_module
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.instance import Instance, InstanceError, build, from_dict
from cbalab.models.milp.welfare import build_welfare_arrays
from cbalab.models.solve import Budget, cost_milp, solve_welfare, welfare_milp
from cbalab.models.types import SolveOptions


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("jobs[0].io_gbps", 1e15, "jobs[0].io_gbps"),
        ("datasets[0].size_gb", 1e15, "datasets[0].size_gb"),
        ("prices.bandwidth_gbps_per_hour", 1e308, "prices.bandwidth_gbps_per_hour"),
    ],
)
@pytest.mark.parametrize("method", ["lp", "milp"])
def test_regression_exact_methods_refuse_magnitudes_highs_cannot_represent(
    method: str, path: str, value: float, field: str
) -> None:
    """lp and milp said ``optimal`` at 9.0e14 where the optimum is 5.32e14; now ``error`` naming the field; cba answers.

    The decision for p_b = 1e308: HiGHS takes costs of 1e20 and more as infinite, so the exact methods
    refuse it by name (models/solve.py, ``beyond_highs``) while CBA, which needs no solver, answers.
    """
    d = doc()
    set_field(d, path, value)
    d["cluster"]["bandwidth_gbps"] = None
    inst = from_dict(d)
    result, _ = registry.run(inst, "cost", method)
    assert result["status"] == "error" and result["reason"].startswith(field)
    fast, ev = registry.run(inst, "cost", "cba")
    assert fast["status"] == "optimal" and ev is not None and ev.feasible


def _dear_cache(dataset: int, size_gb: float) -> Instance:
    """The base document with cache at 400 $/GB-h and dataset ``dataset`` of ``size_gb``: a badly scaled budget row."""
    d = doc()
    d["prices"]["cache_gb_per_hour"] = 400.0
    d["datasets"][dataset]["size_gb"] = size_gb
    return from_dict(d)


def _single(inst: Instance, options: SolveOptions) -> Allocation:
    """The single welfare MILP (``sliced=False``, no GPU-count slices), the method models/solve.py's _exact checks."""
    return solve_welfare(inst, relax=False, options=options, sliced=False)


def test_regression_false_optimum_of_presolve_is_caught_and_solved_again() -> None:
    """HiGHS 1.15.1's presolve reduced this 31-row welfare MILP to an empty one, "optimal" at 0 (optimum 54).

    Found by tests/test_fuzz.py (cache price 400 $/GB-h, a 160,000 GB dataset) on the single MILP
    (``sliced=False``; the GPU-count slices of Theorem F4 do not meet the bug).  The certification's simple
    allocation (one job alone) beats the claimed bound, so the MILP is solved again without presolve.
    """
    inst = _dear_cache(1, 160000.0)
    raw = _single(inst, SolveOptions())
    # HiGHS's 0, raised by its pruning tolerance of 1e-6 of the objective's scale (Theorem F4 (v)): no bound on 54
    assert raw.certificate.claimed == "optimal" and raw.certificate.bound is not None
    assert raw.certificate.bound <= 1e-6 * build_welfare_arrays(inst).objective_scale
    assert raw.status == "feasible"  # refused by the certification step
    checked = solve_module._exact(inst, "welfare", SolveOptions(), _single)
    assert checked.status == "optimal" and evaluate(inst, checked, "welfare").welfare == pytest.approx(54.0, rel=1e-6)
    assert "solved again without HiGHS's presolve" in checked.reason
    result, _ = registry.run(inst, "welfare", "milp")
    assert result["status"] == "optimal" and result["objective"] == pytest.approx(54.0, rel=1e-6)
    auto, _ = registry.run(inst, "welfare", "autocba")
    assert auto["objective"] <= result["bound"] + 1e-9


def test_regression_false_optimum_without_presolve_is_downgraded() -> None:
    """With a 8e8 GB dataset at 400 $/GB-h (budget-row coefficient 3.2e11) the single MILP claims 40, or 31
    without presolve, where 54 fits: the greedy no-cache witness beats the bound, so the answer is ``feasible``,
    no bound.  The GPU-count slices of the registered ``milp`` (Theorem F4) prove 54, which the referee scores."""
    inst = _dear_cache(2, 8e8)
    checked = solve_module._exact(inst, "welfare", SolveOptions(), _single)
    assert checked.status == "feasible" and checked.bound is None
    assert "greedy choice of 3 jobs without cache scores 54" in checked.reason
    assert "datasets[2].size_gb = 8e+08" in checked.reason
    result, _ = registry.run(inst, "welfare", "milp")
    assert result["status"] == "optimal" and result["welfare"] == pytest.approx(54.0, rel=1e-9)


@pytest.mark.parametrize("rate", [1e12, 1e14, 9.9e14])
@pytest.mark.parametrize("method", ["lp", "milp"])
def test_regression_below_the_limit_optimal_always_agrees_with_cba(method: str, rate: float) -> None:
    """Below HiGHS's large-matrix-value an exact answer is either ``optimal`` at CBA's cost or says why it is not.

    (At 9.9e14 HiGHS itself stops with status "unknown" on this instance: ``feasible`` with that reason.)
    """
    d = doc()
    d["jobs"][0]["io_gbps"] = rate
    d["cluster"]["bandwidth_gbps"] = None
    inst = from_dict(d)
    exact, _ = registry.run(inst, "cost", method)
    fast, _ = registry.run(inst, "cost", "cba")
    assert fast["status"] == "optimal"
    assert exact["status"] in ("optimal", "feasible")
    if exact["status"] == "optimal":
        assert exact["objective"] == pytest.approx(fast["objective"], rel=1e-9)
        assert exact["bound"] == pytest.approx(fast["objective"], rel=1e-6)
    else:
        assert exact["reason"]
        assert exact["bound"] is None or exact["bound"] <= fast["objective"] * (1 + 1e-9)


def test_regression_the_build_counts_against_the_time_limit() -> None:
    """A budget that ran out while the model was built: HiGHS is not started, the answer is ``time_limit``."""
    inst = from_dict(doc())
    for solve, problem in ((cost_milp, "cost"), (welfare_milp, "welfare")):
        spent = Budget(time_limit=1.0, started=time.perf_counter() - 5.0)
        alloc = solve(inst, spent)
        assert alloc.status == "time_limit" and not alloc.has_allocation, problem
        assert "ran out building the" in alloc.reason  # the Pyomo model (cost) or the array model (welfare)


@pytest.mark.parametrize("problem", ["cost", "welfare"])
@pytest.mark.parametrize("method", ["lp", "milp"])
def test_regression_an_instance_without_jobs_is_answered_not_crashed(problem: str, method: str) -> None:
    """Found by the fuzz test: ``"jobs": []`` made the welfare MILP's capacity row a constant (a Pyomo error, exit 1).

    The empty allocation is the only one: ``optimal`` at welfare 0 / the cost of nothing.
    """
    d = doc()
    d["jobs"] = []
    result, ev = registry.run(from_dict(d), problem, method)
    assert result["status"] == "optimal" and ev is not None and ev.feasible
    assert result["objective"] == 0.0 and result["bound"] == 0.0


def test_regression_the_lp_fills_a_dataset_highs_left_short_under_a_zero_cap() -> None:
    """The one-commit rerun of optimality: on this drawn instance (B = 0, so every read dataset must be whole)
    HiGHS's LP leaves one dataset a relative 7.5e-8 short, whose least feeding needs 7.5e-9 GB/s against B = 0;
    ``solve_cost``'s top-up (models/solve.py ``_cover_cap``) fills it, so the referee accepts the LP's
    ``optimal`` answer and it costs what CBA's (Theorem 1) does."""
    from cbalab.algorithms.cba import cba
    from cbalab.experiments.runs.optimality import continuous_instance
    from cbalab.models.solve import cost_lp

    inst, drawn = continuous_instance(874085752)
    assert inst.bandwidth_gbps == 0.0 and drawn["bandwidth_mode"] == "infeasible"
    lp = cost_lp(inst, SolveOptions())
    ev = evaluate(inst, lp, "cost")
    assert lp.status == "optimal" and ev.feasible, ev.violations
    best = evaluate(inst, cba(inst, SolveOptions()), "cost").cost_total
    assert abs(ev.cost_total - best) <= 1e-9 * best


def test_an_lp_highs_calls_optimal_without_a_feasible_point_is_an_error_not_an_optimum() -> None:
    """P1 with dataset sizes from 1e-3 to 1e5 GB and rates from 0 to 1e3 GB/s (an example Hypothesis found for
    Theorem 1's test): HiGHS 1.15 reports its LP optimal with no feasible primal point.  The exact method must
    then claim nothing (``error``), never ``optimal`` without an allocation; were HiGHS to solve it, the answer
    must carry an allocation the referee scores and a bound."""
    import numpy as np

    inst = Instance(
        gpus=0,
        cache_gb=156.52813451903492,
        bandwidth_gbps=935.232758373912,
        price_gpu=0.0,
        price_cache=1e-4,
        price_bandwidth=0.0,
        dataset_ids=tuple(f"d{k}" for k in range(6)),
        dataset_size_gb=np.array([1e-3, 1e5, 5.62341325e4, 147.0, 1e-3, 147.0]),
        job_ids=tuple(f"j{j}" for j in range(6)),
        job_dataset=np.array([3, 0, 3, 0, 5, 1]),
        job_gpus=np.zeros(6, dtype=np.int64),
        job_io_gbps=np.array([1e-3, 0.0, 1e3, 0.0, 1e3, 5e-2]),
        option_ptr=np.zeros(7, dtype=np.int64),
        option_gpus=np.zeros(0, dtype=np.int64),
        option_io_gbps=np.zeros(0),
        option_utility=np.zeros(0),
    )
    alloc = cost_milp(inst)
    if alloc.status == "optimal":
        assert alloc.has_allocation and alloc.bound is not None
        assert evaluate(inst, alloc, "cost").feasible
    else:
        assert alloc.status == "error" and not alloc.has_allocation, alloc
        assert alloc.reason and "HiGHS" in alloc.reason


def test_highs_optimal_with_no_feasible_point_is_an_error_whatever_the_instance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The branch itself, on any LP: HiGHS made to report its optimum with no feasible primal point (as it did on
    the instance above) gives ``error`` with its reason, and no allocation, never ``optimal`` without one."""
    import highspy
    import numpy as np

    class NoPoint(highspy.Highs):  # type: ignore[misc]
        def getInfo(self) -> highspy.HighsInfo:  # noqa: N802 (HiGHS's name, overridden)
            info = super().getInfo()
            info.primal_solution_status = 0  # kSolutionStatusNone
            return info

    monkeypatch.setattr(solve_module.highspy, "Highs", NoPoint)
    inst = build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([1.0]),
        cache_gb=5.0,
        prices=(1.0, 0.01, 1.0),
    )
    alloc = cost_milp(inst)
    assert alloc.status == "error" and not alloc.has_allocation
    assert alloc.reason == "HiGHS reported optimal without a feasible solution: nothing is proven"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("time_limit", 0.0),
        ("time_limit", -1.0),
        ("time_limit", float("nan")),
        ("time_limit", float("inf")),
        ("mip_gap", float("nan")),
        ("mip_gap", -1.0),
        ("threads", 0),
        ("threads", 1.5),
        ("threads", True),
    ],
)
def test_solve_options_no_method_could_honour_are_refused_by_name(field: str, value: object) -> None:
    """A time limit of 0, -1 or NaN gave ``time_limit`` answers ("the time limit of nan s ran out"), a NaN gap let
    the exact method still say ``optimal``, and 0 or 1.5 threads passed silently: every one is an InstanceError
    naming the field, through the options and through the API's ``solve``."""
    from cbalab import api
    from cbalab.experiments.workload import generate_cost

    with pytest.raises(InstanceError, match=f"^{field}: "):
        SolveOptions(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(InstanceError, match=f"^{field}: "):
        api.solve(generate_cost(5, 2, 0), "milp", **{field: value})  # type: ignore[arg-type]
