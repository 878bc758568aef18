"""The option-table library (models/options.py) and the welfare generator (experiments.workload.generate_welfare)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cbalab.cli import main
from cbalab.experiments.workload import DEFAULT_PRICES, generate_welfare
from cbalab.models.evaluate import Allocation, evaluate
from cbalab.models.instance import InstanceError, build, load, loads
from cbalab.models.options import (
    SHAPES,
    OptionTable,
    Utility,
    amdahl_throughput,
    option_table,
    stack,
    table_throughput,
)

GPUS = (1, 2, 4, 8)


@given(t1=st.floats(1.0, 1e5), s=st.floats(0.0, 1.0))
def test_amdahl_is_increasing_and_concave_in_gpus(t1: float, s: float) -> None:
    """Amdahl's T(g) = T(1)/(s + (1 − s)/g): T(1) = T(1), non-decreasing, gains per GPU non-increasing."""
    g = np.arange(1, 17)
    t = amdahl_throughput(g, t1, s)
    assert t[0] == pytest.approx(t1)
    assert np.all(np.diff(t) >= -1e-9 * t1)
    slopes = np.diff(t)
    assert np.all(np.diff(slopes) <= 1e-9 * t1)


def test_amdahl_limits_linear_and_flat() -> None:
    """Serial fraction 0 scales linearly; serial fraction 1 does not scale at all."""
    assert amdahl_throughput(GPUS, 100.0, 0.0) == pytest.approx([100, 200, 400, 800])
    assert amdahl_throughput(GPUS, 100.0, 1.0) == pytest.approx([100, 100, 100, 100])


def test_table_throughput_selects_sorts_and_names_missing_counts() -> None:
    """A measured table is read as is (non-monotone allowed), sorted by g; an unmeasured count is an error."""
    table = {8: 700.0, 1: 100.0, 4: 390.0, 2: 150.0, 16: 650.0}
    g, t = table_throughput(table)
    assert g.tolist() == [1, 2, 4, 8, 16]
    assert t.tolist() == [100.0, 150.0, 390.0, 700.0, 650.0]
    g, t = table_throughput(table, gpus=[4, 1])
    assert g.tolist() == [1, 4] and t.tolist() == [100.0, 390.0]
    with pytest.raises(InstanceError, match=r"options\.gpus"):
        table_throughput(table, gpus=[3])
    with pytest.raises(InstanceError, match=r"options\.throughput\[2\]"):
        table_throughput({1: 10.0, 2: -1.0})


def test_option_table_rates_are_throughput_times_sample_size() -> None:
    """r_j(g) = throughput(g) × mean sample size (docs/model.md §2), rows sorted by g, U from the utility."""
    t = option_table([4, 1, 2], [400.0, 100.0, 200.0], 1e-4, Utility("linear", weight=3.0))
    assert t.gpus.tolist() == [1, 2, 4]
    assert t.io_gbps == pytest.approx([0.01, 0.02, 0.04])
    assert t.utility == pytest.approx([3.0, 6.0, 12.0])


@pytest.mark.parametrize("shape", ["linear", "log", "sqrt", "alpha"])
@given(weight=st.floats(0.01, 100.0), alpha=st.floats(0.05, 5.0))
def test_monotone_shapes_start_at_zero_grow_and_concave_ones_are_concave(
    shape: str, weight: float, alpha: float
) -> None:
    """U(0) = 0, U non-decreasing in throughput; log, sqrt and α-fair are concave, linear is linear."""
    u = Utility(shape, weight=weight, alpha=alpha)
    x = np.linspace(0.0, 20.0, 81)
    vals = u(x, 1.0)
    assert vals[0] == 0.0
    assert np.all(np.diff(vals) >= -1e-12 * weight)
    second = np.diff(vals, 2)
    if shape == "linear":
        assert np.allclose(second, 0.0, atol=1e-9 * weight)
    else:
        assert np.all(second <= 1e-9 * weight)


def test_alpha_one_is_log_and_sqrt_matches_its_formula() -> None:
    """α-fair at α = 1 is log(1 + x); the square root is √x."""
    x = np.array([0.0, 0.5, 1.0, 3.0])
    assert Utility("alpha", alpha=1.0)(x, 1.0) == pytest.approx(np.log1p(x))
    assert Utility("sqrt", weight=2.0)(x * 10, 10.0) == pytest.approx(2.0 * np.sqrt(x))


