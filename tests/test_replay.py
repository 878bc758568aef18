"""The one replay engine (experiments/replay.py): its loop, clock, stuck detection, writer and summary shape.

The regression tests (test_regression_...) hold one system for both problems: their replays run
on the engine, so a stuck replay ends with or without a period, a period below the clock's resolution cannot
spin, the summary has one shape and one ``files`` form, and every ``simulate`` option works on the problem it
is offered on or exits 2 naming why.  A hang is caught by counting the engine's steps, never by a clock.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cbalab.cli import main
from cbalab.experiments import elastic as elastic_module
from cbalab.experiments import replay as engine
from cbalab.experiments import simulate as simulate_module
from cbalab.experiments.workload import assign, generate_trace
from cbalab.experiments.workload.elastic import elastic
from cbalab.models.files import sha256_file
from cbalab.models.instance import InstanceError

#: More engine steps than any replay in this file needs: a replay that takes more is spinning.
STEPS = 20_000

STUCK = ["--generate", "5", "--bandwidth-gbps", "0", "--cache-gb", "1e6", "--period", "3600", "--quiet"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both strategies' ``advance`` fail after :data:`STEPS` calls, so a spinning replay fails instead of hanging."""
    for cls in (simulate_module.Replay, elastic_module.ElasticReplay):
        real = cls.advance
        calls = {"n": 0}

        def advance(self: Any, t_next: float, real: Any = real, calls: dict = calls) -> None:
            calls["n"] += 1
            if calls["n"] > STEPS:
                raise AssertionError(f"the replay spins: more than {STEPS} steps")
            real(self, t_next)

        monkeypatch.setattr(cls, "advance", advance)


def _trace_at(tmp_path: Path, t0: float) -> Path:
    path = tmp_path / "late.csv"
    path.write_text(f"submit_time_s,duration_s,gpus\n{t0},3600,2\n{t0 + 10},600,1\n")
    return path


# ---------------------------------------------------------------- the loop and the clock


@pytest.mark.usefixtures("bounded")
def test_regression_a_stuck_cost_replay_with_a_period_ends_naming_the_bandwidth(capsys) -> None:
    """B = 0 with jobs that must read remotely to warm: each tick counted as progress and the replay never
    ended; a tick is no progress, so it is bad input as without ``--period``, exit 2 naming the setting."""
    code, out, err = cli(capsys, "simulate", "--policy", "cba", *STUCK)
    assert code == 2 and out == ""
    assert err.startswith("cbalab: error: --bandwidth-gbps: no job can progress")


@pytest.mark.usefixtures("bounded")
def test_regression_a_stuck_welfare_replay_with_a_period_ends_reported_as_stuck(capsys) -> None:
    """The same cluster on the welfare problem: the replay ends at the time it got stuck, as without a period."""
    argv = ["simulate", "--problem", "welfare", "--policy", "autocba", *STUCK, "--no-timing"]
    code, out, _ = cli(capsys, *argv)
    assert code == 0
    ticking = json.loads(out)
    assert ticking["unfinished_jobs"] > 0 and ticking["stuck_at_s"] is not None and ticking["makespan_s"] is None
    code, out, _ = cli(capsys, *[a for a in argv if a not in ("--period", "3600")])
    plain = json.loads(out)
    assert plain["stuck_at_s"] is not None and plain["unfinished_jobs"] == ticking["unfinished_jobs"]


@pytest.mark.slow
@pytest.mark.usefixtures("bounded")
@pytest.mark.parametrize("problem", ["cost", "welfare"])
@pytest.mark.parametrize("bandwidth", [0.0, 0.05])
@pytest.mark.parametrize("period", [60.0, 3600.0])
@pytest.mark.parametrize("warmup", [True, False])
def test_regression_replays_with_a_period_end(problem: str, bandwidth: float, period: float, warmup: bool) -> None:
    """Starved clusters under ticks (random replays spun in 4 of 120): each ends within a bounded number of
    steps, with a result (stuck or not) or, for the cost problem with B = 0, bad input naming the bandwidth."""
    w = assign(generate_trace(12, 7), 7, n_datasets=3)
    cluster = {"cache_gb": 1e6, "bandwidth_gbps": bandwidth, "period_s": period, "warmup": warmup}
    try:
        if problem == "cost":
            summary = simulate_module.simulate(w, simulate_module.SimConfig(**cluster)).summary
        else:
            cfg = elastic_module.ElasticConfig(gpus=16, budget_fraction=0.3, **cluster)
            summary = elastic_module.replay(elastic(w, 7), cfg).summary
    except InstanceError as e:
        assert problem == "cost" and bandwidth == 0.0 and e.path == "bandwidth_gbps"
        return
    assert (summary["stuck_at_s"] is None) == (summary["unfinished_jobs"] == 0)


