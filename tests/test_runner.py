"""The sweep runner (experiments/runner.py): same rows whatever the workers, resume, failures, every experiment.

"Same rows" means equal after dropping the wall-time columns (names ending
``_seconds``, :func:`cbalab.experiments.runner.comparable`): those are
measurements and differ between any two sweeps.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import toy_experiment as toy
from hostile import one_line_naming, run_cli

from cbalab.experiments import about as about_module
from cbalab.experiments import backends, runner
from cbalab.experiments.about import ABOUT
from cbalab.experiments.meta import read_meta
from cbalab.experiments.runner import EXPERIMENTS, ExperimentError, comparable, run_key, run_sweep
from cbalab.models.files import sha256_file


def _sweep(out: Path, **kw: object) -> runner.Sweep:
    return run_sweep("toy", out, module=toy, progress=False, **kw)


def _rows(path: Path) -> pd.DataFrame:
    return comparable(pd.read_csv(path / "toy" / "runs.csv", keep_default_na=False))


def test_run_key_is_a_hash_of_the_parameters_whatever_their_order() -> None:
    assert run_key({"a": 1, "b": [1, 2]}) == run_key({"b": [1, 2], "a": 1})
    assert run_key({"a": 1}) != run_key({"a": 2})
    assert runner.derive_seed(0, "x", 1) == runner.derive_seed(0, "x", 1) != runner.derive_seed(1, "x", 1)


@pytest.mark.slow
def test_same_rows_for_one_and_two_workers(tmp_path: Path) -> None:
    one = _sweep(tmp_path / "one", quick=True, workers=1)
    two = _sweep(tmp_path / "two", quick=True, workers=2)
    assert one.exit_code == two.exit_code == 0
    assert len(one.runs) == 8
    assert "work_seconds" in one.runs and "run_seconds" not in comparable(one.runs)
    pd.testing.assert_frame_equal(_rows(tmp_path / "one"), _rows(tmp_path / "two"))
    assert list(one.runs["x"]) == list(range(8))  # grid order, not completion order


@pytest.mark.slow
def test_rows_differ_with_the_seed(tmp_path: Path) -> None:
    a = _sweep(tmp_path / "a", quick=True, seed=0)
    b = _sweep(tmp_path / "b", quick=True, seed=1)
    assert not a.runs["draw"].equals(b.runs["draw"])


@pytest.mark.slow
def test_interrupted_sweep_resumes_to_the_rows_of_an_uninterrupted_one(tmp_path: Path, monkeypatch) -> None:
    clean = _sweep(tmp_path / "clean", quick=True)
    monkeypatch.setenv("CBALAB_TOY_INTERRUPT", "5")
    cut = _sweep(tmp_path / "cut", quick=True)
    assert cut.interrupted and cut.exit_code == runner.EXIT_INTERRUPTED
    assert list(cut.runs["x"]) == [0, 1, 2, 3, 4]  # only whole runs, and runs.csv assembled from them
    files = sorted((tmp_path / "cut" / "toy" / "runs").iterdir())
    assert len(files) == 5 and all(json.loads(f.read_text())["row"] for f in files)
    meta = json.loads((tmp_path / "cut" / "toy" / "meta.json").read_text())
    assert meta["interrupted"] and meta["runs"]["missing"] == 3
    monkeypatch.delenv("CBALAB_TOY_INTERRUPT")
    resumed = _sweep(tmp_path / "cut", quick=True)
    assert (resumed.skipped, resumed.done) == (5, 3)
    pd.testing.assert_frame_equal(_rows(tmp_path / "clean"), _rows(tmp_path / "cut"))
    assert clean.exit_code == resumed.exit_code == 0


@pytest.mark.slow
def test_a_failed_run_is_recorded_and_the_sweep_goes_on_and_a_rerun_retries_it(tmp_path: Path, monkeypatch) -> None:
    clean = _sweep(tmp_path / "clean", quick=True)
    monkeypatch.setenv("CBALAB_TOY_FAIL", "2,6")
    broken = _sweep(tmp_path / "run", quick=True)
    assert broken.exit_code == runner.EXIT_FAILED and broken.failed == 2
    assert len(broken.runs) == 8
    failed = broken.runs[broken.runs["error"] != ""]
    assert list(failed["x"]) == [2, 6]
    assert failed["error"].str.contains("ValueError: toy run . fails on purpose").all()
    assert failed["value"].isna().all() and broken.runs[broken.runs["error"] == ""]["value"].notna().all()
    assert (tmp_path / "run" / "toy" / "toy.png").exists()  # figures come from the successful rows
    meta = json.loads((tmp_path / "run" / "toy" / "meta.json").read_text())
    assert meta["runs"]["failed"] == 2
    monkeypatch.delenv("CBALAB_TOY_FAIL")
    fixed = _sweep(tmp_path / "run", quick=True)
    assert (fixed.skipped, fixed.done, fixed.exit_code) == (6, 2, 0)
    pd.testing.assert_frame_equal(_rows(tmp_path / "clean"), _rows(tmp_path / "run"))
    assert clean.exit_code == 0


def test_meta_json_records_the_configuration_and_the_machine(tmp_path: Path) -> None:
    _sweep(tmp_path, quick=True, seed=7)
    meta = json.loads((tmp_path / "toy" / "meta.json").read_text())
    assert meta["seed"] == 7 and meta["config"]["quick"] is True and meta["config"]["grid_size"] == 8
    assert meta["cbalab_version"] and meta["packages"]["numpy"] and meta["machine"]["cpu_count"] >= 1
    assert meta["started"] <= meta["ended"]
    assert meta["figures"] == ["toy.pdf", "toy.png"] and meta["tables"] == ["summary.csv"]
    assert pd.read_csv(tmp_path / "toy" / "summary.csv")["rows"].tolist() == [8]


@pytest.mark.slow
def test_dask_cluster_gives_the_rows_of_local_processes(tmp_path: Path) -> None:
    from dask.distributed import LocalCluster

    local = _sweep(tmp_path / "local", quick=True, workers=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        remote = _sweep(tmp_path / "dask", quick=True, scheduler=cluster.scheduler_address)
    assert local.exit_code == remote.exit_code == 0
    pd.testing.assert_frame_equal(_rows(tmp_path / "local"), _rows(tmp_path / "dask"))


def test_an_unreachable_scheduler_is_bad_input(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(ExperimentError, match=r"no Dask scheduler answered at 'tcp://127\.0\.0\.1:9' within 1 s"):
        _sweep(tmp_path, quick=True, scheduler="tcp://127.0.0.1:9")


def test_unknown_and_missing_experiments_fail_clearly(monkeypatch) -> None:
    with pytest.raises(ExperimentError, match="unknown experiment 'nope'; known: io-cost"):
        runner.load_experiment("nope")
    monkeypatch.setitem(EXPERIMENTS, "ghost", "cbalab.experiments.runs.ghost_of_an_experiment")
    with pytest.raises(ExperimentError, match=r"listed but its module .* is not installed"):
        runner.load_experiment("ghost")


def test_experiment_list_prints_one_line_per_experiment() -> None:
    lines = about_module.listing()
    names = [line.split()[0] for line in lines[1:-1]]
    assert names == [
        "io-cost",
        "welfare",
        "optimality",
        "scaling",
        "sensitivity",
        "dynamic",
        "online-welfare",
        "confirm",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_quick_writes_runs_meta_and_a_figure(name: str, tmp_path: Path) -> None:
    lines: list[str] = []
    assert runner.run_experiment(name, tmp_path, quick=True, progress=False, echo=lines.append) == 0, "\n".join(lines)
    folder = tmp_path / name
    runs = pd.read_csv(folder / "runs.csv", keep_default_na=False)
    assert len(runs) > 0 and (runs["error"] == "").all()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["experiment"] == name and meta["config"]["quick"] is True
    assert meta["runs"]["total"] == len(runs) and meta["runs"]["failed"] == 0
    pngs = sorted(folder.glob("*.png"))
    assert pngs and all((folder / f"{p.stem}.pdf").exists() for p in pngs)
    # The console summary fits 100 columns (lines naming a path aside), with the columns chosen
    assert all(len(line) <= 100 for text in lines for line in text.splitlines() if str(tmp_path) not in line)
    for table, columns in about_module.ABOUT[name].console.items():
        header = pd.read_csv(folder / f"{table}.csv", nrows=0).columns
        assert set(columns) <= set(header), (table, set(columns) - set(header))


def test_shipped_data_replays_philly_and_matches_the_catalog() -> None:
    """data/ ships the Philly trace (gzip) and the Gavel and Pollux tables that the catalog's throughputs come from."""
    from cbalab.experiments.data import data_path, data_root
    from cbalab.experiments.workload import check_catalog, load_trace

    trace = load_trace(data_path("philly"))
    assert len(trace) == 82_247 and trace["gpus"].min() >= 1
    assert check_catalog(data_root()) == []
    for folder in ("philly", "gavel", "pollux-scalability"):
        assert (data_root() / folder / "LICENSE").exists() and (data_root() / folder / "README.md").exists()
    with pytest.raises(ValueError, match="no shipped data 'nope'"):
        data_path("nope")


