"""The trace-scale benchmark (experiments/runs/trace_scale.py; issue 22, items 3 and 4): how it forms its ratio."""

from __future__ import annotations

import pytest

from cbalab.experiments.runs import trace_scale
from cbalab.models.instance import InstanceError


def test_autocba_ratio_is_that_of_the_median_times_of_the_repeats() -> None:
    """Each size runs ``repeats`` times, the same answer each time; the ratio is median over median."""
    out = trace_scale.measure(small=200, large=2000, repeats=3, autocba_only=True)
    times = out["autocba_cpu_s"]
    assert len(times["200"]) == len(times["2000"]) == 3
    small, large = sorted(times["200"])[1], sorted(times["2000"])[1]
    assert out["autocba_large_over_small"] == pytest.approx(large / small)
    assert "online_over_cost_replay" not in out
    answers = {(a["jobs"], a["welfare"]) for a in out["autocba"]}
    assert len(answers) == 2 and all(w > 0 for _, w in answers)


def test_no_repeats_is_bad_input() -> None:
    with pytest.raises(InstanceError, match="repeats"):
        trace_scale.measure(small=200, large=2000, repeats=0, autocba_only=True)