@pytest.mark.usefixtures("bounded")
@pytest.mark.parametrize("problem", ["cost", "welfare"])
def test_regression_a_period_below_the_clock_resolution_is_refused(tmp_path, capsys, problem: str) -> None:
    """``--period 1e-8`` at t = 1e9 s (t + 1e-8 == t) spun at one instant; now exit 2 naming the period."""
    policy = "cba" if problem == "cost" else "autocba"
    trace = str(_trace_at(tmp_path, 1e9))
    argv = ["simulate", "--problem", problem, "--policy", policy, "--trace", trace, "--quiet", "--period"]
    code, out, err = cli(capsys, *argv, "1e-8")
    assert code == 2 and out == ""
    assert "--period: is below the clock's resolution" in err
    assert cli(capsys, *argv, "600")[0] == 0


class _Clock:
    """A strategy with one job that leaves at ``t0 + 1e-5`` s: only the engine's ticks move it before that."""

    problem, policy_name, cache_policy, seed, label = "cost", "none", None, 0, "test"

    def __init__(self, t0: float) -> None:
        self.t = t0
        self.end = t0 + 1e-5
        self.n, self.done = 1, 0
        self.submit = np.zeros(1)
        self.times: list[float] = []

    def next_event(self) -> float:
        return self.end

    def advance(self, t_next: float) -> None:
        assert len(self.times) < STEPS, "the engine spins"
        self.times.append(t_next)
        self.t = t_next

    def depart(self) -> bool:
        self.done = int(self.t >= self.end)
        return bool(self.done)

    def admit(self) -> bool:
        return False

    def reallocate(self) -> None:
        return None

    def feed(self, decision: bool) -> None:
        return None

    def idle_limit(self) -> int:
        return 2

    def starved(self) -> bool:
        return False

    def stuck(self) -> None:
        raise AssertionError("not stuck")

    def report(self) -> engine.Report:
        frame = pd.DataFrame({"time_s": self.times})
        return engine.Report(frame, frame, np.array([self.end]), np.zeros(1), 0.0, {}, {}, {})


def test_regression_a_tick_never_falls_below_the_clock_resolution() -> None:
    """A period that counts where the trace starts but not where the clock has got to: every tick still
    moves the clock by at least its resolution (4 ulp), so the replay reaches its next event."""
    clock = _Clock(1e9)
    engine.run(clock, period_s=1e-15)
    steps = np.diff([1e9, *clock.times])
    assert clock.done == 1 and (steps > 0).all()
    assert steps[:-1].min() >= engine.resolution(1e9)


def test_resolution_is_four_ulp_and_a_period_at_it_is_accepted() -> None:
    assert engine.resolution(0.0) == engine.resolution(1.0) == 4 * math.ulp(1.0)
    assert engine.resolution(-1e9) == 4 * math.ulp(1e9)
    engine.check_period(engine.resolution(1e9), np.array([0.0, -1e9]))
    with pytest.raises(ValueError, match="period_s"):
        engine.check_period(0.5 * engine.resolution(1e9), np.array([0.0, -1e9]))


# ---------------------------------------------------------------- one summary, one writer


def _run(capsys: pytest.CaptureFixture[str], out: Path, *argv: str) -> dict:
    code, text, _ = cli(capsys, "simulate", "--quiet", "--no-timing", "--out", str(out), *argv)
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert json.loads(text) == summary  # what is printed is what is written
    return summary


HEAD = [
    "schema",
    "problem",
    "policy",
    "cache_policy",
    "seed",
    "jobs",
    "unfinished_jobs",
    "stuck_at_s",
    "events",
    "makespan_s",
    "gpu_hours",
    "mean_jct_s",
    "p50_jct_s",
    "p99_jct_s",
    "mean_queue_s",
]