# ------------------------------------------------ the runner against a hostile newcomer: what
# the experiments say of themselves, malformed run files and meta.json, schedulers that are not Dask's


ROOT = Path(__file__).resolve().parents[1]


def test_regression_experiment_list_describes_and_times_every_experiment() -> None:
    """--list gives each experiment a one-line description and its quick and full times."""
    lines = about_module.listing()
    assert len(lines) == len(EXPERIMENTS) + 2
    for name, line in zip(EXPERIMENTS, lines[1:-1]):
        about = ABOUT[name]
        assert line.startswith(name) and line.endswith(about.description)
        assert about_module.quick_time(about) in line and about_module.duration(about.full_seconds) in line
    assert max(len(line) for line in lines) <= about_module.CONSOLE_WIDTH


@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if (ROOT / "paper" / "results" / n / "meta.json").exists()])
def test_regression_full_times_are_those_of_the_committed_results(name: str) -> None:
    """Each full time --list prints is the wall time paper/results/NAME/meta.json records (the
    sum over its sessions), with its workers."""
    meta = read_meta(ROOT / "paper" / "results" / name / "meta.json")
    assert meta is not None and meta["config"]["quick"] is False
    wall = sum(float(s["wall_seconds"]) for s in meta["sessions"])
    assert ABOUT[name].full_seconds == pytest.approx(wall, abs=0.1)
    assert ABOUT[name].full_workers == meta["config"]["workers"]


