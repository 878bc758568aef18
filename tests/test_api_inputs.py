"""Bad arguments to the facade (cbalab/api.py): each is an InstanceError naming the argument and its value.

Never a TypeError, AttributeError or ValueError from deep inside numpy, pandas, difflib or tuple unpacking, and
never a silently different answer; numpy numbers are accepted wherever Python ones are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import cbalab
from cbalab import InstanceError

PRICES = (2.5, 0.0004, 0.9)
JOBS = [{"id": "a", "dataset": "d", "gpus": 4, "io_gbps": 1.0}, {"id": "b", "dataset": "d", "gpus": 2, "io_gbps": 0.5}]
DATASETS = [{"id": "d", "size_gb": 10.0}]


def _instance() -> cbalab.Instance:
    return cbalab.build_instance(JOBS, DATASETS, cache_gb=5, prices=PRICES)


def _trace(**columns: list[Any]) -> pd.DataFrame:
    """A three-job trace in the generic form, with ``columns`` replaced or added."""
    base: dict[str, list[Any]] = {"submit_time_s": [0.0, 10.0, 20.0], "duration_s": [100.0] * 3, "gpus": [1, 2, 4]}
    return pd.DataFrame({**base, **columns})


def _refused(call: Any, field: str, shown: str) -> None:
    """``call()`` raises InstanceError whose message starts with ``field:`` and shows the value as ``shown``."""
    with pytest.raises(InstanceError) as err:
        call()
    message = str(err.value)
    assert message.startswith(f"{field}: "), message
    assert f"(got {shown})" in message, message
    assert "\n" not in message


# ---------------------------------------------------------------- 1: numpy numbers in build_instance


def test_build_instance_takes_numpy_numbers_as_python_ones() -> None:
    """numpy integers and floats, as arguments and nested in a row's options, build the same instance as Python
    numbers (they were refused: 'cluster.gpus: must be a whole number or null (got np.int64(16))')."""
    welfare = [{"id": "a", "dataset": "d", "options": [{"gpus": 2, "io_gbps": 1.0, "utility": 1.0}]}]
    plain = cbalab.build_instance(welfare, DATASETS, cache_gb=5, prices=PRICES, gpus=16, budget_per_hour=9.0)
    numpy_jobs = [
        {
            "id": "a",
            "dataset": "d",
            "options": [{"gpus": np.int64(2), "io_gbps": np.float64(1.0), "utility": np.float32(1.0)}],
        }
    ]
    got = cbalab.build_instance(
        numpy_jobs,
        DATASETS,
        cache_gb=np.float64(5),
        prices=np.array(PRICES),
        gpus=np.int64(16),
        budget_per_hour=np.float64(9.0),
    )
    assert got.to_dict() == plain.to_dict()


@pytest.mark.parametrize("flag", [True, np.bool_(True)])
def test_build_instance_still_refuses_a_bool_gpu_count(flag: Any) -> None:
    """A bool (Python's or numpy's) is not a GPU count, as before: numpy is unwrapped, not coerced to int."""
    _refused(
        lambda: cbalab.build_instance(JOBS, DATASETS, cache_gb=5, prices=PRICES, gpus=flag), "cluster.gpus", "true"
    )


# ---------------------------------------------------------------- 2: prices, jobs and datasets of build_instance


@pytest.mark.parametrize(
    ("prices", "shown"),
    [(None, "null"), ((1, 2), "[1, 2]"), ((1, 2, 3, 4), "[1, 2, 3, 4]"), (5, "5"), ("abc", '"abc"')],
)
def test_build_instance_names_prices_that_are_not_three_numbers(prices: Any, shown: str) -> None:
    """prices None, two or four numbers, a number or a string: InstanceError naming ``prices`` (they were a bare
    TypeError/ValueError of tuple unpacking, or for a string 'prices.gpu_per_hour ... (got "a")')."""
    _refused(lambda: cbalab.build_instance(JOBS, DATASETS, cache_gb=5, prices=prices), "prices", shown)


@pytest.mark.parametrize("argument", ["jobs", "datasets"])
@pytest.mark.parametrize(("table", "shown"), [(None, "null"), ("abc", '"abc"'), (5, "5"), ({"id": "a"}, '{"id": "a"}')])
def test_build_instance_names_tables_that_are_not_tables(argument: str, table: Any, shown: str) -> None:
    """jobs/datasets None, a string, a number or a single dict: InstanceError naming the argument (they were
    "'NoneType' object is not iterable" and the like)."""
    kw: dict[str, Any] = {"jobs": JOBS, "datasets": DATASETS, argument: table}
    _refused(lambda: cbalab.build_instance(**kw, cache_gb=5, prices=PRICES), argument, shown)


def test_build_instance_names_a_row_that_is_not_a_dict() -> None:
    """A row that is not a dict is named by its position, ``jobs[1]`` (it was "'int' object is not iterable")."""
    _refused(lambda: cbalab.build_instance([JOBS[0], 7], DATASETS, cache_gb=5, prices=PRICES), "jobs[1]", "7")


# ---------------------------------------------------------------- 3: solve's instance, method and time_limit


@pytest.mark.parametrize(("instance", "shown"), [(None, "null"), ({}, "{}"), ("inst.json", '"inst.json"')])
def test_solve_names_an_instance_that_is_not_one(instance: Any, shown: str) -> None:
    """solve(None | dict | path, "cba"): InstanceError naming ``instance`` (it was AttributeError 'has_fixed')."""
    _refused(lambda: cbalab.solve(instance, "cba"), "instance", shown)


@pytest.mark.parametrize(("method", "shown"), [(None, "null"), (1, "1")])
def test_solve_names_a_method_that_is_not_a_name(method: Any, shown: str) -> None:
    """solve(inst, None): InstanceError naming ``method`` (it was a TypeError from difflib)."""
    _refused(lambda: cbalab.solve(_instance(), method), "method", shown)


def test_solve_names_a_time_limit_that_is_not_a_number() -> None:
    """solve(..., time_limit="5"): InstanceError naming ``time_limit`` (it was a TypeError deep in models/solve.py;
    SolveOptions, which solve builds, checks it)."""
    _refused(lambda: cbalab.solve(_instance(), "milp", time_limit="5"), "time_limit", '"5"')


# ---------------------------------------------------------------- 4: problem, allocation, instance and path


@pytest.mark.parametrize(("problem", "shown"), [("foo", '"foo"'), (1, "1")])
def test_methods_names_an_unknown_problem(problem: Any, shown: str) -> None:
    """methods("foo") and methods(1): InstanceError naming ``problem`` with the valid ones (they returned an
    empty table)."""
    _refused(lambda: cbalab.methods(problem), "problem", shown)
    with pytest.raises(InstanceError, match="must be cost or welfare"):
        cbalab.methods(problem)


def test_evaluate_and_build_model_name_an_unknown_problem() -> None:
    """evaluate(inst, alloc, "foo") and build_model(inst, "foo"): InstanceError naming ``problem`` and listing
    cost and welfare (they were "ValueError: 'foo' is not a valid Problem")."""
    inst = _instance()
    alloc = cbalab.solve(inst, "cba").allocation
    for call in (lambda: cbalab.evaluate(inst, alloc, "foo"), lambda: cbalab.build_model(inst, "foo")):
        _refused(call, "problem", '"foo"')
        with pytest.raises(InstanceError, match="must be cost or welfare"):
            call()


@pytest.mark.parametrize(("allocation", "shown"), [(None, "null"), ({"gpus": [1]}, '{"gpus": [1]}')])
def test_evaluate_names_an_allocation_that_is_not_one(allocation: Any, shown: str) -> None:
    """evaluate(inst, None | dict, "cost"): InstanceError naming ``allocation`` (it was AttributeError
    'has_allocation')."""
    _refused(lambda: cbalab.evaluate(_instance(), allocation, "cost"), "allocation", shown)


def test_the_instance_taking_calls_name_an_instance_that_is_not_one(tmp_path: Path) -> None:
    """evaluate, build_model, compare and save with a dict or None for the instance: InstanceError naming
    ``instance`` (they were AttributeErrors)."""
    alloc = cbalab.solve(_instance(), "cba").allocation
    _refused(lambda: cbalab.evaluate(None, alloc, "cost"), "instance", "null")
    _refused(lambda: cbalab.build_model(None, "cost"), "instance", "null")
    _refused(lambda: cbalab.compare(None), "instance", "null")
    _refused(lambda: cbalab.save({"schema": 1}, tmp_path / "inst.json"), "instance", '{"schema": 1}')
    assert not (tmp_path / "inst.json").exists()


def test_load_loads_and_save_name_a_path_or_text_that_is_none() -> None:
    """load(None), loads(None), save(inst, None): InstanceError naming ``path`` or ``text`` (raw TypeErrors)."""
    _refused(lambda: cbalab.load(None), "path", "null")
    _refused(lambda: cbalab.loads(None), "text", "null")
    _refused(lambda: cbalab.save(_instance(), None), "path", "null")


# ---------------------------------------------------------------- 5: simulate


@pytest.mark.parametrize(
    ("column", "values", "row", "shown"),
    [("submit_time_s", [0.0, np.nan, 20.0], 11, "nan"), ("gpus", [1, 0, 4], 11, "0")],
)
def test_simulate_names_the_dataframe_row_and_column_of_a_bad_cell(
    column: str, values: list[Any], row: int, shown: str
) -> None:
    """A NaN submit time or a 0 GPU count in a DataFrame trace is named by the DataFrame's row (its index label)
    and column with the cell's value, not by a line of a temporary file that is gone."""
    trace = _trace(**{column: values}).set_axis([10, 11, 12])
    _refused(lambda: cbalab.simulate(trace, "cba", gpus=8, cache_gb=10.0), f"trace row {row}, column {column!r}", shown)


