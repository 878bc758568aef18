"""The welfare experiment's references (experiments/runs/welfare.py): each instance's P2 and P2s reference and form.

AutoCBA never stalls, so its reference is P2; a baseline the referee scores stalled is measured against
P2s (proofs/welfare_milp_forms.md, Theorem F3: P2 ≤ P2s ≤ the relaxation).  A time-limited MILP is no
proof: its bound is used, or AutoCBA's certificate if lower, and the form says which.
"""

from __future__ import annotations

import pandas as pd
import pytest

from cbalab.experiments.runs import welfare

POINT = {"jobs": 4, "datasets": 2, "budget_fraction": 0.5, "utility_mix": "mixed", "io_price_scale": 1.0}


def _runs(rows: list[tuple[str, str, float, float | None]], seed: int = 1) -> list[dict]:
    """Rows (method, status, welfare, bound) of one instance, every allocation feasible for the referee."""
    common = {**POINT, "replicate": 0, "seed": seed, "feasible": True}
    return [{**common, "method": m, "status": st, "welfare": w, "bound": b} for m, st, w, b in rows]


def test_proven_optima_are_the_references() -> None:
    """``milp`` optimal gives p2-optimum, ``milp-stall`` optimal gives p2s-optimum, both with gap 0."""
    runs = pd.DataFrame(
        _runs(
            [
                ("autocba", "feasible", 9.0, 12.0),
                ("milp", "optimal", 10.0, 10.0),
                ("milp-stall", "optimal", 11.0, 11.0),
                ("optimus[cba]", "feasible", 10.5, None),
            ]
        )
    )
    ref = welfare.references(runs).iloc[0]
    assert (ref["p2_reference"], ref["p2_reference_welfare"], ref["p2_gap"]) == ("p2-optimum", 10.0, 0.0)
    assert (ref["p2s_reference"], ref["p2s_reference_welfare"], ref["p2s_gap"]) == ("p2s-optimum", 11.0, 0.0)
    r = welfare._ratios(runs).set_index("method")
    assert r.loc["autocba", "reference"] == "p2-optimum" and r.loc["autocba", "of_reference"] == pytest.approx(0.9)
    assert r.loc["optimus[cba]", "reference"] == "p2s-optimum"  # above P2's optimum, below P2s's
    assert r.loc["optimus[cba]", "of_reference"] == pytest.approx(10.5 / 11.0)
    assert not r["above_reference"].any()


def test_time_limited_milp_falls_back_to_the_lowest_proven_bound() -> None:
    """Without a proof, P2's reference is min(MILP bound, certificate), named; P2s's is milp-stall's bound."""
    tight_milp = _runs(
        [("autocba", "feasible", 9.0, 12.0), ("milp", "time_limit", 9.5, 10.5), ("milp-stall", "time_limit", 9.0, 14.0)]
    )
    tight_cert = _runs(
        [("autocba", "feasible", 9.0, 10.0), ("milp", "time_limit", 9.5, 10.5), ("milp-stall", "feasible", 9.0, 9.5)],
        seed=2,
    )
    refs = welfare.references(pd.DataFrame(tight_milp + tight_cert)).set_index("seed")
    assert (refs.loc[1, "p2_reference"], refs.loc[1, "p2_reference_welfare"]) == ("p2-bound", 10.5)
    assert (refs.loc[2, "p2_reference"], refs.loc[2, "p2_reference_welfare"]) == ("certificate", 10.0)
    assert (refs.loc[1, "p2s_reference"], refs.loc[1, "p2s_reference_welfare"]) == ("p2s-bound", 14.0)
    assert refs.loc[1, "p2_gap"] == pytest.approx(1.0 / 10.5)  # the MILP's incumbent 9.5 is the best P2 lower bound
    assert refs.loc[2, "p2s_gap"] == pytest.approx(0.0)  # MILP's 9.5 (P2 ≤ P2s) reaches milp-stall's bound 9.5


def test_without_a_p2s_bound_there_is_no_p2s_reference() -> None:
    """AutoCBA's certificate bounds P2, not P2s: with no milp-stall bound the P2s reference is 'none', NaN."""
    runs = pd.DataFrame(_runs([("autocba", "feasible", 9.0, 12.0), ("milp-stall", "error", 0.0, None)]))
    ref = welfare.references(runs).iloc[0]
    assert (ref["p2_reference"], ref["p2_reference_welfare"]) == ("certificate", 12.0)
    assert ref["p2s_reference"] == "none" and pd.isna(ref["p2s_reference_welfare"])


def test_exact_references_run_in_the_grid_without_a_wall_clock_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both exact forms are methods of every instance of the grid, and none runs under a time limit (a
    wall-clock limit would make a reference depend on the machine)."""
    for quick in (True, False):
        grid = welfare.grid(quick, 0)
        instances = {tuple(p[c] for c in welfare.INSTANCE) for p in grid}
        for method in welfare.EXACT:
            assert sum(p["method"] == method for p in grid) == len(instances)
    seen: dict[str, tuple[float | None, str | None]] = {}

    class Entry:
        def __init__(self, name: str) -> None:
            self.name = name

        def function(self) -> object:
            return lambda inst, options: seen.setdefault(self.name, (options.time_limit, options.cache_policy))

    monkeypatch.setattr(welfare.registry, "get", lambda problem, name: Entry(name))
    for method in ("milp", "milp-stall", "optimus[cba]"):
        welfare.solve(None, method)  # type: ignore[arg-type]
    assert seen == {
        "milp": (None, None),
        "milp-stall": (None, None),
        "optimus": (None, "cba"),
    }
