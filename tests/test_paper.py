"""``cbalab paper``: the committed paper is in step with its results, and the check can fail (experiments/paper/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from cbalab.cli import main
from cbalab.experiments import paper
from cbalab.experiments.runner import EXPERIMENTS, load_experiment
from cbalab.experiments.runs import welfare

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "paper"


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_draws_its_paper_section(name: str) -> None:
    """Each experiment of the runner owns its section (``paper_section``) and the prefix of its macros."""
    module = load_experiment(name)
    assert callable(module.paper_section)
    assert isinstance(module.PREFIX, str) and module.PREFIX.isalpha() and module.PREFIX[0].isupper()


def test_every_experiment_has_its_own_macro_prefix() -> None:
    """No two experiments share a prefix, so no macro of numbers.tex is defined twice."""
    prefixes = [load_experiment(name).PREFIX for name in EXPERIMENTS]
    assert len(set(prefixes)) == len(prefixes)


@pytest.mark.slow
def test_committed_paper_is_in_step_with_its_results() -> None:
    """`cbalab paper --check` on the repository passes: generated/, claims.md and paper.tex agree with the results."""
    assert paper.check_paper(PAPER) == []
    assert main(["paper", "--paper", str(PAPER), "--check"]) == 0


@pytest.mark.slow
def test_hand_typed_number_in_the_evaluation_is_caught(paper_copy: Path) -> None:
    """A number typed in the evaluation (not a macro) makes --check fail, naming its line."""
    tex = (paper_copy / "paper.tex").read_text()
    assert paper.hand_typed_numbers(tex) == []
    anchor = "\\subsection{Scaling}\\label{sec:scaling}\n"
    assert anchor in tex
    bad = tex.replace(anchor, anchor + "CBA is 42.5 times faster than HiGHS.\n")
    (paper_copy / "paper.tex").write_text(bad)
    found = paper.hand_typed_numbers(bad)
    assert len(found) == 1 and "'42.5'" in found[0]
    line = bad[: bad.index("42.5")].count("\n") + 1
    assert found[0].startswith(f"line {line}:")
    assert any("42.5" in p for p in paper.check_paper(paper_copy))
    assert main(["paper", "--paper", str(paper_copy), "--check"]) == 1


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("P1 and P2 on K80 GPUs, $c_1$, Section~\\ref{sec:io}, \\cite{x2023}", []),
        ("\\includegraphics[width=0.9\\textwidth]{fig-1.pdf} \\setlength{\\tabcolsep}{3pt}", []),
        ("a ratio of $10^{-6}$", ["10", "6"]),
        ("saves 20.5\\,\\% % a comment with 99 in it", ["20.5"]),
        ("\\begin{figure*}[t] 3 runs \\modelsec{4}", ["3"]),
    ],
)
def test_what_counts_as_a_hand_typed_number(text: str, numbers: list[str]) -> None:
    """Digits continuing a name, in references, labels, paths, lengths and comments are not numbers; others are."""
    frame = "\\begin{abstract}\nA.\n\\end{abstract}\n\\section{Introduction}\nB.\n\\section{Model}\n"
    tex = f"{frame}\\section{{Evaluation}}\n{text}\n\\appendix\n"
    found = paper.hand_typed_numbers(tex)
    assert [f.split("'")[1] for f in found] == numbers


@pytest.mark.slow
def test_changed_result_makes_check_fail(paper_copy: Path) -> None:
    """One changed value in a committed runs.csv puts numbers.tex and claims.md out of step: --check fails.

    Regenerating brings the paper back in step with the edited rows, but not the rows with the sha256 their run
    recorded in meta.json: that one problem stays."""
    runs_path = paper_copy / "results" / "welfare" / "runs.csv"
    runs = pd.read_csv(runs_path)
    auto = runs.index[runs["method"] == "autocba"]
    runs.loc[auto, "welfare"] = runs.loc[auto, "welfare"] * 0.5
    runs.to_csv(runs_path, index=False)
    problems = paper.check_paper(paper_copy)
    assert "generated/numbers.tex: differs from what the results generate (run `cbalab paper`)" in problems
    assert "claims.md: out of step with the results (run `cbalab paper`)" in problems
    assert main(["paper", "--paper", str(paper_copy), "--check"]) == 1
    main(["paper", "--paper", str(paper_copy)])  # regenerating brings it back in step
    left = paper.check_paper(paper_copy)
    if shutil.which("latexmk") is None:  # without latexmk the PDF cannot be rebuilt, and the check says so
        left = [p for p in left if not p.startswith("paper.pdf")]
    assert left == ["welfare/runs.csv: its sha256 is not the one meta.json recorded (edited after the run?)"]


@pytest.mark.slow
def test_missing_experiment_is_said_not_invented(paper_copy: Path, tmp_path: Path) -> None:
    """Without an experiment's results the switch is false, the reason is printed and its claims say 'not yet run'."""
    shutil.rmtree(paper_copy / "results" / "welfare")
    built = paper.build_paper(paper_copy / "results", tmp_path / "gen", compile=False)
    numbers = (tmp_path / "gen" / "numbers.tex").read_text()
    assert "\\HaveWelfarefalse" in numbers
    assert "\\newcommand{\\WelfareMissing}{no welfare/runs.csv in the results}" in numbers
    assert "\\WelfareMaxRatio}" not in numbers
    assert not any(f.startswith(("fig-welfare", "tab-welfare")) for f in built.files)
    row = next(line for line in built.claims.splitlines() if "`cbalab experiment welfare --out paper/results`" in line)
    assert "not yet run: no welfare/runs.csv in the results" in row