def test_simulate_names_a_dataframe_row_that_is_all_missing() -> None:
    """A row of NaN is written as a line of empty fields, which the trace reader once skipped as blank: the job
    was dropped without a word.  It is now a row like any other, refused by its first required cell."""
    trace = _trace(submit_time_s=[0.0, np.nan, 20.0], duration_s=[100.0, np.nan, 100.0], gpus=[1, np.nan, 4])
    _refused(lambda: cbalab.simulate(trace, "cba", gpus=8, cache_gb=10.0), "trace row 1, column 'submit_time_s'", "nan")


def test_simulate_names_a_duplicate_id_by_dataframe_rows() -> None:
    """A job_id given twice names both rows by index label, the first inside the message (it cited a line)."""
    trace = _trace(job_id=["a", "b", "a"]).set_axis(["x", "y", "z"])
    with pytest.raises(InstanceError) as err:
        cbalab.simulate(trace, "cba", gpus=8, cache_gb=10.0)
    assert str(err.value) == "trace row 'z', column 'job_id': duplicate id (first on row 'x') (got \"a\")"


def test_simulate_names_the_file_line_or_row_of_a_job_larger_than_the_cluster(tmp_path: Path) -> None:
    """A cost job runs on its trace's GPU count, so one above the cluster's is named where it was written: the
    file, its line and the column as the file spells it (``num_gpus`` in the Philly form), or the DataFrame's
    row; a job the window leaves out is not replayed and not refused (it named only ``jobs[philly-3].gpus``)."""
    philly = tmp_path / "philly.csv"
    philly.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,a\n"
        "2017-10-09 07:02:55,66.0,100,6600.0,a\n",
        encoding="utf-8",
    )
    with pytest.raises(InstanceError) as err:
        cbalab.simulate(str(philly), "cba", gpus=64)
    assert str(err.value) == f"{philly}: line 3, column 'num_gpus': exceeds the cluster's 64 GPUs (got 100)"
    assert len(cbalab.simulate(str(philly), "cba", gpus=64, window=(0.0, 60.0), progress=False).jobs) == 1
    trace = _trace(gpus=[1, 99, 4]).set_axis(["x", "y", "z"])
    _refused(lambda: cbalab.simulate(trace, "cba", gpus=8, cache_gb=10.0), "trace row 'y', column 'gpus'", "99")


