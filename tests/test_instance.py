"""Tests of the instance model (models/instance.py): every bad input is an InstanceError naming field and value.

docs/interface.md: "Bad input (unknown dataset, duplicate id, negative or
non-finite number, empty options, unknown schema) is rejected with a message
that names the field and the offending value, before any solving."
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hostile import doc, set_field, write
from hypothesis import given
from strategies import cost_instances

from cbalab.experiments.workload import generate_cost
from cbalab.models import instance as instance_module
from cbalab.models.instance import MAX_COUNT, Instance, InstanceError, build, from_dict, load, loads


def valid_doc() -> dict:
    """The example instance of docs/interface.md, with a second dataset and job."""
    return {
        "schema": "cbalab/instance@1",
        "cluster": {
            "gpus": 64,
            "cache_gb": 2000.0,
            "bandwidth_gbps": 10.0,
            "cache_granularity": "continuous",
            "bandwidth_step_gbps": None,
        },
        "prices": {"gpu_per_hour": 2.5, "cache_gb_per_hour": 0.0004, "bandwidth_gbps_per_hour": 0.9},
        "budget_per_hour": 120.0,
        "datasets": [{"id": "imagenet", "size_gb": 147.0}, {"id": "cifar", "size_gb": 0.16}],
        "jobs": [
            {
                "id": "resnet50-a",
                "dataset": "imagenet",
                "gpus": 4,
                "io_gbps": 0.14,
                "options": [
                    {"gpus": 1, "io_gbps": 0.035, "utility": 10.0},
                    {"gpus": 2, "io_gbps": 0.068, "utility": 18.5},
                    {"gpus": 4, "io_gbps": 0.14, "utility": 31.0},
                ],
            },
            {"id": "vgg-b", "dataset": "cifar", "gpus": 1, "io_gbps": 0.02},
        ],
    }


def setter(path: str, value: object) -> Callable[[dict], None]:
    """A mutation that sets ``doc[path]`` (dots and [i] indices) to ``value``."""

    def apply(doc: dict) -> None:
        keys: list[str | int] = []
        for part in path.replace("]", "").replace("[", ".").split("."):
            keys.append(int(part) if part.isdigit() else part)
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value

    return apply


def deleter(path: str, key: str) -> Callable[[dict], None]:
    """A mutation that removes ``key`` from the object at ``path`` ("" is the document itself)."""

    def apply(doc: dict) -> None:
        target = doc
        for part in path.replace("]", "").replace("[", ".").split(".") if path else []:
            target = target[int(part) if part.isdigit() else part]
        del target[key]

    return apply


# (case id, mutation, field path the message must name, value text the message must show)
BAD_INPUTS = [
    ("unknown dataset", setter("jobs[1].dataset", "mnist"), "jobs[1].dataset", '"mnist"'),
    ("dataset not a string", setter("jobs[0].dataset", 3), "jobs[0].dataset", "3"),
    ("duplicate job id", setter("jobs[1].id", "resnet50-a"), "jobs[1].id", '"resnet50-a"'),
    ("duplicate dataset id", setter("datasets[1].id", "imagenet"), "datasets[1].id", '"imagenet"'),
    ("empty id", setter("jobs[0].id", ""), "jobs[0].id", '""'),
    ("negative size", setter("datasets[0].size_gb", -1.0), "datasets[0].size_gb", "-1.0"),
    ("zero size", setter("datasets[1].size_gb", 0), "datasets[1].size_gb", "0"),
    ("nan size", setter("datasets[0].size_gb", math.nan), "datasets[0].size_gb", "nan"),
    ("inf rate", setter("jobs[1].io_gbps", math.inf), "jobs[1].io_gbps", "inf"),
    ("negative rate", setter("jobs[1].io_gbps", -0.5), "jobs[1].io_gbps", "-0.5"),
    ("negative cache", setter("cluster.cache_gb", -5), "cluster.cache_gb", "-5"),
    ("nan cache", setter("cluster.cache_gb", math.nan), "cluster.cache_gb", "nan"),
    ("negative bandwidth", setter("cluster.bandwidth_gbps", -1.0), "cluster.bandwidth_gbps", "-1.0"),
    ("negative price", setter("prices.cache_gb_per_hour", -0.1), "prices.cache_gb_per_hour", "-0.1"),
    ("inf price", setter("prices.gpu_per_hour", math.inf), "prices.gpu_per_hour", "inf"),
    ("negative budget", setter("budget_per_hour", -3.0), "budget_per_hour", "-3.0"),
    ("string as number", setter("cluster.cache_gb", "2000"), "cluster.cache_gb", '"2000"'),
    ("string rate", setter("jobs[0].io_gbps", "fast"), "jobs[0].io_gbps", '"fast"'),
    ("bool as number", setter("datasets[0].size_gb", True), "datasets[0].size_gb", "true"),
    ("bool as gpus", setter("jobs[0].gpus", False), "jobs[0].gpus", "false"),
    ("bool price", setter("prices.bandwidth_gbps_per_hour", True), "prices.bandwidth_gbps_per_hour", "true"),
    ("fractional gpus", setter("jobs[1].gpus", 1.5), "jobs[1].gpus", "1.5"),
    ("negative gpus", setter("jobs[1].gpus", -2), "jobs[1].gpus", "-2"),
    ("fractional cluster gpus", setter("cluster.gpus", 6.5), "cluster.gpus", "6.5"),
    ("list as cluster", setter("cluster", [1, 2]), "cluster", "[1, 2]"),
    ("datasets not a list", setter("datasets", {"id": "x"}), "datasets", '{"id": "x"}'),
    ("unknown schema", setter("schema", "cbalab/instance@2"), "schema", '"cbalab/instance@2"'),
    ("empty options", setter("jobs[0].options", []), "jobs[0].options", "[]"),
    ("options not a list", setter("jobs[0].options", 4), "jobs[0].options", "4"),
    ("option gpus zero", setter("jobs[0].options[1].gpus", 0), "jobs[0].options[1].gpus", "0"),
    ("option negative utility", setter("jobs[0].options[2].utility", -1), "jobs[0].options[2].utility", "-1"),
    ("option nan rate", setter("jobs[0].options[0].io_gbps", math.nan), "jobs[0].options[0].io_gbps", "nan"),
    ("duplicate option gpus", setter("jobs[0].options[1].gpus", 1), "jobs[0].options[1].gpus", "1"),
    ("unknown top field", setter("colour", "blue"), "colour", '"blue"'),
    ("unknown cluster field", setter("cluster.ssd_gb", 5), "cluster.ssd_gb", "5"),
    ("unknown job field", setter("jobs[1].priority", 3), "jobs[1].priority", "3"),
    ("unknown dataset field", setter("datasets[0].path", "/x"), "datasets[0].path", '"/x"'),
    ("unknown option field", setter("jobs[0].options[0].memory", 2), "jobs[0].options[0].memory", "2"),
    ("block size zero", setter("cluster.cache_granularity", {"block_gb": 0}), "block_gb", "0"),
    ("block size negative", setter("cluster.cache_granularity", {"block_gb": -8}), "block_gb", "-8"),
    ("block size string", setter("cluster.cache_granularity", {"block_gb": "8"}), "block_gb", '"8"'),
    ("granularity word", setter("cluster.cache_granularity", "blocks"), "cluster.cache_granularity", '"blocks"'),
    ("granularity number", setter("cluster.cache_granularity", -1), "cluster.cache_granularity", "-1"),
    ("granularity extra key", setter("cluster.cache_granularity", {"block_gb": 8, "x": 1}), "x", "1"),
    ("tier step zero", setter("cluster.bandwidth_step_gbps", 0.0), "cluster.bandwidth_step_gbps", "0.0"),
    ("missing cache", deleter("cluster", "cache_gb"), "cluster.cache_gb", "null"),
    ("missing prices", deleter("", "prices"), "prices", "null"),
    ("gpus without io_gbps", deleter("jobs[1]", "io_gbps"), "jobs[1].io_gbps", "null"),
]


def _mutated(mutation: Callable[[dict], None]) -> dict:
    doc = copy.deepcopy(valid_doc())
    mutation(doc)
    return doc


def test_valid_doc_loads() -> None:
    """The table's base document is valid, so each row tests exactly its one mutation."""
    inst = from_dict(valid_doc())
    assert inst.n_jobs == 2
    assert inst.n_datasets == 2
    assert inst.job_dataset.tolist() == [0, 1]
    assert inst.option_ptr.tolist() == [0, 3, 3]


