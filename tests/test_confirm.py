"""The confirmation (experiments/runs/confirm.py): held-out data, fresh seeds, frozen rules."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from cbalab.experiments.paper import claims, rules
from cbalab.experiments.paper.section import Section
from cbalab.experiments.runner import run_key
from cbalab.experiments.runs import confirm, io_cost, online_welfare, welfare

ROOT = Path(__file__).resolve().parents[1]


def test_the_rules_file_has_not_changed_since_the_confirmatory_rows() -> None:
    """The confirmation's meta.json records the sha256 of experiments/paper/rules.py as it ran; the file must
    still be that one, or the confirmatory verdicts would be judged by rules written after them."""
    meta_path = ROOT / "paper" / "results" / "confirm" / "meta.json"
    rules_file = ROOT / "experiments" / "paper" / "rules.py"
    assert rules_file.resolve() == confirm.RULES
    if not meta_path.exists():
        return
    pinned = json.loads(meta_path.read_text())["pinned"]["rules"]
    assert pinned["path"] == "experiments/paper/rules.py"
    assert hashlib.sha256(rules_file.read_bytes()).hexdigest() == pinned["sha256"]


def test_confirmation_data_is_held_out_from_the_exploratory_grids() -> None:
    """Every part's runs use data the exploratory grid never saw: io-cost's jobs from IO_FIRST_JOB on (after
    the exploratory 20,000), online windows disjoint from every exploratory window and from io-cost's jobs,
    and no part's seed equal to an exploratory run's seed."""
    for quick in (True, False):
        runs = confirm.grid(quick, 0)
        parts = {r["part"] for r in runs}
        assert parts == set(confirm.PARTS)
        io = [r for r in runs if r["part"] == "io-cost"]
        jobs = 200 if quick else io_cost.TRACE_JOBS
        assert {r["first_job"] for r in io} == {confirm.IO_FIRST_JOB} and jobs <= confirm.IO_FIRST_JOB
        online = [r for r in runs if r["part"] == "online-welfare"]
        seen = [(int(r["window_start"]), int(r["window_jobs"])) for r in online_welfare.grid(quick, 0)]
        spans = [(int(r["window_start"]), int(r["window_start"]) + int(r["window_jobs"])) for r in online]
        for start, _end in spans:
            assert start >= max(s + n for s, n in seen), (start, seen)
            assert start >= confirm.IO_FIRST_JOB + io_cost.TRACE_JOBS
        assert max(end for _, end in spans) <= 82_247  # the shipped trace's jobs
        exploratory = {r["seed"] for m in (io_cost, welfare, online_welfare) for r in m.grid(quick, 0)}
        assert not exploratory & {r["seed"] for r in runs}


def test_a_confirm_run_is_its_parts_run() -> None:
    """A confirm run's row is the row its part's experiment computes on the same parameters (welfare, the
    cheapest part, on one quick instance)."""
    params = next(r for r in confirm.grid(True, 0) if r["part"] == "welfare" and r["method"] == "autocba")
    rest = {k: v for k, v in params.items() if k != "part"}
    mine, theirs = confirm.run_one(params), welfare.run_one(rest)
    drop = [k for k in mine if k.endswith("_seconds")]
    assert {k: v for k, v in mine.items() if k not in drop} == {k: v for k, v in theirs.items() if k not in drop}
    assert run_key(params) != run_key(rest)


def test_confirmatory_verdicts_use_the_same_rules_on_the_parts_values() -> None:
    """claims.md's confirmatory column measures each headline claim of a confirmed experiment by the same rule
    (rules.CLAIMS) on the confirmation's values for that experiment; claims of other experiments have none."""
    c = next(c for c in rules.CLAIMS if c.key == "WelfareRatio")
    values = {"MaxRatio": 3.0, "MaxRatioMethod": "optimus[silod]", "MaxRatioBudget": 0.1, "MaxRatioMix": "mixed"}
    values |= {"ShareAtLeastPaperPct": 0.1, "VsBestMax": 1.5, "VsBestMedian": 1.1}
    section = Section(confirm.PREFIX, values={"parts": {"welfare": values}})
    held = claims.confirmed({claims.CONFIRM: section})
    assert (held["WelfareRatio"].measured, held["WelfareRatio"].verdict) == c.measure(values)
    assert held["WelfareRatio"].verdict.startswith("partly")
    assert all(m.claim.experiment == "welfare" for m in held.values())


def test_every_headline_claim_has_its_history_and_a_confirmation() -> None:
    """Every claim of an experiment the confirmation reruns states how its rule came to be (the exploratory
    commits), and only those: the theorem checks are not confirmed on held-out data."""
    for c in rules.CLAIMS:
        assert bool(c.history) == (c.experiment in confirm.PARTS), c.key


def test_verdicts_table_names_each_confirmed_claim() -> None:
    """confirm's table has one row per claim of a part that ran (none when no part has rows)."""
    empty = pd.DataFrame({"part": pd.Series([], dtype=str)})
    assert confirm.tables(empty)["verdicts"].empty