def test_regression_console_tables_fit_100_columns_and_point_at_the_csv() -> None:
    """A 40-column table prints at most 100 characters wide, the chosen columns first, and says
    how many columns and rows only the CSV has."""
    wide = pd.DataFrame({f"a_rather_long_column_name_{i}": np.linspace(0, 1, 50) * i for i in range(40)})
    text = about_module.console_table(wide)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert re.search(r"\((\d+) more columns, 10 more rows in the CSV\)$", text)
    chosen = about_module.console_table(wide, ["a_rather_long_column_name_39", "nope", "a_rather_long_column_name_2"])
    header = chosen.splitlines()[0].split()
    assert header == ["a_rather_long_column_name_39", "a_rather_long_column_name_2"]
    assert "38 more columns" in chosen


def test_regression_reproduce_md_lists_every_experiment_with_its_times() -> None:
    """docs/reproduce.md has a row per experiment with the times --list prints."""
    text = (ROOT / "docs" / "reproduce.md").read_text()
    for name, about in ABOUT.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), None)
        assert row is not None, name
        assert about_module.quick_time(about) in row and about_module.duration(about.full_seconds) in row, row


def _valid_doc(path: Path) -> dict:
    return json.loads(path.read_text())


CORRUPTIONS = {
    "a list": lambda p, d: p.write_text("[]"),
    "null": lambda p, d: p.write_text("null"),
    "not JSON": lambda p, d: p.write_text('{"row": '),
    "no error": lambda p, d: p.write_text(json.dumps({k: v for k, v in d.items() if k != "error"})),
    "an empty row": lambda p, d: p.write_text(json.dumps({**d, "row": {}})),
    "a row that overwrites a parameter": lambda p, d: p.write_text(json.dumps({**d, "row": {**d["row"], "x": 99}})),
    "another run's parameters": lambda p, d: p.write_text(json.dumps({**d, "params": {**d["params"], "x": 99}})),
    "a folder": lambda p, d: (p.unlink(), p.mkdir(), (p / "junk").write_text("x")),
}