def test_simulate_takes_prices_and_gpus_as_build_instance_does() -> None:
    """prices as a numpy array of three numbers and gpus as a float with a whole value are accepted, as
    build_instance accepts them, and give the replay of the Python values (they were refused, the prices with
    "must be three numbers ... (got [1.0, 2.0, 3.0])")."""
    trace = _trace()
    plain = cbalab.simulate(trace, "cba", gpus=4, cache_gb=10.0, prices=(1.0, 2.0, 3.0), timing=False)
    mixed = cbalab.simulate(trace, "cba", gpus=4.0, cache_gb=10.0, prices=np.array([1, 2, 3.0]), timing=False)
    assert mixed.summary == plain.summary
    assert mixed.summary["config"]["gpus"] == 4 and isinstance(mixed.summary["config"]["gpus"], int)
    whole_float = cbalab.build_instance(JOBS, DATASETS, cache_gb=5, prices=PRICES, gpus=16.0)
    assert whole_float.gpus == 16
    _refused(lambda: cbalab.simulate(trace, "cba", gpus=4.5, cache_gb=10.0), "gpus", "4.5")


@pytest.mark.parametrize(("window", "shown"), [(5, "5"), ((1, 2, 3), "[1, 2, 3]"), (("a", "b"), '["a", "b"]')])
def test_simulate_names_a_window_that_is_not_two_numbers(window: Any, shown: str) -> None:
    """window=5 (or three numbers, or strings): InstanceError naming ``window`` (it was "TypeError: cannot
    unpack non-iterable int")."""
    _refused(lambda: cbalab.simulate(_trace(), "cba", gpus=8, cache_gb=10.0, window=window), "window", shown)