@pytest.mark.slow
def test_regeneration_is_byte_identical(tmp_path: Path) -> None:
    """Two builds from the same results write the same bytes, figures included (no dates or version tags)."""
    a = paper.build_paper(PAPER / "results", tmp_path / "a", compile=False)
    paper.build_paper(PAPER / "results", tmp_path / "b", compile=False)
    for name in a.files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow
def test_stale_generated_file_is_reported(paper_copy: Path) -> None:
    """A generated file that the results no longer produce is a difference."""
    (paper_copy / "generated" / "tab-stale.tex").write_text("x\n")
    assert "generated/tab-stale.tex: committed but no longer generated (run `cbalab paper`)" in paper.check_paper(
        paper_copy
    )


def test_bad_folder_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --results folder that does not exist exits 2 naming the option and the value."""
    assert main(["paper", "--paper", str(PAPER), "--results", str(tmp_path / "nowhere"), "--check"]) == 2
    assert "--results: no such folder" in capsys.readouterr().err


def test_formatting() -> None:
    """Numbers are printed the way the text quotes them."""
    assert paper.pct(0.2051) == "20.5"
    assert paper.fixed(-0.0001, 2) == "0.00"
    assert paper.sci(1e-6) == "\\ensuremath{10^{-6}}"
    assert paper.sci(4.4e-4) == "\\ensuremath{4.4\\times 10^{-4}}"
    assert paper.sci(0.5) == "0.50"
    assert paper.sci(1e-4 * 100) == "0.010"
    assert paper.integer(82247) == "82,247"
    assert paper.tex_escape("gavel-tput[io-only]_x%") == "gavel-tput[io-only]\\_x\\%"


def test_without_latexmk_the_pdf_is_not_built_and_that_is_said(
    paper_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No latexmk on the PATH: no PDF, and the message names what is missing."""
    (paper_copy / "paper.pdf").unlink()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pdf, message = paper.compile_pdf(paper_copy)
    assert pdf is None and "latexmk is not installed" in message
    assert not (paper_copy / "paper.pdf").exists()