def test_sigmoid_is_not_concave_and_is_accepted_everywhere() -> None:
    """The sigmoid is convex below its midpoint (non-concave), starts at 0, and builds and scores like any table."""
    u = Utility("sigmoid", weight=5.0, steepness=3.0, midpoint=2.0)
    x = np.linspace(0.0, 4.0, 41)
    vals = u(x, 1.0)
    assert vals[0] == pytest.approx(0.0, abs=1e-12)
    assert np.any(np.diff(vals, 2) > 1e-6)
    assert np.all(np.diff(vals) >= 0)
    tables = [option_table(GPUS, amdahl_throughput(GPUS, 100.0, 0.1), 1e-4, u) for _ in range(2)]
    inst = build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0, 0]),
        cache_gb=5.0,
        prices=DEFAULT_PRICES,
        options=stack(tables),
    )
    ev = evaluate(inst, Allocation(np.array([4, 0]), np.zeros(1), np.array([1.0, 0.0])), "welfare")
    assert ev.feasible
    assert ev.welfare == pytest.approx(tables[0].utility[2])


@given(
    remaining=st.floats(1e3, 1e9),
    deadline_h=st.floats(0.1, 100.0),
    weight=st.floats(0.1, 50.0),
)
def test_deadline_step_pays_exactly_when_the_remaining_work_finishes_in_time(
    remaining: float, deadline_h: float, weight: float
) -> None:
    """Deadline utility: weight if remaining_samples / throughput(g) ≤ deadline, else 0 (docs/model.md §5)."""
    tput = amdahl_throughput(GPUS, 50.0, 0.05)
    u = Utility("deadline", weight=weight, remaining_samples=remaining, deadline_h=deadline_h)(tput, float(tput[0]))
    meets = remaining / tput / 3600.0 <= deadline_h
    assert u.tolist() == [weight if m else 0.0 for m in meets]


def test_deadline_boundary_and_step_position() -> None:
    """Finishing exactly at the deadline counts; the step sits at the first option fast enough."""
    tput = np.array([100.0, 200.0, 400.0])
    u = Utility("deadline", weight=7.0, remaining_samples=200.0 * 3600.0, deadline_h=1.0)
    assert u(tput, 100.0).tolist() == [0.0, 7.0, 7.0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"shape": "cubic"}, "utility.shape"),
        ({"weight": -1.0}, "utility.weight"),
        ({"shape": "deadline"}, "utility.deadline_h"),
        ({"shape": "deadline", "remaining_samples": 10.0, "deadline_h": 0.0}, "utility.deadline_h"),
        ({"shape": "alpha", "alpha": 0.0}, "utility.alpha"),
        ({"shape": "sigmoid", "steepness": -2.0}, "utility.steepness"),
    ],
)
def test_bad_utility_parameters_name_the_field(kwargs: dict, field: str) -> None:
    """Bad utility parameters raise InstanceError naming the parameter."""
    with pytest.raises(InstanceError, match=field.replace(".", r"\.")):
        Utility(**kwargs)


def test_bad_curve_parameters_name_the_field() -> None:
    """Bad throughput curves and sample sizes raise InstanceError naming the parameter."""
    with pytest.raises(InstanceError, match="serial_fraction"):
        amdahl_throughput(GPUS, 10.0, 1.5)
    with pytest.raises(InstanceError, match=r"options\.gpus"):
        amdahl_throughput([1, 1], 10.0, 0.1)
    with pytest.raises(InstanceError, match="sample_gb"):
        option_table(GPUS, [1.0, 2.0, 3.0, 4.0], 0.0, Utility())
    with pytest.raises(InstanceError, match=r"options\.throughput"):
        option_table(GPUS, [1.0, 2.0], 1e-4, Utility())


def test_stack_is_csr_that_build_accepts_and_json_round_trips() -> None:
    """stack() gives (ptr, gpus, io, utility) in job order; build() accepts it and the JSON form round-trips."""
    a = OptionTable(np.array([1, 2]), np.array([0.1, 0.2]), np.array([1.0, 1.5]))
    b = OptionTable(np.array([4]), np.array([0.3]), np.array([9.0]))
    ptr, g, io, u = stack([a, b])
    assert ptr.tolist() == [0, 2, 3]
    assert g.tolist() == [1, 2, 4] and io.tolist() == [0.1, 0.2, 0.3] and u.tolist() == [1.0, 1.5, 9.0]
    inst = build(
        dataset_size_gb=np.array([1.0]),
        job_dataset=np.array([0, 0]),
        cache_gb=1.0,
        prices=DEFAULT_PRICES,
        options=(ptr, g, io, u),
    )
    again = loads(inst.dumps())
    assert again.option_ptr.tolist() == ptr.tolist()
    assert again.option_utility.tolist() == u.tolist()
    assert stack([])[0].tolist() == [0]