@pytest.mark.parametrize("name", ["warmup", "offline_optimum", "timing", "progress"])
def test_simulate_refuses_a_switch_that_is_not_a_bool(name: str) -> None:
    """warmup="no", offline_optimum="yes" and the other switches: InstanceError naming the switch (a non-empty
    string was silently taken as True); numpy's bool is a bool."""
    _refused(lambda: cbalab.simulate(_trace(), "cba", gpus=8, cache_gb=10.0, **{name: "no"}), name, '"no"')
    result = cbalab.simulate(_trace(), "cba", gpus=8, cache_gb=10.0, **{name: np.bool_(False)})
    assert result.summary["jobs"] == 3


# ---------------------------------------------------------------- 6: what the CLI refuses, the API refuses too


def test_compare_shows_no_value_for_a_welfare_method_without_an_allocation() -> None:
    """compare(inst, "welfare", time_limit=1e-4): milp, milp-stall and lp answer time_limit with welfare null;
    their rows show NaN (as the cost problem's do) instead of a TypeError from float(None)."""
    inst = cbalab.generate("welfare", jobs=50, datasets=10)
    table = cbalab.compare(inst, "welfare", time_limit=1e-4)
    assert len(table) == len(cbalab.methods("welfare"))
    stopped = table["status"] == "time_limit"
    assert table.loc[stopped, "value"].isna().any()
    assert table.loc[~stopped & (table["status"] != "infeasible"), "value"].notna().all()


def test_simulate_refuses_a_period_that_ticks_too_often() -> None:
    """simulate(10, "cba", period_s=1e-9) would re-decide 10^13 times (it hung); like ``--period`` on the command
    line it is refused at once naming period_s, and a period of ticks a replay can afford still runs."""
    _refused(lambda: cbalab.simulate(10, "cba", period_s=1e-9), "period_s", "1e-09")
    assert cbalab.simulate(10, "cba", period_s=600.0, progress=False).summary["jobs"] == 10