@pytest.mark.slow
@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_regression_a_malformed_run_file_is_redone_with_a_warning(corruption: str, tmp_path: Path) -> None:
    """A run file holding [], null, no JSON, no "error", an empty row, a row over a parameter,
    another run's parameters, or a folder in its place: that run is set aside and done again with one warning,
    and runs.csv ends as a clean sweep's, integer columns staying integers."""
    clean = _sweep(tmp_path / "clean", quick=True)
    _sweep(tmp_path / "run", quick=True)
    key = run_key(toy.grid(True, 0)[3])
    path = tmp_path / "run" / "toy" / "runs" / f"{key}.json"
    CORRUPTIONS[corruption](path, _valid_doc(path))
    warnings: list[str] = []
    again = _sweep(tmp_path / "run", warn=warnings.append, quick=True)
    assert (again.done, again.skipped, again.exit_code) == (1, 7, 0)
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: ") and "done again" in warnings[0]
    assert (path.parent / f"{key}.json.broken").exists() and _valid_doc(path)["row"]["value"] is not None
    pd.testing.assert_frame_equal(comparable(clean.runs), comparable(again.runs))
    written = pd.read_csv(tmp_path / "run" / "toy" / "runs.csv", keep_default_na=False)
    assert written["x"].dtype == np.int64 and list(written["x"]) == list(range(8))


def test_regression_assemble_never_lets_a_row_overwrite_its_parameters(tmp_path: Path) -> None:
    """assemble itself leaves out a recorded row whose column would overwrite a parameter."""
    _sweep(tmp_path, quick=True)
    grid = toy.grid(True, 0)
    run_dir = tmp_path / "toy" / "runs"
    path = run_dir / f"{run_key(grid[0])}.json"
    doc = _valid_doc(path)
    path.write_text(json.dumps({**doc, "row": {**doc["row"], "seed": -5}}))
    frame = runner.assemble(run_dir, grid)
    assert list(frame["x"]) == list(range(1, 8)) and -5 not in set(frame["seed"])


