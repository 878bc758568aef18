"""The factorial io-cost grid, verdicts computed by written rules, pairing counts that do not depend on
pandas, and a ``paper --check`` that fails on each of four tamper cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cbalab.experiments import paper, runner
from cbalab.experiments.paper import check
from cbalab.experiments.paper.claims import CLAIMS, measure_claims
from cbalab.experiments.paper.ratios import pairings
from cbalab.experiments.paper.section import SCATTERED, Section, rows_commits
from cbalab.experiments.replay import SimResult
from cbalab.experiments.runs import io_cost

PAPER = Path(__file__).resolve().parent.parent / "paper"


def _no_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy outside git has no history to judge staleness by; these tests are about the other checks."""
    monkeypatch.setattr(check, "stale_results", lambda results_dir: [])


# ------------------------------------------------------------------------------ pairings


def test_pairing_count_skips_empty_cells_whatever_pandas_does() -> None:
    """A baseline not run in a setting (an empty cell) is no pairing: 2 settings x 3 baselines with 2 empty
    cells give 4 pairings, in setting-then-baseline order, with AutoCBA's welfare beside each."""
    wide = pd.DataFrame(
        {
            "budget": [0.5, 1.0],
            "autocba": [10.0, 20.0],
            "gavel[silod]": [5.0, np.nan],
            "optimus[cba]": [np.nan, 4.0],
            "optimus[silod]": [2.0, 8.0],
        }
    ).set_index("budget")
    long = pairings(wide, ["budget"], ["gavel[silod]", "optimus[cba]", "optimus[silod]"])
    assert len(long) == 4
    assert long[["budget", "method", "base", "auto"]].values.tolist() == [
        [0.5, "gavel[silod]", 5.0, 10.0],
        [0.5, "optimus[silod]", 2.0, 10.0],
        [1.0, "optimus[cba]", 4.0, 20.0],
        [1.0, "optimus[silod]", 8.0, 20.0],
    ]
    assert long["scheduler"].tolist() == ["gavel", "optimus", "optimus", "optimus"]


# ------------------------------------------------------------------------------ the io-cost grid


def test_io_cost_full_grid_is_the_documented_fraction_with_the_interaction_at_full_resolution() -> None:
    """84 points (48 core + 24 cache + 12 cap), 3 replicates, every price-aware policy at each and every
    price-blind one once per point without its price; the core arm crosses every price, dataset count and skew;
    each replicate draws its own assignment, shared by the policies of a point."""
    runs = io_cost.grid(quick=False, seed=0)
    aware = [r for r in runs if r["policy"] not in io_cost.PRICE_BLIND]
    points = {tuple(r[f] for f in io_cost.FACTORS) for r in aware}
    assert len(points) == 84
    assert len(aware) == 84 * io_cost.SEEDS * (len(io_cost.POLICIES) - len(io_cost.PRICE_BLIND))
    blind = [r for r in runs if r["policy"] in io_cost.PRICE_BLIND]
    assert {r["price_ratio"] for r in blind} == {None}
    assert len(blind) == 84 // len(io_cost.PRICE_RATIOS) * io_cost.SEEDS * len(io_cost.PRICE_BLIND) == 189
    core = {
        (r["price_ratio"], r["n_datasets"], r["skew"])
        for r in aware
        if r["cache_gb"] == 500.0 and r["bandwidth_gbps"] is None
    }
    assert core == {(p, n, k) for p in io_cost.PRICE_RATIOS for n in io_cost.DATASET_COUNTS for k in io_cost.SKEWS}
    assert {r["cache_gb"] for r in runs} == set(io_cost.CACHES)
    assert {r["bandwidth_gbps"] for r in runs} == set(io_cost.CAPS)
    assert all(r["warmup"] for r in runs) and {r["trace_jobs"] for r in runs} == {io_cost.TRACE_JOBS}
    one = [r for r in runs if (r["n_datasets"], r["skew"], r["cache_gb"]) == (12, 1.5, 500.0)]
    assert len({r["seed"] for r in one}) == io_cost.SEEDS  # one assignment per replicate, shared by the policies
    assert len({r["seed"] for r in one if r["replicate"] == 0}) == 1
    quick = io_cost.grid(quick=True, seed=0)
    assert len(quick) == 12 * 2 * 3 + 6 * 2 * 3