@pytest.mark.parametrize(("out", "shown"), [("", '""'), (5, "5")])
def test_simulate_names_an_out_that_is_not_a_folder_path(
    out: Any, shown: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """out="" wrote jobs.csv and the rest into the current folder, and out=5 was a raw TypeError: both are
    InstanceError naming ``out``, before anything is written."""
    monkeypatch.chdir(tmp_path)
    _refused(lambda: cbalab.simulate(5, "cba", out=out), "out", shown)
    assert list(tmp_path.iterdir()) == []


def test_generate_and_simulate_refuse_a_skew_above_max_skew() -> None:
    """A skew above MAX_SKEW (33, ``--skew``'s limit) overflowed the Zipf weights (OverflowError at 700 and 1000)
    or was silently taken (40); both calls name ``skew``, and 33 itself is still accepted."""
    _refused(lambda: cbalab.generate("cost", jobs=5, datasets=3, skew=700), "skew", "700.0")
    _refused(lambda: cbalab.generate("cost", jobs=5, datasets=3, skew=40), "skew", "40.0")
    _refused(lambda: cbalab.simulate(10, "cba", skew=1000, n_datasets=3), "skew", "1000.0")
    assert cbalab.api.MAX_SKEW == 33
    assert cbalab.generate("cost", jobs=5, datasets=3, skew=33).n_jobs == 5


def test_generate_refuses_an_instance_that_load_would_refuse(tmp_path: Path) -> None:
    """bandwidth_fraction=1e-40 made a cap of 3.6e-41 GB/s that save wrote and load then refused; generate holds
    its instance to the loader's rules and names the field at once."""
    with pytest.raises(InstanceError, match=r"^cluster\.bandwidth_gbps: must be 0 or at least 1e-30"):
        cbalab.generate("cost", jobs=5, datasets=2, bandwidth_fraction=1e-40)
    inst = cbalab.generate("cost", jobs=5, datasets=2, bandwidth_fraction=0.5)
    assert cbalab.load(cbalab.save(inst, tmp_path / "g.json")).to_dict() == inst.to_dict()


def test_build_instance_refuses_a_column_given_twice() -> None:
    """A DataFrame with two ``io_gbps`` columns silently gave the last one; it is refused naming the column."""
    jobs = pd.DataFrame([["a", "d", 2, 0.1, 0.2]], columns=["id", "dataset", "gpus", "io_gbps", "io_gbps"])
    call = lambda: cbalab.build_instance(jobs, [{"id": "d", "size_gb": 10}], cache_gb=5, prices=(1, 1, 1))  # noqa: E731
    _refused(call, "jobs.io_gbps", '"io_gbps"')


def test_simulate_names_a_policy_that_is_not_a_name() -> None:
    """simulate(10, 3): InstanceError naming ``policy`` (it was "TypeError: 'int' object is not iterable")."""
    _refused(lambda: cbalab.simulate(10, 3), "policy", "3")


def test_simulate_takes_a_utility_mix_dict_as_generate_does() -> None:
    """utility_mix={"linear": 1} was an AttributeError (.strip); a dict of shares is taken as generate takes it,
    the same replay as the text "linear", and a bad share or shape is named."""
    kw: dict[str, Any] = {"problem": "welfare", "timing": False}
    as_dict = cbalab.simulate(10, "autocba", utility_mix={"linear": 1}, **kw)
    assert as_dict.summary == cbalab.simulate(10, "autocba", utility_mix="linear", **kw).summary
    _refused(lambda: cbalab.simulate(10, "autocba", utility_mix={"linear": "x"}, **kw), "utility_mix.linear", '"x"')
    _refused(lambda: cbalab.simulate(10, "autocba", utility_mix=5, **kw), "utility_mix", "5")


def test_evaluate_names_an_allocation_array_that_is_not_numbers() -> None:
    """An Allocation whose gpus are strings was a numpy isfinite TypeError; it names ``allocation.gpus``."""
    inst = _instance()
    alloc = cbalab.Allocation(np.array(["a", "b"]), np.zeros(1), np.ones(2))
    _refused(lambda: cbalab.evaluate(inst, alloc, "cost"), "allocation.gpus", '["a", "b"]')


def test_generate_reads_utility_shares_as_the_cli_does() -> None:
    """utility_mix="linear=1,linear=2" said only "must be 'mixed' or one of ..."; shares text is read as
    ``--utility`` reads it, so a shape given twice says to give each shape once and "linear=3,log=1" is the mix
    of the dict {"linear": 3, "log": 1}."""
    with pytest.raises(InstanceError, match=r"^utility_mix: .*give each shape once"):
        cbalab.generate("welfare", jobs=5, datasets=2, utility_mix="linear=1,linear=2")
    text = cbalab.generate("welfare", jobs=5, datasets=2, utility_mix="linear=3,log=1")
    shares = cbalab.generate("welfare", jobs=5, datasets=2, utility_mix={"linear": 3, "log": 1})
    assert text.to_dict() == shares.to_dict()


def test_save_and_load_name_an_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """save(inst, "") said ": is a folder"; save and load name ``path`` as an empty path."""
    monkeypatch.chdir(tmp_path)
    _refused(lambda: cbalab.save(_instance(), ""), "path", '""')
    _refused(lambda: cbalab.load(""), "path", '""')
    with pytest.raises(InstanceError, match="empty path"):
        cbalab.save(_instance(), "")
