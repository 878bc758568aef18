"""``cbalab paper``: the paper's tables, numbers and figures, generated from the committed results.

Every number the paper's evaluation quotes is a LaTeX macro in ``paper/generated/numbers.tex``, computed
from ``paper/results/NAME/runs.csv`` (and ``meta.json``), the files ``cbalab experiment NAME`` writes.
Nothing is typed by hand: the linter rejects a number typed in the evaluation sections of
``paper/paper.tex``, and ``paper/claims.md`` (one row per claim, the seed paper's and cbalab's own) is
generated from the claims table, so it cannot drift from the results.

Each experiment draws its own section: ``paper_section(res)`` in its module under experiments/runs/,
beside its ``run_one``, ``tables`` and ``figures``.  This package holds what the sections share and what
assembles them:

- :mod:`.text`: LaTeX text (numbers as the text quotes them, escaped words, booktabs tables);
- :mod:`.section`: :class:`Section` (what an experiment contributes) and :class:`Results` (what it measured);
- :mod:`.ratios`: AutoCBA over its baselines, shared by the welfare and online-welfare sections;
- :mod:`.claims`: the claims table and its verdict rules (paper/claims.md);
- :mod:`.build`: the assembly over the runner's experiments, numbers.tex and the PDF;
- :mod:`.lint` and :mod:`.check`: ``cbalab paper --check``.

What is generated (``paper/generated/``):

* ``numbers.tex``: one ``\\newcommand`` per quoted number (names like ``\\IoCostMaxSavingPct``, each
  prefixed by its experiment's ``PREFIX``), and one switch per experiment, ``\\ifHaveIoCost`` …, true when
  its results exist; the paper prints a "not yet run" box in the other branch, with the reason in
  ``\\IoCostMissing`` (so a missing result is said, never invented);
* ``tab-*.tex``: booktabs tables;
* ``fig-*.pdf`` and ``fig-*.png``: the figures (matplotlib, Agg, experiments/plotting.py), and beside each
  ``fig-*.csv``, the data it draws.  On one machine regeneration is byte-identical (PDF without a creation
  date, PNG without a software tag, fixed hash salt).
"""

from __future__ import annotations

from cbalab.experiments.paper.build import build_paper, compile_pdf
from cbalab.experiments.paper.check import check_paper, main_paper
from cbalab.experiments.paper.lint import hand_typed_numbers
from cbalab.experiments.paper.section import Results, ResultsUnusableError
from cbalab.experiments.paper.text import fixed, integer, pct, sci, tex_escape

__all__ = [
    "Results",
    "ResultsUnusableError",
    "build_paper",
    "check_paper",
    "compile_pdf",
    "fixed",
    "hand_typed_numbers",
    "integer",
    "main_paper",
    "pct",
    "sci",
    "tex_escape",
]