@pytest.mark.parametrize(
    ("mutation", "path", "value"),
    [pytest.param(m, p, v, id=i) for i, m, p, v in BAD_INPUTS],
)
def test_bad_input_names_field_and_value(mutation: Callable[[dict], None], path: str, value: str) -> None:
    """Each bad document raises InstanceError whose message names the field path and shows the value."""
    doc = _mutated(mutation)
    with pytest.raises(InstanceError) as info:
        from_dict(doc)
    message = str(info.value)
    assert path in info.value.path, message
    assert path in message
    assert value in message, message


@pytest.mark.parametrize(
    "mutation",
    [pytest.param(m, id=i) for i, m, _, _ in BAD_INPUTS],
)
def test_bad_input_rejected_the_same_through_json_text(mutation: Callable[[dict], None]) -> None:
    """loads() rejects the same documents as from_dict() (JSON has no NaN/Infinity: those fail at parsing)."""
    doc = _mutated(mutation)
    text = json.dumps(doc)  # NaN/inf become the non-standard tokens NaN/Infinity, rejected as such
    with pytest.raises(InstanceError):
        loads(text)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{", "JSON line 1"),
        ('{"schema": "cbalab/instance@1",}', "JSON line 1"),
        ("", "JSON line 1"),
        ('{"schema": "cbalab/instance@1", "cluster": {"cache_gb": NaN}}', "NaN"),
        ('{"schema": "cbalab/instance@1", "cluster": {"cache_gb": Infinity}}', "Infinity"),
        ("[1, 2, 3]", "must be an object"),
        ("null", "must be an object"),
    ],
)
def test_malformed_json_is_instance_error(text: str, where: str) -> None:
    """Malformed JSON, non-standard constants and a non-object document are InstanceErrors, not crashes."""
    with pytest.raises(InstanceError) as info:
        loads(text)
    assert where in str(info.value)


