"""paper/claims.md: every claim the paper, README and proofs/ make that the results can check, and its verdict.

Each :class:`Claim` names the experiment that measures it and decides its verdict from that experiment's
section values (:attr:`Section.values`), so claims.md is generated from the results and cannot drift from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cbalab.experiments.paper.section import PAPER_IO_SAVING, PAPER_WELFARE_RATIO, SCATTERED, ZERO_GAP, Section


@dataclass(frozen=True)
class Claim:
    """One row of paper/claims.md: a claim, where it is measured, and how its verdict is decided.

    ``measure`` maps the experiment's values (:attr:`Section.values`) to (measured value, verdict); it raises
    KeyError when a value it needs is absent, and the row then says so.  Its rule is written in code before
    the runs, and every verdict is "yes", "yes under <conditions>", "partly" or "no" (with conditions or a
    reason) computed by it from the data; :attr:`rule` is the rule in words, as claims.md prints it.
    """

    key: str
    source: str
    text: str
    experiment: str
    column: str
    measure: Callable[[dict[str, Any]], tuple[str, str]]
    rule: str = ""


def _yes(ok: bool, detail: str = "") -> str:
    """A verdict: "yes" or "no", with ``detail`` in brackets."""
    return ("yes" if ok else "no") + (f" ({detail})" if detail else "")


def _io_claim(v: dict[str, Any]) -> tuple[str, str]:
    """Row 1, "up to 20.5%": the largest mean saving over the grid, at its point, robust if every replicate there
    reaches 20.5% too.  yes: robust, and at least half the compared points reach it on the mean; yes under
    <conditions>: robust, but fewer points reach it (the conditions are those of the points that do); partly:
    the mean reaches it at some point but no replicate-robust point does; no: no mean reaches it."""
    best, low, high = v["MaxSavingPct"], v["MaxSavingLowPct"], v["MaxSavingHighPct"]
    measured = (
        f"largest mean saving {100 * best:.1f}% (replicates {100 * low:.1f}-{100 * high:.1f}%, {v['Seeds']} seeds) "
        f"vs the cheapest baseline ({v['MaxSavingRival']}) at {v['max_where']}; mean >= 20.5% at "
        f"{v['PointsReachPaper']} of {v['ComparedPoints']} compared points of the grid"
    )
    if best < PAPER_IO_SAVING:
        return measured, "no"
    if low < PAPER_IO_SAVING and v["PointsReachPaperEverySeed"] == 0:
        return measured, f"partly: on the mean only, under {v['reach_where']}"
    if v["ShareReachPaperPct"] >= 0.5:
        return measured, "yes"
    return measured, _under(v["reach_where"], v["PointsReachPaper"])


def _io_grid(v: dict[str, Any]) -> tuple[str, str]:
    """Row 2, the 20.5% across the grid: yes if the mean saving reaches it at every compared point; yes under
    <conditions> if at some (the conditions of those points, experiments/runs/io_cost.py ``conditions``), partly
    if only at points where some replicate falls short; no if at none."""
    share, robust = v["ShareReachPaperPct"], v["PointsReachPaperEverySeed"]
    measured = (
        f"mean saving >= 20.5% at {v['PointsReachPaper']} of {v['ComparedPoints']} compared points "
        f"({100 * share:.1f}%), at every replicate at {robust}"
    )
    if v["PointsReachPaper"] == 0:
        return measured, "no"
    if share >= 1.0 and robust == v["ComparedPoints"]:
        return measured, "yes"
    if robust == 0:
        return measured, f"partly: on the mean only, under {v['reach_where']}"
    return measured, _under(v["robust_where"], robust)


def _io_never_worse(v: dict[str, Any]) -> tuple[str, str]:
    """Row 3: yes if no replay of any point has CBA above the cheapest feeding baseline (beyond ZERO_GAP); yes
    under <conditions> if the points where none does share factor levels; no otherwise."""
    worst = v["MinSavingPct"]
    measured = (
        f"smallest saving of any replicate {100 * worst:.2f}% (at {v['min_where']}); CBA costlier in "
        f"{v['WorseReplays']} of {v['Replays']} compared replays"
    )
    if v["WorseReplays"] == 0:
        return measured, "yes"
    where = v["never_worse_where"]
    if where in ("nowhere", "everywhere") or where.startswith(SCATTERED):
        return measured, "no (Theorem 1 is per instant, a replay is not)"
    return measured, f"yes under {where}"


def _under(where: str, points: int) -> str:
    """Say "yes under <conditions>" when the points that show a finding share factor levels (io_cost.conditions);
    "partly" when they are scattered, with their number."""
    if where.startswith(SCATTERED):
        return f"partly: at {points} scattered points, with no common factor level"
    return f"yes under {where}"


def _welfare_claim(v: dict[str, Any]) -> tuple[str, str]:
    """yes if AutoCBA reaches 2.27x against the strongest faithful baseline of some instance; partly if only
    against weaker pairings; no otherwise."""
    measured = (
        f"max {v['MaxRatio']:.2f}x ({v['MaxRatioMethod']}, budget {v['MaxRatioBudget']:g}, {v['MaxRatioMix']}); "
        f">= 2.27x on {100 * v['ShareAtLeastPaperPct']:.1f}% of pairings; vs the strongest faithful scheduler of "
        f"each instance at most {v['VsBestMax']:.2f}x (median {v['VsBestMedian']:.3f}x)"
    )
    return measured, _ratio_verdict(v, "instance")


def _online_claim(v: dict[str, Any]) -> tuple[str, str]:
    """yes if AutoCBA reaches 2.27x against the strongest faithful baseline of some replay setting; partly if
    only against weaker pairings; no otherwise."""
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

    measure.__doc__ = f"yes if the {what} is at most {scale * limit:g}{unit}; no otherwise."
    return measure


def _at_least(
    key: str, limit: float, what: str, unit: str = "", scale: float = 1.0
) -> Callable[[dict[str, Any]], tuple[str, str]]:
    def measure(v: dict[str, Any]) -> tuple[str, str]:
        x = v[key]
        return f"{what} {scale * x:.4g}{unit}", _yes(bool(x >= limit))

    measure.__doc__ = f"yes if {what} at least {scale * limit:g}{unit}; no otherwise."
    return measure


def _theorem1_edge(v: dict[str, Any]) -> tuple[str, str]:
    """yes if every grid point is on the side of the threshold Theorem 1 predicts; no otherwise."""
    return f"{v['Match']} of {v['Points']} grid points on the predicted side", _yes(v["Mismatch"] == 0)


def _gap_bound(v: dict[str, Any]) -> tuple[str, str]:
    """yes if the largest gap / a-priori bound is at most 1 (up to ZERO_GAP); no otherwise."""
    worst = max(v.get("DatasetGapOverBound", 0.0), v.get("DatasetTiersGapOverBound", 0.0))
    if "DatasetGapOverBound" not in v and "DatasetTiersGapOverBound" not in v:
        raise KeyError("DatasetGapOverBound")
    return f"largest gap / bound {worst:.2f}", _yes(worst <= 1.0 + ZERO_GAP)


def _speed(v: dict[str, Any]) -> tuple[str, str]:
    """yes if highspy / CBA (median per size) exceeds 1 at every size; no otherwise."""
    measured = (
        f"highspy / CBA {v['HighspyOverCbaMin']:.0f}x (smallest, over sizes) to {v['HighspyOverCbaAtMax']:.0f}x "
        f"at {v['MaxJobs']:,} jobs; Pyomo / CBA {v['PyomoOverCbaAtMax']:.0f}x there"
    )
    return measured, _yes(v["HighspyOverCbaMin"] > 1.0)


def _dynamic_claim(v: dict[str, Any]) -> tuple[str, str]:
    """yes if every online policy's ratio to P3's certified bound is at least 1 (up to ZERO_GAP); no otherwise.

    The cases where P3's decomposition stopped at its (deterministic) iteration limit are counted in the
    measured text: their bound is certified all the same, only looser (proofs/dynamic_lower_bound.md)."""
    measured = f"ratios from {v['BestRatio']:.3f} to {v['WorstRatio']:.3f}"
    if v.get("AtLimitCases") is not None:
        measured += f"; P3 stopped at its iteration limit, its bound certified, in {v['AtLimitCases']} cases"
    return measured, _yes(v["BestRatio"] >= 1.0 - ZERO_GAP)


#: Every claim the paper, README and proofs/ make that the results can check.
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "IoSaving",
        "seed paper (abstract)",
        "CBA lowers the IO cost by up to 20.5% against state-of-the-art cache policies",
        "io-cost",
        "io_cost_usd (CBA vs the cheapest feeding baseline, per grid point and replicate)",
        _io_claim,
        "yes if the largest mean saving reaches 20.5% at every replicate of its point and at >= half the points; "
        "yes under the conditions of the points that reach it if fewer; partly if only on the mean; no otherwise",
    ),
    Claim(
        "IoGrid",
        "seed paper (abstract), read as a general saving",
        "CBA's saving of 20.5% holds across the pre-registered grid (price, datasets, skew, C, B)",
        "io-cost",
        "io_cost_usd (mean saving per grid point over the replicates)",
        _io_grid,
        "yes if the mean saving reaches 20.5% at every compared point and replicate; yes under the conditions "
        "of the points where every replicate reaches it; partly if only on the mean; no if at no point",
    ),
    Claim(
        "IoNeverWorse",
        "cbalab (Theorem 1 carried over to a replay; not proven)",
        "CBA's IO cost is no higher than any baseline's at every point of the replay",
        "io-cost",
        "io_cost_usd (CBA vs the cheapest feeding baseline, every replicate)",
        _io_never_worse,
        "yes if CBA is at most the cheapest feeding baseline in every replay; yes under the factor levels "
        "where it is; no otherwise",
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


class _Reads(dict):
    """A section's values that remember which keys a claim's rule read (:func:`claim_numbers`)."""

    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


@dataclass(frozen=True)
class Measured:
    """One claim measured: its value and verdict in words, and the number macros its rule read."""

    claim: Claim
    measured: str
    verdict: str
    numbers: frozenset[str] = frozenset()

    def sentence(self) -> str:
        """The sentence the paper states the claim with (``\\Claim<key>Text``): claim, verdict, what was measured."""
        return f"{self.claim.text}: {self.verdict} (measured: {self.measured})"


def measure_claims(sections: dict[str, Section], missing: dict[str, str]) -> list[Measured]:
    """Every claim of :data:`CLAIMS` with its measured value and verdict (or why it is not measured), and the
    macros of the numbers its rule read (``\\<prefix><key>`` for every numeric value it looked up)."""
    out = []
    for c in CLAIMS:
        numbers: frozenset[str] = frozenset()
        if c.experiment in missing:
            measured, verdict = "—", f"not yet run: {missing[c.experiment]}"
        else:
            section = sections[c.experiment]
            values = _Reads(section.values)
            try:
                measured, verdict = c.measure(values)
            except KeyError as e:
                measured, verdict = "—", f"not measured: the results lack {e.args[0]}"
            numbers = frozenset(
                section.prefix + k
                for k in values.read
                if section.prefix + k in section.macros and not isinstance(section.values.get(k), str)
            )
        out.append(Measured(c, measured, verdict, numbers))
    return out


def rule_of(c: Claim) -> str:
    """The claim's verdict rule in words: :attr:`Claim.rule`, or the first paragraph of its rule's docstring."""
    text = c.rule or (c.measure.__doc__ or "").split("\n\n")[0]
    return " ".join(text.split())


def claims_markdown(sections: dict[str, Section], missing: dict[str, str], results: str = "paper/results") -> str:
    """paper/claims.md: one row per claim of :data:`CLAIMS`, measured from the sections' values.

    ``results`` is the results folder as the commands in it name it (``cbalab paper --results``); a row
    measured on a quick-size run says so.
    """
    lines = [
        "# Claims and whether they reproduce",
        "",
        f"Generated by `cbalab paper` from `{results}/` (the definitions and their verdict rules are `CLAIMS` in",
        "`experiments/paper/claims.py`, written before the runs); `cbalab paper --check` fails when this file is",
        f"out of step with the results. Each experiment is rerun by `cbalab experiment NAME --out {results}`.",
        "",
        "| # | source | claim | command | file and column | size | measured | rule | reproduces |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, m in enumerate(measure_claims(sections, missing), 1):
        c = m.claim
        command = f"`cbalab experiment {c.experiment} --out {results}`"
        where = f"`{results}/{c.experiment}/runs.csv`: {c.column}"
        size = sections[c.experiment].values.get("Size", "?") if c.experiment in sections else "—"
        if size == "quick":
            size = "**quick** (CI size, not the full run)"
        cells = [str(n), c.source, c.text, command, where, str(size), m.measured, rule_of(c), m.verdict]
        lines.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
    return "\n".join(lines) + "\n"
