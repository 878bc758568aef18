"""The runner and the command line against a hostile newcomer (issue 23, items 7, 9 and 10): experiments that
say what they are, run files and meta.json that are not what they should be, schedulers that are not Dask
schedulers, and user mistakes that must be exit 2 with one line naming the option."""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import toy_experiment as toy

import cbalab
from cbalab.cli import main, parser
from cbalab.experiments import runner
from cbalab.experiments.runner import ABOUT, EXPERIMENTS, ExperimentError, comparable, run_key, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _sweep(out: Path, **kw: object) -> runner.Sweep:
    return run_sweep("toy", out, module=toy, progress=False, quick=True, **kw)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of the command line, argparse's own refusals (SystemExit) included."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_naming(err: str, option: str) -> bool:
    return err.startswith(f"cbalab: error: {option}: ") and err.count("\n") == 1 and "Traceback" not in err


# ------------------------------------------------------------------------------------------ item 7


def test_regression_issue23_experiment_list_describes_and_times_every_experiment() -> None:
    """Issue 23 item 7: --list gives each experiment a one-line description and its quick and full times."""
    lines = runner.listing()
    assert len(lines) == len(EXPERIMENTS) + 2
    for name, line in zip(EXPERIMENTS, lines[1:-1]):
        about = ABOUT[name]
        assert line.startswith(name) and line.endswith(about.description)
        assert runner.quick_time(about) in line and runner._duration(about.full_seconds) in line
    assert max(len(line) for line in lines) <= runner.CONSOLE_WIDTH


@pytest.mark.parametrize("name", [n for n in EXPERIMENTS if (ROOT / "paper" / "results" / n / "meta.json").exists()])
def test_regression_issue23_full_times_are_those_of_the_committed_results(name: str) -> None:
    """Issue 23 item 7: each full time --list prints is the wall time paper/results/NAME/meta.json records (the
    sum over its sessions), with its workers."""
    meta = runner.read_meta(ROOT / "paper" / "results" / name / "meta.json")
    assert meta is not None and meta["config"]["quick"] is False
    wall = sum(float(s["wall_seconds"]) for s in meta["sessions"])
    assert ABOUT[name].full_seconds == pytest.approx(wall, abs=0.1)
    assert ABOUT[name].full_workers == meta["config"]["workers"]


def _helps() -> Iterator[tuple[str, str]]:
    top = parser()
    yield "cbalab", top.format_help()
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in action.choices.items():
        yield name, sub.format_help()


def test_regression_issue23_help_text_has_no_raw_rest() -> None:
    """Issue 23 item 7: no ``literal`` or :role:`x` markup reaches a terminal in any --help."""
    for name, text in _helps():
        assert "``" not in text and not re.search(r":[a-z]+:`", text), (name, text)
    assert runner.plain("(``cbalab experiment NAME``, :func:`run_sweep`)") == "(cbalab experiment NAME, run_sweep)"


def test_regression_issue23_console_tables_fit_100_columns_and_point_at_the_csv() -> None:
    """Issue 23 item 7: a 40-column table prints at most 100 characters wide, the chosen columns first, and says
    how many columns and rows only the CSV has."""
    wide = pd.DataFrame({f"a_rather_long_column_name_{i}": np.linspace(0, 1, 50) * i for i in range(40)})
    text = runner.console_table(wide)
    assert max(len(line) for line in text.splitlines()) <= 100
    assert re.search(r"\((\d+) more columns, 10 more rows in the CSV\)$", text)
    chosen = runner.console_table(wide, ["a_rather_long_column_name_39", "nope", "a_rather_long_column_name_2"])
    header = chosen.splitlines()[0].split()
    assert header == ["a_rather_long_column_name_39", "a_rather_long_column_name_2"]
    assert "38 more columns" in chosen


def test_regression_issue23_reproduce_md_lists_every_experiment_with_its_times() -> None:
    """Issue 23 item 8: docs/reproduce.md has a row per experiment with the times --list prints."""
    text = (ROOT / "docs" / "reproduce.md").read_text()
    for name, about in ABOUT.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), None)
        assert row is not None, name
        assert runner.quick_time(about) in row and runner._duration(about.full_seconds) in row, row


# ------------------------------------------------------------------------------------------ item 9


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


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_regression_issue23_a_malformed_run_file_is_redone_with_a_warning(corruption: str, tmp_path: Path) -> None:
    """Issue 23 item 9: a run file holding [], null, no JSON, no "error", an empty row, a row over a parameter,
    another run's parameters, or a folder in its place: that run is set aside and done again with one warning,
    and runs.csv ends as a clean sweep's, integer columns staying integers."""
    clean = _sweep(tmp_path / "clean")
    _sweep(tmp_path / "run")
    key = run_key(toy.grid(True, 0)[3])
    path = tmp_path / "run" / "toy" / "runs" / f"{key}.json"
    CORRUPTIONS[corruption](path, _valid_doc(path))
    warnings: list[str] = []
    again = _sweep(tmp_path / "run", warn=warnings.append)
    assert (again.done, again.skipped, again.exit_code) == (1, 7, 0)
    assert len(warnings) == 1 and warnings[0].startswith(f"{path}: ") and "done again" in warnings[0]
    assert (path.parent / f"{key}.json.broken").exists() and _valid_doc(path)["row"]["value"] is not None
    pd.testing.assert_frame_equal(comparable(clean.runs), comparable(again.runs))
    written = pd.read_csv(tmp_path / "run" / "toy" / "runs.csv", keep_default_na=False)
    assert written["x"].dtype == np.int64 and list(written["x"]) == list(range(8))