def test_unreadable_file_is_instance_error(tmp_path: Path) -> None:
    """A missing file is an InstanceError naming the path, not an OSError."""
    missing = tmp_path / "nope.json"
    with pytest.raises(InstanceError) as info:
        load(missing)
    assert "nope.json" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"dataset_size_gb": np.array([1.0, -2.0])}, "datasets[1].size_gb"),
        ({"dataset_size_gb": np.array([1.0, np.nan])}, "datasets[1].size_gb"),
        ({"job_dataset": np.array([0, 5])}, "jobs[1].dataset"),
        ({"job_io_gbps": np.array([0.1, np.inf])}, "jobs[1].io_gbps"),
        ({"cache_gb": -1.0}, "cluster.cache_gb"),
        ({"cache_gb": math.nan}, "cluster.cache_gb"),
        ({"bandwidth_gbps": -1.0}, "cluster.bandwidth_gbps"),
        ({"prices": (1.0, -0.1, 1.0)}, "prices.cache_gb_per_hour"),
        ({"cache_granularity": "block", "block_gb": 0.0}, "cluster.cache_granularity.block_gb"),
        ({"cache_granularity": "blocks"}, "cluster.cache_granularity"),
        ({"job_ids": ("a", "a")}, "jobs[].id"),
    ],
)
def test_build_rejects_what_json_rejects(kwargs: dict, path: str) -> None:
    """Array-built instances (generators, tests) are validated like JSON input (models.instance.check)."""
    args: dict = {
        "dataset_size_gb": np.array([1.0, 2.0]),
        "job_dataset": np.array([0, 1]),
        "job_gpus": np.array([1, 1]),
        "job_io_gbps": np.array([0.1, 0.2]),
        "cache_gb": 1.0,
        "prices": (1.0, 0.1, 1.0),
    }
    args.update(kwargs)
    with pytest.raises(InstanceError) as info:
        build(**args)
    assert path in str(info.value)


