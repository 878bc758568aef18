"""What an experiment contributes to the paper (:class:`Section`), read from what it measured (:class:`Results`).

Each experiment's ``paper_section(res: Results) -> Section`` (in its module under experiments/runs/) turns
its committed results into macros, tables and figures through :class:`Section`, so that every number it
quotes is also kept as a value for the claims (experiments/paper/claims.py).  The thresholds that the
sections and the claims judge by are those of the frozen rules (experiments/paper/rules.py), named here too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cbalab.experiments.paper.rules import PAPER_IO_SAVING as PAPER_IO_SAVING
from cbalab.experiments.paper.rules import PAPER_WELFARE_RATIO as PAPER_WELFARE_RATIO
from cbalab.experiments.paper.rules import SCATTERED as SCATTERED
from cbalab.experiments.paper.rules import STARVED as STARVED
from cbalab.experiments.paper.rules import ZERO_GAP as ZERO_GAP
from cbalab.experiments.paper.text import fixed, integer, tex_escape
from cbalab.experiments.plotting import render


class ResultsUnusableError(Exception):
    """An experiment's results are missing or not in the form this generator reads (the reason is the message)."""


@dataclass
class Section:
    """What one experiment contributes: macros (name -> LaTeX text), raw values for the claims, files."""

    prefix: str
    macros: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)

    def number(self, name: str, value: float, text: str) -> str:
        """Define ``\\<prefix><name>`` as ``text`` (the formatted ``value``) and keep ``value`` for the claims."""
        if not re.fullmatch(r"[A-Z][A-Za-z]*", name):
            raise ValueError(f"macro name {name!r}: letters only, starting upper case")
        self.macros[self.prefix + name] = text
        self.values[name] = value
        return text

    def word(self, name: str, text: str) -> str:
        """Define ``\\<prefix><name>`` as a word (a method's name, a setting), escaped for LaTeX."""
        self.number(name, math.nan, tex_escape(text))
        self.values[name] = text
        return self.macros[self.prefix + name]

    def table(self, name: str, text: str) -> None:
        """Add the table ``tab-<name>.tex``."""
        self.files[f"tab-{name}.tex"] = text.encode()

    def figure(self, name: str, fig: Any, data: pd.DataFrame) -> None:
        """Add ``fig-<name>.pdf``/``.png`` (deterministic metadata) and ``fig-<name>.csv``, the data drawn."""
        for ext, content in render(fig).items():
            self.files[f"fig-{name}.{ext}"] = content
        self.files[f"fig-{name}.csv"] = data.to_csv(index=False, float_format="%.6g", lineterminator="\n").encode()


@dataclass
class Results:
    """One experiment's committed results: its successful rows and its meta.json."""

    name: str
    runs: pd.DataFrame
    meta: dict
    failed: int


def load_results(results_dir: Path, name: str) -> Results:
    """``results_dir/name/runs.csv`` (rows without error) and ``meta.json``; ResultsUnusableError when absent."""
    folder = results_dir / name
    csv, meta_path = folder / "runs.csv", folder / "meta.json"
    if not csv.exists():
        raise ResultsUnusableError(f"no {name}/runs.csv in the results")
    try:
        runs = pd.read_csv(csv, keep_default_na=True)
    except (ValueError, pd.errors.ParserError) as e:
        raise ResultsUnusableError(f"{name}/runs.csv cannot be read: {e}") from None
    from cbalab.experiments.meta import read_meta  # the one reader of meta.json: a broken one is named

    meta = read_meta(meta_path) or {}
    failed = 0
    if "error" in runs:
        bad = runs["error"].astype(object).fillna("").astype(str) != ""
        failed = int(bad.sum())
        runs = runs[~bad].reset_index(drop=True)
    if runs.empty:
        raise ResultsUnusableError(f"{name}/runs.csv has no successful run")
    return Results(name, runs, meta, failed)


def need(runs: pd.DataFrame, *columns: str) -> None:
    """ResultsUnusableError naming the first of ``columns`` that ``runs`` lacks (a sweep older than its reader)."""
    missing = [c for c in columns if c not in runs]
    if missing:
        raise ResultsUnusableError(f"runs.csv lacks the column {missing[0]!r} this generator reads")


def provenance(s: Section, res: Results) -> None:
    """Runs, failed runs, size (full or quick), wall time, workers and commit of the sweep, as macros.

    The wall time of a sweep that was interrupted and resumed is the sum over its sessions (meta.json); its
    workers are the most that a session which computed rows ran with.
    """
    s.number("Runs", len(res.runs), integer(len(res.runs)))
    s.number("Failed", res.failed, integer(res.failed))
    quick = bool(res.meta.get("config", {}).get("quick", False))
    s.word("Size", "quick" if quick else "full")
    sessions = res.meta.get("sessions") or []
    wall = sum(float(x.get("wall_seconds") or 0.0) for x in sessions) if sessions else res.meta.get("wall_seconds")
    s.number("WallMin", wall or math.nan, fixed(wall / 60.0, 1) if wall else "?")
    computed = [int(x.get("workers") or 1) for x in sessions if int(x.get("done") or 0) > 0]
    workers = max(computed) if computed else int(res.meta.get("config", {}).get("workers") or 1)
    s.number("Workers", workers, integer(workers))
    commits = [c[:8] + ("+" if dirty else "") for c, dirty in rows_commits(res.meta)]
    s.word("Commit", ", ".join(commits) or "unknown")


def rows_commits(meta: dict) -> list[tuple[str, bool]]:
    """The commits (and whether their work tree had changes) that computed an experiment's rows, oldest first.

    They are those of the runner sessions of meta.json that did runs (``done`` > 0), not of a last session that
    only resumed (``done`` 0) or redrew the figures; a meta.json without sessions names its own ``git``.  The
    runner records this list as ``rows_commits``; older meta.json files are read from their sessions.
    """
    recorded = meta.get("rows_commits")
    if isinstance(recorded, list):
        return [(str(x.get("commit", "")), bool(x.get("dirty"))) for x in recorded if isinstance(x, dict)]
    sessions = [x for x in meta.get("sessions") or [] if (x.get("done") or 0) > 0 and x.get("git")]
    if not sessions and meta.get("git"):
        sessions = [{"git": meta["git"]}]
    out: list[tuple[str, bool]] = []
    for x in sessions:
        item = (str(x["git"].get("commit", "")), bool(x["git"].get("dirty")))
        if item[0] and item not in out:
            out.append(item)
    return out


def as_bool(series: pd.Series) -> pd.Series:
    """A column of booleans as read from CSV (True/False or strings)."""
    return series.astype(str).str.lower().isin(("true", "1", "1.0"))