def _welfare_runs(baseline_welfare: list[float]) -> pd.DataFrame:
    """One welfare instance: AutoCBA (welfare 10, certificate 12), the exact references and the baselines.

    ``milp`` proves P2's optimum 11; ``milp-stall`` is not certified (welfare 11, relaxation bound 13), so
    the whole-option baselines (optimus, one per entry of ``baseline_welfare``) are measured against the bound
    13; ``lp``'s bound 14 is the time-sharing gavel-fair's reference (it earns 7: 50 %).
    """
    common = {"jobs": 4, "datasets": 2, "budget_fraction": 0.5, "utility_mix": "mixed", "io_price_scale": 1.0}
    common |= {"replicate": 0, "seed": 1, "feasible": True, "solve_seconds": 0.1}
    rows = [
        {**common, "method": "autocba", "status": "feasible", "welfare": 10.0, "bound": 12.0},
        {**common, "method": "milp", "status": "optimal", "welfare": 11.0, "bound": 11.0},
        {**common, "method": "milp-stall", "status": "feasible", "welfare": 11.0, "bound": 13.0},
        {**common, "method": "lp", "status": "feasible", "welfare": 0.0, "bound": 14.0},
        {**common, "method": "gavel-fair[silod]", "status": "feasible", "welfare": 7.0, "bound": None},
    ]
    rows += [
        {**common, "method": f"optimus[{cache}]", "status": "feasible", "welfare": w, "bound": None}
        for cache, w in zip(("silod", "io-only", "cba"), baseline_welfare)
    ]
    return pd.DataFrame(rows)


def test_starved_baseline_is_counted_apart_not_averaged() -> None:
    """A baseline at (almost) zero welfare is 'starved': counted, never a 1e17x ratio in the maximum."""
    s = welfare.paper_section(paper.Results("welfare", _welfare_runs([5.0, 1e-12, 2.0]), {}, 0))
    assert s.values["ZeroPairs"] == 1
    assert s.values["MaxRatio"] == pytest.approx(5.0)  # 10 / 2, not 10 / 1e-12
    assert s.values["VsBestMax"] == pytest.approx(10 / 7)  # against the strongest faithful baseline, gavel-fair


def test_welfare_shares_are_of_each_methods_own_reference() -> None:
    """AutoCBA's share is of the proven P2 optimum (11), not its certificate (12); optimus's of P2s's bound (13);
    the time-sharing gavel-fair's of P2's LP relaxation (14)."""
    s = welfare.paper_section(paper.Results("welfare", _welfare_runs([5.0, 1e-12, 2.0]), {}, 0))
    assert s.values["AutoOfRefMeanPct"] == pytest.approx(10.0 / 11.0)
    assert s.values["AutoGapMaxPct"] == pytest.approx(1.0 / 11.0)
    assert s.values["CertOverMaxPct"] == pytest.approx(1.0 / 11.0)
    assert (s.values["PTwoProven"], s.values["PTwoSProven"], s.values["PTwoSBound"]) == (1, 0, 1)
    assert s.values["AboveReference"] == 0
    table = s.files["tab-welfare.tex"].decode()
    assert "of ref." in table and " 38.5 " in table  # optimus's best cache: 5 / 13
    assert " 50.0 " in table  # gavel-fair: 7 / 14


def test_welfare_without_the_exact_references_is_said_not_guessed() -> None:
    """A sweep without ``milp`` rows is unusable (named), never silently measured against the certificate."""
    runs = _welfare_runs([5.0])
    with pytest.raises(paper.ResultsUnusableError, match="no milp rows"):
        welfare.paper_section(paper.Results("welfare", runs[runs["method"] != "milp"], {}, 0))


def test_provenance_states_the_workers_of_the_sessions_that_computed_rows() -> None:
    """The Workers macro is the most workers a session that computed rows ran with; a later resume that did
    nothing (done 0, on 8 workers) does not count, and the wall time is the sum over all sessions."""
    from cbalab.experiments.paper.section import Results, Section, provenance

    meta = {
        "config": {"quick": False, "workers": 8},
        "sessions": [
            {"done": 10, "workers": 1, "wall_seconds": 60.0, "git": {"commit": "a" * 40, "dirty": False}},
            {"done": 5, "workers": 2, "wall_seconds": 30.0, "git": {"commit": "a" * 40, "dirty": False}},
            {"done": 0, "workers": 8, "wall_seconds": 6.0, "git": {"commit": "b" * 40, "dirty": False}},
        ],
    }
    s = Section("Exp")
    provenance(s, Results("exp", pd.DataFrame({"x": range(15)}), meta, 0))
    assert s.macros["ExpWorkers"] == "2"
    assert s.macros["ExpWallMin"] == "1.6"
    assert s.macros["ExpCommit"] == "aaaaaaaa"