def test_regression_one_summary_shape_and_one_files_form(tmp_path, capsys) -> None:
    """``files`` was ``{name: hex}`` on the cost path and ``{name: {"sha256": hex}}`` on the welfare path under the
    same schema; both replays now write one head, one tail and one ``files`` form (docs/interface.md)."""
    cost = _run(capsys, tmp_path / "cost", "--generate", "30", "--policy", "cba")
    welfare = _run(capsys, tmp_path / "welfare", "--problem", "welfare", "--generate", "30", "--policy", "optimus")
    for summary, problem in ((cost, "cost"), (welfare, "welfare")):
        keys = list(summary)
        assert keys[: len(HEAD)] == HEAD and keys[-3:] == ["config", "workload", "files"]
        assert summary["schema"] == "cbalab/simulation@1" and summary["problem"] == problem
        out = tmp_path / problem
        assert summary["files"] == {n: {"sha256": sha256_file(out / n)} for n in ("jobs.csv", "timeseries.csv")}
    assert isinstance(cost["cost"], dict) and isinstance(welfare["welfare"], dict)


def test_regression_the_welfare_writer_removes_the_old_summary_first(tmp_path, capsys, monkeypatch) -> None:
    """The welfare writer left the old summary.json in place while it wrote new tables; a rerun cut short now
    leaves tables without a summary, never a summary of other tables."""
    out = tmp_path / "run"
    argv = ("--problem", "welfare", "--policy", "autocba", "--generate", "20")
    old = _run(capsys, out, *argv)
    real = engine.atomic_write_csv
    calls = {"n": 0}

    def cut_short(path: Path, frame: pd.DataFrame) -> Path:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(path, frame)

    monkeypatch.setattr(engine, "atomic_write_csv", cut_short)
    code, _, _ = cli(capsys, "simulate", "--quiet", "--out", str(out), *argv[:-1], "21")
    assert code == 130
    assert sorted(p.name for p in out.iterdir()) == ["jobs.csv", "timeseries.csv"]
    assert sha256_file(out / "jobs.csv") != old["files"]["jobs.csv"]["sha256"]


def test_regression_no_timing_makes_welfare_outputs_byte_identical(tmp_path, capsys) -> None:
    """``--no-timing`` left wall_seconds in the welfare summary: identical runs differed; now every byte agrees."""
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        argv = ["simulate", "--problem", "welfare", "--policy", "autocba", "--generate", "25", "--quiet"]
        code, text, _ = cli(capsys, *argv, "--no-timing", "--out", str(out))
        assert code == 0
        runs.append((text, *((out / f).read_bytes() for f in ("jobs.csv", "timeseries.csv", "summary.json"))))
    assert runs[0] == runs[1] and "wall_seconds" not in json.loads(runs[0][0])
    code, text, _ = cli(capsys, *argv)
    assert code == 0 and json.loads(text)["wall_seconds"] >= 0


def test_regression_cache_policy_is_one_value_and_welfare_names_horizon_and_replay(tmp_path, capsys) -> None:
    """autocba's summary said ``cache_policy: "cba"`` at the top and ``"silod"`` under config, and ``welfare`` and
    ``welfare_total`` were two integrals without saying which; now one cache policy in both places (null when
    the policy sets its caches itself) and ``welfare: {horizon, horizon_s, rate_mean, replay}``."""
    welfare = ("--problem", "welfare", "--generate", "30", "--policy")
    auto = _run(capsys, tmp_path / "a", *welfare, "autocba")
    fair = _run(capsys, tmp_path / "f", *welfare, "gavel-fair", "--cache-policy", "cba")
    plain = _run(capsys, tmp_path / "p", *welfare, "gavel-fair")
    assert auto["cache_policy"] is None and auto["config"]["cache_policy"] is None
    assert fair["cache_policy"] == fair["config"]["cache_policy"] == "cba"
    assert plain["cache_policy"] == plain["config"]["cache_policy"] == "silod"
    w = auto["welfare"]
    assert set(w) == {"horizon", "horizon_s", "rate_mean", "replay"}
    assert w["rate_mean"] == pytest.approx(w["horizon"] / (w["horizon_s"] / 3600), rel=1e-12)
    jobs = pd.read_csv(tmp_path / "a" / "jobs.csv")
    assert w["replay"] == pytest.approx(jobs["welfare"].sum(), rel=1e-9)
    code, _, err = cli(capsys, "simulate", *welfare, "autocba", "--cache-policy", "silod")
    assert code == 2 and "--cache-policy: autocba sets its caches itself" in err


# ---------------------------------------------------------------- options that were ignored


@pytest.mark.parametrize(
    ("option", "why"),
    [
        (["--offline-optimum"], "--offline-optimum: the offline optimum P3 is a cost-problem bound"),
        (["--time-limit", "5"], "--time-limit: it limits the solve of the offline optimum P3"),
    ],
)
def test_regression_welfare_refuses_the_cost_options_it_ignored(capsys, option: list[str], why: str) -> None:
    """``--offline-optimum`` and ``--time-limit`` were accepted and ignored by the welfare replay (exit 0)."""
    code, out, err = cli(capsys, "simulate", "--problem", "welfare", "--policy", "autocba", "--generate", "5", *option)
    assert code == 2 and out == "" and why in err and "not available for the welfare problem" in err


