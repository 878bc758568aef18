"""confirm: the headline claims rerun on data the exploratory grid never saw, judged by the frozen rules.

    cbalab experiment confirm [--quick] [--seed 0] [--out results/]

The verdict rules of claims.md's headline rows were written, and several times revised, after their
results had been seen (paper/claims.md, "rule's history"); on the data they were tuned on they are
exploratory.  This experiment is their confirmation: the rules were frozen in
experiments/paper/rules.py, in a commit of their own, before it ran, and its meta.json records that file's
path and sha256 (:func:`pinned`); tests/test_confirm.py fails if the rules file changes afterwards.

It reruns the designs of the experiments those rows read, each on held-out data:

* **io-cost** (rows IoSaving, IoGrid, IoNeverWorse): the same factorial design on the Philly trace's jobs
  :data:`IO_FIRST_JOB` to :data:`IO_FIRST_JOB` + 20,000 (the exploratory grid replays jobs 0-20,000), with
  fresh assignment seeds;
* **welfare** (WelfareRatio, WelfareSource): the same grid of generated instances with fresh seeds;
* **online-welfare** (OnlineRatio, OnlineSource): the same grid on two later windows of the trace,
  :data:`ONLINE_WINDOWS` (the exploratory windows start at 30,000 and 70,000), with fresh seeds.

Every part's seed is derived from the sweep seed and the part's name (:func:`part_seed`), so none is an
exploratory seed.  A run is its part's run with a ``part`` column; its row is that part's row.  The verdicts
come from each part's own paper section (its module's ``paper_section`` on the part's rows) and the rules of
experiments/paper/rules.py, exactly as the exploratory verdicts do; claims.md puts the two side by side.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from cbalab.experiments.paper.ratios import faithful_baselines, vs_strongest
from cbalab.experiments.paper.section import (
    PAPER_IO_SAVING,
    PAPER_WELFARE_RATIO,
    Results,
    ResultsUnusableError,
    Section,
    provenance,
)
from cbalab.experiments.paper.text import booktabs, integer, tex_escape
from cbalab.experiments.plotting import figure, paper_figure, save, style
from cbalab.experiments.runner import derive_seed
from cbalab.experiments.runs import io_cost, online_welfare, welfare
from cbalab.models.files import sha256_file

NAME = "confirm"
#: The prefix of the paper's macros for this experiment (``\\ConfirmRuns`` …, ``\\ifHaveConfirm``).
PREFIX = "Confirm"

#: The experiments whose design this one reruns on held-out data, in the order they run.
PARTS: dict[str, ModuleType] = {"io-cost": io_cost, "welfare": welfare, "online-welfare": online_welfare}
#: io-cost's held-out jobs start here (its exploratory grid replays the trace's first 20,000 jobs).
IO_FIRST_JOB = 40_000
#: online-welfare's exploratory window starts -> the held-out windows that replace them (later in the trace,
#: disjoint from every exploratory window and from io-cost's jobs): main, second and the quick window.
ONLINE_WINDOWS = {30_000: 75_000, 70_000: 80_000}
#: The rules file the confirmation is judged by, relative to the package root (experiments/paper/rules.py).
RULES = Path(__file__).resolve().parents[1] / "paper" / "rules.py"


def part_seed(seed: int, part: str) -> int:
    """The sweep seed of one part: derived from the confirm sweep's seed and the part's name, so that it is not
    the exploratory sweep's seed (0) and every part has its own."""
    return derive_seed(seed, "confirm", part)


def grid(quick: bool, seed: int) -> list[dict]:
    """Each part's grid at its held-out data and fresh seed (module docstring), every run tagged with its part."""
    rows: list[dict] = []
    for part in PARTS:
        s = part_seed(seed, part)
        if part == "io-cost":
            runs = io_cost.grid(quick, s, first_job=IO_FIRST_JOB)
        elif part == "welfare":
            runs = welfare.grid(quick, s)
        else:
            runs = [
                {**r, "window_start": ONLINE_WINDOWS[int(r["window_start"])]} for r in online_welfare.grid(quick, s)
            ]
        rows += [{"part": part, **r} for r in runs]
    return rows


