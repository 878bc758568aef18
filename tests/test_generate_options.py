"""``cbalab generate`` and ``cbalab.generate`` reach every generator parameter, the integer variants included
(experiments/workload/synthetic.py, experiments/workload/variants.py: with_variant)."""

from __future__ import annotations

import argparse
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import cbalab
from cbalab.cli import GENERATOR_OPTIONS, main, parser
from cbalab.experiments.workload import generate_cost, generate_welfare
from cbalab.experiments.workload.synthetic import generate_instance
from cbalab.experiments.workload.variants import DEFAULT_BLOCK_GB, DEFAULT_TIER_FRACTION, VARIANTS


def _generate_parser() -> argparse.ArgumentParser:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices["generate"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_regression_cli_generates_every_integer_variant(
    variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cbalab generate --variant V`` writes a V instance that CBA and the MILP solve."""
    path = tmp_path / "v.json"
    args = ["generate", "--kind", "cost", "--jobs", "12", "--datasets", "3", "--seed", "4", "--variant", variant]
    assert main([*args, "--out", str(path)]) == 0
    capsys.readouterr()
    inst = cbalab.load(path)
    granularity, tiers = VARIANTS[variant]
    assert inst.cache_granularity == granularity
    assert (inst.block_gb == DEFAULT_BLOCK_GB) if granularity == "block" else inst.block_gb is None
    demand = float(inst.job_io_gbps.sum())
    assert inst.bandwidth_step_gbps == (pytest.approx(DEFAULT_TIER_FRACTION * demand) if tiers else None)
    base = generate_cost(12, 3, seed=4)
    assert np.array_equal(inst.job_io_gbps, base.job_io_gbps)  # the variant changes the cluster, not the jobs
    cba = cbalab.solve(inst, "cba")
    exact = cbalab.solve(inst, "milp")
    assert cba.status in (cbalab.Status.OPTIMAL, cbalab.Status.FEASIBLE)
    assert exact.status is cbalab.Status.OPTIMAL
    assert cba.objective is not None and exact.objective is not None
    assert cba.objective >= exact.objective * (1 - 1e-7)


def test_regression_block_size_and_tier_are_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--block-gb and --tier-fraction set the variant's sizes; the API's keywords agree."""
    path = tmp_path / "bt.json"
    args = ["generate", "--kind", "cost", "--jobs", "10", "--datasets", "3", "--variant", "block+tiers"]
    assert main([*args, "--block-gb", "2.5", "--tier-fraction", "0.25", "--out", str(path)]) == 0
    capsys.readouterr()
    inst = cbalab.load(path)
    assert inst.block_gb == 2.5
    assert inst.bandwidth_step_gbps == pytest.approx(0.25 * float(inst.job_io_gbps.sum()))
    api = cbalab.generate("cost", jobs=10, datasets=3, variant="block+tiers", block_gb=2.5, tier_fraction=0.25)
    assert api.to_dict() == inst.to_dict()


def test_regression_every_generator_parameter_is_a_keyword_and_an_option() -> None:
    """Each parameter of generate_cost and generate_welfare is a keyword of cbalab.generate and
    of generate_instance, with a documented option of ``cbalab generate``; each option is in the help."""
    generator_params = set()
    for fn in (generate_cost, generate_welfare):
        generator_params |= set(inspect.signature(fn).parameters) - {"n_jobs", "n_datasets", "seed"}
    api = inspect.signature(cbalab.generate).parameters
    front = inspect.signature(generate_instance).parameters
    assert generator_params <= set(api) and generator_params <= set(front)
    doc = inspect.getdoc(cbalab.generate) or ""
    help_text = _generate_parser().format_help()
    options = {a.dest: a for a in _generate_parser()._actions}
    for name in [*generator_params, "variant", "block_gb", "tier_fraction", "jobs", "datasets", "seed"]:
        assert f"``{name}``" in doc, name
        keys = [k for k in GENERATOR_OPTIONS if k == name or k.startswith(name + "[")]
        assert keys, name
        for key in keys:
            option = GENERATOR_OPTIONS[key]
            assert option in help_text, option
            dest = option[2:].replace("-", "_")
            assert options[dest].help, option


def test_regression_every_welfare_option_reaches_the_generator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The welfare options give the instance generate_welfare gives for the same keywords."""
    path = tmp_path / "w.json"
    args = ["generate", "--kind", "welfare", "--jobs", "9", "--datasets", "3", "--seed", "2", "--out", str(path)]
    extra = ["--utility", "linear=3,deadline=1", "--budget-fraction", "0.3", "--gpu-options", "1,2,4"]
    extra += ["--gpu-fraction", "0.4", "--alpha", "1.5", "--skew", "0.5", "--cache-fraction", "0.1"]
    extra += ["--bandwidth-fraction", "0.8", "--price-cache", "0.002"]
    assert main([*args, *extra]) == 0
    capsys.readouterr()
    expected = generate_welfare(
        9,
        3,
        2,
        utility_mix={"linear": 3.0, "deadline": 1.0},
        budget_fraction=0.3,
        gpu_options=(1, 2, 4),
        gpu_fraction=0.4,
        alpha=1.5,
        skew=0.5,
        cache_fraction=0.1,
        bandwidth_fraction=0.8,
        prices=(2.5, 0.002, 0.9),
    )
    assert json.loads(path.read_text()) == expected.to_dict()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--kind", "cost", "--utility", "linear"], "--utility"),
        (["--kind", "welfare", "--variant", "block"], "--variant"),
        (["--kind", "cost", "--block-gb", "3"], "--block-gb"),
        (["--kind", "cost", "--variant", "tiers", "--block-gb", "3"], "--block-gb"),
        (["--kind", "cost", "--variant", "block", "--block-gb", "0"], "--block-gb"),
        (["--kind", "welfare", "--gpu-options", "0,2"], "--gpu-options"),
        (["--kind", "welfare", "--utility", "nope=1"], "--utility"),
        (["--kind", "welfare", "--alpha", "0"], "--alpha"),
        (["--kind", "cost", "--jobs", "99999999999999999999999"], "--jobs"),
    ],
)
def test_regression_bad_generator_options_name_the_option(
    args: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A generator option of the wrong kind or value is exit 2, one line naming the option."""
    full = ["generate", "--jobs", "4", "--datasets", "2", *args]
    code = main(full) if "99999" not in " ".join(args) else _exit_code(full)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"cbalab: error: {option}: ") and err.count("\n") == 1, err


def _exit_code(argv: list[str]) -> int:
    """The exit status of a command line that argparse itself refuses (SystemExit)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    return int(info.value.code or 0)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"seed": -1}, "seed"),
        ({"jobs": 2.5}, "jobs"),
        ({"datasets": 0}, "datasets"),
        ({"prices": (1, 2)}, "prices"),
        ({"skew": float("nan")}, "skew"),
        ({"variant": "blocks"}, "variant"),
        ({"alpha": 2.0}, "alpha"),
    ],
)
def test_regression_api_generate_names_the_keyword(kw: dict, field: str) -> None:
    """cbalab.generate raises InstanceError naming the keyword, not a numpy error."""
    with pytest.raises(cbalab.InstanceError) as info:
        cbalab.generate("cost", **kw)
    assert info.value.path == field
