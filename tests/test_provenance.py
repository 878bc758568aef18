"""Results that keep up with the code: staleness by what the runs executed and read
(experiments/provenance.py, experiments/paper/check.py ``stale_results``) and ``--verify``
(experiments/verify.py), each case of staleness a test."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from cbalab.experiments import provenance, verify
from cbalab.experiments.errors import ExperimentError
from cbalab.experiments.paper import check
from cbalab.experiments.runner import EXPERIMENTS, load_experiment, run_sweep

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "paper" / "results"

BODY = '''"""A module."""

LIMIT = 3


def f(x: int) -> int:
    """Twice x, up to LIMIT."""
    return min(2 * x, LIMIT)
'''


@pytest.mark.parametrize(
    ("edited", "same"),
    [
        (BODY.replace("Twice x, up to LIMIT.", "Double x (capped)."), True),
        (BODY.replace("LIMIT = 3\n", "LIMIT = 3  # the cap\n\n"), True),
        (BODY.replace("def f(x: int) -> int:", "def f(\n    x: float,\n) -> float:"), True),
        (BODY.replace('"""A module."""\n', ""), True),
        (BODY.replace("LIMIT = 3", "LIMIT = 4"), False),
        (BODY.replace("2 * x", "x * 2"), False),
    ],
)
def test_code_digest_ignores_docstrings_comments_layout_and_annotations_only(edited: str, same: bool) -> None:
    """A docstring, comment, layout or annotation edit keeps a module's digest; an edit of what runs does not."""
    assert (provenance.code_digest(edited) == provenance.code_digest(BODY)) is same


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """io-cost, sensitivity and welfare swept at their quick sizes on two spawned workers, as the CLI runs them."""
    out = tmp_path_factory.mktemp("quick")
    provenance._READ.clear()  # files other tests read in this process are no part of these sweeps
    for name in ("io-cost", "sensitivity", "welfare"):
        sweep = run_sweep(name, out, quick=True, workers=2, progress=False)
        assert sweep.exit_code == 0
    return out


def _only(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    """Judge staleness over the three experiments of ``quick_results`` only."""
    names = ("io-cost", "sensitivity", "welfare")
    monkeypatch.setattr(check, "experiments", lambda: {n: load_experiment(n) for n in names})


def _stale(out: Path) -> set[str]:
    """The experiments that stale_results lists."""
    return {line.split(":")[0].split(" (")[0] for line in check.stale_results(out)}


@pytest.mark.slow
def test_the_record_names_the_modules_the_runs_imported(quick_results: Path) -> None:
    """CBA's module is in the record of io-cost and sensitivity, AutoCBA's only in welfare's; the paper's modules
    in none (provenance.PRESENTATION); io-cost read the shipped Philly trace and the catalog."""
    prov = {
        n: json.loads((quick_results / n / "meta.json").read_text())["provenance"]
        for n in ("io-cost", "sensitivity", "welfare")
    }
    for name in ("io-cost", "sensitivity"):
        assert "cbalab.algorithms.cba" in prov[name]["code"]
        assert not [m for m in prov[name]["code"] if m.startswith("cbalab.algorithms.autocba")]
    assert [m for m in prov["welfare"]["code"] if m.startswith("cbalab.algorithms.autocba")]
    assert not [m for p in prov.values() for m in p["code"] if provenance.presentation(m)]
    assert "data/philly/philly_jobs.csv.gz" in prov["io-cost"]["data"]
    assert "experiments/workload/catalog.csv" in prov["io-cost"]["data"]
    assert "data/philly/philly_jobs.csv.gz" not in prov["sensitivity"]["data"]
    assert set(prov["io-cost"]["toolchain"]) == {"python", *provenance.TOOLCHAIN}


def _edit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str, old: str, new: str) -> None:
    """Make ``module`` resolve to a copy of its source with ``old`` replaced by ``new``."""
    source = provenance.module_file(module)
    assert source is not None
    text = source.read_text()
    assert old in text
    copy = tmp_path / (module + ".py")
    copy.write_text(text.replace(old, new, 1))
    real = provenance.module_file
    monkeypatch.setattr(provenance, "module_file", lambda name: copy if name == module else real(name))