@pytest.mark.parametrize(
    "address", ["foo", "tcp://h:notaport", "http://127.0.0.1:8787", "tcp://:8786", "tcp://h:0", "inproc://"]
)
def test_regression_a_scheduler_address_of_the_wrong_form_is_refused_at_once(
    address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An address that cannot be a Dask scheduler's is exit 2 naming --scheduler,
    before any folder is made or any run done."""
    with pytest.raises(ExperimentError, match=r"^--scheduler: "):
        _sweep(tmp_path / "out", scheduler=address, quick=True)
    assert not (tmp_path / "out").exists()
    code, out, err = run_cli(capsys, "experiment", "sensitivity", "--out", str(tmp_path / "o"), "--scheduler", address)
    assert code == 2 and out == "" and one_line_naming(err, "--scheduler"), err


class _Server:
    """A loopback server for one test: silent (accepts, never answers) or talking (answers other bytes)."""

    def __init__(self, talk: bytes | None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.talk = talk
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        accepted = []
        for _ in range(200):  # bounded: at most 40 s, and it stops with the test
            if self.stop.is_set():
                break
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            accepted.append(conn)
            if self.talk is not None:
                conn.sendall(self.talk)
        for conn in accepted:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.mark.parametrize(
    ("talk", "expected"),
    [(None, "no Dask scheduler answered"), (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" * 20, "is not a")],
)
def test_regression_a_server_that_is_no_dask_scheduler_is_refused_within_the_deadline(
    talk: bytes | None, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port that accepts and stays silent, or answers bytes that are no Dask message (which
    made the client allocate 3 EiB), is ExperimentError naming --scheduler; no run is done."""
    monkeypatch.setattr(backends, "CONNECT_TIMEOUT_S", 1.0)
    server = _Server(talk)
    try:
        with pytest.raises(ExperimentError, match=rf"^--scheduler: .*{expected}"):
            _sweep(tmp_path, scheduler=server.address, quick=True)
    finally:
        server.close()
    assert not list((tmp_path / "toy" / "runs").glob("*.json"))


def test_regression_the_scheduler_deadline_is_within_15_seconds() -> None:
    """The one deadline of the scheduler check, with the probe thread's margin, is <= 15 s."""
    assert backends.CONNECT_TIMEOUT_S + 2.0 <= 15.0


@pytest.mark.parametrize("content", ["[]", "{not json", '{"sessions": {}}', '{"config": [], "sessions": []}'])
def test_regression_a_broken_meta_json_is_bad_input_naming_the_file(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A meta.json that is not JSON, not an object, or holds fields of the wrong type is exit 2
    naming the file, both for a resumed sweep and for ``cbalab paper --check``."""
    meta = tmp_path / "toy" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(content)
    with pytest.raises(ExperimentError, match=re.escape(str(meta))):
        _sweep(tmp_path, quick=True)
    results = tmp_path / "results"
    (results / "io-cost").mkdir(parents=True)
    (results / "io-cost" / "meta.json").write_text(content)
    code, out, err = run_cli(capsys, "paper", "--paper", str(ROOT / "paper"), "--results", str(results), "--check")
    assert code == 2 and out == "" and err.startswith(f"cbalab: error: {results / 'io-cost' / 'meta.json'}: ")
    assert err.count("\n") == 1


def test_regression_experiment_out_at_a_file_or_a_read_only_folder_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``experiment --out`` at a file, or at a folder that takes no new file (a read-only file
    system: /sys; or a folder without write permission, for a user who is not root), is exit 2 naming --out."""
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    targets = [blocker, blocker / "below"]
    if Path("/sys").is_dir() and sys.platform.startswith("linux"):
        targets.append(Path("/sys/cbalab-results"))
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        targets.append(locked)
    assert len(targets) >= 3
    for target in targets:
        code, out, err = run_cli(capsys, "experiment", "sensitivity", "--quick", "--out", str(target))
        assert code == 2 and out == "" and one_line_naming(err, "--out"), (target, err)


@pytest.mark.slow
def test_run_all_runs_every_experiment_into_one_folder(tmp_path: Path, monkeypatch) -> None:
    """``cbalab experiment all`` (runner.run_all): each experiment of the registry writes its runs.csv and
    meta.json under one --out, a failed run makes the exit status 1 without stopping the others, and
    meta.json names the commit that computed the rows and the sha256 of runs.csv."""
    monkeypatch.setattr(runner, "EXPERIMENTS", {"toy": "toy_experiment", "toy2": "toy_experiment"})
    lines: list[str] = []
    assert runner.run_all(tmp_path, quick=True, echo=lines.append) == 0
    for name in ("toy", "toy2"):
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        assert meta["runs_sha256"] == sha256_file(tmp_path / name / "runs.csv")
        assert meta["rows_commits"] == ([meta["git"]] if meta["git"] else [])
    assert [line.split(":")[0] for line in lines] == ["toy", "toy2"]
    monkeypatch.setenv("CBALAB_TOY_FAIL", "1")
    assert runner.run_all(tmp_path / "again", quick=True, echo=lines.append) == 1
    assert (tmp_path / "again" / "toy2" / "runs.csv").exists()
    with pytest.raises(runner.ExperimentError, match="--workers"):
        runner.run_all(tmp_path, workers=0)


@pytest.mark.parametrize("n", [5, 25])
def test_regression_sensitivity_grid_is_correctly_rounded_on_every_machine(n: int) -> None:
    """The sensitivity grid's points are 10^e correctly rounded (decimal arithmetic, not numpy's CPU-dispatched
    power, which put 292 of 2,500 points one ulp apart on AVX2 and AVX-512 machines): each equals the power taken
    at 60 digits and rounded once, the ends are exactly 1e-6 and 10, and the densities sit off the ratios."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    from cbalab.experiments.runs import sensitivity

    low, high = Fraction(-6), Fraction(1)
    points = sensitivity.log_grid(low, high, n)
    assert points[0] == 1e-6 and points[-1] == 10.0
    with localcontext() as ctx:
        ctx.prec = 60
        for i, value in enumerate(points):
            e = low + (high - low) * i / (n - 1)
            assert value == float(Decimal(10) ** (Decimal(e.numerator) / Decimal(e.denominator)))
    runs = sensitivity.grid(n == 5, 0)
    ratios = {r["price_ratio"] for r in runs}
    densities = {r["io_density_per_s"] for r in runs}
    assert ratios == set(points) and not ratios & densities and len(densities) == n
