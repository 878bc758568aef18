"""The ``cbalab`` command line against docs/interface.md: result documents, exit statuses, error messages.

Most tests call ``experiments.cli.main`` in-process (fast); one runs the
installed console script in a subprocess to check the real entry point and
that no traceback reaches stderr.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cbalab.cli import main
from cbalab.experiments.workload import generate_cost
from cbalab.models.instance import build, load

#: The result@1 fields docs/interface.md lists for every answer with an allocation.
RESULT_FIELDS = {
    "schema",
    "problem",
    "method",
    "status",
    "objective",
    "bound",
    "cost_per_hour",
    "welfare",
    "gpus",
    "cache_gb",
    "bandwidth_gbps",
    "solve_seconds",
}


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Call the CLI in-process; return (exit status, stdout, stderr)."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    """A small generated cost instance written to disk."""
    path = tmp_path / "inst.json"
    generate_cost(40, 8, seed=3).save(path)
    return path


@pytest.mark.parametrize("method", ["cba", "lp", "milp", "flow"])
def test_solve_prints_result_document(
    method: str, instance_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``solve`` prints one result@1 JSON object with every INTERFACE field, and writes it to --out."""
    out_file = tmp_path / "res.json"
    code, out, err = run_main(
        ["solve", str(instance_file), "--problem", "cost", "--method", method, "--out", str(out_file)], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc.keys() >= RESULT_FIELDS
    assert doc["schema"] == "cbalab/result@1"
    assert doc["problem"] == "cost" and doc["method"] == method
    assert doc["status"] == "optimal"
    inst = load(instance_file)
    assert set(doc["gpus"]) == set(inst.job_ids)
    assert set(doc["cache_gb"]) == set(inst.dataset_ids)
    assert set(doc["bandwidth_gbps"]) == set(inst.job_ids)
    parts = doc["cost_per_hour"]
    assert parts["total"] == pytest.approx(parts["gpu"] + parts["cache"] + parts["bandwidth"])
    assert doc["objective"] == pytest.approx(parts["total"])
    assert doc["bound"] <= doc["objective"] * (1 + 1e-9)
    assert json.loads(out_file.read_text()) == doc


def test_exact_methods_agree_through_the_cli(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CBA, the LP and the flow report the same optimum on the same file (Theorem 1 of proofs/cba_optimality.md)."""
    objectives = {}
    for method in ("cba", "lp", "flow"):
        code, out, _ = run_main(["solve", str(instance_file), "--problem", "cost", "--method", method], capsys)
        assert code == 0
        objectives[method] = json.loads(out)["objective"]
    assert objectives["lp"] == pytest.approx(objectives["cba"], rel=1e-7)
    assert objectives["flow"] == pytest.approx(objectives["cba"], rel=1e-12)


BAD_FILES = [
    ("negative-size", lambda d: d["datasets"][0].update(size_gb=-3.5), "datasets[0].size_gb", "-3.5"),
    ("unknown-dataset", lambda d: d["jobs"][2].update(dataset="nope"), "jobs[2].dataset", '"nope"'),
    ("unknown-schema", lambda d: d.update(schema="other@9"), "schema", '"other@9"'),
    ("bad-granularity", lambda d: d["cluster"].update(cache_granularity="blocks"), "cache_granularity", "blocks"),
]


@pytest.mark.parametrize(("mutate", "path", "value"), [pytest.param(m, p, v, id=i) for i, m, p, v in BAD_FILES])
def test_bad_instance_exits_2_naming_field_and_value(
    mutate, path: str, value: str, instance_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad instance file: exit 2, stderr names the field and the value, no traceback, nothing on stdout."""
    doc = json.loads(instance_file.read_text())
    mutate(doc)
    instance_file.write_text(json.dumps(doc))
    code, out, err = run_main(["solve", str(instance_file), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2
    assert path in err and value in err
    assert "Traceback" not in err
    assert out == ""


def test_malformed_json_and_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Malformed JSON names line and column; a missing file names the path; both exit 2."""
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "cbalab/instance@1",\n "cluster": }')
    code, _, err = run_main(["solve", str(broken), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2 and "JSON line 2" in err and "Traceback" not in err
    code, _, err = run_main(["solve", str(tmp_path / "absent.json"), "--problem", "cost", "--method", "cba"], capsys)
    assert code == 2 and "absent.json" in err


def test_unknown_method_exits_2(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown method is bad input (exit 2) and the message lists the known ones."""
    code, out, err = run_main(["solve", str(instance_file), "--problem", "cost", "--method", "magic"], capsys)
    assert code == 2
    assert "magic" in err and "cba" in err
    assert out == ""


@pytest.mark.parametrize("args", [["--time-limit", "0"], ["--time-limit", "soon"], ["--problem", "speed"]])
def test_bad_options_exit_2(args: list[str], instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse errors (bad time limit, unknown problem) exit 2 without a traceback."""
    full = ["solve", str(instance_file), "--problem", "cost", "--method", "cba", *args]
    with pytest.raises(SystemExit) as info:
        main(full)
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_infeasible_instance_exits_0_with_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Theorem 1 (ii) of proofs/cba_optimality.md through the CLI: no cache, B below Σ r_j → status infeasible.

    One job of 1 GB/s, C = 0, B = 0.5: the ρ-ordered fill of C leaves 1 GB/s > B.
    Exit 0 (an answer), status ``infeasible`` with a reason, no allocation.
    """
    inst = build(
        dataset_size_gb=np.array([10.0]),
        job_dataset=np.array([0]),
        job_gpus=np.array([1]),
        job_io_gbps=np.array([1.0]),
        cache_gb=0.0,
        bandwidth_gbps=0.5,
        prices=(1.0, 0.1, 1.0),
    )
    path = tmp_path / "inf.json"
    inst.save(path)
    for method in ("cba", "lp"):
        code, out, err = run_main(["solve", str(path), "--problem", "cost", "--method", method], capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["status"] == "infeasible"
        assert doc["reason"]
        assert doc["objective"] is None and doc["cache_gb"] is None


def test_flow_on_capped_instance_is_an_error_status_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flow method does not state a finite B (models/flow.py): status error, reason names field and value."""
    path = tmp_path / "capped.json"
    generate_cost(20, 4, seed=1, bandwidth_fraction=0.75).save(path)
    code, out, _ = run_main(["solve", str(path), "--problem", "cost", "--method", "flow"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "error"
    assert "cluster.bandwidth_gbps" in doc["reason"]
    assert str(load(path).bandwidth_gbps)[:6] in doc["reason"]


def test_time_limit_is_accepted(instance_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--time-limit`` is accepted; a small LP finishes well within it and is still proven optimal."""
    code, out, _ = run_main(
        ["solve", str(instance_file), "--problem", "cost", "--method", "milp", "--time-limit", "60"], capsys
    )
    assert code == 0
    assert json.loads(out)["status"] == "optimal"


def test_generate_is_deterministic_per_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same seed gives byte-identical output (stdout and --out); another seed gives another instance."""
    args = ["generate", "--kind", "cost", "--jobs", "25", "--datasets", "6"]
    texts = []
    for seed in ("5", "5", "6"):
        code, out, _ = run_main([*args, "--seed", seed], capsys)
        assert code == 0
        texts.append(out)
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]
    out_file = tmp_path / "g.json"
    assert run_main([*args, "--seed", "5", "--out", str(out_file)], capsys)[0] == 0
    assert out_file.read_text() == texts[0]
    inst = load(out_file)
    assert inst.n_jobs == 25 and inst.n_datasets == 6
    assert math.isinf(inst.bandwidth_gbps)


def test_generate_rejects_zero_datasets(capsys: pytest.CaptureFixture[str]) -> None:
    """``--datasets 0`` cannot hold any job: exit 2 naming the option."""
    code, _, err = run_main(["generate", "--kind", "cost", "--jobs", "3", "--datasets", "0"], capsys)
    assert code == 2 and "--datasets" in err


def test_console_script_subprocess(instance_file: Path, tmp_path: Path) -> None:
    """The installed ``cbalab`` entry point: a result on stdout with exit 0; a bad file exits 2 without traceback."""
    exe = shutil.which("cbalab", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "cbalab.cli"]
    ok = subprocess.run(
        [*cmd, "solve", str(instance_file), "--problem", "cost", "--method", "cba"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["status"] == "optimal"
    bad = tmp_path / "bad.json"
    doc = json.loads(instance_file.read_text())
    doc["jobs"][0]["io_gbps"] = -1
    bad.write_text(json.dumps(doc))
    res = subprocess.run(
        [*cmd, "solve", str(bad), "--problem", "cost", "--method", "cba"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2
    assert "jobs[0].io_gbps" in res.stderr and "-1" in res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout == ""


def test_regression_issue23_every_file_error_has_one_wording_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 6: a missing instance and a missing trace (and a folder in the place of either) read alike:
    ``OPTION: no such file (got "PATH")``, one line, exit 2; so do the --out refusals."""
    absent = tmp_path / "absent"
    cases = [
        (["solve", f"{absent}.json", "--method", "cba"], f'INSTANCE: no such file (got "{absent}.json")'),
        (["simulate", "--trace", f"{absent}.csv", "--policy", "cba"], f'--trace: no such file (got "{absent}.csv")'),
        (["solve", str(tmp_path), "--method", "cba"], f'INSTANCE: is a folder, not a file (got "{tmp_path}")'),
        (
            ["simulate", "--trace", str(tmp_path), "--policy", "cba"],
            f'--trace: is a folder, not a file (got "{tmp_path}")',
        ),
        (["compare", f"{absent}.json"], f'INSTANCE: no such file (got "{absent}.json")'),
        (["paper", "--results", str(absent)], f'--results: no such folder (got "{absent}")'),
    ]
    for argv, message in cases:
        code, out, err = run_main(argv, capsys)
        assert (code, out, err) == (2, "", f"cbalab: error: {message}\n"), argv


def _philly() -> str:
    from cbalab.experiments.data import data_path

    return str(data_path("philly"))


def test_regression_issue23_window_says_the_traces_span_when_it_selects_almost_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 23 item 6: ``--window 0:20000`` on Philly replays its one job and says so with the trace's span on
    stderr; a window that selects nothing is exit 2 naming --window, with the span."""
    args = ["simulate", "--trace", _philly(), "--policy", "cba", "--quiet", "--no-timing"]
    code, out, err = run_main([*args, "--window", "0:20000"], capsys)
    assert code == 0 and json.loads(out)["jobs"] == 1
    assert err == (
        "cbalab: note: --window 0:20000 selects 1 of the trace's 82,247 jobs, whose submissions span "
        "0 s to 9,408,690 s (108.9 d)\n"
    )
    code, out, err = run_main([*args, "--window", "1:20000"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: --window: selects none of the trace's 82,247 jobs, whose submissions span")
    code, out, err = run_main([*args, "--window", "0:1000000"], capsys)
    assert code == 0 and json.loads(out)["jobs"] > 10 and err == ""