COST_COLUMNS = ("cost", "cost_per_hour", "cache_cost_per_hour", "bandwidth_cost_per_hour")


def _grid_rows(quick: bool) -> pd.DataFrame:
    """The grid's runs as rows without a replay: each run's costs are numbers drawn from its key."""
    rows = []
    for r in io_cost.grid(quick=quick, seed=0):
        rng = np.random.default_rng(int(runner.run_key(r), 16) % 2**32)
        cache, bandwidth, gpu = rng.uniform(1.0, 100.0, 3)
        blind = r["policy"] in io_cost.PRICE_BLIND
        io = np.nan if blind else cache + bandwidth
        rows.append(
            {
                **r,
                "unit_price_replay": blind,
                "price_cache_usd_per_gb_h": np.nan if blind else r["price_ratio"] * io_cost.PRICE_BANDWIDTH,
                "price_bandwidth_usd_per_gbps_h": np.nan if blind else io_cost.PRICE_BANDWIDTH,
                "cache_cost_usd": cache,
                "bandwidth_cost_usd": bandwidth,
                "gpu_cost_usd": gpu,
                "io_cost_usd": io,
                "total_cost_usd": gpu + io,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("quick", [True, False])
def test_priced_gives_each_price_blind_run_a_row_at_every_price_of_its_point(quick: bool) -> None:
    """io_cost.priced turns the grid's runs into the full factorial of priced replays (1,512 rows for 945 runs;
    144 for 108 in --quick): every policy at every point, price and replicate once; a price-blind row at ratio
    x has cache cost = GB-hours x x p_b and bandwidth cost = (GB/s)-hours x p_b, its GPU cost unchanged;
    the price-aware rows are the runs' own."""
    runs = _grid_rows(quick)
    out = io_cost.priced(runs)
    points = len(io_cost.design(quick))
    seeds = 2 if quick else io_cost.SEEDS
    assert len(out) == points * seeds * len(io_cost.POLICIES) == (144 if quick else 1512)
    key = [*io_cost.POINT, "replicate", "policy"]
    assert (
        not out.assign(cap=out["bandwidth_gbps"].astype(float).fillna(np.inf))
        .duplicated([*(k for k in key if k != "bandwidth_gbps"), "cap"])
        .any()
    )
    assert out["io_cost_usd"].notna().all() and out["price_ratio"].notna().all()
    aware = runs[~runs["policy"].isin(io_cost.PRICE_BLIND)]
    pd.testing.assert_frame_equal(out.iloc[: len(aware)], aware.reset_index(drop=True))

    def cap(x: object) -> float:
        return np.inf if x is None or x != x else float(x)  # type: ignore[arg-type]

    where = ("seed", "policy", "skew", "n_datasets", "cache_gb")
    blind_runs = runs[runs["unit_price_replay"]]
    units = {(*(u[c] for c in where), cap(u["bandwidth_gbps"])): u for _, u in blind_runs.iterrows()}
    blind = out[out["unit_price_replay"]]
    assert len(blind) == len(units) * (2 if quick else len(io_cost.PRICE_RATIOS))
    p_b = io_cost.PRICE_BANDWIDTH
    for _, row in blind.iterrows():
        u = units[(*(row[c] for c in where), cap(row["bandwidth_gbps"]))]
        assert row["cache_cost_usd"] == u["cache_cost_usd"] * (row["price_ratio"] * p_b)
        assert row["bandwidth_cost_usd"] == u["bandwidth_cost_usd"] * p_b
        assert row["io_cost_usd"] == row["cache_cost_usd"] + row["bandwidth_cost_usd"]
        assert row["total_cost_usd"] == u["gpu_cost_usd"] + row["io_cost_usd"]


@pytest.mark.parametrize("cap", [None, io_cost.QUICK_CAP])
@pytest.mark.parametrize("policy", io_cost.PRICE_BLIND)
def test_io_cost_price_blind_policies_replay_the_same_at_every_price(policy: str, cap: float | None) -> None:
    """What lets io-cost replay a price-blind policy once per point (io_cost.PRICE_BLIND): at other p_c and p_b
    its per-job table and time series are the same in every column but the costs, which differ; and its one
    run, replayed at unit prices and priced by io_cost.priced at each price ratio, gives that ratio's direct
    replay's costs to rounding, with the stall and the events the same."""
    from cbalab.experiments.simulate import SimConfig, simulate

    workload = io_cost._workload(200, 1.5, 12, 7)

    def replay(prices: tuple[float, float, float]) -> SimResult:
        inf = float("inf")
        cfg = SimConfig(policy=policy, cache_gb=500.0, bandwidth_gbps=cap or inf, prices=prices, warmup=True, seed=7)
        return simulate(workload, cfg)

    point = {"trace_jobs": 200, "skew": 1.5, "n_datasets": 12, "cache_gb": 500.0, "bandwidth_gbps": cap}
    point |= {"warmup": True, "replicate": 0, "seed": 7}
    ratios = (io_cost.PRICE_RATIOS[0], io_cost.PRICE_RATIOS[-1])
    params = {**point, "policy": policy, "price_ratio": None}
    unit = {**params, **io_cost.run_one(params)}
    assert unit["unit_price_replay"] is True and np.isnan(unit["io_cost_usd"])
    others = [{**point, "policy": "cba", "price_ratio": r, "unit_price_replay": False} for r in ratios]
    rows = io_cost.priced(pd.DataFrame([unit, *others])).query("policy == @policy").set_index("price_ratio")
    direct = {}
    for ratio in ratios:
        direct[ratio] = res = replay((io_cost.PRICE_GPU, ratio * io_cost.PRICE_BANDWIDTH, io_cost.PRICE_BANDWIDTH))
        row = rows.loc[ratio]
        for key in ("cache", "bandwidth", "io", "gpu", "total"):
            assert row[f"{key}_cost_usd"] == pytest.approx(res.summary["cost"][key], rel=1e-12, abs=1e-12)
        assert (row["stall_h"], row["events"]) == (res.summary["stall_hours"], res.summary["events"])
    a, b = direct[ratios[0]], replay((2.5, 0.05, 3.0))
    assert a.summary["cost"]["io"] != b.summary["cost"]["io"]
    for table in ("jobs", "timeseries"):
        x, y = getattr(a, table), getattr(b, table)
        same = [c for c in x.columns if c not in COST_COLUMNS]
        pd.testing.assert_frame_equal(x[same], y[same])


def test_io_cost_run_one_refuses_a_price_that_its_policy_does_not_read() -> None:
    """A price-blind run carries no price and a price-aware one needs one: anything else is a malformed grid."""
    point = {"trace_jobs": 200, "skew": 1.5, "n_datasets": 12, "cache_gb": 500.0, "bandwidth_gbps": None}
    point |= {"warmup": True, "replicate": 0, "seed": 7}
    with pytest.raises(ValueError, match="price_ratio"):
        io_cost.run_one({**point, "policy": "silod", "price_ratio": 1e-3})
    with pytest.raises(ValueError, match="price_ratio"):
        io_cost.run_one({**point, "policy": "cba", "price_ratio": None})


def _replays(savings: dict[tuple[float, int], list[float]]) -> pd.DataFrame:
    """Runs of cba and io-only (both feeding every job) whose costs give CBA the savings asked, per
    (price ratio, dataset count) and replicate."""
    rows = []
    for (ratio, count), per_seed in savings.items():
        for rep, saving in enumerate(per_seed):
            point = {"trace_jobs": 10, "price_ratio": ratio, "n_datasets": count, "skew": 1.0, "cache_gb": 500.0}
            point |= {"bandwidth_gbps": None, "warmup": True, "replicate": rep, "jobs": 10, "mean_jct_h": 1.0}
            rows.append({**point, "policy": "io-only", "io_cost_usd": 100.0, "stall_h": 0.0})
            rows.append({**point, "policy": "cba", "io_cost_usd": 100.0 * (1 - saving), "stall_h": 0.0})
    return pd.DataFrame(rows)


def test_summary_and_conditions_come_from_the_replicates() -> None:
    """Mean and min-max over replicates per point; the conditions are the factor levels at which at least half
    the points reach 20.5%."""
    runs = _replays(
        {
            (1e-3, 12): [0.10, 0.12, 0.14],
            (1e-3, 48): [0.01, 0.02, 0.03],
            (2e-3, 12): [0.30, 0.40, 0.50],
            (2e-3, 48): [0.25, 0.22, 0.28],
        }
    )
    s = io_cost.summary(runs).set_index(["price_ratio", "n_datasets"])
    assert s.loc[(2e-3, 12), "mean_saving"] == pytest.approx(0.40)
    assert (s.loc[(2e-3, 12), "min_saving"], s.loc[(2e-3, 12), "max_saving"]) == pytest.approx((0.30, 0.50))
    assert s["reaches_20_5pct"].sum() == 2 and (s["cheapest"] == "io-only").all()
    pts = io_cost.summary(runs)
    assert io_cost.conditions(pts, pts["reaches_20_5pct"]) == "p_c/p_b = 0.002/s"
    head = io_cost.tables(runs)["headline"].iloc[0]
    assert head["max_mean_saving"] == pytest.approx(0.40) and head["share_reaching_20_5pct"] == pytest.approx(0.5)


def test_conditions_that_together_describe_no_point_are_scattered() -> None:
    """Each level below holds at half its points (p_c/p_b 0.002, 48 datasets, skew 1), but no point
    that holds has all three; the finding is then at scattered points, not "yes under" those levels."""
    rows = [(1e-3, 12, 0.0, False), (1e-3, 12, 1.0, False), (1e-3, 48, 0.0, False), (1e-3, 48, 1.0, True)]
    rows.append((2e-3, 12, 0.0, True))
    pts = pd.DataFrame(
        [
            {"price_ratio": p, "n_datasets": d, "skew": k, "cache_gb": 500.0, "bandwidth_gbps": math.inf}
            for p, d, k, _ in rows
        ]
    )
    holds = pd.Series([h for *_, h in rows])
    assert io_cost.conditions(pts, holds).startswith(SCATTERED)
    two = [0, 3]  # the point that holds meets both of its levels: a real condition
    assert io_cost.conditions(pts.iloc[two], holds.iloc[two]) == "48 datasets; skew 1.0"


def test_a_stalling_baseline_is_compared_on_io_plus_its_stall() -> None:
    """A baseline that stalls jobs is not dropped but charged the GPU time it idles (IO + stall); its
    lower IO bill wins only when the stall costs less than the IO it saves."""
    runs = _replays({(1e-3, 12): [0.2]})
    runs = runs.assign(stall_cost_usd=0.0, io_plus_stall_usd=runs["io_cost_usd"])
    for stall_usd, best, saving in ((95.0, "io-only", 0.2), (5.0, "quiver", 1 - 80 / 15)):
        stalled = runs.iloc[[0]].assign(policy="quiver", io_cost_usd=10.0, stall_h=5.0, stall_cost_usd=stall_usd)
        stalled = stalled.assign(io_plus_stall_usd=10.0 + stall_usd)
        pts = io_cost.compared_points(pd.concat([runs, stalled], ignore_index=True))
        assert pts.loc[0, "best"] == best
        assert pts.loc[0, "saving"] == pytest.approx(saving)
        assert not pts.loc[0, "quiver_fed"]


# ------------------------------------------------------------------------------ verdicts by rules


def _io_verdicts(savings: dict[tuple[float, int], list[float]]) -> list[str]:
    section = io_cost.paper_section(paper.Results("io-cost", _replays(savings), {}, 0))
    measured = measure_claims({"io-cost": section}, {c.experiment: "x" for c in CLAIMS if c.experiment != "io-cost"})
    return [m.verdict for m in measured[:3]]


def test_io_verdicts_follow_the_written_rules() -> None:
    """Rows 1-3 of claims.md: yes under the conditions of the points that reach 20.5%, partly when only a mean
    does, no when nothing does; never-worse holds or names where it does."""
    under = _io_verdicts({(1e-3, 12): [0.1, 0.1], (1e-3, 48): [0.1, 0.1], (2e-3, 12): [0.3, 0.3]})
    assert under[0] == "yes under p_c/p_b = 0.002/s; 12 datasets" and under[2] == "yes"
    everywhere = _io_verdicts({(1e-3, 12): [0.3, 0.25], (2e-3, 12): [0.3, 0.4]})
    assert everywhere[:2] == ["yes", "yes"]
    mean_only = _io_verdicts({(1e-3, 12): [0.05, 0.1], (2e-3, 12): [0.1, 0.35]})
    assert mean_only[0].startswith("partly") and mean_only[1].startswith("partly")
    none = _io_verdicts({(1e-3, 12): [0.05, -0.1], (2e-3, 12): [0.1, 0.1]})
    assert none[:2] == ["no", "no"] and none[2] == "yes under p_c/p_b = 0.002/s"
    assert all(c.rule or c.measure.__doc__ for c in CLAIMS)  # every verdict has its rule in words


def test_the_paper_states_claim_numbers_only_through_generated_sentences() -> None:
    """The sentence of a claim carries its verdict and what was measured, from the claims table."""
    section = Section("Demo")
    measured = measure_claims({}, {c.experiment: "absent" for c in CLAIMS})
    assert measured[0].sentence().startswith(CLAIMS[0].text + ": not yet run: absent")
    assert section.macros == {}


# ------------------------------------------------------------------------------ provenance


def test_rows_commit_is_the_session_that_computed_rows_not_the_last_resume() -> None:
    """A resume that did nothing (done 0) at a later commit does not pass for the rows' commit."""
    meta = {
        "git": {"commit": "b" * 40, "dirty": False},
        "sessions": [
            {"done": 48, "git": {"commit": "a" * 40, "dirty": True}},
            {"done": 0, "git": {"commit": "b" * 40, "dirty": False}},
        ],
    }
    assert rows_commits(meta) == [("a" * 40, True)]
    assert rows_commits({"git": {"commit": "c" * 40, "dirty": False}}) == [("c" * 40, False)]


@pytest.mark.slow
def test_strict_turns_the_stale_list_into_problems(paper_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --strict the stale list is a note and the check passes; with it, the check fails."""
    monkeypatch.setattr(check, "stale_results", lambda results_dir: ["exp: rows computed at x"])
    assert check.check_paper(paper_copy) == []
    assert check.check_paper(paper_copy, strict=True) == ["stale: exp: rows computed at x"]
    notes: list[str] = []
    assert check.main_paper(str(paper_copy), None, True, echo=notes.append) == 0
    assert any("stale: exp" in n for n in notes)
    assert check.main_paper(str(paper_copy), None, True, echo=notes.append, strict=True) == 1


# ------------------------------------------------------------------------------ tamper cases


@pytest.mark.slow
def test_tamper_a_claim_macro_swapped_into_a_sentence_fails(paper_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first tamper case: a claim's number macro moved into another sentence is found and named."""
    _no_stale(monkeypatch)
    tex = (paper_copy / "paper.tex").read_text()
    assert "\\WelfareMedianRatio{}" in tex
    (paper_copy / "paper.tex").write_text(tex.replace("\\WelfareMedianRatio{}", "\\WelfareVsBestMax{}", 1))
    problems = check.check_paper(paper_copy)
    assert any("\\WelfareVsBestMax, a number of the claim WelfareRatio" in p for p in problems), problems


@pytest.mark.slow
def test_tamper_a_proof_claims_number_outside_its_sentence_fails(
    paper_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every claim of the table, not only the seed paper's: AutoCBA's mean gap (a claim of
    the proofs, AutoGap) typed through its macro into an ordinary sentence is found and named."""
    _no_stale(monkeypatch)
    tex = (paper_copy / "paper.tex").read_text()
    assert "\\OptAutoMeanGapPct" not in tex
    anchor = "\\ClaimAutoGapText."
    assert anchor in tex
    (paper_copy / "paper.tex").write_text(
        tex.replace(anchor, anchor + " Its mean gap is \\OptAutoMeanGapPct\\,\\%.", 1)
    )
    problems = check.check_paper(paper_copy)
    assert any("\\OptAutoMeanGapPct, a number of the claim AutoGap" in p for p in problems), problems


@pytest.mark.slow
def test_tamper_a_number_typed_into_the_abstract_fails(paper_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second tamper case: "21.3%" typed into the abstract (or the introduction) is a hand-typed number."""
    _no_stale(monkeypatch)
    tex = (paper_copy / "paper.tex").read_text()
    for anchor in ("\\begin{abstract}\n", "\\section{Introduction}\n"):
        (paper_copy / "paper.tex").write_text(tex.replace(anchor, anchor + "CBA saves 21.3\\,\\% of the IO cost.\n"))
        assert any("hand-typed number '21.3'" in p for p in check.check_paper(paper_copy)), anchor


@pytest.mark.slow
def test_tamper_an_unquoted_runs_csv_row_fails(paper_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The third tamper case: a changed runs.csv row that no number quotes changes the stored sha256."""
    _no_stale(monkeypatch)
    path = paper_copy / "results" / "sensitivity" / "runs.csv"
    text = path.read_text()
    path.write_text(text.rstrip("\n") + "\n" if text.endswith("\n\n") else text + "\n")
    problems = check.check_paper(paper_copy)
    assert "generated/numbers.tex: differs from what the results generate (run `cbalab paper`)" in problems
    meta = json.loads((path.parent / "meta.json").read_text())
    meta["runs_sha256"] = "0" * 64  # the runner's record of what it wrote
    (path.parent / "meta.json").write_text(json.dumps(meta))
    assert any(
        "sensitivity/runs.csv: its sha256 is not the one meta.json recorded" in p for p in check.check_paper(paper_copy)
    )


@pytest.mark.slow
def test_tamper_a_stale_pdf_fails(paper_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fourth tamper case: a PDF not rebuilt after its inputs changed (here a sentence of paper.tex)."""
    _no_stale(monkeypatch)
    assert check.check_paper(paper_copy) == []
    tex = paper_copy / "paper.tex"
    tex.write_text(tex.read_text().replace("\\section{The model}", "A new sentence.\n\n\\section{The model}", 1))
    problems = check.check_paper(paper_copy)
    assert any(p.startswith("paper.pdf: built from other inputs") for p in problems), problems
    (paper_copy / "paper.pdf").unlink()
    assert any(p.startswith("paper.pdf: missing") for p in check.check_paper(paper_copy))


@pytest.mark.slow
def test_claims_md_names_paper_results_whichever_folder_it_was_built_from(tmp_path: Path) -> None:
    """`cbalab paper --results DIR`: claims.md's commands name paper/results, the folder the paper's results live in,
    whatever copy DIR it was built from, so a copy of the committed results checks in step (it named DIR, and
    `paper --check --results COPY` failed on an untouched copy)."""
    built = paper.build_paper(PAPER / "results", tmp_path / "p" / "generated", compile=False)
    own = paper.build_paper(tmp_path / "p" / "results", tmp_path / "p" / "generated", compile=False)
    for claims in (built.claims, own.claims):
        assert "`cbalab experiment io-cost --out paper/results`" in claims
        assert str(tmp_path) not in claims
