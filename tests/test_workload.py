"""The catalog, the trace loaders, the Philly-calibrated generator and the seeded dataset assignment."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cbalab.cli import main
from cbalab.experiments.data import data_path, data_root
from cbalab.experiments.workload import (
    PHILLY_GPU_SHARES,
    PHILLY_LOG_DURATION,
    Catalog,
    TraceError,
    assign,
    check_catalog,
    generate_trace,
    load_trace,
    workload_datasets,
)
from cbalab.models.instance import InstanceError

PHILLY = data_path("philly")  # the shipped copy (data/philly/philly_jobs.csv.gz)


def _write(tmp_path, text: str, name: str = "trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- catalog


def test_rate_is_samples_per_second_times_sample_size() -> None:
    cat = Catalog.default()
    imagenet = cat.datasets["imagenet-1k"]
    assert imagenet.sample_gb == pytest.approx(147.0 / 1_281_167)
    assert 0.10e-3 < imagenet.sample_gb < 0.12e-3  # ≈ 110-115 KB per JPEG
    assert cat.rate_gbps("resnet50", 1, gpu_type="v100") == pytest.approx(281.3 * imagenet.sample_gb)
    assert cat.rate_gbps("resnet50", 8, gpu_type="k80") == pytest.approx(292.4 * imagenet.sample_gb)


def test_gpu_counts_between_and_beyond_the_measured_ones() -> None:
    spec = Catalog.default().models["resnet50"]
    s = spec.samples_per_second(np.array([1, 2, 3, 8, 16, 32]), "v100")
    assert s[2] == pytest.approx((507.0 + 604.9) / 2)  # linear between 2 and 4 GPUs
    assert s[4] == pytest.approx(2 * 1107.0) and s[5] == pytest.approx(4 * 1107.0)  # per-GPU rate of 8 GPUs
    one_gpu_only = Catalog.default().models["recommendation"]
    assert one_gpu_only.samples_per_second(np.array([4]))[0] == pytest.approx(4 * 23280.0)


def test_catalog_is_consistent_and_names_every_source() -> None:
    cat = Catalog.default()
    for model in cat.models.values():
        assert model.source and model.default_gpu in model.throughput
        assert all(k in cat.datasets for k in model.datasets)
        assert all(v > 0 for table in model.throughput.values() for v in table.values())
    for data in cat.datasets.values():
        assert data.source and data.size_gb > 0 and data.samples > 0
        assert any(data.id in m.datasets for m in cat.models.values()), f"no model reads {data.id}"


def test_unknown_model_dataset_or_gpu_type_is_named() -> None:
    cat = Catalog.default()
    with pytest.raises(InstanceError, match="nope"):
        cat.rate_gbps("nope", 1)
    with pytest.raises(InstanceError, match="dataset"):
        cat.rate_gbps("resnet50", 1, dataset="mnist")
    with pytest.raises(InstanceError, match="gpu_type"):
        cat.rate_gbps("resnet50", 1, gpu_type="h100")


def test_embedded_throughputs_match_the_measured_csvs() -> None:
    assert check_catalog(data_root()) == []


# ---------------------------------------------------------------- traces


def test_the_philly_trace_loads_with_its_82247_jobs() -> None:
    trace = load_trace(PHILLY)
    # The file has 82,249 lines: a header, 82,247 jobs and a trailing blank line (the docs say 82,248).
    assert len(trace) == 82_247
    assert trace["submit_s"].min() == 0.0 and trace["submit_s"].is_monotonic_increasing
    assert (trace["duration_s"] > 0).all() and (trace["gpus"] >= 1).all()
    assert trace["gpus"].max() == 128 and trace["job_id"].is_unique
    ln = np.log(trace["duration_s"])
    assert ln.mean() == pytest.approx(PHILLY_LOG_DURATION[0], abs=0.01)
    assert ln.std() == pytest.approx(PHILLY_LOG_DURATION[1], abs=0.01)
    assert (trace["gpus"] == 1).mean() == pytest.approx(PHILLY_GPU_SHARES[1], abs=1e-3)


def test_generic_trace_loads_sorted_with_pins_and_skips_blank_lines(tmp_path) -> None:
    path = _write(
        tmp_path,
        "submit_time_s,duration_s,gpus,job_id,model,dataset\n10,100,2,b,resnet50,\n\n0,50,1,a,,cifar-10\n",
    )
    trace = load_trace(path)
    assert list(trace["job_id"]) == ["a", "b"]
    assert list(trace["line"]) == [4, 2]
    assert list(trace["gpus"]) == [1, 2] and list(trace["duration_s"]) == [50.0, 100.0]
    w = assign(trace, seed=3)
    jobs = w.jobs.set_index("job_id")
    assert jobs.loc["a", "dataset"] == "cifar-10" and jobs.loc["a", "model"] in ("resnet18", "pollux-resnet18")
    assert jobs.loc["b", "model"] == "resnet50" and jobs.loc["b", "dataset"].split("~")[0] == "imagenet-1k"
    rate = Catalog.default().rate_gbps("resnet50", 2, dataset=jobs.loc["b", "dataset"])
    assert jobs.loc["b", "io_gbps"] == pytest.approx(rate)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("submit_time_s,duration_s,gpus\n0,10,1\n5,abc,1\n", 3, "duration_s"),
        ("submit_time_s,duration_s,gpus\n0,10,1\n\n5,10,0\n", 4, "gpus"),
        ("submit_time_s,duration_s,gpus\n0,10,1\n,,\n", 3, "submit_time_s"),
        ("submit_time_s,duration_s,gpus\n0,10,1.5\n", 2, "gpus"),
        ("submit_time_s,duration_s,gpus\n1e308,10,1\n", 2, "submit_time_s"),
        ("submit_time_s,duration_s,gpus\n0,nan,1\n", 2, "duration_s"),
        ("submit_time_s,gpus\n0,1\n", 1, "duration_s"),
        ("submit_time_s,duration_s,gpus,job_id\n0,1,1,x\n1,1,1,x\n", 3, "job_id"),
        (
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,c\nyesterday,1,1,1,c\n",
            3,
            "timestamp",
        ),
        ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,zero,66.0,c\n", 2, "num_gpus"),
        ("submit_time_s,duration_s,gpus\n0,10,1\n5,\u00a0100,1\n", 3, "duration_s"),
        ("submit_time_s,duration_s,gpus\n0,10,1\u2009\n", 2, "gpus"),
    ],
)
def test_bad_traces_name_the_line_and_the_column(tmp_path, text: str, line: int, column: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert err.value.line == line and err.value.column == column
    assert f"line {line}" in str(err.value) and repr(column) in str(err.value)
    assert isinstance(err.value, ValueError)


def test_a_row_with_the_wrong_number_of_fields_names_its_line(tmp_path) -> None:
    path = _write(tmp_path, "submit_time_s,duration_s,gpus\n0,10,1\n1,2\n")
    with pytest.raises(TraceError, match="line 3"):
        load_trace(path)


def test_missing_or_empty_files_are_named(tmp_path) -> None:
    with pytest.raises(InstanceError, match=r"^trace: no such file"):
        load_trace(tmp_path / "absent.csv")
    with pytest.raises(TraceError, match="line 1, column 'header'"):
        load_trace(_write(tmp_path, ""))


def test_unknown_pinned_model_names_its_line_and_column(tmp_path) -> None:
    path = _write(tmp_path, "submit_time_s,duration_s,gpus,model\n0,10,1,resnet50\n1,10,1,gpt-9\n")
    with pytest.raises(TraceError) as err:
        assign(load_trace(path), seed=0)
    assert err.value.line == 3 and err.value.column == "model"


def test_cli_maps_a_bad_trace_to_exit_2_with_line_and_column(tmp_path, capsys) -> None:
    path = _write(tmp_path, "submit_time_s,duration_s,gpus\n0,10,1\n5,abc,1\n")
    assert main(["simulate", "--trace", str(path), "--policy", "cba"]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "duration_s" in err and "Traceback" not in err


# ---------------------------------------------------------------- generator and assignment


def test_generator_is_calibrated_to_the_philly_distributions() -> None:
    trace = generate_trace(20_000, seed=1)
    ln = np.log(trace["duration_s"].clip(lower=1.0))
    assert ln.mean() == pytest.approx(PHILLY_LOG_DURATION[0], abs=0.06)
    assert ln.std() == pytest.approx(PHILLY_LOG_DURATION[1], abs=0.06)
    shares = trace["gpus"].value_counts(normalize=True)
    for g, share in PHILLY_GPU_SHARES.items():
        assert shares.get(g, 0.0) == pytest.approx(share, abs=0.01)
    rate = (len(trace) - 1) / trace["submit_s"].iloc[-1]
    assert rate == pytest.approx(82_247 / 9_408_690, rel=0.03)
    pd.testing.assert_frame_equal(trace, generate_trace(20_000, seed=1))


def test_assignment_is_seeded_and_skew_concentrates_the_datasets() -> None:
    trace = generate_trace(4000, seed=2)
    a, b = assign(trace, seed=5, skew=1.0), assign(trace, seed=5, skew=1.0)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    top = {z: assign(trace, seed=5, skew=z).jobs["dataset"].value_counts(normalize=True).iloc[0] for z in (0.0, 2.0)}
    assert top[0.0] < 0.05 < 0.4 < top[2.0]
    cat = Catalog.default()
    for row in a.jobs.head(200).itertuples():
        assert row.dataset.split("~")[0] in cat.models[row.model].datasets
        assert row.io_gbps == pytest.approx(cat.rate_gbps(row.model, row.gpus, dataset=row.dataset))
    assert list(a.datasets["dataset"]) == workload_datasets(48)


def test_workload_datasets_copy_the_public_list() -> None:
    ids = workload_datasets(30)
    base = list(Catalog.default().datasets)
    assert ids[: len(base)] == base and ids[len(base)] == base[0] + "~1" and len(set(ids)) == 30
    with pytest.raises(InstanceError):
        workload_datasets(0)
    with pytest.raises(InstanceError, match="skew"):
        assign(generate_trace(3, seed=0), seed=0, skew=math.nan)


def test_catalog_data_ships_beside_the_module_and_loads_in_file_order() -> None:
    """catalog.csv is package data of cbalab.experiments.workload; every row has its source."""
    import csv
    from importlib import resources

    text = resources.files("cbalab.experiments.workload").joinpath("catalog.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    cat = Catalog.default()
    assert [r["id"] for r in rows if r["record"] == "dataset"] == list(cat.datasets)
    assert [r["id"] for r in rows if r["record"] == "model"] == list(cat.models)
    assert all(r["source"] for r in rows if r["record"] in ("dataset", "model"))
    assert sum(r["record"] == "throughput" for r in rows) == sum(
        len(t) for m in cat.models.values() for t in m.throughput.values()
    )
    # Numbers load bit-for-bit: CIFAR-10 is 50,000 records of 3,073 bytes.
    assert cat.datasets["cifar-10"].size_gb == 50_000 * 3073 / 1e9
    assert cat.datasets["wikitext-2"].samples == 2_088_628 // 35


def test_one_zipf_draw_behind_every_generator() -> None:
    """generate_cost and assign draw datasets through zipf_draw: the same seeded stream gives the same picks."""
    from cbalab.experiments.workload import dataset_sizes, generate_cost, philly_gpus, zipf_draw

    inst = generate_cost(50, 7, 11, skew=1.3)
    rng = np.random.default_rng(11)
    philly_gpus(rng, 50)
    rng.lognormal(math.log(0.05), 0.8, size=50)
    dataset_sizes(rng, 7)
    assert zipf_draw(rng, 7, 50, 1.3).items.tolist() == inst.job_dataset.tolist()