def test_regression_issue23_assemble_never_lets_a_row_overwrite_its_parameters(tmp_path: Path) -> None:
    """Issue 23 item 9: assemble itself leaves out a recorded row whose column would overwrite a parameter."""
    _sweep(tmp_path)
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
def test_regression_issue23_a_scheduler_address_of_the_wrong_form_is_refused_at_once(
    address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 items 9 and 10: an address that cannot be a Dask scheduler's is exit 2 naming --scheduler,
    before any folder is made or any run done."""
    with pytest.raises(ExperimentError, match=r"^--scheduler: "):
        _sweep(tmp_path / "out", scheduler=address)
    assert not (tmp_path / "out").exists()
    code, out, err = _cli(["experiment", "sensitivity", "--out", str(tmp_path / "o"), "--scheduler", address], capsys)
    assert code == 2 and out == "" and _one_line_naming(err, "--scheduler"), err


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
def test_regression_issue23_a_server_that_is_no_dask_scheduler_is_refused_within_the_deadline(
    talk: bytes | None, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 item 9: a port that accepts and stays silent, or answers bytes that are no Dask message (which
    made the client allocate 3 EiB), is ExperimentError naming --scheduler; no run is done."""
    monkeypatch.setattr(runner, "CONNECT_TIMEOUT_S", 1.0)
    server = _Server(talk)
    try:
        with pytest.raises(ExperimentError, match=rf"^--scheduler: .*{expected}"):
            _sweep(tmp_path, scheduler=server.address)
    finally:
        server.close()
    assert not list((tmp_path / "toy" / "runs").glob("*.json"))


def test_regression_issue23_the_scheduler_deadline_is_within_15_seconds() -> None:
    """Issue 23 item 9: the one deadline of the scheduler check, with the probe thread's margin, is <= 15 s."""
    assert runner.CONNECT_TIMEOUT_S + 2.0 <= 15.0


@pytest.mark.parametrize("content", ["[]", "{not json", '{"sessions": {}}', '{"config": [], "sessions": []}'])
def test_regression_issue23_a_broken_meta_json_is_bad_input_naming_the_file(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 9: a meta.json that is not JSON, not an object, or holds fields of the wrong type is exit 2
    naming the file, both for a resumed sweep and for ``cbalab paper --check``."""
    meta = tmp_path / "toy" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(content)
    with pytest.raises(ExperimentError, match=re.escape(str(meta))):
        _sweep(tmp_path)
    results = tmp_path / "results"
    (results / "io-cost").mkdir(parents=True)
    (results / "io-cost" / "meta.json").write_text(content)
    code, out, err = _cli(["paper", "--paper", str(ROOT / "paper"), "--results", str(results), "--check"], capsys)
    assert code == 2 and out == "" and err.startswith(f"cbalab: error: {results / 'io-cost' / 'meta.json'}: ")
    assert err.count("\n") == 1


# ------------------------------------------------------------------------------------------ item 10


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["simulate", "--generate", "5", "--policy", "cba", "--gpus", "99999999999999999999999"], "--gpus"),
        (["simulate", "--generate", "5", "--policy", "cba", "--price-gpu", "1e308"], "--price-gpu"),
        (
            ["simulate", "--generate", "5", "--policy", "autocba", "--problem=welfare", "--restart-delay-s=1e308"],
            "--restart-delay-s",
        ),
        (["experiment", "sensitivity", "--seed", "-1"], "--seed"),
        (["experiment", "sensitivity", "--workers", "0"], "--workers"),
    ],
)
def test_regression_issue23_out_of_range_options_are_one_line_exit_2(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 10: an overflowing count, a price or delay that would make the replay's bill infinite, and
    a negative seed are exit 2 with one line naming the option, before anything runs."""
    code, out, err = _cli(argv, capsys)
    assert code == 2 and out == "" and _one_line_naming(err, option), err


def test_regression_issue23_experiment_out_at_a_file_or_a_read_only_folder_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 item 10: ``experiment --out`` at a file, or at a folder that takes no new file (a read-only file
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
        code, out, err = _cli(["experiment", "sensitivity", "--quick", "--out", str(target)], capsys)
        assert code == 2 and out == "" and _one_line_naming(err, "--out"), (target, err)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"trace": 5.0}, "trace"),
        ({"trace": "no/such/trace.csv"}, "trace"),
        ({"trace": 5, "seed": -1}, "seed"),
        ({"trace": 5, "gpus": 2**70}, "gpus"),
        ({"trace": 5, "prices": (1, 2)}, "prices"),
        ({"trace": 5, "prices": (1, 2, float("inf"))}, "prices[2]"),
        ({"trace": 5, "cache_gb": -1.0}, "cache_gb"),
        ({"trace": 5, "policy": "cbba"}, "policy"),
        ({"trace": 5, "problem": "speed"}, "problem"),
    ],
)
def test_regression_issue23_api_simulate_names_the_bad_argument(kw: dict, field: str) -> None:
    """Issue 23 item 10: cbalab.simulate raises the package's InstanceError naming the argument, not an error
    from deep inside numpy or the replay."""
    with pytest.raises(cbalab.InstanceError) as info:
        cbalab.simulate(**kw)
    assert info.value.path == field


def test_regression_issue23_api_simulate_takes_numpy_integers() -> None:
    """Issue 23 item 10: np.int64(5) is a whole number of jobs (and of GPUs), replayed like 5."""
    a = cbalab.simulate(np.int64(5), "cba", gpus=np.int64(16), seed=np.int64(1))
    b = cbalab.simulate(5, "cba", gpus=16, seed=1)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