def test_regression_welfare_honours_the_window(capsys) -> None:
    """``--window`` was ignored by the welfare replay; it now keeps the jobs submitted in it, as on the cost path."""
    argv = ["simulate", "--problem", "welfare", "--policy", "autocba", "--generate", "60", "--quiet", "--no-timing"]
    code, out, _ = cli(capsys, *argv, "--window", "0:4000")
    assert code == 0
    part = json.loads(out)
    cost = json.loads(cli(capsys, "simulate", "--policy", "cba", "--generate", "60", "--window", "0:4000")[1])
    assert 0 < part["jobs"] == cost["jobs"] < 60
    assert part["workload"]["window_s"] == [0.0, 4000.0]
    assert cli(capsys, *argv, "--window", "1e9:2e9")[0] == 2


@pytest.mark.parametrize(
    "option",
    [
        ["--cache-policy", "nosuch"],
        ["--cache-policy", "silod"],
        ["--utility-mix", "foo"],
        ["--budget-per-hour", "5"],
        ["--budget-fraction", "0.3"],
        ["--restart-delay-s", "30"],
    ],
)
def test_regression_the_cost_replay_refuses_welfare_options(capsys, option: list[str]) -> None:
    """``--cache-policy nosuch``, ``--utility-mix foo`` and ``--budget-per-hour`` were ignored on the cost path."""
    code, out, err = cli(capsys, "simulate", "--policy", "cba", "--generate", "5", "--quiet", *option)
    assert code == 2 and out == ""
    assert err.startswith(f"cbalab: error: {option[0]}: a welfare option") and "the welfare problem" in err


def test_regression_time_limit_needs_the_offline_optimum(capsys) -> None:
    """``--time-limit`` limits only the offline optimum's solve: alone it would be ignored."""
    code, out, err = cli(capsys, "simulate", "--policy", "cba", "--generate", "5", "--time-limit", "5")
    assert code == 2 and out == "" and "it needs the offline optimum" in err


def test_regression_welfare_checks_out_before_the_replay(tmp_path, capsys, monkeypatch) -> None:
    """An ``--out`` that is a file or a read-only folder failed after the welfare replay (exit 1); now exit 2
    before any work."""

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the replay ran")

    monkeypatch.setattr(elastic_module.ElasticReplay, "__init__", no_work)
    argv = ["simulate", "--problem", "welfare", "--policy", "autocba", "--generate", "5", "--quiet", "--out"]
    taken = tmp_path / "taken"
    taken.write_text("x")
    code, out, err = cli(capsys, *argv, str(taken))
    assert code == 2 and out == "" and "--out: is a file, not a folder" in err
    locked = tmp_path / "locked"
    locked.mkdir()

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError("read-only")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # models/files.py tries a real file: as root, bits say nothing
    code, out, err = cli(capsys, *argv, str(locked / "run"))
    assert code == 2 and out == "" and "permission denied" in err and "takes no new file" in err


# ------------------------------------------------ the writer's summary is last


def test_regression_simulate_summary_is_last_and_checksums_its_files(tmp_path, capsys, monkeypatch) -> None:
    """summary.json records the sha256 of jobs.csv and timeseries.csv; a rerun cut short leaves no stale summary."""
    out = tmp_path / "run"
    assert cli(capsys, "simulate", "--generate", "30", "--policy", "cba", "--quiet", "--out", str(out))[0] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == {name: {"sha256": sha256_file(out / name)} for name in ("jobs.csv", "timeseries.csv")}

    calls = {"n": 0}
    real = engine.atomic_write_csv

    def cut_short(path: Path, frame: object) -> Path:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(path, frame)

    monkeypatch.setattr(engine, "atomic_write_csv", cut_short)
    code, _, err = cli(capsys, "simulate", "--generate", "31", "--policy", "cba", "--quiet", "--out", str(out))
    assert code == 130 and err == "cbalab: interrupted\n"
    assert not (out / "summary.json").exists()  # the old summary is gone: the folder says it is incomplete
    assert sorted(p.name for p in out.iterdir()) == ["jobs.csv", "timeseries.csv"]  # whole files, no temporaries
    assert sha256_file(out / "jobs.csv") != summary["files"]["jobs.csv"]["sha256"]
