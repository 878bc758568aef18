"""paper/claims.md: every claim the paper, README and proofs/ make that the results can check, and its verdict.

Each :class:`Claim` names the experiment that measures it and decides its verdict from that experiment's
section values (:attr:`Section.values`), so claims.md is generated from the results and cannot drift from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cbalab.experiments.paper.section import PAPER_IO_SAVING, PAPER_WELFARE_RATIO, ZERO_GAP, Section


@dataclass(frozen=True)
class Claim:
    """One row of paper/claims.md: a claim, where it is measured, and how its verdict is decided.

    ``measure`` maps the experiment's values (:attr:`Section.values`) to (measured value, verdict); it raises
    KeyError when a value it needs is absent, and the row then says so.
    """

    key: str
    source: str
    text: str
    experiment: str
    column: str
    measure: Callable[[dict[str, Any]], tuple[str, str]]


def _yes(ok: bool, detail: str = "") -> str:
    """A verdict: "yes" or "no", with ``detail`` in brackets."""
    return ("yes" if ok else "no") + (f" ({detail})" if detail else "")


def _io_claim(v: dict[str, Any]) -> tuple[str, str]:
    best = v["MaxSavingPct"]
    measured = (
        f"max {100 * best:.1f}% vs the cheapest baseline ({v['MaxSavingRival']}) at {v['max_where']}; "
        f">= 20.5% at {v['PointsReachPaper']} of {v['ComparedPoints']} compared points"
    )
    if best >= PAPER_IO_SAVING:
        return measured, f"yes, at {v['PointsReachPaper']} of {v['ComparedPoints']} compared points"
    return measured, "no"


def _io_never_worse(v: dict[str, Any]) -> tuple[str, str]:
    worst = v["MinSavingPct"]
    measured = f"smallest saving {100 * worst:.2f}% (vs {v['MinSavingRival']} at {v['min_where']})"
    return measured, _yes(worst >= -ZERO_GAP, "" if worst >= -ZERO_GAP else "Theorem 1 is per instant, a replay is not")


def _welfare_claim(v: dict[str, Any]) -> tuple[str, str]:
    measured = (
        f"max {v['MaxRatio']:.2f}x ({v['MaxRatioMethod']}, budget {v['MaxRatioBudget']:g}, {v['MaxRatioMix']}); "
        f">= 2.27x on {100 * v['ShareAtLeastPaperPct']:.1f}% of pairings; vs the strongest faithful scheduler of "
        f"each instance at most {v['VsBestMax']:.2f}x (median {v['VsBestMedian']:.3f}x)"
    )
    return measured, _ratio_verdict(v, "instance")


def _online_claim(v: dict[str, Any]) -> tuple[str, str]:
    measured = (
        f"AutoCBA / baseline from {v['MinRatio']:.2f}x ({v['MinRatioPolicy']}) to {v['MaxRatio']:.2f}x "
        f"({v['MaxRatioPolicy']}, budget {v['MaxRatioBudget']:g}, {v['MaxRatioMix']}, IO x {v['MaxRatioScale']:g}); "
        f"vs the strongest faithful scheduler of each setting at most {v['VsBestMax']:.2f}x"
    )
    return measured, _ratio_verdict(v, "setting")


def _ratio_verdict(v: dict[str, Any], unit: str) -> str:
    """Whether AutoCBA reaches the seed paper's 2.27x: against the strongest faithful baseline of some ``unit``
    (an instance, a replay setting), only against weaker pairings, or not at all."""
    if v["VsBestMax"] >= PAPER_WELFARE_RATIO:
        return f"yes, even against the strongest baseline of some {unit}"
    if v["MaxRatio"] >= PAPER_WELFARE_RATIO:
        return "partly: only against weaker scheduler x cache pairings, not the strongest baseline"
    return "no"


def _at_most(
    key: str, limit: float, what: str, unit: str = "", scale: float = 1.0
) -> Callable[[dict[str, Any]], tuple[str, str]]:
    def measure(v: dict[str, Any]) -> tuple[str, str]:
        x = v[key]
        return f"{what} {scale * x:.3g}{unit}", _yes(bool(x <= limit))

    return measure


def _at_least(
    key: str, limit: float, what: str, unit: str = "", scale: float = 1.0
) -> Callable[[dict[str, Any]], tuple[str, str]]:
    def measure(v: dict[str, Any]) -> tuple[str, str]:
        x = v[key]
        return f"{what} {scale * x:.4g}{unit}", _yes(bool(x >= limit))

    return measure


def _theorem1_edge(v: dict[str, Any]) -> tuple[str, str]:
    return f"{v['Match']} of {v['Points']} grid points on the predicted side", _yes(v["Mismatch"] == 0)


def _gap_bound(v: dict[str, Any]) -> tuple[str, str]:
    worst = max(v.get("DatasetGapOverBound", 0.0), v.get("DatasetTiersGapOverBound", 0.0))
    if "DatasetGapOverBound" not in v and "DatasetTiersGapOverBound" not in v:
        raise KeyError("DatasetGapOverBound")
    return f"largest gap / bound {worst:.2f}", _yes(worst <= 1.0 + ZERO_GAP)


def _speed(v: dict[str, Any]) -> tuple[str, str]:
    measured = (
        f"highspy / CBA {v['HighspyOverCbaMin']:.0f}x (smallest, over sizes) to {v['HighspyOverCbaAtMax']:.0f}x "
        f"at {v['MaxJobs']:,} jobs; Pyomo / CBA {v['PyomoOverCbaAtMax']:.0f}x there"
    )
    return measured, _yes(v["HighspyOverCbaMin"] > 1.0)


def _dynamic_claim(v: dict[str, Any]) -> tuple[str, str]:
    return f"ratios from {v['BestRatio']:.3f} to {v['WorstRatio']:.3f}", _yes(v["BestRatio"] >= 1.0 - ZERO_GAP)


#: Every claim the paper, README and proofs/ make that the results can check.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "IoSaving",
        "seed paper (abstract)",
        "CBA lowers the IO cost by up to 20.5% against state-of-the-art cache policies",
        "io-cost",
        "io_cost_usd (CBA vs the cheapest baseline at each sweep point)",
        _io_claim,
    ),
    Claim(
        "WelfareRatio",
        "seed paper (abstract)",
        "AutoCBA reaches up to 2.27x the social welfare of state-of-the-art schedulers",
        "welfare",
        "welfare (AutoCBA / each scheduler x cache policy, per instance)",
        _welfare_claim,
    ),
    Claim(
        "OnlineRatio",
        "seed paper (abstract)",
        "AutoCBA reaches up to 2.27x the social welfare of state-of-the-art schedulers (trace replay)",
        "online-welfare",
        "welfare (over the fixed horizon; AutoCBA / each scheduler x cache policy, per setting)",
        _online_claim,
    ),
    Claim(
        "IoNeverWorse",
        "cbalab (Theorem 1 carried over to a replay; not proven)",
        "CBA's IO cost is no higher than any baseline's at every point of the replay",
        "io-cost",
        "io_cost_usd (CBA vs every baseline)",
        _io_never_worse,
    ),
    Claim(
        "CbaOptimal",
        "proofs/cba_optimality.md (Theorem 1)",
        "CBA is optimal for continuous P1: gap 0 to the LP optimum on every instance",
        "optimality",
        "cba_gap (variant continuous)",
        _at_most("ContinuousCbaWorstGapPct", ZERO_GAP, "worst relative gap"),
    ),
    Claim(
        "Threshold",
        "proofs/cba_optimality.md (Theorem 1)",
        "The optimum caches exactly the datasets with IO density above p_c/p_b (uncapped, equal densities)",
        "sensitivity",
        "cached_fraction vs predicted_fraction",
        _theorem1_edge,
    ),
    Claim(
        "ExactRoundings",
        "proofs/cba_integer_gap.md (I1, I2, I4)",
        "CBA's roundings are exact for blocks, tiers and blocks + tiers",
        "optimality",
        "cba_gap (variants block, tiers, block+tiers)",
        _at_most("ExactVariantsWorstGapPct", ZERO_GAP, "worst relative gap"),
    ),
    Claim(
        "GapBound",
        "proofs/cba_integer_gap.md (I3, I5)",
        "CBA's gap on whole datasets (and + tiers) is within its a-priori bound",
        "optimality",
        "cba_gap / cba_gap_bound",
        _gap_bound,
    ),
    Claim(
        "CbaBound",
        "proofs/cba_integer_gap.md",
        "CBA's proven lower bound never exceeds the optimum",
        "optimality",
        "cba_bound_valid",
        _at_least("CbaBoundValidPct", 1.0, "valid on", "% of instances", 100.0),
    ),
    Claim(
        "AutoBound",
        "proofs/autocba_certificate.md (Theorem D)",
        "AutoCBA's Lagrangian bound is at least the P2 optimum on every instance",
        "optimality",
        "autocba_bound_valid",
        _at_least("AutoBoundValidPct", 1.0, "valid on", "% of instances", 100.0),
    ),
    Claim(
        "AutoGap",
        "proofs/autocba_guarantee.md (measured 0.18%)",
        "AutoCBA's mean gap to the P2 optimum is below 1%",
        "optimality",
        "autocba_gap (mean)",
        _at_most("AutoMeanGapPct", 0.01, "mean gap", "%", 100.0),
    ),
    Claim(
        "ScalingAgree",
        "cbalab (scaling experiment)",
        "CBA's cost equals the LP optimum (Pyomo + HiGHS and highspy) at every size",
        "scaling",
        "max_rel_diff",
        _at_most("MaxRelDiff", ZERO_GAP, "largest relative difference"),
    ),
    Claim(
        "ScalingSpeed",
        "cbalab (scaling experiment)",
        "CBA's closed form is faster than the LP solved by HiGHS directly, at every size",
        "scaling",
        "highspy_seconds / cba_seconds (median per size)",
        _speed,
    ),
    Claim(
        "DynamicLower",
        "docs/model.md §6 (P3); proofs/dynamic_lower_bound.md",
        "P3 is a lower bound on every online policy's IO cost: every ratio to it is at least 1",
        "dynamic",
        "ratio_<policy> (IO cost / P3's certified lower bound)",
        _dynamic_claim,
    ),
)


def measure_claims(sections: dict[str, Section], missing: dict[str, str]) -> list[tuple[Claim, str, str]]:
    """Every claim of :data:`CLAIMS` with its measured value and verdict (or why it is not measured)."""
    out = []
    for c in CLAIMS:
        if c.experiment in missing:
            measured, verdict = "—", f"not yet run: {missing[c.experiment]}"
        else:
            try:
                measured, verdict = c.measure(sections[c.experiment].values)
            except KeyError as e:
                measured, verdict = "—", f"not measured: the results lack {e.args[0]}"
        out.append((c, measured, verdict))
    return out


def claims_markdown(sections: dict[str, Section], missing: dict[str, str]) -> str:
    """paper/claims.md: one row per claim of :data:`CLAIMS`, measured from the sections' values."""
    lines = [
        "# Claims and whether they reproduce",
        "",
        "Generated by `cbalab paper` from `paper/results/` (the definitions are `CLAIMS` in",
        "`experiments/paper.py`); `cbalab paper --check` fails when this file is out of step with the results.",
        "Each experiment is rerun by `cbalab experiment NAME --out paper/results`.",
        "",
        "| # | source | claim | command | file and column | measured | reproduces |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, (c, measured, verdict) in enumerate(measure_claims(sections, missing), 1):
        command = f"`cbalab experiment {c.experiment} --out paper/results`"
        where = f"`paper/results/{c.experiment}/runs.csv`: {c.column}"
        cells = [str(n), c.source, c.text, command, where, measured, verdict]
        lines.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
    return "\n".join(lines) + "\n"