def assert_same_instance(a: Instance, b: Instance) -> None:
    """Every scalar, id tuple and array of two instances is equal (arrays exactly, dtype kind included)."""
    for name in a.__dataclass_fields__:
        if name == "_cache":
            continue
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            assert x.dtype.kind == y.dtype.kind, name
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert x == y, name


def test_json_round_trip_of_the_interface_example(tmp_path: Path) -> None:
    """save() then load() gives back the same instance, field by field and array by array."""
    inst = from_dict(valid_doc())
    path = tmp_path / "inst.json"
    inst.save(path)
    assert_same_instance(inst, load(path))
    assert json.loads(path.read_text()) == json.loads(inst.dumps())


@pytest.mark.parametrize(
    "granularity", ["continuous", "dataset", {"block_gb": 8.0}], ids=["continuous", "dataset", "block"]
)
def test_json_round_trip_keeps_granularity_and_tiers(granularity: object) -> None:
    """Granularity, block size, tier step and unlimited B / budget (null) survive a round trip."""
    doc = valid_doc()
    doc["cluster"]["cache_granularity"] = granularity
    doc["cluster"]["bandwidth_step_gbps"] = 0.5
    doc["cluster"]["bandwidth_gbps"] = None
    doc["budget_per_hour"] = None
    inst = from_dict(doc)
    again = loads(inst.dumps())
    assert_same_instance(inst, again)
    assert math.isinf(again.bandwidth_gbps)
    assert math.isinf(again.budget_per_hour)


@given(cost_instances())
def test_json_round_trip_of_generated_instances(inst: Instance) -> None:
    """Any strategy instance (tiny and huge magnitudes, zero prices, unlimited B) round-trips exactly."""
    assert_same_instance(inst, loads(inst.dumps()))


def test_json_round_trip_of_generator_output() -> None:
    """A generate_cost instance (the CLI's `generate`) round-trips exactly."""
    inst = generate_cost(300, 30, seed=4, bandwidth_fraction=0.4)
    assert_same_instance(inst, loads(inst.dumps()))


def test_require_fixed_names_the_job() -> None:
    """The cost problem on a job without gpus/io_gbps is an InstanceError naming that job's field."""
    doc = valid_doc()
    del doc["jobs"][1]["gpus"]
    del doc["jobs"][1]["io_gbps"]
    inst = from_dict(doc)
    with pytest.raises(InstanceError) as info:
        inst.require_fixed()
    assert "jobs[1].gpus" in str(info.value)
    assert "vgg-b" in str(info.value)


def test_job_work_round_trips_and_is_all_or_none() -> None:
    """``work`` (docs/interface.md, read by Optimus): hours at the smallest option, > 0, given for every job or none."""
    doc = valid_doc()
    doc["jobs"][0]["work"] = 12.5
    doc["jobs"][1]["work"] = 0.5
    inst = from_dict(doc)
    assert inst.job_work is not None and inst.job_work.tolist() == [12.5, 0.5]
    assert_same_instance(loads(inst.dumps()), inst)
    assert from_dict(valid_doc()).job_work is None
    del doc["jobs"][1]["work"]
    with pytest.raises(InstanceError, match=r"jobs\[1\]\.work: is required when another job gives its work"):
        from_dict(doc)
    for bad in (0, -1.0, "x", math.inf):
        doc["jobs"][1]["work"] = bad
        with pytest.raises(InstanceError, match=r"jobs\[1\]\.work"):
            from_dict(doc)
    with pytest.raises(InstanceError, match=r"jobs\[0\]\.work: must be finite and > 0"):
        build(
            dataset_size_gb=np.array([1.0]),
            job_dataset=np.array([0]),
            cache_gb=0.0,
            prices=(1.0, 0.0, 0.0),
            options=(np.array([0, 1]), np.array([1]), np.array([0.1]), np.array([1.0])),
            job_work=np.array([0.0]),
        )


