"""paper/claims.md: every claim the paper, README and proofs/ make that the results can check, and its verdict.

The claims and their verdict rules are :data:`cbalab.experiments.paper.rules.CLAIMS`, frozen in
experiments/paper/rules.py; here they are measured (:func:`measure_claims`) on each experiment's section
values (:attr:`Section.values`), so claims.md is generated from the results and cannot drift from them.  A
claim whose experiment the confirmation reruns on held-out data (experiments/runs/confirm.py) is measured
twice, by the same rule: on the exploratory results and on the confirmatory ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cbalab.experiments.paper.rules import CLAIMS, Claim
from cbalab.experiments.paper.section import Section

#: The experiment whose section carries the confirmatory parts' values (``values["parts"]``).
CONFIRM = "confirm"


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


def measure_claims(
    sections: dict[str, Section], missing: dict[str, str], only: tuple[str, ...] | None = None
) -> list[Measured]:
    """Every claim of :data:`CLAIMS` (of the experiments ``only``, when given) with its measured value and verdict
    (or why it is not measured), and the macros of the numbers its rule read (``\\<prefix><key>`` for every
    numeric value it looked up)."""
    out = []
    for c in CLAIMS:
        if only is not None and c.experiment not in only:
            continue
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


def confirmed(sections: dict[str, Section]) -> dict[str, Measured]:
    """Claim key -> the claim measured on the confirmation's held-out data (experiments/runs/confirm.py), for
    every claim whose experiment the confirmation reran; empty when it has not run."""
    if CONFIRM not in sections:
        return {}
    parts: dict[str, dict[str, Any]] = sections[CONFIRM].values.get("parts") or {}
    views = {name: Section(sections[CONFIRM].prefix, values=values) for name, values in parts.items()}
    return {m.claim.key: m for m in measure_claims(views, {}, only=tuple(views))}


def readings(sections: dict[str, Section]) -> dict[tuple[str, str], Any]:
    """Every claim of :data:`CLAIMS` measured on ``sections``: (claim key, value name) -> each section value its
    rule read, and (claim key, "verdict") -> its verdict (experiments/paper/deciding.py compares them)."""
    out: dict[tuple[str, str], Any] = {}
    for c in CLAIMS:
        if c.experiment not in sections:
            continue
        values = _Reads(sections[c.experiment].values)
        try:
            out[(c.key, "verdict")] = c.measure(values)[1]
        except KeyError as e:
            out[(c.key, "verdict")] = f"not measured: the results lack {e.args[0]}"
        out.update({(c.key, k): sections[c.experiment].values.get(k) for k in values.read})
    return out


def rule_of(c: Claim) -> str:
    """The claim's verdict rule in words: :attr:`Claim.rule`, or the first paragraph of its rule's docstring."""
    text = c.rule or (c.measure.__doc__ or "").split("\n\n")[0]
    return " ".join(text.split())


#: The results folder as claims.md names it in its commands and files: the paper's own, whichever folder the
#: file was generated from (``cbalab paper --results DIR``), so that a copy of the results generates the same file.
RESULTS = "paper/results"


def claims_markdown(sections: dict[str, Section], missing: dict[str, str]) -> str:
    """paper/claims.md: one row per claim of :data:`CLAIMS`, measured from the sections' values; a row measured on
    a quick-size run says so.  Nothing in it depends on where the results were read from (:data:`RESULTS`)."""
    confirm = confirmed(sections)
    headline = ", ".join(str(n) for n, c in enumerate(CLAIMS, 1) if c.history)
    lines = [
        "# Claims and whether they reproduce",
        "",
        f"Generated by `cbalab paper` from `{RESULTS}/`; `cbalab paper --check` fails when this file is out of step",
        "with the results. The claims and their verdict rules are `CLAIMS` in `experiments/paper/rules.py`, frozen",
        "before the confirmatory run. Each experiment is rerun by `cbalab experiment NAME --out " + RESULTS + "`.",
        "",
        f"The rules of the headline rows ({headline}) were written or revised after their results had been seen;",
        "the column *rule's history* names the commits. Their verdicts on the data those commits saw are therefore",
        "**exploratory**. The column *confirmatory* applies the same frozen rule to held-out data: a later stretch",
        "of the Philly trace and fresh seeds (`cbalab experiment confirm`, experiments/runs/confirm.py).",
        "",
        "| # | source | claim | command | file and column | size | measured | rule | rule's history "
        "| reproduces (exploratory) | confirmatory (held-out data) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, m in enumerate(measure_claims(sections, missing), 1):
        c = m.claim
        command = f"`cbalab experiment {c.experiment} --out {RESULTS}`"
        where = f"`{RESULTS}/{c.experiment}/runs.csv`: {c.column}"
        size = sections[c.experiment].values.get("Size", "?") if c.experiment in sections else "—"
        if size == "quick":
            size = "**quick** (CI size, not the full run)"
        held = confirm.get(c.key)
        confirmation = f"{held.verdict} (measured: {held.measured})" if held else "—"
        if held is None and c.history:
            confirmation = "not yet run (`cbalab experiment confirm`)"
        cells = [str(n), c.source, c.text, command, where, str(size), m.measured, rule_of(c), c.history or "—"]
        cells += [m.verdict, confirmation]
        lines.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
    return "\n".join(lines) + "\n"