@pytest.mark.slow
def test_nothing_is_stale_right_after_the_runs(quick_results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record matches the code it was made from."""
    _only(monkeypatch, quick_results)
    assert check.stale_results(quick_results) == []


@pytest.mark.parametrize(
    ("module", "old", "new", "stale"),
    [
        # a docstring or a comment anywhere: nothing
        ("cbalab.algorithms.cba", '"""', '"""Reworded. ', set()),
        ("cbalab.models.instance", "\nfrom __future__", "\n# a comment\nfrom __future__", set()),
        # algorithms/autocba/: welfare, not io-cost, not sensitivity
        ("cbalab.algorithms.autocba.greedy", "\ndef ", "\nEDITED = 1\n\n\ndef ", {"welfare"}),
        # algorithms/cba.py: io-cost and sensitivity (and welfare, whose baselines run CBA's feed)
        ("cbalab.algorithms.cba", "\ndef ", "\nEDITED = 1\n\n\ndef ", {"io-cost", "sensitivity", "welfare"}),
        # the paper's code computes no row: nothing
        ("cbalab.experiments.paper.claims", "\ndef ", "\nEDITED = 1\n\n\ndef ", set()),
        # an experiment's own run module: that experiment
        ("cbalab.experiments.runs.sensitivity", "\ndef ", "\nEDITED = 1\n\n\ndef ", {"sensitivity"}),
    ],
)
@pytest.mark.slow
def test_an_edit_stales_exactly_the_experiments_that_ran_it(
    quick_results: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    module: str,
    old: str,
    new: str,
    stale: set[str],
) -> None:
    """Which experiments an edit makes stale, by the modules their runs imported."""
    _only(monkeypatch, quick_results)
    _edit(monkeypatch, tmp_path, module, old, new)
    assert _stale(quick_results) == stale


@pytest.mark.slow
def test_a_changed_trace_stales_every_experiment_that_read_it(
    quick_results: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The shipped Philly trace changed: io-cost, which read it, is stale and says which file; sensitivity is not."""
    _only(monkeypatch, quick_results)
    copy = tmp_path / "philly.csv.gz"
    copy.write_bytes(b"changed")
    real = provenance.data_path
    monkeypatch.setattr(provenance, "data_path", lambda key: copy if key.endswith("philly_jobs.csv.gz") else real(key))
    lines = check.stale_results(quick_results)
    assert _stale(quick_results) == {"io-cost"}
    assert any("data file data/philly/philly_jobs.csv.gz changed" in line for line in lines)


@pytest.mark.slow
def test_a_missing_module_or_a_changed_grid_is_stale(quick_results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that is gone counts as changed; so does a grid that is no longer the one the rows were run on."""
    _only(monkeypatch, quick_results)
    real = provenance.module_file
    monkeypatch.setattr(provenance, "module_file", lambda n: None if n == "cbalab.algorithms.cba" else real(n))
    assert any("module cbalab.algorithms.cba is gone" in line for line in check.stale_results(quick_results))
    monkeypatch.setattr(provenance, "module_file", real)
    mod = load_experiment("sensitivity")
    grid = mod.grid
    monkeypatch.setattr(mod, "grid", lambda quick, seed: grid(quick, seed)[:-1])
    assert _stale(quick_results) == {"sensitivity"}


def test_a_presentation_module_in_an_older_record_is_not_compared() -> None:
    """A record made while the verifier still counted as row code (a one-worker verification imports it in the
    runs' process) does not go stale when the verifier changes; a computing module beside it still does."""
    prov = {"code": {"cbalab.experiments.verify": "0" * 64, "cbalab.algorithms.cba": "0" * 64}}
    assert provenance.presentation("cbalab.experiments.verify")
    assert provenance.differences(prov) == [
        f"module cbalab.algorithms.cba changed ({provenance.module_file('cbalab.algorithms.cba')})"
    ]


@pytest.mark.slow
def test_toolchain_differences_are_notes_not_staleness(quick_results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another numpy is reported (the canaries decide), but is not stale."""
    _only(monkeypatch, quick_results)
    real = provenance.toolchain
    monkeypatch.setattr(provenance, "toolchain", lambda: real() | {"numpy": "0.0"})
    assert check.stale_results(quick_results) == []
    notes = check.toolchain_notes(quick_results)
    assert any(n.startswith("io-cost: toolchain numpy ") and "-> 0.0" in n for n in notes)


def test_results_without_a_record_are_stale_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A meta.json from before the rule is stale, saying why and what to do."""
    (tmp_path / "sensitivity").mkdir()
    (tmp_path / "sensitivity" / "meta.json").write_text(json.dumps({"config": {}, "runs": {}, "sessions": []}))
    monkeypatch.setattr(check, "experiments", lambda: {"sensitivity": load_experiment("sensitivity")})
    assert check.stale_results(tmp_path) == [
        "sensitivity: meta.json records no provenance (rows older than the rule): verify with --record or rerun"
    ]


# ------------------------------------------------------------------------------------------------ --verify


def _copy(tmp_path: Path, name: str, base: Path = RESULTS, unrecorded: bool = False) -> Path:
    """The committed results of ``name`` copied to ``tmp_path/name``; ``unrecorded``: with meta.json's
    provenance and verifications taken out, as results from before the rule."""
    target = tmp_path / name
    shutil.copytree(base / name, target, ignore=shutil.ignore_patterns("runs", "*.pdf", "*.png"))
    if unrecorded:
        meta = json.loads((target / "meta.json").read_text())
        for key in ("provenance", "verifications"):
            meta.pop(key, None)
        (target / "meta.json").write_text(json.dumps(meta))
    return target


def _forge(folder: Path, row: int, column: str) -> str:
    """Change one cell of runs.csv (a digit appended) and return its run key."""
    path = folder / "runs.csv"
    rows = list(csv.reader(path.open(newline="")))
    col = rows[0].index(column)
    rows[row + 1][col] += "1"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return rows[row + 1][0]


@pytest.mark.slow
def test_verify_all_of_sensitivity_passes_and_fails_on_one_changed_cell(tmp_path: Path) -> None:
    """``--verify --sample all`` passes on the committed rows and names the run key and
    the column of a single forged cell."""
    folder = _copy(tmp_path, "sensitivity")
    said: list[str] = []
    assert verify.verify("sensitivity", folder, sample="all", echo=said.append) == 0
    key = _forge(folder, 1234, "cached_fraction")
    said.clear()
    assert verify.verify("sensitivity", folder, sample="all", echo=said.append) == 1
    assert said[-1].startswith(f"sensitivity: run {key}, column cached_fraction (exact): committed ")


@pytest.mark.slow
def test_a_forged_cell_among_the_canaries_fails(tmp_path: Path) -> None:
    """Every canary row is recomputed: forging the cell of one that the sample holds fails the check."""
    from cbalab.experiments.meta import read_meta
    from cbalab.experiments.runner import run_key

    folder = _copy(tmp_path, "welfare")
    text, _ = verify.committed(folder)
    grid = load_experiment("welfare").grid(False, 0)
    by_key = {run_key(p): p for p in grid}
    params = [by_key[k] for k in text["run_key"]]
    picked = verify.choose("welfare", text, params, read_meta(folder / "meta.json") or {}, grid, "canaries", 7)
    _forge(folder, picked[0], "jobs_running")  # an exact column: a digit more is a forgery
    assert verify.verify("welfare", folder, sample="canaries", seed=7, echo=lambda _: None) == 1


@pytest.mark.slow
def test_the_rotating_canaries_move_with_the_seed_and_can_reach_any_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two seeds draw different canaries.  The rotating draw can reach every row, even one dearer than its budget:
    such a row is taken with chance budget/cost.  With a budget of 600 s, below the dearest of dynamic's rows (up
    to 15 min), 400 seeds draw every one of its 15 rows; with 1e-9 s they draw none beyond the fixed set."""
    from cbalab.experiments.meta import read_meta
    from cbalab.experiments.runner import run_key

    def picks(name: str, seed: int) -> list[int]:
        text, _ = verify.committed(RESULTS / name)
        grid = load_experiment(name).grid(False, 0)
        by_key = {run_key(p): p for p in grid}
        params = [by_key[k] for k in text["run_key"]]
        return verify.choose(name, text, params, read_meta(RESULTS / name / "meta.json") or {}, grid, "canaries", seed)

    assert picks("online-welfare", 1) != picks("online-welfare", 2)
    monkeypatch.setattr(verify, "FIXED_BUDGET_S", 0.0)
    fixed = set(picks("dynamic", 0)) & set(picks("dynamic", 1))
    monkeypatch.setattr(verify, "ROTATING_BUDGET_S", 1e-9)
    assert set().union(*(picks("dynamic", s) for s in range(400))) == fixed
    monkeypatch.setattr(verify, "ROTATING_BUDGET_S", 600.0)
    assert set().union(*(picks("dynamic", s) for s in range(400))) == set(range(15))


@pytest.mark.slow
def test_record_writes_a_verification_that_makes_the_rows_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--record`` after a pass covering every arm: meta.json gains the verification with its provenance, and
    the rows are no longer stale; a sample that leaves an arm out is refused (exit 2), and records nothing."""
    folder = _copy(tmp_path, "sensitivity", unrecorded=True)
    monkeypatch.setattr(check, "experiments", lambda: {"sensitivity": load_experiment("sensitivity")})
    monkeypatch.setattr(provenance, "_READ", set())  # --workers 1: this process's earlier reads would count
    assert _stale(tmp_path) == {"sensitivity"}
    before = (folder / "meta.json").read_text()
    monkeypatch.setattr(verify, "ROTATING_BUDGET_S", 1e-9)  # the fixed canaries alone: one level of one arm each
    with pytest.raises(ExperimentError, match="leaves arms uncovered"):
        verify.verify("sensitivity", folder, sample="canaries", seed=0, record_it=True, echo=lambda _: None)
    assert (folder / "meta.json").read_text() == before
    _forge(folder, 3, "io_cost_usd_per_h")
    assert verify.verify("sensitivity", folder, sample="all", record_it=True, echo=lambda _: None) == 1
    assert (folder / "meta.json").read_text() == before
    folder = _copy(tmp_path / "again", "sensitivity", unrecorded=True)
    assert verify.verify("sensitivity", folder, sample="30", seed=3, record_it=True, echo=lambda _: None) == 0
    entry = json.loads((folder / "meta.json").read_text())["verifications"][-1]
    assert entry["rows"] >= 30 and entry["provenance"]["complete"]
    assert "cbalab.algorithms.cba" in entry["provenance"]["code"]
    assert check.stale_results(tmp_path / "again") == []


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["experiment", "sensitivity", "--verify", "--sample", "some"], "--sample: give all"),
        (["experiment", "sensitivity", "--verify", "--quick", "--out", str(RESULTS)], "drop --quick"),
        (["experiment", "sensitivity", "--sample", "3"], "--sample, --record and --exact go with --verify"),
        (["experiment", "sensitivity", "--exact"], "--sample, --record and --exact go with --verify"),
        (["experiment", "sensitivity", "--stale"], "give no NAME"),
    ],
)
def test_bad_verify_input_is_exit_2_naming_the_option(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input to --verify and --stale is exit 2 with the option named, before anything runs."""
    from cbalab.cli import main

    assert main(argv) == 2
    assert says in capsys.readouterr().err


@pytest.mark.slow
def test_quick_verify_checks_the_committed_quick_references() -> None:
    """paper/quick/ holds every experiment's quick rows, and ``--quick --verify`` recomputes all of sensitivity's."""
    for name in EXPERIMENTS:
        assert (ROOT / "paper" / "quick" / name / "runs.csv").is_file(), name
    assert verify.verify("sensitivity", ROOT / "paper" / "quick" / "sensitivity", quick=True, echo=lambda _: None) == 0


@pytest.mark.slow
def test_presentation_modules_run_no_code_during_the_runs() -> None:
    """provenance.PRESENTATION is left out of the record because no run executes it: every experiment's cheapest
    quick run, traced, calls no function of those modules (their module-level code ran at import only)."""
    modules = [load_experiment(name) for name in EXPERIMENTS]
    files = {
        str(provenance.module_file(name))
        for name in list(sys.modules)
        if provenance.presentation(name) and provenance.module_file(name) is not None
    }
    assert any(f.endswith("plotting.py") for f in files)
    called: set[str] = set()

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        code = frame.f_code
        if code.co_filename in files and code.co_name != "<module>":
            called.add(f"{code.co_filename}:{code.co_qualname}")

    for mod in modules:
        grid = mod.grid(True, 0)
        sys.settrace(tracer)
        try:
            mod.run_one(dict(grid[0]))
        finally:
            sys.settrace(None)
    assert called == set()


def test_catch_up_reruns_exactly_the_stale_experiments_after_saying_how_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``experiment --stale``: the stale experiments (and only they) are rerun from scratch, in the registry's order,
    after the time their last meta.json predicts; a work tree with changes is refused (exit 2)."""
    from cbalab.experiments import runner

    for name in ("welfare", "sensitivity"):
        _copy(tmp_path, name)
    monkeypatch.setattr(verify, "git_commit", lambda: {"commit": "ab" * 20, "dirty": False})
    monkeypatch.setattr(
        check,
        "stale_results",
        lambda results: ["sensitivity: module x changed", "welfare (verified at y on 3 rows): module x changed"],
    )
    ran: list[str] = []

    def fake(name: str, out: Path, **kwargs: object) -> runner.Sweep:
        ran.append(name)
        assert not (out / name / "meta.json").exists()
        return runner.Sweep(name, out / name, pd.DataFrame())

    monkeypatch.setattr(runner, "run_sweep", fake)
    said: list[str] = []
    assert verify.catch_up(tmp_path, workers=2, echo=said.append) == 0
    assert ran == ["welfare", "sensitivity"]
    meta = json.loads((RESULTS / "welfare" / "meta.json").read_text())
    minutes = (
        verify.expected_seconds(meta, 2)
        + verify.expected_seconds(json.loads((RESULTS / "sensitivity" / "meta.json").read_text()), 2)
    ) / 60
    assert any(f"about {minutes:.0f} min with 2 workers" in line for line in said)
    monkeypatch.setattr(verify, "git_commit", lambda: {"commit": "ab" * 20, "dirty": True})
    with pytest.raises(ExperimentError, match="one clean commit"):
        verify.catch_up(tmp_path, workers=2, echo=said.append)


def test_reproduce_md_states_where_each_experiments_committed_rows_come_from() -> None:
    """docs/reproduce.md says, for every experiment, "computed at A" and, when a verification was recorded,
    "verified at B on N rows", as meta.json records them (verify.status): the page cannot drift from the files."""
    from cbalab.experiments.meta import read_meta

    text = " ".join((ROOT / "docs" / "reproduce.md").read_text().split())
    for name in EXPERIMENTS:
        meta = read_meta(RESULTS / name / "meta.json")
        assert meta is not None, name
        assert verify.status(name, meta) in text, verify.status(name, meta)