# ------------------------------------------------ hostile input: counts, magnitudes and files


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("jobs[1].gpus", 2**63),
        ("jobs[1].gpus", 1e30),
        ("jobs[2].options[0].gpus", MAX_COUNT + 1),
        ("cluster.gpus", 2**64),
    ],
)
def test_regression_every_count_has_a_range_check_before_int64(path: str, value: float) -> None:
    """Counts above MAX_COUNT (2^31 − 1) are refused wherever they occur; MAX_COUNT itself is accepted."""
    d = doc()
    set_field(d, path, value)
    with pytest.raises(InstanceError, match=r"must be <= 2147483647") as e:
        from_dict(d)
    assert e.value.path == path
    set_field(d, path, MAX_COUNT)
    d["prices"]["gpu_per_hour"] = 1.0
    inst = from_dict(d)
    assert (inst.option_gpus >= 1).all() and (inst.job_gpus >= 0).all()


def test_regression_array_built_instances_are_range_checked_too() -> None:
    """models.instance.build applies the same cap, so no generator can hand int64-wrapping counts to a method."""
    with pytest.raises(InstanceError, match=r"jobs\[0\]\.gpus: must be <= 2147483647"):
        build(
            dataset_size_gb=np.array([1.0]),
            job_dataset=np.array([0]),
            job_gpus=np.array([2**40]),
            job_io_gbps=np.array([0.1]),
            cache_gb=1.0,
            prices=(1.0, 1.0, 1.0),
        )


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("datasets", [{"id": "a", "size_gb": 1.5e308}, {"id": "b", "size_gb": 1.5e308}], "datasets[0].size_gb"),
        ("prices.cache_gb_per_hour", 1e306, "prices.cache_gb_per_hour"),
        ("jobs[2].options[0].utility", 1.7e308, None),
    ],
)
def test_regression_totals_that_overflow_name_their_field(path: str, value: object, field: str | None) -> None:
    """Sums the referee forms (Σ d, Σ U, a price times what it can buy) must be finite, else the field is named."""
    d = doc()
    set_field(d, path, value)
    if path == "datasets":
        for j in d["jobs"]:
            j["dataset"] = "a"
        d["cluster"]["cache_gb"] = 1e308
    if path.endswith("utility"):
        d["jobs"][0]["options"][0]["utility"] = 1.7e308
        field = "jobs[0].options[0].utility"
    if path == "prices.cache_gb_per_hour":
        d["cluster"]["cache_gb"] = 1e3
    with pytest.raises(InstanceError, match="overflows a double") as e:
        from_dict(d)
    assert e.value.path == field


def test_regression_nan_names_the_field_the_line_and_the_column() -> None:
    """NaN exited 2 naming no field; now the message names the field and where the constant stands."""
    text = json.dumps(doc(), indent=1).replace('"gpu_per_hour": 2.5', '"gpu_per_hour": NaN')
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "NaN" in t)
    column = text.splitlines()[line - 1].index("NaN") + 1
    with pytest.raises(InstanceError) as e:
        loads(text)
    assert e.value.path == "prices.gpu_per_hour"
    assert f"line {line} column {column}" in str(e.value)


@pytest.mark.parametrize("literal", ["Infinity", "-Infinity", "1e999"])
def test_regression_other_non_finite_literals_name_their_field(literal: str) -> None:
    """Infinity and overflowing literals (which Python's json reads as inf) are refused naming the field."""
    text = json.dumps(doc()).replace('"size_gb": 0.16', f'"size_gb": {literal}')
    with pytest.raises(InstanceError) as e:
        loads(text)
    assert e.value.path == "datasets[1].size_gb"