def _split(params: dict) -> tuple[ModuleType, dict]:
    """The part's module and the run's parameters as that part's grid has them."""
    part = str(params["part"])
    if part not in PARTS:
        raise ValueError(f"part: {part!r} is none of {', '.join(PARTS)}")
    return PARTS[part], {k: v for k, v in params.items() if k != "part"}


def run_one(params: dict) -> dict:
    """The part's run (its module's ``run_one``) on the run's own parameters; a parameter the part's row repeats
    is left to the runner's check, as in the part's own experiment."""
    module, rest = _split(params)
    return module.run_one(rest)


def same_run(params: dict) -> tuple[tuple, str] | None:
    """The part's own declaration of runs that are one computation (io-cost's C that holds every dataset),
    kept within the part."""
    module, rest = _split(params)
    same = getattr(module, "same_run", None)
    found = same(rest) if same is not None else None
    return None if found is None else ((params["part"], found[0]), found[1])


def pinned() -> dict[str, dict[str, str]]:
    """What meta.json records of the files this experiment's verdicts depend on: the rules file's path
    (relative to the package) and sha256."""
    return {"rules": {"path": "experiments/paper/rules.py", "sha256": sha256_file(RULES)}}


def part_results(res: Results) -> dict[str, Results]:
    """Each part's rows (without the ``part`` column) as that experiment's results; a part with no row is
    absent."""
    out = {}
    for part in PARTS:
        rows = res.runs[res.runs["part"] == part].drop(columns="part")
        rows = rows.dropna(axis=1, how="all").reset_index(drop=True)
        if len(rows):
            out[part] = Results(part, rows, res.meta, 0)
    return out


def part_sections(res: Results) -> dict[str, Section]:
    """Each part's paper section, drawn by that experiment's own ``paper_section`` from the part's rows (the
    values the frozen rules read); a part whose rows it cannot use is absent."""
    out = {}
    for part, sub in part_results(res).items():
        try:
            out[part] = PARTS[part].paper_section(sub)
        except ResultsUnusableError:
            continue
    return out


def verdicts(res: Results) -> pd.DataFrame:
    """One row per claim of rules.py that a part measures: its confirmatory measured value and verdict."""
    from cbalab.experiments.paper.claims import measure_claims

    sections = part_sections(res)
    if not sections:
        return pd.DataFrame(columns=["claim", "part", "measured", "verdict"])
    missing = {name: "not in this confirmation" for name in PARTS if name not in sections}
    measured = measure_claims(sections, missing, only=tuple(PARTS))
    return pd.DataFrame(
        [
            {"claim": m.claim.key, "part": m.claim.experiment, "measured": m.measured, "verdict": m.verdict}
            for m in measured
        ]
    )


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``verdicts``: each confirmed claim's measured value and verdict on the held-out data."""
    return {"verdicts": verdicts(Results(NAME, runs, {}, 0))}


def held_out(res: Results) -> list[tuple[str, pd.Series, float, str]]:
    """What the headline rows read, per part, on the held-out data: io-cost's mean saving per uncapped point
    (IO + stall), and AutoCBA over the strongest faithful scheduler per welfare instance and per online
    setting (the online envelopes as :func:`online_welfare.envelope` makes them); each with the threshold
    the rules compare it to, and its axis label."""
    out = []
    for part, sub in part_results(res).items():
        runs = sub.runs
        if part == "io-cost":
            pts = io_cost.summary(runs)
            saving = pts.loc[pts["compared"], "mean_saving"].astype(float)
            out.append((part, 100 * saving, 100 * PAPER_IO_SAVING, "CBA's mean saving per point, %"))
            continue
        if part == "online-welfare":
            runs = online_welfare.envelope(runs)
            method = np.where(
                runs["policy"] == "autocba", "autocba", runs["policy"].astype(str) + "[" + runs["cache_policy"] + "]"
            )
            wide = runs.assign(method=method).pivot_table(
                index=list(online_welfare.SETTING), columns="method", values="welfare", aggfunc="first"
            )
        else:
            wide = runs.pivot_table(index=list(welfare.INSTANCE), columns="method", values="welfare", aggfunc="first")
        if "autocba" not in wide:
            continue
        ratio = vs_strongest(wide, "autocba", faithful_baselines(wide.columns))
        out.append((part, ratio.astype(float), PAPER_WELFARE_RATIO, "AutoCBA / strongest faithful"))
    return out


