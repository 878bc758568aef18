"""The welfare-gain decomposition (experiments/runs/decomposition.py) on hand-made runs."""

import pandas as pd
import pytest

from cbalab.experiments.paper import rules
from cbalab.experiments.paper.section import Section
from cbalab.experiments.runs.decomposition import add_to_section, shares, steps, summary


def _runs() -> pd.DataFrame:
    rows = []
    # instance 0: F = 10, U = 16, A = 20 -> share 0.6; instance 1: A = F -> excluded
    for inst, (a, f, u) in enumerate([(20.0, 10.0, 16.0), (10.0, 10.0, 9.0)]):
        rows += [
            {"i": inst, "method": "autocba", "welfare": a, "feasible": True},
            {"i": inst, "method": "optimus[cba]", "welfare": f, "feasible": True},
            {"i": inst, "method": "gavel-tput[io-only]", "welfare": f - 1, "feasible": True},
            {"i": inst, "method": "gavel-fair[cba]", "welfare": 99.0, "feasible": False},
            {"i": inst, "method": "utility-greedy[cba]", "welfare": u, "feasible": True},
        ]
    return pd.DataFrame(rows)


def test_share_is_utility_part_of_gain_and_non_gains_are_excluded() -> None:
    per = shares(_runs(), ["i"])
    assert per.loc[0, "utility_share"] == pytest.approx(0.6)
    assert not per.loc[1, "counted"]
    s = summary(per)
    assert s["UtilityShareMedianPct"] == pytest.approx(60.0)
    assert s["UtilityShareAggPct"] == pytest.approx(60.0)
    assert s["IoShareAggPct"] == pytest.approx(40.0)
    assert (s["Counted"], s["Excluded"]) == (1.0, 1.0)


def test_steps_table_gives_each_methods_share_of_autocbas_gain() -> None:
    """The decomposition table: a faithful scheduler's share of the gain over the strongest
    faithful baseline is at most 0, utility-greedy's is its (U - F) / (A - F), AutoCBA's is 100%; an instance
    without a gain is left out."""
    table = steps(_runs(), ["i"]).set_index("method")
    assert table.loc["optimus[cba]", "gain_share"] == pytest.approx(0.0)
    assert table.loc["gavel-tput[io-only]", "gain_share"] == pytest.approx(-0.1)
    assert table.loc["utility-greedy[cba]", "gain_share"] == pytest.approx(0.6)
    assert table.loc["autocba", "gain_share"] == pytest.approx(1.0)
    assert (table["instances"] == 1).all()
    assert table.loc["utility-greedy[cba]", "of_autocba_median"] == pytest.approx(0.8)
    assert "gavel-fair[cba]" not in table.index  # infeasible on its only instance with a gain


def test_the_source_rows_read_the_section_values_the_decomposition_writes() -> None:
    """add_to_section writes exactly what rules.py's WelfareSource rule reads, and the rule's verdict follows
    its thresholds: utility-greedy recovers 60% (>= 50%) but AutoCBA leads it by 1.25x (> 1.05x) -> no."""
    s = Section("Demo")
    add_to_section(s, _runs(), ["i"], "demo-source")
    rule = next(c for c in rules.CLAIMS if c.key == "WelfareSource")
    measured, verdict = rule.measure(s.values)
    assert s.values["UtilityShareAgg"] == pytest.approx(0.6) and s.values["GreedyLeadMedian"] == pytest.approx(
        (1.25 + 10 / 9) / 2
    )
    assert verdict.startswith("no: IO-awareness carries 40%") and "recovers 60%" in measured
    near = {**s.values, "GreedyLeadMedian": 1.02}
    assert rule.measure(near)[1].startswith("yes")
    assert "tab-demo-source.tex" in s.files