def test_regression_files_beyond_the_size_limit_are_refused(tmp_path, monkeypatch) -> None:
    """A file larger than MAX_FILE_BYTES is refused before it is parsed (the limit lowered to 100 bytes here)."""
    monkeypatch.setattr(instance_module, "MAX_FILE_BYTES", 100)
    with pytest.raises(InstanceError, match="larger than 100 bytes"):
        load(write(tmp_path, json.dumps(doc())))


def test_regression_memory_error_while_parsing_is_a_clean_error(tmp_path, monkeypatch) -> None:
    """A MemoryError while the document is parsed becomes an InstanceError naming the file (exit 2, not 1)."""

    def exhausted(text: str) -> None:
        raise MemoryError

    monkeypatch.setattr(instance_module, "loads", exhausted)
    path = write(tmp_path, json.dumps(doc()))
    with pytest.raises(InstanceError, match="out of memory while parsing") as e:
        load(path)
    assert str(path) in str(e.value)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (json.dumps(doc()).encode("utf-16"), "binary content"),
        (json.dumps(doc()).replace("imagenet", "imagenét").encode("latin-1"), "not UTF-8 at line 1 column"),
    ],
)
def test_regression_other_encodings_are_named(tmp_path, data: bytes, problem: str) -> None:
    """UTF-16 and Latin-1 files are InstanceErrors naming the file, with the offset or the line and column."""
    path = tmp_path / "instance.json"
    path.write_bytes(data)
    with pytest.raises(InstanceError, match=problem):
        load(path)


@pytest.mark.parametrize(
    ("path", "value"), [("prices.bandwidth_gbps_per_hour", 5e-324), ("jobs[2].options[0].io_gbps", 5e-301)]
)
def test_regression_subnormal_magnitudes_are_refused(path: str, value: float) -> None:
    """Found by the fuzz test: p_b = 5e-324 made p_b · need underflow to 0 and the welfare MILP divide by it.

    Nonzero magnitudes below MIN_MAGNITUDE (1e-30) are refused naming the field; 0 stays allowed.
    """
    d = doc()
    set_field(d, path, value)
    with pytest.raises(InstanceError, match="must be 0 or at least 1e-30") as e:
        from_dict(d)
    assert e.value.path == path
    set_field(d, path, 0.0)
    from_dict(d)


def test_a_size_below_the_least_magnitude_states_the_rule_of_a_positive_field() -> None:
    """A ``size_gb`` of 1e-31 was refused as "must be 0 or at least 1e-30" although 0 is refused too: a field
    that must be > 0 states its true rule, at least 1e-30."""
    d = doc()
    set_field(d, "datasets[0].size_gb", 1e-31)
    with pytest.raises(InstanceError) as e:
        from_dict(d)
    assert e.value.path == "datasets[0].size_gb"
    assert e.value.problem.startswith("must be at least 1e-30")


def test_a_result_document_is_refused_for_its_schema_first(tmp_path: Path) -> None:
    """A result document (``cbalab/result@1``) passed as an instance was refused as ``bandwidth_gbps: is not a
    known field``; the loader names the schema mismatch before looking at any other key."""
    result = {"schema": "cbalab/result@1", "problem": "cost", "bandwidth_gbps": {"j0": 1.0}, "status": "optimal"}
    with pytest.raises(InstanceError) as e:
        load(write(tmp_path, result))
    assert e.value.path == "schema" and e.value.value == "cbalab/result@1"
    assert "cbalab/instance@1" in e.value.problem


def test_an_empty_instance_path_is_named_as_empty() -> None:
    """``load("")`` said ``INSTANCE: is a folder, not a file`` (Path("") is the current folder): it names the
    empty path."""
    with pytest.raises(InstanceError) as e:
        load("")
    assert (e.value.path, e.value.value, e.value.problem) == ("INSTANCE", "", "empty path")