def _draw(axes: list, panels: list[tuple[str, pd.Series, float, str]]) -> pd.DataFrame:
    """Each panel of :func:`held_out` on its axes: its values sorted, and the seed paper's claim as a dashed line
    (always inside the axes); the data drawn, for the figure's CSV."""
    data = []
    for a, (part, values, threshold, ylabel) in zip(axes, panels):
        v = np.sort(values.to_numpy())
        x = np.arange(1, len(v) + 1)
        a.plot(x, v, "o", ms=3, color=style("cba" if part == "io-cost" else "autocba")["color"])
        a.axhline(threshold, color="0.3", ls="--", lw=0.8)
        low, high = a.get_ylim()
        a.set_ylim(low, max(high, threshold + 0.12 * (threshold - low)))
        a.annotate(
            f"seed paper: {threshold:g}",
            (0.02, threshold),
            xycoords=("axes fraction", "data"),
            xytext=(0, 2),
            textcoords="offset points",
            fontsize=6,
            color="0.3",
            va="bottom",
        )
        a.set(xlabel="point (sorted)" if part == "io-cost" else "case (sorted)", ylabel=ylabel)
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.set_title(f"{part}, held-out data", fontsize=8)
        data += [{"panel": part, "x": int(i), "y": float(y)} for i, y in zip(x, v)]
    return pd.DataFrame(data)


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """confirm: each part's headline quantity on the held-out data, sorted, against the seed paper's claim."""
    panels = held_out(Results(NAME, runs, {}, 0))
    if not panels:
        return []
    fig, ax = figure(len(panels), 1, width=3.0, height=2.6)
    _draw(list(ax[0]), panels)
    return save(fig, outdir, "confirm")


def paper_section(res: Results) -> Section:
    """The confirmation's provenance, its held-out data, and its verdicts (``tab-confirm.tex``); the part
    sections' values are kept under ``values["parts"]`` for claims.md's confirmatory column."""
    s = Section(PREFIX)
    provenance(s, res)
    if "part" not in res.runs:
        raise ResultsUnusableError("confirm/runs.csv lacks the column 'part'")
    s.number("IoFirstJob", IO_FIRST_JOB, integer(IO_FIRST_JOB))
    s.number("IoLastJob", IO_FIRST_JOB + io_cost.TRACE_JOBS, integer(IO_FIRST_JOB + io_cost.TRACE_JOBS))
    starts = sorted(ONLINE_WINDOWS.values())
    s.number("OnlineFirstWindow", starts[0], integer(starts[0]))
    s.number("OnlineSecondWindow", starts[-1], integer(starts[-1]))
    rules = (res.meta.get("pinned") or {}).get("rules") or {}
    s.word("RulesSha", str(rules.get("sha256", "unknown"))[:12])
    s.values["parts"] = {part: sec.values for part, sec in part_sections(res).items()}
    table = verdicts(res)
    body = [[tex_escape(r.claim), tex_escape(r.part), tex_escape(r.verdict)] for r in table.itertuples()]
    s.table("confirm", booktabs(["claim", "part", "confirmatory verdict"], body, "llp{0.55\\columnwidth}"))
    panels = held_out(res)
    if panels:
        fig, ax = paper_figure(len(panels), 1, width=7.0, height=2.2)
        data = _draw(list(ax[0]), panels)
        fig.tight_layout()
        s.figure("confirm", fig, data)
    return s