@pytest.mark.parametrize("mix", [*SHAPES, "mixed", {"linear": 1.0, "sigmoid": 3.0}])
def test_generate_welfare_shapes_caps_and_budget(mix: str | dict) -> None:
    """generate_welfare: 4 options per job, U(top) > 0, and G, C, B, budget follow their documented formulas."""
    inst = generate_welfare(30, 6, seed=7, utility_mix=mix, budget_fraction=0.4, bandwidth_fraction=0.3)
    assert np.diff(inst.option_ptr).tolist() == [4] * 30
    assert inst.option_gpus.tolist() == list(GPUS) * 30
    top = inst.option_ptr[1:] - 1
    assert np.all(inst.option_utility[top] > 0)
    assert np.all(np.diff(inst.option_io_gbps.reshape(30, 4), axis=1) > 0)
    top_io = float(inst.option_io_gbps[top].sum())
    p_g, _, p_b = DEFAULT_PRICES
    assert inst.budget_per_hour == pytest.approx(0.4 * (p_g * 8 * 30 + p_b * top_io))
    assert inst.bandwidth_gbps == pytest.approx(0.3 * top_io)
    assert inst.gpus == round(0.5 * 8 * 30)
    assert inst.cache_gb == pytest.approx(0.2 * inst.dataset_size_gb.sum())
    assert not inst.has_fixed.any()


def test_generate_welfare_is_deterministic_and_seeded() -> None:
    """The same seed gives the same instance; another seed a different one; no cap means B = ∞."""
    a, b, c = generate_welfare(20, 4, seed=1), generate_welfare(20, 4, seed=1), generate_welfare(20, 4, seed=2)
    assert a.dumps() == b.dumps()
    assert a.dumps() != c.dumps()
    assert math.isinf(a.bandwidth_gbps)


def test_generate_welfare_rejects_bad_parameters() -> None:
    """Unknown shapes, empty option sets and negative budgets are InstanceErrors naming the parameter."""
    with pytest.raises(InstanceError, match="utility_mix"):
        generate_welfare(3, 1, seed=0, utility_mix="cubic")
    with pytest.raises(InstanceError, match="gpu_options"):
        generate_welfare(3, 1, seed=0, gpu_options=())
    with pytest.raises(InstanceError, match="budget_fraction"):
        generate_welfare(3, 1, seed=0, budget_fraction=-1.0)


@pytest.mark.parametrize("shape", [*SHAPES, "mixed"])
def test_cli_generates_every_utility_shape_and_solves_it(
    shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cbalab generate --kind welfare --utility SHAPE`` writes an instance that ``solve --method milp`` proves."""
    out = tmp_path / "w.json"
    argv = ["generate", "--kind", "welfare", "--jobs", "6", "--datasets", "2", "--seed", "4", "--utility", shape]
    assert main([*argv, "--budget-fraction", "0.3", "--out", str(out)]) == 0
    inst = load(out)
    assert inst.n_jobs == 6 and inst.has_options.all()
    assert inst.dumps() == generate_welfare(6, 2, 4, utility_mix=shape, budget_fraction=0.3).dumps()
    capsys.readouterr()
    assert main(["solve", str(out), "--problem", "welfare", "--method", "milp"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "optimal" and doc["feasible"]


def test_cli_rejects_an_unknown_utility_and_compares_welfare(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --utility exits 2; ``compare --problem welfare`` lists every welfare method against the MILP."""
    with pytest.raises(SystemExit) as e:
        main(["generate", "--kind", "welfare", "--jobs", "2", "--datasets", "1", "--utility", "cubic"])
    assert e.value.code == 2
    capsys.readouterr()
    assert main(["compare", "--problem", "welfare", "--jobs", "8", "--datasets", "2"]) == 0
    text = capsys.readouterr().out
    for name in ("milp", "lp", "gavel-tput", "gavel-tput-tuned", "gavel-fair", "optimus-tuned"):
        assert f"\n{name} " in text
